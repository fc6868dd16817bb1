//! Semantic version functions (`semver*`) and the `semver` validator, following the
//! semantics of the `github.com/Masterminds/semver/v3` release spiff links (v3.1: its parse
//! errors, increments and `Constraints.Validate` reasons). The version type and its order are
//! [`crate::semver`]'s (`landscaper_model::semver`).

use std::cmp::Ordering;

use crate::semver::Version;

use super::eval::Info;
use super::functions::FRes;
use super::value::{Node, Value};

fn version_re() -> &'static regex::Regex {
    use std::sync::OnceLock;
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(
            r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$",
        )
        .unwrap()
    })
}

/// What spiff's Masterminds release adds to [`Version`]: its own parse errors, the original
/// text's `v`, increments and setters (a trait: the type lives in the model crate).
trait SpiffVersion: Sized {
    fn parse_spiff(s: &str) -> Result<Self, String>;
    fn vprefix(&self) -> &'static str;
    fn renew(self) -> Self;
    fn inc_patch(&self) -> Self;
    fn inc_minor(&self) -> Self;
    fn inc_major(&self) -> Self;
    fn set_prerelease(&self, p: &str) -> Result<Self, String>;
    fn set_metadata(&self, m: &str) -> Result<Self, String>;
}

impl SpiffVersion for Version {
    /// `semver.NewVersion` of Masterminds v3.1 (its error messages).
    fn parse_spiff(s: &str) -> Result<Version, String> {
        let Some(m) = version_re().captures(s) else {
            return Err("Invalid Semantic Version".into());
        };
        let seg = |i: usize| -> Result<u64, String> {
            match m.get(i) {
                Some(x) => x
                    .as_str()
                    .trim_start_matches('.')
                    .parse::<u64>()
                    .map_err(|e| format!("Error parsing version segment: {e}")),
                None => Ok(0),
            }
        };
        let pre = m.get(5).map(|x| x.as_str().to_string()).unwrap_or_default();
        if !pre.is_empty() {
            for p in pre.split('.') {
                if p.bytes().all(|c| c.is_ascii_digit()) && p.len() > 1 && p.starts_with('0') {
                    return Err("Invalid Prerelease string".into());
                }
            }
        }
        Ok(Version {
            major: seg(1)?,
            minor: seg(2)?,
            patch: seg(3)?,
            pre,
            metadata: m.get(8).map(|x| x.as_str().to_string()).unwrap_or_default(),
            original: s.to_string(),
        })
    }

    fn vprefix(&self) -> &'static str {
        if self.original.starts_with(['v', 'V']) {
            "v"
        } else {
            ""
        }
    }

    fn renew(mut self) -> Version {
        self.original = format!("{}{}", self.vprefix(), self);
        self
    }

    fn inc_patch(&self) -> Version {
        let mut v = self.clone();
        if !v.pre.is_empty() {
            v.metadata.clear();
            v.pre.clear();
        } else {
            v.metadata.clear();
            v.pre.clear();
            v.patch += 1;
        }
        v.renew()
    }

    fn inc_minor(&self) -> Version {
        let mut v = self.clone();
        v.metadata.clear();
        v.pre.clear();
        v.patch = 0;
        v.minor += 1;
        v.renew()
    }

    fn inc_major(&self) -> Version {
        let mut v = self.clone();
        v.metadata.clear();
        v.pre.clear();
        v.patch = 0;
        v.minor = 0;
        v.major += 1;
        v.renew()
    }

    fn set_prerelease(&self, p: &str) -> Result<Version, String> {
        if !p.is_empty()
            && !regex::Regex::new(r"^[0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*$")
                .unwrap()
                .is_match(p)
        {
            return Err("Invalid Prerelease string".into());
        }
        let mut v = self.clone();
        v.pre = p.to_string();
        Ok(v.renew())
    }

    fn set_metadata(&self, m: &str) -> Result<Version, String> {
        if !m.is_empty()
            && !regex::Regex::new(r"^[0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*$")
                .unwrap()
                .is_match(m)
        {
            return Err("Invalid Metadata string".into());
        }
        let mut v = self.clone();
        v.metadata = m.to_string();
        Ok(v.renew())
    }
}

struct Constraint {
    op: String,
    orig: String,
    con: Version,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

const CV: &str = r"v?[0-9xX*]+(\.[0-9xX*]+)?(\.[0-9xX*]+)?(-[0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*)?(\+[0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*)?";
const OPS: &str = r"=|!=|>|<|>=|=>|<=|=<|~|~>|\^";

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "X" | "*")
}

fn parse_constraint(c: &str) -> Result<Constraint, String> {
    let re = regex::Regex::new(&format!(
        r"^\s*({OPS})?\s*(v?([0-9xX*]+)(\.[0-9xX*]+)?(\.[0-9xX*]+)?((-[0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*)?(\+[0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*)?))\s*$"
    ))
    .unwrap();
    let Some(m) = re.captures(c) else {
        return Err(format!("improper constraint: {c}"));
    };
    let g = |i: usize| m.get(i).map(|x| x.as_str()).unwrap_or("");
    let mut ver = g(2).to_string();
    let (mut minor_dirty, mut patch_dirty, mut dirty) = (false, false, false);
    if is_x(g(3)) || g(3).is_empty() {
        ver = format!("0.0.0{}", g(6));
        dirty = true;
    } else if is_x(g(4).trim_start_matches('.')) || g(4).is_empty() {
        minor_dirty = true;
        dirty = true;
        ver = format!("{}.0.0{}", g(3), g(6));
    } else if is_x(g(5).trim_start_matches('.')) || g(5).is_empty() {
        dirty = true;
        patch_dirty = true;
        ver = format!("{}{}.0{}", g(3), g(4), g(6));
    }
    let con = Version::parse_spiff(&ver)?;
    Ok(Constraint {
        op: g(1).to_string(),
        orig: g(2).to_string(),
        con,
        minor_dirty,
        patch_dirty,
        dirty,
    })
}

fn parse_constraints(s: &str) -> Result<Vec<Vec<Constraint>>, String> {
    let range = regex::Regex::new(&format!(r"\s*({CV})\s+-\s+({CV})\s*")).unwrap();
    let s = range.replace_all(s, ">= $1, <= $8").to_string();
    let find = regex::Regex::new(&format!(r"({OPS})?\s*({CV})")).unwrap();
    let mut out = Vec::new();
    for or in s.split("||") {
        let mut group = Vec::new();
        let toks: Vec<&str> = find.find_iter(or).map(|m| m.as_str()).collect();
        if toks.is_empty() {
            if or.trim().is_empty() {
                group.push(parse_constraint("*")?);
            } else {
                return Err(format!("improper constraint: {or}"));
            }
        }
        for t in toks {
            group.push(parse_constraint(t)?);
        }
        out.push(group);
    }
    Ok(out)
}

fn check(v: &Version, c: &Constraint) -> Result<(), String> {
    let vs = v.to_string();
    let o = &c.orig;
    let pre_msg = || {
        Err(format!(
            "{vs} is a prerelease version and the constraint is only looking for release versions"
        ))
    };
    if !v.pre.is_empty() && c.con.pre.is_empty() {
        return pre_msg();
    }
    let cmp = v.compare(&c.con);
    match c.op.as_str() {
        "" | "=" => {
            if c.dirty {
                return tilde(v, c);
            }
            if cmp == Ordering::Equal {
                Ok(())
            } else {
                Err(format!("{vs} is not equal to {o}"))
            }
        }
        "!=" => {
            let eqmsg = Err(format!("{vs} is equal to {o}"));
            if c.dirty {
                if c.con.major != v.major {
                    return Ok(());
                }
                if c.con.minor != v.minor && !c.minor_dirty {
                    return Ok(());
                } else if c.minor_dirty {
                    return eqmsg;
                } else if c.con.patch != v.patch && !c.patch_dirty {
                    return Ok(());
                } else if c.patch_dirty {
                    if (!v.pre.is_empty() || !c.con.pre.is_empty()) && v.pre != c.con.pre {
                        return Ok(());
                    }
                    return eqmsg;
                }
            }
            if cmp == Ordering::Equal {
                eqmsg
            } else {
                Ok(())
            }
        }
        ">" => {
            let msg = Err(format!("{vs} is less than or equal to {o}"));
            if !c.dirty {
                return if cmp == Ordering::Greater {
                    Ok(())
                } else {
                    msg
                };
            }
            if v.major > c.con.major {
                Ok(())
            } else if v.major < c.con.major || c.minor_dirty {
                msg
            } else if c.patch_dirty {
                if v.minor > c.con.minor { Ok(()) } else { msg }
            } else if cmp == Ordering::Greater {
                Ok(())
            } else {
                msg
            }
        }
        "<" => {
            if cmp == Ordering::Less {
                Ok(())
            } else {
                Err(format!("{vs} is greater than or equal to {o}"))
            }
        }
        ">=" | "=>" => {
            if cmp != Ordering::Less {
                Ok(())
            } else {
                Err(format!("{vs} is less than {o}"))
            }
        }
        "<=" | "=<" => {
            let msg = Err(format!("{vs} is greater than {o}"));
            if !c.dirty {
                return if cmp != Ordering::Greater {
                    Ok(())
                } else {
                    msg
                };
            }
            if v.major > c.con.major
                || (v.major == c.con.major && v.minor > c.con.minor && !c.minor_dirty)
            {
                return msg;
            }
            Ok(())
        }
        "~" | "~>" => tilde(v, c),
        _ => {
            // ^
            if cmp == Ordering::Less {
                return Err(format!("{vs} is less than {o}"));
            }
            if c.con.major > 0 || c.minor_dirty {
                return if v.major == c.con.major {
                    Ok(())
                } else {
                    Err(format!("{vs} does not have same major version as {o}"))
                };
            }
            if c.con.major == 0 && v.major > 0 {
                return Err(format!("{vs} does not have same major version as {o}"));
            }
            if c.con.minor > 0 || c.patch_dirty {
                return if v.minor == c.con.minor {
                    Ok(())
                } else {
                    Err(format!(
                        "{vs} does not have same minor version as {o}. Expected minor versions to match when constraint major version is 0"
                    ))
                };
            }
            if c.con.minor == 0 && v.minor > 0 {
                return Err(format!("{vs} does not have same minor version as {o}"));
            }
            if c.con.patch == v.patch {
                Ok(())
            } else {
                Err(format!(
                    "{vs} does not equal {o}. Expect version and constraint to equal when major and minor versions are 0"
                ))
            }
        }
    }
}

fn tilde(v: &Version, c: &Constraint) -> Result<(), String> {
    let vs = v.to_string();
    let o = &c.orig;
    if !v.pre.is_empty() && c.con.pre.is_empty() {
        return Err(format!(
            "{vs} is a prerelease version and the constraint is only looking for release versions"
        ));
    }
    if v.compare(&c.con) == Ordering::Less {
        return Err(format!("{vs} is less than {o}"));
    }
    if c.con.major == 0 && c.con.minor == 0 && c.con.patch == 0 && !c.minor_dirty && !c.patch_dirty
    {
        return Ok(());
    }
    if v.major != c.con.major {
        return Err(format!("{vs} does not have same major version as {o}"));
    }
    if v.minor != c.con.minor && !c.minor_dirty {
        return Err(format!(
            "{vs} does not have same major and minor version as {o}"
        ));
    }
    Ok(())
}

fn validate_constraints(cs: &[Vec<Constraint>], v: &Version) -> (bool, Vec<String>) {
    let mut errs = Vec::new();
    let mut prerelease = false;
    for group in cs {
        let mut joy = true;
        for c in group {
            if c.con.pre.is_empty() && !v.pre.is_empty() {
                if !prerelease {
                    errs.push(format!(
                        "{} is a prerelease version and the constraint is only looking for release versions",
                        v
                    ));
                    prerelease = true;
                }
                joy = false;
            } else if let Err(e) = check(v, c) {
                errs.push(e);
                joy = false;
            }
        }
        if joy {
            return (true, Vec::new());
        }
    }
    (false, errs)
}

fn parse_arg(name: &str, v: &Value) -> Result<Version, String> {
    let Value::Str(s) = v else {
        return Err(format!(
            "{name} requires one string argument, but got {}",
            v.type_name()
        ));
    };
    Version::parse_spiff(s).map_err(|e| format!("{name}: {}: {e}", super::expr::go_quote(s)))
}

/// The semver validator: (valid, message, error, resolved)
pub(crate) fn validate(
    name: &str,
    noerr: bool,
    value: &Value,
    args: &[Value],
) -> (bool, String, Option<String>, bool) {
    let v = match parse_arg(name, value) {
        Ok(v) => v,
        Err(e) => {
            if noerr {
                return (false, e, None, true);
            }
            return (false, String::new(), Some(e), true);
        }
    };
    for (i, a) in args.iter().enumerate() {
        let Value::Str(c) = a else {
            return (
                false,
                String::new(),
                Some(format!("{name}: constraint argument {i} must be string")),
                true,
            );
        };
        let cs = match parse_constraints(c) {
            Ok(cs) => cs,
            Err(e) => {
                return (
                    false,
                    String::new(),
                    Some(format!(
                        "{name}: invalid constraint {}[{i}]: {e}",
                        super::expr::go_quote(c)
                    )),
                    true,
                );
            }
        };
        let (ok, msgs) = validate_constraints(&cs, &v);
        if !ok {
            return (false, format!("[{}]", msgs.join(" ")), None, true);
        }
    }
    if !args.is_empty() {
        return (true, "matches contraint".into(), None, true);
    }
    (true, "is semantic version".into(), None, true)
}

fn err(msg: impl Into<String>) -> FRes {
    let (v, i, o) = Info::default().error(msg);
    (v, i, o, true)
}

fn ok(v: Value) -> FRes {
    (v, Info::default(), true, true)
}

pub(crate) fn call(name: &str, args: &[Value]) -> FRes {
    match name {
        "semvermajor" | "semverminor" | "semverpatch" | "semver" | "semverincmajor"
        | "semverincminor" | "semverincpatch" => {
            if args.len() != 1 {
                return err(format!("{name} requires one semver argument"));
            }
            let pname = if name == "semver" {
                "semverprerelease"
            } else {
                name
            };
            let v = match parse_arg(pname, &args[0]) {
                Ok(v) => v,
                Err(e) => return err(e),
            };
            ok(match name {
                "semvermajor" => Value::Int(v.major as i64),
                "semverminor" => Value::Int(v.minor as i64),
                "semverpatch" => Value::Int(v.patch as i64),
                "semver" => Value::str(v.to_string()),
                "semverincmajor" => Value::str(v.inc_major().original),
                "semverincminor" => Value::str(v.inc_minor().original),
                _ => Value::str(v.inc_patch().original),
            })
        }
        "semverprerelease" | "semvermetadata" | "semverrelease" => {
            if args.len() > 2 {
                return err(format!(
                    "{name} requires one semver argument and an optional value"
                ));
            }
            if args.is_empty() {
                return err(format!("{name} requires one semver argument"));
            }
            let v = match parse_arg(name, &args[0]) {
                Ok(v) => v,
                Err(e) => return err(e),
            };
            let attr = &name["semver".len()..];
            if args.len() == 2 {
                let Value::Str(s) = &args[1] else {
                    return err(format!(
                        "{name}: {attr} requires string, but got {}",
                        args[1].type_name()
                    ));
                };
                let r = match name {
                    "semverprerelease" => v.set_prerelease(s),
                    "semvermetadata" => v.set_metadata(s),
                    _ => Version::parse_spiff(s).and_then(|n| {
                        n.set_metadata(&v.metadata)
                            .and_then(|r| r.set_prerelease(&v.pre))
                    }),
                };
                return match r {
                    Ok(r) => ok(Value::str(r.original)),
                    Err(e) => err(format!(
                        "{name}: invalid {attr} {}: {e}",
                        super::expr::go_quote(s)
                    )),
                };
            }
            ok(match name {
                "semverprerelease" => Value::str(v.pre.clone()),
                "semvermetadata" => Value::str(v.metadata.clone()),
                _ => {
                    let r = v
                        .set_metadata("")
                        .and_then(|r| r.set_prerelease(""))
                        .map(|r| r.original)
                        .unwrap_or_default();
                    Value::str(r)
                }
            })
        }
        "semvercmp" => {
            if args.len() != 2 {
                return err("semvercmp requires two arguments");
            }
            let a = match parse_arg(name, &args[0]) {
                Ok(v) => v,
                Err(e) => return err(e),
            };
            let b = match parse_arg(name, &args[1]) {
                Ok(v) => v,
                Err(e) => return err(e),
            };
            ok(Value::Int(match a.compare(&b) {
                Ordering::Less => -1,
                Ordering::Equal => 0,
                Ordering::Greater => 1,
            }))
        }
        "semvermatch" => {
            if args.is_empty() {
                return err("semvermatch requires at least one arguments");
            }
            let (r, _, e, _) = validate(name, false, &args[0], &args[1..]);
            match e {
                Some(e) => err(e),
                None => ok(Value::Bool(r)),
            }
        }
        "semvervalidate" => {
            if args.is_empty() {
                return err("semvervalidate requires at least one arguments");
            }
            let (r, m, e, _) = validate(name, false, &args[0], &args[1..]);
            let q = match &args[0] {
                Value::Str(s) => super::expr::go_quote(s),
                other => super::expr::value_as_string(other, true),
            };
            if let Some(e) = e {
                return err(format!("semvervalidate: {q}: {e}"));
            }
            if !r {
                return err(format!("semvervalidate: {q}: {m}"));
            }
            ok(args[0].clone())
        }
        "semversort" => {
            let mut items: Vec<Value> = args.to_vec();
            if args.len() == 1
                && let Value::List(l) = &args[0]
            {
                items = l.iter().map(|n| n.value().clone()).collect();
            }
            let mut versions = Vec::new();
            for a in &items {
                match parse_arg("semvercmp", a) {
                    Ok(v) => versions.push(v),
                    Err(e) => return err(e),
                }
            }
            versions.sort_by(|a, b| a.compare(b));
            ok(Value::list(
                versions
                    .into_iter()
                    .map(|v| Node::new(Value::str(v.original)))
                    .collect(),
            ))
        }
        _ => err(format!("unknown function '{name}'")),
    }
}
