//! Landscaper's functions in Spiff (`spiff/funcs.go: LandscaperSpiffFuncs`): `parseOCIRef`,
//! `ociRefRepo`, `ociRefVersion`, `getResource` and `getComponent`, on their own and in the
//! Spiff executions of a blueprint (deploy, export, subinstallation and import executions).

use landscaper_templating::blueprint::{
    Bindings, Blueprint, BlueprintFs, ExportBindings, render_deploy_executions,
    render_export_executions, render_import_executions, render_subinstallations,
};
use landscaper_templating::gotemplate::funcs::{Components, landscaper_template_funcs};
use landscaper_templating::gotemplate::{self, Value as GoValue};
use landscaper_templating::spiff::{self, SpiffOptions, landscaper_functions};
use serde_json::{Map, Value, json};

/// The installation's component descriptor: two resources (one with an extra identity) and a
/// reference to a component in the list.
fn cd() -> Value {
    json!({
        "meta": {"schemaVersion": "v2"},
        "component": {
            "name": "example.com/root",
            "version": "1.0.0",
            "provider": "internal",
            "repositoryContexts": [{"type": "ociRegistry", "baseUrl": "eu.gcr.io/x"}],
            "sources": [],
            "resources": [
                {"name": "image", "version": "1.2.3", "type": "ociImage", "relation": "external",
                 "access": {"type": "ociRegistry", "imageReference": "eu.gcr.io/x/img:1.2.3"}},
                {"name": "chart", "version": "0.1.0", "type": "helm", "relation": "local",
                 "extraIdentity": {"os": "linux"}, "labels": [{"name": "size", "value": 3}],
                 "access": {"type": "ociRegistry", "imageReference": "eu.gcr.io/x/chart:0.1.0"}},
                {"name": "chart", "version": "0.2.0", "type": "helm", "relation": "local",
                 "extraIdentity": {"os": "darwin"},
                 "access": {"type": "ociRegistry", "imageReference": "eu.gcr.io/x/chart:0.2.0"}}
            ],
            "componentReferences": [
                {"name": "dep", "componentName": "example.com/dep", "version": "2.0.0"},
                {"name": "gone", "componentName": "example.com/gone", "version": "9.9.9"}
            ]
        }
    })
}

fn dep() -> Value {
    json!({
        "meta": {"schemaVersion": "v2"},
        "component": {
            "name": "example.com/dep",
            "version": "2.0.0",
            "provider": "internal",
            "repositoryContexts": [],
            "sources": [],
            "componentReferences": [],
            "resources": [
                {"name": "tool", "version": "2.0.0", "type": "blob", "relation": "local",
                 "access": {"type": "localFilesystemBlob", "filename": "tool.tgz"}}
            ]
        }
    })
}

fn components() -> Value {
    json!({"meta": {"schemaVersion": "v2"}, "components": [cd(), dep()]})
}

fn options(cd: &Value, list: &Value, annotation: Option<&str>) -> SpiffOptions {
    SpiffOptions {
        functions: landscaper_functions(cd, list, annotation),
        stack_size: 0,
        ..SpiffOptions::default()
    }
}

/// Evaluates a Spiff template with Landscaper's functions and `cd`/`components` bound (and the
/// fixture's descriptor as `given`, to pass as argument).
fn eval_with(template: &str, cd: Value, annotation: Option<&str>) -> Result<Value, String> {
    let list = components();
    let mut b = Map::new();
    b.insert("given".into(), self::cd());
    b.insert("cd".into(), cd.clone());
    b.insert("components".into(), list.clone());
    spiff::evaluate_yaml(template, &[], &b, &options(&cd, &list, annotation))
        .map_err(|e| e.to_string())
}

fn eval(template: &str) -> Value {
    eval_with(template, cd(), None).unwrap_or_else(|e| panic!("{e}"))
}

fn eval_err(template: &str) -> String {
    match eval_with(template, cd(), None) {
        Ok(v) => panic!("expected an error, got {v}"),
        Err(e) => e,
    }
}

#[test]
fn oci_reference_functions() {
    let out = eval(
        r#"
ref: (( parseOCIRef("eu.gcr.io/a/b:1.0") ))
repo: (( ociRefRepo("eu.gcr.io/a/b:1.0") ))
version: (( ociRefVersion("eu.gcr.io/a/b:1.0") ))
first: (( parseOCIRef("eu.gcr.io/a/b:1.0")[0] ))
hub: (( parseOCIRef("nginx:1.19") ))
hubLibrary: (( ociRefRepo("docker.io/library/nginx:1.19") ))
hubUser: (( ociRefRepo("docker.io/me/app:2") ))
port: (( parseOCIRef("localhost:5000/x/y") ))
digest: (( parseOCIRef("eu.gcr.io/a/b@sha256:0123456789012345678901234567890123456789012345678901234567890123") ))
scheme: (( ociRefRepo("oci://eu.gcr.io/a/b:1.0") ))
fromCd: (( ociRefVersion(getResource(cd, "name", "image").access.imageReference) ))
"#,
    );
    assert_eq!(
        out,
        json!({
            "ref": ["eu.gcr.io/a/b", "1.0"],
            "repo": "eu.gcr.io/a/b",
            "version": "1.0",
            "first": "eu.gcr.io/a/b",
            "hub": ["nginx", "1.19"],
            "hubLibrary": "nginx",
            "hubUser": "me/app",
            "port": ["localhost:5000/x/y", "latest"],
            "digest": ["eu.gcr.io/a/b", "sha256:0123456789012345678901234567890123456789012345678901234567890123"],
            "scheme": "eu.gcr.io/a/b",
            "fromCd": "1.2.3",
        })
    );
}

#[test]
fn oci_reference_errors() {
    // Landscaper's message for more than one argument, whichever function is called.
    for f in ["parseOCIRef", "ociRefRepo", "ociRefVersion"] {
        let e = eval_err(&format!("x: (( {f}(\"a:1\", \"b:2\") ))\n"));
        assert!(
            e.contains("Too many arguments for parseOCIReference. Expected 1 reference."),
            "{f}: {e}"
        );
        let e = eval_err(&format!("x: (( {f}() ))\n"));
        assert!(
            e.contains("Too few arguments for parseOCIReference. Expected 1 reference."),
            "{f}: {e}"
        );
        let e = eval_err(&format!("x: (( {f}(1) ))\n"));
        assert!(e.contains("Invalid argument: string expected"), "{f}: {e}");
    }
    let e = eval_err("x: (( parseOCIRef(\"Eu.gcr.io/A/b:1\") ))\n");
    assert!(
        e.contains("invalid reference format: repository name must be lowercase"),
        "{e}"
    );
    // The digest is checked as go-digest checks it.
    let hex32 = "0123456789abcdef0123456789abcdef";
    for (digest, want) in [
        (format!("sha256:{hex32}"), "invalid checksum digest length"),
        (
            format!("sha256:{}", hex32.repeat(2).to_uppercase()),
            "invalid checksum digest format",
        ),
        (format!("md5:{hex32}"), "unsupported digest algorithm"),
        (format!("MD5:{hex32}"), "invalid checksum digest format"),
    ] {
        let e = eval_err(&format!(
            "x: (( parseOCIRef(\"eu.gcr.io/a/b@{digest}\") ))\n"
        ));
        assert!(e.contains(want), "{digest}: {e}");
    }
    let out = eval(&format!(
        "x: (( ociRefVersion(\"eu.gcr.io/a/b:1.0@sha512:{}\") ))\n",
        hex32.repeat(4)
    ));
    assert_eq!(out, json!({"x": format!("sha512:{}", hex32.repeat(4))}));
    let e = eval_err("x: (( ociRefRepo(\"no tag here\") ))\n");
    assert!(e.contains("invalid reference format"), "{e}");
    // The path and the expression of the failing node are named.
    assert!(e.starts_with("x: (( ociRefRepo(\"no tag here\") ))"), "{e}");
}

#[test]
fn get_resource_selects_by_identity() {
    let out = eval(
        r#"
image: (( getResource(cd, "name", "image") ))
linux: (( getResource(cd, "name", "chart", "os", "linux").version ))
darwin: (( getResource(cd, "os", "darwin", "name", "chart").version ))
firstChart: (( getResource(cd, "name", "chart").version ))
noCd: (( getResource("name", "image").version ))
size: (( getResource(cd, "name", "chart").labels[0].value + 1 ))
dep: (( getResource(getComponent(cd, "name", "dep"), "name", "tool").access.filename ))
"#,
    );
    assert_eq!(out["image"], cd()["component"]["resources"][0]);
    assert_eq!(out["linux"], json!("0.1.0"));
    assert_eq!(out["darwin"], json!("0.2.0"));
    assert_eq!(out["firstChart"], json!("0.1.0"));
    assert_eq!(out["noCd"], json!("1.2.3"));
    // Numbers in the descriptor stay integers.
    assert_eq!(out["size"], json!(4));
    assert_eq!(out["dep"], json!("tool.tgz"));
}

#[test]
fn get_component_resolves_references() {
    let out = eval(
        r#"
dep: (( getComponent(cd, "name", "dep") ))
name: (( getComponent(cd, "name", "dep").component.name ))
noCd: (( getComponent("name", "dep").component.version ))
"#,
    );
    assert_eq!(out["dep"], dep());
    assert_eq!(out["name"], json!("example.com/dep"));
    assert_eq!(out["noCd"], json!("2.0.0"));
    // The blueprint's `ocmSchemaVersion` annotation: v2 and v3alpha1 are known.
    for v in ["v2", "ocm.software/v3alpha1"] {
        let out = eval_with(
            "x: (( getComponent(cd, \"name\", \"dep\").component.version ))\n",
            cd(),
            Some(v),
        )
        .unwrap();
        assert_eq!(out, json!({"x": "2.0.0"}));
    }
}

#[test]
fn component_function_errors() {
    let cases = [
        // Missing resource or reference.
        (r#"getResource(cd, "name", "nope")"#, "NotFound"),
        (
            r#"getResource(cd, "name", "chart", "os", "windows")"#,
            "NotFound",
        ),
        (r#"getComponent(cd, "name", "nope")"#, "NotFound"),
        // A selected reference whose component is not in the list.
        (
            r#"getComponent(cd, "name", "gone")"#,
            "unable to resolve component gone:9.9.9",
        ),
        // Arity and argument types.
        ("getResource()", "at least 2 arguments are expected"),
        ("getResource(cd)", "at least 2 arguments are expected"),
        ("getComponent(cd)", "at least 2 arguments are expected"),
        (
            r#"getResource(cd, "name")"#,
            "odd number of key value pairs",
        ),
        (
            r#"getResource("name", "image", "os")"#,
            "odd number of key value pairs",
        ),
        (
            r#"getResource(cd, "name", 1)"#,
            "expect argument 1 to be a string",
        ),
        (
            r#"getResource(cd, 1, "x")"#,
            "expect argument 0 to be a string",
        ),
        // Descriptors given as argument must have a known schema version.
        (
            r#"getResource({"component" = {}}, "name", "x")"#,
            "unable to determine component descriptor schema version",
        ),
        (
            r#"getResource({"meta" = {"schemaVersion" = "v9"}}, "name", "x")"#,
            "unknown schema version",
        ),
        // Functions that need a component repository: none is given here.
        (
            r#"getResourceKey("cd://resources/image")"#,
            "getResourceKey: unable to resolve the resource as no component version is defined",
        ),
        // Functions that need a cluster.
        (
            r#"getShootAdminKubeconfig("a", "b", 1, {})"#,
            "getShootAdminKubeconfig is not supported in the appliance",
        ),
    ];
    for (expr, want) in cases {
        let e = eval_err(&format!("x: (( {expr} ))\n"));
        assert!(e.contains(want), "{expr}: want {want:?}, got {e}");
    }
    // No component descriptor: resources and components can only be searched in a descriptor
    // given as argument.
    let e = eval_with(
        "x: (( getResource(\"name\", \"image\") ))\n",
        json!(null),
        None,
    )
    .unwrap_err();
    assert!(
        e.contains("Unable to search for a resource as no ComponentDescriptor is defined."),
        "{e}"
    );
    let e = eval_with(
        "x: (( getComponent(\"name\", \"dep\") ))\n",
        json!(null),
        None,
    )
    .unwrap_err();
    assert!(
        e.contains("Unable to search for a component as no ComponentDescriptor is defined."),
        "{e}"
    );
    let out = eval_with(
        "x: (( getResource(given, \"name\", \"image\").version ))\n",
        json!(null),
        None,
    );
    assert_eq!(out, Ok(json!({"x": "1.2.3"})));
    // Without an installation component Landscaper has no OCM schema version for the result of
    // getComponent unless the blueprint names one.
    let with_cd_argument = "x: (( getComponent(given, \"name\", \"dep\").component.name ))\n";
    let e = eval_with(with_cd_argument, json!(null), None).unwrap_err();
    assert!(e.contains("unknown schema version"), "{e}");
    let out = eval_with(with_cd_argument, json!(null), Some("v2"));
    assert_eq!(out, Ok(json!({"x": "example.com/dep"})));
    let e = eval_with(
        "x: (( getComponent(cd, \"name\", \"dep\") ))\n",
        cd(),
        Some("v3"),
    )
    .unwrap_err();
    assert!(e.contains("unknown schema version"), "{e}");
}

#[test]
fn spiff_and_gotemplate_versions_agree() {
    let funcs = landscaper_template_funcs(Components {
        cd: GoValue::from_json(&cd()),
        list: GoValue::from_json(&components()),
        ..Components::default()
    });
    let go = |text: &str| {
        gotemplate::render("t", text, &json!({"cd": cd()}), &funcs).map_err(|e| e.to_string())
    };
    let pairs = [
        (
            r#"{{ (getResource .cd "name" "chart" "os" "darwin").version }}"#,
            r#"(( getResource(cd, "name", "chart", "os", "darwin").version ))"#,
        ),
        (
            r#"{{ (getComponent .cd "name" "dep").component.version }}"#,
            r#"(( getComponent(cd, "name", "dep").component.version ))"#,
        ),
        (
            r#"{{ ociRefRepo "docker.io/me/app:2" }}"#,
            r#"(( ociRefRepo("docker.io/me/app:2") ))"#,
        ),
        (
            r#"{{ index (parseOCIRef "eu.gcr.io/a/b:1.0") 1 }}"#,
            r#"(( parseOCIRef("eu.gcr.io/a/b:1.0")[1] ))"#,
        ),
    ];
    for (g, s) in pairs {
        let go_out = go(g).unwrap_or_else(|e| panic!("{g}: {e}"));
        let spiff_out = eval(&format!("x: {s}\n"));
        assert_eq!(json!({"x": go_out}), spiff_out, "{g} / {s}");
    }
    // The same failures.
    let e = go(r#"{{ getResource .cd "name" "nope" }}"#).unwrap_err();
    assert!(e.ends_with("error calling getResource: NotFound"), "{e}");
    let e = go(r#"{{ getComponent .cd "name" "gone" }}"#).unwrap_err();
    assert!(
        e.ends_with("error calling getComponent: unable to resolve component gone:9.9.9"),
        "{e}"
    );
}

// --- in blueprint executions -----------------------------------------------------------------

const BLUEPRINT: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
imports:
- name: ref
  schema: {type: string}
exports:
- name: image
  schema: {type: string}
- name: dep
  schema: {type: string}
importExecutions:
- name: imp
  type: Spiff
  template:
    bindings:
      repo: (( ociRefRepo(imports.ref) ))
deployExecutions:
- name: deploy
  type: Spiff
  file: deploy.yaml
exportExecutions:
- name: export
  type: Spiff
  template:
    exports:
      image: (( getResource(cd, "name", "image").access.imageReference ))
      dep: (( getComponent(cd, "name", "dep").component.name ))
subinstallationExecutions:
- name: sub
  type: Spiff
  template:
    subinstallations:
    - apiVersion: landscaper.gardener.cloud/v1alpha1
      kind: InstallationTemplate
      name: child
      blueprint:
        ref: (( "cd://resources/" getResource(cd, "name", "image").name ))
"#;

const DEPLOY: &str = r#"deployItems:
- name: (( "item-" ociRefVersion(imports.ref) ))
  type: landscaper.gardener.cloud/mock
  config:
    ref: (( parseOCIRef(imports.ref) ))
    image: (( getResource(cd, "name", "chart", "os", "linux") ))
    dep: (( getComponent(cd, "name", "dep").component.version ))
"#;

fn blueprint(deploy: &str) -> Blueprint {
    Blueprint::from_fs(
        BlueprintFs::new()
            .with("blueprint.yaml", BLUEPRINT)
            .with("deploy.yaml", deploy),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn bindings(cd: Value) -> Bindings {
    let mut imports = Map::new();
    imports.insert("ref".into(), json!("eu.gcr.io/a/b:1.0"));
    Bindings {
        imports,
        cd,
        components: components(),
        ..Bindings::default()
    }
}

#[test]
fn blueprint_executions_have_the_functions() {
    let bp = blueprint(DEPLOY);
    let b = bindings(cd());

    let out = render_import_executions(&bp, &b).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.bindings.get("repo"), Some(&json!("eu.gcr.io/a/b")));

    let out = render_deploy_executions(&bp, &b).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.deploy_items.len(), 1);
    assert_eq!(out.deploy_items[0].name, "item-1.0");
    assert_eq!(
        out.deploy_items[0].config,
        json!({
            "ref": ["eu.gcr.io/a/b", "1.0"],
            "image": cd()["component"]["resources"][1],
            "dep": "2.0.0",
        })
    );

    let out = render_export_executions(
        &bp,
        &ExportBindings {
            base: b.clone(),
            ..ExportBindings::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.exports.get("image"),
        Some(&json!("eu.gcr.io/x/img:1.2.3"))
    );
    assert_eq!(out.exports.get("dep"), Some(&json!("example.com/dep")));

    let out = render_subinstallations(&bp, &b).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.subinstallations.len(), 1);
    assert_eq!(
        serde_json::to_value(&out.subinstallations[0]).unwrap()["blueprint"]["ref"],
        json!("cd://resources/image")
    );
}

#[test]
fn blueprint_execution_errors_name_the_node() {
    let bp = blueprint(
        "deployItems:\n- name: x\n  type: t\n  config:\n    r: (( getResource(cd, \"name\", \"missing\") ))\n",
    );
    let e = render_deploy_executions(&bp, &bindings(cd())).unwrap_err();
    assert_eq!(e.line, Some(5), "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with(
            r#"deploy execution "deploy" (Spiff, file deploy.yaml, line 5, column 5): "#
        ),
        "{text}"
    );
    assert!(text.contains("NotFound"), "{text}");

    // (Not in a `name` field: spiff does not evaluate a list entry further whose name does not
    // resolve, and reports the name unresolved, without the reason.)
    let bp = blueprint(
        "deployItems:\n- name: x\n  type: t\n  config: (( ociRefRepo(\"a:1\", \"b:2\") ))\n",
    );
    let e = render_deploy_executions(&bp, &bindings(cd())).unwrap_err();
    assert!(
        e.to_string()
            .contains("Too many arguments for parseOCIReference. Expected 1 reference."),
        "{e}"
    );

    // Without a component descriptor.
    let bp = blueprint(DEPLOY);
    let e = render_deploy_executions(&bp, &bindings(json!(null))).unwrap_err();
    assert!(
        e.to_string()
            .contains("Unable to search for a resource as no ComponentDescriptor is defined."),
        "{e}"
    );
}
