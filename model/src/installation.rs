//! `Installation` (`types_installation.go`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::duration::Duration;
use super::meta::ObjectMeta;
use super::shared::{
    Condition, Error, LocalConfigMapReference, LocalSecretReference, ObjectReference, Phase,
    TransitionTimes, some_value,
};

/// An Installation: one instance of a blueprint, with its imports and exports; the
/// Installation controller runs it as an Execution and subinstallations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Installation {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: InstallationSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<InstallationStatus>,
}

/// The desired state of an Installation: its blueprint, component, imports and exports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallationSpec {
    /// Name of the Context; empty means `default`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component_descriptor: Option<ComponentDescriptorDefinition>,
    #[serde(default)]
    pub blueprint: BlueprintDefinition,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imports: Option<InstallationImports>,
    /// Blueprint import name to a spiff template evaluated over the installation's imports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import_data_mappings: Option<BTreeMap<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exports: Option<InstallationExports>,
    /// Export name to a spiff template evaluated over the blueprint's exports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub export_data_mappings: Option<BTreeMap<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub automatic_reconcile: Option<AutomaticReconcile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optimization: Option<Optimization>,
}

impl InstallationSpec {
    /// The effective context name (`default` when unset or empty).
    pub fn context(&self) -> &str {
        match self.context.as_deref() {
            None | Some("") => super::constants::DEFAULT_CONTEXT_NAME,
            Some(c) => c,
        }
    }

    pub fn data_imports(&self) -> &[DataImport] {
        self.imports
            .as_ref()
            .and_then(|i| i.data.as_deref())
            .unwrap_or_default()
    }

    pub fn target_imports(&self) -> &[TargetImport] {
        self.imports
            .as_ref()
            .and_then(|i| i.targets.as_deref())
            .unwrap_or_default()
    }

    pub fn data_exports(&self) -> &[DataExport] {
        self.exports
            .as_ref()
            .and_then(|e| e.data.as_deref())
            .unwrap_or_default()
    }

    pub fn target_exports(&self) -> &[TargetExport] {
        self.exports
            .as_ref()
            .and_then(|e| e.targets.as_deref())
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature_name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomaticReconcile {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub succeeded_reconcile: Option<SucceededReconcile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_reconcile: Option<FailedReconcile>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SucceededReconcile {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<Duration>,
    /// Standard 5-field cron syntax; overrides `interval`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cron_spec: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailedReconcile {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number_of_reconciles: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cron_spec: Option<String>,
}

/// Hints that let Landscaper skip sibling computations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Optimization {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_no_sibling_imports: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_no_sibling_exports: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallationImports {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Vec<DataImport>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<TargetImport>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallationExports {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Vec<DataExport>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<TargetExport>>,
}

/// A data import: exactly one of `dataRef`, `secretRef`, `configMapRef`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DataImport {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_ref: Option<String>,
    /// Accepted and ignored, as in Landscaper.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalSecretReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_map_ref: Option<LocalConfigMapReference>,
}

/// A target import: exactly one of `target`, `targets`, `targetListRef`, `targetMap`,
/// `targetMapRef`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetImport {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_list_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_map: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_map_ref: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DataExport {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub data_ref: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetExport {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target: String,
}

/// Where the blueprint comes from: exactly one of `ref` and `inline`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BlueprintDefinition {
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<RemoteBlueprintReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inline: Option<InlineBlueprint>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteBlueprintReference {
    /// Resource of the component descriptor that holds the blueprint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InlineBlueprint {
    /// A yamlfs tree: a map is a directory, a string is a file's content.
    #[serde(
        default,
        deserialize_with = "some_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub filesystem: Option<Value>,
}

/// The component descriptor: exactly one of `ref` and `inline` (when given at all).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ComponentDescriptorDefinition {
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<ComponentDescriptorReference>,
    /// A whole component descriptor (`meta`, `component`, ...), kept as JSON.
    #[serde(
        default,
        deserialize_with = "some_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub inline: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentDescriptorReference {
    /// An OCM repository context (typed object), kept as JSON.
    #[serde(
        default,
        deserialize_with = "some_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub repository_context: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// `status` of an Installation. Written by the controllers in Landscaper's shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallationStatus {
    #[serde(default)]
    pub observed_generation: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<Error>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_inst_cache: Option<SubInstCache>,
    #[serde(rename = "executionRef", skip_serializing_if = "Option::is_none")]
    pub execution_reference: Option<ObjectReference>,
    #[serde(rename = "jobID", skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(rename = "jobIDFinished", skip_serializing_if = "Option::is_none")]
    pub job_id_finished: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_transition_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imports_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub automatic_reconcile_status: Option<AutomaticReconcileStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependents_to_trigger: Option<Vec<DependentToTrigger>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transition_times: Option<TransitionTimes>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomaticReconcileStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number_of_reconciles: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_reconcile_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_failed: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DependentToTrigger {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// Maps subinstallation template names to object names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubInstCache {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_subs: Option<Vec<SubNamePair>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orphaned_subs: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubNamePair {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub spec_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub object_name: String,
}
