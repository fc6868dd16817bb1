//! End-to-end: `kubectl get events` against the real daemon, whose Events are derived from the
//! store's history (phase transitions, creations, errors).

use std::process::Command;
use std::time::Duration;

use landscaper_e2e::{Daemon, eventually, kubectl};
use serde_json::Value;

const TARGET: &str = r#"
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Target
metadata:
  name: edge
  namespace: e2e
spec:
  type: landscaper.gardener.cloud/kubernetes-cluster
  config:
    kubeconfig: |
      apiVersion: v1
      kind: Config
      clusters: [{name: c, cluster: {server: "https://edge.invalid:6443"}}]
      contexts: [{name: c, context: {cluster: c, user: u}}]
      current-context: c
      users: [{name: u, user: {token: hunter2-target}}]
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: e2e
stringData:
  password: hunter2-secret
"#;

/// An installation with one mock deploy item; `mock` is more of its `ProviderConfiguration`.
fn installation(name: &str, mock: &str) -> String {
    format!(
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: {name}
  namespace: e2e
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  imports:
    targets:
      - name: cluster
        target: edge
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
                    type: landscaper.gardener.cloud/mock
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
                      {mock}
"#
    )
}

const INST_PATH: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/installations";

struct Kubectl {
    path: std::path::PathBuf,
    server: String,
    home: tempfile::TempDir,
}

impl Kubectl {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new(&self.path)
            .args(["--server", &self.server])
            .args(args)
            .env("HOME", self.home.path())
            .env("KUBECONFIG", self.home.path().join("none"))
            .output()
            .expect("run kubectl");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "kubectl {args:?} failed: {stderr}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("kubectl {args:?}: {e}: {out}"))
    }
}

/// The cells of a table line as kubectl prints them (columns are separated by 2+ spaces).
fn cells(line: &str) -> Vec<&str> {
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

fn rows(out: &str) -> Vec<Vec<&str>> {
    out.lines().skip(1).map(cells).collect()
}

#[test]
fn kubectl_shows_events_of_phase_transitions_and_failures() {
    let Some(path) = kubectl() else {
        println!("SKIP: kubectl not found (set KUBECTL or run scripts/test.sh)");
        return;
    };
    let daemon = Daemon::start();
    daemon.write("target.yaml", TARGET);
    daemon.write(
        "good.yaml",
        &installation("good", r#"providerStatus: "ok""#),
    );
    daemon.write("bad.yaml", &installation("bad", "phase: Failed"));
    let phase_of = |name: &str, phase: &str| {
        daemon
            .get_json(&format!("{INST_PATH}/{name}"))
            .filter(|o| o["status"]["phase"] == phase)
    };
    let good = eventually(Duration::from_secs(30), "good Succeeded", || {
        phase_of("good", "Succeeded")
    });
    eventually(Duration::from_secs(30), "bad Failed", || {
        phase_of("bad", "Failed")
    });
    let k = Kubectl {
        path,
        server: daemon.server.clone(),
        home: tempfile::tempdir().unwrap(),
    };

    // The table: kubectl's event columns, oldest event first.
    let out = k.run(&["get", "events", "-n", "e2e"]);
    let header = cells(out.lines().next().unwrap_or_default());
    assert_eq!(
        header,
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{out}"
    );
    let table = rows(&out);
    let find = |object: &str, reason: &str| {
        table
            .iter()
            .find(|r| r.get(2) == Some(&reason) && r.get(3) == Some(&object))
            .unwrap_or_else(|| panic!("no {reason} event of {object}:\n{out}"))
            .clone()
    };
    let created = find("installation/good", "Created");
    assert_eq!(created[1], "Normal", "{out}");
    assert_eq!(created[4], "created", "{out}");
    let succeeded = find("installation/good", "Succeeded");
    assert_eq!(succeeded[1], "Normal", "{out}");
    assert!(succeeded[4].starts_with("phase "), "{out}");
    assert!(succeeded[4].ends_with("-> Succeeded"), "{out}");
    assert!(
        succeeded[0].ends_with('s') || succeeded[0].ends_with('m'),
        "LAST SEEN is an age: {out}"
    );
    assert_eq!(find("execution/good", "Succeeded")[1], "Normal", "{out}");
    let failed = find("installation/bad", "Failed");
    assert_eq!(failed[1], "Warning", "{out}");
    assert!(failed[4].contains("-> Failed"), "{out}");
    assert!(
        table.iter().any(|r| r[3].starts_with("deployitem/bad-item")
            && r[2] == "Failed"
            && r[1] == "Warning"),
        "{out}"
    );
    let position = |object: &str, reason: &str| {
        table
            .iter()
            .position(|r| r[3] == object && r[2] == reason)
            .unwrap()
    };
    assert!(
        position("installation/good", "Created") < position("installation/good", "Succeeded"),
        "{out}"
    );
    // Only Installations, Executions and DeployItems (and ManifestFiles, in `default`).
    for row in &table {
        let kind = row[3].split('/').next().unwrap_or_default();
        assert!(
            ["installation", "execution", "deployitem"].contains(&kind),
            "{out}"
        );
    }

    // All namespaces as JSON: the Event objects.
    let list = k.json(&["get", "events", "-A", "-o", "json"]);
    let text = list.to_string();
    assert!(
        !text.contains("hunter2"),
        "secret content in events: {text}"
    );
    let items = list["items"].as_array().expect("items").clone();
    for event in &items {
        assert_eq!(event["kind"], "Event", "{event}");
        assert_eq!(event["apiVersion"], "v1", "{event}");
        assert_eq!(event["source"]["component"], "landscaper-appliance");
        assert_eq!(event["reportingComponent"], "landscaper-appliance");
        let kind = event["involvedObject"]["kind"].as_str().unwrap_or_default();
        assert!(
            ["Installation", "Execution", "DeployItem", "ManifestFile"].contains(&kind),
            "{event}"
        );
        let name = event["metadata"]["name"].as_str().unwrap();
        let object = event["involvedObject"]["name"].as_str().unwrap();
        assert_eq!(name.len(), object.len() + 17, "{name}");
        assert!(name.starts_with(&format!("{object}.")), "{name}");
    }
    let event = |kind: &str, name: &str, reason: &str| -> Value {
        items
            .iter()
            .find(|e| {
                e["involvedObject"]["kind"] == kind
                    && e["involvedObject"]["name"] == name
                    && e["reason"] == reason
            })
            .unwrap_or_else(|| panic!("no {reason} event of {kind} {name}: {text}"))
            .clone()
    };
    let ok = event("Installation", "good", "Succeeded");
    assert_eq!(ok["type"], "Normal");
    assert_eq!(ok["metadata"]["namespace"], "e2e");
    assert_eq!(ok["involvedObject"]["namespace"], "e2e");
    assert_eq!(
        ok["involvedObject"]["apiVersion"],
        "landscaper.gardener.cloud/v1alpha1"
    );
    assert_eq!(ok["involvedObject"]["uid"], good["metadata"]["uid"]);
    assert_eq!(ok["count"], 1);
    assert_eq!(ok["firstTimestamp"], ok["lastTimestamp"]);
    assert_eq!(ok["metadata"]["creationTimestamp"], ok["firstTimestamp"]);
    let rv: u64 = ok["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        ok["metadata"]["name"],
        format!("good.{rv:016x}"),
        "Installation events are named <name>.<revision in hex>"
    );
    let bad = event("Installation", "bad", "Failed");
    assert_eq!(bad["type"], "Warning");
    assert!(
        bad["message"].as_str().unwrap().contains("-> Failed"),
        "{bad}"
    );
    let file = event("ManifestFile", "good.yaml", "Created");
    assert_eq!(file["metadata"]["namespace"], "default");
    assert!(
        items
            .iter()
            .all(|e| !["Target", "Secret"].contains(&e["involvedObject"]["kind"].as_str().unwrap())),
        "{text}"
    );

    // Field selectors.
    let out = k.run(&[
        "get",
        "events",
        "-n",
        "e2e",
        "--field-selector",
        "involvedObject.kind=Installation",
    ]);
    let table = rows(&out);
    assert!(!table.is_empty(), "{out}");
    assert!(
        table.iter().all(|r| r[3].starts_with("installation/")),
        "{out}"
    );
    assert!(
        table
            .iter()
            .any(|r| r[3] == "installation/good" && r[2] == "Succeeded" && r[1] == "Normal"),
        "{out}"
    );
    let warnings = k.json(&[
        "get",
        "events",
        "-n",
        "e2e",
        "--field-selector",
        "involvedObject.name=bad,type=Warning",
        "-o",
        "json",
    ]);
    let warnings = warnings["items"].as_array().unwrap();
    assert!(!warnings.is_empty());
    assert!(
        warnings
            .iter()
            .all(|e| e["type"] == "Warning" && e["involvedObject"]["name"] == "bad"),
        "{warnings:?}"
    );
    let out = k.run(&["get", "events", "-n", "other"]);
    assert!(out.trim().is_empty(), "{out}");

    // One event by name, as YAML.
    let name = ok["metadata"]["name"].as_str().unwrap();
    let out = k.run(&["get", "event", name, "-n", "e2e", "-o", "yaml"]);
    let one: Value = serde_saphyr::from_str(&out).expect("kubectl printed YAML");
    assert_eq!(one, ok);

    // `-o wide` adds kube-apiserver's wide columns.
    let out = k.run(&["get", "ev", "-n", "e2e", "-o", "wide"]);
    assert_eq!(
        cells(out.lines().next().unwrap_or_default()),
        [
            "LAST SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "SUBOBJECT",
            "SOURCE",
            "MESSAGE",
            "FIRST SEEN",
            "COUNT",
            "NAME"
        ],
        "{out}"
    );
    assert!(out.contains(name), "{out}");

    // `kubectl describe` selects the object's events by its uid.
    let out = k.run(&["describe", "installation", "good", "-n", "e2e"]);
    let events = out.split("\nEvents:").nth(1).unwrap_or_default();
    assert!(
        events.contains("Succeeded") && events.contains("landscaper-appliance"),
        "{out}"
    );
}

/// `kubectl get events -w` streams the events as they happen, and a watch resumed from a
/// list's resourceVersion gets only what came after it.
#[test]
fn kubectl_watches_events() {
    use std::io::{BufRead, BufReader};
    let Some(path) = kubectl() else {
        println!("SKIP: kubectl not found (set KUBECTL or run scripts/test.sh)");
        return;
    };
    let daemon = Daemon::start();
    daemon.write("target.yaml", TARGET);
    daemon.write(
        "first.yaml",
        &installation("first", r#"providerStatus: "ok""#),
    );
    eventually(Duration::from_secs(20), "first succeeded", || {
        let inst = daemon.get_json(&format!("{INST_PATH}/first"))?;
        (inst["status"]["phase"] == "Succeeded").then_some(())
    });
    let home = tempfile::tempdir().unwrap();
    let mut watch = Command::new(&path)
        .args(["--server", &daemon.server])
        .args(["get", "events", "-n", "e2e", "-w", "--output-watch-events"])
        .env("HOME", home.path())
        .env("KUBECONFIG", home.path().join("none"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl get events -w");
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // The current events come first (the list), then what happens while watching.
    let wait_for = |what: &dyn Fn(&str) -> bool, label: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        while std::time::Instant::now() < deadline {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
                if what(&line) {
                    return line;
                }
                seen.push(line);
            }
        }
        panic!("no {label} in the watch:\n{}", seen.join("\n"));
    };
    wait_for(&|l| l.contains("installation/first"), "event of first");
    daemon.write(
        "second.yaml",
        &installation("second", r#"providerStatus: "ok""#),
    );
    let line = wait_for(
        &|l| l.contains("installation/second") && l.contains("Succeeded"),
        "Succeeded event of second",
    );
    assert!(line.starts_with("ADDED"), "{line}");
    let _ = watch.kill();
    let _ = watch.wait();

    // Resuming after a list's resourceVersion: only newer events.
    let list = daemon
        .get_json("/api/v1/namespaces/e2e/events")
        .expect("list events");
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    daemon.write(
        "third.yaml",
        &installation("third", r#"providerStatus: "ok""#),
    );
    eventually(Duration::from_secs(20), "third succeeded", || {
        let inst = daemon.get_json(&format!("{INST_PATH}/third"))?;
        (inst["status"]["phase"] == "Succeeded").then_some(())
    });
    let (code, body) = daemon
        .client()
        .get(
            &format!(
                "/api/v1/namespaces/e2e/events?watch=true&resourceVersion={rv}&timeoutSeconds=1"
            ),
            "application/json",
        )
        .expect("watch events");
    assert_eq!(code, 200);
    let body = String::from_utf8_lossy(&body);
    let names: Vec<String> = body
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| {
            e["object"]["involvedObject"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert!(names.iter().any(|n| n == "third"), "{body}");
    assert!(
        !names.iter().any(|n| n == "first" || n == "second"),
        "{body}"
    );
}
