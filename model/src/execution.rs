//! `Execution` (`types_execution.go`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::duration::Duration;
use super::meta::ObjectMeta;
use super::shared::{
    Condition, Error, ObjectReference, OnDeleteConfig, Phase, TransitionTimes, some_value,
};
use super::workflow::WorkflowExtension;

/// An Execution: the deploy items an Installation's blueprint renders, run in the order of
/// their dependencies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ExecutionSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ExecutionStatus>,
}

/// The desired state of an Execution: its deploy item templates.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deploy_items: Option<Vec<DeployItemTemplate>>,
    /// Landscaper's gzip+base64 storage form of `deployItems`. Kept as written; the appliance
    /// itself always stores `deployItems` uncompressed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deploy_items_compressed: Option<String>,
}

impl ExecutionSpec {
    pub fn deploy_items(&self) -> &[DeployItemTemplate] {
        self.deploy_items.as_deref().unwrap_or_default()
    }
}

/// One deploy item to be created by an Execution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeployItemTemplate {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub r#type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<ObjectReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Provider configuration, free-form.
    #[serde(
        default,
        deserialize_with = "some_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub config: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_on_change_only: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_delete: Option<OnDeleteConfig>,
    /// The appliance's workflow conditions (not a Landscaper field, see [`crate::workflow`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub appliance: Option<WorkflowExtension>,
}

/// `status` of an Execution. Written by the controllers in Landscaper's shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionStatus {
    #[serde(default)]
    pub observed_generation: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<Error>,
    /// DataObject holding `{<deploy item name>: <exports>}`.
    #[serde(rename = "exportRef", skip_serializing_if = "Option::is_none")]
    pub export_reference: Option<ObjectReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deploy_item_cache: Option<DeployItemCache>,
    #[serde(rename = "jobID", skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(rename = "jobIDFinished", skip_serializing_if = "Option::is_none")]
    pub job_id_finished: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_transition_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transition_times: Option<TransitionTimes>,
}

/// Maps deploy item template names to DeployItem object names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeployItemCache {
    #[serde(rename = "activeDIs", skip_serializing_if = "Option::is_none")]
    pub active_dis: Option<Vec<DiNamePair>>,
    #[serde(rename = "orphanedDIs", skip_serializing_if = "Option::is_none")]
    pub orphaned_dis: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiNamePair {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub spec_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub object_name: String,
}
