//! [`ClusterClient`] on kube-rs: dynamic objects, discovery per group version with a cache of
//! the kinds found (kinds not found are asked for again, so CRDs created meanwhile resolve).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Scope;
use serde_json::Value;

use super::{
    ClusterClient, ClusterError, ClusterResult, Deletion, ObjectRef, Patch, ResourceInfo,
    ServedResources,
};
use crate::BoxFuture;

/// Why a client could not be built from a kubeconfig: always a configuration problem.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("unable to parse kubeconfig: {0}")]
    Parse(String),
    #[error("unable to load kubeconfig: {0}")]
    Load(String),
    #[error("unable to create kubernetes client: {0}")]
    Client(String),
}

pub struct KubeClusterClient {
    client: kube::Client,
    /// (apiVersion, kind) → resource and whether it is namespaced.
    discovered: Mutex<HashMap<(String, String), (ApiResource, bool)>>,
}

impl std::fmt::Debug for KubeClusterClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeClusterClient").finish_non_exhaustive()
    }
}

impl KubeClusterClient {
    pub fn new(client: kube::Client) -> KubeClusterClient {
        KubeClusterClient {
            client,
            discovered: Mutex::new(HashMap::new()),
        }
    }

    /// A client for the kubeconfig text of a Target (its current context).
    pub async fn from_kubeconfig(text: &str) -> Result<KubeClusterClient, KubeconfigError> {
        let kubeconfig =
            Kubeconfig::from_yaml(text).map_err(|e| KubeconfigError::Parse(e.to_string()))?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| KubeconfigError::Load(e.to_string()))?;
        let client =
            kube::Client::try_from(config).map_err(|e| KubeconfigError::Client(e.to_string()))?;
        Ok(KubeClusterClient::new(client))
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), (ApiResource, bool)>> {
        self.discovered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn discover(&self, api_version: &str, kind: &str) -> ClusterResult<(ApiResource, bool)> {
        let cache_key = (api_version.to_string(), kind.to_string());
        if let Some(found) = self.cache().get(&cache_key) {
            return Ok(found.clone());
        }
        let (group, version) = match api_version.rsplit_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let no_match = || ClusterError::NoMatch {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        };
        let (resource, capabilities) = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(|e| match map_error(e) {
                ClusterError::NotFound(_) => no_match(),
                other => other,
            })
            .map_err(|e| match e {
                ClusterError::Api { code: 0, .. } => no_match(),
                other => other,
            })?;
        let found = (resource, capabilities.scope == Scope::Namespaced);
        self.cache().insert(cache_key, found.clone());
        Ok(found)
    }

    async fn api(&self, reference: &ObjectRef) -> ClusterResult<Api<DynamicObject>> {
        let (resource, namespaced) = self
            .discover(&reference.api_version, &reference.kind)
            .await?;
        if namespaced {
            if reference.namespace.is_empty() {
                return Err(ClusterError::Invalid(format!(
                    "{} {}: the namespace of a namespaced object must be set",
                    reference.kind, reference.name
                )));
            }
            Ok(Api::namespaced_with(
                self.client.clone(),
                &reference.namespace,
                &resource,
            ))
        } else {
            Ok(Api::all_with(self.client.clone(), &resource))
        }
    }
}

fn to_value(object: DynamicObject) -> ClusterResult<Value> {
    serde_json::to_value(object).map_err(|e| ClusterError::Invalid(e.to_string()))
}

fn to_dynamic(object: &Value) -> ClusterResult<DynamicObject> {
    serde_json::from_value(object.clone())
        .map_err(|e| ClusterError::Invalid(format!("invalid object: {e}")))
}

fn map_error(error: kube::Error) -> ClusterError {
    match error {
        kube::Error::Api(status) => match status.code {
            404 => ClusterError::NotFound(status.message.clone()),
            409 if status.reason == "Conflict" => ClusterError::Conflict(status.message.clone()),
            401 => ClusterError::Unauthorized(status.message.clone()),
            code => ClusterError::Api {
                code,
                message: status.message.clone(),
            },
        },
        kube::Error::Discovery(e) => ClusterError::Api {
            code: 0,
            message: e.to_string(),
        },
        kube::Error::HyperError(e) => ClusterError::Unreachable(e.to_string()),
        kube::Error::Service(e) => ClusterError::Unreachable(e.to_string()),
        other => ClusterError::Unreachable(other.to_string()),
    }
}

impl ClusterClient for KubeClusterClient {
    fn server_version(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            self.client
                .apiserver_version()
                .await
                .ok()
                .map(|info| info.git_version)
        })
    }

    fn served_resources(&self) -> BoxFuture<'_, ClusterResult<ServedResources>> {
        Box::pin(async move {
            let mut group_versions = self
                .client
                .list_core_api_versions()
                .await
                .map_err(map_error)?
                .versions;
            for group in self
                .client
                .list_api_groups()
                .await
                .map_err(map_error)?
                .groups
            {
                group_versions.extend(group.versions.into_iter().map(|v| v.group_version));
            }
            let mut tasks = tokio::task::JoinSet::new();
            for (index, group_version) in group_versions.iter().enumerate() {
                let client = self.client.clone();
                let group_version = group_version.clone();
                tasks.spawn(async move {
                    let listed = if group_version.contains('/') {
                        client.list_api_group_resources(&group_version).await
                    } else {
                        client.list_core_api_resources(&group_version).await
                    };
                    let kinds = match listed {
                        Ok(list) => list.resources.into_iter().map(|r| r.kind).collect(),
                        Err(e) => {
                            tracing::debug!(%group_version, error = %e, "discovery of a group version failed");
                            Vec::new()
                        }
                    };
                    (index, kinds)
                });
            }
            let mut served: ServedResources = group_versions
                .into_iter()
                .map(|gv| (gv, Vec::new()))
                .collect();
            while let Some(joined) = tasks.join_next().await {
                if let Ok((index, kinds)) = joined
                    && let Some(entry) = served.get_mut(index)
                {
                    entry.1 = kinds;
                }
            }
            Ok(served)
        })
    }

    fn resolve<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, ClusterResult<ResourceInfo>> {
        Box::pin(async move {
            let (resource, namespaced) = self.discover(api_version, kind).await?;
            Ok(ResourceInfo {
                plural: resource.plural,
                namespaced,
            })
        })
    }

    fn invalidate_discovery(&self) {
        self.cache().clear();
    }

    fn get<'a>(&'a self, object: &'a ObjectRef) -> BoxFuture<'a, ClusterResult<Option<Value>>> {
        Box::pin(async move {
            let api = self.api(object).await?;
            match api.get_opt(&object.name).await.map_err(map_error)? {
                Some(found) => Ok(Some(to_value(found)?)),
                None => Ok(None),
            }
        })
    }

    fn create<'a>(&'a self, object: &'a Value) -> BoxFuture<'a, ClusterResult<Value>> {
        Box::pin(async move {
            let api = self.api(&ObjectRef::of(object)).await?;
            let created = api
                .create(&PostParams::default(), &to_dynamic(object)?)
                .await
                .map_err(map_error)?;
            to_value(created)
        })
    }

    fn update<'a>(&'a self, object: &'a Value) -> BoxFuture<'a, ClusterResult<Value>> {
        Box::pin(async move {
            let reference = ObjectRef::of(object);
            let api = self.api(&reference).await?;
            let updated = api
                .replace(
                    &reference.name,
                    &PostParams::default(),
                    &to_dynamic(object)?,
                )
                .await
                .map_err(map_error)?;
            to_value(updated)
        })
    }

    fn patch<'a>(
        &'a self,
        object: &'a ObjectRef,
        patch: &'a Patch,
    ) -> BoxFuture<'a, ClusterResult<Value>> {
        Box::pin(async move {
            let api = self.api(object).await?;
            let patched = match patch {
                Patch::Merge(p) => api
                    .patch(
                        &object.name,
                        &PatchParams::default(),
                        &kube::api::Patch::Merge(p),
                    )
                    .await
                    .map_err(map_error)?,
                Patch::Strategic(p) => api
                    .patch(
                        &object.name,
                        &PatchParams::default(),
                        &kube::api::Patch::Strategic(p),
                    )
                    .await
                    .map_err(map_error)?,
                Patch::Apply {
                    field_manager,
                    object: p,
                } => api
                    .patch(
                        &object.name,
                        &PatchParams::apply(field_manager),
                        &kube::api::Patch::Apply(p),
                    )
                    .await
                    .map_err(map_error)?,
                Patch::Json(p) => {
                    // kube is built without its json-patch feature: apply the operations to the
                    // current object and replace it (optimistically, with its resourceVersion).
                    let Some(current) = api.get_opt(&object.name).await.map_err(map_error)? else {
                        return Err(ClusterError::NotFound(object.to_string()));
                    };
                    let mut value = to_value(current)?;
                    let operations: json_patch::Patch = serde_json::from_value(p.clone())
                        .map_err(|e| ClusterError::Invalid(e.to_string()))?;
                    json_patch::patch(&mut value, &operations).map_err(|e| ClusterError::Api {
                        code: 422,
                        message: e.to_string(),
                    })?;
                    api.replace(&object.name, &PostParams::default(), &to_dynamic(&value)?)
                        .await
                        .map_err(map_error)?
                }
            };
            to_value(patched)
        })
    }

    fn delete<'a>(&'a self, object: &'a ObjectRef) -> BoxFuture<'a, ClusterResult<Deletion>> {
        Box::pin(async move {
            let api = match self.api(object).await {
                Ok(api) => api,
                Err(ClusterError::NoMatch { .. }) => return Ok(Deletion::NotFound),
                Err(e) => return Err(e),
            };
            match api.delete(&object.name, &DeleteParams::background()).await {
                Ok(_) => Ok(Deletion::Accepted),
                Err(e) => match map_error(e) {
                    ClusterError::NotFound(_) => Ok(Deletion::NotFound),
                    other => Err(other),
                },
            }
        })
    }

    fn list<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
        namespace: Option<&'a str>,
        labels: &'a BTreeMap<String, String>,
    ) -> BoxFuture<'a, ClusterResult<Vec<Value>>> {
        Box::pin(async move {
            let (resource, namespaced) = self.discover(api_version, kind).await?;
            let api: Api<DynamicObject> = match namespace {
                Some(ns) if namespaced => Api::namespaced_with(self.client.clone(), ns, &resource),
                _ => Api::all_with(self.client.clone(), &resource),
            };
            let selector = labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",");
            let mut params = ListParams::default();
            if !selector.is_empty() {
                params = params.labels(&selector);
            }
            let list = api.list(&params).await.map_err(map_error)?;
            list.items
                .into_iter()
                .map(|mut item| {
                    // List items carry no type meta.
                    item.types = Some(kube::api::TypeMeta {
                        api_version: api_version.to_string(),
                        kind: kind.to_string(),
                    });
                    to_value(item)
                })
                .collect()
        })
    }
}
