//! Typed errors of the chart sources. Every error names what was being fetched (a URL, an
//! OCI reference, a chart name) and says whether retrying can help ([`SourceError::is_retryable`]),
//! the way Landscaper treats them: an unreachable server, a timeout or a 5xx/429 answer may
//! pass; a missing chart, a refused login, a wrong digest or a broken archive will not.
//! Credentials never appear in messages.

/// Why fetching an artifact failed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The `chart` configuration itself is wrong (no source, two sources, bad base64, bad reference).
    #[error("chart configuration: {0}")]
    InvalidSpec(String),
    /// `chart.fromResource` (removed from Landscaper).
    #[error("chart.fromResource is no longer supported")]
    FromResourceUnsupported,
    /// `chart.resourceRef`: needs component support (issue 18).
    #[error("chart.resourceRef needs component support, not yet available")]
    ResourceRefUnsupported,
    /// The server could not be reached (connection refused, DNS, TLS handshake, reset).
    #[error("{what}: unreachable: {detail}")]
    Unreachable { what: String, detail: String },
    /// No answer within the time allowed.
    #[error("{what}: timed out after {seconds}s")]
    Timeout { what: String, seconds: u64 },
    /// The server answered 5xx or 429.
    #[error("{what}: server error (HTTP {status})")]
    ServerError { what: String, status: u16 },
    /// 404, or a chart/version missing from a repository index.
    #[error("{what}: not found: {detail}")]
    NotFound { what: String, detail: String },
    /// 401/403 after presenting the credentials we have (or having none).
    #[error("{what}: access refused (HTTP {status}){}", if *.had_credentials { "" } else { "; no credentials configured for it" })]
    AuthRefused {
        what: String,
        status: u16,
        had_credentials: bool,
    },
    /// Another unexpected HTTP status.
    #[error("{what}: unexpected HTTP status {status}")]
    HttpStatus { what: String, status: u16 },
    /// The content does not match its digest.
    #[error("{what}: digest mismatch: expected {expected}, got {actual}")]
    DigestMismatch {
        what: String,
        expected: String,
        actual: String,
    },
    /// The artifact is larger than allowed.
    #[error("{what}: larger than the limit of {limit} bytes")]
    TooLarge { what: String, limit: u64 },
    /// Not a gzipped tar with a `Chart.yaml`.
    #[error("{what}: not a valid chart archive: {detail}")]
    CorruptArchive { what: String, detail: String },
    /// A manifest, index or token answer that cannot be understood.
    #[error("{what}: {detail}")]
    InvalidResponse { what: String, detail: String },
    /// Credentials in the Context or the pull secrets are unusable (never shows their value).
    #[error("credentials for {what}: {detail}")]
    Credentials { what: String, detail: String },
    /// TLS: an untrusted server certificate or an unusable custom CA (`customCAData`).
    #[error("{what}: TLS: {detail}")]
    Tls { what: String, detail: String },
    /// `local://` charts: outside the manifests folder, missing, unreadable.
    #[error("{what}: {detail}")]
    Local { what: String, detail: String },
}

impl SourceError {
    /// Whether a later attempt may succeed without a change of configuration.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            SourceError::Unreachable { .. }
                | SourceError::Timeout { .. }
                | SourceError::ServerError { .. }
        )
    }

    /// Whether the error is a configuration problem (Landscaper's `ERR_CONFIGURATION_PROBLEM`).
    pub fn is_configuration_problem(&self) -> bool {
        matches!(
            self,
            SourceError::InvalidSpec(_)
                | SourceError::FromResourceUnsupported
                | SourceError::ResourceRefUnsupported
                | SourceError::Credentials { .. }
                | SourceError::Tls { .. }
        )
    }
}

pub type Result<T, E = SourceError> = std::result::Result<T, E>;
