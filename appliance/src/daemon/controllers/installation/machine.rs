//! The installation phase machine as a pure function: the installation, a [`View`] of
//! everything the step reads (children, siblings, the Init and Completing inputs with the
//! rendered templates) and the time in; the writes of one transaction and what comes next out
//! (Landscaper's `reconcileInstallation`, `checks.go`, `handleReconcilePhase` and the phase
//! handlers). No store, no clock, no randomness: the loader in [`super`] reads what [`plan`]
//! asks for, the runtime commits the writes once.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use landscaper_store::model::constants::*;
use landscaper_store::model::{
    DependentToTrigger, Execution, FailurePolicy, Installation, InstallationStatus,
    ObjectReference, Phase, SubInstCache, SubNamePair, TransitionTimes, from_value,
};
use landscaper_store::{Kind, ObjectKey, Write, object};
use landscaper_templating::blueprint::{Bindings, Blueprint};
use serde_json::{Map, Value, json};

use super::auto;
use super::dataflow::{
    IMPORT_VALIDATION_FAILED, RENDER_IMPORT_EXECUTIONS, RenderedSubobjects, duplicate_exports,
    execution_object, export_objects, import_objects, imported_refs, imports_hash, is_successor,
    name, namespace, own_scope, parent_name, predecessor_cycle, subinstallation_object,
};
use super::workflow;
use crate::daemon::controllers::jobs::{
    add_finalizer, is_deletion_phase, is_final, is_finished, remove_finalizer, set_annotation,
    with_status,
};
use crate::daemon::controllers::lserror::{LsError, PhaseError, updated_error};
use landscaper_workflow::conditions::{ConditionKind, set_condition};

/// What to do before (or instead of) running the phases, in Landscaper's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreAction {
    /// `reconcile-if-changed`: a finished root whose spec changed gets the reconcile annotation.
    AddReconcileAnnotation,
    AddFinalizer,
    /// Successors recorded when the last job finished get their trigger.
    TriggerDependents(Vec<String>),
    /// Remove the interrupt annotation and pass it to the children.
    Interrupt,
    /// A reconcile annotation on a non-root has no effect and is removed.
    RemoveReconcileAnnotation,
    /// A new job: a fresh jobID, the reconcile annotation consumed.
    StartJob,
    /// The current job is running: continue its phases.
    RunPhases,
    /// Finished and nothing requested.
    Idle,
}

/// The value of annotation `key`.
pub fn annotation<'a>(inst: &'a Installation, key: &str) -> Option<&'a str> {
    inst.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

pub fn has_operation(inst: &Installation, op: &str) -> bool {
    annotation(inst, OPERATION_ANNOTATION) == Some(op)
}

fn job_ids(inst: &Installation) -> (Option<&str>, Option<&str>) {
    let s = inst.status.as_ref();
    (
        s.and_then(|s| s.job_id.as_deref()),
        s.and_then(|s| s.job_id_finished.as_deref()),
    )
}

pub fn phase(inst: &Installation) -> Option<&Phase> {
    inst.status.as_ref().and_then(|s| s.phase.as_ref())
}

pub fn is_deleting(inst: &Installation) -> bool {
    inst.metadata.deletion_timestamp.is_some()
}

fn has_finalizer(inst: &Installation) -> bool {
    inst.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == LANDSCAPER_FINALIZER))
}

/// Landscaper's `isAutomaticReconcileOnSpecChange`.
pub fn wants_reconcile_on_change(inst: &Installation, is_root: bool) -> bool {
    let (job, finished) = job_ids(inst);
    is_root
        && annotation(inst, RECONCILE_IF_CHANGED_ANNOTATION) == Some("true")
        && !has_operation(inst, OPERATION_RECONCILE)
        && is_finished(job, finished)
        && inst.metadata.generation.unwrap_or(0)
            != inst
                .status
                .as_ref()
                .map(|s| s.observed_generation)
                .unwrap_or(0)
}

/// The next action for an installation (Landscaper's `reconcileInstallation` order).
pub fn pre_action(inst: &Installation, is_root: bool) -> PreAction {
    if wants_reconcile_on_change(inst, is_root) {
        return PreAction::AddReconcileAnnotation;
    }
    if !is_deleting(inst) && !has_finalizer(inst) {
        return PreAction::AddFinalizer;
    }
    if let Some(d) = inst
        .status
        .as_ref()
        .and_then(|s| s.dependents_to_trigger.as_ref())
        .filter(|d| !d.is_empty())
    {
        return PreAction::TriggerDependents(d.iter().map(|d| d.name.clone()).collect());
    }
    if has_operation(inst, OPERATION_INTERRUPT) {
        return PreAction::Interrupt;
    }
    if !is_root && has_operation(inst, OPERATION_RECONCILE) {
        return PreAction::RemoveReconcileAnnotation;
    }
    let (job, finished) = job_ids(inst);
    let first_delete = is_deleting(inst) && !is_deletion_phase(phase(inst));
    if is_root
        && (has_operation(inst, OPERATION_RECONCILE) || first_delete)
        && is_finished(job, finished)
    {
        return PreAction::StartJob;
    }
    if !is_finished(job, finished) {
        return PreAction::RunPhases;
    }
    PreAction::Idle
}

/// The status of a new job: a fresh jobID and transition times that start now.
pub fn start_job(status: &InstallationStatus, job_id: String, now: &str) -> InstallationStatus {
    let mut s = status.clone();
    s.job_id = Some(job_id);
    s.transition_times = Some(TransitionTimes {
        trigger_time: Some(now.to_string()),
        ..TransitionTimes::default()
    });
    s
}

/// Phase entry: an empty or final phase becomes `Init` (`InitDelete` when deleting) with the
/// observed generation; `None` when the job is already in a phase.
pub fn enter_job(inst: &Installation, now: &str) -> Option<InstallationStatus> {
    let status = inst.status.clone().unwrap_or_default();
    let p = status.phase.as_ref();
    if !(p.is_none() || is_final(p)) {
        return None;
    }
    let mut s = status.clone();
    s.sub_inst_cache = None;
    s.phase = Some(if is_deleting(inst) {
        Phase::InitDelete
    } else {
        Phase::Init
    });
    s.phase_transition_time = Some(now.to_string());
    let mut times = s.transition_times.clone().unwrap_or_default();
    times.init_time = Some(now.to_string());
    s.transition_times = Some(times);
    s.observed_generation = inst.metadata.generation.unwrap_or(0);
    Some(s)
}

/// Landscaper's `setInstallationPhaseAndUpdate`: the phase, lastError, and on a final phase
/// `jobIDFinished` and the finished time.
pub fn set_phase(
    status: &InstallationStatus,
    phase: Phase,
    error: Option<&LsError>,
    now: &str,
) -> InstallationStatus {
    let mut s = status.clone();
    s.last_error = updated_error(s.last_error.as_ref(), error, now);
    if s.phase.as_ref() != Some(&phase) {
        s.phase_transition_time = Some(now.to_string());
    }
    let final_phase = is_final(Some(&phase));
    s.phase = Some(phase);
    if final_phase {
        s.job_id_finished = s.job_id.clone();
        let mut times = s.transition_times.clone().unwrap_or_default();
        times.finished_time = Some(now.to_string());
        s.transition_times = Some(times);
    }
    s
}

/// Whether the running job skips its install phase `Init` because the installation is being
/// deleted: `Init` writes nothing until it succeeds, so nothing of this job exists yet, and
/// rendering (which needs the blueprint, imports and predecessors) is pointless when the
/// children are deleted anyway. The job goes on with `InitDelete`, which needs none of that.
/// (Landscaper runs `Init` first; an unresolvable blueprint then keeps a deleted installation
/// in `Init` forever.)
pub fn skips_init_for_deletion(inst: &Installation) -> bool {
    is_deleting(inst) && phase(inst) == Some(&Phase::Init)
}

/// Whether a retried (normal) error of `phase` ends the job instead while the installation is
/// being deleted: `Completing` repeats for missing input (a blueprint directory removed
/// together with the installation's file) that will not come back, and the deletion job can
/// only start once this job has finished.
pub fn gives_up_for_deletion(inst: &Installation, phase: &Phase) -> bool {
    is_deleting(inst) && *phase == Phase::Completing
}

/// The error of an installation whose `spec.context` names a Context that does not exist,
/// worded as Landscaper's `initPrerequisites` (`GetInstallationContext`) reports it.
pub fn missing_context_error(context: &str) -> LsError {
    let inner = format!("contexts.landscaper.gardener.cloud {context:?} not found");
    LsError::new(
        "InitPrerequisites",
        "CalculateContext",
        format!("Op: Context - Reason: GetContext - Message: {inner}"),
    )
}

/// The Context an installation needs to exist: `spec.context` unless empty or `default`
/// (the appliance's implicit Context in every namespace).
pub fn required_context(inst: &Installation) -> Option<&str> {
    inst.spec
        .context
        .as_deref()
        .filter(|c| !c.is_empty() && *c != DEFAULT_CONTEXT_NAME)
}

/// Whether `successor` (a sibling importing exports of `inst`, being deleted) waits, through
/// siblings that are all being deleted, for `inst` itself: `siblings` are the deleting
/// successors reachable from `successor`. Such a wait cycle would deadlock Landscaper's rule
/// "successors that still exist block the deletion"; only the edges inside such a cycle are
/// ignored, a successor outside it (or not being deleted) still blocks.
pub fn in_deletion_cycle(
    inst: &Installation,
    successor: &Installation,
    siblings: &[Installation],
) -> bool {
    if !is_deleting(inst) || !is_deleting(successor) {
        return false;
    }
    let own = inst.metadata.name.as_deref();
    let mut seen = vec![successor.metadata.name.as_deref()];
    let mut frontier = vec![successor];
    while let Some(current) = frontier.pop() {
        if is_successor(current, inst) {
            return true;
        }
        for next in siblings {
            let name = next.metadata.name.as_deref();
            if name == own || seen.contains(&name) || !is_deleting(next) {
                continue;
            }
            if is_successor(current, next) {
                seen.push(name);
                frontier.push(next);
            }
        }
    }
    false
}

/// The state of the children while the installation is `Progressing`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildrenProgress {
    /// Some child has not finished this job (an info-only error says which).
    Waiting(LsError),
    AllSucceeded,
    /// All finished, some failed: the error names them.
    Failed(LsError),
}

fn inst_job(i: &Installation) -> (Option<&str>, Option<&str>) {
    job_ids(i)
}

/// Landscaper's `handlePhaseProgressing`.
pub fn progressing(subs: &[Installation], execution: Option<&Execution>) -> ChildrenProgress {
    const OP: &str = "handlePhaseProgressing";
    let mut all_succeeded = true;
    let mut failed_subs = Vec::new();
    for sub in subs {
        let (j, f) = inst_job(sub);
        if !is_finished(j, f) {
            return ChildrenProgress::Waiting(unfinished(
                OP,
                format!(
                    "installation {} / {} is not finished yet",
                    sub.metadata.namespace.as_deref().unwrap_or_default(),
                    sub.metadata.name.as_deref().unwrap_or_default()
                ),
            ));
        }
        let p = phase(sub);
        all_succeeded &= p == Some(&Phase::Succeeded);
        if matches!(p, Some(Phase::Failed | Phase::DeleteFailed)) {
            failed_subs.push(sub.metadata.name.clone().unwrap_or_default());
        }
    }
    let mut execution_failed = false;
    if let Some(exec) = execution {
        let s = exec.status.as_ref();
        let (j, f) = (
            s.and_then(|s| s.job_id.as_deref()),
            s.and_then(|s| s.job_id_finished.as_deref()),
        );
        if !is_finished(j, f) {
            return ChildrenProgress::Waiting(unfinished(
                OP,
                format!(
                    "execution {} / {} is not finished yet",
                    exec.metadata.namespace.as_deref().unwrap_or_default(),
                    exec.metadata.name.as_deref().unwrap_or_default()
                ),
            ));
        }
        let p = s.and_then(|s| s.phase.as_ref());
        all_succeeded &= p == Some(&Phase::Succeeded);
        execution_failed = matches!(p, Some(Phase::Failed | Phase::DeleteFailed));
    }
    if all_succeeded {
        return ChildrenProgress::AllSucceeded;
    }
    let mut message = String::new();
    if !failed_subs.is_empty() {
        message = format!("Failed sub-installation(s): {}", failed_subs.join(", "));
    }
    if execution_failed {
        message.push_str("Execution is failed");
    }
    ChildrenProgress::Failed(LsError::new(
        "buildErrorIfFailedChild",
        "children failed",
        message,
    ))
}

fn unfinished(op: &str, message: String) -> LsError {
    LsError::new(op, "JobIDFinished", message)
        .with_code(ERR_UNFINISHED)
        .with_code(ERR_FOR_INFO_ONLY)
        .with_code(ERR_NO_RETRY)
}

/// The state of orphaned subinstallations during `CleanupOrphaned`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrphanCleanup {
    AllGone,
    /// Every remaining orphan ended this job with `DeleteFailed`.
    AllFailed,
    /// Orphans that still need this job's ID; the rest are deleting.
    Pending {
        trigger: Vec<String>,
    },
}

/// Landscaper's `handlePhaseCleanupOrphaned` over the subinstallations being deleted.
pub fn cleanup_orphaned(job_id: &str, deleting_subs: &[Installation]) -> OrphanCleanup {
    if deleting_subs.is_empty() {
        return OrphanCleanup::AllGone;
    }
    let all_failed = deleting_subs.iter().all(|s| {
        let (_, f) = inst_job(s);
        f == Some(job_id) && phase(s) == Some(&Phase::DeleteFailed)
    });
    if all_failed {
        return OrphanCleanup::AllFailed;
    }
    OrphanCleanup::Pending {
        trigger: deleting_subs
            .iter()
            .filter(|s| inst_job(s).0 != Some(job_id))
            .filter_map(|s| s.metadata.name.clone())
            .collect(),
    }
}

/// The state of the children during `Deleting`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeletionProgress {
    /// All children are gone: the finalizer goes.
    AllGone,
    /// Children remain and all finished this job: `DeleteFailed`.
    Stuck,
    /// Some child is still deleting.
    Pending,
}

/// Landscaper's `handleDeletionPhaseDeleting`: a child counts as finished when it ended this
/// job (a failed child among running ones does not end the deletion early).
pub fn deleting(
    job_id: &str,
    subs: &[Installation],
    execution: Option<&Execution>,
) -> DeletionProgress {
    if subs.is_empty() && execution.is_none() {
        return DeletionProgress::AllGone;
    }
    let subs_finished = subs.iter().all(|s| {
        let (j, f) = inst_job(s);
        j == Some(job_id) && f == Some(job_id)
    });
    let exec_finished = execution.is_none_or(|e| {
        let s = e.status.as_ref();
        s.and_then(|s| s.job_id.as_deref()) == Some(job_id)
            && s.and_then(|s| s.job_id_finished.as_deref()) == Some(job_id)
    });
    if subs_finished && exec_finished {
        DeletionProgress::Stuck
    } else {
        DeletionProgress::Pending
    }
}

// --- The step over a loaded view --------------------------------------------------------------

/// The subinstallations (sorted by name) and the execution an installation owns, as stored and
/// as typed.
#[derive(Debug, Clone, Default)]
pub struct Children {
    pub subs: Vec<(Value, Installation)>,
    pub execution: Option<(Value, Execution)>,
}

/// What `Init` reads, in the order it reads it. The loader stops at the first read that fails or
/// whose check fails (the fields after it stay `None`); [`step`] checks them in the same order,
/// so it never looks past the field that ended the loading.
#[derive(Debug, Default)]
pub struct InitView {
    /// (a) The DataObjects and Targets of earlier jobs that name the own scope as their source.
    pub own_exports: Option<Result<Vec<Value>, PhaseError>>,
    /// (b) Whether the Context of `spec.context` exists (`true` when none is required).
    pub context_exists: Option<Result<bool, PhaseError>>,
    pub blueprint: Option<Result<Blueprint, PhaseError>>,
    /// The resolved component versions of `spec.componentDescriptor.ref` (with the blueprint).
    pub components: Option<crate::components::InstallationComponents>,
    /// (c) Siblings exporting what this installation exports ([`needs_duplicate_check`]).
    pub exporters: Option<Result<Vec<Installation>, PhaseError>>,
    /// Siblings this installation transitively waits for ([`needs_predecessor_check`]).
    pub predecessors: Option<Result<Vec<Installation>, PhaseError>>,
    /// (d), (e) The import values, read from the installation's scope.
    pub values: Option<Result<Map<String, Value>, PhaseError>>,
    /// The blueprint's `.imports` and what its executions rendered (off the async workers).
    pub rendered: Option<Result<(Bindings, RenderedSubobjects), PhaseError>>,
    /// Whether the imports may hold Secret values ([`dataflow::imports_from_secrets`]).
    pub from_secret: Option<Result<bool, PhaseError>>,
    /// (f) The stored objects under the names of the import objects.
    pub current: Option<Result<BTreeMap<ObjectKey, Value>, PhaseError>>,
    /// (h) Whether an Execution of the installation's name exists that it does not own (read
    /// only when it owns none).
    pub execution_taken: Option<Result<bool, PhaseError>>,
    /// (i) The predecessors read again after everything else.
    pub predecessors_after: Option<Result<Vec<Installation>, PhaseError>>,
}

/// What `Completing` reads, in its order (see [`InitView`]).
#[derive(Debug, Default)]
pub struct CompletingView {
    /// (a) The DataObjects and Targets of the own scope.
    pub context_objects: Option<Result<Vec<Value>, PhaseError>>,
    /// (b) Blueprint and import values (for the imports hash).
    pub blueprint: Option<Result<Blueprint, PhaseError>>,
    pub components: Option<crate::components::InstallationComponents>,
    pub values: Option<Result<Map<String, Value>, PhaseError>>,
    /// (c) The exports, rendered from the deploy items' exports and the own scope.
    pub exports: Option<Result<Map<String, Value>, PhaseError>>,
    pub from_secret: Option<Result<bool, PhaseError>>,
    /// (d) The stored objects under the names of the export objects.
    pub current: Option<Result<BTreeMap<ObjectKey, Value>, PhaseError>>,
}

/// Everything a step reads besides the installation, loaded up front according to [`plan`].
#[derive(Debug, Default)]
pub struct View {
    /// The children; `Err` says why they could not be listed.
    pub children: Option<Result<Children, String>>,
    /// `TriggerDependents`: the named siblings as stored (`None` when gone).
    pub dependents: Vec<(String, Option<Value>)>,
    /// Siblings importing an export of the installation: its successor candidates, read when
    /// the job may end (to record the dependents to trigger) and for the deletion checks.
    pub importers: Option<Result<Vec<Installation>, PhaseError>>,
    /// `InitDelete`: for each successor being deleted, the deleting siblings it transitively
    /// waits for ([`dataflow::deleting_successor_closure`]).
    pub deletion_closures: BTreeMap<String, Result<Vec<Installation>, PhaseError>>,
    pub init: Option<InitView>,
    pub completing: Option<CompletingView>,
}

/// What the loader has to read for the next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Needs {
    Nothing,
    Dependents(Vec<String>),
    Children,
    Init,
    Completing,
    InitDelete,
}

/// The reads of the next step: [`Needs`], and whether the successor candidates are needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub needs: Needs,
    pub importers: bool,
}

/// What the next [`step`] of `inst` reads.
pub fn plan(inst: &Installation) -> Plan {
    let is_root = parent_name(inst).is_none();
    let nothing = Plan {
        needs: Needs::Nothing,
        importers: false,
    };
    let needs = match pre_action(inst, is_root) {
        PreAction::TriggerDependents(names) => Needs::Dependents(names),
        PreAction::Interrupt => Needs::Children,
        PreAction::RunPhases => {
            if enter_job(inst, "").is_some() || skips_init_for_deletion(inst) {
                return nothing;
            }
            match phase(inst).cloned().unwrap_or(Phase::Init) {
                Phase::Init => Needs::Init,
                Phase::Completing => Needs::Completing,
                Phase::InitDelete => Needs::InitDelete,
                Phase::CleanupOrphaned
                | Phase::ObjectsCreated
                | Phase::TriggerDelete
                | Phase::Progressing
                | Phase::Deleting => Needs::Children,
                Phase::Succeeded | Phase::Failed | Phase::DeleteFailed | Phase::Other(_) => {
                    return nothing;
                }
            }
        }
        _ => return nothing,
    };
    // The successors are read where the job may end (to record the dependents to trigger): in
    // every phase but the two that only pass the jobID on, and not while the installation is
    // being deleted.
    let may_end = !matches!(
        phase(inst),
        Some(Phase::ObjectsCreated | Phase::TriggerDelete)
    );
    let importers = (may_end && !is_deleting(inst) && may_have_dependents(inst))
        || (needs == Needs::InitDelete && !ignores_successors(inst));
    Plan { needs, importers }
}

/// Whether siblings may import an export of `inst` (it has exports, and does not declare
/// `optimization.hasNoSiblingExports`).
pub fn may_have_dependents(inst: &Installation) -> bool {
    let exports_nothing =
        inst.spec.data_exports().is_empty() && inst.spec.target_exports().is_empty();
    !(no_sibling_exports(inst) || exports_nothing)
}

fn no_sibling_exports(inst: &Installation) -> bool {
    inst.spec
        .optimization
        .as_ref()
        .and_then(|o| o.has_no_sibling_exports)
        == Some(true)
}

/// Whether the deletion skips the successor check (annotation
/// `delete-ignore-successors`, or `optimization.hasNoSiblingExports`).
pub fn ignores_successors(inst: &Installation) -> bool {
    annotation(inst, DELETE_IGNORE_SUCCESSORS_ANNOTATION) == Some("true")
        || no_sibling_exports(inst)
}

/// Whether `Init` checks that no sibling exports what `inst` exports.
pub fn needs_duplicate_check(inst: &Installation) -> bool {
    may_have_dependents(inst)
}

/// Whether `Init` checks predecessors: `inst` imports something and does not declare
/// `optimization.hasNoSiblingImports`.
pub fn needs_predecessor_check(inst: &Installation) -> bool {
    let no_sibling_imports = inst
        .spec
        .optimization
        .as_ref()
        .and_then(|o| o.has_no_sibling_imports)
        == Some(true);
    let (data, targets) = imported_refs(inst);
    let imports_nothing = data.is_empty() && targets.is_empty();
    !(no_sibling_imports || imports_nothing)
}

/// Landscaper's `GetExternalContext`: the Context named in `spec.context` must exist (fatal
/// otherwise, as in Landscaper; the deploy items would need it).
pub fn check_context(inst: &Installation, exists: bool) -> Result<(), PhaseError> {
    match required_context(inst) {
        Some(context) if !exists => Err(PhaseError::Fatal(missing_context_error(context))),
        _ => Ok(()),
    }
}

/// Two siblings exporting the same DataObject or Target would overwrite each other's values: a
/// fatal error for both, before any work is done.
pub fn check_duplicate_exports(
    inst: &Installation,
    siblings: &[Installation],
) -> Result<(), PhaseError> {
    match duplicate_exports(inst, siblings) {
        Some(message) => Err(PhaseError::Fatal(LsError::new(
            "init",
            "FetchPredecessors",
            message,
        ))),
        None => Ok(()),
    }
}

/// Landscaper's predecessor checks over the predecessor closure: every sibling whose exports
/// `inst` imports must have finished (else wait) and succeeded (else fail); a cycle fails.
/// Returns the predecessors' job IDs.
pub fn check_predecessors(
    inst: &Installation,
    siblings: &[Installation],
) -> Result<BTreeMap<String, String>, PhaseError> {
    const OP: &str = "init";
    let mut out = BTreeMap::new();
    let is_root = parent_name(inst).is_none();
    if let Some(cycle) = predecessor_cycle(inst, siblings) {
        return Err(PhaseError::Fatal(LsError::new(
            OP,
            "FetchPredecessors",
            format!(
                "the subinstallations have a cycle: {}",
                cycle.join(landscaper_templating::blueprint::DEPENDS_ON)
            ),
        )));
    }
    for sibling in siblings {
        if !is_successor(sibling, inst) {
            continue;
        }
        let st = sibling.status.clone().unwrap_or_default();
        if !is_finished(st.job_id.as_deref(), st.job_id_finished.as_deref())
            || (is_root && has_operation(sibling, OPERATION_RECONCILE))
        {
            return Err(PhaseError::Normal(LsError::new(
                OP,
                "AllPredecessorsFinished",
                format!("predecessor {} is not finished", name(sibling)),
            )));
        }
        if st.phase != Some(Phase::Succeeded) {
            return Err(PhaseError::Fatal(LsError::new(
                OP,
                "AllPredecessorsSucceeded",
                format!(
                    "predecessor {} is not succeeded (phase {})",
                    name(sibling),
                    st.phase.as_ref().map(Phase::as_str).unwrap_or("none")
                ),
            )));
        }
        out.insert(name(sibling).to_string(), st.job_id.unwrap_or_default());
    }
    Ok(out)
}

/// `Completing`'s checks of its inputs: the imports and the spec are unchanged since `Init`.
pub fn check_unchanged(
    inst: &Installation,
    status: &InstallationStatus,
    values: &Map<String, Value>,
) -> Result<(), PhaseError> {
    const OP: &str = "handlePhaseCompleting";
    if Some(imports_hash(values)) != status.imports_hash {
        return Err(PhaseError::Fatal(LsError::new(
            OP,
            "CheckImportsHash",
            "imports have changed",
        )));
    }
    if inst.metadata.generation.unwrap_or(0) != status.observed_generation {
        return Err(PhaseError::Fatal(
            LsError::new(
                OP,
                "CheckObservedGeneration",
                "installation spec has been changed",
            )
            .with_code(ERR_FOR_INFO_ONLY),
        ));
    }
    Ok(())
}

/// Landscaper's `checkIfSiblingImports`: a sibling that imports an export of `inst` and still
/// exists blocks the deletion (a normal error), or fails it when its own deletion failed. A
/// successor that is being deleted and itself waits (through siblings being deleted) for
/// `inst` is ignored: those installations would otherwise wait for each other forever. A cycle
/// among siblings can never install (Init fails it), so there is no order of teardown to keep;
/// a successor outside the cycle still blocks.
pub fn check_successors(
    inst: &Installation,
    importers: &[Installation],
    closures: &BTreeMap<String, Result<Vec<Installation>, PhaseError>>,
) -> Result<(), PhaseError> {
    const OP: &str = "CheckSuccessorSibling";
    for sibling in importers {
        if !is_successor(inst, sibling) {
            continue;
        }
        if is_deleting(sibling) {
            let waits_for = match closures.get(name(sibling)) {
                Some(Ok(c)) => c.as_slice(),
                Some(Err(e)) => return Err(e.clone()),
                None => &[],
            };
            if in_deletion_cycle(inst, sibling, waits_for) {
                continue;
            }
        }
        let st = sibling.status.clone().unwrap_or_default();
        if st.phase == Some(Phase::DeleteFailed)
            && is_finished(st.job_id.as_deref(), st.job_id_finished.as_deref())
            && sibling.metadata.deletion_timestamp.is_some()
        {
            return Err(PhaseError::Fatal(
                LsError::new(
                    OP,
                    "SiblingDeleteError",
                    format!("deletion of a sibling failed: {}", name(sibling)),
                )
                .with_code(ERR_FOR_INFO_ONLY),
            ));
        }
        return Err(PhaseError::Normal(
            LsError::new(
                OP,
                "SiblingImport",
                format!(
                    "a sibling still imports some of the exports: {}",
                    name(sibling)
                ),
            )
            .with_code(ERR_FOR_INFO_ONLY),
        ));
    }
    Ok(())
}

/// The inputs of a step that are not read from objects.
#[derive(Debug, Clone)]
pub struct Now {
    /// The time, as written into status fields.
    pub time: String,
    /// The same time, for schedules.
    pub instant: Timestamp,
    /// The jobID a job started by this step gets.
    pub new_job_id: String,
    /// How long an installation's own ready postcondition (issue 19) may stay false after its
    /// children were started (the progressing timeout); `None`: unbounded.
    pub ready_timeout: Option<Duration>,
}

/// What the runtime does after committing a step's writes.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Another step at once (on the object as stored now).
    Continue,
    /// Another step at once on this changed object, written together with the next commit
    /// (phase changes that write nothing else need no commit of their own).
    Defer(Value),
    /// Nothing to do until something changes.
    Done,
    /// Look again after this long (automatic reconciles).
    RequeueAfter(Duration),
    /// A normal error in this phase: look again after the phase's growing wait interval.
    Retry(String),
    /// A read the step needed failed: the reconcile fails and is retried by the runtime.
    Fail(Failure),
}

/// Why a step cannot be taken (it writes nothing; the runtime retries the reconcile).
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The view lacks a part the loader should have read (a loader defect).
    IncompleteView(&'static str),
    /// A read the step needed failed with this error.
    Read(LsError),
}

/// The outcome of one step: writes to commit in one transaction, then what comes next.
#[derive(Debug, Clone)]
pub struct Step {
    pub writes: Vec<Write>,
    pub next: Next,
    /// Installations to enqueue once the writes are committed.
    pub wake: Vec<ObjectKey>,
    /// The phase made progress: its wait interval starts from the shortest again.
    pub forget_waits: bool,
}

impl Step {
    fn new(writes: Vec<Write>, next: Next) -> Step {
        Step {
            writes,
            next,
            wake: Vec::new(),
            forget_waits: false,
        }
    }

    fn update(value: Value) -> Step {
        Step::new(vec![Write::Update(value)], Next::Continue)
    }
}

/// One step of the installation controller (Landscaper's `reconcileInstallation` order, then
/// the current phase's handler): pure over the installation (`value` as stored or as changed
/// by a deferred step, `dirty` then), the loaded `view` and `now`.
pub fn step(value: &Value, inst: &Installation, dirty: bool, view: &View, now: &Now) -> Step {
    let is_root = parent_name(inst).is_none();
    let status = inst.status.clone().unwrap_or_default();
    match pre_action(inst, is_root) {
        PreAction::AddReconcileAnnotation => {
            let mut v = value.clone();
            set_annotation(&mut v, OPERATION_ANNOTATION, Some(OPERATION_RECONCILE));
            Step::update(v)
        }
        PreAction::AddFinalizer => {
            let mut v = value.clone();
            add_finalizer(&mut v, LANDSCAPER_FINALIZER);
            Step::new(Vec::new(), Next::Defer(v))
        }
        PreAction::TriggerDependents(names) => {
            trigger_dependents(value, inst, &status, &names, view)
        }
        PreAction::Interrupt => {
            let Some(Ok(children)) = &view.children else {
                return incomplete("children");
            };
            let mut v = value.clone();
            set_annotation(&mut v, OPERATION_ANNOTATION, None);
            let mut writes = vec![Write::Update(v)];
            let children = children
                .subs
                .iter()
                .map(|(v, _)| v)
                .chain(children.execution.as_ref().map(|(v, _)| v));
            for child in children {
                let mut c = child.clone();
                set_annotation(&mut c, OPERATION_ANNOTATION, Some(OPERATION_INTERRUPT));
                writes.push(Write::Update(c));
            }
            Step::new(writes, Next::Continue)
        }
        PreAction::RemoveReconcileAnnotation => {
            let mut v = value.clone();
            set_annotation(&mut v, OPERATION_ANNOTATION, None);
            set_annotation(&mut v, RECONCILE_REASON_ANNOTATION, None);
            Step::update(v)
        }
        PreAction::StartJob => {
            let mut status = status;
            if auto::resets_on_start(inst) {
                status.automatic_reconcile_status = None;
            }
            let status = start_job(&status, now.new_job_id.clone(), &now.time);
            let mut v = with_status(value.clone(), &status);
            set_annotation(&mut v, OPERATION_ANNOTATION, None);
            set_annotation(&mut v, RECONCILE_REASON_ANNOTATION, None);
            Step::update(v)
        }
        PreAction::RunPhases => run_phase(value, inst, dirty, view, now),
        PreAction::Idle => {
            let mut out = if dirty {
                Step::update(value.clone())
            } else {
                match auto::decide(inst, now.instant) {
                    auto::Decision::Nothing => Step::new(Vec::new(), Next::Done),
                    auto::Decision::Wait(d) => Step::new(Vec::new(), Next::RequeueAfter(d)),
                    auto::Decision::Update {
                        status: new_auto,
                        annotate,
                    } => {
                        let mut s = status;
                        s.automatic_reconcile_status = new_auto;
                        let mut v = with_status(value.clone(), &s);
                        if annotate {
                            set_annotation(&mut v, OPERATION_ANNOTATION, Some(OPERATION_RECONCILE));
                            set_annotation(
                                &mut v,
                                RECONCILE_REASON_ANNOTATION,
                                Some(RECONCILE_REASON_RETRY),
                            );
                        }
                        Step::update(v)
                    }
                }
            };
            out.forget_waits = true;
            out
        }
    }
}

/// A step whose view lacks what it needs (a loader defect): the reconcile fails and is retried.
fn incomplete(what: &'static str) -> Step {
    Step::new(Vec::new(), Next::Fail(Failure::IncompleteView(what)))
}

fn not_loaded(what: &str) -> PhaseError {
    PhaseError::Normal(LsError::new(
        "LoadView",
        "ViewIncomplete",
        format!("the installation's view lacks its {what}"),
    ))
}

/// A loaded field of a phase view, or the error that ended the loading.
fn field<'a, T>(f: &'a Option<Result<T, PhaseError>>, what: &str) -> Result<&'a T, PhaseError> {
    match f {
        Some(Ok(t)) => Ok(t),
        Some(Err(e)) => Err(e.clone()),
        None => Err(not_loaded(what)),
    }
}

/// Successors recorded at the end of the last job: roots get the reconcile annotation,
/// subinstallations a reconcile event.
fn trigger_dependents(
    value: &Value,
    inst: &Installation,
    status: &InstallationStatus,
    names: &[String],
    view: &View,
) -> Step {
    let mut writes = Vec::new();
    let mut wake = Vec::new();
    for n in names {
        let Some((_, Some(sibling))) = view.dependents.iter().find(|(d, _)| d == n) else {
            continue;
        };
        let Ok(sibling_inst) = from_value::<Installation>(sibling) else {
            continue;
        };
        if parent_name(&sibling_inst).is_none() {
            if !has_operation(&sibling_inst, OPERATION_RECONCILE) {
                let mut s = sibling.clone();
                set_annotation(&mut s, OPERATION_ANNOTATION, Some(OPERATION_RECONCILE));
                writes.push(Write::Update(s));
            }
        } else {
            wake.push(ObjectKey::new(Kind::Installation, namespace(inst), n));
        }
    }
    let mut s = status.clone();
    s.dependents_to_trigger = None;
    writes.push(Write::Update(with_status(value.clone(), &s)));
    let mut out = Step::new(writes, Next::Continue);
    out.wake = wake;
    out
}

/// Siblings that import an export of `inst`.
fn dependents(inst: &Installation, view: &View) -> Result<Vec<DependentToTrigger>, Failure> {
    if !may_have_dependents(inst) {
        return Ok(Vec::new());
    }
    let importers = match &view.importers {
        Some(Ok(i)) => i,
        Some(Err(e)) => return Err(Failure::Read(e.error().clone())),
        None => return Err(Failure::IncompleteView("importers")),
    };
    Ok(importers
        .iter()
        .filter(|s| is_successor(inst, s))
        .map(|s| DependentToTrigger {
            name: name(s).to_string(),
        })
        .collect())
}

/// `writes` and the status with `phase` (and on a final install phase the dependents to
/// trigger).
#[allow(clippy::too_many_arguments)]
fn finish(
    value: &Value,
    inst: &Installation,
    status: &InstallationStatus,
    phase: Phase,
    error: Option<&LsError>,
    mut writes: Vec<Write>,
    view: &View,
    now: &str,
) -> Step {
    let mut s = set_phase(status, phase, error, now);
    if is_finished(s.job_id.as_deref(), s.job_id_finished.as_deref()) && !is_deleting(inst) {
        match dependents(inst, view) {
            Ok(d) => s.dependents_to_trigger = (!d.is_empty()).then_some(d),
            Err(e) => return Step::new(Vec::new(), Next::Fail(e)),
        }
    }
    writes.push(Write::Update(with_status(value.clone(), &s)));
    Step::new(writes, Next::Continue)
}

/// Records a phase error: a normal one keeps the phase and waits, a fatal one ends the flow.
/// `writes` (of the failed phase) are committed with it.
#[allow(clippy::too_many_arguments)]
fn on_error(
    value: &Value,
    inst: &Installation,
    status: &InstallationStatus,
    error: PhaseError,
    mut writes: Vec<Write>,
    dirty: bool,
    view: &View,
    now: &str,
) -> Step {
    let current = status.phase.clone().unwrap_or(Phase::Init);
    let error = match error {
        PhaseError::Normal(e) if gives_up_for_deletion(inst, &current) => PhaseError::Fatal(e),
        other => other,
    };
    match error {
        PhaseError::Normal(e) => {
            let s = set_phase(status, current.clone(), Some(&e), now);
            if dirty || Some(&s) != inst.status.as_ref() {
                writes.push(Write::Update(with_status(value.clone(), &s)));
            }
            Step::new(writes, Next::Retry(current.as_str().to_string()))
        }
        PhaseError::Fatal(e) => {
            // As in Landscaper, an install phase fails with `Failed` also while the
            // installation is being deleted, so that the deletion job can start after it.
            let failed = if is_deletion_phase(Some(&current)) {
                Phase::DeleteFailed
            } else {
                Phase::Failed
            };
            finish(value, inst, status, failed, Some(&e), writes, view, now)
        }
    }
}

/// Sets this job's ID on the named subinstallations (and on the execution when `execution`
/// is set); Landscaper's `ObjectsCreated`/`TriggerDelete`.
fn pass_job_id(
    children: &Children,
    names: &[String],
    execution: bool,
    job_id: &str,
    now: &str,
) -> Vec<Write> {
    let trigger = |v: &Value| -> Option<Value> {
        let mut v = v.clone();
        let status = v.get("status").cloned().unwrap_or(json!({}));
        if status.get("jobID").and_then(Value::as_str) == Some(job_id) {
            return None;
        }
        let mut status = status.as_object().cloned().unwrap_or_default();
        status.insert("jobID".into(), json!(job_id));
        status.insert("transitionTimes".into(), json!({"triggerTime": now}));
        v["status"] = Value::Object(status);
        Some(v)
    };
    let mut writes = Vec::new();
    for (v, _) in &children.subs {
        if names.iter().any(|n| n == object::name(v))
            && let Some(u) = trigger(v)
        {
            writes.push(Write::Update(u));
        }
    }
    if execution
        && let Some((v, _)) = &children.execution
        && let Some(u) = trigger(v)
    {
        writes.push(Write::Update(u));
    }
    writes
}

/// The subinstallations not being deleted.
fn active_subs(children: &Children) -> Vec<Installation> {
    children
        .subs
        .iter()
        .filter(|(_, s)| s.metadata.deletion_timestamp.is_none())
        .map(|(_, s)| s.clone())
        .collect()
}

/// A phase handler's result: the next phase, its writes and the status to write with it.
type PhaseResult = Result<(Phase, Vec<Write>, InstallationStatus), PhaseError>;

fn run_phase(value: &Value, inst: &Installation, dirty: bool, view: &View, now: &Now) -> Step {
    let time = now.time.as_str();
    if let Some(s) = enter_job(inst, time) {
        return Step::new(Vec::new(), Next::Defer(with_status(value.clone(), &s)));
    }
    let status = inst.status.clone().unwrap_or_default();
    if skips_init_for_deletion(inst) {
        let s = set_phase(&status, Phase::InitDelete, None, time);
        return Step::new(Vec::new(), Next::Defer(with_status(value.clone(), &s)));
    }
    let job_id = status.job_id.clone().unwrap_or_default();
    let phase = status.phase.clone().unwrap_or(Phase::Init);
    let children = match (&phase, &view.children) {
        (Phase::Init | Phase::InitDelete | Phase::Completing, _) => None,
        (_, Some(Ok(c))) => Some(c),
        (Phase::Succeeded | Phase::Failed | Phase::DeleteFailed | Phase::Other(_), _) => None,
        (_, _) => return incomplete("children"),
    };
    let children = children.cloned().unwrap_or_default();
    // Writes of a phase that waits (a normal error), committed with the error.
    let mut pending = Vec::new();
    // The status a phase error is recorded on (a condition the phase waits for goes with it).
    let mut error_status = status.clone();
    let result: PhaseResult = match phase {
        Phase::Init => phase_init(value, inst, &status, &job_id, view, time, &mut error_status),
        Phase::CleanupOrphaned => {
            let deleting: Vec<Installation> = children
                .subs
                .iter()
                .filter(|(_, s)| s.metadata.deletion_timestamp.is_some())
                .map(|(_, s)| s.clone())
                .collect();
            match cleanup_orphaned(&job_id, &deleting) {
                OrphanCleanup::AllGone => {
                    let mut s = status.clone();
                    if let Some(c) = s.sub_inst_cache.as_mut() {
                        c.orphaned_subs = None;
                    }
                    Ok((Phase::ObjectsCreated, Vec::new(), s))
                }
                OrphanCleanup::AllFailed => Err(PhaseError::Fatal(LsError::new(
                    "handlePhaseCleanupOrphaned",
                    "AllOrphanedSubinstallationsFailed",
                    "all orphaned subinstallations failed",
                ))),
                OrphanCleanup::Pending { trigger } => {
                    pending = pass_job_id(&children, &trigger, false, &job_id, time);
                    Err(PhaseError::Normal(LsError::new(
                        "handlePhaseCleanupOrphaned",
                        "OrphanedSubinstsStillDeleting",
                        "some orphaned subinstallations are still deleting",
                    )))
                }
            }
        }
        Phase::ObjectsCreated | Phase::TriggerDelete => {
            let policy = workflow::policy(inst);
            let names: Vec<String> =
                if phase == Phase::ObjectsCreated && policy.max_concurrency.is_some() {
                    // maxConcurrency: the first ones in data-flow order; Progressing the rest.
                    workflow::to_trigger(&job_id, &active_subs(&children), policy)
                } else {
                    children
                        .subs
                        .iter()
                        .map(|(v, _)| object::name(v).to_string())
                        .collect()
                };
            let writes = pass_job_id(&children, &names, true, &job_id, time);
            let mut s = status.clone();
            if phase == Phase::ObjectsCreated {
                // Every subinstallation exists now, also those created in Init.
                let active: Vec<SubNamePair> = children
                    .subs
                    .iter()
                    .filter(|(_, i)| i.metadata.deletion_timestamp.is_none())
                    .map(|(v, i)| SubNamePair {
                        spec_name: annotation(i, SUBINSTALLATION_NAME_ANNOTATION)
                            .unwrap_or_default()
                            .to_string(),
                        object_name: object::name(v).to_string(),
                    })
                    .collect();
                let cache = s.sub_inst_cache.get_or_insert_with(SubInstCache::default);
                cache.active_subs = (!active.is_empty()).then_some(active);
            }
            let mut times = s.transition_times.clone().unwrap_or_default();
            times.wait_time = Some(time.to_string());
            s.transition_times = Some(times);
            let next = if phase == Phase::ObjectsCreated {
                Phase::Progressing
            } else {
                Phase::Deleting
            };
            Ok((next, writes, s))
        }
        Phase::Progressing => {
            let subs: Vec<Installation> = children.subs.iter().map(|(_, s)| s.clone()).collect();
            let policy = workflow::policy(inst);
            let active = active_subs(&children);
            let throttled =
                policy.max_concurrency.is_some() && workflow::has_pending(&job_id, &active);
            let trigger = if throttled {
                workflow::to_trigger(&job_id, &active, policy)
            } else {
                Vec::new()
            };
            let still_running = active.iter().any(|i| {
                let (j, f) = inst_job(i);
                j == Some(job_id.as_str()) && f != Some(job_id.as_str())
            });
            let progress = if throttled && (!trigger.is_empty() || still_running) {
                pending = pass_job_id(&children, &trigger, false, &job_id, time);
                ChildrenProgress::Waiting(unfinished(
                    "handlePhaseProgressing",
                    format!(
                        "subinstallations wait for their turn (maxConcurrency {})",
                        policy.max_concurrency.unwrap_or_default()
                    ),
                ))
            } else if throttled {
                // FailFast stopped starting more after a failure: the job fails with it.
                ChildrenProgress::Failed(LsError::new(
                    "buildErrorIfFailedChild",
                    "children failed",
                    workflow::aggregated_failure(&job_id, &active).to_string(),
                ))
            } else {
                progressing(&subs, children.execution.as_ref().map(|(_, e)| e))
            };
            match progress {
                ChildrenProgress::Waiting(e) => Err(PhaseError::Normal(e)),
                ChildrenProgress::AllSucceeded => {
                    Ok((Phase::Completing, Vec::new(), status.clone()))
                }
                ChildrenProgress::Failed(e) => {
                    let e = if policy.failure_policy == FailurePolicy::ContinueIndependent {
                        let agg = workflow::aggregated_failure(&job_id, &active);
                        if agg.failures.is_empty() {
                            e
                        } else {
                            LsError::new(
                                "buildErrorIfFailedChild",
                                "children failed",
                                agg.to_string(),
                            )
                        }
                    } else {
                        e
                    };
                    return finish(
                        value,
                        inst,
                        &status,
                        Phase::Failed,
                        Some(&e),
                        Vec::new(),
                        view,
                        time,
                    );
                }
            }
        }
        Phase::Completing => {
            phase_completing(value, inst, &status, &job_id, view, now, &mut error_status)
        }
        Phase::InitDelete => phase_init_delete(inst, &status, view),
        Phase::Deleting => {
            let subs: Vec<Installation> = children.subs.iter().map(|(_, s)| s.clone()).collect();
            match deleting(&job_id, &subs, children.execution.as_ref().map(|(_, e)| e)) {
                DeletionProgress::AllGone => {
                    // Issue 19: with a delete postcondition the installation counts as gone
                    // only once it holds.
                    let this = json!({"status": value.get("status").cloned().unwrap_or(json!({}))});
                    match workflow::own_postcondition(
                        inst,
                        ConditionKind::DeletePostcondition,
                        &json!({}),
                        &this,
                        (time, None, None),
                    ) {
                        Err(m) => Err(PhaseError::Fatal(LsError::new(
                            "handleReconcilePhase",
                            "InvalidWorkflowCondition",
                            m,
                        ))),
                        Ok(workflow::Postcondition::Evaluated(r)) if !r.is_met() => {
                            workflow::record_own(
                                &mut error_status,
                                ConditionKind::DeletePostcondition,
                                &r,
                                time,
                            );
                            Err(PhaseError::Normal(
                                unfinished(
                                    "handleReconcilePhase",
                                    format!("waiting for the deletePostcondition: {}", r.message()),
                                )
                                .with_code(ERR_FOR_INFO_ONLY),
                            ))
                        }
                        Ok(p) => {
                            let mut v = value.clone();
                            if let workflow::Postcondition::Evaluated(r) = &p {
                                let mut s = status.clone();
                                if workflow::record_own(
                                    &mut s,
                                    ConditionKind::DeletePostcondition,
                                    r,
                                    time,
                                ) {
                                    v = with_status(v, &s);
                                }
                            }
                            remove_finalizer(&mut v, LANDSCAPER_FINALIZER);
                            return Step::new(vec![Write::Update(v)], Next::Done);
                        }
                    }
                }
                DeletionProgress::Stuck => {
                    let e = LsError::new(
                        "handleReconcilePhase",
                        "UndeletedSubobjects",
                        "not all sub objects were deleted",
                    )
                    .with_code(ERR_FOR_INFO_ONLY);
                    return finish(
                        value,
                        inst,
                        &status,
                        Phase::DeleteFailed,
                        Some(&e),
                        Vec::new(),
                        view,
                        time,
                    );
                }
                DeletionProgress::Pending => Err(PhaseError::Normal(
                    LsError::new(
                        "handleReconcilePhase",
                        "PendingSubobjects",
                        "deletion of some sub objects pending",
                    )
                    .with_code(ERR_FOR_INFO_ONLY),
                )),
            }
        }
        Phase::Succeeded | Phase::Failed | Phase::DeleteFailed | Phase::Other(_) => {
            // enter_job handles final phases; an unknown phase restarts the job.
            let mut s = status.clone();
            s.phase = None;
            return Step::update(with_status(value.clone(), &s));
        }
    };
    match result {
        Ok((next, writes, s)) => {
            let mut out = if writes.is_empty() && !is_final(Some(&next)) {
                let s = set_phase(&s, next, None, time);
                Step::new(Vec::new(), Next::Defer(with_status(value.clone(), &s)))
            } else {
                finish(value, inst, &s, next, None, writes, view, time)
            };
            out.forget_waits = true;
            out
        }
        Err(e) => on_error(value, inst, &error_status, e, pending, dirty, view, time),
    }
}

/// A create of `desired`, or an unconditional update of `current` with it (keeping the stored
/// object's status); `None` when the stored object equals it already.
pub fn upsert(current: Option<&Value>, desired: Value) -> Option<Write> {
    match current {
        None => Some(Write::Create(desired)),
        Some(current) => {
            let mut merged = current.clone();
            for (k, v) in desired.as_object().into_iter().flatten() {
                if k == "metadata" {
                    let meta = object::metadata_mut(&mut merged);
                    for (mk, mv) in v.as_object().into_iter().flatten() {
                        meta.insert(mk.clone(), mv.clone());
                    }
                } else {
                    merged[k] = v.clone();
                }
            }
            if merged == *current {
                None
            } else {
                object::metadata_mut(&mut merged).remove("resourceVersion");
                Some(Write::Update(merged))
            }
        }
    }
}

/// The key of an object the installation writes.
fn key_of(o: &Value) -> Result<ObjectKey, PhaseError> {
    object::key_of(o).map_err(|e| {
        PhaseError::Fatal(LsError::new(
            "CreateOrUpdate",
            "InvalidObject",
            e.to_string(),
        ))
    })
}

/// The keys of the objects `Init` publishes the imports as (for the loader to read them).
pub fn import_object_keys(objects: &[Value]) -> Vec<ObjectKey> {
    objects
        .iter()
        .filter_map(|o| object::key_of(o).ok())
        .collect()
}

/// The condition Landscaper sets False when templating failed in `Init`: `ValidateImports`
/// for the import executions (their validation errors as the message),
/// `ReconcileExecution` for the deploy executions.
fn record_templating_failure(e: &PhaseError, status: &mut InstallationStatus, now: &str) {
    let error = e.error();
    let (condition, message) = match error.reason.as_str() {
        RENDER_IMPORT_EXECUTIONS => (
            CONDITION_VALIDATE_IMPORTS,
            error
                .message
                .strip_prefix(IMPORT_VALIDATION_FAILED)
                .unwrap_or(MESSAGE_TEMPLATING_FAILED),
        ),
        CONDITION_RECONCILE_EXECUTION => (CONDITION_RECONCILE_EXECUTION, MESSAGE_TEMPLATING_FAILED),
        _ => return,
    };
    set_own_condition(
        status,
        condition,
        CONDITION_FALSE,
        REASON_TEMPLATING_FAILED,
        message,
        now,
    );
}

/// `Init`: blueprint, predecessors, imports and their hash, import objects, subobjects.
fn phase_init(
    value: &Value,
    inst: &Installation,
    status: &InstallationStatus,
    job_id: &str,
    view: &View,
    now: &str,
    error_status: &mut InstallationStatus,
) -> PhaseResult {
    const OP: &str = "handlePhaseInit";
    let Some(iv) = &view.init else {
        return Err(not_loaded("Init view"));
    };
    let ns = namespace(inst);
    let mut writes = Vec::new();
    // (a) own exports of earlier jobs go.
    for o in field(&iv.own_exports, "own exports")? {
        if object::labels(o)
            .get(DATA_OBJECT_SOURCE_TYPE_LABEL)
            .map(String::as_str)
            == Some(DATA_OBJECT_SOURCE_TYPE_EXPORT)
            && let Ok(kind) = object::kind_of(o)
        {
            writes.push(Write::Delete {
                key: ObjectKey::new(kind, ns, object::name(o)),
                resource_version: None,
            });
        }
    }
    // (b) context, blueprint.
    check_context(inst, *field(&iv.context_exists, "context")?)?;
    let blueprint = field(&iv.blueprint, "blueprint")?;
    // (c) predecessors; no sibling exports the same object.
    if needs_duplicate_check(inst) {
        check_duplicate_exports(inst, field(&iv.exporters, "exporters")?)?;
    }
    let predecessors = if needs_predecessor_check(inst) {
        check_predecessors(inst, field(&iv.predecessors, "predecessors")?)?
    } else {
        BTreeMap::new()
    };
    // (d), (e) imports; the templates (import executions and mappings, deploy and
    // subinstallation executions) of (e), (g) and (h).
    let values = field(&iv.values, "import values")
        .inspect_err(|e| record_templating_failure(e, error_status, now))?;
    let hash = imports_hash(values);
    let (bindings, rendered) = field(&iv.rendered, "rendered templates")
        .inspect_err(|e| record_templating_failure(e, error_status, now))?;
    // (f) imports into the own scope (marked when they may hold Secret values).
    let from_secret = *field(&iv.from_secret, "from-secret mark")?;
    let current = field(&iv.current, "import objects")?;
    for o in import_objects(inst, value, blueprint, bindings, job_id, from_secret) {
        let key = key_of(&o)?;
        if let Some(w) = upsert(current.get(&key), o) {
            writes.push(w);
        }
    }
    // (g), (h) subinstallations and execution.
    let children = match &view.children {
        Some(Ok(c)) => c,
        Some(Err(e)) => {
            return Err(PhaseError::Normal(LsError::new(
                OP,
                "ListSubobjects",
                e.clone(),
            )));
        }
        None => return Err(not_loaded("children")),
    };
    let mut cache = SubInstCache::default();
    let mut active = Vec::new();
    let mut orphaned = Vec::new();
    let mut existing: BTreeMap<String, &Value> = BTreeMap::new();
    // Workflow conditions of the subinstallation templates (issue 19); nothing without a block.
    let sub_status: BTreeMap<String, Value> = children
        .subs
        .iter()
        .filter(|(_, s)| s.metadata.deletion_timestamp.is_none())
        .filter_map(|(v, s)| {
            let t = annotation(s, SUBINSTALLATION_NAME_ANNOTATION)?;
            Some((t.to_string(), v.get("status").cloned().unwrap_or(json!({}))))
        })
        .collect();
    let gate = workflow::gate(
        &format!("blueprint of Installation {ns}/{}", name(inst)),
        &rendered.subinstallations,
        values,
        &sub_status,
    )
    .map_err(|m| PhaseError::Fatal(LsError::new(OP, "InvalidWorkflowCondition", m)))?;
    for (v, s) in &children.subs {
        let template_name = annotation(s, SUBINSTALLATION_NAME_ANNOTATION)
            .unwrap_or_default()
            .to_string();
        if s.metadata.deletion_timestamp.is_some() {
            continue;
        }
        if let Some(workflow::Exclusion::Removed(_)) = gate.excluded.get(&template_name) {
            // Deleted waiting for its successors (no delete-ignore-successors): the
            // subtree goes in reverse order.
            orphaned.push(object::name(v).to_string());
            writes.push(Write::Delete {
                key: ObjectKey::new(Kind::Installation, ns, object::name(v)),
                resource_version: None,
            });
            continue;
        }
        if rendered
            .subinstallations
            .iter()
            .any(|t| t.name == template_name)
            && !existing.contains_key(&template_name)
        {
            existing.insert(template_name, v);
        } else {
            // orphaned: deleted without waiting for its successors.
            let mut o = v.clone();
            set_annotation(&mut o, DELETE_IGNORE_SUCCESSORS_ANNOTATION, Some("true"));
            orphaned.push(object::name(v).to_string());
            writes.push(Write::Update(o));
            writes.push(Write::Delete {
                key: ObjectKey::new(Kind::Installation, ns, object::name(v)),
                resource_version: None,
            });
        }
    }
    for template in &rendered.subinstallations {
        let current = existing.get(&template.name).copied();
        match gate.excluded.get(&template.name) {
            Some(workflow::Exclusion::Removed(_)) => continue,
            Some(workflow::Exclusion::Inactive(_)) => {
                // Left as it is: neither created, updated nor deleted.
                if let Some(current) = current {
                    active.push(SubNamePair {
                        spec_name: template.name.clone(),
                        object_name: object::name(current).to_string(),
                    });
                }
                continue;
            }
            None => {}
        }
        let mut sub = subinstallation_object(
            inst,
            value,
            template,
            current,
            from_secret,
            rendered.component_blueprints.get(&template.name),
        )
        .map_err(|m| PhaseError::Fatal(LsError::new(OP, "EnsureSubinstallations", m)))?;
        // Issue 19: the template's block goes with the subinstallation (its own postconditions
        // and policies); nothing without one.
        set_annotation(
            &mut sub,
            landscaper_store::model::workflow::WORKFLOW_ANNOTATION,
            workflow::template_annotation(template).as_deref(),
        );
        match current {
            Some(current) => {
                active.push(SubNamePair {
                    spec_name: template.name.clone(),
                    object_name: object::name(current).to_string(),
                });
                if &sub != current {
                    writes.push(Write::Update(sub));
                }
            }
            // The name comes from generateName; the cache is completed in the next phase,
            // once the object exists.
            None => writes.push(Write::Create(sub)),
        }
    }
    cache.active_subs = (!active.is_empty()).then_some(active);
    cache.orphaned_subs = (!orphaned.is_empty()).then_some(orphaned);
    let mut s = status.clone();
    s.sub_inst_cache = Some(cache);
    let with_block: Vec<String> = rendered
        .subinstallations
        .iter()
        .map(|t| t.name.clone())
        .collect();
    if !gate.results.is_empty() || s.conditions.as_ref().is_some_and(|c| !c.is_empty()) {
        let mut list = s.conditions.take().unwrap_or_default();
        workflow::record(&mut list, &gate, &with_block, now);
        s.conditions = (!list.is_empty()).then_some(list);
    }
    let execution = children.execution.as_ref();
    if !rendered.deploy_items.is_empty() || execution.is_some() {
        let exec = execution_object(
            inst,
            value,
            &rendered.deploy_items,
            execution.map(|(v, _)| v),
            from_secret,
        );
        match execution {
            Some((current, _))
                if current.get("spec") == exec.get("spec")
                    && object::annotations(current).get(FROM_SECRET_ANNOTATION)
                        == object::annotations(&exec).get(FROM_SECRET_ANNOTATION) => {}
            Some(_) => writes.push(Write::Update(exec)),
            None => {
                if *field(&iv.execution_taken, "execution name")? {
                    // Not among the children: someone else's, e.g. written into the manifests
                    // folder. Creating it would fail (AlreadyExists) each time.
                    tracing::warn!(installation = %format!("{ns}/{}", name(inst)), execution = %ObjectKey::new(Kind::Execution, ns, name(inst)), "the installation's execution name is taken by an execution it does not own");
                    set_own_condition(
                        error_status,
                        CONDITION_RECONCILE_EXECUTION,
                        CONDITION_FALSE,
                        REASON_CREATE_OR_UPDATE_EXECUTION,
                        MESSAGE_CREATE_OR_UPDATE_EXECUTION,
                        now,
                    );
                    return Err(PhaseError::Normal(LsError::new(
                        OP,
                        "CreateOrUpdateExecution",
                        format!(
                            "execution {ns}/{} exists and is not owned by this installation: remove it or rename one of them",
                            name(inst)
                        ),
                    )));
                }
                writes.push(Write::Create(exec));
            }
        }
        s.execution_reference = Some(ObjectReference {
            name: name(inst).to_string(),
            namespace: ns.to_string(),
        });
        // Landscaper's `ExecutionOperation.Ensure`: only with deploy items to template.
        if !rendered.deploy_items.is_empty() {
            set_own_condition(
                &mut s,
                CONDITION_RECONCILE_EXECUTION,
                CONDITION_TRUE,
                REASON_EXECUTION_DEPLOYED,
                MESSAGE_EXECUTION_DEPLOYED,
                now,
            );
        }
    }
    // (i) predecessors and imports unchanged meanwhile.
    if needs_predecessor_check(inst)
        && check_predecessors(inst, field(&iv.predecessors_after, "predecessors")?)? != predecessors
    {
        return Err(PhaseError::Normal(LsError::new(
            OP,
            "comparePredecessorMaps",
            "some predecessor was changed during fetching the import data",
        )));
    }
    s.imports_hash = Some(hash);
    Ok((Phase::CleanupOrphaned, writes, s))
}

/// Sets one of Landscaper's own conditions (`ReconcileExecution`, `CreateExports`) on the
/// installation's status, as Landscaper's `UpdatedCondition` does.
fn set_own_condition(
    status: &mut InstallationStatus,
    condition_type: &str,
    condition_status: &str,
    reason: &str,
    message: &str,
    now: &str,
) {
    let list = status.conditions.get_or_insert_with(Vec::new);
    set_condition(list, condition_type, condition_status, reason, message, now);
}

/// `Completing`: context cleanup, unchanged imports and spec, exports written.
fn phase_completing(
    value: &Value,
    inst: &Installation,
    status: &InstallationStatus,
    job_id: &str,
    view: &View,
    now: &Now,
    error_status: &mut InstallationStatus,
) -> PhaseResult {
    const OP: &str = "handlePhaseCompleting";
    let Some(cv) = &view.completing else {
        return Err(not_loaded("Completing view"));
    };
    let ns = namespace(inst);
    let mut writes = Vec::new();
    // (a) objects of older jobs in the own scope go.
    let scope = own_scope(inst);
    for o in field(&cv.context_objects, "own scope")? {
        let labels = object::labels(o);
        if labels.get(DATA_OBJECT_CONTEXT_LABEL).map(String::as_str) != Some(&scope) {
            continue;
        }
        if labels
            .get(DATA_OBJECT_JOB_ID_LABEL)
            .is_some_and(|j| j != job_id)
            && let Ok(kind) = object::kind_of(o)
        {
            writes.push(Write::Delete {
                key: ObjectKey::new(kind, ns, object::name(o)),
                resource_version: None,
            });
        }
    }
    // (b) imports and spec unchanged.
    field(&cv.blueprint, "blueprint")?;
    check_unchanged(inst, status, field(&cv.values, "import values")?)?;
    // (c), (d) exports (marked when the export templates may have copied Secret values).
    let exports = field(&cv.exports, "exports")?;
    let from_secret = *field(&cv.from_secret, "from-secret mark")?;
    let current = field(&cv.current, "export objects")?;
    for o in export_objects(inst, value, exports, job_id, from_secret)? {
        let key = key_of(&o).map_err(|e| {
            PhaseError::Fatal(LsError::new(
                OP,
                "CreateOrUpdateExports",
                e.error().message.clone(),
            ))
        })?;
        let stored = current.get(&key);
        if let Some(stored) = stored {
            let owner = object::owner_uids(stored);
            if !owner.is_empty() && !owner.iter().any(|u| u == object::uid(value)) {
                let export = object::labels(&o)
                    .get(DATA_OBJECT_KEY_LABEL)
                    .cloned()
                    .unwrap_or_default();
                let (reason, message) = if key.kind == Kind::Target {
                    (
                        REASON_CREATE_TARGETS,
                        format!("unable to create target for export {export}"),
                    )
                } else {
                    (
                        REASON_CREATE_DATA_OBJECTS,
                        format!("unable to create data object for export {export}"),
                    )
                };
                set_own_condition(
                    error_status,
                    CONDITION_CREATE_EXPORTS,
                    CONDITION_FALSE,
                    reason,
                    &message,
                    &now.time,
                );
                return Err(PhaseError::Fatal(LsError::new(
                    OP,
                    "CreateOrUpdateExports",
                    format!("{key} is exported by another installation"),
                )));
            }
        }
        if let Some(w) = upsert(stored, o) {
            writes.push(w);
        }
    }
    let mut s = status.clone();
    set_own_condition(
        &mut s,
        CONDITION_CREATE_EXPORTS,
        CONDITION_TRUE,
        REASON_DATA_OBJECTS_CREATED,
        MESSAGE_DATA_OBJECTS_CREATED,
        &now.time,
    );
    // (e) Issue 19: with a ready postcondition the installation counts as ready (its job ends)
    // only once it holds; its successors and its parent wait, the progressing timeout bounds it.
    let this = json!({
        "status": value.get("status").cloned().unwrap_or(json!({})),
        "exports": Value::Object(exports.clone()),
    });
    let since = status
        .transition_times
        .as_ref()
        .and_then(|t| t.wait_time.as_deref());
    let imports = Value::Object(field(&cv.values, "import values")?.clone());
    match workflow::own_postcondition(
        inst,
        ConditionKind::ReadyPostcondition,
        &imports,
        &this,
        (now.time.as_str(), since, now.ready_timeout),
    )
    .map_err(|m| PhaseError::Fatal(LsError::new(OP, "InvalidWorkflowCondition", m)))?
    {
        workflow::Postcondition::Absent => {}
        workflow::Postcondition::Evaluated(r) if r.is_met() => {
            workflow::record_own(&mut s, ConditionKind::ReadyPostcondition, &r, &now.time);
        }
        workflow::Postcondition::Evaluated(r) => {
            workflow::record_own(
                error_status,
                ConditionKind::ReadyPostcondition,
                &r,
                &now.time,
            );
            return Err(PhaseError::Normal(
                unfinished(
                    OP,
                    format!("waiting for the readyPostcondition: {}", r.message()),
                )
                .with_code(ERR_FOR_INFO_ONLY),
            ));
        }
        workflow::Postcondition::TimedOut(r, timeout) => {
            workflow::record_own(
                error_status,
                ConditionKind::ReadyPostcondition,
                &r,
                &now.time,
            );
            return Err(PhaseError::Fatal(LsError::new(
                OP,
                "ReadyPostconditionTimeout",
                format!(
                    "readyPostcondition not met within the progressing timeout of {}s: {}",
                    timeout.as_secs(),
                    r.message()
                ),
            )));
        }
    }
    Ok((Phase::Succeeded, writes, s))
}

/// `InitDelete`: successors first (unless ignored), then the children are deleted.
fn phase_init_delete(inst: &Installation, status: &InstallationStatus, view: &View) -> PhaseResult {
    const OP: &str = "handleDeletionPhaseInit";
    if !ignores_successors(inst) {
        let importers = field(&view.importers, "importers")?;
        check_successors(inst, importers, &view.deletion_closures)?;
    }
    let without_uninstall = annotation(inst, DELETE_WITHOUT_UNINSTALL_ANNOTATION) == Some("true");
    let children = match &view.children {
        Some(Ok(c)) => c,
        Some(Err(e)) => {
            return Err(PhaseError::Normal(LsError::new(
                OP,
                "ListSubobjects",
                e.clone(),
            )));
        }
        None => return Err(not_loaded("children")),
    };
    let ns = namespace(inst);
    let mut writes = Vec::new();
    let all = children
        .subs
        .iter()
        .map(|(v, _)| (v, Kind::Installation))
        .chain(children.execution.iter().map(|(v, _)| (v, Kind::Execution)));
    for (v, kind) in all {
        if without_uninstall {
            let mut v = v.clone();
            set_annotation(&mut v, DELETE_WITHOUT_UNINSTALL_ANNOTATION, Some("true"));
            writes.push(Write::Update(v));
        }
        if object::deletion_timestamp(v).is_none() {
            writes.push(Write::Delete {
                key: ObjectKey::new(kind, ns, object::name(v)),
                resource_version: None,
            });
        }
    }
    Ok((Phase::TriggerDelete, writes, status.clone()))
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
