//! Admission of manifest objects: typed parsing, unknown-field warnings and semantic checks
//! (`apis/core/validation/*.go` plus the API server's metadata and ConfigMap/Secret rules).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use super::constants::KUBERNETES_CLUSTER_TARGET_TYPE;
use super::cron::validate_cron_spec;
use super::kind::Kind;
use super::meta::ObjectMeta;
use super::names::{
    is_config_map_key, is_dns1123_label, is_dns1123_subdomain, is_qualified_name,
    is_valid_label_value, max_len_error,
};
use super::resource::{Resource, to_value};
use super::shared::is_set;
use super::workflow::{ExtensionPlace, WORKFLOW_ANNOTATION, WorkflowExtension};
use super::{
    ConfigMap, Context, DataObject, DeployItem, DeployItemTemplate, Execution, Installation,
    ManifestFile, Secret, Target, TransportArchive,
};

/// Max length of an Installation name: 63 minus the length of `Inst.` (label values).
pub const INSTALLATION_NAME_MAX_LENGTH: usize = 58;
/// Max `generateName` of an Installation: the name limit minus 5 random characters.
pub const INSTALLATION_GENERATE_NAME_MAX_LENGTH: usize = 53;
/// Max total size of annotations (keys plus values), as on an API server.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
/// Max total size of a ConfigMap's or Secret's data.
pub const MAX_DATA_SIZE: usize = 1024 * 1024;

/// An object that passed [`validate_object`].
#[derive(Debug, Clone, PartialEq)]
pub struct ValidatedObject {
    pub kind: Kind,
    /// The typed object re-serialised: unknown fields are gone.
    pub object: Value,
    /// One `unknown field "<path>"` entry per dropped field, in input order.
    pub warnings: Vec<String>,
}

/// A rejected field, Kubernetes style: `spec.type: Required value: type must not be empty`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ModelError {
    pub field: String,
    pub message: String,
}

impl ModelError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> ModelError {
        ModelError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// `Required value[: detail]`.
    pub fn required(field: impl Into<String>, detail: &str) -> ModelError {
        ModelError::new(field, with_detail("Required value".to_owned(), detail))
    }

    /// `Invalid value: "<value>": detail`.
    pub fn invalid(field: impl Into<String>, value: &str, detail: &str) -> ModelError {
        ModelError::new(
            field,
            with_detail(format!("Invalid value: {value:?}"), detail),
        )
    }

    /// `Invalid value: detail`, for values too large to quote.
    pub fn invalid_omit_value(field: impl Into<String>, detail: &str) -> ModelError {
        ModelError::new(field, with_detail("Invalid value".to_owned(), detail))
    }

    /// `Duplicate value: "<value>"`.
    pub fn duplicate(field: impl Into<String>, value: &str) -> ModelError {
        ModelError::new(field, format!("Duplicate value: {value:?}"))
    }

    /// `Forbidden: detail`.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> ModelError {
        ModelError::new(field, with_detail("Forbidden".to_owned(), detail))
    }

    /// `Too long: must have at most N bytes`.
    pub fn too_long(field: impl Into<String>, max: usize) -> ModelError {
        ModelError::new(field, format!("Too long: must have at most {max} bytes"))
    }

    /// A decoding error with its dotted path (`spec.imports.data[0].dataRef`).
    pub(crate) fn from_path_error(err: serde_path_to_error::Error<serde_json::Error>) -> Self {
        let path = err.path().to_string();
        let field = if path == "." {
            "object".to_owned()
        } else {
            path
        };
        ModelError::new(field, err.into_inner().to_string())
    }
}

fn with_detail(mut head: String, detail: &str) -> String {
    if !detail.is_empty() {
        head.push_str(": ");
        head.push_str(detail);
    }
    head
}

/// Parses a JSON value (decoded from a manifest) into its typed kind and back.
pub fn validate_object(value: &Value) -> Result<ValidatedObject, ModelError> {
    match resolve_kind(value)? {
        Kind::Installation => admit::<Installation>(value, check_installation),
        Kind::Execution => admit::<Execution>(value, check_execution),
        Kind::DeployItem => admit::<DeployItem>(value, check_deploy_item),
        Kind::DataObject => admit::<DataObject>(value, |_, _| {}),
        Kind::Target => admit_content::<Target>(value, check_target),
        Kind::Context => admit::<Context>(value, |_, _| {}),
        Kind::ConfigMap => admit::<ConfigMap>(value, check_config_map),
        Kind::Secret => admit_content::<Secret>(value, check_secret),
        Kind::ManifestFile => admit::<ManifestFile>(value, check_manifest_file),
        Kind::TransportArchive => {
            admit::<TransportArchive>(value, |a, errs| check_folder_path(&a.spec.path, errs))
        }
    }
}

fn resolve_kind(value: &Value) -> Result<Kind, ModelError> {
    let Value::Object(map) = value else {
        return Err(ModelError::new(
            "object",
            format!("invalid type: {}, expected an object", describe(value)),
        ));
    };
    let text = |field: &str| -> Result<&str, ModelError> {
        match map.get(field) {
            None | Some(Value::Null) => Err(ModelError::required(field, "")),
            Some(Value::String(s)) if s.is_empty() => Err(ModelError::required(field, "")),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(ModelError::new(
                field,
                format!("invalid type: {}, expected a string", describe(other)),
            )),
        }
    };
    let api_version = text("apiVersion")?;
    let kind = text("kind")?;
    Kind::from_type_meta(api_version, kind).ok_or_else(|| {
        let known_version = Kind::ALL.iter().any(|k| k.api_version() == api_version);
        ModelError::new(
            if known_version { "kind" } else { "apiVersion" },
            format!("unknown kind {kind:?} in apiVersion {api_version:?}"),
        )
    })
}

/// serde's wording for an unexpected JSON value.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) if n.is_f64() => format!("floating point `{n}`"),
        Value::Number(n) => format!("integer `{n}`"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "sequence".to_owned(),
        Value::Object(_) => "map".to_owned(),
    }
}

fn admit<T: Resource>(
    value: &Value,
    check: fn(&T, &mut Vec<ModelError>),
) -> Result<ValidatedObject, ModelError> {
    admit_with(value, check, ModelError::from_path_error)
}

/// [`admit`] for kinds whose content is a credential (Secret, Target): decoding errors go
/// through [`content_decode_error`], which never quotes a value.
fn admit_content<T: Resource>(
    value: &Value,
    check: fn(&T, &mut Vec<ModelError>),
) -> Result<ValidatedObject, ModelError> {
    admit_with(value, check, |e| content_decode_error(value, e))
}

fn admit_with<T: Resource>(
    value: &Value,
    check: fn(&T, &mut Vec<ModelError>),
    decode_error: impl FnOnce(serde_path_to_error::Error<serde_json::Error>) -> ModelError,
) -> Result<ValidatedObject, ModelError> {
    let mut warnings = Vec::new();
    let typed: T = {
        let mut report = |path: serde_ignored::Path<'_>| {
            warnings.push(format!("unknown field \"{}\"", format_ignored_path(&path)));
        };
        let de = serde_ignored::Deserializer::new(value, &mut report);
        serde_path_to_error::deserialize(de).map_err(decode_error)?
    };
    let mut errs = Vec::new();
    check_metadata(T::KIND, typed.metadata(), &mut errs);
    check(&typed, &mut errs);
    match errs.into_iter().next() {
        Some(first) => Err(first),
        None => Ok(ValidatedObject {
            kind: T::KIND,
            object: to_value(&typed),
            warnings,
        }),
    }
}

/// The decoding error of a Secret or Target, worded from the field path, the *shape* of the
/// value found there and what was expected, never from the value: serde's own messages quote
/// values (`invalid type: string "hunter2", expected a map`), and these errors end up in
/// `ManifestFile` status, events, the status page and logs, which anyone may read.
pub fn content_decode_error(
    input: &Value,
    err: serde_path_to_error::Error<serde_json::Error>,
) -> ModelError {
    use serde_path_to_error::Segment;
    let mut found = Some(input);
    for segment in err.path().iter() {
        found = match segment {
            Segment::Map { key } => found.and_then(|v| v.get(key.as_str())),
            Segment::Seq { index } => found.and_then(|v| v.get(*index)),
            Segment::Enum { .. } | Segment::Unknown => None,
        };
    }
    let path = err.path().to_string();
    let field = if path == "." {
        "object".to_owned()
    } else {
        path
    };
    let message = err.into_inner().to_string();
    ModelError::new(field, content_problem(&message, found))
}

/// What [`content_decode_error`] says: serde's kind of problem and its `expected ...` part
/// (which comes from the type, not the input), with the value replaced by its shape.
fn content_problem(serde_message: &str, found: Option<&Value>) -> String {
    let expected = serde_message
        .rfind(", expected ")
        .map(|at| &serde_message[at + 2..])
        // `expected` texts are short type descriptions; anything else is not repeated.
        .filter(|e| e.len() <= 80 && !e.contains(['"', '`', '\'']));
    let shape = found.map(shape_of).unwrap_or("a value");
    let head = if serde_message.starts_with("missing field") {
        // `missing field `type``: a field name from the type.
        return serde_message
            .split_once('`')
            .and_then(|(_, rest)| rest.split_once('`'))
            .map(|(name, _)| format!("missing field {name:?}"))
            .unwrap_or_else(|| "missing field".to_owned());
    } else if serde_message.starts_with("invalid type") {
        format!("invalid type: {shape}")
    } else {
        format!("invalid value: {shape}")
    };
    match expected {
        Some(expected) => format!("{head}, {expected}"),
        None => head,
    }
}

/// A value's JSON type, as error messages name it without showing the value.
fn shape_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a map",
    }
}

/// `spec.imports.data[0].foo`, the way an API server names unknown fields.
fn format_ignored_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", format_ignored_path(parent)),
        Path::Map { parent, key } => {
            let head = format_ignored_path(parent);
            if head.is_empty() {
                key.clone()
            } else {
                format!("{head}.{key}")
            }
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => format_ignored_path(parent),
    }
}

// --- metadata ---------------------------------------------------------------------------------

fn check_metadata(kind: Kind, meta: &ObjectMeta, errs: &mut Vec<ModelError>) {
    // Landscaper validates Installation names as DNS labels; other kinds as subdomains.
    let name_rule: fn(&str) -> Vec<String> = if kind == Kind::Installation {
        is_dns1123_label
    } else {
        is_dns1123_subdomain
    };
    let name = meta.name();
    let generate_name = meta.generate_name.as_deref().unwrap_or_default();
    if name.is_empty() {
        if generate_name.is_empty() {
            errs.push(ModelError::required(
                "metadata.name",
                "name or generateName is required",
            ));
        }
    } else {
        for msg in name_rule(name) {
            errs.push(ModelError::invalid("metadata.name", name, &msg));
        }
    }
    if !generate_name.is_empty() {
        // A trailing dash is fine in a prefix (random characters follow).
        let masked = match generate_name.strip_suffix('-') {
            Some(head) if !head.is_empty() => format!("{head}a"),
            _ => generate_name.to_owned(),
        };
        for msg in name_rule(&masked) {
            errs.push(ModelError::invalid(
                "metadata.generateName",
                generate_name,
                &msg,
            ));
        }
    }
    let namespace = meta.namespace();
    if kind.namespaced() {
        if !namespace.is_empty() {
            for msg in is_dns1123_label(namespace) {
                errs.push(ModelError::invalid("metadata.namespace", namespace, &msg));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(ModelError::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    errs.extend(validate_labels_and_annotations(
        meta.labels.as_ref(),
        meta.annotations.as_ref(),
    ));
    if kind == Kind::Installation {
        if name.len() > INSTALLATION_NAME_MAX_LENGTH {
            errs.push(ModelError::invalid(
                "metadata.name",
                name,
                &max_len_error(INSTALLATION_NAME_MAX_LENGTH),
            ));
        } else if generate_name.len() > INSTALLATION_GENERATE_NAME_MAX_LENGTH {
            errs.push(ModelError::invalid(
                "metadata.generateName",
                generate_name,
                &max_len_error(INSTALLATION_GENERATE_NAME_MAX_LENGTH),
            ));
        }
    }
}

/// The rules for `metadata.labels` and `metadata.annotations` (keys are qualified names,
/// label values are label values, annotations are at most [`TOTAL_ANNOTATION_SIZE_LIMIT`]
/// bytes together), shared by the manifest ingest and the API's `PATCH`.
pub fn validate_labels_and_annotations(
    labels: Option<&BTreeMap<String, String>>,
    annotations: Option<&BTreeMap<String, String>>,
) -> Vec<ModelError> {
    let mut errs = Vec::new();
    if let Some(labels) = labels {
        check_labels(labels, "metadata.labels", &mut errs);
    }
    if let Some(annotations) = annotations {
        let mut total = 0;
        for (key, value) in annotations {
            for msg in is_qualified_name(&key.to_lowercase()) {
                errs.push(ModelError::invalid("metadata.annotations", key, &msg));
            }
            total += key.len() + value.len();
        }
        if total > TOTAL_ANNOTATION_SIZE_LIMIT {
            errs.push(ModelError::too_long(
                "metadata.annotations",
                TOTAL_ANNOTATION_SIZE_LIMIT,
            ));
        }
    }
    errs
}

fn check_labels(labels: &BTreeMap<String, String>, path: &str, errs: &mut Vec<ModelError>) {
    for (key, value) in labels {
        for msg in is_qualified_name(key) {
            errs.push(ModelError::invalid(path, key, &msg));
        }
        for msg in is_valid_label_value(value) {
            errs.push(ModelError::invalid(path, value, &msg));
        }
    }
}

/// Landscaper's `ValidateExactlyOneOf`, reported with the JSON field names.
fn exactly_one_of(path: &str, candidates: &[(&str, bool)], errs: &mut Vec<ModelError>) {
    let names: Vec<&str> = candidates.iter().map(|(n, _)| *n).collect();
    let set: Vec<&str> = candidates
        .iter()
        .filter(|(_, s)| *s)
        .map(|(n, _)| *n)
        .collect();
    let all = names.join(", ");
    if set.is_empty() {
        errs.push(ModelError::required(
            path,
            &format!("exactly one of [{all}] must be set (currently set: none)"),
        ));
    } else if set.len() > 1 {
        errs.push(ModelError::invalid_omit_value(
            path,
            &format!(
                "exactly one of [{all}] must be set (currently set: [{}])",
                set.join(", ")
            ),
        ));
    }
}

fn non_empty(s: &Option<String>) -> bool {
    s.as_deref().is_some_and(|s| !s.is_empty())
}

// --- Installation -----------------------------------------------------------------------------

fn check_installation(inst: &Installation, errs: &mut Vec<ModelError>) {
    check_workflow_annotation(&inst.metadata, ExtensionPlace::Installation, errs);
    let spec = &inst.spec;
    let mut import_names = BTreeSet::new();
    for (i, imp) in spec.data_imports().iter().enumerate() {
        let path = format!("spec.imports.data[{i}]");
        exactly_one_of(
            &path,
            &[
                ("dataRef", non_empty(&imp.data_ref)),
                ("secretRef", imp.secret_ref.is_some()),
                ("configMapRef", imp.config_map_ref.is_some()),
            ],
            errs,
        );
        if imp.secret_ref.as_ref().is_some_and(|r| r.name.is_empty()) {
            errs.push(ModelError::required(
                format!("{path}.secretRef.name"),
                "name must not be empty",
            ));
        }
        if imp
            .config_map_ref
            .as_ref()
            .is_some_and(|r| r.name.is_empty())
        {
            errs.push(ModelError::required(
                format!("{path}.configMapRef.name"),
                "name must not be empty",
            ));
        }
        if imp.name.is_empty() {
            errs.push(ModelError::required(
                format!("{path}.name"),
                "name must not be empty",
            ));
        } else if !import_names.insert(imp.name.as_str()) {
            errs.push(ModelError::duplicate(path, &imp.name));
        }
    }
    for (i, imp) in spec.target_imports().iter().enumerate() {
        let path = format!("spec.imports.targets[{i}]");
        if imp.name.is_empty() {
            errs.push(ModelError::required(
                format!("{path}.name"),
                "name must not be empty",
            ));
        }
        exactly_one_of(
            &path,
            &[
                ("target", non_empty(&imp.target)),
                ("targets", imp.targets.is_some()),
                ("targetMap", imp.target_map.is_some()),
                ("targetMapRef", non_empty(&imp.target_map_ref)),
                ("targetListRef", non_empty(&imp.target_list_ref)),
            ],
            errs,
        );
        for (j, target) in imp.targets.iter().flatten().enumerate() {
            if target.is_empty() {
                errs.push(ModelError::required(
                    format!("{path}.targets[{j}]"),
                    "target must not be empty",
                ));
            }
        }
        for (key, target) in imp.target_map.iter().flatten() {
            let key_path = format!("{path}.targetMap[{key}]");
            if !is_target_map_key(key) {
                errs.push(ModelError::invalid(
                    key_path.clone(),
                    key,
                    "key must contain only lower-case alphanumeric characters, dots, or dashes; \
                     it must begin and end with a lower-case alphanumeric character; \
                     it must not be empty, and not longer than 63 characters",
                ));
            }
            if target.is_empty() {
                errs.push(ModelError::required(key_path, "target must not be empty"));
            }
        }
        if !imp.name.is_empty() && !import_names.insert(imp.name.as_str()) {
            errs.push(ModelError::duplicate(path, &imp.name));
        }
    }

    let mut export_names = BTreeSet::new();
    for (i, exp) in spec.data_exports().iter().enumerate() {
        let path = format!("spec.exports.data[{i}]");
        if exp.data_ref.is_empty() {
            errs.push(ModelError::required(
                format!("{path}.dataRef"),
                "dataRef must not be empty",
            ));
        }
        if exp.name.is_empty() {
            errs.push(ModelError::required(
                format!("{path}.name"),
                "name must not be empty",
            ));
        } else if !export_names.insert(exp.name.as_str()) {
            errs.push(ModelError::duplicate(path, &exp.name));
        }
    }
    let mut export_names = BTreeSet::new();
    for (i, exp) in spec.target_exports().iter().enumerate() {
        let path = format!("spec.exports.targets[{i}]");
        if exp.target.is_empty() {
            errs.push(ModelError::required(
                format!("{path}.target"),
                "target must not be empty",
            ));
        }
        if exp.name.is_empty() {
            errs.push(ModelError::required(
                format!("{path}.name"),
                "name must not be empty",
            ));
        } else if !export_names.insert(exp.name.as_str()) {
            errs.push(ModelError::duplicate(path, &exp.name));
        }
    }

    exactly_one_of(
        "spec.blueprint",
        &[
            ("inline", spec.blueprint.inline.is_some()),
            ("ref", spec.blueprint.reference.is_some()),
        ],
        errs,
    );
    if let Some(cd) = &spec.component_descriptor {
        exactly_one_of(
            "spec.componentDescriptor",
            &[
                ("inline", is_set(&cd.inline)),
                ("ref", cd.reference.is_some()),
            ],
            errs,
        );
    }
    if let Some(auto) = &spec.automatic_reconcile {
        let specs = [
            (
                "spec.automaticReconcile.succeededReconcile.cronSpec",
                auto.succeeded_reconcile
                    .as_ref()
                    .and_then(|r| r.cron_spec.as_deref()),
            ),
            (
                "spec.automaticReconcile.failedReconcile.cronSpec",
                auto.failed_reconcile
                    .as_ref()
                    .and_then(|r| r.cron_spec.as_deref()),
            ),
        ];
        for (path, cron) in specs {
            if let Some(cron) = cron.filter(|c| !c.is_empty())
                && validate_cron_spec(cron).is_err()
            {
                errs.push(ModelError::invalid(
                    path,
                    cron,
                    "field must be a valid cron spec",
                ));
            }
        }
    }
}

/// `^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$`
fn is_target_map_key(key: &str) -> bool {
    let b = key.as_bytes();
    let edge = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= 63
        && edge(b[0])
        && edge(b[b.len() - 1])
        && b.iter().all(|&c| edge(c) || c == b'.' || c == b'-')
}

// --- Execution --------------------------------------------------------------------------------

fn check_execution(exec: &Execution, errs: &mut Vec<ModelError>) {
    let items = exec.spec.deploy_items();
    let mut names = BTreeSet::new();
    let mut duplicates = false;
    for (i, item) in items.iter().enumerate() {
        let path = format!("spec.deployItems[{i}]");
        if !item.name.is_empty() && !names.insert(item.name.as_str()) {
            errs.push(ModelError::duplicate(path.clone(), &item.name));
            duplicates = true;
        }
        check_deploy_item_template(&path, item, errs);
        if let Some(ext) = &item.appliance
            && let Err(e) = ext.check(
                ExtensionPlace::DeployItemTemplate,
                &format!("{path}.appliance"),
            )
        {
            errs.push(e);
        }
    }
    check_workflow_annotation(&exec.metadata, ExtensionPlace::Execution, errs);
    // Dependencies are resolved by name, which is ambiguous with duplicates.
    if !duplicates {
        check_dependencies(items, errs);
    }
}

/// The appliance's workflow block in the `landscaper-appliance.io/workflow` annotation (issue 19):
/// it must decode and fit the kind. Its CEL expressions are compiled by the workflow crate.
fn check_workflow_annotation(meta: &ObjectMeta, place: ExtensionPlace, errs: &mut Vec<ModelError>) {
    match WorkflowExtension::from_annotations(meta) {
        Ok(None) => {}
        Ok(Some(ext)) => {
            let field = format!("metadata.annotations[{WORKFLOW_ANNOTATION}]");
            if let Err(e) = ext.check(place, &field) {
                errs.push(e);
            }
        }
        Err(e) => errs.push(e),
    }
}

fn check_deploy_item_template(path: &str, item: &DeployItemTemplate, errs: &mut Vec<ModelError>) {
    if item.name.is_empty() {
        errs.push(ModelError::required(
            format!("{path}.name"),
            "name must not be empty",
        ));
    }
    if item.r#type.is_empty() {
        errs.push(ModelError::required(
            format!("{path}.type"),
            "type must not be empty",
        ));
    }
    if let Some(target) = &item.target {
        if target.name.is_empty() {
            errs.push(ModelError::required(
                format!("{path}.target.name"),
                "name must not be empty",
            ));
        }
        if target.namespace.is_empty() {
            errs.push(ModelError::required(
                format!("{path}.target.namespace"),
                "namespace must not be empty",
            ));
        }
    }
    if let Some(labels) = &item.labels {
        check_labels(labels, &format!("{path}.labels"), errs);
    }
}

/// Undefined `dependsOn` entries and dependency cycles.
fn check_dependencies(items: &[DeployItemTemplate], errs: &mut Vec<ModelError>) {
    let index: HashMap<&str, usize> = items
        .iter()
        .enumerate()
        .map(|(i, item)| (item.name.as_str(), i))
        .collect();
    for (i, item) in items.iter().enumerate() {
        for (j, dep) in item.depends_on.iter().flatten().enumerate() {
            if !index.contains_key(dep.as_str()) {
                errs.push(ModelError::invalid(
                    format!("spec.deployItems[{i}].dependsOn[{j}]"),
                    dep,
                    "depends on undefined deploy item",
                ));
            }
        }
    }

    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Active,
        Done,
    }
    fn visit(
        i: usize,
        items: &[DeployItemTemplate],
        index: &HashMap<&str, usize>,
        marks: &mut [Mark],
        stack: &mut Vec<usize>,
        cycles: &mut Vec<Vec<String>>,
    ) {
        marks[i] = Mark::Active;
        stack.push(i);
        for dep in items[i].depends_on.iter().flatten() {
            let Some(&j) = index.get(dep.as_str()) else {
                continue;
            };
            match marks[j] {
                Mark::New => visit(j, items, index, marks, stack, cycles),
                Mark::Active => {
                    let from = stack.iter().position(|&k| k == j).unwrap_or(0);
                    let mut cycle: Vec<String> = stack[from..]
                        .iter()
                        .map(|&k| items[k].name.clone())
                        .collect();
                    cycle.push(items[j].name.clone());
                    cycles.push(cycle);
                }
                Mark::Done => {}
            }
        }
        stack.pop();
        marks[i] = Mark::Done;
    }

    let mut marks = vec![Mark::New; items.len()];
    let mut cycles = Vec::new();
    for i in 0..items.len() {
        if marks[i] == Mark::New {
            visit(i, items, &index, &mut marks, &mut Vec::new(), &mut cycles);
        }
    }
    for cycle in cycles {
        errs.push(ModelError::invalid(
            "spec.deployItems",
            &cycle.join(" -> "),
            "cycle found in dependencies",
        ));
    }
}

// --- DeployItem, Target -----------------------------------------------------------------------

fn check_deploy_item(item: &DeployItem, errs: &mut Vec<ModelError>) {
    let spec = &item.spec;
    if spec.r#type.is_empty() {
        errs.push(ModelError::required("spec.type", "type must not be empty"));
    }
    if let Some(target) = &spec.target {
        if target.name.is_empty() {
            errs.push(ModelError::required(
                "spec.target.name",
                "target name must not be empty",
            ));
        }
        if target.namespace.is_empty() {
            errs.push(ModelError::required(
                "spec.target.namespace",
                "target namespace must not be empty",
            ));
        }
    }
}

fn check_target(target: &Target, errs: &mut Vec<ModelError>) {
    let spec = &target.spec;
    if spec.r#type.is_empty() {
        errs.push(ModelError::required("spec.type", "type must not be empty"));
    }
    if is_set(&spec.config) && spec.secret_ref.is_some() {
        errs.push(ModelError::invalid_omit_value(
            "spec",
            "either config or secretRef may be set, not both",
        ));
    }
    if spec.secret_ref.as_ref().is_some_and(|r| r.name.is_empty()) {
        errs.push(ModelError::required(
            "spec.secretRef.name",
            "name must not be empty",
        ));
    }
    if spec.r#type == KUBERNETES_CLUSTER_TARGET_TYPE
        && let Some(kubeconfig) = spec.config.as_ref().and_then(|c| c.get("kubeconfig"))
        && !is_value_ref(kubeconfig)
    {
        // Landscaper's `ValueRef` is a string or `{secretRef: {name, key}}`; the value is a
        // credential, so the error names only its shape.
        errs.push(ModelError::invalid_omit_value(
            "spec.config.kubeconfig",
            &format!(
                "{} given: must be the kubeconfig as a string, or {{secretRef: {{name, key}}}}",
                shape_of(kubeconfig)
            ),
        ));
    }
}

/// Landscaper's `ValueRef`: a string, or a secret reference ([`is_secret_value_ref`]).
pub fn is_value_ref(value: &Value) -> bool {
    matches!(value, Value::Null | Value::String(_)) || is_secret_value_ref(value)
}

/// The reference form of a `ValueRef`: `{secretRef: {name, namespace?, key?}}` with string
/// fields and nothing else (so it holds no credential and may be shown).
pub fn is_secret_value_ref(value: &Value) -> bool {
    let Some(map) = value.as_object() else {
        return false;
    };
    map.len() == 1
        && map
            .get("secretRef")
            .and_then(Value::as_object)
            .is_some_and(|r| {
                r.iter().all(|(k, v)| {
                    matches!(k.as_str(), "name" | "namespace" | "key")
                        && (v.is_string() || v.is_null())
                })
            })
}

// --- ConfigMap, Secret ------------------------------------------------------------------------

fn check_config_map(cm: &ConfigMap, errs: &mut Vec<ModelError>) {
    let mut total = 0;
    for (key, value) in cm.data.iter().flatten() {
        check_config_key("data", key, errs);
        total += value.len();
    }
    for (key, value) in cm.binary_data.iter().flatten() {
        check_config_key("binaryData", key, errs);
        if cm.data.as_ref().is_some_and(|d| d.contains_key(key)) {
            errs.push(ModelError::invalid(
                format!("data[{key}]"),
                key,
                "duplicate of key present in binaryData",
            ));
        }
        match decode_base64(value) {
            Ok(bytes) => total += bytes.len(),
            Err(msg) => errs.push(ModelError::new(format!("binaryData[{key}]"), msg)),
        }
    }
    if total > MAX_DATA_SIZE {
        errs.push(ModelError::too_long("data", MAX_DATA_SIZE));
    }
}

fn check_secret(secret: &Secret, errs: &mut Vec<ModelError>) {
    let mut total = 0;
    for (key, value) in secret.data.iter().flatten() {
        check_config_key("data", key, errs);
        match decode_base64(value) {
            Ok(bytes) => total += bytes.len(),
            Err(msg) => errs.push(ModelError::new(format!("data[{key}]"), msg)),
        }
    }
    for (key, value) in secret.string_data.iter().flatten() {
        check_config_key("stringData", key, errs);
        total += value.len();
    }
    if total > MAX_DATA_SIZE {
        errs.push(ModelError::too_long("data", MAX_DATA_SIZE));
    }
}

fn check_config_key(field: &str, key: &str, errs: &mut Vec<ModelError>) {
    for msg in is_config_map_key(key) {
        errs.push(ModelError::invalid(format!("{field}[{key}]"), key, &msg));
    }
}

/// Standard base64 as Go's JSON decoder reads `[]byte` (line breaks ignored), with Go's message.
fn decode_base64(text: &str) -> Result<Vec<u8>, String> {
    use base64::DecodeError;
    use base64::Engine as _;
    let compact: String = text.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
    base64::engine::general_purpose::STANDARD
        .decode(&compact)
        .map_err(|e| {
            let offset = match e {
                DecodeError::InvalidByte(at, _) | DecodeError::InvalidLastSymbol(at, _) => at,
                DecodeError::InvalidLength(_) | DecodeError::InvalidPadding => compact.len(),
            };
            format!("illegal base64 data at input byte {offset}")
        })
}

// --- ManifestFile -----------------------------------------------------------------------------

fn check_manifest_file(file: &ManifestFile, errs: &mut Vec<ModelError>) {
    check_folder_path(&file.spec.path, errs)
}

/// `spec.path` of the records of files in the manifests folder (ManifestFile,
/// TransportArchive): relative, `/`-separated, inside the folder.
fn check_folder_path(path: &str, errs: &mut Vec<ModelError>) {
    if path.is_empty() {
        errs.push(ModelError::required("spec.path", "path must not be empty"));
    } else if path.starts_with('/') || path.contains('\\') {
        errs.push(ModelError::invalid(
            "spec.path",
            path,
            "must be a relative path with '/' separators",
        ));
    } else if path.split('/').any(|part| part == "..") {
        errs.push(ModelError::invalid(
            "spec.path",
            path,
            "must not contain '..'",
        ));
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
