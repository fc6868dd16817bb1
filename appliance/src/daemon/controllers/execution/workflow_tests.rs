//! The Execution machine's workflow path: the planner's decisions turned into writes, the
//! conditions recorded, the phases.

use std::collections::BTreeMap;

use landscaper_store::model::constants::*;
use landscaper_store::model::{
    ActivationCondition, Condition, CrdPresent, DeployItemStatus, ExecutionStatus, ObjectMeta,
    Resource, from_value,
};
use landscaper_store::{Kind, ObjectKey};

use super::super::{Step, View, step};
use super::*;

const NOW: &str = "2030-01-01T00:10:00Z";
const JOB: &str = "job-2";
const OLD_JOB: &str = "job-1";

fn template(name: &str, depends_on: &[&str], ext: Option<WorkflowExtension>) -> DeployItemTemplate {
    DeployItemTemplate {
        name: name.to_string(),
        r#type: MOCK_DEPLOYER_TYPE.to_string(),
        target: Some(landscaper_store::model::ObjectReference::new(
            "ns", "cluster",
        )),
        depends_on: (!depends_on.is_empty())
            .then(|| depends_on.iter().map(|s| s.to_string()).collect()),
        appliance: ext,
        ..DeployItemTemplate::default()
    }
}

fn precondition(expr: &str) -> Option<WorkflowExtension> {
    Some(WorkflowExtension {
        reconcile_precondition: Some(expr.to_string()),
        ..WorkflowExtension::default()
    })
}

fn execution(templates: Vec<DeployItemTemplate>, phase: Phase) -> Execution {
    let mut meta = ObjectMeta::namespaced("ns", "exec");
    meta.uid = Some("exec-uid".into());
    meta.generation = Some(3);
    meta.finalizers = Some(vec![LANDSCAPER_FINALIZER.into()]);
    let mut exec = Execution::with_metadata(meta);
    exec.spec.deploy_items = Some(templates);
    exec.status = Some(ExecutionStatus {
        job_id: Some(JOB.into()),
        job_id_finished: Some(OLD_JOB.into()),
        phase: Some(phase),
        observed_generation: 3,
        ..ExecutionStatus::default()
    });
    exec
}

fn with_policy(mut exec: Execution, yaml: &str) -> Execution {
    exec.metadata
        .set_annotation(landscaper_store::model::workflow::WORKFLOW_ANNOTATION, yaml);
    exec
}

fn item(spec_name: &str, job_id: &str, finished: &str, phase: Option<Phase>) -> DeployItem {
    let mut meta = ObjectMeta::namespaced("ns", format!("exec-{spec_name}-abcde"));
    meta.resource_version = Some(format!("rv-{spec_name}"));
    meta.set_label(EXECUTION_MANAGED_BY_LABEL, "exec");
    meta.set_label(EXECUTION_MANAGED_NAME_LABEL, spec_name);
    meta.finalizers = Some(vec![LANDSCAPER_FINALIZER.into()]);
    let mut di = DeployItem::with_metadata(meta);
    di.status = Some(DeployItemStatus {
        job_id: (!job_id.is_empty()).then(|| job_id.to_string()),
        job_id_finished: (!finished.is_empty()).then(|| finished.to_string()),
        phase,
        ..DeployItemStatus::default()
    });
    di
}

fn idle(name: &str) -> DeployItem {
    item(name, OLD_JOB, OLD_JOB, Some(Phase::Succeeded))
}

fn done(name: &str, phase: Phase) -> DeployItem {
    item(name, JOB, JOB, Some(phase))
}

fn deleting(mut di: DeployItem) -> DeployItem {
    di.metadata.deletion_timestamp = Some("2030-01-01T00:00:00Z".into());
    di
}

fn view(items: Vec<DeployItem>, crds: &[&str]) -> View {
    let state = TargetState {
        objects: json!({}),
        crds: crds.iter().map(|s| s.to_string()).collect(),
    };
    let targets = ["a", "b", "c", "d", "mon"]
        .into_iter()
        .map(|n| (n.to_string(), Ok(state.clone())))
        .collect();
    View {
        deploy_items: items,
        workflow: Some(WorkflowInputs {
            imports: json!({}),
            targets,
            ready_timeout: Some(Duration::from_secs(600)),
            owner: None,
        }),
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

fn created(step: &Step) -> Vec<String> {
    step.writes
        .iter()
        .filter_map(|w| match w {
            Write::Create(v) if v["kind"] == "DeployItem" => Some(
                v["metadata"]["labels"][EXECUTION_MANAGED_NAME_LABEL]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            ),
            _ => None,
        })
        .collect()
}

fn deleted(step: &Step) -> Vec<String> {
    step.writes
        .iter()
        .filter_map(|w| match w {
            Write::Delete { key, .. } if key.kind == Kind::DeployItem => Some(key.name.clone()),
            _ => None,
        })
        .collect()
}

fn updated(step: &Step) -> BTreeMap<String, DeployItem> {
    step.writes
        .iter()
        .filter_map(|w| match w {
            Write::Update(v) if v["kind"] == "DeployItem" => {
                let di: DeployItem = from_value(v).expect("a deploy item");
                let name = di
                    .metadata
                    .label(EXECUTION_MANAGED_NAME_LABEL)
                    .unwrap_or_default()
                    .to_string();
                Some((name, di))
            }
            _ => None,
        })
        .collect()
}

fn triggered_names(step: &Step) -> Vec<String> {
    updated(step)
        .into_iter()
        .filter(|(_, di)| job_id(di) == JOB && job_id_finished(di) != JOB)
        .map(|(n, _)| n)
        .collect()
}

fn exec_condition(step: &Step, ty: &str) -> Condition {
    new_status(step)
        .conditions
        .iter()
        .flatten()
        .find(|c| c.r#type == ty)
        .cloned()
        .unwrap_or_else(|| panic!("no condition {ty}"))
}

#[test]
fn without_a_block_the_landscaper_path_runs() {
    let exec = execution(vec![template("a", &[], None)], Phase::Init);
    assert!(!has_block(&exec));
    // Landscaper's Init creates every item at once.
    let step = run(&exec, &view(vec![], &[]));
    assert_eq!(created(&step), vec!["a"]);
}

#[test]
fn init_with_a_block_creates_nothing_and_progressing_creates_what_may_run() {
    let exec = execution(
        vec![
            template("a", &[], None),
            template("b", &["a"], precondition("false")),
        ],
        Phase::Init,
    );
    assert!(has_block(&exec));
    let step = run(&exec, &view(vec![], &[]));
    assert!(created(&step).is_empty());
    assert_eq!(new_phase(&step), Phase::Progressing);

    let exec = execution(exec.spec.deploy_items.clone().unwrap(), Phase::Progressing);
    let step = run(&exec, &view(vec![], &[]));
    // b's precondition is false: never created.
    assert_eq!(created(&step), vec!["a"]);
    assert_eq!(step.next, Next::Wait);
    let c = exec_condition(&step, "b/ReconcilePrecondition");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "ConditionNotMet")
    );
}

#[test]
fn an_existing_item_is_triggered_and_a_false_precondition_item_is_not() {
    let exec = execution(
        vec![
            template("a", &[], None),
            template("b", &["a"], precondition("false")),
        ],
        Phase::Progressing,
    );
    let step = run(&exec, &view(vec![done("a", Phase::Succeeded)], &[]));
    // a is ready, b is gone (never created): the job completes.
    assert!(created(&step).is_empty());
    assert_eq!(new_phase(&step), Phase::Completing);

    let step = run(&exec, &view(vec![idle("a")], &[]));
    assert_eq!(triggered_names(&step), vec!["a"]);
}

#[test]
fn a_false_precondition_deletes_the_subtree_in_reverse_order() {
    // a <- b <- c, a's precondition false: c first, then b, then a.
    let exec = execution(
        vec![
            template("a", &[], precondition("false")),
            template("b", &["a"], None),
            template("c", &["b"], None),
        ],
        Phase::Progressing,
    );
    let step = run(&exec, &view(vec![idle("a"), idle("b"), idle("c")], &[]));
    assert_eq!(deleted(&step), vec!["exec-c-abcde"]);
    assert_eq!(step.next, Next::Wait);
    // c deleting (deletion timestamp, not triggered yet): triggered now; b still waits.
    let step = run(
        &exec,
        &view(vec![idle("a"), idle("b"), deleting(idle("c"))], &[]),
    );
    assert_eq!(triggered_names(&step), vec!["c"]);
    assert!(deleted(&step).is_empty());
    // c gone: b next.
    let step = run(&exec, &view(vec![idle("a"), idle("b")], &[]));
    assert_eq!(deleted(&step), vec!["exec-b-abcde"]);
    let step = run(&exec, &view(vec![idle("a")], &[]));
    assert_eq!(deleted(&step), vec!["exec-a-abcde"]);
    let step = run(&exec, &view(vec![], &[]));
    assert_eq!(new_phase(&step), Phase::Completing);
}

#[test]
fn crd_present_activation_leaves_the_item_alone_until_the_crd_exists() {
    let mon = WorkflowExtension {
        activation_condition: Some(ActivationCondition::CrdPresent(CrdPresent {
            crd_present: "servicemonitors.monitoring.coreos.com".into(),
        })),
        ..WorkflowExtension::default()
    };
    let exec = execution(
        vec![template("a", &[], None), template("mon", &["a"], Some(mon))],
        Phase::Progressing,
    );
    let step = run(&exec, &view(vec![done("a", Phase::Succeeded)], &[]));
    assert!(created(&step).is_empty());
    assert_eq!(new_phase(&step), Phase::Completing);
    let c = exec_condition(&step, "mon/ActivationCondition");
    assert_eq!(c.status, "False");
    assert!(
        c.message
            .contains("servicemonitors.monitoring.coreos.com is not present")
    );

    // The job finished with mon inactive: the machine keeps looking (Wait) ...
    let mut finished = step.execution.clone().unwrap();
    let status = finished.status.as_mut().unwrap();
    status.phase = Some(Phase::Succeeded);
    status.job_id_finished = Some(JOB.into());
    let step = run(&finished, &view(vec![done("a", Phase::Succeeded)], &[]));
    assert_eq!(step.next, Next::Wait);
    assert!(step.execution.is_none());
    // ... and once the CRD is there, a standalone Execution asks for a new job.
    let step = run(
        &finished,
        &view(
            vec![done("a", Phase::Succeeded)],
            &["servicemonitors.monitoring.coreos.com"],
        ),
    );
    assert_eq!(step.next, Next::Continue);
    let exec = step.execution.expect("annotated");
    assert_eq!(
        exec.metadata.annotation(OPERATION_ANNOTATION),
        Some(OPERATION_RECONCILE)
    );

    // In the next job the CRD is present: mon is created after a.
    let exec = execution(exec.spec.deploy_items.clone().unwrap(), Phase::Progressing);
    let step = run(
        &exec,
        &view(
            vec![done("a", Phase::Succeeded)],
            &["servicemonitors.monitoring.coreos.com"],
        ),
    );
    assert_eq!(created(&step), vec!["mon"]);
}

#[test]
fn continue_independent_finishes_the_other_branch_and_aggregates_the_error() {
    // Diamond a <- (b, c) <- d; b fails.
    let templates = vec![
        template("a", &[], None),
        template("b", &["a"], None),
        template("c", &["a"], None),
        template("d", &["b", "c"], None),
    ];
    let items = || {
        vec![
            done("a", Phase::Succeeded),
            done("b", Phase::Failed),
            idle("c"),
            idle("d"),
        ]
    };
    let fail_fast = with_policy(
        execution(templates.clone(), Phase::Progressing),
        "maxConcurrency: 4",
    );
    let step = run(&fail_fast, &view(items(), &[]));
    assert!(triggered_names(&step).is_empty(), "FailFast starts nothing");
    assert_eq!(new_phase(&step), Phase::Failed);

    let cont = with_policy(
        execution(templates, Phase::Progressing),
        "failurePolicy: ContinueIndependent",
    );
    let step = run(&cont, &view(items(), &[]));
    assert_eq!(triggered_names(&step), vec!["c"]);
    assert_eq!(new_phase(&step), Phase::Progressing);
    let mut items = items();
    items[2] = done("c", Phase::Succeeded);
    let step = run(&cont, &view(items, &[]));
    assert_eq!(new_phase(&step), Phase::Failed);
    let error = new_status(&step).last_error.clone().expect("an error");
    assert!(
        error.message.contains("1 dependent failed: b:"),
        "{}",
        error.message
    );
}

#[test]
fn max_concurrency_bounds_the_items_started() {
    let exec = with_policy(
        execution(
            vec![
                template("a", &[], None),
                template("b", &[], None),
                template("c", &[], None),
            ],
            Phase::Progressing,
        ),
        "maxConcurrency: 2",
    );
    let step = run(&exec, &view(vec![idle("a"), idle("b"), idle("c")], &[]));
    assert_eq!(triggered_names(&step), vec!["a", "b"]);
}

#[test]
fn a_ready_postcondition_gates_successors_until_the_timeout() {
    let ext = WorkflowExtension {
        ready_postcondition: Some("has(self.exports.ready) && self.exports.ready".into()),
        ..WorkflowExtension::default()
    };
    let exec = execution(
        vec![template("a", &[], Some(ext)), template("b", &["a"], None)],
        Phase::Progressing,
    );
    let mut a = done("a", Phase::Succeeded);
    a.status.as_mut().unwrap().transition_times = Some(landscaper_store::model::TransitionTimes {
        finished_time: Some("2030-01-01T00:05:00Z".into()),
        ..Default::default()
    });
    let mut v = view(vec![a.clone(), idle("b")], &[]);
    v.exports
        .insert(a.metadata.name().to_string(), Ok(json!({"ready": false})));
    let step = run(&exec, &v);
    assert!(triggered_names(&step).is_empty());
    assert_eq!(step.next, Next::Wait);
    // The item records the result too.
    let a_new = updated(&step).remove("a").expect("a's conditions written");
    let c = a_new.status.unwrap().conditions.unwrap();
    assert_eq!(c[0].r#type, "ReadyPostcondition");
    assert_eq!(c[0].status, "False");

    v.exports
        .insert(a.metadata.name().to_string(), Ok(json!({"ready": true})));
    let step = run(&exec, &v);
    assert_eq!(triggered_names(&step), vec!["b"]);

    // Ten minutes after a finished, the wait fails the job.
    v.exports
        .insert(a.metadata.name().to_string(), Ok(json!({"ready": false})));
    v.workflow.as_mut().unwrap().ready_timeout = Some(Duration::from_secs(60));
    let step = run(&exec, &v);
    assert_eq!(new_phase(&step), Phase::Failed);
}

#[test]
fn an_unchanged_result_writes_nothing_again() {
    // a reconciled, its ready postcondition false: the step records the results and waits.
    let ext = WorkflowExtension {
        ready_postcondition: Some("false".into()),
        ..WorkflowExtension::default()
    };
    let exec = execution(
        vec![template("a", &[], Some(ext)), template("b", &["a"], None)],
        Phase::Progressing,
    );
    let first = run(
        &exec,
        &view(vec![done("a", Phase::Succeeded), idle("b")], &[]),
    );
    assert_eq!(first.next, Next::Wait);
    let a = updated(&first).remove("a").expect("a's conditions written");
    let exec2 = first.execution.clone().expect("conditions recorded");
    // The same world again, a minute later: neither the item nor the conditions change.
    let second = step(
        &exec2,
        &view(vec![a.clone(), idle("b")], &[]),
        "2030-01-01T00:11:00Z",
        &mut || "x".to_string(),
    );
    assert!(updated(&second).is_empty(), "{:?}", second.writes);
    let conditions = |s: &Step| {
        s.execution
            .as_ref()
            .unwrap_or(&exec2)
            .status
            .as_ref()
            .and_then(|st| st.conditions.clone())
    };
    assert_eq!(conditions(&second), conditions(&first));
    assert_eq!(
        a.status.unwrap().conditions.unwrap()[0]
            .last_update_time
            .as_deref(),
        Some(NOW)
    );
}

#[test]
fn an_invalid_expression_fails_the_job_naming_the_item_and_field() {
    let exec = execution(
        vec![template("a", &[], precondition("imports.("))],
        Phase::Progressing,
    );
    let step = run(&exec, &view(vec![], &[]));
    assert_eq!(new_phase(&step), Phase::Failed);
    let message = new_status(&step).last_error.clone().unwrap().message;
    assert!(
        message.contains("Execution ns/exec")
            && message.contains("deployItems[a].appliance.reconcilePrecondition"),
        "{message}"
    );
}

#[test]
fn cleanup_waits_for_the_delete_postcondition_before_the_predecessor() {
    let ext = WorkflowExtension {
        delete_postcondition: Some("!has(objects.Namespace)".into()),
        ..WorkflowExtension::default()
    };
    let mut exec = execution(
        vec![template("a", &[], None), template("b", &["a"], Some(ext))],
        Phase::Deleting,
    );
    exec.metadata.deletion_timestamp = Some("2030-01-01T00:00:00Z".into());
    // InitDelete with a block deletes nothing at once.
    let mut init = exec.clone();
    init.status.as_mut().unwrap().phase = Some(Phase::Succeeded);
    let step = run(&init, &view(vec![idle("a"), idle("b")], &[]));
    assert!(deleted(&step).is_empty());
    assert_eq!(new_phase(&step), Phase::Deleting);

    let step = run(&exec, &view(vec![idle("a"), idle("b")], &[]));
    assert_eq!(deleted(&step), vec!["exec-b-abcde"]);
    // b gone, but its namespace still on the target: a waits.
    let mut v = view(vec![idle("a")], &[]);
    v.workflow.as_mut().unwrap().targets.insert(
        "b".into(),
        Ok(TargetState {
            objects: json!({"Namespace": {"": {"app": {}}}}),
            crds: Default::default(),
        }),
    );
    let step = run(&exec, &v);
    assert!(deleted(&step).is_empty());
    assert_eq!(step.next, Next::Wait);
    let step = run(&exec, &view(vec![idle("a")], &[]));
    assert_eq!(deleted(&step), vec!["exec-a-abcde"]);
    // Everything gone: the finalizer goes.
    let step = run(&exec, &view(vec![], &[]));
    assert_eq!(step.next, Next::Idle);
    let out = step.execution.unwrap();
    assert!(out.metadata.finalizers.iter().flatten().next().is_none());
    let _ = ObjectKey::new(Kind::DeployItem, "ns", "x");
}

#[test]
fn admission_rejects_an_invalid_expression_naming_the_field() {
    let exec = execution(
        vec![template("a", &[], precondition("imports.flag &&"))],
        Phase::Init,
    );
    let (field, message) = check_admission(&exec).expect_err("invalid");
    assert_eq!(field, "spec.deployItems");
    assert!(
        message.contains("Execution ns/exec")
            && message.contains("deployItems[a].appliance.reconcilePrecondition"),
        "{message}"
    );
    let bad_policy = with_policy(
        execution(vec![template("a", &[], None)], Phase::Init),
        "failurePolicy: Sometimes",
    );
    let (field, _) = check_admission(&bad_policy).expect_err("invalid policy");
    assert_eq!(field, "metadata.annotations");
    let fine = execution(vec![template("a", &[], precondition("true"))], Phase::Init);
    assert!(check_admission(&fine).is_ok());
    let none = execution(vec![template("a", &[], None)], Phase::Init);
    assert!(check_admission(&none).is_ok());
}

#[test]
fn an_owned_execution_asks_its_installation_for_a_job_when_an_item_activates() {
    let mon = WorkflowExtension {
        activation_condition: Some(ActivationCondition::CrdPresent(CrdPresent {
            crd_present: "servicemonitors.monitoring.coreos.com".into(),
        })),
        ..WorkflowExtension::default()
    };
    let mut exec = execution(vec![template("mon", &[], Some(mon))], Phase::Succeeded);
    exec.metadata.owner_references = Some(vec![landscaper_store::model::OwnerReference {
        api_version: "landscaper.gardener.cloud/v1alpha1".into(),
        kind: "Installation".into(),
        name: "inst".into(),
        uid: "inst-uid".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
    assert_eq!(owner_name(&exec), Some("inst"));
    let status = exec.status.as_mut().unwrap();
    status.job_id_finished = Some(JOB.into());
    status.conditions = Some(vec![Condition {
        r#type: "mon/ActivationCondition".into(),
        status: "False".into(),
        ..Condition::default()
    }]);
    let owner =
        landscaper_store::model::Installation::with_metadata(ObjectMeta::namespaced("ns", "inst"));
    let mut v = view(vec![], &[]);
    v.workflow.as_mut().unwrap().owner = Some(owner.clone());
    // Still inactive: nothing written, looked at again later.
    let step = run(&exec, &v);
    assert_eq!(step.next, Next::Wait);
    assert!(step.writes.is_empty() && step.execution.is_none());
    // The CRD appears: the Installation gets the reconcile annotation.
    let mut v = view(vec![], &["servicemonitors.monitoring.coreos.com"]);
    v.workflow.as_mut().unwrap().owner = Some(owner);
    let step = run(&exec, &v);
    let written: Vec<&Value> = step
        .writes
        .iter()
        .filter_map(|w| match w {
            Write::Update(v) if v["kind"] == "Installation" => Some(v),
            _ => None,
        })
        .collect();
    assert_eq!(written.len(), 1);
    assert_eq!(
        written[0]["metadata"]["annotations"][OPERATION_ANNOTATION],
        OPERATION_RECONCILE
    );
    assert!(
        step.execution.is_none(),
        "the Execution itself is not touched"
    );
}

#[test]
fn the_owning_installations_imports_reach_the_expressions() {
    let exec = execution(
        vec![template(
            "a",
            &[],
            precondition("imports.monitoring == true"),
        )],
        Phase::Progressing,
    );
    let with = |flag: bool| {
        let mut v = view(vec![], &[]);
        v.workflow.as_mut().unwrap().imports = json!({"monitoring": flag});
        v
    };
    let step = run(&exec, &with(true));
    assert_eq!(created(&step), vec!["a"]);
    let c = exec_condition(&step, "a/ReconcilePrecondition");
    assert_eq!(c.status, "True");
    let step = run(&exec, &with(false));
    assert!(created(&step).is_empty());
    assert_eq!(
        exec_condition(&step, "a/ReconcilePrecondition").status,
        "False"
    );
}

#[test]
fn an_inactive_item_is_rechecked_over_the_imports() {
    let mon = WorkflowExtension {
        activation_condition: Some(ActivationCondition::Expression("imports.monitoring".into())),
        ..WorkflowExtension::default()
    };
    let mut exec = execution(vec![template("mon", &[], Some(mon))], Phase::Succeeded);
    let status = exec.status.as_mut().unwrap();
    status.job_id_finished = Some(JOB.into());
    status.conditions = Some(vec![Condition {
        r#type: "mon/ActivationCondition".into(),
        status: "False".into(),
        ..Condition::default()
    }]);
    let mut v = view(vec![], &[]);
    v.workflow.as_mut().unwrap().imports = json!({"monitoring": false});
    let step = run(&exec, &v);
    assert_eq!(step.next, Next::Wait);
    assert!(step.execution.is_none());
    // The import turns true: the standalone Execution asks itself for a new job.
    v.workflow.as_mut().unwrap().imports = json!({"monitoring": true});
    let step = run(&exec, &v);
    let written = step.execution.as_ref().expect("the execution is written");
    assert_eq!(
        written.metadata.annotation(OPERATION_ANNOTATION),
        Some(OPERATION_RECONCILE)
    );
}
