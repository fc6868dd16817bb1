//! `helm.deployer.landscaper.gardener.cloud/v1alpha1` `ProviderConfiguration`
//! (`apis/deployer/helm/v1alpha1/types_provider.go`), decoded as Landscaper's decoder does
//! (unknown fields are ignored), defaulted and validated (`apis/deployer/helm/v1alpha1/validation`).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::applier::config::{
    DeletionGroupDefinition, Export, Exports, ReadinessCheckConfiguration, UpdateStrategy,
    validate_custom_check, validate_deletion_group,
};
pub use crate::manifest::config::ConfigError;
use crate::manifest::config::validate_continuous_reconcile;
pub use landscaper_sources::ChartSpec;

pub const API_GROUP: &str = "helm.deployer.landscaper.gardener.cloud";
pub const V1ALPHA1: &str = "helm.deployer.landscaper.gardener.cloud/v1alpha1";

/// The effective configuration (defaults applied).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProviderConfiguration {
    pub update_strategy: UpdateStrategy,
    pub readiness_checks: ReadinessCheckConfiguration,
    pub chart: ChartSpec,
    /// The release name (required).
    pub name: String,
    /// The release namespace (required).
    pub namespace: String,
    pub create_namespace: bool,
    /// The values (an object; `null` when not set).
    pub values: Value,
    /// Deprecated, merged into `exports`.
    pub exports_from_manifests: Vec<Export>,
    pub exports: Option<Exports>,
    /// Parsed and validated by Landscaper, without effect.
    pub continuous_reconcile: Option<Value>,
    /// `helmDeployment` (default true: a real Helm release).
    pub helm_deployment: bool,
    pub helm_deployment_config: Option<HelmDeploymentConfig>,
    pub deletion_groups: Vec<DeletionGroupDefinition>,
    pub deletion_groups_during_update: Vec<DeletionGroupDefinition>,
}

/// `helmDeploymentConfig`: the arguments of `helm install`, `upgrade` and `uninstall`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct HelmDeploymentConfig {
    #[serde(default)]
    pub install: Option<Map<String, Value>>,
    #[serde(default)]
    pub upgrade: Option<Map<String, Value>>,
    #[serde(default)]
    pub uninstall: Option<Map<String, Value>>,
}

/// The wire shape.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    #[serde(default)]
    update_strategy: Option<String>,
    #[serde(default)]
    readiness_checks: Option<ReadinessCheckConfiguration>,
    #[serde(default)]
    chart: Option<ChartSpec>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    create_namespace: Option<bool>,
    #[serde(default)]
    values: Option<Value>,
    #[serde(default)]
    exports_from_manifests: Option<Vec<Export>>,
    #[serde(default)]
    exports: Option<Exports>,
    #[serde(default)]
    continuous_reconcile: Option<Value>,
    #[serde(default)]
    helm_deployment: Option<bool>,
    #[serde(default)]
    helm_deployment_config: Option<HelmDeploymentConfig>,
    #[serde(default)]
    deletion_groups: Option<Vec<DeletionGroupDefinition>>,
    #[serde(default)]
    deletion_groups_during_update: Option<Vec<DeletionGroupDefinition>>,
}

/// Checks `apiVersion` and `kind` the way the scheme decoder does; both may be omitted.
fn check_type(value: &Value) -> Result<(), ConfigError> {
    let Value::Object(map) = value else {
        return Err(ConfigError::Parse(
            "unable to decode ProviderConfiguration: expected an object".into(),
        ));
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
    let kind = text("kind")?;
    if !kind.is_empty() && kind != "ProviderConfiguration" {
        return Err(ConfigError::Parse(format!(
            "no kind {kind:?} is registered for version {api_version:?} in scheme"
        )));
    }
    match api_version.as_str() {
        "" | V1ALPHA1 => Ok(()),
        other => Err(ConfigError::Parse(format!(
            "no kind \"ProviderConfiguration\" is registered for version {other:?} in scheme"
        ))),
    }
}

const INSTALL_ARGUMENTS: &[&str] = &[
    "atomic",
    "timeout",
    "force",
    "skipSchemaValidation",
    "takeOwnership",
    "wait",
];
const UNINSTALL_ARGUMENTS: &[&str] = &["timeout", "wait"];

fn validate_helm_arguments(
    path: &str,
    conf: Option<&Map<String, Value>>,
    valid: &[&str],
    errors: &mut Vec<String>,
) {
    for key in conf.into_iter().flat_map(Map::keys) {
        if !valid.contains(&key.as_str()) {
            let supported: Vec<String> = valid.iter().map(|v| format!("{v:?}")).collect();
            errors.push(format!(
                "{path}: Unsupported value: {key:?}: supported values: {}",
                supported.join(", ")
            ));
        }
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
        check_type(value)?;
        let wire = Wire::deserialize(value).map_err(|e| ConfigError::Parse(e.to_string()))?;
        let values = match wire.values {
            None | Some(Value::Null) => Value::Null,
            Some(v @ Value::Object(_)) => v,
            Some(other) => {
                return Err(ConfigError::Parse(format!(
                    "values: must be an object, not {other}"
                )));
            }
        };
        Ok(ProviderConfiguration {
            update_strategy: match wire.update_strategy {
                Some(t) if !t.is_empty() => UpdateStrategy::from(t),
                _ => UpdateStrategy::Update,
            },
            readiness_checks: wire.readiness_checks.unwrap_or_default(),
            chart: wire.chart.unwrap_or_default(),
            name: wire.name.unwrap_or_default(),
            namespace: wire.namespace.unwrap_or_default(),
            create_namespace: wire.create_namespace.unwrap_or(false),
            values,
            exports_from_manifests: wire.exports_from_manifests.unwrap_or_default(),
            exports: wire.exports,
            continuous_reconcile: wire.continuous_reconcile.filter(|v| !v.is_null()),
            helm_deployment: wire.helm_deployment.unwrap_or(true),
            helm_deployment_config: wire.helm_deployment_config,
            deletion_groups: wire.deletion_groups.unwrap_or_default(),
            deletion_groups_during_update: wire.deletion_groups_during_update.unwrap_or_default(),
        })
    }

    /// `ValidateProviderConfiguration` of the helm deployer.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut errors = Vec::new();
        for check in self
            .readiness_checks
            .custom_readiness_checks
            .iter()
            .flatten()
        {
            validate_custom_check(check, &mut errors);
        }
        self.validate_chart(&mut errors);
        if let Some(config) = &self.helm_deployment_config {
            let path = "helmDeploymentConfig";
            validate_helm_arguments(
                &format!("{path}.install"),
                config.install.as_ref(),
                INSTALL_ARGUMENTS,
                &mut errors,
            );
            validate_helm_arguments(
                &format!("{path}.upgrade"),
                config.upgrade.as_ref(),
                INSTALL_ARGUMENTS,
                &mut errors,
            );
            validate_helm_arguments(
                &format!("{path}.uninstall"),
                config.uninstall.as_ref(),
                UNINSTALL_ARGUMENTS,
                &mut errors,
            );
        }
        validate_continuous_reconcile(self.continuous_reconcile.as_ref(), &mut errors);
        for (i, group) in self.deletion_groups.iter().enumerate() {
            if let Err(e) = validate_deletion_group(group) {
                errors.push(format!("deletionGroups[{i}]: {e}"));
            }
        }
        if self.name.is_empty() {
            errors.push("name: Required value: must not be empty".into());
        }
        if self.namespace.is_empty() {
            errors.push("namespace: Required value: must not be empty".into());
        }
        let mut keys = std::collections::BTreeSet::new();
        for (i, export) in self.exports_from_manifests.iter().enumerate() {
            let path = format!("exportsFromManifests[{i}]");
            if export.key.is_empty() {
                errors.push(format!("{path}.key: Required value: must not be empty"));
            }
            if !keys.insert(export.key.as_str()) {
                errors.push(format!(
                    "{path}.key: Duplicate value: \"duplicated key {} is not allowed\"",
                    export.key
                ));
            }
            if export.json_path.is_empty() {
                errors.push(format!(
                    "{path}.jsonPath: Required value: must not be empty"
                ));
            }
            if let Some(resource) = &export.from_resource {
                for (field, value) in [
                    ("apiGroup", &resource.api_version),
                    ("kind", &resource.kind),
                    ("name", &resource.name),
                    ("namespace", &resource.namespace),
                ] {
                    if value.is_empty() {
                        errors.push(format!(
                            "{path}.resource.{field}: Required value: must not be empty"
                        ));
                    }
                }
            }
        }
        match errors.len() {
            0 => Ok(()),
            1 => Err(ConfigError::Invalid(errors.remove(0))),
            _ => Err(ConfigError::Invalid(format!("[{}]", errors.join(", ")))),
        }
    }

    fn validate_chart(&self, errors: &mut Vec<String>) {
        let chart = &self.chart;
        if chart.reference.is_empty()
            && chart.archive.is_none()
            && chart.from_resource.is_none()
            && chart.helm_chart_repo.is_none()
            && chart.resource_ref.is_empty()
        {
            errors.push("chart: Required value: must not be empty: either ref, fromResource, helmChartRepo or resourceRef must be set".into());
            return;
        }
        if let Some(archive) = &chart.archive {
            if archive.raw.is_empty() && archive.remote.is_none() {
                errors.push("chart.archive.raw.remote: Required value: must not be empty".into());
            }
            if archive.remote.as_ref().is_some_and(|r| r.url.is_empty()) {
                errors.push("chart.archive.remote.url: Required value: must not be empty".into());
            }
        } else if let Some(repo) = &chart.helm_chart_repo {
            for (field, value) in [
                ("helmChartRepoUrl", &repo.helm_chart_repo_url),
                ("helmChartName", &repo.helm_chart_name),
                ("helmChartVersion", &repo.helm_chart_version),
            ] {
                if value.is_empty() {
                    errors.push(format!(
                        "chart.helmChartRepo.{field}: Required value: must not be empty"
                    ));
                }
            }
        }
    }

    /// All exports: `exportsFromManifests` first, then `exports.exports` (as Landscaper
    /// constructs the value exports).
    pub fn all_exports(&self) -> Exports {
        let mut exports = self.exports_from_manifests.clone();
        if let Some(e) = &self.exports {
            exports.extend(e.exports.iter().cloned());
        }
        Exports { exports }
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
