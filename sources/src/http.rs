//! The one side effect of the remote sources: an HTTP(S) GET. [`HttpTransport`] is the seam;
//! [`HyperTransport`] is the real client (hyper + rustls with the system roots, plus a custom CA
//! per request), [`crate::testing::MemoryTransport`] the test one. Bodies are read up to a
//! limit; redirects are followed by [`get_following`] (the same code for both transports), and an
//! `Authorization` header never follows a redirect to another host.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// A GET request.
#[derive(Clone)]
pub struct HttpRequest {
    pub url: String,
    /// Header names in lower case. May hold credentials: never log them.
    pub headers: Vec<(String, String)>,
    /// Larger bodies fail with [`TransportError::TooLarge`].
    pub max_bytes: u64,
    pub timeout: Duration,
    /// Extra trusted CA certificates (PEM) for this request.
    pub ca_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HttpRequest")
            .field("url", &self.url)
            .field("headers", &names)
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

/// An answer (any status).
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why no answer came.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum TransportError {
    #[error("{0}")]
    Unreachable(String),
    #[error("timed out")]
    Timeout,
    #[error("body larger than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    #[error("TLS configuration: {0}")]
    Tls(String),
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Performs one GET (no redirects followed).
pub trait HttpTransport: Send + Sync {
    fn get(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, TransportError>>;

    /// Performs one request with another method (`HEAD`, `POST`, `PUT`, ...) and a body (the
    /// registry client's push side). Transports that only read refuse it.
    fn send(
        &self,
        method: &str,
        request: HttpRequest,
        body: Vec<u8>,
    ) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        let _ = (request, body);
        let method = method.to_string();
        Box::pin(async move {
            Err(TransportError::Unreachable(format!(
                "this transport cannot send {method} requests"
            )))
        })
    }
}

/// Follows up to 10 redirects (301, 302, 303, 307, 308). Drops `authorization` when the host
/// changes, as Go's and curl's clients do.
pub async fn get_following(
    transport: &dyn HttpTransport,
    mut request: HttpRequest,
) -> Result<HttpResponse, TransportError> {
    for _ in 0..10 {
        let response = transport.get(request.clone()).await?;
        if !matches!(response.status, 301 | 302 | 303 | 307 | 308) {
            return Ok(response);
        }
        let Some(location) = response.header("location") else {
            return Ok(response);
        };
        let next = resolve_url(&request.url, location)
            .ok_or_else(|| TransportError::InvalidUrl(format!("redirect to {location}")))?;
        if authority(&next) != authority(&request.url) {
            request.headers.retain(|(n, _)| n != "authorization");
        }
        request.url = next;
    }
    Err(TransportError::Unreachable(format!(
        "too many redirects from {}",
        request.url
    )))
}

/// Splits the userinfo off a URL: `https://user:pass@host/x` becomes `https://host/x` and the
/// percent-decoded `(user, pass)` (Go's client turns it into Basic auth; it never belongs in a
/// message, a log or a cache key).
pub fn split_userinfo(url: &str) -> (String, Option<(String, String)>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_string(), None);
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..end].rfind('@') else {
        return (url.to_string(), None);
    };
    let userinfo = &rest[..at];
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    (
        format!("{scheme}://{}", &rest[at + 1..]),
        Some((percent_decode(user), percent_decode(password))),
    )
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 3 <= bytes.len()
            && let Ok(hex) = std::str::from_utf8(&bytes[i + 1..i + 3])
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `scheme://authority` of an absolute URL.
pub fn authority(url: &str) -> Option<&str> {
    let (scheme, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some(&url[..scheme.len() + 3 + end])
}

/// Resolves `reference` against the absolute URL `base` (RFC 3986 section 5.2, as Go's
/// `url.Parse(base).Parse(ref)` does for the URLs charts use).
pub fn resolve_url(base: &str, reference: &str) -> Option<String> {
    let reference = reference.trim();
    if let Some((scheme, _)) = reference.split_once("://")
        && !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return Some(reference.to_string());
    }
    let origin = authority(base)?;
    let scheme = &base[..base.find("://")?];
    if let Some(rest) = reference.strip_prefix("//") {
        return Some(format!("{scheme}://{rest}"));
    }
    let base_path_and_more = &base[origin.len()..];
    let base_path = base_path_and_more
        .split(['?', '#'])
        .next()
        .unwrap_or_default();
    let (ref_path, ref_suffix) = match reference.find(['?', '#']) {
        Some(i) => (&reference[..i], &reference[i..]),
        None => (reference, ""),
    };
    let merged = if ref_path.starts_with('/') {
        ref_path.to_string()
    } else if ref_path.is_empty() {
        base_path.to_string()
    } else {
        let dir = match base_path.rfind('/') {
            Some(i) => &base_path[..=i],
            None => "/",
        };
        format!("{dir}{ref_path}")
    };
    Some(format!(
        "{origin}{}{ref_suffix}",
        remove_dot_segments(&merged)
    ))
}

fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len().saturating_sub(1);
    for (i, seg) in segments.iter().enumerate() {
        match *seg {
            "." => {
                if i == last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if i == last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let joined = out.join("/");
    if joined.starts_with('/') {
        joined
    } else {
        format!("/{joined}")
    }
}

/// The real client.
pub struct HyperTransport {
    client: Client<
        hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
        Full<Bytes>,
    >,
    roots: rustls::RootCertStore,
}

impl HyperTransport {
    /// A client trusting the system's roots (an empty set when none can be loaded: then only
    /// plain HTTP and custom CAs work).
    pub fn new() -> Self {
        let mut roots = rustls::RootCertStore::empty();
        let loaded = rustls_native_certs_load();
        for cert in loaded {
            let _ = roots.add(cert);
        }
        let client = build_client(roots.clone());
        HyperTransport { client, roots }
    }
}

impl Default for HyperTransport {
    fn default() -> Self {
        Self::new()
    }
}

fn rustls_native_certs_load() -> Vec<rustls::pki_types::CertificateDer<'static>> {
    rustls_native_certs::load_native_certs().certs
}

fn build_client(
    roots: rustls::RootCertStore,
) -> Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
> {
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map(|b| {
        b.with_root_certificates(roots.clone())
            .with_no_client_auth()
    })
    .unwrap_or_else(|_| {
        rustls::ClientConfig::builder_with_protocol_versions(rustls::DEFAULT_VERSIONS)
            .with_root_certificates(roots)
            .with_no_client_auth()
    });
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_http1()
        .build();
    Client::builder(TokioExecutor::new()).build(connector)
}

impl HttpTransport for HyperTransport {
    fn get(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        Box::pin(self.perform(hyper::Method::GET, request, Vec::new()))
    }

    fn send(
        &self,
        method: &str,
        request: HttpRequest,
        body: Vec<u8>,
    ) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        let method = hyper::Method::from_bytes(method.as_bytes());
        Box::pin(async move {
            let method =
                method.map_err(|e| TransportError::InvalidUrl(format!("HTTP method: {e}")))?;
            self.perform(method, request, body).await
        })
    }
}

impl HyperTransport {
    async fn perform(
        &self,
        method: hyper::Method,
        request: HttpRequest,
        body: Vec<u8>,
    ) -> Result<HttpResponse, TransportError> {
        let is_head = method == hyper::Method::HEAD;
        {
            let custom;
            let client = match &request.ca_pem {
                None => &self.client,
                Some(pem) => {
                    let mut roots = self.roots.clone();
                    let mut added = 0;
                    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(pem) {
                        let cert: rustls::pki_types::CertificateDer<'static> =
                            cert.map_err(|e| TransportError::Tls(format!("custom CA: {e}")))?;
                        roots
                            .add(cert)
                            .map_err(|e| TransportError::Tls(format!("custom CA: {e}")))?;
                        added += 1;
                    }
                    if added == 0 {
                        return Err(TransportError::Tls(
                            "custom CA holds no PEM certificate".into(),
                        ));
                    }
                    custom = build_client(roots);
                    &custom
                }
            };
            let uri: hyper::Uri = request
                .url
                .parse()
                .map_err(|e| TransportError::InvalidUrl(format!("{}: {e}", request.url)))?;
            let mut builder = hyper::Request::builder()
                .method(method)
                .uri(uri)
                .header("user-agent", "landscaper");
            for (name, value) in &request.headers {
                builder = builder.header(name.as_str(), value.as_str());
            }
            let req = builder
                .body(Full::new(Bytes::from(body)))
                .map_err(|e| TransportError::InvalidUrl(e.to_string()))?;
            let work = async {
                let response = client.request(req).await.map_err(|e| {
                    let chain = error_chain(&e);
                    // A certificate the client does not trust is a configuration problem
                    // (customCAData), not an outage.
                    if chain.contains("invalid peer certificate") {
                        TransportError::Tls(chain)
                    } else {
                        TransportError::Unreachable(chain)
                    }
                })?;
                let status = response.status().as_u16();
                let headers: Vec<(String, String)> = response
                    .headers()
                    .iter()
                    .filter_map(|(n, v)| {
                        v.to_str()
                            .ok()
                            .map(|v| (n.as_str().to_ascii_lowercase(), v.to_string()))
                    })
                    .collect();
                if let Some(length) = response
                    .headers()
                    .get("content-length")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok())
                    && length > request.max_bytes
                    && !is_head
                {
                    return Err(TransportError::TooLarge {
                        limit: request.max_bytes,
                    });
                }
                let mut body_stream = response.into_body();
                let mut body = Vec::new();
                while let Some(frame) = body_stream.frame().await {
                    let frame = frame.map_err(|e| TransportError::Unreachable(error_chain(&e)))?;
                    if let Ok(data) = frame.into_data() {
                        if body.len() as u64 + data.len() as u64 > request.max_bytes {
                            return Err(TransportError::TooLarge {
                                limit: request.max_bytes,
                            });
                        }
                        body.extend_from_slice(&data);
                    }
                }
                Ok(HttpResponse {
                    status,
                    headers,
                    body,
                })
            };
            match tokio::time::timeout(request.timeout, work).await {
                Ok(result) => result,
                Err(_) => Err(TransportError::Timeout),
            }
        }
    }
}

fn error_chain(err: &dyn std::error::Error) -> String {
    landscaper_model::errors::chain_of(
        std::iter::successors(Some(err), |e| e.source()).map(ToString::to_string),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_chart_urls_resolve_as_go_does() {
        let base = "https://charts.example.com/repo/index.yaml";
        assert_eq!(
            resolve_url(base, "app-1.0.0.tgz").as_deref(),
            Some("https://charts.example.com/repo/app-1.0.0.tgz")
        );
        assert_eq!(
            resolve_url(base, "/other/app.tgz").as_deref(),
            Some("https://charts.example.com/other/app.tgz")
        );
        assert_eq!(
            resolve_url(base, "../x/app.tgz").as_deref(),
            Some("https://charts.example.com/x/app.tgz")
        );
        assert_eq!(
            resolve_url(base, "charts/./app.tgz?sig=1").as_deref(),
            Some("https://charts.example.com/repo/charts/app.tgz?sig=1")
        );
        assert_eq!(
            resolve_url(base, "https://cdn.example.org/app.tgz").as_deref(),
            Some("https://cdn.example.org/app.tgz")
        );
        assert_eq!(
            resolve_url(base, "//cdn.example.org/app.tgz").as_deref(),
            Some("https://cdn.example.org/app.tgz")
        );
        assert_eq!(
            resolve_url("http://127.0.0.1:8080", "a.tgz").as_deref(),
            Some("http://127.0.0.1:8080/a.tgz")
        );
    }

    #[test]
    fn userinfo_is_split_off() {
        assert_eq!(
            split_userinfo("https://user:p%40ss@host.example/charts/a.tgz"),
            (
                "https://host.example/charts/a.tgz".to_string(),
                Some(("user".to_string(), "p@ss".to_string()))
            )
        );
        assert_eq!(
            split_userinfo("https://host.example/a@b.tgz"),
            ("https://host.example/a@b.tgz".to_string(), None)
        );
        assert_eq!(split_userinfo("no-scheme"), ("no-scheme".to_string(), None));
        assert_eq!(
            split_userinfo("http://u@h/%zz").1,
            Some(("u".into(), "".into()))
        );
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("%é1"), "%é1");
    }

    #[test]
    fn authority_of_urls() {
        assert_eq!(
            authority("https://a.example:8443/x?y"),
            Some("https://a.example:8443")
        );
        assert_eq!(authority("http://h"), Some("http://h"));
        assert_eq!(authority("no-scheme"), None);
    }
}
