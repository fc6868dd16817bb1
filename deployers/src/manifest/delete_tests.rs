use super::*;
use crate::manifest::config::CustomResourceGroup;
use crate::manifest::status::ObjectReference;

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

#[test]
fn delete_all_resources_and_force_delete() {
    use crate::kubernetes::FakeCluster;
    use serde_json::json;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let cluster = FakeCluster::new();
    cluster.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n1"}}));
    cluster.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n2"}}));
    for (ns, name) in [("n1", "a"), ("n2", "b")] {
        cluster.insert(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": ns, "finalizers": ["hold"]}}));
    }
    let groups = vec![DeletionGroupDefinition {
        custom_resource_group: Some(CustomResourceGroup {
            resources: vec![ResourceType {
                api_version: "v1".into(),
                kind: "Secret".into(),
                ..Default::default()
            }],
            force_delete: true,
            delete_all_resources: true,
            target_name: None,
        }),
        ..Default::default()
    }];
    // Something must be managed for a pass to run at all.
    let resources = vec![managed("v1", "ConfigMap", "n1", "unmatched")];
    let remaining = rt
        .block_on(delete_pass(&cluster, &resources, &groups))
        .unwrap();
    assert_eq!(remaining, Vec::<ObjectRef>::new());
    assert!(cluster.objects().iter().all(|o| o["kind"] != "Secret"));

    let mut secondary = groups.clone();
    secondary[0]
        .custom_resource_group
        .as_mut()
        .unwrap()
        .target_name = Some("other".into());
    let err = rt
        .block_on(delete_pass(&cluster, &resources, &secondary))
        .unwrap_err();
    assert!(matches!(err, DeleteError::SecondaryTarget(_)));
    secondary[0]
        .custom_resource_group
        .as_mut()
        .unwrap()
        .delete_all_resources = false;
    let err = rt
        .block_on(delete_pass(&cluster, &resources, &secondary))
        .unwrap_err();
    assert!(
        err.to_string().contains("DeleteAllResources must be true"),
        "{err}"
    );
}
