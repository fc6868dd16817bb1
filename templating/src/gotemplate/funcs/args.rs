//! Reading typed arguments. The engine converts and checks the arguments of functions that
//! declare their Go parameter types (`FuncMap::set_params`) as Go's reflection does, with Go's
//! messages and positions (constants convert to the parameter's type, a value must be
//! assignable, an untyped nil becomes the zero value of a nilable type); these helpers only
//! unwrap what arrives, and report Go's `validateType` message to callers that pass a function
//! the wrong type directly.

use std::rc::Rc;

use super::super::function::FuncError;
use super::super::value::{Elem, GoSlice, ListRef, MapRef, Value, go_lossy};

/// `wrong type for value; expected T; got U`, or `invalid value; expected T` for nil, as
/// `text/template`'s `validateType` reports them.
pub fn type_error(expected: &str, got: &Value) -> FuncError {
    match got {
        Value::Nil => FuncError::new(format!("invalid value; expected {expected}")),
        other => FuncError::new(format!(
            "wrong type for value; expected {expected}; got {}",
            other.type_name()
        )),
    }
}

/// A Go `string` parameter, as text: invalid UTF-8 (a [`Value::ByteString`]) reads with
/// U+FFFD replacements, which is what Go's rune-wise string functions see.
pub fn string(v: &Value) -> Result<Rc<str>, FuncError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::ByteString(b) => Ok(go_lossy(b).into()),
        other => Err(type_error("string", other)),
    }
}

/// A Go `string` parameter, as its bytes (for the functions that work on bytes: hashing,
/// encoding, byte-indexed cutting).
pub fn string_bytes(v: &Value) -> Result<&[u8], FuncError> {
    v.string_bytes().ok_or_else(|| type_error("string", v))
}

/// A Go `int` parameter.
pub fn int(v: &Value) -> Result<i64, FuncError> {
    match v {
        Value::Int(i) => Ok(*i),
        other => Err(type_error("int", other)),
    }
}

/// A Go `uint32` parameter: only an integer constant converts; the engine passes it as `Int`.
pub fn uint32(v: &Value) -> Result<u32, FuncError> {
    match v {
        Value::Int(i) if *i >= 0 && *i <= u32::MAX as i64 => Ok(*i as u32),
        other => Err(type_error("uint32", other)),
    }
}

/// A Go `float64` parameter.
pub fn float64(v: &Value) -> Result<f64, FuncError> {
    match v {
        Value::Float(f) => Ok(*f),
        other => Err(type_error("float64", other)),
    }
}

/// A Go `bool` parameter.
pub fn boolean(v: &Value) -> Result<bool, FuncError> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(type_error("bool", other)),
    }
}

/// A Go `map[string]interface{}` parameter; `None` is the nil map (reads see it empty, writes
/// panic with `assignment to entry in nil map`).
pub fn map(v: &Value) -> Result<Option<MapRef>, FuncError> {
    match v {
        Value::Map(m) if m.elem == Elem::Interface => Ok(Some(m.clone())),
        Value::Nil => Ok(None),
        other => Err(type_error("map[string]interface {}", other)),
    }
}

/// A Go `[]interface{}` parameter; nil is the nil slice.
pub fn list(v: &Value) -> Result<ListRef, FuncError> {
    match v {
        Value::List(l) if l.elem == Elem::Interface => Ok(l.clone()),
        Value::Nil => Ok(Rc::new(GoSlice::default())),
        other => Err(type_error("[]interface {}", other)),
    }
}

/// Go's `panic: assignment to entry in nil map`, as `text/template` reports a recovered panic.
pub fn nil_map_write() -> FuncError {
    FuncError::new("assignment to entry in nil map")
}

/// The element kinds Go's `reflect.Kind.String()` names, for messages like
/// `Cannot find first on type string`.
pub fn kind_name(v: &Value) -> &'static str {
    v.kind_name()
}

/// The elements of a Go slice or array (`[]byte` yields its bytes as `uint8`s, which we model
/// as `Int`), or `None` for other kinds.
pub fn slice_items(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::List(l) => Some(l.to_vec()),
        Value::Bytes(b) => Some(b.iter().map(|x| Value::Int(*x as i64)).collect()),
        _ => None,
    }
}

pub fn s(text: impl Into<Rc<str>>) -> Value {
    Value::String(text.into())
}
