//! `manifest.deployer.landscaper.gardener.cloud/v1alpha2` `ProviderStatus`: the objects the item
//! manages, with what to do to them before deletion (so that still works after the
//! configuration changed).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::ManifestPolicy;
use crate::kubernetes::{ObjectRef, group_of};
use crate::manifest::config::{ConfigError, V1ALPHA1, V1ALPHA2, check_type};

/// corev1 `ObjectReference` (only the fields Landscaper fills are usually set).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field_path: String,
}

impl ObjectReference {
    /// `CoreObjectReferenceFromUnstructuredObject`: apiVersion, kind, name, namespace, uid.
    pub fn of(object: &Value) -> ObjectReference {
        let reference = ObjectRef::of(object);
        ObjectReference {
            kind: reference.kind,
            namespace: reference.namespace,
            name: reference.name,
            uid: object
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            api_version: reference.api_version,
            ..Default::default()
        }
    }

    pub fn object_ref(&self) -> ObjectRef {
        ObjectRef::new(&self.api_version, &self.kind, &self.namespace, &self.name)
    }

    /// The text Go's generated `ObjectReference.String()` prints; Landscaper sorts by it.
    pub fn go_string(&self) -> String {
        format!(
            "&ObjectReference{{Kind:{},Namespace:{},Name:{},UID:{},APIVersion:{},ResourceVersion:{},FieldPath:{},}}",
            self.kind,
            self.namespace,
            self.name,
            self.uid,
            self.api_version,
            self.resource_version,
            self.field_path
        )
    }

    /// `containsObjectRef`'s identity: same uid, or same group, kind, namespace and name.
    pub fn same_object(&self, other: &ObjectReference) -> bool {
        if !self.uid.is_empty() && !other.uid.is_empty() && self.uid == other.uid {
            return true;
        }
        group_of(&self.api_version) == group_of(&other.api_version)
            && self.kind == other.kind
            && self.name == other.name
            && self.namespace == other.namespace
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedResourceStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotate_before_delete: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_before_delete: Option<Value>,
    #[serde(
        default = "ManifestPolicy::default",
        skip_serializing_if = "is_empty_policy"
    )]
    pub policy: ManifestPolicy,
    pub resource: ObjectReference,
}

fn is_empty_policy(policy: &ManifestPolicy) -> bool {
    policy.as_str().is_empty()
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderStatus {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_resources: Vec<ManagedResourceStatus>,
}

/// v1alpha1 listed plain typed references; they convert to `manage`d resources.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct V1Alpha1Reference {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
}

impl ProviderStatus {
    pub fn new(managed_resources: Vec<ManagedResourceStatus>) -> ProviderStatus {
        ProviderStatus {
            api_version: V1ALPHA2.to_string(),
            kind: "ProviderStatus".to_string(),
            managed_resources,
        }
    }

    /// Decodes a previous `status.providerStatus` (v1alpha2 or v1alpha1).
    pub fn parse(value: &Value) -> Result<ProviderStatus, ConfigError> {
        let version = check_type(value, "ProviderStatus")?;
        let resources = value
            .get("managedResources")
            .cloned()
            .unwrap_or(Value::Null);
        let parse_error = |e: serde_json::Error| ConfigError::Parse(e.to_string());
        let managed_resources = if version == V1ALPHA1 {
            Option::<Vec<V1Alpha1Reference>>::deserialize(resources)
                .map_err(parse_error)?
                .unwrap_or_default()
                .into_iter()
                .map(|r| ManagedResourceStatus {
                    policy: ManifestPolicy::Manage,
                    resource: ObjectReference {
                        api_version: r.api_version,
                        kind: r.kind,
                        name: r.name,
                        namespace: r.namespace,
                        ..Default::default()
                    },
                    ..Default::default()
                })
                .collect()
        } else {
            Option::<Vec<ManagedResourceStatus>>::deserialize(resources)
                .map_err(parse_error)?
                .unwrap_or_default()
        };
        Ok(ProviderStatus::new(managed_resources))
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Sorts one execution group's entries as Landscaper does (by Go's `ObjectReference.String()`).
pub fn sort_group(resources: &mut [ManagedResourceStatus]) {
    resources.sort_by_cached_key(|r| r.resource.go_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_landscapers_shape() {
        let status = ProviderStatus::new(vec![ManagedResourceStatus {
            policy: ManifestPolicy::Manage,
            annotate_before_delete: Some(BTreeMap::from([("a".into(), "b".into())])),
            resource: ObjectReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "cm".into(),
                namespace: "ns".into(),
                uid: "u1".into(),
                ..Default::default()
            },
            ..Default::default()
        }]);
        assert_eq!(
            status.to_value(),
            json!({"apiVersion": V1ALPHA2, "kind": "ProviderStatus", "managedResources": [{
                "annotateBeforeDelete": {"a": "b"}, "policy": "manage",
                "resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "ns", "uid": "u1"}}]})
        );
        assert_eq!(ProviderStatus::parse(&status.to_value()).unwrap(), status);
    }

    #[test]
    fn reads_v1alpha1_status() {
        let status = ProviderStatus::parse(&json!({"apiVersion": V1ALPHA1, "kind": "ProviderStatus",
            "managedResources": [{"apiVersion": "v1", "kind": "Secret", "name": "s", "namespace": "n"}]}))
        .unwrap();
        assert_eq!(status.managed_resources[0].policy, ManifestPolicy::Manage);
        assert_eq!(status.managed_resources[0].resource.kind, "Secret");
        assert!(
            ProviderStatus::parse(&json!({"apiVersion": "mock/v1", "kind": "ProviderStatus"}))
                .is_err()
        );
    }

    #[test]
    fn identity_and_sort_order() {
        let a = ObjectReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "x".into(),
            namespace: "n".into(),
            ..Default::default()
        };
        let b = ObjectReference {
            api_version: "apps/v1beta1".into(),
            ..a.clone()
        };
        assert!(a.same_object(&b));
        let c = ObjectReference {
            kind: "ConfigMap".into(),
            api_version: "v1".into(),
            ..a.clone()
        };
        assert!(!a.same_object(&c));
        let mut list = vec![
            ManagedResourceStatus {
                resource: a.clone(),
                ..Default::default()
            },
            ManagedResourceStatus {
                resource: c.clone(),
                ..Default::default()
            },
        ];
        sort_group(&mut list);
        assert_eq!(list[0].resource.kind, "ConfigMap");
    }
}
