//! sprig v3's `TxtFuncMap` without `env` and `expandenv`.

use super::super::function::{Arity, FuncError, FuncMap, GoType};
use super::args;
use super::{
    crypto, dates, defaults, dicts, encoding, lists, numeric, paths, random, reflect, regex,
    semver, strings,
};

/// All sprig v3 functions except `env` and `expandenv` (Landscaper and Helm delete those).
pub fn sprig() -> FuncMap {
    let mut m = FuncMap::new();
    m.insert("hello", Arity::Exact(0), |_, _| Ok(args::s("Hello!")));
    strings::register(&mut m);
    numeric::register(&mut m);
    lists::register(&mut m);
    dicts::register(&mut m);
    defaults::register(&mut m);
    reflect::register(&mut m);
    regex::register(&mut m);
    encoding::register(&mut m);
    crypto::register(&mut m);
    random::register(&mut m);
    semver::register(&mut m);
    paths::register(&mut m);
    dates::register(&mut m);
    // getHostByName resolves names over the network; the appliance does not.
    m.insert("getHostByName", Arity::Exact(1), |_, _| {
        Err(FuncError::new(
            "getHostByName is not supported in the appliance (no network lookups in templates)",
        ))
    });
    for &(name, params) in PARAMS {
        m.set_params(name, params);
    }
    m
}

/// The Go parameter types of sprig's functions with typed (not `interface{}`) parameters, from
/// their Go signatures (`reflect.TypeOf` of `TxtFuncMap`'s entries; the last type of a variadic
/// function is its `...T`). The engine converts and checks arguments against them as Go does.
const PARAMS: &[(&str, &[GoType])] = {
    use GoType::{Any as A, Bool as B, Float64 as F, Int as I, List as L, Map as M};
    use GoType::{String as S, Time as T, Uint32 as U32};
    const CERT: GoType = GoType::Struct("sprig.certificate");
    &[
        ("abbrev", &[I, S]),
        ("abbrevboth", &[I, I, S]),
        ("adler32sum", &[S]),
        ("atoi", &[S]),
        ("b32dec", &[S]),
        ("b32enc", &[S]),
        ("b64dec", &[S]),
        ("b64enc", &[S]),
        ("base", &[S]),
        ("bcrypt", &[S]),
        ("buildCustomCert", &[S, S]),
        ("camelcase", &[S]),
        ("chunk", &[I, A]),
        ("clean", &[S]),
        ("contains", &[S, S]),
        ("date", &[S, A]),
        ("dateInZone", &[S, A, S]),
        ("dateModify", &[S, T]),
        ("date_in_zone", &[S, A, S]),
        ("date_modify", &[S, T]),
        ("decryptAES", &[S, S]),
        ("derivePassword", &[U32, S, S, S, S]),
        ("dir", &[S]),
        ("encryptAES", &[S, S]),
        ("ext", &[S]),
        ("fail", &[S]),
        ("fromJson", &[S]),
        ("genCA", &[S, I]),
        ("genCAWithKey", &[S, I, S]),
        ("genPrivateKey", &[S]),
        ("genSelfSignedCert", &[S, L, L, I]),
        ("genSelfSignedCertWithKey", &[S, L, L, I, S]),
        ("genSignedCert", &[S, L, L, I, CERT]),
        ("genSignedCertWithKey", &[S, L, L, I, CERT, S]),
        ("get", &[M, S]),
        ("getHostByName", &[S]),
        ("hasKey", &[M, S]),
        ("hasPrefix", &[S, S]),
        ("hasSuffix", &[S, S]),
        ("htmlDateInZone", &[A, S]),
        ("htpasswd", &[S, S]),
        ("indent", &[I, S]),
        ("initials", &[S]),
        ("isAbs", &[S]),
        ("join", &[S, A]),
        ("kebabcase", &[S]),
        ("keys", &[M]),
        ("kindIs", &[S, A]),
        ("lower", &[S]),
        ("merge", &[M, M]),
        ("mergeOverwrite", &[M, M]),
        ("mustChunk", &[I, A]),
        ("mustDateModify", &[S, T]),
        ("mustFromJson", &[S]),
        ("mustMerge", &[M, M]),
        ("mustMergeOverwrite", &[M, M]),
        ("mustRegexFind", &[S, S]),
        ("mustRegexFindAll", &[S, S, I]),
        ("mustRegexMatch", &[S, S]),
        ("mustRegexReplaceAll", &[S, S, S]),
        ("mustRegexReplaceAllLiteral", &[S, S, S]),
        ("mustRegexSplit", &[S, S, I]),
        ("mustToDate", &[S, S]),
        ("must_date_modify", &[S, T]),
        ("nindent", &[I, S]),
        ("nospace", &[S]),
        ("omit", &[M, S]),
        ("osBase", &[S]),
        ("osClean", &[S]),
        ("osDir", &[S]),
        ("osExt", &[S]),
        ("osIsAbs", &[S]),
        ("pick", &[M, S]),
        ("pluck", &[S, M]),
        ("plural", &[S, S, I]),
        ("randAlpha", &[I]),
        ("randAlphaNum", &[I]),
        ("randAscii", &[I]),
        ("randBytes", &[I]),
        ("randInt", &[I, I]),
        ("randNumeric", &[I]),
        ("regexFind", &[S, S]),
        ("regexFindAll", &[S, S, I]),
        ("regexMatch", &[S, S]),
        ("regexQuoteMeta", &[S]),
        ("regexReplaceAll", &[S, S, S]),
        ("regexReplaceAllLiteral", &[S, S, S]),
        ("regexSplit", &[S, S, I]),
        ("repeat", &[I, S]),
        ("replace", &[S, S, S]),
        ("round", &[A, I, F]),
        ("semver", &[S]),
        ("semverCompare", &[S, S]),
        ("seq", &[I]),
        ("set", &[M, S, A]),
        ("sha1sum", &[S]),
        ("sha256sum", &[S]),
        ("sha512sum", &[S]),
        ("shuffle", &[S]),
        ("snakecase", &[S]),
        ("split", &[S, S]),
        ("splitList", &[S, S]),
        ("splitn", &[S, I, S]),
        ("substr", &[I, I, S]),
        ("swapcase", &[S]),
        ("ternary", &[A, A, B]),
        ("title", &[S]),
        ("toDate", &[S, S]),
        ("trim", &[S]),
        ("trimAll", &[S, S]),
        ("trimPrefix", &[S, S]),
        ("trimSuffix", &[S, S]),
        ("trimall", &[S, S]),
        ("trunc", &[I, S]),
        ("typeIs", &[S, A]),
        ("typeIsLike", &[S, A]),
        ("unixEpoch", &[T]),
        ("unset", &[M, S]),
        ("until", &[I]),
        ("untilStep", &[I, I, I]),
        ("untitle", &[S]),
        ("upper", &[S]),
        ("urlJoin", &[M]),
        ("urlParse", &[S]),
        ("values", &[M]),
        ("wrap", &[I, S]),
        ("wrapWith", &[I, S, S]),
    ]
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_params_fit_the_arities() {
        let m = sprig();
        for &(name, params) in PARAMS {
            let def = m
                .get(name)
                .unwrap_or_else(|| panic!("{name} is not a sprig function"));
            let want = match def.arity {
                Arity::Exact(n) => n,
                Arity::AtLeast(n) => n + 1,
            };
            assert_eq!(params.len(), want, "{name}");
            assert_eq!(m.params(name), Some(params), "{name}");
        }
    }
}
