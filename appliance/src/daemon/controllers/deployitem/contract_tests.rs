//! Tests of the pure contract: every decision of [`plan`] and the status changes of deployer
//! answers, plus property tests of the contract's invariants.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use landscaper_deployers::{DeleteResult, DeployerError, ReconcileResult};
use landscaper_store::clock::format_time;
use landscaper_store::model::constants::{
    DELETE_WITHOUT_UNINSTALL_ANNOTATION, ERR_CONFIGURATION_PROBLEM, ERR_TIMEOUT,
    MOCK_DEPLOYER_TYPE, OPERATION_ANNOTATION, OPERATION_TEST_RECONCILE,
};
use landscaper_store::model::{
    DeployItem, DeployItemStatus, DeployerInformation, Duration as LsDuration,
    Error as StatusError, ObjectMeta, ObjectReference, Phase, Target, TargetSpec, TransitionTimes,
};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::daemon::controllers::deployitem::target::ResolvedTarget;

const UNKNOWN_TYPE: &str = "landscaper.gardener.cloud/dummy";

fn now() -> Timestamp {
    "2024-05-01T12:00:00Z".parse().unwrap()
}

/// `now` shifted by `secs` seconds, in Kubernetes' format.
fn at(secs: i64) -> String {
    format_time(now().checked_add(SignedDuration::from_secs(secs)).unwrap())
}

fn timeouts() -> Timeouts {
    Timeouts {
        pickup: Some(Duration::from_secs(300)),
        progressing: Duration::from_secs(600),
    }
}

fn info() -> DeployerInformation {
    DeployerInformation {
        identity: "mock.deployer.landscaper.gardener.cloud-1".into(),
        name: "mock.deployer.landscaper.gardener.cloud".into(),
        version: "v0.1.0".into(),
    }
}

/// A deploy item of the previous job (`Succeeded`) just triggered with job `j2`.
fn triggered(deployer_type: &str) -> DeployItem {
    let mut meta = ObjectMeta::namespaced("ns", "di");
    meta.uid = Some("uid-1".into());
    meta.generation = Some(2);
    let mut di = DeployItem {
        metadata: meta,
        ..Default::default()
    };
    di.spec.r#type = deployer_type.into();
    di.spec.config = Some(
        json!({"apiVersion": "mock.deployer.landscaper.gardener.cloud/v1alpha1", "kind": "ProviderConfiguration"}),
    );
    di.status = Some(DeployItemStatus {
        phase: Some(Phase::Succeeded),
        observed_generation: 1,
        job_id: Some("j2".into()),
        job_id_finished: Some("j1".into()),
        job_id_generation_time: Some(at(-1)),
        last_reconcile_time: Some(at(-100)),
        last_error: Some(StatusError {
            operation: "old".into(),
            reason: "old".into(),
            message: "old".into(),
            ..Default::default()
        }),
        transition_times: Some(TransitionTimes {
            trigger_time: Some(at(-1)),
            ..Default::default()
        }),
        ..Default::default()
    });
    di
}

/// A picked-up item in `phase`, initialised `secs_ago` seconds ago.
fn running(phase: Phase, secs_ago: i64) -> DeployItem {
    let mut di = triggered(MOCK_DEPLOYER_TYPE);
    let s = di.status.as_mut().unwrap();
    s.phase = Some(phase);
    s.last_reconcile_time = Some(at(-secs_ago));
    s.job_id_generation_time = Some(at(-secs_ago - 1));
    s.last_error = None;
    s.transition_times = Some(TransitionTimes {
        trigger_time: Some(at(-secs_ago - 1)),
        init_time: Some(at(-secs_ago)),
        ..Default::default()
    });
    di
}

fn deleting(mut di: DeployItem) -> DeployItem {
    di.metadata.deletion_timestamp = Some(at(-1));
    di.metadata.finalizers = Some(vec!["finalizer.landscaper.gardener.cloud".into()]);
    di
}

fn run_with(
    di: &DeployItem,
    served: bool,
    target: TargetLookup,
    context_error: Option<&str>,
    timeouts: Timeouts,
) -> Plan {
    let info = info();
    let input = Input {
        item: di,
        deployer: served.then_some(&info),
        target: &target,
        context_error,
        now: now(),
        timeouts,
    };
    plan(&input, || "new-job".to_string())
}

fn run(di: &DeployItem, served: bool, target: TargetLookup) -> Plan {
    run_with(di, served, target, None, timeouts())
}

fn status_of(decision: &Decision) -> &DeployItemStatus {
    match decision {
        Decision::Conclude { status, .. }
        | Decision::CallReconcile { status }
        | Decision::CallDelete { status }
        | Decision::RemoveFinalizerOnly { status } => status,
        other => panic!("no status in {other:?}"),
    }
}

fn concluded(decision: &Decision) -> (&DeployItemStatus, Conclusion, Option<Duration>) {
    match decision {
        Decision::Conclude {
            status,
            conclusion,
            requeue_after,
        } => (status, *conclusion, *requeue_after),
        other => panic!("not concluded: {other:?}"),
    }
}

fn cluster_target(user: Value) -> TargetLookup {
    let kubeconfig =
        json!({"apiVersion": "v1", "kind": "Config", "users": [{"name": "u", "user": user}]});
    TargetLookup::Found(Box::new(ResolvedTarget::inline(Target {
        metadata: ObjectMeta::namespaced("ns", "cluster"),
        spec: TargetSpec {
            r#type: "landscaper.gardener.cloud/kubernetes-cluster".into(),
            config: Some(json!({"kubeconfig": kubeconfig.to_string()})),
            secret_ref: None,
        },
        ..Default::default()
    })))
}

fn error_codes(status: &DeployItemStatus) -> Vec<String> {
    status
        .last_error
        .as_ref()
        .and_then(|e| e.codes.clone())
        .unwrap_or_default()
}

// --- skip and pickup ---------------------------------------------------------------------------

#[test]
fn finished_items_are_left_alone() {
    let mut di = triggered(MOCK_DEPLOYER_TYPE);
    di.status.as_mut().unwrap().job_id_finished = Some("j2".into());
    assert_eq!(
        run(&di, true, TargetLookup::NotReferenced).decision,
        Decision::Skip
    );
    assert_eq!(
        run(&di, false, TargetLookup::NotReferenced).decision,
        Decision::Skip
    );
    // An item without any status has no job.
    let mut fresh = triggered(MOCK_DEPLOYER_TYPE);
    fresh.status = None;
    assert_eq!(
        run(&fresh, true, TargetLookup::NotReferenced).decision,
        Decision::Skip
    );
}

#[test]
fn a_new_job_is_picked_up_with_init() {
    let di = triggered(MOCK_DEPLOYER_TYPE);
    let plan = run(&di, true, TargetLookup::NotReferenced);
    assert!(plan.add_finalizer);
    assert!(!plan.remove_test_reconcile_annotation);
    let Decision::CallReconcile { status } = &plan.decision else {
        panic!("{:?}", plan.decision)
    };
    assert_eq!(status.phase, Some(Phase::Init));
    assert_eq!(status.observed_generation, 2);
    assert_eq!(status.last_reconcile_time.as_deref(), Some(at(0).as_str()));
    assert_eq!(status.deployer, Some(info()));
    let times = status.transition_times.as_ref().unwrap();
    assert_eq!(times.init_time.as_deref(), Some(at(0).as_str()));
    assert_eq!(
        times.trigger_time.as_deref(),
        Some(at(-1).as_str()),
        "trigger time is kept"
    );
    assert_eq!(status.last_error, None, "errors are reset");
    assert_eq!(status.job_id_finished.as_deref(), Some("j1"));
    assert!(has_been_picked_up(status));
}

#[test]
fn an_empty_phase_is_picked_up_and_a_running_phase_is_continued() {
    let mut di = triggered(MOCK_DEPLOYER_TYPE);
    di.status.as_mut().unwrap().phase = Some(Phase::from(String::new()));
    let plan = run(&di, true, TargetLookup::NotReferenced);
    assert_eq!(status_of(&plan.decision).phase, Some(Phase::Init));

    let di = running(Phase::Progressing, 10);
    let plan = run(&di, true, TargetLookup::NotReferenced);
    let status = status_of(&plan.decision);
    assert!(matches!(plan.decision, Decision::CallReconcile { .. }));
    assert_eq!(
        status,
        di.status.as_ref().unwrap(),
        "a running job is not re-initialised"
    );
}

#[test]
fn deletion_is_picked_up_with_init_delete() {
    let di = deleting(triggered(MOCK_DEPLOYER_TYPE));
    let plan = run(&di, true, TargetLookup::NotReferenced);
    assert!(!plan.add_finalizer);
    let Decision::CallDelete { status } = &plan.decision else {
        panic!("{:?}", plan.decision)
    };
    assert_eq!(status.phase, Some(Phase::InitDelete));
    assert_eq!(status.last_reconcile_time.as_deref(), Some(at(0).as_str()));
}

#[test]
fn delete_without_uninstall_only_removes_the_finalizer() {
    let mut di = deleting(triggered(MOCK_DEPLOYER_TYPE));
    di.metadata
        .set_annotation(DELETE_WITHOUT_UNINSTALL_ANNOTATION, "true");
    let plan = run(&di, true, TargetLookup::NotReferenced);
    assert!(
        matches!(plan.decision, Decision::RemoveFinalizerOnly { .. }),
        "{plan:?}"
    );
    // Only the value "true" counts.
    di.metadata
        .set_annotation(DELETE_WITHOUT_UNINSTALL_ANNOTATION, "yes");
    let plan = run(&di, true, TargetLookup::NotReferenced);
    assert!(matches!(plan.decision, Decision::CallDelete { .. }));
}

#[test]
fn update_on_change_only_finishes_an_unchanged_success_without_the_deployer() {
    let mut di = triggered(MOCK_DEPLOYER_TYPE);
    di.spec.update_on_change_only = Some(true);
    di.status.as_mut().unwrap().observed_generation = 2;
    let plan = run(&di, true, TargetLookup::NotReferenced);
    assert!(!plan.add_finalizer);
    let (status, conclusion, requeue) = concluded(&plan.decision);
    assert_eq!(conclusion, Conclusion::Unchanged);
    assert_eq!(status.phase, Some(Phase::Succeeded));
    assert_eq!(status.job_id_finished.as_deref(), Some("j2"));
    assert_eq!(status.last_error, None);
    assert_eq!(status.last_reconcile_time.as_deref(), Some(at(0).as_str()));
    let times = status.transition_times.as_ref().unwrap();
    assert_eq!(times.finished_time.as_deref(), Some(at(0).as_str()));
    assert_eq!(requeue, None);

    // A changed spec, a failed last run or a deletion are reconciled.
    let mut changed = di.clone();
    changed.metadata.generation = Some(3);
    assert!(matches!(
        run(&changed, true, TargetLookup::NotReferenced).decision,
        Decision::CallReconcile { .. }
    ));
    let mut failed = di.clone();
    failed.status.as_mut().unwrap().phase = Some(Phase::Failed);
    assert!(matches!(
        run(&failed, true, TargetLookup::NotReferenced).decision,
        Decision::CallReconcile { .. }
    ));
    assert!(matches!(
        run(&deleting(di), true, TargetLookup::NotReferenced).decision,
        Decision::CallDelete { .. }
    ));
}

#[test]
fn test_reconcile_starts_a_job_on_a_finished_item() {
    let mut di = triggered(MOCK_DEPLOYER_TYPE);
    di.status.as_mut().unwrap().job_id_finished = Some("j2".into());
    di.metadata
        .set_annotation(OPERATION_ANNOTATION, OPERATION_TEST_RECONCILE);
    let plan = run(&di, true, TargetLookup::NotReferenced);
    assert!(plan.remove_test_reconcile_annotation);
    let Decision::CallReconcile { status } = &plan.decision else {
        panic!("{:?}", plan.decision)
    };
    assert_eq!(status.job_id.as_deref(), Some("new-job"));
    assert_eq!(status.phase, Some(Phase::Init));
    let times = status.transition_times.as_ref().unwrap();
    assert_eq!(times.trigger_time.as_deref(), Some(at(0).as_str()));
    // Without a deployer nothing happens.
    assert_eq!(
        run(&di, false, TargetLookup::NotReferenced).decision,
        Decision::Skip
    );
}

// --- preconditions -----------------------------------------------------------------------------

#[test]
fn a_missing_target_fails_the_item() {
    let di = triggered(MOCK_DEPLOYER_TYPE);
    let plan = run(&di, true, TargetLookup::NotFound);
    assert!(!plan.add_finalizer);
    let (status, conclusion, requeue) = concluded(&plan.decision);
    assert_eq!(conclusion, Conclusion::NoTargetFound);
    assert_eq!(status.phase, Some(Phase::Failed));
    assert_eq!(status.job_id_finished.as_deref(), Some("j2"));
    let e = status.last_error.as_ref().unwrap();
    assert_eq!(e.reason, "NoTargetFound");
    assert_eq!(
        e.message,
        "setting deploy item to failed due to missing target"
    );
    assert_eq!(requeue, None);
    // It was not picked up: the old reconcile time stays.
    assert_eq!(
        status.last_reconcile_time.as_deref(),
        Some(at(-100).as_str())
    );

    let plan = run(&deleting(di), true, TargetLookup::NotFound);
    assert_eq!(concluded(&plan.decision).0.phase, Some(Phase::DeleteFailed));
}

#[test]
fn an_invalid_target_kubeconfig_is_a_configuration_problem() {
    let di = triggered(MOCK_DEPLOYER_TYPE);
    let plan = run(
        &di,
        true,
        cluster_target(json!({"tokenFile": "/var/run/token"})),
    );
    assert!(plan.add_finalizer);
    let (status, conclusion, requeue) = concluded(&plan.decision);
    assert_eq!(conclusion, Conclusion::InvalidTarget);
    assert_eq!(status.phase, Some(Phase::Failed));
    assert_eq!(status.job_id_finished.as_deref(), Some("j2"));
    assert_eq!(requeue, None);
    let e = status.last_error.as_ref().unwrap();
    assert_eq!(
        (e.operation.as_str(), e.reason.as_str()),
        ("reconcile", "ValidateTarget")
    );
    assert!(
        e.message
            .contains("token files are not supported in a target kubeconfig"),
        "{}",
        e.message
    );
    assert_eq!(error_codes(status), vec![ERR_CONFIGURATION_PROBLEM]);
    // Picked up first, as the deployer library does.
    assert_eq!(status.last_reconcile_time.as_deref(), Some(at(0).as_str()));

    let plan = run(
        &deleting(di.clone()),
        true,
        cluster_target(json!({"exec": {"command": "x"}})),
    );
    let (status, _, _) = concluded(&plan.decision);
    assert_eq!(status.phase, Some(Phase::DeleteFailed));
    assert_eq!(status.last_error.as_ref().unwrap().operation, "delete");

    let plan = run(&di, true, cluster_target(json!({"token": "t"})));
    assert!(matches!(plan.decision, Decision::CallReconcile { .. }));
}

#[test]
fn an_empty_configuration_is_a_configuration_problem() {
    for config in [None, Some(Value::Null)] {
        let mut di = triggered(MOCK_DEPLOYER_TYPE);
        di.spec.config = config;
        let plan = run(&di, true, TargetLookup::NotReferenced);
        let (status, conclusion, _) = concluded(&plan.decision);
        assert_eq!(conclusion, Conclusion::ConfigurationMissing);
        assert_eq!(status.phase, Some(Phase::Failed));
        let e = status.last_error.as_ref().unwrap();
        assert_eq!(e.reason, "ProviderConfigurationMissing");
        assert_eq!(e.message, "provider configuration missing");
        assert_eq!(error_codes(status), vec![ERR_CONFIGURATION_PROBLEM]);
        // Deletion does not need a configuration.
        let plan = run(&deleting(di), true, TargetLookup::NotReferenced);
        assert!(matches!(plan.decision, Decision::CallDelete { .. }));
    }
}

#[test]
fn a_missing_context_is_retried() {
    let mut di = triggered(MOCK_DEPLOYER_TYPE);
    di.spec.context = Some("other".into());
    let message = "contexts.landscaper.gardener.cloud \"other\" not found";
    let plan = run_with(
        &di,
        true,
        TargetLookup::NotReferenced,
        Some(message),
        timeouts(),
    );
    let (status, conclusion, requeue) = concluded(&plan.decision);
    assert_eq!(conclusion, Conclusion::ContextMissing);
    assert_eq!(
        status.phase,
        Some(Phase::Init),
        "recoverable: the phase stays"
    );
    assert_eq!(status.job_id_finished.as_deref(), Some("j1"));
    assert_eq!(
        status.last_error.as_ref().unwrap().reason,
        "GetLandscaperContext"
    );
    assert_eq!(requeue, Some(RETRY_INTERVAL));
}

// --- progressing timeout -------------------------------------------------------------------------

#[test]
fn a_progressing_timeout_keeps_the_cause_of_the_wait() {
    let mut di = running(Phase::Progressing, 31);
    di.spec.r#type = "landscaper.gardener.cloud/kubernetes-manifest".into();
    di.spec.timeout = Some(LsDuration::parse("30s").unwrap());
    let cause = "apps/v1, Kind=Deployment echo/acc is not ready: not enough ready replicas (1/2)";
    di.status.as_mut().unwrap().last_error = Some(StatusError {
        operation: "DefaultCheckResourcesReadinessManifest".into(),
        reason: "ObjectNotReady".into(),
        message: cause.into(),
        ..Default::default()
    });
    let plan = run(&di, true, TargetLookup::NotReferenced);
    let (status, conclusion, _) = concluded(&plan.decision);
    assert_eq!(conclusion, Conclusion::ProgressingTimeout);
    let e = status.last_error.as_ref().unwrap();
    assert_eq!(e.reason, "ProgressingTimeout");
    assert_eq!(
        e.message,
        format!(
            r#"timeout at: "manifest deployer: default readiness checks"; last error: {cause}"#
        )
    );
    assert_eq!(error_codes(status), vec![ERR_TIMEOUT]);
    // A custom check names its checkpoint; another operation keeps the default checkpoint.
    let with = |operation: &str| {
        let mut d = di.clone();
        d.status
            .as_mut()
            .unwrap()
            .last_error
            .as_mut()
            .unwrap()
            .operation = operation.into();
        progressing_timeout_with_cause(&d, d.status.as_ref().unwrap().last_error.as_ref()).message
    };
    assert!(
        with("CustomCheckResourcesReadinessHelm").starts_with(
            r#"timeout at: "manifest deployer: custom readiness checks"; last error: "#
        )
    );
    assert!(
        with("ApplyObjects")
            .starts_with(r#"timeout at: "manifest deployer: start reconcile"; last error: "#)
    );
}

#[test]
fn the_progressing_timeout_fails_a_running_item() {
    let mut di = running(Phase::Progressing, 31);
    di.spec.timeout = Some(LsDuration::parse("30s").unwrap());
    let plan = run(&di, true, TargetLookup::NotReferenced);
    let (status, conclusion, requeue) = concluded(&plan.decision);
    assert_eq!(conclusion, Conclusion::ProgressingTimeout);
    assert_eq!(status.phase, Some(Phase::Failed));
    assert_eq!(status.job_id_finished, status.job_id);
    assert_eq!(requeue, None);
    let e = status.last_error.as_ref().unwrap();
    assert_eq!(e.reason, "ProgressingTimeout");
    assert_eq!(e.operation, PROGRESSING_TIMEOUT_OPERATION);
    assert_eq!(e.message, r#"timeout at: "mock deployer: start reconcile""#);
    assert_eq!(error_codes(status), vec![ERR_TIMEOUT]);

    let plan = run(&deleting(di.clone()), true, TargetLookup::NotReferenced);
    let (status, _, _) = concluded(&plan.decision);
    assert_eq!(status.phase, Some(Phase::DeleteFailed));
    assert_eq!(
        status.last_error.as_ref().unwrap().message,
        r#"timeout at: "mock deployer: start delete""#
    );

    // 29 seconds in, the deployer runs and the item is looked at again when time is up.
    let di = {
        let mut d = running(Phase::Progressing, 29);
        d.spec.timeout = Some(LsDuration::parse("30s").unwrap());
        d
    };
    let plan = run(&di, true, TargetLookup::NotReferenced);
    let status = status_of(&plan.decision).clone();
    assert!(matches!(plan.decision, Decision::CallReconcile { .. }));
    assert_eq!(
        requeue_after(&di, &status, now(), timeouts()),
        Some(Duration::from_secs(1))
    );
}

#[test]
fn the_default_progressing_timeout_comes_from_the_configuration() {
    let di = running(Phase::Progressing, 601);
    let plan = run(&di, true, TargetLookup::NotReferenced);
    assert_eq!(concluded(&plan.decision).1, Conclusion::ProgressingTimeout);
    let di = running(Phase::Progressing, 599);
    assert!(matches!(
        run(&di, true, TargetLookup::NotReferenced).decision,
        Decision::CallReconcile { .. }
    ));
    let short = Timeouts {
        progressing: Duration::from_secs(60),
        ..timeouts()
    };
    let plan = run_with(&di, true, TargetLookup::NotReferenced, None, short);
    assert_eq!(concluded(&plan.decision).1, Conclusion::ProgressingTimeout);
}

#[test]
fn timeout_none_expires_at_once_as_in_the_helm_and_manifest_deployers() {
    let mut di = triggered(MOCK_DEPLOYER_TYPE);
    di.spec.timeout = Some(LsDuration::parse("none").unwrap());
    let plan = run(&di, true, TargetLookup::NotReferenced);
    assert_eq!(concluded(&plan.decision).1, Conclusion::ProgressingTimeout);
}

#[test]
fn delete_without_uninstall_is_not_subject_to_the_progressing_timeout() {
    let mut di = deleting(running(Phase::Deleting, 3600));
    di.metadata
        .set_annotation(DELETE_WITHOUT_UNINSTALL_ANNOTATION, "true");
    let plan = run(&di, true, TargetLookup::NotReferenced);
    assert!(matches!(
        plan.decision,
        Decision::RemoveFinalizerOnly { .. }
    ));
}

// --- pickup timeout ------------------------------------------------------------------------------

/// A triggered item whose job was generated `secs` ago and not picked up since.
fn waiting_for(secs: i64, deployer_type: &str) -> DeployItem {
    let mut di = triggered(deployer_type);
    let status = di.status.as_mut().unwrap();
    status.job_id_generation_time = Some(at(-secs));
    status.last_reconcile_time = Some(at(-secs - 50));
    di
}

#[test]
fn an_unknown_type_waits_for_pickup_then_fails() {
    let di = waiting_for(100, UNKNOWN_TYPE);
    let plan = run(&di, false, TargetLookup::NotReferenced);
    assert_eq!(
        plan.decision,
        Decision::Wait {
            requeue_after: Duration::from_secs(205),
            blocked_by: None
        }
    );

    let di = waiting_for(300, UNKNOWN_TYPE);
    let plan = run(&di, false, TargetLookup::NotReferenced);
    assert!(!plan.add_finalizer);
    let (status, conclusion, requeue) = concluded(&plan.decision);
    assert_eq!(conclusion, Conclusion::PickupTimeout);
    assert_eq!(requeue, None);
    assert_eq!(status.phase, Some(Phase::Failed));
    assert_eq!(status.job_id_finished.as_deref(), Some("j2"));
    assert_eq!(status.observed_generation, 2);
    let e = status.last_error.as_ref().unwrap();
    assert_eq!(
        (e.operation.as_str(), e.reason.as_str()),
        ("WaitingForPickup", "PickupTimeout")
    );
    assert_eq!(
        e.message,
        "no deployer has reconciled this deployitem within 300 seconds"
    );
    assert_eq!(error_codes(status), vec![ERR_TIMEOUT]);
    assert_eq!(
        status
            .transition_times
            .as_ref()
            .unwrap()
            .finished_time
            .as_deref(),
        Some(at(0).as_str())
    );
    assert_eq!(status.first_error.as_ref(), status.last_error.as_ref());
    assert_eq!(status.last_errors.as_ref().map(Vec::len), Some(1));

    let plan = run(&di, false, TargetLookup::NotFound);
    let message = &concluded(&plan.decision)
        .0
        .last_error
        .as_ref()
        .unwrap()
        .message;
    assert_eq!(
        message,
        "no deployer has reconciled this deployitem within 300 seconds, probably because the referenced Target does not exist"
    );

    let plan = run(&deleting(di), false, TargetLookup::NotReferenced);
    assert_eq!(concluded(&plan.decision).0.phase, Some(Phase::DeleteFailed));
}

#[test]
fn an_unknown_type_says_so_at_once_and_still_ends_with_the_pickup_timeout() {
    // A new job nobody picked up: the notice goes into lastError (not final, no codes).
    let mut di = waiting_for(100, UNKNOWN_TYPE);
    di.status.as_mut().unwrap().last_reconcile_time = None;
    let info = info();
    let input = |di: &DeployItem, served: bool, t: Timeouts| {
        let input = Input {
            item: di,
            deployer: served.then_some(&info),
            target: &TargetLookup::NotReferenced,
            context_error: None,
            now: now(),
            timeouts: t,
        };
        no_deployer_notice(&input)
    };
    let status = input(&di, false, timeouts()).expect("a notice");
    let e = status.last_error.as_ref().unwrap();
    assert_eq!(e.reason, NO_DEPLOYER_REASON);
    assert_eq!(
        e.message,
        format!(
            "no deployer for type {UNKNOWN_TYPE} on this appliance; it fails after the pickup timeout of 300 seconds"
        )
    );
    assert!(e.codes.is_none(), "not final");
    assert!(status.first_error.is_none());
    assert_eq!(status.phase, di.status.as_ref().unwrap().phase);
    assert_eq!(status.last_reconcile_time, None, "not picked up");
    // Written once: an item carrying the notice gets none again.
    let mut noticed = di.clone();
    noticed.status = Some(status.clone());
    assert_eq!(input(&noticed, false, timeouts()), None);
    // The pickup timeout still ends it, replacing the notice.
    let mut late = waiting_for(300, UNKNOWN_TYPE);
    late.status.as_mut().unwrap().last_reconcile_time = None;
    late.status.as_mut().unwrap().last_error = status.last_error.clone();
    let plan = run(&late, false, TargetLookup::NotReferenced);
    let (ended, conclusion, _) = concluded(&plan.decision);
    assert_eq!(conclusion, Conclusion::PickupTimeout);
    assert_eq!(ended.last_error.as_ref().unwrap().reason, "PickupTimeout");
    // Served items, finished jobs and a disabled pickup check.
    assert_eq!(input(&di, true, timeouts()), None);
    let t = Timeouts {
        pickup: None,
        ..timeouts()
    };
    assert!(
        input(&di, false, t)
            .unwrap()
            .last_error
            .unwrap()
            .message
            .ends_with("the pickup timeout is disabled, so it waits")
    );
    let mut finished = di.clone();
    let s = finished.status.as_mut().unwrap();
    s.job_id_finished = s.job_id.clone();
    assert_eq!(input(&finished, false, timeouts()), None);
}

#[test]
fn the_pickup_check_can_be_disabled_and_ignores_picked_up_items() {
    let di = waiting_for(1000, UNKNOWN_TYPE);
    for pickup in [None, Some(Duration::ZERO)] {
        let t = Timeouts {
            pickup,
            ..timeouts()
        };
        assert_eq!(
            run_with(&di, false, TargetLookup::NotReferenced, None, t).decision,
            Decision::Skip
        );
    }
    let mut picked = di.clone();
    picked.status.as_mut().unwrap().last_reconcile_time = Some(at(-999));
    assert_eq!(
        run(&picked, false, TargetLookup::NotReferenced).decision,
        Decision::Skip
    );
    // Without a generation time the item has waited for nothing yet.
    let mut untimed = di;
    untimed.status.as_mut().unwrap().job_id_generation_time = None;
    untimed.status.as_mut().unwrap().last_reconcile_time = None;
    assert_eq!(
        run(&untimed, false, TargetLookup::NotReferenced).decision,
        Decision::Wait {
            requeue_after: Duration::from_secs(305),
            blocked_by: None
        }
    );
}

#[test]
fn an_unresolvable_target_is_retried_until_a_timeout() {
    let blocked = || TargetLookup::Unresolvable("secrets \"s\" not found".into());
    let di = waiting_for(10, MOCK_DEPLOYER_TYPE);
    assert_eq!(
        run(&di, true, blocked()).decision,
        Decision::Wait {
            requeue_after: RETRY_INTERVAL,
            blocked_by: Some("secrets \"s\" not found".into())
        }
    );
    let di = waiting_for(301, MOCK_DEPLOYER_TYPE);
    assert_eq!(
        concluded(&run(&di, true, blocked()).decision).1,
        Conclusion::PickupTimeout
    );
    // Once picked up, the progressing timeout ends the wait.
    let di = running(Phase::Progressing, 601);
    assert_eq!(
        concluded(&run(&di, true, blocked()).decision).1,
        Conclusion::ProgressingTimeout
    );
    let di = running(Phase::Progressing, 10);
    assert!(matches!(
        run(&di, true, blocked()).decision,
        Decision::Wait { .. }
    ));
}

// --- deployer answers ----------------------------------------------------------------------------

fn picked(di: &DeployItem) -> (DeployItem, DeployItemStatus) {
    let status = status_of(&run(di, true, TargetLookup::NotReferenced).decision).clone();
    let mut item = di.clone();
    item.status = Some(status.clone());
    (item, status)
}

fn answer(phase: Option<Phase>) -> ReconcileResult {
    ReconcileResult {
        phase,
        provider_status: Some(json!({"kind": "ProviderStatus"})),
        export: Some(json!({"a": 1})),
    }
}

#[test]
fn a_final_phase_finishes_the_job_in_the_same_status() {
    let (item, status) = picked(&triggered(MOCK_DEPLOYER_TYPE));
    let step = apply_reconcile_result(
        &item,
        status,
        Ok(answer(Some(Phase::Succeeded))),
        now(),
        timeouts(),
    );
    assert_eq!(step.status.phase, Some(Phase::Succeeded));
    assert_eq!(step.status.job_id_finished.as_deref(), Some("j2"));
    assert_eq!(
        step.status
            .transition_times
            .as_ref()
            .unwrap()
            .finished_time
            .as_deref(),
        Some(at(0).as_str())
    );
    assert_eq!(
        step.status.provider_status,
        Some(json!({"kind": "ProviderStatus"}))
    );
    assert_eq!(
        step.status.export_reference,
        Some(ObjectReference::new("ns", "di-export"))
    );
    assert_eq!(
        step.export,
        Some((ObjectReference::new("ns", "di-export"), json!({"a": 1})))
    );
    assert_eq!(step.requeue_after, None);
    assert_eq!(step.status.last_error, None);
}

#[test]
fn a_running_phase_keeps_the_job_open_and_requeues() {
    let (item, status) = picked(&triggered(MOCK_DEPLOYER_TYPE));
    let step = apply_reconcile_result(
        &item,
        status.clone(),
        Ok(answer(Some(Phase::Progressing))),
        now(),
        timeouts(),
    );
    assert_eq!(step.status.phase, Some(Phase::Progressing));
    assert_eq!(step.status.job_id_finished.as_deref(), Some("j1"));
    assert_eq!(step.requeue_after, Some(RETRY_INTERVAL));
    // No phase in the answer keeps the current one.
    let step = apply_reconcile_result(
        &item,
        status,
        Ok(ReconcileResult::default()),
        now(),
        timeouts(),
    );
    assert_eq!(step.status.phase, Some(Phase::Init));
    assert_eq!(step.export, None);
    assert_eq!(step.status.export_reference, None);
}

#[test]
fn recoverable_errors_keep_the_phase_and_unrecoverable_ones_fail() {
    let (item, status) = picked(&running(Phase::Progressing, 10));
    let transient = DeployerError::new("reconcile", "ApplyFailed", "connection refused");
    let step = apply_reconcile_result(
        &item,
        status.clone(),
        Err(transient.clone()),
        now(),
        timeouts(),
    );
    assert_eq!(step.status.phase, Some(Phase::Progressing));
    assert_eq!(step.status.job_id_finished.as_deref(), Some("j1"));
    assert_eq!(step.requeue_after, Some(RETRY_INTERVAL));
    let e = step.status.last_error.as_ref().unwrap();
    assert_eq!(
        (e.reason.as_str(), e.message.as_str()),
        ("ApplyFailed", "connection refused")
    );
    assert_eq!(step.status.first_error.as_ref(), Some(e));

    let fatal = transient.with_code(ERR_CONFIGURATION_PROBLEM);
    let step = apply_reconcile_result(&item, status.clone(), Err(fatal.clone()), now(), timeouts());
    assert_eq!(step.status.phase, Some(Phase::Failed));
    assert_eq!(step.status.job_id_finished.as_deref(), Some("j2"));
    assert_eq!(step.requeue_after, None);

    let del = deleting(item.clone());
    let step = apply_reconcile_result(&del, status, Err(fatal), now(), timeouts());
    assert_eq!(step.status.phase, Some(Phase::DeleteFailed));
}

#[test]
fn last_errors_keep_the_last_five_and_first_error_the_first() {
    let mut status = DeployItemStatus {
        phase: Some(Phase::Progressing),
        job_id: Some("j".into()),
        ..Default::default()
    };
    for i in 0..8 {
        let e = LsError::new("op", "r", format!("m{i}"));
        status = handle_reconcile_result(status, Some(&e), false, &at(i));
    }
    let messages: Vec<_> = status
        .last_errors
        .as_ref()
        .unwrap()
        .iter()
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(messages, vec!["m3", "m4", "m5", "m6", "m7"]);
    assert_eq!(status.first_error.as_ref().unwrap().message, "m0");
    assert_eq!(status.last_error.as_ref().unwrap().message, "m7");
    // Success clears lastError but keeps the history.
    let status = handle_reconcile_result(status, None, false, &at(9));
    assert_eq!(status.last_error, None);
    assert_eq!(status.last_errors.as_ref().unwrap().len(), 5);
    assert_eq!(status.phase, Some(Phase::Progressing));
}

#[test]
fn delete_answers() {
    let di = deleting(triggered(MOCK_DEPLOYER_TYPE));
    let status = status_of(&run(&di, true, TargetLookup::NotReferenced).decision).clone();
    assert_eq!(
        apply_delete_result(
            &di,
            status.clone(),
            Ok(DeleteResult::Deleted),
            now(),
            timeouts()
        ),
        DeleteStep::Remove
    );

    let DeleteStep::Keep {
        status: pending,
        requeue_after,
    } = apply_delete_result(
        &di,
        status.clone(),
        Ok(DeleteResult::Pending),
        now(),
        timeouts(),
    )
    else {
        panic!()
    };
    assert_eq!(pending.phase, Some(Phase::Deleting));
    assert_eq!(requeue_after, Some(RETRY_INTERVAL));

    let err = DeployerError::new("delete", "DeleteWithUninstall", "boom");
    let DeleteStep::Keep {
        status: retry,
        requeue_after,
    } = apply_delete_result(&di, status.clone(), Err(err.clone()), now(), timeouts())
    else {
        panic!()
    };
    assert_eq!(retry.phase, Some(Phase::InitDelete));
    assert_eq!(requeue_after, Some(RETRY_INTERVAL));

    let DeleteStep::Keep {
        status: failed,
        requeue_after,
    } = apply_delete_result(
        &di,
        status,
        Err(err.with_code(ERR_TIMEOUT)),
        now(),
        timeouts(),
    )
    else {
        panic!()
    };
    assert_eq!(failed.phase, Some(Phase::DeleteFailed));
    assert_eq!(failed.job_id_finished.as_deref(), Some("j2"));
    assert_eq!(requeue_after, None);
}

#[test]
fn short_names_of_deployer_types() {
    assert_eq!(deployer_short_name(MOCK_DEPLOYER_TYPE), "mock");
    assert_eq!(
        deployer_short_name("landscaper.gardener.cloud/kubernetes-manifest"),
        "manifest"
    );
    assert_eq!(
        deployer_short_name("landscaper.gardener.cloud/helm"),
        "helm"
    );
    assert_eq!(deployer_short_name("example.com/x"), "example.com/x");
}

// --- properties ----------------------------------------------------------------------------------

fn phase_strategy() -> impl Strategy<Value = Option<Phase>> {
    prop_oneof![
        Just(None),
        Just(Some(Phase::from(String::new()))),
        Just(Some(Phase::Init)),
        Just(Some(Phase::Progressing)),
        Just(Some(Phase::Succeeded)),
        Just(Some(Phase::Failed)),
        Just(Some(Phase::InitDelete)),
        Just(Some(Phase::Deleting)),
        Just(Some(Phase::DeleteFailed)),
    ]
}

fn job_strategy() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("a".to_string())),
        Just(Some("b".to_string()))
    ]
}

fn time_strategy() -> impl Strategy<Value = Option<String>> {
    prop_oneof![Just(None), (0i64..2000).prop_map(|s| Some(at(-s)))]
}

fn target_strategy() -> impl Strategy<Value = TargetLookup> {
    prop_oneof![
        Just(TargetLookup::NotReferenced),
        Just(TargetLookup::NotFound),
        Just(TargetLookup::Unresolvable("x".into())),
        Just(cluster_target(json!({"token": "t"}))),
        Just(cluster_target(json!({"tokenFile": "/t"}))),
    ]
}

prop_compose! {
    fn item_strategy()(
        phase in phase_strategy(),
        job_id in job_strategy(),
        job_id_finished in job_strategy(),
        generated in time_strategy(),
        reconciled in time_strategy(),
        init in time_strategy(),
        is_deleting in any::<bool>(),
        test_reconcile in any::<bool>(),
        without_uninstall in any::<bool>(),
        update_on_change_only in any::<bool>(),
        observed in 0i64..3,
        has_config in any::<bool>(),
        timeout in prop_oneof![Just(None), Just(Some("none")), Just(Some("30s")), Just(Some("1h"))],
        previous_errors in 0usize..=MAX_LAST_ERRORS,
    ) -> DeployItem {
        let mut di = triggered(MOCK_DEPLOYER_TYPE);
        di.spec.update_on_change_only = Some(update_on_change_only);
        di.spec.timeout = timeout.map(|t| LsDuration::parse(t).unwrap());
        if !has_config {
            di.spec.config = None;
        }
        if is_deleting {
            di = deleting(di);
        }
        if test_reconcile {
            di.metadata.set_annotation(OPERATION_ANNOTATION, OPERATION_TEST_RECONCILE);
        }
        if without_uninstall {
            di.metadata.set_annotation(DELETE_WITHOUT_UNINSTALL_ANNOTATION, "true");
        }
        let error = StatusError { operation: "o".into(), reason: "r".into(), message: "m".into(), ..Default::default() };
        di.status = Some(DeployItemStatus {
            phase,
            observed_generation: observed,
            job_id,
            job_id_finished,
            job_id_generation_time: generated,
            last_reconcile_time: reconciled,
            last_errors: (previous_errors > 0).then(|| vec![error; previous_errors]),
            transition_times: Some(TransitionTimes { init_time: init, ..Default::default() }),
            ..Default::default()
        });
        di
    }
}

fn check_status_invariants(
    input: &DeployItem,
    status: &DeployItemStatus,
) -> Result<(), TestCaseError> {
    let final_phase = status.phase.as_ref().is_some_and(Phase::is_final);
    prop_assert_eq!(
        is_job_finished(status),
        final_phase,
        "jobIDFinished == jobID exactly with a final phase: {:?}",
        status
    );
    if is_deleting(input) {
        prop_assert!(
            !matches!(status.phase, Some(Phase::Failed | Phase::Succeeded)),
            "a deleting item never ends in Failed/Succeeded: {:?}",
            status.phase
        );
    }
    prop_assert!(
        status
            .last_errors
            .as_ref()
            .is_none_or(|l| l.len() <= MAX_LAST_ERRORS)
    );
    if !has_test_reconcile(input) {
        prop_assert_eq!(&status.job_id, &input.status.as_ref().unwrap().job_id);
    }
    Ok(())
}

proptest! {
    #[test]
    fn plans_keep_the_contract(
        di in item_strategy(),
        served in any::<bool>(),
        target in target_strategy(),
        context_missing in any::<bool>(),
        pickup in prop_oneof![Just(None), Just(Some(Duration::from_secs(300)))],
    ) {
        let t = Timeouts { pickup, ..timeouts() };
        let context_error = context_missing.then_some("missing");
        let plan = run_with(&di, served, target.clone(), context_error, t);
        let before = di.status.as_ref().unwrap();
        if is_job_finished(before) && !(served && has_test_reconcile(&di)) {
            prop_assert_eq!(&plan.decision, &Decision::Skip);
        }
        if plan.add_finalizer {
            prop_assert!(served && !is_deleting(&di));
        }
        if !served {
            let pickup_only = matches!(
                plan.decision,
                Decision::Skip | Decision::Wait { .. } | Decision::Conclude { conclusion: Conclusion::PickupTimeout, .. }
            );
            prop_assert!(pickup_only, "unserved items only get the pickup check: {:?}", plan.decision);
        }
        match &plan.decision {
            Decision::Skip => {}
            Decision::Wait { requeue_after, .. } => prop_assert!(!requeue_after.is_zero()),
            Decision::Conclude { status, requeue_after, .. } => {
                check_status_invariants(&di, status)?;
                let final_phase = status.phase.as_ref().is_some_and(Phase::is_final);
                prop_assert_eq!(requeue_after.is_none(), final_phase);
                prop_assert!(requeue_after.is_none_or(|d| d <= RETRY_INTERVAL));
            }
            Decision::CallReconcile { status } | Decision::CallDelete { status } | Decision::RemoveFinalizerOnly { status } => {
                check_status_invariants(&di, status)?;
                prop_assert!(!status.phase.as_ref().is_some_and(Phase::is_final));
                prop_assert_eq!(matches!(plan.decision, Decision::CallReconcile { .. }), !is_deleting(&di));
            }
        }
    }

    #[test]
    fn deployer_answers_keep_the_contract(
        di in item_strategy(),
        phase in phase_strategy(),
        fails in any::<bool>(),
        fatal in any::<bool>(),
        secs in 0i64..1000,
    ) {
        let plan = run(&di, true, TargetLookup::NotReferenced);
        let (Decision::CallReconcile { status } | Decision::CallDelete { status }) = plan.decision else {
            return Ok(());
        };
        let mut item = di.clone();
        item.status = Some(status.clone());
        let later = now().checked_add(SignedDuration::from_secs(secs)).unwrap();
        let mut error = DeployerError::new("op", "reason", "message");
        if fatal {
            error = error.with_code(ERR_TIMEOUT);
        }
        let (status, requeue) = if is_deleting(&di) {
            let result = if fails { Err(error) } else { Ok(DeleteResult::Pending) };
            match apply_delete_result(&item, status, result, later, timeouts()) {
                DeleteStep::Remove => return Ok(()),
                DeleteStep::Keep { status, requeue_after } => (*status, requeue_after),
            }
        } else {
            let result = if fails { Err(error) } else { Ok(ReconcileResult { phase, ..Default::default() }) };
            let step = apply_reconcile_result(&item, status, result, later, timeouts());
            (step.status, step.requeue_after)
        };
        let final_phase = status.phase.as_ref().is_some_and(Phase::is_final);
        prop_assert_eq!(is_job_finished(&status), final_phase);
        prop_assert_eq!(requeue.is_none(), final_phase);
        prop_assert!(requeue.is_none_or(|d| d <= RETRY_INTERVAL && !d.is_zero()));
        if fails && fatal {
            prop_assert!(final_phase);
        }
        if fails && !fatal {
            prop_assert_eq!(&status.phase, &item.status.as_ref().unwrap().phase);
        }
    }
}

#[test]
fn the_mock_deployer_records_deploy_item_validation_as_landscaper_does() {
    let validation = |s: &DeployItemStatus| {
        s.conditions
            .iter()
            .flatten()
            .find(|c| c.r#type == "DeployItemValidation")
            .map(|c| {
                (
                    c.status.clone(),
                    c.reason.clone(),
                    c.message.clone(),
                    c.last_transition_time.clone().unwrap_or_default(),
                )
            })
    };
    let (item, status) = picked(&triggered(MOCK_DEPLOYER_TYPE));
    let ok = apply_reconcile_result(
        &item,
        status.clone(),
        Ok(answer(Some(Phase::Succeeded))),
        now(),
        timeouts(),
    );
    assert_eq!(
        validation(&ok.status),
        Some((
            "True".into(),
            "SuccessfullValidation".into(),
            "Successfully validated configuration".into(),
            at(0)
        ))
    );
    // The mock deployer's own parse error of a bad configuration.
    let bad = landscaper_deployers::mock::MockConfiguration::parse(&json!({"phase": 3}))
        .expect_err("a number is no phase");
    let failed = apply_reconcile_result(
        &item,
        ok.status.clone(),
        Err(bad.clone()),
        now(),
        timeouts(),
    );
    assert_eq!(
        validation(&failed.status),
        Some((
            "False".into(),
            "FailedUnmarshal".into(),
            bad.message.clone(),
            at(0)
        ))
    );
    // Other errors (not the configuration) leave the condition as it is.
    let other = DeployerError::new("reconcile", "ApplyFailed", "connection refused");
    let kept = apply_reconcile_result(&item, ok.status.clone(), Err(other), now(), timeouts());
    assert_eq!(validation(&kept.status), validation(&ok.status));
    // Manifest and helm items get no condition (Landscaper's deployers set none).
    let (item, status) = picked(&triggered("landscaper.gardener.cloud/kubernetes-manifest"));
    let step = apply_reconcile_result(
        &item,
        status,
        Ok(answer(Some(Phase::Succeeded))),
        now(),
        timeouts(),
    );
    assert_eq!(validation(&step.status), None);
}

#[test]
fn a_timeout_that_cut_a_call_off_names_the_cause_the_item_failed_with() {
    let item = triggered("landscaper.gardener.cloud/kubernetes-manifest");
    let unreachable = LsError::new(
        "GetApiResource",
        "GetApiResourceList",
        "cluster unreachable: client error (Connect)",
    );
    let mut status = DeployItemStatus::default();
    set_last_error(&mut status, updated_error(None, Some(&unreachable), &at(0)));
    let timeout = progressing_timeout_error(&item, Some("manifest deployer: apply manifests"));
    let step = apply_reconcile_result(
        &item,
        status.clone(),
        Err(timeout.clone()),
        now(),
        timeouts(),
    );
    let error = step.status.last_error.expect("the timeout is recorded");
    assert_eq!(
        error.message,
        "timeout at: \"manifest deployer: apply manifests\"; last error: cluster unreachable: client error (Connect)"
    );
    // Only lastErrors knows the cause (lastError was cleared by a later success of the job).
    status.last_error = None;
    let again = with_timeout_cause(timeout.clone(), &status);
    assert!(
        again
            .message
            .ends_with("last error: cluster unreachable: client error (Connect)")
    );
    // Nothing to name: the message stays Landscaper's.
    let plain = with_timeout_cause(timeout.clone(), &DeployItemStatus::default());
    assert_eq!(plain.message, timeout.message);
}
