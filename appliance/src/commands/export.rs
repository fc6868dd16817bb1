//! `export DIR`: the objects of the appliance as Kubernetes YAML for a full Landscaper on a
//! cluster.
//!
//! What is exported: the objects the manifest files define (the `ManifestFile` objects list
//! them in `status.objects`), that is what the user wrote. Everything the controllers made
//! (Executions, DeployItems, subinstallations, export DataObjects and Targets, export Secrets)
//! is left out, because Landscaper makes it again from the Installations; the appliance's own
//! kind (`ManifestFile`) is left out too. Objects being deleted are skipped.
//!
//! How an object is written: `apiVersion`, `kind`, `metadata` with `name`, `namespace`,
//! `labels` and `annotations` only (no uid, resourceVersion, generation, timestamps,
//! finalizers or ownerReferences, which a cluster assigns itself), and the object's content
//! without `status`. Annotations that only make sense inside the appliance are dropped: the
//! appliance's own (`appliance.landscaper-appliance.io/...`), kubectl's last applied
//! configuration, and the consumed operation annotations (`landscaper.gardener.cloud/operation`,
//! `.../reconcile-reason`): on the cluster, an Installation starts when it is annotated with
//! `landscaper.gardener.cloud/operation=reconcile`.
//!
//! Layout: `DIR/<namespace>/<kind plural>/<name>.yaml`, one object per file, plus
//! `DIR/<namespace>/00-namespace.yaml` (a `v1` Namespace) for namespaces other than `default`;
//! `kubectl apply -R -f DIR` creates the namespaces first (files are applied in name order).
//! Secrets are exported with their values: every folder is created with mode 0700, every file
//! with mode 0600, and the command warns.
//!
//! Where the objects come from: a consistent snapshot ([`crate::commands::backup::take_snapshot`]:
//! through the API of the running daemon, which needs the API token because the API redacts
//! Secrets, or from the store file when the daemon is stopped), or a backup file (`--from`).
//! One code path reads them all: the snapshot is a store file.
//!
//! `--crds DIR` checks every object against Landscaper's CustomResourceDefinitions before
//! anything is written ([`CrdSchemas`]): each CRD version's `openAPIV3Schema` is converted to a
//! JSON schema (draft 7) and validated with the `jsonschema` crate through
//! `landscaper_templating::schema`. The conversion follows Kubernetes' structural schemas: an
//! object schema without `additionalProperties` is closed (the API server would prune unknown
//! fields; here they are errors), `x-kubernetes-preserve-unknown-fields` and
//! `x-kubernetes-embedded-resource` leave it open, `nullable` admits `null`,
//! `x-kubernetes-int-or-string` admits both, and the other `x-kubernetes-*` keys are ignored.
//! `metadata` (which the API server checks itself) is checked here to hold only the exported
//! fields. ConfigMaps and Secrets are checked against built-in schemas of core `v1`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use landscaper_store::model::constants::{OPERATION_ANNOTATION, RECONCILE_REASON_ANNOTATION};
use landscaper_store::model::workflow::{APPLIANCE_FIELD, WORKFLOW_ANNOTATION};
use landscaper_store::{Kind, ObjectKey, StoreError, StoreFile, object};
use landscaper_templating::schema::CompiledSchema;
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Map, Value, json};

use crate::cli::ExportArgs;
use crate::commands::backup::{BackupError, Location, PrivateTempDir, Source, take_snapshot};
use crate::daemon::controllers::installation::dataflow::LOCAL_BLUEPRINT_PREFIX;

/// Annotations never exported (exact keys).
const DROPPED_ANNOTATIONS: [&str; 3] = [
    OPERATION_ANNOTATION,
    RECONCILE_REASON_ANNOTATION,
    "kubectl.kubernetes.io/last-applied-configuration",
];
/// Annotation prefix of the appliance's own annotations, never exported.
const APPLIANCE_ANNOTATION_PREFIX: &str = "appliance.landscaper-appliance.io/";

/// The metadata fields an exported object carries.
const EXPORTED_METADATA: [&str; 4] = ["name", "namespace", "labels", "annotations"];

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Snapshot(Box<BackupError>),
    #[error("reading {path}: {source}")]
    Store {
        path: String,
        #[source]
        source: Box<StoreError>,
    },
    #[error("{step} {path}: {source}")]
    Io {
        step: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the output folder {0} is not empty: export into a new or empty folder")]
    NotEmpty(String),
    #[error("CRD file {path}: {message}")]
    Crd { path: String, message: String },
    #[error("no CustomResourceDefinition for {kind} ({api_version}) in {dir}")]
    MissingCrd {
        kind: &'static str,
        api_version: &'static str,
        dir: String,
    },
    #[error(
        "{} exported object(s) do not match the CRDs (nothing was written):\n  {}",
        .0.len(),
        .0.join("\n  ")
    )]
    Invalid(Vec<String>),
    #[error("{key}: {message}")]
    BadObject { key: String, message: String },
    #[error("rendering YAML for {key}: {message}")]
    Yaml { key: String, message: String },
}

/// One object to write.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportedObject {
    pub key: ObjectKey,
    /// Path relative to the output folder.
    pub path: PathBuf,
    pub object: Value,
}

/// What `export` writes, decided from the store's objects alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportPlan {
    pub objects: Vec<ExportedObject>,
    /// Namespaces that get a `00-namespace.yaml`.
    pub namespaces: BTreeSet<String>,
    /// Objects left out, by kind (made by the controllers, being deleted, or `ManifestFile`s).
    pub skipped: BTreeMap<Kind, u64>,
    /// Things the user must change for a cluster.
    pub warnings: Vec<String>,
}

impl ExportPlan {
    pub fn count(&self, kind: Kind) -> usize {
        self.objects.iter().filter(|o| o.key.kind == kind).count()
    }
}

/// The keys the manifest files define.
fn defined_keys(objects: &[Value]) -> BTreeSet<ObjectKey> {
    let mut keys = BTreeSet::new();
    for file in objects
        .iter()
        .filter(|o| object::kind_of(o).ok() == Some(Kind::ManifestFile))
    {
        for reference in file
            .pointer("/status/objects")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let field = |f: &str| reference.get(f).and_then(Value::as_str).unwrap_or("");
            if let Some(kind) = Kind::from_type_meta(field("apiVersion"), field("kind")) {
                keys.insert(ObjectKey::new(kind, field("namespace"), field("name")));
            }
        }
    }
    keys
}

/// A name usable as one path segment.
fn safe_segment(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains('/')
        && !name.contains('\0')
        && !name.starts_with('.')
}

/// Decides what to export: see the module documentation.
pub fn plan(objects: &[Value]) -> Result<ExportPlan, ExportError> {
    let defined = defined_keys(objects);
    let mut plan = ExportPlan::default();
    for stored in objects {
        let key = object::key_of(stored).map_err(|e| ExportError::BadObject {
            key: format!(
                "{}/{}",
                stored["kind"].as_str().unwrap_or("?"),
                object::name(stored)
            ),
            message: e.to_string(),
        })?;
        if key.kind == Kind::ManifestFile
            || !defined.contains(&key)
            || object::deletion_timestamp(stored).is_some()
        {
            *plan.skipped.entry(key.kind).or_default() += 1;
            continue;
        }
        if !safe_segment(&key.name) || !safe_segment(&key.namespace) {
            return Err(ExportError::BadObject {
                key: key.to_string(),
                message: "the name or namespace cannot be a file name".into(),
            });
        }
        if key.kind == Kind::Installation
            && let Some(reference) = stored
                .pointer("/spec/blueprint/ref/resourceName")
                .and_then(Value::as_str)
                .filter(|r| r.starts_with(LOCAL_BLUEPRINT_PREFIX))
        {
            plan.warnings.push(format!(
                "{key}: spec.blueprint.ref.resourceName {reference} is a blueprint folder of the appliance's manifests folder, which a cluster does not have: inline it (spec.blueprint.inline.filesystem) or publish it in a component"
            ));
        }
        plan.warnings.extend(workflow_warnings(&key, stored));
        if key.namespace != object::DEFAULT_NAMESPACE {
            plan.namespaces.insert(key.namespace.clone());
        }
        plan.objects.push(ExportedObject {
            path: PathBuf::from(&key.namespace)
                .join(key.kind.plural())
                .join(format!("{}.yaml", key.name)),
            object: for_cluster(key.kind, stored),
            key,
        });
    }
    plan.objects.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(plan)
}

/// The appliance's workflow conditions (issue 19) that a full Landscaper ignores: the
/// `landscaper-appliance.io/workflow` annotation (exported, inert there) and the `appliance`
/// blocks of an Execution's deploy items (dropped: the Execution CRD's schema is closed).
fn workflow_warnings(key: &ObjectKey, stored: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if matches!(key.kind, Kind::Installation | Kind::Execution)
        && object::annotations(stored).contains_key(WORKFLOW_ANNOTATION)
    {
        out.push(format!(
            "{key}: the annotation {WORKFLOW_ANNOTATION} (workflow conditions and policies) is an appliance extension that Landscaper ignores"
        ));
    }
    if key.kind == Kind::Installation {
        // An inline blueprint's files (the deploy item and subinstallation templates) may carry
        // the `appliance` block; the templates are text, so a line starting with the field is
        // what is looked for.
        let files = stored
            .pointer("/spec/blueprint/inline/filesystem")
            .and_then(Value::as_object);
        let mut with_block: Vec<&str> = files
            .into_iter()
            .flatten()
            .filter(|(_, text)| {
                text.as_str().is_some_and(|t| {
                    t.lines().any(|l| {
                        let l = l.trim_start();
                        let l = l.strip_prefix("- ").map(str::trim_start).unwrap_or(l);
                        l.strip_prefix(APPLIANCE_FIELD)
                            .is_some_and(|rest| rest.trim_start().starts_with(':'))
                    })
                })
            })
            .map(|(name, _)| name.as_str())
            .collect();
        with_block.sort_unstable();
        if !with_block.is_empty() {
            out.push(format!(
                "{key}: the inline blueprint's {} carries workflow conditions ({APPLIANCE_FIELD}:), an appliance extension that Landscaper ignores (its items and subinstallations run without them)",
                with_block.join(", ")
            ));
        }
    }
    if key.kind == Kind::Execution {
        let items = stored
            .pointer("/spec/deployItems")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for item in items.iter().filter(|i| i.get(APPLIANCE_FIELD).is_some()) {
            out.push(format!(
                "{key}: deploy item {:?}: the workflow conditions ({APPLIANCE_FIELD}) are an appliance extension that Landscaper does not have; they are left out",
                item["name"].as_str().unwrap_or_default()
            ));
        }
    }
    out
}

/// The object as a cluster should receive it: see the module documentation.
pub fn for_cluster(kind: Kind, stored: &Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!(kind.api_version()));
    out.insert("kind".into(), json!(kind.as_str()));
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(object::name(stored)));
    if kind.namespaced() {
        metadata.insert("namespace".into(), json!(object::namespace(stored)));
    }
    let labels = object::labels(stored);
    if !labels.is_empty() {
        metadata.insert("labels".into(), json!(labels));
    }
    let annotations: BTreeMap<String, String> = object::annotations(stored)
        .into_iter()
        .filter(|(k, _)| {
            !DROPPED_ANNOTATIONS.contains(&k.as_str())
                && !k.starts_with(APPLIANCE_ANNOTATION_PREFIX)
        })
        .collect();
    if !annotations.is_empty() {
        metadata.insert("annotations".into(), json!(annotations));
    }
    out.insert("metadata".into(), Value::Object(metadata));
    if let Some(fields) = stored.as_object() {
        for (field, value) in fields {
            if !matches!(
                field.as_str(),
                "apiVersion" | "kind" | "metadata" | "status"
            ) {
                out.insert(field.clone(), value.clone());
            }
        }
    }
    if kind == Kind::Execution
        && let Some(Value::Array(items)) =
            out.get_mut("spec").and_then(|s| s.get_mut("deployItems"))
    {
        for item in items.iter_mut().filter_map(Value::as_object_mut) {
            item.remove(APPLIANCE_FIELD);
        }
    }
    Value::Object(out)
}

/// A JSON value serialised with `apiVersion`, `kind` and `metadata` (name and namespace first)
/// in front, the rest in key order.
struct Ordered<'a>(&'a Value);

impl Serialize for Ordered<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(map) = self.0.as_object() else {
            return self.0.serialize(serializer);
        };
        let first: &[&str] = &["apiVersion", "kind", "metadata", "name", "namespace"];
        let mut out = serializer.serialize_map(Some(map.len()))?;
        for key in first {
            if let Some(value) = map.get(*key) {
                if *key == "metadata" {
                    out.serialize_entry(key, &Ordered(value))?;
                } else {
                    out.serialize_entry(key, value)?;
                }
            }
        }
        for (key, value) in map {
            if !first.contains(&key.as_str()) {
                out.serialize_entry(key, value)?;
            }
        }
        out.end()
    }
}

/// The file content of one exported object.
pub fn to_yaml(object: &Value, header: &str) -> Result<String, String> {
    let body = serde_saphyr::to_string(&Ordered(object)).map_err(|e| e.to_string())?;
    Ok(format!("# {header}\n{body}"))
}

/// The CRD schemas exported objects are checked against.
#[derive(Debug, Clone)]
pub struct CrdSchemas {
    schemas: BTreeMap<Kind, CompiledSchema>,
}

/// Kinds an export may hold (the appliance's `ManifestFile` never).
const EXPORTABLE: [Kind; 8] = [
    Kind::Installation,
    Kind::Execution,
    Kind::DeployItem,
    Kind::DataObject,
    Kind::Target,
    Kind::Context,
    Kind::ConfigMap,
    Kind::Secret,
];

impl CrdSchemas {
    /// Reads every `*.yaml`, `*.yml` and `*.json` file of `dir` (many documents per file) and
    /// keeps the CustomResourceDefinitions of Landscaper's kinds, at the version the appliance
    /// writes. Every Landscaper kind needs one.
    pub fn load(dir: &Path) -> Result<CrdSchemas, ExportError> {
        let io = |step: &'static str, path: &Path| {
            let path = path.display().to_string();
            move |source| ExportError::Io { step, path, source }
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io("reading the CRD folder", dir))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                matches!(
                    p.extension().and_then(|e| e.to_str()),
                    Some("yaml" | "yml" | "json")
                )
            })
            .collect();
        files.sort();
        let mut schemas = BTreeMap::new();
        for path in files {
            let text = std::fs::read_to_string(&path).map_err(io("reading", &path))?;
            let crd_error = |message: String| ExportError::Crd {
                path: path.display().to_string(),
                message,
            };
            let documents: Vec<Value> =
                serde_saphyr::from_multiple(&text).map_err(|e| crd_error(e.to_string()))?;
            for crd in documents
                .iter()
                .filter(|d| d["kind"] == "CustomResourceDefinition")
            {
                let group = crd["spec"]["group"].as_str().unwrap_or("");
                let kind_name = crd["spec"]["names"]["kind"].as_str().unwrap_or("");
                let Some(kind) = Kind::from_kind_name(kind_name).filter(|k| k.group() == group)
                else {
                    continue;
                };
                let Some(version) = crd["spec"]["versions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|v| v["name"] == kind.version())
                else {
                    continue;
                };
                let open_api = &version["schema"]["openAPIV3Schema"];
                if !open_api.is_object() {
                    return Err(crd_error(format!(
                        "{kind_name} {}: no schema.openAPIV3Schema",
                        kind.version()
                    )));
                }
                let schema = CompiledSchema::compile_resolved(crd_json_schema(open_api))
                    .map_err(|e| crd_error(format!("{kind_name}: {e}")))?;
                schemas.insert(kind, schema);
            }
        }
        for kind in EXPORTABLE {
            if kind.group().is_empty() {
                let schema = CompiledSchema::compile_resolved(core_schema(kind)).map_err(|e| {
                    ExportError::Crd {
                        path: "(built-in)".into(),
                        message: e.to_string(),
                    }
                })?;
                schemas.insert(kind, schema);
            } else if !schemas.contains_key(&kind) {
                return Err(ExportError::MissingCrd {
                    kind: kind.as_str(),
                    api_version: kind.api_version(),
                    dir: dir.display().to_string(),
                });
            }
        }
        Ok(CrdSchemas { schemas })
    }

    /// Every way `object` does not match its CRD, as `path: message` lines.
    pub fn check(&self, object: &Value) -> Vec<String> {
        let kind = match object::kind_of(object) {
            Ok(kind) if EXPORTABLE.contains(&kind) => kind,
            _ => return vec![format!("(root): kind {} is not exported", object["kind"])],
        };
        let mut problems = Vec::new();
        if object["apiVersion"] != kind.api_version() {
            problems.push(format!(
                "/apiVersion: {} is not {}",
                object["apiVersion"],
                kind.api_version()
            ));
        }
        match object.get("metadata").and_then(Value::as_object) {
            None => problems.push("/metadata: missing".into()),
            Some(metadata) => {
                for field in metadata.keys() {
                    if !EXPORTED_METADATA.contains(&field.as_str()) {
                        problems.push(format!("/metadata/{field}: not an exported field"));
                    }
                }
                if metadata
                    .get("name")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    problems.push("/metadata/name: missing".into());
                }
                for map in ["labels", "annotations"] {
                    if let Some(value) = metadata.get(map)
                        && !value
                            .as_object()
                            .is_some_and(|m| m.values().all(Value::is_string))
                    {
                        problems.push(format!("/metadata/{map}: not a map of strings"));
                    }
                }
            }
        }
        if let Some(schema) = self.schemas.get(&kind)
            && let Err(violations) = schema.validate(object)
        {
            problems.extend(violations.iter().map(ToString::to_string));
        }
        problems
    }
}

/// The JSON schema (draft 7) of a CRD's `openAPIV3Schema`: see the module documentation.
pub fn crd_json_schema(open_api: &Value) -> Value {
    convert(open_api, true)
}

fn convert(node: &Value, root: bool) -> Value {
    let Some(map) = node.as_object() else {
        return node.clone();
    };
    let flag = |k: &str| map.get(k).and_then(Value::as_bool).unwrap_or(false);
    let open =
        flag("x-kubernetes-preserve-unknown-fields") || flag("x-kubernetes-embedded-resource");
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            k if k.starts_with("x-kubernetes-") => {}
            "description" | "nullable" | "default" | "example" | "externalDocs" => {}
            "properties" => {
                let properties = value
                    .as_object()
                    .map(|props| {
                        props
                            .iter()
                            .map(|(name, schema)| {
                                let converted = if root && name == "metadata" {
                                    // ObjectMeta: checked by the API server (and by `check`).
                                    json!({"type": "object"})
                                } else {
                                    convert(schema, false)
                                };
                                (name.clone(), converted)
                            })
                            .collect::<Map<String, Value>>()
                    })
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Object(properties));
            }
            "items" | "additionalProperties" | "not" => {
                out.insert(key.clone(), convert(value, false));
            }
            "allOf" | "anyOf" | "oneOf" => {
                let branches = value
                    .as_array()
                    .map(|b| b.iter().map(|s| convert(s, false)).collect())
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Array(branches));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if flag("x-kubernetes-int-or-string") {
        out.remove("type");
        out.insert(
            "anyOf".into(),
            json!([{"type": "integer"}, {"type": "string"}]),
        );
    }
    if flag("nullable")
        && let Some(Value::String(t)) = out.get("type").cloned()
    {
        out.insert("type".into(), json!([t, "null"]));
    }
    let is_object =
        out.get("type").and_then(Value::as_str) == Some("object") || out.contains_key("properties");
    if is_object && !open && !out.contains_key("additionalProperties") {
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    Value::Object(out)
}

/// Schemas of the core kinds (ConfigMap, Secret v1), as the Kubernetes API defines them.
fn core_schema(kind: Kind) -> Value {
    let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let mut properties = json!({
        "apiVersion": {"const": "v1"},
        "kind": {"const": kind.as_str()},
        "metadata": {"type": "object"},
        "immutable": {"type": "boolean"},
    });
    let fields = properties.as_object_mut().expect("a literal object");
    match kind {
        Kind::Secret => {
            fields.insert(
                "data".into(),
                json!({"type": "object", "additionalProperties":
                    {"type": "string", "pattern": "^[A-Za-z0-9+/]*={0,2}$"}}),
            );
            fields.insert("stringData".into(), strings);
            fields.insert("type".into(), json!({"type": "string"}));
        }
        _ => {
            fields.insert("data".into(), strings.clone());
            fields.insert("binaryData".into(), strings);
        }
    }
    json!({"type": "object", "properties": properties, "additionalProperties": false,
        "required": ["apiVersion", "kind", "metadata"]})
}

/// What an export did.
#[derive(Debug, Clone)]
pub struct ExportReport {
    pub plan: ExportPlan,
    pub revision: u64,
    pub source: Source,
}

fn create_private_dir(path: &Path) -> Result<(), ExportError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|source| ExportError::Io {
            step: "creating the folder",
            path: path.display().to_string(),
            source,
        })
}

fn write_private_file(path: &Path, content: &str) -> Result<(), ExportError> {
    let io = |step: &'static str| {
        let path = path.display().to_string();
        move |source| ExportError::Io { step, path, source }
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io("creating"))?;
    file.write_all(content.as_bytes()).map_err(io("writing"))
}

/// Writes a plan into `dir` (which must not exist or be empty).
pub fn write_plan(plan: &ExportPlan, dir: &Path, header: &str) -> Result<(), ExportError> {
    if dir.exists() {
        let mut entries = std::fs::read_dir(dir).map_err(|source| ExportError::Io {
            step: "reading the output folder",
            path: dir.display().to_string(),
            source,
        })?;
        if entries.next().is_some() {
            return Err(ExportError::NotEmpty(dir.display().to_string()));
        }
    }
    create_private_dir(dir)?;
    for namespace in &plan.namespaces {
        let folder = dir.join(namespace);
        create_private_dir(&folder)?;
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
        let text = to_yaml(&ns, header).map_err(|message| ExportError::Yaml {
            key: format!("Namespace {namespace}"),
            message,
        })?;
        write_private_file(&folder.join("00-namespace.yaml"), &text)?;
    }
    for exported in &plan.objects {
        let path = dir.join(&exported.path);
        if let Some(parent) = path.parent() {
            create_private_dir(parent)?;
        }
        let text = to_yaml(&exported.object, header).map_err(|message| ExportError::Yaml {
            key: exported.key.to_string(),
            message,
        })?;
        write_private_file(&path, &text)?;
    }
    Ok(())
}

/// `export DIR`.
pub fn export(
    args: &ExportArgs,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<ExportReport, ExportError> {
    // The CRDs first: a bad folder fails before a snapshot is taken.
    let crds = args.crds.as_deref().map(CrdSchemas::load).transpose()?;
    let (contents, source) = match &args.from {
        Some(file) => (read_store_file(file)?, Source::File(file.clone())),
        None => {
            let location = Location::resolve(&args.location, None, args.access.server.as_deref())
                .map_err(BackupError::from)?;
            // The snapshot holds every Secret: a private folder beside the output.
            let parent = args
                .dir
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let temp = PrivateTempDir::new(Some(parent))?;
            let path = temp.path().join("snapshot.redb");
            let snapshot = take_snapshot(&location, args.access.token_file.as_deref(), &path)?;
            (read_store_file(&path)?, snapshot.source)
        }
    };
    let plan = plan(&contents.objects)?;
    if let Some(crds) = &crds {
        let problems: Vec<String> = plan
            .objects
            .iter()
            .flat_map(|o| {
                crds.check(&o.object)
                    .into_iter()
                    .map(move |p| format!("{}: {p}", o.key))
            })
            .collect();
        if !problems.is_empty() {
            return Err(ExportError::Invalid(problems));
        }
    }
    let header = format!(
        "exported by landscaper-appliance {} from revision {}",
        env!("CARGO_PKG_VERSION"),
        contents.revision
    );
    write_plan(&plan, &args.dir, &header)?;
    for warning in &plan.warnings {
        let _ = writeln!(err, "warning: {warning}");
    }
    if plan.count(Kind::Secret) > 0 {
        let _ = writeln!(
            err,
            "warning: {} holds {} Secrets with their values (files mode 0600): keep it private and delete it once applied",
            args.dir.display(),
            plan.count(Kind::Secret)
        );
    }
    let counts: Vec<String> = EXPORTABLE
        .iter()
        .filter(|k| plan.count(**k) > 0)
        .map(|k| format!("{}: {}", k.plural(), plan.count(*k)))
        .collect();
    let skipped: Vec<String> = plan
        .skipped
        .iter()
        .map(|(k, n)| format!("{}: {n}", k.plural()))
        .collect();
    let _ = writeln!(
        out,
        "exported {} objects ({}) from {source}, revision {}, to {}",
        plan.objects.len(),
        if counts.is_empty() {
            "none".into()
        } else {
            counts.join(", ")
        },
        contents.revision,
        args.dir.display()
    );
    if !skipped.is_empty() {
        let _ = writeln!(
            out,
            "left out (made by the controllers or the appliance; Landscaper makes them again): {}",
            skipped.join(", ")
        );
    }
    if crds.is_some() {
        let _ = writeln!(out, "every object matches the CRDs");
    }
    let _ = writeln!(
        out,
        "apply with `kubectl apply -R -f {}`; start an Installation with `kubectl annotate installation NAME landscaper.gardener.cloud/operation=reconcile`",
        args.dir.display()
    );
    Ok(ExportReport {
        revision: contents.revision,
        source,
        plan,
    })
}

impl From<BackupError> for ExportError {
    fn from(error: BackupError) -> Self {
        ExportError::Snapshot(Box::new(error))
    }
}

fn read_store_file(path: &Path) -> Result<landscaper_store::StoreContents, ExportError> {
    let store_error = |source| ExportError::Store {
        path: path.display().to_string(),
        source: Box::new(source),
    };
    StoreFile::open(path)
        .and_then(|f| f.read_all())
        .map_err(store_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest_file(refs: Value) -> Value {
        json!({"apiVersion": "appliance.landscaper-appliance.io/v1alpha1", "kind": "ManifestFile",
            "metadata": {"name": "a.yaml", "uid": "u-mf"}, "spec": {"path": "a.yaml"},
            "status": {"objects": refs}})
    }

    fn reference(kind: Kind, ns: &str, name: &str) -> Value {
        json!({"apiVersion": kind.api_version(), "kind": kind.as_str(), "namespace": ns, "name": name})
    }

    fn stored_installation() -> Value {
        json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
            "metadata": {"name": "root", "namespace": "edge", "uid": "u1", "resourceVersion": "7",
                "generation": 2, "creationTimestamp": "2026-01-01T00:00:00Z",
                "finalizers": ["finalizer.landscaper.gardener.cloud"],
                "labels": {"team": "a"},
                "annotations": {"landscaper.gardener.cloud/operation": "reconcile",
                    "appliance.landscaper-appliance.io/redacted": "true", "note": "kept"}},
            "spec": {"blueprint": {"inline": {"filesystem": {"blueprint.yaml": "x"}}},
                "imports": {"targets": [{"name": "cluster", "target": "my-cluster"}]}},
            "status": {"phase": "Succeeded", "observedGeneration": 2}})
    }

    #[test]
    fn exports_what_the_manifest_files_define_without_server_fields() {
        let generated_sub = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1",
            "kind": "Installation", "metadata": {"name": "root-sub", "namespace": "edge",
            "ownerReferences": [{"uid": "u1"}]}, "spec": {}});
        let execution = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1",
            "kind": "Execution", "metadata": {"name": "root", "namespace": "edge"}, "spec": {}});
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "kc", "namespace": "default", "uid": "u2"},
            "type": "Opaque", "data": {"kubeconfig": "c2VjcmV0"}});
        let deleting = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "going", "namespace": "default",
                "deletionTimestamp": "2026-01-01T00:00:00Z"}, "data": {}});
        let objects = vec![
            stored_installation(),
            generated_sub,
            execution,
            secret,
            deleting,
            manifest_file(json!([
                reference(Kind::Installation, "edge", "root"),
                reference(Kind::Secret, "default", "kc"),
                reference(Kind::ConfigMap, "default", "going"),
            ])),
        ];
        let plan = plan(&objects).unwrap();
        let paths: Vec<&str> = plan
            .objects
            .iter()
            .map(|o| o.path.to_str().unwrap())
            .collect();
        assert_eq!(
            paths,
            ["default/secrets/kc.yaml", "edge/installations/root.yaml"]
        );
        assert_eq!(plan.namespaces, BTreeSet::from(["edge".to_string()]));
        assert_eq!(
            plan.skipped,
            BTreeMap::from([
                (Kind::Installation, 1),
                (Kind::Execution, 1),
                (Kind::ConfigMap, 1),
                (Kind::ManifestFile, 1)
            ])
        );
        let inst = &plan.objects[1].object;
        assert_eq!(
            inst["metadata"],
            json!({"name": "root", "namespace": "edge", "labels": {"team": "a"},
                "annotations": {"note": "kept"}})
        );
        assert!(inst.get("status").is_none());
        assert_eq!(inst["spec"], stored_installation()["spec"]);
        // Secrets keep their values.
        assert_eq!(plan.objects[0].object["data"]["kubeconfig"], "c2VjcmV0");
        let yaml = to_yaml(inst, "header").unwrap();
        assert!(
            yaml.starts_with(
                "# header\napiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Installation\nmetadata:\n  name: root\n  namespace: edge\n"
            ),
            "{yaml}"
        );
    }

    #[test]
    fn warns_about_workflow_conditions_in_an_inline_blueprint() {
        let mut inst = stored_installation();
        inst["spec"]["blueprint"] = json!({"inline": {"filesystem": {
            "blueprint.yaml": "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\nsubinstallations:\n- file: /a.yaml\n  appliance:\n    reconcilePrecondition: imports.on\n",
            "deploy.yaml": "deployItems:\n  - name: x\n    appliance: {readyPostcondition: 'true'}\n",
            "plain.yaml": "deployItems:\n  - name: y\n    config: {applianceName: z}\n",
        }}});
        let plan = plan(&[
            inst,
            manifest_file(json!([reference(Kind::Installation, "edge", "root")])),
        ])
        .unwrap();
        assert_eq!(plan.warnings.len(), 1, "{:?}", plan.warnings);
        assert!(
            plan.warnings[0].contains("blueprint.yaml, deploy.yaml carries workflow conditions"),
            "{:?}",
            plan.warnings
        );
        // Without a block: no warning.
        let plan = super::plan(&[
            stored_installation(),
            manifest_file(json!([reference(Kind::Installation, "edge", "root")])),
        ])
        .unwrap();
        assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    }

    #[test]
    fn warns_about_workflow_conditions_and_drops_them_from_execution_items() {
        let mut inst = stored_installation();
        inst["metadata"]["annotations"][WORKFLOW_ANNOTATION] =
            json!("failurePolicy: ContinueIndependent");
        let execution = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1",
            "kind": "Execution", "metadata": {"name": "exec", "namespace": "edge"},
            "spec": {"deployItems": [
                {"name": "a", "type": "t", "appliance": {"reconcilePrecondition": "imports.on"}},
                {"name": "b", "type": "t"}]}});
        let plan = plan(&[
            inst,
            execution,
            manifest_file(json!([
                reference(Kind::Installation, "edge", "root"),
                reference(Kind::Execution, "edge", "exec")
            ])),
        ])
        .unwrap();
        assert_eq!(plan.warnings.len(), 2, "{:?}", plan.warnings);
        assert!(
            plan.warnings
                .iter()
                .any(|w| w.contains(WORKFLOW_ANNOTATION))
        );
        assert!(
            plan.warnings
                .iter()
                .any(|w| w.contains("deploy item \"a\""))
        );
        let exec = plan
            .objects
            .iter()
            .find(|o| o.key.kind == Kind::Execution)
            .unwrap();
        assert_eq!(
            exec.object["spec"]["deployItems"],
            json!([{"name": "a", "type": "t"}, {"name": "b", "type": "t"}])
        );
        let inst = plan
            .objects
            .iter()
            .find(|o| o.key.kind == Kind::Installation)
            .unwrap();
        assert_eq!(
            inst.object["metadata"]["annotations"][WORKFLOW_ANNOTATION],
            "failurePolicy: ContinueIndependent"
        );
    }

    #[test]
    fn warns_about_blueprints_of_the_manifests_folder() {
        let mut inst = stored_installation();
        inst["spec"]["blueprint"] = json!({"ref": {"resourceName": "local://blueprints/app"}});
        let plan = plan(&[
            inst,
            manifest_file(json!([reference(Kind::Installation, "edge", "root")])),
        ])
        .unwrap();
        assert_eq!(plan.warnings.len(), 1);
        assert!(plan.warnings[0].contains("local://blueprints/app"));
    }

    /// A small CRD of our own: closed spec, an open config, a nullable and an int-or-string.
    fn fixture_crd() -> Value {
        serde_saphyr::from_str(
            r#"
type: object
required: [spec]
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object}
  spec:
    type: object
    required: [type]
    properties:
      type: {type: string}
      config:
        x-kubernetes-preserve-unknown-fields: true
      port:
        x-kubernetes-int-or-string: true
      note:
        type: string
        nullable: true
      refs:
        type: array
        items:
          type: object
          properties:
            name: {type: string}
      labels:
        type: object
        additionalProperties: {type: string}
"#,
        )
        .unwrap()
    }

    #[test]
    fn converted_crd_schemas_are_closed_where_kubernetes_prunes() {
        let schema = CompiledSchema::compile_resolved(crd_json_schema(&fixture_crd())).unwrap();
        let ok = json!({"apiVersion": "x/v1", "kind": "T", "metadata": {"name": "a", "anything": 1},
            "spec": {"type": "t", "config": {"free": {"form": [1]}}, "port": "http", "note": null,
                "refs": [{"name": "r"}], "labels": {"a": "b"}}});
        assert!(schema.is_valid(&ok), "{:?}", schema.validate(&ok));
        assert!(schema.is_valid(&json!({"spec": {"type": "t", "port": 8080}})));
        for bad in [
            json!({"spec": {"type": "t", "unknown": 1}}),
            json!({"spec": {"type": "t", "refs": [{"name": "r", "extra": true}]}}),
            json!({"spec": {"type": "t"}, "status": {}}),
            json!({"spec": {"type": "t", "labels": {"a": 1}}}),
            json!({"spec": {"type": "t", "port": true}}),
            json!({"spec": {}}),
        ] {
            assert!(!schema.is_valid(&bad), "{bad}");
        }
        // The x-kubernetes keys are gone.
        assert!(
            !crd_json_schema(&fixture_crd())
                .to_string()
                .contains("x-kubernetes")
        );
    }

    fn shared_crds() -> Option<PathBuf> {
        let dir = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/design/landscaper-crds"
        ));
        if dir.is_dir() {
            Some(dir)
        } else {
            println!("SKIP: {} is absent", dir.display());
            None
        }
    }

    #[test]
    fn exported_objects_match_landscapers_crds() {
        let Some(dir) = shared_crds() else {
            return;
        };
        let crds = CrdSchemas::load(&dir).unwrap();
        let target = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
            "metadata": {"name": "c", "namespace": "edge", "uid": "u"},
            "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster",
                "config": {"kubeconfig": "apiVersion: v1"}}});
        let data = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DataObject",
            "metadata": {"name": "d", "namespace": "edge"}, "data": {"replicas": 2}});
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "m", "namespace": "edge"}, "data": {"k": "v"}});
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "edge"}, "type": "Opaque", "data": {"k": "dg=="}});
        for stored in [stored_installation(), target, data, cm, secret] {
            let kind = object::kind_of(&stored).unwrap();
            let exported = for_cluster(kind, &stored);
            assert_eq!(crds.check(&exported), Vec::<String>::new(), "{exported}");
            // The stored form (server fields, status) is not what a cluster takes.
            if kind == Kind::Installation {
                let problems = crds.check(&stored);
                assert!(
                    problems.iter().any(|p| p.contains("/metadata/uid")),
                    "{problems:?}"
                );
            }
        }
        let mut unknown = for_cluster(Kind::Installation, &stored_installation());
        unknown["spec"]["bogus"] = json!(1);
        let problems = crds.check(&unknown);
        assert!(problems.iter().any(|p| p.contains("bogus")), "{problems:?}");
    }

    #[test]
    fn a_crd_folder_must_cover_every_landscaper_kind() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("targets.yaml"),
            serde_saphyr::to_string(&json!({"apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "spec": {"group": "landscaper.gardener.cloud", "names": {"kind": "Target"},
                    "versions": [{"name": "v1alpha1", "schema": {"openAPIV3Schema": fixture_crd()}}]}}))
            .unwrap(),
        )
        .unwrap();
        let err = CrdSchemas::load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("no CustomResourceDefinition for Installation"),
            "{err}"
        );
    }

    #[test]
    fn writes_private_files_into_an_empty_folder_only() {
        use std::os::unix::fs::PermissionsExt;
        let plan = plan(&[
            stored_installation(),
            manifest_file(json!([reference(Kind::Installation, "edge", "root")])),
        ])
        .unwrap();
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("out");
        write_plan(&plan, &dir, "h").unwrap();
        let file = dir.join("edge/installations/root.yaml");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&dir.join("edge/00-namespace.yaml")), 0o600);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("edge")), 0o700);
        let back: Value = serde_saphyr::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(back, plan.objects[0].object);
        assert!(matches!(
            write_plan(&plan, &dir, "h"),
            Err(ExportError::NotEmpty(_))
        ));
    }
}
