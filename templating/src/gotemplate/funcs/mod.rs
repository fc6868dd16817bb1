//! Function libraries for the Go template engine: sprig v3 ([`sprig`]), Landscaper's
//! executor functions ([`landscaper`]) and Helm's additions ([`helm`]), and the combined maps
//! each of them uses ([`landscaper_template_funcs`], [`helm_template_funcs`]).

pub mod args;
pub mod conv;
pub mod crypto;
pub mod dates;
pub mod defaults;
pub mod dicts;
pub mod encoding;
pub mod helm;
pub mod json;
pub mod landscaper;
pub mod lists;
pub mod numeric;
pub mod paths;
pub mod random;
pub mod reflect;
pub mod regex;
pub mod semver;
mod sprig;
pub mod strings;
pub mod strval;
pub mod toml;
pub mod unicode;
pub mod yaml;

pub use sprig::sprig;

use super::function::FuncMap;

pub use helm::helm;
pub use landscaper::{Components, landscaper};

/// The function map of Landscaper's GoTemplate executions: sprig v3 without `env` and
/// `expandenv` (`LandscaperSprigFuncMap`), overridden by `LandscaperTplFuncMap` and `include`.
pub fn landscaper_template_funcs(components: Components) -> FuncMap {
    let mut m = sprig();
    m.extend(landscaper(components));
    m
}

/// Helm's `funcMap()` with the late-bound functions of `Engine.initFunMap`: sprig v3 without
/// `env` and `expandenv`, overridden by Helm's functions (`toYaml`, `toJson`, `include`, `tpl`,
/// `required`, `fail`, `lookup`, `getHostByName`…).
pub fn helm_template_funcs() -> FuncMap {
    let mut m = sprig();
    m.extend(helm());
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gotemplate::function::Arity;

    #[test]
    fn declared_params_fit_the_arities() {
        for (which, m) in [
            (
                "landscaper",
                landscaper_template_funcs(Components::default()),
            ),
            ("helm", helm_template_funcs()),
        ] {
            for name in m.names() {
                let Some(params) = m.params(name) else {
                    continue;
                };
                let want = match m.get(name).map(|d| d.arity) {
                    Some(Arity::Exact(n)) => n,
                    Some(Arity::AtLeast(n)) => n + 1,
                    None => unreachable!(),
                };
                assert_eq!(params.len(), want, "{which}: {name}");
            }
        }
    }
}
