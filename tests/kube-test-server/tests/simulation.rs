//! The simulated controllers and garbage collection, through the direct store API.

mod common;

use common::eventually;
use kube_test_server::{JobOutcome, ServerConfig, TestServer};
use serde_json::json;

#[test]
fn pods_run_jobs_complete_and_token_secrets_fill() {
    let s = TestServer::start_blocking(ServerConfig::default()).expect("server");
    s.create(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    )
    .expect("pod");
    assert!(eventually(5, || s
        .get("v1", "Pod", "default", "p")
        .is_some_and(|p| {
            p["status"]["phase"] == "Running"
                && p["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
        })));

    s.create(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                    "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}))
        .expect("job");
    assert!(eventually(5, || s
        .get("batch/v1", "Job", "default", "j")
        .is_some_and(|j| j["status"]["succeeded"] == 1)));
    s.set_job_outcome(JobOutcome::Fail);
    s.create(
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "f"}, "spec": {}}),
    )
    .expect("job");
    assert!(eventually(5, || s
        .get("batch/v1", "Job", "default", "f")
        .is_some_and(|j| j["status"]["failed"] == 1)));

    s.create(json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                    "metadata": {"name": "t", "annotations": {"kubernetes.io/service-account.name": "default"}}}))
        .expect("secret");
    assert!(eventually(5, || s
        .get("v1", "Secret", "default", "t")
        .is_some_and(|t| {
            t["data"]["token"].is_string()
                && t["data"]["ca.crt"].is_string()
                && t["data"]["namespace"] == "ZGVmYXVsdA=="
        })));
}

#[test]
fn owner_references_cascade_and_orphan() {
    let s = TestServer::start_blocking(ServerConfig::default()).expect("server");
    let owner = s
        .create(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}))
        .expect("owner");
    let uid = owner["metadata"]["uid"].as_str().expect("uid").to_string();
    for name in ["d1", "d2"] {
        s.create(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name,
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}}))
            .expect("dependent");
    }
    s.delete("v1", "ConfigMap", "default", "owner")
        .expect("delete");
    assert!(
        s.list("v1", "ConfigMap", Some("default")).is_empty(),
        "dependents collected"
    );

    let generated = s
        .create(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}),
        )
        .expect("generateName");
    let name = generated["metadata"]["name"].as_str().expect("name");
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    let err = s
        .create(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}))
        .expect_err("no name");
    assert_eq!((err.code, err.reason), (422, "Invalid"));
    assert_eq!(err.details.causes[0].field, "metadata.name");
}

#[test]
fn deployments_roll_out_through_replica_sets_and_pods() {
    let s = TestServer::start_blocking(ServerConfig::default()).expect("server");
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}});
    s.create(deployment).expect("deployment");
    assert!(eventually(10, || s
        .get("apps/v1", "Deployment", "default", "web")
        .is_some_and(|d| d["status"]["availableReplicas"] == 2
            && d["status"]["updatedReplicas"] == 2
            && d["status"]["observedGeneration"] == 1)));
    // Settled: no controller keeps writing.
    let rv = s.resource_version();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(s.resource_version(), rv, "controllers settle");
    let d = s.get("apps/v1", "Deployment", "default", "web").expect("d");
    let uid = d["metadata"]["uid"].clone();
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    let conditions = d["status"]["conditions"].as_array().expect("conditions");
    assert_eq!(conditions[0]["type"], "Available");
    assert_eq!(conditions[1]["reason"], "NewReplicaSetAvailable");
    let sets = s.list("apps/v1", "ReplicaSet", Some("default"));
    assert_eq!(sets.len(), 1);
    let first = sets[0].clone();
    let hash = first["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .expect("hash")
        .to_string();
    assert_eq!(first["metadata"]["name"], format!("web-{hash}"));
    assert_eq!(first["metadata"]["ownerReferences"][0]["uid"], uid);
    assert_eq!(
        first["spec"]["selector"]["matchLabels"]["pod-template-hash"],
        hash.as_str()
    );
    let pods = s.list_selected(
        "v1",
        "Pod",
        Some("default"),
        &format!("pod-template-hash={hash}"),
    );
    assert_eq!(pods.len(), 2);
    assert!(
        pods.iter()
            .all(|p| p["metadata"]["ownerReferences"][0]["name"] == first["metadata"]["name"])
    );

    // Deleting the Deployment collects its ReplicaSets and their pods (rollouts: kubectl.rs).
    s.delete("apps/v1", "Deployment", "default", "web")
        .expect("delete");
    assert!(
        eventually(5, || s.list("v1", "Pod", Some("default")).is_empty()
            && s.list("apps/v1", "ReplicaSet", Some("default")).is_empty()),
        "collected"
    );

    // A pod template annotated never-ready: pods run but are not Ready, the Deployment waits.
    s.create(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "stuck"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "stuck"}},
                 "template": {"metadata": {"labels": {"app": "stuck"}, "annotations": {"kube-test-server/ready": "never"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}}))
        .expect("stuck");
    assert!(eventually(5, || s
        .list_selected("v1", "Pod", Some("default"), "app=stuck")
        .first()
        .is_some_and(|p| p["status"]["phase"] == "Running")));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let stuck = s
        .get("apps/v1", "Deployment", "default", "stuck")
        .expect("stuck");
    assert_eq!(
        stuck["status"]["conditions"][0]["status"], "False",
        "{stuck}"
    );
    assert_eq!(stuck["status"]["unavailableReplicas"], 1);
}

#[test]
fn jobs_and_pods_follow_their_test_annotations() {
    let s = TestServer::start_blocking(ServerConfig::default()).expect("server");
    s.create(json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "f", "annotations": {"kube-test-server/outcome": "Fail", "kube-test-server/delay-ms": "200"}},
        "spec": {}}))
        .expect("job");
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(
        s.get("batch/v1", "Job", "default", "f").expect("job")["status"]["active"],
        1,
        "still running"
    );
    assert!(eventually(5, || s
        .get("batch/v1", "Job", "default", "f")
        .is_some_and(|j| j["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| cs
                .iter()
                .any(|c| c["type"] == "Failed"
                    && c["status"] == "True"
                    && c["reason"] == "BackoffLimitExceeded")))));
    let pod = |name: &str, annotations: serde_json::Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    };
    s.create(pod("hook", json!({"helm.sh/hook": "pre-install"})))
        .expect("pod");
    s.create(pod("bad", json!({"kube-test-server/outcome": "Failed"})))
        .expect("pod");
    assert!(eventually(5, || s
        .get("v1", "Pod", "default", "hook")
        .is_some_and(|p| p["status"]["phase"] == "Succeeded")));
    assert!(eventually(5, || s
        .get("v1", "Pod", "default", "bad")
        .is_some_and(|p| p["status"]["phase"] == "Failed")));
}
