//! kubectl's JSONPath templates (`-o jsonpath=…`), the subset kubectl documents
//! (<https://kubernetes.io/docs/reference/kubectl/jsonpath/>): text outside `{}` printed as is;
//! inside, `$` (the root), `@` (the current object), `.field`, `['field']`, `..` (recursive
//! descent), `*`, `[n]` (negative from the end), `[start:end:step]`, unions `[a,b]`, filters
//! `[?(@.x == "y")]` (`==`, `!=`, `<`, `<=`, `>`, `>=`, or `@.x` alone for existence),
//! `range … end` and quoted literals such as `{"\n"}`.
//!
//! As in kubectl: the results of one expression are separated by spaces, strings print raw,
//! maps and lists as JSON; a missing field prints nothing (kubectl's default
//! `--allow-missing-template-keys=true`); an index out of range is an error.

use serde_json::Value;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JsonPathError {
    #[error("jsonpath template {template:?}: {message} (at byte {at})")]
    Parse {
        template: String,
        at: usize,
        message: String,
    },
    #[error("jsonpath: array index out of bounds: index {index}, length {length}")]
    OutOfBounds { index: i64, length: usize },
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    nodes: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Path(Path),
    Range(Path, Vec<Node>),
}

#[derive(Debug, Clone, PartialEq)]
struct Path {
    /// `$…` starts at the root, everything else at the current object.
    from_root: bool,
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Wildcard,
    /// `..`: the value and all its descendants, then the next step.
    Recursive,
    Subscripts(Vec<Subscript>),
    Filter(Filter),
}

#[derive(Debug, Clone, PartialEq)]
enum Subscript {
    Key(String),
    Index(i64),
    Slice(Option<i64>, Option<i64>, Option<i64>),
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    Path(Path),
    Literal(Value),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: Operand,
    /// `None`: existence of `left`.
    compare: Option<(Op, Operand)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Template {
    pub fn parse(template: &str) -> Result<Template, JsonPathError> {
        let error = |at: usize, message: String| JsonPathError::Parse {
            template: template.to_string(),
            at,
            message,
        };
        // Frames of open `range` blocks: (path, nodes before the range).
        let mut stack: Vec<(Path, Vec<Node>)> = Vec::new();
        let mut nodes = Vec::new();
        let mut text = String::new();
        let bytes = template.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] != b'{' {
                let ch = template[i..].chars().next().unwrap_or_default();
                text.push(ch);
                i += ch.len_utf8();
                continue;
            }
            if !text.is_empty() {
                nodes.push(Node::Text(std::mem::take(&mut text)));
            }
            let end = action_end(template, i + 1)
                .ok_or_else(|| error(i, "unclosed action: no matching '}'".into()))?;
            let inside = template[i + 1..end].trim();
            let at = i + 1;
            if inside == "end" {
                let (path, outer) = stack
                    .pop()
                    .ok_or_else(|| error(at, "'end' without 'range'".into()))?;
                let body = std::mem::replace(&mut nodes, outer);
                nodes.push(Node::Range(path, body));
            } else if let Some(rest) = inside.strip_prefix("range ") {
                let path = parse_path(rest.trim()).map_err(|(o, m)| error(at + o, m))?;
                stack.push((path, std::mem::take(&mut nodes)));
            } else if inside.starts_with('"') || inside.starts_with('\'') {
                let (literal, used) = parse_quoted(inside).map_err(|(o, m)| error(at + o, m))?;
                if used != inside.len() {
                    return Err(error(at + used, "text after a quoted literal".into()));
                }
                nodes.push(Node::Text(literal));
            } else if inside.is_empty() {
                return Err(error(at, "empty action '{}'".into()));
            } else {
                let path = parse_path(inside).map_err(|(o, m)| error(at + o, m))?;
                nodes.push(Node::Path(path));
            }
            i = end + 1;
        }
        if !text.is_empty() {
            nodes.push(Node::Text(text));
        }
        if !stack.is_empty() {
            return Err(error(template.len(), "'range' without 'end'".into()));
        }
        Ok(Template { nodes })
    }

    /// The template applied to `root`.
    pub fn render(&self, root: &Value) -> Result<String, JsonPathError> {
        let mut out = String::new();
        render_nodes(&self.nodes, root, root, &mut out)?;
        Ok(out)
    }
}

/// The byte offset of the `}` closing the action that starts at `start` (quotes and brackets
/// may hold braces).
fn action_end(template: &str, start: usize) -> Option<usize> {
    let bytes = template.as_bytes();
    let mut quote: Option<u8> = None;
    let mut depth = 0usize;
    let mut i = start;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) => {
                if b == b'\\' {
                    i += 1;
                } else if b == q {
                    quote = None;
                }
            }
            None => match b {
                b'"' | b'\'' => quote = Some(b),
                b'[' => depth += 1,
                b']' => depth = depth.saturating_sub(1),
                b'}' if depth == 0 => return Some(i),
                _ => {}
            },
        }
        i += 1;
    }
    None
}

type ParseResult<T> = Result<T, (usize, String)>;

/// A quoted string at the start of `s` (with `\n`, `\t`, `\r`, `\\` and escaped quotes) and the
/// bytes it used.
fn parse_quoted(s: &str) -> ParseResult<(String, usize)> {
    let mut chars = s.char_indices();
    let Some((_, quote)) = chars.next() else {
        return Err((0, "expected a quoted string".into()));
    };
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, 'r')) => out.push('\r'),
                Some((_, other)) => out.push(other),
                None => return Err((i, "unfinished escape".into())),
            },
            c if c == quote => return Ok((out, i + c.len_utf8())),
            c => out.push(c),
        }
    }
    Err((0, "unclosed quote".into()))
}

fn parse_path(s: &str) -> ParseResult<Path> {
    let mut parser = PathParser { s, i: 0 };
    let path = parser.path()?;
    if parser.i != s.len() {
        return Err((parser.i, format!("unexpected {:?}", &s[parser.i..])));
    }
    Ok(path)
}

struct PathParser<'a> {
    s: &'a str,
    i: usize,
}

impl PathParser<'_> {
    fn peek(&self) -> Option<char> {
        self.s[self.i..].chars().next()
    }

    fn rest(&self) -> &str {
        &self.s[self.i..]
    }

    fn path(&mut self) -> ParseResult<Path> {
        let mut from_root = false;
        match self.peek() {
            Some('$') => {
                from_root = true;
                self.i += 1;
            }
            Some('@') => self.i += 1,
            _ => {}
        }
        let mut steps = Vec::new();
        // `{metadata.name}` is read as `{.metadata.name}`.
        if self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            steps.push(Step::Field(self.name()?));
        }
        loop {
            let rest = self.rest();
            if rest.starts_with("..") {
                self.i += 2;
                steps.push(Step::Recursive);
                match self.peek() {
                    Some('[') => {}
                    Some('*') => {
                        self.i += 1;
                        steps.push(Step::Wildcard);
                    }
                    _ => steps.push(Step::Field(self.name()?)),
                }
            } else if rest.starts_with('.') {
                self.i += 1;
                match self.peek() {
                    Some('*') => {
                        self.i += 1;
                        steps.push(Step::Wildcard);
                    }
                    // A lone `.` (the current object) or `.[…]`.
                    None | Some('[') => {}
                    _ => steps.push(Step::Field(self.name()?)),
                }
            } else if rest.starts_with('[') {
                steps.push(self.bracket()?);
            } else {
                break;
            }
        }
        Ok(Path { from_root, steps })
    }

    /// A field name up to the next unescaped `.` or `[`, or an operator or space in filters.
    fn name(&mut self) -> ParseResult<String> {
        let start = self.i;
        let mut name = String::new();
        let mut chars = self.s[self.i..].char_indices().peekable();
        let mut used = 0;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((j, escaped)) => {
                        name.push(escaped);
                        used = j + escaped.len_utf8();
                    }
                    None => return Err((start + i, "unfinished escape".into())),
                },
                '.' | '[' | ']' | ' ' | '=' | '!' | '<' | '>' | ')' | ',' => break,
                c => {
                    name.push(c);
                    used = i + c.len_utf8();
                }
            }
        }
        if name.is_empty() {
            return Err((start, "expected a field name".into()));
        }
        self.i += used;
        Ok(name)
    }

    fn skip_spaces(&mut self) {
        while self.peek() == Some(' ') {
            self.i += 1;
        }
    }

    fn bracket(&mut self) -> ParseResult<Step> {
        let open = self.i;
        self.i += 1;
        self.skip_spaces();
        let step = if self.rest().starts_with('*') {
            self.i += 1;
            Step::Wildcard
        } else if self.rest().starts_with("?(") {
            self.i += 2;
            let filter = self.filter()?;
            self.skip_spaces();
            if self.peek() != Some(')') {
                return Err((self.i, "expected ')' closing the filter".into()));
            }
            self.i += 1;
            Step::Filter(filter)
        } else {
            let mut subscripts = Vec::new();
            loop {
                self.skip_spaces();
                subscripts.push(self.subscript()?);
                self.skip_spaces();
                if self.peek() == Some(',') {
                    self.i += 1;
                } else {
                    break;
                }
            }
            Step::Subscripts(subscripts)
        };
        self.skip_spaces();
        if self.peek() != Some(']') {
            return Err((open, "unclosed '['".into()));
        }
        self.i += 1;
        Ok(step)
    }

    fn subscript(&mut self) -> ParseResult<Subscript> {
        if matches!(self.peek(), Some('"' | '\'')) {
            let (key, used) = parse_quoted(self.rest()).map_err(|(o, m)| (self.i + o, m))?;
            self.i += used;
            return Ok(Subscript::Key(key));
        }
        let mut parts: Vec<Option<i64>> = vec![self.integer()?];
        while self.peek() == Some(':') && parts.len() < 3 {
            self.i += 1;
            parts.push(self.integer()?);
        }
        match parts.as_slice() {
            [Some(n)] => Ok(Subscript::Index(*n)),
            [None] => Err((self.i, "expected an index, a slice or a quoted key".into())),
            [a, b] => Ok(Subscript::Slice(*a, *b, None)),
            [a, b, c] => {
                if *c == Some(0) {
                    return Err((self.i, "slice step 0".into()));
                }
                Ok(Subscript::Slice(*a, *b, *c))
            }
            _ => Err((self.i, "bad subscript".into())),
        }
    }

    fn integer(&mut self) -> ParseResult<Option<i64>> {
        self.skip_spaces();
        let start = self.i;
        if self.peek() == Some('-') {
            self.i += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let text = &self.s[start..self.i];
        self.skip_spaces();
        if text.is_empty() {
            return Ok(None);
        }
        text.parse()
            .map(Some)
            .map_err(|_| (start, format!("{text:?} is not an integer")))
    }

    fn filter(&mut self) -> ParseResult<Filter> {
        self.skip_spaces();
        let left = self.operand()?;
        self.skip_spaces();
        let op = [
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("<", Op::Lt),
            (">", Op::Gt),
        ]
        .into_iter()
        .find(|(text, _)| self.rest().starts_with(text));
        let Some((text, op)) = op else {
            return Ok(Filter {
                left,
                compare: None,
            });
        };
        self.i += text.len();
        self.skip_spaces();
        let right = self.operand()?;
        Ok(Filter {
            left,
            compare: Some((op, right)),
        })
    }

    fn operand(&mut self) -> ParseResult<Operand> {
        match self.peek() {
            Some('@' | '$') => Ok(Operand::Path(self.path()?)),
            Some('"' | '\'') => {
                let (text, used) = parse_quoted(self.rest()).map_err(|(o, m)| (self.i + o, m))?;
                self.i += used;
                Ok(Operand::Literal(Value::String(text)))
            }
            _ => {
                let start = self.i;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.'))
                {
                    self.i += 1;
                }
                let text = &self.s[start..self.i];
                serde_json::from_str::<Value>(text)
                    .ok()
                    .filter(|v| !v.is_object() && !v.is_array())
                    .map(Operand::Literal)
                    .ok_or_else(|| (start, format!("expected @, $ or a literal, got {text:?}")))
            }
        }
    }
}

fn render_nodes(
    nodes: &[Node],
    root: &Value,
    current: &Value,
    out: &mut String,
) -> Result<(), JsonPathError> {
    for node in nodes {
        match node {
            Node::Text(text) => out.push_str(text),
            Node::Path(path) => {
                let results = evaluate(path, root, current)?;
                for (i, value) in results.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(&text_of(value));
                }
            }
            Node::Range(path, body) => {
                for value in evaluate(path, root, current)? {
                    render_nodes(body, root, value, out)?;
                }
            }
        }
    }
    Ok(())
}

/// How kubectl prints one result: strings raw, `null` as `null`, the rest as JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn evaluate<'a>(
    path: &Path,
    root: &'a Value,
    current: &'a Value,
) -> Result<Vec<&'a Value>, JsonPathError> {
    let mut values = vec![if path.from_root { root } else { current }];
    let mut recursive = false;
    for step in &path.steps {
        if matches!(step, Step::Recursive) {
            recursive = true;
            continue;
        }
        if std::mem::take(&mut recursive) {
            let mut all = Vec::new();
            for value in values {
                descendants(value, &mut all);
            }
            values = all;
        }
        let mut next = Vec::new();
        for value in values {
            apply(step, value, root, &mut next)?;
        }
        values = next;
    }
    if recursive {
        let mut all = Vec::new();
        for value in values {
            descendants(value, &mut all);
        }
        values = all;
    }
    Ok(values)
}

fn descendants<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    out.push(value);
    match value {
        Value::Object(map) => map.values().for_each(|v| descendants(v, out)),
        Value::Array(items) => items.iter().for_each(|v| descendants(v, out)),
        _ => {}
    }
}

fn apply<'a>(
    step: &Step,
    value: &'a Value,
    root: &'a Value,
    out: &mut Vec<&'a Value>,
) -> Result<(), JsonPathError> {
    match step {
        Step::Field(name) => out.extend(value.get(name.as_str())),
        Step::Wildcard => match value {
            Value::Object(map) => out.extend(map.values()),
            Value::Array(items) => out.extend(items.iter()),
            _ => {}
        },
        Step::Recursive => out.push(value),
        Step::Subscripts(subscripts) => {
            for subscript in subscripts {
                match (subscript, value) {
                    (Subscript::Key(key), _) => out.extend(value.get(key.as_str())),
                    (Subscript::Index(index), Value::Array(items)) => {
                        let length = items.len();
                        let at = if *index < 0 {
                            length as i64 + index
                        } else {
                            *index
                        };
                        let item = usize::try_from(at)
                            .ok()
                            .and_then(|at| items.get(at))
                            .ok_or(JsonPathError::OutOfBounds {
                                index: *index,
                                length,
                            })?;
                        out.push(item);
                    }
                    (Subscript::Slice(start, end, step), Value::Array(items)) => out
                        .extend(slice_indices(items.len(), *start, *end, *step).map(|i| &items[i])),
                    _ => {}
                }
            }
        }
        Step::Filter(filter) => {
            if let Value::Array(items) = value {
                for item in items {
                    if matches(filter, root, item)? {
                        out.push(item);
                    }
                }
            }
        }
    }
    Ok(())
}

/// The indices of `[start:end:step]` over `length` items, as Python slices (kubectl's rules).
fn slice_indices(
    length: usize,
    start: Option<i64>,
    end: Option<i64>,
    step: Option<i64>,
) -> impl Iterator<Item = usize> {
    let len = length as i64;
    let step = step.unwrap_or(1);
    let clamp = |n: i64, low: i64, high: i64| n.clamp(low, high);
    let resolve = |n: i64| if n < 0 { n + len } else { n };
    let (start, end) = if step > 0 {
        (
            clamp(start.map_or(0, resolve), 0, len),
            clamp(end.map_or(len, resolve), 0, len),
        )
    } else {
        (
            clamp(start.map_or(len - 1, resolve), -1, len - 1),
            clamp(end.map_or(-1, |e| resolve(e).max(-1)), -1, len - 1),
        )
    };
    let mut i = start;
    std::iter::from_fn(move || {
        let more = if step > 0 { i < end } else { i > end };
        if !more {
            return None;
        }
        let at = i;
        i += step;
        usize::try_from(at).ok()
    })
}

fn matches(filter: &Filter, root: &Value, item: &Value) -> Result<bool, JsonPathError> {
    let operand = |o: &Operand| -> Result<Vec<Value>, JsonPathError> {
        Ok(match o {
            Operand::Literal(v) => vec![v.clone()],
            Operand::Path(p) => evaluate(p, root, item)?.into_iter().cloned().collect(),
        })
    };
    let left = operand(&filter.left)?;
    let Some((op, right)) = &filter.compare else {
        return Ok(!left.is_empty());
    };
    let right = operand(right)?;
    let (Some(l), Some(r)) = (left.first(), right.first()) else {
        return Ok(false);
    };
    let ordering = match (l, r) {
        (Value::Number(a), Value::Number(b)) => a
            .as_f64()
            .zip(b.as_f64())
            .and_then(|(a, b)| a.partial_cmp(&b)),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (a, b) if a == b => Some(std::cmp::Ordering::Equal),
        _ => None,
    };
    Ok(match (op, ordering) {
        (Op::Eq, o) => o == Some(std::cmp::Ordering::Equal),
        (Op::Ne, o) => o != Some(std::cmp::Ordering::Equal),
        (_, None) => false,
        (Op::Lt, Some(o)) => o.is_lt(),
        (Op::Le, Some(o)) => o.is_le(),
        (Op::Gt, Some(o)) => o.is_gt(),
        (Op::Ge, Some(o)) => o.is_ge(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn render(template: &str, value: &Value) -> String {
        Template::parse(template)
            .unwrap_or_else(|e| panic!("{e}"))
            .render(value)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn list() -> Value {
        json!({"kind": "List", "items": [
            {"metadata": {"name": "a", "namespace": "x", "labels": {"app.kubernetes.io/name": "web"}},
             "status": {"phase": "Succeeded", "count": 3}},
            {"metadata": {"name": "b", "namespace": "y"}, "status": {"phase": "Failed", "count": 10}},
            {"metadata": {"name": "c", "namespace": "x"}, "status": {"phase": "Succeeded"}}
        ]})
    }

    #[test]
    fn prints_what_kubectl_prints_for_its_documented_examples() {
        let l = list();
        assert_eq!(render("{.kind}", &l), "List");
        assert_eq!(render("{.items[*].metadata.name}", &l), "a b c");
        assert_eq!(render("{.items[0].metadata.name}", &l), "a");
        assert_eq!(render("{.items[-1].metadata.name}", &l), "c");
        assert_eq!(render("{.items[0:2].metadata.name}", &l), "a b");
        assert_eq!(render("{.items[::2].metadata.name}", &l), "a c");
        assert_eq!(render("{.items[0,2].metadata.name}", &l), "a c");
        assert_eq!(render("{..name}", &l), "a b c");
        assert_eq!(render("{$.items[1]['metadata']['name']}", &l), "b");
        assert_eq!(
            render(r#"{.items[?(@.status.phase=="Failed")].metadata.name}"#, &l),
            "b"
        );
        assert_eq!(
            render("{.items[?(@.status.count > 5)].metadata.name}", &l),
            "b"
        );
        assert_eq!(
            render("{.items[?(@.status.count)].metadata.name}", &l),
            "a b"
        );
        assert_eq!(
            render(
                r#"{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\t"}{.status.phase}{"\n"}{end}"#,
                &l
            ),
            "x/a\tSucceeded\ny/b\tFailed\nx/c\tSucceeded\n"
        );
        assert_eq!(
            render(r"{.items[0].metadata.labels.app\.kubernetes\.io/name}", &l),
            "web"
        );
        assert_eq!(
            render("{.items[0].metadata.labels['app.kubernetes.io/name']}", &l),
            "web"
        );
        assert_eq!(
            render("{.items[0].status}", &l),
            r#"{"count":3,"phase":"Succeeded"}"#
        );
        assert_eq!(render("name: {.items[1].metadata.name}!", &l), "name: b!");
        // Missing fields print nothing (kubectl's --allow-missing-template-keys=true).
        assert_eq!(render("{.items[2].status.count}", &l), "");
        assert_eq!(render("{.nope.deeper}", &l), "");
    }

    #[test]
    fn reports_bad_templates_and_indices() {
        for bad in [
            "{.items[*]",
            "{range .items[*]}{.x}",
            "{end}",
            "{.items[?(@.a ==)]}",
            "{.items[}",
            "{}",
            "{\"unclosed}",
        ] {
            assert!(Template::parse(bad).is_err(), "{bad} parsed");
        }
        let template = Template::parse("{.items[7]}").unwrap();
        assert_eq!(
            template.render(&list()),
            Err(JsonPathError::OutOfBounds {
                index: 7,
                length: 3
            })
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::from),
            "[a-z ]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{1,3}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn parsing_never_panics(template in "\\PC{0,40}") {
            if let Ok(t) = Template::parse(&template) {
                let _ = t.render(&list());
            }
        }

        #[test]
        fn a_field_prints_the_field(key in "[a-z]{1,5}", value in json_value()) {
            let object = json!({ key.clone(): value.clone() });
            let expected = match &value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            prop_assert_eq!(render(&format!("{{.{key}}}"), &object), expected.clone());
            prop_assert_eq!(render(&format!("{{['{key}']}}"), &object), expected);
        }

        #[test]
        fn range_visits_every_item_in_order(names in prop::collection::vec("[a-z]{1,6}", 0..8)) {
            let items: Vec<Value> = names.iter().map(|n| json!({"metadata": {"name": n}})).collect();
            let value = json!({"items": items});
            let expected: String = names.iter().map(|n| format!("{n}\n")).collect();
            prop_assert_eq!(
                render(r#"{range .items[*]}{.metadata.name}{"\n"}{end}"#, &value),
                expected
            );
            prop_assert_eq!(render("{.items[*].metadata.name}", &value), names.join(" "));
        }

        #[test]
        fn slices_are_python_slices(
            length in 0usize..8,
            start in prop::option::of(-10i64..10),
            end in prop::option::of(-10i64..10),
            step in prop::option::of(prop_oneof![-3i64..0, 1i64..4]),
        ) {
            // The reference: Python's slice.indices, written out.
            let len = length as i64;
            let s = step.unwrap_or(1);
            let norm = |n: i64, low: i64, high: i64| {
                let n = if n < 0 { n + len } else { n };
                n.clamp(low, high)
            };
            let (lo, hi) = if s > 0 { (0, len) } else { (-1, len - 1) };
            let first = start.map_or(if s > 0 { 0 } else { len - 1 }, |v| norm(v, lo, hi));
            let stop = end.map_or(if s > 0 { len } else { -1 }, |v| norm(v, lo, hi));
            let mut expected = Vec::new();
            let mut i = first;
            while (s > 0 && i < stop) || (s < 0 && i > stop) {
                expected.push(i as usize);
                i += s;
            }
            let got: Vec<usize> = slice_indices(length, start, end, step).collect();
            prop_assert_eq!(got, expected);
        }

        #[test]
        fn recursive_descent_finds_every_occurrence(value in json_value()) {
            fn count(v: &Value) -> usize {
                match v {
                    Value::Object(m) => usize::from(m.contains_key("a")) + m.values().map(count).sum::<usize>(),
                    Value::Array(items) => items.iter().map(count).sum(),
                    _ => 0,
                }
            }
            let path = parse_path("..a").unwrap();
            prop_assert_eq!(evaluate(&path, &value, &value).unwrap().len(), count(&value));
        }
    }
}
