//! The Execution phase machine as a pure function: the Execution, the deploy items it manages
//! and (in `Completing`) their exports in; the new Execution and the writes of deploy items and
//! the export DataObject out. No store, no clock, no randomness: the caller passes the time and
//! a source of name suffixes.
//!
//! One call runs at most one phase handler (plus the phase entry `Init`/`InitDelete` in front of
//! it), so that every object is written at most once per step and all writes of a step can
//! commit in one transaction. A step that advances the phase writes the Execution, whose change
//! wakes the controller again; a step that waits for deploy items is woken by their changes.
//!
//! Landscaper: `pkg/landscaper/controllers/execution/controller.go`,
//! `pkg/landscaper/execution/{execution,classification,helper,reconcile,gc}.go`.

use std::collections::BTreeMap;

use landscaper_store::model::constants::{
    CACHE_HELM_CHARTS_ANNOTATION, DATA_OBJECT_CONTEXT_LABEL, DATA_OBJECT_HASH_ANNOTATION,
    DATA_OBJECT_INDEX_LABEL, DATA_OBJECT_JOB_ID_LABEL, DATA_OBJECT_KEY_LABEL,
    DATA_OBJECT_SOURCE_LABEL, DATA_OBJECT_SOURCE_TYPE_LABEL, DATA_OBJECT_TARGET_MAP_KEY_LABEL,
    DEFAULT_CONTEXT_NAME, DELETE_WITHOUT_UNINSTALL_ANNOTATION, DEPLOYER_TARGET_NAME_ANNOTATION,
    DEPLOYER_TYPE_ANNOTATION, ERR_FOR_INFO_ONLY, ERR_NO_RETRY, ERR_UNFINISHED,
    EXECUTION_DEPENDS_ON_ANNOTATION, EXECUTION_MANAGED_BY_LABEL, EXECUTION_MANAGED_NAME_LABEL,
    EXECUTION_PREFIX, FROM_SECRET_ANNOTATION, INTERRUPT_OPERATION, LANDSCAPER_FINALIZER,
    NO_TARGET_NAME_VALUE, OPERATION_ANNOTATION, OPERATION_INTERRUPT, OPERATION_RECONCILE,
    RECONCILE_TIMESTAMP_ANNOTATION,
};
use landscaper_store::model::names::{
    DNS1123_LABEL_MAX_LENGTH, GENERATE_NAME_SUFFIX_LENGTH, generate_data_object_name,
};
use landscaper_store::model::{
    DataObject, DeployItem, DeployItemCache, DeployItemSpec, DeployItemTemplate, DiNamePair,
    Error as StatusError, Execution, ExecutionStatus, Kind, ObjectMeta, ObjectReference,
    OwnerReference, Phase, Resource, TransitionTimes, to_value,
};
use landscaper_store::{ObjectKey, Write};
use serde_json::Value;

use crate::daemon::controllers::installation::dataflow::content_hash;
use crate::daemon::controllers::jobs::is_finished;
use crate::daemon::controllers::lserror::{LsError, updated_error};

#[path = "workflow.rs"]
pub mod workflow;

pub use self::workflow::{TargetState, WorkflowInputs};

/// Kubernetes' `generateName`: the prefix is cut to leave room for the 5-character suffix.
const MAX_GENERATE_NAME_PREFIX: usize = DNS1123_LABEL_MAX_LENGTH - GENERATE_NAME_SUFFIX_LENGTH;

/// Landscaper keeps at most this many entries in a deploy item's `status.lastErrors`.
const MAX_LAST_ERRORS: usize = 5;

/// What the machine reads besides the Execution itself.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The deploy items managed by the Execution (label
    /// `execution.landscaper.gardener.cloud/managed-by: <execution>` in its namespace).
    pub deploy_items: Vec<DeployItem>,
    /// The exports of deploy items by deploy item name, read from the Secret named in their
    /// `status.exportRef` (key `config`). Only consulted in `Completing`; an `Err` holds the
    /// reason why the export could not be read.
    pub exports: BTreeMap<String, Result<Value, String>>,
    /// The Execution's export DataObject, if it exists. Only consulted in `Completing`.
    pub export_object: Option<DataObject>,
    /// The inputs of the workflow conditions; read only when the Execution or a template
    /// carries the workflow block (issue 19).
    pub workflow: Option<WorkflowInputs>,
}

/// What the controller does after committing a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Nothing to do until something changes: the job is finished, or the Execution is gone.
    Idle,
    /// The phase advanced; the write of the Execution wakes the controller again.
    Continue,
    /// Waiting for deploy items; their changes wake the controller.
    Wait,
    /// A normal error, recorded in `status.lastError`: the phase is repeated after a backoff.
    Retry(LsError),
}

/// The outcome of one step.
#[derive(Debug, Clone)]
pub struct Step {
    /// The Execution to store (metadata and status); `None` when nothing changed.
    pub execution: Option<Execution>,
    /// Writes of other objects: deploy items and the export DataObject.
    pub writes: Vec<Write>,
    pub next: Next,
}

impl Step {
    /// All writes of the step, the Execution's last.
    pub fn into_writes(self) -> Vec<Write> {
        let mut writes = self.writes;
        if let Some(execution) = &self.execution {
            writes.push(Write::Update(to_value(execution)));
        }
        writes
    }
}

/// One reconcile step of `execution`. `new_suffix` yields random suffixes for the names of new
/// deploy items (Kubernetes' `generateName`).
pub fn step(
    execution: &Execution,
    view: &View,
    now: &str,
    new_suffix: &mut dyn FnMut() -> String,
) -> Step {
    let mut machine = Machine {
        exec: execution.clone(),
        view,
        now,
        writes: Vec::new(),
    };
    let next = machine.run(new_suffix);
    Step {
        execution: (machine.exec != *execution).then_some(machine.exec),
        writes: machine.writes,
        next,
    }
}

/// Whether no Installation controls the Execution (one defined in a manifest file, say):
/// nobody else passes it job IDs.
pub fn is_standalone(execution: &Execution) -> bool {
    !execution
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == Kind::Installation.as_str() && o.controller == Some(true))
}

/// A standalone Execution starts its own jobs, as a root installation does (in Landscaper the
/// owning Installation passes them; without one it would never run nor be deleted): a new job
/// when it has never run, when its spec changed since the last job (`observedGeneration`), on
/// the reconcile annotation (which is consumed), and once when it is deleted. A finished
/// deletion that failed needs the annotation again. `None` while a job runs or nothing is
/// requested.
pub fn start_standalone_job(
    execution: &Execution,
    new_job_id: impl FnOnce() -> String,
    now: &str,
) -> Option<Execution> {
    if !is_standalone(execution) {
        return None;
    }
    let status = execution.status.clone().unwrap_or_default();
    if !is_finished(status.job_id.as_deref(), status.job_id_finished.as_deref()) {
        return None;
    }
    let requested =
        execution.metadata.annotation(OPERATION_ANNOTATION) == Some(OPERATION_RECONCILE);
    let start = if execution.metadata.is_deleting() {
        requested
            || !matches!(
                status.phase,
                Some(Phase::InitDelete | Phase::Deleting | Phase::DeleteFailed)
            )
    } else {
        requested
            || status.job_id.as_deref().is_none_or(str::is_empty)
            || status.observed_generation != execution.metadata.generation()
    };
    if !start {
        return None;
    }
    let mut out = execution.clone();
    if requested {
        remove_annotation(&mut out.metadata, OPERATION_ANNOTATION);
    }
    let status = out.status.get_or_insert_with(Default::default);
    status.job_id = Some(new_job_id());
    status.transition_times = Some(TransitionTimes {
        trigger_time: Some(now.to_string()),
        ..TransitionTimes::default()
    });
    Some(out)
}

/// The name of the Execution's export DataObject: `GenerateDataObjectName("Exec.<name>", "")`.
pub fn export_data_object_name(execution_name: &str) -> String {
    generate_data_object_name(&format!("{EXECUTION_PREFIX}{execution_name}"), "")
}

struct Machine<'a> {
    /// The Execution as it will be written.
    exec: Execution,
    view: &'a View,
    now: &'a str,
    writes: Vec<Write>,
}

impl<'a> Machine<'a> {
    fn run(&mut self, new_suffix: &mut dyn FnMut() -> String) -> Next {
        if !self.exec.metadata.is_deleting() {
            self.exec.metadata.add_finalizer(LANDSCAPER_FINALIZER);
        }
        if self.exec.metadata.annotation(OPERATION_ANNOTATION) == Some(OPERATION_INTERRUPT) {
            self.interrupt();
            return Next::Idle;
        }
        let status = self.exec.status.clone().unwrap_or_default();
        if is_finished(status.job_id.as_deref(), status.job_id_finished.as_deref()) {
            if workflow::has_block(&self.exec) && !self.exec.metadata.is_deleting() {
                return self.recheck_inactive();
            }
            return Next::Idle;
        }
        let phase = match status.phase {
            Some(phase) if is_running_phase(&phase) => phase,
            _ => self.enter_job(),
        };
        match phase {
            Phase::Init => self.init(new_suffix),
            Phase::Progressing => self.progressing(new_suffix),
            Phase::Completing => self.completing(),
            Phase::InitDelete => self.init_delete(),
            Phase::Deleting => self.deleting(new_suffix),
            _ => Next::Idle,
        }
    }

    fn status(&mut self) -> &mut ExecutionStatus {
        self.exec.status.get_or_insert_with(Default::default)
    }

    fn job_id(&self) -> String {
        self.exec
            .status
            .as_ref()
            .and_then(|s| s.job_id.clone())
            .unwrap_or_default()
    }

    /// The start of a job: an empty or final phase becomes `Init` (`InitDelete` when the
    /// Execution is being deleted). Unknown phases are treated like an empty one.
    fn enter_job(&mut self) -> Phase {
        let phase = if self.exec.metadata.is_deleting() {
            Phase::InitDelete
        } else {
            Phase::Init
        };
        let generation = self.exec.metadata.generation();
        let now = self.now.to_string();
        let status = self.status();
        status.deploy_item_cache = None;
        status.phase = Some(phase.clone());
        status.phase_transition_time = Some(now.clone());
        status
            .transition_times
            .get_or_insert_with(Default::default)
            .init_time = Some(now);
        status.observed_generation = generation;
        phase
    }

    /// `setExecutionPhaseAndUpdate`: the new phase and lastError; a final phase finishes the
    /// job.
    fn set_phase(&mut self, phase: Phase, error: Option<&LsError>) {
        let now = self.now.to_string();
        let status = self.status();
        status.last_error = updated_error(status.last_error.as_ref(), error, &now);
        if status.phase.as_ref() != Some(&phase) {
            status.phase_transition_time = Some(now.clone());
        }
        if phase.is_final() {
            status.job_id_finished = status.job_id.clone();
            status
                .transition_times
                .get_or_insert_with(Default::default)
                .finished_time = Some(now);
        }
        status.phase = Some(phase);
    }

    // --- interrupt ----------------------------------------------------------------------------

    /// `handleInterruptOperation`: the annotation is removed and every deploy item that has not
    /// finished the Execution's job fails with it.
    fn interrupt(&mut self) {
        remove_annotation(&mut self.exec.metadata, OPERATION_ANNOTATION);
        let job_id = self.job_id();
        let view = self.view;
        for di in &view.deploy_items {
            if job_id_finished(di) == job_id {
                continue;
            }
            let mut di = di.clone();
            let phase = if di.metadata.is_deleting() {
                Phase::DeleteFailed
            } else {
                Phase::Failed
            };
            let status = di.status.get_or_insert_with(Default::default);
            status.job_id = non_empty(&job_id);
            status.job_id_finished = non_empty(&job_id);
            status
                .transition_times
                .get_or_insert_with(Default::default)
                .finished_time = Some(self.now.to_string());
            status.phase = Some(phase);
            let error = LsError::new(
                INTERRUPT_OPERATION,
                INTERRUPT_OPERATION,
                "operation was interrupted",
            );
            let error = updated_error(status.last_error.as_ref(), Some(&error), self.now);
            set_deploy_item_last_error(status, error);
            self.writes.push(Write::Update(to_value(&di)));
        }
    }

    // --- installation flow --------------------------------------------------------------------

    /// `Init`: deletes orphaned deploy items, creates or updates one deploy item per template,
    /// and remembers both in `status.deployItemCache`.
    fn init(&mut self, new_suffix: &mut dyn FnMut() -> String) -> Next {
        let templates = self.exec.spec.deploy_items().to_vec();
        let view = self.view;
        let matched = match_items(&templates, &view.deploy_items);
        for orphan in &matched.orphans {
            if !orphan.metadata.is_deleting() {
                self.writes.push(delete_write(*orphan, true));
            }
        }
        let mut active = Vec::new();
        // With the workflow block, items are created when the planner says so.
        let with_workflow = workflow::has_block(&self.exec);
        for (template, existing) in &matched.items {
            let (di, created) = match existing {
                Some(di) => ((*di).clone(), false),
                None if with_workflow => continue,
                None => (self.new_deploy_item(template, new_suffix), true),
            };
            let mut di = di;
            self.apply_template(&mut di, template);
            active.push(DiNamePair {
                spec_name: template.name.clone(),
                object_name: di.metadata.name().to_string(),
            });
            self.writes.push(if created {
                Write::Create(to_value(&di))
            } else {
                Write::Update(to_value(&di))
            });
        }
        let orphaned: Vec<String> = matched
            .orphans
            .iter()
            .map(|di| di.metadata.name().to_string())
            .collect();
        let now = self.now.to_string();
        let status = self.status();
        status.deploy_item_cache = Some(DeployItemCache {
            active_dis: (!active.is_empty()).then_some(active),
            orphaned_dis: (!orphaned.is_empty()).then_some(orphaned),
        });
        status
            .transition_times
            .get_or_insert_with(Default::default)
            .wait_time = Some(now);
        self.set_phase(Phase::Progressing, None);
        Next::Continue
    }

    fn new_deploy_item(
        &self,
        template: &DeployItemTemplate,
        new_suffix: &mut dyn FnMut() -> String,
    ) -> DeployItem {
        let mut prefix = format!("{}-{}-", self.exec.metadata.name(), template.name);
        if prefix.len() > MAX_GENERATE_NAME_PREFIX {
            let mut cut = MAX_GENERATE_NAME_PREFIX;
            while !prefix.is_char_boundary(cut) {
                cut -= 1;
            }
            prefix.truncate(cut);
        }
        let mut meta = ObjectMeta::namespaced(
            self.exec.metadata.namespace(),
            format!("{prefix}{}", new_suffix()),
        );
        meta.generate_name = Some(prefix);
        meta.add_finalizer(LANDSCAPER_FINALIZER);
        DeployItem::with_metadata(meta)
    }

    /// `ApplyDeployItemTemplate` plus what `updateDeployItem` sets around it.
    fn apply_template(&self, di: &mut DeployItem, template: &DeployItemTemplate) {
        let exec = &self.exec;
        let meta = &mut di.metadata;
        meta.set_annotation(RECONCILE_TIMESTAMP_ANNOTATION, self.now);
        for (k, v) in template.labels.iter().flatten() {
            meta.set_label(k, v);
        }
        meta.set_label(EXECUTION_MANAGED_NAME_LABEL, &template.name);
        meta.set_label(EXECUTION_MANAGED_BY_LABEL, exec.metadata.name());
        meta.set_annotation(
            EXECUTION_DEPENDS_ON_ANNOTATION,
            template
                .depends_on
                .iter()
                .flatten()
                .cloned()
                .collect::<Vec<_>>()
                .join(","),
        );
        meta.set_annotation(DEPLOYER_TYPE_ANNOTATION, &template.r#type);
        let target_name = template
            .target
            .as_ref()
            .map(|t| t.name.as_str())
            .filter(|n| !n.is_empty())
            .unwrap_or(NO_TARGET_NAME_VALUE);
        meta.set_annotation(DEPLOYER_TARGET_NAME_ANNOTATION, target_name);
        meta.remove_annotation(CACHE_HELM_CHARTS_ANNOTATION);
        if exec.metadata.annotation(CACHE_HELM_CHARTS_ANNOTATION) == Some("true") {
            meta.set_annotation(CACHE_HELM_CHARTS_ANNOTATION, "true");
        }
        // The config was rendered from Secret values: readers without the token see it redacted.
        meta.remove_annotation(FROM_SECRET_ANNOTATION);
        if exec.metadata.annotation(FROM_SECRET_ANNOTATION) == Some("true") {
            meta.set_annotation(FROM_SECRET_ANNOTATION, "true");
        }
        set_controller_reference(meta, exec);
        let context = exec
            .spec
            .context
            .clone()
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| DEFAULT_CONTEXT_NAME.to_string());
        di.spec = DeployItemSpec {
            r#type: template.r#type.clone(),
            target: template.target.clone(),
            context: Some(context),
            config: template.config.clone(),
            timeout: template.timeout.clone(),
            update_on_change_only: template.update_on_change_only.filter(|b| *b),
            on_delete: template.on_delete.clone(),
        };
        if let Some(status) = di.status.as_mut() {
            status.deployer_phase = None;
        }
    }

    /// `Progressing`: orphans are deleted first (all at once); then the deploy items are
    /// triggered in dependency order.
    fn progressing(&mut self, new_suffix: &mut dyn FnMut() -> String) -> Next {
        let job_id = self.job_id();
        let templates = self.exec.spec.deploy_items().to_vec();
        let view = self.view;
        let matched = match_items(&templates, &view.deploy_items);
        if !matched.orphans.is_empty() {
            let entries: Vec<DeleteEntry<'_>> = matched
                .orphans
                .iter()
                .map(|di| DeleteEntry {
                    name: None,
                    depends_on: &[],
                    deploy_item: Some(di),
                })
                .collect();
            let classes = classify_for_delete(&job_id, &entries);
            if classes.failed.is_empty() {
                self.start_deletion(&classes.runnable, &job_id);
            }
            return self.after_progressing(&classes);
        }
        if workflow::has_block(&self.exec) {
            return self.workflow_step(landscaper_workflow::plan::Mode::Reconcile, new_suffix);
        }
        let classes = match classify(&job_id, &matched.items) {
            Ok(c) => c,
            Err(e) => {
                self.set_phase(Phase::Progressing, Some(&e));
                return Next::Retry(e);
            }
        };
        if classes.failed.is_empty() {
            for di in &classes.runnable {
                self.writes
                    .push(Write::Update(to_value(&triggered(di, &job_id, self.now))));
            }
        }
        self.after_progressing(&classes)
    }

    fn after_progressing(&mut self, classes: &Classes<'_>) -> Next {
        const OP: &str = "handleReconcilePhase";
        const REASON: &str = "handlePhaseProgressing";
        if classes.running.is_empty() && !classes.failed.is_empty() {
            let e = LsError::new(OP, REASON, "has failed or missing deploy items")
                .with_code(ERR_FOR_INFO_ONLY);
            self.set_phase(Phase::Failed, Some(&e));
            Next::Idle
        } else if classes.running.is_empty()
            && classes.runnable.is_empty()
            && !classes.pending.is_empty()
        {
            let e =
                LsError::new(OP, REASON, "items could not be started").with_code(ERR_FOR_INFO_ONLY);
            self.set_phase(Phase::Failed, Some(&e));
            Next::Idle
        } else if !classes.all_succeeded() {
            let e = LsError::new(OP, REASON, "some running items")
                .with_code(ERR_UNFINISHED)
                .with_code(ERR_FOR_INFO_ONLY)
                .with_code(ERR_NO_RETRY);
            self.set_phase(Phase::Progressing, Some(&e));
            Next::Wait
        } else {
            self.set_phase(Phase::Completing, None);
            Next::Continue
        }
    }

    /// `Completing`: the exports of all deploy items go into one DataObject
    /// `{<template name>: <export or null>}`, referenced by `status.exportRef`.
    fn completing(&mut self) -> Next {
        if let Some(cache) = self.status().deploy_item_cache.as_mut() {
            cache.orphaned_dis = None;
        }
        let templates = self.exec.spec.deploy_items().to_vec();
        let view = self.view;
        let matched = match_items(&templates, &view.deploy_items);
        let mut values = serde_json::Map::new();
        for (template, di) in &matched.items {
            match self.export_of(*di) {
                Ok(value) => {
                    values.insert(template.name.clone(), value);
                }
                Err(message) => {
                    let e = LsError::new("CollectAndUpdateExports", "AddExports", message);
                    self.set_phase(Phase::Completing, Some(&e));
                    return Next::Retry(e);
                }
            }
        }
        let object = self.export_object(Value::Object(values));
        let reference = ObjectReference::new(object.metadata.namespace(), object.metadata.name());
        self.writes.push(if self.view.export_object.is_some() {
            Write::Update(to_value(&object))
        } else {
            Write::Create(to_value(&object))
        });
        self.status().export_reference = Some(reference);
        self.set_phase(Phase::Succeeded, None);
        Next::Idle
    }

    /// `addExports`: `null` without an exportRef, else the export, which must be a map.
    fn export_of(&self, di: Option<&DeployItem>) -> Result<Value, String> {
        let Some(di) = di else {
            return Ok(Value::Null);
        };
        if di
            .status
            .as_ref()
            .and_then(|s| s.export_reference.as_ref())
            .is_none()
        {
            return Ok(Value::Null);
        }
        match self.view.exports.get(di.metadata.name()) {
            None => Err(format!(
                "the export of deploy item {} has not been read",
                di.metadata.name()
            )),
            Some(Err(message)) => Err(message.clone()),
            Some(Ok(value @ (Value::Object(_) | Value::Null))) => Ok(value.clone()),
            Some(Ok(other)) => Err(format!(
                "error unmarshaling JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                go_json_type(other)
            )),
        }
    }

    /// `CreateOrUpdateExportReference`: the DataObject with context and source `Exec.<name>`
    /// (no sourceType, as in Landscaper), owned (not controlled) by the Execution, with the
    /// content hash annotation.
    fn export_object(&self, data: Value) -> DataObject {
        let exec = &self.exec;
        let name = export_data_object_name(exec.metadata.name());
        let mut object = self.view.export_object.clone().unwrap_or_else(|| {
            DataObject::with_metadata(ObjectMeta::namespaced(exec.metadata.namespace(), &name))
        });
        let scope = format!("{EXECUTION_PREFIX}{}", exec.metadata.name());
        let meta = &mut object.metadata;
        set_owner_reference(meta, exec, false);
        meta.set_label(DATA_OBJECT_CONTEXT_LABEL, &scope);
        meta.set_label(DATA_OBJECT_SOURCE_LABEL, &scope);
        for unset in [
            DATA_OBJECT_SOURCE_TYPE_LABEL,
            DATA_OBJECT_KEY_LABEL,
            DATA_OBJECT_INDEX_LABEL,
            DATA_OBJECT_TARGET_MAP_KEY_LABEL,
            DATA_OBJECT_JOB_ID_LABEL,
        ] {
            meta.remove_label(unset);
        }
        meta.set_annotation(DATA_OBJECT_HASH_ANNOTATION, content_hash(&data));
        meta.remove_annotation(FROM_SECRET_ANNOTATION);
        if exec.metadata.annotation(FROM_SECRET_ANNOTATION) == Some("true") {
            meta.set_annotation(FROM_SECRET_ANNOTATION, "true");
        }
        object.data = Some(data);
        object
    }

    // --- deletion flow ------------------------------------------------------------------------

    /// `InitDelete`: `delete-without-uninstall` is passed on to the deploy items, which are
    /// then deleted (they keep existing with a deletionTimestamp until their deployer is done).
    fn init_delete(&mut self) -> Next {
        let without_uninstall = self
            .exec
            .metadata
            .annotation(DELETE_WITHOUT_UNINSTALL_ANNOTATION)
            == Some("true");
        let view = self.view;
        // With the workflow block, the planner deletes the items in order.
        let with_workflow = workflow::has_block(&self.exec);
        for di in &view.deploy_items {
            let mut updated = false;
            if without_uninstall
                && di.metadata.annotation(DELETE_WITHOUT_UNINSTALL_ANNOTATION) != Some("true")
            {
                let mut di = di.clone();
                di.metadata
                    .set_annotation(DELETE_WITHOUT_UNINSTALL_ANNOTATION, "true");
                self.writes.push(Write::Update(to_value(&di)));
                updated = true;
            }
            if !di.metadata.is_deleting() && !with_workflow {
                self.writes.push(delete_write(di, !updated));
            }
        }
        self.set_phase(Phase::Deleting, None);
        Next::Continue
    }

    /// `Deleting`: deploy items are triggered in reverse dependency order; when all are gone
    /// the Execution's finalizer is removed.
    fn deleting(&mut self, new_suffix: &mut dyn FnMut() -> String) -> Next {
        const OP: &str = "handleReconcilePhase";
        const REASON: &str = "handlePhaseDeleting";
        if workflow::has_block(&self.exec) {
            return self.workflow_step(landscaper_workflow::plan::Mode::Cleanup, new_suffix);
        }
        let job_id = self.job_id();
        let templates = self.exec.spec.deploy_items().to_vec();
        let view = self.view;
        let matched = match_items(&templates, &view.deploy_items);
        let entries: Vec<DeleteEntry<'_>> = matched
            .items
            .iter()
            .map(|(template, di)| DeleteEntry {
                name: Some(&template.name),
                depends_on: template.depends_on.as_deref().unwrap_or_default(),
                deploy_item: *di,
            })
            .chain(matched.orphans.iter().map(|di| DeleteEntry {
                name: None,
                depends_on: &[],
                deploy_item: Some(di),
            }))
            .collect();
        let classes = classify_for_delete(&job_id, &entries);
        if classes.all_succeeded() {
            // The export DataObject goes with the Execution (owner garbage collection).
            self.exec.metadata.remove_finalizer(LANDSCAPER_FINALIZER);
            self.set_phase(Phase::Deleting, None);
            return Next::Idle;
        }
        if classes.failed.is_empty() {
            self.start_deletion(&classes.runnable, &job_id);
        }
        if classes.running.is_empty() && !classes.failed.is_empty() {
            let e = LsError::new(OP, REASON, "has failed items").with_code(ERR_FOR_INFO_ONLY);
            self.set_phase(Phase::DeleteFailed, Some(&e));
            Next::Idle
        } else if classes.running.is_empty()
            && classes.runnable.is_empty()
            && !classes.pending.is_empty()
        {
            let e = LsError::new(OP, REASON, "has pending items").with_code(ERR_FOR_INFO_ONLY);
            self.set_phase(Phase::DeleteFailed, Some(&e));
            Next::Idle
        } else {
            self.set_phase(Phase::Deleting, None);
            Next::Wait
        }
    }

    /// Starts the deletion of deploy items: those with `delete-without-uninstall: "true"` lose
    /// their finalizer (and vanish), the others are triggered. An item without a
    /// deletionTimestamp is deleted first; it is triggered in a later step.
    fn start_deletion(&mut self, items: &[&DeployItem], job_id: &str) {
        for di in items {
            if !di.metadata.is_deleting() {
                self.writes.push(delete_write(*di, true));
            } else if di.metadata.annotation(DELETE_WITHOUT_UNINSTALL_ANNOTATION) == Some("true") {
                let mut di = (*di).clone();
                if di.metadata.remove_finalizer(LANDSCAPER_FINALIZER) {
                    self.writes.push(Write::Update(to_value(&di)));
                }
            } else {
                self.writes
                    .push(Write::Update(to_value(&triggered(di, job_id, self.now))));
            }
        }
    }
}

/// Whether `phase` is one in which an Execution works on its current job.
fn is_running_phase(phase: &Phase) -> bool {
    matches!(
        phase,
        Phase::Init | Phase::Progressing | Phase::Completing | Phase::InitDelete | Phase::Deleting
    )
}

// --- deploy items -----------------------------------------------------------------------------

/// The templates with their deploy items (by label `execution.landscaper.gardener.cloud/name`),
/// and the deploy items that no template claims.
struct Matched<'a> {
    items: Vec<(&'a DeployItemTemplate, Option<&'a DeployItem>)>,
    orphans: Vec<&'a DeployItem>,
}

fn match_items<'a>(templates: &'a [DeployItemTemplate], items: &'a [DeployItem]) -> Matched<'a> {
    let mut claimed = vec![false; items.len()];
    let matched = templates
        .iter()
        .map(|template| {
            let index = items.iter().enumerate().position(|(i, di)| {
                !claimed[i]
                    && di.metadata.label(EXECUTION_MANAGED_NAME_LABEL)
                        == Some(template.name.as_str())
            });
            if let Some(i) = index {
                claimed[i] = true;
            }
            (template, index.map(|i| &items[i]))
        })
        .collect();
    let orphans = items
        .iter()
        .zip(&claimed)
        .filter(|(_, claimed)| !**claimed)
        .map(|(di, _)| di)
        .collect();
    Matched {
        items: matched,
        orphans,
    }
}

/// Landscaper's `DeployItemClassification`. Every item is in exactly one class.
#[derive(Debug, Default)]
struct Classes<'a> {
    /// Triggered for this job, not finished.
    running: Vec<&'a str>,
    /// Triggered for this job, finished, succeeded (or, when deleting: gone).
    succeeded: Vec<&'a str>,
    /// Triggered for this job, finished, not succeeded; or missing (installation flow).
    failed: Vec<&'a str>,
    /// Not yet triggered, nothing to wait for.
    runnable: Vec<&'a DeployItem>,
    /// Not yet triggered, waiting for predecessors (successors when deleting).
    pending: Vec<&'a str>,
}

impl Classes<'_> {
    fn all_succeeded(&self) -> bool {
        self.running.is_empty()
            && self.failed.is_empty()
            && self.runnable.is_empty()
            && self.pending.is_empty()
    }
}

fn job_id(di: &DeployItem) -> &str {
    di.status
        .as_ref()
        .and_then(|s| s.job_id.as_deref())
        .unwrap_or_default()
}

fn job_id_finished(di: &DeployItem) -> &str {
    di.status
        .as_ref()
        .and_then(|s| s.job_id_finished.as_deref())
        .unwrap_or_default()
}

fn phase(di: &DeployItem) -> Option<&Phase> {
    di.status.as_ref().and_then(|s| s.phase.as_ref())
}

/// `newDeployItemClassification`: the installation flow. A dependency only has to have
/// finished the job; that it failed stops the triggering through the failed class.
fn classify<'a>(
    job: &str,
    items: &[(&'a DeployItemTemplate, Option<&'a DeployItem>)],
) -> Result<Classes<'a>, LsError> {
    let mut c = Classes::default();
    for (template, di) in items {
        let name = template.name.as_str();
        let Some(di) = di else {
            // Deleted behind Landscaper's back.
            c.failed.push(name);
            continue;
        };
        if job_id(di) == job {
            if job_id_finished(di) != job {
                c.running.push(name);
            } else if phase(di) == Some(&Phase::Succeeded) {
                c.succeeded.push(name);
            } else {
                c.failed.push(name);
            }
            continue;
        }
        let mut runnable = true;
        for dependency in template.depends_on.iter().flatten() {
            let Some((_, dependency_item)) = items.iter().find(|(t, _)| &t.name == dependency)
            else {
                return Err(LsError::new(
                    "IsRunnable",
                    "DependentDeployItemNotFound",
                    format!("dependent deployitem {dependency} of deployitem {name} not found"),
                ));
            };
            if dependency_item.is_none_or(|d| job_id_finished(d) != job) {
                runnable = false;
            }
        }
        if runnable {
            c.runnable.push(di);
        } else {
            c.pending.push(name);
        }
    }
    Ok(c)
}

/// A deploy item in the deletion flow; orphans have no name and no dependencies.
struct DeleteEntry<'a> {
    name: Option<&'a str>,
    depends_on: &'a [String],
    deploy_item: Option<&'a DeployItem>,
}

/// `newDeployItemClassificationForDelete`: an item may go once no remaining item depends on
/// it. A finished item that has not failed is still on its way out (its finalizer is removed
/// with the final update) and counts as running.
fn classify_for_delete<'a>(job: &str, entries: &[DeleteEntry<'a>]) -> Classes<'a> {
    let mut c = Classes::default();
    for entry in entries {
        let label = entry.name.unwrap_or_default();
        let Some(di) = entry.deploy_item else {
            c.succeeded.push(label);
            continue;
        };
        let label = entry.name.unwrap_or(di.metadata.name());
        if job_id(di) == job {
            if job_id_finished(di) != job || !phase(di).is_some_and(Phase::is_failed) {
                c.running.push(label);
            } else {
                c.failed.push(label);
            }
            continue;
        }
        let needed = entry.name.is_some_and(|name| {
            entries.iter().any(|other| {
                other.deploy_item.is_some() && other.depends_on.iter().any(|d| d == name)
            })
        });
        if needed {
            c.pending.push(label);
        } else {
            c.runnable.push(di);
        }
    }
    c
}

/// The deploy item with the Execution's job ID: a deployer picks it up.
fn triggered(di: &DeployItem, job: &str, now: &str) -> DeployItem {
    let mut di = di.clone();
    let status = di.status.get_or_insert_with(Default::default);
    status.job_id = non_empty(job);
    status.transition_times = Some(TransitionTimes {
        trigger_time: Some(now.to_string()),
        ..TransitionTimes::default()
    });
    status.job_id_generation_time = Some(now.to_string());
    di
}

/// `lsutil.SetLastError`: lastError, firstError once, and the last five errors.
fn set_deploy_item_last_error(
    status: &mut landscaper_store::model::DeployItemStatus,
    error: Option<StatusError>,
) {
    status.last_error = error.clone();
    if status.first_error.is_none() {
        status.first_error = error.clone();
    }
    if let Some(error) = error {
        let errors = status.last_errors.get_or_insert_with(Vec::new);
        errors.push(error);
        if errors.len() > MAX_LAST_ERRORS {
            errors.remove(0);
        }
    }
}

// --- metadata ---------------------------------------------------------------------------------

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// Removes an annotation; an emptied map is dropped (Go's `omitempty`).
fn remove_annotation(meta: &mut ObjectMeta, key: &str) {
    meta.remove_annotation(key);
    if meta.annotations.as_ref().is_some_and(|a| a.is_empty()) {
        meta.annotations = None;
    }
}

fn owner_reference(exec: &Execution, controller: bool) -> OwnerReference {
    OwnerReference {
        api_version: Kind::Execution.api_version().to_string(),
        kind: Kind::Execution.as_str().to_string(),
        name: exec.metadata.name().to_string(),
        uid: exec.metadata.uid.clone().unwrap_or_default(),
        controller: controller.then_some(true),
        block_owner_deletion: controller.then_some(true),
    }
}

/// `controllerutil.SetControllerReference`: the Execution becomes the controller. An
/// Execution controller reference with another uid (an earlier Execution of the same name) is
/// replaced rather than refused.
fn set_controller_reference(meta: &mut ObjectMeta, exec: &Execution) {
    let reference = owner_reference(exec, true);
    let refs = meta.owner_references.get_or_insert_with(Vec::new);
    refs.retain(|r| {
        !(r.kind == reference.kind && (r.name == reference.name || r.controller == Some(true)))
    });
    refs.push(reference);
}

/// `controllerutil.SetOwnerReference`: adds or refreshes a plain owner reference.
fn set_owner_reference(meta: &mut ObjectMeta, exec: &Execution, controller: bool) {
    let reference = owner_reference(exec, controller);
    let refs = meta.owner_references.get_or_insert_with(Vec::new);
    match refs
        .iter_mut()
        .find(|r| r.kind == reference.kind && r.name == reference.name)
    {
        Some(existing) => {
            existing.api_version = reference.api_version;
            existing.uid = reference.uid;
        }
        None => refs.push(reference),
    }
}

/// A Delete, with the resourceVersion as precondition when `guarded`.
fn delete_write<T: Resource>(object: &T, guarded: bool) -> Write {
    let meta = object.metadata();
    Write::Delete {
        key: ObjectKey::new(T::KIND, meta.namespace(), meta.name()),
        resource_version: if guarded {
            meta.resource_version.clone()
        } else {
            None
        },
    }
}

/// The Go type name `encoding/json` reports for a JSON value.
fn go_json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
