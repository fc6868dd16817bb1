//! Property test: random operation sequences against the store and a simple in-memory model of
//! the same semantics must agree on every result and on the final state.

use std::collections::BTreeMap;

use landscaper_store::{
    Kind, LabelSelector, ObjectKey, Store, StoreError, StoreOptions, Transaction, TransactionError,
    Write,
};
use proptest::prelude::*;
use serde_json::{Value, json};

const NAMES: [&str; 4] = ["a", "b", "c", "d"];

#[derive(Debug, Clone)]
enum RvChoice {
    Current,
    Stale,
    Empty,
}

#[derive(Debug, Clone)]
enum Op {
    Create {
        name: usize,
        spec: u8,
        label: u8,
        finalizer: bool,
    },
    Update {
        name: usize,
        spec: u8,
        label: u8,
        finalizers: bool,
        rv: RvChoice,
    },
    Delete {
        name: usize,
        rv: Option<RvChoice>,
    },
    /// Two writes that must commit together or not at all.
    Pair(Box<Op>, Box<Op>),
}

fn single_op() -> impl Strategy<Value = Op> {
    let rv = prop_oneof![
        Just(RvChoice::Current),
        Just(RvChoice::Stale),
        Just(RvChoice::Empty)
    ];
    prop_oneof![
        (0..NAMES.len(), 0u8..3, 0u8..2, any::<bool>()).prop_map(
            |(name, spec, label, finalizer)| Op::Create {
                name,
                spec,
                label,
                finalizer
            }
        ),
        (0..NAMES.len(), 0u8..3, 0u8..2, any::<bool>(), rv.clone()).prop_map(
            |(name, spec, label, finalizers, rv)| Op::Update {
                name,
                spec,
                label,
                finalizers,
                rv
            }
        ),
        (0..NAMES.len(), proptest::option::of(rv)).prop_map(|(name, rv)| Op::Delete { name, rv }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => single_op(),
        1 => (single_op(), single_op()).prop_map(|(a, b)| Op::Pair(Box::new(a), Box::new(b))),
    ]
}

#[derive(Debug, Clone, PartialEq)]
struct ModelObject {
    spec: u8,
    label: u8,
    finalizers: bool,
    deleting: bool,
    generation: i64,
    rv: u64,
}

#[derive(Debug, Clone, Default)]
struct Model {
    objects: BTreeMap<usize, ModelObject>,
    revision: u64,
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Ok,
    AlreadyExists,
    NotFound,
    Conflict,
}

fn rv_of(choice: &RvChoice, current: u64) -> String {
    match choice {
        // Nothing to read before the object exists: callers send no precondition.
        RvChoice::Current if current == 0 => String::new(),
        RvChoice::Current => current.to_string(),
        RvChoice::Stale => (current + 1000).to_string(),
        RvChoice::Empty => String::new(),
    }
}

impl Model {
    /// Applies one write to `objects` (a scratch copy) at revision `next`; returns whether it
    /// changed anything.
    fn apply(
        objects: &mut BTreeMap<usize, ModelObject>,
        op: &Op,
        next: u64,
    ) -> Result<bool, Outcome> {
        match op {
            Op::Create {
                name,
                spec,
                label,
                finalizer,
            } => {
                if objects.contains_key(name) {
                    return Err(Outcome::AlreadyExists);
                }
                objects.insert(
                    *name,
                    ModelObject {
                        spec: *spec,
                        label: *label,
                        finalizers: *finalizer,
                        deleting: false,
                        generation: 1,
                        rv: next,
                    },
                );
                Ok(true)
            }
            Op::Update {
                name,
                spec,
                label,
                finalizers,
                rv,
            } => {
                let Some(cur) = objects.get(name).cloned() else {
                    return Err(Outcome::NotFound);
                };
                if matches!(rv, RvChoice::Stale) {
                    return Err(Outcome::Conflict);
                }
                let mut new = ModelObject {
                    spec: *spec,
                    label: *label,
                    finalizers: *finalizers,
                    deleting: cur.deleting,
                    generation: cur.generation + i64::from(*spec != cur.spec),
                    rv: cur.rv,
                };
                if new == cur {
                    return Ok(false);
                }
                if new.deleting && !new.finalizers {
                    objects.remove(name);
                    return Ok(true);
                }
                new.rv = next;
                objects.insert(*name, new);
                Ok(true)
            }
            Op::Delete { name, rv } => {
                let Some(cur) = objects.get(name).cloned() else {
                    return Err(Outcome::NotFound);
                };
                if matches!(rv, Some(RvChoice::Stale)) {
                    return Err(Outcome::Conflict);
                }
                if !cur.finalizers {
                    objects.remove(name);
                    Ok(true)
                } else if cur.deleting {
                    Ok(false)
                } else {
                    let mut new = cur;
                    new.deleting = true;
                    new.rv = next;
                    objects.insert(*name, new);
                    Ok(true)
                }
            }
            Op::Pair(a, b) => {
                let first = Model::apply(objects, a, next)?;
                let second = Model::apply(objects, b, next)?;
                Ok(first || second)
            }
        }
    }

    fn run(&mut self, op: &Op) -> Outcome {
        let mut scratch = self.objects.clone();
        match Model::apply(&mut scratch, op, self.revision + 1) {
            Ok(_) => {
                // A transaction whose writes cancel out (create then delete) commits nothing.
                let changed = scratch != self.objects;
                self.objects = scratch;
                if changed {
                    self.revision += 1;
                }
                Outcome::Ok
            }
            Err(e) => e,
        }
    }
}

fn object(name: usize, spec: u8, label: u8, finalizers: bool, rv: &str) -> Value {
    let mut meta = json!({"name": NAMES[name], "namespace": "ns", "labels": {"l": label.to_string()},
        "resourceVersion": rv});
    if finalizers {
        meta["finalizers"] = json!(["f"]);
    }
    json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DataObject",
        "metadata": meta, "data": {"spec": spec}})
}

fn key(name: usize) -> ObjectKey {
    ObjectKey::new(Kind::DataObject, "ns", NAMES[name])
}

/// Builds the store writes for an op, reading current resourceVersions from the store.
fn writes(store: &Store, op: &Op, out: &mut Vec<Write>) {
    let current_rv = |name: usize| -> (u64, bool) {
        match store.get(&key(name)).unwrap() {
            Some(o) => (
                o["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap(),
                o["metadata"]["finalizers"]
                    .as_array()
                    .is_some_and(|f| !f.is_empty()),
            ),
            None => (0, false),
        }
    };
    match op {
        Op::Create {
            name,
            spec,
            label,
            finalizer,
        } => out.push(Write::Create(object(*name, *spec, *label, *finalizer, ""))),
        Op::Update {
            name,
            spec,
            label,
            finalizers,
            rv,
        } => {
            let (cur, _) = current_rv(*name);
            out.push(Write::Update(object(
                *name,
                *spec,
                *label,
                *finalizers,
                &rv_of(rv, cur),
            )));
        }
        Op::Delete { name, rv } => {
            let (cur, _) = current_rv(*name);
            out.push(Write::Delete {
                key: key(*name),
                resource_version: rv.as_ref().map(|r| rv_of(r, cur)),
            });
        }
        Op::Pair(a, b) => {
            writes(store, a, out);
            writes(store, b, out);
        }
    }
}

fn outcome(result: Result<landscaper_store::Committed, StoreError>) -> Outcome {
    match result {
        Ok(_) => Outcome::Ok,
        Err(StoreError::Transaction(TransactionError::AlreadyExists { .. })) => {
            Outcome::AlreadyExists
        }
        Err(StoreError::Transaction(TransactionError::NotFound { .. })) => Outcome::NotFound,
        Err(StoreError::Transaction(TransactionError::Conflict { .. })) => Outcome::Conflict,
        Err(e) => panic!("unexpected store error: {e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn store_agrees_with_model(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let options = StoreOptions { durable: false, ..StoreOptions::default() };
        let store = Store::open(&dir.path().join("s.redb"), options).unwrap();
        let mut model = Model::default();
        for op in &ops {
            let mut w = Vec::new();
            writes(&store, op, &mut w);
            let got = outcome(store.commit_blocking(Transaction { writes: w }));
            let expected = model.run(op);
            prop_assert_eq!(&got, &expected, "op {:?}", op);
            prop_assert_eq!(store.revision(), model.revision, "revision after {:?}", op);
        }
        for (i, _) in NAMES.iter().enumerate() {
            let stored = store.get(&key(i)).unwrap();
            match (stored, model.objects.get(&i)) {
                (None, None) => {}
                (Some(o), Some(m)) => {
                    prop_assert_eq!(&o["data"]["spec"], &json!(m.spec));
                    prop_assert_eq!(&o["metadata"]["labels"]["l"], &json!(m.label.to_string()));
                    prop_assert_eq!(o["metadata"]["generation"].as_i64().unwrap(), m.generation);
                    prop_assert_eq!(o["metadata"]["resourceVersion"].as_str().unwrap(), m.rv.to_string());
                    prop_assert_eq!(o["metadata"]["deletionTimestamp"].is_string(), m.deleting);
                }
                (s, m) => prop_assert!(false, "object {} differs: store {:?} model {:?}", i, s, m),
            }
        }
        for label in 0u8..2 {
            let selector = LabelSelector::parse(&format!("l={label}")).unwrap();
            let mut listed: Vec<String> = store.list(Kind::DataObject, Some("ns"), &selector).unwrap()
                .items.iter().map(|o| o["metadata"]["name"].as_str().unwrap().to_string()).collect();
            listed.sort();
            let expected: Vec<String> = model.objects.iter().filter(|(_, m)| m.label == label)
                .map(|(i, _)| NAMES[*i].to_string()).collect();
            prop_assert_eq!(listed, expected);
        }
    }
}
