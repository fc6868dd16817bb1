//! YAML and JSON conversion of spiff nodes: reading YAML text (spiff reads with candiedyaml),
//! emitting YAML the way candiedyaml does (for `asyaml` and `format`), Go's `encoding/json`
//! output (for `asjson`) and the conversion from/to `serde_json::Value`.

use crate::yaml_scalar::{analyze, is_printable};
use std::fmt::Write as _;
use std::rc::Rc;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::expr::{Expr, lambda_expr_string};
use super::value::{Map, Node, Value};
use crate::gofmt::{format_float, json_float};

/// A raw YAML value.
#[derive(Debug, Clone)]
pub(crate) enum Raw {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Raw>),
    Map(Vec<(Raw, Raw)>),
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Int(v))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Raw, E> {
        Ok(match i64::try_from(v) {
            Ok(i) => Raw::Int(i),
            Err(_) => Raw::Float(v as f64),
        })
    }
    fn visit_u64<E>(self, v: u64) -> Result<Raw, E> {
        Ok(match i64::try_from(v) {
            Ok(i) => Raw::Int(i),
            Err(_) => Raw::Float(v as f64),
        })
    }
    fn visit_u128<E>(self, v: u128) -> Result<Raw, E> {
        Ok(match i64::try_from(v) {
            Ok(i) => Raw::Int(i),
            Err(_) => Raw::Float(v as f64),
        })
    }
    fn visit_f64<E>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Raw, E> {
        Ok(Raw::Str(v))
    }
    fn visit_char<E>(self, v: char) -> Result<Raw, E> {
        Ok(Raw::Str(v.to_string()))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Raw, E> {
        Ok(Raw::Str(String::from_utf8_lossy(v).into_owned()))
    }
    fn visit_none<E>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_unit<E>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw, D::Error> {
        Raw::deserialize(d)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Raw, D::Error> {
        Raw::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut v = Vec::new();
        while let Some(e) = seq.next_element::<Raw>()? {
            v.push(e);
        }
        Ok(Raw::Seq(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut v = Vec::new();
        while let Some((k, val)) = map.next_entry::<Raw, Raw>()? {
            v.push((k, val));
        }
        Ok(Raw::Map(v))
    }
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Raw, D::Error> {
        d.deserialize_any(RawVisitor)
    }
}

fn yaml_options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.merge_keys = serde_saphyr::options::MergeKeyPolicy::AsOrdinary;
    o.duplicate_keys = serde_saphyr::options::DuplicateKeyPolicy::LastWins;
    o.legacy_octal_numbers = true;
    o.budget = None;
    o
}

/// Parses YAML text into a raw value (an empty document is null).
pub(crate) fn parse_raw(text: &str) -> Result<Raw, String> {
    if text
        .trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'))
        .is_empty()
    {
        return Ok(Raw::Null);
    }
    serde_saphyr::from_str_with_options::<Raw>(text, yaml_options()).map_err(|e| e.to_string())
}

/// Parses a multi-document YAML text.
pub(crate) fn parse_raw_multi(text: &str) -> Result<Vec<Raw>, String> {
    if text
        .trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'))
        .is_empty()
    {
        return Ok(vec![Raw::Null]);
    }
    serde_saphyr::from_str_multiple_with_options::<Raw, Vec<Raw>>(text, yaml_options())
        .map_err(|e| e.to_string())
}

/// Converts a raw value to a node (spiff's `Sanitize`): map keys must be strings.
pub(crate) fn raw_to_node(r: Raw) -> Result<Node, String> {
    Ok(Node::new(match r {
        Raw::Null => Value::Nil,
        Raw::Bool(b) => Value::Bool(b),
        Raw::Int(i) => Value::Int(i),
        Raw::Float(f) => Value::Float(f),
        Raw::Str(s) => Value::str(s),
        Raw::Seq(v) => Value::list(v.into_iter().map(raw_to_node).collect::<Result<_, _>>()?),
        Raw::Map(v) => {
            let mut m = Map::new();
            for (k, val) in v {
                let key = match k {
                    Raw::Str(s) => s,
                    other => return Err(format!("map key must be a string: {}", raw_desc(&other))),
                };
                m.insert(key, raw_to_node(val)?);
            }
            Value::map(m)
        }
    }))
}

fn raw_desc(r: &Raw) -> String {
    match r {
        Raw::Null => "<nil>".into(),
        Raw::Bool(b) => b.to_string(),
        Raw::Int(i) => i.to_string(),
        Raw::Float(f) => format_float(*f, b'g', -1),
        Raw::Str(s) => format!("{s:?}"),
        Raw::Seq(_) => "[]interface {}".into(),
        Raw::Map(_) => "map[interface {}]interface {}".into(),
    }
}

/// Parses a single YAML document into a node.
pub(crate) fn parse_yaml(text: &str) -> Result<Node, String> {
    raw_to_node(parse_raw(text)?)
}

// ------------------------------------------------------------------ JSON values

/// Converts JSON to a node. With `float_numbers`, every number becomes a float (as Landscaper's
/// JSON decoding into `interface{}` does).
pub(crate) fn json_to_node(v: &serde_json::Value, float_numbers: bool) -> Node {
    Node::new(json_to_value(v, float_numbers))
}

pub(crate) fn json_to_value(v: &serde_json::Value, float_numbers: bool) -> Value {
    match v {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => {
            if !float_numbers && let Some(i) = n.as_i64() {
                Value::Int(i)
            } else {
                Value::Float(n.as_f64().unwrap_or(0.0))
            }
        }
        serde_json::Value::String(s) => Value::str(s.as_str()),
        serde_json::Value::Array(a) => {
            Value::list(a.iter().map(|e| json_to_node(e, float_numbers)).collect())
        }
        serde_json::Value::Object(o) => Value::map(
            o.iter()
                .map(|(k, e)| (k.clone(), json_to_node(e, float_numbers)))
                .collect(),
        ),
    }
}

/// The marshalled form of a value (spiff's `MarshalYAML` of lambdas and templates).
pub(crate) fn marshal_value(v: &Value) -> Value {
    match v {
        Value::Lambda(l) => Value::str(format!(
            "(( {} ))",
            lambda_expr_string(&l.params, l.varargs, &l.body)
        )),
        Value::Template(t) => marshal_value(t.orig.value()),
        Value::Expr(e) => Value::str(format!("(( {e} ))")),
        other => other.clone(),
    }
}

/// Converts a node to JSON.
pub(crate) fn value_to_json(v: &Value) -> serde_json::Value {
    match marshal_value(v) {
        Value::Nil => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(b),
        Value::Int(i) => serde_json::Value::from(i),
        // an integral float prints like an integer in YAML (Go's 'g' format) and becomes one
        // after Landscaper's YAML/JSON round trip
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => serde_json::Value::from(f as i64),
        Value::Float(f) => serde_json::Number::from_f64(f)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        Value::Str(s) => serde_json::Value::String(s.to_string()),
        Value::List(l) => {
            serde_json::Value::Array(l.iter().map(|n| value_to_json(n.value())).collect())
        }
        Value::Map(m) => serde_json::Value::Object(
            m.iter()
                .map(|(k, n)| (k.clone(), value_to_json(n.value())))
                .collect(),
        ),
        _ => serde_json::Value::Null,
    }
}

// ------------------------------------------------------------------ Go JSON

pub(crate) fn go_json_str(s: &str, out: &mut String) {
    go_json_string(s, out)
}

fn go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Go's `json.Marshal` of a value (compact, sorted keys, HTML-safe escaping).
pub(crate) fn go_json(v: &Value) -> Result<String, String> {
    let mut out = String::new();
    go_json_into(v, &mut out)?;
    Ok(out)
}

fn go_json_into(v: &Value, out: &mut String) -> Result<(), String> {
    match marshal_value(v) {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => {
            if !f.is_finite() {
                return Err(format!(
                    "json: unsupported value: {}",
                    format_float(f, b'g', -1)
                ));
            }
            out.push_str(&json_float(f));
        }
        Value::Str(s) => go_json_string(&s, out),
        Value::List(l) => {
            out.push('[');
            for (i, n) in l.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_into(n.value(), out)?;
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push('{');
            for (i, (k, n)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_string(k, out);
                out.push(':');
                go_json_into(n.value(), out)?;
            }
            out.push('}');
        }
        _ => out.push_str("null"),
    }
    Ok(())
}

// ------------------------------------------------------------------ YAML emitter

/// Whether a plain scalar would be read as something other than a string (YAML 1.1 as
/// candiedyaml resolves it).
pub(crate) fn resolves_non_string(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    matches!(
        s,
        "~" | "null"
            | "Null"
            | "NULL"
            | "y"
            | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
            | ".inf"
            | ".Inf"
            | ".INF"
            | "+.inf"
            | "+.Inf"
            | "+.INF"
            | "-.inf"
            | "-.Inf"
            | "-.INF"
            | ".nan"
            | ".NaN"
            | ".NAN"
    ) || looks_numeric(s)
        || looks_time(s)
}

fn looks_numeric(s: &str) -> bool {
    let b = s.as_bytes();
    let first = b[0];
    if !(first.is_ascii_digit() || first == b'-' || first == b'+' || first == b'.') {
        return false;
    }
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    if body.is_empty() {
        return false;
    }
    let clean: String = body.chars().filter(|c| *c != '_').collect();
    if let Some(h) = clean.strip_prefix("0x") {
        return !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit());
    }
    if let Some(h) = clean.strip_prefix("0b") {
        return !h.is_empty() && h.chars().all(|c| c == '0' || c == '1');
    }
    if let Some(h) = clean.strip_prefix("0o") {
        return !h.is_empty() && h.chars().all(|c| ('0'..='7').contains(&c));
    }
    if clean.chars().all(|c| c.is_ascii_digit()) {
        return true;
    }
    // sexagesimal 1:20
    if clean.contains(':')
        && clean
            .split(':')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
    {
        return true;
    }
    clean.parse::<f64>().is_ok()
        && clean
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
}

fn looks_time(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 8
        && b[..4].iter().all(|c| c.is_ascii_digit())
        && b[4] == b'-'
        && b[5].is_ascii_digit()
        && (b[6] == b'-' || (b[6].is_ascii_digit() && b.get(7) == Some(&b'-')))
}

#[derive(PartialEq, Clone, Copy)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

fn double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\0' => out.push_str("\\0"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{85}' => out.push_str("\\N"),
            '\u{a0}' => out.push_str("\\_"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if c.is_ascii() && is_printable(c) => out.push(c),
            c => {
                let u = c as u32;
                if u <= 0xFF {
                    let _ = write!(out, "\\x{u:02X}");
                } else if u <= 0xFFFF {
                    let _ = write!(out, "\\u{u:04X}");
                } else {
                    let _ = write!(out, "\\U{u:08X}");
                }
            }
        }
    }
    out.push('"');
    out
}

fn single_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

struct Emitter {
    out: String,
}

impl Emitter {
    fn scalar_text(&self, v: &Value) -> (String, Style) {
        match v {
            Value::Nil => ("null".into(), Style::Plain),
            Value::Bool(b) => (b.to_string(), Style::Plain),
            Value::Int(i) => (i.to_string(), Style::Plain),
            Value::Float(f) => {
                let s = if f.is_nan() {
                    ".nan".to_string()
                } else if f.is_infinite() {
                    if *f > 0.0 {
                        "+.inf".into()
                    } else {
                        "-.inf".into()
                    }
                } else {
                    format_float(*f, b'g', -1)
                };
                (s, Style::Plain)
            }
            Value::Str(s) => {
                let style = if resolves_non_string(s) {
                    Style::Double
                } else if s.contains(['\n', '\u{85}', '\u{2028}', '\u{2029}']) {
                    Style::Literal
                } else {
                    Style::Plain
                };
                (s.to_string(), style)
            }
            _ => (String::new(), Style::Plain),
        }
    }

    /// Final style as libyaml selects it.
    fn select(s: &str, mut style: Style, simple_key: bool) -> Style {
        let a = analyze(s, true);
        if simple_key && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain {
            if !a.block_plain {
                style = Style::Single;
            }
            if s.is_empty() && simple_key {
                style = Style::Single;
            }
        }
        if style == Style::Single && !a.single_quoted {
            style = Style::Double;
        }
        if style == Style::Literal && (!a.block || simple_key) {
            style = Style::Double;
        }
        style
    }

    fn write_scalar(&mut self, v: &Value, indent: usize, simple_key: bool) {
        let (s, style) = self.scalar_text(v);
        let style = Self::select(&s, style, simple_key);
        match style {
            Style::Plain => self.out.push_str(&s),
            Style::Single => self.out.push_str(&single_quoted(&s)),
            Style::Double => self.out.push_str(&double_quoted(&s)),
            Style::Literal => {
                self.out.push('|');
                if s.starts_with([' ', '\n']) {
                    self.out.push('2');
                }
                if !s.ends_with('\n') {
                    self.out.push('-');
                } else {
                    self.out.push('+');
                }
                self.out.push('\n');
                let mut at_line_start = true;
                for c in s.chars() {
                    if c == '\n' {
                        self.out.push('\n');
                        at_line_start = true;
                    } else {
                        if at_line_start {
                            for _ in 0..indent {
                                self.out.push(' ');
                            }
                            at_line_start = false;
                        }
                        self.out.push(c);
                    }
                }
                if !s.ends_with('\n') {
                    self.out.push('\n');
                }
                return;
            }
        }
        self.out.push('\n');
    }

    fn is_collection(v: &Value) -> bool {
        match v {
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
            _ => false,
        }
    }

    fn write_empty_or_scalar(&mut self, v: &Value, indent: usize) {
        match v {
            Value::List(_) => self.out.push_str("[]\n"),
            Value::Map(_) => self.out.push_str("{}\n"),
            _ => self.write_scalar(v, indent, false),
        }
    }

    /// Writes a value whose first line continues the current line; `indent` is the block indent.
    fn write_value(&mut self, v: &Value, indent: usize, first_inline: bool) {
        let v = marshal_value(v);
        match &v {
            Value::Map(m) if !m.is_empty() => {
                let mut first = first_inline;
                for (k, n) in m.iter() {
                    if !first {
                        for _ in 0..indent {
                            self.out.push(' ');
                        }
                    }
                    first = false;
                    let (ks, kstyle) = self.scalar_text(&Value::str(k.as_str()));
                    let kstyle = Self::select(&ks, kstyle, true);
                    match kstyle {
                        Style::Plain => self.out.push_str(&ks),
                        Style::Single => self.out.push_str(&single_quoted(&ks)),
                        _ => self.out.push_str(&double_quoted(&ks)),
                    }
                    self.out.push(':');
                    let child = marshal_value(n.value());
                    if Self::is_collection(&child) {
                        self.out.push('\n');
                        match &child {
                            Value::List(_) => self.write_value(&child, indent, false),
                            _ => self.write_value(&child, indent + 2, false),
                        }
                    } else {
                        self.out.push(' ');
                        self.write_empty_or_scalar(&child, indent + 2);
                    }
                }
            }
            Value::List(l) if !l.is_empty() => {
                let mut first = first_inline;
                for n in l.iter() {
                    if !first {
                        for _ in 0..indent {
                            self.out.push(' ');
                        }
                    }
                    first = false;
                    self.out.push_str("- ");
                    let child = marshal_value(n.value());
                    if Self::is_collection(&child) {
                        self.write_value(&child, indent + 2, true);
                    } else {
                        self.write_empty_or_scalar(&child, indent + 2);
                    }
                }
            }
            other => {
                if !first_inline {
                    for _ in 0..indent {
                        self.out.push(' ');
                    }
                }
                self.write_empty_or_scalar(other, indent.max(2));
            }
        }
    }
}

/// candiedyaml's `Marshal` of a value.
pub(crate) fn emit_yaml(v: &Value) -> String {
    let mut e = Emitter { out: String::new() };
    e.write_value(v, 0, true);
    e.out
}

/// Parses a YAML text as an expression node value (used for `Rc<Expr>` free uses).
#[allow(dead_code)]
pub(crate) fn expr_node(e: Rc<Expr>) -> Node {
    Node::new(Value::Expr(e))
}
