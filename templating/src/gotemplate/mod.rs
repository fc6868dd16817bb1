//! Go's `text/template`, with sprig v3 and Landscaper's and Helm's functions.

mod builtins;
mod exec;
pub mod funcs;
pub mod function;
mod lex;
pub mod methods;
mod parse;
pub mod print;
mod strconv;
mod template;
pub mod value;

pub use builtins::{builtins, html_escape, js_escape, url_query_escape};
pub use function::{Arity, CallContext, FuncDef, FuncError, FuncMap, Function, GoType};
pub use template::{
    EmptyFiles, ErrorKind, FileHost, Limits, MapFiles, MissingKey, Template, TemplateError, render,
};
pub use value::{MapRef, Value};
