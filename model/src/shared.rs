//! Types shared by several Landscaper kinds (`types_shared.go`, `types_times.go`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::constants::UNRECOVERABLE_ERROR_CODES;

/// Lifecycle phase of an Installation, Execution or DeployItem.
///
/// All three Landscaper phase types share these values. Unknown strings are kept in `Other`
/// so that parsing never fails on a phase this version does not know.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(from = "String", into = "String")]
pub enum Phase {
    Init,
    CleanupOrphaned,
    ObjectsCreated,
    Progressing,
    Completing,
    Succeeded,
    Failed,
    InitDelete,
    TriggerDelete,
    Deleting,
    DeleteFailed,
    Other(String),
}

impl Phase {
    pub fn as_str(&self) -> &str {
        match self {
            Phase::Init => "Init",
            Phase::CleanupOrphaned => "CleanupOrphaned",
            Phase::ObjectsCreated => "ObjectsCreated",
            Phase::Progressing => "Progressing",
            Phase::Completing => "Completing",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
            Phase::InitDelete => "InitDelete",
            Phase::TriggerDelete => "TriggerDelete",
            Phase::Deleting => "Deleting",
            Phase::DeleteFailed => "DeleteFailed",
            Phase::Other(s) => s,
        }
    }

    /// `Succeeded`, `Failed` or `DeleteFailed`: the job is over.
    pub fn is_final(&self) -> bool {
        matches!(self, Phase::Succeeded | Phase::Failed | Phase::DeleteFailed)
    }

    pub fn is_deletion(&self) -> bool {
        matches!(
            self,
            Phase::InitDelete | Phase::TriggerDelete | Phase::Deleting | Phase::DeleteFailed
        )
    }

    pub fn is_failed(&self) -> bool {
        matches!(self, Phase::Failed | Phase::DeleteFailed)
    }

    /// Whether this is the empty phase (a present but empty `phase` string).
    pub fn is_empty(&self) -> bool {
        self.as_str().is_empty()
    }
}

impl From<String> for Phase {
    fn from(s: String) -> Phase {
        match s.as_str() {
            "Init" => Phase::Init,
            "CleanupOrphaned" => Phase::CleanupOrphaned,
            "ObjectsCreated" => Phase::ObjectsCreated,
            "Progressing" => Phase::Progressing,
            "Completing" => Phase::Completing,
            "Succeeded" => Phase::Succeeded,
            "Failed" => Phase::Failed,
            "InitDelete" => Phase::InitDelete,
            "TriggerDelete" => Phase::TriggerDelete,
            "Deleting" => Phase::Deleting,
            "DeleteFailed" => Phase::DeleteFailed,
            _ => Phase::Other(s),
        }
    }
}

impl From<Phase> for String {
    fn from(p: Phase) -> String {
        match p {
            Phase::Other(s) => s,
            known => known.as_str().to_owned(),
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Landscaper's `Error` (`status.lastError`, `status.firstError`, ...), and the one error value
/// of the controllers and the deployers (`lserrors.LsError`): built without times, which are
/// set when it is recorded.
///
/// Fields Go always writes (no `omitempty`) are plain strings here, so the shape written by
/// controllers matches Landscaper's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Error {
    #[serde(default)]
    pub operation: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<String>,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub codes: Option<Vec<String>>,
}

impl Error {
    /// An error value (`lserrors.NewError`) without codes; the controllers add the times when
    /// they record it (`TryUpdateLsError`). Retrying can help unless a code says otherwise.
    pub fn new(operation: &str, reason: &str, message: impl Into<String>) -> Error {
        Error {
            operation: operation.to_string(),
            reason: reason.to_string(),
            message: message.into(),
            ..Error::default()
        }
    }

    pub fn with_code(mut self, code: &str) -> Error {
        self.codes
            .get_or_insert_with(Vec::new)
            .push(code.to_string());
        self
    }

    /// A problem of the configuration (`ERR_CONFIGURATION_PROBLEM`): retrying cannot help.
    pub fn configuration_problem(
        operation: &str,
        reason: &str,
        message: impl Into<String>,
    ) -> Error {
        Error::new(operation, reason, message)
            .with_code(super::constants::ERR_CONFIGURATION_PROBLEM)
    }

    /// The time for the work is up (`ERR_TIMEOUT`): retrying cannot help.
    pub fn timeout(operation: &str, reason: &str, message: impl Into<String>) -> Error {
        Error::new(operation, reason, message).with_code(super::constants::ERR_TIMEOUT)
    }

    /// Whether trying again later can succeed: no code in [`UNRECOVERABLE_ERROR_CODES`].
    pub fn is_retryable(&self) -> bool {
        !self.is_unrecoverable()
    }

    pub fn has_code(&self, code: &str) -> bool {
        self.codes
            .as_ref()
            .is_some_and(|c| c.iter().any(|x| x == code))
    }

    /// Whether any code forces the object into `Failed` rather than a retry.
    pub fn is_unrecoverable(&self) -> bool {
        UNRECOVERABLE_ERROR_CODES.iter().any(|c| self.has_code(c))
    }

    /// Whether this `lastError` only says that the object waits (see [`is_waiting`]).
    pub fn is_waiting(&self) -> bool {
        is_waiting(&self.reason, self.codes.as_deref().unwrap_or_default())
    }
}

/// The reasons Landscaper records in `lastError` while an object merely waits for others (its
/// predecessors, the siblings importing its exports, its subobjects being deleted); the errors
/// are `ERR_FOR_INFO_ONLY` and the object is looked at again.
pub const WAITING_REASONS: [&str; 3] = [
    "AllPredecessorsFinished",
    "SiblingImport",
    "PendingSubobjects",
];

/// Whether a `lastError` with this reason and these codes says only that the object waits, not
/// that something failed: Landscaper marks waiting for unfinished subobjects with
/// `ERR_UNFINISHED` (`JobIDFinished: execution … is not finished yet`, `some running items`),
/// and records the other waits of [`WAITING_REASONS`]. Landscaper keeps these in
/// `status.lastError` (so does the appliance: the JSON is Landscaper's); `describe`, the events,
/// the logs and the status page present them as waiting rather than as errors.
pub fn is_waiting(reason: &str, codes: &[String]) -> bool {
    codes.iter().any(|c| c == super::constants::ERR_UNFINISHED) || WAITING_REASONS.contains(&reason)
}

/// [`is_waiting`] of a `status.lastError` as JSON (`false` for anything else).
pub fn is_waiting_json(last_error: &serde_json::Value) -> bool {
    let codes: Vec<String> = last_error
        .get("codes")
        .and_then(serde_json::Value::as_array)
        .map(|c| {
            c.iter()
                .filter_map(|c| c.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    last_error
        .get("message")
        .and_then(serde_json::Value::as_str)
        .is_some_and(|m| !m.is_empty())
        && is_waiting(
            last_error
                .get("reason")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default(),
            &codes,
        )
}

/// `operation: reason: message`; the reason is left out when it repeats the operation
/// (`ImportsSatisfied: ImportsSatisfied: …`).
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.reason.is_empty() || self.reason == self.operation {
            write!(f, "{}: {}", self.operation, self.message)
        } else {
            write!(f, "{}: {}: {}", self.operation, self.reason, self.message)
        }
    }
}

impl std::error::Error for Error {}

/// Landscaper's `Condition`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(default)]
    pub r#type: String,
    /// `True`, `False`, `Unknown` or `Progressing`.
    #[serde(default)]
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<String>,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub codes: Option<Vec<String>>,
}

/// `{name, namespace}`. Both are required by Landscaper's validation; an empty value is
/// treated as absent (`omitempty`-like) so a missing one surfaces as a validation error.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct ObjectReference {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

impl ObjectReference {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> ObjectReference {
        ObjectReference {
            name: name.into(),
            namespace: namespace.into(),
        }
    }
}

/// `{apiVersion, kind, name, namespace}`.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct TypedObjectReference {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// A key of a Secret in some namespace (`{name, namespace, key}`).
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct SecretReference {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// A Secret in the object's own namespace; without `key` the whole Secret is meant.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct LocalSecretReference {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// A ConfigMap in the object's own namespace; without `key` the whole ConfigMap is meant.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct LocalConfigMapReference {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// Core `LocalObjectReference` (`{name}`).
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct LocalObjectReference {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// Points in time of the current job (`status.transitionTimes`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransitionTimes {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub init_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_time: Option<String>,
}

/// `onDelete` of deploy items and their templates.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OnDeleteConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_uninstall_if_cluster_removed: Option<bool>,
}

/// Deserialises a free-form field so that an explicit `null` stays `Some(Value::Null)`.
///
/// With the plain `Option` behaviour `config: null` would vanish on re-serialisation.
pub(crate) fn some_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Whether a free-form field counts as set (Go decodes `null` into a nil pointer).
pub(crate) fn is_set(value: &Option<Value>) -> bool {
    !matches!(value, None | Some(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_round_trip_including_unknown() {
        for text in [
            "Init",
            "CleanupOrphaned",
            "DeleteFailed",
            "SomethingNew",
            "",
        ] {
            let phase: Phase = serde_json::from_value(Value::from(text)).unwrap();
            assert_eq!(serde_json::to_value(&phase).unwrap(), Value::from(text));
        }
        assert_eq!(Phase::from("Succeeded".to_owned()), Phase::Succeeded);
        assert!(Phase::DeleteFailed.is_final() && Phase::DeleteFailed.is_deletion());
        assert!(!Phase::Other("x".into()).is_final());
    }

    #[test]
    fn unrecoverable_codes() {
        let err = Error {
            codes: Some(vec!["ERR_TIMEOUT".into()]),
            ..Error::default()
        };
        assert!(err.is_unrecoverable());
        assert!(!Error::default().is_unrecoverable());
    }
}
