//! Benchmark of the orchestration core, with the issue's target: 1,000 root Installations, each
//! with one execution and one mock deploy item, dropped into the folder at once, are all
//! `Succeeded` in ≤ 5 s. Also reports the store transactions (each durable when it returns)
//! per installation job.
//!
//! Run with `cargo bench -p landscaper-appliance --bench orchestration [-- N]`.

use std::time::{Duration, Instant};

use landscaper_appliance::daemon::controllers::{ControllerConfig, ControllerContext};
use landscaper_appliance::daemon::ingest::{IngestConfig, Ingestor};
use landscaper_store::{Kind, LabelSelector, Store, StoreOptions};
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn installation(i: usize) -> String {
    format!(
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: inst-{i}
  namespace: bench
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchemaVersion: https://json-schema.org/draft/2019-09/schema
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
                      providerStatus:
                        apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                        kind: ProviderStatus
                        index: {i}
"#
    )
}

fn succeeded(store: &Store) -> usize {
    store
        .list(Kind::Installation, Some("bench"), &LabelSelector::default())
        .map(|l| {
            l.items
                .iter()
                .filter(|o| {
                    o.pointer("/status/phase").and_then(|p| p.as_str()) == Some("Succeeded")
                        && o.pointer("/status/jobID") == o.pointer("/status/jobIDFinished")
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
        .unwrap_or(1000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let manifests = dir.path().join("manifests");
        std::fs::create_dir_all(&manifests).unwrap();
        for i in 0..n {
            std::fs::write(manifests.join(format!("inst-{i}.yaml")), installation(i)).unwrap();
        }
        let store = Store::open(&dir.path().join("store.redb"), StoreOptions::default()).unwrap();
        let cancel = CancellationToken::new();
        let context = ControllerContext::new(store.clone(), ControllerConfig::default());
        let controllers = tokio::spawn(landscaper_appliance::daemon::controllers::run(
            context,
            cancel.clone(),
        ));
        let start_revision = store.revision();
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
            let done = succeeded(&store);
            if done == n {
                break;
            }
            if started.elapsed() > Duration::from_secs(120) {
                panic!("only {done} of {n} installations succeeded after 120 s");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let elapsed = started.elapsed();
        let job_transactions = store.revision() - ingest_revision;
        println!(
            "orchestration: {n} installations (1 execution, 1 mock deploy item each) all Succeeded in {:.2} s (ingest {:.2} s; target <= 5 s)",
            elapsed.as_secs_f64(),
            ingested.as_secs_f64()
        );
        println!(
            "orchestration: {job_transactions} durable store transactions for {n} jobs = {:.1} per installation job (ingest: {} transactions)",
            job_transactions as f64 / n as f64,
            ingest_revision - start_revision
        );
        cancel.cancel();
        let _ = controllers.await;
        store.shutdown();
    });
}
