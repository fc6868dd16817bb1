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

/// A cheap mutation fuzzer over the seeds, without cargo-fuzz's instrumented build:
/// `cargo test -p landscaper-charts --test fuzz_corpus -- --ignored` (CHART_FUZZ_SECS, default
/// 30 s; CHART_FUZZ_SEED). Byte flips and splices of chart and template tokens; nothing may panic.
#[test]
#[ignore = "runs for CHART_FUZZ_SECS seconds"]
fn mutated_seeds_do_not_panic() {
    const TOKENS: &[&str] = &[
        "{{",
        "}}",
        "{{- ",
        " -}}",
        ".Values",
        ".Files.Glob \"*\"",
        ".Files.Get \"files/a.txt\"",
        "include \"n\" .",
        "tpl .Values.x .",
        "template \"n\"",
        "required \"x\" nil",
        "---\n",
        "helm.sh/hook: test\n",
        "dependencies:\n- name: sub\n  alias: a\n",
        "condition: x.y\n",
        "import-values:\n- child: a\n  parent: b\n",
        "tags: [t]\n",
        "==> charts/sub/Chart.yaml\n",
        "==> templates/z.yaml\n",
        "==> values.schema.json\n{\"type\":\"object\",\"required\":[\"q\"]}\n",
        "global:\n  g: null\n",
        "kubeVersion: \">=1.50\"\n",
        "type: library\n",
        "apiVersion: v1\n",
        "range $k, $v := .Files.Glob \"**\"",
        "{{ define \"n\" }}{{ include \"n\" . }}{{ end }}",
        "null",
        "~",
        "[",
        "{",
        "&a",
        "*a",
        "<<: *a",
        "\u{feff}",
        "\\",
        "..",
        "/",
    ];
    let secs: u64 = std::env::var("CHART_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let seeds: Vec<Vec<u8>> = inputs()
        .iter()
        .filter(|p| !p.to_string_lossy().ends_with(".tgz"))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let mut state: u64 = std::env::var("CHART_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x2545_f491_4f6c_dd1d)
        | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let deadline = Instant::now() + std::time::Duration::from_secs(secs);
    let mut runs = 0u64;
    while Instant::now() < deadline {
        let mut data = seeds[(next() % seeds.len() as u64) as usize].clone();
        for _ in 0..1 + next() % 6 {
            let at = (next() % (data.len() as u64 + 1)) as usize;
            match next() % 3 {
                0 if !data.is_empty() => {
                    let i = at.min(data.len() - 1);
                    data[i] ^= 1 << (next() % 8);
                }
                1 => {
                    let t = TOKENS[(next() % TOKENS.len() as u64) as usize];
                    data.splice(at..at, t.bytes());
                }
                _ => {
                    let end = (at + (next() % 16) as usize).min(data.len());
                    data.drain(at..end);
                }
            }
        }
        landscaper_charts::fuzzing::chart(&data);
        runs += 1;
    }
    println!("{runs} mutated charts rendered without a panic");
}
