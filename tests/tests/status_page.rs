//! End-to-end: the status page in a real browser (Debian's headless `chromium`, driven through
//! `chromedriver`'s WebDriver HTTP API). The page is loaded while a job runs; a new
//! installation added to the folder and an interrupt through the API must appear on the open
//! page without a reload (server-sent events); the reconcile action works from the page's
//! form; a screenshot is kept in `target/test-artifacts/`.

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
        Driver {
            child,
            client,
            session,
        }
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
        "return Array.from(document.querySelectorAll('#h-tree ~ ul.tree [data-key]')).map(e => e.getAttribute('data-key') + '=' + e.textContent);",
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
