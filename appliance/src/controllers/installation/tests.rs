//! The reconciler against a real store: checks of phase Completing.

use std::sync::Arc;
use std::time::Duration;

use landscaper_store::model::constants::*;
use landscaper_store::{Kind, ObjectKey, Store, StoreOptions, Transaction};
use serde_json::{Map, Value, json};

use super::*;
use crate::controllers::runtime::Reconciler;
use crate::controllers::{ControllerConfig, ControllerContext};

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
