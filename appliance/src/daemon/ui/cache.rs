//! The objects the status page shows and the [`Index`] computed from them, kept up to date
//! from the store's change feed: a request after a change applies the change sets since the
//! last one (the feed carries the objects) instead of reading every object again; a full
//! read only at the start or when the feed's window no longer reaches back.

use std::sync::{Arc, Mutex};

use landscaper_store::{ChangeType, Kind, LabelSelector, Store, StoreError, object};
use serde_json::Value;

use super::index::Index;
use super::view::Snapshot;

#[derive(Debug, Default)]
pub struct Cache {
    state: Mutex<Option<State>>,
}

#[derive(Debug)]
struct State {
    snapshot: Arc<Snapshot>,
    index: Arc<Index>,
}

fn sort_key(o: &Value) -> (&str, &str) {
    (object::namespace(o), object::name(o))
}

fn list_of(snapshot: &mut Snapshot, kind: Kind) -> Option<&mut Vec<Value>> {
    match kind {
        Kind::Installation => Some(&mut snapshot.installations),
        Kind::Execution => Some(&mut snapshot.executions),
        Kind::DeployItem => Some(&mut snapshot.deploy_items),
        Kind::ManifestFile => Some(&mut snapshot.files),
        Kind::TransportArchive => Some(&mut snapshot.archives),
        _ => None,
    }
}

/// Whether the page shows objects of `kind` (the others' changes leave the index alone).
pub fn shown(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Installation
            | Kind::Execution
            | Kind::DeployItem
            | Kind::ManifestFile
            | Kind::TransportArchive
    )
}

/// Applies one change to a list sorted by (namespace, name).
pub fn apply(
    list: &mut Vec<Value>,
    change_type: ChangeType,
    namespace: &str,
    name: &str,
    o: &Value,
) {
    let at = list.binary_search_by(|x| sort_key(x).cmp(&(namespace, name)));
    match (change_type, at) {
        (ChangeType::Deleted, Ok(i)) => {
            list.remove(i);
        }
        (ChangeType::Deleted, Err(_)) => {}
        (_, Ok(i)) => list[i] = o.clone(),
        (_, Err(i)) => list.insert(i, o.clone()),
    }
}

fn read_all(store: &Store) -> Result<Snapshot, StoreError> {
    let all = LabelSelector::default();
    let revision = store.revision();
    let mut snapshot = Snapshot {
        revision,
        ..Snapshot::default()
    };
    for kind in Kind::ALL.into_iter().filter(|k| shown(*k)) {
        if let Some(list) = list_of(&mut snapshot, kind) {
            *list = store.list(kind, None, &all)?.items;
            list.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
        }
    }
    Ok(snapshot)
}

impl Cache {
    /// The snapshot and index of the store's current revision. Blocking (store reads).
    pub fn current(&self, store: &Store) -> Result<(Arc<Snapshot>, Arc<Index>), StoreError> {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let revision = store.revision();
        if let Some(state) = guard.as_ref()
            && state.snapshot.revision >= revision
        {
            return Ok((state.snapshot.clone(), state.index.clone()));
        }
        let updated = match guard.take() {
            Some(state) => match store.changes_since(state.snapshot.revision) {
                Ok(sets) => {
                    let mut snapshot = Arc::unwrap_or_clone(state.snapshot);
                    let mut index = state.index;
                    let mut touched = false;
                    for set in &sets {
                        for c in set.changes.iter().filter(|c| shown(c.key.kind)) {
                            if let Some(list) = list_of(&mut snapshot, c.key.kind) {
                                apply(
                                    list,
                                    c.change_type,
                                    &c.key.namespace,
                                    &c.key.name,
                                    &c.object,
                                );
                                touched = true;
                            }
                        }
                        snapshot.revision = snapshot.revision.max(set.revision);
                    }
                    snapshot.revision = snapshot.revision.max(revision);
                    if touched {
                        let changes = sets.iter().flat_map(|set| {
                            set.changes
                                .iter()
                                .filter(|c| shown(c.key.kind))
                                .map(|c| (c.key.kind, c.change_type, &c.object))
                        });
                        // In place when only existing objects changed; else anew.
                        if !Arc::make_mut(&mut index).apply(&snapshot, changes) {
                            index = Arc::new(Index::build(&snapshot));
                        }
                    }
                    State {
                        snapshot: Arc::new(snapshot),
                        index,
                    }
                }
                Err(_) => Self::full(store)?,
            },
            None => Self::full(store)?,
        };
        let answer = (updated.snapshot.clone(), updated.index.clone());
        *guard = Some(updated);
        Ok(answer)
    }

    fn full(store: &Store) -> Result<State, StoreError> {
        let snapshot = read_all(store)?;
        let index = Arc::new(Index::build(&snapshot));
        Ok(State {
            snapshot: Arc::new(snapshot),
            index,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changes_keep_the_list_sorted() {
        let o = |ns: &str, n: &str, p: &str| json!({"metadata": {"namespace": ns, "name": n}, "status": {"phase": p}});
        let mut list = vec![o("a", "x", "Init"), o("b", "a", "Init")];
        apply(&mut list, ChangeType::Added, "a", "y", &o("a", "y", "Init"));
        apply(
            &mut list,
            ChangeType::Modified,
            "a",
            "x",
            &o("a", "x", "Succeeded"),
        );
        apply(
            &mut list,
            ChangeType::Deleted,
            "b",
            "a",
            &o("b", "a", "Init"),
        );
        apply(
            &mut list,
            ChangeType::Deleted,
            "b",
            "zz",
            &o("b", "zz", "Init"),
        );
        let names: Vec<(&str, &str)> = list.iter().map(sort_key).collect();
        assert_eq!(names, [("a", "x"), ("a", "y")]);
        assert_eq!(list[0]["status"]["phase"], "Succeeded");
    }

    #[tokio::test]
    async fn the_cache_follows_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store.redb"), Default::default()).unwrap();
        let inst = |name: &str, phase: &str| {
            json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
                "metadata": {"name": name, "namespace": "ns"}, "status": {"phase": phase}})
        };
        let committed = store
            .commit(landscaper_store::Transaction::new().create(inst("a", "Init")))
            .await
            .unwrap();
        let cache = Cache::default();
        let (_, index) = cache.current(&store).unwrap();
        assert_eq!(index.entries.len(), 1);
        let (_, again) = cache.current(&store).unwrap();
        assert!(Arc::ptr_eq(&index, &again), "no change, the same index");
        drop((index, again));
        let mut a = committed.objects[0].clone().unwrap();
        a["status"]["phase"] = json!("Failed");
        store
            .commit(landscaper_store::Transaction::new().update(a))
            .await
            .unwrap();
        let (_, index) = cache.current(&store).unwrap();
        assert_eq!(index.entries[0].row.phase, "Failed", "modified in place");
        store
            .commit(landscaper_store::Transaction::new().create(inst("b", "Init")))
            .await
            .unwrap();
        let (snapshot, index) = cache.current(&store).unwrap();
        assert_eq!(index.entries.len(), 2, "added: built anew");
        assert_eq!(snapshot.revision, store.revision());
        store.shutdown();
    }
}
