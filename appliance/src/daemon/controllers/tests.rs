//! The controllers running together on a real store: successors woken by their predecessors,
//! templates rendered off the async workers, objects the installation cannot own.

use std::time::{Duration, Instant};

use landscaper_store::{Kind, LabelSelector, ObjectKey, Store, StoreOptions, Transaction};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{ControllerConfig, ControllerContext};

fn open_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        durable: false,
        ..StoreOptions::default()
    };
    let store = Store::open(&dir.path().join("store.redb"), options).unwrap();
    (dir, store)
}

/// A blueprint with one mock deploy item whose export `out` is `{"step": <n>}`, importing
/// `cfg` when `imports`.
fn chain_blueprint(n: usize, imports: bool) -> String {
    let imports = if imports {
        "imports:\n- name: cfg\n  schema: {type: object}\n"
    } else {
        ""
    };
    format!(
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
{imports}exports:
- name: out
  schema: {{type: object}}
deployExecutions:
- name: default
  type: GoTemplate
  template: |
    deployItems:
    - name: item
      type: landscaper.gardener.cloud/mock
      config:
        apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
        kind: ProviderConfiguration
exportExecutions:
- name: out
  type: GoTemplate
  template: |
    exports:
      out: {{"step": {n}}}
"#
    )
}

/// Root installation `chain-<n>` exporting DataObject `link-<n>` and (for n > 0) importing
/// `link-<n-1>`.
fn chain_installation(n: usize) -> Value {
    let mut spec = json!({
        "blueprint": {"inline": {"filesystem": {"blueprint.yaml": chain_blueprint(n, n > 0)}}},
        "exports": {"data": [{"name": "out", "dataRef": format!("link-{n}")}]},
    });
    if n > 0 {
        spec["imports"] = json!({"data": [{"name": "cfg", "dataRef": format!("link-{}", n - 1)}]});
    }
    json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Installation",
        "metadata": {
            "name": format!("chain-{n}"),
            "namespace": "ns",
            "annotations": {"landscaper.gardener.cloud/operation": "reconcile"},
        },
        "spec": spec,
    })
}

fn phase(v: &Value) -> &str {
    v.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Finished, with no further job requested.
fn settled(v: &Value) -> bool {
    super::events::finished_for_successors(v)
}

fn installations(store: &Store) -> Vec<Value> {
    store
        .list(Kind::Installation, Some("ns"), &LabelSelector::default())
        .unwrap()
        .items
}

/// Waits until every installation in `ns` has finished its job in phase Succeeded and no new
/// one is requested, or `timeout`.
async fn all_succeeded(store: &Store, count: usize, timeout: Duration) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    loop {
        let items = installations(store);
        let done = items
            .iter()
            .filter(|i| phase(i) == "Succeeded" && settled(i))
            .count();
        if done == count && items.len() == count {
            return Ok(());
        }
        if Instant::now() > deadline {
            let states: Vec<String> = items
                .iter()
                .map(|i| {
                    format!(
                        "{}: {} {}",
                        i["metadata"]["name"],
                        phase(i),
                        i.pointer("/status/lastError/message")
                            .cloned()
                            .unwrap_or_default()
                    )
                })
                .collect();
            return Err(format!("after {timeout:?}: {states:#?}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The controllers with waits and error retries so long that only events move objects on.
fn slow_timer_config() -> ControllerConfig {
    let mut config = ControllerConfig {
        wait_interval_min: Duration::from_secs(600),
        wait_interval_max: Duration::from_secs(600),
        resync_interval: Duration::from_secs(3600),
        ..ControllerConfig::default()
    };
    config.workers.error_backoff_base = Duration::from_secs(600);
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_of_root_installations_is_woken_by_each_predecessor_not_by_timers() {
    let (_dir, store) = open_store();
    let cancel = CancellationToken::new();
    let context = ControllerContext::new(store.clone(), slow_timer_config());
    let controllers = tokio::spawn(super::run(context, cancel.clone()));
    const N: usize = 5;
    // All at once, successors first: each must wait for its predecessor.
    let mut tx = Transaction::new();
    for n in (0..N).rev() {
        tx = tx.create(chain_installation(n));
    }
    store.commit(tx).await.unwrap();
    let result = all_succeeded(&store, N, Duration::from_secs(30)).await;
    cancel.cancel();
    let _ = controllers.await;
    result.unwrap();
    let last = store
        .get(&ObjectKey::new(Kind::DataObject, "ns", "link-4"))
        .unwrap()
        .expect("the last export");
    assert_eq!(last["data"], json!({"step": 4}));
}

/// A root installation `name` with one mock deploy item; its deploy execution first hashes a
/// 20 kB string `loops` times: few template steps and no output, well within the templating
/// limits, but seconds of CPU.
fn installation_with_busy_template(name: &str, loops: usize) -> Value {
    let busy = if loops > 0 {
        format!(
            "{{{{- $big := repeat 20000 \"x\" }}}}{{{{ range until {loops} }}}}{{{{ $_ := sha256sum $big }}}}{{{{ end }}}}\n    "
        )
    } else {
        String::new()
    };
    let blueprint = format!(
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
deployExecutions:
- name: default
  type: GoTemplate
  template: |
    {busy}deployItems:
    - name: item
      type: landscaper.gardener.cloud/mock
      config:
        apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
        kind: ProviderConfiguration
"#
    );
    json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Installation",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "annotations": {"landscaper.gardener.cloud/operation": "reconcile"},
        },
        "spec": {"blueprint": {"inline": {"filesystem": {"blueprint.yaml": blueprint}}}},
    })
}

async fn wait_for(
    store: &Store,
    key: &ObjectKey,
    timeout: Duration,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = store.get(key).unwrap()
            && check(&v)
        {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}: {:?}",
            store.get(key).unwrap()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One async worker thread: a render on it would stop every other reconcile.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_slow_template_does_not_stall_the_other_installations() {
    let (_dir, store) = open_store();
    let cancel = CancellationToken::new();
    let context = ControllerContext::new(store.clone(), ControllerConfig::default());
    let controllers = tokio::spawn(super::run(context, cancel.clone()));
    let slow = ObjectKey::new(Kind::Installation, "ns", "slow");
    let fast = ObjectKey::new(Kind::Installation, "ns", "fast");
    let slow_execution = ObjectKey::new(Kind::Execution, "ns", "slow");
    store
        .commit(Transaction::new().create(installation_with_busy_template("slow", 2_000)))
        .await
        .unwrap();
    // Its job has started: the same reconcile goes on into Init and renders.
    wait_for(&store, &slow, Duration::from_secs(30), "slow's job", |v| {
        v.pointer("/status/jobID").is_some()
    })
    .await;
    let started = Instant::now();
    store
        .commit(Transaction::new().create(installation_with_busy_template("fast", 0)))
        .await
        .unwrap();
    wait_for(
        &store,
        &fast,
        Duration::from_secs(60),
        "fast to succeed",
        |v| phase(v) == "Succeeded" && settled(v),
    )
    .await;
    let fast_done = started.elapsed();
    let slow_rendered = store.get(&slow_execution).unwrap().is_some();
    let slow_now = store.get(&slow).unwrap().unwrap();
    wait_for(
        &store,
        &slow,
        Duration::from_secs(300),
        "slow to finish",
        settled,
    )
    .await;
    let slow_done = started.elapsed();
    cancel.cancel();
    let _ = controllers.await;
    eprintln!("fast succeeded after {fast_done:?}, slow finished after {slow_done:?}");
    assert!(
        !slow_rendered,
        "fast succeeded only after slow's render ({fast_done:?}; slow: {slow_now})"
    );
}

#[tokio::test]
async fn a_recorded_failure_is_the_last_error_and_is_not_written_twice() {
    let (_dir, store) = open_store();
    let context = ControllerContext::new(store.clone(), ControllerConfig::default());
    let key = ObjectKey::new(Kind::Installation, "ns", "chain-0");
    store
        .commit(Transaction::new().create(chain_installation(0)))
        .await
        .unwrap();
    let error = super::lserror::LsError::new(
        super::runtime::PANIC_OPERATION,
        super::runtime::PANIC_REASON,
        "the reconcile panicked: boom",
    );
    super::jobs::record_last_error(&context, &key, &error)
        .await
        .unwrap();
    let first = store.get(&key).unwrap().unwrap();
    assert_eq!(first["status"]["lastError"]["reason"], "ReconcilePanic");
    assert_eq!(first["status"]["lastError"]["operation"], "Reconcile");
    assert_eq!(
        first["status"]["lastError"]["message"],
        "the reconcile panicked: boom"
    );
    super::jobs::record_last_error(&context, &key, &error)
        .await
        .unwrap();
    let second = store.get(&key).unwrap().unwrap();
    assert_eq!(
        first["metadata"]["resourceVersion"], second["metadata"]["resourceVersion"],
        "the same error was written again"
    );
    // A deploy item keeps its error history too.
    let item = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "DeployItem",
        "metadata": {"name": "di", "namespace": "ns"},
        "spec": {"type": "landscaper.gardener.cloud/mock"},
        "status": {"phase": "Progressing", "jobID": "j1"},
    });
    store.commit(Transaction::new().create(item)).await.unwrap();
    let item_key = ObjectKey::new(Kind::DeployItem, "ns", "di");
    super::jobs::record_last_error(&context, &item_key, &error)
        .await
        .unwrap();
    let item = store.get(&item_key).unwrap().unwrap();
    assert_eq!(item["status"]["lastError"]["reason"], "ReconcilePanic");
    assert_eq!(item["status"]["firstError"]["reason"], "ReconcilePanic");
    assert_eq!(
        item["status"]["lastErrors"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(item["status"]["phase"], "Progressing");
}
