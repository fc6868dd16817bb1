//! End-to-end: the function libraries inside the Go template engine. Expected outputs were
//! produced by Go (`helm template` with Helm v3.19 / sprig v3.3) where marked.

use landscaper_templating::gotemplate::funcs::{
    Components, helm_template_funcs, landscaper_template_funcs,
};
use landscaper_templating::gotemplate::{FuncMap, Limits, MapFiles, Template, render};
use serde_json::json;

fn helm(text: &str, data: serde_json::Value) -> String {
    render("t", text, &data, &helm_template_funcs()).unwrap_or_else(|e| format!("ERR {e}"))
}

fn with_files(funcs: &FuncMap, text: &str, files: MapFiles, data: serde_json::Value) -> String {
    let t = Template::parse("execution", text, funcs).unwrap();
    t.execute(
        "execution",
        &landscaper_templating::gotemplate::Value::from_json(&data),
        funcs,
        &files,
        &Limits::default(),
    )
    .unwrap_or_else(|e| format!("ERR {e}"))
}

#[test]
fn chart_style_pipelines() {
    // Go: helm template
    assert_eq!(
        helm(
            "{{- define \"labels\" -}}app: {{ .name | quote }}\nv: {{ .v | default \"1.0\" }}{{- end -}}\nmetadata:\n  labels:\n    {{- include \"labels\" . | nindent 4 }}\nspec:\n{{ toYaml .spec | indent 2 }}",
            json!({"name": "web", "spec": {"replicas": 3, "ports": [80, 443], "on": "yes"}})
        ),
        "metadata:\n  labels:\n    app: \"web\"\n    v: 1.0\nspec:\n  \"on\": \"yes\"\n  ports:\n  - 80\n  - 443\n  replicas: 3"
    );
}

#[test]
fn numbers_and_types_through_the_engine() {
    assert_eq!(
        helm(
            "{{ add 1.9 1 }} {{ typeOf (add 1 2) }} {{ div 7 2 }} {{ until 3 }}",
            json!({})
        ),
        "2 int64 3 [0 1 2]"
    );
    assert_eq!(
        helm(
            "{{ .x | int }} {{ typeOf .x }} {{ mul .x 2 }}",
            json!({"x": 2.5})
        ),
        "2 float64 4"
    );
    assert_eq!(
        helm(
            "{{ splitList \",\" \"a,b\" | toJson }} {{ dict \"a\" \"<b>\" | toJson }}",
            json!({})
        ),
        "[\"a\",\"b\"] {\"a\":\"\\u003cb\\u003e\"}"
    );
}

#[test]
fn set_and_merge_mutate_shared_maps() {
    assert_eq!(
        helm(
            "{{ $d := dict \"a\" 1 }}{{ $e := $d }}{{ $_ := set $d \"b\" 2 }}{{ $_ := merge $e (dict \"c\" 3 \"a\" 9) }}{{ toJson $d }}",
            json!({})
        ),
        "{\"a\":1,\"b\":2,\"c\":3}"
    );
    assert_eq!(
        helm("{{ $_ := set .m \"x\" 1 }}{{ .m.x }}", json!({"m": {}})),
        "1"
    );
}

#[test]
fn tpl_and_required_and_include() {
    assert_eq!(
        helm(
            "{{ tpl \"{{ .a }}-{{ include \\\"n\\\" . }}\" . }}{{ define \"n\" }}N{{ .a }}{{ end }}",
            json!({"a": "x"})
        ),
        "x-Nx"
    );
    let e = helm("{{ required \"need .a\" .a }}", json!({}));
    assert!(e.contains("HELM_ERR_STARTneed .aHELM_ERR_END"), "{e}");
    assert_eq!(helm("{{ tpl \"{{ .missing }}\" . }}", json!({})), "");
}

#[test]
fn landscaper_include_read_file_and_components() {
    let cd = json!({
        "meta": {"schemaVersion": "v2"},
        "component": {
            "name": "example.com/root", "version": "1.0.0",
            "repositoryContexts": [{"type": "ociRegistry", "baseUrl": "old"}, {"type": "ociRegistry", "baseUrl": "eu.gcr.io/x"}],
            "resources": [
                {"name": "image", "version": "1.2.3", "type": "ociImage", "access": {"type": "ociRegistry", "imageReference": "eu.gcr.io/x/img:1.2.3"}},
                {"name": "chart", "version": "0.1.0", "type": "helm", "extraIdentity": {"os": "linux"}, "access": {"type": "ociRegistry", "imageReference": "eu.gcr.io/x/chart:0.1.0"}}
            ],
            "componentReferences": [{"name": "dep", "componentName": "example.com/dep", "version": "2.0.0"}]
        }
    });
    let dep = json!({"meta": {"schemaVersion": "v2"}, "component": {"name": "example.com/dep", "version": "2.0.0", "resources": []}});
    let v = landscaper_templating::gotemplate::Value::from_json;
    let funcs = landscaper_template_funcs(Components {
        cd: v(&cd),
        list: v(&json!({"meta": {"schemaVersion": "v2"}, "components": [cd.clone(), dep]})),
        ..Components::default()
    });
    let files = MapFiles::new()
        .with("defaults/values.yaml", "replicas: {{ .n }}\n")
        .with("data.txt", "hello");
    let out = with_files(
        &funcs,
        "{{ include \"defaults/values.yaml\" . }}{{ readFile \"data.txt\" | toString }} {{ (getResource .cd \"name\" \"image\").access.imageReference | ociRefVersion }} {{ (getResource .cd \"name\" \"chart\" \"os\" \"linux\").version }} {{ len (getResources .cd \"name\" \"image\") }} {{ (getComponent .cd \"name\" \"dep\").component.name }} {{ (getRepositoryContext .cd).baseUrl }} {{ parseOCIRef \"nginx:1.19\" }}",
        files,
        json!({"n": 3, "cd": cd}),
    );
    assert_eq!(
        out,
        "replicas: 3\nhello 1.2.3 0.1.0 1 example.com/dep eu.gcr.io/x [nginx 1.19]"
    );
    let err = with_files(
        &funcs,
        "{{ getResource .cd \"name\" \"nope\" }}",
        MapFiles::new(),
        json!({"cd": cd}),
    );
    assert!(err.contains("error calling getResource: NotFound"), "{err}");
    let err = with_files(
        &funcs,
        "{{ include \"x.tpl\" . }}",
        MapFiles::new().with("x.tpl", "{{ include \"x.tpl\" . }}"),
        json!({}),
    );
    assert!(
        err.contains("nested reference name: x.tpl") || err.contains("depth"),
        "{err}"
    );
}

#[test]
fn to_yaml_from_yaml_round_trip_in_landscaper() {
    let funcs = landscaper_template_funcs(Components::default());
    let out = with_files(
        &funcs,
        "{{ $v := fromYaml .text }}{{ $v.a }} {{ typeOf $v.a }} {{ $v.b }}\n{{ toYaml $v }}",
        MapFiles::new(),
        json!({"text": "a: 1\nb: yes\nc: [x]\n"}),
    );
    assert_eq!(out, "1 float64 true\na: 1\nb: true\nc:\n- x");
}

/// Landscaper's `include` parses the file into a template of its own
/// (`gotmpl.New("execution")...Parse(file)`): the including file's `define`s are not visible
/// there (they were, before), its own are, and its `define`s do not leak back.
#[test]
fn landscaper_include_is_isolated_from_the_including_template() {
    let funcs = landscaper_template_funcs(Components::default());
    let err = with_files(
        &funcs,
        "{{ define \"outer\" }}O{{ end }}{{ include \"inc.tpl\" . }}",
        MapFiles::new().with("inc.tpl", "{{ template \"outer\" }}"),
        json!({}),
    );
    assert!(err.contains("template \"outer\" not defined"), "{err}");
    let out = with_files(
        &funcs,
        "{{ define \"outer\" }}O{{ end }}{{ include \"inc.tpl\" . }}{{ template \"outer\" }}",
        MapFiles::new().with(
            "inc.tpl",
            "{{ define \"outer\" }}I{{ end }}{{ template \"outer\" }}-{{ .a }}",
        ),
        json!({"a": 1}),
    );
    assert_eq!(out, "I-1O");
}
