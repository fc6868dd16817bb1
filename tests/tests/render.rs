//! End-to-end: `landscaper-appliance render` with the real binary on blueprint fixtures written
//! to a temp folder, and on the acceptance scenarios (rendered deploy items compared with the
//! oracle's `expected/<variant>.step-1.yaml`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use landscaper_e2e::binary;
use serde_json::{Map, Value, json};

fn render(args: &[&str]) -> Output {
    Command::new(binary())
        .arg("render")
        .args(args)
        .output()
        .expect("run landscaper-appliance render")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let o = render(&all);
    assert!(
        o.status.success(),
        "render {args:?} failed:\n{}",
        stderr(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", stdout(&o)))
}

fn write(dir: &Path, rel: &str, content: &str) -> PathBuf {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, content).unwrap();
    p
}

const BLUEPRINT: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
localTypes:
  Replicas: {type: integer, minimum: 1}
imports:
- name: cluster
  type: target
  targetType: landscaper.gardener.cloud/kubernetes-cluster
- name: app
  schema:
    $ref: blueprint://schemas/app.json
- name: replicas
  required: false
  default: {value: 1}
  schema: {$ref: "local://Replicas"}
exports:
- name: url
  schema: {type: string}
deployExecutions:
- name: main
  type: GoTemplate
  file: /templates/deploy.yaml
exportExecutions:
- name: url
  type: GoTemplate
  template: |
    exports:
      url: http://{{ .deployitems.app.host }}:{{ .imports.app.port }}
subinstallations:
- file: /subinst.yaml
"#;

const DEPLOY: &str = r#"deployItems:
- name: app
  type: landscaper.gardener.cloud/mock
  target:
    import: cluster
  config:
    apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
    kind: ProviderConfiguration
    providerStatus:
      manifests:
      {{- include "templates/cm.tpl" . | nindent 6 }}
"#;

const CM: &str = r#"- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: {{ .imports.app.name }}
    namespace: {{ .imports.cluster.metadata.namespace }}
  data:
    replicas: "{{ .imports.replicas }}"
    {{- .imports.app.labels | toYaml | nindent 4 }}
"#;

const SUB: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: InstallationTemplate
name: child
blueprint:
  ref: cd://resources/child
imports:
  targets:
  - name: cluster
    target: cluster
"#;

fn fixture(dir: &Path) -> PathBuf {
    let bp = dir.join("bp");
    write(&bp, "blueprint.yaml", BLUEPRINT);
    write(&bp, "templates/deploy.yaml", DEPLOY);
    write(&bp, "templates/cm.tpl", CM);
    write(&bp, "subinst.yaml", SUB);
    write(
        &bp,
        "schemas/app.json",
        r#"{"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}, "labels": {"type": "object"}}}"#,
    );
    bp
}

const IMPORTS: &str = r#"cluster:
  type: landscaper.gardener.cloud/kubernetes-cluster
  config: {kubeconfig: x}
app:
  name: web
  port: 8080
  labels: {tier: front}
"#;

#[test]
fn renders_a_blueprint_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let bp = fixture(tmp.path());
    let imports = write(tmp.path(), "imports.yaml", IMPORTS);
    let exports = write(
        tmp.path(),
        "exports.yaml",
        "deployitems:\n  app: {host: web.local}\n",
    );
    let out = ok_json(&[
        bp.to_str().unwrap(),
        "--imports",
        imports.to_str().unwrap(),
        "--export-values",
        exports.to_str().unwrap(),
    ]);
    assert_eq!(
        out,
        json!({
            "deployItems": [{
                "name": "app",
                "type": "landscaper.gardener.cloud/mock",
                "target": {"import": "cluster"},
                "config": {
                    "apiVersion": "mock.deployer.landscaper.gardener.cloud/v1alpha1",
                    "kind": "ProviderConfiguration",
                    "providerStatus": {"manifests": [{
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "web", "namespace": "default"},
                        "data": {"replicas": "1", "tier": "front"},
                    }]},
                },
            }],
            "subinstallations": [{
                "apiVersion": "landscaper.gardener.cloud/v1alpha1",
                "kind": "InstallationTemplate",
                "name": "child",
                "blueprint": {"ref": "cd://resources/child"},
                "imports": {"targets": [{"name": "cluster", "target": "cluster"}]},
            }],
            "exports": {"url": "http://web.local:8080"},
        })
    );
    // YAML is the default output, with sorted keys.
    let o = render(&[bp.to_str().unwrap(), "--imports", imports.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("deployItems:\n- config:\n"), "{text}");
    assert!(
        text.contains("\nsubinstallations:\n- apiVersion: landscaper.gardener.cloud/v1alpha1\n"),
        "{text}"
    );
    assert!(!text.contains("exports:"), "{text}");
}

#[test]
fn renders_an_installation_with_its_imports_from_manifests() {
    let tmp = tempfile::tempdir().unwrap();
    let manifests = tmp.path().join("manifests");
    write(
        &manifests,
        "objects.yaml",
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Target
metadata: {name: edge, namespace: ns}
spec:
  type: landscaper.gardener.cloud/kubernetes-cluster
  config: {kubeconfig: x}
---
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: DataObject
metadata: {name: app-config, namespace: ns}
data: {name: from-do, port: 1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: ns}
data:
  replicas: "3"
"#,
    );
    let inst = write(
        tmp.path(),
        "inst.yaml",
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata: {name: demo, namespace: ns}
spec:
  imports:
    targets:
    - {name: cluster, target: edge}
    data:
    - {name: config, dataRef: app-config}
    - {name: replicas, configMapRef: {name: cm, key: replicas}}
  importDataMappings:
    app:
      name: (( config.name "-x" ))
      labels: {via: mapping}
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          imports:
          - name: cluster
            targetType: kubernetes-cluster
          - name: app
            schema: {type: object}
          - name: replicas
            schema: {type: integer}
          deployExecutions:
          - name: d
            type: GoTemplate
            template: |
              deployItems:
              - name: {{ .imports.app.name }}
                type: landscaper.gardener.cloud/mock
                target: {import: cluster}
                config:
                  replicas: {{ .imports.replicas }}
                  target: {{ .imports.cluster.metadata.name }}
                  via: {{ .imports.app.labels.via }}
                  bp: {{ keys .blueprint.inline | first }}
"#,
    );
    let out = ok_json(&[
        inst.to_str().unwrap(),
        "--imports-from",
        manifests.to_str().unwrap(),
    ]);
    assert_eq!(
        out["deployItems"],
        json!([{
            "name": "from-do-x",
            "type": "landscaper.gardener.cloud/mock",
            "target": {"import": "cluster"},
            "config": {"replicas": 3, "target": "edge", "via": "mapping", "bp": "filesystem"},
        }])
    );
}

#[test]
fn failures_exit_1_with_file_execution_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let bp = fixture(tmp.path());
    // A required import is missing.
    let imports = write(
        tmp.path(),
        "imports.yaml",
        "cluster: {type: landscaper.gardener.cloud/kubernetes-cluster}\n",
    );
    let o = render(&[bp.to_str().unwrap(), "--imports", imports.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(r#"invalid imports: import "app": blueprint defines import "app" of type data, which is not satisfied"#),
        "{}",
        stderr(&o)
    );
    // A value that violates the schema: the import, the pointer and the schema path.
    let imports = write(
        tmp.path(),
        "imports.yaml",
        "cluster: {type: landscaper.gardener.cloud/kubernetes-cluster}\napp: {name: w, port: eighty}\n",
    );
    let o = render(&[bp.to_str().unwrap(), "--imports", imports.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(r#"import "app": /port: "eighty" is not of type "integer" (schema path /properties/port/type)"#),
        "{}",
        stderr(&o)
    );
    // A printed missing value: execution, file and output line.
    write(
        &bp,
        "templates/cm.tpl",
        "- apiVersion: v1\n  kind: ConfigMap\n  data:\n    missing: {{ .imports.app.nothing }}\n",
    );
    let imports = write(tmp.path(), "imports.yaml", IMPORTS);
    let o = render(&[bp.to_str().unwrap(), "--imports", imports.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(r#"deploy execution "main" (GoTemplate, file templates/deploy.yaml, output line 14, column 20): template "deploy execution" contains fields with "no value""#),
        "{err}"
    );
    assert!(
        err.contains("\n14:           missing: <no value>\n"),
        "{err}"
    );
    // A template error: execution, file, line and column.
    write(
        &bp,
        "templates/deploy.yaml",
        "deployItems:\n- name: x\n  config: {{ .imports.app.name.deeper }}\n",
    );
    let o = render(&[bp.to_str().unwrap(), "--imports", imports.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(
            r#"deploy execution "main" (GoTemplate, file templates/deploy.yaml, line 3, column "#
        ),
        "{err}"
    );
    assert!(err.contains("can't evaluate field deeper"), "{err}");
    // Not a blueprint at all.
    let o = render(&[tmp.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no blueprint.yaml at its root"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn renders_single_templates() {
    let tmp = tempfile::tempdir().unwrap();
    let t = write(
        tmp.path(),
        "t.tpl",
        "name: {{ .name | upper }}\n{{ include \"part.tpl\" . }}\n",
    );
    write(tmp.path(), "part.tpl", "items: {{ .items | toJson }}");
    let values = write(tmp.path(), "values.yaml", "name: abc\nitems: [1, 2]\n");
    let o = Command::new(binary())
        .args(["render", "template", "--engine", "gotemplate"])
        .arg(&t)
        .arg("--values")
        .arg(&values)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "name: ABC\nitems: [1,2]\n");

    let s = write(
        tmp.path(),
        "s.yaml",
        "greeting: (( \"hello \" name ))\ncount: (( length(items) ))\nfile: (( read(\"part.tpl\") ))\n",
    );
    let o = Command::new(binary())
        .args(["render", "template", "--engine", "spiff"])
        .arg(&s)
        .arg("--values")
        .arg(&values)
        .args(["-o", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v,
        json!({"greeting": "hello abc", "count": 2, "file": "items: {{ .items | toJson }}"})
    );
    // Errors exit 1.
    let bad = write(tmp.path(), "bad.tpl", "{{ .name | nosuchfunc }}");
    let o = Command::new(binary())
        .args(["render", "template", "--engine", "gotemplate"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("function \"nosuchfunc\" not defined"),
        "{}",
        stderr(&o)
    );
}

// --- acceptance scenarios -----------------------------------------------------------------

fn yaml_docs(text: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(text).unwrap_or_default()
}

/// Root Installations of a step folder: (name, file).
fn installations(step: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(step)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for f in files {
        for doc in yaml_docs(&std::fs::read_to_string(&f).unwrap()) {
            if doc["kind"] == "Installation"
                && let Some(name) = doc["metadata"]["name"].as_str()
            {
                out.push((name.to_string(), f.clone()));
            }
        }
    }
    out
}

/// The fields of a rendered deploy item that the oracle records.
fn comparable(item: &Value) -> Value {
    let mut m = Map::new();
    for k in [
        "name",
        "type",
        "target",
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

/// Targets other installations export, by name (`exportedTargets` anywhere in the oracle's file).
fn exported_targets(v: &Value, out: &mut Map<String, Value>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Object(t)) = m.get("exportedTargets") {
                out.extend(t.clone());
            }
            m.values().for_each(|v| exported_targets(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| exported_targets(v, out)),
        _ => {}
    }
}

/// An imports file from the oracle's `blueprintImports` (`{$target: name, type}` placeholders
/// become Target objects: from the folder, or as another installation exports them).
fn oracle_imports(step: &Path, imports: &Value, exported: &Map<String, Value>) -> Value {
    let targets: Vec<Value> = std::fs::read_dir(step)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "yaml"))
        .flat_map(|e| yaml_docs(&std::fs::read_to_string(e.path()).unwrap()))
        .filter(|d| d["kind"] == "Target")
        .collect();
    let conv_target = |m: &Map<String, Value>| {
        let name = m["$target"].as_str().unwrap_or_default();
        targets
            .iter()
            .find(|t| t["metadata"]["name"] == name)
            .cloned()
            .unwrap_or_else(|| {
                let spec = exported.get(name).cloned().unwrap_or_else(
                    || json!({"type": m.get("type").cloned().unwrap_or(Value::Null)}),
                );
                json!({
                    "apiVersion": "landscaper.gardener.cloud/v1alpha1",
                    "kind": "Target",
                    "metadata": {"name": name, "namespace": "cu-example"},
                    "spec": spec,
                })
            })
    };
    fn conv(v: &Value, f: &dyn Fn(&Map<String, Value>) -> Value) -> Value {
        match v {
            Value::Object(m) if m.contains_key("$target") => f(m),
            Value::Object(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), conv(v, f))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| conv(v, f)).collect()),
            other => other.clone(),
        }
    }
    conv(imports, &conv_target)
}

/// For an installation without subinstallations and export data mappings whose deploy items
/// are mock items: renders the export executions with the mock exports (`config.export`) and
/// compares the exported DataObjects with the oracle's.
fn compare_exports(
    file: &Path,
    step: &Path,
    name: &str,
    inst: &Value,
    rendered: &Value,
    tmp: &Path,
) -> Option<Result<usize, String>> {
    let want = inst.get("exportedDataObjects")?.as_object()?;
    if inst.get("subinstallations").is_some() {
        return None;
    }
    let manifest = yaml_docs(&std::fs::read_to_string(file).ok()?)
        .into_iter()
        .find(|d| d["kind"] == "Installation" && d["metadata"]["name"] == name)?;
    if manifest["spec"].get("exportDataMappings").is_some() {
        return None;
    }
    let mut deployitems = Map::new();
    for item in rendered["deployItems"].as_array()? {
        if let (Some(n), Some(e)) = (item["name"].as_str(), item["config"].get("export")) {
            deployitems.insert(n.to_string(), e.clone());
        }
    }
    let ev = tmp.join(format!("{name}-export-values.json"));
    std::fs::write(
        &ev,
        serde_json::to_vec(&json!({"deployitems": deployitems})).ok()?,
    )
    .ok()?;
    let o = render(&[
        file.to_str()?,
        "--imports-from",
        step.to_str()?,
        "--export-values",
        ev.to_str()?,
        "-o",
        "json",
    ]);
    if !o.status.success() {
        return Some(Err(format!("export rendering failed: {}", stderr(&o))));
    }
    let out: Value = serde_json::from_slice(&o.stdout).ok()?;
    let mut n = 0;
    for e in manifest["spec"]["exports"]["data"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        let (Some(export), Some(data_ref)) = (e["name"].as_str(), e["dataRef"].as_str()) else {
            continue;
        };
        let got = &out["exports"][export];
        match want.get(data_ref) {
            Some(w) if w == got => n += 1,
            w => {
                return Some(Err(format!(
                    "export {export} (DataObject {data_ref}): got {got}, want {}",
                    w.cloned().unwrap_or(Value::Null)
                )));
            }
        }
    }
    Some(Ok(n))
}

/// Installations the oracle does not evaluate (spiff import executions), checked against what
/// their EXPECTED.md documents.
fn documented(scenario: &str, name: &str, file: &Path, step: &Path) -> Result<String, String> {
    let o = render(&[
        file.to_str().unwrap(),
        "--imports-from",
        step.to_str().unwrap(),
        "-o",
        "json",
    ]);
    match (scenario.starts_with("15-"), name) {
        (true, "import-execution-1") => {
            if !o.status.success() {
                return Err(format!("render failed: {}", stderr(&o)));
            }
            let v: Value = serde_json::from_slice(&o.stdout).map_err(|e| e.to_string())?;
            let imps = &v["deployItems"][0]["config"]["imps"];
            let want = json!({
                "arbitraryImport": "foo",
                "mapToList": [{"key": "a", "value": "b"}, {"key": "foo", "value": "bar"}],
            });
            if *imps == want {
                Ok("config.imps from the import execution's bindings".to_string())
            } else {
                Err(format!("config.imps = {imps}, want {want}"))
            }
        }
        (true, "import-execution-2") => {
            if !o.status.success() && stderr(&o).contains("a foo error occurred") {
                Ok("fails with the import execution's error".to_string())
            } else {
                Err(format!(
                    "expected a failure with \"a foo error occurred\": {}",
                    stderr(&o)
                ))
            }
        }
        _ => Err("no documented expectation known to this test".to_string()),
    }
}

#[test]
fn acceptance_root_installations_render_as_the_oracle_expects() {
    let Some(acceptance) = landscaper_e2e::acceptance_dir() else {
        println!("SKIP: no acceptance scenarios beside this checkout");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(&acceptance)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("EXPECTED.md").exists())
        .collect();
    scenarios.sort();
    let (mut matched, mut failed_as_expected) = (Vec::new(), Vec::new());
    let (mut mismatches, mut not_handled) = (Vec::new(), Vec::new());
    for scenario in scenarios {
        let sname = scenario.file_name().unwrap().to_string_lossy().to_string();
        let Some((step, expected)) = ["mock", "any"].iter().find_map(|v| {
            let step = scenario.join(v).join("step-1");
            let exp = scenario.join("expected").join(format!("{v}.step-1.yaml"));
            (step.is_dir() && exp.exists()).then_some((step, exp))
        }) else {
            not_handled.push(format!("{sname}: no mock/any step-1"));
            continue;
        };
        let expected = yaml_docs(&std::fs::read_to_string(&expected).unwrap())
            .into_iter()
            .next()
            .unwrap_or(Value::Null);
        let files = installations(&step);
        let mut exported = Map::new();
        exported_targets(&expected, &mut exported);
        for inst in expected["installations"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let name = inst["name"].as_str().unwrap_or_default().to_string();
            let id = format!("{sname}/{name}");
            let Some((_, file)) = files.iter().find(|(n, _)| *n == name) else {
                not_handled.push(format!("{id}: no manifest"));
                continue;
            };
            if inst["phase"]
                .as_str()
                .is_some_and(|p| p.starts_with("Unsupported"))
            {
                // The oracle could not compute it; EXPECTED.md states the result.
                match documented(&sname, &name, file, &step) {
                    Ok(m) => matched.push(format!("{id}: {m} (as EXPECTED.md documents)")),
                    Err(m) => mismatches.push(format!("{id}: {m}")),
                }
                continue;
            }
            let want_items = inst.get("deployItems").and_then(Value::as_array);
            let o = render(&[
                file.to_str().unwrap(),
                "--imports-from",
                step.to_str().unwrap(),
                "-o",
                "json",
            ]);
            let mut how = "imports from the folder";
            let rendered: Option<Value> = if o.status.success() {
                serde_json::from_slice(&o.stdout).ok()
            } else if want_items.is_none() && inst["phase"] == "Failed" {
                // Landscaper fails this installation before any deploy item exists.
                let err = stderr(&o);
                let line = err
                    .lines()
                    .find(|l| l.starts_with("error:"))
                    .unwrap_or_default()
                    .to_string();
                failed_as_expected.push(format!("{id}: {line}"));
                continue;
            } else if let Some(imports) = inst.get("blueprintImports") {
                // Imports come from other installations' exports: use the oracle's values.
                how = "the oracle's import values";
                let mut manifest = yaml_docs(&std::fs::read_to_string(file).unwrap())
                    .into_iter()
                    .find(|d| d["kind"] == "Installation" && d["metadata"]["name"] == name.as_str())
                    .unwrap();
                let spec = manifest["spec"].as_object_mut().unwrap();
                spec.remove("imports");
                spec.remove("importDataMappings");
                let mf = tmp.path().join(format!("{sname}-{name}.json"));
                std::fs::write(&mf, serde_json::to_vec(&manifest).unwrap()).unwrap();
                let imf = tmp.path().join(format!("{sname}-{name}-imports.json"));
                std::fs::write(
                    &imf,
                    serde_json::to_vec(&oracle_imports(&step, imports, &exported)).unwrap(),
                )
                .unwrap();
                let o2 = render(&[
                    mf.to_str().unwrap(),
                    "--imports",
                    imf.to_str().unwrap(),
                    "-o",
                    "json",
                ]);
                if o2.status.success() {
                    serde_json::from_slice(&o2.stdout).ok()
                } else {
                    mismatches.push(format!(
                        "{id}: render failed:\n{}\n(with folder imports: {})",
                        stderr(&o2),
                        stderr(&o)
                    ));
                    continue;
                }
            } else {
                mismatches.push(format!("{id}: render failed: {}", stderr(&o)));
                continue;
            };
            let Some(rendered) = rendered else {
                mismatches.push(format!("{id}: output is not JSON"));
                continue;
            };
            let got: Vec<Value> = rendered["deployItems"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(comparable)
                .collect();
            let want: Vec<Value> = want_items
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(comparable)
                .collect();
            if got == want {
                let exports = if how == "imports from the folder" {
                    compare_exports(file, &step, &name, &inst, &rendered, tmp.path())
                } else {
                    None
                };
                match exports {
                    Some(Err(m)) => mismatches.push(format!("{id}: {m}")),
                    Some(Ok(n)) => matched.push(format!(
                        "{id}: {} deploy item(s) and {n} export(s), {how}",
                        got.len()
                    )),
                    None => matched.push(format!("{id}: {} deploy item(s), {how}", got.len())),
                }
            } else {
                mismatches.push(format!(
                    "{id}: deploy items differ ({how})\n got: {}\nwant: {}",
                    serde_json::to_string(&got).unwrap(),
                    serde_json::to_string(&want).unwrap()
                ));
            }
        }
    }
    println!(
        "acceptance render: {} matched, {} failed as expected, {} mismatched",
        matched.len(),
        failed_as_expected.len(),
        mismatches.len()
    );
    for m in &matched {
        println!("  match: {m}");
    }
    for m in &failed_as_expected {
        println!("  fails as expected: {m}");
    }
    for m in &not_handled {
        println!("  not handled: {m}");
    }
    assert!(
        mismatches.is_empty(),
        "mismatches:\n{}",
        mismatches.join("\n\n")
    );
    assert!(
        matched.len() >= 10,
        "too few scenarios compared: {matched:?}"
    );
}
