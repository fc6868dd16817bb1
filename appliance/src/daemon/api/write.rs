//! The writes the API serves, all behind the bearer token (see [`super::token`]), for
//! Landscaper's kinds, ConfigMaps and Secrets (not for the appliance's own `ManifestFile` and
//! `TransportArchive` records):
//!
//! - `POST` (create), `PUT` (update: a `metadata.resourceVersion` other than the stored one is a
//!   409 Conflict; Landscaper's kinds need one, as kube-apiserver wants it for custom
//!   resources), `PATCH` as JSON patch, merge patch, strategic merge patch (ConfigMaps and
//!   Secrets only: kube-apiserver refuses it for custom resources, 415) and server-side apply
//!   (`application/apply-patch+yaml`, `fieldManager` required, `force`), with the patch
//!   semantics of the `kube-patch` crate. Every write keeps `metadata.managedFields` as
//!   kube-apiserver does (`fieldManager`, else the first word of the `User-Agent`).
//! - `DELETE`, with `DeleteOptions` preconditions and `propagationPolicy`.
//!
//! Who owns an object decides what a write may change ([`Owner`]): objects defined by a
//! manifest file belong to their file, objects with a controlling owner to their controller,
//! `ManifestFile` and `TransportArchive` records to the appliance; through the API only their
//! `metadata.labels` and `metadata.annotations` change (how operations are requested,
//! `landscaper.gardener.cloud/operation: reconcile`), anything else is refused with a 403
//! Forbidden naming the owner and the first changed field. Objects created through the API
//! belong to the API: they are changed and deleted through it, stored like every other object
//! (so they survive restarts and are in backups and exports) until a manifest file defines
//! the same object and takes it over (see the ingest).
//!
//! New and changed API-owned objects go through the admission of the manifests folder
//! ([`admit_object`]): a rejected field is a 422 Invalid naming it in `details.causes`; unknown
//! fields follow `fieldValidation` (`Strict`: 400 naming them, `Warn` (the default): a
//! `Warning` header per field, `Ignore`), and are dropped as a structural schema prunes them.
//! `status` is the controllers': a write neither sets nor changes it. `dryRun=All` answers as
//! if the object had been stored and stores nothing.
//!
//! Writes read the object and write it back with the read `resourceVersion` (optimistic
//! concurrency); patches are retried a few times when something else changed the object in
//! between. The answer is the object as `GET` shows it to the authorised caller (201 for a
//! creation).

use std::collections::{BTreeMap, HashMap};

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use landscaper_store::model::validate::validate_labels_and_annotations;
use landscaper_store::{
    Kind, LabelSelector, ObjectKey, Store, StoreError, Transaction, TransactionError, object,
};
use serde_json::{Map, Value};

use super::ApiState;
use super::objects::{blocking, json_response, present_as};
use super::resources::{Resource, Target};
use super::status::ApiError;
use super::token::Caller;
use crate::daemon::ingest::engine::controlled_by;
use crate::daemon::ingest::manifest::admit_object;

/// How often a write is tried when the object changed between read and write.
const ATTEMPTS: usize = 5;

/// The metadata fields a write may change on objects the API does not own.
const PATCHABLE: [&str; 2] = ["annotations", "labels"];

/// Metadata the store and the controllers keep: a write neither sets nor changes it.
const SERVER_METADATA: [&str; 8] = [
    "uid",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
    "finalizers",
    "selfLink",
];

/// The field manager of the status page's writes.
pub const UI_FIELD_MANAGER: &str = "landscaper-appliance-ui";

const WRITES_ALLOWED: &str = "the API serves GET, LIST, WATCH, POST, PUT, PATCH and DELETE";

/// Refuses a write without the right bearer token (401).
pub fn authorize(state: &ApiState, caller: &Caller) -> Result<(), ApiError> {
    if caller.is_authorised(state.token.as_ref()) {
        return Ok(());
    }
    let Some(token) = &state.token else {
        return Err(ApiError::unauthorized(
            "Unauthorized: this server accepts no writes (it has no API token)",
        ));
    };
    match &caller.token {
        Some(candidate) if token.matches(candidate) => Ok(()),
        Some(_) => Err(ApiError::unauthorized(
            "Unauthorized: the bearer token is not valid (it is in the api-token file of the data folder)",
        )),
        None => Err(ApiError::unauthorized(
            "Unauthorized: writes need `Authorization: Bearer <token>` (the token is in the api-token file of the data folder; \
             kubectl sends no token over plain HTTP: put it in the server URL, --server http://token:<token>@HOST:PORT)",
        )),
    }
}

/// What a write addresses: one object of a stored kind (not its status, not a collection).
fn object_key(verb: &str, target: Target) -> Result<ObjectKey, ApiError> {
    let resource = target.resource();
    let not_allowed =
        |why: &str| ApiError::method_not_allowed(verb, resource.plural(), resource.group(), why);
    match (target, resource) {
        (_, Resource::Namespaces) => Err(not_allowed(
            "namespaces are derived from the stored objects",
        )),
        (_, Resource::Events) => Err(not_allowed("events are derived from the store's history")),
        (Target::Collection { .. }, _) => Err(not_allowed(
            "collections cannot be changed at once; address one object",
        )),
        (Target::Object { status: true, .. }, _) => {
            Err(not_allowed("the status is written by the controllers"))
        }
        (
            Target::Object {
                namespace, name, ..
            },
            Resource::Kind(kind),
        ) => Ok(ObjectKey::new(kind, namespace.unwrap_or_default(), name)),
    }
}

/// Whether the API creates and changes objects of `kind` (not the appliance's own records).
fn api_writable(kind: Kind) -> bool {
    !matches!(kind, Kind::ManifestFile | Kind::TransportArchive)
}

/// Who an existing object belongs to, which decides what the API may change of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// Defined by this manifest file (its path in the folder).
    File(String),
    /// Made by a controller (`owned by Execution x`, or the label of its parent).
    Controller(String),
    /// A record the appliance keeps (`ManifestFile`, `TransportArchive`).
    Appliance,
    /// Created through the API.
    Api,
}

impl Owner {
    /// `manifest file a.yaml`, `its controller (owned by Execution x)`, `the appliance`,
    /// `the API`: how messages, `describe` and the status page name the owner.
    pub fn describe(&self) -> String {
        match self {
            Owner::File(path) => format!("manifest file {path}"),
            Owner::Controller(by) => format!("its controller ({by})"),
            Owner::Appliance => "the appliance".to_string(),
            Owner::Api => "the API".to_string(),
        }
    }
}

/// The owner of the stored `object` with `key`.
pub fn owner_of(store: &Store, key: &ObjectKey, object: &Value) -> Result<Owner, StoreError> {
    if !api_writable(key.kind) {
        return Ok(Owner::Appliance);
    }
    let files = store.list(Kind::ManifestFile, None, &LabelSelector::everything())?;
    Ok(owner_among(&files.items, key, object))
}

/// [`owner_of`] given the `ManifestFile` objects (the status page and `describe` have them).
pub fn owner_among(files: &[Value], key: &ObjectKey, object: &Value) -> Owner {
    if !api_writable(key.kind) {
        return Owner::Appliance;
    }
    if let Some(path) = defining_file_among(files, key) {
        return Owner::File(path);
    }
    controlled_by(object).map_or(Owner::Api, Owner::Controller)
}

/// `fieldValidation`: what happens to fields the kind does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    /// The write is refused (400) naming them.
    Strict,
    /// One `Warning` header per field (kube-apiserver's default).
    Warn,
    /// Dropped silently.
    Ignore,
}

/// The query parameters of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and answer, store nothing.
    pub dry_run: bool,
    pub field_validation: FieldValidation,
    /// `fieldManager`, else the first word of the `User-Agent` (as kube-apiserver names it).
    pub field_manager: String,
    /// `force` (server-side apply only): take over conflicting fields.
    pub force: bool,
}

impl WriteOptions {
    /// The options of a write from its query; `apply`: a server-side apply, which needs a
    /// `fieldManager`.
    pub fn from_query(
        params: &HashMap<String, String>,
        headers: &HeaderMap,
        apply: bool,
    ) -> Result<WriteOptions, ApiError> {
        let dry_run = match params.get("dryRun").map(String::as_str) {
            None | Some("") => false,
            Some("All") => true,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "dryRun: unsupported value {other:?} (only \"All\")"
                )));
            }
        };
        let field_validation = match params.get("fieldValidation").map(String::as_str) {
            None | Some("") | Some("Warn") => FieldValidation::Warn,
            Some("Strict") => FieldValidation::Strict,
            Some("Ignore") => FieldValidation::Ignore,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "fieldValidation: unsupported value {other:?} (one of Strict, Warn, Ignore)"
                )));
            }
        };
        let force = match params.get("force").map(String::as_str) {
            None | Some("") | Some("false") => false,
            Some("true") if apply => true,
            Some("true") => {
                return Err(ApiError::bad_request(
                    "force: Invalid value: true: may not be specified for non-apply patch",
                ));
            }
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "force: unsupported value {other:?} (true or false)"
                )));
            }
        };
        let field_manager = match params.get("fieldManager").filter(|m| !m.is_empty()) {
            Some(manager) => manager.clone(),
            None if apply => {
                return Err(ApiError::bad_request(
                    "PATCH: fieldManager is required for apply requests",
                ));
            }
            None => user_agent_manager(headers),
        };
        if field_manager.chars().count() > 128 || field_manager.chars().any(char::is_control) {
            return Err(ApiError::bad_request(
                "fieldManager: Invalid value: must be at most 128 printable characters",
            ));
        }
        Ok(WriteOptions {
            dry_run,
            field_validation,
            field_manager,
            force,
        })
    }
}

/// kube-apiserver's default field manager: the `User-Agent` up to its first `/`, at most 128
/// characters (`kubectl/v1.34.0 (linux/amd64) …` → `kubectl`).
fn user_agent_manager(headers: &HeaderMap) -> String {
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let prefix: String = agent
        .split('/')
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .take(128)
        .collect();
    if prefix.is_empty() {
        "unknown".to_string()
    } else {
        prefix
    }
}

/// The body formats of `PATCH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

/// The patch type of a `PATCH`, by `Content-Type`. kube-apiserver refuses strategic merge
/// patches of custom resources (they have no patch strategy), and so do we for Landscaper's
/// kinds.
fn check_patch_type(kind: Kind, headers: &HeaderMap) -> Result<PatchType, ApiError> {
    let media = media_type(headers);
    let accepted = if kind.group().is_empty() {
        "application/json-patch+json, application/merge-patch+json, \
         application/strategic-merge-patch+json, application/apply-patch+yaml"
    } else {
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    };
    match media.as_str() {
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/strategic-merge-patch+json" if kind.group().is_empty() => {
            Ok(PatchType::Strategic)
        }
        "application/apply-patch+yaml" => Ok(PatchType::Apply),
        "" => Err(ApiError::unsupported_media_type(format!(
            "a PATCH needs a Content-Type: accepted media types include: {accepted}"
        ))),
        _ => Err(ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: {accepted}"
        ))),
    }
}

/// The media type of the body, lower case, without parameters.
fn media_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// A request body: JSON, YAML for server-side apply and `application/yaml`, or the protobuf
/// client-go's typed clients send for ConfigMaps and Secrets (`kubectl create secret`).
fn parse_body(body: &[u8], yaml: bool) -> Result<Value, ApiError> {
    if kube_protobuf::is_envelope(body) {
        return kube_protobuf::decode(body).ok_or_else(|| {
            ApiError::unsupported_media_type(
                "the protobuf body is not a ConfigMap or Secret this server reads: send JSON",
            )
        });
    }
    match serde_json::from_slice(body) {
        Ok(value) => Ok(value),
        Err(e) if !yaml => Err(ApiError::bad_request(format!(
            "the request body is not valid JSON: {e}"
        ))),
        Err(_) => {
            let text = std::str::from_utf8(body)
                .map_err(|_| ApiError::bad_request("the request body is not UTF-8"))?;
            serde_saphyr::from_str::<Value>(text).map_err(|e| {
                ApiError::bad_request(format!(
                    "the request body is not valid YAML: {}",
                    crate::daemon::ingest::manifest::yaml_message(&e.to_string())
                ))
            })
        }
    }
}

/// What a write asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// `POST`: a new object.
    Create(Value),
    /// `PUT`: the object as it shall be.
    Replace(Value),
    /// `PATCH`.
    Patch(PatchType, Value),
}

impl Change {
    fn verb(&self) -> &'static str {
        match self {
            Change::Create(_) => "create",
            Change::Replace(_) => "update",
            Change::Patch(PatchType::Apply, _) => "apply",
            Change::Patch(..) => "patch",
        }
    }
}

/// What a write stored (or would store, for a dry run).
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub object: Value,
    /// The write created the object.
    pub created: bool,
    /// `Warning` header texts (unknown fields with `fieldValidation=Warn`).
    pub warnings: Vec<String>,
}

/// Does one write with optimistic concurrency (patches and applies are retried when something
/// else changed the object in between). Blocking.
pub fn write_object(
    store: &Store,
    key: &ObjectKey,
    change: &Change,
    options: &WriteOptions,
    now: &str,
) -> Result<Written, ApiError> {
    for _ in 0..ATTEMPTS {
        let current = if key.name.is_empty() {
            None
        } else {
            store.get(key)?
        };
        let owner = match &current {
            Some(current) => owner_of(store, key, current)?,
            None => Owner::Api,
        };
        let desired = desired_object(key, current.as_ref(), change, options, now)?;
        let (object, warnings) =
            admit_write(key, current.as_ref(), desired, &owner, change, options, now)?;
        let created = current.is_none();
        if options.dry_run {
            return Ok(Written {
                object: as_if_stored(current.as_ref(), object, now),
                created,
                warnings,
            });
        }
        if current.as_ref() == Some(&object) {
            return Ok(Written {
                object,
                created,
                warnings,
            });
        }
        let transaction = if created {
            Transaction::new().create(object)
        } else {
            Transaction::new().update(object)
        };
        let retry = matches!(change, Change::Patch(..));
        match store.commit_blocking(transaction) {
            Ok(committed) => {
                let object = committed
                    .objects
                    .into_iter()
                    .next()
                    .flatten()
                    .ok_or_else(|| not_found(key))?;
                return Ok(Written {
                    object,
                    created,
                    warnings,
                });
            }
            Err(StoreError::Transaction(
                TransactionError::Conflict { .. } | TransactionError::AlreadyExists { .. },
            )) if retry => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::from(conflict(key)))
}

/// The object a write asks for, before admission: the body of a create or update (checked
/// against the stored object), or the stored object with the patch applied.
fn desired_object(
    key: &ObjectKey,
    current: Option<&Value>,
    change: &Change,
    options: &WriteOptions,
    now: &str,
) -> Result<Value, ApiError> {
    let (kind, name) = (key.kind, key.name.as_str());
    let stale = || {
        ApiError::conflict(
            kind,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    };
    match change {
        Change::Create(body) => match current {
            Some(_) => Err(ApiError::already_exists(kind, name)),
            None => Ok(body.clone()),
        },
        Change::Replace(body) => {
            let current = current.ok_or_else(|| not_found(key))?;
            match object::resource_version(body) {
                "" if !kind.group().is_empty() => Err(ApiError::invalid_value(
                    kind,
                    name,
                    "metadata.resourceVersion",
                    "0x0: must be specified for an update",
                )),
                "" => Ok(body.clone()),
                rv if rv != object::resource_version(current) => Err(stale()),
                _ => Ok(body.clone()),
            }
        }
        Change::Patch(PatchType::Apply, applied) => {
            let live = current.map(|c| with_type_meta(kind, c.clone()));
            kube_patch::server_side_apply(kube_patch::ApplyRequest {
                live: live.as_ref(),
                applied,
                manager: &options.field_manager,
                force: options.force,
                now,
            })
            .map_err(|e| patch_error(kind, name, e))
        }
        Change::Patch(patch_type, patch) => {
            let current = current.ok_or_else(|| not_found(key))?;
            let base = with_type_meta(kind, current.clone());
            let patched = match patch_type {
                PatchType::Json => kube_patch::json_patch(&base, patch),
                PatchType::Strategic => kube_patch::strategic_merge_patch(&base, patch),
                _ => kube_patch::merge_patch(&base, patch),
            }
            .map_err(|e| patch_error(kind, name, e))?;
            // A resourceVersion the patch sets is a precondition.
            match object::resource_version(&patched) {
                "" => Ok(patched),
                rv if rv != object::resource_version(current) => Err(stale()),
                _ => Ok(patched),
            }
        }
    }
}

/// A failed patch as kube-apiserver answers it.
fn patch_error(kind: Kind, name: &str, error: kube_patch::PatchError) -> ApiError {
    match error {
        kube_patch::PatchError::BadRequest(message) => ApiError::bad_request(message),
        kube_patch::PatchError::Invalid(message) => {
            ApiError::invalid_value(kind, name, "<patch>", &message)
        }
        conflict @ kube_patch::PatchError::Conflict(_) => {
            ApiError::apply_conflict(kind, name, &conflict)
        }
    }
}

/// `object` with `apiVersion` and `kind` as `GET` shows them.
fn with_type_meta(kind: Kind, mut object: Value) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.entry("apiVersion")
            .or_insert_with(|| Value::String(kind.api_version().to_string()));
        map.entry("kind")
            .or_insert_with(|| Value::String(kind.as_str().to_string()));
    }
    object
}

/// The object a write stores: the desired object checked against the rules of its owner.
///
/// Type, name and namespace must be the addressed ones; `status` and the server's metadata
/// stay as stored. Objects the API does not own change only in labels and annotations (403
/// naming the owner otherwise); API-owned ones go through the folder's admission. Returns the
/// object and the warnings for the `Warning` header.
fn admit_write(
    key: &ObjectKey,
    current: Option<&Value>,
    mut desired: Value,
    owner: &Owner,
    change: &Change,
    options: &WriteOptions,
    now: &str,
) -> Result<(Value, Vec<String>), ApiError> {
    let (kind, name) = (key.kind, key.name.as_str());
    if !api_writable(kind) && current.is_none() {
        return Err(ApiError::method_not_allowed(
            "create",
            kind.plural(),
            kind.group(),
            "the appliance keeps these records of the manifests folder",
        ));
    }
    check_identity(key, &mut desired)?;
    let managed_fields = match change {
        Change::Patch(PatchType::Apply, _) => desired.pointer("/metadata/managedFields").cloned(),
        _ => None,
    };
    if let Some(current) = current {
        // Only labels and annotations: allowed whoever owns the object (also when a stored
        // object would not pass today's admission). Anything else only for the API's own.
        match labels_and_annotations_only(key, current, &desired, owner) {
            Ok(object) => {
                let object = track_fields(Some(current), object, managed_fields, options, now);
                return Ok((object, Vec::new()));
            }
            Err(e) if e.code == StatusCode::FORBIDDEN && *owner == Owner::Api => {}
            Err(e) => return Err(e),
        }
    }
    let map = object_map(&mut desired)?;
    map.remove("status");
    let meta = object::metadata_mut(&mut desired);
    for field in SERVER_METADATA {
        meta.remove(field);
    }
    meta.remove("managedFields");
    if current.is_none() {
        meta.remove("resourceVersion");
    }
    let validated = admit_object(&desired).map_err(|e| ApiError::invalid_field(kind, name, &e))?;
    let unknown: Vec<String> = validated.warnings;
    let warnings = match options.field_validation {
        FieldValidation::Strict if !unknown.is_empty() => {
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{}\" cannot be handled as a {kind}: strict decoding error: {}",
                kind.api_version().rsplit('/').next().unwrap_or_default(),
                unknown.join(", ")
            )));
        }
        FieldValidation::Warn => unknown,
        _ => Vec::new(),
    };
    let mut object = validated.object;
    if let Some(current) = current {
        keep_server_fields(current, &mut object);
    }
    let object = track_fields(current, object, managed_fields, options, now);
    Ok((object, warnings))
}

/// The object's type, name and namespace must be those addressed (400 otherwise; missing
/// ones are filled in).
fn check_identity(key: &ObjectKey, desired: &mut Value) -> Result<(), ApiError> {
    let kind = key.kind;
    let map = object_map(desired)?;
    for (field, expected) in [("apiVersion", kind.api_version()), ("kind", kind.as_str())] {
        match map.get(field).and_then(Value::as_str) {
            None | Some("") => {
                map.insert(field.into(), Value::String(expected.to_string()));
            }
            Some(found) if found == expected => {}
            Some(found) => {
                return Err(ApiError::bad_request(format!(
                    "the {field} of the object ({found}) does not match the expected {field} ({expected})"
                )));
            }
        }
    }
    let meta = object::metadata_mut(desired);
    match meta.get("name").and_then(Value::as_str) {
        None | Some("") if !key.name.is_empty() => {
            meta.insert("name".into(), Value::String(key.name.clone()));
        }
        Some(found) if found != key.name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({found}) does not match the name on the URL ({})",
                key.name
            )));
        }
        _ => {}
    }
    if kind.namespaced() {
        match meta.get("namespace").and_then(Value::as_str) {
            None | Some("") => {
                meta.insert("namespace".into(), Value::String(key.namespace.clone()));
            }
            Some(found) if found != key.namespace => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {}
        }
    } else {
        meta.remove("namespace");
    }
    Ok(())
}

fn object_map(value: &mut Value) -> Result<&mut Map<String, Value>, ApiError> {
    value
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object must be a JSON object"))
}

/// For an object the API does not own: the stored object with the desired labels and
/// annotations, or a 403 naming the owner and the first other field the write would change.
fn labels_and_annotations_only(
    key: &ObjectKey,
    current: &Value,
    desired: &Value,
    owner: &Owner,
) -> Result<Value, ApiError> {
    let (kind, name) = (key.kind, key.name.as_str());
    // Compare in the stored form (the admission's typed form, when the object passes it).
    let mut normal = desired.clone();
    if let Some(map) = normal.as_object_mut() {
        map.remove("status");
    }
    object::metadata_mut(&mut normal).remove("managedFields");
    // Unknown fields (which the typed form drops) are changes too.
    let (mut normal, unknown) = match admit_object(&normal) {
        Ok(validated) => (validated.object, validated.warnings.into_iter().next()),
        Err(_) => (normal, None),
    };
    keep_server_fields(current, &mut normal);
    let mut stored = current.clone();
    object::metadata_mut(&mut stored).remove("managedFields");
    let unknown = unknown.map(|warning| {
        warning
            .strip_prefix("unknown field \"")
            .and_then(|w| w.strip_suffix('"'))
            .unwrap_or(&warning)
            .to_string()
    });
    if let Some(field) = unknown.or_else(|| {
        first_difference(
            &without_patchable(&with_type_meta(kind, stored)),
            &without_patchable(&with_type_meta(kind, normal)),
        )
    }) {
        return Err(ApiError::forbidden(
            kind,
            name,
            &format!(
                "{} is owned by {}: only metadata.labels and metadata.annotations can be changed through the API, not {field}{}",
                describe(key),
                owner.describe(),
                match owner {
                    Owner::File(_) => " (change the file instead)",
                    _ => "",
                }
            ),
        ));
    }
    let mut object = current.clone();
    let meta = object::metadata_mut(&mut object);
    for field in PATCHABLE {
        let path = format!("metadata.{field}");
        match desired.pointer(&format!("/metadata/{field}")) {
            Some(Value::Object(map)) if !map.is_empty() => {
                if let Some((key, _)) = map.iter().find(|(_, v)| !v.is_string()) {
                    return Err(ApiError::invalid_value(
                        kind,
                        name,
                        &format!("{path}[{key}]"),
                        "must be a string",
                    ));
                }
                meta.insert(field.into(), Value::Object(map.clone()));
            }
            Some(Value::Object(_) | Value::Null) | None => {
                meta.remove(field);
            }
            Some(_) => {
                return Err(ApiError::invalid_value(
                    kind,
                    name,
                    &path,
                    "must be a map of strings",
                ));
            }
        }
    }
    check_metadata_maps(kind, name, &object)?;
    Ok(object)
}

/// Status, server metadata and the resourceVersion (for the optimistic update) from the
/// stored object.
fn keep_server_fields(current: &Value, object: &mut Value) {
    if let Some(map) = object.as_object_mut() {
        match current.get("status") {
            Some(status) => map.insert("status".into(), status.clone()),
            None => map.remove("status"),
        };
    }
    let stored = object::metadata(current).cloned().unwrap_or_default();
    let meta = object::metadata_mut(object);
    for field in SERVER_METADATA.iter().chain(&["resourceVersion"]) {
        match stored.get(*field) {
            Some(value) => meta.insert((*field).to_string(), value.clone()),
            None => meta.remove(*field),
        };
    }
}

/// `metadata.managedFields` after the write: the apply's own bookkeeping, or kube-patch's
/// tracking of an update by the field manager.
fn track_fields(
    current: Option<&Value>,
    mut object: Value,
    applied: Option<Value>,
    options: &WriteOptions,
    now: &str,
) -> Value {
    match applied {
        Some(fields) => {
            object::metadata_mut(&mut object).insert("managedFields".into(), fields);
            object
        }
        None => {
            if let Some(fields) = current.and_then(|c| c.pointer("/metadata/managedFields")) {
                object::metadata_mut(&mut object).insert("managedFields".into(), fields.clone());
            }
            kube_patch::track_update(current, &object, &options.field_manager, None, now)
        }
    }
}

/// A dry run's answer: the object as the store would have stored it.
fn as_if_stored(current: Option<&Value>, mut object: Value, now: &str) -> Value {
    match current {
        None => {
            let meta = object::metadata_mut(&mut object);
            meta.insert(
                "uid".into(),
                Value::String(uuid::Uuid::new_v4().to_string()),
            );
            meta.insert("creationTimestamp".into(), Value::String(now.to_string()));
            meta.insert("generation".into(), Value::from(1));
        }
        Some(current) => {
            let generation = object::generation(current);
            let changed = current.get("spec") != object.get("spec");
            object::metadata_mut(&mut object).insert(
                "generation".into(),
                Value::from(generation + i64::from(changed)),
            );
        }
    }
    object
}

/// The answer to a write: the object (201 when created), unknown fields as `Warning` headers.
fn written_response(kind: Kind, written: Written) -> Response {
    let mut response = json_response(&present_as(kind, written.object, true));
    if written.created {
        *response.status_mut() = StatusCode::CREATED;
    }
    for warning in &written.warnings {
        let text = format!("299 - {}", Value::String(warning.clone()));
        if let Ok(value) = HeaderValue::from_str(&text) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

/// Runs one write on the blocking pool and logs it.
async fn serve_write(
    state: &ApiState,
    key: ObjectKey,
    change: Change,
    options: WriteOptions,
) -> Result<Response, ApiError> {
    let store = state.store.clone();
    let (kind, what, verb) = (key.kind, describe(&key), change.verb());
    let manager = options.field_manager.clone();
    let dry_run = options.dry_run;
    let written = blocking_api(move || {
        let now = landscaper_store::clock::format_time(jiff::Timestamp::now());
        write_object(&store, &key, &change, &options, &now)
    })
    .await?;
    if !dry_run {
        tracing::info!(object = %what, verb, manager, created = written.created, "object written through the API");
    }
    Ok(written_response(kind, written))
}

/// `POST` to a collection: creates the object of the body.
pub async fn create(
    state: &ApiState,
    target: Target,
    params: &HashMap<String, String>,
    headers: &HeaderMap,
    caller: &Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    authorize(state, caller)?;
    let resource = target.resource();
    let (kind, namespace) = match (target, resource) {
        (Target::Collection { namespace, .. }, Resource::Kind(kind)) if api_writable(kind) => {
            (kind, namespace)
        }
        (Target::Collection { .. }, Resource::Kind(kind)) => {
            return Err(ApiError::method_not_allowed(
                "create",
                kind.plural(),
                kind.group(),
                "the appliance keeps these records of the manifests folder",
            ));
        }
        (target, _) => {
            // Objects, status, namespaces and events: as for other writes.
            object_key("POST", target)?;
            return Err(ApiError::method_not_allowed(
                "POST",
                resource.plural(),
                resource.group(),
                "create objects with a POST to their collection",
            ));
        }
    };
    let options = WriteOptions::from_query(params, headers, false)?;
    let object = parse_body(&body, media_type(headers).contains("yaml"))?;
    let text = |field: &str| {
        object
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let name = text("name");
    if name.is_empty() && text("generateName").is_empty() {
        return Err(ApiError::invalid(
            kind,
            "",
            "metadata.name",
            "FieldValueRequired",
            "Required value",
            "name or generateName is required",
        ));
    }
    let namespace = match namespace {
        Some(namespace) => namespace,
        None if kind.namespaced() => match text("namespace") {
            n if n.is_empty() => landscaper_store::object::DEFAULT_NAMESPACE.to_string(),
            n => n,
        },
        None => String::new(),
    };
    let key = ObjectKey::new(kind, namespace, name);
    serve_write(state, key, Change::Create(object), options).await
}

/// `PUT` of one object: replaces it.
pub async fn update(
    state: &ApiState,
    target: Target,
    params: &HashMap<String, String>,
    headers: &HeaderMap,
    caller: &Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    authorize(state, caller)?;
    let key = object_key("PUT", target)?;
    let options = WriteOptions::from_query(params, headers, false)?;
    let object = parse_body(&body, media_type(headers).contains("yaml"))?;
    serve_write(state, key, Change::Replace(object), options).await
}

/// `PATCH` of one object (see the module documentation).
pub async fn patch(
    state: &ApiState,
    target: Target,
    params: &HashMap<String, String>,
    headers: &HeaderMap,
    caller: &Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    authorize(state, caller)?;
    let key = object_key("PATCH", target)?;
    let patch_type = check_patch_type(key.kind, headers)?;
    let apply = patch_type == PatchType::Apply;
    let options = WriteOptions::from_query(params, headers, apply)?;
    let patch = parse_body(&body, apply)?;
    if matches!(patch_type, PatchType::Merge | PatchType::Strategic) && !patch.is_object() {
        return Err(ApiError::bad_request(
            "a merge patch must be a JSON object, e.g. {\"metadata\":{\"annotations\":{...}}}",
        ));
    }
    serve_write(state, key, Change::Patch(patch_type, patch), options).await
}

/// A merge patch of `patch` by the status page: its operations on Installations. Returns the
/// object as stored (as it would be, for `dry_run`). Blocking.
pub fn patch_object(
    store: &Store,
    key: &ObjectKey,
    patch: &Value,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let options = WriteOptions {
        dry_run,
        field_validation: FieldValidation::Ignore,
        field_manager: UI_FIELD_MANAGER.to_string(),
        force: false,
    };
    let now = landscaper_store::clock::format_time(jiff::Timestamp::now());
    let change = Change::Patch(PatchType::Merge, patch.clone());
    write_object(store, key, &change, &options, &now).map(|w| w.object)
}

/// `DELETE` of one object (see the module documentation).
pub async fn delete(
    state: &ApiState,
    target: Target,
    params: &HashMap<String, String>,
    caller: &Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    authorize(state, caller)?;
    let key = object_key("DELETE", target)?;
    let dry_run = WriteOptions::from_query(params, &HeaderMap::new(), false)?.dry_run;
    let preconditions = Preconditions::from_body(&body)?;
    let store = state.store.clone();
    let (kind, what) = (key.kind, describe(&key));
    let (object, gone) = blocking_api(move || {
        let owner = defining_file(&store, &key)?;
        for _ in 0..ATTEMPTS {
            let current = store.get(&key)?.ok_or_else(|| not_found(&key))?;
            preconditions.check(&key, &current)?;
            if let Some(file) = &owner {
                return Err(ApiError::conflict(
                    key.kind,
                    &key.name,
                    &format!(
                        "{} is defined by manifest file {file}: remove it from the folder instead",
                        describe(&key)
                    ),
                ));
            }
            if matches!(key.kind, Kind::ManifestFile | Kind::TransportArchive) {
                let path = current
                    .pointer("/spec/path")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let what = if key.kind == Kind::ManifestFile {
                    "manifest file"
                } else {
                    "transport archive"
                };
                return Err(ApiError::conflict(
                    key.kind,
                    &key.name,
                    &format!(
                        "{} {} records the {what} {path}: remove the file from the folder instead",
                        key.kind, key.name
                    ),
                ));
            }
            if dry_run {
                let finalizers = !object::finalizers(&current).is_empty();
                return Ok((current, !finalizers));
            }
            let rv = object::resource_version(&current).to_string();
            match store.commit_blocking(Transaction::new().delete(key.clone(), Some(rv))) {
                Ok(committed) => {
                    return Ok(match committed.objects.into_iter().next().flatten() {
                        Some(deleting) => (deleting, false),
                        None => (current, true),
                    });
                }
                Err(StoreError::Transaction(TransactionError::Conflict { .. })) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApiError::from(conflict(&key)))
    })
    .await?;
    if !dry_run {
        tracing::info!(object = %what, removed = gone, "object deleted through the API");
    }
    if gone {
        // Like kube-apiserver for custom resources: a Status once the object is gone.
        return Ok(json_response(&deleted_status(kind, &object)));
    }
    // The object with its deletionTimestamp while finalizers keep it (200, as kube-apiserver
    // answers unless the deprecated `orphanDependents: false` was sent).
    Ok(json_response(&present_as(kind, object, true)))
}

/// kube-apiserver's answer to a delete that removed the object at once.
fn deleted_status(kind: Kind, object: &Value) -> Value {
    let mut details = Map::new();
    details.insert(
        "name".into(),
        Value::String(object::name(object).to_string()),
    );
    if !kind.group().is_empty() {
        details.insert("group".into(), Value::String(kind.group().to_string()));
    }
    details.insert("kind".into(), Value::String(kind.plural().to_string()));
    details.insert("uid".into(), Value::String(object::uid(object).to_string()));
    serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Success", "details": details})
}

/// Runs store work that answers with API errors on the blocking pool.
async fn blocking_api<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    blocking(move || Ok(work())).await?
}

fn not_found(key: &ObjectKey) -> ApiError {
    ApiError::not_found(key.kind.plural(), key.kind.group(), &key.name)
}

fn conflict(key: &ObjectKey) -> StoreError {
    StoreError::Transaction(TransactionError::Conflict {
        key: key.clone(),
        expected: String::new(),
        actual: String::new(),
    })
}

/// `Installation default/x`, or `ManifestFile x` for cluster-scoped kinds.
fn describe(key: &ObjectKey) -> String {
    if key.namespace.is_empty() {
        format!("{} {}", key.kind.as_str(), key.name)
    } else {
        format!("{} {}/{}", key.kind.as_str(), key.namespace, key.name)
    }
}

/// The path of the manifest file that defines the object, if one does: the `ManifestFile`
/// objects list what their file produced (`status.objects`, as of the last applied revision).
pub fn defining_file(
    store: &landscaper_store::Store,
    key: &ObjectKey,
) -> Result<Option<String>, StoreError> {
    if key.kind == Kind::ManifestFile {
        return Ok(None);
    }
    let files = store.list(Kind::ManifestFile, None, &LabelSelector::everything())?;
    Ok(defining_file_among(&files.items, key))
}

/// [`defining_file`] given the `ManifestFile` objects.
fn defining_file_among(files: &[Value], key: &ObjectKey) -> Option<String> {
    if key.kind == Kind::ManifestFile {
        return None;
    }
    files.iter().find_map(|file| {
        let objects = file.pointer("/status/objects")?.as_array()?;
        objects.iter().any(|r| reference_is(r, key)).then(|| {
            file.pointer("/spec/path")
                .and_then(Value::as_str)
                .unwrap_or_else(|| object::name(file))
                .to_string()
        })
    })
}

fn reference_is(reference: &Value, key: &ObjectKey) -> bool {
    let field = |f: &str| reference.get(f).and_then(Value::as_str).unwrap_or("");
    Kind::from_type_meta(field("apiVersion"), field("kind")) == Some(key.kind)
        && field("namespace") == key.namespace
        && field("name") == key.name
}

/// `DeleteOptions.preconditions`.
#[derive(Debug, Default)]
struct Preconditions {
    uid: Option<String>,
    resource_version: Option<String>,
}

impl Preconditions {
    fn from_body(body: &[u8]) -> Result<Preconditions, ApiError> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Preconditions::default());
        }
        let options: Value = serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("DeleteOptions: not valid JSON: {e}")))?;
        let get = |f: &str| {
            options
                .pointer(&format!("/preconditions/{f}"))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        match options.get("propagationPolicy") {
            None | Some(Value::Null) => {}
            Some(Value::String(p))
                if ["Orphan", "Background", "Foreground"].contains(&p.as_str()) => {}
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "DeleteOptions.propagationPolicy: Unsupported value: {other}: supported values: \"Foreground\", \"Background\", \"Orphan\""
                )));
            }
        }
        Ok(Preconditions {
            uid: get("uid"),
            resource_version: get("resourceVersion"),
        })
    }

    fn check(&self, key: &ObjectKey, object: &Value) -> Result<(), ApiError> {
        for (what, wanted, actual) in [
            ("UID", &self.uid, object::uid(object)),
            (
                "ResourceVersion",
                &self.resource_version,
                object::resource_version(object),
            ),
        ] {
            if let Some(wanted) = wanted
                && wanted != actual
            {
                return Err(ApiError::conflict(
                    key.kind,
                    &key.name,
                    &format!(
                        "Precondition failed: {what} in precondition: {wanted}, {what} in object meta: {actual}"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The patched labels and annotations follow the rules the manifest ingest applies
/// ([`validate_labels_and_annotations`]): 422 naming the first bad key or value.
fn check_metadata_maps(kind: Kind, name: &str, object: &Value) -> Result<(), ApiError> {
    let map_at = |field: &str| {
        object
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect::<BTreeMap<String, String>>()
            })
    };
    let (labels, annotations) = (map_at("labels"), map_at("annotations"));
    match validate_labels_and_annotations(labels.as_ref(), annotations.as_ref())
        .into_iter()
        .next()
    {
        None => Ok(()),
        Some(error) => Err(ApiError::invalid_field(kind, name, &error)),
    }
}

/// The object without the fields a patch may change.
fn without_patchable(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in PATCHABLE {
            meta.remove(field);
        }
        meta.remove("resourceVersion");
    }
    object
}

/// The path (`spec.imports.data[0]`) of the first place where `a` and `b` differ.
fn first_difference(a: &Value, b: &Value) -> Option<String> {
    fn walk(a: &Value, b: &Value, path: &mut String) -> Option<String> {
        match (a, b) {
            (Value::Object(a), Value::Object(b)) => {
                let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
                keys.sort();
                keys.dedup();
                for key in keys {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                    let found = match (a.get(key.as_str()), b.get(key.as_str())) {
                        (Some(x), Some(y)) => walk(x, y, path),
                        _ => Some(path.clone()),
                    };
                    path.truncate(len);
                    if found.is_some() {
                        return found;
                    }
                }
                None
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (x, y)) in x.iter().zip(y).enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    let found = walk(x, y, path);
                    path.truncate(len);
                    if found.is_some() {
                        return found;
                    }
                }
                None
            }
            _ if a == b => None,
            _ => Some(if path.is_empty() {
                "<root>".to_string()
            } else {
                path.clone()
            }),
        }
    }
    walk(a, b, &mut String::new())
}

/// Verbs other than GET, HEAD, PATCH and DELETE (405).
pub fn unsupported(method: &str, resource: Resource) -> Response {
    ApiError::method_not_allowed(method, resource.plural(), resource.group(), WRITES_ALLOWED)
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use serde_json::json;

    fn installation() -> Value {
        json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
            "metadata": {"name": "a", "namespace": "default", "resourceVersion": "7", "uid": "u",
                "annotations": {"keep": "1"}, "labels": {"l": "x"}, "finalizers": ["f"]},
            "spec": {"imports": {"data": [{"name": "d", "dataRef": "x"}]}},
            "status": {"phase": "Succeeded"}})
    }

    const NOW: &str = "2026-01-02T03:04:05Z";

    fn options(field_validation: FieldValidation) -> WriteOptions {
        WriteOptions {
            dry_run: false,
            field_validation,
            field_manager: "test".into(),
            force: false,
        }
    }

    /// The object a write of `change` to `current` (owned by `owner`) would store.
    fn change_as(owner: &Owner, current: &Value, change: Change) -> Result<Value, ApiError> {
        write_as(owner, Some(current), change, FieldValidation::Warn).map(|(o, _)| o)
    }

    fn write_as(
        owner: &Owner,
        current: Option<&Value>,
        change: Change,
        field_validation: FieldValidation,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let key = ObjectKey::new(Kind::Installation, "default", "a");
        let options = options(field_validation);
        let desired = desired_object(&key, current, &change, &options, NOW)?;
        admit_write(&key, current, desired, owner, &change, &options, NOW)
    }

    /// A merge patch of the file-owned `current`.
    fn apply_patch(_: Kind, _: &str, current: &Value, patch: &Value) -> Result<Value, ApiError> {
        change_as(
            &Owner::File("a.yaml".into()),
            current,
            Change::Patch(PatchType::Merge, patch.clone()),
        )
    }

    /// An Installation the admission takes, as the API would have stored it.
    fn api_installation() -> Value {
        let (mut object, _) = write_as(
            &Owner::Api,
            None,
            Change::Create(json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1",
                "kind": "Installation", "metadata": {"name": "a"},
                "spec": {"blueprint": {"ref": {"resourceName": "b"}}}})),
            FieldValidation::Strict,
        )
        .unwrap();
        let meta = object::metadata_mut(&mut object);
        meta.insert("uid".into(), json!("u"));
        meta.insert("resourceVersion".into(), json!("7"));
        meta.insert("generation".into(), json!(1));
        object["status"] = json!({"phase": "Succeeded"});
        object
    }

    #[test]
    fn annotations_and_labels_are_merged() {
        let patch = json!({"metadata": {"annotations": {
            "landscaper.gardener.cloud/operation": "reconcile", "keep": null},
            "labels": {"new": "y"}}});
        let out = apply_patch(Kind::Installation, "a", &installation(), &patch).unwrap();
        assert_eq!(
            out["metadata"]["annotations"],
            json!({"landscaper.gardener.cloud/operation": "reconcile"})
        );
        assert_eq!(out["metadata"]["labels"], json!({"l": "x", "new": "y"}));
        assert_eq!(out["metadata"]["resourceVersion"], "7");
        assert_eq!(out["spec"], installation()["spec"]);
        // Removing the last annotation removes the map.
        let out = apply_patch(
            Kind::Installation,
            "a",
            &installation(),
            &json!({"metadata": {"annotations": {"keep": null}}}),
        )
        .unwrap();
        assert!(out["metadata"].get("annotations").is_none(), "{out}");
    }

    #[test]
    fn a_patch_may_repeat_unchanged_fields() {
        let patch = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
            "metadata": {"name": "a", "resourceVersion": "7", "annotations": {"x": "1"}},
            "status": {"phase": "Succeeded"}});
        let out = apply_patch(Kind::Installation, "a", &installation(), &patch).unwrap();
        assert_eq!(out["metadata"]["annotations"]["x"], "1");
        // Objects stored without type meta stay without.
        let mut bare = installation();
        bare.as_object_mut().unwrap().remove("kind");
        bare.as_object_mut().unwrap().remove("apiVersion");
        let out = apply_patch(Kind::Installation, "a", &bare, &patch).unwrap();
        assert!(out.get("kind").is_none());
    }

    #[test]
    fn other_fields_of_a_file_owned_object_are_forbidden_by_name() {
        let cases = [
            (json!({"spec": {"imports": null}}), "spec.imports"),
            (
                json!({"spec": {"imports": {"data": [{"name": "d", "dataRef": "y"}]}}}),
                "spec.imports.data[0].dataRef",
            ),
            (json!({"spec": {"context": "other"}}), "spec.context"),
        ];
        for (patch, field) in cases {
            let err = apply_patch(Kind::Installation, "a", &installation(), &patch).unwrap_err();
            assert_eq!(err.code, StatusCode::FORBIDDEN, "{patch}");
            assert_eq!(err.reason, "Forbidden");
            assert_eq!(
                err.message,
                format!(
                    "installations.landscaper.gardener.cloud \"a\" is forbidden: Installation default/a \
                     is owned by manifest file a.yaml: only metadata.labels and metadata.annotations \
                     can be changed through the API, not {field} (change the file instead)"
                ),
                "{patch}"
            );
            assert_eq!(err.details["name"], "a");
            assert_eq!(err.details["group"], "landscaper.gardener.cloud");
            assert_eq!(err.details["kind"], "installations");
        }
        // Status and the server's metadata are not the caller's: left as stored, no error.
        let patch = json!({"status": {"phase": "Failed"}, "metadata": {"finalizers": null}});
        let out = apply_patch(Kind::Installation, "a", &installation(), &patch).unwrap();
        assert_eq!(out, installation());
        // Type, name and namespace must be those addressed.
        for patch in [
            json!({"metadata": {"name": "b"}}),
            json!({"metadata": {"namespace": "other"}}),
            json!({"kind": "Execution"}),
        ] {
            let err = apply_patch(Kind::Installation, "a", &installation(), &patch).unwrap_err();
            assert_eq!(err.code, StatusCode::BAD_REQUEST, "{patch}");
        }
        // A controller's object says whose it is.
        let err = change_as(
            &Owner::Controller("owned by Installation p".into()),
            &installation(),
            Change::Patch(PatchType::Merge, json!({"spec": {"context": "x"}})),
        )
        .unwrap_err();
        assert!(
            err.message.contains(
                "is owned by its controller (owned by Installation p): only metadata.labels"
            ),
            "{}",
            err.message
        );
    }

    #[test]
    fn labels_and_annotations_follow_the_ingest_rules() {
        let bad = json!({"bad key!": "x\u{0000}y"});
        for field in ["labels", "annotations"] {
            let patch = json!({"metadata": {field: bad.clone()}});
            let err = apply_patch(Kind::Installation, "a", &installation(), &patch).unwrap_err();
            assert_eq!(err.code, StatusCode::UNPROCESSABLE_ENTITY, "{field}");
            assert_eq!(
                err.details["causes"][0]["field"],
                format!("metadata.{field}")
            );
            assert!(
                err.message.contains(&format!(
                    "is invalid: metadata.{field}: Invalid value: \"bad key!\": name part must consist of"
                )),
                "{}",
                err.message
            );
            // The same object through the ingest's validation: rejected the same way.
            let mut object = installation();
            object["metadata"][field] = bad.clone();
            object["spec"] = json!({"blueprint": {"ref": {"resourceName": "b"}}});
            let ingest = landscaper_store::model::validate_object(&object).unwrap_err();
            assert_eq!(
                (ingest.field.as_str(), ingest.message.as_str()),
                (
                    err.details["causes"][0]["field"].as_str().unwrap(),
                    err.details["causes"][0]["message"].as_str().unwrap()
                )
            );
        }
        // A label value with a NUL byte, a too long label value, oversized annotations.
        for patch in [
            json!({"metadata": {"labels": {"ok": "x\u{0000}y"}}}),
            json!({"metadata": {"labels": {"ok": "x".repeat(64)}}}),
            json!({"metadata": {"annotations": {"ok": "x".repeat(256 * 1024)}}}),
        ] {
            let err = apply_patch(Kind::Installation, "a", &installation(), &patch).unwrap_err();
            assert_eq!(err.code, StatusCode::UNPROCESSABLE_ENTITY, "{patch}");
        }
        // Good keys and values pass, the NUL byte in an annotation value too (as on an API server).
        let patch = json!({"metadata": {"labels": {"example.com/ok": "v-1"},
            "annotations": {"example.com/any": "x\u{0000}y"}}});
        apply_patch(Kind::Installation, "a", &installation(), &patch).unwrap();
    }

    #[test]
    fn values_and_directives_are_checked() {
        let err = apply_patch(
            Kind::Installation,
            "a",
            &installation(),
            &json!({"metadata": {"annotations": {"x": 1}}}),
        )
        .unwrap_err();
        assert_eq!(err.code, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(
            err.message.contains("metadata.annotations[x]"),
            "{}",
            err.message
        );
        // A merge patch has no directives: `$patch` is a (bad) label key.
        let err = apply_patch(
            Kind::Installation,
            "a",
            &installation(),
            &json!({"metadata": {"labels": {"$patch": "replace"}}}),
        )
        .unwrap_err();
        assert_eq!(err.code, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(err.message.contains("metadata.labels"), "{}", err.message);
        let err = apply_patch(
            Kind::Installation,
            "a",
            &installation(),
            &json!({"metadata": {"labels": "x"}}),
        )
        .unwrap_err();
        assert!(err.message.contains("metadata.labels"), "{}", err.message);
    }

    #[test]
    fn a_stale_resource_version_is_a_conflict() {
        let err = apply_patch(
            Kind::Installation,
            "a",
            &installation(),
            &json!({"metadata": {"resourceVersion": "6", "annotations": {"x": "1"}}}),
        )
        .unwrap_err();
        assert_eq!(err.code, StatusCode::CONFLICT);
    }

    #[test]
    fn patch_types_by_content_type() {
        let mut headers = HeaderMap::new();
        assert_eq!(
            check_patch_type(Kind::Installation, &headers)
                .unwrap_err()
                .code,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        for (ct, custom, core) in [
            (
                "application/merge-patch+json",
                Some(PatchType::Merge),
                Some(PatchType::Merge),
            ),
            (
                "application/strategic-merge-patch+json",
                None,
                Some(PatchType::Strategic),
            ),
            (
                "Application/Merge-Patch+JSON; charset=utf-8",
                Some(PatchType::Merge),
                Some(PatchType::Merge),
            ),
            (
                "application/json-patch+json",
                Some(PatchType::Json),
                Some(PatchType::Json),
            ),
            (
                "application/apply-patch+yaml",
                Some(PatchType::Apply),
                Some(PatchType::Apply),
            ),
            ("application/json", None, None),
        ] {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
            assert_eq!(
                check_patch_type(Kind::Installation, &headers).ok(),
                custom,
                "{ct}"
            );
            assert_eq!(check_patch_type(Kind::Secret, &headers).ok(), core, "{ct}");
        }
    }

    #[test]
    fn write_options_from_the_query() {
        let params = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            header::USER_AGENT,
            HeaderValue::from_static("kubectl/v1.34.1 (linux/amd64) kubernetes/abc"),
        );
        let defaults = WriteOptions::from_query(&params(&[]), &headers, false).unwrap();
        assert_eq!(
            defaults,
            WriteOptions {
                dry_run: false,
                field_validation: FieldValidation::Warn,
                field_manager: "kubectl".into(),
                force: false,
            }
        );
        let all = WriteOptions::from_query(
            &params(&[
                ("dryRun", "All"),
                ("fieldValidation", "Strict"),
                ("fieldManager", "kubectl-edit"),
            ]),
            &headers,
            false,
        )
        .unwrap();
        assert!(all.dry_run);
        assert_eq!(all.field_validation, FieldValidation::Strict);
        assert_eq!(all.field_manager, "kubectl-edit");
        let ignore =
            WriteOptions::from_query(&params(&[("fieldValidation", "Ignore")]), &headers, false);
        assert_eq!(ignore.unwrap().field_validation, FieldValidation::Ignore);
        // Apply needs a field manager; force is for apply only.
        let err = WriteOptions::from_query(&params(&[]), &headers, true).unwrap_err();
        assert!(
            err.message.contains("fieldManager is required"),
            "{}",
            err.message
        );
        let forced = WriteOptions::from_query(
            &params(&[("fieldManager", "m"), ("force", "true")]),
            &headers,
            true,
        );
        assert!(forced.unwrap().force);
        for bad in [
            params(&[("force", "true")]),
            params(&[("dryRun", "Some")]),
            params(&[("fieldValidation", "strict")]),
            params(&[("fieldManager", &"m".repeat(129))]),
        ] {
            assert_eq!(
                WriteOptions::from_query(&bad, &headers, false)
                    .unwrap_err()
                    .code,
                StatusCode::BAD_REQUEST,
                "{bad:?}"
            );
        }
        assert_eq!(user_agent_manager(&HeaderMap::new()), "unknown");
    }

    #[test]
    fn api_owned_objects_change_as_a_whole_after_admission() {
        let current = api_installation();
        // Created: namespace filled in, managed by its creator, no status.
        assert_eq!(current["metadata"]["namespace"], "default");
        assert_eq!(current["metadata"]["managedFields"][0]["manager"], "test");
        assert_eq!(
            current["metadata"]["managedFields"][0]["operation"],
            "Update"
        );
        let patch = json!({"spec": {"context": "ctx"}, "status": {"phase": "Failed"}});
        let out = change_as(
            &Owner::Api,
            &current,
            Change::Patch(PatchType::Merge, patch),
        )
        .unwrap();
        assert_eq!(out["spec"]["context"], "ctx");
        assert_eq!(out["status"], json!({"phase": "Succeeded"}));
        assert_eq!(out["metadata"]["resourceVersion"], "7");
        assert_eq!(out["metadata"]["uid"], "u");
        // A JSON patch too.
        let patch =
            json!([{"op": "replace", "path": "/spec/blueprint/ref/resourceName", "value": "c"}]);
        let out = change_as(&Owner::Api, &current, Change::Patch(PatchType::Json, patch)).unwrap();
        assert_eq!(out["spec"]["blueprint"]["ref"]["resourceName"], "c");
        // An invalid spec: 422 naming the field, as the folder's admission would.
        let patch = json!({"spec": {"imports": {"data": [{"name": "d"}]}}});
        let err = change_as(
            &Owner::Api,
            &current,
            Change::Patch(PatchType::Merge, patch),
        )
        .unwrap_err();
        assert_eq!(
            err.code,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            err.message
        );
        assert_eq!(err.reason, "Invalid");
        assert!(
            err.details["causes"][0]["field"]
                .as_str()
                .unwrap()
                .starts_with("spec.imports.data[0]"),
            "{:?}",
            err.details
        );
    }

    #[test]
    fn unknown_fields_follow_field_validation() {
        let current = api_installation();
        let patch = || Change::Patch(PatchType::Merge, json!({"spec": {"colour": "red"}}));
        let err = write_as(
            &Owner::Api,
            Some(&current),
            patch(),
            FieldValidation::Strict,
        )
        .unwrap_err();
        assert_eq!(err.code, StatusCode::BAD_REQUEST);
        assert_eq!(
            err.message,
            "Installation in version \"v1alpha1\" cannot be handled as a Installation: \
             strict decoding error: unknown field \"spec.colour\""
        );
        let (out, warnings) =
            write_as(&Owner::Api, Some(&current), patch(), FieldValidation::Warn).unwrap();
        assert_eq!(warnings, vec!["unknown field \"spec.colour\"".to_string()]);
        assert!(out["spec"].get("colour").is_none(), "{out}");
        let (_, warnings) = write_as(
            &Owner::Api,
            Some(&current),
            patch(),
            FieldValidation::Ignore,
        )
        .unwrap();
        assert!(warnings.is_empty());
    }

    #[test]
    fn creates_and_replaces_check_existence_and_versions() {
        let current = api_installation();
        let body = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
            "metadata": {"name": "a"}, "spec": {"blueprint": {"ref": {"resourceName": "b"}}}});
        let err = change_as(&Owner::Api, &current, Change::Create(body.clone())).unwrap_err();
        assert_eq!(
            (err.code, err.reason),
            (StatusCode::CONFLICT, "AlreadyExists")
        );
        assert_eq!(
            err.message,
            "installations.landscaper.gardener.cloud \"a\" already exists"
        );
        // PUT needs the resourceVersion of a custom resource, and the current one.
        let err = change_as(&Owner::Api, &current, Change::Replace(body.clone())).unwrap_err();
        assert_eq!(err.code, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(
            err.message.contains("metadata.resourceVersion"),
            "{}",
            err.message
        );
        let mut stale = body.clone();
        stale["metadata"]["resourceVersion"] = json!("6");
        let err = change_as(&Owner::Api, &current, Change::Replace(stale)).unwrap_err();
        assert_eq!((err.code, err.reason), (StatusCode::CONFLICT, "Conflict"));
        let mut fresh = body.clone();
        fresh["metadata"]["resourceVersion"] = json!("7");
        fresh["spec"]["context"] = json!("c");
        let out = change_as(&Owner::Api, &current, Change::Replace(fresh)).unwrap();
        assert_eq!(out["spec"]["context"], "c");
        assert_eq!(out["status"]["phase"], "Succeeded");
        // Create without a name.
        let mut nameless = body.clone();
        nameless["metadata"] = json!({});
        let err = write_as(
            &Owner::Api,
            None,
            Change::Create(nameless),
            FieldValidation::Warn,
        );
        // The key names the object; a body without a name takes it.
        assert!(err.is_ok());
    }

    #[test]
    fn server_side_apply_tracks_managers_and_conflicts() {
        let current = api_installation();
        let applied = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
            "metadata": {"name": "a", "namespace": "default"},
            "spec": {"blueprint": {"ref": {"resourceName": "b"}}, "context": "x"}});
        let key = ObjectKey::new(Kind::Installation, "default", "a");
        let mut options = options(FieldValidation::Strict);
        options.field_manager = "ci".into();
        let change = Change::Patch(PatchType::Apply, applied.clone());
        let desired = desired_object(&key, Some(&current), &change, &options, NOW).unwrap();
        let (out, _) = admit_write(
            &key,
            Some(&current),
            desired,
            &Owner::Api,
            &change,
            &options,
            NOW,
        )
        .unwrap();
        assert_eq!(out["spec"]["context"], "x");
        let managers: Vec<&str> = out["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["manager"].as_str().unwrap())
            .collect();
        assert!(
            managers.contains(&"ci") && managers.contains(&"test"),
            "{managers:?}"
        );
        // Another applier of a field "test" owns, with another value: a conflict.
        let mut other = applied.clone();
        other["spec"]["blueprint"]["ref"]["resourceName"] = json!("z");
        options.field_manager = "other".into();
        let change = Change::Patch(PatchType::Apply, other);
        let err = desired_object(&key, Some(&out), &change, &options, NOW).unwrap_err();
        assert_eq!((err.code, err.reason), (StatusCode::CONFLICT, "Conflict"));
        assert!(
            err.message.starts_with("Apply failed with"),
            "{}",
            err.message
        );
        assert_eq!(err.details["causes"][0]["reason"], "FieldManagerConflict");
        // Forced: taken over.
        options.force = true;
        let forced = desired_object(&key, Some(&out), &change, &options, NOW).unwrap();
        assert_eq!(forced["spec"]["blueprint"]["ref"]["resourceName"], "z");
    }

    #[test]
    fn finds_the_first_difference() {
        assert_eq!(first_difference(&json!({"a": 1}), &json!({"a": 1})), None);
        assert_eq!(
            first_difference(&json!({"a": {"b": [1, 2]}}), &json!({"a": {"b": [1, 3]}})),
            Some("a.b[1]".into())
        );
        assert_eq!(
            first_difference(&json!({"a": {"b": [1, 2]}}), &json!({"a": {"b": [1]}})),
            Some("a.b".into())
        );
        assert_eq!(
            first_difference(&json!({"a": 1}), &json!({"a": 1, "c": 2})),
            Some("c".into())
        );
        assert_eq!(
            first_difference(&json!(1), &json!(2)),
            Some("<root>".into())
        );
    }

    #[test]
    fn recognises_references_of_manifest_files() {
        let key = ObjectKey::new(Kind::Installation, "default", "a");
        let reference = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1",
            "kind": "Installation", "namespace": "default", "name": "a"});
        assert!(reference_is(&reference, &key));
        assert!(!reference_is(
            &reference,
            &ObjectKey::new(Kind::Installation, "other", "a")
        ));
        assert!(!reference_is(
            &reference,
            &ObjectKey::new(Kind::Execution, "default", "a")
        ));
        let cluster = json!({"apiVersion": "appliance.landscaper-appliance.io/v1alpha1",
            "kind": "ManifestFile", "name": "f"});
        assert!(reference_is(
            &cluster,
            &ObjectKey::new(Kind::ManifestFile, "", "f")
        ));
    }

    #[test]
    fn delete_preconditions() {
        let key = ObjectKey::new(Kind::Installation, "default", "a");
        let none = Preconditions::from_body(b"").unwrap();
        assert!(none.check(&key, &installation()).is_ok());
        let ok = Preconditions::from_body(
            br#"{"kind":"DeleteOptions","preconditions":{"uid":"u","resourceVersion":"7"}}"#,
        )
        .unwrap();
        assert!(ok.check(&key, &installation()).is_ok());
        let stale =
            Preconditions::from_body(br#"{"preconditions":{"resourceVersion":"6"}}"#).unwrap();
        let err = stale.check(&key, &installation()).unwrap_err();
        assert_eq!(err.code, StatusCode::CONFLICT);
        assert!(Preconditions::from_body(b"{").is_err());
    }

    /// The API on a temp store, with an Installation `free` (no file), an Installation `owned`
    /// recorded by the ManifestFile of `owned.yaml`, and the write token `s3cret`.
    async fn serve_api() -> (String, landscaper_store::Store, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = landscaper_store::Store::open(
            &dir.path().join("store.redb"),
            landscaper_store::StoreOptions {
                durable: false,
                ..Default::default()
            },
        )
        .unwrap();
        let installation = |name: &str| {
            json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
                "metadata": {"name": name, "namespace": "default"}, "spec": {}})
        };
        let file = json!({"apiVersion": "appliance.landscaper-appliance.io/v1alpha1",
            "kind": "ManifestFile", "metadata": {"name": "owned.yaml"},
            "spec": {"path": "owned.yaml"},
            "status": {"phase": "Applied", "objects": [{"apiVersion": "landscaper.gardener.cloud/v1alpha1",
                "kind": "Installation", "namespace": "default", "name": "owned"}]}});
        store
            .commit(
                Transaction::new()
                    .create(installation("free"))
                    .create(installation("owned"))
                    .create(file),
            )
            .await
            .unwrap();
        let state = ApiState::new(store.clone(), super::super::Readiness::ready())
            .with_token(super::super::ApiToken::parse("s3cret").unwrap());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, super::super::router(state)).await;
        });
        (server, store, dir)
    }

    fn api_code<T: std::fmt::Debug>(
        result: Result<T, crate::commands::client::ClientError>,
    ) -> (u16, String) {
        match result {
            Err(crate::commands::client::ClientError::Api { code, message, .. }) => (code, message),
            other => panic!("expected an API error, got {other:?}"),
        }
    }

    /// One raw request (for verbs the client does not send); the status code and body.
    fn raw(server: &str, request: &str) -> (u16, String) {
        use std::io::{Read, Write};
        let mut stream =
            std::net::TcpStream::connect(server.trim_start_matches("http://")).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let code = answer[9..12].parse().unwrap();
        (code, answer)
    }

    #[test]
    fn events_are_read_only() {
        for (verb, status) in [("PATCH", false), ("DELETE", false), ("DELETE", true)] {
            let object = Target::Object {
                resource: Resource::Events,
                namespace: Some("e2e".into()),
                name: "a.0000000000000007".into(),
                status,
            };
            let e = object_key(verb, object).unwrap_err();
            assert_eq!(e.code.as_u16(), 405, "{verb}");
            assert!(e.message.contains("events are derived"), "{}", e.message);
        }
        let all = Target::Collection {
            resource: Resource::Events,
            namespace: None,
        };
        assert_eq!(object_key("DELETE", all).unwrap_err().code.as_u16(), 405);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn writes_over_http() {
        let (server, store, _dir) = serve_api().await;
        let checked = tokio::task::spawn_blocking(move || {
            use crate::commands::client::Client;
            let path = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/default/installations";
            let reconcile = json!({"metadata": {"annotations": {
                "landscaper.gardener.cloud/operation": "reconcile"}}});
            // Without or with a wrong token: 401, nothing written.
            let anonymous = Client::new(&server).unwrap();
            assert_eq!(api_code(anonymous.patch_json(&format!("{path}/free"), &reconcile)).0, 401);
            assert_eq!(api_code(anonymous.delete(&format!("{path}/free"))).0, 401);
            let wrong = Client::new(&server).unwrap().with_token("s3cres");
            assert_eq!(api_code(wrong.patch_json(&format!("{path}/free"), &reconcile)).0, 401);
            // Reads stay open.
            assert!(anonymous.get_json(&format!("{path}/free")).is_ok());

            let client = Client::new(&server).unwrap().with_token("s3cret");
            let patched = client.patch_json(&format!("{path}/free"), &reconcile).unwrap();
            assert_eq!(
                patched["metadata"]["annotations"]["landscaper.gardener.cloud/operation"],
                "reconcile"
            );
            assert_eq!(patched["kind"], "Installation");
            // Basic authentication with the token as password (kubectl over plain HTTP).
            let body = r#"{"metadata":{"labels":{"a":"b"}}}"#;
            let (code, _) = raw(
                &server,
                &format!(
                    "PATCH {path}/free HTTP/1.1\r\nHost: x\r\nAuthorization: Basic dG9rZW46czNjcmV0\r\n\
                     Content-Type: application/merge-patch+json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                ),
            );
            assert_eq!(code, 200);

            let (code, message) = api_code(
                client.patch_json(&format!("{path}/free"), &json!({"spec": {"x": 1}})),
            );
            // The API's own object goes through the admission (this one has no blueprint).
            assert_eq!(code, 422, "{message}");
            assert!(message.contains("spec.blueprint: Required value"), "{message}");
            // A file's object: only labels and annotations.
            let (code, message) = api_code(client.patch_json(
                &format!("{path}/owned"),
                &json!({"spec": {"context": "c"}}),
            ));
            assert_eq!(code, 403, "{message}");
            assert!(
                message.contains("is owned by manifest file owned.yaml: only metadata.labels"),
                "{message}"
            );
            assert_eq!(
                api_code(client.patch_json(&format!("{path}/nope"), &reconcile)).0,
                404
            );
            assert_eq!(
                api_code(client.patch_json(&format!("{path}/free/status"), &reconcile)).0,
                405
            );

            let (code, message) = api_code(client.delete(&format!("{path}/owned")));
            assert_eq!(code, 409);
            assert!(
                message.ends_with(
                    "Installation default/owned is defined by manifest file owned.yaml: remove it from the folder instead"
                ),
                "{message}"
            );
            let (code, _) = api_code(client.delete(
                "/apis/appliance.landscaper-appliance.io/v1alpha1/manifestfiles/owned.yaml",
            ));
            assert_eq!(code, 409);
            let deleted = client.delete(&format!("{path}/free")).unwrap();
            assert_eq!(deleted["kind"], "Status");
            assert_eq!(deleted["status"], "Success");
            assert_eq!(deleted["details"]["name"], "free");
            assert_eq!(deleted["details"]["kind"], "installations");
            assert_eq!(api_code(client.get_json(&format!("{path}/free"))).0, 404);

            let (code, answer) = raw(
                &server,
                &format!(
                    "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n\
                     Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
                ),
            );
            assert_eq!(code, 422);
            assert!(
                answer.contains("metadata.name: Required value: name or generateName is required"),
                "{answer}"
            );
            let post = |body: &str| {
                raw(
                    &server,
                    &format!(
                        "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n\
                         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    ),
                )
            };
            let new = r#"{"apiVersion":"landscaper.gardener.cloud/v1alpha1","kind":"Installation",
                "metadata":{"name":"made"},"spec":{"blueprint":{"ref":{"resourceName":"b"}},"colour":1}}"#;
            // A dry run answers as if stored and stores nothing.
            let (code, answer) = raw(
                &server,
                &format!(
                    "POST {path}?dryRun=All HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n\
                     Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{new}",
                    new.len()
                ),
            );
            assert_eq!(code, 201, "{answer}");
            assert!(answer.contains(r#""uid":"#) && answer.contains(r#""generation":1"#), "{answer}");
            assert_eq!(api_code(client.get_json(&format!("{path}/made"))).0, 404);
            let (code, answer) = post(new);
            assert_eq!(code, 201, "{answer}");
            assert!(
                answer.contains("warning: 299 - \"unknown field \\\"spec.colour\\\"\""),
                "{answer}"
            );
            let (code, answer) = post(new);
            assert_eq!(code, 409, "{answer}");
            assert!(answer.contains(r#""reason":"AlreadyExists""#), "{answer}");
            // Anonymous callers still cannot write.
            assert_eq!(
                api_code(anonymous.patch_json(&format!("{path}/made"), &reconcile)).0,
                401
            );
        })
        .await;
        checked.unwrap();
        let free = store
            .get(&ObjectKey::new(Kind::Installation, "default", "free"))
            .unwrap();
        assert!(free.is_none());
        let owned = store
            .get(&ObjectKey::new(Kind::Installation, "default", "owned"))
            .unwrap();
        assert!(owned.is_some());
        let made = store
            .get(&ObjectKey::new(Kind::Installation, "default", "made"))
            .unwrap()
            .unwrap();
        assert_eq!(
            made["spec"],
            json!({"blueprint": {"ref": {"resourceName": "b"}}})
        );
    }
}
