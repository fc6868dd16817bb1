//! OpenAPI documents, as much as kubectl and helm use: v3 per group/version, whose `PATCH`
//! operations advertise `fieldValidation` (so clients leave validation to the server instead
//! of validating against schemas), and an empty v2 document (JSON, or the protobuf encoding
//! client-go asks for) so kubectl falls back to its compiled-in types for strategic merge.

use serde_json::{Map, Value, json};

use crate::discovery::GIT_VERSION;
use crate::resources::{Registry, ResourceType};

/// The response type of the protobuf v2 document. Not the `...v2@v1.0+protobuf` clients ask
/// for: Go's `mime.ParseMediaType` rejects the `@`, which fails the whole request in client-go.
pub const V2_PROTOBUF_RESPONSE: &str = "application/octet-stream";

/// Whether an `Accept` header prefers the protobuf encoding of the v2 document.
pub fn wants_v2_protobuf(accept: &str) -> bool {
    accept.split(',').next().is_some_and(|first| {
        first
            .trim()
            .starts_with("application/com.github.proto-openapi.spec.v2")
    })
}

pub fn v2_json() -> Value {
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": {},
        "definitions": {},
    })
}

fn protobuf_string(field: u8, s: &str, out: &mut Vec<u8>) {
    out.push((field << 3) | 2);
    protobuf_varint(s.len() as u64, out);
    out.extend_from_slice(s.as_bytes());
}

fn protobuf_varint(mut n: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
}

/// `openapi_v2.Document{swagger: "2.0", info: {title, version}}` in protobuf.
pub fn v2_protobuf() -> Vec<u8> {
    let mut info = Vec::new();
    protobuf_string(1, "Kubernetes", &mut info);
    protobuf_string(2, GIT_VERSION, &mut info);
    let mut doc = Vec::new();
    protobuf_string(1, "2.0", &mut doc);
    doc.push((2 << 3) | 2);
    protobuf_varint(info.len() as u64, &mut doc);
    doc.extend_from_slice(&info);
    doc
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn hash_of(s: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016X}")
}

/// `/openapi/v3`: one entry per group/version; the hash changes when its resources change.
pub fn v3_root(registry: &Registry) -> Value {
    let mut paths = Map::new();
    let mut gvs: Vec<(String, String)> = vec![(String::new(), "v1".to_string())];
    for g in registry.groups() {
        for v in g.versions {
            gvs.push((g.name.clone(), v));
        }
    }
    for (group, version) in gvs {
        let path = gv_path(&group, &version);
        let doc = v3_group_version(registry, &group, &version).unwrap_or(Value::Null);
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", hash_of(&doc.to_string()))}),
        );
    }
    json!({"paths": paths})
}

fn query_param(name: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
}

fn operation(rt: &ResourceType, action: &str, verb: &str, params: &[&str]) -> Value {
    json!({
        "operationId": format!("{verb}{}{}", rt.group.replace('.', "_"), rt.kind),
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "parameters": params.iter().map(|p| query_param(p)).collect::<Vec<_>>(),
        "responses": {"200": {"description": "OK"}},
    })
}

fn path_params(rt: &ResourceType, with_name: bool) -> Value {
    let mut params = Vec::new();
    if with_name {
        params.push(json!({"name": "name", "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}}));
    }
    if rt.namespaced {
        params.push(json!({"name": "namespace", "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}}));
    }
    Value::Array(params)
}

const WRITE_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation"];
const PATCH_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "force"];
const LIST_PARAMS: &[&str] = &[
    "labelSelector",
    "fieldSelector",
    "resourceVersion",
    "watch",
    "allowWatchBookmarks",
    "timeoutSeconds",
    "limit",
    "continue",
];

/// `/openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>`.
pub fn v3_group_version(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let types = registry.in_group_version(group, version);
    if types.is_empty() && !(group.is_empty() && version == "v1") {
        return None;
    }
    let mut paths = Map::new();
    for rt in types {
        let base = if rt.namespaced {
            format!(
                "/{}/namespaces/{{namespace}}/{}",
                gv_path(group, version),
                rt.plural
            )
        } else {
            format!("/{}/{}", gv_path(group, version), rt.plural)
        };
        paths.insert(
            base.clone(),
            json!({
                "get": operation(rt, "list", "list", LIST_PARAMS),
                "post": operation(rt, "post", "create", WRITE_PARAMS),
                "parameters": path_params(rt, false),
            }),
        );
        paths.insert(
            format!("{base}/{{name}}"),
            json!({
                "get": operation(rt, "get", "read", &[]),
                "put": operation(rt, "put", "replace", WRITE_PARAMS),
                "patch": operation(rt, "patch", "patch", PATCH_PARAMS),
                "delete": operation(rt, "delete", "delete", &["dryRun", "propagationPolicy"]),
                "parameters": path_params(rt, true),
            }),
        );
        if rt.status_subresource {
            paths.insert(
                format!("{base}/{{name}}/status"),
                json!({
                    "get": operation(rt, "get", "readStatus", &[]),
                    "put": operation(rt, "put", "replaceStatus", WRITE_PARAMS),
                    "patch": operation(rt, "patch", "patchStatus", PATCH_PARAMS),
                    "parameters": path_params(rt, true),
                }),
            );
        }
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents() {
        let r = Registry::default();
        let root = v3_root(&r);
        assert!(
            root["paths"]["apis/apps/v1"]["serverRelativeURL"]
                .as_str()
                .is_some_and(|u| u.starts_with("/openapi/v3/apis/apps/v1?hash="))
        );
        let doc = v3_group_version(&r, "apps", "v1").unwrap();
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "Deployment"
        );
        assert!(wants_v2_protobuf(
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
        ));
        assert_eq!(v2_protobuf()[..5], [0x0a, 3, b'2', b'.', b'0']);
    }
}
