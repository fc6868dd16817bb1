//! `/appliance/v1/history`: the persisted history of one object (for `describe`) or of all
//! objects (for the status page).

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use landscaper_store::{Kind, ObjectKey, Store};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize)]
pub struct HistoryQuery {
    kind: Option<String>,
    #[serde(default)]
    namespace: String,
    name: Option<String>,
    limit: Option<usize>,
}

pub fn routes(store: Store) -> axum::Router {
    axum::Router::new()
        .route("/appliance/v1/history", get(history))
        .with_state(store)
}

async fn history(State(store): State<Store>, Query(q): Query<HistoryQuery>) -> Response {
    let limit = q.limit.unwrap_or(100).min(10_000);
    let result = tokio::task::spawn_blocking(move || match (q.kind, q.name) {
        (Some(kind), Some(name)) => {
            let Some(kind) = Kind::from_kind_name(&kind) else {
                return Err((StatusCode::BAD_REQUEST, format!("unknown kind {kind:?}")));
            };
            let namespace = if kind.namespaced() {
                q.namespace
            } else {
                String::new()
            };
            store
                .history(&ObjectKey::new(kind, namespace, name), limit)
                .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
        }
        (None, None) => store
            .recent_history(limit)
            .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
        _ => Err((
            StatusCode::BAD_REQUEST,
            "give both kind and name, or neither".to_string(),
        )),
    })
    .await;
    match result {
        Ok(Ok(items)) => Json(json!({"items": items})).into_response(),
        Ok(Err((code, message))) => (
            code,
            Json(json!({"kind": "Status", "apiVersion": "v1",
            "status": "Failure", "message": message, "code": code.as_u16()})),
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
