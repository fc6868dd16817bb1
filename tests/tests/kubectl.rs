//! End-to-end: the real `kubectl` against the real daemon.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use landscaper_e2e::{Daemon, eventually, kubectl};

fn target(name: &str, kind_of_cluster: &str) -> String {
    format!(
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Target
metadata:
  name: {name}
  namespace: kube-e2e
  labels:
    cluster: {kind_of_cluster}
spec:
  type: landscaper.gardener.cloud/kubernetes-cluster
  config:
    kubeconfig: "apiVersion: v1\nkind: Config\n"
"#
    )
}

fn installation(name: &str, blueprint_comment: &str) -> String {
    format!(
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: {name}
  namespace: kube-e2e
spec:
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          # {blueprint_comment}
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
"#
    )
}

struct Kubectl {
    path: std::path::PathBuf,
    server: String,
    home: tempfile::TempDir,
}

impl Kubectl {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.args(["--server", &self.server])
            .args(args)
            .env("HOME", self.home.path())
            .env("KUBECONFIG", self.home.path().join("none"));
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
}

#[test]
fn kubectl_reads_the_appliance() {
    let Some(path) = kubectl() else {
        println!("SKIP: kubectl not found (set KUBECTL or run scripts/test.sh)");
        return;
    };
    let daemon = Daemon::start();
    daemon.write(
        "targets.yaml",
        &format!("{}---\n{}", target("red", "prod"), target("blue", "dev")),
    );
    daemon.write("inst.yaml", &installation("shop", "v1"));
    eventually(Duration::from_secs(10), "objects ingested", || {
        daemon.get_json(
            "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/kube-e2e/installations/shop",
        )
    });
    let k = Kubectl {
        path,
        server: daemon.server.clone(),
        home: tempfile::tempdir().unwrap(),
    };

    let (ok, out, err) = k.run(&["get", "installations", "-A"]);
    assert!(ok, "{err}");
    let header = out.lines().next().unwrap_or_default();
    assert!(
        header.contains("NAMESPACE") && header.contains("NAME") && header.contains("PHASE"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("kube-e2e") && l.contains("shop")),
        "{out}"
    );

    let (ok, out, err) = k.run(&[
        "get",
        "installation",
        "shop",
        "-n",
        "kube-e2e",
        "-o",
        "yaml",
    ]);
    assert!(ok, "{err}");
    let yaml: serde_json::Value = serde_saphyr::from_str(&out).expect("kubectl printed YAML");
    assert_eq!(yaml["kind"], "Installation");
    assert_eq!(yaml["metadata"]["name"], "shop");
    assert!(
        yaml["spec"]["blueprint"]["inline"]["filesystem"]["blueprint.yaml"]
            .as_str()
            .unwrap()
            .contains("# v1")
    );

    let (ok, out, err) = k.run(&[
        "get",
        "targets",
        "-n",
        "kube-e2e",
        "-l",
        "cluster=prod",
        "-o",
        "name",
    ]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "target.landscaper.gardener.cloud/red");

    let (ok, out, err) = k.run(&["get", "manifestfiles"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("targets.yaml") || out.contains("targets"),
        "{out}"
    );

    // The transport archives of the folder (none here): served, cluster-scoped, short name `ta`.
    let (ok, out, err) = k.run(&["get", "ta"]);
    assert!(ok, "{err}");
    assert!(
        err.contains("No resources found") && out.is_empty(),
        "{out}{err}"
    );
    let (ok, out, err) = k.run(&[
        "api-resources",
        "--api-group",
        "appliance.landscaper-appliance.io",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("transportarchives")
            && out.contains("ta ")
            && out.contains("TransportArchive"),
        "{out}"
    );

    let (ok, _, err) = k.run(&["get", "installation", "missing", "-n", "kube-e2e"]);
    assert!(!ok);
    assert!(
        err.contains("NotFound") || err.contains("not found"),
        "{err}"
    );

    // A watch sees a change made through the folder.
    let mut watch = k
        .command(&[
            "get",
            "installations",
            "-n",
            "kube-e2e",
            "--watch",
            "-o",
            "custom-columns=NAME:.metadata.name,GEN:.metadata.generation",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let first = rx.recv_timeout(Duration::from_secs(10));
    seen.extend(first.ok());
    daemon.write("inst.yaml", &installation("shop", "v2"));
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline
        && !seen
            .iter()
            .any(|l| l.starts_with("shop") && l.trim_end().ends_with('2'))
    {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            seen.push(line);
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(
        seen.iter()
            .any(|l| l.starts_with("shop") && l.trim_end().ends_with('1')),
        "initial row missing: {seen:?}"
    );
    assert!(
        seen.iter()
            .any(|l| l.starts_with("shop") && l.trim_end().ends_with('2')),
        "watch did not show generation 2: {seen:?}"
    );
}
