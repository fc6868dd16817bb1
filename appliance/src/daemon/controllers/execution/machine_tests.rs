//! Unit tests of the pure Execution phase machine.

use std::collections::BTreeMap;

use landscaper_store::model::constants::*;
use landscaper_store::model::{
    DataObject, DeployItem, DeployItemStatus, DeployItemTemplate, Execution, ExecutionStatus,
    ObjectMeta, ObjectReference, Phase, Resource, from_value,
};
use landscaper_store::{Kind, ObjectKey, Write};
use serde_json::{Value, json};

use super::*;

const NOW: &str = "2030-01-01T00:00:00Z";
const JOB: &str = "job-2";
const OLD_JOB: &str = "job-1";

// --- builders ---------------------------------------------------------------------------------

fn template(name: &str, depends_on: &[&str]) -> DeployItemTemplate {
    DeployItemTemplate {
        name: name.to_string(),
        r#type: MOCK_DEPLOYER_TYPE.to_string(),
        config: Some(
            json!({"apiVersion": "mock.deployer.landscaper.gardener.cloud/v1alpha1", "kind": "ProviderConfiguration", "name": name}),
        ),
        depends_on: (!depends_on.is_empty())
            .then(|| depends_on.iter().map(|s| s.to_string()).collect()),
        ..DeployItemTemplate::default()
    }
}

fn execution(templates: Vec<DeployItemTemplate>, phase: Option<Phase>) -> Execution {
    let mut meta = ObjectMeta::namespaced("ns", "exec");
    meta.uid = Some("exec-uid".into());
    meta.generation = Some(3);
    meta.resource_version = Some("10".into());
    meta.finalizers = Some(vec![LANDSCAPER_FINALIZER.into()]);
    let mut exec = Execution::with_metadata(meta);
    exec.spec.context = Some("ctx".into());
    exec.spec.deploy_items = Some(templates);
    exec.status = Some(ExecutionStatus {
        job_id: Some(JOB.into()),
        job_id_finished: Some(OLD_JOB.into()),
        phase,
        ..ExecutionStatus::default()
    });
    exec
}

fn deploying(exec: Execution) -> Execution {
    let mut exec = exec;
    exec.metadata.deletion_timestamp = Some("2029-12-31T00:00:00Z".into());
    exec
}

/// A deploy item of template `spec_name` with the given job IDs and phase.
fn item(spec_name: &str, job_id: &str, finished: &str, phase: Option<Phase>) -> DeployItem {
    let mut meta = ObjectMeta::namespaced("ns", format!("exec-{spec_name}-abcde"));
    meta.resource_version = Some(format!("rv-{spec_name}"));
    meta.set_label(EXECUTION_MANAGED_BY_LABEL, "exec");
    meta.set_label(EXECUTION_MANAGED_NAME_LABEL, spec_name);
    meta.finalizers = Some(vec![LANDSCAPER_FINALIZER.into()]);
    let mut di = DeployItem::with_metadata(meta);
    di.spec.r#type = MOCK_DEPLOYER_TYPE.into();
    di.status = Some(DeployItemStatus {
        job_id: (!job_id.is_empty()).then(|| job_id.to_string()),
        job_id_finished: (!finished.is_empty()).then(|| finished.to_string()),
        phase,
        ..DeployItemStatus::default()
    });
    di
}

/// Finished with the old job (untriggered for the current one).
fn idle(spec_name: &str) -> DeployItem {
    item(spec_name, OLD_JOB, OLD_JOB, Some(Phase::Succeeded))
}

fn running(spec_name: &str) -> DeployItem {
    item(spec_name, JOB, OLD_JOB, Some(Phase::Progressing))
}

fn done(spec_name: &str, phase: Phase) -> DeployItem {
    item(spec_name, JOB, JOB, Some(phase))
}

fn deleting(di: DeployItem) -> DeployItem {
    let mut di = di;
    di.metadata.deletion_timestamp = Some("2029-12-31T00:00:00Z".into());
    di
}

fn view(items: Vec<DeployItem>) -> View {
    View {
        deploy_items: items,
        ..View::default()
    }
}

fn run(exec: &Execution, view: &View) -> Step {
    let mut n = 0;
    step(exec, view, NOW, &mut || {
        n += 1;
        format!("x{n:04}")
    })
}

// --- inspecting a step ------------------------------------------------------------------------

fn new_status(step: &Step) -> &ExecutionStatus {
    step.execution
        .as_ref()
        .expect("the execution is written")
        .status
        .as_ref()
        .expect("a status")
}

fn new_phase(step: &Step) -> Phase {
    new_status(step).phase.clone().expect("a phase")
}

fn last_error(step: &Step) -> (String, String, String) {
    let e = new_status(step).last_error.as_ref().expect("a lastError");
    (e.operation.clone(), e.reason.clone(), e.message.clone())
}

/// Deploy items updated by the step, by label name.
fn updated_items(step: &Step) -> BTreeMap<String, DeployItem> {
    step.writes
        .iter()
        .filter_map(|w| match w {
            Write::Update(v) if v["kind"] == "DeployItem" => {
                let di: DeployItem = from_value(v).unwrap();
                let name = di
                    .metadata
                    .label(EXECUTION_MANAGED_NAME_LABEL)
                    .unwrap()
                    .to_string();
                Some((name, di))
            }
            _ => None,
        })
        .collect()
}

fn created_items(step: &Step) -> Vec<DeployItem> {
    step.writes
        .iter()
        .filter_map(|w| match w {
            Write::Create(v) if v["kind"] == "DeployItem" => Some(from_value(v).unwrap()),
            _ => None,
        })
        .collect()
}

/// Names of the deploy items the step triggers (jobID set to the current job).
fn triggered_names(step: &Step) -> Vec<String> {
    updated_items(step)
        .into_iter()
        .filter(|(_, di)| {
            let s = di.status.as_ref().unwrap();
            s.job_id.as_deref() == Some(JOB)
                && s.job_id_generation_time.as_deref() == Some(NOW)
                && s.job_id_finished.as_deref() != Some(JOB)
        })
        .map(|(name, _)| name)
        .collect()
}

fn deleted_keys(step: &Step) -> Vec<ObjectKey> {
    step.writes
        .iter()
        .filter_map(|w| match w {
            Write::Delete { key, .. } => Some(key.clone()),
            _ => None,
        })
        .collect()
}

fn di_key(spec_name: &str) -> ObjectKey {
    ObjectKey::new(Kind::DeployItem, "ns", format!("exec-{spec_name}-abcde"))
}

// --- job IDs, finalizer, phase entry ----------------------------------------------------------

#[test]
fn a_finished_execution_is_left_alone() {
    let mut exec = execution(vec![template("a", &[])], Some(Phase::Succeeded));
    exec.status.as_mut().unwrap().job_id_finished = Some(JOB.into());
    let step = run(&exec, &view(vec![idle("a")]));
    assert!(step.execution.is_none());
    assert!(step.writes.is_empty());
    assert_eq!(step.next, Next::Idle);
}

#[test]
fn the_finalizer_is_added_even_to_a_finished_execution_but_not_while_deleting() {
    let mut exec = execution(vec![], Some(Phase::Succeeded));
    exec.status.as_mut().unwrap().job_id_finished = Some(JOB.into());
    exec.metadata.finalizers = None;
    let step = run(&exec, &View::default());
    let new = step.execution.expect("written");
    assert_eq!(
        new.metadata.finalizers,
        Some(vec![LANDSCAPER_FINALIZER.to_string()])
    );
    assert_eq!(new.status, exec.status, "the status stays");
    assert_eq!(step.next, Next::Idle);

    let mut exec = deploying(exec);
    exec.metadata.finalizers = None;
    assert!(run(&exec, &View::default()).execution.is_none());
}

#[test]
fn a_new_job_starts_with_init_and_creates_the_deploy_items() {
    let mut exec = execution(vec![template("a", &[]), template("b", &["a"])], None);
    exec.metadata
        .set_annotation(CACHE_HELM_CHARTS_ANNOTATION, "true");
    exec.spec.deploy_items.as_mut().unwrap()[0].target = Some(ObjectReference::new("ns", "tgt"));
    exec.spec.deploy_items.as_mut().unwrap()[0].labels =
        Some([("team".to_string(), "x".to_string())].into());
    let step = run(&exec, &View::default());

    let status = new_status(&step);
    assert_eq!(status.phase, Some(Phase::Progressing));
    assert_eq!(status.observed_generation, 3);
    assert_eq!(status.phase_transition_time.as_deref(), Some(NOW));
    let times = status.transition_times.as_ref().unwrap();
    assert_eq!(times.init_time.as_deref(), Some(NOW));
    assert_eq!(times.wait_time.as_deref(), Some(NOW));
    assert_eq!(
        status.job_id_finished.as_deref(),
        Some(OLD_JOB),
        "not finished"
    );
    assert_eq!(status.last_error, None);
    assert_eq!(step.next, Next::Continue);

    let created = created_items(&step);
    assert_eq!(created.len(), 2);
    let a = &created[0];
    assert_eq!(a.metadata.name(), "exec-a-x0001");
    assert_eq!(a.metadata.generate_name.as_deref(), Some("exec-a-"));
    assert_eq!(a.metadata.namespace(), "ns");
    assert_eq!(a.metadata.label(EXECUTION_MANAGED_NAME_LABEL), Some("a"));
    assert_eq!(a.metadata.label(EXECUTION_MANAGED_BY_LABEL), Some("exec"));
    assert_eq!(a.metadata.label("team"), Some("x"));
    assert_eq!(
        a.metadata.annotation(EXECUTION_DEPENDS_ON_ANNOTATION),
        Some("")
    );
    assert_eq!(
        a.metadata.annotation(DEPLOYER_TYPE_ANNOTATION),
        Some(MOCK_DEPLOYER_TYPE)
    );
    assert_eq!(
        a.metadata.annotation(DEPLOYER_TARGET_NAME_ANNOTATION),
        Some("tgt")
    );
    assert_eq!(
        a.metadata.annotation(RECONCILE_TIMESTAMP_ANNOTATION),
        Some(NOW)
    );
    assert_eq!(
        a.metadata.annotation(CACHE_HELM_CHARTS_ANNOTATION),
        Some("true")
    );
    assert_eq!(
        a.metadata.finalizers,
        Some(vec![LANDSCAPER_FINALIZER.to_string()])
    );
    let owner = &a.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("Execution", "exec", "exec-uid")
    );
    assert_eq!(owner.controller, Some(true));
    assert_eq!(owner.block_owner_deletion, Some(true));
    assert_eq!(a.spec.r#type, MOCK_DEPLOYER_TYPE);
    assert_eq!(a.spec.context.as_deref(), Some("ctx"));
    assert_eq!(a.spec.target, Some(ObjectReference::new("ns", "tgt")));
    assert_eq!(a.spec.config.as_ref().unwrap()["name"], "a");
    assert!(a.status.is_none(), "not triggered at creation");

    let b = &created[1];
    assert_eq!(
        b.metadata.annotation(EXECUTION_DEPENDS_ON_ANNOTATION),
        Some("a")
    );
    assert_eq!(
        b.metadata.annotation(DEPLOYER_TARGET_NAME_ANNOTATION),
        Some(NO_TARGET_NAME_VALUE)
    );

    let cache = status.deploy_item_cache.as_ref().unwrap();
    let pairs: Vec<_> = cache
        .active_dis
        .iter()
        .flatten()
        .map(|p| (p.spec_name.as_str(), p.object_name.as_str()))
        .collect();
    assert_eq!(pairs, vec![("a", "exec-a-x0001"), ("b", "exec-b-x0002")]);
    assert_eq!(cache.orphaned_dis, None);
}

#[test]
fn long_generated_names_are_cut_like_generate_name() {
    let long = "n".repeat(70);
    let step = run(
        &execution(vec![template(&long, &[])], None),
        &View::default(),
    );
    let created = created_items(&step);
    let prefix = created[0].metadata.generate_name.clone().unwrap();
    assert_eq!(prefix.len(), 58);
    assert_eq!(created[0].metadata.name().len(), 63);
}

#[test]
fn a_final_phase_with_a_new_job_id_restarts_with_init_and_updates_existing_items() {
    let mut exec = execution(vec![template("a", &[])], Some(Phase::Failed));
    exec.spec.context = None;
    let status = exec.status.as_mut().unwrap();
    status.transition_times = Some(landscaper_store::model::TransitionTimes {
        finished_time: Some("old".into()),
        ..Default::default()
    });
    status.last_error = Some(landscaper_store::model::Error {
        operation: "x".into(),
        ..Default::default()
    });
    let mut existing = idle("a");
    existing.metadata.set_label("keep", "me");
    existing.spec.r#type = "old-type".into();
    existing.status.as_mut().unwrap().deployer_phase = Some("Succeeded".into());
    let step = run(&exec, &view(vec![existing, idle("gone")]));

    assert_eq!(new_phase(&step), Phase::Progressing);
    assert_eq!(new_status(&step).last_error, None);
    let times = new_status(&step).transition_times.clone().unwrap();
    assert_eq!(
        times.finished_time.as_deref(),
        Some("old"),
        "kept, as SetInitTransitionTime"
    );
    assert!(created_items(&step).is_empty());
    let updated = updated_items(&step);
    let a = &updated["a"];
    assert_eq!(a.metadata.name(), "exec-a-abcde");
    assert_eq!(
        a.metadata.resource_version.as_deref(),
        Some("rv-a"),
        "guarded"
    );
    assert_eq!(a.metadata.label("keep"), Some("me"));
    assert_eq!(a.spec.r#type, MOCK_DEPLOYER_TYPE);
    assert_eq!(a.spec.context.as_deref(), Some(DEFAULT_CONTEXT_NAME));
    assert_eq!(a.status.as_ref().unwrap().deployer_phase, None);
    assert_eq!(
        a.status.as_ref().unwrap().job_id.as_deref(),
        Some(OLD_JOB),
        "Init does not trigger"
    );
    assert_eq!(
        deleted_keys(&step),
        vec![di_key("gone")],
        "orphans are deleted"
    );
    let cache = new_status(&step).deploy_item_cache.clone().unwrap();
    assert_eq!(
        cache.orphaned_dis,
        Some(vec!["exec-gone-abcde".to_string()])
    );
    assert_eq!(cache.active_dis.unwrap()[0].object_name, "exec-a-abcde");
}

#[test]
fn a_deleting_execution_with_a_new_job_starts_with_init_delete() {
    let exec = deploying(execution(vec![template("a", &[])], Some(Phase::Succeeded)));
    let step = run(&exec, &view(vec![idle("a")]));
    assert_eq!(new_phase(&step), Phase::Deleting);
    assert_eq!(new_status(&step).deploy_item_cache, None);
    assert_eq!(deleted_keys(&step), vec![di_key("a")]);
    assert_eq!(step.next, Next::Continue);
}

#[test]
fn unknown_phases_start_the_job_again() {
    let exec = execution(vec![], Some(Phase::Other("Weird".into())));
    let step = run(&exec, &View::default());
    assert_eq!(new_phase(&step), Phase::Progressing);
}

// --- Progressing ------------------------------------------------------------------------------

#[test]
fn items_without_pending_predecessors_are_triggered() {
    let exec = execution(
        vec![
            template("a", &[]),
            template("b", &["a"]),
            template("c", &[]),
        ],
        Some(Phase::Progressing),
    );
    let step = run(&exec, &view(vec![idle("a"), idle("b"), idle("c")]));
    assert_eq!(triggered_names(&step), vec!["a", "c"]);
    let a = &updated_items(&step)["a"];
    let s = a.status.as_ref().unwrap();
    assert_eq!(
        s.transition_times.as_ref().unwrap().trigger_time.as_deref(),
        Some(NOW)
    );
    assert_eq!(
        s.transition_times.as_ref().unwrap().finished_time,
        None,
        "reset"
    );
    assert_eq!(s.job_id_finished.as_deref(), Some(OLD_JOB));
    assert_eq!(
        s.phase,
        Some(Phase::Succeeded),
        "the deployer sets the phase"
    );
    assert_eq!(new_phase(&step), Phase::Progressing);
    assert_eq!(
        last_error(&step),
        (
            "handleReconcilePhase".into(),
            "handlePhaseProgressing".into(),
            "some running items".into()
        )
    );
    let codes = new_status(&step).last_error.as_ref().unwrap().codes.clone();
    assert_eq!(
        codes,
        Some(vec![
            ERR_UNFINISHED.into(),
            ERR_FOR_INFO_ONLY.into(),
            ERR_NO_RETRY.into()
        ])
    );
    assert_eq!(step.next, Next::Wait);
}

#[test]
fn a_dependent_item_waits_until_its_predecessor_finished() {
    let exec = execution(
        vec![template("a", &[]), template("b", &["a"])],
        Some(Phase::Progressing),
    );
    let step = run(&exec, &view(vec![running("a"), idle("b")]));
    assert!(triggered_names(&step).is_empty());
    assert_eq!(step.next, Next::Wait);

    let step = run(&exec, &view(vec![done("a", Phase::Succeeded), idle("b")]));
    assert_eq!(triggered_names(&step), vec!["b"]);
}

#[test]
fn waiting_without_changes_writes_nothing() {
    let exec = execution(vec![template("a", &[])], Some(Phase::Progressing));
    let first = run(&exec, &view(vec![running("a")]));
    let exec = first.execution.unwrap();
    let second = run(&exec, &view(vec![running("a")]));
    assert!(second.execution.is_none(), "the lastError is unchanged");
    assert!(second.writes.is_empty());
    assert_eq!(second.next, Next::Wait);
}

#[test]
fn all_succeeded_goes_to_completing() {
    let exec = execution(
        vec![template("a", &[]), template("b", &["a"])],
        Some(Phase::Progressing),
    );
    let step = run(
        &exec,
        &view(vec![
            done("a", Phase::Succeeded),
            done("b", Phase::Succeeded),
        ]),
    );
    assert_eq!(new_phase(&step), Phase::Completing);
    assert_eq!(new_status(&step).last_error, None);
    assert!(step.writes.is_empty());
    assert_eq!(step.next, Next::Continue);
}

#[test]
fn a_failed_item_stops_triggering_but_running_items_are_awaited() {
    let exec = execution(
        vec![
            template("a", &[]),
            template("b", &[]),
            template("c", &["a"]),
        ],
        Some(Phase::Progressing),
    );
    let step = run(
        &exec,
        &view(vec![done("a", Phase::Failed), running("b"), idle("c")]),
    );
    assert!(triggered_names(&step).is_empty());
    assert_eq!(new_phase(&step), Phase::Progressing);
    assert_eq!(step.next, Next::Wait);

    let step = run(
        &exec,
        &view(vec![
            done("a", Phase::Failed),
            done("b", Phase::Succeeded),
            idle("c"),
        ]),
    );
    assert!(triggered_names(&step).is_empty());
    assert_eq!(new_phase(&step), Phase::Failed);
    assert_eq!(last_error(&step).2, "has failed or missing deploy items");
    let status = new_status(&step);
    assert_eq!(status.job_id_finished.as_deref(), Some(JOB));
    assert_eq!(
        status
            .transition_times
            .as_ref()
            .unwrap()
            .finished_time
            .as_deref(),
        Some(NOW)
    );
    assert_eq!(step.next, Next::Idle);
}

#[test]
fn an_independent_item_is_not_triggered_once_another_failed() {
    let exec = execution(
        vec![template("a", &[]), template("b", &[])],
        Some(Phase::Progressing),
    );
    let step = run(&exec, &view(vec![done("a", Phase::Failed), idle("b")]));
    assert!(triggered_names(&step).is_empty());
    // b is runnable but not started: there is no running item and a failed one.
    assert_eq!(new_phase(&step), Phase::Failed);
}

#[test]
fn a_missing_deploy_item_fails_the_execution() {
    let exec = execution(vec![template("a", &[])], Some(Phase::Progressing));
    let step = run(&exec, &View::default());
    assert_eq!(new_phase(&step), Phase::Failed);
    assert_eq!(last_error(&step).2, "has failed or missing deploy items");
}

#[test]
fn cyclic_dependencies_are_stuck_and_fail() {
    let exec = execution(
        vec![template("a", &["b"]), template("b", &["a"])],
        Some(Phase::Progressing),
    );
    let step = run(&exec, &view(vec![idle("a"), idle("b")]));
    assert!(triggered_names(&step).is_empty());
    assert_eq!(new_phase(&step), Phase::Failed);
    assert_eq!(last_error(&step).2, "items could not be started");
    assert_eq!(
        new_status(&step).last_error.as_ref().unwrap().codes,
        Some(vec![ERR_FOR_INFO_ONLY.to_string()])
    );
}

#[test]
fn an_unknown_dependency_is_a_normal_error() {
    let exec = execution(vec![template("a", &["nope"])], Some(Phase::Progressing));
    let step = run(&exec, &view(vec![idle("a")]));
    assert_eq!(new_phase(&step), Phase::Progressing);
    assert_eq!(
        last_error(&step),
        (
            "IsRunnable".into(),
            "DependentDeployItemNotFound".into(),
            "dependent deployitem nope of deployitem a not found".into()
        )
    );
    assert!(matches!(step.next, Next::Retry(_)));
    assert!(step.writes.is_empty());
}

#[test]
fn orphans_are_deleted_before_anything_is_triggered() {
    let exec = execution(vec![template("a", &[])], Some(Phase::Progressing));
    let mut skip = deleting(idle("skip"));
    skip.metadata
        .set_annotation(DELETE_WITHOUT_UNINSTALL_ANNOTATION, "true");
    let step = run(
        &exec,
        &view(vec![idle("a"), deleting(idle("o1")), skip, idle("fresh")]),
    );
    assert_eq!(
        triggered_names(&step),
        vec!["o1"],
        "a waits for the orphans"
    );
    let updated = updated_items(&step);
    assert_eq!(
        updated["skip"].metadata.finalizers, None,
        "only the finalizer goes"
    );
    assert_eq!(
        updated["skip"].status.as_ref().unwrap().job_id.as_deref(),
        Some(OLD_JOB)
    );
    assert_eq!(deleted_keys(&step), vec![di_key("fresh")], "deleted first");
    assert_eq!(new_phase(&step), Phase::Progressing);
    assert_eq!(step.next, Next::Wait);

    // Orphans being deleted are awaited.
    let step = run(&exec, &view(vec![idle("a"), deleting(running("o1"))]));
    assert!(step.writes.is_empty());
    assert_eq!(step.next, Next::Wait);

    // A failed orphan fails the execution.
    let step = run(
        &exec,
        &view(vec![idle("a"), deleting(done("o1", Phase::DeleteFailed))]),
    );
    assert_eq!(new_phase(&step), Phase::Failed);
    assert_eq!(last_error(&step).2, "has failed or missing deploy items");

    // Once they are gone, the regular items go.
    let step = run(&exec, &view(vec![idle("a")]));
    assert_eq!(triggered_names(&step), vec!["a"]);
}

// --- Completing -------------------------------------------------------------------------------

fn with_export(mut di: DeployItem) -> DeployItem {
    let name = format!("{}-export", di.metadata.name());
    di.status.as_mut().unwrap().export_reference = Some(ObjectReference::new("ns", name));
    di
}

#[test]
fn completing_collects_the_exports_into_a_data_object() {
    let mut exec = execution(
        vec![template("a", &[]), template("b", &[])],
        Some(Phase::Completing),
    );
    exec.status.as_mut().unwrap().deploy_item_cache =
        Some(landscaper_store::model::DeployItemCache {
            active_dis: None,
            orphaned_dis: Some(vec!["old".into()]),
        });
    let mut v = view(vec![
        with_export(done("a", Phase::Succeeded)),
        done("b", Phase::Succeeded),
    ]);
    v.exports.insert("exec-a-abcde".into(), Ok(json!({"x": 1})));
    let step = run(&exec, &v);

    assert_eq!(step.writes.len(), 1);
    let Write::Create(object) = &step.writes[0] else {
        panic!("a create: {:?}", step.writes)
    };
    let object: DataObject = from_value(object).unwrap();
    assert_eq!(object.metadata.name(), export_data_object_name("exec"));
    assert_eq!(object.metadata.namespace(), "ns");
    assert_eq!(object.data, Some(json!({"a": {"x": 1}, "b": null})));
    assert_eq!(
        object.metadata.label(DATA_OBJECT_CONTEXT_LABEL),
        Some("Exec.exec")
    );
    assert_eq!(
        object.metadata.label(DATA_OBJECT_SOURCE_LABEL),
        Some("Exec.exec")
    );
    assert_eq!(object.metadata.label(DATA_OBJECT_SOURCE_TYPE_LABEL), None);
    assert_eq!(
        object
            .metadata
            .annotation(DATA_OBJECT_HASH_ANNOTATION)
            .map(str::len),
        Some(40)
    );
    let owner = &object.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("Execution", "exec-uid")
    );
    assert_eq!(owner.controller, None);

    let status = new_status(&step);
    assert_eq!(status.phase, Some(Phase::Succeeded));
    assert_eq!(status.job_id_finished.as_deref(), Some(JOB));
    assert_eq!(
        status.export_reference,
        Some(ObjectReference::new("ns", export_data_object_name("exec")))
    );
    assert_eq!(
        status.deploy_item_cache.as_ref().unwrap().orphaned_dis,
        None
    );
    assert_eq!(status.last_error, None);
    assert_eq!(step.next, Next::Idle);
}

#[test]
fn the_from_secret_mark_passes_to_deploy_items_and_the_export() {
    let mut exec = execution(vec![template("a", &[])], None);
    exec.metadata.set_annotation(FROM_SECRET_ANNOTATION, "true");
    let created = created_items(&run(&exec, &View::default()));
    assert_eq!(
        created[0].metadata.annotation(FROM_SECRET_ANNOTATION),
        Some("true")
    );
    // Unmarked executions write unmarked items.
    exec.metadata.remove_annotation(FROM_SECRET_ANNOTATION);
    let created = created_items(&run(&exec, &View::default()));
    assert_eq!(created[0].metadata.annotation(FROM_SECRET_ANNOTATION), None);

    let mut exec = execution(vec![template("a", &[])], Some(Phase::Completing));
    exec.metadata.set_annotation(FROM_SECRET_ANNOTATION, "true");
    let mut v = view(vec![with_export(done("a", Phase::Succeeded))]);
    v.exports.insert("exec-a-abcde".into(), Ok(json!({"x": 1})));
    let step = run(&exec, &v);
    let Write::Create(object) = &step.writes[0] else {
        panic!("a create: {:?}", step.writes)
    };
    let object: DataObject = from_value(object).unwrap();
    assert_eq!(
        object.metadata.annotation(FROM_SECRET_ANNOTATION),
        Some("true")
    );
}

#[test]
fn the_export_data_object_name_is_landscapers() {
    // base32(sha1("Exec.hello-world/")), lower case, no padding.
    assert_eq!(
        export_data_object_name("hello-world"),
        "jy4fil7swwq7dpjnxefqq2iph7dou2yj"
    );
}

#[test]
fn an_existing_export_data_object_is_updated() {
    let exec = execution(vec![template("a", &[])], Some(Phase::Completing));
    let mut existing = DataObject::with_metadata(ObjectMeta::namespaced(
        "ns",
        export_data_object_name("exec"),
    ));
    existing.metadata.resource_version = Some("7".into());
    existing.metadata.set_label(DATA_OBJECT_JOB_ID_LABEL, "j");
    existing.metadata.set_label("other", "kept");
    existing.data = Some(json!({"a": {"old": true}}));
    let mut v = view(vec![done("a", Phase::Succeeded)]);
    v.export_object = Some(existing);
    let step = run(&exec, &v);
    let Write::Update(object) = &step.writes[0] else {
        panic!("an update")
    };
    let object: DataObject = from_value(object).unwrap();
    assert_eq!(object.metadata.resource_version.as_deref(), Some("7"));
    assert_eq!(object.metadata.label("other"), Some("kept"));
    assert_eq!(object.metadata.label(DATA_OBJECT_JOB_ID_LABEL), None);
    assert_eq!(object.data, Some(json!({"a": null})));
}

#[test]
fn unreadable_exports_repeat_completing() {
    let exec = execution(vec![template("a", &[])], Some(Phase::Completing));
    let mut v = view(vec![with_export(done("a", Phase::Succeeded))]);
    v.exports.insert(
        "exec-a-abcde".into(),
        Err("secrets \"exec-a-abcde-export\" not found".into()),
    );
    let step = run(&exec, &v);
    assert!(step.writes.is_empty());
    assert_eq!(new_phase(&step), Phase::Completing);
    assert_eq!(
        last_error(&step),
        (
            "CollectAndUpdateExports".into(),
            "AddExports".into(),
            "secrets \"exec-a-abcde-export\" not found".into()
        )
    );
    assert!(matches!(step.next, Next::Retry(_)));

    v.exports.insert("exec-a-abcde".into(), Ok(json!([1, 2])));
    let step = run(&exec, &v);
    assert!(last_error(&step).2.contains("cannot unmarshal array"));
}

// --- deletion ---------------------------------------------------------------------------------

#[test]
fn init_delete_propagates_delete_without_uninstall_and_deletes_all_items() {
    let mut exec = deploying(execution(vec![template("a", &[])], Some(Phase::Succeeded)));
    exec.metadata
        .set_annotation(DELETE_WITHOUT_UNINSTALL_ANNOTATION, "true");
    let step = run(
        &exec,
        &view(vec![idle("a"), deleting(idle("already")), idle("orphan")]),
    );
    let updated = updated_items(&step);
    assert_eq!(updated.len(), 3);
    for di in updated.values() {
        assert_eq!(
            di.metadata.annotation(DELETE_WITHOUT_UNINSTALL_ANNOTATION),
            Some("true")
        );
    }
    assert_eq!(deleted_keys(&step), vec![di_key("a"), di_key("orphan")]);
    assert_eq!(new_phase(&step), Phase::Deleting);
    assert_eq!(step.next, Next::Continue);
}

#[test]
fn deletion_goes_in_reverse_dependency_order() {
    let exec = deploying(execution(
        vec![
            template("a", &[]),
            template("b", &["a"]),
            template("c", &["b"]),
        ],
        Some(Phase::Deleting),
    ));
    let all = || {
        vec![
            deleting(idle("a")),
            deleting(idle("b")),
            deleting(idle("c")),
        ]
    };
    let step = run(&exec, &view(all()));
    assert_eq!(triggered_names(&step), vec!["c"]);
    assert!(
        step.execution.is_none(),
        "still Deleting, nothing new to record"
    );
    assert_eq!(step.next, Next::Wait);

    let step = run(
        &exec,
        &view(vec![
            deleting(idle("a")),
            deleting(idle("b")),
            deleting(running("c")),
        ]),
    );
    assert!(triggered_names(&step).is_empty());
    assert_eq!(step.next, Next::Wait);

    // A finished, not failed item is about to vanish: still running.
    let step = run(
        &exec,
        &view(vec![
            deleting(idle("a")),
            deleting(idle("b")),
            deleting(done("c", Phase::Succeeded)),
        ]),
    );
    assert!(triggered_names(&step).is_empty());
    assert_eq!(step.next, Next::Wait);

    let step = run(&exec, &view(vec![deleting(idle("a")), deleting(idle("b"))]));
    assert_eq!(triggered_names(&step), vec!["b"]);
    let step = run(&exec, &view(vec![deleting(idle("a"))]));
    assert_eq!(triggered_names(&step), vec!["a"]);
}

#[test]
fn when_all_items_are_gone_the_finalizer_is_removed() {
    let mut exec = deploying(execution(vec![template("a", &[])], Some(Phase::Deleting)));
    exec.metadata.finalizers = Some(vec![LANDSCAPER_FINALIZER.into(), "other".into()]);
    let step = run(&exec, &View::default());
    let new = step.execution.as_ref().unwrap();
    assert_eq!(new.metadata.finalizers, Some(vec!["other".to_string()]));
    assert!(step.writes.is_empty());
    assert_eq!(step.next, Next::Idle);
}

#[test]
fn a_failed_deletion_ends_in_delete_failed_after_running_items_finished() {
    let exec = deploying(execution(
        vec![
            template("a", &[]),
            template("b", &[]),
            template("c", &["a"]),
        ],
        Some(Phase::Deleting),
    ));
    let step = run(
        &exec,
        &view(vec![
            deleting(idle("a")),
            deleting(running("b")),
            deleting(done("c", Phase::DeleteFailed)),
        ]),
    );
    assert!(triggered_names(&step).is_empty());
    assert_eq!(step.next, Next::Wait);

    let step = run(
        &exec,
        &view(vec![
            deleting(idle("a")),
            deleting(done("c", Phase::DeleteFailed)),
        ]),
    );
    assert_eq!(new_phase(&step), Phase::DeleteFailed);
    assert_eq!(
        last_error(&step),
        (
            "handleReconcilePhase".into(),
            "handlePhaseDeleting".into(),
            "has failed items".into()
        )
    );
    assert_eq!(new_status(&step).job_id_finished.as_deref(), Some(JOB));
    assert_eq!(step.next, Next::Idle);
}

#[test]
fn a_deletion_stuck_in_a_cycle_fails() {
    let exec = deploying(execution(
        vec![template("a", &["b"]), template("b", &["a"])],
        Some(Phase::Deleting),
    ));
    let step = run(&exec, &view(vec![deleting(idle("a")), deleting(idle("b"))]));
    assert_eq!(new_phase(&step), Phase::DeleteFailed);
    assert_eq!(last_error(&step).2, "has pending items");
}

#[test]
fn deletion_without_uninstall_removes_finalizers_and_orphans_are_deleted_too() {
    let exec = deploying(execution(vec![template("a", &[])], Some(Phase::Deleting)));
    let mut a = deleting(idle("a"));
    a.metadata
        .set_annotation(DELETE_WITHOUT_UNINSTALL_ANNOTATION, "true");
    let step = run(
        &exec,
        &view(vec![a, deleting(idle("orphan")), idle("late")]),
    );
    let updated = updated_items(&step);
    assert_eq!(updated["a"].metadata.finalizers, None);
    assert_eq!(triggered_names(&step), vec!["orphan"]);
    assert_eq!(deleted_keys(&step), vec![di_key("late")]);
}

// --- interrupt --------------------------------------------------------------------------------

#[test]
fn interrupt_fails_every_unfinished_item_and_removes_the_annotation() {
    let mut exec = execution(
        vec![template("a", &[]), template("b", &[]), template("c", &[])],
        Some(Phase::Progressing),
    );
    exec.metadata
        .set_annotation(OPERATION_ANNOTATION, OPERATION_INTERRUPT);
    let mut c = deleting(idle("c"));
    c.status.as_mut().unwrap().first_error = Some(landscaper_store::model::Error {
        operation: "first".into(),
        ..Default::default()
    });
    let step = run(
        &exec,
        &view(vec![running("a"), done("b", Phase::Succeeded), c]),
    );
    let new = step.execution.as_ref().unwrap();
    assert_eq!(new.metadata.annotations, None);
    assert_eq!(
        new.status, exec.status,
        "the phase is handled in the next step"
    );
    assert_eq!(step.next, Next::Idle);

    let updated = updated_items(&step);
    assert_eq!(updated.keys().collect::<Vec<_>>(), vec!["a", "c"]);
    let a = updated["a"].status.clone().unwrap();
    assert_eq!(a.job_id.as_deref(), Some(JOB));
    assert_eq!(a.job_id_finished.as_deref(), Some(JOB));
    assert_eq!(a.phase, Some(Phase::Failed));
    let e = a.last_error.clone().unwrap();
    assert_eq!(
        (e.operation.as_str(), e.reason.as_str(), e.message.as_str()),
        (
            INTERRUPT_OPERATION,
            INTERRUPT_OPERATION,
            "operation was interrupted"
        )
    );
    assert_eq!(e.last_transition_time.as_deref(), Some(NOW));
    assert_eq!(a.first_error, Some(e.clone()));
    assert_eq!(a.last_errors, Some(vec![e]));
    assert_eq!(
        a.transition_times.unwrap().finished_time.as_deref(),
        Some(NOW)
    );
    let c = updated["c"].status.clone().unwrap();
    assert_eq!(
        c.phase,
        Some(Phase::DeleteFailed),
        "deleting items fail deleting"
    );
    assert_eq!(c.first_error.unwrap().operation, "first");
}

#[test]
fn after_an_interrupt_the_execution_fails() {
    let exec = execution(vec![template("a", &[])], Some(Phase::Progressing));
    let step = run(&exec, &view(vec![done("a", Phase::Failed)]));
    assert_eq!(new_phase(&step), Phase::Failed);
}

#[test]
fn an_interrupt_of_a_finished_execution_still_fails_stale_items() {
    let mut exec = execution(vec![template("a", &[])], Some(Phase::Succeeded));
    exec.status.as_mut().unwrap().job_id_finished = Some(JOB.into());
    exec.metadata
        .set_annotation(OPERATION_ANNOTATION, OPERATION_INTERRUPT);
    let step = run(&exec, &view(vec![idle("a")]));
    assert_eq!(updated_items(&step).len(), 1);
    assert_eq!(step.next, Next::Idle);
}

// --- writes -----------------------------------------------------------------------------------

#[test]
fn the_execution_is_written_last_with_its_resource_version() {
    let exec = execution(vec![template("a", &[])], Some(Phase::Progressing));
    let writes = run(&exec, &view(vec![idle("a")])).into_writes();
    let Some(Write::Update(last)) = writes.last() else {
        panic!("an update")
    };
    assert_eq!(last["kind"], "Execution");
    assert_eq!(last["metadata"]["resourceVersion"], "10");
    assert_eq!(writes.len(), 2);
    let Write::Update(di) = &writes[0] else {
        panic!("an update")
    };
    assert_eq!(di["metadata"]["resourceVersion"], "rv-a");
    assert!(
        matches!(&writes[0], Write::Update(v) if v.get("status").is_some_and(Value::is_object))
    );
}

#[test]
fn only_executions_without_a_controlling_installation_start_their_own_jobs() {
    let mut exec = Execution::with_metadata(ObjectMeta::namespaced("ns", "exec"));
    exec.metadata.generation = Some(1);
    let started = start_standalone_job(&exec, || "j1".into(), "now").expect("never ran");
    assert_eq!(
        started.status.as_ref().unwrap().job_id.as_deref(),
        Some("j1")
    );
    // Running: no new job.
    assert!(start_standalone_job(&started, || "j2".into(), "now").is_none());
    // Owned by an installation: its jobs come from there.
    let mut owned = exec.clone();
    owned.metadata.owner_references = Some(vec![landscaper_store::model::OwnerReference {
        api_version: "landscaper.gardener.cloud/v1alpha1".into(),
        kind: "Installation".into(),
        name: "inst".into(),
        uid: "u".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
    assert!(start_standalone_job(&owned, || "j1".into(), "now").is_none());
    // A finished deletion that failed waits for the reconcile annotation.
    let mut failed = exec.clone();
    failed.metadata.deletion_timestamp = Some("t".into());
    failed.status = Some(ExecutionStatus {
        job_id: Some("j1".into()),
        job_id_finished: Some("j1".into()),
        phase: Some(Phase::DeleteFailed),
        observed_generation: 1,
        ..Default::default()
    });
    assert!(start_standalone_job(&failed, || "j2".into(), "now").is_none());
    failed
        .metadata
        .set_annotation(OPERATION_ANNOTATION, OPERATION_RECONCILE);
    let retried = start_standalone_job(&failed, || "j2".into(), "now").expect("retry");
    assert_eq!(retried.metadata.annotation(OPERATION_ANNOTATION), None);
    // A deletion after a finished install job starts the delete job.
    let mut deleted = failed.clone();
    deleted.metadata.remove_annotation(OPERATION_ANNOTATION);
    deleted.status.as_mut().unwrap().phase = Some(Phase::Succeeded);
    assert!(start_standalone_job(&deleted, || "j3".into(), "now").is_some());
}
