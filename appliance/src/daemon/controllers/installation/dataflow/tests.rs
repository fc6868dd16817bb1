//! Tests of the data functions over a real store.

use std::collections::BTreeMap;

use landscaper_store::model::constants::*;
use landscaper_store::model::names::generate_data_object_name;
use landscaper_store::model::{Installation, from_value};
use landscaper_store::{Kind, ObjectKey, Store, StoreOptions, Transaction, object};
use landscaper_templating::blueprint::{Bindings, Blueprint};
use serde_json::{Map, Value, json};

use super::*;
use crate::daemon::controllers::lserror::PhaseError;

fn open_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        durable: false,
        ..StoreOptions::default()
    };
    let store = Store::open(&dir.path().join("store.redb"), options).unwrap();
    (dir, store)
}

fn put(store: &Store, objects: Vec<Value>) {
    let tx = objects
        .into_iter()
        .fold(Transaction::new(), Transaction::create);
    store.commit_blocking(tx).unwrap();
}

fn installation(name: &str, parent: Option<&str>, spec: Value) -> Installation {
    let mut labels = Map::new();
    if let Some(p) = parent {
        labels.insert(ENCOMPASSED_BY_LABEL.into(), json!(p));
    }
    from_value(&json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Installation",
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "spec": spec,
    }))
    .unwrap()
}

fn data_object(name: &str, labels: Value, data: Value) -> Value {
    json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "DataObject",
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "data": data,
    })
}

fn target(name: &str, labels: Value, kubeconfig: &str) -> Value {
    json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Target",
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "spec": {"type": KUBERNETES_CLUSTER_TARGET_TYPE, "config": {"kubeconfig": kubeconfig}},
    })
}

fn kubeconfig_of(t: &Value) -> &str {
    t.pointer("/spec/config/kubeconfig")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn fatal_message(r: Result<Map<String, Value>, PhaseError>) -> String {
    match r {
        Err(PhaseError::Fatal(e)) => e.message,
        other => panic!("expected a fatal error, got {other:?}"),
    }
}

#[test]
fn data_imports_read_data_objects_config_maps_and_secrets() {
    let (_dir, store) = open_store();
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    put(
        &store,
        vec![
            data_object("plain", json!({}), json!({"a": 1})),
            // A root-context name that is no valid object name is stored under its hash.
            data_object(
                &generate_data_object_name("", "Not_Valid"),
                json!({}),
                json!("hashed"),
            ),
            data_object("global", json!({}), json!([1, 2])),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "cm", "namespace": "ns"},
                   "data": {"size": "42", "conf": "a: b\nc: [1, 2]"}}),
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "sec", "namespace": "ns"},
                   "data": {"password": b64("s3cret"), "port": b64("8080")}}),
        ],
    );
    let inst = installation(
        "root",
        None,
        json!({"imports": {"data": [
            {"name": "plain", "dataRef": "plain"},
            {"name": "hashed", "dataRef": "Not_Valid"},
            {"name": "global", "dataRef": "#global"},
            {"name": "cmKey", "configMapRef": {"name": "cm", "key": "conf"}},
            {"name": "cmAll", "configMapRef": {"name": "cm"}},
            {"name": "secretKey", "secretRef": {"name": "sec", "key": "port"}},
            {"name": "secretAll", "secretRef": {"name": "sec"}},
        ]}}),
    );
    let values = read_import_values(&store, &inst).unwrap();
    assert_eq!(values["plain"], json!({"a": 1}));
    assert_eq!(values["hashed"], json!("hashed"));
    assert_eq!(values["global"], json!([1, 2]));
    // Values are parsed as YAML: objects and numbers, not strings.
    assert_eq!(values["cmKey"], json!({"a": "b", "c": [1, 2]}));
    assert_eq!(
        values["cmAll"],
        json!({"size": 42, "conf": {"a": "b", "c": [1, 2]}})
    );
    assert_eq!(values["secretKey"], json!(8080));
    assert_eq!(
        values["secretAll"],
        json!({"password": "s3cret", "port": 8080})
    );
}

#[test]
fn missing_data_imports_name_the_import_and_the_object() {
    let (_dir, store) = open_store();
    let inst = installation(
        "root",
        None,
        json!({"imports": {"data": [{"name": "db", "dataRef": "Db_Config"}]}}),
    );
    let message = fatal_message(read_import_values(&store, &inst));
    assert!(message.contains("import \"db\""), "{message}");
    assert!(message.contains("Db_Config"), "{message}");
    assert!(
        message.contains(&generate_data_object_name("", "Db_Config")),
        "{message}"
    );

    put(
        &store,
        vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "cm", "namespace": "ns"}, "data": {"a": "1"}})],
    );
    let inst = installation(
        "root",
        None,
        json!({"imports": {"data": [{"name": "x", "configMapRef": {"name": "cm", "key": "b"}}]}}),
    );
    let message = fatal_message(read_import_values(&store, &inst));
    assert!(message.contains("has no key \"b\""), "{message}");
}

#[test]
fn subinstallations_may_not_import_config_maps_or_secrets() {
    let (_dir, store) = open_store();
    for (field, kind) in [("configMapRef", "configmap"), ("secretRef", "secret")] {
        let inst = installation(
            "child",
            Some("parent"),
            json!({"imports": {"data": [{"name": "x", field: {"name": "any"}}]}}),
        );
        let message = fatal_message(read_import_values(&store, &inst));
        assert!(
            message.contains(&format!(
                "{kind} imports are not allowed in subinstallations"
            )),
            "{message}"
        );
    }
}

#[test]
fn target_imports_of_every_kind() {
    let (_dir, store) = open_store();
    let scope = "Inst.parent";
    let scoped = |reference: &str| generate_data_object_name(scope, reference);
    let in_scope = |key: &str, extra: Value| {
        let mut l = json!({DATA_OBJECT_CONTEXT_LABEL: scope, DATA_OBJECT_KEY_LABEL: key});
        for (k, v) in extra.as_object().unwrap() {
            l[k] = v.clone();
        }
        l
    };
    put(
        &store,
        vec![
            target(&scoped("one"), in_scope("one", json!({})), "kc one"),
            target(&scoped("two"), in_scope("two", json!({})), "kc two"),
            // The parent's targetList import `clusters`, republished in its scope with indexes
            // (out of order on purpose) and its targetMap import `regions` with keys.
            target(
                &scoped("clusters[1]"),
                in_scope("clusters", json!({DATA_OBJECT_INDEX_LABEL: "1"})),
                "kc list 1",
            ),
            target(
                &scoped("clusters[0]"),
                in_scope("clusters", json!({DATA_OBJECT_INDEX_LABEL: "0"})),
                "kc list 0",
            ),
            target(
                &scoped("regions[eu]"),
                in_scope("regions", json!({DATA_OBJECT_TARGET_MAP_KEY_LABEL: "eu"})),
                "kc eu",
            ),
            // Same key in another scope: never seen.
            target(
                &generate_data_object_name("Inst.other", "clusters[0]"),
                json!({DATA_OBJECT_CONTEXT_LABEL: "Inst.other", DATA_OBJECT_KEY_LABEL: "clusters",
                       DATA_OBJECT_INDEX_LABEL: "0"}),
                "other scope",
            ),
            target("global-target", json!({}), "kc global"),
        ],
    );
    let inst = installation(
        "child",
        Some("parent"),
        json!({"imports": {"targets": [
            {"name": "single", "target": "one"},
            {"name": "global", "target": "#global-target"},
            {"name": "list", "targets": ["two", "one"]},
            {"name": "map", "targetMap": {"a": "one", "b": "two"}},
            {"name": "listRef", "targetListRef": "clusters"},
            {"name": "mapRef", "targetMapRef": "regions"},
        ]}}),
    );
    let values = read_import_values(&store, &inst).unwrap();
    assert_eq!(kubeconfig_of(&values["single"]), "kc one");
    assert_eq!(values["single"]["kind"], "Target");
    assert_eq!(kubeconfig_of(&values["global"]), "kc global");
    let list: Vec<&str> = values["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(kubeconfig_of)
        .collect();
    assert_eq!(list, ["kc two", "kc one"]);
    assert_eq!(kubeconfig_of(&values["map"]["a"]), "kc one");
    assert_eq!(kubeconfig_of(&values["map"]["b"]), "kc two");
    let list_ref: Vec<&str> = values["listRef"]
        .as_array()
        .unwrap()
        .iter()
        .map(kubeconfig_of)
        .collect();
    assert_eq!(list_ref, ["kc list 0", "kc list 1"]);
    assert_eq!(
        values["mapRef"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["eu"]
    );
    assert_eq!(kubeconfig_of(&values["mapRef"]["eu"]), "kc eu");

    let missing = installation(
        "child",
        Some("parent"),
        json!({"imports": {"targets": [{"name": "list", "targets": ["one", "three"]}]}}),
    );
    let message = fatal_message(read_import_values(&store, &missing));
    assert!(
        message.contains("import \"list\": Target \"three\""),
        "{message}"
    );
}

#[test]
fn import_objects_republish_imports_with_landscaper_names_and_labels() {
    let inst_value = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
        "metadata": {"name": "root", "namespace": "ns", "uid": "u-1"},
        "spec": {},
    });
    let inst: Installation = from_value(&inst_value).unwrap();
    let blueprint = Blueprint::from_yamlfs(&json!({"blueprint.yaml": "
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
imports:
- name: config
  schema: {type: object}
- name: clusters
  type: targetList
  targetType: landscaper.gardener.cloud/kubernetes-cluster
"}))
    .unwrap();
    let t = |kc: &str| target("x", json!({}), kc);
    let bindings = Bindings::with_imports(
        json!({"config": {"a": 1}, "clusters": [t("kc 0"), t("kc 1")]})
            .as_object()
            .unwrap()
            .clone(),
    );
    let objects = import_objects(&inst, &inst_value, &blueprint, &bindings, "job-1", false);
    let named = |n: &str| {
        objects
            .iter()
            .find(|o| object::name(o) == n)
            .unwrap_or_else(|| panic!("no object {n} in {objects:#?}"))
    };
    let config = named(&generate_data_object_name("Inst.root", "config"));
    assert_eq!(config["data"], json!({"a": 1}));
    let labels = object::labels(config);
    assert_eq!(labels[DATA_OBJECT_CONTEXT_LABEL], "Inst.root");
    assert_eq!(labels[DATA_OBJECT_KEY_LABEL], "config");
    assert_eq!(labels[DATA_OBJECT_SOURCE_LABEL], "Inst.root");
    assert_eq!(labels[DATA_OBJECT_SOURCE_TYPE_LABEL], "import");
    assert_eq!(labels[DATA_OBJECT_JOB_ID_LABEL], "job-1");
    let second = named(&generate_data_object_name("Inst.root", "clusters[1]"));
    assert_eq!(kubeconfig_of(second), "kc 1");
    assert_eq!(object::labels(second)[DATA_OBJECT_INDEX_LABEL], "1");
    assert_eq!(object::owner_uids(second), ["u-1"]);
}

#[test]
fn secret_values_that_are_no_yaml_are_not_quoted() {
    let data: BTreeMap<String, Vec<u8>> = [
        ("k".to_string(), b"a: b: SeCrEt".to_vec()),
        ("n".to_string(), b"\"SeCrEt".to_vec()),
        ("o".to_string(), b"a: !!int SeCrEt".to_vec()),
        ("p".to_string(), b"a: *SeCrEt".to_vec()),
        ("q".to_string(), b"a: [SeCrEt".to_vec()),
        ("s".to_string(), b"a:\n  - b\n c: SeCrEt".to_vec()),
    ]
    .into();
    for key in ["k", "n", "o", "p", "q", "s"] {
        let err = key_values(&data, Some(key), "imp", "Secret", "s").unwrap_err();
        assert!(!err.contains("SeCrEt"), "{err}");
        assert!(
            err.contains(&format!("Secret s key {key}: not valid YAML")),
            "{err}"
        );
        // ConfigMaps are no secret: their errors help.
        let err = key_values(&data, Some(key), "imp", "ConfigMap", "c").unwrap_err();
        assert!(err.contains("ConfigMap c key"), "{err}");
        // The parser quotes some of the text (which is why a Secret's error must not).
        if key == "o" {
            assert!(err.contains("SeCrEt"), "{err}");
        }
    }
}

#[test]
fn imports_from_secrets_follow_the_copies() {
    let (_dir, store) = open_store();
    let marked = |name: &str| {
        let mut o = data_object(name, json!({}), json!("s3cret"));
        o["metadata"]["annotations"] = json!({FROM_SECRET_ANNOTATION: "true"});
        o
    };
    // The parent `p` published `pw` (from a Secret) and `cfg` (plain) into its scope.
    put(
        &store,
        vec![
            marked(&generate_data_object_name("Inst.p", "pw")),
            data_object(
                &generate_data_object_name("Inst.p", "cfg"),
                json!({}),
                json!(1),
            ),
        ],
    );
    let root = |imports: Value| installation("root", None, json!({"imports": {"data": imports}}));
    let child =
        |imports: Value| installation("c", Some("p"), json!({"imports": {"data": imports}}));
    let from_secret = |inst: &Installation| imports_from_secrets(&store, inst).unwrap();
    assert!(from_secret(&root(
        json!([{"name": "a", "secretRef": {"name": "s"}}])
    )));
    assert!(!from_secret(&root(
        json!([{"name": "a", "configMapRef": {"name": "c"}}])
    )));
    assert!(from_secret(&child(json!([{"name": "a", "dataRef": "pw"}]))));
    assert!(!from_secret(&child(
        json!([{"name": "a", "dataRef": "cfg"}])
    )));
    assert!(!from_secret(&child(
        json!([{"name": "a", "dataRef": "missing"}])
    )));
    assert!(from_secret(&child(json!([
        {"name": "a", "dataRef": "cfg"}, {"name": "b", "dataRef": "pw"}]))));

    // The copies are marked; targets are redacted on their own and stay unmarked.
    let inst_value = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Installation", "metadata": {"name": "root", "namespace": "ns", "uid": "u"},
        "spec": {}});
    let inst: Installation = from_value(&inst_value).unwrap();
    let blueprint = Blueprint::from_yamlfs(&json!({"blueprint.yaml": "
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
imports:
- name: pw
  schema: {type: string}
- name: cluster
  type: target
  targetType: landscaper.gardener.cloud/kubernetes-cluster
"}))
    .unwrap();
    let bindings = Bindings::with_imports(
        json!({"pw": "s3cret", "cluster": target("x", json!({}), "kc")})
            .as_object()
            .unwrap()
            .clone(),
    );
    for flag in [true, false] {
        let objects = import_objects(&inst, &inst_value, &blueprint, &bindings, "j", flag);
        let annotation = |kind: &str| {
            objects
                .iter()
                .find(|o| o["kind"] == kind)
                .map(|o| object::annotations(o).get(FROM_SECRET_ANNOTATION).cloned())
                .unwrap()
        };
        assert_eq!(annotation("DataObject"), flag.then(|| "true".to_string()));
        assert_eq!(annotation("Target"), None);
    }
}

#[test]
fn duplicate_exports_among_siblings_are_named() {
    let exporter = |name: &str, data: &str, target: &str| {
        installation(
            name,
            None,
            json!({"exports": {"data": [{"name": "d", "dataRef": data}],
                                "targets": [{"name": "t", "target": target}]}}),
        )
    };
    let a = exporter("a", "shared", "cluster-a");
    let b = exporter("b", "shared", "cluster-b");
    let c = exporter("c", "other", "cluster-a");
    let message = duplicate_exports(&a, &[b.clone(), c.clone()]).unwrap();
    assert_eq!(
        message,
        "the following exports are exported by multiple nested installations:\n  \
         data exports:\n    'shared' is exported by [a, b]\n  \
         target exports:\n    'cluster-a' is exported by [a, c]"
    );
    assert_eq!(duplicate_exports(&b, std::slice::from_ref(&c)), None);
    // A sibling being deleted gives up its exports.
    let mut leaving = b.clone();
    leaving.metadata.deletion_timestamp = Some("2030-01-01T00:00:00Z".into());
    assert_eq!(
        duplicate_exports(&exporter("a", "shared", "x"), &[leaving]),
        None
    );
}

#[test]
fn predecessor_cycles_are_found() {
    let node = |name: &str, imports: &str, exports: &str| {
        installation(
            name,
            Some("p"),
            json!({"imports": {"data": [{"name": "i", "dataRef": imports}]},
                   "exports": {"data": [{"name": "e", "dataRef": exports}]}}),
        )
    };
    let a = node("a", "from-c", "from-a");
    let b = node("b", "from-a", "from-b");
    let c = node("c", "from-b", "from-c");
    let cycle = predecessor_cycle(&a, &[b.clone(), c.clone()]).unwrap();
    assert_eq!(cycle.first(), cycle.last());
    assert_eq!(cycle.len(), 4, "{cycle:?}");
    let free = node("c", "from-b", "unrelated");
    assert_eq!(predecessor_cycle(&a, &[b, free]), None);
}

#[test]
fn sibling_lookups_find_only_the_connected_installations_of_the_scope() {
    let (_dir, store) = open_store();
    let node = |name: &str, parent: Option<&str>, imports: &[&str], exports: &[&str]| {
        let mut labels = Map::new();
        if let Some(p) = parent {
            labels.insert(ENCOMPASSED_BY_LABEL.into(), json!(p));
        }
        json!({
            "apiVersion": "landscaper.gardener.cloud/v1alpha1",
            "kind": "Installation",
            "metadata": {"name": name, "namespace": "ns", "labels": labels},
            "spec": {
                "imports": {"data": imports.iter().map(|r| json!({"name": r, "dataRef": r})).collect::<Vec<_>>()},
                "exports": {"data": exports.iter().map(|r| json!({"name": r, "dataRef": r})).collect::<Vec<_>>()},
            },
        })
    };
    // a -> b -> c in a chain, d unrelated, e a second exporter of "from-a", and a
    // subinstallation exporting the same name in another scope.
    put(
        &store,
        vec![
            node("a", None, &[], &["from-a"]),
            node("b", None, &["from-a"], &["from-b"]),
            node("c", None, &["from-b"], &[]),
            node("d", None, &["elsewhere"], &["other"]),
            node("e", None, &[], &["from-a"]),
            node("sub", Some("a"), &["from-b"], &["from-a"]),
        ],
    );
    let get = |n: &str| {
        from_value::<Installation>(
            &store
                .get(&ObjectKey::new(Kind::Installation, "ns", n))
                .unwrap()
                .unwrap(),
        )
        .unwrap()
    };
    let names = |list: Vec<Installation>| -> Vec<String> {
        let mut v: Vec<String> = list.iter().map(|i| name(i).to_string()).collect();
        v.sort();
        v
    };
    let (a, b, c) = (get("a"), get("b"), get("c"));
    assert_eq!(names(exporters_of_imports(&store, &b).unwrap()), ["a", "e"]);
    assert_eq!(names(importers_of_exports(&store, &a).unwrap()), ["b"]);
    assert_eq!(names(exporters_of_exports(&store, &a).unwrap()), ["e"]);
    assert_eq!(
        names(predecessor_closure(&store, &c).unwrap()),
        ["a", "b", "e"]
    );
    assert!(predecessor_closure(&store, &a).unwrap().is_empty());
    // The subinstallation's scope holds only itself.
    assert!(
        exporters_of_exports(&store, &get("sub"))
            .unwrap()
            .is_empty()
    );
    // A cycle is found through the closure alone.
    let mut a_cyclic = node("a", None, &["from-c"], &["from-a"]);
    a_cyclic["metadata"]["resourceVersion"] = json!(
        store
            .get(&ObjectKey::new(Kind::Installation, "ns", "a"))
            .unwrap()
            .unwrap()
            .pointer("/metadata/resourceVersion")
            .cloned()
            .unwrap()
    );
    let mut c_exporting = serde_json::to_value(&c).unwrap();
    c_exporting["spec"]["exports"] = json!({"data": [{"name": "from-c", "dataRef": "from-c"}]});
    store
        .commit_blocking(Transaction::new().update(a_cyclic).update(c_exporting))
        .unwrap();
    let a = get("a");
    let closure = predecessor_closure(&store, &a).unwrap();
    assert_eq!(names(closure.clone()), ["b", "c", "e"]);
    let cycle = predecessor_cycle(&a, &closure).unwrap();
    assert_eq!(cycle.len(), 4, "{cycle:?}");
}

mod components {
    //! `spec.componentDescriptor.ref`: resolution in the runtime over an in-memory repository.

    use std::sync::Arc;

    use landscaper_components::testing::MemoryRepository;

    use super::*;
    use crate::components::ComponentResolver;

    const ROOT: &str = r#"
meta: {schemaVersion: v2}
component:
  name: example.com/root
  version: 1.0.0
  provider: internal
  repositoryContexts: [{type: ociRegistry, baseUrl: example.com}]
  resources:
  - {name: blueprint, type: landscaper.gardener.cloud/blueprint, version: 1.0.0, relation: local, access: {type: localBlob, localReference: bp, mediaType: application/x-tar}}
  - {name: myconfig, type: yaml, version: 1.0.0, relation: local, access: {type: localBlob, localReference: cfg, mediaType: application/yaml}}
  - {name: image, type: ociImage, version: 1.0.0, relation: external, access: {type: ociArtifact, imageReference: quay.io/example/myimage:1.0.0}}
  - {name: with-schema, type: blueprint, version: 1.0.0, relation: local, access: {type: localBlob, localReference: bp-schema, mediaType: application/x-tar}}
  componentReferences:
  - {name: leaf-ref, componentName: example.com/leaf, version: 2.0.0}
"#;
    const LEAF: &str = r#"
meta: {schemaVersion: v2}
component:
  name: example.com/leaf
  version: 2.0.0
  provider: internal
  repositoryContexts: [{type: ociRegistry, baseUrl: example.com}]
  resources:
  - {name: chart, type: helmChart, version: 2.0.0, relation: local, access: {type: localBlob, localReference: chart, mediaType: application/octet-stream}}
  - {name: blueprint-sub, type: blueprint, version: 2.0.0, relation: local, access: {type: localBlob, localReference: bp, mediaType: application/x-tar}}
  - {name: replicas-schema, type: landscaper.gardener.cloud/jsonschema, version: 2.0.0, relation: local, access: {type: localBlob, localReference: schema, mediaType: application/json}}
  componentReferences: []
"#;
    const BLUEPRINT: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Blueprint
deployExecutions:
- name: main
  type: GoTemplate
  template: |
    deployItems:
    - name: item
      type: landscaper.gardener.cloud/mock
      config:
        image: {{ (getResource .cd "name" "image").access.imageReference }}
        components: {{ len .components.components }}
        key: {{ getResourceKey "cd://componentReferences/leaf-ref/resources/chart" }}
        config: {{ getResourceContent "cd://resources/myconfig" | toJson }}
        chart: {{ getResourceContent "cd://componentReferences/leaf-ref/resources/chart" }}
        def: {{ .componentDescriptorDef.ref.componentName }}
subinstallations:
- apiVersion: landscaper.gardener.cloud/v1alpha1
  kind: InstallationTemplate
  name: sub
  blueprint:
    ref: cd://componentReferences/leaf-ref/resources/blueprint-sub
"#;

    fn repository() -> Arc<MemoryRepository> {
        let repo = Arc::new(MemoryRepository::new());
        repo.add_descriptor(ROOT.as_bytes()).unwrap();
        repo.add_descriptor(LEAF.as_bytes()).unwrap();
        let mut files = BTreeMap::new();
        files.insert("blueprint.yaml".to_string(), BLUEPRINT.as_bytes().to_vec());
        repo.add_blob(
            "bp",
            "application/x-tar",
            landscaper_components::archive::tar_files(&files),
        );
        repo.add_blob("cfg", "application/yaml", b"type: yaml-config\n".to_vec());
        let mut files = BTreeMap::new();
        files.insert(
            "blueprint.yaml".to_string(),
            b"apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Blueprint\nimports:\n- name: replicas\n  required: false\n  schema:\n    $ref: cd://componentReferences/leaf-ref/resources/replicas-schema\n".to_vec(),
        );
        repo.add_blob(
            "bp-schema",
            "application/x-tar",
            landscaper_components::archive::tar_files(&files),
        );
        repo.add_blob(
            "schema",
            "application/json",
            br#"{"type": "integer"}"#.to_vec(),
        );
        repo.add_blob("chart", "application/octet-stream", vec![1, 2, 3]);
        repo
    }

    fn context(repository_context: Value) -> Value {
        json!({
            "apiVersion": "landscaper.gardener.cloud/v1alpha1",
            "kind": "Context",
            "metadata": {"name": "examples", "namespace": "ns"},
            "repositoryContext": repository_context,
        })
    }

    async fn put_context(store: &Store) {
        let tx = Transaction::new().create(context(
            json!({"type": "ociRegistry", "baseUrl": "registry.example"}),
        ));
        store.commit(tx).await.unwrap();
    }

    fn referencing(name: &str, version: &str, resource: &str) -> Installation {
        installation(
            "comp",
            None,
            json!({
                "context": "examples",
                "componentDescriptor": {"ref": {"componentName": name, "version": version}},
                "blueprint": {"ref": {"resourceName": resource}},
            }),
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_component_reference_resolves_binds_and_is_cached() {
        let (_dir, store) = open_store();
        put_context(&store).await;
        let repo = repository();
        let resolver = Arc::new(ComponentResolver::new(repo.clone()));
        let inst = referencing("example.com/root", "1.0.0", "blueprint");
        let (blueprint, components) = resolve_blueprint(&store, &inst, None, Some(&resolver))
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        let components = components.expect("resolved");
        assert_eq!(components.resolved.all.len(), 2);
        assert_eq!(components.context.raw["baseUrl"], "registry.example");
        let lookups = repo.lookups();
        // A second reconcile resolves from the cache.
        resolve_blueprint(&store, &inst, None, Some(&resolver))
            .await
            .unwrap();
        assert_eq!(repo.lookups(), lookups, "resolved again");

        let parent = inst.clone();
        let rendered = tokio::task::spawn_blocking(move || {
            let bindings =
                construct_blueprint_imports(&inst, &blueprint, &Map::new(), Some(&components))?;
            let mut rendered = render_subobjects(&inst, &blueprint, &bindings)?;
            // Without the component versions a cd:// blueprint cannot be resolved.
            let mut without = rendered.clone();
            assert!(resolve_component_blueprints(&mut without, None).is_err());
            resolve_component_blueprints(&mut rendered, Some(&components))?;
            Ok::<_, PhaseError>(rendered)
        })
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{e:?}"));
        let config = rendered.deploy_items[0].config.clone().unwrap();
        assert_eq!(config["image"], "quay.io/example/myimage:1.0.0");
        assert_eq!(config["components"], 2);
        assert_eq!(config["config"], "type: yaml-config\n");
        // application/octet-stream content is base64.
        assert_eq!(config["chart"], "AQID");
        assert_eq!(config["def"], "example.com/root");
        let key = landscaper_components::uri::parse_resource_key(config["key"].as_str().unwrap())
            .unwrap();
        assert_eq!(
            (key.component.name.as_str(), key.component.version.as_str()),
            ("example.com/leaf", "2.0.0")
        );
        assert_eq!(key.resource["name"], "chart");

        // The subinstallation switches to the component that owns the blueprint (§9a).
        let template = &rendered.subinstallations[0];
        let sub = subinstallation_object(
            &parent,
            &json!({"metadata": {"name": "comp", "namespace": "ns", "uid": "u1"}}),
            template,
            None,
            false,
            rendered.component_blueprints.get("sub"),
        )
        .unwrap();
        assert_eq!(
            sub["spec"]["componentDescriptor"],
            json!({"ref": {
                "repositoryContext": {"type": "ociRegistry", "baseUrl": "registry.example"},
                "componentName": "example.com/leaf", "version": "2.0.0"}})
        );
        assert_eq!(
            sub["spec"]["blueprint"],
            json!({"ref": {"resourceName": "blueprint-sub"}})
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn blueprint_schemas_resolve_cd_references_from_the_component() {
        let (_dir, store) = open_store();
        put_context(&store).await;
        let resolver = Arc::new(ComponentResolver::new(repository()));
        let inst = referencing("example.com/root", "1.0.0", "with-schema");
        let (blueprint, _) = resolve_blueprint(&store, &inst, None, Some(&resolver))
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        let values = |v: Value| v.as_object().unwrap().clone();
        let ok = landscaper_templating::blueprint::construct_imports(
            &blueprint,
            &values(json!({"replicas": 3})),
            &Map::new(),
        );
        assert!(ok.is_ok(), "{ok:?}");
        let bad = landscaper_templating::blueprint::construct_imports(
            &blueprint,
            &values(json!({"replicas": "three"})),
            &Map::new(),
        );
        assert!(bad.is_err(), "the cd:// schema (integer) applies");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn resolution_errors_name_component_version_and_resource() {
        let (_dir, store) = open_store();
        let resolver = Arc::new(ComponentResolver::new(repository()));
        let message = |e: PhaseError| {
            assert!(matches!(e, PhaseError::Fatal(_)), "{e:?}");
            e.error().message.clone()
        };
        // No repository context anywhere.
        let e = resolve_blueprint(
            &store,
            &referencing("example.com/root", "1.0.0", "blueprint"),
            None,
            Some(&resolver),
        )
        .await
        .unwrap_err();
        assert!(message(e).contains("no repository context"));

        put_context(&store).await;
        let cases = [
            (
                referencing("example.com/root", "9.9.9", "blueprint"),
                "component version example.com/root:9.9.9 not found",
            ),
            (
                referencing("example.com/root", "1.0.0", "missing"),
                "example.com/root:1.0.0 has no resource \"missing\"",
            ),
            (
                referencing("example.com/root", "1.0.0", "myconfig"),
                "blueprint resource \"myconfig\" of component version example.com/root:1.0.0 has wrong type",
            ),
        ];
        for (inst, want) in cases {
            let e = resolve_blueprint(&store, &inst, None, Some(&resolver))
                .await
                .unwrap_err();
            let m = message(e);
            assert!(m.contains(want), "want {want:?} in {m}");
        }
        // The installation's own repository context wins over the Context's.
        let own = installation(
            "own",
            None,
            json!({
                "context": "examples",
                "componentDescriptor": {"ref": {
                    "repositoryContext": {"type": "ociRegistry", "baseUrl": "own.example"},
                    "componentName": "example.com/root", "version": "1.0.0"}},
                "blueprint": {"ref": {"resourceName": "blueprint"}},
            }),
        );
        let (_, c) = resolve_blueprint(&store, &own, None, Some(&resolver))
            .await
            .unwrap();
        assert_eq!(c.unwrap().context.raw["baseUrl"], "own.example");
    }
}

/// The Context's `registryPullSecrets` are read from the Context's namespace (the
/// installation's); a missing one is a retryable error naming it; no Context, no secrets.
#[test]
fn context_pull_secrets_come_from_the_installations_context() {
    let (_dir, store) = open_store();
    let inst = installation("a", None, json!({"context": "with-secrets"}));
    let none = blueprint::context_pull_secrets(&store, &inst).expect("no context");
    assert!(none.is_empty());
    put(
        &store,
        vec![
            json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Context",
                   "metadata": {"name": "with-secrets", "namespace": "ns"},
                   "registryPullSecrets": [{"name": "pull"}, {"name": "later"}]}),
            json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
                   "metadata": {"name": "pull", "namespace": "ns"},
                   "data": {".dockerconfigjson": "eyJhdXRocyI6e319"}}),
            json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
                   "metadata": {"name": "later", "namespace": "elsewhere"},
                   "data": {".dockerconfigjson": "eyJhdXRocyI6e319"}}),
        ],
    );
    let err = blueprint::context_pull_secrets(&store, &inst).expect_err("later is elsewhere");
    let text = format!("{err:?}");
    assert!(
        text.contains("later") && text.contains("not found") && text.contains("ns/with-secrets"),
        "{text}"
    );
    put(
        &store,
        vec![
            json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
                    "metadata": {"name": "later", "namespace": "ns"},
                    "data": {".dockerconfigjson": "eyJhdXRocyI6e319"}}),
        ],
    );
    let secrets = blueprint::context_pull_secrets(&store, &inst).expect("both found");
    let names: Vec<&str> = secrets.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["pull", "later"]);
    assert_eq!(secrets[0].secret_type, "kubernetes.io/dockerconfigjson");
    assert_eq!(secrets[0].data[".dockerconfigjson"], b"{\"auths\":{}}");
    // The default Context applies without spec.context.
    let plain = installation("b", None, json!({}));
    assert!(
        blueprint::context_pull_secrets(&store, &plain)
            .unwrap()
            .is_empty()
    );
}
