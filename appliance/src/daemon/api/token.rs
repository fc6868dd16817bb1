//! The bearer token that authorises writes (`PATCH`, `DELETE`).
//!
//! The daemon keeps it in `<data dir>/api-token` (mode 0600: readable by root and the service
//! user that owns the data folder), creating it with 32 random bytes (hex) at the first start.
//! The token is never logged: [`ApiToken`]'s `Debug` hides it.
//!
//! Requests carry it as `Authorization: Bearer <token>`, or as the password (any user name) of
//! `Authorization: Basic`: kubectl (client-go) sends `--token` and kubeconfig credentials only
//! over TLS, but it does send the user info of a plain-HTTP server URL as basic
//! authentication, so `kubectl --server http://token:<token>@127.0.0.1:8080 annotate ...`
//! works against the appliance's loopback HTTP.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;

use axum::http::{HeaderMap, header};
use base64::Engine;

/// Name of the token file in the data folder.
pub const TOKEN_FILE_NAME: &str = "api-token";

/// A bearer token. Compared in constant time; `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiToken(Arc<str>);

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiToken(<redacted>)")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("the OS random generator failed: {0}")]
    Random(String),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "token file {path} holds no valid token (one line of printable characters without spaces)"
    )]
    Invalid { path: String },
    #[error("{TOKEN_ENV} holds no valid token")]
    InvalidEnv,
}

/// The environment variable that may hold the token for the CLI.
pub const TOKEN_ENV: &str = "LANDSCAPER_APPLIANCE_TOKEN";

impl ApiToken {
    /// A token from its text, if it is usable: non-empty, printable ASCII without spaces.
    pub fn parse(text: &str) -> Option<ApiToken> {
        let text = text.trim();
        (!text.is_empty() && text.bytes().all(|b| b.is_ascii_graphic()))
            .then(|| ApiToken(Arc::from(text)))
    }

    /// 32 random bytes from the OS, as 64 lowercase hex digits.
    pub fn generate() -> Result<ApiToken, TokenError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(ApiToken(Arc::from(hex)))
    }

    /// The token text (to send it, never to log it).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `candidate` is this token, in time independent of where they differ.
    pub fn matches(&self, candidate: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), candidate.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }

    /// Reads the token file at `path`, creating it (mode 0600) with a new random token when it
    /// is missing or empty.
    pub fn ensure_file(path: &Path) -> Result<ApiToken, TokenError> {
        let display = path.display().to_string();
        let io = |what| {
            let path = display.clone();
            move |source| TokenError::Io { what, path, source }
        };
        match std::fs::read_to_string(path) {
            Ok(text) if !text.trim().is_empty() => {
                return ApiToken::parse(&text).ok_or(TokenError::Invalid { path: display });
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io("reading the token file")(e)),
        }
        let token = ApiToken::generate()?;
        // Written beside and renamed: a crash leaves either no token file or a complete one.
        let partial = path.with_extension("partial");
        let _ = std::fs::remove_file(&partial);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&partial)
            .map_err(io("creating the token file"))?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(io("setting the permissions of the token file"))?;
        file.write_all(format!("{}\n", token.expose()).as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(io("writing the token file"))?;
        std::fs::rename(&partial, path).map_err(io("creating the token file"))?;
        Ok(token)
    }

    /// The token a client uses: `token_file` when given, else `env_token` (the value of
    /// [`TOKEN_ENV`]) when set, else `<data_dir>/api-token`.
    pub fn resolve(
        token_file: Option<&Path>,
        env_token: Option<&str>,
        data_dir: &Path,
    ) -> Result<ApiToken, TokenError> {
        if let Some(path) = token_file {
            return ApiToken::read_file(path);
        }
        if let Some(text) = env_token.filter(|t| !t.trim().is_empty()) {
            return ApiToken::parse(text).ok_or(TokenError::InvalidEnv);
        }
        ApiToken::read_file(&data_dir.join(TOKEN_FILE_NAME))
    }

    /// Reads a token file (for clients).
    pub fn read_file(path: &Path) -> Result<ApiToken, TokenError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::Io {
            what: "reading the token file",
            path: path.display().to_string(),
            source,
        })?;
        ApiToken::parse(&text).ok_or(TokenError::Invalid {
            path: path.display().to_string(),
        })
    }
}

/// The token a request presents: that of `Authorization: Bearer <token>`, or the password of
/// `Authorization: Basic` (the user name when the password is empty), if any.
pub fn presented(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, credential) = value.split_once(' ')?;
    let credential = credential.trim();
    let token = if scheme.eq_ignore_ascii_case("bearer") {
        credential.to_string()
    } else if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(credential)
            .ok()?;
        let decoded = String::from_utf8(decoded).ok()?;
        let (user, password) = decoded.split_once(':').unwrap_or((&decoded, ""));
        if password.is_empty() { user } else { password }.to_string()
    } else {
        return None;
    };
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn generated_tokens_are_64_hex_digits_and_differ() {
        let a = ApiToken::generate().unwrap();
        let b = ApiToken::generate().unwrap();
        assert_eq!(a.expose().len(), 64);
        assert!(a.expose().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert_eq!(format!("{a:?}"), "ApiToken(<redacted>)");
    }

    #[test]
    fn matches_only_the_exact_token() {
        let t = ApiToken::parse(" abc123\n").unwrap();
        assert!(t.matches("abc123"));
        assert!(!t.matches("abc124"));
        assert!(!t.matches("abc12"));
        assert!(!t.matches(""));
        assert!(ApiToken::parse("  \n").is_none());
        assert!(ApiToken::parse("a b").is_none());
    }

    #[test]
    fn the_file_is_created_once_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TOKEN_FILE_NAME);
        let first = ApiToken::ensure_file(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(ApiToken::ensure_file(&path).unwrap(), first);
        assert_eq!(ApiToken::read_file(&path).unwrap(), first);
        // An empty file (e.g. truncated by hand) gets a new token.
        std::fs::write(&path, "").unwrap();
        let second = ApiToken::ensure_file(&path).unwrap();
        assert_ne!(second, first);
        std::fs::write(&path, "not a token\n").unwrap();
        assert!(matches!(
            ApiToken::ensure_file(&path),
            Err(TokenError::Invalid { .. })
        ));
    }

    #[test]
    fn reads_bearer_and_basic_headers() {
        let presented_by = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, HeaderValue::from_static(value));
            presented(&headers)
        };
        assert_eq!(presented(&HeaderMap::new()), None);
        assert_eq!(presented_by("Bearer  xyz ").as_deref(), Some("xyz"));
        assert_eq!(presented_by("bearer xyz").as_deref(), Some("xyz"));
        assert_eq!(presented_by("Bearer "), None);
        // base64("token:xyz"), base64("xyz:"), base64("xyz")
        assert_eq!(presented_by("Basic dG9rZW46eHl6").as_deref(), Some("xyz"));
        assert_eq!(presented_by("Basic eHl6Og==").as_deref(), Some("xyz"));
        assert_eq!(presented_by("Basic eHl6").as_deref(), Some("xyz"));
        assert_eq!(presented_by("Basic not-base64!"), None);
        assert_eq!(presented_by("Digest xyz"), None);
    }
}

/// Marks requests that came over the daemon's Unix socket, which file permissions already
/// restrict to root and the service user: they are authorised without a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrustedConnection;

/// Who sent a request, as far as authorisation cares.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// Came over the Unix socket.
    pub trusted: bool,
    /// The token the request presented, if any (never logged).
    pub token: Option<String>,
}

impl Caller {
    pub fn new(headers: &HeaderMap, trusted: bool) -> Caller {
        Caller {
            trusted,
            token: presented(headers),
        }
    }

    /// Whether the caller may write and read secrets: over the socket, or with the token.
    pub fn is_authorised(&self, token: Option<&ApiToken>) -> bool {
        self.trusted
            || matches!((token, &self.token), (Some(t), Some(candidate)) if t.matches(candidate))
    }
}
