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
}

impl HistoryEntry {
    pub(crate) fn from_change(revision: u64, time: &str, change: &Change) -> Self {
        let generation = match crate::object::generation(&change.object) {
            0 => None,
            g => Some(g),
        };
        let phase = crate::object::phase(&change.object).map(str::to_string);
        let message = if change.change_type == ChangeType::Modified
            && crate::object::deletion_timestamp(&change.object).is_some()
            && phase == change.previous_phase
        {
            Some("deletion requested".to_string())
        } else {
            change
                .object
                .get("status")
                .and_then(|s| s.get("lastError"))
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .map(|m| m.chars().take(500).collect())
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
        }
    }

    /// Whether this entry records a phase transition.
    pub fn is_phase_transition(&self) -> bool {
        self.phase.is_some() && self.phase != self.previous_phase
    }
}
