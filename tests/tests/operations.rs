//! Operations through the API and the CLI, on the real binary: `reconcile` starts a new job,
//! `tree` shows the installation tree, `delete` refuses objects of manifest files, writes need
//! the token, and `kubectl annotate` works (skipped without kubectl).

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use landscaper_appliance::commands::client::{Client, ClientError};
use landscaper_e2e::{Daemon, binary, eventually, kubectl};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(60);

const INSTALLATION: &str =
    "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/ops/installations/ops-inst";

/// An Installation with an inline blueprint rendering one mock deploy item.
const FIXTURE: &str = r#"
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: ops-inst
  namespace: ops
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchema: "https://json-schema.org/draft/2019-09/schema"
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
                      phase: Succeeded
"#;

fn text(output: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs the CLI against `daemon` with the token file of its data folder.
fn cli(daemon: &Daemon, args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .arg("--token-file")
        .arg(daemon.data.join("api-token"))
        .env("LANDSCAPER_APPLIANCE_SERVER", &daemon.server)
        .env_remove("LANDSCAPER_APPLIANCE_TOKEN")
        .output()
        .expect("run landscaper-appliance")
}

fn token(daemon: &Daemon) -> String {
    std::fs::read_to_string(daemon.data.join("api-token"))
        .expect("the daemon writes DATA/api-token")
        .trim()
        .to_string()
}

/// The Installation's `(jobID, jobIDFinished, phase)`.
fn job(daemon: &Daemon) -> Option<(String, String, String)> {
    let inst = daemon.get_json(INSTALLATION)?;
    let field = |f: &str| inst["status"][f].as_str().unwrap_or_default().to_string();
    Some((field("jobID"), field("jobIDFinished"), field("phase")))
}

/// Waits until the Installation's job is finished and Succeeded, and is not `previous`.
fn wait_succeeded(daemon: &Daemon, previous: Option<&str>) -> String {
    eventually(
        TIMEOUT,
        "a finished, Succeeded job of the installation",
        || {
            let (id, finished, phase) = job(daemon)?;
            (!id.is_empty()
                && id == finished
                && phase == "Succeeded"
                && Some(id.as_str()) != previous)
                .then_some(id)
        },
    )
}

fn start() -> Daemon {
    let daemon = Daemon::start();
    daemon.write("ops.yaml", FIXTURE);
    daemon
}

#[test]
fn token_file_is_private_and_writes_need_it() {
    use std::os::unix::fs::PermissionsExt;
    let daemon = start();
    let path = daemon.data.join("api-token");
    let token = token(&daemon);
    assert_eq!(token.len(), 64, "32 random bytes as hex");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    eventually(TIMEOUT, "the installation", || {
        daemon.get_json(INSTALLATION)
    });

    let patch =
        json!({"metadata": {"annotations": {"landscaper.gardener.cloud/operation": "reconcile"}}});
    for client in [
        Client::new(&daemon.server).unwrap(),
        Client::new(&daemon.server)
            .unwrap()
            .with_token("0".repeat(64)),
    ] {
        match client.patch_json(INSTALLATION, &patch) {
            Err(ClientError::Api { code, reason, .. }) => {
                assert_eq!((code, reason.as_str()), (401, "Unauthorized"))
            }
            other => panic!("an unauthenticated PATCH must get 401, got {other:?}"),
        }
        match client.delete(INSTALLATION) {
            Err(ClientError::Api { code, .. }) => assert_eq!(code, 401),
            other => panic!("an unauthenticated DELETE must get 401, got {other:?}"),
        }
    }
    // Only annotations and labels can change.
    let client = Client::new(&daemon.server).unwrap().with_token(&token);
    match client.patch_json(INSTALLATION, &json!({"spec": {"context": "other"}})) {
        Err(ClientError::Api { code, message, .. }) => {
            assert_eq!(code, 403);
            assert!(message.contains("not spec.context"), "{message}");
        }
        other => panic!("a PATCH of spec must get 403 Forbidden, got {other:?}"),
    }
    let labelled = client
        .patch_json(
            INSTALLATION,
            &json!({"metadata": {"labels": {"team": "edge"}}}),
        )
        .unwrap();
    assert_eq!(labelled["metadata"]["labels"]["team"], "edge");

    // The CLI without a readable token file says where the token comes from.
    let output = Command::new(binary())
        .args(["reconcile", "ops-inst", "-n", "ops", "--token-file"])
        .arg(daemon.data.join("missing-token"))
        .env("LANDSCAPER_APPLIANCE_SERVER", &daemon.server)
        .output()
        .unwrap();
    assert!(!output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("LANDSCAPER_APPLIANCE_TOKEN"),
        "{}",
        text(&output)
    );
    // The token with LANDSCAPER_APPLIANCE_TOKEN works too.
    let output = Command::new(binary())
        .args(["interrupt", "ops-inst", "-n", "ops"])
        .env("LANDSCAPER_APPLIANCE_SERVER", &daemon.server)
        .env("LANDSCAPER_APPLIANCE_TOKEN", &token)
        .env("LANDSCAPER_APPLIANCE_DATA", daemon.data.join("nowhere"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));

    assert!(
        !daemon.logs().contains(&token),
        "the token must never be logged"
    );
}

#[test]
fn reconcile_tree_and_delete_through_the_cli() {
    let daemon = start();
    let first = wait_succeeded(&daemon, None);

    // reconcile: a new job starts and finishes.
    let output = cli(&daemon, &["reconcile", "ops-inst", "-n", "ops"]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("reconcile requested"),
        "{}",
        text(&output)
    );
    let second = wait_succeeded(&daemon, Some(&first));
    assert_ne!(first, second);
    // The controller consumed the request.
    let inst = daemon.get_json(INSTALLATION).unwrap();
    assert!(
        inst["metadata"]["annotations"]["landscaper.gardener.cloud/operation"].is_null(),
        "{inst}"
    );

    // tree: the installation, its execution and its deploy item, with phases and job IDs.
    let output = Command::new(binary())
        .args(["tree", "ops-inst", "-n", "ops"])
        .env("LANDSCAPER_APPLIANCE_SERVER", &daemon.server)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let tree = String::from_utf8_lossy(&output.stdout).to_string();
    let lines: Vec<&str> = tree.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{tree}");
    let short = &second[..8];
    assert!(
        lines[1].starts_with("Installation/ops-inst ")
            && lines[1].contains("Succeeded")
            && lines[1].contains(&format!("{short}/{short}")),
        "{tree}"
    );
    assert!(
        lines[2].starts_with("└── Execution/ops-inst ") && lines[2].contains("Succeeded"),
        "{tree}"
    );
    assert!(
        lines[3].starts_with("    └── DeployItem/ops-inst-item-") && lines[3].contains("Succeeded"),
        "{tree}"
    );
    let output = Command::new(binary())
        .args(["tree", "ops-inst", "-n", "ops", "-o", "json"])
        .env("LANDSCAPER_APPLIANCE_SERVER", &daemon.server)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let tree: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(tree["kind"], "Installation");
    assert_eq!(tree["jobIDFinished"], second.as_str());
    let execution = &tree["children"][0];
    assert_eq!(execution["kind"], "Execution");
    assert_eq!(execution["children"][0]["kind"], "DeployItem");
    assert_eq!(execution["children"][0]["phase"], "Succeeded");

    // delete: the installation belongs to ops.yaml, so the API refuses.
    let output = cli(&daemon, &["delete", "ops-inst", "-n", "ops"]);
    assert!(!output.status.success(), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "Installation ops/ops-inst is defined by manifest file ops.yaml: remove it from the folder instead"
        ),
        "{}",
        text(&output)
    );
    assert!(daemon.get_json(INSTALLATION).is_some());

    // An object no file defines can be deleted: the DataObject holding the execution's exports.
    let execution = daemon
        .get_json("/apis/landscaper.gardener.cloud/v1alpha1/namespaces/ops/executions/ops-inst")
        .unwrap();
    let exports = execution["status"]["exportRef"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("the execution has an export DataObject: {execution}"));
    let output = cli(&daemon, &["delete", "dataobject", exports, "-n", "ops"]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains(&format!(
            "dataobject.landscaper.gardener.cloud \"{exports}\" "
        )),
        "{}",
        text(&output)
    );
    let path =
        format!("/apis/landscaper.gardener.cloud/v1alpha1/namespaces/ops/dataobjects/{exports}");
    eventually(TIMEOUT, "the deleted DataObject to go", || {
        daemon
            .get_json(&path)
            .is_none_or(|d| d["metadata"]["deletionTimestamp"].is_string())
            .then_some(())
    });
}

fn run_kubectl(kubectl: &Path, server: &str, args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(kubectl)
        .args(["--server", server])
        .args(args)
        // No user kubeconfig or discovery cache.
        .env("KUBECONFIG", home.path().join("kubeconfig"))
        .env("HOME", home.path())
        .output()
        .expect("run kubectl")
}

#[test]
fn kubectl_annotate_requests_a_reconcile() {
    let Some(kubectl) = kubectl() else {
        println!("SKIP: kubectl not found (scripts/test.sh installs bin/kubectl)");
        return;
    };
    let daemon = start();
    let first = wait_succeeded(&daemon, None);
    let token = token(&daemon);
    // kubectl (client-go) sends --token only over TLS; over plain HTTP it sends the user info of
    // the server URL as basic authentication, which the appliance takes.
    let authorised = daemon
        .server
        .replacen("http://", &format!("http://token:{token}@"), 1);
    let annotate = [
        "-n",
        "ops",
        "annotate",
        "installation",
        "ops-inst",
        "landscaper.gardener.cloud/operation=reconcile",
    ];

    let refused = run_kubectl(&kubectl, &daemon.server, &annotate);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("Unauthorized"),
        "{}",
        text(&refused)
    );

    let output = run_kubectl(&kubectl, &authorised, &annotate);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout)
            .contains("installation.landscaper.gardener.cloud/ops-inst annotated"),
        "{}",
        text(&output)
    );
    wait_succeeded(&daemon, Some(&first));

    let output = run_kubectl(
        &kubectl,
        &authorised,
        &["-n", "ops", "delete", "installation", "ops-inst"],
    );
    assert!(!output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("is defined by manifest file ops.yaml"),
        "{}",
        text(&output)
    );
    let output = run_kubectl(
        &kubectl,
        &authorised,
        &[
            "-n",
            "ops",
            "patch",
            "installation",
            "ops-inst",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"context":"x"}}"#,
        ],
    );
    assert!(!output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("(Forbidden)")
            && String::from_utf8_lossy(&output.stderr).contains("not spec.context"),
        "{}",
        text(&output)
    );
    assert!(
        !daemon.logs().contains(&token),
        "the token must never be logged"
    );
}
