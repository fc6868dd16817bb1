//! Readiness checks (`pkg/deployer/lib/readinesscheck`): the default check of workload kinds
//! and custom checks with JSONPath requirements. The checks on an object are pure functions;
//! [`check_resources_ready`] fetches the objects and reports the first one that is not ready.

use serde_json::Value;

use super::config::{CustomReadinessCheck, RequirementSpec};
use super::jsonpath::KubePath;
use super::status::ManagedResourceStatus;
use crate::kubernetes::{ClusterClient, ObjectRef, group_of};

/// The operators of `requirements[].operator` (`k8s.io/apimachinery/pkg/selection`).
pub const OPERATORS: [&str; 7] = ["!", "exists", "=", "==", "!=", "in", "notin"];

/// Why the deployment is not ready yet, naming the object as Landscaper's
/// `ObjectNotReadyError` does: `apps/v1, Kind=Deployment echo/acc-01 is not ready: …`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{gvk} {name}/{namespace} is not ready: {reason}")]
pub struct NotReady {
    pub gvk: String,
    pub name: String,
    pub namespace: String,
    pub reason: String,
}

impl NotReady {
    pub fn of(reference: &ObjectRef, reason: impl Into<String>) -> NotReady {
        NotReady {
            gvk: reference.gvk_string(),
            name: reference.name.clone(),
            namespace: reference.namespace.clone(),
            reason: reason.into(),
        }
    }
}

fn int_at(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn outdated_generation(object: &Value) -> Option<String> {
    let observed = int_at(object, "/status/observedGeneration");
    let generation = int_at(object, "/metadata/generation");
    (observed < generation)
        .then(|| format!("observed generation outdated ({observed}/{generation})"))
}

fn not_enough_ready_replicas(current: i64, expected: i64) -> String {
    format!("not enough ready replicas ({current}/{expected})")
}

fn conditions(object: &Value) -> impl Iterator<Item = &Value> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn text<'a>(object: &'a Value, key: &str) -> &'a str {
    object.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn condition_state(condition: &Value, expected: &str) -> Result<(), String> {
    let actual = text(condition, "status");
    if actual == expected {
        return Ok(());
    }
    Err(format!(
        "condition {:?} has invalid status {actual} (expected {expected}) due to {}: {}",
        text(condition, "type"),
        text(condition, "reason"),
        text(condition, "message")
    ))
}

/// `CheckPod`: the `Ready` condition is `True`, or its reason is `PodCompleted`.
pub fn check_pod(pod: &Value) -> Result<(), String> {
    let Some(ready) = conditions(pod).find(|c| text(c, "type") == "Ready") else {
        return Err("condition \"Ready\" is missing".to_string());
    };
    if text(ready, "reason") == "PodCompleted" {
        return Ok(());
    }
    condition_state(ready, "True")
}

/// `CheckDeployment`: generation observed and spec, current, updated and available replicas
/// all equal.
pub fn check_deployment(deployment: &Value) -> Result<(), String> {
    if let Some(e) = outdated_generation(deployment) {
        return Err(e);
    }
    let wanted = int_at(deployment, "/spec/replicas");
    let available = int_at(deployment, "/status/availableReplicas");
    if wanted != int_at(deployment, "/status/replicas")
        || wanted != int_at(deployment, "/status/updatedReplicas")
        || wanted != available
    {
        return Err(not_enough_ready_replicas(available, wanted));
    }
    Ok(())
}

fn replicas_or_one(object: &Value) -> i64 {
    object
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// `CheckStatefulSet`: updated and available replicas reach the wanted count (default 1).
pub fn check_stateful_set(sts: &Value) -> Result<(), String> {
    if let Some(e) = outdated_generation(sts) {
        return Err(e);
    }
    let wanted = replicas_or_one(sts);
    let available = int_at(sts, "/status/availableReplicas");
    if int_at(sts, "/status/updatedReplicas") < wanted || available < wanted {
        return Err(not_enough_ready_replicas(available, wanted));
    }
    Ok(())
}

/// `intstr.GetValueFromIntOrPercent` rounding down.
fn max_unavailable(ds: &Value, desired: i64) -> i64 {
    if desired == 0 || text(&ds["spec"]["updateStrategy"], "type") != "RollingUpdate" {
        return 0;
    }
    match ds.pointer("/spec/updateStrategy/rollingUpdate/maxUnavailable") {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => s
            .strip_suffix('%')
            .and_then(|p| p.parse::<i64>().ok())
            .map_or(0, |percent| percent * desired / 100),
        _ => 0,
    }
}

/// `CheckDaemonSet`: at least `desired - maxUnavailable` pods scheduled.
pub fn check_daemon_set(ds: &Value) -> Result<(), String> {
    if let Some(e) = outdated_generation(ds) {
        return Err(e);
    }
    let desired = int_at(ds, "/status/desiredNumberScheduled");
    let required = desired - max_unavailable(ds, desired);
    let current = int_at(ds, "/status/currentNumberScheduled");
    if current < required {
        return Err(not_enough_ready_replicas(current, required));
    }
    Ok(())
}

/// `CheckReplicaSet` / `CheckReplicationController`: no `ReplicaFailure`, enough ready replicas.
pub fn check_replica_set(rs: &Value) -> Result<(), String> {
    if let Some(e) = outdated_generation(rs) {
        return Err(e);
    }
    for condition in conditions(rs).filter(|c| text(c, "type") == "ReplicaFailure") {
        condition_state(condition, "False")?;
    }
    let wanted = replicas_or_one(rs);
    let ready = int_at(rs, "/status/readyReplicas");
    if ready < wanted {
        return Err(not_enough_ready_replicas(ready, wanted));
    }
    Ok(())
}

/// The default check of one object; kinds without a check are ready when they exist.
pub fn default_check(object: &Value) -> Result<(), String> {
    let reference = ObjectRef::of(object);
    match (group_of(&reference.api_version), reference.kind.as_str()) {
        ("", "Pod") => check_pod(object),
        ("apps", "Deployment") => check_deployment(object),
        ("apps", "ReplicaSet") | ("", "ReplicationController") => check_replica_set(object),
        ("apps", "StatefulSet") => check_stateful_set(object),
        ("apps", "DaemonSet") => check_daemon_set(object),
        _ => Ok(()),
    }
}

/// Numbers compare as floats, as after Landscaper's JSON round trip into `interface{}`.
fn normalized(value: &Value) -> Value {
    match value {
        Value::Number(n) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| value.clone(), Value::Number),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), normalized(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether one selected value satisfies the operator.
pub fn matches(value: &Value, wanted: &[Value], operator: &str) -> bool {
    let value = normalized(value);
    let wanted: Vec<Value> = wanted.iter().map(normalized).collect();
    match operator {
        "=" | "==" | "in" => wanted.contains(&value),
        "!=" => wanted.first() != Some(&value),
        "notin" => !wanted.contains(&value),
        _ => false,
    }
}

/// `CustomReadinessCheck.CheckObject`: every requirement holds for the object.
pub fn check_requirements(object: &Value, requirements: &[RequirementSpec]) -> Result<(), String> {
    for requirement in requirements {
        let path = KubePath::parse(&requirement.json_path)?;
        let fields = path.find(object);
        if fields.is_empty() {
            if requirement.operator == "!" {
                continue;
            }
            return Err(format!(
                "field with JSON path {} does not exist",
                requirement.json_path
            ));
        }
        if requirement.operator == "exists" {
            continue;
        }
        let mut wanted = Vec::new();
        for (i, raw) in requirement.values.iter().enumerate() {
            match raw.get("value") {
                Some(v) if raw.is_object() => wanted.push(v.clone()),
                _ => {
                    return Err(format!(
                        "object at index {i} does not contain the value key"
                    ));
                }
            }
        }
        if fields
            .iter()
            .any(|field| !matches(field, &wanted, &requirement.operator))
        {
            return Err(format!(
                "resource requirement is not fulfiled for field {}",
                requirement.json_path
            ));
        }
    }
    Ok(())
}

/// The default check over the managed resources: every one must exist, workloads must be
/// ready. Returns the first object that is not.
pub async fn default_readiness(
    client: &dyn ClusterClient,
    managed: &[ManagedResourceStatus],
) -> Option<NotReady> {
    for resource in managed {
        let reference = resource.resource.object_ref();
        let object = match client.get(&reference).await {
            Ok(Some(object)) => object,
            Ok(None) => {
                return Some(NotReady::of(&reference, format!("{reference} not found")));
            }
            Err(e) => return Some(NotReady::of(&reference, format!("unable to get: {e}"))),
        };
        if let Err(reason) = default_check(&object) {
            return Some(NotReady::of(&reference, reason));
        }
    }
    None
}

/// One custom check (the caller skips disabled ones and those for other targets).
pub async fn custom_readiness(
    client: &dyn ClusterClient,
    check: &CustomReadinessCheck,
) -> Option<NotReady> {
    let mut objects = Vec::new();
    for selector in &check.resources {
        let reference = ObjectRef::new(
            &selector.api_version,
            &selector.kind,
            &selector.namespace,
            &selector.name,
        );
        match client.get(&reference).await {
            Ok(Some(object)) => objects.push(object),
            Ok(None) => return Some(NotReady::of(&reference, format!("{reference} not found"))),
            Err(e) => return Some(NotReady::of(&reference, format!("unable to get: {e}"))),
        }
    }
    if let Some(selector) = &check.label_selector {
        let unselected = ObjectRef::new(&selector.api_version, &selector.kind, "", "");
        match client
            .list(
                &selector.api_version,
                &selector.kind,
                None,
                &selector.labels,
            )
            .await
        {
            Ok(found) if found.is_empty() => {
                return Some(NotReady::of(
                    &unselected,
                    "object list by label selector is empty",
                ));
            }
            Ok(found) => objects.extend(found),
            Err(e) => return Some(NotReady::of(&unselected, format!("unable to list: {e}"))),
        }
    }
    for object in &objects {
        if let Err(reason) = check_requirements(object, &check.requirements) {
            return Some(NotReady::of(&ObjectRef::of(object), reason));
        }
    }
    None
}

#[cfg(test)]
#[path = "readiness_tests.rs"]
mod tests;
