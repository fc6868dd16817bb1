//! The `helm` variants of acceptance scenarios 01, 02, 12 and 14 (part A, the only part of its
//! helm variant) in `../shared/acceptance`, with
//! `helmDeployment: false` injected into every helm provider configuration (a documented test
//! adaptation until real Helm releases are supported): the charts (`chart.archive.raw`, the
//! guided tour's hello-world 1.0.0) are rendered in-process and applied to the workspace's
//! Kubernetes test API server, where the objects are checked. The scenarios' oracles
//! (`expected/helm.step-N.yaml`) are not compared: they hold the unmodified configurations.

use std::time::Duration;

use landscaper_e2e::acceptance::{
    DEPENDS_ON_ANNOTATION, Job, Res, Scenario, annotation, describe_installation, last_error,
    phase_of, str_at, uid_of, want,
};
use serde_json::{Value, json};

const STEP: Duration = Duration::from_secs(90);
const HELM_TYPE: &str = "landscaper.gardener.cloud/helm";
const HELM_LABEL: &str = "helm.deployer.landscaper.gardener.cloud/deployitem";

/// Adds `helmDeployment: false` after each helm provider configuration's `apiVersion` line,
/// indented alike.
fn manifest_only(_name: &str, content: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8_lossy(&content);
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        out.push_str(line);
        if line.trim() == "apiVersion: helm.deployer.landscaper.gardener.cloud/v1alpha1" {
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

fn has_code(obj: &Value, code: &str) -> bool {
    obj.pointer("/status/lastError/codes")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c == code))
}

#[test]
fn scenario_12_timeouts_pickup_interrupt_helm() {
    let Some(mut s) = Scenario::start("12", "helm") else {
        return;
    };
    s.apply_step_rewritten(1, manifest_only);
    // hello-world's chart URL is unreachable: a recoverable error until the item's 30 s timeout.
    s.settle(
        &[
            want("hello-world", "Failed", Job::New),
            want("dummy-installation", "Failed", Job::New),
            want("interrupt-me", "Progressing", Job::New),
        ],
        Duration::from_secs(120),
    );
    let hello = s.must("hello-world");
    s.check_installation(&hello, "Failed");
    let waited = s.recorder.first(Res::Installation, "hello-world", |e| {
        phase_of(&e.object) == "Progressing" && last_error(&e.object).contains("not finished")
    });
    s.ok(
        "hello-world: first Progressing with lastError \"… is not finished yet\"",
        waited.is_some(),
        || "never seen".to_string(),
    );
    let di = s.deploy_item(&hello, "default-deploy-item");
    s.with(
        "hello-world: DeployItem Failed, reason ProgressingTimeout, codes ∋ ERR_TIMEOUT, message \"timeout at: …\" with the unreachable chart as the cause",
        di.as_ref(),
        |d| {
            (phase_of(d) == "Failed"
                && str_at(d, "/status/lastError/reason") == "ProgressingTimeout"
                && has_code(d, "ERR_TIMEOUT")
                && last_error(d).starts_with("timeout at: \"")
                && last_error(d).contains("127.0.0.1:9"))
            .then_some(())
            .ok_or_else(|| describe_installation(d))
        },
    );
    let dummy = s.must("dummy-installation");
    s.check_installation(&dummy, "Failed");
    let di = s.deploy_item(&dummy, "main");
    s.with(
        "dummy-installation: DeployItem main Failed, reason PickupTimeout, codes ∋ ERR_TIMEOUT",
        di.as_ref(),
        |d| {
            (phase_of(d) == "Failed"
                && str_at(d, "/status/lastError/reason") == "PickupTimeout"
                && has_code(d, "ERR_TIMEOUT")
                && last_error(d).contains("no deployer has reconciled this deployitem within"))
            .then_some(())
            .ok_or_else(|| describe_installation(d))
        },
    );
    let interrupt = s.must("interrupt-me");
    s.ok(
        "interrupt-me: still Progressing",
        phase_of(&interrupt) == "Progressing",
        || describe_installation(&interrupt),
    );
    let dummy_job = str_at(&dummy, "/status/jobID").to_string();

    s.apply_step_rewritten(2, manifest_only);
    s.settle(
        &[
            want("hello-world", "Succeeded", Job::New),
            want("interrupt-me", "Failed", Job::Any),
            want("dummy-installation", "Failed", Job::Same),
        ],
        STEP,
    );
    let hello = s.must("hello-world");
    s.check_installation(&hello, "Succeeded");
    let di = s.deploy_item(&hello, "default-deploy-item");
    check_helm_item(
        &mut s,
        "default-deploy-item",
        di.as_ref(),
        "my-cluster",
        "acc-12",
        "hello-world",
    );
    check_config_map(
        &mut s,
        "acc-12",
        "hello-world",
        &json!({"testData": "hello"}),
    );
    let interrupt = s.must("interrupt-me");
    s.check_installation(&interrupt, "Failed");
    let di = s.deploy_item(&interrupt, "default-deploy-item");
    s.with(
        "interrupt-me: DeployItem Failed, lastError InterruptOperation",
        di.as_ref(),
        |d| {
            (phase_of(d) == "Failed"
                && str_at(d, "/status/lastError/reason") == "InterruptOperation"
                && last_error(d).contains("operation was interrupted"))
            .then_some(())
            .ok_or_else(|| describe_installation(d))
        },
    );
    let dummy = s.must("dummy-installation");
    s.ok(
        "dummy-installation: unchanged, Failed",
        phase_of(&dummy) == "Failed" && str_at(&dummy, "/status/jobID") == dummy_job,
        || describe_installation(&dummy),
    );
    s.finish();
}

#[test]
fn scenario_14_upgrade_part_a_helm() {
    let Some(mut s) = Scenario::start("14", "helm") else {
        return;
    };
    // Step 1: hello-world 1.0.0 deploys a ConfigMap.
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
        "acc-14",
        "hello-world",
    );
    check_config_map(
        &mut s,
        "acc-14",
        "hello-world",
        &json!({"testData": "hello"}),
    );
    let first_uid = di
        .as_ref()
        .map(|d| uid_of(d).to_string())
        .unwrap_or_default();

    // Step 2: the new spec (hello-world 1.0.1) deploys a Secret instead; the ConfigMap goes.
    s.apply_step_rewritten(2, manifest_only);
    s.settle(&[want("hello-world", "Succeeded", Job::New)], STEP);
    let inst = s.must("hello-world");
    s.check_installation(&inst, "Succeeded");
    s.ok(
        "hello-world: observedGeneration 2",
        inst.pointer("/status/observedGeneration") == Some(&json!(2)),
        || describe_installation(&inst),
    );
    let di = s.deploy_item(&inst, "default-deploy-item");
    s.with(
        "DeployItem default-deploy-item: the same object as in step 1, Succeeded, managedResources Secret acc-14/hello-world (manage), no ConfigMap",
        di.as_ref(),
        |d| {
            if uid_of(d) != first_uid {
                return Err(format!("uid {} != {first_uid}", uid_of(d)));
            }
            if phase_of(d) != "Succeeded" {
                return Err(format!("phase {}, lastError {}", phase_of(d), d["status"]["lastError"]));
            }
            let managed = d["status"]["providerStatus"]["managedResources"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let kinds: Vec<(&str, &str, &str)> = managed
                .iter()
                .map(|r| {
                    (
                        r["resource"]["kind"].as_str().unwrap_or_default(),
                        r["resource"]["name"].as_str().unwrap_or_default(),
                        r["policy"].as_str().unwrap_or_default(),
                    )
                })
                .collect();
            (kinds.contains(&("Secret", "hello-world", "manage"))
                && !kinds.iter().any(|(k, _, _)| *k == "ConfigMap"))
            .then_some(())
            .ok_or_else(|| format!("managedResources {kinds:?}"))
        },
    );
    let secret = s
        .cluster
        .as_ref()
        .and_then(|c| c.core("acc-14", "secrets", "hello-world"));
    s.with(
        "cluster: Secret acc-14/hello-world with testData: hello, labelled by the helm deployer",
        secret.as_ref(),
        |secret| {
            // stringData is stored as base64 data.
            if secret["data"]["testData"] != "aGVsbG8=" {
                return Err(format!("data {}", secret["data"]));
            }
            if secret["metadata"]["labels"][HELM_LABEL]
                .as_str()
                .is_none_or(str::is_empty)
            {
                return Err(format!("labels {}", secret["metadata"]["labels"]));
            }
            Ok(())
        },
    );
    let config_map = s
        .cluster
        .as_ref()
        .and_then(|c| c.core("acc-14", "configmaps", "hello-world"));
    s.ok(
        "cluster: ConfigMap acc-14/hello-world deleted",
        config_map.is_none(),
        || format!("{config_map:?}"),
    );
    s.finish();
}
