//! A full disk: commits fail, the store says why (`unwritable`), later commits are refused with
//! `NotWritable` instead of redb's "Previous I/O error" forever, and once space is freed the
//! writer reopens the file by itself: commits work again and every acknowledged object is
//! there, also after a restart.
//!
//! Needs a small filesystem of its own: a tmpfs mounted for the test, which needs root (CI runs
//! as root). Elsewhere it prints a SKIP line.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use landscaper_store::{
    Kind, LabelSelector, ObjectKey, Store, StoreError, StoreOptions, Transaction, TransactionError,
};
use serde_json::{Value, json};

/// A tmpfs of `size` mounted on a fresh folder; unmounted on drop.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        ok.then_some(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

fn data_object(name: &str, value: Value) -> Value {
    json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DataObject",
        "metadata": {"name": name, "namespace": "disk"}, "data": value})
}

/// Fills the filesystem with one file until it refuses more.
fn fill(path: &Path) -> PathBuf {
    use std::io::Write;
    let filler = path.join("filler");
    let mut file = std::fs::File::create(&filler).unwrap();
    let chunk = vec![7u8; 64 * 1024];
    while file.write_all(&chunk).is_ok() {}
    // Smaller pieces down to the last free bytes.
    let small = vec![7u8; 512];
    while file.write_all(&small).is_ok() {}
    let _ = file.sync_all();
    filler
}

fn names(store: &Store) -> Vec<String> {
    let mut names: Vec<String> = store
        .list(Kind::DataObject, Some("disk"), &LabelSelector::default())
        .unwrap()
        .items
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn a_full_disk_heals_without_restart_and_loses_nothing_acknowledged() {
    if not_root() {
        println!("SKIP a_full_disk_heals...: needs root to mount a tmpfs");
        return;
    }
    let Some(disk) = SmallDisk::mount("8m") else {
        println!("SKIP a_full_disk_heals...: mounting a tmpfs failed");
        return;
    };
    let path = disk.path().join("store.redb");
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let mut acknowledged = Vec::new();
    for i in 0..20 {
        let name = format!("before-{i:02}");
        store
            .commit_blocking(Transaction::new().create(data_object(&name, json!(i))))
            .unwrap();
        acknowledged.push(name);
    }
    assert!(store.unwritable().is_none());

    let filler = fill(disk.path());
    // Commit growing objects until one fails: the disk is full.
    let big = "x".repeat(256 * 1024);
    let mut failed = None;
    for i in 0..200 {
        let name = format!("during-{i:03}");
        match store.commit_blocking(Transaction::new().create(data_object(&name, json!(big)))) {
            Ok(_) => acknowledged.push(name),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let failed = failed.expect("a commit fails on a full disk");
    println!("first failure: {failed}");
    assert!(failed.is_retryable(), "{failed}");
    let state = store
        .unwritable()
        .expect("the store says it takes no writes");
    assert!(!state.reason.is_empty() && !state.since.is_empty());
    // While full, commits are refused at once with a clear, retryable error.
    let refused = store
        .commit_blocking(Transaction::new().create(data_object("refused", json!(1))))
        .unwrap_err();
    println!("while full: {refused}");
    assert!(
        matches!(
            refused,
            StoreError::Transaction(TransactionError::NotWritable { .. })
        ),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("No space left"), "{refused}");

    // Free the space: the writer reopens the file by itself and commits work again.
    std::fs::remove_file(&filler).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match store.commit_blocking(Transaction::new().create(data_object("after", json!(1)))) {
            Ok(_) => break,
            Err(e) if Instant::now() < deadline => {
                assert!(e.is_retryable(), "{e}");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("the store did not recover within 20 s: {e}"),
        }
    }
    acknowledged.push("after".into());
    assert!(store.unwritable().is_none());
    acknowledged.sort();
    assert_eq!(names(&store), acknowledged);
    assert!(
        store
            .get(&ObjectKey::new(Kind::DataObject, "disk", "refused"))
            .unwrap()
            .is_none()
    );

    // And after a restart.
    store.shutdown();
    drop(store);
    let reopened = Store::open(&path, StoreOptions::default()).unwrap();
    assert_eq!(names(&reopened), acknowledged);
    reopened.shutdown();
}

/// Root can mount; everyone else skips (no libc call needed: `id -u`).
fn not_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() != "0")
        .unwrap_or(true)
}
