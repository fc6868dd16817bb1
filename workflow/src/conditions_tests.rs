use super::*;
use serde_json::json;

fn eval(src: &str, imports: Value, this: Value, objects: Value) -> ConditionResult {
    Expression::compile("Execution ns/exec", "deployItems[a].appliance.x", src)
        .unwrap()
        .evaluate(
            ConditionKind::ReconcilePrecondition,
            Variables {
                imports: &imports,
                this: &this,
                objects: &objects,
            },
        )
}

#[test]
fn evaluates_over_imports_self_and_objects() {
    let imports = json!({"monitoring": {"enabled": true}, "replicas": 3});
    let this = json!({"phase": "Succeeded", "exports": {"url": "http://x"}});
    let objects = objects_index(&[
        json!({"kind": "Namespace", "metadata": {"name": "mon"}}),
        json!({"kind": "Deployment", "metadata": {"name": "app", "namespace": "default"},
               "status": {"readyReplicas": 3}}),
    ]);
    let met = |src: &str| eval(src, imports.clone(), this.clone(), objects.clone());
    assert!(met("imports.monitoring.enabled").is_met());
    assert!(met("imports.replicas > 2 && self.phase == 'Succeeded'").is_met());
    assert!(met("has(self.exports.url)").is_met());
    assert!(
        met("objects.Deployment['default'].app.status.readyReplicas == imports.replicas").is_met()
    );
    assert!(met("'mon' in objects.Namespace['']").is_met());
    let r = met("!('gone' in objects.Namespace[''])");
    assert!(r.is_met(), "{r:?}");
    let r = met("imports.replicas > 5");
    assert_eq!(r.status(), "False");
    assert_eq!(
        r.message(),
        r#"reconcilePrecondition "imports.replicas > 5" is false"#
    );
}

#[test]
fn errors_are_neither_met_nor_not_met() {
    let r = eval("imports.missing.key", json!({}), json!({}), json!({}));
    assert!(matches!(r, ConditionResult::Error { .. }), "{r:?}");
    assert_eq!(r.status(), "Unknown");
    assert!(r.message().contains("imports.missing.key"), "{r:?}");
    // JSON integers are CEL ints: arithmetic with literals works.
    assert!(eval("imports.n + 1 == 2", json!({"n": 1}), json!({}), json!({})).is_met());
    assert!(
        eval(
            "imports.f * 2.0 == 3.0",
            json!({"f": 1.5}),
            json!({}),
            json!({})
        )
        .is_met()
    );
    let r = eval("imports.n + 1", json!({"n": 1}), json!({}), json!({}));
    assert!(r.message().contains("not a bool"), "{r:?}");
    assert!(matches!(r, ConditionResult::Error { .. }));
}

#[test]
fn invalid_expressions_name_object_and_field() {
    let err = Expression::compile(
        "blueprint item \"mon\"",
        "deployItems[mon].appliance.readyPostcondition",
        "self.phase ==",
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("blueprint item \"mon\": deployItems[mon].appliance.readyPostcondition: invalid CEL expression: "),
        "{text}"
    );
    assert!(Expression::compile("o", "f", "  ").is_err());
}

#[test]
fn cost_is_bounded_before_and_after_parsing() {
    let long = format!("imports.a == '{}'", "x".repeat(MAX_EXPRESSION_LEN));
    assert!(
        Expression::compile("o", "f", &long)
            .unwrap_err()
            .message
            .contains("bytes")
    );
    let deep = format!("{}true{}", "(".repeat(200), ")".repeat(200));
    assert!(
        Expression::compile("o", "f", &deep)
            .unwrap_err()
            .message
            .contains("brackets")
    );
    // Brackets inside strings do not count.
    let quoted = format!("imports.a == '{}'", "(".repeat(100));
    assert!(Expression::compile("o", "f", &quoted).is_ok());
    // A long member chain: deep tree without brackets.
    let chain = format!("imports{} == 1", ".a".repeat(200));
    assert!(
        Expression::compile("o", "f", &chain)
            .unwrap_err()
            .message
            .contains("levels deep")
    );
    let loops = "[1].all(a, [1].all(b, [1].all(c, true)))";
    assert!(
        Expression::compile("o", "f", loops)
            .unwrap_err()
            .message
            .contains("macros")
    );
    assert!(Expression::compile("o", "f", "[1].all(a, [1].exists(b, b == a))").is_ok());
}

#[test]
fn conditions_compile_from_the_block_and_crd_present_uses_the_target() {
    let ext: WorkflowExtension = serde_json::from_value(json!({
        "reconcilePrecondition": "imports.flag",
        "activationCondition": {"crdPresent": "servicemonitors.monitoring.coreos.com"}
    }))
    .unwrap();
    let c =
        Conditions::compile("Execution ns/e", "deployItems[mon].appliance", Some(&ext)).unwrap();
    assert!(c.reconcile_precondition.is_some() && c.ready_postcondition.is_none());
    let vars = Variables {
        imports: &Value::Null,
        this: &Value::Null,
        objects: &Value::Null,
    };
    let act = c.activation_condition.as_ref().unwrap();
    assert!(!act.evaluate(vars, &BTreeSet::new()).is_met());
    let present = BTreeSet::from(["servicemonitors.monitoring.coreos.com".to_owned()]);
    assert!(act.evaluate(vars, &present).is_met());
    assert!(Conditions::compile("o", "f", None).unwrap().is_empty());
    let bad: WorkflowExtension =
        serde_json::from_value(json!({"deletePostcondition": "a ||"})).unwrap();
    let err = Conditions::compile("Execution ns/e", "deployItems[mon].appliance", Some(&bad))
        .unwrap_err();
    assert_eq!(err.field, "deployItems[mon].appliance.deletePostcondition");
    assert_eq!(err.object, "Execution ns/e");
}

#[test]
fn compile_block_checks_placement_and_expressions() {
    let policy: WorkflowExtension =
        serde_json::from_value(json!({"failurePolicy": "ContinueIndependent"})).unwrap();
    let err = compile_block(
        "blueprint deploy item \"mon\"",
        "deployItems[mon].appliance",
        ExtensionPlace::DeployItemTemplate,
        Some(&policy),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "blueprint deploy item \"mon\": deployItems[mon].appliance.failurePolicy: Forbidden: only on Executions and Installations"
    );
    assert!(
        compile_block(
            "Installation ns/i",
            "a",
            ExtensionPlace::Installation,
            Some(&policy)
        )
        .is_ok()
    );
    let bad: WorkflowExtension =
        serde_json::from_value(json!({"readyPostcondition": "self.exports.("})).unwrap();
    let err = compile_block(
        "Execution ns/e",
        "deployItems[x].appliance",
        ExtensionPlace::DeployItemTemplate,
        Some(&bad),
    )
    .unwrap_err();
    assert!(
        matches!(&err, BlockError::Expression(e) if e.field == "deployItems[x].appliance.readyPostcondition"),
        "{err:?}"
    );
    assert!(
        compile_block("o", "f", ExtensionPlace::Execution, None)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn results_become_status_conditions() {
    let not_met = ConditionResult::NotMet {
        message: "reconcilePrecondition \"imports.on\" is false".into(),
    };
    let c = not_met.to_condition(ConditionKind::ReconcilePrecondition, None, "t1");
    assert_eq!(
        (c.r#type.as_str(), c.status.as_str(), c.reason.as_str()),
        ("ReconcilePrecondition", "False", "ConditionNotMet")
    );
    assert_eq!(c.last_transition_time.as_deref(), Some("t1"));
    assert_eq!(c.message, not_met.message());
    // Same status later: the transition time stays; a change moves it.
    let again = not_met.to_condition(ConditionKind::ReconcilePrecondition, Some(&c), "t2");
    assert_eq!(
        (
            again.last_transition_time.as_deref(),
            again.last_update_time.as_deref()
        ),
        (Some("t1"), Some("t2"))
    );
    let met = ConditionResult::Met {
        message: "m".into(),
    }
    .to_condition(ConditionKind::ReconcilePrecondition, Some(&again), "t3");
    assert_eq!(
        (met.status.as_str(), met.last_transition_time.as_deref()),
        ("True", Some("t3"))
    );
    let err = ConditionResult::Error {
        message: "e".into(),
    }
    .to_condition(ConditionKind::ReadyPostcondition, None, "t");
    assert_eq!(
        (
            err.r#type.as_str(),
            err.status.as_str(),
            err.reason.as_str()
        ),
        ("ReadyPostcondition", "Unknown", "ConditionError")
    );
}

#[test]
fn recorded_conditions_change_only_with_their_result() {
    let kind = ConditionKind::ReadyPostcondition;
    let not_met = ConditionResult::NotMet {
        message: "replicas 0 < 3".into(),
    };
    let met = ConditionResult::Met {
        message: "replicas 3 >= 3".into(),
    };
    let mut list = vec![Condition {
        r#type: "Other".into(),
        status: "True".into(),
        ..Default::default()
    }];
    assert!(record_condition(
        &mut list,
        "a/ReadyPostcondition",
        kind,
        &not_met,
        "t1"
    ));
    assert!(!record_condition(
        &mut list,
        "a/ReadyPostcondition",
        kind,
        &not_met,
        "t2"
    ));
    let entry = |list: &[Condition]| {
        list.iter()
            .find(|c| c.r#type == "a/ReadyPostcondition")
            .cloned()
            .unwrap()
    };
    assert_eq!(
        entry(&list).last_update_time.as_deref(),
        Some("t1"),
        "unchanged: nothing written"
    );
    assert!(record_condition(
        &mut list,
        "a/ReadyPostcondition",
        kind,
        &met,
        "t3"
    ));
    let c = entry(&list);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "ConditionMet")
    );
    assert_eq!(c.last_transition_time.as_deref(), Some("t3"));
    let changed_message = ConditionResult::Met {
        message: "replicas 4 >= 3".into(),
    };
    assert!(record_condition(
        &mut list,
        "a/ReadyPostcondition",
        kind,
        &changed_message,
        "t4"
    ));
    let c = entry(&list);
    assert_eq!(
        c.last_transition_time.as_deref(),
        Some("t3"),
        "status stayed True"
    );
    assert_eq!(c.last_update_time.as_deref(), Some("t4"));
    assert_eq!(list.len(), 2, "other conditions stay");
}

#[test]
fn check_block_names_the_field_relative_to_the_block() {
    let bad: WorkflowExtension =
        serde_json::from_value(json!({"reconcilePrecondition": "imports.("})).unwrap();
    let (field, message) =
        check_block(ExtensionPlace::InstallationTemplate, Some(&bad)).unwrap_err();
    assert_eq!(field, "reconcilePrecondition");
    assert!(message.starts_with("invalid CEL expression: "), "{message}");
    let policy: WorkflowExtension = serde_json::from_value(json!({"maxConcurrency": 2})).unwrap();
    let (field, message) =
        check_block(ExtensionPlace::DeployItemTemplate, Some(&policy)).unwrap_err();
    assert_eq!(field, "maxConcurrency");
    assert_eq!(message, "Forbidden: only on Executions and Installations");
    let good: WorkflowExtension =
        serde_json::from_value(json!({"readyPostcondition": "self.exports.ready"})).unwrap();
    assert!(check_block(ExtensionPlace::DeployItemTemplate, Some(&good)).is_ok());
    assert!(check_block(ExtensionPlace::DeployItemTemplate, None).is_ok());
}
