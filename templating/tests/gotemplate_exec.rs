//! The engine's API beyond Go's semantics: template sets, nested execution through
//! `CallContext` (`include`, `tpl`), files, safety limits, builtins as a FuncMap.

use landscaper_templating::RenderBudget;
use landscaper_templating::gotemplate::{
    Arity, EmptyFiles, ErrorKind, FuncError, FuncMap, Limits, MapFiles, Template, Value, builtins,
    render,
};
use serde_json::json;

fn string_arg(v: &Value) -> Result<String, FuncError> {
    match v {
        Value::String(s) => Ok(s.to_string()),
        v => Err(FuncError::new(format!(
            "wrong type for value; expected string; got {}",
            v.type_name()
        ))),
    }
}

/// `include`, `tpl`, `readFile` and `readDir` the way the real function sets use the context.
fn funcs() -> FuncMap {
    let mut f = FuncMap::new();
    f.insert("include", Arity::Exact(2), |ctx, a| {
        let name = string_arg(&a[0])?;
        ctx.execute_named(&name, a[1].clone()).map(Value::string)
    });
    f.insert("tpl", Arity::Exact(2), |ctx, a| {
        let text = string_arg(&a[0])?;
        ctx.execute_text(&text, a[1].clone()).map(Value::string)
    });
    f.insert("readFile", Arity::Exact(1), |ctx, a| {
        let p = string_arg(&a[0])?;
        let b = ctx.read_file(&p)?;
        Ok(Value::string(String::from_utf8_lossy(&b).into_owned()))
    });
    f.insert("readDir", Arity::Exact(1), |ctx, a| {
        let p = string_arg(&a[0])?;
        let entries = ctx.read_dir(&p)?;
        Ok(Value::list(
            entries
                .into_iter()
                .map(|(n, d)| Value::string(if d { format!("{n}/") } else { n }))
                .collect(),
        ))
    });
    f
}

fn run(text: &str, data: serde_json::Value) -> Result<String, String> {
    render("t", text, &data, &funcs()).map_err(|e| e.to_string())
}

#[test]
fn include_executes_named_templates_with_data() {
    let out = run(
        r#"{{define "x"}}<{{.a}}>{{end}}{{include "x" .}}|{{include "x" (dict)}}"#,
        json!({"a": 1}),
    );
    // `dict` is not defined here: parse error, as Go reports it.
    assert_eq!(
        out.unwrap_err(),
        r#"template: t:1: function "dict" not defined"#
    );
    let out = run(
        r#"{{define "x"}}<{{.a}}>{{end}}{{include "x" .}}"#,
        json!({"a": 1}),
    );
    assert_eq!(out.unwrap(), "<1>");
}

#[test]
fn include_errors_are_wrapped_like_go() {
    let out = run(
        r#"{{define "x"}}{{.a.b}}{{end}}{{include "x" .}}"#,
        json!({"a": "s"}),
    );
    assert_eq!(
        out.unwrap_err(),
        "template: t:1:31: executing \"t\" at <include \"x\" .>: error calling include: \
         template: t:1:18: executing \"x\" at <.a.b>: can't evaluate field b in type interface {}"
    );
    let out = run(r#"{{include "nope" .}}"#, json!({}));
    assert_eq!(
        out.unwrap_err(),
        "template: t:1:2: executing \"t\" at <include \"nope\" .>: error calling include: \
         template: no template \"nope\" associated with template \"t\""
    );
}

#[test]
fn recursive_include_hits_the_depth_limit() {
    let t = Template::parse(
        "t",
        r#"{{define "r"}}x{{include "r" .}}{{end}}{{include "r" .}}"#,
        &funcs(),
    )
    .unwrap();
    let err = t
        .execute("t", &Value::Nil, &funcs(), &EmptyFiles, &Limits::default())
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Limit);
    assert_eq!(
        err.message,
        "template: r: exceeded maximum template depth (100)"
    );
}

#[test]
fn recursive_template_hits_the_depth_limit() {
    let t = Template::parse(
        "t",
        r#"{{define "r"}}{{template "r" .}}{{end}}{{template "r" .}}"#,
        &funcs(),
    )
    .unwrap();
    let limits = Limits {
        max_depth: 10,
        ..Limits::default()
    };
    let err = t
        .execute("t", &Value::Nil, &funcs(), &EmptyFiles, &limits)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Limit);
    assert_eq!(
        err.message,
        "template: t:1:25: executing \"r\" at <{{template \"r\" .}}>: exceeded maximum template depth (10)"
    );
}

#[test]
fn tpl_parses_text_against_the_current_set() {
    let out = run(
        r#"{{define "name"}}N{{end}}{{tpl "{{ .a }}-{{ template \"name\" }}" .}}"#,
        json!({"a": "A"}),
    );
    assert_eq!(out.unwrap(), "A-N");
    let out = run(r#"{{tpl "{{ .a " .}}"#, json!({}));
    assert_eq!(
        out.unwrap_err(),
        "template: t:1:2: executing \"t\" at <tpl \"{{ .a \" .>: error calling tpl: template: t:1: unclosed action"
    );
    // Definitions made by tpl text stay in that text.
    let out = run(
        r#"{{tpl "{{define \"z\"}}Z{{end}}{{template \"z\"}}" .}}{{template "z"}}"#,
        json!({}),
    );
    assert_eq!(
        out.unwrap_err(),
        "template: t:1:65: executing \"t\" at <{{template \"z\"}}>: template \"z\" not defined"
    );
}

#[test]
fn files_come_from_the_host() {
    let files = MapFiles::new()
        .with("a.txt", "hello")
        .with("dir/b.txt", "b")
        .with("dir/sub/c.txt", "c");
    let t = Template::parse(
        "t",
        r#"{{readFile "a.txt"}}|{{readDir "dir"}}|{{readDir "."}}"#,
        &funcs(),
    )
    .unwrap();
    let out = t
        .execute("t", &Value::Nil, &funcs(), &files, &Limits::default())
        .unwrap();
    assert_eq!(out, "hello|[b.txt sub/]|[a.txt dir/]");
    let err = t
        .execute("t", &Value::Nil, &funcs(), &EmptyFiles, &Limits::default())
        .unwrap_err();
    assert_eq!(
        err.message,
        "template: t:1:2: executing \"t\" at <readFile \"a.txt\">: error calling readFile: open a.txt: file does not exist"
    );
}

#[test]
fn output_and_step_limits() {
    let t = Template::parse("t", "{{range .}}xxxxxxxxxx{{end}}", &funcs()).unwrap();
    let data = Value::from_json(&json!((0..1000).collect::<Vec<_>>()));
    let limits = Limits::with_budget(RenderBudget {
        max_output_bytes: 5000,
        ..RenderBudget::default()
    });
    let err = t
        .execute("t", &data, &funcs(), &EmptyFiles, &limits)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Limit);
    assert_eq!(
        err.message,
        "template: t: output exceeds limit of 5000 bytes (render budget max_output_bytes)"
    );

    let limits = Limits::with_budget(RenderBudget {
        max_steps: 500,
        ..RenderBudget::default()
    });
    let err = t
        .execute("t", &data, &funcs(), &EmptyFiles, &limits)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Limit);
    assert_eq!(
        err.message,
        "template: t: execution exceeds limit of 500 steps (render budget max_steps)"
    );

    // The limit error survives being wrapped by an include.
    let t = Template::parse(
        "t",
        r#"{{define "x"}}{{range .}}xxxxxxxxxx{{end}}{{end}}{{include "x" .}}"#,
        &funcs(),
    )
    .unwrap();
    let limits = Limits::with_budget(RenderBudget {
        max_output_bytes: 5000,
        ..RenderBudget::default()
    });
    let err = t
        .execute("t", &data, &funcs(), &EmptyFiles, &limits)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Limit);
    assert_eq!(
        err.message,
        "template: x: output exceeds limit of 5000 bytes (render budget max_output_bytes)"
    );
}

#[test]
fn template_sets_grow_with_add() {
    let f = funcs();
    let mut t = Template::parse("main", r#"{{template "helper" .}}"#, &f).unwrap();
    t.add("helpers.tpl", r#"{{define "helper"}}[{{.}}]{{end}}"#)
        .unwrap();
    assert_eq!(t.names(), vec!["helper", "helpers.tpl", "main"]);
    let out = t
        .execute("main", &Value::Int(3), &f, &EmptyFiles, &Limits::default())
        .unwrap();
    assert_eq!(out, "[3]");
    // A later non-empty definition replaces; an empty one does not.
    t.add("more.tpl", r#"{{define "helper"}}({{.}}){{end}}"#)
        .unwrap();
    t.add("empty.tpl", r#"{{define "helper"}}  {{end}}"#)
        .unwrap();
    let out = t
        .execute("main", &Value::Int(3), &f, &EmptyFiles, &Limits::default())
        .unwrap();
    assert_eq!(out, "(3)");
    let err = t
        .execute("nope", &Value::Nil, &f, &EmptyFiles, &Limits::default())
        .unwrap_err();
    assert_eq!(
        err.message,
        "template: no template \"nope\" associated with template \"main\""
    );
    assert_eq!(err.kind, ErrorKind::Exec);
    let err = t.add("bad.tpl", "{{ .x }").unwrap_err();
    assert_eq!(err.kind, ErrorKind::Parse);
    assert_eq!(
        err.message,
        "template: bad.tpl:1: unexpected \"}\" in operand"
    );
}

#[test]
fn errors_name_the_file_and_template() {
    let f = funcs();
    let mut t = Template::parse("main", r#"{{template "h" .}}"#, &f).unwrap();
    t.add("_helpers.tpl", "\n\n{{define \"h\"}}\n  {{ .a.b }}{{end}}")
        .unwrap();
    let err = t
        .execute(
            "main",
            &Value::from_json(&json!({"a": 1})),
            &f,
            &EmptyFiles,
            &Limits::default(),
        )
        .unwrap_err();
    assert_eq!(
        err.message,
        "template: _helpers.tpl:4:7: executing \"h\" at <.a.b>: can't evaluate field b in type interface {}"
    );
}

#[test]
fn builtins_funcmap_and_overrides() {
    // The builtins as a FuncMap: usable by value, and recognised by the executor (so `and`
    // still short-circuits when the user's map contains them).
    let mut f = builtins();
    f.extend(funcs());
    f.insert("boom", Arity::Exact(0), |_, _| Err(FuncError::new("boom")));
    let out = render(
        "t",
        "{{ or 1 boom }}|{{ and 0 boom }}|{{ len .x }}",
        &json!({"x": [1, 2]}),
        &f,
    );
    assert_eq!(out.unwrap(), "1|0|2");
    let len = builtins().get("len").unwrap().function.clone();
    let mut ctx_funcs = FuncMap::new();
    // Overriding a builtin replaces it.
    ctx_funcs.insert("len", Arity::Exact(1), |_, _| Ok(Value::Int(42)));
    assert_eq!(
        render("t", "{{ len . }}", &json!([1]), &ctx_funcs).unwrap(),
        "42"
    );
    struct NoCtx;
    impl landscaper_templating::gotemplate::CallContext for NoCtx {
        fn execute_named(&mut self, _: &str, _: Value) -> Result<String, FuncError> {
            unreachable!()
        }
        fn execute_text(&mut self, _: &str, _: Value) -> Result<String, FuncError> {
            unreachable!()
        }
        fn read_file(&self, _: &str) -> Result<Vec<u8>, FuncError> {
            unreachable!()
        }
        fn read_dir(&self, _: &str) -> Result<Vec<(String, bool)>, FuncError> {
            unreachable!()
        }
    }
    let v = len(&mut NoCtx, &[Value::string("héllo")]).unwrap();
    assert!(matches!(v, Value::Int(6)));
}

#[test]
fn range_over_int_is_supported_as_in_go_1_22() {
    assert_eq!(
        run(
            "{{range 3}}{{.}}{{end}}|{{range $i := 2}}{{$i}}{{end}}",
            json!({})
        )
        .unwrap(),
        "012|01"
    );
    assert_eq!(
        run("{{range 0}}x{{else}}none{{end}}", json!({})).unwrap(),
        "none"
    );
    assert_eq!(
        run("{{range $i, $e := 3}}{{end}}", json!({})).unwrap_err(),
        "template: t:1:18: executing \"t\" at <3>: can't use 3 to iterate over more than one variable"
    );
}

#[test]
fn maps_are_shared_by_reference_during_range() {
    // A function mutating the map being ranged over must not break the iteration (Go sorts a
    // snapshot of the keys first).
    let mut f = funcs();
    f.insert("set", Arity::Exact(3), |_, a| {
        if let (Value::Map(m), Value::String(k)) = (&a[0], &a[1]) {
            m.borrow_mut().insert(k.to_string(), a[2].clone());
        }
        Ok(a[0].clone())
    });
    let out = render(
        "t",
        r#"{{range $k, $v := .}}{{$_ := set $ "z" 1}}{{$k}}{{end}}|{{len .}}"#,
        &json!({"a": 1, "b": 2}),
        &f,
    );
    assert_eq!(out.unwrap(), "ab|3");
}
