//! Applying the manifests (`pkg/deployer/lib/resourcemanager/objectapplier.go`): expansion of
//! `List`s, execution groups (CRDs, then cluster-scoped, then namespaced objects), the
//! per-object decision by policy and update strategy, and the merge semantics of the
//! strategies.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

use super::config::{Manifest, ManifestPolicy, UpdateStrategy};
use super::status::{ManagedResourceStatus, ObjectReference, sort_group};
use crate::kubernetes::{ClusterClient, ClusterError, ObjectRef, Patch, group_of};

/// The label naming the deploy item that applied an object.
pub const MANAGED_DEPLOY_ITEM_LABEL: &str =
    "manifest.deployer.landscaper.gardener.cloud/deployitem";

const CRD_KIND: &str = "CustomResourceDefinition";

/// `ExpandManagedResourceManifests`: a manifest with an `items` list stands for its items.
pub fn expand(manifests: &[Manifest]) -> Result<Vec<Manifest>, String> {
    let mut result = Vec::new();
    for manifest in manifests {
        let object = manifest.manifest.clone().unwrap_or(Value::Null);
        if !object.is_object() {
            return Err(format!(
                "unable to expand managed resource manifests: unable to expand manifest: expected an object, got {object}"
            ));
        }
        match object.get("items") {
            None | Some(Value::Null) => result.push(manifest.clone()),
            Some(Value::Array(items)) => {
                result.extend(items.iter().map(|item| Manifest {
                    manifest: Some(item.clone()),
                    ..manifest.clone()
                }));
            }
            Some(other) => {
                return Err(format!(
                    "unable to expand managed resource manifests: unable to expand manifest: items must be a list, not {other}"
                ));
            }
        }
    }
    Ok(result)
}

/// The three execution groups, in apply order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecutionGroups {
    pub crds: Vec<Manifest>,
    pub cluster_scoped: Vec<Manifest>,
    pub namespaced: Vec<Manifest>,
}

impl ExecutionGroups {
    pub fn in_order(&self) -> [&[Manifest]; 3] {
        [&self.crds, &self.cluster_scoped, &self.namespaced]
    }
}

fn type_meta(object: &Value) -> Result<(String, String), String> {
    let field = |key: &str| match object.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "unable to parse type metadata: {key} must be a string, not {other}"
        )),
    };
    let (api_version, kind) = (field("apiVersion")?, field("kind")?);
    if kind.is_empty() {
        return Err(format!("Object 'Kind' is missing in '{object}'"));
    }
    if api_version.is_empty() {
        return Err(format!("Object 'apiVersion' is missing in '{object}'"));
    }
    Ok((api_version, kind))
}

/// `prepareManifests`: sorts the (expanded) manifests into execution groups; the scope of a
/// kind comes from discovery, or from a CRD among the manifests when it is not served yet.
pub async fn execution_groups(
    client: &dyn ClusterClient,
    manifests: Vec<Manifest>,
) -> Result<ExecutionGroups, PrepareError> {
    let mut groups = ExecutionGroups::default();
    let mut crd_scopes: HashMap<(String, String), bool> = HashMap::new();
    let mut rest = Vec::new();
    for manifest in manifests {
        let object = manifest.manifest.clone().unwrap_or(Value::Null);
        let (_, kind) = type_meta(&object).map_err(PrepareError::Manifest)?;
        if kind == CRD_KIND {
            let text = |p: &str| {
                object
                    .pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            };
            crd_scopes.insert(
                (
                    text("/spec/group").to_string(),
                    text("/spec/names/kind").to_string(),
                ),
                text("/spec/scope") == "Namespaced",
            );
            groups.crds.push(manifest);
        } else {
            rest.push(manifest);
        }
    }
    for manifest in rest {
        let object = manifest.manifest.clone().unwrap_or(Value::Null);
        let (api_version, kind) = type_meta(&object).map_err(PrepareError::Manifest)?;
        let namespaced = match client.resolve(&api_version, &kind).await {
            Ok(info) => info.namespaced,
            Err(e) => {
                let key = (group_of(&api_version).to_string(), kind.clone());
                match crd_scopes.get(&key) {
                    Some(namespaced) => *namespaced,
                    None => return Err(PrepareError::Discovery(e)),
                }
            }
        };
        if namespaced {
            groups.namespaced.push(manifest);
        } else {
            groups.cluster_scoped.push(manifest);
        }
    }
    Ok(groups)
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrepareError {
    #[error("{0}")]
    Manifest(String),
    #[error("unable to get api resource: {0}")]
    Discovery(ClusterError),
}

/// `mergo.Merge` on `map[string]interface{}`: maps merge recursively; other values of `src`
/// replace those of `dst` when `overwrite` is set or `dst` has none (or an empty one).
pub fn mergo_merge(dst: &mut Map<String, Value>, src: &Map<String, Value>, overwrite: bool) {
    for (key, value) in src {
        match (dst.get_mut(key), value) {
            (Some(Value::Object(existing)), Value::Object(new)) => {
                mergo_merge(existing, new, overwrite);
            }
            (Some(existing), _) if !overwrite && !is_empty_value(existing) => {}
            _ => {
                dst.insert(key.clone(), value.clone());
            }
        }
    }
}

/// Go's `isEmptyValue` for JSON values.
fn is_empty_value(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// `jsonpatch.CreateMergePatch(original, modified)` (what `client.MergeFrom` sends): fields
/// missing in `modified` become `null`.
pub fn create_merge_patch(original: &Value, modified: &Value) -> Value {
    match (original, modified) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = Map::new();
            for (key, old_value) in old {
                match new.get(key) {
                    None => {
                        patch.insert(key.clone(), Value::Null);
                    }
                    Some(new_value) if new_value != old_value => {
                        let nested = if old_value.is_object() && new_value.is_object() {
                            create_merge_patch(old_value, new_value)
                        } else {
                            new_value.clone()
                        };
                        patch.insert(key.clone(), nested);
                    }
                    Some(_) => {}
                }
            }
            for (key, new_value) in new {
                if !old.contains_key(key) {
                    patch.insert(key.clone(), new_value.clone());
                }
            }
            Value::Object(patch)
        }
        _ => modified.clone(),
    }
}

/// `SetRequiredNestedFieldsFromObj`: fields an update must carry over from the live object.
pub fn set_required_fields(live: &Value, desired: &mut Value) {
    let reference = ObjectRef::of(live);
    let copy = |desired: &mut Value, path: &[&str]| {
        let pointer: String = path.iter().map(|p| format!("/{p}")).collect();
        if let Some(value) = live.pointer(&pointer).cloned() {
            set_path(desired, path, value);
        }
    };
    match (reference.group(), reference.kind.as_str()) {
        ("batch", "Job") => {
            copy(desired, &["spec", "selector"]);
            copy(desired, &["spec", "template", "metadata", "labels"]);
        }
        ("", "Service") => copy(desired, &["spec", "clusterIP"]),
        ("", "ServiceAccount") => {
            let empty = desired
                .get("secrets")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
            if empty {
                let live_secrets = live.get("secrets").and_then(Value::as_array);
                if live_secrets.is_some_and(|s| !s.is_empty()) {
                    copy(desired, &["secrets"]);
                }
            }
        }
        _ => {}
    }
    copy(desired, &["metadata", "resourceVersion"]);
}

fn set_path(target: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = target;
    for part in parents {
        if !current.get(*part).is_some_and(Value::is_object) {
            current[*part] = Value::Object(Map::new());
        }
        current = &mut current[*part];
    }
    current[*last] = value;
}

/// Sets `metadata.labels[key] = value`.
pub fn set_label(object: &mut Value, key: &str, value: &str) {
    set_path(
        object,
        &["metadata", "labels", key],
        Value::String(value.to_string()),
    );
}

fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
}

/// The deploy item applying objects, and the label that marks them as its own
/// (`manifest.deployer.landscaper.gardener.cloud/deployitem`, the helm deployer's own in its
/// manifest-only mode). A plain name means the manifest deployer's label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner<'a> {
    pub label: &'a str,
    pub deploy_item: &'a str,
}

impl<'a> From<&'a str> for Owner<'a> {
    fn from(deploy_item: &'a str) -> Owner<'a> {
        Owner {
            label: MANAGED_DEPLOY_ITEM_LABEL,
            deploy_item,
        }
    }
}

/// Whether the live object is labelled as applied by this deploy item.
pub fn is_managed_by<'a>(object: &Value, owner: impl Into<Owner<'a>>) -> bool {
    let owner = owner.into();
    label(object, owner.label) == Some(owner.deploy_item)
}

/// Merges `annotations` into `metadata.annotations` (overwriting).
pub fn annotate(object: &mut Value, annotations: &BTreeMap<String, String>) {
    for (key, value) in annotations {
        set_path(
            object,
            &["metadata", "annotations", key],
            Value::String(value.clone()),
        );
    }
}

/// What to do with one object.
#[derive(Debug, Clone, PartialEq)]
pub enum ApplyAction {
    /// Not applied and not tracked (`ignore`, or `fallback` on an object of someone else).
    Skip,
    Create(Value),
    /// Tracked but left as it is (`immutable`).
    Keep,
    Update(Value),
    /// JSON merge patch.
    Patch(Value),
}

/// `applyObject`'s decision for an object, given the live one (if any).
pub fn decide<'a>(
    manifest: &Manifest,
    desired: &Value,
    live: Option<&Value>,
    strategy: &UpdateStrategy,
    owner: impl Into<Owner<'a>>,
) -> Result<ApplyAction, String> {
    let owner = owner.into();
    if manifest.policy == ManifestPolicy::Ignore {
        return Ok(ApplyAction::Skip);
    }
    let mut desired = desired.clone();
    let Some(live) = live else {
        set_label(&mut desired, owner.label, owner.deploy_item);
        if let Some(annotations) = &manifest.annotate_before_create {
            annotate(&mut desired, annotations);
        }
        return Ok(ApplyAction::Create(desired));
    };
    if manifest.policy == ManifestPolicy::Fallback && !is_managed_by(live, owner) {
        return Ok(ApplyAction::Skip);
    }
    if manifest.policy == ManifestPolicy::Immutable {
        return Ok(ApplyAction::Keep);
    }
    match strategy {
        UpdateStrategy::Update | UpdateStrategy::Patch => {
            set_label(&mut desired, owner.label, owner.deploy_item);
            set_required_fields(live, &mut desired);
            if *strategy == UpdateStrategy::Update {
                Ok(ApplyAction::Update(desired))
            } else {
                Ok(ApplyAction::Patch(create_merge_patch(live, &desired)))
            }
        }
        UpdateStrategy::Merge | UpdateStrategy::MergeOverwrite => {
            let mut merged = live.clone();
            if let (Some(dst), Some(src)) = (merged.as_object_mut(), desired.as_object()) {
                mergo_merge(dst, src, *strategy == UpdateStrategy::MergeOverwrite);
            }
            set_label(&mut merged, owner.label, owner.deploy_item);
            Ok(ApplyAction::Update(merged))
        }
        UpdateStrategy::Other(other) => Err(format!("{other} is not a valid update strategy")),
    }
}

/// A `patchAfterDeployment` to apply once the item is ready.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchAfterDeployment {
    pub object: ObjectRef,
    pub patch: Value,
}

/// The result of applying all manifests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    /// In execution-group order, sorted within each group.
    pub managed: Vec<ManagedResourceStatus>,
    pub patches: Vec<PatchAfterDeployment>,
    /// One message per object that failed.
    pub errors: Vec<String>,
}

fn status_entry(manifest: &Manifest, object: &Value) -> ManagedResourceStatus {
    ManagedResourceStatus {
        annotate_before_delete: manifest.annotate_before_delete.clone(),
        patch_before_delete: manifest.patch_before_delete.clone(),
        policy: manifest.policy.clone(),
        resource: ObjectReference::of(object),
    }
}

/// Applies one object; `None` when it is not tracked.
async fn apply_object(
    client: &dyn ClusterClient,
    manifest: &Manifest,
    strategy: &UpdateStrategy,
    owner: Owner<'_>,
) -> (
    Option<ManagedResourceStatus>,
    Option<PatchAfterDeployment>,
    Option<String>,
) {
    if manifest.policy == ManifestPolicy::Ignore {
        return (None, None, None);
    }
    let desired = manifest.manifest.clone().unwrap_or(Value::Null);
    let reference = ObjectRef::of(&desired);
    let live = match client.get(&reference).await {
        Ok(live) => live,
        Err(e) => {
            return (
                None,
                None,
                Some(format!("unable to get object {reference}: {e}")),
            );
        }
    };
    let patch_after = |object: &ObjectRef| {
        manifest
            .patch_after_deployment
            .clone()
            .filter(|p| !p.is_null())
            .map(|patch| PatchAfterDeployment {
                object: object.clone(),
                patch,
            })
    };
    let action = match decide(manifest, &desired, live.as_ref(), strategy, owner) {
        Ok(action) => action,
        Err(e) => {
            let entry = live.as_ref().map(|l| status_entry(manifest, l));
            return (entry, None, Some(e));
        }
    };
    let Some(live) = live else {
        let ApplyAction::Create(object) = action else {
            return (None, None, None);
        };
        return match client.create(&object).await {
            Ok(created) => (
                Some(status_entry(manifest, &created)),
                patch_after(&reference),
                None,
            ),
            Err(e) => (
                None,
                None,
                Some(format!("unable to create resource {reference}: {e}")),
            ),
        };
    };
    let entry = status_entry(manifest, &live);
    let result = match action {
        ApplyAction::Skip => return (None, None, None),
        ApplyAction::Keep => return (Some(entry), None, None),
        ApplyAction::Create(_) => Ok(()),
        ApplyAction::Update(object) => client
            .update(&object)
            .await
            .map(drop)
            .map_err(|e| format!("unable to update resource {reference}: {e}")),
        ApplyAction::Patch(patch) => client
            .patch(&reference, &Patch::Merge(patch))
            .await
            .map(drop)
            .map_err(|e| format!("unable to patch resource {reference}: {e}")),
    };
    match result {
        Ok(()) => (Some(entry), patch_after(&reference), None),
        Err(e) => (Some(entry), None, Some(e)),
    }
}

/// Applies every group in order (objects one after the other, for a deterministic result).
pub async fn apply_groups<'a>(
    client: &dyn ClusterClient,
    groups: &ExecutionGroups,
    strategy: &UpdateStrategy,
    owner: impl Into<Owner<'a>>,
) -> Applied {
    let owner = owner.into();
    let mut applied = Applied::default();
    for (index, group) in groups.in_order().into_iter().enumerate() {
        let mut managed = Vec::new();
        for manifest in group {
            let (entry, patch, error) = apply_object(client, manifest, strategy, owner).await;
            managed.extend(entry);
            applied.patches.extend(patch);
            applied.errors.extend(error);
        }
        sort_group(&mut managed);
        applied.managed.extend(managed);
        if index == 0 && !group.is_empty() {
            // New CRDs: their kinds must be discovered afresh.
            client.invalidate_discovery();
        }
    }
    applied
}

/// `PatchAfterDeployment`: deep-merge (with overwrite) each patch into the live object.
pub async fn patch_after_deployment(
    client: &dyn ClusterClient,
    patches: &[PatchAfterDeployment],
) -> Result<(), String> {
    for patch in patches {
        let live = client
            .get(&patch.object)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("{} not found", patch.object))?;
        let mut updated = live.clone();
        if let (Some(dst), Some(src)) = (updated.as_object_mut(), patch.patch.as_object()) {
            mergo_merge(dst, src, true);
        }
        if updated != live {
            client
                .update(&updated)
                .await
                .map_err(|e| format!("unable to patch resource {}: {e}", patch.object))?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
