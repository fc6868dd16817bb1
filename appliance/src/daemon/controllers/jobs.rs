//! Helpers shared by the phase machines: job IDs, owner references, status writes, and the
//! growing intervals of waiting phases.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use landscaper_store::model::{DeployItemStatus, Error as StatusError, Phase};
use landscaper_store::{Kind, ObjectKey, Transaction, object};
use serde::Serialize;
use serde_json::{Value, json};

use super::ControllerContext;
use super::lserror::{LsError, updated_error};
use super::runtime::ReconcileError;

/// A new job ID (a random UUID, as Landscaper's `uuid.New()`).
pub fn new_job_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// An object is finished with its job when both IDs are equal (both absent counts as equal).
pub fn is_finished(job_id: Option<&str>, job_id_finished: Option<&str>) -> bool {
    job_id.unwrap_or_default() == job_id_finished.unwrap_or_default()
}

/// [`is_final`] for a phase as written in JSON.
pub fn is_final_text(phase: &str) -> bool {
    matches!(phase, "Succeeded" | "Failed" | "DeleteFailed")
}

pub fn is_final(phase: Option<&Phase>) -> bool {
    matches!(
        phase,
        Some(Phase::Succeeded | Phase::Failed | Phase::DeleteFailed)
    )
}

pub fn is_deletion_phase(phase: Option<&Phase>) -> bool {
    matches!(
        phase,
        Some(Phase::InitDelete | Phase::TriggerDelete | Phase::Deleting | Phase::DeleteFailed)
    )
}

/// A controller owner reference to `owner` (apiVersion from its kind).
pub fn owner_reference(kind: Kind, owner: &Value) -> Value {
    json!({
        "apiVersion": kind.api_version(),
        "kind": kind.as_str(),
        "name": object::name(owner),
        "uid": object::uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// `object` with its `status` replaced.
pub fn with_status<S: Serialize>(mut object: Value, status: &S) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.insert(
            "status".into(),
            serde_json::to_value(status).unwrap_or(Value::Null),
        );
    }
    object
}

/// Records `error` as the object's `status.lastError` (Landscaper's `TryUpdateLsError`; for a
/// deploy item also `firstError` and `lastErrors`), for failures outside the phase machines
/// such as a panicking reconcile. Writes nothing when the object is gone or the error is
/// recorded already, so a failure that repeats does not make a new revision each time.
pub async fn record_last_error(
    context: &ControllerContext,
    key: &ObjectKey,
    error: &LsError,
) -> Result<(), ReconcileError> {
    let Some(value) = context.store.get(key)? else {
        return Ok(());
    };
    let now = context.now();
    let status = value.get("status").cloned().unwrap_or_else(|| json!({}));
    let updated = if key.kind == Kind::DeployItem {
        let mut status: DeployItemStatus = serde_json::from_value(status)
            .map_err(|e| ReconcileError::Transient(format!("{key}: status: {e}")))?;
        let last = updated_error(status.last_error.as_ref(), Some(error), &now);
        if last == status.last_error {
            return Ok(());
        }
        super::deployitem::contract::set_last_error(&mut status, last);
        with_status(value, &status)
    } else {
        let current: Option<StatusError> = status
            .get("lastError")
            .and_then(|e| serde_json::from_value(e.clone()).ok());
        let last = updated_error(current.as_ref(), Some(error), &now);
        if last == current {
            return Ok(());
        }
        let mut status = match status {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        status.insert(
            "lastError".into(),
            serde_json::to_value(&last).unwrap_or(Value::Null),
        );
        with_status(value, &status)
    };
    context
        .store
        .commit(Transaction::new().update(updated))
        .await?;
    Ok(())
}

pub fn set_annotation(object: &mut Value, key: &str, value: Option<&str>) {
    let meta = object::metadata_mut(object);
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if !annotations.is_object() {
        *annotations = Value::Object(Default::default());
    }
    let map = annotations.as_object_mut().expect("an object");
    match value {
        Some(v) => {
            map.insert(key.to_string(), Value::String(v.to_string()));
        }
        None => {
            map.remove(key);
        }
    }
    if map.is_empty() {
        meta.remove("annotations");
    }
}

pub fn add_finalizer(object: &mut Value, finalizer: &str) -> bool {
    let meta = object::metadata_mut(object);
    let list = meta
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    let items = list.as_array_mut().expect("an array");
    if items.iter().any(|f| f.as_str() == Some(finalizer)) {
        return false;
    }
    items.push(Value::String(finalizer.to_string()));
    true
}

pub fn remove_finalizer(object: &mut Value, finalizer: &str) -> bool {
    let meta = object::metadata_mut(object);
    let Some(items) = meta.get_mut("finalizers").and_then(Value::as_array_mut) else {
        return false;
    };
    let before = items.len();
    items.retain(|f| f.as_str() != Some(finalizer));
    let changed = items.len() != before;
    if items.is_empty() {
        meta.remove("finalizers");
    }
    changed
}

/// Growing re-check intervals for objects that wait (for children, predecessors, successors):
/// the first wait is short, each further one in the same phase doubles, up to a cap. A phase
/// change starts again from the shortest.
pub struct WaitIntervals {
    min: Duration,
    max: Duration,
    waits: Mutex<HashMap<ObjectKey, (String, u32)>>,
}

impl WaitIntervals {
    pub fn new(min: Duration, max: Duration) -> WaitIntervals {
        WaitIntervals {
            min,
            max,
            waits: Mutex::new(HashMap::new()),
        }
    }

    pub fn next(&self, key: &ObjectKey, phase: &str) -> Duration {
        let mut waits = self.waits.lock().unwrap_or_else(|e| e.into_inner());
        let entry = waits.entry(key.clone()).or_insert((phase.to_string(), 0));
        if entry.0 != phase {
            *entry = (phase.to_string(), 0);
        }
        let d = self
            .min
            .saturating_mul(1u32 << entry.1.min(16))
            .min(self.max);
        entry.1 = entry.1.saturating_add(1);
        d
    }

    pub fn forget(&self, key: &ObjectKey) {
        self.waits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_means_equal_job_ids() {
        assert!(is_finished(None, None));
        assert!(is_finished(Some("a"), Some("a")));
        assert!(!is_finished(Some("a"), None));
        assert!(!is_finished(Some("b"), Some("a")));
    }

    #[test]
    fn annotations_and_finalizers_are_edited_in_place() {
        let mut o = json!({"metadata": {"name": "x"}});
        set_annotation(&mut o, "a", Some("1"));
        assert_eq!(o["metadata"]["annotations"]["a"], "1");
        set_annotation(&mut o, "a", None);
        assert!(o["metadata"].get("annotations").is_none());
        assert!(add_finalizer(&mut o, "f"));
        assert!(!add_finalizer(&mut o, "f"));
        assert!(remove_finalizer(&mut o, "f"));
        assert!(o["metadata"].get("finalizers").is_none());
    }

    #[test]
    fn waits_grow_per_phase() {
        let w = WaitIntervals::new(Duration::from_secs(1), Duration::from_secs(5));
        let k = ObjectKey::new(Kind::Installation, "ns", "a");
        let seq: Vec<u64> = (0..5)
            .map(|_| w.next(&k, "Progressing").as_secs())
            .collect();
        assert_eq!(seq, vec![1, 2, 4, 5, 5]);
        assert_eq!(w.next(&k, "Completing"), Duration::from_secs(1));
    }
}
