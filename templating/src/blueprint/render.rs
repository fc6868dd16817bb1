//! Rendering a blueprint's executions (`pkg/landscaper/installations/executions/template`):
//! pure functions from a loaded [`Blueprint`] and the bindings to deploy items, exports,
//! subinstallations and import bindings. No store: the previous template state comes in with
//! the bindings and the new state goes out with the result.
//!
//! GoTemplate executions are parsed with Landscaper's function map and executed with
//! `missingkey=zero`; the output is YAML. A printed missing value (`<no value>`) anywhere in
//! a deploy, export or subinstallation output is an error, as in Landscaper. Spiff executions
//! run on the Spiff engine with the same bindings as values, the blueprint's files and
//! Landscaper's Spiff functions (`getResource`, `getComponent`, `parseOCIRef`, `ociRefRepo`,
//! `ociRefVersion`; [`spiff::landscaper_functions`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use landscaper_model::{
    DeployItemTemplate, Duration, ObjectReference, OnDeleteConfig, WorkflowExtension,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::load::{Blueprint, ExecutionKind, ExecutionProblem, ExecutionSource, PreparedExecution};
use super::model::{ImportDefinition, ImportType, InstallationTemplate, TemplateType};
use super::yaml::{Locator, PathSegment, display_path, parse_yaml, source_snippet};
use crate::budget::RenderBudget;
use crate::gotemplate::funcs::{Components, landscaper_template_funcs};
use crate::gotemplate::{FuncMap, Limits, Template, Value as GoValue};
use crate::schema::format_violations;
use crate::spiff::{self, SpiffFunctions, SpiffOptions};

/// The name executions are parsed under (Landscaper's `gotmpl.New("execution")`), so errors
/// read `template: execution:LINE:COL: ...` as there.
pub const TEMPLATE_NAME: &str = "execution";

thread_local! {
    static PARSE_FUNCS: FuncMap = landscaper_template_funcs(Components::default());
    /// sprig's functions do not depend on the installation; building them is most of the cost
    /// of a render call, so each thread builds them once.
    static SPRIG: FuncMap = crate::gotemplate::funcs::sprig();
}

/// `landscaper_template_funcs(components)`, built from a per-thread copy of sprig's functions.
pub(crate) fn execution_funcs(components: Components) -> FuncMap {
    let mut m = SPRIG.with(FuncMap::clone);
    m.extend(crate::gotemplate::funcs::landscaper(components));
    m
}

/// Runs `f` with a function map that has the names of Landscaper's functions (for checking a
/// template's syntax without executing it); built once per thread.
pub(crate) fn with_parse_funcs<R>(f: impl FnOnce(&FuncMap) -> R) -> R {
    PARSE_FUNCS.with(f)
}

/// What every execution sees (Landscaper's `BlueprintExecutionOptions.Values`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bindings {
    /// `.imports`: import name to value (a data value, a Target object, a list or a map of them).
    pub imports: Map<String, Value>,
    /// `.cd`: the component descriptor, or `null`.
    pub cd: Value,
    /// `.components`: all resolved component descriptors, or `null`.
    pub components: Value,
    /// The installation's `spec.blueprint`, bound as `.blueprint` and `.blueprintDef` (only
    /// when given, as Landscaper binds them only for an installation).
    pub blueprint_def: Option<Value>,
    /// The installation's `spec.componentDescriptor`, bound as `.componentDescriptorDef`.
    pub component_descriptor_def: Option<Value>,
    /// Previous template states by key (`deploy<execution>`, `export<execution>`); an execution
    /// without one sees `.state` as an empty map.
    pub state: BTreeMap<String, Value>,
    /// The budget of each execution (both engines).
    pub budget: RenderBudget,
    /// Resource bytes for `getResourceKey` and `getResourceContent`.
    pub resources: crate::resources::Resources,
}

impl Bindings {
    /// Bindings with just these imports.
    pub fn with_imports(imports: Map<String, Value>) -> Bindings {
        Bindings {
            imports,
            ..Bindings::default()
        }
    }

    fn values(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("cd".into(), self.cd.clone());
        m.insert("components".into(), self.components.clone());
        m.insert("imports".into(), Value::Object(self.imports.clone()));
        if let Some(b) = &self.blueprint_def {
            m.insert("blueprint".into(), b.clone());
            m.insert("blueprintDef".into(), b.clone());
        }
        if let Some(c) = &self.component_descriptor_def {
            m.insert("componentDescriptorDef".into(), c.clone());
        }
        m
    }

    fn components(&self) -> Components {
        Components {
            cd: GoValue::from_json(&self.cd),
            list: GoValue::from_json(&self.components),
            resources: self.resources.clone(),
        }
    }
}

/// Export executions additionally see what the deploy items, the subinstallations and the
/// imports left in the installation's context.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportBindings {
    pub base: Bindings,
    /// `.deployitems`: deploy item name to its exports (`None`: no export DataObject at all).
    pub deploy_items: Option<Map<String, Value>>,
    /// `.dataobjects`: key to value of the DataObjects in the context `Inst.<name>`.
    pub data_objects: Map<String, Value>,
    /// `.targets`: key to Target object of the Targets in the context `Inst.<name>`.
    pub targets: Map<String, Value>,
}

impl ExportBindings {
    fn values(&self) -> Map<String, Value> {
        let mut internal = Map::new();
        if let Some(d) = &self.deploy_items {
            internal.insert("deployitems".into(), Value::Object(d.clone()));
        }
        internal.insert(
            "dataobjects".into(),
            Value::Object(self.data_objects.clone()),
        );
        internal.insert("targets".into(), Value::Object(self.targets.clone()));
        let mut m = self.base.values();
        for (k, v) in &internal {
            m.insert(k.clone(), v.clone());
        }
        m.insert("values".into(), Value::Object(internal));
        m
    }
}

/// `target` of a rendered deploy item (Landscaper's `TargetReference`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetReference {
    /// A Target object's name (deprecated form).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The target, targetList or targetMap import.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub import: String,
    /// Element of a targetList import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<i64>,
    /// Entry of a targetMap import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// A deploy item as a deploy execution renders it (Landscaper's `DeployItemSpecification`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeployItemSpecification {
    #[serde(default)]
    pub name: String,
    #[serde(rename = "type", default)]
    pub r#type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// The provider configuration, as rendered.
    #[serde(default)]
    pub config: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub update_on_change_only: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_delete: Option<OnDeleteConfig>,
    /// The appliance's workflow conditions (`landscaper_model::workflow`); not Landscaper's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appliance: Option<WorkflowExtension>,
}

/// Result of the deploy executions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeployExecutionsOutput {
    /// All deploy items, in execution and list order.
    pub deploy_items: Vec<DeployItemSpecification>,
    /// New template states by key (`deploy<execution>`), for executions that produced one.
    pub state: BTreeMap<String, Value>,
}

/// Result of the export executions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportExecutionsOutput {
    /// Declared exports (merged in execution order, later wins), validated.
    pub exports: Map<String, Value>,
    /// Keys the executions produced that the blueprint does not export (dropped).
    pub dropped: Vec<String>,
    pub state: BTreeMap<String, Value>,
}

/// Result of rendering the subinstallations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubinstallationsOutput {
    /// Templated subinstallations first, then the static ones, as Landscaper orders them;
    /// data imports wired to unsatisfied optional parent imports removed.
    pub subinstallations: Vec<InstallationTemplate>,
    pub state: BTreeMap<String, Value>,
}

/// Result of the import executions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportExecutionsOutput {
    /// Bindings added to the imports (later executions see earlier bindings).
    pub bindings: Map<String, Value>,
    /// Errors returned by the first execution that returned any (import validation failed).
    pub errors: Vec<String>,
}

/// Why rendering failed: which execution, where, and what went wrong. The details are boxed
/// (the error travels through many `Result`s); read them through `Deref`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderError(Box<RenderErrorDetail>);

impl std::ops::Deref for RenderError {
    type Target = RenderErrorDetail;
    fn deref(&self) -> &RenderErrorDetail {
        &self.0
    }
}

impl std::ops::DerefMut for RenderError {
    fn deref_mut(&mut self) -> &mut RenderErrorDetail {
        &mut self.0
    }
}

/// The details of a [`RenderError`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderErrorDetail {
    pub kind: ExecutionKind,
    /// The execution's name; `None` for checks of the combined result.
    pub execution: Option<String>,
    pub engine: Option<TemplateType>,
    /// The template's file in the blueprint, if it has one.
    pub file: Option<String>,
    /// 1-based line and column in the template (or in the rendered output for output errors,
    /// see `in_output`).
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// Whether `line`/`column` point into the rendered output rather than the template.
    pub in_output: bool,
    pub message: String,
    /// An excerpt of the template or output around `line`.
    pub snippet: Option<String>,
}

impl RenderError {
    fn new(kind: ExecutionKind, exec: Option<&PreparedExecution>, message: String) -> RenderError {
        RenderError(Box::new(RenderErrorDetail {
            kind,
            execution: exec.map(|e| e.name.clone()),
            engine: exec.map(|e| e.engine),
            file: exec.and_then(|e| e.file.clone()),
            line: None,
            column: None,
            in_output: false,
            message,
            snippet: None,
        }))
    }
}

impl RenderErrorDetail {
    /// The first line of the message: where, and what.
    pub fn headline(&self) -> String {
        let mut s = String::new();
        match &self.execution {
            Some(name) => {
                s.push_str(&format!("{} {name:?}", self.kind.label()));
                let mut what = Vec::new();
                if let Some(e) = self.engine {
                    what.push(e.to_string());
                }
                match &self.file {
                    Some(f) => what.push(format!("file {f}")),
                    None => what.push("inline template".to_string()),
                }
                if let Some(l) = self.line {
                    let place = if self.in_output {
                        "output line"
                    } else {
                        "line"
                    };
                    match self.column {
                        Some(c) => what.push(format!("{place} {l}, column {c}")),
                        None => what.push(format!("{place} {l}")),
                    }
                }
                s.push_str(&format!(" ({})", what.join(", ")));
            }
            None => s.push_str(self.kind.field()),
        }
        s.push_str(": ");
        s.push_str(&self.message);
        s
    }
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.headline())?;
        if let Some(snippet) = &self.snippet {
            write!(f, "\n{}", snippet.trim_end_matches('\n'))?;
        }
        Ok(())
    }
}

impl std::error::Error for RenderError {}

/// One render pass over the executions of one kind: the shared template data, functions and
/// options, built once.
struct Pass<'a> {
    blueprint: &'a Blueprint,
    kind: ExecutionKind,
    /// The bindings as JSON (Spiff values).
    values: Map<String, Value>,
    /// The same bindings as Go template data; maps are shared, so executions see each
    /// other's mutations as in Landscaper.
    go_data: Option<GoValue>,
    funcs: Option<FuncMap>,
    components: Components,
    /// Landscaper's Spiff functions (`getResource`, `getComponent`, `parseOCIRef`, ...).
    spiff_functions: Option<SpiffFunctions>,
    previous_state: &'a BTreeMap<String, Value>,
    state: BTreeMap<String, Value>,
    budget: RenderBudget,
}

impl<'a> Pass<'a> {
    fn new(
        blueprint: &'a Blueprint,
        kind: ExecutionKind,
        values: Map<String, Value>,
        components: Components,
        previous_state: &'a BTreeMap<String, Value>,
        budget: RenderBudget,
    ) -> Pass<'a> {
        Pass {
            blueprint,
            kind,
            values,
            go_data: None,
            funcs: None,
            components,
            spiff_functions: None,
            previous_state,
            state: BTreeMap::new(),
            budget,
        }
    }

    fn state_key(&self, exec: &PreparedExecution) -> Option<String> {
        self.kind
            .state_prefix()
            .map(|p| format!("{p}{}", exec.name))
    }

    /// Runs one execution and returns its output document (JSON).
    fn run(&mut self, exec: &PreparedExecution) -> Result<Value, RenderError> {
        match exec.engine {
            TemplateType::GoTemplate => self.run_gotemplate(exec),
            TemplateType::Spiff => self.run_spiff(exec),
        }
    }

    fn run_gotemplate(&mut self, exec: &PreparedExecution) -> Result<Value, RenderError> {
        let ExecutionSource::Text(text) = &exec.source else {
            return Err(RenderError::new(
                self.kind,
                Some(exec),
                "a GoTemplate template must be a string".to_string(),
            ));
        };
        if self.funcs.is_none() {
            self.funcs = Some(execution_funcs(self.components.clone()));
        }
        let data = self
            .go_data
            .get_or_insert_with(|| GoValue::from_json(&Value::Object(self.values.clone())))
            .clone();
        if let Some(key) = self.state_key(exec)
            && let GoValue::Map(m) = &data
        {
            let prev = self
                .previous_state
                .get(&key)
                .map_or_else(GoValue::empty_map, GoValue::from_json);
            m.borrow_mut().insert("state".to_string(), prev);
        }
        let funcs = self.funcs.as_ref().expect("set above");
        let template_error = |e: crate::gotemplate::TemplateError| {
            let mut err = RenderError::new(self.kind, Some(exec), e.message.clone());
            if let Some((line, col)) = go_error_position(&e.message) {
                err.line = Some(line);
                err.column = col.map(|c| c + 1);
                err.snippet = Some(source_snippet(text, line, col.map_or(0, |c| c + 1)));
            }
            err
        };
        let template = Template::parse(TEMPLATE_NAME, text, funcs).map_err(template_error)?;
        let output = template
            .execute(
                TEMPLATE_NAME,
                &data,
                funcs,
                self.blueprint.fs(),
                &Limits::with_budget(self.budget),
            )
            .map_err(template_error)?;
        if self.kind != ExecutionKind::Import
            && let Some(at) = output.find(NO_VALUE)
        {
            let line = output[..at].matches('\n').count() + 1;
            let col = at - output[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
            let mut err = RenderError::new(
                self.kind,
                Some(exec),
                format!(
                    "template {:?} contains fields with \"no value\" (a missing value was printed; test it with `if`, `default` or `hasKey` instead)",
                    self.kind.label()
                ),
            );
            err.line = Some(line);
            err.column = Some(col);
            err.in_output = true;
            err.snippet = Some(source_snippet(&output, line, col));
            return Err(err);
        }
        parse_yaml(&output).map_err(|e| {
            let mut err = RenderError::new(
                self.kind,
                Some(exec),
                format!("error while decoding templated execution: {}", e.message),
            );
            if let Some(line) = e.line {
                err.line = Some(line);
                err.in_output = true;
                err.snippet = Some(source_snippet(&output, line, 0));
            }
            err
        })
    }

    fn run_spiff(&mut self, exec: &PreparedExecution) -> Result<Value, RenderError> {
        let (template, text) = match &exec.source {
            ExecutionSource::Document(doc) => ((**doc).clone(), None),
            ExecutionSource::Text(text) => {
                let doc = spiff::parse_yaml(text).map_err(|e| {
                    RenderError::new(
                        self.kind,
                        Some(exec),
                        format!("unable to parse the spiff template: {e}"),
                    )
                })?;
                // Landscaper re-parses a template that is a single string.
                let doc = match doc {
                    Value::String(s) => spiff::parse_yaml(&s).map_err(|e| {
                        RenderError::new(
                            self.kind,
                            Some(exec),
                            format!("unable to parse the spiff template: {e}"),
                        )
                    })?,
                    other => other,
                };
                (doc, Some(text.clone()))
            }
        };
        let functions = self
            .spiff_functions
            .get_or_insert_with(|| {
                let null = Value::Null;
                let mut f = spiff::landscaper_functions(
                    self.values.get("cd").unwrap_or(&null),
                    self.values.get("components").unwrap_or(&null),
                    self.blueprint
                        .document()
                        .annotations
                        .get(spiff::OCM_SCHEMA_VERSION_ANNOTATION)
                        .map(String::as_str),
                );
                spiff::register_resource_functions(&mut f, self.components.resources.clone());
                f
            })
            .clone();
        let options = SpiffOptions {
            functions,
            files: self.blueprint.fs().to_map(),
            budget: self.budget,
            ..SpiffOptions::default()
        };
        let spiff_error = |e: spiff::SpiffError| {
            let mut err = RenderError::new(self.kind, Some(exec), e.to_string());
            if let (Some(text), Some(issue)) = (&text, e.issues.first()) {
                let path = spiff_path(&issue.path);
                if let Some((line, col)) = Locator::new(text).locate(&path) {
                    err.line = Some(line);
                    err.column = Some(col);
                    err.snippet = Some(source_snippet(text, line, col));
                }
            }
            err
        };
        match self.state_key(exec) {
            None => spiff::evaluate(&template, &[], &self.values, &options).map_err(spiff_error),
            Some(key) => {
                let prev = self
                    .previous_state
                    .get(&key)
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new()));
                let out = spiff::evaluate_with_state(&template, &[], &prev, &self.values, &options)
                    .map_err(spiff_error)?;
                if !is_empty_state(&out.state) {
                    self.state.insert(key, out.state);
                }
                Ok(out.document)
            }
        }
    }

    /// Records the GoTemplate `state:` node of an output.
    fn keep_go_state(&mut self, exec: &PreparedExecution, output: &Value) {
        if exec.engine != TemplateType::GoTemplate {
            return;
        }
        if let (Some(key), Some(state)) = (self.state_key(exec), get_ci(output, "state")) {
            self.state.insert(key, state.clone());
        }
    }

    /// The list under `key` (matched case-insensitively) of an execution's output; `None` when
    /// the key is absent or null.
    fn output_list<'o>(
        &self,
        exec: &PreparedExecution,
        output: &'o Value,
        key: &str,
    ) -> Result<Option<&'o Vec<Value>>, RenderError> {
        match get_ci(output, key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(l)) => Ok(Some(l)),
            Some(other) => Err(self.output_error(
                exec,
                format!(
                    "error while decoding templated execution: {key} must be a list, found {}",
                    super::fs::json_kind(other)
                ),
            )),
        }
    }

    fn output_error(&self, exec: &PreparedExecution, message: String) -> RenderError {
        RenderError::new(self.kind, Some(exec), message)
    }
}

const NO_VALUE: &str = "<no value>";

/// An execution found broken at load time, reported when its list is rendered.
fn problem_error(kind: ExecutionKind, p: &ExecutionProblem) -> RenderError {
    RenderError(Box::new(RenderErrorDetail {
        kind,
        execution: Some(p.name.clone()),
        engine: p.engine,
        file: p.file.clone(),
        line: None,
        column: None,
        in_output: false,
        message: p.issue.to_string(),
        snippet: None,
    }))
}

fn is_empty_state(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// `a.b.[0]` (spiff's node path) as field path segments.
fn spiff_path(path: &str) -> Vec<PathSegment> {
    path.split('.')
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.strip_prefix('[')
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|n| n.parse().ok())
                .map_or_else(|| PathSegment::Key(s.to_string()), PathSegment::Index)
        })
        .collect()
}

/// `template: execution:LINE[:COL]: ...` → (line, 0-based column).
fn go_error_position(message: &str) -> Option<(usize, Option<usize>)> {
    let rest = &message[message.find(&format!("{TEMPLATE_NAME}:"))? + TEMPLATE_NAME.len() + 1..];
    let mut parts = rest.splitn(3, ':');
    let line: usize = parts.next()?.parse().ok()?;
    let col = parts.next().and_then(|c| c.parse().ok());
    Some((line, col))
}

/// A top-level key of a rendered output, matched as Go's `encoding/json` matches struct
/// fields: exactly, else case-insensitively.
pub fn get_ci<'v>(output: &'v Value, key: &str) -> Option<&'v Value> {
    let Value::Object(m) = output else {
        return None;
    };
    m.get(key).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

/// Renames the keys of a map that case-insensitively match one of `fields` to that field's
/// spelling (exact matches win), as Go's decoder matches them.
fn fold_keys(map: &Map<String, Value>, fields: &[&str]) -> Map<String, Value> {
    let mut out = Map::new();
    let mut exact: BTreeSet<&str> = BTreeSet::new();
    for (k, v) in map {
        if fields.contains(&k.as_str()) {
            exact.insert(fields[fields.iter().position(|f| f == k).unwrap_or(0)]);
            out.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in map {
        if fields.contains(&k.as_str()) {
            continue;
        }
        match fields.iter().find(|f| f.eq_ignore_ascii_case(k)) {
            Some(f) if !exact.contains(f) => {
                out.insert((*f).to_string(), v.clone());
            }
            Some(_) => {}
            None => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out
}

const DEPLOY_ITEM_FIELDS: &[&str] = &[
    "name",
    "type",
    "target",
    "labels",
    "config",
    "dependsOn",
    "timeout",
    "updateOnChangeOnly",
    "onDelete",
    landscaper_model::workflow::APPLIANCE_FIELD,
];
const TARGET_FIELDS: &[&str] = &["name", "import", "index", "key"];
const ON_DELETE_FIELDS: &[&str] = &["skipUninstallIfClusterRemoved"];

/// Decodes one rendered deploy item (keys case-insensitive, unknown keys dropped).
pub fn decode_deploy_item(item: &Value) -> Result<DeployItemSpecification, String> {
    let Value::Object(m) = item else {
        return Err(format!(
            "expected a deploy item (a map), found {}",
            super::fs::json_kind(item)
        ));
    };
    let mut m = fold_keys(m, DEPLOY_ITEM_FIELDS);
    m.retain(|k, _| DEPLOY_ITEM_FIELDS.contains(&k.as_str()));
    if let Some(Value::Object(t)) = m.get("target") {
        let t = fold_keys(t, TARGET_FIELDS);
        m.insert("target".into(), Value::Object(t));
    }
    if let Some(Value::Object(o)) = m.get("onDelete") {
        let o = fold_keys(o, ON_DELETE_FIELDS);
        m.insert("onDelete".into(), Value::Object(o));
    }
    // Go's zero values for explicit nulls.
    m.retain(|k, v| !v.is_null() || k == "config");
    serde_path_to_error::deserialize(Value::Object(m)).map_err(|e| {
        let path = e.path().to_string();
        if path.is_empty() || path == "." {
            e.inner().to_string()
        } else {
            format!("{path}: {}", e.inner())
        }
    })
}

/// Renders the deploy executions.
pub fn render_deploy_executions(
    blueprint: &Blueprint,
    bindings: &Bindings,
) -> Result<DeployExecutionsOutput, RenderError> {
    let kind = ExecutionKind::Deploy;
    let mut pass = Pass::new(
        blueprint,
        kind,
        bindings.values(),
        bindings.components(),
        &bindings.state,
        bindings.budget,
    );
    let mut items = Vec::new();
    for exec in blueprint.executions(kind) {
        let exec = exec.as_ref().map_err(|p| problem_error(kind, p))?;
        let output = pass.run(exec)?;
        pass.keep_go_state(exec, &output);
        let Some(list) = pass.output_list(exec, &output, "deployItems")? else {
            continue;
        };
        for (i, item) in list.iter().enumerate() {
            let spec = decode_deploy_item(item).map_err(|e| {
                pass.output_error(
                    exec,
                    format!("error while decoding templated execution: deployItems[{i}]: {e}"),
                )
            })?;
            landscaper_workflow::conditions::check_block(
                landscaper_model::ExtensionPlace::DeployItemTemplate,
                spec.appliance.as_ref(),
            )
            .map_err(|(field, message)| {
                pass.output_error(
                    exec,
                    format!(
                        "invalid workflow condition: deploy item {:?}: deployItems[{i}].appliance.{field}: {message}",
                        spec.name
                    ),
                )
            })?;
            items.push(spec);
        }
    }
    Ok(DeployExecutionsOutput {
        deploy_items: items,
        state: pass.state,
    })
}

/// Landscaper's `MergeMaps`: maps merge recursively, anything else from `b` wins.
pub fn merge_maps(a: &mut Map<String, Value>, b: &Map<String, Value>) {
    for (k, v) in b {
        match (a.get_mut(k), v) {
            (Some(Value::Object(existing)), Value::Object(new)) => merge_maps(existing, new),
            _ => {
                a.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Renders the export executions, merges their `exports` (later wins), drops keys that are not
/// declared exports, and validates the rest: data exports against their schema, target exports
/// by `.type`.
pub fn render_export_executions(
    blueprint: &Blueprint,
    bindings: &ExportBindings,
) -> Result<ExportExecutionsOutput, RenderError> {
    let kind = ExecutionKind::Export;
    let mut pass = Pass::new(
        blueprint,
        kind,
        bindings.values(),
        bindings.base.components(),
        &bindings.base.state,
        bindings.base.budget,
    );
    let mut exports = Map::new();
    for exec in blueprint.executions(kind) {
        let exec = exec.as_ref().map_err(|p| problem_error(kind, p))?;
        let output = pass.run(exec)?;
        pass.keep_go_state(exec, &output);
        match get_ci(&output, "exports") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => merge_maps(&mut exports, m),
            Some(other) => {
                return Err(pass.output_error(
                    exec,
                    format!(
                        "error while decoding templated execution: exports must be a map, found {}",
                        super::fs::json_kind(other)
                    ),
                ));
            }
        }
    }
    let mut dropped = Vec::new();
    exports.retain(|k, _| {
        let keep = blueprint.export(k).is_some();
        if !keep {
            dropped.push(k.clone());
        }
        keep
    });
    for (name, value) in &exports {
        let Some(def) = blueprint.export(name) else {
            continue;
        };
        let fail =
            |message: String| RenderError::new(kind, None, format!("export {name:?}: {message}"));
        match def.export_type() {
            Some(ImportType::Data) => {
                let schema = match blueprint.export_schema(name) {
                    Some(Ok(s)) => s,
                    Some(Err(issue)) => {
                        return Err(fail(format!("validator creation failed: {issue}")));
                    }
                    None => {
                        return Err(fail("schema for data export must not be empty".to_string()));
                    }
                };
                if let Err(v) = schema.validate(value) {
                    return Err(fail(format!(
                        "exported data does not satisfy the configured schema: {}",
                        format_violations(&v)
                    )));
                }
            }
            Some(ImportType::Target) => {
                let t = value.get("type").and_then(Value::as_str);
                match t {
                    None => {
                        return Err(fail(
                            "exported target does not match the expected target template schema: no .type".to_string(),
                        ));
                    }
                    Some(t) if t != def.target_type => {
                        return Err(fail(format!(
                            "exported target type is {t} but expected {}",
                            def.target_type
                        )));
                    }
                    _ => {}
                }
            }
            _ => return Err(fail(format!("unknown export type '{}'", def.r#type))),
        }
    }
    Ok(ExportExecutionsOutput {
        exports,
        dropped,
        state: pass.state,
    })
}

/// Renders the subinstallation executions and adds the static subinstallations; removes data
/// imports wired to optional or conditional parent imports that are not satisfied; validates
/// the templates and their wiring (Landscaper's `ValidateInstallationTemplates`).
pub fn render_subinstallations(
    blueprint: &Blueprint,
    bindings: &Bindings,
) -> Result<SubinstallationsOutput, RenderError> {
    let kind = ExecutionKind::Subinstallation;
    let mut pass = Pass::new(
        blueprint,
        kind,
        bindings.values(),
        bindings.components(),
        &bindings.state,
        bindings.budget,
    );
    let mut templates = Vec::new();
    for exec in blueprint.executions(kind) {
        let exec = exec.as_ref().map_err(|p| problem_error(kind, p))?;
        let output = pass.run(exec)?;
        pass.keep_go_state(exec, &output);
        let Some(list) = pass.output_list(exec, &output, "subinstallations")? else {
            continue;
        };
        for (i, item) in list.iter().enumerate() {
            let t = super::load::decode_installation_template(item.clone()).map_err(|errs| {
                let msgs: Vec<String> = errs
                    .iter()
                    .map(|(p, m)| {
                        if p.is_empty() {
                            m.clone()
                        } else {
                            format!("{}: {m}", display_path(p))
                        }
                    })
                    .collect();
                pass.output_error(
                    exec,
                    format!(
                        "unable to decode installation template {i}: {}",
                        msgs.join("; ")
                    ),
                )
            })?;
            landscaper_workflow::conditions::check_block(
                landscaper_model::ExtensionPlace::InstallationTemplate,
                t.appliance.as_ref(),
            )
            .map_err(|(field, message)| {
                pass.output_error(
                    exec,
                    format!(
                        "invalid workflow condition: subinstallation {:?}: subinstallations[{i}].appliance.{field}: {message}",
                        t.name
                    ),
                )
            })?;
            templates.push(t);
        }
    }
    let statics = blueprint.static_subinstallations().map_err(|e| {
        RenderError::new(
            kind,
            None,
            format!("unable to get default subinstallation templates: {e}"),
        )
    })?;
    templates.extend(statics.iter().cloned());
    let defs = blueprint.document().imports.as_slice();
    for t in &mut templates {
        if let Some(data) = &mut t.imports.data {
            data.retain(|imp| {
                let r = imp.data_ref.as_deref().unwrap_or_default();
                bindings.imports.contains_key(r) || !is_optional_parent_import(r, defs, false)
            });
        }
    }
    let errs = validate_installation_templates(&blueprint.all_imports(), &templates);
    if !errs.is_empty() {
        return Err(RenderError::new(kind, None, errs.join("; ")));
    }
    if let Some(cycle) = subinstallation_cycle(&templates) {
        return Err(RenderError::new(
            kind,
            None,
            format!(
                "the subinstallations have a cycle: {}",
                cycle.join(DEPENDS_ON)
            ),
        ));
    }
    Ok(SubinstallationsOutput {
        subinstallations: templates,
        state: pass.state,
    })
}

/// How Landscaper joins the names of a dependency cycle.
pub const DEPENDS_ON: &str = " -{depends_on}-> ";

/// A cycle among subinstallation templates, where a template depends on the siblings that
/// export what it imports (Landscaper's `CheckForCyclesAndDuplicateExports`): the names along
/// the cycle, the first repeated at the end. Landscaper silently creates no subinstallations in
/// that case; the appliance reports it.
pub fn subinstallation_cycle(templates: &[InstallationTemplate]) -> Option<Vec<String>> {
    let exporters = |reference: &str, target: bool| -> Vec<usize> {
        templates
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                if target {
                    t.exports
                        .targets
                        .iter()
                        .flatten()
                        .any(|e| e.target == reference)
                } else {
                    t.exports
                        .data
                        .iter()
                        .flatten()
                        .any(|e| e.data_ref == reference)
                }
            })
            .map(|(i, _)| i)
            .collect()
    };
    let predecessors: Vec<BTreeSet<usize>> = templates
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut p = BTreeSet::new();
            for imp in t.imports.data.iter().flatten() {
                if let Some(r) = imp.data_ref.as_deref().filter(|r| !r.is_empty()) {
                    p.extend(exporters(r, false));
                }
            }
            for imp in t.imports.targets.iter().flatten() {
                let mut refs: Vec<&str> = Vec::new();
                if let Some(r) = imp.target.as_deref().filter(|r| !r.is_empty()) {
                    refs.push(r);
                }
                refs.extend(imp.targets.iter().flatten().map(String::as_str));
                refs.extend(imp.target_map.iter().flatten().map(|(_, v)| v.as_str()));
                for r in refs {
                    p.extend(exporters(r, true));
                }
            }
            p.remove(&i);
            p
        })
        .collect();
    find_cycle(&predecessors, 0..templates.len())
        .map(|c| c.into_iter().map(|i| templates[i].name.clone()).collect())
}

/// A cycle in a graph given as each node's predecessors: the nodes along it, the first repeated
/// at the end, searched from `starts`. Shared by the template check and the runtime check among sibling installations.
pub fn find_cycle(
    predecessors: &[BTreeSet<usize>],
    starts: impl IntoIterator<Item = usize>,
) -> Option<Vec<usize>> {
    fn visit(
        node: usize,
        predecessors: &[BTreeSet<usize>],
        path: &mut Vec<usize>,
        done: &mut [bool],
    ) -> Option<Vec<usize>> {
        if let Some(start) = path.iter().position(|n| *n == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node);
            return Some(cycle);
        }
        if done[node] {
            return None;
        }
        path.push(node);
        for &next in &predecessors[node] {
            if let Some(c) = visit(next, predecessors, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done[node] = true;
        None
    }
    let mut done = vec![false; predecessors.len()];
    starts
        .into_iter()
        .find_map(|start| visit(start, predecessors, &mut Vec::new(), &mut done))
}

/// Landscaper's `isOptionalParentImport`.
fn is_optional_parent_import(r: &str, defs: &[ImportDefinition], conditional: bool) -> bool {
    for d in defs {
        if d.name == r {
            return conditional || !d.is_required();
        }
        if !d.conditional_imports.is_empty()
            && is_optional_parent_import(r, &d.conditional_imports, true)
        {
            return true;
        }
    }
    false
}

/// Landscaper's `ValidateInstallationTemplates`: unique names, each import satisfied by a parent
/// import or a sibling export, each export exported once and not an import of the parent.
pub fn validate_installation_templates(
    parent_imports: &[&ImportDefinition],
    templates: &[InstallationTemplate],
) -> Vec<String> {
    let mut errs = Vec::new();
    let of_type = |t: ImportType| -> BTreeSet<&str> {
        parent_imports
            .iter()
            .filter(|d| d.import_type() == Some(t))
            .map(|d| d.name.as_str())
            .collect()
    };
    let (data_imports, target_imports, list_imports, map_imports) = (
        of_type(ImportType::Data),
        of_type(ImportType::Target),
        of_type(ImportType::TargetList),
        of_type(ImportType::TargetMap),
    );
    let mut names = BTreeSet::new();
    let mut exported_data: BTreeMap<String, String> = BTreeMap::new();
    let mut exported_targets: BTreeMap<String, String> = BTreeMap::new();
    // (reference, where, is list ref, is map ref)
    let mut imported_data: Vec<(String, String)> = Vec::new();
    let mut imported_targets: Vec<(String, String, bool, bool)> = Vec::new();
    for (i, t) in templates.iter().enumerate() {
        let inst = if t.name.is_empty() {
            format!("subinstallations[{i}]")
        } else {
            format!("subinstallation {:?}", t.name)
        };
        for (j, e) in t.exports.data.iter().flatten().enumerate() {
            let at = format!("{inst}: exports.data[{j}] ({}/{})", e.name, e.data_ref);
            if let Some(first) = exported_data.get(&e.data_ref) {
                errs.push(format!(
                    "{at}: data export '{}' is already exported by {first}",
                    e.data_ref
                ));
            } else {
                exported_data.insert(e.data_ref.clone(), inst.clone());
            }
            if data_imports.contains(e.data_ref.as_str()) {
                errs.push(format!("{at}: export is imported by its parent"));
            }
        }
        for (j, imp) in t.imports.data.iter().flatten().enumerate() {
            imported_data.push((
                imp.data_ref.clone().unwrap_or_default(),
                format!("{inst}: imports.data[{j}] ({})", imp.name),
            ));
        }
        for (j, e) in t.exports.targets.iter().flatten().enumerate() {
            let at = format!("{inst}: exports.targets[{j}] ({}/{})", e.name, e.target);
            if let Some(first) = exported_targets.get(&e.target) {
                errs.push(format!(
                    "{at}: target export '{}' is already exported by {first}",
                    e.target
                ));
            } else {
                exported_targets.insert(e.target.clone(), inst.clone());
            }
            let t = e.target.as_str();
            if target_imports.contains(t) || list_imports.contains(t) || map_imports.contains(t) {
                errs.push(format!("{at}: export is imported by its parent"));
            }
        }
        for (j, imp) in t.imports.targets.iter().flatten().enumerate() {
            let at = format!("{inst}: imports.targets[{j}] ({})", imp.name);
            if let Some(target) = imp.target.as_deref().filter(|s| !s.is_empty()) {
                imported_targets.push((target.to_string(), at, false, false));
            } else if let Some(list) = &imp.targets {
                for (k, target) in list.iter().enumerate() {
                    imported_targets.push((
                        target.clone(),
                        format!("{at}.targets[{k}]"),
                        false,
                        false,
                    ));
                }
            } else if let Some(r) = imp.target_list_ref.as_deref().filter(|s| !s.is_empty()) {
                imported_targets.push((r.to_string(), at, true, false));
            } else if let Some(map) = &imp.target_map {
                for (k, target) in map {
                    imported_targets.push((
                        target.clone(),
                        format!("{at}.targetMap[{k}]"),
                        false,
                        false,
                    ));
                }
            } else if let Some(r) = imp.target_map_ref.as_deref().filter(|s| !s.is_empty()) {
                imported_targets.push((r.to_string(), at, false, true));
            }
        }
        if !t.name.is_empty() && !names.insert(t.name.clone()) {
            errs.push(format!("{inst}: duplicated subinstallation"));
        }
    }
    for (r, at) in &imported_data {
        if !exported_data.contains_key(r) && !data_imports.contains(r.as_str()) {
            errs.push(format!("{at}: import not satisfied"));
        }
    }
    let check_lists = !list_imports.is_empty() || !map_imports.is_empty();
    for (r, at, is_list, is_map) in &imported_targets {
        if check_lists {
            if *is_list {
                if !list_imports.contains(r.as_str()) {
                    errs.push(format!("{at}: import not satisfied"));
                }
                continue;
            }
            if *is_map {
                if !map_imports.contains(r.as_str()) {
                    errs.push(format!("{at}: import not satisfied"));
                }
                continue;
            }
            if let Some(base) = indexed_base(r) {
                if !list_imports.contains(base) && !map_imports.contains(base) {
                    errs.push(format!("{at}: import not satisfied"));
                }
                continue;
            }
        }
        if *is_list
            || *is_map
            || (!exported_targets.contains_key(r) && !target_imports.contains(r.as_str()))
        {
            errs.push(format!("{at}: import not satisfied"));
        }
    }
    errs
}

/// `name[idx]` → `name` (Landscaper's `IsIndexed`).
fn indexed_base(r: &str) -> Option<&str> {
    let open = r.rfind('[')?;
    r.ends_with(']').then_some(&r[..open])
}

/// Renders the import executions: their `bindings` are added to `.imports` as they come; the
/// first execution that returns `errors` stops the run.
pub fn render_import_executions(
    blueprint: &Blueprint,
    bindings: &Bindings,
) -> Result<ImportExecutionsOutput, RenderError> {
    let kind = ExecutionKind::Import;
    let mut pass = Pass::new(
        blueprint,
        kind,
        bindings.values(),
        bindings.components(),
        &bindings.state,
        bindings.budget,
    );
    let mut out = ImportExecutionsOutput::default();
    for exec in blueprint.executions(kind) {
        let exec = exec.as_ref().map_err(|p| problem_error(kind, p))?;
        let output = pass.run(exec)?;
        if let Some(b) = get_ci(&output, "bindings") {
            let Value::Object(b) = b else {
                if b.is_null() {
                    continue;
                }
                return Err(pass.output_error(
                    exec,
                    format!(
                        "error while decoding templated execution: bindings must be a map, found {}",
                        super::fs::json_kind(b)
                    ),
                ));
            };
            for (k, v) in b {
                out.bindings.insert(k.clone(), v.clone());
                if let Some(Value::Object(imports)) = pass.values.get_mut("imports") {
                    imports.insert(k.clone(), v.clone());
                }
                if let Some(GoValue::Map(m)) = &pass.go_data {
                    let imports = m.borrow().get("imports").cloned();
                    match imports {
                        Some(GoValue::Map(i)) => {
                            i.borrow_mut().insert(k.clone(), GoValue::from_json(v));
                        }
                        _ => {
                            let mut i = BTreeMap::new();
                            i.insert(k.clone(), GoValue::from_json(v));
                            m.borrow_mut().insert("imports".into(), GoValue::map(i));
                        }
                    }
                }
            }
        }
        match get_ci(&output, "errors") {
            None | Some(Value::Null) => {}
            Some(Value::Array(errors)) => {
                if !errors.is_empty() {
                    out.errors = errors
                        .iter()
                        .map(|e| match e {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect();
                    break;
                }
            }
            Some(other) => {
                return Err(pass.output_error(
                    exec,
                    format!(
                        "error while decoding templated execution: errors must be a list of strings, found {}",
                        super::fs::json_kind(other)
                    ),
                ));
            }
        }
    }
    Ok(out)
}

/// Why a rendered deploy item's target cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid deployitem specification {item:?}: {message}")]
pub struct TargetResolutionError {
    pub item: String,
    pub message: String,
}

/// Turns rendered deploy items into the Execution's deploy item templates: target imports
/// (`import`, with `index` into a targetList or `key` into a targetMap) become references to
/// the imported Target objects (their `metadata.name`/`namespace`, the installation's namespace
/// when the Target has none); a plain `name` is a Target in the installation's namespace.
pub fn resolve_deploy_items(
    blueprint: &Blueprint,
    imports: &Map<String, Value>,
    namespace: &str,
    items: &[DeployItemSpecification],
) -> Result<Vec<DeployItemTemplate>, TargetResolutionError> {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let fail = |message: String| TargetResolutionError {
            item: item.name.clone(),
            message,
        };
        let target = match &item.target {
            None => None,
            Some(t) => {
                let import_of = |want: ImportType, what: &str| {
                    blueprint
                        .import(&t.import)
                        .filter(|d| d.import_type() == Some(want))
                        .and_then(|_| imports.get(&t.import))
                        .ok_or_else(|| fail(format!("{what} import {:?} not found", t.import)))
                };
                let object = if let Some(i) = t.index {
                    let list = import_of(ImportType::TargetList, "targetlist")?;
                    let list = list.as_array().map(Vec::as_slice).unwrap_or_default();
                    let Some(e) = usize::try_from(i).ok().and_then(|i| list.get(i)) else {
                        return Err(fail(format!("index {i} out of bounds")));
                    };
                    Some(e)
                } else if let Some(k) = &t.key {
                    let map = import_of(ImportType::TargetMap, "targetmap")?;
                    let Some(e) = map.get(k).filter(|v| !v.is_null()) else {
                        return Err(fail(format!(
                            "key {k:?} not found in targetmap import {:?}",
                            t.import
                        )));
                    };
                    Some(e)
                } else if !t.import.is_empty() {
                    Some(import_of(ImportType::Target, "target")?)
                } else if t.name.is_empty() {
                    return Err(fail("empty target reference".to_string()));
                } else {
                    None
                };
                Some(match object {
                    Some(o) => {
                        let meta = o.get("metadata");
                        let name = meta
                            .and_then(|m| m.get("name"))
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        let ns = meta
                            .and_then(|m| m.get("namespace"))
                            .and_then(Value::as_str)
                            .filter(|s| !s.is_empty())
                            .unwrap_or(namespace);
                        ObjectReference::new(ns, name)
                    }
                    None => ObjectReference::new(namespace, t.name.clone()),
                })
            }
        };
        out.push(DeployItemTemplate {
            name: item.name.clone(),
            r#type: item.r#type.clone(),
            target,
            labels: item.labels.clone(),
            config: Some(item.config.clone()),
            depends_on: item.depends_on.clone(),
            timeout: item.timeout.clone(),
            update_on_change_only: item.update_on_change_only.then_some(true),
            on_delete: item.on_delete.clone(),
            appliance: item.appliance.clone(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execution_funcs_are_landscapers() {
        let mut a: Vec<&str> = execution_funcs(Components::default()).names().collect();
        let mut b: Vec<&str> = landscaper_template_funcs(Components::default())
            .names()
            .collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
    }
}
