//! The pieces of Go's `fmt`, `strconv` and `encoding/json` both template engines share:
//! `strconv.FormatFloat`, `strconv.Quote` and its relatives, `encoding/json`'s float output, and
//! `fmt.Sprintf` for scalar arguments (spiff's `format`; the printer itself is
//! [`crate::gotemplate::print`]'s).

use std::fmt::Write as _;

use crate::gotemplate::Value as GoValue;

/// Go's `strconv.FormatFloat(f, fmt, prec, 64)` for `fmt` in `b e E f g G x X`.
pub fn format_float(f: f64, fmt: u8, prec: i32) -> String {
    let mut s = String::new();
    append_float(&mut s, f, fmt, prec);
    s
}

/// Appends Go's `strconv.Quote` of `s` to `out`.
pub fn append_quote(out: &mut String, s: &str) {
    append_quoted(out, s, '"', false);
}

/// Go's `strconv.Quote`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    append_quoted(&mut out, s, '"', false);
    out
}

/// Go's `strconv.Quote` (`ascii`: `QuoteToASCII`) of a string's bytes: bytes that are not
/// valid UTF-8 are written as `\xNN`.
pub fn quote_bytes(b: &[u8], ascii: bool) -> String {
    let mut out = String::with_capacity(b.len() + 2);
    out.push('"');
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            append_escaped_rune(&mut out, c, '"', ascii);
        }
        for byte in chunk.invalid() {
            let _ = write!(out, "\\x{byte:02x}");
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.QuoteToASCII`.
pub fn quote_to_ascii(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    append_quoted(&mut out, s, '"', true);
    out
}

/// Go's `strconv.QuoteRune` (`ascii`: `QuoteRuneToASCII`).
pub fn quote_rune(r: char, ascii: bool) -> String {
    let mut out = String::new();
    out.push('\'');
    append_escaped_rune(&mut out, r, '\'', ascii);
    out.push('\'');
    out
}

/// Go's `strconv.IsPrint`, approximated without Unicode tables: control, format, separator
/// (except U+0020), private-use, surrogate and non-character code points are not printable.
pub fn is_print(c: char) -> bool {
    let u = c as u32;
    if u < 0x80 {
        return (0x20..0x7f).contains(&u);
    }
    if u < 0xa0 {
        return false;
    }
    !matches!(u,
        0x00a0 | 0x00ad | 0x0600..=0x0605 | 0x061c | 0x06dd | 0x070f | 0x0890..=0x0891 | 0x08e2
        | 0x1680 | 0x180e | 0x2000..=0x200f | 0x2028..=0x202f | 0x205f..=0x2064
        | 0x2066..=0x206f | 0x3000 | 0xd800..=0xf8ff | 0xfdd0..=0xfdef | 0xfeff
        | 0xfff0..=0xfffb | 0xfffe..=0xffff | 0x110bd | 0x110cd | 0x13430..=0x1343f
        | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a | 0xe0000..=0xe0fff | 0xf0000..=0x10ffff)
        && (u & 0xfffe) != 0xfffe
}

/// Go's `strconv.CanBackquote`.
pub fn can_backquote(s: &str) -> bool {
    s.chars().all(|c| {
        c != '`' && c != '\u{feff}' && c != '\u{fffd}' && (c == '\t' || !(c < ' ' || c == '\x7f'))
    })
}

fn append_quoted(out: &mut String, s: &str, quote: char, ascii: bool) {
    out.push(quote);
    for c in s.chars() {
        append_escaped_rune(out, c, quote, ascii);
    }
    out.push(quote);
}

fn append_escaped_rune(out: &mut String, c: char, quote: char, ascii: bool) {
    if c == quote || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    if ascii {
        if (c as u32) < 0x80 && is_print(c) {
            out.push(c);
            return;
        }
    } else if is_print(c) {
        out.push(c);
        return;
    }
    match c {
        '\x07' => out.push_str("\\a"),
        '\x08' => out.push_str("\\b"),
        '\x0c' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\x0b' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c == '\x7f' => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if (c as u32) < 0x10000 => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\U{:08x}", c as u32);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// strconv float formatting

/// Decimal digits of a float: value = 0.d1d2d3... × 10^dp.
struct Digits {
    d: Vec<u8>,
    dp: i32,
}

/// Parses Rust's `{:e}` output ("1.2345e-7") of a non-negative finite number.
fn digits_from_exp(s: &str) -> Digits {
    let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut d: Vec<u8> = mant.bytes().filter(|b| b.is_ascii_digit()).collect();
    while d.last() == Some(&b'0') {
        d.pop();
    }
    if d.is_empty() {
        return Digits { d, dp: 0 };
    }
    Digits { d, dp: exp + 1 }
}

fn shortest_digits(f: f64) -> Digits {
    digits_from_exp(&shortest_sci(f.abs()))
}

/// The shortest decimal that reads back as `f`, in Rust's `{:e}` form; of two equally short
/// ones, the nearer, and of two equally near, the even one, as Go's `strconv` chooses
/// (`810506378065051.25` is `8.105063780650512e14`; Rust's `{:e}` says `…513e14`).
fn shortest_sci(f: f64) -> String {
    let shortest = format!("{f:e}");
    let digits = shortest
        .split_once('e')
        .map_or(0, |(m, _)| m.bytes().filter(u8::is_ascii_digit).count());
    // Rust's precision formatting rounds exactly, ties to even.
    let nearest = format!("{:.*e}", digits.saturating_sub(1), f);
    if nearest != shortest && nearest.parse::<f64>().ok() == Some(f) {
        nearest
    } else {
        shortest
    }
}

/// Digits rounded to `n` significant digits (n ≥ 1), trailing zeros trimmed, as Go's
/// `decimal.Round` leaves them.
fn rounded_digits(f: f64, n: usize) -> Digits {
    digits_from_exp(&format!("{:.*e}", n - 1, f.abs()))
}

pub(crate) fn append_float(dst: &mut String, f: f64, fmt: u8, prec: i32) {
    if f.is_nan() {
        dst.push_str("NaN");
        return;
    }
    if f.is_infinite() {
        dst.push_str(if f > 0.0 { "+Inf" } else { "-Inf" });
        return;
    }
    let neg = f.is_sign_negative();
    match fmt {
        b'b' => {
            let bits = f.to_bits();
            let mut exp = ((bits >> 52) & 0x7ff) as i32;
            let mut mant = bits & ((1 << 52) - 1);
            if exp == 0 {
                exp += 1;
            } else {
                mant |= 1 << 52;
            }
            exp += -1023 - 52;
            if neg {
                dst.push('-');
            }
            let _ = write!(dst, "{mant}p");
            if exp >= 0 {
                dst.push('+');
            }
            let _ = write!(dst, "{exp}");
            return;
        }
        b'x' | b'X' => {
            fmt_x(dst, f, prec, fmt);
            return;
        }
        _ => {}
    }
    if neg {
        dst.push('-');
    }
    let shortest = prec < 0;
    let (digs, prec) = if shortest {
        let digs = shortest_digits(f);
        let prec = match fmt {
            b'e' | b'E' => digs.d.len() as i32 - 1,
            b'f' => (digs.d.len() as i32 - digs.dp).max(0),
            _ => digs.d.len() as i32,
        };
        (digs, prec)
    } else {
        match fmt {
            b'e' | b'E' => (rounded_digits(f, prec as usize + 1), prec),
            b'f' => {
                // Round to dp+prec digits: let Rust do it in fixed notation.
                let s = format!("{:.*}", prec as usize, f.abs());
                dst.push_str(&s);
                return;
            }
            _ => {
                let p = if prec == 0 { 1 } else { prec };
                (rounded_digits(f, p as usize), p)
            }
        }
    };
    match fmt {
        b'e' | b'E' => fmt_e(dst, &digs, prec, fmt),
        b'f' => fmt_f(dst, &digs, prec),
        _ => {
            let nd = digs.d.len() as i32;
            let mut eprec = prec;
            if eprec > nd && nd >= digs.dp {
                eprec = nd;
            }
            if shortest {
                eprec = 6;
            }
            let exp = digs.dp - 1;
            let mut prec = prec;
            if exp < -4 || exp >= eprec {
                if prec > nd {
                    prec = nd;
                }
                fmt_e(dst, &digs, prec - 1, fmt + b'e' - b'g');
            } else {
                if prec > digs.dp {
                    prec = nd;
                }
                fmt_f(dst, &digs, (prec - digs.dp).max(0));
            }
        }
    }
}

fn fmt_e(dst: &mut String, d: &Digits, prec: i32, fmt: u8) {
    let nd = d.d.len();
    dst.push(if nd == 0 { '0' } else { d.d[0] as char });
    if prec > 0 {
        dst.push('.');
        let mut i = 1usize;
        let m = nd.min(prec as usize + 1);
        if i < m {
            for &c in &d.d[i..m] {
                dst.push(c as char);
            }
            i = m;
        }
        while i <= prec as usize {
            dst.push('0');
            i += 1;
        }
    }
    dst.push(fmt as char);
    append_exponent(dst, if nd == 0 { 0 } else { d.dp - 1 });
}

/// A float's exponent as strconv writes it: sign and at least two digits (`+07`, `-123`).
fn append_exponent(dst: &mut String, exp: i32) {
    dst.push(if exp < 0 { '-' } else { '+' });
    let exp = exp.unsigned_abs();
    if exp < 10 {
        dst.push('0');
    }
    let _ = write!(dst, "{exp}");
}

fn fmt_f(dst: &mut String, d: &Digits, prec: i32) {
    let nd = d.d.len() as i32;
    if d.dp > 0 {
        let m = nd.min(d.dp);
        for &c in &d.d[..m as usize] {
            dst.push(c as char);
        }
        for _ in m..d.dp {
            dst.push('0');
        }
    } else {
        dst.push('0');
    }
    if prec > 0 {
        dst.push('.');
        for i in 1..=prec {
            let j = d.dp + i - 1;
            let ch = if 0 <= j && j < nd {
                d.d[j as usize] as char
            } else {
                '0'
            };
            dst.push(ch);
        }
    }
}

/// `%x`: -0x1.yyyyp±dd, as Go's strconv.
fn fmt_x(dst: &mut String, f: f64, prec: i32, fmt: u8) {
    let bits = f.to_bits();
    let neg = bits >> 63 != 0;
    let mut exp = ((bits >> 52) & 0x7ff) as i32;
    let mut mant = bits & ((1u64 << 52) - 1);
    if exp == 0 {
        exp += 1;
    } else {
        mant |= 1 << 52;
    }
    exp -= 1023;
    if mant == 0 {
        exp = 0;
    }
    mant <<= 60 - 52;
    while mant != 0 && mant & (1 << 60) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    if (0..15).contains(&prec) {
        let shift = (prec * 4) as u32;
        let extra = (mant << shift) & ((1 << 60) - 1);
        mant >>= 60 - shift;
        if extra | (mant & 1) > 1 << 59 {
            mant += 1;
        }
        mant <<= 60 - shift;
        if mant & (1 << 61) != 0 {
            mant >>= 1;
            exp += 1;
        }
    }
    let hex: &[u8] = if fmt == b'X' {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    if neg {
        dst.push('-');
    }
    dst.push('0');
    dst.push(fmt as char);
    dst.push((b'0' + ((mant >> 60) & 1) as u8) as char);
    mant <<= 4;
    if prec < 0 && mant != 0 {
        dst.push('.');
        while mant != 0 {
            dst.push(hex[((mant >> 60) & 15) as usize] as char);
            mant <<= 4;
        }
    } else if prec > 0 {
        dst.push('.');
        for _ in 0..prec {
            dst.push(hex[((mant >> 60) & 15) as usize] as char);
            mant <<= 4;
        }
    }
    dst.push(if fmt == b'X' { 'P' } else { 'p' });
    append_exponent(dst, exp);
}

// ---------------------------------------------------------------------------------------------
// encoding/json and fmt.Sprintf

/// Go's `encoding/json` float output.
pub fn json_float(f: f64) -> String {
    let a = f.abs();
    if a != 0.0 && !(1e-6..1e21).contains(&a) {
        let s = format_float(f, b'e', -1);
        // clean up e-09 to e-9
        if let Some(i) = s.find("e-0") {
            let mut t = s.clone();
            t.replace_range(i..i + 3, "e-");
            return t;
        }
        if let Some(i) = s.find("e+0") {
            let mut t = s.clone();
            t.replace_range(i..i + 3, "e+");
            return t;
        }
        return s;
    }
    format_float(f, b'f', -1)
}

/// An argument of [`sprintf`].
#[derive(Clone, Debug)]
pub(crate) enum Arg {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Nil,
}

impl Arg {
    fn to_go(&self) -> GoValue {
        match self {
            Arg::Str(s) => GoValue::string(s.as_str()),
            Arg::Int(i) => GoValue::Int64(*i),
            Arg::Float(f) => GoValue::Float(*f),
            Arg::Bool(b) => GoValue::Bool(*b),
            Arg::Nil => GoValue::Nil,
        }
    }
}

/// Go's `fmt.Sprintf` for scalar arguments (spiff's `format`): the Go template engine's
/// `fmt` core, with Go's bounds on widths and precisions (`%!(BADWIDTH)`, `%!(NOVERB)`...)
/// and the render budget on the output's size.
pub(crate) fn sprintf(format: &str, args: &[Arg]) -> String {
    let args: Vec<GoValue> = args.iter().map(Arg::to_go).collect();
    crate::gotemplate::print::sprintf(format, &args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats() {
        assert_eq!(format_float(8080.0, b'g', -1), "8080");
        assert_eq!(format_float(2.5, b'g', -1), "2.5");
        assert_eq!(format_float(1e6, b'g', -1), "1e+06");
        assert_eq!(format_float(1234567.0, b'g', -1), "1.234567e+06");
        assert_eq!(format_float(0.0001, b'g', -1), "0.0001");
        assert_eq!(format_float(0.00001, b'g', -1), "1e-05");
        assert_eq!(format_float(1.23456, b'f', 2), "1.23");
        assert_eq!(format_float(0.0, b'g', -1), "0");
        assert_eq!(format_float(-1.5, b'g', -1), "-1.5");
        assert_eq!(format_float(100000.0, b'g', -1), "100000");
        assert_eq!(json_float(8080.0), "8080");
        assert_eq!(json_float(0.5), "0.5");
        assert_eq!(json_float(1e21), "1e+21");
        assert_eq!(json_float(1e-7), "1e-7");
        assert_eq!(json_float(123456789.0), "123456789");
        // Two shortest forms, equally near: Go takes the even one.
        let tie = -(810_506_378_065_051.0 + 0.25);
        assert_eq!(format_float(tie, b'g', -1), "-8.105063780650512e+14");
        assert_eq!(format_float(tie, b'e', -1), "-8.105063780650512e+14");
        assert_eq!(format_float(tie, b'f', -1), "-810506378065051.2");
        assert_eq!(json_float(tie), "-810506378065051.2");
        assert_eq!(format_float(5e-324, b'g', -1), "5e-324");
        assert_eq!(format_float(2.5e-8, b'g', -1), "2.5e-08");
    }

    /// What the Go template functions' own shortest-float copy (sprig's `conv`) was tested with.
    #[test]
    fn shortest_floats_format_like_go() {
        for (f, g) in [
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (100.0, "100"),
            (1e21, "1e+21"),
            (3.0e-7, "3e-07"),
            (0.1 + 0.2, "0.30000000000000004"),
        ] {
            assert_eq!(format_float(f, b'g', -1), g, "{f}");
        }
        assert_eq!(format_float(1e21, b'f', -1), "1000000000000000000000");
        assert_eq!(format_float(1.5e-7, b'e', -1), "1.5e-07");
        assert_eq!(format_float(0.000001, b'f', -1), "0.000001");
        assert_eq!(format_float(0.0, b'e', -1), "0e+00");
        assert_eq!(format_float(-0.0, b'g', -1), "-0");
    }

    #[test]
    fn quote_escapes_like_strconv() {
        assert_eq!(
            quote("a\"b\\c\n\u{1}é\u{a0}"),
            "\"a\\\"b\\\\c\\n\\x01é\\u00a0\""
        );
    }

    /// One float formatter for both engines: the Go template engine's `%v` (and sprig's
    /// conversions) now chooses Go's even digit of two equally near shortest forms too; its
    /// own copy printed `-8.105063780650513e+14` here.
    #[test]
    fn go_template_printing_uses_the_shared_shortest_digits() {
        let tie = -(810_506_378_065_051.0 + 0.25);
        assert_eq!(
            crate::gotemplate::print::sprint(&[GoValue::Float(tie)]),
            "-8.105063780650512e+14"
        );
        assert_eq!(
            crate::gotemplate::print::sprintf("%v|%g", &[GoValue::Float(tie), GoValue::Float(tie)]),
            "-8.105063780650512e+14|-8.105063780650512e+14"
        );
    }

    #[test]
    fn printf() {
        let s = |x: &str| Arg::Str(x.into());
        assert_eq!(
            sprintf(
                "%05d|%-4s|%x|%q",
                &[Arg::Int(42), s("ab"), Arg::Int(255), s("q")]
            ),
            "00042|ab  |ff|\"q\""
        );
        assert_eq!(sprintf("%s-%s", &[s("x")]), "x-%!s(MISSING)");
        assert_eq!(sprintf("%d", &[Arg::Float(8080.0)]), "%!d(float64=8080)");
        assert_eq!(sprintf("%v", &[Arg::Float(8080.0)]), "8080");
        assert_eq!(sprintf("100%%", &[]), "100%");
        assert_eq!(
            sprintf("%t/%v", &[Arg::Bool(true), Arg::Bool(false)]),
            "true/false"
        );
        assert_eq!(sprintf("%.2f", &[Arg::Float(1.23456)]), "1.23");
        assert_eq!(sprintf("a", &[Arg::Int(1)]), "a%!(EXTRA int64=1)");
        assert_eq!(sprintf("%s", &[Arg::Int(1)]), "%!s(int64=1)");
        assert_eq!(sprintf("%s", &[Arg::Nil]), "%!s(<nil>)");
        assert_eq!(sprintf("%v", &[Arg::Nil]), "<nil>");
        assert_eq!(
            sprintf("%5.1f|%-6d|", &[Arg::Float(2.25), Arg::Int(3)]),
            "  2.2|3     |"
        );
    }
}
