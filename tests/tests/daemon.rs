//! End-to-end: the real binary on a temp folder and a free port, driven through files, the HTTP
//! API and the CLI.

use std::time::Duration;

use landscaper_e2e::{Daemon, binary, eventually};
use serde_json::Value;

use landscaper_e2e::PLACEHOLDER_TARGET as TARGET;

fn installation(name: &str, value: &str) -> String {
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
                      providerStatus: {{{{ "{value}" | quote }}}}
"#
    )
}

const INST_PATH: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/installations";
const FILES_PATH: &str = "/apis/appliance.landscaper-appliance.io/v1alpha1/manifestfiles";

fn items(list: &Value) -> Vec<Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

fn file_status(daemon: &Daemon, path: &str) -> Option<Value> {
    let list = daemon.get_json(FILES_PATH)?;
    items(&list)
        .into_iter()
        .find(|f| f["spec"]["path"] == path)
        .map(|f| f["status"].clone())
}

#[test]
fn files_become_objects_and_changes_follow_the_folder() {
    let daemon = Daemon::start();
    daemon.write("00-target.yaml", TARGET);
    daemon.write("apps/10-inst.yaml", &installation("web", "v1"));
    let inst = eventually(Duration::from_secs(10), "installation web", || {
        daemon.get_json(&format!("{INST_PATH}/web"))
    });
    assert_eq!(inst["metadata"]["generation"], 1);
    // The controller consumes the reconcile request of the new file and runs the job.
    let inst = eventually(Duration::from_secs(20), "web Succeeded", || {
        let o = daemon.get_json(&format!("{INST_PATH}/web"))?;
        (o["status"]["phase"] == "Succeeded").then_some(o)
    });
    assert!(
        inst["metadata"]["annotations"]
            .get("landscaper.gardener.cloud/operation")
            .is_none(),
        "the reconcile annotation is consumed: {inst}"
    );
    let status = eventually(
        Duration::from_secs(10),
        "ManifestFile of apps/10-inst.yaml",
        || file_status(&daemon, "apps/10-inst.yaml"),
    );
    assert_eq!(status["objects"][0]["name"], "web", "{status}");

    // A spec change bumps the generation; the uid stays.
    daemon.write("apps/10-inst.yaml", &installation("web", "v2"));
    let updated = eventually(Duration::from_secs(10), "generation 2", || {
        daemon
            .get_json(&format!("{INST_PATH}/web"))
            .filter(|i| i["metadata"]["generation"] == 2)
    });
    assert_eq!(updated["metadata"]["uid"], inst["metadata"]["uid"]);

    // A broken revision changes nothing and records where it broke.
    daemon.write(
        "apps/10-inst.yaml",
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Installation\nmetadata: [\n",
    );
    let broken = eventually(
        Duration::from_secs(10),
        "lastError on the broken file",
        || file_status(&daemon, "apps/10-inst.yaml").filter(|s| s["lastError"].is_object()),
    );
    assert!(
        broken["lastError"]["line"].as_u64().unwrap() >= 3,
        "{broken}"
    );
    assert!(broken["lastError"]["message"].as_str().unwrap().len() > 5);
    let still = daemon.get_json(&format!("{INST_PATH}/web")).unwrap();
    // The controllers may write status meanwhile; the object itself is the last good one.
    assert_eq!(still["metadata"]["generation"], 2);
    assert_eq!(still["spec"], updated["spec"]);

    // Removing the file deletes its objects.
    std::fs::remove_file(daemon.manifests.join("apps/10-inst.yaml")).unwrap();
    eventually(Duration::from_secs(10), "installation web deleted", || {
        daemon
            .get_json(&format!("{INST_PATH}/web"))
            .is_none()
            .then_some(())
    });
    eventually(Duration::from_secs(10), "ManifestFile removed", || {
        file_status(&daemon, "apps/10-inst.yaml")
            .is_none()
            .then_some(())
    });
}

#[test]
fn restart_keeps_state_and_unchanged_files_write_nothing() {
    let dirs = tempfile::tempdir().unwrap();
    let manifests = dirs.path().join("m");
    let data = dirs.path().join("d");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::write(manifests.join("target.yaml"), TARGET).unwrap();
    std::fs::write(manifests.join("inst.yaml"), installation("api", "v1")).unwrap();
    let mut first = Daemon::start_on(&manifests, &data);
    // Once the job has finished, nothing is left to write.
    let before = eventually(
        Duration::from_secs(20),
        "installation api Succeeded",
        || {
            let o = first.get_json(&format!("{INST_PATH}/api"))?;
            (o["status"]["phase"] == "Succeeded").then_some(o)
        },
    );
    let (status, took) = first.terminate();
    assert!(status.success(), "exit status {status}:\n{}", first.logs());
    assert!(took < Duration::from_secs(10), "shutdown took {took:?}");

    let second = Daemon::start_on(&manifests, &data);
    let after = second
        .get_json(&format!("{INST_PATH}/api"))
        .expect("still there after restart");
    assert_eq!(after["metadata"]["uid"], before["metadata"]["uid"]);
    assert_eq!(
        after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
        "an unchanged folder must not write anything at start-up"
    );
}

#[test]
fn cli_get_describe_and_validate() {
    let daemon = Daemon::start();
    daemon.write("target.yaml", TARGET);
    daemon.write("inst.yaml", &installation("cli", "v1"));
    eventually(Duration::from_secs(10), "installation cli", || {
        daemon.get_json(&format!("{INST_PATH}/cli"))
    });

    let out = daemon.cli(&["get", "inst", "-A"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header = text.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("NAMESPACE") && header.contains("NAME"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("e2e") && l.contains("cli")),
        "{text}"
    );

    let out = daemon.cli(&["get", "installation", "cli", "-n", "e2e", "-o", "json"]);
    let json: Value = serde_json::from_slice(&out.stdout).expect("json output");
    assert_eq!(json["metadata"]["name"], "cli");
    assert_eq!(json["kind"], "Installation");

    let out = daemon.cli(&["get", "installation", "nope", "-n", "e2e"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not found"));

    let out = daemon.cli(&["describe", "inst", "cli", "-n", "e2e"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("name: cli") && text.contains("History"),
        "{text}"
    );
    assert!(text.contains("Added"), "{text}");

    let out = daemon.cli(&["get", "manifestfiles"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("inst.yaml"), "{text}");

    // `get … | head`: a reader that left is not an error (it used to print "error: Broken pipe").
    let mut child = std::process::Command::new(binary())
        .args(["get", "manifestfiles", "-o", "yaml"])
        .env("LANDSCAPER_APPLIANCE_SERVER", &daemon.server)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // closed long before the command has fetched anything
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );

    // validate is offline and exits 1 naming file, document and line.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.yaml"), TARGET).unwrap();
    let out = std::process::Command::new(binary())
        .args(["validate"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(
        dir.path().join("bad.yaml"),
        format!("{TARGET}---\napiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Target\nmetadata:\n  name: x\nspec:\n  type: 3\n  config: {{}}\n  secretRef: {{name: s}}\n"),
    )
    .unwrap();
    let out = std::process::Command::new(binary())
        .args(["validate"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("bad.yaml") && text.contains("document 1"),
        "{text}"
    );
}

#[test]
fn every_acceptance_input_is_ingested() {
    let Some(acceptance) = landscaper_e2e::acceptance_dir() else {
        println!("SKIP: ../shared/acceptance not found");
        return;
    };
    let mut scenarios = 0;
    for scenario in std::fs::read_dir(&acceptance).unwrap().flatten() {
        let step = scenario.path().join("mock/step-1");
        if !step.is_dir() {
            continue;
        }
        scenarios += 1;
        let daemon = Daemon::start();
        let mut expected_files = 0;
        for file in std::fs::read_dir(&step).unwrap().flatten() {
            let name = file.file_name().to_string_lossy().to_string();
            if !name.ends_with(".yaml") {
                continue;
            }
            expected_files += 1;
            daemon.write(&name, &std::fs::read_to_string(file.path()).unwrap());
        }
        let files = eventually(Duration::from_secs(20), "all files ingested", || {
            let files = items(&daemon.get_json(FILES_PATH)?);
            let settled = files
                .iter()
                .filter(|f| {
                    f["status"]["sha256"].is_string() || f["status"]["lastError"].is_object()
                })
                .count();
            (settled == expected_files).then_some(files)
        });
        let objects: usize = files
            .iter()
            .map(|f| f["status"]["objects"].as_array().map_or(0, Vec::len))
            .sum();
        assert!(
            objects >= expected_files,
            "{}: only {objects} objects",
            scenario.path().display()
        );
        for f in &files {
            assert!(
                f["status"]["lastError"].is_null(),
                "{}: {}",
                scenario.path().display(),
                f["status"]["lastError"]
            );
        }
    }
    assert!(scenarios >= 10, "only {scenarios} mock scenarios found");
}

/// The README's first command: `demo` writes the embedded folder, serves it, and its
/// installation renders with the folder's imports.
#[test]
fn demo_serves_the_embedded_folder_and_its_blueprint_renders() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = std::process::Command::new(binary())
        .args(["demo", "--dir"])
        .arg(dir.path())
        .args(["--listen", &format!("127.0.0.1:{port}")])
        // The demo announces itself there (killed, it cannot remove the file).
        .env("XDG_RUNTIME_DIR", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let client =
        landscaper_appliance::commands::client::Client::new(&format!("http://127.0.0.1:{port}"))
            .unwrap();
    let inst = eventually(Duration::from_secs(20), "demo installation", || {
        client
            .get_json(
                "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/demo/installations/greeter",
            )
            .ok()
    });
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(inst["metadata"]["name"], "greeter");

    let manifests = dir.path().join("manifests");
    let out = std::process::Command::new(binary())
        .arg("render")
        .arg(manifests.join("20-installation.yaml"))
        .arg("--imports-from")
        .arg(&manifests)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("name: greeting-configmap") && text.contains("region: factory-hall-3"),
        "{text}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).trim().is_empty(),
        "the demo renders without warnings: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
