//! `kubectl auth whoami` and `kubectl auth can-i` (also `--list`): the self-review resources of
//! `authentication.k8s.io/v1` and `authorization.k8s.io/v1`, answered from the caller's actual
//! rights. The appliance has two: a caller with the API token or on the Unix socket may do
//! everything; an anonymous caller may read (Secrets redacted) and nothing else.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::ApiState;
use super::status::ApiError;
use super::token::{Caller, TrustedConnection};

pub const SELF_SUBJECT_REVIEWS: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
pub const SELF_SUBJECT_ACCESS_REVIEWS: &str =
    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
pub const SELF_SUBJECT_RULES_REVIEWS: &str =
    "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";

/// The verbs an anonymous caller is allowed.
const READ_VERBS: [&str; 3] = ["get", "list", "watch"];

const READ_ONLY_REASON: &str = "anonymous requests are read-only (Secret values redacted); \
    present the API token (the api-token file of the data folder) or use the Unix socket";

/// Who the caller is, as `userInfo` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Identity {
    Socket,
    Token,
    Anonymous,
}

impl Identity {
    fn of(state: &ApiState, caller: &Caller) -> Identity {
        if caller.trusted {
            Identity::Socket
        } else if caller.is_authorised(state.token.as_ref()) {
            Identity::Token
        } else {
            Identity::Anonymous
        }
    }

    fn may_write(self) -> bool {
        self != Identity::Anonymous
    }

    fn user_info(self) -> Value {
        match self {
            Identity::Socket => json!({
                "username": "landscaper-appliance:socket",
                "groups": ["system:masters", "system:authenticated"],
            }),
            Identity::Token => json!({
                "username": "landscaper-appliance:token",
                "groups": ["system:masters", "system:authenticated"],
            }),
            Identity::Anonymous => json!({
                "username": "system:anonymous",
                "groups": ["system:unauthenticated"],
            }),
        }
    }
}

fn identity(
    state: &ApiState,
    trusted: Option<Extension<TrustedConnection>>,
    headers: &HeaderMap,
) -> Identity {
    Identity::of(state, &Caller::new(headers, trusted.is_some()))
}

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The request's object, checked to be the expected kind (as kube-apiserver, a missing
/// `kind` is accepted). kubectl sends these built-in kinds as protobuf; the answer is JSON,
/// which client-go accepts as well.
fn review_request(headers: &HeaderMap, body: &[u8], kind: &str) -> Result<Value, ApiError> {
    let is_protobuf = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(PROTOBUF));
    if is_protobuf {
        return protobuf::review(body).ok_or_else(|| {
            ApiError::bad_request(format!("the body is not a protobuf {kind} object"))
        });
    }
    review_json(body, kind)
}

fn review_json(body: &[u8], kind: &str) -> Result<Value, ApiError> {
    let request: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not a {kind} object: {e}")))?;
    match request.get("kind").and_then(Value::as_str) {
        None | Some("") => Ok(request),
        Some(k) if k == kind => Ok(request),
        Some(other) => Err(ApiError::bad_request(format!(
            "expected a {kind} object, got kind {other:?}"
        ))),
    }
}

fn created(mut review: Value, api_version: &str, kind: &str, status: Value) -> Response {
    review["apiVersion"] = json!(api_version);
    review["kind"] = json!(kind);
    if !review.get("metadata").is_some_and(Value::is_object) {
        review["metadata"] = json!({});
    }
    review["metadata"]["creationTimestamp"] = Value::Null;
    review["status"] = status;
    (StatusCode::CREATED, axum::Json(review)).into_response()
}

/// One review: who asks, the request's object, and `status_of` (pure: identity and request
/// to the review's status) answered as the created object.
fn answer(
    state: &ApiState,
    trusted: Option<Extension<TrustedConnection>>,
    headers: &HeaderMap,
    body: &[u8],
    (api_version, kind): (&str, &str),
    status_of: fn(Identity, &Value) -> Result<Value, ApiError>,
) -> Response {
    let who = identity(state, trusted, headers);
    let result = review_request(headers, body, kind)
        .and_then(|review| Ok((status_of(who, &review)?, review)));
    match result {
        Ok((status, review)) => created(review, api_version, kind, status),
        Err(error) => error.into_response(),
    }
}

/// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews` (`kubectl auth whoami`).
pub async fn self_subject_review(
    State(state): State<ApiState>,
    trusted: Option<Extension<TrustedConnection>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let kind = ("authentication.k8s.io/v1", "SelfSubjectReview");
    answer(&state, trusted, &headers, &body, kind, whoami_status)
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews` (`kubectl auth can-i VERB
/// RESOURCE`).
pub async fn self_subject_access_review(
    State(state): State<ApiState>,
    trusted: Option<Extension<TrustedConnection>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let kind = ("authorization.k8s.io/v1", "SelfSubjectAccessReview");
    answer(&state, trusted, &headers, &body, kind, access_status)
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews` (`kubectl auth can-i --list`).
pub async fn self_subject_rules_review(
    State(state): State<ApiState>,
    trusted: Option<Extension<TrustedConnection>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let kind = ("authorization.k8s.io/v1", "SelfSubjectRulesReview");
    answer(&state, trusted, &headers, &body, kind, rules_status)
}

fn whoami_status(who: Identity, _review: &Value) -> Result<Value, ApiError> {
    Ok(json!({ "userInfo": who.user_info() }))
}

/// Whether `identity` may do `verb`, with the reason kube's authorizers give.
fn decide(who: Identity, verb: &str) -> (bool, &'static str) {
    if who.may_write() {
        (
            true,
            "the API token or the Unix socket allows every request",
        )
    } else if READ_VERBS.contains(&verb) {
        (true, "anonymous requests may read")
    } else {
        (false, READ_ONLY_REASON)
    }
}

fn access_status(who: Identity, review: &Value) -> Result<Value, ApiError> {
    let spec = &review["spec"];
    let verb = spec["resourceAttributes"]["verb"]
        .as_str()
        .or_else(|| spec["nonResourceAttributes"]["verb"].as_str())
        .ok_or_else(|| {
            ApiError::bad_request(
                "spec.resourceAttributes.verb or spec.nonResourceAttributes.verb is required",
            )
        })?;
    let (allowed, reason) = decide(who, verb);
    let mut status = json!({ "allowed": allowed, "reason": reason });
    if !allowed {
        status["denied"] = json!(true);
    }
    Ok(status)
}

fn rules_status(who: Identity, _review: &Value) -> Result<Value, ApiError> {
    let verbs: Vec<&str> = if who.may_write() {
        vec!["*"]
    } else {
        READ_VERBS.to_vec()
    };
    Ok(json!({
        "resourceRules": [{ "verbs": verbs, "apiGroups": ["*"], "resources": ["*"] }],
        "nonResourceRules": [{ "verbs": ["get"], "nonResourceURLs": ["*"] }],
        "incomplete": false,
    }))
}

/// The `k8s\0` envelope around `runtime.Unknown` and the few fields of the self-reviews'
/// specs (`authorization.k8s.io/v1` generated.proto), as JSON.
mod protobuf {
    use serde_json::{Map, Value, json};

    fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
        let mut n: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *buf.get(*pos)?;
            *pos += 1;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(n);
            }
        }
        None
    }

    /// The length-delimited fields of one message by number (others skipped).
    fn fields(buf: &[u8]) -> Option<Vec<(u64, &[u8])>> {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < buf.len() {
            let key = varint(buf, &mut pos)?;
            match key & 7 {
                0 => {
                    varint(buf, &mut pos)?;
                }
                1 => pos = pos.checked_add(8)?,
                2 => {
                    let len = usize::try_from(varint(buf, &mut pos)?).ok()?;
                    let end = pos.checked_add(len)?;
                    out.push((key >> 3, buf.get(pos..end)?));
                    pos = end;
                }
                5 => pos = pos.checked_add(4)?,
                _ => return None,
            }
        }
        (pos <= buf.len()).then_some(out)
    }

    fn field<'a>(fields: &[(u64, &'a [u8])], number: u64) -> Option<&'a [u8]> {
        fields.iter().find(|(n, _)| *n == number).map(|(_, b)| *b)
    }

    /// A message of string fields, named by number.
    fn strings(buf: &[u8], names: &[(u64, &str)]) -> Option<Value> {
        let fields = fields(buf)?;
        let mut out = Map::new();
        for (number, name) in names {
            if let Some(bytes) = field(&fields, *number) {
                out.insert((*name).into(), json!(std::str::from_utf8(bytes).ok()?));
            }
        }
        Some(Value::Object(out))
    }

    pub fn review(body: &[u8]) -> Option<Value> {
        let unknown = fields(body.strip_prefix(b"k8s\0")?)?;
        let type_meta = strings(field(&unknown, 1)?, &[(1, "apiVersion"), (2, "kind")])?;
        let object = fields(field(&unknown, 2).unwrap_or_default())?;
        let mut spec = Map::new();
        if let Some(spec_bytes) = field(&object, 2) {
            let spec_fields = fields(spec_bytes)?;
            // SelfSubjectAccessReviewSpec: resourceAttributes = 1, nonResourceAttributes = 2;
            // SelfSubjectRulesReviewSpec: namespace = 1 (a string, read as such below).
            if type_meta["kind"] == "SelfSubjectRulesReview" {
                if let Some(ns) = field(&spec_fields, 1) {
                    spec.insert("namespace".into(), json!(std::str::from_utf8(ns).ok()?));
                }
            } else {
                if let Some(attributes) = field(&spec_fields, 1) {
                    let names = [
                        (1, "namespace"),
                        (2, "verb"),
                        (3, "group"),
                        (4, "version"),
                        (5, "resource"),
                        (6, "subresource"),
                        (7, "name"),
                    ];
                    spec.insert("resourceAttributes".into(), strings(attributes, &names)?);
                }
                if let Some(attributes) = field(&spec_fields, 2) {
                    let names = [(1, "path"), (2, "verb")];
                    spec.insert("nonResourceAttributes".into(), strings(attributes, &names)?);
                }
            }
        }
        let mut review = type_meta;
        review["spec"] = Value::Object(spec);
        Some(review)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_callers_may_only_read() {
        for verb in READ_VERBS {
            assert!(decide(Identity::Anonymous, verb).0, "{verb}");
        }
        for verb in [
            "create",
            "update",
            "patch",
            "delete",
            "deletecollection",
            "*",
        ] {
            let (allowed, reason) = decide(Identity::Anonymous, verb);
            assert!(!allowed, "{verb}");
            assert!(reason.contains("API token"), "{reason}");
        }
        for who in [Identity::Token, Identity::Socket] {
            assert!(decide(who, "delete").0);
            assert!(decide(who, "*").0);
        }
    }

    #[test]
    fn an_access_review_needs_a_verb_and_lists_follow_the_rights() {
        let error = access_status(Identity::Token, &json!({"spec": {}})).unwrap_err();
        assert_eq!(error.reason, "BadRequest");
        let review = json!({"spec": {"resourceAttributes": {"verb": "delete"}}});
        let status = access_status(Identity::Anonymous, &review).unwrap();
        assert_eq!(status["allowed"], false);
        assert_eq!(status["denied"], true);
        let rules = rules_status(Identity::Anonymous, &json!({})).unwrap();
        assert_eq!(
            rules["resourceRules"][0]["verbs"],
            json!(["get", "list", "watch"])
        );
        assert_eq!(
            rules_status(Identity::Socket, &json!({})).unwrap()["resourceRules"][0]["verbs"],
            json!(["*"])
        );
    }

    #[test]
    fn reviews_of_the_wrong_kind_are_bad_requests() {
        let error = review_json(br#"{"kind":"Pod"}"#, "SelfSubjectReview").unwrap_err();
        assert_eq!(error.reason, "BadRequest");
        assert!(review_json(b"{}", "SelfSubjectReview").is_ok());
        assert!(review_json(b"not json", "SelfSubjectReview").is_err());
    }

    #[test]
    fn protobuf_access_reviews_yield_their_attributes() {
        fn field(n: u8, payload: &[u8]) -> Vec<u8> {
            let mut out = vec![n << 3 | 2, payload.len() as u8];
            out.extend_from_slice(payload);
            out
        }
        let attributes = [
            field(1, b"kube-e2e"),
            field(2, b"delete"),
            field(3, b"landscaper.gardener.cloud"),
            field(5, b"installations"),
        ]
        .concat();
        let object = field(2, &field(1, &attributes));
        let type_meta = [
            field(1, b"authorization.k8s.io/v1"),
            field(2, b"SelfSubjectAccessReview"),
        ]
        .concat();
        let body = [
            b"k8s\0".as_slice(),
            &field(1, &type_meta),
            &field(2, &object),
        ]
        .concat();
        let review = protobuf::review(&body).expect("decodes");
        assert_eq!(review["kind"], "SelfSubjectAccessReview");
        assert_eq!(review["spec"]["resourceAttributes"]["verb"], "delete");
        assert_eq!(
            review["spec"]["resourceAttributes"]["namespace"],
            "kube-e2e"
        );
        assert_eq!(
            review["spec"]["resourceAttributes"]["resource"],
            "installations"
        );
        assert!(protobuf::review(b"k8s\0\xff").is_none());
        assert!(protobuf::review(b"{}").is_none());
    }
}
