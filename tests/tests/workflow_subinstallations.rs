//! End-to-end: workflow conditions on subinstallations (issue 19), real daemon, mock deployer.
//!
//! A feature flag (a DataObject imported by the root Installation) is the reconcile
//! precondition of subinstallation `a`; `b` imports an export of `a`, `c` one of `b`; `d` is
//! independent. Flag on: all four exist. Flag off: `c`, `b`, `a` are deleted in that order
//! (reverse data flow), `d` stays, the root succeeds with the condition `False` in its
//! `status.conditions`. Flag on again: the subtree comes back.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use landscaper_e2e::{Daemon, eventually};
use serde_json::Value;

const LS: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/wf";
const TIMEOUT: Duration = Duration::from_secs(120);

fn indent(s: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    s.lines().map(|l| format!("{pad}{l}\n")).collect()
}

/// A mock subinstallation blueprint exporting `out` (and importing an optional `in`).
const SUB_BLUEPRINT: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
jsonSchemaVersion: "https://json-schema.org/draft/2019-09/schema"
imports:
  - name: in
    type: data
    required: false
    schema: {type: string}
  - name: in2
    type: data
    required: false
    schema: {type: string}
exports:
  - name: out
    type: data
    schema: {type: string}
deployExecutions:
  - name: default
    type: GoTemplate
    template: |
      deployItems:
        - name: item
          type: landscaper.gardener.cloud/mock
          config:
            apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
            kind: ProviderConfiguration
            phase: PHASE
            export:
              out: v
exportExecutions:
  - name: default
    type: GoTemplate
    template: |
      exports:
        out: {{ index .values.deployitems "item" "out" | quote }}
"#;

fn sub(name: &str, import: Option<&str>, appliance: &str) -> String {
    sub_with(name, import.as_slice(), "Succeeded", appliance)
}

fn sub_with(name: &str, imports: &[&str], phase: &str, appliance: &str) -> String {
    sub_from(
        name,
        imports,
        &SUB_BLUEPRINT.replace("PHASE", phase),
        appliance,
    )
}

fn sub_from(name: &str, imports: &[&str], blueprint: &str, appliance: &str) -> String {
    let imports = if imports.is_empty() {
        String::new()
    } else {
        let mut s = "imports:\n  data:\n".to_string();
        for (n, i) in ["in", "in2"].iter().zip(imports) {
            s.push_str(&format!("    - name: {n}\n      dataRef: {i}\n"));
        }
        s
    };
    format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: InstallationTemplate\nname: {name}\n{appliance}{imports}exports:\n  data:\n    - name: out\n      dataRef: x{name}\nblueprint:\n  filesystem:\n    blueprint.yaml: |\n{}",
        indent(blueprint, 6)
    )
}

fn root() -> String {
    root_with(
        "",
        &flag_subs(),
        "  - name: flag\n    type: data\n    schema: {type: boolean}\n",
        "      - name: flag\n        dataRef: flag\n",
    )
}

fn flag_subs() -> Vec<(&'static str, String)> {
    let subs = [
        sub(
            "a",
            None,
            "appliance:\n  reconcilePrecondition: \"imports.flag == true\"\n",
        ),
        sub("b", Some("xa"), ""),
        sub("c", Some("xb"), ""),
        sub("d", None, ""),
    ];
    ["a", "b", "c", "d"].into_iter().zip(subs).collect()
}

/// The root Installation with `annotations` (indented lines), the subinstallations, the
/// blueprint's imports and the Installation's data imports.
fn root_with(
    annotations: &str,
    subs: &[(&str, String)],
    bp_imports: &str,
    imports: &str,
) -> String {
    let mut files = String::new();
    let mut list = String::new();
    for (name, s) in subs {
        list.push_str(&format!("  - file: /{name}.yaml\n"));
        files.push_str(&format!("{name}.yaml: |\n{}", indent(s, 2)));
    }
    let blueprint = format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\njsonSchemaVersion: \"https://json-schema.org/draft/2019-09/schema\"\nimports:\n{bp_imports}subinstallations:\n{list}"
    );
    format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: root
  namespace: wf
  annotations:
    landscaper.gardener.cloud/operation: reconcile
{annotations}spec:
  imports:
    data:
{imports}  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
{}{}",
        indent(&blueprint, 10),
        indent(&files, 8)
    )
}

fn flag(on: bool) -> String {
    format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata: {{name: flag, namespace: wf}}\ndata: {on}\n"
    )
}

fn reconcile_root(daemon: &Daemon) {
    let token = daemon.data.join("api-token");
    let token = token.to_string_lossy();
    let out = daemon.cli(&["reconcile", "root", "-n", "wf", "--token-file", &token]);
    assert!(out.status.success(), "{out:?}");
}

/// Template names of the existing subinstallations of `root`; `None` when the list could not
/// be read.
fn try_subs(daemon: &Daemon) -> Option<BTreeSet<String>> {
    let list = daemon.get_json(&format!("{LS}/installations"))?;
    Some(
        list["items"]
            .as_array()?
            .iter()
            .filter_map(|i| {
                i["metadata"]["annotations"]["landscaper.gardener.cloud/subinstallation-name"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect(),
    )
}

fn installations(daemon: &Daemon) -> Vec<Value> {
    daemon
        .get_json(&format!("{LS}/installations"))
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
}

fn subs(daemon: &Daemon) -> BTreeSet<String> {
    try_subs(daemon).unwrap_or_default()
}

fn root_object(daemon: &Daemon) -> Option<Value> {
    daemon.get_json(&format!("{LS}/installations/root"))
}

fn condition(o: &Value, ty: &str) -> Option<Value> {
    o["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
        .cloned()
}

fn succeeded_with(daemon: &Daemon, status: &str) -> Option<Value> {
    root_object(daemon).filter(|r| {
        r["status"]["phase"] == "Succeeded"
            && r["status"]["jobID"] == r["status"]["jobIDFinished"]
            && condition(r, "a/ReconcilePrecondition").is_some_and(|c| c["status"] == status)
    })
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_feature_flag_turns_a_subinstallation_subtree_on_off_in_reverse_order_and_on_again() {
    let daemon = Daemon::start();
    daemon.write(
        "00-ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: wf}\n",
    );
    daemon.write("10-flag.yaml", &flag(true));
    daemon.write("20-root.yaml", &root());

    let r = eventually(TIMEOUT, "root succeeded with the flag on", || {
        succeeded_with(&daemon, "True")
    });
    assert_eq!(subs(&daemon), set(&["a", "b", "c", "d"]), "{r}");
    let c = condition(&r, "a/ReconcilePrecondition").unwrap();
    assert_eq!(c["reason"], "ConditionMet", "{c}");

    // Off: the subtree goes, successors first.
    daemon.write("10-flag.yaml", &flag(false));
    eventually(TIMEOUT, "the flag off is stored", || {
        daemon
            .get_json(&format!("{LS}/dataobjects/flag"))
            .filter(|d| d["data"] == false)
    });
    reconcile_root(&daemon);
    let mut order: Vec<String> = Vec::new();
    let start = Instant::now();
    while start.elapsed() < TIMEOUT && order.len() < 3 {
        // A failed read is skipped (not taken for "all gone").
        if let Some(now) = try_subs(&daemon) {
            for name in ["a", "b", "c"] {
                if !now.contains(name) && !order.iter().any(|o| o == name) {
                    order.push(name.to_string());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(order, ["c", "b", "a"], "deleted in reverse data-flow order");
    let r = eventually(TIMEOUT, "root succeeded with the flag off", || {
        succeeded_with(&daemon, "False")
    });
    let c = condition(&r, "a/ReconcilePrecondition").unwrap();
    assert_eq!(c["reason"], "ConditionNotMet", "{c}");
    assert!(
        c["message"]
            .as_str()
            .unwrap_or_default()
            .contains("imports.flag == true"),
        "{c}"
    );
    assert_eq!(subs(&daemon), set(&["d"]));

    // describe shows the condition.
    let out = daemon.cli(&["describe", "installation", "root", "-n", "wf"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Conditions:"), "{text}");
    assert!(text.contains("a/ReconcilePrecondition"), "{text}");
    assert!(text.contains("ConditionNotMet"), "{text}");

    // tree marks the skipped subtree on the root.
    let out = daemon.cli(&["tree", "root", "-n", "wf"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("! a: skipped: precondition not met"),
        "{text}"
    );

    // On again: the subtree comes back.
    daemon.write("10-flag.yaml", &flag(true));
    eventually(TIMEOUT, "the flag on is stored", || {
        daemon
            .get_json(&format!("{LS}/dataobjects/flag"))
            .filter(|d| d["data"] == true)
    });
    reconcile_root(&daemon);
    eventually(TIMEOUT, "root succeeded with the flag on again", || {
        succeeded_with(&daemon, "True").filter(|_| subs(&daemon) == set(&["a", "b", "c", "d"]))
    });
}

#[test]
fn continue_independent_finishes_the_independent_branch_of_a_diamond_whose_other_branch_fails() {
    let daemon = Daemon::start();
    daemon.write(
        "00-ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: wf}\n",
    );
    daemon.write("10-seed.yaml", &flag(true));
    // a → b (fails), a → c, b and c → d; e independent of all.
    let subs = vec![
        ("a", sub_with("a", &[], "Succeeded", "")),
        ("b", sub_with("b", &["xa"], "Failed", "")),
        ("c", sub_with("c", &["xa"], "Succeeded", "")),
        ("d", sub_with("d", &["xb", "xc"], "Succeeded", "")),
        ("e", sub_with("e", &[], "Succeeded", "")),
    ];
    daemon.write(
        "20-root.yaml",
        &root_with(
            "    landscaper-appliance.io/workflow: |\n      failurePolicy: ContinueIndependent\n      maxConcurrency: 2\n",
            &subs,
            "  - name: flag\n    type: data\n    schema: {type: boolean}\n",
            "      - name: flag\n        dataRef: flag\n",
        ),
    );
    let r = eventually(TIMEOUT, "root failed", || {
        root_object(&daemon).filter(|r| {
            r["status"]["phase"] == "Failed" && r["status"]["jobID"] == r["status"]["jobIDFinished"]
        })
    });
    let phase_of = |name: &str| -> String {
        installations(&daemon)
            .into_iter()
            .find(|i| {
                i["metadata"]["annotations"]["landscaper.gardener.cloud/subinstallation-name"]
                    == name
            })
            .map(|i| {
                i["status"]["phase"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .unwrap_or_default()
    };
    assert_eq!(phase_of("a"), "Succeeded");
    assert_eq!(phase_of("b"), "Failed");
    assert_eq!(
        phase_of("c"),
        "Succeeded",
        "the independent branch finished"
    );
    assert_eq!(
        phase_of("e"),
        "Succeeded",
        "the independent subinstallation finished"
    );
    let message = r["status"]["lastError"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("dependents failed"),
        "aggregated: {message}"
    );
    assert!(message.contains("b: "), "{message}");
}

/// The running subinstallations (their job not finished) of `list`, by template name.
fn running(list: &[Value]) -> BTreeSet<String> {
    list.iter()
        .filter(|i| {
            i["metadata"]["labels"]["landscaper.gardener.cloud/encompassed-by"] == "root"
                && i["status"]["jobID"].is_string()
                && i["status"]["jobID"] != i["status"]["jobIDFinished"]
        })
        .filter_map(|i| {
            i["metadata"]["annotations"]["landscaper.gardener.cloud/subinstallation-name"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

#[test]
fn max_concurrency_runs_at_most_that_many_subinstallations_at_once() {
    // Issue 19, open point 6: three independent subinstallations under `maxConcurrency: 1`
    // run one after the other (sampled while they run, and exactly by the history).
    let daemon = Daemon::start();
    daemon.write(
        "00-ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: wf}\n",
    );
    daemon.write("10-seed.yaml", &flag(true));
    let subs = vec![
        ("a", sub_with("a", &[], "Succeeded", "")),
        ("b", sub_with("b", &[], "Succeeded", "")),
        ("c", sub_with("c", &[], "Succeeded", "")),
    ];
    daemon.write(
        "20-root.yaml",
        &root_with(
            "    landscaper-appliance.io/workflow: |\n      maxConcurrency: 1\n",
            &subs,
            "  - name: flag\n    type: data\n    schema: {type: boolean}\n",
            "      - name: flag\n        dataRef: flag\n",
        ),
    );
    let start = Instant::now();
    loop {
        let list = installations(&daemon);
        if start.elapsed() > TIMEOUT {
            let states: Vec<String> = list
                .iter()
                .map(|i| {
                    format!(
                        "{} {} {} {} {}",
                        i["metadata"]["name"],
                        i["status"]["phase"],
                        i["status"]["jobID"],
                        i["status"]["jobIDFinished"],
                        i["status"]["lastError"]["message"]
                    )
                })
                .collect();
            panic!("root did not finish: {states:#?}");
        }
        let now = running(&list);
        assert!(now.len() <= 1, "more than one running at once: {now:?}");
        if let Some(r) = list.iter().find(|i| i["metadata"]["name"] == "root")
            && r["status"]["phase"] == "Succeeded"
            && r["status"]["jobID"] == r["status"]["jobIDFinished"]
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Exactly, by the store's history (the events' revisions): each subinstallation's job
    // (from its first running phase to its phase Succeeded) starts after the one before ended.
    let events = daemon
        .get_json("/api/v1/namespaces/wf/events")
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default();
    let mut spans: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for e in &events {
        let name = e["involvedObject"]["name"].as_str().unwrap_or_default();
        if e["involvedObject"]["kind"] != "Installation" || name == "root" {
            continue;
        }
        let Some(rev) = e["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|r| r.parse::<u64>().ok())
        else {
            continue;
        };
        let span = spans.entry(name.to_string()).or_insert((u64::MAX, 0));
        match e["reason"].as_str() {
            // Init itself is not committed on its own: the first phase of the job that is.
            Some("Init" | "CleanupOrphaned" | "ObjectsCreated" | "Progressing" | "Completing") => {
                span.0 = span.0.min(rev)
            }
            Some("Succeeded") => span.1 = span.1.max(rev),
            _ => {}
        }
    }
    let mut spans: Vec<(u64, u64, String)> =
        spans.into_iter().map(|(n, (a, b))| (a, b, n)).collect();
    spans.sort();
    assert_eq!(spans.len(), 3, "{spans:?} from {events:#?}");
    for s in &spans {
        assert!(
            s.0 < s.1 && s.1 != 0,
            "a job from Init to Succeeded: {spans:?}"
        );
    }
    for pair in spans.windows(2) {
        assert!(
            pair[1].0 > pair[0].1,
            "overlapping jobs under maxConcurrency 1: {spans:?}"
        );
    }
}

/// A root Installation running the mock blueprint, importing `import` (if any) as `in`,
/// exporting `out` as `export`, with `annotations` (indented lines).
fn plain_root(name: &str, annotations: &str, import: Option<&str>, export: &str) -> String {
    let imports = import
        .map(|i| format!("  imports:\n    data:\n      - name: in\n        dataRef: {i}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: {name}
  namespace: wf
  annotations:
    landscaper.gardener.cloud/operation: reconcile
{annotations}spec:
{imports}  exports:
    data:
      - name: out
        dataRef: {export}
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
{}",
        indent(&SUB_BLUEPRINT.replace("PHASE", "Succeeded"), 10)
    )
}

/// The revision of the newest event of `name` with `reason`.
fn event_revision(daemon: &Daemon, name: &str, reason: &str) -> Option<u64> {
    daemon
        .get_json("/api/v1/namespaces/wf/events")?
        .get("items")?
        .as_array()?
        .iter()
        .filter(|e| e["involvedObject"]["name"] == name && e["reason"] == reason)
        .filter_map(|e| e["metadata"]["resourceVersion"].as_str()?.parse().ok())
        .max()
}

#[test]
fn a_ready_postcondition_holds_back_the_successors_until_it_holds() {
    // Issue 19, open points 3 and 4: an Installation's own ready postcondition (a root's
    // annotation; a subinstallation gets its template's block the same way) keeps its job
    // open, so that its successor waits; once it holds, the job ends and the successor runs.
    let daemon = Daemon::start();
    daemon.write(
        "00-ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: wf}\n",
    );
    let block = |expr: &str| {
        format!("    landscaper-appliance.io/workflow: |\n      readyPostcondition: \"{expr}\"\n")
    };
    daemon.write(
        "10-exporter.yaml",
        &plain_root(
            "exporter",
            &block("self.exports.out == 'ready'"),
            None,
            "xr",
        ),
    );
    daemon.write(
        "20-importer.yaml",
        &plain_root("importer", "", Some("xr"), "xi"),
    );
    let get = |name: &str| daemon.get_json(&format!("{LS}/installations/{name}"));
    let waiting = eventually(
        TIMEOUT,
        "the exporter waits for its ready postcondition",
        || {
            get("exporter").filter(|e| {
                e["status"]["phase"] == "Completing"
                    && condition(e, "ReadyPostcondition").is_some_and(|c| c["status"] == "False")
            })
        },
    );
    let message = waiting["status"]["lastError"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("waiting for the readyPostcondition"),
        "{message}"
    );
    // The successor has not run (it waits for its predecessor), and the export is not there.
    std::thread::sleep(Duration::from_secs(2));
    let importer = get("importer").expect("the importer");
    assert_ne!(importer["status"]["phase"], "Succeeded", "{importer}");
    assert!(get("exporter").is_some_and(|e| e["status"]["phase"] == "Completing"));
    assert!(daemon.get_json(&format!("{LS}/dataobjects/xr")).is_none());

    // The condition is changed to one that holds: the exporter's job ends, then the importer's.
    daemon.write(
        "10-exporter.yaml",
        &plain_root("exporter", &block("self.exports.out == 'v'"), None, "xr"),
    );
    let exporter = eventually(TIMEOUT, "the exporter succeeded", || {
        get("exporter").filter(|e| {
            e["status"]["phase"] == "Succeeded"
                && condition(e, "ReadyPostcondition").is_some_and(|c| c["status"] == "True")
        })
    });
    assert_eq!(
        condition(&exporter, "ReadyPostcondition").unwrap()["reason"],
        "ConditionMet"
    );
    eventually(TIMEOUT, "the importer succeeded", || {
        get("importer").filter(|i| i["status"]["phase"] == "Succeeded")
    });
    let exported = event_revision(&daemon, "exporter", "Succeeded").expect("exporter event");
    let started = event_revision(&daemon, "importer", "Progressing").expect("importer event");
    assert!(
        started > exported,
        "the importer ran after the exporter was ready ({started} > {exported})"
    );
    // The condition results are events.
    let events = daemon
        .get_json("/api/v1/namespaces/wf/events")
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default();
    assert!(
        events
            .iter()
            .any(|e| e["involvedObject"]["name"] == "exporter"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("ReadyPostcondition False"))),
        "{events:#?}"
    );
}

#[test]
fn a_subinstallation_evaluates_the_ready_postcondition_of_its_template() {
    // The template's block goes with the subinstallation (its annotation); the subinstallation
    // records its own ReadyPostcondition, and its successor runs after it is ready.
    let daemon = Daemon::start();
    daemon.write(
        "00-ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: wf}\n",
    );
    daemon.write("10-seed.yaml", &flag(true));
    let subs = vec![
        (
            "a",
            sub(
                "a",
                None,
                "appliance:\n  readyPostcondition: \"self.exports.out == 'v'\"\n",
            ),
        ),
        ("b", sub("b", Some("xa"), "")),
    ];
    daemon.write(
        "20-root.yaml",
        &root_with(
            "",
            &subs,
            "  - name: flag\n    type: data\n    schema: {type: boolean}\n",
            "      - name: flag\n        dataRef: flag\n",
        ),
    );
    eventually(TIMEOUT, "root succeeded", || {
        root_object(&daemon).filter(|r| {
            r["status"]["phase"] == "Succeeded"
                && r["status"]["jobID"] == r["status"]["jobIDFinished"]
        })
    });
    let by_template = |name: &str| {
        installations(&daemon).into_iter().find(|i| {
            i["metadata"]["annotations"]["landscaper.gardener.cloud/subinstallation-name"] == name
        })
    };
    let a = by_template("a").expect("a");
    assert_eq!(
        a["metadata"]["annotations"]["landscaper-appliance.io/workflow"],
        r#"{"readyPostcondition":"self.exports.out == 'v'"}"#
    );
    let c = condition(&a, "ReadyPostcondition").expect("recorded on a");
    assert_eq!(
        (c["status"].as_str(), c["reason"].as_str()),
        (Some("True"), Some("ConditionMet"))
    );
    let b = by_template("b").expect("b");
    assert!(condition(&b, "ReadyPostcondition").is_none(), "{b}");
    assert!(
        b["metadata"]["annotations"]
            .get("landscaper-appliance.io/workflow")
            .is_none(),
        "no block, no annotation: {b}"
    );
    let a_name = a["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let b_name = b["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let ready = event_revision(&daemon, &a_name, "Succeeded").expect("a's event");
    let started = event_revision(&daemon, &b_name, "Progressing").expect("b's event");
    assert!(
        started > ready,
        "b ran after a was ready ({started} > {ready})"
    );
}
