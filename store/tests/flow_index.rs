//! The data-flow index follows creates, updates and deletes in the same transaction, keeps
//! scopes (namespace and parent) apart, and is built for files written before it existed.

use landscaper_store::{
    FlowDirection, FlowKind, FlowRef, Kind, ObjectKey, Store, StoreOptions, Transaction,
};
use serde_json::{Value, json};

fn installation(name: &str, parent: Option<&str>, imports: &[&str], exports: &[&str]) -> Value {
    let mut labels = serde_json::Map::new();
    if let Some(p) = parent {
        labels.insert(
            "landscaper.gardener.cloud/encompassed-by".into(),
            Value::from(p),
        );
    }
    json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
    "metadata": {"name": name, "namespace": "ns", "labels": labels},
    "spec": {
        "imports": {"data": imports.iter().map(|r| json!({"name": r, "dataRef": r})).collect::<Vec<_>>(),
                    "targets": [{"name": "cluster", "target": "cluster"}]},
        "exports": {"data": exports.iter().map(|r| json!({"name": r, "dataRef": r})).collect::<Vec<_>>()}
    }})
}

fn by(
    store: &Store,
    parent: Option<&str>,
    direction: FlowDirection,
    kind: FlowKind,
    r: &str,
) -> Vec<String> {
    store
        .installations_by_flow(
            "ns",
            parent,
            FlowRef {
                direction,
                kind,
                reference: r,
            },
        )
        .unwrap()
}

fn exporters(store: &Store, r: &str) -> Vec<String> {
    by(store, None, FlowDirection::Export, FlowKind::Data, r)
}

fn importers(store: &Store, r: &str) -> Vec<String> {
    by(store, None, FlowDirection::Import, FlowKind::Data, r)
}

#[test]
fn index_follows_writes_and_keeps_scopes_apart() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), StoreOptions::default()).unwrap();
    store
        .commit_blocking(
            Transaction::new()
                .create(installation("a", None, &[], &["x"]))
                .create(installation("b", None, &["x"], &["y"]))
                .create(installation("c", None, &["x", "y"], &[]))
                .create(installation("sub", Some("a"), &["x"], &["x"])),
        )
        .unwrap();
    assert_eq!(exporters(&store, "x"), ["a"]);
    assert_eq!(importers(&store, "x"), ["b", "c"]);
    assert_eq!(importers(&store, "y"), ["c"]);
    assert_eq!(
        by(
            &store,
            None,
            FlowDirection::Import,
            FlowKind::Target,
            "cluster"
        ),
        ["a", "b", "c"]
    );
    assert_eq!(
        by(
            &store,
            Some("a"),
            FlowDirection::Export,
            FlowKind::Data,
            "x"
        ),
        ["sub"]
    );
    assert!(exporters(&store, "none").is_empty());

    // An update that changes the exports moves the entries; the other refs stay.
    let mut b = store
        .get(&ObjectKey::new(Kind::Installation, "ns", "b"))
        .unwrap()
        .unwrap();
    b["spec"]["exports"]["data"] = json!([{"name": "z", "dataRef": "z"}]);
    store.commit_blocking(Transaction::new().update(b)).unwrap();
    assert!(exporters(&store, "y").is_empty());
    assert_eq!(exporters(&store, "z"), ["b"]);
    assert_eq!(importers(&store, "x"), ["b", "c"]);

    store
        .commit_blocking(
            Transaction::new().delete(ObjectKey::new(Kind::Installation, "ns", "a"), None),
        )
        .unwrap();
    assert!(exporters(&store, "x").is_empty());
    // The subinstallation is another scope: untouched by its parent's removal from the index.
    assert_eq!(
        by(
            &store,
            Some("a"),
            FlowDirection::Import,
            FlowKind::Data,
            "x"
        ),
        ["sub"]
    );
}

#[test]
fn files_without_the_index_get_it_built_when_opened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    {
        let store = Store::open(&path, StoreOptions::default()).unwrap();
        store
            .commit_blocking(
                Transaction::new()
                    .create(installation("a", None, &[], &["x"]))
                    .create(installation("b", None, &["x"], &[])),
            )
            .unwrap();
        store.shutdown();
    }
    {
        // What a file written by a build without the index looks like.
        let db = redb::Database::open(&path).unwrap();
        let tx = db.begin_write().unwrap();
        assert!(
            tx.delete_table(redb::TableDefinition::<&str, ()>::new("flow_index"))
                .unwrap()
        );
        tx.commit().unwrap();
    }
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    assert_eq!(exporters(&store, "x"), ["a"]);
    assert_eq!(importers(&store, "x"), ["b"]);
}
