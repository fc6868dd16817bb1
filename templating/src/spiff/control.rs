//! YAML control structures (`<<if:`, `<<switch:`, `<<type:`, `<<for:`, `<<merge:`), spiff's
//! `control` feature. Landscaper never enables it; the engine supports it when
//! [`super::SpiffOptions::control`] is set.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::env::Env;
use super::eval::{call_lambda, eval};
use super::expr::{Expr, short, shorten};
use super::value::{
    Issue, Map, Node, Value, is_map_resolved, is_resolved_node, is_resolved_value_x, value_eq,
};

const TEMPLATE_OPTIONS: &[&str] = &["do", "mapkey"];

fn options_of(control: &str) -> &'static [&'static str] {
    match control {
        "if" => &["then", "else"],
        "for" => &["do", "mapkey"],
        "switch" => &["default", "cases"],
        "type" => &["default"],
        _ => &[],
    }
}

fn is_control_name(n: &str) -> bool {
    matches!(n, "if" | "for" | "merge" | "switch" | "type")
}

fn is_option_name(n: &str) -> bool {
    matches!(n, "then" | "else" | "do" | "mapkey" | "default" | "cases")
}

/// `RequireTemplate`: `<<do` and `<<mapkey` values are templates.
pub(crate) fn require_template(key: &str) -> bool {
    match key.strip_prefix("<<") {
        Some(o) => TEMPLATE_OPTIONS.contains(&o),
        None => false,
    }
}

struct Ctx {
    env: Env,
    control: &'static str,
    value: Node,
    node: Node,
    fields: Map,
    options: Map,
}

fn static_name(n: &str) -> &'static str {
    match n {
        "if" => "if",
        "for" => "for",
        "merge" => "merge",
        "switch" => "switch",
        _ => "type",
    }
}

/// `GetControl`
fn get_control(node: &Node, undef: Option<&Map>, env: &Env) -> Result<Option<Ctx>, String> {
    if !env.control() {
        return Ok(None);
    }
    let Value::Map(m) = node.value() else {
        return Ok(None);
    };
    let mut name = String::new();
    let mut control: Option<&'static str> = None;
    let mut val: Option<Node> = None;
    let mut opts = Map::new();
    let mut fields = Map::new();
    let empty = Map::new();
    let undef = undef.unwrap_or(&empty);
    for (k, v) in m.iter().chain(undef.iter()) {
        if let Some(n) = k.strip_prefix("<<") {
            if !n.is_empty() && n != "<" && !n.starts_with('!') {
                if is_control_name(n) {
                    if control.is_some() {
                        return Err(format!("multiple controls {name:?} and {k:?}"));
                    }
                    name = k.clone();
                    control = Some(static_name(n));
                    val = Some(v.clone());
                } else if is_option_name(n) {
                    opts.insert(n.to_string(), v.clone());
                } else {
                    return Err(format!("unknown control or control option {k:?}"));
                }
            }
            continue;
        }
        fields.insert(k.clone(), v.clone());
    }
    match control {
        Some(c) => {
            let node = if undef.is_empty() {
                node.clone()
            } else {
                let mut nm = (**m).clone();
                for (k, v) in undef.iter() {
                    nm.insert(k.clone(), v.clone());
                }
                node.replace_value(Value::map(nm))
            };
            for o in opts.keys() {
                if !options_of(c).contains(&o.as_str()) {
                    return Err(format!("invalid option {o:?} for control {c:?}"));
                }
            }
            Ok(Some(Ctx {
                env: env.clone(),
                control: c,
                value: val.unwrap_or_else(Node::nil),
                node,
                fields,
                options: opts,
            }))
        }
        None => {
            if !opts.is_empty() {
                let keys: Vec<&str> = opts.keys().map(|k| k.as_str()).collect();
                return Err(format!(
                    "control options [{}] without control",
                    keys.join(" ")
                ));
            }
            Ok(None)
        }
    }
}

/// `IsControl`: Err for invalid control maps.
pub(crate) fn is_control(node: &Node, env: &Env) -> Result<bool, String> {
    get_control(node, None, env).map(|c| c.is_some())
}

fn control_issue(ctx: Option<&Ctx>, msg: impl Into<String>) -> (Node, bool) {
    let control = match ctx {
        Some(c) => format!("<{} control>", c.control),
        None => "<control>".to_string(),
    };
    (
        Node::new(Value::str(control)).issue_node(true, true, Issue::new(msg)),
        false,
    )
}

fn control_value(ctx: &Ctx, val: &Node) -> (Node, bool) {
    if val.undefined() || is_resolved_node(val, ctx.env.control()) {
        (val.clone(), true)
    } else {
        (val.clone(), false)
    }
}

fn map_resolved_accept_failed(m: &Map, control: bool) -> bool {
    is_map_resolved(m, control)
        && m.values()
            .all(|n| n.failed() || n.has_error() || is_resolved_value_x(n.value(), true, control))
}

fn control_ready(ctx: &Ctx, accept_fields: bool) -> (Node, bool) {
    if !accept_fields && !ctx.fields.is_empty() {
        let keys: Vec<&str> = ctx.fields.keys().map(|k| k.as_str()).collect();
        return control_issue(
            Some(ctx),
            format!("no regular fields [{}] allowed", keys.join(" ")),
        );
    }
    let control = ctx.env.control();
    let ready = (ctx.value.undefined() || is_resolved_node(&ctx.value, control))
        && map_resolved_accept_failed(&ctx.options, false)
        && map_resolved_accept_failed(&ctx.fields, false);
    (ctx.node.clone(), ready)
}

fn undefined() -> (Node, bool) {
    (Node::nil().undefined_node(), true)
}

/// `flowControl`
pub(crate) fn flow_control(node: Node, undef: &BTreeMap<String, Node>, env: &Env) -> Node {
    let flags = node.flags();
    let (n, resolved) = match get_control(&node, Some(undef), env) {
        Err(e) => control_issue(None, e),
        Ok(None) => return node,
        Ok(Some(ctx)) => match ctx.control {
            "if" => flow_if(&ctx),
            "for" => flow_for(&ctx),
            "merge" => flow_merge(&ctx),
            "switch" => flow_switch(&ctx),
            _ => flow_type(&ctx),
        },
    };
    if resolved && flags.0 != 0 {
        return n.add_flags(flags);
    }
    n
}

fn flow_if(ctx: &Ctx) -> (Node, bool) {
    let (node, ok) = control_ready(ctx, false);
    if !ok {
        return (node, false);
    }
    let branch = match ctx.value.value() {
        Value::Nil => "else",
        Value::Bool(true) => "then",
        Value::Bool(false) => "else",
        other => {
            return control_issue(
                Some(ctx),
                format!("invalid condition value type: {}", other.type_name()),
            );
        }
    };
    match ctx.options.get(branch) {
        Some(e) => control_value(ctx, e),
        None => undefined(),
    }
}

fn flow_merge(ctx: &Ctx) -> (Node, bool) {
    let (node, ok) = control_ready(ctx, true);
    if !ok {
        return (node, false);
    }
    let mut fields: Map = ctx
        .fields
        .iter()
        .filter(|(_, v)| !v.undefined())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    match ctx.value.value() {
        Value::Nil => {}
        Value::Map(m) => {
            for (k, e) in m.iter() {
                fields.insert(k.clone(), e.clone());
            }
        }
        Value::List(l) => {
            for (i, e) in l.iter().enumerate() {
                match e.value() {
                    Value::Nil => {}
                    Value::Map(m) => {
                        for (k, e) in m.iter() {
                            fields.insert(k.clone(), e.clone());
                        }
                    }
                    _ => {
                        return control_issue(
                            Some(ctx),
                            format!("entry {i}: invalid entry type: list"),
                        );
                    }
                }
            }
        }
        other => {
            return control_issue(
                Some(ctx),
                format!("invalid value type: {}", other.type_name()),
            );
        }
    }
    (Node::new(Value::map(fields)), true)
}

/// `EquivalentToNode`
fn equivalent(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| equivalent(v.value(), w.value())))
        }
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|(v, w)| equivalent(v.value(), w.value()))
        }
        _ => value_eq(a, b),
    }
}

fn flow_switch(ctx: &Ctx) -> (Node, bool) {
    if ctx.value.undefined() {
        return undefined();
    }
    let cases = ctx.options.get("cases");
    let (node, ok) = control_ready(ctx, cases.is_none());
    if !ok {
        return (node, false);
    }
    if let Some(cases) = cases {
        let Value::List(list) = cases.value() else {
            return control_issue(Some(ctx), "cases must be a list");
        };
        for (i, c) in list.iter().enumerate() {
            let Value::Map(m) = c.value() else {
                return control_issue(Some(ctx), format!("case {i} requires field 'case'"));
            };
            let mut value = None;
            let mut reject = false;
            let mut found = false;
            for (k, v) in m.iter() {
                match k.as_str() {
                    "case" => {
                        found = true;
                        reject = reject || !equivalent(v.value(), ctx.value.value());
                    }
                    "match" => {
                        found = true;
                        if let Value::Lambda(f) = v.value() {
                            let (res, r, _, okk) = call_lambda(
                                f,
                                false,
                                false,
                                false,
                                &Map::new(),
                                vec![ctx.value.value().clone()],
                                &ctx.env,
                                false,
                            );
                            if !okk {
                                reject = true;
                            } else {
                                if !res {
                                    return (ctx.node.clone(), false);
                                }
                                match r {
                                    Value::Bool(b) => reject = reject || !b,
                                    other => {
                                        return control_issue(
                                            Some(ctx),
                                            format!(
                                                "case {i} boolean match result required, but got {}",
                                                other.type_name()
                                            ),
                                        );
                                    }
                                }
                            }
                        }
                    }
                    "value" => value = Some(v.clone()),
                    _ => {
                        return control_issue(Some(ctx), format!("case {i} invalid field {k:?}"));
                    }
                }
            }
            if !found {
                return control_issue(
                    Some(ctx),
                    format!("case {i} requires 'case' or `'match' field"),
                );
            }
            if !reject {
                return match value {
                    Some(v) => control_value(ctx, &v),
                    None => undefined(),
                };
            }
        }
        if let Some(d) = ctx.options.get("default") {
            return control_value(ctx, d);
        }
        return control_issue(
            Some(ctx),
            format!(
                "invalid switch value: {}",
                shorten(&short(ctx.value.value(), false))
            ),
        );
    }
    selected(ctx, ctx.value.value())
}

fn selected(ctx: &Ctx, key: &Value) -> (Node, bool) {
    let mut result = None;
    match key {
        Value::Nil => {}
        Value::Str(s) => result = ctx.fields.get(&**s).cloned(),
        other => {
            return control_issue(
                Some(ctx),
                format!("invalid switch value type: {}", other.type_name()),
            );
        }
    }
    if result.is_none() {
        result = ctx.options.get("default").cloned();
    }
    match result {
        Some(r) => control_value(ctx, &r),
        None => control_issue(
            Some(ctx),
            format!(
                "invalid switch value: {}",
                match key {
                    Value::Str(s) => super::expr::go_quote(s),
                    _ => "%!q(<nil>)".to_string(),
                }
            ),
        ),
    }
}

fn flow_type(ctx: &Ctx) -> (Node, bool) {
    let (node, ok) = control_ready(ctx, true);
    if !ok {
        return (node, false);
    }
    let t = if ctx.value.undefined() {
        "undef"
    } else {
        ctx.value.value().type_name()
    };
    selected(ctx, &Value::str(t))
}

struct Iteration {
    name: String,
    index: String,
    current: usize,
    /// (index value, value)
    items: Vec<(Value, Node)>,
}

fn check_name(kind: &str, n: &str) -> Result<(), String> {
    if n.chars().any(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(())
    } else {
        Err(format!(
            "invalid {kind} variable name {n:?} (must be [a-zA-Z0-9_]+)"
        ))
    }
}

fn control_iteration(name: &str, index: &str, val: &Node) -> Result<Iteration, String> {
    check_name("range", name)?;
    let index = if index.is_empty() {
        format!("index-{name}")
    } else {
        check_name("index", index)?;
        index.to_string()
    };
    let items: Vec<(Value, Node)> = match val.value() {
        Value::List(l) => l
            .iter()
            .enumerate()
            .map(|(i, n)| (Value::Int(i as i64), n.clone()))
            .collect(),
        Value::Map(m) => m
            .iter()
            .map(|(k, n)| (Value::str(k.as_str()), n.clone()))
            .collect(),
        other => {
            return Err(format!(
                "control variable {name:?} requires list or map value, but got {}",
                other.type_name()
            ));
        }
    };
    Ok(Iteration {
        name: name.to_string(),
        index,
        current: 0,
        items,
    })
}

fn template_of(n: &Node) -> Option<Rc<Expr>> {
    match n.value() {
        Value::Template(_) => Some(Rc::new(Expr::Substitution(Rc::new(Expr::Value(
            n.value().clone(),
        ))))),
        _ => None,
    }
}

fn flow_for(ctx: &Ctx) -> (Node, bool) {
    let (node, ok) = control_ready(ctx, false);
    if !ok {
        return (node, false);
    }
    let Some(body) = ctx.options.get("do") else {
        return control_issue(Some(ctx), "do field required");
    };
    if ctx.value.undefined() {
        return undefined();
    }
    let mapkey = match ctx.options.get("mapkey") {
        Some(k) => match template_of(k) {
            Some(t) => Some(t),
            None => return control_issue(Some(ctx), "mapkey must be an expression"),
        },
        None => None,
    };
    let subst = template_of(body);
    let mut ranges: Vec<Iteration> = Vec::new();
    match ctx.value.value() {
        Value::Map(def) => {
            for (v, values) in def.iter() {
                let parts: Vec<&str> = v.split(',').collect();
                let (index, name) = match parts.len() {
                    2 => (parts[0].trim(), parts[1].trim()),
                    1 => ("", parts[0].trim()),
                    _ => {
                        return control_issue(
                            Some(ctx),
                            format!("invalid control variable spec {v:?}"),
                        );
                    }
                };
                match control_iteration(name, index, values) {
                    Ok(it) => ranges.push(it),
                    Err(e) => return control_issue(Some(ctx), e),
                }
            }
            ranges.sort_by(|a, b| b.name.cmp(&a.name).then_with(|| b.index.cmp(&a.index)));
        }
        Value::List(def) => {
            for v in def.iter() {
                let Value::Map(spec) = v.value() else {
                    return control_issue(
                        Some(ctx),
                        format!(
                            "control variable list entry requires may but got {}",
                            v.value().type_name()
                        ),
                    );
                };
                let Some(n) = spec.get("name") else {
                    return control_issue(
                        Some(ctx),
                        "control variable list entry requires name field",
                    );
                };
                let name = n.value().as_str().unwrap_or("").to_string();
                let mut index = String::new();
                if let Some(n) = spec.get("index") {
                    match n.value() {
                        Value::Str(s) => index = s.to_string(),
                        other => {
                            return control_issue(
                                Some(ctx),
                                format!(
                                    "control index variable name must be of type string but got {}",
                                    other.type_name()
                                ),
                            );
                        }
                    }
                }
                let Some(l) = spec.get("values") else {
                    return control_issue(
                        Some(ctx),
                        "control variable list entry requires values field",
                    );
                };
                if spec.len() < 2 || spec.len() > 3 {
                    return control_issue(
                        Some(ctx),
                        "control variable list entry requires two or three fields: name, values and optionally index",
                    );
                }
                match control_iteration(&name, &index, l) {
                    Ok(it) => ranges.insert(0, it),
                    Err(e) => return control_issue(Some(ctx), e),
                }
            }
        }
        other => {
            return control_issue(
                Some(ctx),
                format!("value field must be map but got {}", other.type_name()),
            );
        }
    }

    let mut result_list: Vec<Node> = Vec::new();
    let mut result_map = Map::new();
    if ranges.iter().any(|r| r.items.is_empty()) {
        return if mapkey.is_some() {
            (Node::new(Value::map(result_map)), true)
        } else {
            (Node::new(Value::list(result_list)), true)
        };
    }
    let mut done = true;
    let mut issue = Issue::default();
    loop {
        let mut inp = Map::new();
        for r in &ranges {
            let (idx, val) = &r.items[r.current];
            inp.insert(r.name.clone(), val.clone());
            inp.insert(r.index.clone(), Node::new(idx.clone()));
        }
        let scope = ctx.env.with_local_scope(inp);
        let mut skip = false;
        let mut key = String::new();
        if let Some(mk) = &mapkey {
            let (k, info, okk) = eval(mk, &scope, false);
            if !okk {
                done = false;
                issue
                    .nested
                    .push(variables_issue(&ranges, info.issue.clone()));
            }
            if info.undefined || k.is_nil() {
                skip = true;
            } else {
                match k {
                    Value::Str(s) => key = s.to_string(),
                    other => {
                        done = false;
                        issue.nested.push(variables_issue(
                            &ranges,
                            Issue::new(format!(
                                "map key must be string, but found {}",
                                other.type_name()
                            )),
                        ));
                    }
                }
            }
        }
        match &subst {
            Some(s) => {
                let (v, info, okk) = eval(s, &scope, false);
                if !okk {
                    done = false;
                    issue
                        .nested
                        .push(variables_issue(&ranges, info.issue.clone()));
                } else if v.is_expr() {
                    done = false;
                } else if !skip && !info.undefined {
                    if mapkey.is_some() {
                        result_map.insert(key.clone(), Node::new(v));
                    } else {
                        result_list.push(Node::new(v));
                    }
                }
            }
            None => {
                if mapkey.is_some() {
                    result_map.insert(key.clone(), body.clone());
                } else {
                    result_list.push(body.clone());
                }
            }
        }
        // next combination
        let mut i = 0;
        loop {
            if i == ranges.len() {
                break;
            }
            ranges[i].current += 1;
            if ranges[i].current < ranges[i].items.len() {
                break;
            }
            ranges[i].current = 0;
            i += 1;
        }
        if i == ranges.len() {
            break;
        }
    }
    if !done {
        if !issue.nested.is_empty() {
            issue.msg = "error evaluating body".into();
            return (ctx.node.issue_node(true, true, issue), false);
        }
        return (ctx.node.clone(), false);
    }
    if mapkey.is_some() {
        (Node::new(Value::map(result_map)), true)
    } else {
        (Node::new(Value::list(result_list)), true)
    }
}

fn variables_issue(ranges: &[Iteration], mut issue: Issue) -> Issue {
    let mut desc = String::from("control variables: ");
    for (i, r) in ranges.iter().enumerate() {
        if i > 0 {
            desc.push(';');
        }
        let (idx, val) = &r.items[r.current];
        desc.push_str(&format!(
            " {}[{}]={}",
            r.name,
            super::expr::value_as_string(idx, true).trim_matches('"'),
            shorten(&short(val.value(), false))
        ));
    }
    issue.msg = format!("{desc}: {}", issue.msg);
    issue
}
