//! OpenAPI documents as kube-apiserver serves them: `/openapi/v2` (Swagger 2.0, JSON) and
//! `/openapi/v3` (an index of per-group-version OpenAPI 3.0 documents at
//! `/openapi/v3/api/v1` and `/openapi/v3/apis/GROUP/VERSION`, addressed with a `?hash=` of their
//! content as kubectl ≥ 1.27 uses them for `explain` and to decide about validation).
//!
//! The schemas of Landscaper's and the appliance's kinds come from the project's own typed
//! model (`schemars` derives on `landscaper_model`: serde's names and defaults, doc comments as
//! descriptions), shaped like the documents kube-apiserver builds from a CRD: one definition per
//! kind named by the reversed group (`cloud.gardener.landscaper.v1alpha1.Installation`), nested
//! types inlined, `metadata` a reference to kube's `ObjectMeta`, free-form fields
//! `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-group-version-kind` on kinds, lists and
//! operations. The core kinds (ConfigMap, Secret, Namespace, Event) and `ObjectMeta`, `ListMeta`
//! and `Status` are kube's own definitions (k8s-openapi's schemas, generated from kube's
//! OpenAPI).
//!
//! The PATCH operations name the `fieldValidation` parameter, as kube-apiserver's do: kubectl
//! then leaves the validation of `apply`/`create`/`replace` to the server (it sends
//! `fieldValidation=Strict` for `--validate=strict`, the default) instead of validating
//! client-side against the v2 document. The v2 document is served as JSON and as gnostic
//! protobuf ([`protobuf`]), which is what client-go asks for (`kubectl explain --output
//! plaintext-openapiv2`); v3 documents as JSON. Other media types get 406.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::extract::{Path, Query};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use landscaper_store::Kind;
use landscaper_store::model;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};
use sha2::Digest as _;

use super::discovery::git_version;
use super::resources::{GROUPS, GroupVersion, Resource};
use super::status::ApiError;

/// kube's definition names of the meta types the documents reference.
pub const OBJECT_META: &str = model::meta::OBJECT_META_DEFINITION;
pub const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
pub const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";

/// The extension kubectl finds kinds and operations by.
pub const GVK_EXTENSION: &str = "x-kubernetes-group-version-kind";
/// The extension that marks free-form fields.
pub const PRESERVE_UNKNOWN: &str = "x-kubernetes-preserve-unknown-fields";

/// Where the two document versions keep their definitions.
const V2_REFS: &str = "#/definitions/";
const V3_REFS: &str = "#/components/schemas/";

/// The definition name kube-apiserver gives a custom kind: the group reversed, the version,
/// the kind (`cloud.gardener.landscaper.v1alpha1.Installation`).
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').collect();
    parts.reverse();
    format!("{}.{version}.{kind}", parts.join("."))
}

/// The definition name of a served resource's kind (kube's for the core kinds).
pub fn resource_definition(resource: Resource) -> String {
    match resource {
        Resource::Kind(Kind::ConfigMap) => "io.k8s.api.core.v1.ConfigMap".into(),
        Resource::Kind(Kind::Secret) => "io.k8s.api.core.v1.Secret".into(),
        Resource::Namespaces => "io.k8s.api.core.v1.Namespace".into(),
        Resource::Events => "io.k8s.api.core.v1.Event".into(),
        Resource::Kind(kind) => definition_name(kind.group(), kind.version(), kind.as_str()),
    }
}

fn settings() -> SchemaSettings {
    SchemaSettings::draft07().with(|s| {
        s.meta_schema = None;
        s.transforms = Vec::new();
        s.definitions_path = "/definitions".into();
    })
}

/// The schemars schema (a `$ref` into `generator`'s definitions) of a model kind.
fn model_schema(kind: Kind, generator: &mut SchemaGenerator) -> Option<schemars::Schema> {
    Some(match kind {
        Kind::Installation => generator.subschema_for::<model::Installation>(),
        Kind::Execution => generator.subschema_for::<model::Execution>(),
        Kind::DeployItem => generator.subschema_for::<model::DeployItem>(),
        Kind::DataObject => generator.subschema_for::<model::DataObject>(),
        Kind::Target => generator.subschema_for::<model::Target>(),
        Kind::Context => generator.subschema_for::<model::Context>(),
        Kind::ManifestFile => generator.subschema_for::<model::ManifestFile>(),
        Kind::TransportArchive => generator.subschema_for::<model::TransportArchive>(),
        Kind::ConfigMap | Kind::Secret => return None,
    })
}

/// kube's own definitions: the core kinds, their lists, `ObjectMeta`, `ListMeta`, `Status` and
/// everything they reference, by kube's names.
fn kube_definitions() -> Map<String, Value> {
    let mut generator = settings().into_generator();
    generator.subschema_for::<core::ConfigMap>();
    generator.subschema_for::<core::Secret>();
    generator.subschema_for::<core::Namespace>();
    generator.subschema_for::<core::Event>();
    generator.subschema_for::<meta::ObjectMeta>();
    generator.subschema_for::<meta::ListMeta>();
    generator.subschema_for::<meta::Status>();
    let mut definitions = generator.take_definitions(true);
    for (name, gvk) in [
        ("io.k8s.api.core.v1.ConfigMap", ("", "v1", "ConfigMap")),
        ("io.k8s.api.core.v1.Secret", ("", "v1", "Secret")),
        ("io.k8s.api.core.v1.Namespace", ("", "v1", "Namespace")),
        ("io.k8s.api.core.v1.Event", ("", "v1", "Event")),
        (STATUS, ("", "v1", "Status")),
    ] {
        if let Some(Value::Object(definition)) = definitions.get_mut(name) {
            definition.insert(GVK_EXTENSION.into(), gvk_list(gvk.0, gvk.1, gvk.2));
        }
    }
    definitions
        .into_iter()
        .map(|(name, schema)| (name, normalize(schema, &Map::new())))
        .collect()
}

fn gvk_list(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "kind": kind, "version": version}])
}

/// Turns a schemars schema into the structural form kube's documents use: `Option`'s nulls
/// dropped, titles dropped, free-form values (`true` schemas) as
/// `x-kubernetes-preserve-unknown-fields`, unsigned formats as kube's `int32`/`int64`, and
/// references to model definitions inlined (references to kube's `io.k8s.*` definitions kept,
/// in the v2 form `#/definitions/NAME`).
fn normalize(schema: Value, definitions: &Map<String, Value>) -> Value {
    match schema {
        Value::Bool(true) => json!({ PRESERVE_UNKNOWN: true }),
        Value::Object(mut map) => {
            map.remove("title");
            map.remove("$schema");
            // Serde defaults are the decoder's business; Landscaper's CRDs declare none.
            map.remove("default");
            // A free-form value (`serde_json::Value`) with a doc comment.
            const SHAPED: [&str; 10] = [
                "type",
                "$ref",
                "properties",
                "items",
                "additionalProperties",
                "allOf",
                "anyOf",
                "oneOf",
                "enum",
                "const",
            ];
            if !SHAPED.iter().any(|key| map.contains_key(*key)) {
                map.insert(PRESERVE_UNKNOWN.into(), json!(true));
            }
            if let Some(Value::String(reference)) = map.get("$ref")
                && let Some(name) = reference.strip_prefix(V2_REFS)
                && !name.starts_with("io.k8s.")
                && let Some(target) = definitions.get(name)
            {
                let mut inlined = match normalize(target.clone(), definitions) {
                    Value::Object(inlined) => inlined,
                    other => return other,
                };
                map.remove("$ref");
                for (key, value) in map {
                    let value = normalize_member(&key, value, definitions);
                    inlined.insert(key, value);
                }
                return Value::Object(inlined);
            }
            // `Option<T>`: `type: [T, "null"]` or `anyOf: [T, {type: null}]`.
            if let Some(Value::Array(types)) = map.get("type") {
                let types: Vec<Value> = types
                    .iter()
                    .filter(|t| t.as_str() != Some("null"))
                    .cloned()
                    .collect();
                map.insert(
                    "type".into(),
                    match <[Value; 1]>::try_from(types) {
                        Ok([only]) => only,
                        Err(types) => Value::Array(types),
                    },
                );
            }
            if let Some(Value::Array(any_of)) = map.get("anyOf") {
                let rest: Vec<Value> = any_of
                    .iter()
                    .filter(|s| s.get("type").and_then(Value::as_str) != Some("null"))
                    .cloned()
                    .collect();
                if rest.len() == 1 && rest.len() < any_of.len() {
                    map.remove("anyOf");
                    let only = normalize(rest.into_iter().next().unwrap_or_default(), definitions);
                    let mut only = match only {
                        Value::Object(only) => only,
                        other => return other,
                    };
                    for (key, value) in map {
                        only.entry(key).or_insert(value);
                    }
                    return Value::Object(only);
                }
            }
            if let Some(Value::String(format)) = map.get("format") {
                let kube_format = match format.as_str() {
                    "uint8" | "uint16" | "int8" | "int16" | "uint32" | "uint" => Some("int32"),
                    "uint64" => Some("int64"),
                    _ => None,
                };
                if let Some(kube_format) = kube_format {
                    map.insert("format".into(), json!(kube_format));
                    map.remove("minimum");
                    map.remove("maximum");
                }
            }
            if let Some(Value::String(text)) = map.get("description") {
                let text = unwrap_lines(text);
                map.insert("description".into(), Value::String(text));
            }
            let mut map: Map<String, Value> = map
                .into_iter()
                .map(|(key, value)| {
                    let value = normalize_member(&key, value, definitions);
                    (key, value)
                })
                .collect();
            // Enums: `oneOf` string constants (variants with doc comments) as one string enum;
            // other alternatives (untagged enums) have no structural form: free-form.
            for key in ["oneOf", "anyOf"] {
                let Some(Value::Array(alternatives)) = map.get(key) else {
                    continue;
                };
                let constants: Option<Vec<Value>> = alternatives
                    .iter()
                    .map(|a| {
                        if a.get("type") != Some(&json!("string")) {
                            return None;
                        }
                        match (a.get("const"), a.get("enum")) {
                            (Some(c), _) => Some(vec![c.clone()]),
                            (None, Some(Value::Array(values))) => Some(values.clone()),
                            _ => None,
                        }
                    })
                    .collect::<Option<Vec<Vec<Value>>>>()
                    .map(|v| v.into_iter().flatten().collect());
                map.remove(key);
                match constants {
                    Some(values) => {
                        map.insert("type".into(), json!("string"));
                        map.insert("enum".into(), Value::Array(values));
                    }
                    None => {
                        map.insert(PRESERVE_UNKNOWN.into(), json!(true));
                    }
                }
            }
            // A map of free-form values is a free-form object in Landscaper's CRDs (and
            // structural schemas allow no `additionalProperties` beside
            // `x-kubernetes-preserve-unknown-fields`).
            if map.get("type") == Some(&json!("object"))
                && map.get("additionalProperties") == Some(&json!({ PRESERVE_UNKNOWN: true }))
            {
                map.remove("additionalProperties");
                map.insert(PRESERVE_UNKNOWN.into(), json!(true));
            }
            Value::Object(map)
        }
        other => other,
    }
}

/// A doc comment's text as one paragraph per blank-line-separated block: the line breaks of
/// the source are not the description's.
fn unwrap_lines(text: &str) -> String {
    text.split("\n\n")
        .map(|paragraph| {
            paragraph
                .lines()
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Normalises the schemas inside one member of a schema object.
fn normalize_member(key: &str, value: Value, definitions: &Map<String, Value>) -> Value {
    match key {
        "properties" | "patternProperties" => match value {
            Value::Object(properties) => Value::Object(
                properties
                    .into_iter()
                    .map(|(name, schema)| (name, normalize(schema, definitions)))
                    .collect(),
            ),
            other => other,
        },
        "items" | "additionalProperties" | "not" => normalize(value, definitions),
        "allOf" | "anyOf" | "oneOf" => match value {
            Value::Array(schemas) => Value::Array(
                schemas
                    .into_iter()
                    .map(|schema| normalize(schema, definitions))
                    .collect(),
            ),
            other => other,
        },
        _ => value,
    }
}

/// The definitions of every served kind and list, by definition name, in the v2 reference
/// form; kube's definitions included.
pub fn definitions() -> BTreeMap<String, Value> {
    let kube = kube_definitions();
    let meta_description = |property: &str| -> Value {
        kube.get("io.k8s.api.core.v1.ConfigMap")
            .and_then(|d| d.pointer(&format!("/properties/{property}/description")))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let (api_version_text, kind_text) = (meta_description("apiVersion"), meta_description("kind"));
    let mut kube_lists = Vec::new();
    for kind in ["ConfigMap", "Secret", "Namespace", "Event"] {
        let name = format!("io.k8s.api.core.v1.{kind}");
        kube_lists.push((
            format!("{name}List"),
            list_definition("", "v1", kind, &name, &api_version_text, &kind_text),
        ));
    }
    let mut generator = settings().into_generator();
    let mut roots = Vec::new();
    for kind in Kind::ALL {
        if let Some(schema) = model_schema(kind, &mut generator) {
            roots.push((kind, schema.to_value()));
        }
    }
    let model_definitions = generator.take_definitions(true);
    let mut out: BTreeMap<String, Value> = kube.clone().into_iter().collect();
    out.extend(kube_lists);
    for (kind, root) in roots {
        let mut schema = normalize(root, &model_definitions);
        if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            properties.insert(
                "apiVersion".into(),
                json!({"type": "string", "description": api_version_text}),
            );
            properties.insert(
                "kind".into(),
                json!({"type": "string", "description": kind_text}),
            );
            properties.insert(
                "metadata".into(),
                json!({
                    "$ref": format!("{V2_REFS}{OBJECT_META}"),
                    "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
                }),
            );
        }
        if let Some(object) = schema.as_object_mut() {
            object.insert("type".into(), json!("object"));
            object.remove("required");
            object.insert(
                GVK_EXTENSION.into(),
                gvk_list(kind.group(), kind.version(), kind.as_str()),
            );
        }
        let name = definition_name(kind.group(), kind.version(), kind.as_str());
        out.insert(
            format!("{name}List"),
            list_definition(
                kind.group(),
                kind.version(),
                kind.as_str(),
                &name,
                &api_version_text,
                &kind_text,
            ),
        );
        out.insert(name, schema);
    }
    out
}

/// The definition of `KIND`List, whose items are `item_definition`s (as kube-apiserver writes
/// the lists of custom kinds).
fn list_definition(
    group: &str,
    version: &str,
    kind: &str,
    item_definition: &str,
    api_version_text: &Value,
    kind_text: &Value,
) -> Value {
    let list_kind = format!("{kind}List");
    json!({
        "description": format!("{list_kind} is a list of {kind}"),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": api_version_text},
            "items": {
                "type": "array",
                "description": format!("List of {kind} objects. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"),
                "items": {"$ref": format!("{V2_REFS}{item_definition}")},
            },
            "kind": {"type": "string", "description": kind_text},
            "metadata": {
                "$ref": format!("{V2_REFS}{LIST_META}"),
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            },
        },
        GVK_EXTENSION: gvk_list(group, version, &list_kind),
    })
}

/// One query parameter of an operation.
struct Param {
    name: &'static str,
    kind: &'static str,
    description: &'static str,
}

const DRY_RUN: Param = Param {
    name: "dryRun",
    kind: "string",
    description: "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
};
const FIELD_MANAGER: Param = Param {
    name: "fieldManager",
    kind: "string",
    description: "fieldManager is a name associated with the actor or entity that is making these changes.",
};
const FIELD_VALIDATION: Param = Param {
    name: "fieldValidation",
    kind: "string",
    description: "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict",
};
const FORCE: Param = Param {
    name: "force",
    kind: "boolean",
    description: "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people.",
};

/// One operation of a path, in neutral form.
struct Operation {
    method: &'static str,
    action: &'static str,
    verb_text: &'static str,
    params: Vec<&'static Param>,
    list: bool,
    consumes: &'static [&'static str],
}

/// The paths of one resource: (path, path parameters, operations).
fn resource_paths(
    gv: GroupVersion,
    resource: Resource,
) -> Vec<(String, Vec<&'static str>, Vec<Operation>)> {
    let prefix = if gv.group.is_empty() {
        "/api/v1".to_string()
    } else {
        format!("/apis/{}/{}", gv.group, gv.version)
    };
    let plural = resource.plural();
    let (collection, collection_params) = if resource.namespaced() {
        (
            format!("{prefix}/namespaces/{{namespace}}/{plural}"),
            vec!["namespace"],
        )
    } else {
        (format!("{prefix}/{plural}"), vec![])
    };
    let verbs = resource.verbs();
    let has = |verb: &str| verbs.contains(&verb);
    let patch_types: &'static [&'static str] = if resource.group().is_empty() {
        &[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ]
    } else {
        &[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ]
    };
    let mut collection_ops = Vec::new();
    if has("list") {
        collection_ops.push(Operation {
            method: "get",
            action: "list",
            verb_text: "list or watch objects of kind",
            params: vec![],
            list: true,
            consumes: &[],
        });
    }
    if has("create") {
        collection_ops.push(Operation {
            method: "post",
            action: "post",
            verb_text: "create",
            params: vec![&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION],
            list: false,
            consumes: &["application/json", "application/yaml"],
        });
    }
    let mut object_ops = Vec::new();
    if has("get") {
        object_ops.push(Operation {
            method: "get",
            action: "get",
            verb_text: "read the specified",
            params: vec![],
            list: false,
            consumes: &[],
        });
    }
    if has("update") {
        object_ops.push(Operation {
            method: "put",
            action: "put",
            verb_text: "replace the specified",
            params: vec![&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION],
            list: false,
            consumes: &["application/json", "application/yaml"],
        });
    }
    if has("patch") {
        object_ops.push(Operation {
            method: "patch",
            action: "patch",
            verb_text: "partially update the specified",
            params: vec![&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION, &FORCE],
            list: false,
            consumes: patch_types,
        });
    }
    if has("delete") {
        object_ops.push(Operation {
            method: "delete",
            action: "delete",
            verb_text: "delete",
            params: vec![&DRY_RUN],
            list: false,
            consumes: &[],
        });
    }
    let mut paths = Vec::new();
    if resource.namespaced() && has("list") {
        paths.push((
            format!("{prefix}/{plural}"),
            vec![],
            vec![Operation {
                method: "get",
                action: "list",
                verb_text: "list or watch objects of kind",
                params: vec![],
                list: true,
                consumes: &[],
            }],
        ));
    }
    if !collection_ops.is_empty() {
        paths.push((
            collection.clone(),
            collection_params.clone(),
            collection_ops,
        ));
    }
    if !object_ops.is_empty() {
        let mut object_params = vec!["name"];
        object_params.extend(collection_params);
        paths.push((format!("{collection}/{{name}}"), object_params, object_ops));
    }
    paths
}

fn operation_id(op: &Operation, resource: Resource, namespaced_path: bool) -> String {
    let verb = match op.action {
        "list" => "list",
        "get" => "read",
        "put" => "replace",
        "post" => "create",
        other => other,
    };
    let scope = if namespaced_path { "Namespaced" } else { "" };
    let kind = resource.kind_name();
    let suffix = if op.list && !namespaced_path && resource.namespaced() {
        "ForAllNamespaces"
    } else {
        ""
    };
    format!("{verb}{scope}{kind}{suffix}")
}

fn path_parameter_description(name: &str) -> &'static str {
    match name {
        "name" => "name of the object",
        _ => "object name and auth scope, such as for teams and projects",
    }
}

/// Which document an operation or reference is written for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavour {
    V2,
    V3,
}

fn operation(
    op: &Operation,
    gv: GroupVersion,
    resource: Resource,
    path: &str,
    flavour: Flavour,
) -> Value {
    let definition = resource_definition(resource);
    let list_definition = format!("{definition}List");
    let response_type = if op.list {
        &list_definition
    } else {
        &definition
    };
    let kind = resource.kind_name();
    let mut params = Vec::new();
    for p in &op.params {
        params.push(match flavour {
            Flavour::V2 => json!({"name": p.name, "in": "query", "type": p.kind, "uniqueItems": true, "description": p.description}),
            Flavour::V3 => json!({"name": p.name, "in": "query", "schema": {"type": p.kind, "uniqueItems": true}, "description": p.description}),
        });
    }
    let description = format!("{} {kind}", op.verb_text);
    let id = operation_id(op, resource, path.contains("{namespace}"));
    let gvk = json!({"group": gv.group, "version": gv.version, "kind": kind});
    let mut value = match flavour {
        Flavour::V2 => {
            let mut v = json!({
                "description": description,
                "operationId": id,
                "produces": ["application/json", "application/yaml"],
                "schemes": ["https"],
                "responses": {
                    "200": {"description": "OK", "schema": {"$ref": format!("{V2_REFS}{response_type}")}},
                    "401": {"description": "Unauthorized"},
                },
            });
            if !op.consumes.is_empty() {
                v["consumes"] = json!(op.consumes);
                v["parameters"] = json!([{"name": "body", "in": "body", "required": true, "schema": {"$ref": format!("{V2_REFS}{definition}")}}]);
            }
            v
        }
        Flavour::V3 => {
            let reference = json!({"schema": {"$ref": format!("{V3_REFS}{response_type}")}});
            let mut v = json!({
                "description": description,
                "operationId": id,
                "responses": {
                    "200": {"description": "OK", "content": {"application/json": reference, "application/yaml": reference}},
                    "401": {"description": "Unauthorized"},
                },
            });
            if !op.consumes.is_empty() {
                let body_schema = if op.method == "patch" {
                    json!({"schema": {"type": "object"}})
                } else {
                    json!({"schema": {"$ref": format!("{V3_REFS}{definition}")}})
                };
                let content: Map<String, Value> = op
                    .consumes
                    .iter()
                    .map(|t| ((*t).to_string(), body_schema.clone()))
                    .collect();
                v["requestBody"] = json!({"content": content, "required": true});
            }
            v
        }
    };
    if flavour == Flavour::V2 && op.method == "patch" {
        value["parameters"] =
            json!([{"name": "body", "in": "body", "required": true, "schema": {"type": "object"}}]);
    }
    if let Some(parameters) = value.get_mut("parameters").and_then(Value::as_array_mut) {
        parameters.extend(params);
    } else if !params.is_empty() {
        value["parameters"] = Value::Array(params);
    }
    value["tags"] = json!([tag(gv)]);
    value["x-kubernetes-action"] = json!(op.action);
    value[GVK_EXTENSION] = gvk;
    value
}

fn tag(gv: GroupVersion) -> String {
    if gv.group.is_empty() {
        "core_v1".into()
    } else {
        format!("{}_{}", gv.group.replace('.', "_"), gv.version)
    }
}

fn paths(gvs: &[GroupVersion], flavour: Flavour) -> Map<String, Value> {
    let mut out = Map::new();
    for &gv in gvs {
        for resource in gv.resources() {
            for (path, path_params, ops) in resource_paths(gv, resource) {
                let mut item = Map::new();
                for op in &ops {
                    item.insert(
                        op.method.into(),
                        operation(op, gv, resource, &path, flavour),
                    );
                }
                let mut parameters: Vec<Value> = path_params
                    .iter()
                    .map(|name| match flavour {
                        Flavour::V2 => json!({"name": name, "in": "path", "required": true, "type": "string", "uniqueItems": true, "description": path_parameter_description(name)}),
                        Flavour::V3 => json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}, "description": path_parameter_description(name)}),
                    })
                    .collect();
                parameters.push(match flavour {
                    Flavour::V2 => json!({"name": "pretty", "in": "query", "type": "string", "uniqueItems": true, "description": "If 'true', then the output is pretty printed."}),
                    Flavour::V3 => json!({"name": "pretty", "in": "query", "schema": {"type": "string", "uniqueItems": true}, "description": "If 'true', then the output is pretty printed."}),
                });
                item.insert("parameters".into(), Value::Array(parameters));
                out.insert(path, Value::Object(item));
            }
        }
    }
    out
}

/// The definition names a schema references (`$ref`s to `#/definitions/NAME`).
fn referenced(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "$ref"
                    && let Some(name) = value.as_str().and_then(|r| r.strip_prefix(V2_REFS))
                {
                    out.push(name.to_string());
                } else {
                    referenced(value, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| referenced(v, out)),
        _ => {}
    }
}

/// The definitions reachable from `roots`.
fn closure(roots: Vec<String>, all: &BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let mut todo = roots;
    while let Some(name) = todo.pop() {
        if out.contains_key(&name) {
            continue;
        }
        if let Some(schema) = all.get(&name) {
            referenced(schema, &mut todo);
            out.insert(name, schema.clone());
        }
    }
    out
}

/// A schema in the v3 form: references at `#/components/schemas/`, a reference with
/// siblings (a description) wrapped in `allOf` as kube-openapi writes them.
fn to_v3(schema: Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut map: Map<String, Value> = map.into_iter().map(|(k, v)| (k, to_v3(v))).collect();
            if let Some(Value::String(reference)) = map.get("$ref").cloned() {
                let reference = reference.replacen(V2_REFS, V3_REFS, 1);
                if map.len() > 1 {
                    map.remove("$ref");
                    map.insert("allOf".into(), json!([{"$ref": reference}]));
                } else {
                    map.insert("$ref".into(), json!(reference));
                }
            }
            Value::Object(map)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(to_v3).collect()),
        other => other,
    }
}

/// Every group version served, core first.
fn served_group_versions() -> Vec<GroupVersion> {
    let mut gvs = vec![GroupVersion::CORE];
    gvs.extend(GROUPS);
    gvs
}

/// The documents' roots: the served kinds and their lists (and `Status`).
fn roots(gv: GroupVersion) -> Vec<String> {
    let mut roots = vec![STATUS.to_string()];
    for resource in gv.resources() {
        let name = resource_definition(resource);
        roots.push(format!("{name}List"));
        roots.push(name);
    }
    roots
}

/// The v2 document (Swagger 2.0) of every served group version.
pub fn v2_document(all: &BTreeMap<String, Value>) -> Value {
    let gvs = served_group_versions();
    let definitions = closure(gvs.iter().flat_map(|gv| roots(*gv)).collect(), all);
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": git_version()},
        "paths": paths(&gvs, Flavour::V2),
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header", "description": "Bearer Token authentication"}},
        "security": [{"BearerToken": []}],
    })
}

/// The v3 document of one group version.
pub fn v3_document(gv: GroupVersion, all: &BTreeMap<String, Value>) -> Value {
    let schemas = closure(roots(gv), all);
    let schemas: Map<String, Value> = schemas.into_iter().map(|(k, v)| (k, to_v3(v))).collect();
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": git_version()},
        "paths": paths(&[gv], Flavour::V3),
        "components": {
            "schemas": schemas,
            "securitySchemes": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header", "description": "Bearer Token authentication"}},
        },
    })
}

/// The v3 path of a group version below `/openapi/v3/` (`api/v1`, `apis/GROUP/VERSION`).
pub fn v3_path(gv: GroupVersion) -> String {
    if gv.group.is_empty() {
        format!("api/{}", gv.version)
    } else {
        format!("apis/{}/{}", gv.group, gv.version)
    }
}

/// The serialised documents, built once.
pub struct Documents {
    v2: Vec<u8>,
    v2_protobuf: Vec<u8>,
    /// v3 path → (hash, bytes).
    v3: BTreeMap<String, (String, Vec<u8>)>,
}

impl Documents {
    fn build() -> Documents {
        let all = definitions();
        let v2_json = v2_document(&all);
        let v2 = serde_json::to_vec(&v2_json).unwrap_or_default();
        let v2_protobuf = protobuf::encode(&v2_json);
        let v3 = served_group_versions()
            .into_iter()
            .map(|gv| {
                let bytes = serde_json::to_vec(&v3_document(gv, &all)).unwrap_or_default();
                (v3_path(gv), (content_hash(&bytes), bytes))
            })
            .collect();
        Documents {
            v2,
            v2_protobuf,
            v3,
        }
    }

    /// The v3 index (`/openapi/v3`), with each document's hash in its URL.
    pub fn v3_index(&self) -> Value {
        let paths: Map<String, Value> = self
            .v3
            .iter()
            .map(|(path, (hash, _))| {
                (
                    path.clone(),
                    json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")}),
                )
            })
            .collect();
        json!({ "paths": paths })
    }
}

/// kube-openapi's hash of a document: SHA-512 of its bytes, upper-case hex.
fn content_hash(bytes: &[u8]) -> String {
    sha2::Sha512::digest(bytes)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

static DOCUMENTS: LazyLock<Documents> = LazyLock::new(Documents::build);

/// The v2 protobuf media types (kube-openapi serves both spellings).
const V2_PROTOBUF: [&str; 2] = [
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
];

/// The form a request gets, by the first acceptable entry of its `Accept` header (no header:
/// JSON); `None` when nothing offered is acceptable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Json,
    Protobuf,
}

fn form(headers: &HeaderMap, protobuf: bool) -> Option<Form> {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return Some(Form::Json);
    };
    accept.split(',').find_map(|part| {
        let media = part.split(';').next().unwrap_or_default().trim();
        match media {
            "" | "*/*" | "application/*" | "application/json" => Some(Form::Json),
            m if protobuf && V2_PROTOBUF.contains(&m) => Some(Form::Protobuf),
            _ => None,
        }
    })
}

fn accepts_json(headers: &HeaderMap) -> bool {
    form(headers, false) == Some(Form::Json)
}

fn document_response(bytes: &[u8], etag: Option<&str>, immutable: bool) -> Response {
    typed_document_response(bytes, "application/json", etag, immutable)
}

fn typed_document_response(
    bytes: &[u8],
    content_type: &'static str,
    etag: Option<&str>,
    immutable: bool,
) -> Response {
    let mut response = bytes.to_vec().into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some(etag) = etag.and_then(|e| HeaderValue::from_str(&format!("\"{e}\"")).ok()) {
        headers.insert(header::ETAG, etag);
    }
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if immutable {
            "public, immutable"
        } else {
            "no-cache, private"
        }),
    );
    response
}

fn not_acceptable(media: &[&str]) -> ApiError {
    ApiError::not_acceptable(format!(
        "only the following media types are accepted: {}",
        media.join(", ")
    ))
}

/// `/openapi/v2`: JSON, or protobuf for clients that ask for it (client-go always does).
pub async fn v2(headers: HeaderMap) -> Result<Response, ApiError> {
    let documents = &*DOCUMENTS;
    match form(&headers, true) {
        Some(Form::Json) => Ok(document_response(
            &documents.v2,
            Some(&content_hash(&documents.v2)),
            false,
        )),
        Some(Form::Protobuf) => Ok(typed_document_response(
            &documents.v2_protobuf,
            // kube-openapi answers with this spelling: Go's `mime` cannot parse the `@` one.
            V2_PROTOBUF[1],
            Some(&content_hash(&documents.v2_protobuf)),
            false,
        )),
        None => Err(not_acceptable(&[
            "application/json",
            V2_PROTOBUF[0],
            V2_PROTOBUF[1],
        ])),
    }
}

/// `/openapi/v3`.
pub async fn v3_index(headers: HeaderMap) -> Result<Response, ApiError> {
    if !accepts_json(&headers) {
        return Err(not_acceptable(&["application/json"]));
    }
    let body = serde_json::to_vec(&DOCUMENTS.v3_index()).unwrap_or_default();
    Ok(document_response(&body, None, false))
}

/// `/openapi/v3/{api/v1 | apis/GROUP/VERSION}[?hash=H]`: the document; a request naming an
/// old hash is redirected to the current one, as kube-apiserver does.
pub async fn v3_document_handler(
    Path(path): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Some((hash, bytes)) = DOCUMENTS.v3.get(path.trim_end_matches('/')) else {
        return Err(ApiError::unknown_resource());
    };
    if !accepts_json(&headers) {
        return Err(not_acceptable(&["application/json"]));
    }
    match query.get("hash") {
        Some(asked) if asked != hash => {
            let mut response = StatusCode::MOVED_PERMANENTLY.into_response();
            if let Ok(location) = HeaderValue::from_str(&format!("/openapi/v3/{path}?hash={hash}"))
            {
                response.headers_mut().insert(header::LOCATION, location);
            }
            Ok(response)
        }
        Some(_) => Ok(document_response(bytes, Some(hash), true)),
        None => Ok(document_response(bytes, Some(hash), false)),
    }
}

#[path = "openapi_protobuf.rs"]
mod protobuf;

#[cfg(test)]
#[path = "openapi_tests.rs"]
mod tests;
