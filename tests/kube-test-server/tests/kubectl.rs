//! Conformance with the real kubectl.

mod common;

use std::time::Duration;

use common::{eventually, kubectl};
use kube_test_server::{FaultRule, Readiness, ServerConfig, TestServer};
use serde_json::Value;

fn server(config: ServerConfig) -> TestServer {
    TestServer::start_blocking(config).expect("server starts")
}

const CM: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
  labels: {app: demo}
data:
  a: \"1\"
  b: \"2\"
";

#[test]
fn client_side_apply_creates_updates_and_removes_fields() {
    let s = server(ServerConfig::default());
    let Some(k) = kubectl(&s) else { return };
    assert!(
        k.ok_with_input(&["apply", "-f", "-"], CM)
            .contains("configmap/demo created")
    );
    let cm = s
        .get("v1", "ConfigMap", "default", "demo")
        .expect("created");
    assert_eq!(cm["data"]["b"], "2");
    let last = cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .expect("last-applied annotation");
    assert!(last.contains("\"b\":\"2\""));
    assert_eq!(
        cm["metadata"]["managedFields"][0]["manager"],
        "kubectl-client-side-apply"
    );

    let modified = CM
        .replace("  b: \"2\"\n", "")
        .replace("a: \"1\"", "a: \"3\"");
    assert!(
        k.ok_with_input(&["apply", "-f", "-"], &modified)
            .contains("configured")
    );
    let cm = s
        .get("v1", "ConfigMap", "default", "demo")
        .expect("still there");
    assert_eq!(
        cm["data"],
        serde_json::json!({"a": "3"}),
        "removed field is gone"
    );
    assert!(
        k.ok_with_input(&["apply", "-f", "-"], &modified)
            .contains("unchanged")
    );
}

#[test]
fn server_side_apply_conflicts_and_forces() {
    let s = server(ServerConfig::default());
    let Some(k) = kubectl(&s) else { return };
    k.ok(&["create", "configmap", "ssa", "--from-literal=a=1"]);
    let applied =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: \"2\"\n  c: \"3\"\n";
    let err = k.fails(&["apply", "--server-side", "-f", "-"], applied);
    assert!(err.contains("conflict"), "{err}");
    assert!(err.contains(".data.a"), "{err}");
    assert_eq!(
        s.get("v1", "ConfigMap", "default", "ssa").expect("cm")["data"]["a"],
        "1"
    );
    k.ok_with_input(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        applied,
    );
    let cm = s.get("v1", "ConfigMap", "default", "ssa").expect("cm");
    assert_eq!(cm["data"]["a"], "2");
    assert_eq!(cm["data"]["c"], "3");
    let managers: Vec<&str> = cm["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(managers.contains(&"kubectl"), "{managers:?}");

    // Server-side apply creates missing objects.
    let fresh = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fresh\ndata:\n  x: y\n";
    assert!(
        k.ok_with_input(&["apply", "--server-side", "-f", "-"], fresh)
            .contains("serverside-applied")
    );
    assert!(s.get("v1", "ConfigMap", "default", "fresh").is_some());
}

#[test]
fn get_outputs_json_yaml_and_tables() {
    let s = server(ServerConfig::default());
    let Some(k) = kubectl(&s) else { return };
    k.ok_with_input(&["apply", "-f", "-"], CM);
    let json: Value =
        serde_json::from_str(&k.ok(&["get", "configmap", "demo", "-o", "json"])).expect("json");
    assert_eq!(json["data"]["a"], "1");
    let yaml = k.ok(&["get", "cm", "demo", "-o", "yaml"]);
    assert!(
        yaml.contains("kind: ConfigMap") && yaml.contains("name: demo"),
        "{yaml}"
    );
    let table = k.ok(&["get", "configmaps"]);
    let header = table.lines().next().unwrap_or_default();
    assert!(
        header.contains("NAME") && header.contains("DATA") && header.contains("AGE"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("demo") && l.contains(" 2 ")),
        "{table}"
    );
    let all = k.ok(&["get", "namespaces"]);
    for ns in ["default", "kube-system", "kube-public"] {
        assert!(all.contains(ns), "{all}");
    }
    let wide = k.ok(&["get", "cm", "-A", "--show-labels"]);
    assert!(
        wide.contains("app=demo") && wide.contains("NAMESPACE"),
        "{wide}"
    );
    let missing = k.fails(&["get", "cm", "nope"], "");
    assert!(
        missing.contains("configmaps \"nope\" not found"),
        "{missing}"
    );
}

#[test]
fn delete_annotate_and_label() {
    let s = server(ServerConfig::default());
    let Some(k) = kubectl(&s) else { return };
    k.ok_with_input(&["apply", "-f", "-"], CM);
    k.ok(&["annotate", "cm", "demo", "note=hello"]);
    k.ok(&["label", "cm", "demo", "tier=front"]);
    let cm = s.get("v1", "ConfigMap", "default", "demo").expect("cm");
    assert_eq!(cm["metadata"]["annotations"]["note"], "hello");
    assert_eq!(cm["metadata"]["labels"]["tier"], "front");
    let selected = k.ok(&["get", "cm", "-l", "tier in (front,back),app", "-o", "name"]);
    assert_eq!(selected.trim(), "configmap/demo");
    assert_eq!(k.ok(&["get", "cm", "-l", "!tier", "-o", "name"]).trim(), "");
    k.ok(&["label", "cm", "demo", "tier-"]);
    assert!(
        s.get("v1", "ConfigMap", "default", "demo").expect("cm")["metadata"]["labels"]
            .get("tier")
            .is_none()
    );
    assert!(k.ok(&["delete", "cm", "demo"]).contains("deleted"));
    assert!(s.get("v1", "ConfigMap", "default", "demo").is_none());
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
";

#[test]
fn wait_for_available_deployment() {
    let s = server(ServerConfig::default().workloads(Readiness::After(Duration::from_millis(300))));
    let Some(k) = kubectl(&s) else { return };
    k.ok_with_input(&["apply", "-f", "-"], DEPLOYMENT);
    let d = s
        .get("apps/v1", "deployments", "default", "web")
        .expect("deployment");
    assert_eq!(d["metadata"]["generation"], 1);
    k.ok(&[
        "wait",
        "--for=condition=Available",
        "deployment/web",
        "--timeout=10s",
    ]);
    let d = s
        .get("apps/v1", "Deployment", "default", "web")
        .expect("deployment");
    assert_eq!(d["status"]["readyReplicas"], 2);
    assert_eq!(d["status"]["observedGeneration"], 1);

    // A spec change bumps generation; a label change does not.
    k.ok(&["label", "deployment", "web", "x=y"]);
    assert_eq!(
        s.get("apps/v1", "Deployment", "default", "web").expect("d")["metadata"]["generation"],
        1
    );
    s.set_readiness(Readiness::Never);
    k.ok_with_input(&["apply", "-f", "-"], &DEPLOYMENT.replace("1.25", "1.26"));
    assert_eq!(
        s.get("apps/v1", "Deployment", "default", "web").expect("d")["metadata"]["generation"],
        2
    );
    let err = k.fails(
        &[
            "wait",
            "--for=jsonpath={.status.observedGeneration}=3",
            "deployment/web",
            "--timeout=1s",
        ],
        "",
    );
    assert!(err.contains("timed out"), "{err}");
    s.set_readiness(Readiness::After(Duration::ZERO));
    assert!(eventually(5, || {
        s.get("apps/v1", "Deployment", "default", "web")
            .is_some_and(|d| {
                d["status"]["observedGeneration"] == 2 && d["status"]["readyReplicas"] == 2
            })
    }));
}

#[test]
fn get_watch_streams_changes() {
    let s = server(ServerConfig::default());
    let Some(k) = kubectl(&s) else { return };
    let watcher = k
        .command(&[
            "get",
            "configmaps",
            "--watch",
            "--request-timeout=3s",
            "-o",
            "name",
        ])
        .spawn()
        .expect("watch");
    std::thread::sleep(Duration::from_millis(700));
    k.ok(&["create", "configmap", "watched", "--from-literal=a=b"]);
    let out = watcher.wait_with_output().expect("watch output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("configmap/watched"), "{stdout}");
}

#[test]
fn crds_serve_their_resources_until_deleted() {
    let s = server(ServerConfig::default());
    let Some(k) = kubectl(&s) else { return };
    let crd = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wg]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
    additionalPrinterColumns:
    - {name: Size, type: string, jsonPath: .spec.size}
";
    k.ok_with_input(&["apply", "-f", "-"], crd);
    let widget =
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: big\n";
    k.ok_with_input(&["apply", "-f", "-"], widget);
    let table = k.ok(&["get", "wg"]);
    assert!(table.contains("SIZE") && table.contains("big"), "{table}");
    k.ok_with_input(&["apply", "-f", "-"], &widget.replace("big", "small"));
    let w = s
        .get("example.com/v1", "Widget", "default", "w1")
        .expect("widget");
    assert_eq!(
        (
            w["spec"]["size"].as_str(),
            w["metadata"]["generation"].as_i64()
        ),
        (Some("small"), Some(2))
    );
    k.ok(&["delete", "crd", "widgets.example.com"]);
    assert!(s.get("example.com/v1", "Widget", "default", "w1").is_none());
    assert!(k.run(&["get", "widgets.example.com"]).status.code() != Some(0));
}

#[test]
fn namespaces_terminate_with_their_contents() {
    let s = server(ServerConfig::default());
    let Some(k) = kubectl(&s) else { return };
    k.ok(&["create", "namespace", "doomed"]);
    k.ok(&[
        "-n",
        "doomed",
        "create",
        "configmap",
        "c",
        "--from-literal=a=b",
    ]);
    let err = k.fails(&["-n", "missing", "create", "configmap", "c"], "");
    assert!(err.contains("namespaces \"missing\" not found"), "{err}");
    k.ok(&[
        "delete",
        "namespace",
        "doomed",
        "--wait=true",
        "--timeout=10s",
    ]);
    assert!(s.get("v1", "Namespace", "", "doomed").is_none());
    assert!(s.get("v1", "ConfigMap", "doomed", "c").is_none());
}

#[test]
fn tls_with_ca_data_and_client_certificates() {
    let mut config = ServerConfig::default().tls(true);
    config.auth.client_certificate = true;
    let s = server(config);
    assert!(s.url().starts_with("https://127.0.0.1:"));
    let Some(k) = kubectl(&s) else { return };
    k.ok_with_input(&["apply", "-f", "-"], CM);
    assert!(
        k.ok(&["get", "cm", "demo", "-o", "name"])
            .contains("configmap/demo")
    );

    // The client certificate alone is a credential.
    let cfg = std::fs::read_to_string(&k.kubeconfig).expect("kubeconfig");
    let without_token: String = cfg
        .lines()
        .filter(|l| !l.trim_start().starts_with("token:"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&k.kubeconfig, without_token).expect("write");
    assert!(
        k.ok(&["get", "cm", "-o", "name"])
            .contains("configmap/demo")
    );
}

#[test]
fn wrong_token_gets_401() {
    let s = server(ServerConfig::default().tls(true).token(Some("right")));
    let Some(k) = kubectl(&s) else { return };
    k.ok(&["get", "ns"]);
    let cfg = std::fs::read_to_string(&k.kubeconfig)
        .expect("kubeconfig")
        .replace("\"right\"", "\"wrong\"");
    std::fs::write(&k.kubeconfig, cfg).expect("write");
    let err = k.fails(&["get", "cm"], "");
    assert!(
        err.contains("Unauthorized") || err.contains("provide credentials"),
        "{err}"
    );

    // Plain HTTP with a required token, checked without a client.
    let mut config = ServerConfig::default().token(Some("t"));
    config.auth.anonymous = Some(false);
    let plain = server(config);
    let status = |auth: &str| {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(plain.addr()).expect("connect");
        write!(
            stream,
            "GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
        )
        .expect("write");
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response
    };
    let denied = status("");
    assert!(denied.starts_with("HTTP/1.1 401"), "{denied}");
    assert!(denied.contains("\"reason\":\"Unauthorized\""), "{denied}");
    assert!(status("Authorization: Bearer t\r\n").starts_with("HTTP/1.1 200"));
}

#[test]
fn faults_fail_requests_and_make_the_server_unreachable() {
    let s = server(ServerConfig::default());
    let Some(k) = kubectl(&s) else { return };
    k.ok(&["get", "cm"]);
    s.fail_requests(
        FaultRule::new(Some("GET"), "/api/v1/namespaces/default/configmaps", 503).times(1),
    );
    let err = k.fails(&["get", "cm", "x", "--request-timeout=2s"], "");
    assert!(
        err.contains("injected fault")
            || err.contains("ServiceUnavailable")
            || err.contains("unavailable"),
        "{err}"
    );
    k.ok(&["get", "cm"]);
    s.fail_requests(FaultRule::new(
        None,
        "/api/v1/namespaces/default/secrets",
        500,
    ));
    k.fails(&["get", "secrets"], "");
    s.clear_faults();
    k.ok(&["get", "secrets"]);
    s.set_unreachable(true);
    let err = k.fails(&["get", "cm", "--request-timeout=2s"], "");
    assert!(!err.is_empty());
    s.set_unreachable(false);
    k.ok(&["get", "cm"]);
}

#[test]
fn create_deployment_rollout_status_scale_and_set_image() {
    let s = server(ServerConfig::default());
    let Some(k) = kubectl(&s) else { return };
    // kubectl sends apps types as protobuf.
    k.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1",
        "--replicas=2",
    ]);
    assert!(
        s.requests().iter().any(|r| r.method == "POST"
            && r.path.ends_with("/deployments")
            && r.content_type.contains("protobuf")),
        "kubectl create deployment sent protobuf"
    );
    let d = s
        .get("apps/v1", "Deployment", "default", "web")
        .expect("deployment");
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1"
    );
    assert_eq!(d["spec"]["selector"]["matchLabels"]["app"], "web");
    let out = k.ok(&["rollout", "status", "deployment/web", "--timeout=30s"]);
    assert!(out.contains("successfully rolled out"), "{out}");

    let out = k.ok(&["scale", "deployment/web", "--replicas=3"]);
    assert!(out.contains("scaled"), "{out}");
    assert!(eventually(10, || s
        .list_selected("v1", "Pod", Some("default"), "app=web")
        .len()
        == 3));
    let scale: Value = serde_json::from_str(&k.ok(&[
        "get",
        "--raw",
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
    ]))
    .expect("scale json");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 3);
    assert_eq!(scale["status"]["selector"], "app=web");
    k.ok(&["rollout", "status", "deployment/web", "--timeout=30s"]);

    // A template change rolls out a second ReplicaSet; the first is scaled to zero.
    k.ok(&["set", "image", "deployment/web", "nginx=nginx:2"]);
    let out = k.ok(&["rollout", "status", "deployment/web", "--timeout=30s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    assert!(eventually(10, || {
        let sets = s.list("apps/v1", "ReplicaSet", Some("default"));
        sets.len() == 2
            && sets.iter().any(|rs| {
                rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
                    && rs["status"]["readyReplicas"] == 3
            })
            && sets.iter().any(|rs| {
                rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
                    && rs["spec"]["replicas"] == 0
            })
    }));
    assert!(eventually(10, || s
        .list_selected("v1", "Pod", Some("default"), "app=web")
        .iter()
        .all(|p| p["spec"]["containers"][0]["image"] == "nginx:2")));
    let history = k.ok(&["rollout", "history", "deployment/web"]);
    assert!(history.contains('1') && history.contains('2'), "{history}");

    // Scaling a statefulset through the subresource.
    k.ok_with_input(
        &["apply", "-f", "-"],
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  serviceName: db\n  replicas: 1\n  selector:\n    matchLabels: {app: db}\n  template:\n    metadata:\n      labels: {app: db}\n    spec:\n      containers:\n      - name: db\n        image: postgres\n",
    );
    k.ok(&["scale", "statefulset/db", "--replicas=2"]);
    assert_eq!(
        s.get("apps/v1", "StatefulSet", "default", "db")
            .expect("sts")["spec"]["replicas"],
        2
    );
    k.ok(&["rollout", "status", "statefulset/db", "--timeout=30s"]);
}

#[test]
fn rollout_status_waits_for_a_never_ready_deployment() {
    let s = server(ServerConfig::default());
    let Some(k) = kubectl(&s) else { return };
    k.ok(&["create", "deployment", "web", "--image=nginx:1"]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=30s"]);
    // A new template whose pods never become ready: the old pods keep serving.
    k.ok(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"template":{"metadata":{"annotations":{"kube-test-server/ready":"never"}}}}}"#,
    ]);
    let err = k.fails(&["rollout", "status", "deployment/web", "--timeout=2s"], "");
    assert!(
        err.contains("timed out") || err.contains("exceeded"),
        "{err}"
    );
    let d = s.get("apps/v1", "Deployment", "default", "web").expect("d");
    assert_eq!(d["status"]["availableReplicas"], 1, "{}", d["status"]);
    assert_eq!(d["status"]["conditions"][0]["status"], "True");
    // Undo: the first ReplicaSet becomes current again (revision 3).
    k.ok(&["rollout", "undo", "deployment/web"]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=30s"]);
    let sets = s.list("apps/v1", "ReplicaSet", Some("default"));
    assert!(
        sets.iter().any(
            |rs| rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
                && rs["spec"]["replicas"] == 1
        ),
        "{sets:?}"
    );
}
