//! Go's `text/template`, with sprig v3 and Landscaper's and Helm's functions.

pub mod function;
pub mod value;

pub use function::{Arity, CallContext, FuncDef, FuncError, FuncMap, Function};
pub use value::{MapRef, Value};
