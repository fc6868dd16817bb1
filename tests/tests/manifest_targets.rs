//! End-to-end: how the kubernetes-manifest deployer treats its Target. A cluster that cannot
//! be reached is a normal error (the deploy item keeps its job and retries, and succeeds once
//! the cluster answers); a kubeconfig that is invalid, or uses `exec`, is a fatal error that
//! fails the deploy item and its installation at once.

use std::time::Duration;

use landscaper_e2e::cluster::{Cluster, TOKEN};
use landscaper_e2e::{Daemon, eventually, free_port};
use serde_json::Value;

const DI_PATH: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/deployitems";
const INST_PATH: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/installations";

/// A Target file whose kubeconfig is `kubeconfig`, indented into the YAML block.
fn target(kubeconfig: &str) -> String {
    let indented: String = kubeconfig.lines().map(|l| format!("      {l}\n")).collect();
    format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Target
metadata:
  name: cluster
  namespace: e2e
spec:
  type: landscaper.gardener.cloud/kubernetes-cluster
  config:
    kubeconfig: |
{indented}"
    )
}

fn kubeconfig(server: &str, user: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: \"{server}\"}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
current-context: c
users: [{{name: u, user: {user}}}]
"
    )
}

/// An installation with one manifest deploy item that creates ConfigMap `targets/probe`.
const INSTALLATION: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: probe
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
                  - name: item
                    type: landscaper.gardener.cloud/kubernetes-manifest
                    target:
                      import: cluster
                    config:
                      apiVersion: manifest.deployer.landscaper.gardener.cloud/v1alpha2
                      kind: ProviderConfiguration
                      updateStrategy: update
                      manifests:
                        - policy: manage
                          manifest:
                            apiVersion: v1
                            kind: ConfigMap
                            metadata:
                              name: probe
                              namespace: targets
                            data:
                              key: value
"#;

fn items(daemon: &Daemon, path: &str) -> Vec<Value> {
    daemon
        .get_json(path)
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
}

fn deploy_item(daemon: &Daemon) -> Option<Value> {
    items(daemon, DI_PATH).into_iter().next()
}

fn phase(object: &Value) -> &str {
    object["status"]["phase"].as_str().unwrap_or_default()
}

fn last_error_message(object: &Value) -> &str {
    object["status"]["lastError"]["message"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn an_unreachable_cluster_is_retried_until_it_answers() {
    let port = free_port();
    let daemon = Daemon::start();
    daemon.write(
        "target.yaml",
        &target(&kubeconfig(
            &format!("http://127.0.0.1:{port}"),
            &format!("{{token: {TOKEN}}}"),
        )),
    );
    daemon.write("installation.yaml", INSTALLATION);

    // The first attempt fails with a connection error that is recorded but not final.
    let first = eventually(Duration::from_secs(30), "a connection error", || {
        deploy_item(&daemon).filter(|di| !last_error_message(di).is_empty())
    });
    let job = first["status"]["jobID"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // Not final: the job goes on (the phase is Init or Progressing, where the error struck).
    assert!(
        ["Init", "Progressing"].contains(&phase(&first)),
        "{first:#}"
    );
    assert!(
        first["status"]["lastError"]["codes"]
            .as_array()
            .is_none_or(|c| c.is_empty()),
        "a connection error carries no unrecoverable code: {first:#}"
    );
    let message = last_error_message(&first);
    assert!(
        message.contains(&format!("127.0.0.1:{port}")) || message.contains("onnect"),
        "the error says the cluster is not reachable: {message}"
    );

    // Retries (after 5 s, then growing intervals) keep the job and the phase. Landscaper sets
    // lastReconcileTime only when a job starts and keeps an unchanged error's lastUpdateTime, so
    // the attempts show in `status.lastErrors`, one entry each; the log has one warning for the
    // repeated error (issue 21: once per change, not once per attempt).
    let attempts = |d: &Daemon| {
        deploy_item(d)
            .and_then(|di| di["status"]["lastErrors"].as_array().map(Vec::len))
            .unwrap_or_default()
    };
    let before = attempts(&daemon);
    eventually(Duration::from_secs(30), "another attempt", || {
        (attempts(&daemon) > before).then_some(())
    });
    let retried = deploy_item(&daemon).unwrap();
    assert!(
        ["Init", "Progressing"].contains(&phase(&retried)),
        "{retried:#}"
    );
    assert_eq!(retried["status"]["jobID"], job.as_str());
    let warnings = daemon
        .logs()
        .lines()
        .filter(|l| l.contains(" WARN ") && l.contains("deployer call failed"))
        .count();
    assert_eq!(
        warnings,
        1,
        "one warning for the repeated error:\n{}",
        daemon.logs()
    );
    assert!(
        !daemon.logs().contains("kube_client"),
        "kube's own connection errors are not repeated in the log"
    );
    let inst = items(&daemon, INST_PATH).into_iter().next().unwrap();
    assert_ne!(phase(&inst), "Failed", "{inst:#}");

    // Once a cluster listens on that address the next attempt succeeds.
    let cluster = Cluster::start_on_port("100ms", port);
    cluster.create_namespace("targets");
    let done = eventually(
        Duration::from_secs(60),
        "the deploy item to succeed",
        || deploy_item(&daemon).filter(|di| phase(di) == "Succeeded"),
    );
    assert_eq!(done["status"]["jobID"], job.as_str());
    assert!(done["status"]["lastError"].is_null(), "{done:#}");
    let cm = cluster
        .core("targets", "configmaps", "probe")
        .expect("ConfigMap created");
    assert_eq!(cm["data"]["key"], "value");
    eventually(
        Duration::from_secs(30),
        "the installation to succeed",
        || {
            items(&daemon, INST_PATH)
                .into_iter()
                .find(|i| phase(i) == "Succeeded")
        },
    );
}

/// Waits for the deploy item and its installation to fail and returns the item's lastError
/// message.
fn fails_at_once(daemon: &Daemon) -> String {
    let di = eventually(Duration::from_secs(30), "the deploy item to fail", || {
        deploy_item(daemon).filter(|di| phase(di) == "Failed")
    });
    let codes = di["status"]["lastError"]["codes"].clone();
    assert!(
        codes
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c == "ERR_CONFIGURATION_PROBLEM")),
        "an invalid kubeconfig is a configuration problem: {di:#}"
    );
    eventually(Duration::from_secs(30), "the installation to fail", || {
        items(daemon, INST_PATH)
            .into_iter()
            .find(|i| phase(i) == "Failed")
    });
    last_error_message(&di).to_string()
}

#[test]
fn an_invalid_kubeconfig_fails_the_deploy_item() {
    let daemon = Daemon::start();
    daemon.write("target.yaml", &target("clusters: [not: a: kubeconfig\n"));
    daemon.write("installation.yaml", INSTALLATION);
    let message = fails_at_once(&daemon);
    assert!(
        message.starts_with("error loading config:") && message.contains("line 1 column 18"),
        "Landscaper's wording (clientcmd.Load), with the place of the error: {message}"
    );
    assert!(!daemon.logs().contains("panicked"), "{}", daemon.logs());
}

#[test]
fn exec_credentials_are_refused_as_landscaper_does() {
    let daemon = Daemon::start();
    daemon.write(
        "target.yaml",
        &target(&kubeconfig(
            "https://127.0.0.1:1",
            "{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true}}",
        )),
    );
    daemon.write("installation.yaml", INSTALLATION);
    let message = fails_at_once(&daemon);
    assert!(message.contains("exec"), "{message}");
}
