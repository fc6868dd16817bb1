//! How functions plug into the Go template engine: builtins, sprig, Landscaper's and Helm's
//! functions all have this one shape.

use std::collections::HashMap;
use std::rc::Rc;

use super::value::{Elem, Value};

/// Why a function call failed. The engine wraps it as Go does:
/// `template: NAME:LINE:COL: executing "NAME" at <fname>: error calling fname: MESSAGE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuncError {
    pub message: String,
}

impl FuncError {
    pub fn new(message: impl Into<String>) -> Self {
        FuncError {
            message: message.into(),
        }
    }
}

impl From<crate::budget::BudgetExceeded> for FuncError {
    fn from(e: crate::budget::BudgetExceeded) -> Self {
        FuncError::new(e.to_string())
    }
}

impl std::fmt::Display for FuncError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What a function may ask of the engine that calls it: `include`/`template`-like execution of
/// named templates, `tpl`-like parsing of text, and the blueprint's own files. Implemented by
/// the executor; tests may implement it with fixed answers.
pub trait CallContext {
    /// Executes the named template (defined in the current template set) with `data`.
    fn execute_named(&mut self, name: &str, data: Value) -> Result<String, FuncError>;
    /// Parses `text` as a template (sharing the current set's definitions) and executes it.
    fn execute_text(&mut self, text: &str, data: Value) -> Result<String, FuncError>;
    /// Parses `text` as a template set of its own (nothing of the current set is visible) and
    /// executes it: Landscaper's `include` of a blueprint file.
    fn execute_isolated(&mut self, text: &str, data: Value) -> Result<String, FuncError> {
        self.execute_text(text, data)
    }
    /// Reads a file of the blueprint (relative path, no escape from the blueprint root).
    fn read_file(&self, path: &str) -> Result<Vec<u8>, FuncError>;
    /// Lists a directory of the blueprint: (name, is_dir) pairs, sorted by name.
    fn read_dir(&self, path: &str) -> Result<Vec<(String, bool)>, FuncError>;
}

/// A template function. Arguments arrive evaluated; a function checks their count and types
/// itself and reports mistakes as Go's reflection would (e.g. `wrong number of args for
/// add: want 2 got 1`, raised by the engine when `arity` is fixed).
pub type Function = Rc<dyn Fn(&mut dyn CallContext, &[Value]) -> Result<Value, FuncError>>;

/// A function with the argument count Go's reflection checks before calling it.
#[derive(Clone)]
pub struct FuncDef {
    pub function: Function,
    /// `Exact(n)` for a fixed signature, `AtLeast(n)` for variadic ones.
    pub arity: Arity,
    /// The Go parameter types, if declared ([`FuncMap::set_params`]); else all `interface{}`.
    pub params: Option<&'static [GoType]>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    Exact(usize),
    AtLeast(usize),
}

/// A Go parameter type, for functions that declare their signature with
/// [`FuncMap::set_params`]: the engine then converts and checks arguments as Go's reflection
/// does before the call (`expected string; found 1`, `wrong type for value; expected string;
/// got float64`, literal `1` passed as float64 `1`...), at the argument's node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoType {
    /// `interface{}`: anything, as is.
    Any,
    String,
    Int,
    Int64,
    /// `uint32` (no template value has it: only number constants convert).
    Uint32,
    Float64,
    Bool,
    /// `[]interface{}`
    List,
    /// `map[string]interface{}`
    Map,
    /// `time.Time`
    Time,
    /// `*semver.Version`
    Semver,
    /// A named struct type (sprig's `certificate`): only a value of that type is accepted (a
    /// [`Value::Map`] whose element type is [`Elem::Struct`] of the same name).
    Struct(&'static str),
}

impl GoType {
    /// Go's name of the type, as reflection errors print it.
    pub fn name(self) -> &'static str {
        match self {
            GoType::Any => "interface {}",
            GoType::String => "string",
            GoType::Int => "int",
            GoType::Int64 => "int64",
            GoType::Uint32 => "uint32",
            GoType::Float64 => "float64",
            GoType::Bool => "bool",
            GoType::List => "[]interface {}",
            GoType::Map => "map[string]interface {}",
            GoType::Time => "time.Time",
            GoType::Semver => "*semver.Version",
            GoType::Struct(name) => name,
        }
    }

    /// Whether a value of this dynamic type is assignable to a parameter of type `self`.
    pub fn accepts(self, v: &Value) -> bool {
        match (self, v) {
            (GoType::Any, _) => true,
            (GoType::String, Value::String(_) | Value::ByteString(_))
            | (GoType::Int, Value::Int(_))
            | (GoType::Int64, Value::Int64(_))
            | (GoType::Float64, Value::Float(_))
            | (GoType::Bool, Value::Bool(_))
            | (GoType::Time, Value::Time(_))
            | (GoType::Semver, Value::Semver(_)) => true,
            (GoType::Struct(name), Value::Map(m)) => m.elem == Elem::Struct(name),
            (GoType::List | GoType::Map, v) => {
                matches!(v, Value::List(_) | Value::Map(_))
                    && matches!(v, Value::List(_)) == (self == GoType::List)
                    && v.elements_are_interfaces()
            }
            _ => false,
        }
    }
}

/// FNV-1a: function names are short, and the map is looked up for every call.
#[derive(Default, Clone, Copy)]
pub(crate) struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

pub(crate) type FnvBuild = std::hash::BuildHasherDefault<Fnv>;

/// Functions by name, as Go's `template.FuncMap`.
#[derive(Clone, Default)]
pub struct FuncMap {
    functions: HashMap<&'static str, FuncDef, FnvBuild>,
}

impl FuncMap {
    pub fn new() -> Self {
        FuncMap::default()
    }

    /// Adds or replaces a function.
    pub fn insert(
        &mut self,
        name: &'static str,
        arity: Arity,
        function: impl Fn(&mut dyn CallContext, &[Value]) -> Result<Value, FuncError> + 'static,
    ) {
        self.functions.insert(
            name,
            FuncDef {
                function: Rc::new(function),
                arity,
                params: None,
            },
        );
    }

    pub fn get(&self, name: &str) -> Option<&FuncDef> {
        self.functions.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.functions.contains_key(name)
    }

    /// Adds every function of `other`, replacing same-named ones.
    pub fn extend(&mut self, other: FuncMap) {
        self.functions.extend(other.functions);
    }

    /// Declares the Go parameter types of an inserted function: one per fixed parameter, and
    /// for an `Arity::AtLeast` function one more, the type of the variadic ones (Go's
    /// `...T`). Without a declaration every parameter is `interface{}`. Re-inserting the
    /// function drops its declaration.
    pub fn set_params(&mut self, name: &'static str, params: &'static [GoType]) {
        if let Some(def) = self.functions.get_mut(name) {
            def.params = Some(params);
        }
    }

    /// The declared parameter types of a function, if any.
    pub fn params(&self, name: &str) -> Option<&'static [GoType]> {
        self.functions.get(name)?.params
    }

    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.functions.keys().copied()
    }
}
