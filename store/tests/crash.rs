//! Crash test: a child process commits through the group-committing writer from several
//! threads and is killed with SIGKILL at random moments. After each kill the reopened file must
//! hold exactly a prefix of every thread's committed operations, at least as long as what the
//! child had acknowledged.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use landscaper_store::{Kind, LabelSelector, ObjectKey, Store, StoreOptions, Transaction};
use serde_json::{Value, json};

const THREADS: usize = 4;
const OBJECTS_PER_THREAD: u64 = 13;
const CHILD_ENV: &str = "LANDSCAPER_STORE_CRASH_CHILD";

fn data_object(name: &str, value: Value) -> Value {
    json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DataObject",
        "metadata": {"name": name, "namespace": "crash", "labels": {"thread": name.split('-').next().unwrap()}},
        "data": value})
}

fn progress_key(thread: usize) -> ObjectKey {
    ObjectKey::new(Kind::DataObject, "crash", format!("t{thread}-progress"))
}

/// What thread `thread`'s operation `i` does, as (object suffix, new value or None for delete).
/// Deterministic, so the checker can replay it.
fn operation(thread: usize, i: u64) -> (String, Option<u64>) {
    let slot = (i * 7 + thread as u64) % OBJECTS_PER_THREAD;
    let delete = i % 5 == 4;
    (
        format!("t{thread}-obj-{slot}"),
        if delete { None } else { Some(i) },
    )
}

/// The state thread `thread`'s objects must have after `n` operations.
fn expected_state(thread: usize, n: u64) -> BTreeMap<String, u64> {
    let mut state = BTreeMap::new();
    for i in 0..n {
        let (name, value) = operation(thread, i);
        match value {
            Some(v) => {
                state.insert(name, v);
            }
            None => {
                state.remove(&name);
            }
        }
    }
    state
}

/// The child: runs forever (until killed), one writer thread per `THREADS`, each committing its
/// operation together with its progress counter, and printing `ack THREAD COUNT` after each
/// durable commit.
#[test]
fn crash_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let store = Store::open(path.as_ref(), StoreOptions::default()).unwrap();
    let mut handles = Vec::new();
    for thread in 0..THREADS {
        let store = store.clone();
        handles.push(std::thread::spawn(move || {
            let start = store
                .get(&progress_key(thread))
                .unwrap()
                .map(|p| p["data"]["count"].as_u64().unwrap())
                .unwrap_or(0);
            for i in start.. {
                let (name, value) = operation(thread, i);
                let key = ObjectKey::new(Kind::DataObject, "crash", &name);
                let mut txn = Transaction::new();
                match (store.get(&key).unwrap(), value) {
                    (Some(_), None) => txn = txn.delete(key, None),
                    (None, None) => {}
                    (Some(mut current), Some(v)) => {
                        current["data"] = json!(v);
                        txn = txn.update(current);
                    }
                    (None, Some(v)) => txn = txn.create(data_object(&name, json!(v))),
                }
                let progress = data_object(&format!("t{thread}-progress"), json!({"count": i + 1}));
                txn = match store.get(&progress_key(thread)).unwrap() {
                    Some(mut p) => {
                        p["data"] = json!({"count": i + 1});
                        txn.update(p)
                    }
                    None => txn.create(progress),
                };
                store.commit_blocking(txn).unwrap();
                println!("ack {thread} {}", i + 1);
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
}

fn verify(path: &std::path::Path, acked: &[u64; THREADS]) -> [u64; THREADS] {
    let store = Store::open(path, StoreOptions::default()).expect("reopen after kill");
    let mut counts = [0u64; THREADS];
    for thread in 0..THREADS {
        let count = store
            .get(&progress_key(thread))
            .unwrap()
            .map(|p| p["data"]["count"].as_u64().unwrap())
            .unwrap_or(0);
        assert!(
            count >= acked[thread],
            "thread {thread}: acknowledged {} operations but only {count} survived",
            acked[thread]
        );
        let selector = LabelSelector::parse(&format!("thread=t{thread}")).unwrap();
        let stored: BTreeMap<String, u64> = store
            .list(Kind::DataObject, Some("crash"), &selector)
            .unwrap()
            .items
            .iter()
            .filter(|o| {
                !o["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .ends_with("-progress")
            })
            .map(|o| {
                (
                    o["metadata"]["name"].as_str().unwrap().to_string(),
                    o["data"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            stored,
            expected_state(thread, count),
            "thread {thread}: state is not the prefix of {count} operations"
        );
        counts[thread] = count;
    }
    store.shutdown();
    counts
}

#[test]
fn killed_writer_leaves_exactly_a_committed_prefix() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.redb");
    let exe = std::env::current_exe().unwrap();
    let mut seed: u64 = std::process::id() as u64 ^ 0x9e37_79b9_7f4a_7c15;
    let mut total = [0u64; THREADS];
    let rounds = 8;
    for round in 0..rounds {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let run_for = Duration::from_millis(30 + seed % 400);
        let mut child = Command::new(&exe)
            .args([
                "crash_child",
                "--exact",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(CHILD_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let parts: Vec<&str> = line.split_whitespace().collect();
                if parts.len() == 3 && parts[0] == "ack" {
                    let _ = tx.send((
                        parts[1].parse::<usize>().unwrap(),
                        parts[2].parse::<u64>().unwrap(),
                    ));
                }
            }
        });
        let deadline = Instant::now() + run_for;
        let mut acked = [0u64; THREADS];
        while Instant::now() < deadline {
            if let Ok((t, n)) = rx.recv_timeout(Duration::from_millis(5)) {
                acked[t] = acked[t].max(n);
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();
        // Acks printed before the kill count too: they were durable when printed.
        while let Ok((t, n)) = rx.try_recv() {
            acked[t] = acked[t].max(n);
        }
        let counts = verify(&path, &acked);
        println!("round {round}: ran {run_for:?}, acked {acked:?}, survived {counts:?}");
        total = counts;
    }
    assert!(
        total.iter().sum::<u64>() > 0,
        "the child never committed anything; the test exercised nothing"
    );
}
