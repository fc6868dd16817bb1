//! The parser of Go's `text/template/parse` (parse.go, node.go): the same grammar, the same
//! three-token lookahead (so errors carry the same line numbers), the same node positions and
//! the same `String()` forms of nodes that execution errors quote.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::{self, Display, Write as _};
use std::rc::Rc;

use super::lex::{Item, ItemType, Lexer};
use super::print;
use super::strconv;
use super::value::Value;

pub(crate) type Pos = usize;

/// Nesting limit for parenthesized pipelines and control structures together (Go limits
/// parentheses to 10000; its goroutine stacks grow, ours do not).
const MAX_STACK_DEPTH: usize = 100;

pub(crate) enum Node {
    Text(TextNode),
    Action(ActionNode),
    If(Box<BranchNode>),
    Range(Box<BranchNode>),
    With(Box<BranchNode>),
    Template(TemplateNode),
    Break { pos: Pos },
    Continue { pos: Pos },
    // Only while parsing.
    End { pos: Pos },
    Else { pos: Pos },
}

pub(crate) struct TextNode {
    pub pos: Pos,
    pub text: Box<str>,
}

pub(crate) struct ListNode {
    pub pos: Pos,
    pub nodes: Vec<Node>,
}

pub(crate) struct ActionNode {
    pub pos: Pos,
    pub pipe: PipeNode,
}

pub(crate) struct BranchNode {
    pub pos: Pos,
    pub pipe: PipeNode,
    pub list: ListNode,
    pub else_list: Option<ListNode>,
}

pub(crate) struct TemplateNode {
    pub pos: Pos,
    pub name: String,
    pub pipe: Option<PipeNode>,
}

pub(crate) struct PipeNode {
    pub pos: Pos,
    pub is_assign: bool,
    pub decl: Vec<VariableNode>,
    pub cmds: Vec<CommandNode>,
}

pub(crate) struct CommandNode {
    pub pos: Pos,
    pub args: Vec<Arg>,
}

pub(crate) struct VariableNode {
    pub pos: Pos,
    pub ident: Vec<String>,
}

pub(crate) enum Arg {
    Field {
        pos: Pos,
        ident: Vec<String>,
    },
    Chain {
        pos: Pos,
        node: Box<Arg>,
        field: Vec<String>,
    },
    Identifier {
        pos: Pos,
        name: String,
    },
    Variable(VariableNode),
    Dot {
        pos: Pos,
    },
    Nil {
        pos: Pos,
    },
    Bool {
        pos: Pos,
        val: bool,
    },
    Number(Box<NumberNode>),
    String {
        pos: Pos,
        quoted: String,
        text: Rc<str>,
    },
    Pipe(Box<PipeNode>),
}

pub(crate) struct NumberNode {
    pub pos: Pos,
    pub text: String,
    pub is_int: bool,
    pub is_uint: bool,
    pub is_float: bool,
    pub is_complex: bool,
    pub int64: i64,
    pub uint64: u64,
    pub float64: f64,
    /// Go's `idealConstant`: the value a number has where no type is known, or the error
    /// execution reports (computed once, at parse time).
    pub ideal: Result<Value, String>,
}

impl Arg {
    pub fn pos(&self) -> Pos {
        match self {
            Arg::Field { pos, .. }
            | Arg::Chain { pos, .. }
            | Arg::Identifier { pos, .. }
            | Arg::Dot { pos }
            | Arg::Nil { pos }
            | Arg::Bool { pos, .. }
            | Arg::String { pos, .. } => *pos,
            Arg::Variable(v) => v.pos,
            Arg::Number(n) => n.pos,
            Arg::Pipe(p) => p.pos,
        }
    }

    fn is_non_executable(&self) -> bool {
        matches!(
            self,
            Arg::Bool { .. }
                | Arg::Dot { .. }
                | Arg::Nil { .. }
                | Arg::Number(_)
                | Arg::String { .. }
        )
    }
}

// --- String() of nodes, as Go's node.go writes them ---------------------------------------

impl Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Field { ident, .. } => {
                for id in ident {
                    f.write_char('.')?;
                    f.write_str(id)?;
                }
                Ok(())
            }
            Arg::Chain { node, field, .. } => {
                if let Arg::Pipe(p) = &**node {
                    write!(f, "({p})")?;
                } else {
                    write!(f, "{node}")?;
                }
                for id in field {
                    f.write_char('.')?;
                    f.write_str(id)?;
                }
                Ok(())
            }
            Arg::Identifier { name, .. } => f.write_str(name),
            Arg::Variable(v) => write!(f, "{v}"),
            Arg::Dot { .. } => f.write_char('.'),
            Arg::Nil { .. } => f.write_str("nil"),
            Arg::Bool { val, .. } => f.write_str(if *val { "true" } else { "false" }),
            Arg::Number(n) => f.write_str(&n.text),
            Arg::String { quoted, .. } => f.write_str(quoted),
            Arg::Pipe(p) => write!(f, "{p}"),
        }
    }
}

impl Display for VariableNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, id) in self.ident.iter().enumerate() {
            if i > 0 {
                f.write_char('.')?;
            }
            f.write_str(id)?;
        }
        Ok(())
    }
}

impl Display for CommandNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, arg) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_char(' ')?;
            }
            if let Arg::Pipe(p) = arg {
                write!(f, "({p})")?;
                continue;
            }
            write!(f, "{arg}")?;
        }
        Ok(())
    }
}

impl Display for PipeNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            for (i, v) in self.decl.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{v}")?;
            }
            f.write_str(" := ")?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

impl Display for ListNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for n in &self.nodes {
            write!(f, "{n}")?;
        }
        Ok(())
    }
}

impl Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Text(t) => f.write_str(&t.text),
            Node::Action(a) => write!(f, "{{{{{}}}}}", a.pipe),
            Node::If(b) => write_branch(f, "if", b),
            Node::Range(b) => write_branch(f, "range", b),
            Node::With(b) => write_branch(f, "with", b),
            Node::Template(t) => {
                write!(f, "{{{{template {}", print::quote(&t.name))?;
                if let Some(p) = &t.pipe {
                    write!(f, " {p}")?;
                }
                f.write_str("}}")
            }
            Node::Break { .. } => f.write_str("{{break}}"),
            Node::Continue { .. } => f.write_str("{{continue}}"),
            Node::End { .. } => f.write_str("{{end}}"),
            Node::Else { .. } => f.write_str("{{else}}"),
        }
    }
}

fn write_branch(f: &mut fmt::Formatter<'_>, name: &str, b: &BranchNode) -> fmt::Result {
    write!(f, "{{{{{name} {}}}}}{}", b.pipe, b.list)?;
    if let Some(e) = &b.else_list {
        write!(f, "{{{{else}}}}{e}")?;
    }
    f.write_str("{{end}}")
}

impl Node {
    pub fn pos(&self) -> Pos {
        match self {
            Node::Text(t) => t.pos,
            Node::Action(a) => a.pos,
            Node::If(b) | Node::Range(b) | Node::With(b) => b.pos,
            Node::Template(t) => t.pos,
            Node::Break { pos }
            | Node::Continue { pos }
            | Node::End { pos }
            | Node::Else { pos } => *pos,
        }
    }
}

/// Go's `parse.IsEmptyTree`.
pub(crate) fn is_empty_list(l: &ListNode) -> bool {
    l.nodes.iter().all(|n| match n {
        Node::Text(t) => t.text.trim().is_empty(),
        _ => false,
    })
}

// --- numbers ------------------------------------------------------------------------------

fn new_number(pos: Pos, text: &str, typ: ItemType) -> Result<NumberNode, String> {
    let mut n = NumberNode {
        pos,
        text: text.to_string(),
        is_int: false,
        is_uint: false,
        is_float: false,
        is_complex: false,
        int64: 0,
        uint64: 0,
        float64: 0.0,
        ideal: Ok(Value::Nil),
    };
    match typ {
        ItemType::CharConstant => {
            let (r, tail) = strconv::unquote_char(&text[1..], b'\'')
                .map_err(|_| "invalid syntax".to_string())?;
            if tail != "'" {
                return Err(format!("malformed character constant: {text}"));
            }
            n.int64 = r as i64;
            n.uint64 = r as u64;
            n.is_int = true;
            n.is_uint = true;
            n.float64 = r as f64;
            n.is_float = true;
        }
        ItemType::Complex => {
            n.is_complex = true;
        }
        _ => {
            if text.ends_with('i') && strconv::parse_float(&text[..text.len() - 1]).is_some() {
                n.is_complex = true;
            } else {
                let u = strconv::parse_uint(text);
                if let Some(u) = u {
                    n.is_uint = true;
                    n.uint64 = u;
                    n.float64 = u as f64;
                }
                if let Some(i) = strconv::parse_int(text) {
                    n.is_int = true;
                    n.int64 = i;
                    if i == 0 {
                        n.is_uint = true;
                    }
                }
                if n.is_int {
                    n.is_float = true;
                    n.float64 = n.int64 as f64;
                } else if n.is_uint {
                    n.is_float = true;
                } else if let Some(f) = strconv::parse_float(text) {
                    if !text.contains(['.', 'e', 'E', 'p', 'P']) {
                        return Err(format!("integer overflow: {}", print::quote(text)));
                    }
                    n.is_float = true;
                    n.float64 = f;
                    if !n.is_int && (f as i64) as f64 == f && f.fract() == 0.0 && f.abs() < 9.2e18 {
                        n.is_int = true;
                        n.int64 = f as i64;
                    }
                    if !n.is_uint && f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 {
                        n.is_uint = true;
                        n.uint64 = f as u64;
                    }
                }
                if !n.is_int && !n.is_uint && !n.is_float {
                    return Err(format!("illegal number syntax: {}", print::quote(text)));
                }
            }
        }
    }
    n.ideal = ideal_constant(&n);
    Ok(n)
}

/// Go's `idealConstant`.
fn ideal_constant(n: &NumberNode) -> Result<Value, String> {
    let t = &n.text;
    let is_hex_int = t.len() > 2
        && t.as_bytes()[0] == b'0'
        && (t.as_bytes()[1] == b'x' || t.as_bytes()[1] == b'X')
        && !t.contains(['p', 'P']);
    let is_rune = t.starts_with('\'');
    if n.is_complex {
        return Err(format!("complex constant {t} is not supported"));
    }
    if n.is_float && !is_hex_int && !is_rune && t.contains(['.', 'e', 'E', 'p', 'P']) {
        return Ok(Value::Float(n.float64));
    }
    if n.is_int {
        return Ok(Value::Int(n.int64));
    }
    if n.is_uint {
        return Err(format!("{t} overflows int"));
    }
    Ok(Value::Nil)
}

// --- the parser ---------------------------------------------------------------------------

/// The trees one parse produced: name → root list, as Go's `treeSet`.
pub(crate) type TreeSet = HashMap<String, ListNode>;

struct TreeState<'a> {
    name: String,
    token: [Item<'a>; 3],
    peek_count: usize,
    vars: Vec<String>,
    action_line: usize,
    range_depth: usize,
}

struct Parser<'a, 'f> {
    parse_name: &'a str,
    lex: Lexer<'a>,
    st: TreeState<'a>,
    tree_set: TreeSet,
    has_func: &'f dyn Fn(&str) -> bool,
    depth: usize,
}

type PResult<T> = Result<T, String>;

fn dummy_item<'a>() -> Item<'a> {
    Item {
        typ: ItemType::Eof,
        pos: 0,
        val: Cow::Borrowed(""),
        line: 0,
    }
}

fn fresh_state<'a>(name: &str) -> TreeState<'a> {
    TreeState {
        name: name.to_string(),
        token: [dummy_item(), dummy_item(), dummy_item()],
        peek_count: 0,
        vars: vec!["$".to_string()],
        action_line: 0,
        range_depth: 0,
    }
}

/// Parses `text` as the template `name` (and the templates it defines). `has_func` tells which
/// function names exist. Errors are Go's messages (`template: NAME:LINE: ...`).
pub(crate) fn parse(name: &str, text: &str, has_func: &dyn Fn(&str) -> bool) -> PResult<TreeSet> {
    let mut lex = Lexer::new(text);
    lex.break_ok = !has_func("break");
    lex.continue_ok = !has_func("continue");
    let mut p = Parser {
        parse_name: name,
        lex,
        st: fresh_state(name),
        tree_set: HashMap::new(),
        has_func,
        depth: 0,
    };
    let root = p.parse_top()?;
    p.add(root)?;
    Ok(p.tree_set)
}

impl<'a, 'f> Parser<'a, 'f> {
    fn next(&mut self) -> Item<'a> {
        if self.st.peek_count > 0 {
            self.st.peek_count -= 1;
        } else {
            self.st.token[0] = self.lex.next_item();
        }
        self.st.token[self.st.peek_count].clone()
    }

    fn backup(&mut self) {
        self.st.peek_count += 1;
    }

    fn backup2(&mut self, t1: Item<'a>) {
        self.st.token[1] = t1;
        self.st.peek_count = 2;
    }

    fn backup3(&mut self, t2: Item<'a>, t1: Item<'a>) {
        self.st.token[1] = t1;
        self.st.token[2] = t2;
        self.st.peek_count = 3;
    }

    fn peek(&mut self) -> Item<'a> {
        if self.st.peek_count > 0 {
            return self.st.token[self.st.peek_count - 1].clone();
        }
        self.st.peek_count = 1;
        self.st.token[0] = self.lex.next_item();
        self.st.token[0].clone()
    }

    fn next_non_space(&mut self) -> Item<'a> {
        loop {
            let t = self.next();
            if t.typ != ItemType::Space {
                return t;
            }
        }
    }

    fn peek_non_space(&mut self) -> Item<'a> {
        let t = self.next_non_space();
        self.backup();
        t
    }

    fn errorf<T>(&self, msg: impl Display) -> PResult<T> {
        Err(format!(
            "template: {}:{}: {}",
            self.parse_name, self.st.token[0].line, msg
        ))
    }

    fn expect(&mut self, expected: ItemType, context: &str) -> PResult<Item<'a>> {
        let t = self.next_non_space();
        if t.typ != expected {
            return self.unexpected(&t, context);
        }
        Ok(t)
    }

    fn expect_one_of(&mut self, e1: ItemType, e2: ItemType, context: &str) -> PResult<Item<'a>> {
        let t = self.next_non_space();
        if t.typ != e1 && t.typ != e2 {
            return self.unexpected(&t, context);
        }
        Ok(t)
    }

    fn unexpected<T>(&self, token: &Item<'_>, context: &str) -> PResult<T> {
        if token.typ == ItemType::Error {
            let mut extra = String::new();
            if self.st.action_line != 0 && self.st.action_line != token.line {
                extra = format!(
                    " in action started at {}:{}",
                    self.parse_name, self.st.action_line
                );
                if token.val.ends_with(" action") {
                    extra = extra[" in action".len()..].to_string();
                }
            }
            return self.errorf(format_args!("{token}{extra}"));
        }
        self.errorf(format_args!("unexpected {token} in {context}"))
    }

    /// `t.add()`: installs the finished tree in the set.
    fn add(&mut self, root: ListNode) -> PResult<()> {
        let name = self.st.name.clone();
        match self.tree_set.get(&name) {
            Some(existing) if !is_empty_list(existing) => {
                if !is_empty_list(&root) {
                    return self.errorf(format_args!(
                        "template: multiple definition of template {}",
                        print::quote(&name)
                    ));
                }
            }
            _ => {
                self.tree_set.insert(name, root);
            }
        }
        Ok(())
    }

    fn parse_top(&mut self) -> PResult<ListNode> {
        let mut root = ListNode {
            pos: self.peek().pos,
            nodes: Vec::new(),
        };
        while self.peek().typ != ItemType::Eof {
            if self.peek().typ == ItemType::LeftDelim {
                let delim = self.next();
                if self.next_non_space().typ == ItemType::Define {
                    let saved = std::mem::replace(&mut self.st, fresh_state("definition"));
                    let r = self.parse_definition();
                    self.st = saved;
                    r?;
                    continue;
                }
                self.backup2(delim);
            }
            let n = self.text_or_action()?;
            match n {
                Node::End { .. } | Node::Else { .. } => {
                    return self.errorf(format_args!("unexpected {n}"));
                }
                n => root.nodes.push(n),
            }
        }
        Ok(root)
    }

    fn parse_definition(&mut self) -> PResult<()> {
        let context = "define clause";
        let name = self.expect_one_of(ItemType::String, ItemType::RawString, context)?;
        match strconv::unquote(&name.val) {
            Ok(s) => self.st.name = s,
            Err(()) => return self.errorf("invalid syntax"),
        }
        self.expect(ItemType::RightDelim, context)?;
        let (root, end) = self.item_list()?;
        if !matches!(end, Node::End { .. }) {
            return self.errorf(format_args!("unexpected {end} in {context}"));
        }
        self.add(root)
    }

    fn item_list(&mut self) -> PResult<(ListNode, Node)> {
        let mut list = ListNode {
            pos: self.peek_non_space().pos,
            nodes: Vec::new(),
        };
        while self.peek_non_space().typ != ItemType::Eof {
            let n = self.text_or_action()?;
            match n {
                Node::End { .. } | Node::Else { .. } => return Ok((list, n)),
                n => list.nodes.push(n),
            }
        }
        self.errorf("unexpected EOF")
    }

    fn text_or_action(&mut self) -> PResult<Node> {
        let token = self.next_non_space();
        match token.typ {
            ItemType::Text => Ok(Node::Text(TextNode {
                pos: token.pos,
                text: Box::from(&*token.val),
            })),
            ItemType::LeftDelim => {
                self.st.action_line = token.line;
                let r = self.action();
                self.st.action_line = 0;
                r
            }
            _ => self.unexpected(&token, "input"),
        }
    }

    fn action(&mut self) -> PResult<Node> {
        let token = self.next_non_space();
        match token.typ {
            ItemType::Block => return self.block_control(),
            ItemType::Break => return self.break_control(token.pos),
            ItemType::Continue => return self.continue_control(token.pos),
            ItemType::Else => return self.else_control(),
            ItemType::End => return self.end_control(),
            ItemType::If => return self.branch_control("if"),
            ItemType::Range => return self.branch_control("range"),
            ItemType::Template => return self.template_control(),
            ItemType::With => return self.branch_control("with"),
            _ => {}
        }
        self.backup();
        let token = self.peek();
        let pipe = self.pipeline("command", ItemType::RightDelim)?;
        Ok(Node::Action(ActionNode {
            pos: token.pos,
            pipe,
        }))
    }

    fn break_control(&mut self, pos: Pos) -> PResult<Node> {
        let token = self.next_non_space();
        if token.typ != ItemType::RightDelim {
            return self.unexpected(&token, "{{break}}");
        }
        if self.st.range_depth == 0 {
            return self.errorf("{{break}} outside {{range}}");
        }
        Ok(Node::Break { pos })
    }

    fn continue_control(&mut self, pos: Pos) -> PResult<Node> {
        let token = self.next_non_space();
        if token.typ != ItemType::RightDelim {
            return self.unexpected(&token, "{{continue}}");
        }
        if self.st.range_depth == 0 {
            return self.errorf("{{continue}} outside {{range}}");
        }
        Ok(Node::Continue { pos })
    }

    fn pipeline(&mut self, context: &str, end: ItemType) -> PResult<PipeNode> {
        let token = self.peek_non_space();
        let mut pipe = PipeNode {
            pos: token.pos,
            is_assign: false,
            decl: Vec::new(),
            cmds: Vec::new(),
        };
        // Declarations or assignments?
        'decls: loop {
            let v = self.peek_non_space();
            if v.typ == ItemType::Variable {
                self.next();
                let token_after_variable = self.peek();
                let next = self.peek_non_space();
                if next.typ == ItemType::Assign || next.typ == ItemType::Declare {
                    pipe.is_assign = next.typ == ItemType::Assign;
                    self.next_non_space();
                    pipe.decl.push(VariableNode {
                        pos: v.pos,
                        ident: v.val.split('.').map(str::to_string).collect(),
                    });
                    self.st.vars.push(v.val.to_string());
                } else if next.typ == ItemType::Char && &*next.val == "," {
                    self.next_non_space();
                    pipe.decl.push(VariableNode {
                        pos: v.pos,
                        ident: v.val.split('.').map(str::to_string).collect(),
                    });
                    self.st.vars.push(v.val.to_string());
                    if context == "range" && pipe.decl.len() < 2 {
                        match self.peek_non_space().typ {
                            ItemType::Variable | ItemType::RightDelim | ItemType::RightParen => {
                                continue 'decls;
                            }
                            _ => return self.errorf("range can only initialize variables"),
                        }
                    }
                    return self.errorf(format_args!("too many declarations in {context}"));
                } else if token_after_variable.typ == ItemType::Space {
                    self.backup3(v, token_after_variable);
                } else {
                    self.backup2(v);
                }
            }
            break;
        }
        loop {
            let token = self.next_non_space();
            match token.typ {
                t if t == end => {
                    self.check_pipeline(&pipe, context)?;
                    return Ok(pipe);
                }
                ItemType::Bool
                | ItemType::CharConstant
                | ItemType::Complex
                | ItemType::Dot
                | ItemType::Field
                | ItemType::Identifier
                | ItemType::Number
                | ItemType::Nil
                | ItemType::RawString
                | ItemType::String
                | ItemType::Variable
                | ItemType::LeftParen => {
                    self.backup();
                    let c = self.command()?;
                    pipe.cmds.push(c);
                }
                _ => return self.unexpected(&token, context),
            }
        }
    }

    fn check_pipeline(&self, pipe: &PipeNode, context: &str) -> PResult<()> {
        if pipe.cmds.is_empty() {
            return self.errorf(format_args!("missing value for {context}"));
        }
        for (i, c) in pipe.cmds.iter().enumerate().skip(1) {
            if c.args[0].is_non_executable() {
                return self.errorf(format_args!(
                    "non executable command in pipeline stage {}",
                    i + 1
                ));
            }
        }
        Ok(())
    }

    fn parse_control(
        &mut self,
        context: &str,
    ) -> PResult<(Pos, PipeNode, ListNode, Option<ListNode>)> {
        let nvars = self.st.vars.len();
        let r = self.parse_control_inner(context);
        self.st.vars.truncate(nvars);
        r
    }

    fn parse_control_inner(
        &mut self,
        context: &str,
    ) -> PResult<(Pos, PipeNode, ListNode, Option<ListNode>)> {
        if self.depth >= MAX_STACK_DEPTH {
            return self.errorf("max expression depth exceeded");
        }
        self.depth += 1;
        let pipe = self.pipeline(context, ItemType::RightDelim)?;
        if context == "range" {
            self.st.range_depth += 1;
        }
        let r = self.item_list();
        if context == "range" {
            self.st.range_depth -= 1;
        }
        let (list, next) = r?;
        let mut else_list = None;
        if let Node::Else { pos } = next {
            if context == "if" && self.peek().typ == ItemType::If {
                self.next();
                let n = self.branch_control("if")?;
                else_list = Some(ListNode {
                    pos,
                    nodes: vec![n],
                });
            } else {
                let (l, next) = self.item_list()?;
                if !matches!(next, Node::End { .. }) {
                    return self.errorf(format_args!("expected end; found {next}"));
                }
                else_list = Some(l);
            }
        }
        self.depth -= 1;
        Ok((pipe.pos, pipe, list, else_list))
    }

    fn branch_control(&mut self, context: &str) -> PResult<Node> {
        let (pos, pipe, list, else_list) = self.parse_control(context)?;
        let b = Box::new(BranchNode {
            pos,
            pipe,
            list,
            else_list,
        });
        Ok(match context {
            "if" => Node::If(b),
            "range" => Node::Range(b),
            _ => Node::With(b),
        })
    }

    fn end_control(&mut self) -> PResult<Node> {
        let t = self.expect(ItemType::RightDelim, "end")?;
        Ok(Node::End { pos: t.pos })
    }

    fn else_control(&mut self) -> PResult<Node> {
        let peek = self.peek_non_space();
        if peek.typ == ItemType::If {
            return Ok(Node::Else { pos: peek.pos });
        }
        let t = self.expect(ItemType::RightDelim, "else")?;
        Ok(Node::Else { pos: t.pos })
    }

    fn block_control(&mut self) -> PResult<Node> {
        let context = "block clause";
        let token = self.next_non_space();
        let name = self.parse_template_name(&token, context)?;
        let pipe = self.pipeline(context, ItemType::RightDelim)?;

        let saved = std::mem::replace(&mut self.st, fresh_state(&name));
        let r = self.item_list();
        let r = match r {
            Ok((root, end)) => {
                if !matches!(end, Node::End { .. }) {
                    // Go reports this through the outer tree, whose token[0] is stale.
                    let msg = format!("unexpected {end} in {context}");
                    let e = Err(format!(
                        "template: {}:{}: {}",
                        self.parse_name, saved.token[0].line, msg
                    ));
                    self.st = saved;
                    return e;
                }
                self.add(root)
            }
            Err(e) => Err(e),
        };
        self.st = saved;
        r?;
        Ok(Node::Template(TemplateNode {
            pos: token.pos,
            name,
            pipe: Some(pipe),
        }))
    }

    fn template_control(&mut self) -> PResult<Node> {
        let context = "template clause";
        let token = self.next_non_space();
        let name = self.parse_template_name(&token, context)?;
        let mut pipe = None;
        if self.next_non_space().typ != ItemType::RightDelim {
            self.backup();
            pipe = Some(self.pipeline(context, ItemType::RightDelim)?);
        }
        Ok(Node::Template(TemplateNode {
            pos: token.pos,
            name,
            pipe,
        }))
    }

    fn parse_template_name(&mut self, token: &Item<'_>, context: &str) -> PResult<String> {
        match token.typ {
            ItemType::String | ItemType::RawString => match strconv::unquote(&token.val) {
                Ok(s) => Ok(s),
                Err(()) => self.errorf("invalid syntax"),
            },
            _ => self.unexpected(token, context),
        }
    }

    fn command(&mut self) -> PResult<CommandNode> {
        let mut cmd = CommandNode {
            pos: self.peek_non_space().pos,
            args: Vec::new(),
        };
        loop {
            self.peek_non_space();
            if let Some(operand) = self.operand()? {
                cmd.args.push(operand);
            }
            let token = self.next();
            match token.typ {
                ItemType::Space => continue,
                ItemType::RightDelim | ItemType::RightParen => self.backup(),
                ItemType::Pipe => {}
                _ => return self.unexpected(&token, "operand"),
            }
            break;
        }
        if cmd.args.is_empty() {
            return self.errorf("empty command");
        }
        Ok(cmd)
    }

    fn operand(&mut self) -> PResult<Option<Arg>> {
        let Some(node) = self.term()? else {
            return Ok(None);
        };
        if self.peek().typ == ItemType::Field {
            let chain_pos = self.peek().pos;
            let mut fields: Vec<String> = Vec::new();
            while self.peek().typ == ItemType::Field {
                let f = self.next();
                fields.push(f.val[1..].to_string());
            }
            return Ok(Some(match node {
                Arg::Field { mut ident, .. } => {
                    ident.extend(fields);
                    Arg::Field {
                        pos: chain_pos,
                        ident,
                    }
                }
                Arg::Variable(mut v) => {
                    v.ident.extend(fields);
                    Arg::Variable(VariableNode {
                        pos: chain_pos,
                        ident: v.ident,
                    })
                }
                n @ (Arg::Bool { .. }
                | Arg::String { .. }
                | Arg::Number(_)
                | Arg::Nil { .. }
                | Arg::Dot { .. }) => {
                    return self.errorf(format_args!(
                        "unexpected . after term {}",
                        print::quote(&n.to_string())
                    ));
                }
                n => Arg::Chain {
                    pos: chain_pos,
                    node: Box::new(n),
                    field: fields,
                },
            }));
        }
        Ok(Some(node))
    }

    fn term(&mut self) -> PResult<Option<Arg>> {
        let token = self.next_non_space();
        Ok(Some(match token.typ {
            ItemType::Identifier => {
                if !(self.has_func)(&token.val) {
                    return self.errorf(format_args!(
                        "function {} not defined",
                        print::quote(&token.val)
                    ));
                }
                Arg::Identifier {
                    pos: token.pos,
                    name: token.val.to_string(),
                }
            }
            ItemType::Dot => Arg::Dot { pos: token.pos },
            ItemType::Nil => Arg::Nil { pos: token.pos },
            ItemType::Variable => return self.use_var(token.pos, &token.val).map(Some),
            ItemType::Field => Arg::Field {
                pos: token.pos,
                ident: token.val.split('.').skip(1).map(str::to_string).collect(),
            },
            ItemType::Bool => Arg::Bool {
                pos: token.pos,
                val: &*token.val == "true",
            },
            ItemType::CharConstant | ItemType::Complex | ItemType::Number => {
                match new_number(token.pos, &token.val, token.typ) {
                    Ok(n) => Arg::Number(Box::new(n)),
                    Err(e) => return self.errorf(e),
                }
            }
            ItemType::LeftParen => {
                if self.depth >= MAX_STACK_DEPTH {
                    return self.errorf("max expression depth exceeded");
                }
                self.depth += 1;
                let p = self.pipeline("parenthesized pipeline", ItemType::RightParen);
                self.depth -= 1;
                Arg::Pipe(Box::new(p?))
            }
            ItemType::String | ItemType::RawString => match strconv::unquote(&token.val) {
                Ok(s) => Arg::String {
                    pos: token.pos,
                    text: Rc::from(s),
                    quoted: token.val.to_string(),
                },
                Err(()) => return self.errorf("invalid syntax"),
            },
            _ => {
                self.backup();
                return Ok(None);
            }
        }))
    }

    fn use_var(&mut self, pos: Pos, name: &str) -> PResult<Arg> {
        let ident: Vec<String> = name.split('.').map(str::to_string).collect();
        if self.st.vars.iter().any(|v| *v == ident[0]) {
            return Ok(Arg::Variable(VariableNode { pos, ident }));
        }
        self.errorf(format_args!(
            "undefined variable {}",
            print::quote(&ident[0])
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn funcs(name: &str) -> bool {
        matches!(name, "printf" | "len" | "index" | "eq" | "and" | "upper")
    }

    fn p(text: &str) -> Result<String, String> {
        let set = parse("t", text, &funcs)?;
        Ok(set.get("t").map(|l| l.to_string()).unwrap_or_default())
    }

    #[test]
    fn round_trips_like_go_node_strings() {
        let cases = [
            ("{{.X.Y}}", "{{.X.Y}}"),
            ("{{$x := .A}}{{$x.B}}", "{{$x := .A}}{{$x.B}}"),
            ("{{ (index .a 1).b }}", "{{(index .a 1).b}}"),
            (
                "{{if .a}}x{{else if .b}}y{{else}}z{{end}}",
                "{{if .a}}x{{else}}{{if .b}}y{{else}}z{{end}}{{end}}",
            ),
            (
                "{{range $i, $e := .}}{{$i}}{{end}}",
                "{{range $i, $e := .}}{{$i}}{{end}}",
            ),
            ("{{with .x}}{{.}}{{end}}", "{{with .x}}{{.}}{{end}}"),
            ("{{template \"a\" .}}", "{{template \"a\" .}}"),
            (
                "{{ 'a' 1.5 0x10 \"s\" `r` nil true }}",
                "{{'a' 1.5 0x10 \"s\" `r` nil true}}",
            ),
            (
                "{{ .a | printf \"%d\" | len }}",
                "{{.a | printf \"%d\" | len}}",
            ),
        ];
        for (src, want) in cases {
            assert_eq!(p(src).unwrap(), want, "{src}");
        }
    }

    #[test]
    fn parse_errors_match_go() {
        let cases = [
            ("{{ .x }", "template: t:1: unexpected \"}\" in operand"),
            ("{{ foo }}", "template: t:1: function \"foo\" not defined"),
            ("{{ if .x }}", "template: t:1: unexpected EOF"),
            ("{{ $x }}", "template: t:1: undefined variable \"$x\""),
            ("{{end}}", "template: t:1: unexpected {{end}}"),
            ("{{else}}", "template: t:1: unexpected {{else}}"),
            ("{{ }}", "template: t:1: missing value for command"),
            (
                "{{ .x | 1 }}",
                "template: t:1: non executable command in pipeline stage 2",
            ),
            ("\n{{ .x\n", "template: t:3: unclosed action started at t:2"),
            ("{{ .x ", "template: t:1: unclosed action"),
            ("{{break}}", "template: t:1: {{break}} outside {{range}}"),
            (
                "{{range .}}{{break 1}}{{end}}",
                "template: t:1: unexpected \"1\" in {{break}}",
            ),
            ("{{ 1.x }}", "template: t:1: bad number syntax: \"1.x\""),
            (
                "{{ true.x }}",
                "template: t:1: unexpected . after term \"true\"",
            ),
            (
                "{{ \"a\".x }}",
                "template: t:1: unexpected . after term \"\\\"a\\\"\"",
            ),
            (
                "{{define \"a\"}}x{{end}}{{define \"a\"}}y{{end}}",
                "template: t:1: template: multiple definition of template \"a\"",
            ),
            (
                "{{range $a, $b, $c := .}}{{end}}",
                "template: t:1: too many declarations in range",
            ),
            (
                "{{range $a, 1}}{{end}}",
                "template: t:1: range can only initialize variables",
            ),
            (
                "{{ 'ab' }}",
                "template: t:1: malformed character constant: 'ab'",
            ),
            (
                "{{ 99999999999999999999 }}",
                "template: t:1: integer overflow: \"99999999999999999999\"",
            ),
            ("{{ 08 }}", "template: t:1: integer overflow: \"08\""),
            ("{{ 0x }}", "template: t:1: illegal number syntax: \"0x\""),
            ("{{ \"\\q\" }}", "template: t:1: invalid syntax"),
            (
                "{{ .x := 1 }}",
                "template: t:1: unexpected \":=\" in operand",
            ),
            (
                "{{template .x}}",
                "template: t:1: unexpected \".x\" in template clause",
            ),
            (
                "{{with .x}}{{else if .y}}{{end}}",
                "template: t:1: unexpected <if> in input",
            ),
            ("{{ (.x }}", "template: t:1: unclosed left paren"),
            ("{{ .x) }}", "template: t:1: unexpected \")\" in command"),
        ];
        for (src, want) in cases {
            assert_eq!(p(src).unwrap_err(), want, "{src}");
        }
    }

    #[test]
    fn variables_scope_to_end() {
        assert!(p("{{if 1}}{{$x := 1}}{{end}}{{$x}}").is_err());
        assert!(p("{{$x := 1}}{{if 1}}{{$x}}{{end}}{{$x}}").is_ok());
        assert!(p("{{range $i, $e := .}}{{end}}{{$e}}").is_err());
        assert!(p("{{define \"a\"}}{{$x := 1}}{{end}}{{$x}}").is_err());
    }

    #[test]
    fn break_and_continue_are_functions_when_defined() {
        let set = parse("t", "{{ break }}", &|n| n == "break").unwrap();
        assert_eq!(set["t"].to_string(), "{{break}}");
    }
}
