//! End-to-end: writes with the real `kubectl` over the kubeconfig the daemon writes (issue 20):
//! client-side and server-side `apply` of a new Installation with its Target and DataObject
//! that then runs to Succeeded, `apply` of a changed spec, `diff`, `edit` through
//! `KUBE_EDITOR`, `replace`, `patch --type json|merge`, `create`, `delete`, the Forbidden
//! refusal of a spec change to an object a manifest file defines; the API-owned objects survive
//! a restart and are in backups and exports; a file defining one of them takes it over.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use landscaper_e2e::{Daemon, eventually, kubectl};
use serde_json::Value;

const NS: &str = "kube-writes";
const INSTALLATIONS: &str =
    "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/kube-writes/installations";
const DATAOBJECTS: &str =
    "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/kube-writes/dataobjects";
const TARGETS: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/kube-writes/targets";

const TARGET: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Target
metadata:
  name: cluster
  namespace: kube-writes
  labels:
    stage: dev
spec:
  type: landscaper.gardener.cloud/kubernetes-cluster
  config:
    kubeconfig: "apiVersion: v1\nkind: Config\n"
"#;

const DATA: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: DataObject
metadata:
  name: settings
  namespace: kube-writes
data:
  text: hello
"#;

/// A root Installation importing the Target and the DataObject, with one mock deploy item
/// that exports `<greeting> from <text>`; `greeting` changes between revisions.
fn installation(name: &str, greeting: &str) -> String {
    format!(
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: {name}
  namespace: kube-writes
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  imports:
    targets:
      - name: cluster
        target: cluster
    data:
      - name: settings
        dataRef: settings
  exports:
    data:
      - name: message
        dataRef: {name}-message
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchemaVersion: "https://json-schema.org/draft/2019-09/schema"
          imports:
            - name: cluster
              type: target
              targetType: landscaper.gardener.cloud/kubernetes-cluster
            - name: settings
              type: data
              schema: {{type: object}}
          exports:
            - name: message
              type: data
              schema: {{type: string}}
          deployExecutions:
            - name: default
              type: GoTemplate
              template: |
                deployItems:
                  - name: app
                    type: landscaper.gardener.cloud/mock
                    target:
                      import: cluster
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
                      phase: Succeeded
                      export:
                        message: {{{{ printf "{greeting} from %s" .imports.settings.text | quote }}}}
          exportExecutions:
            - name: default
              type: GoTemplate
              template: |
                exports:
                  message: {{{{ index .values.deployitems "app" "message" | quote }}}}
"#
    )
}

/// kubectl with the daemon's kubeconfig, a private HOME (no cache shared between tests).
struct Kubectl {
    path: PathBuf,
    kubeconfig: PathBuf,
    home: tempfile::TempDir,
}

impl Kubectl {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env("HOME", self.home.path())
            .env_remove("KUBECONFIG");
        cmd
    }

    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = self.command(args).output().expect("run kubectl");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs and insists on success; stdout.
    fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "kubectl {args:?} failed:\n{out}\n{err}");
        out
    }

    fn file(&self, name: &str, content: &str) -> String {
        let path = self.home.path().join(name);
        std::fs::write(&path, content).unwrap();
        path.display().to_string()
    }
}

fn kubectl_for(daemon: &Daemon, path: &Path) -> Kubectl {
    let kubeconfig = daemon.data.join("kubeconfig.yaml");
    eventually(Duration::from_secs(10), "kubeconfig written", || {
        kubeconfig.exists().then_some(())
    });
    Kubectl {
        path: path.to_path_buf(),
        kubeconfig,
        home: tempfile::tempdir().unwrap(),
    }
}

fn phase(daemon: &Daemon, name: &str) -> Option<(String, i64, i64)> {
    let inst = daemon.get_json(&format!("{INSTALLATIONS}/{name}"))?;
    Some((
        inst["status"]["phase"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        inst["metadata"]["generation"].as_i64().unwrap_or_default(),
        inst["status"]["observedGeneration"]
            .as_i64()
            .unwrap_or_default(),
    ))
}

/// Waits until the Installation succeeded for `generation`.
fn succeeded(daemon: &Daemon, name: &str, generation: i64) {
    eventually(
        Duration::from_secs(60),
        &format!("{name} Succeeded at generation {generation}"),
        || {
            let (phase, current, observed) = phase(daemon, name)?;
            (phase == "Succeeded" && current == generation && observed == generation).then_some(())
        },
    );
}

fn exported_message(daemon: &Daemon, name: &str) -> Option<String> {
    let data = daemon.get_json(&format!("{DATAOBJECTS}/{name}-message"))?;
    data["data"].as_str().map(str::to_string)
}

fn text(output: &std::process::Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn kubectl_writes_landscaper_objects() {
    let Some(path) = kubectl() else {
        println!("SKIP: kubectl not found (set KUBECTL or run scripts/test.sh)");
        return;
    };
    let mut daemon = Daemon::start();
    // An object the folder defines.
    daemon.write("file.yaml", &installation("from-file", "hi"));
    eventually(Duration::from_secs(10), "file object ingested", || {
        daemon.get_json(&format!("{INSTALLATIONS}/from-file"))
    });
    let k = kubectl_for(&daemon, &path);

    // Client-side apply of the Target and the DataObject, server-side apply of the Installation.
    let target = k.file("target.yaml", TARGET);
    let data = k.file("data.yaml", DATA);
    let out = k.ok(&["apply", "-f", &target, "-f", &data]);
    assert!(
        out.contains("target.landscaper.gardener.cloud/cluster created")
            && out.contains("dataobject.landscaper.gardener.cloud/settings created"),
        "{out}"
    );
    let shop = k.file("shop.yaml", &installation("shop", "hello"));
    let out = k.ok(&["apply", "--server-side", "-f", &shop]);
    assert!(
        out.contains("installation.landscaper.gardener.cloud/shop serverside-applied"),
        "{out}"
    );
    succeeded(&daemon, "shop", 1);
    assert_eq!(
        exported_message(&daemon, "shop").as_deref(),
        Some("hello from hello")
    );
    // kube's bookkeeping: the managers of the fields.
    let managers = k.ok(&[
        "get",
        "installation",
        "shop",
        "-n",
        NS,
        "--show-managed-fields",
        "-o",
        "jsonpath={.metadata.managedFields[*].manager}",
    ]);
    assert!(managers.split(' ').any(|m| m == "kubectl"), "{managers}");
    let managers = k.ok(&[
        "get",
        "target",
        "cluster",
        "-n",
        NS,
        "--show-managed-fields",
        "-o",
        "jsonpath={.metadata.managedFields[*].manager}",
    ]);
    assert!(managers.contains("kubectl-client-side-apply"), "{managers}");
    // describe names the owner.
    for (name, owner) in [
        ("shop", "the API"),
        ("from-file", "manifest file file.yaml"),
    ] {
        let output = daemon.cli(&["describe", "installation", name, "-n", NS]);
        assert!(output.status.success(), "{}", text(&output));
        assert!(
            String::from_utf8_lossy(&output.stdout).contains(&format!("\nOwner: {owner}\n")),
            "{}",
            text(&output)
        );
    }
    // So does the status page.
    let (code, page) = daemon
        .client()
        .get(&format!("/ui/installations/{NS}/shop"), "text/html")
        .unwrap();
    let page = String::from_utf8_lossy(&page);
    assert!(code == 200 && page.contains("Owned by the API."), "{page}");
    // Applying the same again changes nothing.
    let out = k.ok(&["apply", "-f", &target]);
    assert!(out.contains("unchanged"), "{out}");

    // A changed spec: diff shows it, apply makes generation 2, which is reconciled (the file
    // carries the reconcile annotation).
    let changed = k.file("shop2.yaml", &installation("shop", "servus"));
    let (same, out, err) = k.run(&["diff", "--server-side", "-f", &changed]);
    assert!(!same && err.is_empty(), "{out}{err}");
    assert!(out.contains("-") && out.contains("servus from %s"), "{out}");
    let out = k.ok(&["apply", "--server-side", "-f", &changed]);
    assert!(out.contains("serverside-applied"), "{out}");
    succeeded(&daemon, "shop", 2);
    eventually(Duration::from_secs(30), "new export", || {
        (exported_message(&daemon, "shop")? == "servus from hello").then_some(())
    });
    // Client-side diff of the unchanged Target: nothing to show (exit 0).
    let (same, out, err) = k.run(&["diff", "-f", &target]);
    assert!(same, "{out}{err}");

    // patch --type json and --type merge.
    k.ok(&[
        "patch",
        "dataobject",
        "settings",
        "-n",
        NS,
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/data/text","value":"json"}]"#,
    ]);
    assert_eq!(
        daemon.get_json(&format!("{DATAOBJECTS}/settings")).unwrap()["data"]["text"],
        "json"
    );
    k.ok(&[
        "patch",
        "target",
        "cluster",
        "-n",
        NS,
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"labels":{"stage":"prod"}}}"#,
    ]);
    assert_eq!(
        daemon.get_json(&format!("{TARGETS}/cluster")).unwrap()["metadata"]["labels"]["stage"],
        "prod"
    );
    // A JSON patch whose test fails is refused, nothing changes.
    let (ok, _, err) = k.run(&[
        "patch",
        "dataobject",
        "settings",
        "-n",
        NS,
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/data/text","value":"nope"}]"#,
    ]);
    assert!(!ok, "a failed test op is refused");
    assert!(err.contains("Invalid") || err.contains("test"), "{err}");

    // edit through KUBE_EDITOR: a script rewriting the file.
    let editor = k.file(
        "editor.sh",
        "#!/bin/sh\nsed -i 's/text: json/text: edited/' \"$1\"\n",
    );
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = k
        .command(&["edit", "dataobject", "settings", "-n", NS])
        .env("KUBE_EDITOR", &editor)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("dataobject.landscaper.gardener.cloud/settings edited"),
        "{}",
        text(&out)
    );
    assert_eq!(
        daemon.get_json(&format!("{DATAOBJECTS}/settings")).unwrap()["data"]["text"],
        "edited"
    );

    // replace: the object as read, changed.
    let current = k.ok(&["get", "target", "cluster", "-n", NS, "-o", "json"]);
    let mut current: Value = serde_json::from_str(&current).unwrap();
    current["metadata"]["labels"]["stage"] = Value::from("replaced");
    let replaced = k.file("replace.json", &current.to_string());
    let out = k.ok(&["replace", "-f", &replaced]);
    assert!(out.contains("replaced"), "{out}");
    assert_eq!(
        daemon.get_json(&format!("{TARGETS}/cluster")).unwrap()["metadata"]["labels"]["stage"],
        "replaced"
    );
    // The same stale version again: 409 Conflict.
    let (ok, _, err) = k.run(&["replace", "-f", &replaced]);
    assert!(!ok);
    assert!(
        err.contains("Conflict") && err.contains("the object has been modified"),
        "{err}"
    );

    // An invalid object: 422 naming the field.
    let bad = k.file(
        "bad.yaml",
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Installation\nmetadata:\n  name: bad\n  namespace: kube-writes\nspec: {}\n",
    );
    let (ok, _, err) = k.run(&["create", "-f", &bad]);
    assert!(!ok);
    assert!(
        err.contains("is invalid") && err.contains("spec.blueprint"),
        "{err}"
    );
    // AlreadyExists.
    let (ok, _, err) = k.run(&["create", "-f", &data]);
    assert!(!ok);
    assert!(err.contains("AlreadyExists"), "{err}");
    // Unknown fields: kubectl asks for Strict by default.
    let unknown = k.file(
        "unknown.yaml",
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata:\n  name: odd\n  namespace: kube-writes\ndata: 1\ncolour: red\n",
    );
    let (ok, _, err) = k.run(&["create", "-f", &unknown, "--validate=strict"]);
    assert!(!ok, "{err}");
    assert!(err.contains("unknown field \"colour\""), "{err}");
    let (ok, _, err) = k.run(&["create", "-f", &unknown, "--validate=warn"]);
    assert!(ok, "{err}");
    assert!(err.contains("unknown field \"colour\""), "{err}");

    // The folder's object: only labels and annotations change; a spec change is Forbidden.
    let (ok, _, err) = k.run(&[
        "patch",
        "installation",
        "from-file",
        "-n",
        NS,
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"context":"other"}}"#,
    ]);
    assert!(!ok);
    assert!(
        err.contains("Error from server (Forbidden)")
            && err.contains("is owned by manifest file file.yaml")
            && err.contains("spec.context"),
        "{err}"
    );
    k.ok(&["label", "installation", "from-file", "-n", NS, "team=ops"]);

    // A Secret and a ConfigMap: anonymous readers never see the value.
    k.ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        NS,
        "--from-literal=password=hunter2",
    ]);
    k.ok(&[
        "create",
        "configmap",
        "site",
        "-n",
        NS,
        "--from-literal=region=eu",
    ]);
    let anonymous = daemon
        .get_json(&format!("/api/v1/namespaces/{NS}/secrets/creds"))
        .unwrap();
    assert!(!anonymous.to_string().contains("aHVudGVyMg"), "{anonymous}");
    let (ok, _, err) = {
        let out = Command::new(&path)
            .args([
                "--server",
                &daemon.server,
                "delete",
                "secret",
                "creds",
                "-n",
                NS,
            ])
            .env("HOME", k.home.path())
            .env("KUBECONFIG", k.home.path().join("none"))
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert!(
        !ok && err.contains("Unauthorized"),
        "anonymous delete: {err}"
    );

    // create and delete: an Installation created through the API runs and is deleted with
    // what it made.
    let tmp = k.file("tmp.yaml", &installation("tmp", "bye"));
    let out = k.ok(&["create", "-f", &tmp]);
    assert!(
        out.contains("installation.landscaper.gardener.cloud/tmp created"),
        "{out}"
    );
    succeeded(&daemon, "tmp", 1);
    let out = k.ok(&[
        "delete",
        "installation",
        "tmp",
        "-n",
        NS,
        "--wait=true",
        "--timeout=60s",
    ]);
    assert!(out.contains("deleted"), "{out}");
    assert!(daemon.get_json(&format!("{INSTALLATIONS}/tmp")).is_none());
    eventually(Duration::from_secs(30), "tmp's export gone", || {
        exported_message(&daemon, "tmp").is_none().then_some(())
    });

    // A restart keeps what the API created.
    daemon.terminate();
    let (manifests, data_dir) = (daemon.manifests.clone(), daemon.data.clone());
    let daemon2 = Daemon::start_on(&manifests, &data_dir);
    let k = kubectl_for(&daemon2, &path);
    let (phase_after, generation, _) = phase(&daemon2, "shop").expect("shop after the restart");
    assert_eq!((phase_after.as_str(), generation), ("Succeeded", 2));
    let out = k.ok(&[
        "get",
        "dataobject",
        "settings",
        "-n",
        NS,
        "-o",
        "jsonpath={.data.text}",
    ]);
    assert_eq!(out, "edited");

    // Backups and exports hold the API's objects.
    let out_dir = tempfile::tempdir().unwrap();
    let backup = out_dir.path().join("b.redb");
    let output = daemon2.cli(&[
        "backup",
        backup.to_str().unwrap(),
        "--data",
        data_dir.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output));
    for (from, args) in [
        (
            "running",
            vec!["--data".to_string(), data_dir.display().to_string()],
        ),
        (
            "backup",
            vec!["--from".to_string(), backup.display().to_string()],
        ),
    ] {
        let dir = out_dir.path().join(from);
        let mut all = vec!["export".to_string(), dir.display().to_string()];
        all.extend(args);
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let output = daemon2.cli(&all);
        assert!(output.status.success(), "{}", text(&output));
        for file in [
            "installations/shop.yaml",
            "installations/from-file.yaml",
            "dataobjects/settings.yaml",
            "targets/cluster.yaml",
            "secrets/creds.yaml",
            "configmaps/site.yaml",
        ] {
            assert!(
                dir.join(NS).join(file).exists(),
                "{from}: {file} exported:\n{}",
                text(&output)
            );
        }
        // What the controllers made stays out.
        assert!(!dir.join(NS).join("dataobjects/shop-message.yaml").exists());
        let shop: Value = serde_saphyr::from_str(
            &std::fs::read_to_string(dir.join(NS).join("installations/shop.yaml")).unwrap(),
        )
        .unwrap();
        assert!(shop["metadata"].get("managedFields").is_none(), "{shop}");
    }

    // A file that defines an API-owned object takes it over: the object follows the file,
    // and the API may then change only its labels and annotations.
    daemon2.write("shop.yaml", &installation("shop", "moin"));
    eventually(Duration::from_secs(30), "the file took shop over", || {
        let (phase, generation, observed) = phase(&daemon2, "shop")?;
        (generation == 3 && observed == 3 && phase == "Succeeded").then_some(())
    });
    let (ok, _, err) = k.run(&[
        "patch",
        "installation",
        "shop",
        "-n",
        NS,
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"context":"other"}}"#,
    ]);
    assert!(
        !ok && err.contains("is owned by manifest file shop.yaml"),
        "{err}"
    );
    let events = k.ok(&["get", "events", "-n", "default", "-o", "json"]);
    let events: Value = serde_json::from_str(&events).unwrap();
    assert!(
        events["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["reason"] == "TakenOver"
                && e["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("Installation kube-writes/shop")),
        "{events}"
    );
}
