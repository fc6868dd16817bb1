//! Spiff (spiff++ dynaml), the YAML templating language of Landscaper's `importDataMappings`,
//! `exportDataMappings` and `type: Spiff` executions.
//!
//! The engine follows spiff v1.7.0-beta-7 as Landscaper configures it
//! (`spiffing.New().WithFunctions(..).WithFileSystem(..).WithValues(values).Cascade(template, stubs)`):
//!
//! * the bindings (`values`) are a scope outside the document: top-level names are visible to
//!   expressions, but never part of the output; numbers in bindings are floats (Landscaper
//!   decodes them from JSON);
//! * the document is evaluated pass by pass until nothing changes; expressions that can not be
//!   resolved (cycles, missing references) make the evaluation fail;
//! * stubs are merged as spiff's `Cascade` does (`merge`, `&state`, `&inject`, ...);
//! * OS functions (`exec`, `pipe`, ...) are disabled; `read` reads the blueprint filesystem
//!   given in [`SpiffOptions::files`];
//! * YAML control structures and string interpolation are off unless enabled in the options.
//!
//! Entry points: [`evaluate`] (JSON documents), [`evaluate_yaml`] (YAML text) and
//! [`evaluate_with_state`] (executions with spiff's `&state` handling).

mod arith;
mod call;
mod control;
mod env;
mod eval;
mod expr;
mod flow;
mod funcs_ext;
mod functions;
mod landscaper;
mod md5;
mod parser;
mod semver;
mod tags;
mod validate;
mod value;
mod yaml;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

pub use landscaper::{
    OCM_SCHEMA_VERSION_ANNOTATION, landscaper_functions, register_resource_functions,
};

use crate::budget::{self, RenderBudget};

use env::{Env, State};
use value::{Map, Node, Value};

pub(crate) const SPIFF_VERSION: &str = "v1.7.0-beta-7";

/// A custom function (like Landscaper's `getResource`): JSON arguments to a JSON result or an
/// error message. Numbers of the arguments are JSON numbers (ints where spiff has ints).
pub type SpiffFunction =
    std::sync::Arc<dyn Fn(&[serde_json::Value]) -> Result<serde_json::Value, String> + Send + Sync>;

/// Custom functions by name. Builtins take precedence, as in spiff.
#[derive(Clone, Default)]
pub struct SpiffFunctions(pub BTreeMap<String, SpiffFunction>);

impl fmt::Debug for SpiffFunctions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

impl SpiffFunctions {
    /// Registers a function.
    pub fn register(
        &mut self,
        name: impl Into<String>,
        f: impl Fn(&[serde_json::Value]) -> Result<serde_json::Value, String> + Send + Sync + 'static,
    ) {
        self.0.insert(name.into(), std::sync::Arc::new(f));
    }
}

/// Options of a spiff evaluation.
#[derive(Clone, Debug)]
pub struct SpiffOptions {
    /// Additional functions (Landscaper registers `getResource`, `getComponent`, ...).
    pub functions: SpiffFunctions,
    /// The blueprint filesystem: path (relative, `/`-separated) to content. `read`,
    /// `lookup_file` and `list_files` see only these files.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Steps (expression evaluations), wall time and value sizes of one evaluation.
    pub budget: RenderBudget,
    /// Maximum nesting of expression evaluations (lambda recursion).
    pub max_depth: usize,
    /// spiff's `interpolation` feature (off in Landscaper).
    pub interpolation: bool,
    /// spiff's `control` feature (off in Landscaper; not supported by this engine).
    pub control: bool,
    /// Bind numbers of the bindings as integers where possible. Landscaper decodes its
    /// bindings from JSON into `interface{}`, so all bound numbers are floats; keep this
    /// `false` to behave like Landscaper.
    pub integer_bindings: bool,
    /// Stack size of the evaluation thread (0: evaluate on the calling thread).
    pub stack_size: usize,
}

impl Default for SpiffOptions {
    fn default() -> Self {
        SpiffOptions {
            functions: SpiffFunctions::default(),
            files: BTreeMap::new(),
            budget: RenderBudget::default(),
            max_depth: 400,
            interpolation: false,
            control: false,
            integer_bindings: false,
            stack_size: 64 << 20,
        }
    }
}

impl SpiffOptions {
    /// Reads spiff's `SPIFF_FEATURES` setting (`interpolation`, `control`, comma separated).
    pub fn with_features(mut self, features: &str) -> Self {
        for f in features.split(',') {
            let f = f.trim();
            let (name, on) = match f.strip_prefix("no") {
                Some(n) => (n, false),
                None => (f, true),
            };
            match name {
                "interpolation" => self.interpolation = on,
                "control" => self.control = on,
                _ => {}
            }
        }
        self
    }
}

/// One unresolved or failing node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpiffIssue {
    /// Path of the node in the document (`a.b.[0]`), empty for the root.
    pub path: String,
    /// The (unresolved) expression, as `(( expr ))`, or the node's value.
    pub expression: String,
    /// What went wrong.
    pub message: String,
}

/// A failed spiff evaluation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpiffError {
    /// The failing nodes (at least one for evaluation errors, none for input errors).
    pub issues: Vec<SpiffIssue>,
    /// Summary message.
    pub message: String,
}

impl fmt::Display for SpiffError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.issues.is_empty() {
            return f.write_str(&self.message);
        }
        for (i, is) in self.issues.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            let p = if is.path.is_empty() {
                "<root>"
            } else {
                &is.path
            };
            write!(f, "{p}: {}: {}", is.expression, is.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for SpiffError {}

impl SpiffError {
    fn input(msg: impl Into<String>) -> SpiffError {
        SpiffError {
            issues: Vec::new(),
            message: msg.into(),
        }
    }

    fn from_status(st: &flow::Status) -> SpiffError {
        let mut issues = Vec::new();
        for n in &st.nodes {
            let expression = match n.node.value() {
                Value::Expr(e) => format!("(( {e} ))"),
                Value::Map(_) => "<map>".to_string(),
                Value::List(_) => "<list>".to_string(),
                v => expr::value_as_string(v, true),
            };
            let message = n
                .parse_error
                .clone()
                .or_else(|| n.node.issue().map(|i| issue_text(i)))
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| "unresolved".to_string());
            issues.push(SpiffIssue {
                path: n.context.join("."),
                expression,
                message,
            });
        }
        let message = format!("unresolved nodes: {}", st.message().replace('\n', "; "));
        SpiffError { issues, message }
    }
}

fn issue_text(i: &value::Issue) -> String {
    let mut s = i.msg.clone();
    for n in &i.nested {
        let t = issue_text(n);
        if !t.is_empty() {
            s.push_str(": ");
            s.push_str(&t);
        }
    }
    s
}

/// The result of an execution: the document and the new `&state`.
#[derive(Clone, Debug, PartialEq)]
pub struct SpiffOutput {
    pub document: serde_json::Value,
    pub state: serde_json::Value,
}

/// One input document: JSON or YAML text.
#[derive(Clone, Copy)]
enum Src<'a> {
    Json(&'a serde_json::Value),
    Yaml(&'a str),
}

/// Input documents of one evaluation.
struct Input<'a> {
    template: Src<'a>,
    stubs: Vec<Src<'a>>,
    state: Option<Src<'a>>,
}

fn load(src: Src<'_>, what: &str) -> Result<Node, SpiffError> {
    match src {
        Src::Json(v) => Ok(yaml::json_to_node(v, false)),
        Src::Yaml(t) => yaml_doc(t, what),
    }
}

fn new_state(options: &SpiffOptions) -> Rc<State> {
    Rc::new(State {
        interpolation: options.interpolation,
        control: options.control,
        os_access: false,
        files: Rc::new(options.files.clone()),
        functions: options.functions.clone(),
        tags: RefCell::new(BTreeMap::new()),
        docno: Cell::new(1),
        steps: Cell::new(0),
        max_steps: options.budget.max_steps,
        depth: Cell::new(0),
        max_depth: options.max_depth,
        limit_hit: Cell::new(false),
        updated_scopes: RefCell::new(Vec::new()),
    })
}

fn yaml_doc(text: &str, what: &str) -> Result<Node, SpiffError> {
    yaml::parse_yaml(text).map_err(|e| SpiffError::input(format!("cannot parse {what}: {e}")))
}

fn run(
    input: Input<'_>,
    bindings: &serde_json::Map<String, serde_json::Value>,
    options: &SpiffOptions,
) -> Result<SpiffOutput, SpiffError> {
    let _budget = budget::enter(&options.budget);
    let template = load(input.template, "template")?;
    let mut stubs = Vec::new();
    for (i, st) in input.stubs.iter().enumerate() {
        stubs.push(load(*st, &format!("stub {}", i + 1))?);
    }
    let has_state = input.state.is_some();
    if let Some(st) = input.state {
        stubs.push(load(st, "state")?);
    }
    let state = new_state(options);
    let mut values = Map::new();
    for (k, v) in bindings {
        values.insert(k.clone(), yaml::json_to_node(v, !options.integer_bindings));
    }
    let outer = Env::new_root(state.clone(), Vec::new(), true).with_local_scope(values);
    let result = flow::cascade(&outer, &template, std::mem::take(&mut stubs), false);
    if let Some(e) = budget::exceeded() {
        state.cleanup();
        let mut err = match &result {
            Ok(_) => SpiffError::input(""),
            Err(status) => SpiffError::from_status(status),
        };
        err.message = format!("evaluation exceeds its budget: {e}");
        return Err(err);
    }
    let out = match result {
        Ok(node) => {
            if state.limit_hit.get() {
                Err(SpiffError::input("evaluation limit exceeded"))
            } else {
                let st = if has_state {
                    yaml::value_to_json(flow::determine_state(&node).value())
                } else {
                    serde_json::Value::Null
                };
                Ok(SpiffOutput {
                    document: yaml::value_to_json(node.value()),
                    state: st,
                })
            }
        }
        Err(status) => {
            if state.limit_hit.get() {
                let mut e = SpiffError::from_status(&status);
                e.message = format!("evaluation limit exceeded; {}", e.message);
                Err(e)
            } else {
                Err(SpiffError::from_status(&status))
            }
        }
    };
    state.cleanup();
    out
}

fn run_threaded<F>(options: &SpiffOptions, f: F) -> Result<SpiffOutput, SpiffError>
where
    F: FnOnce() -> Result<SpiffOutput, SpiffError> + Send,
{
    if options.stack_size == 0 {
        return f();
    }
    std::thread::scope(|s| {
        let h = std::thread::Builder::new()
            .name("spiff".into())
            .stack_size(options.stack_size)
            .spawn_scoped(s, f);
        match h {
            Ok(h) => h
                .join()
                .unwrap_or_else(|_| Err(SpiffError::input("spiff evaluation panicked"))),
            Err(e) => Err(SpiffError::input(format!(
                "cannot start spiff evaluation: {e}"
            ))),
        }
    })
}

/// Evaluates a spiff template (as JSON) with stubs and bindings, like spiff's
/// `Cascade(template, stubs)` with `WithValues(bindings)`.
pub fn evaluate(
    template: &serde_json::Value,
    stubs: &[serde_json::Value],
    bindings: &serde_json::Map<String, serde_json::Value>,
    options: &SpiffOptions,
) -> Result<serde_json::Value, SpiffError> {
    run_threaded(options, || {
        let input = Input {
            template: Src::Json(template),
            stubs: stubs.iter().map(Src::Json).collect(),
            state: None,
        };
        run(input, bindings, options)
    })
    .map(|o| o.document)
}

/// Evaluates a spiff template given as YAML text (stubs as YAML texts).
pub fn evaluate_yaml(
    template: &str,
    stubs: &[&str],
    bindings: &serde_json::Map<String, serde_json::Value>,
    options: &SpiffOptions,
) -> Result<serde_json::Value, SpiffError> {
    run_threaded(options, || {
        let input = Input {
            template: Src::Yaml(template),
            stubs: stubs.iter().map(|s| Src::Yaml(s)).collect(),
            state: None,
        };
        run(input, bindings, options)
    })
    .map(|o| o.document)
}

/// Evaluates a template for a Landscaper execution: the previous state (`{}` initially) is the
/// last stub, and the new state (the top-level nodes marked `&state`) is returned with the
/// document.
pub fn evaluate_with_state(
    template: &serde_json::Value,
    stubs: &[serde_json::Value],
    state: &serde_json::Value,
    bindings: &serde_json::Map<String, serde_json::Value>,
    options: &SpiffOptions,
) -> Result<SpiffOutput, SpiffError> {
    run_threaded(options, || {
        let input = Input {
            template: Src::Json(template),
            stubs: stubs.iter().map(Src::Json).collect(),
            state: Some(Src::Json(state)),
        };
        run(input, bindings, options)
    })
}

/// Like [`evaluate_with_state`], for a template given as YAML text (Landscaper's `file`
/// executions and string templates).
pub fn evaluate_yaml_with_state(
    template: &str,
    stubs: &[&str],
    state: &serde_json::Value,
    bindings: &serde_json::Map<String, serde_json::Value>,
    options: &SpiffOptions,
) -> Result<SpiffOutput, SpiffError> {
    run_threaded(options, || {
        let input = Input {
            template: Src::Yaml(template),
            stubs: stubs.iter().map(|s| Src::Yaml(s)).collect(),
            state: Some(Src::Json(state)),
        };
        run(input, bindings, options)
    })
}

/// Evaluates Landscaper data mappings (`importDataMappings`/`exportDataMappings`): every value
/// is its own spiff document, evaluated with the bindings and no stubs. The error of a failing
/// mapping names its key.
pub fn evaluate_data_mappings(
    mappings: &serde_json::Map<String, serde_json::Value>,
    bindings: &serde_json::Map<String, serde_json::Value>,
    options: &SpiffOptions,
) -> Result<serde_json::Map<String, serde_json::Value>, (String, SpiffError)> {
    let mut out = serde_json::Map::new();
    for (k, v) in mappings {
        match evaluate(v, &[], bindings, options) {
            Ok(r) => {
                out.insert(k.clone(), r);
            }
            Err(e) => return Err((k.clone(), e)),
        }
    }
    Ok(out)
}

/// Parses YAML text (as spiff reads documents) into JSON; numbers keep their int/float type.
pub fn parse_yaml(text: &str) -> Result<serde_json::Value, SpiffError> {
    yaml::parse_yaml(text)
        .map(|n| yaml::value_to_json(n.value()))
        .map_err(SpiffError::input)
}

/// Renders JSON as YAML the way spiff prints documents.
pub fn to_yaml(value: &serde_json::Value) -> String {
    yaml::emit_yaml(&yaml::json_to_value(value, false))
}

#[cfg(test)]
mod tests;
