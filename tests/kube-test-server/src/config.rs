//! Server configuration: listener, authentication and the simulated controllers.

use std::time::Duration;

use serde_json::Value;

/// When workloads report ready: StatefulSets and DaemonSets directly, Deployments and
/// ReplicaSets through their Pods becoming Ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Ready this long after each spec change (Pods: after creation; zero: right away).
    After(Duration),
    /// Never ready: status shows the rollout in progress. Pods already Ready stay Ready (as old
    /// pods keep serving on a cluster while a new template's pods fail).
    Never,
}

/// What Jobs do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobOutcome {
    Complete,
    Fail,
    /// Stay active.
    Never,
}

/// The simulated controllers (all can be changed at runtime through `TestServer`).
#[derive(Debug, Clone, PartialEq)]
pub struct Simulation {
    pub workloads: Readiness,
    /// The phase pods reach (`Running` with a Ready condition by default; `Pending` leaves
    /// them alone; `Succeeded`/`Failed` terminate).
    pub pod_phase: String,
    pub pod_delay: Duration,
    pub jobs: JobOutcome,
    pub job_delay: Duration,
    /// Delay before a terminating namespace is emptied and removed.
    pub namespace_delay: Duration,
}

impl Default for Simulation {
    fn default() -> Self {
        Simulation {
            workloads: Readiness::After(Duration::from_millis(100)),
            pod_phase: "Running".into(),
            pod_delay: Duration::from_millis(50),
            jobs: JobOutcome::Complete,
            job_delay: Duration::from_millis(100),
            namespace_delay: Duration::from_millis(50),
        }
    }
}

/// How clients authenticate. With nothing configured (or `anonymous`), every request is let in.
#[derive(Debug, Clone, PartialEq)]
pub struct Auth {
    /// The bearer token the kubeconfig carries and requests must present.
    pub token: Option<String>,
    /// Also accepted: HTTP basic auth with this user and password.
    pub basic: Option<(String, String)>,
    /// TLS only: issue a client certificate (in the kubeconfig) and accept it.
    pub client_certificate: bool,
    /// Let requests without credentials in. None (the default): only over plain HTTP, because
    /// kubectl and helm (client-go) send credentials only over TLS.
    pub anonymous: Option<bool>,
}

impl Default for Auth {
    fn default() -> Self {
        Auth {
            token: Some("kube-test-server-token".into()),
            basic: None,
            client_certificate: false,
            anonymous: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub tls: bool,
    /// 0: any free port.
    pub port: u16,
    pub auth: Auth,
    pub simulation: Simulation,
    /// Events kept for watches that resume from a resourceVersion (older ones get 410 Gone).
    pub history_capacity: usize,
    /// How often watches that allow bookmarks get one.
    pub bookmark_interval: Duration,
    /// CRDs (as JSON objects) present from the start.
    pub crds: Vec<Value>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            tls: false,
            port: 0,
            auth: Auth::default(),
            simulation: Simulation::default(),
            history_capacity: 10_000,
            bookmark_interval: Duration::from_secs(1),
            crds: Vec::new(),
        }
    }
}

impl ServerConfig {
    pub fn tls(mut self, on: bool) -> Self {
        self.tls = on;
        self
    }

    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    pub fn token(mut self, token: Option<&str>) -> Self {
        self.auth.token = token.map(str::to_string);
        self
    }

    pub fn workloads(mut self, readiness: Readiness) -> Self {
        self.simulation.workloads = readiness;
        self
    }

    pub fn crd(mut self, crd: Value) -> Self {
        self.crds.push(crd);
        self
    }
}
