//! The bridge to `kube-patch`: patch content types and how their failures map onto Status.

use serde_json::Value;

use crate::error::{ApiError, Cause};

/// The patch flavours of `PATCH`, by `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchKind {
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "application/json-patch+json" => Some(PatchKind::Json),
            "application/merge-patch+json" => Some(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Some(PatchKind::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
                Some(PatchKind::Apply)
            }
            _ => None,
        }
    }
}

pub const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

pub const CUSTOM_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// How a patch failed, before the store names the object.
#[derive(Debug, Clone)]
pub enum PatchFailure {
    BadRequest(String),
    Invalid(String),
    /// Server-side apply conflicts: the message and (manager description, field) pairs.
    Conflict(String, Vec<(String, String)>),
}

impl From<kube_patch::PatchError> for PatchFailure {
    fn from(e: kube_patch::PatchError) -> Self {
        match e {
            kube_patch::PatchError::BadRequest(m) => PatchFailure::BadRequest(m),
            kube_patch::PatchError::Invalid(m) => PatchFailure::Invalid(m),
            kube_patch::PatchError::Conflict(ref conflicts) => PatchFailure::Conflict(
                e.to_string(),
                conflicts
                    .iter()
                    .map(|c| (c.description.clone(), c.field.clone()))
                    .collect(),
            ),
        }
    }
}

impl PatchFailure {
    /// The Status for this failure on object `name` of `kind` (`group`/`plural` for 409).
    pub fn into_api_error(self, group: &str, plural: &str, kind: &str, name: &str) -> ApiError {
        match self {
            PatchFailure::BadRequest(m) => ApiError::bad_request(m),
            PatchFailure::Invalid(m) => ApiError::invalid(
                group,
                kind,
                name,
                vec![Cause::new("FieldValueInvalid", m, "")],
            ),
            PatchFailure::Conflict(message, conflicts) => {
                let mut err = ApiError::conflict_message(group, plural, name, message);
                err.details.causes = conflicts
                    .into_iter()
                    .map(|(manager, field)| {
                        Cause::new(
                            "FieldManagerConflict",
                            format!("conflict with {manager}"),
                            &field,
                        )
                    })
                    .collect();
                err
            }
        }
    }
}

/// Applies a JSON, merge or strategic merge patch.
pub fn patch(kind: PatchKind, live: &Value, body: &Value) -> Result<Value, PatchFailure> {
    Ok(match kind {
        PatchKind::Json => kube_patch::json_patch(live, body)?,
        PatchKind::Merge => kube_patch::merge_patch(live, body)?,
        PatchKind::Strategic => kube_patch::strategic_merge_patch(live, body)?,
        PatchKind::Apply => {
            return Err(PatchFailure::BadRequest(
                "apply patches go through server_side_apply".into(),
            ));
        }
    })
}

pub fn supports_strategic_merge(api_version: &str, kind: &str) -> bool {
    kube_patch::supports_strategic_merge(api_version, kind)
}

/// Server-side apply; the result carries the updated `managedFields`.
pub fn server_side_apply(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, PatchFailure> {
    Ok(kube_patch::server_side_apply(kube_patch::ApplyRequest {
        live,
        applied,
        manager,
        force,
        now,
    })?)
}

/// `managedFields` bookkeeping for create, update and the non-apply patches: returns `new`
/// with its `metadata.managedFields` updated.
pub fn track_update(
    old: Option<&Value>,
    new: &Value,
    manager: &str,
    subresource: Option<&str>,
    now: &str,
) -> Value {
    let tracked = kube_patch::track_update(old, new, manager, subresource, now);
    // Accept both shapes: the whole object, or just the managedFields list.
    if tracked.is_array() {
        let mut out = new.clone();
        if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("managedFields".into(), tracked);
        }
        out
    } else if tracked.is_object() {
        tracked
    } else {
        new.clone()
    }
}
