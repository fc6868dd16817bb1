//! An in-memory Kubernetes API server for tests: real `kubectl`, `helm` and kube-rs talk to
//! it. Objects live in memory with Kubernetes write semantics (resourceVersions, generation,
//! finalizers, garbage collection, managedFields through `kube-patch`), watches replay a
//! bounded event history, CRDs add resources at runtime, and simulated controllers act as
//! kube-controller-manager and the kubelet would: Deployments create a ReplicaSet per pod
//! template (`pod-template-hash`, revision annotations) whose Pods become Ready, statuses and
//! conditions follow, and a template change rolls over to a new ReplicaSet; StatefulSets and
//! DaemonSets report ready; Jobs complete (or fail); bare hook Pods run to `Succeeded`. Tests
//! steer single objects with annotations only this server reads (see [`rollout`]):
//! `kube-test-server/ready: never` on a workload or pod template keeps its pods unready,
//! `kube-test-server/outcome: Fail|Complete|Never` decides a Job or bare Pod, and
//! `kube-test-server/delay-ms` its timing. Faults (latency, failing requests, an unreachable
//! server) can be switched on and off while a test runs.
//!
//! ```no_run
//! use kube_test_server::{ServerConfig, TestServer};
//! let server = TestServer::start_blocking(ServerConfig::default()).unwrap();
//! let dir = std::env::temp_dir().join("kubeconfig");
//! server.write_kubeconfig(&dir).unwrap();
//! // ... run `kubectl --kubeconfig <dir> apply -f ...` ...
//! let cm = server.get("v1", "ConfigMap", "default", "x");
//! # let _ = cm;
//! ```

pub mod app;
pub mod config;
pub mod discovery;
pub mod error;
pub mod faults;
pub mod handlers;
pub mod kubeconfig;
pub mod object;
pub mod openapi;
pub mod patching;
pub use kube_protobuf as protobuf;
pub mod resources;
pub mod rollout;
pub mod scale;
pub mod selectors;
pub mod simulate;
pub mod store;
pub mod table;
pub mod tls;
pub mod watch;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::Extension;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch as signal};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

pub use app::RequestRecord;
pub use config::{Auth, JobOutcome, Readiness, ServerConfig, Simulation};
pub use error::{ApiError, StartError};
pub use faults::FaultRule;

use app::App;
use selectors::{FieldSelector, LabelSelector};
use store::{DeleteOptions, Store, WriteCtx};

/// A running server. Dropping it (or `shutdown`) stops it.
pub struct TestServer {
    app: Arc<App>,
    addr: SocketAddr,
    tls: bool,
    client: Option<(String, String)>,
    shutdown: signal::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl TestServer {
    /// Starts on the current tokio runtime.
    pub async fn start(config: ServerConfig) -> Result<TestServer, StartError> {
        let addr = format!("127.0.0.1:{}", config.port);
        let listener = TcpListener::bind(&addr)
            .await
            .map_err(|source| StartError::Bind {
                addr: addr.clone(),
                source,
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| StartError::Bind { addr, source })?;
        let material = if config.tls {
            Some(tls::generate(config.auth.client_certificate)?)
        } else {
            None
        };
        let (shutdown, shutdown_rx) = signal::channel(false);
        let app = Arc::new(App {
            store: Store::new(config.history_capacity),
            faults: faults::Faults::default(),
            auth: config.auth.clone(),
            anonymous: config.auth.anonymous.unwrap_or(!config.tls),
            simulation: Mutex::new(config.simulation.clone()),
            simulation_changed: Notify::new(),
            requests: Mutex::new(Vec::new()),
            address: addr.to_string(),
            ca_pem: material
                .as_ref()
                .map(|m| m.ca_pem.clone())
                .unwrap_or_default(),
            bookmark_interval: config.bookmark_interval,
            shutdown: shutdown_rx.clone(),
        });
        if let Some(rt) =
            app.store
                .resolve("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        {
            let ctx = WriteCtx {
                manager: "kube-test-server".into(),
                dry_run: false,
            };
            for crd in &config.crds {
                app.store
                    .create(&rt, "", crd.clone(), &ctx)
                    .map_err(|e| StartError::Crd(e.message))?;
            }
        }
        let router = Router::new()
            .fallback(handlers::entry)
            .with_state(app.clone());
        let acceptor = material
            .as_ref()
            .map(|m| TlsAcceptor::from(m.server_config.clone()));
        let client = material.and_then(|m| m.client);
        let tasks = vec![
            tokio::spawn(accept_loop(
                listener,
                app.clone(),
                router,
                acceptor,
                shutdown_rx,
            )),
            tokio::spawn(simulate::run(app.clone())),
        ];
        Ok(TestServer {
            app,
            addr,
            tls: config.tls,
            client,
            shutdown,
            tasks,
            runtime: None,
        })
    }

    /// Starts on a runtime of its own, for synchronous tests (that block on `kubectl` etc.).
    pub fn start_blocking(config: ServerConfig) -> Result<TestServer, StartError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("kube-test-server")
            .build()
            .map_err(StartError::Runtime)?;
        let mut server = runtime.block_on(TestServer::start(config))?;
        server.runtime = Some(runtime);
        Ok(server)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self) -> String {
        format!(
            "{}://{}",
            if self.tls { "https" } else { "http" },
            self.addr
        )
    }

    /// The CA certificate (PEM) clients must trust (TLS only).
    pub fn ca_pem(&self) -> Option<&str> {
        self.tls.then_some(self.app.ca_pem.as_str())
    }

    /// The bearer token the server requires, if any.
    pub fn token(&self) -> Option<&str> {
        self.app.auth.token.as_deref()
    }

    /// A kubeconfig (YAML) for this server: its URL, CA data and credentials.
    pub fn kubeconfig(&self) -> String {
        let url = self.url();
        kubeconfig::render(&kubeconfig::KubeconfigParts {
            server: &url,
            ca_pem: self.ca_pem(),
            token: self.app.auth.token.as_deref(),
            basic: self
                .app
                .auth
                .basic
                .as_ref()
                .map(|(u, p)| (u.as_str(), p.as_str())),
            client: self.client.as_ref().map(|(c, k)| (c.as_str(), k.as_str())),
        })
    }

    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig())
    }

    /// Reads an object straight from the store (`kind` may be a kind, plural or short name).
    pub fn get(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let rt = self.app.store.lookup(api_version, kind)?;
        self.app.store.get(&rt, namespace, name).ok()
    }

    /// Lists objects (all namespaces when `namespace` is None).
    pub fn list(&self, api_version: &str, kind: &str, namespace: Option<&str>) -> Vec<Value> {
        self.list_selected(api_version, kind, namespace, "")
    }

    /// Lists objects matching a label selector (`app=x,tier in (a,b)`); invalid ones match nothing.
    pub fn list_selected(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        labels: &str,
    ) -> Vec<Value> {
        let Some(rt) = self.app.store.lookup(api_version, kind) else {
            return Vec::new();
        };
        let Ok(selector) = LabelSelector::parse(labels) else {
            return Vec::new();
        };
        self.app
            .store
            .list(&rt, namespace, &selector, &FieldSelector::default())
            .0
    }

    /// Creates an object directly (test setup); `apiVersion`/`kind` pick the resource.
    pub fn create(&self, object: Value) -> Result<Value, ApiError> {
        let api_version = object::str_at(&object, "/apiVersion").to_string();
        let kind = object::str_at(&object, "/kind").to_string();
        let rt = self.app.store.lookup(&api_version, &kind).ok_or_else(|| {
            ApiError::bad_request(format!("no resource for {api_version} {kind}"))
        })?;
        let ns = match object::namespace(&object) {
            "" if rt.namespaced => "default".to_string(),
            ns => ns.to_string(),
        };
        let ctx = WriteCtx {
            manager: "kube-test-server".into(),
            dry_run: false,
        };
        self.app.store.create(&rt, &ns, object, &ctx)
    }

    /// Deletes an object directly (finalizers and garbage collection apply).
    pub fn delete(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Value, ApiError> {
        let rt = self.app.store.lookup(api_version, kind).ok_or_else(|| {
            ApiError::bad_request(format!("no resource for {api_version} {kind}"))
        })?;
        self.app
            .store
            .delete(&rt, namespace, name, &DeleteOptions::default())
            .map(|o| o.object)
    }

    /// The newest resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.app.store.current_rv()
    }

    /// Forgets the event history: watches resuming from an older resourceVersion get 410.
    pub fn compact_history(&self) {
        self.app.store.compact();
    }

    pub fn simulation(&self) -> Simulation {
        self.app.simulation()
    }

    pub fn set_simulation(&self, simulation: Simulation) {
        self.app.set_simulation(|s| *s = simulation);
    }

    /// When Deployments, StatefulSets, DaemonSets and ReplicaSets become ready.
    pub fn set_readiness(&self, readiness: Readiness) {
        self.app.set_simulation(|s| s.workloads = readiness);
    }

    /// The phase pods reach (`Running`, `Pending`, `Succeeded`, `Failed`).
    pub fn set_pod_phase(&self, phase: &str) {
        self.app.set_simulation(|s| s.pod_phase = phase.to_string());
    }

    pub fn set_job_outcome(&self, outcome: JobOutcome) {
        self.app.set_simulation(|s| s.jobs = outcome);
    }

    /// Delays every request by `latency` (zero to stop).
    pub fn set_latency(&self, latency: Duration) {
        self.app.faults.set_latency(latency);
    }

    /// Fails matching requests (see `FaultRule`).
    pub fn fail_requests(&self, rule: FaultRule) {
        self.app.faults.add(rule);
    }

    /// Removes all failure rules and the latency.
    pub fn clear_faults(&self) {
        self.app.faults.clear();
    }

    /// Unreachable: open connections are closed and new ones dropped right after accept.
    pub fn set_unreachable(&self, unreachable: bool) {
        self.app.faults.set_unreachable(unreachable);
    }

    /// Requests received so far.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.app
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn clear_requests(&self) {
        self.app
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Stops serving (also done on drop).
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
        for task in &self.tasks {
            task.abort();
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    app: Arc<App>,
    router: Router,
    acceptor: Option<TlsAcceptor>,
    mut shutdown: signal::Receiver<bool>,
) {
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            _ = shutdown.changed() => return,
        };
        if app.faults.is_unreachable() {
            drop(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let acceptor = acceptor.clone();
        let unreachable = app.faults.unreachable_signal();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            match acceptor {
                Some(acceptor) => {
                    let Ok(tls_stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let has_cert = tls_stream
                        .get_ref()
                        .1
                        .peer_certificates()
                        .is_some_and(|c| !c.is_empty());
                    let router = if has_cert {
                        router.layer(Extension(handlers::ClientCertificate))
                    } else {
                        router
                    };
                    serve_connection(TokioIo::new(tls_stream), router, unreachable, shutdown).await;
                }
                None => serve_connection(TokioIo::new(stream), router, unreachable, shutdown).await,
            }
        });
    }
}

async fn serve_connection<I>(
    io: I,
    router: Router,
    mut unreachable: signal::Receiver<bool>,
    mut shutdown: signal::Receiver<bool>,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let builder = auto::Builder::new(TokioExecutor::new());
    let connection = builder.serve_connection_with_upgrades(io, TowerToHyperService::new(router));
    tokio::select! {
        _ = connection => {}
        _ = unreachable.wait_for(|u| *u) => {}
        _ = shutdown.changed() => {}
    }
}
