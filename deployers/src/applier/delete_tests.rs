use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::SecondaryTargets;
use crate::applier::config::CustomResourceGroup;
use crate::applier::status::ObjectReference;
use crate::applier::targets::tests::{FakeFactory, resolved};
use crate::kubernetes::FakeCluster;

fn managed(api_version: &str, kind: &str, namespace: &str, name: &str) -> ManagedResourceStatus {
    ManagedResourceStatus {
        resource: ObjectReference {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn default_groups_sort_namespaced_cluster_scoped_and_crds() {
    let resources = vec![
        managed(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            "",
            "crd",
        ),
        managed("v1", "Namespace", "", "ns"),
        managed("v1", "ConfigMap", "ns", "cm"),
    ];
    let assigned = assign_groups(&default_deletion_groups(), &resources);
    let names: Vec<Vec<String>> = assigned
        .iter()
        .map(|g| g.iter().map(|r| r.name.clone()).collect())
        .collect();
    assert_eq!(names, vec![vec!["cm"], vec!["ns"], vec!["crd"]]);
}

#[test]
fn custom_groups_match_types_names_and_namespaces() {
    let group = DeletionGroupDefinition {
        custom_resource_group: Some(CustomResourceGroup {
            resources: vec![ResourceType {
                api_version: "v1".into(),
                kind: "Secret".into(),
                names: vec!["a".into()],
                namespaces: vec![],
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(group_matches(&group, &managed("v1", "Secret", "x", "a")));
    assert!(!group_matches(&group, &managed("v1", "Secret", "x", "b")));
    assert!(!group_matches(
        &group,
        &managed("v1", "ConfigMap", "x", "a")
    ));
    let empty = DeletionGroupDefinition {
        predefined_resource_group: Some(PredefinedResourceGroup {
            r#type: GROUP_EMPTY.into(),
            force_delete: false,
        }),
        ..Default::default()
    };
    assert!(!group_matches(&empty, &managed("v1", "Secret", "x", "a")));
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

/// `delete_pass` with `cluster` as the primary target and `second` as the secondary target
/// `other`.
fn pass(
    cluster: &Arc<FakeCluster>,
    second: Option<&Arc<FakeCluster>>,
    resources: &[ManagedResourceStatus],
    groups: &[DeletionGroupDefinition],
) -> Result<Vec<ObjectRef>, DeleteError> {
    let factory = FakeFactory {
        clusters: second
            .map(|c| ("second".to_string(), c.clone()))
            .into_iter()
            .collect(),
    };
    let targets: SecondaryTargets = second
        .map(|_| ("other".to_string(), resolved("other", "second")))
        .into_iter()
        .collect();
    let mut clients = TargetClients::new(cluster.clone(), &factory, &targets);
    block_on(delete_pass(&mut clients, resources, groups))
}

fn secrets_group(target_name: Option<&str>) -> DeletionGroupDefinition {
    DeletionGroupDefinition {
        custom_resource_group: Some(CustomResourceGroup {
            resources: vec![ResourceType {
                api_version: "v1".into(),
                kind: "Secret".into(),
                ..Default::default()
            }],
            force_delete: true,
            delete_all_resources: true,
            target_name: target_name.map(str::to_string),
        }),
        ..Default::default()
    }
}

fn insert_secrets(cluster: &FakeCluster) {
    cluster.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n1"}}));
    cluster.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n2"}}));
    for (ns, name) in [("n1", "a"), ("n2", "b")] {
        cluster.insert(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": ns, "finalizers": ["hold"]}}));
    }
}

fn secrets(cluster: &FakeCluster) -> usize {
    cluster
        .objects()
        .iter()
        .filter(|o| o["kind"] == "Secret")
        .count()
}

#[test]
fn delete_all_resources_and_force_delete() {
    let cluster = Arc::new(FakeCluster::new());
    insert_secrets(&cluster);
    let groups = vec![secrets_group(None)];
    // Something must be managed for a pass to run at all.
    let resources = vec![managed("v1", "ConfigMap", "n1", "unmatched")];
    let remaining = pass(&cluster, None, &resources, &groups).unwrap();
    assert_eq!(remaining, Vec::<ObjectRef>::new());
    assert_eq!(secrets(&cluster), 0);
}

#[test]
fn a_group_with_a_target_name_deletes_all_matching_objects_in_the_secondary_cluster() {
    let cluster = Arc::new(FakeCluster::new());
    let second = Arc::new(FakeCluster::new());
    insert_secrets(&cluster);
    insert_secrets(&second);
    cluster.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "managed", "namespace": "n1"}}));
    let groups = vec![
        secrets_group(Some("other")),
        DeletionGroupDefinition {
            predefined_resource_group: Some(PredefinedResourceGroup {
                r#type: GROUP_NAMESPACED.into(),
                // The primary Secrets carry a finalizer as well.
                force_delete: true,
            }),
            ..Default::default()
        },
    ];
    let resources = vec![
        // A managed Secret is not taken by the secondary group: it is in the primary cluster.
        managed("v1", "Secret", "n1", "a"),
        managed("v1", "ConfigMap", "n1", "managed"),
    ];
    assert!(!group_matches(&groups[0], &resources[0]));
    let remaining = pass(&cluster, Some(&second), &resources, &groups).unwrap();
    assert_eq!(remaining, Vec::<ObjectRef>::new());
    assert_eq!(
        secrets(&second),
        0,
        "all secrets of the secondary cluster go"
    );
    // The primary cluster lost only its managed objects.
    assert!(
        cluster
            .object(&ObjectRef::new("v1", "ConfigMap", "n1", "managed"))
            .is_none()
    );
    assert!(
        cluster
            .object(&ObjectRef::new("v1", "Secret", "n1", "a"))
            .is_none()
    );
    assert!(
        cluster
            .object(&ObjectRef::new("v1", "Secret", "n2", "b"))
            .is_some()
    );
}

#[test]
fn a_missing_secondary_target_stops_the_deletion_before_anything_is_deleted() {
    let cluster = Arc::new(FakeCluster::new());
    insert_secrets(&cluster);
    let groups = vec![
        DeletionGroupDefinition {
            predefined_resource_group: Some(PredefinedResourceGroup {
                r#type: GROUP_NAMESPACED.into(),
                force_delete: false,
            }),
            ..Default::default()
        },
        secrets_group(Some("other")),
    ];
    let resources = vec![managed("v1", "Secret", "n1", "a")];
    let err = pass(&cluster, None, &resources, &groups).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unable to read secondary target other: targets.landscaper.gardener.cloud \"other\" not found"
    );
    assert!(matches!(err, DeleteError::SecondaryTarget(_)));
    assert_eq!(secrets(&cluster), 2);
}

#[test]
fn a_target_name_requires_delete_all_resources() {
    let cluster = Arc::new(FakeCluster::new());
    let second = Arc::new(FakeCluster::new());
    insert_secrets(&second);
    let mut group = secrets_group(Some("other"));
    group
        .custom_resource_group
        .as_mut()
        .unwrap()
        .delete_all_resources = false;
    let resources = vec![managed("v1", "ConfigMap", "n1", "unmatched")];
    let err = pass(&cluster, Some(&second), &resources, &[group]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid deletion group: customResourceGroup.DeleteAllResources must be true if TargetName is set"
    );
    assert_eq!(secrets(&second), 2);
}
