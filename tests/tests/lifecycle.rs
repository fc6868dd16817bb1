//! Objects that never went away (issue 14), through the real binary: every object whose file is
//! removed is eventually gone, or stays with a visible reason.
//!
//! - two root installations importing each other's exports, both removed;
//! - an installation whose `local://` blueprint directory does not exist, removed while in Init;
//! - an installation naming a Context that does not exist;
//! - an Execution defined in a file (no installation owns it);
//! - a deploy execution with neither `template` nor `file`.

use std::time::Duration;

use landscaper_e2e::{Daemon, eventually};
use serde_json::Value;

const API: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/life";

fn get(daemon: &Daemon, resource: &str, name: &str) -> Option<Value> {
    daemon.get_json(&format!("{API}/{resource}/{name}"))
}

fn list(daemon: &Daemon, resource: &str) -> Vec<Value> {
    daemon
        .get_json(&format!("{API}/{resource}"))
        .and_then(|l| l.get("items").and_then(Value::as_array).cloned())
        .unwrap_or_default()
}

fn text(o: &Value, pointer: &str) -> String {
    o.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn remove(daemon: &Daemon, file: &str) {
    std::fs::remove_file(daemon.manifests.join(file)).unwrap();
}

/// Waits until the object is gone; the failure message shows what is left.
fn gone(daemon: &Daemon, resource: &str, name: &str, timeout: Duration) {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let Some(o) = get(daemon, resource, name) else {
            return;
        };
        assert!(
            std::time::Instant::now() < deadline,
            "{resource}/{name} still there after {timeout:?}: {:#}",
            o.get("status").cloned().unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A root installation with an inline blueprint (`blueprint_body` below `jsonSchemaVersion`)
/// and `spec_extra` in its spec.
fn installation(name: &str, spec_extra: &str, blueprint_body: &str) -> String {
    let body: String = blueprint_body
        .lines()
        .map(|l| format!("          {l}\n"))
        .collect();
    format!(
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: {name}
  namespace: life
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
{spec_extra}
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchemaVersion: https://json-schema.org/draft/2019-09/schema
{body}"#
    )
}

const MOCK_ITEM: &str = r#"deployExecutions:
- name: default
  type: GoTemplate
  template: |
    deployItems:
    - name: item
      type: landscaper.gardener.cloud/mock
      config:
        apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
        kind: ProviderConfiguration
"#;

#[test]
fn two_removed_roots_importing_each_others_exports_are_both_deleted() {
    let daemon = Daemon::start();
    let blueprint = "imports:\n- name: in\n  schema: {type: string}\nexports:\n- name: out\n  schema: {type: string}\nexportExecutions:\n- name: e\n  type: GoTemplate\n  template: |\n    exports:\n      out: x\n";
    for (me, other) in [("ping", "pong"), ("pong", "ping")] {
        let spec = format!(
            "  imports:\n    data:\n    - name: in\n      dataRef: {other}-out\n  exports:\n    data:\n    - name: out\n      dataRef: {me}-out"
        );
        daemon.write(&format!("{me}.yaml"), &installation(me, &spec, blueprint));
    }
    // The cycle fails both in Init (Landscaper's predecessor check).
    for name in ["ping", "pong"] {
        let o = eventually(Duration::from_secs(20), "the cycle to fail", || {
            get(&daemon, "installations", name).filter(|o| text(o, "/status/phase") == "Failed")
        });
        assert!(
            text(&o, "/status/lastError/message").contains("cycle"),
            "{o:#}"
        );
    }
    remove(&daemon, "ping.yaml");
    remove(&daemon, "pong.yaml");
    // Each imports the other's export, and each is being deleted: neither may wait forever.
    gone(&daemon, "installations", "ping", Duration::from_secs(20));
    gone(&daemon, "installations", "pong", Duration::from_secs(20));
}

#[test]
fn a_removed_root_still_waiting_for_its_successor_says_so() {
    let daemon = Daemon::start();
    let exporter = installation(
        "source",
        "  exports:\n    data:\n    - name: out\n      dataRef: shared",
        "exports:\n- name: out\n  schema: {type: string}\nexportExecutions:\n- name: e\n  type: GoTemplate\n  template: |\n    exports:\n      out: x\n",
    );
    let importer = installation(
        "sink",
        "  imports:\n    data:\n    - name: in\n      dataRef: shared",
        "imports:\n- name: in\n  schema: {type: string}\n",
    );
    daemon.write("source.yaml", &exporter);
    daemon.write("sink.yaml", &importer);
    eventually(Duration::from_secs(20), "both installed", || {
        ["source", "sink"]
            .iter()
            .all(|n| {
                get(&daemon, "installations", n)
                    .is_some_and(|o| text(&o, "/status/phase") == "Succeeded")
            })
            .then_some(())
    });
    // Only the exporter's file goes: it waits for its successor, and says why.
    remove(&daemon, "source.yaml");
    let o = eventually(Duration::from_secs(20), "the waiting reason", || {
        get(&daemon, "installations", "source")
            .filter(|o| text(o, "/status/lastError/reason") == "SiblingImport")
    });
    assert_eq!(text(&o, "/status/phase"), "InitDelete", "{o:#}");
    assert_eq!(
        text(&o, "/status/lastError/message"),
        "a sibling still imports some of the exports: sink"
    );
    // Once the successor's file goes too, both are deleted in order.
    remove(&daemon, "sink.yaml");
    gone(&daemon, "installations", "sink", Duration::from_secs(20));
    gone(&daemon, "installations", "source", Duration::from_secs(30));
}

#[test]
fn a_removed_installation_with_a_missing_local_blueprint_is_deleted() {
    let daemon = Daemon::start();
    daemon.write(
        "local.yaml",
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Installation\nmetadata:\n  name: local\n  namespace: life\n  annotations:\n    landscaper.gardener.cloud/operation: reconcile\nspec:\n  blueprint:\n    ref:\n      resourceName: local://nowhere\n",
    );
    let o = eventually(
        Duration::from_secs(20),
        "Init waiting for the blueprint",
        || {
            get(&daemon, "installations", "local")
                .filter(|o| text(o, "/status/lastError/reason") == "ResolveBlueprint")
        },
    );
    assert_eq!(text(&o, "/status/phase"), "Init", "{o:#}");
    remove(&daemon, "local.yaml");
    gone(&daemon, "installations", "local", Duration::from_secs(20));
}

#[test]
fn a_missing_context_fails_the_installation_naming_it() {
    let daemon = Daemon::start();
    daemon.write(
        "ctx.yaml",
        &installation("ctx", "  context: nowhere", MOCK_ITEM),
    );
    let o = eventually(Duration::from_secs(20), "the installation to fail", || {
        get(&daemon, "installations", "ctx").filter(|o| text(o, "/status/phase") == "Failed")
    });
    assert_eq!(text(&o, "/status/lastError/reason"), "CalculateContext");
    assert_eq!(
        text(&o, "/status/lastError/message"),
        "Op: Context - Reason: GetContext - Message: contexts.landscaper.gardener.cloud \"nowhere\" not found"
    );
    assert!(list(&daemon, "deployitems").is_empty());
    remove(&daemon, "ctx.yaml");
    gone(&daemon, "installations", "ctx", Duration::from_secs(20));
}

#[test]
fn a_deploy_item_without_its_context_shows_why_and_times_out() {
    let daemon = Daemon::start();
    // An Execution of its own (no installation checks the context first).
    daemon.write(
        "exec.yaml",
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Execution\nmetadata:\n  name: noctx\n  namespace: life\nspec:\n  context: nowhere\n  deployItems:\n  - name: item\n    type: landscaper.gardener.cloud/mock\n    timeout: 3s\n    config:\n      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1\n      kind: ProviderConfiguration\n",
    );
    // Landscaper retries a missing Context (it may be created) and says why ...
    let di = eventually(Duration::from_secs(20), "the reason on the item", || {
        list(&daemon, "deployitems")
            .into_iter()
            .find(|d| text(d, "/status/lastError/reason") == "GetLandscaperContext")
    });
    assert_eq!(
        text(&di, "/status/lastError/message"),
        "contexts.landscaper.gardener.cloud \"nowhere\" not found"
    );
    // ... until the item's progressing timeout fails it, and the Execution with it.
    let di = eventually(Duration::from_secs(20), "the item to fail", || {
        list(&daemon, "deployitems")
            .into_iter()
            .find(|d| text(d, "/status/phase") == "Failed")
    });
    assert_eq!(text(&di, "/status/lastError/reason"), "ProgressingTimeout");
    eventually(Duration::from_secs(20), "the execution to fail", || {
        get(&daemon, "executions", "noctx").filter(|o| text(o, "/status/phase") == "Failed")
    });
}

#[test]
fn an_execution_defined_in_a_file_runs_and_is_deleted_with_its_file() {
    let daemon = Daemon::start();
    let exec = |item: &str| {
        format!(
            "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Execution\nmetadata:\n  name: standalone\n  namespace: life\nspec:\n  deployItems:\n  - name: {item}\n    type: landscaper.gardener.cloud/mock\n    config:\n      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1\n      kind: ProviderConfiguration\n"
        )
    };
    daemon.write("exec.yaml", &exec("first"));
    let o = eventually(Duration::from_secs(20), "the execution to succeed", || {
        get(&daemon, "executions", "standalone").filter(|o| text(o, "/status/phase") == "Succeeded")
    });
    let first_job = text(&o, "/status/jobID");
    assert!(!first_job.is_empty());
    let items = list(&daemon, "deployitems");
    assert_eq!(items.len(), 1, "{items:#?}");
    assert_eq!(text(&items[0], "/status/phase"), "Succeeded");
    assert_eq!(
        list(&daemon, "dataobjects").len(),
        1,
        "the export DataObject"
    );
    // A new revision of the file runs again.
    daemon.write("exec.yaml", &exec("second"));
    eventually(Duration::from_secs(20), "the second job", || {
        get(&daemon, "executions", "standalone").filter(|o| {
            text(o, "/status/phase") == "Succeeded" && text(o, "/status/jobID") != first_job
        })
    });
    let names: Vec<String> = list(&daemon, "deployitems")
        .iter()
        .map(|d| {
            text(
                d,
                "/metadata/labels/execution.landscaper.gardener.cloud~1name",
            )
        })
        .collect();
    assert_eq!(names, vec!["second".to_string()]);
    remove(&daemon, "exec.yaml");
    gone(&daemon, "executions", "standalone", Duration::from_secs(20));
    assert!(list(&daemon, "deployitems").is_empty());
    // Its export DataObject (owned by it) goes too.
    eventually(
        Duration::from_secs(20),
        "the export DataObject to go",
        || list(&daemon, "dataobjects").is_empty().then_some(()),
    );
}

#[test]
fn a_deploy_execution_without_template_or_file_fails() {
    let daemon = Daemon::start();
    daemon.write(
        "empty.yaml",
        &installation(
            "empty",
            "",
            "deployExecutions:\n- name: x\n  type: GoTemplate\n",
        ),
    );
    let o = eventually(Duration::from_secs(20), "the installation to fail", || {
        get(&daemon, "installations", "empty").filter(|o| {
            let phase = text(o, "/status/phase");
            (phase == "Failed" || phase == "Succeeded")
                .then_some(())
                .is_some()
        })
    });
    assert_eq!(text(&o, "/status/phase"), "Failed", "{o:#}");
    assert!(
        text(&o, "/status/lastError/message").contains("no template found"),
        "{o:#}"
    );
    assert!(get(&daemon, "executions", "empty").is_none());
    remove(&daemon, "empty.yaml");
    gone(&daemon, "installations", "empty", Duration::from_secs(20));
}
