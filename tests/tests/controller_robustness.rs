//! The controllers on the real binary when objects collide: an Execution and an Installation
//! of the same name written into one manifest file. The installation cannot create its
//! execution (the name is taken by one it does not own); it used to retry every 5 ms forever
//! without saying why. Now it shows the error in `status.lastError` and retries on its growing
//! wait interval, so the daemon stays idle.

use std::time::{Duration, Instant};

use landscaper_e2e::{Daemon, eventually};
use serde_json::Value;

const INSTALLATION: &str =
    "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/edge/installations/twin";

const BOTH: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Execution
metadata:
  name: twin
  namespace: edge
spec:
  deployItems: []
---
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: twin
  namespace: edge
  annotations:
    landscaper.gardener.cloud/operation: reconcile
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
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
"#;

/// How many keys the installation controller's workers have taken so far (the count of the
/// work queue's wait-time histogram).
fn installation_reconciles(daemon: &Daemon) -> u64 {
    let (code, body) = daemon
        .client()
        .get("/metrics", "text/plain")
        .expect("GET /metrics");
    assert_eq!(code, 200);
    let text = String::from_utf8_lossy(&body);
    text.lines()
        .find(|l| {
            l.starts_with("landscaper_appliance_workqueue_wait_seconds_count")
                && l.contains("\"installation\"")
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .map(|v| v as u64)
        .unwrap_or_else(|| panic!("no installation work-queue count in:\n{text}"))
}

/// User and system CPU time of process `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/<pid>/stat");
    // Fields after the command name (which is in parentheses): utime and stime are 14 and 15.
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn an_execution_name_taken_by_another_object_is_an_error_on_the_installation_not_a_hot_loop() {
    let daemon = Daemon::start();
    daemon.write("both.yaml", BOTH);
    let installation: Value = eventually(
        Duration::from_secs(60),
        "the installation's lastError",
        || {
            daemon
                .get_json(INSTALLATION)
                .filter(|i| i.pointer("/status/lastError/reason").is_some())
        },
    );
    let error = &installation["status"]["lastError"];
    assert_eq!(error["reason"], "CreateOrUpdateExecution", "{installation}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not owned by this installation"),
        "{installation}"
    );
    assert_eq!(installation["status"]["phase"], "Init", "{installation}");
    // The user's execution is left alone.
    let execution = daemon
        .get_json("/apis/landscaper.gardener.cloud/v1alpha1/namespaces/edge/executions/twin")
        .expect("the execution");
    assert!(
        execution.pointer("/metadata/ownerReferences").is_none(),
        "{execution}"
    );

    // Over a few seconds: a handful of retries at most, no new revisions, an idle daemon.
    let version = installation["metadata"]["resourceVersion"].clone();
    let reconciles = installation_reconciles(&daemon);
    let ticks = cpu_ticks(daemon.child.id());
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(4));
    let elapsed = started.elapsed();
    let retries = installation_reconciles(&daemon) - reconciles;
    let cpu = (cpu_ticks(daemon.child.id()) - ticks) as f64 / 100.0;
    assert!(
        retries <= 4,
        "{retries} installation reconciles in {elapsed:?}"
    );
    assert!(
        cpu < 0.5 * elapsed.as_secs_f64(),
        "the daemon used {cpu:.2} s of CPU in {elapsed:?}"
    );
    let now = daemon.get_json(INSTALLATION).expect("the installation");
    assert_eq!(
        now["metadata"]["resourceVersion"], version,
        "the retries wrote the installation again: {now}"
    );
    assert!(
        daemon
            .logs()
            .contains("is taken by an execution it does not own"),
        "no warning in the log:\n{}",
        daemon.logs()
    );
}
