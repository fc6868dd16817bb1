//! Kubernetes label selectors (`a=b,c!=d,e in (x,y),f notin (z),g,!h`).

use std::collections::BTreeMap;
use std::fmt;

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    pub requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector {selector:?}: {message}")]
pub struct SelectorError {
    pub selector: String,
    pub message: String,
}

impl LabelSelector {
    pub fn everything() -> Self {
        LabelSelector::default()
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Parses the `labelSelector` query syntax of the Kubernetes API.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let fail = |message: String| SelectorError {
            selector: input.to_string(),
            message,
        };
        let mut requirements = Vec::new();
        for term in split_terms(input).map_err(&fail)? {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            requirements.push(parse_term(term).map_err(&fail)?);
        }
        Ok(LabelSelector { requirements })
    }

    /// The first `key=value` requirement, which a label index can answer directly.
    pub fn first_equality(&self) -> Option<(&str, &str)> {
        self.requirements.iter().find_map(|r| match r {
            Requirement::Equals(k, v) => Some((k.as_str(), v.as_str())),
            _ => None,
        })
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|l| vs.contains(l)),
            Requirement::NotIn(k, vs) => !labels.get(k).is_some_and(|l| vs.contains(l)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        })
    }

    /// Matches the `metadata.labels` of a JSON object.
    pub fn matches_object(&self, object: &serde_json::Value) -> bool {
        if self.requirements.is_empty() {
            return true;
        }
        self.matches(&crate::object::labels(object))
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let terms: Vec<String> = self
            .requirements
            .iter()
            .map(|r| match r {
                Requirement::Equals(k, v) => format!("{k}={v}"),
                Requirement::NotEquals(k, v) => format!("{k}!={v}"),
                Requirement::In(k, vs) => format!("{k} in ({})", vs.join(",")),
                Requirement::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
                Requirement::Exists(k) => k.clone(),
                Requirement::DoesNotExist(k) => format!("!{k}"),
            })
            .collect();
        f.write_str(&terms.join(","))
    }
}

/// Splits on commas outside parentheses.
fn split_terms(input: &str) -> Result<Vec<&str>, String> {
    let mut terms = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in input.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1).ok_or("unbalanced ')'")?,
            ',' if depth == 0 => {
                terms.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("unbalanced '('".into());
    }
    terms.push(&input[start..]);
    Ok(terms)
}

fn parse_term(term: &str) -> Result<Requirement, String> {
    if let Some(key) = term.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(check_key(key.trim())?));
    }
    if let Some((key, value)) = term.split_once("!=") {
        return Ok(Requirement::NotEquals(
            check_key(key.trim())?,
            check_value(value.trim())?,
        ));
    }
    if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
        return Ok(Requirement::Equals(
            check_key(key.trim())?,
            check_value(value.trim())?,
        ));
    }
    let words: Vec<&str> = term.splitn(2, char::is_whitespace).collect();
    if words.len() == 2 {
        let rest = words[1].trim();
        let (negated, set) = if let Some(set) = rest.strip_prefix("notin") {
            (true, set)
        } else if let Some(set) = rest.strip_prefix("in") {
            (false, set)
        } else {
            return Err(format!("unknown operator in {term:?}"));
        };
        let set = set.trim();
        let inner = set
            .strip_prefix('(')
            .and_then(|s| s.strip_suffix(')'))
            .ok_or_else(|| format!("expected a parenthesised set in {term:?}"))?;
        let values = inner
            .split(',')
            .map(|v| check_value(v.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        let key = check_key(words[0])?;
        return Ok(if negated {
            Requirement::NotIn(key, values)
        } else {
            Requirement::In(key, values)
        });
    }
    Ok(Requirement::Exists(check_key(term)?))
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63
/// characters that starts and ends alphanumeric, as Kubernetes validates them.
fn check_key(key: &str) -> Result<String, String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            })
    });
    if !prefix_ok || name.is_empty() || !label_text(name) {
        return Err(format!("invalid label key {key:?}"));
    }
    Ok(key.to_string())
}

/// A label value: empty, or at most 63 characters that start and end alphanumeric.
fn check_value(value: &str) -> Result<String, String> {
    if !value.is_empty() && !label_text(value) {
        return Err(format!("invalid label value {value:?}"));
    }
    Ok(value.to_string())
}

fn label_text(text: &str) -> bool {
    text.len() <= 63
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && text.ends_with(|c: char| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_every_operator() {
        let s = LabelSelector::parse("a=b,c!=d,e in (x, y),f notin (z),g,!h,i==j").unwrap();
        assert_eq!(
            s.requirements,
            vec![
                Requirement::Equals("a".into(), "b".into()),
                Requirement::NotEquals("c".into(), "d".into()),
                Requirement::In("e".into(), vec!["x".into(), "y".into()]),
                Requirement::NotIn("f".into(), vec!["z".into()]),
                Requirement::Exists("g".into()),
                Requirement::DoesNotExist("h".into()),
                Requirement::Equals("i".into(), "j".into()),
            ]
        );
        let l = labels(&[("a", "b"), ("e", "y"), ("g", "1"), ("i", "j")]);
        assert!(s.matches(&l));
        assert!(!s.matches(&labels(&[("a", "b"), ("e", "y"), ("g", "1"), ("h", "")])));
    }

    #[test]
    fn prefixed_keys_and_empty_selector() {
        let s = LabelSelector::parse("execution.landscaper.gardener.cloud/name=item-a").unwrap();
        assert_eq!(
            s.first_equality(),
            Some(("execution.landscaper.gardener.cloud/name", "item-a"))
        );
        assert!(LabelSelector::parse("").unwrap().matches(&BTreeMap::new()));
    }

    #[test]
    fn rejects_malformed_selectors() {
        // `=/e==` once parsed to a key its own display could not parse again (found by fuzzing).
        for bad in [
            "a in (b", "a in b", "a=b c", "=b", "a=(b)", "a)", "=/e==", "x=/a==b", "a=b-", "A/b=c",
            "a/b/c=d",
        ] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad} should fail");
        }
    }

    proptest! {
        #[test]
        fn display_round_trips(keys in proptest::collection::vec("[a-z][a-z0-9]{0,5}", 1..4),
                               values in proptest::collection::vec("[a-z0-9]{1,5}", 1..4),
                               ops in proptest::collection::vec(0u8..6, 1..4)) {
            let reqs: Vec<Requirement> = ops.iter().enumerate().map(|(i, op)| {
                let k = keys[i % keys.len()].clone();
                let v = values[i % values.len()].clone();
                match op {
                    0 => Requirement::Equals(k, v),
                    1 => Requirement::NotEquals(k, v),
                    2 => Requirement::In(k, values.clone()),
                    3 => Requirement::NotIn(k, values.clone()),
                    4 => Requirement::Exists(k),
                    _ => Requirement::DoesNotExist(k),
                }
            }).collect();
            let s = LabelSelector { requirements: reqs };
            prop_assert_eq!(LabelSelector::parse(&s.to_string()).unwrap(), s);
        }

        #[test]
        fn parse_never_panics(input in ".{0,40}") {
            let _ = LabelSelector::parse(&input);
        }
    }
}
