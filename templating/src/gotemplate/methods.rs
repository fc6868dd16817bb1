//! Methods of the Go types that sprig functions return, which templates call like fields
//! (`(semver "1.2.3").Major`, `$t.Year`, `$v.Compare $w`): Go's `evalField` finds a method of
//! the receiver before it looks for a field or map key.

use super::funcs::dates::{self, Time};
use super::function::GoType;
use super::value::{Value, go_lossy};
use crate::semver::Version;

/// A method: its Go parameter types and its body (the receiver and the converted arguments).
#[derive(Clone, Copy)]
pub(crate) struct Method {
    pub params: &'static [GoType],
    pub call: fn(&Value, &[Value]) -> Result<Value, String>,
}

/// The method `name` of the receiver's type, if it has one.
pub(crate) fn lookup(receiver: &Value, name: &str) -> Option<Method> {
    match receiver {
        Value::Semver(_) => semver_method(name),
        Value::Time(_) => time_method(name),
        _ => None,
    }
}

const NO_PARAMS: &[GoType] = &[];
const ONE_VERSION: &[GoType] = &[GoType::Semver];
const ONE_TIME: &[GoType] = &[GoType::Time];
const ONE_STRING: &[GoType] = &[GoType::String];

fn m(params: &'static [GoType], call: fn(&Value, &[Value]) -> Result<Value, String>) -> Method {
    Method { params, call }
}

fn version(v: &Value) -> &Version {
    match v {
        Value::Semver(v) => v,
        _ => unreachable!("semver methods are looked up on versions"),
    }
}

/// The `*Version` argument; a nil pointer panics in Masterminds' methods.
fn version_arg(v: &Value) -> Result<&Version, String> {
    match v {
        Value::Semver(v) => Ok(v),
        _ => Err("runtime error: invalid memory address or nil pointer dereference".into()),
    }
}

/// Masterminds/semver's `*Version` methods that read it.
fn semver_method(name: &str) -> Option<Method> {
    Some(match name {
        "Major" => m(NO_PARAMS, |r, _| Ok(Value::Uint64(version(r).major))),
        "Minor" => m(NO_PARAMS, |r, _| Ok(Value::Uint64(version(r).minor))),
        "Patch" => m(NO_PARAMS, |r, _| Ok(Value::Uint64(version(r).patch))),
        "Prerelease" => m(NO_PARAMS, |r, _| Ok(Value::string(version(r).pre.as_str()))),
        "Metadata" => m(NO_PARAMS, |r, _| {
            Ok(Value::string(version(r).metadata.as_str()))
        }),
        "Original" => m(NO_PARAMS, |r, _| {
            Ok(Value::string(version(r).original.as_str()))
        }),
        "String" => m(NO_PARAMS, |r, _| Ok(Value::string(version(r).to_string()))),
        "Compare" => m(ONE_VERSION, |r, a| {
            Ok(Value::Int(version(r).compare(version_arg(&a[0])?) as i64))
        }),
        "LessThan" => m(ONE_VERSION, |r, a| {
            Ok(Value::Bool(version(r).compare(version_arg(&a[0])?).is_lt()))
        }),
        "GreaterThan" => m(ONE_VERSION, |r, a| {
            Ok(Value::Bool(version(r).compare(version_arg(&a[0])?).is_gt()))
        }),
        "Equal" => m(ONE_VERSION, |r, a| {
            Ok(Value::Bool(version(r).compare(version_arg(&a[0])?).is_eq()))
        }),
        "LessThanEqual" => m(ONE_VERSION, |r, a| {
            Ok(Value::Bool(version(r).compare(version_arg(&a[0])?).is_le()))
        }),
        "GreaterThanEqual" => m(ONE_VERSION, |r, a| {
            Ok(Value::Bool(version(r).compare(version_arg(&a[0])?).is_ge()))
        }),
        _ => return None,
    })
}

fn time(v: &Value) -> &Time {
    match v {
        Value::Time(t) => t,
        _ => unreachable!("time methods are looked up on times"),
    }
}

/// `time.Time`'s methods that read it (those returning `time.Month`, `time.Weekday` or
/// `time.Duration` are left out: the value model has no such types).
fn time_method(name: &str) -> Option<Method> {
    Some(match name {
        "Year" => m(NO_PARAMS, |r, _| Ok(Value::Int(time(r).civil_fields().0))),
        "Day" => m(NO_PARAMS, |r, _| Ok(Value::Int(time(r).civil_fields().2))),
        "Hour" => m(NO_PARAMS, |r, _| Ok(Value::Int(time(r).civil_fields().3))),
        "Minute" => m(NO_PARAMS, |r, _| Ok(Value::Int(time(r).civil_fields().4))),
        "Second" => m(NO_PARAMS, |r, _| Ok(Value::Int(time(r).civil_fields().5))),
        "YearDay" => m(NO_PARAMS, |r, _| Ok(Value::Int(time(r).civil_fields().6))),
        "Nanosecond" => m(NO_PARAMS, |r, _| Ok(Value::Int(time(r).nanos as i64))),
        "Unix" => m(NO_PARAMS, |r, _| Ok(Value::Int64(time(r).secs))),
        "UnixMilli" => m(NO_PARAMS, |r, _| {
            let t = time(r);
            Ok(Value::Int64(
                t.secs
                    .wrapping_mul(1000)
                    .wrapping_add(t.nanos as i64 / 1_000_000),
            ))
        }),
        "UnixNano" => m(NO_PARAMS, |r, _| {
            let t = time(r);
            Ok(Value::Int64(
                t.secs
                    .wrapping_mul(1_000_000_000)
                    .wrapping_add(t.nanos as i64),
            ))
        }),
        "IsZero" => m(NO_PARAMS, |r, _| {
            let (t, zero) = (time(r), Time::zero());
            Ok(Value::Bool(t.secs == zero.secs && t.nanos == 0))
        }),
        "String" => m(NO_PARAMS, |r, _| Ok(Value::string(time(r).go_string()))),
        "Format" => m(ONE_STRING, |r, a| {
            let layout = a[0].string_bytes().unwrap_or_default();
            Ok(Value::string(dates::format(time(r), &go_lossy(layout))))
        }),
        "UTC" => m(NO_PARAMS, |r, _| Ok(time(r).in_zone("UTC").to_value())),
        "Local" => m(NO_PARAMS, |r, _| Ok(time(r).in_zone("Local").to_value())),
        "Before" => m(ONE_TIME, |r, a| {
            Ok(Value::Bool(time(r).instant() < time(&a[0]).instant()))
        }),
        "After" => m(ONE_TIME, |r, a| {
            Ok(Value::Bool(time(r).instant() > time(&a[0]).instant()))
        }),
        "Equal" => m(ONE_TIME, |r, a| {
            Ok(Value::Bool(time(r).instant() == time(&a[0]).instant()))
        }),
        _ => return None,
    })
}
