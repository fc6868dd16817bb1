//! Values as Go's `text/template` sees them: the dynamic types that JSON-decoded data, template
//! literals and sprig functions produce.
//!
//! Maps are reference types, as in Go: `set` and `merge` mutate a map that other values share.
//! Lists are immutable once built (sprig's list functions return new lists), so they are shared
//! with `Rc` without interior mutability.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// A Go map[string]interface{}, shared by reference.
pub type MapRef = Rc<RefCell<BTreeMap<String, Value>>>;

/// A Go value with its dynamic type.
#[derive(Debug, Clone, Default)]
pub enum Value {
    /// An untyped nil (a missing map key, a nil interface).
    #[default]
    Nil,
    Bool(bool),
    /// Go `int`: integer literals, `len`, `atoi`, `int`.
    Int(i64),
    /// Go `int64`: sprig's integer math (`add`, `sub`, `mul`, `div`, `mod`, `int64`, ...).
    Int64(i64),
    /// Go `float64`: every JSON number, float literals, `float64`, `addf`, ...
    Float(f64),
    String(Rc<str>),
    /// Go `[]byte` (what `b64dec` works on internally; printed as the bytes' string in `%s`).
    Bytes(Rc<[u8]>),
    /// Go `[]interface{}`.
    List(Rc<Vec<Value>>),
    /// Go `map[string]interface{}`.
    Map(MapRef),
}

impl Value {
    pub fn string(s: impl Into<Rc<str>>) -> Value {
        Value::String(s.into())
    }

    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(items))
    }

    pub fn map(entries: BTreeMap<String, Value>) -> Value {
        Value::Map(Rc::new(RefCell::new(entries)))
    }

    pub fn empty_map() -> Value {
        Value::map(BTreeMap::new())
    }

    /// Go's type name as `printf "%T"` prints it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "<nil>",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Int64(_) => "int64",
            Value::Float(_) => "float64",
            Value::String(_) => "string",
            Value::Bytes(_) => "[]uint8",
            Value::List(_) => "[]interface {}",
            Value::Map(_) => "map[string]interface {}",
        }
    }

    /// Decodes JSON data the way Go's `encoding/json` does into `interface{}`: numbers become
    /// float64, objects `map[string]interface{}`, arrays `[]interface{}`.
    pub fn from_json(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            serde_json::Value::String(s) => Value::string(s.as_str()),
            serde_json::Value::Array(items) => {
                Value::list(items.iter().map(Value::from_json).collect())
            }
            serde_json::Value::Object(map) => Value::map(
                map.iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// Encodes as JSON the way Go's `encoding/json` does (used by `toJson`, `toYaml` and to
    /// hand rendered data back). Integers stay integers; non-finite floats are an error in Go.
    pub fn to_json(&self) -> Result<serde_json::Value, String> {
        Ok(match self {
            Value::Nil => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) | Value::Int64(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .ok_or_else(|| format!("json: unsupported value: {f}"))?,
            Value::String(s) => serde_json::Value::String(s.to_string()),
            // encoding/json writes []byte as base64.
            Value::Bytes(b) => serde_json::Value::String(base64_std(b)),
            Value::List(items) => serde_json::Value::Array(
                items.iter().map(Value::to_json).collect::<Result<_, _>>()?,
            ),
            Value::Map(map) => serde_json::Value::Object(
                map.borrow()
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), v.to_json()?)))
                    .collect::<Result<_, String>>()?,
            ),
        })
    }

    /// Go's notion of truth for `if`, `with`, `and`, `or`, `not`: the zero value of its type,
    /// nil and empty collections are false.
    pub fn is_truthy(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::Int64(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::Bytes(b) => !b.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.borrow().is_empty(),
        }
    }
}

fn base64_std(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_numbers_become_float64_and_round_trip() {
        let v = Value::from_json(&json!({"a": [1, "x", null, true], "b": {"c": 2.5}}));
        let Value::Map(m) = &v else { panic!() };
        let Value::List(a) = &m.borrow()["a"] else {
            panic!()
        };
        assert!(matches!(a[0], Value::Float(f) if f == 1.0));
        assert_eq!(
            v.to_json().unwrap(),
            json!({"a": [1.0, "x", null, true], "b": {"c": 2.5}})
        );
        assert_eq!(
            Value::Bytes(Rc::from(&b"hi!?"[..])).to_json().unwrap(),
            json!("aGkhPw==")
        );
    }

    #[test]
    fn truthiness_follows_go() {
        assert!(!Value::Nil.is_truthy());
        assert!(!Value::Int(0).is_truthy());
        assert!(!Value::string("").is_truthy());
        assert!(!Value::empty_map().is_truthy());
        assert!(Value::list(vec![Value::Nil]).is_truthy());
    }
}
