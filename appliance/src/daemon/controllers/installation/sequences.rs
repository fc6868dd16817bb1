//! Random event sequences against the installation machine: a world of objects in memory
//! ([`MemoryObjects`]), the controller's own loader and [`machine::step`], commits emulated as
//! the store applies them, and the other actors (the execution controller finishing jobs, users
//! annotating, changing and deleting installations) as random events. Invariants: no panic, every
//! step moves the phase only along Landscaper's transitions, the loader always gives the step
//! what it needs, and once every root is deleted the deletion ends with no installation left.

use landscaper_store::model::constants::*;
use landscaper_store::model::{Installation, Phase, from_value};
use landscaper_store::{Kind, MemoryObjects, ObjectKey, ObjectSource, Write, object};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::machine::{self, Next, Now};

const NS: &str = "ns";

fn blueprint(extra: &str) -> Value {
    let text = format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
{extra}deployExecutions:
- name: d
  type: GoTemplate
  template: |
    deployItems:
    - name: item
      type: landscaper.gardener.cloud/mock
      config: {{apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1, kind: ProviderConfiguration}}
"
    );
    json!({"inline": {"filesystem": {"blueprint.yaml": text}}})
}

fn root(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"), "generation": 1,
            "annotations": {OPERATION_ANNOTATION: OPERATION_RECONCILE}},
        "spec": spec,
    })
}

/// `a` exports `x`, `b` imports it, `c` has a subinstallation.
fn initial_world() -> MemoryObjects {
    let a = root(
        "a",
        json!({
            "exports": {"data": [{"name": "out", "dataRef": "x"}]},
            "blueprint": blueprint("exports:\n- name: out\n  schema: {type: string}\nexportExecutions:\n- name: e\n  type: GoTemplate\n  template: |\n    exports:\n      out: value\n"),
        }),
    );
    let b = root(
        "b",
        json!({
            "imports": {"data": [{"name": "in", "dataRef": "x"}]},
            "blueprint": blueprint("imports:\n- name: in\n  schema: {type: string}\n"),
        }),
    );
    let child = "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: InstallationTemplate\nname: child\nblueprint:\n  filesystem:\n    blueprint.yaml: |\n      apiVersion: landscaper.gardener.cloud/v1alpha1\n      kind: Blueprint\n      deployExecutions:\n      - name: d\n        type: GoTemplate\n        template: |\n          deployItems:\n          - name: item\n            type: landscaper.gardener.cloud/mock\n            config: {}\n";
    let c = root(
        "c",
        json!({"blueprint": {"inline": {"filesystem": {
            "blueprint.yaml": "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\nsubinstallations:\n- file: /child.yaml\n",
            "child.yaml": child,
        }}}}),
    );
    [a, b, c].into_iter().collect()
}

/// The world and the emulated store.
struct World {
    objects: MemoryObjects,
    counter: u64,
}

impl World {
    fn installations(&self) -> Vec<String> {
        self.objects
            .iter()
            .filter(|(k, _)| k.kind == Kind::Installation)
            .map(|(k, _)| k.name.clone())
            .collect()
    }

    fn of_kind(&self, kind: Kind) -> Vec<ObjectKey> {
        self.objects
            .iter()
            .filter(|(k, _)| k.kind == kind)
            .map(|(k, _)| k.clone())
            .collect()
    }

    fn get(&self, key: &ObjectKey) -> Option<Value> {
        self.objects.get(key).ok().flatten()
    }

    /// Puts `v` back, or removes it when it is being deleted and has no finalizer left.
    fn put(objects: &mut MemoryObjects, v: Value) -> Result<(), String> {
        if object::deletion_timestamp(&v).is_some() && object::finalizers(&v).is_empty() {
            let key = object::key_of(&v).map_err(|e| e.to_string())?;
            objects.remove(&key);
            return Ok(());
        }
        objects.insert(v).map(|_| ()).map_err(|e| e.to_string())
    }

    /// Applies one transaction as the store does, all or nothing.
    fn commit(&mut self, writes: Vec<Write>) -> Result<(), String> {
        let mut next = self.objects.clone();
        for w in writes {
            match w {
                Write::Create(mut v) => {
                    self.counter += 1;
                    if object::name(&v).is_empty() {
                        let prefix = object::meta_str(&v, "generateName")
                            .unwrap_or("x-")
                            .to_string();
                        object::metadata_mut(&mut v)
                            .insert("name".into(), json!(format!("{prefix}{}", self.counter)));
                    }
                    let meta = object::metadata_mut(&mut v);
                    meta.insert("uid".into(), json!(format!("uid-{}", self.counter)));
                    meta.entry("generation").or_insert(json!(1));
                    let key = object::key_of(&v).map_err(|e| e.to_string())?;
                    if next.get(&key).map_err(|e| e.to_string())?.is_some() {
                        return Err(format!("{key} exists already"));
                    }
                    Self::put(&mut next, v)?;
                }
                Write::Update(mut v) => {
                    let key = object::key_of(&v).map_err(|e| e.to_string())?;
                    let Some(stored) = next.get(&key).map_err(|e| e.to_string())? else {
                        return Err(format!("{key} not found"));
                    };
                    let meta = object::metadata_mut(&mut v);
                    for field in ["uid", "deletionTimestamp", "generation"] {
                        match stored.pointer(&format!("/metadata/{field}")) {
                            Some(x) => meta.insert(field.into(), x.clone()),
                            None => meta.remove(field),
                        };
                    }
                    Self::put(&mut next, v)?;
                }
                Write::Delete { key, .. } => {
                    if let Some(mut stored) = next.get(&key).map_err(|e| e.to_string())? {
                        if object::finalizers(&stored).is_empty() {
                            next.remove(&key);
                        } else if object::deletion_timestamp(&stored).is_none() {
                            object::metadata_mut(&mut stored)
                                .insert("deletionTimestamp".into(), json!("2030-01-01T00:00:00Z"));
                            next.insert(stored).map_err(|e| e.to_string())?;
                        }
                    }
                }
            }
        }
        self.objects = next;
        Ok(())
    }
}

/// Landscaper's phase transitions of one step (phases a step passes without a commit
/// included: a step ends in one of them).
fn allowed(from: Option<&Phase>, to: Option<&Phase>) -> bool {
    use Phase::*;
    if from == to {
        return true;
    }
    matches!(
        (from, to),
        (
            None | Some(Succeeded | Failed | DeleteFailed),
            Some(Init | InitDelete)
        ) | (Some(Succeeded | Failed | DeleteFailed | Other(_)), None)
            | (Some(Init), Some(CleanupOrphaned | Failed | InitDelete))
            | (Some(CleanupOrphaned), Some(ObjectsCreated | Failed))
            | (Some(ObjectsCreated), Some(Progressing | Failed))
            | (Some(Progressing), Some(Completing | Failed))
            | (Some(Completing), Some(Succeeded | Failed))
            | (Some(InitDelete), Some(TriggerDelete | DeleteFailed))
            | (Some(TriggerDelete), Some(Deleting | DeleteFailed))
            | (Some(Deleting), Some(DeleteFailed))
    )
}

fn phase_of(v: &Value) -> Option<Phase> {
    from_value::<Installation>(v)
        .ok()
        .and_then(|i| i.status.and_then(|s| s.phase))
}

/// One reconcile of `name`, as the runtime runs it: steps until one waits or stops.
fn reconcile(rt: &tokio::runtime::Runtime, world: &mut World, name: &str) -> Result<(), String> {
    let key = ObjectKey::new(Kind::Installation, NS, name);
    let mut deferred: Option<Value> = None;
    for _ in 0..24 {
        let dirty = deferred.is_some();
        let value = match deferred.take() {
            Some(v) => v,
            None => match world.get(&key) {
                Some(v) => v,
                None => return Ok(()),
            },
        };
        let inst: Installation = from_value(&value).map_err(|e| e.to_string())?;
        let view = rt
            .block_on(super::load_view(&world.objects, None, None, &value, &inst))
            .map_err(|e| e.to_string())?;
        let now = Now {
            time: "2030-01-01T00:00:00Z".into(),
            instant: "2030-01-01T00:00:00Z".parse().map_err(|e| format!("{e}"))?,
            new_job_id: format!("job-{}", world.counter + 1),
            ready_timeout: None,
        };
        world.counter += 1;
        let step = machine::step(&value, &inst, dirty, &view, &now);
        let before = inst.status.as_ref().and_then(|s| s.phase.clone());
        let after = match &step.next {
            Next::Defer(v) => Some(phase_of(v)),
            _ => step.writes.iter().rev().find_map(|w| match w {
                Write::Update(v) if object::key_of(v).ok().as_ref() == Some(&key) => {
                    Some(phase_of(v))
                }
                _ => None,
            }),
        };
        if let Some(after) = after
            && !allowed(before.as_ref(), after.as_ref())
        {
            return Err(format!(
                "{name}: {before:?} -> {after:?} is no Landscaper transition"
            ));
        }
        if let Next::Fail(m) = &step.next {
            return Err(format!(
                "{name}: the loader missed what the step needs: {m:?}"
            ));
        }
        if world.commit(step.writes).is_err() {
            // As the store refuses it: the runtime retries later.
            return Ok(());
        }
        match step.next {
            Next::Continue => {}
            Next::Defer(v) => deferred = Some(v),
            _ => return Ok(()),
        }
    }
    Ok(())
}

/// The execution controller (and its deploy items) finishing the current job of execution `i`.
fn finish_execution(world: &mut World, i: usize, ok: bool) {
    let executions = world.of_kind(Kind::Execution);
    let Some(key) = executions.get(i % executions.len().max(1)) else {
        return;
    };
    let Some(mut e) = world.get(key) else { return };
    if object::deletion_timestamp(&e).is_some() && ok {
        world.objects.remove(key);
        return;
    }
    let Some(job) = e.pointer("/status/jobID").cloned() else {
        return;
    };
    let deleting = object::deletion_timestamp(&e).is_some();
    e["status"]["jobIDFinished"] = job;
    e["status"]["phase"] = json!(match (deleting, ok) {
        (true, _) => "DeleteFailed",
        (false, true) => "Succeeded",
        (false, false) => "Failed",
    });
    let _ = world.objects.insert(e);
}

#[derive(Debug, Clone)]
enum Event {
    Reconcile(usize),
    FinishExecution(usize, bool),
    Annotate(usize, &'static str),
    ChangeSpec(usize),
    Delete(usize),
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        6 => (0..8usize).prop_map(Event::Reconcile),
        3 => (0..4usize, any::<bool>()).prop_map(|(i, ok)| Event::FinishExecution(i, ok)),
        1 => (0..8usize, prop_oneof![Just(OPERATION_RECONCILE), Just(OPERATION_INTERRUPT)])
            .prop_map(|(i, op)| Event::Annotate(i, op)),
        1 => (0..8usize).prop_map(Event::ChangeSpec),
        1 => (0..8usize).prop_map(Event::Delete),
    ]
}

fn nth_installation(world: &World, i: usize) -> Option<ObjectKey> {
    let names = world.installations();
    (!names.is_empty()).then(|| ObjectKey::new(Kind::Installation, NS, &names[i % names.len()]))
}

fn apply(rt: &tokio::runtime::Runtime, world: &mut World, e: &Event) -> Result<(), String> {
    match e {
        Event::Reconcile(i) => {
            if let Some(key) = nth_installation(world, *i) {
                reconcile(rt, world, &key.name)?;
            }
        }
        Event::FinishExecution(i, ok) => finish_execution(world, *i, *ok),
        Event::Annotate(i, op) => {
            if let Some(key) = nth_installation(world, *i)
                && let Some(mut v) = world.get(&key)
            {
                crate::daemon::controllers::jobs::set_annotation(
                    &mut v,
                    OPERATION_ANNOTATION,
                    Some(op),
                );
                let _ = world.objects.insert(v);
            }
        }
        Event::ChangeSpec(i) => {
            if let Some(key) = nth_installation(world, *i)
                && let Some(mut v) = world.get(&key)
            {
                let g = object::generation(&v) + 1;
                object::metadata_mut(&mut v).insert("generation".into(), json!(g));
                let _ = world.objects.insert(v);
            }
        }
        Event::Delete(i) => {
            let roots: Vec<String> = world
                .installations()
                .into_iter()
                .filter(|n| ["a", "b", "c"].contains(&n.as_str()))
                .collect();
            if !roots.is_empty() {
                let key = ObjectKey::new(Kind::Installation, NS, &roots[i % roots.len()]);
                let _ = world.commit(vec![Write::Delete {
                    key,
                    resource_version: None,
                }]);
            }
        }
    }
    Ok(())
}

fn run(events: &[Event]) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| e.to_string())?;
    let mut world = World {
        objects: initial_world(),
        counter: 0,
    };
    for e in events {
        apply(&rt, &mut world, e)?;
    }
    // Every root is deleted; the others act as they should: executions finish, a failed
    // deletion is retried by the user.
    for root in ["a", "b", "c"] {
        let key = ObjectKey::new(Kind::Installation, NS, root);
        let _ = world.commit(vec![Write::Delete {
            key,
            resource_version: None,
        }]);
    }
    for _ in 0..40 {
        if world.installations().is_empty() {
            return Ok(());
        }
        for name in world.installations() {
            reconcile(&rt, &mut world, &name)?;
        }
        for i in 0..world.of_kind(Kind::Execution).len() {
            finish_execution(&mut world, i, true);
        }
        for name in world.installations() {
            let key = ObjectKey::new(Kind::Installation, NS, &name);
            if let Some(mut v) = world.get(&key)
                && phase_of(&v) == Some(Phase::DeleteFailed)
                && v.pointer("/status/jobID") == v.pointer("/status/jobIDFinished")
                && !object::labels(&v).contains_key(ENCOMPASSED_BY_LABEL)
            {
                crate::daemon::controllers::jobs::set_annotation(
                    &mut v,
                    OPERATION_ANNOTATION,
                    Some(OPERATION_RECONCILE),
                );
                let _ = world.objects.insert(v);
            }
        }
    }
    Err(format!(
        "the deletion did not end; left: {:#?}",
        world
            .installations()
            .iter()
            .filter_map(|n| world.get(&ObjectKey::new(Kind::Installation, NS, n)))
            .map(|v| (object::name(&v).to_string(), v["status"].clone()))
            .collect::<Vec<_>>()
    ))
}

#[test]
fn a_plain_run_installs_everything_and_deletes_it() {
    let mut events = Vec::new();
    for _ in 0..6 {
        events.extend((0..4).map(Event::Reconcile));
        events.extend((0..4).map(|i| Event::FinishExecution(i, true)));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut world = World {
        objects: initial_world(),
        counter: 0,
    };
    for e in &events {
        apply(&rt, &mut world, e).unwrap();
    }
    // All three roots and the subinstallation succeeded; b read a's export.
    let phases: Vec<(String, Option<Phase>)> = world
        .installations()
        .iter()
        .map(|n| {
            let v = world
                .get(&ObjectKey::new(Kind::Installation, NS, n))
                .unwrap();
            (n.clone(), phase_of(&v))
        })
        .collect();
    assert_eq!(phases.len(), 4, "{phases:?}");
    assert!(
        phases.iter().all(|(_, p)| *p == Some(Phase::Succeeded)),
        "{phases:?}"
    );
    let x = world
        .get(&ObjectKey::new(Kind::DataObject, NS, "x"))
        .unwrap();
    assert_eq!(x["data"], "value");
    run(&events).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_event_sequences_keep_the_invariants(events in proptest::collection::vec(event(), 0..40)) {
        if let Err(m) = run(&events) {
            prop_assert!(false, "{m}\nevents: {events:?}");
        }
    }
}
