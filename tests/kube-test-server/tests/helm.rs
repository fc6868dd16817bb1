//! Conformance with the real helm (releases are Secrets written through the typed client).

mod common;

use std::path::Path;

use common::helm;
use kube_test_server::{ServerConfig, TestServer};

#[test]
fn helm_install_upgrade_list_status_uninstall() {
    let s = TestServer::start_blocking(ServerConfig::default()).expect("server");
    let Some(h) = helm(&s) else { return };
    let chart = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chart");
    let chart = chart.to_str().expect("utf-8 path");
    h.ok(&["install", "r1", chart, "--namespace", "default"]);
    let cm = s
        .get("v1", "ConfigMap", "default", "r1-config")
        .expect("configmap");
    assert_eq!(cm["data"]["message"], "hello");
    assert!(
        s.get("apps/v1", "Deployment", "default", "r1-web")
            .is_some()
    );
    assert!(s.get("v1", "Service", "default", "r1-svc").is_some());
    let releases = s.list_selected("v1", "Secret", Some("default"), "owner=helm,name=r1");
    assert_eq!(releases.len(), 1);
    assert_eq!(releases[0]["type"], "helm.sh/release.v1");

    let list = h.ok(&["list", "--namespace", "default"]);
    assert!(list.contains("r1") && list.contains("deployed"), "{list}");

    h.ok(&[
        "upgrade",
        "r1",
        chart,
        "--namespace",
        "default",
        "--set",
        "message=bye,replicas=3",
    ]);
    assert_eq!(
        s.get("v1", "ConfigMap", "default", "r1-config")
            .expect("cm")["data"]["message"],
        "bye"
    );
    let d = s
        .get("apps/v1", "Deployment", "default", "r1-web")
        .expect("deployment");
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["metadata"]["generation"], 2);
    let status = h.ok(&["status", "r1", "--namespace", "default"]);
    assert!(
        status.contains("REVISION: 2") && status.contains("STATUS: deployed"),
        "{status}"
    );

    h.ok(&["uninstall", "r1", "--namespace", "default"]);
    assert!(s.get("v1", "ConfigMap", "default", "r1-config").is_none());
    assert!(
        s.get("apps/v1", "Deployment", "default", "r1-web")
            .is_none()
    );
    assert!(
        s.list_selected("v1", "Secret", Some("default"), "owner=helm")
            .is_empty()
    );
    assert!(!h.ok(&["list", "--namespace", "default"]).contains("r1"));
}
