//! `Target` (`types_target.go`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::meta::ObjectMeta;
use super::shared::{LocalSecretReference, some_value};

/// Access information for an environment, e.g. a Kubernetes cluster.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: TargetSpec,
}

/// `type` plus at most one of `config` and `secretRef`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetSpec {
    /// Target type, e.g. `landscaper.gardener.cloud/kubernetes-cluster`. Required.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub r#type: String,
    /// Inline configuration, free-form (for clusters: `{kubeconfig: "..."}`).
    #[serde(
        default,
        deserialize_with = "some_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub config: Option<Value>,
    /// Secret holding the configuration (`key` selects one entry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalSecretReference>,
}
