//! Blueprint loading, import construction and execution rendering over in-memory blueprints.

use std::collections::BTreeMap;

use landscaper_templating::blueprint::{
    Bindings, Blueprint, BlueprintFs, ExecutionKind, ExportBindings, ImportErrorKind,
    construct_imports, evaluate_import_data_mappings, render_deploy_executions,
    render_export_executions, render_import_executions, render_subinstallations,
    resolve_deploy_items,
};
use serde_json::{Map, Value, json};

const BLUEPRINT: &str = r#"
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
jsonSchema: "https://json-schema.org/draft/2019-09/schema"
localTypes:
  replicas:
    type: integer
    minimum: 1
imports:
- name: cluster
  targetType: kubernetes-cluster
- name: replicas
  schema:
    $ref: local://replicas
- name: config
  required: false
  default:
    value:
      color: blue
  schema:
    $ref: blueprint://schemas/config.json
  imports:
  - name: extra
    required: false
    schema:
      type: string
exports:
- name: url
  schema:
    type: string
- name: clusterOut
  targetType: kubernetes-cluster
deployExecutions:
- name: main
  type: GoTemplate
  file: /templates/deploy.yaml
- name: shouting
  type: GoTemplate
  template: |
    DeployItems:
    - NAME: extra
      Type: landscaper.gardener.cloud/mock
      TARGET: {Import: cluster}
      DependsOn: [main]
      OnDelete: {SkipUninstallIfClusterRemoved: true}
      config: {answer: 42}
      timeout: 5m
exportExecutions:
- name: first
  type: GoTemplate
  template: |
    exports:
      url: http://{{ .deployitems.main.host }}
      undeclared: dropped
      clusterOut:
        type: landscaper.gardener.cloud/kubernetes-cluster
        config: {a: 1, b: 1}
- name: second
  type: GoTemplate
  template: |
    exports:
      url: https://{{ .values.deployitems.main.host }}:{{ .dataobjects.port }}
      clusterOut:
        config: {b: 2}
subinstallations:
- file: /subinst/child.yaml
- apiVersion: landscaper.gardener.cloud/v1alpha1
  kind: InstallationTemplate
  name: inline-child
  blueprint:
    ref: cd://resources/child
  imports:
    data:
    - name: config
      dataRef: config
subinstallationExecutions:
- name: generated
  type: GoTemplate
  template: |
    subinstallations:
    {{- range $i := until (int .imports.replicas) }}
    - apiVersion: landscaper.gardener.cloud/v1alpha1
      kind: InstallationTemplate
      name: gen-{{ $i }}
      blueprint:
        filesystem:
          blueprint.yaml: |
            apiVersion: landscaper.gardener.cloud/v1alpha1
            kind: Blueprint
      imports:
        targets:
        - name: cluster
          target: cluster
        data:
        - name: extra
          dataRef: extra
    {{- end }}
"#;

const DEPLOY: &str = r#"deployItems:
- name: main
  type: landscaper.gardener.cloud/mock
  target:
    import: cluster
  labels:
    app: {{ .imports.cluster.metadata.name }}
  config:
    apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
    kind: ProviderConfiguration
    replicas: {{ .imports.replicas }}
    values:
      {{- .imports.config | toYaml | nindent 6 }}
    helper: {{ include "templates/_helper.tpl" .imports.config }}
    blueprint: {{ if .blueprint }}{{ .blueprint.inline }}{{ else }}none{{ end }}
state:
  seen: {{ add1 (.state.seen | default 0) }}
"#;

const CHILD: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: InstallationTemplate
name: file-child
blueprint:
  ref: cd://resources/child
imports:
  targets:
  - name: cluster
    target: cluster
exports:
  data:
  - name: out
    dataRef: child-out
"#;

fn fs() -> BlueprintFs {
    BlueprintFs::new()
        .with("blueprint.yaml", BLUEPRINT)
        .with("templates/deploy.yaml", DEPLOY)
        .with("templates/_helper.tpl", "{{ .color | upper }}")
        .with(
            "schemas/config.json",
            r#"{"type": "object", "properties": {"color": {"enum": ["blue", "red"]}}}"#,
        )
        .with("subinst/child.yaml", CHILD)
}

fn blueprint() -> Blueprint {
    Blueprint::from_fs(fs()).unwrap_or_else(|e| panic!("{e}"))
}

fn target(name: &str) -> Value {
    json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Target",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster", "config": {"kubeconfig": "x"}},
    })
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not a map"),
    }
}

fn imports() -> Map<String, Value> {
    let bp = blueprint();
    construct_imports(
        &bp,
        &obj(json!({"cluster": target("my-cluster"), "replicas": 2, "unknown": 1})),
        &Map::new(),
    )
    .unwrap()
}

#[test]
fn loading_defaults_and_warns() {
    let bp = blueprint();
    let doc = bp.document();
    assert_eq!(doc.imports[0].r#type, "target");
    assert_eq!(
        doc.imports[0].target_type,
        "landscaper.gardener.cloud/kubernetes-cluster"
    );
    assert_eq!(doc.imports[1].r#type, "data");
    assert_eq!(doc.imports[1].required, Some(true));
    assert_eq!(doc.exports[1].r#type, "target");
    assert_eq!(bp.warnings().len(), 1, "{:?}", bp.warnings());
    assert_eq!(
        bp.warnings()[0].to_string(),
        "blueprint.yaml:4:1: jsonSchema: unknown field (ignored)"
    );
    assert!(bp.problems().len() == 1);
    assert_eq!(bp.executions(ExecutionKind::Deploy).len(), 2);
    assert_eq!(
        bp.executions(ExecutionKind::Deploy)[0]
            .as_ref()
            .unwrap()
            .file
            .as_deref(),
        Some("templates/deploy.yaml")
    );
    assert_eq!(bp.static_subinstallations().unwrap().len(), 2);
    assert!(bp.import("extra").is_some());
}

#[test]
fn imports_get_defaults_and_conditional_imports() {
    let m = imports();
    assert_eq!(m["config"], json!({"color": "blue"}));
    assert_eq!(m["replicas"], json!(2));
    assert!(!m.contains_key("unknown"));
    assert!(!m.contains_key("extra"));
    let bp = blueprint();
    let m = construct_imports(
        &bp,
        &obj(json!({"cluster": target("c"), "replicas": 1, "extra": "x"})),
        &obj(json!({"config": {"color": "red"}})),
    )
    .unwrap();
    assert_eq!(m["config"], json!({"color": "red"}));
    assert_eq!(m["extra"], json!("x"));
}

#[test]
fn import_errors_name_import_pointer_and_schema() {
    let bp = blueprint();
    let e = construct_imports(&bp, &obj(json!({"cluster": target("c")})), &Map::new()).unwrap_err();
    assert_eq!(e.kind, ImportErrorKind::NotSatisfied);
    assert_eq!(
        e.to_string(),
        r#"import "replicas": blueprint defines import "replicas" of type data, which is not satisfied"#
    );
    let e = construct_imports(
        &bp,
        &obj(json!({"cluster": target("c"), "replicas": "x"})),
        &Map::new(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"import "replicas": (root): "x" is not of type "integer" (schema path /type)"#
    );
    let e = construct_imports(
        &bp,
        &obj(json!({"cluster": target("c"), "replicas": 1, "config": {"color": "green"}})),
        &Map::new(),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with(r#"import "config": /color: "green" is not one of"#),
        "{e}"
    );
    assert!(
        e.to_string()
            .ends_with("(schema path /properties/color/enum)"),
        "{e}"
    );
    let mut wrong = target("c");
    wrong["spec"]["type"] = json!("other");
    let e = construct_imports(
        &bp,
        &obj(json!({"cluster": wrong, "replicas": 1})),
        &Map::new(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"import "cluster": imported target type is other but expected landscaper.gardener.cloud/kubernetes-cluster"#
    );
}

#[test]
fn deploy_executions_render_items() {
    let bp = blueprint();
    let mut b = Bindings::with_imports(imports());
    b.blueprint_def = Some(json!({"inline": "inline-bp"}));
    let out = render_deploy_executions(&bp, &b).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.deploy_items.len(), 2);
    let main = &out.deploy_items[0];
    assert_eq!(main.name, "main");
    assert_eq!(main.target.as_ref().unwrap().import, "cluster");
    assert_eq!(main.labels.as_ref().unwrap()["app"], "my-cluster");
    assert_eq!(
        main.config,
        json!({
            "apiVersion": "mock.deployer.landscaper.gardener.cloud/v1alpha1",
            "kind": "ProviderConfiguration",
            "replicas": 2,
            "values": {"color": "blue"},
            "helper": "BLUE",
            "blueprint": "inline-bp",
        })
    );
    // Keys are matched case-insensitively, as Go's decoder does.
    let extra = &out.deploy_items[1];
    assert_eq!(extra.name, "extra");
    assert_eq!(extra.r#type, "landscaper.gardener.cloud/mock");
    assert_eq!(extra.target.as_ref().unwrap().import, "cluster");
    assert_eq!(extra.depends_on.as_deref(), Some(&["main".to_string()][..]));
    assert_eq!(
        extra
            .on_delete
            .as_ref()
            .unwrap()
            .skip_uninstall_if_cluster_removed,
        Some(true)
    );
    assert_eq!(extra.timeout.as_ref().unwrap().as_str(), "5m");
    // State: the `state:` node is returned and fed back.
    assert_eq!(out.state["deploymain"], json!({"seen": 1}));
    b.state = out.state.clone();
    let again = render_deploy_executions(&bp, &b).unwrap();
    assert_eq!(again.state["deploymain"], json!({"seen": 2}));
    // Targets resolve to the imported Target objects.
    let resolved = resolve_deploy_items(&bp, &b.imports, "inst-ns", &out.deploy_items).unwrap();
    let t = resolved[0].target.as_ref().unwrap();
    assert_eq!(
        (t.namespace.as_str(), t.name.as_str()),
        ("ns", "my-cluster")
    );
}

fn single_deploy(template: &str) -> Blueprint {
    let bp = "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\nimports:\n- name: a\n  schema: {type: object}\ndeployExecutions:\n- name: one\n  type: GoTemplate\n  file: t.yaml\n";
    Blueprint::from_fs(
        BlueprintFs::new()
            .with("blueprint.yaml", bp)
            .with("t.yaml", template),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn printing_a_missing_value_is_an_error() {
    let bp = single_deploy(
        "deployItems:\n- name: x\n  type: t\n  config:\n    v: {{ .imports.a.missing }}\n",
    );
    let b = Bindings::with_imports(obj(json!({"a": {}})));
    let e = render_deploy_executions(&bp, &b).unwrap_err();
    assert_eq!(e.line, Some(5));
    assert!(e.in_output);
    let text = e.to_string();
    assert!(
        text.starts_with(r#"deploy execution "one" (GoTemplate, file t.yaml, output line 5, column 8): template "deploy execution" contains fields with "no value""#),
        "{text}"
    );
    assert!(text.contains("5:     v: <no value>"), "{text}");
    // Testing a missing value is fine.
    let bp = single_deploy(
        "deployItems:\n- name: x\n  type: t\n  config:\n    v: {{ .imports.a.missing | default \"d\" }}\n",
    );
    let out = render_deploy_executions(&bp, &b).unwrap();
    assert_eq!(out.deploy_items[0].config, json!({"v": "d"}));
}

#[test]
fn deploy_item_workflow_block_passes_to_the_execution_template() {
    // The appliance's extension block (issue 19) survives rendering and target resolution;
    // items without it are unchanged.
    let bp = single_deploy(
        "deployItems:\n- name: x\n  type: t\n  config: {}\n  appliance:\n    reconcilePrecondition: imports.a.on == true\n    activationCondition: {crdPresent: servicemonitors.monitoring.coreos.com}\n- name: z\n  type: t\n  config: {}\n",
    );
    let b = Bindings::with_imports(obj(json!({"a": {"on": true}})));
    let out = render_deploy_executions(&bp, &b).unwrap_or_else(|e| panic!("{e}"));
    let resolved = resolve_deploy_items(&bp, &b.imports, "ns", &out.deploy_items).unwrap();
    let block = resolved[0].appliance.as_ref().expect("the block");
    assert_eq!(
        block.reconcile_precondition.as_deref(),
        Some("imports.a.on == true")
    );
    assert_eq!(
        serde_json::to_value(&resolved[0]).unwrap()["appliance"]["activationCondition"],
        json!({"crdPresent": "servicemonitors.monitoring.coreos.com"})
    );
    assert_eq!(resolved[1].appliance, None);
    assert!(
        serde_json::to_value(&resolved[1])
            .unwrap()
            .get("appliance")
            .is_none()
    );
}

#[test]
fn template_errors_carry_line_and_column() {
    let bp = single_deploy("deployItems:\n- name: x\n  config: {{ .imports.a.b.c }}\n");
    let e =
        render_deploy_executions(&bp, &Bindings::with_imports(obj(json!({"a": {}})))).unwrap_err();
    assert_eq!((e.line, e.column), (Some(3), Some(22)));
    assert!(!e.in_output);
    let text = e.to_string();
    assert!(
        text.contains("template: execution:3:21: executing \"execution\" at <.imports.a.b.c>"),
        "{text}"
    );
    assert!(
        text.contains("\n3:   config: {{ .imports.a.b.c }}\n"),
        "{text}"
    );
    // A syntax error is found when the blueprint is loaded, and reported when rendering.
    let bp = Blueprint::from_fs(BlueprintFs::new().with(
        "blueprint.yaml",
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\ndeployExecutions:\n- name: one\n  type: GoTemplate\n  template: |\n    a: 1\n    {{ if }}\n",
    ))
    .unwrap();
    let text = bp.problems()[0].to_string();
    assert_eq!(
        text,
        "blueprint.yaml:6:3: deployExecutions[0].template: deploy execution \"one\" (inline template): template: execution:2: missing value for if"
    );
    let e = render_deploy_executions(&bp, &Bindings::default()).unwrap_err();
    assert_eq!(e.line, Some(2));
    assert_eq!(
        e.to_string(),
        "deploy execution \"one\" (GoTemplate, inline template, line 2): template: execution:2: missing value for if\n1: a: 1\n2: {{ if }}\n3: "
    );
}

#[test]
fn output_must_be_yaml_of_the_right_shape() {
    let bp = single_deploy("deployItems:\n- name: x\n  config: [\n");
    let e = render_deploy_executions(&bp, &Bindings::default()).unwrap_err();
    assert!(
        e.message
            .starts_with("error while decoding templated execution: error converting YAML to JSON"),
        "{e}"
    );
    assert!(e.in_output);
    let bp = single_deploy("deployItems:\n- name: [x]\n");
    let e = render_deploy_executions(&bp, &Bindings::default()).unwrap_err();
    assert!(
        e.message
            .contains("deployItems[0]: name: invalid type: sequence"),
        "{e}"
    );
    let bp = single_deploy("deployitems: {a: 1}\n");
    let e = render_deploy_executions(&bp, &Bindings::default()).unwrap_err();
    assert!(e.message.contains("deployItems must be a list"), "{e}");
    // No deploy items at all.
    let bp = single_deploy("other: 1\n");
    assert!(
        render_deploy_executions(&bp, &Bindings::default())
            .unwrap()
            .deploy_items
            .is_empty()
    );
}

#[test]
fn export_executions_merge_drop_and_validate() {
    let bp = blueprint();
    let b = ExportBindings {
        base: Bindings::with_imports(imports()),
        deploy_items: Some(obj(json!({"main": {"host": "h"}}))),
        data_objects: obj(json!({"port": 8443})),
        targets: Map::new(),
    };
    let out = render_export_executions(&bp, &b).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.exports["url"], json!("https://h:8443"));
    assert_eq!(
        out.exports["clusterOut"],
        json!({"type": "landscaper.gardener.cloud/kubernetes-cluster", "config": {"a": 1, "b": 2}})
    );
    assert_eq!(out.dropped, vec!["undeclared".to_string()]);
    // A data export that violates its schema.
    let bad = Blueprint::from_fs(
        fs().with(
            "blueprint.yaml",
            BLUEPRINT
                .replace("url: https://{{", "url:\n        x: https://{{")
                .replace(":{{ .dataobjects.port }}", ":{{ .dataobjects.port }}\n"),
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let e = render_export_executions(&bad, &b).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"exportExecutions: export "url": exported data does not satisfy the configured schema: (root): {"x":"https://h:8443"} is not of type "string" (schema path /type)"#
    );
}

#[test]
fn subinstallation_workflow_blocks_from_entries_files_and_inline_templates() {
    // The appliance's block (issue 19): beside `file` (applies to the file's template unless
    // that has its own), inside the file, or inside an inline template. Alone beside `file`
    // it does not make the entry an inline template.
    let file = |name: &str, extra: &str| {
        format!(
            "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: InstallationTemplate\nname: {name}\nblueprint:\n  ref: cd://resources/child\n{extra}"
        )
    };
    let bp = "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\nsubinstallations:\n- file: /a.yaml\n  appliance:\n    reconcilePrecondition: imports.on\n- file: /b.yaml\n  appliance:\n    reconcilePrecondition: ignored\n- file: /c.yaml\n- apiVersion: landscaper.gardener.cloud/v1alpha1\n  kind: InstallationTemplate\n  name: d\n  blueprint:\n    ref: cd://resources/child\n  appliance:\n    failurePolicy: ContinueIndependent\n";
    let bp = Blueprint::from_fs(
        BlueprintFs::new()
            .with("blueprint.yaml", bp)
            .with("a.yaml", file("a", "").as_str())
            .with(
                "b.yaml",
                file("b", "appliance:\n  readyPostcondition: self.ready\n").as_str(),
            )
            .with("c.yaml", file("c", "").as_str()),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let out = render_subinstallations(&bp, &Bindings::with_imports(Map::new()))
        .unwrap_or_else(|e| panic!("{e}"));
    let blocks: Vec<(&str, Value)> = out
        .subinstallations
        .iter()
        .map(|t| (t.name.as_str(), serde_json::to_value(&t.appliance).unwrap()))
        .collect();
    assert_eq!(
        blocks,
        [
            ("a", json!({"reconcilePrecondition": "imports.on"})),
            ("b", json!({"readyPostcondition": "self.ready"})),
            ("c", Value::Null),
            ("d", json!({"failurePolicy": "ContinueIndependent"})),
        ]
    );
}

#[test]
fn subinstallations_come_from_executions_files_and_inline() {
    let bp = blueprint();
    let b = Bindings::with_imports(imports());
    // `extra` is a conditional import that is not satisfied: its wiring is removed.
    let out = render_subinstallations(&bp, &b).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = out
        .subinstallations
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names, ["gen-0", "gen-1", "file-child", "inline-child"]);
    assert!(
        out.subinstallations[0]
            .imports
            .data
            .as_ref()
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        out.subinstallations[2].exports.data.as_ref().unwrap()[0].data_ref,
        "child-out"
    );
    // With `extra` given, the generated templates keep it.
    let mut with_extra = imports();
    with_extra.insert("extra".into(), json!("e"));
    let out = render_subinstallations(&bp, &Bindings::with_imports(with_extra)).unwrap();
    assert_eq!(
        out.subinstallations[0].imports.data.as_ref().unwrap().len(),
        1
    );
}

#[test]
fn subinstallation_wiring_is_validated() {
    let bp = Blueprint::from_fs(BlueprintFs::new().with(
        "blueprint.yaml",
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
imports:
- name: a
  schema: {type: string}
subinstallations:
- apiVersion: landscaper.gardener.cloud/v1alpha1
  kind: InstallationTemplate
  name: one
  blueprint: {ref: cd://x}
  imports:
    data:
    - {name: in, dataRef: nothing}
  exports:
    data:
    - {name: out, dataRef: a}
"#,
    ))
    .unwrap();
    let e = render_subinstallations(&bp, &Bindings::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"subinstallationExecutions: subinstallation "one": exports.data[0] (out/a): export is imported by its parent; subinstallation "one": imports.data[0] (in): import not satisfied"#
    );
}

#[test]
fn templated_subinstallations_need_their_kind() {
    let bp = Blueprint::from_fs(BlueprintFs::new().with(
        "blueprint.yaml",
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\nsubinstallationExecutions:\n- name: s\n  type: GoTemplate\n  template: |\n    subinstallations:\n    - name: x\n      blueprint: {ref: r}\n",
    ))
    .unwrap();
    let e = render_subinstallations(&bp, &Bindings::default()).unwrap_err();
    assert!(
        e.to_string().contains("unable to decode installation template 0: kind: unable to decode installation template: Object 'Kind' is missing"),
        "{e}"
    );
}

#[test]
fn spiff_executions_render() {
    let bp = Blueprint::from_fs(
        BlueprintFs::new()
            .with(
                "blueprint.yaml",
                r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
imports:
- name: name
  schema: {type: string}
deployExecutions:
- name: inline
  type: Spiff
  template:
    deployItems:
    - name: (( "di-" imports.name ))
      type: landscaper.gardener.cloud/mock
      config:
        file: (( read("data.txt") ))
- name: text
  type: Spiff
  file: spiff.yaml
"#,
            )
            .with("data.txt", "from-file")
            .with(
                "spiff.yaml",
                "deployItems:\n- name: second\n  type: t\n  config:\n    len: (( length(imports.name) ))\n",
            ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let b = Bindings::with_imports(obj(json!({"name": "abc"})));
    let out = render_deploy_executions(&bp, &b).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.deploy_items[0].name, "di-abc");
    assert_eq!(out.deploy_items[0].config, json!({"file": "from-file"}));
    assert_eq!(out.deploy_items[1].config, json!({"len": 3}));
}

#[test]
fn spiff_errors_point_at_the_node() {
    let bp = Blueprint::from_fs(
        BlueprintFs::new()
            .with(
                "blueprint.yaml",
                "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\ndeployExecutions:\n- name: s\n  type: Spiff\n  file: s.yaml\n",
            )
            .with("s.yaml", "deployItems:\n- name: x\n  config:\n    v: (( imports.nope ))\n"),
    )
    .unwrap();
    let e = render_deploy_executions(&bp, &Bindings::default()).unwrap_err();
    assert_eq!(e.line, Some(4), "{e}");
    assert!(
        e.to_string()
            .starts_with(r#"deploy execution "s" (Spiff, file s.yaml, line 4, column 5): "#),
        "{e}"
    );
}

#[test]
fn import_executions_add_bindings_and_stop_at_errors() {
    let bp = Blueprint::from_fs(BlueprintFs::new().with(
        "blueprint.yaml",
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
imports:
- name: a
  schema: {type: integer}
importExecutions:
- name: one
  type: GoTemplate
  template: |
    bindings:
      double: {{ mul .imports.a 2 }}
- name: two
  type: GoTemplate
  template: |
    errors:
    {{- if gt (int .imports.double) 5 }}
    - too big {{ .imports.double }}
    {{- end }}
- name: three
  type: GoTemplate
  template: |
    bindings:
      never: 1
"#,
    ))
    .unwrap();
    let out = render_import_executions(&bp, &Bindings::with_imports(obj(json!({"a": 3})))).unwrap();
    assert_eq!(out.bindings, obj(json!({"double": 6})));
    assert_eq!(out.errors, vec!["too big 6".to_string()]);
    let out = render_import_executions(&bp, &Bindings::with_imports(obj(json!({"a": 1})))).unwrap();
    assert!(out.errors.is_empty());
    assert_eq!(out.bindings, obj(json!({"double": 2, "never": 1})));
}

#[test]
fn import_data_mappings_are_spiff() {
    let mappings: BTreeMap<String, Value> = [
        ("ns".to_string(), json!("acc-09")),
        (
            "name".to_string(),
            json!("(( cfg.prefix \"-\" cfg.suffix ))"),
        ),
        ("nested".to_string(), json!({"v": "(( cfg.prefix ))"})),
    ]
    .into();
    let out = evaluate_import_data_mappings(
        &mappings,
        &obj(json!({"cfg": {"prefix": "a", "suffix": "b"}})),
    )
    .unwrap();
    assert_eq!(
        out,
        obj(json!({"ns": "acc-09", "name": "a-b", "nested": {"v": "a"}}))
    );
}

#[test]
fn blueprints_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Blueprint>();
    send_sync::<landscaper_templating::blueprint::RenderError>();
    let bp = std::sync::Arc::new(blueprint());
    let b = Bindings::with_imports(imports());
    let other = {
        let bp = bp.clone();
        let b = b.clone();
        std::thread::spawn(move || render_deploy_executions(&bp, &b).unwrap())
            .join()
            .unwrap()
    };
    assert_eq!(other, render_deploy_executions(&bp, &b).unwrap());
}

#[test]
fn rendering_is_deterministic_and_cheap() {
    let bp = blueprint();
    let b = Bindings::with_imports(imports());
    let first = render_deploy_executions(&bp, &b).unwrap();
    let start = std::time::Instant::now();
    for _ in 0..200 {
        assert_eq!(render_deploy_executions(&bp, &b).unwrap(), first);
    }
    eprintln!(
        "render_deploy_executions (2 GoTemplate executions, include, toYaml): {:?} per call",
        start.elapsed() / 200
    );
    // Generous bound for unoptimised builds on slow machines: well under 10 ms per render.
    assert!(
        start.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn subinstallation_cycles_are_reported_with_landscapers_arrows() {
    use landscaper_templating::blueprint::{InstallationTemplate, subinstallation_cycle};
    let template = |name: &str, imports: Value, exports: Value| -> InstallationTemplate {
        serde_json::from_value(json!({
            "apiVersion": "landscaper.gardener.cloud/v1alpha1",
            "kind": "InstallationTemplate",
            "name": name,
            "blueprint": {"ref": "cd://resources/x"},
            "imports": imports,
            "exports": exports,
        }))
        .unwrap()
    };
    let a = template(
        "a",
        json!({"targets": [{"name": "t", "targets": ["cluster-c"]}]}),
        json!({"data": [{"name": "e", "dataRef": "from-a"}]}),
    );
    let b = template(
        "b",
        json!({"data": [{"name": "i", "dataRef": "from-a"}]}),
        json!({"data": [{"name": "e", "dataRef": "from-b"}]}),
    );
    let c = template(
        "c",
        json!({"data": [{"name": "i", "dataRef": "from-b"}]}),
        json!({"targets": [{"name": "e", "target": "cluster-c"}]}),
    );
    let cycle = subinstallation_cycle(&[a.clone(), b.clone(), c.clone()]).expect("a cycle");
    assert_eq!(cycle, ["a", "c", "b", "a"]);
    // Breaking one edge (c no longer exports what a imports) removes it.
    let c_free = template(
        "c",
        json!({"data": [{"name": "i", "dataRef": "from-b"}]}),
        json!({"targets": [{"name": "e", "target": "elsewhere"}]}),
    );
    assert_eq!(subinstallation_cycle(&[a, b, c_free]), None);
}

#[test]
fn a_blueprint_with_cyclic_subinstallations_fails_to_render() {
    let fs = json!({
        "blueprint.yaml": r#"
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
subinstallations:
- apiVersion: landscaper.gardener.cloud/v1alpha1
  kind: InstallationTemplate
  name: first
  blueprint: {ref: cd://resources/x}
  imports: {data: [{name: i, dataRef: two}]}
  exports: {data: [{name: e, dataRef: one}]}
- apiVersion: landscaper.gardener.cloud/v1alpha1
  kind: InstallationTemplate
  name: second
  blueprint: {ref: cd://resources/x}
  imports: {data: [{name: i, dataRef: one}]}
  exports: {data: [{name: e, dataRef: two}]}
"#
    });
    let blueprint = Blueprint::from_yamlfs(&fs).unwrap();
    let err = render_subinstallations(&blueprint, &Bindings::with_imports(Map::new()))
        .expect_err("a cycle");
    let message = err.to_string();
    assert!(
        message.contains(
            "the subinstallations have a cycle: first -{depends_on}-> second -{depends_on}-> first"
        ),
        "{message}"
    );
}

/// A reader over one `cd://resources/<name>` resource, counting its calls.
struct OneResource {
    name: &'static str,
    content: landscaper_templating::resources::ResourceContent,
}

impl landscaper_templating::resources::ResourceReader for OneResource {
    fn resource_key(&self, reference: &str) -> Result<String, String> {
        if reference == format!("cd://resources/{}", self.name) {
            Ok(format!("KEY({})", self.name))
        } else {
            Err(format!(
                "resource {reference} not found in example.com/comp:1.0.0"
            ))
        }
    }
    fn resource_content(
        &self,
        reference: &str,
    ) -> Result<landscaper_templating::resources::ResourceContent, String> {
        self.resource_key(reference)?;
        Ok(self.content.clone())
    }
}

fn with_reader(media_type: &str, bytes: &[u8]) -> Bindings {
    let mut b = Bindings::with_imports(obj(json!({"a": {}})));
    b.resources =
        landscaper_templating::resources::Resources::new(std::sync::Arc::new(OneResource {
            name: "myconfig",
            content: landscaper_templating::resources::ResourceContent {
                media_type: media_type.into(),
                bytes: bytes.to_vec(),
            },
        }));
    b
}

#[test]
fn resource_key_and_content_come_from_the_reader_in_both_engines() {
    let go = single_deploy(
        "deployItems:\n- name: x\n  type: t\n  config:\n    key: {{ getResourceKey `cd://resources/myconfig` }}\n    content: {{ getResourceContent `cd://resources/myconfig` | toJson }}\n",
    );
    let b = with_reader("application/yaml", b"type: yaml-config\n");
    let out = render_deploy_executions(&go, &b).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.deploy_items[0].config,
        json!({"key": "KEY(myconfig)", "content": "type: yaml-config\n"})
    );
    let spiff = Blueprint::from_fs(BlueprintFs::new().with(
        "blueprint.yaml",
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
deployExecutions:
- name: s
  type: Spiff
  template:
    deployItems:
    - name: x
      type: t
      config:
        key: (( getResourceKey("cd://resources/myconfig") ))
        content: (( getResourceContent("cd://resources/myconfig") ))
"#,
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    // application/octet-stream is returned base64-encoded.
    let b = with_reader("application/octet-stream", &[0, 1, 2, 255]);
    let out = render_deploy_executions(&spiff, &b).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.deploy_items[0].config,
        json!({"key": "KEY(myconfig)", "content": "AAEC/w=="})
    );
}

#[test]
fn resource_errors_and_missing_reader_fail_the_render() {
    let go = single_deploy(
        "deployItems:\n- name: x\n  type: t\n  config:\n    key: {{ getResourceKey `cd://resources/other` }}\n",
    );
    let e = render_deploy_executions(&go, &with_reader("text/plain", b"x")).unwrap_err();
    assert!(
        e.message
            .contains("cd://resources/other not found in example.com/comp:1.0.0"),
        "{e}"
    );
    let e =
        render_deploy_executions(&go, &Bindings::with_imports(obj(json!({"a": {}})))).unwrap_err();
    assert!(e.message.contains("no component version is defined"), "{e}");
}

#[test]
fn an_invalid_workflow_condition_is_a_blueprint_error_when_loaded() {
    // Issue 19: every CEL expression of a static subinstallation is compiled when the blueprint
    // is loaded; the issue names the file, the subinstallation and the condition's field.
    let file = |name: &str, extra: &str| {
        format!(
            "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: InstallationTemplate\nname: {name}\nblueprint:\n  ref: cd://resources/child\n{extra}"
        )
    };
    let bp = "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\nsubinstallations:\n- apiVersion: landscaper.gardener.cloud/v1alpha1\n  kind: InstallationTemplate\n  name: inline\n  blueprint:\n    ref: cd://resources/child\n  appliance:\n    reconcilePrecondition: imports.(\n- file: /f.yaml\n";
    let bp = Blueprint::from_fs(
        BlueprintFs::new().with("blueprint.yaml", bp).with(
            "f.yaml",
            file(
                "fromfile",
                "appliance:\n  activationCondition: 'imports.on &&'\n",
            )
            .as_str(),
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let problems: Vec<String> = bp.problems().iter().map(ToString::to_string).collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with("blueprint.yaml:10:")
            && problems[0].contains(
                "subinstallations[0].appliance.reconcilePrecondition: invalid workflow condition of subinstallation \"inline\": invalid CEL expression: "
            ),
        "{problems:?}"
    );
    assert!(
        problems[1].starts_with(
            "/f.yaml: appliance.activationCondition: invalid workflow condition of subinstallation \"fromfile\": invalid CEL expression: "
        ),
        "{problems:?}"
    );
    // Rendering reports it too (the Installation's Init shows it in its lastError).
    let e = render_subinstallations(&bp, &Bindings::with_imports(Map::new())).unwrap_err();
    assert!(
        e.to_string()
            .contains("subinstallations[0].appliance.reconcilePrecondition"),
        "{e}"
    );
}

#[test]
fn an_invalid_workflow_condition_of_a_rendered_item_is_a_render_error() {
    let bp = single_deploy(
        "deployItems:\n- name: x\n  type: t\n  config: {}\n  appliance:\n    readyPostcondition: 'self.exports.('\n",
    );
    let b = Bindings::with_imports(Map::new());
    let e = render_deploy_executions(&bp, &b).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("deploy execution \"one\"")
            && text.contains(
                "invalid workflow condition: deploy item \"x\": deployItems[0].appliance.readyPostcondition: invalid CEL expression: "
            ),
        "{text}"
    );
    // A policy does not belong on a deploy item.
    let bp = single_deploy(
        "deployItems:\n- name: x\n  type: t\n  config: {}\n  appliance:\n    maxConcurrency: 2\n",
    );
    let text = render_deploy_executions(&bp, &b).unwrap_err().to_string();
    assert!(
        text.contains("deployItems[0].appliance.maxConcurrency: Forbidden"),
        "{text}"
    );
}
