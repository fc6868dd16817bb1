//! Request routing and the verbs: URL parsing, authentication, fault injection, body
//! decoding and response shaping.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde_json::{Value, json};

use crate::app::{App, RequestRecord};
use crate::discovery::{self, Flavour};
use crate::error::ApiError;
use crate::object;
use crate::openapi;
use crate::patching::{self, PatchKind};
use crate::protobuf;
use crate::resources::ResourceType;
use crate::scale;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::store::{DeleteOptions, Propagation, WriteCtx};
use crate::table;
use crate::watch::{self, WatchRequest};

/// Set on requests of TLS connections that presented a client certificate signed by the CA.
#[derive(Debug, Clone, Copy)]
pub struct ClientCertificate;

const MAX_BODY: usize = 64 * 1024 * 1024;

/// Where a URL points.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    Version,
    Health,
    Api,
    Apis,
    Group(String),
    ResourceList(String, String),
    OpenApiV2,
    OpenApiV3Root,
    OpenApiV3(String, String),
    Resource(Target),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    group: String,
    version: String,
    plural: String,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
    /// `/watch/` in the path (the legacy watch URLs).
    watch: bool,
}

fn parse_route(path: &str, core_namespaced: &dyn Fn(&str) -> bool) -> Option<Route> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["version"] => Some(Route::Version),
        ["healthz" | "readyz" | "livez", ..] => Some(Route::Health),
        ["openapi", "v2"] => Some(Route::OpenApiV2),
        ["openapi", "v3"] => Some(Route::OpenApiV3Root),
        ["openapi", "v3", "api", "v1"] => Some(Route::OpenApiV3(String::new(), "v1".into())),
        ["openapi", "v3", "apis", g, v] => Some(Route::OpenApiV3(g.to_string(), v.to_string())),
        ["api"] => Some(Route::Api),
        ["api", "v1"] => Some(Route::ResourceList(String::new(), "v1".into())),
        ["api", "v1", rest @ ..] => target("", "v1", rest, core_namespaced).map(Route::Resource),
        ["apis"] => Some(Route::Apis),
        ["apis", g] => Some(Route::Group(g.to_string())),
        ["apis", g, v] => Some(Route::ResourceList(g.to_string(), v.to_string())),
        ["apis", g, v, rest @ ..] => target(g, v, rest, &|_| true).map(Route::Resource),
        _ => None,
    }
}

/// The part after the group/version: `[watch/][namespaces/NS/]PLURAL[/NAME[/SUB]]`.
fn target(
    group: &str,
    version: &str,
    rest: &[&str],
    namespaced_plural: &dyn Fn(&str) -> bool,
) -> Option<Target> {
    let (watch, rest) = match rest {
        ["watch", tail @ ..] => (true, tail),
        _ => (false, rest),
    };
    let t = |namespace: Option<&str>, plural: &str, name: Option<&str>, sub: Option<&str>| Target {
        group: group.to_string(),
        version: version.to_string(),
        plural: plural.to_string(),
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
        subresource: sub.map(str::to_string),
        watch,
    };
    let core = group.is_empty();
    match rest {
        [plural] => Some(t(None, plural, None, None)),
        ["namespaces", ns, plural] if !core || namespaced_plural(plural) => {
            Some(t(Some(ns), plural, None, None))
        }
        ["namespaces", ns, plural, name] => Some(t(Some(ns), plural, Some(name), None)),
        ["namespaces", ns, plural, name, sub] => Some(t(Some(ns), plural, Some(name), Some(sub))),
        [plural, name] => Some(t(None, plural, Some(name), None)),
        [plural, name, sub] => Some(t(None, plural, Some(name), Some(sub))),
        _ => None,
    }
}

fn json_response(code: StatusCode, value: &Value) -> Response {
    let mut response = (code, value.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn authenticated(app: &App, headers: &HeaderMap, client_cert: bool) -> bool {
    let auth = &app.auth;
    if app.anonymous || (auth.token.is_none() && auth.basic.is_none() && !auth.client_certificate) {
        return true;
    }
    if auth.client_certificate && client_cert {
        return true;
    }
    let value = header_str(headers, header::AUTHORIZATION);
    if let Some(token) = value.strip_prefix("Bearer ")
        && auth.token.as_deref() == Some(token.trim())
    {
        return true;
    }
    if let Some(encoded) = value.strip_prefix("Basic ")
        && let Some((user, pass)) = &auth.basic
        && let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim())
        && decoded == format!("{user}:{pass}").as_bytes()
    {
        return true;
    }
    false
}

/// The entry point for every request.
pub async fn entry(State(app): State<Arc<App>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().unwrap_or("").to_string();
    let method = parts.method.clone();
    app.record(RequestRecord {
        method: method.to_string(),
        path: path.clone(),
        query: query.clone(),
        user_agent: header_str(&parts.headers, header::USER_AGENT).to_string(),
        content_type: header_str(&parts.headers, header::CONTENT_TYPE).to_string(),
    });
    let latency = app.faults.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if let Some(err) = app.faults.check(method.as_str(), &path) {
        return err.into_response();
    }
    let client_cert = parts.extensions.get::<ClientCertificate>().is_some();
    let is_health = matches!(path.as_str(), "/healthz" | "/readyz" | "/livez");
    if !is_health && !authenticated(&app, &parts.headers, client_cert) {
        return ApiError::unauthorized().into_response();
    }
    let params: HashMap<String, String> =
        axum::extract::Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
            .map(|q| q.0)
            .unwrap_or_default();
    let bytes = match to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e) => return ApiError::bad_request(format!("reading the body: {e}")).into_response(),
    };
    let registry = app.store.registry();
    let core_namespaced = |plural: &str| {
        registry
            .find("", "v1", plural)
            .is_some_and(|rt| rt.namespaced)
    };
    let Some(route) = parse_route(&path, &core_namespaced) else {
        return ApiError::no_route().into_response();
    };
    let accept = header_str(&parts.headers, header::ACCEPT).to_string();
    let result = match route {
        Route::Resource(t) => {
            let request = VerbRequest {
                app: app.clone(),
                method,
                headers: parts.headers,
                params,
                body: bytes.to_vec(),
            };
            resource(request, t).await
        }
        other if method != Method::GET && method != Method::HEAD => {
            let _ = other;
            Err(ApiError::method_not_allowed(method.as_str()))
        }
        Route::Version => Ok(json_response(StatusCode::OK, &discovery::version())),
        Route::Health => Ok((StatusCode::OK, "ok").into_response()),
        Route::Api => Ok(match discovery::flavour(&accept) {
            Flavour::Legacy => {
                json_response(StatusCode::OK, &discovery::api_versions(&app.address))
            }
            Flavour::Aggregated(v) => aggregated(discovery::aggregated(&registry, true, v), v),
        }),
        Route::Apis => Ok(match discovery::flavour(&accept) {
            Flavour::Legacy => json_response(StatusCode::OK, &discovery::api_group_list(&registry)),
            Flavour::Aggregated(v) => aggregated(discovery::aggregated(&registry, false, v), v),
        }),
        Route::Group(g) => discovery::api_group(&registry, &g)
            .map(|doc| json_response(StatusCode::OK, &doc))
            .ok_or_else(ApiError::no_route),
        Route::ResourceList(g, v) => discovery::api_resource_list(&registry, &g, &v)
            .map(|doc| json_response(StatusCode::OK, &doc))
            .ok_or_else(ApiError::no_route),
        Route::OpenApiV2 => Ok(if openapi::wants_v2_protobuf(&accept) {
            let mut r = (StatusCode::OK, openapi::v2_protobuf()).into_response();
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(openapi::V2_PROTOBUF_RESPONSE),
            );
            r
        } else {
            json_response(StatusCode::OK, &openapi::v2_json())
        }),
        Route::OpenApiV3Root => Ok(json_response(StatusCode::OK, &openapi::v3_root(&registry))),
        Route::OpenApiV3(g, v) => openapi::v3_group_version(&registry, &g, &v)
            .map(|doc| json_response(StatusCode::OK, &doc))
            .ok_or_else(ApiError::no_route),
    };
    result.unwrap_or_else(IntoResponse::into_response)
}

fn aggregated(doc: Value, version: &str) -> Response {
    let mut r = json_response(StatusCode::OK, &doc);
    if let Ok(v) = HeaderValue::from_str(&discovery::aggregated_content_type(version)) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

struct VerbRequest {
    app: Arc<App>,
    method: Method,
    headers: HeaderMap,
    params: HashMap<String, String>,
    body: Vec<u8>,
}

impl VerbRequest {
    fn param(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }

    fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some("true" | "1" | "True"))
    }

    fn dry_run(&self) -> bool {
        self.param("dryRun") == Some("All")
    }

    /// `?fieldManager=`, else derived from the User-Agent like kube ("kubectl/v1.34 ..." → "kubectl").
    fn manager(&self) -> String {
        match self.param("fieldManager") {
            Some(m) if !m.is_empty() => m.to_string(),
            _ => {
                let ua = header_str(&self.headers, header::USER_AGENT);
                let prefix = ua.split('/').next().unwrap_or("").trim();
                if prefix.is_empty() {
                    "unknown".to_string()
                } else {
                    prefix.chars().take(128).collect()
                }
            }
        }
    }

    fn ctx(&self) -> WriteCtx {
        WriteCtx {
            manager: self.manager(),
            dry_run: self.dry_run(),
        }
    }

    fn content_type(&self) -> &str {
        header_str(&self.headers, header::CONTENT_TYPE)
    }

    fn accept(&self) -> &str {
        header_str(&self.headers, header::ACCEPT)
    }

    /// The body as JSON (JSON or YAML on the wire).
    fn body_value(&self) -> Result<Value, ApiError> {
        if protobuf::is_envelope(&self.body) || self.content_type().contains("protobuf") {
            return protobuf::decode(&self.body).ok_or_else(|| {
                ApiError::unsupported_media_type(
                    self.content_type(),
                    &[
                        "application/json",
                        "application/yaml",
                        "application/vnd.kubernetes.protobuf (core types, Deployments and Scales only)",
                    ],
                )
            });
        }
        if self.body.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::bad_request("the request body is empty"));
        }
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(v) => Ok(v),
            Err(json_err) => {
                let text = std::str::from_utf8(&self.body).map_err(|_| {
                    ApiError::bad_request(format!("the body is neither JSON nor YAML: {json_err}"))
                })?;
                serde_saphyr::from_str::<Value>(text).map_err(|e| {
                    ApiError::bad_request(format!("the body is neither JSON nor YAML: {e}"))
                })
            }
        }
    }

    fn selectors(&self) -> Result<(LabelSelector, FieldSelector), ApiError> {
        let labels = match self.param("labelSelector") {
            Some(s) => LabelSelector::parse(s)?,
            None => LabelSelector::everything(),
        };
        let fields = match self.param("fieldSelector") {
            Some(s) => FieldSelector::parse(s)?,
            None => FieldSelector::default(),
        };
        Ok((labels, fields))
    }
}

fn is_custom_or_pod(rt: &ResourceType) -> bool {
    rt.is_custom() || (rt.group.is_empty() && rt.plural == "pods")
}

async fn resource(req: VerbRequest, t: Target) -> Result<Response, ApiError> {
    let app = req.app.clone();
    let rt = app
        .store
        .resolve(&t.group, &t.version, &t.plural)
        .ok_or_else(ApiError::no_route)?;
    // A cluster-scoped resource has no namespaced URL, and a namespaced object needs one.
    if t.namespace.is_some() && !rt.namespaced {
        return Err(ApiError::no_route());
    }
    if t.name.is_some() && rt.namespaced && t.namespace.is_none() {
        return Err(ApiError::no_route());
    }
    if t.subresource.as_deref() == Some("scale") && scale::supported(&rt) {
        return scale_verb(&req, &rt, &t);
    }
    if let Some(sub) = &t.subresource
        && !(sub == "status" && rt.status_subresource)
    {
        return Err(ApiError::no_route());
    }
    let status = t.subresource.is_some();
    let ns = t.namespace.clone().unwrap_or_default();
    match (&req.method, &t.name) {
        (&Method::GET, None) => list_or_watch(&req, rt, t.namespace.clone(), t.watch),
        (&Method::GET, Some(name)) if t.watch => {
            // The legacy single-object watch URL.
            let mut req = req;
            req.params
                .insert("fieldSelector".into(), format!("metadata.name={name}"));
            list_or_watch(&req, rt, t.namespace.clone(), true)
        }
        (&Method::GET, Some(name)) => {
            let obj = app.store.get(&rt, &ns, name)?;
            if table::wants_table(req.accept()) {
                let rv = object::resource_version(&obj).to_string();
                return Ok(json_response(
                    StatusCode::OK,
                    &table::table(&rt, &[obj], &rv, true),
                ));
            }
            Ok(json_response(StatusCode::OK, &obj))
        }
        (&Method::POST, None) => {
            if rt.namespaced && t.namespace.is_none() {
                return Err(ApiError::method_not_allowed("POST"));
            }
            let body = req.body_value()?;
            let created = app.store.create(&rt, &ns, body, &req.ctx())?;
            Ok(json_response(StatusCode::CREATED, &created))
        }
        (&Method::PUT, Some(name)) => {
            let body = req.body_value()?;
            let updated = app.store.update(&rt, &ns, name, body, status, &req.ctx())?;
            Ok(json_response(StatusCode::OK, &updated))
        }
        (&Method::PATCH, Some(name)) => {
            let content_type = req.content_type().to_string();
            let accepted = if rt.is_custom() {
                patching::CUSTOM_PATCH_TYPES
            } else {
                patching::PATCH_TYPES
            };
            let kind = PatchKind::from_content_type(&content_type)
                .ok_or_else(|| ApiError::unsupported_media_type(&content_type, accepted))?;
            if kind == PatchKind::Strategic
                && !patching::supports_strategic_merge(&rt.api_version(), &rt.kind)
            {
                return Err(ApiError::unsupported_media_type(&content_type, accepted));
            }
            if kind == PatchKind::Apply && req.param("fieldManager").is_none_or(str::is_empty) {
                return Err(ApiError::bad_request(
                    "PATCH requests with apply content type require a fieldManager query parameter",
                ));
            }
            if kind != PatchKind::Apply && req.param("force").is_some() {
                return Err(ApiError::bad_request(
                    "force flag must only be set for apply patches",
                ));
            }
            let body = req.body_value()?;
            let (obj, created) = app.store.patch(
                &rt,
                &ns,
                name,
                kind,
                &body,
                status,
                req.flag("force"),
                &req.ctx(),
            )?;
            let code = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(json_response(code, &obj))
        }
        (&Method::DELETE, Some(name)) => {
            if status {
                return Err(ApiError::method_not_allowed("DELETE"));
            }
            let opts = delete_options(&req)?;
            let outcome = app.store.delete(&rt, &ns, name, &opts)?;
            if !outcome.removed {
                return Ok(json_response(StatusCode::ACCEPTED, &outcome.object));
            }
            if is_custom_or_pod(&rt) {
                return Ok(json_response(StatusCode::OK, &outcome.object));
            }
            let mut details =
                json!({"name": name, "kind": rt.plural, "uid": object::uid(&outcome.object)});
            if !rt.group.is_empty() {
                details["group"] = json!(rt.group);
            }
            Ok(json_response(
                StatusCode::OK,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
            ))
        }
        (&Method::DELETE, None) => {
            if !rt.namespaced {
                return Err(ApiError::method_not_allowed("DELETE"));
            }
            let (labels, fields) = req.selectors()?;
            let opts = delete_options(&req)?;
            let deleted = app.store.delete_collection(
                &rt,
                t.namespace.as_deref(),
                &labels,
                &fields,
                &opts,
            )?;
            Ok(json_response(
                StatusCode::OK,
                &json!({
                    "kind": rt.list_kind(),
                    "apiVersion": rt.api_version(),
                    "metadata": {"resourceVersion": app.store.current_rv().to_string()},
                    "items": deleted,
                }),
            ))
        }
        (method, _) => Err(ApiError::method_not_allowed(method.as_str())),
    }
}

/// `GET`, `PUT` and `PATCH` of `.../NAME/scale`: reads and writes `spec.replicas` of the object.
fn scale_verb(req: &VerbRequest, rt: &ResourceType, t: &Target) -> Result<Response, ApiError> {
    let app = &req.app;
    let ns = t.namespace.clone().unwrap_or_default();
    let Some(name) = &t.name else {
        return Err(ApiError::no_route());
    };
    let current = app.store.get(rt, &ns, name)?;
    let current_scale = scale::scale_of(&current);
    let requested = match req.method {
        Method::GET => return Ok(json_response(StatusCode::OK, &current_scale)),
        Method::PUT => req.body_value()?,
        Method::PATCH => {
            let content_type = req.content_type().to_string();
            let kind = PatchKind::from_content_type(&content_type)
                .filter(|k| *k != PatchKind::Apply)
                .ok_or_else(|| {
                    ApiError::unsupported_media_type(&content_type, &patching::PATCH_TYPES[..3])
                })?;
            let body = req.body_value()?;
            patching::patch(kind, &current_scale, &body)
                .map_err(|e| e.into_api_error("autoscaling", "scale", "Scale", name))?
        }
        ref other => return Err(ApiError::method_not_allowed(other.as_str())),
    };
    let replicas = scale::requested_replicas(&requested).map_err(|message| {
        ApiError::invalid(
            "autoscaling",
            "Scale",
            name,
            vec![crate::error::Cause::new(
                "FieldValueInvalid",
                message,
                "spec.replicas",
            )],
        )
    })?;
    let mut updated = current;
    updated["spec"]["replicas"] = serde_json::json!(replicas);
    // A Scale naming a resourceVersion must name the current one.
    if let Some(rv) = requested
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
    {
        updated["metadata"]["resourceVersion"] = serde_json::json!(rv);
    }
    let stored = app
        .store
        .update(rt, &ns, name, updated, false, &req.ctx())?;
    Ok(json_response(StatusCode::OK, &scale::scale_of(&stored)))
}

fn delete_options(req: &VerbRequest) -> Result<DeleteOptions, ApiError> {
    let body = if req.body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        req.body_value()?
    };
    let policy = req
        .param("propagationPolicy")
        .map(str::to_string)
        .or_else(|| {
            body.get("propagationPolicy")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
    let mut propagation = match policy.as_deref() {
        None | Some("") => None,
        Some("Background") => Some(Propagation::Background),
        Some("Foreground") => Some(Propagation::Foreground),
        Some("Orphan") => Some(Propagation::Orphan),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
            )));
        }
    };
    let orphan = req
        .param("orphanDependents")
        .map(|v| v == "true")
        .or_else(|| body.get("orphanDependents").and_then(Value::as_bool));
    if propagation.is_none() && orphan == Some(true) {
        propagation = Some(Propagation::Orphan);
    }
    let dry_run = req.dry_run()
        || body
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|v| v == "All"));
    Ok(DeleteOptions {
        propagation,
        precondition_uid: body
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string),
        precondition_rv: body
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string),
        dry_run,
    })
}

fn list_or_watch(
    req: &VerbRequest,
    rt: ResourceType,
    namespace: Option<String>,
    watch_path: bool,
) -> Result<Response, ApiError> {
    let (labels, fields) = req.selectors()?;
    if let Some(c) = req.param("continue")
        && !c.is_empty()
    {
        return Err(ApiError::gone(
            "the provided continue parameter is too old to display a consistent list result",
        ));
    }
    let as_table = table::wants_table(req.accept());
    if watch_path || req.flag("watch") {
        let send_initial = req.flag("sendInitialEvents");
        let timeout = match req.param("timeoutSeconds") {
            Some(t) => Duration::from_secs(
                t.parse::<u64>()
                    .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds {t:?}")))?,
            ),
            None => Duration::from_secs(1800),
        };
        return watch::serve(
            req.app.clone(),
            WatchRequest {
                after: watch::parse_start(req.param("resourceVersion"), send_initial)?,
                rt,
                namespace,
                labels,
                fields,
                timeout,
                bookmarks: req.flag("allowWatchBookmarks"),
                send_initial_events: send_initial,
                as_table,
            },
        );
    }
    let (items, rv) = req
        .app
        .store
        .list(&rt, namespace.as_deref(), &labels, &fields);
    if as_table {
        return Ok(json_response(
            StatusCode::OK,
            &table::table(&rt, &items, &rv.to_string(), true),
        ));
    }
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "kind": rt.list_kind(),
            "apiVersion": rt.api_version(),
            "metadata": {"resourceVersion": rv.to_string()},
            "items": items,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let core = |p: &str| matches!(p, "configmaps" | "pods");
        let r = |p: &str| parse_route(p, &core);
        assert_eq!(r("/version"), Some(Route::Version));
        let Some(Route::Resource(t)) = r("/api/v1/namespaces/ns1/configmaps/a") else {
            panic!("resource")
        };
        assert_eq!(
            (t.namespace.as_deref(), t.plural.as_str(), t.name.as_deref()),
            (Some("ns1"), "configmaps", Some("a"))
        );
        let Some(Route::Resource(t)) = r("/api/v1/namespaces/ns1/status") else {
            panic!("ns status")
        };
        assert_eq!(
            (
                t.plural.as_str(),
                t.name.as_deref(),
                t.subresource.as_deref()
            ),
            ("namespaces", Some("ns1"), Some("status"))
        );
        let Some(Route::Resource(t)) = r("/apis/apps/v1/watch/namespaces/x/deployments") else {
            panic!("watch")
        };
        assert!(t.watch);
        assert_eq!(
            r("/apis/apps/v1"),
            Some(Route::ResourceList("apps".into(), "v1".into()))
        );
        assert_eq!(r("/foo"), None);
    }
}
