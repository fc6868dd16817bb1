//! Helm 3.19's `--wait` (`pkg/kube/ready.go`, `pkg/kube/wait.go`): the legacy `ReadyChecker`
//! Landscaper's real helm deployer gets through Helm's action package (`Wait` with
//! `PausedAsReady(true)`; `WaitForJobs` is not one of Landscaper's options, so Jobs are only
//! checked when a caller asks for them).
//!
//! The readiness of one object per kind is a pure function of the live object (and, for
//! Deployments, ReplicaSets and ReplicationControllers, of the ReplicaSets / Pods they own);
//! [`wait_for_resources`] polls them over the [`ClusterClient`] until all are ready, an error
//! that Helm does not retry occurs, or the timeout passes. Helm then answers only
//! `context deadline exceeded` (the object is in its log); here the error also names the first
//! object not ready and why, in the words of Helm's log line.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::kubernetes::{ClusterClient, ClusterError, ObjectRef};

/// How often the wait looks again (Helm polls every 2s; a shorter interval only answers
/// sooner).
pub const POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// How many consecutive retryable errors of one object Helm tolerates (`waitRetries`).
const WAIT_RETRIES: u32 = 30;

/// The `ReadyChecker` options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checker {
    /// `CheckJobs`: Jobs must have completed (`helm --wait-for-jobs`).
    pub check_jobs: bool,
    /// `PausedAsReady`: a paused Deployment counts as ready (Helm's `Wait` sets it).
    pub paused_as_ready: bool,
}

impl Checker {
    /// What Helm's `KubeClient.Wait` uses (Landscaper's `wait` and `atomic`).
    pub const WAIT: Checker = Checker {
        check_jobs: false,
        paused_as_ready: true,
    };
}

/// The answer of one readiness check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    Ready,
    /// Not (yet) ready, with Helm's log line.
    NotReady(String),
    /// A check error (Helm's `jobReady` of a failed Job): retried like a client error that is
    /// not an API status (up to [`WAIT_RETRIES`] times).
    Error(String),
}

/// The wait failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WaitError {
    /// The timeout (or the item's deadline) passed; `reason` is why the first object that was
    /// not ready is not.
    #[error("context deadline exceeded: {reason}")]
    DeadlineExceeded { reason: String },
    /// An error Helm does not retry (e.g. the object is gone), or a retryable one repeated
    /// more than 30 times.
    #[error("{object}: {message}")]
    Failed { object: String, message: String },
}

fn int(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `namespace/name` as Helm's log lines print objects.
fn id(object: &Value) -> String {
    format!(
        "{}/{}",
        text(object, "/metadata/namespace"),
        text(object, "/metadata/name")
    )
}

fn has_condition(object: &Value, type_: &str, status: &str) -> bool {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| text(c, "/type") == type_ && text(c, "/status") == status)
        })
}

/// `observedGeneration` differs from `metadata.generation`: the log line of `kind`.
fn generation_lag(kind: &str, object: &Value) -> Option<String> {
    let observed = int(object, "/status/observedGeneration");
    let generation = int(object, "/metadata/generation");
    (observed != generation).then(|| {
        format!(
            "{kind} is not ready: {}. observedGeneration ({observed}) does not match spec generation ({generation}).",
            id(object)
        )
    })
}

/// `isPodReady`: the `Ready` condition is `True`.
pub fn pod_ready(pod: &Value) -> Check {
    if has_condition(pod, "Ready", "True") {
        Check::Ready
    } else {
        Check::NotReady(format!("Pod is not ready: {}", id(pod)))
    }
}

/// `jobReady`: failed beyond `backoffLimit` (default 6) is an error; fewer successes than
/// `completions` is not ready.
pub fn job_ready(job: &Value) -> Check {
    let backoff_limit = job
        .pointer("/spec/backoffLimit")
        .and_then(Value::as_i64)
        .unwrap_or(6);
    if int(job, "/status/failed") > backoff_limit {
        return Check::Error(format!("job is failed: {}", id(job)));
    }
    if let Some(completions) = job.pointer("/spec/completions").and_then(Value::as_i64)
        && int(job, "/status/succeeded") < completions
    {
        return Check::NotReady(format!("Job is not completed: {}", id(job)));
    }
    Check::Ready
}

/// `serviceReady`: a cluster IP, and for `LoadBalancer` external IPs or an ingress.
pub fn service_ready(svc: &Value) -> Check {
    let type_ = text(svc, "/spec/type");
    if type_ == "ExternalName" {
        return Check::Ready;
    }
    if text(svc, "/spec/clusterIP").is_empty() {
        return Check::NotReady(format!(
            "Service does not have cluster IP address: {}",
            id(svc)
        ));
    }
    if type_ == "LoadBalancer" {
        let external_ips = svc
            .pointer("/spec/externalIPs")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if external_ips {
            return Check::Ready;
        }
        // Go's `Ingress == nil`: an absent list (an empty one decodes to nil too).
        let ingress = svc
            .pointer("/status/loadBalancer/ingress")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if !ingress {
            return Check::NotReady(format!(
                "Service does not have load balancer ingress IP address: {}",
                id(svc)
            ));
        }
    }
    Check::Ready
}

/// `volumeReady`: the claim is `Bound`.
pub fn volume_ready(pvc: &Value) -> Check {
    if text(pvc, "/status/phase") == "Bound" {
        Check::Ready
    } else {
        Check::NotReady(format!("PersistentVolumeClaim is not bound: {}", id(pvc)))
    }
}

/// `intstr.GetScaledValueFromIntOrPercent` (an int, or `N%` of `total` rounded up or down);
/// `None` for a malformed value.
fn scaled(value: Option<&Value>, total: i64, round_up: bool) -> Option<i64> {
    match value {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => {
            let percent: i64 = s.strip_suffix('%')?.parse().ok()?;
            let product = percent * total;
            Some(if round_up {
                (product + 99).div_euclid(100)
            } else {
                product.div_euclid(100)
            })
        }
        Some(_) => None,
    }
}

/// `deploymentutil.MaxUnavailable`: 0 unless `RollingUpdate` with replicas; the fenceposts
/// (maxSurge rounded up, maxUnavailable down, 1 when both are 0), at most `replicas`.
pub fn max_unavailable(deployment: &Value) -> i64 {
    let replicas = replicas(deployment);
    if text(deployment, "/spec/strategy/type") != "RollingUpdate" || replicas == 0 {
        return 0;
    }
    let rolling = deployment.pointer("/spec/strategy/rollingUpdate");
    let field = |name: &str| rolling.and_then(|r| r.get(name));
    let surge = scaled(field("maxSurge"), replicas, true).unwrap_or(0);
    let mut unavailable = scaled(field("maxUnavailable"), replicas, false).unwrap_or(0);
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    unavailable.min(replicas)
}

/// `spec.replicas` (the API server defaults it to 1).
fn replicas(object: &Value) -> i64 {
    object
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// `EqualIgnoreHash`: the pod templates are equal without the `pod-template-hash` label (an
/// empty label map equals none, as in `apiequality.Semantic`).
fn equal_ignore_hash(a: &Value, b: &Value) -> bool {
    fn normalized(template: &Value) -> Value {
        let mut template = template.clone();
        if let Some(metadata) = template.get_mut("metadata").and_then(Value::as_object_mut) {
            if let Some(labels) = metadata.get_mut("labels").and_then(Value::as_object_mut) {
                labels.remove("pod-template-hash");
            }
            if metadata
                .get("labels")
                .is_some_and(|l| l.as_object().is_none_or(|l| l.is_empty()))
            {
                metadata.remove("labels");
            }
            if metadata.is_empty() {
                template.as_object_mut().map(|t| t.remove("metadata"));
            }
        }
        template
    }
    normalized(a) == normalized(b)
}

/// `FindNewReplicaSet`: the oldest ReplicaSet (by creation, then name) whose template equals
/// the Deployment's.
pub fn find_new_replica_set<'a>(
    deployment: &Value,
    replica_sets: &'a [Value],
) -> Option<&'a Value> {
    let template = deployment.pointer("/spec/template").unwrap_or(&Value::Null);
    let mut sorted: Vec<&Value> = replica_sets.iter().collect();
    sorted.sort_by(|a, b| {
        (
            text(a, "/metadata/creationTimestamp"),
            text(a, "/metadata/name"),
        )
            .cmp(&(
                text(b, "/metadata/creationTimestamp"),
                text(b, "/metadata/name"),
            ))
    });
    sorted.into_iter().find(|rs| {
        equal_ignore_hash(
            rs.pointer("/spec/template").unwrap_or(&Value::Null),
            template,
        )
    })
}

/// `replicaSetReady` / `replicationControllerReady`: the generation is observed.
pub fn replica_set_ready(kind: &str, rs: &Value) -> Check {
    match generation_lag(kind, rs) {
        Some(lag) => Check::NotReady(lag),
        None => Check::Ready,
    }
}

/// The Deployment case of `IsReady`: paused answers `paused_as_ready`; otherwise its new
/// ReplicaSet must exist and be observed, the Deployment observed, and the new ReplicaSet
/// have at least `replicas - maxUnavailable` ready pods.
pub fn deployment_ready(
    deployment: &Value,
    new_replica_set: Option<&Value>,
    paused_as_ready: bool,
) -> Check {
    if deployment.pointer("/spec/paused") == Some(&Value::Bool(true)) {
        return if paused_as_ready {
            Check::Ready
        } else {
            Check::NotReady(format!("Deployment is paused: {}", id(deployment)))
        };
    }
    let Some(rs) = new_replica_set else {
        return Check::NotReady(format!(
            "Deployment is not ready: {}. its new ReplicaSet does not exist yet",
            id(deployment)
        ));
    };
    if let Some(lag) = generation_lag("ReplicaSet", rs) {
        return Check::NotReady(lag);
    }
    if let Some(lag) = generation_lag("Deployment", deployment) {
        return Check::NotReady(lag);
    }
    let expected = replicas(deployment) - max_unavailable(deployment);
    let ready = int(rs, "/status/readyReplicas");
    if ready < expected {
        return Check::NotReady(format!(
            "Deployment is not ready: {}. {ready} out of {expected} expected pods are ready",
            id(deployment)
        ));
    }
    Check::Ready
}

/// `daemonSetReady`: observed; with `RollingUpdate`, all scheduled pods updated and at least
/// `desired - maxUnavailable` ready.
pub fn daemon_set_ready(ds: &Value) -> Check {
    if let Some(lag) = generation_lag("DaemonSet", ds) {
        return Check::NotReady(lag);
    }
    if text(ds, "/spec/updateStrategy/type") != "RollingUpdate" {
        return Check::Ready;
    }
    let desired = int(ds, "/status/desiredNumberScheduled");
    let updated = int(ds, "/status/updatedNumberScheduled");
    if updated != desired {
        return Check::NotReady(format!(
            "DaemonSet is not ready: {}. {updated} out of {desired} expected pods have been scheduled",
            id(ds)
        ));
    }
    let max_unavailable = scaled(
        ds.pointer("/spec/updateStrategy/rollingUpdate/maxUnavailable"),
        desired,
        true,
    )
    .unwrap_or(desired);
    let expected = desired - max_unavailable;
    let ready = int(ds, "/status/numberReady");
    if ready < expected {
        return Check::NotReady(format!(
            "DaemonSet is not ready: {}. {ready} out of {expected} expected pods are ready",
            id(ds)
        ));
    }
    Check::Ready
}

/// `crdReady` / `crdBetaReady`: `Established`, or names not accepted (it will never be).
pub fn crd_ready(crd: &Value) -> Check {
    let conditions = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for condition in conditions {
        match (text(condition, "/type"), text(condition, "/status")) {
            ("Established", "True") | ("NamesAccepted", "False") => return Check::Ready,
            _ => {}
        }
    }
    Check::NotReady(format!(
        "CustomResourceDefinition is not established: {}",
        text(crd, "/metadata/name")
    ))
}

/// `statefulSetReady`: observed; with `RollingUpdate`, `replicas - partition` updated, all
/// replicas ready, and (without partition) the current revision is the update revision.
pub fn stateful_set_ready(sts: &Value) -> Check {
    if let Some(lag) = generation_lag("StatefulSet", sts) {
        return Check::NotReady(lag);
    }
    if text(sts, "/spec/updateStrategy/type") != "RollingUpdate" {
        return Check::Ready;
    }
    let partition = int(sts, "/spec/updateStrategy/rollingUpdate/partition");
    let replicas = replicas(sts);
    let expected = replicas - partition;
    let updated = int(sts, "/status/updatedReplicas");
    if updated < expected {
        return Check::NotReady(format!(
            "StatefulSet is not ready: {}. {updated} out of {expected} expected pods have been scheduled",
            id(sts)
        ));
    }
    let ready = int(sts, "/status/readyReplicas");
    if ready != replicas {
        return Check::NotReady(format!(
            "StatefulSet is not ready: {}. {ready} out of {replicas} expected pods are ready",
            id(sts)
        ));
    }
    let current = text(sts, "/status/currentRevision");
    let update = text(sts, "/status/updateRevision");
    if partition == 0 && current != update {
        return Check::NotReady(format!(
            "StatefulSet is not ready: {}. currentRevision {current} does not yet match updateRevision {update}",
            id(sts)
        ));
    }
    Check::Ready
}

/// The kinds Helm's checker knows (`AsVersioned` to a typed object); others are ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pod,
    Job,
    Deployment,
    PersistentVolumeClaim,
    Service,
    DaemonSet,
    CustomResourceDefinition,
    StatefulSet,
    ReplicationController,
    ReplicaSet,
}

fn kind_of(reference: &ObjectRef) -> Option<Kind> {
    let group = reference.group();
    Some(match (group, reference.kind.as_str()) {
        ("", "Pod") => Kind::Pod,
        ("batch", "Job") => Kind::Job,
        ("apps" | "extensions", "Deployment") => Kind::Deployment,
        ("", "PersistentVolumeClaim") => Kind::PersistentVolumeClaim,
        ("", "Service") => Kind::Service,
        ("apps" | "extensions", "DaemonSet") => Kind::DaemonSet,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => Kind::CustomResourceDefinition,
        ("apps", "StatefulSet") => Kind::StatefulSet,
        ("", "ReplicationController") => Kind::ReplicationController,
        ("apps" | "extensions", "ReplicaSet") => Kind::ReplicaSet,
        _ => return None,
    })
}

/// `matchLabels` of a label selector (a ReplicationController's selector is the map itself):
/// what the list call filters by.
fn match_labels(selector: Option<&Value>) -> BTreeMap<String, String> {
    let map = selector
        .and_then(|s| s.get("matchLabels").or(Some(s)))
        .and_then(Value::as_object);
    map.map(|m| {
        m.iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect()
    })
    .unwrap_or_default()
}

/// Whether `object`'s labels meet the selector's `matchExpressions` (`In`, `NotIn`, `Exists`,
/// `DoesNotExist`; an unknown operator matches nothing, as `LabelSelectorAsSelector` fails).
pub fn meets_expressions(object: &Value, selector: Option<&Value>) -> bool {
    let Some(expressions) = selector
        .and_then(|s| s.get("matchExpressions"))
        .and_then(Value::as_array)
    else {
        return true;
    };
    expressions.iter().all(|e| {
        let label = object
            .pointer("/metadata/labels")
            .and_then(|l| l.get(text(e, "/key")))
            .and_then(Value::as_str);
        let values = e.get("values").and_then(Value::as_array);
        let listed = |v: &str| values.is_some_and(|vs| vs.iter().any(|x| x.as_str() == Some(v)));
        match text(e, "/operator") {
            "In" => label.is_some_and(listed),
            "NotIn" => !label.is_some_and(listed),
            "Exists" => label.is_some(),
            "DoesNotExist" => label.is_none(),
            _ => false,
        }
    })
}

/// Whether `object` is controlled by the object with `uid`.
fn controlled_by(object: &Value, uid: &str) -> bool {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter()
                .any(|r| r["controller"] == Value::Bool(true) && text(r, "/uid") == uid)
        })
}

/// `IsReady` of one object, fetched live.
pub async fn is_ready(
    client: &dyn ClusterClient,
    reference: &ObjectRef,
    checker: Checker,
) -> Result<Check, ClusterError> {
    let Some(kind) = kind_of(reference) else {
        return Ok(Check::Ready);
    };
    if kind == Kind::Job && !checker.check_jobs {
        return Ok(Check::Ready);
    }
    let live = client.get(reference).await?.ok_or_else(|| {
        ClusterError::NotFound(format!(
            "{} {:?} in namespace {:?}",
            reference.kind, reference.name, reference.namespace
        ))
    })?;
    Ok(match kind {
        Kind::Pod => pod_ready(&live),
        Kind::Job => job_ready(&live),
        Kind::PersistentVolumeClaim => volume_ready(&live),
        Kind::Service => service_ready(&live),
        Kind::DaemonSet => daemon_set_ready(&live),
        Kind::CustomResourceDefinition => crd_ready(&live),
        Kind::StatefulSet => stateful_set_ready(&live),
        Kind::Deployment => {
            if live.pointer("/spec/paused") == Some(&Value::Bool(true)) {
                return Ok(deployment_ready(&live, None, checker.paused_as_ready));
            }
            let uid = text(&live, "/metadata/uid");
            let labels = match_labels(live.pointer("/spec/selector"));
            let owned: Vec<Value> = client
                .list("apps/v1", "ReplicaSet", Some(&reference.namespace), &labels)
                .await?
                .into_iter()
                .filter(|rs| {
                    controlled_by(rs, uid) && meets_expressions(rs, live.pointer("/spec/selector"))
                })
                .collect();
            deployment_ready(
                &live,
                find_new_replica_set(&live, &owned),
                checker.paused_as_ready,
            )
        }
        Kind::ReplicaSet | Kind::ReplicationController => {
            let check = replica_set_ready(&reference.kind, &live);
            if check != Check::Ready {
                return Ok(check);
            }
            let labels = match_labels(live.pointer("/spec/selector"));
            let pods = client
                .list("v1", "Pod", Some(&reference.namespace), &labels)
                .await?;
            pods.iter()
                .filter(|pod| meets_expressions(pod, live.pointer("/spec/selector")))
                .map(pod_ready)
                .find(|c| *c != Check::Ready)
                .unwrap_or(Check::Ready)
        }
    })
}

/// `isRetryableError`: not an API status, or a status of 0, 429 or 5xx other than 501.
fn retryable(error: &ClusterError) -> bool {
    match error {
        ClusterError::Api { code, .. } => {
            *code == 0 || *code == 429 || (*code >= 500 && *code != 501)
        }
        ClusterError::NotFound(_)
        | ClusterError::Conflict(_)
        | ClusterError::Unauthorized(_)
        | ClusterError::Invalid(_) => false,
        ClusterError::NoMatch { .. } | ClusterError::Unreachable(_) => true,
    }
}

/// `waitForResources`: polls every object until all are ready (checked in order; the first
/// that is not stops the round), until `deadline`.
pub async fn wait_for_resources(
    client: &dyn ClusterClient,
    resources: &[ObjectRef],
    checker: Checker,
    deadline: tokio::time::Instant,
) -> Result<(), WaitError> {
    let mut errors = vec![0u32; resources.len()];
    loop {
        let mut not_ready = None;
        for (i, reference) in resources.iter().enumerate() {
            let error = match is_ready(client, reference, checker).await {
                Ok(Check::Ready) => {
                    errors[i] = 0;
                    continue;
                }
                Ok(Check::NotReady(reason)) => {
                    errors[i] = 0;
                    not_ready = Some(reason);
                    break;
                }
                Ok(Check::Error(message)) => (message, true),
                Err(e) => {
                    let retry = retryable(&e);
                    (e.to_string(), retry)
                }
            };
            let (message, retry) = error;
            let object = format!(
                "{} {:?} in namespace {:?}",
                reference.kind, reference.name, reference.namespace
            );
            if !retry {
                return Err(WaitError::Failed { object, message });
            }
            errors[i] += 1;
            if errors[i] > WAIT_RETRIES {
                return Err(WaitError::Failed { object, message });
            }
            not_ready = Some(format!("{object}: {message}"));
            break;
        }
        let Some(reason) = not_ready else {
            return Ok(());
        };
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Err(WaitError::DeadlineExceeded { reason });
        }
        tokio::time::sleep(POLL.min(deadline - now)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(name: &str, generation: i64) -> Value {
        json!({"name": name, "namespace": "ns", "generation": generation})
    }

    fn deployment(replicas: i64, strategy: Value, ready_generation: i64) -> Value {
        json!({
            "metadata": meta("web", 2),
            "spec": {"replicas": replicas, "strategy": strategy,
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}},
            "status": {"observedGeneration": ready_generation}
        })
    }

    fn replica_set(name: &str, created: &str, labels: Value, ready: i64) -> Value {
        json!({
            "metadata": {"name": name, "namespace": "ns", "generation": 1, "creationTimestamp": created},
            "spec": {"template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c"}]}}},
            "status": {"observedGeneration": 1, "readyReplicas": ready}
        })
    }

    #[test]
    fn max_unavailable_resolves_helms_fenceposts() {
        let rolling = |surge: Value, unavailable: Value| {
            deployment(
                10,
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}),
                2,
            )
        };
        assert_eq!(max_unavailable(&rolling(json!("25%"), json!("25%"))), 2);
        assert_eq!(max_unavailable(&rolling(json!(0), json!(0))), 1);
        assert_eq!(max_unavailable(&rolling(json!(1), json!(0))), 0);
        assert_eq!(max_unavailable(&rolling(json!(0), json!("100%"))), 10);
        assert_eq!(max_unavailable(&rolling(json!(0), json!(20))), 10);
        assert_eq!(
            max_unavailable(&deployment(10, json!({"type": "Recreate"}), 2)),
            0
        );
        assert_eq!(
            max_unavailable(&deployment(0, json!({"type": "RollingUpdate"}), 2)),
            0
        );
    }

    #[test]
    fn a_deployment_is_ready_when_its_new_replica_set_has_enough_ready_pods() {
        let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}});
        let dep = deployment(4, strategy.clone(), 2);
        let old = replica_set(
            "web-old",
            "2024-01-01T00:00:00Z",
            json!({"app": "old", "pod-template-hash": "a"}),
            4,
        );
        let new = replica_set(
            "web-new",
            "2024-01-02T00:00:00Z",
            json!({"app": "web", "pod-template-hash": "b"}),
            2,
        );
        let sets = [old, new.clone()];
        let found = find_new_replica_set(&dep, &sets);
        assert_eq!(found, Some(&new), "the template equal but for the hash");
        assert_eq!(
            deployment_ready(&dep, found, true),
            Check::NotReady(
                "Deployment is not ready: ns/web. 2 out of 3 expected pods are ready".into()
            )
        );
        let mut three = new.clone();
        three["status"]["readyReplicas"] = json!(3);
        assert_eq!(deployment_ready(&dep, Some(&three), true), Check::Ready);
        // Not observed yet: the Deployment's generation is ahead.
        let lagging = deployment(4, strategy, 1);
        assert!(matches!(
            deployment_ready(&lagging, Some(&three), true),
            Check::NotReady(m) if m.contains("observedGeneration (1) does not match spec generation (2)")
        ));
        // No ReplicaSet for the template yet.
        assert!(
            matches!(deployment_ready(&dep, None, true), Check::NotReady(m) if m.contains("ns/web"))
        );
        assert_eq!(find_new_replica_set(&dep, &sets[..1]), None);
    }

    #[test]
    fn a_paused_deployment_is_ready_only_when_paused_counts_as_ready() {
        let mut dep = deployment(1, json!({"type": "RollingUpdate"}), 2);
        dep["spec"]["paused"] = json!(true);
        assert_eq!(deployment_ready(&dep, None, true), Check::Ready);
        assert!(matches!(
            deployment_ready(&dep, None, false),
            Check::NotReady(_)
        ));
    }

    #[test]
    fn the_oldest_matching_replica_set_is_the_new_one() {
        let dep = deployment(1, json!({}), 2);
        let a = replica_set(
            "b-second",
            "2024-01-01T00:00:00Z",
            json!({"app": "web", "pod-template-hash": "x"}),
            0,
        );
        let b = replica_set(
            "a-first",
            "2024-01-01T00:00:00Z",
            json!({"app": "web", "pod-template-hash": "y"}),
            0,
        );
        let sets = [a, b.clone()];
        assert_eq!(
            find_new_replica_set(&dep, &sets),
            Some(&b),
            "same time: by name"
        );
    }

    #[test]
    fn a_recreate_deployment_needs_all_replicas_ready() {
        let dep = deployment(2, json!({"type": "Recreate"}), 2);
        let rs = replica_set(
            "web-1",
            "t",
            json!({"app": "web", "pod-template-hash": "h"}),
            1,
        );
        assert!(
            matches!(deployment_ready(&dep, Some(&rs), true), Check::NotReady(m) if m.contains("1 out of 2"))
        );
    }

    #[test]
    fn stateful_sets_respect_partitions_and_revisions() {
        let sts = |partition: i64, updated: i64, ready: i64, current: &str| {
            json!({
                "metadata": meta("db", 1),
                "spec": {"replicas": 3, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}}},
                "status": {"observedGeneration": 1, "updatedReplicas": updated, "readyReplicas": ready,
                           "currentRevision": current, "updateRevision": "r2"}
            })
        };
        assert_eq!(stateful_set_ready(&sts(0, 3, 3, "r2")), Check::Ready);
        assert!(
            matches!(stateful_set_ready(&sts(0, 3, 3, "r1")), Check::NotReady(m) if m.contains("currentRevision r1 does not yet match updateRevision r2"))
        );
        assert!(
            matches!(stateful_set_ready(&sts(0, 2, 3, "r2")), Check::NotReady(m) if m.contains("2 out of 3 expected pods have been scheduled"))
        );
        // Partition 2: one updated pod is enough, the revisions may differ.
        assert_eq!(stateful_set_ready(&sts(2, 1, 3, "r1")), Check::Ready);
        assert!(
            matches!(stateful_set_ready(&sts(2, 1, 2, "r1")), Check::NotReady(m) if m.contains("2 out of 3 expected pods are ready"))
        );
        let on_delete = json!({"metadata": meta("db", 1), "spec": {"updateStrategy": {"type": "OnDelete"}},
                               "status": {"observedGeneration": 1}});
        assert_eq!(stateful_set_ready(&on_delete), Check::Ready);
    }

    #[test]
    fn daemon_sets_need_updated_and_enough_ready_pods() {
        let ds = |updated: i64, ready: i64, unavailable: Value| {
            json!({
                "metadata": meta("agent", 1),
                "spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": unavailable}}},
                "status": {"observedGeneration": 1, "desiredNumberScheduled": 4,
                           "updatedNumberScheduled": updated, "numberReady": ready}
            })
        };
        assert_eq!(daemon_set_ready(&ds(4, 3, json!(1))), Check::Ready);
        assert!(
            matches!(daemon_set_ready(&ds(4, 2, json!(1))), Check::NotReady(m) if m.contains("2 out of 3"))
        );
        assert!(
            matches!(daemon_set_ready(&ds(3, 4, json!(1))), Check::NotReady(m) if m.contains("3 out of 4 expected pods have been scheduled"))
        );
        // 25% of 4 rounded up: 1.
        assert_eq!(daemon_set_ready(&ds(4, 3, json!("25%"))), Check::Ready);
        // Malformed: everything may be unavailable.
        assert_eq!(daemon_set_ready(&ds(4, 0, json!("x"))), Check::Ready);
    }

    #[test]
    fn services_need_a_cluster_ip_and_load_balancers_an_ingress() {
        let svc = |spec: Value, status: Value| json!({"metadata": meta("s", 1), "spec": spec, "status": status});
        assert_eq!(
            service_ready(&svc(json!({"type": "ExternalName"}), json!({}))),
            Check::Ready
        );
        assert!(matches!(
            service_ready(&svc(json!({"type": "ClusterIP"}), json!({}))),
            Check::NotReady(m) if m == "Service does not have cluster IP address: ns/s"
        ));
        let lb = json!({"type": "LoadBalancer", "clusterIP": "10.0.0.1"});
        assert!(matches!(
            service_ready(&svc(lb.clone(), json!({"loadBalancer": {}}))),
            Check::NotReady(m) if m.contains("load balancer ingress")
        ));
        assert_eq!(
            service_ready(&svc(
                lb.clone(),
                json!({"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}})
            )),
            Check::Ready
        );
        let mut external = lb;
        external["externalIPs"] = json!(["5.6.7.8"]);
        assert_eq!(service_ready(&svc(external, json!({}))), Check::Ready);
    }

    #[test]
    fn pvcs_pods_crds_and_jobs() {
        assert_eq!(
            volume_ready(&json!({"metadata": meta("c", 1), "status": {"phase": "Bound"}})),
            Check::Ready
        );
        assert!(matches!(
            volume_ready(&json!({"metadata": meta("c", 1), "status": {"phase": "Pending"}})),
            Check::NotReady(_)
        ));
        assert_eq!(
            pod_ready(
                &json!({"metadata": meta("p", 1), "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
            ),
            Check::Ready
        );
        assert!(
            matches!(pod_ready(&json!({"metadata": meta("p", 1), "status": {"conditions": [{"type": "Ready", "status": "False"}]}})), Check::NotReady(m) if m == "Pod is not ready: ns/p")
        );
        let crd = |conditions: Value| json!({"metadata": {"name": "a.example.com"}, "status": {"conditions": conditions}});
        assert_eq!(
            crd_ready(&crd(json!([{"type": "Established", "status": "True"}]))),
            Check::Ready
        );
        assert_eq!(
            crd_ready(&crd(json!([{"type": "NamesAccepted", "status": "False"}]))),
            Check::Ready
        );
        assert!(matches!(
            crd_ready(&crd(json!([{"type": "Established", "status": "False"}]))),
            Check::NotReady(_)
        ));
        let job = |failed: i64, succeeded: i64| {
            json!({"metadata": meta("j", 1), "spec": {"completions": 1, "backoffLimit": 1},
                                                       "status": {"failed": failed, "succeeded": succeeded}})
        };
        assert_eq!(job_ready(&job(0, 1)), Check::Ready);
        assert!(matches!(job_ready(&job(1, 0)), Check::NotReady(_)));
        assert_eq!(
            job_ready(&job(2, 0)),
            Check::Error("job is failed: ns/j".into())
        );
    }

    #[test]
    fn helm_retries_server_errors_but_not_client_errors() {
        assert!(retryable(&ClusterError::Api {
            code: 503,
            message: String::new()
        }));
        assert!(retryable(&ClusterError::Api {
            code: 429,
            message: String::new()
        }));
        assert!(!retryable(&ClusterError::Api {
            code: 501,
            message: String::new()
        }));
        assert!(!retryable(&ClusterError::Api {
            code: 403,
            message: String::new()
        }));
        assert!(!retryable(&ClusterError::NotFound("x".into())));
        assert!(retryable(&ClusterError::Unreachable("x".into())));
    }

    #[test]
    fn selector_expressions_filter_what_the_labels_listed() {
        let pod = json!({"metadata": {"labels": {"app": "web", "tier": "front"}}});
        let selector = |expressions: Value| json!({"matchLabels": {"app": "web"}, "matchExpressions": expressions});
        let meets = |e: Value| meets_expressions(&pod, Some(&selector(e)));
        assert!(meets_expressions(&pod, None));
        assert!(meets(
            json!([{"key": "tier", "operator": "In", "values": ["front", "back"]}])
        ));
        assert!(!meets(
            json!([{"key": "tier", "operator": "NotIn", "values": ["front"]}])
        ));
        assert!(meets(
            json!([{"key": "zone", "operator": "NotIn", "values": ["a"]}])
        ));
        assert!(meets(json!([{"key": "tier", "operator": "Exists"}])));
        assert!(!meets(json!([{"key": "tier", "operator": "DoesNotExist"}])));
        assert!(!meets(
            json!([{"key": "tier", "operator": "Gt", "values": ["1"]}])
        ));
        assert_eq!(
            match_labels(Some(&selector(json!([])))),
            BTreeMap::from([("app".to_string(), "web".to_string())])
        );
        // A ReplicationController's selector is the label map itself.
        assert_eq!(
            match_labels(Some(&json!({"app": "web"}))),
            BTreeMap::from([("app".to_string(), "web".to_string())])
        );
    }

    #[test]
    fn kinds_are_matched_by_group() {
        let r = |api: &str, kind: &str| ObjectRef::new(api, kind, "ns", "n");
        assert_eq!(kind_of(&r("apps/v1", "Deployment")), Some(Kind::Deployment));
        assert_eq!(
            kind_of(&r("extensions/v1beta1", "Deployment")),
            Some(Kind::Deployment)
        );
        assert_eq!(kind_of(&r("v1", "ConfigMap")), None);
        assert_eq!(kind_of(&r("example.com/v1", "Deployment")), None);
    }
}
