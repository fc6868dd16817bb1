//! End-to-end: `render` is exactly what the daemon does. Every acceptance scenario's mock
//! variant (step 1) runs on a daemon; then every installation it holds (roots and
//! subinstallations) is rendered offline from the objects the daemon holds (its DataObjects,
//! Targets, ConfigMaps and Secrets written to a folder for `--imports-from`), and the deploy
//! items `render` prints are compared with those of the installation's Execution.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use landscaper_e2e::acceptance::{Res, Scenario, finished, name_of};
use landscaper_e2e::binary;
use serde_json::{Map, Value, json};

/// Operations of the daemon's `Init` that `render` runs too (import resolution and
/// construction, import executions, deploy and subinstallation executions).
const RENDERED_OPERATIONS: &[&str] = &[
    "ImportsSatisfied",
    "ConstructImports",
    "CreateImportsAndSubobjects",
];

/// The fields of a deploy item both sides hold alike. `target` is left out: `render` prints the
/// template's `target: {import: ...}`, the Execution holds the resolved Target reference.
fn comparable(item: &Value) -> Value {
    let mut m = Map::new();
    for k in [
        "name",
        "type",
        "config",
        "dependsOn",
        "timeout",
        "labels",
        "updateOnChangeOnly",
        "onDelete",
    ] {
        if let Some(v) = item.get(k) {
            m.insert(k.to_string(), v.clone());
        }
    }
    Value::Object(m)
}

/// An object as a manifest holds it: type, name, namespace, labels, annotations and content.
fn as_manifest(o: &Value) -> Value {
    let mut out = Map::new();
    for (k, v) in o.as_object().into_iter().flatten() {
        match k.as_str() {
            "status" => {}
            "metadata" => {
                let mut meta = Map::new();
                for f in ["name", "namespace", "labels", "annotations"] {
                    if let Some(x) = v.get(f) {
                        meta.insert(f.to_string(), x.clone());
                    }
                }
                out.insert(k.clone(), Value::Object(meta));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// Waits until every installation's job has finished (and stays so for a moment).
fn wait_until_finished(s: &Scenario, timeout: Duration) -> bool {
    let start = Instant::now();
    let mut calm = 0;
    while start.elapsed() < timeout {
        let all = s.list(Res::Installation, None);
        if !all.is_empty() && all.iter().all(finished) {
            calm += 1;
            if calm >= 3 {
                return true;
            }
        } else {
            calm = 0;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

fn write_docs(path: &Path, docs: &[Value]) {
    let text: Vec<String> = docs
        .iter()
        .map(|d| serde_json::to_string(d).unwrap())
        .collect();
    std::fs::write(path, text.join("\n---\n")).unwrap();
}

#[test]
fn render_gives_every_installation_of_the_scenarios_the_daemons_deploy_items() {
    let Some(acceptance) = landscaper_e2e::acceptance_dir() else {
        println!("SKIP: no acceptance scenarios beside this checkout");
        return;
    };
    let mut ids: Vec<String> = std::fs::read_dir(&acceptance)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("mock").join("step-1").is_dir())
        .filter_map(|p| {
            let name = p.file_name()?.to_string_lossy().to_string();
            Some(name.split('-').next()?.to_string())
        })
        .collect();
    ids.sort();
    let tmp = tempfile::tempdir().unwrap();
    let (mut compared, mut mismatches, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
    for id in ids {
        let Some(mut s) = Scenario::start(&id, "mock") else {
            continue;
        };
        s.apply_step(1);
        if !wait_until_finished(&s, Duration::from_secs(60)) {
            skipped.push(format!("{id}: installations still running after 60s"));
            continue;
        }
        let dir = tmp.path().join(&id);
        let objects = dir.join("objects");
        std::fs::create_dir_all(&objects).unwrap();
        let mut docs = Vec::new();
        for res in [Res::DataObject, Res::Target, Res::ConfigMap, Res::Secret] {
            docs.extend(s.list(res, None).iter().map(as_manifest));
        }
        write_docs(&objects.join("objects.yaml"), &docs);
        for inst in s.list(Res::Installation, None) {
            let name = name_of(&inst).to_string();
            let label = format!("{id}/{name}");
            if inst.pointer("/spec/blueprint/inline").is_none() {
                skipped.push(format!("{label}: no inline blueprint"));
                continue;
            }
            let execution = s.execution_of(&inst);
            let phase = inst["status"]["phase"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let operation = inst["status"]["lastError"]["operation"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let file = dir.join(format!("installation-{name}.json"));
            std::fs::write(&file, serde_json::to_vec(&as_manifest(&inst)).unwrap()).unwrap();
            let o = Command::new(binary())
                .arg("render")
                .arg(&file)
                .arg("--imports-from")
                .arg(&objects)
                .args(["-o", "json"])
                .output()
                .unwrap();
            if execution.is_none() && phase == "Failed" {
                // Failed before it had deploy items: where the daemon failed on what `render`
                // does too (imports, import executions, templates), `render` fails as well.
                if !RENDERED_OPERATIONS.contains(&operation.as_str()) {
                    skipped.push(format!(
                        "{label}: failed in {operation}, which render does not run"
                    ));
                } else if o.status.success() {
                    mismatches.push(format!(
                        "{label}: the daemon failed in {operation}, render succeeded"
                    ));
                } else {
                    compared.push(format!("{label}: fails in {operation} as the daemon does"));
                }
                continue;
            }
            if execution.is_none() && phase != "Succeeded" {
                skipped.push(format!("{label}: no Execution (phase {phase})"));
                continue;
            }
            if !o.status.success() {
                mismatches.push(format!(
                    "{label}: render failed where the daemon rendered: {}",
                    String::from_utf8_lossy(&o.stderr)
                ));
                continue;
            }
            // Succeeded without an Execution: no deploy items.
            let execution = execution.unwrap_or(json!({}));
            let rendered: Value = serde_json::from_slice(&o.stdout).unwrap_or(json!({}));
            let items = |v: &Value| -> Vec<Value> {
                v.as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .map(comparable)
                    .collect()
            };
            let got = items(&rendered["deployItems"]);
            let want = items(&execution["spec"]["deployItems"]);
            if got == want {
                compared.push(format!("{label}: {} deploy item(s)", got.len()));
            } else {
                mismatches.push(format!(
                    "{label}: deploy items differ\n render: {}\n daemon: {}",
                    serde_json::to_string(&got).unwrap(),
                    serde_json::to_string(&want).unwrap()
                ));
            }
        }
    }
    println!(
        "render vs daemon: {} compared, {} mismatched, {} not comparable",
        compared.len(),
        mismatches.len(),
        skipped.len()
    );
    for c in &compared {
        println!("  same: {c}");
    }
    for c in &skipped {
        println!("  not comparable: {c}");
    }
    assert!(
        mismatches.is_empty(),
        "mismatches:\n{}",
        mismatches.join("\n\n")
    );
    assert!(
        compared.len() >= 10,
        "too few installations compared: {compared:?}"
    );
}
