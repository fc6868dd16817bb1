//! `kube-test-server`: runs the in-memory Kubernetes API server until SIGTERM/SIGINT.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use kube_test_server::{Readiness, ServerConfig, TestServer};
use serde_json::Value;

#[derive(Debug, Parser)]
#[command(
    name = "kube-test-server",
    about = "An in-memory Kubernetes API server for tests"
)]
struct Args {
    /// Serve HTTPS with a self-signed CA (its data goes into the kubeconfig).
    #[arg(long)]
    tls: bool,
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Write a kubeconfig for the server here.
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
    /// When workloads become ready: a duration (`2s`, `500ms`) or `never`.
    #[arg(long, default_value = "100ms")]
    ready_after: String,
    /// CRD manifests (YAML, several documents allowed) to serve from the start.
    #[arg(long)]
    crd: Vec<PathBuf>,
    /// The bearer token clients must present.
    #[arg(long, default_value = "kube-test-server-token")]
    token: String,
    /// Accept requests without credentials.
    #[arg(long)]
    anonymous: bool,
}

fn parse_duration(s: &str) -> anyhow::Result<Option<Duration>> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("never") {
        return Ok(None);
    }
    let (number, unit) = s.split_at(
        s.find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(s.len()),
    );
    let n: f64 = number
        .parse()
        .with_context(|| format!("invalid duration {s:?}"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" | "" => n,
        "m" => n * 60.0,
        other => anyhow::bail!("invalid duration unit {other:?} in {s:?}"),
    };
    Ok(Some(Duration::from_secs_f64(secs)))
}

fn load_crds(path: &PathBuf) -> anyhow::Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .with_context(|| format!("parsing {}", path.display()))?;
    Ok(docs.into_iter().filter(|d| d.is_object()).collect())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut config = ServerConfig::default().tls(args.tls).port(args.port);
    config.auth.token = Some(args.token.clone());
    if args.anonymous {
        config.auth.anonymous = Some(true);
    }
    config.simulation.workloads = match parse_duration(&args.ready_after)? {
        Some(d) => Readiness::After(d),
        None => Readiness::Never,
    };
    for path in &args.crd {
        config.crds.extend(load_crds(path)?);
    }
    let server = TestServer::start(config).await?;
    if let Some(path) = &args.kubeconfig_out {
        server
            .write_kubeconfig(path)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    println!("{}", server.url());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    server.shutdown();
    Ok(())
}
