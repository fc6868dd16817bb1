//! The `helm` variants of acceptance scenarios 01, 02, 12 and 14 (part A) in `../shared/acceptance`, each
//! run twice: unmodified (real Helm releases, `helmDeployment` defaulting to true), and with
//! `helmDeployment: false` injected into every helm provider configuration (manifest-only
//! mode). The charts (`chart.archive.raw`, the guided tour's hello-world 1.0.0) are rendered
//! in-process and deployed to the workspace's Kubernetes test API server, where the objects
//! (and, for releases, the Helm release records) are checked. The scenarios' oracles
//! (`expected/helm.step-N.yaml`) are not compared.

use std::time::Duration;

use landscaper_e2e::acceptance::{
    DEPENDS_ON_ANNOTATION, Job, Res, Scenario, annotation, describe_installation, last_error,
    phase_of, str_at, uid_of, want,
};
use serde_json::{Value, json};

const STEP: Duration = Duration::from_secs(90);
const HELM_TYPE: &str = "landscaper.gardener.cloud/helm";
const HELM_LABEL: &str = "helm.deployer.landscaper.gardener.cloud/deployitem";

/// How the scenario's helm items deploy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Unmodified: real Helm releases.
    Release,
    /// `helmDeployment: false` injected.
    ManifestOnly,
}

impl Mode {
    fn apply_step(self, s: &mut Scenario, n: usize) {
        match self {
            Mode::Release => s.apply_step(n),
            Mode::ManifestOnly => s.apply_step_rewritten(n, manifest_only),
        }
    }
}

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
/// (manifest-only: policy manage, and the Namespace with policy keep; release: no policy, as
/// Landscaper lists a release's objects).
fn check_helm_item(
    mode: Mode,
    s: &mut Scenario,
    item: &str,
    di: Option<&Value>,
    target: &str,
    namespace: &str,
    name: &str,
) {
    s.with(
        &match mode {
            Mode::ManifestOnly => format!("DeployItem {item}: helm, target {target}, Succeeded, managedResources ConfigMap {namespace}/{name} (manage) and Namespace {namespace} (keep)"),
            Mode::Release => format!("DeployItem {item}: helm, target {target}, Succeeded, managedResources ConfigMap {namespace}/{name} (no policy), no Namespace"),
        },
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
            let has = |kind: &str, ns: &str, n: &str, policy: Option<&str>| {
                managed.iter().any(|r| {
                    r["resource"]["kind"] == kind
                        && r["resource"]["namespace"].as_str().unwrap_or_default() == ns
                        && r["resource"]["name"] == n
                        && r["policy"].as_str() == policy
                })
            };
            let ok = match mode {
                Mode::ManifestOnly => {
                    has("ConfigMap", namespace, name, Some("manage"))
                        && has("Namespace", "", namespace, Some("keep"))
                }
                Mode::Release => {
                    has("ConfigMap", namespace, name, None)
                        && !managed.iter().any(|r| r["resource"]["kind"] == "Namespace")
                }
            };
            if !ok {
                return Err(format!("providerStatus {status}"));
            }
            Ok(())
        },
    );
}

/// A row: ConfigMap `namespace/name` on the cluster has `data` and the helm deployer's label
/// (manifest-only) or Helm's ownership metadata of `release` (release), and for a release a
/// row about its record: one revision, deployed.
fn check_config_map(
    mode: Mode,
    s: &mut Scenario,
    release: &str,
    namespace: &str,
    name: &str,
    data: &Value,
) {
    let found = s
        .cluster
        .as_ref()
        .and_then(|c| c.core(namespace, "configmaps", name));
    s.with(
        &match mode {
            Mode::ManifestOnly => format!(
                "cluster: ConfigMap {namespace}/{name} data == {data}, labelled by the helm deployer"
            ),
            Mode::Release => format!(
                "cluster: ConfigMap {namespace}/{name} data == {data}, owned by Helm release {release}"
            ),
        },
        found.as_ref(),
        |cm| {
            if cm["data"] != *data {
                return Err(format!("data {}", cm["data"]));
            }
            let labels = &cm["metadata"]["labels"];
            let owned = match mode {
                Mode::ManifestOnly => labels[HELM_LABEL].as_str().is_some_and(|v| !v.is_empty()),
                Mode::Release => {
                    labels["app.kubernetes.io/managed-by"] == "Helm"
                        && cm["metadata"]["annotations"]["meta.helm.sh/release-name"] == release
                        && cm["metadata"]["annotations"]["meta.helm.sh/release-namespace"]
                            == namespace
                }
            };
            if !owned {
                return Err(format!("metadata {}", cm["metadata"]));
            }
            Ok(())
        },
    );
    if mode == Mode::Release {
        let records = s
            .cluster
            .as_ref()
            .and_then(|c| {
                c.get(&format!(
                    "/api/v1/namespaces/{namespace}/secrets?labelSelector=owner%3Dhelm%2Cname%3D{release}"
                ))
            })
            .map(|l| l["items"].clone());
        s.with(
            &format!("cluster: Helm release record sh.helm.release.v1.{release}.v1 in {namespace}, deployed"),
            records.as_ref(),
            |items| {
                let found: Vec<(&str, &str, &str)> = items
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|i| {
                        (
                            str_at(i, "/metadata/name"),
                            str_at(i, "/type"),
                            str_at(i, "/metadata/labels/status"),
                        )
                    })
                    .collect();
                let wanted = format!("sh.helm.release.v1.{release}.v1");
                (found == [(wanted.as_str(), "helm.sh/release.v1", "deployed")])
                    .then_some(())
                    .ok_or_else(|| format!("records {found:?}"))
            },
        );
    }
}

#[test]
fn scenario_01_single_deployitem_helm() {
    scenario_01(Mode::ManifestOnly);
}

#[test]
fn scenario_01_single_deployitem_helm_release() {
    scenario_01(Mode::Release);
}

fn scenario_01(mode: Mode) {
    let Some(mut s) = Scenario::start("01", "helm") else {
        return;
    };
    mode.apply_step(&mut s, 1);
    s.settle(&[want("hello-world", "Succeeded", Job::New)], STEP);
    let inst = s.must("hello-world");
    s.check_installation(&inst, "Succeeded");
    s.check_execution_refs(&inst, &["default-deploy-item"]);
    let di = s.deploy_item(&inst, "default-deploy-item");
    check_helm_item(
        mode,
        &mut s,
        "default-deploy-item",
        di.as_ref(),
        "my-cluster",
        "acc-01",
        "hello-world",
    );
    check_config_map(
        mode,
        &mut s,
        "hello-world",
        "acc-01",
        "hello-world",
        &json!({"testData": "hello"}),
    );
    s.finish();
}

#[test]
fn scenario_02_multiple_deployitems_dependson_helm() {
    scenario_02(Mode::ManifestOnly);
}

#[test]
fn scenario_02_multiple_deployitems_dependson_helm_release() {
    scenario_02(Mode::Release);
}

fn scenario_02(mode: Mode) {
    let Some(mut s) = Scenario::start("02", "helm") else {
        return;
    };
    mode.apply_step(&mut s, 1);
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
        check_helm_item(mode, &mut s, item, di.as_ref(), target, namespace, name);
        s.with(
            &format!("DeployItem {item}: annotation dependsOn {depends:?}"),
            di.as_ref(),
            |d| {
                (annotation(d, DEPENDS_ON_ANNOTATION) == Some(depends))
                    .then_some(())
                    .ok_or_else(|| format!("annotations {}", d["metadata"]["annotations"]))
            },
        );
        check_config_map(
            mode,
            &mut s,
            name,
            namespace,
            name,
            &json!({ "testData": data }),
        );
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
    scenario_12(Mode::ManifestOnly);
}

#[test]
fn scenario_12_timeouts_pickup_interrupt_helm_release() {
    scenario_12(Mode::Release);
}

fn scenario_12(mode: Mode) {
    let Some(mut s) = Scenario::start("12", "helm") else {
        return;
    };
    mode.apply_step(&mut s, 1);
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

    mode.apply_step(&mut s, 2);
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
        mode,
        &mut s,
        "default-deploy-item",
        di.as_ref(),
        "my-cluster",
        "acc-12",
        "hello-world",
    );
    check_config_map(
        mode,
        &mut s,
        "hello-world",
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
fn scenario_14_upgrade_helm() {
    scenario_14(Mode::ManifestOnly);
}

#[test]
fn scenario_14_upgrade_helm_release() {
    scenario_14(Mode::Release);
}

/// Part A: hello-world 1.0.0 (a ConfigMap), then 1.0.1 (a Secret instead): the ConfigMap is
/// deleted, the same deploy item carries on (for a release: revision 2, 1 superseded).
fn scenario_14(mode: Mode) {
    let Some(mut s) = Scenario::start("14", "helm") else {
        return;
    };
    mode.apply_step(&mut s, 1);
    s.settle(&[want("hello-world", "Succeeded", Job::New)], STEP);
    let inst = s.must("hello-world");
    s.check_installation(&inst, "Succeeded");
    let di = s.deploy_item(&inst, "default-deploy-item");
    check_helm_item(
        mode,
        &mut s,
        "default-deploy-item",
        di.as_ref(),
        "my-cluster",
        "acc-14",
        "hello-world",
    );
    check_config_map(
        mode,
        &mut s,
        "hello-world",
        "acc-14",
        "hello-world",
        &json!({"testData": "hello"}),
    );
    let first_uid = di
        .as_ref()
        .map(|d| uid_of(d).to_string())
        .unwrap_or_default();

    mode.apply_step(&mut s, 2);
    s.settle(&[want("hello-world", "Succeeded", Job::New)], STEP);
    let inst = s.must("hello-world");
    s.check_installation(&inst, "Succeeded");
    let di = s.deploy_item(&inst, "default-deploy-item");
    s.with(
        "DeployItem default-deploy-item: the same object, Succeeded",
        di.as_ref(),
        |d| {
            (uid_of(d) == first_uid && phase_of(d) == "Succeeded")
                .then_some(())
                .ok_or_else(|| describe_installation(d))
        },
    );
    let secret = s
        .cluster
        .as_ref()
        .and_then(|c| c.core("acc-14", "secrets", "hello-world"));
    s.with(
        "cluster: Secret acc-14/hello-world {testData: hello}",
        secret.as_ref(),
        |secret| {
            (secret["data"]["testData"] == "aGVsbG8=")
                .then_some(())
                .ok_or_else(|| format!("data {}", secret["data"]))
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
    if mode == Mode::Release {
        let records = s.cluster.as_ref().and_then(|c| {
            c.get(
                "/api/v1/namespaces/acc-14/secrets?labelSelector=owner%3Dhelm%2Cname%3Dhello-world",
            )
        });
        s.with(
            "cluster: release hello-world revision 1 superseded, revision 2 deployed",
            records.as_ref(),
            |list| {
                let mut found: Vec<(String, String)> = list["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|i| {
                        (
                            str_at(i, "/metadata/labels/version").to_string(),
                            str_at(i, "/metadata/labels/status").to_string(),
                        )
                    })
                    .collect();
                found.sort();
                (found
                    == [
                        ("1".to_string(), "superseded".to_string()),
                        ("2".to_string(), "deployed".to_string()),
                    ])
                .then_some(())
                .ok_or_else(|| format!("records {found:?}"))
            },
        );
    }
    s.finish();
}
