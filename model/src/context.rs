//! `Context` (`types_context.go`). Its fields are top-level; there is no `spec`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::meta::ObjectMeta;
use super::shared::{LocalObjectReference, SecretReference, some_value};

/// Shared configuration of the Installations, Executions and DeployItems that name it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// OCM repository context (typed object), free-form.
    #[serde(
        default,
        deserialize_with = "some_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub repository_context: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ocm_config: Option<LocalObjectReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_pull_secrets: Option<Vec<LocalObjectReference>>,
    /// Named free-form configurations (e.g. `helmChartRepoCredentials`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configurations: Option<BTreeMap<String, Value>>,
    /// Name of a ComponentVersionOverwrites object.
    #[serde(
        rename = "componentVersionOverwrites",
        skip_serializing_if = "Option::is_none"
    )]
    pub component_version_overwrites_reference: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification_signatures: Option<BTreeMap<String, VerificationSignature>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerificationSignature {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_key_secret_reference: Option<SecretReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_certificate_secret_reference: Option<SecretReference>,
}
