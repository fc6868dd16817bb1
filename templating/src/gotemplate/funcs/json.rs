//! Go's `encoding/json` for template values: `Marshal` (HTML-escaping), the `Encoder` without
//! HTML escaping, `MarshalIndent`, and `Unmarshal` into `interface{}` with Go's error messages.

use std::collections::BTreeMap;

use super::super::value::Value;
use crate::gofmt::format_float;
use crate::gofmt::quote;

/// `json.Marshal(v)` (`html == true`) or an `Encoder` with `SetEscapeHTML(false)` (without the
/// trailing newline).
pub fn encode(v: &Value, html: bool) -> Result<String, String> {
    let mut out = String::new();
    write(&mut out, v, html)?;
    Ok(out)
}

/// `json.MarshalIndent(v, "", indent)`.
pub fn encode_indent(v: &Value, indent: &str) -> Result<String, String> {
    let mut out = String::new();
    write_indent(&mut out, v, indent, 0)?;
    Ok(out)
}

fn write(out: &mut String, v: &Value, html: bool) -> Result<(), String> {
    match v {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::Int64(i) => out.push_str(&i.to_string()),
        Value::Uint64(u) => out.push_str(&u.to_string()),
        Value::Uint8(u) => out.push_str(&u.to_string()),
        Value::Float(f) => out.push_str(&float(*f)?),
        Value::String(s) => write_string(out, s, html),
        // Invalid UTF-8 bytes are written as U+FFFD.
        Value::ByteString(b) => write_byte_string(out, b, html),
        Value::Time(t) => {
            let text = t
                .marshal_json()
                .map_err(|e| format!("json: error calling MarshalJSON for type time.Time: {e}"))?;
            write_string(out, &text, html);
        }
        Value::Semver(v) => write_string(out, &v.to_string(), html),
        Value::Bytes(b) => {
            use base64::Engine as _;
            out.push('"');
            out.push_str(&base64::engine::general_purpose::STANDARD.encode(b));
            out.push('"');
        }
        Value::List(items) => {
            // Shared lists and maps are written each time they occur: bounded by the budget.
            crate::budget::check_bytes(out.len()).map_err(|e| e.to_string())?;
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(out, x, html)?;
            }
            out.push(']');
        }
        Value::Map(m) => {
            crate::budget::check_bytes(out.len()).map_err(|e| e.to_string())?;
            out.push('{');
            for (i, (k, x)) in m.borrow().iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k, html);
                out.push(':');
                write(out, x, html)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn newline(out: &mut String, indent: &str, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str(indent);
    }
}

fn write_indent(out: &mut String, v: &Value, indent: &str, depth: usize) -> Result<(), String> {
    if matches!(v, Value::List(_) | Value::Map(_)) {
        crate::budget::check_bytes(out.len()).map_err(|e| e.to_string())?;
    }
    match v {
        Value::List(items) if !items.is_empty() => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_indent(out, x, indent, depth + 1)?;
            }
            newline(out, indent, depth);
            out.push(']');
        }
        Value::Map(m) if !m.borrow().is_empty() => {
            out.push('{');
            for (i, (k, x)) in m.borrow().iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_string(out, k, true);
                out.push_str(": ");
                write_indent(out, x, indent, depth + 1)?;
            }
            newline(out, indent, depth);
            out.push('}');
        }
        other => write(out, other, true)?,
    }
    Ok(())
}

/// encoding/json's float format: shortest digits, `%e` below 1e-6 and from 1e21 on, with the
/// exponent's leading zero dropped (`1e-07`).
pub fn float(f: f64) -> Result<String, String> {
    if !f.is_finite() {
        return Err(format!(
            "json: unsupported value: {}",
            format_float(f, b'g', -1)
        ));
    }
    Ok(crate::gofmt::json_float(f))
}

pub fn write_string(out: &mut String, s: &str, html: bool) {
    out.push('"');
    write_string_content(out, s, html);
    out.push('"');
}

fn write_string_content(out: &mut String, s: &str, html: bool) {
    const HEX: &[u8] = b"0123456789abcdef";
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' if html => {
                out.push_str("\\u00");
                out.push(HEX[(c as usize) >> 4] as char);
                out.push(HEX[(c as usize) & 0xF] as char);
            }
            c if (c as u32) < 0x20 => {
                out.push_str("\\u00");
                out.push(HEX[(c as usize) >> 4] as char);
                out.push(HEX[(c as usize) & 0xF] as char);
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
}

/// A Go string that is not valid UTF-8: encoding/json writes each invalid byte as `\ufffd`.
fn write_byte_string(out: &mut String, b: &[u8], html: bool) {
    out.push('"');
    for chunk in b.utf8_chunks() {
        write_string_content(out, chunk.valid(), html);
        for _ in chunk.invalid() {
            out.push_str("\\ufffd");
        }
    }
    out.push('"');
}

/// Go's `quoteChar` for scanner messages.
fn quote_char(c: char) -> String {
    match c {
        '\'' => "'\\''".into(),
        '"' => "'\"'".into(),
        c => {
            let q = quote(&c.to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

/// What a JSON text decodes to before Go assigns it to a typed target: the value's JSON kind
/// decides the `cannot unmarshal X into Go value of type T` message.
pub fn kind_word(v: &Value) -> &'static str {
    match v {
        Value::Nil => "null",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::Int64(_) | Value::Uint64(_) | Value::Uint8(_) | Value::Float(_) => {
            "number"
        }
        Value::String(_) | Value::ByteString(_) | Value::Time(_) | Value::Semver(_) => "string",
        Value::List(_) | Value::Bytes(_) => "array",
        Value::Map(_) => "object",
    }
}

/// `json.Unmarshal(data, &v)` with `v interface{}`: numbers become float64.
pub fn decode(data: &str) -> Result<Value, String> {
    match decode_partial(data) {
        (v, None) => Ok(v.unwrap_or(Value::Nil)),
        (_, Some(e)) => Err(e),
    }
}

/// Like [`decode`], but also returns what Go leaves in the target when a value does not fit
/// (it keeps decoding after a type error, e.g. a number out of float64 range becomes nil).
/// A syntax error leaves nothing.
pub fn decode_partial(data: &str) -> (Option<Value>, Option<String>) {
    let mut p = Parser {
        s: data.as_bytes(),
        text: data,
        i: 0,
        value_err: None,
    };
    // Go validates the whole input first, so syntax errors win over value errors.
    p.skip_ws();
    let v = match p.value() {
        Ok(v) => v,
        Err(e) => return (None, Some(e)),
    };
    p.skip_ws();
    if p.i < p.s.len() {
        return (None, Some(p.err_at("after top-level value")));
    }
    (Some(v), p.value_err)
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
    value_err: Option<String>,
}

type Decoded = Value;

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn char_at(&self) -> char {
        self.text[self.i..].chars().next().unwrap_or('\0')
    }

    fn err_at(&self, context: &str) -> String {
        if self.i >= self.s.len() {
            return "unexpected end of JSON input".into();
        }
        format!("invalid character {} {context}", quote_char(self.char_at()))
    }

    /// At the end of the input Go's scanner steps a space: states that reject a space report
    /// it instead of `unexpected end of JSON input`.
    fn eof_in(&self, context: &str) -> String {
        format!("invalid character ' ' {context}")
    }

    /// Parses one value; the outer `Result` is a syntax error, the inner one a value error
    /// (reported only if the syntax is fine).
    fn value(&mut self) -> Result<Decoded, String> {
        if self.i >= self.s.len() {
            return Err("unexpected end of JSON input".into());
        }
        match self.s[self.i] {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => Ok(Value::string(self.string()?)),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal("true", Value::Bool(true)),
            b'f' => self.literal("false", Value::Bool(false)),
            b'n' => self.literal("null", Value::Nil),
            _ => Err(self.err_at("looking for beginning of value")),
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Decoded, String> {
        for (k, expected) in word.bytes().enumerate() {
            if self.i >= self.s.len() {
                return Err(self.eof_in(&format!(
                    "in literal {word} (expecting {})",
                    quote_char(expected as char)
                )));
            }
            if self.s[self.i] != expected {
                return Err(self.err_at(&format!(
                    "in literal {word} (expecting {})",
                    quote_char(expected as char)
                )));
            }
            let _ = k;
            self.i += 1;
        }
        Ok(v)
    }

    fn number(&mut self) -> Result<Decoded, String> {
        let start = self.i;
        if self.s[self.i] == b'-' {
            self.i += 1;
            if self.i >= self.s.len() {
                return Err(self.eof_in("in numeric literal"));
            }
            if !self.s[self.i].is_ascii_digit() {
                return Err(self.err_at("in numeric literal"));
            }
        }
        if self.s[self.i] == b'0' {
            self.i += 1;
        } else {
            while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                self.i += 1;
            }
        }
        if self.i < self.s.len() && self.s[self.i] == b'.' {
            self.i += 1;
            if self.i >= self.s.len() {
                return Err(self.eof_in("after decimal point in numeric literal"));
            }
            if !self.s[self.i].is_ascii_digit() {
                return Err(self.err_at("after decimal point in numeric literal"));
            }
            while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                self.i += 1;
            }
        }
        if self.i < self.s.len() && matches!(self.s[self.i], b'e' | b'E') {
            self.i += 1;
            if self.i < self.s.len() && matches!(self.s[self.i], b'+' | b'-') {
                self.i += 1;
            }
            if self.i >= self.s.len() {
                return Err(self.eof_in("in exponent of numeric literal"));
            }
            if !self.s[self.i].is_ascii_digit() {
                return Err(self.err_at("in exponent of numeric literal"));
            }
            while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                self.i += 1;
            }
        }
        let text = &self.text[start..self.i];
        Ok(match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Value::Float(f),
            _ => {
                self.value_err.get_or_insert(format!(
                    "json: cannot unmarshal number {text} into Go value of type float64"
                ));
                Value::Nil
            }
        })
    }

    fn string(&mut self) -> Result<String, String> {
        self.i += 1; // opening quote
        let mut out = String::new();
        loop {
            if self.i >= self.s.len() {
                return Err("unexpected end of JSON input".into());
            }
            let c = self.s[self.i];
            match c {
                b'"' => {
                    self.i += 1;
                    return Ok(out);
                }
                b'\\' => {
                    self.i += 1;
                    if self.i >= self.s.len() {
                        return Err(self.eof_in("in string escape code"));
                    }
                    let e = self.s[self.i];
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            if (0xD800..0xDC00).contains(&hi)
                                && self.s.get(self.i) == Some(&b'\\')
                                && self.s.get(self.i + 1) == Some(&b'u')
                            {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4()?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                                    out.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                                } else {
                                    out.push('\u{FFFD}');
                                    self.i = save;
                                }
                            } else {
                                out.push(char::from_u32(hi).unwrap_or('\u{FFFD}'));
                            }
                        }
                        _ => {
                            self.i -= 1;
                            return Err(self.err_at("in string escape code"));
                        }
                    }
                }
                c if c < 0x20 => return Err(self.err_at("in string literal")),
                _ => {
                    let ch = self.char_at();
                    out.push(ch);
                    self.i += ch.len_utf8();
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let mut v = 0;
        for _ in 0..4 {
            if self.i >= self.s.len() {
                return Err(self.eof_in("in \\u hexadecimal character escape"));
            }
            let d = (self.s[self.i] as char)
                .to_digit(16)
                .ok_or_else(|| self.err_at("in \\u hexadecimal character escape"))?;
            v = v * 16 + d;
            self.i += 1;
        }
        Ok(v)
    }

    fn object(&mut self) -> Result<Decoded, String> {
        self.i += 1;
        let mut map = BTreeMap::new();
        self.skip_ws();
        if self.s.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Value::map(map));
        }
        loop {
            self.skip_ws();
            if self.i >= self.s.len() {
                return Err("unexpected end of JSON input".into());
            }
            if self.s[self.i] != b'"' {
                return Err(self.err_at("looking for beginning of object key string"));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.i >= self.s.len() {
                return Err("unexpected end of JSON input".into());
            }
            if self.s[self.i] != b':' {
                return Err(self.err_at("after object key"));
            }
            self.i += 1;
            self.skip_ws();
            let v = self.value()?;
            map.insert(key, v);
            self.skip_ws();
            if self.i >= self.s.len() {
                return Err("unexpected end of JSON input".into());
            }
            match self.s[self.i] {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Ok(Value::map(map));
                }
                _ => return Err(self.err_at("after object key:value pair")),
            }
        }
    }

    fn array(&mut self) -> Result<Decoded, String> {
        self.i += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.s.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(Value::list(items));
        }
        loop {
            self.skip_ws();
            let v = self.value()?;
            items.push(v);
            self.skip_ws();
            if self.i >= self.s.len() {
                return Err("unexpected end of JSON input".into());
            }
            match self.s[self.i] {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Ok(Value::list(items));
                }
                _ => return Err(self.err_at("after array element")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec_err(s: &str) -> String {
        decode(s).unwrap_err()
    }

    #[test]
    fn encodes_like_go() {
        let v = decode(r#"{"b":[1,2.5,1e6,1e21,1e-7,null,true],"a":"<x>&\u2028"}"#).unwrap();
        assert_eq!(
            encode(&v, true).unwrap(),
            r#"{"a":"\u003cx\u003e\u0026\u2028","b":[1,2.5,1000000,1e+21,1e-7,null,true]}"#
        );
        assert_eq!(
            encode(&v, false).unwrap(),
            r#"{"a":"<x>&\u2028","b":[1,2.5,1000000,1e+21,1e-7,null,true]}"#
        );
        assert_eq!(
            encode(&Value::Float(f64::INFINITY), true).unwrap_err(),
            "json: unsupported value: +Inf"
        );
    }

    #[test]
    fn indents_like_go() {
        let v = decode(r#"{"a":[],"b":{},"c":[1,{"d":2}]}"#).unwrap();
        assert_eq!(
            encode_indent(&v, "  ").unwrap(),
            "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n      \"d\": 2\n    }\n  ]\n}"
        );
    }

    #[test]
    fn decode_errors_like_go() {
        assert_eq!(dec_err(""), "unexpected end of JSON input");
        assert_eq!(dec_err("{"), "unexpected end of JSON input");
        assert_eq!(
            dec_err("x"),
            "invalid character 'x' looking for beginning of value"
        );
        assert_eq!(
            dec_err("{a"),
            "invalid character 'a' looking for beginning of object key string"
        );
        assert_eq!(
            dec_err(r#"{"a" 1}"#),
            "invalid character '1' after object key"
        );
        assert_eq!(
            dec_err(r#"{"a":1 2}"#),
            "invalid character '2' after object key:value pair"
        );
        assert_eq!(
            dec_err("[1 2]"),
            "invalid character '2' after array element"
        );
        assert_eq!(
            dec_err("1 2"),
            "invalid character '2' after top-level value"
        );
        assert_eq!(
            dec_err("tru"),
            "invalid character ' ' in literal true (expecting 'e')"
        );
        assert_eq!(
            dec_err("trx"),
            "invalid character 'x' in literal true (expecting 'u')"
        );
        assert_eq!(dec_err("-x"), "invalid character 'x' in numeric literal");
        assert_eq!(
            dec_err("1e400"),
            "json: cannot unmarshal number 1e400 into Go value of type float64"
        );
        assert_eq!(
            dec_err("\"a\nb\""),
            "invalid character '\\n' in string literal"
        );
    }
}
