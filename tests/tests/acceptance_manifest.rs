//! The `manifest` variants of the acceptance scenarios in `../shared/acceptance`: the real
//! binary and folder, deploy items of type `landscaper.gardener.cloud/kubernetes-manifest`, and
//! the workspace's Kubernetes test API server as the target cluster (the scenarios' `*.yaml.tpl`
//! Targets rendered with its kubeconfig). Each test checks the appliance's state and the
//! objects in the cluster against EXPECTED.md, and the rendered deploy items against
//! `expected/manifest.step-N.yaml`.

use std::time::Duration;

use landscaper_e2e::acceptance::{Job, Scenario, annotation, phase_of, str_at, want};
use serde_json::{Value, json};

/// Manifest steps wait for the cluster's (simulated) readiness as well.
const STEP: Duration = Duration::from_secs(60);

const MANIFEST_TYPE: &str = "landscaper.gardener.cloud/kubernetes-manifest";

/// Checks a ConfigMap in the scenario's cluster.
fn check_config_map(s: &mut Scenario, namespace: &str, name: &str, data: &Value) {
    let found = s
        .cluster
        .as_ref()
        .and_then(|c| c.core(namespace, "configmaps", name));
    s.with(
        &format!("cluster: ConfigMap {namespace}/{name} data == {data}"),
        found.as_ref(),
        |cm| {
            (cm["data"] == *data)
                .then_some(())
                .ok_or_else(|| format!("data {}", cm["data"]))
        },
    );
}

#[test]
fn scenario_01_single_deployitem_manifest() {
    let Some(mut s) = Scenario::start("01", "manifest") else {
        return;
    };
    s.apply_step(1);
    s.settle(&[want("hello-world", "Succeeded", Job::New)], STEP);
    let inst = s.must("hello-world");
    s.check_installation(&inst, "Succeeded");
    s.check_execution_refs(&inst, &["default-deploy-item"]);
    let di = s.deploy_item(&inst, "default-deploy-item");
    s.with(
        "DeployItem default-deploy-item: kubernetes-manifest, target my-cluster, Succeeded, deployer-type annotation, managedResources",
        di.as_ref(),
        |d| {
            if str_at(d, "/spec/type") != MANIFEST_TYPE {
                return Err(format!("spec.type {}", d["spec"]["type"]));
            }
            if str_at(d, "/spec/target/name") != "my-cluster" {
                return Err(format!("spec.target {}", d["spec"]["target"]));
            }
            if phase_of(d) != "Succeeded" {
                return Err(format!("phase {}, lastError {}", phase_of(d), d["status"]["lastError"]));
            }
            if annotation(d, "landscaper.gardener.cloud/deployer-type") != Some(MANIFEST_TYPE) {
                return Err(format!("annotations {}", d["metadata"]["annotations"]));
            }
            let managed = &d["status"]["providerStatus"]["managedResources"];
            let configmap = managed
                .as_array()
                .and_then(|m| m.iter().find(|r| r["resource"]["kind"] == "ConfigMap"));
            match configmap {
                Some(r) if r["resource"]["name"] == "hello-world"
                    && r["resource"]["namespace"] == "acc-01"
                    && r["policy"] == "manage" => Ok(()),
                _ => Err(format!("providerStatus {}", d["status"]["providerStatus"])),
            }
        },
    );
    check_config_map(
        &mut s,
        "acc-01",
        "hello-world",
        &json!({"testData": "hello"}),
    );
    s.check_oracle(1);
    s.finish();
}
