//! A general OCI distribution client (read side): references, manifests, blobs, and registry
//! authentication (anonymous, Basic, and the Bearer token flow) from `kubernetes.io/dockerconfigjson`
//! pull secrets. Charts use it with Helm's media types; component versions (issue 18) can use it
//! for theirs. Registries on loopback addresses are spoken to over plain HTTP (as
//! `helm --plain-http` and Docker's default insecure `127.0.0.0/8`); all others over HTTPS.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;

use crate::archive::{sha256_digest, valid_sha256_digest};
use crate::error::SourceError;
use crate::http::{HttpRequest, HttpResponse, HttpTransport, TransportError, get_following};

/// Helm's chart config media type.
pub const HELM_CONFIG_MEDIA_TYPE: &str = "application/vnd.cncf.helm.config.v1+json";
/// Helm's chart content layer media type.
pub const HELM_CHART_LAYER_MEDIA_TYPE: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// The legacy (Helm 3.0–3.7 experimental) chart layer media type.
pub const HELM_LEGACY_CHART_LAYER_MEDIA_TYPE: &str = "application/tar+gzip";
pub const OCI_MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
pub const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Manifests are small; this bounds them.
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;

/// `host[:port]/repository[:tag][@digest]`, with an optional `oci://` prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The registry host as written (`docker.io` for Docker Hub).
    pub registry: String,
    pub repository: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl Reference {
    pub fn parse(text: &str) -> Result<Reference, SourceError> {
        let invalid =
            |why: &str| SourceError::InvalidSpec(format!("OCI reference {text:?}: {why}"));
        let rest = text.trim();
        let rest = rest.strip_prefix("oci://").unwrap_or(rest);
        if rest.is_empty() {
            return Err(invalid("empty"));
        }
        let (name, digest) = match rest.split_once('@') {
            Some((name, digest)) => {
                if !valid_sha256_digest(digest) {
                    return Err(invalid("the digest must be sha256:<64 hex digits>"));
                }
                (name, Some(digest.to_string()))
            }
            None => (rest, None),
        };
        // A tag is after the last ':' that follows the last '/'.
        let last_slash = name.rfind('/');
        let (name, tag) = match name.rfind(':') {
            Some(i) if last_slash.is_none_or(|s| i > s) => {
                (&name[..i], Some(name[i + 1..].to_string()))
            }
            _ => (name, None),
        };
        if let Some(tag) = &tag
            && (tag.is_empty()
                || tag.len() > 128
                || !tag
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')))
        {
            return Err(invalid("invalid tag"));
        }
        let (registry, repository) = match name.split_once('/') {
            Some((first, rest))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (first.to_string(), rest.to_string())
            }
            _ => ("docker.io".to_string(), name.to_string()),
        };
        let repository = if registry == "docker.io" && !repository.contains('/') {
            format!("library/{repository}")
        } else {
            repository
        };
        if repository.is_empty()
            || !repository.split('/').all(|c| {
                !c.is_empty()
                    && c.bytes().all(|b| {
                        b.is_ascii_lowercase()
                            || b.is_ascii_digit()
                            || matches!(b, b'.' | b'_' | b'-')
                    })
            })
        {
            return Err(invalid("invalid repository name"));
        }
        if tag.is_none() && digest.is_none() {
            // As Landscaper (ocm's helm access): a chart reference needs a version.
            return Err(invalid("no tag or digest specified"));
        }
        Ok(Reference {
            registry,
            repository,
            tag,
            digest,
        })
    }

    /// The host the API is served on (Docker Hub's API host for `docker.io`).
    pub fn api_host(&self) -> &str {
        if self.registry == "docker.io" {
            "registry-1.docker.io"
        } else {
            &self.registry
        }
    }

    /// `http` for loopback registries, `https` otherwise.
    pub fn scheme(&self) -> &'static str {
        if is_loopback_host(&self.registry) {
            "http"
        } else {
            "https"
        }
    }

    /// `registry/repository` (no tag, no digest).
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name())?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// `localhost`, `127.x.x.x` and `[::1]`, with or without a port.
pub fn is_loopback_host(host_port: &str) -> bool {
    let host = if let Some(rest) = host_port.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    host == "localhost"
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A Secret as read from the store: its name, type and decoded data.
#[derive(Clone, Default, PartialEq)]
pub struct SecretData {
    pub name: String,
    pub secret_type: String,
    pub data: BTreeMap<String, Vec<u8>>,
}

impl std::fmt::Debug for SecretData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretData")
            .field("name", &self.name)
            .field("type", &self.secret_type)
            .field("keys", &self.data.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Username and password for a registry (never printed).
#[derive(Clone, PartialEq, Eq)]
pub struct BasicCredentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for BasicCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BasicCredentials(<redacted>)")
    }
}

impl BasicCredentials {
    fn header(&self) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD
                .encode(format!("{}:{}", self.username, self.password))
        )
    }
}

#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, DockerAuth>,
}

#[derive(Deserialize)]
struct DockerAuth {
    #[serde(default)]
    auth: String,
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

/// The host of a `.dockerconfigjson` key (`https://index.docker.io/v1/` → `docker.io`).
fn docker_config_host(key: &str) -> String {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = key
        .split('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => {
            "docker.io".to_string()
        }
        _ => host,
    }
}

/// The credentials for `registry` from the pull secrets of type `kubernetes.io/dockerconfigjson`
/// (the first secret that has the host wins, as Landscaper adds them in order).
pub fn registry_credentials(
    secrets: &[SecretData],
    registry: &str,
) -> Result<Option<BasicCredentials>, SourceError> {
    let wanted = registry.to_ascii_lowercase();
    for secret in secrets {
        if secret.secret_type != "kubernetes.io/dockerconfigjson" {
            continue;
        }
        let Some(raw) = secret.data.get(".dockerconfigjson") else {
            continue;
        };
        let config: DockerConfig =
            serde_json::from_slice(raw).map_err(|e| SourceError::Credentials {
                what: format!("registryPullSecrets {}", secret.name),
                detail: format!(".dockerconfigjson cannot be parsed: {}", e.classify_text()),
            })?;
        for (key, auth) in config.auths {
            if docker_config_host(&key) != wanted {
                continue;
            }
            if !auth.username.is_empty() || !auth.password.is_empty() {
                return Ok(Some(BasicCredentials {
                    username: auth.username,
                    password: auth.password,
                }));
            }
            if !auth.auth.is_empty() {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(auth.auth.trim())
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .and_then(|s| {
                        s.split_once(':')
                            .map(|(u, p)| (u.to_string(), p.to_string()))
                    })
                    .ok_or_else(|| SourceError::Credentials {
                        what: format!("registryPullSecrets {}", secret.name),
                        detail: format!("the auth of {key} is not base64 of user:password"),
                    })?;
                return Ok(Some(BasicCredentials {
                    username: decoded.0,
                    password: decoded.1,
                }));
            }
        }
    }
    Ok(None)
}

trait ClassifyText {
    fn classify_text(&self) -> String;
}

impl ClassifyText for serde_json::Error {
    /// The error's position, without echoing the (secret) input.
    fn classify_text(&self) -> String {
        format!(
            "{:?} error at line {} column {}",
            self.classify(),
            self.line(),
            self.column()
        )
    }
}

/// An OCI descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    #[serde(default)]
    pub media_type: String,
    pub digest: String,
    #[serde(default)]
    pub size: u64,
}

/// An image manifest (OCI or Docker v2 schema 2).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    #[serde(default)]
    pub media_type: Option<String>,
    pub config: Descriptor,
    #[serde(default)]
    pub layers: Vec<Descriptor>,
}

/// A manifest with its digest (the sha256 of its bytes).
#[derive(Debug, Clone)]
pub struct FetchedManifest {
    pub digest: String,
    pub manifest: Manifest,
    pub bytes: Vec<u8>,
}

/// A manifest or index as fetched: digest (sha256 of the bytes), `Content-Type`, bytes.
#[derive(Debug, Clone)]
pub struct RawManifest {
    pub digest: String,
    pub media_type: String,
    pub bytes: Vec<u8>,
}

/// Limits of one registry conversation.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_blob_bytes: u64,
    /// Time allowed for one request.
    pub timeout: Duration,
    /// No request runs past this instant.
    pub deadline: Option<tokio::time::Instant>,
}

impl Limits {
    /// The time the next request may take.
    pub fn request_timeout(&self, what: &str) -> Result<Duration, SourceError> {
        let Some(deadline) = self.deadline else {
            return Ok(self.timeout);
        };
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return Err(SourceError::Timeout {
                what: what.to_string(),
                seconds: 0,
            });
        }
        Ok(left.min(self.timeout))
    }
}

/// One conversation with one repository of a registry: it keeps the authorization it
/// negotiated (a Bearer token or Basic) for its following requests.
pub struct RegistrySession<'a> {
    transport: &'a dyn HttpTransport,
    reference: Reference,
    credentials: Option<BasicCredentials>,
    authorization: Option<String>,
    limits: Limits,
    plain_http: bool,
    ca_pem: Option<Vec<u8>>,
}

#[derive(Debug, PartialEq, Eq)]
struct Challenge {
    scheme: String,
    params: BTreeMap<String, String>,
}

/// Parses `WWW-Authenticate: Bearer realm="…",service="…",scope="…"`.
fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
    let mut params = BTreeMap::new();
    let mut rest = rest.trim();
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let key = key.trim().to_ascii_lowercase();
        let after = after.trim_start();
        let (value, remaining) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"')?;
            (&quoted[..end], &quoted[end + 1..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        params.insert(key, value.to_string());
        rest = remaining.trim_start().trim_start_matches(',').trim_start();
    }
    Some(Challenge {
        scheme: scheme.to_ascii_lowercase(),
        params,
    })
}

#[derive(Deserialize)]
struct TokenAnswer {
    #[serde(default)]
    token: String,
    #[serde(default)]
    access_token: String,
}

pub(crate) fn transport_error(what: &str, err: TransportError, timeout: Duration) -> SourceError {
    match err {
        TransportError::Unreachable(detail) => SourceError::Unreachable {
            what: what.to_string(),
            detail,
        },
        TransportError::Timeout => SourceError::Timeout {
            what: what.to_string(),
            seconds: timeout.as_secs(),
        },
        TransportError::TooLarge { limit } => SourceError::TooLarge {
            what: what.to_string(),
            limit,
        },
        TransportError::InvalidUrl(detail) => SourceError::InvalidSpec(format!("{what}: {detail}")),
        TransportError::Tls(detail) => SourceError::Tls {
            what: what.to_string(),
            detail,
        },
    }
}

/// Turns a non-2xx status into the error Landscaper would report.
pub(crate) fn status_error(
    what: &str,
    status: u16,
    had_credentials: bool,
    body: &[u8],
) -> SourceError {
    match status {
        401 | 403 => SourceError::AuthRefused {
            what: what.to_string(),
            status,
            had_credentials,
        },
        404 => SourceError::NotFound {
            what: what.to_string(),
            detail: short_body(body),
        },
        429 | 500..=599 => SourceError::ServerError {
            what: what.to_string(),
            status,
        },
        _ => SourceError::HttpStatus {
            what: what.to_string(),
            status,
        },
    }
}

fn short_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
    let text = text.trim();
    if text.is_empty() {
        "HTTP 404".to_string()
    } else {
        format!("HTTP 404: {text}")
    }
}

impl<'a> RegistrySession<'a> {
    /// A 2xx answer, or the status error naming `what` (and whether credentials were sent).
    fn require_success(&self, what: &str, response: &HttpResponse) -> Result<(), SourceError> {
        if (200..300).contains(&response.status) {
            return Ok(());
        }
        Err(status_error(
            what,
            response.status,
            self.credentials.is_some(),
            &response.body,
        ))
    }

    pub fn new(
        transport: &'a dyn HttpTransport,
        reference: Reference,
        credentials: Option<BasicCredentials>,
        limits: Limits,
    ) -> Self {
        RegistrySession {
            transport,
            reference,
            credentials,
            authorization: None,
            limits,
            plain_http: false,
            ca_pem: None,
        }
    }

    /// Extra trusted CA certificates (PEM) for this registry.
    pub fn with_ca_pem(mut self, ca_pem: Option<Vec<u8>>) -> Self {
        self.ca_pem = ca_pem;
        self
    }

    /// Plain HTTP also for a registry that is not on loopback (an explicit `insecure`
    /// setting); loopback registries always use plain HTTP.
    pub fn with_plain_http(mut self, plain_http: bool) -> Self {
        self.plain_http = plain_http;
        self
    }

    pub fn reference(&self) -> &Reference {
        &self.reference
    }

    /// `http` with the explicit plain-HTTP setting; `https` when a custom CA is trusted (one
    /// trusts a CA to talk TLS, also to a loopback registry); else the reference's default
    /// (plain HTTP on loopback only).
    fn scheme(&self) -> &'static str {
        if self.plain_http {
            "http"
        } else if self.ca_pem.is_some() {
            "https"
        } else {
            self.reference.scheme()
        }
    }

    fn base_url(&self) -> String {
        let scheme = self.scheme();
        format!(
            "{scheme}://{}/v2/{}",
            self.reference.api_host(),
            self.reference.repository
        )
    }

    async fn send(
        &self,
        what: &str,
        url: &str,
        accept: Option<&str>,
        authorization: Option<&str>,
        max_bytes: u64,
    ) -> Result<HttpResponse, SourceError> {
        self.send_with(what, "GET", url, accept, authorization, max_bytes, None)
            .await
    }

    /// One request; `upload` = (content type, body) for the push side.
    #[allow(clippy::too_many_arguments)]
    async fn send_with(
        &self,
        what: &str,
        method: &str,
        url: &str,
        accept: Option<&str>,
        authorization: Option<&str>,
        max_bytes: u64,
        upload: Option<(&str, &[u8])>,
    ) -> Result<HttpResponse, SourceError> {
        let timeout = self.limits.request_timeout(what)?;
        let mut headers = Vec::new();
        if let Some(accept) = accept {
            headers.push(("accept".to_string(), accept.to_string()));
        }
        if let Some(auth) = authorization {
            headers.push(("authorization".to_string(), auth.to_string()));
        }
        let request = HttpRequest {
            url: url.to_string(),
            headers,
            max_bytes,
            timeout,
            ca_pem: self.ca_pem.clone(),
        };
        let result = if method == "GET" {
            get_following(self.transport, request).await
        } else {
            let mut request = request;
            let body = match upload {
                Some((content_type, body)) => {
                    request
                        .headers
                        .push(("content-type".to_string(), content_type.to_string()));
                    body.to_vec()
                }
                None => Vec::new(),
            };
            self.transport.send(method, request, body).await
        };
        result.map_err(|e| transport_error(what, e, timeout))
    }

    /// A request with the negotiated authorization; on a 401 negotiates once and retries.
    async fn request(
        &mut self,
        what: &str,
        method: &str,
        url: &str,
        accept: Option<&str>,
        max_bytes: u64,
        upload: Option<(&str, &[u8])>,
    ) -> Result<HttpResponse, SourceError> {
        let response = self
            .send_with(
                what,
                method,
                url,
                accept,
                self.authorization.as_deref(),
                max_bytes,
                upload,
            )
            .await?;
        if response.status != 401 {
            return Ok(response);
        }
        self.negotiate(what, &response).await?;
        self.send_with(
            what,
            method,
            url,
            accept,
            self.authorization.as_deref(),
            max_bytes,
            upload,
        )
        .await
    }

    async fn negotiate(&mut self, what: &str, response: &HttpResponse) -> Result<(), SourceError> {
        let challenge = response
            .header("www-authenticate")
            .and_then(parse_challenge);
        let authorization = match challenge {
            Some(c) if c.scheme == "bearer" => Some(self.bearer_token(what, &c).await?),
            Some(c) if c.scheme == "basic" => {
                self.credentials.as_ref().map(BasicCredentials::header)
            }
            _ => None,
        };
        let Some(authorization) = authorization else {
            return Err(status_error(what, 401, self.credentials.is_some(), &[]));
        };
        self.authorization = Some(authorization);
        Ok(())
    }

    /// GET with the negotiated authorization; on a 401 negotiates (Basic or Bearer) once and
    /// retries.
    async fn get(
        &mut self,
        what: &str,
        url: &str,
        accept: Option<&str>,
        max_bytes: u64,
    ) -> Result<HttpResponse, SourceError> {
        self.request(what, "GET", url, accept, max_bytes, None)
            .await
    }

    async fn bearer_token(&self, what: &str, challenge: &Challenge) -> Result<String, SourceError> {
        let Some(realm) = challenge.params.get("realm") else {
            return Err(SourceError::InvalidResponse {
                what: what.to_string(),
                detail: "Bearer challenge without realm".into(),
            });
        };
        let scope = challenge
            .params
            .get("scope")
            .cloned()
            .unwrap_or_else(|| format!("repository:{}:pull", self.reference.repository));
        let mut url = realm.clone();
        let mut sep = if url.contains('?') { '&' } else { '?' };
        if let Some(service) = challenge.params.get("service") {
            url.push_str(&format!("{sep}service={}", query_escape(service)));
            sep = '&';
        }
        url.push_str(&format!("{sep}scope={}", query_escape(&scope)));
        let auth = self.credentials.as_ref().map(BasicCredentials::header);
        let token_what = format!("{what} (token from {realm})");
        let response = self
            .send(&token_what, &url, None, auth.as_deref(), 1 << 20)
            .await?;
        self.require_success(&token_what, &response)?;
        let answer: TokenAnswer =
            serde_json::from_slice(&response.body).map_err(|e| SourceError::InvalidResponse {
                what: token_what.clone(),
                detail: format!("token answer cannot be parsed: {}", e.classify_text()),
            })?;
        let token = if answer.token.is_empty() {
            answer.access_token
        } else {
            answer.token
        };
        if token.is_empty() {
            return Err(SourceError::InvalidResponse {
                what: token_what,
                detail: "token answer without token".into(),
            });
        }
        Ok(format!("Bearer {token}"))
    }

    /// The manifest for `reference` (a tag or a digest), its digest verified when asked by
    /// digest.
    pub async fn manifest(&mut self, reference: &str) -> Result<FetchedManifest, SourceError> {
        let what = format!("{}:{reference}", self.reference.name()).replace(":sha256:", "@sha256:");
        let accept = format!("{OCI_MANIFEST_MEDIA_TYPE}, {DOCKER_MANIFEST_MEDIA_TYPE}");
        let raw = self.manifest_bytes(reference, &accept).await?;
        let manifest: Manifest =
            serde_json::from_slice(&raw.bytes).map_err(|e| SourceError::InvalidResponse {
                what: what.clone(),
                detail: format!("manifest cannot be parsed: {e}"),
            })?;
        Ok(FetchedManifest {
            digest: raw.digest,
            manifest,
            bytes: raw.bytes,
        })
    }

    /// The raw manifest or index for `reference` (a tag or a digest) with the accepted media
    /// types `accept`, its digest verified when asked by digest.
    pub async fn manifest_bytes(
        &mut self,
        reference: &str,
        accept: &str,
    ) -> Result<RawManifest, SourceError> {
        let what = format!("{}:{reference}", self.reference.name()).replace(":sha256:", "@sha256:");
        let url = format!("{}/manifests/{reference}", self.base_url());
        let response = self
            .get(&what, &url, Some(accept), MAX_MANIFEST_BYTES)
            .await?;
        self.require_success(&what, &response)?;
        let digest = sha256_digest(&response.body);
        if reference.starts_with("sha256:") && digest != reference {
            return Err(SourceError::DigestMismatch {
                what,
                expected: reference.to_string(),
                actual: digest,
            });
        }
        Ok(RawManifest {
            digest,
            media_type: response
                .header("content-type")
                .unwrap_or_default()
                .to_string(),
            bytes: response.body,
        })
    }

    /// Checks that the registry answers the API (`GET /v2/`): 200, or 401 with a usable
    /// challenge for which the credentials (if any) are accepted.
    pub async fn ping(&mut self) -> Result<(), SourceError> {
        let scheme = self.scheme();
        let url = format!("{scheme}://{}/v2/", self.reference.api_host());
        let what = format!("{} (API check)", self.reference.registry);
        let response = self.get(&what, &url, None, 1 << 20).await?;
        if (200..300).contains(&response.status) {
            return Ok(());
        }
        Err(status_error(
            &what,
            response.status,
            self.credentials.is_some(),
            &response.body,
        ))
    }

    /// Uploads a blob (monolithic: POST an upload session, PUT the bytes) unless the
    /// registry has it; returns its digest.
    pub async fn push_blob(&mut self, bytes: &[u8]) -> Result<String, SourceError> {
        let digest = sha256_digest(bytes);
        let what = format!("{}@{digest} (upload)", self.reference.name());
        let head_url = format!("{}/blobs/{digest}", self.base_url());
        let head = self
            .request(&what, "HEAD", &head_url, None, 1 << 20, None)
            .await?;
        if (200..300).contains(&head.status) {
            return Ok(digest);
        }
        let url = format!("{}/blobs/uploads/", self.base_url());
        let started = self
            .request(&what, "POST", &url, None, 1 << 20, None)
            .await?;
        if started.status != 202 {
            return Err(status_error(
                &what,
                started.status,
                self.credentials.is_some(),
                &started.body,
            ));
        }
        let location = started
            .header("location")
            .ok_or_else(|| SourceError::InvalidResponse {
                what: what.clone(),
                detail: "upload session without Location".into(),
            })?;
        let location = crate::http::resolve_url(&url, location).ok_or_else(|| {
            SourceError::InvalidResponse {
                what: what.clone(),
                detail: format!("invalid upload Location {location:?}"),
            }
        })?;
        let sep = if location.contains('?') { '&' } else { '?' };
        let put_url = format!("{location}{sep}digest={}", query_escape(&digest));
        let done = self
            .request(
                &what,
                "PUT",
                &put_url,
                None,
                1 << 20,
                Some(("application/octet-stream", bytes)),
            )
            .await?;
        self.require_success(&what, &done)?;
        Ok(digest)
    }

    /// Puts a manifest (or index) under `reference` (a tag or its digest); returns its digest.
    pub async fn put_manifest(
        &mut self,
        reference: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<String, SourceError> {
        let digest = sha256_digest(bytes);
        let what = format!("{}:{reference} (upload)", self.reference.name());
        let url = format!("{}/manifests/{reference}", self.base_url());
        let response = self
            .request(&what, "PUT", &url, None, 1 << 20, Some((media_type, bytes)))
            .await?;
        self.require_success(&what, &response)?;
        Ok(digest)
    }

    /// The blob with this digest, verified, at most `max_blob_bytes`.
    pub async fn blob(&mut self, descriptor: &Descriptor) -> Result<Vec<u8>, SourceError> {
        let what = format!("{}@{}", self.reference.name(), descriptor.digest);
        if !valid_sha256_digest(&descriptor.digest) {
            return Err(SourceError::InvalidResponse {
                what,
                detail: "unsupported digest (only sha256 is)".into(),
            });
        }
        if descriptor.size > self.limits.max_blob_bytes {
            return Err(SourceError::TooLarge {
                what,
                limit: self.limits.max_blob_bytes,
            });
        }
        let url = format!("{}/blobs/{}", self.base_url(), descriptor.digest);
        let response = self
            .get(&what, &url, None, self.limits.max_blob_bytes)
            .await?;
        self.require_success(&what, &response)?;
        let actual = sha256_digest(&response.body);
        if actual != descriptor.digest {
            return Err(SourceError::DigestMismatch {
                what,
                expected: descriptor.digest.clone(),
                actual,
            });
        }
        Ok(response.body)
    }
}

fn query_escape(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The chart layer of a Helm chart manifest.
pub fn helm_chart_layer<'m>(
    what: &str,
    manifest: &'m Manifest,
) -> Result<&'m Descriptor, SourceError> {
    if manifest.config.media_type != HELM_CONFIG_MEDIA_TYPE {
        return Err(SourceError::InvalidResponse {
            what: what.to_string(),
            detail: format!(
                "not a Helm chart: config media type {:?} (expected {HELM_CONFIG_MEDIA_TYPE})",
                manifest.config.media_type
            ),
        });
    }
    let mut layers = manifest.layers.iter().filter(|l| {
        l.media_type == HELM_CHART_LAYER_MEDIA_TYPE
            || l.media_type == HELM_LEGACY_CHART_LAYER_MEDIA_TYPE
    });
    match (layers.next(), layers.next()) {
        (Some(layer), None) => Ok(layer),
        (None, _) => Err(SourceError::InvalidResponse {
            what: what.to_string(),
            detail: format!("the manifest has no {HELM_CHART_LAYER_MEDIA_TYPE} layer"),
        }),
        (Some(_), Some(_)) => Err(SourceError::InvalidResponse {
            what: what.to_string(),
            detail: "the manifest has more than one chart layer".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse() {
        let r = Reference::parse("oci://127.0.0.1:5000/charts/app:1.2.3").expect("parses");
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "charts/app");
        assert_eq!(r.tag.as_deref(), Some("1.2.3"));
        assert_eq!(r.scheme(), "http");
        let d = format!("sha256:{}", "a".repeat(64));
        let r = Reference::parse(&format!("eu.gcr.io/proj/app:1.0@{d}")).expect("parses");
        assert_eq!(r.digest.as_deref(), Some(d.as_str()));
        assert_eq!(r.scheme(), "https");
        assert_eq!(r.to_string(), format!("eu.gcr.io/proj/app:1.0@{d}"));
        let r = Reference::parse("nginx:1").expect("docker hub");
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str()),
            ("docker.io", "library/nginx")
        );
        assert_eq!(r.api_host(), "registry-1.docker.io");
        let r = Reference::parse("localhost:5000/app@".to_string().as_str());
        assert!(r.is_err());
        for bad in [
            "",
            "reg.io/app",
            "reg.io/App:1",
            "reg.io/app:",
            "reg.io/app@sha256:12",
        ] {
            assert!(Reference::parse(bad).is_err(), "{bad:?} is rejected");
        }
    }

    #[test]
    fn loopback_hosts() {
        for host in [
            "localhost",
            "localhost:5000",
            "127.0.0.1:1234",
            "127.8.9.1",
            "[::1]:5000",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in ["example.com", "10.0.0.1:5000", "localhost.example.com"] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    fn docker_secret(name: &str, json: &str) -> SecretData {
        SecretData {
            name: name.into(),
            secret_type: "kubernetes.io/dockerconfigjson".into(),
            data: [(".dockerconfigjson".to_string(), json.as_bytes().to_vec())].into(),
        }
    }

    #[test]
    fn credentials_from_dockerconfigjson() {
        let auth = base64::engine::general_purpose::STANDARD.encode("user:p:ss");
        let secrets = vec![
            SecretData {
                name: "opaque".into(),
                secret_type: "Opaque".into(),
                data: BTreeMap::new(),
            },
            docker_secret(
                "a",
                &format!(
                    r#"{{"auths":{{"https://index.docker.io/v1/":{{"auth":"{auth}"}},"reg.example.com:5000":{{"username":"u2","password":"p2"}}}}}}"#
                ),
            ),
        ];
        let hub = registry_credentials(&secrets, "docker.io")
            .expect("ok")
            .expect("found");
        assert_eq!(
            (hub.username.as_str(), hub.password.as_str()),
            ("user", "p:ss")
        );
        let other = registry_credentials(&secrets, "reg.example.com:5000")
            .expect("ok")
            .expect("found");
        assert_eq!(other.username, "u2");
        assert_eq!(
            registry_credentials(&secrets, "reg.example.com").expect("ok"),
            None
        );
        assert!(!format!("{hub:?}").contains("p:ss"), "never printed");
        let broken = vec![docker_secret(
            "b",
            r#"{"auths": {"x": {"auth": "secret-value"#,
        )];
        let err = registry_credentials(&broken, "x").expect_err("broken json");
        assert!(!err.to_string().contains("secret-value"), "{err}");
    }

    #[test]
    fn challenges_parse() {
        let c = parse_challenge(
            r#"Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:charts/app:pull""#,
        )
        .expect("parses");
        assert_eq!(c.scheme, "bearer");
        assert_eq!(c.params["realm"], "https://auth.example.com/token");
        assert_eq!(c.params["scope"], "repository:charts/app:pull");
        let c = parse_challenge(r#"Basic realm="Registry Realm""#).expect("parses");
        assert_eq!(c.scheme, "basic");
    }

    #[test]
    fn chart_layer_is_found_by_media_type() {
        let manifest: Manifest = serde_json::from_str(&format!(
            r#"{{"schemaVersion":2,"config":{{"mediaType":"{HELM_CONFIG_MEDIA_TYPE}","digest":"sha256:{0}","size":1}},"layers":[{{"mediaType":"{HELM_CHART_LAYER_MEDIA_TYPE}","digest":"sha256:{1}","size":2}}]}}"#,
            "a".repeat(64),
            "b".repeat(64)
        ))
        .expect("parses");
        let layer = helm_chart_layer("t", &manifest).expect("found");
        assert_eq!(layer.size, 2);
        let mut image = manifest.clone();
        image.config.media_type = "application/vnd.oci.image.config.v1+json".into();
        let err = helm_chart_layer("t", &image).expect_err("not a chart");
        assert!(err.to_string().contains("not a Helm chart"), "{err}");
    }
}
