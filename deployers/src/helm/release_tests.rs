//! The helm deployer's real releases (`helmDeployment: true`) on the in-memory cluster:
//! install, upgrade (new revision, previous superseded, dropped objects deleted unless kept),
//! no new revision while the item waits in `Progressing`, ownership conflicts, a pending
//! record, CRDs, and uninstall.

use std::path::Path;
use std::sync::Arc;

use landscaper_model::Phase;
use serde_json::json;

use super::release::codec;
use super::release::model::Status;
use super::release::storage::Storage;
use super::tests::{block_on, config, deployer, item, write_chart};
use super::*;
use crate::kubernetes::{FakeCluster, ObjectRef};

/// Adds to the demo chart: a kept ConfigMap, one dropped when `.Values.extra` is false, a hook,
/// NOTES.txt and a CRD.
fn write_release_chart(manifests: &Path) {
    write_chart(manifests);
    let dir = manifests.join("charts/demo");
    std::fs::write(
        dir.join("templates/more.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-kept\n  annotations:\n    helm.sh/resource-policy: keep\ndata:\n  a: b\n{{- if .Values.extra }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra\ndata:\n  revision: {{ .Release.Revision | quote }}\n{{- end }}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("templates/hook.yaml"),
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-migrate\n  annotations:\n    helm.sh/hook: post-install,post-upgrade\n    helm.sh/hook-weight: \"3\"\n    helm.sh/hook-delete-policy: before-hook-creation, Hook-Succeeded\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: m, image: busybox}]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("templates/NOTES.txt"),
        "Installed {{ .Release.Name }}\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("crds")).unwrap();
    std::fs::write(
        dir.join("crds/widgets.yaml"),
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets}\n  versions: [{name: v1, served: true, storage: true}]\n",
    )
    .unwrap();
}

/// The in-memory cluster with Jobs and Pods that finish (hook Jobs complete unless annotated
/// `kube-test-server/outcome`).
fn running_cluster() -> Arc<FakeCluster> {
    let cluster = Arc::new(FakeCluster::new());
    cluster.set_run_workloads(true);
    cluster
}

fn real(extra: Value) -> Value {
    let mut c = config(extra);
    c.as_object_mut().unwrap().remove("helmDeployment");
    c
}

fn history(cluster: &FakeCluster) -> Vec<(u32, Status)> {
    block_on(Storage::new(cluster, "apps").history("rel"))
        .unwrap()
        .releases
        .iter()
        .map(|r| (r.version, r.status()))
        .collect()
}

fn cm(cluster: &FakeCluster, name: &str) -> Option<Value> {
    cluster.object(&ObjectRef::new("v1", "ConfigMap", "apps", name))
}

/// The next job of the item: `Init` again, with the provider status of the last one.
fn next_job(item: &mut DeployItem, result: &ReconcileResult) {
    let status = item.status.as_mut().unwrap();
    status.phase = Some(Phase::Init);
    status.provider_status = result.provider_status.clone();
}

#[test]
fn a_release_is_installed_upgraded_and_uninstalled_as_helm_does() {
    let dir = tempfile::tempdir().unwrap();
    write_release_chart(dir.path());
    let cluster = running_cluster();
    let deployer = deployer(&cluster, dir.path());
    let mut item = item(real(json!({
        "values": {"greeting": "hi", "extra": true},
        "exports": {"exports": [{"key": "revision", "jsonPath": ".Release.Revision"}]},
    })));
    let result = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(result.phase, Some(Phase::Succeeded), "{result:?}");
    assert_eq!(result.export, Some(json!({"revision": 1})));
    assert_eq!(history(&cluster), [(1, Status::Deployed)]);

    // The record as Helm writes it.
    let secret = cluster
        .object(&ObjectRef::new(
            "v1",
            "Secret",
            "apps",
            "sh.helm.release.v1.rel.v1",
        ))
        .expect("release record");
    assert_eq!(secret["type"], "helm.sh/release.v1");
    let labels = &secret["metadata"]["labels"];
    assert_eq!(
        (
            &labels["name"],
            &labels["owner"],
            &labels["status"],
            &labels["version"]
        ),
        (
            &json!("rel"),
            &json!("helm"),
            &json!("deployed"),
            &json!("1")
        )
    );
    let release = codec::from_secret(&secret).unwrap();
    let info = release.info.as_ref().unwrap();
    assert_eq!(info.description, "Install complete");
    assert_eq!(info.notes, "Installed rel\n");
    assert_eq!(
        release.config,
        *json!({"greeting": "hi", "extra": true})
            .as_object()
            .unwrap()
    );
    assert!(
        release
            .manifest
            .starts_with("---\n# Source: demo/templates/cm.yaml\napiVersion: v1\n"),
        "{}",
        release.manifest
    );
    assert!(
        !release.manifest.contains("CustomResourceDefinition") && !release.manifest.contains("Job")
    );
    assert_eq!(release.hooks.len(), 1);
    let hook = &release.hooks[0];
    assert_eq!(
        (hook.name.as_str(), hook.kind.as_str(), hook.weight),
        ("rel-migrate", "Job", 3)
    );
    assert_eq!(hook.events, ["post-install", "post-upgrade"]);
    assert_eq!(
        hook.delete_policies,
        ["before-hook-creation", "hook-succeeded"]
    );
    // The post-install hook ran: its run is recorded, its Job deleted (hook-succeeded).
    assert_eq!(
        hook.last_run.phase,
        super::release::model::HookPhase::Succeeded
    );
    assert!(hook.last_run.started_at.is_some() && hook.last_run.completed_at.is_some());
    assert!(
        cluster
            .log()
            .iter()
            .any(|l| l == "create Job apps/rel-migrate"),
        "{:?}",
        cluster.log()
    );
    assert!(
        cluster
            .object(&ObjectRef::new("batch/v1", "Job", "apps", "rel-migrate"))
            .is_none()
    );
    let chart = release.chart.as_ref().unwrap();
    assert_eq!(chart.metadata.as_ref().unwrap().app_version, "1.2");
    assert!(
        chart
            .files
            .iter()
            .flatten()
            .any(|f| f.name == "crds/widgets.yaml")
    );

    // Objects carry Helm's ownership metadata, not the manifest-mode label.
    let object = cm(&cluster, "rel-cm").unwrap();
    assert_eq!(
        object["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "Helm"
    );
    assert_eq!(
        object["metadata"]["annotations"]["meta.helm.sh/release-name"],
        "rel"
    );
    assert_eq!(
        object["metadata"]["annotations"]["meta.helm.sh/release-namespace"],
        "apps"
    );
    assert!(
        object["metadata"]["labels"]
            .get(MANAGED_DEPLOY_ITEM_LABEL)
            .is_none()
    );
    let crd = ObjectRef::new(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "",
        "widgets.example.com",
    );
    assert!(
        cluster.object(&crd).is_some(),
        "CRDs of crds/ are installed"
    );

    // The provider status lists the manifest's objects, as Landscaper's helm deployer does.
    let status = result.provider_status.clone().unwrap();
    assert_eq!(status["apiVersion"], config::V1ALPHA1);
    let names: Vec<&str> = status["managedResources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["resource"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["rel-cm", "rel-kept", "rel-extra"]);
    assert!(status["managedResources"][0].get("policy").is_none());

    // A live edit and a changed CRD: the upgrade reverts the edit, leaves the CRD alone.
    let mut edited = cm(&cluster, "rel-cm").unwrap();
    edited["data"]["greeting"] = json!("edited");
    edited["metadata"]["labels"]["ops"] = json!("added");
    block_on(cluster.update(&edited)).unwrap();
    std::fs::write(
        dir.path().join("charts/demo/crds/widgets.yaml"),
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n  labels: {changed: \"yes\"}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets}\n  versions: [{name: v1, served: true, storage: true}]\n",
    )
    .unwrap();
    next_job(&mut item, &result);
    item.spec.config = Some(real(json!({
        "values": {"greeting": "bye", "extra": false},
        "exports": {"exports": [{"key": "revision", "jsonPath": ".Release.Revision"}]},
    })));
    let result = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(result.phase, Some(Phase::Succeeded), "{result:?}");
    assert_eq!(result.export, Some(json!({"revision": 2})));
    assert_eq!(
        history(&cluster),
        [(1, Status::Superseded), (2, Status::Deployed)]
    );
    let object = cm(&cluster, "rel-cm").unwrap();
    assert_eq!(object["data"]["greeting"], "bye");
    assert_eq!(
        object["metadata"]["labels"]["ops"], "added",
        "live additions stay"
    );
    assert!(
        cm(&cluster, "rel-extra").is_none(),
        "dropped from the chart"
    );
    assert!(
        cluster.object(&crd).unwrap()["metadata"]
            .get("labels")
            .is_none(),
        "CRDs are never upgraded"
    );
    let upgraded = codec::from_secret(
        &cluster
            .object(&ObjectRef::new(
                "v1",
                "Secret",
                "apps",
                "sh.helm.release.v1.rel.v2",
            ))
            .unwrap(),
    )
    .unwrap();
    let info = upgraded.info.unwrap();
    assert_eq!(info.description, "Upgrade complete");
    assert_eq!(
        info.first_deployed,
        release.info.as_ref().unwrap().first_deployed
    );

    // Waiting in Progressing: readiness again, no new revision.
    let status = item.status.as_mut().unwrap();
    status.phase = Some(Phase::Progressing);
    status.provider_status = result.provider_status.clone();
    let again = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(again.phase, Some(Phase::Succeeded));
    assert_eq!(again.export, Some(json!({"revision": 2})));
    assert_eq!(history(&cluster).len(), 2);

    // Uninstall: the objects and every record go; kept objects and CRDs stay.
    item.status.as_mut().unwrap().phase = Some(Phase::Succeeded);
    let deleted = block_on(deployer.delete(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(deleted, DeleteResult::Deleted);
    assert!(cm(&cluster, "rel-cm").is_none());
    assert!(
        cm(&cluster, "rel-kept").is_some(),
        "helm.sh/resource-policy: keep"
    );
    assert!(cluster.object(&crd).is_some(), "CRDs are never deleted");
    assert!(history(&cluster).is_empty());
    // Nothing left: a second delete is done at once.
    let deleted = block_on(deployer.delete(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(deleted, DeleteResult::Deleted);
}

#[test]
fn objects_of_others_are_not_taken_over_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    write_chart(dir.path());
    let cluster = running_cluster();
    cluster.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "rel-cm", "namespace": "apps"}, "data": {"owner": "someone"}}));
    let deployer = deployer(&cluster, dir.path());
    let item = item(real(json!({})));
    let error = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap_err();
    assert_eq!(
        (error.operation.as_str(), error.reason.as_str()),
        ("RealHelmDeployer.Deploy", "installRelease")
    );
    assert_eq!(
        error.message,
        "unable to install helm chart release: rendered manifests contain a resource that already exists. \
         Unable to continue with install: ConfigMap \"rel-cm\" in namespace \"apps\" exists and cannot be \
         imported into the current release: invalid ownership metadata; label validation error: missing key \
         \"app.kubernetes.io/managed-by\": must be set to \"Helm\"; annotation validation error: missing key \
         \"meta.helm.sh/release-name\": must be set to \"rel\"; annotation validation error: missing key \
         \"meta.helm.sh/release-namespace\": must be set to \"apps\""
    );
    assert!(
        history(&cluster).is_empty(),
        "no record for a refused install"
    );
    assert_eq!(cm(&cluster, "rel-cm").unwrap()["data"]["owner"], "someone");

    let item = super::tests::item(real(json!({
        "helmDeploymentConfig": {"install": {"takeOwnership": true}},
    })));
    let result = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(result.phase, Some(Phase::Succeeded), "{result:?}");
    let object = cm(&cluster, "rel-cm").unwrap();
    assert_eq!(object["data"]["greeting"], "hello");
    assert_eq!(
        object["metadata"]["annotations"]["meta.helm.sh/release-name"],
        "rel"
    );
}

#[test]
fn a_pending_record_is_reported_and_unblocked() {
    let dir = tempfile::tempdir().unwrap();
    write_chart(dir.path());
    let cluster = running_cluster();
    let deployer = deployer(&cluster, dir.path());
    let mut item = item(real(json!({})));
    let result = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(result.phase, Some(Phase::Succeeded));
    // An interrupted upgrade left revision 2 pending.
    let storage = Storage::new(cluster.as_ref(), "apps");
    let mut stuck = block_on(storage.history("rel")).unwrap().releases[0].clone();
    stuck.version = 2;
    stuck.info_mut().status = Status::PendingUpgrade;
    block_on(storage.create(&stuck, 0)).unwrap();

    next_job(&mut item, &result);
    let error = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap_err();
    assert_eq!(
        (error.operation.as_str(), error.reason.as_str()),
        ("RealHelmDeployer.Deploy", "upgradeRelease")
    );
    assert!(
        error
            .message
            .contains("another operation (install/upgrade/rollback) is in progress")
            && error.message.contains("revision 2")
            && error.message.contains("pending-upgrade"),
        "{}",
        error.message
    );
    assert!(error.is_retryable());
    // Landscaper's unblockPendingHelmRelease removed it: the retry upgrades to revision 2.
    assert_eq!(history(&cluster), [(1, Status::Deployed)]);
    let result = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(result.phase, Some(Phase::Succeeded));
    assert_eq!(
        history(&cluster),
        [(1, Status::Superseded), (2, Status::Deployed)]
    );
}

#[test]
fn a_corrupt_latest_record_fails_clearly_without_a_new_revision() {
    let dir = tempfile::tempdir().unwrap();
    write_chart(dir.path());
    let cluster = running_cluster();
    let deployer = deployer(&cluster, dir.path());
    let mut item = item(real(json!({})));
    let result = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    let key = ObjectRef::new("v1", "Secret", "apps", "sh.helm.release.v1.rel.v1");
    let mut secret = cluster.object(&key).unwrap();
    secret["data"]["release"] = json!("Y29ycnVwdA==");
    block_on(cluster.update(&secret)).unwrap();
    next_job(&mut item, &result);
    let error = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap_err();
    assert_eq!(
        (error.operation.as_str(), error.reason.as_str()),
        ("GetHelmRelease", "GetRelease")
    );
    assert!(
        error.message.contains("sh.helm.release.v1.rel.v1")
            && error.message.contains("cannot be read"),
        "{}",
        error.message
    );
    let secrets =
        block_on(cluster.list("v1", "Secret", Some("apps"), &Default::default())).unwrap();
    assert_eq!(secrets.len(), 1, "no new revision");
}

/// Helm's rollback whose wait times out: the rollback revision says `Release "NAME" failed:
/// ...`, the revision it started from is left as it was (not superseded, unlike a failed
/// update), the error is `release NAME failed: ...`.
#[test]
fn an_atomic_rollback_that_never_gets_ready_is_recorded_as_helms() {
    let dir = tempfile::tempdir().unwrap();
    write_chart(dir.path());
    std::fs::write(
        dir.path().join("charts/demo/templates/web.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
    )
    .unwrap();
    let cluster = running_cluster();
    let deployer = deployer(&cluster, dir.path());
    // Installed without waiting; the in-memory cluster never makes Deployments ready.
    let mut item = item(real(json!({})));
    let _ = block_on(deployer.reconcile(DeployRequest::new(&item, None)));
    assert_eq!(history(&cluster), [(1, Status::Deployed)]);
    item.status = Some(landscaper_model::DeployItemStatus {
        phase: Some(Phase::Init),
        ..Default::default()
    });
    item.spec.config = Some(real(json!({
        "values": {"greeting": "two"},
        "helmDeploymentConfig": {"upgrade": {"atomic": true, "timeout": "300ms"}},
    })));
    let error = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap_err();
    assert!(
        error.message.starts_with(
            "unable to upgrade helm chart release: an error occurred while rolling back the release. original upgrade error: Upgrade \"rel\" failed: context deadline exceeded: Deployment is not ready: apps/rel-web."
        ) && error.message.contains(": release rel failed: context deadline exceeded"),
        "{}",
        error.message
    );
    assert_eq!(
        history(&cluster),
        [
            (1, Status::Deployed),
            (2, Status::Failed),
            (3, Status::Failed)
        ]
    );
    let rollback = record(&cluster, 3);
    let description = &rollback.info.as_ref().unwrap().description;
    assert!(
        description.starts_with("Release \"rel\" failed: context deadline exceeded"),
        "{description}"
    );
}

#[test]
fn an_atomic_install_that_never_gets_ready_is_uninstalled() {
    let dir = tempfile::tempdir().unwrap();
    write_chart(dir.path());
    std::fs::write(
        dir.path().join("charts/demo/templates/web.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
    )
    .unwrap();
    let cluster = running_cluster();
    let deployer = deployer(&cluster, dir.path());
    // The in-memory cluster never makes Deployments ready.
    let item = item(real(json!({
        "helmDeploymentConfig": {"install": {"atomic": true, "timeout": "300ms"}},
    })));
    let error = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap_err();
    assert_eq!(
        (error.operation.as_str(), error.reason.as_str()),
        ("RealHelmDeployer.Deploy", "installRelease")
    );
    assert!(
        error.message.starts_with(
            "unable to install helm chart release: release rel failed, and has been uninstalled due to atomic being set: context deadline exceeded: Deployment is not ready: apps/rel-web."
        ) && error.message.contains("rel-web"),
        "{}",
        error.message
    );
    assert!(history(&cluster).is_empty(), "no records left");
    assert!(cm(&cluster, "rel-cm").is_none(), "objects removed");

    // A timeout that is not a duration is reported as Landscaper does.
    let item = super::tests::item(real(json!({
        "helmDeploymentConfig": {"install": {"timeout": "soon"}},
    })));
    let error = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap_err();
    assert_eq!(
        (error.operation.as_str(), error.reason.as_str()),
        ("NewInstallConfiguration", "UnmarshalConfig")
    );
}

#[test]
fn a_rollback_redeploys_an_older_revision_as_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    write_release_chart(dir.path());
    let cluster = running_cluster();
    let deployer = deployer(&cluster, dir.path());
    let mut item = item(real(json!({"values": {"greeting": "one", "extra": true}})));
    let result = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    next_job(&mut item, &result);
    item.spec.config = Some(real(json!({"values": {"greeting": "two"}})));
    block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    assert!(cm(&cluster, "rel-extra").is_none());

    let storage = Storage::new(cluster.as_ref(), "apps");
    let before = block_on(storage.history("rel")).unwrap();
    let release = block_on(super::release::action::rollback(
        cluster.as_ref(),
        &before,
        1,
        Default::default(),
    ))
    .unwrap();
    assert_eq!(release.version, 3);
    assert_eq!(release.info.as_ref().unwrap().description, "Rollback to 1");
    assert_eq!(
        history(&cluster),
        [
            (1, Status::Superseded),
            (2, Status::Superseded),
            (3, Status::Deployed)
        ]
    );
    assert_eq!(cm(&cluster, "rel-cm").unwrap()["data"]["greeting"], "one");
    assert_eq!(cm(&cluster, "rel-extra").unwrap()["data"]["revision"], "1");
    let missing = block_on(super::release::action::rollback(
        cluster.as_ref(),
        &before,
        9,
        Default::default(),
    ))
    .unwrap_err();
    assert_eq!(missing.to_string(), "release has no 9 version");
}

#[test]
fn uninstall_with_wait_times_out_as_helm_does_and_still_removes_the_records() {
    let dir = tempfile::tempdir().unwrap();
    write_chart(dir.path());
    let cluster = running_cluster();
    let deployer = deployer(&cluster, dir.path());
    let mut item = item(real(json!({
        "helmDeploymentConfig": {"uninstall": {"wait": true, "timeout": "300ms"}},
    })));
    let result = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(result.phase, Some(Phase::Succeeded));
    // A finalizer keeps the ConfigMap after its deletion.
    let mut object = cm(&cluster, "rel-cm").unwrap();
    object["metadata"]["finalizers"] = json!(["example.com/hold"]);
    block_on(cluster.update(&object)).unwrap();
    item.status.as_mut().unwrap().phase = Some(Phase::Succeeded);
    let error = block_on(deployer.delete(DeployRequest::new(&item, None))).unwrap_err();
    assert_eq!(
        (error.operation.as_str(), error.reason.as_str()),
        ("DeleteHelmRelease", "Uninstall")
    );
    assert!(
        error
            .message
            .ends_with("uninstallation completed with 1 error(s): context deadline exceeded"),
        "{}",
        error.message
    );
    assert!(history(&cluster).is_empty(), "records removed as Helm does");
    // The retry finds no release: done.
    let deleted = block_on(deployer.delete(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(deleted, DeleteResult::Deleted);
}

#[test]
fn skip_schema_validation_lets_values_the_schema_refuses_through() {
    let dir = tempfile::tempdir().unwrap();
    write_chart(dir.path());
    std::fs::write(
        dir.path().join("charts/demo/values.schema.json"),
        r#"{"type": "object", "properties": {"greeting": {"type": "string", "maxLength": 5}}}"#,
    )
    .unwrap();
    let cluster = running_cluster();
    let deployer = deployer(&cluster, dir.path());
    let refused = item(real(json!({"values": {"greeting": "far too long"}})));
    let error = block_on(deployer.reconcile(DeployRequest::new(&refused, None))).unwrap_err();
    assert_eq!(error.reason, "RenderHelmValues");
    assert!(error.message.contains("greeting"), "{}", error.message);
    assert!(history(&cluster).is_empty());

    let skipped = item(real(json!({
        "values": {"greeting": "far too long"},
        "helmDeploymentConfig": {"install": {"skipSchemaValidation": true}},
    })));
    let result = block_on(deployer.reconcile(DeployRequest::new(&skipped, None))).unwrap();
    assert_eq!(result.phase, Some(Phase::Succeeded));
    assert_eq!(
        cm(&cluster, "rel-cm").unwrap()["data"]["greeting"],
        "far too long"
    );
}

/// The demo chart with hook Jobs: two pre-install ones (weights 5 and -5, the first
/// `hook-succeeded`), a pre-upgrade, a post-upgrade, a pre-delete and a pre-rollback one, and
/// a test Pod. A
/// Job's outcome on the running cluster comes from `.Values.outcomes.<hook>` (`Complete` by
/// default, `Fail`).
fn write_hook_chart(manifests: &Path) {
    write_chart(manifests);
    let job = |name: &str, event: &str, weight: i32, policy: &str| {
        format!(
            "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{{{ .Release.Name }}}}-{name}\n  annotations:\n    helm.sh/hook: {event}\n    helm.sh/hook-weight: \"{weight}\"\n{policy}    kube-test-server/outcome: {{{{ .Values.outcomes.{key} | default \"Complete\" }}}}\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{{name: c, image: busybox}}]\n",
            key = name.replace('-', "")
        )
    };
    let hooks = [
        job(
            "pre-a",
            "pre-install",
            5,
            "    helm.sh/hook-delete-policy: hook-succeeded\n",
        ),
        job("pre-b", "pre-install", -5, ""),
        job("pre-up", "pre-upgrade", 0, ""),
        job("post-up", "post-upgrade", 0, ""),
        job("pre-del", "pre-delete", 0, ""),
        job("pre-rb", "pre-rollback", 0, ""),
        "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}-test\n  annotations:\n    helm.sh/hook: test\nspec:\n  containers: [{name: t, image: busybox}]\n".to_string(),
    ]
    .concat();
    std::fs::write(manifests.join("charts/demo/templates/hooks.yaml"), hooks).unwrap();
    std::fs::write(
        manifests.join("charts/demo/values.yaml"),
        "greeting: hello\nfail: false\noutcomes: {}\n",
    )
    .unwrap();
}

fn job_ref(name: &str) -> ObjectRef {
    ObjectRef::new("batch/v1", "Job", "apps", name)
}

fn position(log: &[String], entry: &str) -> usize {
    log.iter()
        .position(|l| l == entry)
        .unwrap_or_else(|| panic!("{entry} not in {log:?}"))
}

fn record(cluster: &FakeCluster, revision: u32) -> super::release::model::Release {
    block_on(Storage::new(cluster, "apps").history("rel"))
        .unwrap()
        .releases
        .into_iter()
        .find(|r| r.version == revision)
        .unwrap_or_else(|| panic!("no revision {revision}"))
}

fn phase_of(release: &super::release::model::Release, hook: &str) -> HookPhase {
    release
        .hooks
        .iter()
        .find(|h| h.name == hook)
        .unwrap_or_else(|| panic!("no hook {hook}"))
        .last_run
        .phase
}

use super::release::model::HookPhase;

#[test]
fn hooks_run_in_weight_order_at_their_events_and_a_failed_pre_upgrade_fails_the_revision() {
    let dir = tempfile::tempdir().unwrap();
    write_hook_chart(dir.path());
    let cluster = running_cluster();
    let deployer = deployer(&cluster, dir.path());
    let mut item = item(real(json!({})));
    let result = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(result.phase, Some(Phase::Succeeded), "{result:?}");

    // Weight -5 before weight 5, both before the release's objects; the hook-succeeded one
    // deleted after all succeeded; the default policy keeps the other until its next run.
    let log = cluster.log();
    let b = position(&log, "create Job apps/rel-pre-b");
    let a = position(&log, "create Job apps/rel-pre-a");
    let objects = position(&log, "create ConfigMap apps/rel-cm");
    assert!(b < a && a < objects, "{log:?}");
    assert!(position(&log, "delete Job apps/rel-pre-a") > a);
    assert!(cluster.object(&job_ref("rel-pre-a")).is_none());
    assert!(cluster.object(&job_ref("rel-pre-b")).is_some());
    assert!(
        !log.iter().any(|l| l.contains("rel-test")
            || l.contains("rel-pre-up")
            || l.contains("rel-post-up")),
        "test hooks and other events never run: {log:?}"
    );
    let first = record(&cluster, 1);
    assert_eq!(first.status(), Status::Deployed);
    assert_eq!(phase_of(&first, "rel-pre-a"), HookPhase::Succeeded);
    assert_eq!(phase_of(&first, "rel-pre-b"), HookPhase::Succeeded);
    assert_eq!(phase_of(&first, "rel-pre-up"), HookPhase::None);
    assert_eq!(phase_of(&first, "rel-test"), HookPhase::None);
    let pre_b = first.hooks.iter().find(|h| h.name == "rel-pre-b").unwrap();
    assert_eq!(
        pre_b.delete_policies,
        ["before-hook-creation"],
        "Helm stores the default policy of a hook it ran"
    );

    // A failing pre-upgrade Job: the item's error names the hook, the Job and the reason; the
    // new revision is failed, nothing of the upgrade applied, no other revision written.
    next_job(&mut item, &result);
    item.spec.config = Some(real(json!({
        "values": {"greeting": "two", "outcomes": {"preup": "Fail"}}
    })));
    cluster.clear_log();
    let error = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap_err();
    assert_eq!(
        (error.operation.as_str(), error.reason.as_str()),
        ("RealHelmDeployer.Deploy", "upgradeRelease")
    );
    for part in [
        "pre-upgrade",
        "demo/templates/hooks.yaml",
        "rel-pre-up",
        "BackoffLimitExceeded",
    ] {
        assert!(error.message.contains(part), "{part}: {}", error.message);
    }
    assert_eq!(
        history(&cluster),
        [(1, Status::Deployed), (2, Status::Failed)]
    );
    let failed = record(&cluster, 2);
    let description = &failed.info.as_ref().unwrap().description;
    assert!(
        description.starts_with(
            "Upgrade \"rel\" failed: pre-upgrade hooks failed: hook pre-upgrade demo/templates/hooks.yaml failed: "
        ),
        "{description}"
    );
    assert_eq!(phase_of(&failed, "rel-pre-up"), HookPhase::Failed);
    // As Helm's execHook: the record was written with the hook Running before its Job was
    // created.
    let log = cluster.log();
    let running = position(&log, "update Secret apps/sh.helm.release.v1.rel.v2");
    assert!(
        running < position(&log, "create Job apps/rel-pre-up"),
        "{log:?}"
    );
    assert_eq!(cm(&cluster, "rel-cm").unwrap()["data"]["greeting"], "hello");
    assert!(!cluster.log().iter().any(|l| l.contains("rel-post-up")));

    // Fixed: the next upgrade replaces the old pre-upgrade Job (before-hook-creation), runs
    // post-upgrade after the objects, and is deployed.
    item.spec.config = Some(real(json!({"values": {"greeting": "three"}})));
    cluster.clear_log();
    let result = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(result.phase, Some(Phase::Succeeded), "{result:?}");
    let log = cluster.log();
    let deleted = position(&log, "delete Job apps/rel-pre-up");
    let created = position(&log, "create Job apps/rel-pre-up");
    let patched = log
        .iter()
        .position(|l| l.contains("ConfigMap apps/rel-cm"))
        .unwrap();
    let post = position(&log, "create Job apps/rel-post-up");
    assert!(
        deleted < created && created < patched && patched < post,
        "{log:?}"
    );
    assert_eq!(
        history(&cluster),
        [
            (1, Status::Superseded),
            (2, Status::Failed),
            (3, Status::Deployed)
        ]
    );
    let third = record(&cluster, 3);
    assert_eq!(phase_of(&third, "rel-pre-up"), HookPhase::Succeeded);
    assert_eq!(phase_of(&third, "rel-post-up"), HookPhase::Succeeded);

    // A failing pre-delete hook stops the uninstall: nothing is deleted; the latest record
    // shows what Helm's execHook recorded: uninstalling, the hook running.
    next_job(&mut item, &result);
    item.spec.config = Some(real(json!({
        "values": {"greeting": "three", "outcomes": {"predel": "Fail"}}
    })));
    let result = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    let fourth = history(&cluster);
    assert_eq!(fourth.last(), Some(&(4, Status::Deployed)));
    next_job(&mut item, &result);
    let error = block_on(deployer.delete(DeployRequest::new(&item, None))).unwrap_err();
    for part in ["pre-delete", "rel-pre-del", "BackoffLimitExceeded"] {
        assert!(error.message.contains(part), "{part}: {}", error.message);
    }
    let after = history(&cluster);
    assert_eq!(after[..after.len() - 1], fourth[..fourth.len() - 1]);
    assert_eq!(after.last(), Some(&(4, Status::Uninstalling)));
    assert_eq!(
        phase_of(&record(&cluster, 4), "rel-pre-del"),
        HookPhase::Running
    );
    assert!(cm(&cluster, "rel-cm").is_some());
}

/// Helm's rollback answers a failed rollback hook as it is and leaves the rollback revision
/// `pending-rollback` (with the hook recorded running); Landscaper's unblockPendingHelmRelease
/// removes only pending-install/-upgrade records, so the release stays blocked, with the
/// pending revision named in the item's error.
#[test]
fn a_failed_rollback_hook_leaves_the_rollback_pending_as_helm_does() {
    let dir = tempfile::tempdir().unwrap();
    write_hook_chart(dir.path());
    let cluster = running_cluster();
    let deployer = deployer(&cluster, dir.path());
    // Revision 1's pre-rollback Job fails (its outcome is rendered with revision 1's values).
    let mut item = item(real(json!({"values": {"outcomes": {"prerb": "Fail"}}})));
    let result = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    assert_eq!(result.phase, Some(Phase::Succeeded), "{result:?}");

    // An atomic upgrade whose pre-upgrade hook fails: rolled back to revision 1, whose
    // pre-rollback hook fails.
    next_job(&mut item, &result);
    item.spec.config = Some(real(json!({
        "values": {"greeting": "two", "outcomes": {"prerb": "Fail", "preup": "Fail"}},
        "helmDeploymentConfig": {"upgrade": {"atomic": true, "timeout": "10s"}},
    })));
    let error = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap_err();
    assert!(
        error.message.starts_with(
            "unable to upgrade helm chart release: an error occurred while rolling back the release. original upgrade error: Upgrade \"rel\" failed: pre-upgrade hooks failed: "
        ) && error.message.contains("hook pre-rollback demo/templates/hooks.yaml failed"),
        "{}",
        error.message
    );
    assert_eq!(
        history(&cluster),
        [
            (1, Status::Deployed),
            (2, Status::Failed),
            (3, Status::PendingRollback)
        ]
    );
    let rollback = record(&cluster, 3);
    assert_eq!(phase_of(&rollback, "rel-pre-rb"), HookPhase::Running);
    assert_eq!(rollback.info.as_ref().unwrap().description, "Rollback to 1");

    // The next attempt is blocked by the pending rollback, which stays.
    let error = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap_err();
    assert!(
        error.message.contains(
            "another operation (install/upgrade/rollback) is in progress: release rel revision 3 in namespace apps is pending-rollback"
        ),
        "{}",
        error.message
    );
    assert_eq!(
        history(&cluster).last(),
        Some(&(3, Status::PendingRollback))
    );
}

#[test]
fn a_failed_pre_install_hook_fails_the_release_and_atomic_uninstalls_it() {
    let dir = tempfile::tempdir().unwrap();
    write_hook_chart(dir.path());
    let cluster = running_cluster();
    let deployer = deployer(&cluster, dir.path());
    let values = json!({"values": {"outcomes": {"prea": "Fail"}}});
    let error = block_on(deployer.reconcile(DeployRequest::new(&item(real(values.clone())), None)))
        .unwrap_err();
    assert_eq!(
        (error.operation.as_str(), error.reason.as_str()),
        ("RealHelmDeployer.Deploy", "installRelease")
    );
    assert!(
        error.message.starts_with(
            "unable to install helm chart release: Release \"rel\" failed: failed pre-install: hook pre-install demo/templates/hooks.yaml failed: "
        ) && error.message.contains("rel-pre-a")
            && error.message.contains("BackoffLimitExceeded"),
        "{}",
        error.message
    );
    assert_eq!(history(&cluster), [(1, Status::Failed)]);
    let failed = record(&cluster, 1);
    assert_eq!(
        failed.info.as_ref().unwrap().description,
        error
            .message
            .trim_start_matches("unable to install helm chart release: ")
    );
    assert_eq!(phase_of(&failed, "rel-pre-b"), HookPhase::Succeeded);
    assert_eq!(phase_of(&failed, "rel-pre-a"), HookPhase::Failed);
    assert!(cm(&cluster, "rel-cm").is_none(), "no object of the release");

    // With atomic, the failed install is uninstalled.
    let cluster = running_cluster();
    let deployer = super::tests::deployer(&cluster, dir.path());
    let mut config = values;
    config["helmDeploymentConfig"] = json!({"install": {"atomic": true}});
    let error =
        block_on(deployer.reconcile(DeployRequest::new(&item(real(config)), None))).unwrap_err();
    assert!(
        error.message.starts_with(
            "unable to install helm chart release: release rel failed, and has been uninstalled due to atomic being set: failed pre-install: hook pre-install"
        ),
        "{}",
        error.message
    );
    assert!(history(&cluster).is_empty(), "no records left");
}

#[test]
fn the_hook_timeout_is_the_actions_bounded_by_the_items_deadline() {
    use super::release::action::{ActionOptions, hook_timeout};
    use std::time::Duration;
    let options = ActionOptions {
        timeout: Duration::from_secs(300),
        ..Default::default()
    };
    assert_eq!(hook_timeout(&options), Duration::from_secs(300));
    block_on(async {
        let soon = ActionOptions {
            deadline: Some(tokio::time::Instant::now() + Duration::from_secs(10)),
            ..options
        };
        let bounded = hook_timeout(&soon);
        assert!(
            bounded <= Duration::from_secs(10) && bounded > Duration::from_secs(5),
            "{bounded:?}"
        );
        let later = ActionOptions {
            deadline: Some(tokio::time::Instant::now() + Duration::from_secs(3600)),
            ..options
        };
        assert_eq!(hook_timeout(&later), Duration::from_secs(300));
        let passed = ActionOptions {
            deadline: Some(tokio::time::Instant::now()),
            ..options
        };
        assert_eq!(hook_timeout(&passed), Duration::ZERO);
    });
}

#[test]
fn an_atomic_upgrade_whose_pre_upgrade_hook_fails_is_rolled_back_with_the_rollback_hooks() {
    let dir = tempfile::tempdir().unwrap();
    write_hook_chart(dir.path());
    let cluster = running_cluster();
    let deployer = deployer(&cluster, dir.path());
    let mut item = item(real(json!({})));
    let result = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap();
    next_job(&mut item, &result);
    item.spec.config = Some(real(json!({
        "values": {"greeting": "two", "outcomes": {"preup": "Fail"}},
        "helmDeploymentConfig": {"upgrade": {"atomic": true}},
    })));
    cluster.clear_log();
    let error = block_on(deployer.reconcile(DeployRequest::new(&item, None))).unwrap_err();
    assert!(
        error.message.starts_with(
            "unable to upgrade helm chart release: release rel failed, and has been rolled back due to atomic being set: "
        ) && error.message.contains("rel-pre-up")
            && error.message.contains("BackoffLimitExceeded"),
        "{}",
        error.message
    );
    assert_eq!(
        history(&cluster),
        [
            (1, Status::Superseded),
            (2, Status::Failed),
            (3, Status::Deployed)
        ]
    );
    // The rollback to revision 1 ran revision 1's pre-rollback hook, not its upgrade hooks.
    let log = cluster.log();
    assert!(
        position(&log, "create Job apps/rel-pre-up") < position(&log, "create Job apps/rel-pre-rb"),
        "{log:?}"
    );
    assert!(!log.iter().any(|l| l.contains("rel-post-up")), "{log:?}");
    let rollback = record(&cluster, 3);
    assert_eq!(rollback.info.as_ref().unwrap().description, "Rollback to 1");
    assert_eq!(phase_of(&rollback, "rel-pre-rb"), HookPhase::Succeeded);
    assert_eq!(phase_of(&rollback, "rel-pre-up"), HookPhase::None);
}
