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

/// Component charts from a map key → chart; records the repository contexts asked with.
struct FakeComponentCharts {
    charts: Vec<(String, Vec<u8>)>,
    asked: std::sync::Mutex<Vec<Option<Value>>>,
}

impl components::ComponentCharts for FakeComponentCharts {
    fn chart_by_resource_key<'a>(
        &'a self,
        key: &'a str,
        repository_context: Option<&'a Value>,
        _pull_secrets: &'a [SecretData],
    ) -> BoxFuture<'a, Result<components::ComponentChart, components::ComponentChartError>> {
        self.asked.lock().unwrap().push(repository_context.cloned());
        let found = self.charts.iter().find(|(k, _)| k == key).cloned();
        Box::pin(async move {
            match found {
                Some((k, tgz)) => Ok(components::ComponentChart {
                    tgz,
                    origin: format!("resource {k}"),
                    from_cache: true,
                }),
                None => Err(components::ComponentChartError {
                    message: format!("component example.com/app:1.0.0: resource {key:?} not found"),
                    retryable: false,
                }),
            }
        })
    }
}

#[test]
fn resource_ref_charts_come_from_component_charts_with_the_contexts_repository() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Arc::new(FakeCluster::new());
    let charts = Arc::new(FakeComponentCharts {
        charts: vec![("S0VZ".into(), demo_chart_tgz())],
        asked: Default::default(),
    });
    let deployer = deployer(&cluster, dir.path()).with_component_charts(charts.clone());
    let repo = json!({"type": "ociRegistry", "baseUrl": "127.0.0.1:5000"});
    let context = crate::DeployContext {
        repository_context: Some(repo.clone()),
        ..crate::DeployContext::empty("landscaper-examples")
    };
    let item = item(config(json!({"chart": {"resourceRef": "S0VZ"}})));
    let mut request = DeployRequest::new(&item, None);
    request.context = &context;
    let result = block_on(deployer.reconcile(request)).unwrap();
    assert_eq!(result.phase, Some(Phase::Succeeded), "{result:?}");
    assert_eq!(*charts.asked.lock().unwrap(), vec![Some(repo)]);

    // An unknown key: a configuration problem naming the resource.
    let item = self::item(config(json!({"chart": {"resourceRef": "T1RIRVI="}})));
    let mut request = DeployRequest::new(&item, None);
    request.context = &context;
    let err = block_on(deployer.reconcile(request)).unwrap_err();
    assert!(
        err.message.contains(
            "chart.resourceRef: component example.com/app:1.0.0: resource \"T1RIRVI=\" not found"
        ),
        "{err:?}"
    );
    assert!(err.has_code(ERR_CONFIGURATION_PROBLEM), "{err:?}");
}

/// The `.tgz` of the chart [`write_chart`] writes, as a component resource holds it.
fn demo_chart_tgz() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    write_chart(dir.path());
    let mut builder = tar::Builder::new(Vec::new());
    builder
        .append_dir_all("demo", dir.path().join("charts/demo"))
        .unwrap();
    let tar = builder.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &tar).unwrap();
    gz.finish().unwrap()
}
