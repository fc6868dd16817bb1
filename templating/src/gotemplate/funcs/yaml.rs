//! YAML as `sigs.k8s.io/yaml` does it: `toYaml` is `json.Marshal` followed by yaml.v2's
//! decoder and emitter (keys sorted, YAML 1.1 look-alikes quoted, long scalars folded at 80
//! columns, multi-line strings as literal blocks); `fromYaml` is yaml.v2's decoder with YAML 1.1
//! resolution followed by a JSON round trip (numbers become float64).

use crate::yaml_scalar::{analyze, is_break, is_printable};
use std::collections::BTreeMap;

use granit_parser::{Event, Parser, ScalarStyle};

use super::super::value::{Value, go_lossy};
use super::conv::{parse_int, parse_uint};
use super::json;
use crate::gofmt::format_float;

// ---- the JSON → yaml.v2 object step ----------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// Mirrors `yaml.v2`'s `resolve` for a plain scalar: the tag it would get.
#[derive(Debug, Clone, PartialEq)]
enum Resolved {
    Str,
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Timestamp,
    Merge,
}

fn yaml_style_float(s: &str) -> bool {
    // ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - st
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// yaml.v2's timestamp check (`parseTimestamp`) for the formats it accepts.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let i = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if i != 4 || i == b.len() || b[i] != b'-' {
        return false;
    }
    // 2006-1-2, optionally followed by [Tt ]15:4:5(.9+)?(Z|±hh:mm)?
    let rest = &s[5..];
    let mut parts = rest.splitn(3, '-');
    let (Some(m), Some(dtail)) = (parts.next(), parts.next()) else {
        return false;
    };
    if parts.next().is_some() {
        return false;
    }
    let m_ok = (1..=2).contains(&m.len())
        && m.bytes().all(|c| c.is_ascii_digit())
        && (1..=12).contains(&m.parse::<u32>().unwrap_or(0));
    if !m_ok {
        return false;
    }
    let dlen = dtail.bytes().take_while(|c| c.is_ascii_digit()).count();
    if !(1..=2).contains(&dlen) {
        return false;
    }
    let d: u32 = dtail[..dlen].parse().unwrap_or(0);
    if !(1..=31).contains(&d) {
        return false;
    }
    let tail = &dtail[dlen..];
    if tail.is_empty() {
        return true;
    }
    let (sep, time) = tail.split_at(1);
    if !matches!(sep, "T" | "t" | " ") {
        return false;
    }
    // h:m:s with 1-2 digits each, optional fraction, then zone for T/t, nothing for space.
    let mut idx = 0;
    let tb = time.as_bytes();
    for k in 0..3 {
        let n = tb[idx..].iter().take_while(|c| c.is_ascii_digit()).count();
        if !(1..=2).contains(&n) {
            return false;
        }
        idx += n;
        if k < 2 {
            if idx >= tb.len() || tb[idx] != b':' {
                return false;
            }
            idx += 1;
        }
    }
    if idx < tb.len() && tb[idx] == b'.' {
        let n = tb[idx + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if n == 0 {
            return false;
        }
        idx += 1 + n;
    }
    let zone = &time[idx..];
    if sep == " " {
        return zone.is_empty();
    }
    zone == "Z"
        || zone.len() == 6
            && (zone.starts_with('+') || zone.starts_with('-'))
            && zone.as_bytes()[3] == b':'
            && zone[1..3].bytes().all(|c| c.is_ascii_digit())
            && zone[4..].bytes().all(|c| c.is_ascii_digit())
}

fn resolve(s: &str) -> Resolved {
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Resolved::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Resolved::Bool(false);
        }
        "" | "~" | "null" | "Null" | "NULL" => return Resolved::Null,
        ".nan" | ".NaN" | ".NAN" => return Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Resolved::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Resolved::Float(f64::NEG_INFINITY),
        "<<" => return Resolved::Merge,
        _ => {}
    }
    let first = s.as_bytes()[0];
    match first {
        b'.' => {
            if let Ok(f) = s.parse::<f64>()
                && super::conv::parse_float(s).is_some()
            {
                return Resolved::Float(f);
            }
        }
        b'+' | b'-' | b'0'..=b'9' => {
            if is_timestamp(s) {
                return Resolved::Timestamp;
            }
            let plain = if s.contains('_') {
                std::borrow::Cow::Owned(s.replace('_', ""))
            } else {
                std::borrow::Cow::Borrowed(s)
            };
            if let Some(i) = parse_int(&plain, 0) {
                return Resolved::Int(i);
            }
            if let Some(u) = parse_uint(&plain, 0) {
                return Resolved::Uint(u);
            }
            if yaml_style_float(&plain)
                && let Ok(f) = plain.parse::<f64>()
            {
                return Resolved::Float(f);
            }
            if let Some(bin) = plain.strip_prefix("0b") {
                if let Some(i) = parse_int(bin, 2) {
                    return Resolved::Int(i);
                }
                if let Some(u) = parse_uint(bin, 2) {
                    return Resolved::Uint(u);
                }
            } else if let Some(bin) = plain.strip_prefix("-0b")
                && let Some(i) = parse_int(&format!("-{bin}"), 2)
            {
                return Resolved::Int(i);
            }
        }
        _ => {}
    }
    Resolved::Str
}

fn is_base60_float(s: &str) -> bool {
    // ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
    let b = s.as_bytes();
    if b.is_empty() || !(b[0] == b'+' || b[0] == b'-' || b[0].is_ascii_digit()) || !s.contains(':')
    {
        return false;
    }
    let mut i = 0;
    if b[0] == b'+' || b[0] == b'-' {
        i = 1;
    }
    if i >= b.len() || !b[i].is_ascii_digit() {
        return false;
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while i < b.len() && b[i] == b':' {
        i += 1;
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() && i - st < 2 {
            i += 1;
        }
        let n = i - st;
        if n == 0 {
            return false;
        }
        if n == 2 && b[st] > b'5' {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// What yaml.v2 reads back from a JSON string: Go's JSON encoder leaves U+0085 (NEL)
/// unescaped, and inside a double-quoted YAML scalar it is a line break that folds (one break
/// becomes a space, n breaks n-1 newlines, white space around them dropped).
fn json_yaml_round_trip(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\u{85}') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '\u{85}' {
            while out.ends_with(' ') || out.ends_with('\t') {
                out.pop();
            }
            let mut breaks = 0;
            while i < chars.len() && matches!(chars[i], '\u{85}' | ' ' | '\t') {
                if chars[i] == '\u{85}' {
                    breaks += 1;
                }
                i += 1;
            }
            if breaks == 1 {
                out.push(' ');
            } else {
                for _ in 1..breaks {
                    out.push('\n');
                }
            }
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    std::borrow::Cow::Owned(out)
}

/// yaml.v2 `encoder.stringv`'s choice of style for a string (already round-tripped through
/// JSON with [`json_yaml_round_trip`]).
fn string_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if resolve(s) == Resolved::Str && !is_base60_float(s) {
        Style::Plain
    } else {
        Style::Double
    }
}

/// yaml.v2's float formatting.
fn yaml_float(f: f64) -> String {
    if f.is_nan() {
        ".nan".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        }
    } else {
        format_float(f, b'g', -1)
    }
}

/// yaml.v2's `keyList.Less` for string keys: runs of digits compare numerically, letters
/// before other characters.
fn key_less(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        key_less_by(a.as_bytes(), b.as_bytes(), |c| c as char)
    } else {
        let ar: Vec<char> = a.chars().collect();
        let br: Vec<char> = b.chars().collect();
        key_less_by(&ar, &br, |c| c)
    }
}

fn key_less_by<T: Copy + PartialEq + PartialOrd>(
    ar: &[T],
    br: &[T],
    ch: impl Fn(T) -> char,
) -> bool {
    let digit = |c: T| ch(c).is_ascii_digit();
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let al = super::unicode::is_letter(ch(ar[i]));
        let bl = super::unicode::is_letter(ch(br[i]));
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn): (i64, i64) = (0, 0);
        if ch(ar[i]) == '0' || ch(br[i]) == '0' {
            let mut j = i;
            while j > 0 && digit(ar[j - 1]) {
                j -= 1;
                if ch(ar[j]) != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && digit(ar[ai]) {
            an = an
                .wrapping_mul(10)
                .wrapping_add(ch(ar[ai]) as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && digit(br[bi]) {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(ch(br[bi]) as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

fn key_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    if key_less(a, b) {
        std::cmp::Ordering::Less
    } else if key_less(b, a) {
        std::cmp::Ordering::Greater
    } else {
        std::cmp::Ordering::Equal
    }
}

// ---- the yaml.v2 emitter ---------------------------------------------------------------------

const BEST_INDENT: i64 = 2;

struct Emitter {
    out: String,
    indent: i64,
    indents: Vec<i64>,
    column: i64,
    whitespace: bool,
    indention: bool,
    flow_level: i64,
    root: bool,
    sequence_ctx: bool,
    mapping_ctx: bool,
    simple_key_ctx: bool,
    /// yaml.v2 folds at 80 columns; the yaml.v3 style of `toYamlPretty` does not.
    best_width: i64,
    /// yaml.v3 with indent 2 indents block sequences below their key.
    indent_sequences: bool,
}

impl Emitter {
    fn new() -> Emitter {
        Emitter {
            out: String::with_capacity(128),
            indent: -1,
            indents: Vec::new(),
            column: 0,
            whitespace: true,
            indention: true,
            flow_level: 0,
            root: false,
            sequence_ctx: false,
            mapping_ctx: false,
            simple_key_ctx: false,
            best_width: 80,
            indent_sequences: false,
        }
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, ind: &str, need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(' ');
        }
        for c in ind.chars() {
            self.put(c);
        }
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
    }

    /// Emits what yaml.v2 decodes from `json.Marshal(v)` (the JSON step is implicit: numbers,
    /// strings, times... are written as their JSON text would read back).
    fn emit_value(
        &mut self,
        v: &Value,
        root: bool,
        sequence: bool,
        mapping: bool,
        simple_key: bool,
    ) -> Result<(), String> {
        if matches!(v, Value::List(_) | Value::Map(_)) {
            // Shared lists and maps are written each time they occur: bounded by the budget.
            crate::budget::check_bytes(self.out.len()).map_err(|e| e.to_string())?;
        }
        self.root = root;
        self.sequence_ctx = sequence;
        self.mapping_ctx = mapping;
        self.simple_key_ctx = simple_key;
        match v {
            Value::Nil => self.emit_scalar("null", Style::Plain),
            Value::Bool(b) => self.emit_scalar(if *b { "true" } else { "false" }, Style::Plain),
            Value::Int(i) | Value::Int64(i) => self.emit_scalar(&i.to_string(), Style::Plain),
            Value::Uint64(u) => self.emit_scalar(&u.to_string(), Style::Plain),
            Value::Uint8(u) => self.emit_scalar(&u.to_string(), Style::Plain),
            Value::Float(f) if f.abs() < 1e15 && f.fract() == 0.0 => {
                // What JSON writes reads back as this integer (-0 as 0).
                self.emit_scalar(&(*f as i64).to_string(), Style::Plain);
            }
            Value::Float(f) => {
                let text = json::float(*f)?;
                let text = match resolve(&text) {
                    Resolved::Int(i) => i.to_string(),
                    Resolved::Uint(u) => u.to_string(),
                    Resolved::Float(f) => yaml_float(f),
                    _ => text,
                };
                self.emit_scalar(&text, Style::Plain);
            }
            Value::String(s) => self.emit_string(s),
            Value::ByteString(b) => self.emit_string(&go_lossy(b)),
            Value::Time(t) => self.emit_string(&t.marshal_json()?),
            Value::Semver(v) => self.emit_string(&v.to_string()),
            Value::Bytes(b) => {
                use base64::Engine as _;
                self.emit_string(&base64::engine::general_purpose::STANDARD.encode(b))
            }
            Value::List(items) => {
                if self.flow_level > 0 || items.is_empty() {
                    self.write_indicator("[", true, true, false);
                    self.increase_indent(true, false);
                    self.flow_level += 1;
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            self.write_indicator(",", false, false, false);
                        }
                        if self.column > self.best_width {
                            self.write_indent();
                        }
                        self.emit_value(item, false, true, false, false)?;
                    }
                    self.flow_level -= 1;
                    self.pop_indent();
                    self.write_indicator("]", false, false, false);
                } else {
                    let indentless = self.mapping_ctx && !self.indention && !self.indent_sequences;
                    self.increase_indent(false, indentless);
                    for item in items.iter() {
                        self.write_indent();
                        self.write_indicator("-", true, false, true);
                        self.emit_value(item, false, true, false, false)?;
                    }
                    self.pop_indent();
                }
            }
            Value::Map(m) => {
                let m = m.borrow();
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort_by(|a, b| key_cmp(a, b));
                let flow = self.flow_level > 0 || keys.is_empty();
                if flow {
                    self.write_indicator("{", true, true, false);
                    self.increase_indent(true, false);
                    self.flow_level += 1;
                } else {
                    self.increase_indent(false, false);
                }
                for (i, k) in keys.into_iter().enumerate() {
                    let key = json_yaml_round_trip(k);
                    let simple = key.len() <= 128 && !key.chars().any(is_break);
                    if flow {
                        if i > 0 {
                            self.write_indicator(",", false, false, false);
                        }
                        if self.column > self.best_width {
                            self.write_indent();
                        }
                    } else {
                        self.write_indent();
                    }
                    if simple {
                        self.emit_key(&key, true);
                        self.write_indicator(":", false, false, false);
                    } else {
                        self.write_indicator("?", true, false, !flow);
                        self.emit_key(&key, false);
                        if !flow || self.column > self.best_width {
                            self.write_indent();
                        }
                        self.write_indicator(":", true, false, !flow);
                    }
                    self.emit_value(&m[k.as_str()], false, false, true, false)?;
                }
                if flow {
                    self.flow_level -= 1;
                    self.pop_indent();
                    self.write_indicator("}", false, false, false);
                } else {
                    self.pop_indent();
                }
            }
        }
        Ok(())
    }

    /// A string scalar (as JSON wrote it and yaml.v2 read it back).
    fn emit_string(&mut self, s: &str) {
        let s = json_yaml_round_trip(s);
        self.emit_scalar(&s, string_style(&s));
    }

    /// A map key (already round-tripped through JSON).
    fn emit_key(&mut self, key: &str, simple_key: bool) {
        self.root = false;
        self.sequence_ctx = false;
        self.mapping_ctx = true;
        self.simple_key_ctx = simple_key;
        self.emit_scalar(key, string_style(key));
    }

    fn emit_scalar(&mut self, text: &str, requested: Style) {
        let a = analyze(text, false);
        let mut style = requested;
        if self.simple_key_ctx && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain {
            if self.flow_level > 0 && !a.flow_plain || self.flow_level == 0 && !a.block_plain {
                style = Style::Single;
            }
            if text.is_empty() && (self.flow_level > 0 || self.simple_key_ctx) {
                style = Style::Single;
            }
        }
        if style == Style::Single && !a.single_quoted {
            style = Style::Double;
        }
        if style == Style::Literal && (!a.block || self.flow_level > 0 || self.simple_key_ctx) {
            style = Style::Double;
        }
        self.increase_indent(true, false);
        let allow_breaks = !self.simple_key_ctx;
        match style {
            Style::Plain => self.write_plain(text, allow_breaks),
            Style::Single => self.write_single(text, allow_breaks),
            Style::Double => self.write_double(text, allow_breaks),
            Style::Literal => self.write_literal(text),
        }
        self.pop_indent();
    }

    fn write_plain(&mut self, value: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let (mut spaces, mut breaks) = (false, false);
        let mut chars = value.chars().peekable();
        while let Some(c) = chars.next() {
            if c == ' ' {
                let next_space = chars.peek() == Some(&' ');
                if allow_breaks && !spaces && self.column > self.best_width && !next_space {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let (mut spaces, mut breaks) = (false, false);
        let mut chars = value.chars().peekable();
        let mut first = true;
        while let Some(c) = chars.next() {
            if c == ' ' {
                let inner_before_non_space = chars.peek().is_some_and(|n| *n != ' ');
                if allow_breaks
                    && !spaces
                    && self.column > self.best_width
                    && !first
                    && inner_before_non_space
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
            first = false;
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double(&mut self, value: &str, allow_breaks: bool) {
        let bom = value.starts_with('\u{feff}');
        self.write_indicator("\"", true, false, false);
        let mut spaces = false;
        let mut chars = value.chars().peekable();
        let mut first = true;
        while let Some(c) = chars.next() {
            if !is_printable(c) || bom || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                let v = c as u32;
                match v {
                    0x00 => self.put('0'),
                    0x07 => self.put('a'),
                    0x08 => self.put('b'),
                    0x09 => self.put('t'),
                    0x0A => self.put('n'),
                    0x0B => self.put('v'),
                    0x0C => self.put('f'),
                    0x0D => self.put('r'),
                    0x1B => self.put('e'),
                    0x22 => self.put('"'),
                    0x5C => self.put('\\'),
                    0x85 => self.put('N'),
                    0xA0 => self.put('_'),
                    0x2028 => self.put('L'),
                    0x2029 => self.put('P'),
                    _ => {
                        let (ind, w) = if v <= 0xFF {
                            ('x', 2)
                        } else if v <= 0xFFFF {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(ind);
                        for k in (0..w).rev() {
                            let d = (v >> (k * 4)) & 0xF;
                            self.put(char::from_digit(d, 16).unwrap_or('0').to_ascii_uppercase());
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                let next = chars.peek().copied();
                if allow_breaks
                    && !spaces
                    && self.column > self.best_width
                    && !first
                    && next.is_some()
                {
                    self.write_indent();
                    if next == Some(' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
            first = false;
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        if value
            .chars()
            .next()
            .is_some_and(|c| c == ' ' || is_break(c))
        {
            self.write_indicator(&BEST_INDENT.to_string(), false, false, false);
        }
        let mut from_end = value.chars().rev();
        let chomp = match (from_end.next(), from_end.next()) {
            (None, _) => Some('-'),
            (Some(last), before) => {
                if !is_break(last) {
                    Some('-')
                } else if before.is_none_or(is_break) {
                    Some('+')
                } else {
                    None
                }
            }
        };
        if let Some(c) = chomp {
            self.write_indicator(&c.to_string(), false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in value.chars() {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// `sigs.k8s.io/yaml.Marshal(v)`: the YAML text with its final newline.
pub fn marshal(v: &Value) -> Result<String, String> {
    let mut e = Emitter::new();
    e.emit_value(v, true, false, false, false)
        .map_err(|e| format!("error marshaling into JSON: {e}"))?;
    // Document end: an implicit end writes the pending line break.
    e.write_indent();
    Ok(e.out)
}

/// Helm's `toYamlPretty` (yaml.v3, indent 2), approximated with the yaml.v2 emitter: block
/// sequences are indented below their key and long scalars are not folded.
pub fn marshal_pretty(v: &Value) -> Result<String, String> {
    let mut e = Emitter::new();
    e.best_width = i64::MAX / 2;
    e.indent_sequences = true;
    e.emit_value(v, true, false, false, false)?;
    e.write_indent();
    Ok(e.out)
}

// ---- the decoder ------------------------------------------------------------------------------

/// What yaml.v2 decodes into `interface{}` before sigs.k8s.io/yaml turns it into JSON.
#[derive(Debug, Clone)]
enum Y {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Y>),
    Map(Vec<(Y, Y)>),
}

/// The parser's events one at a time, comments dropped (yaml.v2 drops them; the parser reports
/// them as events). Streaming matters: a chart's `fromYaml` of a megabyte CRD collected as a
/// list was tens of megabytes of fresh memory, most of a big chart's render time.
struct Events<'a> {
    parser: Parser<'a, granit_parser::StrInput<'a>>,
    peeked: Option<(Event<'a>, granit_parser::Span)>,
}

/// Why the first document could not be loaded: its syntax (the whole message) or its
/// meaning (prefixed by the caller).
enum LoadError {
    Syntax(String),
    Decode(String),
}

impl<'a> Events<'a> {
    fn pull(&mut self) -> Result<Option<(Event<'a>, granit_parser::Span)>, LoadError> {
        if let Some(e) = self.peeked.take() {
            return Ok(Some(e));
        }
        loop {
            match self.parser.next() {
                None => return Ok(None),
                Some(Ok((Event::Comment(..), _))) => {}
                Some(Ok(e)) => return Ok(Some(e)),
                Some(Err(e)) => {
                    let msg = e.info().to_string();
                    return Err(LoadError::Syntax(format!(
                        "error converting YAML to JSON: {}",
                        yaml_error(e.marker().line(), &msg)
                    )));
                }
            }
        }
    }

    fn peek(&mut self) -> Result<Option<&Event<'a>>, LoadError> {
        if self.peeked.is_none() {
            self.peeked = self.pull()?;
        }
        Ok(self.peeked.as_ref().map(|(e, _)| e))
    }

    /// Reads up to the end of the first document, so that a syntax error in it wins over a
    /// decoding error, as in yaml.v2 (which parses the document before decoding it).
    fn finish_document(&mut self) -> Result<(), LoadError> {
        while let Some((e, _)) = self.pull()? {
            if matches!(e, Event::DocumentEnd | Event::StreamEnd) {
                break;
            }
        }
        Ok(())
    }
}

struct Loader<'e, 'a> {
    events: &'e mut Events<'a>,
    /// Anchored values and their size in decoded nodes.
    anchors: BTreeMap<usize, (Y, u64)>,
    /// Nodes decoded, aliases' expansions included (yaml.v2's `decodeCount`).
    decode_count: u64,
    /// Nodes decoded inside aliases (yaml.v2's `aliasCount`).
    alias_count: u64,
}

/// yaml.v2's `allowedAliasRatio`: the share of nodes that may come from aliases.
fn allowed_alias_ratio(decode_count: u64) -> f64 {
    const LOW: u64 = 400_000;
    const HIGH: u64 = 4_000_000;
    if decode_count <= LOW {
        0.99
    } else if decode_count >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((decode_count - LOW) as f64 / (HIGH - LOW) as f64)
    }
}

fn yaml_error(line: usize, msg: &str) -> String {
    format!("yaml: line {line}: {msg}")
}

impl Loader<'_, '_> {
    fn node(&mut self) -> Result<Y, LoadError> {
        let Some((ev, span)) = self.events.pull()? else {
            return Ok(Y::Null);
        };
        let line = span.start.line();
        let start = self.decode_count;
        self.decode_count += 1;
        match ev {
            Event::Alias(id) => {
                let Some((y, size)) = self.anchors.get(&id) else {
                    return Err(LoadError::Decode(yaml_error(
                        line,
                        "unknown anchor referenced",
                    )));
                };
                // yaml.v2 decodes an alias' nodes again and stops a "billion laughs" document
                // before it expands; so does this, before the copy.
                self.decode_count += size;
                self.alias_count += size;
                if self.alias_count > 100
                    && self.decode_count > 1000
                    && self.alias_count as f64 / self.decode_count as f64
                        > allowed_alias_ratio(self.decode_count)
                {
                    return Err(LoadError::Decode(
                        "yaml: document contains excessive aliasing".to_string(),
                    ));
                }
                Ok(y.clone())
            }
            Event::Scalar(value, style, anchor, tag) => {
                let y = scalar(&value, style, tag.as_deref(), line).map_err(LoadError::Decode)?;
                if anchor != 0 {
                    self.anchors
                        .insert(anchor, (y.clone(), self.decode_count - start));
                }
                Ok(y)
            }
            Event::SequenceStart(_, anchor, _) => {
                let mut items = Vec::new();
                loop {
                    match self.events.peek()? {
                        Some(Event::SequenceEnd) => {
                            self.events.pull()?;
                            break;
                        }
                        None => break,
                        Some(_) => items.push(self.node()?),
                    }
                }
                let y = Y::Seq(items);
                if anchor != 0 {
                    self.anchors
                        .insert(anchor, (y.clone(), self.decode_count - start));
                }
                Ok(y)
            }
            Event::MappingStart(_, anchor, _) => {
                let mut entries: Vec<(Y, Y)> = Vec::new();
                let mut merged: Vec<(Y, Y)> = Vec::new();
                loop {
                    let is_merge = match self.events.peek()? {
                        Some(Event::MappingEnd) => {
                            self.events.pull()?;
                            break;
                        }
                        None => break,
                        Some(e) => matches!(
                            e,
                            Event::Scalar(v, ScalarStyle::Plain, _, None) if v == "<<"
                        ),
                    };
                    let k = self.node()?;
                    let v = self.node()?;
                    if is_merge {
                        match v {
                            Y::Map(m) => merged.extend(m),
                            Y::Seq(maps) => {
                                for m in maps {
                                    match m {
                                        Y::Map(m) => merged.extend(m),
                                        _ => {
                                            return Err(LoadError::Decode(yaml_error(
                                                line,
                                                "map merge requires map or sequence of maps as the value",
                                            )));
                                        }
                                    }
                                }
                            }
                            _ => {
                                return Err(LoadError::Decode(yaml_error(
                                    line,
                                    "map merge requires map or sequence of maps as the value",
                                )));
                            }
                        }
                        continue;
                    }
                    entries.push((k, v));
                }
                // Merged keys come first; explicit keys override them.
                let mut all = merged;
                all.extend(entries);
                let y = Y::Map(all);
                if anchor != 0 {
                    self.anchors
                        .insert(anchor, (y.clone(), self.decode_count - start));
                }
                Ok(y)
            }
            _ => self.node(),
        }
    }
}

fn scalar(
    value: &str,
    style: ScalarStyle,
    tag: Option<&granit_parser::Tag>,
    line: usize,
) -> Result<Y, String> {
    let from_resolved = |r: Resolved| match r {
        Resolved::Null => Y::Null,
        Resolved::Bool(b) => Y::Bool(b),
        Resolved::Int(i) => Y::Int(i),
        Resolved::Uint(u) => Y::Uint(u),
        Resolved::Float(f) => Y::Float(f),
        Resolved::Str | Resolved::Timestamp | Resolved::Merge => Y::Str(value.to_string()),
    };
    if let Some(tag) = tag {
        let suffix = if tag.is_yaml_core_schema() {
            tag.suffix().to_string()
        } else {
            String::new()
        };
        let cannot = |want: &str, got: &str| {
            yaml_error(
                line,
                &format!("cannot decode !!{got} `{value}` as a !!{want}"),
            )
        };
        return Ok(match suffix.as_str() {
            "str" => Y::Str(value.to_string()),
            "binary" => {
                use base64::Engine as _;
                let cleaned: String = value.chars().filter(|c| !c.is_whitespace()).collect();
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(cleaned)
                    .map_err(|_| yaml_error(line, "!!binary value contains invalid base64 data"))?;
                Y::Str(String::from_utf8_lossy(&bytes).into_owned())
            }
            "" => {
                // A local or unknown tag: yaml.v2 keeps the text.
                if tag.is_yaml_core_schema() {
                    from_resolved(resolve(value))
                } else {
                    Y::Str(value.to_string())
                }
            }
            want => {
                let r = if value.is_empty() {
                    Resolved::Null
                } else {
                    resolve(value)
                };
                match (want, &r) {
                    ("int", Resolved::Int(_) | Resolved::Uint(_))
                    | ("bool", Resolved::Bool(_))
                    | ("null", Resolved::Null)
                    | ("float", Resolved::Float(_))
                    | ("timestamp", Resolved::Timestamp) => from_resolved(r),
                    ("float", Resolved::Int(i)) => Y::Float(*i as f64),
                    ("float", Resolved::Uint(u)) => Y::Float(*u as f64),
                    ("map" | "seq" | "merge", _) => from_resolved(r),
                    _ => {
                        let got = match r {
                            Resolved::Str | Resolved::Merge => "str",
                            Resolved::Null => "null",
                            Resolved::Bool(_) => "bool",
                            Resolved::Int(_) | Resolved::Uint(_) => "int",
                            Resolved::Float(_) => "float",
                            Resolved::Timestamp => "timestamp",
                        };
                        return Err(cannot(want, got));
                    }
                }
            }
        });
    }
    if style != ScalarStyle::Plain {
        return Ok(Y::Str(value.to_string()));
    }
    if value.is_empty() {
        return Ok(Y::Null);
    }
    Ok(from_resolved(resolve(value)))
}

/// sigs.k8s.io/yaml's `convertToJSONableObject` and the JSON round trip: keys become strings,
/// numbers float64.
fn to_json_value(y: Y) -> Result<Value, String> {
    Ok(match y {
        Y::Null => Value::Nil,
        Y::Bool(b) => Value::Bool(b),
        Y::Int(i) => Value::Float(i as f64),
        Y::Uint(u) => Value::Float(u as f64),
        Y::Float(f) => {
            if !f.is_finite() {
                return Err(format!(
                    "json: unsupported value: {}",
                    format_float(f, b'g', -1)
                ));
            }
            Value::Float(f)
        }
        Y::Str(s) => Value::string(s),
        Y::Seq(items) => Value::list(
            items
                .into_iter()
                .map(to_json_value)
                .collect::<Result<_, _>>()?,
        ),
        Y::Map(entries) => {
            let mut m = BTreeMap::new();
            for (k, v) in entries {
                let key = match k {
                    Y::Str(s) => s,
                    Y::Int(i) => i.to_string(),
                    Y::Uint(u) => u.to_string(),
                    Y::Float(f) => {
                        let s = format_float(f as f32 as f64, b'g', -1);
                        match s.as_str() {
                            "+Inf" => ".inf".into(),
                            "-Inf" => "-.inf".into(),
                            "NaN" => ".nan".into(),
                            _ => s,
                        }
                    }
                    Y::Bool(b) => b.to_string(),
                    Y::Null => {
                        return Err(
                            "unsupported map key of type: %!s(<nil>), key: <nil>, value: ..."
                                .to_string(),
                        );
                    }
                    Y::Seq(_) | Y::Map(_) => {
                        return Err("invalid map key".to_string());
                    }
                };
                m.insert(key, to_json_value(v)?);
            }
            Value::map(m)
        }
    })
}

/// Parses the first document of `text` the way yaml.v2 does, into JSON-compatible values
/// (sigs.k8s.io/yaml's `YAMLToJSON` then `json.Unmarshal` into `interface{}`). The error is
/// sigs.k8s.io/yaml's message.
pub fn unmarshal(text: &str) -> Result<Value, String> {
    let Some(y) = load(text)? else {
        return Ok(Value::Nil);
    };
    to_json_value(y).map_err(|e| format!("error converting YAML to JSON: {e}"))
}

/// [`unmarshal`] of a document of which the caller reads only the named top-level keys of a
/// mapping: the same result for those keys and the same errors for the whole document, without
/// building the values of the other keys (Helm's `SimpleHead` of every rendered manifest).
pub fn unmarshal_keys(text: &str, keys: &[&str]) -> Result<Value, String> {
    if let Some(head) = plain_mapping_keys(text, keys) {
        return Ok(head);
    }
    decoded_keys(text, keys)
}

/// [`unmarshal_keys`] through the whole decoder.
fn decoded_keys(text: &str, keys: &[&str]) -> Result<Value, String> {
    let Some(y) = load(text)? else {
        return Ok(Value::Nil);
    };
    check_json(&y).map_err(|e| format!("error converting YAML to JSON: {e}"))?;
    let y = match y {
        Y::Map(entries) => Y::Map(
            entries
                .into_iter()
                .filter(|(k, _)| matches!(k, Y::Str(s) if keys.contains(&s.as_str())))
                .collect(),
        ),
        other => other,
    };
    to_json_value(y).map_err(|e| format!("error converting YAML to JSON: {e}"))
}

/// [`unmarshal_keys`] of the common document, a mapping without anchors, aliases, tags or
/// merge keys whose values all convert to JSON, in one pass that builds only the named keys'
/// values (every rendered manifest of a chart passes through here; building and dropping the
/// whole tree was a third of the work). `None` for anything else, an error included: the full
/// decoder then gives the same result or yaml.v2's message.
fn plain_mapping_keys(text: &str, keys: &[&str]) -> Option<Value> {
    let mut events = Events {
        parser: Parser::new_from_str(text),
        peeked: None,
    };
    loop {
        match events.pull().ok()?? {
            (Event::StreamStart, _) => {}
            (Event::DocumentStart(..), _) => break,
            _ => return None,
        }
    }
    if !matches!(events.pull().ok()??, (Event::MappingStart(_, 0, None), _)) {
        return None;
    }
    let mut kept = Vec::new();
    loop {
        let (key, span) = events.pull().ok()??;
        let key = match key {
            Event::MappingEnd => break,
            Event::Scalar(value, style, 0, None) => {
                if style == ScalarStyle::Plain && value == "<<" {
                    return None;
                }
                scalar(&value, style, None, span.start.line()).ok()?
            }
            _ => return None,
        };
        match &key {
            Y::Null | Y::Seq(_) | Y::Map(_) => return None,
            Y::Str(name) if keys.contains(&name.as_str()) => {
                let mut loader = Loader {
                    events: &mut events,
                    anchors: BTreeMap::new(),
                    decode_count: 0,
                    alias_count: 0,
                };
                let value = loader.node().ok()?;
                if !loader.anchors.is_empty() || check_json(&value).is_err() {
                    return None;
                }
                kept.push((key, value));
            }
            _ => skip_plain_json_node(&mut events)?,
        }
    }
    // The rest of the document must parse (its syntax errors are the full decoder's).
    if !matches!(
        events.pull().ok()??,
        (Event::DocumentEnd | Event::StreamEnd, _)
    ) {
        return None;
    }
    to_json_value(Y::Map(kept)).ok()
}

/// Reads one node's events, checking what [`plain_mapping_keys`] requires of it without
/// building it (`None`: something else).
fn skip_plain_json_node(events: &mut Events<'_>) -> Option<()> {
    // The open collections: a sequence (`None`) or a mapping and whether a key comes next.
    let mut open: Vec<Option<bool>> = Vec::new();
    loop {
        let (event, span) = events.pull().ok()??;
        if matches!(event, Event::MappingEnd | Event::SequenceEnd) {
            open.pop()?;
        } else {
            let at_key = match open.last_mut() {
                Some(Some(key_next)) => {
                    *key_next = !*key_next;
                    !*key_next
                }
                _ => false,
            };
            match event {
                Event::Scalar(value, style, 0, None) => {
                    match scalar(&value, style, None, span.start.line()).ok()? {
                        Y::Null if at_key => return None,
                        Y::Str(s) if at_key && style == ScalarStyle::Plain && s == "<<" => {
                            return None;
                        }
                        Y::Float(f) if !f.is_finite() => return None,
                        _ => {}
                    }
                }
                Event::MappingStart(_, 0, None) | Event::SequenceStart(_, 0, None) if at_key => {
                    return None;
                }
                Event::MappingStart(_, 0, None) => open.push(Some(true)),
                Event::SequenceStart(_, 0, None) => open.push(None),
                _ => return None,
            }
        }
        if open.is_empty() {
            return Some(());
        }
    }
}

/// The errors [`to_json_value`] would report for `y`, the first one in the same order, without
/// building anything.
fn check_json(y: &Y) -> Result<(), String> {
    match y {
        Y::Float(f) if !f.is_finite() => Err(format!(
            "json: unsupported value: {}",
            format_float(*f, b'g', -1)
        )),
        Y::Seq(items) => items.iter().try_for_each(check_json),
        Y::Map(entries) => {
            for (k, v) in entries {
                match k {
                    Y::Null => {
                        return Err(
                            "unsupported map key of type: %!s(<nil>), key: <nil>, value: ..."
                                .to_string(),
                        );
                    }
                    Y::Seq(_) | Y::Map(_) => return Err("invalid map key".to_string()),
                    _ => {}
                }
                check_json(v)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The first document of `text` as yaml.v2 decodes it (`None`: empty).
fn load(text: &str) -> Result<Option<Y>, String> {
    let mut events = Events {
        parser: Parser::new_from_str(text),
        peeked: None,
    };
    let found = load_from(&mut events);
    match found {
        Ok(y) => Ok(y),
        Err(LoadError::Syntax(message)) => Err(message),
        Err(LoadError::Decode(message)) => match events.finish_document() {
            Err(LoadError::Syntax(syntax)) => Err(syntax),
            _ => Err(format!("error converting YAML to JSON: {message}")),
        },
    }
}

fn load_from(events: &mut Events<'_>) -> Result<Option<Y>, LoadError> {
    // Skip StreamStart up to the first DocumentStart.
    loop {
        match events.pull()? {
            None | Some((Event::StreamEnd, _)) => return Ok(None),
            Some((Event::DocumentStart(..), _)) => break,
            Some(_) => {}
        }
    }
    if matches!(events.peek()?, Some(Event::DocumentEnd) | None) {
        events.finish_document()?;
        return Ok(None);
    }
    let mut loader = Loader {
        // yaml.v2 counts the document node too.
        decode_count: 1,
        alias_count: 0,
        events,
        anchors: BTreeMap::new(),
    };
    let node = loader.node()?;
    events.finish_document()?;
    Ok(Some(node))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn billion_laughs_are_excessive_aliasing() {
        // 10^9 leaves once expanded (took 20 GB before); yaml.v2's ratio rule stops it.
        let mut text = String::from("a0: &a0 [x,x,x,x,x,x,x,x,x,x]\n");
        for i in 1..9 {
            let refs = vec![format!("*a{}", i - 1); 10].join(",");
            text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        assert_eq!(
            unmarshal(&text).unwrap_err(),
            "error converting YAML to JSON: yaml: document contains excessive aliasing"
        );
        // A few aliases are fine.
        let v = unmarshal("a: &a [1, 2]\nb: *a\nc: *a\n").unwrap();
        assert!(matches!(v, Value::Map(_)));
    }
    use serde_json::json;

    fn y(v: serde_json::Value) -> String {
        marshal(&Value::from_json(&v)).unwrap()
    }

    #[test]
    fn unmarshal_keys_keeps_the_named_keys_and_every_error() {
        let doc = "kind: A\nspec:\n  x: [1, 2]\nmetadata:\n  name: web\nkind: B\n";
        let v = unmarshal_keys(doc, &["kind", "metadata"]).unwrap();
        // A plain document takes the one-pass reader; anchors and errors the decoder.
        assert!(plain_mapping_keys(doc, &["kind", "metadata"]).is_some());
        assert!(plain_mapping_keys("kind: &a A\nx: *a\n", &["kind"]).is_none());
        assert!(plain_mapping_keys("kind: A\nx: [.inf]\n", &["kind"]).is_none());
        assert_eq!(
            v.to_json().unwrap(),
            json!({"kind": "B", "metadata": {"name": "web"}})
        );
        // Errors anywhere in the document are unmarshal's, first one first.
        for bad in [
            "kind: A\nspec:\n  x: .inf\n",
            "kind: A\nspec:\n  ? [1]\n  : 2\n",
            "kind: A\nspec: {~: 1, a: .nan}\n",
            "kind: A\nspec: [\n",
            "- .inf\n",
        ] {
            assert_eq!(
                unmarshal_keys(bad, &["kind"]).unwrap_err(),
                unmarshal(bad).unwrap_err(),
                "{bad}"
            );
        }
        assert!(matches!(unmarshal_keys("", &["kind"]), Ok(Value::Nil)));
        assert!(matches!(
            unmarshal_keys("x", &["kind"]),
            Ok(Value::String(_))
        ));
    }

    fn json_or_error(r: Result<Value, String>) -> Result<serde_json::Value, String> {
        r.map(|v| v.to_json().unwrap())
    }

    proptest::proptest! {
        /// The one-pass head reader gives what the whole decoder gives, errors included.
        #[test]
        fn head_keys_read_in_one_pass_as_decoded(
            entries in proptest::collection::vec(
                (
                    "(kind|metadata|spec|~|<<|1|\\[a\\]|'kind'|!!str kind|&k kind|)",
                    "( 1| .inf| x| &a x| \\*a| !!str 1| !!int x| \\{a: 1\\}| \\[1, .nan\\]| ~| 'q'| \\{~: 1\\}| \\[|\n  name: n\n  labels: \\{a: b\\}|\n  - a\n  - .NaN|\n  <<: \\{a: 1\\}|)",
                ),
                0..5,
            ),
            prefix in "(|--- |&top |!!map |- )",
        ) {
            let doc: String = prefix
                + &entries
                    .iter()
                    .map(|(k, v)| format!("{k}:{v}\n"))
                    .collect::<String>();
            let keys = ["kind", "metadata"];
            proptest::prop_assert_eq!(
                json_or_error(unmarshal_keys(&doc, &keys)),
                json_or_error(decoded_keys(&doc, &keys)),
                "{}", doc
            );
        }
    }

    #[test]
    fn unmarshal_skips_comments() {
        let v = unmarshal("# head\na: 1 # after a value\nb:\n  - x # in a list\n# tail\n").unwrap();
        assert_eq!(v.to_json().unwrap(), json!({"a": 1.0, "b": ["x"]}));
    }

    #[test]
    fn quotes_yaml_11_look_alikes() {
        assert_eq!(
            y(
                json!({"a": "yes", "b": "on", "c": "0777", "d": "1e3", "e": "true", "f": "", "g": "null", "h": "~", "i": "plain"})
            ),
            "a: \"yes\"\nb: \"on\"\nc: \"0777\"\nd: \"1e3\"\ne: \"true\"\nf: \"\"\ng: \"null\"\nh: \"~\"\ni: plain\n"
        );
    }

    #[test]
    fn numbers_collections_and_blocks() {
        assert_eq!(
            y(
                json!({"n": 1e6, "f": 1.5, "l": [1, "x"], "e": {}, "z": [], "m": "a\nb", "t": "a\nb\n"})
            ),
            "e: {}\nf: 1.5\nl:\n- 1\n- x\nm: |-\n  a\n  b\n\"n\": 1000000\nt: |\n  a\n  b\nz: []\n"
        );
        assert_eq!(y(json!([[1, 2], {"a": 1}])), "- - 1\n  - 2\n- a: 1\n");
        assert_eq!(y(json!("x")), "x\n");
        assert_eq!(y(json!(null)), "null\n");
    }

    #[test]
    fn indicators_force_quotes() {
        assert_eq!(
            y(json!({"a": "- x", "b": "a: b", "c": "#c", "d": " lead", "e": "it's"})),
            "a: '- x'\nb: 'a: b'\nc: '#c'\nd: ' lead'\ne: it's\n"
        );
        assert_eq!(y(json!({"t": "a\tb"})), "t: \"a\\tb\"\n");
    }

    #[test]
    fn keys_sort_naturally() {
        assert_eq!(
            y(json!({"a10": 1, "a2": 2, "b": 3, "B": 4})),
            "B: 4\na2: 2\na10: 1\nb: 3\n"
        );
    }

    #[test]
    fn long_strings_fold_at_80_columns() {
        let s = "this is a very long string that goes on and on and on and on and on beyond eighty columns for sure yes";
        assert_eq!(
            y(json!({"d": s})),
            "d: this is a very long string that goes on and on and on and on and on beyond eighty\n  columns for sure yes\n"
        );
    }

    #[test]
    fn unmarshal_resolves_like_yaml_v2() {
        let v = unmarshal(
            "a: yes\nb: 0777\nc: 1_000\nd: '1'\ne: ~\nf: 2001-12-14\ng: [1, 2.5]\n1: x\n",
        )
        .unwrap();
        assert_eq!(
            v.to_json().unwrap(),
            json!({"a": true, "b": 511.0, "c": 1000.0, "d": "1", "e": null, "f": "2001-12-14", "g": [1.0, 2.5], "1": "x"})
        );
        let v = unmarshal("base: &b {x: 1}\nd:\n  <<: *b\n  z: 2\n").unwrap();
        assert_eq!(
            v.to_json().unwrap(),
            json!({"base": {"x": 1.0}, "d": {"x": 1.0, "z": 2.0}})
        );
        assert!(
            unmarshal("a: [")
                .unwrap_err()
                .starts_with("error converting YAML to JSON: yaml: line")
        );
        assert!(matches!(unmarshal("").unwrap(), Value::Nil));
    }

    #[test]
    fn the_first_document_is_read_as_a_stream_and_its_syntax_errors_win() {
        // A decoding error early and a syntax error later in the same document: yaml.v2 parses
        // the document before decoding it, so the syntax error is reported.
        let e = unmarshal("a:\n  <<: 1\nb: [\n").unwrap_err();
        assert!(e.contains("line"), "{e}");
        assert!(!e.contains("map merge"), "{e}");
        // Alone, the decoding error is reported.
        let e = unmarshal("a:\n  <<: 1\nb: 2\n").unwrap_err();
        assert!(e.contains("map merge requires map"), "{e}");
        // Comments are not values; later documents, even broken ones, are not read.
        let v = unmarshal("# c\na: 1 # c\n---\nb: [\n").unwrap();
        assert_eq!(v.to_json().unwrap(), json!({"a": 1.0}));
        assert!(matches!(unmarshal("---\n...\n").unwrap(), Value::Nil));
        assert!(matches!(
            unmarshal("# only a comment\n").unwrap(),
            Value::Nil
        ));
    }
}
