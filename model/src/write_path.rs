//! What an API server does to a valid object before it stores it.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::Kind;

/// Brings a validated object into its stored form. Secrets: `stringData` is merged into `data`
/// (base64, taking precedence) and dropped, as the Kubernetes API server does, so readers only
/// ever see `data` and redaction has one field to cover.
pub fn prepare_for_storage(kind: Kind, object: &mut Value) {
    if kind != Kind::Secret {
        return;
    }
    let Some(map) = object.as_object_mut() else {
        return;
    };
    let Some(Value::Object(string_data)) = map.remove("stringData") else {
        return;
    };
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(Map::new()));
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    let data = data.as_object_mut().expect("data was just made an object");
    for (key, value) in string_data {
        if let Value::String(text) = value {
            let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
            data.insert(key, Value::String(encoded));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_string_data_moves_into_data() {
        let mut secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "over", "c": "new"}});
        prepare_for_storage(Kind::Secret, &mut secret);
        assert_eq!(
            secret["data"],
            json!({"a": "eA==", "b": "b3Zlcg==", "c": "bmV3"})
        );
        assert!(secret.get("stringData").is_none());
        let mut only_string = json!({"kind": "Secret", "stringData": {"k": "v"}});
        prepare_for_storage(Kind::Secret, &mut only_string);
        assert_eq!(only_string["data"], json!({"k": "dg=="}));
    }

    #[test]
    fn other_kinds_are_untouched() {
        let cm = json!({"kind": "ConfigMap", "stringData": {"k": "v"}});
        let mut copy = cm.clone();
        prepare_for_storage(Kind::ConfigMap, &mut copy);
        assert_eq!(copy, cm);
    }
}
