//! Workflow conditions on subinstallations (issue 19), pure: which subinstallation templates of
//! an Installation are left out of this job because a reconcile precondition or activation
//! condition (the `appliance:` block of a subinstallation template) is false, and the condition
//! results recorded in the Installation's `status.conditions`.
//!
//! * reconcile precondition false: the subinstallation is not created, an existing one is
//!   deleted, and so is every sibling that (transitively, by data flow) depends on it. They are
//!   deleted without `delete-ignore-successors`, so Landscaper's successor check makes each one
//!   wait until its successors are gone: the teardown runs in reverse order;
//! * activation condition false: the subinstallation is neither created nor updated nor deleted,
//!   its dependents are removed as for a false precondition;
//! * a condition that cannot be evaluated fails the job (it never counts as false, so nothing is
//!   deleted because of it).
//!
//! Without a block on any template nothing changes (the gate excludes nothing and records no
//! condition).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use landscaper_store::model::ExtensionPlace;
use landscaper_store::model::constants::SUBINSTALLATION_NAME_ANNOTATION;
use landscaper_store::model::workflow::WORKFLOW_ANNOTATION;
use landscaper_store::model::{
    Condition, FailurePolicy, Installation, InstallationSpec, Phase, WorkflowExtension,
};
use landscaper_templating::blueprint::InstallationTemplate;
use landscaper_workflow::conditions::{
    Activation, ConditionKind, ConditionResult, Variables, compile_block, record_condition,
};
use landscaper_workflow::plan::{AggregatedError, Policy};
use serde_json::{Map, Value, json};

use super::dataflow::is_successor;

/// What becomes of a subinstallation template in this job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exclusion {
    /// Its reconcile precondition is false, or a predecessor is excluded: not created, deleted
    /// when it exists.
    Removed(String),
    /// Its activation condition is false: left as it is.
    Inactive(String),
}

/// The gate's result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gate {
    /// Template name to why it is left out.
    pub excluded: BTreeMap<String, Exclusion>,
    /// `(template, kind, result)` of every evaluated condition, in template order.
    pub results: Vec<(String, ConditionKind, ConditionResult)>,
}

/// The `status.conditions` type of a subinstallation's condition on its parent:
/// `<template>/<ConditionType>` (as Executions record their deploy items' conditions).
pub fn condition_type(template: &str, kind: ConditionKind) -> String {
    format!("{template}/{}", kind.condition_type())
}

fn block_field(template: &str) -> String {
    format!("subinstallations[{template}].appliance")
}

/// Compiles and evaluates the conditions of every template carrying a block. `object` names
/// the blueprint (e.g. `blueprint of Installation ns/name`); `imports` are the Installation's
/// imports; `existing` the status of the template's current subinstallation (for `self`).
/// An expression that does not compile or cannot be evaluated is an error naming the
/// blueprint, the subinstallation and the field.
pub fn gate(
    object: &str,
    templates: &[InstallationTemplate],
    imports: &Map<String, Value>,
    existing: &BTreeMap<String, Value>,
) -> Result<Gate, String> {
    let mut out = Gate::default();
    if templates.iter().all(|t| t.appliance.is_none()) {
        return Ok(out);
    }
    let imports = Value::Object(imports.clone());
    let objects = json!({});
    let mut removed_roots = Vec::new();
    for t in templates {
        let Some(ext) = &t.appliance else { continue };
        let field = block_field(&t.name);
        let compiled = compile_block(
            &format!("{object}: subinstallation {}", t.name),
            &field,
            ExtensionPlace::InstallationTemplate,
            Some(ext),
        )
        .map_err(|e| e.to_string())?;
        let this = existing.get(&t.name).cloned().unwrap_or_else(|| json!({}));
        let vars = Variables {
            imports: &imports,
            this: &this,
            objects: &objects,
        };
        let activation = compiled.activation_condition.as_ref().map(|a| match a {
            Activation::CrdPresent(name) => ConditionResult::Error {
                message: format!(
                    "activationCondition crdPresent {name:?} applies to deploy items only (a subinstallation has no target cluster)"
                ),
            },
            a => a.evaluate(vars, &BTreeSet::new()),
        });
        let precondition = compiled
            .reconcile_precondition
            .as_ref()
            .map(|e| e.evaluate(ConditionKind::ReconcilePrecondition, vars));
        for (kind, result) in [
            (ConditionKind::ActivationCondition, &activation),
            (ConditionKind::ReconcilePrecondition, &precondition),
        ] {
            let Some(result) = result else { continue };
            if let ConditionResult::Error { message } = result {
                return Err(format!(
                    "{object}: subinstallation {}: {field}.{kind}: {message}",
                    t.name
                ));
            }
            out.results.push((t.name.clone(), kind, result.clone()));
        }
        if let Some(r @ ConditionResult::NotMet { .. }) = &activation {
            out.excluded.insert(
                t.name.clone(),
                Exclusion::Inactive(format!("inactive: {}", r.message())),
            );
            removed_roots.push((t.name.clone(), false));
        } else if let Some(r @ ConditionResult::NotMet { .. }) = &precondition {
            out.excluded.insert(
                t.name.clone(),
                Exclusion::Removed(format!("skipped: precondition not met: {}", r.message())),
            );
            removed_roots.push((t.name.clone(), true));
        }
    }
    // Everything depending on an excluded template, transitively, is removed.
    let as_inst: Vec<(String, Installation)> = templates
        .iter()
        .map(|t| {
            let i = Installation {
                spec: InstallationSpec {
                    imports: Some(t.imports.clone()),
                    exports: Some(t.exports.clone()),
                    ..Default::default()
                },
                ..Default::default()
            };
            (t.name.clone(), i)
        })
        .collect();
    let mut queue: Vec<String> = removed_roots.into_iter().map(|(n, _)| n).collect();
    while let Some(name) = queue.pop() {
        let Some((_, from)) = as_inst.iter().find(|(n, _)| *n == name) else {
            continue;
        };
        for (succ, inst) in &as_inst {
            if *succ != name && !out.excluded.contains_key(succ) && is_successor(from, inst) {
                out.excluded.insert(
                    succ.clone(),
                    Exclusion::Removed(format!(
                        "skipped: depends on {name}, whose condition is not met"
                    )),
                );
                queue.push(succ.clone());
            }
        }
    }
    Ok(out)
}

/// Sets the conditions of `gate` in `list` (an entry keeps its `lastTransitionTime` while its
/// status stays), and drops the entries of templates that no longer carry that condition.
pub fn record(list: &mut Vec<Condition>, gate: &Gate, templates: &[String], now: &str) {
    let ours = |t: &str| {
        templates.iter().any(|n| {
            ConditionKind::ALL
                .iter()
                .any(|k| condition_type(n, *k) == t)
        })
    };
    // Conditions of ours that are no longer evaluated (the block changed) go.
    list.retain(|c| {
        !ours(&c.r#type)
            || gate
                .results
                .iter()
                .any(|(template, kind, _)| condition_type(template, *kind) == c.r#type)
    });
    for (template, kind, result) in &gate.results {
        record_condition(list, &condition_type(template, *kind), *kind, result, now);
    }
}

/// The Installation's policies from its `landscaper-appliance.io/workflow` annotation (Landscaper's
/// behaviour without it). An invalid block is refused at admission; here it counts as absent.
pub fn policy(inst: &Installation) -> Policy {
    match WorkflowExtension::from_annotations(&inst.metadata) {
        Ok(Some(ext)) => Policy {
            failure_policy: ext.failure_policy(),
            max_concurrency: ext.max_concurrency,
        },
        _ => Policy::default(),
    }
}

fn job(i: &Installation) -> (Option<&str>, Option<&str>) {
    let s = i.status.as_ref();
    (
        s.and_then(|s| s.job_id.as_deref()),
        s.and_then(|s| s.job_id_finished.as_deref()),
    )
}

/// The object's name (what the job ID is passed by).
fn label(i: &Installation) -> String {
    i.metadata.name.clone().unwrap_or_default()
}

/// The name in messages: the subinstallation's template name, else its object name.
fn display_name(i: &Installation) -> String {
    i.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SUBINSTALLATION_NAME_ANNOTATION))
        .cloned()
        .unwrap_or_else(|| label(i))
}

/// Under `maxConcurrency`: the subinstallations (not being deleted) that get `job_id` now. A
/// subinstallation runs when it has the job's ID and has not finished it; one not yet on the
/// job starts once no subinstallation it imports from (data flow) is still waiting, while
/// fewer than `max` run. Under `FailFast` nothing new starts after a failure in this job.
pub fn to_trigger(job_id: &str, subs: &[Installation], policy: Policy) -> Vec<String> {
    let Some(max) = policy.max_concurrency else {
        return subs.iter().map(label).collect();
    };
    let on_job = |i: &Installation| job(i).0 == Some(job_id);
    let running = subs
        .iter()
        .filter(|i| on_job(i) && job(i).1 != Some(job_id))
        .count();
    let failed = subs.iter().any(|i| {
        on_job(i)
            && job(i).1 == Some(job_id)
            && matches!(
                i.status.as_ref().and_then(|s| s.phase.as_ref()),
                Some(Phase::Failed | Phase::DeleteFailed)
            )
    });
    if failed && policy.failure_policy == FailurePolicy::FailFast {
        return Vec::new();
    }
    let pending: Vec<&Installation> = subs.iter().filter(|i| !on_job(i)).collect();
    pending
        .iter()
        .filter(|c| {
            !pending
                .iter()
                .any(|p| !std::ptr::eq(*p, **c) && is_successor(p, c))
        })
        .take((max as usize).saturating_sub(running))
        .map(|i| label(i))
        .collect()
}

/// Whether subinstallations wait for this job's ID (only under `maxConcurrency`).
pub fn has_pending(job_id: &str, subs: &[Installation]) -> bool {
    subs.iter().any(|i| job(i).0 != Some(job_id))
}

/// `ContinueIndependent`'s aggregated error: each failed subinstallation with its last error.
pub fn aggregated_failure(job_id: &str, subs: &[Installation]) -> AggregatedError {
    AggregatedError {
        failures: subs
            .iter()
            .filter(|i| {
                job(i) == (Some(job_id), Some(job_id))
                    && matches!(
                        i.status.as_ref().and_then(|s| s.phase.as_ref()),
                        Some(Phase::Failed | Phase::DeleteFailed)
                    )
            })
            .map(|i| {
                let message = i
                    .status
                    .as_ref()
                    .and_then(|s| s.last_error.as_ref())
                    .map(|e| e.message.clone())
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(|| "failed".into());
                (display_name(i), message)
            })
            .collect(),
    }
}

/// The block a subinstallation carries as its own: the template's block, written by the parent
/// into the subinstallation's [`WORKFLOW_ANNOTATION`] (JSON, which the annotation's YAML reads),
/// so that the subinstallation evaluates its own ready and delete postconditions and applies
/// the policies to its own children, as a root Installation does with its annotation. `None`
/// without a block (the annotation is then removed, nothing else changes).
pub fn template_annotation(template: &InstallationTemplate) -> Option<String> {
    template
        .appliance
        .as_ref()
        .filter(|b| !b.is_empty())
        .and_then(|b| serde_json::to_string(b).ok())
}

/// The admission check of an Installation's own block (manifest files): it must fit an
/// Installation and every condition must compile. A reconcile precondition or activation
/// condition is decided by a parent about its subinstallations: on an Installation of its own
/// (a root) nothing could decide it, so it is refused there. `Err((field, message))`, the
/// message naming the Installation and the field.
pub fn check_admission(inst: &Installation) -> Result<(), (String, String)> {
    let field = format!("metadata.annotations[{WORKFLOW_ANNOTATION}]");
    let object = format!(
        "Installation {}/{}",
        inst.metadata.namespace.as_deref().unwrap_or_default(),
        label(inst)
    );
    let block = WorkflowExtension::from_annotations(&inst.metadata).map_err(|e| {
        (
            e.field.clone(),
            format!("{object}: {}: {}", e.field, e.message),
        )
    })?;
    let Some(block) = block else {
        return Ok(());
    };
    let is_root =
        inst.metadata.labels.as_ref().is_none_or(|l| {
            !l.contains_key(landscaper_store::model::constants::ENCOMPASSED_BY_LABEL)
        });
    for (set, kind) in [
        (
            block.reconcile_precondition.is_some(),
            ConditionKind::ReconcilePrecondition,
        ),
        (
            block.activation_condition.is_some(),
            ConditionKind::ActivationCondition,
        ),
    ] {
        if set && is_root {
            return Err((
                field.clone(),
                format!(
                    "{object}: {field}.{kind}: Forbidden: a root Installation has no parent to decide on it; put it on a subinstallation template (readyPostcondition, deletePostcondition, failurePolicy and maxConcurrency apply here)"
                ),
            ));
        }
    }
    compile_block(&object, &field, ExtensionPlace::Installation, Some(&block))
        .map(|_| ())
        .map_err(|e| (field, e.to_string()))
}

/// What an installation's own postcondition (its block's `readyPostcondition` at the end of a
/// job, `deletePostcondition` before its finalizer goes) says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Postcondition {
    /// No such condition: Landscaper's behaviour.
    Absent,
    /// The result to record; whether the installation may go on (met).
    Evaluated(ConditionResult),
    /// A ready postcondition still false after the progressing timeout.
    TimedOut(ConditionResult, Duration),
}

/// Evaluates the installation's own `kind` postcondition (from its [`WORKFLOW_ANNOTATION`]) over
/// `imports` and `this` (`self`: `{status, exports}`). A ready postcondition that stays false
/// longer than `timeout` since `since` (the start of the job's wait for its children) times
/// out. An expression that does not compile or cannot be evaluated is an error naming the
/// installation and the field.
pub fn own_postcondition(
    inst: &Installation,
    kind: ConditionKind,
    imports: &Value,
    this: &Value,
    timing: (&str, Option<&str>, Option<Duration>),
) -> Result<Postcondition, String> {
    let object = format!(
        "Installation {}/{}",
        inst.metadata.namespace.as_deref().unwrap_or_default(),
        label(inst)
    );
    let field = format!("metadata.annotations[{WORKFLOW_ANNOTATION}]");
    let block = WorkflowExtension::from_annotations(&inst.metadata)
        .map_err(|e| format!("{object}: {}: {}", e.field, e.message))?;
    let conditions = compile_block(
        &object,
        &field,
        ExtensionPlace::Installation,
        block.as_ref(),
    )
    .map_err(|e| e.to_string())?;
    let expression = match kind {
        ConditionKind::ReadyPostcondition => conditions.ready_postcondition,
        ConditionKind::DeletePostcondition => conditions.delete_postcondition,
        _ => None,
    };
    let Some(expression) = expression else {
        return Ok(Postcondition::Absent);
    };
    let objects = json!({});
    let result = expression.evaluate(
        kind,
        Variables {
            imports,
            this,
            objects: &objects,
        },
    );
    if let ConditionResult::Error { message } = &result {
        return Err(format!("{object}: {field}.{kind}: {message}"));
    }
    let (now, since, timeout) = timing;
    if !result.is_met()
        && let (Some(since), Some(timeout)) = (since, timeout)
        && let (Ok(since), Ok(now)) = (
            since.parse::<jiff::Timestamp>(),
            now.parse::<jiff::Timestamp>(),
        )
        && now
            .duration_since(since)
            .try_into()
            .is_ok_and(|d: Duration| d >= timeout)
    {
        return Ok(Postcondition::TimedOut(result, timeout));
    }
    Ok(Postcondition::Evaluated(result))
}

/// Records the installation's own postcondition result under its plain type
/// (`ReadyPostcondition`, `DeletePostcondition`) in `status.conditions`; whether it changed.
pub fn record_own(
    status: &mut landscaper_store::model::InstallationStatus,
    kind: ConditionKind,
    result: &ConditionResult,
    now: &str,
) -> bool {
    let list = status.conditions.get_or_insert_with(Vec::new);
    record_condition(list, kind.condition_type(), kind, result, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use landscaper_store::model::{
        DataExport, DataImport, InstallationExports, InstallationImports,
    };

    fn template(
        name: &str,
        imports: &[&str],
        exports: &[&str],
        pre: Option<&str>,
    ) -> InstallationTemplate {
        InstallationTemplate {
            name: name.into(),
            imports: InstallationImports {
                data: Some(
                    imports
                        .iter()
                        .map(|d| DataImport {
                            name: d.to_string(),
                            data_ref: Some(d.to_string()),
                            ..Default::default()
                        })
                        .collect(),
                ),
                targets: None,
            },
            exports: InstallationExports {
                data: Some(
                    exports
                        .iter()
                        .map(|d| DataExport {
                            name: d.to_string(),
                            data_ref: d.to_string(),
                        })
                        .collect(),
                ),
                targets: None,
            },
            appliance: pre.map(|p| WorkflowExtension {
                reconcile_precondition: Some(p.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn imports(flag: bool) -> Map<String, Value> {
        json!({"monitoring": flag})
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    /// a → b → c (data flow), d independent; a carries the feature-flag precondition.
    fn chain() -> Vec<InstallationTemplate> {
        vec![
            template("a", &[], &["x"], Some("imports.monitoring")),
            template("b", &["x"], &["y"], None),
            template("c", &["y"], &[], None),
            template("d", &[], &[], None),
        ]
    }

    #[test]
    fn admission_compiles_a_roots_block_and_refuses_what_only_a_parent_decides() {
        let with = |yaml: &str| {
            let mut i = Installation::default();
            i.metadata.name = Some("root".into());
            i.metadata.namespace = Some("ns".into());
            i.metadata.annotations =
                Some([(WORKFLOW_ANNOTATION.to_string(), yaml.to_string())].into());
            i
        };
        assert!(check_admission(&Installation::default()).is_ok());
        assert!(
            check_admission(&with(
                "readyPostcondition: self.exports.ok
maxConcurrency: 2
"
            ))
            .is_ok()
        );
        let (field, message) = check_admission(&with(
            "readyPostcondition: 'self.('
",
        ))
        .unwrap_err();
        assert_eq!(
            field,
            "metadata.annotations[landscaper-appliance.io/workflow]"
        );
        assert!(
            message.contains("Installation ns/root")
                && message.contains("workflow].readyPostcondition: invalid CEL expression"),
            "{message}"
        );
        let (_, message) = check_admission(&with(
            "reconcilePrecondition: 'true'
",
        ))
        .unwrap_err();
        assert!(
            message.contains("reconcilePrecondition: Forbidden"),
            "{message}"
        );
        let (_, message) = check_admission(&with(
            "activationCondition: 'true'
",
        ))
        .unwrap_err();
        assert!(
            message.contains("activationCondition: Forbidden"),
            "{message}"
        );
    }

    #[test]
    fn own_postconditions_are_evaluated_and_time_out() {
        let mut i = Installation::default();
        i.metadata.name = Some("a".into());
        i.metadata.annotations = Some(
            [(
                WORKFLOW_ANNOTATION.to_string(),
                "readyPostcondition: imports.on\n".to_string(),
            )]
            .into(),
        );
        let this = json!({});
        let timing = ("2030-01-01T00:10:00Z", Some("2030-01-01T00:00:00Z"), None);
        let r = own_postcondition(
            &i,
            ConditionKind::ReadyPostcondition,
            &json!({"on": true}),
            &this,
            timing,
        )
        .unwrap();
        assert!(
            matches!(r, Postcondition::Evaluated(ref r) if r.is_met()),
            "{r:?}"
        );
        let r = own_postcondition(
            &i,
            ConditionKind::ReadyPostcondition,
            &json!({"on": false}),
            &this,
            timing,
        )
        .unwrap();
        assert!(
            matches!(r, Postcondition::Evaluated(ref r) if !r.is_met()),
            "{r:?}"
        );
        let short = (timing.0, timing.1, Some(Duration::from_secs(60)));
        let r = own_postcondition(
            &i,
            ConditionKind::ReadyPostcondition,
            &json!({"on": false}),
            &this,
            short,
        )
        .unwrap();
        assert!(
            matches!(r, Postcondition::TimedOut(_, d) if d.as_secs() == 60),
            "{r:?}"
        );
        // No delete postcondition: Landscaper's behaviour.
        let r = own_postcondition(
            &i,
            ConditionKind::DeletePostcondition,
            &json!({}),
            &this,
            timing,
        )
        .unwrap();
        assert_eq!(r, Postcondition::Absent);
        // Unevaluable: an error naming the installation and the field.
        let e = own_postcondition(
            &i,
            ConditionKind::ReadyPostcondition,
            &json!({}),
            &this,
            timing,
        )
        .unwrap_err();
        assert!(
            e.contains("Installation /a") && e.contains("readyPostcondition"),
            "{e}"
        );
    }

    #[test]
    fn no_block_excludes_nothing() {
        let t = vec![
            template("a", &[], &["x"], None),
            template("b", &["x"], &[], None),
        ];
        let g = gate("bp", &t, &imports(false), &BTreeMap::new()).unwrap();
        assert_eq!(g, Gate::default());
    }

    #[test]
    fn false_precondition_removes_the_subtree_only() {
        let g = gate("bp", &chain(), &imports(false), &BTreeMap::new()).unwrap();
        let names: Vec<&str> = g.excluded.keys().map(String::as_str).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(
            matches!(&g.excluded["a"], Exclusion::Removed(m) if m.starts_with("skipped: precondition not met"))
        );
        assert!(matches!(&g.excluded["c"], Exclusion::Removed(m) if m.contains("depends on b")));
        assert_eq!(g.results.len(), 1);
        assert_eq!(g.results[0].2.status(), "False");
    }

    #[test]
    fn true_precondition_keeps_everything_and_records_true() {
        let g = gate("bp", &chain(), &imports(true), &BTreeMap::new()).unwrap();
        assert!(g.excluded.is_empty());
        assert_eq!(g.results[0].0, "a");
        assert_eq!(g.results[0].2.status(), "True");
    }

    #[test]
    fn false_activation_leaves_the_template_and_removes_its_dependents() {
        let mut t = chain();
        t[0].appliance = Some(WorkflowExtension {
            activation_condition: Some(landscaper_store::model::ActivationCondition::Expression(
                "imports.monitoring".into(),
            )),
            ..Default::default()
        });
        let g = gate("bp", &t, &imports(false), &BTreeMap::new()).unwrap();
        assert!(matches!(&g.excluded["a"], Exclusion::Inactive(_)));
        assert!(matches!(&g.excluded["b"], Exclusion::Removed(_)));
        assert!(!g.excluded.contains_key("d"));
    }

    #[test]
    fn unevaluable_precondition_is_an_error_naming_blueprint_subinstallation_and_field() {
        let mut t = chain();
        t[0].appliance = Some(WorkflowExtension {
            reconcile_precondition: Some("imports.missing".into()),
            ..Default::default()
        });
        let e = gate(
            "blueprint of Installation ns/root",
            &t,
            &imports(false),
            &BTreeMap::new(),
        )
        .unwrap_err();
        assert!(e.contains("blueprint of Installation ns/root"), "{e}");
        assert!(e.contains("subinstallation a"), "{e}");
        assert!(
            e.contains("subinstallations[a].appliance.reconcilePrecondition"),
            "{e}"
        );
    }

    #[test]
    fn invalid_expression_is_a_blueprint_error() {
        let mut t = chain();
        t[1].appliance = Some(WorkflowExtension {
            reconcile_precondition: Some("imports.(".into()),
            ..Default::default()
        });
        let e = gate(
            "blueprint of Installation ns/root",
            &t,
            &imports(true),
            &BTreeMap::new(),
        )
        .unwrap_err();
        assert!(e.contains("subinstallation b"), "{e}");
        assert!(
            e.contains("subinstallations[b].appliance.reconcilePrecondition"),
            "{e}"
        );
        assert!(e.contains("invalid CEL"), "{e}");
    }

    /// A subinstallation with data flow from `template` and its job state.
    fn sub_inst(
        name: &str,
        t: &InstallationTemplate,
        job: &str,
        finished: &str,
        phase: Option<Phase>,
    ) -> Installation {
        let mut i = Installation::default();
        i.metadata.name = Some(name.into());
        i.spec.imports = Some(t.imports.clone());
        i.spec.exports = Some(t.exports.clone());
        let status = i.status.get_or_insert_with(Default::default);
        status.job_id = Some(job.into());
        status.job_id_finished = Some(finished.into());
        status.phase = phase;
        i
    }

    fn limited(max: u32, failure_policy: FailurePolicy) -> Policy {
        Policy {
            failure_policy,
            max_concurrency: Some(max),
        }
    }

    #[test]
    fn without_max_concurrency_every_subinstallation_is_triggered() {
        let t = chain();
        let subs: Vec<Installation> = t
            .iter()
            .map(|t| sub_inst(&t.name, t, "old", "old", None))
            .collect();
        assert_eq!(
            to_trigger("j2", &subs, Policy::default()),
            ["a", "b", "c", "d"]
        );
    }

    #[test]
    fn max_concurrency_starts_in_data_flow_order_and_refills() {
        let t = chain();
        let mk = |states: [(&str, &str, Option<Phase>); 4]| -> Vec<Installation> {
            t.iter()
                .zip(states)
                .map(|(t, (j, f, p))| sub_inst(&t.name, t, j, f, p))
                .collect()
        };
        let policy = limited(1, FailurePolicy::FailFast);
        // Nothing on the job: a first (b and c wait for their predecessors, d is independent
        // but the limit is 1).
        let subs = mk([
            ("old", "old", None),
            ("old", "old", None),
            ("old", "old", None),
            ("old", "old", None),
        ]);
        assert_eq!(to_trigger("j2", &subs, policy), ["a"]);
        // a runs: nothing more.
        let subs = mk([
            ("j2", "old", None),
            ("old", "old", None),
            ("old", "old", None),
            ("old", "old", None),
        ]);
        assert!(to_trigger("j2", &subs, policy).is_empty());
        // a finished: b (its successor) is next; with 2, d too.
        let ok = Some(Phase::Succeeded);
        let subs = mk([
            ("j2", "j2", ok.clone()),
            ("old", "old", None),
            ("old", "old", None),
            ("old", "old", None),
        ]);
        assert_eq!(to_trigger("j2", &subs, policy), ["b"]);
        assert_eq!(
            to_trigger("j2", &subs, limited(2, FailurePolicy::FailFast)),
            ["b", "d"]
        );
        assert!(has_pending("j2", &subs));
    }

    #[test]
    fn fail_fast_starts_nothing_after_a_failure_continue_independent_does() {
        let t = chain();
        let failed = Some(Phase::Failed);
        let subs: Vec<Installation> = t
            .iter()
            .map(|x| match x.name.as_str() {
                "a" => sub_inst("a", x, "j2", "j2", failed.clone()),
                n => sub_inst(n, x, "old", "old", None),
            })
            .collect();
        assert!(to_trigger("j2", &subs, limited(1, FailurePolicy::FailFast)).is_empty());
        assert_eq!(
            to_trigger("j2", &subs, limited(1, FailurePolicy::ContinueIndependent)),
            ["b"]
        );
    }

    #[test]
    fn the_aggregated_error_lists_each_failed_subinstallation() {
        let t = chain();
        let mut b = sub_inst("b", &t[1], "j2", "j2", Some(Phase::Failed));
        b.status.as_mut().unwrap().last_error = Some(landscaper_store::model::Error {
            message: "mock failed".into(),
            ..Default::default()
        });
        let subs = vec![
            sub_inst("a", &t[0], "j2", "j2", Some(Phase::Succeeded)),
            b,
            sub_inst("c", &t[2], "j2", "j2", Some(Phase::Failed)),
            sub_inst("d", &t[3], "j1", "j1", Some(Phase::Failed)),
        ];
        assert_eq!(
            aggregated_failure("j2", &subs).to_string(),
            "2 dependents failed: b: mock failed; c: failed"
        );
    }

    #[test]
    fn the_policy_comes_from_the_annotation() {
        let mut i = Installation::default();
        assert_eq!(policy(&i), Policy::default());
        i.metadata.annotations = Some(
            [(
                landscaper_store::model::workflow::WORKFLOW_ANNOTATION.to_string(),
                "failurePolicy: ContinueIndependent\nmaxConcurrency: 2\n".to_string(),
            )]
            .into(),
        );
        assert_eq!(policy(&i), limited(2, FailurePolicy::ContinueIndependent));
    }

    #[test]
    fn record_keeps_transition_time_while_status_stays() {
        let g = gate("bp", &chain(), &imports(false), &BTreeMap::new()).unwrap();
        let names = vec!["a".to_string()];
        let mut list = vec![Condition {
            r#type: "Other".into(),
            status: "True".into(),
            ..Default::default()
        }];
        record(&mut list, &g, &names, "t1");
        record(&mut list, &g, &names, "t2");
        assert_eq!(list.len(), 2);
        let c = list
            .iter()
            .find(|c| c.r#type == "a/ReconcilePrecondition")
            .unwrap();
        assert_eq!(c.status, "False");
        assert_eq!(c.reason, "ConditionNotMet");
        assert_eq!(c.last_transition_time.as_deref(), Some("t1"));
        let g = gate("bp", &chain(), &imports(true), &BTreeMap::new()).unwrap();
        record(&mut list, &g, &names, "t3");
        let c = list
            .iter()
            .find(|c| c.r#type == "a/ReconcilePrecondition")
            .unwrap();
        assert_eq!(c.status, "True");
        assert_eq!(c.last_transition_time.as_deref(), Some("t3"));
        // A template without the condition any more: its entry goes.
        record(&mut list, &Gate::default(), &names, "t4");
        assert_eq!(list.len(), 1);
    }
}
