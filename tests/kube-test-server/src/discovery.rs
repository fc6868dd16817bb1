//! Discovery documents: `/version`, legacy (`APIVersions`, `APIGroupList`, `APIGroup`,
//! `APIResourceList`) and aggregated (`apidiscovery.k8s.io/v2`, asked for first by kubectl and
//! client-go since 1.30; the response Content-Type tells them which one they got).

use serde_json::{Map, Value, json};

use crate::resources::{Registry, ResourceType};

pub const KUBE_MAJOR: &str = "1";
pub const KUBE_MINOR: &str = "34";
pub const GIT_VERSION: &str = "v1.34.0+kube-test-server";

pub fn version() -> Value {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    json!({
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": format!("{}/{arch}", std::env::consts::OS),
    })
}

/// Which discovery flavour a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    Legacy,
    /// Aggregated discovery; the `v` parameter (`v2` or `v2beta1`).
    Aggregated(&'static str),
}

/// Picks the first acceptable entry of `Accept` (kube's content negotiation, in order).
pub fn flavour(accept: &str) -> Flavour {
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let essence = parts.next().unwrap_or("");
        if !matches!(essence, "application/json" | "*/*" | "application/*") {
            continue;
        }
        let params: Vec<(&str, &str)> = parts.filter_map(|p| p.split_once('=')).collect();
        let param = |k: &str| params.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
        match param("as") {
            None => return Flavour::Legacy,
            Some("APIGroupDiscoveryList") if param("g") == Some("apidiscovery.k8s.io") => {
                match param("v") {
                    Some("v2") => return Flavour::Aggregated("v2"),
                    Some("v2beta1") => return Flavour::Aggregated("v2beta1"),
                    _ => {}
                }
            }
            Some(_) => {}
        }
    }
    Flavour::Legacy
}

pub fn aggregated_content_type(version: &str) -> String {
    format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList")
}

pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_entry(name: &str, versions: &[String]) -> Value {
    let gvs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({
        "name": name,
        "versions": gvs,
        "preferredVersion": gvs.first().cloned().unwrap_or(Value::Null),
    })
}

pub fn api_group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .map(|g| group_entry(&g.name, &g.versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn api_group(registry: &Registry, group: &str) -> Option<Value> {
    let g = registry.groups().into_iter().find(|g| g.name == group)?;
    let mut doc = group_entry(&g.name, &g.versions);
    if let Some(m) = doc.as_object_mut() {
        m.insert("kind".into(), json!("APIGroup"));
        m.insert("apiVersion".into(), json!("v1"));
    }
    Some(doc)
}

fn legacy_resource(rt: &ResourceType) -> Vec<Value> {
    let mut entry = Map::new();
    entry.insert("name".into(), json!(rt.plural));
    entry.insert("singularName".into(), json!(rt.singular));
    entry.insert("namespaced".into(), json!(rt.namespaced));
    entry.insert("kind".into(), json!(rt.kind));
    entry.insert("verbs".into(), json!(rt.verbs()));
    if !rt.short_names.is_empty() {
        entry.insert("shortNames".into(), json!(rt.short_names));
    }
    if !rt.categories.is_empty() {
        entry.insert("categories".into(), json!(rt.categories));
    }
    entry.insert("storageVersionHash".into(), json!(storage_hash(rt)));
    let mut out = vec![Value::Object(entry)];
    if rt.status_subresource {
        out.push(json!({
            "name": format!("{}/status", rt.plural),
            "singularName": "",
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": ["get", "patch", "update"],
        }));
    }
    if crate::scale::supported(rt) {
        out.push(json!({
            "name": format!("{}/scale", rt.plural),
            "singularName": "",
            "namespaced": rt.namespaced,
            "group": "autoscaling",
            "version": "v1",
            "kind": "Scale",
            "verbs": ["get", "patch", "update"],
        }));
    }
    out
}

/// A stable short hash (clients only compare it).
fn storage_hash(rt: &ResourceType) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in format!("{}/{}/{}", rt.group, rt.version, rt.kind).bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")[..11].to_string()
}

pub fn api_resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let types = registry.in_group_version(group, version);
    if types.is_empty() && !(group.is_empty() && version == "v1") {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let resources: Vec<Value> = types.into_iter().flat_map(legacy_resource).collect();
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

fn aggregated_resource(rt: &ResourceType) -> Value {
    let response_kind = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
    let mut entry = Map::new();
    entry.insert("resource".into(), json!(rt.plural));
    entry.insert("responseKind".into(), response_kind.clone());
    entry.insert(
        "scope".into(),
        json!(if rt.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        }),
    );
    entry.insert("singularResource".into(), json!(rt.singular));
    entry.insert("verbs".into(), json!(rt.verbs()));
    if !rt.short_names.is_empty() {
        entry.insert("shortNames".into(), json!(rt.short_names));
    }
    if !rt.categories.is_empty() {
        entry.insert("categories".into(), json!(rt.categories));
    }
    let mut subresources = Vec::new();
    if rt.status_subresource {
        subresources.push(json!({"subresource": "status", "responseKind": response_kind, "verbs": ["get", "patch", "update"]}));
    }
    if crate::scale::supported(rt) {
        subresources.push(json!({"subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": ["get", "patch", "update"]}));
    }
    if !subresources.is_empty() {
        entry.insert("subresources".into(), Value::Array(subresources));
    }
    Value::Object(entry)
}

fn aggregated_group(registry: &Registry, name: &str, versions: &[String]) -> Value {
    let mut metadata = Map::new();
    if !name.is_empty() {
        metadata.insert("name".into(), json!(name));
    }
    metadata.insert("creationTimestamp".into(), Value::Null);
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let resources: Vec<Value> = registry
                .in_group_version(name, v)
                .into_iter()
                .map(aggregated_resource)
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    json!({"metadata": metadata, "versions": versions})
}

/// `/api` (core group only) or `/apis` (every named group) as an `APIGroupDiscoveryList`.
pub fn aggregated(registry: &Registry, core: bool, version: &str) -> Value {
    let items: Vec<Value> = if core {
        vec![aggregated_group(registry, "", &["v1".to_string()])]
    } else {
        registry
            .groups()
            .iter()
            .map(|g| aggregated_group(registry, &g.name, &g.versions))
            .collect()
    };
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiates() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(flavour(kubectl), Flavour::Aggregated("v2"));
        assert_eq!(flavour("application/json"), Flavour::Legacy);
        assert_eq!(flavour(""), Flavour::Legacy);
        let r = Registry::default();
        let core = aggregated(&r, true, "v2");
        assert_eq!(core["items"][0]["versions"][0]["version"], "v1");
        assert!(api_resource_list(&r, "apps", "v1").is_some());
        assert!(api_resource_list(&r, "nope", "v1").is_none());
    }
}
