//! The Blueprint document and the InstallationTemplate, with Landscaper's field names
//! (`apis/core/v1alpha1/types_blueprint.go`, `types_installationtemplate.go`).
//!
//! Decoding follows Kubernetes' JSON decoder: field names are case-sensitive, unknown fields
//! are dropped (and reported as warnings by the loader), an explicit `null` is the zero value.

use std::collections::BTreeMap;

use landscaper_model::{InstallationExports, InstallationImports, Optimization};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// `landscaper.gardener.cloud/v1alpha1`
pub const LANDSCAPER_API_VERSION: &str = "landscaper.gardener.cloud/v1alpha1";
pub const BLUEPRINT_KIND: &str = "Blueprint";
pub const INSTALLATION_TEMPLATE_KIND: &str = "InstallationTemplate";
/// Landscaper's `LandscaperDomain`, prefixed to short target types.
pub const LANDSCAPER_DOMAIN: &str = "landscaper.gardener.cloud";
/// The default of `jsonSchemaVersion` (informational only).
pub const DEFAULT_JSON_SCHEMA_VERSION: &str = "https://json-schema.org/draft/2019-09/schema";

/// `null` decodes to the type's default, as Go's decoder leaves the zero value.
pub(crate) fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Keeps an explicit `null` as `Some(Value::Null)` (a raw JSON field that was given).
pub(crate) fn some_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// The blueprint document (`blueprint.yaml`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintDocument {
    #[serde(default, deserialize_with = "null_default")]
    pub api_version: String,
    #[serde(default, deserialize_with = "null_default")]
    pub kind: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub annotations: BTreeMap<String, String>,
    /// Informational; defaults to [`DEFAULT_JSON_SCHEMA_VERSION`].
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub json_schema_version: String,
    /// Schemas referenced as `local://<name>`.
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub local_types: BTreeMap<String, Value>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub imports: Vec<ImportDefinition>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub import_executions: Vec<TemplateExecutor>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub exports: Vec<ExportDefinition>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub subinstallations: Vec<SubinstallationTemplate>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub subinstallation_executions: Vec<TemplateExecutor>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub deploy_executions: Vec<TemplateExecutor>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub export_executions: Vec<TemplateExecutor>,
}

/// What an import or export carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ImportType {
    Data,
    Target,
    TargetList,
    TargetMap,
}

impl ImportType {
    pub fn parse(s: &str) -> Option<ImportType> {
        Some(match s {
            "data" => ImportType::Data,
            "target" => ImportType::Target,
            "targetList" => ImportType::TargetList,
            "targetMap" => ImportType::TargetMap,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ImportType::Data => "data",
            ImportType::Target => "target",
            ImportType::TargetList => "targetList",
            ImportType::TargetMap => "targetMap",
        }
    }
}

impl std::fmt::Display for ImportType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An import of the blueprint (`ImportDefinition`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportDefinition {
    #[serde(default, deserialize_with = "null_default")]
    pub name: String,
    /// `data`, `target`, `targetList` or `targetMap`; inferred from `schema`/`targetType`
    /// when empty.
    #[serde(
        rename = "type",
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub r#type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub target_type: String,
    /// Defaults to `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<DefaultValue>,
    /// Conditional imports: only evaluated when this (optional) import is satisfied.
    #[serde(
        rename = "imports",
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditional_imports: Vec<ImportDefinition>,
}

impl ImportDefinition {
    /// `required`, defaulting to true.
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(true)
    }

    /// The effective type (after defaulting), if valid.
    pub fn import_type(&self) -> Option<ImportType> {
        ImportType::parse(&self.r#type)
    }

    /// The default value, when one is given (`default.value`, which may be `null`).
    pub fn default_value(&self) -> Option<&Value> {
        self.default.as_ref().and_then(|d| d.value.as_ref())
    }
}

/// `default: {value: ...}`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DefaultValue {
    #[serde(
        default,
        deserialize_with = "some_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub value: Option<Value>,
}

/// An export of the blueprint (`ExportDefinition`): `data` or `target`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportDefinition {
    #[serde(default, deserialize_with = "null_default")]
    pub name: String,
    #[serde(
        rename = "type",
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub r#type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub target_type: String,
}

impl ExportDefinition {
    /// The effective type: `Data` or `Target` (after defaulting), if valid.
    pub fn export_type(&self) -> Option<ImportType> {
        match self.r#type.as_str() {
            "data" => Some(ImportType::Data),
            "target" => Some(ImportType::Target),
            _ => None,
        }
    }
}

/// The template engine of an execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TemplateType {
    GoTemplate,
    Spiff,
}

impl TemplateType {
    pub fn parse(s: &str) -> Option<TemplateType> {
        match s {
            "GoTemplate" => Some(TemplateType::GoTemplate),
            "Spiff" => Some(TemplateType::Spiff),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TemplateType::GoTemplate => "GoTemplate",
            TemplateType::Spiff => "Spiff",
        }
    }
}

impl std::fmt::Display for TemplateType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An execution (`TemplateExecutor`): `template` inline, or `file` in the blueprint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TemplateExecutor {
    #[serde(default, deserialize_with = "null_default")]
    pub name: String,
    #[serde(rename = "type", default, deserialize_with = "null_default")]
    pub r#type: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub file: String,
    /// A string for GoTemplate; YAML (any value) or a string for Spiff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<Value>,
}

impl TemplateExecutor {
    pub fn template_type(&self) -> Option<TemplateType> {
        TemplateType::parse(&self.r#type)
    }
}

/// An entry of `subinstallations`: a `file` in the blueprint, or an inline template.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SubinstallationTemplate {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub file: String,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub template: Option<InstallationTemplate>,
    /// The appliance's workflow block of a `file` entry (an inline template carries its own);
    /// it applies to the file's template unless that has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub appliance: Option<landscaper_model::WorkflowExtension>,
}

const INSTALLATION_TEMPLATE_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "name",
    "blueprint",
    "imports",
    "importDataMappings",
    "exports",
    "exportDataMappings",
    "optimization",
];

impl<'de> Deserialize<'de> for SubinstallationTemplate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Option::<serde_json::Map<String, Value>>::deserialize(d)?.unwrap_or_default();
        let file = match v.get("file") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(serde::de::Error::custom(format!(
                    "file: invalid type: {}, expected a string",
                    super::fs::json_kind(other)
                )));
            }
        };
        // Go's embedded `*InstallationTemplate` is allocated once one of its fields appears.
        let inline = INSTALLATION_TEMPLATE_FIELDS
            .iter()
            .any(|k| v.get(*k).is_some());
        let appliance = match v.get(landscaper_model::workflow::APPLIANCE_FIELD) {
            Some(a) if !inline && !a.is_null() => Some(
                serde_json::from_value(a.clone())
                    .map_err(|e| serde::de::Error::custom(format!("appliance: {e}")))?,
            ),
            _ => None,
        };
        let template = if inline {
            let mut rest = v;
            rest.remove("file");
            Some(
                serde_json::from_value::<InstallationTemplate>(Value::Object(rest))
                    .map_err(serde::de::Error::custom)?,
            )
        } else {
            None
        };
        Ok(SubinstallationTemplate {
            file,
            template,
            appliance,
        })
    }
}

/// A subinstallation (`InstallationTemplate`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallationTemplate {
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub api_version: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub kind: String,
    #[serde(default, deserialize_with = "null_default")]
    pub name: String,
    #[serde(default, deserialize_with = "null_default")]
    pub blueprint: InstallationTemplateBlueprint,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "is_empty_imports"
    )]
    pub imports: InstallationImports,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import_data_mappings: Option<BTreeMap<String, Value>>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "is_empty_exports"
    )]
    pub exports: InstallationExports,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export_data_mappings: Option<BTreeMap<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimization: Option<Optimization>,
    /// The appliance's workflow conditions and policies (`landscaper_model::workflow`); not
    /// Landscaper's, which ignores it. Not in [`INSTALLATION_TEMPLATE_FIELDS`]: alone it does not
    /// make an inline template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appliance: Option<landscaper_model::WorkflowExtension>,
}

fn is_empty_imports(i: &InstallationImports) -> bool {
    i.data.as_ref().is_none_or(Vec::is_empty) && i.targets.as_ref().is_none_or(Vec::is_empty)
}

fn is_empty_exports(e: &InstallationExports) -> bool {
    e.data.as_ref().is_none_or(Vec::is_empty) && e.targets.as_ref().is_none_or(Vec::is_empty)
}

/// `blueprint` of an InstallationTemplate: `ref` (`cd://...`) or an inline `filesystem`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InstallationTemplateBlueprint {
    #[serde(
        rename = "ref",
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<Value>,
}
