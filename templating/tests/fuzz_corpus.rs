//! Runs the fuzz targets' checks (`landscaper_templating::fuzzing`) over every committed seed
//! (`fuzz/corpus/<target>/`) and minimised crash (`fuzz/regressions/<target>-*`), so that the
//! ordinary test suite "runs the fuzz targets briefly" without cargo-fuzz's instrumented build.

use std::path::{Path, PathBuf};
use std::time::Instant;

use landscaper_templating::fuzzing;

fn inputs(target: &str) -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut files = Vec::new();
    if let Ok(dir) = std::fs::read_dir(fuzz.join("corpus").join(target)) {
        files.extend(dir.flatten().map(|e| e.path()).filter(|p| p.is_file()));
    }
    if let Ok(dir) = std::fs::read_dir(fuzz.join("regressions")) {
        let prefix = format!("{target}-");
        files.extend(
            dir.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path()),
        );
    }
    files.sort();
    files
}

fn run(target: &str, check: fn(&[u8])) {
    let files = inputs(target);
    assert!(
        files.iter().any(|p| p.to_string_lossy().contains("seed-")),
        "no seeds for {target}"
    );
    for file in files {
        let data = std::fs::read(&file).unwrap();
        let start = Instant::now();
        check(&data);
        let took = start.elapsed();
        // The budget's wall time is 2 s; a debug build gets some slack.
        assert!(took.as_secs() < 10, "{}: {took:?}", file.display());
    }
}

#[test]
fn gotemplate_corpus() {
    run("gotemplate", fuzzing::gotemplate);
}

#[test]
fn spiff_corpus() {
    run("spiff", fuzzing::spiff);
}

#[test]
fn blueprint_corpus() {
    run("blueprint", fuzzing::blueprint);
}
