//! Patch semantics of the Kubernetes API server, for the in-memory test API server:
//! JSON patch, merge patch, strategic merge patch and server-side apply with
//! `metadata.managedFields` bookkeeping in the `FieldsV1` format.
//!
//! # Supported
//! - [`json_patch`]: RFC 6902 (`add`, `remove`, `replace`, `move`, `copy`, `test`, the `-`
//!   index, JSON pointer escaping), with errors worded like kube-apiserver's JSON patch library.
//! - [`merge_patch`]: RFC 7386.
//! - [`strategic_merge_patch`]: maps merged recursively, `null` deletes, lists merged by merge key
//!   or replaced according to a built-in table of the common built-in kinds (see `schema.rs`),
//!   primitive lists with the merge strategy (`metadata.finalizers`), the directives
//!   `$patch: replace|delete|merge`, `$retainKeys`, `$deleteFromPrimitiveList/<field>` and
//!   `$setElementOrder/<field>`, and kube's ordering of merged lists.
//! - [`server_side_apply`] and [`track_update`]: structured-merge-diff's rules for ownership,
//!   conflicts (with kube-apiserver's messages), forced applies, pruning of fields a manager
//!   stopped applying, shared ownership of equal values, the `before-first-apply` manager, the
//!   `kubectl` upgrade path from client-side apply (`last-applied-configuration`), the
//!   `managedFields: [{}]` reset, and kube's ordering of `managedFields` entries.
//!
//! # Not supported (differences from kube-apiserver)
//! - Only the kinds in the built-in table have list strategies and associative-list keys; other
//!   built-in kinds are typed as "metadata only" (their lists are atomic and replaced) and custom
//!   resources are treated as if their schema declared every field (objects are structs, lists
//!   are atomic). [`supports_strategic_merge`] tells which kinds kube accepts a strategic merge
//!   patch for; for the others [`strategic_merge_patch`] behaves like [`merge_patch`].
//! - No defaulting or conversion: `managedFields` record the fields as written (kube would also
//!   list defaulted fields such as `f:terminationMessagePath`), and every manager is assumed to
//!   use the object's `apiVersion`.
//! - The cap of ten `Update` managers (kube folds older ones into `ancient-changes`) is not
//!   enforced.

mod apply;
mod fields;
mod json;
mod schema;
mod strategic;

use serde_json::Value;

pub use apply::{ApplyRequest, server_side_apply, track_update};
pub use json::{json_patch, merge_patch};
pub use schema::{ListStrategy, TypeNode, supports_strategic_merge};
pub use strategic::strategic_merge_patch;

/// Why a patch or apply was refused; each variant maps onto one HTTP status.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatchError {
    /// Malformed patch document (HTTP 400 BadRequest).
    #[error("{0}")]
    BadRequest(String),
    /// The patch cannot be applied to this object, e.g. a JSON-patch `test` failed or a path is
    /// missing (HTTP 422 Invalid).
    #[error("{0}")]
    Invalid(String),
    /// Server-side apply conflicts without force (HTTP 409 Conflict). The message is
    /// kube-apiserver's, e.g.
    /// `Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.key`.
    #[error("{}", conflict_message(.0))]
    Conflict(Vec<FieldConflict>),
}

/// One field that another manager owns with a different value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldConflict {
    /// The other manager's name, e.g. `kubectl-client-side-apply`.
    pub manager: String,
    /// kubectl-style path, e.g. `.spec.replicas`, `.data.key` or
    /// `.spec.template.spec.containers[name="nginx"].image`.
    pub field: String,
    /// The manager as kube-apiserver prints it in messages and Status causes
    /// (`conflict with {description}`): the quoted name, then ` with subresource "status"` when
    /// it wrote through a subresource, then ` using v1` (the apiVersion) for `Update` managers.
    pub description: String,
}

/// kube-apiserver's wording: one conflict on one line; several grouped by manager, one per line.
fn conflict_message(conflicts: &[FieldConflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.description, only.field
        );
    }
    let mut lines = Vec::new();
    let mut last_description: Option<&str> = None;
    // Conflicts arrive grouped by manager (see apply.rs), so a change of manager starts a group.
    for conflict in conflicts {
        if last_description != Some(conflict.description.as_str()) {
            lines.push(format!("conflicts with {}:", conflict.description));
            last_description = Some(conflict.description.as_str());
        }
        lines.push(format!("- {}", conflict.field));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

/// `apiVersion` and `kind` of an object, empty when absent.
fn type_of(object: &Value) -> (&str, &str) {
    let text = |key| object.get(key).and_then(Value::as_str).unwrap_or("");
    (text("apiVersion"), text("kind"))
}
