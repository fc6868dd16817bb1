//! The helm deployer (manifest-only mode; real releases in `release_tests.rs`) end to end against the in-memory cluster, with a
//! chart in a manifests folder (`local://charts/NAME`).

use std::path::Path;
use std::sync::Arc;

use landscaper_model::constants::ERR_CONFIGURATION_PROBLEM;
use landscaper_model::{DeployItemStatus, ObjectMeta, Phase, Target};
use serde_json::json;

use super::*;
use crate::kubernetes::{ClusterClient, FakeCluster, ObjectRef};

struct OneCluster(Arc<FakeCluster>);

impl ClientFactory for OneCluster {
    fn client<'a>(
        &'a self,
        _target: Option<&'a Target>,
    ) -> BoxFuture<'a, Result<Arc<dyn ClusterClient>, DeployerError>> {
        let client: Arc<dyn ClusterClient> = self.0.clone();
        Box::pin(async move { Ok(client) })
    }
}

pub(super) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// A chart `charts/demo` in `manifests`: a ConfigMap without a namespace, named after the
/// release, holding `.Values.greeting`; `templates/broken.yaml` fails when `.Values.fail`.
pub(super) fn write_chart(manifests: &Path) {
    let dir = manifests.join("charts/demo");
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: demo\nversion: 0.1.0\nappVersion: \"1.2\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("values.yaml"), "greeting: hello\nfail: false\n").unwrap();
    std::fs::write(
        dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  chart: {{ .Chart.Name }}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("templates/broken.yaml"),
        "{{- if .Values.fail }}{{ fail \"greeting is not allowed\" }}{{ end }}\n",
    )
    .unwrap();
}

pub(super) fn deployer(cluster: &Arc<FakeCluster>, manifests: &Path) -> HelmDeployer {
    let sources = ChartSources::new(
        Arc::new(landscaper_sources::http::HyperTransport::new()),
        None,
        landscaper_sources::SourcesConfig::default(),
    );
    HelmDeployer::new(sources)
        .with_client_factory(Arc::new(OneCluster(cluster.clone())))
        .with_manifests_dir(manifests.to_path_buf())
}

pub(super) fn item(config: Value) -> DeployItem {
    let mut item = DeployItem {
        metadata: ObjectMeta::namespaced("demo", "my-item"),
        ..Default::default()
    };
    item.spec.r#type = HELM_DEPLOYER_TYPE.into();
    item.spec.config = Some(config);
    item.status = Some(DeployItemStatus {
        phase: Some(Phase::Init),
        ..Default::default()
    });
    item
}

pub(super) fn config(extra: Value) -> Value {
    let mut base = json!({
        "apiVersion": config::V1ALPHA1,
        "kind": "ProviderConfiguration",
        "name": "rel",
        "namespace": "apps",
        "chart": {"ref": "local://charts/demo"},
        "helmDeployment": false,
    });
    if let (Value::Object(base), Value::Object(extra)) = (&mut base, extra) {
        base.extend(extra);
    }
    base
}

#[test]
fn a_chart_is_rendered_applied_exported_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    write_chart(dir.path());
    let cluster = Arc::new(FakeCluster::new());
    let deployer = deployer(&cluster, dir.path());
    let mut item = item(config(json!({
        "createNamespace": true,
        "values": {"greeting": "hi"},
        "exports": {"exports": [
            {"key": "greeting", "jsonPath": ".Values.greeting"},
            {"key": "release.name", "jsonPath": ".Release.Name"},
            {"key": "chartVersion", "jsonPath": ".Chart.version"},
            {"key": "fromCluster", "jsonPath": ".data.chart",
             "fromResource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "rel-cm", "namespace": "apps"}},
        ]},
    })));
    let result = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(result.phase, Some(Phase::Succeeded), "{result:?}");

    // The ConfigMap lands in the release namespace with the helm deployer's label.
    let cm = cluster
        .object(&ObjectRef::new("v1", "ConfigMap", "apps", "rel-cm"))
        .expect("ConfigMap applied");
    assert_eq!(cm["data"]["greeting"], "hi");
    assert_eq!(cm["data"]["chart"], "demo");
    assert_eq!(
        cm["metadata"]["labels"][MANAGED_DEPLOY_ITEM_LABEL],
        "my-item"
    );
    let ns = ObjectRef::new("v1", "Namespace", "", "apps");
    assert!(cluster.object(&ns).is_some(), "createNamespace");

    let status = result.provider_status.clone().unwrap();
    assert_eq!(status["apiVersion"], config::V1ALPHA1);
    assert_eq!(status["kind"], "ProviderStatus");
    let managed = status["managedResources"].as_array().unwrap();
    let namespace_entry = managed
        .iter()
        .find(|m| m["resource"]["kind"] == "Namespace")
        .expect("the namespace is managed");
    assert_eq!(namespace_entry["policy"], "keep");
    assert_eq!(
        result.export,
        Some(
            json!({"greeting": "hi", "release": {"name": "rel"}, "chartVersion": "0.1.0",
            "fromCluster": "demo"})
        )
    );

    // Delete: the ConfigMap goes, the namespace (keep) stays.
    item.status.as_mut().unwrap().provider_status = Some(status);
    item.status.as_mut().unwrap().phase = Some(Phase::Succeeded);
    let deleted = block_on(deployer.delete(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(deleted, DeleteResult::Deleted);
    assert!(
        cluster
            .object(&ObjectRef::new("v1", "ConfigMap", "apps", "rel-cm"))
            .is_none()
    );
    assert!(cluster.object(&ns).is_some(), "policy keep");
}

#[test]
fn render_failures_and_missing_charts_name_the_chart_and_cause() {
    let dir = tempfile::tempdir().unwrap();
    write_chart(dir.path());
    let cluster = Arc::new(FakeCluster::new());
    let deployer = deployer(&cluster, dir.path());

    let failing = item(config(json!({"values": {"fail": true}})));
    let error = block_on(deployer.reconcile(DeployRequest::new(&failing, None))).unwrap_err();
    assert!(error.has_code(ERR_CONFIGURATION_PROBLEM), "{error:?}");
    assert_eq!(error.reason, "RenderHelmValues");
    assert!(
        error.message.contains("local://charts/demo")
            && error.message.contains("greeting is not allowed"),
        "{}",
        error.message
    );

    let missing = item(config(json!({"chart": {"ref": "local://charts/nothing"}})));
    let error = block_on(deployer.reconcile(DeployRequest::new(&missing, None))).unwrap_err();
    assert_eq!(error.reason, "GetHelmChart");
    assert!(
        error.message.contains("local://charts/nothing"),
        "{}",
        error.message
    );

    let corrupt = item(config(
        json!({"chart": {"archive": {"raw": "bm90IGEgY2hhcnQ="}}}),
    ));
    let error = block_on(deployer.reconcile(DeployRequest::new(&corrupt, None))).unwrap_err();
    assert_eq!(error.reason, "GetHelmChart");
    assert!(
        error.message.contains("archive.raw") && error.message.contains("not a valid chart"),
        "{}",
        error.message
    );
    assert!(cluster.objects().is_empty(), "nothing applied");
}
