//! Secondary targets (`pkg/deployer/lib/target_client_provider.go`): custom readiness checks,
//! exports and custom deletion groups may name a Target (`targetName`) other than the item's
//! `spec.target`; they then read (or delete) objects in that cluster. The dispatcher looks the
//! Targets up ([`crate::Deployer::secondary_target_names`]); here they become clients.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use landscaper_store::model::constants::ERR_CONFIGURATION_PROBLEM;

use super::{ClientFactory, Desired};
use crate::kubernetes::ClusterClient;
use crate::{DeployerError, SecondaryTarget, SecondaryTargets};

/// Why a secondary target's client is not available, in Landscaper's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecondaryTargetError {
    /// The Target object is missing or unreadable; retried.
    #[error("unable to read secondary target {name}: {message}")]
    Read { name: String, message: String },
    /// The Target's Secret is missing or does not hold the content; retried.
    #[error("unable to resolve secondary target {name}: {message}")]
    Resolve { name: String, message: String },
    /// No client for the Target's configuration; `codes` as for the primary target (an
    /// invalid kubeconfig is `ERR_CONFIGURATION_PROBLEM`).
    #[error("unable to get secondary target client {name}: {message}")]
    Client {
        name: String,
        message: String,
        codes: Vec<String>,
    },
}

impl SecondaryTargetError {
    /// The Landscaper error codes (none: retried).
    pub fn codes(&self) -> &[String] {
        match self {
            SecondaryTargetError::Client { codes, .. } => codes,
            _ => &[],
        }
    }

    /// As a deployer error, with `message` (which should contain this error's text).
    pub fn deployer_error(
        &self,
        operation: &str,
        reason: &str,
        message: impl Into<String>,
    ) -> DeployerError {
        self.codes()
            .iter()
            .fold(DeployerError::new(operation, reason, message), |e, code| {
                e.with_code(code)
            })
    }
}

/// Every `targetName` of a configuration: enabled custom readiness checks, exports read from
/// a resource, custom deletion groups (on delete and during update). Sorted, without
/// duplicates.
pub fn secondary_target_names(config: &Desired<'_>) -> Vec<String> {
    let checks = config
        .readiness_checks
        .custom_readiness_checks
        .iter()
        .flatten()
        .filter(|c| !c.disabled)
        .filter_map(|c| c.target_name.as_ref());
    let exports = config
        .exports
        .iter()
        .flat_map(|e| &e.exports)
        .filter(|e| e.from_resource.is_some())
        .filter_map(|e| e.target_name.as_ref());
    let groups = config
        .deletion_groups
        .iter()
        .chain(config.deletion_groups_during_update)
        .filter_map(|g| g.custom_resource_group.as_ref())
        .filter_map(|g| g.target_name.as_ref());
    let names: BTreeSet<&String> = checks.chain(exports).chain(groups).collect();
    names.into_iter().cloned().collect()
}

/// The clusters one reconcile or delete talks to: the primary target's, and those of
/// secondary targets, each built (and its discovery refreshed) on first use.
pub struct TargetClients<'a> {
    primary: Arc<dyn ClusterClient>,
    factory: &'a dyn ClientFactory,
    targets: &'a SecondaryTargets,
    secondary: HashMap<String, Arc<dyn ClusterClient>>,
}

impl<'a> TargetClients<'a> {
    pub fn new(
        primary: Arc<dyn ClusterClient>,
        factory: &'a dyn ClientFactory,
        targets: &'a SecondaryTargets,
    ) -> TargetClients<'a> {
        TargetClients {
            primary,
            factory,
            targets,
            secondary: HashMap::new(),
        }
    }

    pub fn primary(&self) -> &dyn ClusterClient {
        self.primary.as_ref()
    }

    /// The client for `target_name`, the primary target's without one
    /// (`GetTargetClientConsideringSecondaryTarget`).
    pub async fn client(
        &mut self,
        target_name: Option<&str>,
    ) -> Result<Arc<dyn ClusterClient>, SecondaryTargetError> {
        let Some(name) = target_name else {
            return Ok(self.primary.clone());
        };
        if let Some(client) = self.secondary.get(name) {
            return Ok(client.clone());
        }
        let targets = self.targets;
        let target = match targets.get(name) {
            None => {
                return Err(SecondaryTargetError::Read {
                    name: name.to_string(),
                    message: format!("targets.landscaper.gardener.cloud {name:?} not found"),
                });
            }
            Some(SecondaryTarget::Unreadable(message)) => {
                return Err(SecondaryTargetError::Read {
                    name: name.to_string(),
                    message: message.clone(),
                });
            }
            Some(SecondaryTarget::Unresolvable(message)) => {
                return Err(SecondaryTargetError::Resolve {
                    name: name.to_string(),
                    message: message.clone(),
                });
            }
            Some(SecondaryTarget::Invalid(message)) => {
                return Err(SecondaryTargetError::Client {
                    name: name.to_string(),
                    message: message.clone(),
                    codes: vec![ERR_CONFIGURATION_PROBLEM.to_string()],
                });
            }
            Some(SecondaryTarget::Resolved(target)) => target.as_ref(),
        };
        let client =
            self.factory
                .client(Some(target))
                .await
                .map_err(|e| SecondaryTargetError::Client {
                    name: name.to_string(),
                    message: e.message,
                    codes: e.codes.unwrap_or_default(),
                })?;
        client.invalidate_discovery();
        self.secondary.insert(name.to_string(), client.clone());
        Ok(client)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use landscaper_store::model::{ObjectMeta, Target};
    use serde_json::{Value, json};

    use super::*;
    use crate::BoxFuture;
    use crate::kubernetes::FakeCluster;
    use crate::manifest::config::ProviderConfiguration;

    /// Clients by the kubeconfig text of the target; other targets have an invalid kubeconfig.
    pub(crate) struct FakeFactory {
        pub clusters: BTreeMap<String, Arc<FakeCluster>>,
    }

    impl ClientFactory for FakeFactory {
        fn client<'a>(
            &'a self,
            target: Option<&'a Target>,
        ) -> BoxFuture<'a, Result<Arc<dyn ClusterClient>, DeployerError>> {
            let kubeconfig = target
                .and_then(|t| t.spec.config.as_ref())
                .and_then(|c| c.get("kubeconfig"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let result = match self.clusters.get(kubeconfig) {
                Some(c) => {
                    let c: Arc<dyn ClusterClient> = c.clone();
                    Ok(c)
                }
                None => Err(DeployerError::new(
                    "ensureTargetAccess",
                    "InvalidKubeconfig",
                    format!("spec.config.kubeconfig: no cluster {kubeconfig:?}"),
                )
                .with_code(ERR_CONFIGURATION_PROBLEM)),
            };
            Box::pin(std::future::ready(result))
        }
    }

    pub(crate) fn resolved(name: &str, kubeconfig: &str) -> SecondaryTarget {
        SecondaryTarget::Resolved(Box::new(Target {
            metadata: ObjectMeta::namespaced("demo", name),
            spec: landscaper_store::model::TargetSpec {
                r#type: "landscaper.gardener.cloud/kubernetes-cluster".into(),
                config: Some(json!({ "kubeconfig": kubeconfig })),
                secret_ref: None,
            },
            ..Default::default()
        }))
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn collects_the_target_names_of_checks_exports_and_deletion_groups() {
        let config = ProviderConfiguration::parse(&json!({
            "apiVersion": "manifest.deployer.landscaper.gardener.cloud/v1alpha2",
            "kind": "ProviderConfiguration",
            "readinessChecks": {"custom": [
                {"name": "a", "targetName": "check-target",
                 "resourceSelector": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "namespace": "y"}],
                 "requirements": [{"jsonPath": ".data", "operator": "exists"}]},
                {"name": "b", "disabled": true, "targetName": "disabled-check-target",
                 "resourceSelector": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "namespace": "y"}],
                 "requirements": [{"jsonPath": ".data", "operator": "exists"}]},
                {"name": "c",
                 "resourceSelector": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "namespace": "y"}],
                 "requirements": [{"jsonPath": ".data", "operator": "exists"}]}
            ]},
            "exports": {"exports": [
                {"key": "a", "jsonPath": ".data.a", "targetName": "export-target",
                 "fromResource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "namespace": "y"}},
                {"key": "b", "jsonPath": ".data.b", "targetName": "check-target",
                 "fromResource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "namespace": "y"}},
                {"key": "values", "jsonPath": ".x", "targetName": "value-export-target"}
            ]},
            "deletionGroups": [
                {"predefinedResourceGroup": {"type": "namespaced-resources"}},
                {"customResourceGroup": {"deleteAllResources": true, "targetName": "delete-target",
                    "resources": [{"apiVersion": "v1", "kind": "Secret"}]}}
            ],
            "deletionGroupsDuringUpdate": [
                {"customResourceGroup": {"deleteAllResources": true, "targetName": "update-target",
                    "resources": [{"apiVersion": "v1", "kind": "Secret"}]}}
            ]
        }))
        .unwrap();
        assert_eq!(
            secondary_target_names(&config.desired()),
            vec![
                "check-target",
                "delete-target",
                "export-target",
                "update-target"
            ]
        );
        assert!(secondary_target_names(&ProviderConfiguration::default().desired()).is_empty());
    }

    #[test]
    fn clients_come_from_the_resolved_secondary_targets() {
        let primary = Arc::new(FakeCluster::new());
        let second = Arc::new(FakeCluster::new());
        second.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "only-in-second"}}));
        let factory = FakeFactory {
            clusters: BTreeMap::from([("second".to_string(), second.clone())]),
        };
        let targets = SecondaryTargets::from([
            ("other".to_string(), resolved("other", "second")),
            ("broken".to_string(), resolved("broken", "no such cluster")),
            (
                "no-secret".to_string(),
                SecondaryTarget::Unresolvable("secrets \"s\" not found".into()),
            ),
            (
                "exec".to_string(),
                SecondaryTarget::Invalid("exec configurations are not supported".into()),
            ),
            (
                "garbled".to_string(),
                SecondaryTarget::Unreadable("spec: invalid type".into()),
            ),
        ]);
        let mut clients = TargetClients::new(primary.clone(), &factory, &targets);
        block_on(async {
            let ns = crate::kubernetes::ObjectRef::new("v1", "Namespace", "", "only-in-second");
            let c = clients.client(None).await.unwrap();
            assert_eq!(c.get(&ns).await.unwrap(), None);
            let c = clients.client(Some("other")).await.unwrap();
            assert!(c.get(&ns).await.unwrap().is_some());

            let missing = clients.client(Some("absent")).await.err().unwrap();
            assert_eq!(
                missing.to_string(),
                "unable to read secondary target absent: targets.landscaper.gardener.cloud \"absent\" not found"
            );
            assert!(missing.codes().is_empty());

            let e = clients.client(Some("no-secret")).await.err().unwrap();
            assert_eq!(
                e.to_string(),
                "unable to resolve secondary target no-secret: secrets \"s\" not found"
            );
            assert!(e.codes().is_empty());

            let e = clients.client(Some("garbled")).await.err().unwrap();
            assert_eq!(
                e.to_string(),
                "unable to read secondary target garbled: spec: invalid type"
            );

            for name in ["broken", "exec"] {
                let e = clients.client(Some(name)).await.err().unwrap();
                assert!(
                    e.to_string()
                        .starts_with(&format!("unable to get secondary target client {name}: ")),
                    "{e}"
                );
                let error = e.deployer_error("op", "reason", e.to_string());
                assert!(error.is_unrecoverable(), "{error}");
            }
        });
    }
}
