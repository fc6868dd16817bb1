//! `validate` and `check`: value validation with spiff's validator expressions.

use super::env::Env;
use super::eval::{Info, call_lambda, compare_equals};
use super::expr::lambda_value_string;
use super::functions::FRes;
use super::value::{Map, Node, Value, to_bool};
use crate::gofmt::format_float;

/// (valid, message, condition error, resolved)
type VRes = (bool, String, Option<String>, bool);

fn verr(msg: impl Into<String>) -> VRes {
    (false, String::new(), Some(msg.into()), true)
}

fn vres(r: bool, msg: impl Into<String>) -> VRes {
    (r, msg.into(), None, true)
}

fn simple(r: bool, t: impl Into<String>, f: impl Into<String>) -> VRes {
    if r { vres(true, t) } else { vres(false, f) }
}

/// Go's `%v` of a scalar
fn go_v(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format_float(*f, b'g', -1),
        Value::Bool(b) => b.to_string(),
        Value::Nil => "<nil>".into(),
        other => super::expr::value_as_string(other, true),
    }
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Nil => "<nil>",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int64",
        Value::Float(_) => "float64",
        Value::Str(_) => "string",
        Value::List(_) => "[]yaml.Node",
        Value::Map(_) => "map[string]yaml.Node",
        Value::Lambda(_) => "dynaml.LambdaValue",
        Value::Template(_) => "dynaml.TemplateValue",
        Value::Expr(_) => "dynaml.Expression",
    }
}

fn go_list(v: &[String]) -> String {
    format!("[{}]", v.join(" "))
}

fn string_value(msg: &str, v: &Value) -> Result<String, String> {
    match v {
        Value::Str(s) => Ok(s.to_string()),
        other => Err(format!(
            "{msg} requires string, but got {}",
            other.type_name()
        )),
    }
}

pub(crate) fn validate_fn(name: &str, args: &[Value], env: &Env) -> FRes {
    let check = name == "check";
    if args.len() < 2 {
        let (v, i, o) =
            Info::default().error(format!("at least two arguments required for {name}"));
        return (v, i, o, true);
    }
    let value = &args[0];
    for (i, c) in args[1..].iter().enumerate() {
        let (r, m, e, ok) = eval_validation(value, &Node::new(c.clone()), env);
        if let Some(e) = e {
            let (v, inf, o) =
                Info::default().error(format!("condition {} has problem: {e}", i + 1));
            return (v, inf, o, true);
        }
        if !ok {
            return (Value::Nil, Info::default(), true, false);
        }
        if !r {
            if check {
                return (Value::Bool(false), Info::default(), true, true);
            }
            let (v, inf, o) = Info::default().error(format!("condition {} failed: {m}", i + 1));
            return (v, inf, o, true);
        }
    }
    if check {
        (Value::Bool(true), Info::default(), true, true)
    } else {
        (value.clone(), Info::default(), true, true)
    }
}

/// `EvalValidationExpression`
pub(crate) fn eval_validation(value: &Value, cond: &Node, env: &Env) -> VRes {
    match cond.value() {
        Value::Nil => vres(true, "no condition"),
        Value::Str(_) | Value::Lambda(_) => validate_(value, cond.value(), env, &[]),
        Value::List(l) => {
            if l.is_empty() {
                return verr("validation type missing");
            }
            validate_(value, l[0].value(), env, &l[1..])
        }
        other => verr(format!(
            "invalid validation check type: {}",
            other.type_name()
        )),
    }
}

fn validate_(value: &Value, cond: &Value, env: &Env, args: &[Node]) -> VRes {
    match cond {
        Value::Lambda(l) => {
            if l.params.len() != args.len() + 1 {
                return verr(format!(
                    "argument count mismatch for lambda {}: expected {}, found {}",
                    lambda_value_string(l),
                    l.params.len(),
                    args.len() + 1
                ));
            }
            let mut vargs = vec![value.clone()];
            vargs.extend(args.iter().map(|a| a.value().clone()));
            let (valid, r, info, ok) =
                call_lambda(l, false, false, false, &Map::new(), vargs, env, false);
            if !valid {
                let e = if !ok {
                    Some(info.issue.msg.clone())
                } else {
                    None
                };
                return (false, String::new(), e, false);
            }
            let mut r = r;
            if let Value::List(list) = &r {
                match list.len() {
                    1 => r = list[0].value().clone(),
                    2 => {
                        return match string_value("lambda validator", list[1].value()) {
                            Ok(t) => vres(to_bool(list[0].value()), t),
                            Err(e) => verr(format!("lambda validator result index 2: {e}")),
                        };
                    }
                    3 => {
                        let t = match string_value("lambda validator", list[1].value()) {
                            Ok(t) => t,
                            Err(e) => return verr(format!("lambda validator result index 2: {e}")),
                        };
                        let f = match string_value("lambda validator", list[2].value()) {
                            Ok(t) => t,
                            Err(e) => return verr(format!("lambda validator result index 3: {e}")),
                        };
                        return simple(to_bool(list[0].value()), t, f);
                    }
                    n => {
                        return verr(format!(
                            "invalid result length of validator {}, got {n}",
                            lambda_value_string(l)
                        ));
                    }
                }
            }
            let ls = lambda_value_string(l);
            simple(
                to_bool(&r),
                format!("{ls} succeeded"),
                format!("{ls} failed"),
            )
        }
        Value::Str(s) => {
            let mut v: &str = s;
            let mut not = false;
            if let Some(x) = v.strip_prefix('!') {
                not = true;
                v = x;
            } else if v.is_empty() {
                return verr("empty validator type");
            }
            if v == "not" {
                not = !not;
            }
            let (r, m, e, resolved) = handle_string_type(value, v, env, args);
            if !resolved || e.is_some() {
                return (false, String::new(), e, resolved);
            }
            (if not { !r } else { r }, m, e, resolved)
        }
        other => verr(format!(
            "unexpected validation type {:?}",
            other.type_name()
        )),
    }
}

fn compare_num(op: &str, value: &Value, s: &Value) -> Result<bool, VRes> {
    let ord = |a: f64, b: f64| match op {
        "gt" | ">" => a > b,
        "lt" | "<" => a < b,
        "ge" | ">=" => a >= b,
        _ => a <= b,
    };
    match s {
        Value::Str(cv) => match value {
            Value::Str(x) => {
                let c = x.as_bytes().cmp(cv.as_bytes());
                Ok(match op {
                    "gt" | ">" => c.is_gt(),
                    "lt" | "<" => c.is_lt(),
                    "ge" | ">=" => c.is_ge(),
                    _ => c.is_le(),
                })
            }
            _ => Err(verr("must be string to compare to string")),
        },
        Value::Int(cv) => match value {
            Value::Int(x) => Ok(match op {
                "gt" | ">" => x > cv,
                "lt" | "<" => x < cv,
                "ge" | ">=" => x >= cv,
                _ => x <= cv,
            }),
            Value::Float(x) => Ok(ord(*x, *cv as f64)),
            _ => Err(verr("must be number to compare to number")),
        },
        Value::Float(cv) => match value {
            Value::Int(x) => Ok(ord(*x as f64, *cv)),
            Value::Float(x) => Ok(ord(*x, *cv)),
            _ => Err(verr("must be number to compare to number")),
        },
        other => Err(verr(format!("invalid type {}", go_type(other)))),
    }
}

fn handle_string_type(value: &Value, op: &str, env: &Env, args: &[Node]) -> VRes {
    let mut reason = String::from("(");
    let mut optional = false;
    match op {
        "list" => {
            let Value::List(l) = value else {
                return vres(false, "is no list");
            };
            if args.is_empty() {
                return vres(true, "is a list");
            }
            for (i, e) in l.iter().enumerate() {
                for (j, c) in args.iter().enumerate() {
                    let (r, m, err, valid) = eval_validation(e.value(), c, env);
                    if let Some(err) = err {
                        return verr(format!("list entry {i} condition {j}: {err}"));
                    }
                    if !valid {
                        return (false, String::new(), None, false);
                    }
                    if !r {
                        return vres(false, format!("entry {i} condition {j} {m}"));
                    }
                }
            }
            vres(true, "all entries match all conditions")
        }
        "map" => {
            let Value::Map(l) = value else {
                return vres(false, "is no map");
            };
            if args.is_empty() {
                return vres(true, "is a map");
            }
            if args.len() > 2 {
                return verr(format!(
                    "map validator takes a maximum of two arguments, got {}",
                    args.len()
                ));
            }
            let ck = if args.len() == 2 {
                Some(&args[0])
            } else {
                None
            };
            let ce = &args[args.len() - 1];
            for (k, e) in l.iter() {
                if let Some(ck) = ck {
                    let (r, m, err, valid) = eval_validation(&Value::str(k.as_str()), ck, env);
                    if let Some(err) = err {
                        return verr(format!("map key {} {err}", q(k)));
                    }
                    if !valid {
                        return (false, String::new(), None, false);
                    }
                    if !r {
                        return vres(false, format!("map key {} {m}", q(k)));
                    }
                }
                let (r, m, err, valid) = eval_validation(e.value(), ce, env);
                if let Some(err) = err {
                    return verr(format!("map entry {}: {err}", q(k)));
                }
                if !valid {
                    return (false, String::new(), None, false);
                }
                if !r {
                    return vres(false, format!("map entry {} {m}", q(k)));
                }
            }
            vres(true, "all map entries and keys match")
        }
        "optionalfield" | "mapfield" => {
            if op == "optionalfield" {
                optional = true;
            }
            let Value::Map(l) = value else {
                return vres(false, "is no map");
            };
            if args.is_empty() || args.len() > 2 {
                return verr(format!("{op} reqires one or two arguments"));
            }
            let Ok(field) = string_value(op, args[0].value()) else {
                return verr("field name must be string");
            };
            let Some(val) = l.get(&field) else {
                if optional {
                    return vres(true, format!("has no optional field {}", q(&field)));
                }
                return vres(false, format!("has no field {}", q(&field)));
            };
            if args.len() == 2 {
                let (r, m, err, valid) = eval_validation(val.value(), &args[1], env);
                if let Some(err) = err {
                    return verr(format!("map entry {} {err}", q(&field)));
                }
                if !valid {
                    return (false, String::new(), None, false);
                }
                return vres(r, format!("map entry {} {m}", q(&field)));
            }
            vres(true, format!("map entry {} exists", q(&field)))
        }
        "and" | "not" | "" => {
            if args.is_empty() {
                return verr("validator argument required");
            }
            for c in args {
                let (r, m, err, resolved) = eval_validation(value, c, env);
                if err.is_some() || !resolved {
                    return (false, String::new(), err, resolved);
                }
                if reason != "(" {
                    reason.push_str(" and ");
                }
                reason.push_str(&m);
                if !r {
                    return vres(false, m);
                }
            }
            if args.len() == 1 {
                return vres(true, reason[1..].to_string());
            }
            vres(true, format!("{reason})"))
        }
        "or" => {
            if args.is_empty() {
                return verr("validator argument required");
            }
            for c in args {
                let (r, m, err, resolved) = eval_validation(value, c, env);
                if err.is_some() || !resolved {
                    return (false, String::new(), err, resolved);
                }
                if reason != "(" {
                    reason.push_str(" and ");
                }
                reason.push_str(&m);
                if r {
                    return vres(true, m);
                }
            }
            if args.len() == 1 {
                return vres(true, reason[1..].to_string());
            }
            vres(false, format!("{reason})"))
        }
        "empty" => match value {
            Value::Str(s) => simple(s.is_empty(), "is empty", "is not empty"),
            Value::List(l) => simple(l.is_empty(), "is empty", "is not empty"),
            Value::Map(m) => simple(m.is_empty(), "is empty", "is not empty"),
            other => verr(format!("invalid type for empty: {}", other.type_name())),
        },
        "valueset" => {
            if args.len() != 1 {
                return verr("valueset requires a list argument with possible values");
            }
            let Value::List(l) = args[0].value() else {
                return verr("valueset requires a list argument with possible values");
            };
            for v in l.iter() {
                if compare_equals(value, v.value()).0 {
                    return vres(true, "matches valueset");
                }
            }
            match value {
                Value::Str(s) => vres(false, format!("invalid value {}", super::expr::go_quote(s))),
                Value::Int(i) => vres(false, format!("invalid value {i}")),
                _ => vres(false, "invalid value"),
            }
        }
        "value" | "=" => {
            if args.len() != 1 {
                return verr("value requires a value argument");
            }
            let s = args[0].value();
            let q = |x: &str| super::expr::go_quote(x);
            if !compare_equals(s, value).0 {
                if let Value::Str(sv) = value {
                    return vres(false, format!("invalid value {}", q(sv)));
                }
                return vres(false, "invalid value");
            }
            if let Value::Str(sv) = value {
                return vres(true, format!("valid value {}", q(sv)));
            }
            vres(true, "valid value")
        }
        "gt" | ">" | "lt" | "<" | "ge" | ">=" | "le" | "<=" => {
            let name = match op {
                "gt" | ">" => "gt",
                "lt" | "<" => "lt",
                "ge" | ">=" => "ge",
                _ => "lt",
            };
            if args.len() != 1 {
                return verr(format!("{name} requires a value argument"));
            }
            let s = args[0].value();
            let r = match compare_num(op, value, s) {
                Ok(r) => r,
                Err(e) => return e,
            };
            let sv = go_v(s);
            let (t, f) = match op {
                "gt" | ">" => ("greater than", "less or equal to"),
                "lt" | "<" => ("less or equal to", "greater than"),
                "ge" | ">=" => ("greater or equal to", "less than"),
                _ => ("less than", "greater or equal to"),
            };
            if !r {
                return vres(false, format!("{f} {sv}"));
            }
            vres(true, format!("{t} {sv}"))
        }
        "match" | "~=" => {
            if args.len() != 1 {
                return verr("match requires a regexp argument");
            }
            let Value::Str(s) = args[0].value() else {
                return verr("match requires a regexp argument");
            };
            let re = match regex::Regex::new(s) {
                Ok(r) => r,
                Err(e) => return verr(format!("regexp {s}: {e}")),
            };
            let Value::Str(v) = value else {
                return verr("no string to match regexp");
            };
            let q = super::expr::go_quote(v);
            if !re.is_match(v) {
                return vres(false, format!("invalid value {q}"));
            }
            vres(true, format!("valid value {q}"))
        }
        "type" => {
            let e = value.type_name();
            for t in args {
                let s = match string_value("type arg", t.value()) {
                    Ok(s) => s,
                    Err(err) => return verr(format!("{op}: {err}")),
                };
                if s == e {
                    return vres(true, format!("is of type {s}"));
                }
                if reason != "(" {
                    reason.push_str(" and ");
                }
                reason.push_str(&format!("is not of type {s}"));
            }
            if args.len() == 1 {
                return vres(false, reason[1..].to_string());
            }
            vres(false, format!("{reason})"))
        }
        "dnsname" => {
            let s = match string_value(op, value) {
                Ok(s) => s,
                Err(e) => return verr(format!("{op}: {e}")),
            };
            if !is_wildcard_dns1123_subdomain(&s).is_empty() {
                let r = is_dns1123_subdomain(&s);
                if !r.is_empty() {
                    return vres(false, format!("is no dns name: {}", go_list(&r)));
                }
            }
            vres(true, "is dns name")
        }
        "dnslabel" => {
            let s = match string_value(op, value) {
                Ok(s) => s,
                Err(e) => return verr(format!("{op}: {e}")),
            };
            let r = is_dns1123_label(&s);
            simple(
                r.is_empty(),
                "is dns label",
                format!("is no dns label: {}", go_list(&r)),
            )
        }
        "dnsdomain" => {
            let s = match string_value(op, value) {
                Ok(s) => s,
                Err(e) => return verr(format!("{op}: {e}")),
            };
            let r = is_dns1123_subdomain(&s);
            simple(
                r.is_empty(),
                "is dns domain",
                format!("is no dns domain: {}", go_list(&r)),
            )
        }
        "wildcarddnsdomain" => {
            let s = match string_value(op, value) {
                Ok(s) => s,
                Err(e) => return verr(format!("{op}: {e}")),
            };
            let r = is_wildcard_dns1123_subdomain(&s);
            simple(
                r.is_empty(),
                "is wildcard dns domain",
                format!("is no wildcard dns domain: {}", go_list(&r)),
            )
        }
        "ip" => {
            let s = match string_value(op, value) {
                Ok(s) => s,
                Err(e) => return verr(format!("{op}: {e}")),
            };
            let ok = super::arith::parse_ip(&s).is_some();
            simple(ok, "is ip address", format!("is no ip address: {s}"))
        }
        "cidr" => {
            let s = match string_value(op, value) {
                Ok(s) => s,
                Err(e) => return verr(format!("{op}: {e}")),
            };
            let ok = super::arith::parse_cidr(&s).is_some();
            simple(
                ok,
                "is CIDR",
                format!("is no CIDR: invalid CIDR address: {s}"),
            )
        }
        "privatekey" | "publickey" | "certificate" | "ca" => {
            let s = match string_value(op, value) {
                Ok(s) => s,
                Err(e) => return verr(e),
            };
            let (what, msg) = match op {
                "privatekey" => ("private key", "private key"),
                "publickey" => ("public key", "public key"),
                _ => ("certificate", "certificate"),
            };
            let r = match pem_decode(&s) {
                None => Err(format!("invalid {msg} format (expected pem block)")),
                Some((typ, der)) => {
                    if matches!(op, "certificate" | "ca") && typ != "CERTIFICATE" {
                        Err(format!(
                            "unexpected pem block type for certificate: {}",
                            q(&typ)
                        ))
                    } else if der.first() != Some(&0x30) {
                        Err(format!("failed to parse DER encoded {msg}"))
                    } else if op == "privatekey" && !typ.ends_with("PRIVATE KEY") {
                        Err(format!("unknown private key type {}", q(&typ)))
                    } else if op == "publickey" && !typ.ends_with("PUBLIC KEY") {
                        Err("unknown type of public key".to_string())
                    } else {
                        Ok(())
                    }
                }
            };
            match (op, r) {
                ("ca", Ok(())) => vres(true, "is ca"),
                (_, Ok(())) => vres(true, format!("is {what}")),
                (_, Err(e)) => vres(false, format!("is no {what}: {e}")),
            }
        }
        "semver" => {
            let vargs: Vec<Value> = args.iter().map(|a| a.value().clone()).collect();
            super::semver::validate("semver", true, value, &vargs)
        }
        _ => verr(format!("unknown validation operator {op:?}")),
    }
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";

fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut m = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            m.push_str(" or ");
        }
        m.push_str(&format!("'{e}', "));
    }
    m.push_str(&format!("regex used for validation is '{fmt}')"));
    m
}

fn full_match(re: &str, s: &str) -> bool {
    regex::Regex::new(&format!("^{re}$"))
        .map(|r| r.is_match(s))
        .unwrap_or(false)
}

fn is_dns1123_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !full_match(DNS1123_LABEL_FMT, v) {
        errs.push(regex_error(
            "a DNS-1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
            DNS1123_LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    errs
}

fn subdomain_fmt() -> String {
    format!("{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*")
}

fn is_dns1123_subdomain(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let f = subdomain_fmt();
    if !full_match(&f, v) {
        errs.push(regex_error(
            "a DNS-1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            &f,
            &["example.com"],
        ));
    }
    errs
}

fn is_wildcard_dns1123_subdomain(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let f = format!("\\*\\.{}", subdomain_fmt());
    if !full_match(&f, v) {
        errs.push(regex_error(
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character",
            &f,
            &["*.example.com"],
        ));
    }
    errs
}

fn q(s: &str) -> String {
    super::expr::go_quote(s)
}

/// Decodes the first PEM block: (type, DER bytes).
fn pem_decode(s: &str) -> Option<(String, Vec<u8>)> {
    use base64::Engine as _;
    let start = s.find("-----BEGIN ")?;
    let rest = &s[start + 11..];
    let tend = rest.find("-----")?;
    let typ = rest[..tend].to_string();
    let body_start = &rest[tend + 5..];
    let end_marker = format!("-----END {typ}-----");
    let bend = body_start.find(&end_marker)?;
    let body: String = body_start[..bend]
        .lines()
        .filter(|l| !l.contains(':'))
        .collect::<Vec<_>>()
        .join("")
        .split_whitespace()
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body.as_bytes())
        .ok()?;
    Some((typ, der))
}
