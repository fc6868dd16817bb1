//! Kubernetes JSONPath (`client-go/util/jsonpath`, as kubectl uses it: `.data.token`,
//! `{.items[*].name}`, `.status.conditions[?(@.type=="Ready")].status`) evaluated with
//! jsonpath-rust: the path is rewritten into RFC 9535 syntax (`$['data']['token']`).

use jsonpath_rust::JsonPath;
use serde_json::{Map, Value};

/// A parsed Kubernetes JSONPath.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubePath {
    original: String,
    rfc9535: String,
}

impl KubePath {
    /// Parses a path as Landscaper does: braces are optional, a leading `.` is added.
    pub fn parse(text: &str) -> Result<KubePath, String> {
        let mut inner = text.trim();
        if let Some(stripped) = inner.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            inner = stripped.trim();
        }
        let inner = inner.strip_prefix('$').unwrap_or(inner);
        let rfc9535 = convert(inner)?;
        jsonpath_rust::parser::parse_json_path(&rfc9535)
            .map_err(|e| format!("invalid JSON path {text:?}: {e}"))?;
        Ok(KubePath {
            original: text.to_string(),
            rfc9535,
        })
    }

    pub fn as_rfc9535(&self) -> &str {
        &self.rfc9535
    }

    /// All values the path selects (empty when nothing matches).
    pub fn find(&self, data: &Value) -> Vec<Value> {
        data.query(&self.rfc9535)
            .map(|found| found.into_iter().cloned().collect())
            .unwrap_or_default()
    }

    /// `jsonpath.GetValue`: the first value the path selects, an error when there is none.
    pub fn value(&self, data: &Value) -> Result<Value, String> {
        self.find(data)
            .into_iter()
            .next()
            .ok_or_else(|| format!("{} not found", self.original))
    }
}

fn quote(name: &str) -> String {
    let escaped = name.replace('\\', "\\\\").replace('\'', "\\'");
    format!("['{escaped}']")
}

fn is_terminator(c: char) -> bool {
    c == '.' || c == '['
}

/// Rewrites the Kubernetes path (without braces and `$`) into RFC 9535.
fn convert(path: &str) -> Result<String, String> {
    let chars: Vec<char> = path.chars().collect();
    let mut out = String::from("$");
    let mut i = 0;
    // Landscaper prefixes a missing leading dot.
    if !chars.is_empty() && chars[0] != '.' && chars[0] != '[' {
        out.push_str(&read_name(&chars, &mut i)?);
    }
    while i < chars.len() {
        match chars[i] {
            '.' => {
                i += 1;
                if chars.get(i) == Some(&'.') {
                    i += 1;
                    out.push_str("..");
                    if chars.get(i) == Some(&'[') {
                        continue;
                    }
                }
                if i >= chars.len() {
                    // `.` alone selects the whole object.
                    break;
                }
                out.push_str(&read_name(&chars, &mut i)?);
            }
            '[' => {
                let start = i;
                let mut depth = 0usize;
                let mut quote_char: Option<char> = None;
                while i < chars.len() {
                    let c = chars[i];
                    match quote_char {
                        Some(q) if c == q && chars.get(i.wrapping_sub(1)) != Some(&'\\') => {
                            quote_char = None
                        }
                        Some(_) => {}
                        None if c == '\'' || c == '"' => quote_char = Some(c),
                        None if c == '[' || c == '(' => depth += 1,
                        None if c == ']' || c == ')' => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 && c == ']' {
                                break;
                            }
                        }
                        None => {}
                    }
                    i += 1;
                }
                if i >= chars.len() {
                    return Err(format!("unterminated array notation in {path:?}"));
                }
                i += 1;
                out.extend(&chars[start..i]);
            }
            c => return Err(format!("unexpected {c:?} in JSON path {path:?}")),
        }
    }
    Ok(out)
}

/// A field name (with `\.` as an escaped dot); `*` is the wildcard.
fn read_name(chars: &[char], i: &mut usize) -> Result<String, String> {
    let mut name = String::new();
    while *i < chars.len() && !is_terminator(chars[*i]) {
        if chars[*i] == '\\' && chars.get(*i + 1) == Some(&'.') {
            name.push('.');
            *i += 2;
            continue;
        }
        name.push(chars[*i]);
        *i += 1;
    }
    match name.as_str() {
        "" => Err("empty field name in JSON path".to_string()),
        "*" => Ok("[*]".to_string()),
        _ => Ok(quote(&name)),
    }
}

/// `jsonpath.Construct`: a map holding `value` at the dotted `key` (`a.b` → `{a: {b: value}}`).
pub fn construct(key: &str, value: Value) -> Result<Map<String, Value>, String> {
    let key = key.strip_prefix('.').unwrap_or(key);
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty() || p.contains('[')) {
        return Err(format!(
            "export key {key:?}: only field names separated by dots are supported"
        ));
    }
    let mut current = value;
    for part in parts.iter().rev() {
        let mut map = Map::new();
        map.insert((*part).to_string(), current);
        current = Value::Object(map);
    }
    match current {
        Value::Object(map) => Ok(map),
        _ => Err(format!("export key {key:?} is empty")),
    }
}

/// `utils.MergeMaps`: `b` wins, nested maps are merged.
pub fn merge_maps(a: &mut Map<String, Value>, b: Map<String, Value>) {
    for (key, value) in b {
        match (a.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(new)) => merge_maps(existing, new),
            (_, value) => {
                a.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(text: &str) -> KubePath {
        KubePath::parse(text).unwrap()
    }

    #[test]
    fn converts_kubernetes_syntax() {
        assert_eq!(path(".data.token").as_rfc9535(), "$['data']['token']");
        assert_eq!(path("{.data.token}").as_rfc9535(), "$['data']['token']");
        assert_eq!(path("data.token").as_rfc9535(), "$['data']['token']");
        assert_eq!(path(".items[*].name").as_rfc9535(), "$['items'][*]['name']");
        assert_eq!(path(".a[0]").as_rfc9535(), "$['a'][0]");
        assert_eq!(
            path(".metadata.labels.app\\.kubernetes\\.io/name").as_rfc9535(),
            "$['metadata']['labels']['app.kubernetes.io/name']"
        );
        assert_eq!(
            path(".data['tls.crt']").as_rfc9535(),
            "$['data']['tls.crt']"
        );
        assert!(KubePath::parse(".a[0").is_err());
    }

    #[test]
    fn finds_values() {
        let object = json!({"data": {"token": "abc", "test-key": 1},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "X", "status": "False"}]}});
        assert_eq!(path(".data.token").value(&object).unwrap(), json!("abc"));
        assert_eq!(path(".data.test-key").value(&object).unwrap(), json!(1));
        assert_eq!(
            path(".data").value(&object).unwrap(),
            json!({"token": "abc", "test-key": 1})
        );
        assert_eq!(
            path(".status.conditions[?(@.type==\"Ready\")].status").find(&object),
            vec![json!("True")]
        );
        assert!(path(".data.missing").value(&object).is_err());
        assert_eq!(path(".status.conditions[*].type").find(&object).len(), 2);
    }

    #[test]
    fn constructs_and_merges() {
        let mut a = construct("settings.greeting", json!("hi")).unwrap();
        assert_eq!(
            Value::Object(a.clone()),
            json!({"settings": {"greeting": "hi"}})
        );
        merge_maps(&mut a, construct("settings.other", json!(1)).unwrap());
        merge_maps(&mut a, construct("top", json!(true)).unwrap());
        assert_eq!(
            Value::Object(a),
            json!({"settings": {"greeting": "hi", "other": 1}, "top": true})
        );
        assert!(construct("a..b", json!(1)).is_err());
    }
}
