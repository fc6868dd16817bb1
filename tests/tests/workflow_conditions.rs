//! End-to-end: the workflow conditions of issue 19 on deploy items, with the real daemon, the
//! mock and manifest deployers and kube-test-server as the target cluster.
//!
//! * an optional monitoring item activated only when its CRD exists on the target, which
//!   appears after the CRD is created;
//! * a feature flag (an import of the Installation, rendered into the items' reconcile
//!   precondition) that turns a subtree of items on, off (deleted in reverse order) and on again;
//! * a delete postcondition that waits for a namespace to be gone (a finalizer in it keeps it
//!   terminating);
//! * `ContinueIndependent` finishing the independent branch of a diamond whose other branch
//!   fails, with the aggregated error.

use std::time::Duration;

use landscaper_appliance::commands::client::Client;
use landscaper_e2e::cluster::{Cluster, TOKEN};
use landscaper_e2e::{Daemon, eventually};
use serde_json::{Value, json};

const LS: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e";
const TIMEOUT: Duration = Duration::from_secs(90);

fn items(daemon: &Daemon, plural: &str) -> Vec<Value> {
    daemon
        .get_json(&format!("{LS}/{plural}"))
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
}

/// The deploy item of template `name`, if it exists.
fn deploy_item(daemon: &Daemon, name: &str) -> Option<Value> {
    items(daemon, "deployitems")
        .into_iter()
        .find(|di| di["metadata"]["labels"]["execution.landscaper.gardener.cloud/name"] == name)
}

fn object(daemon: &Daemon, plural: &str, name: &str) -> Option<Value> {
    daemon.get_json(&format!("{LS}/{plural}/{name}"))
}

fn phase(o: &Value) -> &str {
    o["status"]["phase"].as_str().unwrap_or_default()
}

fn condition<'a>(o: &'a Value, ty: &str) -> Option<&'a Value> {
    o["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
}

/// A manifest deploy item template (indented for a standalone Execution's `deployItems`).
fn manifest_item(name: &str, depends_on: &[&str], appliance: &str, manifest: &str) -> String {
    let manifest: String = manifest
        .lines()
        .map(|l| format!("          {l}\n"))
        .collect();
    let depends = if depends_on.is_empty() {
        String::new()
    } else {
        format!("    dependsOn: [{}]\n", depends_on.join(", "))
    };
    format!(
        "  - name: {name}
    type: landscaper.gardener.cloud/kubernetes-manifest
    target:
      name: cluster
      namespace: e2e
{depends}{appliance}    config:
      apiVersion: manifest.deployer.landscaper.gardener.cloud/v1alpha2
      kind: ProviderConfiguration
      updateStrategy: update
      manifests:
      - policy: manage
        manifest:
{manifest}"
    )
}

fn execution(name: &str, annotation: &str, items: &[String]) -> String {
    format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Execution
metadata:
  name: {name}
  namespace: e2e
{annotation}spec:
  deployItems:
{}",
        items.concat()
    )
}

#[test]
fn an_optional_monitoring_item_appears_once_its_crd_exists_on_the_target() {
    let cluster = Cluster::start("100ms");
    cluster.create_namespace("wf");
    let daemon = Daemon::start();
    daemon.write("target.yaml", &cluster.target_manifest());
    let app = manifest_item(
        "app",
        &[],
        "",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: wf\ndata:\n  k: v\n",
    );
    let monitoring = manifest_item(
        "monitoring",
        &["app"],
        "    appliance:\n      activationCondition:\n        crdPresent: servicemonitors.monitoring.coreos.com\n",
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: app\n  namespace: wf\nspec:\n  endpoints: []\n",
    );
    daemon.write("exec.yaml", &execution("mon", "", &[app, monitoring]));

    let exec = eventually(TIMEOUT, "the execution succeeds without monitoring", || {
        object(&daemon, "executions", "mon").filter(|e| phase(e) == "Succeeded")
    });
    assert!(cluster.core("wf", "configmaps", "app").is_some());
    assert!(
        deploy_item(&daemon, "monitoring").is_none(),
        "inactive: not created"
    );
    let c = condition(&exec, "monitoring/ActivationCondition").expect("recorded");
    assert_eq!(c["status"], "False", "{c}");
    assert_eq!(c["reason"], "ConditionNotMet");
    assert!(
        c["message"]
            .as_str()
            .unwrap_or_default()
            .contains("servicemonitors.monitoring.coreos.com is not present"),
        "{c}"
    );

    // The CRD appears on the target: the item is activated and its object deployed.
    cluster.create(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
            "spec": {
                "group": "monitoring.coreos.com",
                "scope": "Namespaced",
                "names": {"plural": "servicemonitors", "singular": "servicemonitor", "kind": "ServiceMonitor", "listKind": "ServiceMonitorList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
            }
        }),
    );
    eventually(TIMEOUT, "the ServiceMonitor on the target", || {
        cluster.grouped("monitoring.coreos.com/v1", "wf", "servicemonitors", "app")
    });
    let di = eventually(TIMEOUT, "the monitoring item succeeded", || {
        deploy_item(&daemon, "monitoring").filter(|d| phase(d) == "Succeeded")
    });
    let c = condition(&di, "ActivationCondition").expect("on the item too");
    assert_eq!(c["status"], "True", "{c}");
    // Each transition of the condition is an event of the Execution.
    let events: Vec<String> = daemon
        .get_json("/api/v1/namespaces/e2e/events")
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|e| {
            e["involvedObject"]["kind"] == "Execution"
                && e["involvedObject"]["name"] == "mon"
                && e["reason"] == "ActivationCondition"
                && e["type"] == "Normal"
        })
        .filter_map(|e| e["message"].as_str().map(str::to_string))
        .collect();
    assert!(
        events
            .iter()
            .any(|m| m.contains("monitoring/ActivationCondition False"))
            && events
                .iter()
                .any(|m| m.contains("monitoring/ActivationCondition True")),
        "{events:?}"
    );
    let exec = eventually(TIMEOUT, "the execution succeeds with monitoring", || {
        object(&daemon, "executions", "mon").filter(|e| {
            phase(e) == "Succeeded"
                && condition(e, "monitoring/ActivationCondition")
                    .is_some_and(|c| c["status"] == "True")
        })
    });
    assert!(exec["status"]["lastError"].is_null() || phase(&exec) == "Succeeded");
}

const MONITORED_INSTALLATION: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: monitored
  namespace: e2e
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  imports:
    targets:
      - name: cluster
        target: cluster
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchema: "https://json-schema.org/draft/2019-09/schema"
          imports:
            - name: cluster
              type: target
              targetType: landscaper.gardener.cloud/kubernetes-cluster
          deployExecutions:
            - name: default
              type: GoTemplate
              template: |
                deployItems:
                  - name: app
                    type: landscaper.gardener.cloud/kubernetes-manifest
                    target:
                      import: cluster
                    config:
                      apiVersion: manifest.deployer.landscaper.gardener.cloud/v1alpha2
                      kind: ProviderConfiguration
                      manifests:
                        - policy: manage
                          manifest:
                            apiVersion: v1
                            kind: ConfigMap
                            metadata: {name: app, namespace: wf}
                  - name: monitoring
                    type: landscaper.gardener.cloud/kubernetes-manifest
                    dependsOn: [app]
                    target:
                      import: cluster
                    appliance:
                      activationCondition:
                        crdPresent: servicemonitors.monitoring.coreos.com
                    config:
                      apiVersion: manifest.deployer.landscaper.gardener.cloud/v1alpha2
                      kind: ProviderConfiguration
                      manifests:
                        - policy: manage
                          manifest:
                            apiVersion: monitoring.coreos.com/v1
                            kind: ServiceMonitor
                            metadata: {name: app, namespace: wf}
                            spec: {endpoints: []}
"#;

fn service_monitor_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
        "spec": {
            "group": "monitoring.coreos.com",
            "scope": "Namespaced",
            "names": {"plural": "servicemonitors", "singular": "servicemonitor", "kind": "ServiceMonitor", "listKind": "ServiceMonitorList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    })
}

#[test]
fn an_installations_monitoring_item_appears_once_its_crd_exists_on_the_target() {
    let cluster = Cluster::start("100ms");
    cluster.create_namespace("wf");
    let daemon = Daemon::start();
    daemon.write("target.yaml", &cluster.target_manifest());
    daemon.write("inst.yaml", MONITORED_INSTALLATION);
    eventually(
        TIMEOUT,
        "the installation succeeds without monitoring",
        || object(&daemon, "installations", "monitored").filter(|i| phase(i) == "Succeeded"),
    );
    assert!(cluster.core("wf", "configmaps", "app").is_some());
    assert!(deploy_item(&daemon, "monitoring").is_none());

    // The CRD appears: the Execution asks its Installation for a new job, which deploys it.
    cluster.create(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &service_monitor_crd(),
    );
    eventually(TIMEOUT, "the ServiceMonitor on the target", || {
        cluster.grouped("monitoring.coreos.com/v1", "wf", "servicemonitors", "app")
    });
    eventually(TIMEOUT, "the installation succeeds with monitoring", || {
        object(&daemon, "installations", "monitored")
            .filter(|i| phase(i) == "Succeeded")
            .filter(|_| {
                deploy_item(&daemon, "monitoring").is_some_and(|d| phase(&d) == "Succeeded")
            })
    });
}

/// An Installation whose blueprint renders three mock items `base <- feature <- addon`; the
/// feature subtree carries the precondition `imports.flag`'s value, rendered from the import.
fn flag_installation(flag: bool) -> String {
    format!(
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: flagged
  namespace: e2e
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  importDataMappings:
    flag: {flag}
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchema: "https://json-schema.org/draft/2019-09/schema"
          imports:
            - name: flag
              schema:
                type: boolean
          deployExecutions:
            - name: default
              type: GoTemplate
              template: |
                deployItems:
                  - name: base
                    type: landscaper.gardener.cloud/mock
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
                  - name: feature
                    type: landscaper.gardener.cloud/mock
                    dependsOn: [base]
                    appliance:
                      reconcilePrecondition: "{{{{ .imports.flag }}}}"
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
                  - name: addon
                    type: landscaper.gardener.cloud/mock
                    dependsOn: [feature]
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
"#
    )
}

/// The names of the deploy item templates whose deletion events the daemon lists, in order.
fn deletion_order(
    daemon: &Daemon,
    names: &std::collections::BTreeMap<String, String>,
) -> Vec<String> {
    daemon
        .get_json("/api/v1/namespaces/e2e/events")
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|e| e["involvedObject"]["kind"] == "DeployItem" && e["reason"] == "Deleted")
        .filter_map(|e| names.get(e["involvedObject"]["name"].as_str()?).cloned())
        .collect()
}

#[test]
fn a_feature_flag_turns_a_subtree_on_off_in_reverse_order_and_on_again() {
    let daemon = Daemon::start();
    daemon.write("inst.yaml", &flag_installation(true));
    let all_succeeded = |daemon: &Daemon| {
        object(daemon, "installations", "flagged").filter(|i| phase(i) == "Succeeded")
    };
    eventually(
        TIMEOUT,
        "the installation succeeds with the feature",
        || {
            all_succeeded(&daemon)
                .filter(|_| deploy_item(&daemon, "addon").is_some_and(|d| phase(&d) == "Succeeded"))
        },
    );
    let names: std::collections::BTreeMap<String, String> = ["feature", "addon"]
        .iter()
        .filter_map(|n| {
            let di = deploy_item(&daemon, n)?;
            Some((di["metadata"]["name"].as_str()?.to_string(), n.to_string()))
        })
        .collect();
    assert_eq!(names.len(), 2);

    // Off: the subtree goes, addon before feature; base stays.
    daemon.write("inst.yaml", &flag_installation(false));
    eventually(TIMEOUT, "the subtree deleted", || {
        (deploy_item(&daemon, "feature").is_none()
            && deploy_item(&daemon, "addon").is_none()
            && object(&daemon, "installations", "flagged")
                .is_some_and(|i| phase(&i) == "Succeeded"))
        .then_some(())
    });
    assert!(deploy_item(&daemon, "base").is_some());
    assert_eq!(deletion_order(&daemon, &names), vec!["addon", "feature"]);
    let exec = items(&daemon, "executions").pop().expect("the execution");
    let c = condition(&exec, "feature/ReconcilePrecondition").expect("recorded");
    assert_eq!(c["status"], "False", "{c}");

    // On again.
    daemon.write("inst.yaml", &flag_installation(true));
    eventually(TIMEOUT, "the subtree back", || {
        deploy_item(&daemon, "addon").filter(|d| phase(d) == "Succeeded")
    });
    assert!(deploy_item(&daemon, "feature").is_some_and(|d| phase(&d) == "Succeeded"));
}

#[test]
fn a_delete_postcondition_waits_for_the_namespace_to_be_gone() {
    let cluster = Cluster::start("100ms");
    cluster.create_namespace("keep");
    let daemon = Daemon::start();
    daemon.write("target.yaml", &cluster.target_manifest());
    // `ns` (depending on `holder`) creates the namespace with policy keep: deleting the item
    // leaves the namespace to something else (here the test) to remove. Its delete
    // postcondition holds the deletion of `holder` until the namespace is gone.
    let holder = manifest_item(
        "holder",
        &[],
        "",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: holder\n  namespace: keep\ndata:\n  k: v\n",
    );
    let ns = manifest_item(
        "ns",
        &["holder"],
        "    appliance:\n      deletePostcondition: \"!has(objects.Namespace)\"\n",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gone-ns\n",
    )
    .replace("policy: manage", "policy: keep");
    daemon.write("exec.yaml", &execution("nsdel", "", &[holder, ns]));
    eventually(TIMEOUT, "the execution succeeds", || {
        object(&daemon, "executions", "nsdel").filter(|e| phase(e) == "Succeeded")
    });
    assert!(cluster.get("/api/v1/namespaces/gone-ns").is_some());

    std::fs::remove_file(daemon.manifests.join("exec.yaml")).expect("remove the file");
    eventually(TIMEOUT, "the ns item gone", || {
        deploy_item(&daemon, "ns").is_none().then_some(())
    });
    // The namespace is still there: the holder waits.
    std::thread::sleep(Duration::from_secs(3));
    assert!(deploy_item(&daemon, "holder").is_some());
    assert!(cluster.core("keep", "configmaps", "holder").is_some());
    let exec = object(&daemon, "executions", "nsdel").expect("still deleting");
    let c = condition(&exec, "ns/DeletePostcondition").expect("recorded");
    assert_eq!(c["status"], "False", "{c}");
    assert_eq!(phase(&exec), "Deleting");

    // The namespace goes (terminating for a moment in the test server): then the holder.
    let client = Client::new(&cluster.url).expect("client").with_token(TOKEN);
    client
        .delete("/api/v1/namespaces/gone-ns")
        .expect("delete the namespace");
    eventually(TIMEOUT, "the execution gone", || {
        object(&daemon, "executions", "nsdel")
            .is_none()
            .then_some(())
    });
    assert!(cluster.get("/api/v1/namespaces/gone-ns").is_none());
    assert!(cluster.core("keep", "configmaps", "holder").is_none());
}

fn mock_item(name: &str, depends_on: &[&str], fail: bool) -> String {
    let depends = if depends_on.is_empty() {
        String::new()
    } else {
        format!("    dependsOn: [{}]\n", depends_on.join(", "))
    };
    let phase = if fail { "      phase: Failed\n" } else { "" };
    format!(
        "  - name: {name}
    type: landscaper.gardener.cloud/mock
{depends}    config:
      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
      kind: ProviderConfiguration
{phase}"
    )
}

#[test]
fn continue_independent_finishes_the_independent_branch_of_a_failing_diamond() {
    let daemon = Daemon::start();
    // a <- (left, right) <- join; left fails; `solo` depends on nothing; `after-right` on right.
    let items = [
        mock_item("a", &[], false),
        mock_item("left", &["a"], true),
        mock_item("right", &["a"], false),
        mock_item("after-right", &["right"], false),
        mock_item("join", &["left", "right"], false),
    ];
    let annotation = "  annotations:\n    landscaper-appliance.io/workflow: \"failurePolicy: ContinueIndependent\"\n";
    daemon.write("exec.yaml", &execution("diamond", annotation, &items));
    let exec = eventually(TIMEOUT, "the execution fails", || {
        object(&daemon, "executions", "diamond").filter(|e| phase(e) == "Failed")
    });
    let message = exec["status"]["lastError"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("1 dependent failed: left:"), "{message}");
    // The independent branch ran to the end; what depends on the failed item did not.
    assert_eq!(
        deploy_item(&daemon, "after-right").map(|d| phase(&d).to_string()),
        Some("Succeeded".to_string())
    );
    let join = deploy_item(&daemon, "join");
    assert!(
        join.as_ref().is_none_or(|d| phase(d) != "Succeeded"),
        "{join:?}"
    );
}

/// An Installation importing the DataObject `flag`, whose blueprint renders the mock items
/// `base <- feature <- addon`; `feature` carries the literal precondition
/// `imports.flag == true`, evaluated over the Installation's import values (not rendered).
const IMPORTED_FLAG_INSTALLATION: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: imported
  namespace: e2e
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  imports:
    data:
      - name: flag
        dataRef: flag
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchema: "https://json-schema.org/draft/2019-09/schema"
          imports:
            - name: flag
              schema:
                type: boolean
          deployExecutions:
            - name: default
              type: GoTemplate
              template: |
                deployItems:
                  - name: base
                    type: landscaper.gardener.cloud/mock
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
                  - name: feature
                    type: landscaper.gardener.cloud/mock
                    dependsOn: [base]
                    appliance:
                      reconcilePrecondition: "imports.flag == true"
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
                  - name: addon
                    type: landscaper.gardener.cloud/mock
                    dependsOn: [feature]
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
"#;

fn flag_object(on: bool) -> String {
    format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata: {{name: flag, namespace: e2e}}\ndata: {on}\n"
    )
}

#[test]
fn an_items_precondition_reads_the_installations_import() {
    // Issue 19, open point 1: `imports` in a deploy item's expression are the owning
    // Installation's import values (before, `{}`: the expression failed the job).
    let daemon = Daemon::start();
    daemon.write("10-flag.yaml", &flag_object(true));
    daemon.write("20-inst.yaml", IMPORTED_FLAG_INSTALLATION);
    let inst = eventually(
        TIMEOUT,
        "the installation succeeds with the feature",
        || {
            object(&daemon, "installations", "imported")
                .filter(|i| phase(i) == "Succeeded" || phase(i) == "Failed")
                .filter(|i| phase(i) == "Failed" || deploy_item(&daemon, "addon").is_some())
        },
    );
    assert_eq!(phase(&inst), "Succeeded", "{inst}");
    let exec = object(&daemon, "executions", "imported").expect("the execution");
    let c = condition(&exec, "feature/ReconcilePrecondition").expect("recorded");
    assert_eq!(c["status"], "True", "{c}");

    // The import turns false: the subtree goes, base stays, the condition says why.
    daemon.write("10-flag.yaml", &flag_object(false));
    eventually(TIMEOUT, "the flag off is stored", || {
        object(&daemon, "dataobjects", "flag").filter(|d| d["data"] == false)
    });
    let token = daemon.data.join("api-token");
    let out = daemon.cli(&[
        "reconcile",
        "imported",
        "-n",
        "e2e",
        "--token-file",
        &token.to_string_lossy(),
    ]);
    assert!(out.status.success(), "{out:?}");
    eventually(TIMEOUT, "the subtree deleted", || {
        (deploy_item(&daemon, "feature").is_none()
            && deploy_item(&daemon, "addon").is_none()
            && object(&daemon, "installations", "imported").is_some_and(|i| {
                phase(&i) == "Succeeded" && i["status"]["jobID"] == i["status"]["jobIDFinished"]
            }))
        .then_some(())
    });
    assert!(deploy_item(&daemon, "base").is_some());
    let exec = object(&daemon, "executions", "imported").expect("the execution");
    let c = condition(&exec, "feature/ReconcilePrecondition").expect("recorded");
    assert_eq!(c["status"], "False", "{c}");
    assert!(
        c["message"]
            .as_str()
            .unwrap_or_default()
            .contains("imports.flag == true"),
        "{c}"
    );
}

#[test]
fn an_invalid_expression_in_an_installations_blueprint_is_a_blueprint_error() {
    // Issue 19, open point 2: checked when the blueprint is loaded and rendered; the
    // Installation's lastError names the blueprint file, the item and the field; `validate`
    // and `render` say the same.
    let daemon = Daemon::start();
    daemon.write("10-flag.yaml", &flag_object(true));
    let broken =
        IMPORTED_FLAG_INSTALLATION.replace("\"imports.flag == true\"", "\"imports.flag ==\"");
    daemon.write("20-inst.yaml", &broken);
    let inst = eventually(TIMEOUT, "the installation fails", || {
        object(&daemon, "installations", "imported").filter(|i| phase(i) == "Failed")
    });
    let message = inst["status"]["lastError"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for part in [
        "invalid workflow condition",
        "deploy item \"feature\"",
        "deployItems[1].appliance.reconcilePrecondition",
        "invalid CEL expression",
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    assert!(
        object(&daemon, "executions", "imported").is_none(),
        "nothing deployed"
    );
    let path = daemon.manifests.join("20-inst.yaml");
    let out = daemon.cli(&[
        "render",
        &path.to_string_lossy(),
        "--imports-from",
        &daemon.manifests.to_string_lossy(),
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("deployItems[1].appliance.reconcilePrecondition"),
        "{text}"
    );
}
