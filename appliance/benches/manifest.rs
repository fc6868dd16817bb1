//! Benchmark of the kubernetes-manifest deployer end to end, with the issue's target: 1,000
//! root Installations, each with one manifest deploy item that creates a ConfigMap, against the
//! workspace's Kubernetes test API server (in this process, over real HTTP), all `Succeeded` in
//! ≤ 20 s. Checks that every ConfigMap exists in the cluster afterwards.
//!
//! Run with `cargo bench -p landscaper-appliance --bench manifest [-- N]`.

use std::time::{Duration, Instant};

use kube_test_server::{ServerConfig, TestServer};
use landscaper_appliance::daemon::controllers::{ControllerConfig, ControllerContext};
use landscaper_appliance::daemon::ingest::{IngestConfig, Ingestor};
use landscaper_store::{Kind, LabelSelector, Store, StoreOptions};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn target(kubeconfig: &str) -> String {
    let indented: String = kubeconfig.lines().map(|l| format!("      {l}\n")).collect();
    format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Target
metadata:
  name: cluster
  namespace: bench
spec:
  type: landscaper.gardener.cloud/kubernetes-cluster
  config:
    kubeconfig: |
{indented}"
    )
}

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
  imports:
    targets:
      - name: cluster
        target: cluster
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchemaVersion: https://json-schema.org/draft/2019-09/schema
          imports:
            - name: cluster
              targetType: landscaper.gardener.cloud/kubernetes-cluster
          deployExecutions:
            - name: default
              type: GoTemplate
              template: |
                deployItems:
                  - name: item
                    type: landscaper.gardener.cloud/kubernetes-manifest
                    target:
                      import: cluster
                    config:
                      apiVersion: manifest.deployer.landscaper.gardener.cloud/v1alpha2
                      kind: ProviderConfiguration
                      updateStrategy: update
                      manifests:
                        - policy: manage
                          manifest:
                            apiVersion: v1
                            kind: ConfigMap
                            metadata:
                              name: cm-{i}
                              namespace: bench
                            data:
                              index: "{i}"
"#
    )
}

fn succeeded(store: &Store) -> (usize, usize) {
    store
        .list(Kind::Installation, Some("bench"), &LabelSelector::default())
        .map(|l| {
            let finished = |o: &serde_json::Value| {
                o.pointer("/status/jobID").is_some()
                    && o.pointer("/status/jobID") == o.pointer("/status/jobIDFinished")
            };
            let phase = |o: &serde_json::Value| {
                o.pointer("/status/phase")
                    .and_then(|p| p.as_str())
                    .map(str::to_string)
            };
            let ok = l
                .items
                .iter()
                .filter(|o| finished(o) && phase(o).as_deref() == Some("Succeeded"))
                .count();
            let failed = l
                .items
                .iter()
                .filter(|o| finished(o) && phase(o).as_deref() == Some("Failed"))
                .count();
            (ok, failed)
        })
        .unwrap_or((0, 0))
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
        let cluster = TestServer::start(ServerConfig::default()).await.unwrap();
        cluster
            .create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}))
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let manifests = dir.path().join("manifests");
        std::fs::create_dir_all(&manifests).unwrap();
        std::fs::write(manifests.join("target.yaml"), target(&cluster.kubeconfig())).unwrap();
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
        let started = Instant::now();
        let ingestor = Ingestor::new(
            store.clone(),
            IngestConfig {
                manifests_dir: manifests.clone(),
                ..IngestConfig::default()
            },
        );
        let report = ingestor.rescan().await.unwrap();
        assert_eq!(report.applied, n + 1, "{report:?}");
        loop {
            let (ok, failed) = succeeded(&store);
            if ok == n {
                break;
            }
            assert_eq!(failed, 0, "installations failed");
            if started.elapsed() > Duration::from_secs(300) {
                panic!("only {ok} of {n} installations succeeded after 300 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let elapsed = started.elapsed();
        let config_maps = cluster.list("v1", "ConfigMap", Some("bench")).len();
        assert_eq!(config_maps, n, "ConfigMaps in the cluster");
        println!(
            "manifest: {n} installations (1 manifest deploy item creating a ConfigMap each) all Succeeded in {:.2} s against the test API server; {config_maps} ConfigMaps created (target <= 20 s)",
            elapsed.as_secs_f64()
        );
        cancel.cancel();
        let _ = controllers.await;
        store.shutdown();
        cluster.shutdown();
    });
}
