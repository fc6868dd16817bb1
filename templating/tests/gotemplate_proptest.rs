//! Properties of the Go template engine over arbitrary input: parsing never panics (nor
//! overflows the stack), plain text renders to itself, and executing whatever parses never
//! panics.

use landscaper_templating::gotemplate::{FuncMap, Template, render};
use proptest::prelude::*;
use serde_json::json;

/// Fragments that make the generator hit the interesting parts of the grammar often.
fn template_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("{{".to_string()),
        Just("}}".to_string()),
        Just("{{- ".to_string()),
        Just(" -}}".to_string()),
        Just("{{/* c */}}".to_string()),
        Just("{{ if .a }}".to_string()),
        Just("{{ else }}".to_string()),
        Just("{{ else if .b }}".to_string()),
        Just("{{ end }}".to_string()),
        Just("{{ range $i, $e := .l }}".to_string()),
        Just("{{ break }}".to_string()),
        Just("{{ continue }}".to_string()),
        Just("{{ with .m }}".to_string()),
        Just("{{ define \"x\" }}".to_string()),
        Just("{{ template \"x\" . }}".to_string()),
        Just("{{ block \"y\" . }}".to_string()),
        Just("{{ $v := .a }}".to_string()),
        Just("{{ $v }}".to_string()),
        Just("{{ printf \"%v\" . }}".to_string()),
        Just("{{ index .l 0 }}".to_string()),
        Just("{{ len . }}".to_string()),
        Just("{{ (".to_string()),
        Just(")".to_string()),
        Just(" | ".to_string()),
        Just("\"s\"".to_string()),
        Just("'c'".to_string()),
        Just("0x1F".to_string()),
        Just("1.5e3".to_string()),
        Just("\n".to_string()),
        "[ -~]{0,6}".prop_map(|s| s),
        any::<char>().prop_map(|c| c.to_string()),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics_on_arbitrary_strings(s in any::<String>()) {
        let _ = Template::parse("t", &s, &FuncMap::new());
    }

    #[test]
    fn parse_and_execute_never_panic(s in template_text()) {
        let data = json!({"a": 1, "b": "x", "l": [1, null, "z"], "m": {"k": [true]}});
        let _ = render("t", &s, &data, &FuncMap::new());
    }

    #[test]
    fn plain_text_renders_to_itself(s in any::<String>().prop_filter("no action", |s| !s.contains("{{"))) {
        let out = render("t", &s, &json!(null), &FuncMap::new()).unwrap();
        prop_assert_eq!(out, s);
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let text = "{{ if 1 }}".repeat(5000);
    let err = Template::parse("t", &text, &FuncMap::new()).unwrap_err();
    assert_eq!(err.message, "template: t:1: max expression depth exceeded");
    let text = format!("{{{{ {}1{} }}}}", "(".repeat(5000), ")".repeat(5000));
    let err = Template::parse("t", &text, &FuncMap::new()).unwrap_err();
    assert_eq!(err.message, "template: t:1: max expression depth exceeded");
}

#[test]
fn deep_recursion_is_an_error_not_a_stack_overflow() {
    // 90 nested ifs per level of recursion: far past the nesting bound long before the
    // template depth bound; run on a 2 MiB stack, as tokio's blocking threads have.
    let r = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let text = format!(
                "{{{{define \"r\"}}}}{}{{{{template \"r\" .}}}}{}{{{{end}}}}{{{{template \"r\" .}}}}",
                "{{if 1}}".repeat(90),
                "{{end}}".repeat(90)
            );
            let t = Template::parse("t", &text, &FuncMap::new()).unwrap();
            let e = t
                .execute(
                    "t",
                    &landscaper_templating::gotemplate::Value::Nil,
                    &FuncMap::new(),
                    &landscaper_templating::gotemplate::EmptyFiles,
                    &landscaper_templating::gotemplate::Limits::default(),
                )
                .unwrap_err();
            (e.kind, e.message)
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(r.0, landscaper_templating::gotemplate::ErrorKind::Limit);
    assert!(r.1.ends_with("exceeded maximum nesting depth"), "{}", r.1);
}

#[test]
fn deepest_parseable_pipelines_execute_on_a_small_stack() {
    let out = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let n = 99;
            let text = format!("{{{{ {}1{} }}}}", "(print ".repeat(n), ")".repeat(n));
            render("t", &text, &json!(null), &FuncMap::new()).map_err(|e| e.message)
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(out.unwrap(), "1");
}
