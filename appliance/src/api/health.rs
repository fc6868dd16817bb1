//! Health endpoints: `/healthz` and `/livez` answer `ok` while the process serves, `/readyz`
//! only once the daemon has set its [`Readiness`](super::Readiness) (503 with the reason
//! before that).

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

/// `/readyz`.
pub async fn readyz(State(state): State<ApiState>) -> Response {
    match state.readiness.not_ready_reason() {
        None => text(StatusCode::OK, "ok".into()),
        Some(reason) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {reason}\n"),
        ),
    }
}
