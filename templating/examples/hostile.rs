//! Runs one hostile template with the default render budget and prints the outcome; used to
//! measure peak memory (`/usr/bin/time -v target/debug/examples/hostile <case>`).
//!
//! Cases: `spiff-format-width`, `spiff-format-star`, `until`, `loop`, `output`, `alloc`,
//! `shared-dag`, `spiff-range`, `spiff-doubling`, or `go-file PATH` / `spiff-file PATH`.

use std::time::Instant;

use landscaper_templating::RenderBudget;
use landscaper_templating::gotemplate::{EmptyFiles, Limits, Template, Value, funcs};
use landscaper_templating::spiff::{self, SpiffOptions};

fn go(text: &str) -> String {
    let f = funcs::landscaper_template_funcs(Default::default());
    let r = Template::parse("hostile", text, &f).and_then(|t| {
        t.execute(
            "hostile",
            &Value::Nil,
            &f,
            &EmptyFiles,
            &Limits::with_budget(RenderBudget::default()),
        )
    });
    match r {
        Ok(out) => format!("ok: {} bytes", out.len()),
        Err(e) => format!("error: {}", e.message),
    }
}

fn spiff(text: &str) -> String {
    let options = SpiffOptions::default();
    match spiff::evaluate_yaml(text, &[], &serde_json::Map::new(), &options) {
        Ok(doc) => format!("ok: {} bytes", doc.to_string().len()),
        Err(e) => format!("error: {}", e.message),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let case = args.first().map(String::as_str).unwrap_or("");
    let start = Instant::now();
    let out = match case {
        "spiff-format-width" => spiff(r#"a: (( format("%99999999999999999999d", 1) ))"#),
        "spiff-format-star" => spiff(r#"a: (( format("%*d", -99999999, 1) ))"#),
        "until" => go("{{ until 100000000 | len }}"),
        "loop" => go("{{ range until 100000 }}{{ range until 100000 }}x{{ end }}{{ end }}"),
        "output" => go(r#"{{ range until 200 }}{{ repeat 1000000 "x" }}{{ end }}"#),
        "alloc" => go(
            r#"{{ $l := list }}{{ range until 200 }}{{ $l = append $l (repeat 2000000 "x") }}{{ end }}{{ len $l }}"#,
        ),
        "shared-dag" => go(
            r#"{{ $d := dict "a" 1 }}{{ range until 40 }}{{ $d = dict "l" $d "r" $d }}{{ end }}{{ toJson $d | len }}"#,
        ),
        "spiff-range" => spiff("big: (( length([1..100000000]) ))"),
        "spiff-doubling" => {
            spiff("d: (( |s,n|-> n <= 0 ? s :_(s s, n - 1) ))\nbig: (( length(.d(\"ab\", 40)) ))")
        }
        "go-file" => go(&std::fs::read_to_string(&args[1]).expect("file")),
        "spiff-file" => spiff(&std::fs::read_to_string(&args[1]).expect("file")),
        other => format!("unknown case {other:?}"),
    };
    let shown: String = out.chars().take(300).collect();
    println!("{case}: {shown} ({:?})", start.elapsed());
}
