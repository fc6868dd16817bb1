//! Seed rules that the acceptance scenarios do not reach, through the real binary: a reconcile
//! annotation that arrives during a running job waits for it; deleting a root during a running
//! job lets the job finish first; automatic reconciles of succeeded installations.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use landscaper_e2e::{Daemon, binary, eventually};
use serde_json::Value;

/// A daemon with a config file (short pickup timeout) on a temp folder.
fn start_daemon(dirs: &Path, extra_config: &str) -> Daemon {
    let manifests = dirs.join("manifests");
    let data = dirs.join("data");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dirs.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "manifestsDir: {}\ndataDir: {}\nlisten: 127.0.0.1:{port}\n{extra_config}",
            manifests.display(),
            data.display()
        ),
    )
    .unwrap();
    let log = dirs.join("daemon.log");
    let child = Command::new(binary())
        .args(["serve", "--config"])
        .arg(&config)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("start the daemon");
    let mut daemon = Daemon {
        child,
        server: format!("http://127.0.0.1:{port}"),
        manifests,
        data,
        log,
        _dirs: None,
    };
    daemon.wait_ready(Duration::from_secs(30));
    daemon
}

/// A root installation with one mock deploy item; `mock_config` is added to its config.
fn installation(
    name: &str,
    revision: &str,
    annotations: &str,
    mock_config: &str,
    timeout: &str,
) -> String {
    format!(
        r#"# revision {revision}
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: {name}
  namespace: seeds
  annotations:
    landscaper.gardener.cloud/operation: reconcile
{annotations}
spec:
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchemaVersion: https://json-schema.org/draft/2019-09/schema
          deployExecutions:
            - name: default
              type: GoTemplate
              template: |
                deployItems:
                  - name: item
                    type: landscaper.gardener.cloud/mock
                    {timeout}
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
                      {mock_config}
"#
    )
}

fn get_installation(daemon: &Daemon, name: &str) -> Option<Value> {
    daemon.get_json(&format!(
        "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/seeds/installations/{name}"
    ))
}

fn status_str(o: &Value, field: &str) -> String {
    o.pointer(&format!("/status/{field}"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn has_annotation(o: &Value, key: &str) -> bool {
    o.pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(key))
}

const OPERATION: &str = "landscaper.gardener.cloud/operation";

#[test]
fn a_reconcile_annotation_during_a_running_job_waits_for_it() {
    let dirs = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dirs.path(), "");
    // The item stays Progressing until its 4 s progressing timeout fails it.
    let slow = |rev| installation("slow", rev, "", "initialPhase: Progressing", "timeout: 4s");
    daemon.write("slow.yaml", &slow("1"));
    let first = eventually(Duration::from_secs(20), "the first job running", || {
        let o = get_installation(&daemon, "slow")?;
        (status_str(&o, "phase") == "Progressing" && !has_annotation(&o, OPERATION))
            .then(|| status_str(&o, "jobID"))
    });
    // A new file revision requests another job while the first runs.
    daemon.write("slow.yaml", &slow("2"));
    eventually(Duration::from_secs(10), "the request to be stored", || {
        let o = get_installation(&daemon, "slow")?;
        has_annotation(&o, OPERATION).then_some(())
    });
    let o = get_installation(&daemon, "slow").unwrap();
    assert_eq!(
        status_str(&o, "jobID"),
        first,
        "the running job must not be replaced"
    );
    // The first job ends (Failed by the timeout); only then the second starts.
    let second = eventually(Duration::from_secs(30), "the second job", || {
        let o = get_installation(&daemon, "slow")?;
        let job = status_str(&o, "jobID");
        (job != first).then_some((job, o))
    });
    assert!(
        !has_annotation(&second.1, OPERATION),
        "the annotation is consumed"
    );
    let history = daemon
        .cli(&["describe", "installation", "slow", "-n", "seeds"])
        .stdout;
    let history = String::from_utf8_lossy(&history);
    assert!(
        history.contains("Failed"),
        "the first job finished with Failed before the second:\n{history}"
    );
}

#[test]
fn deleting_a_root_during_a_running_job_finishes_the_job_first() {
    let dirs = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dirs.path(), "");
    daemon.write(
        "slow.yaml",
        &installation("slow", "1", "", "initialPhase: Progressing", "timeout: 4s"),
    );
    let job = eventually(Duration::from_secs(20), "the job running", || {
        let o = get_installation(&daemon, "slow")?;
        (status_str(&o, "phase") == "Progressing").then(|| status_str(&o, "jobID"))
    });
    std::fs::remove_file(daemon.manifests.join("slow.yaml")).unwrap();
    let deleting = eventually(Duration::from_secs(10), "the deletion timestamp", || {
        let o = get_installation(&daemon, "slow")?;
        o.pointer("/metadata/deletionTimestamp")
            .is_some()
            .then_some(o)
    });
    assert_eq!(
        status_str(&deleting, "jobID"),
        job,
        "no new job while one runs"
    );
    assert_ne!(status_str(&deleting, "phase"), "InitDelete");
    // The install job ends, a delete job follows, and the installation disappears.
    eventually(
        Duration::from_secs(40),
        "the installation to be removed",
        || get_installation(&daemon, "slow").is_none().then_some(()),
    );
    let list = daemon
        .get_json("/apis/landscaper.gardener.cloud/v1alpha1/namespaces/seeds/deployitems")
        .unwrap();
    assert_eq!(list["items"].as_array().map(Vec::len), Some(0), "{list}");
}

#[test]
fn succeeded_installations_are_reconciled_automatically_by_interval() {
    let dirs = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dirs.path(), "");
    let doc = installation("auto", "1", "", "", "").replace(
        "spec:\n  blueprint:",
        "spec:\n  automaticReconcile:\n    succeededReconcile:\n      interval: 2s\n  blueprint:",
    );
    daemon.write("auto.yaml", &doc);
    let first = eventually(Duration::from_secs(20), "the first job to succeed", || {
        let o = get_installation(&daemon, "auto")?;
        (status_str(&o, "phase") == "Succeeded").then(|| status_str(&o, "jobID"))
    });
    let mut seen = vec![first];
    eventually(Duration::from_secs(30), "two automatic reconciles", || {
        let o = get_installation(&daemon, "auto")?;
        let job = status_str(&o, "jobID");
        if status_str(&o, "phase") == "Succeeded" && !seen.contains(&job) {
            seen.push(job);
        }
        (seen.len() >= 3).then_some(())
    });
    let o = get_installation(&daemon, "auto").unwrap();
    let count = o
        .pointer("/status/automaticReconcileStatus/numberOfReconciles")
        .and_then(Value::as_i64)
        .unwrap_or_default();
    assert!(count >= 2, "numberOfReconciles counts the retries: {o}");
}

#[test]
fn a_blueprint_directory_in_the_manifests_folder_can_be_referenced() {
    let dirs = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dirs.path(), "");
    daemon.write(
        "blueprints/echo/blueprint.yaml",
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
jsonSchemaVersion: https://json-schema.org/draft/2019-09/schema
deployExecutions:
  - name: default
    type: GoTemplate
    file: /deploy.tpl
"#,
    );
    daemon.write(
        "blueprints/echo/deploy.tpl",
        "deployItems:\n  - name: echo\n    type: landscaper.gardener.cloud/mock\n    config:\n      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1\n      kind: ProviderConfiguration\n      providerStatus: {from: directory}\n",
    );
    daemon.write(
        "echo.yaml",
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: echo
  namespace: seeds
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  blueprint:
    ref:
      resourceName: local://blueprints/echo
"#,
    );
    let o = eventually(Duration::from_secs(20), "echo finished", || {
        let o = get_installation(&daemon, "echo")?;
        matches!(status_str(&o, "phase").as_str(), "Succeeded" | "Failed").then_some(o)
    });
    assert_eq!(status_str(&o, "phase"), "Succeeded", "{o}");
    let items = daemon
        .get_json("/apis/landscaper.gardener.cloud/v1alpha1/namespaces/seeds/deployitems")
        .unwrap();
    assert_eq!(
        items["items"][0]["status"]["providerStatus"]["from"], "directory",
        "{items}"
    );
    // The blueprint directory is not read as manifests.
    let files = daemon
        .get_json("/apis/appliance.landscaper-appliance.io/v1alpha1/manifestfiles")
        .unwrap();
    let paths: Vec<&str> = files["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["spec"]["path"].as_str())
        .collect();
    assert!(
        !paths.iter().any(|p| p.starts_with("blueprints/")),
        "{paths:?}"
    );
    // A path that leaves the folder is refused with a clear error.
    daemon.write(
        "escape.yaml",
        &std::fs::read_to_string(daemon.manifests.join("echo.yaml"))
            .unwrap()
            .replace("name: echo", "name: escape")
            .replace("local://blueprints/echo", "local://../outside"),
    );
    let o = eventually(Duration::from_secs(20), "escape failed", || {
        let o = get_installation(&daemon, "escape")?;
        (status_str(&o, "phase") == "Failed").then_some(o)
    });
    let message = o["status"]["lastError"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("stay inside"), "{o}");
}
