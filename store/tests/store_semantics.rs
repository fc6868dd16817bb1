//! The store's write semantics: creation, optimistic concurrency, generation, finalizers,
//! indexes, history, the change feed and reopening.

use landscaper_store::{
    ChangeType, Kind, LabelSelector, ObjectKey, OpenError, Store, StoreError, StoreOptions,
    Transaction, TransactionError,
};
use serde_json::{Value, json};

fn open(dir: &tempfile::TempDir) -> Store {
    Store::open(&dir.path().join("store.redb"), StoreOptions::default()).unwrap()
}

fn target(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster", "config": {"kubeconfig": "x"}}})
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Kind::Target, "ns", name)
}

#[test]
fn create_sets_server_fields_and_rejects_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let done = store
        .commit_blocking(Transaction::new().create(target("a", json!({}))))
        .unwrap();
    assert_eq!(done.revision, 1);
    let obj = store.get(&key("a")).unwrap().unwrap();
    assert_eq!(obj["metadata"]["resourceVersion"], "1");
    assert_eq!(obj["metadata"]["generation"], 1);
    assert!(obj["metadata"]["uid"].as_str().unwrap().len() == 36);
    assert!(
        obj["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    let err = store
        .commit_blocking(Transaction::new().create(target("a", json!({}))))
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Transaction(TransactionError::AlreadyExists { .. })
        ),
        "{err}"
    );
    assert_eq!(store.revision(), 1);
}

#[test]
fn stale_resource_version_conflicts_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let created = store
        .commit_blocking(Transaction::new().create(target("a", json!({}))))
        .unwrap()
        .objects[0]
        .clone()
        .unwrap();
    let mut first = created.clone();
    first["spec"]["config"] = json!({"kubeconfig": "y"});
    let updated = store
        .commit_blocking(Transaction::new().update(first))
        .unwrap();
    assert_eq!(updated.revision, 2);
    let mut stale = created.clone();
    stale["spec"]["config"] = json!({"kubeconfig": "z"});
    let err = store
        .commit_blocking(Transaction::new().update(stale))
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Transaction(TransactionError::Conflict { expected, actual, .. }) if expected == "1" && actual == "2"),
        "{err}"
    );
    assert!(err.is_retryable());
    let now = store.get(&key("a")).unwrap().unwrap();
    assert_eq!(now["spec"]["config"]["kubeconfig"], "y");
    assert_eq!(now["metadata"]["generation"], 2);
}

#[test]
fn generation_bumps_only_outside_metadata_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let mut obj = store
        .commit_blocking(Transaction::new().create(target("a", json!({}))))
        .unwrap()
        .objects[0]
        .clone()
        .unwrap();
    obj["metadata"]["labels"] = json!({"x": "y"});
    obj["status"] = json!({"phase": "Succeeded"});
    let obj = store
        .commit_blocking(Transaction::new().update(obj))
        .unwrap()
        .objects[0]
        .clone()
        .unwrap();
    assert_eq!(obj["metadata"]["generation"], 1);
    assert_eq!(obj["metadata"]["resourceVersion"], "2");
    // Writing the same content again is a no-op: no new revision.
    let same = store
        .commit_blocking(Transaction::new().update(obj.clone()))
        .unwrap();
    assert_eq!(same.revision, 2);
    assert_eq!(store.revision(), 2);
}

#[test]
fn finalizers_turn_delete_into_deletion_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let mut t = target("a", json!({}));
    t["metadata"]["finalizers"] = json!(["finalizer.landscaper.gardener.cloud"]);
    store.commit_blocking(Transaction::new().create(t)).unwrap();
    let after = store
        .commit_blocking(Transaction::new().delete(key("a"), None))
        .unwrap();
    let obj = after.objects[0].clone().unwrap();
    assert!(obj["metadata"]["deletionTimestamp"].is_string());
    // An update cannot clear the deletionTimestamp; removing the last finalizer deletes.
    let mut cleared = obj.clone();
    cleared["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("deletionTimestamp");
    cleared["metadata"]["labels"] = json!({"still": "here"});
    let kept = store
        .commit_blocking(Transaction::new().update(cleared))
        .unwrap()
        .objects[0]
        .clone()
        .unwrap();
    assert!(kept["metadata"]["deletionTimestamp"].is_string());
    let mut released = kept;
    released["metadata"]["finalizers"] = json!([]);
    let gone = store
        .commit_blocking(Transaction::new().update(released))
        .unwrap();
    assert!(gone.objects[0].is_none());
    assert!(store.get(&key("a")).unwrap().is_none());
}

#[test]
fn transactions_are_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    store
        .commit_blocking(Transaction::new().create(target("a", json!({}))))
        .unwrap();
    let err = store
        .commit_blocking(
            Transaction::new()
                .create(target("b", json!({})))
                .create(target("a", json!({}))),
        )
        .unwrap_err();
    assert!(matches!(
        err,
        StoreError::Transaction(TransactionError::AlreadyExists { .. })
    ));
    assert!(store.get(&key("b")).unwrap().is_none());
    assert_eq!(store.revision(), 1);
}

#[test]
fn label_and_owner_indexes_follow_updates() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let parent = store
        .commit_blocking(Transaction::new().create(target("parent", json!({"role": "p"}))))
        .unwrap()
        .objects[0]
        .clone()
        .unwrap();
    let uid = parent["metadata"]["uid"].as_str().unwrap().to_string();
    let mut child = target("child", json!({"role": "c", "tier": "1"}));
    child["metadata"]["ownerReferences"] = json!([{"apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Target", "name": "parent", "uid": uid}]);
    let child = store
        .commit_blocking(Transaction::new().create(child))
        .unwrap()
        .objects[0]
        .clone()
        .unwrap();
    let sel = |s: &str| LabelSelector::parse(s).unwrap();
    let names = |list: Vec<Value>| -> Vec<String> {
        list.iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(
            store
                .list(Kind::Target, None, &sel("role=c"))
                .unwrap()
                .items
        ),
        ["child"]
    );
    assert_eq!(
        names(
            store
                .list(Kind::Target, Some("ns"), &sel("role=c,tier=1"))
                .unwrap()
                .items
        ),
        ["child"]
    );
    assert!(
        store
            .list(Kind::Target, Some("other"), &sel("role=c"))
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(
        names(
            store
                .list(Kind::Target, None, &sel("role!=c"))
                .unwrap()
                .items
        ),
        ["parent"]
    );
    assert_eq!(names(store.children(&uid).unwrap()), ["child"]);
    assert_eq!(
        names(store.get_by_uid(&uid).unwrap().into_iter().collect()),
        ["parent"]
    );
    let mut relabelled = child;
    relabelled["metadata"]["labels"] = json!({"role": "d"});
    relabelled["metadata"]["ownerReferences"] = json!([]);
    store
        .commit_blocking(Transaction::new().update(relabelled))
        .unwrap();
    assert!(
        store
            .list(Kind::Target, None, &sel("role=c"))
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(
        names(
            store
                .list(Kind::Target, None, &sel("role=d"))
                .unwrap()
                .items
        ),
        ["child"]
    );
    assert!(store.children(&uid).unwrap().is_empty());
    store
        .commit_blocking(Transaction::new().delete(key("child"), None))
        .unwrap();
    assert!(
        store
            .list(Kind::Target, None, &sel("role=d"))
            .unwrap()
            .items
            .is_empty()
    );
}

#[test]
fn generate_name_and_default_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let obj = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DataObject",
        "metadata": {"generateName": "exec-item-"}, "data": 1});
    let made = store
        .commit_blocking(Transaction::new().create(obj))
        .unwrap()
        .objects[0]
        .clone()
        .unwrap();
    let name = made["metadata"]["name"].as_str().unwrap();
    assert!(
        name.starts_with("exec-item-") && name.len() == "exec-item-".len() + 5,
        "{name}"
    );
    assert_eq!(made["metadata"]["namespace"], "default");
}

#[tokio::test]
async fn change_feed_carries_every_commit_in_order_and_history_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let mut feed = store.subscribe();
    let mut handles = Vec::new();
    for i in 0..50 {
        let s = store.clone();
        handles.push(tokio::spawn(async move {
            s.commit(Transaction::new().create(target(&format!("t{i}"), json!({}))))
                .await
                .unwrap()
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let mut last = 0;
    for _ in 0..50 {
        let set = feed.recv().await.unwrap();
        assert_eq!(set.revision, last + 1, "change sets arrive in commit order");
        last = set.revision;
        assert_eq!(set.changes.len(), 1);
        assert_eq!(set.changes[0].change_type, ChangeType::Added);
    }
    assert_eq!(store.changes_since(45).unwrap().len(), 5);
    let mut obj = store.get(&key("t3")).unwrap().unwrap();
    obj["status"] = json!({"phase": "Init"});
    store
        .commit(Transaction::new().update(obj.clone()))
        .await
        .unwrap();
    let mut obj = store.get(&key("t3")).unwrap().unwrap();
    obj["status"] = json!({"phase": "Succeeded"});
    store.commit(Transaction::new().update(obj)).await.unwrap();
    let history = store.history(&key("t3"), 10).unwrap();
    assert_eq!(history.len(), 3);
    assert_eq!(history[0].phase.as_deref(), Some("Succeeded"));
    assert_eq!(history[0].previous_phase.as_deref(), Some("Init"));
    assert!(history[0].is_phase_transition());
    assert_eq!(history[2].change_type, ChangeType::Added);
    assert_eq!(store.recent_history(2).unwrap()[0].revision, 52);
}

#[test]
fn history_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        history_limit: 10,
        ..StoreOptions::default()
    };
    let store = Store::open(&dir.path().join("s.redb"), options).unwrap();
    for i in 0..30 {
        store
            .commit_blocking(Transaction::new().create(target(&format!("t{i}"), json!({}))))
            .unwrap();
    }
    let recent = store.recent_history(100).unwrap();
    assert_eq!(recent.len(), 10);
    assert_eq!(recent[0].revision, 30);
    assert!(store.history(&key("t0"), 10).unwrap().is_empty());
    assert_eq!(store.history(&key("t29"), 10).unwrap().len(), 1);
}

#[test]
fn reopening_keeps_state_and_revision_and_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    {
        let store = Store::open(&path, StoreOptions::default()).unwrap();
        store
            .commit_blocking(Transaction::new().create(target("a", json!({"k": "v"}))))
            .unwrap();
        store.shutdown();
        assert!(matches!(
            store.commit_blocking(Transaction::new().create(target("b", json!({})))),
            Err(StoreError::Transaction(TransactionError::Closed))
        ));
    }
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    assert_eq!(store.revision(), 1);
    let list = store
        .list(Kind::Target, None, &LabelSelector::parse("k=v").unwrap())
        .unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.revision, 1);
}

#[test]
fn second_open_of_the_same_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let _store = Store::open(&path, StoreOptions::default()).unwrap();
    let err = Store::open(&path, StoreOptions::default()).unwrap_err();
    assert!(
        matches!(err, StoreError::Open(OpenError::Locked { .. })),
        "{err}"
    );
}
