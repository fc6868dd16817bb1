//! sprig's list functions (list.go). Lists are copied, never changed in place.

use std::rc::Rc;

use super::super::function::{Arity, FuncError, FuncMap};
use super::super::value::{Elem, Value};
use super::args::{kind_name, slice_items};
use super::conv::to_int64;
use super::reflect::{deep_equal, empty};

/// `reflect.TypeOf(nil).Kind()` dereferences a nil type.
pub fn nil_deref() -> FuncError {
    FuncError::new("runtime error: invalid memory address or nil pointer dereference")
}

/// The items of a slice argument, or the error sprig raises (`Cannot <what> type <kind>`).
fn items(v: &Value, what: &str) -> Result<Vec<Value>, FuncError> {
    if let Value::Nil = v {
        return Err(nil_deref());
    }
    slice_items(v).ok_or_else(|| FuncError::new(format!("{what} {}", kind_name(v))))
}

/// Registers `name` and `mustName` with the same behaviour: sprig's non-must variants panic
/// with the error the must variant returns, and templates report both the same way.
fn both(
    m: &mut FuncMap,
    name: &'static str,
    must: &'static str,
    arity: Arity,
    f: fn(&[Value]) -> Result<Value, FuncError>,
) {
    m.insert(name, arity, move |_, a| f(a));
    m.insert(must, arity, move |_, a| f(a));
}

pub fn register(m: &mut FuncMap) {
    for name in ["list", "tuple"] {
        m.insert(name, Arity::AtLeast(0), |_, a| Ok(Value::list(a.to_vec())));
    }
    for (name, must) in [("append", "mustAppend"), ("push", "mustPush")] {
        both(m, name, must, Arity::Exact(2), |a| {
            let mut l = items(&a[0], "Cannot push on type")?;
            l.push(a[1].clone());
            Ok(Value::list(l))
        });
    }
    both(m, "prepend", "mustPrepend", Arity::Exact(2), |a| {
        let mut l = items(&a[0], "Cannot prepend on type")?;
        l.insert(0, a[1].clone());
        Ok(Value::list(l))
    });
    both(m, "chunk", "mustChunk", Arity::Exact(2), |a| {
        let size = super::args::int(&a[0])?;
        let l = items(&a[1], "Cannot chunk type")?;
        chunk(size, &l)
    });
    both(m, "last", "mustLast", Arity::Exact(1), |a| {
        Ok(items(&a[0], "Cannot find last on type")?
            .last()
            .cloned()
            .unwrap_or(Value::Nil))
    });
    both(m, "first", "mustFirst", Arity::Exact(1), |a| {
        Ok(items(&a[0], "Cannot find first on type")?
            .first()
            .cloned()
            .unwrap_or(Value::Nil))
    });
    both(m, "rest", "mustRest", Arity::Exact(1), |a| {
        let l = items(&a[0], "Cannot find rest on type")?;
        Ok(Value::list(l.into_iter().skip(1).collect()))
    });
    both(m, "initial", "mustInitial", Arity::Exact(1), |a| {
        let mut l = items(&a[0], "Cannot find initial on type")?;
        l.pop();
        Ok(Value::list(l))
    });
    both(m, "reverse", "mustReverse", Arity::Exact(1), |a| {
        let mut l = items(&a[0], "Cannot find reverse on type")?;
        l.reverse();
        Ok(Value::list(l))
    });
    both(m, "compact", "mustCompact", Arity::Exact(1), |a| {
        let l = items(&a[0], "Cannot compact on type")?;
        Ok(Value::list(l.into_iter().filter(|x| !empty(x)).collect()))
    });
    both(m, "uniq", "mustUniq", Arity::Exact(1), |a| {
        let l = items(&a[0], "Cannot find uniq on type")?;
        let mut out: Vec<Value> = Vec::new();
        for x in l {
            crate::budget::charge(out.len() as u64)?;
            if !out.iter().any(|y| deep_equal(&x, y)) {
                out.push(x);
            }
        }
        Ok(Value::list(out))
    });
    both(m, "without", "mustWithout", Arity::AtLeast(1), |a| {
        let l = items(&a[0], "Cannot find without on type")?;
        let omit = &a[1..];
        Ok(Value::list(
            l.into_iter()
                .filter(|x| !omit.iter().any(|o| deep_equal(x, o)))
                .collect(),
        ))
    });
    both(m, "has", "mustHas", Arity::Exact(2), |a| {
        if let Value::Nil = a[1] {
            return Ok(Value::Bool(false));
        }
        let l = items(&a[1], "Cannot find has on type")?;
        Ok(Value::Bool(l.iter().any(|x| deep_equal(&a[0], x))))
    });
    both(m, "slice", "mustSlice", Arity::AtLeast(1), |a| {
        let l = items(&a[0], "list should be type of slice or array but")?;
        if l.is_empty() {
            return Ok(Value::Nil);
        }
        let start = a.get(1).map(to_int64).unwrap_or(0);
        let end = match a.get(2) {
            Some(v) => to_int64(v),
            None => l.len() as i64,
        };
        if start < 0 || end < start || end > l.len() as i64 {
            return Err(FuncError::new(
                "reflect.Value.Slice: slice index out of bounds",
            ));
        }
        let part: Vec<Value> = l[start as usize..end as usize].to_vec();
        Ok(match &a[0] {
            Value::Bytes(_) => Value::Bytes(Rc::from(
                part.iter().map(|x| to_int64(x) as u8).collect::<Vec<u8>>(),
            )),
            // reflect's Slice keeps the slice type.
            Value::List(l) => Value::typed_list(l.elem, part),
            _ => Value::list(part),
        })
    });
    m.insert("concat", Arity::AtLeast(0), |_, a| {
        let mut out = Vec::new();
        for l in a {
            if let Value::Nil = l {
                return Err(nil_deref());
            }
            match slice_items(l) {
                Some(items) => out.extend(items),
                None => {
                    return Err(FuncError::new(format!(
                        "Cannot concat type {} as list",
                        kind_name(l)
                    )));
                }
            }
        }
        Ok(Value::list(out))
    });
}

fn chunk(size: i64, l: &[Value]) -> Result<Value, FuncError> {
    let len = l.len() as i64;
    if size <= 0 {
        if len == 0 && size < 0 {
            // floor(-1/size)+1 = 1 chunk of a negative length.
            return Err(FuncError::new("runtime error: makeslice: len out of range"));
        }
        return Err(FuncError::new("runtime error: makeslice: len out of range"));
    }
    let chunks = if len == 0 { 0 } else { (len - 1) / size + 1 };
    let mut out = Vec::new();
    for i in 0..chunks {
        let start = (i * size) as usize;
        let end = ((i + 1) * size).min(len) as usize;
        out.push(Value::list(l[start..end].to_vec()));
    }
    Ok(Value::typed_list(Elem::InterfaceSlice, out))
}
