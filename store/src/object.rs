//! Accessors for the metadata of objects held as JSON values.
//!
//! The store keeps objects as `serde_json::Value` so that it never loses a field the typed model
//! does not know yet; these helpers read and write the few metadata fields the store manages.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::error::{EncodingError, StoreError};
use crate::key::ObjectKey;
use crate::model::Kind;

/// Namespace given to namespaced objects that name none, as `kubectl apply` does.
pub const DEFAULT_NAMESPACE: &str = "default";

pub fn metadata(object: &Value) -> Option<&Map<String, Value>> {
    object.get("metadata")?.as_object()
}

/// The metadata map, created when missing.
pub fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = Value::Object(Map::new());
    }
    let map = object.as_object_mut().expect("object was just ensured");
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut().expect("metadata was just ensured")
}

pub fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    metadata(object)?.get(field)?.as_str()
}

/// The string at a JSON pointer, or `""` when absent or not a string.
pub fn str_at<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub fn name(object: &Value) -> &str {
    meta_str(object, "name").unwrap_or_default()
}

pub fn namespace(object: &Value) -> &str {
    meta_str(object, "namespace").unwrap_or_default()
}

pub fn uid(object: &Value) -> &str {
    meta_str(object, "uid").unwrap_or_default()
}

pub fn resource_version(object: &Value) -> &str {
    meta_str(object, "resourceVersion").unwrap_or_default()
}

pub fn deletion_timestamp(object: &Value) -> Option<&str> {
    meta_str(object, "deletionTimestamp")
}

pub fn generation(object: &Value) -> i64 {
    metadata(object)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn string_map(object: &Value, field: &str) -> BTreeMap<String, String> {
    metadata(object)
        .and_then(|m| m.get(field))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

pub fn labels(object: &Value) -> BTreeMap<String, String> {
    string_map(object, "labels")
}

pub fn annotations(object: &Value) -> BTreeMap<String, String> {
    string_map(object, "annotations")
}

pub fn finalizers(object: &Value) -> Vec<String> {
    metadata(object)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The uids named by `metadata.ownerReferences`.
pub fn owner_uids(object: &Value) -> Vec<String> {
    metadata(object)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid")?.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// `status.phase`, for kinds that have one.
pub fn phase(object: &Value) -> Option<&str> {
    object.get("status")?.get("phase")?.as_str()
}

/// The kind named by the object's `apiVersion` and `kind`.
pub fn kind_of(object: &Value) -> Result<Kind, StoreError> {
    let api_version = object.get("apiVersion").and_then(Value::as_str);
    let kind = object.get("kind").and_then(Value::as_str);
    match (api_version, kind) {
        (Some(a), Some(k)) => Kind::from_type_meta(a, k).ok_or_else(|| {
            StoreError::Encoding(EncodingError::Invalid {
                key: None,
                field: "kind".into(),
                message: format!("unsupported kind {k:?} in apiVersion {a:?}"),
            })
        }),
        (None, _) => Err(invalid(None, "apiVersion", "Required value")),
        (_, None) => Err(invalid(None, "kind", "Required value")),
    }
}

/// The key of an object, defaulting the namespace of namespaced kinds to `default`.
pub fn key_of(object: &Value) -> Result<ObjectKey, StoreError> {
    let kind = kind_of(object)?;
    let name = name(object);
    let namespace = match (kind.namespaced(), namespace(object)) {
        (true, "") => DEFAULT_NAMESPACE,
        (true, ns) => ns,
        (false, "") => "",
        (false, _) => {
            return Err(invalid(
                None,
                "metadata.namespace",
                &format!("{kind} is cluster-scoped and takes no namespace"),
            ));
        }
    };
    for (field, value) in [("metadata.name", name), ("metadata.namespace", namespace)] {
        if value.contains('/') {
            return Err(invalid(None, field, "may not contain '/'"));
        }
    }
    Ok(ObjectKey::new(kind, namespace, name))
}

pub(crate) fn invalid(key: Option<&ObjectKey>, field: &str, message: &str) -> StoreError {
    StoreError::Encoding(EncodingError::Invalid {
        key: key.cloned(),
        field: field.to_string(),
        message: message.to_string(),
    })
}

/// Whether two versions of an object differ outside `metadata` and `status`: the rule by which
/// Kubernetes bumps `metadata.generation`.
pub fn spec_differs(a: &Value, b: &Value) -> bool {
    let empty = Map::new();
    let a = a.as_object().unwrap_or(&empty);
    let b = b.as_object().unwrap_or(&empty);
    let is_content = |k: &String| !matches!(k.as_str(), "metadata" | "status");
    // Compared key by key, so the result does not depend on map ordering.
    a.keys().filter(|k| is_content(k)).count() != b.keys().filter(|k| is_content(k)).count()
        || a.iter()
            .filter(|(k, _)| is_content(k))
            .any(|(k, v)| b.get(k) != Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_defaults_namespace_and_rejects_namespaced_manifest_files() {
        let inst = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
            "metadata": {"name": "a"}});
        assert_eq!(
            key_of(&inst).unwrap(),
            ObjectKey::new(Kind::Installation, "default", "a")
        );
        let file = json!({"apiVersion": "appliance.landscaper-appliance.io/v1alpha1",
            "kind": "ManifestFile", "metadata": {"name": "f", "namespace": "x"}});
        assert!(
            matches!(key_of(&file), Err(StoreError::Encoding(EncodingError::Invalid { field, .. })) if field == "metadata.namespace")
        );
        let unknown = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        assert!(key_of(&unknown).is_err());
    }

    #[test]
    fn spec_differs_ignores_metadata_and_status() {
        let a = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"x": 1}, "status": {"phase": "Init"}});
        let b = json!({"metadata": {}, "spec": {"x": 1}, "status": {"phase": "Succeeded"}});
        let c = json!({"metadata": {}, "spec": {"x": 2}});
        assert!(!spec_differs(&a, &b));
        assert!(spec_differs(&a, &c));
        let d = json!({"data": {"v": 1}});
        let e = json!({"data": {"v": 2}});
        assert!(spec_differs(&d, &e));
    }
}
