use super::*;
use serde_json::json;

fn entry(manifest: Value) -> Manifest {
    Manifest {
        manifest: Some(manifest),
        ..Default::default()
    }
}

#[test]
fn lists_are_expanded() {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [{"kind": "A"}, {"kind": "B"}]});
    let expanded = expand(&[
        Manifest {
            policy: ManifestPolicy::Keep,
            ..entry(list)
        },
        entry(json!({"kind": "C"})),
    ])
    .unwrap();
    let kinds: Vec<_> = expanded
        .iter()
        .map(|m| m.manifest.as_ref().unwrap()["kind"].clone())
        .collect();
    assert_eq!(kinds, vec![json!("A"), json!("B"), json!("C")]);
    assert_eq!(expanded[1].policy, ManifestPolicy::Keep);
    assert!(expand(&[entry(json!({"items": 1}))]).is_err());
    assert!(expand(&[entry(json!("x"))]).is_err());
}

#[test]
fn mergo_semantics() {
    let mut dst = json!({"a": "live", "empty": "", "zero": 0, "list": [1], "m": {"x": 1}})
        .as_object()
        .unwrap()
        .clone();
    let src = json!({"a": "new", "empty": "set", "zero": 5, "list": [2], "m": {"x": 2, "y": 3}, "n": null}).as_object().unwrap().clone();
    let mut keep = dst.clone();
    mergo_merge(&mut keep, &src, false);
    assert_eq!(
        Value::Object(keep),
        json!({"a": "live", "empty": "set", "zero": 5, "list": [1], "m": {"x": 1, "y": 3}, "n": null})
    );
    mergo_merge(&mut dst, &src, true);
    assert_eq!(
        Value::Object(dst),
        json!({"a": "new", "empty": "set", "zero": 5, "list": [2], "m": {"x": 2, "y": 3}, "n": null})
    );
}

#[test]
fn merge_patches_remove_what_the_new_object_lacks() {
    let old = json!({"metadata": {"name": "x", "uid": "u"}, "data": {"a": "1", "b": "2"}});
    let new = json!({"metadata": {"name": "x"}, "data": {"a": "3"}, "extra": true});
    let patch = create_merge_patch(&old, &new);
    assert_eq!(
        patch,
        json!({"metadata": {"uid": null}, "data": {"a": "3", "b": null}, "extra": true})
    );
    let mut applied = old.clone();
    json_patch::merge(&mut applied, &patch);
    assert_eq!(applied, new);
}

#[test]
fn updates_carry_required_fields() {
    let live = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"resourceVersion": "7"}, "spec": {"clusterIP": "10.0.0.1"}});
    let mut desired =
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {}, "spec": {"ports": []}});
    set_required_fields(&live, &mut desired);
    assert_eq!(desired["spec"]["clusterIP"], "10.0.0.1");
    assert_eq!(desired["metadata"]["resourceVersion"], "7");
    let live = json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"selector": {"s": 1}, "template": {"metadata": {"labels": {"l": "1"}}}}});
    let mut desired =
        json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": {"spec": {}}}});
    set_required_fields(&live, &mut desired);
    assert_eq!(desired["spec"]["selector"], json!({"s": 1}));
    assert_eq!(
        desired["spec"]["template"]["metadata"]["labels"],
        json!({"l": "1"})
    );
}

#[test]
fn decisions_by_policy() {
    let desired = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let mine = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {MANAGED_DEPLOY_ITEM_LABEL: "di"}}});
    let theirs = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let with = |policy: ManifestPolicy| Manifest {
        policy,
        annotate_before_create: Some([("a".to_string(), "b".to_string())].into()),
        ..entry(desired.clone())
    };
    let decide_for = |p: ManifestPolicy, live: Option<&Value>| {
        decide(&with(p), &desired, live, &UpdateStrategy::Update, "di").unwrap()
    };
    let ApplyAction::Create(created) = decide_for(ManifestPolicy::Immutable, None) else {
        panic!()
    };
    assert_eq!(created["metadata"]["annotations"]["a"], "b");
    assert_eq!(
        created["metadata"]["labels"][MANAGED_DEPLOY_ITEM_LABEL],
        "di"
    );
    assert_eq!(decide_for(ManifestPolicy::Ignore, None), ApplyAction::Skip);
    assert_eq!(
        decide_for(ManifestPolicy::Fallback, Some(&theirs)),
        ApplyAction::Skip
    );
    assert!(matches!(
        decide_for(ManifestPolicy::Fallback, Some(&mine)),
        ApplyAction::Update(_)
    ));
    assert_eq!(
        decide_for(ManifestPolicy::Immutable, Some(&mine)),
        ApplyAction::Keep
    );
    let ApplyAction::Update(updated) = decide_for(ManifestPolicy::Manage, Some(&theirs)) else {
        panic!()
    };
    assert!(
        updated["metadata"].get("annotations").is_none(),
        "annotateBeforeCreate only on create"
    );
}
