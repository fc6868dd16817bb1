use super::*;
use serde_json::json;

fn requirement(path: &str, operator: &str, values: &[Value]) -> RequirementSpec {
    RequirementSpec {
        json_path: path.into(),
        operator: operator.into(),
        values: values.iter().map(|v| json!({"value": v})).collect(),
    }
}

#[test]
fn pods_are_ready_or_completed() {
    assert!(
        check_pod(&json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}))
            .is_ok()
    );
    assert!(check_pod(&json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "PodCompleted"}]}})).is_ok());
    assert_eq!(
        check_pod(&json!({"status": {}})).unwrap_err(),
        "condition \"Ready\" is missing"
    );
    assert_eq!(
        check_pod(&json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "m"}]}})).unwrap_err(),
        "condition \"Ready\" has invalid status False (expected True) due to ContainersNotReady: m"
    );
}

#[test]
fn deployments_need_the_observed_generation_and_all_replicas() {
    let d = |generation: i64, status: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"generation": generation}, "spec": {"replicas": 2}, "status": status})
    };
    let full = json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2});
    assert!(default_check(&d(2, full.clone())).is_ok());
    assert_eq!(
        default_check(&d(3, full)).unwrap_err(),
        "observed generation outdated (2/3)"
    );
    assert_eq!(
        default_check(&d(1, json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 2, "availableReplicas": 2}))).unwrap_err(),
        "not enough ready replicas (2/2)"
    );
    // Zero replicas wanted and none there is ready.
    assert!(check_deployment(&json!({"spec": {"replicas": 0}})).is_ok());
}

#[test]
fn stateful_sets_replica_sets_daemon_sets() {
    assert!(
        check_stateful_set(&json!({"status": {"updatedReplicas": 1, "availableReplicas": 1}}))
            .is_ok()
    );
    assert_eq!(check_stateful_set(&json!({"spec": {"replicas": 3}, "status": {"updatedReplicas": 3, "availableReplicas": 2}})).unwrap_err(), "not enough ready replicas (2/3)");
    assert!(check_replica_set(&json!({"status": {"readyReplicas": 1}})).is_ok());
    assert!(check_replica_set(&json!({"status": {"readyReplicas": 1, "conditions": [{"type": "ReplicaFailure", "status": "True", "reason": "r", "message": "m"}]}})).unwrap_err().contains("ReplicaFailure"));
    let ds = |current: i64, max: Value| {
        json!({"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max}}},
        "status": {"desiredNumberScheduled": 4, "currentNumberScheduled": current}})
    };
    assert!(check_daemon_set(&ds(3, json!(1))).is_ok());
    assert!(check_daemon_set(&ds(2, json!(1))).is_err());
    assert!(check_daemon_set(&ds(2, json!("50%"))).is_ok());
    assert!(default_check(&json!({"apiVersion": "v1", "kind": "ConfigMap"})).is_ok());
    assert!(default_check(&json!({"apiVersion": "v1", "kind": "ReplicationController", "status": {"readyReplicas": 0}})).is_err());
}

#[test]
fn requirement_operators() {
    let object = json!({"status": {"phase": "Ready", "count": 3, "items": [{"n": 1}, {"n": 2}]}});
    let ok = |r: RequirementSpec| check_requirements(&object, &[r]).is_ok();
    assert!(ok(requirement(".status.phase", "exists", &[])));
    assert!(!ok(requirement(".status.missing", "exists", &[])));
    assert!(ok(requirement(".status.missing", "!", &[])));
    assert!(!ok(requirement(".status.phase", "!", &[])));
    assert!(ok(requirement(".status.phase", "=", &[json!("Ready")])));
    assert!(
        ok(requirement("status.count", "==", &[json!(3.0)])),
        "ints compare as floats"
    );
    assert!(!ok(requirement(".status.phase", "==", &[json!("Pending")])));
    assert!(ok(requirement(".status.phase", "!=", &[json!("Pending")])));
    assert!(ok(requirement(
        ".status.phase",
        "in",
        &[json!("Pending"), json!("Ready")]
    )));
    assert!(!ok(requirement(
        ".status.phase",
        "notin",
        &[json!("Pending"), json!("Ready")]
    )));
    assert!(ok(requirement(
        ".status.items[*].n",
        "in",
        &[json!(1), json!(2)]
    )));
    assert!(
        !ok(requirement(".status.items[*].n", "==", &[json!(1)])),
        "every selected value must match"
    );
    assert!(
        ok(requirement(".status.items[0]", "==", &[json!({"n": 1})])),
        "complex values"
    );
    let broken = RequirementSpec {
        json_path: ".status.phase".into(),
        operator: "==".into(),
        values: vec![json!("Ready")],
    };
    assert_eq!(
        check_requirements(&object, &[broken]).unwrap_err(),
        "object at index 0 does not contain the value key"
    );
}

#[test]
fn custom_checks_select_by_reference_and_labels() {
    use crate::applier::config::{LabelSelectorSpec, TypedObjectReference};
    use crate::kubernetes::FakeCluster;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let cluster = FakeCluster::new();
    let check = CustomReadinessCheck {
        name: "labelled".into(),
        label_selector: Some(LabelSelectorSpec {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            labels: [("app".to_string(), "x".to_string())].into(),
        }),
        requirements: vec![requirement(".data.ok", "==", &[json!("yes")])],
        ..Default::default()
    };
    let not_ready = rt.block_on(custom_readiness(&cluster, &check)).unwrap();
    assert_eq!(
        not_ready.to_string(),
        "v1, Kind=ConfigMap / is not ready: object list by label selector is empty"
    );
    cluster.insert(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n", "labels": {"app": "x"}}, "data": {"ok": "yes"}}));
    cluster.insert(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "m", "labels": {"app": "y"}}, "data": {"ok": "no"}}));
    assert_eq!(rt.block_on(custom_readiness(&cluster, &check)), None);
    let by_reference = CustomReadinessCheck {
        resources: vec![TypedObjectReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "b".into(),
            namespace: "m".into(),
        }],
        label_selector: None,
        ..check
    };
    let not_ready = rt
        .block_on(custom_readiness(&cluster, &by_reference))
        .unwrap();
    assert_eq!(not_ready.name, "b");
    assert!(not_ready.reason.contains("not fulfiled"));
}
