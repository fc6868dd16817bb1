//! `render chart` against the real `helm template` over every rendering case of the Helm chart
//! corpus in `../shared/acceptance/helm-charts` (cases with an `expected.yaml`), process against
//! process, side by side in one run; then the in-process render time of the largest chart
//! (kube-prometheus-stack). Prints SKIP lines when the corpus or helm is missing.
//!
//! `cargo bench -p landscaper-appliance --bench charts` (helm from `$HELM`, `bin/helm` or `PATH`;
//! `CHART_BENCH_ROUNDS` rounds per case, default 3).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Parser;
use landscaper_appliance::commands::render_chart::{RenderChartArgs, run};

#[derive(Parser)]
struct Wrapper {
    #[command(flatten)]
    args: RenderChartArgs,
}

struct Case {
    name: String,
    chart: String,
    release: String,
    /// args.txt after the release name (`--namespace NS` included).
    args: Vec<String>,
}

fn corpus() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/acceptance/helm-charts");
    dir.join("check.py")
        .exists()
        .then(|| dir.canonicalize().unwrap_or(dir))
}

fn helm() -> Option<PathBuf> {
    if let Ok(h) = std::env::var("HELM") {
        return Some(PathBuf::from(h));
    }
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bin/helm");
    if local.exists() {
        return Some(local);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("helm"))
            .find(|p| p.exists())
    })
}

fn cases(corpus: &Path) -> Vec<Case> {
    let mut out = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(corpus.join("cases"))
        .expect("cases folder")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
        .collect();
    names.sort();
    for name in names {
        let dir = corpus.join("cases").join(&name);
        if !dir.join("expected.yaml").exists() {
            continue; // a case where helm fails: not a rendering case
        }
        let chart = std::fs::read_to_string(dir.join("chart.txt"))
            .expect("chart.txt")
            .trim()
            .to_string();
        let words = shell_words(&std::fs::read_to_string(dir.join("args.txt")).expect("args"));
        let (release, args) = words.split_first().expect("a release name");
        out.push(Case {
            name,
            chart,
            release: release.clone(),
            args: args.to_vec(),
        });
    }
    out
}

/// args.txt is written for a shell; the corpus quotes with single or double quotes only.
fn shell_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in text.trim().chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, c) => word.push(c),
        }
    }
    if started || !word.is_empty() {
        words.push(word);
    }
    words
}

/// Our command line: `render chart CHART --release R -f values.yaml ARGS`.
fn ours(corpus: &Path, case: &Case) -> Vec<String> {
    let mut v = vec![
        "render".to_string(),
        "chart".to_string(),
        format!("charts/{}", case.chart),
        "--release".to_string(),
        case.release.clone(),
        "-f".to_string(),
        corpus
            .join("cases")
            .join(&case.name)
            .join("values.yaml")
            .display()
            .to_string(),
    ];
    v.extend(case.args.iter().cloned());
    v
}

/// Helm's: `template R CHART -f values.yaml ARGS`.
fn helms(corpus: &Path, case: &Case) -> Vec<String> {
    let mut v = vec![
        "template".to_string(),
        case.release.clone(),
        format!("charts/{}", case.chart),
        "-f".to_string(),
        corpus
            .join("cases")
            .join(&case.name)
            .join("values.yaml")
            .display()
            .to_string(),
    ];
    v.extend(case.args.iter().cloned());
    v
}

fn time_process(program: &Path, args: &[String], dir: &Path) -> (Duration, bool) {
    let start = Instant::now();
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run the renderer");
    (start.elapsed(), output.status.success())
}

fn main() {
    let Some(corpus) = corpus() else {
        println!("SKIP charts bench: ../shared/acceptance/helm-charts not found");
        return;
    };
    let rounds: u32 = std::env::var("CHART_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let ours_bin = PathBuf::from(env!("CARGO_BIN_EXE_landscaper-appliance"));
    let helm = helm();
    let cases = cases(&corpus);
    println!(
        "{} rendering cases, {rounds} round(s) each, one process per render",
        cases.len()
    );
    let mut total_ours = Duration::ZERO;
    let mut total_helm = Duration::ZERO;
    let mut failures = Vec::new();
    for case in &cases {
        let mut case_ours = Duration::ZERO;
        let mut case_helm = Duration::ZERO;
        for _ in 0..rounds {
            let (t, ok) = time_process(&ours_bin, &ours(&corpus, case), &corpus);
            if !ok {
                failures.push(case.name.clone());
            }
            case_ours += t;
            if let Some(h) = &helm {
                let (t, _) = time_process(h, &helms(&corpus, case), &corpus);
                case_helm += t;
            }
        }
        total_ours += case_ours;
        total_helm += case_helm;
        if helm.is_some() {
            println!(
                "  {:<45} render chart {:>8.1} ms   helm template {:>8.1} ms",
                case.name,
                case_ours.as_secs_f64() * 1e3 / f64::from(rounds),
                case_helm.as_secs_f64() * 1e3 / f64::from(rounds)
            );
        }
    }
    println!(
        "render chart: {:.2} s in all ({:.1} ms per render)",
        total_ours.as_secs_f64(),
        total_ours.as_secs_f64() * 1e3 / (cases.len() as f64 * f64::from(rounds))
    );
    match &helm {
        Some(h) => println!(
            "helm template ({}): {:.2} s in all; render chart is {:.1}x faster",
            h.display(),
            total_helm.as_secs_f64(),
            total_helm.as_secs_f64() / total_ours.as_secs_f64()
        ),
        None => println!("SKIP helm side: no helm binary ($HELM, bin/helm or PATH)"),
    }
    if !failures.is_empty() {
        println!("render chart FAILED on: {failures:?}");
    }

    // In-process: the largest chart of the corpus, loaded, rendered and printed.
    if let Some(case) = cases
        .iter()
        .find(|c| c.name == "kube-prometheus-stack-default")
    {
        std::env::set_current_dir(&corpus).expect("chdir into the corpus");
        let mut argv = vec!["render-chart".to_string()];
        argv.extend(ours(&corpus, case).into_iter().skip(2));
        let args = Wrapper::parse_from(argv).args;
        let mut best = Duration::MAX;
        let mut size = 0;
        for _ in 0..5 {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let start = Instant::now();
            assert!(
                run(&args, &mut out, &mut err),
                "{}",
                String::from_utf8_lossy(&err)
            );
            best = best.min(start.elapsed());
            size = out.len();
        }
        println!(
            "in-process render of kube-prometheus-stack-default: {:.1} ms (best of 5, {} KiB of output)",
            best.as_secs_f64() * 1e3,
            size / 1024
        );
    }
}
