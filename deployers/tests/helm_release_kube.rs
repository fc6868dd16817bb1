//! Real Helm releases of the helm deployer against the in-memory API server, side by side with
//! the real `helm` 3.19 (`HELM`; the tests print SKIP without it): the deployer reads and
//! upgrades what `helm install` made, `helm` reads what the deployer made, `helm rollback` and
//! a reconcile converge, and an uninstall leaves no record.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use kube_test_server::{ServerConfig, TestServer};
use landscaper_deployers::helm::release::codec;
use landscaper_deployers::helm::{HELM_DEPLOYER_TYPE, HelmDeployer};
use landscaper_deployers::{DeleteResult, DeployRequest, Deployer, ReconcileResult};
use landscaper_model::{DeployItem, DeployItemStatus, ObjectMeta, Phase, Target};
use landscaper_sources::ChartSources;
use serde_json::{Value, json};

fn helm_binary() -> Option<PathBuf> {
    let path = std::env::var_os("HELM").map(PathBuf::from)?;
    path.is_file().then_some(path)
}

/// `helm` bound to the server (its own kubeconfig and homes).
struct Helm {
    bin: PathBuf,
    home: tempfile::TempDir,
}

impl Helm {
    fn new(server: &TestServer) -> Option<Helm> {
        let Some(bin) = helm_binary() else {
            println!("SKIP: set HELM to the helm 3.19 binary");
            return None;
        };
        let home = tempfile::tempdir().unwrap();
        server
            .write_kubeconfig(home.path().join("kubeconfig"))
            .unwrap();
        Some(Helm { bin, home })
    }

    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let home = self.home.path();
        let out = Command::new(&self.bin)
            .args(args)
            .env("KUBECONFIG", home.join("kubeconfig"))
            .env("HOME", home)
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"))
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "helm {args:?} failed:\n{out}\n{err}");
        out
    }
}

/// `charts/demo` in `manifests`: a ConfigMap (greeting, revision), a Deployment, a Service,
/// NOTES.txt.
fn write_chart(manifests: &Path) -> PathBuf {
    let dir = manifests.join("charts/demo");
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: demo\nversion: 0.1.0\nappVersion: \"1.0\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("values.yaml"), "greeting: hello\nreplicas: 1\n").unwrap();
    std::fs::write(
        dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  revision: {{ .Release.Revision | quote }}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("templates/deploy.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n  replicas: {{ .Values.replicas }}\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: web\n          image: {{ .Values.image | default \"nginx:1.25\" }}\n          ports:\n            - containerPort: 80\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("templates/svc.yaml"),
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-svc\nspec:\n  selector: {app: web}\n  ports:\n    - port: 80\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("templates/NOTES.txt"),
        "Thanks {{ .Release.Name }}\n",
    )
    .unwrap();
    dir
}

fn target(server: &TestServer) -> Target {
    let mut target = Target {
        metadata: ObjectMeta::namespaced("demo", "cluster"),
        ..Default::default()
    };
    target.spec.r#type = "landscaper.gardener.cloud/kubernetes-cluster".into();
    target.spec.config = Some(json!({"kubeconfig": server.kubeconfig()}));
    target
}

fn item(values: Value) -> DeployItem {
    let mut item = DeployItem {
        metadata: ObjectMeta::namespaced("demo", "web"),
        ..Default::default()
    };
    item.spec.r#type = HELM_DEPLOYER_TYPE.into();
    item.spec.config = Some(json!({
        "apiVersion": "helm.deployer.landscaper.gardener.cloud/v1alpha1",
        "kind": "ProviderConfiguration",
        "name": "rel",
        "namespace": "default",
        "chart": {"ref": "local://charts/demo"},
        "values": values,
    }));
    item.status = Some(DeployItemStatus {
        phase: Some(Phase::Init),
        ..Default::default()
    });
    item
}

fn deployer(manifests: &Path) -> HelmDeployer {
    HelmDeployer::new(ChartSources::new(
        Arc::new(landscaper_sources::http::HyperTransport::new()),
        None,
        landscaper_sources::SourcesConfig::default(),
    ))
    .with_manifests_dir(manifests.to_path_buf())
}

/// One job of the item until it succeeds (readiness polled as the dispatcher does).
fn run_job(
    runtime: &tokio::runtime::Runtime,
    deployer: &HelmDeployer,
    item: &mut DeployItem,
    target: &Target,
) -> ReconcileResult {
    item.status.as_mut().unwrap().phase = Some(Phase::Init);
    for _ in 0..100 {
        let result = runtime.block_on(deployer.reconcile(DeployRequest::new(item, Some(target))));
        match result {
            Ok(r) => {
                let status = item.status.as_mut().unwrap();
                status.phase = r.phase.clone();
                status.provider_status = r.provider_status.clone();
                if r.phase == Some(Phase::Succeeded) {
                    return r;
                }
            }
            Err(e) => assert!(!e.is_unrecoverable(), "{e}"),
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the item did not succeed");
}

fn records(server: &TestServer) -> Vec<(String, String)> {
    let mut records: Vec<(String, String)> = server
        .list_selected("v1", "Secret", Some("default"), "owner=helm,name=rel")
        .iter()
        .map(|s| {
            (
                s["metadata"]["labels"]["version"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                s["metadata"]["labels"]["status"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    records.sort();
    records
}

#[test]
fn helm_sees_the_deployers_release_and_the_deployer_takes_over_helms() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let Some(helm) = Helm::new(&server) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    let chart = write_chart(manifests.path());
    let chart = chart.to_str().unwrap();

    // `helm install` makes revision 1; the deployer's codec reads helm's record.
    helm.ok(&[
        "install",
        "rel",
        chart,
        "-n",
        "default",
        "--set",
        "greeting=from-helm",
    ]);
    let secret = server
        .get("v1", "Secret", "default", "sh.helm.release.v1.rel.v1")
        .unwrap();
    let release = codec::from_secret(&secret).unwrap();
    assert_eq!(
        release.config,
        *json!({"greeting": "from-helm"}).as_object().unwrap()
    );
    assert_eq!(release.info.as_ref().unwrap().notes, "Thanks rel\n");

    // The deployer upgrades it as revision 2.
    let deployer = deployer(manifests.path());
    let target = target(&server);
    let mut item = item(json!({"greeting": "from-landscaper", "replicas": 2}));
    let result = run_job(&runtime, &deployer, &mut item, &target);
    let names: Vec<&str> = result.provider_status.as_ref().unwrap()["managedResources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["resource"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["rel-cm", "rel-svc", "rel-web"]);
    assert_eq!(
        records(&server),
        [
            ("1".into(), "superseded".into()),
            ("2".into(), "deployed".into())
        ]
    );
    let cm = server.get("v1", "ConfigMap", "default", "rel-cm").unwrap();
    assert_eq!(
        cm["data"],
        json!({"greeting": "from-landscaper", "revision": "2"})
    );
    let web = server
        .get("apps/v1", "Deployment", "default", "rel-web")
        .unwrap();
    assert_eq!(web["spec"]["replicas"], 2);

    // helm sees revision 2 as Landscaper left it.
    let list = helm.ok(&["list", "-n", "default"]);
    assert!(
        list.contains("rel") && list.contains("deployed") && list.contains("demo-0.1.0"),
        "{list}"
    );
    let status = helm.ok(&["status", "rel", "-n", "default"]);
    assert!(
        status.contains("REVISION: 2") && status.contains("STATUS: deployed"),
        "{status}"
    );
    assert!(status.contains("Thanks rel"), "notes: {status}");
    let history = helm.ok(&["history", "rel", "-n", "default"]);
    assert!(
        history.contains("Install complete") && history.contains("Upgrade complete"),
        "{history}"
    );
    let values = helm.ok(&["get", "values", "rel", "-n", "default", "-o", "json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&values).unwrap(),
        json!({"greeting": "from-landscaper", "replicas": 2})
    );
    let manifest = helm.ok(&["get", "manifest", "rel", "-n", "default"]);
    let template = helm.ok(&[
        "template",
        "rel",
        chart,
        "-n",
        "default",
        "--set",
        "greeting=from-landscaper,replicas=2",
        "--is-upgrade",
    ]);
    // `helm template` renders revision 1; the release is revision 2.
    assert_eq!(
        manifest.trim(),
        template
            .replace("revision: \"1\"", "revision: \"2\"")
            .trim()
    );

    // The user rolls back (revision 3); the next job converges as revision 4.
    helm.ok(&["rollback", "rel", "1", "-n", "default"]);
    assert_eq!(
        server.get("v1", "ConfigMap", "default", "rel-cm").unwrap()["data"]["greeting"],
        "from-helm"
    );
    run_job(&runtime, &deployer, &mut item, &target);
    assert_eq!(
        records(&server),
        [
            ("1".into(), "superseded".into()),
            ("2".into(), "superseded".into()),
            ("3".into(), "superseded".into()),
            ("4".into(), "deployed".into())
        ]
    );
    let cm = server.get("v1", "ConfigMap", "default", "rel-cm").unwrap();
    assert_eq!(
        cm["data"],
        json!({"greeting": "from-landscaper", "revision": "4"})
    );
    let status = helm.ok(&["status", "rel", "-n", "default"]);
    assert!(status.contains("REVISION: 4"), "{status}");

    // helm upgrades what the deployer made (revision 5), the deployer deletes it all.
    helm.ok(&[
        "upgrade",
        "rel",
        chart,
        "-n",
        "default",
        "--reuse-values",
        "--set",
        "replicas=3",
    ]);
    assert_eq!(
        server
            .get("apps/v1", "Deployment", "default", "rel-web")
            .unwrap()["spec"]["replicas"],
        3
    );
    item.status.as_mut().unwrap().phase = Some(Phase::Succeeded);
    let deleted = runtime
        .block_on(deployer.delete(DeployRequest::new(&item, Some(&target))))
        .unwrap();
    assert_eq!(deleted, DeleteResult::Deleted);
    assert!(records(&server).is_empty(), "no release records left");
    assert!(server.get("v1", "ConfigMap", "default", "rel-cm").is_none());
    assert!(
        server
            .get("apps/v1", "Deployment", "default", "rel-web")
            .is_none()
    );
    assert!(server.get("v1", "Service", "default", "rel-svc").is_none());
    assert!(!helm.ok(&["list", "-n", "default", "-a"]).contains("rel"));
}

#[test]
fn helm_manages_a_release_the_deployer_installed() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let Some(helm) = Helm::new(&server) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    let chart = write_chart(manifests.path());
    let chart = chart.to_str().unwrap();
    let deployer = deployer(manifests.path());
    let target = target(&server);
    let mut item = item(json!({"greeting": "hi"}));
    run_job(&runtime, &deployer, &mut item, &target);
    assert_eq!(records(&server), [("1".into(), "deployed".into())]);

    // helm reads it and upgrades it in place (its ownership checks pass).
    let values = helm.ok(&["get", "values", "rel", "-n", "default", "-o", "json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&values).unwrap(),
        json!({"greeting": "hi"})
    );
    helm.ok(&[
        "upgrade",
        "rel",
        chart,
        "-n",
        "default",
        "--set",
        "greeting=helm",
    ]);
    assert_eq!(
        records(&server),
        [
            ("1".into(), "superseded".into()),
            ("2".into(), "deployed".into())
        ]
    );
    let cm = server.get("v1", "ConfigMap", "default", "rel-cm").unwrap();
    assert_eq!(cm["data"]["greeting"], "helm");

    // helm uninstall leaves nothing for the deployer: its delete is done at once.
    helm.ok(&["uninstall", "rel", "-n", "default"]);
    item.status.as_mut().unwrap().phase = Some(Phase::Succeeded);
    let deleted = runtime
        .block_on(deployer.delete(DeployRequest::new(&item, Some(&target))))
        .unwrap();
    assert_eq!(deleted, DeleteResult::Deleted);
    assert!(records(&server).is_empty());
}

/// The item's config with `helmDeploymentConfig.upgrade`.
fn with_upgrade_args(item: &mut DeployItem, values: Value, upgrade: Value) {
    let config = item.spec.config.as_mut().unwrap();
    config["values"] = values;
    config["helmDeploymentConfig"] = json!({"upgrade": upgrade});
}

/// One reconcile of a new job; its error.
fn failing_job(
    runtime: &tokio::runtime::Runtime,
    deployer: &HelmDeployer,
    item: &mut DeployItem,
    target: &Target,
) -> landscaper_deployers::DeployerError {
    item.status.as_mut().unwrap().phase = Some(Phase::Init);
    runtime
        .block_on(deployer.reconcile(DeployRequest::new(item, Some(target))))
        .expect_err("the upgrade fails")
}

#[test]
fn wait_fails_an_upgrade_whose_objects_never_get_ready_and_atomic_rolls_back() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let Some(helm) = Helm::new(&server) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    write_chart(manifests.path());
    let deployer = deployer(manifests.path());
    let target = target(&server);
    let mut item = item(json!({"greeting": "one"}));
    run_job(&runtime, &deployer, &mut item, &target);

    // wait: the Deployment never gets ready within 1s: revision 2 failed, 1 stays deployed.
    server.set_readiness(kube_test_server::Readiness::Never);
    with_upgrade_args(
        &mut item,
        json!({"greeting": "two", "replicas": 2}),
        json!({"wait": true, "timeout": "1s"}),
    );
    let error = failing_job(&runtime, &deployer, &mut item, &target);
    assert_eq!(
        (error.operation.as_str(), error.reason.as_str()),
        ("RealHelmDeployer.Deploy", "upgradeRelease")
    );
    assert!(
        error.message.starts_with("unable to upgrade helm chart release: Upgrade \"rel\" failed: context deadline exceeded: Deployment is not ready: default/rel-web.")
            && error.message.contains("rel-web"),
        "{}",
        error.message
    );
    assert_eq!(
        records(&server),
        [
            ("1".into(), "deployed".into()),
            ("2".into(), "failed".into())
        ]
    );
    let history = helm.ok(&["history", "rel", "-n", "default"]);
    assert!(
        history.contains("failed") && history.contains("context deadline exceeded"),
        "{history}"
    );
    server.set_readiness(kube_test_server::Readiness::After(
        std::time::Duration::from_millis(100),
    ));

    // atomic: the upgrade fails (the API server refuses the Deployment's patch once), the
    // release is rolled back to revision 1 as revision 4.
    server.fail_requests(
        kube_test_server::FaultRule::new(
            Some("PATCH"),
            "/apis/apps/v1/namespaces/default/deployments/rel-web",
            500,
        )
        .times(1),
    );
    with_upgrade_args(
        &mut item,
        json!({"greeting": "three", "replicas": 3}),
        json!({"atomic": true, "timeout": "30s"}),
    );
    let error = failing_job(&runtime, &deployer, &mut item, &target);
    assert!(
        error.message.starts_with("unable to upgrade helm chart release: release rel failed, and has been rolled back due to atomic being set: Upgrade \"rel\" failed: cannot patch \"rel-web\""),
        "{}",
        error.message
    );
    assert_eq!(
        records(&server),
        [
            ("1".into(), "superseded".into()),
            ("2".into(), "failed".into()),
            ("3".into(), "failed".into()),
            ("4".into(), "deployed".into())
        ]
    );
    let cm = server.get("v1", "ConfigMap", "default", "rel-cm").unwrap();
    assert_eq!(
        cm["data"],
        json!({"greeting": "one", "revision": "1"}),
        "rolled back"
    );
    let status = helm.ok(&["status", "rel", "-n", "default"]);
    assert!(
        status.contains("REVISION: 4") && status.contains("STATUS: deployed"),
        "{status}"
    );
    let history = helm.ok(&["history", "rel", "-n", "default"]);
    assert!(history.contains("Rollback to 1"), "{history}");
}

#[test]
fn a_target_failing_mid_upgrade_leaves_no_pending_or_duplicate_revision() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    write_chart(manifests.path());
    let deployer = deployer(manifests.path());
    let target = target(&server);
    let mut item = item(json!({"greeting": "one"}));
    run_job(&runtime, &deployer, &mut item, &target);

    // The API server refuses every write of revision 2's record after its creation: the
    // upgrade fails, its pending record is removed (Landscaper's unblockPendingHelmRelease).
    server.fail_requests(kube_test_server::FaultRule::new(
        Some("PUT"),
        "/api/v1/namespaces/default/secrets/sh.helm.release.v1.rel.v2",
        500,
    ));
    item.spec.config.as_mut().unwrap()["values"] = json!({"greeting": "two"});
    let error = failing_job(&runtime, &deployer, &mut item, &target);
    assert_eq!(
        (error.operation.as_str(), error.reason.as_str()),
        ("RealHelmDeployer.Deploy", "upgradeRelease")
    );
    assert!(error.is_retryable(), "{error:?}");
    assert!(
        error.message.contains("sh.helm.release.v1.rel.v2")
            || error.message.contains("release rel"),
        "{}",
        error.message
    );
    assert_eq!(records(&server), [("1".into(), "deployed".into())]);

    // Back to normal: the retry makes revision 2, once.
    server.clear_faults();
    let result = run_job(&runtime, &deployer, &mut item, &target);
    assert_eq!(result.phase, Some(Phase::Succeeded));
    assert_eq!(
        records(&server),
        [
            ("1".into(), "superseded".into()),
            ("2".into(), "deployed".into())
        ]
    );
    assert_eq!(
        server.get("v1", "ConfigMap", "default", "rel-cm").unwrap()["data"]["greeting"],
        "two"
    );
}

#[test]
fn a_sidecar_injected_on_the_cluster_survives_an_upgrade() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    write_chart(manifests.path());
    let deployer = deployer(manifests.path());
    let target = target(&server);
    let mut item = item(json!({"greeting": "hi"}));
    run_job(&runtime, &deployer, &mut item, &target);

    // Someone injects a sidecar; the upgrade (a strategic merge patch, as Helm sends) changes
    // the chart's container and keeps the sidecar.
    let mut injected = server
        .get("apps/v1", "Deployment", "default", "rel-web")
        .unwrap();
    injected["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "sidecar", "image": "proxy:1"}));
    runtime.block_on(async {
        use landscaper_deployers::kubernetes::ClusterClient as _;
        let client = landscaper_deployers::kubernetes::KubeClusterClient::from_kubeconfig(
            &server.kubeconfig(),
        )
        .await
        .unwrap();
        client.update(&injected).await.unwrap();
    });
    item.spec.config.as_mut().unwrap()["values"] = json!({"greeting": "hi", "image": "nginx:1.27"});
    run_job(&runtime, &deployer, &mut item, &target);
    let web = server
        .get("apps/v1", "Deployment", "default", "rel-web")
        .unwrap();
    let containers: Vec<(&str, &str)> = web["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["image"].as_str().unwrap()))
        .collect();
    assert_eq!(containers, [("web", "nginx:1.27"), ("sidecar", "proxy:1")]);
    assert_eq!(
        records(&server),
        [
            ("1".into(), "superseded".into()),
            ("2".into(), "deployed".into())
        ]
    );
}

#[test]
fn a_chart_with_a_crd_and_its_custom_resource_installs_in_one_go() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    let chart = write_chart(manifests.path());
    std::fs::create_dir_all(chart.join("crds")).unwrap();
    std::fs::write(
        chart.join("crds/widgets.yaml"),
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}\n  scope: Namespaced\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
    )
    .unwrap();
    std::fs::write(
        chart.join("templates/widget.yaml"),
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {{ .Release.Name }}-widget\nspec:\n  size: 3\n",
    )
    .unwrap();
    let deployer = deployer(manifests.path());
    let target = target(&server);
    let mut item = item(json!({}));
    run_job(&runtime, &deployer, &mut item, &target);
    let widget = server
        .get("example.com/v1", "Widget", "default", "rel-widget")
        .expect("the custom resource");
    assert_eq!(widget["spec"]["size"], 3);
    assert!(
        server
            .get(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "",
                "widgets.example.com"
            )
            .is_some()
    );
    // Uninstall keeps the CRD (never deleted) and removes the custom resource.
    item.status.as_mut().unwrap().phase = Some(Phase::Succeeded);
    let deleted = runtime
        .block_on(deployer.delete(DeployRequest::new(&item, Some(&target))))
        .unwrap();
    assert_eq!(deleted, DeleteResult::Deleted);
    assert!(
        server
            .get("example.com/v1", "Widget", "default", "rel-widget")
            .is_none()
    );
    assert!(
        server
            .get(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "",
                "widgets.example.com"
            )
            .is_some()
    );
}

/// Replaces the demo chart's Deployment by one whose pods carry `annotations` (the test
/// server's `kube-test-server/ready` / `delay-ms`).
fn annotate_pods(chart: &Path, annotations: &str) {
    std::fs::write(
        chart.join("templates/deploy.yaml"),
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{{{ .Release.Name }}}}-web\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n      annotations: {annotations}\n    spec:\n      containers:\n        - name: web\n          image: nginx:1.25\n"),
    )
    .unwrap();
}

fn with_install_args(item: &mut DeployItem, install: Value) {
    item.spec.config.as_mut().unwrap()["helmDeploymentConfig"] = json!({"install": install});
}

#[test]
fn an_install_with_wait_returns_once_the_deployment_has_rolled_out() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    let chart = write_chart(manifests.path());
    // The pods get ready 700ms after they are created.
    annotate_pods(&chart, "{kube-test-server/delay-ms: \"700\"}");
    let deployer = deployer(manifests.path());
    let target = target(&server);
    let mut item = item(json!({}));
    with_install_args(&mut item, json!({"wait": true, "timeout": "30s"}));
    let started = std::time::Instant::now();
    runtime
        .block_on(deployer.reconcile(DeployRequest::new(&item, Some(&target))))
        .expect("the install waits and succeeds");
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(600),
        "waited for the pods: {:?}",
        started.elapsed()
    );
    // Right when the install returns, the new ReplicaSet has its pods ready (Helm's
    // `replicas - maxUnavailable`: 2 - 0 with the 25% defaults) and the release is deployed.
    let replica_sets = server.list_selected("apps/v1", "ReplicaSet", Some("default"), "app=web");
    assert_eq!(replica_sets.len(), 1);
    assert!(
        replica_sets[0]["status"]["readyReplicas"].as_i64() == Some(2),
        "{}",
        replica_sets[0]["status"]
    );
    assert_eq!(records(&server), [("1".into(), "deployed".into())]);
}

#[test]
fn an_install_whose_deployment_never_gets_ready_times_out_naming_it() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    let chart = write_chart(manifests.path());
    annotate_pods(&chart, "{kube-test-server/ready: never}");
    let deployer = deployer(manifests.path());
    let target = target(&server);

    // atomic: the failed install is uninstalled, no record and no object is left.
    let mut item = item(json!({}));
    with_install_args(&mut item, json!({"atomic": true, "timeout": "1s"}));
    let error = failing_job(&runtime, &deployer, &mut item, &target);
    assert_eq!(
        (error.operation.as_str(), error.reason.as_str()),
        ("RealHelmDeployer.Deploy", "installRelease")
    );
    assert!(
        error.message.starts_with("unable to install helm chart release: release rel failed, and has been uninstalled due to atomic being set: context deadline exceeded: Deployment is not ready: default/rel-web. 0 out of 2 expected pods are ready"),
        "{}",
        error.message
    );
    assert!(records(&server).is_empty(), "{:?}", records(&server));
    assert!(
        server
            .get("apps/v1", "Deployment", "default", "rel-web")
            .is_none()
    );
    assert!(server.get("v1", "ConfigMap", "default", "rel-cm").is_none());

    // wait: the release is recorded failed with the cause, the objects stay.
    with_install_args(&mut item, json!({"wait": true, "timeout": "1s"}));
    let error = failing_job(&runtime, &deployer, &mut item, &target);
    assert!(
        error.message.contains("context deadline exceeded: Deployment is not ready: default/rel-web. 0 out of 2 expected pods are ready"),
        "{}",
        error.message
    );
    assert_eq!(records(&server), [("1".into(), "failed".into())]);
    assert!(
        server
            .get("apps/v1", "Deployment", "default", "rel-web")
            .is_some()
    );
    if let Some(helm) = Helm::new(&server) {
        let history = helm.ok(&["history", "rel", "-n", "default"]);
        assert!(history.contains("context deadline exceeded"), "{history}");
    }
}

/// Adds hook Jobs to the demo chart: pre-install `pre-a` (weight 5, hook-succeeded) and
/// `pre-b` (weight -5, Helm's default policy), pre-upgrade `pre-up` (its outcome from
/// `.Values.preUpgrade`), post-upgrade `post-up` (before-hook-creation), each taking 300ms on
/// the server.
fn write_hook_chart(manifests: &Path) {
    let dir = write_chart(manifests);
    let job = |name: &str, event: &str, weight: i32, policy: &str, outcome: &str| {
        format!(
            "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{{{ .Release.Name }}}}-{name}\n  annotations:\n    helm.sh/hook: {event}\n    helm.sh/hook-weight: \"{weight}\"\n{policy}    kube-test-server/outcome: {outcome}\n    kube-test-server/delay-ms: \"300\"\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{{name: c, image: busybox}}]\n"
        )
    };
    let hooks = [
        job(
            "pre-a",
            "pre-install",
            5,
            "    helm.sh/hook-delete-policy: hook-succeeded\n",
            "Complete",
        ),
        job("pre-b", "pre-install", -5, "", "Complete"),
        job(
            "pre-up",
            "pre-upgrade",
            0,
            "",
            "{{ .Values.preUpgrade | default \"Complete\" }}",
        ),
        job(
            "post-up",
            "post-upgrade",
            0,
            "    helm.sh/hook-delete-policy: before-hook-creation\n",
            "Complete",
        ),
    ]
    .concat();
    std::fs::write(dir.join("templates/hooks.yaml"), hooks).unwrap();
}

/// Where the first request about the Job `name` comes in the server's log.
fn first_job_request(server: &TestServer, name: &str) -> usize {
    server
        .requests()
        .iter()
        .position(|r| r.path.ends_with(&format!("/jobs/{name}")))
        .unwrap_or_else(|| panic!("no request for Job {name}"))
}

fn job(server: &TestServer, name: &str) -> Option<Value> {
    server.get("batch/v1", "Job", "default", name)
}

fn release_record(
    server: &TestServer,
    revision: u32,
) -> landscaper_deployers::helm::release::model::Release {
    let secret = server
        .get(
            "v1",
            "Secret",
            "default",
            &format!("sh.helm.release.v1.rel.v{revision}"),
        )
        .unwrap_or_else(|| panic!("no record of revision {revision}"));
    codec::from_secret(&secret).unwrap()
}

#[test]
fn hook_jobs_of_the_deployers_release_run_in_weight_order_and_helm_shows_them() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let Some(helm) = Helm::new(&server) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    write_hook_chart(manifests.path());
    let deployer = deployer(manifests.path());
    let target = target(&server);
    let mut item = item(json!({"greeting": "one"}));
    run_job(&runtime, &deployer, &mut item, &target);

    // Weight -5 ran (and was waited for) before weight 5; the hook-succeeded Job is gone, the
    // other stays (deleted only before its next creation).
    assert!(
        first_job_request(&server, "rel-pre-b") < first_job_request(&server, "rel-pre-a"),
        "weight order"
    );
    assert!(job(&server, "rel-pre-a").is_none(), "hook-succeeded");
    let pre_b = job(&server, "rel-pre-b").expect("default policy keeps the Job");
    assert_eq!(pre_b["status"]["succeeded"], 1, "{pre_b}");
    assert!(job(&server, "rel-pre-up").is_none() && job(&server, "rel-post-up").is_none());
    let first = release_record(&server, 1);
    for hook in ["rel-pre-a", "rel-pre-b"] {
        let run = &first
            .hooks
            .iter()
            .find(|h| h.name == hook)
            .unwrap()
            .last_run;
        assert_eq!(
            serde_json::to_value(run).unwrap()["phase"],
            "Succeeded",
            "{hook}"
        );
        let took = run
            .completed_at
            .unwrap()
            .duration_since(run.started_at.unwrap());
        assert!(took.as_millis() >= 250, "{hook} was waited for: {took:?}");
    }
    let b = first.hooks.iter().find(|h| h.name == "rel-pre-b").unwrap();
    let a = first.hooks.iter().find(|h| h.name == "rel-pre-a").unwrap();
    assert!(b.last_run.completed_at <= a.last_run.started_at);

    // `helm get hooks` and `helm history` read them.
    let hooks = helm.ok(&["get", "hooks", "rel", "-n", "default"]);
    for name in ["rel-pre-a", "rel-pre-b", "rel-pre-up", "rel-post-up"] {
        assert!(hooks.contains(&format!("name: {name}")), "{hooks}");
    }
    assert!(
        hooks.contains("# Source: demo/templates/hooks.yaml"),
        "{hooks}"
    );

    // Upgrades run pre- and post-upgrade; before-hook-creation replaces the post-upgrade Job.
    item.spec.config.as_mut().unwrap()["values"] = json!({"greeting": "two"});
    run_job(&runtime, &deployer, &mut item, &target);
    let post_2 = job(&server, "rel-post-up").expect("post-upgrade Job");
    assert!(job(&server, "rel-pre-up").is_some());
    item.spec.config.as_mut().unwrap()["values"] = json!({"greeting": "three"});
    run_job(&runtime, &deployer, &mut item, &target);
    let post_3 = job(&server, "rel-post-up").expect("post-upgrade Job");
    assert_ne!(
        post_2["metadata"]["uid"], post_3["metadata"]["uid"],
        "replaced, not kept"
    );
    assert_eq!(
        records(&server),
        [
            ("1".into(), "superseded".into()),
            ("2".into(), "superseded".into()),
            ("3".into(), "deployed".into())
        ]
    );

    // A failing pre-upgrade Job: the item's error names the hook, the Job and the reason; the
    // new revision is failed (once), the objects stay at revision 3.
    item.spec.config.as_mut().unwrap()["values"] =
        json!({"greeting": "four", "preUpgrade": "Fail"});
    let error = failing_job(&runtime, &deployer, &mut item, &target);
    assert_eq!(
        (error.operation.as_str(), error.reason.as_str()),
        ("RealHelmDeployer.Deploy", "upgradeRelease")
    );
    for part in [
        "pre-upgrade hooks failed",
        "demo/templates/hooks.yaml",
        "rel-pre-up",
        "BackoffLimitExceeded",
    ] {
        assert!(error.message.contains(part), "{part}: {}", error.message);
    }
    assert_eq!(
        records(&server),
        [
            ("1".into(), "superseded".into()),
            ("2".into(), "superseded".into()),
            ("3".into(), "deployed".into()),
            ("4".into(), "failed".into())
        ]
    );
    assert_eq!(
        server.get("v1", "ConfigMap", "default", "rel-cm").unwrap()["data"]["greeting"],
        "three"
    );
    let history = helm.ok(&["history", "rel", "-n", "default", "-o", "json"]);
    let history: Vec<Value> = serde_json::from_str(&history).unwrap();
    assert_eq!(history.len(), 4, "{history:?}");
    let last = &history[3];
    assert_eq!(
        (&last["revision"], &last["status"]),
        (&json!(4), &json!("failed"))
    );
    assert!(
        last["description"]
            .as_str()
            .unwrap()
            .starts_with("Upgrade \"rel\" failed: pre-upgrade hooks failed: "),
        "{last}"
    );
    let failed = release_record(&server, 4);
    let pre_up = failed
        .hooks
        .iter()
        .find(|h| h.name == "rel-pre-up")
        .unwrap();
    assert_eq!(
        serde_json::to_value(&pre_up.last_run).unwrap()["phase"],
        "Failed"
    );
    // `helm` can still act on it: its own upgrade with a good hook makes revision 5.
    let chart = manifests.path().join("charts/demo");
    helm.ok(&[
        "upgrade",
        "rel",
        chart.to_str().unwrap(),
        "-n",
        "default",
        "--set",
        "greeting=five",
    ]);
    assert_eq!(
        records(&server).last(),
        Some(&("5".into(), "deployed".into()))
    );
}

#[test]
fn helm_rollback_runs_the_rollback_hooks_the_deployer_recorded_and_a_reconcile_converges() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let Some(helm) = Helm::new(&server) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    let dir = write_chart(manifests.path());
    std::fs::write(
        dir.join("templates/rollback-hooks.yaml"),
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-post-rb\n  annotations:\n    helm.sh/hook: post-rollback\n    kube-test-server/outcome: Complete\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox}]\n",
    )
    .unwrap();
    let deployer = deployer(manifests.path());
    let target = target(&server);
    let mut item = item(json!({"greeting": "one"}));
    run_job(&runtime, &deployer, &mut item, &target);
    item.spec.config.as_mut().unwrap()["values"] = json!({"greeting": "two"});
    run_job(&runtime, &deployer, &mut item, &target);
    assert!(
        job(&server, "rel-post-rb").is_none(),
        "install and upgrade do not run it"
    );

    // The user's `helm rollback` runs the post-rollback hook from the deployer's record.
    helm.ok(&["rollback", "rel", "1", "-n", "default", "--wait"]);
    let post_rb = job(&server, "rel-post-rb").expect("helm ran the recorded hook");
    let rolled_back = release_record(&server, 3);
    let hook = &rolled_back.hooks[0];
    assert_eq!(
        serde_json::to_value(&hook.last_run).unwrap()["phase"],
        "Succeeded"
    );
    assert_eq!(
        server.get("v1", "ConfigMap", "default", "rel-cm").unwrap()["data"]["greeting"],
        "one"
    );

    // The next reconcile converges to the item's state with a new revision; the upgrade does
    // not run the rollback hook again.
    run_job(&runtime, &deployer, &mut item, &target);
    assert_eq!(
        records(&server),
        [
            ("1".into(), "superseded".into()),
            ("2".into(), "superseded".into()),
            ("3".into(), "superseded".into()),
            ("4".into(), "deployed".into())
        ]
    );
    assert_eq!(
        server.get("v1", "ConfigMap", "default", "rel-cm").unwrap()["data"]["greeting"],
        "two"
    );
    assert_eq!(
        job(&server, "rel-post-rb").unwrap()["metadata"]["uid"],
        post_rb["metadata"]["uid"]
    );
    let history = helm.ok(&["history", "rel", "-n", "default"]);
    assert!(history.contains("Rollback to 1"), "{history}");
}

/// Landscaper retries a failing upgrade (every 5s until the item's timeout) with a new
/// `helm upgrade` each time (`RealHelmDeployer.Deploy` finds the release and upgrades it;
/// Helm's upgrade goes on top of the deployed revision, or of the failed one when none is
/// deployed, with the next revision number and `MaxHistory = 10`): each attempt is one failed
/// revision, numbers never repeat, the history stays at 10 with the deployed revision kept,
/// and once the cause is gone the next attempt deploys. `helm history` shows the same.
#[test]
fn failing_upgrade_attempts_are_new_revisions_within_the_history_limit() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let Some(helm) = Helm::new(&server) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    let chart = write_chart(manifests.path());
    let deployer = deployer(manifests.path());
    let target = target(&server);
    let mut item = item(json!({"greeting": "one"}));
    run_job(&runtime, &deployer, &mut item, &target);

    // The API server refuses every patch of the ConfigMap: twelve attempts, revisions 2..=13.
    server.fail_requests(kube_test_server::FaultRule::new(
        Some("PATCH"),
        "/api/v1/namespaces/default/configmaps/rel-cm",
        500,
    ));
    item.spec.config.as_mut().unwrap()["values"] = json!({"greeting": "two"});
    for attempt in 2..=13u32 {
        let error = failing_job(&runtime, &deployer, &mut item, &target);
        assert_eq!(
            (error.operation.as_str(), error.reason.as_str()),
            ("RealHelmDeployer.Deploy", "upgradeRelease")
        );
        assert!(error.is_retryable(), "{error:?}");
        assert!(
            error.message.starts_with(
                "unable to upgrade helm chart release: Upgrade \"rel\" failed: cannot patch \"rel-cm\" with kind ConfigMap"
            ),
            "attempt {attempt}: {}",
            error.message
        );
        let history = records(&server);
        let latest = history.iter().map(|(v, _)| v.parse::<u32>().unwrap()).max();
        assert_eq!(latest, Some(attempt), "{history:?}");
        assert!(history.len() <= 10, "{history:?}");
    }
    // Revision 1 stays deployed; the oldest failed ones made room (Helm's removeLeastRecent).
    let mut expected: Vec<(u32, String)> = vec![(1, "deployed".into())];
    expected.extend((5..=13).map(|v| (v, "failed".to_string())));
    let numbered = |records: Vec<(String, String)>| -> Vec<(u32, String)> {
        let mut n: Vec<(u32, String)> = records
            .into_iter()
            .map(|(v, s)| (v.parse().unwrap(), s))
            .collect();
        n.sort();
        n
    };
    assert_eq!(numbered(records(&server)), expected);
    let history = helm.ok(&[
        "history", "rel", "-n", "default", "--max", "20", "-o", "json",
    ]);
    let history: Value = serde_json::from_str(&history).unwrap();
    let shown: Vec<(u32, String)> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["revision"].as_u64().unwrap() as u32,
                h["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(shown, expected, "helm history");
    assert!(
        history[9]["description"]
            .as_str()
            .unwrap()
            .starts_with("Upgrade \"rel\" failed: cannot patch \"rel-cm\""),
        "{history}"
    );
    assert_eq!(
        server.get("v1", "ConfigMap", "default", "rel-cm").unwrap()["data"]["greeting"],
        "one"
    );

    // The cause is gone: the next attempt deploys revision 14 on top of revision 1.
    server.clear_faults();
    run_job(&runtime, &deployer, &mut item, &target);
    let mut expected: Vec<(u32, String)> = vec![(1, "superseded".into())];
    expected.extend((6..=13).map(|v| (v, "failed".to_string())));
    expected.push((14, "deployed".into()));
    assert_eq!(numbered(records(&server)), expected);
    assert_eq!(
        server.get("v1", "ConfigMap", "default", "rel-cm").unwrap()["data"],
        json!({"greeting": "two", "revision": "14"})
    );
    // And the real helm goes on from there.
    helm.ok(&[
        "upgrade",
        "rel",
        chart.to_str().unwrap(),
        "-n",
        "default",
        "--reuse-values",
        "--history-max",
        "10",
    ]);
    let status = helm.ok(&["status", "rel", "-n", "default"]);
    assert!(
        status.contains("REVISION: 15") && status.contains("STATUS: deployed"),
        "{status}"
    );
}

/// A failed install leaves revision 1 failed; Landscaper's next attempt finds the release and
/// upgrades it (Helm upgrades on top of the failed revision when none is deployed): revision 2.
#[test]
fn a_failed_install_is_retried_as_an_upgrade_on_top_of_the_failed_revision() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let Some(helm) = Helm::new(&server) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    write_chart(manifests.path());
    let deployer = deployer(manifests.path());
    let target = target(&server);
    let mut item = item(json!({"greeting": "one"}));
    server.fail_requests(
        kube_test_server::FaultRule::new(Some("POST"), "/api/v1/namespaces/default/services", 500)
            .times(1),
    );
    let error = failing_job(&runtime, &deployer, &mut item, &target);
    assert_eq!(
        (error.operation.as_str(), error.reason.as_str()),
        ("RealHelmDeployer.Deploy", "installRelease")
    );
    assert_eq!(records(&server), [("1".into(), "failed".into())]);

    let result = run_job(&runtime, &deployer, &mut item, &target);
    assert_eq!(result.phase, Some(Phase::Succeeded));
    assert_eq!(
        records(&server),
        [
            ("1".into(), "failed".into()),
            ("2".into(), "deployed".into())
        ]
    );
    let history = helm.ok(&["history", "rel", "-n", "default"]);
    assert!(
        history.contains("Upgrade complete") && history.contains("Release \"rel\" failed"),
        "{history}"
    );
    assert!(server.get("v1", "Service", "default", "rel-svc").is_some());
}

/// As Helm's `execHook` (`cfg.recordRelease`), the record shows a hook `Running` (the revision
/// still `pending-upgrade`) while its Job runs: `helm status -o json` sees it mid-upgrade,
/// then the hook `Succeeded` on the deployed revision.
#[test]
fn helm_sees_a_hook_running_while_the_deployer_waits_for_it() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let Some(helm) = Helm::new(&server) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    let dir = write_chart(manifests.path());
    std::fs::write(
        dir.join("templates/slow.yaml"),
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-slow\n  annotations:\n    helm.sh/hook: pre-upgrade\n    kube-test-server/outcome: Complete\n    kube-test-server/delay-ms: \"2500\"\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox}]\n",
    )
    .unwrap();
    let deployer = deployer(manifests.path());
    let target = target(&server);
    let mut item = item(json!({"greeting": "one"}));
    run_job(&runtime, &deployer, &mut item, &target);

    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            let mut seen = Vec::new();
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let (ok, out, _) = helm.run(&["status", "rel", "-n", "default", "-o", "json"]);
                if ok && let Ok(release) = serde_json::from_str::<Value>(&out) {
                    let phase = release["hooks"]
                        .as_array()
                        .and_then(|h| h.iter().find(|h| h["name"] == "rel-slow"))
                        .and_then(|h| h["last_run"]["phase"].as_str())
                        .unwrap_or_default()
                        .to_string();
                    seen.push((
                        release["version"].as_u64().unwrap_or_default(),
                        release["info"]["status"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        phase,
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            seen
        });
        item.spec.config.as_mut().unwrap()["values"] = json!({"greeting": "two"});
        run_job(&runtime, &deployer, &mut item, &target);
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        watcher.join().unwrap()
    });
    assert!(
        seen.contains(&(2, "pending-upgrade".into(), "Running".into())),
        "{seen:?}"
    );
    let record = release_record(&server, 2);
    let slow = record.hooks.iter().find(|h| h.name == "rel-slow").unwrap();
    assert_eq!(
        serde_json::to_value(&slow.last_run).unwrap()["phase"],
        "Succeeded"
    );
    assert_eq!(record.info.as_ref().unwrap().status.to_string(), "deployed");
}

/// kube's strategic merge patch sends `$retainKeys` for fields with the `retainKeys` strategy
/// (Deployment `strategy`, Pod `volumes`): switching to `Recreate` clears the defaulted
/// `rollingUpdate`, switching a volume's source drops the old one. The deployer's upgrade
/// leaves the same Deployment as `helm upgrade` does.
#[test]
fn an_upgrade_switching_strategy_and_volume_source_matches_helms() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let Some(helm) = Helm::new(&server) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    let dir = manifests.path().join("charts/demo");
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(dir.join("values.yaml"), "recreate: false\n").unwrap();
    std::fs::write(
        dir.join("templates/deploy.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n  replicas: 1\n  strategy:\n    type: {{ if .Values.recreate }}Recreate{{ else }}RollingUpdate{{ end }}\n  selector:\n    matchLabels: {app: {{ .Release.Name }}}\n  template:\n    metadata:\n      labels: {app: {{ .Release.Name }}}\n    spec:\n      containers:\n        - name: web\n          image: nginx\n      volumes:\n        - name: data\n{{- if .Values.recreate }}\n          hostPath: {path: /x}\n{{- else }}\n          emptyDir: {}\n{{- end }}\n",
    )
    .unwrap();
    let chart = dir.to_str().unwrap();
    // helm's release `mine`.
    helm.ok(&["install", "mine", chart, "-n", "default"]);
    helm.ok(&[
        "upgrade",
        "mine",
        chart,
        "-n",
        "default",
        "--set",
        "recreate=true",
    ]);
    // The deployer's release `rel`.
    let deployer = deployer(manifests.path());
    let target = target(&server);
    let mut item = item(json!({}));
    run_job(&runtime, &deployer, &mut item, &target);
    let installed = server
        .get("apps/v1", "Deployment", "default", "rel-web")
        .unwrap();
    assert!(
        installed["spec"]["strategy"]["rollingUpdate"].is_object(),
        "the server defaults rollingUpdate: {}",
        installed["spec"]["strategy"]
    );
    item.spec.config.as_mut().unwrap()["values"] = json!({"recreate": true});
    run_job(&runtime, &deployer, &mut item, &target);

    let theirs = server
        .get("apps/v1", "Deployment", "default", "mine-web")
        .unwrap();
    let ours = server
        .get("apps/v1", "Deployment", "default", "rel-web")
        .unwrap();
    assert_eq!(ours["spec"]["strategy"], json!({"type": "Recreate"}));
    assert_eq!(ours["spec"]["strategy"], theirs["spec"]["strategy"]);
    assert_eq!(
        ours["spec"]["template"]["spec"]["volumes"][0]["hostPath"]["path"],
        "/x"
    );
    assert_eq!(
        ours["spec"]["template"]["spec"]["volumes"],
        theirs["spec"]["template"]["spec"]["volumes"]
    );
    assert!(
        ours["spec"]["template"]["spec"]["volumes"][0]
            .get("emptyDir")
            .is_none(),
        "{}",
        ours["spec"]["template"]["spec"]["volumes"]
    );
}

/// A `helm upgrade` killed mid-wait leaves its revision `pending-upgrade`. As Landscaper: the
/// next attempt fails with Helm's "another operation is in progress" error and removes the
/// pending record (`unblockPendingHelmRelease`); the attempt after that upgrades, reusing the
/// removed revision's number (nothing else has it).
#[test]
fn a_pending_upgrade_left_by_a_killed_helm_blocks_one_attempt() {
    let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
    let Some(helm) = Helm::new(&server) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let manifests = tempfile::tempdir().unwrap();
    let chart = write_chart(manifests.path());
    let deployer = deployer(manifests.path());
    let target = target(&server);
    let mut item = item(json!({"greeting": "one"}));
    run_job(&runtime, &deployer, &mut item, &target);

    server.set_readiness(kube_test_server::Readiness::Never);
    let home = helm.home.path();
    let mut child = Command::new(&helm.bin)
        .args([
            "upgrade",
            "rel",
            chart.to_str().unwrap(),
            "-n",
            "default",
            "--reuse-values",
            "--set",
            "replicas=2",
            "--wait",
            "--timeout",
            "60s",
        ])
        .env("KUBECONFIG", home.join("kubeconfig"))
        .env("HOME", home)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while records(&server)
        != [
            ("1".into(), "deployed".into()),
            ("2".into(), "pending-upgrade".into()),
        ]
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            records(&server)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    server.set_readiness(kube_test_server::Readiness::After(
        std::time::Duration::from_millis(100),
    ));

    item.spec.config.as_mut().unwrap()["values"] = json!({"greeting": "two"});
    let error = failing_job(&runtime, &deployer, &mut item, &target);
    assert!(
        error.message.contains(
            "another operation (install/upgrade/rollback) is in progress: release rel revision 2 in namespace default is pending-upgrade"
        ),
        "{}",
        error.message
    );
    assert_eq!(records(&server), [("1".into(), "deployed".into())]);

    run_job(&runtime, &deployer, &mut item, &target);
    assert_eq!(
        records(&server),
        [
            ("1".into(), "superseded".into()),
            ("2".into(), "deployed".into())
        ]
    );
    let status = helm.ok(&["status", "rel", "-n", "default"]);
    assert!(
        status.contains("REVISION: 2") && status.contains("STATUS: deployed"),
        "{status}"
    );
}
