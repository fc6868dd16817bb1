//! The manifest deployer through the real kube client against the in-memory API server.

use kube_test_server::{ServerConfig, TestServer};
use landscaper_deployers::{DeleteResult, DeployRequest, Deployer, ManifestDeployer};
use landscaper_store::model::constants::MANIFEST_DEPLOYER_TYPE;
use landscaper_store::model::{DeployItem, DeployItemStatus, ObjectMeta, Phase, Target};
use serde_json::json;

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
                .reconcile(DeployRequest { item: &item, target: Some(&target) })
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
                .delete(DeployRequest { item: &item, target: Some(&target) })
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
