//! Snapshots, backups and restores: a backup taken while writes go on holds exactly one
//! committed revision, opens as a store, and `restore_file` replaces a stopped store only after
//! checking the backup, keeping the old file.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use landscaper_store::{
    FORMAT_VERSION, Kind, LabelSelector, ObjectKey, OpenError, StorageError, Store, StoreError,
    StoreFile, StoreOptions, Transaction, restore_file,
};
use serde_json::{Value, json};

fn data_object(name: &str, value: Value) -> Value {
    json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DataObject",
        "metadata": {"name": name, "namespace": "backup"}, "data": value})
}

fn fast() -> StoreOptions {
    StoreOptions {
        durable: false,
        ..StoreOptions::default()
    }
}

fn names(objects: &[Value]) -> Vec<String> {
    objects
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn backups_taken_during_writes_hold_exactly_one_revision() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("store.redb"), fast()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // Every transaction creates a pair and bumps a counter: a consistent snapshot has both
    // objects of every pair and a counter equal to the number of pairs.
    let writer = {
        let (store, stop) = (store.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut txn = Transaction::new()
                    .create(data_object(&format!("a-{i}"), json!(i)))
                    .create(data_object(&format!("b-{i}"), json!(i)));
                let counter = store
                    .get(&ObjectKey::new(Kind::DataObject, "backup", "counter"))
                    .unwrap();
                txn = match counter {
                    None => txn.create(data_object("counter", json!(i + 1))),
                    Some(mut c) => {
                        c["data"] = json!(i + 1);
                        txn.update(c)
                    }
                };
                store.commit_blocking(txn).unwrap();
                i += 1;
            }
            i
        })
    };
    let mut checked = 0;
    for round in 0..8 {
        let path = dir.path().join(format!("backup-{round}.redb"));
        let info = store.backup_to(&path).unwrap();
        assert_eq!(info.format_version, FORMAT_VERSION);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let file = StoreFile::open(&path).unwrap();
        let contents = file.read_all().unwrap();
        assert_eq!(contents.revision, info.revision);
        assert_eq!(contents.objects.len() as u64, info.objects);
        let pairs = contents
            .objects
            .iter()
            .find(|o| o["metadata"]["name"] == "counter")
            .map(|c| c["data"].as_u64().unwrap())
            .unwrap_or(0);
        let all = names(&contents.objects);
        assert_eq!(
            all.len() as u64,
            2 * pairs + u64::from(pairs > 0),
            "{all:?}"
        );
        for i in 0..pairs {
            assert!(all.contains(&format!("a-{i}")) && all.contains(&format!("b-{i}")));
        }
        // Each object's resourceVersion is at most the snapshot's revision.
        for o in &contents.objects {
            let rv: u64 = o["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!(rv <= contents.revision);
        }
        assert_eq!(
            contents.newest_history.as_ref().map(|h| h.revision),
            (contents.revision > 0).then_some(contents.revision)
        );
        drop(file);
        // The backup is a store file: it opens as a store at the same revision.
        let reopened = Store::open(&path, fast()).unwrap();
        assert_eq!(reopened.revision(), info.revision);
        reopened.shutdown();
        checked += 1;
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    stop.store(true, Ordering::Relaxed);
    assert!(writer.join().unwrap() > 0);
    assert_eq!(checked, 8);
    store.shutdown();
}

#[test]
fn a_fresh_store_backs_up_and_snapshots_into_an_open_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("store.redb"), fast()).unwrap();
    // Every table initialise creates is one the snapshot knows.
    let info = store.backup_to(&dir.path().join("empty.redb")).unwrap();
    assert_eq!((info.revision, info.objects), (0, 0));
    store
        .commit_blocking(Transaction::new().create(data_object("x", json!({"k": "v"}))))
        .unwrap();
    let path = dir.path().join("snapshot.redb");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .unwrap();
    let info = store.write_snapshot(file).unwrap();
    assert_eq!(
        (info.revision, info.objects, info.history_entries),
        (1, 1, 1)
    );
    let contents = StoreFile::open(&path).unwrap().read_all().unwrap();
    assert_eq!(contents.objects[0]["data"], json!({"k": "v"}));
}

#[test]
fn a_store_file_in_use_is_reported_as_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let store = Store::open(&path, fast()).unwrap();
    assert!(matches!(
        StoreFile::open(&path),
        Err(StoreError::Open(OpenError::Locked { .. }))
    ));
    store.shutdown();
    drop(store);
    let file = StoreFile::open(&path).unwrap();
    // While a tool reads the file, the daemon cannot open it.
    assert!(matches!(
        Store::open(&path, fast()),
        Err(StoreError::Open(OpenError::Locked { .. }))
    ));
    drop(file);
    assert!(matches!(
        StoreFile::open(&dir.path().join("missing.redb")),
        Err(StoreError::Storage(StorageError::Io { .. }))
    ));
}

/// A copy of a store file whose meta table records `version`.
fn with_format_version(source: &std::path::Path, dest: &std::path::Path, version: u64) {
    std::fs::copy(source, dest).unwrap();
    let db = redb::Database::open(dest).unwrap();
    let tx = db.begin_write().unwrap();
    {
        let mut meta = tx
            .open_table(redb::TableDefinition::<&str, u64>::new("meta"))
            .unwrap();
        meta.insert("format_version", version).unwrap();
    }
    tx.commit().unwrap();
}

#[test]
fn restore_checks_the_backup_and_keeps_the_old_store() {
    let dir = tempfile::tempdir().unwrap();
    let source_path = dir.path().join("source.redb");
    let source = Store::open(&source_path, fast()).unwrap();
    source
        .commit_blocking(
            Transaction::new()
                .create(data_object("one", json!(1)))
                .create(data_object("two", json!(2))),
        )
        .unwrap();
    let backup = dir.path().join("backup.redb");
    source.backup_to(&backup).unwrap();
    source.shutdown();
    drop(source);

    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let store_path = data.join("store.redb");
    let current = Store::open(&store_path, fast()).unwrap();
    current
        .commit_blocking(Transaction::new().create(data_object("old", json!(0))))
        .unwrap();

    // A running daemon (the store open) refuses the restore.
    let err = restore_file(&backup, &store_path).unwrap_err();
    assert!(
        matches!(err, StoreError::Open(OpenError::Locked { .. })),
        "{err}"
    );
    current.shutdown();
    drop(current);

    // A backup of a newer format is refused with the daemon's message, naming the backup.
    let newer = dir.path().join("newer.redb");
    with_format_version(&backup, &newer, FORMAT_VERSION + 1);
    let err = restore_file(&newer, &store_path).unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err, StoreError::Open(OpenError::FormatVersion { .. }))
            && message.contains("newer.redb"),
        "{message}"
    );
    assert!(message.contains("newer release"), "{message}");
    // Not a store at all.
    let garbage = dir.path().join("garbage.redb");
    std::fs::write(&garbage, b"not a database, just some bytes").unwrap();
    assert!(restore_file(&garbage, &store_path).is_err());
    // Failed restores leave the store and the folder as they were.
    let listing = |d: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(listing(&data), ["store.redb"]);
    let old = StoreFile::open(&store_path).unwrap().read_all().unwrap();
    assert_eq!(names(&old.objects), ["old"]);

    let report = restore_file(&backup, &store_path).unwrap();
    assert_eq!(report.snapshot.objects, 2);
    assert_eq!(report.snapshot.revision, 1);
    assert!(report.counts.contains(&(Kind::DataObject, 2)));
    assert_eq!(
        report.previous.as_deref(),
        Some(data.join("store.redb.before-restore").as_path())
    );
    assert_eq!(listing(&data), ["store.redb", "store.redb.before-restore"]);
    let mode = std::fs::metadata(&store_path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let restored = Store::open(&store_path, fast()).unwrap();
    let items = restored
        .list(Kind::DataObject, None, &LabelSelector::everything())
        .unwrap()
        .items;
    assert_eq!(names(&items), ["one", "two"]);
    assert_eq!(restored.revision(), 1);
    restored.shutdown();
    drop(restored);
    let kept = StoreFile::open(&data.join("store.redb.before-restore"))
        .unwrap()
        .read_all()
        .unwrap();
    assert_eq!(names(&kept.objects), ["old"]);

    // Into an empty data folder: nothing to keep.
    let fresh = dir.path().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    let report = restore_file(&backup, &fresh.join("store.redb")).unwrap();
    assert_eq!(report.previous, None);
}

#[test]
fn an_older_or_newer_format_is_refused_by_tools() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    Store::open(&path, fast()).unwrap().shutdown();
    let newer = dir.path().join("newer.redb");
    with_format_version(&path, &newer, FORMAT_VERSION + 1);
    let err = StoreFile::open(&newer).unwrap_err().to_string();
    assert!(
        err.contains("format version 2") && err.contains("newer release"),
        "{err}"
    );
    let older = dir.path().join("older.redb");
    with_format_version(&path, &older, 0);
    let err = StoreFile::open(&older).unwrap_err().to_string();
    assert!(err.contains("older release"), "{err}");
}
