//! sprig's dict functions (dict.go). Maps are shared references: `set`, `unset`, `merge` and
//! `mergeOverwrite` change the map they are given, as in Go.

use std::collections::BTreeMap;

use super::super::function::{Arity, FuncError, FuncMap};
use super::super::value::{Elem, MapRef, Value, go_lossy};
use super::args::{self, nil_map_write, s};
use super::reflect::empty;
use super::strval::strval;

pub fn register(m: &mut FuncMap) {
    m.insert("dict", Arity::AtLeast(0), |_, a| {
        let mut d = BTreeMap::new();
        for pair in a.chunks(2) {
            let key = strval(&pair[0]);
            d.insert(key, pair.get(1).cloned().unwrap_or_else(|| s("")));
        }
        Ok(Value::map(d))
    });
    m.insert("get", Arity::Exact(2), |_, a| {
        let (d, key) = (args::map(&a[0])?, args::string(&a[1])?);
        Ok(d.and_then(|d| d.borrow().get(&*key).cloned())
            .unwrap_or_else(|| s("")))
    });
    m.insert("set", Arity::Exact(3), |_, a| {
        let (d, key) = (args::map(&a[0])?, args::string(&a[1])?);
        let d = d.ok_or_else(nil_map_write)?;
        d.borrow_mut().insert(key.to_string(), a[2].clone());
        Ok(Value::Map(d))
    });
    m.insert("unset", Arity::Exact(2), |_, a| {
        let (d, key) = (args::map(&a[0])?, args::string(&a[1])?);
        Ok(match d {
            Some(d) => {
                d.borrow_mut().remove(&*key);
                Value::Map(d)
            }
            None => Value::empty_map(),
        })
    });
    m.insert("hasKey", Arity::Exact(2), |_, a| {
        let (d, key) = (args::map(&a[0])?, args::string(&a[1])?);
        Ok(Value::Bool(
            d.is_some_and(|d| d.borrow().contains_key(&*key)),
        ))
    });
    m.insert("pluck", Arity::AtLeast(1), |_, a| {
        let key = args::string(&a[0])?;
        let mut out = Vec::new();
        for d in &a[1..] {
            if let Some(d) = args::map(d)?
                && let Some(v) = d.borrow().get(&*key)
            {
                out.push(v.clone());
            }
        }
        Ok(Value::list(out))
    });
    m.insert("keys", Arity::AtLeast(0), |_, a| {
        // Go returns map iteration order (random); sorted is one of the possible orders.
        let mut out = Vec::new();
        for d in a {
            if let Some(d) = args::map(d)? {
                out.extend(d.borrow().keys().cloned());
            }
        }
        Ok(Value::string_list(out))
    });
    m.insert("pick", Arity::AtLeast(1), |_, a| {
        let d = args::map(&a[0])?;
        let keys = a[1..]
            .iter()
            .map(args::string)
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = BTreeMap::new();
        if let Some(d) = d {
            let d = d.borrow();
            for k in keys {
                if let Some(v) = d.get(&*k) {
                    out.insert(k.to_string(), v.clone());
                }
            }
        }
        Ok(Value::map(out))
    });
    m.insert("omit", Arity::AtLeast(1), |_, a| {
        let d = args::map(&a[0])?;
        let keys = a[1..]
            .iter()
            .map(args::string)
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = BTreeMap::new();
        if let Some(d) = d {
            for (k, v) in d.borrow().iter() {
                if !keys.iter().any(|o| **o == **k) {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        Ok(Value::map(out))
    });
    for (name, overwrite) in [
        ("merge", false),
        ("mustMerge", false),
        ("mergeOverwrite", true),
        ("mustMergeOverwrite", true),
    ] {
        m.insert(name, Arity::AtLeast(1), move |_, a| {
            let mut dst = args::map(&a[0])?;
            for src in &a[1..] {
                let src = args::map(src)?;
                if let Some(src) = src {
                    let d = dst.get_or_insert_with(|| match Value::empty_map() {
                        Value::Map(m) => m,
                        _ => unreachable!(),
                    });
                    merge_into(d, &src, overwrite);
                }
            }
            Ok(match dst {
                Some(d) => Value::Map(d),
                None => Value::empty_map(),
            })
        });
    }
    m.insert("values", Arity::Exact(1), |_, a| {
        let d = args::map(&a[0])?;
        Ok(Value::list(
            d.map(|d| d.borrow().values().cloned().collect())
                .unwrap_or_default(),
        ))
    });
    for name in ["deepCopy", "mustDeepCopy"] {
        m.insert(name, Arity::Exact(1), |_, a| match &a[0] {
            Value::Nil => Err(FuncError::new(
                "reflect: call of reflect.Value.Type on zero Value",
            )),
            v => Ok(deep_copy(v)),
        });
    }
    m.insert("dig", Arity::AtLeast(0), |_, a| dig(a));
}

/// mergo's `deepMerge` for `map[string]interface{}` (sprig's `merge`: `mergo.Merge`,
/// `mergeOverwrite`: `mergo.MergeWithOverwrite`).
pub fn merge_into(dst: &MapRef, src: &MapRef, overwrite: bool) {
    // Snapshot: dst and src may be the same map.
    let entries: Vec<(String, Value)> = src
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let src_empty = entries.is_empty();
    for (key, sv) in entries {
        let dv = dst.borrow().get(&key).cloned();
        if let Value::Nil = sv {
            if overwrite {
                dst.borrow_mut().insert(key, Value::Nil);
            }
            continue;
        }
        match &sv {
            Value::Map(sm) => {
                if let Some(Value::Map(dm)) = &dv {
                    merge_into(dm, sm, overwrite);
                }
            }
            Value::List(_) | Value::Bytes(_) => {
                let dst_empty = dst.borrow().is_empty();
                let keep = match &dv {
                    None | Some(Value::Nil) => Value::list(Vec::new()),
                    Some(v) => v.clone(),
                };
                let new = if !src_empty && (overwrite || dst_empty) {
                    sv.clone()
                } else {
                    keep
                };
                dst.borrow_mut().insert(key.clone(), new);
            }
            _ => {}
        }
        // dstElement's emptiness is judged after the recursion (maps are references).
        let dv_now_empty = match &dv {
            None => true,
            Some(Value::Map(dm)) => dm.borrow().is_empty(),
            Some(v) => empty(v),
        };
        if dv.is_some() && !dv_now_empty {
            if matches!(sv, Value::List(_) | Value::Bytes(_)) {
                continue;
            }
            if matches!(sv, Value::Map(_)) && matches!(dv, Some(Value::Map(_))) {
                continue;
            }
        }
        if overwrite || dv.is_none() || dv_now_empty {
            dst.borrow_mut().insert(key, sv);
        }
    }
}

/// copystructure's `Copy`: maps and lists are copied all the way down.
/// Shared lists and maps are copied each time they occur: the copies count against the render
/// budget, and once it is exceeded (the render fails) the rest is not copied.
pub fn deep_copy(v: &Value) -> Value {
    let bytes = match v {
        Value::List(items) => items.len() as u64 * crate::budget::LIST_ITEM_BYTES,
        Value::Map(m) => m.borrow().len() as u64 * crate::budget::MAP_ENTRY_BYTES,
        _ => 0,
    };
    if bytes > 0 && crate::budget::alloc(bytes).is_err() {
        return Value::Nil;
    }
    match v {
        Value::List(items) => Value::typed_list(items.elem, items.iter().map(deep_copy).collect()),
        Value::Map(m) => Value::typed_map(
            m.elem,
            m.borrow()
                .iter()
                .map(|(k, v)| (k.clone(), deep_copy(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn conversion_panic(v: &Value, want: &str) -> FuncError {
    let got = match v {
        Value::Nil => "nil".to_string(),
        other => other.type_name().to_string(),
    };
    FuncError::new(format!(
        "interface conversion: interface {{}} is {got}, not {want}"
    ))
}

fn dig(ps: &[Value]) -> Result<Value, FuncError> {
    if ps.len() < 3 {
        return Err(FuncError::new("dig needs at least three arguments"));
    }
    let dict = match &ps[ps.len() - 1] {
        Value::Map(m) if m.elem == Elem::Interface => m.clone(),
        other => return Err(conversion_panic(other, "map[string]interface {}")),
    };
    let default = ps[ps.len() - 2].clone();
    let mut keys = Vec::new();
    for k in &ps[..ps.len() - 2] {
        match k {
            Value::String(k) => keys.push(k.clone()),
            Value::ByteString(b) => keys.push(go_lossy(b).into()),
            other => return Err(conversion_panic(other, "string")),
        }
    }
    let mut current = dict;
    for (i, k) in keys.iter().enumerate() {
        let step = match current.borrow().get(&**k) {
            None => return Ok(default),
            Some(v) => v.clone(),
        };
        if i == keys.len() - 1 {
            return Ok(step);
        }
        current = match step {
            Value::Map(m) if m.elem == Elem::Interface => m,
            other => return Err(conversion_panic(&other, "map[string]interface {}")),
        };
    }
    Ok(default)
}
