//! `manifest.deployer.landscaper.gardener.cloud` `ProviderConfiguration` (v1alpha2, and v1alpha1
//! converted to it), decoded as Landscaper's decoder does (unknown fields are ignored), defaulted
//! and validated (`apis/deployer/manifest/validation`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const API_GROUP: &str = "manifest.deployer.landscaper.gardener.cloud";
pub const V1ALPHA1: &str = "manifest.deployer.landscaper.gardener.cloud/v1alpha1";
pub const V1ALPHA2: &str = "manifest.deployer.landscaper.gardener.cloud/v1alpha2";

/// A string enum that keeps values Landscaper does not know: Go's typed strings accept any
/// value, and what an unknown one does is decided where it is used.
macro_rules! open_string_enum {
    ($(#[$meta:meta])* $name:ident { $first:ident => $first_text:literal, $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
        #[serde(from = "String", into = "String")]
        pub enum $name {
            #[default]
            $first,
            $($variant,)+
            Other(String),
        }

        impl From<String> for $name {
            fn from(text: String) -> $name {
                match text.as_str() {
                    $first_text => $name::$first,
                    $($text => $name::$variant,)+
                    _ => $name::Other(text),
                }
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.as_str().to_string()
            }
        }

        impl $name {
            pub fn as_str(&self) -> &str {
                match self {
                    $name::$first => $first_text,
                    $($name::$variant => $text,)+
                    $name::Other(text) => text,
                }
            }
        }
    };
}

open_string_enum!(
    /// How existing objects are changed (default `update`); unknown values fail when an object
    /// is updated.
    UpdateStrategy {
        Update => "update",
        Patch => "patch",
        Merge => "merge",
        MergeOverwrite => "mergeOverwrite",
    }
);

open_string_enum!(
    /// What the deployer may do with an object (default `manage`); an unknown value behaves like
    /// `manage`.
    ManifestPolicy {
        Manage => "manage",
        Fallback => "fallback",
        Keep => "keep",
        Ignore => "ignore",
        Immutable => "immutable",
    }
);

/// The effective configuration (defaults applied).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProviderConfiguration {
    pub update_strategy: UpdateStrategy,
    pub readiness_checks: ReadinessCheckConfiguration,
    pub manifests: Vec<Manifest>,
    pub exports: Option<Exports>,
    /// Parsed and validated by Landscaper, without effect (hooks are never executed).
    pub continuous_reconcile: Option<Value>,
    pub deletion_groups: Vec<DeletionGroupDefinition>,
    pub deletion_groups_during_update: Vec<DeletionGroupDefinition>,
}

/// One entry of `manifests[]`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    #[serde(default, deserialize_with = "policy_or_default")]
    pub policy: ManifestPolicy,
    #[serde(default)]
    pub manifest: Option<Value>,
    #[serde(default)]
    pub annotate_before_create: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub annotate_before_delete: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub patch_after_deployment: Option<Value>,
    #[serde(default)]
    pub patch_before_delete: Option<Value>,
}

fn policy_or_default<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ManifestPolicy, D::Error> {
    let text = Option::<String>::deserialize(d)?.unwrap_or_default();
    Ok(if text.is_empty() {
        ManifestPolicy::Manage
    } else {
        ManifestPolicy::from(text)
    })
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadinessCheckConfiguration {
    #[serde(default)]
    pub disable_default: bool,
    #[serde(default, rename = "custom")]
    pub custom_readiness_checks: Option<Vec<CustomReadinessCheck>>,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomReadinessCheck {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub disabled: bool,
    #[serde(default, rename = "resourceSelector")]
    pub resources: Vec<TypedObjectReference>,
    #[serde(default)]
    pub label_selector: Option<LabelSelectorSpec>,
    #[serde(default)]
    pub requirements: Vec<RequirementSpec>,
    #[serde(default)]
    pub target_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypedObjectReference {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorSpec {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default, rename = "matchLabels")]
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequirementSpec {
    #[serde(default)]
    pub json_path: String,
    #[serde(default)]
    pub operator: String,
    /// Raw `{value: …}` objects; the `value` key is checked when the requirement is evaluated.
    #[serde(default, rename = "values")]
    pub values: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct Exports {
    #[serde(default)]
    pub exports: Vec<Export>,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Export {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub json_path: String,
    #[serde(default)]
    pub from_resource: Option<TypedObjectReference>,
    #[serde(default, rename = "fromObjectRef")]
    pub from_object_reference: Option<FromObjectReference>,
    #[serde(default)]
    pub target_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FromObjectReference {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub json_path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionGroupDefinition {
    #[serde(default)]
    pub predefined_resource_group: Option<PredefinedResourceGroup>,
    #[serde(default)]
    pub custom_resource_group: Option<CustomResourceGroup>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PredefinedResourceGroup {
    #[serde(default, rename = "type")]
    pub r#type: String,
    #[serde(default)]
    pub force_delete: bool,
}

pub const GROUP_NAMESPACED: &str = "namespaced-resources";
pub const GROUP_CLUSTER_SCOPED: &str = "cluster-scoped-resources";
pub const GROUP_CRDS: &str = "crds";
pub const GROUP_EMPTY: &str = "empty";

#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceGroup {
    #[serde(default)]
    pub resources: Vec<ResourceType>,
    #[serde(default)]
    pub force_delete: bool,
    #[serde(default)]
    pub delete_all_resources: bool,
    #[serde(default)]
    pub target_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceType {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub names: Vec<String>,
    #[serde(default)]
    pub namespaces: Vec<String>,
}

/// The v1alpha2 wire shape.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct V1Alpha2 {
    #[serde(default)]
    update_strategy: Option<String>,
    #[serde(default)]
    readiness_checks: Option<ReadinessCheckConfiguration>,
    #[serde(default)]
    manifests: Option<Vec<Manifest>>,
    #[serde(default)]
    exports: Option<Exports>,
    #[serde(default)]
    continuous_reconcile: Option<Value>,
    #[serde(default)]
    deletion_groups: Option<Vec<DeletionGroupDefinition>>,
    #[serde(default)]
    deletion_groups_during_update: Option<Vec<DeletionGroupDefinition>>,
}

/// The v1alpha1 wire shape: `manifests` are raw objects.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct V1Alpha1 {
    #[serde(default)]
    update_strategy: Option<String>,
    #[serde(default)]
    readiness_checks: Option<ReadinessCheckConfiguration>,
    #[serde(default)]
    manifests: Option<Vec<Option<Value>>>,
    #[serde(default)]
    exports: Option<Exports>,
    #[serde(default)]
    deletion_groups: Option<Vec<DeletionGroupDefinition>>,
    #[serde(default)]
    deletion_groups_during_update: Option<Vec<DeletionGroupDefinition>>,
}

/// Why a configuration is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// It does not decode (`ParseProviderConfiguration`).
    #[error("{0}")]
    Parse(String),
    /// It decodes but is invalid (`ValidateProviderConfiguration`).
    #[error("{0}")]
    Invalid(String),
}

fn strategy(text: Option<String>) -> UpdateStrategy {
    match text {
        Some(t) if !t.is_empty() => UpdateStrategy::from(t),
        _ => UpdateStrategy::Update,
    }
}

/// Checks `apiVersion` and `kind` the way the scheme decoder does; both may be omitted.
pub(crate) fn check_type(value: &Value, kind: &str) -> Result<String, ConfigError> {
    let Value::Object(map) = value else {
        return Err(ConfigError::Parse(format!(
            "unable to decode {kind}: expected an object"
        )));
    };
    let text = |key: &str| -> Result<String, ConfigError> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(ConfigError::Parse(format!(
                "{key} must be a string, not {other}"
            ))),
        }
    };
    let api_version = text("apiVersion")?;
    let actual_kind = text("kind")?;
    if !actual_kind.is_empty() && actual_kind != kind {
        return Err(ConfigError::Parse(format!(
            "no kind {actual_kind:?} is registered for version {api_version:?} in scheme"
        )));
    }
    match api_version.as_str() {
        "" | V1ALPHA2 | V1ALPHA1 => Ok(api_version),
        other => Err(ConfigError::Parse(format!(
            "no kind {kind:?} is registered for version {other:?} in scheme"
        ))),
    }
}

impl ProviderConfiguration {
    /// Decodes, defaults and validates a deploy item's `spec.config`.
    pub fn parse(value: &Value) -> Result<ProviderConfiguration, ConfigError> {
        let config = ProviderConfiguration::decode(value)?;
        config.validate()?;
        Ok(config)
    }

    /// Decodes and defaults without validation.
    pub fn decode(value: &Value) -> Result<ProviderConfiguration, ConfigError> {
        let version = check_type(value, "ProviderConfiguration")?;
        let parse_error = |e: serde_json::Error| ConfigError::Parse(e.to_string());
        if version == V1ALPHA1 {
            let v1 = V1Alpha1::deserialize(value).map_err(parse_error)?;
            return Ok(ProviderConfiguration {
                update_strategy: strategy(v1.update_strategy),
                readiness_checks: v1.readiness_checks.unwrap_or_default(),
                manifests: v1
                    .manifests
                    .unwrap_or_default()
                    .into_iter()
                    .map(|manifest| Manifest {
                        policy: ManifestPolicy::Manage,
                        manifest,
                        ..Default::default()
                    })
                    .collect(),
                exports: v1.exports,
                continuous_reconcile: None,
                deletion_groups: v1.deletion_groups.unwrap_or_default(),
                deletion_groups_during_update: v1.deletion_groups_during_update.unwrap_or_default(),
            });
        }
        let v2 = V1Alpha2::deserialize(value).map_err(parse_error)?;
        Ok(ProviderConfiguration {
            update_strategy: strategy(v2.update_strategy),
            readiness_checks: v2.readiness_checks.unwrap_or_default(),
            manifests: v2.manifests.unwrap_or_default(),
            exports: v2.exports,
            continuous_reconcile: v2.continuous_reconcile.filter(|v| !v.is_null()),
            deletion_groups: v2.deletion_groups.unwrap_or_default(),
            deletion_groups_during_update: v2.deletion_groups_during_update.unwrap_or_default(),
        })
    }

    /// `ValidateProviderConfiguration`: manifests, readiness checks, continuousReconcile and
    /// deletionGroups (not exports, not deletionGroupsDuringUpdate, as in Landscaper).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut errors = Vec::new();
        for (i, m) in self.manifests.iter().enumerate() {
            if m.manifest.as_ref().is_none_or(Value::is_null) {
                errors.push(format!(
                    "[{i}].manifest: Required value: manifest must be defined"
                ));
            }
        }
        for check in self
            .readiness_checks
            .custom_readiness_checks
            .iter()
            .flatten()
        {
            validate_custom_check(check, &mut errors);
        }
        validate_continuous_reconcile(self.continuous_reconcile.as_ref(), &mut errors);
        for (i, group) in self.deletion_groups.iter().enumerate() {
            if let Err(e) = validate_deletion_group(group) {
                errors.push(format!("deletionGroups[{i}]: {e}"));
            }
        }
        match errors.len() {
            0 => Ok(()),
            1 => Err(ConfigError::Invalid(errors.remove(0))),
            _ => Err(ConfigError::Invalid(format!("[{}]", errors.join(", ")))),
        }
    }
}

const CHECK_PATH: &str = "customHealthCheckConfiguration";

fn validate_custom_check(check: &CustomReadinessCheck, errors: &mut Vec<String>) {
    if check.name.is_empty() {
        errors.push(format!(
            "{CHECK_PATH}.name: Required value: must not be empty"
        ));
    }
    if check.resources.is_empty() && check.label_selector.is_none() {
        errors.push(format!(
            "{CHECK_PATH}.resourceSelector/labelSelector: Required value: must have either a resource or a set of labels"
        ));
    }
    if let Some(selector) = &check.label_selector
        && selector.labels.is_empty()
    {
        errors.push(format!(
            "{CHECK_PATH}.labelSelector.matchLabels: Required value: must have at least one label to select on"
        ));
    }
    if check.requirements.is_empty() {
        errors.push(format!(
            "{CHECK_PATH}.requirements: Required value: must have at least one resource requirement"
        ));
    }
    for requirement in &check.requirements {
        let path = format!("{CHECK_PATH}.requirements");
        if requirement.json_path.is_empty() {
            errors.push(format!(
                "{path}.jsonPath: Required value: JSON path must be defined"
            ));
        } else if let Err(e) = super::jsonpath::KubePath::parse(&requirement.json_path) {
            errors.push(format!(
                "{path}.jsonPath: Invalid value: {:?}: is not a valid JSON path template ({e})",
                requirement.json_path
            ));
        }
        let op = requirement.operator.as_str();
        if !super::readiness::OPERATORS.contains(&op) {
            errors.push(format!(
                "{path}.operator: Invalid value: {op:?}: is not a valid operator"
            ));
        }
        if op != "!" && op != "exists" && requirement.values.is_empty() {
            errors.push(format!(
                "{path}.value: Required value: must have at least one value to compare to"
            ));
        }
        if op != "in" && op != "notin" && requirement.values.len() > 1 {
            errors.push(format!(
                "{path}.value: Invalid value: {op:?}: must have exactly one value to compare to"
            ));
        }
    }
}

fn validate_continuous_reconcile(spec: Option<&Value>, errors: &mut Vec<String>) {
    let Some(Value::Object(spec)) = spec else {
        return;
    };
    let set = |k: &str| spec.get(k).is_some_and(|v| !v.is_null() && v != "");
    // An empty spec is valid; otherwise exactly one of the two (the cron syntax is not checked).
    if set("cron") && set("every") {
        errors.push(
            "continuousReconcile: Forbidden: exactly one of Cron, Every may be set".to_string(),
        );
    }
}

/// The structural checks of a deletion group (also done when a group is built at runtime).
pub fn validate_deletion_group(group: &DeletionGroupDefinition) -> Result<(), String> {
    match (
        &group.predefined_resource_group,
        &group.custom_resource_group,
    ) {
        (Some(_), Some(_)) => {
            Err("predefinedResourceGroup and customResourceGroup must not both be set".into())
        }
        (None, None) => {
            Err("either predefinedResourceGroup or customResourceGroup must be set".into())
        }
        (Some(predefined), None) => match predefined.r#type.as_str() {
            GROUP_NAMESPACED | GROUP_CLUSTER_SCOPED | GROUP_CRDS | GROUP_EMPTY => Ok(()),
            "" => Err("predefinedResourceGroup.type: Required value: must not be empty".into()),
            other => Err(format!(
                "predefinedResourceGroup.type: Unsupported value: {other:?}: supported values: \"{GROUP_NAMESPACED}\", \"{GROUP_CLUSTER_SCOPED}\", \"{GROUP_CRDS}\", \"{GROUP_EMPTY}\""
            )),
        },
        (None, Some(custom)) => {
            if custom.resources.is_empty() {
                Err("customResourceGroup.resources: Required value: must not be empty".into())
            } else {
                Ok(())
            }
        }
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
