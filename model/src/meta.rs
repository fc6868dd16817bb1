//! Kubernetes object metadata, as Landscaper's objects carry it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `metadata` of every stored object.
///
/// Timestamps stay RFC 3339 strings, exactly as the API server writes them, so that nothing is
/// lost or reformatted on the way through.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generate_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner_references: Option<Vec<OwnerReference>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finalizers: Option<Vec<String>>,
}

/// One entry of `metadata.ownerReferences`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

/// The schema is a reference to kube's `ObjectMeta` by kube's definition name: the API's
/// OpenAPI documents put kube's own definition under that name (as kube-apiserver's documents
/// reference it from custom resources); the body here is only a stand-in.
impl schemars::JsonSchema for ObjectMeta {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        OBJECT_META_DEFINITION.into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object" })
    }
}

/// kube's OpenAPI definition name of `ObjectMeta`.
pub const OBJECT_META_DEFINITION: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

impl ObjectMeta {
    /// Metadata with a name and namespace.
    pub fn namespaced(namespace: impl Into<String>, name: impl Into<String>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            ..ObjectMeta::default()
        }
    }

    /// The name, or `""` when unset.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }

    /// The namespace, or `""` when unset.
    pub fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or_default()
    }

    /// `metadata.generation`, or 0 when unset.
    pub fn generation(&self) -> i64 {
        self.generation.unwrap_or(0)
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.as_ref()?.get(key).map(String::as_str)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref()?.get(key).map(String::as_str)
    }

    /// Sets a label, creating the map if needed; returns the previous value.
    pub fn set_label(
        &mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Option<String> {
        self.labels
            .get_or_insert_with(BTreeMap::new)
            .insert(key.into(), value.into())
    }

    /// Sets an annotation, creating the map if needed; returns the previous value.
    pub fn set_annotation(
        &mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Option<String> {
        self.annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(key.into(), value.into())
    }

    /// Removes a label. An emptied map is kept (as an API server would).
    pub fn remove_label(&mut self, key: &str) -> Option<String> {
        self.labels.as_mut()?.remove(key)
    }

    /// Removes an annotation. An emptied map is kept (as an API server would).
    pub fn remove_annotation(&mut self, key: &str) -> Option<String> {
        self.annotations.as_mut()?.remove(key)
    }

    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|x| x == finalizer))
    }

    /// Adds a finalizer unless present; returns whether it was added.
    pub fn add_finalizer(&mut self, finalizer: &str) -> bool {
        if self.has_finalizer(finalizer) {
            return false;
        }
        self.finalizers
            .get_or_insert_with(Vec::new)
            .push(finalizer.to_owned());
        true
    }

    /// Removes a finalizer; returns whether it was present. An emptied list is dropped.
    pub fn remove_finalizer(&mut self, finalizer: &str) -> bool {
        let Some(list) = self.finalizers.as_mut() else {
            return false;
        };
        let before = list.len();
        list.retain(|f| f != finalizer);
        let removed = list.len() != before;
        if list.is_empty() {
            self.finalizers = None;
        }
        removed
    }

    /// Whether a deletion has been requested.
    pub fn is_deleting(&self) -> bool {
        self.deletion_timestamp.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accessors_and_mutators() {
        let mut meta = ObjectMeta::namespaced("ns", "a");
        assert_eq!((meta.namespace(), meta.name()), ("ns", "a"));
        assert_eq!(meta.annotation("x"), None);
        meta.set_annotation("x", "1");
        assert_eq!(meta.annotation("x"), Some("1"));
        assert_eq!(meta.remove_annotation("x").as_deref(), Some("1"));
        assert_eq!(meta.annotations, Some(BTreeMap::new()));
        assert!(meta.add_finalizer("f"));
        assert!(!meta.add_finalizer("f"));
        assert!(meta.remove_finalizer("f"));
        assert_eq!(meta.finalizers, None);
        meta.set_label("l", "v");
        assert_eq!(meta.label("l"), Some("v"));
    }
}
