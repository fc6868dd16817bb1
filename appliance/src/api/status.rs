//! Errors as Kubernetes `Status` objects (`kind: Status`, `apiVersion: v1`), with the HTTP codes
//! and reasons kube-apiserver uses, so that clients print e.g.
//! `Error from server (NotFound): installations.landscaper.gardener.cloud "x" not found`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use landscaper_store::{Kind, StoreError};
use serde_json::{Map, Value, json};

/// A failed request, rendered as a `Status` object.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: StatusCode,
    /// The `reason` field: `NotFound`, `BadRequest`, `MethodNotAllowed`, `Expired`, ...
    pub reason: &'static str,
    pub message: String,
    /// The `details` field (`name`, `group`, `kind`), when the error concerns a resource.
    pub details: Map<String, Value>,
}

/// `installations.landscaper.gardener.cloud`, or `secrets` for the core group: how
/// kube-apiserver names a resource in messages.
pub fn qualified_resource(kind: Kind) -> String {
    qualified(kind.plural(), kind.group())
}

pub(crate) fn qualified(plural: &str, group: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

fn details(plural: &str, group: &str, name: Option<&str>) -> Map<String, Value> {
    let mut details = Map::new();
    if let Some(name) = name {
        details.insert("name".into(), Value::String(name.to_string()));
    }
    if !group.is_empty() {
        details.insert("group".into(), Value::String(group.to_string()));
    }
    details.insert("kind".into(), Value::String(plural.to_string()));
    details
}

impl ApiError {
    fn new(code: StatusCode, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: Map::new(),
        }
    }

    /// The object `name` of a resource does not exist.
    pub fn not_found(plural: &str, group: &str, name: &str) -> Self {
        ApiError {
            details: details(plural, group, Some(name)),
            ..ApiError::new(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("{} \"{name}\" not found", qualified(plural, group)),
            )
        }
    }

    /// The URL names no resource this server serves.
    pub fn unknown_resource() -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// A write (or another unsupported verb) on a served resource; `why` completes the
    /// message.
    pub fn method_not_allowed(verb: &str, plural: &str, group: &str, why: &str) -> Self {
        ApiError {
            details: details(plural, group, None),
            ..ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                format!(
                    "{verb} is not supported on {}: {why}",
                    qualified(plural, group)
                ),
            )
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }

    /// A watch asked for changes older than the server keeps.
    pub fn expired(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::GONE, "Expired", message)
    }

    pub fn not_acceptable(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_ACCEPTABLE, "NotAcceptable", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", message)
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": self.details,
            "code": self.code.as_u16(),
        })
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match &error {
            StoreError::NotFound { key } => {
                ApiError::not_found(key.kind.plural(), key.kind.group(), &key.name)
            }
            StoreError::Expired { requested, oldest } => ApiError::expired(format!(
                "too old resource version: {requested} ({})",
                oldest.saturating_sub(1)
            )),
            _ => {
                tracing::error!(%error, "store read failed while serving the API");
                ApiError::internal(error.to_string())
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.to_status()).unwrap_or_default();
        let mut response = (self.code, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}

/// Answers every path the router does not know.
pub async fn fallback() -> ApiError {
    ApiError::unknown_resource()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_has_the_kube_apiserver_shape() {
        let status = ApiError::not_found("installations", "landscaper.gardener.cloud", "x");
        assert_eq!(
            status.to_status(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"installations.landscaper.gardener.cloud \"x\" not found",
                "reason":"NotFound",
                "details":{"name":"x","group":"landscaper.gardener.cloud","kind":"installations"},
                "code":404})
        );
        let core = ApiError::not_found("secrets", "", "s");
        assert_eq!(core.message, "secrets \"s\" not found");
        assert_eq!(core.details.get("group"), None);
    }

    #[test]
    fn expired_store_errors_become_410() {
        let e = ApiError::from(StoreError::Expired {
            requested: 3,
            oldest: 10,
        });
        assert_eq!(e.code, StatusCode::GONE);
        assert_eq!(e.reason, "Expired");
        assert_eq!(e.message, "too old resource version: 3 (9)");
    }
}
