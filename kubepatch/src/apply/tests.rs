use super::*;
use serde_json::json;

const T1: &str = "2024-01-01T00:00:00Z";
const T2: &str = "2024-01-01T00:01:00Z";
const T3: &str = "2024-01-01T00:02:00Z";

fn apply(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, PatchError> {
    server_side_apply(ApplyRequest {
        live,
        applied,
        manager,
        force,
        now,
    })
}

fn managed(object: &Value) -> &Value {
    &object["metadata"]["managedFields"]
}

fn config_map(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}, "data": data})
}

/// What `kubectl apply` (client-side) creates: the object plus its last-applied annotation.
fn client_side_created(with_annotation: bool) -> Value {
    let mut object = config_map(json!({"key": "v1"}));
    if with_annotation {
        object["metadata"]["annotations"] = json!({LAST_APPLIED:
            "{\"apiVersion\":\"v1\",\"data\":{\"key\":\"v1\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"cm\",\"namespace\":\"default\"}}\n"});
    }
    let mut created = track_update(None, &object, "kubectl-client-side-apply", None, T1);
    // What the server adds after the field manager ran.
    created["metadata"]["uid"] = json!("u-1");
    created["metadata"]["resourceVersion"] = json!("1");
    created
}

#[test]
fn client_side_create_records_an_update_entry() {
    let created = client_side_created(true);
    assert_eq!(
        managed(&created),
        &json!([{
            "manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1", "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:key": {}},
                         "f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}}}
        }])
    );
}

#[test]
fn apply_conflicts_then_force_moves_ownership_then_omitted_field_is_removed() {
    let created = client_side_created(false);
    let changed = config_map(json!({"key": "v2"}));
    let conflict = apply(Some(&created), &changed, "kubectl", false, T2).unwrap_err();
    assert_eq!(
        conflict.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.key"#
    );
    assert_eq!(
        conflict,
        PatchError::Conflict(vec![FieldConflict {
            manager: "kubectl-client-side-apply".into(),
            field: ".data.key".into(),
            description: r#""kubectl-client-side-apply" using v1"#.into(),
        }])
    );

    let forced = apply(Some(&created), &changed, "kubectl", true, T2).unwrap();
    assert_eq!(forced["data"], json!({"key": "v2"}));
    assert_eq!(forced["metadata"]["uid"], json!("u-1"));
    assert_eq!(
        managed(&forced),
        &json!([
            {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "time": T2, "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {"f:key": {}}}},
            {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1", "time": T1, "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {}}}
        ])
    );

    let both = apply(
        Some(&forced),
        &config_map(json!({"key": "v2", "other": "x"})),
        "kubectl",
        false,
        T3,
    )
    .unwrap();
    assert_eq!(both["data"], json!({"key": "v2", "other": "x"}));
    let omitted = apply(
        Some(&both),
        &config_map(json!({"other": "x"})),
        "kubectl",
        false,
        T3,
    )
    .unwrap();
    assert_eq!(omitted["data"], json!({"other": "x"}));
    assert_eq!(
        managed(&omitted)[0]["fieldsV1"],
        json!({"f:data": {"f:other": {}}})
    );
}

#[test]
fn kubectl_upgrades_from_client_side_apply_without_conflict() {
    let created = client_side_created(true);
    let changed = config_map(json!({"key": "v2"}));
    let upgraded = apply(Some(&created), &changed, "kubectl", false, T2).unwrap();
    assert_eq!(upgraded["data"], json!({"key": "v2"}));
    // The annotation follows the server-side applied configuration.
    assert_eq!(
        upgraded["metadata"]["annotations"][LAST_APPLIED],
        json!(
            "{\"apiVersion\":\"v1\",\"data\":{\"key\":\"v2\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\",\"namespace\":\"default\"}}\n"
        )
    );
    // Another manager name gets no such upgrade.
    assert!(matches!(
        apply(Some(&created), &changed, "helm", false, T2),
        Err(PatchError::Conflict(_))
    ));
}

#[test]
fn equal_values_are_shared_without_conflict() {
    let first = apply(None, &config_map(json!({"a": "1"})), "one", false, T1).unwrap();
    let second = apply(
        Some(&first),
        &config_map(json!({"a": "1", "b": "2"})),
        "two",
        false,
        T2,
    )
    .unwrap();
    assert_eq!(
        managed(&second),
        &json!([
            {"manager": "one", "operation": "Apply", "apiVersion": "v1", "time": T1, "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}},
            {"manager": "two", "operation": "Apply", "apiVersion": "v1", "time": T2, "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}, "f:b": {}}}}
        ])
    );
    // `two` stops applying `a`: `one` still owns it, so it stays.
    let third = apply(
        Some(&second),
        &config_map(json!({"b": "2"})),
        "two",
        false,
        T3,
    )
    .unwrap();
    assert_eq!(third["data"], json!({"a": "1", "b": "2"}));
}

#[test]
fn several_conflicts_are_grouped_by_manager() {
    let first = apply(
        None,
        &config_map(json!({"a": "1", "b": "1"})),
        "one",
        false,
        T1,
    )
    .unwrap();
    let second = apply(
        Some(&first),
        &config_map(json!({"c": "1"})),
        "two",
        false,
        T1,
    )
    .unwrap();
    let err = apply(
        Some(&second),
        &config_map(json!({"a": "2", "b": "2", "c": "2"})),
        "three",
        false,
        T2,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 3 conflicts: conflicts with \"one\":\n- .data.a\n- .data.b\nconflicts with \"two\":\n- .data.c"
    );
}

fn deployment(image: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": image, "ports": [{"containerPort": 80}]}]}
            }
        },
        "status": {"replicas": 5}
    })
}

#[test]
fn deployment_apply_uses_associative_keys_and_ignores_status() {
    let created = apply(None, &deployment("nginx:1", 2), "kubectl", false, T1).unwrap();
    assert!(created.get("status").is_none());
    assert_eq!(
        managed(&created)[0]["fieldsV1"],
        json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
                        ".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                    }}}
                }
            }
        })
    );

    // A controller scales through an update; the applier's replicas then conflict.
    let mut scaled = created.clone();
    scaled["spec"]["replicas"] = json!(3);
    let scaled = track_update(Some(&created), &scaled, "kube-controller-manager", None, T2);
    assert_eq!(
        managed(&scaled)[1],
        json!({"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1", "time": T2,
               "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}})
    );
    assert!(
        managed(&scaled)[0]["fieldsV1"]["f:spec"]
            .get("f:replicas")
            .is_none()
    );
    let err = apply(
        Some(&scaled),
        &deployment("nginx:2", 2),
        "kubectl",
        false,
        T3,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kube-controller-manager" using apps/v1: .spec.replicas"#
    );
    // Applying without replicas gives them up to the controller and updates the image.
    let mut without_replicas = deployment("nginx:2", 2);
    without_replicas["spec"]
        .as_object_mut()
        .unwrap()
        .remove("replicas");
    let out = apply(Some(&scaled), &without_replicas, "kubectl", false, T3).unwrap();
    assert_eq!(out["spec"]["replicas"], json!(3));
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"][0]["image"],
        json!("nginx:2")
    );
    // A container the applier drops is pruned.
    let mut two_containers = without_replicas.clone();
    two_containers["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "sidecar", "image": "busybox"}));
    let out = apply(Some(&out), &two_containers, "kubectl", false, T3).unwrap();
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let out = apply(Some(&out), &without_replicas, "kubectl", false, T3).unwrap();
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([{"name": "nginx", "image": "nginx:2", "ports": [{"containerPort": 80}]}])
    );
}

#[test]
fn update_on_create_omits_non_pointer_structs() {
    let created = track_update(None, &deployment("nginx:1", 1), "kubectl-create", None, T1);
    assert_eq!(
        managed(&created)[0]["fieldsV1"],
        json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
                        ".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                    }}}
                }
            }
        })
    );
}

#[test]
fn status_subresource_updates_own_status_only() {
    let created = apply(None, &deployment("nginx:1", 1), "kubectl", false, T1).unwrap();
    let mut with_status = created.clone();
    with_status["status"] =
        json!({"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]});
    let out = track_update(
        Some(&created),
        &with_status,
        "kube-controller-manager",
        Some("status"),
        T2,
    );
    assert_eq!(
        managed(&out)[1],
        json!({"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1", "time": T2,
               "fieldsType": "FieldsV1", "subresource": "status",
               "fieldsV1": {"f:status": {"f:conditions": {".": {}, "k:{\"type\":\"Available\"}": {".": {}, "f:status": {}, "f:type": {}}}, "f:replicas": {}}}})
    );
    // A main-resource update does not take ownership of status.
    let mut touched = out.clone();
    touched["status"]["replicas"] = json!(2);
    let again = track_update(Some(&out), &touched, "someone", None, T3);
    assert_eq!(managed(&again), managed(&out));
}

#[test]
fn custom_resources_have_atomic_lists() {
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "finalizers": ["x"]},
        "spec": {"items": [{"name": "a"}], "size": {"big": true}}});
    let applied = apply(None, &widget, "op", false, T1).unwrap();
    assert_eq!(
        managed(&applied)[0]["fieldsV1"],
        json!({"f:metadata": {"f:finalizers": {"v:\"x\"": {}}}, "f:spec": {"f:items": {}, "f:size": {"f:big": {}}}})
    );
    let created = track_update(None, &widget, "op", None, T1);
    assert_eq!(
        managed(&created)[0]["fieldsV1"],
        json!({"f:metadata": {"f:finalizers": {".": {}, "v:\"x\"": {}}},
               "f:spec": {".": {}, "f:items": {}, "f:size": {".": {}, "f:big": {}}}})
    );
    let mut other = widget.clone();
    other["spec"]["items"] = json!([{"name": "b"}]);
    let err = apply(Some(&applied), &other, "someone-else", false, T2).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "op": .spec.items"#
    );
}

#[test]
fn first_apply_to_an_unmanaged_object_credits_before_first_apply() {
    let mut live = config_map(json!({"a": "1"}));
    live["metadata"]["uid"] = json!("u");
    let out = apply(Some(&live), &config_map(json!({"b": "2"})), "op", false, T2).unwrap();
    assert_eq!(out["data"], json!({"a": "1", "b": "2"}));
    assert_eq!(managed(&out)[1]["manager"], json!("before-first-apply"));
    assert_eq!(
        managed(&out)[1]["fieldsV1"],
        json!({"f:data": {".": {}, "f:a": {}}})
    );
    // The same object, updated (not applied): kube does not start tracking it.
    let updated = track_update(Some(&live), &config_map(json!({"a": "2"})), "op", None, T2);
    assert!(managed(&updated).is_null());
}

#[test]
fn managed_fields_reset_and_noop_keep_timestamps() {
    let created = client_side_created(true);
    let mut reset = created.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    assert!(managed(&track_update(Some(&created), &reset, "x", None, T2)).is_null());

    let same = track_update(
        Some(&created),
        &created,
        "kubectl-client-side-apply",
        None,
        T3,
    );
    assert_eq!(managed(&same), managed(&created));
    let applied = apply(None, &config_map(json!({"a": "1"})), "op", false, T1).unwrap();
    let again = apply(
        Some(&applied),
        &config_map(json!({"a": "1"})),
        "op",
        false,
        T3,
    )
    .unwrap();
    assert_eq!(again, applied);
}

#[test]
fn apply_rejects_malformed_requests() {
    let cm = config_map(json!({}));
    assert!(matches!(
        apply(None, &json!([1]), "m", false, T1),
        Err(PatchError::BadRequest(_))
    ));
    assert!(matches!(
        apply(None, &json!({"kind": "ConfigMap"}), "m", false, T1),
        Err(PatchError::BadRequest(_))
    ));
    assert!(matches!(
        apply(None, &cm, "", false, T1),
        Err(PatchError::BadRequest(_))
    ));
    let mut with_managed = cm.clone();
    with_managed["metadata"]["managedFields"] = json!([]);
    assert!(matches!(
        apply(None, &with_managed, "m", false, T1),
        Err(PatchError::BadRequest(_))
    ));
    let unnamed_env = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "env": [{"value": "x"}]}]}});
    assert!(matches!(
        apply(None, &unnamed_env, "m", false, T1),
        Err(PatchError::Invalid(_))
    ));
    let duplicate = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 1}, {"port": 1}]}});
    assert!(matches!(
        apply(None, &duplicate, "m", false, T1),
        Err(PatchError::Invalid(_))
    ));
}

#[test]
fn service_ports_are_keyed_by_port_and_protocol() {
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}, {"port": 53, "protocol": "UDP"}]}});
    let out = apply(None, &service, "m", false, T1).unwrap();
    assert_eq!(
        managed(&out)[0]["fieldsV1"],
        json!({"f:spec": {"f:ports": {
            "k:{\"port\":53,\"protocol\":\"UDP\"}": {".": {}, "f:port": {}, "f:protocol": {}},
            "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:targetPort": {}}
        }, "f:selector": {}}})
    );
}

#[test]
fn apply_merges_lists_in_kube_order() {
    let live = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}});
    let applied = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c"}, {"name": "d"}, {"name": "a"}]}});
    let out = apply(Some(&live), &applied, "m", true, T1).unwrap();
    let names: Vec<&str> = out["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["b", "c", "d", "a"]);
}

#[test]
fn times_order_like_kube() {
    assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(unix_seconds("2024-01-01T00:00:00Z"), Some(1_704_067_200));
    assert_eq!(
        unix_seconds("2024-01-01T01:00:00.5+01:00"),
        Some(1_704_067_200)
    );
    assert_eq!(unix_seconds("garbage"), None);
}

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    fn json_tree() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (0..4i64).prop_map(Value::from),
            "[a-c]{0,1}".prop_map(Value::from),
        ];
        leaf.prop_recursive(5, 40, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                prop::collection::btree_map(
                    "name|image|port|containers|spec|template|metadata|labels|finalizers|a|\\$patch",
                    inner,
                    0..4
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn object(kind: &'static str, api_version: &'static str) -> impl Strategy<Value = Value> {
        prop::collection::btree_map("spec|metadata|data|status", json_tree(), 0..4).prop_map(
            move |m| {
                let mut object: Map<String, Value> = m.into_iter().collect();
                object.insert("apiVersion".into(), Value::from(api_version));
                object.insert("kind".into(), Value::from(kind));
                Value::Object(object)
            },
        )
    }

    fn any_object() -> impl Strategy<Value = Value> {
        prop_oneof![
            object("Deployment", "apps/v1"),
            object("Pod", "v1"),
            object("ConfigMap", "v1"),
            object("Widget", "example.com/v1"),
        ]
    }

    proptest! {
        #[test]
        fn apply_and_update_never_panic(live in any_object(), applied in any_object(), force in any::<bool>()) {
            let once = track_update(None, &live, "creator", None, T1);
            let _ = track_update(Some(&once), &applied, "updater", Some("status"), T2);
            if let Ok(out) = apply(Some(&once), &applied, "kubectl", force, T2) {
                let _ = apply(Some(&out), &live, "kubectl", force, T3);
            }
            let _ = crate::strategic_merge_patch(&live, &applied);
        }
    }
}
