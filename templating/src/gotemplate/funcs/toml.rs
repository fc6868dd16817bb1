//! Helm's `toToml` (BurntSushi/toml v1.5's encoder: sorted keys, plain values before tables,
//! two-space indentation of sub-tables) and `fromToml`.

use std::collections::BTreeMap;

use super::super::value::{Value, go_lossy};
use crate::gofmt::format_float;

const NO_KEY: &str = "toml: top-level values must be Go maps or structs";
const NIL_ELEMENT: &str = "toml: cannot encode array with nil element";

struct Enc {
    out: String,
}

fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn maybe_quoted(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        quoted(k)
    }
}

fn key_string(key: &[String]) -> String {
    key.iter()
        .map(|k| maybe_quoted(k))
        .collect::<Vec<_>>()
        .join(".")
}

fn is_table(v: &Value) -> bool {
    matches!(v, Value::Map(_))
}

fn is_table_array(v: &Value) -> Result<bool, String> {
    let Value::List(items) = v else {
        return Ok(false);
    };
    if items.is_empty() {
        return Ok(false);
    }
    let mut all = true;
    for it in items.iter() {
        if let Value::Nil = it {
            return Err(NIL_ELEMENT.into());
        }
        if !is_table(it) {
            all = false;
        }
    }
    Ok(all)
}

impl Enc {
    fn newline(&mut self) {
        if !self.out.is_empty() {
            self.out.push('\n');
        }
    }

    fn indent(key: &[String]) -> String {
        "  ".repeat(key.len().saturating_sub(1))
    }

    fn encode(&mut self, key: &[String], v: &Value) -> Result<(), String> {
        match v {
            Value::Nil => Ok(()),
            Value::Map(_) => self.table(key, v),
            Value::List(_) if is_table_array(v)? => {
                if key.is_empty() {
                    return Err(NO_KEY.into());
                }
                let Value::List(items) = v else {
                    unreachable!()
                };
                for it in items.iter() {
                    self.newline();
                    self.out
                        .push_str(&format!("{}[[{}]]", Self::indent(key), key_string(key)));
                    self.newline();
                    self.map(key, it, false)?;
                }
                Ok(())
            }
            other => self.key_value(key, other, false),
        }
    }

    fn table(&mut self, key: &[String], v: &Value) -> Result<(), String> {
        if key.len() == 1 {
            self.newline();
        }
        if !key.is_empty() {
            self.out
                .push_str(&format!("{}[{}]", Self::indent(key), key_string(key)));
            self.newline();
        }
        self.map(key, v, false)
    }

    fn map(&mut self, key: &[String], v: &Value, inline: bool) -> Result<(), String> {
        let Value::Map(m) = v else { return Ok(()) };
        let m = m.borrow();
        let mut direct = Vec::new();
        let mut sub = Vec::new();
        for (k, val) in m.iter() {
            if is_table(val) || is_table_array(val)? {
                sub.push((k, val));
            } else {
                direct.push((k, val));
            }
        }
        if inline {
            self.out.push('{');
        }
        let groups = [(direct, !sub.is_empty()), (sub, false)];
        for (list, trail) in groups.iter() {
            let n = list.len();
            for (i, (k, val)) in list.iter().enumerate() {
                if let Value::Nil = val {
                    continue;
                }
                if inline {
                    self.key_value(&[k.to_string()], val, true)?;
                    if *trail || i != n - 1 {
                        self.out.push_str(", ");
                    }
                } else {
                    let mut sub_key = key.to_vec();
                    sub_key.push(k.to_string());
                    self.encode(&sub_key, val)?;
                }
            }
        }
        if inline {
            self.out.push('}');
        }
        Ok(())
    }

    fn key_value(&mut self, key: &[String], v: &Value, inline: bool) -> Result<(), String> {
        if key.is_empty() {
            return self.element(v);
        }
        self.out.push_str(&format!(
            "{}{} = ",
            Self::indent(key),
            maybe_quoted(&key[key.len() - 1])
        ));
        self.element(v)?;
        if !inline {
            self.newline();
        }
        Ok(())
    }

    fn element(&mut self, v: &Value) -> Result<(), String> {
        match v {
            Value::String(s) => self.out.push_str(&quoted(s)),
            Value::ByteString(b) => self.out.push_str(&quoted(&go_lossy(b))),
            // BurntSushi/toml writes a time.Time as an RFC 3339 datetime and a
            // TextMarshaler (*semver.Version) as its text.
            Value::Time(t) => self.out.push_str(&t.marshal_json()?),
            Value::Semver(v) => self.out.push_str(&quoted(&v.to_string())),
            Value::Bool(b) => self.out.push_str(&b.to_string()),
            Value::Int(i) | Value::Int64(i) => self.out.push_str(&i.to_string()),
            Value::Uint64(u) => self.out.push_str(&u.to_string()),
            Value::Uint8(u) => self.out.push_str(&u.to_string()),
            Value::Float(f) => {
                if f.is_nan() {
                    self.out
                        .push_str(if f.is_sign_negative() { "-nan" } else { "nan" });
                } else if f.is_infinite() {
                    self.out.push_str(if *f < 0.0 { "-inf" } else { "inf" });
                } else {
                    let t = format_float(*f, b'f', -1);
                    self.out.push_str(&t);
                    if !t.contains('.') {
                        self.out.push_str(".0");
                    }
                }
            }
            Value::Bytes(b) => {
                self.out.push('[');
                let parts: Vec<String> = b.iter().map(|x| x.to_string()).collect();
                self.out.push_str(&parts.join(", "));
                self.out.push(']');
            }
            Value::List(items) => {
                if items.iter().any(|x| matches!(x, Value::Nil)) {
                    return Err(NIL_ELEMENT.into());
                }
                self.out.push('[');
                for (i, it) in items.iter().enumerate() {
                    self.element(it)?;
                    if i != items.len() - 1 {
                        self.out.push_str(", ");
                    }
                }
                self.out.push(']');
            }
            Value::Map(_) => self.map(&[], v, true)?,
            Value::Nil => return Err(NIL_ELEMENT.into()),
        }
        Ok(())
    }
}

/// `toml.NewEncoder(b).Encode(v)`; Helm returns the error text instead of the document.
pub fn encode(v: &Value) -> Result<String, String> {
    let mut e = Enc { out: String::new() };
    e.encode(&[], v)?;
    Ok(e.out)
}

fn from_toml(v: toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::string(s),
        toml::Value::Integer(i) => Value::Int64(i),
        toml::Value::Float(f) => Value::Float(f),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::string(d.to_string()),
        toml::Value::Array(items) => Value::list(items.into_iter().map(from_toml).collect()),
        toml::Value::Table(t) => Value::map(
            t.into_iter()
                .map(|(k, v)| (k, from_toml(v)))
                .collect::<BTreeMap<_, _>>(),
        ),
    }
}

/// `toml.Unmarshal` into `map[string]interface{}` (integers int64, floats float64; datetimes
/// stay text). The error text is the `toml` crate's, not BurntSushi's.
pub fn decode(text: &str) -> Result<Value, String> {
    text.parse::<toml::Table>()
        .map(|t| from_toml(toml::Value::Table(t)))
        .map_err(|e| format!("toml: {}", e.message()))
}
