//! The parts of Go's `strconv` the template parser relies on: `Unquote`, `UnquoteChar`,
//! `ParseInt`/`ParseUint` with base 0 and `ParseFloat`, with Go's literal syntax (base
//! prefixes, underscores, hexadecimal floats).

/// Go's `strconv.UnquoteChar(s, quote)`: (value, multibyte, tail).
pub(crate) fn unquote_char(s: &str, quote: u8) -> Result<(u32, &str), ()> {
    let b = s.as_bytes();
    if b.is_empty() {
        return Err(());
    }
    let c = b[0];
    if c == quote && (quote == b'\'' || quote == b'"') {
        return Err(());
    }
    if c >= 0x80 {
        let ch = s.chars().next().ok_or(())?;
        return Ok((ch as u32, &s[ch.len_utf8()..]));
    }
    if c != b'\\' {
        return Ok((c as u32, &s[1..]));
    }
    if b.len() <= 1 {
        return Err(());
    }
    let c = b[1];
    if !c.is_ascii() {
        // No escape starts with a multi-byte character (and `s[2..]` would split it).
        return Err(());
    }
    let mut rest = &s[2..];
    let value: u32 = match c {
        b'a' => 7,
        b'b' => 8,
        b'f' => 12,
        b'n' => 10,
        b'r' => 13,
        b't' => 9,
        b'v' => 11,
        b'x' | b'u' | b'U' => {
            let n = match c {
                b'x' => 2,
                b'u' => 4,
                _ => 8,
            };
            if rest.len() < n {
                return Err(());
            }
            let mut v: u32 = 0;
            for &d in &rest.as_bytes()[..n] {
                let x = (d as char).to_digit(16).ok_or(())?;
                v = v << 4 | x;
            }
            rest = &rest[n..];
            if c == b'x' {
                // A single byte: as a rune it is that code point (Go strings would keep the
                // raw byte; templates rarely care).
                return Ok((v, rest));
            }
            if char::from_u32(v).is_none() {
                return Err(());
            }
            v
        }
        b'0'..=b'7' => {
            let mut v = (c - b'0') as u32;
            if rest.len() < 2 {
                return Err(());
            }
            for &d in &rest.as_bytes()[..2] {
                let x = d.wrapping_sub(b'0');
                if x > 7 {
                    return Err(());
                }
                v = (v << 3) | x as u32;
            }
            rest = &rest[2..];
            if v > 255 {
                return Err(());
            }
            v
        }
        b'\\' => b'\\' as u32,
        b'\'' | b'"' => {
            if c != quote {
                return Err(());
            }
            c as u32
        }
        _ => return Err(()),
    };
    Ok((value, rest))
}

/// Go's `strconv.Unquote` for "..." and `...` literals.
pub(crate) fn unquote(s: &str) -> Result<String, ()> {
    let b = s.as_bytes();
    if b.len() < 2 {
        return Err(());
    }
    let quote = b[0];
    if quote != b[b.len() - 1] {
        return Err(());
    }
    let inner = &s[1..s.len() - 1];
    if quote == b'`' {
        if inner.contains('`') {
            return Err(());
        }
        return Ok(inner.replace('\r', ""));
    }
    if quote != b'"' && quote != b'\'' {
        return Err(());
    }
    if inner.contains('\n') {
        return Err(());
    }
    if !inner.contains('\\') && !inner.contains(quote as char) && quote == b'"' {
        return Ok(inner.to_string());
    }
    let mut out = String::with_capacity(inner.len());
    let mut bytes: Vec<u8> = Vec::new();
    let mut rest = inner;
    let mut raw_bytes = false;
    while !rest.is_empty() {
        let is_x = rest.starts_with("\\x")
            || (rest.starts_with('\\')
                && rest
                    .as_bytes()
                    .get(1)
                    .is_some_and(|c| (b'0'..=b'7').contains(c)));
        let (v, tail) = unquote_char(rest, quote)?;
        if is_x {
            bytes.push(v as u8);
            raw_bytes = true;
        } else {
            let mut buf = [0u8; 4];
            let ch = char::from_u32(v).ok_or(())?;
            bytes.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        }
        rest = tail;
        if quote == b'\'' && !rest.is_empty() {
            return Err(());
        }
    }
    if raw_bytes {
        out.push_str(&String::from_utf8_lossy(&bytes));
    } else {
        out.push_str(std::str::from_utf8(&bytes).map_err(|_| ())?);
    }
    Ok(out)
}

fn lower(c: u8) -> u8 {
    c | 0x20
}

/// Go's `underscoreOK`.
fn underscore_ok(s: &str) -> bool {
    let mut b = s.as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    if !b.is_empty() && (b[0] == b'-' || b[0] == b'+') {
        b = &b[1..];
    }
    let mut hex = false;
    if b.len() >= 2 && b[0] == b'0' && matches!(lower(b[1]), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = lower(b[1]) == b'x';
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || (hex && (b'a'..=b'f').contains(&lower(c))) {
            saw = b'0';
            i += 1;
            continue;
        }
        if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
            i += 1;
            continue;
        }
        if saw == b'_' {
            return false;
        }
        saw = b'!';
        i += 1;
    }
    saw != b'_'
}

/// Go's `strconv.ParseUint(s, 0, 64)`.
pub(crate) fn parse_uint(s0: &str) -> Option<u64> {
    if s0.is_empty() {
        return None;
    }
    let b = s0.as_bytes();
    let mut s = b;
    let mut base = 10u64;
    if b[0] == b'0' {
        if b.len() >= 3 && lower(b[1]) == b'b' {
            base = 2;
            s = &b[2..];
        } else if b.len() >= 3 && lower(b[1]) == b'o' {
            base = 8;
            s = &b[2..];
        } else if b.len() >= 3 && lower(b[1]) == b'x' {
            base = 16;
            s = &b[2..];
        } else {
            base = 8;
            s = &b[1..];
        }
    }
    let mut n: u64 = 0;
    let mut underscores = false;
    for &c in s {
        let d = match c {
            b'_' => {
                underscores = true;
                continue;
            }
            b'0'..=b'9' => (c - b'0') as u64,
            b'a'..=b'z' | b'A'..=b'Z' => (lower(c) - b'a' + 10) as u64,
            _ => return None,
        };
        if d >= base {
            return None;
        }
        n = n.checked_mul(base)?.checked_add(d)?;
    }
    if underscores && !underscore_ok(s0) {
        return None;
    }
    Some(n)
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
pub(crate) fn parse_int(s: &str) -> Option<i64> {
    if s.is_empty() {
        return None;
    }
    let (neg, rest) = match s.as_bytes()[0] {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let un = parse_uint(rest)?;
    if neg {
        if un > 1u64 << 63 {
            return None;
        }
        Some((un as i64).wrapping_neg())
    } else {
        if un >= 1u64 << 63 {
            return None;
        }
        Some(un as i64)
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for the literal syntax the lexer produces (no "inf"/"nan"
/// words: those are identifiers to the template lexer). Out-of-range values are errors in Go.
pub(crate) fn parse_float(s: &str) -> Option<f64> {
    if s.is_empty() {
        return None;
    }
    let (neg, body) = match s.as_bytes()[0] {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if body.contains('_') && !underscore_ok(s) {
        return None;
    }
    let clean: String = body.chars().filter(|&c| c != '_').collect();
    let v = if clean.len() > 2 && clean.as_bytes()[0] == b'0' && lower(clean.as_bytes()[1]) == b'x'
    {
        parse_hex_float(&clean[2..])?
    } else {
        let b = clean.as_bytes();
        // Decimal: digits [. digits] [e [+-] digits], at least one digit.
        let mut i = 0;
        let mut digits = 0;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            digits += 1;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
                digits += 1;
            }
        }
        if digits == 0 {
            return None;
        }
        if i < b.len() && lower(b[i]) == b'e' {
            i += 1;
            if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                i += 1;
            }
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i == start {
                return None;
            }
        }
        if i != b.len() {
            return None;
        }
        clean.parse::<f64>().ok()?
    };
    if v.is_infinite() {
        return None; // ErrRange in Go
    }
    Some(if neg { -v } else { v })
}

fn parse_hex_float(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut mant: u128 = 0;
    let mut exp: i64 = 0;
    let mut digits = 0;
    let mut sticky = false;
    let mut seen_dot = false;
    while i < b.len() {
        let c = b[i];
        if c == b'.' {
            if seen_dot {
                return None;
            }
            seen_dot = true;
            i += 1;
            continue;
        }
        let Some(d) = (c as char).to_digit(16) else {
            break;
        };
        digits += 1;
        if mant >> 120 == 0 {
            mant = mant << 4 | d as u128;
            if seen_dot {
                exp -= 4;
            }
        } else {
            sticky |= d != 0;
            if !seen_dot {
                exp += 4;
            }
        }
        i += 1;
    }
    if digits == 0 || i >= b.len() || lower(b[i]) != b'p' {
        return None;
    }
    i += 1;
    let mut eneg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        eneg = b[i] == b'-';
        i += 1;
    }
    let start = i;
    let mut e: i64 = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        e = (e * 10 + (b[i] - b'0') as i64).min(100_000);
        i += 1;
    }
    if i == start || i != b.len() {
        return None;
    }
    if sticky {
        mant |= 1;
    }
    let e = exp + if eneg { -e } else { e };
    let m = mant as f64;
    Some(m * 2f64.powi(e.clamp(-2000, 2000) as i32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(parse_uint("0x1F"), Some(31));
        assert_eq!(parse_uint("017"), Some(15));
        assert_eq!(parse_uint("0o17"), Some(15));
        assert_eq!(parse_uint("0b101"), Some(5));
        assert_eq!(parse_uint("1_000"), Some(1000));
        assert_eq!(parse_uint("1__0"), None);
        assert_eq!(parse_uint("089"), None);
        assert_eq!(parse_int("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_int("9223372036854775808"), None);
        assert_eq!(parse_float("1.5e3"), Some(1500.0));
        assert_eq!(parse_float(".5"), Some(0.5));
        assert_eq!(parse_float("1_0.5"), Some(10.5));
        assert_eq!(parse_float("0x1p-2"), Some(0.25));
        assert_eq!(parse_float("0x1.8p1"), Some(3.0));
        assert_eq!(parse_float("1e400"), None);
        assert_eq!(parse_float("."), None);
    }

    #[test]
    fn unquoting() {
        assert_eq!(unquote(r#""a\tb\u00e9\x41""#).unwrap(), "a\tbéA");
        assert_eq!(unquote("`a\\n`").unwrap(), "a\\n");
        assert!(unquote(r#""\q""#).is_err());
        assert_eq!(unquote_char("a'", b'\'').unwrap(), (97, "'"));
        assert_eq!(unquote_char("\\n'", b'\'').unwrap(), (10, "'"));
        assert!(unquote_char("\\\"'", b'\'').is_err());
        // fuzz/regressions/gotemplate-1: a backslash before a multi-byte character panicked.
        assert!(unquote(r#""\é""#).is_err());
        assert!(unquote_char("\\é'", b'\'').is_err());
        assert!(unquote("'\\é'").is_err());
    }
}
