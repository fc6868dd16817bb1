//! End-to-end: secondary targets of the kubernetes-manifest deployer. The deploy item applies
//! its manifests to the primary cluster, while its custom readiness check, one export and a
//! custom deletion group name a second Target (`targetName: {{ .imports.installer.metadata.name }}`)
//! whose kubeconfig lives in a Secret: they read and delete objects in the second cluster.

use std::time::Duration;

use landscaper_appliance::commands::client::Client;
use landscaper_e2e::cluster::{Cluster, TOKEN};
use landscaper_e2e::{Daemon, eventually};
use serde_json::{Value, json};

const NS: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e";
const TIMEOUT: Duration = Duration::from_secs(60);

const INSTALLATION: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: installer
  namespace: e2e
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  imports:
    targets:
      - name: cluster
        target: cluster
      - name: installer
        target: installer
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
            - name: installer
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
                      manifests:
                        - manifest:
                            apiVersion: v1
                            kind: ConfigMap
                            metadata:
                              name: installer
                              namespace: targets
                            data:
                              app: demo
                      readinessChecks:
                        custom:
                          - name: app-ready
                            targetName: {{ .imports.installer.metadata.name }}
                            resourceSelector:
                              - apiVersion: v1
                                kind: ConfigMap
                                name: app-status
                                namespace: app
                            requirements:
                              - jsonPath: .data.phase
                                operator: ==
                                values:
                                  - value: Ready
                      exports:
                        exports:
                          - key: endpoint
                            jsonPath: .data.endpoint
                            targetName: {{ .imports.installer.metadata.name }}
                            fromResource:
                              apiVersion: v1
                              kind: ConfigMap
                              name: app-status
                              namespace: app
                      deletionGroups:
                        - customResourceGroup:
                            targetName: {{ .imports.installer.metadata.name }}
                            deleteAllResources: true
                            resources:
                              - apiVersion: v1
                                kind: Secret
                                namespaces: [app]
                        - predefinedResourceGroup:
                            type: namespaced-resources
"#;

/// A manifest file with the objects as JSON (which is YAML), one document each.
fn documents(objects: &[Value]) -> String {
    objects
        .iter()
        .map(|o| format!("---\n{}\n", serde_json::to_string_pretty(o).unwrap()))
        .collect()
}

fn cluster_client(cluster: &Cluster) -> Client {
    Client::new(&cluster.url).unwrap().with_token(TOKEN)
}

fn create(cluster: &Cluster, path: &str, object: Value) {
    cluster_client(cluster)
        .post_json(path, &object)
        .unwrap_or_else(|e| panic!("create {object}: {e}"));
}

fn deploy_item(daemon: &Daemon) -> Option<Value> {
    daemon
        .get_json(&format!("{NS}/deployitems"))
        .and_then(|l| l["items"].as_array().and_then(|i| i.first().cloned()))
}

fn installation(daemon: &Daemon) -> Option<Value> {
    daemon.get_json(&format!("{NS}/installations/installer"))
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[test]
fn readiness_exports_and_deletion_use_the_secondary_target() {
    let primary = Cluster::start("100ms");
    let second = Cluster::start("100ms");
    primary.create_namespace("targets");
    second.create_namespace("app");
    second.create_namespace("keep");
    create(
        &second,
        "/api/v1/namespaces/app/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "app-status", "namespace": "app"}, "data": {"phase": "Installing"}}),
    );
    for (namespace, name) in [
        ("app", "generated-1"),
        ("app", "generated-2"),
        ("keep", "untouched"),
    ] {
        create(
            &second,
            &format!("/api/v1/namespaces/{namespace}/secrets"),
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": name, "namespace": namespace}, "data": {"k": "dg=="}}),
        );
    }

    let daemon = Daemon::start();
    daemon.write(
        "targets.yaml",
        &documents(&[
            json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
                "metadata": {"name": "cluster", "namespace": "e2e"},
                "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster",
                    "config": {"kubeconfig": primary.kubeconfig()}}}),
            // The secondary target's kubeconfig comes from a Secret that is not there yet.
            json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
                "metadata": {"name": "installer", "namespace": "e2e"},
                "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster",
                    "secretRef": {"name": "installer-kubeconfig", "key": "target"}}}),
        ]),
    );
    daemon.write("installation.yaml", INSTALLATION);

    // The manifests are applied to the primary cluster; the readiness check cannot resolve its
    // target yet: a retried error in Landscaper's words.
    let waiting = eventually(TIMEOUT, "the secondary target error", || {
        deploy_item(&daemon).filter(|di| {
            text(di, "/status/lastError/message").contains("unable to resolve secondary target")
        })
    });
    assert_eq!(
        text(&waiting, "/status/lastError/message"),
        "readiness check \"app-ready\": unable to resolve secondary target installer: secrets \"installer-kubeconfig\" not found",
        "{waiting:#}"
    );
    assert!(
        ["Init", "Progressing"].contains(&text(&waiting, "/status/phase")),
        "{waiting:#}"
    );
    assert!(primary.core("targets", "configmaps", "installer").is_some());

    // With the Secret the check reads the second cluster, where the app is not ready yet.
    daemon.write(
        "installer-kubeconfig.yaml",
        &documents(&[json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "installer-kubeconfig", "namespace": "e2e"},
            "stringData": {"target": serde_json::to_string(&json!({"kubeconfig": second.kubeconfig()})).unwrap()}})]),
    );
    let not_ready = eventually(TIMEOUT, "the readiness check on the second cluster", || {
        deploy_item(&daemon)
            .filter(|di| text(di, "/status/lastError/message").contains("is not ready"))
    });
    let message = text(&not_ready, "/status/lastError/message");
    assert!(
        message.starts_with(
            "readiness check \"app-ready\": v1, Kind=ConfigMap app-status/app is not ready"
        ),
        "{message}"
    );
    assert_eq!(text(&not_ready, "/status/phase"), "Progressing");

    cluster_client(&second)
        .patch_json(
            "/api/v1/namespaces/app/configmaps/app-status",
            &json!({"data": {"phase": "Ready", "endpoint": "https://app.example"}}),
        )
        .unwrap();
    let done = eventually(TIMEOUT, "the deploy item to succeed", || {
        deploy_item(&daemon).filter(|di| text(di, "/status/phase") == "Succeeded")
    });
    assert!(done["status"]["lastError"].is_null(), "{done:#}");
    eventually(TIMEOUT, "the installation to succeed", || {
        installation(&daemon).filter(|i| text(i, "/status/phase") == "Succeeded")
    });
    // The export is read from the second cluster.
    let execution = daemon
        .get_json(&format!("{NS}/executions/installer"))
        .expect("the execution");
    let exports = text(&execution, "/status/exportRef/name").to_string();
    let data_object = daemon
        .get_json(&format!("{NS}/dataobjects/{exports}"))
        .unwrap_or_else(|| panic!("the execution's export DataObject: {execution:#}"));
    assert_eq!(
        data_object["data"]["item"],
        json!({"endpoint": "https://app.example"}),
        "{data_object:#}"
    );

    // Deleting the installation: the secondary deletion group removes every Secret of `app` in
    // the second cluster, the default group the managed ConfigMap in the primary one.
    std::fs::remove_file(daemon.manifests.join("installation.yaml")).unwrap();
    eventually(TIMEOUT, "the deploy item to go", || {
        deploy_item(&daemon).is_none().then_some(())
    });
    assert!(second.core("app", "secrets", "generated-1").is_none());
    assert!(second.core("app", "secrets", "generated-2").is_none());
    assert!(second.core("keep", "secrets", "untouched").is_some());
    assert!(second.core("app", "configmaps", "app-status").is_some());
    assert!(primary.core("targets", "configmaps", "installer").is_none());
    assert!(!daemon.logs().contains("panicked"), "{}", daemon.logs());
}

#[test]
fn a_secondary_target_with_exec_credentials_fails_the_deploy_item() {
    let primary = Cluster::start("100ms");
    primary.create_namespace("targets");
    let daemon = Daemon::start();
    let exec_kubeconfig = "apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true}}}]
";
    daemon.write(
        "targets.yaml",
        &documents(&[
            json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
                "metadata": {"name": "cluster", "namespace": "e2e"},
                "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster",
                    "config": {"kubeconfig": primary.kubeconfig()}}}),
            json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
                "metadata": {"name": "installer", "namespace": "e2e"},
                "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster",
                    "config": {"kubeconfig": exec_kubeconfig}}}),
        ]),
    );
    daemon.write("installation.yaml", INSTALLATION);
    let failed = eventually(TIMEOUT, "the deploy item to fail", || {
        deploy_item(&daemon).filter(|di| text(di, "/status/phase") == "Failed")
    });
    let message = text(&failed, "/status/lastError/message");
    assert!(
        message.starts_with(
            "readiness check \"app-ready\": unable to get secondary target client installer: exec configurations are not supported"
        ),
        "{message}"
    );
    assert_eq!(
        failed["status"]["lastError"]["codes"],
        json!(["ERR_CONFIGURATION_PROBLEM"]),
        "{failed:#}"
    );
    // The objects applied before the check are recorded, so deleting removes them.
    assert!(primary.core("targets", "configmaps", "installer").is_some());
    assert!(
        failed["status"]["providerStatus"]["managedResources"]
            .as_array()
            .is_some_and(|m| m.len() == 1),
        "{failed:#}"
    );
    eventually(TIMEOUT, "the installation to fail", || {
        installation(&daemon).filter(|i| text(i, "/status/phase") == "Failed")
    });
}
