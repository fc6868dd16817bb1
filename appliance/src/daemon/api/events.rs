//! Kubernetes-style Events (`core/v1` `Event`), derived from the store's persisted history so
//! that `kubectl get events` shows what happened to Installations, Executions, DeployItems and
//! ManifestFiles. Like [`super::namespaces`] they are not stored: `get`, `list` and `watch`
//! (`kubectl get events -w`; see [`watch`]), every write answers 405.
//!
//! Which history entries become events (only of the four kinds above: Secrets, Targets,
//! ConfigMaps, DataObjects and Contexts never do, so no credential can end up in an event):
//!
//! | entry                                       | reason              | message                         |
//! |---------------------------------------------|---------------------|---------------------------------|
//! | creation                                    | `Created`           | `created [in phase P][: error]` |
//! | deletion                                    | `Deleted`           | `deleted`                       |
//! | phase transition                            | the new phase       | `phase A -> B[: error]`         |
//! | deletion requested, phase unchanged         | `DeletionRequested` | `deletion requested`            |
//! | other change with an error, phase unchanged | lastError's reason  | the error                       |
//! | a file took over objects made by the API    | `TakenOver`         | `took over <Kind ns/name>, ...` |
//!
//! The error is the history entry's message (the object's `status.lastError.message`, at most
//! 500 characters); the reason of an error event is the lastError's reason, as Landscaper's
//! event recorder uses it (`Error` for history written before reasons were kept). `type` is
//! `Warning` for the phases `Failed` and `DeleteFailed` and for events that carry an error
//! (unless the new phase is `Succeeded`), else `Normal`. A lastError that only says the object
//! waits (`JobIDFinished: execution … is not finished yet`, `landscaper_model::shared::is_waiting`)
//! is no warning: Landscaper records it as a Warning event, but it is normal progress. As kube-apiserver's event recorder does, repeats are aggregated: a `DeletionRequested`
//! or `Error` event that the object's next history entry repeats (same reason and message) is
//! counted up (`count`, `lastTimestamp`, `resourceVersion`) instead of listed again.
//!
//! Names are `<object name>.<16 hex digits>`: the digits are the revision of the (first)
//! history entry, with the kind in the top hex digit (`0` Installation, `1` Execution, `2`
//! DeployItem, `3` ManifestFile), because an Installation and its Execution share a name and
//! often change in the same transaction. Names are therefore stable and unique, and `GET` of
//! one event finds it through the object's history. Events of ManifestFiles, which are
//! cluster-scoped, live in the `default` namespace (as kube-apiserver does for cluster-scoped
//! objects). `uid` is derived from namespace and name; `resourceVersion` is the revision of the
//! newest history entry the event stands for. `involvedObject.uid` is the object's uid while it
//! exists (not for events before an earlier deletion of the name), so that `kubectl describe`,
//! which selects the object's events by uid, shows them.
//!
//! Lists are derived from the newest [`LIST_LIMIT`] (1000) history entries of all kinds, and
//! are in the order the events happened (oldest first). `fieldSelector` supports the event
//! field labels of kube-apiserver in [`FIELD_LABELS`] besides `metadata.name` and
//! `metadata.namespace`.

use std::collections::HashMap;

use landscaper_store::{
    ChangeType, ConditionNote, HistoryEntry, Kind, ObjectKey, Store, StoreError,
};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::negotiate::{FieldSelector, ReadOptions};
use super::objects::blocking;
use super::status::ApiError;

/// How many of the newest history entries lists are derived from.
pub const LIST_LIMIT: usize = 1000;

/// `source.component` and `reportingComponent` of every event.
pub const COMPONENT: &str = "landscaper-appliance";

/// The namespace events of cluster-scoped objects (ManifestFiles) live in.
pub const CLUSTER_EVENTS_NAMESPACE: &str = "default";

/// The field labels of Events besides `metadata.name` and `metadata.namespace` (kube-apiserver's
/// set, without `source`).
pub const FIELD_LABELS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "type",
];

const REVISION_BITS: u32 = 60;
const REVISION_MASK: u64 = (1 << REVISION_BITS) - 1;

/// The kinds whose history becomes events, with their code in the event name.
fn kind_code(kind: Kind) -> Option<u64> {
    match kind {
        Kind::Installation => Some(0),
        Kind::Execution => Some(1),
        Kind::DeployItem => Some(2),
        Kind::ManifestFile => Some(3),
        _ => None,
    }
}

fn kind_of_code(code: u64) -> Option<Kind> {
    [
        Kind::Installation,
        Kind::Execution,
        Kind::DeployItem,
        Kind::ManifestFile,
    ]
    .into_iter()
    .find(|k| kind_code(*k) == Some(code))
}

/// The name of the event for `key`'s history entry at `revision`; `None` for kinds without
/// events.
pub fn event_name(key: &ObjectKey, revision: u64) -> Option<String> {
    let code = kind_code(key.kind)?;
    Some(format!(
        "{}.{:016x}",
        key.name,
        (code << REVISION_BITS) | (revision & REVISION_MASK)
    ))
}

/// The object name, kind and revision an event name stands for.
pub fn parse_event_name(name: &str) -> Option<(&str, Kind, u64)> {
    let (object, suffix) = name.rsplit_once('.')?;
    if object.is_empty()
        || suffix.len() != 16
        || !suffix
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let value = u64::from_str_radix(suffix, 16).ok()?;
    let kind = kind_of_code(value >> REVISION_BITS)?;
    Some((object, kind, value & REVISION_MASK))
}

/// The namespace of the events about `key`.
pub fn event_namespace(key: &ObjectKey) -> &str {
    if key.kind.namespaced() {
        &key.namespace
    } else {
        CLUSTER_EVENTS_NAMESPACE
    }
}

/// A stable uid for an event: a UUID (version 8) from the SHA-256 of namespace and name.
fn event_uid(namespace: &str, name: &str) -> String {
    let digest = Sha256::digest(format!("landscaper-appliance/events/{namespace}/{name}"));
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    uuid::Uuid::from_bytes(bytes).hyphenated().to_string()
}

const DELETION_REQUESTED: &str = "deletion requested";

/// What one history entry says, before aggregation.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Draft {
    reason: String,
    message: String,
    warning: bool,
    /// Repeats of this event are counted up rather than listed again.
    aggregatable: bool,
}

fn is_failure(phase: Option<&str>) -> bool {
    matches!(phase, Some("Failed" | "DeleteFailed"))
}

/// The condition types of the workflow conditions (issue 19): on a deploy item the type itself,
/// on an Execution `<item>/<type>`.
const WORKFLOW_CONDITION_TYPES: [&str; 4] = [
    "ReconcilePrecondition",
    "ReadyPostcondition",
    "DeletePostcondition",
    "ActivationCondition",
];

fn is_workflow_condition(ty: &str) -> bool {
    let base = ty.rsplit('/').next().unwrap_or(ty);
    WORKFLOW_CONDITION_TYPES.contains(&base)
}

/// The workflow conditions of `now` that are new or changed status against `before`.
fn changed_conditions<'a>(
    before: &[ConditionNote],
    now: &'a [ConditionNote],
) -> Vec<&'a ConditionNote> {
    now.iter()
        .filter(|c| is_workflow_condition(&c.r#type))
        .filter(|c| {
            before
                .iter()
                .find(|b| b.r#type == c.r#type)
                .is_none_or(|b| b.status != c.status)
        })
        .collect()
}

/// The event of workflow condition changes: the first changed type as the reason, every change
/// in the message; `Normal` for met and not met, `Warning` when one could not be evaluated.
fn condition_draft(changed: &[&ConditionNote]) -> Option<Draft> {
    let first = changed.first()?;
    let message = changed
        .iter()
        .map(|c| format!("{} {}: {}", c.r#type, c.status, c.message))
        .collect::<Vec<_>>()
        .join("; ");
    Some(Draft {
        reason: first
            .r#type
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string(),
        message,
        warning: changed.iter().any(|c| c.status == "Unknown"),
        aggregatable: false,
    })
}

/// The event a history entry is, if any. `conditions_changed`: the workflow conditions the
/// entry changed; they make the event of a change that is no phase transition.
fn draft(entry: &HistoryEntry, conditions_changed: &[&ConditionNote]) -> Option<Draft> {
    kind_code(entry.key.kind)?;
    let phase = entry.phase.as_deref();
    let error = entry
        .message
        .as_deref()
        .filter(|m| !m.is_empty() && *m != DELETION_REQUESTED);
    let with_error = |text: String| match error {
        Some(e) => format!("{text}: {e}"),
        None => text,
    };
    // Landscaper records waiting (`JobIDFinished: … is not finished yet`) in lastError too; that
    // is progress, not a warning.
    let warning =
        is_failure(phase) || (error.is_some() && !entry.waiting && phase != Some("Succeeded"));
    let draft = |reason: &str, message: String, warning: bool, aggregatable: bool| Draft {
        reason: reason.to_string(),
        message,
        warning,
        aggregatable,
    };
    if let (Some(taken), ChangeType::Added | ChangeType::Modified) =
        (&entry.taken_over, entry.change_type)
    {
        return Some(draft(
            "TakenOver",
            format!("took over {taken}, created through the API: the file defines it now"),
            false,
            false,
        ));
    }
    Some(match entry.change_type {
        ChangeType::Added => {
            let created = match phase {
                Some(p) => format!("created in phase {p}"),
                None => "created".to_string(),
            };
            draft("Created", with_error(created), warning, false)
        }
        ChangeType::Deleted => draft("Deleted", "deleted".to_string(), false, false),
        ChangeType::Modified if entry.is_phase_transition() => {
            let new = phase.unwrap_or_default();
            let text = match entry.previous_phase.as_deref() {
                Some(old) if !old.is_empty() => format!("phase {old} -> {new}"),
                _ => format!("phase {new}"),
            };
            // Workflow conditions recorded with the transition (an Installation records its
            // subinstallations' results in Init, its own ready postcondition when it
            // succeeds) are said in the same event.
            let mut event = draft(new, with_error(text), warning, false);
            if let Some(c) = condition_draft(conditions_changed) {
                event.message = format!("{}; {}", event.message, c.message);
                event.warning |= c.warning;
            }
            event
        }
        ChangeType::Modified if !conditions_changed.is_empty() => {
            condition_draft(conditions_changed)?
        }
        // As Landscaper's recorder: the lastError's reason and message; `Normal` while waiting.
        ChangeType::Modified => match (error, entry.message.as_deref()) {
            (Some(e), _) => draft(
                entry.reason.as_deref().unwrap_or("Error"),
                e.to_string(),
                !entry.waiting,
                true,
            ),
            (None, Some(DELETION_REQUESTED)) => draft(
                "DeletionRequested",
                DELETION_REQUESTED.to_string(),
                false,
                true,
            ),
            _ => return None,
        },
    })
}

/// An event being built from the history.
#[derive(Debug, Clone)]
struct Event {
    key: ObjectKey,
    name: String,
    first_time: String,
    last_time: String,
    last_revision: u64,
    count: u64,
    draft: Draft,
    /// Whether the event is about the object as it exists now: it comes after the object's
    /// last deletion in the history read (an older object of the same name had another uid).
    current: bool,
    /// `involvedObject.uid`, when known.
    uid: Option<String>,
}

impl Event {
    fn to_value(&self) -> Value {
        let namespace = event_namespace(&self.key);
        let kind = self.key.kind;
        let mut involved = Map::new();
        involved.insert("apiVersion".into(), json!(kind.api_version()));
        involved.insert("kind".into(), json!(kind.as_str()));
        involved.insert("name".into(), json!(self.key.name));
        if !self.key.namespace.is_empty() {
            involved.insert("namespace".into(), json!(self.key.namespace));
        }
        if let Some(uid) = &self.uid {
            involved.insert("uid".into(), json!(uid));
        }
        involved.insert(
            "resourceVersion".into(),
            json!(self.last_revision.to_string()),
        );
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": self.name,
                "namespace": namespace,
                "uid": event_uid(namespace, &self.name),
                "resourceVersion": self.last_revision.to_string(),
                "creationTimestamp": self.first_time,
            },
            "involvedObject": involved,
            "reason": self.draft.reason,
            "message": self.draft.message,
            "type": if self.draft.warning { "Warning" } else { "Normal" },
            "source": {"component": COMPONENT},
            "firstTimestamp": self.first_time,
            "lastTimestamp": self.last_time,
            "count": self.count,
            "eventTime": null,
            "reportingComponent": COMPONENT,
            "reportingInstance": "",
        })
    }
}

/// The events of history `entries` given oldest first, in the same order (without
/// `involvedObject.uid`, see [`resolve_uids`]).
pub fn derive<'a>(entries: impl IntoIterator<Item = &'a HistoryEntry>) -> Vec<Value> {
    derive_events(entries).iter().map(Event::to_value).collect()
}

fn derive_events<'a>(entries: impl IntoIterator<Item = &'a HistoryEntry>) -> Vec<Event> {
    let mut events: Vec<Event> = Vec::new();
    // Per object: the event its newest entry produced, if repeats may count it up.
    let mut open: HashMap<ObjectKey, usize> = HashMap::new();
    // Per object: its deletions so far, and that count for each event.
    let mut deletions: HashMap<ObjectKey, usize> = HashMap::new();
    let mut incarnations: Vec<usize> = Vec::new();
    // Per object: the conditions of its last entry.
    let mut conditions: HashMap<ObjectKey, Vec<ConditionNote>> = HashMap::new();
    for entry in entries {
        let before = conditions
            .insert(entry.key.clone(), entry.conditions.clone())
            .unwrap_or_default();
        let changed = changed_conditions(&before, &entry.conditions);
        let deleted_before = deletions.get(&entry.key).copied().unwrap_or(0);
        if entry.change_type == ChangeType::Deleted {
            deletions.insert(entry.key.clone(), deleted_before + 1);
        }
        let Some(draft) = draft(entry, &changed) else {
            open.remove(&entry.key);
            continue;
        };
        if let Some(&i) = open.get(&entry.key)
            && draft.aggregatable
            && events[i].draft == draft
        {
            let event = &mut events[i];
            event.count += 1;
            event.last_time.clone_from(&entry.time);
            event.last_revision = entry.revision;
            continue;
        }
        let Some(name) = event_name(&entry.key, entry.revision) else {
            continue;
        };
        if draft.aggregatable {
            open.insert(entry.key.clone(), events.len());
        } else {
            open.remove(&entry.key);
        }
        incarnations.push(deleted_before);
        events.push(Event {
            key: entry.key.clone(),
            name,
            first_time: entry.time.clone(),
            last_time: entry.time.clone(),
            last_revision: entry.revision,
            count: 1,
            draft,
            current: false,
            uid: None,
        });
    }
    for (event, incarnation) in events.iter_mut().zip(incarnations) {
        event.current = deletions.get(&event.key).copied().unwrap_or(0) == incarnation;
    }
    events
}

/// Sets `involvedObject.uid` of the events about objects as they exist now (so that
/// `kubectl describe`, which selects events by the object's uid, shows them).
fn resolve_uids(store: &Store, events: &mut [Event]) -> Result<(), StoreError> {
    let mut uids: HashMap<ObjectKey, Option<String>> = HashMap::new();
    for event in events.iter_mut().filter(|e| e.current) {
        let uid = match uids.get(&event.key) {
            Some(uid) => uid.clone(),
            None => {
                let uid = store
                    .get(&event.key)?
                    .map(|o| landscaper_store::object::uid(&o).to_string())
                    .filter(|uid| !uid.is_empty());
                uids.insert(event.key.clone(), uid.clone());
                uid
            }
        };
        event.uid = uid;
    }
    Ok(())
}

/// `ReadOptions` for events: the common query parameters, and a `fieldSelector` that also
/// knows [`FIELD_LABELS`].
pub fn read_options(params: &HashMap<String, String>) -> Result<ReadOptions, ApiError> {
    let mut rest = params.clone();
    let selector = rest.remove("fieldSelector");
    let mut options = ReadOptions::from_query(&rest)?;
    if let Some(selector) = selector {
        options.field_selector = FieldSelector::parse_with(&selector, FIELD_LABELS)?;
    }
    Ok(options)
}

/// The matching events of `namespace` (all for `None`) and the store revision they were
/// derived at.
pub async fn list(
    store: &Store,
    namespace: Option<&str>,
    options: &ReadOptions,
) -> Result<(Vec<Value>, u64), ApiError> {
    let store = store.clone();
    let wanted = namespace.map(str::to_string);
    let (events, revision) = blocking(move || {
        let revision = store.revision();
        let mut entries = store.recent_history(LIST_LIMIT)?;
        entries.reverse();
        let mut events = derive_events(&entries);
        events.retain(|e| {
            wanted
                .as_deref()
                .is_none_or(|ns| event_namespace(&e.key) == ns)
        });
        resolve_uids(&store, &mut events)?;
        Ok((events, revision))
    })
    .await?;
    let items = events
        .iter()
        .map(Event::to_value)
        .filter(|event| {
            options.label_selector.matches_object(event)
                && options.field_selector.matches_object(event)
        })
        .collect();
    Ok((items, revision))
}

/// The event `name` of `namespace`, from the involved object's history.
pub async fn get(store: &Store, namespace: &str, name: &str) -> Result<Value, ApiError> {
    let not_found = || ApiError::not_found("events", "", name);
    let (object, kind, revision) = parse_event_name(name).ok_or_else(not_found)?;
    let key_namespace = if kind.namespaced() {
        namespace
    } else if namespace == CLUSTER_EVENTS_NAMESPACE {
        ""
    } else {
        return Err(not_found());
    };
    if revision == 0 {
        return Err(not_found());
    }
    let key = ObjectKey::new(kind, key_namespace, object);
    let store = store.clone();
    let wanted = name.to_string();
    let found = blocking(move || {
        let mut entries = store.history(&key, LIST_LIMIT)?;
        entries.reverse();
        let mut events = derive_events(&entries);
        events.retain(|e| e.name == wanted);
        resolve_uids(&store, &mut events)?;
        Ok(events.first().map(Event::to_value))
    })
    .await?;
    found.ok_or_else(not_found)
}

/// The events of `namespace` (all for `None`) whose newest entry lies in `(after, upto]`, each
/// with whether it is new (`ADDED`) or an aggregated one counted up (`MODIFIED`), oldest
/// first. `upto` is a revision read before the history, so that entries committed meanwhile
/// are left to the next call instead of being sent twice.
fn changed_between(
    store: &Store,
    namespace: Option<&str>,
    after: u64,
    upto: u64,
) -> Result<Vec<(Value, bool)>, StoreError> {
    let mut entries = store.recent_history(LIST_LIMIT)?;
    entries.reverse();
    let mut events = derive_events(&entries);
    events.retain(|e| {
        (after + 1..=upto).contains(&e.last_revision)
            && namespace.is_none_or(|ns| event_namespace(&e.key) == ns)
    });
    resolve_uids(store, &mut events)?;
    Ok(events
        .iter()
        .map(|e| {
            let first = parse_event_name(&e.name).map_or(0, |(_, _, revision)| revision);
            (e.to_value(), first > after)
        })
        .collect())
}

/// `kubectl get events -w`: events as the history grows, from the store's change feed. Because
/// events are derived from the persisted history, a watcher that falls behind the feed loses
/// nothing: it derives again from the history (the newest [`LIST_LIMIT`] entries).
/// `resourceVersion=N` resumes after N; without one the current events come first as `ADDED`.
pub async fn watch(
    state: &super::ApiState,
    namespace: Option<String>,
    options: ReadOptions,
    table: Option<super::table::TableOptions>,
) -> Result<axum::response::Response, ApiError> {
    use super::negotiate::WatchStart;
    let start = options.watch_start()?;
    let mut feed = state.store.subscribe();
    let store = state.store.clone();
    let (first, last) = {
        let namespace = namespace.clone();
        blocking(move || {
            let now = store.revision();
            let (after, initial) = match start {
                WatchStart::Now { initial_events } => (now, initial_events),
                WatchStart::After(revision) => (revision, false),
            };
            let first = if initial {
                changed_between(&store, namespace.as_deref(), 0, now)?
                    .into_iter()
                    .map(|(event, _)| (event, true))
                    .collect()
            } else if after < now {
                changed_between(&store, namespace.as_deref(), after, now)?
            } else {
                Vec::new()
            };
            Ok((first, now.max(after)))
        })
        .await?
    };
    let timeout = options
        .timeout
        .filter(|t| !t.is_zero())
        .map(|t| t.min(state.options.max_watch_timeout))
        .unwrap_or(state.options.max_watch_timeout);
    let deadline = tokio::time::Instant::now() + timeout;
    let shutdown = state.shutdown.clone();
    let store = state.store.clone();
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(16);
    let encode = move |events: Vec<(Value, bool)>,
                       table: &mut Option<super::table::TableOptions>| {
        let mut out = Vec::new();
        for (event, added) in events {
            if !(options.label_selector.matches_object(&event)
                && options.field_selector.matches_object(&event))
            {
                continue;
            }
            let object = match table.as_mut() {
                None => event,
                Some(table_options) => {
                    let rv = event["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let rendered = super::table::to_table(
                        super::resources::Resource::Events,
                        &[event],
                        &rv,
                        table_options,
                    );
                    table_options.no_headers = true;
                    rendered
                }
            };
            let line = json!({"type": if added { "ADDED" } else { "MODIFIED" }, "object": object});
            if serde_json::to_writer(&mut out, &line).is_ok() {
                out.push(b'\n');
            }
        }
        out
    };
    tokio::spawn(async move {
        let mut table = table;
        let mut last = last;
        let chunk = encode(first, &mut table);
        if !chunk.is_empty() && tx.send(chunk).await.is_err() {
            return;
        }
        loop {
            let woke = tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep_until(deadline) => return,
                () = tx.closed() => return,
                received = feed.recv() => received,
            };
            // One derivation per burst: the change sets already waiting are taken with this
            // one (controllers commit many in a row).
            let mut relevant = false;
            let mut next = Some(woke);
            while let Some(received) = next.take() {
                match received {
                    Ok(set) => {
                        relevant |= set.changes.iter().any(|c| kind_code(c.key.kind).is_some());
                    }
                    // Behind the feed: the history still has everything.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => relevant = true,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
                next = match feed.try_recv() {
                    Ok(set) => Some(Ok(set)),
                    Err(tokio::sync::broadcast::error::TryRecvError::Lagged(n)) => {
                        Some(Err(tokio::sync::broadcast::error::RecvError::Lagged(n)))
                    }
                    Err(_) => None,
                };
            }
            if !relevant {
                continue;
            }
            let (store, namespace, after) = (store.clone(), namespace.clone(), last);
            let Ok(Ok((events, upto))) = tokio::task::spawn_blocking(move || {
                let upto = store.revision();
                changed_between(&store, namespace.as_deref(), after, upto).map(|e| (e, upto))
            })
            .await
            else {
                return;
            };
            last = last.max(upto);
            let chunk = encode(events, &mut table);
            if !chunk.is_empty() && tx.send(chunk).await.is_err() {
                return;
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| {
            (
                Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(chunk)),
                rx,
            )
        })
    });
    let mut response = axum::response::Response::new(axum::body::Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-cache, private"),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(
        revision: u64,
        key: &ObjectKey,
        change_type: ChangeType,
        phases: (Option<&str>, Option<&str>),
        message: Option<&str>,
    ) -> HistoryEntry {
        HistoryEntry {
            revision,
            time: format!("2024-05-01T10:00:{:02}Z", revision % 60),
            key: key.clone(),
            change_type,
            generation: Some(1),
            previous_phase: phases.0.map(str::to_string),
            phase: phases.1.map(str::to_string),
            message: message.map(str::to_string),
            reason: None,
            waiting: false,
            conditions: Vec::new(),
            taken_over: None,
        }
    }

    fn inst(name: &str) -> ObjectKey {
        ObjectKey::new(Kind::Installation, "e2e", name)
    }

    #[test]
    fn a_file_taking_over_api_objects_is_a_normal_event() {
        let file = ObjectKey::new(Kind::ManifestFile, "", "shop.yaml");
        let mut taken = entry(
            9,
            &file,
            ChangeType::Modified,
            (Some("Applied"), Some("Applied")),
            None,
        );
        // Without the note, an unchanged phase is no event.
        assert!(draft(&taken, &[]).is_none());
        taken.taken_over = Some("Installation e2e/shop".into());
        let event = draft(&taken, &[]).unwrap();
        assert_eq!(event.reason, "TakenOver");
        assert!(!event.warning);
        assert_eq!(
            event.message,
            "took over Installation e2e/shop, created through the API: the file defines it now"
        );
        // Also when the file is new.
        taken.change_type = ChangeType::Added;
        assert_eq!(draft(&taken, &[]).unwrap().reason, "TakenOver");
    }

    #[test]
    fn names_are_stable_unique_and_parse_back() {
        let a = inst("a");
        let exec = ObjectKey::new(Kind::Execution, "e2e", "a");
        let file = ObjectKey::new(Kind::ManifestFile, "", "dir/a.yaml");
        assert_eq!(event_name(&a, 7).unwrap(), "a.0000000000000007");
        assert_eq!(event_name(&exec, 7).unwrap(), "a.1000000000000007");
        assert_eq!(
            event_name(
                &ObjectKey::new(Kind::DeployItem, "e2e", "a-item-x2b4c"),
                255
            )
            .unwrap(),
            "a-item-x2b4c.20000000000000ff"
        );
        assert_eq!(
            event_name(&file, 16).unwrap(),
            "dir/a.yaml.3000000000000010"
        );
        assert_eq!(
            event_name(&ObjectKey::new(Kind::Secret, "e2e", "s"), 1),
            None
        );
        assert_eq!(
            event_name(&ObjectKey::new(Kind::Target, "e2e", "t"), 1),
            None
        );
        assert_eq!(
            parse_event_name("a.1000000000000007"),
            Some(("a", Kind::Execution, 7))
        );
        assert_eq!(
            parse_event_name("a.yaml.3000000000000010"),
            Some(("a.yaml", Kind::ManifestFile, 16))
        );
        for bad in [
            "a",
            "a.7",
            ".0000000000000007",
            "a.000000000000000G",
            "a.00000000000000007",
            "a.F000000000000007",
            "a.f000000000000007",
        ] {
            assert_eq!(parse_event_name(bad), None, "{bad}");
        }
        assert_eq!(event_namespace(&a), "e2e");
        assert_eq!(event_namespace(&file), "default");
        assert_eq!(
            event_uid("e2e", "a.0000000000000007"),
            event_uid("e2e", "a.0000000000000007")
        );
        assert_ne!(
            event_uid("e2e", "a.0000000000000007"),
            event_uid("e2e", "a.1000000000000007")
        );
        assert_eq!(event_uid("e2e", "x").len(), 36);
    }

    #[test]
    fn subinstallation_condition_results_recorded_with_a_phase_transition_are_in_its_event() {
        // An Installation records its subinstallations' results in Init, together with the
        // transition to CleanupOrphaned: the event of the transition says them.
        let key = inst("root");
        let note = |ty: &str, status: &str, message: &str| ConditionNote {
            r#type: ty.into(),
            status: status.into(),
            message: message.into(),
        };
        let mut first = entry(
            4,
            &key,
            ChangeType::Modified,
            (Some("Init"), Some("CleanupOrphaned")),
            None,
        );
        first.conditions = vec![note(
            "a/ReconcilePrecondition",
            "False",
            "imports.on is false",
        )];
        // The next job: the same result again, no condition in the event.
        let mut second = entry(
            9,
            &key,
            ChangeType::Modified,
            (Some("Init"), Some("CleanupOrphaned")),
            None,
        );
        second.conditions = first.conditions.clone();
        let events = derive([&first, &second]);
        assert_eq!(
            events[0]["message"],
            "phase Init -> CleanupOrphaned; a/ReconcilePrecondition False: imports.on is false"
        );
        assert_eq!(events[0]["reason"], "CleanupOrphaned");
        assert_eq!(events[0]["type"], "Normal");
        assert_eq!(events[1]["message"], "phase Init -> CleanupOrphaned");
    }

    #[test]
    fn workflow_condition_changes_are_events() {
        let di = ObjectKey::new(Kind::DeployItem, "e2e", "item");
        let note = |ty: &str, status: &str, message: &str| ConditionNote {
            r#type: ty.into(),
            status: status.into(),
            message: message.into(),
        };
        let with = |revision, conditions: Vec<ConditionNote>, message: Option<&str>| {
            let mut e = entry(
                revision,
                &di,
                ChangeType::Modified,
                (Some("Succeeded"), Some("Succeeded")),
                message,
            );
            e.conditions = conditions;
            e
        };
        let history = [
            entry(3, &di, ChangeType::Added, (None, None), None),
            with(
                4,
                vec![note("ActivationCondition", "False", "not present")],
                None,
            ),
            // Same status again (another message): no event.
            with(
                5,
                vec![note("ActivationCondition", "False", "still not")],
                None,
            ),
            // Other condition types are not the workflow's.
            with(
                6,
                vec![
                    note("ActivationCondition", "False", "still not"),
                    note("Ready", "True", ""),
                ],
                None,
            ),
            with(
                7,
                vec![note("ActivationCondition", "True", "present")],
                Some("waiting"),
            ),
            with(
                8,
                vec![note("ActivationCondition", "Unknown", "cannot read")],
                None,
            ),
        ];
        let events = derive(history.iter());
        let summary: Vec<(String, String, String)> = events
            .iter()
            .map(|e| {
                (
                    e["reason"].as_str().unwrap_or_default().to_string(),
                    e["type"].as_str().unwrap_or_default().to_string(),
                    e["message"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
        assert_eq!(
            summary,
            vec![
                s("Created", "Normal", "created"),
                s(
                    "ActivationCondition",
                    "Normal",
                    "ActivationCondition False: not present"
                ),
                s(
                    "ActivationCondition",
                    "Normal",
                    "ActivationCondition True: present"
                ),
                s(
                    "ActivationCondition",
                    "Warning",
                    "ActivationCondition Unknown: cannot read"
                ),
            ]
        );
        // On an Execution the type names the item.
        let changed = [note("mon/ActivationCondition", "False", "x")];
        let draft = condition_draft(&changed.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!(draft.reason, "ActivationCondition");
        assert_eq!(draft.message, "mon/ActivationCondition False: x");
    }

    #[test]
    fn maps_creations_transitions_and_deletions() {
        let a = inst("a");
        let history = [
            entry(3, &a, ChangeType::Added, (None, None), None),
            entry(4, &a, ChangeType::Modified, (None, Some("Init")), None),
            // A change without a phase transition or message is no event.
            entry(
                5,
                &a,
                ChangeType::Modified,
                (Some("Init"), Some("Init")),
                None,
            ),
            entry(
                6,
                &a,
                ChangeType::Modified,
                (Some("Init"), Some("Progressing")),
                None,
            ),
            entry(
                8,
                &a,
                ChangeType::Modified,
                (Some("Progressing"), Some("Succeeded")),
                None,
            ),
            entry(
                9,
                &a,
                ChangeType::Deleted,
                (Some("Succeeded"), Some("Succeeded")),
                None,
            ),
        ];
        let events = derive(&history);
        let summary: Vec<(&str, &str, &str)> = events
            .iter()
            .map(|e| {
                (
                    e["reason"].as_str().unwrap(),
                    e["type"].as_str().unwrap(),
                    e["message"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("Created", "Normal", "created"),
                ("Init", "Normal", "phase Init"),
                ("Progressing", "Normal", "phase Init -> Progressing"),
                ("Succeeded", "Normal", "phase Progressing -> Succeeded"),
                ("Deleted", "Normal", "deleted"),
            ]
        );
        let succeeded = &events[3];
        assert_eq!(
            succeeded,
            &json!({
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {
                    "name": "a.0000000000000008",
                    "namespace": "e2e",
                    "uid": event_uid("e2e", "a.0000000000000008"),
                    "resourceVersion": "8",
                    "creationTimestamp": "2024-05-01T10:00:08Z",
                },
                "involvedObject": {
                    "apiVersion": "landscaper.gardener.cloud/v1alpha1",
                    "kind": "Installation",
                    "name": "a",
                    "namespace": "e2e",
                    "resourceVersion": "8",
                },
                "reason": "Succeeded",
                "message": "phase Progressing -> Succeeded",
                "type": "Normal",
                "source": {"component": "landscaper-appliance"},
                "firstTimestamp": "2024-05-01T10:00:08Z",
                "lastTimestamp": "2024-05-01T10:00:08Z",
                "count": 1,
                "eventTime": null,
                "reportingComponent": "landscaper-appliance",
                "reportingInstance": "",
            })
        );
    }

    #[test]
    fn failures_and_errors_are_warnings_and_repeats_are_counted() {
        let di = ObjectKey::new(Kind::DeployItem, "e2e", "a-item-x2b4c");
        let history = [
            entry(
                10,
                &di,
                ChangeType::Modified,
                (Some("Init"), Some("Progressing")),
                Some("cluster unreachable"),
            ),
            entry(
                11,
                &di,
                ChangeType::Modified,
                (Some("Progressing"), Some("Progressing")),
                Some("cluster unreachable"),
            ),
            entry(
                12,
                &di,
                ChangeType::Modified,
                (Some("Progressing"), Some("Progressing")),
                Some("cluster unreachable"),
            ),
            entry(
                13,
                &di,
                ChangeType::Modified,
                (Some("Progressing"), Some("Failed")),
                Some("deadline exceeded"),
            ),
            // Same message again after another event: a new Error event.
            entry(
                14,
                &di,
                ChangeType::Modified,
                (Some("Failed"), Some("Failed")),
                Some("cluster unreachable"),
            ),
            // An error that clears ends the repeat.
            entry(
                15,
                &di,
                ChangeType::Modified,
                (Some("Failed"), Some("Failed")),
                None,
            ),
            entry(
                16,
                &di,
                ChangeType::Modified,
                (Some("Failed"), Some("Failed")),
                Some("cluster unreachable"),
            ),
            entry(
                17,
                &di,
                ChangeType::Modified,
                (Some("Failed"), Some("Succeeded")),
                Some("stale error"),
            ),
        ];
        let events = derive(&history);
        let summary: Vec<(&str, &str, &str, u64)> = events
            .iter()
            .map(|e| {
                (
                    e["reason"].as_str().unwrap(),
                    e["type"].as_str().unwrap(),
                    e["message"].as_str().unwrap(),
                    e["count"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "Progressing",
                    "Warning",
                    "phase Init -> Progressing: cluster unreachable",
                    1
                ),
                ("Error", "Warning", "cluster unreachable", 2),
                (
                    "Failed",
                    "Warning",
                    "phase Progressing -> Failed: deadline exceeded",
                    1
                ),
                ("Error", "Warning", "cluster unreachable", 1),
                ("Error", "Warning", "cluster unreachable", 1),
                (
                    "Succeeded",
                    "Normal",
                    "phase Failed -> Succeeded: stale error",
                    1
                ),
            ]
        );
        let counted = &events[1];
        assert_eq!(counted["metadata"]["name"], "a-item-x2b4c.200000000000000b");
        assert_eq!(counted["metadata"]["resourceVersion"], "12");
        assert_eq!(counted["firstTimestamp"], "2024-05-01T10:00:11Z");
        assert_eq!(counted["lastTimestamp"], "2024-05-01T10:00:12Z");
        assert_eq!(
            counted["metadata"]["creationTimestamp"],
            "2024-05-01T10:00:11Z"
        );
        assert_eq!(counted["involvedObject"]["kind"], "DeployItem");
    }

    #[test]
    fn waiting_is_normal_and_errors_carry_landscapers_reason() {
        let a = inst("a");
        let with = |mut e: HistoryEntry, reason: &str, waiting: bool| {
            e.reason = Some(reason.to_string());
            e.waiting = waiting;
            e
        };
        let history = [
            with(
                entry(
                    20,
                    &a,
                    ChangeType::Modified,
                    (Some("CleanupOrphaned"), Some("Progressing")),
                    Some("execution e2e / a is not finished yet"),
                ),
                "JobIDFinished",
                true,
            ),
            with(
                entry(
                    21,
                    &a,
                    ChangeType::Modified,
                    (Some("Progressing"), Some("Progressing")),
                    Some("installation e2e / b is not finished yet"),
                ),
                "JobIDFinished",
                true,
            ),
            with(
                entry(
                    22,
                    &a,
                    ChangeType::Modified,
                    (Some("Progressing"), Some("Progressing")),
                    Some("import \"x\": DataObject \"x\" not found"),
                ),
                "ImportsSatisfied",
                false,
            ),
        ];
        let events = derive(&history);
        let summary: Vec<(&str, &str)> = events
            .iter()
            .map(|e| (e["reason"].as_str().unwrap(), e["type"].as_str().unwrap()))
            .collect();
        assert_eq!(
            summary,
            [
                ("Progressing", "Normal"),
                ("JobIDFinished", "Normal"),
                ("ImportsSatisfied", "Warning"),
            ]
        );
    }

    #[test]
    fn deletion_requests_and_manifest_files() {
        let a = inst("a");
        let file = ObjectKey::new(Kind::ManifestFile, "", "a.yaml");
        let history = [
            entry(
                20,
                &file,
                ChangeType::Added,
                (None, None),
                Some("1:3: bad YAML"),
            ),
            entry(
                21,
                &a,
                ChangeType::Modified,
                (Some("Succeeded"), Some("Succeeded")),
                Some("deletion requested"),
            ),
            entry(
                22,
                &a,
                ChangeType::Modified,
                (Some("Succeeded"), Some("Succeeded")),
                Some("deletion requested"),
            ),
            entry(
                23,
                &a,
                ChangeType::Modified,
                (Some("Succeeded"), Some("InitDelete")),
                None,
            ),
            entry(
                24,
                &a,
                ChangeType::Modified,
                (Some("Deleting"), Some("DeleteFailed")),
                None,
            ),
        ];
        let events = derive(&history);
        assert_eq!(events.len(), 4);
        assert_eq!(events[0]["reason"], "Created");
        assert_eq!(events[0]["type"], "Warning");
        assert_eq!(events[0]["message"], "created: 1:3: bad YAML");
        assert_eq!(events[0]["metadata"]["namespace"], "default");
        assert_eq!(events[0]["metadata"]["name"], "a.yaml.3000000000000014");
        assert_eq!(events[0]["involvedObject"].get("namespace"), None);
        assert_eq!(
            events[0]["involvedObject"]["apiVersion"],
            "appliance.landscaper-appliance.io/v1alpha1"
        );
        assert_eq!(events[1]["reason"], "DeletionRequested");
        assert_eq!(events[1]["type"], "Normal");
        assert_eq!(events[1]["count"], 2);
        assert_eq!(events[2]["reason"], "InitDelete");
        assert_eq!(events[3]["reason"], "DeleteFailed");
        assert_eq!(events[3]["type"], "Warning");
    }

    #[test]
    fn only_events_after_the_last_deletion_are_about_the_current_object() {
        let a = inst("a");
        let b = inst("b");
        let history = [
            entry(1, &a, ChangeType::Added, (None, None), None),
            entry(2, &b, ChangeType::Added, (None, None), None),
            entry(3, &a, ChangeType::Deleted, (None, None), None),
            entry(4, &a, ChangeType::Added, (None, None), None),
            entry(5, &a, ChangeType::Modified, (None, Some("Init")), None),
            entry(6, &b, ChangeType::Deleted, (None, None), None),
        ];
        let current: Vec<(u64, bool)> = derive_events(&history)
            .iter()
            .map(|e| (e.last_revision, e.current))
            .collect();
        assert_eq!(
            current,
            [
                (1, false),
                (2, false),
                (3, false),
                (4, true),
                (5, true),
                (6, false)
            ]
        );
    }

    #[test]
    fn secrets_and_targets_never_become_events() {
        let history: Vec<HistoryEntry> = [
            Kind::Secret,
            Kind::Target,
            Kind::ConfigMap,
            Kind::DataObject,
            Kind::Context,
        ]
        .into_iter()
        .enumerate()
        .flat_map(|(i, kind)| {
            let key = ObjectKey::new(kind, "e2e", "s");
            [
                entry(
                    i as u64 * 3 + 1,
                    &key,
                    ChangeType::Added,
                    (None, None),
                    Some("hunter2"),
                ),
                entry(
                    i as u64 * 3 + 2,
                    &key,
                    ChangeType::Modified,
                    (None, Some("Failed")),
                    Some("hunter2"),
                ),
                entry(
                    i as u64 * 3 + 3,
                    &key,
                    ChangeType::Deleted,
                    (None, None),
                    None,
                ),
            ]
        })
        .collect();
        assert_eq!(derive(&history), Vec::<Value>::new());
    }

    #[test]
    fn field_selectors_know_the_event_fields() {
        let a = inst("a");
        let exec = ObjectKey::new(Kind::Execution, "e2e", "a");
        let history = [
            entry(3, &a, ChangeType::Added, (None, None), None),
            entry(3, &exec, ChangeType::Added, (None, None), None),
            entry(
                4,
                &exec,
                ChangeType::Modified,
                (None, Some("Failed")),
                Some("boom"),
            ),
        ];
        let events = derive(&history);
        let names = |selector: &str| -> Vec<String> {
            let params = HashMap::from([("fieldSelector".to_string(), selector.to_string())]);
            let options = read_options(&params).unwrap();
            events
                .iter()
                .filter(|e| options.field_selector.matches_object(e))
                .map(|e| e["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(
            names("involvedObject.kind=Installation"),
            ["a.0000000000000003"]
        );
        assert_eq!(
            names("involvedObject.kind=Execution,type=Warning"),
            ["a.1000000000000004"]
        );
        assert_eq!(names("reason=Failed"), ["a.1000000000000004"]);
        assert_eq!(names("involvedObject.name=a,reason!=Created").len(), 1);
        assert_eq!(names("involvedObject.namespace=e2e").len(), 3);
        assert_eq!(names("metadata.namespace=other").len(), 0);
        assert_eq!(
            names("metadata.name=a.1000000000000003"),
            ["a.1000000000000003"]
        );
        assert_eq!(names("reportingComponent=landscaper-appliance").len(), 3);
        let params = HashMap::from([("fieldSelector".to_string(), "spec.x=y".to_string())]);
        assert_eq!(read_options(&params).unwrap_err().code.as_u16(), 400);
        // The other query parameters are still checked.
        let params = HashMap::from([("continue".to_string(), "x".to_string())]);
        assert!(read_options(&params).is_err());
    }

    #[tokio::test]
    async fn lists_and_gets_from_the_store_history() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            &dir.path().join("db.redb"),
            landscaper_store::StoreOptions {
                durable: false,
                ..Default::default()
            },
        )
        .unwrap();
        let inst = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
            "metadata": {"name": "a", "namespace": "e2e"}});
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "e2e"}, "data": {"k": "aHVudGVyMg=="}});
        store
            .commit(
                landscaper_store::Transaction::new()
                    .create(inst)
                    .create(secret),
            )
            .await
            .unwrap();
        let mut failed = store
            .get(&ObjectKey::new(Kind::Installation, "e2e", "a"))
            .unwrap()
            .unwrap();
        failed["status"] = json!({"phase": "Failed", "lastError": {"message": "boom"}});
        store
            .commit(landscaper_store::Transaction::new().update(failed))
            .await
            .unwrap();
        // A watch's window (after, upto]: the creation only, the failure only, or nothing.
        let now = store.revision();
        let reasons = |after, upto| -> Vec<(String, bool)> {
            changed_between(&store, Some("e2e"), after, upto)
                .unwrap()
                .into_iter()
                .map(|(e, added)| (e["reason"].as_str().unwrap().to_string(), added))
                .collect()
        };
        assert_eq!(reasons(0, now - 1), [("Created".to_string(), true)]);
        assert_eq!(reasons(now - 1, now), [("Failed".to_string(), true)]);
        assert!(reasons(now, now).is_empty());
        assert!(
            changed_between(&store, Some("other"), 0, now)
                .unwrap()
                .is_empty()
        );
        let (all, revision) = list(&store, None, &ReadOptions::default()).await.unwrap();
        assert_eq!(revision, store.revision());
        assert_eq!(all.len(), 2, "{all:?}");
        let uid = store
            .get(&ObjectKey::new(Kind::Installation, "e2e", "a"))
            .unwrap()
            .unwrap()["metadata"]["uid"]
            .clone();
        assert!(uid.is_string());
        assert_eq!(all[0]["involvedObject"]["uid"], uid);
        assert_eq!(all[1]["involvedObject"]["uid"], uid);
        assert!(!serde_json::to_string(&all).unwrap().contains("aHVudGVy"));
        assert_eq!(all[1]["reason"], "Failed");
        assert_eq!(all[1]["type"], "Warning");
        assert_eq!(all[1]["message"], "phase Failed: boom");
        let (other, _) = list(&store, Some("other"), &ReadOptions::default())
            .await
            .unwrap();
        assert!(other.is_empty());
        let name = all[1]["metadata"]["name"].as_str().unwrap();
        let got = get(&store, "e2e", name).await.unwrap();
        assert_eq!(got, all[1]);
        assert_eq!(
            get(&store, "other", name).await.unwrap_err().code.as_u16(),
            404
        );
        assert_eq!(
            get(&store, "e2e", "a").await.unwrap_err().code.as_u16(),
            404
        );
        assert_eq!(
            get(&store, "e2e", "a.1000000000000001")
                .await
                .unwrap_err()
                .code
                .as_u16(),
            404
        );
    }
}
