//! Rendering a chart's templates as Helm's `pkg/engine` does: every template of the chart and
//! its dependencies parsed into one set named `gotpl` (longest paths first), each non-partial
//! template executed with its chart's `.Values`, `.Chart`, `.Files`, `.Subcharts`,
//! `.Release`, `.Capabilities` and `.Template`, `<no value>` removed from the output.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;

use landscaper_templating::RenderBudget;
use landscaper_templating::gotemplate::funcs::helm::{HELM_ERR_END, HELM_ERR_START};
use landscaper_templating::gotemplate::function::{Arity, FuncError, GoType};
use landscaper_templating::gotemplate::methods::KUBE_VERSION_TYPE;
use landscaper_templating::gotemplate::value::{Elem, MapRef, lazy_map, new_map};
use landscaper_templating::gotemplate::{
    EmptyFiles, ErrorKind, FuncMap, Limits, Template, TemplateError, Value,
};

use crate::chart::{Chart, Metadata};
use crate::values::{new_table, table};
use crate::{ChartError, Lookup};

/// Helm's `--kube-version` and what `.Capabilities.KubeVersion` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeVersion {
    pub version: String,
    pub major: String,
    pub minor: String,
}

impl Default for KubeVersion {
    /// Helm 3.19's default (the client-go it was built with).
    fn default() -> Self {
        KubeVersion {
            version: "v1.34.0".into(),
            major: "1".into(),
            minor: "34".into(),
        }
    }
}

impl KubeVersion {
    /// `chartutil.ParseKubeVersion` (apimachinery's `ParseGeneric`): `v1.33`, `1.33.0`...
    pub fn parse(text: &str) -> Result<KubeVersion, String> {
        let t = text.trim_start();
        let t = t.strip_prefix('v').unwrap_or(t);
        let end = t
            .char_indices()
            .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
            .map_or(t.len(), |(i, _)| i);
        let mut numbers = &t[..end];
        // The regexp wants digit groups separated by single dots.
        while numbers.ends_with('.') {
            numbers = &numbers[..numbers.len() - 1];
        }
        let parts: Vec<&str> = numbers.split('.').collect();
        if numbers.is_empty() || parts.iter().any(|p| p.is_empty()) {
            return Err(format!("could not parse \"{text}\" as version"));
        }
        if parts.len() < 2 {
            return Err(format!("illegal version string \"{text}\""));
        }
        let mut comps = Vec::new();
        for p in &parts {
            if p.len() > 1 && p.starts_with('0') {
                return Err(format!(
                    "illegal zero-prefixed version component \"{p}\" in \"{text}\""
                ));
            }
            let n: u32 = p
                .parse()
                .map_err(|_| format!("illegal version component \"{p}\" in \"{text}\""))?;
            comps.push(n.to_string());
        }
        Ok(KubeVersion {
            version: format!("v{}", comps.join(".")),
            major: comps[0].clone(),
            minor: comps[1].clone(),
        })
    }
}

/// The group/versions Helm 3.19 knows without a cluster (`chartutil.DefaultVersionSet`: the
/// client-go scheme plus apiextensions).
pub const DEFAULT_API_VERSIONS: &[&str] = &[
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1beta1",
    "admissionregistration.k8s.io/v1alpha1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta2",
    "apps/v1beta1",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1beta1",
    "authentication.k8s.io/v1alpha1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2",
    "autoscaling/v2beta1",
    "autoscaling/v2beta2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1",
    "coordination.k8s.io/v1",
    "coordination.k8s.io/v1beta1",
    "coordination.k8s.io/v1alpha2",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1beta1",
    "node.k8s.io/v1alpha1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "resource.k8s.io/v1",
    "resource.k8s.io/v1beta2",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1alpha1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1beta1",
    "storage.k8s.io/v1alpha1",
    "storagemigration.k8s.io/v1alpha1",
    "apiextensions.k8s.io/v1",
    "apiextensions.k8s.io/v1beta1",
];

/// `action.GetVersionSet`: every served group version (`apps/v1`) and every kind of a group
/// version's resources (`apps/v1/Deployment`, subresource kinds included, each once), from
/// discovery given as (group version, kinds of its resources). Discovery that found nothing
/// gives Helm's default set. Sorted (Helm's order is a Go map's).
pub fn version_set(discovery: &[(String, Vec<String>)]) -> Vec<String> {
    if discovery.is_empty() {
        return DEFAULT_API_VERSIONS.iter().map(|s| s.to_string()).collect();
    }
    let mut set = BTreeSet::new();
    for (group_version, kinds) in discovery {
        set.insert(group_version.clone());
        for kind in kinds {
            // Go's path.Join: an empty kind adds nothing.
            if kind.is_empty() {
                continue;
            }
            set.insert(format!("{group_version}/{kind}"));
        }
    }
    set.into_iter().collect()
}

/// An object as client-go's unstructured JSON decoding gives it to templates: integers are
/// `int64`, other numbers `float64`.
pub fn unstructured_value(json: &serde_json::Value) -> Value {
    match json {
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int64(i),
            None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::Array(items) => {
            Value::list(items.iter().map(unstructured_value).collect())
        }
        serde_json::Value::Object(map) => Value::map(
            map.iter()
                .map(|(k, v)| (k.clone(), unstructured_value(v)))
                .collect(),
        ),
        other => Value::from_json(other),
    }
}

/// Helm's `lookup` on a cluster: the object, a list object, or an empty map when not found.
fn insert_lookup(funcs: &mut FuncMap, lookup: Arc<dyn Lookup>) {
    funcs.insert("lookup", Arity::Exact(4), move |_, a| {
        let text = landscaper_templating::gotemplate::funcs::args::string;
        let (api_version, kind, namespace, name) =
            (text(&a[0])?, text(&a[1])?, text(&a[2])?, text(&a[3])?);
        match lookup.lookup(&api_version, &kind, &namespace, &name) {
            Ok(Some(object)) => Ok(unstructured_value(&serde_json::Value::Object(object))),
            Ok(None) => Ok(Value::empty_map()),
            Err(e) => Err(FuncError::new(e)),
        }
    });
    const PARAMS: &[GoType] = &[
        GoType::String,
        GoType::String,
        GoType::String,
        GoType::String,
    ];
    funcs.set_params("lookup", PARAMS);
}

/// The release a chart is rendered for.
#[derive(Debug, Clone)]
pub struct ReleaseOptions {
    pub name: String,
    pub namespace: String,
    pub revision: i64,
    pub is_install: bool,
    pub is_upgrade: bool,
}

/// `.Capabilities`.
#[derive(Debug, Clone, Default)]
pub struct Capabilities {
    pub kube_version: KubeVersion,
    /// Every API version (`Has`), defaults included.
    pub api_versions: Vec<String>,
}

impl Capabilities {
    /// Helm's offline capabilities: the default API versions plus `extra`.
    pub fn offline(kube_version: KubeVersion, extra: &[String]) -> Self {
        let mut api_versions: Vec<String> =
            DEFAULT_API_VERSIONS.iter().map(|s| s.to_string()).collect();
        api_versions.extend(extra.iter().cloned());
        Capabilities {
            kube_version,
            api_versions,
        }
    }

    /// The capabilities of a cluster (`action.Configuration.getCapabilities`): its version and
    /// [`version_set`] of its discovery.
    pub fn discovered(kube_version: KubeVersion, discovery: &[(String, Vec<String>)]) -> Self {
        Capabilities {
            kube_version,
            api_versions: version_set(discovery),
        }
    }

    pub fn to_value(&self) -> Value {
        let s = |x: &str| Value::string(x);
        let kv = Value::typed_map(
            Elem::Struct(KUBE_VERSION_TYPE),
            BTreeMap::from([
                ("Version".into(), s(&self.kube_version.version)),
                ("Major".into(), s(&self.kube_version.major)),
                ("Minor".into(), s(&self.kube_version.minor)),
            ]),
        );
        let hv = Value::typed_map(
            Elem::Struct("version.BuildInfo"),
            BTreeMap::from([
                ("Version".into(), s("v3.19.0")),
                (
                    "GitCommit".into(),
                    s("3d8990f0836691f0229297773f3524598f46bda6"),
                ),
                ("GitTreeState".into(), s("clean")),
                ("GoVersion".into(), s("go1.24.7")),
            ]),
        );
        let apis = Value::typed_list(
            Elem::VersionSet,
            self.api_versions.iter().map(|a| s(a)).collect(),
        );
        Value::typed_map(
            Elem::Struct("*chartutil.Capabilities"),
            BTreeMap::from([
                ("KubeVersion".into(), kv),
                ("APIVersions".into(), apis),
                ("HelmVersion".into(), hv),
            ]),
        )
    }
}

fn string_list(items: &[String]) -> Value {
    Value::string_list(items.iter().map(String::as_str))
}

/// `.Chart`: Helm's `chart.Metadata` with `IsRoot`.
fn metadata_value(md: &Metadata, is_root: bool) -> Value {
    let s = |x: &str| Value::string(x);
    let maintainers = Value::list(
        md.maintainers
            .iter()
            .map(|m| {
                Value::typed_map(
                    Elem::Struct("*chart.Maintainer"),
                    BTreeMap::from([
                        ("Name".into(), s(&m.name)),
                        ("Email".into(), s(&m.email)),
                        ("URL".into(), s(&m.url)),
                    ]),
                )
            })
            .collect(),
    );
    let deps = Value::list(
        md.dependencies
            .iter()
            .map(|d| {
                Value::typed_map(
                    Elem::Struct("*chart.Dependency"),
                    BTreeMap::from([
                        ("Name".into(), s(&d.name)),
                        ("Version".into(), s(&d.version)),
                        ("Repository".into(), s(&d.repository)),
                        ("Condition".into(), s(&d.condition)),
                        ("Tags".into(), string_list(&d.tags)),
                        ("Enabled".into(), Value::Bool(d.enabled)),
                        (
                            "ImportValues".into(),
                            Value::list(d.import_values.iter().map(Value::from_json).collect()),
                        ),
                        ("Alias".into(), s(&d.alias)),
                    ]),
                )
            })
            .collect(),
    );
    let annotations = Value::typed_map(
        Elem::String,
        md.annotations
            .iter()
            .map(|(k, v)| (k.clone(), s(v)))
            .collect(),
    );
    Value::typed_map(
        Elem::Struct("struct { chart.Metadata; IsRoot bool }"),
        BTreeMap::from([
            ("Name".into(), s(&md.name)),
            ("Home".into(), s(&md.home)),
            ("Sources".into(), string_list(&md.sources)),
            ("Version".into(), s(&md.version)),
            ("Description".into(), s(&md.description)),
            ("Keywords".into(), string_list(&md.keywords)),
            ("Maintainers".into(), maintainers),
            ("Icon".into(), s(&md.icon)),
            ("APIVersion".into(), s(&md.api_version)),
            ("Condition".into(), s(&md.condition)),
            ("Tags".into(), s(&md.tags)),
            ("AppVersion".into(), s(&md.app_version)),
            ("Deprecated".into(), Value::Bool(md.deprecated)),
            ("Annotations".into(), annotations),
            ("KubeVersion".into(), s(&md.kube_version)),
            ("Dependencies".into(), deps),
            ("Type".into(), s(&md.chart_type)),
            ("IsRoot".into(), Value::Bool(is_root)),
        ]),
    )
}

/// `.Files`, made when a template of the chart first looks at it (a copy of every file of the
/// chart: the CRDs of a big chart are megabytes most templates never read).
fn files_value(c: &Chart) -> Value {
    let files: Vec<(String, Arc<[u8]>)> = c
        .files
        .iter()
        .map(|f| (f.name.clone(), Arc::clone(&f.data)))
        .collect();
    Value::Map(lazy_map(Elem::Files, move || {
        files
            .iter()
            .map(|(name, data)| (name.clone(), Value::Bytes(Rc::from(&data[..]))))
            .collect()
    }))
}

struct Renderable {
    text: Rc<str>,
    vals: MapRef,
    base_path: String,
}

/// `recAllTpls`: the templates of the chart tree with the data each one sees.
fn all_templates(
    c: &Chart,
    full_path: &str,
    is_root: bool,
    parent: &MapRef,
    out: &mut BTreeMap<String, Renderable>,
) -> MapRef {
    let sub_charts = new_table();
    let next = new_table();
    {
        let mut n = next.borrow_mut();
        n.insert("Chart".into(), metadata_value(&c.metadata, is_root));
        n.insert("Files".into(), files_value(c));
        let p = parent.borrow();
        n.insert(
            "Release".into(),
            p.get("Release").cloned().unwrap_or_default(),
        );
        n.insert(
            "Capabilities".into(),
            p.get("Capabilities").cloned().unwrap_or_default(),
        );
        let values = if is_root {
            p.get("Values").cloned().unwrap_or_else(Value::empty_map)
        } else {
            match table(parent, &format!("Values.{}", c.name())) {
                Some(t) => Value::Map(t),
                None => Value::empty_map(),
            }
        };
        n.insert("Values".into(), values);
        n.insert("Subcharts".into(), Value::Map(sub_charts.clone()));
    }
    for child in &c.dependencies {
        let child_path = format!("{full_path}/charts/{}", child.name());
        let v = all_templates(child, &child_path, false, &next, out);
        sub_charts
            .borrow_mut()
            .insert(child.name().to_string(), Value::Map(v));
    }
    let library = c.is_library();
    for t in &c.templates {
        let base = t.name.rsplit('/').next().unwrap_or(&t.name);
        if library && !base.starts_with('_') {
            continue;
        }
        out.insert(
            format!("{full_path}/{}", t.name),
            Renderable {
                text: Rc::from(String::from_utf8_lossy(&t.data).as_ref()),
                vals: next.clone(),
                base_path: format!("{full_path}/templates"),
            },
        );
    }
    next
}

/// `sortTemplates`: deepest paths first, then reverse lexical order.
fn sort_templates(names: &mut [String]) {
    names.sort_by(|a, b| {
        let (ca, cb) = (a.matches('/').count(), b.matches('/').count());
        cb.cmp(&ca).then_with(|| b.cmp(a))
    });
}

/// `cleanupParseError`.
fn parse_error(filename: &str, e: &TemplateError) -> ChartError {
    let msg = &e.message;
    let tokens: Vec<&str> = msg.split(": ").collect();
    if tokens.len() == 1 {
        return ChartError::Render(format!("parse error in ({filename}): {msg}"));
    }
    ChartError::Render(format!(
        "parse error at ({}): {}",
        tokens[1],
        tokens[tokens.len() - 1]
    ))
}

/// `cleanupExecError`.
fn exec_error(filename: &str, e: &TemplateError) -> ChartError {
    if e.kind != ErrorKind::Exec {
        return ChartError::Render(e.message.clone());
    }
    let tokens: Vec<&str> = e.message.splitn(3, ": ").collect();
    if tokens.len() != 3 {
        return ChartError::Render(format!("execution error in ({filename}): {}", e.message));
    }
    if let Some(start) = tokens[2].find(HELM_ERR_START) {
        let rest = &tokens[2][start + HELM_ERR_START.len()..];
        if let Some(end) = rest.rfind(HELM_ERR_END) {
            return ChartError::Render(format!(
                "execution error at ({}): {}",
                tokens[1],
                &rest[..end]
            ));
        }
    }
    ChartError::Render(e.message.clone())
}

/// The budget of one template execution of a chart.
pub fn chart_limits() -> Limits {
    Limits {
        max_depth: 100,
        budget: RenderBudget {
            max_steps: 50_000_000,
            max_output_bytes: 64 << 20,
            max_alloc_bytes: 1 << 30,
            ..RenderBudget::default()
        },
        ..Limits::default()
    }
}

/// `Engine.Render`: rendered text by template path (`CHART/templates/x.yaml`), partials left
/// out. `top` holds `Values`, `Release` and `Capabilities`; `lookup`, when given, answers
/// `lookup` (else it is an empty map, as offline). `each` sees every output as soon as it is
/// rendered.
pub fn render(
    c: &Chart,
    top: &MapRef,
    limits: &Limits,
    lookup: Option<&Arc<dyn Lookup>>,
    each: &mut dyn FnMut(&str, &str),
) -> Result<BTreeMap<String, String>, ChartError> {
    let mut tpls = BTreeMap::new();
    all_templates(c, c.name(), true, top, &mut tpls);
    let mut funcs: FuncMap = landscaper_templating::gotemplate::funcs::helm_template_funcs();
    if let Some(lookup) = lookup {
        insert_lookup(&mut funcs, lookup.clone());
    }
    let mut set =
        Template::parse("gotpl", "", &funcs).map_err(|e| ChartError::Render(e.message))?;
    let mut keys: Vec<String> = tpls.keys().cloned().collect();
    sort_templates(&mut keys);
    for name in &keys {
        set.add_shared(name, Rc::clone(&tpls[name].text))
            .map_err(|e| parse_error(name, &e))?;
    }
    let mut rendered = BTreeMap::new();
    for name in &keys {
        let base = name.rsplit('/').next().unwrap_or(name);
        if base.starts_with('_') {
            continue;
        }
        let r = &tpls[name];
        let template = new_map(
            Elem::Interface,
            BTreeMap::from([
                ("Name".to_string(), Value::string(name.as_str())),
                ("BasePath".to_string(), Value::string(r.base_path.as_str())),
            ]),
        );
        r.vals
            .borrow_mut()
            .insert("Template".into(), Value::Map(template));
        let out = set
            .execute(
                name,
                &Value::Map(r.vals.clone()),
                &funcs,
                &EmptyFiles,
                limits,
            )
            .map_err(|e| exec_error(name, &e))?;
        let out = out.replace("<no value>", "");
        each(name, &out);
        rendered.insert(name.clone(), out);
    }
    if crate::ONE_SHOT_PROCESS.load(std::sync::atomic::Ordering::Relaxed) {
        // The process exits after this render: freeing every parsed node one by one was a
        // few percent of a short `render chart`.
        std::mem::forget(set);
        std::mem::forget(tpls);
    }
    Ok(rendered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_versions_parse_as_helm() {
        assert_eq!(
            KubeVersion::parse("1.33.0").unwrap(),
            KubeVersion {
                version: "v1.33.0".into(),
                major: "1".into(),
                minor: "33".into()
            }
        );
        assert_eq!(KubeVersion::parse("v1.29").unwrap().version, "v1.29");
        assert!(KubeVersion::parse("1").is_err());
        assert!(KubeVersion::parse("x").is_err());
    }

    #[test]
    fn templates_sort_deepest_first() {
        let mut v: Vec<String> = ["a/templates/x", "a/charts/b/templates/y", "a/templates/z"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        sort_templates(&mut v);
        assert_eq!(
            v,
            ["a/charts/b/templates/y", "a/templates/z", "a/templates/x"]
        );
    }

    #[test]
    fn version_sets_hold_group_versions_and_kinds_once() {
        let discovery = vec![
            (
                "v1".to_string(),
                vec!["Pod".to_string(), "Pod".to_string(), "Eviction".to_string()],
            ),
            (
                "apps/v1".to_string(),
                vec!["Deployment".to_string(), "Scale".to_string()],
            ),
            // A group version whose resources could not be read still counts.
            ("metrics.k8s.io/v1beta1".to_string(), Vec::new()),
        ];
        assert_eq!(
            version_set(&discovery),
            [
                "apps/v1",
                "apps/v1/Deployment",
                "apps/v1/Scale",
                "metrics.k8s.io/v1beta1",
                "v1",
                "v1/Eviction",
                "v1/Pod",
            ]
        );
        // Nothing discovered: Helm's default set (group versions only).
        let defaults = version_set(&[]);
        assert!(defaults.iter().any(|v| v == "apps/v1"));
        assert!(!defaults.iter().any(|v| v == "apps/v1/Deployment"));
        let caps = Capabilities::discovered(KubeVersion::default(), &discovery);
        assert_eq!(caps.api_versions.len(), 7);
    }

    #[test]
    fn unstructured_numbers_are_int64_or_float64() {
        let v = unstructured_value(&serde_json::json!({"a": 3, "b": 1.5, "c": [1], "d": "x"}));
        let Value::Map(m) = v else { panic!("map") };
        let m = m.borrow();
        assert!(matches!(m.get("a"), Some(Value::Int64(3))));
        assert!(matches!(m.get("b"), Some(Value::Float(f)) if *f == 1.5));
        assert!(
            matches!(m.get("c"), Some(Value::List(l)) if matches!(l.items.first(), Some(Value::Int64(1))))
        );
    }
}
