//! Helm v3's template functions (`pkg/engine/funcs.go` and the late-bound ones of
//! `engine.go`): `include`, `tpl`, `required`, `fail`, `toYaml`, `fromYaml`, `toJson`,
//! `fromJson`, `toToml`, `fromToml`, `lookup`… `.Capabilities`, `.Release`, `.Files` and
//! `.Chart` are data the renderer provides, not functions.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use super::super::function::{Arity, FuncError, FuncMap, GoType};
use super::super::value::Value;
use super::args::{self, s};
use super::{json, yaml};

/// Helm marks the messages of `required` and `fail` with these delimiters; its renderer
/// (`cleanupExecError`) reports `execution error at (<file>:<line>:<col>): <message>` for an
/// error that contains them.
pub const HELM_ERR_START: &str = "HELM_ERR_START";
pub const HELM_ERR_END: &str = "HELM_ERR_END";

/// Helm's `recursionMaxNums` for `include`.
pub const HELM_INCLUDE_MAX: usize = 1000;

fn warn_wrap(msg: &str) -> FuncError {
    FuncError::new(format!("{HELM_ERR_START}{msg}{HELM_ERR_END}"))
}

/// Helm's additional functions (without sprig).
pub fn helm() -> FuncMap {
    let mut m = FuncMap::new();
    m.insert("toYaml", Arity::Exact(1), |_, a| Ok(s(to_yaml(&a[0]))));
    m.insert("toYamlPretty", Arity::Exact(1), |_, a| {
        // yaml.v3 with indent 2 indents sequences under their key; otherwise as toYaml.
        Ok(s(yaml::marshal_pretty(&a[0])
            .map(|t| t.strip_suffix('\n').map(str::to_string).unwrap_or(t))
            .unwrap_or_default()))
    });
    m.insert("fromYaml", Arity::Exact(1), |_, a| {
        let text = args::string(&a[0])?;
        Ok(match yaml::unmarshal(&text) {
            Ok(Value::Map(m)) => Value::Map(m),
            Ok(Value::Nil) => Value::empty_map(),
            Ok(other) => error_map(format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json::kind_word(&other)
            )),
            Err(e) => error_map(e),
        })
    });
    m.insert("fromYamlArray", Arity::Exact(1), |_, a| {
        let text = args::string(&a[0])?;
        Ok(match yaml::unmarshal(&text) {
            Ok(Value::List(l)) => Value::List(l),
            Ok(Value::Nil) => Value::list(Vec::new()),
            Ok(other) => Value::list(vec![s(format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type []interface {{}}",
                json::kind_word(&other)
            ))]),
            Err(e) => Value::list(vec![s(e)]),
        })
    });
    m.insert("toJson", Arity::Exact(1), |_, a| {
        Ok(s(json::encode(&a[0], true).unwrap_or_default()))
    });
    m.insert("fromJson", Arity::Exact(1), |_, a| {
        let text = args::string(&a[0])?;
        Ok(match json::decode_partial(&text) {
            (Some(Value::Map(m)), err) => {
                if let Some(e) = err {
                    m.borrow_mut().insert("Error".into(), s(e));
                }
                Value::Map(m)
            }
            // `null` sets the map to nil.
            (Some(Value::Nil), None) => Value::Nil,
            (Some(other), _) => error_map(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json::kind_word(&other)
            )),
            (None, err) => error_map(err.unwrap_or_default()),
        })
    });
    m.insert("fromJsonArray", Arity::Exact(1), |_, a| {
        let text = args::string(&a[0])?;
        Ok(match json::decode(&text) {
            Ok(Value::List(l)) => Value::List(l),
            Ok(Value::Nil) => Value::list(Vec::new()),
            Ok(other) => Value::list(vec![s(format!(
                "json: cannot unmarshal {} into Go value of type []interface {{}}",
                json::kind_word(&other)
            ))]),
            Err(e) => Value::list(vec![s(e)]),
        })
    });
    m.insert("toToml", Arity::Exact(1), |_, a| {
        Ok(s(super::toml::encode(&a[0]).unwrap_or_else(|e| e)))
    });
    m.insert("fromToml", Arity::Exact(1), |_, a| {
        let text = args::string(&a[0])?;
        Ok(match super::toml::decode(&text) {
            Ok(v) => v,
            Err(e) => error_map(e),
        })
    });
    // Late-bound in Helm: include and tpl close over the template being rendered.
    let included: Rc<RefCell<HashMap<String, usize>>> = Rc::default();
    let inc = included.clone();
    m.insert("include", Arity::Exact(2), move |ctx, a| {
        let name = args::string(&a[0])?;
        {
            let mut map = inc.borrow_mut();
            let n = map.entry(name.to_string()).or_insert(0);
            if *n > HELM_INCLUDE_MAX {
                return Err(FuncError::new(format!(
                    "rendering template has a nested reference name: {name}: unable to execute template"
                )));
            }
            *n += 1;
        }
        let out = ctx.execute_named(&name, a[1].clone());
        if let Some(n) = inc.borrow_mut().get_mut(&*name) {
            *n -= 1;
        }
        Ok(s(out?))
    });
    m.insert("tpl", Arity::Exact(2), |ctx, a| {
        let text = args::string(&a[0])?;
        match ctx.execute_text(&text, a[1].clone()) {
            Ok(out) => Ok(s(out.replace("<no value>", ""))),
            Err(e) => {
                let q = crate::gofmt::quote(&text);
                // Parse errors have no `executing "…"` part.
                if e.message.contains("executing \"") {
                    Err(FuncError::new(format!(
                        "error during tpl function execution for {q}: {}",
                        e.message
                    )))
                } else {
                    Err(FuncError::new(format!(
                        "cannot parse template {q}: {}",
                        e.message
                    )))
                }
            }
        }
    });
    m.insert("required", Arity::Exact(2), |_, a| {
        let warn = args::string(&a[0])?;
        match &a[1] {
            Value::Nil => Err(warn_wrap(&warn)),
            Value::String(v) if v.is_empty() => Err(warn_wrap(&warn)),
            other => Ok(other.clone()),
        }
    });
    m.insert("fail", Arity::Exact(1), |_, a| {
        Err(warn_wrap(&args::string(&a[0])?))
    });
    // Without a cluster (`helm template`), Helm's lookup returns an empty map. (The engine
    // checks the string parameters, see PARAMS.)
    m.insert("lookup", Arity::Exact(4), |_, _| Ok(Value::empty_map()));
    // DNS lookups are disabled by default (`--enable-dns`): Helm returns "".
    m.insert("getHostByName", Arity::Exact(1), |_, _| Ok(s("")));
    drop(included);
    for &(name, params) in PARAMS {
        m.set_params(name, params);
    }
    m
}

/// The Go parameter types of Helm's functions with typed parameters (`pkg/engine/funcs.go`
/// and the late-bound ones of `engine.go`; `tpl`'s `chartutil.Values` is left `interface{}`).
const PARAMS: &[(&str, &[GoType])] = {
    use GoType::{Any as A, String as S};
    &[
        ("fromYaml", &[S]),
        ("fromYamlArray", &[S]),
        ("fromJson", &[S]),
        ("fromJsonArray", &[S]),
        ("fromToml", &[S]),
        ("include", &[S, A]),
        ("tpl", &[S, A]),
        ("required", &[S, A]),
        ("fail", &[S]),
        ("lookup", &[S, S, S, S]),
        ("getHostByName", &[S]),
    ]
};

fn error_map(msg: String) -> Value {
    let mut m = BTreeMap::new();
    m.insert("Error".to_string(), s(msg));
    Value::map(m)
}

/// Helm's and Landscaper's `toYaml`: sigs.k8s.io/yaml without the final newline; "" on error.
pub fn to_yaml(v: &Value) -> String {
    match yaml::marshal(v) {
        Ok(mut t) => {
            if t.ends_with('\n') {
                t.pop();
            }
            t
        }
        Err(_) => String::new(),
    }
}

/// A glob as Helm's `.Files.Glob` compiles it (`github.com/gobwas/glob` with `/` as the
/// separator): `*` matches within a path segment, `**` across segments, `?` one character
/// of a segment, `[abc]`/`[!a-z]` classes, `{a,b}` alternatives, `\` escapes.
#[derive(Debug, Clone)]
pub struct Glob(regex::Regex);

impl Glob {
    /// The compiled glob, or `None` when the pattern is malformed (Helm then uses `**`).
    pub fn compile(pattern: &str) -> Option<Glob> {
        let mut re = String::from("^(?s:");
        let chars: Vec<char> = pattern.chars().collect();
        let mut i = 0;
        let mut depth = 0usize;
        while i < chars.len() {
            let c = chars[i];
            match c {
                '*' => {
                    if chars.get(i + 1) == Some(&'*') {
                        re.push_str(".*");
                        i += 1;
                    } else {
                        re.push_str("[^/]*");
                    }
                }
                '?' => re.push_str("[^/]"),
                '[' => {
                    let mut j = i + 1;
                    let mut class = String::from("[");
                    if chars.get(j) == Some(&'!') {
                        class.push('^');
                        j += 1;
                    }
                    let start = j;
                    while j < chars.len() && (chars[j] != ']' || j == start) {
                        let ch = chars[j];
                        if ch == '\\' || ch == '[' || ch == '&' || ch == '~' || ch == '^' {
                            class.push('\\');
                        }
                        class.push(ch);
                        j += 1;
                    }
                    if j >= chars.len() {
                        return None;
                    }
                    class.push(']');
                    re.push_str(&class);
                    i = j;
                }
                '{' => {
                    depth += 1;
                    re.push_str("(?:");
                }
                '}' if depth > 0 => {
                    depth -= 1;
                    re.push(')');
                }
                ',' if depth > 0 => re.push('|'),
                '\\' => {
                    i += 1;
                    let next = *chars.get(i)?;
                    re.push_str(&regex::escape(&next.to_string()));
                }
                other => re.push_str(&regex::escape(&other.to_string())),
            }
            i += 1;
        }
        if depth != 0 {
            return None;
        }
        re.push_str(")$");
        regex::Regex::new(&re).ok().map(Glob)
    }

    /// `**`: everything.
    pub fn any() -> Glob {
        Glob(regex::Regex::new("^(?s:.*)$").expect("constant regex"))
    }

    pub fn matches(&self, name: &str) -> bool {
        self.0.is_match(name)
    }
}

#[cfg(test)]
mod glob_tests {
    use super::Glob;

    #[test]
    fn globs_match_as_gobwas_with_slash_separator() {
        let g = Glob::compile("files/*.yaml").unwrap();
        assert!(g.matches("files/a.yaml"));
        assert!(!g.matches("files/sub/a.yaml"));
        let g = Glob::compile("files/**.yaml").unwrap();
        assert!(g.matches("files/sub/a.yaml"));
        let g = Glob::compile("conf/{a,b}?.[!x]son").unwrap();
        assert!(g.matches("conf/a1.json"));
        assert!(!g.matches("conf/c1.json"));
        assert!(!g.matches("conf/a1.xson"));
        assert!(Glob::compile("a[").is_none());
    }
}
