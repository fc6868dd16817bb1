//! Loading and validating blueprints: errors name the file, the field and the line. Only what
//! Landscaper's decoder rejects stops loading; the rest is reported where Landscaper reports it.

use landscaper_templating::blueprint::{
    Bindings, Blueprint, BlueprintFs, ExecutionKind, render_deploy_executions,
    render_subinstallations,
};
use serde_json::json;

const HEAD: &str = "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\n";

fn load(blueprint: &str, files: &[(&str, &str)]) -> Result<Blueprint, String> {
    let mut fs = BlueprintFs::new().with("blueprint.yaml", blueprint);
    for (p, c) in files {
        fs = fs.with(p, *c);
    }
    Blueprint::from_fs(fs).map_err(|e| e.to_string())
}

fn problems(bp: &Blueprint) -> String {
    bp.problems()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_document_must_be_a_blueprint() {
    let e = Blueprint::from_fs(BlueprintFs::new().with("other.yaml", "x")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid blueprint: blueprint.yaml: the blueprint filesystem has no blueprint.yaml at its root"
    );
    let e = load("a: b: c\n", &[]).unwrap_err();
    assert!(e.starts_with("invalid blueprint: blueprint.yaml:1: unable to decode blueprint: error converting YAML to JSON: yaml: line 1:"), "{e}");
    let e = load("apiVersion: v1\nkind: Installation\n", &[]).unwrap_err();
    assert!(e.contains("blueprint.yaml:1:1: apiVersion: must be \"landscaper.gardener.cloud/v1alpha1\", found \"v1\""), "{e}");
    assert!(
        e.contains("blueprint.yaml:2:1: kind: must be \"Blueprint\", found \"Installation\""),
        "{e}"
    );
    let e = load(
        &format!("{HEAD}imports:\n- name: a\n  required: maybe\n  schema: {{}}\n"),
        &[],
    )
    .unwrap_err();
    assert!(e.contains("blueprint.yaml:5:3: imports[0].required: unable to decode blueprint: invalid type: string \"maybe\", expected a boolean"), "{e}");
}

#[test]
fn import_definitions_are_checked() {
    let bp = load(
        &format!(
            "{HEAD}imports:\n- name: a\n  schema: {{type: string}}\n- name: a\n  targetType: ex\n- name: both\n  schema: {{}}\n  targetType: why\n- name: neither\n- name: cond\n  schema: {{}}\n  imports:\n  - name: c1\n    schema: {{}}\n- name: typed\n  type: data\n  targetType: zed\n- name: weird\n  type: secret\n  schema: {{}}\n- schema: {{}}\n"
        ),
        &[],
    )
    .unwrap();
    let p = problems(&bp);
    for want in [
        "blueprint.yaml:6:3: imports[1]: duplicate import name \"a\"",
        "imports[2]: import \"both\": either schema or targetType must be specified, not both",
        "imports[3]: import \"neither\": either schema or targetType must not be empty",
        "imports[4]: import \"cond\": conditional imports on required import",
        "imports[5]: import \"typed\": Schema must not be empty for type data",
        "imports[5]: import \"typed\": unexpected config 'TargetType', only [Schema] should be set",
        "imports[6].type: import \"weird\": unsupported value \"secret\"",
        "imports[7].name: name must not be empty",
    ] {
        assert!(p.contains(want), "missing {want:?} in:\n{p}");
    }
}

#[test]
fn executions_are_checked_and_fail_when_rendered() {
    let bp = load(
        &format!(
            "{HEAD}deployExecutions:\n- name: a\n  type: GoTemplate\n  template: {{deployItems: []}}\n- name: a\n  type: GoTemplate\n  template: x\n- name: b\n  type: Jinja\n  template: x\n- name: c\n  type: Spiff\n- name: d\n  type: GoTemplate\n  file: nope.yaml\n- type: Spiff\n  template: {{}}\n"
        ),
        &[],
    )
    .unwrap();
    let p = problems(&bp);
    for want in [
        "blueprint.yaml:6:3: deployExecutions[0].template: a GoTemplate template must be a string, found a map",
        "deployExecutions[1]: duplicated executor name \"a\"",
        "deployExecutions[2].type: unknown template type \"Jinja\"",
        "deployExecutions[3].template: no template found",
        "deployExecutions[4].file: nope.yaml: file does not exist in the blueprint filesystem",
        "deployExecutions[5].name: name must be defined",
    ] {
        assert!(p.contains(want), "missing {want:?} in:\n{p}");
    }
    let e = render_deploy_executions(&bp, &Bindings::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "deploy execution \"a\" (GoTemplate, inline template): blueprint.yaml:6:3: deployExecutions[0].template: a GoTemplate template must be a string, found a map"
    );
    assert_eq!(bp.executions(ExecutionKind::Deploy).len(), 6);
}

#[test]
fn unnamed_executions_run_as_in_landscaper() {
    // Landscaper's controllers never run ValidateBlueprint: a nameless execution renders.
    let bp = load(
        &format!("{HEAD}deployExecutions:\n- type: GoTemplate\n  template: |\n    deployItems:\n    - name: x\n      type: t\n"),
        &[],
    )
    .unwrap();
    assert_eq!(bp.warnings().len(), 1);
    let out = render_deploy_executions(&bp, &Bindings::default()).unwrap();
    assert_eq!(out.deploy_items[0].name, "x");
}

#[test]
fn subinstallations_are_validated() {
    let bp = load(
        &format!(
            "{HEAD}subinstallations:\n- file: sub.yaml\n- file: bad.yaml\n- apiVersion: landscaper.gardener.cloud/v1alpha1\n  kind: InstallationTemplate\n  name: Not_A_Label\n  imports:\n    data:\n    - name: x\n      secretRef: {{name: s}}\n- {{}}\n"
        ),
        &[
            (
                "sub.yaml",
                "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: InstallationTemplate\nname: ok\nblueprint:\n  ref: cd://x\nimports:\n  targets:\n  - name: t\n",
            ),
            ("bad.yaml", "kind: Installation\n"),
        ],
    )
    .unwrap();
    let p = problems(&bp);
    for want in [
        "sub.yaml:8:5: imports.targets[0]: subinstallations[0].file: exactly one of [target, targets, targetListRef, targetMap, targetMapRef] must be set (currently set: none)",
        "bad.yaml:1:1: kind: subinstallations[1].file: unable to decode installation template: expected kind InstallationTemplate",
        "subinstallations[2].name: invalid value \"Not_A_Label\"",
        "subinstallations[2].blueprint: a blueprint must be defined",
        "subinstallations[2].imports.data[0].secretRef: secret references are not allowed in a installation template",
        "subinstallations[2].imports.data[0].dataRef: dataRef must not be empty",
        "subinstallations[3]: neither a inline installation template nor a file is defined in index 3",
    ] {
        assert!(p.contains(want), "missing {want:?} in:\n{p}");
    }
    let e = render_subinstallations(&bp, &Bindings::default()).unwrap_err();
    assert!(
        e.to_string().starts_with("subinstallationExecutions: unable to get default subinstallation templates: invalid blueprint (7 problems):"),
        "{e}"
    );
}

#[test]
fn inline_blueprints_load_from_yamlfs() {
    let bp = Blueprint::from_yamlfs(&json!({
        "blueprint.yaml": format!("{HEAD}deployExecutions:\n- name: d\n  type: GoTemplate\n  file: /templates/d.yaml\n"),
        "templates": {"d.yaml": "deployItems: []\n"},
    }))
    .unwrap();
    assert_eq!(bp.fs().len(), 2);
    assert!(bp.problems().is_empty());
    let e = Blueprint::from_yamlfs(&json!(["x"])).unwrap_err();
    assert!(e.to_string().contains("must be a map of file names"), "{e}");
}
