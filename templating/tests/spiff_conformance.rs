//! Runs the spiff conformance corpus (`shared/acceptance/spiff-conformance/cases`) through the
//! engine the way `check.py` does, with stubs and feature flags enabled:
//!
//! * `expected.yaml`: the evaluation must succeed and equal the expected document as data (maps
//!   unordered, lists ordered, ints and floats by value, everything else strictly);
//! * `expected.err`: the evaluation must fail.
//!
//! Every case of tier `landscaper` must pass; for tier `extended` a minimum count is asserted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use landscaper_templating::spiff::{SpiffOptions, evaluate_yaml, parse_yaml};

/// Extended-tier cases known to pass (regression guard).
const MIN_EXTENDED: usize = 507;

fn corpus() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/acceptance/spiff-conformance");
    p.join("cases").is_dir().then_some(p)
}

struct Meta {
    tier: String,
    feature: String,
    features: Vec<String>,
}

fn read_meta(d: &Path) -> Meta {
    let text = std::fs::read_to_string(d.join("meta.txt")).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(':')).collect();
    let mut m = Meta {
        tier: "extended".into(),
        feature: "unknown".into(),
        features: Vec::new(),
    };
    if let Some(first) = lines.first() {
        m.feature = first.split(':').next().unwrap_or("").trim().to_string();
    }
    for l in lines.iter().skip(1) {
        let (k, v) = l.split_once(':').unwrap();
        let (k, v) = (k.trim(), v.trim());
        match k {
            "tier" => m.tier = v.to_string(),
            "needs" => {
                if let Some(f) = v.strip_prefix("feature:") {
                    m.features.push(f.to_string());
                }
            }
            _ => {}
        }
    }
    m
}

fn stub_files(d: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if d.join("stub.yaml").exists() {
        files.push(d.join("stub.yaml"));
        let mut i = 2;
        while d.join(format!("stub{i}.yaml")).exists() {
            files.push(d.join(format!("stub{i}.yaml")));
            i += 1;
        }
    }
    files
}

fn num(v: &serde_json::Value) -> Option<f64> {
    v.as_f64()
}

/// check.py's `equal`
fn equal(a: &serde_json::Value, b: &serde_json::Value, path: &str) -> Option<String> {
    use serde_json::Value as J;
    match (a, b) {
        (J::Bool(x), J::Bool(y)) if x == y => None,
        (J::Number(_), J::Number(_)) => {
            if num(a) == num(b) {
                None
            } else {
                Some(format!("{path}: {a} != {b}"))
            }
        }
        (J::Object(x), J::Object(y)) => {
            let kx: Vec<_> = x.keys().collect();
            let ky: Vec<_> = y.keys().collect();
            if kx != ky {
                return Some(format!("{path}: keys {kx:?} != {ky:?}"));
            }
            x.iter()
                .find_map(|(k, v)| equal(v, &y[k], &format!("{path}.{k}")))
        }
        (J::Array(x), J::Array(y)) => {
            if x.len() != y.len() {
                return Some(format!("{path}: list length {} != {}", x.len(), y.len()));
            }
            x.iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| equal(p, q, &format!("{path}[{i}]")))
        }
        (J::String(x), J::String(y)) if x == y => None,
        (J::Null, J::Null) => None,
        _ => Some(format!("{path}: {a} != {b}")),
    }
}

fn run_case(d: &Path, meta: &Meta) -> Result<(), String> {
    let template = std::fs::read_to_string(d.join("template.yaml")).map_err(|e| e.to_string())?;
    let stubs: Vec<String> = stub_files(d)
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let stub_refs: Vec<&str> = stubs.iter().map(|s| s.as_str()).collect();
    let bindings = match std::fs::read_to_string(d.join("values.yaml")) {
        Ok(v) => match parse_yaml(&v).map_err(|e| e.to_string())? {
            serde_json::Value::Object(m) => m,
            _ => serde_json::Map::new(),
        },
        Err(_) => serde_json::Map::new(),
    };
    let options = SpiffOptions {
        stack_size: 0,
        ..Default::default()
    }
    .with_features(&meta.features.join(","));
    let result = evaluate_yaml(&template, &stub_refs, &bindings, &options);
    if d.join("expected.err").exists() {
        return match result {
            Err(_) => Ok(()),
            Ok(v) => Err(format!("expected a failure, got {v}")),
        };
    }
    let got = result.map_err(|e| format!("error: {e}"))?;
    let exp_text = std::fs::read_to_string(d.join("expected.yaml")).map_err(|e| e.to_string())?;
    let exp = parse_yaml(&exp_text).map_err(|e| e.to_string())?;
    match equal(&exp, &got, "$") {
        None => Ok(()),
        Some(diff) => Err(format!("mismatch at {diff}")),
    }
}

#[test]
fn spiff_conformance_corpus() {
    let Some(root) = corpus() else {
        println!("SKIP: spiff conformance corpus not found");
        return;
    };
    let mut names: Vec<_> = std::fs::read_dir(root.join("cases"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();

    // run on a thread with a large stack (deeply recursive templates)
    let root2 = root.clone();
    let results = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let mut results = Vec::new();
            for name in names {
                let d = root2.join("cases").join(&name);
                let meta = read_meta(&d);
                let r = run_case(&d, &meta);
                results.push((name, meta, r));
            }
            results
        })
        .unwrap()
        .join()
        .unwrap();

    let mut per_tier: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut per_feature: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    let mut failed_landscaper = Vec::new();
    let mut failed_extended = Vec::new();
    for (name, meta, r) in &results {
        let t = per_tier.entry(meta.tier.clone()).or_default();
        let f = per_feature
            .entry((meta.tier.clone(), meta.feature.clone()))
            .or_default();
        t.1 += 1;
        f.1 += 1;
        match r {
            Ok(()) => {
                t.0 += 1;
                f.0 += 1;
            }
            Err(e) => {
                let line = format!("{name} [{}/{}]: {e}", meta.tier, meta.feature);
                if meta.tier == "landscaper" {
                    failed_landscaper.push(line);
                } else {
                    failed_extended.push(line);
                }
            }
        }
    }
    for ((tier, feature), (p, t)) in &per_feature {
        if p != t {
            println!("{tier:<12} {feature:<24} {p:>4}/{t:<4}");
        }
    }
    for (tier, (p, t)) in &per_tier {
        println!("tier {tier:<10} {p}/{t} passed");
    }
    for l in &failed_extended {
        println!("FAIL {}", l.chars().take(300).collect::<String>());
    }
    for l in &failed_landscaper {
        println!("FAIL {}", l.chars().take(600).collect::<String>());
    }
    let passed: usize = per_tier.values().map(|v| v.0).sum();
    let total: usize = per_tier.values().map(|v| v.1).sum();
    println!("spiff: {} passed, {} failed", passed, total - passed);
    assert!(
        failed_landscaper.is_empty(),
        "{} landscaper-tier cases failed",
        failed_landscaper.len()
    );
    let ext = per_tier.get("extended").map(|v| v.0).unwrap_or(0);
    assert!(
        ext >= MIN_EXTENDED,
        "extended tier regressed: {ext} < {MIN_EXTENDED}"
    );
}
