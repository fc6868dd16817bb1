//! Discovery as kube-apiserver shapes it: legacy (`APIVersions`, `APIGroupList`, `APIGroup`,
//! `APIResourceList`) and aggregated (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`, which
//! kubectl ≥ 1.30 asks for first on `/api` and `/apis`), and `/version`.

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::negotiate::{DiscoveryFormat, discovery_format};
use super::objects::json_response;
use super::resources::{GROUPS, GroupVersion, Resource, group_version};
use super::status::ApiError;

/// The Kubernetes version the API claims. 1.33 is within kubectl's supported skew (±1 minor)
/// of the clients in use (1.32 to 1.34), so `kubectl version` does not warn; the build
/// metadata names the appliance and its version.
pub const KUBERNETES_MAJOR: &str = "1";
pub const KUBERNETES_MINOR: &str = "33";

pub fn git_version() -> String {
    format!(
        "v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0+landscaper-appliance-{}",
        env!("CARGO_PKG_VERSION")
    )
}

/// `/version`.
pub async fn version() -> Response {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    json_response(&json!({
        "major": KUBERNETES_MAJOR,
        "minor": KUBERNETES_MINOR,
        "gitVersion": git_version(),
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{arch}", std::env::consts::OS),
    }))
}

fn group_version_for_discovery(gv: GroupVersion) -> Value {
    json!({"groupVersion": gv.api_version(), "version": gv.version})
}

fn api_group(gv: GroupVersion) -> Value {
    json!({
        "name": gv.group,
        "versions": [group_version_for_discovery(gv)],
        "preferredVersion": group_version_for_discovery(gv),
    })
}

/// One legacy `APIResource` entry (and its `status` subresource entry).
fn api_resources(resource: Resource) -> Vec<Value> {
    let mut entry = Map::new();
    entry.insert("name".into(), json!(resource.plural()));
    entry.insert("singularName".into(), json!(resource.singular()));
    entry.insert("namespaced".into(), json!(resource.namespaced()));
    entry.insert("kind".into(), json!(resource.kind_name()));
    entry.insert("verbs".into(), json!(resource.verbs()));
    if !resource.short_names().is_empty() {
        entry.insert("shortNames".into(), json!(resource.short_names()));
    }
    if !resource.categories().is_empty() {
        entry.insert("categories".into(), json!(resource.categories()));
    }
    let mut entries = vec![Value::Object(entry)];
    if resource.has_status_subresource() {
        entries.push(json!({
            "name": format!("{}/status", resource.plural()),
            "singularName": "",
            "namespaced": resource.namespaced(),
            "kind": resource.kind_name(),
            "verbs": ["get"],
        }));
    }
    entries
}

fn api_resource_list(gv: GroupVersion) -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv.api_version(),
        "resources": gv.resources().into_iter().flat_map(api_resources).collect::<Vec<_>>(),
    })
}

/// One aggregated `APIResourceDiscovery` entry.
fn resource_discovery(gv: GroupVersion, resource: Resource) -> Value {
    let response_kind =
        json!({"group": gv.group, "version": gv.version, "kind": resource.kind_name()});
    let mut entry = Map::new();
    entry.insert("resource".into(), json!(resource.plural()));
    entry.insert("responseKind".into(), response_kind.clone());
    entry.insert(
        "scope".into(),
        json!(if resource.namespaced() {
            "Namespaced"
        } else {
            "Cluster"
        }),
    );
    entry.insert("singularResource".into(), json!(resource.singular()));
    entry.insert("verbs".into(), json!(resource.verbs()));
    if !resource.short_names().is_empty() {
        entry.insert("shortNames".into(), json!(resource.short_names()));
    }
    if !resource.categories().is_empty() {
        entry.insert("categories".into(), json!(resource.categories()));
    }
    if resource.has_status_subresource() {
        entry.insert(
            "subresources".into(),
            json!([{"subresource": "status", "responseKind": response_kind, "verbs": ["get"]}]),
        );
    }
    Value::Object(entry)
}

fn group_discovery(gv: GroupVersion) -> Value {
    let mut metadata = Map::new();
    if !gv.group.is_empty() {
        metadata.insert("name".into(), json!(gv.group));
    }
    metadata.insert("creationTimestamp".into(), Value::Null);
    json!({
        "metadata": metadata,
        "versions": [{
            "version": gv.version,
            "resources": gv.resources().into_iter().map(|r| resource_discovery(gv, r)).collect::<Vec<_>>(),
            "freshness": "Current",
        }],
    })
}

fn aggregated(version: &'static str, groups: &[GroupVersion]) -> Response {
    let list = json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": groups.iter().map(|gv| group_discovery(*gv)).collect::<Vec<_>>(),
    });
    let mut response = json_response(&list);
    let content_type =
        format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
    if let Ok(value) = HeaderValue::from_str(&content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

fn with_vary(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    response
}

/// `/api`.
pub async fn core_versions(headers: HeaderMap) -> Response {
    with_vary(match discovery_format(&headers) {
        DiscoveryFormat::Aggregated { version } => aggregated(version, &[GroupVersion::CORE]),
        DiscoveryFormat::Legacy => {
            let server = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("127.0.0.1:8080");
            json_response(&json!({
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}],
            }))
        }
    })
}

/// `/api/v1`.
pub async fn core_resources() -> Response {
    json_response(&api_resource_list(GroupVersion::CORE))
}

/// `/apis`.
pub async fn groups(headers: HeaderMap) -> Response {
    with_vary(match discovery_format(&headers) {
        DiscoveryFormat::Aggregated { version } => aggregated(version, &GROUPS),
        DiscoveryFormat::Legacy => json_response(&json!({
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": GROUPS.iter().map(|gv| api_group(*gv)).collect::<Vec<_>>(),
        })),
    })
}

/// `/apis/{group}`.
pub async fn group(Path(group): Path<String>) -> Response {
    match GROUPS.iter().find(|gv| gv.group == group) {
        Some(gv) => {
            let mut body = api_group(*gv);
            body["kind"] = json!("APIGroup");
            body["apiVersion"] = json!("v1");
            json_response(&body)
        }
        None => ApiError::unknown_resource().into_response(),
    }
}

/// `/apis/{group}/{version}`.
pub async fn group_version_resources(Path((group, version)): Path<(String, String)>) -> Response {
    match group_version(&group, &version).filter(|gv| !gv.group.is_empty()) {
        Some(gv) => json_response(&api_resource_list(gv)),
        None => ApiError::unknown_resource().into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_list_has_status_subresources() {
        let list = api_resource_list(GROUPS[0]);
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "contexts",
                "dataobjects",
                "deployitems",
                "deployitems/status",
                "executions",
                "executions/status",
                "installations",
                "installations/status",
                "targets"
            ]
        );
        let core = api_resource_list(GroupVersion::CORE);
        assert_eq!(core["groupVersion"], "v1");
        let core_names: Vec<&str> = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            core_names,
            ["configmaps", "events", "namespaces", "secrets"]
        );
        assert_eq!(core["resources"][2]["namespaced"], false);
        let events = &core["resources"][1];
        assert_eq!(events["kind"], "Event");
        assert_eq!(events["namespaced"], true);
        assert_eq!(events["singularName"], "event");
        assert_eq!(events["verbs"], json!(["get", "list"]));
        assert_eq!(events["shortNames"], json!(["ev"]));
        assert_eq!(events.get("categories"), None);
        let aggregated = group_discovery(GroupVersion::CORE);
        let events = aggregated["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "events")
            .unwrap();
        assert_eq!(events["scope"], "Namespaced");
        assert_eq!(
            events["responseKind"],
            json!({"group": "", "version": "v1", "kind": "Event"})
        );
    }

    #[test]
    fn aggregated_discovery_names_response_kinds() {
        let group = group_discovery(GROUPS[1]);
        assert_eq!(
            group["metadata"]["name"],
            "appliance.landscaper-appliance.io"
        );
        let r = &group["versions"][0]["resources"][0];
        assert_eq!(r["resource"], "manifestfiles");
        assert_eq!(r["scope"], "Cluster");
        assert_eq!(r["responseKind"]["kind"], "ManifestFile");
        assert_eq!(r["shortNames"], json!(["mf"]));
        let r = &group["versions"][0]["resources"][1];
        assert_eq!(r["resource"], "transportarchives");
        assert_eq!(r["scope"], "Cluster");
        assert_eq!(r["responseKind"]["kind"], "TransportArchive");
        assert_eq!(r["shortNames"], json!(["ta"]));
        assert!(r.get("subresources").is_none());
    }

    #[test]
    fn git_version_is_semver_with_build_metadata() {
        let v = git_version();
        assert!(v.starts_with("v1.33.0+landscaper-appliance-"), "{v}");
    }
}
