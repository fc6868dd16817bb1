//! The daemon: opens the store, serves the API, ingests the manifests folder, and shuts down
//! in order on SIGTERM/SIGINT.

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
        include_str!("../demo/00-edge-cluster.yaml"),
    ),
    ("10-settings.yaml", include_str!("../demo/10-settings.yaml")),
    (
        "20-installation.yaml",
        include_str!("../demo/20-installation.yaml"),
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
        },
    )?;
    Ok(config)
}

/// Runs the daemon on a fresh multi-threaded runtime until a termination signal.
pub fn run_blocking(config: Config) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("landscaper-appliance")
        .build()
        .context("starting the async runtime")?
        .block_on(run(config, shutdown_signal()))
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
    let token_path = config.data_dir.join(crate::api::token::TOKEN_FILE_NAME);
    let token = crate::api::ApiToken::ensure_file(&token_path)
        .with_context(|| format!("preparing the API token {}", token_path.display()))?;
    tracing::info!(file = %token_path.display(), "API writes need the bearer token in this file");

    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listening on {}", config.listen))?;
    let address = listener
        .local_addr()
        .context("reading the listen address")?;
    let readiness = crate::api::Readiness::default();
    let cancel = CancellationToken::new();

    let state = crate::api::ApiState::new(store.clone(), readiness.clone())
        .with_shutdown(cancel.clone())
        .with_token(token);
    let router = crate::api::router(state).merge(crate::history::routes(store.clone()));
    let server_cancel = cancel.clone();
    let server = tokio::spawn(async move {
        crate::api::serve(listener, router, server_cancel.cancelled_owned()).await
    });
    tracing::info!(%address, "API listening");

    let ingestor = crate::ingest::Ingestor::new(
        store.clone(),
        crate::ingest::IngestConfig {
            manifests_dir: config.manifests_dir.clone(),
            resync_interval: config.resync_interval,
            ..crate::ingest::IngestConfig::default()
        },
    );
    let controller_config = crate::controllers::ControllerConfig {
        pickup_timeout: config.pickup_timeout,
        workers: crate::controllers::runtime::WorkerOptions {
            workers: config.workers,
            ..Default::default()
        },
        ..Default::default()
    };
    let controller_context =
        crate::controllers::ControllerContext::new(store.clone(), controller_config)
            .with_manifests_dir(config.manifests_dir.clone());
    let controllers = tokio::spawn(crate::controllers::run(controller_context, cancel.clone()));

    let (scanned_tx, scanned_rx) = tokio::sync::oneshot::channel();
    let ingest_cancel = cancel.clone();
    let ingest = tokio::spawn(async move { ingestor.run(ingest_cancel, Some(scanned_tx)).await });

    tokio::pin!(shutdown);
    tokio::select! {
        report = scanned_rx => {
            if let Ok(report) = report {
                tracing::info!(?report, "initial scan of the manifests folder done");
            }
            readiness.set_ready();
            tracing::info!(%address, "ready");
            crate::systemd::ready(&crate::systemd::current_status(&store).await);
            let supervisor = tokio::spawn(crate::systemd::supervise(store.clone(), cancel.clone()));
            shutdown.await;
            supervisor.abort();
        }
        _ = &mut shutdown => {}
    }

    crate::systemd::stopping();
    cancel.cancel();
    if let Err(e) = ingest.await {
        tracing::error!(error = %e, "ingest task failed");
    }
    if let Err(e) = controllers.await {
        tracing::error!(error = %e, "controller task failed");
    }
    match server.await {
        Ok(Err(e)) => tracing::error!(error = %e, "API server failed"),
        Err(e) => tracing::error!(error = %e, "API server task failed"),
        Ok(Ok(())) => {}
    }
    // In-flight writes commit before the writer stops.
    tokio::task::spawn_blocking(move || store.shutdown())
        .await
        .context("stopping the store")?;
    tracing::info!("stopped");
    Ok(())
}
