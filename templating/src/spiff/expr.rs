//! The dynaml expression tree and its textual form (spiff's `String()` methods, which
//! matter: templates are re-parsed from it and lambdas are printed with it).

use std::cell::RefCell;
use std::fmt::{self, Display, Write as _};
use std::rc::Rc;

use super::value::{Map, Value};

/// A lambda parameter with an optional default.
#[derive(Clone)]
pub(crate) struct Param {
    pub name: String,
    pub default: Option<Rc<Expr>>,
}

/// The kinds of `map[]`, `map{}`, `select[]`, `select{}`, `filter[]`, `filter{}`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum MapCtx {
    MapToList,
    MapToMap,
    SelectToList,
    SelectToMap,
}

impl MapCtx {
    pub fn keyword(self) -> &'static str {
        match self {
            MapCtx::MapToList | MapCtx::MapToMap => "map",
            MapCtx::SelectToList | MapCtx::SelectToMap => "select",
        }
    }
    pub fn brackets(self) -> (char, char) {
        match self {
            MapCtx::MapToList | MapCtx::SelectToList => ('[', ']'),
            MapCtx::MapToMap | MapCtx::SelectToMap => ('{', '}'),
        }
    }
}

pub(crate) type ProjCell = Rc<RefCell<Value>>;

pub(crate) enum Expr {
    Nil,
    Undefined,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// a constant value (used by currying and defaults)
    Value(Value),
    Reference {
        tag: String,
        path: Vec<String>,
    },
    Qualified {
        expr: Rc<Expr>,
        path: Vec<String>,
    },
    Dynamic {
        root: Rc<Expr>,
        index: Rc<Expr>,
    },
    Slice {
        expr: Rc<Expr>,
        start: Option<Rc<Expr>>,
        end: Option<Rc<Expr>>,
    },
    Range {
        start: Option<Rc<Expr>>,
        end: Option<Rc<Expr>>,
    },
    Projection {
        expr: Rc<Expr>,
        cell: ProjCell,
        qual: Rc<Expr>,
    },
    ProjectionValue(ProjCell),
    Call {
        func: Rc<Expr>,
        args: Vec<Rc<Expr>>,
        curry: bool,
    },
    NameArg {
        name: String,
        expr: Rc<Expr>,
    },
    ListExpansion(Rc<Expr>),
    List(Vec<Rc<Expr>>),
    CreateMap(Vec<(Rc<Expr>, Rc<Expr>)>),
    Scope {
        assignments: Vec<(Rc<Expr>, Rc<Expr>)>,
        expr: Rc<Expr>,
    },
    Grouped(Rc<Expr>),
    Not(Rc<Expr>),
    Substitution(Rc<Expr>),
    Cond {
        c: Rc<Expr>,
        t: Rc<Expr>,
        f: Rc<Expr>,
    },
    Or(Rc<Expr>, Rc<Expr>),
    ValidOr(Rc<Expr>, Rc<Expr>),
    LogOr(Rc<Expr>, Rc<Expr>),
    LogAnd(Rc<Expr>, Rc<Expr>),
    Comparison {
        a: Rc<Expr>,
        op: &'static str,
        b: Rc<Expr>,
    },
    Concat(Rc<Expr>, Rc<Expr>),
    Add(Rc<Expr>, Rc<Expr>),
    Sub(Rc<Expr>, Rc<Expr>),
    Mul(Rc<Expr>, Rc<Expr>),
    Div(Rc<Expr>, Rc<Expr>),
    Mod(Rc<Expr>, Rc<Expr>),
    Lambda {
        params: Vec<Param>,
        varargs: bool,
        body: Rc<Expr>,
    },
    LambdaRef {
        source: Rc<Expr>,
        path: Vec<String>,
        stub_path: Vec<String>,
    },
    Mapping {
        a: Rc<Expr>,
        lambda: Rc<Expr>,
        ctx: MapCtx,
    },
    Sum {
        a: Rc<Expr>,
        init: Rc<Expr>,
        lambda: Rc<Expr>,
    },
    Catch {
        a: Rc<Expr>,
        lambda: Option<Rc<Expr>>,
    },
    Merge {
        path: Vec<String>,
        redirect: bool,
        replace: bool,
        required: bool,
        none: bool,
        key_name: String,
    },
    Auto {
        path: Vec<String>,
    },
    Prefer(Rc<Expr>),
    Marker {
        list: Vec<String>,
        expr: Option<Rc<Expr>>,
    },
    MarkerExpression {
        contents: String,
        expr: Rc<Expr>,
    },
}

impl Expr {
    pub fn is_list_expansion(&self) -> bool {
        matches!(self, Expr::ListExpansion(_))
    }
    /// `IncludesDirectMerge`
    pub fn includes_direct_merge(&self) -> bool {
        match self {
            Expr::Merge { redirect, .. } => !redirect,
            Expr::Grouped(e) => e.includes_direct_merge(),
            Expr::Or(a, b) | Expr::Concat(a, b) => {
                a.includes_direct_merge() || b.includes_direct_merge()
            }
            Expr::Cond { t, f, .. } => t.includes_direct_merge() || f.includes_direct_merge(),
            Expr::Marker { expr: Some(e), .. } => e.includes_direct_merge(),
            Expr::MarkerExpression { expr, .. } => expr.includes_direct_merge(),
            Expr::Catch { a, .. } => a.includes_direct_merge(),
            _ => false,
        }
    }
}

/// Go's `strconv.Quote`
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                if (c as u32) < 0x10000 {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`
pub(crate) fn format_float_g(f: f64) -> String {
    crate::gofmt::format_float(f, b'g', -1)
}

/// spiff's `ValueAsString`
pub(crate) fn value_as_string(v: &Value, all: bool) -> String {
    match v {
        Value::List(l) => {
            let mut s = String::from("[");
            for (i, e) in l.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                s.push_str(&value_as_string(e.value(), all));
            }
            s.push(']');
            s
        }
        Value::Map(m) => {
            let mut s = String::from("{");
            let mut sep = "";
            for (k, e) in m.iter() {
                if all || k != "_" {
                    let _ = write!(s, "{sep}\"{k}\"={}", value_as_string(e.value(), all));
                    sep = ", ";
                }
            }
            s.push('}');
            s
        }
        Value::Str(s) => format!("\"{s}\""),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format_float_g(*f),
        Value::Bool(b) => b.to_string(),
        Value::Nil => "%!s(<nil>)".to_string(),
        Value::Expr(e) => e.to_string(),
        Value::Lambda(l) => lambda_value_string(l),
        Value::Template(t) => template_value_string(t),
    }
}

/// spiff's `Short`
pub(crate) fn short(v: &Value, all: bool) -> String {
    match v {
        Value::List(l) => {
            let mut s = String::from("[");
            for (i, e) in l.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                s.push_str(&short(e.value(), all));
            }
            s.push(']');
            s
        }
        Value::Map(m) => short_map(m, all),
        Value::Str(s) => go_quote(s),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format_float_g(*f),
        Value::Bool(b) => b.to_string(),
        Value::Nil => "<nil>".to_string(),
        Value::Expr(e) => e.to_string(),
        Value::Lambda(l) => lambda_value_string(l),
        Value::Template(t) => template_value_string(t),
    }
}

pub(crate) fn short_map(m: &Map, all: bool) -> String {
    let mut s = String::from("{");
    let mut sep = "";
    for (k, e) in m.iter() {
        if all || k != "_" {
            let _ = write!(s, "{sep}{k}: {}", short(e.value(), all));
            sep = ", ";
        }
    }
    s.push('}');
    s
}

/// spiff's `Shorten`
pub(crate) fn shorten(s: &str) -> String {
    if s.len() > 40 {
        let b = s.as_bytes();
        let head = String::from_utf8_lossy(&b[..17]);
        let tail = String::from_utf8_lossy(&b[b.len() - 17..]);
        format!("{head} ... {tail}")
    } else {
        s.to_string()
    }
}

pub(crate) fn lambda_expr_string(params: &[Param], varargs: bool, body: &Expr) -> String {
    let mut s = String::new();
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&p.name);
        if let Some(d) = &p.default {
            let _ = write!(s, "={d}");
        }
    }
    if varargs {
        s.push_str("...");
    }
    format!("lambda|{s}|->{body}")
}

pub(crate) fn lambda_value_string(l: &super::value::LambdaValue) -> String {
    let binding = if !l.static_.is_empty() {
        short_map(&l.static_, false)
    } else {
        String::new()
    };
    format!(
        "{}{}",
        shorten(&binding),
        lambda_expr_string(&l.params, l.varargs, &l.body)
    )
}

pub(crate) fn template_value_string(t: &super::value::TemplateValue) -> String {
    format!(
        "<template {}: {}>",
        t.path.join("/"),
        shorten(&short(t.prepared.value(), false))
    )
}

fn opt(e: &Option<Rc<Expr>>) -> String {
    match e {
        Some(e) => e.to_string(),
        None => "%!s(<nil>)".to_string(),
    }
}

impl Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Nil => f.write_str("nil"),
            Expr::Undefined => f.write_str("~~"),
            Expr::Bool(b) => write!(f, "{b}"),
            Expr::Int(i) => write!(f, "{i}"),
            Expr::Float(x) => f.write_str(&format_float_g(*x)),
            Expr::Str(s) => f.write_str(&go_quote(s)),
            Expr::Value(v) => f.write_str(&value_as_string(v, true)),
            Expr::Reference { tag, path } => {
                if !tag.is_empty() {
                    write!(f, "{tag}::")?;
                }
                if path.len() == 1 && path[0].is_empty() {
                    return f.write_str(".");
                }
                f.write_str(&path.join("."))
            }
            Expr::Qualified { expr, path } => write!(f, "({expr}).{}", path.join(".")),
            Expr::Dynamic { root, index } => write!(f, "{root}.{index}"),
            Expr::Slice { expr, start, end } => {
                write!(f, "{expr}.[[{}..{}]]", opt(start), opt(end))
            }
            Expr::Range { start, end } => write!(f, "[{}..{}]", opt(start), opt(end)),
            Expr::Projection { expr, qual, .. } => write!(f, "{expr}.[*] {qual}"),
            Expr::ProjectionValue(_) => Ok(()),
            Expr::Call { func, args, curry } => {
                write!(f, "{func}{}(", if *curry { "*" } else { "" })?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str(")")
            }
            Expr::NameArg { name, expr } => write!(f, "{name}={expr}"),
            Expr::ListExpansion(e) => write!(f, "{e}..."),
            Expr::List(l) => {
                f.write_str("[")?;
                for (i, a) in l.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str("]")
            }
            Expr::CreateMap(a) => {
                f.write_str("{")?;
                let mut sep = " ";
                for (k, v) in a {
                    write!(f, "{sep}{k} = {v}")?;
                    sep = ", ";
                }
                f.write_str(" }")
            }
            Expr::Scope { assignments, expr } => {
                f.write_str("(")?;
                for (i, (k, v)) in assignments.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k} = {v}")?;
                }
                write!(f, " ) {expr}")
            }
            Expr::Grouped(e) => write!(f, "( {e} )"),
            Expr::Not(e) => write!(f, "!({e})"),
            Expr::Substitution(e) => write!(f, "*({e})"),
            Expr::Cond { c, t, f: x } => write!(f, "{c} ? {t} : {x}"),
            Expr::Or(a, b) => write!(f, "{a} || {b}"),
            Expr::ValidOr(a, b) => write!(f, "{a} // {b}"),
            Expr::LogOr(a, b) => write!(f, "{a} -or {b}"),
            Expr::LogAnd(a, b) => write!(f, "{a} -and {b}"),
            Expr::Comparison { a, op, b } => write!(f, "{a} {op} {b}"),
            Expr::Concat(a, b) => write!(f, "{a} {b}"),
            Expr::Add(a, b) => write!(f, "{a} + {b}"),
            Expr::Sub(a, b) => write!(f, "{a} - {b}"),
            Expr::Mul(a, b) => write!(f, "{a} * {b}"),
            Expr::Div(a, b) => write!(f, "{a} / {b}"),
            Expr::Mod(a, b) => write!(f, "{a} % {b}"),
            Expr::Lambda {
                params,
                varargs,
                body,
            } => f.write_str(&lambda_expr_string(params, *varargs, body)),
            Expr::LambdaRef { source, .. } => write!(f, "lambda {source}"),
            Expr::Mapping { a, lambda, ctx } => {
                let (o, c) = ctx.brackets();
                match &**lambda {
                    Expr::Lambda {
                        params,
                        varargs,
                        body,
                    } => {
                        let l = lambda_expr_string(params, *varargs, body);
                        write!(f, "{}{o}{a}{}{c}", ctx.keyword(), &l["lambda".len()..])
                    }
                    l => write!(f, "{}{o}{a}|{l}{c}", ctx.keyword()),
                }
            }
            Expr::Sum { a, init, lambda } => match &**lambda {
                Expr::Lambda {
                    params,
                    varargs,
                    body,
                } => {
                    let l = lambda_expr_string(params, *varargs, body);
                    write!(f, "sum[{a}|{init}{}]", &l["lambda".len()..])
                }
                l => write!(f, "sum[{a}|{init}|{l}]"),
            },
            Expr::Catch { a, lambda } => match lambda {
                None => write!(f, "catch({a})"),
                Some(l) => match &**l {
                    Expr::Lambda {
                        params,
                        varargs,
                        body,
                    } => {
                        let l = lambda_expr_string(params, *varargs, body);
                        write!(f, "catch[{a}{}]", &l["lambda".len()..])
                    }
                    l => write!(f, "catch[{a}|{l}]"),
                },
            },
            Expr::Merge {
                path,
                redirect,
                replace,
                required,
                key_name,
                ..
            } => {
                let mut rep = String::new();
                if *replace {
                    rep.push_str(" replace");
                }
                if !key_name.is_empty() {
                    rep.push_str(" on ");
                    rep.push_str(key_name);
                }
                if *required && !*redirect && !rep.is_empty() {
                    rep = " required".to_string();
                }
                if *redirect {
                    write!(f, "merge{rep} {}", path.join("."))
                } else {
                    write!(f, "merge{rep}")
                }
            }
            Expr::Auto { .. } => f.write_str("auto"),
            Expr::Prefer(e) => write!(f, "prefer {e}"),
            Expr::Marker { list, expr } => match expr {
                Some(e) => write!(f, "{} ({e})", list.join(" ")),
                None => f.write_str(&list.join(" ")),
            },
            Expr::MarkerExpression { contents, .. } => f.write_str(contents),
        }
    }
}
