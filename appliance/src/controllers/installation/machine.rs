//! The installation phase machine's decisions, as pure functions of the installation, its
//! children and the time (Landscaper's `checks.go`, `handleReconcilePhase` and the phase
//! handlers). The reconciler reads the store, calls these, and writes the results.

use landscaper_store::model::constants::*;
use landscaper_store::model::{
    Execution, Installation, InstallationStatus, Phase, TransitionTimes,
};

use super::dataflow::is_successor;
use crate::controllers::jobs::{is_deletion_phase, is_final, is_finished};
use crate::controllers::lserror::{LsError, updated_error};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::installation::dataflow;
    use landscaper_store::model::{ExecutionStatus, ObjectMeta};
    use std::collections::BTreeMap;

    fn inst(name: &str) -> Installation {
        Installation {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                generation: Some(1),
                finalizers: Some(vec![LANDSCAPER_FINALIZER.into()]),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn with_job(mut i: Installation, job: &str, finished: &str, phase: Phase) -> Installation {
        i.status = Some(InstallationStatus {
            job_id: Some(job.into()),
            job_id_finished: Some(finished.into()),
            phase: Some(phase),
            observed_generation: 1,
            ..Default::default()
        });
        i
    }

    fn annotate(mut i: Installation, k: &str, v: &str) -> Installation {
        i.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(k.into(), v.into());
        i
    }

    #[test]
    fn a_root_starts_a_job_only_on_the_annotation_or_its_first_deletion() {
        let idle = with_job(inst("a"), "j1", "j1", Phase::Succeeded);
        assert_eq!(pre_action(&idle, true), PreAction::Idle);
        let asked = annotate(idle.clone(), OPERATION_ANNOTATION, OPERATION_RECONCILE);
        assert_eq!(pre_action(&asked, true), PreAction::StartJob);
        let mut deleted = idle.clone();
        deleted.metadata.deletion_timestamp = Some("t".into());
        assert_eq!(pre_action(&deleted, true), PreAction::StartJob);
        // A deletion that already ran (DeleteFailed) needs the annotation again.
        let failed = with_job(deleted.clone(), "j2", "j2", Phase::DeleteFailed);
        assert_eq!(pre_action(&failed, true), PreAction::Idle);
        let retried = annotate(failed, OPERATION_ANNOTATION, OPERATION_RECONCILE);
        assert_eq!(pre_action(&retried, true), PreAction::StartJob);
    }

    #[test]
    fn the_annotation_waits_for_the_running_job() {
        let running = with_job(inst("a"), "j2", "j1", Phase::Progressing);
        let asked = annotate(running, OPERATION_ANNOTATION, OPERATION_RECONCILE);
        assert_eq!(pre_action(&asked, true), PreAction::RunPhases);
    }

    #[test]
    fn a_non_root_annotation_is_removed_without_effect() {
        let child = annotate(
            with_job(inst("c"), "j1", "j1", Phase::Succeeded),
            OPERATION_ANNOTATION,
            OPERATION_RECONCILE,
        );
        assert_eq!(
            pre_action(&child, false),
            PreAction::RemoveReconcileAnnotation
        );
    }

    #[test]
    fn the_finalizer_comes_first_and_interrupt_before_jobs() {
        let mut fresh = inst("a");
        fresh.metadata.finalizers = None;
        assert_eq!(pre_action(&fresh, true), PreAction::AddFinalizer);
        let interrupted = annotate(
            with_job(inst("a"), "j2", "j1", Phase::Progressing),
            OPERATION_ANNOTATION,
            OPERATION_INTERRUPT,
        );
        assert_eq!(pre_action(&interrupted, true), PreAction::Interrupt);
    }

    #[test]
    fn reconcile_if_changed_adds_the_annotation_only_when_finished_and_changed() {
        let mut changed = annotate(
            with_job(inst("a"), "j1", "j1", Phase::Succeeded),
            RECONCILE_IF_CHANGED_ANNOTATION,
            "true",
        );
        changed.metadata.generation = Some(2);
        assert_eq!(
            pre_action(&changed, true),
            PreAction::AddReconcileAnnotation
        );
        assert_ne!(
            pre_action(&changed, false),
            PreAction::AddReconcileAnnotation
        );
        let mut running = changed.clone();
        running.status.as_mut().unwrap().job_id = Some("j2".into());
        assert_eq!(pre_action(&running, true), PreAction::RunPhases);
    }

    #[test]
    fn entry_moves_final_phases_to_init_or_init_delete() {
        let done = with_job(inst("a"), "j2", "j1", Phase::Succeeded);
        let s = enter_job(&done, "now").unwrap();
        assert_eq!(s.phase, Some(Phase::Init));
        let mut deleting = done.clone();
        deleting.metadata.deletion_timestamp = Some("t".into());
        assert_eq!(
            enter_job(&deleting, "now").unwrap().phase,
            Some(Phase::InitDelete)
        );
        let running = with_job(inst("a"), "j2", "j1", Phase::Progressing);
        assert_eq!(enter_job(&running, "now"), None);
    }

    #[test]
    fn a_final_phase_sets_job_id_finished_in_the_same_status() {
        let s = with_job(inst("a"), "j2", "j1", Phase::Completing)
            .status
            .unwrap();
        let done = set_phase(&s, Phase::Succeeded, None, "now");
        assert_eq!(done.job_id_finished.as_deref(), Some("j2"));
        let waiting = set_phase(
            &s,
            Phase::Progressing,
            Some(&LsError::new("o", "r", "m")),
            "now",
        );
        assert_eq!(waiting.job_id_finished.as_deref(), Some("j1"));
        assert_eq!(waiting.last_error.unwrap().message, "m");
    }

    fn exec(job: &str, finished: &str, phase: Phase) -> Execution {
        Execution {
            metadata: ObjectMeta {
                name: Some("e".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            status: Some(ExecutionStatus {
                job_id: Some(job.into()),
                job_id_finished: Some(finished.into()),
                phase: Some(phase),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn progressing_waits_for_every_child_and_names_failures() {
        let sub_done = with_job(inst("s1"), "j", "j", Phase::Succeeded);
        let sub_running = with_job(inst("s2"), "j", "x", Phase::Progressing);
        match progressing(&[sub_done.clone(), sub_running], None) {
            ChildrenProgress::Waiting(e) => {
                assert!(e.message.contains("s2 is not finished yet"));
                assert!(e.has_code(ERR_UNFINISHED));
            }
            other => panic!("{other:?}"),
        }
        let e = exec("j", "x", Phase::Progressing);
        assert!(matches!(
            progressing(std::slice::from_ref(&sub_done), Some(&e)),
            ChildrenProgress::Waiting(_)
        ));
        let e = exec("j", "j", Phase::Succeeded);
        assert_eq!(
            progressing(std::slice::from_ref(&sub_done), Some(&e)),
            ChildrenProgress::AllSucceeded
        );
        let failed = with_job(inst("s3"), "j", "j", Phase::Failed);
        let e = exec("j", "j", Phase::Failed);
        match progressing(&[sub_done, failed], Some(&e)) {
            ChildrenProgress::Failed(err) => {
                assert_eq!(
                    err.message,
                    "Failed sub-installation(s): s3Execution is failed"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn deletion_waits_while_any_child_runs_even_if_another_failed() {
        let failed = with_job(inst("s1"), "j", "j", Phase::DeleteFailed);
        let running = with_job(inst("s2"), "j", "x", Phase::Deleting);
        assert_eq!(
            deleting("j", &[failed.clone(), running], None),
            DeletionProgress::Pending
        );
        assert_eq!(deleting("j", &[failed], None), DeletionProgress::Stuck);
        assert_eq!(deleting("j", &[], None), DeletionProgress::AllGone);
    }

    #[test]
    fn orphans_are_triggered_and_all_failed_orphans_fail_the_parent() {
        let a = with_job(inst("a"), "old", "old", Phase::Succeeded);
        assert_eq!(
            cleanup_orphaned("j", &[a]),
            OrphanCleanup::Pending {
                trigger: vec!["a".into()]
            }
        );
        let b = with_job(inst("b"), "j", "j", Phase::DeleteFailed);
        assert_eq!(cleanup_orphaned("j", &[b]), OrphanCleanup::AllFailed);
        assert_eq!(cleanup_orphaned("j", &[]), OrphanCleanup::AllGone);
    }

    /// An installation exporting DataObject `exports` and importing `imports`.
    fn flow(name: &str, exports: &str, imports: &[&str], deleting: bool) -> Installation {
        let mut i = inst(name);
        let imports: Vec<serde_json::Value> = imports
            .iter()
            .map(|r| serde_json::json!({"name": format!("in-{r}"), "dataRef": r}))
            .collect();
        i.spec = serde_json::from_value(serde_json::json!({
            "blueprint": {},
            "imports": {"data": imports},
            "exports": {"data": [{"name": "out", "dataRef": exports}]},
        }))
        .unwrap();
        if deleting {
            i.metadata.deletion_timestamp = Some("t".into());
        }
        i
    }

    #[test]
    fn a_wait_cycle_of_deleting_siblings_is_recognised() {
        // a <-> b import each other's exports, both deleted: each ignores the other.
        let a = flow("a", "a-out", &["b-out"], true);
        let b = flow("b", "b-out", &["a-out"], true);
        assert!(dataflow::is_successor(&a, &b));
        assert!(in_deletion_cycle(&a, &b, std::slice::from_ref(&a)));
        assert!(in_deletion_cycle(&b, &a, std::slice::from_ref(&b)));
        // A successor that is not being deleted still blocks.
        let b_kept = flow("b", "b-out", &["a-out"], false);
        assert!(!in_deletion_cycle(&a, &b_kept, std::slice::from_ref(&a)));
        // An ordinary successor (no way back to a) blocks although it is being deleted.
        let c = flow("c", "c-out", &["a-out"], true);
        assert!(!in_deletion_cycle(&a, &c, &[]));
    }

    #[test]
    fn a_longer_cycle_counts_only_through_deleting_siblings() {
        // a -> b -> c -> a (each imports the previous one's export).
        let a = flow("a", "a-out", &["c-out"], true);
        let b = flow("b", "b-out", &["a-out"], true);
        let c = flow("c", "c-out", &["b-out"], true);
        assert!(in_deletion_cycle(&a, &b, &[c.clone(), a.clone()]));
        // c still exists (its file is there): b waits for c, so a waits for b.
        let c_kept = flow("c", "c-out", &["b-out"], false);
        assert!(!in_deletion_cycle(&a, &b, &[c_kept]));
    }

    #[test]
    fn a_deleted_installation_skips_init_but_finishes_other_install_phases() {
        let mut i = with_job(inst("a"), "j2", "j1", Phase::Init);
        assert!(!skips_init_for_deletion(&i));
        i.metadata.deletion_timestamp = Some("t".into());
        assert!(skips_init_for_deletion(&i));
        i.status.as_mut().unwrap().phase = Some(Phase::Progressing);
        assert!(!skips_init_for_deletion(&i));
        assert!(gives_up_for_deletion(&i, &Phase::Completing));
        assert!(!gives_up_for_deletion(&i, &Phase::Progressing));
        i.metadata.deletion_timestamp = None;
        assert!(!gives_up_for_deletion(&i, &Phase::Completing));
    }

    #[test]
    fn only_named_contexts_other_than_default_are_required() {
        let mut i = inst("a");
        assert_eq!(required_context(&i), None);
        i.spec.context = Some("default".into());
        assert_eq!(required_context(&i), None);
        i.spec.context = Some("edge".into());
        assert_eq!(required_context(&i), Some("edge"));
        let e = missing_context_error("edge");
        assert_eq!(
            (e.operation.as_str(), e.reason.as_str(), e.message.as_str()),
            (
                "InitPrerequisites",
                "CalculateContext",
                "Op: Context - Reason: GetContext - Message: contexts.landscaper.gardener.cloud \"edge\" not found"
            )
        );
    }
}
