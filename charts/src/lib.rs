//! Helm 3 charts in-process: loading ([`chart`]), values ([`values`], [`strvals`]),
//! rendering ([`engine`]) and Helm's install order ([`sort`]), on top of the Go-template
//! engine of `landscaper-templating`. [`template`] does what `helm template` does.
//!
//! Sandbox: templates see the chart's own files only (`.Files`), no environment, no network
//! (`lookup` is empty offline); every template execution has the engine's budget.

pub mod chart;
pub mod engine;
#[doc(hidden)]
pub mod fuzzing;
pub mod ignore;
mod semver;
pub mod sort;
pub mod strvals;
pub mod values;

use std::collections::BTreeMap;
use std::sync::Arc;

use landscaper_templating::gotemplate::Value;
use landscaper_templating::gotemplate::value::MapRef;

pub use chart::{Chart, load, load_archive, load_dir};
pub use engine::{Capabilities, KubeVersion, ReleaseOptions, version_set};
pub use semver::is_compatible_range;
pub use sort::Manifest;

static ONE_SHOT_PROCESS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Tells the engine that this process renders and exits (a command such as `render chart`):
/// parsed templates are then left to the process' exit instead of being freed one by one.
/// Never for the daemon, which would leak them.
pub fn one_shot_process() {
    ONE_SHOT_PROCESS.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// What went wrong, naming the step.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ChartError {
    #[error("loading chart {chart}: {message}")]
    Load { chart: String, message: String },
    #[error("{0}")]
    Values(String),
    #[error("{0}")]
    Dependencies(String),
    #[error(
        "values don't meet the specifications of the schema(s) in the following chart(s):\n{0}"
    )]
    Schema(String),
    #[error("{0}")]
    KubeVersion(String),
    #[error("{0}")]
    Render(String),
    #[error("{0}")]
    Usage(String),
}

impl ChartError {
    /// The message without the step's prefix.
    pub fn message(&self) -> String {
        match self {
            ChartError::Load { chart, message } if chart.is_empty() => message.clone(),
            ChartError::Load { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }
}

/// Helm's `lookup apiVersion kind namespace name` against a cluster. Rendering is synchronous:
/// an implementation blocks until the cluster answered (and bounds how long and how often).
pub trait Lookup: Send + Sync {
    /// The object as a map (`name` set), a list object with `items` (`name` empty), or `None`
    /// when there is no such object or kind (Helm then returns an empty map). Any other
    /// failure is an error: the render fails with `error calling lookup: <message>`.
    fn lookup(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<serde_json::Map<String, serde_json::Value>>, String>;
}

impl std::fmt::Debug for dyn Lookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lookup")
    }
}

/// Options of `helm template`.
#[derive(Debug, Clone)]
pub struct TemplateOptions {
    pub release: ReleaseOptions,
    pub capabilities: Capabilities,
    pub include_crds: bool,
    pub skip_tests: bool,
    pub show_only: Vec<String>,
    /// `lookup` against a cluster; `None` renders offline (`lookup` is an empty map, as with
    /// `helm template`).
    pub lookup: Option<Arc<dyn Lookup>>,
    /// `--skip-schema-validation`: `values.schema.json` files are not checked.
    pub skip_schema_validation: bool,
}

/// A rendered release: CRDs (from `crds/` folders), manifests and hooks in install order.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// (path, content) of every `crds/` file of the chart and its enabled dependencies.
    pub crds: Vec<(String, String)>,
    pub manifests: Vec<Manifest>,
    pub hooks: Vec<Manifest>,
    /// The chart's own rendered `templates/NOTES.txt` (subcharts' notes are not kept), as
    /// Helm stores it in a release's `info.notes`; empty without one.
    pub notes: String,
}

/// User values from `-f` files (YAML texts, merged in order) and `--set-json`, `--set`,
/// `--set-string` (Helm's `values.Options.MergeValues`).
#[derive(Debug, Clone, Default)]
pub struct ValueOptions {
    /// (name for messages, YAML text).
    pub files: Vec<(String, String)>,
    pub json_values: Vec<String>,
    pub values: Vec<String>,
    pub string_values: Vec<String>,
}

impl ValueOptions {
    pub fn merge(&self) -> Result<MapRef, ChartError> {
        let mut base = values::new_table();
        for (name, text) in &self.files {
            let current = match landscaper_templating::gotemplate::funcs::yaml::unmarshal(text) {
                Ok(Value::Map(m)) => m,
                Ok(Value::Nil) => values::new_table(),
                Ok(other) => {
                    return Err(ChartError::Values(format!(
                        "failed to parse {name}: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                        landscaper_templating::gotemplate::funcs::json::kind_word(&other)
                    )));
                }
                Err(e) => return Err(ChartError::Values(format!("failed to parse {name}: {e}"))),
            };
            base = values::merge_maps(&base, &current);
        }
        for v in &self.json_values {
            strvals::parse_json(v, &base)
                .map_err(|_| ChartError::Values(format!("failed parsing --set-json data {v}")))?;
        }
        for v in &self.values {
            strvals::parse_into(v, &base)
                .map_err(|e| ChartError::Values(format!("failed parsing --set data: {e}")))?;
        }
        for v in &self.string_values {
            strvals::parse_into_string(v, &base).map_err(|e| {
                ChartError::Values(format!("failed parsing --set-string data: {e}"))
            })?;
        }
        Ok(base)
    }
}

/// `CheckDependencies`: every dependency of Chart.yaml is present in `charts/`.
fn check_dependencies(c: &Chart) -> Result<(), ChartError> {
    let missing: Vec<&str> = c
        .metadata
        .dependencies
        .iter()
        .filter(|r| !c.dependencies.iter().any(|d| d.name() == r.name))
        .map(|r| r.name.as_str())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(ChartError::Dependencies(format!(
        "An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: {}",
        missing.join(", ")
    )))
}

/// One `values.schema.json` and the values it checks, as plain JSON (so that the check can run
/// on another thread while the templates render).
struct SchemaCheck {
    chart: String,
    schema: serde_json::Value,
    instance: serde_json::Value,
}

/// `ValidateAgainstSchema`, first half: the chart's and every subchart's schema with its values,
/// in Helm's order; a schema or values that cannot be read end the list with their error.
fn schema_checks(c: &Chart, vals: &MapRef, out: &mut Vec<Result<SchemaCheck, ChartError>>) {
    if let Some(schema) = &c.schema {
        let check = serde_json::from_slice(schema)
            .map_err(|e| {
                ChartError::Schema(format!("{}:\ninvalid values.schema.json: {e}\n", c.name()))
            })
            .and_then(|schema| {
                let instance = Value::Map(vals.clone())
                    .to_json()
                    .map_err(|e| ChartError::Values(e.to_string()))?;
                Ok(SchemaCheck {
                    chart: c.name().to_string(),
                    schema,
                    instance,
                })
            });
        let failed = check.is_err();
        out.push(check);
        if failed {
            return;
        }
    }
    for sub in &c.dependencies {
        let sv = match vals.borrow().get(sub.name()) {
            Some(Value::Map(m)) => m.clone(),
            _ => values::new_table(),
        };
        schema_checks(sub, &sv, out);
        if out.last().is_some_and(Result::is_err) {
            return;
        }
    }
}

/// `ValidateAgainstSchema`, second half: compiles and applies each schema in order; the
/// violations of all charts in Helm's words, or the first schema that does not compile.
fn run_schema_checks(checks: &[Result<SchemaCheck, ChartError>]) -> Result<(), ChartError> {
    let mut out = String::new();
    for check in checks {
        let SchemaCheck {
            chart,
            schema,
            instance,
        } = check.as_ref().map_err(Clone::clone)?;
        let draft = jsonschema::Draft::Draft202012.detect(schema);
        let validator = jsonschema::options()
            .with_draft(draft)
            .with_retriever(NoRemote)
            .build(schema)
            .map_err(|e| ChartError::Schema(format!("{chart}:\n{e}\n")))?;
        let all: Vec<(String, String, bool)> = validator
            .iter_errors(instance)
            .map(|e| {
                let at = e.instance_path().as_str().to_string();
                let is_type = matches!(
                    e.kind(),
                    jsonschema::error::ValidationErrorKind::Type { .. }
                );
                (at, schema_message(&e), is_type)
            })
            .collect();
        // Where a value has the wrong type, Helm's validator reports only that.
        let errors: Vec<String> = all
            .iter()
            .filter(|(at, _, is_type)| *is_type || !all.iter().any(|(a, _, t)| *t && a == at))
            .map(|(at, msg, _)| format!("- at '{at}': {msg}"))
            .collect();
        if !errors.is_empty() {
            out.push_str(&format!("{chart}:\n{}\n", errors.join("\n")));
        }
    }
    if out.is_empty() {
        Ok(())
    } else {
        Err(ChartError::Schema(out))
    }
}

/// A violation in the words of Helm's validator (santhosh-tekuri/jsonschema v6) where they
/// are known, else the validator's own.
fn schema_message(e: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::{TypeKind, ValidationErrorKind as K};
    let quote_all = |items: &mut dyn Iterator<Item = String>| {
        items
            .map(|s| format!("'{s}'"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let json_type = |v: &serde_json::Value| match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    };
    match e.kind() {
        K::Type { kind } => {
            let want = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            format!("got {}, want {want}", json_type(e.instance()))
        }
        K::Required { property } => match property {
            serde_json::Value::String(p) => format!("missing property '{p}'"),
            other => format!("missing property {other}"),
        },
        K::AdditionalProperties { unexpected } => {
            let names = quote_all(&mut unexpected.iter().cloned());
            if unexpected.len() == 1 {
                format!("additional property {names} not allowed")
            } else {
                format!("additional properties {names} not allowed")
            }
        }
        K::Enum { options } => match options.as_ref() {
            serde_json::Value::Array(items) => format!(
                "value must be one of {}",
                items
                    .iter()
                    .map(|v| match v {
                        serde_json::Value::String(s) => format!("'{s}'"),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            other => format!("value must be one of {other}"),
        },
        _ => e.to_string(),
    }
}

struct NoRemote;

impl jsonschema::Retrieve for NoRemote {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<serde_json::Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("cannot load {uri}: no network or file access while rendering charts").into())
    }
}

/// Renders a chart as `helm template` (install, revision 1): dependencies processed, values
/// coalesced and validated, `kubeVersion` checked, templates rendered and sorted.
pub fn render(
    chart: Chart,
    user_values: &MapRef,
    opts: &TemplateOptions,
) -> Result<Rendered, ChartError> {
    render_limited(chart, user_values, opts, &engine::chart_limits())
}

/// [`render`] with the given limits for each template execution.
pub fn render_limited(
    mut chart: Chart,
    user_values: &MapRef,
    opts: &TemplateOptions,
    limits: &landscaper_templating::gotemplate::Limits,
) -> Result<Rendered, ChartError> {
    if !matches!(chart.metadata.chart_type.as_str(), "" | "application") {
        return Err(ChartError::Usage(format!(
            "{} charts are not installable",
            chart.metadata.chart_type
        )));
    }
    check_dependencies(&chart)?;
    values::process_dependencies(&mut chart, user_values)?;
    let vals = values::coalesce_values(&chart, Some(user_values), false)?;
    let mut checks = Vec::new();
    if !opts.skip_schema_validation {
        schema_checks(&chart, &vals, &mut checks);
    }
    // Offline (no `lookup`: the templates reach nothing outside), the schemas are checked on a
    // second thread while the templates render; their verdict still comes first, as in Helm,
    // which checks before it renders. With a cluster to look up, strictly one after the other.
    if opts.lookup.is_some() || !checks.iter().any(Result::is_ok) {
        run_schema_checks(&checks)?;
        return render_validated(chart, vals, opts, limits);
    }
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("values-schema".into())
            .stack_size(SCHEMA_CHECK_STACK)
            .spawn_scoped(scope, || run_schema_checks(&checks));
        let Ok(worker) = worker else {
            run_schema_checks(&checks)?;
            return render_validated(chart, vals, opts, limits);
        };
        let rendered = render_validated(chart, vals, opts, limits);
        worker.join().unwrap_or_else(|_| {
            Err(ChartError::Render(
                "checking the values against the schema panicked".into(),
            ))
        })?;
        rendered
    })
}

type Sorted = (Vec<Manifest>, Vec<Manifest>);

/// Renders the templates and sorts their documents (`sort_manifests`, NOTES.txt files left
/// out) on a second thread as the outputs come: reading every document's head is a YAML parse
/// of the whole output. The errors are those of rendering first, then of the first bad
/// document in path order, as when sorting after rendering.
fn render_and_sort(
    chart: &Chart,
    top: &MapRef,
    limits: &landscaper_templating::gotemplate::Limits,
    opts: &TemplateOptions,
) -> Result<(BTreeMap<String, String>, Sorted), ChartError> {
    let sort_after = || -> Result<(BTreeMap<String, String>, Sorted), ChartError> {
        let files = engine::render(chart, top, limits, opts.lookup.as_ref(), &mut |_, _| {})?;
        let mut per_file = Vec::new();
        for (path, content) in files.iter().filter(|(k, _)| !k.ends_with("NOTES.txt")) {
            per_file.push(sort::classify_file(path, content)?);
        }
        Ok((files, sort::sort_classified(per_file)))
    };
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel::<(String, String)>();
        let sorter = std::thread::Builder::new()
            .name("manifest-sort".into())
            .stack_size(SORT_STACK)
            .spawn_scoped(scope, move || {
                rx.into_iter()
                    .map(|(path, content)| {
                        let docs = sort::classify_file(&path, &content);
                        (path, docs)
                    })
                    .collect::<BTreeMap<_, _>>()
            });
        let Ok(sorter) = sorter else {
            return sort_after();
        };
        let mut send = |path: &str, out: &str| {
            if !path.ends_with("NOTES.txt") {
                let _ = tx.send((path.to_string(), out.to_string()));
            }
        };
        let rendered = engine::render(chart, top, limits, opts.lookup.as_ref(), &mut send);
        // The sorter's input ends here, whatever the render's outcome.
        drop(tx);
        let classified = sorter
            .join()
            .map_err(|_| ChartError::Render("sorting the manifests panicked".into()))?;
        let files = rendered?;
        let mut per_file = Vec::with_capacity(classified.len());
        for (_, docs) in classified {
            per_file.push(docs?);
        }
        Ok((files, sort::sort_classified(per_file)))
    })
}

/// The sorter parses YAML documents as deep as the render thread's.
const SORT_STACK: usize = 64 << 20;

/// Schemas nest; give the validator's recursion room.
const SCHEMA_CHECK_STACK: usize = 16 << 20;

/// [`render_limited`] after the values were checked: `kubeVersion`, then the templates.
fn render_validated(
    chart: Chart,
    vals: MapRef,
    opts: &TemplateOptions,
    limits: &landscaper_templating::gotemplate::Limits,
) -> Result<Rendered, ChartError> {
    let kube = &opts.capabilities.kube_version;
    if !chart.metadata.kube_version.is_empty()
        && !is_compatible_range(&chart.metadata.kube_version, &kube.version)
    {
        return Err(ChartError::KubeVersion(format!(
            "chart requires kubeVersion: {} which is incompatible with Kubernetes {}",
            chart.metadata.kube_version, kube.version
        )));
    }
    let release = &opts.release;
    let top = values::new_table();
    {
        let mut t = top.borrow_mut();
        t.insert("Values".into(), Value::Map(vals));
        t.insert(
            "Release".into(),
            Value::map(BTreeMap::from([
                ("Name".into(), Value::string(release.name.as_str())),
                (
                    "Namespace".into(),
                    Value::string(release.namespace.as_str()),
                ),
                ("IsUpgrade".into(), Value::Bool(release.is_upgrade)),
                ("IsInstall".into(), Value::Bool(release.is_install)),
                ("Revision".into(), Value::Int(release.revision)),
                ("Service".into(), Value::string("Helm")),
            ])),
        );
        t.insert("Capabilities".into(), opts.capabilities.to_value());
    }
    let (files, (hooks, manifests)) = render_and_sort(&chart, &top, limits, opts)?;
    let notes = files
        .get(&format!("{}/templates/NOTES.txt", chart.name()))
        .cloned()
        .unwrap_or_default();
    let crds = if opts.include_crds {
        chart
            .crd_objects(chart.name())
            .into_iter()
            .map(|(p, d)| (p, String::from_utf8_lossy(&d).into_owned()))
            .collect()
    } else {
        Vec::new()
    };
    Ok(Rendered {
        crds,
        manifests,
        hooks,
        notes,
    })
}

/// The stdout of `helm template` for a rendered release.
pub fn template_output(r: &Rendered, opts: &TemplateOptions) -> Result<String, ChartError> {
    // One buffer sized for everything, no intermediate strings per document (output copies were
    // ~5 % of a big chart's render).
    const HEAD: &str = "---\n# Source: ";
    let size = |path: &str, data: &str| HEAD.len() + path.len() + data.len() + 2;
    let capacity = r.crds.iter().map(|(p, d)| size(p, d)).sum::<usize>()
        + r.manifests
            .iter()
            .map(|m| size(&m.path, &m.content))
            .sum::<usize>()
        + r.hooks
            .iter()
            .map(|h| size(&h.path, &h.content))
            .sum::<usize>()
        + 1;
    let mut out = String::with_capacity(capacity);
    let push = |out: &mut String, path: &str, data: &str| {
        out.push_str(HEAD);
        out.push_str(path);
        out.push('\n');
        out.push_str(data);
        out.push('\n');
    };
    for (path, data) in &r.crds {
        push(&mut out, path, data);
    }
    for m in &r.manifests {
        push(&mut out, &m.path, &m.content);
    }
    // Helm trims the CRDs and manifests (not the hooks) and ends them with one newline.
    let start = out.len() - out.trim_start().len();
    let len = out.trim().len();
    out.truncate(start + len);
    out.drain(..start);
    out.push('\n');
    for h in &r.hooks {
        if opts.skip_tests && h.is_test_hook() {
            continue;
        }
        push(&mut out, &h.path, &h.content);
    }
    if opts.show_only.is_empty() {
        return Ok(out);
    }
    let source = regex::Regex::new("# Source: [^/]+/(.+)").expect("constant regex");
    let docs = sort::split_manifests(&out);
    let mut shown = String::new();
    for f in &opts.show_only {
        let pattern = ignore::go_match_regex(f);
        let mut missing = true;
        for doc in &docs {
            let Some(m) = source.captures(doc) else {
                continue;
            };
            let path = &m[1];
            if pattern.as_ref().is_some_and(|p| p.is_match(path)) {
                shown.push_str(&format!("---\n{doc}\n"));
                missing = false;
            }
        }
        if missing {
            return Err(ChartError::Usage(format!(
                "could not find template {f} in chart"
            )));
        }
    }
    Ok(shown)
}

/// `helm template`: load nothing, render `chart` with the values, print as Helm prints.
pub fn template(
    chart: Chart,
    values: &ValueOptions,
    opts: &TemplateOptions,
) -> Result<String, ChartError> {
    let user = values.merge()?;
    let rendered = render(chart, &user, opts)?;
    template_output(&rendered, opts)
}
