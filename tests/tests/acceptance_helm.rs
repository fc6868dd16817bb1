//! The `helm` variants of acceptance scenarios 01 and 02 in `../shared/acceptance`, with
//! `helmDeployment: false` injected into every helm provider configuration (a documented test
//! adaptation until real Helm releases are supported): the charts (`chart.archive.raw`, the
//! guided tour's hello-world 1.0.0) are rendered in-process and applied to the workspace's
//! Kubernetes test API server, where the objects are checked. The scenarios' oracles
//! (`expected/helm.step-N.yaml`) are not compared: they hold the unmodified configurations.

use std::time::Duration;

use landscaper_e2e::acceptance::{
    DEPENDS_ON_ANNOTATION, Job, Scenario, annotation, phase_of, str_at, want,
};
use serde_json::{Value, json};

const STEP: Duration = Duration::from_secs(90);
const HELM_TYPE: &str = "landscaper.gardener.cloud/helm";
const HELM_LABEL: &str = "helm.deployer.landscaper.gardener.cloud/deployitem";

/// Adds `helmDeployment: false` after each `kind: ProviderConfiguration` line, indented alike.
fn manifest_only(_name: &str, content: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8_lossy(&content);
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        out.push_str(line);
        if line.trim() == "kind: ProviderConfiguration" {
            let indent: String = line.chars().take_while(|c| *c == ' ').collect();
            out.push_str(&format!("{indent}helmDeployment: false\n"));
        }
    }
    out.into_bytes()
}

/// Rows about a helm deploy item: type, target, Succeeded, a managed ConfigMap `namespace/name`
/// with policy manage, and the Namespace with policy keep.
fn check_helm_item(
    s: &mut Scenario,
    item: &str,
    di: Option<&Value>,
    target: &str,
    namespace: &str,
    name: &str,
) {
    s.with(
        &format!("DeployItem {item}: helm, target {target}, Succeeded, managedResources ConfigMap {namespace}/{name} (manage) and Namespace {namespace} (keep)"),
        di,
        |d| {
            if str_at(d, "/spec/type") != HELM_TYPE {
                return Err(format!("spec.type {}", d["spec"]["type"]));
            }
            if str_at(d, "/spec/target/name") != target {
                return Err(format!("spec.target {}", d["spec"]["target"]));
            }
            if phase_of(d) != "Succeeded" {
                return Err(format!("phase {}, lastError {}", phase_of(d), d["status"]["lastError"]));
            }
            let status = &d["status"]["providerStatus"];
            if status["apiVersion"] != "helm.deployer.landscaper.gardener.cloud/v1alpha1" {
                return Err(format!("providerStatus {status}"));
            }
            let managed = status["managedResources"].as_array().cloned().unwrap_or_default();
            let has = |kind: &str, ns: &str, n: &str, policy: &str| {
                managed.iter().any(|r| {
                    r["resource"]["kind"] == kind
                        && r["resource"]["namespace"].as_str().unwrap_or_default() == ns
                        && r["resource"]["name"] == n
                        && r["policy"] == policy
                })
            };
            if !has("ConfigMap", namespace, name, "manage") || !has("Namespace", "", namespace, "keep") {
                return Err(format!("providerStatus {status}"));
            }
            Ok(())
        },
    );
}

/// A row: ConfigMap `namespace/name` on the cluster has `data` and the helm deployer's label.
fn check_config_map(s: &mut Scenario, namespace: &str, name: &str, data: &Value) {
    let found = s
        .cluster
        .as_ref()
        .and_then(|c| c.core(namespace, "configmaps", name));
    s.with(
        &format!(
            "cluster: ConfigMap {namespace}/{name} data == {data}, labelled by the helm deployer"
        ),
        found.as_ref(),
        |cm| {
            if cm["data"] != *data {
                return Err(format!("data {}", cm["data"]));
            }
            if cm["metadata"]["labels"][HELM_LABEL]
                .as_str()
                .is_none_or(str::is_empty)
            {
                return Err(format!("labels {}", cm["metadata"]["labels"]));
            }
            Ok(())
        },
    );
}

#[test]
fn scenario_01_single_deployitem_helm() {
    let Some(mut s) = Scenario::start("01", "helm") else {
        return;
    };
    s.apply_step_rewritten(1, manifest_only);
    s.settle(&[want("hello-world", "Succeeded", Job::New)], STEP);
    let inst = s.must("hello-world");
    s.check_installation(&inst, "Succeeded");
    s.check_execution_refs(&inst, &["default-deploy-item"]);
    let di = s.deploy_item(&inst, "default-deploy-item");
    check_helm_item(
        &mut s,
        "default-deploy-item",
        di.as_ref(),
        "my-cluster",
        "acc-01",
        "hello-world",
    );
    check_config_map(
        &mut s,
        "acc-01",
        "hello-world",
        &json!({"testData": "hello"}),
    );
    s.finish();
}

#[test]
fn scenario_02_multiple_deployitems_dependson_helm() {
    let Some(mut s) = Scenario::start("02", "helm") else {
        return;
    };
    s.apply_step_rewritten(1, manifest_only);
    s.settle(&[want("hello-world", "Succeeded", Job::New)], STEP);
    let inst = s.must("hello-world");
    s.check_installation(&inst, "Succeeded");
    s.check_execution_refs(&inst, &["deploy-item-1", "deploy-item-2"]);
    let di1 = s.deploy_item(&inst, "deploy-item-1");
    let di2 = s.deploy_item(&inst, "deploy-item-2");
    for (di, item, target, depends, namespace, name, data) in [
        (
            &di1,
            "deploy-item-1",
            "my-cluster-1",
            "",
            "acc-02-1",
            "hello-world-1",
            "foo",
        ),
        (
            &di2,
            "deploy-item-2",
            "my-cluster-2",
            "deploy-item-1",
            "acc-02-2",
            "hello-world-2",
            "bar",
        ),
    ] {
        check_helm_item(&mut s, item, di.as_ref(), target, namespace, name);
        s.with(
            &format!("DeployItem {item}: annotation dependsOn {depends:?}"),
            di.as_ref(),
            |d| {
                (annotation(d, DEPENDS_ON_ANNOTATION) == Some(depends))
                    .then_some(())
                    .ok_or_else(|| format!("annotations {}", d["metadata"]["annotations"]))
            },
        );
        check_config_map(&mut s, namespace, name, &json!({ "testData": data }));
    }
    s.check_item_order(&inst, "deploy-item-2", &["deploy-item-1"]);
    s.finish();
}
