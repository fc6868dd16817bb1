//! Watches: a chunked stream of `{"type": ..., "object": ...}` lines, from the current state
//! (synthetic ADDED events) or from a resourceVersion (replayed from the event history).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use crate::app::App;
use crate::error::ApiError;
use crate::resources::ResourceType;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::store::{Event, EventType, present};
use crate::table;

pub struct WatchRequest {
    pub rt: ResourceType,
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// None: start from now with the current objects as ADDED.
    pub after: Option<u64>,
    pub timeout: Duration,
    pub bookmarks: bool,
    pub send_initial_events: bool,
    pub as_table: bool,
}

/// Parses a `resourceVersion` for watch: empty or "0" means "now".
pub fn parse_start(rv: Option<&str>, send_initial_events: bool) -> Result<Option<u64>, ApiError> {
    match rv {
        None | Some("" | "0") => Ok(None),
        Some(_) if send_initial_events => Ok(None),
        Some(rv) => rv
            .parse::<u64>()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}"))),
    }
}

struct Emitter {
    tx: mpsc::Sender<Result<Bytes, Infallible>>,
    rt: ResourceType,
    as_table: bool,
    headers_sent: bool,
}

impl Emitter {
    async fn send(&mut self, kind: &str, object: &Value, rv: u64) -> bool {
        let object = if self.as_table && kind != "BOOKMARK" && kind != "ERROR" {
            let t = table::table(
                &self.rt,
                std::slice::from_ref(object),
                &rv.to_string(),
                !self.headers_sent,
            );
            self.headers_sent = true;
            t
        } else {
            object.clone()
        };
        let mut line = json!({"type": kind, "object": object}).to_string();
        line.push('\n');
        self.tx.send(Ok(Bytes::from(line))).await.is_ok()
    }
}

fn matches(req: &WatchRequest, obj: &Value) -> bool {
    req.labels.matches(obj) && req.fields.matches(obj)
}

/// What an event means for this watch (selector transitions become ADDED/DELETED).
fn translate(req: &WatchRequest, event: &Event) -> Option<&'static str> {
    if event.group != req.rt.group || event.plural != req.rt.plural {
        return None;
    }
    if let Some(ns) = &req.namespace
        && req.rt.namespaced
        && &event.namespace != ns
    {
        return None;
    }
    let now = matches(req, &event.object);
    match event.kind {
        EventType::Added => now.then_some("ADDED"),
        EventType::Deleted => now.then_some("DELETED"),
        EventType::Modified => {
            let before = event.old.as_ref().is_some_and(|o| matches(req, o));
            match (before, now) {
                (true, true) => Some("MODIFIED"),
                (false, true) => Some("ADDED"),
                (true, false) => Some("DELETED"),
                (false, false) => None,
            }
        }
    }
}

fn bookmark(rt: &ResourceType, rv: u64, initial_end: bool) -> Value {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": metadata})
}

pub fn serve(app: Arc<App>, req: WatchRequest) -> Result<Response, ApiError> {
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(256);
    let snapshot = app
        .store
        .watch_snapshot(&req.rt, req.namespace.as_deref(), req.after);
    let mut shutdown = app.shutdown.clone();
    let interval = app.bookmark_interval;
    tokio::spawn(async move {
        let mut out = Emitter {
            tx,
            rt: req.rt.clone(),
            as_table: req.as_table,
            headers_sent: false,
        };
        let snapshot = match snapshot {
            Ok(s) => s,
            Err(e) => {
                // kube reports a too old resourceVersion as an ERROR event on a 200 stream.
                out.send("ERROR", &e.to_status(), 0).await;
                return;
            }
        };
        let mut last_rv = snapshot.rv;
        for obj in &snapshot.initial {
            if matches(&req, obj) && !out.send("ADDED", obj, last_rv).await {
                return;
            }
        }
        if req.send_initial_events
            && req.bookmarks
            && !out
                .send("BOOKMARK", &bookmark(&req.rt, last_rv, true), last_rv)
                .await
        {
            return;
        }
        for event in &snapshot.replay {
            if let Some(kind) = translate(&req, event)
                && !out
                    .send(kind, &present(&req.rt, event.object.clone()), event.rv)
                    .await
            {
                return;
            }
        }
        let mut receiver = snapshot.receiver;
        let deadline = tokio::time::sleep(req.timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(interval);
        ticker.tick().await;
        loop {
            tokio::select! {
                received = receiver.recv() => match received {
                    Ok(event) => {
                        last_rv = event.rv;
                        if let Some(kind) = translate(&req, &event)
                            && !out.send(kind, &present(&req.rt, event.object.clone()), event.rv).await
                        {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let e = ApiError::gone("the watch fell behind; too old resource version");
                        out.send("ERROR", &e.to_status(), last_rv).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = ticker.tick(), if req.bookmarks => {
                    if !out.send("BOOKMARK", &bookmark(&req.rt, last_rv, false), last_rv).await {
                        return;
                    }
                }
                _ = &mut deadline => return,
                _ = out.tx.closed() => return,
                _ = shutdown.changed() => return,
            }
        }
    });
    let body = Body::from_stream(ReceiverStream::new(rx));
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-cache, private"),
        ],
        body,
    )
        .into_response())
}
