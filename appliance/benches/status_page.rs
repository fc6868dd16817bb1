//! Benchmark of the status page at 10,000 installations (issue 21's figure: the overview is
//! served in under 100 ms and stays under 200 KB per page). A store with N root installations,
//! each with an execution and a deploy item (1 % failed), and N/100 manifest files; the
//! daemon's router served over TCP; each figure is the median of the requests, measured at the
//! client, with the body size:
//! - cold: the first request (full read of the store and the index build);
//! - warm: no change in between (the cached index);
//! - after a change: one installation changed before each request (the change feed applied,
//!   the index rebuilt);
//! - filtered and paged, the list fragment, the rows of one page (the live update).
//!
//! Run with `cargo bench -p landscaper-appliance --bench status_page [-- N]`.

use std::time::{Duration, Instant};

use landscaper_appliance::commands::client::Client;
use landscaper_appliance::daemon::api::{ApiState, Readiness, router, serve};
use landscaper_store::{Store, StoreOptions, Transaction};
use serde_json::{Value, json};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn objects(i: usize) -> [Value; 3] {
    let ns = format!("team-{}", i % 20);
    let failed = i % 100 == 7;
    let phase = if failed { "Failed" } else { "Succeeded" };
    let status = |kind: &str| {
        let mut s = json!({"phase": phase, "jobID": "job-1", "jobIDFinished": "job-1",
            "phaseTransitionTime": "2026-11-28T10:00:00Z",
            "transitionTimes": {"triggerTime": "2026-11-28T09:59:00Z", "finishedTime": "2026-11-28T10:00:00Z"}});
        if failed {
            s["lastError"] = json!({"reason": format!("{kind}Failed"), "message": format!("{kind} inst-{i:05}: connection refused")});
        }
        s
    };
    [
        json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
            "metadata": {"name": format!("inst-{i:05}"), "namespace": ns, "uid": format!("uid-i-{i}")},
            "spec": {"blueprint": {"ref": {"resourceName": "blueprint"}}, "imports": {"targets": [{"name": "cluster", "target": "cluster"}]}},
            "status": status("Installation")}),
        json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Execution",
            "metadata": {"name": format!("inst-{i:05}"), "namespace": ns, "uid": format!("uid-e-{i}"),
                "ownerReferences": [{"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation", "name": format!("inst-{i:05}"), "uid": format!("uid-i-{i}")}]},
            "spec": {"deployItems": [{"name": "item", "type": "landscaper.gardener.cloud/mock", "config": {}}]},
            "status": status("Execution")}),
        json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DeployItem",
            "metadata": {"name": format!("inst-{i:05}-item"), "namespace": ns, "uid": format!("uid-d-{i}"),
                "labels": {"execution.landscaper.gardener.cloud/name": "item"},
                "ownerReferences": [{"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Execution", "name": format!("inst-{i:05}"), "uid": format!("uid-e-{i}")}]},
            "spec": {"type": "landscaper.gardener.cloud/mock"},
            "status": status("DeployItem")}),
    ]
}

fn median(mut xs: Vec<(Duration, usize)>) -> (Duration, usize) {
    xs.sort();
    xs[xs.len() / 2]
}

fn timed(client: &Client, path: &str) -> (Duration, usize) {
    let start = Instant::now();
    let (code, body) = client.get(path, "text/html").expect("GET");
    let took = start.elapsed();
    assert_eq!(code, 200, "{path}: {}", String::from_utf8_lossy(&body));
    (took, body.len())
}

fn report(what: &str, (took, bytes): (Duration, usize)) {
    println!(
        "status_page {what}: {:.1} ms, {:.1} KB",
        took.as_secs_f64() * 1000.0,
        bytes as f64 / 1024.0
    );
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store.redb"), StoreOptions::default()).unwrap();
        let started = Instant::now();
        for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
            let mut tx = Transaction::new();
            for &i in chunk {
                for o in objects(i) {
                    tx = tx.create(o);
                }
            }
            store.commit(tx).await.unwrap();
        }
        let mut tx = Transaction::new();
        for f in 0..n.div_ceil(100) {
            tx = tx.create(json!({"apiVersion": "appliance.landscaper-appliance.io/v1alpha1", "kind": "ManifestFile",
                "metadata": {"name": format!("file-{f}")}, "spec": {"path": format!("team/file-{f}.yaml")},
                "status": {"phase": "Applied", "objects": []}}));
        }
        store.commit(tx).await.unwrap();
        println!(
            "status_page: {n} installations, {} objects written in {:.1} s",
            3 * n + n.div_ceil(100),
            started.elapsed().as_secs_f64()
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = ApiState::new(store.clone(), Readiness::default());
        let app = router(state.clone()).merge(landscaper_appliance::daemon::ui::routes(state));
        tokio::spawn(serve(listener, app, std::future::pending()));
        let server = format!("http://{addr}");
        let store2 = store.clone();
        tokio::task::spawn_blocking(move || {
            let client = Client::new(&server).unwrap();
            report("cold (first request, full read)", timed(&client, "/"));
            let warm = (0..20).map(|_| timed(&client, "/")).collect();
            report("warm overview, page 1 (median of 20)", median(warm));
            let mut changed = Vec::new();
            for round in 0..10 {
                let i = round * 37 % n;
                let key = landscaper_store::ObjectKey::new(
                    landscaper_store::Kind::Installation,
                    format!("team-{}", i % 20),
                    format!("inst-{i:05}"),
                );
                let mut o = store2.get(&key).unwrap().unwrap();
                o["status"]["phase"] = json!(if round % 2 == 0 { "Progressing" } else { "Succeeded" });
                store2.commit_blocking(Transaction::new().update(o)).unwrap();
                changed.push(timed(&client, "/"));
            }
            report("overview after one change (median of 10)", median(changed));
            let filtered = (0..10)
                .map(|_| timed(&client, "/?ns=team-7&phase=Failed&q=refused&page=1"))
                .collect();
            report("filtered (namespace, phase, text)", median(filtered));
            let deep = (0..10).map(|_| timed(&client, "/?page=150")).collect();
            report("page 150", median(deep));
            let list = (0..10)
                .map(|_| timed(&client, "/?fragment=list&page=3"))
                .collect();
            report("list fragment", median(list));
            let keys: Vec<String> = (0..50)
                .map(|i| format!("Installation/team-{}/inst-{i:05}", i % 20))
                .collect();
            let rows_path = format!("/ui/rows?keys={}", keys.join(","));
            let rows = (0..10).map(|_| timed(&client, &rows_path)).collect();
            report("rows of one page (live update)", median(rows));
            let summary = (0..10)
                .map(|_| timed(&client, "/?fragment=summary"))
                .collect();
            report("summary fragment (live update)", median(summary));
        })
        .await
        .unwrap();
        store.shutdown();
    });
}
