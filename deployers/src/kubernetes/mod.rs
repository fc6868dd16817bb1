//! Talking to a target cluster: the [`ClusterClient`] side-effect boundary, its implementation
//! on kube-rs ([`KubeClusterClient`]) and an in-memory fake for tests ([`FakeCluster`]).
//!
//! Objects are plain JSON values (Landscaper works with `unstructured.Unstructured`); the
//! client resolves `apiVersion`/`kind` to a REST resource through API discovery.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::BoxFuture;

pub mod fake;
pub mod kube_client;

pub use fake::FakeCluster;
pub use kube_client::KubeClusterClient;

/// Which object: `apiVersion`, `kind`, `namespace` (empty for cluster-scoped) and `name`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ObjectRef {
    pub fn new(api_version: &str, kind: &str, namespace: &str, name: &str) -> ObjectRef {
        ObjectRef {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The reference of an object value (missing fields are empty).
    pub fn of(object: &Value) -> ObjectRef {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
        ObjectRef {
            api_version: text(object.get("apiVersion")),
            kind: text(object.get("kind")),
            namespace: text(object.pointer("/metadata/namespace")),
            name: text(object.pointer("/metadata/name")),
        }
    }

    /// The API group (`""` for the core group).
    pub fn group(&self) -> &str {
        group_of(&self.api_version)
    }

    /// `<group version>, Kind=<kind>` as client-go prints a GroupVersionKind.
    pub fn gvk_string(&self) -> String {
        format!("{}, Kind={}", self.api_version, self.kind)
    }
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// The group of an `apiVersion` (`apps/v1` → `apps`, `v1` → ``).
pub fn group_of(api_version: &str) -> &str {
    api_version
        .rsplit_once('/')
        .map_or("", |(group, _version)| group)
}

/// What discovery knows about a kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// The plural resource name, e.g. `deployments`.
    pub plural: String,
    pub namespaced: bool,
}

/// How [`ClusterClient::patch`] changes an object.
#[derive(Debug, Clone, PartialEq)]
pub enum Patch {
    /// RFC 7386 JSON merge patch.
    Merge(Value),
    /// RFC 6902 JSON patch.
    Json(Value),
    /// Kubernetes' strategic merge patch (built-in kinds only).
    Strategic(Value),
    /// Server-side apply with this field manager.
    Apply {
        field_manager: String,
        object: Value,
    },
}

/// What a delete call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deletion {
    /// The object is gone or marked for deletion (it may have finalizers).
    Accepted,
    /// There was no such object (or its kind is no longer served).
    NotFound,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// The API server does not serve this kind (client-go's "no matches for kind").
    #[error("no matches for kind {kind:?} in version {api_version:?}")]
    NoMatch { api_version: String, kind: String },
    #[error("{0} not found")]
    NotFound(String),
    #[error("conflict: {0}")]
    Conflict(String),
    /// 401: the target's credentials are not accepted.
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// Any other answer of the API server (403, 422, 500, ...).
    #[error("{message} (status {code})")]
    Api { code: u16, message: String },
    /// The request is malformed before it is sent (e.g. a namespaced object without namespace).
    #[error("{0}")]
    Invalid(String),
    /// The cluster could not be reached.
    #[error("cluster unreachable: {0}")]
    Unreachable(String),
}

/// How [`ClusterError::Unreachable`] starts in an error's text (the appliance retries such
/// errors with growing intervals).
pub const UNREACHABLE_PREFIX: &str = "cluster unreachable: ";

impl ClusterError {
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            ClusterError::NotFound(_) | ClusterError::NoMatch { .. }
        )
    }
}

pub type ClusterResult<T> = Result<T, ClusterError>;

/// What discovery lists: each served group version (`apps/v1`, core `v1`) with the kinds of its
/// resources.
pub type ServedResources = Vec<(String, Vec<String>)>;

/// The operations the deployers need on a cluster. Implementations are shared between tasks.
pub trait ClusterClient: Send + Sync {
    /// Resolves `apiVersion`/`kind` through discovery. A kind that is not (yet) served is looked
    /// up again on the next call, so kinds of CRDs created meanwhile are found.
    fn resolve<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, ClusterResult<ResourceInfo>>;

    /// Forgets everything discovery learnt (e.g. after CRDs changed).
    fn invalidate_discovery(&self);

    /// The API server's version (`/version` `gitVersion`, e.g. `v1.31.2`); `None` when it is
    /// not known (the helm deployer then renders with Helm's default capabilities).
    fn server_version(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }

    /// Discovery of everything the API server serves (client-go's `ServerGroupsAndResources`):
    /// each group version (core `v1` included) with the kinds of its resources, subresources
    /// included. A group version whose resources cannot be read is listed without kinds (as
    /// Helm tolerates `ErrGroupDiscoveryFailed`). Empty when the client cannot tell (Helm then
    /// uses its default set).
    fn served_resources(&self) -> BoxFuture<'_, ClusterResult<ServedResources>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    /// The object, `None` when it does not exist.
    fn get<'a>(&'a self, object: &'a ObjectRef) -> BoxFuture<'a, ClusterResult<Option<Value>>>;

    /// Creates the object and returns it as stored.
    fn create<'a>(&'a self, object: &'a Value) -> BoxFuture<'a, ClusterResult<Value>>;

    /// Replaces the object (its `metadata.resourceVersion`, when set, must be current).
    fn update<'a>(&'a self, object: &'a Value) -> BoxFuture<'a, ClusterResult<Value>>;

    fn patch<'a>(
        &'a self,
        object: &'a ObjectRef,
        patch: &'a Patch,
    ) -> BoxFuture<'a, ClusterResult<Value>>;

    fn delete<'a>(&'a self, object: &'a ObjectRef) -> BoxFuture<'a, ClusterResult<Deletion>>;

    /// The objects of a kind, in one namespace (`Some`) or in all (`None`), optionally only those
    /// carrying all the given labels.
    fn list<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
        namespace: Option<&'a str>,
        labels: &'a BTreeMap<String, String>,
    ) -> BoxFuture<'a, ClusterResult<Vec<Value>>>;
}

/// Whether `object` carries every label of `selector`.
pub fn matches_labels(object: &Value, selector: &BTreeMap<String, String>) -> bool {
    let labels = object.pointer("/metadata/labels");
    selector.iter().all(|(key, value)| {
        labels
            .and_then(|l| l.get(key))
            .and_then(Value::as_str)
            .is_some_and(|v| v == value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn groups_and_references() {
        assert_eq!(group_of("apps/v1"), "apps");
        assert_eq!(group_of("v1"), "");
        let r = ObjectRef::of(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "echo", "namespace": "acc-01"}}));
        assert_eq!(r.to_string(), "Deployment acc-01/echo");
        assert_eq!(r.gvk_string(), "apps/v1, Kind=Deployment");
    }
}
