//! Compares the function libraries with results recorded from Go: `helm template` (Helm v3.19,
//! sprig v3.3, Go text/template) rendered `{{ $r := FN ARGS }}{{ kindOf $r }}|{{ $r }}` for each
//! case in `funcs_oracle_cases.json` (or the error Go reported). The engine renders the same
//! templates (written by the generator's rules) with Helm's function map, so that arguments are
//! converted and checked as Go does before the call, and errors are cleaned as the generator
//! cleaned Go's.

use std::collections::BTreeMap;

use landscaper_templating::gotemplate::{self, funcs};
use serde_json::Value as J;

/// Cases whose Go result cannot be reproduced by design (random, network, time zone of the
/// machine, or a Go type the value model does not have), with the reason.
fn deviation(name: &str) -> Option<(&'static str, &'static str)> {
    const LIST: &[(&str, &str)] = &[
        ("_uuidv4", "arity error text depends on the engine"),
        (
            "_getHostByName",
            "no network lookups in the appliance (Helm returns \"\")",
        ),
        (
            "_fail",
            "Helm wraps fail's message for its own error cleanup",
        ),
        ("_randInt", "random"),
        (
            "_keys",
            "Go returns map iteration order (random); we return sorted keys",
        ),
        (
            "_required",
            "Helm's renderer turns the HELM_ERR_START/END markers into `execution error at (file:line:col): msg`",
        ),
        (
            "_tpl",
            "needs the template engine (covered by the end-to-end tests)",
        ),
        (
            "0435_fromYaml",
            "YAML syntax error texts come from a different parser",
        ),
        (
            "0448_fromYamlArray",
            "YAML syntax error texts come from a different parser",
        ),
    ];
    LIST.iter()
        .find(|(key, _)| name.ends_with(key) || name == *key)
        .map(|&(key, why)| (key, why))
}

fn known_deviation(name: &str) -> Option<&'static str> {
    deviation(name).map(|(_, why)| why)
}

fn known_key(name: &str) -> Option<&'static str> {
    deviation(name).map(|(key, _)| key)
}

/// Python's `repr` of a float, as the generator wrote float constants into the templates.
fn py_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    if (-4..16).contains(&exp) {
        let d = format!("{f}");
        if d.contains('.') { d } else { format!("{d}.0") }
    } else {
        format!(
            "{mantissa}e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    }
}

/// The generator's `go_arg`: an argument as template text.
fn go_arg(spec: &J) -> String {
    let (k, v) = spec.as_object().unwrap().iter().next().unwrap();
    let all = |items: &[J]| items.iter().map(go_arg).collect::<Vec<_>>().join(" ");
    match k.as_str() {
        "i" => v.as_i64().unwrap().to_string(),
        "i64" => format!("(int64 {})", v.as_i64().unwrap()),
        "f" => {
            let f = v.as_f64().unwrap();
            if f.is_infinite() {
                "(float64 \"+Inf\")".into()
            } else {
                py_float(f)
            }
        }
        "s" => serde_json::to_string(v.as_str().unwrap()).unwrap(),
        "b" => v.as_bool().unwrap().to_string(),
        "nil" => "nil".into(),
        "l" => format!("(list {})", all(v.as_array().unwrap())),
        "d" => format!("(dict {})", all(v.as_array().unwrap())),
        "call" => {
            let parts = v.as_array().unwrap();
            format!("({} {})", parts[0].as_str().unwrap(), all(&parts[1..]))
        }
        other => panic!("unknown arg kind {other}"),
    }
}

/// The generator's `clean_err`: the function's own message, or what the engine reported at the
/// argument.
fn clean_err(fname: &str, e: &str) -> String {
    let Some((_, rest)) = e.split_once("executing \"k0\" at <") else {
        return e.to_string();
    };
    let marker = format!("error calling {fname}: ");
    if let Some(i) = rest.find(&marker) {
        return rest[i + marker.len()..].to_string();
    }
    match rest.split_once(">: ") {
        Some((_, msg)) => msg.to_string(),
        None => rest.to_string(),
    }
}

/// Whether the deviation entry of a case names the case itself (`0435_fromYaml`) rather than
/// every case of a function (`_randInt`): a single case listed as a deviation must not match.
fn is_single_case(name: &str) -> bool {
    known_key(name).is_some_and(|key| key.starts_with(|c: char| c.is_ascii_digit()))
}

#[test]
fn functions_match_recorded_go_results() {
    let text = include_str!("funcs_oracle_cases.json");
    let cases: Vec<J> = serde_json::from_str(text).unwrap();
    let fm = funcs::helm_template_funcs();
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut by_fn: BTreeMap<String, usize> = BTreeMap::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let fname = case["fn"].as_str().unwrap();
        // The template Go rendered (Helm wrapped it in `include "k0" . | toJson`).
        let args: Vec<String> = case["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(go_arg)
            .collect();
        let call = std::iter::once(fname.to_string())
            .chain(args)
            .collect::<Vec<_>>()
            .join(" ");
        let template = format!("{{{{ $r := {call} }}}}{{{{ kindOf $r }}}}|{{{{ $r }}}}");
        let got = match gotemplate::render("k0", &template, &J::Null, &fm) {
            Ok(out) => J::Object([("ok".to_string(), J::String(out))].into_iter().collect()),
            Err(e) => J::Object(
                [(
                    "err".to_string(),
                    J::String(clean_err(fname, &e.to_string())),
                )]
                .into_iter()
                .collect(),
            ),
        };
        *by_fn.entry(fname.to_string()).or_default() += 1;
        if got != case["go"] {
            if known_deviation(name).is_some() {
                continue;
            }
            failures.push(format!("{name}: go {} / rust {}", case["go"], got));
        } else if let Some(why) = known_deviation(name).filter(|_| is_single_case(name)) {
            failures.push(format!(
                "{name} matches Go but is listed as a deviation ({why})"
            ));
        } else {
            checked += 1;
        }
    }
    for f in &failures {
        eprintln!("MISMATCH {f}");
    }
    eprintln!("{checked} cases match Go over {} functions", by_fn.len());
    assert!(failures.is_empty(), "{} mismatches", failures.len());
}
