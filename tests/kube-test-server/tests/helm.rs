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

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .to_str()
        .expect("utf-8 path")
        .to_string()
}

fn history(h: &common::Client, release: &str) -> Vec<(i64, String)> {
    let out = h.ok(&["history", release, "--namespace", "default", "-o", "json"]);
    let entries: serde_json::Value = serde_json::from_str(&out).expect("history json");
    entries
        .as_array()
        .expect("array")
        .iter()
        .map(|e| {
            (
                e["revision"].as_i64().unwrap_or(0),
                e["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn helm_install_wait_and_atomic_upgrade_rolls_back() {
    let s = TestServer::start_blocking(ServerConfig::default()).expect("server");
    let Some(h) = helm(&s) else { return };
    let chart = fixture("chart");
    h.ok(&[
        "install",
        "r1",
        &chart,
        "--namespace",
        "default",
        "--wait",
        "--timeout",
        "60s",
    ]);
    let d = s
        .get("apps/v1", "Deployment", "default", "r1-web")
        .expect("deployment");
    assert_eq!(
        d["status"]["availableReplicas"], 1,
        "--wait returned before ready: {}",
        d["status"]
    );
    let sets = s.list("apps/v1", "ReplicaSet", Some("default"));
    assert_eq!(sets.len(), 1);

    h.ok(&[
        "upgrade",
        "r1",
        &chart,
        "--namespace",
        "default",
        "--wait",
        "--timeout",
        "60s",
        "--set",
        "replicas=2",
    ]);
    assert_eq!(
        s.get("apps/v1", "Deployment", "default", "r1-web")
            .expect("d")["status"]["readyReplicas"],
        2
    );

    // New pods that never become ready: --atomic rolls back after the timeout.
    let err = h.fails(
        &[
            "upgrade",
            "r1",
            &chart,
            "--namespace",
            "default",
            "--wait",
            "--atomic",
            "--timeout",
            "3s",
            "--set",
            "replicas=2,neverReady=true",
        ],
        "",
    );
    assert!(err.contains("has been rolled back"), "{err}");
    let revisions = history(&h, "r1");
    assert_eq!(
        revisions,
        [
            (1, "superseded".into()),
            (2, "superseded".into()),
            (3, "failed".into()),
            (4, "deployed".into())
        ],
    );
    let d = s
        .get("apps/v1", "Deployment", "default", "r1-web")
        .expect("d");
    assert!(
        d["spec"]["template"]["metadata"]["annotations"].is_null(),
        "template rolled back"
    );
    // The ReplicaSet of revision 2 is current again and serves.
    assert!(common::eventually(10, || s
        .get("apps/v1", "Deployment", "default", "r1-web")
        .is_some_and(
            |d| d["status"]["availableReplicas"] == 2 && d["status"]["updatedReplicas"] == 2
        )));
}

#[test]
fn helm_hooks_run_in_weight_order_with_delete_policies() {
    let s = TestServer::start_blocking(ServerConfig::default()).expect("server");
    let Some(h) = helm(&s) else { return };
    let chart = fixture("hooks-chart");
    h.ok(&[
        "install",
        "h1",
        &chart,
        "--namespace",
        "default",
        "--timeout",
        "60s",
    ]);
    let position = |name: &str| {
        s.requests()
            .iter()
            .position(|r| r.query.contains(&format!("metadata.name%3D{name}")))
            .unwrap_or_else(|| panic!("helm watched {name}"))
    };
    assert!(
        position("h1-setup") < position("h1-seed"),
        "weight -5 before weight 5"
    );
    assert!(
        s.get("batch/v1", "Job", "default", "h1-setup").is_none(),
        "hook-succeeded: deleted"
    );
    let seed = s
        .get("batch/v1", "Job", "default", "h1-seed")
        .expect("hook-failed: kept on success");
    assert!(seed["status"]["succeeded"] == 1);
    let pod = s
        .get("v1", "Pod", "default", "h1-check")
        .expect("post-install pod");
    assert_eq!(pod["status"]["phase"], "Succeeded");
    assert!(
        s.get("batch/v1", "Job", "default", "h1-migrate").is_none(),
        "post-upgrade not run"
    );
    let status: serde_json::Value =
        serde_json::from_str(&h.ok(&["status", "h1", "--namespace", "default", "-o", "json"]))
            .expect("status json");
    let hooks = status["hooks"].as_array().expect("hooks");
    let phase = |name: &str| {
        hooks
            .iter()
            .find(|x| x["name"] == name)
            .map(|x| x["last_run"]["phase"].clone())
    };
    assert_eq!(phase("h1-setup"), Some(serde_json::json!("Succeeded")));
    assert_eq!(phase("h1-check"), Some(serde_json::json!("Succeeded")));
    assert_eq!(phase("h1-migrate"), Some(serde_json::json!("")));

    // A failing post-upgrade hook Job fails the upgrade with the Job's reason.
    let err = h.fails(
        &[
            "upgrade",
            "h1",
            &chart,
            "--namespace",
            "default",
            "--timeout",
            "60s",
            "--set",
            "failPostUpgrade=true",
        ],
        "",
    );
    assert!(
        err.contains("post-upgrade hooks failed")
            && err.contains("job h1-migrate failed: BackoffLimitExceeded"),
        "{err}"
    );
    // Helm supersedes the previous revision only after the post-upgrade hooks succeeded.
    assert_eq!(
        history(&h, "h1"),
        [(1, "deployed".into()), (2, "failed".into())]
    );
}

#[test]
fn helm_wait_reads_statefulset_and_daemonset_status() {
    let s = TestServer::start_blocking(ServerConfig::default().workloads(
        kube_test_server::Readiness::After(std::time::Duration::from_millis(500)),
    ))
    .expect("server");
    let Some(h) = helm(&s) else { return };
    let chart = fixture("workloads-chart");
    h.ok(&[
        "install",
        "w1",
        &chart,
        "--namespace",
        "default",
        "--wait",
        "--timeout",
        "60s",
    ]);
    let sts = s
        .get("apps/v1", "StatefulSet", "default", "w1-db")
        .expect("sts");
    assert_eq!(
        sts["status"]["readyReplicas"], 2,
        "--wait returned before ready: {}",
        sts["status"]
    );
    assert_eq!(
        sts["spec"]["updateStrategy"]["type"], "RollingUpdate",
        "defaulted, so helm checks it"
    );
    s.set_readiness(kube_test_server::Readiness::Never);
    let err = h.fails(
        &[
            "install",
            "w2",
            &chart,
            "--namespace",
            "default",
            "--wait",
            "--timeout",
            "2s",
        ],
        "",
    );
    assert!(
        err.contains("context deadline exceeded") || err.contains("timed out"),
        "{err}"
    );
}

/// The statefulset and daemonset controllers make Pods (`NAME-<ordinal>`, one DaemonSet Pod
/// on the single node) labelled with their `controller-revision-hash`, and the status from
/// them; a StatefulSet template change with a `partition` replaces only the Pods from the
/// partition on, and `helm upgrade --wait` returns as Helm's `ready.go` allows (updated
/// replicas = replicas - partition, all ready); with the partition at 0 every Pod is replaced
/// and the current revision becomes the update revision.
#[test]
fn statefulset_and_daemonset_pods_follow_their_template_and_partition() {
    let s = TestServer::start_blocking(ServerConfig::default().workloads(
        kube_test_server::Readiness::After(std::time::Duration::from_millis(200)),
    ))
    .expect("server");
    let Some(h) = helm(&s) else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("templates")).expect("mkdir");
    std::fs::write(
        dir.path().join("Chart.yaml"),
        "apiVersion: v2\nname: sts\nversion: 0.1.0\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("values.yaml"),
        "image: postgres:15\npartition: 0\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("templates/workloads.yaml"),
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  serviceName: db\n  replicas: 3\n  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate: {partition: {{ .Values.partition }}}\n  selector:\n    matchLabels: {app: db}\n  template:\n    metadata:\n      labels: {app: db}\n    spec:\n      containers: [{name: db, image: {{ .Values.image }}}]\n---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\nspec:\n  selector:\n    matchLabels: {app: agent}\n  template:\n    metadata:\n      labels: {app: agent}\n    spec:\n      containers: [{name: agent, image: {{ .Values.image }}}]\n",
    )
    .expect("write");
    let chart = dir.path().to_str().expect("utf-8");
    let pods = |app: &str| -> Vec<(String, String, bool)> {
        let mut pods: Vec<(String, String, bool)> = s
            .list_selected("v1", "Pod", Some("default"), &format!("app={app}"))
            .iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .map(|p| {
                let ready = p["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                });
                (
                    p["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    p["metadata"]["labels"]["controller-revision-hash"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    ready,
                )
            })
            .collect();
        pods.sort();
        pods
    };
    let upgrade = |set: &str| {
        h.ok(&[
            "upgrade",
            "w",
            chart,
            "--install",
            "-n",
            "default",
            "--wait",
            "--timeout",
            "60s",
            "--set",
            set,
        ]);
    };

    upgrade("image=postgres:15");
    let sts = s
        .get("apps/v1", "StatefulSet", "default", "db")
        .expect("sts");
    let first = sts["status"]["updateRevision"]
        .as_str()
        .expect("rev")
        .to_string();
    assert_eq!(sts["status"]["currentRevision"], first.as_str());
    assert_eq!(
        pods("db"),
        (0..3)
            .map(|i| (format!("db-{i}"), first.clone(), true))
            .collect::<Vec<_>>()
    );
    let agent = pods("agent");
    assert_eq!(agent.len(), 1, "{agent:?}");
    assert!(agent[0].2, "{agent:?}");
    let agent_revision = agent[0].1.clone();
    let ds = s
        .get("apps/v1", "DaemonSet", "default", "agent")
        .expect("ds");
    assert_eq!(ds["status"]["numberReady"], 1);
    assert_eq!(ds["status"]["updatedNumberScheduled"], 1);

    // A new image from ordinal 2 on.
    upgrade("image=postgres:16,partition=2");
    let sts = s
        .get("apps/v1", "StatefulSet", "default", "db")
        .expect("sts");
    let second = sts["status"]["updateRevision"]
        .as_str()
        .expect("rev")
        .to_string();
    assert_ne!(second, first);
    assert_eq!(sts["status"]["currentRevision"], first.as_str());
    assert_eq!(sts["status"]["updatedReplicas"], 1);
    assert_eq!(sts["status"]["readyReplicas"], 3);
    assert_eq!(
        pods("db"),
        [
            ("db-0".to_string(), first.clone(), true),
            ("db-1".to_string(), first.clone(), true),
            ("db-2".to_string(), second.clone(), true),
        ]
    );
    // The DaemonSet's Pod is replaced by one of the new template.
    let agent = pods("agent");
    assert_eq!(agent.len(), 1, "{agent:?}");
    assert_ne!(agent[0].1, agent_revision, "{agent:?}");

    // The partition at 0: every Pod on the new revision, which becomes the current one.
    upgrade("image=postgres:16,partition=0");
    let sts = s
        .get("apps/v1", "StatefulSet", "default", "db")
        .expect("sts");
    assert_eq!(sts["status"]["currentRevision"], second.as_str());
    assert_eq!(sts["status"]["updatedReplicas"], 3);
    assert_eq!(
        pods("db"),
        (0..3)
            .map(|i| (format!("db-{i}"), second.clone(), true))
            .collect::<Vec<_>>()
    );
}
