//! Benchmark of data-flow latency, with the issue's target: a chain of 50 root Installations,
//! each importing the DataObject its predecessor exports (each with one execution and one mock
//! deploy item), dropped into the folder at once, are all `Succeeded` (and settled: no new job
//! requested) in < 5 s. Successors are woken when their predecessor finishes; they used to wait
//! for their growing re-check timers (a chain of 10 took 300 s).
//!
//! Run with `cargo bench -p landscaper-appliance --bench chain [-- N]`.

use std::time::{Duration, Instant};

use landscaper_appliance::daemon::controllers::events::finished_for_successors;
use landscaper_appliance::daemon::controllers::{ControllerConfig, ControllerContext};
use landscaper_appliance::daemon::ingest::{IngestConfig, Ingestor};
use landscaper_store::{Kind, LabelSelector, Store, StoreOptions};
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Installation `link-<i>`: exports `link-<i>`, and imports `link-<i-1>` for i > 0.
fn installation(i: usize) -> String {
    let (imports_spec, imports_blueprint) = if i == 0 {
        (String::new(), "")
    } else {
        (
            format!(
                "  imports:\n    data:\n      - name: previous\n        dataRef: link-{}\n",
                i - 1
            ),
            "          imports:\n            - name: previous\n              schema: {type: object}\n",
        )
    };
    format!(
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: link-{i}
  namespace: bench
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
{imports_spec}  exports:
    data:
      - name: out
        dataRef: link-{i}
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchemaVersion: https://json-schema.org/draft/2019-09/schema
{imports_blueprint}          exports:
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
                  out: {{"index": {i}}}
"#
    )
}

/// Installations that succeeded and want no further job.
fn settled(store: &Store) -> usize {
    store
        .list(Kind::Installation, Some("bench"), &LabelSelector::default())
        .map(|l| {
            l.items
                .iter()
                .filter(|o| {
                    o.pointer("/status/phase").and_then(|p| p.as_str()) == Some("Succeeded")
                        && finished_for_successors(o)
                })
                .count()
        })
        .unwrap_or(0)
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .and_then(|a| a.parse().ok())
        .unwrap_or(50);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let manifests = dir.path().join("manifests");
        std::fs::create_dir_all(&manifests).unwrap();
        for i in 0..n {
            std::fs::write(manifests.join(format!("link-{i}.yaml")), installation(i)).unwrap();
        }
        let store = Store::open(&dir.path().join("store.redb"), StoreOptions::default()).unwrap();
        let cancel = CancellationToken::new();
        let context = ControllerContext::new(store.clone(), ControllerConfig::default());
        let controllers = tokio::spawn(landscaper_appliance::daemon::controllers::run(
            context,
            cancel.clone(),
        ));
        let started = Instant::now();
        let ingestor = Ingestor::new(
            store.clone(),
            IngestConfig {
                manifests_dir: manifests.clone(),
                ..IngestConfig::default()
            },
        );
        let report = ingestor.rescan().await.unwrap();
        assert_eq!(report.applied, n, "{report:?}");
        let ingested = started.elapsed();
        let ingest_revision = store.revision();
        loop {
            let done = settled(&store);
            if done == n {
                break;
            }
            if started.elapsed() > Duration::from_secs(600) {
                panic!("only {done} of {n} chained installations settled after 600 s");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let elapsed = started.elapsed();
        let last = store
            .get(&landscaper_store::ObjectKey::new(
                Kind::DataObject,
                "bench",
                format!("link-{}", n - 1),
            ))
            .unwrap()
            .expect("the last installation's export");
        assert_eq!(last["data"]["index"], n - 1, "{last}");
        println!(
            "chain: {n} root installations chained by exports all Succeeded in {:.2} s (ingest {:.2} s; target < 5 s for 50)",
            elapsed.as_secs_f64(),
            ingested.as_secs_f64()
        );
        println!(
            "chain: {} durable store transactions after the ingest",
            store.revision() - ingest_revision
        );
        cancel.cancel();
        let _ = controllers.await;
        store.shutdown();
    });
}
