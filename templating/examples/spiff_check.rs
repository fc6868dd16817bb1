//! A tiny command line front end of the spiff engine that speaks the protocol of the
//! conformance corpus runner (`shared/acceptance/spiff-conformance/check.py`):
//!
//! ```text
//! spiff_check TEMPLATE [--values VALUES] [--stub STUB]...
//! ```
//!
//! Run the corpus with:
//! `./check.py target/debug/examples/spiff_check --cmd '{bin} {template} --values {values}' --stubs --features`
//!
//! The values are bound like Landscaper binds imports (numbers become floats). `SPIFF_FEATURES`
//! enables spiff's feature flags. The result is printed as YAML; errors go to stderr with exit
//! code 1.

use landscaper_templating::spiff::{SpiffOptions, evaluate_yaml, parse_yaml, to_yaml};

fn main() {
    let mut args = std::env::args().skip(1);
    let mut template = None;
    let mut values = None;
    let mut stubs = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--values" => values = args.next(),
            "--stub" => {
                if let Some(s) = args.next() {
                    stubs.push(s);
                }
            }
            _ => template = Some(a),
        }
    }
    let Some(template) = template else {
        eprintln!("usage: spiff_check TEMPLATE [--values VALUES] [--stub STUB]...");
        std::process::exit(2);
    };
    let read = |p: &str| {
        std::fs::read_to_string(p).unwrap_or_else(|e| {
            eprintln!("cannot read {p}: {e}");
            std::process::exit(2);
        })
    };
    let template_text = read(&template);
    let stub_texts: Vec<String> = stubs.iter().map(|s| read(s)).collect();
    let stub_refs: Vec<&str> = stub_texts.iter().map(|s| s.as_str()).collect();
    let bindings = match values {
        Some(v) => match parse_yaml(&read(&v)) {
            Ok(serde_json::Value::Object(m)) => m,
            Ok(serde_json::Value::Null) => serde_json::Map::new(),
            Ok(_) => {
                eprintln!("values must be a map");
                std::process::exit(2);
            }
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        },
        None => serde_json::Map::new(),
    };
    let options =
        SpiffOptions::default().with_features(&std::env::var("SPIFF_FEATURES").unwrap_or_default());
    match evaluate_yaml(&template_text, &stub_refs, &bindings, &options) {
        Ok(v) => print!("{}", to_yaml(&v)),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
