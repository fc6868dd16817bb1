//! Crash safety of the controllers: the daemon is killed with SIGKILL at random moments while
//! 50 root installations run their jobs, and restarted on the same folders. In the end every
//! job must be finished, nothing lost or duplicated, and the store history of every deploy item
//! must be consistent and show no second finish or regression.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use landscaper_e2e::Daemon;
use serde_json::Value;

const NAMESPACE: &str = "crash";
const INSTALLATIONS: usize = 50;
/// SIGKILL rounds in CI; `CRASH_ROUNDS` sets more for the long campaign
/// (`scripts/reliability.sh`).
const ROUNDS: usize = 20;
const API: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/crash";
const OPERATION: &str = "landscaper.gardener.cloud/operation";
const MANAGED_BY: &str = "execution.landscaper.gardener.cloud/managed-by";
const ITEM_NAME: &str = "execution.landscaper.gardener.cloud/name";

/// xorshift64: reproducible random numbers without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `low..high`.
    fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low)
    }
}

fn name(i: usize) -> String {
    format!("inst-{i:02}")
}

/// Odd installations get a second item that depends on the first.
fn items(i: usize) -> usize {
    if i % 2 == 1 { 2 } else { 1 }
}

/// A mock item that succeeds on every job. (`initialPhase: Progressing` would keep it
/// `Progressing` for good: the mock reports the current phase after the pickup.)
fn item(name: &str, depends_on: Option<&str>) -> String {
    let depends = depends_on
        .map(|d| format!("\n                    dependsOn: [{d}]"))
        .unwrap_or_default();
    format!(
        r#"
                  - name: {name}
                    type: landscaper.gardener.cloud/mock{depends}
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration"#
    )
}

fn installation(i: usize, revision: usize) -> String {
    let mut deploy_items = item("first", None);
    if items(i) == 2 {
        deploy_items.push_str(&item("second", Some("first")));
    }
    format!(
        r#"# revision {revision}
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: {name}
  namespace: {NAMESPACE}
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
                deployItems:{deploy_items}
"#,
        name = name(i),
    )
}

fn write_installation(manifests: &Path, i: usize, revision: usize) {
    std::fs::write(
        manifests.join(format!("{}.yaml", name(i))),
        installation(i, revision),
    )
    .unwrap();
}

fn str_at<'a>(o: &'a Value, pointer: &str) -> &'a str {
    o.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn int_at(o: &Value, pointer: &str) -> i64 {
    o.pointer(pointer).and_then(Value::as_i64).unwrap_or(-1)
}

fn list(daemon: &Daemon, plural: &str) -> Result<Vec<Value>, String> {
    let list = daemon
        .get_json(&format!("{API}/{plural}"))
        .ok_or_else(|| format!("listing {plural} failed"))?;
    Ok(list["items"].as_array().cloned().unwrap_or_default())
}

/// A job is finished: the phase, `jobIDFinished == jobID` and the observed generation.
fn check_finished(kind: &str, o: &Value) -> Result<(), String> {
    let name = str_at(o, "/metadata/name");
    let job = str_at(o, "/status/jobID");
    if str_at(o, "/status/phase") != "Succeeded"
        || job.is_empty()
        || job != str_at(o, "/status/jobIDFinished")
    {
        return Err(format!("{kind} {name} is not finished: {}", o["status"]));
    }
    if kind != "DeployItem"
        && int_at(o, "/status/observedGeneration") != int_at(o, "/metadata/generation")
    {
        return Err(format!("{kind} {name} has an old observedGeneration: {o}"));
    }
    Ok(())
}

/// The end state: everything finished, nothing lost or duplicated. Returns the deploy items.
fn check_end_state(daemon: &Daemon) -> Result<Vec<Value>, String> {
    let installations = list(daemon, "installations")?;
    let executions = list(daemon, "executions")?;
    let deploy_items = list(daemon, "deployitems")?;
    let expected_items: usize = (0..INSTALLATIONS).map(items).sum();
    if installations.len() != INSTALLATIONS
        || executions.len() != INSTALLATIONS
        || deploy_items.len() != expected_items
    {
        return Err(format!(
            "{} installations, {} executions, {} deploy items; expected {INSTALLATIONS}, \
             {INSTALLATIONS}, {expected_items}",
            installations.len(),
            executions.len(),
            deploy_items.len()
        ));
    }
    let mut execution_jobs = BTreeMap::new();
    for execution in &executions {
        check_finished("Execution", execution)?;
        execution_jobs.insert(
            str_at(execution, "/metadata/name").to_string(),
            str_at(execution, "/status/jobID").to_string(),
        );
    }
    for inst in &installations {
        check_finished("Installation", inst)?;
        let name = str_at(inst, "/metadata/name");
        if inst
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .is_some_and(|a| a.contains_key(OPERATION))
        {
            return Err(format!("Installation {name} still has {OPERATION}"));
        }
        let execution = str_at(inst, "/status/executionRef/name");
        match execution_jobs.get(execution) {
            Some(job) if job == str_at(inst, "/status/jobID") => {}
            other => {
                return Err(format!(
                    "Installation {name}: job {} but its Execution {execution:?} has {other:?}",
                    str_at(inst, "/status/jobID")
                ));
            }
        }
    }
    let mut seen = BTreeSet::new();
    for di in &deploy_items {
        check_finished("DeployItem", di)?;
        let name = str_at(di, "/metadata/name");
        let execution = str_at(di, &format!("/metadata/labels/{}", escape(MANAGED_BY)));
        let item = str_at(di, &format!("/metadata/labels/{}", escape(ITEM_NAME)));
        if !seen.insert((execution.to_string(), item.to_string())) {
            return Err(format!(
                "duplicate deploy item {name} for ({execution}, {item})"
            ));
        }
        match execution_jobs.get(execution) {
            Some(job) if job == str_at(di, "/status/jobID") => {}
            other => {
                return Err(format!(
                    "DeployItem {name}: job {} but its Execution {execution:?} has {other:?}",
                    str_at(di, "/status/jobID")
                ));
            }
        }
    }
    Ok(deploy_items)
}

/// JSON pointer escaping of `/` in a label key.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// From the store history of one deploy item (oldest first): the history is consistent (each
/// entry's previous phase is the phase the entry before left), the item was created exactly
/// once, and its phase went exactly once from none to `Succeeded` and never left it. The
/// mock deployer picks up and finishes a job in one status write, so later jobs show as
/// `Succeeded -> Succeeded` entries. History entries carry no jobID, so a second finish of
/// the same job cannot be told from the finish of a new job here; what is checked is that no
/// entry is lost or out of order, and no stale or concurrent write shows as a regression.
/// Returns the number of history entries.
fn check_history(daemon: &Daemon, name: &str) -> Result<usize, String> {
    let history = daemon
        .get_json(&format!(
            "/appliance/v1/history?kind=DeployItem&namespace={NAMESPACE}&name={name}&limit=10000"
        ))
        .ok_or_else(|| format!("no history for DeployItem {name}"))?;
    let mut entries = history["items"].as_array().cloned().unwrap_or_default();
    entries.sort_by_key(|e| e["revision"].as_u64());
    let trace = || {
        entries
            .iter()
            .map(|e| {
                format!(
                    "{} {}->{}",
                    str_at(e, "/changeType"),
                    str_at(e, "/previousPhase"),
                    str_at(e, "/phase")
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut phase = String::new();
    let mut transitions = Vec::new();
    for (n, entry) in entries.iter().enumerate() {
        let change = str_at(entry, "/changeType");
        let previous = str_at(entry, "/previousPhase");
        let next = str_at(entry, "/phase");
        let expected_change = if n == 0 { "Added" } else { "Modified" };
        if change != expected_change || previous != phase {
            return Err(format!(
                "DeployItem {name}: history entry {n} does not follow: {}",
                trace()
            ));
        }
        if next != previous {
            transitions.push(format!("{previous}->{next}"));
        }
        phase = next.to_string();
    }
    if transitions != ["->Succeeded"] {
        return Err(format!(
            "DeployItem {name}: phase transitions {transitions:?}, expected exactly one \
             into Succeeded: {}",
            trace()
        ));
    }
    Ok(entries.len())
}

#[test]
fn controllers_survive_sigkill_at_random_moments() {
    let started = Instant::now();
    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1234_abcd_u64);
    let mut rng = Rng(seed.max(1));
    let dirs = tempfile::tempdir().unwrap();
    let manifests = dirs.path().join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    for i in 0..INSTALLATIONS {
        write_installation(&manifests, i, 0);
    }

    let mut daemon = Daemon::start_with_config(dirs.path(), "");
    let rounds = std::env::var("CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(ROUNDS);
    let mut touched = 0;
    for round in 1..=rounds {
        std::thread::sleep(Duration::from_millis(rng.range(20, 300)));
        daemon.child.kill().expect("SIGKILL the daemon");
        daemon.child.wait().unwrap();
        // New file revisions request new jobs: some written while the daemon is down, some
        // while it runs.
        if round % 3 == 0 {
            for _ in 0..3 {
                let i = rng.range(0, INSTALLATIONS as u64) as usize;
                write_installation(&manifests, i, round);
                touched += 1;
            }
        }
        daemon = Daemon::start_with_config(dirs.path(), "");
        if round % 3 == 1 {
            for _ in 0..2 {
                let i = rng.range(0, INSTALLATIONS as u64) as usize;
                write_installation(&manifests, i, round);
                touched += 1;
            }
        }
    }
    let crashes_done = started.elapsed();

    let deadline = Instant::now() + Duration::from_secs(60);
    let deploy_items = loop {
        let result = check_end_state(&daemon);
        match result {
            Ok(items) => break items,
            Err(e) if Instant::now() > deadline => panic!(
                "not converged 60 s after the last restart: {e}\n--- daemon log (tail) ---\n{}",
                tail(&daemon.logs(), 60)
            ),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    let mut history_entries = 0;
    for di in &deploy_items {
        let name = str_at(di, "/metadata/name");
        history_entries += check_history(&daemon, name).unwrap_or_else(|e| panic!("{e}"));
    }
    println!(
        "crash: {rounds} SIGKILL rounds (seed {seed:#x}), {INSTALLATIONS} installations, \
         {} deploy items, {touched} file touches, {history_entries} deploy item history entries; \
         crashing took {:.1?}, total {:.1?}",
        deploy_items.len(),
        crashes_done,
        started.elapsed()
    );
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
