//! The configuration the applier works with, shared by the deployers that apply manifests
//! (`apis/deployer/utils/managedresource`, `readinesschecks`): manifests with their policies,
//! update strategies, readiness checks, exports and deletion groups.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// How long the readiness checks may wait (`readinessChecks.timeout` of Landscaper before
    /// v0.93's single progressing timeout); `None`: until the item's timeout.
    #[serde(default)]
    pub timeout: Option<landscaper_model::Duration>,
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

const CHECK_PATH: &str = "customHealthCheckConfiguration";

pub fn validate_custom_check(check: &CustomReadinessCheck, errors: &mut Vec<String>) {
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
