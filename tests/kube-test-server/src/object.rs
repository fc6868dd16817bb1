//! Small accessors on objects kept as JSON values.

use serde_json::{Map, Value};

pub fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

pub fn name(v: &Value) -> &str {
    str_at(v, "/metadata/name")
}

pub fn namespace(v: &Value) -> &str {
    str_at(v, "/metadata/namespace")
}

pub fn uid(v: &Value) -> &str {
    str_at(v, "/metadata/uid")
}

pub fn resource_version(v: &Value) -> &str {
    str_at(v, "/metadata/resourceVersion")
}

pub fn generation(v: &Value) -> i64 {
    v.pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// `metadata` as a mutable map, created when missing (the object must be a JSON object).
pub fn meta_mut(v: &mut Value) -> &mut Map<String, Value> {
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    let obj = match v.as_object_mut() {
        Some(o) => o,
        None => unreachable!("just made an object"),
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    match meta.as_object_mut() {
        Some(m) => m,
        None => unreachable!("just made an object"),
    }
}

pub fn finalizers(v: &Value) -> Vec<String> {
    v.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

pub fn is_deleting(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// The uids named in `metadata.ownerReferences`.
pub fn owner_uids(v: &Value) -> Vec<String> {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The object without `metadata` and `status`: what `generation` tracks.
pub fn spec_part(v: &Value) -> Value {
    match v.as_object() {
        Some(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| {
                    !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        None => Value::Null,
    }
}

/// Equal apart from `resourceVersion` and `managedFields` (a write that changes nothing).
pub fn same_content(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
            m.remove("managedFields");
        }
        v
    };
    strip(a) == strip(b)
}

/// RFC 3339 in seconds, as Kubernetes writes timestamps.
pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// RFC 3339 with microseconds, as `managedFields` and events use.
pub fn now_micro() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.%6fZ")
        .to_string()
}
