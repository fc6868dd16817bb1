//! Watch: a chunked stream of JSON lines `{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR,
//! "object": ...}` fed by the store's change feed, with kube-apiserver's semantics:
//!
//! - `resourceVersion` unset or `0`: synthetic ADDED events for the current matching objects,
//!   then the changes after that snapshot (`sendInitialEvents=false` skips the ADDED events);
//! - `resourceVersion=N`: the changes after N, from the store's in-memory window; 410 Gone
//!   (`Expired`) when the window no longer reaches back to N;
//! - the feed is subscribed to before the snapshot or backlog is read, and change sets at or
//!   below the revision already delivered are dropped, so nothing is lost or repeated;
//! - with a label selector, an object that stops matching yields DELETED and one that starts
//!   matching yields ADDED, as for kube-apiserver's watch cache. For objects changed between
//!   N and the watch's start, whether they matched at N is unknown; a change that makes such an
//!   object not match yields DELETED to be safe (clients ignore deletions of unknown objects);
//! - `timeoutSeconds` ends the stream; `allowWatchBookmarks` adds periodic BOOKMARK events
//!   (and, with `sendInitialEvents=true`, one annotated `k8s.io/initial-events-end` after the
//!   initial events);
//! - when the watcher falls behind the change feed, the stream ends with an ERROR event
//!   (410 `Expired`) so that the client lists again;
//! - with `Accept: application/json;as=Table;...` every object is a one-row `Table`, the first
//!   one with the column definitions, later ones without (as kube-apiserver does).
//!
//! The stream is a plain future state machine polled by the connection: when the client goes
//! away the stream is dropped, and no task is left behind. Server shutdown (the state's
//! cancellation token) ends the stream.

use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::pin::Pin;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use landscaper_store::{
    ChangeSet, ChangeType, Kind, LabelSelector, ObjectKey, SharedChangeSet, Store, StoreError,
};
use serde_json::{Value, json};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::time::{Instant, Interval, MissedTickBehavior, Sleep};
use tokio_util::sync::CancellationToken;

use super::ApiState;
use super::negotiate::{FieldSelector, ReadOptions, Representation, WatchStart};
use super::objects::{blocking, present_as};
use super::resources::Resource;
use super::status::ApiError;
use super::table::{TableOptions, to_table};

/// Chunks are cut after this many bytes of encoded events.
const CHUNK_BYTES: usize = 64 * 1024;

/// Which objects a watch reports.
#[derive(Debug, Clone)]
struct Filter {
    kind: Kind,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    /// The parts of the filter that depend only on the key (which never changes).
    fn matches_key(&self, key: &ObjectKey) -> bool {
        key.kind == self.kind
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| *ns == key.namespace)
            && self.fields.matches_key(key)
    }
}

/// What the watcher knows about which objects match a label selector (whose outcome can change
/// with an object's labels).
struct Tracking {
    /// Whether each key matched after the last event seen for it.
    state: HashMap<ObjectKey, bool>,
    /// The keys matching at `seed_revision`.
    seed: HashSet<ObjectKey>,
    seed_revision: u64,
}

impl Tracking {
    /// The event a change yields for this watcher, if any.
    fn decide(
        &mut self,
        filter: &Filter,
        revision: u64,
        change: &landscaper_store::Change,
    ) -> Option<&'static str> {
        let matches_now = change.change_type != ChangeType::Deleted
            && filter.labels.matches_object(&change.object);
        let before =
            self.state.get(&change.key).copied().or_else(|| {
                (revision > self.seed_revision).then(|| self.seed.contains(&change.key))
            });
        self.state.insert(change.key.clone(), matches_now);
        match change.change_type {
            ChangeType::Added => matches_now.then_some("ADDED"),
            ChangeType::Modified => match (before, matches_now) {
                (Some(false), true) => Some("ADDED"),
                (_, true) => Some("MODIFIED"),
                (Some(false), false) => None,
                (_, false) => Some("DELETED"),
            },
            ChangeType::Deleted => before
                .unwrap_or_else(|| filter.labels.matches_object(&change.object))
                .then_some("DELETED"),
        }
    }
}

enum Event {
    Object {
        event_type: &'static str,
        object: Value,
    },
    Bookmark {
        revision: u64,
        initial_events_end: bool,
    },
    Error(Value),
}

/// Turns events into JSON lines, as objects or tables.
struct Encoder {
    kind: Kind,
    table: Option<TableOptions>,
    reveal_secrets: bool,
}

impl Encoder {
    fn encode(&mut self, event: Event, out: &mut Vec<u8>) {
        let (event_type, object) = match event {
            Event::Object { event_type, object } => (event_type, self.object(object)),
            Event::Bookmark {
                revision,
                initial_events_end,
            } => ("BOOKMARK", self.bookmark(revision, initial_events_end)),
            Event::Error(status) => ("ERROR", status),
        };
        let line = json!({"type": event_type, "object": object});
        if serde_json::to_writer(&mut *out, &line).is_ok() {
            out.push(b'\n');
        }
    }

    fn object(&mut self, object: Value) -> Value {
        let object = present_as(self.kind, object, self.reveal_secrets);
        match self.table.as_mut() {
            None => object,
            Some(options) => {
                let rv = landscaper_store::object::resource_version(&object).to_string();
                let table = to_table(Resource::Kind(self.kind), &[object], &rv, options);
                options.no_headers = true;
                table
            }
        }
    }

    fn bookmark(&mut self, revision: u64, initial_events_end: bool) -> Value {
        let mut metadata = json!({"resourceVersion": revision.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        match self.table.as_mut() {
            None => json!({
                "kind": self.kind.as_str(),
                "apiVersion": self.kind.api_version(),
                "metadata": metadata,
            }),
            Some(options) => {
                let mut table = to_table(
                    Resource::Kind(self.kind),
                    &[],
                    &revision.to_string(),
                    options,
                );
                table["metadata"] = metadata;
                options.no_headers = true;
                table
            }
        }
    }
}

/// Where the stream starts, read from the store.
struct Start {
    filter: Filter,
    /// The newest revision already covered (snapshot revision, or the requested one).
    last: u64,
    initial: Vec<Value>,
    backlog: Vec<SharedChangeSet>,
    tracking: Option<Tracking>,
}

fn prepare(store: &Store, filter: Filter, start: WatchStart) -> Result<Start, StoreError> {
    let tracked = !filter.labels.is_empty();
    let snapshot = |filter: &Filter| -> Result<(Vec<Value>, u64), StoreError> {
        let listed = store.list(filter.kind, filter.namespace.as_deref(), &filter.labels)?;
        let items: Vec<Value> = listed
            .items
            .into_iter()
            .filter(|o| filter.fields.matches_object(o))
            .collect();
        Ok((items, listed.revision))
    };
    let seed = |items: &[Value], revision: u64| Tracking {
        state: HashMap::new(),
        seed: items
            .iter()
            .filter_map(|o| landscaper_store::object::key_of(o).ok())
            .collect(),
        seed_revision: revision,
    };
    match start {
        WatchStart::Now { initial_events } if initial_events || tracked => {
            let (items, revision) = snapshot(&filter)?;
            let tracking = tracked.then(|| seed(&items, revision));
            Ok(Start {
                filter,
                last: revision,
                initial: if initial_events { items } else { Vec::new() },
                backlog: Vec::new(),
                tracking,
            })
        }
        WatchStart::Now { .. } => Ok(Start {
            last: store.revision(),
            filter,
            initial: Vec::new(),
            backlog: Vec::new(),
            tracking: None,
        }),
        WatchStart::After(revision) => {
            let backlog = store.changes_since(revision)?;
            let tracking = if tracked {
                let (items, at) = snapshot(&filter)?;
                Some(seed(&items, at))
            } else {
                None
            };
            Ok(Start {
                filter,
                last: revision,
                initial: Vec::new(),
                backlog,
                tracking,
            })
        }
    }
}

struct Watcher {
    filter: Filter,
    feed: broadcast::Receiver<SharedChangeSet>,
    pending: VecDeque<Event>,
    /// The newest revision delivered (or filtered out); older change sets are dropped.
    last: u64,
    tracking: Option<Tracking>,
    encoder: Encoder,
    bookmarks: Option<Interval>,
    deadline: Option<Pin<Box<Sleep>>>,
    shutdown: CancellationToken,
    finished: bool,
}

/// What woke the watcher up.
enum Wake {
    Stop,
    Changes(SharedChangeSet),
    Lagged(u64),
    Bookmark,
}

impl Watcher {
    fn apply(&mut self, set: &ChangeSet) {
        if set.revision <= self.last {
            return;
        }
        for change in &set.changes {
            if !self.filter.matches_key(&change.key) {
                continue;
            }
            let event_type = match self.tracking.as_mut() {
                Some(tracking) => tracking.decide(&self.filter, set.revision, change),
                None => Some(change.change_type.as_watch_type()),
            };
            if let Some(event_type) = event_type {
                self.pending.push_back(Event::Object {
                    event_type,
                    object: change.object.clone(),
                });
            }
        }
        self.last = set.revision;
    }

    async fn wait(&mut self) -> Wake {
        let (deadline_slot, bookmark_slot) = (&mut self.deadline, &mut self.bookmarks);
        let deadline = async move {
            match deadline_slot.as_mut() {
                Some(sleep) => sleep.as_mut().await,
                None => std::future::pending().await,
            }
        };
        let bookmark = async move {
            match bookmark_slot.as_mut() {
                Some(interval) => {
                    interval.tick().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = self.shutdown.cancelled() => Wake::Stop,
            () = deadline => Wake::Stop,
            received = self.feed.recv() => match received {
                Ok(set) => Wake::Changes(set),
                Err(RecvError::Lagged(missed)) => Wake::Lagged(missed),
                Err(RecvError::Closed) => Wake::Stop,
            },
            () = bookmark => Wake::Bookmark,
        }
    }

    /// The next chunk of encoded events, or `None` when the stream is over.
    async fn next_chunk(mut self) -> Option<(Result<Bytes, Infallible>, Watcher)> {
        loop {
            if !self.pending.is_empty() {
                let mut chunk = Vec::new();
                while let Some(event) = self.pending.pop_front() {
                    self.encoder.encode(event, &mut chunk);
                    if chunk.len() >= CHUNK_BYTES {
                        break;
                    }
                }
                return Some((Ok(Bytes::from(chunk)), self));
            }
            if self.finished {
                return None;
            }
            match self.wait().await {
                Wake::Stop => self.finished = true,
                Wake::Changes(set) => self.apply(&set),
                Wake::Lagged(missed) => {
                    let status = ApiError::expired(format!(
                        "the watch fell behind the change feed and missed {missed} change sets \
                         after resourceVersion {}; list again and watch from the new resourceVersion",
                        self.last
                    ));
                    self.pending.push_back(Event::Error(status.to_status()));
                    self.finished = true;
                }
                Wake::Bookmark => self.pending.push_back(Event::Bookmark {
                    revision: self.last,
                    initial_events_end: false,
                }),
            }
        }
    }
}

/// Answers a watch request on a collection of `kind`.
pub async fn watch(
    state: &ApiState,
    kind: Kind,
    namespace: Option<String>,
    options: ReadOptions,
    representation: Representation,
) -> Result<Response, ApiError> {
    let start = options.watch_start()?;
    let filter = Filter {
        kind,
        namespace,
        labels: options.label_selector.clone(),
        fields: options.field_selector.clone(),
    };
    // Subscribe first: everything committed after the snapshot or backlog is read arrives here.
    let feed = state.store.subscribe();
    let store = state.store.clone();
    let Start {
        filter,
        last,
        initial,
        backlog,
        tracking,
    } = blocking(move || prepare(&store, filter, start)).await?;

    let table = match representation {
        Representation::Object => None,
        Representation::Table { version } => Some(TableOptions {
            version,
            include_object: options.include_object,
            no_headers: false,
        }),
    };
    let bookmarks = options.allow_bookmarks.then(|| {
        let period = state
            .options
            .bookmark_interval
            .max(Duration::from_millis(10));
        let mut interval = tokio::time::interval_at(Instant::now() + period, period);
        interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
        interval
    });
    let timeout = options
        .timeout
        .filter(|t| !t.is_zero())
        .map(|t| t.min(state.options.max_watch_timeout));
    let mut watcher = Watcher {
        filter,
        feed,
        pending: VecDeque::new(),
        last,
        tracking,
        encoder: Encoder {
            kind,
            table,
            reveal_secrets: options.reveal_secrets,
        },
        bookmarks,
        deadline: timeout.map(|t| Box::pin(tokio::time::sleep(t))),
        shutdown: state.shutdown.clone(),
        finished: false,
    };
    watcher
        .pending
        .extend(initial.into_iter().map(|object| Event::Object {
            event_type: "ADDED",
            object,
        }));
    let initial_events = matches!(
        start,
        WatchStart::Now {
            initial_events: true
        }
    );
    if initial_events && options.send_initial_events == Some(true) && options.allow_bookmarks {
        watcher.pending.push_back(Event::Bookmark {
            revision: last,
            initial_events_end: true,
        });
    }
    for set in &backlog {
        watcher.apply(set);
    }

    let stream = futures_util::stream::unfold(watcher, Watcher::next_chunk);
    let mut response = Response::new(Body::from_stream(stream));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    Ok(response)
}
