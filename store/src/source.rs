//! Read-only access to objects, the way the controllers read them: by key, by kind and label
//! selector, by owner, and through the data-flow index. Implemented by the [`Store`] (each call
//! one read of the current state), by a [`StoreSnapshot`] (every call reads the same revision)
//! and by [`MemoryObjects`], an in-memory map the offline
//! `render` command and unit tests fill, so that import resolution and the installation
//! controller's view loading run the same code over either.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::engine::{Store, StoreSnapshot};
use crate::error::StoreError;
use crate::flow::{FlowRef, installation_flows};
use crate::key::ObjectKey;
use crate::model::Kind;
use crate::model::constants::ENCOMPASSED_BY_LABEL;
use crate::object;
use crate::selector::LabelSelector;

/// Objects to read from (never to write to).
pub trait ObjectSource {
    /// The object under `key`.
    fn get(&self, key: &ObjectKey) -> Result<Option<Value>, StoreError>;

    /// Objects of `kind`, in one namespace or all, matching `selector`, ordered by namespace
    /// and name.
    fn list(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Result<Vec<Value>, StoreError>;

    /// Objects whose `ownerReferences` name `owner_uid`.
    fn children(&self, owner_uid: &str) -> Result<Vec<Value>, StoreError>;

    /// Names of the installations of one scope (namespace; parent installation or `None` for
    /// roots) that import or export `flow.reference`, ordered by name.
    fn installations_by_flow(
        &self,
        namespace: &str,
        parent: Option<&str>,
        flow: FlowRef<'_>,
    ) -> Result<Vec<String>, StoreError>;
}

impl ObjectSource for Store {
    fn get(&self, key: &ObjectKey) -> Result<Option<Value>, StoreError> {
        Store::get(self, key)
    }

    fn list(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Result<Vec<Value>, StoreError> {
        Store::list(self, kind, namespace, selector).map(|l| l.items)
    }

    fn children(&self, owner_uid: &str) -> Result<Vec<Value>, StoreError> {
        Store::children(self, owner_uid)
    }

    fn installations_by_flow(
        &self,
        namespace: &str,
        parent: Option<&str>,
        flow: FlowRef<'_>,
    ) -> Result<Vec<String>, StoreError> {
        Store::installations_by_flow(self, namespace, parent, flow)
    }
}

impl ObjectSource for StoreSnapshot {
    fn get(&self, key: &ObjectKey) -> Result<Option<Value>, StoreError> {
        StoreSnapshot::get(self, key)
    }

    fn list(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Result<Vec<Value>, StoreError> {
        StoreSnapshot::list(self, kind, namespace, selector).map(|l| l.items)
    }

    fn children(&self, owner_uid: &str) -> Result<Vec<Value>, StoreError> {
        StoreSnapshot::children(self, owner_uid)
    }

    fn installations_by_flow(
        &self,
        namespace: &str,
        parent: Option<&str>,
        flow: FlowRef<'_>,
    ) -> Result<Vec<String>, StoreError> {
        StoreSnapshot::installations_by_flow(self, namespace, parent, flow)
    }
}

/// Objects held in memory, keyed by kind, namespace and name. Objects without a namespace are
/// put into [`object::DEFAULT_NAMESPACE`] (cluster-scoped kinds stay without one), as the
/// store does on ingest.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryObjects {
    objects: BTreeMap<ObjectKey, Value>,
}

impl MemoryObjects {
    pub fn new() -> MemoryObjects {
        MemoryObjects::default()
    }

    /// Adds or replaces `object` (its key from `apiVersion`, `kind` and metadata).
    pub fn insert(&mut self, mut object: Value) -> Result<ObjectKey, StoreError> {
        let key = object::key_of(&object)?;
        if key.namespace != object::namespace(&object) {
            object::metadata_mut(&mut object)
                .insert("namespace".into(), Value::String(key.namespace.clone()));
        }
        self.objects.insert(key.clone(), object);
        Ok(key)
    }

    pub fn remove(&mut self, key: &ObjectKey) -> Option<Value> {
        self.objects.remove(key)
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &Value)> {
        self.objects.iter()
    }
}

impl FromIterator<Value> for MemoryObjects {
    /// Objects whose key cannot be read are left out.
    fn from_iter<I: IntoIterator<Item = Value>>(iter: I) -> MemoryObjects {
        let mut m = MemoryObjects::new();
        for o in iter {
            let _ = m.insert(o);
        }
        m
    }
}

impl ObjectSource for MemoryObjects {
    fn get(&self, key: &ObjectKey) -> Result<Option<Value>, StoreError> {
        Ok(self.objects.get(key).cloned())
    }

    fn list(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Result<Vec<Value>, StoreError> {
        Ok(self
            .objects
            .iter()
            .filter(|(k, _)| k.kind == kind && namespace.is_none_or(|ns| k.namespace == ns))
            .filter(|(_, o)| selector.matches_object(o))
            .map(|(_, o)| o.clone())
            .collect())
    }

    fn children(&self, owner_uid: &str) -> Result<Vec<Value>, StoreError> {
        Ok(self
            .objects
            .values()
            .filter(|o| object::owner_uids(o).iter().any(|u| u == owner_uid))
            .cloned()
            .collect())
    }

    fn installations_by_flow(
        &self,
        namespace: &str,
        parent: Option<&str>,
        flow: FlowRef<'_>,
    ) -> Result<Vec<String>, StoreError> {
        Ok(self
            .objects
            .iter()
            .filter(|(k, _)| k.kind == Kind::Installation && k.namespace == namespace)
            .filter(|(_, o)| {
                let p = object::labels(o)
                    .get(ENCOMPASSED_BY_LABEL)
                    .filter(|p| !p.is_empty())
                    .cloned();
                p.as_deref() == parent
            })
            .filter(|(_, o)| {
                installation_flows(o).iter().any(|(d, kind, r)| {
                    *d == flow.direction && *kind == flow.kind && r == flow.reference
                })
            })
            .map(|(k, _)| k.name.clone())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::engine::{StoreOptions, Transaction};
    use crate::flow::{FlowDirection, FlowKind};

    fn objects() -> Vec<Value> {
        let inst = |name: &str, parent: Option<&str>, imports: &[&str], exports: &[&str]| {
            let mut labels = serde_json::Map::new();
            if let Some(p) = parent {
                labels.insert(ENCOMPASSED_BY_LABEL.into(), json!(p));
            }
            json!({
                "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
                "metadata": {"name": name, "namespace": "ns", "labels": labels, "uid": format!("u-{name}")},
                "spec": {
                    "imports": {"data": imports.iter().map(|r| json!({"name": r, "dataRef": r})).collect::<Vec<_>>()},
                    "exports": {"data": exports.iter().map(|r| json!({"name": r, "dataRef": r})).collect::<Vec<_>>()},
                },
            })
        };
        let data = |name: &str, ns: &str, labels: Value, owner: Option<&str>| {
            let mut o = json!({
                "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DataObject",
                "metadata": {"name": name, "namespace": ns, "labels": labels}, "data": name,
            });
            if let Some(u) = owner {
                o["metadata"]["ownerReferences"] = json!([{"apiVersion": "landscaper.gardener.cloud/v1alpha1",
                    "kind": "Installation", "name": "a", "uid": u}]);
            }
            o
        };
        vec![
            inst("a", None, &[], &["x"]),
            inst("b", None, &["x"], &["y"]),
            inst("c", Some("a"), &["x"], &[]),
            inst("d", None, &["x", "y"], &[]),
            data("d1", "ns", json!({"k": "v"}), Some("u-a")),
            data("d2", "ns", json!({"k": "w"}), None),
            data("d3", "other", json!({"k": "v"}), Some("u-a")),
        ]
    }

    /// Every query answers the same over the store and over the map.
    #[test]
    fn memory_objects_answer_as_the_store_does() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            &dir.path().join("s.redb"),
            StoreOptions {
                durable: false,
                ..StoreOptions::default()
            },
        )
        .unwrap();
        store
            .commit_blocking(
                objects()
                    .into_iter()
                    .fold(Transaction::new(), Transaction::create),
            )
            .unwrap();
        // The map holds the stored objects (with the metadata the store added).
        let stored = Store::list(&store, Kind::DataObject, None, &LabelSelector::everything())
            .unwrap()
            .items
            .into_iter()
            .chain(
                Store::list(
                    &store,
                    Kind::Installation,
                    None,
                    &LabelSelector::everything(),
                )
                .unwrap()
                .items,
            );
        let memory: MemoryObjects = stored.collect();
        assert_eq!(memory.len(), 7);
        let snapshot = store.snapshot().unwrap();
        let sources: [&dyn ObjectSource; 3] = [&store, &memory, &snapshot];
        let answers: Vec<_> = sources
            .iter()
            .map(|s| {
                let names = |v: Vec<Value>| -> Vec<String> {
                    v.iter()
                        .map(|o| format!("{}/{}", object::namespace(o), object::name(o)))
                        .collect()
                };
                let sel = LabelSelector::parse("k=v").unwrap();
                let flow = |direction, reference| FlowRef {
                    direction,
                    kind: FlowKind::Data,
                    reference,
                };
                (
                    s.get(&ObjectKey::new(Kind::DataObject, "ns", "d2"))
                        .unwrap()
                        .map(|o| o["data"].clone()),
                    s.get(&ObjectKey::new(Kind::DataObject, "ns", "none"))
                        .unwrap(),
                    names(s.list(Kind::DataObject, None, &sel).unwrap()),
                    names(s.list(Kind::DataObject, Some("ns"), &sel).unwrap()),
                    names(
                        s.list(Kind::DataObject, Some("ns"), &LabelSelector::everything())
                            .unwrap(),
                    ),
                    names(s.children("u-a").unwrap()),
                    s.installations_by_flow("ns", None, flow(FlowDirection::Import, "x"))
                        .unwrap(),
                    s.installations_by_flow("ns", Some("a"), flow(FlowDirection::Import, "x"))
                        .unwrap(),
                    s.installations_by_flow("ns", None, flow(FlowDirection::Export, "y"))
                        .unwrap(),
                )
            })
            .collect();
        assert_eq!(answers[0], answers[1]);
        assert_eq!(answers[0], answers[2]);
        // The snapshot stays at its revision while the store moves on.
        let gone = ObjectKey::new(Kind::DataObject, "ns", "d2");
        store
            .commit_blocking(Transaction::new().delete(gone.clone(), None))
            .unwrap();
        assert!(ObjectSource::get(&store, &gone).unwrap().is_none());
        assert!(ObjectSource::get(&snapshot, &gone).unwrap().is_some());
        let a = &answers[0];
        assert_eq!(a.0, Some(json!("d2")));
        assert_eq!(a.2, ["ns/d1", "other/d3"]);
        assert_eq!(a.3, ["ns/d1"]);
        assert_eq!(a.4, ["ns/d1", "ns/d2"]);
        assert_eq!(a.5, ["ns/d1", "other/d3"]);
        assert_eq!(a.6, ["b", "d"]);
        assert_eq!(a.7, ["c"]);
        assert_eq!(a.8, ["b"]);
    }

    #[test]
    fn objects_without_namespace_go_to_the_default_namespace() {
        let mut m = MemoryObjects::new();
        let key = m
            .insert(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}))
            .unwrap();
        assert_eq!(key, ObjectKey::new(Kind::ConfigMap, "default", "c"));
        assert!(m.get(&key).unwrap().is_some());
        assert!(m.insert(json!({"kind": "Nope"})).is_err());
    }
}
