//! Deletion (`pkg/deployer/lib/resourcemanager/deletion*.go`, `FilterByPolicy`,
//! `AnnotateAndPatchBeforeDelete`): which managed objects may go, and deletion group by group.
//! Landscaper waits in-process for each group; here a pass deletes the first group that still
//! has objects and reports whether anything remains, and the caller asks again later.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::apply::{Owner, annotate, is_managed_by, mergo_merge};
use super::config::{
    DeletionGroupDefinition, GROUP_CLUSTER_SCOPED, GROUP_CRDS, GROUP_EMPTY, GROUP_NAMESPACED,
    ManifestPolicy, PredefinedResourceGroup, ResourceType, validate_deletion_group,
};
use super::status::ManagedResourceStatus;
use super::targets::{SecondaryTargetError, TargetClients};
use crate::kubernetes::{ClusterClient, ClusterError, Deletion, ObjectRef};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeleteError {
    #[error("invalid deletion group: {0}")]
    InvalidGroup(String),
    /// A custom group's secondary target (`targetName`) has no client.
    #[error("{0}")]
    SecondaryTarget(#[from] SecondaryTargetError),
    #[error("{0}")]
    Cluster(#[from] ClusterError),
}

/// The default order: namespaced objects, cluster-scoped objects (without CRDs), CRDs.
pub fn default_deletion_groups() -> Vec<DeletionGroupDefinition> {
    [GROUP_NAMESPACED, GROUP_CLUSTER_SCOPED, GROUP_CRDS]
        .into_iter()
        .map(|t| DeletionGroupDefinition {
            predefined_resource_group: Some(PredefinedResourceGroup {
                r#type: t.to_string(),
                force_delete: false,
            }),
            custom_resource_group: None,
        })
        .collect()
}

fn is_crd(resource: &ManagedResourceStatus) -> bool {
    resource.resource.kind == "CustomResourceDefinition"
}

fn contained(list: &[String], element: &str) -> bool {
    list.is_empty() || list.iter().any(|e| e == element)
}

/// Whether a group takes a managed resource (the first matching group gets it).
pub fn group_matches(group: &DeletionGroupDefinition, resource: &ManagedResourceStatus) -> bool {
    if let Some(predefined) = &group.predefined_resource_group {
        return match predefined.r#type.as_str() {
            GROUP_NAMESPACED => !is_crd(resource) && !resource.resource.namespace.is_empty(),
            GROUP_CLUSTER_SCOPED => !is_crd(resource) && resource.resource.namespace.is_empty(),
            GROUP_CRDS => is_crd(resource),
            _ => false,
        };
    }
    let Some(custom) = &group.custom_resource_group else {
        return false;
    };
    if custom.target_name.is_some() {
        return false;
    }
    custom.resources.iter().any(|t| {
        t.kind == resource.resource.kind
            && t.api_version == resource.resource.api_version
            && contained(&t.namespaces, &resource.resource.namespace)
            && contained(&t.names, &resource.resource.name)
    })
}

fn check_group(group: &DeletionGroupDefinition) -> Result<(), DeleteError> {
    validate_deletion_group(group).map_err(DeleteError::InvalidGroup)?;
    if let Some(predefined) = &group.predefined_resource_group
        && ![
            GROUP_NAMESPACED,
            GROUP_CLUSTER_SCOPED,
            GROUP_CRDS,
            GROUP_EMPTY,
        ]
        .contains(&predefined.r#type.as_str())
    {
        return Err(DeleteError::InvalidGroup(format!(
            "unsupported type of predefinedResourceGroup: {}",
            predefined.r#type
        )));
    }
    if let Some(custom) = &group.custom_resource_group
        && custom.target_name.is_some()
        && !custom.delete_all_resources
    {
        // Objects in another cluster were not deployed by this item: only "delete all" makes
        // sense there.
        return Err(DeleteError::InvalidGroup(
            "customResourceGroup.DeleteAllResources must be true if TargetName is set".into(),
        ));
    }
    Ok(())
}

/// Splits resources into the groups (unmatched resources are not deleted at all).
pub fn assign_groups(
    groups: &[DeletionGroupDefinition],
    resources: &[ManagedResourceStatus],
) -> Vec<Vec<ObjectRef>> {
    let mut assigned = vec![Vec::new(); groups.len()];
    for resource in resources {
        if let Some(index) = groups.iter().position(|g| group_matches(g, resource)) {
            assigned[index].push(resource.resource.object_ref());
        }
    }
    assigned
}

/// `FilterByPolicy` + `AnnotateAndPatchBeforeDelete`: the managed resources that are to be
/// deleted, after their before-delete annotations and patches are applied.
pub async fn prepare_deletion<'a>(
    client: &dyn ClusterClient,
    resources: &[ManagedResourceStatus],
    owner: impl Into<Owner<'a>>,
) -> Result<Vec<ManagedResourceStatus>, ClusterError> {
    let owner = owner.into();
    let mut deletable = Vec::new();
    for resource in resources {
        if matches!(
            resource.policy,
            ManifestPolicy::Ignore | ManifestPolicy::Keep
        ) {
            continue;
        }
        let reference = resource.resource.object_ref();
        let needs_live = resource.policy == ManifestPolicy::Fallback
            || resource.annotate_before_delete.is_some()
            || resource
                .patch_before_delete
                .as_ref()
                .is_some_and(|p| !p.is_null());
        if !needs_live {
            deletable.push(resource.clone());
            continue;
        }
        let Some(live) = client.get(&reference).await? else {
            continue;
        };
        if resource.policy == ManifestPolicy::Fallback && !is_managed_by(&live, owner) {
            continue;
        }
        if resource.annotate_before_delete.is_some() || resource.patch_before_delete.is_some() {
            let mut updated = live.clone();
            if let Some(annotations) = &resource.annotate_before_delete {
                annotate(&mut updated, annotations);
            }
            if let Some(Value::Object(patch)) = &resource.patch_before_delete
                && let Some(dst) = updated.as_object_mut()
            {
                mergo_merge(dst, patch, true);
            }
            if updated != live {
                match client.update(&updated).await {
                    Ok(_) => {}
                    Err(ClusterError::NotFound(_)) => continue,
                    Err(e) => return Err(e),
                }
            }
        }
        deletable.push(resource.clone());
    }
    Ok(deletable)
}

/// All objects of a `deleteAllResources` group's types.
async fn all_resources(
    client: &dyn ClusterClient,
    types: &[ResourceType],
) -> Result<Vec<ObjectRef>, ClusterError> {
    let mut found = Vec::new();
    let none = BTreeMap::new();
    for t in types {
        let info = client.resolve(&t.api_version, &t.kind).await?;
        let names_match = |o: &ObjectRef| t.names.is_empty() || t.names.contains(&o.name);
        if info.namespaced {
            let namespaces = if t.namespaces.is_empty() {
                client
                    .list("v1", "Namespace", None, &none)
                    .await?
                    .iter()
                    .map(|ns| ObjectRef::of(ns).name)
                    .collect()
            } else {
                t.namespaces.clone()
            };
            for namespace in namespaces {
                let objects = client
                    .list(&t.api_version, &t.kind, Some(&namespace), &none)
                    .await?;
                found.extend(
                    objects
                        .iter()
                        .map(|o| {
                            ObjectRef::new(
                                &t.api_version,
                                &t.kind,
                                &namespace,
                                &ObjectRef::of(o).name,
                            )
                        })
                        .filter(names_match),
                );
            }
        } else if !t.names.is_empty() {
            found.extend(
                t.names
                    .iter()
                    .map(|n| ObjectRef::new(&t.api_version, &t.kind, "", n)),
            );
        } else {
            let objects = client.list(&t.api_version, &t.kind, None, &none).await?;
            found.extend(
                objects
                    .iter()
                    .map(|o| ObjectRef::new(&t.api_version, &t.kind, "", &ObjectRef::of(o).name)),
            );
        }
    }
    Ok(found)
}

/// Whether the object still exists after a delete call (`deleteResource`).
async fn delete_one(client: &dyn ClusterClient, object: &ObjectRef, force: bool) -> bool {
    match client.delete(object).await {
        Ok(Deletion::NotFound) => return false,
        Ok(Deletion::Accepted) => {}
        Err(e) if e.is_not_found() => return false,
        Err(e) => {
            tracing::warn!(object = %object, error = %e, "deletiongroups: error deleting resource");
            return true;
        }
    }
    if force {
        match client.get(object).await {
            Ok(None) => return false,
            Ok(Some(mut live)) => {
                let has_finalizers = live
                    .pointer("/metadata/finalizers")
                    .and_then(Value::as_array)
                    .is_some_and(|f| !f.is_empty());
                if has_finalizers {
                    live["metadata"]["finalizers"] = Value::Null;
                    if let Err(e) = client.update(&live).await
                        && e.is_not_found()
                    {
                        return false;
                    }
                }
            }
            Err(e) if e.is_not_found() => return false,
            Err(_) => {}
        }
    }
    // Often the object is gone at once; then the next group need not wait for another pass.
    !matches!(client.get(object).await, Ok(None))
}

/// One deletion pass: deletes the objects of the first group that still has any. Returns the
/// objects that still exist (empty: everything is gone). Managed resources are deleted through
/// the primary target; a custom group with `targetName` deletes all matching objects in that
/// secondary target's cluster. As Landscaper builds all groups before deleting, every group is
/// checked and every secondary target's client obtained first.
pub async fn delete_pass(
    clients: &mut TargetClients<'_>,
    resources: &[ManagedResourceStatus],
    definitions: &[DeletionGroupDefinition],
) -> Result<Vec<ObjectRef>, DeleteError> {
    if resources.is_empty() {
        return Ok(Vec::new());
    }
    let defaults;
    let groups = if definitions.is_empty() {
        defaults = default_deletion_groups();
        &defaults
    } else {
        definitions
    };
    let mut group_clients: Vec<Arc<dyn ClusterClient>> = Vec::with_capacity(groups.len());
    for group in groups {
        check_group(group)?;
        let target_name = group
            .custom_resource_group
            .as_ref()
            .and_then(|c| c.target_name.as_deref());
        group_clients.push(clients.client(target_name).await?);
    }
    let assigned = assign_groups(groups, resources);
    for ((group, managed), client) in groups.iter().zip(assigned).zip(group_clients) {
        let client = client.as_ref();
        let (objects, force) = match (
            &group.predefined_resource_group,
            &group.custom_resource_group,
        ) {
            (Some(p), _) => (managed, p.force_delete),
            (None, Some(c)) if c.delete_all_resources => {
                (all_resources(client, &c.resources).await?, c.force_delete)
            }
            (None, Some(c)) => (managed, c.force_delete),
            (None, None) => continue,
        };
        let mut remaining = Vec::new();
        for object in objects {
            if delete_one(client, &object, force).await {
                remaining.push(object);
            }
        }
        if !remaining.is_empty() {
            return Ok(remaining);
        }
    }
    Ok(Vec::new())
}

#[cfg(test)]
#[path = "delete_tests.rs"]
mod tests;
