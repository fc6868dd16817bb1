//! The writes the API serves, all behind the bearer token (see [`super::token`]):
//!
//! - `PATCH` of an object with a merge patch (`application/merge-patch+json`; for ConfigMaps
//!   and Secrets also `application/strategic-merge-patch+json`, which for metadata maps is the
//!   same, refused on Landscaper's kinds as kube-apiserver refuses it on custom resources): only
//!   `metadata.annotations` and `metadata.labels` may change; this is how operations are
//!   requested (`landscaper.gardener.cloud/operation: reconcile`, what `kubectl annotate`
//!   sends). A patch that would change anything else is refused (422) naming the field. A
//!   `metadata.resourceVersion` in the patch is a precondition.
//! - `DELETE` of an object: refused (409) for objects defined by a manifest file (the folder is
//!   their source: a deleted object would come back), otherwise a store delete (finalizers
//!   respected: the object then only gets a `deletionTimestamp`, answered with 202).
//!
//! Writes without the token get 401 ([`authorize`]). Both read the object and write it back with the read `resourceVersion` (optimistic
//! concurrency), retrying a few times when something else changed it in between. `dryRun=All`
//! answers without writing. The answer is the object as `GET` shows it (redacted).

use std::collections::{BTreeMap, HashMap};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, header};
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

/// How often a write is tried when the object changed between read and write.
const ATTEMPTS: usize = 5;

/// The metadata fields a patch may change.
const PATCHABLE: [&str; 2] = ["annotations", "labels"];

const WRITES_ALLOWED: &str = "the API only PATCHes metadata.annotations and metadata.labels \
    and DELETEs objects (create and change objects through the manifests folder)";

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

/// `dryRun=All`: validate and answer, but write nothing.
fn dry_run(params: &HashMap<String, String>) -> Result<bool, ApiError> {
    match params.get("dryRun").map(String::as_str) {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "dryRun: unsupported value {other:?} (only \"All\")"
        ))),
    }
}

/// The patch formats served: merge patch, and for the core kinds (ConfigMap, Secret) strategic
/// merge patch read as a merge patch. kube-apiserver refuses strategic merge patches of custom
/// resources (they have no patch strategy), and so do we for Landscaper's kinds.
fn check_patch_type(kind: Kind, headers: &HeaderMap) -> Result<(), ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "application/merge-patch+json" => Ok(()),
        "application/strategic-merge-patch+json" if kind.group().is_empty() => Ok(()),
        "application/strategic-merge-patch+json" => Err(ApiError::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: \
             application/merge-patch+json (strategic merge patches apply to built-in kinds only)",
        )),
        "application/json-patch+json" => Err(ApiError::unsupported_media_type(
            "JSON patches are not supported: send a merge patch (application/merge-patch+json)",
        )),
        "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
            Err(ApiError::unsupported_media_type(
                "server-side apply is not supported: send a merge patch (application/merge-patch+json) of metadata.annotations or metadata.labels",
            ))
        }
        "" => Err(ApiError::unsupported_media_type(
            "a PATCH needs Content-Type: application/merge-patch+json",
        )),
        other => Err(ApiError::unsupported_media_type(format!(
            "the body of a PATCH must be a merge patch (application/merge-patch+json), not {other}"
        ))),
    }
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
    check_patch_type(key.kind, headers)?;
    let dry_run = dry_run(params)?;
    let patch: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("the patch is not valid JSON: {e}")))?;
    if !patch.is_object() {
        return Err(ApiError::bad_request(
            "a merge patch must be a JSON object, e.g. {\"metadata\":{\"annotations\":{...}}}",
        ));
    }
    let store = state.store.clone();
    let (kind, what) = (key.kind, describe(&key));
    let patched = blocking_api(move || patch_object(&store, &key, &patch, dry_run)).await?;
    if !dry_run {
        tracing::info!(object = %what, "object patched through the API");
    }
    Ok(json_response(&present_as(kind, patched, true)))
}

/// Applies a merge patch of metadata ([`apply_patch`]) to the stored object with optimistic
/// concurrency, retrying when something else changed it in between; returns the object as
/// stored (as it would be, for `dry_run`). Blocking.
pub fn patch_object(
    store: &Store,
    key: &ObjectKey,
    patch: &Value,
    dry_run: bool,
) -> Result<Value, ApiError> {
    for _ in 0..ATTEMPTS {
        let current = store.get(key)?.ok_or_else(|| not_found(key))?;
        let updated = apply_patch(key.kind, &key.name, &current, patch)?;
        if dry_run || updated == current {
            return Ok(updated);
        }
        match store.commit_blocking(Transaction::new().update(updated)) {
            Ok(committed) => {
                return committed
                    .objects
                    .into_iter()
                    .next()
                    .flatten()
                    .ok_or_else(|| not_found(key));
            }
            Err(StoreError::Transaction(TransactionError::Conflict { .. })) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::from(conflict(key)))
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
    let dry_run = dry_run(params)?;
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
            if key.kind == Kind::ManifestFile {
                let path = current
                    .pointer("/spec/path")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                return Err(ApiError::conflict(
                    key.kind,
                    &key.name,
                    &format!(
                        "ManifestFile {} records the manifest file {path}: remove the file from the folder instead",
                        key.name
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
    let mut response = json_response(&present_as(kind, object, true));
    if !gone {
        // Like kube-apiserver: 202 while finalizers keep the object.
        *response.status_mut() = StatusCode::ACCEPTED;
    }
    Ok(response)
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
    Ok(files.items.iter().find_map(|file| {
        let objects = file.pointer("/status/objects")?.as_array()?;
        objects.iter().any(|r| reference_is(r, key)).then(|| {
            file.pointer("/spec/path")
                .and_then(Value::as_str)
                .unwrap_or_else(|| object::name(file))
                .to_string()
        })
    }))
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

/// The object after a merge patch (RFC 7386) that may only change `metadata.annotations` and
/// `metadata.labels`: anything else that would change is refused (422) naming the first such
/// field; annotation and label values must be strings. A `metadata.resourceVersion` in the
/// patch must equal the object's (409 otherwise). The result carries the object's
/// resourceVersion, for an optimistic update.
pub fn apply_patch(
    kind: Kind,
    name: &str,
    current: &Value,
    patch: &Value,
) -> Result<Value, ApiError> {
    let Some(patch_map) = patch.as_object() else {
        return Err(ApiError::bad_request("a merge patch must be a JSON object"));
    };
    let rv = object::resource_version(current).to_string();
    let mut patch = patch.clone();
    if let Some(Value::Object(meta)) = patch_map.get("metadata") {
        if let Some(wanted) = meta.get("resourceVersion") {
            match wanted {
                Value::Null => {}
                Value::String(w) if *w == rv => {}
                Value::String(_) => {
                    return Err(ApiError::conflict(
                        kind,
                        name,
                        "the object has been modified; please apply your changes to the latest version and try again",
                    ));
                }
                _ => {
                    return Err(ApiError::invalid_value(
                        kind,
                        name,
                        "metadata.resourceVersion",
                        "must be a string",
                    ));
                }
            }
            if let Some(meta) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("resourceVersion");
            }
        }
        for field in PATCHABLE {
            check_string_map(kind, name, field, meta.get(field))?;
        }
    }
    // apiVersion and kind as GET shows them, so that a patch may repeat them.
    let mut base = current.clone();
    if let Some(map) = base.as_object_mut() {
        map.entry("apiVersion")
            .or_insert_with(|| Value::String(kind.api_version().to_string()));
        map.entry("kind")
            .or_insert_with(|| Value::String(kind.as_str().to_string()));
    }
    let mut updated = base.clone();
    json_patch::merge(&mut updated, &patch);
    if let Some(field) = first_difference(&without_patchable(&base), &without_patchable(&updated)) {
        return Err(ApiError::forbidden_field(
            kind,
            name,
            &field,
            "only metadata.annotations and metadata.labels can be changed through the API \
             (change objects through the manifests folder)",
        ));
    }
    check_metadata_maps(kind, name, &updated)?;
    let meta = object::metadata_mut(&mut updated);
    for field in PATCHABLE {
        // An emptied map is removed, as the ingest stores objects.
        if meta
            .get(field)
            .is_some_and(|m| m.as_object().is_some_and(Map::is_empty))
        {
            meta.remove(field);
        }
    }
    meta.insert("resourceVersion".into(), Value::String(rv));
    // An object stored without type meta stays without.
    if let Some(map) = updated.as_object_mut() {
        for field in ["apiVersion", "kind"] {
            if current.get(field).is_none() {
                map.remove(field);
            }
        }
    }
    Ok(updated)
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

/// Annotations and labels in a patch: a map (or null) of strings (or null, to remove a key);
/// keys are not strategic-merge directives.
fn check_string_map(
    kind: Kind,
    name: &str,
    field: &str,
    value: Option<&Value>,
) -> Result<(), ApiError> {
    let path = format!("metadata.{field}");
    match value {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Object(map)) => {
            for (key, value) in map {
                if key.starts_with('$') {
                    return Err(ApiError::forbidden_field(
                        kind,
                        name,
                        &format!("{path}[{key}]"),
                        "strategic merge patch directives are not supported",
                    ));
                }
                if !matches!(value, Value::String(_) | Value::Null) {
                    return Err(ApiError::invalid_value(
                        kind,
                        name,
                        &format!("{path}[{key}]"),
                        "must be a string (or null to remove it)",
                    ));
                }
            }
            Ok(())
        }
        Some(_) => Err(ApiError::invalid_value(
            kind,
            name,
            &path,
            "must be a map of strings",
        )),
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
    fn other_fields_are_refused_by_name() {
        let cases = [
            (json!({"spec": {"imports": null}}), "spec.imports"),
            (
                json!({"spec": {"imports": {"data": [{"name": "d", "dataRef": "y"}]}}}),
                "spec.imports.data[0].dataRef",
            ),
            (
                json!({"metadata": {"finalizers": null}}),
                "metadata.finalizers",
            ),
            (json!({"metadata": {"name": "b"}}), "metadata.name"),
            (json!({"status": {"phase": "Failed"}}), "status.phase"),
            (json!({"kind": "Execution"}), "kind"),
        ];
        for (patch, field) in cases {
            let err = apply_patch(Kind::Installation, "a", &installation(), &patch).unwrap_err();
            assert_eq!(err.code, StatusCode::UNPROCESSABLE_ENTITY, "{patch}");
            assert_eq!(err.reason, "Invalid");
            assert!(
                err.message.starts_with(&format!(
                    "Installation.landscaper.gardener.cloud \"a\" is invalid: {field}: Forbidden:"
                )),
                "{patch}: {}",
                err.message
            );
            assert_eq!(err.details["causes"][0]["field"], field);
        }
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
        let err = apply_patch(
            Kind::Installation,
            "a",
            &installation(),
            &json!({"metadata": {"labels": {"$patch": "replace"}}}),
        )
        .unwrap_err();
        assert!(err.message.contains("directives"), "{}", err.message);
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
    fn only_merge_patches_are_taken() {
        let mut headers = HeaderMap::new();
        assert_eq!(
            check_patch_type(Kind::Installation, &headers)
                .unwrap_err()
                .code,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        for (ct, custom, core) in [
            ("application/merge-patch+json", true, true),
            ("application/strategic-merge-patch+json", false, true),
            ("Application/Merge-Patch+JSON; charset=utf-8", true, true),
            ("application/json-patch+json", false, false),
            ("application/apply-patch+yaml", false, false),
            ("application/json", false, false),
        ] {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
            assert_eq!(
                check_patch_type(Kind::Installation, &headers).is_ok(),
                custom,
                "{ct}"
            );
            assert_eq!(
                check_patch_type(Kind::Secret, &headers).is_ok(),
                core,
                "{ct}"
            );
        }
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
            assert_eq!(code, 422, "{message}");
            assert!(message.contains("spec.x: Forbidden"), "{message}");
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
            assert_eq!(deleted["metadata"]["name"], "free");
            assert_eq!(api_code(client.get_json(&format!("{path}/free"))).0, 404);

            let (code, answer) = raw(
                &server,
                &format!(
                    "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n\
                     Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
                ),
            );
            assert_eq!(code, 405);
            assert!(answer.contains("POST is not supported on installations"), "{answer}");
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
    }
}
