//! End-to-end: the real `kubectl` against the read API, served in-process on 127.0.0.1:0.
//!
//! kubectl is found through `$KUBECTL`, then `PATH`, then `bin/kubectl` of the workspace (where
//! `../shared/tools/get-helm-kubectl.sh` puts it); without one the test prints
//! `SKIP: kubectl not found` and passes. kubectl runs with an empty, private `HOME` and
//! `KUBECONFIG` and `--server http://127.0.0.1:PORT`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use landscaper_appliance::daemon::api::{ApiState, Readiness, router, serve};
use landscaper_store::{Kind, ObjectKey, Store, StoreOptions, Transaction};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

const SECRET_B64: &str = "c3VwZXItc2VjcmV0LXBhc3N3b3Jk"; // "super-secret-password"
const SECRET_CLEAR: &str = "super-secret-password";

fn find_kubectl() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KUBECTL").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("kubectl");
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bin/kubectl");
    bundled.is_file().then_some(bundled)
}

struct Kubectl {
    binary: PathBuf,
    server: String,
    home: tempfile::TempDir,
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Kubectl {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .arg("--server")
            .arg(&self.server)
            .args(args)
            .env("HOME", self.home.path())
            .env("KUBECONFIG", self.home.path().join("kubeconfig"))
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    async fn run(&self, args: &[&str]) -> Output {
        let output = tokio::time::timeout(Duration::from_secs(60), self.command(args).output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
            .expect("kubectl runs");
        Output {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Runs and expects success.
    async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert_eq!(
            out.code, 0,
            "kubectl {args:?} failed:\n{}\n{}",
            out.stdout, out.stderr
        );
        out.stdout
    }

    fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl starts")
    }
}

/// Reads a child's stdout until `done` holds for what was read so far (`Ok`), or the time is
/// up or the output ends (`Err` with what was read).
async fn read_for(
    child: &mut Child,
    limit: Duration,
    done: impl Fn(&str) -> bool,
) -> Result<String, String> {
    let stdout = child.stdout.as_mut().expect("piped stdout");
    let mut text = String::new();
    let mut buf = [0u8; 4096];
    let _ = tokio::time::timeout(limit, async {
        while !done(&text) {
            let n = stdout.read(&mut buf).await.expect("read kubectl output");
            if n == 0 {
                break;
            }
            text.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
    .await;
    if done(&text) { Ok(text) } else { Err(text) }
}

/// [`read_for`] with 30 s, panicking with kubectl's output and errors when `done` never holds.
async fn read_until(child: &mut Child, what: &str, done: impl Fn(&str) -> bool) -> String {
    match read_for(child, Duration::from_secs(30), done).await {
        Ok(text) => text,
        Err(text) => {
            let mut stderr = String::new();
            if let Some(err) = child.stderr.as_mut() {
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), err.read_to_string(&mut stderr))
                        .await;
            }
            panic!("kubectl output never showed {what}:\n{text}\nstderr:\n{stderr}");
        }
    }
}

fn installation(ns: &str, name: &str, phase: Option<&str>) -> Value {
    let mut o = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "shop"}},
        "spec": {"blueprint": {"ref": {"resourceName": "blueprint"}},
                 "imports": {"targets": [{"name": "cluster", "target": "cluster"}]}},
    });
    if let Some(phase) = phase {
        o["status"] = json!({"phase": phase, "executionRef": {"name": format!("{name}-exec"), "namespace": ns}});
    }
    o
}

async fn seed(store: &Store) {
    let objects = [
        installation("shop", "frontend", Some("Succeeded")),
        installation("shop", "backend", Some("Progressing")),
        installation("blog", "wordpress", None),
        json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
            "metadata": {"name": "cluster", "namespace": "shop"},
            "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster",
                     "secretRef": {"name": "kubeconfig", "key": "kubeconfig"}}}),
        json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DataObject",
            "metadata": {"name": "settings", "namespace": "shop",
                "labels": {"data.landscaper.gardener.cloud/key": "settings"}},
            "data": {"replicas": 3}}),
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "kubeconfig", "namespace": "shop"},
            "type": "Opaque", "data": {"kubeconfig": SECRET_B64}}),
        json!({"apiVersion": "appliance.landscaper-appliance.io/v1alpha1", "kind": "ManifestFile",
            "metadata": {"name": "shop.yaml"},
            "spec": {"path": "shop/shop.yaml"},
            "status": {"objects": [
                {"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation", "namespace": "shop", "name": "frontend"},
                {"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation", "namespace": "shop", "name": "backend"}]}}),
        json!({"apiVersion": "appliance.landscaper-appliance.io/v1alpha1", "kind": "ManifestFile",
            "metadata": {"name": "broken.yaml"},
            "spec": {"path": "broken.yaml"},
            "status": {"lastError": {"line": 2, "column": 5, "message": "did not find expected key"}}}),
    ];
    let mut tx = Transaction::new();
    for o in objects {
        tx = tx.create(o);
    }
    store.commit(tx).await.unwrap();
}

async fn set_phase(store: &Store, ns: &str, name: &str, phase: &str) {
    let key = ObjectKey::new(Kind::Installation, ns, name);
    let mut o = store.get(&key).unwrap().expect("installation exists");
    o["status"]["phase"] = json!(phase);
    store.commit(Transaction::new().update(o)).await.unwrap();
}

/// The rows of a `kubectl get` table: whitespace-separated cells per line, header first.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_reads_the_api() {
    let Some(binary) = find_kubectl() else {
        println!("SKIP: kubectl not found (set KUBECTL, put it on PATH or in bin/)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        &dir.path().join("store.redb"),
        StoreOptions {
            durable: false,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    seed(&store).await;
    let stop = CancellationToken::new();
    let state = ApiState::new(store.clone(), Readiness::ready()).with_shutdown(stop.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = tokio::spawn(serve(
        listener,
        router(state),
        stop.clone().cancelled_owned(),
    ));
    let kubectl = Kubectl {
        binary,
        server: format!("http://{addr}"),
        home: tempfile::tempdir().unwrap(),
    };
    let version = kubectl.run(&["version", "--client"]).await;
    println!(
        "using {} ({})",
        kubectl.binary.display(),
        version.stdout.lines().next().unwrap_or_default()
    );

    // kubectl get installations -A
    let all = kubectl.ok(&["get", "installations", "-A"]).await;
    let table = rows(&all);
    assert_eq!(table.len(), 4, "{all}");
    assert_eq!(
        table[0],
        ["NAMESPACE", "NAME", "PHASE", "EXECUTION", "AGE"],
        "{all}"
    );
    // The installation without status has empty PHASE and EXECUTION cells, then its age.
    assert_eq!(table[1][..2], ["blog", "wordpress"], "{all}");
    assert_eq!(table[1].len(), 3, "{all}");
    assert!(table[1][2].ends_with('s'), "{all}");
    assert_eq!(
        table[2][..4],
        ["shop", "backend", "Progressing", "backend-exec"],
        "{all}"
    );
    assert_eq!(
        table[3][..4],
        ["shop", "frontend", "Succeeded", "frontend-exec"],
        "{all}"
    );

    // kubectl get installation NAME -n NS -o yaml
    let yaml = kubectl
        .ok(&[
            "get",
            "installation",
            "frontend",
            "-n",
            "shop",
            "-o",
            "yaml",
        ])
        .await;
    let parsed: Value = serde_saphyr::from_str(&yaml).expect("kubectl printed YAML");
    let stored = store
        .get(&ObjectKey::new(Kind::Installation, "shop", "frontend"))
        .unwrap()
        .unwrap();
    assert_eq!(parsed, stored, "{yaml}");

    // kubectl get inst NAME -n NS -o json (short name)
    let json_out = kubectl
        .ok(&["get", "inst", "backend", "-n", "shop", "-o", "json"])
        .await;
    let parsed: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(parsed["kind"], "Installation");
    assert_eq!(parsed["metadata"]["name"], "backend");
    assert_eq!(parsed["status"]["phase"], "Progressing");
    assert_eq!(parsed["spec"]["imports"]["targets"][0]["name"], "cluster");

    // kubectl get manifestfiles (cluster-scoped)
    let files = kubectl.ok(&["get", "manifestfiles"]).await;
    let file_rows = rows(&files);
    assert_eq!(
        file_rows[0],
        ["NAME", "PATH", "PHASE", "OBJECTS", "ERROR", "AGE"],
        "{files}"
    );
    // (The fixture's ManifestFiles have no status.phase: an empty PHASE cell.)
    assert_eq!(
        file_rows[1][..4],
        ["broken.yaml", "broken.yaml", "0", "2:5:"],
        "{files}"
    );
    assert!(files.contains("did not find expected key"), "{files}");
    assert_eq!(
        file_rows[2][..3],
        ["shop.yaml", "shop/shop.yaml", "2"],
        "{files}"
    );

    // kubectl get targets,dataobjects -n NS
    let mixed = kubectl
        .ok(&["get", "targets,dataobjects", "-n", "shop"])
        .await;
    assert!(
        mixed.contains("target.landscaper.gardener.cloud/cluster")
            && mixed.contains("landscaper.gardener.cloud/kubernetes-cluster"),
        "{mixed}"
    );
    assert!(
        mixed.contains("dataobject.landscaper.gardener.cloud/settings"),
        "{mixed}"
    );

    // kubectl get secrets -n NS -o yaml: redacted
    let secrets = kubectl
        .ok(&["get", "secrets", "-n", "shop", "-o", "yaml"])
        .await;
    assert!(
        !secrets.contains(SECRET_B64) && !secrets.contains(SECRET_CLEAR),
        "{secrets}"
    );
    let parsed: Value = serde_saphyr::from_str(&secrets).unwrap();
    assert_eq!(parsed["items"][0]["data"]["kubeconfig"], "PHJlZGFjdGVkPg==");
    let table = kubectl.ok(&["get", "secrets", "-n", "shop"]).await;
    assert_eq!(
        rows(&table)[1][..3],
        ["kubeconfig", "Opaque", "1"],
        "{table}"
    );

    // kubectl get installation missing -n NS: NotFound, exit code 1
    let missing = kubectl
        .run(&["get", "installation", "missing", "-n", "shop"])
        .await;
    assert_eq!(missing.code, 1, "{}{}", missing.stdout, missing.stderr);
    assert!(
        missing.stderr.contains(
            "Error from server (NotFound): installations.landscaper.gardener.cloud \"missing\" not found"
        ),
        "{}",
        missing.stderr
    );

    // kubectl get installations -A --watch: a committed change shows up as a new row.
    let mut watch = kubectl.spawn(&["get", "installations", "-A", "--watch"]);
    read_until(&mut watch, "the initial rows", |t| {
        t.contains("wordpress") && t.contains("frontend") && t.contains("backend")
    })
    .await;
    set_phase(&store, "blog", "wordpress", "Installing").await;
    let seen = read_until(&mut watch, "the new phase", |t| t.contains("Installing")).await;
    let row = seen
        .lines()
        .find(|l| l.contains("Installing"))
        .unwrap()
        .to_string();
    assert_eq!(
        rows(&row)[0][..3],
        ["blog", "wordpress", "Installing"],
        "{seen}"
    );
    set_phase(&store, "shop", "backend", "Succeeded").await;
    let seen = read_until(&mut watch, "the second change", |t| {
        t.lines()
            .any(|l| l.contains("backend") && l.contains("Succeeded"))
    })
    .await;
    assert!(
        !seen.contains("NAMESPACE"),
        "headers are printed once: {seen}"
    );
    watch.kill().await.ok();

    // kubectl get installation NAME -n NS --watch -o json
    let mut watch = kubectl.spawn(&[
        "get",
        "installation",
        "frontend",
        "-n",
        "shop",
        "--watch",
        "-o",
        "json",
    ]);
    read_until(&mut watch, "the object", |t| t.contains("\"Succeeded\"")).await;
    // kubectl prints the object, then watches from resourceVersion 0 and skips the first
    // (synthetic ADDED) event. A change committed before its watch request arrives is folded
    // into that skipped event, as against any API server, so change until one shows.
    set_phase(&store, "shop", "backend", "Failed").await; // another object: never shown
    let mut seen = Err(String::new());
    for attempt in 0..30 {
        set_phase(&store, "shop", "frontend", &format!("Deleting{attempt}")).await;
        seen = read_for(&mut watch, Duration::from_secs(1), |t| {
            // A whole object: kubectl pretty-prints, so only the last brace is unindented.
            t.contains("\"Deleting") && t.trim_end().ends_with("\n}")
        })
        .await;
        if seen.is_ok() {
            break;
        }
    }
    let seen = seen.unwrap_or_else(|text| panic!("the change never showed: {text}"));
    // The text read may begin inside an earlier object; the last one starts at an unindented
    // `{` line (kubectl pretty-prints).
    let last_object = seen
        .rfind("\n{")
        .map(|i| &seen[i + 1..])
        .unwrap_or(seen.as_str());
    let printed: Value = serde_json::from_str(last_object.trim())
        .unwrap_or_else(|e| panic!("kubectl printed no JSON object ({e}): {seen}"));
    assert_eq!(printed["metadata"]["name"], "frontend");
    assert!(
        printed["status"]["phase"]
            .as_str()
            .unwrap()
            .starts_with("Deleting")
    );
    assert!(!seen.contains("\"Failed\""), "{seen}");
    watch.kill().await.ok();

    // A few more commands users will type.
    let ns = kubectl.ok(&["get", "namespaces"]).await;
    assert!(ns.contains("shop") && ns.contains("blog"), "{ns}");
    let resources = kubectl.ok(&["api-resources"]).await;
    assert!(
        resources.contains("installations")
            && resources.contains("manifestfiles")
            && resources.contains("transportarchives"),
        "{resources}"
    );
    let category = kubectl.ok(&["get", "landscaper", "-n", "shop"]).await;
    assert!(
        category.contains("installation.landscaper.gardener.cloud/frontend"),
        "{category}"
    );

    stop.cancel();
    tokio::time::timeout(Duration::from_secs(15), served)
        .await
        .expect("server stops")
        .unwrap()
        .unwrap();
}
