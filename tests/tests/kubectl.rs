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

/// `kubectl auth whoami` and `kubectl auth can-i` (also `--list`) answer from the caller's
/// actual rights: anonymous callers read, the token allows everything.
#[test]
fn kubectl_auth_whoami_and_can_i_follow_the_callers_rights() {
    let Some(path) = kubectl() else {
        println!("SKIP: kubectl not found (set KUBECTL or run scripts/test.sh)");
        return;
    };
    let daemon = Daemon::start();
    daemon.write("inst.yaml", &installation("shop", "v1"));
    eventually(Duration::from_secs(10), "objects ingested", || {
        daemon.get_json(
            "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/kube-e2e/installations/shop",
        )
    });
    let token = std::fs::read_to_string(daemon.data.join("api-token"))
        .expect("the daemon writes DATA/api-token");
    let anonymous = Kubectl {
        path: path.clone(),
        server: daemon.server.clone(),
        home: tempfile::tempdir().unwrap(),
    };
    // Over plain HTTP client-go sends the URL's user info as basic authentication.
    let admin = Kubectl {
        path,
        server: daemon
            .server
            .replacen("http://", &format!("http://token:{}@", token.trim()), 1),
        home: tempfile::tempdir().unwrap(),
    };

    let (ok, out, err) = anonymous.run(&["auth", "whoami", "-o", "json"]);
    assert!(ok, "{err}");
    let review: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(review["kind"], "SelfSubjectReview", "{out}");
    assert_eq!(review["status"]["userInfo"]["username"], "system:anonymous");
    let (ok, out, err) = admin.run(&["auth", "whoami"]);
    assert!(ok, "{err}");
    assert!(out.contains("landscaper-appliance:token"), "{out}");

    let can = |k: &Kubectl, args: &[&str]| {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        let (_, out, err) = k.run(&all);
        (out.trim().to_string(), err)
    };
    assert_eq!(
        can(&anonymous, &["get", "installations", "-n", "kube-e2e"]).0,
        "yes"
    );
    let (answer, err) = can(&anonymous, &["delete", "installations", "-n", "kube-e2e"]);
    // kubectl prints the reason after the answer: what to do to be allowed.
    assert!(
        answer.starts_with("no - ") && answer.contains("API token"),
        "{answer} {err}"
    );
    assert_eq!(
        can(&admin, &["delete", "installations", "-n", "kube-e2e"]).0,
        "yes"
    );
    assert_eq!(
        can(&admin, &["patch", "secrets", "-n", "kube-e2e"]).0,
        "yes"
    );

    let (ok, out, err) = anonymous.run(&["auth", "can-i", "--list"]);
    assert!(ok, "{err}");
    let star = out
        .lines()
        .find(|l| l.starts_with("*.*"))
        .unwrap_or_else(|| panic!("no rule for every resource:\n{out}"));
    assert!(star.contains("[get list watch]"), "{out}");
    let (ok, out, err) = admin.run(&["auth", "can-i", "--list"]);
    assert!(ok, "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("*.*") && l.contains("[*]")),
        "{out}"
    );
}

/// The daemon writes `DATA/kubeconfig.yaml` (0600) for a TLS listener on loopback with its own
/// CA: kubectl reads and writes with it, no token in any URL; anonymous TLS callers stay
/// read-only; a restart keeps the CA.
#[test]
fn kubectl_uses_the_written_kubeconfig_over_tls() {
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = kubectl() else {
        println!("SKIP: kubectl not found (set KUBECTL or run scripts/test.sh)");
        return;
    };
    let mut daemon = Daemon::start();
    daemon.write("inst.yaml", &installation("shop", "v1"));
    let kubeconfig = daemon.data.join("kubeconfig.yaml");
    eventually(Duration::from_secs(10), "kubeconfig written", || {
        kubeconfig.exists().then_some(())
    });
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&kubeconfig), 0o600);
    for name in ["ca.key", "serving.key", "ca.crt", "serving.crt"] {
        assert_eq!(mode(&daemon.data.join("tls").join(name)), 0o600, "{name}");
    }
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    let server = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .expect("server line")
        .to_string();
    assert!(server.starts_with("https://127.0.0.1:"), "{text}");
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(&path)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .env("HOME", home.path())
            .output()
            .expect("run kubectl");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    eventually(Duration::from_secs(10), "installation listed", || {
        let (ok, out, _) = run(&["get", "installations", "-n", "kube-e2e"]);
        (ok && out.contains("shop")).then_some(())
    });
    // A write: the bearer token from the kubeconfig, sent over TLS.
    let (ok, _, err) = run(&[
        "annotate",
        "installation",
        "shop",
        "-n",
        "kube-e2e",
        "landscaper.gardener.cloud/operation=reconcile",
    ]);
    assert!(ok, "annotate through the kubeconfig: {err}");
    let (ok, out, err) = run(&[
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert!(ok, "{err}");
    assert_eq!(out, "landscaper-appliance:token");

    // kubectl proxy with the kubeconfig: a write through the proxy needs no token at all.
    let mut proxy = Command::new(&path)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["proxy", "--port", "0"])
        .env("HOME", home.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("kubectl proxy");
    let mut first = String::new();
    BufReader::new(proxy.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let proxy_address = first
        .trim()
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .to_string();
    let written = plain_http_patch(
        &format!(
            "http://{proxy_address}/apis/landscaper.gardener.cloud/v1alpha1/namespaces/kube-e2e/installations/shop"
        ),
        r#"{"metadata":{"annotations":{"written-through":"kubectl-proxy"}}}"#,
    );
    let _ = proxy.kill();
    let _ = proxy.wait();
    assert!(
        written.contains("\"written-through\":\"kubectl-proxy\""),
        "{first}: {written}"
    );

    // The same listener with a wrong token: refused (kubectl prompts for a password when a
    // kubeconfig has no credentials at all, so the anonymous case is not run through kubectl).
    let anonymous = home.path().join("anonymous.yaml");
    let ca = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("certificate-authority-data: "))
        .expect("CA line");
    let without_token = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\n\
         users:\n- name: a\n  user:\n    token: not-the-token\n\
         contexts:\n- name: a\n  context:\n    cluster: a\n    user: a\ncurrent-context: a\n"
    );
    std::fs::write(&anonymous, without_token).unwrap();
    let out = Command::new(&path)
        .arg("--kubeconfig")
        .arg(&anonymous)
        .args(["annotate", "installation", "shop", "-n", "kube-e2e", "x=y"])
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bearer token is not valid"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A restart keeps the CA (kubeconfigs copied elsewhere keep working).
    let ca_before = std::fs::read(daemon.data.join("tls").join("ca.crt")).unwrap();
    daemon.terminate();
    let (manifests, data) = (daemon.manifests.clone(), daemon.data.clone());
    let _again = Daemon::start_on(&manifests, &data);
    assert_eq!(
        std::fs::read(data.join("tls").join("ca.crt")).unwrap(),
        ca_before
    );
}

/// A merge-patch PATCH over plain HTTP; returns the whole response.
fn plain_http_patch(url: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").expect("http URL");
    let (authority, path) = rest.split_once('/').expect("path");
    let mut stream = std::net::TcpStream::connect(authority).expect("connect to the proxy");
    write!(
        stream,
        "PATCH /{path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/merge-patch+json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}
