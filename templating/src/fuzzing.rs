//! Check functions of the fuzz targets `gotemplate`, `spiff` and `blueprint`
//! (`fuzz/fuzz_targets/*.rs`), shared with `tests/fuzz_corpus.rs`, which runs them over the
//! committed corpora and regressions without an instrumented build.
//!
//! Each runs untrusted input with a small [`RenderBudget`] and checks that it never panics
//! and that what it produces stays within the budget.

use std::time::Duration;

use serde_json::{Value, json};

use crate::RenderBudget;
use crate::blueprint::{
    Bindings, Blueprint, BlueprintFs, ExportBindings, render_deploy_executions,
    render_export_executions, render_import_executions, render_subinstallations,
};
use crate::gotemplate::{Arity, EmptyFiles, FuncError, Limits, Template, Value as GoValue};
use crate::spiff::{self, SpiffOptions};

/// The budget of every fuzzed render: small, so that an input exceeds it quickly.
pub fn budget() -> RenderBudget {
    RenderBudget {
        max_steps: 50_000,
        max_output_bytes: 256 << 10,
        max_value_bytes: 256 << 10,
        max_list_items: 10_000,
        max_duration: Duration::from_secs(2),
        max_alloc_bytes: 16 << 20,
    }
}

/// sprig's key, certificate and password functions take seconds in a debug build (RSA prime
/// search, scrypt, bcrypt); the fuzzer would spend its time there.
const SLOW: &[&str] = &[
    "genPrivateKey",
    "genCA",
    "genCAWithKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    "buildCustomCert",
    "derivePassword",
    "bcrypt",
    "htpasswd",
];

/// The template data: imports like Landscaper's, a list and nested maps.
pub fn data() -> Value {
    json!({
        "imports": {
            "replicas": 3,
            "name": "fuzz",
            "config": {"color": "blue", "ports": [80, 443], "enabled": true, "ratio": 0.5},
            "cluster": {"metadata": {"name": "c1", "namespace": "default"},
                        "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster"}},
            "list": ["a", "b", "c"],
        },
        "cd": {"component": {"name": "example.com/fuzz", "version": "v1.0.0", "resources": []}},
        "state": {},
    })
}

/// `gotemplate`: parses the input as a Go template (with Landscaper's functions) and runs it
/// against [`data`]: no panic; an output fits the budget.
pub fn gotemplate(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    let mut funcs = crate::gotemplate::funcs::landscaper_template_funcs(Default::default());
    for name in SLOW {
        funcs.insert(name, Arity::AtLeast(0), |_, _| {
            Err(FuncError::new("disabled while fuzzing"))
        });
    }
    let Ok(template) = Template::parse("fuzz", &text, &funcs) else {
        return;
    };
    let budget = budget();
    let data = GoValue::from_json(&data());
    for name in template.names() {
        match template.execute(
            &name,
            &data,
            &funcs,
            &EmptyFiles,
            &Limits::with_budget(budget),
        ) {
            Ok(out) => assert!(
                out.len() <= budget.max_output_bytes,
                "output of {} bytes",
                out.len()
            ),
            Err(e) => assert!(!e.message.is_empty()),
        }
    }
}

/// `spiff`: evaluates the input as a spiff template (YAML with dynaml), with [`data`] as
/// bindings: no panic (the evaluation thread's panics come back as an error naming them).
pub fn spiff(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    let Value::Object(bindings) = data() else {
        return;
    };
    let options = SpiffOptions {
        budget: budget(),
        ..SpiffOptions::default()
    };
    match spiff::evaluate_yaml(&text, &[], &bindings, &options) {
        Ok(doc) => {
            let _ = spiff::to_yaml(&doc);
        }
        Err(e) => {
            let message = e.to_string();
            assert!(!message.contains("panicked"), "{message}");
        }
    }
}

/// A template file blueprints may reference (`file: /templates/deploy.yaml`).
const DEPLOY_FILE: &str = "deployItems:\n- name: main\n  type: landscaper.gardener.cloud/mock\n  config: {replicas: {{ .imports.replicas }}}\n";

/// `blueprint`: loads the input as `blueprint.yaml` (with a template file beside it) and
/// renders every kind of execution with small bindings: no panic.
pub fn blueprint(input: &[u8]) {
    let mut fs = BlueprintFs::new();
    if fs.insert("blueprint.yaml", input.to_vec()).is_err()
        || fs.insert("templates/deploy.yaml", DEPLOY_FILE).is_err()
    {
        return;
    }
    let Ok(bp) = Blueprint::from_fs(fs) else {
        return;
    };
    let _ = bp.problems();
    let Value::Object(all) = data() else {
        return;
    };
    let imports = match all.get("imports") {
        Some(Value::Object(m)) => m.clone(),
        _ => serde_json::Map::new(),
    };
    let mut bindings = Bindings::with_imports(imports);
    bindings.budget = budget();
    bindings.cd = all.get("cd").cloned().unwrap_or(Value::Null);
    let shown = |r: Result<String, String>| match r {
        Ok(s) | Err(s) => assert!(!s.contains("panicked"), "{s}"),
    };
    shown(
        render_import_executions(&bp, &bindings)
            .map(|o| format!("{o:?}"))
            .map_err(|e| e.to_string()),
    );
    shown(
        render_deploy_executions(&bp, &bindings)
            .map(|o| format!("{o:?}"))
            .map_err(|e| e.to_string()),
    );
    shown(
        render_subinstallations(&bp, &bindings)
            .map(|o| format!("{o:?}"))
            .map_err(|e| e.to_string()),
    );
    let export = ExportBindings {
        base: bindings,
        deploy_items: Some(serde_json::Map::new()),
        ..ExportBindings::default()
    };
    shown(
        render_export_executions(&bp, &export)
            .map(|o| format!("{o:?}"))
            .map_err(|e| e.to_string()),
    );
}
