//! Folder ingest against a real store: what one rescan does for each kind of file change.

mod ingest_common;

use ingest_common::*;
use landscaper_store::{Kind, ObjectKey, Transaction};
use serde_json::json;

const OPERATION: &str = "landscaper.gardener.cloud/operation";

#[tokio::test]
async fn new_file_creates_its_objects_and_a_manifest_file_record() {
    let env = Env::new();
    env.write(
        "app.yaml",
        docs(&[dataobject("a", "1"), installation("inst", &[], "bp")]),
    );
    let report = env.ingestor().rescan().await.unwrap();
    assert_eq!(
        (report.files, report.applied, report.objects_created),
        (1, 1, 2)
    );
    assert_eq!(env.dataobject("a").unwrap()["data"], json!({"value": 1}));
    assert_eq!(
        env.installation("inst").unwrap()["metadata"]["namespace"],
        "default"
    );
    let mf = env.manifest_file("app.yaml").unwrap();
    assert_eq!(mf["spec"]["path"], "app.yaml");
    assert_eq!(mf["status"]["phase"], "Applied");
    assert_eq!(mf["status"]["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(mf["status"]["sha256"], mf["status"]["observedSha256"]);
    assert_eq!(
        mf["status"]["objects"],
        json!([
            {"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DataObject", "namespace": "default", "name": "a"},
            {"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation", "namespace": "default", "name": "inst"},
        ])
    );
    assert!(mf["status"].get("lastError").is_none());
}

#[tokio::test]
async fn unchanged_content_is_a_no_op_whatever_the_mtime() {
    let env = Env::new();
    let content = docs(&[dataobject("a", "1"), dataobject("b", "2")]);
    env.write("app.yaml", &content);
    let ingestor = env.ingestor();
    ingestor.rescan().await.unwrap();
    let revision = env.store.revision();
    // Same bytes written again: new mtime, same sha256.
    std::thread::sleep(std::time::Duration::from_millis(20));
    env.write("app.yaml", &content);
    let report = ingestor.rescan().await.unwrap();
    assert_eq!(env.store.revision(), revision);
    assert_eq!((report.applied, report.objects_updated), (0, 0));
    // A fresh ingestor (a restart) agrees: the state comes back from the store.
    env.ingestor().rescan().await.unwrap();
    assert_eq!(env.store.revision(), revision);
}

#[tokio::test]
async fn changed_file_updates_only_changed_objects_and_generation_follows_spec() {
    let env = Env::new();
    let ingestor = env.ingestor();
    env.write(
        "app.yaml",
        docs(&[dataobject("a", "1"), installation("inst", &[], "bp")]),
    );
    ingestor.rescan().await.unwrap();
    let a = env.dataobject("a").unwrap();
    let inst = env.installation("inst").unwrap();
    assert_eq!(generation(&inst), 1);

    // Only a label of the installation changes: new revision, no generation bump, `a` untouched.
    let labelled = installation("inst", &[], "bp")
        .replace("  name: inst\n", "  name: inst\n  labels:\n    team: x\n");
    env.write("app.yaml", docs(&[dataobject("a", "1"), labelled.clone()]));
    let report = ingestor.rescan().await.unwrap();
    assert_eq!(report.objects_updated, 1);
    let inst2 = env.installation("inst").unwrap();
    assert_eq!(inst2["metadata"]["labels"], json!({"team": "x"}));
    assert_eq!(generation(&inst2), 1);
    assert_ne!(rv(&inst2), rv(&inst));
    assert_eq!(rv(&env.dataobject("a").unwrap()), rv(&a));

    // The spec changes: generation 2; uid kept.
    env.write(
        "app.yaml",
        docs(&[
            dataobject("a", "1"),
            labelled.replace("resourceName: bp", "resourceName: bp2"),
        ]),
    );
    ingestor.rescan().await.unwrap();
    let inst3 = env.installation("inst").unwrap();
    assert_eq!(generation(&inst3), 2);
    assert_eq!(uid(&inst3), uid(&inst));
    assert_eq!(inst3["spec"]["blueprint"]["ref"]["resourceName"], "bp2");
}

#[tokio::test]
async fn status_finalizers_and_owner_references_survive_updates() {
    let env = Env::new();
    let ingestor = env.ingestor();
    env.write("app.yaml", installation("inst", &[], "bp"));
    ingestor.rescan().await.unwrap();
    // A controller adds a finalizer and a status.
    let mut inst = env.installation("inst").unwrap();
    inst["metadata"]["finalizers"] = json!(["finalizer.landscaper.gardener.cloud"]);
    inst["status"] = json!({"phase": "Succeeded"});
    env.update(inst).await;
    env.write("app.yaml", installation("inst", &[], "bp2"));
    ingestor.rescan().await.unwrap();
    let inst = env.installation("inst").unwrap();
    assert_eq!(inst["status"]["phase"], "Succeeded");
    assert_eq!(
        inst["metadata"]["finalizers"],
        json!(["finalizer.landscaper.gardener.cloud"])
    );
    assert_eq!(inst["spec"]["blueprint"]["ref"]["resourceName"], "bp2");
}

#[tokio::test]
async fn object_dropped_from_a_file_is_deleted() {
    let env = Env::new();
    let ingestor = env.ingestor();
    env.write(
        "app.yaml",
        docs(&[dataobject("a", "1"), dataobject("b", "2")]),
    );
    ingestor.rescan().await.unwrap();
    env.write("app.yaml", dataobject("a", "1"));
    let report = ingestor.rescan().await.unwrap();
    assert_eq!(report.objects_deleted, 1);
    assert!(env.dataobject("a").is_some());
    assert!(env.dataobject("b").is_none());
    let mf = env.manifest_file("app.yaml").unwrap();
    assert_eq!(mf["status"]["objects"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn removed_file_deletes_objects_and_installations_enter_deletion() {
    let env = Env::new();
    let ingestor = env.ingestor();
    env.write(
        "app.yaml",
        docs(&[dataobject("a", "1"), installation("inst", &[], "bp")]),
    );
    ingestor.rescan().await.unwrap();
    let mut inst = env.installation("inst").unwrap();
    inst["metadata"]["finalizers"] = json!(["finalizer.landscaper.gardener.cloud"]);
    env.update(inst).await;

    env.remove("app.yaml");
    let report = ingestor.rescan().await.unwrap();
    assert_eq!((report.removed, report.objects_deleted), (1, 2));
    assert!(env.dataobject("a").is_none());
    assert!(env.manifest_file("app.yaml").is_none());
    // With a finalizer the store only marks it; the controller runs the deletion flow.
    let inst = env.installation("inst").unwrap();
    assert!(inst["metadata"]["deletionTimestamp"].is_string());

    // The file comes back while the deletion runs: it waits, then re-creates the object.
    env.write(
        "app.yaml",
        docs(&[dataobject("a", "1"), installation("inst", &[], "bp")]),
    );
    let report = ingestor.rescan().await.unwrap();
    assert_eq!(report.failed, 1);
    assert!(
        report.errors[0].message.contains("still being deleted"),
        "{:?}",
        report.errors
    );
    assert!(env.dataobject("a").is_none(), "all or nothing");
    let mut inst = env.installation("inst").unwrap();
    inst["metadata"]["finalizers"] = json!([]);
    env.update(inst).await;
    assert!(env.installation("inst").is_none());
    ingestor.rescan().await.unwrap();
    let inst = env.installation("inst").unwrap();
    assert!(inst["metadata"].get("deletionTimestamp").is_none());
    assert!(env.dataobject("a").is_some());
    assert_eq!(
        env.manifest_file("app.yaml").unwrap()["status"]["phase"],
        "Applied"
    );
}

#[tokio::test]
async fn broken_file_keeps_the_previous_objects_and_records_the_error() {
    let env = Env::new();
    let ingestor = env.ingestor();
    env.write(
        "app.yaml",
        docs(&[dataobject("a", "1"), dataobject("b", "2")]),
    );
    ingestor.rescan().await.unwrap();
    let before = env.dataobject("a").unwrap();
    let good_sha = env.manifest_file("app.yaml").unwrap()["status"]["sha256"].clone();

    // Document 1 changes and document 2 (new) is broken: nothing of the revision applies.
    env.write(
        "app.yaml",
        format!(
            "{}---\n{}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [broken\n",
            dataobject("a", "changed"),
            dataobject("b", "2")
        ),
    );
    let report = ingestor.rescan().await.unwrap();
    assert_eq!(report.failed, 1);
    assert_eq!(env.dataobject("a").unwrap(), before);
    assert!(env.get(Kind::ConfigMap, "default", "broken").is_none());
    let mf = env.manifest_file("app.yaml").unwrap();
    let error = &mf["status"]["lastError"];
    assert_eq!(error["document"], 2);
    assert_eq!(
        (error["line"].as_u64(), error["column"].as_u64()),
        (Some(18), Some(9)),
        "{mf}"
    );
    assert!(error["column"].as_u64().unwrap() >= 1);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("YAML syntax error"),
        "{mf}"
    );
    assert_eq!(mf["status"]["phase"], "Error");
    assert_eq!(mf["status"]["sha256"], good_sha);
    assert_ne!(mf["status"]["observedSha256"], good_sha);
    assert_eq!(mf["status"]["objects"].as_array().unwrap().len(), 2);
    assert!(
        report.errors[0]
            .to_string()
            .starts_with("app.yaml:18:9: document 2: "),
        "{}",
        report.errors[0]
    );

    // Looking again changes nothing.
    let revision = env.store.revision();
    ingestor.rescan().await.unwrap();
    assert_eq!(env.store.revision(), revision);

    // An invalid object (model error) is reported with its field.
    env.write("app.yaml", docs(&[dataobject("a", "1"), "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Target\nmetadata:\n  name: t\nspec:\n  config: {}\n".into()]));
    ingestor.rescan().await.unwrap();
    let error = env.manifest_file("app.yaml").unwrap()["status"]["lastError"].clone();
    assert_eq!(error["field"], "spec.type", "{error}");
    assert_eq!(error["document"], 1);
    assert_eq!(error["line"], 12, "{error}");

    // Fixed: applied, error cleared.
    env.write("app.yaml", docs(&[dataobject("a", "3")]));
    ingestor.rescan().await.unwrap();
    let mf = env.manifest_file("app.yaml").unwrap();
    assert!(mf["status"].get("lastError").is_none());
    assert_eq!(mf["status"]["phase"], "Applied");
    assert_eq!(env.dataobject("a").unwrap()["data"]["value"], 3);
    assert!(env.dataobject("b").is_none());
}

#[tokio::test]
async fn non_utf8_file_is_rejected_with_its_location() {
    let env = Env::new();
    let mut bytes = dataobject("a", "1").into_bytes();
    bytes.extend_from_slice(b"---\nkind: \xC3\x28\n");
    env.write("bin.yaml", &bytes);
    let report = env.ingestor().rescan().await.unwrap();
    assert_eq!(report.failed, 1);
    assert!(env.dataobject("a").is_none());
    let error = env.manifest_file("bin.yaml").unwrap()["status"]["lastError"].clone();
    assert_eq!(
        (
            error["line"].as_u64(),
            error["column"].as_u64(),
            error["document"].as_u64()
        ),
        (Some(8), Some(7), Some(1))
    );
    assert!(error["message"].as_str().unwrap().contains("UTF-8"));
}

#[tokio::test]
async fn two_files_defining_one_object_keep_the_first_owner() {
    let env = Env::new();
    let ingestor = env.ingestor();
    env.write(
        "first.yaml",
        docs(&[dataobject("shared", "1"), dataobject("x", "1")]),
    );
    ingestor.rescan().await.unwrap();
    let shared = env.dataobject("shared").unwrap();

    env.write(
        "second.yaml",
        docs(&[dataobject("why", "2"), dataobject("shared", "2")]),
    );
    let report = ingestor.rescan().await.unwrap();
    assert_eq!(report.failed, 1);
    let message = report.errors[0].to_string();
    assert!(message.starts_with("second.yaml:"), "{message}");
    assert!(message.contains("first.yaml"), "{message}");
    assert!(message.contains("document 1"), "{message}");
    assert_eq!(env.dataobject("shared").unwrap(), shared);
    assert!(
        env.dataobject("why").is_none(),
        "a rejected file applies nothing"
    );

    // Nothing changes while both stay as they are.
    let revision = env.store.revision();
    ingestor.rescan().await.unwrap();
    assert_eq!(env.store.revision(), revision);

    // The first file lets go: the second takes the object over without re-creating it.
    env.write("first.yaml", dataobject("x", "1"));
    ingestor.rescan().await.unwrap();
    let taken = env.dataobject("shared").unwrap();
    assert_eq!(uid(&taken), uid(&shared));
    assert_eq!(taken["data"]["value"], 2);
    assert!(env.dataobject("why").is_some());
    let mf = env.manifest_file("second.yaml").unwrap();
    assert_eq!(mf["status"]["phase"], "Applied");
    assert!(mf["status"].get("lastError").is_none());
}

#[tokio::test]
async fn rejected_file_succeeds_after_the_owner_file_is_deleted_even_after_a_restart() {
    let env = Env::new();
    env.write("a.yaml", dataobject("shared", "a"));
    env.ingestor().rescan().await.unwrap();
    env.write("b.yaml", dataobject("shared", "b"));
    env.ingestor().rescan().await.unwrap();
    assert_eq!(env.dataobject("shared").unwrap()["data"]["value"], "a");
    let uid_before = uid(&env.dataobject("shared").unwrap());

    // A restarted ingestor knows who owns what from the ManifestFile records.
    env.remove("a.yaml");
    env.ingestor().rescan().await.unwrap();
    let shared = env.dataobject("shared").unwrap();
    assert_eq!(shared["data"]["value"], "b");
    assert_eq!(
        uid(&shared),
        uid_before,
        "handed over, not deleted and re-created"
    );
    assert!(env.manifest_file("a.yaml").is_none());
    assert_eq!(
        env.manifest_file("b.yaml").unwrap()["status"]["phase"],
        "Applied"
    );
}

#[tokio::test]
async fn renamed_file_hands_its_objects_over_unchanged() {
    let env = Env::new();
    let ingestor = env.ingestor();
    env.write(
        "old.yaml",
        docs(&[dataobject("a", "1"), installation("inst", &[], "bp")]),
    );
    ingestor.rescan().await.unwrap();
    let inst = env.installation("inst").unwrap();
    std::fs::create_dir_all(env.path("moved")).unwrap();
    std::fs::rename(env.path("old.yaml"), env.path("moved/new.yaml")).unwrap();
    let report = ingestor.rescan().await.unwrap();
    assert_eq!(
        (report.removed, report.applied, report.objects_deleted),
        (1, 1, 0)
    );
    assert_eq!(env.installation("inst").unwrap(), inst, "no write at all");
    assert!(env.manifest_file("old.yaml").is_none());
    assert_eq!(
        env.manifest_file("moved/new.yaml").unwrap()["spec"]["path"],
        "moved/new.yaml"
    );
}

#[tokio::test]
async fn skip_marker_disables_a_file() {
    let env = Env::new();
    let ingestor = env.ingestor();
    env.write("app.yaml", dataobject("a", "1"));
    ingestor.rescan().await.unwrap();
    env.write("app.yaml.skip", "");
    let report = ingestor.rescan().await.unwrap();
    assert_eq!((report.skipped, report.objects_deleted), (1, 1));
    assert!(env.dataobject("a").is_none());
    let mf = env.manifest_file("app.yaml").unwrap();
    assert_eq!(mf["status"]["skipped"], true);
    assert_eq!(mf["status"]["phase"], "Skipped");
    let revision = env.store.revision();
    ingestor.rescan().await.unwrap();
    assert_eq!(env.store.revision(), revision);

    env.remove("app.yaml.skip");
    ingestor.rescan().await.unwrap();
    assert!(env.dataobject("a").is_some());
    let mf = env.manifest_file("app.yaml").unwrap();
    assert!(mf["status"].get("skipped").is_none());
    assert_eq!(mf["status"]["phase"], "Applied");

    // A new file with a marker is recorded but never applied.
    env.write("later.yaml", dataobject("b", "1"));
    env.write("later.yaml.skip", "");
    ingestor.rescan().await.unwrap();
    assert!(env.dataobject("b").is_none());
    assert_eq!(
        env.manifest_file("later.yaml").unwrap()["status"]["skipped"],
        true
    );
}

#[tokio::test]
async fn dot_files_temp_files_and_other_extensions_are_ignored() {
    let env = Env::new();
    for (i, rel) in [
        ".hidden.yaml",
        ".#app.yaml",
        "#app.yaml#",
        "app.yaml~",
        "app.yaml.swp",
        ".app.yaml.swx",
        "4913",
        "app.yaml.tmp",
        "app.yaml.bak",
        "notes.txt",
        ".git/objects.yaml",
        "sub/.cache/x.yaml",
    ]
    .iter()
    .enumerate()
    {
        env.write(rel, dataobject(&format!("ignored-{i}"), "1"));
    }
    env.write("sub/real.yml", dataobject("real", "1"));
    env.write("sub/real.json", r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"k": "v"}}"#);
    let report = env.ingestor().rescan().await.unwrap();
    assert_eq!(report.files, 2);
    assert_eq!(env.count(Kind::DataObject), 1);
    assert_eq!(env.count(Kind::ConfigMap), 1);
    assert_eq!(env.count(Kind::ManifestFile), 2);
}

#[tokio::test]
async fn symlink_loop_is_a_warning_and_the_scan_goes_on() {
    let env = Env::new();
    env.write("dir/a.yaml", dataobject("a", "1"));
    std::os::unix::fs::symlink(env.path("dir"), env.path("dir/loop")).unwrap();
    std::os::unix::fs::symlink(&env.manifests, env.path("dir/root")).unwrap();
    std::os::unix::fs::symlink(env.path("dir/a.yaml"), env.path("link-to-a.yml")).unwrap();
    std::os::unix::fs::symlink(env.path("missing.yaml"), env.path("dangling.yaml")).unwrap();
    let report = env.ingestor().rescan().await.unwrap();
    assert!(
        report.warnings.iter().any(|w| w.contains("symlink loop")),
        "{:?}",
        report.warnings
    );
    assert_eq!(report.files, 2);
    // The same object reached through a symlinked file: one of the two files owns it.
    assert!(env.dataobject("a").is_some());
    assert_eq!(report.applied + report.failed, 2);
}

#[tokio::test]
async fn controller_objects_are_not_taken_over_but_orphans_are_adopted() {
    let env = Env::new();
    let key = ObjectKey::new(Kind::Installation, "default", "sub");
    let sub = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
        "metadata": {"name": "sub", "namespace": "default",
            "labels": {"landscaper.gardener.cloud/encompassed-by": "root"}},
        "spec": {"blueprint": {"ref": {"resourceName": "bp"}}}
    });
    let orphan = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DataObject",
        "metadata": {"name": "orphan", "namespace": "default"}, "data": {"value": 0}
    });
    env.store
        .commit(Transaction::new().create(sub).create(orphan))
        .await
        .unwrap();
    let orphan_uid = uid(&env.dataobject("orphan").unwrap());

    env.write("steal.yaml", installation("sub", &[], "other"));
    env.write("adopt.yaml", dataobject("orphan", "1"));
    let report = env.ingestor().rescan().await.unwrap();
    assert_eq!((report.applied, report.failed), (1, 1));
    let error = report.errors[0].to_string();
    assert!(
        error.starts_with("steal.yaml:") && error.contains("managed by a controller"),
        "{error}"
    );
    assert_eq!(
        env.store.get(&key).unwrap().unwrap()["spec"]["blueprint"]["ref"]["resourceName"],
        "bp"
    );
    let adopted = env.dataobject("orphan").unwrap();
    assert_eq!(adopted["data"]["value"], 1);
    assert_eq!(uid(&adopted), orphan_uid);
}

async fn consume(env: &Env) {
    let mut inst = env.installation("inst").unwrap();
    inst["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove(OPERATION);
    env.update(inst).await;
}

/// The reconcile annotation is a request: a new file revision makes it once, the controller
/// consumes it in the store, and the same revision never makes it again.
#[tokio::test]
async fn operation_annotation_is_re_added_only_by_a_new_revision() {
    let env = Env::new();
    let ingestor = env.ingestor();
    let content = docs(&[
        installation("inst", &[(OPERATION, "reconcile")], "bp"),
        dataobject("d", "1"),
    ]);
    env.write("app.yaml", &content);
    ingestor.rescan().await.unwrap();
    assert_eq!(
        env.installation("inst").unwrap()["metadata"]["annotations"][OPERATION],
        "reconcile"
    );

    consume(&env).await;
    let consumed = env.installation("inst").unwrap();
    assert!(
        consumed["metadata"]
            .get("annotations")
            .is_none_or(|a| a.get(OPERATION).is_none())
    );

    // Same content: nothing is written.
    env.write("app.yaml", &content);
    ingestor.rescan().await.unwrap();
    assert_eq!(env.installation("inst").unwrap(), consumed);
    env.ingestor().rescan().await.unwrap();
    assert_eq!(
        env.installation("inst").unwrap(),
        consumed,
        "not after a restart either"
    );

    // A new revision (only a comment differs) requests again: exactly one write.
    let history_before = env
        .store
        .history(&ObjectKey::new(Kind::Installation, "default", "inst"), 100)
        .unwrap()
        .len();
    env.write("app.yaml", format!("# touched\n{content}"));
    let report = ingestor.rescan().await.unwrap();
    assert_eq!(report.objects_updated, 1, "the DataObject is unchanged");
    let inst = env.installation("inst").unwrap();
    assert_eq!(inst["metadata"]["annotations"][OPERATION], "reconcile");
    assert_eq!(generation(&inst), generation(&consumed));
    let history = env
        .store
        .history(&ObjectKey::new(Kind::Installation, "default", "inst"), 100)
        .unwrap();
    assert_eq!(history.len(), history_before + 1);

    // Looking again does not request again.
    consume(&env).await;
    ingestor.rescan().await.unwrap();
    let inst = env.installation("inst").unwrap();
    assert!(
        inst["metadata"]
            .get("annotations")
            .is_none_or(|a| a.get(OPERATION).is_none())
    );

    // A pending request (e.g. from the CLI) survives an unrelated file edit.
    let mut inst = env.installation("inst").unwrap();
    inst["metadata"]["annotations"] = json!({OPERATION: "interrupt"});
    env.update(inst).await;
    env.write(
        "app.yaml",
        docs(&[installation("inst", &[], "bp"), dataobject("d", "2")]),
    );
    ingestor.rescan().await.unwrap();
    assert_eq!(
        env.installation("inst").unwrap()["metadata"]["annotations"][OPERATION],
        "interrupt"
    );
}

#[tokio::test]
async fn missing_folder_changes_nothing() {
    let env = Env::new();
    let ingestor = env.ingestor();
    env.write("app.yaml", dataobject("a", "1"));
    ingestor.rescan().await.unwrap();
    let revision = env.store.revision();
    std::fs::rename(&env.manifests, env.dir.path().join("elsewhere")).unwrap();
    assert!(ingestor.rescan().await.is_err());
    assert_eq!(env.store.revision(), revision);
    assert!(env.dataobject("a").is_some());
    std::fs::rename(env.dir.path().join("elsewhere"), &env.manifests).unwrap();
    ingestor.rescan().await.unwrap();
    assert_eq!(env.store.revision(), revision);
}

#[tokio::test]
async fn cluster_scoped_manifest_files_cannot_be_written_by_users_and_namespaces_default() {
    let env = Env::new();
    env.write(
        "ns.yaml",
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata:\n  name: a\n  namespace: team\ndata: 1\n---\napiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata:\n  name: a\ndata: 2\n",
    );
    env.ingestor().rescan().await.unwrap();
    assert_eq!(env.get(Kind::DataObject, "team", "a").unwrap()["data"], 1);
    assert_eq!(
        env.get(Kind::DataObject, "default", "a").unwrap()["data"],
        2
    );
}

#[tokio::test]
async fn between_two_new_files_the_older_one_wins() {
    let env = Env::new();
    env.write("a.yaml", dataobject("shared", "a"));
    env.write("b.yaml", dataobject("shared", "b"));
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(env.path("b.yaml"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let report = env.ingestor().rescan().await.unwrap();
    assert_eq!((report.applied, report.failed), (1, 1));
    assert_eq!(env.dataobject("shared").unwrap()["data"]["value"], "b");
    let error = report.errors[0].to_string();
    assert!(
        error.starts_with("a.yaml:") && error.contains("b.yaml"),
        "{error}"
    );
}

/// A controller writing the same objects while a file is applied makes the file's transaction
/// conflict; the ingest re-reads and tries again, losing neither side's change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicts_with_controller_writes_are_retried() {
    let env = Env::new();
    let ingestor = env.ingestor();
    let names: Vec<String> = (0..10).map(|i| format!("inst-{i}")).collect();
    let file = |bp: &str| {
        docs(
            &names
                .iter()
                .map(|n| installation(n, &[], bp))
                .collect::<Vec<_>>(),
        )
    };
    env.write("app.yaml", file("bp"));
    ingestor.rescan().await.unwrap();

    let applied = |blueprint: &str| {
        names.iter().all(|name| {
            let inst = env.installation(name).unwrap();
            inst["spec"]["blueprint"]["ref"]["resourceName"] == blueprint
        })
    };
    for (round, pause) in [(0, true), (1, true), (2, false), (3, false)] {
        let blueprint = format!("bp-{round}");
        env.write("app.yaml", file(&blueprint));
        let store = env.store.clone();
        let names2 = names.clone();
        // The "controller" keeps writing status while the scan runs: politely (a pause
        // between writes) or flat out.
        let writer = tokio::spawn(async move {
            for n in 0..10 {
                for name in &names2 {
                    let key = ObjectKey::new(Kind::Installation, "default", name.clone());
                    let mut inst = store.get(&key).unwrap().unwrap();
                    inst["status"] = json!({"phase": "Progressing", "n": n});
                    let _ = store.commit(Transaction::new().update(inst)).await;
                    if pause {
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    }
                }
            }
        });
        let report = ingestor.rescan().await.unwrap();
        writer.await.unwrap();
        assert_eq!(report.failed, 0, "{:?}", report.errors);
        if pause {
            assert!(report.pending.is_empty(), "retried within the scan");
        }
        // The report is honest about files it could not apply yet.
        assert_eq!(
            applied(&blueprint),
            report.pending.is_empty(),
            "{:?}",
            report.pending
        );
        if !report.pending.is_empty() {
            ingestor.rescan().await.unwrap();
        }
        assert!(applied(&blueprint));
        for name in &names {
            assert_eq!(
                env.installation(name).unwrap()["status"]["phase"],
                "Progressing"
            );
        }
        assert_eq!(
            env.manifest_file("app.yaml").unwrap()["status"]["phase"],
            "Applied"
        );
    }
}

#[tokio::test]
async fn files_over_the_size_limit_are_rejected_and_keep_their_objects() {
    let env = Env::new();
    let ingestor = landscaper_appliance::daemon::ingest::Ingestor::new(
        env.store.clone(),
        landscaper_appliance::daemon::ingest::IngestConfig {
            max_file_size: 1024,
            ..env.config()
        },
    );
    env.write("app.yaml", dataobject("a", "1"));
    env.write("other.yaml", dataobject("o", "1"));
    ingestor.rescan().await.unwrap();
    assert_eq!(env.dataobject("a").unwrap()["data"]["value"], 1);

    // The file grows past the limit: not read, its objects stay, the status says why.
    let mut big = dataobject("a", "2");
    big.push_str(&format!("# {}\n", "x".repeat(2000)));
    env.write("app.yaml", &big);
    env.write("other.yaml", dataobject("o", "2"));
    let report = ingestor.rescan().await.unwrap();
    assert_eq!((report.failed, report.applied), (1, 1), "{report:?}");
    let mf = env.manifest_file("app.yaml").unwrap();
    assert_eq!(mf["status"]["phase"], "Error", "{mf}");
    let message = mf["status"]["lastError"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("{} bytes", big.len()))
            && message.contains("limit of 1024 bytes")
            && message.contains("maxManifestFileSize"),
        "{message}"
    );
    assert!(
        report.errors[0].to_string().starts_with("app.yaml: "),
        "{:?}",
        report.errors
    );
    assert_eq!(env.dataobject("a").unwrap()["data"]["value"], 1);
    assert_eq!(env.dataobject("o").unwrap()["data"]["value"], 2);

    // Back under the limit: applied again.
    env.write("app.yaml", dataobject("a", "3"));
    ingestor.rescan().await.unwrap();
    let mf = env.manifest_file("app.yaml").unwrap();
    assert_eq!(mf["status"]["phase"], "Applied", "{mf}");
    assert_eq!(env.dataobject("a").unwrap()["data"]["value"], 3);
}
