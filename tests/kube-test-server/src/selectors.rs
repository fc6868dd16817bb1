//! Label selectors (equality- and set-based) and the field selectors every resource supports.

use serde_json::Value;

use crate::error::ApiError;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Gt(String, i64),
    Lt(String, i64),
}

/// A parsed `labelSelector`; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

fn bad(input: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!(
        "unable to parse requirement: found '{input}', {why}"
    ))
}

/// Splits on commas outside parentheses.
fn split_terms(input: &str) -> Result<Vec<&str>, ApiError> {
    let mut terms = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in input.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(bad(input, "unbalanced parentheses"));
                }
            }
            ',' if depth == 0 => {
                terms.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(bad(input, "unbalanced parentheses"));
    }
    terms.push(&input[start..]);
    Ok(terms)
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 317
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(value: &str) -> bool {
    value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn set_values(term: &str, rest: &str) -> Result<Vec<String>, ApiError> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| bad(term, "expected a parenthesised set of values"))?;
    let values: Vec<String> = inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    if let Some(v) = values.iter().find(|v| !valid_value(v)) {
        return Err(bad(term, &format!("invalid label value: {v:?}")));
    }
    Ok(values)
}

/// Finds ` in ` / ` notin ` as whole words after the key.
fn split_set_op<'a>(term: &'a str, op: &str) -> Option<(&'a str, &'a str)> {
    let mut words = term.splitn(2, char::is_whitespace);
    let key = words.next()?;
    let rest = words.next()?.trim_start();
    let after = rest.strip_prefix(op)?;
    if after.starts_with(|c: char| c.is_whitespace() || c == '(') {
        Some((key, after))
    } else {
        None
    }
}

impl LabelSelector {
    pub fn everything() -> Self {
        LabelSelector::default()
    }

    pub fn parse(input: &str) -> Result<Self, ApiError> {
        let mut requirements = Vec::new();
        for raw in split_terms(input)? {
            let term = raw.trim();
            if term.is_empty() {
                continue;
            }
            let requirement = if let Some(key) = term.strip_prefix('!') {
                Requirement::NotExists(key.trim().to_string())
            } else if let Some((key, rest)) = split_set_op(term, "notin") {
                Requirement::NotIn(key.to_string(), set_values(term, rest)?)
            } else if let Some((key, rest)) = split_set_op(term, "in") {
                Requirement::In(key.to_string(), set_values(term, rest)?)
            } else if let Some((key, value)) = term.split_once("!=") {
                Requirement::NotIn(key.trim().to_string(), vec![value.trim().to_string()])
            } else if let Some((key, value)) = term.split_once("==") {
                Requirement::In(key.trim().to_string(), vec![value.trim().to_string()])
            } else if let Some((key, value)) = term.split_once('=') {
                Requirement::In(key.trim().to_string(), vec![value.trim().to_string()])
            } else if let Some((key, value)) = term.split_once('>') {
                let n = value.trim().parse().map_err(|_| {
                    bad(
                        term,
                        "for 'gt', 'lt' operators, exactly one integer value is required",
                    )
                })?;
                Requirement::Gt(key.trim().to_string(), n)
            } else if let Some((key, value)) = term.split_once('<') {
                let n = value.trim().parse().map_err(|_| {
                    bad(
                        term,
                        "for 'gt', 'lt' operators, exactly one integer value is required",
                    )
                })?;
                Requirement::Lt(key.trim().to_string(), n)
            } else {
                Requirement::Exists(term.to_string())
            };
            let key = match &requirement {
                Requirement::Exists(k)
                | Requirement::NotExists(k)
                | Requirement::In(k, _)
                | Requirement::NotIn(k, _)
                | Requirement::Gt(k, _)
                | Requirement::Lt(k, _) => k,
            };
            if !valid_key(key) {
                return Err(bad(term, "invalid label key"));
            }
            if let Requirement::In(_, values) | Requirement::NotIn(_, values) = &requirement
                && let Some(v) = values.iter().find(|v| !valid_value(v))
            {
                return Err(bad(term, &format!("invalid label value: {v:?}")));
            }
            requirements.push(requirement);
        }
        Ok(LabelSelector { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Matches the labels of an object (`metadata.labels`).
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object
            .pointer("/metadata/labels")
            .and_then(Value::as_object);
        let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.requirements.iter().all(|r| match r {
            Requirement::Exists(k) => label(k).is_some(),
            Requirement::NotExists(k) => label(k).is_none(),
            Requirement::In(k, values) => label(k).is_some_and(|v| values.iter().any(|x| x == v)),
            Requirement::NotIn(k, values) => label(k).is_none_or(|v| values.iter().all(|x| x != v)),
            Requirement::Gt(k, n) => label(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Requirement::Lt(k, n) => label(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Namespace,
    /// Other fields (`status.phase`, `spec.nodeName`, `type`...) compared by JSON path.
    Path,
}

/// A parsed `fieldSelector`. `metadata.name` and `metadata.namespace` work everywhere; other
/// dotted paths compare the string at that path (kube allows a few per kind).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<(Field, String, bool, String)>,
}

impl FieldSelector {
    pub fn parse(input: &str) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        for term in input.split(',') {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let (path, equals, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector: invalid selector: '{input}'; can't understand '{term}'"
                )));
            };
            let path = path.trim();
            let field = match path {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                p if p.split('.').all(|s| !s.is_empty()) => Field::Path,
                other => {
                    return Err(ApiError::bad_request(format!(
                        "field label not supported: {other}"
                    )));
                }
            };
            terms.push((field, path.to_string(), equals, value.trim().to_string()));
        }
        Ok(FieldSelector { terms })
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|(field, path, equals, value)| {
            let actual = match field {
                Field::Name => object.pointer("/metadata/name").and_then(Value::as_str),
                Field::Namespace => object
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str),
                Field::Path => {
                    let pointer = format!("/{}", path.replace('.', "/"));
                    object.pointer(&pointer).and_then(Value::as_str)
                }
            }
            .unwrap_or("");
            (actual == value) == *equals
        })
    }

    /// The name an equality term pins, if any (a fast path for single-object watches).
    pub fn name(&self) -> Option<&str> {
        self.terms
            .iter()
            .find(|(f, _, eq, _)| *f == Field::Name && *eq)
            .map(|(_, _, _, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}, "status": {"phase": "Running"}})
    }

    #[test]
    fn label_selectors() {
        let o = obj(json!({"app": "web", "tier": "front", "n": "5"}));
        let m = |s: &str| LabelSelector::parse(s).expect(s).matches(&o);
        assert!(m(""));
        assert!(m("app=web"));
        assert!(m("app==web,tier"));
        assert!(!m("app!=web"));
        assert!(m("app in (web, db)"));
        assert!(!m("app notin (web)"));
        assert!(m("tier notin (back),!missing"));
        assert!(!m("!app"));
        assert!(m("missing notin (x)"));
        assert!(m("n>3"));
        assert!(!m("n<3"));
        assert!(LabelSelector::parse("app in (web").is_err());
        assert!(LabelSelector::parse("a b c").is_err());
    }

    #[test]
    fn field_selectors() {
        let o = obj(json!({}));
        let m = |s: &str| FieldSelector::parse(s).expect(s).matches(&o);
        assert!(m("metadata.name=a"));
        assert!(m("metadata.namespace!=x,metadata.name==a"));
        assert!(m("status.phase=Running"));
        assert!(!m("metadata.name=b"));
        assert!(FieldSelector::parse("metadata.name").is_err());
        assert_eq!(
            FieldSelector::parse("metadata.name=z")
                .map(|s| s.name().map(str::to_string))
                .ok(),
            Some(Some("z".to_string()))
        );
    }
}
