//! Landscaper's `Duration`: a Go `time.ParseDuration` string, or `none` for zero.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// A duration exactly as written (`5m`, `1h30m`, `none`, ...).
///
/// The text is kept verbatim so that re-serialising never rewrites a user's value (Go would
/// print `5m0s` for `5m`). Deserialising checks the syntax the way Landscaper's decoder does.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Duration(String);

impl Duration {
    /// Checks `text` and wraps it.
    pub fn parse(text: &str) -> Result<Duration, String> {
        parse_landscaper_duration(text)?;
        Ok(Duration(text.to_owned()))
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Length in nanoseconds (may be negative, as in Go).
    pub fn nanos(&self) -> i128 {
        // The text was checked when the value was made.
        parse_landscaper_duration(&self.0).unwrap_or(0)
    }

    /// The duration as a `std::time::Duration`; negative durations become zero.
    pub fn to_std(&self) -> std::time::Duration {
        let nanos = self.nanos().max(0);
        std::time::Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Landscaper's CRDs declare durations as strings.
impl schemars::JsonSchema for Duration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A Go duration (e.g. `5m`, `1h30m`) or `none`.",
        })
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        match parse_landscaper_duration(&text) {
            Ok(_) => Ok(Duration(text)),
            Err(e) => Err(serde::de::Error::custom(format!(
                "unable to parse string into a duration: {e}"
            ))),
        }
    }
}

/// `none` or a Go duration, in nanoseconds.
pub fn parse_landscaper_duration(text: &str) -> Result<i128, String> {
    if text == "none" {
        return Ok(0);
    }
    parse_go_duration(text)
}

/// Parses a Go `time.ParseDuration` string into nanoseconds, with Go's error messages.
pub fn parse_go_duration(text: &str) -> Result<i128, String> {
    let invalid = || format!("time: invalid duration {}", go_quote(text));
    let mut s = text;
    let mut negative = false;
    if let Some(rest) = s.strip_prefix('-') {
        negative = true;
        s = rest;
    } else if let Some(rest) = s.strip_prefix('+') {
        s = rest;
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    // Go caps durations at i64 nanoseconds (about 290 years).
    let max = i128::from(i64::MAX) + i128::from(negative);
    let mut total: i128 = 0;
    while !s.is_empty() {
        let first = s.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &s[..int_len];
        s = &s[int_len..];
        let mut frac_part = "";
        if let Some(rest) = s.strip_prefix('.') {
            let frac_len = rest.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &rest[..frac_len];
            s = &rest[frac_len..];
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let unit_len = s
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(s.len(), |(i, _)| i);
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {}", go_quote(text)));
        }
        let unit_nanos: i128 = match unit {
            "ns" => 1,
            "us" | "\u{00b5}s" | "\u{03bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    go_quote(unit),
                    go_quote(text)
                ));
            }
        };
        let mut value: i128 = 0;
        for digit in int_part.bytes() {
            value = value * 10 + i128::from(digit - b'0');
            if value > max {
                return Err(invalid());
            }
        }
        value *= unit_nanos;
        // Go truncates fractional nanoseconds.
        let mut scale = unit_nanos;
        for digit in frac_part.bytes() {
            if scale < 10 {
                break;
            }
            scale /= 10;
            value += i128::from(digit - b'0') * scale;
        }
        total += value;
        if total > max {
            return Err(invalid());
        }
    }
    Ok(if negative { -total } else { total })
}

/// Go's `%q`-style quoting as used by `time.ParseDuration` errors (ASCII subset).
fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        let s = 1_000_000_000i128;
        assert_eq!(parse_go_duration("5m").unwrap(), 300 * s);
        assert_eq!(parse_go_duration("1h30m").unwrap(), 5400 * s);
        assert_eq!(parse_go_duration("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_go_duration(".5ms").unwrap(), 500_000);
        assert_eq!(parse_go_duration("-2s").unwrap(), -2 * s);
        assert_eq!(parse_go_duration("0").unwrap(), 0);
        assert_eq!(parse_go_duration("10\u{00b5}s").unwrap(), 10_000);
        assert_eq!(parse_landscaper_duration("none").unwrap(), 0);
    }

    #[test]
    fn rejects_bad_durations_with_go_messages() {
        assert_eq!(
            parse_go_duration("abc").unwrap_err(),
            r#"time: invalid duration "abc""#
        );
        assert_eq!(
            parse_go_duration("5").unwrap_err(),
            r#"time: missing unit in duration "5""#
        );
        assert_eq!(
            parse_go_duration("5d").unwrap_err(),
            r#"time: unknown unit "d" in duration "5d""#
        );
        assert!(parse_go_duration("").is_err());
        assert!(parse_go_duration(".s").is_err());
        assert!(parse_go_duration("9999999999999h").is_err());
    }

    #[test]
    fn keeps_text_verbatim() {
        let d: Duration = serde_json::from_str(r#""10m""#).unwrap();
        assert_eq!(serde_json::to_string(&d).unwrap(), r#""10m""#);
        assert_eq!(d.to_std(), std::time::Duration::from_secs(600));
        let err = serde_json::from_str::<Duration>(r#""ten""#).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("unable to parse string into a duration")
        );
    }
}
