//! Go formatting: `strconv.FormatFloat`, a subset of `fmt.Sprintf` (as used by spiff's
//! `format` function) and `encoding/json` number output.

use std::fmt::Write as _;

use crate::gotemplate::Value as GoValue;

/// Decimal digits (no trailing zeros; empty for zero) and decimal point position:
/// `value = 0.d1d2d3... * 10^dp`.
struct Digs {
    d: Vec<u8>,
    dp: i32,
}

fn from_sci(s: &str) -> Digs {
    let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut d: Vec<u8> = mant.bytes().filter(|c| *c != b'.').collect();
    while d.last() == Some(&b'0') {
        d.pop();
    }
    if d.is_empty() {
        return Digs { d, dp: 0 };
    }
    Digs { d, dp: exp + 1 }
}

fn shortest_digits(f: f64) -> Digs {
    if f == 0.0 {
        return Digs {
            d: Vec::new(),
            dp: 0,
        };
    }
    from_sci(&shortest_sci(f.abs()))
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

/// rounded to `n` significant digits
fn precision_digits(f: f64, n: usize) -> Digs {
    if f == 0.0 {
        return Digs {
            d: Vec::new(),
            dp: 0,
        };
    }
    from_sci(&format!("{:.*e}", n.max(1) - 1, f.abs()))
}

fn fmt_e(neg: bool, g: &Digs, prec: i32, upper: bool) -> String {
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    s.push(if g.d.is_empty() { '0' } else { g.d[0] as char });
    if prec > 0 {
        s.push('.');
        for i in 1..=prec as usize {
            s.push(if i < g.d.len() { g.d[i] as char } else { '0' });
        }
    }
    let exp = if g.d.is_empty() { 0 } else { g.dp - 1 };
    s.push(if upper { 'E' } else { 'e' });
    s.push(if exp < 0 { '-' } else { '+' });
    let ea = exp.unsigned_abs();
    if ea < 10 {
        s.push('0');
    }
    let _ = write!(s, "{ea}");
    s
}

fn fmt_f(neg: bool, g: &Digs, prec: i32) -> String {
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    if g.dp > 0 {
        for i in 0..g.dp as usize {
            s.push(if i < g.d.len() { g.d[i] as char } else { '0' });
        }
    } else {
        s.push('0');
    }
    if prec > 0 {
        s.push('.');
        for i in 0..prec {
            let j = g.dp + i;
            s.push(if j >= 0 && (j as usize) < g.d.len() {
                g.d[j as usize] as char
            } else {
                '0'
            });
        }
    }
    s
}

/// Go's `strconv.FormatFloat(f, fmt, prec, 64)` for `e E f g G`.
pub(crate) fn format_float(f: f64, fmt: char, prec: i32) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let neg = f.is_sign_negative() && f != 0.0 || (f == 0.0 && f.is_sign_negative());
    let shortest = prec < 0;
    match fmt {
        'e' | 'E' => {
            if shortest {
                let g = shortest_digits(f);
                let p = (g.d.len() as i32 - 1).max(0);
                fmt_e(neg, &g, p, fmt == 'E')
            } else {
                let g = precision_digits(f, prec as usize + 1);
                fmt_e(neg, &g, prec, fmt == 'E')
            }
        }
        'f' => {
            if shortest {
                let g = shortest_digits(f);
                let p = (g.d.len() as i32 - g.dp).max(0);
                fmt_f(neg, &g, p)
            } else {
                let s = format!("{:.*}", prec as usize, f.abs());
                if neg { format!("-{s}") } else { s }
            }
        }
        _ => {
            let upper = fmt == 'G';
            let (g, prec) = if shortest {
                let g = shortest_digits(f);
                let n = g.d.len() as i32;
                (g, n)
            } else {
                let p = if prec == 0 { 1 } else { prec };
                (precision_digits(f, p as usize), p)
            };
            let nd = g.d.len() as i32;
            let mut eprec = prec;
            if eprec > nd && nd >= g.dp {
                eprec = nd;
            }
            if shortest {
                eprec = 6;
            }
            let exp = g.dp - 1;
            if exp < -4 || exp >= eprec {
                let p = if prec > nd { nd } else { prec };
                fmt_e(neg, &g, p - 1, upper)
            } else {
                let p = if prec > g.dp { nd } else { prec };
                fmt_f(neg, &g, (p - g.dp).max(0))
            }
        }
    }
}

/// Go's `encoding/json` float output.
pub(crate) fn json_float(f: f64) -> String {
    let a = f.abs();
    if a != 0.0 && !(1e-6..1e21).contains(&a) {
        let s = format_float(f, 'e', -1);
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
    format_float(f, 'f', -1)
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
        assert_eq!(format_float(8080.0, 'g', -1), "8080");
        assert_eq!(format_float(2.5, 'g', -1), "2.5");
        assert_eq!(format_float(1e6, 'g', -1), "1e+06");
        assert_eq!(format_float(1234567.0, 'g', -1), "1.234567e+06");
        assert_eq!(format_float(0.0001, 'g', -1), "0.0001");
        assert_eq!(format_float(0.00001, 'g', -1), "1e-05");
        assert_eq!(format_float(1.23456, 'f', 2), "1.23");
        assert_eq!(format_float(0.0, 'g', -1), "0");
        assert_eq!(format_float(-1.5, 'g', -1), "-1.5");
        assert_eq!(format_float(100000.0, 'g', -1), "100000");
        assert_eq!(json_float(8080.0), "8080");
        assert_eq!(json_float(0.5), "0.5");
        assert_eq!(json_float(1e21), "1e+21");
        assert_eq!(json_float(1e-7), "1e-7");
        assert_eq!(json_float(123456789.0), "123456789");
        // Two shortest forms, equally near: Go takes the even one.
        let tie = -(810_506_378_065_051.0 + 0.25);
        assert_eq!(format_float(tie, 'g', -1), "-8.105063780650512e+14");
        assert_eq!(format_float(tie, 'e', -1), "-8.105063780650512e+14");
        assert_eq!(format_float(tie, 'f', -1), "-810506378065051.2");
        assert_eq!(json_float(tie), "-810506378065051.2");
        assert_eq!(format_float(5e-324, 'g', -1), "5e-324");
        assert_eq!(format_float(2.5e-8, 'g', -1), "2.5e-08");
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
