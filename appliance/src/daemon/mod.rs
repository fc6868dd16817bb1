//! The daemon: opens the store, serves the API, ingests the manifests folder, and shuts down
//! in order on SIGTERM/SIGINT; SIGHUP reloads what the configuration can change at runtime.
//! Its parts: folder ingest, the controllers (work queues, runtime, phase machines), the HTTP
//! API, the status page, metrics, the history of phase transitions and systemd integration.

pub mod api;
pub mod controllers;
pub(crate) mod history;
pub mod ingest;
pub(crate) mod metrics;
pub(crate) mod systemd;
pub mod ui;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::Context;
use landscaper_store::{Store, StoreOptions};
use tokio_util::sync::CancellationToken;

use crate::cli::DemoArgs;
use crate::config::{Config, ConfigFile, Overrides};

/// The demo folder, compiled into the binary so `demo` works from any checkout or package.
const DEMO_FILES: [(&str, &str); 3] = [
    (
        "00-edge-cluster.yaml",
        include_str!("../../demo/00-edge-cluster.yaml"),
    ),
    (
        "10-settings.yaml",
        include_str!("../../demo/10-settings.yaml"),
    ),
    (
        "20-installation.yaml",
        include_str!("../../demo/20-installation.yaml"),
    ),
];

/// Writes the demo manifests (unless the folder exists already: a user may be editing it) and
/// returns the config that serves them.
pub fn prepare_demo(args: &DemoArgs) -> anyhow::Result<Config> {
    let manifests = args.dir.join("manifests");
    if !manifests.exists() {
        std::fs::create_dir_all(&manifests)
            .with_context(|| format!("creating {}", manifests.display()))?;
        for (name, content) in DEMO_FILES {
            std::fs::write(manifests.join(name), content)
                .with_context(|| format!("writing demo file {name}"))?;
        }
    }
    let config = Config::resolve(
        ConfigFile::default(),
        Overrides {
            manifests_dir: Some(manifests),
            data_dir: Some(args.dir.join("data")),
            listen: Some(args.listen.clone()),
            log_format: None,
            kubeconfig_listen: None,
        },
    )?;
    Ok(config)
}

/// Runs the daemon on a fresh multi-threaded runtime until a termination signal. SIGHUP
/// re-reads the configuration from `reload` (see [`reload_on_sighup`]); without one (the
/// demo) it only logs that there is nothing to reload.
pub fn run_blocking(config: Config, reload: Option<ConfigSource>) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("landscaper-appliance")
        .build()
        .context("starting the async runtime")?
        .block_on(async move {
            // Registered before anything else runs: SIGHUP's default action ends the process.
            let hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
                .context("listening for SIGHUP")?;
            let reloader = tokio::spawn(reload_on_sighup(hangup, reload, config.clone()));
            let result = run(config, shutdown_signal()).await;
            reloader.abort();
            result
        })
}

// --- SIGHUP: reloading the configuration ------------------------------------------------------

/// Where the running configuration came from, so that SIGHUP can read it again: the config
/// file (`None`: the default file when present) and the command-line overrides, which keep
/// winning over the file.
#[derive(Debug, Clone, Default)]
pub struct ConfigSource {
    pub file: Option<std::path::PathBuf>,
    pub overrides: Overrides,
}

/// What a reloaded configuration changes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReloadPlan {
    /// The new `logLevel`, when it changed (applied at runtime).
    pub log_level: Option<String>,
    /// Changed fields the running daemon cannot apply: they take effect at the next start.
    pub restart_needed: Vec<&'static str>,
}

/// Compares the running configuration with a newly read one.
pub fn reload_plan(running: &Config, new: &Config) -> ReloadPlan {
    let mut restart_needed = Vec::new();
    let mut differs = |field: &'static str, changed: bool| {
        if changed {
            restart_needed.push(field);
        }
    };
    differs("listen", running.listen != new.listen);
    differs("dataDir", running.data_dir != new.data_dir);
    differs("manifestsDir", running.manifests_dir != new.manifests_dir);
    differs("logFormat", running.log_format != new.log_format);
    differs(
        "resyncInterval",
        running.resync_interval != new.resync_interval,
    );
    differs(
        "deployItemTimeouts.pickup",
        running.pickup_timeout != new.pickup_timeout,
    );
    differs("workers", running.workers != new.workers);
    differs("tls", running.tls != new.tls);
    differs("allowedHosts", running.allowed_hosts != new.allowed_hosts);
    differs(
        "maxManifestFileSize",
        running.max_manifest_file_size != new.max_manifest_file_size,
    );
    ReloadPlan {
        log_level: (running.log_level != new.log_level).then(|| new.log_level.clone()),
        restart_needed,
    }
}

/// Re-reads the configuration on every SIGHUP and applies what can change at runtime: the
/// log level (unless `RUST_LOG` overrides it, as at start). Changed fields that need a restart
/// are logged by name. An invalid file changes nothing. systemd is told about the reload
/// (`RELOADING=1`, then `READY=1`).
pub async fn reload_on_sighup(
    mut hangup: tokio::signal::unix::Signal,
    source: Option<ConfigSource>,
    mut running: Config,
) {
    while hangup.recv().await.is_some() {
        crate::daemon::systemd::reloading(false);
        match &source {
            None => tracing::info!("SIGHUP received: nothing to reload (no config file)"),
            Some(source) => match Config::load(source.file.as_deref(), source.overrides.clone()) {
                Err(e) => tracing::error!(
                    error = %e,
                    "SIGHUP received: the configuration is invalid; keeping the running one"
                ),
                Ok(new) => {
                    let plan = reload_plan(&running, &new);
                    let mut applied = Vec::new();
                    if let Some(level) = &plan.log_level {
                        match crate::logging::reload_level(level) {
                            Ok(crate::logging::LevelChange::Applied) => {
                                running.log_level = level.clone();
                                applied.push("logLevel");
                            }
                            Ok(crate::logging::LevelChange::OverriddenByEnvironment) => {
                                tracing::warn!(
                                    "logLevel changed, but RUST_LOG is set and overrides it"
                                )
                            }
                            Err(e) => tracing::error!(error = %e, "logLevel not applied"),
                        }
                    }
                    tracing::info!(
                        applied = %applied.join(", "),
                        "SIGHUP received: configuration reloaded"
                    );
                    if !plan.restart_needed.is_empty() {
                        tracing::warn!(
                            fields = %plan.restart_needed.join(", "),
                            "changed in the configuration but only applied at the next start: restart the daemon"
                        );
                    }
                }
            },
        }
        crate::daemon::systemd::reloading(true);
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
                _ = int.recv() => tracing::info!("SIGINT received, shutting down"),
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// How often the kubeconfig listener's certificates are checked for renewal.
const CERTIFICATE_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(12 * 3600);

/// Starts the kubeconfig's TLS listener on `address` and writes `<data>/kubeconfig.yaml`
/// (issue 20). Optional: when the certificates cannot be made or the port is taken, the daemon
/// runs without it and says why.
async fn start_kubeconfig_listener(
    address: std::net::SocketAddr,
    data_dir: &Path,
    token: &crate::daemon::api::ApiToken,
    router: axum::Router,
    cancel: CancellationToken,
) -> Option<tokio::task::JoinHandle<std::io::Result<()>>> {
    use crate::daemon::api::kubeconfig::{self, RenewableCert, Renewal, TlsFiles};
    let files = TlsFiles::new(data_dir);
    let (material, renewal) = match files.ensure(std::time::SystemTime::now()) {
        Ok(made) => made,
        Err(error) => {
            tracing::warn!(%error, "no kubeconfig listener: its certificates could not be prepared");
            return None;
        }
    };
    let listener = match tokio::net::TcpListener::bind(address).await {
        Ok(listener) => listener,
        Err(error) => {
            tracing::warn!(error = %listen_error(address, error), "no kubeconfig listener (kubeconfigListen in the config file, off to disable)");
            return None;
        }
    };
    let bound = listener.local_addr().ok()?;
    let server_url = format!("https://{bound}");
    let path =
        match kubeconfig::write_kubeconfig(data_dir, &server_url, &material.ca_pem, token.expose())
        {
            Ok(path) => path,
            Err(error) => {
                tracing::warn!(%error, "no kubeconfig listener: writing the kubeconfig failed");
                return None;
            }
        };
    let cert = RenewableCert::new(material.certified);
    let tls = crate::daemon::api::listen::TlsListener::new(
        listener,
        kubeconfig::server_config(cert.clone()),
    )
    .ok()?;
    let allowed = crate::daemon::api::listen::AllowedHosts::new(bound, Vec::new());
    let router = router.layer(axum::middleware::from_fn(move |request, next| {
        crate::daemon::api::listen::check_host(allowed.clone(), request, next)
    }));
    tracing::info!(
        address = %bound,
        kubeconfig = %path.display(),
        renewed = renewal != Renewal::Kept,
        "kubeconfig listener ready: kubectl --kubeconfig {}",
        path.display()
    );
    // Renewal while running: the listener serves the new certificate from its next handshake;
    // a new CA also rewrites the kubeconfig.
    let renew_cancel = cancel.clone();
    let (data_dir, token) = (data_dir.to_path_buf(), token.clone());
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = renew_cancel.cancelled() => return,
                _ = tokio::time::sleep(CERTIFICATE_CHECK_INTERVAL) => {}
            }
            match files.ensure(std::time::SystemTime::now()) {
                Ok((_, Renewal::Kept)) => {}
                Ok((material, renewal)) => {
                    cert.replace(material.certified);
                    if renewal == Renewal::CaAndServing
                        && let Err(error) = kubeconfig::write_kubeconfig(
                            &data_dir,
                            &server_url,
                            &material.ca_pem,
                            token.expose(),
                        )
                    {
                        tracing::error!(%error, "rewriting the kubeconfig for the new CA failed");
                    }
                    tracing::info!(
                        new_ca = renewal == Renewal::CaAndServing,
                        "kubeconfig listener certificate renewed"
                    );
                }
                Err(error) => {
                    tracing::error!(%error, "renewing the kubeconfig listener's certificate failed; retrying in 12 h")
                }
            }
        }
    });
    Some(tokio::spawn(async move {
        crate::daemon::api::serve(tls, router, cancel.cancelled_owned()).await
    }))
}

/// The bind error with what to do about it: a port in use is the common case (a second daemon,
/// `demo` next to the service, another server on 8080).
fn listen_error(address: std::net::SocketAddr, error: std::io::Error) -> anyhow::Error {
    let hint = match error.kind() {
        std::io::ErrorKind::AddrInUse => format!(
            "; another process listens there (see `ss -ltnp 'sport = :{port}'`): stop it or choose another address with --listen or `listen:` in the config file",
            port = address.port()
        ),
        std::io::ErrorKind::PermissionDenied if address.port() < 1024 => {
            "; ports below 1024 need root or CAP_NET_BIND_SERVICE".to_string()
        }
        _ => String::new(),
    };
    anyhow::anyhow!("listening on {address}: {error}{hint}")
}

fn ensure_dir(path: &Path, mode: Option<u32>) -> anyhow::Result<()> {
    if !path.exists() {
        std::fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))?;
        if let Some(mode) = mode {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
                .with_context(|| format!("setting permissions of {}", path.display()))?;
        }
    }
    Ok(())
}

/// Runs the daemon until `shutdown` completes.
pub async fn run(config: Config, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    ensure_dir(&config.data_dir, Some(0o700))?;
    if !config.manifests_dir.exists() {
        tracing::warn!(dir = %config.manifests_dir.display(), "manifests folder missing; creating it");
        ensure_dir(&config.manifests_dir, None)?;
    }
    let store_path = config.store_path();
    let store =
        tokio::task::spawn_blocking(move || Store::open(&store_path, StoreOptions::default()))
            .await
            .context("opening the store")?
            .with_context(|| format!("opening the store {}", config.store_path().display()))?;
    tracing::info!(path = %config.store_path().display(), revision = store.revision(), "store open");

    // After the store: its lock makes sure no other daemon writes the token file meanwhile.
    let token_path = config
        .data_dir
        .join(crate::daemon::api::token::TOKEN_FILE_NAME);
    let token = crate::daemon::api::ApiToken::ensure_file(&token_path)
        .with_context(|| format!("preparing the API token {}", token_path.display()))?;
    tracing::info!(file = %token_path.display(), "API writes need the bearer token in this file");

    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|error| listen_error(config.listen, error))?;
    let address = listener
        .local_addr()
        .context("reading the listen address")?;
    let readiness = crate::daemon::api::Readiness::default();
    let cancel = CancellationToken::new();

    let controller_config = crate::daemon::controllers::ControllerConfig {
        pickup_timeout: config.pickup_timeout,
        workers: crate::daemon::controllers::runtime::WorkerOptions {
            workers: config.workers,
            ..Default::default()
        },
        ..Default::default()
    };
    // The one place the component repositories are built (issue 18).
    // One content-addressed cache for helm charts and component versions.
    let cache = crate::components::open_cache(&config.data_dir);
    let (components, resolver) =
        crate::components::build(cache.clone(), &config.manifests_dir, false);
    if let Some(path) = &config.registry_ca_file {
        let pem = std::fs::read(path)
            .with_context(|| format!("reading registryCAFile {}", path.display()))?;
        components.set_registry_ca(Some(pem));
    }
    // The one place the deployers are built.
    let deployers = std::sync::Arc::new(deployer_registry(
        &store,
        cache,
        &config.manifests_dir,
        Some(resolver.clone()),
    ));
    let controller_context =
        crate::daemon::controllers::ControllerContext::new(store.clone(), controller_config)
            .with_deployers(deployers)
            .with_manifests_dir(config.manifests_dir.clone())
            .with_components(resolver);
    let metrics =
        crate::daemon::metrics::Metrics::new(store.clone(), Some(controller_context.clone()));
    let metrics_task = tokio::spawn(metrics.clone().observe(store.clone(), cancel.clone()));
    let state = crate::daemon::api::ApiState::new(store.clone(), readiness.clone())
        .with_shutdown(cancel.clone())
        .with_token(token.clone());
    state.ui.set_manifests_dir(config.manifests_dir.clone());
    let router = crate::daemon::api::router(state.clone())
        .merge(crate::daemon::history::routes(store.clone()))
        .merge(crate::daemon::ui::routes(state))
        .merge(metrics.routes());
    // Off loopback every request needs the token (and config validation made sure of TLS).
    let tcp_router = if address.ip().is_loopback() {
        router.clone()
    } else {
        let guard_token = Some(token.clone());
        router
            .clone()
            .layer(axum::middleware::from_fn(move |request, next| {
                crate::daemon::api::listen::require_token(guard_token.clone(), request, next)
            }))
    };
    // The kubeconfig's TLS listener serves the loopback router (reads open, writes need the
    // token the kubeconfig carries), with its own Host check.
    let kubeconfig_server = match config.kubeconfig_listen {
        Some(kubeconfig_listen) => {
            start_kubeconfig_listener(
                kubeconfig_listen,
                &config.data_dir,
                &token,
                router.clone(),
                cancel.clone(),
            )
            .await
        }
        None => None,
    };
    // On TCP, the Host header must name this server (DNS rebinding); not on the Unix socket.
    let mut host_names = config.allowed_hosts.clone();
    if let Some(tls) = &config.tls {
        host_names.extend(crate::daemon::api::listen::cert_dns_names(&tls.cert_file)?);
    }
    let allowed_hosts = crate::daemon::api::listen::AllowedHosts::new(address, host_names);
    let tcp_router = tcp_router.layer(axum::middleware::from_fn(move |request, next| {
        crate::daemon::api::listen::check_host(allowed_hosts.clone(), request, next)
    }));
    let server_cancel = cancel.clone();
    let server = match &config.tls {
        Some(tls) => {
            let tls_config = crate::daemon::api::listen::tls_config(&tls.cert_file, &tls.key_file)?;
            let listener = crate::daemon::api::listen::TlsListener::new(listener, tls_config)
                .context("starting the TLS listener")?;
            tokio::spawn(async move {
                crate::daemon::api::serve(listener, tcp_router, server_cancel.cancelled_owned())
                    .await
            })
        }
        None => tokio::spawn(async move {
            crate::daemon::api::serve(listener, tcp_router, server_cancel.cancelled_owned()).await
        }),
    };
    let socket_path = config.socket_path();
    let socket = crate::daemon::api::listen::bind_unix_socket(&socket_path)?;
    let socket_cancel = cancel.clone();
    let socket_server = tokio::spawn(async move {
        crate::daemon::api::serve(
            socket,
            crate::daemon::api::listen::trusted(router),
            socket_cancel.cancelled_owned(),
        )
        .await
    });
    tracing::info!(%address, tls = config.tls.is_some(), socket = %socket_path.display(), "API listening");

    let ingestor = crate::daemon::ingest::Ingestor::with_archive_sink(
        store.clone(),
        crate::daemon::ingest::IngestConfig {
            manifests_dir: config.manifests_dir.clone(),
            resync_interval: config.resync_interval,
            max_file_size: config.max_manifest_file_size,
            ..crate::daemon::ingest::IngestConfig::default()
        },
        crate::components::archive_sink(
            components,
            crate::daemon::ingest::archives::ArchiveRecorder::new(
                store.clone(),
                config.manifests_dir.clone(),
            ),
        ),
    );
    let controllers = tokio::spawn(crate::daemon::controllers::run(
        controller_context.clone(),
        cancel.clone(),
    ));

    let (scanned_tx, scanned_rx) = tokio::sync::oneshot::channel();
    let ingest_cancel = cancel.clone();
    let ingest = tokio::spawn(async move { ingestor.run(ingest_cancel, Some(scanned_tx)).await });

    tokio::pin!(shutdown);
    tokio::select! {
        report = scanned_rx => {
            if let Ok(report) = report {
                tracing::info!(
                    files = report.files,
                    applied = report.applied,
                    failed = report.failed,
                    skipped = report.skipped,
                    objects_created = report.objects_created,
                    objects_updated = report.objects_updated,
                    objects_deleted = report.objects_deleted,
                    rejected = report.errors.len(),
                    "initial scan of the manifests folder done"
                );
            }
            readiness.set_ready();
            tracing::info!(%address, "ready");
            crate::daemon::systemd::ready(&crate::daemon::systemd::current_status(&store).await);
            let supervisor = tokio::spawn(crate::daemon::systemd::supervise(
                store.clone(),
                Some(controller_context.clone()),
                cancel.clone(),
            ));
            shutdown.await;
            supervisor.abort();
        }
        _ = &mut shutdown => {}
    }

    crate::daemon::systemd::stopping();
    cancel.cancel();
    if let Err(e) = ingest.await {
        tracing::error!(error = %e, "ingest task failed");
    }
    metrics_task.abort();
    if let Err(e) = controllers.await {
        tracing::error!(error = %e, "controller task failed");
    }
    match socket_server.await {
        Ok(Err(e)) => tracing::error!(error = %e, "API socket server failed"),
        Err(e) => tracing::error!(error = %e, "API socket server task failed"),
        Ok(Ok(())) => {}
    }
    let _ = std::fs::remove_file(&socket_path);
    match server.await {
        Ok(Err(e)) => tracing::error!(error = %e, "API server failed"),
        Err(e) => tracing::error!(error = %e, "API server task failed"),
        Ok(Ok(())) => {}
    }
    if let Some(kubeconfig_server) = kubeconfig_server {
        match kubeconfig_server.await {
            Ok(Err(e)) => tracing::error!(error = %e, "kubeconfig listener failed"),
            Err(e) => tracing::error!(error = %e, "kubeconfig listener task failed"),
            Ok(Ok(())) => {}
        }
    }
    // In-flight writes commit before the writer stops.
    tokio::task::spawn_blocking(move || store.shutdown())
        .await
        .context("stopping the store")?;
    tracing::info!("stopped");
    Ok(())
}

/// A stored Secret's name, type and decoded data (for pull secrets and repository
/// credentials); `None` when it is missing or unreadable.
pub fn read_secret(
    store: &(impl landscaper_store::ObjectSource + ?Sized),
    namespace: &str,
    name: &str,
) -> Option<landscaper_sources::SecretData> {
    let key = landscaper_store::ObjectKey::new(landscaper_store::Kind::Secret, namespace, name);
    let raw = store.get(&key).ok().flatten()?;
    let secret: landscaper_store::model::Secret = serde_json::from_value(raw).ok()?;
    Some(landscaper_sources::SecretData {
        name: name.to_string(),
        secret_type: secret.r#type.clone().unwrap_or_default(),
        data: secret.decoded_data(),
    })
}

/// The built-in deployers with the helm deployer (the shared cache `<data>/chart-cache`,
/// charts from the manifests folder and from component versions, pull secrets and repository
/// credentials from the store).
pub fn deployer_registry(
    store: &Store,
    cache: Option<std::sync::Arc<landscaper_sources::ChartCache>>,
    manifests_dir: &Path,
    components: Option<std::sync::Arc<crate::components::ComponentResolver>>,
) -> landscaper_deployers::DeployerRegistry {
    let mut registry = landscaper_deployers::DeployerRegistry::builtin();
    let secrets_store = store.clone();
    let secrets: landscaper_deployers::helm::SecretReader =
        std::sync::Arc::new(move |namespace: &str, name: &str| {
            read_secret(&secrets_store, namespace, name)
        });
    let sources = landscaper_sources::ChartSources::with_shared_cache(
        std::sync::Arc::new(landscaper_sources::http::HyperTransport::new()),
        cache,
        landscaper_sources::SourcesConfig::default(),
    );
    let mut helm = landscaper_deployers::HelmDeployer::new(sources)
        .with_manifests_dir(manifests_dir.to_path_buf())
        .with_secrets(secrets);
    if let Some(resolver) = components {
        helm = helm.with_component_charts(std::sync::Arc::new(
            crate::components::ComponentChartsAdapter(resolver),
        ));
    }
    if let Err(e) = registry.register(std::sync::Arc::new(helm)) {
        tracing::warn!(error = %e, "helm deployer not registered");
    }
    registry
}

#[cfg(test)]
mod reload_tests {
    use super::*;

    #[test]
    fn reload_plans_apply_the_log_level_and_name_what_needs_a_restart() {
        let running = Config::resolve(ConfigFile::default(), Overrides::default()).unwrap();
        assert_eq!(reload_plan(&running, &running), ReloadPlan::default());
        let file: ConfigFile = serde_saphyr::from_str(
            "logLevel: debug\nlisten: 127.0.0.1:9999\nworkers: 2\ndeployItemTimeouts: {pickup: 1m}\n",
        )
        .unwrap();
        let new = Config::resolve(file, Overrides::default()).unwrap();
        let plan = reload_plan(&running, &new);
        assert_eq!(plan.log_level.as_deref(), Some("debug"));
        assert_eq!(
            plan.restart_needed,
            ["listen", "deployItemTimeouts.pickup", "workers"]
        );
    }
}
