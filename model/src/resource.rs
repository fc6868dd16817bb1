//! The typed view controllers work with: [`Resource`] plus JSON conversions.

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::kind::Kind;
use super::meta::ObjectMeta;
use super::validate::ModelError;
use super::{
    ConfigMap, Context, DataObject, DeployItem, Execution, Installation, ManifestFile, Secret,
    Target, TransportArchive,
};

/// A stored kind with its typed Rust representation.
pub trait Resource:
    Serialize + DeserializeOwned + Clone + Debug + Default + PartialEq + Send + Sync + 'static
{
    const KIND: Kind;

    fn metadata(&self) -> &ObjectMeta;
    fn metadata_mut(&mut self) -> &mut ObjectMeta;

    /// An empty object of this kind with `apiVersion`/`kind` filled in.
    fn with_metadata(metadata: ObjectMeta) -> Self;

    fn name(&self) -> &str {
        self.metadata().name()
    }

    fn namespace(&self) -> &str {
        self.metadata().namespace()
    }
}

macro_rules! impl_resource {
    ($($ty:ty => $kind:expr),* $(,)?) => {$(
        impl Resource for $ty {
            const KIND: Kind = $kind;

            fn metadata(&self) -> &ObjectMeta {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }

            fn with_metadata(metadata: ObjectMeta) -> Self {
                Self {
                    api_version: Self::KIND.api_version().to_owned(),
                    kind: Self::KIND.as_str().to_owned(),
                    metadata,
                    ..Default::default()
                }
            }
        }
    )*};
}

impl_resource! {
    Installation => Kind::Installation,
    Execution => Kind::Execution,
    DeployItem => Kind::DeployItem,
    DataObject => Kind::DataObject,
    Target => Kind::Target,
    Context => Kind::Context,
    ConfigMap => Kind::ConfigMap,
    Secret => Kind::Secret,
    ManifestFile => Kind::ManifestFile,
    TransportArchive => Kind::TransportArchive,
}

/// Reads a stored JSON value as `T`.
///
/// Unknown fields are dropped silently and no semantic checks run: stored values passed
/// [`validate_object`](super::validate_object) on the way in. A present `apiVersion`/`kind`
/// must match `T`.
pub fn from_value<T: Resource>(value: &Value) -> Result<T, ModelError> {
    for (field, expected) in [
        ("apiVersion", T::KIND.api_version()),
        ("kind", T::KIND.as_str()),
    ] {
        match value.get(field) {
            None => {}
            Some(Value::String(s)) if s == expected => {}
            Some(other) => {
                return Err(ModelError::new(
                    field,
                    format!("expected {expected:?}, found {other}"),
                ));
            }
        }
    }
    serde_path_to_error::deserialize(value).map_err(ModelError::from_path_error)
}

/// Writes `T` as JSON, filling in `apiVersion`/`kind` when they are empty.
pub fn to_value<T: Resource>(object: &T) -> Value {
    // The model has only string map keys and no fallible Serialize impls.
    let mut value = serde_json::to_value(object).expect("model types serialise to JSON");
    if let Value::Object(map) = &mut value {
        for (field, expected) in [
            ("apiVersion", T::KIND.api_version()),
            ("kind", T::KIND.as_str()),
        ] {
            let entry = map.entry(field).or_insert(Value::Null);
            if matches!(entry, Value::Null) || entry.as_str() == Some("") {
                *entry = Value::from(expected);
            }
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn with_metadata_sets_type_meta() {
        let inst = Installation::with_metadata(ObjectMeta::namespaced("ns", "a"));
        assert_eq!(inst.api_version, "landscaper.gardener.cloud/v1alpha1");
        assert_eq!(inst.kind, "Installation");
        assert_eq!(inst.name(), "a");
        assert_eq!(inst.namespace(), "ns");
    }

    #[test]
    fn to_value_fills_type_meta_and_from_value_reads_back() {
        let mut target = Target {
            metadata: ObjectMeta::namespaced("ns", "t"),
            ..Target::default()
        };
        target.spec.r#type = "x".into();
        let v = to_value(&target);
        assert_eq!(v["apiVersion"], "landscaper.gardener.cloud/v1alpha1");
        assert_eq!(v["kind"], "Target");
        let back: Target = from_value(&v).unwrap();
        assert_eq!(back.spec.r#type, "x");
        assert_eq!(back.kind, "Target");
    }

    #[test]
    fn from_value_rejects_other_kinds_and_reports_paths() {
        let err = from_value::<Target>(&json!({"kind": "Installation"})).unwrap_err();
        assert_eq!(err.field, "kind");
        let err = from_value::<Target>(&json!({"spec": {"type": 1}})).unwrap_err();
        assert_eq!(err.field, "spec.type");
        assert_eq!(err.message, "invalid type: integer `1`, expected a string");
    }
}
