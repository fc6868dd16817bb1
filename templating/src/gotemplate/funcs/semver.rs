//! `semver` and `semverCompare`: [`crate::semver`] (Masterminds/semver v3.4) as template
//! functions.

use std::rc::Rc;

use super::super::function::{Arity, FuncError, FuncMap};
use super::super::value::Value;
use super::args;
use crate::semver::{Constraints, Version};

/// A version as the template value `semver` returns.
pub fn version_value(v: &Version) -> Value {
    Value::Semver(Rc::new(v.clone()))
}

pub fn register(m: &mut FuncMap) {
    m.insert("semver", Arity::Exact(1), |_, a| {
        let v = args::string(&a[0])?;
        Version::parse(&v)
            .map(|v| version_value(&v))
            .map_err(FuncError::new)
    });
    m.insert("semverCompare", Arity::Exact(2), |_, a| {
        let (c, v) = (args::string(&a[0])?, args::string(&a[1])?);
        let c = Constraints::parse(&c).map_err(FuncError::new)?;
        let v = Version::parse(&v).map_err(FuncError::new)?;
        Ok(Value::Bool(c.check(&v)))
    });
}
