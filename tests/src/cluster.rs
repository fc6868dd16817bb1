//! A target cluster for end-to-end tests: the `kube-test-server` binary (an in-memory
//! Kubernetes API server from this workspace) on a free port, with its kubeconfig, and reads of
//! its objects over its HTTP API.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use landscaper_appliance::commands::client::Client;
use serde_json::{Value, json};

/// The bearer token in the test server's kubeconfig.
pub const TOKEN: &str = "kube-test-server-token";

/// `target/<profile>/kube-test-server` (built by `cargo build --workspace --bins`).
pub fn server_binary() -> PathBuf {
    crate::workspace_binary("kube-test-server", "KUBE_TEST_SERVER_BIN")
}

/// A running test cluster; stopped on drop.
pub struct Cluster {
    child: Child,
    pub url: String,
    pub kubeconfig_path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts the server (plain HTTP; workloads ready after `ready_after`, e.g. `"100ms"` or
    /// `"never"`) and waits until it answers.
    pub fn start(ready_after: &str) -> Cluster {
        Cluster::start_on_port(ready_after, 0)
    }

    /// As `start`, on a given loopback port (0: any free port), e.g. one a Target already
    /// names while no server listened there.
    pub fn start_on_port(ready_after: &str, port: u16) -> Cluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig_path = dir.path().join("kubeconfig");
        let mut child = Command::new(server_binary())
            .arg("--kubeconfig-out")
            .arg(&kubeconfig_path)
            .args(["--ready-after", ready_after])
            .args(["--port", &port.to_string()])
            // The harness reads without credentials; the deployer still sends the token from
            // the kubeconfig.
            .arg("--anonymous")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kube-test-server");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("kube-test-server prints its URL");
        let url = line.trim().to_string();
        assert!(url.starts_with("http"), "unexpected first line {url:?}");
        let cluster = Cluster {
            child,
            url,
            kubeconfig_path,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while cluster.get("/version").is_none() {
            assert!(Instant::now() < deadline, "kube-test-server not answering");
            std::thread::sleep(Duration::from_millis(20));
        }
        cluster
    }

    pub fn kubeconfig(&self) -> String {
        std::fs::read_to_string(&self.kubeconfig_path).expect("kubeconfig written")
    }

    /// The manifest of a kubernetes-cluster Target `cluster` in namespace `e2e` holding this
    /// cluster's kubeconfig, as the end-to-end tests' installations import it.
    pub fn target_manifest(&self) -> String {
        let indented: String = self
            .kubeconfig()
            .lines()
            .map(|l| format!("      {l}\n"))
            .collect();
        format!(
            "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Target\nmetadata:\n  name: cluster\n  namespace: e2e\nspec:\n  type: landscaper.gardener.cloud/kubernetes-cluster\n  config:\n    kubeconfig: |\n{indented}"
        )
    }

    fn client(&self) -> Client {
        Client::new(&self.url)
            .expect("client for the test cluster")
            .with_token(TOKEN)
    }

    /// GET of an API path; `None` for 404 or any error.
    pub fn get(&self, path: &str) -> Option<Value> {
        self.client().get_json(path).ok()
    }

    /// A namespaced object of the core group (`configmaps`, `secrets`, ...).
    pub fn core(&self, namespace: &str, plural: &str, name: &str) -> Option<Value> {
        self.get(&format!("/api/v1/namespaces/{namespace}/{plural}/{name}"))
    }

    /// A namespaced object of a named group (`apps/v1`, `deployments`).
    pub fn grouped(
        &self,
        group_version: &str,
        namespace: &str,
        plural: &str,
        name: &str,
    ) -> Option<Value> {
        self.get(&format!(
            "/apis/{group_version}/namespaces/{namespace}/{plural}/{name}"
        ))
    }

    /// POSTs an object to a collection path (e.g. `/api/v1/namespaces/x/configmaps`); the
    /// object as created.
    pub fn create(&self, collection: &str, object: &Value) -> Value {
        self.client()
            .post_json(collection, object)
            .unwrap_or_else(|e| panic!("creating at {collection}: {e}"))
    }

    /// Creates a namespace (an existing one is fine).
    pub fn create_namespace(&self, name: &str) {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        let _ = self.client().post_json("/api/v1/namespaces", &body);
        assert!(
            self.get(&format!("/api/v1/namespaces/{name}")).is_some(),
            "namespace {name} not created"
        );
    }

    /// Renders a `*.yaml.tpl` of the acceptance scenarios as their README says
    /// (`${kubeconfig}` replaced by this cluster's kubeconfig, indented by six spaces).
    pub fn render_template(&self, template: &str) -> String {
        let indented: String = self
            .kubeconfig()
            .lines()
            .map(|l| format!("      {l}\n"))
            .collect();
        template.replace("${kubeconfig}\n", &indented)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
