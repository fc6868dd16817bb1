//! The deployer end to end against the in-memory cluster.

use std::sync::Arc;

use landscaper_model::{DeployItemStatus, ObjectMeta, Phase, Target};
use serde_json::json;

use super::*;
use crate::applier::apply;
use crate::kubernetes::{ClusterClient, FakeCluster, ObjectRef};

/// The primary cluster for every target, except the secondary target of [`SECOND`].
struct FakeFactory {
    primary: Arc<FakeCluster>,
    second: Arc<FakeCluster>,
}

/// The kubeconfig of the second cluster's Target.
const SECOND: &str = "second";

impl ClientFactory for FakeFactory {
    fn client<'a>(
        &'a self,
        target: Option<&'a Target>,
    ) -> BoxFuture<'a, Result<Arc<dyn ClusterClient>, DeployerError>> {
        let kubeconfig = target
            .and_then(|t| t.spec.config.as_ref())
            .and_then(|c| c.get("kubeconfig"))
            .and_then(Value::as_str);
        let client: Arc<dyn ClusterClient> = match kubeconfig {
            Some(SECOND) => self.second.clone(),
            _ => self.primary.clone(),
        };
        Box::pin(async move { Ok(client) })
    }
}

struct Harness {
    cluster: Arc<FakeCluster>,
    /// The cluster of the secondary target `other` (when in `secondary_targets`).
    second: Arc<FakeCluster>,
    secondary_targets: crate::SecondaryTargets,
    deployer: ManifestDeployer,
    item: DeployItem,
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

fn config(manifests: Value) -> Value {
    json!({"apiVersion": config::V1ALPHA2, "kind": "ProviderConfiguration", "manifests": manifests})
}

fn cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "acc"}, "data": data})
}

fn cm_ref(name: &str) -> ObjectRef {
    ObjectRef::new("v1", "ConfigMap", "acc", name)
}

impl Harness {
    fn new(config: Value) -> Harness {
        let cluster = Arc::new(FakeCluster::new());
        let mut item = DeployItem {
            metadata: ObjectMeta::namespaced("demo", "my-item"),
            ..Default::default()
        };
        item.spec.r#type = MANIFEST_DEPLOYER_TYPE.into();
        item.spec.config = Some(config);
        item.status = Some(DeployItemStatus {
            phase: Some(Phase::Init),
            ..Default::default()
        });
        let second = Arc::new(FakeCluster::new());
        Harness {
            deployer: ManifestDeployer::with_client_factory(Arc::new(FakeFactory {
                primary: cluster.clone(),
                second: second.clone(),
            })),
            cluster,
            second,
            secondary_targets: crate::SecondaryTargets::new(),
            item,
        }
    }

    fn request(&self) -> DeployRequest<'_> {
        DeployRequest::new(&self.item, None).with_secondary_targets(&self.secondary_targets)
    }

    /// One reconcile, its result written to the item as the dispatcher does.
    fn reconcile(&mut self) -> Result<ReconcileResult, DeployerError> {
        let result = block_on(self.deployer.reconcile(self.request()));
        if let Ok(r) = &result {
            let status = self.item.status.get_or_insert_with(Default::default);
            if let Some(p) = &r.phase {
                status.phase = Some(p.clone());
            }
            if let Some(ps) = &r.provider_status {
                status.provider_status = Some(ps.clone());
            }
        }
        result
    }

    fn delete(&mut self) -> Result<DeleteResult, DeployerError> {
        block_on(self.deployer.delete(self.request()))
    }

    fn set_config(&mut self, config: Value) {
        self.item.spec.config = Some(config);
        self.item.status.as_mut().unwrap().phase = Some(Phase::Init);
    }

    fn managed(&self) -> Vec<String> {
        let status = self
            .item
            .status
            .as_ref()
            .and_then(|s| s.provider_status.as_ref());
        ProviderStatus::parse(status.unwrap())
            .unwrap()
            .managed_resources
            .iter()
            .map(|m| format!("{} {}", m.policy.as_str(), m.resource.object_ref()))
            .collect()
    }
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "acc"},
           "spec": {"replicas": replicas}})
}

#[test]
fn applies_crds_then_cluster_scoped_then_namespaced_and_succeeds() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.org"},
        "spec": {"group": "example.org", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"}}});
    let widget = json!({"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "acc"}});
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "acc"}});
    let mut h = Harness::new(config(json!([
        {"manifest": cm("b", json!({}))}, {"manifest": widget}, {"manifest": ns}, {"manifest": crd},
        {"manifest": cm("a", json!({}))}
    ])));
    let result = h.reconcile().unwrap();
    assert_eq!(result.phase, Some(Phase::Succeeded));
    assert_eq!(
        h.cluster.log(),
        vec![
            "create CustomResourceDefinition widgets.example.org",
            "create Namespace acc",
            "create ConfigMap acc/b",
            "create Widget acc/w",
            "create ConfigMap acc/a",
        ]
    );
    // Sorted within each group by Go's ObjectReference text (Kind first).
    assert_eq!(
        h.managed(),
        vec![
            "manage CustomResourceDefinition widgets.example.org",
            "manage Namespace acc",
            "manage ConfigMap acc/a",
            "manage ConfigMap acc/b",
            "manage Widget acc/w",
        ]
    );
    let stored = h.cluster.object(&cm_ref("a")).unwrap();
    assert_eq!(
        stored["metadata"]["labels"][apply::MANAGED_DEPLOY_ITEM_LABEL],
        "my-item"
    );
    let status = result.provider_status.unwrap();
    assert_eq!(status["apiVersion"], config::V1ALPHA2);
    assert_eq!(status["managedResources"][0]["resource"]["uid"], "uid-1");
}

#[test]
fn policies_decide_what_is_applied_tracked_and_deleted() {
    let mut h = Harness::new(config(json!([
        {"policy": "manage", "manifest": cm("managed", json!({"v": "1"}))},
        {"policy": "keep", "manifest": cm("kept", json!({"v": "1"}))},
        {"policy": "ignore", "manifest": cm("ignored", json!({"v": "1"}))},
        {"policy": "immutable", "manifest": cm("immutable", json!({"v": "1"}))},
        {"policy": "fallback", "manifest": cm("theirs", json!({"v": "1"}))},
        {"policy": "fallback", "manifest": cm("fallback", json!({"v": "1"}))},
    ])));
    h.cluster.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "theirs", "namespace": "acc", "labels": {apply::MANAGED_DEPLOY_ITEM_LABEL: "other"}},
        "data": {"v": "0"}}));
    assert_eq!(h.reconcile().unwrap().phase, Some(Phase::Succeeded));
    assert!(h.cluster.object(&cm_ref("ignored")).is_none());
    assert_eq!(
        h.cluster.object(&cm_ref("theirs")).unwrap()["data"]["v"],
        "0"
    );
    assert_eq!(
        h.managed(),
        vec![
            "fallback ConfigMap acc/fallback",
            "immutable ConfigMap acc/immutable",
            "keep ConfigMap acc/kept",
            "manage ConfigMap acc/managed",
        ]
    );

    // A second revision changes every value: immutable stays as created.
    h.set_config(config(json!([
        {"policy": "manage", "manifest": cm("managed", json!({"v": "2"}))},
        {"policy": "keep", "manifest": cm("kept", json!({"v": "2"}))},
        {"policy": "immutable", "manifest": cm("immutable", json!({"v": "2"}))},
        {"policy": "fallback", "manifest": cm("fallback", json!({"v": "2"}))},
    ])));
    assert_eq!(h.reconcile().unwrap().phase, Some(Phase::Succeeded));
    for (name, v) in [
        ("managed", "2"),
        ("kept", "2"),
        ("immutable", "1"),
        ("fallback", "2"),
    ] {
        assert_eq!(
            h.cluster.object(&cm_ref(name)).unwrap()["data"]["v"],
            v,
            "{name}"
        );
    }

    // Deletion removes manage, immutable and (own) fallback objects, keeps `keep`.
    h.cluster.clear_log();
    assert_eq!(h.delete().unwrap(), DeleteResult::Deleted);
    assert!(h.cluster.object(&cm_ref("kept")).is_some());
    assert!(h.cluster.object(&cm_ref("theirs")).is_some());
    for name in ["managed", "immutable", "fallback"] {
        assert!(h.cluster.object(&cm_ref(name)).is_none(), "{name}");
    }
}

#[test]
fn update_strategies_change_existing_objects_as_landscaper() {
    let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "acc", "labels": {"extra": "x"}},
        "data": {"a": "live", "b": "live", "empty": ""}});
    let desired = cm("c", json!({"a": "new", "empty": "filled", "n": "new"}));
    let run = |strategy: &str| {
        let mut h = Harness::new(
            json!({"apiVersion": config::V1ALPHA2, "kind": "ProviderConfiguration",
            "updateStrategy": strategy, "manifests": [{"manifest": desired.clone()}]}),
        );
        h.cluster.insert(live.clone());
        let result = h.reconcile();
        (h.cluster.object(&cm_ref("c")).unwrap(), result)
    };
    let (updated, _) = run("update");
    assert_eq!(
        updated["data"],
        json!({"a": "new", "empty": "filled", "n": "new"})
    );
    assert!(updated["metadata"]["labels"].get("extra").is_none());
    let (patched, _) = run("patch");
    assert_eq!(
        patched["data"],
        json!({"a": "new", "empty": "filled", "n": "new"})
    );
    assert!(patched["metadata"]["labels"].get("extra").is_none());
    assert_eq!(
        patched["metadata"]["uid"], "uid-1",
        "the object is patched, not replaced"
    );
    let (merged, _) = run("merge");
    assert_eq!(
        merged["data"],
        json!({"a": "live", "b": "live", "empty": "filled", "n": "new"})
    );
    assert_eq!(merged["metadata"]["labels"]["extra"], "x");
    let (overwritten, _) = run("mergeOverwrite");
    assert_eq!(
        overwritten["data"],
        json!({"a": "new", "b": "live", "empty": "filled", "n": "new"})
    );
    assert_eq!(
        overwritten["metadata"]["labels"][apply::MANAGED_DEPLOY_ITEM_LABEL],
        "my-item"
    );
    let (unchanged, result) = run("replace");
    assert_eq!(unchanged["data"]["a"], "live");
    assert_eq!(result.unwrap().phase, Some(Phase::Progressing));
}

#[test]
fn objects_dropped_from_the_configuration_are_deleted() {
    let mut h = Harness::new(config(json!([
        {"manifest": cm("stays", json!({}))},
        {"manifest": cm("goes", json!({})), "annotateBeforeDelete": {"cleanup": "yes"}},
        {"policy": "keep", "manifest": cm("kept", json!({}))},
    ])));
    h.reconcile().unwrap();
    h.cluster.clear_log();
    h.set_config(config(json!([{"manifest": cm("stays", json!({}))}])));
    assert_eq!(h.reconcile().unwrap().phase, Some(Phase::Succeeded));
    assert!(h.cluster.object(&cm_ref("goes")).is_none());
    assert!(h.cluster.object(&cm_ref("kept")).is_some());
    assert_eq!(
        h.cluster.log(),
        vec![
            "update ConfigMap acc/stays",
            "update ConfigMap acc/goes",
            "delete ConfigMap acc/goes"
        ]
    );
    assert_eq!(h.managed(), vec!["manage ConfigMap acc/stays"]);
}

#[test]
fn waits_for_orphans_with_finalizers_and_keeps_tracking_them() {
    let mut h = Harness::new(config(
        json!([{"manifest": cm("a", json!({}))}, {"manifest": cm("b", json!({}))}]),
    ));
    h.reconcile().unwrap();
    let mut b = h.cluster.object(&cm_ref("b")).unwrap();
    b["metadata"]["finalizers"] = json!(["example.org/hold"]);
    h.cluster.insert(b);
    h.set_config(config(json!([{"manifest": cm("a", json!({}))}])));
    let result = h.reconcile().unwrap();
    assert_eq!(result.phase, Some(Phase::Progressing));
    assert_eq!(
        h.managed(),
        vec!["manage ConfigMap acc/a", "manage ConfigMap acc/b"]
    );
    // Still waiting, same status: the reason becomes the error.
    let err = h.reconcile().unwrap_err();
    assert!(
        err.message
            .contains("waiting for orphaned objects to be deleted: ConfigMap acc/b"),
        "{err}"
    );
    assert!(!err.is_unrecoverable());
    h.cluster.remove(&cm_ref("b"));
    assert_eq!(h.reconcile().unwrap().phase, Some(Phase::Succeeded));
    assert_eq!(h.managed(), vec!["manage ConfigMap acc/a"]);
}

#[test]
fn progresses_until_the_deployment_is_ready() {
    let mut h = Harness::new(config(json!([{"manifest": deployment("echo", 2)}])));
    let first = h.reconcile().unwrap();
    assert_eq!(first.phase, Some(Phase::Progressing));
    assert!(first.provider_status.is_some());
    let reference = ObjectRef::new("apps/v1", "Deployment", "acc", "echo");
    h.cluster.set_status(&reference, json!({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 1}));
    let err = h.reconcile().unwrap_err();
    assert_eq!(
        err.message,
        "apps/v1, Kind=Deployment echo/acc is not ready: not enough ready replicas (1/2)"
    );
    h.cluster.set_status(&reference, json!({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2}));
    assert_eq!(h.reconcile().unwrap().phase, Some(Phase::Succeeded));
}

#[test]
fn disabled_default_checks_and_custom_checks() {
    let mut h = Harness::new(
        json!({"apiVersion": config::V1ALPHA2, "kind": "ProviderConfiguration",
        "readinessChecks": {"disableDefault": true, "custom": [{"name": "flag",
            "resourceSelector": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "acc"}],
            "requirements": [{"jsonPath": ".data.ready", "operator": "==", "values": [{"value": "true"}]}]}]},
        "manifests": [{"manifest": deployment("never-ready", 1)}, {"manifest": cm("c", json!({"ready": "false"}))}]}),
    );
    assert_eq!(h.reconcile().unwrap().phase, Some(Phase::Progressing));
    let err = h.reconcile().unwrap_err();
    assert!(err.message.contains("readiness check \"flag\""), "{err}");
    assert!(
        err.message
            .contains("resource requirement is not fulfiled for field .data.ready"),
        "{err}"
    );
    // The next revision renders the flag set.
    let mut config = h.item.spec.config.clone().unwrap();
    config["manifests"][1]["manifest"]["data"]["ready"] = json!("true");
    h.set_config(config);
    assert_eq!(h.reconcile().unwrap().phase, Some(Phase::Succeeded));
}

#[test]
fn exports_wait_for_their_values() {
    let mut h = Harness::new(
        json!({"apiVersion": config::V1ALPHA2, "kind": "ProviderConfiguration",
        "exports": {"exports": [{"key": "settings.greeting", "jsonPath": ".data.greeting",
            "fromResource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "acc"}}]},
        "manifests": [{"manifest": cm("c", json!({}))}]}),
    );
    let first = h.reconcile().unwrap();
    assert_eq!(first.phase, Some(Phase::Progressing));
    assert_eq!(first.export, None);
    let err = h.reconcile().unwrap_err();
    assert_eq!(err.reason, "ReadExportValues");
    h.set_config(json!({"apiVersion": config::V1ALPHA2, "kind": "ProviderConfiguration",
        "exports": {"exports": [{"key": "settings.greeting", "jsonPath": ".data.greeting",
            "fromResource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "acc"}}]},
        "manifests": [{"manifest": cm("c", json!({"greeting": "hello"}))}]}));
    let done = h.reconcile().unwrap();
    assert_eq!(done.phase, Some(Phase::Succeeded));
    assert_eq!(
        done.export,
        Some(json!({"settings": {"greeting": "hello"}}))
    );
}

#[test]
fn patch_after_deployment_and_annotations() {
    let mut h = Harness::new(config(json!([{"manifest": cm("c", json!({"a": "1"})),
        "annotateBeforeCreate": {"created": "yes"},
        "patchAfterDeployment": {"data": {"b": "2"}},
        "patchBeforeDelete": {"data": {"c": "3"}},
        "annotateBeforeDelete": {"deleting": "yes"}}])));
    assert_eq!(h.reconcile().unwrap().phase, Some(Phase::Succeeded));
    let c = h.cluster.object(&cm_ref("c")).unwrap();
    assert_eq!(c["data"], json!({"a": "1", "b": "2"}));
    assert_eq!(c["metadata"]["annotations"]["created"], "yes");
    let status = h
        .item
        .status
        .as_ref()
        .unwrap()
        .provider_status
        .clone()
        .unwrap();
    assert_eq!(
        status["managedResources"][0]["patchBeforeDelete"],
        json!({"data": {"c": "3"}})
    );
    assert_eq!(
        status["managedResources"][0]["annotateBeforeDelete"],
        json!({"deleting": "yes"})
    );
    // Before deletion the object is annotated and patched; a finalizer keeps it to see that.
    let mut c = c;
    c["metadata"]["finalizers"] = json!(["hold"]);
    h.cluster.insert(c);
    assert_eq!(h.delete().unwrap(), DeleteResult::Pending);
    let c = h.cluster.object(&cm_ref("c")).unwrap();
    assert_eq!(c["metadata"]["annotations"]["deleting"], "yes");
    assert_eq!(c["data"]["c"], "3");
    h.cluster.remove(&cm_ref("c"));
    assert_eq!(h.delete().unwrap(), DeleteResult::Deleted);
}

#[test]
fn deletes_namespaced_then_cluster_scoped_then_crds_waiting_for_each_group() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.org"},
        "spec": {"group": "example.org", "scope": "Cluster", "names": {"kind": "Widget", "plural": "widgets"}}});
    let mut h = Harness::new(config(json!([
        {"manifest": crd}, {"manifest": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "acc"}}},
        {"manifest": cm("c", json!({}))},
        {"manifest": {"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w"}}},
    ])));
    h.reconcile().unwrap();
    let mut c = h.cluster.object(&cm_ref("c")).unwrap();
    c["metadata"]["finalizers"] = json!(["hold"]);
    h.cluster.insert(c);
    h.cluster.clear_log();
    assert_eq!(h.delete().unwrap(), DeleteResult::Pending);
    assert_eq!(h.cluster.log(), vec!["delete ConfigMap acc/c"]);
    h.cluster.remove(&cm_ref("c"));
    assert_eq!(h.delete().unwrap(), DeleteResult::Deleted);
    assert_eq!(
        h.cluster.log(),
        vec![
            "delete ConfigMap acc/c",
            "delete Namespace acc",
            "delete Widget w",
            "delete CustomResourceDefinition widgets.example.org"
        ]
    );
}

#[test]
fn custom_deletion_groups_replace_the_default_order() {
    let groups = json!([
        {"customResourceGroup": {"resources": [{"apiVersion": "v1", "kind": "Secret"}]}},
        {"predefinedResourceGroup": {"type": "namespaced-resources"}},
    ]);
    let mut h = Harness::new(
        json!({"apiVersion": config::V1ALPHA2, "kind": "ProviderConfiguration",
        "deletionGroups": groups,
        "manifests": [{"manifest": cm("c", json!({}))},
            {"manifest": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "acc"}}},
            {"manifest": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "left"}}}]}),
    );
    h.reconcile().unwrap();
    h.cluster.clear_log();
    assert_eq!(h.delete().unwrap(), DeleteResult::Deleted);
    // The namespace matches no group, so it stays.
    assert_eq!(
        h.cluster.log(),
        vec!["delete Secret acc/s", "delete ConfigMap acc/c"]
    );
    assert!(
        h.cluster
            .object(&ObjectRef::new("v1", "Namespace", "", "left"))
            .is_some()
    );
}

#[test]
fn errors_carry_landscapers_codes() {
    let mut h = Harness::new(
        json!({"apiVersion": config::V1ALPHA2, "kind": "ProviderConfiguration",
        "manifests": [{"policy": "manage"}]}),
    );
    let err = h.reconcile().unwrap_err();
    assert!(err.is_unrecoverable());
    assert_eq!(err.reason, "ValidateProviderConfiguration");
    assert_eq!(
        err.message,
        "[0].manifest: Required value: manifest must be defined"
    );

    let mut h = Harness::new(config(json!([{"manifest": cm("c", json!({}))}])));
    h.cluster.set_unreachable(true);
    let err = h.reconcile().unwrap_err();
    assert!(!err.is_unrecoverable(), "{err}");
    assert!(err.message.contains("unreachable"), "{err}");

    let mut h = Harness::new(config(
        json!([{"manifest": {"apiVersion": "nope/v1", "kind": "Thing", "metadata": {"name": "x"}}}]),
    ));
    let err = h.reconcile().unwrap_err();
    assert!(!err.is_unrecoverable());
    assert!(
        err.message.contains("no matches for kind \"Thing\""),
        "{err}"
    );
}

#[test]
fn delete_without_provider_status_needs_no_cluster() {
    let mut h = Harness::new(config(json!([])));
    h.cluster.set_unreachable(true);
    assert_eq!(h.delete().unwrap(), DeleteResult::Deleted);
    h.item.spec.config = None;
    assert_eq!(h.delete().unwrap(), DeleteResult::Deleted);
}

fn secondary_config() -> Value {
    json!({"apiVersion": config::V1ALPHA2, "kind": "ProviderConfiguration",
    "manifests": [{"manifest": cm("local", json!({}))}],
    "readinessChecks": {"custom": [{"name": "remote", "targetName": "other",
        "resourceSelector": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "remote", "namespace": "acc"}],
        "requirements": [{"jsonPath": ".data.ready", "operator": "==", "values": [{"value": "true"}]}]}]},
    "exports": {"exports": [{"key": "remote.value", "jsonPath": ".data.value", "targetName": "other",
        "fromResource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "remote", "namespace": "acc"}}]},
    "deletionGroups": [
        {"customResourceGroup": {"deleteAllResources": true, "targetName": "other",
            "resources": [{"apiVersion": "v1", "kind": "Secret", "namespaces": ["acc"]}]}},
        {"predefinedResourceGroup": {"type": "namespaced-resources"}}
    ]})
}

#[test]
fn readiness_exports_and_deletion_use_the_secondary_target() {
    let mut h = Harness::new(secondary_config());
    assert_eq!(
        h.deployer.secondary_target_names(&h.item),
        vec!["other".to_string()]
    );
    h.secondary_targets.insert(
        "other".into(),
        crate::applier::targets::tests::resolved("other", SECOND),
    );

    // The readiness check waits for the object in the second cluster.
    assert_eq!(h.reconcile().unwrap().phase, Some(Phase::Progressing));
    let err = h.reconcile().unwrap_err();
    assert!(!err.is_unrecoverable(), "{err}");
    assert_eq!(err.operation, "CustomCheckResourcesReadinessManifest");
    assert!(
        err.message
            .contains("readiness check \"remote\": v1, Kind=ConfigMap remote/acc is not ready"),
        "{err}"
    );
    h.second.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "remote", "namespace": "acc"}, "data": {"ready": "false", "value": "v2"}}));
    assert!(h.reconcile().is_err());
    // The same object in the primary cluster does not count.
    h.cluster.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "remote", "namespace": "acc"}, "data": {"ready": "true", "value": "v1"}}));
    assert!(h.reconcile().is_err());
    h.second.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "remote", "namespace": "acc"}, "data": {"ready": "true", "value": "v2"}}));
    let result = h.reconcile().unwrap();
    assert_eq!(result.phase, Some(Phase::Succeeded));
    // The export is read from the second cluster.
    assert_eq!(result.export, Some(json!({"remote": {"value": "v2"}})));

    // Deletion: all Secrets of the group's namespaces go in the second cluster, the managed
    // objects in the primary one.
    for name in ["s1", "s2"] {
        h.second.insert(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": "acc"}}));
    }
    h.second.insert(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "elsewhere", "namespace": "kept"}}));
    assert_eq!(h.delete().unwrap(), DeleteResult::Deleted);
    let second_secrets: Vec<String> = h
        .second
        .objects()
        .iter()
        .filter(|o| o["kind"] == "Secret")
        .map(|o| ObjectRef::of(o).to_string())
        .collect();
    assert_eq!(second_secrets, vec!["Secret kept/elsewhere"]);
    assert!(h.cluster.object(&cm_ref("local")).is_none());
    assert!(h.second.object(&cm_ref("remote")).is_some());
}

#[test]
fn a_missing_secondary_target_is_retried_and_an_invalid_one_is_a_configuration_problem() {
    let mut h = Harness::new(secondary_config());
    // The applied objects are recorded before the error shows.
    let result = h.reconcile().unwrap();
    assert_eq!(result.phase, Some(Phase::Progressing));
    assert_eq!(h.managed(), vec!["manage ConfigMap acc/local"]);
    let err = h.reconcile().unwrap_err();
    assert!(!err.is_unrecoverable(), "{err}");
    assert_eq!(err.reason, "SecondaryTarget");
    assert_eq!(
        err.message,
        "readiness check \"remote\": unable to read secondary target other: targets.landscaper.gardener.cloud \"other\" not found"
    );

    h.secondary_targets.insert(
        "other".into(),
        crate::SecondaryTarget::Unresolvable("secrets \"kubeconfig\" not found".into()),
    );
    let err = h.reconcile().unwrap_err();
    assert!(!err.is_unrecoverable(), "{err}");
    assert_eq!(
        err.message,
        "readiness check \"remote\": unable to resolve secondary target other: secrets \"kubeconfig\" not found"
    );

    h.secondary_targets.insert(
        "other".into(),
        crate::SecondaryTarget::Invalid("exec configurations are not supported".into()),
    );
    let err = h.reconcile().unwrap_err();
    assert!(err.is_unrecoverable(), "{err}");
    assert_eq!(
        err.message,
        "readiness check \"remote\": unable to get secondary target client other: exec configurations are not supported"
    );

    // Deleting needs the deletion group's target as well.
    h.secondary_targets.clear();
    let err = h.delete().unwrap_err();
    assert!(!err.is_unrecoverable(), "{err}");
    assert_eq!(err.operation, DELETE_OPERATION);
    assert_eq!(
        err.message,
        "unable to read secondary target other: targets.landscaper.gardener.cloud \"other\" not found"
    );
    assert!(h.cluster.object(&cm_ref("local")).is_some());
}

#[test]
fn exports_report_a_missing_secondary_target() {
    let mut h = Harness::new(
        json!({"apiVersion": config::V1ALPHA2, "kind": "ProviderConfiguration",
            "manifests": [{"manifest": cm("local", json!({}))}],
            "exports": {"exports": [{"key": "k", "jsonPath": ".data", "targetName": "other",
                "fromResource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "local", "namespace": "acc"}}]}}),
    );
    assert_eq!(h.reconcile().unwrap().phase, Some(Phase::Progressing));
    let err = h.reconcile().unwrap_err();
    assert!(!err.is_unrecoverable(), "{err}");
    assert_eq!(err.reason, "ReadExportValues");
    assert_eq!(
        err.message,
        "export k: unable to read secondary target other: targets.landscaper.gardener.cloud \"other\" not found"
    );
}

#[test]
fn the_readiness_timeout_is_honoured_and_names_the_object() {
    let mut h = Harness::new(
        json!({"apiVersion": config::V1ALPHA2, "kind": "ProviderConfiguration",
        "readinessChecks": {"timeout": "2m"},
        "manifests": [{"manifest": deployment("echo", 2)}]}),
    );
    assert_eq!(h.reconcile().unwrap().phase, Some(Phase::Progressing));
    // Waiting (recoverable) while the item has waited less than the timeout at this check.
    let err = h.reconcile().unwrap_err();
    assert!(!err.is_unrecoverable(), "{err}");
    let record = |h: &mut Harness, ago: i64| {
        let since = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(ago);
        h.item.status.as_mut().unwrap().last_error = Some(landscaper_model::Error {
            last_transition_time: Some(since.to_string()),
            ..err.clone()
        });
    };
    record(&mut h, 60);
    assert!(!h.reconcile().unwrap_err().is_unrecoverable());
    // Two minutes after the wait started: a final timeout that keeps the cause.
    record(&mut h, 121);
    let timeout = h.reconcile().unwrap_err();
    assert!(
        timeout.has_code(landscaper_model::constants::ERR_TIMEOUT),
        "{timeout:?}"
    );
    assert_eq!(timeout.reason, "ReadinessCheckTimeout");
    assert!(
        timeout.message.contains("within 2m")
            && timeout
                .message
                .contains("Kind=Deployment echo/acc is not ready"),
        "{}",
        timeout.message
    );
    // Without readinessChecks.timeout the item waits until its own timeout.
    let mut h2 = Harness::new(config(json!([{"manifest": deployment("echo", 2)}])));
    assert_eq!(h2.reconcile().unwrap().phase, Some(Phase::Progressing));
    record(&mut h2, 100_000);
    assert!(!h2.reconcile().unwrap_err().is_unrecoverable());
    // A wrong duration is a configuration error.
    assert!(
        config::ProviderConfiguration::parse(&json!({"readinessChecks": {"timeout": "soon"}}))
            .is_err()
    );
}
