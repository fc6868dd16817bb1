//! Landscaper's kubernetes-manifest deployer (`landscaper.gardener.cloud/kubernetes-manifest`):
//! parses its provider configuration and status, and hands the manifests to the
//! [applier](crate::applier), which applies them to the target cluster, waits for readiness,
//! reads exports, and removes what the item manages when it is deleted.

pub mod config;

use std::sync::Arc;

use landscaper_model::DeployItem;
use landscaper_model::constants::MANIFEST_DEPLOYER_TYPE;
use serde_json::Value;

use self::config::{ConfigError, ProviderConfiguration};
pub use crate::applier::status::ProviderStatus;
use crate::applier::{self, Desired, Naming};
pub use crate::applier::{ClientFactory, KubeClientFactory};
use crate::{BoxFuture, DeleteResult, DeployRequest, Deployer, DeployerError, ReconcileResult};

/// See the module documentation.
pub struct ManifestDeployer {
    clients: Arc<dyn ClientFactory>,
}

impl Default for ManifestDeployer {
    fn default() -> ManifestDeployer {
        ManifestDeployer::new()
    }
}

impl ManifestDeployer {
    /// The deployer talking to real clusters.
    pub fn new() -> ManifestDeployer {
        ManifestDeployer::with_client_factory(Arc::new(KubeClientFactory::default()))
    }

    pub fn with_client_factory(clients: Arc<dyn ClientFactory>) -> ManifestDeployer {
        ManifestDeployer { clients }
    }
}

const INIT_OPERATION: &str = "InitManifestOperation";
const RECONCILE_OPERATION: &str = "ReconcileManifests";
const DELETE_OPERATION: &str = "deleteManifestsInGroups";

/// The manifest deployer's operations and timeout checkpoints (`pkg/deployer/manifest`).
pub const NAMING: Naming = Naming {
    managed_label: crate::applier::apply::MANAGED_DEPLOY_ITEM_LABEL,
    status_api_version: config::V1ALPHA2,
    reconcile_operation: RECONCILE_OPERATION,
    delete_operation: DELETE_OPERATION,
    default_readiness_operation: "DefaultCheckResourcesReadinessManifest",
    custom_readiness_operation: "CustomCheckResourcesReadinessManifest",
    checkpoint_before_readiness: "manifest deployer: before readiness check",
    checkpoint_default_readiness: "manifest deployer: default readiness checks",
    checkpoint_custom_readiness: "manifest deployer: custom readiness checks",
    checkpoint_before_exports: "manifest deployer: before reading export values",
};

impl ProviderConfiguration {
    /// The configuration as the applier takes it.
    pub fn desired(&self) -> Desired<'_> {
        Desired {
            manifests: &self.manifests,
            update_strategy: &self.update_strategy,
            readiness_checks: &self.readiness_checks,
            exports: self.exports.as_ref(),
            deletion_groups: &self.deletion_groups,
            deletion_groups_during_update: &self.deletion_groups_during_update,
            naming: &NAMING,
            default_namespace: None,
        }
    }
}

fn config_error(e: ConfigError, what: &str) -> DeployerError {
    let reason = match (&e, what) {
        (ConfigError::Invalid(_), _) => "ValidateProviderConfiguration".to_string(),
        (ConfigError::Parse(_), what) => format!("Parse{what}"),
    };
    DeployerError::configuration_problem(INIT_OPERATION, &reason, e.to_string())
}

fn parse_config(item: &DeployItem, deleting: bool) -> Result<ProviderConfiguration, DeployerError> {
    match item.spec.config.as_ref() {
        None | Some(Value::Null) if deleting => Ok(ProviderConfiguration::default()),
        config => ProviderConfiguration::parse(config.unwrap_or(&Value::Null))
            .map_err(|e| config_error(e, "ProviderConfiguration")),
    }
}

fn previous_status(item: &DeployItem) -> Result<Option<ProviderStatus>, DeployerError> {
    match item
        .status
        .as_ref()
        .and_then(|s| s.provider_status.as_ref())
    {
        None | Some(Value::Null) => Ok(None),
        Some(value) => ProviderStatus::parse(value)
            .map(Some)
            .map_err(|e| config_error(e, "ProviderStatus")),
    }
}

impl ManifestDeployer {
    async fn reconcile_item(
        &self,
        request: DeployRequest<'_>,
    ) -> Result<ReconcileResult, DeployerError> {
        let item = request.item;
        let config = parse_config(item, false)?;
        let previous = previous_status(item)?.unwrap_or_else(|| ProviderStatus::new(Vec::new()));
        applier::reconcile(
            self.clients.as_ref(),
            request,
            &config.desired(),
            &previous.managed_resources,
        )
        .await
    }

    async fn delete_item(&self, request: DeployRequest<'_>) -> Result<DeleteResult, DeployerError> {
        let item = request.item;
        let config = parse_config(item, true)?;
        let Some(previous) = previous_status(item)? else {
            return Ok(DeleteResult::Deleted);
        };
        applier::delete(
            self.clients.as_ref(),
            request,
            &config.deletion_groups,
            &NAMING,
            &previous.managed_resources,
        )
        .await
    }
}

impl Deployer for ManifestDeployer {
    fn item_type(&self) -> &str {
        MANIFEST_DEPLOYER_TYPE
    }

    /// Every `targetName` of the configuration (readiness checks, exports, deletion groups).
    fn secondary_target_names(&self, item: &DeployItem) -> Vec<String> {
        match item.spec.config.as_ref() {
            Some(config) => ProviderConfiguration::decode(config)
                .map(|c| c.desired().secondary_target_names())
                .unwrap_or_default(),
            None => Vec::new(),
        }
    }

    fn reconcile<'a>(
        &'a self,
        request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<ReconcileResult, DeployerError>> {
        Box::pin(self.reconcile_item(request))
    }

    fn delete<'a>(
        &'a self,
        request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<DeleteResult, DeployerError>> {
        Box::pin(self.delete_item(request))
    }
}

#[cfg(test)]
mod tests;
