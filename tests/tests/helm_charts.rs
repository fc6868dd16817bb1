//! End-to-end: `landscaper-appliance render chart` against the Helm chart corpus of
//! `../shared/acceptance/helm-charts` (real charts, the exact stdout of `helm template` 3.19),
//! judged by the corpus' own `check.py` with its default command. Every case must pass, and
//! every rendering case must be byte-exact (real Helm is on all 53). Without `../shared` (or
//! Python with PyYAML) the test prints a SKIP line.

use std::path::Path;
use std::process::Command;

use landscaper_e2e::{acceptance_dir, binary};

/// Cases and rendering cases of the corpus, and how many must be byte-exact.
const CASES: usize = 59;
const RENDERING_CASES: usize = 53;
const MIN_BYTE_EXACT: usize = 53;

fn python_with_yaml() -> bool {
    Command::new("python3")
        .args(["-c", "import yaml"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `byte-exact: X/Y` and `helm: N passed, M failed` of check.py's summary.
fn figures(out: &str) -> Option<(usize, usize, usize, usize)> {
    let exact = out.lines().find_map(|l| l.strip_prefix("byte-exact: "))?;
    let (x, rest) = exact.split_once('/')?;
    let y = rest.split_whitespace().next()?;
    let last = out.lines().rev().find_map(|l| l.strip_prefix("helm: "))?;
    let mut words = last.split_whitespace();
    let passed = words.next()?.parse().ok()?;
    let failed = words.nth(1)?.parse().ok()?;
    Some((x.parse().ok()?, y.parse().ok()?, passed, failed))
}

#[test]
fn render_chart_matches_helm_template_on_the_corpus() {
    let Some(dir) = acceptance_dir().map(|d| d.join("helm-charts")) else {
        println!("SKIP: ../shared/acceptance/helm-charts not present");
        return;
    };
    if !Path::new(&dir).join("check.py").is_file() || !python_with_yaml() {
        println!("SKIP: helm-charts/check.py or python3 with PyYAML not available");
        return;
    }
    let out = Command::new("python3")
        .arg(dir.join("check.py"))
        .arg(binary())
        .args(["-j", "2", "-v"])
        .current_dir(&dir)
        .output()
        .expect("run check.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let Some((exact, rendering, passed, failed)) = figures(&stdout) else {
        panic!("no summary from check.py:\n{stdout}\n{stderr}");
    };
    println!("byte-exact: {exact}/{rendering}; {passed} passed, {failed} failed");
    assert_eq!(rendering, RENDERING_CASES, "{stdout}");
    assert_eq!((passed, failed), (CASES, 0), "{stdout}\n{stderr}");
    assert!(
        exact >= MIN_BYTE_EXACT,
        "only {exact} byte-exact:\n{stdout}"
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
}

#[test]
fn render_chart_refuses_remote_sources_and_reports_missing_charts() {
    let o = Command::new(binary())
        .args([
            "render",
            "chart",
            "oci://registry.example/charts/x",
            "--release",
            "r",
        ])
        .output()
        .expect("run render chart");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("Error: ") && err.contains("not supported"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    let o = Command::new(binary())
        .args(["render", "chart", "/nonexistent/chart", "--release", "r"])
        .output()
        .expect("run render chart");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("/nonexistent/chart"), "{err}");
}

/// Where Helm fails, `render chart` fails with Helm's exact message (stderr of the corpus'
/// `expected.err`).
#[test]
fn render_chart_fails_with_helms_messages() {
    let Some(dir) = acceptance_dir().map(|d| d.join("helm-charts")) else {
        println!("SKIP: ../shared/acceptance/helm-charts not present");
        return;
    };
    let Ok(cases) = std::fs::read_dir(dir.join("cases")) else {
        println!("SKIP: helm-charts/cases not readable");
        return;
    };
    let mut checked = 0;
    for case in cases.flatten() {
        let path = case.path();
        let Ok(expected) = std::fs::read_to_string(path.join("expected.err")) else {
            continue;
        };
        let name = case.file_name().to_string_lossy().into_owned();
        let chart = std::fs::read_to_string(path.join("chart.txt")).unwrap();
        let args = std::fs::read_to_string(path.join("args.txt")).unwrap();
        let (release, rest) = args.trim().split_once(' ').unwrap();
        // args.txt is one shell-quoted line: let the shell split it, as check.py does.
        let script = format!(
            "\"$0\" render chart charts/{} --release {release} -f cases/{name}/values.yaml {rest}",
            chart.trim()
        );
        let out = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .arg(binary())
            .current_dir(&dir)
            .output()
            .expect("run render chart");
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), expected, "{name}");
        assert!(out.stdout.is_empty(), "{name}");
        checked += 1;
    }
    assert_eq!(checked, CASES - RENDERING_CASES);
}
