//! Go's builtin template functions (funcs.go): `and or not len index slice print printf println
//! eq ne lt le gt ge html js urlquery call`.
//!
//! The executor runs them itself, with Go's reflection-level semantics (short-circuit `and`/`or`,
//! typed `printf` format, nil-interface vs. missing-value distinctions in error texts). The
//! [`builtins`] FuncMap offers the same functions as ordinary [`Function`]s, for callers that
//! want them by value; the executor recognises those entries and still runs its own versions.

use std::cell::RefCell;
use std::rc::Rc;

use super::function::{Arity, FuncDef, FuncError, FuncMap, GoType};
use super::print;
use super::value::{Elem, Value};

/// A value as Go's `reflect.Value` carries it through execution: `iface` marks a value whose
/// static type is `interface{}` (map elements, range elements), which matters for the type Go
/// names in errors and for nil: `Nil` with `iface` is a nil interface, `Nil` without is an
/// invalid (missing) value.
#[derive(Clone, Debug)]
pub(crate) struct Rv {
    pub v: Value,
    pub iface: bool,
}

impl Rv {
    pub const INVALID: Rv = Rv {
        v: Value::Nil,
        iface: false,
    };

    pub fn concrete(v: Value) -> Rv {
        Rv { v, iface: false }
    }

    pub fn iface(v: Value) -> Rv {
        Rv { v, iface: true }
    }

    pub fn is_invalid(&self) -> bool {
        !self.iface && matches!(self.v, Value::Nil)
    }

    /// Go's `indirectInterface`: the concrete value, or invalid for a nil interface.
    pub fn indirect(&self) -> Rv {
        Rv::concrete(self.v.clone())
    }

    /// The Go type of the reflect.Value (before indirection).
    pub fn type_name(&self) -> &'static str {
        if self.iface {
            "interface {}"
        } else {
            self.v.type_name()
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Builtin {
    And,
    Or,
    Call,
    Html,
    Js,
    Urlquery,
    Index,
    Slice,
    Len,
    Not,
    Print,
    Printf,
    Println,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A parameter's Go type, as far as argument evaluation cares.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Param {
    /// `interface{}`
    Any,
    /// `reflect.Value`
    Refl,
    /// A concrete Go type (`string` for printf's format, declared types of user functions).
    Go(GoType),
}

pub(crate) struct Signature {
    pub fixed: &'static [Param],
    pub variadic: Option<Param>,
}

const NAMES: [(&str, Builtin); 19] = [
    ("and", Builtin::And),
    ("or", Builtin::Or),
    ("call", Builtin::Call),
    ("html", Builtin::Html),
    ("js", Builtin::Js),
    ("urlquery", Builtin::Urlquery),
    ("index", Builtin::Index),
    ("slice", Builtin::Slice),
    ("len", Builtin::Len),
    ("not", Builtin::Not),
    ("print", Builtin::Print),
    ("printf", Builtin::Printf),
    ("println", Builtin::Println),
    ("eq", Builtin::Eq),
    ("ne", Builtin::Ne),
    ("lt", Builtin::Lt),
    ("le", Builtin::Le),
    ("gt", Builtin::Gt),
    ("ge", Builtin::Ge),
];

pub(crate) fn builtin_kind(name: &str) -> Option<Builtin> {
    NAMES.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}

impl Builtin {
    pub fn signature(self) -> Signature {
        use Param::*;
        match self {
            Builtin::And | Builtin::Or | Builtin::Call | Builtin::Index | Builtin::Slice => {
                Signature {
                    fixed: &[Refl],
                    variadic: Some(Refl),
                }
            }
            Builtin::Eq => Signature {
                fixed: &[Refl],
                variadic: Some(Refl),
            },
            Builtin::Html | Builtin::Js | Builtin::Urlquery | Builtin::Print | Builtin::Println => {
                Signature {
                    fixed: &[],
                    variadic: Some(Any),
                }
            }
            Builtin::Printf => Signature {
                fixed: &[Go(GoType::String)],
                variadic: Some(Any),
            },
            Builtin::Len | Builtin::Not => Signature {
                fixed: &[Refl],
                variadic: None,
            },
            Builtin::Ne | Builtin::Lt | Builtin::Le | Builtin::Gt | Builtin::Ge => Signature {
                fixed: &[Refl, Refl],
                variadic: None,
            },
        }
    }

    /// Runs the builtin on evaluated arguments (`and`/`or` short-circuit in the executor; this
    /// is their plain form). Errors are the function's message, without "error calling".
    pub fn call(self, args: &[Rv]) -> Result<Rv, String> {
        let b = |x: bool| Ok(Rv::concrete(Value::Bool(x)));
        match self {
            Builtin::And => {
                let mut v = args[0].clone();
                for a in args {
                    v = a.clone();
                    if !truth(&v) {
                        break;
                    }
                }
                Ok(v)
            }
            Builtin::Or => {
                let mut v = args[0].clone();
                for a in args {
                    v = a.clone();
                    if truth(&v) {
                        break;
                    }
                }
                Ok(v)
            }
            Builtin::Not => b(!truth(&args[0])),
            Builtin::Len => length(&args[0]).map(|n| Rv::concrete(Value::Int(n as i64))),
            Builtin::Index => index(&args[0], &args[1..]),
            Builtin::Slice => slice(&args[0], &args[1..]),
            Builtin::Call => {
                let f = args[0].indirect();
                if f.is_invalid() {
                    Err("call of nil".to_string())
                } else {
                    Err(format!("non-function of type {}", f.type_name()))
                }
            }
            Builtin::Print => Ok(str_rv(print::sprint(&values(args)))),
            Builtin::Println => Ok(str_rv(print::sprintln(&values(args)))),
            Builtin::Printf => {
                let Value::String(f) = &args[0].v else {
                    return Err("wrong type for value; expected string".into());
                };
                Ok(str_rv(print::sprintf(f, &values(&args[1..]))))
            }
            Builtin::Html => Ok(str_rv(html_escape(&eval_args(args)))),
            Builtin::Js => Ok(str_rv(js_escape(&eval_args(args)))),
            Builtin::Urlquery => Ok(str_rv(match args {
                // QueryEscape works on the bytes of a string.
                [
                    Rv {
                        v: Value::ByteString(b),
                        ..
                    },
                ] => url_query_escape_bytes(b),
                _ => url_query_escape(&eval_args(args)),
            })),
            Builtin::Eq => eq(&args[0], &args[1..]).map(|x| Rv::concrete(Value::Bool(x))),
            Builtin::Ne => eq(&args[0], &args[1..2]).map(|x| Rv::concrete(Value::Bool(!x))),
            Builtin::Lt => lt(&args[0], &args[1]).map(|x| Rv::concrete(Value::Bool(x))),
            Builtin::Le => le(&args[0], &args[1]).map(|x| Rv::concrete(Value::Bool(x))),
            Builtin::Gt => le(&args[0], &args[1]).map(|x| Rv::concrete(Value::Bool(!x))),
            Builtin::Ge => lt(&args[0], &args[1]).map(|x| Rv::concrete(Value::Bool(!x))),
        }
    }
}

fn str_rv(s: String) -> Rv {
    Rv::concrete(Value::string(s))
}

fn values(args: &[Rv]) -> Vec<Value> {
    args.iter().map(|a| a.v.clone()).collect()
}

/// Go's `truth`: `isTrue(indirectInterface(v))`.
pub(crate) fn truth(v: &Rv) -> bool {
    v.v.is_truthy()
}

fn length(item: &Rv) -> Result<usize, String> {
    if item.iface && matches!(item.v, Value::Nil) {
        return Err("len of nil pointer".into());
    }
    match &item.v {
        Value::Nil => Err("reflect: call of reflect.Value.Type on zero Value".into()),
        Value::String(s) => Ok(s.len()),
        Value::ByteString(b) | Value::Bytes(b) => Ok(b.len()),
        Value::List(l) => Ok(l.len()),
        // A Go struct (sprig's certificate) has no length.
        Value::Map(m) if !matches!(m.elem, Elem::Struct(_)) => Ok(m.borrow().len()),
        v => Err(format!("len of type {}", v.type_name())),
    }
}

fn index_arg(index: &Rv, cap: usize) -> Result<usize, String> {
    let x = match &index.v {
        _ if index.iface => {
            return Err("cannot index slice/array with type interface {}".into());
        }
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Uint64(u) => i64::try_from(*u).unwrap_or(i64::MAX),
        Value::Uint8(u) => i64::from(*u),
        Value::Nil => return Err("cannot index slice/array with nil".into()),
        v => {
            return Err(format!(
                "cannot index slice/array with type {}",
                v.type_name()
            ));
        }
    };
    if x < 0 || x as u64 > cap as u64 {
        return Err(format!("index out of range: {x}"));
    }
    Ok(x as usize)
}

fn index(item: &Rv, indexes: &[Rv]) -> Result<Rv, String> {
    let mut item = item.indirect();
    if item.is_invalid() {
        return Err("index of untyped nil".into());
    }
    for i in indexes {
        let index = i.indirect();
        if item.iface && matches!(item.v, Value::Nil) {
            return Err("index of nil pointer".into());
        }
        item = match &item.v {
            Value::List(l) => {
                let x = index_arg(&index, l.len())?;
                match l.get(x) {
                    Some(v) => Rv {
                        v: v.clone(),
                        iface: item.v.elements_are_interfaces(),
                    },
                    None => return Err("reflect: slice index out of range".into()),
                }
            }
            Value::Bytes(b) => {
                let x = index_arg(&index, b.len())?;
                match b.get(x) {
                    Some(v) => Rv::concrete(Value::Uint8(*v)),
                    None => return Err("reflect: slice index out of range".into()),
                }
            }
            Value::String(_) | Value::ByteString(_) => {
                let s = item.v.string_bytes().unwrap_or_default();
                let x = index_arg(&index, s.len())?;
                match s.get(x) {
                    Some(v) => Rv::concrete(Value::Uint8(*v)),
                    None => return Err("reflect: string index out of range".into()),
                }
            }
            Value::Map(m) if !matches!(m.elem, Elem::Struct(_)) => {
                let key = match &index.v {
                    Value::String(k) => k,
                    Value::Nil => return Err("value is nil; should be of type string".into()),
                    v => {
                        return Err(format!(
                            "value has type {}; should be string",
                            v.type_name()
                        ));
                    }
                };
                let iface = m.elem == Elem::Interface;
                match m.borrow().get(&**key) {
                    Some(v) => Rv {
                        v: v.clone(),
                        iface,
                    },
                    None => Rv {
                        v: m.zero_elem(),
                        iface,
                    },
                }
            }
            v => return Err(format!("can't index item of type {}", v.type_name())),
        };
    }
    Ok(item)
}

fn slice(item: &Rv, indexes: &[Rv]) -> Result<Rv, String> {
    let item = item.indirect();
    if item.is_invalid() {
        return Err("slice of untyped nil".into());
    }
    if indexes.len() > 3 {
        return Err(format!("too many slice indexes: {}", indexes.len()));
    }
    let len = match &item.v {
        Value::String(_) | Value::ByteString(_) => {
            if indexes.len() == 3 {
                return Err("cannot 3-index slice a string".into());
            }
            item.v.string_bytes().map_or(0, <[u8]>::len)
        }
        Value::List(l) => l.len(),
        Value::Bytes(b) => b.len(),
        v => return Err(format!("can't slice item of type {}", v.type_name())),
    };
    let mut idx = [0usize, len, 0];
    for (i, index) in indexes.iter().enumerate() {
        idx[i] = index_arg(index, len)?;
    }
    if idx[0] > idx[1] {
        return Err(format!("invalid slice index: {} > {}", idx[0], idx[1]));
    }
    if indexes.len() == 3 && idx[1] > idx[2] {
        return Err(format!("invalid slice index: {} > {}", idx[1], idx[2]));
    }
    let (a, z) = (idx[0], idx[1]);
    Ok(Rv::concrete(match &item.v {
        Value::String(_) | Value::ByteString(_) => {
            Value::from_bytes(item.v.string_bytes().unwrap_or_default()[a..z].to_vec())
        }
        Value::List(l) => Value::typed_list(l.elem, l[a..z].to_vec()),
        Value::Bytes(b) => Value::Bytes(Rc::from(&b[a..z])),
        _ => Value::Nil,
    }))
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Kind {
    Invalid,
    Bool,
    Int,
    Uint,
    Float,
    String,
}

fn basic_kind(v: &Value) -> Kind {
    match v {
        Value::Bool(_) => Kind::Bool,
        Value::Int(_) | Value::Int64(_) => Kind::Int,
        Value::Uint64(_) | Value::Uint8(_) => Kind::Uint,
        Value::Float(_) => Kind::Float,
        Value::String(_) | Value::ByteString(_) => Kind::String,
        _ => Kind::Invalid,
    }
}

/// Go's `compare(int, uint)` special cases: `Some(ordering)` of a signed and an unsigned value.
fn int_uint_cmp(v1: &Value, v2: &Value) -> Option<std::cmp::Ordering> {
    match (&widen(v1), &widen(v2)) {
        (Value::Int(a) | Value::Int64(a), Value::Uint64(b)) => {
            Some(i128::from(*a).cmp(&i128::from(*b)))
        }
        (Value::Uint64(a), Value::Int(b) | Value::Int64(b)) => {
            Some(i128::from(*a).cmp(&i128::from(*b)))
        }
        _ => None,
    }
}

/// Unsigned values compared as `uint64`, as Go's `basicKind` comparison does.
fn widen(v: &Value) -> Value {
    match v {
        Value::Uint8(u) => Value::Uint64(u64::from(*u)),
        other => other.clone(),
    }
}

const ERR_BAD_COMPARISON_TYPE: &str = "invalid type for comparison";
const ERR_BAD_COMPARISON: &str = "incompatible types for comparison";

fn eq(arg1: &Rv, arg2: &[Rv]) -> Result<bool, String> {
    let v1 = &widen(&arg1.v);
    if arg2.is_empty() {
        return Err("missing argument for comparison".into());
    }
    let k1 = basic_kind(v1);
    for arg in arg2 {
        let v2 = &widen(&arg.v);
        let k2 = basic_kind(v2);
        let is_nil = |v: &Value| matches!(v, Value::Nil);
        let truth = if k1 != k2 {
            if let Some(o) = int_uint_cmp(v1, v2) {
                o.is_eq()
            } else if !is_nil(v1) && !is_nil(v2) {
                return Err(ERR_BAD_COMPARISON.into());
            } else {
                false
            }
        } else {
            match (v1, v2) {
                (Value::Bool(a), Value::Bool(b)) => a == b,
                (Value::Float(a), Value::Float(b)) => a == b,
                (Value::Int(a) | Value::Int64(a), Value::Int(b) | Value::Int64(b)) => a == b,
                (Value::Uint64(a), Value::Uint64(b)) => a == b,
                (Value::String(a), Value::String(b)) => a == b,
                (a, b) if k1 == Kind::String => a.string_bytes() == b.string_bytes(),
                // Comparable non-basic types: structs by value, pointers by address.
                (Value::Time(a), Value::Time(b)) => a == b,
                (Value::Semver(a), Value::Semver(b)) => Rc::ptr_eq(a, b),
                // Structs of the same type (sprig's certificate: string fields) by value.
                (Value::Map(a), Value::Map(b))
                    if matches!(a.elem, Elem::Struct(_)) && a.elem == b.elem =>
                {
                    let (a, b) = (a.borrow(), b.borrow());
                    a.len() == b.len()
                        && a.iter()
                            .zip(b.iter())
                            .all(|((_, x), (_, y))| x.string_bytes() == y.string_bytes())
                }
                _ => {
                    // Non-basic kinds: maps, slices, nil.
                    if !is_nil(v1) && !is_nil(v2) && reflect_kind(v1) != reflect_kind(v2) {
                        let s = |v: &Value| print::sprintf("%s", std::slice::from_ref(v));
                        return Err(format!(
                            "non-comparable types {}: {}, {}: {}",
                            s(v1),
                            v1.type_name(),
                            v2.type_name(),
                            print::format_value(v2)
                        ));
                    }
                    if is_nil(v1) || is_nil(v2) {
                        is_nil(v1) == is_nil(v2)
                    } else {
                        // Maps and slices are never comparable.
                        return Err(format!(
                            "non-comparable type {}: {}",
                            print::sprintf("%s", std::slice::from_ref(v2)),
                            v2.type_name()
                        ));
                    }
                }
            }
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

/// reflect.Kind of the non-basic values, for `canCompare`.
fn reflect_kind(v: &Value) -> u8 {
    match v {
        Value::List(_) | Value::Bytes(_) => 1,
        Value::Map(_) => 2,
        Value::Time(_) => 3,
        Value::Semver(_) => 4,
        _ => 0,
    }
}

fn lt(arg1: &Rv, arg2: &Rv) -> Result<bool, String> {
    let (v1, v2) = (&widen(&arg1.v), &widen(&arg2.v));
    let k1 = basic_kind(v1);
    if k1 == Kind::Invalid {
        return Err(ERR_BAD_COMPARISON_TYPE.into());
    }
    let k2 = basic_kind(v2);
    if k2 == Kind::Invalid {
        return Err(ERR_BAD_COMPARISON_TYPE.into());
    }
    if k1 != k2 {
        return match int_uint_cmp(v1, v2) {
            Some(o) => Ok(o.is_lt()),
            None => Err(ERR_BAD_COMPARISON.into()),
        };
    }
    Ok(match (v1, v2) {
        (Value::Float(a), Value::Float(b)) => a < b,
        (Value::Int(a) | Value::Int64(a), Value::Int(b) | Value::Int64(b)) => a < b,
        (Value::Uint64(a), Value::Uint64(b)) => a < b,
        (a, b) if k1 == Kind::String => a.string_bytes() < b.string_bytes(),
        _ => return Err(ERR_BAD_COMPARISON_TYPE.into()),
    })
}

fn le(arg1: &Rv, arg2: &Rv) -> Result<bool, String> {
    if lt(arg1, arg2)? {
        return Ok(true);
    }
    eq(arg1, std::slice::from_ref(arg2))
}

/// Go's `evalArgs`: one string as is, else `fmt.Sprint` with missing values as `<no value>`.
fn eval_args(args: &[Rv]) -> String {
    if let [
        Rv {
            v: Value::String(s),
            ..
        },
    ] = args
    {
        return s.to_string();
    }
    let vals: Vec<Value> = args
        .iter()
        .map(|a| match a.v {
            Value::Nil => Value::string("<no value>"),
            ref v => v.clone(),
        })
        .collect();
    print::sprint(&vals)
}

/// Go's `template.HTMLEscapeString`.
pub fn html_escape(s: &str) -> String {
    if !s.contains(['\'', '"', '&', '<', '>', '\0']) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '\0' => out.push('\u{FFFD}'),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// Go's `template.JSEscapeString`.
pub fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => {
                out.push_str(&format!("\\u00{:02X}", c as u32));
            }
            c if (c as u32) < 0x80 => out.push(c),
            c if print::is_print(c) => out.push(c),
            c => out.push_str(&format!("\\u{:04X}", c as u32)),
        }
    }
    out
}

/// Go's `url.QueryEscape`.
pub fn url_query_escape(s: &str) -> String {
    url_query_escape_bytes(s.as_bytes())
}

fn url_query_escape_bytes(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for &b in s {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

thread_local! {
    static BUILTINS: RefCell<Option<FuncMap>> = const { RefCell::new(None) };
}

/// Go's builtin functions as a FuncMap (Value-level forms; `and`/`or` here evaluate all their
/// arguments). Repeated calls on one thread return the same function objects, which is how the
/// executor recognises them and runs its own reflection-faithful versions instead.
pub fn builtins() -> FuncMap {
    BUILTINS.with(|b| {
        b.borrow_mut()
            .get_or_insert_with(|| {
                let mut m = FuncMap::new();
                for (name, kind) in NAMES {
                    let sig = kind.signature();
                    let arity = if sig.variadic.is_some() {
                        Arity::AtLeast(sig.fixed.len())
                    } else {
                        Arity::Exact(sig.fixed.len())
                    };
                    m.insert(name, arity, move |_, args| {
                        let rvs: Vec<Rv> = args.iter().cloned().map(Rv::concrete).collect();
                        if kind == Builtin::Printf && !matches!(args[0], Value::String(_)) {
                            return Err(FuncError::new(format!(
                                "wrong type for value; expected string; got {}",
                                args[0].type_name()
                            )));
                        }
                        kind.call(&rvs).map(|r| r.v).map_err(FuncError::new)
                    });
                }
                m
            })
            .clone()
    })
}

/// Whether `def` is the builtin of that name from [`builtins`] (then the executor runs its own).
pub(crate) fn same_builtin(name: &str, def: &FuncDef) -> Option<Builtin> {
    let kind = builtin_kind(name)?;
    BUILTINS.with(|b| {
        let b = b.borrow();
        let ours = b.as_ref()?.get(name)?;
        let same = std::ptr::addr_eq(Rc::as_ptr(&ours.function), Rc::as_ptr(&def.function));
        same.then_some(kind)
    })
}
