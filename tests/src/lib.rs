//! Helpers for the end-to-end tests: locating the real binary, starting it on a temp folder and
//! a free port, and reading state through its HTTP API.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use landscaper_appliance::commands::client::Client;
use serde_json::Value;

pub mod acceptance;
pub mod cluster;

/// The `landscaper-appliance` binary built for this test run (`cargo build --workspace --bins`).
pub fn binary() -> PathBuf {
    workspace_binary("landscaper-appliance", "LANDSCAPER_APPLIANCE_BIN")
}

/// A binary of this workspace beside the running test: `$env_override` when set, else
/// `target/<profile>/<name>` (the test itself is `target/<profile>/deps/<test-binary>`).
pub fn workspace_binary(name: &str, env_override: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(env_override) {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binary lives in target/<profile>/deps");
    let path = profile_dir.join(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --workspace --bins` before the end-to-end tests (scripts/test.sh does)",
        path.display()
    );
    path
}

/// The shared acceptance scenarios, when this checkout sits beside `../shared`.
pub fn acceptance_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/acceptance");
    dir.is_dir().then(|| dir.canonicalize().unwrap_or(dir))
}

/// Real kubectl: `$KUBECTL`, `bin/kubectl` of this checkout, or `kubectl` on PATH.
pub fn kubectl() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KUBECTL") {
        return Some(PathBuf::from(path));
    }
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bin/kubectl");
    if local.exists() {
        return Some(local);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("kubectl"))
            .find(|p| p.exists())
    })
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Polls `check` every 50 ms until it returns `Some` or `timeout` passes.
pub fn eventually<T>(timeout: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A running daemon on a temp data folder and a free port; killed on drop.
pub struct Daemon {
    pub child: Child,
    pub server: String,
    pub manifests: PathBuf,
    pub data: PathBuf,
    pub log: PathBuf,
    pub _dirs: Option<tempfile::TempDir>,
}

impl Daemon {
    /// Starts `serve` on a new temp folder pair and waits for `/readyz`.
    pub fn start() -> Daemon {
        let dirs = tempfile::tempdir().expect("temp dir");
        let manifests = dirs.path().join("manifests");
        let data = dirs.path().join("data");
        std::fs::create_dir_all(&manifests).unwrap();
        let mut daemon = Daemon::start_on(&manifests, &data);
        daemon._dirs = Some(dirs);
        daemon
    }

    /// Starts `serve` on existing folders (e.g. to restart on the same data) and waits for
    /// `/readyz`.
    pub fn start_on(manifests: &Path, data: &Path) -> Daemon {
        let port = free_port();
        let mut args: Vec<std::ffi::OsString> = vec!["serve".into(), "--manifests".into()];
        args.push(manifests.into());
        args.push("--data".into());
        args.push(data.into());
        args.push("--listen".into());
        args.push(format!("127.0.0.1:{port}").into());
        // Parallel daemons: each its own kubeconfig listener port.
        args.push("--kubeconfig-listen".into());
        args.push("127.0.0.1:0".into());
        Daemon::spawn(manifests, data, port, &args)
    }

    /// Starts `serve --config DIR/config.yaml` on `DIR/manifests` and `DIR/data` and a free
    /// port, and waits for `/readyz`. The config file holds `manifestsDir`, `dataDir` and
    /// `listen`, followed by `extra_config` (more top-level YAML fields, e.g.
    /// `deployItemTimeouts: {pickup: 5s}`).
    pub fn start_with_config(dir: &Path, extra_config: &str) -> Daemon {
        let port = free_port();
        let manifests = dir.join("manifests");
        let data = dir.join("data");
        std::fs::create_dir_all(&manifests).unwrap();
        let config = dir.join("config.yaml");
        std::fs::write(
            &config,
            format!(
                "manifestsDir: {}\ndataDir: {}\nlisten: 127.0.0.1:{port}\n{extra_config}",
                serde_json::Value::String(manifests.display().to_string()),
                serde_json::Value::String(data.display().to_string()),
            ),
        )
        .unwrap();
        let mut args: Vec<std::ffi::OsString> =
            vec!["serve".into(), "--config".into(), config.into()];
        if !extra_config.contains("kubeconfigListen") {
            // Parallel daemons: each its own kubeconfig listener port.
            args.extend(["--kubeconfig-listen".into(), "127.0.0.1:0".into()]);
        }
        Daemon::spawn(&manifests, &data, port, &args)
    }

    fn spawn(manifests: &Path, data: &Path, port: u16, args: &[std::ffi::OsString]) -> Daemon {
        let server = format!("http://127.0.0.1:{port}");
        std::fs::create_dir_all(data).unwrap();
        let log = data.with_extension(format!("log-{port}"));
        let log_file = std::fs::File::create(&log).unwrap();
        let child = Command::new(binary())
            .args(args)
            .env("RUST_LOG", "info")
            .env_remove("LANDSCAPER_APPLIANCE_CONFIG")
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("start landscaper-appliance serve");
        let mut daemon = Daemon {
            child,
            server,
            manifests: manifests.to_path_buf(),
            data: data.to_path_buf(),
            log,
            _dirs: None,
        };
        daemon.wait_ready(Duration::from_secs(30));
        daemon
    }

    pub fn wait_ready(&mut self, timeout: Duration) {
        let client = self.client();
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok((200, _)) = client.get("/readyz", "text/plain") {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("daemon exited with {status} before ready:\n{}", self.logs());
            }
            assert!(
                Instant::now() < deadline,
                "daemon not ready after {timeout:?}:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    pub fn client(&self) -> Client {
        Client::new(&self.server).unwrap()
    }

    pub fn get_json(&self, path: &str) -> Option<Value> {
        self.client().get_json(path).ok()
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn write(&self, relative: &str, content: &str) {
        let path = self.manifests.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, content).unwrap();
    }

    /// Runs the CLI against this daemon.
    pub fn cli(&self, args: &[&str]) -> Output {
        Command::new(binary())
            .args(args)
            .env("LANDSCAPER_APPLIANCE_SERVER", &self.server)
            .output()
            .expect("run landscaper-appliance")
    }

    /// Sends SIGTERM and waits for the exit; returns the exit status and how long it took.
    pub fn terminate(&mut self) -> (std::process::ExitStatus, Duration) {
        let start = Instant::now();
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = start + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return (status, start.elapsed());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("daemon ignored SIGTERM for 20 s:\n{}", self.logs());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A Target of a cluster that does not exist (`edge.invalid`): for tests that need a Target
/// object but never reach its cluster.
pub const PLACEHOLDER_TARGET: &str = r#"
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Target
metadata:
  name: edge
  namespace: e2e
spec:
  type: landscaper.gardener.cloud/kubernetes-cluster
  config:
    kubeconfig: |
      apiVersion: v1
      kind: Config
      clusters: [{name: c, cluster: {server: "https://edge.invalid:6443"}}]
      contexts: [{name: c, context: {cluster: c, user: u}}]
      current-context: c
      users: [{name: u, user: {token: t}}]
"#;
