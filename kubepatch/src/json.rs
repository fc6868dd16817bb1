//! RFC 6902 JSON patch and RFC 7386 JSON merge patch.

use serde_json::{Map, Value};

use crate::PatchError;

/// Applies an RFC 6902 JSON patch. A patch that is not a list of well-formed operations is a
/// [`PatchError::BadRequest`]; an operation that does not fit the document is a
/// [`PatchError::Invalid`] naming the operation and path.
pub fn json_patch(live: &Value, patch: &Value) -> Result<Value, PatchError> {
    let Some(operations) = patch.as_array() else {
        return Err(PatchError::BadRequest(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch".into(),
        ));
    };
    let mut document = live.clone();
    for operation in operations {
        apply_operation(&mut document, operation)?;
    }
    Ok(document)
}

fn apply_operation(document: &mut Value, operation: &Value) -> Result<(), PatchError> {
    let Some(fields) = operation.as_object() else {
        return Err(PatchError::BadRequest(format!(
            "invalid JSON patch operation: {operation}"
        )));
    };
    let text = |name: &str| -> Result<&str, PatchError> {
        fields.get(name).and_then(Value::as_str).ok_or_else(|| {
            PatchError::BadRequest(format!(
                "invalid JSON patch operation {operation}: missing '{name}'"
            ))
        })
    };
    let value = || -> Result<Value, PatchError> {
        fields.get("value").cloned().ok_or_else(|| {
            PatchError::BadRequest(format!(
                "invalid JSON patch operation {operation}: missing 'value'"
            ))
        })
    };
    let op = text("op")?;
    let path = text("path")?;
    let tokens = parse_pointer(path)?;
    match op {
        "add" => add(document, &tokens, value()?)
            .map_err(|why| invalid(format!("add operation does not apply: {why}: {path:?}"))),
        "remove" => remove(document, &tokens)
            .map(drop)
            .map_err(|why| invalid(format!("remove operation does not apply: {why}: {path:?}"))),
        "replace" => {
            let new_value = value()?;
            let target = lookup_mut(document, &tokens).ok_or_else(|| {
                invalid(format!(
                    "replace operation does not apply: doc is missing key: {path:?}"
                ))
            })?;
            *target = new_value;
            Ok(())
        }
        "move" => {
            let from = text("from")?;
            let from_tokens = parse_pointer(from)?;
            if tokens.len() > from_tokens.len() && tokens[..from_tokens.len()] == from_tokens[..] {
                return Err(invalid(format!(
                    "move operation does not apply: {from:?} is a prefix of {path:?}"
                )));
            }
            let moved = remove(document, &from_tokens).map_err(|why| {
                invalid(format!(
                    "move operation does not apply: {why}: from {from:?}"
                ))
            })?;
            add(document, &tokens, moved)
                .map_err(|why| invalid(format!("move operation does not apply: {why}: {path:?}")))
        }
        "copy" => {
            let from = text("from")?;
            let copied = lookup(document, &parse_pointer(from)?)
                .cloned()
                .ok_or_else(|| {
                    invalid(format!(
                        "copy operation does not apply: doc is missing from path: {from:?}"
                    ))
                })?;
            add(document, &tokens, copied)
                .map_err(|why| invalid(format!("copy operation does not apply: {why}: {path:?}")))
        }
        "test" => {
            let expected = value()?;
            match lookup(document, &tokens) {
                Some(actual) if *actual == expected => Ok(()),
                None if expected.is_null() => Ok(()),
                _ => Err(invalid(format!(
                    "testing value {path:?} failed: test failed"
                ))),
            }
        }
        other => Err(PatchError::BadRequest(format!("Unexpected kind: {other}"))),
    }
}

fn invalid(message: String) -> PatchError {
    PatchError::Invalid(message)
}

/// Splits a JSON pointer into unescaped reference tokens (`~1` is `/`, `~0` is `~`).
fn parse_pointer(pointer: &str) -> Result<Vec<String>, PatchError> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(PatchError::BadRequest(format!(
            "JSON pointer must be empty or start with '/': {pointer:?}"
        )));
    };
    rest.split('/')
        .map(|token| {
            let mut unescaped = String::with_capacity(token.len());
            let mut chars = token.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    unescaped.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => unescaped.push('~'),
                    Some('1') => unescaped.push('/'),
                    _ => {
                        return Err(PatchError::BadRequest(format!(
                            "invalid escape in JSON pointer {pointer:?}"
                        )));
                    }
                }
            }
            Ok(unescaped)
        })
        .collect()
}

/// An array index token: decimal without leading zeros.
fn parse_index(token: &str) -> Option<usize> {
    if token.is_empty() || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    if !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}

fn lookup<'a>(document: &'a Value, tokens: &[String]) -> Option<&'a Value> {
    tokens.iter().try_fold(document, |node, token| match node {
        Value::Object(map) => map.get(token),
        Value::Array(items) => parse_index(token).and_then(|i| items.get(i)),
        _ => None,
    })
}

fn lookup_mut<'a>(document: &'a mut Value, tokens: &[String]) -> Option<&'a mut Value> {
    tokens.iter().try_fold(document, |node, token| match node {
        Value::Object(map) => map.get_mut(token),
        Value::Array(items) => parse_index(token).and_then(|i| items.get_mut(i)),
        _ => None,
    })
}

fn add(document: &mut Value, tokens: &[String], value: Value) -> Result<(), &'static str> {
    let Some((last, parent_tokens)) = tokens.split_last() else {
        *document = value;
        return Ok(());
    };
    match lookup_mut(document, parent_tokens) {
        Some(Value::Object(map)) => {
            map.insert(last.clone(), value);
            Ok(())
        }
        Some(Value::Array(items)) => {
            let index = if last == "-" {
                items.len()
            } else {
                parse_index(last).ok_or("invalid array index")?
            };
            if index > items.len() {
                return Err("index out of bounds");
            }
            items.insert(index, value);
            Ok(())
        }
        Some(_) => Err("parent is not a container"),
        None => Err("doc is missing path"),
    }
}

fn remove(document: &mut Value, tokens: &[String]) -> Result<Value, &'static str> {
    let Some((last, parent_tokens)) = tokens.split_last() else {
        return Err("cannot remove the whole document");
    };
    match lookup_mut(document, parent_tokens) {
        Some(Value::Object(map)) => map.remove(last).ok_or("unable to remove nonexistent key"),
        Some(Value::Array(items)) => match parse_index(last) {
            Some(index) if index < items.len() => Ok(items.remove(index)),
            _ => Err("index out of bounds"),
        },
        Some(_) => Err("parent is not a container"),
        None => Err("doc is missing path"),
    }
}

/// Applies an RFC 7386 merge patch: objects merge recursively, `null` deletes, anything else
/// (lists included) replaces.
pub fn merge_patch(live: &Value, patch: &Value) -> Result<Value, PatchError> {
    Ok(merge_value(Some(live), patch))
}

fn merge_value(target: Option<&Value>, patch: &Value) -> Value {
    let Some(patch_fields) = patch.as_object() else {
        return patch.clone();
    };
    let mut merged = match target {
        Some(Value::Object(fields)) => fields.clone(),
        _ => Map::new(),
    };
    for (key, patch_value) in patch_fields {
        if patch_value.is_null() {
            merged.remove(key);
        } else {
            let value = merge_value(merged.get(key), patch_value);
            merged.insert(key.clone(), value);
        }
    }
    Value::Object(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn patched(live: Value, patch: Value) -> Result<Value, PatchError> {
        json_patch(&live, &patch)
    }

    #[test]
    fn json_patch_add_replace_remove() {
        let live = json!({"spec": {"replicas": 1, "list": [1, 2]}});
        let out = patched(
            live,
            json!([
                {"op": "add", "path": "/spec/list/-", "value": 3},
                {"op": "add", "path": "/spec/list/0", "value": 0},
                {"op": "replace", "path": "/spec/replicas", "value": 3},
                {"op": "remove", "path": "/spec/list/1"},
                {"op": "add", "path": "/metadata", "value": {"a~b/c": 1}},
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"replicas": 3, "list": [0, 2, 3]}, "metadata": {"a~b/c": 1}})
        );
    }

    #[test]
    fn json_patch_pointer_escapes() {
        let live = json!({"metadata": {"annotations": {"example.com/a~b": "x"}}});
        let out = patched(
            live,
            json!([{"op": "replace", "path": "/metadata/annotations/example.com~1a~0b", "value": "y"}]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"annotations": {"example.com/a~b": "y"}}})
        );
    }

    #[test]
    fn json_patch_move_copy_test() {
        let live = json!({"a": {"b": 1}, "c": [1]});
        let out = patched(
            live.clone(),
            json!([
                {"op": "test", "path": "/a/b", "value": 1},
                {"op": "copy", "from": "/a", "path": "/d"},
                {"op": "move", "from": "/c/0", "path": "/a/e"},
            ]),
        )
        .unwrap();
        assert_eq!(out, json!({"a": {"b": 1, "e": 1}, "c": [], "d": {"b": 1}}));

        let failed = patched(
            live.clone(),
            json!([{"op": "test", "path": "/a/b", "value": 2}]),
        );
        assert_eq!(
            failed,
            Err(PatchError::Invalid(
                r#"testing value "/a/b" failed: test failed"#.into()
            ))
        );
        let into_child = patched(live, json!([{"op": "move", "from": "/a", "path": "/a/x"}]));
        assert!(matches!(into_child, Err(PatchError::Invalid(_))));
    }

    #[test]
    fn json_patch_errors() {
        let live = json!({"a": 1});
        assert!(matches!(
            patched(live.clone(), json!({"op": "add"})),
            Err(PatchError::BadRequest(_))
        ));
        assert!(matches!(
            patched(live.clone(), json!([{"op": "frobnicate", "path": "/a"}])),
            Err(PatchError::BadRequest(_))
        ));
        assert!(matches!(
            patched(live.clone(), json!([{"op": "add", "path": "/a"}])),
            Err(PatchError::BadRequest(_))
        ));
        assert!(matches!(
            patched(
                live.clone(),
                json!([{"op": "add", "path": "a", "value": 1}])
            ),
            Err(PatchError::BadRequest(_))
        ));
        assert_eq!(
            patched(live.clone(), json!([{"op": "remove", "path": "/b"}])),
            Err(PatchError::Invalid(
                r#"remove operation does not apply: unable to remove nonexistent key: "/b""#.into()
            ))
        );
        assert_eq!(
            patched(
                live.clone(),
                json!([{"op": "replace", "path": "/b", "value": 1}])
            ),
            Err(PatchError::Invalid(
                r#"replace operation does not apply: doc is missing key: "/b""#.into()
            ))
        );
        assert!(matches!(
            patched(
                live.clone(),
                json!([{"op": "add", "path": "/x/y", "value": 1}])
            ),
            Err(PatchError::Invalid(_))
        ));
        assert!(matches!(
            patched(
                json!({"l": [1]}),
                json!([{"op": "add", "path": "/l/5", "value": 1}])
            ),
            Err(PatchError::Invalid(_))
        ));
        assert!(matches!(
            patched(
                json!({"l": [1]}),
                json!([{"op": "add", "path": "/l/01", "value": 1}])
            ),
            Err(PatchError::Invalid(_))
        ));
    }

    #[test]
    fn merge_patch_rfc7386_examples() {
        let live = json!({"title": "Goodbye!", "author": {"givenName": "John", "familyName": "Doe"},
                          "tags": ["example", "sample"], "content": "This will be unchanged"});
        let patch = json!({"title": "Hello!", "phoneNumber": "+01-123-456-7890",
                           "author": {"familyName": null}, "tags": ["example"]});
        assert_eq!(
            merge_patch(&live, &patch).unwrap(),
            json!({"title": "Hello!", "author": {"givenName": "John"}, "tags": ["example"],
                   "content": "This will be unchanged", "phoneNumber": "+01-123-456-7890"})
        );
        assert_eq!(
            merge_patch(&json!({"a": "b"}), &json!({"a": {"bb": {"ccc": null}}})).unwrap(),
            json!({"a": {"bb": {}}})
        );
        assert_eq!(
            merge_patch(&json!([1]), &json!({"a": null})).unwrap(),
            json!({})
        );
        assert_eq!(
            merge_patch(&json!({"a": 1}), &json!("x")).unwrap(),
            json!("x")
        );
    }

    /// The merge patch that turns `from` into `to` (objects only; `null` values in `to` cannot
    /// be expressed and are generated away).
    fn diff(from: &Value, to: &Value) -> Value {
        match (from, to) {
            (Value::Object(a), Value::Object(b)) => {
                let mut patch = Map::new();
                for key in a.keys() {
                    if !b.contains_key(key) {
                        patch.insert(key.clone(), Value::Null);
                    }
                }
                for (key, value) in b {
                    match a.get(key) {
                        Some(old) if old == value => {}
                        Some(old) if old.is_object() && value.is_object() => {
                            patch.insert(key.clone(), diff(old, value));
                        }
                        _ => {
                            patch.insert(key.clone(), value.clone());
                        }
                    }
                }
                Value::Object(patch)
            }
            _ => to.clone(),
        }
    }

    pub(crate) fn json_without_nulls() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            "[a-c]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                prop::collection::btree_map("[a-d]", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn object_without_nulls() -> impl Strategy<Value = Value> {
        prop::collection::btree_map("[a-d]", json_without_nulls(), 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    proptest! {
        #[test]
        fn merge_patch_of_diff_reproduces_target(from in object_without_nulls(), to in object_without_nulls()) {
            let patch = diff(&from, &to);
            prop_assert_eq!(merge_patch(&from, &patch).unwrap(), to);
        }

        #[test]
        fn merge_patch_is_idempotent(live in object_without_nulls(), patch in json_without_nulls()) {
            let once = merge_patch(&live, &patch).unwrap();
            prop_assert_eq!(merge_patch(&once, &patch).unwrap(), once);
        }

        #[test]
        fn json_patch_add_then_remove_restores(live in object_without_nulls(), key in "[e-h]{1,3}", value in json_without_nulls()) {
            let path = format!("/{key}");
            let added = json_patch(&live, &serde_json::json!([{"op": "add", "path": path, "value": value}])).unwrap();
            let restored = json_patch(&added, &serde_json::json!([{"op": "remove", "path": path}])).unwrap();
            prop_assert_eq!(restored, live);
        }

        #[test]
        fn json_patch_never_panics(live in json_without_nulls(), path in "(/[a-c0-9~-]{0,2}){0,3}", op in "add|remove|replace|move|copy|test") {
            let _ = json_patch(&live, &serde_json::json!([{"op": op, "path": path, "from": path, "value": 1}]));
        }
    }
}
