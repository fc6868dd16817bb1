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
use crate::store::{Event, EventType};

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

const WORKLOADS: &[&str] = &["deployments", "statefulsets", "daemonsets", "replicasets"];

impl Controllers {
    fn reconcile_all(self: &Arc<Self>) {
        for plural in WORKLOADS {
            for obj in self.app.store.all_of("apps", plural) {
                self.workload(plural, &obj);
            }
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
        if event.kind == EventType::Deleted {
            return;
        }
        let obj = &event.object;
        match (event.group.as_str(), event.plural.as_str()) {
            ("apps", plural) if WORKLOADS.contains(&plural) => self.workload(plural, obj),
            ("", "pods") => self.pod(obj),
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

    fn workload(self: &Arc<Self>, plural: &str, obj: &Value) {
        if object::is_deleting(obj) {
            return;
        }
        let generation = object::generation(obj);
        let observed = obj
            .pointer("/status/observedGeneration")
            .and_then(Value::as_i64);
        let ready = is_ready(plural, obj);
        let readiness = self.app.simulation().workloads;
        let r = ObjectRef::of("apps", plural, obj);
        if observed == Some(generation) && (ready || readiness == Readiness::Never) {
            return;
        }
        let write = move |app: &App, ready: bool, r: &ObjectRef| {
            app.store
                .controller_update(&r.group, &r.plural, &r.namespace, &r.name, MANAGER, |o| {
                    if object::generation(o) != generation {
                        return false;
                    }
                    let status = workload_status(&r.plural, o, ready);
                    if let Some(m) = o.as_object_mut() {
                        m.insert("status".into(), status);
                    }
                    true
                });
        };
        match readiness {
            Readiness::After(d) if d.is_zero() => write(&self.app, true, &r),
            Readiness::After(d) => {
                if observed != Some(generation) {
                    write(&self.app, false, &r);
                }
                let rr = r.clone();
                self.schedule((r, generation.to_string()), d, move |app| {
                    write(app, true, &rr)
                });
            }
            Readiness::Never => write(&self.app, false, &r),
        }
    }

    fn pod(self: &Arc<Self>, obj: &Value) {
        let phase = self.app.simulation().pod_phase;
        let delay = self.app.simulation().pod_delay;
        let current = object::str_at(obj, "/status/phase");
        if object::is_deleting(obj) || phase == "Pending" || current == phase {
            return;
        }
        let r = ObjectRef::of("", "pods", obj);
        let uid = object::uid(obj).to_string();
        self.schedule((r.clone(), uid.clone()), delay, move |app| {
            app.store
                .controller_update("", "pods", &r.namespace, &r.name, "kubelet", |o| {
                    if object::uid(o) != uid {
                        return false;
                    }
                    let status = pod_status(o, &phase);
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
        if sim.jobs == JobOutcome::Never {
            return;
        }
        let outcome = sim.jobs;
        self.schedule((r.clone(), uid.clone()), sim.job_delay, move |app| {
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

fn is_ready(plural: &str, obj: &Value) -> bool {
    match plural {
        "daemonsets" => {
            int(obj, "/status/numberReady", 0) >= int(obj, "/status/desiredNumberScheduled", 1)
        }
        _ => {
            let want = int(obj, "/spec/replicas", 1);
            int(obj, "/status/readyReplicas", 0) >= want
                && int(obj, "/status/updatedReplicas", 0) >= want
                || (want == 0 && obj.pointer("/status/observedGeneration").is_some())
        }
    }
}

fn condition(type_: &str, status: bool, reason: &str, message: &str) -> Value {
    let now = object::now();
    json!({"type": type_, "status": if status { "True" } else { "False" }, "reason": reason,
           "message": message, "lastUpdateTime": now, "lastTransitionTime": now})
}

fn workload_status(plural: &str, obj: &Value, ready: bool) -> Value {
    let generation = object::generation(obj);
    let n = int(obj, "/spec/replicas", 1);
    let r = if ready { n } else { 0 };
    let name = object::name(obj);
    match plural {
        "deployments" => json!({
            "observedGeneration": generation,
            "replicas": n,
            "updatedReplicas": n,
            "readyReplicas": r,
            "availableReplicas": r,
            "unavailableReplicas": n - r,
            "conditions": if ready {
                vec![
                    condition("Available", true, "MinimumReplicasAvailable", "Deployment has minimum availability."),
                    condition("Progressing", true, "NewReplicaSetAvailable", &format!("ReplicaSet \"{name}\" has successfully progressed.")),
                ]
            } else {
                vec![
                    condition("Available", false, "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
                    condition("Progressing", true, "ReplicaSetUpdated", &format!("ReplicaSet \"{name}\" is progressing.")),
                ]
            },
        }),
        "statefulsets" => json!({
            "observedGeneration": generation,
            "replicas": n,
            "readyReplicas": r,
            "currentReplicas": r,
            "updatedReplicas": n,
            "availableReplicas": r,
            "currentRevision": format!("{name}-{generation}"),
            "updateRevision": format!("{name}-{generation}"),
            "collisionCount": 0,
        }),
        "daemonsets" => json!({
            "observedGeneration": generation,
            "desiredNumberScheduled": 1,
            "currentNumberScheduled": 1,
            "updatedNumberScheduled": 1,
            "numberReady": i64::from(ready),
            "numberAvailable": i64::from(ready),
            "numberUnavailable": i64::from(!ready),
            "numberMisscheduled": 0,
        }),
        _ => json!({
            "observedGeneration": generation,
            "replicas": n,
            "fullyLabeledReplicas": n,
            "readyReplicas": r,
            "availableReplicas": r,
        }),
    }
}

fn pod_status(obj: &Value, phase: &str) -> Value {
    let running = phase == "Running";
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
                           "imageID": "", "ready": running, "started": running, "restartCount": 0, "state": state})
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
