//! The dynaml expression parser: a hand-written recursive descent parser that follows spiff's
//! PEG grammar (`dynaml/dynaml.peg`) rule by rule, with PEG's ordered choice and backtracking.
//! A few rules are memoized so that nested parentheses parse in linear time.

#![allow(clippy::while_let_loop, clippy::type_complexity)]

use std::collections::HashMap;
use std::rc::Rc;

use super::expr::{Expr, MapCtx, Param};

/// Maximum nesting of expressions (protects the stack).
const MAX_DEPTH: usize = 64;

/// Parse a dynaml expression (the text between `((` and `))`).
///
/// `path` and `stub_path` are the node's paths; they are used by `merge` and `auto`.
pub(crate) fn parse(
    source: &str,
    path: &[String],
    stub_path: &[String],
) -> Result<Rc<Expr>, String> {
    let mut p = Parser {
        s: source.as_bytes(),
        memo: HashMap::new(),
        path,
        stub_path,
        depth: 0,
        max_pos: 0,
        error: None,
    };
    let r = p
        .prefer(0)
        .or_else(|| p.marked_expression(0))
        .or_else(|| p.expression(0));
    match r {
        Some((e, pos)) if pos == p.s.len() => Ok(e),
        _ => {
            if let Some(e) = p.error.take() {
                return Err(e);
            }
            Err(p.parse_error())
        }
    }
}

type R = Option<(Rc<Expr>, usize)>;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Rule {
    Expression,
    Level5,
    Level0,
}

struct Parser<'a> {
    s: &'a [u8],
    memo: HashMap<(Rule, usize), R>,
    path: &'a [String],
    stub_path: &'a [String],
    depth: usize,
    max_pos: usize,
    error: Option<String>,
}

fn is_key_start(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}
fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}
fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

impl<'a> Parser<'a> {
    fn parse_error(&self) -> String {
        let end = self.max_pos.min(self.s.len());
        let txt = String::from_utf8_lossy(&self.s[..end]);
        format!(
            "parse error near symbol {} - symbol {}: '{}'",
            0,
            end,
            txt.trim_start()
        )
    }

    #[inline]
    fn at(&self, p: usize) -> Option<u8> {
        self.s.get(p).copied()
    }

    #[inline]
    fn note(&mut self, p: usize) {
        if p > self.max_pos {
            self.max_pos = p;
        }
    }

    fn lit(&mut self, p: usize, l: &str) -> Option<usize> {
        let b = l.as_bytes();
        if self.s.len() >= p + b.len() && &self.s[p..p + b.len()] == b {
            self.note(p + b.len());
            Some(p + b.len())
        } else {
            None
        }
    }

    fn ch(&mut self, p: usize, c: u8) -> Option<usize> {
        if self.at(p) == Some(c) {
            self.note(p + 1);
            Some(p + 1)
        } else {
            None
        }
    }

    fn ws(&self, mut p: usize) -> usize {
        while let Some(c) = self.at(p) {
            if is_ws(c) {
                p += 1;
            } else {
                break;
            }
        }
        p
    }

    fn req_ws(&self, p: usize) -> Option<usize> {
        let q = self.ws(p);
        if q > p { Some(q) } else { None }
    }

    fn text(&self, a: usize, b: usize) -> String {
        String::from_utf8_lossy(&self.s[a..b]).into_owned()
    }

    fn memo(&mut self, rule: Rule, p: usize, f: impl FnOnce(&mut Self, usize) -> R) -> R {
        if let Some(r) = self.memo.get(&(rule, p)) {
            return r.clone();
        }
        let r = f(self, p);
        self.memo.insert((rule, p), r.clone());
        r
    }

    // Prefer <- ws 'prefer' req_ws Expression
    fn prefer(&mut self, p: usize) -> R {
        let p = self.ws(p);
        let p = self.lit(p, "prefer")?;
        let p = self.req_ws(p)?;
        let (e, p) = self.expression(p)?;
        Some((Rc::new(Expr::Prefer(e)), p))
    }

    // MarkedExpression <- ws Marker ( req_ws SubsequentMarker )* ws MarkerExpression ? ws
    fn marked_expression(&mut self, p: usize) -> R {
        let p = self.ws(p);
        let (m, mut p) = self.marker(p)?;
        let mut list = vec![m];
        loop {
            let Some(q) = self.req_ws(p) else { break };
            let Some((m, q)) = self.marker(q) else { break };
            list.push(m);
            p = q;
        }
        p = self.ws(p);
        let mut expr = None;
        if let Some((g, q)) = self.grouped(p) {
            let contents = self.text(p, q);
            expr = Some(Rc::new(Expr::MarkerExpression { contents, expr: g }));
            p = q;
        }
        p = self.ws(p);
        Some((Rc::new(Expr::Marker { list, expr }), p))
    }

    // Marker <- '&' ( 'template' / 'temporary' / 'local' / 'inject' / 'state' / 'default' / 'dynamic' / TagMarker )
    fn marker(&mut self, p: usize) -> Option<(String, usize)> {
        let start = p;
        let p = self.ch(p, b'&')?;
        for kw in [
            "template",
            "temporary",
            "local",
            "inject",
            "state",
            "default",
            "dynamic",
        ] {
            if let Some(q) = self.lit(p, kw) {
                return Some((self.text(start, q), q));
            }
        }
        // TagMarker <- 'tag:' '*'? Tag
        let mut q = self.lit(p, "tag:")?;
        if let Some(r) = self.ch(q, b'*') {
            q = r;
        }
        let q = self.tag(q)?;
        Some((self.text(start, q), q))
    }

    // Tag <- TagComponent ( [.:] TagComponent )*
    fn tag(&mut self, p: usize) -> Option<usize> {
        let mut p = self.tag_component(p)?;
        loop {
            match self.at(p) {
                Some(b'.') | Some(b':') => match self.tag_component(p + 1) {
                    Some(q) => p = q,
                    None => break,
                },
                _ => break,
            }
        }
        Some(p)
    }

    fn tag_component(&mut self, p: usize) -> Option<usize> {
        let c = self.at(p)?;
        if !(c.is_ascii_alphabetic() || c == b'_') {
            return None;
        }
        let mut q = p + 1;
        while let Some(c) = self.at(q) {
            if c.is_ascii_alphanumeric() || c == b'_' {
                q += 1;
            } else {
                break;
            }
        }
        self.note(q);
        Some(q)
    }

    // Expression <- ( Scoped / LambdaExpr / Level7 ) ws
    fn expression(&mut self, p: usize) -> R {
        if self.depth >= MAX_DEPTH {
            if self.error.is_none() {
                self.error = Some("expression nested too deeply".to_string());
            }
            return None;
        }
        self.depth += 1;
        let r = self.memo(Rule::Expression, p, |s, p| {
            let (e, q) = s
                .scoped(p)
                .or_else(|| s.lambda_expr(p))
                .or_else(|| s.level7(p))?;
            Some((e, s.ws(q)))
        });
        self.depth -= 1;
        r
    }

    // Scoped <- ws Scope ws Expression
    // Scope <- CreateScope ws Assignments? ')'
    fn scoped(&mut self, p: usize) -> R {
        let p = self.ws(p);
        let p = self.ch(p, b'(')?;
        let p = self.ws(p);
        let (assignments, p) = match self.assignments(p) {
            Some((a, q)) => (a, q),
            None => (Vec::new(), p),
        };
        let p = self.ch(p, b')')?;
        let p = self.ws(p);
        let (e, p) = self.expression(p)?;
        Some((
            Rc::new(Expr::Scope {
                assignments,
                expr: e,
            }),
            p,
        ))
    }

    // Assignments <- Assignment (',' Assignment)*
    // Assignment <- Expression '=' Expression
    #[allow(clippy::type_complexity)]
    fn assignments(&mut self, p: usize) -> Option<(Vec<(Rc<Expr>, Rc<Expr>)>, usize)> {
        let (a, mut p) = self.assignment(p)?;
        let mut list = vec![a];
        loop {
            let Some(q) = self.ch(p, b',') else { break };
            let Some((a, q)) = self.assignment(q) else {
                break;
            };
            list.push(a);
            p = q;
        }
        Some((list, p))
    }

    fn assignment(&mut self, p: usize) -> Option<((Rc<Expr>, Rc<Expr>), usize)> {
        let (k, p) = self.expression(p)?;
        let p = self.ch(p, b'=')?;
        let (v, p) = self.expression(p)?;
        Some(((k, v), p))
    }

    // LambdaExpr <- ws Params ws '->' Expression
    // Params <- '|' StartParams ws Names? '|'
    fn lambda_expr(&mut self, p: usize) -> R {
        let p = self.ws(p);
        let p = self.ch(p, b'|')?;
        let p = self.ws(p);
        let (params, varargs, p) = match self.names(p) {
            Some(x) => x,
            None => (Vec::new(), false, p),
        };
        let p = self.ch(p, b'|')?;
        let p = self.ws(p);
        let p = self.lit(p, "->")?;
        let (body, p) = self.expression(p)?;
        Some((
            Rc::new(Expr::Lambda {
                params,
                varargs,
                body,
            }),
            p,
        ))
    }

    // Names <- NextName (',' NextName)* DefaultValue? (',' NextName DefaultValue)* VarParams?
    fn names(&mut self, p: usize) -> Option<(Vec<Param>, bool, usize)> {
        let (n, mut p) = self.next_name(p)?;
        let mut params = vec![Param {
            name: n,
            default: None,
        }];
        loop {
            let Some(q) = self.ch(p, b',') else { break };
            let Some((n, q)) = self.next_name(q) else {
                break;
            };
            params.push(Param {
                name: n,
                default: None,
            });
            p = q;
        }
        if let Some((d, q)) = self.default_value(p) {
            params.last_mut().unwrap().default = Some(d);
            p = q;
        }
        loop {
            let Some(q) = self.ch(p, b',') else { break };
            let Some((n, q)) = self.next_name(q) else {
                break;
            };
            let Some((d, q)) = self.default_value(q) else {
                break;
            };
            params.push(Param {
                name: n,
                default: Some(d),
            });
            p = q;
        }
        let mut varargs = false;
        if let Some(q) = self.lit(p, "...") {
            varargs = true;
            p = self.ws(q);
        }
        Some((params, varargs, p))
    }

    fn next_name(&mut self, p: usize) -> Option<(String, usize)> {
        let p = self.ws(p);
        let (n, p) = self.name(p)?;
        Some((n, self.ws(p)))
    }

    // Name <- [a-zA-Z0-9_]+
    fn name(&mut self, p: usize) -> Option<(String, usize)> {
        let mut q = p;
        while let Some(c) = self.at(q) {
            if c.is_ascii_alphanumeric() || c == b'_' {
                q += 1;
            } else {
                break;
            }
        }
        if q == p {
            return None;
        }
        self.note(q);
        Some((self.text(p, q), q))
    }

    fn default_value(&mut self, p: usize) -> R {
        let p = self.ch(p, b'=')?;
        self.expression(p)
    }

    // Level7 <- ws Level6 ( req_ws Or )*
    // Or <- OrOp req_ws Level6
    fn level7(&mut self, p: usize) -> R {
        let p = self.ws(p);
        let (mut e, mut p) = self.level6(p)?;
        loop {
            let Some(q) = self.req_ws(p) else { break };
            let (valid, q) = if let Some(q) = self.lit(q, "||") {
                (false, q)
            } else if let Some(q) = self.lit(q, "//") {
                (true, q)
            } else {
                break;
            };
            let Some(q) = self.req_ws(q) else { break };
            let Some((b, q)) = self.level6(q) else { break };
            e = Rc::new(if valid {
                Expr::ValidOr(e, b)
            } else {
                Expr::Or(e, b)
            });
            p = q;
        }
        Some((e, p))
    }

    // Level6 <- Conditional / Level5
    // Conditional <- Level5 ws '?' Expression ':' Expression
    fn level6(&mut self, p: usize) -> R {
        if let Some(r) = self.conditional(p) {
            return Some(r);
        }
        self.level5(p)
    }

    fn conditional(&mut self, p: usize) -> R {
        let (c, p) = self.level5(p)?;
        let p = self.ws(p);
        let p = self.ch(p, b'?')?;
        let (t, p) = self.expression(p)?;
        let p = self.ch(p, b':')?;
        let (f, p) = self.expression(p)?;
        Some((Rc::new(Expr::Cond { c, t, f }), p))
    }

    // Level5 <- Level4 ( Concatenation )*
    // Concatenation <- req_ws Level4
    fn level5(&mut self, p: usize) -> R {
        self.memo(Rule::Level5, p, |s, p| {
            let (mut e, mut p) = s.level4(p)?;
            loop {
                let Some(q) = s.req_ws(p) else { break };
                let Some((b, q)) = s.level4(q) else { break };
                e = Rc::new(Expr::Concat(e, b));
                p = q;
            }
            Some((e, p))
        })
    }

    // Level4 <- Level3 ( req_ws ( LogOr / LogAnd ) )*
    fn level4(&mut self, p: usize) -> R {
        let (mut e, mut p) = self.level3(p)?;
        loop {
            let Some(q) = self.req_ws(p) else { break };
            let (and, q) = if let Some(q) = self.lit(q, "-or") {
                (false, q)
            } else if let Some(q) = self.lit(q, "-and") {
                (true, q)
            } else {
                break;
            };
            let Some(q) = self.req_ws(q) else { break };
            let Some((b, q)) = self.level3(q) else { break };
            e = Rc::new(if and {
                Expr::LogAnd(e, b)
            } else {
                Expr::LogOr(e, b)
            });
            p = q;
        }
        Some((e, p))
    }

    // Level3 <- Level2 ( req_ws Comparison )*
    fn level3(&mut self, p: usize) -> R {
        let (mut e, mut p) = self.level2(p)?;
        loop {
            let Some(q) = self.req_ws(p) else { break };
            let mut found = None;
            for op in ["==", "!=", "<=", ">=", ">", "<"] {
                if let Some(q) = self.lit(q, op) {
                    found = Some((op, q));
                    break;
                }
            }
            let Some((op, q)) = found else { break };
            let Some(q) = self.req_ws(q) else { break };
            let Some((b, q)) = self.level2(q) else { break };
            e = Rc::new(Expr::Comparison { a: e, op, b });
            p = q;
        }
        Some((e, p))
    }

    // Level2 <- Level1 ( req_ws ( Addition / Subtraction ) )*
    fn level2(&mut self, p: usize) -> R {
        let (mut e, mut p) = self.level1(p)?;
        loop {
            let Some(q) = self.req_ws(p) else { break };
            let (op, q) = match self.at(q) {
                Some(c @ (b'+' | b'-')) => (c, q + 1),
                _ => break,
            };
            self.note(q);
            let Some(q) = self.req_ws(q) else { break };
            let Some((b, q)) = self.level1(q) else { break };
            e = Rc::new(if op == b'+' {
                Expr::Add(e, b)
            } else {
                Expr::Sub(e, b)
            });
            p = q;
        }
        Some((e, p))
    }

    // Level1 <- Level0 ( req_ws ( Multiplication / Division / Modulo ) )*
    fn level1(&mut self, p: usize) -> R {
        let (mut e, mut p) = self.level0(p)?;
        loop {
            let Some(q) = self.req_ws(p) else { break };
            let (op, q) = match self.at(q) {
                Some(c @ (b'*' | b'/' | b'%')) => (c, q + 1),
                _ => break,
            };
            self.note(q);
            let Some(q) = self.req_ws(q) else { break };
            let Some((b, q)) = self.level0(q) else { break };
            e = Rc::new(match op {
                b'*' => Expr::Mul(e, b),
                b'/' => Expr::Div(e, b),
                _ => Expr::Mod(e, b),
            });
            p = q;
        }
        Some((e, p))
    }

    // Level0 <- IP / String / Number / Boolean / Undefined / Nil / Symbol / Not /
    //           Substitution / Merge / Auto / Lambda / Chained
    fn level0(&mut self, p: usize) -> R {
        self.memo(Rule::Level0, p, |s, p| {
            s.ip(p)
                .or_else(|| s.string(p))
                .or_else(|| s.number(p))
                .or_else(|| s.boolean(p))
                .or_else(|| s.lit(p, "~~").map(|q| (Rc::new(Expr::Undefined), q)))
                .or_else(|| {
                    s.lit(p, "nil")
                        .or_else(|| s.lit(p, "~"))
                        .map(|q| (Rc::new(Expr::Nil), q))
                })
                .or_else(|| s.symbol(p))
                .or_else(|| s.not(p))
                .or_else(|| s.substitution(p))
                .or_else(|| s.merge(p))
                .or_else(|| {
                    s.lit(p, "auto").map(|q| {
                        (
                            Rc::new(Expr::Auto {
                                path: s.path.to_vec(),
                            }),
                            q,
                        )
                    })
                })
                .or_else(|| s.lambda(p))
                .or_else(|| s.chained(p))
        })
    }

    fn digits(&mut self, p: usize) -> Option<usize> {
        let mut q = p;
        while let Some(c) = self.at(q) {
            if c.is_ascii_digit() {
                q += 1;
            } else {
                break;
            }
        }
        if q == p {
            None
        } else {
            self.note(q);
            Some(q)
        }
    }

    // IP <- [0-9]+ '.' [0-9]+ '.' [0-9]+ '.' [0-9]+
    fn ip(&mut self, p: usize) -> R {
        let mut q = self.digits(p)?;
        for _ in 0..3 {
            q = self.ch(q, b'.')?;
            q = self.digits(q)?;
        }
        Some((Rc::new(Expr::Str(self.text(p, q))), q))
    }

    // String <- '"' ('\\"' / !'"' .)* '"'
    fn string(&mut self, p: usize) -> R {
        let mut q = self.ch(p, b'"')?;
        loop {
            match self.at(q) {
                None => {
                    self.note(q);
                    return None;
                }
                Some(b'\\') if self.at(q + 1) == Some(b'"') => q += 2,
                Some(b'"') => break,
                Some(_) => q += 1,
            }
        }
        let q = q + 1;
        self.note(q);
        let raw = self.text(p, q);
        match decode_json_string(&raw) {
            Ok(s) => Some((Rc::new(Expr::Str(s)), q)),
            Err(e) => {
                if self.error.is_none() {
                    self.error = Some(format!(
                        "parse error near symbol {} - symbol {}: '{}': {}",
                        p, q, raw, e
                    ));
                }
                None
            }
        }
    }

    // Number <- '-'? [0-9] [0-9_]* ( '.' [0-9] [0-9]* )? ( ( 'e' / 'E' ) '-'? [0-9] [0-9]* )? !'::'
    fn number(&mut self, p: usize) -> R {
        let mut q = p;
        if self.at(q) == Some(b'-') {
            q += 1;
        }
        if !self.at(q)?.is_ascii_digit() {
            return None;
        }
        q += 1;
        while let Some(c) = self.at(q) {
            if c.is_ascii_digit() || c == b'_' {
                q += 1;
            } else {
                break;
            }
        }
        if self.at(q) == Some(b'.') && self.at(q + 1).is_some_and(|c| c.is_ascii_digit()) {
            q += 2;
            while self.at(q).is_some_and(|c| c.is_ascii_digit()) {
                q += 1;
            }
        }
        if matches!(self.at(q), Some(b'e') | Some(b'E')) {
            let mut r = q + 1;
            if self.at(r) == Some(b'-') {
                r += 1;
            }
            if self.at(r).is_some_and(|c| c.is_ascii_digit()) {
                r += 1;
                while self.at(r).is_some_and(|c| c.is_ascii_digit()) {
                    r += 1;
                }
                q = r;
            }
        }
        self.note(q);
        if self.s.len() >= q + 2 && &self.s[q..q + 2] == b"::" {
            return None;
        }
        let contents: String = self.text(p, q).chars().filter(|c| *c != '_').collect();
        if contents.contains(['.', 'e', 'E']) {
            let v: f64 = contents.parse().ok()?;
            Some((Rc::new(Expr::Float(v)), q))
        } else {
            match contents.parse::<i64>() {
                Ok(v) => Some((Rc::new(Expr::Int(v)), q)),
                Err(_) => {
                    if self.error.is_none() {
                        self.error = Some(format!("value out of range: {contents}"));
                    }
                    None
                }
            }
        }
    }

    // Boolean <- 'true' / 'false'
    fn boolean(&mut self, p: usize) -> R {
        if let Some(q) = self.lit(p, "true") {
            return Some((Rc::new(Expr::Bool(true)), q));
        }
        let q = self.lit(p, "false")?;
        Some((Rc::new(Expr::Bool(false)), q))
    }

    // Symbol <- '$' Name
    fn symbol(&mut self, p: usize) -> R {
        let p = self.ch(p, b'$')?;
        let (n, q) = self.name(p)?;
        Some((Rc::new(Expr::Str(n)), q))
    }

    // Not <- '!' ws Level0
    fn not(&mut self, p: usize) -> R {
        let p = self.ch(p, b'!')?;
        let p = self.ws(p);
        let (e, p) = self.level0(p)?;
        Some((Rc::new(Expr::Not(e)), p))
    }

    // Substitution <- '*' Level0
    fn substitution(&mut self, p: usize) -> R {
        let p = self.ch(p, b'*')?;
        let (e, p) = self.level0(p)?;
        Some((Rc::new(Expr::Substitution(e)), p))
    }

    // Merge <- RefMerge / SimpleMerge
    fn merge(&mut self, p: usize) -> R {
        self.ref_merge(p).or_else(|| self.simple_merge(p))
    }

    // RefMerge <- 'merge' !( req_ws Required ) ( req_ws (Replace / On ))? req_ws Reference
    fn ref_merge(&mut self, p: usize) -> R {
        let mut p = self.lit(p, "merge")?;
        if let Some(q) = self.req_ws(p)
            && self.lit(q, "required").is_some()
        {
            return None;
        }
        let mut replace = false;
        let mut key_name = String::new();
        if let Some(q) = self.req_ws(p) {
            if let Some(r) = self.lit(q, "replace") {
                replace = true;
                p = r;
            } else if let Some((n, r)) = self.on(q) {
                key_name = n;
                p = r;
            }
        }
        let p = self.req_ws(p)?;
        let (r, p) = self.reference(p)?;
        let Expr::Reference { path, .. } = &*r else {
            return None;
        };
        let mut path = path.clone();
        let mut none = false;
        if path.len() == 1 && path[0] == "none" {
            path.clear();
            none = true;
        }
        let required = !path.is_empty();
        Some((
            Rc::new(Expr::Merge {
                path,
                redirect: true,
                replace,
                required,
                none,
                key_name,
            }),
            p,
        ))
    }

    // SimpleMerge <- 'merge' !'(' ( req_ws (Replace/Required/On) )?
    fn simple_merge(&mut self, p: usize) -> R {
        let mut p = self.lit(p, "merge")?;
        if self.at(p) == Some(b'(') {
            return None;
        }
        let mut replace = false;
        let mut required = false;
        let mut key_name = String::new();
        if let Some(q) = self.req_ws(p) {
            if let Some(r) = self.lit(q, "replace") {
                replace = true;
                p = r;
            } else if let Some(r) = self.lit(q, "required") {
                required = true;
                p = r;
            } else if let Some((n, r)) = self.on(q) {
                key_name = n;
                p = r;
            }
        }
        let redirect = self.path != self.stub_path;
        Some((
            Rc::new(Expr::Merge {
                path: self.stub_path.to_vec(),
                redirect,
                replace,
                required: replace || required || redirect,
                none: false,
                key_name,
            }),
            p,
        ))
    }

    // On <- 'on' req_ws Name
    fn on(&mut self, p: usize) -> Option<(String, usize)> {
        let p = self.lit(p, "on")?;
        let p = self.req_ws(p)?;
        self.name(p)
    }

    // Lambda <- 'lambda' ( LambdaRef / LambdaExpr )
    // LambdaRef <- req_ws Expression
    fn lambda(&mut self, p: usize) -> R {
        let p = self.lit(p, "lambda")?;
        if let Some(q) = self.req_ws(p)
            && let Some((e, q)) = self.expression(q)
        {
            if matches!(&*e, Expr::Lambda { .. }) {
                return Some((e, q));
            }
            return Some((
                Rc::new(Expr::LambdaRef {
                    source: e,
                    path: self.path.to_vec(),
                    stub_path: self.stub_path.to_vec(),
                }),
                q,
            ));
        }
        self.lambda_expr(p)
    }

    // Chained <- ( MapMapping / Sync / Catch / Mapping / MapSelection / Selection / Sum / List /
    //              Map / Range / Grouped / Reference / TopIndex ) ChainedQualifiedExpression*
    fn chained(&mut self, p: usize) -> R {
        let (e, p) = self
            .mapping(p, "map{", b'}', MapCtx::MapToMap)
            .or_else(|| self.catch(p))
            .or_else(|| self.mapping(p, "map[", b']', MapCtx::MapToList))
            .or_else(|| self.mapping(p, "select{", b'}', MapCtx::SelectToMap))
            .or_else(|| self.mapping(p, "select[", b']', MapCtx::SelectToList))
            .or_else(|| self.sum(p))
            .or_else(|| self.list(p))
            .or_else(|| self.map(p))
            .or_else(|| self.range(p))
            .or_else(|| self.grouped(p))
            .or_else(|| self.reference(p))
            .or_else(|| self.top_index(p))?;
        Some(self.chained_qualified_all(e, p))
    }

    fn chained_qualified_all(&mut self, mut e: Rc<Expr>, mut p: usize) -> (Rc<Expr>, usize) {
        while let Some((n, q)) = self.chained_qualified(e.clone(), p) {
            e = n;
            p = q;
        }
        (e, p)
    }

    // ChainedQualifiedExpression <- ChainedCall / Currying / ChainedRef / ChainedDynRef / Projection
    fn chained_qualified(&mut self, e: Rc<Expr>, p: usize) -> R {
        if let Some(r) = self.chained_call(e.clone(), p, false) {
            return Some(r);
        }
        if let Some(q) = self.ch(p, b'*')
            && let Some(r) = self.chained_call(e.clone(), q, true)
        {
            return Some(r);
        }
        // ChainedRef <- PathComponent FollowUpRef
        if let Some(q) = self.path_component(p) {
            let q = self.follow_up_ref(q);
            let path = path_components(&self.text(p, q), false);
            return Some((Rc::new(Expr::Qualified { expr: e, path }), q));
        }
        // ChainedDynRef <- '.'? Indices
        {
            let q = if self.at(p) == Some(b'.') { p + 1 } else { p };
            if let Some((idx, r)) = self.indices(q) {
                return Some((
                    Rc::new(Expr::Dynamic {
                        root: e,
                        index: idx,
                    }),
                    r,
                ));
            }
        }
        self.projection(e, p)
    }

    // ChainedCall <- StartArguments NameArgumentList? ')'
    fn chained_call(&mut self, f: Rc<Expr>, p: usize, curry: bool) -> R {
        let p = self.ch(p, b'(')?;
        let p = self.ws(p);
        let (args, p) = match self.name_argument_list(p) {
            Some(x) => x,
            None => (Vec::new(), p),
        };
        let p = self.ch(p, b')')?;
        let (mut named, pos): (Vec<_>, Vec<_>) = args
            .into_iter()
            .partition(|a| matches!(&**a, Expr::NameArg { .. }));
        named.extend(pos);
        Some((
            Rc::new(Expr::Call {
                func: f,
                args: named,
                curry,
            }),
            p,
        ))
    }

    // NameArgumentList <- (( NextNameArgument ( ',' NextNameArgument)* ) / NextExpression)  ( ',' NextExpression)*
    fn name_argument_list(&mut self, p: usize) -> Option<(Vec<Rc<Expr>>, usize)> {
        let mut list = Vec::new();
        let mut p = if let Some((a, mut q)) = self.next_name_argument(p) {
            list.push(a);
            loop {
                let Some(r) = self.ch(q, b',') else { break };
                let Some((a, r)) = self.next_name_argument(r) else {
                    break;
                };
                list.push(a);
                q = r;
            }
            q
        } else {
            let (e, q) = self.next_expression(p)?;
            list.push(e);
            q
        };
        loop {
            let Some(q) = self.ch(p, b',') else { break };
            let Some((e, q)) = self.next_expression(q) else {
                break;
            };
            list.push(e);
            p = q;
        }
        Some((list, p))
    }

    // NextNameArgument <- ws Name ws '=' ws Expression ws
    fn next_name_argument(&mut self, p: usize) -> R {
        let p = self.ws(p);
        let (name, p) = self.name(p)?;
        let p = self.ws(p);
        let p = self.ch(p, b'=')?;
        let p = self.ws(p);
        let (e, p) = self.expression(p)?;
        let p = self.ws(p);
        Some((Rc::new(Expr::NameArg { name, expr: e }), p))
    }

    // NextExpression <- Expression ListExpansion?
    // ListExpansion <- '...' ws
    fn next_expression(&mut self, p: usize) -> R {
        let (e, p) = self.expression(p)?;
        if let Some(q) = self.lit(p, "...") {
            return Some((Rc::new(Expr::ListExpansion(e)), self.ws(q)));
        }
        Some((e, p))
    }

    // ExpressionList <- NextExpression ( ',' NextExpression)*
    fn expression_list(&mut self, p: usize) -> Option<(Vec<Rc<Expr>>, usize)> {
        let (e, mut p) = self.next_expression(p)?;
        let mut list = vec![e];
        loop {
            let Some(q) = self.ch(p, b',') else { break };
            let Some((e, q)) = self.next_expression(q) else {
                break;
            };
            list.push(e);
            p = q;
        }
        Some((list, p))
    }

    // Indices <- StartList ExpressionList ']'
    fn indices(&mut self, p: usize) -> R {
        let p = self.ch(p, b'[')?;
        let p = self.ws(p);
        let (list, p) = self.expression_list(p)?;
        let p = self.ch(p, b']')?;
        Some((Rc::new(Expr::List(list)), p))
    }

    // Projection <- '.'? ( '[*]' / Slice ) ProjectionValue ChainedQualifiedExpression*
    fn projection(&mut self, e: Rc<Expr>, p: usize) -> R {
        let p = if self.at(p) == Some(b'.') { p + 1 } else { p };
        let (base, p) = if let Some(q) = self.lit(p, "[*]") {
            (e, q)
        } else {
            let (r, q) = self.range(p)?;
            let Expr::Range { start, end } = &*r else {
                return None;
            };
            (
                Rc::new(Expr::Slice {
                    expr: e,
                    start: start.clone(),
                    end: end.clone(),
                }),
                q,
            )
        };
        let cell = Rc::new(std::cell::RefCell::new(super::value::Value::Nil));
        let pv = Rc::new(Expr::ProjectionValue(cell.clone()));
        let (qual, p) = self.chained_qualified_all(pv, p);
        Some((
            Rc::new(Expr::Projection {
                expr: base,
                cell,
                qual,
            }),
            p,
        ))
    }

    // TopIndex <- '.' Indices
    fn top_index(&mut self, p: usize) -> R {
        let p = self.ch(p, b'.')?;
        let (idx, p) = self.indices(p)?;
        Some((
            Rc::new(Expr::Dynamic {
                root: Rc::new(Expr::Reference {
                    tag: String::new(),
                    path: vec![String::new()],
                }),
                index: idx,
            }),
            p,
        ))
    }

    // LambdaOrExpr <- LambdaExpr / ( '|' Expression )
    fn lambda_or_expr(&mut self, p: usize) -> R {
        if let Some(r) = self.lambda_expr(p) {
            return Some(r);
        }
        let p = self.ch(p, b'|')?;
        self.expression(p)
    }

    // Mapping <- 'map[' Level7 LambdaOrExpr ']' (and friends)
    fn mapping(&mut self, p: usize, kw: &str, close: u8, ctx: MapCtx) -> R {
        let p = self.lit(p, kw)?;
        let (a, p) = self.level7(p)?;
        let (l, p) = self.lambda_or_expr(p)?;
        let p = self.ch(p, close)?;
        Some((Rc::new(Expr::Mapping { a, lambda: l, ctx }), p))
    }

    // Catch <- 'catch[' Level7 LambdaOrExpr  ']'
    fn catch(&mut self, p: usize) -> R {
        let p = self.lit(p, "catch[")?;
        let (a, p) = self.level7(p)?;
        let (l, p) = self.lambda_or_expr(p)?;
        let p = self.ch(p, b']')?;
        Some((Rc::new(Expr::Catch { a, lambda: Some(l) }), p))
    }

    // Sum <- 'sum[' Level7 '|' Level7 LambdaOrExpr ']'
    fn sum(&mut self, p: usize) -> R {
        let p = self.lit(p, "sum[")?;
        let (a, p) = self.level7(p)?;
        let p = self.ch(p, b'|')?;
        let (init, p) = self.level7(p)?;
        let (l, p) = self.lambda_or_expr(p)?;
        let p = self.ch(p, b']')?;
        Some((Rc::new(Expr::Sum { a, init, lambda: l }), p))
    }

    // List <- StartList ExpressionList? ']'
    fn list(&mut self, p: usize) -> R {
        let p = self.ch(p, b'[')?;
        let p = self.ws(p);
        let (list, p) = match self.expression_list(p) {
            Some(x) => x,
            None => (Vec::new(), p),
        };
        let p = self.ch(p, b']')?;
        Some((Rc::new(Expr::List(list)), p))
    }

    // Map <- CreateMap ws Assignments? '}'
    fn map(&mut self, p: usize) -> R {
        let p = self.ch(p, b'{')?;
        let p = self.ws(p);
        let (a, p) = match self.assignments(p) {
            Some(x) => x,
            None => (Vec::new(), p),
        };
        let p = self.ch(p, b'}')?;
        Some((Rc::new(Expr::CreateMap(a)), p))
    }

    // Range <- StartRange Expression? RangeOp Expression? ']'
    fn range(&mut self, p: usize) -> R {
        let p = self.ch(p, b'[')?;
        let (start, p) = match self.expression(p) {
            Some((e, q)) => (Some(e), q),
            None => (None, p),
        };
        let p = self.lit(p, "..")?;
        let (end, p) = match self.expression(p) {
            Some((e, q)) => (Some(e), q),
            None => (None, p),
        };
        let p = self.ch(p, b']')?;
        Some((Rc::new(Expr::Range { start, end }), p))
    }

    // Grouped <- '(' Expression ')'
    fn grouped(&mut self, p: usize) -> R {
        let p = self.ch(p, b'(')?;
        let (e, p) = self.expression(p)?;
        let p = self.ch(p, b')')?;
        Some((Rc::new(Expr::Grouped(e)), p))
    }

    // Key <- [a-zA-Z0-9_] [a-zA-Z0-9_\-]* ( ':' [a-zA-Z0-9_] [a-zA-Z0-9_\-]* )?
    fn key(&mut self, p: usize) -> Option<usize> {
        if !is_key_start(self.at(p)?) {
            return None;
        }
        let mut q = p + 1;
        while self.at(q).is_some_and(is_key_char) {
            q += 1;
        }
        if self.at(q) == Some(b':') && self.at(q + 1).is_some_and(is_key_start) {
            q += 2;
            while self.at(q).is_some_and(is_key_char) {
                q += 1;
            }
        }
        self.note(q);
        Some(q)
    }

    // Index <- '[' '-'? [0-9]+ ']'
    fn index(&mut self, p: usize) -> Option<usize> {
        let mut q = self.ch(p, b'[')?;
        if self.at(q) == Some(b'-') {
            q += 1;
        }
        let q = self.digits(q)?;
        self.ch(q, b']')
    }

    // PathComponent <- ( '.' Key ) / ( '.'? Index )
    fn path_component(&mut self, p: usize) -> Option<usize> {
        if self.at(p) == Some(b'.')
            && let Some(q) = self.key(p + 1)
        {
            return Some(q);
        }
        let q = if self.at(p) == Some(b'.') { p + 1 } else { p };
        self.index(q)
    }

    // FollowUpRef <- PathComponent*
    fn follow_up_ref(&mut self, mut p: usize) -> usize {
        while let Some(q) = self.path_component(p) {
            p = q;
        }
        p
    }

    // TagPrefix <- ( ('doc' [.:] '-'? [0-9]+) / Tag ) '::'
    fn tag_prefix(&mut self, p: usize) -> Option<usize> {
        let doc = (|| {
            let q = self.lit(p, "doc")?;
            let q = match self.at(q) {
                Some(b'.') | Some(b':') => q + 1,
                _ => return None,
            };
            let q = if self.at(q) == Some(b'-') { q + 1 } else { q };
            self.digits(q)
        })();
        let q = match doc {
            Some(q) => q,
            None => self.tag(p)?,
        };
        self.lit(q, "::")
    }

    // Reference <- (( TagPrefix  ('.' / Key )) / ( '.'? Key )) FollowUpRef
    fn reference(&mut self, p: usize) -> R {
        let start = p;
        let q = (|| {
            let q = self.tag_prefix(p)?;
            if self.at(q) == Some(b'.') {
                self.note(q + 1);
                return Some(q + 1);
            }
            self.key(q)
        })()
        .or_else(|| {
            let q = if self.at(p) == Some(b'.') { p + 1 } else { p };
            self.key(q)
        })?;
        let q = self.follow_up_ref(q);
        let mut contents = self.text(start, q);
        let mut tag = String::new();
        if let Some(i) = contents.rfind("::")
            && i > 0
        {
            tag = contents[..i].to_string();
            contents = contents[i + 2..].to_string();
            if contents != "." && contents.starts_with('.') {
                contents = contents[1..].to_string();
            }
        }
        let path = path_components(&contents, true);
        Some((Rc::new(Expr::Reference { tag, path }), q))
    }
}

/// spiff's `PathComponents`
pub(crate) fn path_components(r: &str, leading: bool) -> Vec<String> {
    let mut path = Vec::new();
    let mut comp = String::new();
    for c in r.chars() {
        match c {
            '.' => {
                if !comp.is_empty() || leading {
                    path.push(std::mem::take(&mut comp));
                }
                comp.clear();
            }
            '[' => {
                if !comp.is_empty() {
                    path.push(std::mem::take(&mut comp));
                }
                comp.push(c);
            }
            _ => comp.push(c),
        }
    }
    if !comp.is_empty() {
        path.push(comp);
    }
    path
}

/// Decodes a JSON string literal (including the quotes), as Go's `json.Unmarshal` does.
pub(crate) fn decode_json_string(raw: &str) -> Result<String, String> {
    let b = raw.as_bytes();
    if b.len() < 2 || b[0] != b'"' || b[b.len() - 1] != b'"' {
        return Err("invalid string".into());
    }
    let inner = &raw[1..raw.len() - 1];
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Err("invalid character '\"' after top-level value".into()),
            '\\' => {
                let e = chars.next().ok_or("unexpected end of JSON input")?;
                match e {
                    '"' => out.push('"'),
                    '\\' => out.push('\\'),
                    '/' => out.push('/'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    'u' => {
                        let h = read_hex4(&mut chars)?;
                        if (0xD800..0xDC00).contains(&h) {
                            // try a surrogate pair
                            let mut look = chars.clone();
                            if look.next() == Some('\\')
                                && look.next() == Some('u')
                                && let Ok(l) = read_hex4(&mut look)
                                && (0xDC00..0xE000).contains(&l)
                            {
                                chars = look;
                                let cp = 0x10000 + ((h - 0xD800) << 10) + (l - 0xDC00);
                                out.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                                continue;
                            }
                            out.push('\u{FFFD}');
                        } else {
                            out.push(char::from_u32(h).unwrap_or('\u{FFFD}'));
                        }
                    }
                    c => return Err(format!("invalid character '{c}' in string escape code")),
                }
            }
            c if (c as u32) < 0x20 => {
                return Err("invalid character in string literal".to_string());
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

fn read_hex4(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<u32, String> {
    let mut v = 0u32;
    for _ in 0..4 {
        let c = chars.next().ok_or("unexpected end of JSON input")?;
        v = v * 16
            + c.to_digit(16)
                .ok_or("invalid character in \\u hexadecimal")?;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> String {
        parse(s, &[], &[])
            .map(|e| e.to_string())
            .unwrap_or_else(|e| format!("ERR {e}"))
    }

    #[test]
    fn references() {
        assert_eq!(p(" foo "), "foo");
        assert_eq!(p("foo.bar[1].baz"), "foo.bar.[1].baz");
        assert_eq!(p(".foo"), ".foo");
        assert_eq!(p("a-b"), "a-b");
        assert_eq!(p("a - b"), "a - b");
        assert_eq!(p("list.name:alice"), "list.name:alice");
        assert_eq!(p("a[0,1]"), "a.[0, 1]");
        assert_eq!(p(".[\"a.b\"]"), "..[\"a.b\"]");
        assert_eq!(p("t::a.b"), "t::a.b");
    }

    #[test]
    fn operators() {
        assert_eq!(p("1 + 2 * 3"), "1 + 2 * 3");
        assert_eq!(p("\"a\" b \"c\""), "\"a\" b \"c\"");
        assert_eq!(p("a || b || c"), "a || b || c");
        assert_eq!(p("a ? b : c"), "a ? b : c");
        assert_eq!(p("a ?b :c"), "a ? b : c");
        assert_eq!(p("!a"), "!(a)");
        assert_eq!(p("5 -or 6"), "5 -or 6");
        assert_eq!(p("a == b"), "a == b");
        assert_eq!(p("( a )"), "( a )");
        assert!(p("x :~~").starts_with("ERR"));
    }

    #[test]
    fn literals() {
        assert_eq!(p("[1, 2]"), "[1, 2]");
        assert_eq!(p("{ \"a\" = 1 }"), "{ \"a\" = 1 }");
        assert_eq!(p("1.5"), "1.5");
        assert_eq!(p("~"), "nil");
        assert_eq!(p("~~"), "~~");
        assert_eq!(p("10.0.0.1"), "\"10.0.0.1\"");
        assert_eq!(p("\"a\\\"b\""), "\"a\\\"b\"");
        assert!(p("").starts_with("ERR"));
        assert!(p(" ").starts_with("ERR"));
        assert!(p("true_value").starts_with("ERR"));
    }

    #[test]
    fn lambdas_and_mappings() {
        assert_eq!(p("lambda |x|->x + 1"), "lambda|x|->x + 1");
        assert_eq!(p("|x,y|->x"), "lambda|x,y|->x");
        assert_eq!(p("map[list|x|->x]"), "map[list|x|->x]");
        assert_eq!(p("sum[list|0|s,x|->s + x]"), "sum[list|0|s,x|->s + x]");
        assert_eq!(p("select{m|k,v|->v}"), "select{m|k,v|->v}");
        assert_eq!(p(".f(1)"), ".f(1)");
        assert_eq!(p("f(a, b...)"), "f(a, b...)");
        assert_eq!(p("f(x=1, 2)"), "f(x=1, 2)");
    }

    #[test]
    fn markers_and_merge() {
        assert_eq!(p("&temporary"), "&temporary");
        assert_eq!(p("&temporary ( a )"), "&temporary (( a ))");
        assert_eq!(p("merge"), "merge");
        assert_eq!(p("merge replace"), "merge required");
        assert_eq!(p("merge foo.bar"), "merge foo.bar");
        assert_eq!(p("merge(a, b)"), "merge(a, b)");
        assert_eq!(p("prefer a"), "prefer a");
    }

    #[test]
    fn nested_parens_are_linear() {
        let s = format!("{}a{}", "(".repeat(40), ")".repeat(40));
        assert!(!p(&s).starts_with("ERR"));
        let s = format!("{}a", "(".repeat(200));
        assert!(p(&s).starts_with("ERR"));
    }

    #[test]
    fn json_strings() {
        assert_eq!(decode_json_string("\"a\\nb\"").unwrap(), "a\nb");
        assert_eq!(decode_json_string("\"\\u00e4\"").unwrap(), "ä");
        assert!(decode_json_string("\"\\d\"").is_err());
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics(s in "\\PC{0,60}") {
            let _ = parse(&s, &[], &[]);
        }
        #[test]
        fn parsing_dynaml_like_never_panics(s in "[a-z0-9 ()\\[\\]{}|.,:\"*+=<>!?&$~-]{0,60}") {
            let _ = parse(&s, &[], &[]);
        }
    }
}
