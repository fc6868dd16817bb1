//! Templates are untrusted input: hostile templates fail with a clear error naming the
//! template and the exceeded limit of the [`RenderBudget`], fast and without allocating what
//! they ask for (issue 14). The default budget is used unless a test says otherwise.

use std::time::{Duration, Instant};

use landscaper_templating::RenderBudget;
use landscaper_templating::blueprint::{
    Bindings, Blueprint, BlueprintFs, render_deploy_executions,
};
use landscaper_templating::gotemplate::{
    EmptyFiles, ErrorKind, Limits, Template, TemplateError, Value, funcs,
};
use landscaper_templating::spiff::{self, SpiffOptions};

/// A smaller budget for the tests whose hostile values are built of many small steps (a debug
/// build takes seconds for 16 MiB of them).
fn small() -> RenderBudget {
    RenderBudget {
        max_value_bytes: 1 << 20,
        max_alloc_bytes: 32 << 20,
        ..RenderBudget::default()
    }
}

fn go(text: &str, budget: RenderBudget) -> Result<String, TemplateError> {
    let f = funcs::landscaper_template_funcs(Default::default());
    let t = Template::parse("hostile", text, &f)?;
    t.execute(
        "hostile",
        &Value::Nil,
        &f,
        &EmptyFiles,
        &Limits::with_budget(budget),
    )
}

fn go_limit(text: &str, budget: RenderBudget, limit: &str) -> String {
    let start = Instant::now();
    let err = go(text, budget).expect_err(text);
    assert_eq!(err.kind, ErrorKind::Limit, "{text}: {err:?}");
    assert!(
        err.message.starts_with("template: hostile"),
        "{}",
        err.message
    );
    assert!(err.message.contains(limit), "{text}: {}", err.message);
    // Detected early: the debug build takes well under the limits' wall time.
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{text}: {:?}",
        start.elapsed()
    );
    err.message
}

fn spiff_yaml(text: &str, budget: RenderBudget) -> Result<serde_json::Value, spiff::SpiffError> {
    let options = SpiffOptions {
        budget,
        ..SpiffOptions::default()
    };
    spiff::evaluate_yaml(text, &[], &serde_json::Map::new(), &options)
}

fn spiff_limit(text: &str, budget: RenderBudget, limit: &str) -> String {
    let start = Instant::now();
    let err = spiff_yaml(text, budget).expect_err(text);
    assert!(err.message.contains(limit), "{text}: {}", err.message);
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{text}: {:?}",
        start.elapsed()
    );
    err.message
}

// --- Go's fmt bounds (both engines share the Go fmt core) -------------------------------------

#[test]
fn spiff_format_huge_width_is_go_noverb() {
    // Aborted the daemon (allocation failure) before.
    let out = spiff_yaml(
        r#"a: (( format("%99999999999999999999d", 1) ))"#,
        RenderBudget::default(),
    )
    .unwrap();
    assert_eq!(out["a"], "%!(NOVERB)%!(EXTRA int64=1)");
    let out = spiff_yaml(
        r#"a: (( format("%.99999999999d", 1) ))"#,
        RenderBudget::default(),
    )
    .unwrap();
    assert_eq!(out["a"], "%!(NOVERB)%!(EXTRA int64=1)");
}

#[test]
fn spiff_format_huge_star_width_is_go_badwidth() {
    // Returned 100 MB before.
    let out = spiff_yaml(
        r#"a: (( format("%*d", -99999999, 1) ))"#,
        RenderBudget::default(),
    )
    .unwrap();
    assert_eq!(out["a"], "%!(BADWIDTH)1");
    let out = spiff_yaml(
        r#"a: (( format("%.*d", 99999999, 1) ))"#,
        RenderBudget::default(),
    )
    .unwrap();
    assert_eq!(out["a"], "%!(BADPREC)1");
    // Within Go's bound a width applies.
    let out = spiff_yaml(
        r#"a: (( format("%*d|%-3s|", 4, 7, "x") ))"#,
        RenderBudget::default(),
    )
    .unwrap();
    assert_eq!(out["a"], "   7|x  |");
}

#[test]
fn gotemplate_printf_huge_width_is_go_noverb() {
    let b = RenderBudget::default();
    assert_eq!(
        go(r#"{{ printf "%99999999999999999999d" 1 }}"#, b).unwrap(),
        "%!(NOVERB)%!(EXTRA int=1)"
    );
    assert_eq!(
        go(r#"{{ printf "%*d" -99999999 1 }}"#, b).unwrap(),
        "%!(BADWIDTH)1"
    );
    // Go takes any integer type for `*`, an uint64 too.
    assert_eq!(
        go(r#"{{ printf "%*d" (semver "5.0.0").Major 1 }}"#, b).unwrap(),
        "    1"
    );
}

#[test]
fn printf_directives_add_up_to_the_value_limit() {
    // Each directive is within Go's bound (10^7 - 1), together they are not.
    let text = format!(
        "{{{{ printf \"{}\" {} }}}}",
        "%9999999d".repeat(100),
        "1 ".repeat(100)
    );
    go_limit(&text, RenderBudget::default(), "max_value_bytes");
    let text = format!(
        "a: (( format(\"{}\", {}) ))",
        "%9999999d".repeat(100),
        vec!["1"; 100].join(", ")
    );
    spiff_limit(&text, RenderBudget::default(), "max_value_bytes");
}

// --- sizes ---------------------------------------------------------------------------------

#[test]
fn until_huge_fails_before_allocating() {
    // Took 3 GB and 8 s before.
    let m = go_limit(
        "{{ until 100000000 | len }}",
        RenderBudget::default(),
        "max_list_items",
    );
    assert!(m.contains("100000000 items"), "{m}");
    go_limit(
        "{{ untilStep 0 100000000 1 | len }}",
        RenderBudget::default(),
        "max_list_items",
    );
    go_limit(
        "{{ seq 100000000 }}",
        RenderBudget::default(),
        "max_list_items",
    );
    // Go's int arithmetic wraps (seq's end + 1) instead of panicking.
    assert_eq!(
        go(
            "{{ seq 9223372036854775807 9223372036854775807 }}",
            RenderBudget::default()
        )
        .unwrap(),
        ""
    );
}

#[test]
fn repeat_and_friends_fail_before_allocating() {
    let b = RenderBudget::default();
    go_limit(r#"{{ repeat 200000000 "a" }}"#, b, "max_value_bytes");
    go_limit(r#"{{ randAlphaNum 200000000 }}"#, b, "max_value_bytes");
    go_limit(r#"{{ randBytes 200000000 }}"#, b, "max_value_bytes");
    go_limit(r#"{{ indent 200000000 "a" }}"#, b, "max_value_bytes");
    go_limit(
        r#"{{ $s := repeat 1000000 "a" }}{{ replace "" $s $s }}"#,
        b,
        "max_value_bytes",
    );
    go_limit(
        r#"{{ $s := repeat 1000000 "a" }}{{ join $s (until 1000) }}"#,
        b,
        "max_value_bytes",
    );
    go_limit(
        r#"{{ $s := repeat 1000000 "a" }}{{ wrapWith 1 $s $s }}"#,
        b,
        "max_value_bytes",
    );
}

#[test]
fn doubling_strings_stop_at_the_value_limit() {
    go_limit(
        r#"{{ $s := "ab" }}{{ range until 40 }}{{ $s = cat $s $s }}{{ end }}{{ len $s }}"#,
        small(),
        "max_value_bytes",
    );
    spiff_limit(
        "d: (( |s,n|-> n <= 0 ? s :_(s s, n - 1) ))\nbig: (( length(.d(\"ab\", 40)) ))",
        small(),
        "max_value_bytes",
    );
}

#[test]
fn shared_maps_do_not_expand_when_printed() {
    // 2^40 leaves when written out; the structure itself is 40 maps.
    for sink in [
        "toJson $d",
        "toYaml $d",
        "$d",
        "toString $d",
        "deepCopy $d | len",
        "toPrettyJson $d",
    ] {
        let text = format!(
            r#"{{{{ $d := dict "a" 1 }}}}{{{{ range until 40 }}}}{{{{ $d = dict "l" $d "r" $d }}}}{{{{ end }}}}{{{{ {sink} }}}}"#
        );
        let err = go(&text, small()).expect_err(&text);
        assert_eq!(err.kind, ErrorKind::Limit, "{sink}: {err:?}");
    }
}

#[test]
fn output_of_200_mb_stops_at_the_output_limit() {
    // Took 520 MB before.
    go_limit(
        r#"{{ range until 200 }}{{ repeat 1000000 "x" }}{{ end }}"#,
        small(),
        "max_output_bytes",
    );
}

#[test]
fn built_values_add_up_to_the_allocation_limit() {
    // 200 strings of 500 kB kept in a list: each within the value limit, together 100 MB.
    go_limit(
        r#"{{ $l := list }}{{ range until 200 }}{{ $l = append $l (repeat 500000 "x") }}{{ end }}{{ len $l }}"#,
        small(),
        "max_alloc_bytes",
    );
    spiff_limit(
        "l: '(( map[[1..200]|i|-> format(\"%499999d\", i)] ))'\ncount: (( length(l) ))",
        small(),
        "max_alloc_bytes",
    );
}

#[test]
fn spiff_huge_range_fails_before_allocating() {
    spiff_limit(
        "big: (( length([1..100000000]) ))",
        RenderBudget::default(),
        "max_list_items",
    );
}

// --- steps and time --------------------------------------------------------------------------

#[test]
fn loop_of_ten_to_the_ten_stops_at_the_step_limit() {
    // Peaked at 530 MB before.
    go_limit(
        "{{ range until 100000 }}{{ range until 100000 }}x{{ end }}{{ end }}",
        RenderBudget::default(),
        "max_steps",
    );
}

#[test]
fn quadratic_and_deep_comparisons_are_charged() {
    let b = RenderBudget {
        max_steps: 100_000,
        ..RenderBudget::default()
    };
    go_limit("{{ until 1000000 | uniq | len }}", b, "max_steps");
    spiff_limit("u: (( length(uniq([1..1000000])) ))", b, "max_steps");
    // Two separately built maps of 2^40 leaves, compared by `has`.
    go_limit(
        r#"{{ $a := dict "k" 1 }}{{ $b := dict "k" 1 }}{{ range until 40 }}{{ $a = dict "l" $a "r" $a }}{{ $b = dict "l" $b "r" $b }}{{ end }}{{ has $a (list $b) }}"#,
        b,
        "max_steps",
    );
}

#[test]
fn wall_time_is_bounded() {
    let b = RenderBudget {
        max_duration: Duration::from_millis(200),
        max_steps: u64::MAX,
        ..RenderBudget::default()
    };
    go_limit(
        "{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}",
        b,
        "max_duration",
    );
    spiff_limit(
        "f: (( |x|-> x <= 0 ? 0 :_(x - 1) + _(x - 1) ))\nr: (( .f(60) ))",
        b,
        "max_duration",
    );
}

#[test]
fn spiff_steps_are_bounded() {
    let b = RenderBudget {
        max_steps: 100_000,
        ..RenderBudget::default()
    };
    spiff_limit(
        "f: (( |x|-> x <= 0 ? 0 :_(x - 1) + _(x - 1) ))\nr: (( .f(60) ))",
        b,
        "max_steps",
    );
}

#[test]
fn a_caught_error_still_fails_the_render() {
    // spiff's `||` takes the right side when the left fails; the budget violation stays.
    spiff_limit(
        "a: (( [1..100000000] || 1 ))",
        RenderBudget::default(),
        "max_list_items",
    );
}

// --- blueprints --------------------------------------------------------------------------------

#[test]
fn blueprint_rendering_passes_the_budget() {
    let bp = "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\ndeployExecutions:\n- name: go\n  type: GoTemplate\n  template: |\n    deployItems: []\n    x: {{ until 2000 | len }}\n- name: sp\n  type: Spiff\n  template:\n    deployItems: []\n    x: (( length([1..2000]) ))\n";
    let bp = Blueprint::from_fs(BlueprintFs::new().with("blueprint.yaml", bp)).unwrap();
    let mut bindings = Bindings::default();
    assert!(render_deploy_executions(&bp, &bindings).is_ok());
    bindings.budget.max_list_items = 1000;
    let err = render_deploy_executions(&bp, &bindings)
        .unwrap_err()
        .to_string();
    assert!(err.contains("max_list_items"), "{err}");
    assert!(err.contains("go"), "{err}");
}
