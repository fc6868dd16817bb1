//! Benchmarks of the foundation, with the targets:
//! - ingest of 10,000 objects in 1,000 files into an empty store: ≤ 2 s;
//! - durable single-object updates through group commit: ≥ 20,000 per second;
//! - start-up of the real daemon with 60,000 objects in the store until `/readyz`: ≤ 1 s, with
//!   resident memory ≤ 150 MB at that point.
//!
//! Run with `cargo bench -p landscaper-appliance --bench foundation`. Prints one line per figure.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use landscaper_appliance::commands::client::Client;
use landscaper_appliance::daemon::ingest::{IngestConfig, Ingestor};
use landscaper_store::{Store, StoreOptions, Transaction};
use serde_json::json;

/// The same allocator as the daemon binary, so the figures are the daemon's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters by name.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if wanted("ingest") {
        runtime.block_on(bench_ingest());
    }
    if wanted("updates") {
        runtime.block_on(bench_updates());
    }
    if wanted("startup") {
        runtime.block_on(bench_startup());
    }
}

fn write_manifests(dir: &Path, files: usize, objects_per_file: usize) {
    for f in 0..files {
        let sub = dir.join(format!("team-{:02}", f % 20));
        std::fs::create_dir_all(&sub).unwrap();
        let mut text = String::new();
        for o in 0..objects_per_file {
            text.push_str(&format!(
                "---\napiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata:\n  name: obj-{f}-{o}\n  namespace: ns-{}\n  labels:\n    file: \"{f}\"\ndata:\n  replicas: {o}\n  image: registry.example/app:{f}.{o}\n  settings:\n    enabled: true\n    tags: [edge, bench]\n",
                f % 10
            ));
        }
        std::fs::write(sub.join(format!("file-{f}.yaml")), text).unwrap();
    }
}

async fn bench_ingest() {
    let mut best = Duration::MAX;
    let runs = 3;
    for _ in 0..runs {
        let dir = tempfile::tempdir().unwrap();
        let manifests = dir.path().join("manifests");
        write_manifests(&manifests, 1_000, 10);
        let store = Store::open(&dir.path().join("store.redb"), StoreOptions::default()).unwrap();
        let ingestor = Ingestor::new(
            store.clone(),
            IngestConfig {
                manifests_dir: manifests,
                ..IngestConfig::default()
            },
        );
        let start = Instant::now();
        let report = ingestor.rescan().await.unwrap();
        let took = start.elapsed();
        assert_eq!(report.objects_created, 10_000, "{report:?}");
        best = best.min(took);
        store.shutdown();
    }
    println!(
        "ingest_10k_objects_1k_files: best of {runs}: {:.3} s (target <= 2 s)",
        best.as_secs_f64()
    );
}

async fn bench_updates() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("store.redb"), StoreOptions::default()).unwrap();
    let writers = 512;
    let mut objects = Vec::new();
    for i in 0..writers {
        let obj = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DataObject",
            "metadata": {"name": format!("counter-{i}"), "namespace": "bench"}, "data": {"n": 0}});
        objects.push(
            store
                .commit(Transaction::new().create(obj))
                .await
                .unwrap()
                .objects[0]
                .clone()
                .unwrap(),
        );
    }
    let count = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let duration = Duration::from_secs(5);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for mut obj in objects {
        let store = store.clone();
        let count = count.clone();
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                obj["data"]["n"] = json!(n);
                // Each transaction updates one object, based on the version it last wrote.
                obj = store
                    .commit(Transaction::new().update(obj))
                    .await
                    .unwrap()
                    .objects[0]
                    .clone()
                    .unwrap();
                count.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let elapsed = start.elapsed().as_secs_f64();
    let total = count.load(Ordering::Relaxed);
    println!(
        "durable_single_object_updates: {:.0} per second ({total} in {elapsed:.1} s, {writers} concurrent writers; target >= 20000)",
        total as f64 / elapsed
    );
    store.shutdown();
}

fn resident_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

async fn bench_startup() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("manifests");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    // 10,000 objects come from 1,000 files (the daemon rescans them at start); 50,000 more are
    // written directly, as controllers would.
    write_manifests(&manifests, 1_000, 10);
    {
        let store = Store::open(&data.join("store.redb"), StoreOptions::default()).unwrap();
        Ingestor::new(
            store.clone(),
            IngestConfig {
                manifests_dir: manifests.clone(),
                ..IngestConfig::default()
            },
        )
        .rescan()
        .await
        .unwrap();
        let mut pending = Vec::new();
        for i in 0..50_000 {
            let obj = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DataObject",
                "metadata": {"name": format!("generated-{i}"), "namespace": format!("ns-{}", i % 10),
                    "labels": {"data.landscaper.gardener.cloud/context": format!("Inst.root-{}", i % 100)}},
                "data": {"value": i, "text": "generated by a controller"}});
            let store = store.clone();
            pending.push(tokio::spawn(async move {
                store.commit(Transaction::new().create(obj)).await.unwrap();
            }));
            if pending.len() >= 2_000 {
                for p in pending.drain(..) {
                    p.await.unwrap();
                }
            }
        }
        for p in pending {
            p.await.unwrap();
        }
        let total: u64 = store.count_by_kind().unwrap().iter().map(|(_, n)| n).sum();
        assert!(total >= 60_000, "only {total} objects");
        store.shutdown();
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = format!("http://127.0.0.1:{port}");
    let mut best = Duration::MAX;
    let mut rss_at_ready = 0;
    for _ in 0..3 {
        let start = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_landscaper-appliance"))
            .args(["serve", "--manifests"])
            .arg(&manifests)
            .arg("--data")
            .arg(&data)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let client = Client::new(&server).unwrap();
        loop {
            if let Ok((200, _)) = client.get("/readyz", "text/plain") {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "daemon never became ready"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let took = start.elapsed();
        let rss = resident_kib(child.id()).unwrap_or(0);
        if took < best {
            best = took;
        }
        rss_at_ready = rss_at_ready.max(rss);
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let _ = child.wait();
    }
    println!(
        "startup_60k_objects_to_readyz: best of 3: {:.3} s (target <= 1 s); resident memory at ready: {:.1} MB (max of 3; target <= 150 MB)",
        best.as_secs_f64(),
        rss_at_ready as f64 / 1024.0
    );
}
