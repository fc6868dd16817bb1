//! The reconciler against a real store: checks of phase Completing.

use std::sync::Arc;
use std::time::Duration;

use landscaper_store::model::constants::*;
use landscaper_store::{Kind, ObjectKey, Store, StoreOptions, Transaction};
use serde_json::{Map, Value, json};

use super::*;
use crate::daemon::controllers::runtime::Reconciler;
use crate::daemon::controllers::{ControllerConfig, ControllerContext};

const BLUEPRINT: &str = "
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
imports:
- name: cfg
  schema: {type: object}
exports:
- name: out
  schema: {type: object}
exportExecutions:
- name: copy
  type: GoTemplate
  template: |
    exports:
      out: {{ toJson .imports.cfg }}
";

fn open_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        durable: false,
        ..StoreOptions::default()
    };
    let store = Store::open(&dir.path().join("store.redb"), options).unwrap();
    (dir, store)
}

fn reconciler(store: &Store) -> InstallationReconciler {
    let config = ControllerConfig {
        wait_interval_min: Duration::from_secs(1),
        wait_interval_max: Duration::from_secs(4),
        ..ControllerConfig::default()
    };
    let clock = Arc::new(landscaper_store::ManualClock::new(
        "2030-01-01T00:00:00Z".parse().unwrap(),
    ));
    InstallationReconciler::new(ControllerContext::new(store.clone(), config).with_clock(clock))
}

/// A root installation in the middle of job `j1`, in phase Completing, whose Init saw the
/// import `cfg` with value `seen`; the DataObject now holds `current`.
async fn completing_installation(store: &Store, seen: Value, current: Value) -> ObjectKey {
    let mut seen_values = Map::new();
    seen_values.insert("cfg".into(), seen);
    let inst = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Installation",
        "metadata": {"name": "inst", "namespace": "ns", "generation": 1,
                     "finalizers": [LANDSCAPER_FINALIZER]},
        "spec": {
            "blueprint": {"inline": {"filesystem": {"blueprint.yaml": BLUEPRINT}}},
            "imports": {"data": [{"name": "cfg", "dataRef": "cfg"}]},
            "exports": {"data": [{"name": "out", "dataRef": "out"}]},
        },
        "status": {
            "phase": "Completing",
            "jobID": "j1",
            "jobIDFinished": "j0",
            "observedGeneration": 1,
            "importsHash": dataflow::imports_hash(&seen_values),
        },
    });
    let data = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "DataObject",
        "metadata": {"name": "cfg", "namespace": "ns"},
        "data": current,
    });
    store
        .commit(Transaction::new().create(inst).create(data))
        .await
        .unwrap();
    ObjectKey::new(Kind::Installation, "ns", "inst")
}

async fn settle(store: &Store, key: &ObjectKey) -> Value {
    let r = reconciler(store);
    for _ in 0..10 {
        let _ = r.reconcile(key).await;
        let v = store.get(key).unwrap().unwrap();
        let status = &v["status"];
        if status["jobIDFinished"] == status["jobID"] {
            return v;
        }
    }
    panic!("job did not finish: {}", store.get(key).unwrap().unwrap());
}

#[tokio::test]
async fn completing_writes_exports_when_the_imports_are_unchanged() {
    let (_dir, store) = open_store();
    let key = completing_installation(&store, json!({"a": 1}), json!({"a": 1})).await;
    let inst = settle(&store, &key).await;
    assert_eq!(inst["status"]["phase"], "Succeeded", "{inst}");
    let out = store
        .get(&ObjectKey::new(Kind::DataObject, "ns", "out"))
        .unwrap()
        .expect("export DataObject out");
    assert_eq!(out["data"], json!({"a": 1}));
}

#[tokio::test]
async fn an_import_changed_during_the_job_fails_it_without_exports() {
    let (_dir, store) = open_store();
    let key = completing_installation(&store, json!({"a": 1}), json!({"a": 2})).await;
    let inst = settle(&store, &key).await;
    assert_eq!(inst["status"]["phase"], "Failed", "{inst}");
    let error = &inst["status"]["lastError"];
    assert_eq!(error["reason"], "CheckImportsHash", "{error}");
    assert_eq!(error["message"], "imports have changed", "{error}");
    assert!(
        store
            .get(&ObjectKey::new(Kind::DataObject, "ns", "out"))
            .unwrap()
            .is_none(),
        "no exports from a job whose imports changed"
    );
}

/// A root installation `name` exporting DataObject `<name>-out` and importing `imports`,
/// finished with `phase` (job `j1`), with a deletion timestamp when `deleting`.
fn root(name: &str, imports: &str, phase: &str, deleting: bool) -> Value {
    let mut v = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Installation",
        "metadata": {"name": name, "namespace": "ns", "generation": 1,
                     "finalizers": [LANDSCAPER_FINALIZER]},
        "spec": {
            "blueprint": {"inline": {"filesystem": {"blueprint.yaml": BLUEPRINT}}},
            "imports": {"data": [{"name": "cfg", "dataRef": imports}]},
            "exports": {"data": [{"name": "out", "dataRef": format!("{name}-out")}]},
        },
        "status": {"phase": phase, "jobID": "j1", "jobIDFinished": "j1", "observedGeneration": 1},
    });
    if deleting {
        v["metadata"]["deletionTimestamp"] = json!("2030-01-01T00:00:00Z");
    }
    v
}

/// Reconciles the keys in turn until all are gone (or `rounds` passes); returns what is left.
async fn reconcile_until_gone(store: &Store, keys: &[ObjectKey], rounds: usize) -> Vec<Value> {
    let r = reconciler(store);
    for _ in 0..rounds {
        for key in keys {
            let _ = r.reconcile(key).await;
        }
        if keys.iter().all(|k| store.get(k).unwrap().is_none()) {
            return Vec::new();
        }
    }
    keys.iter().filter_map(|k| store.get(k).unwrap()).collect()
}

#[tokio::test]
async fn two_deleted_roots_importing_each_others_exports_are_both_removed() {
    let (_dir, store) = open_store();
    // Both created, then deleted: the file of each is gone.
    store
        .commit(
            Transaction::new()
                .create(root("a", "b-out", "Failed", false))
                .create(root("b", "a-out", "Failed", false)),
        )
        .await
        .unwrap();
    let keys = [
        ObjectKey::new(Kind::Installation, "ns", "a"),
        ObjectKey::new(Kind::Installation, "ns", "b"),
    ];
    let mut tx = Transaction::new();
    for k in &keys {
        tx = tx.delete(k.clone(), None);
    }
    store.commit(tx).await.unwrap();
    let left = reconcile_until_gone(&store, &keys, 10).await;
    assert!(left.is_empty(), "still there: {left:#?}");
}

#[tokio::test]
async fn a_successor_that_is_kept_still_blocks_the_deletion_with_landscapers_reason() {
    let (_dir, store) = open_store();
    store
        .commit(
            Transaction::new()
                .create(root("a", "b-out", "Failed", false))
                .create(root("b", "a-out", "Failed", false)),
        )
        .await
        .unwrap();
    let a = ObjectKey::new(Kind::Installation, "ns", "a");
    store
        .commit(Transaction::new().delete(a.clone(), None))
        .await
        .unwrap();
    let left = reconcile_until_gone(&store, std::slice::from_ref(&a), 5).await;
    let a_left = left.first().expect("a waits for b");
    let error = &a_left["status"]["lastError"];
    assert_eq!(a_left["status"]["phase"], "InitDelete", "{a_left}");
    assert_eq!(error["operation"], "CheckSuccessorSibling", "{error}");
    assert_eq!(error["reason"], "SiblingImport", "{error}");
    assert_eq!(
        error["message"], "a sibling still imports some of the exports: b",
        "{error}"
    );
}

#[tokio::test]
async fn a_deleted_installation_stuck_in_init_on_its_blueprint_is_removed() {
    let (dir, store) = open_store();
    let inst = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Installation",
        "metadata": {"name": "local", "namespace": "ns", "generation": 1,
                     "finalizers": [LANDSCAPER_FINALIZER]},
        "spec": {"blueprint": {"ref": {"resourceName": "local://nowhere"}}},
        "status": {"phase": "Init", "jobID": "j1", "jobIDFinished": "j0", "observedGeneration": 1},
    });
    store.commit(Transaction::new().create(inst)).await.unwrap();
    let key = ObjectKey::new(Kind::Installation, "ns", "local");
    let config = ControllerConfig {
        wait_interval_min: Duration::from_secs(1),
        wait_interval_max: Duration::from_secs(4),
        ..ControllerConfig::default()
    };
    let r = InstallationReconciler::new(
        ControllerContext::new(store.clone(), config).with_manifests_dir(dir.path().to_path_buf()),
    );
    // Init waits for the blueprint directory (a normal error) ...
    let _ = r.reconcile(&key).await;
    let v = store.get(&key).unwrap().unwrap();
    assert_eq!(v["status"]["phase"], "Init", "{v}");
    assert_eq!(
        v["status"]["lastError"]["reason"], "ResolveBlueprint",
        "{v}"
    );
    // ... until the installation is deleted: nothing to tear down, so it goes.
    store
        .commit(Transaction::new().delete(key.clone(), None))
        .await
        .unwrap();
    for _ in 0..5 {
        let _ = r.reconcile(&key).await;
    }
    assert_eq!(store.get(&key).unwrap(), None);
}

#[tokio::test]
async fn a_missing_context_fails_init_with_landscapers_error() {
    let (_dir, store) = open_store();
    let mut inst = root("inst", "cfg", "Succeeded", false);
    inst["spec"]["context"] = json!("edge");
    inst["status"] = json!({"jobID": "j1"});
    store.commit(Transaction::new().create(inst)).await.unwrap();
    let key = ObjectKey::new(Kind::Installation, "ns", "inst");
    let v = settle(&store, &key).await;
    assert_eq!(v["status"]["phase"], "Failed", "{v}");
    let error = &v["status"]["lastError"];
    assert_eq!(error["operation"], "InitPrerequisites", "{error}");
    assert_eq!(error["reason"], "CalculateContext", "{error}");
    assert_eq!(
        error["message"],
        "Op: Context - Reason: GetContext - Message: contexts.landscaper.gardener.cloud \"edge\" not found",
        "{error}"
    );
    assert!(
        store
            .get(&ObjectKey::new(Kind::Execution, "ns", "inst"))
            .unwrap()
            .is_none(),
        "no execution without the context"
    );
}

#[tokio::test]
async fn a_deleted_installation_whose_completing_lost_its_blueprint_is_removed() {
    let (dir, store) = open_store();
    let inst = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Installation",
        "metadata": {"name": "gone", "namespace": "ns", "generation": 1,
                     "finalizers": [LANDSCAPER_FINALIZER]},
        "spec": {"blueprint": {"ref": {"resourceName": "local://removed"}}},
        "status": {"phase": "Completing", "jobID": "j1", "jobIDFinished": "j0",
                   "observedGeneration": 1},
    });
    store.commit(Transaction::new().create(inst)).await.unwrap();
    let key = ObjectKey::new(Kind::Installation, "ns", "gone");
    // The blueprint directory went with the file: Completing cannot finish, and the
    // installation is deleted.
    store
        .commit(Transaction::new().delete(key.clone(), None))
        .await
        .unwrap();
    let r = InstallationReconciler::new(
        ControllerContext::new(store.clone(), ControllerConfig::default())
            .with_manifests_dir(dir.path().to_path_buf()),
    );
    // The install job fails (Failed, not DeleteFailed: no deletion has run yet) ...
    let _ = r.reconcile(&key).await;
    // ... and the deletion job that follows removes it.
    for _ in 0..5 {
        if store.get(&key).unwrap().is_none() {
            break;
        }
        let _ = r.reconcile(&key).await;
    }
    assert_eq!(store.get(&key).unwrap(), None);
}
