//! API errors as kube-apiserver reports them: a `Status` object with `reason` and `code`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// One entry of `Status.details.causes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    pub reason: String,
    pub message: String,
    pub field: String,
}

impl Cause {
    pub fn new(reason: &str, message: impl Into<String>, field: &str) -> Self {
        Cause {
            reason: reason.to_string(),
            message: message.into(),
            field: field.to_string(),
        }
    }
}

/// A failed request, rendered as a `meta/v1 Status`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    /// Boxed: errors travel in every `Result` and should stay small.
    pub details: Box<Details>,
}

/// `Status.details`: `name`, `group`, `kind` and `causes`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    pub name: Option<String>,
    pub group: Option<String>,
    pub kind: Option<String>,
    pub causes: Vec<Cause>,
}

/// `plural` for the core group, `plural.group` otherwise: how kube names a resource in messages.
pub fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: Box::default(),
        }
    }

    fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        self.details.group = (!group.is_empty()).then(|| group.to_string());
        self.details.kind = Some(kind.to_string());
        self.details.name = (!name.is_empty()).then(|| name.to_string());
        self
    }

    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, plural)),
        )
        .with_details(group, plural, name)
    }

    /// A URL the server has no handler for (kube answers a bare 404 Status).
    pub fn no_route() -> Self {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, plural)),
        )
        .with_details(group, plural, name)
    }

    pub fn conflict(group: &str, plural: &str, name: &str) -> Self {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again",
                qualified(group, plural)
            ),
        )
        .with_details(group, plural, name)
    }

    pub fn conflict_message(group: &str, plural: &str, name: &str, message: String) -> Self {
        ApiError::new(409, "Conflict", message).with_details(group, plural, name)
    }

    /// 422 with causes; the message lists them like kube's `NewInvalid`.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let rendered: Vec<String> = causes
            .iter()
            .map(|c| {
                if c.field.is_empty() {
                    c.message.clone()
                } else {
                    format!("{}: {}", c.field, c.message)
                }
            })
            .collect();
        let list = match rendered.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        let mut err = ApiError::new(
            422,
            "Invalid",
            format!("{kind} \"{name}\" is invalid: {list}"),
        )
        .with_details(group, kind, name);
        err.details.causes = causes;
        err
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        ApiError::new(403, "Forbidden", message)
    }

    pub fn method_not_allowed(method: &str) -> Self {
        ApiError::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource ({method})"),
        )
    }

    pub fn unsupported_media_type(content_type: &str, accepted: &[&str]) -> Self {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {} (got {content_type:?})",
                accepted.join(", ")
            ),
        )
    }

    pub fn unauthorized() -> Self {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn gone(message: impl Into<String>) -> Self {
        ApiError::new(410, "Expired", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(500, "InternalError", message)
    }

    /// The reason kube uses for a bare status code (fault injection).
    pub fn for_code(code: u16, message: impl Into<String>) -> Self {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            409 => "Conflict",
            410 => "Expired",
            415 => "UnsupportedMediaType",
            422 => "Invalid",
            429 => "TooManyRequests",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        };
        ApiError::new(code, reason, message)
    }

    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        let mut details = Map::new();
        if let Some(name) = &self.details.name {
            details.insert("name".into(), json!(name));
        }
        if let Some(group) = &self.details.group {
            details.insert("group".into(), json!(group));
        }
        if let Some(kind) = &self.details.kind {
            details.insert("kind".into(), json!(kind));
        }
        if !self.details.causes.is_empty() {
            let causes: Vec<Value> = self
                .details
                .causes
                .iter()
                .map(|c| {
                    let mut m = Map::new();
                    m.insert("reason".into(), json!(c.reason));
                    m.insert("message".into(), json!(c.message));
                    if !c.field.is_empty() {
                        m.insert("field".into(), json!(c.field));
                    }
                    Value::Object(m)
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        status
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = self.to_status().to_string();
        let mut response = (code, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if self.code == 401 {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"kubernetes-master\""),
            );
        }
        response
    }
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("binding {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("generating TLS certificates: {0}")]
    Certificates(#[from] rcgen::Error),
    #[error("configuring TLS: {0}")]
    Tls(#[from] rustls::Error),
    #[error("configuring client certificate verification: {0}")]
    Verifier(String),
    #[error("building the runtime: {0}")]
    Runtime(std::io::Error),
    #[error("initial CRD: {0}")]
    Crd(String),
}
