//! Benchmarks of the template engines, with the targets:
//! - a typical blueprint GoTemplate deploy execution (200 lines, 20 `toYaml | nindent`, a
//!   `range`): execute ≤ 100 µs;
//! - parse and evaluate a 1,000-node spiff document: ≤ 5 ms.
//!
//! Run with `cargo bench -p landscaper-templating --bench engines`.

use std::time::{Duration, Instant};

use landscaper_templating::gotemplate::{EmptyFiles, Limits, Template, Value, funcs};
use landscaper_templating::spiff::{SpiffOptions, evaluate_yaml};
use serde_json::json;

fn main() {
    gotemplate_deploy_execution();
    spiff_document();
}

fn best_of(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let start = Instant::now();
        f();
        best = best.min(start.elapsed());
    }
    best
}

/// A Landscaper-style deploy execution: 20 deploy items whose config comes from imports
/// through `toYaml | nindent`, labels from a named template, and a `range` over a list.
fn deploy_execution_text() -> String {
    let mut t = String::new();
    t.push_str("{{- define \"labels\" -}}\napp: {{ .imports.name }}\nversion: {{ .imports.version | quote }}\n{{- end -}}\ndeployItems:\n");
    for i in 0..20 {
        t.push_str(&format!(
            "- name: item-{i}\n  type: landscaper.gardener.cloud/mock\n  target:\n    import: cluster\n  labels:\n    {{{{- include \"labels\" . | nindent 4 }}}}\n  config:\n    apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1\n    kind: ProviderConfiguration\n    values:\n      {{{{- toYaml .imports.config | nindent 6 }}}}\n"
        ));
    }
    t.push_str("  # the items\n  items:\n{{- range $i, $e := .imports.items }}\n  - index: {{ $i }}\n    name: {{ $e.name | upper }}\n    {{- if $e.enabled }}\n    enabled: true\n    {{- else }}\n    enabled: false\n    {{- end }}\n{{- end }}\n");
    while t.lines().count() < 200 {
        t.push_str("  # {{ .imports.name }} {{ len .imports.items }} {{ default \"x\" .imports.missing }}\n");
    }
    t
}

fn gotemplate_deploy_execution() {
    let funcs = funcs::helm_template_funcs();
    let text = deploy_execution_text();
    let lines = text.lines().count();
    let template = Template::parse("deploy-execution", &text, &funcs).expect("parses");
    let data = Value::from_json(&json!({"imports": {
        "name": "demo",
        "version": "1.2.3",
        "config": {"replicas": 3, "image": "registry.example/app:1.2.3", "resources": {"cpu": "100m", "memory": "128Mi"}, "flags": ["a", "b", "c"], "enabled": true},
        "items": (0..10).map(|i| json!({"name": format!("item{i}"), "enabled": i % 2 == 0})).collect::<Vec<_>>(),
    }}));
    let limits = Limits::default();
    let render = || {
        template
            .execute("deploy-execution", &data, &funcs, &EmptyFiles, &limits)
            .expect("renders")
    };
    let bytes = render().len();
    let execute = best_of(2_000, || {
        std::hint::black_box(render());
    });
    let parse = best_of(200, || {
        std::hint::black_box(Template::parse("deploy-execution", &text, &funcs).unwrap());
    });
    println!(
        "gotemplate_deploy_execution: {lines} lines, {bytes} bytes out: execute {:.1} µs best of 2000 (target <= 100 µs); parse {:.1} µs",
        execute.as_secs_f64() * 1e6,
        parse.as_secs_f64() * 1e6
    );
}

/// About 1,000 nodes: groups of references, arithmetic, concatenation, lists, a lambda map,
/// and a reference chain through all groups.
fn spiff_text(groups: usize) -> String {
    let mut s = String::from("base:\n  name: app\n  replicas: 3\n  tags: [a, b, c]\n");
    for g in 0..groups {
        s.push_str(&format!("group{g}:\n  id: {g}\n"));
        s.push_str("  name: (( base.name \"-\" id ))\n");
        s.push_str("  replicas: (( base.replicas * 2 ))\n");
        s.push_str("  label: (( name \"/\" replicas ))\n");
        if g > 0 {
            s.push_str(&format!("  prev: (( group{}.label ))\n", g - 1));
        } else {
            s.push_str("  prev: ~\n");
        }
        s.push_str("  list:\n");
        for i in 0..3 {
            s.push_str(&format!(
                "    - name: item{i}\n      value: (( id * {i} ))\n"
            ));
        }
        s.push_str("  joined: (( join(\",\", base.tags) ))\n");
        s.push_str("  mapped: (( map[base.tags|t|->t \"-\" id] ))\n");
        s.push_str("  static: plain value\n");
    }
    s
}

fn spiff_document() {
    let text = spiff_text(53);
    let nodes = serde_saphyr::from_str::<serde_json::Value>(&text)
        .map(|v| count_nodes(&v))
        .unwrap_or(0);
    let options = SpiffOptions {
        stack_size: 0,
        ..SpiffOptions::default()
    };
    let bindings = serde_json::Map::new();
    let result = evaluate_yaml(&text, &[], &bindings, &options).expect("evaluates");
    assert_eq!(result["group39"]["prev"], "app-38/6");
    let best = best_of(30, || {
        std::hint::black_box(evaluate_yaml(&text, &[], &bindings, &options).unwrap());
    });
    println!(
        "spiff_document: {nodes} nodes, parse + evaluate {:.2} ms best of 30 (target <= 5 ms)",
        best.as_secs_f64() * 1e3
    );
}

fn count_nodes(v: &serde_json::Value) -> usize {
    1 + match v {
        serde_json::Value::Array(items) => items.iter().map(count_nodes).sum(),
        serde_json::Value::Object(map) => map.values().map(count_nodes).sum(),
        _ => 0,
    }
}
