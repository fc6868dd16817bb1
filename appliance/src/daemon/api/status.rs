//! Errors as Kubernetes `Status` objects (`kind: Status`, `apiVersion: v1`), with the HTTP codes
//! and reasons kube-apiserver uses, so that clients print e.g.
//! `Error from server (NotFound): installations.landscaper.gardener.cloud "x" not found`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use landscaper_store::{EncodingError, Kind, ReadError, StoreError, TransactionError};
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

    /// A write without a valid bearer token.
    /// 421: the request's `Host` is not a name of this server.
    pub fn misdirected(message: impl Into<String>) -> Self {
        ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "MisdirectedRequest",
            message,
        )
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized", message)
    }

    /// A request body in a format the server does not take (e.g. a JSON patch).
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            message,
        )
    }

    /// The request cannot be done on the object as it is: `why` completes the message
    /// `Operation cannot be fulfilled on <resource> "<name>": <why>`.
    pub fn conflict(kind: Kind, name: &str, why: &str) -> Self {
        let plural = kind.plural();
        ApiError {
            details: details(plural, kind.group(), Some(name)),
            ..ApiError::new(
                StatusCode::CONFLICT,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": {why}",
                    qualified(plural, kind.group())
                ),
            )
        }
    }

    /// An object of this name exists already (409, reason `AlreadyExists`):
    /// `installations.landscaper.gardener.cloud "x" already exists`.
    pub fn already_exists(kind: Kind, name: &str) -> Self {
        let plural = kind.plural();
        ApiError {
            details: details(plural, kind.group(), Some(name)),
            ..ApiError::new(
                StatusCode::CONFLICT,
                "AlreadyExists",
                format!(
                    "{} \"{name}\" already exists",
                    qualified(plural, kind.group())
                ),
            )
        }
    }

    /// The caller may not do this to object `name` (403, reason `Forbidden`):
    /// `installations.landscaper.gardener.cloud "x" is forbidden: <why>`.
    pub fn forbidden(kind: Kind, name: &str, why: &str) -> Self {
        let plural = kind.plural();
        ApiError {
            details: details(plural, kind.group(), Some(name)),
            ..ApiError::new(
                StatusCode::FORBIDDEN,
                "Forbidden",
                format!(
                    "{} \"{name}\" is forbidden: {why}",
                    qualified(plural, kind.group())
                ),
            )
        }
    }

    /// Server-side apply found fields other managers own (409 `Conflict`, one
    /// `FieldManagerConflict` cause per field), with kube-patch's wording of kube's message.
    pub fn apply_conflict(kind: Kind, name: &str, error: &kube_patch::PatchError) -> Self {
        let plural = kind.plural();
        let mut details = details(plural, kind.group(), Some(name));
        if let kube_patch::PatchError::Conflict(conflicts) = error {
            let causes: Vec<Value> = conflicts
                .iter()
                .map(|c| {
                    json!({"reason": "FieldManagerConflict",
                        "message": format!("conflict with {}", c.description), "field": c.field})
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        ApiError {
            details,
            ..ApiError::new(StatusCode::CONFLICT, "Conflict", error.to_string())
        }
    }

    /// A request that would change `field` of object `name`, which may not be changed (422,
    /// like kube-apiserver's validation errors): `<Kind>.<group> "<name>" is invalid:
    /// <field>: Forbidden: <why>`, with the field in `details.causes`.
    pub fn forbidden_field(kind: Kind, name: &str, field: &str, why: &str) -> Self {
        ApiError::invalid(kind, name, field, "FieldValueForbidden", "Forbidden", why)
    }

    /// A request that would give `field` of object `name` a value that is not valid (422):
    /// `<Kind>.<group> "<name>" is invalid: <field>: Invalid value: <why>`.
    pub fn invalid_value(kind: Kind, name: &str, field: &str, why: &str) -> Self {
        ApiError::invalid(kind, name, field, "FieldValueInvalid", "Invalid value", why)
    }

    /// 422 for a validation error of the model (`Invalid value: "x": why`, `Too long: ...`).
    pub fn invalid_field(
        kind: Kind,
        name: &str,
        error: &landscaper_store::model::ModelError,
    ) -> Self {
        let (label, why) = error
            .message
            .split_once(": ")
            .unwrap_or((error.message.as_str(), ""));
        let cause = match label {
            "Too long" => "FieldValueTooLong",
            "Required value" => "FieldValueRequired",
            "Forbidden" => "FieldValueForbidden",
            _ => "FieldValueInvalid",
        };
        ApiError::invalid(kind, name, &error.field, cause, label, why)
    }

    pub fn invalid(
        kind: Kind,
        name: &str,
        field: &str,
        cause: &str,
        label: &str,
        why: &str,
    ) -> Self {
        // Like kube-apiserver, validation errors name the kind, not the resource.
        let mut details = details(kind.as_str(), kind.group(), Some(name));
        details.insert(
            "causes".into(),
            json!([{"reason": cause, "message": format!("{label}: {why}"), "field": field}]),
        );
        ApiError {
            details,
            ..ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Invalid",
                format!(
                    "{} \"{name}\" is invalid: {field}: {label}: {why}",
                    qualified(kind.as_str(), kind.group())
                ),
            )
        }
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
            StoreError::Transaction(TransactionError::NotFound { key }) => {
                ApiError::not_found(key.kind.plural(), key.kind.group(), &key.name)
            }
            StoreError::Read(ReadError::Expired { requested, oldest }) => {
                ApiError::expired(format!(
                    "too old resource version: {requested} ({})",
                    oldest.saturating_sub(1)
                ))
            }
            StoreError::Transaction(TransactionError::Conflict { key, .. }) => ApiError::conflict(
                key.kind,
                &key.name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ),
            StoreError::Transaction(TransactionError::AlreadyExists { key }) => {
                ApiError::already_exists(key.kind, &key.name)
            }
            StoreError::Encoding(EncodingError::Invalid {
                key,
                field,
                message,
            }) => match key {
                Some(key) => ApiError::invalid_value(key.kind, &key.name, field, message),
                None => ApiError::bad_request(error.to_string()),
            },
            _ => {
                tracing::error!(%error, "store operation failed while serving the API");
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
    fn write_errors_have_the_kube_apiserver_shape() {
        let e = ApiError::forbidden_field(Kind::Installation, "a", "spec.x", "no");
        assert_eq!(e.code, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            e.to_status(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"Installation.landscaper.gardener.cloud \"a\" is invalid: spec.x: Forbidden: no",
                "reason":"Invalid",
                "details":{"name":"a","group":"landscaper.gardener.cloud","kind":"Installation",
                    "causes":[{"reason":"FieldValueForbidden","message":"Forbidden: no","field":"spec.x"}]},
                "code":422})
        );
        let e = ApiError::conflict(Kind::Secret, "s", "why");
        assert_eq!(e.code, StatusCode::CONFLICT);
        assert_eq!(
            e.message,
            "Operation cannot be fulfilled on secrets \"s\": why"
        );
        let e = ApiError::from(StoreError::Transaction(TransactionError::Conflict {
            key: landscaper_store::ObjectKey::new(Kind::Installation, "ns", "a"),
            expected: "1".into(),
            actual: "2".into(),
        }));
        assert_eq!((e.code, e.reason), (StatusCode::CONFLICT, "Conflict"));
        assert_eq!(ApiError::unauthorized("x").code, StatusCode::UNAUTHORIZED);
    }

    #[test]
    fn expired_store_errors_become_410() {
        let e = ApiError::from(StoreError::Read(ReadError::Expired {
            requested: 3,
            oldest: 10,
        }));
        assert_eq!(e.code, StatusCode::GONE);
        assert_eq!(e.reason, "Expired");
        assert_eq!(e.message, "too old resource version: 3 (9)");
    }
}
