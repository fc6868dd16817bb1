//! The API's listeners besides plain loopback TCP:
//!
//! - a Unix socket in the data folder (mode 0660, so root and the service user's group):
//!   requests over it are authorised without a token ([`TrustedConnection`]);
//! - TLS on TCP (rustls), mandatory when the address is not loopback; there every request
//!   except the health probes needs the token ([`require_token`]).
//!
//! On TCP, the `Host` header must name this server ([`AllowedHosts`], [`check_host`]): a web
//! page a browser on the same machine loads could otherwise reach the loopback API under its
//! own domain name (DNS rebinding) and read what anonymous readers may read. Requests over the
//! Unix socket are not checked.

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream, UnixListener};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use super::status::ApiError;
use super::token::{ApiToken, Caller, TrustedConnection};

#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("TLS {field} {path}: {message}")]
    Tls {
        field: &'static str,
        path: String,
        message: String,
    },
}

/// Binds the Unix socket at `path` (a stale file from an earlier run is replaced: the store
/// lock already guarantees that no other daemon uses this data folder) with mode 0660.
pub fn bind_unix_socket(path: &Path) -> Result<UnixListener, ListenError> {
    let io = |what: &'static str| {
        let path = path.display().to_string();
        move |source| ListenError::Io { what, path, source }
    };
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io("removing the old socket")(e)),
    }
    let listener = UnixListener::bind(path).map_err(io("binding the socket"))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))
        .map_err(io("setting the socket's permissions"))?;
    Ok(listener)
}

/// Marks every request of a router as coming over the Unix socket.
pub fn trusted(router: axum::Router) -> axum::Router {
    router.layer(axum::Extension(TrustedConnection))
}

/// Loads a PEM certificate chain and private key into a rustls server configuration.
pub fn tls_config(
    cert_file: &Path,
    key_file: &Path,
) -> Result<Arc<rustls::ServerConfig>, ListenError> {
    let tls_error = |field, path: &Path, message: String| ListenError::Tls {
        field,
        path: path.display().to_string(),
        message,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_file)
        .map_err(|e| tls_error("certFile", cert_file, e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| tls_error("certFile", cert_file, e.to_string()))?;
    if certs.is_empty() {
        return Err(tls_error(
            "certFile",
            cert_file,
            "holds no PEM certificate".into(),
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key_file)
        .map_err(|e| tls_error("keyFile", key_file, e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error("certFile", cert_file, e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| tls_error("keyFile", key_file, e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// How long a client may take for its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A TCP listener that hands out TLS streams. Handshakes run concurrently in their own
/// tasks, so a slow client cannot hold up the others.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    acceptor_task: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    pub fn new(tcp: TcpListener, config: Arc<rustls::ServerConfig>) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let acceptor = TlsAcceptor::from(config);
        let (tx, ready) = mpsc::channel(64);
        let acceptor_task = tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::warn!(error = %e, "accepting a TLS connection failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, error = %e, "TLS handshake failed")
                        }
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener {
            ready,
            local,
            acceptor_task,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.acceptor_task.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The acceptor task never ends on its own; if it did, accept nothing more.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

/// The names the TCP listener answers to in the `Host` header (ports are ignored):
/// `localhost` and loopback IP addresses, the listen address (any IP address when it is the
/// unspecified address, e.g. `0.0.0.0`), the DNS names of the TLS certificate and the
/// configured `allowedHosts` (a leading `*.` matches any one label). A request without `Host`
/// (HTTP/1.0) passes: a browser always sends one.
#[derive(Clone, Debug, Default)]
pub struct AllowedHosts {
    names: Arc<Vec<String>>,
    any_ip: bool,
    listen_ip: Option<std::net::IpAddr>,
}

impl AllowedHosts {
    pub fn new(listen: SocketAddr, names: impl IntoIterator<Item = String>) -> Self {
        AllowedHosts {
            names: Arc::new(
                names
                    .into_iter()
                    .map(|n| normalise_host(&n).to_string())
                    .filter(|n| !n.is_empty())
                    .collect(),
            ),
            any_ip: listen.ip().is_unspecified(),
            listen_ip: Some(listen.ip()),
        }
    }

    /// Whether a `Host` header value (`name`, `name:port`, `[v6]:port`) is allowed.
    pub fn allows(&self, host: &str) -> bool {
        let name = normalise_host(strip_port(host));
        if name.is_empty() {
            return false;
        }
        if name == "localhost" {
            return true;
        }
        if let Ok(ip) = name.parse::<std::net::IpAddr>()
            && (ip.is_loopback() || self.any_ip || self.listen_ip == Some(ip))
        {
            return true;
        }
        self.names
            .iter()
            .any(|allowed| match allowed.strip_prefix("*.") {
                Some(suffix) => name
                    .strip_suffix(suffix)
                    .and_then(|head| head.strip_suffix('.'))
                    .is_some_and(|label| !label.is_empty() && !label.contains('.')),
                None => *allowed == name,
            })
    }
}

/// `host:port` -> `host`, `[::1]:port` and `[::1]` -> `::1`.
fn strip_port(host: &str) -> &str {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(ip, _)| ip);
    }
    match host.rsplit_once(':') {
        // A bare IPv6 address has more than one colon: no port to strip.
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            name
        }
        _ => host,
    }
}

/// Lower case, without a trailing dot (`localhost.` is `localhost`).
fn normalise_host(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Refuses (421) requests whose `Host` header names a server other than this one.
pub async fn check_host(allowed: AllowedHosts, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(axum::http::header::HOST)
        .map(|h| h.to_str().unwrap_or("\u{fffd}").to_string())
        .or_else(|| request.uri().authority().map(|a| a.to_string()));
    match host {
        Some(host) if !allowed.allows(&host) => {
            let shown: String = host.chars().take(100).collect();
            ApiError::misdirected(format!(
                "the Host header {shown:?} is not a name of this server: it answers to localhost, \
                 127.0.0.1, [::1], its listen address, the names of its TLS certificate and the \
                 allowedHosts of its configuration (a protection against DNS rebinding)"
            ))
            .into_response()
        }
        _ => next.run(request).await,
    }
}

/// The DNS names (subject alternative names) of the first certificate of a PEM file.
pub fn cert_dns_names(cert_file: &Path) -> Result<Vec<String>, ListenError> {
    let tls_error = |message: String| ListenError::Tls {
        field: "certFile",
        path: cert_file.display().to_string(),
        message,
    };
    let cert = CertificateDer::pem_file_iter(cert_file)
        .map_err(|e| tls_error(e.to_string()))?
        .next()
        .ok_or_else(|| tls_error("holds no PEM certificate".into()))?
        .map_err(|e| tls_error(e.to_string()))?;
    let parsed = webpki::EndEntityCert::try_from(&cert).map_err(|e| tls_error(e.to_string()))?;
    Ok(parsed.valid_dns_names().map(str::to_string).collect())
}

/// Paths that answer without a token everywhere (probes).
const OPEN_PATHS: [&str; 3] = ["/healthz", "/livez", "/readyz"];

/// Off loopback, every request but the probes needs the token (401 otherwise).
pub async fn require_token(token: Option<ApiToken>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let trusted = request.extensions().get::<TrustedConnection>().is_some();
    let caller = Caller::new(request.headers(), trusted);
    if OPEN_PATHS.contains(&path) || caller.is_authorised(token.as_ref()) {
        return next.run(request).await;
    }
    ApiError::unauthorized(
        "Unauthorized: this address is not loopback, so every request needs `Authorization: Bearer <token>` (the api-token file of the data folder)",
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_own_names_are_allowed_hosts() {
        let loopback = AllowedHosts::new(
            "127.0.0.1:8080".parse().unwrap(),
            [
                "appliance.example.com".to_string(),
                "*.apps.example.com".into(),
            ],
        );
        for ok in [
            "localhost",
            "localhost:8080",
            "LOCALHOST.",
            "127.0.0.1",
            "127.0.0.1:8080",
            "127.1.2.3:1",
            "[::1]",
            "[::1]:8080",
            "::1",
            "appliance.example.com:443",
            "Appliance.Example.com",
            "x.apps.example.com",
        ] {
            assert!(loopback.allows(ok), "{ok}");
        }
        for refused in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "10.0.0.1",
            "[::2]:8080",
            "",
            ":8080",
            "apps.example.com",
            "a.b.apps.example.com",
            "example.com",
        ] {
            assert!(!loopback.allows(refused), "{refused}");
        }
        // Listening on every interface: any IP address is this server's.
        let any = AllowedHosts::new("0.0.0.0:8443".parse().unwrap(), []);
        assert!(any.allows("10.0.0.1:8443"));
        assert!(!any.allows("evil.example"));
        let one = AllowedHosts::new("10.0.0.5:8443".parse().unwrap(), ["10.0.0.7".to_string()]);
        assert!(one.allows("10.0.0.5:8443"));
        assert!(one.allows("10.0.0.7:8443"));
        assert!(!one.allows("10.0.0.6:8443"));
    }
}
