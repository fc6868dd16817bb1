//! How functions plug into the Go template engine: builtins, sprig, Landscaper's and Helm's
//! functions all have this one shape.

use std::collections::HashMap;
use std::rc::Rc;

use super::value::Value;

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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    Exact(usize),
    AtLeast(usize),
}

/// Functions by name, as Go's `template.FuncMap`.
#[derive(Clone, Default)]
pub struct FuncMap {
    functions: HashMap<&'static str, FuncDef>,
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

    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.functions.keys().copied()
    }
}
