//! How Helm changes a live object on upgrade (`pkg/kube/client.go` `createPatch`): for the
//! kinds Kubernetes builds in, a three-way patch of the last release's manifest (original),
//! the new one (modified) and the live object (current), with `overwrite` (the new manifest
//! wins over changes made on the cluster); for custom resources and CRDs, a two-way JSON merge
//! patch of original and modified only (live changes to fields the chart never touched stay).
//!
//! The built-in kinds get a strategic merge patch from Helm. This module computes the three-way
//! patch with JSON merge semantics instead: maps merge key by key exactly as Helm's patch does,
//! but a list that differs is replaced as a whole (strategic merge would merge lists of maps by
//! their merge keys, e.g. `containers` by `name`, keeping entries others added). See the issue
//! notes in `release/mod.rs`.

use serde_json::{Map, Value};

use crate::applier::apply::create_merge_patch;

/// API groups whose kinds are compiled into Helm's scheme (client-go's `scheme.Scheme`):
/// Helm patches these with a strategic merge patch.
const BUILT_IN_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "extensions",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

/// Whether Helm treats the kind as a typed built-in (strategic merge) rather than
/// unstructured (JSON merge). CRDs are unstructured for Helm's patching.
pub fn is_built_in(api_version: &str) -> bool {
    BUILT_IN_GROUPS.contains(&crate::kubernetes::group_of(api_version))
}

/// The patch Helm's upgrade sends for an object (JSON merge semantics, see the module
/// documentation); `None` when there is nothing to change.
pub fn upgrade_patch(original: &Value, modified: &Value, current: &Value) -> Option<Value> {
    let api_version = modified
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let patch = if is_built_in(api_version) {
        three_way_merge_patch(original, modified, current)
    } else {
        create_merge_patch(original, modified)
    };
    match &patch {
        Value::Object(map) if map.is_empty() => None,
        Value::Null => None,
        _ => Some(patch),
    }
}

/// `CreateThreeWayMergePatch(original, modified, current, overwrite=true)` with JSON merge
/// semantics: fields the new manifest dropped (present in `original`, absent in `modified`)
/// are deleted, and every field of `modified` that differs from `current` is set.
pub fn three_way_merge_patch(original: &Value, modified: &Value, current: &Value) -> Value {
    let empty = Map::new();
    let modified_map = match modified {
        Value::Object(m) => m,
        _ => return modified.clone(),
    };
    let original_map = original.as_object().unwrap_or(&empty);
    let current_map = current.as_object().unwrap_or(&empty);
    let mut patch = Map::new();
    // Deletions: what the chart no longer sets.
    for (key, old) in original_map {
        match modified_map.get(key) {
            None => {
                if current_map.contains_key(key) {
                    patch.insert(key.clone(), Value::Null);
                }
            }
            Some(new) if old.is_object() && new.is_object() => {
                let nested =
                    three_way_merge_patch(old, new, current_map.get(key).unwrap_or(&Value::Null));
                if nested.as_object().is_some_and(|m| !m.is_empty()) {
                    patch.insert(key.clone(), nested);
                }
            }
            Some(_) => {}
        }
    }
    // Changes and additions: what differs from the live object.
    for (key, new) in modified_map {
        if patch.contains_key(key) {
            continue;
        }
        match current_map.get(key) {
            Some(live) if live == new => {}
            Some(live) if live.is_object() && new.is_object() => {
                let nested =
                    three_way_merge_patch(original_map.get(key).unwrap_or(&Value::Null), new, live);
                if nested.as_object().is_some_and(|m| !m.is_empty()) {
                    patch.insert(key.clone(), nested);
                }
            }
            _ => {
                patch.insert(key.clone(), new.clone());
            }
        }
    }
    Value::Object(patch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn three_way_keeps_live_additions_reverts_live_edits_and_drops_removed_fields() {
        let original = json!({"metadata": {"labels": {"a": "1", "gone": "x"}},
            "data": {"k": "v", "old": "o"}});
        let modified = json!({"metadata": {"labels": {"a": "2"}}, "data": {"k": "v", "new": "n"}});
        // Someone edited k on the cluster and added a label; the server set uid.
        let current = json!({"metadata": {"labels": {"a": "1", "gone": "x", "ops": "y"}, "uid": "u"},
            "data": {"k": "edited", "old": "o"}});
        let patch = three_way_merge_patch(&original, &modified, &current);
        assert_eq!(
            patch,
            json!({"metadata": {"labels": {"a": "2", "gone": null}},
                "data": {"k": "v", "new": "n", "old": null}})
        );
        let mut result = current.clone();
        json_patch::merge(&mut result, &patch);
        assert_eq!(
            result,
            json!({"metadata": {"labels": {"a": "2", "ops": "y"}, "uid": "u"},
            "data": {"k": "v", "new": "n"}})
        );
    }

    #[test]
    fn unchanged_objects_need_no_patch_and_deleted_live_fields_are_restored() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}});
        let mut live = object.clone();
        live["metadata"] = json!({"resourceVersion": "7"});
        assert_eq!(upgrade_patch(&object, &object, &live), None);
        // A user deleted data.k: the three-way patch puts it back.
        let edited = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {}});
        assert_eq!(
            upgrade_patch(&object, &object, &edited),
            Some(json!({"data": {"k": "v"}}))
        );
        // A custom resource gets only the two-way patch: the live edit stays.
        let cr = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"k": "v"}});
        let live_cr = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {}});
        assert_eq!(upgrade_patch(&cr, &cr, &live_cr), None);
        let new_cr = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"k": "w"}});
        assert_eq!(
            upgrade_patch(&cr, &new_cr, &live_cr),
            Some(json!({"spec": {"k": "w"}}))
        );
        assert!(is_built_in("apps/v1") && is_built_in("v1"));
        assert!(!is_built_in("apiextensions.k8s.io/v1") && !is_built_in("example.com/v1"));
    }

    #[test]
    fn differing_lists_are_replaced_whole() {
        let original = json!({"spec": {"ports": [{"port": 80}]}});
        let modified = json!({"spec": {"ports": [{"port": 81}]}});
        let current =
            json!({"spec": {"ports": [{"port": 80, "protocol": "TCP"}], "clusterIP": "10.0.0.1"}});
        assert_eq!(
            three_way_merge_patch(&original, &modified, &current),
            json!({"spec": {"ports": [{"port": 81}]}})
        );
    }
}
