//! Workflow conditions as CEL expressions: compiled (and checked) when the blueprint or object is
//! loaded, evaluated over `imports`, `self` (the dependent's status and exports) and `objects`
//! (the deployed objects the caller supplies), with a detailed result (JOSDK's
//! `DetailedCondition.Result`): met, not met, or an evaluation error, each with a message.
//!
//! Cost is bounded before the library sees an expression: at most [`MAX_EXPRESSION_LEN`]
//! bytes and [`MAX_NESTING`] levels of brackets (the parser recurses on them), and after
//! parsing at most [`MAX_AST_DEPTH`] levels of syntax tree (the interpreter recurses on it) and
//! [`MAX_COMPREHENSION_NESTING`] nested macros (`all`, `exists`, `map`, `filter`, each a loop
//! over its input, so nesting multiplies the work). CEL has no other loops.

use std::collections::BTreeSet;
use std::fmt;

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::{Context, Program};
use landscaper_model::{ActivationCondition, Condition, ExtensionPlace, WorkflowExtension};
use serde_json::{Map, Value};

pub const MAX_EXPRESSION_LEN: usize = 4096;
pub const MAX_NESTING: usize = 32;
pub const MAX_AST_DEPTH: usize = 64;
pub const MAX_COMPREHENSION_NESTING: usize = 2;

/// The four conditions of a dependent, named as their fields are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConditionKind {
    ReconcilePrecondition,
    ReadyPostcondition,
    DeletePostcondition,
    ActivationCondition,
}

impl ConditionKind {
    pub const ALL: [ConditionKind; 4] = [
        ConditionKind::ReconcilePrecondition,
        ConditionKind::ReadyPostcondition,
        ConditionKind::DeletePostcondition,
        ConditionKind::ActivationCondition,
    ];

    /// The field name in the extension block.
    pub fn field(self) -> &'static str {
        match self {
            ConditionKind::ReconcilePrecondition => "reconcilePrecondition",
            ConditionKind::ReadyPostcondition => "readyPostcondition",
            ConditionKind::DeletePostcondition => "deletePostcondition",
            ConditionKind::ActivationCondition => "activationCondition",
        }
    }

    /// The `status.conditions[].type` its result is recorded under (`ReconcilePrecondition`, ...).
    pub fn condition_type(self) -> &'static str {
        match self {
            ConditionKind::ReconcilePrecondition => "ReconcilePrecondition",
            ConditionKind::ReadyPostcondition => "ReadyPostcondition",
            ConditionKind::DeletePostcondition => "DeletePostcondition",
            ConditionKind::ActivationCondition => "ActivationCondition",
        }
    }
}

impl fmt::Display for ConditionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.field())
    }
}

/// An expression that does not compile, naming the object and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object}: {field}: invalid CEL expression: {message}")]
pub struct CompileError {
    /// E.g. `blueprint deployExecutions item "monitoring"` or `Installation ns/name`.
    pub object: String,
    /// E.g. `deployItems[monitoring].appliance.reconcilePrecondition`.
    pub field: String,
    pub message: String,
}

/// A compiled expression with its source.
pub struct Expression {
    source: String,
    program: Program,
}

impl fmt::Debug for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Expression").field(&self.source).finish()
    }
}

/// The detailed result of one condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConditionResult {
    Met {
        message: String,
    },
    NotMet {
        message: String,
    },
    /// The expression could not be evaluated (missing key, wrong type, ...). Never taken as
    /// "not met": a precondition that cannot be evaluated must not delete anything.
    Error {
        message: String,
    },
}

impl ConditionResult {
    pub fn is_met(&self) -> bool {
        matches!(self, ConditionResult::Met { .. })
    }

    pub fn message(&self) -> &str {
        match self {
            ConditionResult::Met { message }
            | ConditionResult::NotMet { message }
            | ConditionResult::Error { message } => message,
        }
    }

    /// The `status.conditions[].status` value: `True`, `False` or `Unknown` (error).
    pub fn status(&self) -> &'static str {
        match self {
            ConditionResult::Met { .. } => "True",
            ConditionResult::NotMet { .. } => "False",
            ConditionResult::Error { .. } => "Unknown",
        }
    }
}

/// The variables an expression sees. `objects` is `{<kind>: {<namespace>: {<name>: object}}}`
/// (cluster-scoped objects under the namespace `""`), see [`objects_index`].
#[derive(Debug, Clone, Copy)]
pub struct Variables<'a> {
    pub imports: &'a Value,
    pub this: &'a Value,
    pub objects: &'a Value,
}

impl Expression {
    /// Compiles `source`; errors name `object` and `field`.
    pub fn compile(object: &str, field: &str, source: &str) -> Result<Expression, CompileError> {
        let fail = |message: String| CompileError {
            object: object.to_owned(),
            field: field.to_owned(),
            message,
        };
        if source.trim().is_empty() {
            return Err(fail("empty expression".to_owned()));
        }
        if source.len() > MAX_EXPRESSION_LEN {
            return Err(fail(format!(
                "{} bytes, at most {MAX_EXPRESSION_LEN} allowed",
                source.len()
            )));
        }
        let nesting = bracket_nesting(source);
        if nesting > MAX_NESTING {
            return Err(fail(format!(
                "brackets nested {nesting} deep, at most {MAX_NESTING} allowed"
            )));
        }
        let program = Program::compile(source).map_err(|e| fail(e.to_string()))?;
        let (depth, comprehensions) = tree_shape(program.expression());
        if depth > MAX_AST_DEPTH {
            return Err(fail(format!(
                "expression nested more than {MAX_AST_DEPTH} levels deep"
            )));
        }
        if comprehensions > MAX_COMPREHENSION_NESTING {
            return Err(fail(format!(
                "macros (all, exists, map, filter) nested {comprehensions} deep, at most {MAX_COMPREHENSION_NESTING} allowed"
            )));
        }
        Ok(Expression {
            source: source.to_owned(),
            program,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluates the expression; it must yield a bool.
    pub fn evaluate(&self, kind: ConditionKind, vars: Variables<'_>) -> ConditionResult {
        let mut ctx = Context::default();
        ctx.add_variable_from_value("imports", json_to_cel(vars.imports));
        ctx.add_variable_from_value("self", json_to_cel(vars.this));
        ctx.add_variable_from_value("objects", json_to_cel(vars.objects));
        match self.program.execute(&ctx) {
            Ok(cel::Value::Bool(true)) => ConditionResult::Met {
                message: format!("{kind} {:?} is true", self.source),
            },
            Ok(cel::Value::Bool(false)) => ConditionResult::NotMet {
                message: format!("{kind} {:?} is false", self.source),
            },
            Ok(other) => ConditionResult::Error {
                message: format!(
                    "{kind} {:?} evaluated to a {}, not a bool",
                    self.source,
                    other.type_of()
                ),
            },
            Err(e) => ConditionResult::Error {
                message: format!("{kind} {:?} failed: {e}", self.source),
            },
        }
    }
}

/// A compiled activation condition.
#[derive(Debug)]
pub enum Activation {
    Expression(Expression),
    /// `<plural>.<group>` of the CustomResourceDefinition that must exist on the target.
    CrdPresent(String),
}

impl Activation {
    /// `crds` holds the names (`<plural>.<group>`) of the CRDs present on the target cluster.
    pub fn evaluate(&self, vars: Variables<'_>, crds: &BTreeSet<String>) -> ConditionResult {
        match self {
            Activation::Expression(e) => e.evaluate(ConditionKind::ActivationCondition, vars),
            Activation::CrdPresent(name) if crds.contains(name) => ConditionResult::Met {
                message: format!("CustomResourceDefinition {name} is present"),
            },
            Activation::CrdPresent(name) => ConditionResult::NotMet {
                message: format!("CustomResourceDefinition {name} is not present"),
            },
        }
    }
}

/// A dependent's compiled conditions; all `None` without an extension block.
#[derive(Debug, Default)]
pub struct Conditions {
    pub reconcile_precondition: Option<Expression>,
    pub ready_postcondition: Option<Expression>,
    pub delete_postcondition: Option<Expression>,
    pub activation_condition: Option<Activation>,
}

impl Conditions {
    /// Compiles every condition of `ext`; `field` names the block (e.g.
    /// `deployItems[monitoring].appliance`), errors name the condition's field under it.
    pub fn compile(
        object: &str,
        field: &str,
        ext: Option<&WorkflowExtension>,
    ) -> Result<Conditions, CompileError> {
        let Some(ext) = ext else {
            return Ok(Conditions::default());
        };
        let one = |kind: ConditionKind, src: &Option<String>| {
            src.as_deref()
                .map(|s| Expression::compile(object, &format!("{field}.{kind}"), s))
                .transpose()
        };
        Ok(Conditions {
            reconcile_precondition: one(
                ConditionKind::ReconcilePrecondition,
                &ext.reconcile_precondition,
            )?,
            ready_postcondition: one(ConditionKind::ReadyPostcondition, &ext.ready_postcondition)?,
            delete_postcondition: one(
                ConditionKind::DeletePostcondition,
                &ext.delete_postcondition,
            )?,
            activation_condition: match &ext.activation_condition {
                None => None,
                Some(ActivationCondition::CrdPresent(c)) => {
                    Some(Activation::CrdPresent(c.crd_present.clone()))
                }
                Some(ActivationCondition::Expression(s)) => {
                    Some(Activation::Expression(Expression::compile(
                        object,
                        &format!("{field}.{}", ConditionKind::ActivationCondition),
                        s,
                    )?))
                }
            },
        })
    }

    pub fn is_empty(&self) -> bool {
        self.reconcile_precondition.is_none()
            && self.ready_postcondition.is_none()
            && self.delete_postcondition.is_none()
            && self.activation_condition.is_none()
    }
}

/// A block's problem when it is loaded: a misplaced or invalid field, or an expression that
/// does not compile.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BlockError {
    #[error("{object}: {}: {}", .error.field, .error.message)]
    Field {
        object: String,
        error: landscaper_model::ModelError,
    },
    #[error(transparent)]
    Expression(#[from] CompileError),
}

/// Checks and compiles a block where it is loaded (blueprint, Execution, Installation):
/// `field` names the block, e.g. `deployItems[mon].appliance` or
/// `metadata.annotations[landscaper-appliance.io/workflow]`.
pub fn compile_block(
    object: &str,
    field: &str,
    place: ExtensionPlace,
    ext: Option<&WorkflowExtension>,
) -> Result<Conditions, BlockError> {
    if let Some(ext) = ext {
        ext.check(place, field).map_err(|error| BlockError::Field {
            object: object.to_owned(),
            error,
        })?;
    }
    Ok(Conditions::compile(object, field, ext)?)
}

/// Checks a block where the caller locates the problem itself (a blueprint issue names its file
/// and field path): `Err((field, message))` with `field` relative to the block, e.g.
/// `reconcilePrecondition` or `activationCondition.crdPresent`, and a message without the
/// object, e.g. `invalid CEL expression: ...`.
pub fn check_block(
    place: ExtensionPlace,
    ext: Option<&WorkflowExtension>,
) -> Result<(), (String, String)> {
    const ROOT: &str = "appliance";
    let relative = |field: &str| {
        field
            .strip_prefix(ROOT)
            .map(|f| f.trim_start_matches('.'))
            .unwrap_or(field)
            .to_owned()
    };
    match compile_block("", ROOT, place, ext) {
        Ok(_) => Ok(()),
        Err(BlockError::Field { error, .. }) => Err((relative(&error.field), error.message)),
        Err(BlockError::Expression(e)) => Err((
            relative(&e.field),
            format!("invalid CEL expression: {}", e.message),
        )),
    }
}

impl ConditionResult {
    /// The result as an entry of `status.conditions` (type `ReconcilePrecondition`, ...;
    /// status `True`/`False`/`Unknown`; reason `ConditionMet`/`ConditionNotMet`/
    /// `ConditionError`). `lastTransitionTime` moves only when the status changes.
    pub fn to_condition(
        &self,
        kind: ConditionKind,
        previous: Option<&Condition>,
        now: &str,
    ) -> Condition {
        let status = self.status();
        let transition = previous
            .filter(|p| p.status == status)
            .and_then(|p| p.last_transition_time.clone())
            .unwrap_or_else(|| now.to_owned());
        Condition {
            r#type: kind.condition_type().to_owned(),
            status: status.to_owned(),
            last_transition_time: Some(transition),
            last_update_time: Some(now.to_owned()),
            reason: match self {
                ConditionResult::Met { .. } => "ConditionMet",
                ConditionResult::NotMet { .. } => "ConditionNotMet",
                ConditionResult::Error { .. } => "ConditionError",
            }
            .to_owned(),
            message: self.message().to_owned(),
            codes: None,
        }
    }
}

/// Records `result` of `kind` in `list` as the entry of type `condition_type` (the plain
/// `ReconcilePrecondition` on the dependent itself, `<dependent>/ReconcilePrecondition` on its
/// parent). An entry whose status, reason and message stay is left as it is (times included);
/// `lastTransitionTime` moves only with the status. Returns whether `list` changed.
pub fn record_condition(
    list: &mut Vec<Condition>,
    condition_type: &str,
    kind: ConditionKind,
    result: &ConditionResult,
    now: &str,
) -> bool {
    let position = list.iter().position(|c| c.r#type == condition_type);
    let mut condition = result.to_condition(kind, position.map(|i| &list[i]), now);
    condition.r#type = condition_type.to_owned();
    match position {
        Some(i)
            if list[i].status == condition.status
                && list[i].reason == condition.reason
                && list[i].message == condition.message =>
        {
            false
        }
        Some(i) => {
            list[i] = condition;
            true
        }
        None => {
            list.push(condition);
            true
        }
    }
}

/// `{<kind>: {<namespace>: {<name>: object}}}` from objects with `kind` and `metadata`; objects
/// without a kind or name are skipped, cluster-scoped ones go under the namespace `""`.
pub fn objects_index<'a>(objects: impl IntoIterator<Item = &'a Value>) -> Value {
    let mut by_kind = Map::new();
    for o in objects {
        let kind = o.get("kind").and_then(Value::as_str).unwrap_or_default();
        let meta = o.get("metadata");
        let name = meta
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if kind.is_empty() || name.is_empty() {
            continue;
        }
        let ns = meta
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Value::Object(by_ns) = by_kind
            .entry(kind.to_owned())
            .or_insert_with(|| Value::Object(Map::new()))
        else {
            continue;
        };
        let Value::Object(by_name) = by_ns
            .entry(ns.to_owned())
            .or_insert_with(|| Value::Object(Map::new()))
        else {
            continue;
        };
        by_name.insert(name.to_owned(), o.clone());
    }
    Value::Object(by_kind)
}

/// A JSON value as CEL sees it, as Kubernetes' CEL does: integral numbers are `int` (`uint`
/// only beyond `int`'s range), others `double`.
fn json_to_cel(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => cel::Value::String(s.clone().into()),
        Value::Array(a) => cel::Value::List(a.iter().map(json_to_cel).collect::<Vec<_>>().into()),
        Value::Object(m) => {
            let map: std::collections::HashMap<String, cel::Value> =
                m.iter().map(|(k, v)| (k.clone(), json_to_cel(v))).collect();
            cel::Value::from(map)
        }
    }
}

/// Deepest nesting of `(`, `[` and `{` outside string literals.
fn bracket_nesting(source: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in source.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => {
                depth += 1;
                max = max.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// (depth of the syntax tree, deepest nesting of comprehensions), walking at most
/// `MAX_AST_DEPTH + 1` levels.
fn tree_shape(root: &IdedExpr) -> (usize, usize) {
    fn walk(e: &IdedExpr, depth: usize, loops: usize, out: &mut (usize, usize)) {
        out.0 = out.0.max(depth);
        out.1 = out.1.max(loops);
        if depth > MAX_AST_DEPTH {
            return;
        }
        let mut go = |c: &IdedExpr, loops: usize| walk(c, depth + 1, loops, out);
        match &e.expr {
            Expr::Call(c) => {
                if let Some(t) = &c.target {
                    go(t, loops);
                }
                c.args.iter().for_each(|a| go(a, loops));
            }
            Expr::Comprehension(c) => {
                go(&c.iter_range, loops);
                go(&c.accu_init, loops);
                for inner in [&c.loop_cond, &c.loop_step, &c.result] {
                    go(inner, loops + 1);
                }
            }
            Expr::List(l) => l.elements.iter().for_each(|a| go(a, loops)),
            Expr::Map(m) => m
                .entries
                .iter()
                .for_each(|en| entry(&en.expr, &mut go, loops)),
            Expr::Struct(s) => s
                .entries
                .iter()
                .for_each(|en| entry(&en.expr, &mut go, loops)),
            Expr::Select(s) => go(&s.operand, loops),
            Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => {}
        }
    }
    fn entry(e: &EntryExpr, go: &mut impl FnMut(&IdedExpr, usize), loops: usize) {
        match e {
            EntryExpr::StructField(f) => go(&f.value, loops),
            EntryExpr::MapEntry(m) => {
                go(&m.key, loops);
                go(&m.value, loops);
            }
        }
    }
    let mut out = (0, 0);
    walk(root, 0, 0, &mut out);
    out
}

#[cfg(test)]
#[path = "conditions_tests.rs"]
mod tests;
