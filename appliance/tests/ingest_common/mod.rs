//! Helpers shared by the ingest integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use landscaper_appliance::daemon::ingest::{IngestConfig, Ingestor, manifest_file_name};
use landscaper_store::{Kind, LabelSelector, ObjectKey, Store, StoreOptions, Transaction};
use serde_json::Value;

/// A manifests folder and a store in one temp dir.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub manifests: PathBuf,
    pub store: Store,
}

impl Env {
    pub fn new() -> Env {
        Env::with_durability(false)
    }

    pub fn with_durability(durable: bool) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let manifests = dir.path().join("manifests.d");
        std::fs::create_dir_all(&manifests).unwrap();
        let store = Store::open(
            &dir.path().join("store.redb"),
            StoreOptions {
                durable,
                ..StoreOptions::default()
            },
        )
        .unwrap();
        Env {
            dir,
            manifests,
            store,
        }
    }

    pub fn config(&self) -> IngestConfig {
        IngestConfig {
            manifests_dir: self.manifests.clone(),
            debounce: Duration::from_millis(200),
            resync_interval: Duration::from_secs(60),
            ..IngestConfig::default()
        }
    }

    pub fn ingestor(&self) -> Ingestor {
        Ingestor::new(self.store.clone(), self.config())
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.manifests.join(rel)
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, content).unwrap();
    }

    pub fn remove(&self, rel: &str) {
        std::fs::remove_file(self.path(rel)).unwrap();
    }

    pub fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<Value> {
        self.store
            .get(&ObjectKey::new(kind, namespace, name))
            .unwrap()
    }

    pub fn dataobject(&self, name: &str) -> Option<Value> {
        self.get(Kind::DataObject, "default", name)
    }

    pub fn installation(&self, name: &str) -> Option<Value> {
        self.get(Kind::Installation, "default", name)
    }

    pub fn manifest_file(&self, rel: &str) -> Option<Value> {
        self.get(Kind::ManifestFile, "", &manifest_file_name(rel))
    }

    pub fn count(&self, kind: Kind) -> usize {
        self.store
            .list(kind, None, &LabelSelector::everything())
            .unwrap()
            .items
            .len()
    }

    /// Replaces a stored object as a controller would (keeping its resourceVersion check).
    pub async fn update(&self, object: Value) {
        self.store
            .commit(Transaction::new().update(object))
            .await
            .unwrap();
    }
}

pub fn dataobject(name: &str, value: &str) -> String {
    format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata:\n  name: {name}\ndata:\n  value: {value}\n"
    )
}

pub fn installation(name: &str, annotations: &[(&str, &str)], blueprint: &str) -> String {
    let mut meta = format!("metadata:\n  name: {name}\n");
    if !annotations.is_empty() {
        meta.push_str("  annotations:\n");
        for (k, v) in annotations {
            meta.push_str(&format!("    {k}: {v}\n"));
        }
    }
    format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Installation\n{meta}spec:\n  blueprint:\n    ref:\n      resourceName: {blueprint}\n"
    )
}

pub fn docs(parts: &[String]) -> String {
    parts.join("---\n")
}

pub fn rv(object: &Value) -> String {
    object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string()
}

pub fn uid(object: &Value) -> String {
    object["metadata"]["uid"].as_str().unwrap().to_string()
}

pub fn generation(object: &Value) -> i64 {
    object["metadata"]["generation"].as_i64().unwrap()
}

/// Polls `check` until it holds or `timeout` passes.
pub async fn eventually(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
