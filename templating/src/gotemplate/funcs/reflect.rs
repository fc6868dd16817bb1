//! sprig's reflection functions and the Go notions they rest on: `reflect.DeepEqual` and
//! sprig's `empty`.

use std::rc::Rc;

use super::super::function::{Arity, FuncMap};
use super::super::value::Value;
use super::args::{self, kind_name, s};

/// `reflect.DeepEqual` for template values: the dynamic types must match.
pub fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) | (Value::Int64(x), Value::Int64(y)) => x == y,
        (Value::Uint64(x), Value::Uint64(y)) => x == y,
        (Value::Uint8(x), Value::Uint8(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::ByteString(x), Value::ByteString(y)) | (Value::Bytes(x), Value::Bytes(y)) => x == y,
        // Comparing collections is work charged to the render budget; once it is exceeded
        // (the render fails), comparisons stop.
        (Value::List(x), Value::List(y)) if crate::budget::charge(64).is_err() => {
            let _ = (x, y);
            false
        }
        (Value::Map(x), Value::Map(y)) if crate::budget::charge(64).is_err() => {
            let _ = (x, y);
            false
        }
        (Value::List(x), Value::List(y)) => {
            x.elem == y.elem
                && (Rc::ptr_eq(x, y)
                    || x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| deep_equal(p, q)))
        }
        (Value::Map(x), Value::Map(y)) => {
            if Rc::ptr_eq(x, y) {
                return true;
            }
            if x.elem != y.elem {
                return false;
            }
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_equal(v, w)))
        }
        // Structs field by field; pointers by what they point to.
        (Value::Time(x), Value::Time(y)) => x == y,
        (Value::Semver(x), Value::Semver(y)) => x == y,
        _ => false,
    }
}

/// sprig's `empty`: nil, false, zero numbers and empty strings and collections.
pub fn empty(v: &Value) -> bool {
    !v.is_truthy()
}

pub fn register(m: &mut FuncMap) {
    m.insert("typeOf", Arity::Exact(1), |_, a| Ok(s(a[0].type_name())));
    m.insert("typeIs", Arity::Exact(2), |_, a| {
        let target = args::string(&a[0])?;
        Ok(Value::Bool(&*target == a[1].type_name()))
    });
    m.insert("typeIsLike", Arity::Exact(2), |_, a| {
        let target = args::string(&a[0])?;
        let t = a[1].type_name();
        Ok(Value::Bool(&*target == t || format!("*{target}") == t))
    });
    m.insert("kindOf", Arity::Exact(1), |_, a| Ok(s(kind_name(&a[0]))));
    m.insert("kindIs", Arity::Exact(2), |_, a| {
        let target = args::string(&a[0])?;
        Ok(Value::Bool(&*target == kind_name(&a[1])))
    });
    m.insert("deepEqual", Arity::Exact(2), |_, a| {
        Ok(Value::Bool(deep_equal(&a[0], &a[1])))
    });
}
