//! Go's `strconv` number syntax and formatting, and `spf13/cast` conversions as sprig uses them.

use super::super::value::Value;

/// Go's `strconv.ParseInt(s, base, 64)`; `base == 0` takes the base from a `0x`/`0o`/`0b`/`0`
/// prefix and allows `_` between digits.
pub fn parse_int(s: &str, base: u32) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let mag = parse_uint(body, base)?;
    if neg {
        if mag > (i64::MAX as u64) + 1 {
            return None;
        }
        Some((mag as i64).wrapping_neg())
    } else {
        i64::try_from(mag).ok()
    }
}

/// Go's `strconv.ParseUint(s, base, 64)`.
pub fn parse_uint(s: &str, base: u32) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let b = s.as_bytes();
    let (mut base, mut digits, base0) = (base, s, base == 0);
    if base == 0 {
        base = 10;
        if b[0] == b'0' {
            if b.len() >= 3 && matches!(b[1].to_ascii_lowercase(), b'x' | b'o' | b'b') {
                base = match b[1].to_ascii_lowercase() {
                    b'x' => 16,
                    b'o' => 8,
                    _ => 2,
                };
                digits = &s[2..];
            } else {
                base = 8;
                digits = &s[1..];
            }
        }
    }
    if base0 && s.contains('_') && !underscore_ok(s) {
        return None;
    }
    let mut n: u64 = 0;
    let mut any = false;
    for c in digits.chars() {
        if c == '_' && base0 {
            continue;
        }
        let d = c.to_digit(36)?;
        if d >= base {
            return None;
        }
        n = n.checked_mul(base as u64)?.checked_add(d as u64)?;
        any = true;
    }
    if !any {
        // Only a lone "0" (octal prefix, no digits) has no digits after the prefix.
        return if base0 && s == "0" { Some(0) } else { None };
    }
    Some(n)
}

/// Go's `underscoreOK`: underscores only between digits or between a base prefix and a digit.
fn underscore_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    if !b.is_empty() && (b[0] == b'-' || b[0] == b'+') {
        i = 1;
    }
    let mut hex = false;
    if b.len() - i >= 2
        && b[i] == b'0'
        && matches!(b[i + 1].to_ascii_lowercase(), b'b' | b'o' | b'x')
    {
        hex = b[i + 1].eq_ignore_ascii_case(&b'x');
        i += 2;
        saw = b'0';
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// Go's `strconv.ParseFloat(s, 64)` for the decimal forms, `inf`/`infinity`/`nan` and
/// hexadecimal floats; `_` between digits is accepted.
pub fn parse_float(s: &str) -> Option<f64> {
    if s.is_empty() {
        return None;
    }
    let (sign, body) = match s.as_bytes()[0] {
        b'+' => (1.0, &s[1..]),
        b'-' => (-1.0, &s[1..]),
        _ => (1.0, s),
    };
    let lower = body.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" {
        return Some(sign * f64::INFINITY);
    }
    if lower == "nan" {
        return if s.len() == 3 { Some(f64::NAN) } else { None };
    }
    if s.contains('_') {
        if !underscore_ok(s) {
            return None;
        }
        return parse_float(&s.replace('_', ""));
    }
    if let Some(hex) = lower.strip_prefix("0x") {
        return parse_hex_float(hex).map(|f| sign * f);
    }
    // Rust accepts the same decimal syntax, but also "inf"/"nan" spellings handled above and
    // nothing else; it rejects a lone "." like Go.
    if !body
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    let v: f64 = body.parse().ok()?;
    if v.is_infinite() {
        // Go reports a range error for overflow.
        return None;
    }
    Some(sign * v)
}

fn parse_hex_float(s: &str) -> Option<f64> {
    let (mant, exp) = match s.find('p') {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int_part, frac_part) = match mant.find('.') {
        Some(i) => (&mant[..i], &mant[i + 1..]),
        None => (mant, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int_part.chars() {
        v = v * 16.0 + c.to_digit(16)? as f64;
    }
    let mut scale = 1.0 / 16.0;
    for c in frac_part.chars() {
        v += c.to_digit(16)? as f64 * scale;
        scale /= 16.0;
    }
    Some(v * 2f64.powi(exp))
}

/// Go's conversion of a float64 to int64 (amd64 semantics: out of range and NaN give
/// the minimum int64).
pub fn float_to_i64(f: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if f.is_nan() || !(-LIMIT..LIMIT).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// cast's `trimZeroDecimal`: "12.00" → "12".
fn trim_zero_decimal(s: &str) -> &str {
    let b = s.as_bytes();
    let mut found_zero = false;
    for i in (1..=b.len()).rev() {
        match b[i - 1] {
            b'.' => {
                if found_zero {
                    return &s[..i - 1];
                }
            }
            b'0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// `cast.ToInt64` (errors give 0).
pub fn to_int64(v: &Value) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Uint64(u) => *u as i64,
        Value::Uint8(u) => i64::from(*u),
        Value::Float(f) => float_to_i64(*f),
        Value::String(s) => parse_int(trim_zero_decimal(s), 0).unwrap_or(0),
        Value::Bool(b) => *b as i64,
        _ => 0,
    }
}

/// `cast.ToFloat64` (errors give 0).
pub fn to_float64(v: &Value) -> f64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i as f64,
        Value::Uint64(u) => *u as f64,
        Value::Uint8(u) => f64::from(*u),
        Value::Float(f) => *f,
        Value::String(s) => parse_float(s).unwrap_or(0.0),
        Value::Bool(true) => 1.0,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_parse_like_go() {
        assert_eq!(parse_int("0x1F", 0), Some(31));
        assert_eq!(parse_int("010", 0), Some(8));
        assert_eq!(parse_int("0o17", 0), Some(15));
        assert_eq!(parse_int("0b101", 0), Some(5));
        assert_eq!(parse_int("-1_000", 0), Some(-1000));
        assert_eq!(parse_int("1__0", 0), None);
        assert_eq!(parse_int("0", 0), Some(0));
        assert_eq!(parse_int("", 0), None);
        assert_eq!(parse_int("12a", 0), None);
        assert_eq!(parse_int("0x", 0), None);
        assert_eq!(parse_int("777", 8), Some(511));
        assert_eq!(parse_int("9223372036854775808", 10), None);
        assert_eq!(parse_int("-9223372036854775808", 10), Some(i64::MIN));
    }

    #[test]
    fn cast_conversions() {
        assert_eq!(to_int64(&Value::Float(1.9)), 1);
        assert_eq!(to_int64(&Value::string("12.00")), 12);
        assert_eq!(to_int64(&Value::string("12.5")), 0);
        assert_eq!(to_int64(&Value::string("0x10")), 16);
        assert_eq!(to_float64(&Value::string("1e3")), 1000.0);
        assert_eq!(to_float64(&Value::Bool(true)), 1.0);
    }
}
