//! Builtin functions of dynaml.

use std::rc::Rc;

use base64::Engine as _;

use super::env::Env;
use super::eval::{Info, call_lambda, compare_equals, go_parse_bool};
use super::expr::{Expr, lambda_value_string};
use super::value::{Map, Node, Value};
use super::yaml::{emit_yaml, go_json};
use crate::gofmt::{Arg, format_float, sprintf};

/// (value, info, ok, resolved)
pub(crate) type FRes = (Value, Info, bool, bool);

fn done(v: Value) -> FRes {
    (v, Info::default(), true, true)
}

fn err(msg: impl Into<String>) -> FRes {
    let (v, i, o) = Info::default().error(msg);
    (v, i, o, true)
}

fn from_res(r: super::eval::Res) -> FRes {
    (r.0, r.1, r.2, true)
}

/// Go's `strconv.ParseInt(s, 10, 64)`
pub(crate) fn go_parse_int(s: &str) -> Option<i64> {
    let b = s.strip_prefix(['+', '-']).unwrap_or(s);
    if b.is_empty() || !b.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

fn simple_string(v: &Value) -> Option<String> {
    match v {
        Value::Str(s) => Some(s.to_string()),
        Value::Int(i) => Some(i.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn str_list(v: Vec<String>) -> Value {
    Value::list(v.into_iter().map(|s| Node::new(Value::str(s))).collect())
}

pub(crate) fn call_builtin(name: &str, args: Vec<Value>, env: &Env, locally: bool) -> FRes {
    match name {
        "join" => join(&args),
        "split" => split(&args),
        "split_match" => split_match(&args),
        "trim" => trim(&args),
        "length" => length(&args),
        "uniq" => uniq(&args),
        "element" => element(&args),
        "contains" => contains(&args),
        "index" => index(&args, true),
        "lastindex" => index(&args, false),
        "replace" => replace(&args, env, false),
        "replace_match" => replace(&args, env, true),
        "match" => match_(&args),
        "sort" => sort(args, env),
        "exec" | "exec_uncached" | "pipe" | "pipe_uncached" => err(format!(
            "{name}: no OS operations supported in this execution environment"
        )),
        "tempfile" | "write" | "mkdir" => err(format!(
            "{name}: no OS operations supported in this execution environment"
        )),
        "env" => err("env: no OS operations supported in this execution environment"),
        "rand" => err("rand: not supported in this execution environment"),
        "eval" => eval_fn(&args, env, locally),
        "read" | "read_uncached" => read(&args, env),
        "lookup_file" | "lookup_dir" => lookup(&args, env, name == "lookup_dir"),
        "list_files" | "list_dirs" => list_files(&args, env, name == "list_dirs"),
        "format" => match format(name, &args) {
            Ok(s) => done(Value::str(s)),
            Err(e) => err(e),
        },
        "error" => match format(name, &args) {
            Ok(s) => err(s),
            Err(e) => err(e),
        },
        "min_ip" | "max_ip" | "num_ip" => ip_fn(name, &args),
        "contains_ip" => contains_ip(&args),
        "makemap" => makemap(&args),
        "list_to_map" => list_to_map(&args, None),
        "merge" => merge(&args, env),
        "base64" => base64_enc(&args),
        "base64_decode" => base64_dec(&args),
        "md5" => md5_fn(&args),
        "hash" => hash(&args),
        "asjson" => {
            if args.len() != 1 {
                return err("asjson takes exactly one argument");
            }
            match go_json(&args[0]) {
                Ok(s) => done(Value::str(s)),
                Err(e) => err(format!("cannot jsonencode: {e}")),
            }
        }
        "asyaml" => {
            if args.len() != 1 {
                return err("asyaml takes exactly one argument");
            }
            done(Value::str(emit_yaml(&args[0])))
        }
        "parse" => parse_fn(&args, env),
        "substr" => substr(&args),
        "lower" | "upper" => {
            if args.len() != 1 {
                return err(format!("{name} requires one argument"));
            }
            let Value::Str(s) = &args[0] else {
                return err(format!("first argument for {name} must be a string"));
            };
            done(Value::str(if name == "lower" {
                s.to_lowercase()
            } else {
                s.to_uppercase()
            }))
        }
        "keys" => {
            if args.len() != 1 {
                return err("one argument required for keys");
            }
            let Value::Map(m) = &args[0] else {
                return err("map argument required for keys");
            };
            done(str_list(m.keys().cloned().collect()))
        }
        "type" => {
            if args.is_empty() {
                return err("exactly one argument required for function 'type'");
            }
            let t = args[0].type_name();
            if t.is_empty() {
                err("unknown type")
            } else {
                done(Value::str(t))
            }
        }
        "basename" | "dirname" => path_fn(name, &args),
        "compact" => compact(&args),
        "reverse" => {
            if args.len() != 1 {
                return err("reverse takes one list argument");
            }
            let Value::List(l) = &args[0] else {
                return err("argument for reverse must be a list");
            };
            let mut v = (**l).clone();
            v.reverse();
            done(Value::list(v))
        }
        "intersect" => intersect(&args),
        "string" => to_string(&args),
        "integer" => to_integer(&args),
        "float" => to_float(&args),
        "bool" => to_bool_fn(&args),
        "features" => match args.len() {
            0 => {
                let st = env.state();
                let mut l = Vec::new();
                if st.interpolation {
                    l.push("interpolation".to_string());
                }
                if st.control {
                    l.push("control".to_string());
                }
                done(str_list(l))
            }
            1 => match &args[0] {
                Value::Str(s) => done(Value::Bool(match &**s {
                    "interpolation" => env.interpolation(),
                    "control" => env.control(),
                    _ => false,
                })),
                _ => err("features: argument must be a string"),
            },
            _ => err("features acctepts a maximum of one arguments"),
        },
        "floor" | "ceil" | "round" | "roundtoeven" | "abs" | "sin" | "cos" | "sinh" | "cosh"
        | "asin" | "acos" | "asinh" | "acosh" | "sqrt" | "exp" | "log" | "log10" => {
            float_fn(name, &args)
        }
        "validate" | "check" => super::validate::validate_fn(name, &args, env),
        "tagdef" => super::funcs_ext::tagdef(&args, env),
        "parseurl" => super::funcs_ext::parseurl(&args),
        n if n.starts_with("semver") => super::semver::call(n, &args),
        "ipset" => super::funcs_ext::ipset(&args),
        "md5crypt" => super::funcs_ext::md5crypt(&args),
        "bcrypt" => super::funcs_ext::bcrypt_hash(&args),
        "bcrypt_check" => super::funcs_ext::bcrypt_check(&args),
        "static_ips" => super::funcs_ext::static_ips(&args, env),
        "md5crypt_check" => super::funcs_ext::md5crypt_check(&args),
        _ => match env.state().functions.0.get(name) {
            Some(f) => {
                let jargs: Vec<serde_json::Value> =
                    args.iter().map(super::yaml::value_to_json).collect();
                match f(&jargs) {
                    Ok(v) => done(super::yaml::json_to_value(&v, false)),
                    Err(e) => err(e),
                }
            }
            None => err(format!("unknown function '{name}'")),
        },
    }
}

fn join(args: &[Value]) -> FRes {
    if args.is_empty() {
        return (Value::Nil, Info::default(), false, true);
    }
    let mut parts: Vec<String> = Vec::new();
    for (i, a) in args.iter().enumerate() {
        match a {
            Value::Str(_) | Value::Int(_) | Value::Bool(_) => parts.push(simple_string(a).unwrap()),
            Value::List(l) => {
                if i == 0 {
                    return err("first argument for join must be a string");
                }
                for e in l.iter() {
                    match simple_string(e.value()) {
                        Some(s) => parts.push(s),
                        None => {
                            return err(format!(
                                "elements of list(arg {i}) to join must be simple values"
                            ));
                        }
                    }
                }
            }
            Value::Nil => {}
            _ => return err(format!("argument {i} to join must be simple value or list")),
        }
    }
    if parts.is_empty() {
        return done(Value::str(""));
    }
    let sep = parts.remove(0);
    if let Err(e) = crate::budget::check_bytes(parts.iter().map(|p| p.len() + sep.len()).sum()) {
        return err(e.to_string());
    }
    done(Value::str(parts.join(&sep)))
}

/// Go's `strings.SplitN`
fn go_split_n(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        // split into UTF-8 sequences
        let chars: Vec<String> = s.chars().map(|c| c.to_string()).collect();
        if n < 0 || (n as usize) >= chars.len() {
            return chars;
        }
        let mut out: Vec<String> = chars[..n as usize - 1].to_vec();
        out.push(chars[n as usize - 1..].concat());
        return out;
    }
    if n < 0 {
        return s.split(sep).map(|x| x.to_string()).collect();
    }
    s.splitn(n as usize, sep).map(|x| x.to_string()).collect()
}

fn split(args: &[Value]) -> FRes {
    if args.len() < 2 || args.len() > 3 {
        return err("split takes 2 or 3 arguments");
    }
    let Value::Str(s) = &args[1] else {
        return err("second argument for split must be a string");
    };
    let mut n: i64 = -1;
    if args.len() > 2 {
        let Value::Int(m) = &args[2] else {
            return err("third argument for split must be an integer");
        };
        n = *m;
    }
    match &args[0] {
        Value::Str(sep) => done(str_list(go_split_n(s, sep, n))),
        Value::Int(max) => {
            let max = *max;
            if max <= 0 {
                return err("max line length argument must be positive");
            }
            let mut result = Vec::new();
            let mut cur = String::new();
            let mut l = 0;
            for c in s.chars() {
                if l >= max && !(0..=1).contains(&n) {
                    result.push(std::mem::take(&mut cur));
                    l = 0;
                    n -= 1;
                }
                cur.push(c);
                l += 1;
            }
            if l > 0 {
                result.push(cur);
            }
            done(str_list(result))
        }
        _ => err("first argument for split must be a string"),
    }
}

fn go_regex(p: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(p).map_err(|e| format!("error parsing regexp: {e}"))
}

fn split_match(args: &[Value]) -> FRes {
    if args.len() < 2 || args.len() > 3 {
        return err("split_match takes 2 or 3 arguments");
    }
    let Value::Str(sep) = &args[0] else {
        return err("first argument for split_match must be a string");
    };
    let Value::Str(s) = &args[1] else {
        return err("second argument for split_match must be a string");
    };
    let mut n: i64 = -1;
    if args.len() > 2 {
        let Value::Int(m) = &args[2] else {
            return err("third argument for split must be an integer");
        };
        n = *m;
    }
    let re = match go_regex(sep) {
        Ok(r) => r,
        Err(e) => return err(format!("split_match: {e}")),
    };
    // Go's Regexp.Split
    if n == 0 {
        return done(str_list(Vec::new()));
    }
    if sep.is_empty() && !s.is_empty() {
        // splits into characters
        let chars: Vec<String> = s.chars().map(|c| c.to_string()).collect();
        return done(str_list(chars));
    }
    let mut out = Vec::new();
    let mut beg = 0;
    let mut end;
    for m in re.find_iter(s) {
        if n > 0 && out.len() as i64 == n - 1 {
            break;
        }
        end = m.start();
        if m.end() == 0 {
            continue;
        }
        out.push(s[beg..end].to_string());
        beg = m.end();
    }
    out.push(s[beg..].to_string());
    done(str_list(out))
}

fn trim(args: &[Value]) -> FRes {
    if args.len() > 2 || args.is_empty() {
        return err("split takes one or two arguments");
    }
    let cutset: String = if args.len() == 2 {
        match &args[1] {
            Value::Str(s) => s.to_string(),
            _ => return err("second argument of split must be a string"),
        }
    } else {
        " \t".to_string()
    };
    let t = |s: &str| s.trim_matches(|c| cutset.contains(c)).to_string();
    match &args[0] {
        Value::Str(s) => done(Value::str(t(s))),
        Value::List(l) => {
            let mut out = Vec::new();
            for e in l.iter() {
                let Value::Str(s) = e.value() else {
                    return err("list elements must be strings to be trimmed");
                };
                out.push(Node::new(Value::str(t(s))));
            }
            done(Value::list(out))
        }
        _ => err("trim accepts only a string or list"),
    }
}

fn length(args: &[Value]) -> FRes {
    if args.len() != 1 {
        return err("length takes exactly 1 argument");
    }
    match &args[0] {
        Value::List(l) => done(Value::Int(l.len() as i64)),
        Value::Map(m) => done(Value::Int(m.len() as i64)),
        Value::Str(s) => done(Value::Int(s.len() as i64)),
        _ => err("invalid type for function length"),
    }
}

fn uniq(args: &[Value]) -> FRes {
    if args.len() != 1 {
        return err("uniq takes exactly 1 argument");
    }
    let Value::List(l) = &args[0] else {
        return err("invalid type for function uniq");
    };
    let mut out: Vec<Node> = Vec::new();
    for v in l.iter() {
        if let Err(e) = crate::budget::charge(out.len() as u64) {
            return err(e.to_string());
        }
        if !out.iter().any(|n| compare_equals(v.value(), n.value()).0) {
            out.push(v.clone());
        }
    }
    done(Value::list(out))
}

fn element(args: &[Value]) -> FRes {
    if args.len() != 2 {
        return err("element takes exactly two arguments");
    }
    if args[0].is_nil() || args[1].is_nil() {
        return err("function element does not take nil arguments");
    }
    match &args[0] {
        Value::List(l) => {
            let idx = match &args[1] {
                Value::Int(i) => *i,
                Value::Str(s) => match go_parse_int(s) {
                    Some(i) => i,
                    None => {
                        return err(format!(
                            "invalid value '{s}' of index argument for function element"
                        ));
                    }
                },
                _ => return err("invalid type of index argument for function element"),
            };
            if idx < 0 {
                return err("index lower than 0");
            }
            if idx >= l.len() as i64 {
                return err("index greater or equal list size");
            }
            done(l[idx as usize].value().clone())
        }
        Value::Map(m) => {
            let Value::Str(k) = &args[1] else {
                return err("map key must be of type string");
            };
            match m.get(&**k) {
                Some(n) => done(n.value().clone()),
                None => err(format!("map key '{k}' not found")),
            }
        }
        _ => err("invalid type for first argument of function element"),
    }
}

fn contains(args: &[Value]) -> FRes {
    if args.len() != 2 {
        return err("function contains takes exactly two arguments");
    }
    match &args[0] {
        Value::Map(m) => match &args[1] {
            Value::Str(k) => done(Value::Bool(m.contains_key(&**k))),
            _ => done(Value::Bool(false)),
        },
        Value::List(l) => {
            if args[1].is_nil() {
                return done(Value::Bool(false));
            }
            done(Value::Bool(
                l.iter().any(|v| compare_equals(v.value(), &args[1]).0),
            ))
        }
        Value::Str(s) => match simple_string(&args[1]) {
            Some(e) => done(Value::Bool(s.contains(&e))),
            None => err("invalid type for check string"),
        },
        _ => err("list or string expected for argument one of function contains"),
    }
}

fn index(args: &[Value], first: bool) -> FRes {
    if args.len() != 2 {
        return err("function index takes exactly two arguments");
    }
    match &args[0] {
        Value::List(l) => {
            if args[1].is_nil() {
                return done(Value::Int(-1));
            }
            let mut found = -1i64;
            for (i, v) in l.iter().enumerate() {
                if compare_equals(v.value(), &args[1]).0 {
                    found = i as i64;
                    if first {
                        break;
                    }
                }
            }
            done(Value::Int(found))
        }
        Value::Str(s) => match simple_string(&args[1]) {
            Some(e) => {
                let r = if first { s.find(&e) } else { s.rfind(&e) };
                done(Value::Int(r.map(|x| x as i64).unwrap_or(-1)))
            }
            None => err("invalid type for check string"),
        },
        _ => err("list or string expected for argument one of function index"),
    }
}

/// Go's `Regexp.Expand` template syntax (`$1`, `${name}`).
fn expand_template(re: &regex::Regex, templ: &str, caps: &regex::Captures<'_>) -> String {
    let mut out = String::new();
    let b = templ.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'$' {
            let c = templ[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        i += 1;
        if i < b.len() && b[i] == b'$' {
            out.push('$');
            i += 1;
            continue;
        }
        let (name, next) = if i < b.len() && b[i] == b'{' {
            match templ[i + 1..].find('}') {
                Some(e) => (&templ[i + 1..i + 1 + e], i + e + 2),
                None => {
                    out.push('$');
                    continue;
                }
            }
        } else {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            (&templ[i..j], j)
        };
        if name.is_empty() {
            out.push('$');
            continue;
        }
        i = next;
        if let Ok(n) = name.parse::<usize>() {
            if let Some(m) = caps.get(n) {
                out.push_str(m.as_str());
            }
        } else if re.capture_names().any(|x| x == Some(name))
            && let Some(m) = caps.name(name)
        {
            out.push_str(m.as_str());
        }
    }
    out
}

fn replace(args: &[Value], env: &Env, regexp: bool) -> FRes {
    let name = if regexp { "replace_match" } else { "replace" };
    if args.len() < 3 {
        return err(format!("{name} requires at least 3 arguments"));
    }
    if args.len() > 4 {
        return err(format!("{name} does not take more than 4 arguments"));
    }
    let Value::Str(s) = &args[0] else {
        return err(format!("first argument for {name} must be a string"));
    };
    let Value::Str(src) = &args[1] else {
        return err(format!("second argument for {name} must be a string"));
    };
    let mut cnt: i64 = -1;
    if args.len() > 3 {
        let Value::Int(n) = &args[3] else {
            return err(format!("fourth argument for {name} must be an integer"));
        };
        cnt = *n;
    }
    if !regexp && let Value::Str(t) = &args[2] {
        let r = if cnt < 0 {
            s.replace(&**src, t)
        } else {
            s.replacen(&**src, t, cnt as usize)
        };
        return done(Value::str(r));
    }
    let re = if regexp {
        match go_regex(src) {
            Ok(r) => Some(r),
            Err(e) => return err(format!("{name}: {e}")),
        }
    } else {
        None
    };
    let lambda = match &args[2] {
        Value::Lambda(l) => Some(l.clone()),
        Value::Str(_) => None,
        _ => {
            return err(format!(
                "{name}: replace substitution must be string or lambda"
            ));
        }
    };
    // processReplace
    let mut out = String::new();
    let mut rest: &str = s;
    let mut empty_match = true;
    while cnt != 0 {
        // locate
        let loc: Option<Vec<Option<(usize, usize)>>> = match &re {
            Some(re) => re.captures(rest).map(|c| {
                (0..c.len())
                    .map(|i| c.get(i).map(|m| (m.start(), m.end())))
                    .collect()
            }),
            None => rest.find(&**src).map(|i| vec![Some((i, i + src.len()))]),
        };
        let Some(loc) = loc else { break };
        let (ms, me) = loc[0].unwrap_or((0, 0));
        if cnt > 0 {
            cnt -= 1;
        }
        out.push_str(&rest[..ms]);
        if empty_match || me > 0 {
            match &lambda {
                Some(l) => {
                    let matches: Vec<Node> = loc
                        .iter()
                        .map(|m| {
                            Node::new(Value::str(match m {
                                Some((a, b)) => &rest[*a..*b],
                                None => "",
                            }))
                        })
                        .collect();
                    let (res, v, info, okk) = call_lambda(
                        l,
                        false,
                        false,
                        false,
                        &Map::new(),
                        vec![Value::list(matches)],
                        env,
                        false,
                    );
                    if !okk {
                        return err(format!("{name}: replace: {}", info.issue.msg));
                    }
                    if !res {
                        return (Value::Nil, Info::default(), true, false);
                    }
                    let Value::Str(v) = v else {
                        return err(format!("{name}: replace: lambda must return a string"));
                    };
                    out.push_str(&v);
                }
                None => {
                    let Value::Str(t) = &args[2] else {
                        unreachable!()
                    };
                    let re = re.as_ref().unwrap();
                    let caps = re.captures(rest).unwrap();
                    out.push_str(&expand_template(re, t, &caps));
                }
            }
        }
        rest = &rest[me..];
        empty_match = me == ms;
        if empty_match {
            match rest.chars().next() {
                Some(c) => {
                    out.push(c);
                    rest = &rest[c.len_utf8()..];
                }
                None => {
                    break;
                }
            }
        }
    }
    out.push_str(rest);
    done(Value::str(out))
}

fn match_(args: &[Value]) -> FRes {
    if args.len() < 2 || args.len() > 3 {
        return err("match takes two or three arguments");
    }
    let Value::Str(pattern) = &args[0] else {
        return err("pattern string for argument one of function match required");
    };
    if args[1].is_nil() {
        return done(Value::Bool(false));
    }
    let mut occ: i64 = 0;
    if args.len() == 3 {
        match &args[2] {
            Value::Int(v) => {
                occ = *v;
                if occ == 0 {
                    return err("repetition count may not be zero");
                }
            }
            Value::Bool(b) => occ = if *b { -1 } else { 1 },
            _ => return err("simple value for argument two of function match required"),
        }
    }
    let Some(elem) = simple_string(&args[1]) else {
        return err("simple value for argument two of function match required");
    };
    let re = match go_regex(pattern) {
        Ok(r) => r,
        Err(e) => return err(format!("match: {e}")),
    };
    let caps_list = |c: regex::Captures<'_>| {
        str_list(
            (0..c.len())
                .map(|i| c.get(i).map(|m| m.as_str().to_string()).unwrap_or_default())
                .collect(),
        )
    };
    if occ == 0 {
        match re.captures(&elem) {
            Some(c) => done(caps_list(c)),
            None => done(Value::list(Vec::new())),
        }
    } else {
        let mut out = Vec::new();
        for c in re.captures_iter(&elem) {
            if occ > 0 && out.len() as i64 >= occ {
                break;
            }
            out.push(Node::new(caps_list(c)));
        }
        done(Value::list(out))
    }
}

fn sort(args: Vec<Value>, env: &Env) -> FRes {
    if args.is_empty() || args.len() > 2 {
        return err("sort takes one or two arguments");
    }
    let Value::List(l) = &args[0] else {
        return err("argument for sort must be a list");
    };
    let mut list: Vec<Node> = (**l).clone();
    let mut failure: Option<FRes> = None;
    if args.len() == 2 {
        let Value::Lambda(lv) = &args[1] else {
            return err("second argument for sort must be a lambda function");
        };
        // stable insertion-based merge sort with a fallible comparator
        let mut less = |a: &Node, b: &Node| -> bool {
            if failure.is_some() {
                return false;
            }
            let (res, v, info, okk) = call_lambda(
                lv,
                false,
                false,
                false,
                &Map::new(),
                vec![a.value().clone(), b.value().clone()],
                env,
                false,
            );
            if !okk || !res {
                let (_, mut i, _) = Info::default().error("sort failed");
                if !info.issue.msg.is_empty() {
                    i.issue.nested.push(info.issue.clone());
                }
                failure = Some((Value::Nil, i, okk, res));
                return false;
            }
            match v {
                Value::Bool(b) => b,
                Value::Int(i) => i < 0,
                _ => {
                    failure = Some(err("sort failed: lambda must return a bool or integer"));
                    false
                }
            }
        };
        stable_sort(&mut list, &mut less);
    } else {
        let mut less = |a: &Node, b: &Node| -> bool {
            match (a.value(), b.value()) {
                (Value::Str(x), Value::Str(y)) => x.as_bytes() < y.as_bytes(),
                (Value::Int(x), Value::Int(y)) => x < y,
                _ => {
                    if failure.is_none() {
                        failure = Some(err(
                            "sort failed: list elements must either be strings or integers",
                        ));
                    }
                    false
                }
            }
        };
        stable_sort(&mut list, &mut less);
    }
    if let Some(f) = failure {
        return f;
    }
    done(Value::list(list))
}

/// stable merge sort (tolerates inconsistent comparators)
fn stable_sort(list: &mut Vec<Node>, less: &mut dyn FnMut(&Node, &Node) -> bool) {
    if list.len() < 2 {
        return;
    }
    let right = list.split_off(list.len() / 2);
    let mut left = std::mem::take(list);
    let mut right = right;
    stable_sort(&mut left, less);
    stable_sort(&mut right, less);
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut li = left.into_iter().peekable();
    let mut ri = right.into_iter().peekable();
    loop {
        match (li.peek(), ri.peek()) {
            (Some(l), Some(r)) => {
                if less(r, l) {
                    out.push(ri.next().unwrap());
                } else {
                    out.push(li.next().unwrap());
                }
            }
            (Some(_), None) => out.push(li.next().unwrap()),
            (None, Some(_)) => out.push(ri.next().unwrap()),
            (None, None) => break,
        }
    }
    *list = out;
}

fn eval_fn(args: &[Value], env: &Env, locally: bool) -> FRes {
    if args.len() != 1 {
        return err("one argument required for 'eval'");
    }
    let Value::Str(s) = &args[0] else {
        return err("string argument required for 'eval'");
    };
    match super::parser::parse(s, env.path(), env.stub_path()) {
        Ok(e) => from_res(super::eval::eval(&e, env, locally)),
        Err(e) => err(format!("({s})\t {e}")),
    }
}

fn normalize_path(p: &str) -> String {
    let p = p.trim_start_matches("./");
    p.trim_start_matches('/').to_string()
}

fn read(args: &[Value], env: &Env) -> FRes {
    if args.is_empty() || args.len() > 2 {
        return err("read takes a maximum of two arguments");
    }
    let Value::Str(file) = &args[0] else {
        return err("string value required for file path");
    };
    let mut t = if file.ends_with(".yml") || file.ends_with(".yaml") || file.ends_with(".json") {
        "yaml".to_string()
    } else {
        "text".to_string()
    };
    if args.len() > 1 {
        let Value::Str(s) = &args[1] else {
            return err("string value required for type");
        };
        t = s.to_string();
    }
    let files = &env.state().files;
    let Some(data) = files.get(&normalize_path(file)) else {
        return err(format!(
            "read: error reading [{file}]: open {file}: file does not exist"
        ));
    };
    from_res(parse_data(file, data, &t, env))
}

fn lookup(args: &[Value], env: &Env, dir: bool) -> FRes {
    if args.len() != 2 {
        return err("lookup requires exactly two arguments");
    }
    let Value::Str(name) = &args[0] else {
        return err("lookup: first argument must be a string");
    };
    let paths: Vec<String> = match &args[1] {
        Value::Str(s) => vec![s.to_string()],
        Value::List(l) => l
            .iter()
            .filter_map(|n| n.value().as_str().map(|s| s.to_string()))
            .collect(),
        _ => return err("lookup: second argument must be a string or list"),
    };
    let files = &env.state().files;
    let mut out = Vec::new();
    for p in paths {
        let full = if p.is_empty() {
            name.to_string()
        } else {
            format!("{}/{}", p.trim_end_matches('/'), name)
        };
        let n = normalize_path(&full);
        let exists = if dir {
            files.keys().any(|k| k.starts_with(&format!("{n}/")))
        } else {
            files.contains_key(&n)
        };
        if exists {
            out.push(full);
        }
    }
    done(str_list(out))
}

fn list_files(args: &[Value], env: &Env, dirs: bool) -> FRes {
    if args.len() != 1 {
        return err("list requires exactly one arguments");
    }
    let Value::Str(name) = &args[0] else {
        return err("list: argument must be a string");
    };
    if name.is_empty() {
        return err("list: argument is empty string");
    }
    let dir = normalize_path(name);
    let prefix = if dir.is_empty() || dir == "." {
        String::new()
    } else {
        format!("{}/", dir.trim_end_matches('/'))
    };
    let files = &env.state().files;
    let mut out = std::collections::BTreeSet::new();
    let mut exists = prefix.is_empty();
    for k in files.keys() {
        if let Some(rest) = k.strip_prefix(&prefix) {
            exists = true;
            match rest.split_once('/') {
                Some((d, _)) if dirs => {
                    out.insert(d.to_string());
                }
                None if !dirs => {
                    out.insert(rest.to_string());
                }
                _ => {}
            }
        }
    }
    if !exists {
        return err(format!("list: {name:?} is no directory or does not exist"));
    }
    done(str_list(out.into_iter().collect()))
}

/// `ParseData`
pub(crate) fn parse_data(file: &str, data: &[u8], mode: &str, env: &Env) -> super::eval::Res {
    let info = Info::default();
    let mut env2 = env.clone();
    let mut mode = mode;
    if let Some(m) = mode.strip_prefix('.') {
        env2 = env.with_new_root();
        mode = m;
    }
    let text = String::from_utf8_lossy(data);
    match mode {
        "template" => match super::yaml::parse_yaml(&text) {
            Ok(n) => (as_template(&n, env), info, true),
            Err(e) => info.error(format!("error parsing file [{file}]: {e}")),
        },
        "templates" => match super::yaml::parse_raw_multi(&text) {
            Ok(docs) => {
                let mut out = Vec::new();
                for d in docs {
                    match super::yaml::raw_to_node(d) {
                        Ok(n) => out.push(Node::new(as_template(&n, env))),
                        Err(e) => return info.error(format!("error parsing file [{file}]: {e}")),
                    }
                }
                (Value::list(out), info, true)
            }
            Err(e) => info.error(format!("error parsing file [{file}]: {e}")),
        },
        "yaml" => match super::yaml::parse_yaml(&text) {
            Ok(n) => {
                let (r, st) = super::flow::env_flow(&env2, &n, false);
                if let Some(st) = st {
                    let (issue, local, failed) =
                        st.issue(&format!("resolution of yaml file '{file}' failed"));
                    let mut i = info;
                    i.issue = issue;
                    i.local_error = local;
                    i.failed = failed;
                    return (Value::Nil, i, false);
                }
                (r.value().clone(), info, true)
            }
            Err(e) => info.error(format!("error parsing file [{file}]: {e}")),
        },
        "multiyaml" => match super::yaml::parse_raw_multi(&text) {
            Ok(docs) => {
                let mut nodes = Vec::new();
                for d in docs {
                    match super::yaml::raw_to_node(d) {
                        Ok(n) => nodes.push(n),
                        Err(e) => return info.error(format!("error parsing file [{file}]: {e}")),
                    }
                }
                while nodes.len() > 1 && nodes.last().is_some_and(|n| n.value().is_nil()) {
                    nodes.pop();
                }
                let (r, st) = super::flow::env_flow(&env2, &Node::new(Value::list(nodes)), false);
                if let Some(st) = st {
                    let (issue, local, failed) =
                        st.issue(&format!("resolution of yaml file '{file}' failed"));
                    let mut i = info;
                    i.issue = issue;
                    i.local_error = local;
                    i.failed = failed;
                    return (Value::Nil, i, false);
                }
                (r.value().clone(), info, true)
            }
            Err(e) => info.error(format!("error parsing file [{file}]: {e}")),
        },
        "import" => match super::yaml::parse_yaml(&text) {
            Ok(n) => {
                let mut i = info;
                i.raw = true;
                (n.value().clone(), i, true)
            }
            Err(e) => info.error(format!("error parsing file [{file}]: {e}")),
        },
        "importmulti" => match super::yaml::parse_raw_multi(&text) {
            Ok(docs) => {
                let mut nodes = Vec::new();
                for d in docs {
                    match super::yaml::raw_to_node(d) {
                        Ok(n) => nodes.push(n),
                        Err(e) => return info.error(format!("error parsing file [{file}]: {e}")),
                    }
                }
                while nodes.len() > 1 && nodes.last().is_some_and(|n| n.value().is_nil()) {
                    nodes.pop();
                }
                let mut i = info;
                i.raw = true;
                (Value::list(nodes), i, true)
            }
            Err(e) => info.error(format!("error parsing file [{file}]: {e}")),
        },
        "text" => (Value::str(text.into_owned()), info, true),
        "binary" => (Value::str(base64_encode(data, 60)), info, true),
        _ => info.error(format!("invalid file type [{file}] {mode}")),
    }
}

/// `asTemplate` of `read`/`parse`: turns a document into a template value.
fn as_template(n: &Node, env: &Env) -> Value {
    let orig = super::flow::node_copy(n);
    let tmark = || Node::new(Value::str("(( &template ))"));
    let orig = match orig.value() {
        Value::Map(m) => {
            let mut m = (**m).clone();
            if !m.contains_key(super::value::MERGEKEY) {
                m.insert(super::value::MERGEKEY.into(), tmark());
            } else if !m.contains_key("<<") {
                m.insert("<<".into(), tmark());
            }
            Node::new(Value::map(m))
        }
        Value::List(l) => {
            let mut found = false;
            for e in l.iter() {
                if let Value::Map(m) = e.value() {
                    let x = m.get(super::value::MERGEKEY).or_else(|| m.get("<<"));
                    if let Some(x) = x
                        && let Value::Str(s) = x.value()
                        && let Some(sub) = super::value::embedded_dynaml(s)
                        && is_template_marker(sub)
                    {
                        found = true;
                        break;
                    }
                }
            }
            if !found {
                let mut m = Map::new();
                m.insert(super::value::MERGEKEY.into(), tmark());
                let mut v = vec![Node::new(Value::map(m))];
                v.extend(l.iter().cloned());
                Node::new(Value::list(v))
            } else {
                orig
            }
        }
        _ => orig,
    };
    super::eval::new_template_value(env.path(), n.clone(), orig, env)
}

fn is_template_marker(s: &str) -> bool {
    // .*\s+&template(\(?|\s+).*
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(p) = s[i..].find("&template") {
        let at = i + p;
        if at > 0 && b[at - 1].is_ascii_whitespace() {
            let after = &s[at + "&template".len()..];
            if after.starts_with('(') || after.starts_with(|c: char| c.is_whitespace()) {
                return true;
            }
        }
        i = at + 1;
    }
    false
}

fn parse_fn(args: &[Value], env: &Env) -> FRes {
    if args.is_empty() || args.len() > 2 {
        return err("parse takes one or two arguments");
    }
    let Value::Str(s) = &args[0] else {
        return err("first argument for parse must be a string");
    };
    let mut mode = "import".to_string();
    if args.len() > 1 {
        let Value::Str(m) = &args[1] else {
            return err("second argument for parse must be a string");
        };
        mode = m.to_string();
    }
    let name = env.path().join(".");
    from_res(parse_data(&name, s.as_bytes(), &mode, env))
}

fn format_arg(v: &Value) -> Arg {
    match v {
        Value::Nil => Arg::Nil,
        Value::Bool(b) => Arg::Bool(*b),
        Value::Int(i) => Arg::Int(*i),
        Value::Float(f) => Arg::Float(*f),
        Value::Str(s) => Arg::Str(s.to_string()),
        Value::List(_) | Value::Map(_) => Arg::Str(emit_yaml(v)),
        Value::Template(t) => Arg::Str(emit_yaml(t.orig.value())),
        Value::Lambda(l) => Arg::Str(lambda_value_string(l)),
        Value::Expr(e) => Arg::Str(e.to_string()),
    }
}

pub(crate) fn format(name: &str, args: &[Value]) -> Result<String, String> {
    if args.is_empty() {
        return Err(format!("alt least one argument required for '{name}'"));
    }
    let Value::Str(f) = &args[0] else {
        return Err(format!("{name}: format must be string"));
    };
    let a: Vec<Arg> = args[1..].iter().map(format_arg).collect();
    Ok(sprintf(f, &a))
}

fn ip_fn(name: &str, args: &[Value]) -> FRes {
    use super::arith::parse_cidr;
    if args.len() != 1 {
        let (v, mut i, o) = (Value::Nil, Info::default(), false);
        i.issue = super::value::Issue::new("only one argument expected for CIDR function");
        return (v, i, o, true);
    }
    let cidr = match &args[0] {
        Value::Str(s) => parse_cidr(s),
        _ => None,
    };
    let Some((ip, ones)) = cidr else {
        let i = Info {
            issue: super::value::Issue::new("CIDR argument required"),
            ..Default::default()
        };
        return (Value::Nil, i, false, true);
    };
    match name {
        "min_ip" => done(Value::str(ip.mask(ones).to_string())),
        "max_ip" => done(Value::str(ip.max_in(ones).to_string())),
        _ => done(Value::Int(1i64 << (32u32.saturating_sub(ones)).min(62))),
    }
}

fn contains_ip(args: &[Value]) -> FRes {
    use super::arith::{parse_cidr, parse_ip};
    if args.len() != 2 {
        return err("contains_ip requires CIDR and IP argument");
    }
    let Value::Str(c) = &args[0] else {
        return err("CIDR required as first argument");
    };
    let Some((cip, ones)) = parse_cidr(c) else {
        return err(format!("CIDR argument required: invalid CIDR address: {c}"));
    };
    let Value::Str(s) = &args[1] else {
        return err("IP required as second argument");
    };
    let Some(ip) = parse_ip(s) else {
        return err(format!("IP argument required: {s}"));
    };
    done(Value::Bool(
        ip.v4 == cip.v4 && ip.mask(ones) == cip.mask(ones),
    ))
}

fn key_string(v: &Value) -> Option<String> {
    match v {
        Value::Str(s) => Some(s.to_string()),
        Value::Int(i) => Some(i.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn makemap(args: &[Value]) -> FRes {
    let mut result = Map::new();
    if args.len() == 1 {
        let Value::List(l) = &args[0] else {
            return err("single argument flavor of mapentry requires a list");
        };
        for (i, e) in l.iter().enumerate() {
            let Value::Map(m) = e.value() else {
                return err(format!("entry {i} is no map entry"));
            };
            let Some(k) = m.get("key") else {
                return err(format!("entry {i} has no entry 'key'"));
            };
            let Some(key) = key_string(k.value()) else {
                return err(format!("invalid type for 'key' value of entry {i}"));
            };
            let Some(v) = m.get("value") else {
                return err(format!("entry {i} has no entry 'value'"));
            };
            result.insert(key, v.clone());
        }
    } else if args.len().is_multiple_of(2) {
        for i in (0..args.len()).step_by(2) {
            let Some(key) = key_string(&args[i]) else {
                return err(format!(
                    "invalid type for key value of arument pair {}",
                    i / 2
                ));
            };
            result.insert(key, Node::new(args[i + 1].clone()));
        }
    } else {
        return err("mapentry takes one or two arguments");
    }
    done(Value::map(result))
}

pub(crate) fn list_to_map(args: &[Value], key_name: Option<&str>) -> FRes {
    let mut key = match key_name {
        Some(k) if !k.is_empty() => k.to_string(),
        _ => "name".to_string(),
    };
    if args.is_empty() || args.len() > 2 {
        return err("list_to_map takes 1 or 2 arguments");
    }
    let Value::List(l) = &args[0] else {
        return err("list_to_map requires a list as first argument");
    };
    if args.len() == 2 {
        let Value::Str(k) = &args[1] else {
            return err("second argument of list_to_map must be a key name");
        };
        key = k.to_string();
    }
    let mut out = Map::new();
    for val in l.iter() {
        let Value::Map(m) = val.value() else {
            return err("list entries must by maps");
        };
        let Some(kv) = m.get(&key) else {
            return err(format!("key field '{key}' not found"));
        };
        let Value::Str(k) = kv.value() else {
            return err(format!("key field '{key}' contains no string value"));
        };
        let nm: Map = m
            .iter()
            .filter(|(kk, _)| **kk != key)
            .map(|(kk, v)| (kk.clone(), v.clone()))
            .collect();
        out.insert(k.to_string(), val.replace_value(Value::map(nm)));
    }
    done(Value::map(out))
}

fn get_map(n: usize, v: &Value) -> Result<Rc<Map>, String> {
    match v {
        Value::Template(t) => match super::flow::node_copy(&t.prepared).value() {
            Value::Map(m) => Ok(m.clone()),
            _ => Err(format!("{}: template is not a map template", n + 1)),
        },
        Value::Map(m) => Ok(m.clone()),
        other => Err(format!(
            "{}: no map or map template, but {}",
            n + 1,
            other.type_name()
        )),
    }
}

fn merge(args: &[Value], env: &Env) -> FRes {
    if args.is_empty() {
        return err("at least one argument required for merge function");
    }
    let mut maps: Vec<Rc<Map>> = Vec::new();
    if args.len() == 1
        && let Value::List(l) = &args[0]
    {
        for (i, e) in l.iter().enumerate() {
            match get_map(i, e.value()) {
                Ok(m) => maps.push(m),
                Err(e) => return err(format!("merge: entry of list argument: {e}")),
            }
        }
        if maps.is_empty() {
            return err("merge: no map found for merge");
        }
    }
    if maps.is_empty() {
        for (i, a) in args.iter().enumerate() {
            match get_map(i, a) {
                Ok(m) => maps.push(m),
                Err(e) => return err(format!("merge: argument {e}")),
            }
        }
    }
    let nodes: Vec<Node> = maps.into_iter().map(|m| Node::new(Value::Map(m))).collect();
    let template = nodes[0].clone();
    let stubs = nodes[1..].to_vec();
    match super::flow::cascade(env, &template, stubs, false) {
        Ok(r) => done(r.value().clone()),
        Err(st) => err(format!("merging failed: {}", st.message())),
    }
}

pub(crate) fn base64_encode(data: &[u8], max: i64) -> String {
    let s = base64::engine::general_purpose::STANDARD.encode(data);
    if max > 0 {
        let max = max as usize;
        let mut result = String::new();
        let mut rest = s.as_str();
        while rest.len() > max {
            result.push_str(&rest[..max]);
            result.push('\n');
            rest = &rest[max..];
        }
        result.push_str(rest);
        if result.ends_with('\n') {
            result.pop();
        }
        result
    } else {
        s
    }
}

fn base64_enc(args: &[Value]) -> FRes {
    if args.is_empty() || args.len() > 2 {
        return err("base64 takes one or two argumenta");
    }
    let Value::Str(s) = &args[0] else {
        return err("first argument for base64 must be a string");
    };
    let mut max = -1i64;
    if args.len() > 1 {
        max = match &args[1] {
            Value::Int(i) => *i,
            Value::Str(x) => match go_parse_int(x) {
                Some(i) => i,
                None => {
                    return err("second argument for base64 must be an integer or interger string");
                }
            },
            _ => return err("second argument for base64 must be an integer or interger string"),
        };
    }
    done(Value::str(base64_encode(s.as_bytes(), max)))
}

fn base64_dec(args: &[Value]) -> FRes {
    if args.len() != 1 {
        return err("base64_decode takes exactly one argument");
    }
    let Value::Str(s) = &args[0] else {
        return err("first argument for base64_decode must be a string");
    };
    // Go's StdEncoding ignores \r and \n
    let clean: String = s.chars().filter(|c| *c != '\n' && *c != '\r').collect();
    match base64::engine::general_purpose::STANDARD.decode(clean.as_bytes()) {
        Ok(d) => done(Value::str(String::from_utf8_lossy(&d).into_owned())),
        Err(_) => err("cannot decode string"),
    }
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

fn md5_fn(args: &[Value]) -> FRes {
    if args.len() != 1 {
        return err("md5 takes exactly one argument");
    }
    let Value::Str(s) = &args[0] else {
        return err("first argument for md5 must be a string");
    };
    done(Value::str(hex(&super::md5::md5(s.as_bytes()))))
}

fn hash(args: &[Value]) -> FRes {
    use sha2::Digest;
    if args.is_empty() || args.len() > 2 {
        return err("hash takes one or two arguments");
    }
    let mut mode = "sha256".to_string();
    if args.len() == 2 {
        let Value::Str(m) = &args[1] else {
            return err("second argument for hash must be a string");
        };
        mode = m.to_string();
    }
    let Value::Str(s) = &args[0] else {
        return err("first argument for hash must be a string");
    };
    let d = s.as_bytes();
    let r: Vec<u8> = match mode.as_str() {
        "md5" => super::md5::md5(d).to_vec(),
        // spiff calls `md4.New().Sum(data)`: the data followed by the MD4 digest of nothing
        "md4" => {
            let mut v = d.to_vec();
            v.extend_from_slice(&[
                0x31, 0xd6, 0xcf, 0xe0, 0xd1, 0x6a, 0xe9, 0x31, 0xb7, 0x3c, 0x59, 0xd7, 0xe0, 0xc0,
                0x89, 0xc0,
            ]);
            v
        }
        "sha1" => sha1::Sha1::digest(d).to_vec(),
        "sha224" => sha2::Sha224::digest(d).to_vec(),
        "sha256" => sha2::Sha256::digest(d).to_vec(),
        "sha384" => sha2::Sha384::digest(d).to_vec(),
        "sha512" => sha2::Sha512::digest(d).to_vec(),
        "sha512/224" => sha2::Sha512_224::digest(d).to_vec(),
        "sha512/256" => sha2::Sha512_256::digest(d).to_vec(),
        _ => return err(format!("invalid hash type '{mode}'")),
    };
    done(Value::str(hex(&r)))
}

fn substr(args: &[Value]) -> FRes {
    if args.len() > 3 || args.len() < 2 {
        return err("substr takes two to three arguments");
    }
    let Value::Str(s) = &args[0] else {
        return err("first argument for substr must be a string");
    };
    let Value::Int(mut start) = args[1] else {
        return err("second argument for substr must be an integer");
    };
    let len = s.len() as i64;
    if start < 0 {
        start += len;
    }
    let mut end = len;
    if args.len() >= 3 {
        let Value::Int(e) = args[2] else {
            return err("third argument for substr must be an integer");
        };
        end = e;
        if end < 0 {
            end += len;
        }
    }
    if len < end {
        return err(format!(
            "substr effective end index ({end}) exceeds string length ({len})"
        ));
    }
    if start < 0 {
        return err(format!("negative substr effective start index ({start})"));
    }
    if start > end {
        return err(format!(
            "substr start index ({start}) aftsre end index ({end}) "
        ));
    }
    let b = &s.as_bytes()[start as usize..end as usize];
    done(Value::str(String::from_utf8_lossy(b).into_owned()))
}

/// Go's `path.Clean`
pub(crate) fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if !out.is_empty() && *out.last().unwrap() != ".." {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            x => out.push(x),
        }
    }
    let s = out.join("/");
    if rooted {
        format!("/{s}")
    } else if s.is_empty() {
        ".".into()
    } else {
        s
    }
}

fn path_base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/".into();
    }
    match t.rfind('/') {
        Some(i) => t[i + 1..].to_string(),
        None => t.to_string(),
    }
}

fn path_dir(p: &str) -> String {
    let dir = match p.rfind('/') {
        Some(i) => &p[..=i],
        None => "",
    };
    path_clean(dir)
}

/// The path of a URL as Go's `url.Parse` yields it (None when it is no valid URL).
fn url_path(s: &str) -> Option<String> {
    super::funcs_ext::url_parse(s).map(|u| u.path)
}

fn path_fn(name: &str, args: &[Value]) -> FRes {
    if args.len() != 1 {
        return err(format!("function {name} takes exactly one argument"));
    }
    let Value::Str(s) = &args[0] else {
        return err(format!("string argument expected for function {name}"));
    };
    let p = match url_path(s) {
        Some(p) => {
            if p.is_empty() {
                return done(Value::str("/"));
            }
            p
        }
        None => s.to_string(),
    };
    done(Value::str(if name == "basename" {
        path_base(&p)
    } else {
        path_dir(&p)
    }))
}

fn compact(args: &[Value]) -> FRes {
    if args.len() != 1 {
        return err("compact takes exactly 1 argument");
    }
    let Value::List(l) = &args[0] else {
        return err("invalid type for function compact");
    };
    let out: Vec<Node> = l
        .iter()
        .filter(|v| match v.value() {
            Value::Nil => false,
            Value::Str(s) => !s.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::List(l) => !l.is_empty(),
            _ => true,
        })
        .cloned()
        .collect();
    done(Value::list(out))
}

fn intersect(args: &[Value]) -> FRes {
    let mut result: Option<Vec<Node>> = None;
    for (i, a) in args.iter().enumerate() {
        match a {
            Value::List(l) => {
                result = Some(match result {
                    None => (**l).clone(),
                    Some(r) => r
                        .into_iter()
                        .filter(|e| l.iter().any(|n| compare_equals(e.value(), n.value()).0))
                        .collect(),
                });
            }
            Value::Nil => {}
            other => {
                return err(format!(
                    "intersect: argument {i}: type '{}'(%!s(MISSING)) cannot be intersected",
                    other.type_name()
                ));
            }
        }
    }
    done(Value::list(result.unwrap_or_default()))
}

fn to_string(args: &[Value]) -> FRes {
    if args.len() != 1 {
        if matches!(args.first(), Some(Value::Int(_))) {
            if args.len() != 2 {
                return err("string for integers requires one or two arguments");
            }
        } else {
            return err("string requires one argument");
        }
    }
    match &args[0] {
        Value::Str(s) => done(Value::Str(s.clone())),
        Value::Int(i) => {
            let mut base = 10;
            if args.len() == 2 {
                let Value::Int(b) = args[1] else {
                    return err("base argument for string requires integer value");
                };
                if !(2..=36).contains(&b) {
                    return err("base argument for string requires integer value >=2 and <=36 ");
                }
                base = b as u32;
            }
            done(Value::str(format_radix(*i, base)))
        }
        Value::Float(f) => done(Value::str(format_float(*f, b'g', -1))),
        Value::Bool(b) => done(Value::str(b.to_string())),
        other => err(format!("cannot convert {} to string", go_type_name(other))),
    }
}

fn format_radix(i: i64, base: u32) -> String {
    let neg = i < 0;
    let mut u = i.unsigned_abs();
    if u == 0 {
        return "0".into();
    }
    let mut d = Vec::new();
    while u > 0 {
        d.push(std::char::from_digit((u % base as u64) as u32, base).unwrap());
        u /= base as u64;
    }
    if neg {
        d.push('-');
    }
    d.iter().rev().collect()
}

fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "<nil>",
        Value::List(_) => "[]yaml.Node",
        Value::Map(_) => "map[string]yaml.Node",
        Value::Lambda(_) => "dynaml.LambdaValue",
        Value::Template(_) => "dynaml.TemplateValue",
        _ => "unknown",
    }
}

fn to_integer(args: &[Value]) -> FRes {
    if args.len() != 1 {
        return err("integer requires one argument");
    }
    match &args[0] {
        Value::Str(s) => match go_parse_int(s) {
            Some(i) => done(Value::Int(i)),
            None => err(format!(
                "strconv.ParseInt: parsing {}: invalid syntax is no integer value: %!s(MISSING)",
                super::expr::go_quote(s)
            )),
        },
        Value::Int(i) => done(Value::Int(*i)),
        Value::Float(f) => done(Value::Int(*f as i64)),
        Value::Bool(b) => done(Value::Int(*b as i64)),
        other => err(format!("cannot convert {} to integer", go_type_name(other))),
    }
}

fn to_float(args: &[Value]) -> FRes {
    if args.len() != 1 {
        return err("float requires one argument");
    }
    match &args[0] {
        Value::Str(s) => match s.parse::<f64>() {
            Ok(f) => done(Value::Float(f)),
            Err(_) => err(format!("{:?} is no float value", s)),
        },
        Value::Int(i) => done(Value::Float(*i as f64)),
        Value::Float(f) => done(Value::Float(*f)),
        Value::Bool(b) => done(Value::Float(if *b { 1.0 } else { 0.0 })),
        other => err(format!("cannot convert {} to float", go_type_name(other))),
    }
}

fn to_bool_fn(args: &[Value]) -> FRes {
    if args.len() != 1 {
        return err("bool requires one argument");
    }
    match &args[0] {
        Value::Nil => done(Value::Bool(false)),
        Value::Str(s) => {
            if s.is_empty() {
                return done(Value::Bool(false));
            }
            match go_parse_bool(s) {
                Some(b) => done(Value::Bool(b)),
                None => err(format!("{s:?} is no bool value")),
            }
        }
        Value::Int(i) => done(Value::Bool(*i != 0)),
        Value::Float(f) => done(Value::Bool(*f != 0.0)),
        Value::Bool(b) => done(Value::Bool(*b)),
        other => err(format!("cannot convert {} to bool", go_type_name(other))),
    }
}

fn float_fn(name: &str, args: &[Value]) -> FRes {
    if args.len() != 1 {
        return err(format!("{name} requires one argument"));
    }
    let f: fn(f64) -> f64 = match name {
        "floor" => f64::floor,
        "ceil" => f64::ceil,
        "round" => f64::round,
        "roundtoeven" => f64::round_ties_even,
        "abs" => f64::abs,
        "sin" => f64::sin,
        "cos" => f64::cos,
        "sinh" => f64::sinh,
        "cosh" => f64::cosh,
        "asin" => f64::asin,
        "acos" => f64::acos,
        "asinh" => f64::asinh,
        "acosh" => f64::acosh,
        "sqrt" => f64::sqrt,
        "exp" => f64::exp,
        "log" => f64::ln,
        _ => f64::log10,
    };
    if matches!(name, "ceil" | "floor" | "round" | "roundtoeven") {
        return match &args[0] {
            Value::Int(i) => done(Value::Int(*i)),
            Value::Float(x) => done(Value::Int(f(*x) as i64)),
            Value::Bool(b) => done(Value::Int(*b as i64)),
            other => err(format!(
                "invalid argument type for {name}: {}",
                go_type_name(other)
            )),
        };
    }
    if name == "abs"
        && let Value::Int(i) = &args[0]
    {
        return done(Value::Int(i.wrapping_abs()));
    }
    let r = match &args[0] {
        Value::Int(i) => f(*i as f64),
        Value::Float(x) => f(*x),
        other => {
            return err(format!(
                "invalid argument type for {name}: {}",
                go_type_name(other)
            ));
        }
    };
    if r.is_nan() {
        return err(format!("{name}: NaN"));
    }
    done(Value::Float(r))
}

#[allow(dead_code)]
fn unused(_: &Expr) {}
