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
