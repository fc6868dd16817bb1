//! Kubernetes strategic merge patch.
//!
//! Maps merge recursively and `null` deletes, as in a merge patch; lists follow the field's
//! strategy from the built-in table (`schema.rs`): replaced, merged by a key, or merged as a set
//! of scalars. Directives: `$patch: replace|delete|merge` in maps and list items, `$retainKeys`,
//! `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>`.

use serde_json::{Map, Value};

use crate::PatchError;
use crate::json::merge_patch;
use crate::schema::{Node, StrategicList, root_for, supports_strategic_merge};

const PATCH_DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

/// Applies a strategic merge patch to `live`, with the list strategies of `live`'s kind.
///
/// Kinds for which [`supports_strategic_merge`] is false (custom resources) are patched as by
/// [`merge_patch`]: kube-apiserver refuses strategic merge patches for them with 415, which is
/// the caller's to answer.
pub fn strategic_merge_patch(live: &Value, patch: &Value) -> Result<Value, PatchError> {
    let Some(patch_map) = patch.as_object() else {
        return Err(PatchError::BadRequest(
            "json: cannot unmarshal non-object into Go value of type map[string]interface {}"
                .into(),
        ));
    };
    let (api_version, kind) = crate::type_of(live);
    if !supports_strategic_merge(api_version, kind) {
        return merge_patch(live, patch);
    }
    let original = live.as_object().cloned().unwrap_or_default();
    merge_map(original, patch_map, root_for(api_version, kind)).map(Value::Object)
}

fn bad_request(message: String) -> PatchError {
    PatchError::BadRequest(message)
}

fn merge_map(
    mut original: Map<String, Value>,
    patch: &Map<String, Value>,
    node: &'static Node,
) -> Result<Map<String, Value>, PatchError> {
    match patch.get(PATCH_DIRECTIVE) {
        None => {}
        Some(Value::String(directive)) if directive == "merge" => {}
        Some(Value::String(directive)) if directive == "replace" => {
            // The patch's map replaces the live one; it may still hold directives of its own.
            return merge_map(Map::new(), &without_directive(patch), node);
        }
        Some(Value::String(directive)) if directive == "delete" => return Ok(Map::new()),
        Some(other) => {
            return Err(bad_request(format!(
                "unknown patch type: {other} in map: {}",
                Value::Object(patch.clone())
            )));
        }
    }

    if let Some(retained) = patch.get(RETAIN_KEYS) {
        let keys = string_list(retained).ok_or_else(|| {
            bad_request(format!(
                "invalid patch: $retainKeys must be a list of strings: {retained}"
            ))
        })?;
        for (key, value) in patch {
            if !key.starts_with('$') && !value.is_null() && !keys.contains(&key.as_str()) {
                return Err(PatchError::Invalid(format!(
                    "patch content doesn't match retainKeys list: {key} is not in {keys:?}"
                )));
            }
        }
        original.retain(|key, _| keys.contains(&key.as_str()));
    }

    for (key, doomed) in patch {
        let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) else {
            continue;
        };
        let Some(doomed) = doomed.as_array() else {
            return Err(bad_request(format!(
                "invalid patch: {key} must be a list: {doomed}"
            )));
        };
        if let Some(Value::Array(items)) = original.get_mut(field) {
            items.retain(|item| !doomed.contains(item));
        }
    }

    for (key, patch_value) in patch {
        if key.starts_with('$') {
            continue;
        }
        let child = node.child(key);
        if patch_value.is_null() {
            original.remove(key);
            continue;
        }
        let element_order = patch.get(&format!("{SET_ELEMENT_ORDER}{key}"));
        let merged = match patch_value {
            Value::Object(patch_fields) => {
                let current = match original.remove(key) {
                    Some(Value::Object(fields)) => fields,
                    _ => Map::new(),
                };
                Value::Object(merge_map(current, patch_fields, child.node)?)
            }
            Value::Array(patch_items) => {
                let current = match original.remove(key) {
                    Some(Value::Array(items)) => items,
                    _ => Vec::new(),
                };
                merge_list(current, patch_items, child.node, element_order)?
            }
            scalar => scalar.clone(),
        };
        original.insert(key.clone(), merged);
    }

    // `$setElementOrder` for lists the patch does not otherwise touch: reorder only.
    for (key, order) in patch {
        let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) else {
            continue;
        };
        if patch.contains_key(field) {
            continue;
        }
        let Some(order) = order.as_array() else {
            return Err(bad_request(format!(
                "invalid patch: {key} must be a list: {order}"
            )));
        };
        if let Some(Value::Array(items)) = original.get(field) {
            let merge_key = match node.child(field).node.list().map(|spec| spec.strategic) {
                Some(StrategicList::MergeByKey(merge_key)) => Some(merge_key),
                _ => None,
            };
            let reordered = normalize_order(items.clone(), order, items, merge_key);
            original.insert(field.to_owned(), Value::Array(reordered));
        }
    }
    Ok(original)
}

fn without_directive(patch: &Map<String, Value>) -> Map<String, Value> {
    let mut out = patch.clone();
    out.remove(PATCH_DIRECTIVE);
    out
}

fn string_list(value: &Value) -> Option<Vec<&str>> {
    value.as_array()?.iter().map(Value::as_str).collect()
}

fn directive_of(item: &Value) -> Option<&str> {
    item.get(PATCH_DIRECTIVE).and_then(Value::as_str)
}

fn merge_list(
    original: Vec<Value>,
    patch: &[Value],
    node: &'static Node,
    element_order: Option<&Value>,
) -> Result<Value, PatchError> {
    let Some(spec) = node.list() else {
        return Ok(Value::Array(patch.to_vec()));
    };
    let order = match element_order {
        None => patch,
        Some(Value::Array(order)) => order.as_slice(),
        Some(other) => {
            return Err(bad_request(format!(
                "invalid patch: $setElementOrder must be a list: {other}"
            )));
        }
    };
    let replace_all = patch
        .iter()
        .any(|item| directive_of(item) == Some("replace"));
    match spec.strategic {
        StrategicList::Replace => Ok(Value::Array(patch.to_vec())),
        StrategicList::MergePrimitives => {
            let items: Vec<&Value> = patch
                .iter()
                .filter(|item| directive_of(item).is_none())
                .collect();
            let mut merged = if replace_all {
                Vec::new()
            } else {
                original.clone()
            };
            for item in items {
                if !merged.contains(item) {
                    merged.push(item.clone());
                }
            }
            Ok(Value::Array(normalize_order(
                merged, order, &original, None,
            )))
        }
        StrategicList::MergeByKey(merge_key) => {
            let mut merged = if replace_all {
                Vec::new()
            } else {
                original.clone()
            };
            for item in patch {
                let Some(fields) = item.as_object() else {
                    return Err(bad_request(format!(
                        "invalid patch: {item} is not a map but the list is merged by {merge_key}"
                    )));
                };
                match directive_of(item) {
                    Some("replace") => continue,
                    None | Some("merge") => {}
                    Some("delete") => {
                        let key_value = fields
                            .get(merge_key)
                            .ok_or_else(|| missing_key(item, merge_key))?;
                        merged.retain(|existing| existing.get(merge_key) != Some(key_value));
                        continue;
                    }
                    Some(other) => {
                        return Err(bad_request(format!(
                            "unknown patch type: {other} in list item: {item}"
                        )));
                    }
                }
                let key_value = fields
                    .get(merge_key)
                    .ok_or_else(|| missing_key(item, merge_key))?;
                let fields = without_directive(fields);
                match merged
                    .iter()
                    .position(|existing| existing.get(merge_key) == Some(key_value))
                {
                    Some(position) => {
                        let current = match merged[position].take() {
                            Value::Object(current) => current,
                            _ => Map::new(),
                        };
                        merged[position] = Value::Object(merge_map(current, &fields, spec.item)?);
                    }
                    None => merged.push(Value::Object(merge_map(Map::new(), &fields, spec.item)?)),
                }
            }
            Ok(Value::Array(normalize_order(
                merged,
                order,
                &original,
                Some(merge_key),
            )))
        }
    }
}

fn missing_key(item: &Value, merge_key: &str) -> PatchError {
    bad_request(format!(
        "map: {item} does not contain declared merge key: {merge_key}"
    ))
}

/// kube's list ordering after a merge: items named by the patch (or by `$setElementOrder`) in
/// that order, the live-only items in their live order, the two interleaved by live position.
fn normalize_order(
    merged: Vec<Value>,
    patch_order: &[Value],
    live_order: &[Value],
    merge_key: Option<&str>,
) -> Vec<Value> {
    let identity = |item: &Value| -> Value {
        match merge_key {
            Some(key) => item.get(key).cloned().unwrap_or(Value::Null),
            None => item.clone(),
        }
    };
    let position_in = |list: &[Value], item: &Value| -> Option<usize> {
        let wanted = identity(item);
        list.iter()
            .position(|candidate| identity(candidate) == wanted)
    };
    let (mut from_patch, mut live_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|item| position_in(patch_order, item).is_some());
    from_patch.sort_by_key(|item| position_in(patch_order, item));
    live_only.sort_by_key(|item| position_in(live_order, item));

    let mut out = Vec::with_capacity(from_patch.len() + live_only.len());
    let mut left = from_patch.into_iter().peekable();
    let mut right = live_only.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (position_in(live_order, l), position_in(live_order, r)),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn deployment(containers: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}, "finalizers": ["a"]},
            "spec": {"replicas": 1, "template": {"spec": {"containers": containers}}}
        })
    }

    fn containers_of(object: &Value) -> &Value {
        &object["spec"]["template"]["spec"]["containers"]
    }

    #[test]
    fn containers_merge_by_name_and_new_ones_append() {
        let live = deployment(json!([
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
            {"name": "b", "image": "b:1"}
        ]));
        let patch = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "a:2", "env": [{"name": "Y", "value": "2"}]},
            {"name": "c", "image": "c:1"}
        ]}}}});
        let out = strategic_merge_patch(&live, &patch).unwrap();
        assert_eq!(
            containers_of(&out),
            &json!([
                {"name": "a", "image": "a:2", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
                {"name": "b", "image": "b:1"},
                {"name": "c", "image": "c:1"}
            ])
        );
        assert_eq!(out["spec"]["replicas"], json!(1));
    }

    #[test]
    fn list_order_follows_kube() {
        let live = deployment(json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
        let patch =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c"}, {"name": "a"}]}}}});
        let out = strategic_merge_patch(&live, &patch).unwrap();
        assert_eq!(
            containers_of(&out),
            &json!([{"name": "b"}, {"name": "c"}, {"name": "a"}])
        );

        let reorder = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "b"}, {"name": "a"}]}}}});
        let out = strategic_merge_patch(&live, &reorder).unwrap();
        assert_eq!(
            containers_of(&out),
            &json!([{"name": "c"}, {"name": "b"}, {"name": "a"}])
        );
    }

    #[test]
    fn patch_directives_in_lists_and_maps() {
        let live =
            deployment(json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]));
        let delete = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}}});
        let out = strategic_merge_patch(&live, &delete).unwrap();
        assert_eq!(containers_of(&out), &json!([{"name": "b", "image": "b:1"}]));

        let replace = json!({"spec": {"template": {"spec": {"containers": [
            {"$patch": "replace"}, {"name": "z", "image": "z:1"}]}}}});
        let out = strategic_merge_patch(&live, &replace).unwrap();
        assert_eq!(containers_of(&out), &json!([{"name": "z", "image": "z:1"}]));

        let replace_map = json!({"metadata": {"labels": {"$patch": "replace", "new": "x"}}});
        let out = strategic_merge_patch(&live, &replace_map).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"new": "x"}));

        let delete_map = json!({"metadata": {"labels": {"$patch": "delete"}}});
        let out = strategic_merge_patch(&live, &delete_map).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({}));

        let merge_item = json!({"spec": {"template": {"spec": {"containers": [{"name": "b", "$patch": "merge", "image": "b:2"}]}}}});
        let out = strategic_merge_patch(&live, &merge_item).unwrap();
        assert_eq!(containers_of(&out)[1], json!({"name": "b", "image": "b:2"}));

        let bad = json!({"metadata": {"labels": {"$patch": "explode"}}});
        assert!(matches!(
            strategic_merge_patch(&live, &bad),
            Err(PatchError::BadRequest(_))
        ));
        let no_key = json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}});
        assert!(matches!(
            strategic_merge_patch(&live, &no_key),
            Err(PatchError::BadRequest(_))
        ));
    }

    #[test]
    fn finalizers_merge_and_delete_from_primitive_list() {
        let live = deployment(json!([]));
        let out =
            strategic_merge_patch(&live, &json!({"metadata": {"finalizers": ["b", "a"]}})).unwrap();
        // kube orders the patch's items by the patch, here ahead of the live-only ones.
        assert_eq!(out["metadata"]["finalizers"], json!(["b", "a"]));
        let out = strategic_merge_patch(
            &out,
            &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
        let out = strategic_merge_patch(&out, &json!({"metadata": {"finalizers": ["c"]}})).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["b", "c"]));
    }

    #[test]
    fn retain_keys_clears_other_fields() {
        let live = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"volumes": [{"name": "v", "emptyDir": {}}]}});
        let patch = json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}]}});
        let out = strategic_merge_patch(&live, &patch).unwrap();
        assert_eq!(
            out["spec"]["volumes"],
            json!([{"name": "v", "hostPath": {"path": "/x"}}])
        );
        let mismatch = json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name"], "hostPath": {"path": "/x"}}]}});
        assert!(matches!(
            strategic_merge_patch(&live, &mismatch),
            Err(PatchError::Invalid(_))
        ));
    }

    #[test]
    fn service_ports_merge_by_port_and_tolerations_replace() {
        let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}});
        let out = strategic_merge_patch(
            &service,
            &json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}]}}),
        )
        .unwrap();
        assert_eq!(
            out["spec"]["ports"],
            json!([{"port": 80, "name": "http", "targetPort": 8080}, {"port": 443, "name": "https"}])
        );

        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"tolerations": [{"key": "a"}], "containers": [{"name": "c", "ports": [{"containerPort": 1}], "args": ["x"]}]}});
        let out = strategic_merge_patch(
            &pod,
            &json!({"spec": {"tolerations": [{"key": "b"}],
            "containers": [{"name": "c", "ports": [{"containerPort": 2}], "args": ["y"]}]}}),
        )
        .unwrap();
        assert_eq!(out["spec"]["tolerations"], json!([{"key": "b"}]));
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "c", "ports": [{"containerPort": 1}, {"containerPort": 2}], "args": ["y"]}])
        );
    }

    #[test]
    fn cron_job_template_and_rbac_rules() {
        let cron = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "1"}]}}}}}});
        let out = strategic_merge_patch(
            &cron,
            &json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "b", "image": "2"}]}}}}}}),
        )
        .unwrap();
        assert_eq!(
            out["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
                .as_array()
                .unwrap()
                .len(),
            2
        );

        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
            "rules": [{"verbs": ["get"]}]});
        let out = strategic_merge_patch(&role, &json!({"rules": [{"verbs": ["list"]}]})).unwrap();
        assert_eq!(out["rules"], json!([{"verbs": ["list"]}]));
    }

    #[test]
    fn unknown_kinds_behave_like_merge_patch() {
        let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "finalizers": ["a"]},
            "spec": {"items": [{"name": "a"}]}});
        let patch = json!({"metadata": {"finalizers": ["b"]}, "spec": {"items": [{"name": "b"}]}});
        assert_eq!(
            strategic_merge_patch(&widget, &patch).unwrap(),
            merge_patch(&widget, &patch).unwrap()
        );
        assert!(!supports_strategic_merge("example.com/v1", "Widget"));
    }

    #[test]
    fn malformed_patches_are_bad_requests() {
        let live = deployment(json!([]));
        assert!(matches!(
            strategic_merge_patch(&live, &json!([1])),
            Err(PatchError::BadRequest(_))
        ));
        assert!(matches!(
            strategic_merge_patch(&live, &json!({"metadata": {"$retainKeys": "x"}})),
            Err(PatchError::BadRequest(_))
        ));
    }

    /// Objects without lists (and without `$` keys), so that no strategy applies.
    fn list_free_object() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i16>().prop_map(Value::from),
            "[a-c]{0,2}".prop_map(Value::from),
        ];
        let tree = leaf.prop_recursive(3, 16, 3, |inner| {
            prop::collection::btree_map("[a-d]", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect()))
        });
        prop::collection::btree_map("[a-d]|metadata|spec", tree, 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    proptest! {
        #[test]
        fn strategic_equals_merge_patch_without_lists(live in list_free_object(), patch in list_free_object(), kind in "Deployment|ConfigMap|Widget") {
            let mut live = live;
            let api_version = if kind == "Deployment" { "apps/v1" } else if kind == "ConfigMap" { "v1" } else { "example.com/v1" };
            live["apiVersion"] = Value::from(api_version);
            live["kind"] = Value::from(kind);
            let mut patch = patch;
            if let Some(map) = patch.as_object_mut() {
                map.remove("apiVersion");
                map.remove("kind");
            }
            prop_assert_eq!(strategic_merge_patch(&live, &patch).unwrap(), merge_patch(&live, &patch).unwrap());
        }
    }
}
