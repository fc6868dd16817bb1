//! Unit tests of the evaluator and the document flow.

use serde_json::{Map, Value as J, json};

use super::*;

fn opts() -> SpiffOptions {
    SpiffOptions {
        stack_size: 0,
        ..Default::default()
    }
}

fn eval_y(template: &str) -> Result<J, SpiffError> {
    evaluate_yaml(template, &[], &Map::new(), &opts())
}

fn eval_b(template: &str, bindings: J) -> Result<J, SpiffError> {
    let J::Object(b) = bindings else { panic!() };
    evaluate_yaml(template, &[], &b, &opts())
}

#[test]
fn references_and_arithmetic() {
    let r = eval_y("a: 1\nb: (( a + 2 * 3 ))\nc: (( b / 2 ))\nd: (( -7 % 3 ))\n").unwrap();
    assert_eq!(r, json!({"a": 1, "b": 7, "c": 3, "d": -1}));
}

#[test]
fn juxtaposition_and_types() {
    let r = eval_y("x: (( \"a\" 1 true ))\nz: (( 1 2 ))\nl: (( [1] 2 [3] ))\n").unwrap();
    assert_eq!(r, json!({"x": "a1true", "z": "12", "l": [1, 2, 3]}));
    // YAML 1.1 as spiff reads it: `y` is a boolean key
    assert!(eval_y("y: 1").is_err());
    assert!(eval_y("x: (( 1.5 \"a\" ))").is_err());
}

#[test]
fn or_catches_missing_and_errors() {
    let r = eval_y("a: (( missing || \"d\" ))\nb: (( 1 / 0 || 5 ))\nc: (( ~ // 3 ))\n").unwrap();
    assert_eq!(r, json!({"a": "d", "b": 5, "c": 3}));
}

#[test]
fn bindings_are_a_scope_with_float_numbers() {
    let r = eval_b(
        "name: (( imp.name ))\nport: (( imp.port + 1 ))\nt: (( type(imp.port) ))\n",
        json!({"imp": {"name": "alice", "port": 8080}}),
    )
    .unwrap();
    assert_eq!(r, json!({"name": "alice", "port": 8081, "t": "float"}));
    // absolute paths do not see bindings
    assert!(eval_b("x: (( .imp.name ))", json!({"imp": {"name": "a"}})).is_err());
}

#[test]
fn cycles_fail_with_paths() {
    let e = eval_y("a: (( b ))\nb: (( a ))\n").unwrap_err();
    assert_eq!(e.issues.len(), 2);
    assert!(
        e.issues
            .iter()
            .any(|i| i.path == "a" && i.expression == "(( b ))")
    );
    let e = eval_y("x:\n  v: (( missing.field ))\n").unwrap_err();
    assert_eq!(e.issues[0].path, "x.v");
    assert!(e.to_string().contains("'missing' not found"), "{e}");
}

#[test]
fn lambdas_and_mappings() {
    let r = eval_y(
        "list: [1, 2, 3]\nsum: (( sum[list|0|s,x|->s + x] ))\nsq: (( map[list|x|->x * x] ))\nodd: (( select[list|x|->x % 2 == 1] ))\nf: (( |x|->x + 1 ))\ncall: (( .f(41) ))\n",
    )
    .unwrap();
    assert_eq!(r["sum"], json!(6));
    assert_eq!(r["sq"], json!([1, 4, 9]));
    assert_eq!(r["odd"], json!([1, 3]));
    assert_eq!(r["call"], json!(42));
    assert_eq!(r["f"], json!("(( lambda|x|->x + 1 ))"));
}

#[test]
fn markers_and_undefined() {
    let r = eval_y(
        "tmp: (( &temporary ( 5 ) ))\nv: (( tmp * 2 ))\ngone: (( ~~ ))\nl: [1, (( ~~ )), 2]\n",
    )
    .unwrap();
    assert_eq!(r, json!({"v": 10, "l": [1, 2]}));
}

#[test]
fn merges_with_stubs() {
    let r = evaluate_yaml(
        "a: (( merge ))\nb: default\nc: (( merge || \"x\" ))\n",
        &["a: from-stub\nb: overridden\n"],
        &Map::new(),
        &opts(),
    )
    .unwrap();
    assert_eq!(r, json!({"a": "from-stub", "b": "overridden", "c": "x"}));
}

#[test]
fn templates_are_instantiated() {
    let r = eval_y("t:\n  <<: (( &template ))\n  v: (( x * 2 ))\nx: 3\ninst: (( *t ))\n").unwrap();
    assert_eq!(r["inst"], json!({"v": 6}));
}

#[test]
fn functions() {
    let r = eval_y(
        "j: (( join(\", \", [\"a\", \"b\"]) ))\ns: (( split(\",\", \"a,b\") ))\nf: (( format(\"%s-%03d\", \"x\", 7) ))\nb: (( base64(\"hello\") ))\nd: (( base64_decode(b) ))\nk: (( keys({\"b\"=1, \"a\"=2}) ))\nl: (( length(\"äbc\") ))\nj2: (( asjson({\"a\"=[1, \"<\"]}) ))\nyy: (( asyaml({\"a\"=1}) ))\n",
    )
    .unwrap();
    assert_eq!(r["j"], json!("a, b"));
    assert_eq!(r["s"], json!(["a", "b"]));
    assert_eq!(r["f"], json!("x-007"));
    assert_eq!(r["d"], json!("hello"));
    assert_eq!(r["k"], json!(["a", "b"]));
    assert_eq!(r["l"], json!(4));
    assert_eq!(r["j2"], json!("{\"a\":[1,\"\\u003c\"]}"));
    assert_eq!(r["yy"], json!("a: 1\n"));
}

#[test]
fn os_functions_are_disabled_and_files_come_from_options() {
    assert!(eval_y("x: (( exec(\"echo\", \"hi\") ))").is_err());
    let mut o = opts();
    o.files
        .insert("data/values.yaml".into(), b"a: (( 1 + 1 ))\n".to_vec());
    o.files.insert("text.txt".into(), b"hello".to_vec());
    let r = evaluate_yaml(
        "v: (( read(\"data/values.yaml\") ))\nt: (( read(\"text.txt\") ))\n",
        &[],
        &Map::new(),
        &o,
    )
    .unwrap();
    assert_eq!(r, json!({"v": {"a": 2}, "t": "hello"}));
}

#[test]
fn escapes_and_parse_errors() {
    let r = eval_y("a: ((! foo ))\nb: \"(( 'x' ))\\n\"\n").unwrap();
    assert_eq!(r, json!({"a": "(( foo ))", "b": "(( 'x' ))\n"}));
    assert!(eval_y("a: (( ))").is_err());
}

#[test]
fn runaway_recursion_is_limited() {
    let mut o = opts();
    o.max_depth = 50;
    let e = evaluate_yaml(
        "f: (( |x|->_.f(x) ))\nv: (( .f(1) ))\n",
        &[],
        &Map::new(),
        &o,
    );
    assert!(e.is_err());
}

#[test]
fn state_is_carried_in_executions() {
    let template = json!({
        "state": {"<<<": "(( &state ))", "version": "0.0.1"},
        "image": "(( \"img:\" .state.version ))"
    });
    let out = evaluate_with_state(&template, &[], &json!({}), &Map::new(), &opts()).unwrap();
    assert_eq!(out.document["image"], json!("img:0.0.1"));
    assert_eq!(out.state, json!({"state": {"version": "0.0.1"}}));
    let stored = json!({"state": {"version": "0.0.2"}});
    let out = evaluate_with_state(&template, &[], &stored, &Map::new(), &opts()).unwrap();
    assert_eq!(out.document["image"], json!("img:0.0.2"));
    assert_eq!(out.state, stored);
}

#[test]
fn json_entry_point_and_yaml_output() {
    let r = evaluate(
        &json!({"a": "(( b \"-\" c ))", "b": 1, "c": 2.5}),
        &[],
        &Map::new(),
        &SpiffOptions::default(),
    );
    assert!(r.is_err(), "float juxtaposition fails");
    let r = evaluate(
        &json!({"a": "(( b * c ))", "b": 2, "c": 1.5}),
        &[],
        &Map::new(),
        &SpiffOptions::default(),
    )
    .unwrap();
    assert_eq!(r, json!({"a": 3, "b": 2, "c": 1.5}));
    assert_eq!(
        to_yaml(&json!({"a": [1, "true"], "b": {}})),
        "a:\n- 1\n- \"true\"\nb: {}\n"
    );
}

#[test]
fn blowups_are_bounded() {
    assert!(eval_y("x: (( sum[[1..40]|\"xx\"|s,i|->s s] ))").is_err());
    assert!(eval_y("x: (( [1..100000000] ))").is_err());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
    #[test]
    fn evaluating_arbitrary_expressions_never_panics(
        e in "[a-z0-9 ()\\[\\]{}|.,:\"*+/%=<>!?&$~_-]{0,40}"
    ) {
        let doc = format!("a: 1\nb: [1, \"x\"]\nm:\n  k: v\nx: (( {e} ))\n");
        let mut o = opts();
        o.budget.max_steps = 20_000;
        let _ = evaluate_yaml(&doc, &[], &Map::new(), &o);
    }
}

#[test]
fn data_mappings_are_separate_documents() {
    let J::Object(mappings) = json!({
        "name": "(( temp-name ))",
        "release": {"name": "(( temp-name ))", "ns": "(( namespace || \"default\" ))"},
        "constant": "fixed",
    }) else {
        panic!()
    };
    let J::Object(b) = json!({"temp-name": "echo"}) else {
        panic!()
    };
    let r = evaluate_data_mappings(&mappings, &b, &opts()).unwrap();
    assert_eq!(
        J::Object(r),
        json!({"name": "echo", "release": {"name": "echo", "ns": "default"}, "constant": "fixed"})
    );
    let J::Object(bad) = json!({"x": "(( missing ))"}) else {
        panic!()
    };
    let (key, e) = evaluate_data_mappings(&bad, &b, &opts()).unwrap_err();
    assert_eq!(key, "x");
    assert_eq!(e.issues[0].path, "");
}

#[test]
fn yaml_execution_with_state() {
    let out = evaluate_yaml_with_state(
        "state:\n  <<<: (( &state ))\n  v: (( values.v ))\nout: (( .state.v ))\n",
        &[],
        &json!({}),
        &serde_json::from_value::<Map<String, J>>(json!({"values": {"v": "a"}})).unwrap(),
        &opts(),
    )
    .unwrap();
    assert_eq!(out.document, json!({"state": {"v": "a"}, "out": "a"}));
    assert_eq!(out.state, json!({"state": {"v": "a"}}));
}

#[test]
fn custom_functions() {
    let mut o = opts();
    o.functions.register("ociRefRepo", |args| match args {
        [J::String(r)] => Ok(J::String(r.split(':').next().unwrap_or("").to_string())),
        _ => Err("ociRefRepo requires a string".into()),
    });
    let r = evaluate_yaml(
        "repo: (( ociRefRepo(\"eu.gcr.io/x/y:1.0\") ))\n",
        &[],
        &Map::new(),
        &o,
    )
    .unwrap();
    assert_eq!(r, json!({"repo": "eu.gcr.io/x/y"}));
    let e = evaluate_yaml("r: (( ociRefRepo(1) ))\n", &[], &Map::new(), &o).unwrap_err();
    assert!(
        e.to_string().contains("ociRefRepo requires a string"),
        "{e}"
    );
}
