//! `manifest.deployer.landscaper.gardener.cloud` `ProviderConfiguration` (v1alpha2, and v1alpha1
//! converted to it), decoded as Landscaper's decoder does (unknown fields are ignored), defaulted
//! and validated (`apis/deployer/manifest/validation`).

use serde::Deserialize;
use serde_json::Value;

pub const API_GROUP: &str = "manifest.deployer.landscaper.gardener.cloud";
pub const V1ALPHA1: &str = "manifest.deployer.landscaper.gardener.cloud/v1alpha1";
pub const V1ALPHA2: &str = "manifest.deployer.landscaper.gardener.cloud/v1alpha2";

pub use crate::applier::config::*;

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

pub(crate) fn validate_continuous_reconcile(spec: Option<&Value>, errors: &mut Vec<String>) {
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

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
