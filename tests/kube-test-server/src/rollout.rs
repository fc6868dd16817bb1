//! What the deployment and replica-set controllers of kube-controller-manager compute: the
//! pod-template-hash, the ReplicaSet a Deployment owns for its template, and the statuses and
//! conditions they write. Pure functions; `simulate` applies them to the store.

use serde_json::{Map, Value, json};

use crate::object;

pub const TEMPLATE_HASH_LABEL: &str = "pod-template-hash";
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";
pub const DESIRED_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/max-replicas";

/// On a workload, its pod template or a pod: `"never"` keeps the pods Running but not Ready.
pub const READY_ANNOTATION: &str = "kube-test-server/ready";
/// On a Job or a bare Pod: `Complete`/`Succeeded`, `Fail`/`Failed` or `Never` (stays active).
pub const OUTCOME_ANNOTATION: &str = "kube-test-server/outcome";
/// On a Job or a Pod: how long until it finishes (or becomes ready), in milliseconds.
pub const DELAY_ANNOTATION: &str = "kube-test-server/delay-ms";

/// `rand.SafeEncodeString`'s alphabet (no vowels, no confusable characters).
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `controller.ComputeHash`: FNV-32a of the template, encoded as Kubernetes does.
pub fn template_hash(template: &Value) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    for b in template.to_string().bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash.to_string()
        .bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

pub fn int(obj: &Value, pointer: &str, default: i64) -> i64 {
    obj.pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// The uid of the object's controller of `kind` (its `controller: true` owner reference).
pub fn controller_uid<'a>(obj: &'a Value, kind: &str) -> Option<&'a str> {
    controller_ref(obj, kind).and_then(|r| r.get("uid").and_then(Value::as_str))
}

/// The name of the object's controller of `kind`.
pub fn controller_name<'a>(obj: &'a Value, kind: &str) -> Option<&'a str> {
    controller_ref(obj, kind).and_then(|r| r.get("name").and_then(Value::as_str))
}

fn controller_ref<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| {
            r.get("kind").and_then(Value::as_str) == Some(kind)
                && r.get("controller").and_then(Value::as_bool) == Some(true)
        })
}

pub fn owner_reference(owner: &Value) -> Value {
    json!({
        "apiVersion": owner.get("apiVersion").cloned().unwrap_or(json!("")),
        "kind": owner.get("kind").cloned().unwrap_or(json!("")),
        "name": object::name(owner),
        "uid": object::uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

pub fn revision(obj: &Value) -> i64 {
    annotation(obj, REVISION_ANNOTATION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// `maxSurge`/`maxUnavailable` of a rolling update: an int or a percentage of `replicas`
/// (rounded up for surge, down for unavailable).
fn scaled(value: Option<&Value>, replicas: i64, round_up: bool, default: &str) -> i64 {
    let value = value.cloned().unwrap_or(json!(default));
    if let Some(n) = value.as_i64() {
        return n;
    }
    let text = value.as_str().unwrap_or(default);
    let Some(percent) = text.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) else {
        return 0;
    };
    let product = percent * replicas;
    if round_up {
        (product + 99) / 100
    } else {
        product / 100
    }
}

/// `deploymentutil.MaxUnavailable` and `MaxSurge`.
pub fn max_unavailable_and_surge(deployment: &Value) -> (i64, i64) {
    let replicas = int(deployment, "/spec/replicas", 1);
    if object::str_at(deployment, "/spec/strategy/type") != "RollingUpdate" {
        return (0, 0);
    }
    let rolling = deployment.pointer("/spec/strategy/rollingUpdate");
    let surge = scaled(
        rolling.and_then(|r| r.get("maxSurge")),
        replicas,
        true,
        "25%",
    );
    let mut unavailable = scaled(
        rolling.and_then(|r| r.get("maxUnavailable")),
        replicas,
        false,
        "25%",
    );
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    (unavailable.min(replicas), surge)
}

/// The ReplicaSet a Deployment creates for its current template.
pub fn new_replica_set(deployment: &Value, hash: &str, revision: i64) -> Value {
    let mut template = deployment
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(json!({}));
    let mut labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert(TEMPLATE_HASH_LABEL.into(), json!(hash));
    if !template.is_object() {
        template = json!({});
    }
    if !template.get("metadata").is_some_and(Value::is_object) {
        template["metadata"] = json!({});
    }
    template["metadata"]["labels"] = Value::Object(labels.clone());
    let mut selector = deployment
        .pointer("/spec/selector")
        .cloned()
        .unwrap_or(json!({}));
    if !selector.is_object() {
        selector = json!({});
    }
    if !selector.get("matchLabels").is_some_and(Value::is_object) {
        selector["matchLabels"] = json!({});
    }
    selector["matchLabels"][TEMPLATE_HASH_LABEL] = json!(hash);
    let replicas = int(deployment, "/spec/replicas", 1);
    let (_, surge) = max_unavailable_and_surge(deployment);
    let name = object::name(deployment);
    let mut spec = Map::new();
    spec.insert("replicas".into(), json!(replicas));
    spec.insert("selector".into(), selector);
    spec.insert("template".into(), template);
    if let Some(m) = deployment.pointer("/spec/minReadySeconds") {
        spec.insert("minReadySeconds".into(), m.clone());
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{name}-{hash}"),
            "namespace": object::namespace(deployment),
            "labels": labels,
            "annotations": {
                DESIRED_REPLICAS_ANNOTATION: replicas.to_string(),
                MAX_REPLICAS_ANNOTATION: (replicas + surge).to_string(),
                REVISION_ANNOTATION: revision.to_string(),
            },
            "ownerReferences": [owner_reference(deployment)],
        },
        "spec": spec,
    })
}

/// A Pod of a ReplicaSet (named by the server from `generateName`).
pub fn new_pod(replica_set: &Value) -> Value {
    let template = replica_set
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(json!({}));
    let mut metadata = template
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    metadata.remove("name");
    metadata.remove("creationTimestamp");
    metadata.insert(
        "generateName".into(),
        json!(format!("{}-", object::name(replica_set))),
    );
    metadata.insert("namespace".into(), json!(object::namespace(replica_set)));
    metadata.insert(
        "ownerReferences".into(),
        json!([owner_reference(replica_set)]),
    );
    let mut spec = template.get("spec").cloned().unwrap_or(json!({}));
    if let Some(s) = spec.as_object_mut() {
        s.entry("restartPolicy").or_insert(json!("Always"));
        s.entry("nodeName")
            .or_insert(json!("kube-test-server-node"));
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
}

/// A Pod of a StatefulSet (`name`, its ordinal labelled) or a DaemonSet (`name` empty: a
/// generated one), with `controller-revision-hash: revision`; `never` (the workload annotated
/// `kube-test-server/ready: never`) is passed on to the Pod.
pub fn new_workload_pod(
    owner: &Value,
    name: &str,
    ordinal: i64,
    revision: &str,
    never: bool,
) -> Value {
    let mut pod = new_pod(owner);
    let metadata = &mut pod["metadata"];
    if !metadata["labels"].is_object() {
        metadata["labels"] = json!({});
    }
    metadata["labels"]["controller-revision-hash"] = json!(revision);
    if name.is_empty() {
        metadata["labels"]["pod-template-generation"] =
            json!(object::generation(owner).to_string());
    } else {
        if let Some(m) = metadata.as_object_mut() {
            m.remove("generateName");
        }
        metadata["name"] = json!(name);
        metadata["labels"]["statefulset.kubernetes.io/pod-name"] = json!(name);
        metadata["labels"]["apps.kubernetes.io/pod-index"] = json!(ordinal.to_string());
        pod["spec"]["hostname"] = json!(name);
    }
    if never {
        if !pod["metadata"]["annotations"].is_object() {
            pod["metadata"]["annotations"] = json!({});
        }
        pod["metadata"]["annotations"][READY_ANNOTATION] = json!("never");
    }
    pod
}

pub fn pod_is_ready(pod: &Value) -> bool {
    object::str_at(pod, "/status/phase") == "Running"
        && pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
}

/// A ReplicaSet's status for its (non-terminating) pods.
pub fn replica_set_status(replica_set: &Value, pods: &[Value]) -> Value {
    let ready = pods.iter().filter(|p| pod_is_ready(p)).count();
    json!({
        "replicas": pods.len(),
        "fullyLabeledReplicas": pods.len(),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "observedGeneration": object::generation(replica_set),
    })
}

/// `conditions` with one condition set: the transition time is kept while the status stays,
/// the update time while reason and message stay too (so an unchanged status is no write).
pub fn set_condition(
    conditions: &[Value],
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    update_time: bool,
) -> Vec<Value> {
    let now = object::now();
    let old = conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_));
    let keep = |field: &str, same: bool| {
        old.filter(|_| same)
            .and_then(|c| c.get(field).cloned())
            .unwrap_or(json!(now))
    };
    let same_status = old.is_some_and(|c| c["status"] == status);
    let same_all =
        same_status && old.is_some_and(|c| c["reason"] == reason && c["message"] == message);
    let mut condition =
        json!({"type": type_, "status": status, "reason": reason, "message": message});
    if update_time {
        condition["lastUpdateTime"] = keep("lastUpdateTime", same_all);
    }
    condition["lastTransitionTime"] = keep("lastTransitionTime", same_status);
    let mut out: Vec<Value> = conditions
        .iter()
        .filter(|c| c.get("type").and_then(Value::as_str) != Some(type_))
        .cloned()
        .collect();
    let position = conditions
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        .unwrap_or(out.len());
    out.insert(position.min(out.len()), condition);
    out
}

/// The Deployment's status from its ReplicaSets (`new`: the one of the current template).
pub fn deployment_status(deployment: &Value, new: Option<&Value>, all: &[Value]) -> Value {
    let desired = int(deployment, "/spec/replicas", 1);
    let sum = |pointer: &str| all.iter().map(|rs| int(rs, pointer, 0)).sum::<i64>();
    let replicas = sum("/status/replicas");
    let ready = sum("/status/readyReplicas");
    let available = sum("/status/availableReplicas");
    let updated = new.map_or(0, |rs| int(rs, "/status/replicas", 0));
    let new_available = new.map_or(0, |rs| int(rs, "/status/availableReplicas", 0));
    let (max_unavailable, _) = max_unavailable_and_surge(deployment);
    let old_conditions: Vec<Value> = deployment
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let is_available = available >= desired - max_unavailable;
    let mut conditions = if is_available {
        set_condition(
            &old_conditions,
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            true,
        )
    } else {
        set_condition(
            &old_conditions,
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            true,
        )
    };
    let rs_name = new.map(object::name).unwrap_or_default();
    let complete =
        new.is_some() && updated == desired && replicas == desired && new_available == desired;
    let (reason, message) = if deployment.pointer("/spec/paused") == Some(&json!(true)) {
        ("DeploymentPaused", "Deployment is paused".to_string())
    } else if complete {
        (
            "NewReplicaSetAvailable",
            format!("ReplicaSet \"{rs_name}\" has successfully progressed."),
        )
    } else if new.is_some() {
        (
            "ReplicaSetUpdated",
            format!("ReplicaSet \"{rs_name}\" is progressing."),
        )
    } else {
        (
            "NewReplicaSetCreated",
            format!("Created new replica set \"{}\"", object::name(deployment)),
        )
    };
    let status = if reason == "DeploymentPaused" {
        "Unknown"
    } else {
        "True"
    };
    conditions = set_condition(&conditions, "Progressing", status, reason, &message, true);
    // kube-controller-manager lists Available first on a fresh Deployment.
    conditions.sort_by_key(|c| c["type"] != "Available");
    let mut out = json!({
        "observedGeneration": object::generation(deployment),
        "replicas": replicas,
        "updatedReplicas": updated,
        "readyReplicas": ready,
        "availableReplicas": available,
        "conditions": conditions,
    });
    let unavailable = (desired - available).max(0);
    if unavailable > 0 {
        out["unavailableReplicas"] = json!(unavailable);
    }
    // client-go omits zero counts.
    if let Some(m) = out.as_object_mut() {
        m.retain(|k, v| k == "observedGeneration" || v != &json!(0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(replicas: i64) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "generation": 2},
               "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    }

    #[test]
    fn hash_is_stable_safe_and_template_sensitive() {
        let d = deployment(1);
        let h = template_hash(&d["spec"]["template"]);
        assert_eq!(h, template_hash(&d["spec"]["template"]));
        assert!(
            h.len() <= 10 && h.bytes().all(|b| ALPHANUMS.contains(&b)),
            "{h}"
        );
        let mut other = d["spec"]["template"].clone();
        other["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert_ne!(h, template_hash(&other));
    }

    #[test]
    fn replica_set_and_pod_carry_hash_owner_and_revision() {
        let d = deployment(3);
        let rs = new_replica_set(&d, "abc", 2);
        assert_eq!(rs["metadata"]["name"], "web-abc");
        assert_eq!(
            rs["metadata"]["labels"],
            json!({"app": "web", "pod-template-hash": "abc"})
        );
        assert_eq!(rs["metadata"]["annotations"][REVISION_ANNOTATION], "2");
        assert_eq!(rs["metadata"]["annotations"][MAX_REPLICAS_ANNOTATION], "4");
        assert_eq!(
            rs["spec"]["selector"]["matchLabels"]["pod-template-hash"],
            "abc"
        );
        assert_eq!(
            rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"],
            "abc"
        );
        assert_eq!(rs["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(rs["metadata"]["ownerReferences"][0]["controller"], true);
        let mut stored = rs.clone();
        stored["metadata"]["uid"] = json!("u2");
        let pod = new_pod(&stored);
        assert_eq!(pod["metadata"]["generateName"], "web-abc-");
        assert_eq!(pod["metadata"]["labels"]["pod-template-hash"], "abc");
        assert_eq!(controller_uid(&pod, "ReplicaSet"), Some("u2"));
        assert_eq!(pod["spec"]["containers"][0]["image"], "nginx");
    }

    #[test]
    fn max_unavailable_and_surge_round_like_kubernetes() {
        assert_eq!(max_unavailable_and_surge(&deployment(1)), (0, 1));
        assert_eq!(max_unavailable_and_surge(&deployment(4)), (1, 1));
        assert_eq!(max_unavailable_and_surge(&deployment(10)), (2, 3));
        let mut recreate = deployment(4);
        recreate["spec"]["strategy"] = json!({"type": "Recreate"});
        assert_eq!(max_unavailable_and_surge(&recreate), (0, 0));
    }

    #[test]
    fn deployment_status_follows_its_replica_sets() {
        let d = deployment(2);
        let rs = |name: &str, replicas: i64, ready: i64| json!({"metadata": {"name": name}, "status": {"replicas": replicas, "readyReplicas": ready, "availableReplicas": ready}});
        let new = rs("web-new", 2, 0);
        let old = rs("web-old", 2, 2);
        let s = deployment_status(&d, Some(&new), &[new.clone(), old]);
        assert_eq!(
            (
                &s["replicas"],
                &s["updatedReplicas"],
                &s["availableReplicas"],
                &s["observedGeneration"]
            ),
            (&json!(4), &json!(2), &json!(2), &json!(2))
        );
        assert!(s.get("unavailableReplicas").is_none());
        assert_eq!(s["conditions"][0]["type"], "Available");
        assert_eq!(s["conditions"][0]["status"], "True");
        assert_eq!(s["conditions"][1]["reason"], "ReplicaSetUpdated");

        let done = rs("web-new", 2, 2);
        let mut with_status = d.clone();
        with_status["status"] = s.clone();
        let s2 = deployment_status(&with_status, Some(&done), std::slice::from_ref(&done));
        assert_eq!(s2["conditions"][1]["reason"], "NewReplicaSetAvailable");
        assert_eq!(
            s2["conditions"][0]["lastTransitionTime"], s["conditions"][0]["lastTransitionTime"],
            "an unchanged condition keeps its times"
        );
        let never = rs("web-new", 2, 0);
        let s3 = deployment_status(&d, Some(&never), std::slice::from_ref(&never));
        assert_eq!(s3["conditions"][0]["status"], "False");
        assert_eq!(s3["unavailableReplicas"], 2);
        assert!(s3.get("readyReplicas").is_none(), "zero counts are omitted");
    }
}
