//! sprig's `strval` and `%v` of a value, as the function libraries need them (Go's `strconv`
//! quoting is [`crate::gofmt`]'s).

use super::super::value::Value;

/// `fmt.Sprintf("%v", v)`.
pub fn format_v(v: &Value) -> String {
    super::super::print::format_value(v)
}

/// sprig's `strval`: strings and byte slices as they are, everything else with `%v` (as text:
/// invalid UTF-8 reads with U+FFFD replacements; [`strval_value`] keeps the bytes).
pub fn strval(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        Value::ByteString(b) => super::super::value::go_lossy(b),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        other => format_v(other),
    }
}

/// sprig's `strval` as a Go string value, bytes kept.
pub fn strval_value(v: &Value) -> Value {
    match v {
        Value::String(_) | Value::ByteString(_) => v.clone(),
        Value::Bytes(b) => Value::from_bytes(b.to_vec()),
        other => Value::string(format_v(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn v_formats_like_go() {
        let m: BTreeMap<String, Value> = [
            ("b".to_string(), Value::Int(1)),
            (
                "a".to_string(),
                Value::list(vec![Value::Float(1e6), Value::Nil]),
            ),
        ]
        .into_iter()
        .collect();
        assert_eq!(format_v(&Value::map(m)), "map[a:[1e+06 <nil>] b:1]");
        assert_eq!(format_v(&Value::Float(2.5)), "2.5");
    }
}
