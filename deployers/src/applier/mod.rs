//! The manifest applier (Landscaper's `pkg/deployer/lib/resourcemanager` with the readiness
//! checks and exports around it), shared by the deployers that put manifests into a cluster:
//! the kubernetes-manifest deployer, and the helm deployer's manifest-only mode.
//!
//! ```text
//! reconcile: execution groups (CRDs, cluster, namespaced) ─► apply each object by policy and
//!   update strategy ─► delete orphans of the last revision ─► readiness (default + custom)
//!   ─► exports ─► patchAfterDeployment ─► Succeeded
//! delete:    filter by policy ─► annotate/patch before delete ─► delete group by group
//! ```
//!
//! A caller hands over what it rendered and its configuration ([`Desired`]), the client factory
//! for the item's targets and the managed resources of the last revision; the applier answers
//! with the new managed resources (the provider status) and the exports.
//!
//! Landscaper polls readiness, exports and deletion in-process until the item's timeout; the
//! applier answers `Progressing` (or `DeleteResult::Pending`) instead and the dispatcher asks
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

use landscaper_model::constants::ERR_UNAUTHORIZED;
use landscaper_model::{DeployItem, Phase, Target, kubeconfig_text};
use serde_json::Value;

use self::config::{
    DeletionGroupDefinition, Exports, Manifest, ReadinessCheckConfiguration, UpdateStrategy,
};
use self::delete::DeleteError;
use self::exports::ExportError;
use self::status::{ManagedResourceStatus, ProviderStatus};
use self::targets::TargetClients;
use crate::kubernetes::{ClusterClient, ClusterError, KubeClusterClient};
use crate::{BoxFuture, DeleteResult, DeployRequest, DeployerError, LsError, ReconcileResult};

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
                LsError::configuration_problem(
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
                    LsError::configuration_problem(
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

/// What the applier makes the target look like: the rendered manifests and how to treat them.
#[derive(Debug, Clone, Copy)]
pub struct Desired<'a> {
    pub manifests: &'a [Manifest],
    pub update_strategy: &'a UpdateStrategy,
    pub readiness_checks: &'a ReadinessCheckConfiguration,
    pub exports: Option<&'a Exports>,
    /// Used on delete.
    pub deletion_groups: &'a [DeletionGroupDefinition],
    /// Used for the orphans of an update.
    pub deletion_groups_during_update: &'a [DeletionGroupDefinition],
    pub naming: &'a Naming,
    /// The namespace of namespaced objects that name none (the helm deployer's release
    /// namespace); `None` leaves them as they are.
    pub default_namespace: Option<&'a str>,
}

impl Desired<'_> {
    /// Every Target named by `targetName` ([`targets::secondary_target_names`]).
    pub fn secondary_target_names(&self) -> Vec<String> {
        targets::secondary_target_names(self)
    }
}

/// How a deployer names what the applier writes and reports, in Landscaper's words: the label
/// of its objects, its provider status, its operations and timeout checkpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Naming {
    /// The label marking the objects a deploy item applied (its value is the item's name).
    pub managed_label: &'static str,
    /// The `apiVersion` of the provider status (`kind: ProviderStatus`).
    pub status_api_version: &'static str,
    pub reconcile_operation: &'static str,
    pub delete_operation: &'static str,
    pub default_readiness_operation: &'static str,
    pub custom_readiness_operation: &'static str,
    pub checkpoint_before_readiness: &'static str,
    pub checkpoint_default_readiness: &'static str,
    pub checkpoint_custom_readiness: &'static str,
    pub checkpoint_before_exports: &'static str,
}

/// `resourcemanager`'s own timeout checkpoints.
pub const CHECKPOINT_APPLY_MANIFESTS: &str = "deployer: apply manifests";
pub const CHECKPOINT_CLEANUP_ORPHANED: &str = "deployer: cleanup orphaned";
pub const CHECKPOINT_DELETE_RESOURCES: &str = "deployer: delete resources";

/// A cluster error as a deployer error: unauthorized is final, everything else is retried.
pub fn cluster_error(operation: &str, reason: &str, e: &ClusterError) -> DeployerError {
    let error = DeployerError::new(operation, reason, e.to_string());
    match e {
        ClusterError::Unauthorized(_) => error.with_code(ERR_UNAUTHORIZED),
        _ => error,
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
    tracing::info!(item = %item_key(item), reason = %reason, "deploy item is progressing");
    Ok(ReconcileResult {
        phase: Some(Phase::Progressing),
        provider_status: Some(value),
        export: None,
    })
}

/// `readinessChecks.timeout`: the item has waited at `operation` (its `lastError` names the
/// operation since `lastTransitionTime`) for the timeout or longer: a final timeout error that
/// keeps the cause (`not_ready`).
fn readiness_deadline(
    item: &DeployItem,
    operation: &str,
    config: &ReadinessCheckConfiguration,
    not_ready: &str,
) -> Result<(), DeployerError> {
    let Some(timeout) = &config.timeout else {
        return Ok(());
    };
    if readiness_timed_out(item, operation, timeout.to_std(), jiff::Timestamp::now()) {
        return Err(DeployerError::timeout(
            operation,
            "ReadinessCheckTimeout",
            format!("readiness checks did not succeed within {timeout}: {not_ready}"),
        ));
    }
    Ok(())
}

/// Whether the item has been waiting at `operation` for `timeout` by `now`.
pub fn readiness_timed_out(
    item: &DeployItem,
    operation: &str,
    timeout: std::time::Duration,
    now: jiff::Timestamp,
) -> bool {
    let Some(error) = item.status.as_ref().and_then(|s| s.last_error.as_ref()) else {
        return false;
    };
    if error.operation != operation {
        return false;
    }
    let Some(since) = error
        .last_transition_time
        .as_deref()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    else {
        return false;
    };
    let waited = now.duration_since(since);
    std::time::Duration::try_from(waited).is_ok_and(|w| w >= timeout)
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

/// Applies `desired` to the item's target: the managed resources of the last revision are
/// `previous`. Answers `Succeeded` with the provider status and exports, `Progressing` while
/// objects are not ready (or orphans not gone), or an error.
pub async fn reconcile(
    clients: &dyn ClientFactory,
    request: DeployRequest<'_>,
    desired: &Desired<'_>,
    previous: &[ManagedResourceStatus],
) -> Result<ReconcileResult, DeployerError> {
    let item = request.item;
    let naming = desired.naming;
    let operation = naming.reconcile_operation;
    let primary = clients.client(request.target).await?;
    let client = primary.as_ref();
    client.invalidate_discovery();
    let mut target_clients =
        TargetClients::new(primary.clone(), clients, request.secondary_targets);
    let owner = apply::Owner {
        label: naming.managed_label,
        deploy_item: item.metadata.name(),
    };
    let provider_status = |managed: Vec<ManagedResourceStatus>| ProviderStatus {
        api_version: naming.status_api_version.to_string(),
        ..ProviderStatus::new(managed)
    };

    request.checkpoint(CHECKPOINT_APPLY_MANIFESTS);
    let manifests = apply::expand(desired.manifests)
        .map_err(|e| DeployerError::new(operation, "ExpandManifests", e))?;
    let groups = apply::execution_groups(client, manifests)
        .await
        .map_err(|e| match &e {
            apply::PrepareError::Discovery(c) => {
                cluster_error("GetApiResource", "GetApiResourceList", c)
            }
            apply::PrepareError::Manifest(m) => {
                DeployerError::new(operation, "PrepareManifests", m.clone())
            }
        })?;
    let mut groups = groups;
    if let Some(namespace) = desired.default_namespace.filter(|n| !n.is_empty()) {
        for manifest in &mut groups.namespaced {
            if let Some(Value::Object(object)) = manifest.manifest.as_mut() {
                let metadata = object
                    .entry("metadata")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Value::Object(metadata) = metadata
                    && metadata
                        .get("namespace")
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                {
                    metadata.insert("namespace".into(), Value::String(namespace.into()));
                }
            }
        }
    }
    let applied = apply::apply_groups(client, &groups, desired.update_strategy, owner).await;

    // Objects of the previous revision that this one no longer contains.
    let orphans: Vec<ManagedResourceStatus> = previous
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
            &provider_status(managed),
            DeployerError::new("ApplyObjects", "ApplyNewObject", message),
        );
    }

    request.checkpoint(CHECKPOINT_CLEANUP_ORPHANED);
    let deletable = delete::prepare_deletion(client, &orphans, owner)
        .await
        .map_err(|e| cluster_error("ApplyObjects", "cleanupOrphanedResourcesInGroups", &e))?;
    let remaining = delete::delete_pass(
        &mut target_clients,
        &deletable,
        desired.deletion_groups_during_update,
    )
    .await
    .map_err(|e| delete_error("ApplyObjects", "cleanupOrphanedResourcesInGroups", e))?;
    let status = provider_status(applied.managed.clone());
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
            &provider_status(managed),
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

    let export =
        match check_readiness_and_exports(&request, desired, client, &mut target_clients, &status)
            .await?
        {
            Checked::Ready(export) => export,
            Checked::Waiting(result) => return Ok(result),
        };

    apply::patch_after_deployment(client, &applied.patches)
        .await
        .map_err(|e| DeployerError::new(operation, "PatchAfterDeployment", e))?;

    Ok(ReconcileResult {
        phase: Some(Phase::Succeeded),
        provider_status: Some(status.to_value()),
        export,
    })
}

/// What the readiness checks and exports found.
#[derive(Debug)]
pub enum Checked {
    /// Every object is ready; the exports (when configured).
    Ready(Option<Value>),
    /// Not yet: the answer to give (`Progressing`).
    Waiting(ReconcileResult),
}

fn waiting_checked(
    item: &DeployItem,
    status: &ProviderStatus,
    reason: DeployerError,
) -> Result<Checked, DeployerError> {
    waiting(item, status, reason).map(Checked::Waiting)
}

/// The checks after the objects are applied, one place for every deployer that applies
/// manifests (the manifest deployer, both modes of the helm deployer): default readiness of
/// the managed resources in `status` (unless disabled), the custom readiness checks (with their
/// `timeout`), then the exports.
pub async fn check_readiness_and_exports(
    request: &DeployRequest<'_>,
    desired: &Desired<'_>,
    client: &dyn ClusterClient,
    target_clients: &mut TargetClients<'_>,
    status: &ProviderStatus,
) -> Result<Checked, DeployerError> {
    let item = request.item;
    let naming = desired.naming;
    let operation = naming.reconcile_operation;
    request.checkpoint(naming.checkpoint_before_readiness);
    if !desired.readiness_checks.disable_default {
        request.checkpoint(naming.checkpoint_default_readiness);
        if let Some(not_ready) =
            readiness::default_readiness(client, &status.managed_resources).await
        {
            let operation = naming.default_readiness_operation;
            let message = not_ready.to_string();
            readiness_deadline(item, operation, desired.readiness_checks, &message)?;
            return waiting_checked(
                item,
                status,
                DeployerError::new(operation, "ObjectNotReady", message),
            );
        }
    }
    for check in desired
        .readiness_checks
        .custom_readiness_checks
        .iter()
        .flatten()
    {
        if check.disabled {
            continue;
        }
        request.checkpoint(naming.checkpoint_custom_readiness);
        let check_client = match target_clients.client(check.target_name.as_deref()).await {
            Ok(c) => c,
            Err(e) => {
                let message = format!("readiness check {:?}: {e}", check.name);
                return waiting_checked(
                    item,
                    status,
                    e.deployer_error(
                        naming.custom_readiness_operation,
                        "SecondaryTarget",
                        message,
                    ),
                );
            }
        };
        if let Some(not_ready) = readiness::custom_readiness(check_client.as_ref(), check).await {
            let operation = naming.custom_readiness_operation;
            let message = format!("readiness check {:?}: {not_ready}", check.name);
            readiness_deadline(item, operation, desired.readiness_checks, &message)?;
            return waiting_checked(
                item,
                status,
                DeployerError::new(operation, "ObjectNotReady", message),
            );
        }
    }

    let export = match desired.exports {
        None => None,
        Some(exports) => {
            request.checkpoint(naming.checkpoint_before_exports);
            match exports::collect_exports(target_clients, exports).await {
                Ok(values) => Some(Value::Object(values)),
                Err(ExportError::SecondaryTarget { key, error }) => {
                    let message = format!("export {key}: {error}");
                    return waiting_checked(
                        item,
                        status,
                        error.deployer_error(operation, "ReadExportValues", message),
                    );
                }
                Err(e) => {
                    return waiting_checked(
                        item,
                        status,
                        DeployerError::new(operation, "ReadExportValues", e.to_string()),
                    );
                }
            }
        }
    };

    Ok(Checked::Ready(export))
}

/// [`check_readiness_and_exports`] for objects applied by someone else (a Helm release): the
/// item's clients are built here; `Succeeded` with the exports, or `Progressing`.
pub async fn readiness_and_exports(
    clients: &dyn ClientFactory,
    request: DeployRequest<'_>,
    desired: &Desired<'_>,
    status: &ProviderStatus,
) -> Result<ReconcileResult, DeployerError> {
    let primary = clients.client(request.target).await?;
    let mut target_clients =
        TargetClients::new(primary.clone(), clients, request.secondary_targets);
    match check_readiness_and_exports(
        &request,
        desired,
        primary.as_ref(),
        &mut target_clients,
        status,
    )
    .await?
    {
        Checked::Ready(export) => Ok(ReconcileResult {
            phase: Some(Phase::Succeeded),
            provider_status: Some(status.to_value()),
            export,
        }),
        Checked::Waiting(result) => Ok(result),
    }
}

/// Removes the `managed` resources of the last revision, group by group (`deletion_groups`,
/// Landscaper's default order when empty): `Deleted` once all are gone.
pub async fn delete(
    clients: &dyn ClientFactory,
    request: DeployRequest<'_>,
    deletion_groups: &[DeletionGroupDefinition],
    naming: &Naming,
    managed: &[ManagedResourceStatus],
) -> Result<DeleteResult, DeployerError> {
    let item = request.item;
    if managed.is_empty() {
        return Ok(DeleteResult::Deleted);
    }
    let operation = naming.delete_operation;
    let primary = clients.client(request.target).await?;
    let client = primary.as_ref();
    client.invalidate_discovery();
    let owner = apply::Owner {
        label: naming.managed_label,
        deploy_item: item.metadata.name(),
    };
    let deletable = delete::prepare_deletion(client, managed, owner)
        .await
        .map_err(|e| cluster_error(operation, "AnnotateAndPatchBeforeDelete", &e))?;
    let mut target_clients =
        TargetClients::new(primary.clone(), clients, request.secondary_targets);
    request.checkpoint(CHECKPOINT_DELETE_RESOURCES);
    let remaining = delete::delete_pass(&mut target_clients, &deletable, deletion_groups)
        .await
        .map_err(|e| delete_error(operation, "DeleteManagedResources", e))?;
    if remaining.is_empty() {
        return Ok(DeleteResult::Deleted);
    }
    let names: Vec<String> = remaining.iter().map(ToString::to_string).collect();
    tracing::info!(item = %item_key(item), remaining = %names.join(", "), "waiting for objects to be deleted");
    Ok(DeleteResult::Pending)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use landscaper_model::{DeployItem, ObjectMeta};
    use serde_json::json;

    use super::config::{Manifest, ManifestPolicy};
    use super::targets::tests::{FakeFactory, resolved};
    use super::*;
    use crate::kubernetes::{FakeCluster, ObjectRef};
    use crate::{Checkpoint, SecondaryTarget};

    const HELM_LABEL: &str = "helm.deployer.landscaper.gardener.cloud/deployitem";
    const HELM_STATUS: &str = "helm.deployer.landscaper.gardener.cloud/v1alpha1";

    /// A caller other than the manifest deployer (the helm deployer's manifest-only mode).
    const HELM: Naming = Naming {
        managed_label: HELM_LABEL,
        status_api_version: HELM_STATUS,
        reconcile_operation: "ReconcileHelm",
        delete_operation: "DeleteHelm",
        default_readiness_operation: "DefaultCheckResourcesReadinessHelm",
        custom_readiness_operation: "CustomCheckResourcesReadinessHelm",
        checkpoint_before_readiness: "helm deployer: before readiness check",
        checkpoint_default_readiness: "helm deployer: default readiness checks",
        checkpoint_custom_readiness: "helm deployer: custom readiness checks",
        checkpoint_before_exports: "helm deployer: before reading export values",
    };

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn rendered_manifests_are_applied_labelled_and_removed_in_the_callers_names() {
        let cluster = Arc::new(FakeCluster::new());
        let factory = FakeFactory {
            clusters: BTreeMap::from([("primary".to_string(), cluster.clone())]),
        };
        let SecondaryTarget::Resolved(target) = resolved("t", "primary") else {
            unreachable!()
        };
        let mut item = DeployItem {
            metadata: ObjectMeta::namespaced("demo", "release"),
            ..Default::default()
        };
        let manifests = vec![Manifest {
            policy: ManifestPolicy::Manage,
            manifest: Some(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "rendered", "namespace": "demo"}, "data": {"a": "1"}})),
            ..Default::default()
        }];
        let readiness = ReadinessCheckConfiguration::default();
        let desired = Desired {
            manifests: &manifests,
            update_strategy: &UpdateStrategy::Update,
            readiness_checks: &readiness,
            exports: None,
            deletion_groups: &[],
            deletion_groups_during_update: &[],
            naming: &HELM,
            default_namespace: None,
        };
        let progress = Checkpoint::new();
        let result = block_on(reconcile(
            &factory,
            DeployRequest::new(&item, Some(&target)).with_progress(&progress),
            &desired,
            &[],
        ))
        .unwrap();
        assert_eq!(result.phase, Some(Phase::Succeeded));
        let status = result.provider_status.unwrap();
        assert_eq!(status["apiVersion"], HELM_STATUS);
        assert_eq!(
            status["managedResources"][0]["resource"]["name"],
            "rendered"
        );
        let reference = ObjectRef::new("v1", "ConfigMap", "demo", "rendered");
        let object = cluster.object(&reference).unwrap();
        assert_eq!(object["metadata"]["labels"][HELM_LABEL], "release");
        assert_eq!(
            progress.get(),
            Some("helm deployer: default readiness checks")
        );

        // The provider status is all a delete needs.
        let managed = ProviderStatus::parse(&json!({"kind": "ProviderStatus",
            "managedResources": status["managedResources"]}))
        .unwrap()
        .managed_resources;
        item.status = None;
        let deleted = block_on(delete(
            &factory,
            DeployRequest::new(&item, Some(&target)),
            &[],
            &HELM,
            &managed,
        ))
        .unwrap();
        assert_eq!(deleted, DeleteResult::Deleted);
        assert!(cluster.object(&reference).is_none());
    }

    /// The deployer's kubeconfig rule, as its own copy of `kubeconfig_text` had it before the
    /// model's was shared: a `kubeconfig` field counts even when blank (and fails to load
    /// later), a blank or missing configuration is no kubeconfig.
    #[test]
    fn target_kubeconfig_follows_the_deployers_rule() {
        let target = |config: Option<Value>| Target {
            spec: landscaper_model::TargetSpec {
                r#type: "landscaper.gardener.cloud/kubernetes-cluster".into(),
                config,
                secret_ref: None,
            },
            ..Default::default()
        };
        let text = |config| target_kubeconfig(&target(config));
        assert_eq!(
            text(Some(json!({"kubeconfig": "apiVersion: v1"}))).as_deref(),
            Some("apiVersion: v1")
        );
        assert_eq!(text(Some(json!({"kubeconfig": ""}))).as_deref(), Some(""));
        assert_eq!(text(Some(json!({"oidcConfig": {}}))), None);
        assert_eq!(
            text(Some(json!("clusters: []"))).as_deref(),
            Some("clusters: []")
        );
        assert_eq!(text(Some(json!("  \n"))), None);
        assert_eq!(text(Some(Value::Null)), None);
        assert_eq!(text(None), None);
        assert_eq!(text(Some(json!([1]))).as_deref(), Some("[1]"));
    }
}
