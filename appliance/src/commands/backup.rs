//! `backup FILE` and `restore FILE`, and what the day-2 tools (`backup`, `export`, `doctor`)
//! share: where the store and the daemon are ([`Location`]), the API token, and a consistent
//! snapshot of the store ([`take_snapshot`]).
//!
//! A snapshot comes from the running daemon when one answers (`GET /appliance/v1/backup`: the
//! daemon holds the store file's lock, and the snapshot is made inside one read transaction
//! while it keeps working), over the daemon's Unix socket in the data folder when this user may
//! connect to it (no token needed), else at the server address with the API token. When nothing answers, the store file is opened
//! directly, read-only ([`StoreFile`]); while it is open a daemon cannot start (it reports the
//! store as locked), and a store left by a crash is repaired first, as the daemon's start would
//! do. A store that is locked while nothing answers at the server address is an error naming
//! both (the daemon listens elsewhere: pass `--server`).
//!
//! `restore` needs the daemon stopped: the store's lock tells, and the restore keeps holding the
//! old file while it checks the backup ([`landscaper_store::restore_file`]).

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use landscaper_store::{Kind, OpenError, StoreError, StoreFile};

use crate::cli::{BackupArgs, RestoreArgs, StoreLocationArgs};
use crate::commands::client::{Client, ClientError};
use crate::commands::progress::{CountingWriter, Progress, Unit};
use crate::config::{Config, ConfigError, Overrides};
use crate::daemon::api::ApiToken;
use crate::daemon::api::backup::{BACKUP_PATH, OBJECTS_HEADER, REVISION_HEADER};
use crate::daemon::api::token::TokenError;

/// Environment variable holding the API token itself (as for the write commands).
pub use crate::daemon::api::token::TOKEN_ENV;

/// How long the CLI waits for the daemon's snapshot (a large store takes a while to copy).
const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(
        "reading the API token: {0} (run as root or the service user, or set {TOKEN_ENV} or --token-file)"
    )]
    Token(#[source] TokenError),
    #[error("server address {0:?} is not of the form http://HOST:PORT")]
    BadServer(String),
    #[error("requesting a snapshot from the daemon at {server}: {message}")]
    Http { server: String, message: String },
    #[error("the daemon at {server} refused the snapshot ({code}): {message}")]
    Api {
        server: String,
        code: u16,
        message: String,
    },
    #[error("{step} {path}: {source}")]
    Io {
        step: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{step} {path}: {source}")]
    Store {
        step: &'static str,
        path: String,
        #[source]
        source: Box<StoreError>,
    },
    #[error(
        "the store {path} is locked by a running daemon, but nothing answers at {server}: pass the daemon's address with --server"
    )]
    LockedElsewhere { path: String, server: String },
    #[error("the daemon is running (store {path} locked): stop it first")]
    DaemonRunning { path: String },
}

/// Where the store and the daemon are, resolved as `serve` would: flags, then the config file,
/// then the defaults.
#[derive(Debug, Clone)]
pub struct Location {
    pub config: Config,
    pub store_path: PathBuf,
    /// `http://HOST:PORT` of the daemon's API.
    pub server: String,
    /// The daemon's Unix socket in the data folder, tried before `server` (requests over it
    /// need no token); `None` when a server address was given explicitly.
    pub socket: Option<PathBuf>,
}

impl Location {
    pub fn resolve(
        location: &StoreLocationArgs,
        manifests: Option<PathBuf>,
        server: Option<&str>,
    ) -> Result<Location, ConfigError> {
        let config = Config::load(
            location.config.as_deref(),
            Overrides {
                data_dir: location.data.clone(),
                manifests_dir: manifests,
                ..Overrides::default()
            },
        )?;
        Ok(Location::of(config, server))
    }

    pub fn of(config: Config, server: Option<&str>) -> Location {
        Location {
            store_path: config.store_path(),
            socket: server.is_none().then(|| config.socket_path()),
            server: server
                .map(str::to_string)
                .unwrap_or_else(|| format!("http://{}", config.listen)),
            config,
        }
    }

    /// The daemon's Unix socket, when one accepts connections (as root or the service user).
    pub fn connectable_socket(&self) -> Option<(&Path, UnixStream)> {
        let socket = self.socket.as_deref()?;
        UnixStream::connect(socket).ok().map(|s| (socket, s))
    }

    /// A client of the daemon: over its Unix socket when that accepts connections, else at
    /// `server`.
    pub fn client(&self) -> Result<Client, ClientError> {
        match self.connectable_socket() {
            Some((socket, _)) => Ok(Client::unix(socket)),
            None => Client::new(&self.server),
        }
    }
}

/// The API token: `--token-file`, else `$LANDSCAPER_APPLIANCE_TOKEN`, else `DATA/api-token`.
pub fn read_token(token_file: Option<&Path>, data_dir: &Path) -> Result<ApiToken, BackupError> {
    let env_token = std::env::var(TOKEN_ENV).ok();
    ApiToken::resolve(token_file, env_token.as_deref(), data_dir).map_err(BackupError::Token)
}

/// Where a snapshot came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The running daemon at this address.
    Daemon(String),
    /// The store file, read directly (no daemon running).
    File(PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Daemon(server) => write!(f, "the running daemon at {server}"),
            Source::File(path) => {
                write!(f, "the store file {} (no daemon running)", path.display())
            }
        }
    }
}

/// A snapshot written to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub revision: u64,
    pub objects: u64,
    pub bytes: u64,
    pub source: Source,
}

/// Writes a consistent snapshot of the store to `dest` (mode 0600; written beside it, checked
/// to open as a store, then renamed into place): from the daemon when one answers (on its
/// Unix socket, without a token, else at `location.server` with the token), else from the
/// store file.
pub fn take_snapshot(
    location: &Location,
    token_file: Option<&Path>,
    dest: &Path,
) -> Result<Snapshot, BackupError> {
    if let Some((socket, stream)) = location.connectable_socket() {
        let server = format!("unix://{}", socket.display());
        return download(Box::new(stream), &server, "localhost", None, dest);
    }
    let host_port = host_port(&location.server)?;
    match TcpStream::connect(&host_port) {
        Ok(stream) => {
            let token = read_token(token_file, &location.config.data_dir)?;
            download(
                Box::new(stream),
                &location.server,
                &host_port,
                Some(&token),
                dest,
            )
        }
        Err(_) => snapshot_of_file(location, dest),
    }
}

/// A connected stream to the daemon, TCP or Unix.
pub trait Connection: Read + Write {
    fn set_timeout(&self, timeout: Duration) -> std::io::Result<()>;
}

impl Connection for TcpStream {
    fn set_timeout(&self, timeout: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(timeout))
    }
}

impl Connection for UnixStream {
    fn set_timeout(&self, timeout: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(timeout))
    }
}

fn snapshot_of_file(location: &Location, dest: &Path) -> Result<Snapshot, BackupError> {
    let path = location.store_path.display().to_string();
    let file = StoreFile::open(&location.store_path).map_err(|source| match source {
        StoreError::Open(OpenError::Locked { .. }) => BackupError::LockedElsewhere {
            path: path.clone(),
            server: location.server.clone(),
        },
        source => BackupError::Store {
            step: "opening the store",
            path: path.clone(),
            source: Box::new(source),
        },
    })?;
    let info = file.backup_to(dest).map_err(|source| BackupError::Store {
        step: "writing the backup",
        path: dest.display().to_string(),
        source: Box::new(source),
    })?;
    Ok(Snapshot {
        revision: info.revision,
        objects: info.objects,
        bytes: std::fs::metadata(dest).map(|m| m.len()).unwrap_or(0),
        source: Source::File(location.store_path.clone()),
    })
}

fn host_port(server: &str) -> Result<String, BackupError> {
    server
        .strip_prefix("http://")
        .map(|s| s.trim_end_matches('/'))
        .filter(|s| !s.is_empty() && !s.contains('/'))
        .map(str::to_string)
        .ok_or_else(|| BackupError::BadServer(server.to_string()))
}

/// `dir/.name.partial` beside `path`.
fn partial_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "backup".into());
    path.with_file_name(format!(".{name}.partial"))
}

/// `GET /appliance/v1/backup` on `stream`, saved to `dest`.
fn download(
    mut stream: Box<dyn Connection>,
    server: &str,
    host_port: &str,
    token: Option<&ApiToken>,
    dest: &Path,
) -> Result<Snapshot, BackupError> {
    let http = |message: String| BackupError::Http {
        server: server.to_string(),
        message,
    };
    stream
        .set_timeout(SNAPSHOT_TIMEOUT)
        .map_err(|e| http(e.to_string()))?;
    let authorization = token
        .map(|t| format!("Authorization: Bearer {}\r\n", t.expose()))
        .unwrap_or_default();
    let request = format!(
        "GET {BACKUP_PATH} HTTP/1.1\r\nHost: {host_port}\r\nAccept: application/octet-stream\r\n{authorization}User-Agent: landscaper-appliance-cli/{}\r\nConnection: close\r\n\r\n",
        env!("CARGO_PKG_VERSION")
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| http(e.to_string()))?;
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader
        .read_line(&mut status_line)
        .map_err(|e| http(e.to_string()))?;
    let code: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| http(format!("bad status line {status_line:?}")))?;
    let mut length = None;
    let mut chunked = false;
    let (mut revision, mut objects) = (0, 0);
    loop {
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .map_err(|e| http(e.to_string()))?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        match name.as_str() {
            "content-length" => length = value.parse::<u64>().ok(),
            "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
            REVISION_HEADER => revision = value.parse().unwrap_or(0),
            OBJECTS_HEADER => objects = value.parse().unwrap_or(0),
            _ => {}
        }
    }
    if code != 200 {
        let mut body = Vec::new();
        let _ = reader.take(1 << 20).read_to_end(&mut body);
        let message = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).trim().to_string());
        return Err(BackupError::Api {
            server: server.to_string(),
            code,
            message,
        });
    }
    let partial = partial_path(dest);
    let io = |step: &'static str, path: &Path| {
        let path = path.display().to_string();
        move |source| BackupError::Io { step, path, source }
    };
    let _ = std::fs::remove_file(&partial);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)
        .map_err(io("creating", &partial))?;
    let result = (|| {
        let mut sink = CountingWriter {
            inner: &mut file,
            progress: Progress::stderr(
                format!("downloading the snapshot ({objects} objects)"),
                length,
                Unit::Bytes,
            ),
        };
        let written = if chunked {
            copy_chunked(&mut reader, &mut sink).map_err(|e| http(e.to_string()))?
        } else if let Some(n) = length {
            let copied = std::io::copy(&mut (&mut reader).take(n), &mut sink)
                .map_err(|e| http(format!("reading the snapshot: {e}")))?;
            if copied != n {
                return Err(http(format!(
                    "the snapshot ended after {copied} of {n} bytes"
                )));
            }
            copied
        } else {
            std::io::copy(&mut reader, &mut sink)
                .map_err(|e| http(format!("reading the snapshot: {e}")))?
        };
        sink.progress.finish();
        drop(sink);
        file.sync_all().map_err(io("syncing", &partial))?;
        // A complete snapshot opens as a store of this format.
        let check = StoreFile::open(&partial).map_err(|source| BackupError::Store {
            step: "checking the downloaded snapshot",
            path: partial.display().to_string(),
            source: Box::new(source),
        })?;
        drop(check);
        std::fs::rename(&partial, dest).map_err(io("renaming the snapshot to", dest))?;
        Ok(written)
    })();
    let bytes = match result {
        Ok(bytes) => bytes,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    Ok(Snapshot {
        revision,
        objects,
        bytes,
        source: Source::Daemon(server.to_string()),
    })
}

fn copy_chunked(reader: &mut impl BufRead, out: &mut impl Write) -> std::io::Result<u64> {
    let bad = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
    let mut total = 0;
    loop {
        let mut size_line = String::new();
        reader.read_line(&mut size_line)?;
        let size = u64::from_str_radix(size_line.trim().split(';').next().unwrap_or(""), 16)
            .map_err(|_| bad(format!("bad chunk size {size_line:?}")))?;
        if size == 0 {
            return Ok(total);
        }
        let copied = std::io::copy(&mut reader.take(size), out)?;
        if copied != size {
            return Err(bad("the snapshot ended inside a chunk".into()));
        }
        total += copied;
        let mut crlf = [0u8; 2];
        reader.read_exact(&mut crlf)?;
    }
}

/// A private temporary folder (mode 0700) for snapshots that hold secrets; removed on drop.
#[derive(Debug)]
pub struct PrivateTempDir {
    path: PathBuf,
}

impl PrivateTempDir {
    /// A new folder in `parent`, or in the system's temporary folder.
    pub fn new(parent: Option<&Path>) -> Result<PrivateTempDir, BackupError> {
        let parent = parent
            .map(Path::to_path_buf)
            .unwrap_or_else(std::env::temp_dir);
        let path = parent.join(format!(
            ".landscaper-appliance-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|source| BackupError::Io {
                step: "creating the private temporary folder",
                path: path.display().to_string(),
                source,
            })?;
        Ok(PrivateTempDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// `backup FILE`.
pub fn backup(args: &BackupArgs, out: &mut impl Write) -> Result<(), BackupError> {
    let location = Location::resolve(&args.location, None, args.access.server.as_deref())?;
    let snapshot = take_snapshot(&location, args.access.token_file.as_deref(), &args.file)?;
    let _ = writeln!(
        out,
        "backup {}: revision {}, {} objects, {} bytes, from {}",
        args.file.display(),
        snapshot.revision,
        snapshot.objects,
        snapshot.bytes,
        snapshot.source
    );
    let _ = writeln!(
        out,
        "the file holds every Secret unredacted: keep it private (mode 0600)"
    );
    Ok(())
}

/// `restore FILE`.
pub fn restore(args: &RestoreArgs, out: &mut impl Write) -> Result<(), BackupError> {
    let location = Location::resolve(&args.location, None, None)?;
    let data = &location.config.data_dir;
    if !data.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(data)
            .map_err(|source| BackupError::Io {
                step: "creating the data folder",
                path: data.display().to_string(),
                source,
            })?;
    }
    let mut progress = Progress::stderr("restore", None, Unit::Bytes);
    progress.step(&format!(
        "checking {} and replacing {}",
        args.file.display(),
        location.store_path.display()
    ));
    let restored = landscaper_store::restore_file(&args.file, &location.store_path);
    progress.finish();
    let report = restored.map_err(|source| match source {
        StoreError::Open(OpenError::Locked { path }) => BackupError::DaemonRunning { path },
        source => BackupError::Store {
            step: "restoring",
            path: args.file.display().to_string(),
            source: Box::new(source),
        },
    })?;
    let counts: Vec<String> = report
        .counts
        .iter()
        .filter(|(kind, n)| *n > 0 && !matches!(kind, Kind::ManifestFile | Kind::TransportArchive))
        .map(|(kind, n)| format!("{}: {n}", kind.plural()))
        .collect();
    let _ = writeln!(
        out,
        "restored {} into {}: revision {}, {} objects ({})",
        args.file.display(),
        location.store_path.display(),
        report.snapshot.revision,
        report.snapshot.objects,
        if counts.is_empty() {
            "none".to_string()
        } else {
            counts.join(", ")
        }
    );
    if let Some(previous) = &report.previous {
        let _ = writeln!(out, "the previous store is kept as {}", previous.display());
    }
    if let Some(why) = &report.previous_unreadable {
        let _ = writeln!(
            out,
            "note: the previous store could not be opened ({why}); it was replaced all the same"
        );
    }
    let _ = writeln!(
        out,
        "start the daemon: it continues from this state and re-reads the manifests folder"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn decodes_chunked_snapshots() {
        let mut input: &[u8] = b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n";
        let mut out = Vec::new();
        assert_eq!(copy_chunked(&mut input, &mut out).unwrap(), 5);
        assert_eq!(out, b"abcde");
        let mut truncated: &[u8] = b"5\r\nab";
        assert!(copy_chunked(&mut truncated, &mut Vec::new()).is_err());
    }

    #[test]
    fn server_addresses_must_be_plain_http() {
        assert_eq!(
            host_port("http://127.0.0.1:8080/").unwrap(),
            "127.0.0.1:8080"
        );
        assert!(host_port("https://x:1").is_err());
        assert!(host_port("http://x:1/path").is_err());
    }

    #[test]
    fn refusals_carry_the_servers_message_and_leave_no_file() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let body =
                r#"{"kind":"Status","message":"Unauthorized: the bearer token is not valid"}"#;
            let _ = write!(
                s,
                "HTTP/1.1 401 Unauthorized\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        });
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("b.redb");
        let server = format!("http://{addr}");
        let stream = TcpStream::connect(addr).unwrap();
        let token = ApiToken::parse("t").unwrap();
        let err = download(
            Box::new(stream),
            &server,
            &addr.to_string(),
            Some(&token),
            &dest,
        )
        .unwrap_err();
        assert!(
            matches!(&err, BackupError::Api { code: 401, message, .. } if message.contains("not valid")),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn truncated_snapshots_are_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly a part");
        });
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("b.redb");
        let stream = TcpStream::connect(addr).unwrap();
        let err = download(
            Box::new(stream),
            &format!("http://{addr}"),
            &addr.to_string(),
            None,
            &dest,
        )
        .unwrap_err();
        assert!(err.to_string().contains("ended after"), "{err}");
        assert!(!dest.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn private_temp_dirs_are_0700_and_removed() {
        use std::os::unix::fs::PermissionsExt;
        let parent = tempfile::tempdir().unwrap();
        let dir = PrivateTempDir::new(Some(parent.path())).unwrap();
        let path = dir.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::write(path.join("x"), "secret").unwrap();
        drop(dir);
        assert!(!path.exists());
    }
}
