//! How Helm changes a live object on upgrade (`pkg/kube/client.go` `createPatch`): for the
//! kinds Kubernetes builds in, a three-way patch of the last release's manifest (original),
//! the new one (modified) and the live object (current), with `overwrite` (the new manifest
//! wins over changes made on the cluster); for custom resources (and v1beta1 CRDs), a two-way JSON merge
//! patch of original and modified only (live changes to fields the chart never touched stay).
//!
//! For the built-in kinds in kube-patch's type table (Pods, workloads, Services, ConfigMaps,
//! RBAC, ...) the patch is a strategic merge patch ([`three_way_strategic_patch`]): lists with a
//! merge key (`containers` by `name`, `ports` by `containerPort`, ...) merge item by item, so
//! entries others added stay, items the chart dropped are deleted with `$patch: delete`, and
//! `$setElementOrder` keeps the chart's order. Lists kube-patch does not know are replaced as a
//! whole (kube-patch's table covers the common built-in kinds; for other built-in kinds the
//! API server still merges by its own metadata, only the deletions of dropped list items are
//! not expressed).

use kube_patch::{ListStrategy, TypeNode};
use serde_json::{Map, Value};

use crate::applier::apply::create_merge_patch;
use crate::kubernetes::Patch;

/// The patch Helm's upgrade sends for an object (see the module documentation); `None` when
/// there is nothing to change.
pub fn upgrade_patch(original: &Value, modified: &Value, current: &Value) -> Option<Patch> {
    let text = |key: &str| {
        modified
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if kube_patch::supports_strategic_merge(api_version, kind)
        && api_version != "apiextensions.k8s.io/v1beta1"
    {
        let patch = three_way_strategic_patch(
            original,
            modified,
            current,
            TypeNode::of_kind(api_version, kind),
        );
        (!patch.is_empty()).then_some(Patch::Strategic(Value::Object(patch)))
    } else {
        let patch = create_merge_patch(original, modified);
        match &patch {
            Value::Object(map) if map.is_empty() => None,
            Value::Null => None,
            _ => Some(Patch::Merge(patch)),
        }
    }
}

/// `CreateThreeWayMergePatch(original, modified, current, overwrite=true)` for a type of
/// kube-patch's table: fields the chart dropped (in `original`, not in `modified`) are deleted,
/// every field of `modified` that differs from `current` is set; lists merge by their strategy.
pub fn three_way_strategic_patch(
    original: &Value,
    modified: &Value,
    current: &Value,
    ty: TypeNode,
) -> Map<String, Value> {
    let Value::Object(modified) = modified else {
        return Map::new();
    };
    diff_map(original.as_object(), modified, current.as_object(), ty)
}

fn diff_map(
    original: Option<&Map<String, Value>>,
    modified: &Map<String, Value>,
    current: Option<&Map<String, Value>>,
    ty: TypeNode,
) -> Map<String, Value> {
    let mut patch = Map::new();
    for key in original.into_iter().flat_map(Map::keys) {
        if !modified.contains_key(key) && current.is_some_and(|c| c.contains_key(key)) {
            patch.insert(key.clone(), Value::Null);
        }
    }
    for (key, new) in modified {
        let live = current.and_then(|c| c.get(key));
        let old = original.and_then(|o| o.get(key));
        let child = ty.child(key);
        match (new, live) {
            (_, Some(live)) if live == new => {}
            (Value::Object(new_map), Some(Value::Object(live_map))) => {
                let old_map = old.and_then(Value::as_object);
                let mut sub = diff_map(old_map, new_map, Some(live_map), child);
                if ty.retains_keys(key) {
                    retain_keys(&mut sub, old_map, new_map, live_map);
                }
                if !sub.is_empty() {
                    patch.insert(key.clone(), Value::Object(sub));
                }
            }
            (Value::Array(new_items), Some(Value::Array(live_items))) => {
                let old_items = old.and_then(Value::as_array).map(Vec::as_slice);
                match child.list_strategy() {
                    ListStrategy::MergeByKey(merge_key)
                        if keyed(new_items, merge_key)
                            && keyed(live_items, merge_key)
                            && old_items.is_none_or(|o| keyed(o, merge_key)) =>
                    {
                        if let Some(items) = diff_keyed_list(
                            old_items.unwrap_or_default(),
                            new_items,
                            live_items,
                            merge_key,
                            child.item(),
                            ty.retains_keys(key),
                        ) {
                            patch.insert(key.clone(), Value::Array(items));
                            let order = new_items
                                .iter()
                                .map(|i| {
                                    let mut m = Map::new();
                                    m.insert(merge_key.to_string(), i[merge_key].clone());
                                    Value::Object(m)
                                })
                                .collect();
                            patch.insert(format!("$setElementOrder/{key}"), Value::Array(order));
                        }
                    }
                    ListStrategy::MergePrimitives => {
                        let added: Vec<Value> = new_items
                            .iter()
                            .filter(|i| !live_items.contains(i))
                            .cloned()
                            .collect();
                        let removed: Vec<Value> = old_items
                            .unwrap_or_default()
                            .iter()
                            .filter(|i| !new_items.contains(i) && live_items.contains(i))
                            .cloned()
                            .collect();
                        if !added.is_empty() {
                            patch.insert(key.clone(), Value::Array(added));
                        }
                        if !removed.is_empty() {
                            patch.insert(
                                format!("$deleteFromPrimitiveList/{key}"),
                                Value::Array(removed),
                            );
                        }
                    }
                    _ => {
                        patch.insert(key.clone(), new.clone());
                    }
                }
            }
            _ => {
                patch.insert(key.clone(), new.clone());
            }
        }
    }
    patch
}

/// `$retainKeys` of a map whose field has the `retainKeys` strategy, as `diffMaps` builds it
/// (with `BuildRetainKeysDirective`): the keys of `modified` with a value, sorted, sent when
/// the map's patch changes something or the live (or last applied) map has a key `modified`
/// lacks, so the server clears it.
fn retain_keys(
    patch: &mut Map<String, Value>,
    original: Option<&Map<String, Value>>,
    modified: &Map<String, Value>,
    current: &Map<String, Value>,
) {
    let extra = |other: &Map<String, Value>| {
        other
            .iter()
            .any(|(k, v)| !v.is_null() && !modified.contains_key(k))
    };
    let mut keys: Vec<&String> = modified
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, _)| k)
        .collect();
    if keys.is_empty() || !(!patch.is_empty() || extra(current) || original.is_some_and(extra)) {
        return;
    }
    keys.sort();
    patch.insert(
        "$retainKeys".into(),
        Value::Array(keys.into_iter().map(|k| Value::String(k.clone())).collect()),
    );
}

/// Whether every item is an object carrying the merge key.
fn keyed(items: &[Value], merge_key: &str) -> bool {
    items.iter().all(|i| i.get(merge_key).is_some())
}

/// The items of a merge-keyed list's patch: deletions of items the chart dropped, new items
/// whole, changed items as their own patch with the key (and `$retainKeys` when the list has
/// the `retainKeys` strategy); `None` without changes.
fn diff_keyed_list(
    original: &[Value],
    modified: &[Value],
    current: &[Value],
    merge_key: &str,
    item: TypeNode,
    retain: bool,
) -> Option<Vec<Value>> {
    let find = |items: &[Value], key: &Value| items.iter().find(|i| &i[merge_key] == key).cloned();
    let mut patch = Vec::new();
    for old in original {
        let key = &old[merge_key];
        if find(modified, key).is_none() && find(current, key).is_some() {
            let mut m = Map::new();
            m.insert(merge_key.to_string(), key.clone());
            m.insert("$patch".into(), Value::String("delete".into()));
            patch.push(Value::Object(m));
        }
    }
    for new in modified {
        let key = &new[merge_key];
        match find(current, key) {
            None => patch.push(new.clone()),
            Some(live) if &live == new => {}
            Some(live) => {
                let (Some(new_map), Some(live_map)) = (new.as_object(), live.as_object()) else {
                    patch.push(new.clone());
                    continue;
                };
                let old = find(original, key);
                let old_map = old.as_ref().and_then(Value::as_object);
                let mut sub = diff_map(old_map, new_map, Some(live_map), item);
                if retain {
                    retain_keys(&mut sub, old_map, new_map, live_map);
                }
                if !sub.is_empty() {
                    sub.insert(merge_key.to_string(), key.clone());
                    patch.push(Value::Object(sub));
                }
            }
        }
    }
    (!patch.is_empty()).then_some(patch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A type without lists kube-patch knows: maps merge, lists are replaced.
    fn untyped() -> TypeNode {
        TypeNode::of_kind("example.com/v1", "Thing")
    }

    #[test]
    fn three_way_keeps_live_additions_reverts_live_edits_and_drops_removed_fields() {
        let original = json!({"metadata": {"labels": {"a": "1", "gone": "x"}},
            "data": {"k": "v", "old": "o"}});
        let modified = json!({"metadata": {"labels": {"a": "2"}}, "data": {"k": "v", "new": "n"}});
        // Someone edited k on the cluster and added a label; the server set uid.
        let current = json!({"metadata": {"labels": {"a": "1", "gone": "x", "ops": "y"}, "uid": "u"},
            "data": {"k": "edited", "old": "o"}});
        let patch = Value::Object(three_way_strategic_patch(
            &original,
            &modified,
            &current,
            untyped(),
        ));
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
            Some(Patch::Strategic(json!({"data": {"k": "v"}})))
        );
        // A custom resource gets only the two-way patch: the live edit stays.
        let cr = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"k": "v"}});
        let live_cr = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {}});
        assert_eq!(upgrade_patch(&cr, &cr, &live_cr), None);
        let new_cr = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"k": "w"}});
        assert_eq!(
            upgrade_patch(&cr, &new_cr, &live_cr),
            Some(Patch::Merge(json!({"spec": {"k": "w"}})))
        );
        // v1beta1 CRDs are unstructured for Helm: a two-way merge patch.
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
            "spec": {"group": "a"}});
        let new_crd = json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
            "spec": {"group": "b"}});
        assert_eq!(
            upgrade_patch(&crd, &new_crd, &crd),
            Some(Patch::Merge(json!({"spec": {"group": "b"}})))
        );
    }

    #[test]
    fn differing_lists_are_replaced_whole() {
        let original = json!({"spec": {"ports": [{"port": 80}]}});
        let modified = json!({"spec": {"ports": [{"port": 81}]}});
        let current =
            json!({"spec": {"ports": [{"port": 80, "protocol": "TCP"}], "clusterIP": "10.0.0.1"}});
        assert_eq!(
            Value::Object(three_way_strategic_patch(
                &original,
                &modified,
                &current,
                untyped()
            )),
            json!({"spec": {"ports": [{"port": 81}]}})
        );
    }
}

#[cfg(test)]
mod strategic_tests {
    use super::*;
    use serde_json::json;

    fn deployment(containers: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": containers}}}})
    }

    #[test]
    fn containers_merge_by_name_keeping_injected_ones_and_dropping_removed_ones() {
        let original = deployment(json!([
            {"name": "web", "image": "web:1", "env": [{"name": "A", "value": "1"}]},
            {"name": "old", "image": "old:1"}
        ]));
        let modified = deployment(json!([{"name": "web", "image": "web:2"}]));
        // Live: the server defaulted a field, someone injected a sidecar.
        let current = deployment(json!([
            {"name": "web", "image": "web:1", "env": [{"name": "A", "value": "1"}],
             "terminationMessagePath": "/dev/termination-log"},
            {"name": "old", "image": "old:1"},
            {"name": "sidecar", "image": "proxy:1"}
        ]));
        let Some(Patch::Strategic(patch)) = upgrade_patch(&original, &modified, &current) else {
            panic!("a strategic merge patch");
        };
        assert_eq!(
            patch,
            json!({"spec": {"template": {"spec": {
                "containers": [
                    {"name": "old", "$patch": "delete"},
                    {"name": "web", "image": "web:2", "env": null}
                ],
                "$setElementOrder/containers": [{"name": "web"}]
            }}}})
        );
        let result = kube_patch::strategic_merge_patch(&current, &patch).unwrap();
        let names: Vec<&str> = result["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["web", "sidecar"]);
        let web = &result["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(web["image"], "web:2");
        assert!(web.get("env").is_none());
        assert_eq!(web["terminationMessagePath"], "/dev/termination-log");
        // Nothing changed: no patch.
        assert_eq!(upgrade_patch(&modified, &modified, &result), None);
    }

    /// kube's `diffMaps` with `BuildRetainKeysDirective`: Deployment `strategy` and Pod
    /// `volumes` items carry `$retainKeys` (sorted keys of the chart's map) when they change or
    /// the live map has keys the chart lacks; the API server then clears those.
    #[test]
    fn retain_keys_fields_get_the_directive() {
        let deployment = |strategy: Value, volumes: Value| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"strategy": strategy, "template": {"spec": {
                    "containers": [{"name": "web", "image": "web:1"}], "volumes": volumes}}}})
        };
        // The chart switches to Recreate; the server had defaulted rollingUpdate.
        let original = deployment(
            json!({"type": "RollingUpdate"}),
            json!([{"name": "data", "emptyDir": {}}]),
        );
        let modified = deployment(
            json!({"type": "Recreate"}),
            json!([{"name": "data", "hostPath": {"path": "/x"}}]),
        );
        let current = deployment(
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}),
            json!([{"name": "data", "emptyDir": {}}]),
        );
        let Some(Patch::Strategic(patch)) = upgrade_patch(&original, &modified, &current) else {
            panic!("a strategic merge patch");
        };
        assert_eq!(
            patch["spec"]["strategy"],
            json!({"type": "Recreate", "$retainKeys": ["type"]})
        );
        assert_eq!(
            patch["spec"]["template"]["spec"]["volumes"],
            json!([{"name": "data", "hostPath": {"path": "/x"}, "emptyDir": null,
                "$retainKeys": ["hostPath", "name"]}])
        );
        let result = kube_patch::strategic_merge_patch(&current, &patch).unwrap();
        assert_eq!(result["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(
            result["spec"]["template"]["spec"]["volumes"],
            json!([{"name": "data", "hostPath": {"path": "/x"}}])
        );
        // Unchanged, but the live strategy has defaulted keys the chart lacks: Helm still sends
        // `$retainKeys` (and so a patch), as kube's diffMaps does.
        let live = deployment(
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}),
            json!([{"name": "data", "emptyDir": {}}]),
        );
        assert_eq!(
            upgrade_patch(&original, &original, &live),
            Some(Patch::Strategic(
                json!({"spec": {"strategy": {"$retainKeys": ["type"]}}})
            ))
        );
        // Without extra live keys and without changes: no patch.
        assert_eq!(upgrade_patch(&original, &original, &original), None);
    }

    #[test]
    fn finalizers_merge_as_a_set() {
        let cm = |finalizers: Value| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "finalizers": finalizers}})
        };
        let patch = three_way_strategic_patch(
            &cm(json!(["a", "b"])),
            &cm(json!(["a", "c"])),
            &cm(json!(["a", "b", "x"])),
            TypeNode::of_kind("v1", "ConfigMap"),
        );
        assert_eq!(
            Value::Object(patch),
            json!({"metadata": {"finalizers": ["c"], "$deleteFromPrimitiveList/finalizers": ["b"]}})
        );
    }
}
