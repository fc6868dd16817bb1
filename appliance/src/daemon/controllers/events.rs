//! From store changes to work-queue keys: an object's own key, and the objects that wait on
//! it (a deploy item's Execution, an Execution's Installation, an Installation's parent, the
//! successors of an Installation that finished its job, and the siblings connected to a
//! removed Installation by data flow, which may wait for it).

use std::time::Duration;

use landscaper_store::flow::installation_flows;
use landscaper_store::model::Installation;
use landscaper_store::model::constants::{
    ENCOMPASSED_BY_LABEL, OPERATION_ANNOTATION, OPERATION_RECONCILE,
};
use landscaper_store::{
    Change, ChangeType, FlowDirection, FlowRef, Kind, LabelSelector, ObjectKey, Store, object,
};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::Queues;

/// The owner of `kind` named in the object's ownerReferences (same namespace).
pub fn owner_of_kind(object: &Value, kind: Kind) -> Option<ObjectKey> {
    let refs = object.pointer("/metadata/ownerReferences")?.as_array()?;
    refs.iter().find_map(|r| {
        (r.get("kind").and_then(Value::as_str) == Some(kind.as_str())).then(|| {
            ObjectKey::new(
                kind,
                object::namespace(object),
                r.get("name").and_then(Value::as_str).unwrap_or_default(),
            )
        })
    })
}

/// Keys to look at because of one change (without the store lookups for siblings).
pub fn keys_for_change(change: &Change) -> Vec<ObjectKey> {
    let mut keys = Vec::new();
    match change.key.kind {
        Kind::Installation | Kind::Execution | Kind::DeployItem => keys.push(change.key.clone()),
        _ => return keys,
    }
    let parent_kind = match change.key.kind {
        Kind::DeployItem => Kind::Execution,
        _ => Kind::Installation,
    };
    if let Some(owner) = owner_of_kind(&change.object, parent_kind) {
        keys.push(owner);
    }
    keys
}

/// How a job ended, when `change` ends one: an Installation, Execution or DeployItem entering
/// `Succeeded`, `Failed` or `DeleteFailed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOutcome {
    /// `Installation`, `Execution`, `DeployItem`.
    pub what: &'static str,
    /// `namespace/name`.
    pub object: String,
    pub phase: String,
    /// The last error's reason and first line, for failures.
    pub reason: Option<String>,
    pub error: Option<String>,
}

pub fn job_outcome(change: &Change) -> Option<JobOutcome> {
    let what = match change.key.kind {
        Kind::Installation | Kind::Execution | Kind::DeployItem => change.key.kind.as_str(),
        _ => return None,
    };
    if change.change_type == ChangeType::Deleted {
        return None;
    }
    let phase = object::phase(&change.object)?;
    if !matches!(phase, "Succeeded" | "Failed" | "DeleteFailed")
        || change.previous_phase.as_deref() == Some(phase)
    {
        return None;
    }
    let failed = phase != "Succeeded";
    let text = |field: &str| {
        change
            .object
            .pointer(&format!("/status/lastError/{field}"))
            .and_then(Value::as_str)
            .filter(|t| failed && !t.is_empty())
            .map(|t| t.lines().next().unwrap_or_default().to_string())
    };
    Some(JobOutcome {
        what,
        object: format!("{}/{}", change.key.namespace, change.key.name),
        phase: phase.to_string(),
        reason: text("reason"),
        error: text("message"),
    })
}

/// Logs a finished job: successes at INFO, failures at WARN, with stable keys (`kind`,
/// `object`, `phase`, `reason`, `error`; a multi-line error is logged by its first line, the
/// rest is in `describe`).
fn log_job_outcome(change: &Change) {
    let Some(o) = job_outcome(change) else {
        return;
    };
    if o.phase == "Succeeded" {
        tracing::info!(kind = %o.what, object = %o.object, phase = %o.phase, "job succeeded");
    } else {
        tracing::warn!(
            kind = %o.what,
            object = %o.object,
            phase = %o.phase,
            reason = %o.reason.as_deref().unwrap_or("-"),
            error = ?o.error.as_deref().unwrap_or_default(),
            "job failed"
        );
    }
}

/// The siblings connected to a removed installation by data flow: its predecessors may wait
/// in `InitDelete` for it to go, its successors wait on its exports.
pub fn flow_neighbours(store: &Store, object: &Value) -> Vec<ObjectKey> {
    use super::installation::dataflow;
    let Ok(inst) = landscaper_store::model::from_value::<Installation>(object) else {
        return Vec::new();
    };
    let mut neighbours = dataflow::exporters_of_imports(store, &inst).unwrap_or_default();
    neighbours.extend(dataflow::importers_of_exports(store, &inst).unwrap_or_default());
    neighbours
        .iter()
        .map(|s| {
            ObjectKey::new(
                Kind::Installation,
                object::namespace(object),
                dataflow::name(s),
            )
        })
        .collect()
}

/// Whether an installation is what its successors' predecessor check waits for: its job has
/// finished in a final phase and no new job is requested (the reconcile annotation of a root
/// starts one). Successors waiting in `Init` can go on (or fail, after a failed predecessor).
pub fn finished_for_successors(object: &Value) -> bool {
    let status = object.get("status");
    let field = |name: &str| status.and_then(|s| s.get(name)).and_then(Value::as_str);
    field("jobID").is_some()
        && field("jobID") == field("jobIDFinished")
        && field("phase").is_some_and(super::jobs::is_final_text)
        && object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(OPERATION_ANNOTATION))
            .and_then(Value::as_str)
            != Some(OPERATION_RECONCILE)
}

/// The installations of the same scope (namespace and parent) that import something the
/// installation `object` exports, by name from the store's data-flow index (no object reads).
pub fn importers_of(store: &Store, object: &Value) -> Vec<ObjectKey> {
    let namespace = object::namespace(object);
    let parent = object
        .pointer("/metadata/labels")
        .and_then(|l| l.get(ENCOMPASSED_BY_LABEL))
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty());
    let own = object::name(object);
    let mut keys: Vec<ObjectKey> = Vec::new();
    for (direction, kind, reference) in installation_flows(object) {
        if direction != FlowDirection::Export {
            continue;
        }
        let flow = FlowRef {
            direction: FlowDirection::Import,
            kind,
            reference: &reference,
        };
        match store.installations_by_flow(namespace, parent, flow) {
            Ok(names) => keys.extend(
                names
                    .into_iter()
                    .filter(|n| n != own)
                    .map(|n| ObjectKey::new(Kind::Installation, namespace, n)),
            ),
            Err(e) => {
                tracing::warn!(installation = %own, error = %e, "looking up the successors failed")
            }
        }
    }
    keys.sort_by(|a, b| a.name.cmp(&b.name));
    keys.dedup();
    keys
}

/// Kubernetes' background cascading deletion: the objects owned by a removed object are
/// deleted too (those with finalizers get their deletionTimestamp).
async fn collect_garbage(store: &Store, removed: &Value) {
    let uid = object::uid(removed);
    if uid.is_empty() {
        return;
    }
    let children = match store.children(uid) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "listing owned objects for garbage collection failed");
            return;
        }
    };
    for child in children {
        // Only objects whose every owner is gone.
        if object::owner_uids(&child)
            .iter()
            .any(|u| u != uid && store.get_by_uid(u).ok().flatten().is_some())
        {
            continue;
        }
        if object::deletion_timestamp(&child).is_some() {
            continue;
        }
        let Ok(key) = object::key_of(&child) else {
            continue;
        };
        // One transaction each: a child removed meanwhile must not block the others.
        match store
            .commit(landscaper_store::Transaction::new().delete(key.clone(), None))
            .await
        {
            Ok(_)
            | Err(landscaper_store::StoreError::Transaction(
                landscaper_store::TransactionError::NotFound { .. },
            )) => {}
            Err(e) => {
                tracing::warn!(%key, error = %e, "garbage collection of an owned object failed")
            }
        }
    }
}

fn enqueue(queues: &Queues, key: ObjectKey) {
    if let Some(q) = queues.for_kind(key.kind) {
        q.add(key);
    }
}

fn enqueue_all(store: &Store, queues: &Queues) {
    for kind in [Kind::Installation, Kind::Execution, Kind::DeployItem] {
        match store.list(kind, None, &LabelSelector::default()) {
            Ok(list) => {
                for o in &list.items {
                    enqueue(
                        queues,
                        ObjectKey::new(kind, object::namespace(o), object::name(o)),
                    );
                }
            }
            Err(e) => tracing::error!(error = %e, %kind, "listing for a resync failed"),
        }
    }
}

/// Feeds the queues from the change feed until `cancel`: everything once at the start (jobs
/// that were running when the process stopped continue), then by change, and everything again
/// every `resync` and whenever the feed overflowed.
pub async fn feed(store: Store, queues: Queues, resync: Duration, cancel: CancellationToken) {
    let mut changes = store.subscribe();
    enqueue_all(&store, &queues);
    let mut resync_timer = tokio::time::interval(resync.max(Duration::from_secs(1)));
    resync_timer.tick().await;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = resync_timer.tick() => enqueue_all(&store, &queues),
            received = changes.recv() => match received {
                Ok(set) => {
                    for change in &set.changes {
                        log_job_outcome(change);
                        for key in keys_for_change(change) {
                            enqueue(&queues, key);
                        }
                        // Successors wait in Init for this one: wake them when it is done
                        // rather than on their growing re-check timers.
                        if change.key.kind == Kind::Installation
                            && change.change_type != ChangeType::Deleted
                            && finished_for_successors(&change.object)
                        {
                            for key in importers_of(&store, &change.object) {
                                enqueue(&queues, key);
                            }
                        }
                        if change.change_type == ChangeType::Deleted {
                            if change.key.kind == Kind::Installation {
                                for key in flow_neighbours(&store, &change.object) {
                                    enqueue(&queues, key);
                                }
                            }
                            collect_garbage(&store, &change.object).await;
                        }
                    }
                }
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "controllers fell behind the change feed; looking at everything");
                    enqueue_all(&store, &queues);
                }
                Err(RecvError::Closed) => return,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn change(kind: Kind, object: Value) -> Change {
        Change {
            change_type: ChangeType::Modified,
            key: ObjectKey::new(kind, "ns", object::name(&object)),
            object,
            previous_phase: None,
        }
    }

    #[test]
    fn finished_jobs_are_outcomes_with_the_first_line_of_their_error() {
        let mut failed = change(
            Kind::Installation,
            json!({"metadata": {"name": "a", "namespace": "ns"}, "status": {"phase": "Failed",
                "lastError": {"operation": "Op", "reason": "ReconcileExecution",
                    "message": "template: x:7:20: nil pointer\n7: {{ .x }}\n   ^"}}}),
        );
        failed.previous_phase = Some("Init".into());
        assert_eq!(
            job_outcome(&failed),
            Some(JobOutcome {
                what: "Installation",
                object: "ns/a".into(),
                phase: "Failed".into(),
                reason: Some("ReconcileExecution".into()),
                error: Some("template: x:7:20: nil pointer".into()),
            })
        );
        let mut ok = change(
            Kind::DeployItem,
            json!({"metadata": {"name": "d", "namespace": "ns"}, "status": {"phase": "Succeeded",
                "lastError": {"reason": "stale", "message": "m"}}}),
        );
        ok.previous_phase = Some("Progressing".into());
        let outcome = job_outcome(&ok).expect("a finished job");
        assert_eq!((outcome.what, outcome.reason), ("DeployItem", None));
        // No transition, no outcome: a rewrite of a failed object is not logged again.
        failed.previous_phase = Some("Failed".into());
        assert_eq!(job_outcome(&failed), None);
        let mut waiting = change(
            Kind::Execution,
            json!({"metadata": {"name": "e", "namespace": "ns"}, "status": {"phase": "Progressing"}}),
        );
        waiting.previous_phase = Some("Init".into());
        assert_eq!(job_outcome(&waiting), None);
    }

    #[test]
    fn deploy_item_changes_wake_their_execution_and_executions_their_installation() {
        let di = json!({"metadata": {"name": "di", "namespace": "ns",
            "ownerReferences": [{"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Execution", "name": "ex", "uid": "u"}]}});
        assert_eq!(
            keys_for_change(&change(Kind::DeployItem, di)),
            vec![
                ObjectKey::new(Kind::DeployItem, "ns", "di"),
                ObjectKey::new(Kind::Execution, "ns", "ex")
            ]
        );
        let ex = json!({"metadata": {"name": "ex", "namespace": "ns",
            "ownerReferences": [{"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation", "name": "inst", "uid": "u"}]}});
        assert_eq!(
            keys_for_change(&change(Kind::Execution, ex)),
            vec![
                ObjectKey::new(Kind::Execution, "ns", "ex"),
                ObjectKey::new(Kind::Installation, "ns", "inst")
            ]
        );
    }

    #[test]
    fn successors_are_woken_once_the_job_finished_and_no_new_one_is_requested() {
        let done = json!({"metadata": {"name": "a", "namespace": "ns"},
            "status": {"phase": "Succeeded", "jobID": "j1", "jobIDFinished": "j1"}});
        assert!(finished_for_successors(&done));
        let mut failed = done.clone();
        failed["status"]["phase"] = json!("Failed");
        assert!(finished_for_successors(&failed));
        let mut running = done.clone();
        running["status"]["jobID"] = json!("j2");
        assert!(!finished_for_successors(&running));
        let mut requested = done.clone();
        requested["metadata"]["annotations"] =
            json!({"landscaper.gardener.cloud/operation": "reconcile"});
        assert!(!finished_for_successors(&requested));
        let mut fresh = done.clone();
        fresh["status"] = json!({});
        assert!(!finished_for_successors(&fresh));
    }

    #[test]
    fn other_kinds_wake_nothing() {
        let t = json!({"metadata": {"name": "t", "namespace": "ns"}});
        assert!(keys_for_change(&change(Kind::Target, t)).is_empty());
    }
}
