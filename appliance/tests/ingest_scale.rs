//! Folder ingest at size: many files, one huge file. Not timed (timings vary by machine); the
//! ignored `measure_*` test prints numbers for a release build:
//! `cargo test --release -p landscaper-appliance --test ingest_scale -- --ignored --nocapture`.

mod ingest_common;

use std::time::Instant;

use ingest_common::*;
use landscaper_store::Kind;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_files_at_start_up() {
    let env = Env::new();
    for i in 0..5_000 {
        env.write(
            &format!("d{:02}/f{i}.yaml", i % 50),
            dataobject(&format!("obj-{i}"), &i.to_string()),
        );
    }
    let ingestor = env.ingestor();
    let report = ingestor.rescan().await.unwrap();
    assert_eq!(
        (report.files, report.applied, report.failed),
        (5_000, 5_000, 0)
    );
    assert_eq!(env.count(Kind::DataObject), 5_000);
    assert_eq!(env.count(Kind::ManifestFile), 5_000);
    assert_eq!(env.dataobject("obj-4999").unwrap()["data"]["value"], 4999);

    // A rescan of unchanged files writes nothing.
    let revision = env.store.revision();
    let report = ingestor.rescan().await.unwrap();
    assert_eq!(env.store.revision(), revision);
    assert_eq!(report.applied, 0);
    eprintln!("unchanged rescan of 5,000 files: {:?}", report.duration);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_megabyte_file_with_many_documents() {
    let env = Env::new();
    let padding = "x".repeat(400);
    let mut content = String::new();
    let mut n = 0;
    while content.len() < 10 * 1024 * 1024 {
        content.push_str(&format!(
            "---\napiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata:\n  name: big-{n}\n  labels:\n    part: big\ndata:\n  index: {n}\n  padding: {padding}\n"
        ));
        n += 1;
    }
    env.write("big.yaml", &content);
    let started = Instant::now();
    let report = env.ingestor().rescan().await.unwrap();
    eprintln!("10 MB file, {n} documents: {:?}", started.elapsed());
    assert_eq!(report.failed, 0, "{:?}", report.errors);
    assert_eq!(report.objects_created, n);
    assert_eq!(env.count(Kind::DataObject), n);
    let mf = env.manifest_file("big.yaml").unwrap();
    assert_eq!(mf["status"]["objects"].as_array().unwrap().len(), n);

    // A broken last document is located exactly, and nothing changes.
    let lines = content.lines().count();
    content.push_str("---\nkind: [\n");
    env.write("big.yaml", &content);
    let report = env.ingestor().rescan().await.unwrap();
    let error = &report.errors[0];
    assert_eq!(
        (error.document, error.line),
        (Some(n), Some(lines + 2)),
        "{error}"
    );
    assert_eq!(env.count(Kind::DataObject), n);
}

/// 10,000 objects in 1,000 files into an empty, durable store. Prints the time; the target
/// is at most 2 s in a release build on 2 cores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement; run with --release --ignored --nocapture"]
async fn measure_ten_thousand_objects_in_one_thousand_files() {
    let env = Env::with_durability(true);
    for f in 0..1_000 {
        let parts: Vec<String> = (0..10)
            .map(|o| {
                if o == 0 {
                    installation(
                        &format!("inst-{f}"),
                        &[("landscaper.gardener.cloud/operation", "reconcile")],
                        "bp",
                    )
                } else {
                    dataobject(&format!("obj-{f}-{o}"), &format!("value-{o}"))
                }
            })
            .collect();
        env.write(&format!("team-{}/file-{f}.yaml", f % 10), docs(&parts));
    }
    let ingestor = env.ingestor();
    let started = Instant::now();
    let report = ingestor.rescan().await.unwrap();
    let initial = started.elapsed();
    assert_eq!((report.applied, report.objects_created), (1_000, 10_000));
    let started = Instant::now();
    let again = ingestor.rescan().await.unwrap();
    let unchanged = started.elapsed();
    assert_eq!(again.applied, 0);
    // One file in ten gets a new revision.
    for f in (0..1_000).step_by(10) {
        env.write(
            &format!("team-{}/file-{f}.yaml", f % 10),
            docs(&[
                installation(&format!("inst-{f}"), &[], "bp2"),
                dataobject(&format!("obj-{f}-1"), "changed"),
            ]),
        );
    }
    let started = Instant::now();
    let changed = ingestor.rescan().await.unwrap();
    let partial = started.elapsed();
    assert_eq!(
        (
            changed.applied,
            changed.objects_updated,
            changed.objects_deleted
        ),
        (100, 200, 800)
    );
    eprintln!(
        "ingest of 10,000 objects in 1,000 files: {initial:?} (scan report {:?}); unchanged rescan: {unchanged:?}; 100 changed files: {partial:?}",
        report.duration
    );
}
