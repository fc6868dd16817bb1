//! End-to-end: the CLI's kubectl habits (`-o wide|jsonpath|name`, `--no-headers`, `-w`,
//! `TYPE/NAME`, comma-separated kinds, namespace hints, the REASON/MESSAGE and PHASE columns),
//! `render --name`, `validate` of inline blueprints, and the demo's first hour (what it prints,
//! writes without LANDSCAPER_APPLIANCE_DATA, doctor on its placeholder Targets), with the real
//! binary.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use landscaper_e2e::{Daemon, binary, eventually, free_port};
use serde_json::Value;

use landscaper_e2e::PLACEHOLDER_TARGET as TARGET;

/// An Installation with an inline blueprint and one mock deploy item; `import` names a
/// DataObject it imports (one that does not exist makes it fail).
fn installation(name: &str, value: &str, import: Option<&str>) -> String {
    let (data_import, data_definition) = match import {
        Some(data) => (
            format!("    data:\n      - name: greeting\n        dataRef: {data}\n"),
            "            - name: greeting\n              type: data\n              schema: {type: string}\n",
        ),
        None => (String::new(), ""),
    };
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
{data_import}  blueprint:
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
{data_definition}          deployExecutions:
            - name: default
              type: GoTemplate
              template: |
                deployItems:
                  - name: item-{name}
                    type: landscaper.gardener.cloud/mock
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
                      providerStatus: {{{{ "{value}" | quote }}}}
"#
    )
}

const INST_PATH: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/installations";

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn run(daemon: &Daemon, args: &[&str]) -> Run {
    let out = daemon.cli(args);
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).to_string(),
    }
}

fn phase(daemon: &Daemon, name: &str) -> Option<String> {
    let o = daemon.get_json(&format!("{INST_PATH}/{name}"))?;
    o["status"]["phase"].as_str().map(str::to_string)
}

#[test]
fn get_follows_kubectl_habits() {
    let daemon = Daemon::start();
    daemon.write("target.yaml", TARGET);
    daemon.write("a.yaml", &installation("a", "v1", None));
    daemon.write("b.yaml", &installation("b", "v1", Some("missing-data")));
    eventually(Duration::from_secs(30), "a Succeeded, b Failed", || {
        (phase(&daemon, "a")? == "Succeeded" && phase(&daemon, "b")? == "Failed").then_some(())
    });

    // The wrong namespace: say where the objects are (it used to say only "No resources found.").
    let r = run(&daemon, &["get", "inst"]);
    assert!(r.ok && r.stdout.is_empty(), "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.stderr.trim(),
        "No resources found in namespace default. 2 installations exist in namespace e2e; use -n e2e or -A."
    );

    // REASON/MESSAGE: why an installation is not Succeeded.
    let r = run(&daemon, &["get", "inst", "-n", "e2e"]);
    assert!(r.ok, "{}", r.stderr);
    let header = r.stdout.lines().next().unwrap_or_default();
    assert!(
        header.contains("PHASE") && header.ends_with("REASON             MESSAGE"),
        "{}",
        r.stdout
    );
    let row_a = r.stdout.lines().find(|l| l.starts_with("a ")).unwrap();
    assert!(
        row_a.contains("Succeeded") && !row_a.contains("Imports"),
        "{row_a}"
    );
    let row_b = r.stdout.lines().find(|l| l.starts_with("b ")).unwrap();
    assert!(
        row_b.contains("Failed")
            && row_b.contains("ImportsSatisfied")
            && row_b.contains("missing-data"),
        "{}",
        r.stdout
    );

    // --no-headers, -o wide (the full message).
    let r = run(&daemon, &["get", "inst", "-n", "e2e", "--no-headers"]);
    assert_eq!(r.stdout.lines().count(), 2, "{}", r.stdout);
    assert!(!r.stdout.contains("NAME"), "{}", r.stdout);
    let r = run(&daemon, &["get", "inst", "b", "-n", "e2e", "-o", "wide"]);
    assert!(
        r.ok && r.stdout.contains("REASON"),
        "{}{}",
        r.stdout,
        r.stderr
    );

    // -o jsonpath with range/end, filters, TYPE/NAME.
    let r = run(
        &daemon,
        &[
            "get",
            "inst",
            "-n",
            "e2e",
            "-o",
            r#"jsonpath={range .items[*]}{.metadata.name}={.status.phase}{"\n"}{end}"#,
        ],
    );
    assert_eq!(r.stdout, "a=Succeeded\nb=Failed\n", "{}", r.stderr);
    let r = run(
        &daemon,
        &[
            "get",
            "inst",
            "-n",
            "e2e",
            "-o",
            r#"jsonpath={.items[?(@.status.phase=="Failed")].metadata.name}"#,
        ],
    );
    assert_eq!(r.stdout, "b", "{}", r.stderr);
    let r = run(
        &daemon,
        &[
            "get",
            "inst/a",
            "-n",
            "e2e",
            "-o",
            "jsonpath={.metadata.name}",
        ],
    );
    assert_eq!(r.stdout, "a", "{}", r.stderr);
    let r = run(
        &daemon,
        &["get", "-n", "e2e", "inst/a", "target/edge", "-o", "name"],
    );
    assert_eq!(r.stdout, "installation/a\ntarget/edge\n", "{}", r.stderr);
    let r = run(
        &daemon,
        &["get", "inst", "-n", "e2e", "-o", "jsonpath={.items[5]}"],
    );
    assert!(
        !r.ok && r.stderr.contains("array index out of bounds"),
        "{}",
        r.stderr
    );

    // Comma-separated kinds: one table per kind, names with their kind.
    let r = run(&daemon, &["get", "inst,target", "-n", "e2e"]);
    assert!(r.ok, "{}", r.stderr);
    let tables: Vec<&str> = r.stdout.split("\n\n").collect();
    assert_eq!(tables.len(), 2, "{}", r.stdout);
    assert!(tables[0].contains("installation/a") && tables[0].contains("installation/b"));
    assert!(tables[1].contains("target/edge"), "{}", r.stdout);
    let r = run(&daemon, &["get", "inst,di", "-n", "e2e", "-o", "json"]);
    let list: Value = serde_json::from_str(&r.stdout).expect("a List");
    assert_eq!(list["kind"], "List");
    assert!(
        list["items"].as_array().is_some_and(|i| i.len() >= 3),
        "{list}"
    );

    // ManifestFiles have a PHASE column.
    let r = run(&daemon, &["get", "manifestfiles"]);
    assert!(
        r.stdout.lines().next().unwrap_or("").contains("PHASE"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with("a.yaml") && l.contains("Applied")),
        "{}",
        r.stdout
    );

    // -w: the current rows, then every change as it happens.
    let mut child = Command::new(binary())
        .args(["get", "inst", "a", "-n", "e2e", "-w"])
        .env("LANDSCAPER_APPLIANCE_SERVER", &daemon.server)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next = |what: &str| {
        rx.recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no line from get -w: {what}"))
    };
    let header = next("header");
    assert!(
        header.starts_with("NAME") && header.contains("PHASE"),
        "{header}"
    );
    let first = next("the current row");
    assert!(
        first.starts_with("a ") && first.contains("Succeeded"),
        "{first}"
    );
    daemon.write("a.yaml", &installation("a", "v2", None));
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        seen.push(line);
        if seen.iter().any(|l| l.contains("Progressing"))
            && seen.last().is_some_and(|l| l.contains("Succeeded"))
        {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        seen.iter().any(|l| l.contains("Progressing")) && seen.iter().all(|l| l.starts_with("a ")),
        "rows after the change: {seen:?}"
    );
}

#[test]
fn render_picks_one_installation_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("both.yaml");
    std::fs::write(
        &file,
        format!(
            "{}---\n{}---\n{TARGET}",
            installation("first", "one", None),
            installation("second", "two", None)
        ),
    )
    .unwrap();
    let out = Command::new(binary())
        .arg("render")
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("2 Installations in this file (first, second); choose one with --name NAME"),
        "{err}"
    );
    let out = Command::new(binary())
        .arg("render")
        .arg(&file)
        .args(["--name", "second"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("item-second") && text.contains("two"),
        "{text}"
    );
    assert!(!text.contains("item-first"), "{text}");
    let out = Command::new(binary())
        .arg("render")
        .arg(&file)
        .args(["--name", "third"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("no Installation \"third\" in this file (it has: first, second)"),
        "{err}"
    );
}

#[test]
fn validate_rejects_an_invalid_inline_blueprint() {
    let dir = tempfile::tempdir().unwrap();
    let good = installation("fine", "v", None);
    std::fs::write(dir.path().join("good.yaml"), &good).unwrap();
    let bad = good.replace("name: fine", "name: broken").replace(
        "          deployExecutions:",
        "          imports: not-a-list\n          deployExecutions:",
    );
    std::fs::write(dir.path().join("bad.yaml"), format!("{TARGET}---\n{bad}")).unwrap();
    let out = Command::new(binary())
        .arg("validate")
        .arg(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("bad.yaml"))
        .unwrap_or_default();
    assert!(
        line.contains("document 1: Installation e2e/broken: spec.blueprint.inline.filesystem: invalid blueprint: blueprint.yaml"),
        "{text}"
    );
    assert!(text.contains("1 error(s)"), "{text}");
}

#[test]
fn the_demo_says_where_things_are_and_the_cli_finds_it() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let demo_dir = dir.path().join("demo");
    let port = free_port();
    let server = format!("http://127.0.0.1:{port}");
    let cli = |args: &[&str]| {
        let out = Command::new(binary())
            .args(args)
            .env("XDG_RUNTIME_DIR", &runtime)
            .env_remove("LANDSCAPER_APPLIANCE_DATA")
            .env_remove("LANDSCAPER_APPLIANCE_SERVER")
            .env_remove("LANDSCAPER_APPLIANCE_TOKEN")
            .env_remove("LANDSCAPER_APPLIANCE_TOKEN_FILE")
            .env_remove("LANDSCAPER_APPLIANCE_CONFIG")
            .env_remove("LANDSCAPER_APPLIANCE_MANIFESTS")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let mut demo = Command::new(binary())
        .arg("demo")
        .arg("--dir")
        .arg(&demo_dir)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("XDG_RUNTIME_DIR", &runtime)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = demo.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut banner = String::new();
    while !banner.contains("Ctrl-C stops the demo") {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => {
                banner.push_str(&line);
                banner.push('\n');
            }
            Err(_) => {
                let _ = demo.kill();
                panic!("the demo printed no banner:\n{banner}");
            }
        }
    }
    let data = std::path::absolute(demo_dir.join("data")).unwrap();
    for expected in [
        format!("status page:  {server}/"),
        format!("API:          {server}"),
        format!("data:         {}", data.display()),
        "landscaper-appliance get installations -n demo\n".to_string(),
        "landscaper-appliance reconcile greeter -n demo\n".to_string(),
        "landscaper-appliance doctor\n".to_string(),
    ] {
        assert!(
            banner.contains(&expected),
            "{expected:?} missing in\n{banner}"
        );
    }

    // Reads and writes find the demo (it used to take LANDSCAPER_APPLIANCE_DATA and --server).
    eventually(Duration::from_secs(30), "greeter Succeeded", || {
        let (ok, out, _) = cli(&[
            "get",
            "inst",
            "greeter",
            "-n",
            "demo",
            "-o",
            "jsonpath={.status.phase}",
        ]);
        (ok && out == "Succeeded").then_some(())
    });
    let (ok, out, err) = cli(&["reconcile", "greeter", "-n", "demo"]);
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "Installation demo/greeter: reconcile requested");

    // doctor, without arguments, checks the demo and does not fail on its placeholder Targets.
    let (ok, out, err) = cli(&["doctor"]);
    assert!(ok, "{out}{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("OK") && l.contains("checking the running demo")),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with("OK")
            && l.contains("target demo/edge-cluster")
            && l.contains("placeholder")),
        "{out}"
    );

    // Stopped, the demo is forgotten; the token error says where it looked and what to do.
    let _ = Command::new("kill")
        .args(["-TERM", &demo.id().to_string()])
        .status();
    let _ = demo.wait();
    assert!(
        !runtime.join("landscaper-appliance-demo.json").exists(),
        "the runtime file is left behind"
    );
    let (ok, _, err) = cli(&["reconcile", "greeter", "-n", "demo", "--server", &server]);
    assert!(!ok);
    assert!(
        err.contains("looked in the data folder /var/lib/landscaper-appliance")
            && err.contains("LANDSCAPER_APPLIANCE_DATA=DIR")
            && err.contains("--token-file"),
        "{err}"
    );
}
