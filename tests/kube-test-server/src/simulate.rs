//! Simulated controllers: workload readiness, pod phases, job completion, namespace deletion
//! and service-account token secrets, driven by the store's events.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::app::App;
use crate::config::{JobOutcome, Readiness};
use crate::object;
use crate::rollout::{self, DELAY_ANNOTATION, OUTCOME_ANNOTATION, READY_ANNOTATION};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::store::{DeleteOptions, Event, EventType, WriteCtx};

const MANAGER: &str = "kube-controller-manager";

/// One object, by resource and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ObjectRef {
    group: String,
    plural: String,
    namespace: String,
    name: String,
}

impl ObjectRef {
    fn of(group: &str, plural: &str, obj: &Value) -> Self {
        ObjectRef {
            group: group.to_string(),
            plural: plural.to_string(),
            namespace: object::namespace(obj).to_string(),
            name: object::name(obj).to_string(),
        }
    }
}

struct Controllers {
    app: Arc<App>,
    /// Delayed writes already scheduled, by object and generation (or uid for pods/jobs).
    pending: Mutex<HashSet<(ObjectRef, String)>>,
}

pub async fn run(app: Arc<App>) {
    let mut events = app.store.subscribe();
    let mut shutdown = app.shutdown.clone();
    let controllers = Arc::new(Controllers {
        app: app.clone(),
        pending: Mutex::new(HashSet::new()),
    });
    controllers.reconcile_all();
    loop {
        tokio::select! {
            received = events.recv() => match received {
                Ok(event) => controllers.on_event(&event),
                Err(broadcast::error::RecvError::Lagged(_)) => controllers.reconcile_all(),
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = app.simulation_changed.notified() => controllers.reconcile_all(),
            _ = shutdown.changed() => return,
        }
    }
}

/// Workloads whose status is written directly (no pods).
const WORKLOADS: &[&str] = &["statefulsets", "daemonsets"];

impl Controllers {
    fn reconcile_all(self: &Arc<Self>) {
        for plural in WORKLOADS {
            for obj in self.app.store.all_of("apps", plural) {
                self.workload(plural, &obj);
            }
        }
        for obj in self.app.store.all_of("apps", "deployments") {
            self.deployment(&obj);
        }
        for obj in self.app.store.all_of("apps", "replicasets") {
            self.replica_set(&obj);
        }
        for obj in self.app.store.all_of("", "pods") {
            self.pod(&obj);
        }
        for obj in self.app.store.all_of("batch", "jobs") {
            self.job(&obj);
        }
        for obj in self.app.store.all_of("", "namespaces") {
            if object::is_deleting(&obj) {
                self.namespace(object::name(&obj));
            }
        }
    }

    fn on_event(self: &Arc<Self>, event: &Event) {
        let obj = &event.object;
        if event.kind == EventType::Deleted {
            // Owners notice their dependents going away (and replace them).
            match (event.group.as_str(), event.plural.as_str()) {
                ("", "pods") => {
                    self.owner_of(obj, "ReplicaSet", "replicasets");
                    self.owner_of(obj, "StatefulSet", "statefulsets");
                    self.owner_of(obj, "DaemonSet", "daemonsets");
                }
                ("apps", "replicasets") => self.owner_of(obj, "Deployment", "deployments"),
                _ => {}
            }
            return;
        }
        match (event.group.as_str(), event.plural.as_str()) {
            ("apps", plural) if WORKLOADS.contains(&plural) => self.workload(plural, obj),
            ("apps", "deployments") => self.deployment(obj),
            ("apps", "replicasets") => {
                self.replica_set(obj);
                self.owner_of(obj, "Deployment", "deployments");
            }
            ("", "pods") => {
                self.pod(obj);
                self.owner_of(obj, "ReplicaSet", "replicasets");
                self.owner_of(obj, "StatefulSet", "statefulsets");
                self.owner_of(obj, "DaemonSet", "daemonsets");
            }
            ("batch", "jobs") => self.job(obj),
            ("", "secrets") => self.token_secret(obj),
            ("", "namespaces") if object::is_deleting(obj) => self.namespace(object::name(obj)),
            _ => {}
        }
    }

    /// Runs `write` after `delay` unless one is already scheduled for `key`.
    fn schedule(
        self: &Arc<Self>,
        key: (ObjectRef, String),
        delay: Duration,
        write: impl FnOnce(&App) + Send + 'static,
    ) {
        {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if !pending.insert(key.clone()) {
                return;
            }
        }
        let this = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            write(&this.app);
            this.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&key);
        });
    }

    /// The workload's readiness: the simulation's, or never when it or its pod template is
    /// annotated `kube-test-server/ready: never`.
    fn readiness_of(&self, obj: &Value) -> Readiness {
        let never = |o: Option<&Value>| {
            o.and_then(|o| rollout::annotation(o, READY_ANNOTATION)) == Some("never")
        };
        if never(Some(obj)) || never(obj.pointer("/spec/template")) {
            Readiness::Never
        } else {
            self.app.simulation().workloads
        }
    }

    /// The statefulset and daemonset controllers: Pods from the template (a StatefulSet's
    /// `NAME-0..replicas-1`, a DaemonSet's one per node, the test server having one node),
    /// labelled with `controller-revision-hash`; on a template change the outdated Pods are
    /// replaced (a StatefulSet's only from `partition` on, none with `OnDelete`); the status
    /// from the Pods, as kube-controller-manager writes it (what Helm's `ready.go` reads).
    fn workload(self: &Arc<Self>, plural: &str, obj: &Value) {
        if object::is_deleting(obj) {
            return;
        }
        let stateful = plural == "statefulsets";
        let kind = if stateful { "StatefulSet" } else { "DaemonSet" };
        let name = object::name(obj).to_string();
        let template = obj.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let revision = format!("{name}-{}", rollout::template_hash(&template));
        let on_delete = object::str_at(obj, "/spec/updateStrategy/type") == "OnDelete";
        let partition = if stateful {
            rollout::int(obj, "/spec/updateStrategy/rollingUpdate/partition", 0)
        } else {
            0
        };
        let never = self.readiness_of(obj) == Readiness::Never;
        let want: Vec<(String, i64)> = if stateful {
            (0..rollout::int(obj, "/spec/replicas", 1).max(0))
                .map(|i| (format!("{name}-{i}"), i))
                .collect()
        } else {
            vec![(String::new(), 0)]
        };
        let pods = self.controlled("", "pods", kind, obj);
        let revision_of =
            |p: &Value| object::str_at(p, "/metadata/labels/controller-revision-hash").to_string();
        let mut changed = false;
        if let Some(rt) = self.app.store.resolve("", "v1", "pods") {
            for pod in &pods {
                let pod_name = object::name(pod);
                let ordinal = want.iter().find(|(n, _)| n == pod_name).map(|(_, i)| *i);
                let wanted = if stateful { ordinal.is_some() } else { true };
                let outdated =
                    revision_of(pod) != revision && !on_delete && ordinal.unwrap_or(0) >= partition;
                if !wanted || outdated {
                    let _ = self.app.store.delete(
                        &rt,
                        object::namespace(pod),
                        pod_name,
                        &DeleteOptions::default(),
                    );
                    changed = true;
                }
            }
        }
        let pods = if changed {
            self.controlled("", "pods", kind, obj)
        } else {
            pods
        };
        for (pod_name, ordinal) in &want {
            let exists = if stateful {
                pods.iter().any(|p| object::name(p) == pod_name)
            } else {
                !pods.is_empty()
            };
            if !exists {
                let pod = rollout::new_workload_pod(obj, pod_name, *ordinal, &revision, never);
                self.create_as_manager("", "pods", pod);
            }
        }
        let pods = self.controlled("", "pods", kind, obj);
        let status = workload_status(obj, stateful, &pods, &revision);
        let generation = object::generation(obj);
        self.app.store.controller_update(
            "apps",
            plural,
            object::namespace(obj),
            &name,
            MANAGER,
            |o| {
                if object::generation(o) != generation {
                    return false;
                }
                let before = o.clone();
                o["status"] = status;
                *o != before
            },
        );
    }

    /// Reconciles the controller (of `kind`, resource `plural`) of a dependent.
    fn owner_of(self: &Arc<Self>, dependent: &Value, kind: &str, plural: &str) {
        let Some(name) = rollout::controller_name(dependent, kind) else {
            return;
        };
        let Some(rt) = self.app.store.resolve("apps", "v1", plural) else {
            return;
        };
        if let Ok(owner) = self.app.store.get(&rt, object::namespace(dependent), name) {
            match plural {
                "deployments" => self.deployment(&owner),
                "statefulsets" | "daemonsets" => self.workload(plural, &owner),
                _ => self.replica_set(&owner),
            }
        }
    }

    /// Objects of a resource in a namespace controlled by `owner` (not terminating).
    fn controlled(&self, group: &str, plural: &str, kind: &str, owner: &Value) -> Vec<Value> {
        let (version, namespace, uid) = ("v1", object::namespace(owner), object::uid(owner));
        let Some(rt) = self.app.store.resolve(group, version, plural) else {
            return Vec::new();
        };
        self.app
            .store
            .list(
                &rt,
                Some(namespace),
                &LabelSelector::everything(),
                &FieldSelector::default(),
            )
            .0
            .into_iter()
            .filter(|o| rollout::controller_uid(o, kind) == Some(uid) && !object::is_deleting(o))
            .collect()
    }

    fn create_as_manager(&self, group: &str, plural: &str, obj: Value) {
        let Some(rt) = self.app.store.resolve(group, "v1", plural) else {
            return;
        };
        let ctx = WriteCtx {
            manager: MANAGER.into(),
            dry_run: false,
        };
        let namespace = object::namespace(&obj).to_string();
        let _ = self.app.store.create(&rt, &namespace, obj, &ctx);
    }

    /// The deployment controller: one ReplicaSet per pod template (named by its hash, revision
    /// annotation bumped when it becomes current), scaled to `spec.replicas`; old ReplicaSets
    /// scaled to zero once the new one is available; the Deployment's status from them.
    fn deployment(self: &Arc<Self>, obj: &Value) {
        if object::is_deleting(obj) {
            return;
        }
        let (namespace, name) = (object::namespace(obj), object::name(obj));
        let desired = rollout::int(obj, "/spec/replicas", 1);
        let paused = obj.pointer("/spec/paused") == Some(&json!(true));
        let template = obj.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let hash = rollout::template_hash(&template);
        let owned = self.controlled("apps", "replicasets", "Deployment", obj);
        let max_revision = owned.iter().map(rollout::revision).max().unwrap_or(0);
        let current = owned
            .iter()
            .find(|rs| rs.pointer("/metadata/labels/pod-template-hash") == Some(&json!(hash)));
        let Some(current) = current else {
            if !paused {
                // Its creation event brings us back here.
                self.create_as_manager(
                    "apps",
                    "replicasets",
                    rollout::new_replica_set(obj, &hash, max_revision + 1),
                );
            }
            return;
        };
        let rs_name = object::name(current).to_string();
        let current_revision = rollout::revision(current);
        let is_newest = owned
            .iter()
            .all(|rs| object::name(rs) == rs_name || rollout::revision(rs) < current_revision);
        let revision = if is_newest {
            current_revision
        } else {
            max_revision + 1
        };
        if !paused {
            self.app.store.controller_update(
                "apps",
                "replicasets",
                namespace,
                &rs_name,
                MANAGER,
                |rs| {
                    let before = rs.clone();
                    rs["spec"]["replicas"] = json!(desired);
                    if !rs["metadata"]["annotations"].is_object() {
                        rs["metadata"]["annotations"] = json!({});
                    }
                    let a = &mut rs["metadata"]["annotations"];
                    a[rollout::REVISION_ANNOTATION] = json!(revision.to_string());
                    a[rollout::DESIRED_REPLICAS_ANNOTATION] = json!(desired.to_string());
                    *rs != before
                },
            );
            let new_available = rollout::int(current, "/status/availableReplicas", 0) >= desired
                && rollout::int(current, "/status/observedGeneration", 0)
                    == object::generation(current);
            if new_available {
                for old in owned.iter().filter(|rs| object::name(rs) != rs_name) {
                    if rollout::int(old, "/spec/replicas", 1) != 0 {
                        self.app.store.controller_update(
                            "apps",
                            "replicasets",
                            namespace,
                            object::name(old),
                            MANAGER,
                            |rs| {
                                rs["spec"]["replicas"] = json!(0);
                                true
                            },
                        );
                    }
                }
            }
        }
        let generation = object::generation(obj);
        // Read before the update: the store is locked while `controller_update` runs.
        let owned = self.controlled("apps", "replicasets", "Deployment", obj);
        self.app
            .store
            .controller_update("apps", "deployments", namespace, name, MANAGER, |d| {
                if object::generation(d) != generation {
                    return false;
                }
                let new = owned.iter().find(|rs| object::name(rs) == rs_name);
                let status = rollout::deployment_status(d, new, &owned);
                let before = d.clone();
                d["status"] = status;
                if !d["metadata"]["annotations"].is_object() {
                    d["metadata"]["annotations"] = json!({});
                }
                d["metadata"]["annotations"][rollout::REVISION_ANNOTATION] =
                    json!(revision.to_string());
                *d != before
            });
    }

    /// The replica-set controller: as many pods as `spec.replicas`, its status from them.
    fn replica_set(self: &Arc<Self>, obj: &Value) {
        if object::is_deleting(obj) {
            return;
        }
        let want = usize::try_from(rollout::int(obj, "/spec/replicas", 1)).unwrap_or(0);
        let mut pods = self.controlled("", "pods", "ReplicaSet", obj);
        if pods.len() < want {
            for _ in pods.len()..want {
                self.create_as_manager("", "pods", rollout::new_pod(obj));
            }
            pods = self.controlled("", "pods", "ReplicaSet", obj);
        } else if pods.len() > want {
            // Not-ready pods go first, then the youngest.
            pods.sort_by_key(|p| {
                (
                    !rollout::pod_is_ready(p),
                    object::str_at(p, "/metadata/creationTimestamp").to_string(),
                )
            });
            if let Some(rt) = self.app.store.resolve("", "v1", "pods") {
                for extra in pods.iter().skip(want).rev() {
                    let _ = self.app.store.delete(
                        &rt,
                        object::namespace(extra),
                        object::name(extra),
                        &DeleteOptions::default(),
                    );
                }
            }
            pods = self.controlled("", "pods", "ReplicaSet", obj);
        }
        let status = rollout::replica_set_status(obj, &pods);
        let generation = object::generation(obj);
        self.app.store.controller_update(
            "apps",
            "replicasets",
            object::namespace(obj),
            object::name(obj),
            MANAGER,
            |rs| {
                if object::generation(rs) != generation {
                    return false;
                }
                let before = rs.clone();
                rs["status"] = status;
                *rs != before
            },
        );
    }

    /// What a pod becomes and when: pods of workloads run and become Ready (not Ready when the
    /// workload's readiness is never or the pod is annotated `kube-test-server/ready: never`);
    /// bare pods reach the simulation's phase, hook pods (`helm.sh/hook`) run to `Succeeded`,
    /// and `kube-test-server/outcome` names the phase of any bare pod.
    fn pod_target(&self, obj: &Value) -> (String, bool, Duration) {
        let sim = self.app.simulation();
        let delay = rollout::annotation(obj, DELAY_ANNOTATION)
            .and_then(|d| d.parse::<u64>().ok())
            .map(Duration::from_millis);
        let owned = !object::owner_uids(obj).is_empty();
        if owned {
            let never = rollout::annotation(obj, READY_ANNOTATION) == Some("never");
            return match (never, sim.workloads) {
                // Pods that are ready stay ready when the simulation turns to never.
                (false, Readiness::Never) if rollout::pod_is_ready(obj) => {
                    ("Running".into(), true, sim.pod_delay)
                }
                (true, _) | (_, Readiness::Never) => {
                    ("Running".into(), false, delay.unwrap_or(sim.pod_delay))
                }
                (false, Readiness::After(d)) => ("Running".into(), true, delay.unwrap_or(d)),
            };
        }
        let phase = match rollout::annotation(obj, OUTCOME_ANNOTATION) {
            Some("Fail" | "Failed") => "Failed".to_string(),
            Some("Complete" | "Succeeded") => "Succeeded".to_string(),
            Some("Never") => "Running".to_string(),
            _ if rollout::annotation(obj, "helm.sh/hook").is_some() => "Succeeded".to_string(),
            _ => sim.pod_phase.clone(),
        };
        let ready = phase == "Running";
        (phase, ready, delay.unwrap_or(sim.pod_delay))
    }

    fn pod(self: &Arc<Self>, obj: &Value) {
        let (phase, ready, delay) = self.pod_target(obj);
        let current = object::str_at(obj, "/status/phase");
        if object::is_deleting(obj)
            || phase == "Pending"
            || (current == phase && rollout::pod_is_ready(obj) == ready)
        {
            return;
        }
        let r = ObjectRef::of("", "pods", obj);
        let uid = object::uid(obj).to_string();
        let key = format!("{uid}/{phase}/{ready}");
        self.schedule((r.clone(), key), delay, move |app| {
            app.store
                .controller_update("", "pods", &r.namespace, &r.name, "kubelet", |o| {
                    if object::uid(o) != uid {
                        return false;
                    }
                    let status = pod_status(o, &phase, ready);
                    if let Some(m) = o.as_object_mut() {
                        m.insert("status".into(), status);
                    }
                    true
                });
        });
    }

    fn job(self: &Arc<Self>, obj: &Value) {
        if object::is_deleting(obj) {
            return;
        }
        let sim = self.app.simulation();
        let outcome = match rollout::annotation(obj, OUTCOME_ANNOTATION) {
            Some("Fail" | "Failed") => JobOutcome::Fail,
            Some("Complete" | "Succeeded") => JobOutcome::Complete,
            Some("Never") => JobOutcome::Never,
            _ => sim.jobs,
        };
        let delay = rollout::annotation(obj, DELAY_ANNOTATION)
            .and_then(|d| d.parse::<u64>().ok())
            .map_or(sim.job_delay, Duration::from_millis);
        let finished = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    matches!(
                        c.get("type").and_then(Value::as_str),
                        Some("Complete" | "Failed")
                    ) && c.get("status").and_then(Value::as_str) == Some("True")
                })
            });
        if finished {
            return;
        }
        let r = ObjectRef::of("batch", "jobs", obj);
        let uid = object::uid(obj).to_string();
        if obj.pointer("/status/startTime").is_none() {
            self.app.store.controller_update(
                "batch",
                "jobs",
                &r.namespace,
                &r.name,
                MANAGER,
                |o| {
                    if let Some(m) = o.as_object_mut() {
                        m.insert(
                            "status".into(),
                            json!({"active": 1, "ready": 0, "startTime": object::now()}),
                        );
                    }
                    true
                },
            );
        }
        if outcome == JobOutcome::Never {
            return;
        }
        self.schedule((r.clone(), uid.clone()), delay, move |app| {
            app.store
                .controller_update("batch", "jobs", &r.namespace, &r.name, MANAGER, |o| {
                    if object::uid(o) != uid {
                        return false;
                    }
                    let status = job_status(o, outcome);
                    if let Some(m) = o.as_object_mut() {
                        m.insert("status".into(), status);
                    }
                    true
                });
        });
    }

    fn namespace(self: &Arc<Self>, name: &str) {
        let r = ObjectRef {
            group: String::new(),
            plural: "namespaces".into(),
            namespace: String::new(),
            name: name.to_string(),
        };
        let delay = self.app.simulation().namespace_delay;
        let this = self.clone();
        {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if !pending.insert((r.clone(), "finalize".into())) {
                return;
            }
        }
        let mut shutdown = self.app.shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            // Objects with finalizers keep the namespace until their owners release them.
            while !this.app.store.finalize_namespace(&r.name) {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                    _ = shutdown.changed() => break,
                }
            }
            this.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&(r, "finalize".into()));
        });
    }

    /// The token controller: fills `token`, `ca.crt` and `namespace` of token secrets.
    fn token_secret(&self, obj: &Value) {
        if object::str_at(obj, "/type") != "kubernetes.io/service-account-token"
            || obj.pointer("/data/token").is_some()
        {
            return;
        }
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let namespace = object::namespace(obj).to_string();
        let account = object::str_at(
            obj,
            "/metadata/annotations/kubernetes.io~1service-account.name",
        )
        .to_string();
        let token = format!(
            "{}.{}.{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256","kid":"kube-test-server"}"#),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
                json!({"iss": "kubernetes/serviceaccount", "sub": format!("system:serviceaccount:{namespace}:{account}")}).to_string()
            ),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(object::uid(obj)),
        );
        let ca = self.app.ca_pem.clone();
        self.app.store.controller_update(
            "",
            "secrets",
            &namespace,
            object::name(obj),
            MANAGER,
            |o| {
                let Some(m) = o.as_object_mut() else {
                    return false;
                };
                let data = m.entry("data").or_insert_with(|| json!({}));
                if !data.is_object() {
                    *data = json!({});
                }
                if let Some(d) = data.as_object_mut() {
                    d.insert("token".into(), json!(b64(&token)));
                    d.insert("ca.crt".into(), json!(b64(&ca)));
                    d.insert("namespace".into(), json!(b64(&namespace)));
                }
                true
            },
        );
    }
}

fn int(obj: &Value, pointer: &str, default: i64) -> i64 {
    obj.pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

fn condition(type_: &str, status: bool, reason: &str, message: &str) -> Value {
    let now = object::now();
    json!({"type": type_, "status": if status { "True" } else { "False" }, "reason": reason,
           "message": message, "lastUpdateTime": now, "lastTransitionTime": now})
}

/// A StatefulSet's or DaemonSet's status from its Pods and its `revision`.
fn workload_status(obj: &Value, stateful: bool, pods: &[Value], revision: &str) -> Value {
    let generation = object::generation(obj);
    let count = |f: &dyn Fn(&Value) -> bool| pods.iter().filter(|p| f(p)).count();
    let updated =
        count(&|p| object::str_at(p, "/metadata/labels/controller-revision-hash") == revision);
    let ready = count(&|p| rollout::pod_is_ready(p));
    if stateful {
        let replicas = rollout::int(obj, "/spec/replicas", 1);
        // The current revision moves to the update revision once every Pod has it.
        let current = if i64::try_from(updated).unwrap_or(0) >= replicas {
            revision.to_string()
        } else {
            pods.iter()
                .map(|p| object::str_at(p, "/metadata/labels/controller-revision-hash"))
                .find(|r| *r != revision)
                .or_else(|| {
                    obj.pointer("/status/currentRevision")
                        .and_then(Value::as_str)
                })
                .unwrap_or(revision)
                .to_string()
        };
        json!({
            "observedGeneration": generation,
            "replicas": pods.len(),
            "readyReplicas": ready,
            "currentReplicas": if current == revision { updated } else { pods.len() - updated },
            "updatedReplicas": updated,
            "availableReplicas": ready,
            "currentRevision": current,
            "updateRevision": revision,
            "collisionCount": 0,
        })
    } else {
        json!({
            "observedGeneration": generation,
            "desiredNumberScheduled": 1,
            "currentNumberScheduled": pods.len(),
            "updatedNumberScheduled": updated,
            "numberReady": ready,
            "numberAvailable": ready,
            "numberUnavailable": 1_usize.saturating_sub(ready),
            "numberMisscheduled": 0,
        })
    }
}

fn pod_status(obj: &Value, phase: &str, ready: bool) -> Value {
    let started = phase == "Running";
    let running = started && ready;
    let now = object::now();
    let containers: Vec<Value> = obj
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let state = match phase {
                        "Running" => json!({"running": {"startedAt": now}}),
                        "Succeeded" => json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}),
                        _ => json!({"terminated": {"exitCode": 1, "reason": "Error", "startedAt": now, "finishedAt": now}}),
                    };
                    json!({"name": c.get("name").cloned().unwrap_or(json!("")), "image": c.get("image").cloned().unwrap_or(json!("")),
                           "imageID": "", "ready": running, "started": started, "restartCount": 0, "state": state})
                })
                .collect()
        })
        .unwrap_or_default();
    let cond = |t: &str, s: bool| json!({"type": t, "status": if s { "True" } else { "False" }, "lastTransitionTime": now});
    json!({
        "phase": phase,
        "conditions": [cond("PodScheduled", true), cond("Initialized", true), cond("ContainersReady", running), cond("Ready", running)],
        "containerStatuses": containers,
        "hostIP": "10.0.0.1",
        "podIP": "10.244.0.10",
        "podIPs": [{"ip": "10.244.0.10"}],
        "qosClass": "BestEffort",
        "startTime": now,
    })
}

fn job_status(obj: &Value, outcome: JobOutcome) -> Value {
    let now = object::now();
    let start = obj
        .pointer("/status/startTime")
        .cloned()
        .unwrap_or(json!(now));
    let completions = int(obj, "/spec/completions", 1);
    if outcome == JobOutcome::Fail {
        return json!({
            "failed": 1, "ready": 0, "startTime": start,
            "conditions": [
                condition("FailureTarget", true, "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
                condition("Failed", true, "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
            ],
        });
    }
    json!({
        "succeeded": completions, "ready": 0, "startTime": start, "completionTime": now,
        "uncountedTerminatedPods": {},
        "conditions": [
            condition("SuccessCriteriaMet", true, "CompletionsReached", "Reached expected number of succeeded pods"),
            condition("Complete", true, "CompletionsReached", "Reached expected number of succeeded pods"),
        ],
    })
}
