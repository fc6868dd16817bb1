//! End-to-end: the status page in a real browser (Debian's headless `chromium`, driven through
//! `chromedriver`'s WebDriver HTTP API).
//!
//! - The page is loaded while a job runs; a new installation added to the folder and an
//!   interrupt through the API must appear on the open page without a reload (server-sent
//!   events); the reconcile action works from the page's form with the token.
//! - A store with 1,000 installations: filtering (namespace, phase, text), paging, failures at
//!   their root cause, only changed rows fetched on a change, the pictures (tree, data flow,
//!   deploy-item DAG, timeline of the current and last job), a login link from
//!   `landscaper-appliance ui` instead of the token, keyboard focus and dark mode.
//!
//! Screenshots are kept in `target/test-artifacts/`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use landscaper_appliance::commands::client::Client;
use landscaper_e2e::{Daemon, eventually, free_port};
use serde_json::{Value, json};

fn installation(name: &str, mock_phase: &str) -> String {
    format!(
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: {name}
  namespace: e2e
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
                      phase: {mock_phase}
"#
    )
}

fn find_program(env: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p));
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.exists())
}

/// chromedriver on a free port; killed on drop.
struct Driver {
    child: Child,
    client: Client,
    session: String,
}

impl Driver {
    fn start(chromium: &Path, chromedriver: &Path) -> Driver {
        let port = free_port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let client = Client::new(&format!("http://127.0.0.1:{port}")).unwrap();
        eventually(Duration::from_secs(20), "chromedriver to answer", || {
            client
                .get_json("/status")
                .ok()
                .filter(|s| s["value"]["ready"] == true)
        });
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium.display().to_string(),
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,1400"]
            }
        }}});
        let created = client.post_json("/session", &caps).expect("new session");
        let session = created["value"]["sessionId"]
            .as_str()
            .expect("session id")
            .to_string();
        let driver = Driver {
            child,
            client,
            session,
        };
        // A page that does not load in 15 s fails the test (a page left behind once kept its
        // event stream open, and the seventh page waited a minute for a free connection).
        driver.post("/timeouts", json!({"pageLoad": 15_000, "script": 15_000}));
        driver
    }

    fn post(&self, path: &str, body: Value) -> Value {
        let answer = self
            .client
            .post_json(&format!("/session/{}{path}", self.session), &body)
            .unwrap_or_else(|e| panic!("WebDriver {path}: {e}"));
        answer["value"].clone()
    }

    fn open(&self, url: &str) {
        self.post("/url", json!({ "url": url }));
    }

    fn script(&self, script: &str) -> Value {
        self.post("/execute/sync", json!({ "script": script, "args": [] }))
    }

    /// The page's current URL.
    fn url(&self) -> String {
        self.script("return window.location.href;")
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Presses a key (a WebDriver key code such as `\u{E004}`, Tab) in the page.
    fn press(&self, key: &str) {
        self.post(
            "/actions",
            json!({"actions": [{"type": "key", "id": "keyboard", "actions": [
                {"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}]}]}),
        );
    }

    /// A Chrome DevTools command (chromedriver's `goog/cdp/execute`).
    fn cdp(&self, cmd: &str, params: Value) {
        self.post("/goog/cdp/execute", json!({"cmd": cmd, "params": params}));
    }

    /// Waits until the page after a navigation has loaded.
    fn loaded(&self) {
        eventually(Duration::from_secs(20), "the page to load", || {
            (self.script("return document.readyState;") == json!("complete")).then_some(())
        });
    }

    /// The text of the phase badge of `key` (`Installation/e2e/name`), if shown.
    fn phase_of(&self, key: &str) -> Option<String> {
        let script = format!(
            "var e = document.querySelector('[data-key=\"{key}\"]'); return e ? e.textContent : null;"
        );
        self.script(&script).as_str().map(str::to_string)
    }

    fn screenshot(&self, file: &Path) {
        let answer = self
            .client
            .get_json(&format!("/session/{}/screenshot", self.session))
            .expect("screenshot");
        use base64::Engine as _;
        let png = base64::engine::general_purpose::STANDARD
            .decode(answer["value"].as_str().unwrap_or_default())
            .expect("PNG in base64");
        assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, png).unwrap();
        eprintln!("screenshot: {}", file.display());
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.client.delete(&format!("/session/{}", self.session));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn artifacts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-artifacts")
}

#[test]
fn the_page_shows_the_tree_and_updates_live_in_a_real_browser() {
    let (Some(chromium), Some(chromedriver)) = (
        find_program(
            "CHROMIUM",
            &["chromium", "chromium-browser", "google-chrome"],
        ),
        find_program("CHROMEDRIVER", &["chromedriver"]),
    ) else {
        println!(
            "SKIP: chromium and chromedriver are not installed (scripts/test.sh installs them)"
        );
        return;
    };
    let mut daemon = Daemon::start();
    daemon.write("waiting.yaml", &installation("waiting", "Progressing"));
    daemon.write("broken.yaml", "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Installation\nmetadata: [not, a, map\n");
    let inst_path = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/installations";
    eventually(Duration::from_secs(30), "the first job to run", || {
        daemon
            .get_json(&format!("{inst_path}/waiting"))
            .filter(|i| i["status"]["phase"] == "Progressing")
    });

    let driver = Driver::start(&chromium, &chromedriver);
    driver.open(&format!("{}/", daemon.server));
    // The tree: installation, execution and deploy item, each with its phase.
    let tree = driver.script(
        "return Array.from(document.querySelectorAll('#list [data-key]')).map(e => e.getAttribute('data-key') + '=' + e.textContent);",
    );
    let tree: Vec<String> = serde_json::from_value(tree).unwrap();
    assert!(
        tree.contains(&"Installation/e2e/waiting=Progressing".to_string()),
        "{tree:?}"
    );
    assert!(
        tree.iter()
            .any(|e| e.starts_with("Execution/e2e/") && e.ends_with("=Progressing")),
        "{tree:?}"
    );
    assert!(
        tree.iter()
            .any(|e| e.starts_with("DeployItem/e2e/") && e.ends_with("=Progressing")),
        "{tree:?}"
    );
    // The running job with its progress, and the broken file with its error.
    let body = driver.script("return document.body.innerText;");
    let body = body.as_str().unwrap_or_default();
    assert!(body.contains("0/1 subobjects finished"), "{body}");
    assert!(body.contains("broken.yaml"), "{body}");
    let title = driver.script("return document.title;");
    assert_eq!(title, "Overview · Landscaper appliance");
    driver.script("window.__loadedOnce = 42; return null;");
    eventually(Duration::from_secs(10), "the live connection", || {
        driver
            .script("return document.getElementById('live').textContent;")
            .as_str()
            .filter(|t| t.starts_with("live"))
            .map(str::to_string)
    });

    // A new installation appears and finishes on the open page.
    daemon.write("quick.yaml", &installation("quick", "Succeeded"));
    eventually(
        Duration::from_secs(30),
        "quick to show Succeeded on the page",
        || {
            driver
                .phase_of("Installation/e2e/quick")
                .filter(|p| p == "Succeeded")
        },
    );
    // An interrupt through the API shows up too.
    let token = std::fs::read_to_string(daemon.data.join("api-token")).unwrap();
    daemon
        .client()
        .with_token(token.trim())
        .patch_json(
            &format!("{inst_path}/waiting"),
            &json!({"metadata": {"annotations": {"landscaper.gardener.cloud/operation": "interrupt"}}}),
        )
        .unwrap();
    eventually(
        Duration::from_secs(30),
        "waiting to show Failed on the page",
        || {
            driver
                .phase_of("Installation/e2e/waiting")
                .filter(|p| p == "Failed")
        },
    );
    assert_eq!(
        driver.script("return window.__loadedOnce;"),
        json!(42),
        "the page was updated in place, not reloaded"
    );
    driver.screenshot(&artifacts_dir().join("status-page-overview.png"));

    // The installation page: reconcile through its form with the token.
    driver.open(&format!("{}/ui/installations/e2e/waiting", daemon.server));
    let fill = format!(
        "var f = document.querySelector('form input[name=operation][value=reconcile]').form; f.querySelector('input[name=token]').value = {}; f.submit(); return null;",
        json!(token.trim())
    );
    driver.script(&fill);
    let flash = eventually(Duration::from_secs(10), "the action's answer", || {
        driver
            .script("var e = document.querySelector('.flash'); return e ? e.textContent : null;")
            .as_str()
            .map(str::to_string)
    });
    assert_eq!(flash, "reconcile requested");
    eventually(Duration::from_secs(30), "waiting to run again", || {
        daemon
            .get_json(&format!("{inst_path}/waiting"))
            .filter(|i| i["status"]["phase"] == "Progressing")
    });
    driver.screenshot(&artifacts_dir().join("status-page-installation.png"));
    assert!(!daemon.logs().contains("panicked"));
    // The open page keeps an event stream open: SIGTERM still ends the daemon promptly.
    let (status, took) = daemon.terminate();
    assert!(status.success(), "exit status {status}:\n{}", daemon.logs());
    assert!(took < Duration::from_secs(10), "shutdown took {took:?}");
}

/// `count` installations with an empty blueprint in namespace `team-{i % 5}`, as one file of
/// YAML documents; every 100th (from `failing_from`) runs a mock deploy item that fails.
fn bulk(first: usize, count: usize) -> String {
    let mut out = String::new();
    for i in first..first + count {
        let ns = format!("team-{}", i % 5);
        let blueprint = if i % 100 == 42 {
            "          deployExecutions:
            - name: default
              type: GoTemplate
              template: |
                deployItems:
                  - name: item
                    type: landscaper.gardener.cloud/mock
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
                      phase: Failed
"
        } else {
            ""
        };
        out.push_str(&format!(
            r#"---
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: bulk-{i:04}
  namespace: {ns}
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
{blueprint}"#
        ));
    }
    out
}

/// A root with three subinstallations passing data along (a → b → c).
const SHOP: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: shop
  namespace: shop
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
          subinstallations:
            - file: /a.yaml
            - file: /b.yaml
            - file: /c.yaml
        a.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: InstallationTemplate
          name: a
          exports:
            data:
              - name: out
                dataRef: db-url
          blueprint:
            filesystem:
              blueprint.yaml: |
                apiVersion: landscaper.gardener.cloud/v1alpha1
                kind: Blueprint
                jsonSchema: "https://json-schema.org/draft/2019-09/schema"
                exports:
                  - name: out
                    type: data
                    schema: {type: string}
                exportExecutions:
                  - name: default
                    type: GoTemplate
                    template: |
                      exports:
                        out: "postgres://db"
        b.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: InstallationTemplate
          name: b
          imports:
            data:
              - name: in
                dataRef: db-url
          exports:
            data:
              - name: out
                dataRef: api-url
          blueprint:
            filesystem:
              blueprint.yaml: |
                apiVersion: landscaper.gardener.cloud/v1alpha1
                kind: Blueprint
                jsonSchema: "https://json-schema.org/draft/2019-09/schema"
                imports:
                  - name: in
                    type: data
                    schema: {type: string}
                exports:
                  - name: out
                    type: data
                    schema: {type: string}
                exportExecutions:
                  - name: default
                    type: GoTemplate
                    template: |
                      exports:
                        out: "http://api"
        c.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: InstallationTemplate
          name: c
          imports:
            data:
              - name: in
                dataRef: api-url
          blueprint:
            filesystem:
              blueprint.yaml: |
                apiVersion: landscaper.gardener.cloud/v1alpha1
                kind: Blueprint
                jsonSchema: "https://json-schema.org/draft/2019-09/schema"
                imports:
                  - name: in
                    type: data
                    schema: {type: string}
"#;

/// Three mock deploy items: b depends on a, c on a and b.
const DAG: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: dag
  namespace: shop
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
                  - name: a
                    type: landscaper.gardener.cloud/mock
                    config: {apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1, kind: ProviderConfiguration, phase: Succeeded}
                  - name: b
                    type: landscaper.gardener.cloud/mock
                    dependsOn: [a]
                    config: {apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1, kind: ProviderConfiguration, phase: Succeeded}
                  - name: c
                    type: landscaper.gardener.cloud/mock
                    dependsOn: [a, b]
                    config: {apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1, kind: ProviderConfiguration, phase: Succeeded}
"#;

fn installations(daemon: &Daemon) -> Vec<Value> {
    daemon
        .get_json("/apis/landscaper.gardener.cloud/v1alpha1/installations")
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
}

fn finished(i: &Value) -> bool {
    matches!(i["status"]["phase"].as_str(), Some("Succeeded" | "Failed"))
        && i["status"]["jobID"] == i["status"]["jobIDFinished"]
}

fn strings(v: Value) -> Vec<String> {
    serde_json::from_value(v).unwrap_or_default()
}

#[test]
fn a_thousand_installations_filter_page_and_draw_in_a_real_browser() {
    let (Some(chromium), Some(chromedriver)) = (
        find_program(
            "CHROMIUM",
            &["chromium", "chromium-browser", "google-chrome"],
        ),
        find_program("CHROMEDRIVER", &["chromedriver"]),
    ) else {
        println!(
            "SKIP: chromium and chromedriver are not installed (scripts/test.sh installs them)"
        );
        return;
    };
    let started = std::time::Instant::now();
    let mut daemon = Daemon::start();
    for f in 0..10 {
        daemon.write(&format!("bulk/bulk-{f}.yaml"), &bulk(f * 100, 100));
    }
    daemon.write("shop/shop.yaml", SHOP);
    daemon.write("shop/dag.yaml", DAG);
    // 1,000 bulk + shop with a, b, c + dag.
    let total = 1005;
    eventually(
        Duration::from_secs(120),
        "every installation to finish its job",
        || {
            let all = installations(&daemon);
            (all.len() == total && all.iter().all(finished)).then_some(())
        },
    );
    eprintln!("1,005 installations done after {:?}", started.elapsed());
    let all = installations(&daemon);
    let failed: Vec<&Value> = all
        .iter()
        .filter(|i| i["status"]["phase"] == "Failed")
        .collect();
    assert_eq!(failed.len(), 10, "bulk-0042, bulk-0142, …");

    let driver = Driver::start(&chromium, &chromedriver);
    let artifacts = artifacts_dir();
    driver.open(&format!("{}/", daemon.server));
    driver.loaded();
    let heading = driver.script("return document.getElementById('h-tree').textContent;");
    assert_eq!(heading, json!(format!("Installations ({total})")));
    let rows = || {
        strings(driver.script(
            "return Array.from(document.querySelectorAll('#list tr[data-row]')).map(r => r.getAttribute('data-row'));",
        ))
    };
    let first_page = rows();
    assert_eq!(first_page.len(), 50, "paged: {first_page:?}");
    let pages = total.div_ceil(50);
    let info = driver.script("return document.getElementById('page-info').textContent;");
    assert_eq!(info, json!(format!("1–50 of {total} · page 1 of {pages}")));
    // Each failure once, at its root cause (the deploy item), with the path to it.
    let causes = strings(driver.script(
        "return Array.from(document.querySelectorAll('[data-cause]')).map(c => c.getAttribute('data-cause') + ' @ ' + c.querySelector('.path').textContent.trim());",
    ));
    assert_eq!(causes.len(), 10, "{causes:?}");
    assert!(
        causes
            .iter()
            .all(|c| c.starts_with("DeployItem/") && c.contains("@ bulk-") && c.contains(" › ")),
        "{causes:?}"
    );
    driver.screenshot(&artifacts.join("status-page-1000-overview.png"));

    // Paging: the next link, then the last page.
    driver.script("document.querySelector('a[rel=next]').click(); return null;");
    eventually(Duration::from_secs(10), "page 2", || {
        driver.url().contains("page=2").then_some(())
    });
    driver.loaded();
    let second_page = rows();
    assert_eq!(second_page.len(), 50);
    assert!(
        second_page.iter().all(|r| !first_page.contains(r)),
        "another page"
    );
    driver.open(&format!("{}/?page={pages}", daemon.server));
    assert_eq!(rows().len(), total - (pages - 1) * 50);

    // Filtering with the form: namespace and phase.
    driver.open(&format!("{}/", daemon.server));
    driver.script(
        "var f = document.querySelector('form.filters'); f.ns.value = 'team-2'; f.phase.value = 'Failed'; setTimeout(function () { f.submit(); }, 0); return null;",
    );
    eventually(Duration::from_secs(10), "the filtered page", || {
        let url = driver.url();
        (url.contains("ns=team-2") && url.contains("phase=Failed")).then_some(())
    });
    driver.loaded();
    let expected: Vec<String> = failed
        .iter()
        .filter(|i| i["metadata"]["namespace"] == "team-2")
        .map(|i| {
            format!(
                "Installation/team-2/{}",
                i["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    let mut shown = rows();
    shown.sort();
    assert!(!expected.is_empty());
    assert_eq!(shown, expected);
    driver.screenshot(&artifacts.join("status-page-1000-filtered.png"));
    // Free text: a name, and the text of an error.
    driver.open(&format!("{}/?q=bulk-0421", daemon.server));
    assert_eq!(rows(), ["Installation/team-1/bulk-0421"]);
    driver.open(&format!("{}/?q=BULK-01&ns=team-3", daemon.server));
    let shown = rows();
    assert_eq!(
        shown.len(),
        20,
        "bulk-0103 … bulk-0198 in team-3: {shown:?}"
    );

    // Live updates fetch only the changed rows: record the page's requests, then change an
    // installation shown on page 1.
    driver.open(&format!("{}/", daemon.server));
    driver.loaded();
    eventually(Duration::from_secs(10), "the live connection", || {
        driver
            .script("return document.getElementById('live').textContent;")
            .as_str()
            .filter(|t| t.starts_with("live"))
            .map(str::to_string)
    });
    driver.script(
        "window.__fetched = []; var f = window.fetch; window.fetch = function (u, o) { window.__fetched.push(String(u)); return f(u, o); }; window.__loadedOnce = 7; return null;",
    );
    let target = first_page
        .iter()
        .find(|r| r.starts_with("Installation/team-0/"))
        .expect("a bulk installation on page 1")
        .clone();
    let (_, ns_name) = target.split_once('/').unwrap();
    let (ns, name) = ns_name.split_once('/').unwrap();
    let before = driver.script(&format!(
        "return document.querySelector('tr[data-row=\"{target}\"]').outerHTML;"
    ));
    let out = Command::new(landscaper_e2e::binary())
        .args(["reconcile", name, "-n", ns])
        .env("LANDSCAPER_APPLIANCE_SERVER", &daemon.server)
        .env("LANDSCAPER_APPLIANCE_DATA", &daemon.data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let fetched = eventually(Duration::from_secs(30), "the row's update", || {
        let fetched = strings(driver.script("return window.__fetched;"));
        let row = driver.script(&format!(
            "return document.querySelector('tr[data-row=\"{target}\"]').outerHTML;"
        ));
        (fetched.iter().any(|u| u.contains("/ui/rows?keys=")) && row != before).then_some(fetched)
    });
    assert!(
        fetched
            .iter()
            .all(|u| u.contains("/ui/rows?") || u.contains("fragment=summary")),
        "only rows and the summary: {fetched:?}"
    );
    assert!(
        fetched
            .iter()
            .filter(|u| u.contains("/ui/rows?"))
            .all(|u| u.contains(&target.replace('/', "%2F"))),
        "{fetched:?}"
    );
    assert_eq!(driver.script("return window.__loadedOnce;"), json!(7));

    // Pictures: the tree and the data flow of shop.
    driver.open(&format!("{}/ui/installations/shop/shop", daemon.server));
    driver.loaded();
    let nodes = strings(driver.script(
        "return Array.from(document.querySelectorAll('#fig-tree [data-node]')).map(n => n.getAttribute('data-node'));",
    ));
    // Subinstallations are named `<template>-<suffix>`.
    let short: Vec<&str> = nodes.iter().map(|n| n.split('-').next().unwrap()).collect();
    assert_eq!(short, ["shop", "a", "b", "c"], "{nodes:?}");
    let edges = strings(driver.script(
        "return Array.from(document.querySelectorAll('#fig-children-flow path.edge title')).map(t => t.textContent);",
    ));
    assert_eq!(edges, ["db-url", "api-url"], "a → b → c");
    let flow_nodes =
        driver.script("return document.querySelectorAll('#fig-children-flow [data-node]').length;");
    assert_eq!(flow_nodes, json!(3));
    driver.screenshot(&artifacts.join("status-page-graphs.png"));
    // A subinstallation shows the flow among its siblings, itself highlighted.
    driver.open(&format!(
        "{}/ui/installations/shop/{}",
        daemon.server, nodes[2]
    ));
    let current = driver.script("return document.querySelector('#fig-siblings-flow .node.current').getAttribute('data-node');");
    assert_eq!(current, json!(nodes[2]));

    // Sign in with a login link from `landscaper-appliance ui`: actions without the token.
    let out = Command::new(landscaper_e2e::binary())
        .arg("ui")
        .env("LANDSCAPER_APPLIANCE_SERVER", &daemon.server)
        .env("LANDSCAPER_APPLIANCE_DATA", &daemon.data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let link = stdout.lines().next().unwrap_or_default().to_string();
    assert!(
        link.starts_with(&format!("{}/ui/login?code=", daemon.server)),
        "{stdout}"
    );
    // Without the cookie: read-only, the spec's secrets redacted, the token field shown.
    driver.open(&format!("{}/ui/installations/shop/dag", daemon.server));
    assert_eq!(
        driver.script("return document.getElementById('who').textContent;"),
        json!("read-only")
    );
    assert_eq!(
        driver.script("return document.querySelectorAll('input[name=token]').length;"),
        json!(2)
    );
    driver.open(&link);
    driver.loaded();
    assert_eq!(
        driver.script("return document.getElementById('who').textContent;"),
        json!("signed in")
    );
    // The link worked once.
    let again = daemon
        .client()
        .get(&link[daemon.server.len()..], "text/html")
        .unwrap();
    assert_eq!(again.0, 403, "a login link is single-use");
    // The cookie is HttpOnly: page scripts cannot read it.
    assert_eq!(driver.script("return document.cookie;"), json!(""));

    // The DAG and the timeline of dag; a reconcile without the token adds the last job.
    let dag_before = daemon
        .get_json("/apis/landscaper.gardener.cloud/v1alpha1/namespaces/shop/installations/dag")
        .unwrap();
    driver.open(&format!("{}/ui/installations/shop/dag", daemon.server));
    driver.loaded();
    let dag_nodes = strings(driver.script(
        "return Array.from(document.querySelectorAll('#fig-dag [data-node]')).map(n => n.getAttribute('data-node'));",
    ));
    assert_eq!(dag_nodes, ["a", "b", "c"]);
    assert_eq!(
        driver.script("return document.querySelectorAll('#fig-dag path.edge').length;"),
        json!(3),
        "a→b, a→c, b→c"
    );
    assert_eq!(
        driver.script("return document.querySelectorAll('input[name=token]').length;"),
        json!(0),
        "signed in: no token to paste"
    );
    driver.script(
        "var b = document.querySelector('form input[name=operation][value=reconcile]').form.querySelector('button'); setTimeout(function () { b.click(); }, 0); return null;",
    );
    let flash = eventually(Duration::from_secs(10), "the action's answer", || {
        driver
            .script("var e = document.querySelector('.flash'); return e ? e.textContent : null;")
            .as_str()
            .map(str::to_string)
    });
    assert_eq!(flash, "reconcile requested");
    eventually(
        Duration::from_secs(60),
        "dag's second job to finish",
        || {
            daemon
                .get_json(
                    "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/shop/installations/dag",
                )
                .filter(|i| finished(i) && i["status"]["jobID"] != dag_before["status"]["jobID"])
        },
    );
    let spans = eventually(
        Duration::from_secs(10),
        "the timeline with both jobs",
        || {
            driver.open(&format!("{}/ui/installations/shop/dag", daemon.server));
            let spans = strings(driver.script(
            "return Array.from(document.querySelectorAll('#fig-timeline [data-span]')).map(s => s.getAttribute('data-span'));",
        ));
            spans
                .iter()
                .any(|s| s == "Installation dag|last")
                .then_some(spans)
        },
    );
    for object in [
        "Installation dag",
        "Execution dag",
        "DeployItem a",
        "DeployItem c",
    ] {
        assert!(
            spans.contains(&format!("{object}|current")),
            "{object}: {spans:?}"
        );
    }
    // Relative times with the absolute time on hover.
    let time = driver.script(
        "var t = document.querySelector('time[datetime]'); return [t.textContent, t.title, t.getAttribute('datetime')];",
    );
    let time = strings(time);
    assert!(
        time[0].ends_with(" ago") || time[0].starts_with("in "),
        "{time:?}"
    );
    assert!(time[1].contains(&time[2]), "{time:?}");
    // Defined in: the file and line, a link to the file for signed-in readers.
    let defined = driver.script("return document.getElementById('defined-in').textContent;");
    assert!(
        defined
            .as_str()
            .unwrap_or_default()
            .contains("shop/dag.yaml:2"),
        "{defined}"
    );
    driver.screenshot(&artifacts.join("status-page-dag-timeline.png"));
    driver.script("document.querySelector('#defined-in a').click(); return null;");
    eventually(Duration::from_secs(10), "the file view", || {
        driver
            .url()
            .contains("/ui/files?path=shop%2Fdag.yaml#L2")
            .then_some(())
            .or_else(|| {
                driver
                    .url()
                    .contains("/ui/files?path=shop/dag.yaml#L2")
                    .then_some(())
            })
    });
    let line = driver.script("return document.querySelector('tr:target pre').textContent;");
    assert_eq!(line, json!("kind: Installation"));

    // Keyboard: the first Tab reaches the skip link, with a visible focus ring; actions are
    // buttons.
    driver.open(&format!("{}/ui/installations/shop/dag", daemon.server));
    driver.press("\u{E004}");
    let focused = strings(driver.script(
        "var e = document.activeElement; return [e.textContent, getComputedStyle(e).outlineStyle];",
    ));
    assert_eq!(focused, ["Skip to content", "solid"]);
    assert_eq!(
        driver
            .script("return document.querySelectorAll('form.action button[type=submit]').length;"),
        json!(2)
    );
    // Dark mode follows prefers-color-scheme.
    driver.cdp(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
    );
    let background = driver.script("return getComputedStyle(document.body).backgroundColor;");
    assert_eq!(background, json!("rgb(13, 17, 23)"));
    driver.screenshot(&artifacts.join("status-page-dark.png"));
    assert!(!daemon.logs().contains("panicked"));
    let (status, _) = daemon.terminate();
    assert!(status.success(), "{}", daemon.logs());
    eprintln!("the 1,000-installation test took {:?}", started.elapsed());
}
