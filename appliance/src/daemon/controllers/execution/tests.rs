//! The reconciler against a real store, with a stand-in for the deployer.

use std::sync::Arc;
use std::time::Duration;

use landscaper_store::model::constants::*;
use landscaper_store::model::{DataObject, DeployItem, Execution, Phase, from_value, to_value};
use landscaper_store::{Kind, LabelSelector, ObjectKey, Store, StoreOptions, Transaction, object};
use serde_json::{Value, json};

use super::*;
use crate::daemon::controllers::{ControllerConfig, ControllerContext};

fn open_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        &dir.path().join("store.redb"),
        StoreOptions {
            durable: false,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    (dir, store)
}

fn reconciler(store: &Store) -> ExecutionReconciler {
    let config = ControllerConfig {
        wait_interval_min: Duration::from_secs(1),
        wait_interval_max: Duration::from_secs(4),
        ..ControllerConfig::default()
    };
    let clock = Arc::new(landscaper_store::ManualClock::new(
        "2030-01-01T00:00:00Z".parse().unwrap(),
    ));
    ExecutionReconciler::new(ControllerContext::new(store.clone(), config).with_clock(clock))
}

fn exec_key() -> ObjectKey {
    ObjectKey::new(Kind::Execution, "ns", "exec")
}

fn mock(name: &str, export: Option<Value>, depends_on: &[&str]) -> Value {
    let mut t = json!({
        "name": name,
        "type": MOCK_DEPLOYER_TYPE,
        "config": {
            "apiVersion": "mock.deployer.landscaper.gardener.cloud/v1alpha1",
            "kind": "ProviderConfiguration",
        },
    });
    if let Some(export) = export {
        t["config"]["export"] = export;
    }
    if !depends_on.is_empty() {
        t["dependsOn"] = json!(depends_on);
    }
    t
}

async fn create_execution(store: &Store, items: Vec<Value>, job: &str) {
    let exec = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Execution",
        "metadata": {"name": "exec", "namespace": "ns"},
        "spec": {"deployItems": items},
    });
    store.commit(Transaction::new().create(exec)).await.unwrap();
    set_job(store, job).await;
}

/// What the installation controller does: a new jobID on the Execution.
async fn set_job(store: &Store, job: &str) {
    let mut exec = load_execution(store);
    exec.status.get_or_insert_with(Default::default).job_id = Some(job.to_string());
    store
        .commit(Transaction::new().update(to_value(&exec)))
        .await
        .unwrap();
}

fn load_execution(store: &Store) -> Execution {
    from_value(
        &store
            .get(&exec_key())
            .unwrap()
            .expect("the execution exists"),
    )
    .unwrap()
}

fn deploy_items(store: &Store) -> Vec<DeployItem> {
    store
        .list(Kind::DeployItem, Some("ns"), &LabelSelector::everything())
        .unwrap()
        .items
        .iter()
        .map(|v| from_value(v).unwrap())
        .collect()
}

fn exec_phase(store: &Store) -> Option<Phase> {
    load_execution(store).status.and_then(|s| s.phase)
}

/// A stand-in for the deploy item dispatcher: every triggered item finishes (Succeeded, with
/// its mock export in a Secret), every triggered deleting item loses its finalizer.
async fn deployer(store: &Store) -> usize {
    let mut n = 0;
    for mut di in deploy_items(store) {
        let status = di.status.clone().unwrap_or_default();
        if status.job_id.is_none() || status.job_id == status.job_id_finished {
            continue;
        }
        n += 1;
        let mut tx = Transaction::new();
        if di.metadata.is_deleting() {
            di.metadata.remove_finalizer(LANDSCAPER_FINALIZER);
            tx = tx.update(to_value(&di));
        } else {
            let status = di.status.as_mut().unwrap();
            status.phase = Some(Phase::Succeeded);
            status.job_id_finished = status.job_id.clone();
            if let Some(export) = di.spec.config.as_ref().and_then(|c| c.get("export")) {
                let name = format!("{}-export", di.metadata.name());
                let secret = json!({
                    "apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": name, "namespace": "ns"},
                    "stringData": {"config": export.to_string()},
                });
                if store
                    .get(&ObjectKey::new(Kind::Secret, "ns", &name))
                    .unwrap()
                    .is_none()
                {
                    tx = tx.create(secret);
                }
                status.export_reference =
                    Some(landscaper_store::model::ObjectReference::new("ns", name));
            }
            tx = tx.update(to_value(&di));
        }
        store.commit(tx).await.unwrap();
    }
    n
}

/// Reconciles and runs the deployer until nothing moves; returns the last outcome.
async fn settle(store: &Store, r: &ExecutionReconciler) -> Result<Outcome, String> {
    let mut last = Ok(Outcome::Done);
    for _ in 0..50 {
        let before = store.revision();
        last = r.reconcile(&exec_key()).await.map_err(|e| e.to_string());
        if store.get(&exec_key()).unwrap().is_some() {
            deployer(store).await;
        }
        if store.revision() == before {
            return last;
        }
    }
    panic!("no steady state: {last:?}");
}

#[tokio::test]
async fn an_execution_runs_its_deploy_items_in_order_and_collects_the_exports() {
    let (_dir, store) = open_store();
    let r = reconciler(&store);
    create_execution(
        &store,
        vec![
            mock("a", Some(json!({"x": 1})), &[]),
            mock("b", None, &["a"]),
        ],
        "job-1",
    )
    .await;

    // Init: the items are created, not triggered.
    r.reconcile(&exec_key()).await.unwrap();
    let exec = load_execution(&store);
    assert_eq!(
        exec.metadata.finalizers,
        Some(vec![LANDSCAPER_FINALIZER.to_string()])
    );
    assert_eq!(exec_phase(&store), Some(Phase::Progressing));
    let items = deploy_items(&store);
    assert_eq!(items.len(), 2);
    assert!(items.iter().all(|di| di.status.is_none()));
    let cache = exec.status.unwrap().deploy_item_cache.unwrap();
    let mut names: Vec<String> = cache
        .active_dis
        .unwrap()
        .into_iter()
        .map(|p| p.object_name)
        .collect();
    names.sort();
    assert_eq!(
        names,
        items
            .iter()
            .map(|di| di.metadata.name().to_string())
            .collect::<Vec<_>>()
    );
    assert!(names[0].starts_with("exec-a-") && names[0].len() == "exec-a-".len() + 5);

    // Progressing: only a is triggered; the execution waits.
    let outcome = r.reconcile(&exec_key()).await.unwrap();
    assert_eq!(outcome, Outcome::RequeueAfter(Duration::from_secs(1)));
    let triggered: Vec<_> = deploy_items(&store)
        .into_iter()
        .filter(|di| di.status.is_some())
        .map(|di| {
            di.metadata
                .label(EXECUTION_MANAGED_NAME_LABEL)
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(triggered, vec!["a"]);
    let outcome = r.reconcile(&exec_key()).await.unwrap();
    assert_eq!(
        outcome,
        Outcome::RequeueAfter(Duration::from_secs(2)),
        "waits grow"
    );

    assert_eq!(settle(&store, &r).await, Ok(Outcome::Done));
    let exec = load_execution(&store);
    let status = exec.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded));
    assert_eq!(status.job_id_finished.as_deref(), Some("job-1"));
    let export_ref = status.export_reference.unwrap();
    let export: DataObject = from_value(
        &store
            .get(&ObjectKey::new(Kind::DataObject, "ns", &export_ref.name))
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(export_ref.name, machine::export_data_object_name("exec"));
    assert_eq!(export.data, Some(json!({"a": {"x": 1}, "b": null})));

    // A finished execution is left alone.
    let before = store.revision();
    assert_eq!(r.reconcile(&exec_key()).await.unwrap(), Outcome::Done);
    assert_eq!(store.revision(), before);
}

#[tokio::test]
async fn a_new_job_removes_orphans_first_and_updates_the_rest() {
    let (_dir, store) = open_store();
    let r = reconciler(&store);
    create_execution(
        &store,
        vec![mock("a", None, &[]), mock("b", None, &[])],
        "job-1",
    )
    .await;
    settle(&store, &r).await.unwrap();
    assert_eq!(exec_phase(&store), Some(Phase::Succeeded));

    let mut exec = load_execution(&store);
    exec.spec.deploy_items.as_mut().unwrap().remove(1);
    store
        .commit(Transaction::new().update(to_value(&exec)))
        .await
        .unwrap();
    set_job(&store, "job-2").await;
    settle(&store, &r).await.unwrap();
    assert_eq!(exec_phase(&store), Some(Phase::Succeeded));
    let items = deploy_items(&store);
    assert_eq!(items.len(), 1);
    assert_eq!(
        items[0].status.as_ref().unwrap().job_id_finished.as_deref(),
        Some("job-2")
    );
}

#[tokio::test]
async fn deleting_an_execution_deletes_its_items_and_then_itself() {
    let (_dir, store) = open_store();
    let r = reconciler(&store);
    create_execution(
        &store,
        vec![
            mock("a", Some(json!({"x": 1})), &[]),
            mock("b", None, &["a"]),
        ],
        "job-1",
    )
    .await;
    settle(&store, &r).await.unwrap();
    let export_key = ObjectKey::new(
        Kind::DataObject,
        "ns",
        machine::export_data_object_name("exec"),
    );
    assert!(store.get(&export_key).unwrap().is_some());

    store
        .commit(Transaction::new().delete(exec_key(), None))
        .await
        .unwrap();
    set_job(&store, "job-2").await;

    // InitDelete deletes both items.
    r.reconcile(&exec_key()).await.unwrap();
    assert_eq!(exec_phase(&store), Some(Phase::Deleting));
    assert!(
        deploy_items(&store)
            .iter()
            .all(|di| di.metadata.is_deleting())
    );
    // Deleting: b (which depends on a) goes first.
    r.reconcile(&exec_key()).await.unwrap();
    let triggered: Vec<_> = deploy_items(&store)
        .into_iter()
        .filter(|di| di.status.as_ref().unwrap().job_id.as_deref() == Some("job-2"))
        .map(|di| {
            di.metadata
                .label(EXECUTION_MANAGED_NAME_LABEL)
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(triggered, vec!["b"]);

    settle(&store, &r).await.unwrap();
    assert!(
        store.get(&exec_key()).unwrap().is_none(),
        "the execution is gone"
    );
    assert!(deploy_items(&store).is_empty());
    // Its export DataObject is left to the owner garbage collection of the change feed.
}

#[tokio::test]
async fn an_interrupt_fails_the_running_items_and_the_execution() {
    let (_dir, store) = open_store();
    let r = reconciler(&store);
    create_execution(
        &store,
        vec![mock("a", None, &[]), mock("b", None, &["a"])],
        "job-1",
    )
    .await;
    r.reconcile(&exec_key()).await.unwrap();
    r.reconcile(&exec_key()).await.unwrap();

    let mut exec = load_execution(&store);
    exec.metadata
        .set_annotation(OPERATION_ANNOTATION, OPERATION_INTERRUPT);
    store
        .commit(Transaction::new().update(to_value(&exec)))
        .await
        .unwrap();
    assert_eq!(r.reconcile(&exec_key()).await.unwrap(), Outcome::Done);
    let exec = load_execution(&store);
    assert_eq!(exec.metadata.annotation(OPERATION_ANNOTATION), None);
    for di in deploy_items(&store) {
        let s = di.status.unwrap();
        assert_eq!(s.phase, Some(Phase::Failed));
        assert_eq!(s.job_id_finished.as_deref(), Some("job-1"));
        assert_eq!(s.last_error.unwrap().reason, INTERRUPT_OPERATION);
    }
    r.reconcile(&exec_key()).await.unwrap();
    assert_eq!(exec_phase(&store), Some(Phase::Failed));
}

#[tokio::test]
async fn unreadable_exports_are_retried() {
    let (_dir, store) = open_store();
    let r = reconciler(&store);
    create_execution(&store, vec![mock("a", Some(json!({"x": 1})), &[])], "job-1").await;
    for _ in 0..2 {
        r.reconcile(&exec_key()).await.unwrap();
    }
    deployer(&store).await;
    let secret_key = ObjectKey::new(
        Kind::Secret,
        "ns",
        format!("{}-export", deploy_items(&store)[0].metadata.name()),
    );
    let secret = store.get(&secret_key).unwrap().unwrap();
    store
        .commit(Transaction::new().delete(secret_key.clone(), None))
        .await
        .unwrap();
    r.reconcile(&exec_key()).await.unwrap();
    assert_eq!(exec_phase(&store), Some(Phase::Completing));
    let err = r.reconcile(&exec_key()).await.unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
    let last_error = load_execution(&store).status.unwrap().last_error.unwrap();
    assert_eq!(last_error.reason, "AddExports");

    let mut secret = secret;
    for field in ["uid", "resourceVersion", "creationTimestamp"] {
        object::metadata_mut(&mut secret).remove(field);
    }
    store
        .commit(Transaction::new().create(secret))
        .await
        .unwrap();
    assert_eq!(r.reconcile(&exec_key()).await.unwrap(), Outcome::Done);
    assert_eq!(exec_phase(&store), Some(Phase::Succeeded));
}

#[test]
fn exports_are_read_as_json_or_yaml() {
    assert_eq!(parse_export(br#"{"a": 1}"#), Ok(json!({"a": 1})));
    assert_eq!(
        parse_export(b"a: 1\nb: [x]\n"),
        Ok(json!({"a": 1, "b": ["x"]}))
    );
    assert_eq!(parse_export(b""), Ok(Value::Null));
    assert!(parse_export(b"a: [").is_err());
}

/// An Execution that no Installation owns (defined in a manifest file) without a job.
async fn create_standalone(store: &Store, items: Vec<Value>) {
    let exec = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Execution",
        "metadata": {"name": "exec", "namespace": "ns"},
        "spec": {"deployItems": items},
    });
    store.commit(Transaction::new().create(exec)).await.unwrap();
}

#[tokio::test]
async fn a_standalone_execution_runs_reruns_on_change_and_is_deleted() {
    let (_dir, store) = open_store();
    let r = reconciler(&store);
    create_standalone(&store, vec![mock("a", None, &[])]).await;
    settle(&store, &r).await.unwrap();
    let exec = load_execution(&store);
    let status = exec.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded));
    assert!(status.job_id.is_some() && status.job_id == status.job_id_finished);
    assert_eq!(deploy_items(&store).len(), 1);
    let first_job = status.job_id.clone();

    // Nothing changed: no new job.
    settle(&store, &r).await.unwrap();
    assert_eq!(load_execution(&store).status.unwrap().job_id, first_job);

    // A changed spec (new file revision) starts a new job.
    let mut changed = store.get(&exec_key()).unwrap().unwrap();
    changed["spec"]["deployItems"] = json!([mock("b", None, &[])]);
    store
        .commit(Transaction::new().update(changed))
        .await
        .unwrap();
    settle(&store, &r).await.unwrap();
    let status = load_execution(&store).status.unwrap();
    assert_ne!(status.job_id, first_job);
    assert_eq!(status.phase, Some(Phase::Succeeded));
    let names: Vec<String> = deploy_items(&store)
        .iter()
        .filter_map(|d| {
            d.metadata
                .label(EXECUTION_MANAGED_NAME_LABEL)
                .map(String::from)
        })
        .collect();
    assert_eq!(names, vec!["b".to_string()]);

    // The file is removed: the Execution and its deploy items go.
    store
        .commit(Transaction::new().delete(exec_key(), None))
        .await
        .unwrap();
    settle(&store, &r).await.unwrap();
    assert!(store.get(&exec_key()).unwrap().is_none());
    assert!(deploy_items(&store).is_empty());
}
