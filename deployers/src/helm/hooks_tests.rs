use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::BoxFuture;
use crate::kubernetes::{ClusterResult, FakeCluster, Patch, ResourceInfo};

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Hooks as the chart sorter produces them from one template file per entry.
fn hooks_of(files: &[(&str, &str)]) -> Vec<Hook> {
    let files: BTreeMap<String, String> = files
        .iter()
        .map(|(p, c)| (format!("demo/templates/{p}"), c.to_string()))
        .collect();
    let (hooks, _) = landscaper_charts::sort::sort_manifests(&files).unwrap();
    hooks_from_manifests(&hooks).unwrap()
}

fn job(name: &str, events: &str, weight: i64, policy: Option<&str>) -> String {
    let policy = policy
        .map(|p| format!("\n    helm.sh/hook-delete-policy: {p}"))
        .unwrap_or_default();
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  annotations:\n    helm.sh/hook: {events}\n    helm.sh/hook-weight: \"{weight}\"{policy}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox\n"
    )
}

#[test]
fn hooks_carry_helms_fields_and_json_shape() {
    let hooks = hooks_of(&[(
        "job.yaml",
        &job(
            "migrate",
            "pre-install, Post-Upgrade",
            -5,
            Some("hook-succeeded, hook-failed"),
        ),
    )]);
    assert_eq!(hooks.len(), 1);
    let h = &hooks[0];
    assert_eq!(
        (h.name.as_str(), h.kind.as_str(), h.path.as_str()),
        ("migrate", "Job", "demo/templates/job.yaml")
    );
    assert_eq!(h.events, ["pre-install", "post-upgrade"]);
    assert_eq!(h.weight, -5);
    assert_eq!(h.delete_policies, ["hook-succeeded", "hook-failed"]);
    let json = serde_json::to_value(h).unwrap();
    assert_eq!(json["events"], json!(["pre-install", "post-upgrade"]));
    assert_eq!(
        json["delete_policies"],
        json!(["hook-succeeded", "hook-failed"])
    );
    assert_eq!(
        json["last_run"],
        json!({"started_at": "", "completed_at": "", "phase": ""})
    );
    assert!(json.get("output_log_policies").is_none());
    assert!(
        json["manifest"]
            .as_str()
            .unwrap()
            .starts_with("apiVersion: batch/v1")
    );
    // Helm's JSON reads back (zero times as "" or null, weight omitted when 0).
    let helm: Hook = serde_json::from_value(json!({"name": "x", "kind": "Pod", "path": "c/templates/p.yaml",
        "manifest": "kind: Pod", "events": ["test"],
        "last_run": {"started_at": "2025-01-02T03:04:05.123Z", "completed_at": null, "phase": "Succeeded"},
        "delete_policies": ["before-hook-creation"]}))
    .unwrap();
    assert_eq!(helm.weight, 0);
    assert_eq!(helm.last_run.phase, HookPhase::Succeeded);
    assert_eq!(helm.last_run.completed_at, None);
    assert_eq!(
        serde_json::to_value(&helm).unwrap()["last_run"],
        json!({"started_at": "2025-01-02T03:04:05.123Z", "completed_at": "", "phase": "Succeeded"})
    );
    assert_eq!(helm.delete_policies, ["before-hook-creation"]);
    // A phase a later Helm might write reads as Unknown.
    let later: HookExecution =
        serde_json::from_value(json!({"started_at": "", "completed_at": "", "phase": "Paused"}))
            .unwrap();
    assert_eq!(later.phase, HookPhase::Unknown);
    assert!(serde_json::to_value(&helm).unwrap().get("weight").is_none());
}

#[test]
fn plan_orders_by_weight_then_name_and_skips_other_events_and_tests() {
    let hooks = hooks_of(&[
        ("a.yaml", &job("zeta", "pre-install", 0, None)),
        ("b.yaml", &job("alpha", "pre-install", 0, None)),
        ("c.yaml", &job("late", "pre-install", 10, None)),
        (
            "d.yaml",
            &job("early", "pre-install,post-install", -10, None),
        ),
        ("e.yaml", &job("upgrade-only", "pre-upgrade", -20, None)),
        (
            "f.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n",
        ),
        (
            "g.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    helm.sh/hook: pre-install\n",
        ),
    ]);
    let names = |event| -> Vec<String> {
        plan_hooks(event, &hooks)
            .iter()
            .map(|p| hooks[p.index].name.clone())
            .collect()
    };
    assert_eq!(
        names(HookEvent::PreInstall),
        ["early", "alpha", "cm", "zeta", "late"]
    );
    assert_eq!(names(HookEvent::PostInstall), ["early"]);
    assert_eq!(names(HookEvent::PreUpgrade), ["upgrade-only"]);
    assert!(names(HookEvent::Test).is_empty(), "test hooks never run");
    assert!(names(HookEvent::PreDelete).is_empty());
}

#[test]
fn plan_applies_helms_delete_policy_rules() {
    let hooks = hooks_of(&[
        ("a.yaml", &job("default", "pre-install", 0, None)),
        (
            "b.yaml",
            &job("both", "pre-install", 1, Some("hook-succeeded,hook-failed")),
        ),
        (
            "c.yaml",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: crd\n  annotations:\n    helm.sh/hook: pre-install\n    helm.sh/hook-weight: \"2\"\n    helm.sh/hook-delete-policy: hook-succeeded,before-hook-creation\n",
        ),
        (
            "d.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod\n  annotations:\n    helm.sh/hook: pre-install\n    helm.sh/hook-weight: \"3\"\n",
        ),
    ]);
    let plan = plan_hooks(HookEvent::PreInstall, &hooks);
    let by_name = |n: &str| plan.iter().find(|p| hooks[p.index].name == n).unwrap();
    let default = by_name("default");
    assert_eq!(default.policies, [HookDeletePolicy::BeforeHookCreation]);
    assert!(
        default.delete_before_create && !default.delete_on_success && !default.delete_on_failure
    );
    assert_eq!(default.wait, WaitFor::JobCompletion);
    let both = by_name("both");
    assert!(!both.delete_before_create && both.delete_on_success && both.delete_on_failure);
    let crd = by_name("crd");
    assert!(
        !crd.delete_before_create && !crd.delete_on_success,
        "CRDs are never deleted"
    );
    assert_eq!(crd.wait, WaitFor::Nothing);
    assert_eq!(by_name("pod").wait, WaitFor::PodCompletion);
}

#[test]
fn completion_reads_job_conditions_and_pod_phases() {
    let job = |t: &str, s: &str, reason: &str| json!({"status": {"conditions": [{"type": t, "status": s, "reason": reason}]}});
    assert_eq!(
        completion(WaitFor::JobCompletion, &json!({"status": {}})),
        None
    );
    assert_eq!(
        completion(WaitFor::JobCompletion, &job("Complete", "True", "")),
        Some(Ok(()))
    );
    assert_eq!(
        completion(WaitFor::JobCompletion, &job("Complete", "False", "")),
        None
    );
    assert_eq!(
        completion(
            WaitFor::JobCompletion,
            &job("Failed", "True", "BackoffLimitExceeded")
        ),
        Some(Err("BackoffLimitExceeded".into()))
    );
    let pod = |phase: &str| json!({"status": {"phase": phase}});
    assert_eq!(completion(WaitFor::PodCompletion, &pod("Running")), None);
    assert_eq!(
        completion(WaitFor::PodCompletion, &pod("Succeeded")),
        Some(Ok(()))
    );
    assert_eq!(
        completion(WaitFor::PodCompletion, &pod("Failed")),
        Some(Err("phase Failed".into()))
    );
    assert_eq!(completion(WaitFor::Nothing, &json!({})), Some(Ok(())));
}

/// A cluster whose Jobs and Pods finish right after creation: failed when annotated
/// `test/fail: "true"`, never when `test/hang: "true"`, else successfully.
struct Finishing(Arc<FakeCluster>);

impl ClusterClient for Finishing {
    fn resolve<'a>(&'a self, v: &'a str, k: &'a str) -> BoxFuture<'a, ClusterResult<ResourceInfo>> {
        self.0.resolve(v, k)
    }
    fn invalidate_discovery(&self) {}
    fn get<'a>(&'a self, o: &'a ObjectRef) -> BoxFuture<'a, ClusterResult<Option<Value>>> {
        self.0.get(o)
    }
    fn create<'a>(&'a self, object: &'a Value) -> BoxFuture<'a, ClusterResult<Value>> {
        Box::pin(async move {
            let created = self.0.create(object).await?;
            let annotation = |k: &str| object.pointer(&format!("/metadata/annotations/test~1{k}"));
            if annotation("hang").is_some() {
                return Ok(created);
            }
            let fail = annotation("fail").is_some();
            let status = match (object["kind"].as_str(), fail) {
                (Some("Job"), false) => {
                    json!({"conditions": [{"type": "Complete", "status": "True"}]})
                }
                (Some("Job"), true) => {
                    json!({"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]})
                }
                (Some("Pod"), false) => json!({"phase": "Succeeded"}),
                (Some("Pod"), true) => json!({"phase": "Failed"}),
                _ => return Ok(created),
            };
            self.0.set_status(&ObjectRef::of(&created), status);
            Ok(created)
        })
    }
    fn update<'a>(&'a self, o: &'a Value) -> BoxFuture<'a, ClusterResult<Value>> {
        self.0.update(o)
    }
    fn patch<'a>(&'a self, o: &'a ObjectRef, p: &'a Patch) -> BoxFuture<'a, ClusterResult<Value>> {
        self.0.patch(o, p)
    }
    fn delete<'a>(&'a self, o: &'a ObjectRef) -> BoxFuture<'a, ClusterResult<Deletion>> {
        self.0.delete(o)
    }
    fn list<'a>(
        &'a self,
        v: &'a str,
        k: &'a str,
        ns: Option<&'a str>,
        l: &'a BTreeMap<String, String>,
    ) -> BoxFuture<'a, ClusterResult<Vec<Value>>> {
        self.0.list(v, k, ns, l)
    }
}

fn options() -> HookOptions {
    HookOptions {
        namespace: "rel-ns".into(),
        timeout: Duration::from_millis(300),
        poll_interval: Duration::from_millis(5),
    }
}

fn with_annotation(doc: &str, key: &str) -> String {
    doc.replace(
        "  annotations:\n",
        &format!("  annotations:\n    test/{key}: \"true\"\n"),
    )
}

fn job_ref(name: &str) -> ObjectRef {
    ObjectRef::new("batch/v1", "Job", "rel-ns", name)
}

#[test]
fn runs_hooks_in_weight_order_and_honours_delete_policies() {
    let fake = Arc::new(FakeCluster::new());
    let cluster = Finishing(fake.clone());
    // A leftover of an earlier run: before-hook-creation (the default) replaces it.
    fake.insert(json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "second", "namespace": "rel-ns", "labels": {"old": "yes"}}}));
    let mut hooks = hooks_of(&[
        (
            "a.yaml",
            &job("third", "pre-install", 5, Some("hook-failed")),
        ),
        ("b.yaml", &job("second", "pre-install", 0, None)),
        (
            "c.yaml",
            &job("first", "pre-install", -1, Some("hook-succeeded")),
        ),
        ("d.yaml", &job("post", "post-install", 0, None)),
    ]);
    block_on(run_hooks(
        &cluster,
        HookEvent::PreInstall,
        &mut hooks,
        &options(),
    ))
    .unwrap();
    let creates: Vec<String> = fake
        .log()
        .into_iter()
        .filter(|l| l.starts_with("create") || l.starts_with("delete"))
        .collect();
    assert_eq!(
        creates,
        [
            "create Job rel-ns/first",
            "delete Job rel-ns/second",
            "create Job rel-ns/second",
            "create Job rel-ns/third",
            "delete Job rel-ns/first",
        ]
    );
    assert!(
        fake.object(&job_ref("first")).is_none(),
        "hook-succeeded deletes"
    );
    assert!(
        fake.object(&job_ref("third")).is_some(),
        "hook-failed keeps on success"
    );
    let second = fake.object(&job_ref("second")).unwrap();
    assert!(second["metadata"]["labels"]["old"].is_null(), "recreated");
    assert!(
        fake.object(&job_ref("post")).is_none(),
        "other events do not run"
    );
    for h in hooks.iter().filter(|h| h.name != "post") {
        assert_eq!(h.last_run.phase, HookPhase::Succeeded, "{}", h.name);
        assert!(h.last_run.started_at.is_some() && h.last_run.completed_at.is_some());
    }
    let by_name = |n: &str| hooks.iter().find(|h| h.name == n).unwrap();
    assert_eq!(by_name("post").last_run, HookExecution::default());
    assert!(
        by_name("post").delete_policies.is_empty(),
        "not run: stored as rendered"
    );
    assert_eq!(
        by_name("second").delete_policies,
        ["before-hook-creation"],
        "Helm stores the default policy of a hook it ran"
    );
}

#[test]
fn a_failing_hook_job_names_hook_job_and_reason_and_cleans_up_by_policy() {
    let fake = Arc::new(FakeCluster::new());
    let cluster = Finishing(fake.clone());
    let mut hooks = hooks_of(&[
        (
            "ok.yaml",
            &job("ok", "pre-upgrade", 0, Some("hook-succeeded")),
        ),
        (
            "kept.yaml",
            &job("kept", "pre-upgrade", 1, Some("hook-failed")),
        ),
        (
            "bad.yaml",
            &with_annotation(&job("bad", "pre-upgrade", 2, Some("hook-failed")), "fail"),
        ),
        ("never.yaml", &job("never", "pre-upgrade", 3, None)),
    ]);
    let err = block_on(run_hooks(
        &cluster,
        HookEvent::PreUpgrade,
        &mut hooks,
        &options(),
    ))
    .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("pre-upgrade")
            && message.contains("demo/templates/bad.yaml")
            && message.contains("Job rel-ns/bad")
            && message.contains("BackoffLimitExceeded"),
        "{message}"
    );
    assert!(matches!(err, HookError::Failed { .. }));
    assert!(
        fake.object(&job_ref("bad")).is_none(),
        "hook-failed deletes the failed hook"
    );
    assert!(
        fake.object(&job_ref("ok")).is_none(),
        "earlier hook-succeeded hooks are deleted"
    );
    assert!(fake.object(&job_ref("kept")).is_some());
    assert!(
        fake.object(&job_ref("never")).is_none(),
        "later hooks do not run"
    );
    let phase = |n: &str| hooks.iter().find(|h| h.name == n).unwrap().last_run.phase;
    assert_eq!(phase("ok"), HookPhase::Succeeded);
    assert_eq!(phase("bad"), HookPhase::Failed);
    assert_eq!(phase("never"), HookPhase::None);
}

#[test]
fn hook_pods_and_timeouts() {
    let fake = Arc::new(FakeCluster::new());
    let cluster = Finishing(fake.clone());
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    helm.sh/hook: post-delete\nspec:\n  containers:\n  - name: c\n    image: busybox\n";
    let mut hooks = hooks_of(&[("p.yaml", pod)]);
    block_on(run_hooks(
        &cluster,
        HookEvent::PostDelete,
        &mut hooks,
        &options(),
    ))
    .unwrap();
    assert_eq!(hooks[0].last_run.phase, HookPhase::Succeeded);
    let mut failing = hooks_of(&[("p.yaml", &with_annotation(pod, "fail"))]);
    let err = block_on(run_hooks(
        &cluster,
        HookEvent::PostDelete,
        &mut failing,
        &options(),
    ))
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("Pod rel-ns/p failed: phase Failed"),
        "{err}"
    );

    let mut hanging = hooks_of(&[(
        "h.yaml",
        &with_annotation(&job("slow", "post-rollback", 0, None), "hang"),
    )]);
    let err = block_on(run_hooks(
        &cluster,
        HookEvent::PostRollback,
        &mut hanging,
        &options(),
    ))
    .unwrap_err();
    assert!(matches!(err, HookError::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("Job rel-ns/slow"), "{err}");
    assert_eq!(hanging[0].last_run.phase, HookPhase::Failed);
}

#[test]
fn unbuildable_and_uncreatable_hooks_fail_clearly() {
    let fake = Arc::new(FakeCluster::new());
    let cluster = Finishing(fake.clone());
    let mut unknown_kind = hooks_of(&[(
        "x.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  annotations:\n    helm.sh/hook: pre-install\n",
    )]);
    let err = block_on(run_hooks(
        &cluster,
        HookEvent::PreInstall,
        &mut unknown_kind,
        &options(),
    ))
    .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "unable to build kubernetes object for pre-install hook demo/templates/x.yaml"
        ),
        "{err}"
    );
    fake.set_unreachable(true);
    let mut hooks = hooks_of(&[(
        "j.yaml",
        &job("j", "pre-install", 0, Some("hook-succeeded")),
    )]);
    let err = block_on(run_hooks(
        &cluster,
        HookEvent::PreInstall,
        &mut hooks,
        &options(),
    ))
    .unwrap_err();
    assert!(err.to_string().contains("unreachable"), "{err}");
}

#[test]
fn before_hook_creation_waits_until_the_old_object_is_gone() {
    let fake = Arc::new(FakeCluster::new());
    let cluster = Finishing(fake.clone());
    // A leftover that a finalizer keeps: deleting it does not finish within the timeout.
    fake.insert(json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "stuck", "namespace": "rel-ns", "finalizers": ["example.com/keep"]}}));
    let mut hooks = hooks_of(&[("s.yaml", &job("stuck", "pre-delete", 0, None))]);
    let err = block_on(run_hooks(
        &cluster,
        HookEvent::PreDelete,
        &mut hooks,
        &options(),
    ))
    .unwrap_err();
    assert!(matches!(err, HookError::DeleteTimeout { .. }), "{err}");
    assert!(
        err.to_string().contains("Job rel-ns/stuck to be deleted"),
        "{err}"
    );
    assert_eq!(hooks[0].last_run.phase, HookPhase::None, "never started");
    // Once the finalizer is released the hook runs.
    fake.remove(&job_ref("stuck"));
    block_on(run_hooks(
        &cluster,
        HookEvent::PreDelete,
        &mut hooks,
        &options(),
    ))
    .unwrap();
    assert_eq!(hooks[0].last_run.phase, HookPhase::Succeeded);
}
