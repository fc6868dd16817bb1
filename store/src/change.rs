//! What a commit changed: the change feed's unit, and the persisted history entries.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::key::ObjectKey;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChangeType {
    Added,
    Modified,
    Deleted,
}

impl ChangeType {
    /// The watch event type of the Kubernetes API.
    pub fn as_watch_type(self) -> &'static str {
        match self {
            ChangeType::Added => "ADDED",
            ChangeType::Modified => "MODIFIED",
            ChangeType::Deleted => "DELETED",
        }
    }
}

/// One object's change within a committed transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub change_type: ChangeType,
    pub key: ObjectKey,
    /// The object after the change; for `Deleted`, its last state (with the deleting revision).
    pub object: Value,
    /// `status.phase` before the change, when there was one.
    pub previous_phase: Option<String>,
}

/// Everything one transaction changed, published on the change feed after the durable commit.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeSet {
    pub revision: u64,
    /// Commit time, RFC 3339.
    pub time: String,
    pub changes: Vec<Change>,
}

pub type SharedChangeSet = Arc<ChangeSet>;

/// A persisted record of one change, kept in a bounded history for `describe` and the status page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    pub revision: u64,
    pub time: String,
    pub key: ObjectKey,
    pub change_type: ChangeType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_phase: Option<String>,
    /// A short human-readable note: the last error's message, or what happened to the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The last error's reason (`status.lastError.reason`), when the message is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The last error only says that the object waits (`landscaper_model::shared::is_waiting`:
    /// `JobIDFinished: execution … is not finished yet` and the like), so the entry is progress,
    /// not a failure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waiting: bool,
    /// The object's `status.conditions` (type, status, message), so that events can tell
    /// their changes (the workflow conditions of issue 19).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ConditionNote>,
    /// What a manifest file took over from the API in this change (`status.takenOver`):
    /// `Installation ns/name, DataObject ns/other`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_over: Option<String>,
}

/// One entry of an object's `status.conditions` as a history entry keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConditionNote {
    #[serde(rename = "type")]
    pub r#type: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// At most this many characters of a condition's message are kept in the history.
const CONDITION_MESSAGE_LIMIT: usize = 300;

fn condition_notes(object: &Value) -> Vec<ConditionNote> {
    let text = |c: &Value, f: &str| {
        c.get(f)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|c| ConditionNote {
                    r#type: text(c, "type"),
                    status: text(c, "status"),
                    message: text(c, "message")
                        .chars()
                        .take(CONDITION_MESSAGE_LIMIT)
                        .collect(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `status.takenOver` of a ManifestFile as one line: `Installation ns/a, Target ns/b`.
fn taken_over(object: &Value) -> Option<String> {
    let list = object.pointer("/status/takenOver")?.as_array()?;
    let text = |r: &Value, f: &str| {
        r.get(f)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let names: Vec<String> = list
        .iter()
        .map(|r| match text(r, "namespace") {
            ns if ns.is_empty() => format!("{} {}", text(r, "kind"), text(r, "name")),
            ns => format!("{} {ns}/{}", text(r, "kind"), text(r, "name")),
        })
        .collect();
    (!names.is_empty()).then(|| names.join(", "))
}

impl HistoryEntry {
    pub(crate) fn from_change(revision: u64, time: &str, change: &Change) -> Self {
        let generation = match crate::object::generation(&change.object) {
            0 => None,
            g => Some(g),
        };
        let phase = crate::object::phase(&change.object).map(str::to_string);
        let last_error = change.object.pointer("/status/lastError");
        let text = |field: &str| {
            last_error
                .and_then(|e| e.get(field))
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
        };
        let deletion_requested = change.change_type == ChangeType::Modified
            && crate::object::deletion_timestamp(&change.object).is_some()
            && phase == change.previous_phase;
        let (message, reason, waiting) = if deletion_requested {
            (Some("deletion requested".to_string()), None, false)
        } else {
            let message = text("message").map(|m| m.chars().take(500).collect::<String>());
            let reason = text("reason")
                .filter(|_| message.is_some())
                .map(str::to_string);
            let waiting = last_error.is_some_and(landscaper_model::shared::is_waiting_json);
            (message, reason, waiting)
        };
        HistoryEntry {
            revision,
            time: time.to_string(),
            key: change.key.clone(),
            change_type: change.change_type,
            generation,
            phase,
            previous_phase: change.previous_phase.clone(),
            message,
            reason,
            waiting,
            conditions: condition_notes(&change.object),
            taken_over: taken_over(&change.object),
        }
    }

    /// Whether this entry records a phase transition.
    pub fn is_phase_transition(&self) -> bool {
        self.phase.is_some() && self.phase != self.previous_phase
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_manifest_files_takeover_is_noted() {
        let file = json!({"metadata": {"name": "f"}, "status": {"phase": "Applied",
            "takenOver": [
                {"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
                    "namespace": "ns", "name": "a"},
                {"apiVersion": "appliance.landscaper-appliance.io/v1alpha1", "kind": "Context",
                    "name": "c"}]}});
        assert_eq!(
            taken_over(&file).as_deref(),
            Some("Installation ns/a, Context c")
        );
        assert_eq!(taken_over(&json!({"status": {"takenOver": []}})), None);
        assert_eq!(taken_over(&json!({"status": {}})), None);
    }
}
