//! The node model of the spiff engine: values with spiff's annotations (flags, issues,
//! merge/redirect markers), mirroring `yaml.Node` of spiff.

use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

use super::env::Env;
use super::expr::Expr;

/// A map of a spiff document. Keys are kept sorted (spiff processes keys in sorted order).
pub(crate) type Map = BTreeMap<String, Node>;

pub(crate) const SELF: &str = "_";
pub(crate) const DOCNODE: &str = "__";
pub(crate) const ROOT: &str = "___";
pub(crate) const MERGEKEY: &str = "<<<";

pub(crate) const FLAG_TEMPORARY: u16 = 0x001;
pub(crate) const FLAG_LOCAL: u16 = 0x002;
pub(crate) const FLAG_INJECT: u16 = 0x004;
pub(crate) const FLAG_STATE: u16 = 0x008;
pub(crate) const FLAG_DEFAULT: u16 = 0x010;
pub(crate) const FLAG_DYNAMIC: u16 = 0x020;
pub(crate) const FLAG_INJECTED: u16 = 0x040;
pub(crate) const FLAG_IMPLIED: u16 = 0x080;
pub(crate) const FLAG_NOMERGE: u16 = 0x100;

/// Node flags (spiff's `NodeFlags`).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct Flags(pub u16);

impl Flags {
    pub fn temporary(self) -> bool {
        self.0 & FLAG_TEMPORARY != 0
    }
    pub fn local(self) -> bool {
        self.0 & FLAG_LOCAL != 0
    }
    pub fn inject(self) -> bool {
        self.0 & (FLAG_INJECT | FLAG_DEFAULT) != 0
    }
    pub fn default_(self) -> bool {
        self.0 & (FLAG_DEFAULT | FLAG_INJECT) == FLAG_DEFAULT
    }
    pub fn implied(self) -> bool {
        self.0 & (FLAG_IMPLIED | FLAG_DEFAULT) == FLAG_IMPLIED
    }
    pub fn propagate_implied(self) -> bool {
        self.0 & (FLAG_IMPLIED | FLAG_DEFAULT) != 0
    }
    pub fn overridden(self) -> Flags {
        if self.default_() {
            Flags((self.0 | FLAG_INJECT) & !FLAG_DEFAULT)
        } else {
            self
        }
    }
    pub fn state(self) -> bool {
        self.0 & FLAG_STATE != 0
    }
    pub fn injected(self) -> bool {
        self.0 & FLAG_INJECTED != 0
    }
    pub fn nomerge(self) -> bool {
        self.0 & FLAG_NOMERGE != 0
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, o: Flags) -> Flags {
        Flags(self.0 | o.0)
    }
}
impl std::ops::BitOrAssign for Flags {
    fn bitor_assign(&mut self, o: Flags) {
        self.0 |= o.0
    }
}

/// An evaluation problem attached to a node or an evaluation result.
#[derive(Clone, Default, PartialEq, Debug)]
pub(crate) struct Issue {
    pub msg: String,
    pub orig_path: Option<Vec<String>>,
    pub nested: Vec<Issue>,
    pub sequence: bool,
}

impl Issue {
    pub fn new(msg: impl Into<String>) -> Issue {
        Issue {
            msg: msg.into(),
            ..Default::default()
        }
    }
}

/// Spiff's node annotation.
#[derive(Clone, Default, PartialEq, Debug)]
pub(crate) struct Ann {
    pub redirect: Option<Rc<Vec<String>>>,
    pub replace: bool,
    pub preferred: bool,
    pub merged: bool,
    pub key_name: Option<Rc<str>>,
    pub error: bool,
    pub failed: bool,
    pub undefined: bool,
    pub issue: Option<Rc<Issue>>,
    pub tag: Option<Rc<str>>,
    pub flags: Flags,
}

impl Ann {
    pub fn standard_override(&self) -> bool {
        !self.merged && !self.replace && self.redirect.is_none()
    }
}

/// A value held by a node.
#[derive(Clone)]
pub(crate) enum Value {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    List(Rc<Vec<Node>>),
    Map(Rc<Map>),
    Expr(Rc<Expr>),
    Lambda(Rc<LambdaValue>),
    Template(Rc<TemplateValue>),
}

impl Value {
    pub fn str(s: impl Into<Rc<str>>) -> Value {
        Value::Str(s.into())
    }
    pub fn list(v: Vec<Node>) -> Value {
        Value::List(Rc::new(v))
    }
    pub fn map(m: Map) -> Value {
        Value::Map(Rc::new(m))
    }
    pub fn as_list_len(&self) -> usize {
        match self {
            Value::List(l) => l.len(),
            _ => 1,
        }
    }
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }
    pub fn is_expr(&self) -> bool {
        matches!(self, Value::Expr(_))
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    /// spiff's `ExpressionType`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Template(_) => "template",
            Value::Lambda(_) => "lambda",
            Value::Expr(_) => "",
        }
    }
}

/// A lambda value: parameters, body and the captured static scope.
pub(crate) struct LambdaValue {
    pub params: Vec<super::expr::Param>,
    pub varargs: bool,
    pub body: Rc<Expr>,
    /// the original lambda expression (for equality and printing)
    pub static_: Rc<Map>,
    pub resolver: Option<Env>,
}

/// A template value (`&template`).
pub(crate) struct TemplateValue {
    pub path: Vec<String>,
    pub prepared: Node,
    pub orig: Node,
    pub resolver: Option<Env>,
}

pub(crate) struct NodeData {
    pub value: Value,
    pub ann: Ann,
    pub resolver: Option<Env>,
    /// cache: 0 unknown, 1 settled, 2 not settled (see [`Node::settled`])
    pub settled: std::cell::Cell<u8>,
}

/// A document node: a value plus annotation. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Node(pub Rc<NodeData>);

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", super::expr::value_as_string(&self.0.value, true))
    }
}

impl Node {
    pub fn new(value: Value) -> Node {
        Node(Rc::new(NodeData {
            value,
            ann: Ann::default(),
            resolver: None,
            settled: std::cell::Cell::new(0),
        }))
    }
    pub fn nil() -> Node {
        Node::new(Value::Nil)
    }
    #[inline]
    pub fn value(&self) -> &Value {
        &self.0.value
    }
    #[inline]
    pub fn ann(&self) -> &Ann {
        &self.0.ann
    }
    pub fn flags(&self) -> Flags {
        self.0.ann.flags
    }
    pub fn undefined(&self) -> bool {
        self.0.ann.undefined
    }
    pub fn failed(&self) -> bool {
        self.0.ann.failed
    }
    pub fn has_error(&self) -> bool {
        self.0.ann.error
    }
    pub fn merged(&self) -> bool {
        self.0.ann.merged
    }
    pub fn key_name(&self) -> Option<&Rc<str>> {
        self.0.ann.key_name.as_ref()
    }
    pub fn tag(&self) -> Option<&Rc<str>> {
        self.0.ann.tag.as_ref()
    }
    pub fn is_expr(&self) -> bool {
        self.0.value.is_expr()
    }
    pub fn resolver(&self) -> Option<&Env> {
        self.0.resolver.as_ref()
    }

    /// Copy with another annotation.
    pub fn with_ann(&self, ann: Ann) -> Node {
        Node(Rc::new(NodeData {
            value: self.0.value.clone(),
            ann,
            resolver: self.0.resolver.clone(),
            settled: std::cell::Cell::new(0),
        }))
    }
    /// `ReplaceValue`/`SubstituteNode`: same annotation, other value.
    pub fn replace_value(&self, value: Value) -> Node {
        Node(Rc::new(NodeData {
            value,
            ann: self.0.ann.clone(),
            resolver: self.0.resolver.clone(),
            settled: std::cell::Cell::new(0),
        }))
    }
    pub fn with_resolver(&self, resolver: Option<Env>) -> Node {
        Node(Rc::new(NodeData {
            value: self.0.value.clone(),
            ann: self.0.ann.clone(),
            resolver,
            settled: std::cell::Cell::new(0),
        }))
    }
    fn map_ann(&self, f: impl FnOnce(&mut Ann)) -> Node {
        let mut ann = self.0.ann.clone();
        f(&mut ann);
        self.with_ann(ann)
    }
    pub fn redirect_node(&self, value: Value, redirect: Option<Rc<Vec<String>>>) -> Node {
        let mut ann = self.0.ann.clone();
        ann.redirect = redirect;
        Node(Rc::new(NodeData {
            value,
            ann,
            resolver: self.0.resolver.clone(),
            settled: std::cell::Cell::new(0),
        }))
    }
    pub fn replace_node(&self, value: Value, redirect: Option<Rc<Vec<String>>>) -> Node {
        let mut ann = self.0.ann.clone();
        ann.replace = true;
        ann.redirect = redirect;
        Node(Rc::new(NodeData {
            value,
            ann,
            resolver: self.0.resolver.clone(),
            settled: std::cell::Cell::new(0),
        }))
    }
    pub fn preferred_node(&self) -> Node {
        self.map_ann(|a| a.preferred = true)
    }
    pub fn merged_node(&self) -> Node {
        self.map_ann(|a| a.merged = true)
    }
    pub fn key_name_node(&self, key: Option<Rc<str>>) -> Node {
        match key {
            Some(k) if !k.is_empty() => self.map_ann(|a| a.key_name = Some(k)),
            _ => self.clone(),
        }
    }
    /// `yaml.IssueNode`
    pub fn issue_node(&self, error: bool, failed: bool, issue: Issue) -> Node {
        self.map_ann(|a| {
            if !issue.msg.is_empty() {
                a.issue = Some(Rc::new(issue));
            }
            a.error = error;
            a.failed = failed;
        })
    }
    pub fn undefined_node(&self) -> Node {
        self.map_ann(|a| a.undefined = true)
    }
    pub fn add_flags(&self, flags: Flags) -> Node {
        self.map_ann(|a| a.flags |= flags)
    }
    pub fn set_tag(&self, tag: Option<Rc<str>>) -> Node {
        self.map_ann(|a| a.tag = tag)
    }
    pub fn issue(&self) -> Option<&Rc<Issue>> {
        self.0.ann.issue.as_ref()
    }

    /// A settled node is a plain value that the flow does not change any more (without stubs):
    /// no expressions, dynaml strings, merge keys, tags, markers, issues, lambdas or templates.
    pub fn settled(&self) -> bool {
        match self.0.settled.get() {
            1 => return true,
            2 => return false,
            _ => {}
        }
        let a = &self.0.ann;
        let plain_ann = a.redirect.is_none()
            && !a.replace
            && !a.preferred
            && !a.merged
            && a.key_name.is_none()
            && !a.error
            && !a.failed
            && !a.undefined
            && a.issue.is_none()
            && a.tag.is_none()
            && a.flags.0 == 0
            && self.0.resolver.is_none();
        let r = plain_ann
            && match &self.0.value {
                Value::Nil | Value::Bool(_) | Value::Int(_) | Value::Float(_) => true,
                Value::Str(s) => embedded_dynaml(s).is_none(),
                Value::List(l) => l.iter().all(|n| n.settled()),
                Value::Map(m) => {
                    !m.keys()
                        .any(|k| k.starts_with("<<") || k.starts_with("key:"))
                        && m.values().all(|n| n.settled())
                }
                Value::Expr(_) | Value::Lambda(_) | Value::Template(_) => false,
            };
        self.0.settled.set(if r { 1 } else { 2 });
        r
    }
}

/// `dynaml.IssueNode`: keeps the original path of an existing issue, else records `path`.
pub(crate) fn issue_node_at(
    path: Option<&[String]>,
    node: &Node,
    error: bool,
    failed: bool,
    mut issue: Issue,
) -> Node {
    if let Some(orig) = node.issue().and_then(|i| i.orig_path.clone()) {
        issue.orig_path = Some(orig);
    } else if let Some(p) = path {
        issue.orig_path = Some(p.to_vec());
    }
    node.issue_node(error, failed, issue)
}

// ------------------------------------------------------------------ equality

/// Deep equality used to detect the fixpoint of the flow loop (spiff uses `reflect.DeepEqual`).
pub(crate) fn node_eq(a: &Node, b: &Node) -> bool {
    if Rc::ptr_eq(&a.0, &b.0) {
        return true;
    }
    a.0.ann == b.0.ann
        && value_eq(&a.0.value, &b.0.value)
        && match (&a.0.resolver, &b.0.resolver) {
            (None, None) => true,
            (Some(x), Some(y)) => x.ptr_eq(y),
            _ => false,
        }
}

pub(crate) fn value_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            Rc::ptr_eq(x, y)
                || (x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| node_eq(p, q)))
        }
        (Value::Map(x), Value::Map(y)) => map_eq(x, y),
        // an unchanged unresolved expression is kept as the same shared tree; a new tree
        // means progress (e.g. a call that turned into a `catch` expression)
        (Value::Expr(x), Value::Expr(y)) => Rc::ptr_eq(x, y),
        (Value::Lambda(x), Value::Lambda(y)) => {
            Rc::ptr_eq(x, y)
                || (Rc::ptr_eq(&x.body, &y.body)
                    && x.params.len() == y.params.len()
                    && map_eq(&x.static_, &y.static_)
                    && env_opt_eq(&x.resolver, &y.resolver))
        }
        (Value::Template(x), Value::Template(y)) => {
            Rc::ptr_eq(x, y)
                || (x.path == y.path
                    && node_eq(&x.prepared, &y.prepared)
                    && node_eq(&x.orig, &y.orig)
                    && env_opt_eq(&x.resolver, &y.resolver))
        }
        _ => false,
    }
}

fn env_opt_eq(a: &Option<Env>, b: &Option<Env>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => x.ptr_eq(y),
        _ => false,
    }
}

pub(crate) fn map_eq(x: &Rc<Map>, y: &Rc<Map>) -> bool {
    Rc::ptr_eq(x, y)
        || (x.len() == y.len()
            && x.iter()
                .zip(y.iter())
                .all(|((k1, v1), (k2, v2))| k1 == k2 && node_eq(v1, v2)))
}

// ------------------------------------------------------------------ find

/// `yaml.IsMapResolved`
pub(crate) fn is_map_resolved(m: &Map, control: bool) -> bool {
    if control && m.keys().any(|k| k.starts_with("<<")) {
        return false;
    }
    !m.contains_key("<<") && !m.contains_key(MERGEKEY)
}

/// `yaml.UnresolvedListEntryMerge`: a list entry `- <<: x` / `- <<<: x`.
pub(crate) fn unresolved_list_entry_merge(node: &Node) -> Option<(Node, &'static str)> {
    if let Value::Map(m) = node.value()
        && m.len() == 1
    {
        if let Some(n) = m.get("<<") {
            return Some((n.clone(), "<<"));
        }
        if let Some(n) = m.get(MERGEKEY) {
            return Some((n.clone(), MERGEKEY));
        }
    }
    None
}

pub(crate) fn is_list_resolved(l: &[Node]) -> bool {
    !l.iter().any(|n| unresolved_list_entry_merge(n).is_some())
}

/// `yaml.FindR`
pub(crate) fn find_r<S: AsRef<str>>(
    raw: bool,
    root: &Node,
    control: bool,
    path: &[S],
) -> Option<Node> {
    let mut here = root.clone();
    for step in path {
        here = next_step(raw, step.as_ref(), &here, control)?;
    }
    Some(here)
}

fn next_step(raw: bool, step: &str, here: &Node, control: bool) -> Option<Node> {
    match here.value() {
        Value::Map(m) => {
            if !raw && !is_map_resolved(m, control) {
                return None;
            }
            m.get(step).cloned()
        }
        Value::List(l) => {
            if !raw && !is_list_resolved(l) {
                return None;
            }
            step_through_list(raw, l, step, here.key_name().map(|k| &**k), control)
        }
        _ => None,
    }
}

/// parses `[n]` / `[-n]`
pub(crate) fn list_index(step: &str) -> Option<i64> {
    let inner = step.strip_prefix('[')?.strip_suffix(']')?;
    let digits = inner.strip_prefix('-').unwrap_or(inner);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    inner.parse::<i64>().ok()
}

fn step_through_list(
    raw: bool,
    here: &[Node],
    step: &str,
    key: Option<&str>,
    control: bool,
) -> Option<Node> {
    if step.starts_with('[')
        && let Some(mut index) = list_index(step)
    {
        if index < 0 {
            index += here.len() as i64;
        }
        if index < 0 || here.len() as i64 <= index {
            return None;
        }
        return Some(here[index as usize].clone());
    }
    let mut key = match key {
        Some(k) if !k.is_empty() => k,
        _ => "name",
    };
    let mut step = step;
    if let Some(split) = step.find(':')
        && split > 0
    {
        key = &step[..split];
        step = &step[split + 1..];
    }
    for sub in here {
        if !matches!(sub.value(), Value::Map(_)) {
            continue;
        }
        if let Some(n) = find_r(raw, sub, control, &[key])
            && let Value::Str(s) = n.value()
            && &**s == step
        {
            return Some(sub.clone());
        }
    }
    None
}

pub(crate) fn find_string_r(raw: bool, root: &Node, control: bool, key: &str) -> Option<Rc<str>> {
    match find_r(raw, root, control, &[key])?.value() {
        Value::Str(s) => Some(s.clone()),
        _ => None,
    }
}

/// `yaml.EmbeddedDynaml` (without interpolation)
pub(crate) fn embedded_dynaml(s: &str) -> Option<&str> {
    if s.len() >= 4 && s.starts_with("((") && s.ends_with("))") {
        let sub = &s[2..s.len() - 2];
        if !sub.starts_with('!') {
            return Some(sub);
        }
        return None;
    }
    None
}

/// `yaml.EmbeddedDynaml` with optional string interpolation: the expression text of a string.
pub(crate) fn embedded_dynaml_ext(s: &str, interpolation: bool) -> Option<String> {
    if s.len() >= 4 && s.starts_with("((") && s.ends_with("))") {
        let sub = &s[2..s.len() - 2];
        if !sub.starts_with('!') {
            return Some(sub.to_string());
        }
        return None;
    }
    if !interpolation {
        return None;
    }
    convert_to_expression(s, false).1
}

/// `convertToExpression`: string interpolation of `((...))` parts inside a string.
/// Returns (plain string, expression) - exactly one of them is set.
pub(crate) fn convert_to_expression(s: &str, unescape: bool) -> (Option<String>, Option<String>) {
    let mut mask = false;
    let mut quote = false;
    let mut start = false;
    let mut ob = 0;
    let mut lvl = 0;
    let mut expr = String::new();
    let mut str_ = String::new();
    let mut result = String::new();
    let mut found = false;
    for c in s.chars() {
        if start {
            if quote {
                match c {
                    '"' => {
                        if !mask {
                            quote = false;
                        }
                        mask = false;
                    }
                    '\\' => mask = !mask,
                    _ => mask = false,
                }
                expr.push(c);
            } else {
                match c {
                    '(' => lvl += 1,
                    ')' => {
                        if lvl > 0 {
                            lvl -= 1;
                        } else {
                            ob += 1;
                            if ob == 2 {
                                start = false;
                                ob = 0;
                                found =
                                    add_expr(&mut result, &mut str_, &mut expr, false, unescape)
                                        || found;
                            }
                        }
                    }
                    '"' => quote = true,
                    _ => {}
                }
                if start {
                    expr.push(c);
                }
                if c != ')' {
                    ob = 0;
                }
            }
        } else {
            if c == '(' {
                ob += 1;
            } else if ob >= 2 {
                start = true;
                str_.truncate(str_.len() - 2);
                expr = c.to_string();
                ob = 0;
            }
            if !start {
                str_.push(c);
                if c != '(' {
                    ob = 0;
                }
            }
        }
    }
    if start {
        str_.push_str("((");
        str_.push_str(&expr);
        expr.clear();
    }
    found = add_expr(&mut result, &mut str_, &mut expr, true, unescape) || found;
    if found {
        (None, Some(result))
    } else {
        (Some(str_), None)
    }
}

fn add_expr(
    result: &mut String,
    s: &mut String,
    expr: &mut String,
    fin: bool,
    unescape: bool,
) -> bool {
    if unescape && expr.starts_with('!') {
        s.push_str("((");
        s.push_str(&expr[1..]);
        s.push(')');
        expr.clear();
    }
    if expr.starts_with('!') {
        s.push_str("((");
        s.push_str(expr);
        s.push(')');
        expr.clear();
    }
    if expr.is_empty() && (result.is_empty() || !fin) {
        return false;
    }
    if !s.is_empty() {
        let mut q = String::new();
        super::yaml::go_json_str(s, &mut q);
        if !result.is_empty() {
            result.push(' ');
        }
        result.push_str(&q);
    }
    if !expr.is_empty() {
        let inner = expr[..expr.len() - 1].trim().to_string();
        *expr = format!("( {inner} )");
    }
    if !result.is_empty() && !expr.is_empty() {
        result.push(' ');
    }
    result.push_str(expr);
    expr.clear();
    s.clear();
    true
}

// ------------------------------------------------------------------ resolution checks

pub(crate) fn is_locally_resolved_value(v: &Value, control: bool) -> bool {
    match v {
        Value::Expr(_) => false,
        Value::Map(m) => is_map_resolved(m, control),
        Value::List(l) => is_list_resolved(l),
        _ => true,
    }
}

pub(crate) fn is_resolved_value(v: &Value, control: bool) -> bool {
    is_resolved_value_x(v, false, control)
}

fn is_resolved_node_x(n: &Node, accept_failed: bool, control: bool) -> bool {
    if accept_failed && (n.failed() || n.has_error()) {
        return true;
    }
    is_resolved_value_x(n.value(), accept_failed, control)
}

pub(crate) fn is_resolved_value_x(v: &Value, accept_failed: bool, control: bool) -> bool {
    match v {
        Value::Expr(_) => false,
        Value::List(l) => l
            .iter()
            .all(|n| is_resolved_node_x(n, accept_failed, control)),
        Value::Map(m) => {
            is_map_resolved(m, control)
                && m.values()
                    .all(|n| is_resolved_node_x(n, accept_failed, control))
        }
        Value::Str(s) => embedded_dynaml(s).is_none(),
        _ => true,
    }
}

/// `dynaml.IsResolvedNode`
pub(crate) fn is_resolved_node(n: &Node, control: bool) -> bool {
    if n.failed() || n.undefined() {
        return false;
    }
    is_resolved_value(n.value(), control)
}

/// to bool as spiff's `toBool`
pub(crate) fn to_bool(v: &Value) -> bool {
    match v {
        Value::Nil => false,
        Value::Bool(b) => *b,
        Value::Str(s) => !s.is_empty(),
        Value::Int(i) => *i != 0,
        Value::List(l) => !l.is_empty(),
        Value::Map(m) => !m.is_empty(),
        _ => true,
    }
}
