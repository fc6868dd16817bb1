//! Reads of objects: `GET` of one object, `LIST` of a collection (all namespaces or one), and
//! the dispatch of `?watch=true` to [`super::watch`]; `POST`, `PUT`, `PATCH` and `DELETE` go to
//! [`super::write`], other verbs answer 405.
//!
//! Secrets are always redacted (authorisation comes later): every value of `data` becomes
//! `PHJlZGFjdGVkPg==` (base64 of `<redacted>`, so `kubectl get secret -o yaml` shows valid
//! base64 and decoding it shows `<redacted>`), every value of `stringData` becomes
//! `<redacted>`, the `kubectl.kubernetes.io/last-applied-configuration` annotation (which
//! would repeat the values) is redacted too, and the object is marked with the annotation
//! `appliance.landscaper-appliance.io/redacted: "true"`. The keys stay visible. An inline
//! `spec.config.kubeconfig` of a Target (whatever its shape) is a credential too and is shown
//! as `<redacted>`. Objects the appliance marked with
//! `appliance.landscaper-appliance.io/from-secret: "true"` hold values read from a Secret (an
//! installation importing one marks its import and export DataObjects and Targets, its
//! Execution, subinstallations, and through the Execution its deploy items and their export
//! DataObject): their `data`, Target `spec.config`, deploy item configs and data mappings are
//! shown as `<redacted>` too.

use std::collections::HashMap;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use landscaper_store::model::constants::FROM_SECRET_ANNOTATION;
use landscaper_store::model::validate::is_secret_value_ref;
use landscaper_store::{Kind, ObjectKey, StoreError};
use serde_json::{Map, Value, json};

use super::ApiState;
use super::namespaces;
use super::negotiate::{Field, FieldOp, ReadOptions, Representation};
use super::resources::{GroupVersion, Resource, Target, group_version, parse_target};
use super::status::ApiError;
use super::table::{TableOptions, to_table};
use super::token::{Caller, TrustedConnection};

/// The `data` value a redacted Secret shows: base64 of [`REDACTED`].
pub const REDACTED_BASE64: &str = "PHJlZGFjdGVkPg==";
/// The `stringData` value (and annotation value) a redacted Secret shows.
pub const REDACTED: &str = "<redacted>";
/// Annotation set on every redacted Secret.
pub const REDACTED_ANNOTATION: &str = "appliance.landscaper-appliance.io/redacted";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// `/api/v1/{*rest}`.
pub async fn core_resource(
    State(state): State<ApiState>,
    method: Method,
    Path(rest): Path<String>,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
    trusted: Option<Extension<TrustedConnection>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let caller = Caller::new(&headers, trusted.is_some());
    serve_resource(
        state,
        Some(GroupVersion::CORE),
        &rest,
        method,
        query,
        (headers, caller),
        body,
    )
    .await
}

/// `/apis/{group}/{version}/{*rest}`.
pub async fn group_resource(
    State(state): State<ApiState>,
    method: Method,
    Path((group, version, rest)): Path<(String, String, String)>,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
    trusted: Option<Extension<TrustedConnection>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let caller = Caller::new(&headers, trusted.is_some());
    let gv = if group.is_empty() {
        None
    } else {
        group_version(&group, &version)
    };
    serve_resource(state, gv, &rest, method, query, (headers, caller), body).await
}

async fn serve_resource(
    state: ApiState,
    gv: Option<GroupVersion>,
    rest: &str,
    method: Method,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
    headers: (HeaderMap, Caller),
    body: Bytes,
) -> Response {
    dispatch(state, gv, rest, method, query, headers, body)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn dispatch(
    state: ApiState,
    gv: Option<GroupVersion>,
    rest: &str,
    method: Method,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
    (headers, caller): (HeaderMap, Caller),
    body: Bytes,
) -> Result<Response, ApiError> {
    let gv = gv.ok_or_else(ApiError::unknown_resource)?;
    let target = parse_target(gv, rest).ok_or_else(ApiError::unknown_resource)?;
    let Query(params) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    match method {
        Method::GET | Method::HEAD => {
            let reveal = caller.is_authorised(state.token.as_ref());
            read(state, target, params, headers, reveal).await
        }
        Method::PATCH => {
            super::write::patch(&state, target, &params, &headers, &caller, body).await
        }
        Method::POST => {
            super::write::create(&state, target, &params, &headers, &caller, body).await
        }
        Method::PUT => super::write::update(&state, target, &params, &headers, &caller, body).await,
        Method::DELETE => super::write::delete(&state, target, &params, &caller, body).await,
        other => Ok(super::write::unsupported(other.as_str(), target.resource())),
    }
}

async fn read(
    state: ApiState,
    target: Target,
    params: HashMap<String, String>,
    headers: HeaderMap,
    reveal_secrets: bool,
) -> Result<Response, ApiError> {
    let resource = target.resource();
    let mut options = match resource {
        Resource::Events => super::events::read_options(&params)?,
        _ => ReadOptions::from_query(&params)?,
    };
    options.reveal_secrets = reveal_secrets;
    let representation = super::negotiate::representation(&headers)?;
    let table = |options: &ReadOptions, version| TableOptions {
        version,
        include_object: options.include_object,
        no_headers: false,
    };
    match (target, resource) {
        (_, Resource::Namespaces) if options.watch => Err(ApiError::method_not_allowed(
            "watch",
            "namespaces",
            "",
            "namespaces are derived from the stored objects and cannot be watched",
        )),
        (Target::Collection { namespace, .. }, Resource::Events) if options.watch => {
            let table = match representation {
                Representation::Object => None,
                Representation::Table { version } => Some(table(&options, version)),
            };
            super::events::watch(&state, namespace, options, table).await
        }
        (Target::Collection { namespace, .. }, Resource::Kind(kind)) if options.watch => {
            super::watch::watch(&state, kind, namespace, options, representation).await
        }
        (
            Target::Object {
                namespace, name, ..
            },
            Resource::Kind(kind),
        ) if options.watch => {
            // The deprecated watch of a single object: a collection watch pinned to the name.
            options
                .field_selector
                .terms
                .push((Field::Name, FieldOp::Equals, name));
            super::watch::watch(&state, kind, namespace, options, representation).await
        }
        (
            Target::Object {
                namespace, name, ..
            },
            resource,
        ) => {
            let object = match resource {
                Resource::Kind(kind) => {
                    get(&state, kind, namespace, &name, options.reveal_secrets).await?
                }
                Resource::Namespaces => namespaces::get(&state.store, &name).await?,
                Resource::Events => {
                    let namespace = namespace.unwrap_or_default();
                    super::events::get(&state.store, &namespace, &name).await?
                }
            };
            Ok(match representation {
                Representation::Object => json_response(&object),
                Representation::Table { version } => {
                    let rv = landscaper_store::object::resource_version(&object).to_string();
                    json_response(&to_table(
                        resource,
                        &[object],
                        &rv,
                        &table(&options, version),
                    ))
                }
            })
        }
        (Target::Collection { namespace, .. }, resource) => {
            let (items, revision) = match resource {
                Resource::Kind(kind) => list(&state, kind, namespace.as_deref(), &options).await?,
                Resource::Namespaces => {
                    let (items, revision) = namespaces::list(&state.store).await?;
                    let items = items
                        .into_iter()
                        .filter(|ns| {
                            options.label_selector.matches_object(ns)
                                && options.field_selector.matches_object(ns)
                        })
                        .collect();
                    (items, revision)
                }
                Resource::Events => {
                    super::events::list(&state.store, namespace.as_deref(), &options).await?
                }
            };
            let rv = revision.to_string();
            Ok(match representation {
                Representation::Object => json_response(&list_object(resource, items, &rv)),
                Representation::Table { version } => {
                    json_response(&to_table(resource, &items, &rv, &table(&options, version)))
                }
            })
        }
    }
}

/// Runs a store read on the blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    read: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(read)
        .await
        .map_err(|e| ApiError::internal(format!("store read task failed: {e}")))?
        .map_err(ApiError::from)
}

async fn get(
    state: &ApiState,
    kind: Kind,
    namespace: Option<String>,
    name: &str,
    reveal_secrets: bool,
) -> Result<Value, ApiError> {
    let key = ObjectKey::new(kind, namespace.unwrap_or_default(), name);
    let store = state.store.clone();
    let found = blocking(move || store.get(&key)).await?;
    found
        .map(|o| present_as(kind, o, reveal_secrets))
        .ok_or_else(|| ApiError::not_found(kind.plural(), kind.group(), name))
}

/// The matching objects (presented) and the revision of the snapshot they come from.
async fn list(
    state: &ApiState,
    kind: Kind,
    namespace: Option<&str>,
    options: &ReadOptions,
) -> Result<(Vec<Value>, u64), ApiError> {
    let store = state.store.clone();
    let namespace = namespace.map(str::to_string);
    let selector = options.label_selector.clone();
    let listed = blocking(move || store.list(kind, namespace.as_deref(), &selector)).await?;
    let items = listed
        .items
        .into_iter()
        .filter(|o| options.field_selector.matches_object(o))
        .map(|o| present_as(kind, o, options.reveal_secrets))
        .collect();
    Ok((items, listed.revision))
}

/// `{kind: <Kind>List, apiVersion, metadata: {resourceVersion}, items}`.
pub fn list_object(resource: Resource, items: Vec<Value>, resource_version: &str) -> Value {
    json!({
        "kind": format!("{}List", resource.kind_name()),
        "apiVersion": resource.group_version().api_version(),
        "metadata": {"resourceVersion": resource_version},
        "items": items,
    })
}

pub fn json_response(value: &Value) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut response = body.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// An object as the API shows it: `apiVersion` and `kind` set, Secrets, the kubeconfigs of
/// Targets and the data of DataObjects copied from Secrets redacted.
pub fn present(kind: Kind, object: Value) -> Value {
    present_as(kind, object, false)
}

/// [`present`], but with Secret values and kubeconfigs shown when `reveal_secrets` (for
/// authorised callers). Every reader that shows objects to callers without the token (GET,
/// list, watch, tables, the status page) goes through here.
pub fn present_as(kind: Kind, mut object: Value, reveal_secrets: bool) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.entry("apiVersion")
            .or_insert_with(|| Value::String(kind.api_version().to_string()));
        map.entry("kind")
            .or_insert_with(|| Value::String(kind.as_str().to_string()));
    }
    if !reveal_secrets {
        redact(kind, &mut object);
    }
    object
}

/// Redacts what an object of `kind` holds of credentials, in place.
pub fn redact(kind: Kind, object: &mut Value) {
    match kind {
        Kind::Secret => redact_secret(object),
        Kind::Target => {
            redact_target(object);
            redact_from_secret(object, &["/spec/config"]);
        }
        Kind::DataObject => redact_from_secret(object, &["/data"]),
        Kind::Execution => {
            let configs = object
                .pointer("/spec/deployItems")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let paths: Vec<String> = (0..configs)
                .map(|i| format!("/spec/deployItems/{i}/config"))
                .collect();
            let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
            redact_from_secret(object, &paths);
        }
        // The mock deployer copies parts of the config into the provider status.
        Kind::DeployItem => redact_from_secret(object, &["/spec/config", "/status/providerStatus"]),
        Kind::Installation => redact_from_secret(
            object,
            &["/spec/importDataMappings", "/spec/exportDataMappings"],
        ),
        _ => {}
    }
}

/// Whether the appliance marked the object [`FROM_SECRET_ANNOTATION`]: parts of it were
/// rendered from values read from a Secret.
fn is_from_secret(object: &Value) -> bool {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(FROM_SECRET_ANNOTATION))
        .and_then(Value::as_str)
        == Some("true")
}

/// Replaces the fields at `pointers` of an object marked [`FROM_SECRET_ANNOTATION`] (an import
/// copied from a Secret, or a deploy item config, export or data mapping a template rendered
/// from one) with [`REDACTED`]; absent fields stay absent.
fn redact_from_secret(object: &mut Value, pointers: &[&str]) {
    if !is_from_secret(object) {
        return;
    }
    let mut replaced = false;
    for pointer in pointers {
        if let Some(field) = object.pointer_mut(pointer)
            && !field.is_null()
        {
            *field = Value::String(REDACTED.to_string());
            replaced = true;
        }
    }
    if replaced {
        mark_redacted(object);
    }
}

/// Replaces the kubeconfig of a Target, whatever shape it has (a string, or a map or list
/// written by mistake): it holds cluster credentials just as a Secret does. Only the
/// `{secretRef: {...}}` form (Landscaper's `ValueRef`) stays visible, as it is a reference; so
/// does `spec.secretRef`, whose content is a Secret (redacted on its own). A `spec.config` that
/// is not a map is taken as the kubeconfig itself by the deployers, so it is replaced too.
pub fn redact_target(target: &mut Value) {
    let Some(config) = target.pointer_mut("/spec/config") else {
        return;
    };
    let replaced = match config {
        Value::Null => false,
        Value::Object(map) => match map.get_mut("kubeconfig") {
            None | Some(Value::Null) => false,
            Some(kubeconfig) if is_secret_value_ref(kubeconfig) => false,
            Some(kubeconfig) => {
                *kubeconfig = Value::String(REDACTED.to_string());
                true
            }
        },
        other => {
            *other = Value::String(REDACTED.to_string());
            true
        }
    };
    if replaced {
        mark_redacted(target);
    }
}

fn mark_redacted(object: &mut Value) {
    let metadata = landscaper_store::object::metadata_mut(object);
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    if let Some(annotations) = annotations.as_object_mut() {
        if let Some(applied) = annotations.get_mut(LAST_APPLIED) {
            *applied = Value::String(REDACTED.to_string());
        }
        annotations.insert(
            REDACTED_ANNOTATION.to_string(),
            Value::String("true".to_string()),
        );
    }
}

/// Replaces every secret value of a Secret (see the module documentation).
pub fn redact_secret(secret: &mut Value) {
    let Some(map) = secret.as_object_mut() else {
        return;
    };
    for (field, replacement) in [("data", REDACTED_BASE64), ("stringData", REDACTED)] {
        match map.get_mut(field) {
            Some(Value::Object(values)) => {
                for value in values.values_mut() {
                    *value = Value::String(replacement.to_string());
                }
            }
            Some(Value::Null) | None => {}
            Some(other) => *other = Value::String(replacement.to_string()),
        }
    }
    mark_redacted(secret);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_keep_keys_but_lose_values() {
        let secret = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "ns", "annotations": {
                LAST_APPLIED: "{\"data\":{\"password\":\"aHVudGVyMg==\"}}"}},
            "type": "Opaque",
            "data": {"password": "aHVudGVyMg=="},
            "stringData": {"token": "hunter2"},
        });
        let shown = present(Kind::Secret, secret);
        let text = shown.to_string();
        assert!(
            !text.contains("hunter2") && !text.contains("aHVudGVyMg"),
            "{text}"
        );
        assert_eq!(shown["data"]["password"], REDACTED_BASE64);
        assert_eq!(shown["stringData"]["token"], REDACTED);
        assert_eq!(
            shown["metadata"]["annotations"][REDACTED_ANNOTATION],
            "true"
        );
        assert_eq!(shown["metadata"]["annotations"][LAST_APPLIED], REDACTED);
    }

    #[test]
    fn inline_target_kubeconfigs_are_redacted() {
        let target = json!({"metadata": {"name": "t"}, "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster",
            "config": {"kubeconfig": "apiVersion: v1\nusers: [{user: {token: hunter2}}]"}}});
        let shown = present(Kind::Target, target);
        assert!(!shown.to_string().contains("hunter2"), "{shown}");
        assert_eq!(shown["spec"]["config"]["kubeconfig"], REDACTED);
        assert_eq!(
            shown["metadata"]["annotations"][REDACTED_ANNOTATION],
            "true"
        );
        let by_ref = json!({"metadata": {"name": "t"}, "spec": {"type": "x",
            "config": {"kubeconfig": {"secretRef": {"name": "s", "key": "kubeconfig"}}}}});
        let shown = present(Kind::Target, by_ref.clone());
        assert_eq!(shown["spec"], by_ref["spec"]);
    }

    #[test]
    fn kubeconfigs_are_redacted_whatever_their_shape() {
        for kubeconfig in [
            json!({"apiVersion": "v1", "users": [{"user": {"token": "hunter2"}}]}),
            json!([{"token": "hunter2"}]),
            json!(["hunter2"]),
            json!(42_424_242),
            json!(true),
            json!({"secretRef": {"name": "s", "key": "hunter2", "extra": "hunter2"}}),
            json!({"secretRef": {"name": "s"}, "token": "hunter2"}),
            json!({"secretRef": "hunter2"}),
        ] {
            let target = json!({"metadata": {"name": "t"}, "spec": {"type": "x",
                "config": {"kubeconfig": kubeconfig.clone()}}});
            let shown = present(Kind::Target, target);
            let text = shown.to_string();
            assert!(
                !text.contains("hunter2") && !text.contains("42424242") && !text.contains("true,"),
                "{kubeconfig} -> {text}"
            );
            assert_eq!(
                shown["spec"]["config"]["kubeconfig"], REDACTED,
                "{kubeconfig}"
            );
        }
        // A config that is not a map is the kubeconfig itself for the deployers.
        for config in [
            json!("users: [{user: {token: hunter2}}]"),
            json!(["hunter2"]),
        ] {
            let target =
                json!({"metadata": {"name": "t"}, "spec": {"type": "x", "config": config}});
            let shown = present(Kind::Target, target);
            assert_eq!(shown["spec"]["config"], REDACTED, "{shown}");
        }
        // Other config fields, `spec.secretRef` and no config stay as they are.
        for spec in [
            json!({"type": "x", "config": {"other": "visible"}}),
            json!({"type": "x", "secretRef": {"name": "s", "key": "kubeconfig"}}),
            json!({"type": "x"}),
        ] {
            let target = json!({"metadata": {"name": "t"}, "spec": spec.clone()});
            let shown = present(Kind::Target, target);
            assert_eq!(shown["spec"], spec);
            assert!(shown["metadata"]["annotations"].is_null(), "{shown}");
        }
    }

    #[test]
    fn data_objects_copied_from_secrets_are_redacted_unless_revealed() {
        let marked = json!({"metadata": {"name": "d", "namespace": "ns",
            "annotations": {FROM_SECRET_ANNOTATION: "true"}},
            "data": {"password": "hunter2"}});
        let shown = present(Kind::DataObject, marked.clone());
        assert!(!shown.to_string().contains("hunter2"), "{shown}");
        assert_eq!(shown["data"], REDACTED);
        assert_eq!(
            shown["metadata"]["annotations"][REDACTED_ANNOTATION],
            "true"
        );
        let revealed = present_as(Kind::DataObject, marked, true);
        assert_eq!(revealed["data"]["password"], "hunter2");
        // Unmarked DataObjects are plain data.
        let plain = json!({"metadata": {"name": "d"}, "data": {"a": "b"}});
        assert_eq!(present(Kind::DataObject, plain)["data"]["a"], "b");
    }

    #[test]
    fn objects_rendered_from_secrets_are_redacted_unless_revealed() {
        let mark = json!({FROM_SECRET_ANNOTATION: "true"});
        let cases = [
            (
                Kind::Execution,
                json!({"metadata": {"name": "e", "annotations": mark},
                    "spec": {"context": "default", "deployItems": [
                        {"name": "a", "type": "t", "config": {"password": "hunter2"}},
                        {"name": "b", "type": "t", "config": "hunter2"}]}}),
                vec!["/spec/deployItems/0/config", "/spec/deployItems/1/config"],
                vec![("/spec/deployItems/1/name", "b")],
            ),
            (
                Kind::DeployItem,
                json!({"metadata": {"name": "di", "annotations": mark},
                    "spec": {"type": "t", "config": {"values": ["hunter2"]}},
                    "status": {"phase": "Succeeded", "providerStatus": {"x": "hunter2"}}}),
                vec!["/spec/config", "/status/providerStatus"],
                vec![("/spec/type", "t")],
            ),
            (
                Kind::Target,
                json!({"metadata": {"name": "t", "annotations": mark},
                    "spec": {"type": "x", "config": {"token": "hunter2"}}}),
                vec!["/spec/config"],
                vec![("/spec/type", "x")],
            ),
            (
                Kind::Installation,
                json!({"metadata": {"name": "i", "annotations": mark},
                    "spec": {"importDataMappings": {"p": "hunter2"},
                        "exportDataMappings": {"q": "hunter2"}, "context": "c"}}),
                vec!["/spec/importDataMappings", "/spec/exportDataMappings"],
                vec![("/spec/context", "c")],
            ),
        ];
        for (kind, marked, redacted, kept) in cases {
            let shown = present(kind, marked.clone());
            assert!(!shown.to_string().contains("hunter2"), "{kind:?}: {shown}");
            for pointer in redacted {
                assert_eq!(shown.pointer(pointer), Some(&json!(REDACTED)), "{shown}");
            }
            for (pointer, value) in kept {
                assert_eq!(shown.pointer(pointer), Some(&json!(value)), "{shown}");
            }
            assert_eq!(
                shown["metadata"]["annotations"][REDACTED_ANNOTATION],
                "true"
            );
            let revealed = present_as(kind, marked.clone(), true);
            assert_eq!(revealed, {
                let mut m = marked.clone();
                m["apiVersion"] = json!(kind.api_version());
                m["kind"] = json!(kind.as_str());
                m
            });
            // Without the mark nothing changes.
            let mut plain = marked;
            plain["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("annotations");
            assert!(present(kind, plain).to_string().contains("hunter2"));
        }
    }

    #[test]
    fn other_kinds_are_shown_as_stored() {
        let cm = json!({"metadata": {"name": "c"}, "data": {"a": "b"}});
        let shown = present(Kind::ConfigMap, cm);
        assert_eq!(shown["data"]["a"], "b");
        assert_eq!(shown["kind"], "ConfigMap");
        assert_eq!(shown["apiVersion"], "v1");
    }
}
