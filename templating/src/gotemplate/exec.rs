//! The executor of Go's `text/template` (exec.go): walks parse trees over [`Value`]s and writes
//! what Go would write, failing with the errors Go would raise, at the nodes Go would name.

use std::collections::HashMap;
use std::fmt::Display;
use std::rc::Rc;

use super::builtins::{self, Builtin, Param, Rv};
use super::function::{Arity, CallContext, FuncDef, FuncError, FuncMap, GoType};
use super::methods::{self, Method};
use super::parse::{self, Arg, BranchNode, CommandNode, ListNode, Node, PipeNode, VariableNode};
use super::print;
use super::template::{FileHost, Limits, MissingKey, Source, Tree};
use super::value::{Elem, Value};
use crate::budget::{self, BudgetExceeded};

/// An execution failure: a Go-formatted message, or a safety limit that was hit.
pub(crate) enum ExecErr {
    Exec(String),
    Limit(String),
}

type R<T> = Result<T, ExecErr>;

enum Flow {
    Normal,
    Break,
    Continue,
}

/// The node execution is at, for error messages (Go's `s.node`).
#[derive(Clone, Copy)]
enum Ctx<'a> {
    None,
    Node(&'a Node),
    List(&'a ListNode),
    Pipe(&'a PipeNode),
    Cmd(&'a CommandNode),
    Arg(&'a Arg),
    Var(&'a VariableNode),
}

impl<'a> Ctx<'a> {
    fn pos(&self) -> usize {
        match self {
            Ctx::None => 0,
            Ctx::Node(n) => n.pos(),
            Ctx::List(l) => l.pos,
            Ctx::Pipe(p) => p.pos,
            Ctx::Cmd(c) => c.pos,
            Ctx::Arg(a) => a.pos(),
            Ctx::Var(v) => v.pos,
        }
    }

    fn text(&self) -> String {
        match self {
            Ctx::None => String::new(),
            Ctx::Node(n) => n.to_string(),
            Ctx::List(l) => l.to_string(),
            Ctx::Pipe(p) => p.to_string(),
            Ctx::Cmd(c) => c.to_string(),
            Ctx::Arg(a) => a.to_string(),
            Ctx::Var(v) => v.to_string(),
        }
    }
}

/// A chain of template sets: `tpl` executes text parsed into an overlay of the current set.
pub(crate) struct Scope<'a> {
    pub trees: &'a HashMap<String, Rc<Tree>>,
    pub parent: Option<&'a Scope<'a>>,
}

impl<'a> Scope<'a> {
    fn lookup(&self, name: &str) -> Option<&'a Rc<Tree>> {
        let mut s = Some(self);
        while let Some(scope) = s {
            if let Some(t) = scope.trees.get(name) {
                return Some(t);
            }
            s = scope.parent;
        }
        None
    }
}

/// What nested executions (`template`, `include`, `tpl`) share: limits and their counters.
pub(crate) struct Shared<'h> {
    pub limits: Limits,
    pub files: &'h dyn FileHost,
    pub steps: u64,
    pub limit_error: Option<String>,
    /// Name of the template set (Go's `t.name`), for `include`'s "no template" error and as the
    /// name `tpl` text is parsed under.
    pub root_name: String,
    /// Stack in use by nested control structures, pipelines and template calls, in rough units
    /// of 2 KiB of a debug build's stack (0.5 KiB in release), over all nested executions:
    /// bounded so that deep recursion fails cleanly instead of overflowing the stack.
    pub nesting: usize,
}

/// The bound of [`Shared::nesting`]: about 1.2 MiB of stack in debug builds, 0.4 MiB in release.
pub(crate) const MAX_NESTING: usize = 600;
/// Units of [`Shared::nesting`] a (parenthesized) pipeline evaluation costs.
const PIPELINE_UNITS: usize = 4;

enum Callee<'a> {
    Builtin(Builtin),
    User(&'a FuncDef),
    /// A method of the receiver's Go type (`.Major` of a `*semver.Version`).
    Method(Method, Value),
}

pub(crate) struct State<'a, 'h> {
    scope: &'a Scope<'a>,
    funcs: &'a FuncMap,
    tree: &'a Tree,
    node: Ctx<'a>,
    vars: Vec<(&'a str, Rv)>,
    depth: usize,
    shared: &'a mut Shared<'h>,
    out: String,
}

/// Charges a value of `bytes` bytes to the budget when it is new: only the result holds it.
fn fresh(holders: usize, bytes: u64) -> Result<(), BudgetExceeded> {
    if holders == 1 {
        budget::alloc(bytes)
    } else {
        Ok(())
    }
}

/// Go's "dig down one level" after each command of a pipeline: interface values become their
/// concrete contents (a nil interface becomes the invalid value).
fn dig(v: Rv) -> Rv {
    Rv {
        v: v.v,
        iface: false,
    }
}

fn to_func_error(e: ExecErr) -> FuncError {
    match e {
        ExecErr::Exec(m) | ExecErr::Limit(m) => FuncError::new(m),
    }
}

impl<'a, 'h> State<'a, 'h> {
    pub(crate) fn new(
        scope: &'a Scope<'a>,
        funcs: &'a FuncMap,
        tree: &'a Tree,
        data: Rv,
        depth: usize,
        shared: &'a mut Shared<'h>,
    ) -> Self {
        State {
            scope,
            funcs,
            tree,
            node: Ctx::None,
            vars: vec![("$", data)],
            depth,
            shared,
            // The top level writes about as much as the source; nested executions (`include`,
            // `tpl`) usually a line or a few.
            out: String::with_capacity(if depth == 0 {
                tree.source.text.len().min(1 << 16)
            } else {
                128
            }),
        }
    }

    /// Executes the tree; the output, or the error.
    pub(crate) fn run(mut self) -> R<String> {
        let dot = self.vars[0].1.clone();
        let root: &'a ListNode = &self.tree.root;
        self.walk_list(&dot, root)?;
        Ok(self.out)
    }

    fn at(&mut self, c: Ctx<'a>) {
        self.node = c;
    }

    fn errorf(&self, msg: impl Display) -> ExecErr {
        ExecErr::Exec(self.format_error(msg))
    }

    fn format_error(&self, msg: impl Display) -> String {
        let name = &self.tree.name;
        if let Ctx::None = self.node {
            return format!("template: {name}: {msg}");
        }
        let src: &Source = &self.tree.source;
        let pos = self.node.pos().min(src.text.len());
        let text = &src.text[..pos];
        let (line, col) = match text.rfind('\n') {
            None => (1, pos),
            Some(i) => (1 + text.matches('\n').count(), pos - (i + 1)),
        };
        format!(
            "template: {}:{}:{}: executing {} at <{}>: {}",
            src.parse_name,
            line,
            col,
            print::quote(name),
            self.node.text(),
            msg
        )
    }

    fn limit(&mut self, msg: String) -> ExecErr {
        if self.shared.limit_error.is_none() {
            self.shared.limit_error = Some(msg.clone());
        }
        ExecErr::Limit(msg)
    }

    fn step(&mut self) -> R<()> {
        self.shared.steps += 1;
        if self.shared.steps > self.shared.limits.budget.max_steps {
            let msg = format!(
                "template: {}: execution exceeds limit of {} steps (render budget max_steps)",
                self.tree.name, self.shared.limits.budget.max_steps
            );
            return Err(self.limit(msg));
        }
        if self.shared.steps.is_multiple_of(1024)
            && let Err(e) = budget::check_time()
        {
            return Err(self.budget_error(e));
        }
        Ok(())
    }

    fn budget_error(&mut self, e: BudgetExceeded) -> ExecErr {
        let msg = format!("template: {}: {e}", self.tree.name);
        self.limit(msg)
    }

    fn check_output(&mut self) -> R<()> {
        if self.out.len() > self.shared.limits.budget.max_output_bytes {
            let msg = format!(
                "template: {}: output exceeds limit of {} bytes (render budget max_output_bytes)",
                self.tree.name, self.shared.limits.budget.max_output_bytes
            );
            return Err(self.limit(msg));
        }
        Ok(())
    }

    /// A function's result: no larger than the budget allows; a new one (not shared with
    /// anything else) counts against the budget's total of values built.
    fn check_result(&mut self, v: &Value) -> R<()> {
        let r = match v {
            Value::String(s) => budget::check_bytes(s.len())
                .and_then(|()| fresh(Rc::strong_count(s), s.len() as u64)),
            Value::ByteString(b) | Value::Bytes(b) => budget::check_bytes(b.len())
                .and_then(|()| fresh(Rc::strong_count(b), b.len() as u64)),
            Value::List(l) => budget::check_items(l.len() as u128).and_then(|()| {
                fresh(
                    Rc::strong_count(l),
                    l.len() as u64 * budget::LIST_ITEM_BYTES,
                )
            }),
            Value::Map(m) => {
                // A lazy map (a certificate of `genCA`...: two short strings) is not computed
                // for this check.
                let n = if m.is_pending() { 0 } else { m.borrow().len() };
                budget::check_items(n as u128)
                    .and_then(|()| fresh(Rc::strong_count(m), n as u64 * budget::MAP_ENTRY_BYTES))
            }
            _ => Ok(()),
        };
        let r = r.and_then(|()| budget::exceeded().map_or(Ok(()), Err));
        r.map_err(|e| self.budget_error(e))
    }

    // --- variables ---------------------------------------------------------------------------

    fn push(&mut self, name: &'a str, v: Rv) {
        self.vars.push((name, v));
    }

    fn set_var(&mut self, name: &str, v: Rv) -> R<()> {
        for i in (0..self.vars.len()).rev() {
            if self.vars[i].0 == name {
                self.vars[i].1 = v;
                return Ok(());
            }
        }
        Err(self.errorf(format_args!("undefined variable: {name}")))
    }

    fn set_top_var(&mut self, n: usize, v: Rv) {
        let l = self.vars.len();
        self.vars[l - n].1 = v;
    }

    fn var_value(&self, name: &str) -> R<Rv> {
        for (n, v) in self.vars.iter().rev() {
            if *n == name {
                return Ok(v.clone());
            }
        }
        Err(self.errorf(format_args!("undefined variable: {name}")))
    }

    // --- walking -----------------------------------------------------------------------------

    fn walk_list(&mut self, dot: &Rv, list: &'a ListNode) -> R<Flow> {
        self.at(Ctx::List(list));
        for n in &list.nodes {
            match self.walk(dot, n)? {
                Flow::Normal => {}
                f => return Ok(f),
            }
        }
        Ok(Flow::Normal)
    }

    fn walk(&mut self, dot: &Rv, node: &'a Node) -> R<Flow> {
        self.step()?;
        self.at(Ctx::Node(node));
        match node {
            Node::Text(t) => {
                self.out.push_str(&t.text);
                self.check_output()?;
            }
            Node::Action(a) => {
                let val = self.eval_pipeline(dot, &a.pipe)?;
                if a.pipe.decl.is_empty() {
                    self.at(Ctx::Node(node));
                    if val.is_invalid() {
                        self.out.push_str("<no value>");
                    } else if let Some(s) = methods::addressable_stringer(&val.v) {
                        // Go prints an addressable value through its pointer's String method
                        // (Helm's `{{ .Capabilities.KubeVersion }}` prints `v1.33.0`).
                        self.out.push_str(&s);
                    } else {
                        print::write_value(&mut self.out, &val.v);
                    }
                    self.check_output()?;
                }
            }
            Node::If(b) => return self.walk_if_or_with(false, dot, b),
            Node::With(b) => return self.walk_if_or_with(true, dot, b),
            Node::Range(b) => return self.walk_range(dot, node, b),
            Node::Template(t) => {
                self.walk_template(dot, node, t)?;
            }
            Node::Break { .. } => return Ok(Flow::Break),
            Node::Continue { .. } => return Ok(Flow::Continue),
            Node::End { .. } | Node::Else { .. } => {
                return Err(self.errorf(format_args!("unknown node: {node}")));
            }
        }
        Ok(Flow::Normal)
    }

    fn enter(&mut self, units: usize) -> R<()> {
        self.shared.nesting += units;
        if self.shared.nesting > MAX_NESTING {
            self.shared.nesting -= units;
            let msg = self.format_error("exceeded maximum nesting depth");
            return Err(self.limit(msg));
        }
        Ok(())
    }

    fn leave(&mut self, units: usize) {
        self.shared.nesting -= units;
    }

    fn walk_if_or_with(&mut self, with: bool, dot: &Rv, b: &'a BranchNode) -> R<Flow> {
        self.enter(1)?;
        let r = self.walk_if_or_with_inner(with, dot, b);
        self.leave(1);
        r
    }

    fn walk_if_or_with_inner(&mut self, with: bool, dot: &Rv, b: &'a BranchNode) -> R<Flow> {
        let mark = self.vars.len();
        let r = (|| {
            let val = self.eval_pipeline(dot, &b.pipe)?;
            if builtins::truth(&val) {
                if with {
                    self.walk_list(&val, &b.list)
                } else {
                    self.walk_list(dot, &b.list)
                }
            } else if let Some(e) = &b.else_list {
                self.walk_list(dot, e)
            } else {
                Ok(Flow::Normal)
            }
        })();
        self.vars.truncate(mark);
        r
    }

    fn walk_range(&mut self, dot: &Rv, node: &'a Node, r: &'a BranchNode) -> R<Flow> {
        self.at(Ctx::Node(node));
        self.enter(1)?;
        let mark0 = self.vars.len();
        let res = self.walk_range_inner(dot, r);
        self.leave(1);
        self.vars.truncate(mark0);
        // A {{break}} ends the loop only.
        res.map(|_| Flow::Normal)
    }

    fn walk_range_inner(&mut self, dot: &Rv, r: &'a BranchNode) -> R<()> {
        let val = self.eval_pipeline(dot, &r.pipe)?;
        let mark = self.vars.len();
        let ran = match &val.v {
            Value::List(items) => {
                let items = Rc::clone(items);
                let iface = val.v.elements_are_interfaces();
                for (i, e) in items.iter().enumerate() {
                    let stop = self.one_iteration(
                        r,
                        mark,
                        Rv::concrete(Value::Int(i as i64)),
                        Rv {
                            v: e.clone(),
                            iface,
                        },
                    )?;
                    if stop {
                        break;
                    }
                }
                !items.is_empty()
            }
            // A Go struct (sprig's certificate) cannot be ranged over.
            Value::Map(m) if !matches!(m.elem, Elem::Struct(_)) => {
                let entries: Vec<(Value, Value)> = m
                    .borrow()
                    .iter()
                    .map(|(k, v)| (Value::string(k.as_str()), v.clone()))
                    .collect();
                let iface = val.v.elements_are_interfaces();
                for (k, v) in &entries {
                    let elem = Rv {
                        v: v.clone(),
                        iface,
                    };
                    let stop = self.one_iteration(r, mark, Rv::concrete(k.clone()), elem)?;
                    if stop {
                        break;
                    }
                }
                !entries.is_empty()
            }
            Value::Bytes(bytes) => {
                let bytes = Rc::clone(bytes);
                for (i, b) in bytes.iter().enumerate() {
                    let stop = self.one_iteration(
                        r,
                        mark,
                        Rv::concrete(Value::Int(i as i64)),
                        Rv::concrete(Value::Int(*b as i64)),
                    )?;
                    if stop {
                        break;
                    }
                }
                !bytes.is_empty()
            }
            Value::Int(n) | Value::Int64(n) => {
                // Go 1.22's range over an integer.
                if r.pipe.decl.len() > 1 {
                    return Err(self.errorf(format_args!(
                        "can't use {} to iterate over more than one variable",
                        print::format_value(&val.v)
                    )));
                }
                let n = *n;
                let is64 = matches!(val.v, Value::Int64(_));
                for i in 0..n.max(0) {
                    let e = if is64 { Value::Int64(i) } else { Value::Int(i) };
                    let stop = self.one_iteration(r, mark, Rv::INVALID, Rv::concrete(e))?;
                    if stop {
                        break;
                    }
                }
                n > 0
            }
            Value::Nil => false,
            v => {
                return Err(self.errorf(format_args!(
                    "range can't iterate over {}",
                    print::format_value(v)
                )));
            }
        };
        if !ran && let Some(e) = &r.else_list {
            self.walk_list(dot, e)?;
        }
        Ok(())
    }

    /// One iteration of a range body; true when `{{break}}` ended the loop.
    fn one_iteration(&mut self, r: &'a BranchNode, mark: usize, index: Rv, elem: Rv) -> R<bool> {
        self.step()?;
        let decl = &r.pipe.decl;
        if !decl.is_empty() {
            if r.pipe.is_assign {
                if decl.len() > 1 {
                    self.set_var(&decl[0].ident[0], index.clone())?;
                } else {
                    self.set_var(&decl[0].ident[0], elem.clone())?;
                }
            } else {
                self.set_top_var(1, elem.clone());
            }
        }
        if decl.len() > 1 {
            if r.pipe.is_assign {
                self.set_var(&decl[1].ident[0], elem.clone())?;
            } else {
                self.set_top_var(2, index);
            }
        }
        let res = self.walk_list(&elem, &r.list);
        self.vars.truncate(mark);
        Ok(matches!(res?, Flow::Break))
    }

    fn walk_template(&mut self, dot: &Rv, node: &'a Node, t: &'a parse::TemplateNode) -> R<()> {
        self.at(Ctx::Node(node));
        let Some(tree) = self.scope.lookup(&t.name) else {
            return Err(self.errorf(format_args!(
                "template {} not defined",
                print::quote(&t.name)
            )));
        };
        if self.depth >= self.shared.limits.max_depth {
            let msg = self.format_error(format_args!(
                "exceeded maximum template depth ({})",
                self.shared.limits.max_depth
            ));
            return Err(self.limit(msg));
        }
        let new_dot = match &t.pipe {
            Some(p) => self.eval_pipeline(dot, p)?,
            None => Rv::INVALID,
        };
        let tree: &'a Tree = tree;
        let saved_tree = std::mem::replace(&mut self.tree, tree);
        let saved_vars = std::mem::replace(&mut self.vars, vec![("$", new_dot.clone())]);
        let saved_node = self.node;
        self.depth += 1;
        let r = match self.enter(1) {
            Ok(()) => {
                let r = self.walk_list(&new_dot, &tree.root);
                self.leave(1);
                r
            }
            Err(e) => Err(e),
        };
        self.depth -= 1;
        self.tree = saved_tree;
        self.vars = saved_vars;
        self.node = saved_node;
        r.map(|_| ())
    }

    // --- evaluation --------------------------------------------------------------------------

    fn eval_pipeline(&mut self, dot: &Rv, pipe: &'a PipeNode) -> R<Rv> {
        self.at(Ctx::Pipe(pipe));
        self.enter(PIPELINE_UNITS)?;
        let r = self.eval_pipeline_inner(dot, pipe);
        self.leave(PIPELINE_UNITS);
        r
    }

    fn eval_pipeline_inner(&mut self, dot: &Rv, pipe: &'a PipeNode) -> R<Rv> {
        let mut value: Option<Rv> = None;
        for cmd in &pipe.cmds {
            let v = self.eval_command(dot, cmd, value.take())?;
            value = Some(dig(v));
        }
        let value = value.unwrap_or(Rv::INVALID);
        for var in &pipe.decl {
            if pipe.is_assign {
                self.set_var(&var.ident[0], value.clone())?;
            } else {
                self.push(&var.ident[0], value.clone());
            }
        }
        Ok(value)
    }

    fn not_a_function(&self, args: &[Arg], fin: &Option<Rv>) -> R<()> {
        if args.len() > 1 || fin.is_some() {
            return Err(self.errorf(format_args!(
                "can't give argument to non-function {}",
                args[0]
            )));
        }
        Ok(())
    }

    fn eval_command(&mut self, dot: &Rv, cmd: &'a CommandNode, fin: Option<Rv>) -> R<Rv> {
        self.step()?;
        let first = &cmd.args[0];
        match first {
            Arg::Field { ident, .. } => {
                self.at(Ctx::Arg(first));
                let node = Ctx::Arg(first);
                return self.eval_field_chain(dot, dot.clone(), node, ident, Some(&cmd.args), fin);
            }
            Arg::Chain { node, field, .. } => {
                return self.eval_chain_node(dot, first, node, field, Some(&cmd.args), fin);
            }
            Arg::Identifier { name, .. } => {
                return self.eval_function(dot, first, name, Ctx::Cmd(cmd), Some(&cmd.args), fin);
            }
            Arg::Pipe(p) => {
                self.not_a_function(&cmd.args, &fin)?;
                return self.eval_pipeline(dot, p);
            }
            Arg::Variable(v) => return self.eval_variable_node(dot, v, Some(&cmd.args), fin),
            _ => {}
        }
        self.at(Ctx::Arg(first));
        self.not_a_function(&cmd.args, &fin)?;
        match first {
            Arg::Bool { val, .. } => Ok(Rv::concrete(Value::Bool(*val))),
            Arg::Dot { .. } => Ok(dot.clone()),
            Arg::Nil { .. } => Err(self.errorf("nil is not a command")),
            Arg::Number(n) => match &n.ideal {
                Ok(v) => Ok(Rv::concrete(v.clone())),
                Err(e) => Err(self.errorf(e)),
            },
            Arg::String { text, .. } => Ok(Rv::concrete(Value::String(Rc::clone(text)))),
            _ => Err(self.errorf(format_args!(
                "can't evaluate command {}",
                print::quote(&first.to_string())
            ))),
        }
    }

    fn eval_chain_node(
        &mut self,
        dot: &Rv,
        chain: &'a Arg,
        node: &'a Arg,
        field: &'a [String],
        args: Option<&'a [Arg]>,
        fin: Option<Rv>,
    ) -> R<Rv> {
        self.at(Ctx::Arg(chain));
        if field.is_empty() {
            return Err(self.errorf("internal error: no fields in evalChainNode"));
        }
        if let Arg::Nil { .. } = node {
            return Err(self.errorf(format_args!("indirection through explicit nil in {chain}")));
        }
        let pipe = self.eval_arg(dot, None, node)?;
        self.eval_field_chain(dot, pipe, Ctx::Arg(chain), field, args, fin)
    }

    fn eval_variable_node(
        &mut self,
        dot: &Rv,
        v: &'a VariableNode,
        args: Option<&'a [Arg]>,
        fin: Option<Rv>,
    ) -> R<Rv> {
        self.at(Ctx::Var(v));
        let value = self.var_value(&v.ident[0])?;
        if v.ident.len() == 1 {
            if let Some(args) = args {
                self.not_a_function(args, &fin)?;
            } else if fin.is_some() {
                return Err(self.errorf(format_args!("can't give argument to non-function {v}")));
            }
            return Ok(value);
        }
        self.eval_field_chain(dot, value, Ctx::Var(v), &v.ident[1..], args, fin)
    }

    /// Go's `evalFieldChain`; `node` is the field, chain or variable node the fields belong to
    /// (where a method's error is reported).
    fn eval_field_chain(
        &mut self,
        dot: &Rv,
        receiver: Rv,
        node: Ctx<'a>,
        ident: &'a [String],
        args: Option<&'a [Arg]>,
        fin: Option<Rv>,
    ) -> R<Rv> {
        let n = ident.len();
        let mut r = receiver;
        for id in &ident[..n - 1] {
            r = self.eval_field(dot, node, id, None, None, r)?;
        }
        self.eval_field(dot, node, &ident[n - 1], args, fin, r)
    }

    fn eval_field(
        &mut self,
        dot: &Rv,
        node: Ctx<'a>,
        name: &'a str,
        args: Option<&'a [Arg]>,
        fin: Option<Rv>,
        receiver: Rv,
    ) -> R<Rv> {
        if let Some(method) = methods::lookup(&receiver.v, name) {
            // Go looks for a method before fields and map keys.
            let callee = Callee::Method(method, receiver.v);
            return self.eval_call(dot, callee, node, name, args, fin);
        }
        if receiver.is_invalid() {
            if self.shared.limits.missing_key == MissingKey::Error {
                return Err(self.errorf(format_args!(
                    "nil data; no entry for key {}",
                    print::quote(name)
                )));
            }
            return Ok(Rv::INVALID);
        }
        let typ = receiver.type_name();
        if let Value::Map(m) = &receiver.v {
            let has_args = args.map_or(0, |a| a.len()) > 1 || fin.is_some();
            if has_args {
                return Err(self.errorf(format_args!("{name} is not a method but has arguments")));
            }
            let iface = m.elem == Elem::Interface;
            let is_struct = matches!(m.elem, Elem::Struct(_));
            return match m.borrow().get(name) {
                Some(v) => Ok(Rv {
                    v: v.clone(),
                    iface,
                }),
                // A struct has its fields, no others.
                None if is_struct => {
                    Err(self.errorf(format_args!("can't evaluate field {name} in type {typ}")))
                }
                None => match self.shared.limits.missing_key {
                    MissingKey::Invalid => Ok(Rv::INVALID),
                    MissingKey::Zero => Ok(Rv {
                        v: m.zero_elem(),
                        iface,
                    }),
                    MissingKey::Error => Err(self.errorf(format_args!(
                        "map has no entry for key {}",
                        print::quote(name)
                    ))),
                },
            };
        }
        if receiver.iface && matches!(receiver.v, Value::Nil) {
            return Err(self.errorf(format_args!("nil pointer evaluating {typ}.{name}")));
        }
        Err(self.errorf(format_args!("can't evaluate field {name} in type {typ}")))
    }

    fn find_function(&self, name: &str) -> Option<Callee<'a>> {
        if let Some(def) = self.funcs.get(name) {
            if let Some(b) = builtins::same_builtin(name, def) {
                return Some(Callee::Builtin(b));
            }
            return Some(Callee::User(def));
        }
        builtins::builtin_kind(name).map(Callee::Builtin)
    }

    fn eval_function(
        &mut self,
        dot: &Rv,
        ident: &'a Arg,
        name: &'a str,
        node: Ctx<'a>,
        args: Option<&'a [Arg]>,
        fin: Option<Rv>,
    ) -> R<Rv> {
        self.at(Ctx::Arg(ident));
        let Some(callee) = self.find_function(name) else {
            return Err(self.errorf(format_args!(
                "{} is not a defined function",
                print::quote(name)
            )));
        };
        self.eval_call(dot, callee, node, name, args, fin)
    }

    fn eval_call(
        &mut self,
        dot: &Rv,
        callee: Callee<'a>,
        node: Ctx<'a>,
        name: &str,
        args: Option<&'a [Arg]>,
        fin: Option<Rv>,
    ) -> R<Rv> {
        let args: &'a [Arg] = match args {
            Some(a) => &a[1..],
            None => &[],
        };
        let declared: &[GoType] = match &callee {
            Callee::User(def) => def.params.unwrap_or(&[]),
            Callee::Method(m, _) => m.params,
            Callee::Builtin(_) => &[],
        };
        let (fixed, variadic, nfixed_decl): (&[Param], Option<Param>, usize) = match &callee {
            Callee::Builtin(b) => {
                let s = b.signature();
                (s.fixed, s.variadic, s.fixed.len())
            }
            Callee::User(def) => match def.arity {
                Arity::Exact(n) => (&[], None, n),
                Arity::AtLeast(n) => (&[], Some(Param::Any), n),
            },
            Callee::Method(m, _) => (&[], None, m.params.len()),
        };
        let exact_n = nfixed_decl;
        let param = |i: usize| -> Param {
            if let Callee::User(_) | Callee::Method(..) = &callee {
                let n = match &callee {
                    Callee::User(def) => match def.arity {
                        Arity::Exact(n) | Arity::AtLeast(n) => n,
                    },
                    _ => nfixed_decl,
                };
                let j = if i < n { i } else { n };
                return declared.get(j).map_or(Param::Any, |t| match t {
                    GoType::Any => Param::Any,
                    t => Param::Go(*t),
                });
            }
            if i < fixed.len() {
                fixed[i]
            } else {
                variadic.unwrap_or(Param::Any)
            }
        };
        let num_in = args.len() + usize::from(fin.is_some());
        if variadic.is_some() {
            if num_in < nfixed_decl {
                return Err(self.errorf(format_args!(
                    "wrong number of args for {name}: want at least {nfixed_decl} got {}",
                    args.len()
                )));
            }
        } else if num_in != exact_n {
            return Err(self.errorf(format_args!(
                "wrong number of args for {name}: want {exact_n} got {num_in}"
            )));
        }

        // and/or short-circuit.
        if let Callee::Builtin(b @ (Builtin::And | Builtin::Or)) = callee {
            let is_or = b == Builtin::Or;
            let mut v = Rv::INVALID;
            for a in args {
                v = self.eval_arg(dot, Some(Param::Refl), a)?;
                if builtins::truth(&v) == is_or {
                    return Ok(v);
                }
            }
            if let Some(f) = fin {
                v = self.validate_type(f, Some(Param::Refl))?;
            }
            return Ok(v);
        }

        if let Callee::Method(..) | Callee::User(_) = &callee {
            // Functions and methods take plain values: no intermediate Rv vector.
            // Up to INLINE_ARGS arguments live on the stack (most calls have one or two).
            const INLINE_ARGS: usize = 4;
            let mut inline: [Value; INLINE_ARGS] = Default::default();
            let mut heap: Vec<Value> = Vec::new();
            let small = num_in <= INLINE_ARGS;
            if !small {
                heap.reserve_exact(num_in);
            }
            for (i, a) in args.iter().enumerate() {
                let v = self.eval_arg(dot, Some(param(i)), a)?.v;
                if small {
                    inline[i] = v;
                } else {
                    heap.push(v);
                }
            }
            if let Some(f) = fin {
                let t = if variadic.is_some() || num_in - 1 < nfixed_decl {
                    param(num_in - 1)
                } else {
                    param(exact_n.saturating_sub(1))
                };
                let v = self.validate_type(f, Some(t))?.v;
                if small {
                    inline[num_in - 1] = v;
                } else {
                    heap.push(v);
                }
            }
            let vals: &[Value] = if small { &inline[..num_in] } else { &heap };
            let result = match &callee {
                Callee::User(def) => {
                    let f = Rc::clone(&def.function);
                    f(self, vals).map_err(|e| e.message)
                }
                Callee::Method(m, receiver) => (m.call)(receiver, vals),
                Callee::Builtin(_) => unreachable!("builtins are called below"),
            };
            return match result {
                Ok(v) => {
                    self.check_result(&v)?;
                    let iface = matches!(v, Value::Nil);
                    Ok(Rv { v, iface })
                }
                Err(msg) => self.call_error(node, name, msg),
            };
        }

        let mut argv: Vec<Rv> = Vec::with_capacity(num_in);
        for (i, a) in args.iter().enumerate() {
            let p = param(i);
            argv.push(self.eval_arg(dot, Some(p), a)?);
        }
        if let Some(f) = fin {
            let t = if variadic.is_some() {
                if num_in - 1 < nfixed_decl {
                    param(num_in - 1)
                } else {
                    param(nfixed_decl)
                }
            } else {
                param(exact_n.saturating_sub(1))
            };
            argv.push(self.validate_type(f, Some(t))?);
        }

        let result = match callee {
            Callee::Builtin(b) => b.call(&argv),
            Callee::User(_) | Callee::Method(..) => unreachable!("functions return above"),
        };
        match result {
            Ok(v) => {
                self.check_result(&v.v)?;
                Ok(v)
            }
            Err(msg) => self.call_error(node, name, msg),
        }
    }

    fn call_error(&mut self, node: Ctx<'a>, name: &str, msg: String) -> R<Rv> {
        if let Some(limit) = &self.shared.limit_error {
            return Err(ExecErr::Limit(limit.clone()));
        }
        if let Some(e) = budget::exceeded() {
            return Err(self.budget_error(e));
        }
        self.at(node);
        Err(self.errorf(format_args!("error calling {name}: {msg}")))
    }

    fn validate_type(&self, value: Rv, typ: Option<Param>) -> R<Rv> {
        let t = match typ {
            None | Some(Param::Refl) => return Ok(value),
            Some(Param::Any) => {
                return Ok(if value.is_invalid() {
                    Rv::iface(Value::Nil)
                } else {
                    value
                });
            }
            Some(Param::Go(t)) => t,
        };
        if value.is_invalid() {
            // Go's canBeNil: slices and maps take the zero (nil) value.
            return match t {
                GoType::List | GoType::Map | GoType::Semver | GoType::Any => {
                    Ok(Rv::concrete(Value::Nil))
                }
                t => Err(self.errorf(format_args!("invalid value; expected {}", t.name()))),
            };
        }
        if t.accepts(&value.v) {
            return Ok(Rv::concrete(value.v));
        }
        let got = match &value.v {
            Value::Nil => "interface {}",
            v => v.type_name(),
        };
        Err(self.errorf(format_args!(
            "wrong type for value; expected {}; got {got}",
            t.name()
        )))
    }

    fn eval_arg(&mut self, dot: &Rv, typ: Option<Param>, n: &'a Arg) -> R<Rv> {
        self.at(Ctx::Arg(n));
        match n {
            Arg::Dot { .. } => return self.validate_type(dot.clone(), typ),
            Arg::Nil { .. } => {
                return match typ {
                    Some(Param::Any) => Ok(Rv::iface(Value::Nil)),
                    Some(Param::Refl) | None => Ok(Rv::INVALID),
                    Some(Param::Go(GoType::List | GoType::Map | GoType::Semver)) => {
                        Ok(Rv::concrete(Value::Nil))
                    }
                    Some(Param::Go(t)) => {
                        Err(self.errorf(format_args!("cannot assign nil to {}", t.name())))
                    }
                };
            }
            Arg::Field { ident, .. } => {
                let v = self.eval_field_chain(
                    dot,
                    dot.clone(),
                    Ctx::Arg(n),
                    ident,
                    Some(std::slice::from_ref(n)),
                    None,
                )?;
                return self.validate_type(v, typ);
            }
            Arg::Variable(v) => {
                let v = self.eval_variable_node(dot, v, None, None)?;
                return self.validate_type(v, typ);
            }
            Arg::Pipe(p) => {
                let v = self.eval_pipeline(dot, p)?;
                return self.validate_type(v, typ);
            }
            Arg::Identifier { name, .. } => {
                let v = self.eval_function(dot, n, name, Ctx::Arg(n), None, None)?;
                return self.validate_type(v, typ);
            }
            Arg::Chain { node, field, .. } => {
                let v = self.eval_chain_node(dot, n, node, field, None, None)?;
                return self.validate_type(v, typ);
            }
            _ => {}
        }
        match typ {
            // Go's evalArg for constants: by the kind of the parameter's type.
            Some(Param::Go(t)) if t != GoType::Any => match (t, n) {
                (GoType::String, Arg::String { text, .. }) => {
                    Ok(Rv::concrete(Value::String(Rc::clone(text))))
                }
                (GoType::String, _) => Err(self.errorf(format_args!("expected string; found {n}"))),
                (GoType::Bool, Arg::Bool { val, .. }) => Ok(Rv::concrete(Value::Bool(*val))),
                (GoType::Bool, _) => Err(self.errorf(format_args!("expected bool; found {n}"))),
                (GoType::Int, Arg::Number(num)) if num.is_int => {
                    Ok(Rv::concrete(Value::Int(num.int64)))
                }
                (GoType::Int64, Arg::Number(num)) if num.is_int => {
                    Ok(Rv::concrete(Value::Int64(num.int64)))
                }
                (GoType::Int | GoType::Int64, _) => {
                    Err(self.errorf(format_args!("expected integer; found {n}")))
                }
                // reflect's SetUint truncates to the parameter's width.
                (GoType::Uint32, Arg::Number(num)) if num.is_uint => {
                    Ok(Rv::concrete(Value::Int(i64::from(num.uint64 as u32))))
                }
                (GoType::Uint32, _) => {
                    Err(self.errorf(format_args!("expected unsigned integer; found {n}")))
                }
                (GoType::Float64, Arg::Number(num)) if num.is_float => {
                    Ok(Rv::concrete(Value::Float(num.float64)))
                }
                (GoType::Float64, _) => Err(self.errorf(format_args!("expected float; found {n}"))),
                (t, _) => Err(self.errorf(format_args!(
                    "can't handle {n} for arg of type {}",
                    t.name()
                ))),
            },
            _ => match n {
                Arg::Bool { val, .. } => Ok(Rv::concrete(Value::Bool(*val))),
                Arg::Number(num) => match &num.ideal {
                    Ok(v) => Ok(Rv::concrete(v.clone())),
                    Err(e) => Err(self.errorf(e)),
                },
                Arg::String { text, .. } => Ok(Rv::concrete(Value::String(Rc::clone(text)))),
                _ => Err(self.errorf(format_args!(
                    "can't handle assignment of {n} to empty interface argument"
                ))),
            },
        }
    }

    fn nested<'b>(&'b mut self) -> NestedParts<'b, 'h>
    where
        'a: 'b,
    {
        NestedParts {
            scope: self.scope,
            funcs: self.funcs,
            depth: self.depth,
            shared: &mut *self.shared,
        }
    }
}

/// Units of [`Shared::nesting`] an `include`/`tpl` execution costs.
const NESTED_UNITS: usize = 1;

fn nesting_error(shared: &mut Shared<'_>, name: &str) -> FuncError {
    let msg = format!("template: {name}: exceeded maximum nesting depth");
    if shared.limit_error.is_none() {
        shared.limit_error = Some(msg.clone());
    }
    FuncError::new(msg)
}

struct NestedParts<'b, 'h> {
    scope: &'b Scope<'b>,
    funcs: &'b FuncMap,
    depth: usize,
    shared: &'b mut Shared<'h>,
}

impl<'a, 'h> CallContext for State<'a, 'h> {
    fn execute_named(&mut self, name: &str, data: Value) -> Result<String, FuncError> {
        let parts = self.nested();
        let Some(tree) = parts.scope.lookup(name) else {
            return Err(FuncError::new(format!(
                "template: no template {} associated with template {}",
                print::quote(name),
                print::quote(&parts.shared.root_name)
            )));
        };
        if parts.depth >= parts.shared.limits.max_depth {
            let msg = format!(
                "template: {}: exceeded maximum template depth ({})",
                name, parts.shared.limits.max_depth
            );
            if parts.shared.limit_error.is_none() {
                parts.shared.limit_error = Some(msg.clone());
            }
            return Err(FuncError::new(msg));
        }
        if parts.shared.nesting + NESTED_UNITS > MAX_NESTING {
            return Err(nesting_error(parts.shared, name));
        }
        parts.shared.nesting += NESTED_UNITS;
        let state = State::new(
            parts.scope,
            parts.funcs,
            tree,
            Rv::concrete(data),
            parts.depth + 1,
            &mut *parts.shared,
        );
        let r = state.run().map_err(to_func_error);
        parts.shared.nesting -= NESTED_UNITS;
        r
    }

    fn execute_text(&mut self, text: &str, data: Value) -> Result<String, FuncError> {
        self.execute_parsed_text(text, data, false)
    }

    fn execute_isolated(&mut self, text: &str, data: Value) -> Result<String, FuncError> {
        self.execute_parsed_text(text, data, true)
    }

    fn read_file(&self, path: &str) -> Result<Vec<u8>, FuncError> {
        self.shared.files.read_file(path)
    }

    fn read_dir(&self, path: &str) -> Result<Vec<(String, bool)>, FuncError> {
        self.shared.files.read_dir(path)
    }
}

impl<'a, 'h> State<'a, 'h> {
    /// Parses `text` under the set's name and executes it: sharing the current set's
    /// definitions (`tpl`), or in a set of its own (`isolated`: Landscaper's `include`, which
    /// parses the file into a new template).
    fn execute_parsed_text(
        &mut self,
        text: &str,
        data: Value,
        isolated: bool,
    ) -> Result<String, FuncError> {
        let parts = self.nested();
        if parts.depth >= parts.shared.limits.max_depth {
            let msg = format!(
                "template: {}: exceeded maximum template depth ({})",
                parts.shared.root_name, parts.shared.limits.max_depth
            );
            if parts.shared.limit_error.is_none() {
                parts.shared.limit_error = Some(msg.clone());
            }
            return Err(FuncError::new(msg));
        }
        let name = parts.shared.root_name.clone();
        let funcs = parts.funcs;
        let has = |n: &str| funcs.contains(n) || builtins::builtin_kind(n).is_some();
        let parsed = parse::parse(&name, text, &has).map_err(FuncError::new)?;
        let source = Rc::new(Source {
            parse_name: name.clone(),
            text: Rc::from(text),
        });
        let mut overlay: HashMap<String, Rc<Tree>> = HashMap::new();
        for (tname, root) in parsed {
            if !isolated
                && parse::is_empty_list(&root)
                && parts.scope.lookup(&tname).is_some()
                && tname != name
            {
                continue;
            }
            overlay.insert(
                tname.clone(),
                Rc::new(Tree {
                    name: tname,
                    root,
                    source: Rc::clone(&source),
                }),
            );
        }
        let Some(top) = overlay.get(&name).cloned() else {
            return Ok(String::new());
        };
        let scope = Scope {
            trees: &overlay,
            parent: if isolated { None } else { Some(parts.scope) },
        };
        if parts.shared.nesting + NESTED_UNITS > MAX_NESTING {
            return Err(nesting_error(parts.shared, &name));
        }
        parts.shared.nesting += NESTED_UNITS;
        let state = State::new(
            &scope,
            funcs,
            &top,
            Rv::concrete(data),
            parts.depth + 1,
            &mut *parts.shared,
        );
        let r = state.run().map_err(to_func_error);
        parts.shared.nesting -= NESTED_UNITS;
        r
    }
}
