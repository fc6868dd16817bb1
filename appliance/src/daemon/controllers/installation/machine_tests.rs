//! Unit tests of the pure installation phase machine: its decision functions and [`step`]
//! over hand-built views (no store).

use super::*;
use crate::daemon::controllers::installation::dataflow;
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

// --- step over hand-built views ---------------------------------------------------------------

mod steps {
    use landscaper_store::model::{DeployItemTemplate, InstallationStatus};
    use landscaper_store::{Kind, ObjectKey, Write};
    use landscaper_templating::blueprint::{Bindings, Blueprint};
    use serde_json::{Value, json};

    use super::super::*;
    use crate::daemon::controllers::installation::dataflow::RenderedSubobjects;

    const NOW: &str = "2030-01-01T00:00:00Z";
    const JOB: &str = "job-2";

    fn now() -> Now {
        Now {
            time: NOW.into(),
            instant: NOW.parse().unwrap(),
            new_job_id: "job-new".into(),
            ready_timeout: None,
        }
    }

    /// An installation object (`spec` as given) with a status.
    fn object(name: &str, parent: Option<&str>, spec: Value, status: Value) -> Value {
        let mut labels = serde_json::Map::new();
        if let Some(p) = parent {
            labels.insert(ENCOMPASSED_BY_LABEL.into(), json!(p));
        }
        json!({
            "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                "generation": 1, "finalizers": [LANDSCAPER_FINALIZER], "labels": labels},
            "spec": spec,
            "status": status,
        })
    }

    /// A root in `phase` of the running job `JOB`.
    fn running(name: &str, spec: Value, phase: &str) -> Value {
        object(
            name,
            None,
            spec,
            json!({"jobID": JOB, "jobIDFinished": "job-1", "phase": phase, "observedGeneration": 1}),
        )
    }

    fn typed(v: &Value) -> Installation {
        from_value(v).unwrap()
    }

    fn run(v: &Value, view: &View) -> Step {
        step(v, &typed(v), false, view, &now())
    }

    fn annotate(mut v: Value, k: &str, val: &str) -> Value {
        crate::daemon::controllers::jobs::set_annotation(&mut v, k, Some(val));
        v
    }

    fn deleted(mut v: Value) -> Value {
        v["metadata"]["deletionTimestamp"] = json!("2029-12-31T00:00:00Z");
        v
    }

    /// The installation's own status as written by `s` (the last update of it).
    fn written_status(s: &Step, name: &str) -> InstallationStatus {
        s.writes
            .iter()
            .rev()
            .find_map(|w| match w {
                Write::Update(v)
                    if v["kind"] == "Installation" && v["metadata"]["name"] == name =>
                {
                    Some(
                        from_value::<Installation>(v)
                            .unwrap()
                            .status
                            .unwrap_or_default(),
                    )
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("no status of {name} written: {s:#?}"))
    }

    fn deferred_status(s: &Step) -> InstallationStatus {
        match &s.next {
            Next::Defer(v) => typed(v).status.unwrap_or_default(),
            other => panic!("not deferred: {other:?}"),
        }
    }

    fn child(name: &str, parent: &str, status: Value, template: &str) -> (Value, Installation) {
        let mut v = object(name, Some(parent), json!({}), status);
        v["metadata"]["ownerReferences"] = json!([{"apiVersion": "landscaper.gardener.cloud/v1alpha1",
            "uid": format!("uid-{parent}"), "kind": "Installation", "name": parent}]);
        crate::daemon::controllers::jobs::set_annotation(
            &mut v,
            SUBINSTALLATION_NAME_ANNOTATION,
            Some(template),
        );
        let i = typed(&v);
        (v, i)
    }

    fn execution(job: &str, finished: &str, phase: &str) -> (Value, Execution) {
        let v = json!({
            "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Execution",
            "metadata": {"name": "a", "namespace": "ns", "uid": "uid-exec"},
            "spec": {"deployItems": []},
            "status": {"jobID": job, "jobIDFinished": finished, "phase": phase},
        });
        let e = from_value(&v).unwrap();
        (v, e)
    }

    fn with_children(
        subs: Vec<(Value, Installation)>,
        execution: Option<(Value, Execution)>,
    ) -> View {
        View {
            children: Some(Ok(Children { subs, execution })),
            ..View::default()
        }
    }

    fn exporting(_name: &str, data_ref: &str) -> Value {
        json!({"exports": {"data": [{"name": "out", "dataRef": data_ref}]}, "blueprint": {}})
    }

    fn importer(name: &str, data_ref: &str, status: Value) -> Installation {
        typed(&object(
            name,
            None,
            json!({"imports": {"data": [{"name": "in", "dataRef": data_ref}]}}),
            status,
        ))
    }

    fn blueprint() -> Blueprint {
        Blueprint::from_yamlfs(&json!({"blueprint.yaml":
            "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\n"}))
        .unwrap()
    }

    fn item(name: &str) -> DeployItemTemplate {
        DeployItemTemplate {
            name: name.into(),
            r#type: MOCK_DEPLOYER_TYPE.into(),
            config: Some(json!({"n": name})),
            ..DeployItemTemplate::default()
        }
    }

    /// An Init view that loaded everything: no own exports, no predecessors.
    fn init_view(items: Vec<DeployItemTemplate>, children: Children) -> View {
        View {
            children: Some(Ok(children)),
            init: Some(InitView {
                own_exports: Some(Ok(Vec::new())),
                context_exists: Some(Ok(true)),
                blueprint: Some(Ok(blueprint())),
                components: None,
                exporters: Some(Ok(Vec::new())),
                predecessors: Some(Ok(Vec::new())),
                values: Some(Ok(serde_json::Map::new())),
                rendered: Some(Ok((
                    Bindings::default(),
                    RenderedSubobjects {
                        deploy_items: items,
                        subinstallations: Vec::new(),
                        component_blueprints: BTreeMap::new(),
                    },
                ))),
                from_secret: Some(Ok(false)),
                current: Some(Ok(BTreeMap::new())),
                execution_taken: Some(Ok(false)),
                predecessors_after: Some(Ok(Vec::new())),
            }),
            ..View::default()
        }
    }

    fn error_of(s: &InstallationStatus) -> (String, String) {
        let e = s.last_error.clone().expect("lastError");
        (e.operation, e.reason)
    }

    // --- before the phases ---

    #[test]
    fn a_new_installation_gets_its_finalizer_with_the_next_commit() {
        let mut v = object("a", None, json!({}), json!({}));
        v["metadata"]["finalizers"] = json!([]);
        let s = run(&v, &View::default());
        assert!(s.writes.is_empty());
        match &s.next {
            Next::Defer(d) => {
                assert_eq!(d["metadata"]["finalizers"], json!([LANDSCAPER_FINALIZER]))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_reconcile_annotation_starts_a_job_with_the_given_id() {
        let v = annotate(
            object(
                "a",
                None,
                json!({}),
                json!({"jobID": "j1", "jobIDFinished": "j1", "phase": "Succeeded"}),
            ),
            OPERATION_ANNOTATION,
            OPERATION_RECONCILE,
        );
        let s = run(&v, &View::default());
        assert_eq!(s.next, Next::Continue);
        let st = written_status(&s, "a");
        assert_eq!(st.job_id.as_deref(), Some("job-new"));
        assert_eq!(
            st.transition_times.unwrap().trigger_time.as_deref(),
            Some(NOW)
        );
        let Write::Update(u) = &s.writes[0] else {
            panic!()
        };
        assert!(u["metadata"].get("annotations").is_none(), "{u}");
    }

    #[test]
    fn a_new_job_enters_init_without_a_commit_of_its_own() {
        let v = object(
            "a",
            None,
            json!({}),
            json!({"jobID": "j2", "jobIDFinished": "j1", "phase": "Succeeded"}),
        );
        // Nothing is read for the entry.
        assert_eq!(plan(&typed(&v)).needs, Needs::Nothing);
        let s = run(&v, &View::default());
        assert!(s.writes.is_empty());
        let st = deferred_status(&s);
        assert_eq!(st.phase, Some(Phase::Init));
        assert_eq!(st.transition_times.unwrap().init_time.as_deref(), Some(NOW));
    }

    #[test]
    fn recorded_dependents_are_triggered_roots_by_annotation_subinstallations_by_event() {
        let v = object(
            "a",
            None,
            json!({}),
            json!({"jobID": "j1", "jobIDFinished": "j1", "phase": "Succeeded",
                   "dependentsToTrigger": [{"name": "root"}, {"name": "sub"}, {"name": "gone"}, {"name": "asked"}]}),
        );
        let i = typed(&v);
        assert_eq!(
            plan(&i).needs,
            Needs::Dependents(vec![
                "root".into(),
                "sub".into(),
                "gone".into(),
                "asked".into()
            ])
        );
        let view = View {
            dependents: vec![
                (
                    "root".into(),
                    Some(object("root", None, json!({}), json!({}))),
                ),
                (
                    "sub".into(),
                    Some(object("sub", Some("p"), json!({}), json!({}))),
                ),
                ("gone".into(), None),
                (
                    "asked".into(),
                    Some(annotate(
                        object("asked", None, json!({}), json!({})),
                        OPERATION_ANNOTATION,
                        OPERATION_RECONCILE,
                    )),
                ),
            ],
            ..View::default()
        };
        let s = run(&v, &view);
        assert_eq!(s.wake, [ObjectKey::new(Kind::Installation, "ns", "sub")]);
        let updated: Vec<&str> = s
            .writes
            .iter()
            .map(|w| match w {
                Write::Update(u) => u["metadata"]["name"].as_str().unwrap(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(updated, ["root", "a"]);
        let Write::Update(root) = &s.writes[0] else {
            panic!()
        };
        assert_eq!(
            root["metadata"]["annotations"][OPERATION_ANNOTATION],
            OPERATION_RECONCILE
        );
        assert_eq!(written_status(&s, "a").dependents_to_trigger, None);
    }

    #[test]
    fn an_interrupt_moves_to_the_children_in_one_transaction() {
        let v = annotate(
            running("a", json!({}), "Progressing"),
            OPERATION_ANNOTATION,
            OPERATION_INTERRUPT,
        );
        assert_eq!(plan(&typed(&v)).needs, Needs::Children);
        let view = with_children(
            vec![child("a-sub", "a", json!({}), "sub")],
            Some(execution(JOB, "job-1", "Progressing")),
        );
        let s = run(&v, &view);
        assert_eq!(s.writes.len(), 3);
        for w in &s.writes[1..] {
            let Write::Update(c) = w else { panic!() };
            assert_eq!(
                c["metadata"]["annotations"][OPERATION_ANNOTATION],
                OPERATION_INTERRUPT
            );
        }
        let Write::Update(own) = &s.writes[0] else {
            panic!()
        };
        assert!(own["metadata"].get("annotations").is_none());
    }

    #[test]
    fn a_missing_view_part_fails_the_reconcile_without_writes() {
        let v = annotate(
            running("a", json!({}), "Progressing"),
            OPERATION_ANNOTATION,
            OPERATION_INTERRUPT,
        );
        let s = run(&v, &View::default());
        assert!(s.writes.is_empty());
        assert!(matches!(s.next, Next::Fail(_)), "{:?}", s.next);
        let v = running("a", json!({}), "Progressing");
        assert!(matches!(run(&v, &View::default()).next, Next::Fail(_)));
    }

    #[test]
    fn a_dirty_idle_installation_commits_its_deferred_change() {
        let v = object(
            "a",
            None,
            json!({}),
            json!({"jobID": "j1", "jobIDFinished": "j1", "phase": "Succeeded"}),
        );
        let s = step(&v, &typed(&v), true, &View::default(), &now());
        assert!(matches!(s.writes.as_slice(), [Write::Update(u)] if *u == v));
        assert!(s.forget_waits);
        let s = run(&v, &View::default());
        assert!(s.writes.is_empty());
        assert_eq!(s.next, Next::Done);
    }

    // --- Init ---

    #[test]
    fn init_creates_the_execution_removes_old_exports_and_records_the_imports_hash() {
        let v = running("a", json!({"blueprint": {}}), "Init");
        assert_eq!(plan(&typed(&v)).needs, Needs::Init);
        let mut view = init_view(vec![item("di")], Children::default());
        let old = |kind: &str, name: &str, source_type: &str| {
            json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": kind,
                   "metadata": {"name": name, "namespace": "ns",
                       "labels": {DATA_OBJECT_SOURCE_TYPE_LABEL: source_type}}})
        };
        view.init.as_mut().unwrap().own_exports = Some(Ok(vec![
            old("DataObject", "old-export", DATA_OBJECT_SOURCE_TYPE_EXPORT),
            old("Target", "old-target", DATA_OBJECT_SOURCE_TYPE_EXPORT),
            old("DataObject", "an-import", DATA_OBJECT_SOURCE_TYPE_IMPORT),
        ]));
        let s = run(&v, &view);
        assert_eq!(s.next, Next::Continue);
        assert!(s.forget_waits);
        let deleted: Vec<String> = s
            .writes
            .iter()
            .filter_map(|w| match w {
                Write::Delete { key, .. } => Some(key.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(
            deleted,
            ["DataObject ns/old-export", "Target ns/old-target"]
        );
        let exec = s
            .writes
            .iter()
            .find_map(|w| match w {
                Write::Create(e) if e["kind"] == "Execution" => Some(e),
                _ => None,
            })
            .expect("execution created");
        assert_eq!(exec["metadata"]["name"], "a");
        assert_eq!(exec["spec"]["deployItems"][0]["name"], "di");
        assert_eq!(exec["metadata"]["ownerReferences"][0]["uid"], "uid-a");
        let st = written_status(&s, "a");
        assert_eq!(st.phase, Some(Phase::CleanupOrphaned));
        assert_eq!(
            st.imports_hash.as_deref(),
            Some(imports_hash(&serde_json::Map::new()).as_str())
        );
        assert_eq!(st.execution_reference.unwrap().name, "a");
    }

    #[test]
    fn init_without_writes_moves_on_without_a_commit() {
        let v = running("a", json!({"blueprint": {}}), "Init");
        let s = run(&v, &init_view(Vec::new(), Children::default()));
        assert!(s.writes.is_empty());
        assert_eq!(deferred_status(&s).phase, Some(Phase::CleanupOrphaned));
    }

    #[test]
    fn init_fails_when_the_context_is_missing_and_names_it() {
        let v = running("a", json!({"blueprint": {}, "context": "edge"}), "Init");
        let mut view = init_view(Vec::new(), Children::default());
        let init = view.init.as_mut().unwrap();
        init.context_exists = Some(Ok(false));
        // The loader stops there: what follows is not read.
        init.blueprint = None;
        init.values = None;
        let s = run(&v, &view);
        let st = written_status(&s, "a");
        assert_eq!(st.phase, Some(Phase::Failed));
        assert_eq!(st.job_id_finished.as_deref(), Some(JOB));
        assert_eq!(
            error_of(&st),
            ("InitPrerequisites".into(), "CalculateContext".into())
        );
        // Nothing but the status: no deletion of old exports is lost either (there are none).
        assert_eq!(s.writes.len(), 1);
    }

    #[test]
    fn init_waits_for_an_unfinished_predecessor_and_records_why() {
        let spec = json!({"blueprint": {}, "imports": {"data": [{"name": "in", "dataRef": "x"}]}});
        let v = running("b", spec, "Init");
        let mut view = init_view(Vec::new(), Children::default());
        let producer = typed(&object(
            "a",
            None,
            exporting("a", "x"),
            json!({"jobID": "j9", "jobIDFinished": "j8", "phase": "Progressing"}),
        ));
        let init = view.init.as_mut().unwrap();
        init.predecessors = Some(Ok(vec![producer]));
        init.values = None;
        let s = run(&v, &view);
        assert_eq!(s.next, Next::Retry("Init".into()));
        let st = written_status(&s, "b");
        assert_eq!(st.phase, Some(Phase::Init));
        assert_eq!(
            error_of(&st),
            ("init".into(), "AllPredecessorsFinished".into())
        );
        // The same error again writes nothing.
        let mut again = v.clone();
        again["status"] = serde_json::to_value(&st).unwrap();
        let s = run(&again, &view);
        assert!(s.writes.is_empty());
        assert_eq!(s.next, Next::Retry("Init".into()));
    }

    #[test]
    fn init_fails_on_a_failed_predecessor_and_on_a_duplicate_export() {
        let spec = json!({"blueprint": {}, "imports": {"data": [{"name": "in", "dataRef": "x"}]},
                          "exports": {"data": [{"name": "out", "dataRef": "y"}]}});
        let v = running("b", spec, "Init");
        let mut view = init_view(Vec::new(), Children::default());
        view.importers = Some(Ok(Vec::new()));
        let failed = typed(&object(
            "a",
            None,
            exporting("a", "x"),
            json!({"jobID": "j", "jobIDFinished": "j", "phase": "Failed"}),
        ));
        view.init.as_mut().unwrap().predecessors = Some(Ok(vec![failed]));
        let st = written_status(&run(&v, &view), "b");
        assert_eq!(
            error_of(&st),
            ("init".into(), "AllPredecessorsSucceeded".into())
        );
        assert_eq!(st.phase, Some(Phase::Failed));
        let twin = typed(&object("c", None, exporting("c", "y"), json!({})));
        view.init.as_mut().unwrap().exporters = Some(Ok(vec![twin]));
        let st = written_status(&run(&v, &view), "b");
        assert_eq!(error_of(&st), ("init".into(), "FetchPredecessors".into()));
        assert!(
            st.last_error
                .unwrap()
                .message
                .contains("'y' is exported by [b, c]")
        );
    }

    #[test]
    fn init_reports_the_error_that_ended_the_loading() {
        let v = running("a", json!({"blueprint": {}}), "Init");
        let mut view = init_view(Vec::new(), Children::default());
        let init = view.init.as_mut().unwrap();
        init.values = Some(Err(PhaseError::Fatal(LsError::new(
            "ImportsSatisfied",
            "ImportsSatisfied",
            "import \"x\": missing",
        ))));
        init.rendered = None;
        let st = written_status(&run(&v, &view), "a");
        assert_eq!(st.phase, Some(Phase::Failed));
        assert_eq!(st.last_error.unwrap().message, "import \"x\": missing");
    }

    #[test]
    fn init_does_not_create_an_execution_whose_name_someone_else_holds() {
        let v = running("a", json!({"blueprint": {}}), "Init");
        let mut view = init_view(vec![item("di")], Children::default());
        view.init.as_mut().unwrap().execution_taken = Some(Ok(true));
        let s = run(&v, &view);
        assert_eq!(s.next, Next::Retry("Init".into()));
        assert!(!s.writes.iter().any(|w| matches!(w, Write::Create(_))));
        assert_eq!(
            error_of(&written_status(&s, "a")).1,
            "CreateOrUpdateExecution"
        );
    }

    /// `(status, reason, message, lastTransitionTime, lastUpdateTime)` of the condition `t`.
    fn condition_of(
        s: &InstallationStatus,
        t: &str,
    ) -> Option<(String, String, String, String, String)> {
        s.conditions
            .iter()
            .flatten()
            .find(|c| c.r#type == t)
            .map(|c| {
                (
                    c.status.clone(),
                    c.reason.clone(),
                    c.message.clone(),
                    c.last_transition_time.clone().unwrap_or_default(),
                    c.last_update_time.clone().unwrap_or_default(),
                )
            })
    }

    #[test]
    fn init_records_reconcile_execution_where_landscaper_does() {
        let v = running("a", json!({"blueprint": {}}), "Init");
        let view = init_view(vec![item("di")], Children::default());
        let st = written_status(&run(&v, &view), "a");
        let deployed = |t: &str| {
            Some((
                "True".to_string(),
                "ExecutionDeployed".to_string(),
                "Deployed execution item".to_string(),
                t.to_string(),
                t.to_string(),
            ))
        };
        assert_eq!(condition_of(&st, "ReconcileExecution"), deployed(NOW));
        // A later job keeps the entry and its times while nothing changes.
        let mut again = running("a", json!({"blueprint": {}}), "Init");
        again["status"]["conditions"] = json!([{"type": "ReconcileExecution", "status": "True",
            "reason": "ExecutionDeployed", "message": "Deployed execution item",
            "lastTransitionTime": "2029-01-01T00:00:00Z", "lastUpdateTime": "2029-01-01T00:00:00Z"}]);
        let s = run(&again, &view);
        let st = written_status(&s, "a");
        assert_eq!(
            condition_of(&st, "ReconcileExecution"),
            deployed("2029-01-01T00:00:00Z")
        );
        // Without deploy items Landscaper templates no execution and sets nothing.
        let s = run(&v, &init_view(Vec::new(), Children::default()));
        assert_eq!(
            condition_of(&deferred_status(&s), "ReconcileExecution"),
            None
        );
        // The execution cannot be written: False, and the job waits.
        let mut view = init_view(vec![item("di")], Children::default());
        view.init.as_mut().unwrap().execution_taken = Some(Ok(true));
        let st = written_status(&run(&again, &view), "a");
        assert_eq!(
            condition_of(&st, "ReconcileExecution"),
            Some((
                "False".to_string(),
                "CreateOrUpdateExecution".to_string(),
                "Unable to create or update execution".to_string(),
                NOW.to_string(),
                NOW.to_string(),
            ))
        );
        // Templating the deploy executions failed: False, TemplatingFailed.
        let mut view = init_view(vec![item("di")], Children::default());
        view.init.as_mut().unwrap().rendered = Some(Err(PhaseError::Fatal(LsError::new(
            "CreateImportsAndSubobjects",
            "ReconcileExecution",
            "template: execution:1: unexpected EOF",
        ))));
        let st = written_status(&run(&again, &view), "a");
        assert_eq!(
            condition_of(&st, "ReconcileExecution"),
            Some((
                "False".to_string(),
                "TemplatingFailed".to_string(),
                "Unable to template executions".to_string(),
                NOW.to_string(),
                NOW.to_string(),
            ))
        );
        // An import execution's validation errors: ValidateImports False with them.
        let mut view = init_view(vec![item("di")], Children::default());
        view.init.as_mut().unwrap().rendered = Some(Err(PhaseError::Fatal(LsError::new(
            "CreateImportsAndSubobjects",
            "RenderImportExecutions",
            "import validation failed: replicas must be positive",
        ))));
        let st = written_status(&run(&again, &view), "a");
        assert_eq!(
            condition_of(&st, "ValidateImports"),
            Some((
                "False".to_string(),
                "TemplatingFailed".to_string(),
                "replicas must be positive".to_string(),
                NOW.to_string(),
                NOW.to_string(),
            ))
        );
    }

    #[test]
    fn init_orphans_subinstallations_whose_template_is_gone() {
        let v = running("a", json!({"blueprint": {}}), "Init");
        let view = init_view(
            Vec::new(),
            Children {
                subs: vec![child("a-old", "a", json!({}), "old")],
                execution: None,
            },
        );
        let s = run(&v, &view);
        let Write::Update(marked) = &s.writes[0] else {
            panic!("{:?}", s.writes)
        };
        assert_eq!(
            marked["metadata"]["annotations"][DELETE_IGNORE_SUCCESSORS_ANNOTATION],
            "true"
        );
        assert!(matches!(&s.writes[1], Write::Delete { key, .. } if key.name == "a-old"));
        let st = written_status(&s, "a");
        assert_eq!(
            st.sub_inst_cache.unwrap().orphaned_subs,
            Some(vec!["a-old".to_string()])
        );
    }

    #[test]
    fn init_waits_when_a_predecessor_changed_meanwhile() {
        let spec = json!({"blueprint": {}, "imports": {"data": [{"name": "in", "dataRef": "x"}]}});
        let v = running("b", spec, "Init");
        let done = |job: &str| {
            typed(&object(
                "a",
                None,
                exporting("a", "x"),
                json!({"jobID": job, "jobIDFinished": job, "phase": "Succeeded"}),
            ))
        };
        let mut view = init_view(Vec::new(), Children::default());
        view.init.as_mut().unwrap().predecessors = Some(Ok(vec![done("j1")]));
        view.init.as_mut().unwrap().predecessors_after = Some(Ok(vec![done("j2")]));
        let s = run(&v, &view);
        assert_eq!(s.next, Next::Retry("Init".into()));
        assert_eq!(
            error_of(&written_status(&s, "b")).1,
            "comparePredecessorMaps"
        );
        view.init.as_mut().unwrap().predecessors_after = Some(Ok(vec![done("j1")]));
        assert_eq!(
            deferred_status(&run(&v, &view)).phase,
            Some(Phase::CleanupOrphaned)
        );
    }

    #[test]
    fn a_deleted_installation_in_init_goes_to_init_delete_without_reading() {
        let v = deleted(running("a", json!({}), "Init"));
        assert_eq!(plan(&typed(&v)).needs, Needs::Nothing);
        let s = run(&v, &View::default());
        assert_eq!(deferred_status(&s).phase, Some(Phase::InitDelete));
    }

    // --- CleanupOrphaned, ObjectsCreated, Progressing ---

    #[test]
    fn orphans_get_the_job_id_and_the_wait_in_one_transaction() {
        let v = running("a", json!({}), "CleanupOrphaned");
        let orphan = deleted(
            child(
                "a-old",
                "a",
                json!({"jobID": "job-1", "jobIDFinished": "job-1"}),
                "old",
            )
            .0,
        );
        let view = with_children(vec![(orphan.clone(), typed(&orphan))], None);
        let s = run(&v, &view);
        assert_eq!(s.next, Next::Retry("CleanupOrphaned".into()));
        let Write::Update(o) = &s.writes[0] else {
            panic!()
        };
        assert_eq!(o["status"]["jobID"], JOB);
        assert_eq!(
            error_of(&written_status(&s, "a")).1,
            "OrphanedSubinstsStillDeleting"
        );
    }

    #[test]
    fn objects_created_passes_the_job_to_every_child_and_records_the_active_ones() {
        let v = running("a", json!({}), "ObjectsCreated");
        let view = with_children(
            vec![child("a-sub", "a", json!({"jobID": "job-1"}), "sub")],
            Some(execution("job-1", "job-1", "Succeeded")),
        );
        let s = run(&v, &view);
        assert_eq!(s.next, Next::Continue);
        let triggered: Vec<&Value> = s.writes[..2]
            .iter()
            .map(|w| match w {
                Write::Update(u) => u,
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(triggered.iter().all(|u| u["status"]["jobID"] == JOB));
        let st = written_status(&s, "a");
        assert_eq!(st.phase, Some(Phase::Progressing));
        let active = st.sub_inst_cache.unwrap().active_subs.unwrap();
        assert_eq!(
            (active[0].spec_name.as_str(), active[0].object_name.as_str()),
            ("sub", "a-sub")
        );
    }

    #[test]
    fn progressing_waits_then_completes_or_fails_with_dependents() {
        let v = running("a", exporting("a", "x"), "Progressing");
        let plan_a = plan(&typed(&v));
        assert_eq!(plan_a.needs, Needs::Children);
        assert!(plan_a.importers, "a job that may end reads its successors");
        // A phase that cannot end the job reads none.
        let created = running("a", exporting("a", "x"), "ObjectsCreated");
        assert!(!plan(&typed(&created)).importers);
        let without_exports = running("a", json!({}), "Progressing");
        assert!(!plan(&typed(&without_exports)).importers);
        let mut view = with_children(Vec::new(), Some(execution(JOB, "job-1", "Progressing")));
        view.importers = Some(Ok(vec![
            importer("b", "x", json!({})),
            importer("c", "other", json!({})),
        ]));
        let s = run(&v, &view);
        assert_eq!(s.next, Next::Retry("Progressing".into()));
        assert!(error_of(&written_status(&s, "a")).1 == "JobIDFinished");
        view.children = Some(Ok(Children {
            subs: Vec::new(),
            execution: Some(execution(JOB, JOB, "Succeeded")),
        }));
        assert_eq!(
            deferred_status(&run(&v, &view)).phase,
            Some(Phase::Completing)
        );
        view.children = Some(Ok(Children {
            subs: Vec::new(),
            execution: Some(execution(JOB, JOB, "Failed")),
        }));
        let st = written_status(&run(&v, &view), "a");
        assert_eq!(st.phase, Some(Phase::Failed));
        assert_eq!(st.job_id_finished.as_deref(), Some(JOB));
        let deps: Vec<String> = st
            .dependents_to_trigger
            .unwrap()
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(deps, ["b"]);
        // Without its successors read, the job cannot end.
        view.importers = None;
        assert!(matches!(run(&v, &view).next, Next::Fail(_)));
    }

    // --- Completing ---

    fn completing_view(
        exports: serde_json::Map<String, Value>,
        current: BTreeMap<ObjectKey, Value>,
    ) -> View {
        View {
            importers: Some(Ok(Vec::new())),
            completing: Some(CompletingView {
                context_objects: Some(Ok(Vec::new())),
                blueprint: Some(Ok(blueprint())),
                components: None,
                values: Some(Ok(serde_json::Map::new())),
                exports: Some(Ok(exports)),
                from_secret: Some(Ok(false)),
                current: Some(Ok(current)),
            }),
            ..View::default()
        }
    }

    fn completing(name: &str) -> Value {
        let mut v = running(name, exporting(name, "x"), "Completing");
        v["status"]["importsHash"] = json!(imports_hash(&serde_json::Map::new()));
        v
    }

    #[test]
    fn completing_writes_the_exports_and_removes_objects_of_older_jobs() {
        let v = completing("a");
        let mut view = completing_view(
            json!({"out": {"v": 1}}).as_object().unwrap().clone(),
            BTreeMap::new(),
        );
        let scoped = |name: &str, job: &str| {
            json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DataObject",
                "metadata": {"name": name, "namespace": "ns",
                    "labels": {DATA_OBJECT_CONTEXT_LABEL: "Inst.a", DATA_OBJECT_JOB_ID_LABEL: job}}})
        };
        view.completing.as_mut().unwrap().context_objects =
            Some(Ok(vec![scoped("older", "job-1"), scoped("current", JOB)]));
        let s = run(&v, &view);
        assert!(matches!(&s.writes[0], Write::Delete { key, .. } if key.name == "older"));
        let export = s
            .writes
            .iter()
            .find_map(|w| match w {
                Write::Create(o) if o["kind"] == "DataObject" => Some(o),
                _ => None,
            })
            .expect("export created");
        assert_eq!(export["metadata"]["name"], "x");
        assert_eq!(export["data"], json!({"v": 1}));
        assert_eq!(export["metadata"]["labels"][DATA_OBJECT_JOB_ID_LABEL], JOB);
        let st = written_status(&s, "a");
        assert_eq!(st.phase, Some(Phase::Succeeded));
        assert_eq!(st.job_id_finished.as_deref(), Some(JOB));
    }

    #[test]
    fn completing_leaves_an_equal_export_alone_and_refuses_someone_elses() {
        let v = completing("a");
        let exports = json!({"out": {"v": 1}}).as_object().unwrap().clone();
        let first = run(&v, &completing_view(exports.clone(), BTreeMap::new()));
        let Some(Write::Create(stored)) = first.writes.first().cloned() else {
            panic!()
        };
        let key = ObjectKey::new(Kind::DataObject, "ns", "x");
        let s = run(
            &v,
            &completing_view(
                exports.clone(),
                BTreeMap::from([(key.clone(), stored.clone())]),
            ),
        );
        assert_eq!(s.writes.len(), 1, "only the status: {:?}", s.writes);
        let mut foreign = stored;
        foreign["metadata"]["ownerReferences"] = json!([{"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation", "name": "o", "uid": "uid-other"}]);
        let st = written_status(
            &run(
                &v,
                &completing_view(exports, BTreeMap::from([(key, foreign)])),
            ),
            "a",
        );
        assert_eq!(st.phase, Some(Phase::Failed));
        assert!(
            st.last_error
                .unwrap()
                .message
                .contains("is exported by another installation")
        );
    }

    #[test]
    fn completing_records_create_exports_where_landscaper_does() {
        let v = completing("a");
        let exports = json!({"out": {"v": 1}}).as_object().unwrap().clone();
        let first = run(&v, &completing_view(exports.clone(), BTreeMap::new()));
        assert_eq!(
            condition_of(&written_status(&first, "a"), "CreateExports"),
            Some((
                "True".to_string(),
                "DataObjectsCreated".to_string(),
                "DataObjects successfully created".to_string(),
                NOW.to_string(),
                NOW.to_string(),
            ))
        );
        // Also without exports (Landscaper's CreateOrUpdateExports runs in every Completing).
        let mut plain = running("a", json!({"blueprint": {}}), "Completing");
        plain["status"]["importsHash"] = json!(imports_hash(&serde_json::Map::new()));
        let none = run(
            &plain,
            &completing_view(serde_json::Map::new(), BTreeMap::new()),
        );
        assert_eq!(
            condition_of(&written_status(&none, "a"), "CreateExports").map(|c| c.0),
            Some("True".to_string())
        );
        let Some(Write::Create(mut foreign)) = first.writes.first().cloned() else {
            panic!()
        };
        foreign["metadata"]["ownerReferences"] = json!([{"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation", "name": "o", "uid": "uid-other"}]);
        let key = ObjectKey::new(Kind::DataObject, "ns", "x");
        let st = written_status(
            &run(
                &v,
                &completing_view(exports, BTreeMap::from([(key, foreign)])),
            ),
            "a",
        );
        assert_eq!(
            condition_of(&st, "CreateExports"),
            Some((
                "False".to_string(),
                "CreateDataObjects".to_string(),
                "unable to create data object for export x".to_string(),
                NOW.to_string(),
                NOW.to_string(),
            ))
        );
    }

    #[test]
    fn completing_fails_when_the_imports_changed_or_an_export_is_missing() {
        let mut v = completing("a");
        v["status"]["importsHash"] = json!("stale");
        let st = written_status(
            &run(
                &v,
                &completing_view(serde_json::Map::new(), BTreeMap::new()),
            ),
            "a",
        );
        assert_eq!(error_of(&st).1, "CheckImportsHash");
        let v = completing("a");
        let st = written_status(
            &run(
                &v,
                &completing_view(serde_json::Map::new(), BTreeMap::new()),
            ),
            "a",
        );
        assert_eq!(error_of(&st).1, "ExportMissing");
    }

    #[test]
    fn a_waiting_completing_gives_up_when_the_installation_is_deleted() {
        let v = deleted(completing("a"));
        let mut view = completing_view(serde_json::Map::new(), BTreeMap::new());
        view.completing.as_mut().unwrap().blueprint = Some(Err(PhaseError::Normal(LsError::new(
            "InitPrerequisites",
            "ResolveBlueprint",
            "gone",
        ))));
        let st = written_status(&run(&v, &view), "a");
        assert_eq!(st.phase, Some(Phase::Failed));
        // Being deleted, it records no dependents (and needs no successors read).
        assert_eq!(st.dependents_to_trigger, None);
    }

    // --- deletion ---

    #[test]
    fn init_delete_waits_for_a_successor_and_deletes_the_children_otherwise() {
        let v = deleted(running("a", exporting("a", "x"), "InitDelete"));
        let p = plan(&typed(&v));
        assert_eq!((p.needs, p.importers), (Needs::InitDelete, true));
        let mut view = with_children(
            vec![child("a-sub", "a", json!({}), "sub")],
            Some(execution(JOB, "job-1", "Succeeded")),
        );
        view.importers = Some(Ok(vec![importer("b", "x", json!({}))]));
        let s = run(&v, &view);
        assert_eq!(s.next, Next::Retry("InitDelete".into()));
        assert_eq!(error_of(&written_status(&s, "a")).1, "SiblingImport");
        // A successor whose deletion failed fails this deletion.
        let mut failed = importer(
            "b",
            "x",
            json!({"jobID": "j", "jobIDFinished": "j", "phase": "DeleteFailed"}),
        );
        failed.metadata.deletion_timestamp = Some("t".into());
        view.importers = Some(Ok(vec![failed]));
        view.deletion_closures.insert("b".into(), Ok(Vec::new()));
        let st = written_status(&run(&v, &view), "a");
        assert_eq!(
            (st.phase.clone(), error_of(&st).1),
            (Some(Phase::DeleteFailed), "SiblingDeleteError".to_string())
        );
        // Without successors: the children are deleted, marked when asked to skip uninstall.
        view.importers = Some(Ok(Vec::new()));
        let v = annotate(v, DELETE_WITHOUT_UNINSTALL_ANNOTATION, "true");
        let s = run(&v, &view);
        let deletes: Vec<String> = s
            .writes
            .iter()
            .filter_map(|w| match w {
                Write::Delete { key, .. } => Some(key.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(deletes, ["Installation ns/a-sub", "Execution ns/a"]);
        let marked = s
            .writes
            .iter()
            .filter(|w| {
                matches!(w, Write::Update(u)
            if u["metadata"]["annotations"][DELETE_WITHOUT_UNINSTALL_ANNOTATION] == "true"
            && !(u["kind"] == "Installation" && u["metadata"]["name"] == "a"))
            })
            .count();
        assert_eq!(marked, 2);
        assert_eq!(written_status(&s, "a").phase, Some(Phase::TriggerDelete));
    }

    #[test]
    fn successors_in_a_deletion_wait_cycle_do_not_block_each_other() {
        let v = deleted(running(
            "a",
            json!({"exports": {"data": [{"name": "o", "dataRef": "x"}]},
                   "imports": {"data": [{"name": "i", "dataRef": "y"}]}}),
            "InitDelete",
        ));
        let mut b = typed(&object(
            "b",
            None,
            json!({"exports": {"data": [{"name": "o", "dataRef": "y"}]},
            "imports": {"data": [{"name": "i", "dataRef": "x"}]}}),
            json!({}),
        ));
        b.metadata.deletion_timestamp = Some("t".into());
        let mut view = with_children(Vec::new(), None);
        view.importers = Some(Ok(vec![b]));
        view.deletion_closures
            .insert("b".into(), Ok(vec![typed(&v)]));
        assert_eq!(
            deferred_status(&run(&v, &view)).phase,
            Some(Phase::TriggerDelete)
        );
        // The annotation skips the check (and the loader reads no successors).
        let ignoring = annotate(v, DELETE_IGNORE_SUCCESSORS_ANNOTATION, "true");
        assert!(!plan(&typed(&ignoring)).importers);
        let view = with_children(Vec::new(), None);
        assert_eq!(
            deferred_status(&run(&ignoring, &view)).phase,
            Some(Phase::TriggerDelete)
        );
    }

    #[test]
    fn deleting_removes_the_finalizer_once_the_children_are_gone() {
        let v = deleted(running("a", json!({}), "Deleting"));
        let s = run(&v, &with_children(Vec::new(), None));
        assert_eq!(s.next, Next::Done);
        let Write::Update(u) = &s.writes[0] else {
            panic!()
        };
        assert!(u["metadata"].get("finalizers").is_none());
        let s = run(
            &v,
            &with_children(Vec::new(), Some(execution(JOB, "job-1", "Deleting"))),
        );
        assert_eq!(s.next, Next::Retry("Deleting".into()));
        let st = written_status(
            &run(
                &v,
                &with_children(Vec::new(), Some(execution(JOB, JOB, "DeleteFailed"))),
            ),
            "a",
        );
        assert_eq!(
            (st.phase.clone(), error_of(&st).1),
            (Some(Phase::DeleteFailed), "UndeletedSubobjects".to_string())
        );
    }

    // --- issue 19: an installation's own ready and delete postconditions ---

    fn with_block(v: Value, yaml: &str) -> Value {
        annotate(
            v,
            landscaper_store::model::workflow::WORKFLOW_ANNOTATION,
            yaml,
        )
    }

    fn own_condition(s: &InstallationStatus, ty: &str) -> (String, String) {
        let c = s
            .conditions
            .iter()
            .flatten()
            .find(|c| c.r#type == ty)
            .unwrap_or_else(|| panic!("no condition {ty}: {s:?}"));
        (c.status.clone(), c.reason.clone())
    }

    #[test]
    fn a_ready_postcondition_keeps_the_job_open_until_it_holds_then_the_job_ends() {
        // The seed's order: a dependent counts as ready only when its ready postcondition
        // holds; until then its job does not finish, so its successors (Landscaper's
        // predecessor check) and its parent (progressing) wait.
        let v = with_block(
            completing("a"),
            "readyPostcondition: self.exports.out.v == 2
",
        );
        let exports = |n: i64| json!({"out": {"v": n}}).as_object().unwrap().clone();
        let s = run(&v, &completing_view(exports(1), BTreeMap::new()));
        assert_eq!(s.next, Next::Retry("Completing".into()));
        assert!(
            !s.writes.iter().any(|w| matches!(w, Write::Create(_))),
            "no export is written before the installation is ready"
        );
        let st = written_status(&s, "a");
        assert_eq!(st.phase, Some(Phase::Completing));
        assert_eq!(st.job_id_finished.as_deref(), Some("job-1"), "not finished");
        assert!(error_of(&st).1 == "JobIDFinished");
        assert!(
            st.last_error
                .as_ref()
                .unwrap()
                .message
                .contains("waiting for the readyPostcondition"),
        );
        assert_eq!(
            own_condition(&st, "ReadyPostcondition"),
            ("False".into(), "ConditionNotMet".into())
        );
        // It holds: the exports are written and the job ends with the condition recorded.
        let s = run(&v, &completing_view(exports(2), BTreeMap::new()));
        let st = written_status(&s, "a");
        assert_eq!(st.phase, Some(Phase::Succeeded));
        assert_eq!(st.job_id_finished.as_deref(), Some(JOB));
        assert_eq!(
            own_condition(&st, "ReadyPostcondition"),
            ("True".into(), "ConditionMet".into())
        );
        // Without a block: Landscaper's Completing, only Landscaper's own CreateExports.
        let s = run(
            &completing("a"),
            &completing_view(exports(1), BTreeMap::new()),
        );
        let st = written_status(&s, "a");
        assert_eq!(st.phase, Some(Phase::Succeeded));
        let types: Vec<&str> = st
            .conditions
            .iter()
            .flatten()
            .map(|c| c.r#type.as_str())
            .collect();
        assert_eq!(types, ["CreateExports"]);
    }

    #[test]
    fn a_ready_postcondition_false_past_the_progressing_timeout_fails_the_job() {
        let mut v = with_block(
            completing("a"),
            "readyPostcondition: 'false'
",
        );
        v["status"]["transitionTimes"] = json!({"waitTime": "2029-12-31T23:50:00Z"});
        let view = completing_view(
            json!({"out": 1}).as_object().unwrap().clone(),
            BTreeMap::new(),
        );
        let typed_v = typed(&v);
        let mut timed = now();
        timed.ready_timeout = Some(std::time::Duration::from_secs(300));
        let s = step(&v, &typed_v, false, &view, &timed);
        let st = written_status(&s, "a");
        assert_eq!(st.phase, Some(Phase::Failed));
        assert_eq!(error_of(&st).1, "ReadyPostconditionTimeout");
        assert_eq!(own_condition(&st, "ReadyPostcondition").0, "False");
        // Within the timeout it waits.
        timed.ready_timeout = Some(std::time::Duration::from_secs(3600));
        let s = step(&v, &typed_v, false, &view, &timed);
        assert_eq!(s.next, Next::Retry("Completing".into()));
    }

    #[test]
    fn an_invalid_own_postcondition_fails_naming_the_installation_and_field() {
        let v = with_block(
            completing("a"),
            "readyPostcondition: 'self.('
",
        );
        let view = completing_view(
            json!({"out": 1}).as_object().unwrap().clone(),
            BTreeMap::new(),
        );
        let st = written_status(&run(&v, &view), "a");
        assert_eq!(st.phase, Some(Phase::Failed));
        let e = st.last_error.unwrap();
        assert_eq!(e.reason, "InvalidWorkflowCondition");
        assert!(
            e.message.contains("Installation ns/a")
                && e.message.contains(
                    "metadata.annotations[landscaper-appliance.io/workflow].readyPostcondition"
                ),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_delete_postcondition_keeps_the_finalizer_until_it_holds() {
        // A deleted dependent counts as gone only when its delete postcondition holds: the
        // finalizer stays (the object exists, so the predecessors' successor check and the
        // parent's deletion wait for it).
        let v = with_block(
            deleted(running("a", json!({}), "Deleting")),
            "deletePostcondition: self.status.jobID == 'job-3'
",
        );
        let s = run(&v, &with_children(Vec::new(), None));
        assert_eq!(s.next, Next::Retry("Deleting".into()));
        let st = written_status(&s, "a");
        assert_eq!(
            own_condition(&st, "DeletePostcondition"),
            ("False".into(), "ConditionNotMet".into())
        );
        assert!(
            s.writes.iter().all(|w| match w {
                Write::Update(u) => u["metadata"]["finalizers"] == json!([LANDSCAPER_FINALIZER]),
                _ => false,
            }),
            "the finalizer stays"
        );
        let mut v = v;
        v["status"]["jobID"] = json!("job-3");
        let s = run(&v, &with_children(Vec::new(), None));
        assert_eq!(s.next, Next::Done);
        let Write::Update(u) = &s.writes[0] else {
            panic!()
        };
        assert!(u["metadata"].get("finalizers").is_none());
        assert_eq!(u["status"]["conditions"][0]["type"], "DeletePostcondition");
        assert_eq!(u["status"]["conditions"][0]["status"], "True");
    }

    #[test]
    fn init_gives_each_subinstallation_its_templates_block() {
        use landscaper_store::model::WorkflowExtension;
        use landscaper_templating::blueprint::InstallationTemplate;
        let v = running("root", json!({}), "Init");
        let mut view = init_view(Vec::new(), Children::default());
        let template = |name: &str, block: Option<WorkflowExtension>| InstallationTemplate {
            name: name.into(),
            blueprint: landscaper_templating::blueprint::InstallationTemplateBlueprint {
                reference: String::new(),
                filesystem: Some(json!({"blueprint.yaml":
                    "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\n"})),
            },
            appliance: block,
            ..Default::default()
        };
        let ready = WorkflowExtension {
            ready_postcondition: Some("self.exports.ready".into()),
            ..Default::default()
        };
        if let Some(Ok((_, rendered))) = &mut view.init.as_mut().unwrap().rendered {
            rendered.subinstallations =
                vec![template("with", Some(ready)), template("without", None)];
        }
        let s = run(&v, &view);
        let created: BTreeMap<String, Value> = s
            .writes
            .iter()
            .filter_map(|w| match w {
                Write::Create(o) if o["kind"] == "Installation" => Some((
                    o["metadata"]["annotations"][SUBINSTALLATION_NAME_ANNOTATION]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    o.clone(),
                )),
                _ => None,
            })
            .collect();
        let block = |name: &str| {
            created[name]["metadata"]["annotations"]
                .get(landscaper_store::model::workflow::WORKFLOW_ANNOTATION)
                .cloned()
        };
        assert_eq!(
            block("with"),
            Some(json!(r#"{"readyPostcondition":"self.exports.ready"}"#))
        );
        assert_eq!(block("without"), None);
    }

    #[test]
    fn an_unknown_phase_restarts_the_job() {
        let v = running("a", json!({}), "Whatever");
        let s = run(&v, &View::default());
        let st = written_status(&s, "a");
        assert_eq!(st.phase, None);
    }
}
