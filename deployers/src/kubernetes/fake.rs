//! An in-memory cluster for unit tests: discovery of built-in kinds and of kinds defined by
//! created CRDs, server-managed metadata (uid, resourceVersion, generation), finalizers, a
//! status that survives updates (as with a status subresource), and a log of every write.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use serde_json::{Value, json};

use super::{
    ClusterClient, ClusterError, ClusterResult, Deletion, ObjectRef, Patch, ResourceInfo, group_of,
    matches_labels,
};
use crate::BoxFuture;

type Key = (String, String, String, String);

#[derive(Debug, Default)]
struct State {
    /// (group, kind) → resource.
    kinds: HashMap<(String, String), ResourceInfo>,
    objects: BTreeMap<Key, Value>,
    next_uid: u64,
    revision: u64,
    log: Vec<String>,
    unreachable: bool,
    discovery_calls: usize,
    run_workloads: bool,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct FakeCluster {
    state: Mutex<State>,
}

const BUILT_IN_KINDS: &[(&str, &str, &str, bool)] = &[
    ("", "ConfigMap", "configmaps", true),
    ("", "Secret", "secrets", true),
    ("", "Pod", "pods", true),
    ("", "Service", "services", true),
    ("", "ServiceAccount", "serviceaccounts", true),
    ("", "ReplicationController", "replicationcontrollers", true),
    ("", "Namespace", "namespaces", false),
    ("apps", "Deployment", "deployments", true),
    ("apps", "StatefulSet", "statefulsets", true),
    ("apps", "DaemonSet", "daemonsets", true),
    ("apps", "ReplicaSet", "replicasets", true),
    ("batch", "Job", "jobs", true),
    (
        "rbac.authorization.k8s.io",
        "ClusterRole",
        "clusterroles",
        false,
    ),
    ("rbac.authorization.k8s.io", "Role", "roles", true),
    (
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    ),
];

impl FakeCluster {
    pub fn new() -> FakeCluster {
        let fake = FakeCluster::default();
        {
            let mut state = fake.lock();
            for (group, kind, plural, namespaced) in BUILT_IN_KINDS {
                state.kinds.insert(
                    (group.to_string(), kind.to_string()),
                    ResourceInfo {
                        plural: plural.to_string(),
                        namespaced: *namespaced,
                    },
                );
            }
        }
        fake
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panicking test thread must not hide the state from the others.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Jobs and bare Pods finish as soon as they are created (as the test server's simulated
    /// controllers do, after no delay): `kube-test-server/outcome: Fail` fails them
    /// (`BackoffLimitExceeded`, phase `Failed`), `Never` leaves them running, anything else
    /// completes them. Off by default.
    pub fn set_run_workloads(&self, run: bool) {
        self.lock().run_workloads = run;
    }

    /// Makes every call fail as if the cluster were down (or back up).
    pub fn set_unreachable(&self, unreachable: bool) {
        self.lock().unreachable = unreachable;
    }

    /// The writes so far, e.g. `create ConfigMap ns/name`, `delete Namespace ns`.
    pub fn log(&self) -> Vec<String> {
        self.lock().log.clone()
    }

    pub fn clear_log(&self) {
        self.lock().log.clear();
    }

    /// How often discovery was asked.
    pub fn discovery_calls(&self) -> usize {
        self.lock().discovery_calls
    }

    /// The stored object.
    pub fn object(&self, reference: &ObjectRef) -> Option<Value> {
        self.lock().objects.get(&key(reference)).cloned()
    }

    pub fn objects(&self) -> Vec<Value> {
        self.lock().objects.values().cloned().collect()
    }

    /// Stores an object as it is (plus server metadata), bypassing the API (e.g. an object
    /// someone else created).
    pub fn insert(&self, object: Value) {
        let mut state = self.lock();
        let reference = ObjectRef::of(&object);
        let stored = state.with_server_metadata(object, None);
        state.objects.insert(key(&reference), stored);
    }

    /// Replaces the object's `status` (what a controller in the cluster would do).
    pub fn set_status(&self, reference: &ObjectRef, status: Value) {
        let mut state = self.lock();
        if let Some(object) = state.objects.get_mut(&key(reference)) {
            object["status"] = status;
        }
    }

    /// Removes an object regardless of finalizers (what a controller finishing would do).
    pub fn remove(&self, reference: &ObjectRef) {
        self.lock().objects.remove(&key(reference));
    }
}

fn key(reference: &ObjectRef) -> Key {
    (
        reference.group().to_string(),
        reference.kind.clone(),
        reference.namespace.clone(),
        reference.name.clone(),
    )
}

fn without_server_fields(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    copy
}

impl State {
    fn check(&self) -> ClusterResult<()> {
        if self.unreachable {
            return Err(ClusterError::Unreachable(
                "dial tcp 127.0.0.1:6443: connect: connection refused".into(),
            ));
        }
        Ok(())
    }

    fn info(&self, api_version: &str, kind: &str) -> ClusterResult<ResourceInfo> {
        self.kinds
            .get(&(group_of(api_version).to_string(), kind.to_string()))
            .cloned()
            .ok_or_else(|| ClusterError::NoMatch {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            })
    }

    /// Checks the scope of a reference against its kind.
    fn checked(&self, reference: &ObjectRef) -> ClusterResult<()> {
        let info = self.info(&reference.api_version, &reference.kind)?;
        if info.namespaced && reference.namespace.is_empty() {
            return Err(ClusterError::Invalid(format!(
                "{} {}: the namespace of a namespaced object must be set",
                reference.kind, reference.name
            )));
        }
        if reference.name.is_empty() {
            return Err(ClusterError::Invalid(format!(
                "{}: resource name may not be empty",
                reference.kind
            )));
        }
        Ok(())
    }

    fn with_server_metadata(&mut self, mut object: Value, previous: Option<&Value>) -> Value {
        self.revision += 1;
        let revision = self.revision.to_string();
        let (uid, generation, created) = match previous {
            Some(previous) => {
                let generation = previous
                    .pointer("/metadata/generation")
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
                let changed = without_server_fields(previous) != without_server_fields(&object);
                (
                    previous.pointer("/metadata/uid").cloned(),
                    generation + i64::from(changed),
                    previous.pointer("/metadata/creationTimestamp").cloned(),
                )
            }
            None => {
                self.next_uid += 1;
                (
                    Some(json!(format!("uid-{}", self.next_uid))),
                    1,
                    Some(json!("2024-01-01T00:00:00Z")),
                )
            }
        };
        if !object.get("metadata").is_some_and(Value::is_object) {
            object["metadata"] = json!({});
        }
        let metadata = &mut object["metadata"];
        metadata["uid"] = uid.unwrap_or(Value::Null);
        metadata["resourceVersion"] = json!(revision);
        metadata["generation"] = json!(generation);
        metadata["creationTimestamp"] = created.unwrap_or(Value::Null);
        if let Some(previous) = previous {
            // Status and deletion state are not changed through the main resource.
            match previous.get("status") {
                Some(status) => object["status"] = status.clone(),
                None => {
                    if let Some(map) = object.as_object_mut() {
                        map.remove("status");
                    }
                }
            }
            if let Some(ts) = previous.pointer("/metadata/deletionTimestamp") {
                object["metadata"]["deletionTimestamp"] = ts.clone();
            }
        }
        object
    }

    fn register_crd(&mut self, crd: &Value) {
        let text = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or_default();
        self.kinds.insert(
            (
                text("/spec/group").to_string(),
                text("/spec/names/kind").to_string(),
            ),
            ResourceInfo {
                plural: text("/spec/names/plural").to_string(),
                namespaced: text("/spec/scope") == "Namespaced",
            },
        );
    }

    fn unregister_crd(&mut self, crd: &Value) {
        let text = |p: &str| {
            crd.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let group_kind = (text("/spec/group"), text("/spec/names/kind"));
        self.kinds.remove(&group_kind);
        self.objects
            .retain(|(group, kind, _, _), _| (group, kind) != (&group_kind.0, &group_kind.1));
    }

    fn store_update(&mut self, object: Value, verb: &str) -> ClusterResult<Value> {
        let reference = ObjectRef::of(&object);
        self.checked(&reference)?;
        let k = key(&reference);
        let Some(previous) = self.objects.get(&k).cloned() else {
            return Err(ClusterError::NotFound(reference.to_string()));
        };
        if let Some(version) = object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            && Some(version)
                != previous
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
        {
            return Err(ClusterError::Conflict(format!(
                "the object {reference} has been modified; please apply your changes to the latest version and try again"
            )));
        }
        let stored = self.with_server_metadata(object, Some(&previous));
        let finalizers_gone = stored
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        self.log.push(format!("{verb} {reference}"));
        if finalizers_gone && stored.pointer("/metadata/deletionTimestamp").is_some() {
            self.objects.remove(&k);
        } else {
            self.objects.insert(k, stored.clone());
        }
        Ok(stored)
    }
}

fn ready<'a, T: Send + 'a>(value: T) -> BoxFuture<'a, T> {
    Box::pin(std::future::ready(value))
}

/// The status of a Job or bare Pod that ran (see [`FakeCluster::set_run_workloads`]).
fn finished_status(object: &Value) -> Option<Value> {
    let outcome = object
        .pointer("/metadata/annotations/kube-test-server~1outcome")
        .and_then(Value::as_str)
        .unwrap_or("Complete");
    match (object["kind"].as_str(), outcome) {
        (_, "Never") => None,
        (Some("Job"), "Fail") => Some(serde_json::json!({"failed": 1, "conditions": [{
            "type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
            "message": "Job has reached the specified backoff limit"}]})),
        (Some("Job"), _) => Some(serde_json::json!({"succeeded": 1,
            "conditions": [{"type": "Complete", "status": "True"}]})),
        (Some("Pod"), "Fail") => Some(serde_json::json!({"phase": "Failed"})),
        (Some("Pod"), _) => Some(serde_json::json!({"phase": "Succeeded"})),
        _ => None,
    }
}

impl ClusterClient for FakeCluster {
    fn resolve<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, ClusterResult<ResourceInfo>> {
        let mut state = self.lock();
        state.discovery_calls += 1;
        ready(state.check().and_then(|()| state.info(api_version, kind)))
    }

    fn invalidate_discovery(&self) {}

    fn get<'a>(&'a self, object: &'a ObjectRef) -> BoxFuture<'a, ClusterResult<Option<Value>>> {
        let state = self.lock();
        let result = state
            .check()
            .and_then(|()| state.checked(object))
            .map(|()| state.objects.get(&key(object)).cloned());
        ready(result)
    }

    fn create<'a>(&'a self, object: &'a Value) -> BoxFuture<'a, ClusterResult<Value>> {
        let mut state = self.lock();
        let result = (|| {
            state.check()?;
            let reference = ObjectRef::of(object);
            state.checked(&reference)?;
            let k = key(&reference);
            if state.objects.contains_key(&k) {
                return Err(ClusterError::Api {
                    code: 409,
                    message: format!("{reference} already exists"),
                });
            }
            let mut fresh = object.clone();
            if let Some(metadata) = fresh.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("resourceVersion");
            }
            let mut stored = state.with_server_metadata(fresh, None);
            if reference.kind == "CustomResourceDefinition" {
                state.register_crd(&stored);
                // The apiextensions controller accepts the names and establishes it at once.
                stored["status"]["conditions"] = serde_json::json!([
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts"},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"},
                ]);
            }
            if state.run_workloads
                && let Some(status) = finished_status(&stored)
            {
                stored["status"] = status;
            }
            state.log.push(format!("create {reference}"));
            state.objects.insert(k, stored.clone());
            Ok(stored)
        })();
        ready(result)
    }

    fn update<'a>(&'a self, object: &'a Value) -> BoxFuture<'a, ClusterResult<Value>> {
        let mut state = self.lock();
        let result = state
            .check()
            .and_then(|()| state.store_update(object.clone(), "update"));
        ready(result)
    }

    fn patch<'a>(
        &'a self,
        object: &'a ObjectRef,
        patch: &'a Patch,
    ) -> BoxFuture<'a, ClusterResult<Value>> {
        let mut state = self.lock();
        let result = (|| {
            state.check()?;
            state.checked(object)?;
            let Some(mut current) = state.objects.get(&key(object)).cloned() else {
                return Err(ClusterError::NotFound(object.to_string()));
            };
            match patch {
                Patch::Merge(p) => json_patch::merge(&mut current, p),
                Patch::Strategic(p) => {
                    current = kube_patch::strategic_merge_patch(&current, p).map_err(|e| {
                        ClusterError::Api {
                            code: 422,
                            message: e.to_string(),
                        }
                    })?;
                }
                Patch::Apply { object: p, .. } => json_patch::merge(&mut current, p),
                Patch::Json(p) => {
                    let operations: json_patch::Patch = serde_json::from_value(p.clone())
                        .map_err(|e| ClusterError::Invalid(e.to_string()))?;
                    json_patch::patch(&mut current, &operations).map_err(|e| {
                        ClusterError::Api {
                            code: 422,
                            message: e.to_string(),
                        }
                    })?;
                }
            }
            // A patch without a resourceVersion applies to the current version.
            if current.pointer("/metadata/resourceVersion").is_none()
                && let Some(previous) = state.objects.get(&key(object))
                && let Some(version) = previous.pointer("/metadata/resourceVersion")
            {
                current["metadata"]["resourceVersion"] = version.clone();
            }
            state.store_update(current, "patch")
        })();
        ready(result)
    }

    fn delete<'a>(&'a self, object: &'a ObjectRef) -> BoxFuture<'a, ClusterResult<Deletion>> {
        let mut state = self.lock();
        let result = (|| {
            state.check()?;
            match state.checked(object) {
                Err(ClusterError::NoMatch { .. }) => return Ok(Deletion::NotFound),
                other => other?,
            }
            let k = key(object);
            let Some(current) = state.objects.get(&k).cloned() else {
                return Ok(Deletion::NotFound);
            };
            state.log.push(format!("delete {object}"));
            let has_finalizers = current
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| !f.is_empty());
            if has_finalizers {
                if let Some(stored) = state.objects.get_mut(&k) {
                    stored["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
                }
            } else {
                state.objects.remove(&k);
                if object.kind == "CustomResourceDefinition" {
                    state.unregister_crd(&current);
                }
            }
            Ok(Deletion::Accepted)
        })();
        ready(result)
    }

    fn list<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
        namespace: Option<&'a str>,
        labels: &'a BTreeMap<String, String>,
    ) -> BoxFuture<'a, ClusterResult<Vec<Value>>> {
        let state = self.lock();
        let result = (|| {
            state.check()?;
            state.info(api_version, kind)?;
            let group = group_of(api_version);
            Ok(state
                .objects
                .iter()
                .filter(|((g, k, ns, _), object)| {
                    g == group
                        && k == kind
                        && namespace.is_none_or(|n| n == ns)
                        && matches_labels(object, labels)
                })
                .map(|(_, object)| object.clone())
                .collect())
        })();
        ready(result)
    }
}
