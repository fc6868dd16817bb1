//! Go's `fmt` formatting of template values: `fmt.Sprint`, `fmt.Sprintln`, `fmt.Sprintf`,
//! byte-for-byte as Go 1.19 prints them (`strconv`'s float formatting and quoting are
//! [`crate::gofmt`]'s, re-exported here).
//!
//! Values are Go's dynamic types of [`Value`]; a nil interface prints `<nil>`. (The template
//! engine prints a missing value at the top level of an action as `<no value>`; that is its own
//! business, not `fmt`'s.)

use std::fmt::Write as _;

pub use crate::gofmt::{
    append_quote, can_backquote, format_float, is_print, quote, quote_bytes, quote_rune,
    quote_to_ascii,
};

use super::value::{Elem, Value};
use crate::budget;
use crate::gofmt::append_float;

/// Go's `fmt.Sprint`: operands formatted with `%v`, a space between two operands when neither
/// is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut p = Printer::new();
    let mut prev_string = false;
    for (i, arg) in args.iter().enumerate() {
        let is_string = matches!(arg, Value::String(_) | Value::ByteString(_));
        if i > 0 && !is_string && !prev_string {
            p.buf.push(' ');
        }
        p.print_arg(arg, 'v');
        prev_string = is_string;
    }
    p.buf
}

/// Go's `fmt.Sprintln`: operands formatted with `%v`, always separated by a space, and a newline.
pub fn sprintln(args: &[Value]) -> String {
    let mut p = Printer::new();
    for (i, arg) in args.iter().enumerate() {
        if i > 0 {
            p.buf.push(' ');
        }
        p.print_arg(arg, 'v');
    }
    p.buf.push('\n');
    p.buf
}

/// Go's `fmt.Sprintf`.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut p = Printer::new();
    p.do_printf(format, args);
    p.buf
}

/// `%v` of one value, as `fmt.Sprint(v)` prints it.
pub fn format_value(v: &Value) -> String {
    let mut p = Printer::new();
    p.print_arg(v, 'v');
    p.buf
}

/// Appends `%v` of `v` to `out` (the template engine's output path, without an extra buffer).
pub fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::String(s) => out.push_str(s),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::Int64(i) => {
            let _ = write!(out, "{i}");
        }
        _ => {
            let mut p = Printer::new();
            p.buf = std::mem::take(out);
            p.base = p.buf.len();
            p.print_arg(v, 'v');
            *out = p.buf;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// fmt's printer

#[derive(Default, Clone, Copy)]
struct Flags {
    wid_present: bool,
    prec_present: bool,
    minus: bool,
    plus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    plus_v: bool,
    sharp_v: bool,
}

struct Printer {
    buf: String,
    f: Flags,
    wid: usize,
    prec: usize,
    /// Where this printer's text starts in `buf` (see [`Printer::over`]).
    base: usize,
    /// The render budget's `max_value_bytes`.
    limit: usize,
}

const LDIGITS: &[u8] = b"0123456789abcdefx";
const UDIGITS: &[u8] = b"0123456789ABCDEFX";

fn too_large(x: usize) -> bool {
    x > 1_000_000
}

fn parse_num(s: &[u8], start: usize, end: usize) -> (usize, bool, usize) {
    if start >= end {
        return (0, false, end);
    }
    let mut num = 0usize;
    let mut isnum = false;
    let mut i = start;
    while i < end && s[i].is_ascii_digit() {
        if too_large(num) {
            return (0, false, end);
        }
        num = num * 10 + (s[i] - b'0') as usize;
        isnum = true;
        i += 1;
    }
    (num, isnum, i)
}

/// Go's `parseArgNumber`: (index, width consumed, ok).
fn parse_arg_number(format: &[u8]) -> (isize, usize, bool) {
    if format.len() < 3 {
        return (0, 1, false);
    }
    for i in 1..format.len() {
        if format[i] == b']' {
            let (width, ok, newi) = parse_num(format, 1, i);
            if !ok || newi != i {
                return (0, i + 1, false);
            }
            return (width as isize - 1, i + 1, true);
        }
    }
    (0, 1, false)
}

fn int_from_arg(a: &[Value], arg_num: usize) -> (isize, bool, usize) {
    let mut new_arg_num = arg_num;
    let mut num = 0isize;
    let mut is_int = false;
    if arg_num < a.len() {
        match a[arg_num] {
            Value::Int(i) | Value::Int64(i) => {
                num = i as isize;
                is_int = true;
            }
            // Go's intFromArg takes any unsigned integer that fits an int.
            Value::Uint64(u) if isize::try_from(u).is_ok() => {
                num = u as isize;
                is_int = true;
            }
            Value::Uint8(u) => {
                num = isize::from(u);
                is_int = true;
            }
            _ => {}
        }
        new_arg_num = arg_num + 1;
        if num.unsigned_abs() > 1_000_000 {
            num = 0;
            is_int = false;
        }
    }
    (num, is_int, new_arg_num)
}

impl Printer {
    fn new() -> Self {
        Printer {
            buf: String::new(),
            f: Flags::default(),
            wid: 0,
            prec: 0,
            base: 0,
            limit: budget::current().max_value_bytes,
        }
    }

    /// Whether the text printed so far exceeds the render budget (recorded there, so that the
    /// render fails); printing stops early instead of expanding shared or huge values.
    fn over(&self) -> bool {
        let n = self.buf.len() - self.base;
        n > self.limit && budget::check_bytes(n).is_err()
    }

    fn write_padding(&mut self, n: usize) {
        let c = if self.f.zero { '0' } else { ' ' };
        for _ in 0..n {
            self.buf.push(c);
        }
    }

    fn pad(&mut self, s: &str) {
        if !self.f.wid_present || self.wid == 0 {
            self.buf.push_str(s);
            return;
        }
        let n = s.chars().count();
        let width = self.wid.saturating_sub(n);
        if !self.f.minus {
            self.write_padding(width);
            self.buf.push_str(s);
        } else {
            self.buf.push_str(s);
            self.write_padding(width);
        }
    }

    fn truncate<'a>(&self, s: &'a str) -> &'a str {
        if self.f.prec_present
            && let Some((i, _)) = s.char_indices().nth(self.prec)
        {
            return &s[..i];
        }
        s
    }

    fn fmt_s(&mut self, s: &str) {
        let s = self.truncate(s);
        self.pad(s);
    }

    fn fmt_bool(&mut self, b: bool, verb: char, v: &Value) {
        match verb {
            't' | 'v' => self.pad(if b { "true" } else { "false" }),
            _ => self.bad_verb(verb, v),
        }
    }

    fn fmt_integer(&mut self, u: u64, base: u32, signed: bool, verb: char, digits: &[u8]) {
        let negative = signed && (u as i64) < 0;
        let mut u = if negative {
            (u as i64).unsigned_abs()
        } else {
            u
        };
        let mut prec = 0usize;
        if self.f.prec_present {
            prec = self.prec;
            if prec == 0 && u == 0 {
                let old = self.f.zero;
                self.f.zero = false;
                self.write_padding(self.wid);
                self.f.zero = old;
                return;
            }
        } else if self.f.zero && self.f.wid_present {
            prec = self.wid;
            if negative || self.f.plus || self.f.space {
                prec = prec.saturating_sub(1);
            }
        }
        let mut buf: Vec<u8> = Vec::with_capacity(24);
        let b = base as u64;
        while u >= b {
            buf.push(digits[(u % b) as usize]);
            u /= b;
        }
        buf.push(digits[u as usize]);
        while prec > buf.len() {
            buf.push(b'0');
        }
        if self.f.sharp {
            match base {
                2 => {
                    buf.push(b'b');
                    buf.push(b'0');
                }
                8 if buf.last() != Some(&b'0') => buf.push(b'0'),
                16 => {
                    buf.push(digits[16]);
                    buf.push(b'0');
                }
                _ => {}
            }
        }
        if verb == 'O' {
            buf.push(b'o');
            buf.push(b'0');
        }
        if negative {
            buf.push(b'-');
        } else if self.f.plus {
            buf.push(b'+');
        } else if self.f.space {
            buf.push(b' ');
        }
        buf.reverse();
        let s = String::from_utf8(buf).unwrap_or_default();
        let old = self.f.zero;
        self.f.zero = false;
        self.pad(&s);
        self.f.zero = old;
    }

    fn fmt_unicode(&mut self, u: u64) {
        let mut s = String::from("U+");
        let mut hex = format!("{u:X}");
        let prec = if self.f.prec_present && self.prec > 4 {
            self.prec
        } else {
            4
        };
        while hex.len() < prec {
            hex.insert(0, '0');
        }
        s.push_str(&hex);
        if self.f.sharp
            && let Some(c) = char::from_u32(u as u32)
            && is_print(c)
        {
            s.push_str(" '");
            s.push(c);
            s.push('\'');
        }
        let old = self.f.zero;
        self.f.zero = false;
        self.pad(&s);
        self.f.zero = old;
    }

    fn fmt_c(&mut self, u: u64) {
        let c = if u > 0x10ffff {
            '\u{fffd}'
        } else {
            char::from_u32(u as u32).unwrap_or('\u{fffd}')
        };
        let mut b = [0u8; 4];
        let s = c.encode_utf8(&mut b);
        self.pad(s);
    }

    fn fmt_qc(&mut self, u: u64) {
        let c = if u > 0x10ffff {
            '\u{fffd}'
        } else {
            char::from_u32(u as u32).unwrap_or('\u{fffd}')
        };
        let q = quote_rune(c, self.f.plus);
        self.pad(&q);
    }

    fn fmt_int(&mut self, i: i64, verb: char, v: &Value) {
        let u = i as u64;
        match verb {
            'v' | 'd' => self.fmt_integer(u, 10, true, verb, LDIGITS),
            'b' => self.fmt_integer(u, 2, true, verb, LDIGITS),
            'o' | 'O' => self.fmt_integer(u, 8, true, verb, LDIGITS),
            'x' => self.fmt_integer(u, 16, true, verb, LDIGITS),
            'X' => self.fmt_integer(u, 16, true, verb, UDIGITS),
            'c' => self.fmt_c(u),
            'q' => self.fmt_qc(u),
            'U' => self.fmt_unicode(u),
            _ => self.bad_verb(verb, v),
        }
    }

    fn fmt_uint(&mut self, u: u64, verb: char, v: &Value) {
        match verb {
            'v' if self.f.sharp_v => {
                let old = self.f.sharp;
                self.f.sharp = true;
                self.fmt_integer(u, 16, false, 'v', LDIGITS);
                self.f.sharp = old;
            }
            'v' | 'd' => self.fmt_integer(u, 10, false, verb, LDIGITS),
            'b' => self.fmt_integer(u, 2, false, verb, LDIGITS),
            'o' | 'O' => self.fmt_integer(u, 8, false, verb, LDIGITS),
            'x' => self.fmt_integer(u, 16, false, verb, LDIGITS),
            'X' => self.fmt_integer(u, 16, false, verb, UDIGITS),
            'c' => self.fmt_c(u),
            'q' => self.fmt_qc(u),
            'U' => self.fmt_unicode(u),
            _ => self.bad_verb(verb, v),
        }
    }

    /// A string that is not valid UTF-8: `%x` and `%q` see its bytes; `%s` and `%v` write it
    /// with U+FFFD replacements (the output is text).
    fn fmt_byte_string(&mut self, b: &[u8], verb: char, v: &Value) {
        match verb {
            'x' => self.fmt_sbx(b, LDIGITS),
            'X' => self.fmt_sbx(b, UDIGITS),
            'q' => self.fmt_q_bytes(b),
            'v' if self.f.sharp_v => self.fmt_q_bytes(b),
            _ => self.fmt_string(&super::value::go_lossy(b), verb, v),
        }
    }

    fn fmt_q_bytes(&mut self, b: &[u8]) {
        let b = if self.f.prec_present {
            // Precision counts runes; each invalid byte is one (U+FFFD).
            let mut n = 0;
            let mut end = 0;
            for chunk in b.utf8_chunks() {
                for c in chunk.valid().chars() {
                    if n == self.prec {
                        break;
                    }
                    n += 1;
                    end += c.len_utf8();
                }
                for _ in chunk.invalid() {
                    if n == self.prec {
                        break;
                    }
                    n += 1;
                    end += 1;
                }
            }
            &b[..end]
        } else {
            b
        };
        let q = quote_bytes(b, self.f.plus);
        self.pad(&q);
    }

    /// A value with a `String()` method, which fmt uses for `%v %s %x %X %q`.
    fn fmt_stringer(&mut self, s: &str, verb: char, v: &Value) {
        match verb {
            'v' | 's' | 'x' | 'X' | 'q' => self.fmt_string(s, verb, v),
            _ => self.bad_verb(verb, v),
        }
    }

    fn fmt_uint8(&mut self, b: u8, verb: char) {
        let u = b as u64;
        match verb {
            'v' if self.f.sharp_v => {
                // fmt0x64(v, true)
                let old = self.f.sharp;
                self.f.sharp = true;
                self.fmt_integer(u, 16, false, 'v', LDIGITS);
                self.f.sharp = old;
            }
            'v' | 'd' => self.fmt_integer(u, 10, false, verb, LDIGITS),
            'b' => self.fmt_integer(u, 2, false, verb, LDIGITS),
            'o' | 'O' => self.fmt_integer(u, 8, false, verb, LDIGITS),
            'x' => self.fmt_integer(u, 16, false, verb, LDIGITS),
            'X' => self.fmt_integer(u, 16, false, verb, UDIGITS),
            'c' => self.fmt_c(u),
            'q' => self.fmt_qc(u),
            'U' => self.fmt_unicode(u),
            _ => {
                self.buf.push_str("%!");
                self.buf.push(verb);
                self.buf.push_str("(uint8=");
                self.fmt_integer(u, 10, false, 'v', LDIGITS);
                self.buf.push(')');
            }
        }
    }

    fn fmt_float_verb(&mut self, v: f64, verb: char, val: &Value) {
        match verb {
            'v' => self.fmt_float(v, 'g', -1),
            'b' | 'g' | 'G' | 'x' | 'X' => self.fmt_float(v, verb, -1),
            'f' | 'e' | 'E' | 'F' => self.fmt_float(v, verb, 6),
            _ => self.bad_verb(verb, val),
        }
    }

    fn fmt_float(&mut self, v: f64, verb: char, prec: i32) {
        let prec = if self.f.prec_present {
            self.prec as i32
        } else {
            prec
        };
        let sverb = if verb == 'F' { b'f' } else { verb as u8 };
        let mut num = String::with_capacity(24);
        num.push('+');
        append_float(&mut num, v, sverb, prec);
        let mut num: Vec<u8> = num.into_bytes();
        if num[1] == b'-' || num[1] == b'+' {
            num.remove(0);
        } else {
            num[0] = b'+';
        }
        if self.f.space && num[0] == b'+' && !self.f.plus {
            num[0] = b' ';
        }
        if num[1] == b'I' || num[1] == b'N' {
            let old = self.f.zero;
            self.f.zero = false;
            if num[1] == b'N' && !self.f.space && !self.f.plus {
                num.remove(0);
            }
            let s = String::from_utf8(num).unwrap_or_default();
            self.pad(&s);
            self.f.zero = old;
            return;
        }
        if self.f.sharp && verb != 'b' {
            let mut digits: i32 = 0;
            if matches!(verb, 'v' | 'g' | 'G' | 'x') {
                digits = prec;
                if digits == -1 {
                    digits = 6;
                }
            }
            let mut tail: Vec<u8> = Vec::new();
            let mut has_decimal_point = false;
            let mut saw_nonzero_digit = false;
            let mut i = 1;
            while i < num.len() {
                match num[i] {
                    b'.' => has_decimal_point = true,
                    b'p' | b'P' => {
                        tail.extend_from_slice(&num[i..]);
                        num.truncate(i);
                        break;
                    }
                    b'e' | b'E' if verb != 'x' && verb != 'X' => {
                        tail.extend_from_slice(&num[i..]);
                        num.truncate(i);
                        break;
                    }
                    c => {
                        if c != b'0' {
                            saw_nonzero_digit = true;
                        }
                        if saw_nonzero_digit {
                            digits -= 1;
                        }
                    }
                }
                i += 1;
            }
            if !has_decimal_point {
                if num.len() == 2 && num[1] == b'0' {
                    digits -= 1;
                }
                num.push(b'.');
            }
            while digits > 0 {
                num.push(b'0');
                digits -= 1;
            }
            num.extend_from_slice(&tail);
        }
        let s = String::from_utf8(num).unwrap_or_default();
        if self.f.plus || !s.starts_with('+') {
            if self.f.zero && self.f.wid_present && self.wid > s.len() {
                self.buf.push_str(&s[..1]);
                self.write_padding(self.wid - s.len());
                self.buf.push_str(&s[1..]);
                return;
            }
            self.pad(&s);
            return;
        }
        self.pad(&s[1..]);
    }

    fn fmt_q(&mut self, s: &str) {
        let s = self.truncate(s);
        if self.f.sharp && can_backquote(s) {
            let q = format!("`{s}`");
            self.pad(&q);
            return;
        }
        let q = if self.f.plus {
            quote_to_ascii(s)
        } else {
            quote(s)
        };
        self.pad(&q);
    }

    fn fmt_sbx(&mut self, b: &[u8], digits: &[u8]) {
        let mut length = b.len();
        if self.f.prec_present && self.prec < length {
            length = self.prec;
        }
        let mut width = 2 * length;
        if width > 0 {
            if self.f.space {
                if self.f.sharp {
                    width *= 2;
                }
                width += length - 1;
            } else if self.f.sharp {
                width += 2;
            }
        } else {
            if self.f.wid_present {
                self.write_padding(self.wid);
            }
            return;
        }
        if self.f.wid_present && self.wid > width && !self.f.minus {
            self.write_padding(self.wid - width);
        }
        if self.f.sharp {
            self.buf.push('0');
            self.buf.push(digits[16] as char);
        }
        for (i, &c) in b[..length].iter().enumerate() {
            if self.f.space && i > 0 {
                self.buf.push(' ');
                if self.f.sharp {
                    self.buf.push('0');
                    self.buf.push(digits[16] as char);
                }
            }
            self.buf.push(digits[(c >> 4) as usize] as char);
            self.buf.push(digits[(c & 0xf) as usize] as char);
        }
        if self.f.wid_present && self.wid > width && self.f.minus {
            self.write_padding(self.wid - width);
        }
    }

    fn fmt_string(&mut self, s: &str, verb: char, v: &Value) {
        match verb {
            'v' => {
                if self.f.sharp_v {
                    self.fmt_q(s)
                } else {
                    self.fmt_s(s)
                }
            }
            's' => self.fmt_s(s),
            'x' => self.fmt_sbx(s.as_bytes(), LDIGITS),
            'X' => self.fmt_sbx(s.as_bytes(), UDIGITS),
            'q' => self.fmt_q(s),
            _ => self.bad_verb(verb, v),
        }
    }

    fn fmt_bytes(&mut self, b: &[u8], verb: char) {
        match verb {
            'v' | 'd' => {
                if self.f.sharp_v {
                    self.buf.push_str("[]byte{");
                    for (i, &c) in b.iter().enumerate() {
                        if i > 0 {
                            self.buf.push_str(", ");
                        }
                        self.fmt_uint8(c, 'v');
                    }
                    self.buf.push('}');
                } else {
                    self.buf.push('[');
                    for (i, &c) in b.iter().enumerate() {
                        if i > 0 {
                            self.buf.push(' ');
                        }
                        self.fmt_integer(c as u64, 10, false, verb, LDIGITS);
                    }
                    self.buf.push(']');
                }
            }
            's' => {
                let s = String::from_utf8_lossy(b);
                self.fmt_s(&s);
            }
            'x' => self.fmt_sbx(b, LDIGITS),
            'X' => self.fmt_sbx(b, UDIGITS),
            'q' => {
                let s = String::from_utf8_lossy(b);
                self.fmt_q(&s);
            }
            _ => {
                // printValue of a []uint8.
                if self.f.sharp_v {
                    self.buf.push_str("[]uint8{");
                } else {
                    self.buf.push('[');
                }
                for (i, &c) in b.iter().enumerate() {
                    if i > 0 {
                        self.buf.push_str(if self.f.sharp_v { ", " } else { " " });
                    }
                    self.fmt_uint8(c, verb);
                }
                self.buf.push(if self.f.sharp_v { '}' } else { ']' });
            }
        }
    }

    fn bad_verb(&mut self, verb: char, v: &Value) {
        self.buf.push_str("%!");
        self.buf.push(verb);
        self.buf.push('(');
        match v {
            Value::Nil => self.buf.push_str("<nil>"),
            _ => {
                self.buf.push_str(v.type_name());
                self.buf.push('=');
                self.print_value(v, 'v', 0);
            }
        }
        self.buf.push(')');
    }

    /// `printArg`: a top-level operand.
    fn print_arg(&mut self, v: &Value, verb: char) {
        if let Value::Nil = v {
            match verb {
                'T' | 'v' => self.pad("<nil>"),
                _ => self.bad_verb(verb, v),
            }
            return;
        }
        if verb == 'T' {
            self.fmt_s(v.type_name());
            return;
        }
        if verb == 'p' {
            // Addresses are meaningless here; Go prints 0x... for maps and slices.
            match v {
                Value::List(_) | Value::Map(_) | Value::Bytes(_) | Value::Semver(_) => {
                    self.pad("0xc000010000");
                }
                _ => self.bad_verb(verb, v),
            }
            return;
        }
        self.print_value(v, verb, 0)
    }

    /// `printValue`: any value, `depth` > 0 inside collections (where a nil interface prints
    /// `<nil>` whatever the verb).
    fn print_value(&mut self, v: &Value, verb: char, depth: usize) {
        match v {
            Value::Nil => {
                if depth == 0 {
                    // printArg handles this; reached only from bad_verb.
                    self.buf.push_str("<nil>");
                } else if self.f.sharp_v {
                    self.buf.push_str("interface {}(nil)");
                } else {
                    self.buf.push_str("<nil>");
                }
            }
            Value::Bool(b) => self.fmt_bool(*b, verb, v),
            Value::Int(i) | Value::Int64(i) => self.fmt_int(*i, verb, v),
            Value::Uint64(u) => self.fmt_uint(*u, verb, v),
            Value::Uint8(u) => self.fmt_uint(u64::from(*u), verb, v),
            Value::Float(f) => self.fmt_float_verb(*f, verb, v),
            Value::String(s) => self.fmt_string(s, verb, v),
            Value::ByteString(b) => self.fmt_byte_string(b, verb, v),
            // Stringers: fmt calls String() for the string verbs.
            Value::Time(t) => self.fmt_stringer(&t.go_string(), verb, v),
            Value::Semver(ver) => self.fmt_stringer(&ver.to_string(), verb, v),
            Value::Bytes(b) => self.fmt_bytes(b, verb),
            Value::List(items) => {
                if self.f.sharp_v {
                    self.buf.push_str("[]interface {}{");
                    for (i, item) in items.iter().enumerate() {
                        if self.over() {
                            return;
                        }
                        if i > 0 {
                            self.buf.push_str(", ");
                        }
                        self.print_value(item, verb, depth + 1);
                    }
                    self.buf.push('}');
                } else {
                    self.buf.push('[');
                    for (i, item) in items.iter().enumerate() {
                        if self.over() {
                            return;
                        }
                        if i > 0 {
                            self.buf.push(' ');
                        }
                        self.print_value(item, verb, depth + 1);
                    }
                    self.buf.push(']');
                }
            }
            Value::Map(st) if matches!(st.elem, Elem::Struct(_)) => {
                // A Go struct (sprig's certificate): `{A B}`, `{F:A G:B}`, `T{F:"A", G:"B"}`.
                if self.f.sharp_v {
                    self.buf.push_str(st.type_name());
                }
                self.buf.push('{');
                for (i, (field, item)) in st.borrow().iter().enumerate() {
                    if self.over() {
                        return;
                    }
                    if i > 0 {
                        self.buf.push_str(if self.f.sharp_v { ", " } else { " " });
                    }
                    if self.f.plus_v || self.f.sharp_v {
                        self.buf.push_str(field);
                        self.buf.push(':');
                    }
                    self.print_value(item, verb, depth + 1);
                }
                self.buf.push('}');
            }
            Value::Map(m) => {
                let m = m.borrow();
                if self.f.sharp_v {
                    self.buf.push_str("map[string]interface {}{");
                } else {
                    self.buf.push_str("map[");
                }
                for (i, (k, item)) in m.iter().enumerate() {
                    if self.over() {
                        return;
                    }
                    if i > 0 {
                        self.buf.push_str(if self.f.sharp_v { ", " } else { " " });
                    }
                    self.fmt_string(k, verb, &Value::String(k.as_str().into()));
                    self.buf.push(':');
                    self.print_value(item, verb, depth + 1);
                }
                self.buf.push(if self.f.sharp_v { '}' } else { ']' });
            }
        }
    }

    fn do_printf(&mut self, format: &str, a: &[Value]) {
        let fb = format.as_bytes();
        let end = fb.len();
        let mut arg_num = 0usize;
        let mut after_index;
        let mut reordered = false;
        let mut i = 0usize;
        'format_loop: while i < end {
            if self.over() {
                return;
            }
            let mut good_arg_num = true;
            let lasti = i;
            while i < end && fb[i] != b'%' {
                i += 1;
            }
            if i > lasti {
                self.buf.push_str(&format[lasti..i]);
            }
            if i >= end {
                break;
            }
            i += 1;
            self.f = Flags::default();
            self.wid = 0;
            self.prec = 0;
            'simple: while i < end {
                let c = fb[i];
                match c {
                    b'#' => self.f.sharp = true,
                    b'0' => self.f.zero = !self.f.minus,
                    b'+' => self.f.plus = true,
                    b'-' => {
                        self.f.minus = true;
                        self.f.zero = false;
                    }
                    b' ' => self.f.space = true,
                    _ => {
                        if c.is_ascii_lowercase() && arg_num < a.len() {
                            if c == b'v' {
                                self.f.sharp_v = self.f.sharp;
                                self.f.sharp = false;
                                self.f.plus_v = self.f.plus;
                                self.f.plus = false;
                            }
                            self.print_arg(&a[arg_num], c as char);
                            arg_num += 1;
                            i += 1;
                            continue 'format_loop;
                        }
                        break 'simple;
                    }
                }
                i += 1;
            }

            // Argument index?
            let r = self.arg_number(arg_num, fb, i, a.len(), &mut good_arg_num, &mut reordered);
            arg_num = r.0;
            i = r.1;
            after_index = r.2;

            // Width.
            if i < end && fb[i] == b'*' {
                i += 1;
                let (w, ok, n) = int_from_arg(a, arg_num);
                arg_num = n;
                self.f.wid_present = ok;
                if !ok {
                    self.buf.push_str("%!(BADWIDTH)");
                }
                if w < 0 {
                    self.wid = w.unsigned_abs();
                    self.f.minus = true;
                    self.f.zero = false;
                } else {
                    self.wid = w as usize;
                }
                after_index = false;
            } else {
                let (w, ok, n) = parse_num(fb, i, end);
                self.wid = w;
                self.f.wid_present = ok;
                i = n;
                if after_index && ok {
                    good_arg_num = false;
                }
            }

            // Precision.
            if i + 1 < end && fb[i] == b'.' {
                i += 1;
                if after_index {
                    good_arg_num = false;
                }
                let r = self.arg_number(arg_num, fb, i, a.len(), &mut good_arg_num, &mut reordered);
                arg_num = r.0;
                i = r.1;
                after_index = r.2;
                if i < end && fb[i] == b'*' {
                    i += 1;
                    let (p, ok, n) = int_from_arg(a, arg_num);
                    arg_num = n;
                    self.f.prec_present = ok;
                    if p < 0 {
                        self.prec = 0;
                        self.f.prec_present = false;
                    } else {
                        self.prec = p as usize;
                    }
                    if !self.f.prec_present {
                        self.buf.push_str("%!(BADPREC)");
                    }
                    after_index = false;
                } else {
                    let (p, ok, n) = parse_num(fb, i, end);
                    self.prec = p;
                    self.f.prec_present = ok;
                    i = n;
                    if !ok {
                        self.prec = 0;
                        self.f.prec_present = true;
                    }
                }
            }

            if !after_index {
                let r = self.arg_number(arg_num, fb, i, a.len(), &mut good_arg_num, &mut reordered);
                arg_num = r.0;
                i = r.1;
            }

            if i >= end {
                self.buf.push_str("%!(NOVERB)");
                break;
            }

            let verb = format[i..].chars().next().unwrap_or('?');
            i += verb.len_utf8();

            if verb == '%' {
                self.buf.push('%');
            } else if !good_arg_num {
                self.buf.push_str("%!");
                self.buf.push(verb);
                self.buf.push_str("(BADINDEX)");
            } else if arg_num >= a.len() {
                self.buf.push_str("%!");
                self.buf.push(verb);
                self.buf.push_str("(MISSING)");
            } else {
                if verb == 'v' {
                    self.f.sharp_v = self.f.sharp;
                    self.f.sharp = false;
                    self.f.plus_v = self.f.plus;
                    self.f.plus = false;
                }
                self.print_arg(&a[arg_num], verb);
                arg_num += 1;
            }
        }

        if !reordered && arg_num < a.len() {
            self.f = Flags::default();
            self.wid = 0;
            self.prec = 0;
            self.buf.push_str("%!(EXTRA ");
            for (i, arg) in a[arg_num..].iter().enumerate() {
                if i > 0 {
                    self.buf.push_str(", ");
                }
                if let Value::Nil = arg {
                    self.buf.push_str("<nil>");
                } else {
                    self.buf.push_str(arg.type_name());
                    self.buf.push('=');
                    self.print_arg(arg, 'v');
                }
            }
            self.buf.push(')');
        }
    }

    fn arg_number(
        &mut self,
        arg_num: usize,
        format: &[u8],
        i: usize,
        num_args: usize,
        good_arg_num: &mut bool,
        reordered: &mut bool,
    ) -> (usize, usize, bool) {
        if format.len() <= i || format[i] != b'[' {
            return (arg_num, i, false);
        }
        *reordered = true;
        let (index, wid, ok) = parse_arg_number(&format[i..]);
        if ok && 0 <= index && (index as usize) < num_args {
            return (index as usize, i + wid, true);
        }
        *good_arg_num = false;
        (arg_num, i + wid, ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn s(x: &str) -> Value {
        Value::string(x)
    }

    #[test]
    fn floats_print_like_go() {
        let cases = [
            (1e6, "1e+06"),
            (100000.0, "100000"),
            (0.1, "0.1"),
            (1234567.0, "1.234567e+06"),
            (123456.7, "123456.7"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e21, "1e+21"),
            (1e100, "1e+100"),
            (-0.0, "-0"),
            (0.0, "0"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
            (3.0, "3"),
            (2.5, "2.5"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ];
        for (f, want) in cases {
            assert_eq!(format_value(&Value::Float(f)), want, "{f}");
        }
    }

    #[test]
    fn strconv_formats() {
        assert_eq!(format_float(1.5, b'e', -1), "1.5e+00");
        assert_eq!(format_float(1.0, b'x', -1), "0x1p+00");
        assert_eq!(format_float(3.0, b'x', -1), "0x1.8p+01");
        assert_eq!(format_float(1.0, b'b', -1), "4503599627370496p-52");
        assert_eq!(format_float(123456.0, b'g', 3), "1.23e+05");
        assert_eq!(format_float(1.0, b'g', 3), "1");
        assert_eq!(format_float(0.000012345, b'g', 2), "1.2e-05");
        assert_eq!(format_float(100.0, b'g', 3), "100");
        assert_eq!(format_float(1000.0, b'g', 3), "1e+03");
        assert_eq!(format_float(0.125, b'f', 2), "0.12");
        assert_eq!(format_float(1e23, b'f', -1), "100000000000000000000000");
        assert_eq!(format_float(0.0, b'e', 2), "0.00e+00");
    }

    #[test]
    fn collections_print_like_go() {
        let mut m = BTreeMap::new();
        m.insert("b".to_string(), Value::list(vec![s("x"), s("y")]));
        m.insert("a".to_string(), Value::Float(1.0));
        m.insert("c".to_string(), Value::Nil);
        let m = Value::map(m);
        assert_eq!(format_value(&m), "map[a:1 b:[x y] c:<nil>]");
        assert_eq!(format_value(&Value::list(vec![Value::Nil])), "[<nil>]");
        assert_eq!(format_value(&Value::Nil), "<nil>");
        assert_eq!(
            format_value(&Value::Bytes(b"hi".as_slice().into())),
            "[104 105]"
        );
        assert_eq!(
            sprintf("%#v", &[m]),
            "map[string]interface {}{\"a\":1, \"b\":[]interface {}{\"x\", \"y\"}, \"c\":interface {}(nil)}"
        );
    }

    #[test]
    fn sprint_spacing() {
        assert_eq!(sprint(&[Value::Int(1), Value::Int(2)]), "1 2");
        assert_eq!(sprint(&[s("a"), Value::Int(1), s("b")]), "a1b");
        assert_eq!(sprint(&[s("a"), s("b")]), "ab");
        assert_eq!(sprint(&[Value::Int(1), Value::Nil]), "1 <nil>");
        assert_eq!(sprintln(&[s("a"), s("b")]), "a b\n");
        assert_eq!(sprint(&[]), "");
    }

    #[test]
    fn printf_verbs() {
        let f = |fmt: &str, args: &[Value]| sprintf(fmt, args);
        assert_eq!(
            f(
                "%5.2f|%-4d|%q|%x",
                &[
                    Value::Float(3.14169),
                    Value::Int(7),
                    s("hi\n"),
                    Value::Int(255)
                ]
            ),
            " 3.14|7   |\"hi\\n\"|ff"
        );
        assert_eq!(f("%d", &[s("x")]), "%!d(string=x)");
        assert_eq!(f("%5d", &[s("x")]), "%!d(string=    x)");
        assert_eq!(f("%d %d", &[Value::Int(1)]), "1 %!d(MISSING)");
        assert_eq!(
            f("%d", &[Value::Int(1), s("a"), Value::Nil]),
            "1%!(EXTRA string=a, <nil>)"
        );
        assert_eq!(f("%v", &[]), "%!v(MISSING)");
        assert_eq!(f("100%%", &[]), "100%");
        assert_eq!(f("%s", &[Value::Nil]), "%!s(<nil>)");
        assert_eq!(f("%v", &[Value::Nil]), "<nil>");
        assert_eq!(f("%t", &[Value::Bool(true)]), "true");
        assert_eq!(
            f("%T %T %T", &[Value::Int(1), Value::Float(1.0), Value::Nil]),
            "int float64 <nil>"
        );
        assert_eq!(f("%T", &[Value::empty_map()]), "map[string]interface {}");
        assert_eq!(f("%08.3f", &[Value::Float(-3.14169)]), "-003.142");
        assert_eq!(f("%+d % d", &[Value::Int(5), Value::Int(5)]), "+5  5");
        assert_eq!(
            f(
                "%#x %#o %#b %X",
                &[
                    Value::Int(255),
                    Value::Int(8),
                    Value::Int(5),
                    Value::Int(255)
                ]
            ),
            "0xff 010 0b101 FF"
        );
        assert_eq!(
            f(
                "%05d|%-05d|%.3d",
                &[Value::Int(-42), Value::Int(42), Value::Int(7)]
            ),
            "-0042|42   |007"
        );
        assert_eq!(
            f("%c%c", &[Value::Int(72), Value::Int(0x4e16)]),
            "H\u{4e16}"
        );
        assert_eq!(f("%q", &[Value::Int(97)]), "'a'");
        assert_eq!(f("%U", &[Value::Int(0x1F600)]), "U+1F600");
        assert_eq!(
            f(
                "%e %E %g",
                &[
                    Value::Float(1234.5678),
                    Value::Float(1234.5678),
                    Value::Float(1234.5678)
                ]
            ),
            "1.234568e+03 1.234568E+03 1234.5678"
        );
        assert_eq!(
            f("%.2s|%5s|%-5s|", &[s("hello"), s("ab"), s("ab")]),
            "he|   ab|ab   |"
        );
        assert_eq!(f("%x %X", &[s("hi"), s("hi")]), "6869 6869");
        assert_eq!(
            f("%d", &[Value::list(vec![Value::Int(1), s("a")])]),
            "[1 %!d(string=a)]"
        );
        assert_eq!(f("%s", &[Value::list(vec![s("a"), s("b")])]), "[a b]");
        assert_eq!(f("%v", &[Value::Float(1e6)]), "1e+06");
        assert_eq!(f("%f", &[Value::Float(1e6)]), "1000000.000000");
        assert_eq!(f("%d", &[Value::Float(1.0)]), "%!d(float64=1)");
        assert_eq!(f("%s", &[Value::Int(1)]), "%!s(int=1)");
        assert_eq!(f("%[2]d %[1]d", &[Value::Int(1), Value::Int(2)]), "2 1");
        assert_eq!(f("%[3]d", &[Value::Int(1)]), "%!d(BADINDEX)");
        assert_eq!(f("%*d", &[Value::Int(4), Value::Int(1)]), "   1");
        assert_eq!(f("%", &[]), "%!(NOVERB)");
        assert_eq!(f("%!", &[]), "%!!(MISSING)");
        assert_eq!(f("%z", &[Value::Int(1)]), "%!z(int=1)");
        assert_eq!(f("%#v %+v", &[s("a"), Value::Int(1)]), "\"a\" 1");
        assert_eq!(
            f(
                "%#g %#.3g %#.0f",
                &[Value::Float(1.0), Value::Float(1.0), Value::Float(3.0)]
            ),
            "1.00000 1.00 3."
        );
        assert_eq!(
            f(
                "%6.2f|%-8.3e|",
                &[Value::Float(f64::INFINITY), Value::Float(1.0)]
            ),
            "  +Inf|1.000e+00|"
        );
        assert_eq!(f("%06.2f", &[Value::Float(f64::NAN)]), "   NaN");
        assert_eq!(f("%05s", &[s("ab")]), "000ab");
        assert_eq!(f("%q", &[s("\u{7f}é\u{200b}")]), "\"\\x7fé\\u200b\"");
        assert_eq!(f("%+q", &[s("é")]), "\"\\u00e9\"");
        assert_eq!(f("%#q", &[s("a\"b")]), "`a\"b`");
        assert_eq!(f("%.0d|%5.0d|", &[Value::Int(0), Value::Int(0)]), "|     |");
    }
}
