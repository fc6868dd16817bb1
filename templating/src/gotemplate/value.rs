//! Values as Go's `text/template` sees them: the dynamic types that JSON-decoded data, template
//! literals and sprig functions produce.
//!
//! Maps are reference types, as in Go: `set` and `merge` mutate a map that other values share.
//! Lists are immutable once built (sprig's list functions return new lists), so they are shared
//! with `Rc` without interior mutability.
//!
//! Slices and maps carry their Go element type: JSON data and most functions make
//! `[]interface{}` and `map[string]interface{}`, but some sprig functions return `[]string`,
//! `[]int`, `[][]interface{}` or `map[string]string`. The element type decides the type name
//! (`typeOf`, error messages), whether elements are seen through an interface (range, index) and
//! what a missing key reads as; everything else (printing, JSON, `len`, reflection-based sprig
//! functions) treats all slices alike, through [`GoSlice`]'s `Deref` to its items.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ops::Deref;
use std::rc::Rc;

use super::funcs::dates::Time;
use crate::semver::Version;

/// The element type of a Go slice or map value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Elem {
    /// `interface{}`: elements keep their dynamic type (JSON data, `list`, `dict`...).
    #[default]
    Interface,
    /// `string` (`splitList`, `keys`, `toStrings`, `sortAlpha`, `split`...).
    String,
    /// `int` (`until`, `untilStep`).
    Int,
    /// `[]interface{}` (`chunk`).
    InterfaceSlice,
    /// `map[string]interface{}` (Landscaper's `getResources`).
    Map,
    /// Not a collection: a Go struct of the named type with string fields, held as a map from
    /// field name to value (field order is the names' order). Only sprig's `certificate`
    /// (`Cert`, `Key`) is one. It prints as Go prints a struct, `typeOf` and `kindOf` name it,
    /// and parameters of map type do not accept it.
    Struct(&'static str),
    /// Helm's `.Files` (`engine.files`, a `map[string][]byte` with methods `Get`, `GetBytes`,
    /// `Glob`, `Lines`, `AsConfig`, `AsSecrets`): values are [`Value::Bytes`].
    Files,
    /// Helm's `.Capabilities.APIVersions` (`chartutil.VersionSet`, a `[]string` with `Has`).
    VersionSet,
}

/// A Go slice: its element type and items.
#[derive(Debug, Clone, Default)]
pub struct GoSlice {
    pub elem: Elem,
    pub items: Vec<Value>,
}

impl Deref for GoSlice {
    type Target = Vec<Value>;

    fn deref(&self) -> &Vec<Value> {
        &self.items
    }
}

impl GoSlice {
    /// Go's name of the slice type.
    pub fn type_name(&self) -> &'static str {
        match self.elem {
            Elem::Interface => "[]interface {}",
            Elem::String => "[]string",
            Elem::Int => "[]int",
            Elem::InterfaceSlice => "[][]interface {}",
            Elem::Map => "[]map[string]interface {}",
            Elem::Struct(name) => name,
            Elem::VersionSet => "chartutil.VersionSet",
            Elem::Files => "engine.files",
        }
    }
}

/// A Go map with string keys: its element type and entries (shared and mutable, as Go maps
/// are references).
#[derive(Debug, Default)]
pub struct GoMap {
    pub elem: Elem,
    entries: RefCell<BTreeMap<String, Value>>,
    /// Entries computed on first access ([`lazy_map`]): work a template may never look at
    /// (sprig's `genCA` makes an RSA key that many charts' templates then leave unused).
    lazy: Option<Box<LazyEntries>>,
}

/// The computation of a lazy map's entries, run once, by the first access.
pub struct LazyEntries(Cell<Option<FillEntries>>);

/// What computes a lazy map's entries.
type FillEntries = Box<dyn FnOnce() -> BTreeMap<String, Value>>;

impl std::fmt::Debug for LazyEntries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LazyEntries")
    }
}

impl Deref for GoMap {
    type Target = RefCell<BTreeMap<String, Value>>;

    /// Every access to the entries goes through here, so a lazy map is filled before anyone
    /// can see (or borrow) its entries.
    fn deref(&self) -> &RefCell<BTreeMap<String, Value>> {
        if let Some(lazy) = &self.lazy
            && let Some(fill) = lazy.0.take()
        {
            *self.entries.borrow_mut() = fill();
        }
        &self.entries
    }
}

impl GoMap {
    /// Whether this is a [`lazy_map`] whose entries nobody has looked at yet (looking at them,
    /// through `Deref`, computes them).
    pub fn is_pending(&self) -> bool {
        self.lazy.as_ref().is_some_and(|l| {
            let fill = l.0.take();
            let pending = fill.is_some();
            l.0.set(fill);
            pending
        })
    }

    /// Go's name of the map type.
    pub fn type_name(&self) -> &'static str {
        match self.elem {
            Elem::String => "map[string]string",
            Elem::Struct(name) => name,
            Elem::Files => "engine.files",
            _ => "map[string]interface {}",
        }
    }

    /// What reading a missing key gives with `missingkey=zero`: the element type's zero value.
    pub fn zero_elem(&self) -> Value {
        match self.elem {
            Elem::String => Value::string(""),
            Elem::Files => Value::Bytes(Rc::from(&[][..])),
            _ => Value::Nil,
        }
    }
}

/// A Go map with string keys, shared by reference.
pub type MapRef = Rc<GoMap>;
/// A Go slice, shared.
pub type ListRef = Rc<GoSlice>;

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
    /// Go `uint64`: what `*semver.Version`'s `Major`, `Minor` and `Patch` return.
    Uint64(u64),
    /// Go `uint8` (a byte): what `index` of a string or a `[]byte` yields.
    Uint8(u8),
    /// Go `float64`: every JSON number, float literals, `float64`, `addf`, ...
    Float(f64),
    /// A Go `string` of valid UTF-8 (nearly all of them).
    String(Rc<str>),
    /// A Go `string` whose bytes are not valid UTF-8 (Go strings are byte sequences): `b64dec`
    /// of binary data, `trunc` or `substr` through a multi-byte character. Build strings from
    /// bytes with [`Value::from_bytes`], which keeps valid UTF-8 a [`Value::String`].
    ByteString(Rc<[u8]>),
    /// Go `[]byte` (what `b64dec` works on internally; printed as the bytes' string in `%s`).
    Bytes(Rc<[u8]>),
    /// A Go slice: `[]interface{}` (JSON arrays, `list`...) or a typed one (`[]string`...).
    List(ListRef),
    /// A Go map: `map[string]interface{}` (JSON objects, `dict`...) or `map[string]string`.
    Map(MapRef),
    /// Go `time.Time` (`toDate`, `now`, `dateModify`...).
    Time(Rc<Time>),
    /// `*semver.Version` (sprig's `semver`).
    Semver(Rc<Version>),
}

impl Value {
    pub fn string(s: impl Into<Rc<str>>) -> Value {
        Value::String(s.into())
    }

    /// A Go string of arbitrary bytes: a [`Value::String`] when they are valid UTF-8, else a
    /// [`Value::ByteString`].
    pub fn from_bytes(bytes: Vec<u8>) -> Value {
        match String::from_utf8(bytes) {
            Ok(s) => Value::string(s),
            Err(e) => Value::ByteString(e.into_bytes().into()),
        }
    }

    /// The bytes of a Go string value (either representation).
    pub fn string_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::String(s) => Some(s.as_bytes()),
            Value::ByteString(b) => Some(b),
            _ => None,
        }
    }

    /// A `[]interface{}`.
    pub fn list(items: Vec<Value>) -> Value {
        Value::typed_list(Elem::Interface, items)
    }

    /// A slice of the given element type (the items must be of that type).
    pub fn typed_list(elem: Elem, items: Vec<Value>) -> Value {
        Value::List(Rc::new(GoSlice { elem, items }))
    }

    /// A `[]string`.
    pub fn string_list(items: impl IntoIterator<Item = impl Into<Rc<str>>>) -> Value {
        Value::typed_list(
            Elem::String,
            items.into_iter().map(|s| Value::String(s.into())).collect(),
        )
    }

    /// A `map[string]interface{}`.
    pub fn map(entries: BTreeMap<String, Value>) -> Value {
        Value::typed_map(Elem::Interface, entries)
    }

    /// A map of the given element type (the values must be of that type).
    pub fn typed_map(elem: Elem, entries: BTreeMap<String, Value>) -> Value {
        Value::Map(new_map(elem, entries))
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
            Value::Uint64(_) => "uint64",
            Value::Uint8(_) => "uint8",
            Value::Float(_) => "float64",
            Value::String(_) | Value::ByteString(_) => "string",
            Value::Bytes(_) => "[]uint8",
            Value::List(l) => l.type_name(),
            Value::Map(m) => m.type_name(),
            Value::Time(_) => "time.Time",
            Value::Semver(_) => "*semver.Version",
        }
    }

    /// Go's `reflect.Kind` name of the value (`kindOf`, sprig's error messages).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Nil => "invalid",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Int64(_) => "int64",
            Value::Uint64(_) => "uint64",
            Value::Uint8(_) => "uint8",
            Value::Float(_) => "float64",
            Value::String(_) | Value::ByteString(_) => "string",
            Value::Bytes(_) | Value::List(_) => "slice",
            Value::Map(m) if matches!(m.elem, Elem::Struct(_)) => "struct",
            Value::Map(_) => "map",
            Value::Time(_) => "struct",
            Value::Semver(_) => "ptr",
        }
    }

    /// Whether Go's `interface{}` element type: values read from the collection are seen through
    /// an interface (a nil element is a nil interface, error messages name `interface {}`).
    pub fn elements_are_interfaces(&self) -> bool {
        match self {
            Value::List(l) => l.elem == Elem::Interface,
            Value::Map(m) => m.elem == Elem::Interface,
            _ => false,
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
    /// hand rendered data back). Integers stay integers; non-finite floats are an error in Go;
    /// times and versions marshal as their text forms.
    pub fn to_json(&self) -> Result<serde_json::Value, String> {
        Ok(match self {
            Value::Nil => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) | Value::Int64(i) => serde_json::Value::from(*i),
            Value::Uint64(u) => serde_json::Value::from(*u),
            Value::Uint8(u) => serde_json::Value::from(*u),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .ok_or_else(|| format!("json: unsupported value: {f}"))?,
            Value::String(s) => serde_json::Value::String(s.to_string()),
            // encoding/json replaces invalid UTF-8 with U+FFFD.
            Value::ByteString(b) => serde_json::Value::String(go_lossy(b)),
            // encoding/json writes []byte as base64.
            Value::Bytes(b) => serde_json::Value::String(base64_std(b)),
            Value::List(items) => {
                // Shared lists and maps would be copied each time they occur.
                crate::budget::alloc(items.len() as u64 * crate::budget::LIST_ITEM_BYTES)
                    .map_err(|e| e.to_string())?;
                serde_json::Value::Array(
                    items.iter().map(Value::to_json).collect::<Result<_, _>>()?,
                )
            }
            Value::Map(map) => serde_json::Value::Object(
                crate::budget::alloc(map.borrow().len() as u64 * crate::budget::MAP_ENTRY_BYTES)
                    .map_err(|e| e.to_string())
                    .and_then(|()| {
                        map.borrow()
                            .iter()
                            .map(|(k, v)| Ok((k.clone(), v.to_json()?)))
                            .collect::<Result<serde_json::Map<_, _>, String>>()
                    })?,
            ),
            Value::Time(t) => serde_json::Value::String(t.marshal_json()?),
            Value::Semver(v) => serde_json::Value::String(v.to_string()),
        })
    }

    /// Go's notion of truth for `if`, `with`, `and`, `or`, `not`: the zero value of its type,
    /// nil and empty collections are false; structs and non-nil pointers are true.
    pub fn is_truthy(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::Int64(i) => *i != 0,
            Value::Uint64(u) => *u != 0,
            Value::Uint8(u) => *u != 0,
            Value::Float(f) => *f != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::ByteString(b) | Value::Bytes(b) => !b.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.borrow().is_empty(),
            Value::Time(_) | Value::Semver(_) => true,
        }
    }
}

/// Go's reading of a string's bytes as text, as `for range` and the `strings` and
/// `encoding/json` functions do: every byte that is not part of valid UTF-8 is one U+FFFD.
pub fn go_lossy(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for _ in chunk.invalid() {
            out.push('\u{FFFD}');
        }
    }
    out
}

/// A new shared map.
pub fn new_map(elem: Elem, entries: BTreeMap<String, Value>) -> MapRef {
    Rc::new(GoMap {
        elem,
        entries: RefCell::new(entries),
        lazy: None,
    })
}

/// A new shared map whose entries `fill` computes when they are first read or written (the
/// same map to every observer, computed at most once; never if nobody looks).
pub fn lazy_map(elem: Elem, fill: impl FnOnce() -> BTreeMap<String, Value> + 'static) -> MapRef {
    Rc::new(GoMap {
        elem,
        entries: RefCell::new(BTreeMap::new()),
        lazy: Some(Box::new(LazyEntries(Cell::new(Some(Box::new(fill)))))),
    })
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
    fn lazy_maps_fill_once_on_first_access() {
        let runs = Rc::new(Cell::new(0));
        let counter = runs.clone();
        let m = lazy_map(Elem::Struct("x.T"), move || {
            counter.set(counter.get() + 1);
            BTreeMap::from([("A".to_string(), Value::Int(1))])
        });
        let shared = Value::Map(m.clone());
        assert_eq!(runs.get(), 0, "nothing computed before an access");
        assert_eq!(m.elem, Elem::Struct("x.T"));
        assert!(m.is_pending());
        assert!(matches!(m.borrow().get("A"), Some(Value::Int(1))));
        m.borrow_mut().insert("B".into(), Value::Int(2));
        let Value::Map(again) = &shared else { panic!() };
        assert_eq!(again.borrow().len(), 2);
        assert_eq!(runs.get(), 1);
        assert!(!m.is_pending());
    }

    #[test]
    fn truthiness_follows_go() {
        assert!(!Value::Nil.is_truthy());
        assert!(!Value::Int(0).is_truthy());
        assert!(!Value::string("").is_truthy());
        assert!(!Value::empty_map().is_truthy());
        assert!(Value::list(vec![Value::Nil]).is_truthy());
        assert!(Value::Time(Rc::new(Time::zero())).is_truthy());
    }

    #[test]
    fn typed_collections_name_their_types() {
        assert_eq!(Value::string_list(["a"]).type_name(), "[]string");
        assert_eq!(Value::list(vec![]).type_name(), "[]interface {}");
        assert_eq!(
            Value::typed_list(Elem::Int, vec![Value::Int(1)]).type_name(),
            "[]int"
        );
        assert_eq!(
            Value::typed_map(Elem::String, BTreeMap::new()).type_name(),
            "map[string]string"
        );
        assert!(Value::list(vec![]).elements_are_interfaces());
        assert!(!Value::string_list(["a"]).elements_are_interfaces());
    }

    #[test]
    fn strings_from_bytes_stay_utf8_when_they_can() {
        assert!(
            matches!(Value::from_bytes(b"h\xc3\xa9".to_vec()), Value::String(s) if &*s == "hé")
        );
        let raw = Value::from_bytes(b"h\xc3".to_vec());
        assert!(matches!(&raw, Value::ByteString(b) if &**b == b"h\xc3"));
        assert_eq!(raw.type_name(), "string");
        assert_eq!(raw.string_bytes(), Some(&b"h\xc3"[..]));
    }
}
