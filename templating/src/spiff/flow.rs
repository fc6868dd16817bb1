//! Document processing (spiff's `flow` package): the pass-wise evaluation of a document until
//! it does not change any more, map merges (`<<:`), list splices, stub overrides, markers and
//! the final cleanup.

use std::rc::Rc;

use super::env::Env;
use super::eval::{eval, marker_flags, marker_tag, new_template_value};
use super::expr::Expr;
use super::parser::parse;
use super::value::{
    Ann, FLAG_IMPLIED, FLAG_INJECT, FLAG_INJECTED, FLAG_NOMERGE, Flags, Issue, MERGEKEY, Map, Node,
    Value, embedded_dynaml, find_r, find_string_r, is_resolved_node, issue_node_at, node_eq,
    unresolved_list_entry_merge,
};

pub(crate) const NO_LIST_KEY: &str = "<<<NO LIST KEY>>";

/// Upper bound of evaluation passes of one document.
const MAX_PASSES: usize = 100_000;

/// A node that could not be resolved.
#[derive(Clone)]
pub(crate) struct Unresolved {
    pub node: Node,
    pub context: Vec<String>,
    pub path: Vec<String>,
    pub parse_error: Option<String>,
}

/// spiff's `UnresolvedNodes` status.
#[derive(Clone)]
pub(crate) struct Status {
    pub nodes: Vec<Unresolved>,
}

impl Status {
    pub fn has_error(&self) -> bool {
        self.nodes
            .iter()
            .any(|n| n.parse_error.is_some() || n.node.issue().is_some_and(|i| !i.msg.is_empty()))
    }

    /// (issue, local error, failed)
    pub fn issue(&self, msg: &str) -> (Issue, bool, bool) {
        let mut result = Issue::new(msg);
        let mut local = false;
        let mut failed = false;
        for n in &self.nodes {
            let mut issue = n.node.issue().map(|i| (**i).clone()).unwrap_or_default();
            if let Some(p) = &n.parse_error {
                issue.msg = p.clone();
            }
            if n.node.has_error() || n.parse_error.is_some() {
                local = true;
            }
            if n.node.failed() {
                failed = true;
            }
            let m = if issue.msg.is_empty() {
                String::new()
            } else {
                format!("{}{}", tag_char(n), issue.msg)
            };
            issue.msg = format!(
                "{}\tin {}\t{}\t({}){}",
                printable(&n.node),
                "template",
                n.context.join("."),
                n.path.join("."),
                m
            );
            result.nested.push(issue);
        }
        (result, local, failed)
    }

    /// A readable error message: one line per unresolved node, `path: expression: message`.
    pub fn message(&self) -> String {
        let mut lines = Vec::new();
        for n in &self.nodes {
            let mut msg = n
                .parse_error
                .clone()
                .or_else(|| n.node.issue().map(|i| flatten_issue(i)))
                .unwrap_or_default();
            if msg.is_empty() {
                msg = "unresolved".to_string();
            }
            let path = if n.context.is_empty() {
                "<root>".to_string()
            } else {
                n.context.join(".")
            };
            lines.push(format!("{path}: {}: {msg}", printable(&n.node)));
        }
        lines.join("\n")
    }
}

fn flatten_issue(i: &Issue) -> String {
    let mut s = i.msg.clone();
    for n in &i.nested {
        let sub = flatten_issue(n);
        if !sub.is_empty() {
            s.push_str("; ");
            s.push_str(&sub);
        }
    }
    s
}

fn tag_char(n: &Unresolved) -> &'static str {
    if n.node.has_error() || n.parse_error.is_some() {
        "*"
    } else if !n.node.failed() {
        "@"
    } else {
        "-"
    }
}

fn printable(n: &Node) -> String {
    match n.value() {
        Value::Expr(e) => format!("(( {e} ))"),
        Value::Map(_) => "<map>".into(),
        Value::List(_) => "<list>".into(),
        v => super::expr::value_as_string(v, true),
    }
}

// ------------------------------------------------------------------ helpers

/// `node_copy`: a deep copy with fresh annotations.
pub(crate) fn node_copy(n: &Node) -> Node {
    match n.value() {
        Value::List(l) => Node::new(Value::list(l.iter().map(node_copy).collect())),
        Value::Map(m) => Node::new(Value::map(
            m.iter().map(|(k, v)| (k.clone(), node_copy(v))).collect(),
        )),
        v => Node::new(v.clone()),
    }
}

fn update_node(node: Node, flags: Flags, tag: Option<Rc<str>>) -> Node {
    let mut node = node;
    if (flags | node.flags()) != node.flags() {
        node = node.add_flags(flags);
    }
    if let Some(t) = tag
        && !t.is_empty()
        && node.tag().map(|x| &**x) != Some(&*t)
    {
        node = node.set_tag(Some(t));
    }
    node
}

fn get_inherited_flags(env: &Env) -> (Flags, Option<Node>) {
    if !env.has_stubs() {
        return (Flags(0), None);
    }
    match env.find_in_stubs(env.stub_path()) {
        Some(o) => (
            Flags(o.flags().0 & (super::value::FLAG_TEMPORARY | super::value::FLAG_STATE)),
            Some(o),
        ),
        None => (Flags(0), None),
    }
}

/// `asTemplate`: the marker list and expression of a (possibly enforced) template marker.
fn as_template(e: &Rc<Expr>, enforce: bool) -> Option<(Vec<String>, Option<Rc<Expr>>)> {
    match &**e {
        Expr::Marker { list, expr } => {
            let mut list = list.clone();
            if enforce && !list.iter().any(|m| m == "&template") {
                list.push("&template".into());
            }
            Some((list, expr.clone()))
        }
        _ => {
            if enforce {
                Some((vec!["&template".into()], Some(e.clone())))
            } else {
                None
            }
        }
    }
}

/// `MarkerExpr.TemplateExpression`
fn template_expression(list: &[String], expr: &Option<Rc<Expr>>, orig: &Node) -> Option<Node> {
    let nlist: Vec<String> = list
        .iter()
        .filter(|m| m.as_str() != "&template")
        .cloned()
        .collect();
    let e = expr.as_ref()?;
    Some(
        orig.replace_value(Value::str(format!("(( {e} ))")))
            .add_flags(marker_flags(&nlist)),
    )
}

fn simple_merge_compatibility_check(initial: bool, node: &Node) -> bool {
    if !initial
        && let Value::Expr(e) = node.value()
        && let Expr::Merge { required, .. } = &**e
    {
        return !required;
    }
    false
}

/// `FlowString`: parses an embedded dynaml expression.
pub(crate) fn flow_string(root: &Node, env: &Env) -> Node {
    let Value::Str(s) = root.value() else {
        return root.clone();
    };
    let Some(sub) = super::value::embedded_dynaml_ext(s, env.interpolation()) else {
        return root.clone();
    };
    match parse(&sub, env.path(), env.stub_path()) {
        Ok(e) => root.replace_value(Value::Expr(e)),
        Err(_) => root.clone(),
    }
}

// ------------------------------------------------------------------ flow

/// `flow`: `_flow` plus tag registration.
fn flow(root: &Node, env: &Env, should_override: bool, enforce_template: bool) -> Node {
    if !enforce_template && env.trivial_stubs() && root.settled() {
        return root.clone();
    }
    let mut node = flow_(root, env, should_override, enforce_template);
    if let Some(tag) = node.tag().cloned()
        && !tag.is_empty()
        && is_resolved_node(&node, env.control())
    {
        let (name, global) = match tag.strip_prefix('*') {
            Some(t) => (t.to_string(), true),
            None => (tag.to_string(), false),
        };
        if let Err(e) = super::tags::set_tag(env, &name, &node, env.path(), true, !global) {
            if node.value().is_nil() {
                node = node.replace_value(root.value().clone());
            }
            node = node.issue_node(true, true, Issue::new(e));
        }
    }
    node
}

fn flow_(root: &Node, env: &Env, should_override: bool, enforce_template: bool) -> Node {
    let mut flags = root.flags();
    let mut replace = root.ann().replace;
    let mut redirect = root.ann().redirect.clone();
    let preferred = root.ann().preferred;
    let merged = root.ann().merged;
    let mut key_name = root.key_name().cloned();

    let mut env = env.clone();
    if let Some(r) = &redirect {
        env = env.redirect_overwrite(r);
    }
    let mut root = root.clone();

    if !replace {
        if !root.is_expr() && merged {
            return root;
        }
        match root.value().clone() {
            Value::Map(_) => {
                // control structures are disabled unless the feature is set
                let is_control = if env.control() {
                    match super::control::is_control(&root, &env) {
                        Ok(c) => c,
                        Err(e) => {
                            return issue_node_at(
                                Some(env.path()),
                                &root,
                                true,
                                true,
                                Issue::new(e),
                            );
                        }
                    }
                } else {
                    false
                };
                root = flow_map(&root, &env, !is_control, enforce_template);
                if !is_control {
                    return root;
                }
                if let Value::Map(_) = root.value() {
                    return root;
                }
            }
            Value::List(_) => return flow_list(&root, &env, enforce_template),
            Value::Expr(val) => {
                let mut eval_v = Value::Nil;
                let mut info = super::eval::Info::default();
                let ok;
                let tmpl = as_template(&val, enforce_template);
                if let Some((list, _)) = &tmpl
                    && let Some(t) = marker_tag(list)
                    && root.tag().is_none_or(|x| x.is_empty())
                {
                    root = root.set_tag(Some(t.into()));
                }
                match &tmpl {
                    Some((list, expr)) if list.iter().any(|m| m == "&template") => {
                        match template_expression(list, expr, &root) {
                            None => {
                                info.set_error("empty template value");
                                if !should_override {
                                    return issue_node_at(
                                        Some(env.path()),
                                        &root,
                                        true,
                                        false,
                                        info.issue,
                                    );
                                }
                                ok = false;
                            }
                            Some(tval) => {
                                eval_v = new_template_value(env.path(), tval, root.clone(), &env);
                                ok = true;
                            }
                        }
                        flags |= marker_flags(list);
                    }
                    _ => {
                        let (v, i, o) = eval(&val, &env, false);
                        eval_v = v;
                        info = i;
                        ok = o;
                    }
                }
                flags |= info.flags;
                replace = replace || info.replace;
                if !ok {
                    root = issue_node_at(Some(env.path()), &root, true, false, info.issue.clone());
                    if !should_override {
                        return root;
                    }
                } else {
                    let tag = root.tag().cloned();
                    let mut result = Node::new(eval_v);
                    if matches!(result.value(), Value::Str(_)) {
                        result = flow_string(&result, &env);
                    }
                    let expr = result.is_expr();
                    if !info.issue.msg.is_empty() {
                        result = issue_node_at(
                            Some(env.path()),
                            &result,
                            false,
                            info.failed,
                            info.issue.clone(),
                        );
                    }
                    if info.undefined {
                        result = result.undefined_node();
                    }
                    if preferred || info.preferred {
                        result = result.preferred_node();
                    }
                    if info.key_name.as_ref().is_some_and(|k| !k.is_empty()) {
                        key_name = info.key_name.clone();
                        result = result.key_name_node(key_name.clone());
                    }
                    if info.redirect.is_some() {
                        redirect = info.redirect.clone();
                    }
                    if redirect.is_some() {
                        result = result.redirect_node(result.value().clone(), redirect.clone());
                    }
                    if replace {
                        result = result.replace_node(result.value().clone(), redirect.clone());
                    } else if merged || info.merged {
                        result = result.merged_node();
                    }
                    result = update_node(result, flags, tag);
                    if expr || result.merged() || !should_override || result.ann().preferred {
                        return result;
                    }
                    replace = result.ann().replace;
                    root = result;
                }
            }
            Value::Str(_) => {
                let result = flow_string(&root, &env);
                if result.is_expr() {
                    return result;
                }
            }
            _ => {}
        }
    }

    if !merged
        && root.ann().standard_override()
        && should_override
        && !env.nomerge()
        && let Some(overridden) = env.find_in_stubs(env.stub_path())
        && !overridden.flags().default_()
        && !root.flags().injected()
    {
        root = overridden;
        if key_name.as_ref().is_some_and(|k| !k.is_empty()) {
            root = root.key_name_node(key_name.clone());
        }
        if replace {
            root = root.replace_node(root.value().clone(), redirect.clone());
        } else if redirect.is_some() {
            root = root.redirect_node(root.value().clone(), redirect.clone());
        } else if merged {
            root = root.merged_node();
        }
        root = root.add_flags(flags.overridden());
    }
    root
}

fn flow_map(root: &Node, env: &Env, should_override: bool, template: bool) -> Node {
    let mut template = template;
    let (mut flags, stub) = get_inherited_flags(env);
    let mut tag = root.tag().cloned();
    let mut processed = true;
    let mut merged = false;
    let issue = root.issue().cloned();
    let failed = root.failed();
    let Value::Map(root_map) = root.value() else {
        return root.clone();
    };
    let root_env = env.clone();
    let mut env = env.with_scope(root_map.clone());
    let mut redirect = root.ann().redirect.clone();
    let mut replace = root.ann().replace;
    let mut new_map = Map::new();
    let mut undefined = Map::new();
    let mut add_entries = true;
    let mut err: Option<String> = None;

    let mut mergekey = "<<";
    let mut mergeval = root_map.get("<<").cloned();
    if mergeval.is_some() {
        if root_map.contains_key(MERGEKEY) {
            return root.issue_node(true, true, Issue::new("multiple merge keys not allowed"));
        }
    } else {
        mergekey = MERGEKEY;
        mergeval = root_map.get(MERGEKEY).cloned();
    }

    if let Some(val) = mergeval.clone() {
        let initial = matches!(val.value(), Value::Str(_));
        let base = flow_(&val, &env, false, false);
        if base.undefined() {
            return root.undefined_node();
        }
        let newval: Option<Node>;
        if let Value::Expr(e) = base.value() {
            let tm = as_template(e, template);
            if let Some((list, _)) = &tm {
                if let Some(t) = marker_tag(list) {
                    tag = Some(t.into());
                }
                flags |= marker_flags(list);
            }
            match &tm {
                Some((list, expr)) if list.iter().any(|m| m == "&template") => {
                    template = true;
                    newval = template_expression(list, expr, root);
                }
                _ => {
                    if simple_merge_compatibility_check(initial, &base) {
                        newval = None;
                    } else {
                        processed = false;
                        newval = Some(base.clone());
                    }
                }
            }
        } else {
            if let Some(r) = &base.ann().redirect {
                redirect = Some(r.clone());
                env = env.redirect_overwrite(r);
            }
            if base.merged() {
                merged = true;
            }
            let is_map = if let Value::Map(bm) = base.value() {
                for (k, v) in bm.iter() {
                    new_map.insert(k.clone(), v.clone());
                }
                true
            } else {
                false
            };
            replace = base.ann().replace;
            let parse_error = match base.value() {
                Value::Str(s) => {
                    super::value::embedded_dynaml_ext(s, env.interpolation()).is_some()
                }
                _ => false,
            };
            if !is_map && !base.value().is_nil() && !parse_error {
                err = Some(format!(
                    "require map value for '<<' insert, found '{}'",
                    base.value().type_name()
                ));
            }
            if is_map || base.value().is_nil() || !parse_error {
                newval = None;
                if replace {
                    add_entries = false;
                }
            } else {
                newval = Some(base.clone());
            }
        }
        mergeval = newval;
    }

    if template {
        processed = false;
    }

    let mut changed = false;
    if add_entries {
        for (key, val0) in root_map.iter() {
            let val = if key == mergekey {
                match &mergeval {
                    None => {
                        changed = true;
                        continue;
                    }
                    Some(v) => v.clone(),
                }
            } else if processed {
                let enforce = super::control::require_template(key);
                if !enforce && env.trivial_stubs() && val0.settled() {
                    val0.clone()
                } else {
                    flow(val0, &env.with_path(key), should_override, enforce)
                }
            } else {
                val0.clone()
            };
            if !Rc::ptr_eq(&val.0, &val0.0) {
                changed = true;
            }
            if !val.undefined() {
                let val = if flags.propagate_implied() {
                    val.add_flags(Flags(FLAG_IMPLIED))
                } else {
                    val
                };
                new_map.insert(key.clone(), val);
            } else {
                changed = true;
                undefined.insert(key.clone(), val);
            }
        }
    } else {
        changed = true;
    }

    if merged {
        flags |= Flags(FLAG_INJECTED);
    } else if let Some(stub) = &stub
        && !flags.injected()
        && let Value::Map(m) = stub.value()
    {
        for (k, v) in m.iter() {
            if v.flags().inject() && !new_map.contains_key(k) {
                new_map.insert(k.clone(), v.add_flags(Flags(FLAG_INJECT | FLAG_INJECTED)));
                changed = true;
            }
        }
    }

    let result = if template {
        new_template_value(
            env.path(),
            Node::new(Value::map(new_map)),
            root.clone(),
            &root_env,
        )
    } else if !changed && new_map.len() == root_map.len() {
        Value::Map(root_map.clone())
    } else {
        Value::map(new_map)
    };
    let mut node = if replace {
        root.replace_node(result, redirect)
    } else if redirect == root.ann().redirect
        && matches!(&result, Value::Map(m) if Rc::ptr_eq(m, root_map))
    {
        root.clone()
    } else {
        root.redirect_node(result, redirect)
    };

    if err.is_some() || failed {
        node = match err {
            Some(e) => node.issue_node(true, true, Issue::new(e)),
            None => node.issue_node(true, true, issue.map(|i| (*i).clone()).unwrap_or_default()),
        };
    } else if env.control() {
        node = super::control::flow_control(node, &undefined, &env);
    }
    update_node(node, flags, tag)
}

fn flow_list(root: &Node, env: &Env, template: bool) -> Node {
    let Value::List(root_list) = root.value() else {
        return root.clone();
    };
    if root.merged() {
        return root.clone();
    }
    let pm = process_merges(root, root_list, env, template);
    let nomerge = pm.flags.nomerge();
    let mut flags = pm.flags;
    let mut result_value = pm.result;
    let key_name = pm.key_name.clone();
    let mut env = env.clone();

    if pm.process {
        let list = match &result_value {
            Value::List(l) => l.clone(),
            _ => Rc::new(Vec::new()),
        };
        let mut new_list = Vec::with_capacity(list.len());
        if let Some(r) = &pm.redirect {
            env = env.redirect_overwrite(r);
        }
        let kn = key_name.as_deref().unwrap_or("");
        let mut unique = kn != NO_LIST_KEY;
        if unique {
            let mut keys = std::collections::HashSet::new();
            for (idx, val) in list.iter().enumerate() {
                let (step, _, resolved, uni) = step_name(idx, val, kn, &env, true);
                if !resolved || !uni || keys.contains(&step) {
                    unique = false;
                    break;
                }
                keys.insert(step);
            }
        }
        let mut changed = false;
        for (idx, val0) in list.iter().enumerate() {
            let (step, keyed, resolved, _) = step_name(idx, val0, kn, &env, unique);
            let mut val = val0.clone();
            if !keyed && nomerge {
                val = val.merged_node();
            }
            if resolved && !(env.trivial_stubs() && val.settled()) {
                val = flow(&val, &env.with_path(&step), false, false);
            }
            if !Rc::ptr_eq(&val.0, &val0.0) {
                changed = true;
            }
            if !val.undefined() {
                new_list.push(val);
            } else {
                changed = true;
            }
        }
        if pm.merged {
            flags |= Flags(FLAG_INJECTED);
        } else if let Some(stub) = &pm.stub
            && !root.flags().injected()
        {
            if let Value::List(m) = stub.value() {
                let injected: Vec<Node> =
                    m.iter().filter(|v| v.flags().inject()).cloned().collect();
                if !injected.is_empty() {
                    changed = true;
                    let mut l = injected;
                    l.extend(new_list);
                    new_list = l;
                }
            }
            flags |= Flags(FLAG_INJECTED);
        }
        result_value = if !changed && Rc::ptr_eq(&list, root_list) {
            Value::List(list)
        } else {
            Value::list(new_list)
        };
    }

    let mut root = root.clone();
    if key_name.as_ref().is_some_and(|k| !k.is_empty()) {
        root = root.key_name_node(key_name);
    }
    let same = matches!(&result_value, Value::List(l) if Rc::ptr_eq(l, root_list));
    if pm.replaced {
        root = root.replace_node(result_value, pm.redirect);
    } else if pm.redirect.is_some() {
        root = root.redirect_node(result_value, pm.redirect);
    } else if !same {
        root = root.replace_value(result_value);
    }
    if (flags | root.flags()) != root.flags() {
        return root.add_flags(flags);
    }
    if let Some(t) = pm.tag
        && !t.is_empty()
        && root.tag().map(|x| &**x) != Some(&*t)
    {
        root = root.set_tag(Some(t));
    }
    root
}

struct Merges {
    result: Value,
    process: bool,
    replaced: bool,
    redirect: Option<Rc<Vec<String>>>,
    key_name: Option<Rc<str>>,
    merged: bool,
    flags: Flags,
    tag: Option<Rc<str>>,
    stub: Option<Node>,
}

fn use_merge(n: &Node) -> bool {
    match n.value() {
        Value::Expr(e) => e.includes_direct_merge(),
        _ => false,
    }
}

fn process_merges(orig: &Node, root: &Rc<Vec<Node>>, env: &Env, template: bool) -> Merges {
    let mut template = template;
    let (mut flags, stub) = get_inherited_flags(env);
    let mut tag = orig.tag().cloned();
    let mut spliced: Vec<Node> = Vec::with_capacity(root.len());
    let mut process = true;
    let mut merged = orig.merged();
    let mut key_name = orig.key_name().cloned();
    let mut replaced = orig.ann().replace;
    let mut redirect = orig.ann().redirect.clone();
    let mut nomerge = orig.flags().nomerge();
    let mut any_merge = false;

    for val in root.iter() {
        if let Some((inline, _)) = unresolved_list_entry_merge(val) {
            any_merge = true;
            if use_merge(&inline) {
                nomerge = true;
            }
        }
    }

    let mut has_key_tag = false;
    if env.control()
        && root
            .iter()
            .any(|v| matches!(v.value(), Value::Map(m) if m.keys().any(|k| k.starts_with("<<"))))
    {
        has_key_tag = true;
    }
    if !any_merge && !has_key_tag {
        // fast path: only key tags matter
        for val in root.iter() {
            if let Value::Map(m) = val.value()
                && m.keys()
                    .any(|k| k.find(':').is_some_and(|i| i > 0 && &k[..i] == "key"))
            {
                has_key_tag = true;
                break;
            }
        }
    }

    if any_merge || has_key_tag {
        for val in root.iter() {
            let mut val = val.clone();
            if let Some((inline_node, qual)) = unresolved_list_entry_merge(&val) {
                let initial = matches!(inline_node.value(), Value::Str(_));
                let mut result = flow_(&inline_node, env, false, false);
                if let Some(k) = result.key_name()
                    && !k.is_empty()
                {
                    key_name = Some(k.clone());
                }
                if let Value::Expr(e) = result.value().clone() {
                    if simple_merge_compatibility_check(initial, &inline_node) {
                        continue;
                    }
                    if let Some((list, expr)) = as_template(&e, template) {
                        flags |= marker_flags(&list);
                        if let Some(t) = marker_tag(&list) {
                            tag = Some(t.into());
                        }
                        if list.iter().any(|m| m == "&template") {
                            template = true;
                            process = false;
                            match template_expression(&list, &expr, orig) {
                                Some(r) => result = r,
                                None => continue,
                            }
                        }
                    }
                    let mut nm = Map::new();
                    nm.insert(qual.to_string(), result);
                    val = orig.replace_value(Value::map(nm));
                    process = false;
                } else {
                    let is_list = if let Value::List(inline) = result.value() {
                        merged = true;
                        let inline_new = new_entries(inline, root, key_name.as_deref());
                        replaced = result.ann().replace;
                        redirect = result.ann().redirect.clone();
                        if replaced {
                            spliced = inline_new;
                            process = false;
                            break;
                        }
                        spliced.extend(inline_new);
                        true
                    } else {
                        false
                    };
                    let is_dynaml = match result.value() {
                        Value::Str(s) => {
                            super::value::embedded_dynaml_ext(s, env.interpolation()).is_some()
                        }
                        _ => false,
                    };
                    if is_list || result.value().is_nil() || !is_dynaml {
                        redirect = result.ann().redirect.clone();
                        if result.merged() {
                            merged = true;
                        }
                        continue;
                    }
                }
            }
            let (v, new_key) = process_key_tag(&val);
            if let Some(k) = new_key {
                key_name = Some(k.into());
            }
            spliced.push(v);
        }
    } else {
        spliced = (**root).clone();
    }

    let result = if template {
        new_template_value(
            env.path(),
            Node::new(Value::list(spliced)),
            orig.clone(),
            env,
        )
    } else if !any_merge && !has_key_tag {
        Value::List(root.clone())
    } else {
        let mut processed = Vec::with_capacity(spliced.len());
        for val in spliced {
            if env.control() {
                match super::control::is_control(&val, env) {
                    Err(e) => {
                        processed.push(val.issue_node(true, true, Issue::new(e)));
                        continue;
                    }
                    Ok(false) => {
                        processed.push(val);
                        continue;
                    }
                    Ok(true) => {}
                }
                let v = flow_(&val, env, false, false);
                if let Value::List(a) = v.value() {
                    processed.extend(a.iter().cloned());
                    continue;
                }
                process = false;
                processed.push(v);
                continue;
            }
            processed.push(val);
        }
        Value::list(processed)
    };
    if nomerge {
        flags |= Flags(FLAG_NOMERGE);
    }
    Merges {
        result,
        process,
        replaced,
        redirect,
        key_name,
        merged,
        flags,
        tag,
        stub,
    }
}

/// `ProcessKeyTag`: `key:name` map keys in list entries name the list key.
fn process_key_tag(val: &Node) -> (Node, Option<String>) {
    let Value::Map(m) = val.value() else {
        return (val.clone(), None);
    };
    let mut key_name = String::new();
    let mut found = false;
    let mut no = false;
    for key in m.keys() {
        if let Some(split) = key.find(':')
            && split > 0
            && &key[..split] == "key"
        {
            if found {
                if key[split + 1..] != key_name {
                    key_name = NO_LIST_KEY.to_string();
                }
            } else {
                key_name = key[split + 1..].to_string();
                if let Some(k) = key_name.strip_prefix('!') {
                    no = true;
                    key_name = k.to_string();
                }
                found = true;
            }
        }
    }
    if !found {
        return (val.clone(), None);
    }
    let mut nm = Map::new();
    for (key, v) in m.iter() {
        let mut key = key.clone();
        if let Some(split) = key.find(':')
            && split > 0
            && &key[..split] == "key"
        {
            key = key[split + 1..].to_string();
            if let Some(k) = key.strip_prefix('!') {
                key = k.to_string();
            }
        }
        nm.insert(key, v.clone());
    }
    if no {
        key_name = NO_LIST_KEY.to_string();
    }
    (val.replace_value(Value::map(nm)), Some(key_name))
}

fn new_entries(a: &[Node], b: &Rc<Vec<Node>>, key_name: Option<&str>) -> Vec<Node> {
    let key = match key_name {
        Some(k) if !k.is_empty() => k,
        _ => "name",
    };
    let old = Node::new(Value::List(b.clone())).key_name_node(Some(key.into()));
    let mut added = Vec::new();
    for val in a {
        if let Some(name) = find_string_r(true, val, false, key)
            && find_r(true, &old, false, &[&*name]).is_some()
        {
            continue;
        }
        added.push(val.merged_node());
    }
    added
}

/// `stepName`: (step, keyed, resolved, unique)
fn step_name(
    index: usize,
    value: &Node,
    key_name: &str,
    env: &Env,
    unique: bool,
) -> (String, bool, bool, bool) {
    let key = if key_name.is_empty() {
        "name"
    } else {
        key_name
    };
    if !matches!(value.value(), Value::Map(_)) {
        return (format!("[{index}]"), false, true, false);
    }
    if unique && let Some(name) = find_string_r(false, value, env.control(), key) {
        return (format!("{key}:{name}"), true, true, true);
    }
    let step = format!("[{index}]");
    if let Some(v) = find_r(true, value, env.control(), &[key])
        && !v.value().is_nil()
    {
        let mut v = v;
        if v.is_expr() {
            v = flow(&v, &env.with_path(&step), false, false);
            if v.is_expr() {
                return (step, false, false, false);
            }
        }
        if let Value::Str(name) = v.value()
            && unique
        {
            return (format!("{key}:{name}"), true, true, true);
        }
    }
    (step, false, true, false)
}

// ------------------------------------------------------------------ the pass loop

/// `DefaultEnvironment.Flow`: processes a document until nothing changes any more.
pub(crate) fn env_flow(env: &Env, source: &Node, should_override: bool) -> (Node, Option<Status>) {
    let mut result = source.clone();
    let st = env.state().clone();
    let flow_env = match source.value() {
        Value::List(l) => env.with_list_scope(l.clone()),
        _ => env.clone(),
    };
    let mut passes = 0usize;
    loop {
        passes += 1;
        if passes > MAX_PASSES {
            st.limit_hit.set(true);
            break;
        }
        let next = flow(&result, &flow_env, should_override, false);
        if next.undefined() {
            result = Node::nil().undefined_node();
            break;
        }
        update_binding(&next, &flow_env, &next);
        if node_eq(&result, &next) {
            break;
        }
        result = next;
        if st.limit_hit.get() {
            break;
        }
    }
    deactivate_scopes(&result);
    let unresolved = find_unresolved(&result, &mut Vec::new());
    if unresolved.is_empty() {
        (result, None)
    } else {
        (result, Some(Status { nodes: unresolved }))
    }
}

/// After each pass, lambdas and templates see the new document (spiff's `updateBinding`).
fn update_binding(node: &Node, env: &Env, root: &Node) {
    if node.settled() {
        return;
    }
    match node.value() {
        Value::List(l) => {
            for n in l.iter() {
                update_binding(n, env, root);
            }
        }
        Value::Map(m) => {
            for n in m.values() {
                update_binding(n, env, root);
            }
        }
        Value::Lambda(l) => {
            if let Some(r) = &l.resolver {
                update_scopes(r, env, root);
            }
        }
        Value::Template(t) => {
            if let Some(r) = &t.resolver {
                update_scopes(r, env, root);
            }
        }
        _ => {}
    }
}

fn update_scopes(resolver: &Env, env: &Env, root: &Node) {
    if !resolver.active() {
        return;
    }
    let mut scope = resolver.scope().cloned();
    while let Some(s) = scope {
        let Some(path) = &s.path else { break };
        if let Some(r) = find_r(true, root, env.control(), path) {
            let new = match r.value() {
                Value::Map(m) => Some(m.clone()),
                _ => None,
            };
            s.local.replace(new);
            env.state()
                .updated_scopes
                .borrow_mut()
                .push(Rc::downgrade(&s));
        }
        scope = s.next.clone();
    }
}

fn deactivate_scopes(node: &Node) {
    if node.settled() {
        return;
    }
    match node.value() {
        Value::List(l) => l.iter().for_each(deactivate_scopes),
        Value::Map(m) => m.values().for_each(deactivate_scopes),
        Value::Lambda(l) => {
            if let Some(r) = &l.resolver {
                r.deactivate();
            }
        }
        Value::Template(t) => {
            if let Some(r) = &t.resolver {
                r.deactivate();
            }
        }
        _ => {}
    }
}

/// `FindUnresolvedNodes`
pub(crate) fn find_unresolved(root: &Node, context: &mut Vec<String>) -> Vec<Unresolved> {
    let mut nodes: Vec<Unresolved> = Vec::new();
    let mut found = false;
    match root.value() {
        Value::Map(m) => {
            for (k, v) in m.iter() {
                context.push(k.clone());
                nodes.extend(find_unresolved(v, context));
                context.pop();
            }
        }
        Value::List(l) => {
            for (i, v) in l.iter().enumerate() {
                context.push(format!("[{i}]"));
                nodes.extend(find_unresolved(v, context));
                context.pop();
            }
        }
        Value::Expr(e) => {
            let path = match &**e {
                Expr::Auto { path } => path.clone(),
                Expr::Merge { path, .. } => path.clone(),
                _ => effective_path(root, context),
            };
            nodes.push(Unresolved {
                node: root.clone(),
                context: context.clone(),
                path,
                parse_error: None,
            });
            found = true;
        }
        Value::Str(s) => {
            if let Some(sub) = embedded_dynaml(s)
                && let Err(err) = parse(sub, &["dummy".into()], &["dummy".into()])
            {
                nodes.push(Unresolved {
                    node: root.issue_node(true, false, Issue::new(err.clone())),
                    context: context.clone(),
                    path: Vec::new(),
                    parse_error: Some(err),
                });
                found = true;
            }
        }
        _ => {}
    }
    if root.failed() && !found {
        nodes.push(Unresolved {
            node: root.clone(),
            context: context.clone(),
            path: effective_path(root, context),
            parse_error: None,
        });
    }
    let mut result = Vec::with_capacity(nodes.len());
    for n in &nodes {
        if n.node.has_error() {
            result.push(n.clone());
        }
    }
    for n in &nodes {
        if !n.node.has_error() && !n.node.failed() {
            result.push(n.clone());
        }
    }
    for n in &nodes {
        if !n.node.has_error() && n.node.failed() {
            result.push(n.clone());
        }
    }
    result
}

fn effective_path(node: &Node, context: &[String]) -> Vec<String> {
    if let Some(orig) = node.issue().and_then(|i| i.orig_path.clone())
        && orig != context
    {
        if orig.len() > context.len() && orig[..context.len()] == *context {
            let mut p = vec!["..".to_string()];
            p.extend(orig[context.len()..].iter().cloned());
            return p;
        }
        return orig;
    }
    Vec::new()
}

// ------------------------------------------------------------------ cleanup and cascade

/// Removes list entries and map fields for which `drop` holds (recursively).
pub(crate) fn cleanup(node: &Node, drop: &dyn Fn(&Node) -> bool) -> Node {
    match node.value() {
        Value::List(l) => {
            let r: Vec<Node> = l
                .iter()
                .filter(|e| !drop(e))
                .map(|e| cleanup(e, drop))
                .collect();
            node.replace_value(Value::list(r))
        }
        Value::Map(m) => {
            let r: Map = m
                .iter()
                .filter(|(_, e)| !drop(e))
                .map(|(k, e)| (k.clone(), cleanup(e, drop)))
                .collect();
            node.replace_value(Value::map(r))
        }
        _ => node.clone(),
    }
}

/// `UnescapeDynaml` applied to the whole document.
pub(crate) fn unescape(node: &Node, interpolation: bool) -> Node {
    match node.value() {
        Value::Str(s) => {
            if s.len() >= 4 && s.starts_with("((") && s.ends_with("))") {
                if let Some(rest) = s[2..s.len() - 2].strip_prefix('!') {
                    return Node::new(Value::str(format!("(({rest}))")));
                }
                return node.clone();
            }
            if interpolation
                && let (Some(x), _) = super::value::convert_to_expression(s, true)
                && *x != **s
            {
                return Node::new(Value::str(x));
            }
            node.clone()
        }
        Value::List(l) => node.replace_value(Value::list(
            l.iter().map(|n| unescape(n, interpolation)).collect(),
        )),
        Value::Map(m) => {
            let mut r = Map::new();
            for (k, v) in m.iter() {
                let v = unescape(v, interpolation);
                let k = if let Some(rest) = k.strip_prefix("<<!") {
                    format!("<<{rest}")
                } else if let Some(rest) = k.strip_prefix("<<<!") {
                    format!("<<<{rest}")
                } else {
                    k.clone()
                };
                r.insert(k, v);
            }
            node.replace_value(Value::map(r))
        }
        _ => node.clone(),
    }
}

/// `NestedFlow`
pub(crate) fn nested_flow(outer: &Env, source: &Node, stubs: Vec<Node>) -> (Node, Option<Status>) {
    let env = Env::nested(outer, stubs);
    env_flow(&env, source, true)
}

/// `PrepareStubs`
pub(crate) fn prepare_stubs(
    outer: &Env,
    partial: bool,
    stubs: Vec<Node>,
) -> Result<Vec<Node>, Status> {
    let mut stubs = stubs;
    for i in (0..stubs.len()).rev() {
        super::tags::reset_stream(outer);
        let later = stubs[i + 1..].to_vec();
        let (flowed, err) = nested_flow(outer, &stubs[i], later);
        if !partial && let Some(e) = err {
            return Err(e);
        }
        stubs[i] = cleanup(&flowed, &|n| n.flags().local());
    }
    super::tags::reset_stream(outer);
    Ok(stubs)
}

/// `Apply`
pub(crate) fn apply(outer: &Env, template: &Node, prepared: Vec<Node>) -> Result<Node, Status> {
    let (result, err) = nested_flow(outer, template, prepared);
    if let Some(e) = err {
        return Err(e);
    }
    let result = cleanup(&result, &|n| n.flags().temporary() || n.flags().local());
    let result = unescape(&result, outer.interpolation());
    super::tags::push_document(outer, &result);
    Ok(result)
}

/// `Cascade`
pub(crate) fn cascade(
    outer: &Env,
    template: &Node,
    stubs: Vec<Node>,
    partial: bool,
) -> Result<Node, Status> {
    let prepared = prepare_stubs(outer, partial, stubs)?;
    apply(outer, template, prepared)
}

/// `DetermineState`: keeps the top-level nodes marked `&state`.
pub(crate) fn determine_state(node: &Node) -> Node {
    match node.value() {
        Value::List(l) => node.replace_value(Value::list(
            l.iter().filter(|n| n.flags().state()).cloned().collect(),
        )),
        Value::Map(m) => node.replace_value(Value::map(
            m.iter()
                .filter(|(_, n)| n.flags().state())
                .map(|(k, n)| (k.clone(), n.clone()))
                .collect(),
        )),
        _ => node.clone(),
    }
}

#[allow(dead_code)]
fn ann_default() -> Ann {
    Ann::default()
}
