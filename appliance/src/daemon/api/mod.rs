//! Kubernetes-style HTTP API.
//!
//! The appliance answers like a Kubernetes API server so that `kubectl` and other Kubernetes
//! clients can read its objects: discovery (aggregated and legacy), `get`, `list` and `watch` of
//! every stored kind, server-side table printing, and errors as `Status` objects. Writes need the
//! bearer token ([`token`]) and follow who owns the object ([`write`]): create, update, patch
//! (JSON, merge, strategic for core kinds, server-side apply) and delete of objects created
//! through the API; labels and annotations only of objects a manifest file or a controller owns.
//! Secret values, Target kubeconfigs and the data of DataObjects copied from Secrets are
//! redacted unless the caller is authorised (the token, or the Unix socket; see [`objects`] and
//! [`listen`]). Over TCP the `Host` header must name this server ([`listen::check_host`]), and
//! [`serve`] disconnects clients that do not finish their headers in time.
//!
//! Modules, one concern each:
//! - [`discovery`]: `/api`, `/apis`, `/apis/{group}[/{version}]`, `/version`;
//! - [`resources`]: the served resources (kind, printer columns, URL parsing);
//! - [`objects`]: `get` and `list` handlers, secret redaction;
//! - [`namespaces`]: the namespaces derived from the stored objects;
//! - [`events`]: core/v1 Events derived from the history of phase transitions and errors;
//! - [`listen`]: the Unix socket and TLS listeners, the token guard off loopback, the `Host`
//!   check;
//! - [`backup`]: the consistent store snapshot behind `landscaper-appliance backup`;
//! - [`watch`]: the watch event stream;
//! - [`table`]: `meta.k8s.io/v1` `Table` conversion;
//! - [`openapi`]: `/openapi/v2` and `/openapi/v3` documents generated from the typed model;
//! - [`negotiate`]: query parameters (selectors, watch options) and `Accept` negotiation;
//! - [`status`]: errors as Kubernetes `Status` objects;
//! - [`token`]: the bearer token that authorises writes and secret reads, and its file;
//! - [`write`]: `POST`, `PUT`, `PATCH` and `DELETE` handlers, the ownership rule;
//! - [`health`]: `/healthz`, `/livez`, `/readyz`.

pub mod auth;
pub mod backup;
pub mod discovery;
pub mod events;
pub mod health;
pub mod kubeconfig;
pub mod listen;
pub mod namespaces;
pub mod negotiate;
pub mod objects;
pub mod openapi;
pub mod resources;
pub mod status;
pub mod table;
pub mod token;
pub mod watch;
pub mod write;

use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::Router;
use axum::routing::{any, get, post};
use landscaper_store::Store;
use tokio_util::sync::CancellationToken;

pub use status::ApiError;
pub use token::ApiToken;

/// Whether the daemon is ready to serve consistent data: the flag behind `/readyz`. Starts
/// "not ready" with a reason; the daemon calls [`Readiness::set_ready`] once the initial scan of
/// the manifests folder is done. Cheap to clone; all clones share the flag.
#[derive(Clone, Debug)]
pub struct Readiness {
    /// `None` when ready, else why not.
    not_ready: Arc<RwLock<Option<String>>>,
}

impl Readiness {
    /// A flag that is not ready yet, for `reason` (shown by `/readyz`).
    pub fn not_ready(reason: impl Into<String>) -> Self {
        Readiness {
            not_ready: Arc::new(RwLock::new(Some(reason.into()))),
        }
    }

    /// A flag that is ready from the start.
    pub fn ready() -> Self {
        Readiness {
            not_ready: Arc::new(RwLock::new(None)),
        }
    }

    pub fn set_ready(&self) {
        *self.not_ready.write().unwrap_or_else(|e| e.into_inner()) = None;
    }

    pub fn set_not_ready(&self, reason: impl Into<String>) {
        *self.not_ready.write().unwrap_or_else(|e| e.into_inner()) = Some(reason.into());
    }

    pub fn is_ready(&self) -> bool {
        self.not_ready_reason().is_none()
    }

    /// Why the daemon is not ready, or `None` when it is.
    pub fn not_ready_reason(&self) -> Option<String> {
        self.not_ready
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Default for Readiness {
    fn default() -> Self {
        Readiness::not_ready("the initial scan of the manifests folder has not finished")
    }
}

/// Tuning of the API.
#[derive(Clone, Debug)]
pub struct ApiOptions {
    /// How often a watch that asked for `allowWatchBookmarks` gets a BOOKMARK event.
    pub bookmark_interval: Duration,
    /// Upper bound for a watch's `timeoutSeconds`; watches without one run until the client
    /// or the server goes away.
    pub max_watch_timeout: Duration,
}

impl Default for ApiOptions {
    fn default() -> Self {
        ApiOptions {
            bookmark_interval: Duration::from_secs(60),
            max_watch_timeout: Duration::from_secs(3600),
        }
    }
}

/// What the handlers share: the store, the readiness flag, the shutdown signal, the write
/// token and options.
#[derive(Clone, Debug)]
pub struct ApiState {
    pub store: Store,
    pub readiness: Readiness,
    /// Cancelled on shutdown: open watch streams end so that graceful shutdown can finish.
    pub shutdown: CancellationToken,
    pub options: ApiOptions,
    /// The bearer token writes need; without one, every write is refused (401).
    pub token: Option<ApiToken>,
    /// The status page's cached index and login sessions.
    pub ui: std::sync::Arc<crate::daemon::ui::UiState>,
}

impl ApiState {
    /// State with a fresh shutdown token, default options and no write token.
    pub fn new(store: Store, readiness: Readiness) -> Self {
        ApiState {
            store,
            readiness,
            shutdown: CancellationToken::new(),
            options: ApiOptions::default(),
            token: None,
            ui: Default::default(),
        }
    }

    /// Accepts writes that carry `token` as their bearer token.
    pub fn with_token(mut self, token: ApiToken) -> Self {
        self.token = Some(token);
        self
    }

    /// Uses `token` as the shutdown signal (pass the one that also stops [`serve`]).
    pub fn with_shutdown(mut self, token: CancellationToken) -> Self {
        self.shutdown = token;
        self
    }

    pub fn with_options(mut self, options: ApiOptions) -> Self {
        self.options = options;
        self
    }
}

/// The HTTP API as an axum router.
pub fn router(state: ApiState) -> Router {
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/livez", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route(backup::BACKUP_PATH, get(backup::backup))
        .route("/version", get(discovery::version))
        .route("/api", get(discovery::core_versions))
        .route("/api/v1", get(discovery::core_resources))
        .route("/api/v1/{*rest}", any(objects::core_resource))
        .route(auth::SELF_SUBJECT_REVIEWS, post(auth::self_subject_review))
        .route(
            auth::SELF_SUBJECT_ACCESS_REVIEWS,
            post(auth::self_subject_access_review),
        )
        .route(
            auth::SELF_SUBJECT_RULES_REVIEWS,
            post(auth::self_subject_rules_review),
        )
        .route("/openapi/v2", get(openapi::v2))
        .route("/openapi/v3", get(openapi::v3_index))
        .route("/openapi/v3/{*path}", get(openapi::v3_document_handler))
        .route("/apis", get(discovery::groups))
        .route("/apis/{group}", get(discovery::group))
        .route(
            "/apis/{group}/{version}",
            get(discovery::group_version_resources),
        )
        .route(
            "/apis/{group}/{version}/{*rest}",
            any(objects::group_resource),
        )
        .fallback(status::fallback)
        // A 5xx answer is logged at WARN (a `/readyz` 503 before the first scan is normal; a
        // store that cannot write says so in its own ERROR line).
        .layer(
            tower_http::trace::TraceLayer::new_for_http()
                .on_failure(tower_http::trace::DefaultOnFailure::new().level(tracing::Level::WARN)),
        )
        .with_state(state)
}

/// How long [`serve`] waits for open connections after the shutdown signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How long a client may take to send a request's headers (from the start of a connection or
/// the end of the previous request on it): slow clients that never finish them are
/// disconnected, so that they cannot hold connections open forever. Idle keep-alive
/// connections are closed after this time too (clients open a new one).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `router` on `listener` (HTTP/1.1, with [`HEADER_READ_TIMEOUT`]) until `shutdown`
/// completes, then stops accepting connections and waits up to [`SHUTDOWN_GRACE`] for open
/// requests to finish. Watch streams end by themselves when the [`ApiState::shutdown`] token
/// is cancelled, so pass a future derived from that token (e.g.
/// `token.clone().cancelled_owned()`).
pub async fn serve<L>(
    listener: L,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    serve_with(listener, router, shutdown, HEADER_READ_TIMEOUT).await
}

/// [`serve`] with another header timeout (tests).
pub async fn serve_with<L>(
    mut listener: L,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    header_read_timeout: Duration,
) -> std::io::Result<()>
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;
    use tower::ServiceExt as _;

    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    // Connections hold a receiver; they are all gone once every sender clone is dropped.
    let (closing_tx, closing_rx) = tokio::sync::watch::channel(false);
    let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<()>(1);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (io, _peer) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(router.clone().map_request(
            |request: axum::http::Request<hyper::body::Incoming>| {
                request.map(axum::body::Body::new)
            },
        ));
        let connection = builder.serve_connection(TokioIo::new(io), service);
        let mut closing = closing_rx.clone();
        let done = done_tx.clone();
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "HTTP connection ended with an error");
                    }
                    return drop(done);
                }
                _ = closing.wait_for(|closing| *closing) => {}
            }
            connection.as_mut().graceful_shutdown();
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "HTTP connection ended with an error");
            }
            drop(done);
        });
    }
    drop(listener);
    let _ = closing_tx.send(true);
    drop(done_tx);
    // `recv` returns `None` once every connection task dropped its sender.
    if tokio::time::timeout(SHUTDOWN_GRACE, done_rx.recv())
        .await
        .is_err()
    {
        tracing::warn!(
            "HTTP connections still open {SHUTDOWN_GRACE:?} after shutdown; closing them"
        );
    }
    Ok(())
}
