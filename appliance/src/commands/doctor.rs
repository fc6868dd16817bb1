//! `doctor`: checks what an appliance needs, one line per check with `OK`, `WARN` or `FAIL` and
//! the reason; exit code 1 when a check fails. `-o json` prints the same as JSON.
//!
//! The checks, in order:
//! - `config`: the config file parses and its values are valid (as `serve` reads it);
//! - `manifests`: the manifests folder exists and is readable;
//! - `data`: the data folder exists, is writable by the user running `doctor` (a probe file is
//!   created and removed), and is private (no group/other permissions: it holds the store,
//!   with Secrets, and the API token);
//! - `daemon`: whether a daemon answers `/readyz` at the server address (not running is a
//!   warning: `doctor` also runs before the first start);
//! - `store`: with a daemon running, the object counts through its API; without, the store
//!   file opened read-only (format version, revision, objects readable). A store that is
//!   locked while no daemon answers fails; a store left by a crash is a warning (the daemon
//!   repairs it at start; `doctor` never writes it);
//! - `target NAMESPACE/NAME`: for each `kubernetes-cluster` Target (inline kubeconfig or
//!   `secretRef`), a TCP connection to the kubeconfig's server with a short timeout. Only
//!   `host:port` is printed, never kubeconfig content. With a daemon running the Targets are
//!   read from a snapshot of the store (the API redacts kubeconfigs), which needs the API
//!   token; without the token this check is a warning;
//! - `clock`: the time is not before [`EARLIEST_SANE_TIME`] (before this release existed) and
//!   not before the newest change recorded in the store (the clock was set back);
//! - `disk`: free space on the data folder's file system, from POSIX `df -Pk` (the workspace
//!   forbids `unsafe`, so no `statvfs` call): a warning under 10 % or 500 MB, a failure under
//!   1 % or 50 MB.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use landscaper_store::model::constants::KUBERNETES_CLUSTER_TARGET_TYPE;
use landscaper_store::model::{Secret, Target, from_value};
use landscaper_store::{Kind, OpenError, StoreContents, StoreError, StoreFile, needs_repair};
use serde::Serialize;
use serde_json::{Value, json};

use crate::cli::{DoctorArgs, DoctorOutputFormat};
use crate::commands::api_path;
use crate::commands::backup::{Location, PrivateTempDir, take_snapshot};
use crate::commands::client::ClientError;
use crate::config::{
    Config, ConfigFile, DEFAULT_CONFIG_FILE, DEFAULT_DATA_DIR, Overrides, SOCKET_FILE_NAME,
};
use crate::daemon::controllers::deployitem::target::{ResolvedTarget, parse_content};
use landscaper_store::model::kubeconfig_text;

/// No clock of a working appliance shows a time before this (it predates this release).
pub const EARLIEST_SANE_TIME: &str = "2025-01-01T00:00:00Z";
/// How far the clock may be behind the newest change in the store before it counts as set back.
const CLOCK_TOLERANCE: Duration = Duration::from_secs(300);

const MB: u64 = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Status {
    #[serde(rename = "OK")]
    Ok,
    #[serde(rename = "WARN")]
    Warn,
    #[serde(rename = "FAIL")]
    Fail,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        }
    }
}

/// The result of one check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub check: String,
    pub status: Status,
    pub message: String,
}

impl Check {
    fn new(check: impl Into<String>, status: Status, message: impl Into<String>) -> Check {
        Check {
            check: check.into(),
            status,
            message: message.into(),
        }
    }
}

/// Whether any check failed.
pub fn failed(checks: &[Check]) -> bool {
    checks.iter().any(|c| c.status == Status::Fail)
}

/// Runs every check.
pub fn run(args: &DoctorArgs) -> Vec<Check> {
    let timeout = Duration::from_secs(args.timeout.max(1));
    let mut checks = Vec::new();
    let mut overrides = Overrides {
        data_dir: args.location.data.clone(),
        manifests_dir: args.manifests.clone(),
        ..Overrides::default()
    };
    // Nothing named and no installed daemon: the running demo's folders, if one runs.
    let nothing_named = args.location.config.is_none()
        && args.location.data.is_none()
        && args.manifests.is_none()
        && args.access.server.is_none()
        && !Path::new(DEFAULT_CONFIG_FILE).exists()
        && !Path::new(DEFAULT_DATA_DIR).join(SOCKET_FILE_NAME).exists();
    if let Some(demo) = nothing_named
        .then(crate::commands::demo::running_demo)
        .flatten()
    {
        checks.push(Check::new(
            "demo",
            Status::Ok,
            format!(
                "checking the running demo (announced in {}): data {}, manifests {}",
                crate::commands::demo::runtime_file().display(),
                demo.data_dir.display(),
                demo.manifests_dir.display()
            ),
        ));
        overrides.data_dir = Some(demo.data_dir);
        overrides.manifests_dir = Some(demo.manifests_dir);
        overrides.listen = demo.server.strip_prefix("http://").map(str::to_string);
    }
    let config = match Config::load(args.location.config.as_deref(), overrides.clone()) {
        Ok(config) => {
            let message = match &args.location.config {
                Some(path) => format!("{}: valid", path.display()),
                None if Path::new(DEFAULT_CONFIG_FILE).exists() => {
                    format!("{DEFAULT_CONFIG_FILE}: valid")
                }
                None => {
                    format!("no config file ({DEFAULT_CONFIG_FILE} is absent): built-in defaults")
                }
            };
            checks.push(Check::new("config", Status::Ok, message));
            config
        }
        Err(e) => {
            checks.push(Check::new(
                "config",
                Status::Fail,
                format!("{e} (the other checks use the built-in defaults)"),
            ));
            match Config::resolve(ConfigFile::default(), overrides) {
                Ok(config) => config,
                Err(_) => return checks,
            }
        }
    };
    let location = Location::of(config, args.access.server.as_deref());
    checks.push(check_manifests(&location.config.manifests_dir));
    checks.push(check_data(&location.config.data_dir));
    let (daemon_check, running) = check_daemon(&location);
    checks.push(daemon_check);
    let (store_check, contents) = if running {
        (check_store_through_api(&location), None)
    } else {
        check_store_file(&location)
    };
    checks.push(store_check);
    let contents = match (running, contents) {
        (true, _) => snapshot_contents(&location, args.access.token_file.as_deref()),
        (false, Some(contents)) => Ok(contents),
        (false, None) => Err("no readable store".to_string()),
    };
    match &contents {
        Ok(contents) => {
            checks.extend(check_targets(&contents.objects, timeout));
            checks.extend(check_registries(&contents.objects, timeout));
        }
        Err(why) => checks.push(Check::new(
            "targets",
            Status::Warn,
            format!("not checked: {why}"),
        )),
    }
    checks.push(check_artifact_cache(
        &location.config.data_dir.join("chart-cache"),
    ));
    checks.push(check_kubeconfig(&location.config, running));
    checks.push(check_clock(
        jiff::Timestamp::now(),
        contents
            .as_ref()
            .ok()
            .and_then(|c| c.newest_history.as_ref())
            .map(|h| h.time.as_str()),
    ));
    checks.push(check_disk(&location.config.data_dir));
    checks
}

/// The kubeconfig the daemon writes for kubectl (issue 20) and its listener's certificate.
fn check_kubeconfig(config: &Config, running: bool) -> Check {
    use crate::daemon::api::kubeconfig::{Inspection, inspect};
    let name = "kubeconfig";
    if config.kubeconfig_listen.is_none() {
        return Check::new(name, Status::Ok, "disabled (kubeconfigListen: off)");
    }
    match inspect(&config.data_dir, std::time::SystemTime::now()) {
        Inspection::Usable {
            path,
            server,
            days_left,
        } => Check::new(
            name,
            Status::Ok,
            format!(
                "kubectl --kubeconfig {} get installations -A (server {server}; certificate valid {days_left} more days, renewed 30 days before)",
                path.display()
            ),
        ),
        Inspection::Missing(path) if running => Check::new(
            name,
            Status::Warn,
            format!(
                "{} is missing although the daemon runs: its log says why (e.g. the port of kubeconfigListen is taken)",
                path.display()
            ),
        ),
        Inspection::Missing(path) => Check::new(
            name,
            Status::Ok,
            format!("{} is written when the daemon starts", path.display()),
        ),
        Inspection::Problem(message) => Check::new(name, Status::Warn, message),
    }
}

fn check_manifests(dir: &Path) -> Check {
    let name = "manifests";
    let shown = dir.display();
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Check::new(
            name,
            Status::Warn,
            format!("{shown}: missing (the daemon creates it at start)"),
        ),
        Err(e) => Check::new(name, Status::Fail, format!("{shown}: {e}")),
        Ok(m) if !m.is_dir() => Check::new(name, Status::Fail, format!("{shown}: not a folder")),
        Ok(_) => match std::fs::read_dir(dir) {
            Ok(entries) => Check::new(
                name,
                Status::Ok,
                format!("{shown}: readable, {} entries", entries.count()),
            ),
            Err(e) => Check::new(name, Status::Fail, format!("{shown}: not readable: {e}")),
        },
    }
}

/// The uid this process runs as (the owner of `/proc/self`).
fn current_uid() -> Option<u32> {
    std::fs::metadata("/proc/self").ok().map(|m| m.uid())
}

fn check_data(dir: &Path) -> Check {
    let name = "data";
    let shown = dir.display();
    let meta = match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Check::new(
                name,
                Status::Warn,
                format!("{shown}: missing (the daemon creates it at its first start, mode 0700)"),
            );
        }
        Err(e) => return Check::new(name, Status::Fail, format!("{shown}: {e}")),
        Ok(m) if !m.is_dir() => {
            return Check::new(name, Status::Fail, format!("{shown}: not a folder"));
        }
        Ok(m) => m,
    };
    let probe = dir.join(format!(".doctor-probe-{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&probe)
        .and_then(|mut f| f.write_all(b"probe"));
    let _ = std::fs::remove_file(&probe);
    if let Err(e) = written {
        let who = current_uid()
            .map(|u| format!("uid {u}"))
            .unwrap_or_else(|| "this user".into());
        return Check::new(
            name,
            Status::Fail,
            format!("{shown}: not writable by {who}: {e}"),
        );
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Check::new(
            name,
            Status::Warn,
            format!(
                "{shown}: mode {mode:04o}: other users may read the store (with Secrets) and the API token; chmod 700 it"
            ),
        );
    }
    Check::new(
        name,
        Status::Ok,
        format!("{shown}: writable and private (mode {mode:04o})"),
    )
}

/// The daemon check, and whether a daemon answers.
fn check_daemon(location: &Location) -> (Check, bool) {
    let name = "daemon";
    let server = match location.connectable_socket() {
        Some((socket, _)) => format!("unix://{}", socket.display()),
        None => location.server.clone(),
    };
    let client = match location.client() {
        Ok(c) => c,
        Err(e) => return (Check::new(name, Status::Fail, e.to_string()), false),
    };
    match client.get("/readyz", "text/plain") {
        Ok((200, _)) => (
            Check::new(
                name,
                Status::Ok,
                format!("answers at {server} and is ready"),
            ),
            true,
        ),
        Ok((503, body)) => (
            Check::new(
                name,
                Status::Warn,
                format!(
                    "answers at {server} but is {}",
                    String::from_utf8_lossy(&body).trim()
                ),
            ),
            true,
        ),
        Ok((code, _)) => (
            Check::new(
                name,
                Status::Fail,
                format!("{server} answers /readyz with {code}: is it the appliance?"),
            ),
            false,
        ),
        Err(ClientError::Connect { .. }) => (
            Check::new(
                name,
                Status::Warn,
                format!("not running (nothing answers at {server})"),
            ),
            false,
        ),
        Err(e) => (Check::new(name, Status::Fail, e.to_string()), false),
    }
}

fn describe_counts(counts: &BTreeMap<Kind, u64>) -> String {
    let total: u64 = counts.values().sum();
    let parts: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{}: {n}", k.plural()))
        .collect();
    if parts.is_empty() {
        "no objects".into()
    } else {
        format!("{total} objects: {}", parts.join(", "))
    }
}

fn check_store_through_api(location: &Location) -> Check {
    let name = "store";
    let client = match location.client() {
        Ok(c) => c,
        Err(e) => return Check::new(name, Status::Fail, e.to_string()),
    };
    let mut counts = BTreeMap::new();
    for kind in Kind::ALL {
        match client.get_json(&api_path(kind, None, None)) {
            Ok(list) => {
                let n = list["items"].as_array().map(Vec::len).unwrap_or(0) as u64;
                counts.insert(kind, n);
            }
            Err(e) => {
                return Check::new(
                    name,
                    Status::Fail,
                    format!("listing {} through the daemon: {e}", kind.plural()),
                );
            }
        }
    }
    Check::new(
        name,
        Status::Ok,
        format!("open in the daemon, {}", describe_counts(&counts)),
    )
}

fn check_store_file(location: &Location) -> (Check, Option<StoreContents>) {
    let name = "store";
    let path = &location.store_path;
    let shown = path.display();
    if !path.exists() {
        return (
            Check::new(
                name,
                Status::Warn,
                format!("{shown}: no store yet (the daemon creates it at its first start)"),
            ),
            None,
        );
    }
    let file = match StoreFile::open_without_repair(path) {
        Ok(file) => file,
        Err(StoreError::Open(OpenError::Locked { .. })) => {
            return (
                Check::new(
                    name,
                    Status::Fail,
                    format!(
                        "{shown}: locked by another process, but no daemon answers at {} (a daemon listening elsewhere? pass --server)",
                        location.server
                    ),
                ),
                None,
            );
        }
        Err(e) if needs_repair(&e) => {
            return (
                Check::new(
                    name,
                    Status::Warn,
                    format!("{shown}: not shut down cleanly; the daemon repairs it when it starts"),
                ),
                None,
            );
        }
        Err(e) => return (Check::new(name, Status::Fail, e.to_string()), None),
    };
    match file.read_all() {
        Ok(contents) => {
            let mut counts = BTreeMap::new();
            for object in &contents.objects {
                if let Ok(kind) = landscaper_store::object::kind_of(object) {
                    *counts.entry(kind).or_default() += 1;
                }
            }
            (
                Check::new(
                    name,
                    Status::Ok,
                    format!(
                        "{shown}: format {}, revision {}, {}",
                        file.format_version(),
                        contents.revision,
                        describe_counts(&counts)
                    ),
                ),
                Some(contents),
            )
        }
        Err(e) => (
            Check::new(name, Status::Fail, format!("{shown}: {e}")),
            None,
        ),
    }
}

fn snapshot_contents(
    location: &Location,
    token_file: Option<&Path>,
) -> Result<StoreContents, String> {
    let temp = PrivateTempDir::new(None).map_err(|e| e.to_string())?;
    let path = temp.path().join("snapshot.redb");
    take_snapshot(location, token_file, &path).map_err(|e| e.to_string())?;
    StoreFile::open(&path)
        .and_then(|f| f.read_all())
        .map_err(|e| e.to_string())
}

/// Where a kubernetes-cluster Target's API server is: `Ok(host, port)`, or why it cannot be
/// told. Never returns kubeconfig content.
pub fn target_server(target: &Value, objects: &[Value]) -> Result<(String, u16), String> {
    let typed: Target = from_value(target).map_err(|e| format!("not a valid Target: {e}"))?;
    let resolved = match typed.spec.secret_ref.clone() {
        Some(reference) => {
            let namespace = typed.metadata.namespace();
            let secret = objects
                .iter()
                .find(|o| {
                    o["kind"] == "Secret"
                        && o["metadata"]["namespace"] == namespace
                        && o["metadata"]["name"] == reference.name.as_str()
                })
                .ok_or_else(|| {
                    format!("its Secret {namespace}/{} does not exist", reference.name)
                })?;
            let secret: Secret =
                from_value(secret).map_err(|e| format!("its Secret is not valid: {e}"))?;
            ResolvedTarget::from_secret(typed, &secret)?
        }
        None => ResolvedTarget::inline(typed),
    };
    if resolved.parse_error.is_some() {
        return Err("its configuration in the Secret is not YAML".into());
    }
    let text = kubeconfig_text(resolved.target.spec.config.as_ref())
        .filter(|t| !t.trim().is_empty())
        .ok_or("it has no kubeconfig")?;
    let kubeconfig = parse_content(&text)
        .ok()
        .flatten()
        .ok_or("its kubeconfig is not YAML")?;
    if kubeconfig.get("secretRef").is_some() {
        return Err(
            "its kubeconfig is a secretRef inside the configuration, which is not resolved here"
                .into(),
        );
    }
    let clusters = kubeconfig["clusters"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let current = kubeconfig["current-context"].as_str().unwrap_or("");
    let context_cluster = kubeconfig["contexts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["name"] == current)
        .and_then(|c| c["context"]["cluster"].as_str());
    let cluster = match context_cluster {
        Some(name) => clusters.iter().find(|c| c["name"] == name),
        None if clusters.len() == 1 => clusters.first(),
        None => None,
    }
    .ok_or("its kubeconfig names no cluster (current-context)")?;
    let server = cluster["cluster"]["server"]
        .as_str()
        .ok_or("its kubeconfig's cluster has no server")?;
    parse_server(server).ok_or_else(|| "its kubeconfig's server is not a URL".to_string())
}

/// `https://host:port/path` as (host, port); 443 for https and 80 for http by default.
pub fn parse_server(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default_port,
            None => return None,
        };
        return Some((host.to_string(), port));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, port.parse().ok()?),
        None => (authority, default_port),
    };
    (!host.is_empty()).then(|| (host.to_string(), port))
}

/// Whether `host` is under a top-level domain reserved for names that never resolve
/// (`.invalid`, `.example`; RFC 2606): the demo's and the examples' placeholder clusters.
pub fn is_placeholder_host(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    ["invalid", "example"]
        .iter()
        .any(|tld| host == *tld || host.ends_with(&format!(".{tld}")))
}

fn connect(host: &str, port: u16, timeout: Duration) -> Result<Duration, String> {
    let addresses: Vec<_> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .collect();
    let mut last = format!("{host} resolves to no address");
    for address in addresses {
        let start = Instant::now();
        match TcpStream::connect_timeout(&address, timeout) {
            Ok(_) => return Ok(start.elapsed()),
            Err(e) => {
                last = format!(
                    "cannot connect to {host}:{port}: {e} (timeout {} s)",
                    timeout.as_secs()
                )
            }
        }
    }
    Err(last)
}

fn check_targets(objects: &[Value], timeout: Duration) -> Vec<Check> {
    let targets: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "Target" && o["spec"]["type"] == KUBERNETES_CLUSTER_TARGET_TYPE)
        .collect();
    if targets.is_empty() {
        return vec![Check::new(
            "targets",
            Status::Ok,
            "no kubernetes-cluster Targets",
        )];
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = targets
            .iter()
            .map(|target| {
                scope.spawn(move || {
                    let name = format!(
                        "target {}/{}",
                        target["metadata"]["namespace"].as_str().unwrap_or(""),
                        target["metadata"]["name"].as_str().unwrap_or("")
                    );
                    match target_server(target, objects) {
                        Err(why) => Check::new(name, Status::Warn, format!("not checked: {why}")),
                        Ok((host, _)) if is_placeholder_host(&host) => Check::new(
                            name,
                            Status::Ok,
                            format!("{host} is a placeholder (a reserved name that never resolves, RFC 2606), as in the demo: not checked"),
                        ),
                        Ok((host, port)) => match connect(&host, port, timeout) {
                            Ok(took) => Check::new(
                                name,
                                Status::Ok,
                                format!(
                                    "{host}:{port} reachable (TCP connect in {} ms)",
                                    took.as_millis()
                                ),
                            ),
                            Err(why) => Check::new(name, Status::Fail, why),
                        },
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Check::new("targets", Status::Fail, "the check of a Target panicked")
                })
            })
            .collect()
    })
}

/// The OCI registries of the repository contexts in use (Contexts' `repositoryContext`,
/// Installations' `spec.componentDescriptor.ref.repositoryContext`), each once: reachable by
/// TCP. CTF, component-archive and `local` contexts are files and not checked here.
fn check_registries(objects: &[Value], timeout: Duration) -> Vec<Check> {
    let mut endpoints = std::collections::BTreeSet::new();
    for o in objects {
        let ctx = match o["kind"].as_str() {
            Some("Context") => &o["repositoryContext"],
            Some("Installation") => &o["spec"]["componentDescriptor"]["ref"]["repositoryContext"],
            _ => continue,
        };
        if let Some(endpoint) = registry_endpoint(ctx) {
            endpoints.insert(endpoint);
        }
    }
    endpoints
        .into_iter()
        .map(|(host, port)| {
            let name = format!("registry {host}:{port}");
            match connect(&host, port, timeout) {
                Ok(took) => Check::new(
                    name,
                    Status::Ok,
                    format!("reachable (TCP connect in {} ms)", took.as_millis()),
                ),
                // Archives in the manifests folder and the cache may still serve it.
                Err(why) => Check::new(
                    name,
                    Status::Warn,
                    format!("{why} (component versions come from the cache and the folder's archives only)"),
                ),
            }
        })
        .collect()
}

/// Host and port of an OCI repository context (`baseUrl`; no scheme means HTTPS).
pub fn registry_endpoint(ctx: &Value) -> Option<(String, u16)> {
    let parsed = landscaper_components::RepositoryContext::parse(ctx).ok()?;
    let landscaper_components::RepositoryKind::Oci { base_url, .. } = parsed.kind else {
        return None;
    };
    // The scheme as written (the parsed form drops it).
    let base_url = ctx
        .as_object()
        .and_then(|m| {
            m.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("baseUrl"))
                .and_then(|(_, v)| v.as_str())
        })
        .map(str::to_string)
        .unwrap_or(base_url);
    let (default_port, rest) = match base_url.split_once("://") {
        Some(("http", rest)) => (80, rest),
        Some((_, rest)) => (443, rest),
        None => (443, base_url.as_str()),
    };
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() {
        return None;
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
            match port.parse() {
                Ok(p) => Some((host.trim_matches(['[', ']']).to_string(), p)),
                Err(_) => Some((authority.to_string(), default_port)),
            }
        }
        _ => Some((authority.trim_matches(['[', ']']).to_string(), default_port)),
    }
}

/// The shared artifact cache (helm charts and component versions): every blob is verified
/// against its digest (`ChartCache::verify`); damaged ones are removed, as a read would.
pub fn check_artifact_cache(dir: &Path) -> Check {
    let name = "artifact cache";
    if !dir.join("blobs/sha256").is_dir() {
        return Check::new(name, Status::Ok, format!("{}: empty", dir.display()));
    }
    let cache = match landscaper_sources::ChartCache::open(
        dir,
        landscaper_sources::cache::DEFAULT_CACHE_MAX_BYTES,
    ) {
        Ok(c) => c,
        Err(e) => return Check::new(name, Status::Fail, e.to_string()),
    };
    let (kept, bytes, removed) = cache.verify();
    let summary = format!("{}: {kept} blobs, {} MB", dir.display(), bytes / MB);
    if removed == 0 {
        Check::new(
            name,
            Status::Ok,
            format!("{summary}, all match their digests"),
        )
    } else {
        Check::new(
            name,
            Status::Warn,
            format!("{summary}; removed {removed} damaged blobs (fetched again when needed)"),
        )
    }
}

/// The clock check: `now` against [`EARLIEST_SANE_TIME`] and the newest change in the store.
pub fn check_clock(now: jiff::Timestamp, newest_change: Option<&str>) -> Check {
    let name = "clock";
    let shown = landscaper_store::clock::format_time(now);
    let earliest: jiff::Timestamp = EARLIEST_SANE_TIME
        .parse()
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    if now < earliest {
        return Check::new(
            name,
            Status::Fail,
            format!("{shown} is before {EARLIEST_SANE_TIME}: the clock is not set (check NTP)"),
        );
    }
    if let Some(newest) = newest_change.and_then(|t| t.parse::<jiff::Timestamp>().ok()) {
        let tolerance = jiff::SignedDuration::try_from(CLOCK_TOLERANCE).unwrap_or_default();
        if now.checked_add(tolerance).is_ok_and(|n| n < newest) {
            let behind = newest.duration_since(now);
            return Check::new(
                name,
                Status::Fail,
                format!(
                    "{shown} is {} s before the newest change in the store ({}): the clock was set back (check NTP)",
                    behind.as_secs(),
                    landscaper_store::clock::format_time(newest)
                ),
            );
        }
        return Check::new(
            name,
            Status::Ok,
            format!(
                "{shown} (UTC), after the newest change in the store ({})",
                landscaper_store::clock::format_time(newest)
            ),
        );
    }
    Check::new(name, Status::Ok, format!("{shown} (UTC)"))
}

/// Free space from `df -Pk` output: (available bytes, usable bytes, mount point). Usable is
/// used + available, as `df` computes its capacity (blocks reserved for root excluded).
pub fn parse_df(output: &str) -> Option<(u64, u64, String)> {
    let line = output.lines().nth(1)?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() < 6 {
        return None;
    }
    let used: u64 = fields[2].parse().ok()?;
    let available: u64 = fields[3].parse().ok()?;
    Some((
        available.saturating_mul(1024),
        used.saturating_add(available).saturating_mul(1024),
        fields[5..].join(" "),
    ))
}

/// The disk check for `available` of `total` bytes.
pub fn judge_disk(available: u64, total: u64, mount: &str) -> Check {
    let percent = if total == 0 {
        100.0
    } else {
        available as f64 * 100.0 / total as f64
    };
    let message = format!(
        "{} MB free of {} MB ({percent:.1} %) on {mount}",
        available / MB,
        total / MB
    );
    let status = if available < 50 * MB || percent < 1.0 {
        Status::Fail
    } else if available < 500 * MB || percent < 10.0 {
        Status::Warn
    } else {
        Status::Ok
    };
    Check::new("disk", status, message)
}

fn check_disk(data_dir: &Path) -> Check {
    // The data folder, or the nearest folder above it that exists.
    let mut dir: PathBuf = data_dir.to_path_buf();
    while !dir.exists() {
        match dir.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => dir = parent.to_path_buf(),
            _ => {
                dir = PathBuf::from(".");
                break;
            }
        }
    }
    let output = std::process::Command::new("df")
        .arg("-Pk")
        .arg(&dir)
        .output();
    match output {
        Ok(out) if out.status.success() => match parse_df(&String::from_utf8_lossy(&out.stdout)) {
            Some((available, total, mount)) => judge_disk(available, total, &mount),
            None => Check::new("disk", Status::Warn, "cannot read the output of df -Pk"),
        },
        Ok(out) => Check::new(
            "disk",
            Status::Warn,
            format!(
                "df -Pk {} failed: {}",
                dir.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ),
        Err(e) => Check::new("disk", Status::Warn, format!("cannot run df: {e}")),
    }
}

/// Prints the checks as text lines or JSON.
pub fn print(
    checks: &[Check],
    format: DoctorOutputFormat,
    out: &mut impl Write,
) -> std::io::Result<()> {
    match format {
        DoctorOutputFormat::Text => {
            let width = checks.iter().map(|c| c.check.len()).max().unwrap_or(0);
            for c in checks {
                writeln!(
                    out,
                    "{:<4}  {:<width$}  {}",
                    c.status.as_str(),
                    c.check,
                    c.message
                )?;
            }
            Ok(())
        }
        DoctorOutputFormat::Json => {
            let value = json!({"ok": !failed(checks), "checks": checks});
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&value).unwrap_or_default()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_names_are_placeholders() {
        for host in [
            "edge-cluster.invalid",
            "a.b.INVALID.",
            "cluster.example",
            "invalid",
        ] {
            assert!(is_placeholder_host(host), "{host}");
        }
        for host in [
            "example.com",
            "invalid.org",
            "10.0.0.1",
            "api.cluster.local",
            "myinvalid",
        ] {
            assert!(!is_placeholder_host(host), "{host}");
        }
    }

    #[test]
    fn parses_kubeconfig_servers() {
        assert_eq!(
            parse_server("https://10.0.0.1:6443"),
            Some(("10.0.0.1".into(), 6443))
        );
        assert_eq!(
            parse_server("https://api.example.com/path"),
            Some(("api.example.com".into(), 443))
        );
        assert_eq!(
            parse_server("http://[::1]:8080/"),
            Some(("::1".into(), 8080))
        );
        assert_eq!(parse_server("https://[::1]"), Some(("::1".into(), 443)));
        assert_eq!(parse_server("ftp://x"), None);
        assert_eq!(parse_server("https://:1"), None);
    }

    fn kubeconfig(server: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: other\n  cluster: {{server: 'https://wrong:1'}}\n- name: k\n  cluster: {{server: '{server}', certificate-authority-data: c2VjcmV0}}\ncontexts:\n- name: c\n  context: {{cluster: k, user: u}}\nusers:\n- name: u\n  user: {{token: s3cret}}\n"
        )
    }

    #[test]
    fn finds_the_server_of_inline_and_secret_targets() {
        let inline = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
            "metadata": {"name": "t", "namespace": "ns"},
            "spec": {"type": KUBERNETES_CLUSTER_TARGET_TYPE,
                "config": {"kubeconfig": kubeconfig("https://10.1.2.3:6443")}}});
        assert_eq!(
            target_server(&inline, &[]).unwrap(),
            ("10.1.2.3".into(), 6443)
        );
        use base64::Engine as _;
        let content =
            serde_json::to_string(&json!({"kubeconfig": kubeconfig("https://k8s:443")})).unwrap();
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "kc", "namespace": "ns"},
            "data": {"target": base64::engine::general_purpose::STANDARD.encode(content)}});
        let by_ref = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
            "metadata": {"name": "r", "namespace": "ns"},
            "spec": {"type": KUBERNETES_CLUSTER_TARGET_TYPE, "secretRef": {"name": "kc", "key": "target"}}});
        assert_eq!(
            target_server(&by_ref, std::slice::from_ref(&secret)).unwrap(),
            ("k8s".into(), 443)
        );
        let err = target_server(&by_ref, &[]).unwrap_err();
        assert!(err.contains("ns/kc does not exist"), "{err}");
        // Messages never carry kubeconfig content.
        let broken = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
            "metadata": {"name": "b", "namespace": "ns"},
            "spec": {"type": KUBERNETES_CLUSTER_TARGET_TYPE,
                "config": {"kubeconfig": "clusters: [{name: x, cluster: {token: s3cret}}]"}}});
        let err = target_server(&broken, &[]).unwrap_err();
        assert!(!err.contains("s3cret"), "{err}");
    }

    #[test]
    fn reaches_listening_targets_and_fails_closed_ports() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open = listener.local_addr().unwrap().port();
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let target = |name: &str, port: u16| {
            json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {"type": KUBERNETES_CLUSTER_TARGET_TYPE,
                    "config": {"kubeconfig": kubeconfig(&format!("https://127.0.0.1:{port}"))}}})
        };
        let mock = json!({"kind": "Target", "metadata": {"name": "m", "namespace": "ns"},
            "spec": {"type": "landscaper.gardener.cloud/mock"}});
        let checks = check_targets(
            &[target("up", open), target("down", closed), mock],
            Duration::from_secs(2),
        );
        assert_eq!(checks.len(), 2);
        assert_eq!(checks[0].check, "target ns/up");
        assert_eq!(checks[0].status, Status::Ok, "{checks:?}");
        assert_eq!(checks[1].status, Status::Fail, "{checks:?}");
        assert!(checks[1].message.contains(&format!("127.0.0.1:{closed}")));
        assert_eq!(
            check_targets(&[], Duration::from_secs(1))[0].status,
            Status::Ok
        );
    }

    #[test]
    fn finds_registry_endpoints_of_repository_contexts() {
        for (ctx, want) in [
            (
                json!({"type": "ociRegistry", "baseUrl": "127.0.0.1:5000"}),
                Some(("127.0.0.1", 5000)),
            ),
            (
                json!({"type": "OCIRegistry", "baseUrl": "ghcr.io/org/path"}),
                Some(("ghcr.io", 443)),
            ),
            (
                json!({"type": "OCIRegistry", "baseUrl": "http://reg.local/x"}),
                Some(("reg.local", 80)),
            ),
            (json!({"type": "local", "filePath": "./"}), None),
            (json!({"type": "nonsense"}), None),
        ] {
            let got = registry_endpoint(&ctx);
            assert_eq!(got.as_ref().map(|(h, p)| (h.as_str(), *p)), want, "{ctx}");
        }
    }

    #[test]
    fn artifact_cache_blobs_must_match_their_digests() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(check_artifact_cache(dir.path()).status, Status::Ok);
        let blobs = dir.path().join("blobs/sha256");
        std::fs::create_dir_all(&blobs).unwrap();
        let good = landscaper_sources::archive::sha256_digest(b"good");
        std::fs::write(blobs.join(good.trim_start_matches("sha256:")), b"good").unwrap();
        let c = check_artifact_cache(dir.path());
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(c.message.contains("1 blobs"), "{c:?}");
        std::fs::write(blobs.join(good.trim_start_matches("sha256:")), b"tampered").unwrap();
        let c = check_artifact_cache(dir.path());
        assert_eq!(c.status, Status::Warn, "{c:?}");
        assert!(c.message.contains("removed 1 damaged blobs"), "{c:?}");
        assert!(!blobs.join(good.trim_start_matches("sha256:")).exists());
    }

    #[test]
    fn judges_clocks() {
        let now: jiff::Timestamp = "2026-06-01T12:00:00Z".parse().unwrap();
        assert_eq!(check_clock(now, None).status, Status::Ok);
        assert_eq!(
            check_clock(now, Some("2026-06-01T11:00:00Z")).status,
            Status::Ok
        );
        assert_eq!(
            check_clock(now, Some("2026-06-01T12:04:00Z")).status,
            Status::Ok
        );
        let set_back = check_clock(now, Some("2026-06-02T12:00:00Z"));
        assert_eq!(set_back.status, Status::Fail);
        assert!(set_back.message.contains("set back"), "{set_back:?}");
        let unset = check_clock("1970-01-01T00:00:10Z".parse().unwrap(), None);
        assert_eq!(unset.status, Status::Fail);
    }

    #[test]
    fn judges_disk_space_from_df() {
        let df = "Filesystem     1024-blocks     Used Available Capacity Mounted on\n/dev/vda 264212084 68866988 26418900 73% /\n";
        let (available, total, mount) = parse_df(df).unwrap();
        assert_eq!(
            (available, total, mount.as_str()),
            (26418900 * 1024, (68866988 + 26418900) * 1024, "/")
        );
        assert_eq!(judge_disk(available, total, "/").status, Status::Ok);
        assert_eq!(judge_disk(400 * MB, 1_000 * MB, "/").status, Status::Warn);
        assert_eq!(
            judge_disk(5_000 * MB, 100_000 * MB, "/").status,
            Status::Warn
        );
        assert_eq!(judge_disk(40 * MB, 100 * MB, "/").status, Status::Fail);
        assert_eq!(parse_df("garbage"), None);
    }

    #[test]
    fn checks_folders() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        assert_eq!(check_data(&data).status, Status::Warn);
        std::fs::create_dir(&data).unwrap();
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(check_data(&data).status, Status::Ok);
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(check_data(&data).status, Status::Warn);
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(check_data(&file).status, Status::Fail);
        assert_eq!(check_manifests(&file).status, Status::Fail);
        assert_eq!(check_manifests(dir.path()).status, Status::Ok);
        assert_eq!(
            check_manifests(&dir.path().join("nope")).status,
            Status::Warn
        );
        // No probe file is left behind.
        assert_eq!(std::fs::read_dir(&data).unwrap().count(), 0);
    }

    #[test]
    fn prints_text_and_json() {
        let checks = vec![
            Check::new("config", Status::Ok, "fine"),
            Check::new("target ns/t", Status::Fail, "down"),
        ];
        let mut out = Vec::new();
        print(&checks, DoctorOutputFormat::Text, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "OK    config       fine\nFAIL  target ns/t  down\n"
        );
        let mut out = Vec::new();
        print(&checks, DoctorOutputFormat::Json, &mut out).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["ok"], false);
        assert_eq!(v["checks"][1]["status"], "FAIL");
        assert!(failed(&checks));
    }
}
