//! Unit tests of the pure installation phase machine: its decision functions and [`step`]
//! over hand-built views (no store).

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
