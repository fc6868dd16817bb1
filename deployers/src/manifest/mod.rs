//! Landscaper's kubernetes-manifest deployer (`landscaper.gardener.cloud/kubernetes-manifest`):
//! applies the manifests of its configuration to the target cluster, waits for readiness,
//! reads exports, and removes what it manages when the item is deleted.
//!
//! ```text
//! reconcile: parse config + previous status ─► execution groups (CRDs, cluster, namespaced)
//!   ─► apply each object by policy and update strategy ─► delete orphans of the last revision
//!   ─► readiness (default + custom) ─► exports ─► patchAfterDeployment ─► Succeeded
//! delete:    filter by policy ─► annotate/patch before delete ─► delete group by group
//! ```
//!
//! Landscaper polls readiness, exports and deletion in-process until the item's timeout; this
//! deployer answers `Progressing` (or `DeleteResult::Pending`) instead and the dispatcher asks
//! again, enforcing the timeout. While the item waits in `Progressing` with an unchanged
//! provider status, the reason it waits is returned as a (recoverable) error, so it shows in
//! `status.lastError`.

pub mod apply;
pub mod config;
pub mod delete;
pub mod exports;
pub mod jsonpath;
pub mod readiness;
pub mod status;
pub mod targets;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use landscaper_model::constants::{
    ERR_CONFIGURATION_PROBLEM, ERR_UNAUTHORIZED, MANIFEST_DEPLOYER_TYPE,
};
use landscaper_model::{DeployItem, Phase, Target, kubeconfig_text};
use serde_json::Value;

use self::config::{ConfigError, ProviderConfiguration};
use self::delete::DeleteError;
use self::exports::ExportError;
use self::status::{ManagedResourceStatus, ProviderStatus};
use self::targets::TargetClients;
use crate::kubernetes::{ClusterClient, ClusterError, KubeClusterClient};
use crate::{BoxFuture, DeleteResult, DeployRequest, Deployer, DeployerError, ReconcileResult};

/// Builds the cluster client for an item's Target.
pub trait ClientFactory: Send + Sync {
    fn client<'a>(
        &'a self,
        target: Option<&'a Target>,
    ) -> BoxFuture<'a, Result<Arc<dyn ClusterClient>, DeployerError>>;
}

/// Clients on kube-rs from the Target's kubeconfig, kept per kubeconfig text.
#[derive(Default)]
pub struct KubeClientFactory {
    clients: Mutex<HashMap<String, Arc<KubeClusterClient>>>,
}

/// At most this many clients are kept; beyond, the cache starts afresh.
const MAX_CACHED_CLIENTS: usize = 32;

impl KubeClientFactory {
    fn cached(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<KubeClusterClient>>> {
        self.clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn configuration_problem(
    operation: &str,
    reason: &str,
    message: impl Into<String>,
) -> DeployerError {
    DeployerError::new(operation, reason, message).with_code(ERR_CONFIGURATION_PROBLEM)
}

/// The kubeconfig the deployer connects with: the model's [`kubeconfig_text`], where a
/// configuration that is not an object and holds nothing but blanks (or no configuration)
/// counts as none.
fn target_kubeconfig(target: &Target) -> Option<String> {
    let config = target.spec.config.as_ref();
    kubeconfig_text(config)
        .filter(|text| config.is_some_and(serde_json::Value::is_object) || !text.trim().is_empty())
}

impl ClientFactory for KubeClientFactory {
    fn client<'a>(
        &'a self,
        target: Option<&'a Target>,
    ) -> BoxFuture<'a, Result<Arc<dyn ClusterClient>, DeployerError>> {
        Box::pin(async move {
            let text = target.and_then(target_kubeconfig).ok_or_else(|| {
                configuration_problem(
                    "ensureTargetAccess",
                    "NoKubeconfig",
                    "the deploy item needs a kubernetes-cluster target with a kubeconfig",
                )
            })?;
            if let Some(client) = self.cached().get(&text) {
                let client: Arc<dyn ClusterClient> = client.clone();
                return Ok(client);
            }
            let client = KubeClusterClient::from_kubeconfig(&text)
                .await
                .map(Arc::new)
                .map_err(|e| {
                    let target = target.map(|t| {
                        format!(
                            "{}/{}",
                            t.metadata.namespace.as_deref().unwrap_or_default(),
                            t.metadata.name.as_deref().unwrap_or_default()
                        )
                    });
                    configuration_problem(
                        "ensureTargetAccess",
                        "InvalidKubeconfig",
                        format!(
                            "target {}: spec.config.kubeconfig: {e}",
                            target.unwrap_or_default()
                        ),
                    )
                })?;
            let mut cache = self.cached();
            if cache.len() >= MAX_CACHED_CLIENTS {
                cache.clear();
            }
            cache.insert(text, client.clone());
            Ok(client)
        })
    }
}

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

fn config_error(e: ConfigError, what: &str) -> DeployerError {
    let reason = match (&e, what) {
        (ConfigError::Invalid(_), _) => "ValidateProviderConfiguration".to_string(),
        (ConfigError::Parse(_), what) => format!("Parse{what}"),
    };
    configuration_problem(INIT_OPERATION, &reason, e.to_string())
}

/// A cluster error as a deployer error: unauthorized is final, everything else is retried.
fn cluster_error(operation: &str, reason: &str, e: &ClusterError) -> DeployerError {
    let error = DeployerError::new(operation, reason, e.to_string());
    match e {
        ClusterError::Unauthorized(_) => error.with_code(ERR_UNAUTHORIZED),
        _ => error,
    }
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

fn item_key(item: &DeployItem) -> String {
    format!("{}/{}", item.metadata.namespace(), item.metadata.name())
}

/// The answer while the item is not done: `Progressing` with the provider status, or, when the
/// item already waits with exactly this provider status, the reason as a recoverable error.
fn waiting(
    item: &DeployItem,
    status: &ProviderStatus,
    reason: DeployerError,
) -> Result<ReconcileResult, DeployerError> {
    let value = status.to_value();
    let current = item.status.as_ref();
    let progressing = current.and_then(|s| s.phase.as_ref()) == Some(&Phase::Progressing);
    let unchanged = current.and_then(|s| s.provider_status.as_ref()) == Some(&value);
    if progressing && unchanged {
        return Err(reason);
    }
    tracing::info!(item = %item_key(item), reason = %reason, "manifest deploy item is progressing");
    Ok(ReconcileResult {
        phase: Some(Phase::Progressing),
        provider_status: Some(value),
        export: None,
    })
}

impl ManifestDeployer {
    async fn reconcile_item(
        &self,
        request: DeployRequest<'_>,
    ) -> Result<ReconcileResult, DeployerError> {
        let item = request.item;
        let config = parse_config(item, false)?;
        let previous = previous_status(item)?.unwrap_or_else(|| ProviderStatus::new(Vec::new()));
        let primary = self.clients.client(request.target).await?;
        let client = primary.as_ref();
        client.invalidate_discovery();
        let mut clients = TargetClients::new(
            primary.clone(),
            self.clients.as_ref(),
            request.secondary_targets,
        );
        let deploy_item = item.metadata.name();

        let manifests = apply::expand(&config.manifests)
            .map_err(|e| DeployerError::new(RECONCILE_OPERATION, "ExpandManifests", e))?;
        let groups = apply::execution_groups(client, manifests)
            .await
            .map_err(|e| match &e {
                apply::PrepareError::Discovery(c) => {
                    cluster_error("GetApiResource", "GetApiResourceList", c)
                }
                apply::PrepareError::Manifest(m) => {
                    DeployerError::new(RECONCILE_OPERATION, "PrepareManifests", m.clone())
                }
            })?;
        let applied =
            apply::apply_groups(client, &groups, &config.update_strategy, deploy_item).await;

        // Objects of the previous revision that this one no longer contains.
        let orphans: Vec<ManagedResourceStatus> = previous
            .managed_resources
            .iter()
            .filter(|old| {
                !applied
                    .managed
                    .iter()
                    .any(|new| new.resource.same_object(&old.resource))
            })
            .cloned()
            .collect();

        if !applied.errors.is_empty() {
            // Keep tracking the previous objects: nothing is cleaned up after a failed apply.
            let mut managed = applied.managed.clone();
            managed.extend(orphans);
            let message = aggregate(&applied.errors);
            return waiting(
                item,
                &ProviderStatus::new(managed),
                DeployerError::new("ApplyObjects", "ApplyNewObject", message),
            );
        }

        let deletable = delete::prepare_deletion(client, &orphans, deploy_item)
            .await
            .map_err(|e| cluster_error("ApplyObjects", "cleanupOrphanedResourcesInGroups", &e))?;
        let remaining = delete::delete_pass(
            &mut clients,
            &deletable,
            &config.deletion_groups_during_update,
        )
        .await
        .map_err(|e| delete_error("ApplyObjects", "cleanupOrphanedResourcesInGroups", e))?;
        let status = ProviderStatus::new(applied.managed.clone());
        if !remaining.is_empty() {
            let mut managed = applied.managed.clone();
            managed.extend(
                deletable
                    .into_iter()
                    .filter(|d| remaining.iter().any(|r| r == &d.resource.object_ref())),
            );
            let names: Vec<String> = remaining.iter().map(ToString::to_string).collect();
            return waiting(
                item,
                &ProviderStatus::new(managed),
                DeployerError::new(
                    "ApplyObjects",
                    "cleanupOrphanedResourcesInGroups",
                    format!(
                        "waiting for orphaned objects to be deleted: {}",
                        names.join(", ")
                    ),
                ),
            );
        }

        if !config.readiness_checks.disable_default
            && let Some(not_ready) =
                readiness::default_readiness(client, &status.managed_resources).await
        {
            return waiting(
                item,
                &status,
                DeployerError::new(
                    "DefaultCheckResourcesReadinessManifest",
                    "ObjectNotReady",
                    not_ready.to_string(),
                ),
            );
        }
        for check in config
            .readiness_checks
            .custom_readiness_checks
            .iter()
            .flatten()
        {
            if check.disabled {
                continue;
            }
            let check_client = match clients.client(check.target_name.as_deref()).await {
                Ok(c) => c,
                Err(e) => {
                    let message = format!("readiness check {:?}: {e}", check.name);
                    return waiting(
                        item,
                        &status,
                        e.deployer_error(
                            "CustomCheckResourcesReadinessManifest",
                            "SecondaryTarget",
                            message,
                        ),
                    );
                }
            };
            if let Some(not_ready) = readiness::custom_readiness(check_client.as_ref(), check).await
            {
                return waiting(
                    item,
                    &status,
                    DeployerError::new(
                        "CustomCheckResourcesReadinessManifest",
                        "ObjectNotReady",
                        format!("readiness check {:?}: {not_ready}", check.name),
                    ),
                );
            }
        }

        let export = match &config.exports {
            None => None,
            Some(exports) => match exports::collect_exports(&mut clients, exports).await {
                Ok(values) => Some(Value::Object(values)),
                Err(ExportError::SecondaryTarget { key, error }) => {
                    let message = format!("export {key}: {error}");
                    return waiting(
                        item,
                        &status,
                        error.deployer_error(RECONCILE_OPERATION, "ReadExportValues", message),
                    );
                }
                Err(e) => {
                    return waiting(
                        item,
                        &status,
                        DeployerError::new(RECONCILE_OPERATION, "ReadExportValues", e.to_string()),
                    );
                }
            },
        };

        apply::patch_after_deployment(client, &applied.patches)
            .await
            .map_err(|e| DeployerError::new(RECONCILE_OPERATION, "PatchAfterDeployment", e))?;

        Ok(ReconcileResult {
            phase: Some(Phase::Succeeded),
            provider_status: Some(status.to_value()),
            export,
        })
    }

    async fn delete_item(&self, request: DeployRequest<'_>) -> Result<DeleteResult, DeployerError> {
        let item = request.item;
        let config = parse_config(item, true)?;
        let Some(previous) = previous_status(item)?.filter(|s| !s.managed_resources.is_empty())
        else {
            return Ok(DeleteResult::Deleted);
        };
        let primary = self.clients.client(request.target).await?;
        let client = primary.as_ref();
        client.invalidate_discovery();
        let deletable =
            delete::prepare_deletion(client, &previous.managed_resources, item.metadata.name())
                .await
                .map_err(|e| cluster_error(DELETE_OPERATION, "AnnotateAndPatchBeforeDelete", &e))?;
        let mut clients = TargetClients::new(
            primary.clone(),
            self.clients.as_ref(),
            request.secondary_targets,
        );
        let remaining = delete::delete_pass(&mut clients, &deletable, &config.deletion_groups)
            .await
            .map_err(|e| delete_error(DELETE_OPERATION, "DeleteManagedResources", e))?;
        if remaining.is_empty() {
            return Ok(DeleteResult::Deleted);
        }
        let names: Vec<String> = remaining.iter().map(ToString::to_string).collect();
        tracing::info!(item = %item_key(item), remaining = %names.join(", "), "waiting for objects to be deleted");
        Ok(DeleteResult::Pending)
    }
}

fn delete_error(operation: &str, reason: &str, e: DeleteError) -> DeployerError {
    match &e {
        DeleteError::Cluster(c) => cluster_error(operation, reason, c),
        DeleteError::SecondaryTarget(t) => t.deployer_error(operation, reason, e.to_string()),
        DeleteError::InvalidGroup(_) => DeployerError::new(operation, reason, e.to_string()),
    }
}

/// `errors.NewAggregate(...).Error()`.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [single] => single.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

impl Deployer for ManifestDeployer {
    fn deployer_type(&self) -> &str {
        MANIFEST_DEPLOYER_TYPE
    }

    /// Every `targetName` of the configuration (readiness checks, exports, deletion groups).
    fn secondary_target_names(&self, item: &DeployItem) -> Vec<String> {
        match item.spec.config.as_ref() {
            Some(config) => ProviderConfiguration::decode(config)
                .map(|c| targets::secondary_target_names(&c))
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
