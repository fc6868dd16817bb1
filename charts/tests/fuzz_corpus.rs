//! Runs the `chart` fuzz target's check (`landscaper_charts::fuzzing::chart`) over every
//! committed seed (`fuzz/corpus/chart/`) and minimised crash (`fuzz/regressions/chart-*`).

use std::path::{Path, PathBuf};
use std::time::Instant;

fn inputs() -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut files = Vec::new();
    if let Ok(dir) = std::fs::read_dir(fuzz.join("corpus/chart")) {
        files.extend(dir.flatten().map(|e| e.path()).filter(|p| p.is_file()));
    }
    if let Ok(dir) = std::fs::read_dir(fuzz.join("regressions")) {
        files.extend(
            dir.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("chart-"))
                .map(|e| e.path()),
        );
    }
    files.sort();
    files
}

#[test]
fn chart_seeds_and_regressions_do_not_panic() {
    let files = inputs();
    assert!(
        files.iter().any(|p| p.to_string_lossy().contains("seed-")),
        "no seeds for the chart target"
    );
    for file in files {
        let data = std::fs::read(&file).unwrap();
        let start = Instant::now();
        landscaper_charts::fuzzing::chart(&data);
        assert!(start.elapsed().as_secs() < 20, "{}", file.display());
    }
}
