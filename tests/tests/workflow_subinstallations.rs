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
            phase: Succeeded
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
    let imports = match import {
        Some(i) => format!("imports:\n  data:\n    - name: in\n      dataRef: {i}\n"),
        None => String::new(),
    };
    format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: InstallationTemplate\nname: {name}\n{appliance}{imports}exports:\n  data:\n    - name: out\n      dataRef: x{name}\nblueprint:\n  filesystem:\n    blueprint.yaml: |\n{}",
        indent(SUB_BLUEPRINT, 6)
    )
}

fn root() -> String {
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
    let mut files = String::new();
    let mut list = String::new();
    for (i, s) in subs.iter().enumerate() {
        let name = ["a", "b", "c", "d"][i];
        list.push_str(&format!("  - file: /{name}.yaml\n"));
        files.push_str(&format!("{name}.yaml: |\n{}", indent(s, 2)));
    }
    let blueprint = format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\njsonSchemaVersion: \"https://json-schema.org/draft/2019-09/schema\"\nimports:\n  - name: flag\n    type: data\n    schema: {{type: boolean}}\nsubinstallations:\n{list}"
    );
    format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: root
  namespace: wf
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  imports:
    data:
      - name: flag
        dataRef: flag
  blueprint:
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
