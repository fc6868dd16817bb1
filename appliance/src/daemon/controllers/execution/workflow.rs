//! The Execution machine's workflow path (issue 19): used when the Execution (annotation
//! `landscaper-appliance.io/workflow`) or one of its deploy item templates (field `appliance`)
//! carries the workflow block. Without one, the machine's Landscaper path runs unchanged.
//!
//! Each step the conditions are compiled (an invalid expression fails the job with an error
//! naming the Execution, the deploy item and the field), evaluated over the inputs the runtime
//! gathered ([`WorkflowInputs`]: imports, each item's status and exports, the objects and CRDs
//! read from its target), and the pure planner of `landscaper-workflow` decides which items to
//! create, trigger or delete. The results are recorded in the items' and the Execution's
//! `status.conditions`; the step waits (and is requeued) while anything is in progress or waits
//! for a condition, so that, say, an item whose CRD appears on the target is activated.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use landscaper_store::Write;
use landscaper_store::model::constants::{
    DELETE_WITHOUT_UNINSTALL_ANNOTATION, LANDSCAPER_FINALIZER,
};
use landscaper_store::model::{
    DeployItem, DeployItemTemplate, DiNamePair, Execution, Phase, WorkflowExtension, to_value,
};
use landscaper_workflow::conditions::{
    ConditionKind, ConditionResult, Conditions, Variables, compile_block, record_condition,
};
use landscaper_workflow::plan::{
    self, ConditionResults, Decision, Dependent, Mode, Outcome, Policy, State,
};
use serde_json::{Value, json};

use super::{Machine, Next, delete_write, job_id, job_id_finished, match_items, phase, triggered};
use crate::daemon::controllers::lserror::LsError;

/// What the runtime reads for the workflow conditions (only when a block is present).
#[derive(Debug, Clone, Default)]
pub struct WorkflowInputs {
    /// `imports` of the expressions: the import values of the Installation owning the
    /// Execution, read as that Installation reads them for its own subinstallation conditions
    /// (`installation::dataflow::read_import_values`); `{}` for a standalone Execution.
    pub imports: Value,
    /// Per deploy item template name: what was read from its target, or why it could not be.
    pub targets: BTreeMap<String, Result<TargetState, String>>,
    /// How long a reconciled item may wait for its ready postcondition (the progressing
    /// timeout); `None`: unbounded.
    pub ready_timeout: Option<Duration>,
    /// The Installation controlling the Execution (read after a finished job, so that an item
    /// whose activation condition came true can ask it for a new job).
    pub owner: Option<landscaper_store::model::Installation>,
}

/// What the runtime read from a deploy item's target cluster.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TargetState {
    /// `objects` of the expressions (`{<kind>: {<namespace>: {<name>: object}}}`): the objects
    /// the item's manifests name, as they are on the target (absent ones left out).
    pub objects: Value,
    /// The names (`<plural>.<group>`) of the CustomResourceDefinitions on the target.
    pub crds: BTreeSet<String>,
}

/// The Installation controlling an Execution, by its controller owner reference.
pub fn owner_name(exec: &Execution) -> Option<&str> {
    exec.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| {
            o.kind == landscaper_store::model::Kind::Installation.as_str()
                && o.controller == Some(true)
        })
        .map(|o| o.name.as_str())
}

/// The block of the Execution (annotation) and of its templates; `None` when neither has one,
/// so the Landscaper path runs.
pub fn has_block(exec: &Execution) -> bool {
    exec.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(landscaper_store::model::workflow::WORKFLOW_ANNOTATION))
        || exec
            .spec
            .deploy_items()
            .iter()
            .any(|t| t.appliance.as_ref().is_some_and(|a| !a.is_empty()))
}

/// The field naming a template's block in errors and condition types.
fn block_field(template: &DeployItemTemplate) -> String {
    format!("deployItems[{}].appliance", template.name)
}

/// The Execution's policies and each template's compiled conditions, or the first error.
pub fn compile(exec: &Execution) -> Result<(Policy, Vec<Conditions>), String> {
    let object = format!(
        "Execution {}/{}",
        exec.metadata.namespace(),
        exec.metadata.name()
    );
    let own = WorkflowExtension::from_annotations(&exec.metadata)
        .map_err(|e| format!("{object}: {}: {}", e.field, e.message))?;
    let field = format!(
        "metadata.annotations[{}]",
        landscaper_store::model::workflow::WORKFLOW_ANNOTATION
    );
    compile_block(
        &object,
        &field,
        landscaper_store::model::ExtensionPlace::Execution,
        own.as_ref(),
    )
    .map_err(|e| e.to_string())?;
    let policy = Policy {
        failure_policy: own.as_ref().map(|o| o.failure_policy()).unwrap_or_default(),
        max_concurrency: own.as_ref().and_then(|o| o.max_concurrency),
    };
    let conditions = exec
        .spec
        .deploy_items()
        .iter()
        .map(|t| {
            compile_block(
                &object,
                &block_field(t),
                landscaper_store::model::ExtensionPlace::DeployItemTemplate,
                t.appliance.as_ref(),
            )
            .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((policy, conditions))
}

/// The admission check of an Execution's workflow block (manifest files and API writes):
/// every condition must compile. `Err((field, message))`, the message naming the Execution,
/// the deploy item and the field.
pub fn check_admission(exec: &Execution) -> Result<(), (String, String)> {
    if !has_block(exec) {
        return Ok(());
    }
    compile(exec).map(|_| ()).map_err(|message| {
        let field = if message.contains("metadata.annotations") {
            "metadata.annotations"
        } else {
            "spec.deployItems"
        };
        (field.to_string(), message)
    })
}

/// The planner's state of a deploy item in the job `job`.
pub fn state_of(di: Option<&DeployItem>, job: &str) -> State {
    let Some(di) = di else {
        return State::Absent;
    };
    let triggered = job_id(di) == job && !job.is_empty();
    let finished = triggered && job_id_finished(di) == job;
    let error = || {
        di.status
            .as_ref()
            .and_then(|s| s.last_error.as_ref())
            .map(|e| e.message.clone())
            .unwrap_or_else(|| {
                format!("phase {}", phase(di).map(Phase::as_str).unwrap_or_default())
            })
    };
    if di.metadata.is_deleting() {
        return match (triggered, finished) {
            (false, _) => State::Existing,
            (true, false) => State::Deleting,
            (true, true) if phase(di).is_some_and(Phase::is_failed) => State::DeleteFailed(error()),
            (true, true) => State::Deleting,
        };
    }
    match (triggered, finished) {
        (false, _) => State::Existing,
        (true, false) => State::Reconciling,
        (true, true) if phase(di) == Some(&Phase::Succeeded) => State::Reconciled,
        (true, true) => State::ReconcileFailed(error()),
    }
}

/// `self` of an item's expressions: `{status, exports}`.
fn self_value(di: Option<&DeployItem>, exports: Option<&Result<Value, String>>) -> Value {
    json!({
        "status": di.and_then(|d| d.status.as_ref()).and_then(|s| serde_json::to_value(s).ok()).unwrap_or(Value::Null),
        "exports": exports.and_then(|e| e.as_ref().ok()).cloned().unwrap_or(Value::Null),
    })
}

/// Evaluates an item's conditions.
pub fn evaluate(
    conditions: &Conditions,
    imports: &Value,
    this: &Value,
    target: Option<&Result<TargetState, String>>,
) -> ConditionResults {
    let empty = TargetState {
        objects: json!({}),
        crds: BTreeSet::new(),
    };
    let state = match target {
        Some(Ok(t)) => t,
        _ => &empty,
    };
    let vars = Variables {
        imports,
        this,
        objects: &state.objects,
    };
    ConditionResults {
        reconcile_precondition: conditions
            .reconcile_precondition
            .as_ref()
            .map(|e| e.evaluate(ConditionKind::ReconcilePrecondition, vars)),
        ready_postcondition: conditions
            .ready_postcondition
            .as_ref()
            .map(|e| e.evaluate(ConditionKind::ReadyPostcondition, vars)),
        delete_postcondition: conditions
            .delete_postcondition
            .as_ref()
            .map(|e| e.evaluate(ConditionKind::DeletePostcondition, vars)),
        activation_condition: conditions.activation_condition.as_ref().map(|a| match (
            a,
            target,
        ) {
            (landscaper_workflow::conditions::Activation::CrdPresent(name), Some(Err(e))) => {
                ConditionResult::Error {
                    message: format!(
                        "activationCondition crdPresent {name}: the target could not be read: {e}"
                    ),
                }
            }
            _ => a.evaluate(vars, &state.crds),
        }),
    }
}

/// The results as `(kind, result)` pairs, in the order of [`ConditionKind::ALL`].
fn results(c: &ConditionResults) -> Vec<(ConditionKind, &ConditionResult)> {
    [
        (
            ConditionKind::ReconcilePrecondition,
            &c.reconcile_precondition,
        ),
        (ConditionKind::ReadyPostcondition, &c.ready_postcondition),
        (ConditionKind::DeletePostcondition, &c.delete_postcondition),
        (ConditionKind::ActivationCondition, &c.activation_condition),
    ]
    .into_iter()
    .filter_map(|(k, r)| r.as_ref().map(|r| (k, r)))
    .collect()
}

/// Whether a reconciled item has waited longer than `timeout` for its ready postcondition.
fn ready_timed_out(di: &DeployItem, now: &str, timeout: Option<Duration>) -> bool {
    let Some(timeout) = timeout else {
        return false;
    };
    let since = di
        .status
        .as_ref()
        .and_then(|s| s.transition_times.as_ref())
        .and_then(|t| t.finished_time.as_deref())
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let now = now.parse::<jiff::Timestamp>().ok();
    match (since, now) {
        (Some(since), Some(now)) => now
            .duration_since(since)
            .try_into()
            .is_ok_and(|d: Duration| d >= timeout),
        _ => false,
    }
}

impl Machine<'_> {
    /// After a finished job: an item left inactive by its activation condition is looked at
    /// again (the runtime requeues), and once its condition holds the Execution asks for a new
    /// job with the reconcile annotation: on itself when standalone, else on the Installation
    /// controlling it (which starts its jobs). `Idle` when no item is inactive.
    pub(super) fn recheck_inactive(&mut self) -> Next {
        let Ok((_, compiled)) = compile(&self.exec) else {
            return Next::Idle;
        };
        let templates = self.exec.spec.deploy_items().to_vec();
        let view = self.view;
        let matched = match_items(&templates, &view.deploy_items);
        let inputs = view.workflow.clone().unwrap_or_default();
        let recorded = self
            .exec
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let mut inactive = false;
        let mut activated = Vec::new();
        for ((template, di), conditions) in matched.items.iter().zip(&compiled) {
            let Some(activation) = &conditions.activation_condition else {
                continue;
            };
            let exec_type = format!(
                "{}/{}",
                template.name,
                ConditionKind::ActivationCondition.condition_type()
            );
            let was_inactive = recorded
                .iter()
                .any(|c| c.r#type == exec_type && c.status == "False");
            if !was_inactive {
                continue;
            }
            inactive = true;
            let this = self_value(*di, None);
            let imports = if inputs.imports.is_null() {
                json!({})
            } else {
                inputs.imports.clone()
            };
            let empty = TargetState::default();
            let state = match inputs.targets.get(&template.name) {
                Some(Ok(t)) => t,
                _ => &empty,
            };
            let objects = if state.objects.is_null() {
                json!({})
            } else {
                state.objects.clone()
            };
            let vars = Variables {
                imports: &imports,
                this: &this,
                objects: &objects,
            };
            if activation.evaluate(vars, &state.crds).is_met() {
                activated.push(template.name.clone());
            }
        }
        use landscaper_store::model::constants::{OPERATION_ANNOTATION, OPERATION_RECONCILE};
        if !activated.is_empty() {
            if super::is_standalone(&self.exec) {
                self.exec
                    .metadata
                    .set_annotation(OPERATION_ANNOTATION, OPERATION_RECONCILE);
                return Next::Continue;
            }
            // The owning Installation starts the Execution's jobs: it is asked for one, as a
            // user would with the reconcile annotation.
            if let Some(owner) = &inputs.owner
                && owner.metadata.annotation(OPERATION_ANNOTATION) != Some(OPERATION_RECONCILE)
            {
                let mut owner = owner.clone();
                owner
                    .metadata
                    .set_annotation(OPERATION_ANNOTATION, OPERATION_RECONCILE);
                self.writes.push(Write::Update(to_value(&owner)));
            }
            return Next::Wait;
        }
        if inactive { Next::Wait } else { Next::Idle }
    }

    /// The workflow path of `Progressing` (`mode` Reconcile) and `Deleting` (`mode` Cleanup).
    pub(super) fn workflow_step(
        &mut self,
        mode: Mode,
        new_suffix: &mut dyn FnMut() -> String,
    ) -> Next {
        const OP: &str = "handleReconcilePhase";
        let (reason, running, failed) = match mode {
            Mode::Reconcile => ("handlePhaseProgressing", Phase::Progressing, Phase::Failed),
            Mode::Cleanup => ("handlePhaseDeleting", Phase::Deleting, Phase::DeleteFailed),
        };
        let (policy, compiled) = match compile(&self.exec) {
            Ok(c) => c,
            Err(message) => {
                let e = LsError::new(OP, "CompileWorkflowConditions", message);
                self.set_phase(failed, Some(&e));
                return Next::Idle;
            }
        };
        let job = self.job_id();
        let templates = self.exec.spec.deploy_items().to_vec();
        let view = self.view;
        let matched = match_items(&templates, &view.deploy_items);
        let inputs = view.workflow.clone().unwrap_or_default();
        let imports = if inputs.imports.is_null() {
            json!({})
        } else {
            inputs.imports.clone()
        };

        // The planner's view of each item.
        let mut dependents = Vec::with_capacity(templates.len());
        for ((template, di), conditions) in matched.items.iter().zip(&compiled) {
            let this = self_value(*di, di.and_then(|d| view.exports.get(d.metadata.name())));
            let results = evaluate(
                conditions,
                &imports,
                &this,
                inputs.targets.get(&template.name),
            );
            let mut state = state_of(*di, &job);
            if state == State::Reconciled
                && let Some(di) = di
                && results
                    .ready_postcondition
                    .as_ref()
                    .is_some_and(|r| !r.is_met())
                && ready_timed_out(di, self.now, inputs.ready_timeout)
            {
                state = State::ReconcileFailed(format!(
                    "readyPostcondition not met within the progressing timeout of {}s",
                    inputs.ready_timeout.unwrap_or_default().as_secs()
                ));
            }
            dependents.push(Dependent {
                name: template.name.clone(),
                depends_on: template.depends_on.clone().unwrap_or_default(),
                state,
                conditions: results,
            });
        }
        let plan = match plan::plan(&dependents, mode, policy) {
            Ok(p) => p,
            Err(e) => {
                let e = LsError::new(OP, "PlanWorkflow", e.to_string());
                self.set_phase(failed, Some(&e));
                return Next::Idle;
            }
        };

        // Conditions into the items' and the Execution's status.
        let mut updated: BTreeMap<String, DeployItem> = BTreeMap::new();
        let mut deleted: BTreeSet<String> = BTreeSet::new();
        let mut exec_conditions = self
            .exec
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let mut exec_changed = false;
        for ((template, di), dependent) in matched.items.iter().zip(&dependents) {
            for (kind, result) in results(&dependent.conditions) {
                let exec_type = format!("{}/{}", template.name, kind.condition_type());
                exec_changed |=
                    record_condition(&mut exec_conditions, &exec_type, kind, result, self.now);
                if let Some(di) = di {
                    let item = updated
                        .entry(di.metadata.name().to_string())
                        .or_insert_with(|| (*di).clone());
                    let status = item.status.get_or_insert_with(Default::default);
                    let list = status.conditions.get_or_insert_with(Vec::new);
                    record_condition(list, kind.condition_type(), kind, result, self.now);
                }
            }
        }
        if exec_changed {
            self.status().conditions = Some(exec_conditions);
        }

        // The decisions.
        let mut created = Vec::new();
        for ((template, di), (_, decision)) in matched.items.iter().zip(&plan.decisions) {
            match (decision, di) {
                (Decision::Reconcile, None) => {
                    let mut item = self.new_deploy_item(template, new_suffix);
                    self.apply_template(&mut item, template);
                    created.push(DiNamePair {
                        spec_name: template.name.clone(),
                        object_name: item.metadata.name().to_string(),
                    });
                    self.writes.push(Write::Create(to_value(&item)));
                }
                (Decision::Reconcile, Some(di)) => {
                    let item = updated
                        .entry(di.metadata.name().to_string())
                        .or_insert_with(|| (*di).clone());
                    *item = triggered(item, &job, self.now);
                }
                (Decision::Delete, Some(di)) => {
                    if !di.metadata.is_deleting() {
                        // Deleted now, triggered in a later step.
                        self.writes.push(delete_write(*di, false));
                        deleted.insert(di.metadata.name().to_string());
                    } else {
                        let item = updated
                            .entry(di.metadata.name().to_string())
                            .or_insert_with(|| (*di).clone());
                        if item
                            .metadata
                            .annotation(DELETE_WITHOUT_UNINSTALL_ANNOTATION)
                            == Some("true")
                        {
                            item.metadata.remove_finalizer(LANDSCAPER_FINALIZER);
                        } else {
                            *item = triggered(item, &job, self.now);
                        }
                    }
                }
                _ => {}
            }
        }
        for (name, item) in updated {
            let unchanged = view
                .deploy_items
                .iter()
                .any(|d| d.metadata.name() == name && *d == item);
            if !deleted.contains(&name) && !unchanged {
                self.writes.push(Write::Update(to_value(&item)));
            }
        }
        if !created.is_empty() {
            let cache = self
                .status()
                .deploy_item_cache
                .get_or_insert_with(Default::default);
            cache
                .active_dis
                .get_or_insert_with(Vec::new)
                .extend(created);
        }

        match plan.outcome {
            Outcome::Done if mode == Mode::Cleanup => {
                // Inactive items are left alone by the workflow, but they cannot outlive the
                // Execution: they go as in Landscaper, once everything else is gone.
                let leftovers: Vec<&DeployItem> = matched
                    .items
                    .iter()
                    .filter_map(|(_, di)| *di)
                    .chain(matched.orphans.iter().copied())
                    .collect();
                if leftovers.is_empty() {
                    self.exec.metadata.remove_finalizer(LANDSCAPER_FINALIZER);
                    self.set_phase(Phase::Deleting, None);
                    return Next::Idle;
                }
                if let Some(failed_item) = leftovers.iter().find(|di| {
                    job_id(di) == job
                        && job_id_finished(di) == job
                        && phase(di).is_some_and(Phase::is_failed)
                }) {
                    let e = LsError::new(
                        OP,
                        reason,
                        format!(
                            "deploy item {} failed to delete",
                            failed_item.metadata.name()
                        ),
                    );
                    self.set_phase(failed, Some(&e));
                    return Next::Idle;
                }
                let start: Vec<&DeployItem> = leftovers
                    .into_iter()
                    .filter(|di| job_id(di) != job)
                    .collect();
                self.start_deletion(&start, &job);
                self.set_phase(running, None);
                Next::Wait
            }
            Outcome::Done => {
                self.set_phase(Phase::Completing, None);
                Next::Continue
            }
            Outcome::Failed(aggregated) => {
                let e = LsError::new(OP, reason, aggregated.to_string());
                self.set_phase(failed, Some(&e));
                Next::Idle
            }
            Outcome::InProgress => {
                let waiting: Vec<String> = plan
                    .decisions
                    .iter()
                    .filter_map(|(name, d)| match d {
                        Decision::Waiting(why) => Some(format!("{name}: {why}")),
                        _ => None,
                    })
                    .collect();
                let message = if waiting.is_empty() {
                    "some running items".to_string()
                } else {
                    format!("some running items; {}", waiting.join("; "))
                };
                let e = LsError::new(OP, reason, message)
                    .with_code(landscaper_store::model::constants::ERR_UNFINISHED)
                    .with_code(landscaper_store::model::constants::ERR_FOR_INFO_ONLY)
                    .with_code(landscaper_store::model::constants::ERR_NO_RETRY);
                self.set_phase(running, Some(&e));
                Next::Wait
            }
        }
    }
}

#[cfg(test)]
#[path = "workflow_tests.rs"]
mod tests;
