//! Snapshot tests of what the CLI prints for the error findings of issue 21, with the real
//! binary. The expected texts are plain files in `tests/tests/cli_errors/` (volatile parts
//! replaced: the temp folder by `<tmp>`, revisions, times, job IDs and generated name suffixes
//! by placeholders); `UPDATE_SNAPSHOTS=1` rewrites them from the current output (review the diff).
//!
//! What they keep from coming back: a cause printed two or three times (`(os error 2): No such
//! file or directory (os error 2)`), a reason that repeats its operation (`ImportsSatisfied:
//! ImportsSatisfied:`), a template error's code excerpt squashed into a table row, and waiting
//! shown as an error.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use landscaper_e2e::{Daemon, binary, eventually};

/// Compares `actual` with the snapshot `name`, or writes it with `UPDATE_SNAPSHOTS=1`.
fn snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cli_errors")
        .join(format!("{name}.txt"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_SNAPSHOTS=1 writes it)", path.display()));
    assert_eq!(
        actual,
        expected,
        "{name}: the output differs from {}",
        path.display()
    );
}

/// stderr of a failing CLI run, with the temp folder as `<tmp>`.
fn error_of(args: &[&str], tmp: &Path, env: &[(&str, &str)]) -> String {
    let mut command = Command::new(binary());
    command.args(args).env_remove("LANDSCAPER_APPLIANCE_TOKEN");
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().expect("run landscaper-appliance");
    assert!(!out.status.success(), "{args:?} should fail");
    String::from_utf8_lossy(&out.stderr).replace(&tmp.display().to_string(), "<tmp>")
}

#[test]
fn local_errors_print_each_cause_once() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // Each case its own missing path: some commands create their data folder.
    let missing = |n: &str| t.join(format!("missing-{n}")).display().to_string();
    let (m1, m2, m3, m4) = (
        missing("data"),
        missing("backup"),
        missing("config"),
        missing("token"),
    );
    let backup = t.join("b.db");
    let mut all = String::new();
    for (what, args, env) in [
        (
            "backup from a data folder that does not exist",
            vec!["backup", backup.to_str().unwrap(), "--data", &m1],
            vec![],
        ),
        (
            "restore of a file that does not exist",
            vec!["restore", &m2, "--data", &m1],
            vec![],
        ),
        (
            "serve with a config file that does not exist",
            vec!["serve", "--config", &m3],
            vec![],
        ),
        (
            "a write without a readable token file",
            vec!["reconcile", "x", "--token-file", &m4],
            vec![("LANDSCAPER_APPLIANCE_SERVER", "http://127.0.0.1:1")],
        ),
        (
            "a daemon that is not running",
            vec!["get", "installations"],
            vec![("LANDSCAPER_APPLIANCE_SERVER", "http://127.0.0.1:1")],
        ),
    ] {
        let text = error_of(&args, t, &env);
        for line in text.lines() {
            // Each cause once: no sentence part repeats within a line.
            let parts: Vec<&str> = line.split(": ").collect();
            for (i, p) in parts.iter().enumerate() {
                assert!(
                    p.len() < 12 || !parts[i + 1..].contains(p),
                    "{what}: {p:?} is printed twice in {line:?}"
                );
            }
        }
        all.push_str(&format!("# {what}\n{text}"));
    }
    // An offline render of a failing template keeps the excerpt as lines, the `^` under the place.
    let dir = t.join("render");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("target.yaml"), TARGET).unwrap();
    let file = t.join("broken.yaml");
    std::fs::write(
        &file,
        installation(
            "broken-template",
            TARGET_IMPORT,
            BLUEPRINT_TARGET,
            "deployItems:\n  - name: a\n    type: landscaper.gardener.cloud/mock\n    target:\n      import: cluster\n    config:\n      x: {{ .imports.cluster.spec.nope.deeper }}\n",
        ),
    )
    .unwrap();
    let text = error_of(
        &[
            "render",
            file.to_str().unwrap(),
            "--imports-from",
            dir.to_str().unwrap(),
        ],
        t,
        &[],
    );
    all.push_str(&format!("# render of a failing template\n{text}"));
    snapshot("local_errors", &all);
}

use landscaper_e2e::PLACEHOLDER_TARGET as TARGET;

fn installation(name: &str, imports: &str, blueprint_imports: &str, template: &str) -> String {
    let template: String = template
        .lines()
        .map(|l| format!("                {l}\n"))
        .collect();
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
{imports}
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          imports:
{blueprint_imports}
          deployExecutions:
            - name: default
              type: GoTemplate
              template: |
{template}"#
    )
}

const TARGET_IMPORT: &str = "    targets:\n      - name: cluster\n        target: edge";
const BLUEPRINT_TARGET: &str = "            - name: cluster\n              type: target\n              targetType: landscaper.gardener.cloud/kubernetes-cluster";

/// Replaces what changes from run to run: revisions, times, job IDs, deploy item name
/// suffixes; table rows (not the indented blocks `describe` prints below a row, when `blocks`)
/// with their columns joined by ` | `.
fn normalize(text: &str, blocks: bool) -> String {
    let time = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ").unwrap();
    let job = regex::Regex::new(r"\b[0-9a-f]{8}/([0-9a-f]{8}|-)").unwrap();
    let suffix = regex::Regex::new(r"(DeployItem/[a-z0-9-]+)-[a-z0-9]{5}\b").unwrap();
    let revision = regex::Regex::new(r"^\d+(\s)").unwrap();
    let columns = regex::Regex::new(r"\s{3,}").unwrap();
    text.lines()
        .map(|line| {
            let line = time.replace_all(line, "<time>");
            let line = job.replace_all(&line, "<job>/$1");
            let line = regex::Regex::new(r"<job>/[0-9a-f]{8}")
                .unwrap()
                .replace_all(&line, "<job>/<job>");
            let line = suffix.replace_all(&line, "$1-<sfx>");
            if blocks && line.starts_with("    ") {
                line.to_string()
            } else {
                let line = revision.replace(&line, "<rev>$1");
                columns.replace_all(&line, " | ").to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn describe_tree_and_events_of_failing_and_waiting_installations() {
    let daemon = Daemon::start();
    daemon.write("00-target.yaml", TARGET);
    daemon.write(
        "10-template.yaml",
        &installation(
            "broken-template",
            TARGET_IMPORT,
            BLUEPRINT_TARGET,
            "deployItems:\n  - name: a\n    type: landscaper.gardener.cloud/mock\n    target:\n      import: cluster\n    config:\n      x: {{ .imports.cluster.spec.nope.deeper }}\n      y: yes\n",
        ),
    );
    daemon.write(
        "20-import.yaml",
        &installation(
            "missing-import",
            "    data:\n      - name: greeting\n        dataRef: not-there",
            "            - name: greeting\n              type: data\n              schema: {type: object}",
            "deployItems: []\n",
        ),
    );
    // A mock item that stays Progressing: its installation waits, which is no error.
    daemon.write(
        "30-waiting.yaml",
        &installation(
            "waits",
            TARGET_IMPORT,
            BLUEPRINT_TARGET,
            "deployItems:\n  - name: slow\n    type: landscaper.gardener.cloud/mock\n    target:\n      import: cluster\n    config:\n      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1\n      kind: ProviderConfiguration\n      phase: Progressing\n",
        ),
    );
    let phase = |name: &str| {
        daemon
            .get_json(&format!(
                "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/installations/{name}"
            ))
            .and_then(|o| o["status"]["phase"].as_str().map(str::to_string))
    };
    for name in ["broken-template", "missing-import"] {
        eventually(Duration::from_secs(30), name, || {
            (phase(name).as_deref() == Some("Failed")).then_some(())
        });
    }
    eventually(Duration::from_secs(30), "waits to wait", || {
        daemon
            .get_json("/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/installations/waits")
            .filter(|o| o["status"]["lastError"]["reason"] == "JobIDFinished")
    });
    let cli = |args: &[&str]| {
        let out = daemon.cli(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let history = |name: &str| {
        let text = cli(&["describe", "installation", name, "-n", "e2e"]);
        let at = text
            .find("History (newest first):")
            .expect("a history section");
        // The entries up to the failure (the rest are the job's steps before it).
        text[at..].lines().take(12).collect::<Vec<_>>().join("\n")
    };
    let mut all = String::new();
    all.push_str("# describe installation broken-template\n");
    all.push_str(&normalize(&history("broken-template"), true));
    all.push_str("# describe installation missing-import\n");
    all.push_str(&normalize(
        &history("missing-import")
            .lines()
            .take(3)
            .collect::<Vec<_>>()
            .join("\n"),
        true,
    ));
    all.push_str("# tree waits\n");
    all.push_str(&normalize(&cli(&["tree", "waits", "-n", "e2e"]), false));
    snapshot("describe_and_tree", &all);

    // The multi-line excerpt keeps its shape: each line indented by the same 4 spaces, the `^`
    // under column 21 of template line 7 (where Go's error points), behind the `7: ` number.
    let text = cli(&["describe", "installation", "broken-template", "-n", "e2e"]);
    let history = &text[text.find("History").unwrap()..];
    let code = history
        .lines()
        .find(|l| l.contains("7:       x: {{"))
        .expect("the excerpt's line below the row");
    let caret = history
        .lines()
        .skip_while(|l| !l.contains("7:       x: {{"))
        .nth(1)
        .expect("the caret line");
    assert_eq!(caret.trim(), "^");
    assert!(code.starts_with("    "), "indented below the row: {code:?}");
    assert_eq!(
        caret.find('^'),
        Some(4 + "7: ".len() + 20),
        "{code}\n{caret}"
    );

    // Events: waiting is Normal with Landscaper's reason; failures are Warnings.
    let events = daemon
        .get_json("/api/v1/namespaces/e2e/events")
        .expect("events");
    let of = |name: &str| -> Vec<(String, String)> {
        events["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| {
                e["involvedObject"]["kind"] == "Installation" && e["involvedObject"]["name"] == name
            })
            .map(|e| {
                (
                    e["type"].as_str().unwrap().to_string(),
                    e["reason"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let waits = of("waits");
    assert!(
        waits.contains(&("Normal".into(), "JobIDFinished".into())),
        "{waits:?}"
    );
    assert!(waits.iter().all(|(t, _)| t == "Normal"), "{waits:?}");
    assert!(of("missing-import").contains(&("Warning".into(), "Failed".into())));

    // Logs: a failed job at WARN with stable keys, no Debug structs, the reason once.
    let logs = daemon.logs();
    let failed = logs
        .lines()
        .find(|l| l.contains("job failed") && l.contains("object=e2e/missing-import"))
        .unwrap_or_else(|| panic!("no WARN line for the failed job:\n{logs}"));
    assert!(failed.contains(" WARN "), "{failed}");
    assert!(failed.contains("reason=ImportsSatisfied"), "{failed}");
    assert!(
        !logs.contains("ImportsSatisfied: ImportsSatisfied"),
        "{logs}"
    );
    assert!(!logs.contains("=Some("), "Debug values in the log:\n{logs}");
}

/// A deploy item whose cluster cannot be reached: retried with growing intervals (5 s, then
/// 10 s: two attempts within a 12 s timeout, where a fixed 5 s retry plus the wake-ups by its own
/// status writes made six or more), one WARN line for the repeated error instead of one line per
/// attempt, and the timeout names the cause.
#[test]
fn an_unreachable_cluster_backs_off_is_logged_once_and_the_timeout_names_the_cause() {
    let daemon = Daemon::start();
    daemon.write(
        "40-unreachable.yaml",
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Target
metadata:
  name: down
  namespace: e2e
spec:
  type: landscaper.gardener.cloud/kubernetes-cluster
  config:
    kubeconfig: |
      apiVersion: v1
      kind: Config
      clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
      contexts: [{name: c, context: {cluster: c, user: u}}]
      current-context: c
      users: [{name: u, user: {token: t}}]
---
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Execution
metadata:
  name: to-down
  namespace: e2e
spec:
  deployItems:
    - name: cm
      type: landscaper.gardener.cloud/kubernetes-manifest
      timeout: 12s
      target: {name: down, namespace: e2e}
      config:
        apiVersion: manifest.deployer.landscaper.gardener.cloud/v1alpha2
        kind: ProviderConfiguration
        manifests:
          - policy: manage
            manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: default}, data: {a: b}}
"#,
    );
    let item = eventually(Duration::from_secs(40), "the item to fail", || {
        let list = daemon
            .get_json("/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/deployitems")?;
        list["items"]
            .as_array()?
            .iter()
            .find(|i| i["status"]["phase"] == "Failed")
            .cloned()
    });
    let last = &item["status"]["lastError"];
    assert_eq!(last["reason"], "ProgressingTimeout", "{item:#}");
    let message = last["message"].as_str().unwrap();
    assert!(
        message.contains("; last error: cluster unreachable: "),
        "the timeout names its cause: {message}"
    );
    let attempts = item["status"]["lastErrors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["reason"] != "ProgressingTimeout")
        .count();
    assert!(
        (1..=2).contains(&attempts),
        "attempts within 12 s with a 5 s, 10 s backoff: {item:#}"
    );
    let logs = daemon.logs();
    let warnings = logs
        .lines()
        .filter(|l| l.contains(" WARN ") && l.contains("deployer call failed"))
        .count();
    assert_eq!(warnings, 1, "one WARN line for the repeated error:\n{logs}");
    assert!(
        !logs
            .lines()
            .any(|l| l.contains(" INFO ") && l.contains("cluster unreachable")),
        "no INFO line per attempt:\n{logs}"
    );
    // The job's outcome is logged right after its status is written: wait for the line.
    eventually(
        Duration::from_secs(10),
        "a WARN `job failed` line for the item's ProgressingTimeout",
        || {
            daemon
                .logs()
                .lines()
                .any(|l| {
                    l.contains(" WARN ")
                        && l.contains("job failed")
                        && l.contains("kind=DeployItem")
                        && l.contains("reason=ProgressingTimeout")
                })
                .then_some(())
        },
    );
}
