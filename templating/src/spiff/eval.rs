//! Evaluation of dynaml expressions (spiff's `Expression.Evaluate`).
//!
//! An evaluation yields `(value, info, ok)`. `ok == false` is an error (described by
//! `info.issue`). A value that is itself an expression (`Value::Expr`) means "not yet
//! resolvable": the node keeps its expression and is retried in the next pass of the flow.

use std::rc::Rc;

use crate::budget;

use super::env::Env;
use super::expr::{Expr, MapCtx, Param, lambda_value_string, short_map, shorten};
use super::value::{
    Flags, Issue, LambdaValue, Map, Node, SELF, TemplateValue, Value, find_r,
    is_locally_resolved_value, is_resolved_value, to_bool,
};

/// A new string, list or map of a function or operator: within the render budget's bounds
/// for one value, and counted against its total of values built.
pub(crate) fn check_new(v: &Value) -> Result<(), budget::BudgetExceeded> {
    match v {
        Value::Str(s) => {
            budget::check_bytes(s.len())?;
            if Rc::strong_count(s) == 1 {
                budget::alloc(s.len() as u64)?;
            }
        }
        Value::List(l) => {
            budget::check_items(l.len() as u128)?;
            if Rc::strong_count(l) == 1 {
                budget::alloc(l.len() as u64 * budget::LIST_ITEM_BYTES)?;
            }
        }
        Value::Map(m) => {
            budget::check_items(m.len() as u128)?;
            if Rc::strong_count(m) == 1 {
                budget::alloc(m.len() as u64 * budget::MAP_ENTRY_BYTES)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// spiff's `EvaluationInfo`.
#[derive(Clone, Default)]
pub(crate) struct Info {
    pub redirect: Option<Rc<Vec<String>>>,
    pub replace: bool,
    pub merged: bool,
    pub preferred: bool,
    pub key_name: Option<Rc<str>>,
    pub local_error: bool,
    pub failed: bool,
    pub undefined: bool,
    pub raw: bool,
    pub issue: Issue,
    pub flags: Flags,
}

pub(crate) type Res = (Value, Info, bool);

impl Info {
    pub fn set_error(&mut self, msg: impl Into<String>) {
        self.local_error = true;
        self.issue = Issue::new(msg);
    }
    pub fn error(mut self, msg: impl Into<String>) -> Res {
        self.set_error(msg);
        (Value::Nil, self, false)
    }
    pub fn clean_error(mut self) -> Info {
        self.issue = Issue::default();
        self.local_error = false;
        self.failed = false;
        self.undefined = false;
        self
    }
    /// `Join`: merges `o` into `self`.
    pub fn join(mut self, o: &Info) -> Info {
        if o.redirect.is_some() {
            self.redirect = o.redirect.clone();
        }
        self.replace = o.replace;
        self.preferred = self.preferred || o.preferred;
        self.merged = self.merged || o.merged;
        if o.key_name.as_ref().is_some_and(|k| !k.is_empty()) {
            self.key_name = o.key_name.clone();
        }
        if !o.issue.msg.is_empty() {
            self.issue = o.issue.clone();
        }
        if o.local_error {
            self.local_error = true;
        }
        if o.failed {
            self.failed = true;
        }
        if o.undefined {
            self.undefined = true;
        }
        self.flags |= o.flags;
        self
    }
}

pub(crate) fn ok(v: Value) -> Res {
    (v, Info::default(), true)
}

pub(crate) fn fail(msg: impl Into<String>) -> Res {
    Info::default().error(msg)
}

/// Evaluates an expression.
pub(crate) fn eval(e: &Rc<Expr>, env: &Env, locally: bool) -> Res {
    let st = env.state();
    let steps = st.steps.get() + 1;
    st.steps.set(steps);
    if steps > st.max_steps {
        st.limit_hit.set(true);
        let e = budget::record(
            "max_steps",
            format!("evaluation exceeds the limit of {} steps", st.max_steps),
        );
        return fail(e.to_string());
    }
    if steps.is_multiple_of(1024)
        && let Err(e) = budget::check_time()
    {
        st.limit_hit.set(true);
        return fail(e.to_string());
    }
    let depth = st.depth.get();
    if depth >= st.max_depth {
        st.limit_hit.set(true);
        return fail("evaluation depth limit exceeded");
    }
    st.depth.set(depth + 1);
    let r = eval_inner(e, env, locally);
    st.depth.set(depth);
    r
}

/// `ResolveExpressionOrPushEvaluation`: an unresolved sub-result clears `resolved`.
pub(crate) fn resolve(
    e: &Rc<Expr>,
    resolved: &mut bool,
    info: Option<&Info>,
    env: &Env,
    locally: bool,
) -> Res {
    let (v, i, ok) = eval(e, env, locally);
    let i = match info {
        Some(base) => base.clone().join(&i),
        None => i,
    };
    if !ok {
        return (Value::Nil, i, false);
    }
    if v.is_expr() {
        *resolved = false;
        // the (possibly new) expression is kept for the push semantics (see `pushed`)
        return (v, i, true);
    }
    (v, i, true)
}

/// spiff's "push evaluation": an unresolved sub-expression that evaluated to another
/// expression replaces the original sub-expression in the returned (unresolved) expression.
pub(crate) fn pushed(e: &Rc<Expr>, pairs: &[(&Rc<Expr>, &Value)]) -> Rc<Expr> {
    let mut changed = false;
    let lookup = |c: &Rc<Expr>| -> Option<Rc<Expr>> {
        for (orig, v) in pairs {
            if Rc::ptr_eq(orig, c)
                && let Value::Expr(x) = v
                && !Rc::ptr_eq(x, c)
            {
                // KeepArgWrapper
                return Some(match &**c {
                    Expr::ListExpansion(_) if !x.is_list_expansion() => {
                        Rc::new(Expr::ListExpansion(x.clone()))
                    }
                    Expr::NameArg { name, .. } => Rc::new(Expr::NameArg {
                        name: name.clone(),
                        expr: x.clone(),
                    }),
                    _ => x.clone(),
                });
            }
        }
        None
    };
    let mut m = |c: &Rc<Expr>| -> Rc<Expr> {
        match lookup(c) {
            Some(x) => {
                changed = true;
                x
            }
            None => c.clone(),
        }
    };
    let n = match &**e {
        Expr::Add(a, b) => Expr::Add(m(a), m(b)),
        Expr::Sub(a, b) => Expr::Sub(m(a), m(b)),
        Expr::Mul(a, b) => Expr::Mul(m(a), m(b)),
        Expr::Div(a, b) => Expr::Div(m(a), m(b)),
        Expr::Mod(a, b) => Expr::Mod(m(a), m(b)),
        Expr::Concat(a, b) => Expr::Concat(m(a), m(b)),
        Expr::Comparison { a, op, b } => Expr::Comparison {
            a: m(a),
            op,
            b: m(b),
        },
        Expr::Not(a) => Expr::Not(m(a)),
        Expr::Cond { c, t, f } => Expr::Cond {
            c: m(c),
            t: t.clone(),
            f: f.clone(),
        },
        Expr::List(l) => Expr::List(l.iter().map(&mut m).collect()),
        Expr::Call { func, args, curry } => Expr::Call {
            func: m(func),
            args: args.iter().map(&mut m).collect(),
            curry: *curry,
        },
        Expr::Mapping { a, lambda, ctx } => Expr::Mapping {
            a: m(a),
            lambda: m(lambda),
            ctx: *ctx,
        },
        Expr::Sum { a, init, lambda } => Expr::Sum {
            a: m(a),
            init: m(init),
            lambda: m(lambda),
        },
        Expr::Catch { a, lambda } => Expr::Catch {
            a: m(a),
            lambda: lambda.as_ref().map(&mut m),
        },
        _ => return e.clone(),
    };
    if changed { Rc::new(n) } else { e.clone() }
}

/// `ResolveExpressionListOrPushEvaluation`
pub(crate) fn resolve_list(
    list: &[Rc<Expr>],
    resolved: &mut bool,
    env: &Env,
    locally: bool,
) -> (Vec<Value>, Info, bool) {
    let mut values = Vec::with_capacity(list.len());
    let mut info: Option<Info> = None;
    let mut expand = false;
    for e in list {
        let (v, i, ok) = resolve(e, resolved, info.as_ref(), env, locally);
        expand = expand || e.is_list_expansion();
        if !ok {
            return (Vec::new(), i, false);
        }
        values.push(v);
        info = Some(i);
    }
    let info = info.unwrap_or_default();
    if expand && *resolved {
        let mut out = Vec::new();
        for (e, v) in list.iter().zip(values) {
            if e.is_list_expansion() {
                match v {
                    Value::List(l) => out.extend(l.iter().map(|n| n.value().clone())),
                    _ => {
                        let (_, i, ok) = info.error("argument expansion required list argument");
                        return (Vec::new(), i, ok);
                    }
                }
            } else {
                out.push(v);
            }
        }
        return (out, info, true);
    }
    (values, info, true)
}

fn resolve_int(
    e: &Rc<Expr>,
    resolved: &mut bool,
    info: Option<&Info>,
    env: &Env,
) -> (i64, Info, bool) {
    let (v, mut i, ok) = resolve(e, resolved, info, env, false);
    match v {
        Value::Nil | Value::Expr(_) => (0, i, ok),
        Value::Int(n) => (n, i, true),
        _ => {
            i.issue = Issue::new("integer operand required");
            (0, i, false)
        }
    }
}

fn unresolved(e: &Rc<Expr>, info: Info) -> Res {
    (Value::Expr(e.clone()), info, true)
}

fn eval_inner(e: &Rc<Expr>, env: &Env, locally: bool) -> Res {
    let control = env.control();
    match &**e {
        Expr::Nil => ok(Value::Nil),
        Expr::Undefined => {
            let info = Info {
                undefined: true,
                ..Default::default()
            };
            (Value::Nil, info, true)
        }
        Expr::Bool(b) => ok(Value::Bool(*b)),
        Expr::Int(i) => ok(Value::Int(*i)),
        Expr::Float(f) => ok(Value::Float(*f)),
        Expr::Str(s) => ok(Value::str(s.as_str())),
        Expr::Value(v) => ok(v.clone()),
        Expr::Reference { tag, path } => eval_reference(e, tag, path, env, locally),
        Expr::Qualified { expr, path } => {
            let (root, info, okk) = eval(expr, env, locally);
            if !okk {
                return (Value::Nil, info, false);
            }
            let locally = locally || info.raw;
            if !is_locally_resolved_value(&root, control) {
                if let Value::Expr(ex) = &root
                    && !Rc::ptr_eq(ex, expr)
                {
                    let q = Rc::new(Expr::Qualified {
                        expr: ex.clone(),
                        path: path.clone(),
                    });
                    return unresolved(&q, info);
                }
                return unresolved(e, info);
            }
            if !locally && !is_resolved_value(&root, control) {
                return unresolved(e, info);
            }
            let rn = Node::new(root);
            find(e, path, env, locally, |end| {
                find_r(false, &rn, control, &path[..=end])
            })
        }
        Expr::Dynamic { root, index } => eval_dynamic(e, root, index, env, locally),
        Expr::Slice { expr, start, end } => {
            let (root, mut info, okk) = eval(expr, env, locally);
            if !okk {
                return (Value::Nil, info, false);
            }
            if !is_locally_resolved_value(&root, control)
                || (!locally && !is_resolved_value(&root, control))
            {
                return unresolved(e, info);
            }
            let Value::List(array) = root else {
                return info.error("slice requires array expression");
            };
            let (s, en, infoe, okk, resolved) = get_range(start, end, env, array.len() as i64);
            info = info.join(&infoe);
            if !okk {
                return (Value::Nil, info, false);
            }
            if !resolved {
                return unresolved(e, info);
            }
            if s > en {
                return (Value::list(Vec::new()), info, true);
            }
            let len = array.len() as i64;
            if s < 0 {
                if en >= 0 {
                    return info
                        .error("mixed negative and non-negative range not possible for slice");
                }
                if s < -len {
                    return info.error(format!("slice out of range ({s} < -length {len})"));
                }
                let r = (s..=en)
                    .map(|i| array[(i + len) as usize].clone())
                    .collect();
                (Value::list(r), info, true)
            } else {
                if en >= len {
                    return info.error(format!("slice out of range ({en} >= length {len})"));
                }
                let r = (s..=en).map(|i| array[i as usize].clone()).collect();
                (Value::list(r), info, true)
            }
        }
        Expr::Range { start, end } => {
            let (s, en, info, okk, resolved) = get_range(start, end, env, -1);
            if !okk {
                return (Value::Nil, info, false);
            }
            if !resolved {
                return unresolved(e, info);
            }
            let delta = if s > en { -1 } else { 1 };
            let n = (i128::from(en) - i128::from(s)).unsigned_abs() + 1;
            if let Err(e) = budget::check_items(n).and_then(|()| budget::charge(n as u64)) {
                return info.error(e.to_string());
            }
            let mut nodes = Vec::new();
            let mut i = s;
            while i * delta <= en * delta {
                nodes.push(Node::new(Value::Int(i)));
                i += delta;
            }
            (Value::list(nodes), info, true)
        }
        Expr::Projection { expr, cell, qual } => {
            let mut resolved = true;
            let (value, infoa, okk) = resolve(expr, &mut resolved, None, env, false);
            if !okk {
                return (Value::Nil, infoa, false);
            }
            if !resolved {
                return (Value::Expr(e.clone()), infoa, false);
            }
            let entries: Vec<Node> = match &value {
                Value::List(l) => {
                    if matches!(&**qual, Expr::ProjectionValue(_)) {
                        return (value.clone(), infoa, true);
                    }
                    l.iter().cloned().collect()
                }
                Value::Map(m) => m.values().cloned().collect(),
                _ => return infoa.error("only map or list allowed for projection"),
            };
            let mut out = Vec::with_capacity(entries.len());
            for entry in entries {
                cell.replace(entry.value().clone());
                let (r, _, okk) = eval(qual, env, locally);
                cell.replace(Value::Nil);
                if !okk {
                    return (Value::Nil, infoa, false);
                }
                out.push(Node::new(r));
            }
            (Value::list(out), infoa, true)
        }
        Expr::ProjectionValue(cell) => ok(cell.borrow().clone()),
        Expr::Call { func, args, curry } => {
            super::call::eval_call(e, func, args, *curry, env, locally)
        }
        Expr::NameArg { expr, .. } => eval(expr, env, locally),
        Expr::ListExpansion(x) => eval(x, env, locally),
        Expr::List(items) => {
            let mut resolved = true;
            let (values, info, okk) = resolve_list(items, &mut resolved, env, false);
            if !okk {
                return (Value::Nil, info, false);
            }
            if !resolved {
                let pairs: Vec<(&Rc<Expr>, &Value)> = items.iter().zip(values.iter()).collect();
                return unresolved(&pushed(e, &pairs), info);
            }
            let nodes = values.into_iter().map(Node::new).collect();
            (Value::list(nodes), info, true)
        }
        Expr::CreateMap(assignments) => match create_map(assignments, env, locally) {
            Ok(Some(m)) => ok(Value::map(m)),
            Ok(None) => unresolved(e, Info::default()),
            Err((v, i, o)) => {
                if o {
                    unresolved(e, i)
                } else {
                    (v, i, o)
                }
            }
        },
        Expr::Scope { assignments, expr } => match create_map(assignments, env, locally) {
            Ok(Some(m)) => {
                let env2 = env.with_local_scope(m);
                let (v, i, okk) = eval(expr, &env2, locally);
                if okk && v.is_expr() {
                    return unresolved(e, i);
                }
                (v, i, okk)
            }
            Ok(None) => unresolved(e, Info::default()),
            Err((v, i, o)) => {
                if o {
                    unresolved(e, i)
                } else {
                    (v, i, o)
                }
            }
        },
        Expr::Grouped(x) => eval(x, env, locally),
        Expr::MarkerExpression { expr, .. } => eval(expr, env, locally),
        Expr::Prefer(x) => {
            let (v, mut i, o) = eval(x, env, locally);
            i.preferred = true;
            (v, i, o)
        }
        Expr::Not(x) => {
            let mut resolved = true;
            let (v, info, okk) = resolve(x, &mut resolved, None, env, false);
            if !okk {
                return (Value::Nil, info, false);
            }
            if !resolved {
                return unresolved(&pushed(e, &[(x, &v)]), info);
            }
            (Value::Bool(!to_bool(&v)), info, true)
        }
        Expr::Cond { c, t, f } => {
            let mut resolved = true;
            let (a, info, okk) = resolve(c, &mut resolved, Some(&Info::default()), env, false);
            if !okk {
                return (Value::Nil, info, false);
            }
            if !resolved {
                return unresolved(&pushed(e, &[(c, &a)]), info);
            }
            let (r, ic, okk) = if to_bool(&a) {
                eval(t, env, false)
            } else {
                eval(f, env, false)
            };
            (r, ic.join(&info), okk)
        }
        Expr::Or(a, b) => {
            let (va, infoa, okk) = eval(a, env, false);
            if okk && !infoa.undefined {
                if let Value::Expr(x) = &va {
                    let _ = x;
                    return unresolved(e, infoa);
                }
                return (va, infoa, true);
            }
            let (vb, infob, okk) = eval(b, env, false);
            let mut info = infoa.clean_error().join(&infob);
            info.undefined = infob.undefined;
            (vb, info, okk)
        }
        Expr::ValidOr(a, b) => {
            let (va, infoa, okk) = eval(a, env, false);
            if okk {
                if let Value::Expr(x) = &va
                    && Rc::ptr_eq(x, a)
                {
                    return (Value::Nil, infoa, false);
                }
                if va.is_expr() {
                    return unresolved(e, infoa);
                }
                if !va.is_nil() {
                    return (va, infoa, true);
                }
            }
            let (vb, infob, okk) = eval(b, env, false);
            let mut info = infoa.join(&infob);
            info.undefined = infob.undefined;
            (vb, info, okk)
        }
        Expr::LogOr(a, b) | Expr::LogAnd(a, b) => {
            let is_or = matches!(&**e, Expr::LogOr(..));
            let (va, infoa, first_ok) = eval(a, env, false);
            if !first_ok {
                return (Value::Nil, infoa, false);
            }
            if va.is_expr() {
                return unresolved(e, infoa);
            }
            let (vb, infob, all_ok) = eval(b, env, false);
            let info = infoa.join(&infob);
            if all_ok && vb.is_expr() {
                return unresolved(e, info);
            }
            if all_ok && let (Value::Int(x), Value::Int(y)) = (&va, &vb) {
                return (Value::Int(if is_or { x | y } else { x & y }), info, true);
            }
            if !all_ok && matches!(va, Value::Int(_)) {
                return (Value::Nil, info, false);
            }
            let ab = to_bool(&va);
            if is_or && ab {
                return (Value::Bool(true), info, true);
            }
            if !is_or && !ab {
                return (Value::Bool(false), info, true);
            }
            if !all_ok {
                return (Value::Nil, info, false);
            }
            (Value::Bool(to_bool(&vb)), info, true)
        }
        Expr::Comparison { a, op, b } => {
            let mut resolved = true;
            let (va, info, okk) = resolve(a, &mut resolved, None, env, false);
            if !okk {
                return (Value::Nil, info, false);
            }
            let (vb, info, okk) = resolve(b, &mut resolved, Some(&info), env, false);
            if !okk {
                return (Value::Nil, info, false);
            }
            if !resolved {
                return unresolved(&pushed(e, &[(a, &va), (b, &vb)]), info);
            }
            let (result, infor, okk) = match *op {
                "==" => compare_equals(&va, &vb),
                "!=" => {
                    let (r, i, o) = compare_equals(&va, &vb);
                    (!r, i, o)
                }
                _ => {
                    let ord = match (&va, &vb) {
                        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
                        (Value::Int(_), _) => {
                            return Info::default()
                                .error(format!("comparision {op} only for integers or strings"));
                        }
                        (Value::Str(x), Value::Str(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
                        (Value::Str(_), _) => {
                            return Info::default()
                                .error(format!("comparision {op} only for strings or integers"));
                        }
                        _ => None,
                    };
                    let r = match ord {
                        None => false,
                        Some(o) => match *op {
                            "<=" => o.is_le(),
                            "<" => o.is_lt(),
                            ">" => o.is_gt(),
                            _ => o.is_ge(),
                        },
                    };
                    (r, Info::default(), true)
                }
            };
            let infor = info.join(&infor);
            if !okk {
                return (Value::Nil, infor, false);
            }
            (Value::Bool(result), infor, true)
        }
        Expr::Concat(a, b) => {
            let mut resolved = true;
            let (va, infoa, okk) = resolve(a, &mut resolved, None, env, false);
            if !okk {
                return (Value::Nil, infoa, false);
            }
            let (vb, info, okk) = resolve(b, &mut resolved, Some(&infoa), env, false);
            if !okk {
                return (Value::Nil, info, false);
            }
            if !resolved {
                return unresolved(&pushed(e, &[(a, &va), (b, &vb)]), info);
            }
            if let (Value::Str(x), Value::Str(y)) = (&va, &vb)
                && let Err(e) = budget::check_bytes(x.len() + y.len())
            {
                // Before the concatenation is built.
                return info.error(e.to_string());
            }
            if let Some(s) = concatenate_string(&va, &vb) {
                let v = Value::str(s);
                if let Err(e) = check_new(&v) {
                    return info.error(e.to_string());
                }
                return (v, info, true);
            }
            match &va {
                Value::List(al) => {
                    if let Err(e) = budget::check_items((al.len() + vb.as_list_len()) as u128)
                        .and_then(|()| {
                            budget::alloc(
                                (al.len() + vb.as_list_len()) as u64 * budget::LIST_ITEM_BYTES,
                            )
                        })
                    {
                        return info.error(e.to_string());
                    }
                    let mut l = (**al).clone();
                    match vb {
                        Value::List(bl) => l.extend(bl.iter().cloned()),
                        Value::Nil => return (va.clone(), info, true),
                        other => l.push(Node::new(other)),
                    }
                    (Value::list(l), info, true)
                }
                Value::Map(am) => match &vb {
                    Value::Map(bm) => {
                        let mut m = (**am).clone();
                        for (k, v) in bm.iter() {
                            m.insert(k.clone(), v.clone());
                        }
                        (Value::map(m), info, true)
                    }
                    Value::Nil => (va.clone(), info, true),
                    _ => info.error(format!(
                        "type '{}'({}) cannot be concatenated with type '{}'({})",
                        vb.type_name(),
                        b,
                        va.type_name(),
                        a
                    )),
                },
                _ => info.error(format!(
                    "type '{}'({}) cannot be concatenated with type '{}'({})",
                    vb.type_name(),
                    b,
                    va.type_name(),
                    a
                )),
            }
        }
        Expr::Add(a, b) | Expr::Sub(a, b) | Expr::Mul(a, b) | Expr::Div(a, b) => {
            let mut resolved = true;
            let (va, info, okk) = resolve(a, &mut resolved, None, env, false);
            if !okk {
                return (Value::Nil, info, false);
            }
            let (vb, info, okk) = resolve(b, &mut resolved, Some(&info), env, false);
            if !okk {
                return (Value::Nil, info, false);
            }
            if !resolved {
                return unresolved(&pushed(e, &[(a, &va), (b, &vb)]), info);
            }
            super::arith::arith(e, va, vb, info)
        }
        Expr::Mod(a, b) => {
            let mut resolved = true;
            let (x, info, okk) = resolve_int(a, &mut resolved, None, env);
            if !okk {
                return (Value::Nil, info, false);
            }
            let (y, info, okk) = resolve_int(b, &mut resolved, Some(&info), env);
            if !okk {
                return (Value::Nil, info, false);
            }
            if !resolved {
                return unresolved(e, info);
            }
            if y == 0 {
                return info.error("division by zero");
            }
            (Value::Int(x.wrapping_rem(y)), info, true)
        }
        Expr::Substitution(t) => eval_substitution(e, t, env),
        Expr::Lambda {
            params,
            varargs,
            body,
        } => eval_lambda_expr(e, params, *varargs, body, env, locally),
        Expr::LambdaRef {
            source,
            path,
            stub_path,
        } => {
            let mut resolved = true;
            let (value, info, okk) = resolve(source, &mut resolved, None, env, false);
            if !okk {
                return (Value::Nil, info, false);
            }
            if !resolved {
                return (Value::Expr(e.clone()), info, false);
            }
            match value {
                Value::Lambda(l) => (Value::Lambda(l), info, true),
                Value::Str(s) => {
                    let expr = match super::parser::parse(&s, path, stub_path) {
                        Ok(x) => x,
                        Err(err) => {
                            return info.error(format!("cannot parse lamba expression '{err}'"));
                        }
                    };
                    if !matches!(&*expr, Expr::Lambda { .. }) {
                        return info.error(format!("'{s}' is no lambda expression"));
                    }
                    eval(&expr, env, locally)
                }
                _ => info.error("lambda reference must resolve to lambda value or string"),
            }
        }
        Expr::Mapping { a, lambda, ctx } => eval_mapping(e, a, lambda, *ctx, env),
        Expr::Sum { a, init, lambda } => eval_sum(e, a, init, lambda, env),
        Expr::Catch { a, lambda } => eval_catch(e, a, lambda.as_ref(), env),
        Expr::Merge {
            path,
            redirect,
            replace,
            none,
            key_name,
            ..
        } => {
            let mut info = Info::default();
            if !key_name.is_empty() {
                info.key_name = Some(key_name.as_str().into());
            }
            if *redirect {
                info.redirect = Some(Rc::new(path.clone()));
            }
            if *none {
                info.merged = true;
                return (Value::Nil, info, true);
            }
            match env.find_in_stubs(path) {
                Some(node) => {
                    info.replace = *replace;
                    info.merged = true;
                    info.flags = node.flags();
                    (node.value().clone(), info, true)
                }
                None => info.error(format!("'{}' not found in any stub", path.join("."))),
            }
        }
        Expr::Auto { path } => super::funcs_ext::auto(e, path, env),
        Expr::Marker { list, expr } => {
            if list.iter().any(|m| m == "&template") {
                let info = Info {
                    issue: Issue::new("&template only usable as marker for templates"),
                    ..Default::default()
                };
                return (Value::Nil, info, false);
            }
            let flags = marker_flags(list);
            match expr {
                Some(x) => {
                    let (v, i, o) = eval(x, env, locally);
                    let mut i = i;
                    i.flags |= flags;
                    (v, i, o)
                }
                None => {
                    let info = Info {
                        flags,
                        ..Default::default()
                    };
                    (Value::Nil, info, true)
                }
            }
        }
    }
}

pub(crate) fn marker_flags(list: &[String]) -> Flags {
    use super::value::*;
    let mut f = 0;
    for m in list {
        f |= match m.as_str() {
            "&temporary" => FLAG_TEMPORARY,
            "&local" => FLAG_LOCAL,
            "&inject" => FLAG_INJECT,
            "&default" => FLAG_DEFAULT,
            "&state" => FLAG_STATE,
            "&dynamic" => FLAG_DYNAMIC,
            _ => 0,
        };
    }
    Flags(f)
}

pub(crate) fn marker_tag(list: &[String]) -> Option<String> {
    list.iter()
        .find_map(|m| m.strip_prefix("&tag:").map(|s| s.to_string()))
}

#[allow(clippy::type_complexity, clippy::result_large_err)]
fn create_map(
    assignments: &[(Rc<Expr>, Rc<Expr>)],
    env: &Env,
    locally: bool,
) -> Result<Option<Map>, Res> {
    let mut m = Map::new();
    let mut resolved = true;
    let mut info = Info::default();
    for (k, v) in assignments {
        let (key, i, okk) = resolve(k, &mut resolved, Some(&info), env, locally);
        info = i;
        if !okk {
            return Err((Value::Nil, info, false));
        }
        if !resolved {
            return Ok(None);
        }
        let Value::Str(ks) = key else {
            return Err(info.error("assignment target must evaluate to string"));
        };
        let (val, i, okk) = resolve(v, &mut resolved, Some(&info), env, locally);
        info = i;
        if !okk {
            return Err((Value::Nil, info, false));
        }
        if !resolved {
            return Ok(None);
        }
        m.insert(ks.to_string(), Node::new(val));
    }
    Ok(Some(m))
}

fn get_range(
    start: &Option<Rc<Expr>>,
    end: &Option<Rc<Expr>>,
    env: &Env,
    size: i64,
) -> (i64, i64, Info, bool, bool) {
    let mut resolved = true;
    let info = Info::default();
    if size < 0 && (start.is_none() || end.is_none()) {
        let mut i = info;
        i.set_error("range expression requires start and end index");
        return (0, 0, i, false, resolved);
    }
    let mut rs = 0;
    let mut re = size - 1;
    if let Some(s) = start {
        let (v, i, okk) = resolve_int(s, &mut resolved, Some(&info), env);
        if !okk {
            return (0, 0, i, false, resolved);
        }
        rs = v;
        if v < 0 && end.is_none() {
            re = -1;
        }
    }
    if let Some(en) = end {
        let (v, i, okk) = resolve_int(en, &mut resolved, Some(&info), env);
        if !okk {
            return (0, 0, i, false, resolved);
        }
        re = v;
        if v < 0 && start.is_none() {
            rs = -size;
        }
    }
    if start.is_none() && end.is_none() {
        let mut i = info;
        i.set_error("slice operator requires start or end index");
        return (0, 0, i, false, resolved);
    }
    (rs, re, info, true, resolved)
}

fn eval_reference(e: &Rc<Expr>, tag: &str, path: &[String], env: &Env, locally: bool) -> Res {
    let control = env.control();
    let mut from_root = path[0].is_empty();
    if !tag.is_empty() {
        if tag != "doc:0" && tag != "doc.0" {
            let tags = super::tags::get_tags(env, tag);
            if tags.is_empty() {
                return fail(format!("tag '{tag}' not found"));
            }
            if path.len() == 1 && path[0].is_empty() {
                if tags.len() == 1 || tags[0].name == tag {
                    return ok(tags[0].node.value().clone());
                }
                let names: Vec<_> = tags.iter().map(|t| t.name.clone()).collect();
                return fail(format!(
                    "found multiple tags for '{tag}': {}",
                    names.join(", ")
                ));
            }
            let mut val = Value::Nil;
            let mut info = Info::default();
            let mut found: Option<&super::env::TagInfo> = None;
            for t in tags.iter() {
                if let Some(f) = found
                    && f.level() < t.level()
                {
                    break;
                }
                let tn = t.node.clone();
                let (v1, i1, ok1) = find(e, path, env, locally, |end| {
                    find_r(false, &tn, control, &path[..=end])
                });
                if ok1 {
                    if t.name == tag {
                        return (v1, i1, ok1);
                    }
                    if let Some(f) = found
                        && f.level() == t.level()
                    {
                        return fail(format!(
                            "ambigious tag resolution for {e}: {} <-> {}",
                            f.name, t.name
                        ));
                    }
                    found = Some(t);
                    val = v1;
                    info = i1;
                }
            }
            let okf = found.is_some();
            return (val, info, okf);
        }
        if path.len() == 1 && path[0].is_empty() {
            return fail("no reference to actual document possible");
        }
        from_root = true;
    }
    if from_root {
        let start = if path[0].is_empty() { 1 } else { 0 };
        find(e, path, env, locally, |end| {
            if end + 1 < start {
                env.find_from_root(&[])
            } else {
                env.find_from_root(&path[start..=end])
            }
        })
    } else {
        find(e, path, env, locally, |end| {
            env.find_reference(&path[..=end])
        })
    }
}

/// `ReferenceExpr.find`
fn find(
    e: &Rc<Expr>,
    path: &[String],
    env: &Env,
    locally: bool,
    f: impl Fn(usize) -> Option<Node>,
) -> Res {
    let control = env.control();
    let mut info = Info::default();
    let mut step = None;
    for i in 0..path.len() {
        let Some(s) = f(i) else {
            return info.error(format!("'{}' not found", path[..=i].join(".")));
        };
        if !is_locally_resolved_value(s.value(), control) {
            info.issue = if s.is_expr() {
                Issue::new(format!("'{}' unresolved", path[..=i].join(".")))
            } else {
                Issue::new(format!("'{}' not complete", path[..=i].join(".")))
            };
            info.failed = s.failed() || s.has_error();
            return unresolved(e, info);
        }
        step = Some(s);
    }
    let step = match step {
        Some(s) => s,
        None => return info.error("empty reference"),
    };
    if !locally && !is_resolved_value(step.value(), control) {
        info.issue = Issue::new(format!("'{}' unresolved", e));
        info.failed = step.failed() || step.has_error();
        return unresolved(e, info);
    }
    info.key_name = step.key_name().cloned();
    (step.value().clone(), info, true)
}

fn eval_dynamic(e: &Rc<Expr>, root: &Rc<Expr>, index: &Rc<Expr>, env: &Env, locally: bool) -> Res {
    let control = env.control();
    let is_ref = matches!(&**root, Expr::Reference { .. });
    let (rv, info, okk) = eval(root, env, locally || is_ref);
    if !okk {
        return (Value::Nil, info, false);
    }
    if !is_locally_resolved_value(&rv, control) {
        return unresolved(e, info);
    }
    let locally = locally || info.raw;
    let (dyn_, infoe, okk) = eval(index, env, locally);
    let info = info.join(&infoe);
    if !okk {
        return (Value::Nil, info, false);
    }
    if !is_resolved_value(&dyn_, control) {
        return unresolved(e, info);
    }
    let mut dyn_ = dyn_;
    if let Value::List(a) = &dyn_
        && a.len() == 1
    {
        dyn_ = a[0].value().clone();
    }
    let qual: Vec<String> = match &dyn_ {
        Value::Int(v) => {
            if !matches!(rv, Value::List(_)) {
                return info.error("index requires array expression");
            }
            vec![format!("[{v}]")]
        }
        Value::Str(s) => vec![s.to_string()],
        Value::List(v) => {
            if v.is_empty() {
                return info
                    .error("at least one index or field name required for reference qualifier");
            }
            let mut q = Vec::new();
            for n in v.iter() {
                match n.value() {
                    Value::Int(i) => q.push(format!("[{i}]")),
                    Value::Str(s) => q.push(s.to_string()),
                    _ => return info.error("index or field name required for reference qualifier"),
                }
            }
            q
        }
        _ => return info.error("index or field name required for reference qualifier"),
    };
    let rn = Node::new(rv);
    let (t, info, okk) = find(e, &qual, env, true, |end| {
        find_r(false, &rn, control, &qual[..=end])
    });
    if !okk {
        return (Value::Nil, info, false);
    }
    if is_resolved_value(&t, control) {
        return (t, info, true);
    }
    unresolved(e, info)
}

/// `compareEquals`
pub(crate) fn compare_equals(a: &Value, b: &Value) -> (bool, Info, bool) {
    let info = Info::default();
    match (a, b) {
        (Value::Nil, Value::Nil) => return (true, info, true),
        (Value::Nil, _) | (_, Value::Nil) => return (false, info, false),
        _ => {}
    }
    match a {
        Value::Str(va) => {
            let vb: String = match b {
                Value::Str(s) => s.to_string(),
                Value::Int(i) => i.to_string(),
                Value::Lambda(l) => lambda_value_string(l),
                Value::Bool(x) => x.to_string(),
                _ => {
                    let mut i = info;
                    i.issue = Issue::new("types uncomparable");
                    return (false, i, false);
                }
            };
            (**va == *vb, info, true)
        }
        Value::Int(va) => {
            let vb = match b {
                Value::Str(s) => match super::functions::go_parse_int(s) {
                    Some(x) => x,
                    None => return (false, info, true),
                },
                Value::Int(x) => *x,
                Value::Bool(x) => *x as i64,
                _ => return (false, info, true),
            };
            (*va == vb, info, true)
        }
        Value::Bool(va) => {
            let vb = match b {
                Value::Bool(x) => *x,
                Value::Str(s) => match go_parse_bool(&s.to_lowercase()) {
                    Some(x) => x,
                    None => return (false, info, true),
                },
                _ => return (false, info, true),
            };
            (*va == vb, info, true)
        }
        Value::Template(ta) => match b {
            Value::Template(tb) => (super::value::node_eq(&ta.orig, &tb.orig), info, true),
            _ => (false, info, true),
        },
        Value::Lambda(la) => match b {
            Value::Lambda(lb) => (
                Rc::ptr_eq(la, lb) || lambda_value_string(la) == lambda_value_string(lb),
                info,
                true,
            ),
            _ => (false, info, true),
        },
        Value::List(va) => {
            let Value::List(vb) = b else {
                return (false, info, true);
            };
            if va.len() != vb.len() {
                return (false, info, true);
            }
            for (x, y) in va.iter().zip(vb.iter()) {
                let (r, i, _) = compare_equals(x.value(), y.value());
                if !r {
                    return (false, i, true);
                }
            }
            (true, info, true)
        }
        Value::Map(va) => {
            let Value::Map(vb) = b else {
                return (false, info, true);
            };
            if va.len() != vb.len() {
                return (false, info, true);
            }
            for (k, v) in vb.iter() {
                match va.get(k) {
                    Some(x) => {
                        let (r, i, _) = compare_equals(x.value(), v.value());
                        if !r {
                            return (false, i, true);
                        }
                    }
                    None => return (false, info, true),
                }
            }
            (true, info, true)
        }
        _ => (false, info, true),
    }
}

/// Go's `strconv.ParseBool`
pub(crate) fn go_parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// `concatenateString`
fn concatenate_string(a: &Value, b: &Value) -> Option<String> {
    let mut s = match a {
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    match b {
        Value::Str(x) => s.push_str(x),
        Value::Int(i) => s.push_str(&i.to_string()),
        Value::Bool(x) => s.push_str(&x.to_string()),
        Value::Lambda(l) => s.push_str(&lambda_value_string(l)),
        _ => return None,
    }
    Some(s)
}

// ------------------------------------------------------------------ lambdas

/// `staticScope`
fn static_scope(env: &Env) -> Env {
    if let Some(s) = env.find_reference(&[SELF.to_string()])
        && let Some(r) = s.resolver()
    {
        return r.clone();
    }
    env.clone()
}

fn eval_lambda_expr(
    e: &Rc<Expr>,
    params: &[Param],
    varargs: bool,
    body: &Rc<Expr>,
    env: &Env,
    locally: bool,
) -> Res {
    let _ = e;
    let mut out = Vec::with_capacity(params.len());
    for (i, p) in params.iter().enumerate() {
        match &p.default {
            Some(d) => {
                let (v, info, okk) = eval(d, env, locally);
                if !okk {
                    let nested = info.issue.clone();
                    let mut info = info;
                    info.set_error(format!(
                        "evaluation of lambda call default argument {i} failed: {e}: {d}"
                    ));
                    info.issue.nested.push(nested);
                    info.issue.sequence = true;
                    return (Value::Nil, info, false);
                }
                out.push(Param {
                    name: p.name.clone(),
                    default: Some(Rc::new(Expr::Value(v))),
                });
            }
            None => out.push(p.clone()),
        }
    }
    let lv = LambdaValue {
        params: out,
        varargs,
        body: body.clone(),
        static_: env.static_binding().clone(),
        resolver: Some(static_scope(env)),
    };
    ok(Value::Lambda(Rc::new(lv)))
}

/// `LambdaValue.Evaluate`: returns (resolved, value, info, ok).
#[allow(clippy::too_many_arguments)]
pub(crate) fn call_lambda(
    lv: &Rc<LambdaValue>,
    inline: bool,
    curry: bool,
    autocurry: bool,
    nargs: &Map,
    args: Vec<Value>,
    env: &Env,
    locally: bool,
) -> (bool, Value, Info, bool) {
    let mut info = Info::default();
    let nparams = lv.params.len();
    let mut required = nparams;

    let mut named = Map::new();
    for (n, v) in nargs.iter() {
        let mut n = n.clone();
        if let Ok(i) = n.parse::<i64>() {
            let i = i - 1;
            if i < 0 {
                info.issue = Issue::new(format!("invalid argument index {}", i + 1));
                return (false, Value::Nil, info, false);
            }
            if i as usize >= nparams {
                info.issue = Issue::new(format!(
                    "argument index {} too large for {} parameters",
                    i + 1,
                    nparams
                ));
                return (false, Value::Nil, info, false);
            }
            n = lv.params[i as usize].name.clone();
        }
        if named.contains_key(&n) {
            info.issue = Issue::new(format!("named argument {n} given by name and index"));
            return (false, Value::Nil, info, false);
        }
        named.insert(n, v.clone());
    }

    let mut args = args;
    if lv.varargs {
        required = required.saturating_sub(1);
        if args.len() > required {
            let rest: Vec<Node> = args.drain(required..).map(Node::new).collect();
            args.push(Value::list(rest));
        }
    }
    if args.len() > nparams {
        info.issue = Issue::new(format!(
            "found {} argument(s), but expects {}",
            args.len(),
            nparams
        ));
        return (false, Value::Nil, info, false);
    }
    let mut inp: Map = (*lv.static_).clone();
    for (n, v) in named.iter() {
        match lv.params.iter().position(|p| &p.name == n) {
            Some(i) => {
                if i < args.len() {
                    info.issue = Issue::new(format!(
                        "both, positional ({}) and named argument found for lambda parameter {}",
                        i + 1,
                        n
                    ));
                    return (false, Value::Nil, info, false);
                }
                if lv.varargs && i == nparams - 1 && !matches!(v.value(), Value::List(_)) {
                    info.set_error(format!(
                        "named varargs argument {} ({}) must be a list",
                        i + 1,
                        n
                    ));
                    return (false, Value::Nil, info, false);
                }
            }
            None => {
                info.issue =
                    Issue::new(format!("no lambda parameter found for named argument {n}"));
                return (false, Value::Nil, info, false);
            }
        }
        inp.insert(n.clone(), v.clone());
    }
    let nargs_given = args.len();
    for (i, v) in args.into_iter().enumerate() {
        inp.insert(lv.params[i].name.clone(), Node::new(v));
    }
    if curry
        || (autocurry
            && named.is_empty()
            && nargs_given < nparams
            && !lv.varargs
            && lv.params[nparams - 1].default.is_none())
    {
        let mut rest = Vec::new();
        let mut varargs = false;
        if nargs_given < nparams {
            for (i, p) in lv.params[nargs_given..].iter().enumerate() {
                if !named.contains_key(&p.name) {
                    rest.push(p.clone());
                    if i == nparams - nargs_given - 1 {
                        varargs = lv.varargs;
                    }
                }
            }
        }
        let nl = LambdaValue {
            params: rest,
            varargs,
            body: lv.body.clone(),
            static_: Rc::new(inp),
            resolver: lv.resolver.clone(),
        };
        return (true, Value::Lambda(Rc::new(nl)), Info::default(), true);
    }
    if nargs_given < nparams {
        for i in nargs_given..nparams {
            let p = &lv.params[i];
            if let Some(v) = named.get(&p.name) {
                inp.insert(p.name.clone(), v.clone());
            } else if let Some(d) = &p.default {
                let v = match &**d {
                    Expr::Value(v) => v.clone(),
                    _ => Value::Nil,
                };
                inp.insert(p.name.clone(), Node::new(v));
            } else if lv.varargs && i == nparams - 1 {
                inp.insert(p.name.clone(), Node::new(Value::list(Vec::new())));
            } else {
                if !named.is_empty() {
                    info.set_error(format!("missing named argument for {}", p.name));
                } else {
                    let o = num_optional(lv);
                    if o > 0 {
                        info.set_error(format!(
                            "expected at least {} arguments ({} optional), but found {}",
                            nparams - o,
                            o,
                            nargs_given
                        ));
                    } else {
                        info.set_error(format!(
                            "expected {nparams} arguments, but found {nargs_given}"
                        ));
                    }
                }
                return (false, Value::Nil, info, false);
            }
        }
    }
    if !inline {
        inp.insert(
            SELF.to_string(),
            Node::new(Value::Lambda(lv.clone())).with_resolver(lv.resolver.clone()),
        );
    }
    let short_inp = if inp.len() < 64 {
        None
    } else {
        Some(String::new())
    };
    let env2 = env.with_local_scope(inp);
    let (value, info, okk) = eval(&lv.body, &env2, locally);
    if !okk {
        let nested = info.issue.clone();
        let mut info = info;
        let desc = match short_inp {
            Some(_) => "{...}".to_string(),
            None => shorten(&short_map(
                &env2.scope().and_then(|s| s.local()).unwrap_or_default(),
                false,
            )),
        };
        info.set_error(format!(
            "evaluation of lambda expression failed: {}: {}",
            lambda_value_string(lv),
            desc
        ));
        info.issue.nested.push(nested);
        info.issue.sequence = true;
        return (false, Value::Nil, info, false);
    }
    if value.is_expr() {
        return (false, Value::Nil, info, okk);
    }
    (true, value, info, okk)
}

fn num_optional(lv: &LambdaValue) -> usize {
    for (i, p) in lv.params.iter().enumerate() {
        if p.default.is_some() {
            return lv.params.len() - i;
        }
    }
    if lv.varargs { 1 } else { 0 }
}

fn is_inline(e: &Expr) -> bool {
    matches!(e, Expr::Lambda { .. })
}

fn eval_mapping(e: &Rc<Expr>, a: &Rc<Expr>, lambda: &Rc<Expr>, ctx: MapCtx, env: &Env) -> Res {
    let mut resolved = true;
    let inline = is_inline(lambda);
    let (value, info, okk) = resolve(a, &mut resolved, None, env, true);
    if !okk {
        return (Value::Nil, info, false);
    }
    let (lvalue, infoe, okk) = resolve(lambda, &mut resolved, None, env, false);
    if !okk {
        return (Value::Nil, info, false);
    }
    if !resolved {
        let p = pushed(e, &[(a, &value), (lambda, &lvalue)]);
        return (Value::Expr(p), info.join(&infoe), okk);
    }
    let Value::Lambda(lv) = lvalue else {
        return infoe.error("mapping requires a lambda value");
    };
    let supports = match (&value, ctx) {
        (Value::Map(_), _) => true,
        (Value::List(_), MapCtx::SelectToMap) => false,
        (Value::List(_), _) => true,
        _ => false,
    };
    if !supports {
        let (o, c) = ctx.brackets();
        return info.error(format!(
            "{}{}{} does not support {} values",
            ctx.keyword(),
            o,
            c,
            value.type_name()
        ));
    }
    let mut list_out: Vec<Node> = Vec::new();
    let mut map_out = Map::new();
    let entries: Vec<(Value, Node)> = match &value {
        Value::List(l) => {
            if lv.params.len() > 2 {
                return fail("mapping expression takes a maximum of 2 arguments");
            }
            l.iter()
                .enumerate()
                .map(|(i, n)| (Value::Int(i as i64), n.clone()))
                .collect()
        }
        Value::Map(m) => m
            .iter()
            .map(|(k, n)| (Value::str(k.as_str()), n.clone()))
            .collect(),
        _ => unreachable!(),
    };
    let np = lv.params.len();
    let mut last_info = Info::default();
    for (k, n) in entries {
        let mut inp = vec![Value::Nil; np];
        if np > 0 {
            inp[0] = k.clone();
            inp[np - 1] = n.value().clone();
        }
        let (res, mapped, info, okk) =
            call_lambda(&lv, inline, false, false, &Map::new(), inp, env, false);
        if !okk {
            return (Value::Nil, info, false);
        }
        if !res || mapped.is_expr() {
            return unresolved(e, info);
        }
        if info.undefined {
            last_info = info;
            continue;
        }
        match ctx {
            MapCtx::MapToList => {
                if !mapped.is_nil() {
                    list_out.push(Node::new(mapped));
                }
            }
            MapCtx::MapToMap => {
                if mapped.is_nil() {
                    last_info = info;
                    continue;
                }
                match &k {
                    Value::Str(s) if matches!(value, Value::Map(_)) => {
                        map_out.insert(s.to_string(), Node::new(mapped));
                    }
                    _ => match n.value() {
                        Value::Str(s) => {
                            map_out.insert(s.to_string(), Node::new(mapped));
                        }
                        other => {
                            return info.error(format!(
                                "list element must be string, but found {}",
                                other.type_name()
                            ));
                        }
                    },
                }
            }
            MapCtx::SelectToList => {
                if to_bool(&mapped) {
                    list_out.push(n.clone());
                }
            }
            MapCtx::SelectToMap => {
                if to_bool(&mapped) {
                    match &k {
                        Value::Str(s) => {
                            map_out.insert(s.to_string(), n.clone());
                        }
                        Value::Int(i) => {
                            map_out.insert(i.to_string(), n.clone());
                        }
                        _ => {}
                    }
                }
            }
        }
        last_info = info;
    }
    let _ = last_info;
    match ctx {
        MapCtx::MapToList | MapCtx::SelectToList => ok(Value::list(list_out)),
        MapCtx::MapToMap | MapCtx::SelectToMap => ok(Value::map(map_out)),
    }
}

fn eval_sum(e: &Rc<Expr>, a: &Rc<Expr>, init: &Rc<Expr>, lambda: &Rc<Expr>, env: &Env) -> Res {
    let mut resolved = true;
    let (value, info, okk) = resolve(a, &mut resolved, None, env, true);
    if !okk {
        return (Value::Nil, info, false);
    }
    let (initial, info, okk) = resolve(init, &mut resolved, Some(&info), env, false);
    if !okk {
        return (Value::Nil, info, false);
    }
    let inline = is_inline(lambda);
    let (lvalue, infoe, okk) = resolve(lambda, &mut resolved, None, env, false);
    if !okk {
        return (Value::Nil, infoe, false);
    }
    if !resolved {
        let p = pushed(e, &[(a, &value), (init, &initial), (lambda, &lvalue)]);
        return (Value::Expr(p), info.join(&infoe), okk);
    }
    let Value::Lambda(lv) = lvalue else {
        return infoe.error("sum requires a lambda value");
    };
    let entries: Vec<(Value, Node)> = match &value {
        Value::List(l) => l
            .iter()
            .enumerate()
            .map(|(i, n)| (Value::Int(i as i64), n.clone()))
            .collect(),
        Value::Map(m) => m
            .iter()
            .map(|(k, n)| (Value::str(k.as_str()), n.clone()))
            .collect(),
        _ => return info.error("map or list required for sum"),
    };
    let np = lv.params.len();
    if np > 3 {
        return fail("mapping expression take a maximum of 3 arguments");
    }
    if np < 2 {
        return fail("mapping expression take a minimum of 2 arguments");
    }
    let mut result = initial;
    let mut info = Info::default();
    for (k, n) in entries {
        let mut inp = vec![Value::Nil; np];
        inp[0] = result.clone();
        inp[1] = k;
        inp[np - 1] = n.value().clone();
        let (res, mapped, i, okk) =
            call_lambda(&lv, inline, false, false, &Map::new(), inp, env, false);
        if !okk {
            return (Value::Nil, i, false);
        }
        if !res || mapped.is_expr() {
            return unresolved(e, i);
        }
        result = mapped;
        info = i;
    }
    (result, info, true)
}

fn eval_catch(e: &Rc<Expr>, a: &Rc<Expr>, lambda: Option<&Rc<Expr>>, env: &Env) -> Res {
    let mut resolved = true;
    let mut lv: Option<Rc<LambdaValue>> = None;
    let inline = lambda.is_some_and(|l| is_inline(l));
    if let Some(l) = lambda {
        let (lvalue, info, okk) = resolve(l, &mut resolved, None, env, false);
        if !okk {
            return (Value::Nil, info, false);
        }
        if !resolved {
            return unresolved(e, info);
        }
        let Value::Lambda(l) = lvalue else {
            return info.error("catch requires a lambda value");
        };
        if l.params.len() > 2 {
            return info.error("catch function takes a maximum of 2 arguments");
        }
        lv = Some(l);
    }
    let (value, infoe, okk) = resolve(a, &mut resolved, None, env, false);
    if !resolved && okk {
        return unresolved(&pushed(e, &[(a, &value)]), infoe);
    }
    let Some(lv) = lv else {
        let mut result = Map::new();
        if !okk {
            result.insert("valid".into(), Node::new(Value::Bool(false)));
            result.insert(
                "error".into(),
                Node::new(Value::str(infoe.issue.msg.as_str())),
            );
            return ok(Value::map(result));
        }
        result.insert("valid".into(), Node::new(Value::Bool(true)));
        result.insert("error".into(), Node::new(Value::str("")));
        result.insert("value".into(), Node::new(value));
        return ok(Value::map(result));
    };
    let np = lv.params.len();
    let mut inp = vec![Value::Nil; np];
    let value = if okk { value } else { Value::Nil };
    match np {
        1 => inp[0] = value,
        2 => {
            inp[0] = value;
            inp[1] = if okk {
                Value::Nil
            } else {
                Value::str(infoe.issue.msg.as_str())
            };
        }
        _ => {
            return fail(format!(
                "lambda expression for sync condition must take one or two arguments, found {np}"
            ));
        }
    }
    let (res, mapped, info, okk) =
        call_lambda(&lv, inline, false, false, &Map::new(), inp, env, false);
    if !okk {
        return (Value::Nil, info, false);
    }
    if !res || mapped.is_expr() {
        return unresolved(e, info);
    }
    (mapped, info, true)
}

fn eval_substitution(e: &Rc<Expr>, t: &Rc<Expr>, env: &Env) -> Res {
    let (n, info, okk) = eval(t, env, false);
    if !okk || n.is_expr() {
        return (Value::Expr(e.clone()), info, okk);
    }
    let Value::Template(template) = &n else {
        return info.error("template value required");
    };
    let prepared = super::flow::node_copy(&template.prepared);
    let mut inp = Map::new();
    inp.insert(
        SELF.to_string(),
        Node::new(n.clone()).with_resolver(template.resolver.clone()),
    );
    let env2 = env.with_local_scope(inp);
    let (result, status) = super::flow::env_flow(&env2, &prepared, false);
    let mut info = Info::default();
    if result.undefined() {
        info.undefined = true;
    }
    if let Some(status) = status {
        if status.has_error() {
            let (issue, local, failed) = status.issue(&format!(
                "resolution of template '{}' failed",
                template.path.join(".")
            ));
            info.issue = issue;
            info.local_error = local;
            info.failed = failed;
            return (Value::Nil, info, false);
        }
        return unresolved(e, info);
    }
    (result.value().clone(), info, true)
}

/// Creates a template value for a node.
pub(crate) fn new_template_value(path: &[String], prepared: Node, orig: Node, env: &Env) -> Value {
    Value::Template(Rc::new(TemplateValue {
        path: path.to_vec(),
        prepared,
        orig,
        resolver: Some(env.clone()),
    }))
}
