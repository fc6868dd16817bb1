//! YAML as Landscaper reads blueprints and rendered templates: `sigs.k8s.io/yaml` (yaml.v2 with
//! YAML 1.1 resolution, then JSON), plus a locator that finds the line of a field path for
//! error messages.

use std::collections::HashMap;

use granit_parser::{Event, Parser};
use serde_json::Value;

use crate::gotemplate::Value as GoValue;
use crate::gotemplate::funcs::yaml as goyaml;

/// A YAML document that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct YamlError {
    /// 1-based line of the problem, when known.
    pub line: Option<usize>,
    /// sigs.k8s.io/yaml's message (`error converting YAML to JSON: yaml: line 3: ...`).
    pub message: String,
}

/// Parses the first YAML document of `text` into JSON, as `sigs.k8s.io/yaml.Unmarshal` does:
/// YAML 1.1 scalars (`yes` is `true`), merge keys, keys as strings. Whole numbers stay integers
/// (Go writes them back without a fraction); an empty document is `null`.
pub fn parse_yaml(text: &str) -> Result<Value, YamlError> {
    let v = goyaml::unmarshal(text).map_err(|message| YamlError {
        line: line_of_message(&message),
        message,
    })?;
    Ok(go_to_json(&v))
}

/// The line number in a `yaml: line N: ...` message.
pub(crate) fn line_of_message(message: &str) -> Option<usize> {
    let i = message.find("line ")?;
    let digits: String = message[i + 5..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// A template value as JSON, the way Go's `encoding/json` writes it: whole floats without a
/// fraction (so `3` stays `3`), bytes as base64. Values JSON cannot hold (NaN) become `null`.
pub fn go_to_json(v: &GoValue) -> Value {
    let mut j = v.to_json().unwrap_or(Value::Null);
    whole_floats_to_ints(&mut j);
    j
}

fn whole_floats_to_ints(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64() {
                *v = float_to_json(f);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_floats_to_ints),
        Value::Object(m) => m.values_mut().for_each(whole_floats_to_ints),
        _ => {}
    }
}

fn float_to_json(f: f64) -> Value {
    // Go writes -0 as the float `-0`, which reads back as float64 -0 (printed `-0`).
    if f.fract() == 0.0 && f.is_finite() && !(f == 0.0 && f.is_sign_negative()) {
        if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
            return Value::from(f as i64);
        }
        if (0.0..1.844_674_407_370_955_2e19).contains(&f) {
            return Value::from(f as u64);
        }
    }
    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// One step of a field path: a map key or a list index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathSegment {
    Key(String),
    Index(usize),
}

/// Renders a field path as `imports[0].schema`.
pub fn display_path(path: &[PathSegment]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            PathSegment::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            PathSegment::Index(i) => {
                s.push_str(&format!("[{i}]"));
            }
        }
    }
    s
}

/// Line and column (1-based) of every node of the first document of `text`, by field path:
/// a map entry is located at its key, a list item at its start. Empty when the text does not
/// parse.
pub struct Locator {
    positions: HashMap<Vec<PathSegment>, (usize, usize)>,
}

impl Locator {
    pub fn new(text: &str) -> Locator {
        let mut events = Vec::new();
        for ev in Parser::new_from_str(text) {
            match ev {
                Ok((Event::DocumentEnd, _)) => break,
                Ok((Event::Comment(..), _)) => {}
                Ok((e, span)) => events.push((e, span.start.line(), span.start.col() + 1)),
                Err(_) => break,
            }
        }
        let mut positions = HashMap::new();
        let mut i = events
            .iter()
            .position(|(e, _, _)| matches!(e, Event::DocumentStart(..)))
            .map_or(events.len(), |p| p + 1);
        let mut path = Vec::new();
        walk(&events, &mut i, &mut path, &mut positions);
        Locator { positions }
    }

    /// The position of `path`, or of its longest located prefix.
    pub fn locate(&self, path: &[PathSegment]) -> Option<(usize, usize)> {
        (0..=path.len())
            .rev()
            .find_map(|n| self.positions.get(&path[..n]).copied())
    }
}

type Ev<'a> = (Event<'a>, usize, usize);

fn walk(
    events: &[Ev<'_>],
    i: &mut usize,
    path: &mut Vec<PathSegment>,
    out: &mut HashMap<Vec<PathSegment>, (usize, usize)>,
) {
    let Some((ev, line, col)) = events.get(*i) else {
        return;
    };
    *i += 1;
    out.entry(path.clone()).or_insert((*line, *col));
    match ev {
        Event::SequenceStart(..) => {
            let mut n = 0;
            while let Some((e, l, c)) = events.get(*i) {
                if matches!(e, Event::SequenceEnd) {
                    *i += 1;
                    break;
                }
                path.push(PathSegment::Index(n));
                out.insert(path.clone(), (*l, *c));
                walk(events, i, path, out);
                path.pop();
                n += 1;
            }
        }
        Event::MappingStart(..) => {
            while let Some((e, l, c)) = events.get(*i) {
                if matches!(e, Event::MappingEnd) {
                    *i += 1;
                    break;
                }
                let key = match e {
                    Event::Scalar(k, ..) => Some(k.to_string()),
                    _ => None,
                };
                let (kl, kc) = (*l, *c);
                // Skip the key node (scalars are one event; complex keys are walked and dropped).
                let mut scratch = HashMap::new();
                walk(events, i, &mut Vec::new(), &mut scratch);
                match key {
                    Some(k) => {
                        path.push(PathSegment::Key(k));
                        out.insert(path.clone(), (kl, kc));
                        let before = *i;
                        walk(events, i, path, out);
                        // The key's position wins over the value's.
                        out.insert(path.clone(), (kl, kc));
                        let _ = before;
                        path.pop();
                    }
                    None => walk(events, i, &mut Vec::new(), &mut scratch),
                }
            }
        }
        _ => {}
    }
}

/// Excerpt of `source` around a 1-based line, with line numbers and a caret under `column`
/// (1-based; 0 for none), in the style of Landscaper's `CreateSourceSnippet`.
pub fn source_snippet(source: &str, line: usize, column: usize) -> String {
    let lines: Vec<&str> = source.split('\n').collect();
    if line == 0 || line > lines.len() {
        return String::new();
    }
    let start = line.saturating_sub(5).max(1);
    let end = (line + 5).min(lines.len());
    let width = end.to_string().len();
    let mut out = String::new();
    for n in start..=end {
        out.push_str(&format!("{n:>width$}: {}\n", lines[n - 1]));
        if n == line && column > 0 {
            out.push_str(&format!("{}^\n", " ".repeat(width + 2 + column - 1)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// sigs.k8s.io/yaml reads `-0.0` as float64 -0, which Go prints `-0` (it was `0`).
    #[test]
    fn negative_zero_stays_a_negative_float() {
        let v = parse_yaml("a: -0.0\nb: -0\nc: 0.0\n").unwrap();
        assert!(
            v["a"]
                .as_f64()
                .is_some_and(|f| f == 0.0 && f.is_sign_negative())
        );
        assert_eq!(v["b"], json!(0));
        assert_eq!(v["c"], json!(0));
        let out = crate::gotemplate::render(
            "t",
            "{{ .a }} {{ .b }} {{ .c }}",
            &v,
            &crate::gotemplate::funcs::sprig(),
        )
        .unwrap();
        assert_eq!(out, "-0 0 0");
    }

    #[test]
    fn yaml_reads_like_sigs_k8s_yaml() {
        assert_eq!(
            parse_yaml("a: 1\nb: 1.5\nc: yes\nd: '1'\ne:\n- x\n").unwrap(),
            json!({"a": 1, "b": 1.5, "c": true, "d": "1", "e": ["x"]})
        );
        assert_eq!(parse_yaml("").unwrap(), Value::Null);
        let e = parse_yaml("a: b: c\n").unwrap_err();
        assert_eq!(e.line, Some(1), "{e}");
    }

    #[test]
    fn comments_do_not_disturb_decoding() {
        assert_eq!(
            parse_yaml("a: x # c\nb:\n  c: 'in # quotes' # done\n# end\n").unwrap(),
            json!({"a": "x", "b": {"c": "in # quotes"}})
        );
        let loc = Locator::new("# head\na: 1 # c\nb: 2\n");
        assert_eq!(loc.locate(&[PathSegment::Key("b".into())]), Some((3, 1)));
    }

    #[test]
    fn fields_are_located_at_their_keys() {
        let text = "a: 1\nlist:\n  - name: x\n    schema:\n      type: string\n  - name: y\n";
        let loc = Locator::new(text);
        let p = |segs: &[PathSegment]| loc.locate(segs);
        use PathSegment::{Index, Key};
        assert_eq!(p(&[Key("a".into())]), Some((1, 1)));
        assert_eq!(
            p(&[Key("list".into()), Index(0), Key("schema".into())]),
            Some((4, 5))
        );
        assert_eq!(p(&[Key("list".into()), Index(1)]), Some((6, 5)));
        // Unknown tails fall back to the longest known prefix.
        assert_eq!(
            p(&[Key("list".into()), Index(1), Key("nope".into())]),
            Some((6, 5))
        );
        assert_eq!(
            display_path(&[Key("list".into()), Index(1), Key("schema".into())]),
            "list[1].schema"
        );
    }

    #[test]
    fn snippets_point_at_the_column() {
        let s = source_snippet("a\nbb\nccc\n", 2, 2);
        assert_eq!(s, "1: a\n2: bb\n    ^\n3: ccc\n4: \n");
    }
}
