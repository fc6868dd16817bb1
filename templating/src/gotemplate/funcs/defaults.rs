//! sprig's defaults.go and flow control: `default`, `empty`, `coalesce`, `all`, `any`,
//! `ternary`, `fail`, and the JSON functions.

use super::super::function::{Arity, FuncError, FuncMap};
use super::super::value::Value;
use super::args::{self, s};
use super::json;
use super::reflect::empty;

pub fn register(m: &mut FuncMap) {
    m.insert("default", Arity::AtLeast(1), |_, a| {
        Ok(match a.get(1) {
            Some(given) if !empty(given) => given.clone(),
            _ => a[0].clone(),
        })
    });
    m.insert("empty", Arity::Exact(1), |_, a| {
        Ok(Value::Bool(empty(&a[0])))
    });
    m.insert("coalesce", Arity::AtLeast(0), |_, a| {
        Ok(a.iter().find(|v| !empty(v)).cloned().unwrap_or(Value::Nil))
    });
    m.insert("all", Arity::AtLeast(0), |_, a| {
        Ok(Value::Bool(a.iter().all(|v| !empty(v))))
    });
    m.insert("any", Arity::AtLeast(0), |_, a| {
        Ok(Value::Bool(a.iter().any(|v| !empty(v))))
    });
    m.insert("ternary", Arity::Exact(3), |_, a| {
        Ok(if args::boolean(&a[2])? {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
    m.insert("fail", Arity::Exact(1), |_, a| {
        Err(FuncError::new(args::string(&a[0])?.to_string()))
    });
    m.insert("fromJson", Arity::Exact(1), |_, a| {
        Ok(json::decode_partial(&args::string(&a[0])?)
            .0
            .unwrap_or(Value::Nil))
    });
    m.insert("mustFromJson", Arity::Exact(1), |_, a| {
        json::decode(&args::string(&a[0])?).map_err(FuncError::new)
    });
    m.insert("toJson", Arity::Exact(1), |_, a| {
        Ok(s(json::encode(&a[0], true).unwrap_or_default()))
    });
    m.insert("mustToJson", Arity::Exact(1), |_, a| {
        json::encode(&a[0], true).map(s).map_err(FuncError::new)
    });
    m.insert("toPrettyJson", Arity::Exact(1), |_, a| {
        Ok(s(json::encode_indent(&a[0], "  ").unwrap_or_default()))
    });
    m.insert("mustToPrettyJson", Arity::Exact(1), |_, a| {
        json::encode_indent(&a[0], "  ")
            .map(s)
            .map_err(FuncError::new)
    });
    for name in ["toRawJson", "mustToRawJson"] {
        m.insert(name, Arity::Exact(1), |_, a| {
            json::encode(&a[0], false).map(s).map_err(FuncError::new)
        });
    }
}
