//! The ingest loop with a real watcher: initial scan signal, editor save patterns, shutdown.

mod ingest_common;

use std::time::Duration;

use ingest_common::*;
use landscaper_store::Kind;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(10);

/// Starts `run` and waits for the initial scan.
async fn start(env: &Env) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let shutdown = CancellationToken::new();
    let (ready, scanned) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(env.ingestor().run(shutdown.clone(), Some(ready)));
    tokio::time::timeout(WAIT, scanned)
        .await
        .expect("initial scan within the timeout")
        .expect("initial scan report");
    (shutdown, task)
}

async fn stop(shutdown: CancellationToken, task: tokio::task::JoinHandle<()>) {
    shutdown.cancel();
    tokio::time::timeout(WAIT, task)
        .await
        .expect("run returns after cancel")
        .unwrap();
}

fn value_of(env: &Env, name: &str) -> Option<serde_json::Value> {
    env.dataobject(name).map(|o| o["data"]["value"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initial_scan_is_reported_before_run_goes_on() {
    let env = Env::new();
    env.write("a.yaml", dataobject("a", "1"));
    let shutdown = CancellationToken::new();
    let (ready, scanned) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(env.ingestor().run(shutdown.clone(), Some(ready)));
    let report = tokio::time::timeout(WAIT, scanned).await.unwrap().unwrap();
    assert_eq!((report.files, report.applied), (1, 1));
    // Ready means applied.
    assert!(env.dataobject("a").is_some());
    stop(shutdown, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_changed_and_removed_files_are_picked_up() {
    let env = Env::new();
    let (shutdown, task) = start(&env).await;
    env.write("a.yaml", dataobject("a", "1"));
    eventually("a created", WAIT, || value_of(&env, "a") == Some(1.into())).await;
    env.write("a.yaml", dataobject("a", "2"));
    eventually("a updated", WAIT, || value_of(&env, "a") == Some(2.into())).await;
    // A directory created after the watch started is watched too.
    env.write("new/dir/b.yaml", dataobject("b", "1"));
    eventually("b created", WAIT, || env.dataobject("b").is_some()).await;
    env.remove("a.yaml");
    eventually("a deleted", WAIT, || env.dataobject("a").is_none()).await;
    std::fs::remove_dir_all(env.path("new")).unwrap();
    eventually("b deleted", WAIT, || env.dataobject("b").is_none()).await;
    eventually("records gone", WAIT, || env.count(Kind::ManifestFile) == 0).await;
    stop(shutdown, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_rename_save_ends_with_the_new_content() {
    let env = Env::new();
    env.write("app.yaml", dataobject("a", "1"));
    let (shutdown, task) = start(&env).await;
    let before = env.dataobject("a").unwrap();
    for round in 2..5 {
        // How editors and config tools save: write a temp file, then rename it over the file.
        env.write("app.yaml.tmp", dataobject("a", &round.to_string()));
        std::fs::rename(env.path("app.yaml.tmp"), env.path("app.yaml")).unwrap();
        eventually("new content", WAIT, || {
            value_of(&env, "a") == Some(round.into())
        })
        .await;
    }
    assert_eq!(
        uid(&env.dataobject("a").unwrap()),
        uid(&before),
        "updated, never re-created"
    );
    stop(shutdown, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_and_recreate_within_the_debounce_window() {
    let env = Env::new();
    env.write(
        "app.yaml",
        docs(&[dataobject("a", "1"), dataobject("b", "1")]),
    );
    let (shutdown, task) = start(&env).await;
    env.remove("app.yaml");
    env.write(
        "app.yaml",
        docs(&[dataobject("a", "2"), dataobject("c", "2")]),
    );
    eventually("new content", WAIT, || {
        value_of(&env, "a") == Some(2.into())
            && env.dataobject("c").is_some()
            && env.dataobject("b").is_none()
    })
    .await;
    let mf = env.manifest_file("app.yaml").unwrap();
    assert_eq!(mf["status"]["phase"], "Applied");
    stop(shutdown, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_save_then_fix_and_skip_marker() {
    let env = Env::new();
    env.write("app.yaml", dataobject("a", "1"));
    let (shutdown, task) = start(&env).await;
    env.write("app.yaml", "kind: [\n");
    eventually("error recorded", WAIT, || {
        env.manifest_file("app.yaml")
            .is_some_and(|mf| mf["status"]["phase"] == "Error")
    })
    .await;
    assert_eq!(value_of(&env, "a"), Some(1.into()));
    env.write("app.yaml", dataobject("a", "3"));
    eventually("fixed", WAIT, || value_of(&env, "a") == Some(3.into())).await;
    env.write("app.yaml.skip", "");
    eventually("skipped", WAIT, || env.dataobject("a").is_none()).await;
    env.remove("app.yaml.skip");
    eventually("back", WAIT, || env.dataobject("a").is_some()).await;
    stop(shutdown, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_file_is_applied_when_the_deletion_finishes() {
    let env = Env::new();
    env.write("app.yaml", installation("inst", &[], "bp"));
    let (shutdown, task) = start(&env).await;
    let mut inst = env.installation("inst").unwrap();
    inst["metadata"]["finalizers"] = serde_json::json!(["finalizer.landscaper.gardener.cloud"]);
    env.update(inst).await;
    env.remove("app.yaml");
    eventually("deletion requested", WAIT, || {
        env.installation("inst")
            .is_some_and(|i| i["metadata"]["deletionTimestamp"].is_string())
    })
    .await;
    env.write("app.yaml", installation("inst", &[], "bp2"));
    eventually("waiting", WAIT, || {
        env.manifest_file("app.yaml")
            .is_some_and(|mf| mf["status"]["phase"] == "Error")
    })
    .await;
    // The controller finishes the deletion: the change feed triggers the re-creation.
    let mut inst = env.installation("inst").unwrap();
    inst["metadata"]["finalizers"] = serde_json::json!([]);
    env.update(inst).await;
    eventually("re-created", WAIT, || {
        env.installation("inst").is_some_and(|i| {
            i["metadata"].get("deletionTimestamp").is_none()
                && i["spec"]["blueprint"]["ref"]["resourceName"] == "bp2"
        })
    })
    .await;
    stop(shutdown, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn periodic_resync_catches_changes_without_a_watch() {
    let env = Env::new();
    // The folder does not exist at start: no watch, the scan fails, nothing is deleted.
    std::fs::remove_dir(&env.manifests).unwrap();
    let shutdown = CancellationToken::new();
    let (ready, scanned) = tokio::sync::oneshot::channel();
    let config = landscaper_appliance::daemon::ingest::IngestConfig {
        resync_interval: Duration::from_millis(300),
        ..env.config()
    };
    let ingestor = landscaper_appliance::daemon::ingest::Ingestor::new(env.store.clone(), config);
    let task = tokio::spawn(ingestor.run(shutdown.clone(), Some(ready)));
    tokio::time::timeout(WAIT, scanned).await.unwrap().unwrap();
    env.write("a.yaml", dataobject("a", "1"));
    eventually("a created by a resync", WAIT, || {
        env.dataobject("a").is_some()
    })
    .await;
    // The resync also started the watch: a change is seen promptly.
    env.write("a.yaml", dataobject("a", "2"));
    eventually("a updated", WAIT, || value_of(&env, "a") == Some(2.into())).await;
    stop(shutdown, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folder_replaced_while_running() {
    let env = Env::new();
    env.write("a.yaml", dataobject("a", "1"));
    let shutdown = CancellationToken::new();
    let (ready, scanned) = tokio::sync::oneshot::channel();
    let config = landscaper_appliance::daemon::ingest::IngestConfig {
        resync_interval: Duration::from_millis(300),
        ..env.config()
    };
    let ingestor = landscaper_appliance::daemon::ingest::Ingestor::new(env.store.clone(), config);
    let task = tokio::spawn(ingestor.run(shutdown.clone(), Some(ready)));
    tokio::time::timeout(WAIT, scanned).await.unwrap().unwrap();
    assert!(env.dataobject("a").is_some());

    // The folder disappears (an unmounted volume, a config tool replacing it): nothing is
    // deleted while it is missing.
    std::fs::rename(&env.manifests, env.dir.path().join("old")).unwrap();
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(value_of(&env, "a"), Some(1.into()));

    // A new folder takes its place; it is scanned and watched.
    let staged = env.dir.path().join("staged");
    std::fs::create_dir(&staged).unwrap();
    std::fs::write(staged.join("a.yaml"), dataobject("a", "2")).unwrap();
    std::fs::rename(&staged, &env.manifests).unwrap();
    eventually("new folder scanned", WAIT, || {
        value_of(&env, "a") == Some(2.into())
    })
    .await;
    env.write("a.yaml", dataobject("a", "3"));
    eventually("change seen", WAIT, || {
        value_of(&env, "a") == Some(3.into())
    })
    .await;
    stop(shutdown, task).await;
}

/// A scan (here one started by hand; in the daemon a resync or another file's change) picks up
/// a new file whose events the watcher has not passed on yet; the file is removed right after.
/// The removal must trigger a rescan of its own, not wait for the next resync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_removed_right_after_a_scan_picked_it_up_is_noticed() {
    let env = Env::new();
    let config = landscaper_appliance::daemon::ingest::IngestConfig {
        debounce: Duration::from_secs(2),
        resync_interval: Duration::from_secs(3600),
        ..env.config()
    };
    let ingestor = landscaper_appliance::daemon::ingest::Ingestor::new(env.store.clone(), config);
    let shutdown = CancellationToken::new();
    let (ready, scanned) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(ingestor.clone().run(shutdown.clone(), Some(ready)));
    tokio::time::timeout(WAIT, scanned).await.unwrap().unwrap();

    env.write("x.yaml", dataobject("x", "1"));
    let report = ingestor.rescan().await.unwrap();
    assert_eq!(report.applied, 1, "{report:?}");
    assert!(env.dataobject("x").is_some());
    env.remove("x.yaml");
    eventually("x deleted", WAIT, || env.dataobject("x").is_none()).await;
    stop(shutdown, task).await;
}
