//! Health endpoints: `/healthz` and `/livez` answer `ok` while the process serves, `/readyz`
//! only once the daemon has set its [`Readiness`](super::Readiness) and while the store takes
//! writes (503 with the reason otherwise).

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::ApiState;

fn text(code: StatusCode, body: String) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// `/healthz` and `/livez`.
pub async fn healthz() -> Response {
    text(StatusCode::OK, "ok".into())
}

/// `/readyz`: also 503 while the store takes no writes (a full disk), so that load balancers
/// and operators see it; it turns ready again by itself once the store has reopened its file.
pub async fn readyz(State(state): State<ApiState>) -> Response {
    let store_reason = state
        .store
        .unwritable()
        .map(|u| format!("the store takes no writes since {}: {}", u.since, u.reason));
    match state.readiness.not_ready_reason().or(store_reason) {
        None => text(StatusCode::OK, "ok".into()),
        Some(reason) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {reason}\n"),
        ),
    }
}
