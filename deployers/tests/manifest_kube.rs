//! The manifest deployer through the real kube client against the in-memory API server.

use kube_test_server::{ServerConfig, TestServer};
use landscaper_deployers::{
    DeleteResult, DeployRequest, Deployer, DeployerError, ManifestDeployer, ReconcileResult,
    SecondaryTarget, SecondaryTargets,
};
use landscaper_model::constants::MANIFEST_DEPLOYER_TYPE;
use landscaper_model::{DeployItem, DeployItemStatus, ObjectMeta, Phase, Target};
use serde_json::{Value, json};

#[test]
fn applies_a_config_map_and_a_deployment_and_deletes_them() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = TestServer::start(ServerConfig::default()).await.unwrap();
        let mut target = Target::default();
        target.spec.r#type = "landscaper.gardener.cloud/kubernetes-cluster".into();
        target.spec.config = Some(json!({"kubeconfig": server.kubeconfig()}));
        let mut item = DeployItem {
            metadata: ObjectMeta::namespaced("demo", "web"),
            ..Default::default()
        };
        item.spec.r#type = MANIFEST_DEPLOYER_TYPE.into();
        item.spec.config = Some(json!({
            "apiVersion": "manifest.deployer.landscaper.gardener.cloud/v1alpha2",
            "kind": "ProviderConfiguration",
            "manifests": [
                {"manifest": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "acc-01"}}},
                {"manifest": {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "settings", "namespace": "acc-01"}, "data": {"greeting": "hello"}}},
                {"manifest": {"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "echo", "namespace": "acc-01"},
                    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "echo"}},
                        "template": {"metadata": {"labels": {"app": "echo"}},
                            "spec": {"containers": [{"name": "echo", "image": "echo:1"}]}}}}}
            ],
            "exports": {"exports": [{"key": "greeting", "jsonPath": ".data.greeting",
                "fromResource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "settings", "namespace": "acc-01"}}]}
        }));
        item.status = Some(DeployItemStatus {
            phase: Some(Phase::Init),
            ..Default::default()
        });
        let deployer = ManifestDeployer::new();

        let mut last = None;
        for _ in 0..50 {
            let result = deployer
                .reconcile(DeployRequest::new(&item, Some(&target)))
                .await;
            match &result {
                Ok(r) => {
                    let status = item.status.as_mut().unwrap();
                    status.phase = r.phase.clone();
                    status.provider_status = r.provider_status.clone();
                    if r.phase == Some(Phase::Succeeded) {
                        assert_eq!(r.export, Some(json!({"greeting": "hello"})));
                        last = Some(r.clone());
                        break;
                    }
                }
                Err(e) => assert!(!e.is_unrecoverable(), "{e}"),
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(last.is_some(), "the item did not succeed");
        let cm = server.get("v1", "ConfigMap", "acc-01", "settings").unwrap();
        assert_eq!(
            cm["metadata"]["labels"]["manifest.deployer.landscaper.gardener.cloud/deployitem"],
            "web"
        );
        assert!(server.get("apps/v1", "Deployment", "acc-01", "echo").is_some());

        let mut deleted = false;
        for _ in 0..50 {
            match deployer
                .delete(DeployRequest::new(&item, Some(&target)))
                .await
                .unwrap()
            {
                DeleteResult::Deleted => {
                    deleted = true;
                    break;
                }
                DeleteResult::Pending => {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
        assert!(deleted, "the objects were not deleted");
        assert!(server.get("v1", "ConfigMap", "acc-01", "settings").is_none());
        assert!(server.get("v1", "Namespace", "", "acc-01").is_none());
    });
}

fn cluster_target(namespace: &str, name: &str, server: &TestServer) -> Target {
    let mut target = Target {
        metadata: ObjectMeta::namespaced(namespace, name),
        ..Default::default()
    };
    target.spec.r#type = "landscaper.gardener.cloud/kubernetes-cluster".into();
    target.spec.config = Some(json!({"kubeconfig": server.kubeconfig()}));
    target
}

/// One reconcile, its phase and provider status written to the item as the dispatcher does.
async fn reconcile_once(
    deployer: &ManifestDeployer,
    item: &mut DeployItem,
    target: &Target,
    secondary: &SecondaryTargets,
) -> Result<ReconcileResult, DeployerError> {
    let result = deployer
        .reconcile(DeployRequest::new(item, Some(target)).with_secondary_targets(secondary))
        .await;
    if let Ok(r) = &result {
        let status = item.status.as_mut().unwrap();
        status.phase = r.phase.clone();
        status.provider_status = r.provider_status.clone();
    }
    result
}

/// Reconciles `attempts` times (or until the item succeeds); the last answer.
async fn reconcile_attempts(
    deployer: &ManifestDeployer,
    item: &mut DeployItem,
    target: &Target,
    secondary: &SecondaryTargets,
    attempts: usize,
) -> Result<ReconcileResult, DeployerError> {
    let mut last = None;
    for _ in 0..attempts {
        let result = reconcile_once(deployer, item, target, secondary).await;
        if let Err(e) = &result {
            assert!(!e.is_unrecoverable(), "{e}");
        }
        let done = matches!(&result, Ok(r) if r.phase == Some(Phase::Succeeded));
        last = Some(result);
        if done {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    last.unwrap()
}

fn config_map(namespace: &str, name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace}, "data": data})
}

fn secret(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace}, "data": {"k": "dg=="}})
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// Readiness check, export and deletion group with `targetName` talk to the second cluster.
#[test]
fn secondary_targets_read_and_delete_in_the_second_cluster() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let primary = TestServer::start(ServerConfig::default()).await.unwrap();
        let second = TestServer::start(ServerConfig::default()).await.unwrap();
        let target = cluster_target("demo", "primary", &primary);
        let secondary = SecondaryTargets::from([(
            "installer-target".to_string(),
            SecondaryTarget::Resolved(Box::new(cluster_target(
                "demo",
                "installer-target",
                &second,
            ))),
        )]);
        let mut item = DeployItem {
            metadata: ObjectMeta::namespaced("demo", "installer"),
            ..Default::default()
        };
        item.spec.r#type = MANIFEST_DEPLOYER_TYPE.into();
        item.spec.config = Some(json!({
            "apiVersion": "manifest.deployer.landscaper.gardener.cloud/v1alpha2",
            "kind": "ProviderConfiguration",
            "manifests": [
                {"manifest": namespace("acc-02")},
                {"manifest": config_map("acc-02", "installer", json!({"app": "acc-02"}))}
            ],
            "readinessChecks": {"custom": [{"name": "app-ready", "targetName": "installer-target",
                "resourceSelector": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "app-status", "namespace": "acc-02"}],
                "requirements": [{"jsonPath": ".data.phase", "operator": "==", "values": [{"value": "Ready"}]}]}]},
            "exports": {"exports": [
                {"key": "local", "jsonPath": ".data.app",
                    "fromResource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "installer", "namespace": "acc-02"}},
                {"key": "app.endpoint", "jsonPath": ".data.endpoint", "targetName": "installer-target",
                    "fromResource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "app-status", "namespace": "acc-02"}}
            ]},
            "deletionGroups": [
                {"customResourceGroup": {"targetName": "installer-target", "deleteAllResources": true,
                    "resources": [{"apiVersion": "v1", "kind": "Secret", "namespaces": ["acc-02"]}]}},
                {"predefinedResourceGroup": {"type": "namespaced-resources"}},
                {"predefinedResourceGroup": {"type": "cluster-scoped-resources"}}
            ]
        }));
        item.status = Some(DeployItemStatus {
            phase: Some(Phase::Init),
            ..Default::default()
        });
        let deployer = ManifestDeployer::new();
        assert_eq!(
            deployer.secondary_target_names(&item),
            vec!["installer-target".to_string()]
        );

        // The readiness check waits for the object in the second cluster; the same object in
        // the primary cluster does not count.
        let result = reconcile_attempts(&deployer, &mut item, &target, &secondary, 5).await;
        let err = result.unwrap_err();
        assert_eq!(err.operation, "CustomCheckResourcesReadinessManifest", "{err}");
        assert!(err.message.contains("app-status"), "{err}");
        assert!(primary.get("v1", "ConfigMap", "acc-02", "installer").is_some());
        primary
            .create(config_map("acc-02", "app-status", json!({"phase": "Ready", "endpoint": "wrong"})))
            .unwrap();
        second.create(namespace("acc-02")).unwrap();
        second
            .create(config_map("acc-02", "app-status", json!({"phase": "Installing"})))
            .unwrap();
        let err = reconcile_attempts(&deployer, &mut item, &target, &secondary, 3)
            .await
            .unwrap_err();
        assert!(err.message.contains("app-status"), "{err}");
        assert_eq!(
            item.status.as_ref().unwrap().phase,
            Some(Phase::Progressing)
        );

        second.delete("v1", "ConfigMap", "acc-02", "app-status").unwrap();
        second
            .create(config_map(
                "acc-02",
                "app-status",
                json!({"phase": "Ready", "endpoint": "https://app.acc-02.example"}),
            ))
            .unwrap();
        let result = reconcile_attempts(&deployer, &mut item, &target, &secondary, 20)
            .await
            .unwrap();
        assert_eq!(result.phase, Some(Phase::Succeeded));
        // The export with targetName reads from the second cluster.
        assert_eq!(
            result.export,
            Some(json!({"local": "acc-02", "app": {"endpoint": "https://app.acc-02.example"}}))
        );

        // Deletion: the secondary group deletes every Secret of acc-02 in the second cluster
        // (none of them managed by the item), the default groups the managed objects.
        for name in ["generated-1", "generated-2"] {
            second.create(secret("acc-02", name)).unwrap();
        }
        second.create(namespace("other")).unwrap();
        second.create(secret("other", "untouched")).unwrap();
        primary.create(secret("acc-02", "primary-secret")).unwrap();
        let mut deleted = false;
        for _ in 0..50 {
            match deployer
                .delete(DeployRequest::new(&item, Some(&target)).with_secondary_targets(&secondary))
                .await
                .unwrap()
            {
                DeleteResult::Deleted => {
                    deleted = true;
                    break;
                }
                DeleteResult::Pending => {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
        assert!(deleted, "the objects were not deleted");
        assert!(second.list("v1", "Secret", Some("acc-02")).is_empty());
        assert!(second.get("v1", "Secret", "other", "untouched").is_some());
        assert!(second.get("v1", "ConfigMap", "acc-02", "app-status").is_some());
        assert!(primary.get("v1", "ConfigMap", "acc-02", "installer").is_none());
        assert!(primary.get("v1", "Namespace", "", "acc-02").is_none());

        // Without the secondary Target, deleting is a retried error naming it.
        let none = SecondaryTargets::new();
        let err = deployer
            .delete(DeployRequest::new(&item, Some(&target)).with_secondary_targets(&none))
            .await
            .unwrap_err();
        assert!(!err.is_unrecoverable(), "{err}");
        assert_eq!(
            err.message,
            "unable to read secondary target installer-target: targets.landscaper.gardener.cloud \"installer-target\" not found"
        );
    });
}

/// Discovery through the real client lists every served group version with its kinds,
/// subresource kinds included (what `.Capabilities.APIVersions` is built from).
#[test]
fn discovery_lists_group_versions_and_kinds() {
    use landscaper_deployers::kubernetes::{ClusterClient, KubeClusterClient};
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = TestServer::start(ServerConfig::default()).await.unwrap();
        let client = KubeClusterClient::from_kubeconfig(&server.kubeconfig())
            .await
            .unwrap();
        let served = client.served_resources().await.unwrap();
        let set = landscaper_charts::version_set(&served);
        for expected in ["v1", "v1/ConfigMap", "apps/v1", "apps/v1/Deployment"] {
            assert!(set.iter().any(|v| v == expected), "{expected} in {set:?}");
        }
        assert!(served.iter().any(|(gv, _)| gv == "apps/v1"), "{served:?}");
    });
}
