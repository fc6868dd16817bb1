//! Methods of the Go types that sprig functions return, which templates call like fields
//! (`(semver "1.2.3").Major`, `$t.Year`, `$v.Compare $w`): Go's `evalField` finds a method of
//! the receiver before it looks for a field or map key.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::funcs::dates::{self, Time};
use super::function::GoType;
use super::value::{Elem, Value, go_lossy};
use crate::semver::Version;

/// Go's type name of Helm's `.Capabilities.KubeVersion` (a struct with the fields `Version`,
/// `Major`, `Minor` and the methods `String` and `GitVersion`).
pub const KUBE_VERSION_TYPE: &str = "chartutil.KubeVersion";

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
        Value::Map(m) if m.elem == Elem::Files => files_method(name),
        Value::Map(m) if m.elem == Elem::Struct(KUBE_VERSION_TYPE) => kube_version_method(name),
        Value::List(l) if l.elem == Elem::VersionSet => match name {
            "Has" => Some(m(ONE_STRING, |r, a| {
                let Value::List(l) = r else {
                    return Ok(Value::Bool(false));
                };
                let want = a[0].string_bytes().unwrap_or_default();
                Ok(Value::Bool(
                    l.iter().any(|v| v.string_bytes() == Some(want)),
                ))
            })),
            _ => None,
        },
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

/// The `String()` of a value whose pointer type is a `fmt.Stringer` (Helm's
/// `chartutil.KubeVersion`): text/template prints an addressable field of such a type through
/// it.
pub(crate) fn addressable_stringer(v: &Value) -> Option<String> {
    match v {
        Value::Map(m) if m.elem == Elem::Struct(KUBE_VERSION_TYPE) => Some(
            m.borrow()
                .get("Version")
                .and_then(|v| v.string_bytes().map(go_lossy))
                .unwrap_or_default(),
        ),
        _ => None,
    }
}

fn kube_version_method(name: &str) -> Option<Method> {
    match name {
        "String" | "GitVersion" => Some(m(NO_PARAMS, |r, _| {
            let Value::Map(m) = r else {
                return Ok(Value::string(""));
            };
            Ok(m.borrow()
                .get("Version")
                .cloned()
                .unwrap_or_else(|| Value::string("")))
        })),
        _ => None,
    }
}

/// The files of a Helm `.Files` value, by name.
fn files_of(r: &Value) -> Vec<(String, Value)> {
    match r {
        Value::Map(m) => m
            .borrow()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        _ => Vec::new(),
    }
}

fn file_bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::Bytes(b) | Value::ByteString(b) => b.to_vec(),
        Value::String(s) => s.as_bytes().to_vec(),
        _ => Vec::new(),
    }
}

fn get_file(r: &Value, name: &[u8]) -> Vec<u8> {
    let Value::Map(m) = r else {
        return Vec::new();
    };
    let name = String::from_utf8_lossy(name);
    m.borrow().get(&*name).map(file_bytes).unwrap_or_default()
}

/// Helm's `engine.files` methods (`pkg/engine/files.go`).
fn files_method(name: &str) -> Option<Method> {
    Some(match name {
        "GetBytes" => m(ONE_STRING, |r, a| {
            let name = a[0].string_bytes().unwrap_or_default();
            Ok(Value::Bytes(Rc::from(get_file(r, name))))
        }),
        "Get" => m(ONE_STRING, |r, a| {
            let name = a[0].string_bytes().unwrap_or_default();
            Ok(Value::from_bytes(get_file(r, name)))
        }),
        "Glob" => m(ONE_STRING, |r, a| {
            let pattern = go_lossy(a[0].string_bytes().unwrap_or_default());
            let matcher = crate::gotemplate::funcs::helm::Glob::compile(&pattern)
                .unwrap_or_else(crate::gotemplate::funcs::helm::Glob::any);
            let entries: BTreeMap<String, Value> = files_of(r)
                .into_iter()
                .filter(|(k, _)| matcher.matches(k))
                .collect();
            Ok(Value::typed_map(Elem::Files, entries))
        }),
        "AsConfig" => m(NO_PARAMS, |r, _| {
            let entries: BTreeMap<String, Value> = files_of(r)
                .into_iter()
                .map(|(k, v)| (base_name(&k), Value::from_bytes(file_bytes(&v))))
                .collect();
            Ok(Value::string(crate::gotemplate::funcs::helm::to_yaml(
                &Value::typed_map(Elem::String, entries),
            )))
        }),
        "AsSecrets" => m(NO_PARAMS, |r, _| {
            use base64::Engine as _;
            let entries: BTreeMap<String, Value> = files_of(r)
                .into_iter()
                .map(|(k, v)| {
                    let b64 = base64::engine::general_purpose::STANDARD.encode(file_bytes(&v));
                    (base_name(&k), Value::string(b64))
                })
                .collect();
            Ok(Value::string(crate::gotemplate::funcs::helm::to_yaml(
                &Value::typed_map(Elem::String, entries),
            )))
        }),
        "Lines" => m(ONE_STRING, |r, a| {
            let name = a[0].string_bytes().unwrap_or_default();
            let data = get_file(r, name);
            if data.is_empty() {
                return Ok(Value::string_list(Vec::<String>::new()));
            }
            let mut text = data;
            if text.last() == Some(&b'\n') {
                text.pop();
            }
            Ok(Value::typed_list(
                Elem::String,
                text.split(|&b| b == b'\n')
                    .map(|l| Value::from_bytes(l.to_vec()))
                    .collect(),
            ))
        }),
        _ => return None,
    })
}

/// Go's `path.Base` of a slash-separated path.
fn base_name(p: &str) -> String {
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return if p.is_empty() { ".".into() } else { "/".into() };
    }
    t.rsplit('/').next().unwrap_or(t).to_string()
}
