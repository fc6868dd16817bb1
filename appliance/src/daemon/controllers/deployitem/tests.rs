//! The dispatcher against a real store: transactions, export Secrets, finalizers, deletion and
//! optimistic concurrency.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use landscaper_deployers::{
    BoxFuture, DeleteResult, DeployRequest, Deployer, DeployerError, ReconcileResult,
};
use landscaper_store::clock::format_time;
use landscaper_store::model::constants::{
    DELETE_WITHOUT_UNINSTALL_ANNOTATION, ERR_CONFIGURATION_PROBLEM, ERR_TIMEOUT,
    LANDSCAPER_FINALIZER, MOCK_DEPLOYER_TYPE, OPERATION_ANNOTATION, OPERATION_TEST_RECONCILE,
};
use landscaper_store::model::{DeployItem, Phase, Secret, Target, from_value};
use landscaper_store::{
    Clock, Kind, ManualClock, ObjectKey, Store, StoreError, StoreOptions, Transaction,
    TransactionError,
};
use serde_json::{Value, json};

use super::*;
use crate::daemon::controllers::ControllerConfig;

struct Env {
    _dir: tempfile::TempDir,
    store: Store,
    clock: Arc<ManualClock>,
    reconciler: DeployItemReconciler,
}

fn start() -> Timestamp {
    "2024-05-01T12:00:00Z".parse().unwrap()
}

/// An environment whose built-in deployers are the mock, or those `deployers` makes.
fn env_with(deployers: impl FnOnce(&Store) -> Vec<Arc<dyn Deployer>>) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(start()));
    let store = Store::open(
        &dir.path().join("store.redb"),
        StoreOptions {
            durable: false,
            clock: clock.clone(),
            ..Default::default()
        },
    )
    .unwrap();
    let config = ControllerConfig {
        pickup_timeout: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    let mut context = ControllerContext::new(store.clone(), config).with_clock(clock.clone());
    let deployers = deployers(&store);
    if !deployers.is_empty() {
        context.deployers = Arc::new(deployers.into_iter().collect());
    }
    Env {
        _dir: dir,
        store,
        clock,
        reconciler: DeployItemReconciler::new(context),
    }
}

fn env() -> Env {
    env_with(|_| Vec::new())
}

fn now(env: &Env) -> String {
    format_time(env.clock.now())
}

fn di_key(name: &str) -> ObjectKey {
    ObjectKey::new(Kind::DeployItem, "ns", name)
}

fn secret_key(name: &str) -> ObjectKey {
    ObjectKey::new(Kind::Secret, "ns", name)
}

impl Env {
    async fn create(&self, object: Value) -> Value {
        self.store
            .commit(Transaction::new().create(object))
            .await
            .unwrap()
            .objects[0]
            .clone()
            .unwrap()
    }

    fn get(&self, key: &ObjectKey) -> Option<Value> {
        self.store.get(key).unwrap()
    }

    fn item(&self, name: &str) -> DeployItem {
        from_value(&self.get(&di_key(name)).expect("the item exists")).unwrap()
    }

    /// What the Execution controller does to start a job.
    async fn trigger(&self, name: &str, job: &str) {
        let mut raw = self.get(&di_key(name)).unwrap();
        raw["status"]["jobID"] = json!(job);
        raw["status"]["jobIDGenerationTime"] = json!(now(self));
        raw["status"]["transitionTimes"] = json!({"triggerTime": now(self)});
        self.store
            .commit(Transaction::new().update(raw))
            .await
            .unwrap();
    }

    async fn delete(&self, name: &str) {
        self.store
            .commit(Transaction::new().delete(di_key(name), None))
            .await
            .unwrap();
    }

    async fn reconcile(&self, name: &str) -> Result<Outcome, ReconcileError> {
        self.reconciler.reconcile(&di_key(name)).await
    }

    fn advance(&self, secs: i64) {
        self.clock.advance(SignedDuration::from_secs(secs));
    }
}

fn deploy_item(name: &str, deployer_type: &str, config: Value) -> Value {
    json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "DeployItem",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"type": deployer_type, "config": config},
    })
}

fn mock_config(extra: Value) -> Value {
    let mut config = json!({"apiVersion": "mock.deployer.landscaper.gardener.cloud/v1alpha1", "kind": "ProviderConfiguration"});
    config
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    config
}

fn phase(item: &DeployItem) -> Option<Phase> {
    item.status.as_ref().and_then(|s| s.phase.clone())
}

fn finished(item: &DeployItem) -> bool {
    contract::is_job_finished(item.status.as_ref().unwrap())
}

fn reason(item: &DeployItem) -> String {
    item.status
        .as_ref()
        .and_then(|s| s.last_error.as_ref())
        .map(|e| e.reason.clone())
        .unwrap_or_default()
}

fn codes(item: &DeployItem) -> Vec<String> {
    item.status
        .as_ref()
        .and_then(|s| s.last_error.as_ref())
        .and_then(|e| e.codes.clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_mock_item_succeeds_with_its_export_in_one_step() {
    let env = env();
    let created = env.create(deploy_item(
        "di",
        MOCK_DEPLOYER_TYPE,
        mock_config(json!({"export": {"host": "db", "port": 5432}, "providerStatus": {"kind": "ProviderStatus"}})),
    )).await;
    // Without a job nothing happens.
    assert_eq!(env.reconcile("di").await.unwrap(), Outcome::Done);
    assert_eq!(env.get(&di_key("di")).unwrap(), created);

    env.trigger("di", "job-1").await;
    let before = env.store.revision();
    assert_eq!(env.reconcile("di").await.unwrap(), Outcome::Done);
    assert_eq!(env.store.revision(), before + 1, "one transaction");

    let item = env.item("di");
    let status = item.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded));
    assert_eq!(status.job_id_finished.as_deref(), Some("job-1"));
    assert_eq!(status.observed_generation, 1);
    assert_eq!(status.last_reconcile_time, Some(now(&env)));
    assert_eq!(
        status.provider_status,
        Some(json!({"kind": "ProviderStatus"}))
    );
    let deployer = status.deployer.clone().unwrap();
    assert_eq!(deployer.name, "mock.deployer.landscaper.gardener.cloud");
    assert!(item.metadata.has_finalizer(LANDSCAPER_FINALIZER));
    let times = status.transition_times.clone().unwrap();
    assert_eq!(times.init_time, Some(now(&env)));
    assert_eq!(times.finished_time, Some(now(&env)));

    let reference = status.export_reference.clone().unwrap();
    assert_eq!(
        (reference.namespace.as_str(), reference.name.as_str()),
        ("ns", "di-export")
    );
    let secret: Secret = from_value(&env.get(&secret_key("di-export")).unwrap()).unwrap();
    let export: Value = serde_json::from_slice(&secret.decoded_data()["config"]).unwrap();
    assert_eq!(export, json!({"host": "db", "port": 5432}));
    assert_eq!(secret.r#type.as_deref(), Some("Opaque"));
    let owner = &secret.metadata.owner_references.clone().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("DeployItem", item.metadata.uid.as_deref().unwrap())
    );

    // Finished: a further look changes nothing.
    let revision = env.store.revision();
    assert_eq!(env.reconcile("di").await.unwrap(), Outcome::Done);
    assert_eq!(env.store.revision(), revision);

    // A second job rewrites the same Secret.
    env.advance(10);
    env.trigger("di", "job-2").await;
    env.reconcile("di").await.unwrap();
    let item = env.item("di");
    assert_eq!(
        item.status.as_ref().unwrap().job_id_finished.as_deref(),
        Some("job-2")
    );
    assert_eq!(
        item.status.as_ref().unwrap().export_reference,
        Some(reference)
    );
}

#[tokio::test]
async fn a_progressing_mock_item_times_out() {
    let env = env();
    let mut di = deploy_item(
        "di",
        MOCK_DEPLOYER_TYPE,
        mock_config(json!({"phase": "Progressing"})),
    );
    di["spec"]["timeout"] = json!("30s");
    env.create(di).await;
    env.trigger("di", "job-1").await;
    assert_eq!(
        env.reconcile("di").await.unwrap(),
        Outcome::RequeueAfter(Duration::from_secs(5))
    );
    let item = env.item("di");
    assert_eq!(phase(&item), Some(Phase::Progressing));
    assert!(!finished(&item));

    // Unchanged reconciles write nothing.
    env.advance(5);
    let revision = env.store.revision();
    env.reconcile("di").await.unwrap();
    assert_eq!(env.store.revision(), revision);

    // Close to the deadline the item is looked at exactly when time is up.
    env.advance(23);
    assert_eq!(
        env.reconcile("di").await.unwrap(),
        Outcome::RequeueAfter(Duration::from_secs(2))
    );
    env.advance(2);
    assert_eq!(env.reconcile("di").await.unwrap(), Outcome::Done);
    let item = env.item("di");
    assert_eq!(phase(&item), Some(Phase::Failed));
    assert!(finished(&item));
    assert_eq!(reason(&item), "ProgressingTimeout");
    assert_eq!(codes(&item), vec![ERR_TIMEOUT]);
}

#[tokio::test]
async fn an_unknown_type_fails_after_the_pickup_timeout() {
    let env = env();
    env.create(deploy_item(
        "di",
        "landscaper.gardener.cloud/dummy",
        json!({"a": 1}),
    ))
    .await;
    env.trigger("di", "job-1").await;
    assert_eq!(
        env.reconcile("di").await.unwrap(),
        Outcome::RequeueAfter(Duration::from_secs(65))
    );
    assert_eq!(phase(&env.item("di")), None, "nothing picked it up");
    env.advance(60);
    assert_eq!(env.reconcile("di").await.unwrap(), Outcome::Done);
    let item = env.item("di");
    assert_eq!(phase(&item), Some(Phase::Failed));
    assert!(finished(&item));
    assert_eq!(reason(&item), "PickupTimeout");
    assert_eq!(codes(&item), vec![ERR_TIMEOUT]);
    let message = item.status.unwrap().last_error.unwrap().message;
    assert_eq!(
        message,
        "no deployer has reconciled this deployitem within 60 seconds"
    );
    assert!(!env.item("di").metadata.has_finalizer(LANDSCAPER_FINALIZER));
}

fn cluster_target(name: &str, user: Value) -> Value {
    let kubeconfig =
        json!({"apiVersion": "v1", "kind": "Config", "users": [{"name": "u", "user": user}]});
    json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Target",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster", "config": {"kubeconfig": kubeconfig.to_string()}},
    })
}

fn with_target(mut di: Value, target: &str) -> Value {
    di["spec"]["target"] = json!({"name": target, "namespace": "ns"});
    di
}

#[tokio::test]
async fn target_problems_fail_the_item() {
    let env = env();
    env.create(cluster_target(
        "bad",
        json!({"tokenFile": "/var/run/secrets/token"}),
    ))
    .await;
    env.create(with_target(
        deploy_item("bad", MOCK_DEPLOYER_TYPE, mock_config(json!({}))),
        "bad",
    ))
    .await;
    env.create(with_target(
        deploy_item("missing", MOCK_DEPLOYER_TYPE, mock_config(json!({}))),
        "nope",
    ))
    .await;
    for name in ["bad", "missing"] {
        env.trigger(name, "job-1").await;
        assert_eq!(env.reconcile(name).await.unwrap(), Outcome::Done);
    }
    let bad = env.item("bad");
    assert_eq!(phase(&bad), Some(Phase::Failed));
    assert!(finished(&bad));
    assert_eq!(codes(&bad), vec![ERR_CONFIGURATION_PROBLEM]);
    let message = bad.status.unwrap().last_error.unwrap().message;
    assert!(
        message.contains("token files are not supported in a target kubeconfig"),
        "{message}"
    );

    let missing = env.item("missing");
    assert_eq!(phase(&missing), Some(Phase::Failed));
    assert_eq!(reason(&missing), "NoTargetFound");
    assert!(!missing.metadata.has_finalizer(LANDSCAPER_FINALIZER));
}

/// Records what it was asked; answers `Succeeded` and deletes after `pending` delete calls.
#[derive(Default)]
struct Recorder {
    targets: Mutex<Vec<Option<Target>>>,
    deletes: Mutex<u32>,
    pending: u32,
}

impl Deployer for Recorder {
    fn item_type(&self) -> &str {
        "example.com/recorder"
    }

    fn reconcile<'a>(
        &'a self,
        request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<ReconcileResult, DeployerError>> {
        self.targets.lock().unwrap().push(request.target.cloned());
        Box::pin(async {
            Ok(ReconcileResult {
                phase: Some(Phase::Succeeded),
                ..Default::default()
            })
        })
    }

    fn delete<'a>(
        &'a self,
        _request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<DeleteResult, DeployerError>> {
        let mut calls = self.deletes.lock().unwrap();
        *calls += 1;
        let done = *calls > self.pending;
        Box::pin(async move {
            Ok(if done {
                DeleteResult::Deleted
            } else {
                DeleteResult::Pending
            })
        })
    }
}

#[tokio::test]
async fn secret_ref_targets_reach_the_deployer_resolved() {
    let recorder = Arc::new(Recorder::default());
    let env = env_with(|_| vec![recorder.clone()]);
    env.create(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "kc", "namespace": "ns"},
        "data": {"target": contract_tests_base64("kubeconfig: 'users: [{name: u, user: {token: t}}]'")},
    })).await;
    env.create(json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster", "secretRef": {"name": "kc", "key": "target"}},
    })).await;
    env.create(with_target(
        deploy_item("di", "example.com/recorder", json!({"x": 1})),
        "t",
    ))
    .await;
    env.trigger("di", "job-1").await;
    env.reconcile("di").await.unwrap();
    assert_eq!(phase(&env.item("di")), Some(Phase::Succeeded));
    let seen = recorder.targets.lock().unwrap()[0].clone().unwrap();
    assert_eq!(seen.spec.secret_ref, None);
    assert_eq!(
        seen.spec.config,
        Some(json!({"kubeconfig": "users: [{name: u, user: {token: t}}]"}))
    );

    // Without its Secret the target cannot be resolved: the item waits, then times out.
    env.store
        .commit(Transaction::new().delete(secret_key("kc"), None))
        .await
        .unwrap();
    env.advance(1);
    env.trigger("di", "job-2").await;
    assert_eq!(
        env.reconcile("di").await.unwrap(),
        Outcome::RequeueAfter(Duration::from_secs(5))
    );
    env.advance(61);
    env.reconcile("di").await.unwrap();
    assert_eq!(reason(&env.item("di")), "PickupTimeout");
}

fn contract_tests_base64(text: &str) -> String {
    export::base64(text.as_bytes())
}

#[tokio::test]
async fn deletion_removes_the_item_and_its_export() {
    let env = env();
    env.create(deploy_item(
        "di",
        MOCK_DEPLOYER_TYPE,
        mock_config(json!({"export": {"a": 1}})),
    ))
    .await;
    env.trigger("di", "job-1").await;
    env.reconcile("di").await.unwrap();
    assert!(env.get(&secret_key("di-export")).is_some());

    env.delete("di").await;
    // Deleting but finished: the item waits for the Execution to start a delete job.
    assert_eq!(env.reconcile("di").await.unwrap(), Outcome::Done);
    assert!(env.get(&di_key("di")).is_some());

    env.trigger("di", "job-2").await;
    assert_eq!(env.reconcile("di").await.unwrap(), Outcome::Done);
    assert!(env.get(&di_key("di")).is_none(), "the finalizer is removed");
    assert!(
        env.get(&secret_key("di-export")).is_none(),
        "the export goes with the item"
    );
}

#[tokio::test]
async fn a_pending_delete_is_asked_again() {
    let recorder = Arc::new(Recorder {
        pending: 1,
        ..Default::default()
    });
    let env = env_with(|_| vec![recorder.clone()]);
    env.create(deploy_item("di", "example.com/recorder", json!({"x": 1})))
        .await;
    env.trigger("di", "job-1").await;
    env.reconcile("di").await.unwrap();
    env.delete("di").await;
    env.trigger("di", "job-2").await;
    assert_eq!(
        env.reconcile("di").await.unwrap(),
        Outcome::RequeueAfter(Duration::from_secs(5))
    );
    assert_eq!(phase(&env.item("di")), Some(Phase::Deleting));
    assert_eq!(env.reconcile("di").await.unwrap(), Outcome::Done);
    assert!(env.get(&di_key("di")).is_none());
    assert_eq!(*recorder.deletes.lock().unwrap(), 2);
}

#[tokio::test]
async fn delete_without_uninstall_does_not_call_the_deployer() {
    let recorder = Arc::new(Recorder::default());
    let env = env_with(|_| vec![recorder.clone()]);
    let mut di = deploy_item("di", "example.com/recorder", json!({"x": 1}));
    di["metadata"]["annotations"] = json!({DELETE_WITHOUT_UNINSTALL_ANNOTATION: "true"});
    env.create(di).await;
    env.trigger("di", "job-1").await;
    env.reconcile("di").await.unwrap();
    env.delete("di").await;
    env.trigger("di", "job-2").await;
    assert_eq!(env.reconcile("di").await.unwrap(), Outcome::Done);
    assert!(env.get(&di_key("di")).is_none());
    assert_eq!(*recorder.deletes.lock().unwrap(), 0);
}

#[tokio::test]
async fn test_reconcile_starts_a_job_and_is_consumed() {
    let env = env();
    let mut di = deploy_item("di", MOCK_DEPLOYER_TYPE, mock_config(json!({})));
    di["metadata"]["annotations"] = json!({OPERATION_ANNOTATION: OPERATION_TEST_RECONCILE});
    env.create(di).await;
    assert_eq!(env.reconcile("di").await.unwrap(), Outcome::Done);
    let item = env.item("di");
    assert_eq!(phase(&item), Some(Phase::Succeeded));
    assert!(finished(&item));
    assert!(item.status.unwrap().job_id.is_some());
    assert_eq!(item.metadata.annotation(OPERATION_ANNOTATION), None);
}

/// Interrupts the item (as the Execution controller does) while reconciling it.
struct Interrupter {
    store: Store,
}

impl Deployer for Interrupter {
    fn item_type(&self) -> &str {
        "example.com/interrupted"
    }

    fn reconcile<'a>(
        &'a self,
        request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<ReconcileResult, DeployerError>> {
        let key = ObjectKey::new(Kind::DeployItem, "ns", request.item.metadata.name());
        Box::pin(async move {
            let mut raw = self.store.get(&key).unwrap().unwrap();
            let job = raw["status"]["jobID"].clone();
            raw["status"]["jobIDFinished"] = job;
            raw["status"]["phase"] = json!("Failed");
            raw["status"]["lastError"] = json!({"operation": "InterruptOperation", "reason": "InterruptOperation", "message": "operation was interrupted"});
            self.store
                .commit(Transaction::new().update(raw))
                .await
                .unwrap();
            Ok(ReconcileResult {
                phase: Some(Phase::Succeeded),
                ..Default::default()
            })
        })
    }

    fn delete<'a>(
        &'a self,
        _request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<DeleteResult, DeployerError>> {
        Box::pin(async { Ok(DeleteResult::Deleted) })
    }
}

#[tokio::test]
async fn a_concurrent_interrupt_wins_over_the_deployer_result() {
    let env = env_with(|store| {
        vec![Arc::new(Interrupter {
            store: store.clone(),
        })]
    });
    env.create(deploy_item(
        "di",
        "example.com/interrupted",
        json!({"x": 1}),
    ))
    .await;
    env.trigger("di", "job-1").await;
    let err = env.reconcile("di").await.unwrap_err();
    assert!(
        matches!(
            err,
            ReconcileError::Store(StoreError::Transaction(TransactionError::Conflict { .. }))
        ),
        "{err}"
    );
    // The runtime retries: the item is finished by the interrupt and stays so.
    assert_eq!(env.reconcile("di").await.unwrap(), Outcome::Done);
    let item = env.item("di");
    assert_eq!(phase(&item), Some(Phase::Failed));
    assert_eq!(reason(&item), "InterruptOperation");
    assert!(finished(&item));
}

#[test]
fn built_in_deployers_are_named_as_in_landscaper() {
    let env = env();
    assert!(
        env.reconciler
            .context
            .deployers
            .contains_key(MOCK_DEPLOYER_TYPE)
    );
    let info = env.reconciler.deployer_information(MOCK_DEPLOYER_TYPE);
    assert_eq!(info.name, "mock.deployer.landscaper.gardener.cloud");
    assert_eq!(
        info.identity,
        format!(
            "mock.deployer.landscaper.gardener.cloud-{}",
            start().as_second()
        )
    );
    let info = env
        .reconciler
        .deployer_information("landscaper.gardener.cloud/kubernetes-manifest");
    assert_eq!(info.name, "manifest.deployer.landscaper.gardener.cloud");
}

/// Records the Context and deadline it is called with, and waits in `reconcile` until
/// `release` for items named `slow*` (after reaching the checkpoint `deployer: apply manifests`).
#[derive(Default)]
struct Slow {
    release: tokio::sync::Notify,
    seen: Mutex<
        Vec<(
            String,
            landscaper_deployers::DeployContext,
            Option<Timestamp>,
        )>,
    >,
}

impl Deployer for Slow {
    fn item_type(&self) -> &str {
        "example.com/slow"
    }

    fn reconcile<'a>(
        &'a self,
        request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<ReconcileResult, DeployerError>> {
        let name = request.item.metadata.name().to_string();
        self.seen
            .lock()
            .unwrap()
            .push((name.clone(), request.context.clone(), request.deadline));
        Box::pin(async move {
            if name.starts_with("slow") {
                request.checkpoint("deployer: apply manifests");
                self.release.notified().await;
            }
            Ok(ReconcileResult {
                phase: Some(Phase::Succeeded),
                ..Default::default()
            })
        })
    }

    fn delete<'a>(
        &'a self,
        _request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<DeleteResult, DeployerError>> {
        Box::pin(async { Ok(DeleteResult::Deleted) })
    }
}

#[tokio::test]
async fn a_call_beyond_the_deadline_ends_with_landscapers_progressing_timeout() {
    let slow = Arc::new(Slow::default());
    let env = env_with(|_| vec![slow.clone()]);
    let mut di = deploy_item("slow", "example.com/slow", json!({"x": 1}));
    di["spec"]["timeout"] = json!("400ms");
    env.create(di).await;
    env.trigger("slow", "job-1").await;
    // The worker does not wait for the call: it runs on, nothing is written meanwhile.
    let revision = env.store.revision();
    assert_eq!(env.reconcile("slow").await.unwrap(), Outcome::Done);
    assert!(env.reconciler.calls.is_running(&di_key("slow")));
    assert_eq!(env.store.revision(), revision);
    assert_eq!(env.reconcile("slow").await.unwrap(), Outcome::Done);
    assert_eq!(
        env.store.revision(),
        revision,
        "a running call is not started again"
    );
    assert_eq!(slow.seen.lock().unwrap().len(), 1);

    // The call is cut off at the deadline; the next reconcile records Landscaper's error.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(env.reconcile("slow").await.unwrap(), Outcome::Done);
    let item = env.item("slow");
    assert_eq!(phase(&item), Some(Phase::Failed));
    assert!(finished(&item));
    let error = item.status.unwrap().last_error.unwrap();
    assert_eq!(error.operation, "StandardTimeoutChecker.TimeoutExceeded");
    assert_eq!(error.reason, "ProgressingTimeout");
    assert_eq!(error.message, r#"timeout at: "deployer: apply manifests""#);
    assert_eq!(error.codes, Some(vec![ERR_TIMEOUT.to_string()]));
    assert!(!env.reconciler.calls.is_running(&di_key("slow")));
}

#[tokio::test]
async fn a_slow_item_does_not_hold_the_worker_of_another() {
    let slow = Arc::new(Slow::default());
    let env = env_with(|_| vec![slow.clone()]);
    env.create(json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Context",
        "metadata": {"name": "default", "namespace": "ns"},
        "repositoryContext": {"type": "ociRegistry", "baseUrl": "registry.example.com"},
        "registryPullSecrets": [{"name": "pull"}],
        "configurations": {"helmChartRepoCredentials": {"auths": []}},
    }))
    .await;
    for name in ["slow", "fast"] {
        let mut di = deploy_item(name, "example.com/slow", json!({"x": 1}));
        di["spec"]["timeout"] = json!("1h");
        env.create(di).await;
        env.trigger(name, "job-1").await;
    }
    // One worker, the items queued slow first.
    let reconciler = Arc::new(DeployItemReconciler::new(env.reconciler.context.clone()));
    let queues = crate::daemon::controllers::Queues::new();
    let _ = reconciler.context.queues.set(queues.clone());
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    crate::daemon::controllers::runtime::spawn_workers(
        reconciler.clone(),
        queues.deploy_items.clone(),
        &crate::daemon::controllers::runtime::WorkerOptions {
            workers: 1,
            ..Default::default()
        },
        cancel.clone(),
        &mut tasks,
    );
    queues.deploy_items.add(di_key("slow"));
    queues.deploy_items.add(di_key("fast"));

    let succeeded = |name: &str| phase(&env.item(name)) == Some(Phase::Succeeded);
    let wait_for = async |name: &str| {
        for _ in 0..200 {
            if succeeded(name) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{name} did not succeed");
    };
    wait_for("fast").await;
    assert!(!succeeded("slow"), "the slow call still runs");
    assert!(reconciler.calls.is_running(&di_key("slow")));

    // Its end requeues the item, whose reconcile records the answer.
    slow.release.notify_one();
    wait_for("slow").await;
    assert!(finished(&env.item("slow")));
    assert!(!reconciler.calls.is_running(&di_key("slow")));

    // Both calls saw the namespace's default Context and their deadline.
    let seen = slow.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    for (name, context, deadline) in seen {
        assert_eq!(context.name, "default");
        assert_eq!(
            context.repository_context,
            Some(json!({"type": "ociRegistry", "baseUrl": "registry.example.com"}))
        );
        assert_eq!(context.registry_pull_secrets[0].name, "pull");
        assert!(
            context
                .configurations
                .contains_key("helmChartRepoCredentials")
        );
        let init = env
            .item(&name)
            .status
            .unwrap()
            .transition_times
            .unwrap()
            .init_time;
        let expected = contract::parse_time(init.as_deref())
            .unwrap()
            .checked_add(SignedDuration::from_hours(1))
            .unwrap();
        assert_eq!(deadline, Some(expected), "{name}");
    }
    cancel.cancel();
    queues.close();
    while tasks.join_next().await.is_some() {}
}

#[tokio::test]
async fn a_running_call_is_aborted_when_its_item_changes() {
    let slow = Arc::new(Slow::default());
    let env = env_with(|_| vec![slow.clone()]);
    env.create(deploy_item("slow", "example.com/slow", json!({"x": 1})))
        .await;
    env.trigger("slow", "job-1").await;
    assert_eq!(env.reconcile("slow").await.unwrap(), Outcome::Done);
    assert!(env.reconciler.calls.is_running(&di_key("slow")));
    // A new job (the Execution controller) while the call runs: the stale call is dropped and
    // the item is served afresh.
    env.advance(1);
    env.trigger("slow", "job-2").await;
    assert_eq!(env.reconcile("slow").await.unwrap(), Outcome::Done);
    assert_eq!(slow.seen.lock().unwrap().len(), 2);
    assert!(env.reconciler.calls.is_running(&di_key("slow")));
    // Only the new call is waiting for the release.
    slow.release.notify_one();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(env.reconcile("slow").await.unwrap(), Outcome::Done);
    let item = env.item("slow");
    assert_eq!(phase(&item), Some(Phase::Succeeded));
    assert_eq!(
        item.status.unwrap().job_id_finished.as_deref(),
        Some("job-2")
    );
}

/// Panics in its reconcile.
struct Panicker;

impl Deployer for Panicker {
    fn item_type(&self) -> &str {
        "example.com/panics"
    }

    fn reconcile<'a>(
        &'a self,
        _request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<ReconcileResult, DeployerError>> {
        Box::pin(async { panic!("deployer bug") })
    }

    fn delete<'a>(
        &'a self,
        _request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<DeleteResult, DeployerError>> {
        Box::pin(async { Ok(DeleteResult::Deleted) })
    }
}

#[tokio::test]
async fn a_panicking_deployer_call_panics_in_the_reconcile_where_the_runtime_contains_it() {
    use futures_util::FutureExt as _;
    let env = env_with(|_| vec![Arc::new(Panicker)]);
    env.create(deploy_item("di", "example.com/panics", json!({"x": 1})))
        .await;
    env.trigger("di", "job-1").await;
    let result = std::panic::AssertUnwindSafe(env.reconcile("di"))
        .catch_unwind()
        .await;
    let payload = result.expect_err("the panic reaches the reconcile");
    assert_eq!(
        payload.downcast_ref::<&str>().copied(),
        Some("deployer bug")
    );
    assert!(!env.reconciler.calls.is_running(&di_key("di")));
}
