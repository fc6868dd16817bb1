//! `DeployItem` (`types_deployitem.go`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::duration::Duration;
use super::meta::ObjectMeta;
use super::shared::{
    Condition, Error, ObjectReference, OnDeleteConfig, Phase, TransitionTimes, some_value,
};

/// A DeployItem: one unit of deployment (a helm chart, manifests, a container, a mock) run by
/// the deployer of its `type` against its Target.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeployItem {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: DeployItemSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<DeployItemStatus>,
}

/// The desired state of a DeployItem: its type, Target and provider configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeployItemSpec {
    /// Deployer type, e.g. `landscaper.gardener.cloud/mock`. Required.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub r#type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<ObjectReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Provider configuration, free-form.
    #[serde(
        default,
        deserialize_with = "some_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub config: Option<Value>,
    /// Progressing timeout; 10m when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_on_change_only: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_delete: Option<OnDeleteConfig>,
}

/// `status` of a DeployItem. Written by the deployers in Landscaper's shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeployItemStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    #[serde(default)]
    pub observed_generation: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<Error>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_errors: Option<Vec<Error>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<Error>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_reconcile_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployer: Option<DeployerInformation>,
    /// Deployer-specific status, free-form.
    #[serde(
        default,
        deserialize_with = "some_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub provider_status: Option<Value>,
    #[serde(rename = "exportRef", skip_serializing_if = "Option::is_none")]
    pub export_reference: Option<ObjectReference>,
    #[serde(rename = "jobID", skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(rename = "jobIDFinished", skip_serializing_if = "Option::is_none")]
    pub job_id_finished: Option<String>,
    #[serde(
        rename = "jobIDGenerationTime",
        skip_serializing_if = "Option::is_none"
    )]
    pub job_id_generation_time: Option<String>,
    /// Deprecated; Landscaper clears it.
    #[serde(rename = "deployItemPhase", skip_serializing_if = "Option::is_none")]
    pub deployer_phase: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transition_times: Option<TransitionTimes>,
}

/// Which deployer last reconciled the item.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeployerInformation {
    #[serde(default)]
    pub identity: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
}
