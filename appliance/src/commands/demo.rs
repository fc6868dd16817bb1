//! The demo's first hour: what `demo` prints once it is ready (where the status page, the API
//! and the kubeconfig are, which commands to try), and the runtime file through which the CLI
//! finds a running demo's data folder without `LANDSCAPER_APPLIANCE_DATA`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::config::Config;

/// What a running demo tells the CLI: its data folder (socket, token, kubeconfig) and API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DemoRuntime {
    pub data_dir: PathBuf,
    pub manifests_dir: PathBuf,
    pub server: String,
    pub pid: u32,
}

/// Where a running demo is announced: `$XDG_RUNTIME_DIR/landscaper-appliance-demo.json`, else
/// `<temp dir>/landscaper-appliance-demo-<uid>.json` (one per user).
pub fn runtime_file() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("landscaper-appliance-demo.json"),
        None => {
            let uid = std::fs::metadata("/proc/self").map_or(0, |m| m.uid());
            std::env::temp_dir().join(format!("landscaper-appliance-demo-{uid}.json"))
        }
    }
}

/// The running demo announced in [`runtime_file`], if its process still runs and its socket
/// is there (a demo that was killed leaves the file behind).
pub fn running_demo() -> Option<DemoRuntime> {
    read_runtime(&runtime_file())
}

/// The announcement in `file`, running or not.
fn parse_runtime(file: &Path) -> Option<DemoRuntime> {
    let text = std::fs::read_to_string(file).ok()?;
    serde_json::from_str(&text).ok()
}

fn read_runtime(file: &Path) -> Option<DemoRuntime> {
    let runtime = parse_runtime(file)?;
    let alive = Path::new(&format!("/proc/{}", runtime.pid)).exists()
        && runtime
            .data_dir
            .join(crate::config::SOCKET_FILE_NAME)
            .exists();
    alive.then_some(runtime)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// What the demo prints when it is ready.
pub fn banner(runtime: &DemoRuntime, kubeconfig: Option<&Path>) -> String {
    let server = &runtime.server;
    let data = runtime.data_dir.display();
    let manifests = runtime.manifests_dir.display();
    let kubeconfig_line = match kubeconfig {
        Some(path) => format!("  kubeconfig:   {}\n", path.display()),
        None => "  kubeconfig:   none (the kubeconfig listener did not start; see the log above)\n"
            .to_string(),
    };
    let kubectl_line = match kubeconfig {
        Some(path) => format!(
            "  kubectl --kubeconfig {} get installations -A\n",
            path.display()
        ),
        None => String::new(),
    };
    format!(
        "\nThe demo is ready.\n  status page:  {server}/\n  API:          {server}\n{kubeconfig_line}  manifests:    {manifests}\n  data:         {data}\n\nTry, in another terminal (the CLI finds this demo by itself, no LANDSCAPER_APPLIANCE_DATA needed):\n  landscaper-appliance get installations -n demo\n  landscaper-appliance tree greeter -n demo\n  landscaper-appliance describe installation greeter -n demo\n  landscaper-appliance reconcile greeter -n demo\n  landscaper-appliance get installations -n demo -w\n  landscaper-appliance doctor\n{kubectl_line}Edit or add YAML in {manifests} and watch the installation follow. Ctrl-C stops the demo.\n",
    )
}

/// Waits (in a thread) until the demo's daemon is ready, then announces it in
/// [`runtime_file`] and prints [`banner`]. The announcement is removed by [`forget`].
pub fn announce(config: &Config) {
    let runtime = DemoRuntime {
        data_dir: absolute(&config.data_dir),
        manifests_dir: absolute(&config.manifests_dir),
        server: format!("http://{}", config.listen),
        pid: std::process::id(),
    };
    let socket = config.socket_path();
    std::thread::spawn(move || {
        let client = crate::commands::client::Client::unix(&socket);
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            if matches!(client.get("/readyz", "text/plain"), Ok((200, _))) {
                let file = runtime_file();
                let written = serde_json::to_vec_pretty(&runtime)
                    .map_err(std::io::Error::other)
                    .and_then(|text| std::fs::write(&file, text));
                if let Err(error) = written {
                    tracing::warn!(file = %file.display(), %error, "cannot announce the demo to the CLI");
                }
                let kubeconfig = runtime
                    .data_dir
                    .join(crate::daemon::api::kubeconfig::KUBECONFIG_FILE);
                println!(
                    "{}",
                    banner(
                        &runtime,
                        kubeconfig.exists().then_some(kubeconfig.as_path())
                    )
                );
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
}

/// Removes the demo's announcement (when it is this process's).
pub fn forget() {
    let file = runtime_file();
    // The daemon has stopped and removed its socket: not `read_runtime`.
    if parse_runtime(&file).is_some_and(|r| r.pid == std::process::id()) {
        let _ = std::fs::remove_file(file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banner_names_the_urls_the_kubeconfig_and_next_steps() {
        let runtime = DemoRuntime {
            data_dir: "/tmp/d/data".into(),
            manifests_dir: "/tmp/d/manifests".into(),
            server: "http://127.0.0.1:9000".into(),
            pid: 1,
        };
        let text = banner(&runtime, Some(Path::new("/tmp/d/data/kubeconfig.yaml")));
        for expected in [
            "status page:  http://127.0.0.1:9000/",
            "API:          http://127.0.0.1:9000",
            "kubeconfig:   /tmp/d/data/kubeconfig.yaml",
            "landscaper-appliance get installations -n demo\n",
            "landscaper-appliance reconcile greeter -n demo\n",
            "landscaper-appliance doctor\n",
            "kubectl --kubeconfig /tmp/d/data/kubeconfig.yaml get installations -A",
        ] {
            assert!(text.contains(expected), "{expected:?} missing in\n{text}");
        }
        let default = DemoRuntime {
            server: crate::cli::DEFAULT_SERVER.into(),
            ..runtime
        };
        let text = banner(&default, None);
        assert!(text.contains("manifests:    /tmp/d/manifests\n"), "{text}");
        assert!(text.contains("kubeconfig:   none"), "{text}");
        assert!(!text.contains("kubectl --kubeconfig"), "{text}");
    }

    #[test]
    fn a_runtime_file_counts_only_while_its_process_runs() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("demo.json");
        std::fs::write(dir.path().join(crate::config::SOCKET_FILE_NAME), "").unwrap();
        let mut runtime = DemoRuntime {
            data_dir: dir.path().to_path_buf(),
            manifests_dir: "/m".into(),
            server: "http://127.0.0.1:1".into(),
            pid: std::process::id(),
        };
        std::fs::write(&file, serde_json::to_vec(&runtime).unwrap()).unwrap();
        assert_eq!(read_runtime(&file), Some(runtime.clone()));
        runtime.data_dir = dir.path().join("gone");
        std::fs::write(&file, serde_json::to_vec(&runtime).unwrap()).unwrap();
        assert_eq!(read_runtime(&file), None, "no socket: not running");
        runtime.data_dir = dir.path().to_path_buf();
        runtime.pid = u32::MAX;
        std::fs::write(&file, serde_json::to_vec(&runtime).unwrap()).unwrap();
        assert_eq!(read_runtime(&file), None);
        std::fs::write(&file, "not json").unwrap();
        assert_eq!(read_runtime(&file), None);
    }
}
