//! Rendering whole charts written to a temp folder (fixtures made here): what `helm template`
//! prints for them, by Helm 3.19's rules.

use std::io::Write as _;
use std::path::Path;

use landscaper_charts::{
    Capabilities, KubeVersion, Manifest, ReleaseOptions, Rendered, TemplateOptions, ValueOptions,
    load, load_archive, template, template_output,
};

fn write(root: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

fn opts() -> TemplateOptions {
    TemplateOptions {
        release: ReleaseOptions {
            name: "rel".into(),
            namespace: "ns".into(),
            revision: 1,
            is_install: true,
            is_upgrade: false,
        },
        capabilities: Capabilities::offline(KubeVersion::parse("1.33.0").unwrap(), &[]),
        include_crds: false,
        skip_tests: false,
        show_only: Vec::new(),
        lookup: None,
        skip_schema_validation: false,
    }
}

fn render_dir(root: &Path, values: &ValueOptions, o: &TemplateOptions) -> Result<String, String> {
    let chart = load(root).map_err(|e| e.to_string())?;
    template(chart, values, o).map_err(|e| e.to_string())
}

const CHART: &str = "apiVersion: v2\nname: app\nversion: 1.2.3\nappVersion: \"9.9\"\nkubeVersion: \">=1.20.0-0\"\ndependencies:\n- name: sub\n  version: 0.1.x\n  condition: sub.enabled\n- name: sub\n  alias: other\n  version: 0.1.x\n- name: lib\n  version: 1.0.0\n  tags: [common]\n";

fn fixture(root: &Path) {
    write(
        root,
        &[
            ("Chart.yaml", CHART),
            (
                "values.yaml",
                "name: base\nglobal:\n  env: prod\nsub:\n  enabled: true\n  greeting: from-parent\nother:\n  greeting: aliased\nlist: [a, b]\n",
            ),
            (".helmignore", "# hidden\n*.secret\nignored/\n"),
            ("files/a.txt", "line1\nline2\n"),
            ("files/b.conf", "b=1"),
            ("files/x.secret", "never"),
            ("ignored/y.txt", "never"),
            ("templates/.hidden.yaml", "kind: Never"),
            ("templates/NOTES.txt", "Notes for {{ .Release.Name }}"),
            (
                "templates/_helpers.tpl",
                "{{- define \"app.name\" -}}{{ .Chart.Name }}-{{ .Release.Name }}{{- end -}}",
            ),
            (
                "templates/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"app.name\" . }}\ndata:\n  tpl: {{ .Template.Name }} {{ .Template.BasePath }}\n  a: {{ .Files.Get \"files/a.txt\" | quote }}\n  lines: {{ .Files.Lines \"files/a.txt\" | join \",\" }}\n  glob: {{ range $k, $v := .Files.Glob \"files/*\" }}{{ $k }};{{ end }}\n  secretHidden: {{ .Files.Get \"files/x.secret\" | quote }}\n  ignoredHidden: {{ .Files.Get \"ignored/y.txt\" | quote }}\n  bytes: {{ .Files.GetBytes \"files/b.conf\" | len }}\n  sec: {{ (.Files.Glob \"files/b.conf\").AsSecrets | quote }}\n  cfgs: {{ (.Files.Glob \"files/{a.txt,b.conf}\").AsConfig | quote }}\n  env: {{ .Values.global.env }}\n  kube: {{ .Capabilities.KubeVersion }} {{ .Capabilities.KubeVersion.GitVersion }} {{ .Capabilities.KubeVersion.Major }} {{ .Capabilities.APIVersions.Has \"policy/v1\" }} {{ .Capabilities.APIVersions.Has \"policy/v1/PodDisruptionBudget\" }}\n  chart: {{ .Chart.Name }} {{ .Chart.Version }} {{ .Chart.AppVersion }} {{ .Chart.IsRoot }}\n  release: {{ .Release.Namespace }} {{ .Release.IsInstall }} {{ .Release.Revision }} {{ .Release.Service }}\n  lookup: {{ lookup \"v1\" \"Secret\" \"ns\" \"x\" | len }}\n  sub: {{ with .Subcharts.sub }}{{ .Values.greeting }}{{ end }}\n  lib: {{ include \"lib.hello\" . }}\n  tplv: {{ tpl \"{{ .Values.name }}-{{ include \\\"app.name\\\" . }}\" . }}\n---\n{{ (.Files.Glob \"files/*.conf\").AsConfig }}\n",
            ),
            (
                "templates/job.yaml",
                "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: hook\n  annotations:\n    helm.sh/hook: pre-install\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: test\n  annotations:\n    helm.sh/hook: test\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: first\n",
            ),
            (
                "crds/crd.yaml",
                "kind: CustomResourceDefinition\nmetadata:\n  name: c\n",
            ),
            (
                "charts/sub/Chart.yaml",
                "apiVersion: v2\nname: sub\nversion: 0.1.5\n",
            ),
            (
                "charts/sub/values.yaml",
                "greeting: default\nglobal:\n  env: dev\n  own: yes\n",
            ),
            (
                "charts/sub/templates/svc.yaml",
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Chart.Name }}-{{ .Values.greeting }}-{{ .Values.global.env }}-{{ .Values.global.own }}\n  path: {{ .Template.Name }}\n",
            ),
            (
                "charts/sub/crds/sub-crd.yaml",
                "kind: CustomResourceDefinition\nmetadata:\n  name: s\n",
            ),
            (
                "charts/lib/Chart.yaml",
                "apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n",
            ),
            (
                "charts/lib/templates/_lib.tpl",
                "{{- define \"lib.hello\" -}}hello{{- end -}}",
            ),
            (
                "charts/lib/templates/ignored.yaml",
                "kind: NeverRenderedFromALibrary",
            ),
        ],
    );
}

#[test]
fn a_chart_renders_as_helm_template() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let out = render_dir(dir.path(), &ValueOptions::default(), &opts()).unwrap();
    // Install order: Namespace, ConfigMap, Services (aliased subchart too), then hooks.
    let sources: Vec<&str> = out.lines().filter(|l| l.starts_with("# Source:")).collect();
    assert_eq!(
        sources,
        [
            "# Source: app/templates/job.yaml",
            "# Source: app/templates/cm.yaml",
            "# Source: app/charts/other/templates/svc.yaml",
            "# Source: app/charts/sub/templates/svc.yaml",
            // Documents without a kind sort after the known kinds.
            "# Source: app/templates/cm.yaml",
            "# Source: app/templates/job.yaml",
            "# Source: app/templates/job.yaml",
        ],
        "{out}"
    );
    assert!(
        out.starts_with("---\n# Source: app/templates/job.yaml\napiVersion: v1\nkind: Namespace\n"),
        "{out}"
    );
    for want in [
        "name: app-rel\n",
        "tpl: app/templates/cm.yaml app/templates\n",
        "a: \"line1\\nline2\\n\"\n",
        "lines: line1,line2\n",
        "glob: files/a.txt;files/b.conf;\n",
        "secretHidden: \"\"\n",
        "ignoredHidden: \"\"\n",
        "bytes: 3\n",
        "sec: \"b.conf: Yj0x\"\n",
        "cfgs: \"a.txt: |\\n  line1\\n  line2\\nb.conf: b=1\"\n",
        "env: prod\n",
        "kube: v1.33.0 v1.33.0 1 true false\n",
        "chart: app 1.2.3 9.9 true\n",
        "release: ns true 1 Helm\n",
        "lookup: 0\n",
        "sub: from-parent\n",
        "lib: hello\n",
        "tplv: base-app-rel\n",
        "b.conf: b=1\n",
        "name: sub-from-parent-prod-true\n  path: app/charts/sub/templates/svc.yaml\n",
        "name: other-aliased-prod-true\n",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    assert!(!out.contains("Notes for"), "{out}");
    assert!(!out.contains("Never"), "{out}");
    assert!(!out.contains("CustomResourceDefinition"), "{out}");
    // Hooks after the manifests, by kind (Pod before Job); the test hook printed unless skipped.
    assert!(out.contains("---\n# Source: app/templates/job.yaml\napiVersion: v1\nkind: Pod\nmetadata:\n  name: test\n  annotations:\n    helm.sh/hook: test\n---\n"), "{out}");
    assert!(
        out.ends_with(
            "kind: Job\nmetadata:\n  name: hook\n  annotations:\n    helm.sh/hook: pre-install\n"
        ),
        "{out}"
    );
}

#[test]
fn flags_change_values_crds_tests_and_selection() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let values = ValueOptions {
        files: vec![(
            "v.yaml".into(),
            "sub:\n  enabled: false\nname: fromfile\n".into(),
        )],
        values: vec!["name=fromset,tags.common=false".into()],
        ..ValueOptions::default()
    };
    let mut o = opts();
    o.include_crds = true;
    o.skip_tests = true;
    let err = render_dir(dir.path(), &values, &o).unwrap_err();
    // The library is tagged off, so its define is gone.
    assert!(err.contains("no template \"lib.hello\""), "{err}");
    let values = ValueOptions {
        files: vec![(
            "v.yaml".into(),
            "sub:\n  enabled: false\nname: fromfile\n".into(),
        )],
        values: vec!["name=fromset".into()],
        ..ValueOptions::default()
    };
    let out = render_dir(dir.path(), &values, &o).unwrap();
    assert!(
        out.starts_with("---\n# Source: app/crds/crd.yaml\nkind: CustomResourceDefinition"),
        "{out}"
    );
    // The disabled subchart's CRDs and templates are left out; the alias stays.
    assert!(!out.contains("app/charts/sub/"), "{out}");
    assert!(
        out.contains("# Source: app/charts/other/templates/svc.yaml"),
        "{out}"
    );
    assert!(out.contains("tplv: fromset-app-rel"), "{out}");
    assert!(!out.contains("helm.sh/hook: test"), "{out}");
    o.show_only = vec!["charts/other/templates/*.yaml".into()];
    let shown = render_dir(dir.path(), &values, &o).unwrap();
    assert_eq!(
        shown,
        "---\n# Source: app/charts/other/templates/svc.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: other-aliased-prod-true\n  path: app/charts/other/templates/svc.yaml\n"
    );
    o.show_only = vec!["templates/none.yaml".into()];
    let err = render_dir(dir.path(), &values, &o).unwrap_err();
    assert_eq!(err, "could not find template templates/none.yaml in chart");
}

#[test]
fn kube_version_schema_and_missing_dependencies_fail() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let mut o = opts();
    o.capabilities.kube_version = KubeVersion::parse("1.19.3").unwrap();
    let err = render_dir(dir.path(), &ValueOptions::default(), &o).unwrap_err();
    assert_eq!(
        err,
        "chart requires kubeVersion: >=1.20.0-0 which is incompatible with Kubernetes v1.19.3"
    );
    write(
        dir.path(),
        &[(
            "charts/sub/values.schema.json",
            r#"{"type":"object","properties":{"greeting":{"type":"string","enum":["a","b"]}}}"#,
        )],
    );
    let err = render_dir(dir.path(), &ValueOptions::default(), &opts()).unwrap_err();
    assert!(
        err.starts_with("values don't meet the specifications of the schema(s)"),
        "{err}"
    );
    assert!(err.contains("sub:\n"), "{err}");
    // The schemas are checked while the templates render, but their verdict comes first, as
    // in Helm (which checks before rendering): over a kubeVersion mismatch and a failing template.
    let mut too_old = opts();
    too_old.capabilities.kube_version = KubeVersion::parse("1.19.3").unwrap();
    let err = render_dir(dir.path(), &ValueOptions::default(), &too_old).unwrap_err();
    assert!(err.starts_with("values don't meet"), "{err}");
    write(
        dir.path(),
        &[("templates/boom.yaml", "{{ fail \"boom\" }}")],
    );
    let err = render_dir(dir.path(), &ValueOptions::default(), &opts()).unwrap_err();
    assert!(err.starts_with("values don't meet"), "{err}");
    // A schema that is no JSON is named as such.
    write(dir.path(), &[("charts/sub/values.schema.json", "{")]);
    let err = render_dir(dir.path(), &ValueOptions::default(), &opts()).unwrap_err();
    assert!(err.contains("sub:\ninvalid values.schema.json"), "{err}");
    std::fs::remove_file(dir.path().join("templates/boom.yaml")).unwrap();
    std::fs::remove_file(dir.path().join("charts/sub/values.schema.json")).unwrap();
    std::fs::remove_dir_all(dir.path().join("charts/lib")).unwrap();
    let err = render_dir(dir.path(), &ValueOptions::default(), &opts()).unwrap_err();
    assert!(err.contains("missing in charts/ directory: lib"), "{err}");
}

#[test]
fn failures_in_templates_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("Chart.yaml", "apiVersion: v2\nname: bad\nversion: 0.1.0\n"),
            (
                "templates/a.yaml",
                "x: {{ required \"need x\" .Values.x }}\n",
            ),
        ],
    );
    let err = render_dir(dir.path(), &ValueOptions::default(), &opts()).unwrap_err();
    assert_eq!(err, "execution error at (bad/templates/a.yaml:1:6): need x");
    write(dir.path(), &[("templates/a.yaml", "x: {{ .Values.x \n")]);
    let err = render_dir(dir.path(), &ValueOptions::default(), &opts()).unwrap_err();
    assert!(
        err.starts_with("parse error at (bad/templates/a.yaml:"),
        "{err}"
    );
    write(dir.path(), &[("templates/a.yaml", "a: [\n")]);
    let err = render_dir(dir.path(), &ValueOptions::default(), &opts()).unwrap_err();
    assert!(
        err.starts_with("YAML parse error on bad/templates/a.yaml"),
        "{err}"
    );
}

fn tgz(files: &[(&str, &str)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (name, text) in files {
        // The name is written as is (the builder refuses `..`, a hostile archive does not).
        let mut h = tar::Header::new_old();
        h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_size(text.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        tar.append(&h, text.as_bytes()).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

#[test]
fn archives_and_archived_subcharts_load() {
    let sub = tgz(&[
        (
            "sub/Chart.yaml",
            "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
        ),
        (
            "sub/templates/s.yaml",
            "kind: Secret\nmetadata:\n  name: {{ .Values.sname }}\n",
        ),
        ("sub/values.yaml", "sname: subsecret\n"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().join("top-1.0.0.tgz");
    {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        for (name, data) in [
            (
                "top/Chart.yaml",
                b"apiVersion: v1\nname: top\nversion: 1.0.0\n".to_vec(),
            ),
            (
                "top/requirements.yaml",
                b"dependencies:\n- name: sub\n  version: ~0.1\n".to_vec(),
            ),
            ("top/charts/sub-0.1.0.tgz", sub.clone()),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            tar.append_data(&mut h, name, &data[..]).unwrap();
        }
        let bytes = tar.into_inner().unwrap().finish().unwrap();
        std::fs::File::create(&top)
            .unwrap()
            .write_all(&bytes)
            .unwrap();
    }
    let out = render_dir(&top, &ValueOptions::default(), &opts()).unwrap();
    assert_eq!(
        out,
        "---\n# Source: top/charts/sub/templates/s.yaml\nkind: Secret\nmetadata:\n  name: subsecret\n"
    );
    // A corrupt archive is an error, not a panic.
    let mut broken = sub.clone();
    broken.truncate(broken.len() / 2);
    assert!(load_archive(&broken).is_err());
    assert!(load_archive(b"not gzip").is_err());
    let escape = tgz(&[
        ("x/../../etc/passwd", "x"),
        ("x/Chart.yaml", "name: x\nversion: 1.0.0\n"),
    ]);
    let err = load_archive(&escape).unwrap_err().to_string();
    assert!(err.contains("parent directory"), "{err}");
}

/// Hostile charts end with an error within the budget, on an ordinary thread's stack.
#[test]
fn recursion_and_loops_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("Chart.yaml", "apiVersion: v2\nname: evil\nversion: 0.1.0\n"),
            (
                "templates/_r.tpl",
                "{{ define \"r\" }}{{ include \"r\" . }}{{ end }}{{ define \"t\" }}{{ tpl \"{{ include \\\"t\\\" . }}\" . }}{{ end }}",
            ),
            ("templates/a.yaml", "a: {{ include \"r\" . }}\n"),
        ],
    );
    let err = render_dir(dir.path(), &ValueOptions::default(), &opts()).unwrap_err();
    assert!(err.contains("depth") || err.contains("nested"), "{err}");
    write(
        dir.path(),
        &[("templates/a.yaml", "a: {{ include \"t\" . }}\n")],
    );
    let err = render_dir(dir.path(), &ValueOptions::default(), &opts()).unwrap_err();
    assert!(err.contains("depth") || err.contains("nested"), "{err}");
    write(
        dir.path(),
        &[(
            "templates/a.yaml",
            "{{ range until 100000000 }}{{ range until 100000000 }}x{{ end }}{{ end }}\n",
        )],
    );
    let err = render_dir(dir.path(), &ValueOptions::default(), &opts()).unwrap_err();
    assert!(err.contains("budget"), "{err}");
}

/// A cluster of one ConfigMap for `lookup`; anything in group `broken` fails.
struct OneConfigMap;

impl landscaper_charts::Lookup for OneConfigMap {
    fn lookup(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<serde_json::Map<String, serde_json::Value>>, String> {
        if api_version.starts_with("broken") {
            return Err("the server is on fire".into());
        }
        let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "ns"}, "data": {"k": "v"}, "n": 3});
        let found = match (api_version, kind, namespace, name) {
            ("v1", "ConfigMap", "ns", "cfg") => cm,
            ("v1", "ConfigMap", _, "") => serde_json::json!({"apiVersion": "v1",
                "kind": "ConfigMapList", "metadata": {}, "items": [cm]}),
            _ => return Ok(None),
        };
        Ok(found.as_object().cloned())
    }
}

#[test]
fn lookup_asks_the_cluster_when_one_is_given() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("Chart.yaml", "apiVersion: v2\nname: look\nversion: 0.1.0\n"),
            (
                "templates/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: out\ndata:\n  found: \"{{ with (lookup \"v1\" \"ConfigMap\" \"ns\" \"cfg\") }}{{ .data.k }}{{ end }}\"\n  n: \"{{ with (lookup \"v1\" \"ConfigMap\" \"ns\" \"cfg\") }}{{ printf \"%T\" .n }}{{ end }}\"\n  missing: {{ lookup \"v1\" \"ConfigMap\" \"ns\" \"nope\" | len | quote }}\n  items: \"{{ with (lookup \"v1\" \"ConfigMap\" \"\" \"\") }}{{ len .items }}{{ else }}0{{ end }}\"\n",
            ),
        ],
    );
    let mut o = opts();
    let offline = render_dir(dir.path(), &ValueOptions::default(), &o).unwrap();
    assert!(offline.contains("found: \"\""), "{offline}");
    assert!(offline.contains("items: \"0\""), "{offline}");
    o.lookup = Some(std::sync::Arc::new(OneConfigMap));
    let online = render_dir(dir.path(), &ValueOptions::default(), &o).unwrap();
    assert!(online.contains("found: \"v\""), "{online}");
    assert!(online.contains("n: \"int64\""), "{online}");
    assert!(online.contains("missing: \"0\""), "{online}");
    assert!(online.contains("items: \"1\""), "{online}");

    write(
        dir.path(),
        &[(
            "templates/cm.yaml",
            "x: {{ lookup \"broken/v1\" \"Thing\" \"\" \"a\" }}\n",
        )],
    );
    let err = render_dir(dir.path(), &ValueOptions::default(), &o).unwrap_err();
    assert!(
        err.contains("error calling lookup: the server is on fire"),
        "{err}"
    );
}

fn manifest(path: &str, content: &str, events: &[&str]) -> Manifest {
    Manifest {
        path: path.into(),
        content: content.into(),
        kind: String::new(),
        name: String::new(),
        events: events.iter().map(|e| e.to_string()).collect(),
        weight: 0,
    }
}

/// Helm prints CRDs and manifests as one trimmed block ending in a newline, then every hook
/// unchanged (test hooks only without --skip-tests).
#[test]
fn template_output_trims_crds_and_manifests_then_appends_hooks() {
    let rendered = Rendered {
        crds: vec![("app/crds/c.yaml".into(), "kind: C".into())],
        manifests: vec![manifest("app/templates/a.yaml", "kind: A \n\n", &[])],
        hooks: vec![
            manifest("app/templates/h.yaml", "kind: Job\n", &["pre-install"]),
            manifest("app/templates/t.yaml", "kind: Pod", &["test"]),
        ],
        notes: String::new(),
    };
    let head = "---\n# Source: app/crds/c.yaml\nkind: C\n---\n# Source: app/templates/a.yaml\nkind: A\n\
                ---\n# Source: app/templates/h.yaml\nkind: Job\n\n";
    let test = "---\n# Source: app/templates/t.yaml\nkind: Pod\n";
    let mut o = opts();
    assert_eq!(
        template_output(&rendered, &o).unwrap(),
        format!("{head}{test}")
    );
    o.skip_tests = true;
    assert_eq!(template_output(&rendered, &o).unwrap(), head);
    assert_eq!(template_output(&Rendered::default(), &o).unwrap(), "\n");
}
