//! Tests of `validate_object`: fixtures per kind, warnings, decode errors, semantic checks.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::{Phase, from_value};

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).expect("fixture is valid YAML")
}

/// Validates and asserts a lossless, warning-free round trip.
fn round_trip(text: &str) -> ValidatedObject {
    let input = yaml(text);
    let validated = validate_object(&input).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(validated.warnings, Vec::<String>::new());
    assert_eq!(validated.object, input);
    validated
}

fn error_of(value: Value) -> ModelError {
    validate_object(&value).expect_err("object must be rejected")
}

fn warnings_of(value: Value) -> Vec<String> {
    validate_object(&value)
        .unwrap_or_else(|e| panic!("{e}"))
        .warnings
}

const INSTALLATION: &str = r##"
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: my-inst
  namespace: example
  uid: 4f2c7d1e-0000-4000-8000-000000000001
  resourceVersion: "17"
  generation: 3
  creationTimestamp: "2024-05-01T10:00:00Z"
  labels:
    landscaper.gardener.cloud/encompassed-by: parent
  annotations:
    landscaper.gardener.cloud/operation: reconcile
    landscaper.gardener.cloud/subinstallation-name: child
  finalizers: [finalizer.landscaper.gardener.cloud]
  ownerReferences:
  - apiVersion: landscaper.gardener.cloud/v1alpha1
    kind: Installation
    name: parent
    uid: 4f2c7d1e-0000-4000-8000-000000000002
    controller: true
    blockOwnerDeletion: true
spec:
  context: default
  verification:
    signatureName: sig
  componentDescriptor:
    ref:
      repositoryContext:
        type: OCIRegistry
        baseUrl: registry.example/components
      componentName: example.org/comp
      version: v1.2.3
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
        data:
          values.json: '{"a": 1}'
  imports:
    data:
    - name: plain
      dataRef: some-do
      version: v1
    - name: from-secret
      secretRef:
        name: creds
        key: password
    - name: from-cm
      configMapRef:
        name: settings
    targets:
    - name: cluster
      target: my-cluster
    - name: clusters
      targets: [a, "#b"]
    - name: cluster-list
      targetListRef: parent-list
    - name: cluster-map
      targetMap:
        red: cluster-red
        blue: cluster-blue
    - name: cluster-map-ref
      targetMapRef: parent-map
  importDataMappings:
    mapped: (( plain.value ))
    nested:
      list: [1, 2.5, true, null]
  exports:
    data:
    - name: out
      dataRef: out-do
    targets:
    - name: out-cluster
      target: exported-cluster
  exportDataMappings:
    out: (( exports.raw ))
  automaticReconcile:
    succeededReconcile:
      interval: 24h
    failedReconcile:
      numberOfReconciles: 3
      interval: 5m
      cronSpec: "*/5 * * * *"
  optimization:
    hasNoSiblingImports: true
    hasNoSiblingExports: false
status:
  observedGeneration: 3
  conditions:
  - type: ValidateImports
    status: "True"
    lastTransitionTime: "2024-05-01T10:00:01Z"
    lastUpdateTime: "2024-05-01T10:00:02Z"
    reason: ImportsValid
    message: all imports valid
  lastError:
    operation: Reconcile
    lastTransitionTime: "2024-05-01T10:00:03Z"
    lastUpdateTime: "2024-05-01T10:00:03Z"
    reason: Something
    message: went wrong
    codes: [ERR_FOR_INFO_ONLY]
  subInstCache:
    activeSubs:
    - specName: child
      objectName: child-abcde
    orphanedSubs: [old-xyz12]
  executionRef:
    name: my-inst
    namespace: example
  jobID: 6d7b9c1a-0000-4000-8000-00000000000a
  jobIDFinished: 6d7b9c1a-0000-4000-8000-000000000009
  phase: Progressing
  phaseTransitionTime: "2024-05-01T10:00:04Z"
  importsHash: abc123
  automaticReconcileStatus:
    generation: 3
    numberOfReconciles: 1
    lastReconcileTime: "2024-05-01T09:00:00Z"
    onFailed: true
  dependentsToTrigger:
  - name: successor
  transitionTimes:
    triggerTime: "2024-05-01T10:00:00Z"
    initTime: "2024-05-01T10:00:01Z"
    waitTime: "2024-05-01T10:00:05Z"
    finishedTime: "2024-05-01T09:59:00Z"
"##;

const EXECUTION: &str = r#"
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Execution
metadata:
  name: my-inst
  namespace: example
spec:
  context: default
  deployItems:
  - name: db
    type: landscaper.gardener.cloud/mock
    config:
      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
      kind: ProviderConfiguration
      phase: Succeeded
  - name: app
    type: landscaper.gardener.cloud/kubernetes-manifest
    target:
      name: my-cluster
      namespace: example
    labels:
      tier: frontend
    config: null
    dependsOn: [db]
    timeout: 10m
    updateOnChangeOnly: true
    onDelete:
      skipUninstallIfClusterRemoved: true
status:
  observedGeneration: 1
  exportRef:
    name: exec-export
    namespace: example
  deployItemCache:
    activeDIs:
    - specName: db
      objectName: my-inst-db-abcde
    orphanedDIs: []
  jobID: j2
  jobIDFinished: j1
  phase: Init
  phaseTransitionTime: "2024-05-01T10:00:04Z"
"#;

const DEPLOY_ITEM: &str = r#"
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: DeployItem
metadata:
  generateName: my-inst-db-
  namespace: example
  labels:
    execution.landscaper.gardener.cloud/managed-by: my-inst
    execution.landscaper.gardener.cloud/name: db
  annotations:
    execution.landscaper.gardener.cloud/dependsOn: ""
spec:
  type: landscaper.gardener.cloud/mock
  target:
    name: my-cluster
    namespace: example
  context: default
  config:
    apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
    kind: ProviderConfiguration
    export: {port: 5432}
  timeout: none
  updateOnChangeOnly: false
  onDelete: {}
status:
  phase: Failed
  observedGeneration: 2
  lastError:
    operation: WaitingForPickup
    reason: PickupTimeout
    message: no deployer picked up the item
    codes: [ERR_TIMEOUT]
  lastErrors:
  - operation: WaitingForPickup
    reason: PickupTimeout
    message: no deployer picked up the item
  firstError:
    operation: Reconcile
    reason: First
    message: first
  lastReconcileTime: "2024-05-01T10:00:00Z"
  deployer:
    identity: mock-1
    name: mock
    version: v0.1.0
  providerStatus:
    apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
    kind: ProviderStatus
  exportRef:
    name: db-export
    namespace: example
  jobID: j1
  jobIDFinished: j1
  jobIDGenerationTime: "2024-05-01T09:55:00Z"
  deployItemPhase: Succeeded
  transitionTimes:
    triggerTime: "2024-05-01T09:55:00Z"
"#;

const TARGET_CONFIG: &str = r#"
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Target
metadata:
  name: my-cluster
  namespace: example
spec:
  type: landscaper.gardener.cloud/kubernetes-cluster
  config:
    kubeconfig: |
      apiVersion: v1
      kind: Config
"#;

const TARGET_SECRET: &str = r#"
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Target
metadata:
  name: other-cluster
  namespace: example
spec:
  type: landscaper.gardener.cloud/kubernetes-cluster
  secretRef:
    name: kubeconfig
    key: kubeconfig
"#;

const DATA_OBJECT: &str = r#"
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: DataObject
metadata:
  name: 6h2bqkzjsxxxnrocvvhbkpbmuzfmybsqdbnmz2ia
  namespace: example
  labels:
    data.landscaper.gardener.cloud/context: Inst.root
    data.landscaper.gardener.cloud/key: config
    data.landscaper.gardener.cloud/source: Inst.child
    data.landscaper.gardener.cloud/sourceType: export
data:
  replicas: 3
  nested: {list: [a, b], empty: {}}
"#;

const CONTEXT: &str = r#"
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Context
metadata:
  name: default
  namespace: example
repositoryContext:
  type: OCIRegistry
  baseUrl: registry.example
ocmConfig:
  name: ocm-config
registryPullSecrets:
- name: pull-secret
configurations:
  helmChartRepoCredentials:
    auths:
    - url: https://charts.example
componentVersionOverwrites: overwrites
verificationSignatures:
  sig:
    publicKeySecretReference:
      name: pubkey
      namespace: example
      key: key.pem
    caCertificateSecretReference:
      name: ca
      namespace: example
"#;

const CONFIG_MAP: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: example
data:
  key.one: value
  KEY_TWO: "42"
binaryData:
  blob: aGVsbG8=
immutable: false
"#;

const SECRET: &str = r#"
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: example
type: Opaque
data:
  password: c2VjcmV0
stringData:
  user: admin
immutable: true
"#;

const MANIFEST_FILE: &str = r#"
apiVersion: appliance.landscaper-appliance.io/v1alpha1
kind: ManifestFile
metadata:
  name: installations-root.yaml
spec:
  path: installations/root.yaml
status:
  sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
  objects:
  - apiVersion: landscaper.gardener.cloud/v1alpha1
    kind: Installation
    namespace: example
    name: root
  lastError:
    document: 1
    line: 12
    column: 3
    message: "invalid type: integer `3`, expected a string"
    field: spec.imports.data[0].dataRef
  observedTime: "2024-05-01T10:00:00Z"
  skipped: false
  warnings: ['unknown field "spec.foo"']
"#;

const TRANSPORT_ARCHIVE: &str = r#"
apiVersion: appliance.landscaper-appliance.io/v1alpha1
kind: TransportArchive
metadata:
  name: mirror.tgz
spec:
  path: airgap/mirror.tgz
status:
  phase: Ready
  type: CommonTransportFormat
  format: tgz
  size: 4096
  componentVersions:
  - name: github.com/gardener/landscaper-examples/guided-tour/helm-chart
    version: 1.0.0
    resources: 2
  observedTime: "2024-05-01T10:00:00Z"
"#;

#[test]
fn transport_archive_paths_stay_inside_the_folder() {
    let mut value = yaml(TRANSPORT_ARCHIVE);
    value["spec"]["path"] = "../outside.tgz".into();
    let err = validate_object(&value).unwrap_err().to_string();
    assert!(err.contains("spec.path") && err.contains(".."), "{err}");
}

#[test]
fn every_kind_round_trips_its_fixture() {
    let cases = [
        (INSTALLATION, Kind::Installation),
        (EXECUTION, Kind::Execution),
        (DEPLOY_ITEM, Kind::DeployItem),
        (TARGET_CONFIG, Kind::Target),
        (TARGET_SECRET, Kind::Target),
        (DATA_OBJECT, Kind::DataObject),
        (CONTEXT, Kind::Context),
        (CONFIG_MAP, Kind::ConfigMap),
        (SECRET, Kind::Secret),
        (MANIFEST_FILE, Kind::ManifestFile),
        (TRANSPORT_ARCHIVE, Kind::TransportArchive),
    ];
    for (text, kind) in cases {
        assert_eq!(round_trip(text).kind, kind);
    }
}

#[test]
fn typed_view_of_fixtures() {
    let inst: Installation = from_value(&yaml(INSTALLATION)).unwrap();
    assert_eq!(inst.spec.context(), "default");
    assert_eq!(inst.spec.data_imports().len(), 3);
    assert_eq!(
        inst.spec.target_imports()[1].targets.as_deref().unwrap(),
        ["a", "#b"]
    );
    let status = inst.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Progressing));
    assert!(
        status
            .last_error
            .unwrap()
            .has_code(crate::constants::ERR_FOR_INFO_ONLY)
    );
    let di: DeployItem = from_value(&yaml(DEPLOY_ITEM)).unwrap();
    assert_eq!(di.spec.timeout.unwrap().to_std(), std::time::Duration::ZERO);
    assert!(di.status.unwrap().phase.unwrap().is_final());
    let exec: Execution = from_value(&yaml(EXECUTION)).unwrap();
    assert_eq!(exec.spec.deploy_items()[1].config, Some(Value::Null));
    let secret: Secret = from_value(&yaml(SECRET)).unwrap();
    assert_eq!(secret.decoded_data()["password"], b"secret");
    assert_eq!(secret.decoded_data()["user"], b"admin");
}

#[test]
fn empty_collections_and_nulls_stay_present() {
    round_trip(
        r#"
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata: {name: a, namespace: ns, labels: {}, annotations: {}}
spec:
  blueprint: {inline: {filesystem: {}}}
  imports: {data: [], targets: []}
  importDataMappings: {}
  exports: {}
"#,
    );
    round_trip(
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata: {name: a}\ndata: null\n",
    );
    round_trip(
        "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: DataObject\nmetadata: {name: a}\n",
    );
}

// --- warnings ---------------------------------------------------------------------------------

fn minimal_installation() -> Value {
    json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Installation",
        "metadata": {"name": "inst", "namespace": "ns"},
        "spec": {
            "blueprint": {"inline": {"filesystem": {}}},
            "imports": {"data": [{"name": "a", "dataRef": "x"}]}
        }
    })
}

#[test]
fn unknown_fields_become_warnings_and_are_dropped() {
    let mut input = minimal_installation();
    input["spec"]["foo"] = json!(1);
    input["spec"]["imports"]["data"][0]["foo"] = json!({"deep": true});
    input["metadata"]["managedBy"] = json!("me");
    input["status"] = json!({"phase": "Init", "bogus": []});
    input["extra"] = json!("top-level");
    let validated = validate_object(&input).unwrap();
    assert_eq!(
        validated.warnings,
        [
            r#"unknown field "extra""#,
            r#"unknown field "metadata.managedBy""#,
            r#"unknown field "spec.foo""#,
            r#"unknown field "spec.imports.data[0].foo""#,
            r#"unknown field "status.bogus""#,
        ]
    );
    assert_eq!(validated.object.get("extra"), None);
    assert_eq!(validated.object["spec"].get("foo"), None);
    assert_eq!(
        validated.object["spec"]["imports"]["data"][0],
        json!({"name": "a", "dataRef": "x"})
    );
    assert_eq!(
        validated.object["status"],
        json!({"observedGeneration": 0, "phase": "Init"})
    );
}

#[test]
fn free_form_fields_never_warn() {
    let mut input = minimal_installation();
    input["spec"]["blueprint"]["inline"]["filesystem"] = json!({"anything": {"goes": 1}});
    input["spec"]["importDataMappings"] = json!({"x": {"whatever": [1]}});
    assert!(warnings_of(input).is_empty());
    let target = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
        "metadata": {"name": "t"},
        "spec": {"type": "x", "config": {"unknown": {"nested": true}}}
    });
    assert!(warnings_of(target).is_empty());
}

// --- decode errors ----------------------------------------------------------------------------

#[test]
fn type_errors_carry_their_path() {
    let mut input = minimal_installation();
    input["spec"]["imports"]["data"][0]["dataRef"] = json!(3);
    let err = error_of(input);
    assert_eq!(err.field, "spec.imports.data[0].dataRef");
    assert_eq!(err.message, "invalid type: integer `3`, expected a string");
    assert_eq!(
        err.to_string(),
        "spec.imports.data[0].dataRef: invalid type: integer `3`, expected a string"
    );

    let mut input = minimal_installation();
    input["metadata"]["labels"] = json!({"app": 1.5});
    assert_eq!(error_of(input).field, "metadata.labels.app");

    let mut input = minimal_installation();
    input["metadata"]["generation"] = json!("one");
    assert_eq!(error_of(input).field, "metadata.generation");

    let mut input = minimal_installation();
    input["spec"]["imports"]["targets"] = json!({"name": "x"});
    let err = error_of(input);
    assert_eq!(err.field, "spec.imports.targets");
    assert_eq!(err.message, "invalid type: map, expected a sequence");
}

#[test]
fn invalid_durations_and_phases() {
    let di = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DeployItem",
        "metadata": {"name": "d"},
        "spec": {"type": "x", "timeout": "ten minutes"}
    });
    let err = error_of(di);
    assert_eq!(err.field, "spec.timeout");
    assert_eq!(
        err.message,
        r#"unable to parse string into a duration: time: invalid duration "ten minutes""#
    );
    let di = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DeployItem",
        "metadata": {"name": "d"},
        "spec": {"type": "x"},
        "status": {"phase": "BrandNew"}
    });
    let validated = validate_object(&di).unwrap();
    assert_eq!(validated.object["status"]["phase"], "BrandNew");
}

#[test]
fn kind_resolution_errors() {
    let err = error_of(json!({"kind": "Installation"}));
    assert_eq!(
        (err.field.as_str(), err.message.as_str()),
        ("apiVersion", "Required value")
    );
    let err = error_of(json!({"apiVersion": "v1"}));
    assert_eq!(
        (err.field.as_str(), err.message.as_str()),
        ("kind", "Required value")
    );
    let err = error_of(json!({"apiVersion": "x/v1", "kind": "Foo"}));
    assert_eq!(err.field, "apiVersion");
    assert_eq!(err.message, r#"unknown kind "Foo" in apiVersion "x/v1""#);
    let err = error_of(json!({"apiVersion": "v1", "kind": "Pod"}));
    assert_eq!(err.field, "kind");
    assert_eq!(err.message, r#"unknown kind "Pod" in apiVersion "v1""#);
    let err = error_of(json!({"apiVersion": 1, "kind": "Pod"}));
    assert_eq!(err.message, "invalid type: integer `1`, expected a string");
    assert_eq!(error_of(json!([1])).field, "object");
}

// --- semantic checks --------------------------------------------------------------------------

/// Applies `edit` to `base` and returns the rejected field and message.
fn reject(base: &Value, edit: impl FnOnce(&mut Value)) -> (String, String) {
    let mut v = base.clone();
    edit(&mut v);
    let err = error_of(v);
    (err.field, err.message)
}

#[test]
fn metadata_checks() {
    let base = minimal_installation();
    let (f, m) = reject(&base, |v| {
        v["metadata"].as_object_mut().unwrap().remove("name");
    });
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "metadata.name",
            "Required value: name or generateName is required"
        )
    );
    // generateName alone is enough.
    let mut v = base.clone();
    v["metadata"] = json!({"generateName": "child-", "namespace": "ns"});
    validate_object(&v).unwrap();

    let (f, m) = reject(&base, |v| v["metadata"]["name"] = json!("Bad_Name"));
    assert_eq!(f, "metadata.name");
    assert!(
        m.starts_with(r#"Invalid value: "Bad_Name": a lowercase RFC 1123 label"#),
        "{m}"
    );
    // Installations are labels (no dots); other kinds are subdomains.
    let (f, _) = reject(&base, |v| v["metadata"]["name"] = json!("a.b"));
    assert_eq!(f, "metadata.name");
    let mut t = yaml(TARGET_CONFIG);
    t["metadata"]["name"] = json!("a.b");
    validate_object(&t).unwrap();
    let (f, m) = reject(&t, |v| v["metadata"]["name"] = json!("x".repeat(254)));
    assert_eq!(
        (f.as_str(), m.starts_with("Invalid value")),
        ("metadata.name", true)
    );
    assert!(m.ends_with("must be no more than 253 characters"), "{m}");

    let (f, m) = reject(&base, |v| v["metadata"]["name"] = json!("a".repeat(59)));
    assert_eq!(f, "metadata.name");
    assert!(m.ends_with(": must be no more than 58 characters"), "{m}");
    let mut ok = base.clone();
    ok["metadata"]["name"] = json!("a".repeat(58));
    validate_object(&ok).unwrap();
    let (f, m) = reject(&base, |v| {
        v["metadata"] = json!({"generateName": format!("{}-", "a".repeat(53)), "namespace": "ns"});
    });
    assert_eq!(f, "metadata.generateName");
    assert!(m.ends_with("must be no more than 53 characters"), "{m}");
    let (f, _) = reject(&base, |v| v["metadata"] = json!({"generateName": "Bad-"}));
    assert_eq!(f, "metadata.generateName");

    let (f, m) = reject(&base, |v| v["metadata"]["namespace"] = json!("my.ns"));
    assert_eq!(f, "metadata.namespace");
    assert!(m.starts_with(r#"Invalid value: "my.ns": a lowercase RFC 1123 label"#));

    let (f, m) = reject(&base, |v| v["metadata"]["labels"] = json!({"bad key": "v"}));
    assert_eq!(f, "metadata.labels");
    assert!(
        m.starts_with(r#"Invalid value: "bad key": name part must consist"#),
        "{m}"
    );
    let (f, m) = reject(&base, |v| {
        v["metadata"]["labels"] = json!({"k": "x".repeat(64)})
    });
    assert_eq!(f, "metadata.labels");
    assert!(m.ends_with("must be no more than 63 characters"));
    let (f, m) = reject(&base, |v| v["metadata"]["labels"] = json!({"k": "-v"}));
    assert_eq!(f, "metadata.labels");
    assert!(m.contains("a valid label must be an empty string"));
    let (f, m) = reject(&base, |v| {
        v["metadata"]["labels"] = json!({format!("{}/n", "p".repeat(254)): "v"});
    });
    assert_eq!(f, "metadata.labels");
    assert!(
        m.contains("prefix part must be no more than 253 characters"),
        "{m}"
    );
    let (f, _) = reject(&base, |v| {
        v["metadata"]["annotations"] = json!({"a/b/c": "v"})
    });
    assert_eq!(f, "metadata.annotations");
    let (f, m) = reject(&base, |v| {
        v["metadata"]["annotations"] = json!({"big": "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT)});
    });
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "metadata.annotations",
            "Too long: must have at most 262144 bytes"
        )
    );
}

#[test]
fn manifest_file_checks() {
    let base = yaml(MANIFEST_FILE);
    let (f, m) = reject(&base, |v| v["metadata"]["namespace"] = json!("ns"));
    assert_eq!(
        (f.as_str(), m.as_str()),
        ("metadata.namespace", "Forbidden: not allowed on this type")
    );
    let (f, m) = reject(&base, |v| v["spec"] = json!({}));
    assert_eq!(
        (f.as_str(), m.as_str()),
        ("spec.path", "Required value: path must not be empty")
    );
    let (f, _) = reject(&base, |v| v["spec"]["path"] = json!("/etc/passwd"));
    assert_eq!(f, "spec.path");
    let (f, m) = reject(&base, |v| v["spec"]["path"] = json!("a/../../b.yaml"));
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "spec.path",
            r#"Invalid value: "a/../../b.yaml": must not contain '..'"#
        )
    );
}

#[test]
fn installation_import_checks() {
    let base = minimal_installation();
    let (f, m) = reject(&base, |v| {
        v["spec"]["imports"]["data"][0] = json!({"name": "a"})
    });
    assert_eq!(f, "spec.imports.data[0]");
    assert_eq!(
        m,
        "Required value: exactly one of [dataRef, secretRef, configMapRef] must be set (currently set: none)"
    );
    let (f, m) = reject(&base, |v| {
        v["spec"]["imports"]["data"][0]["secretRef"] = json!({"name": "s"});
    });
    assert_eq!(f, "spec.imports.data[0]");
    assert_eq!(
        m,
        "Invalid value: exactly one of [dataRef, secretRef, configMapRef] must be set (currently set: [dataRef, secretRef])"
    );
    let (f, m) = reject(&base, |v| {
        v["spec"]["imports"]["data"][0] = json!({"name": "a", "secretRef": {"key": "k"}});
    });
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "spec.imports.data[0].secretRef.name",
            "Required value: name must not be empty"
        )
    );
    let (f, _) = reject(&base, |v| {
        v["spec"]["imports"]["data"][0] = json!({"name": "a", "configMapRef": {}});
    });
    assert_eq!(f, "spec.imports.data[0].configMapRef.name");
    let (f, m) = reject(&base, |v| {
        v["spec"]["imports"]["data"][0] = json!({"dataRef": "x"})
    });
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "spec.imports.data[0].name",
            "Required value: name must not be empty"
        )
    );
    let (f, m) = reject(&base, |v| {
        let data = v["spec"]["imports"]["data"].as_array_mut().unwrap();
        data.push(json!({"name": "a", "dataRef": "y"}));
    });
    assert_eq!(
        (f.as_str(), m.as_str()),
        ("spec.imports.data[1]", r#"Duplicate value: "a""#)
    );

    let (f, m) = reject(&base, |v| {
        v["spec"]["imports"]["targets"] = json!([{"name": "a", "target": "t"}])
    });
    assert_eq!(
        (f.as_str(), m.as_str()),
        ("spec.imports.targets[0]", r#"Duplicate value: "a""#)
    );
    let (f, _) = reject(&base, |v| {
        v["spec"]["imports"]["targets"] = json!([{"target": "t"}])
    });
    assert_eq!(f, "spec.imports.targets[0].name");
    let (f, m) = reject(&base, |v| {
        v["spec"]["imports"]["targets"] = json!([{"name": "t"}])
    });
    assert_eq!(f, "spec.imports.targets[0]");
    assert!(m.contains("exactly one of [target, targets, targetMap, targetMapRef, targetListRef]"));
    let (f, m) = reject(&base, |v| {
        v["spec"]["imports"]["targets"] =
            json!([{"name": "t", "target": "x", "targetMapRef": "y"}]);
    });
    assert_eq!(f, "spec.imports.targets[0]");
    assert!(
        m.ends_with("(currently set: [target, targetMapRef])"),
        "{m}"
    );
    let (f, m) = reject(&base, |v| {
        v["spec"]["imports"]["targets"] = json!([{"name": "t", "targets": ["a", ""]}])
    });
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "spec.imports.targets[0].targets[1]",
            "Required value: target must not be empty"
        )
    );
    let (f, m) = reject(&base, |v| {
        v["spec"]["imports"]["targets"] = json!([{"name": "t", "targetMap": {"Red": "x"}}])
    });
    assert_eq!(f, "spec.imports.targets[0].targetMap[Red]");
    assert!(m.starts_with(r#"Invalid value: "Red": key must contain only lower-case"#));
    let (f, _) = reject(&base, |v| {
        v["spec"]["imports"]["targets"] = json!([{"name": "t", "targetMap": {"red": ""}}])
    });
    assert_eq!(f, "spec.imports.targets[0].targetMap[red]");
    // An empty list still counts as set, as in Landscaper.
    let mut ok = base.clone();
    ok["spec"]["imports"]["targets"] = json!([{"name": "t", "targets": []}]);
    validate_object(&ok).unwrap();
}

#[test]
fn installation_export_blueprint_and_cron_checks() {
    let base = minimal_installation();
    let (f, m) = reject(&base, |v| {
        v["spec"]["exports"] = json!({"data": [{"name": "a"}]})
    });
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "spec.exports.data[0].dataRef",
            "Required value: dataRef must not be empty"
        )
    );
    let (f, _) = reject(&base, |v| {
        v["spec"]["exports"] = json!({"data": [{"dataRef": "a"}]})
    });
    assert_eq!(f, "spec.exports.data[0].name");
    let (f, _) = reject(&base, |v| {
        v["spec"]["exports"] =
            json!({"data": [{"name": "a", "dataRef": "x"}, {"name": "a", "dataRef": "y"}]});
    });
    assert_eq!(f, "spec.exports.data[1]");
    let (f, m) = reject(&base, |v| {
        v["spec"]["exports"] = json!({"targets": [{"name": "a"}]})
    });
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "spec.exports.targets[0].target",
            "Required value: target must not be empty"
        )
    );
    let (f, _) = reject(&base, |v| {
        v["spec"]["exports"] = json!({"targets": [{"target": "a"}]})
    });
    assert_eq!(f, "spec.exports.targets[0].name");
    // Data and target exports have separate name spaces.
    let mut ok = base.clone();
    ok["spec"]["exports"] =
        json!({"data": [{"name": "a", "dataRef": "x"}], "targets": [{"name": "a", "target": "t"}]});
    validate_object(&ok).unwrap();

    let (f, m) = reject(&base, |v| v["spec"]["blueprint"] = json!({}));
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "spec.blueprint",
            "Required value: exactly one of [inline, ref] must be set (currently set: none)"
        )
    );
    let (f, m) = reject(&base, |v| {
        v["spec"]["blueprint"]["ref"] = json!({"resourceName": "bp"})
    });
    assert_eq!(f, "spec.blueprint");
    assert!(m.ends_with("(currently set: [inline, ref])"));
    let (f, _) = reject(&base, |v| {
        v["spec"].as_object_mut().unwrap().remove("blueprint");
    });
    assert_eq!(f, "spec.blueprint");
    let (f, _) = reject(&base, |v| v["spec"]["componentDescriptor"] = json!({}));
    assert_eq!(f, "spec.componentDescriptor");

    let (f, m) = reject(&base, |v| {
        v["spec"]["automaticReconcile"] = json!({"succeededReconcile": {"cronSpec": "every day"}});
    });
    assert_eq!(f, "spec.automaticReconcile.succeededReconcile.cronSpec");
    assert_eq!(
        m,
        r#"Invalid value: "every day": field must be a valid cron spec"#
    );
    let (f, _) = reject(&base, |v| {
        v["spec"]["automaticReconcile"] = json!({"failedReconcile": {"cronSpec": "61 * * * *"}});
    });
    assert_eq!(f, "spec.automaticReconcile.failedReconcile.cronSpec");
    let (f, _) = reject(&base, |v| {
        v["spec"]["automaticReconcile"] = json!({"failedReconcile": {"interval": "5 minutes"}});
    });
    assert_eq!(f, "spec.automaticReconcile.failedReconcile.interval");
}

#[test]
fn execution_checks() {
    let base = yaml(EXECUTION);
    let (f, m) = reject(&base, |v| v["spec"]["deployItems"][1]["name"] = json!("db"));
    assert_eq!(
        (f.as_str(), m.as_str()),
        ("spec.deployItems[1]", r#"Duplicate value: "db""#)
    );
    let (f, m) = reject(&base, |v| {
        v["spec"]["deployItems"][0]
            .as_object_mut()
            .unwrap()
            .remove("name");
    });
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "spec.deployItems[0].name",
            "Required value: name must not be empty"
        )
    );
    let (f, _) = reject(&base, |v| {
        v["spec"]["deployItems"][0]
            .as_object_mut()
            .unwrap()
            .remove("type");
    });
    assert_eq!(f, "spec.deployItems[0].type");
    let (f, _) = reject(&base, |v| {
        v["spec"]["deployItems"][1]["target"] = json!({"name": "c"})
    });
    assert_eq!(f, "spec.deployItems[1].target.namespace");
    let (f, _) = reject(&base, |v| {
        v["spec"]["deployItems"][1]["labels"] = json!({"k": "a b"})
    });
    assert_eq!(f, "spec.deployItems[1].labels");
    let (f, m) = reject(&base, |v| {
        v["spec"]["deployItems"][1]["dependsOn"] = json!(["db", "nope"])
    });
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "spec.deployItems[1].dependsOn[1]",
            r#"Invalid value: "nope": depends on undefined deploy item"#
        )
    );
    let (f, m) = reject(&base, |v| {
        v["spec"]["deployItems"][0]["dependsOn"] = json!(["app"])
    });
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "spec.deployItems",
            r#"Invalid value: "db -> app -> db": cycle found in dependencies"#
        )
    );
    let (f, _) = reject(&base, |v| {
        v["spec"]["deployItems"][0]["dependsOn"] = json!(["db"])
    });
    assert_eq!(f, "spec.deployItems");
}

#[test]
fn deploy_item_and_target_checks() {
    let di = yaml(DEPLOY_ITEM);
    let (f, m) = reject(&di, |v| {
        v["spec"].as_object_mut().unwrap().remove("type");
    });
    assert_eq!(
        (f.as_str(), m.as_str()),
        ("spec.type", "Required value: type must not be empty")
    );
    let (f, m) = reject(&di, |v| v["spec"]["target"] = json!({"namespace": "ns"}));
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "spec.target.name",
            "Required value: target name must not be empty"
        )
    );
    let (f, _) = reject(&di, |v| v["spec"]["target"] = json!({"name": "n"}));
    assert_eq!(f, "spec.target.namespace");

    let target = yaml(TARGET_CONFIG);
    let (f, m) = reject(&target, |v| v["spec"]["secretRef"] = json!({"name": "s"}));
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "spec",
            "Invalid value: either config or secretRef may be set, not both"
        )
    );
    let (f, m) = reject(&target, |v| v["spec"] = json!({"config": {}}));
    assert_eq!(
        (f.as_str(), m.as_str()),
        ("spec.type", "Required value: type must not be empty")
    );
    let (f, _) = reject(&target, |v| {
        v["spec"] = json!({"type": "t", "secretRef": {"key": "k"}})
    });
    assert_eq!(f, "spec.secretRef.name");
    // `config: null` is not a config (Go decodes it into a nil pointer).
    let mut ok = yaml(TARGET_SECRET);
    ok["spec"]["config"] = Value::Null;
    assert_eq!(validate_object(&ok).unwrap().object, ok);
}

#[test]
fn config_map_and_secret_checks() {
    let cm = yaml(CONFIG_MAP);
    let (f, m) = reject(&cm, |v| v["data"]["bad/key"] = json!("x"));
    assert_eq!(f, "data[bad/key]");
    assert!(
        m.starts_with(r#"Invalid value: "bad/key": a valid config key must consist"#),
        "{m}"
    );
    let (f, _) = reject(&cm, |v| v["binaryData"]["..x"] = json!(""));
    assert_eq!(f, "binaryData[..x]");
    let (f, m) = reject(&cm, |v| v["binaryData"]["blob"] = json!("not base64!"));
    assert_eq!(
        (f.as_str(), m.as_str()),
        ("binaryData[blob]", "illegal base64 data at input byte 3")
    );
    let (f, m) = reject(&cm, |v| v["binaryData"]["KEY_TWO"] = json!("eA=="));
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "data[KEY_TWO]",
            r#"Invalid value: "KEY_TWO": duplicate of key present in binaryData"#
        )
    );
    let (f, m) = reject(&cm, |v| v["data"]["key.one"] = json!(42));
    assert_eq!(
        (f.as_str(), m.as_str()),
        (
            "data.key.one",
            "invalid type: integer `42`, expected a string"
        )
    );
    let (f, m) = reject(&cm, |v| {
        v["data"]["key.one"] = json!("x".repeat(MAX_DATA_SIZE + 1))
    });
    assert_eq!(
        (f.as_str(), m.as_str()),
        ("data", "Too long: must have at most 1048576 bytes")
    );

    let secret = yaml(SECRET);
    let (f, m) = reject(&secret, |v| v["data"]["password"] = json!("c2VjcmV0!"));
    assert_eq!(
        (f.as_str(), m.as_str()),
        ("data[password]", "illegal base64 data at input byte 8")
    );
    let (f, _) = reject(&secret, |v| v["data"]["password"] = json!("c2VjcmV"));
    assert_eq!(f, "data[password]");
    let (f, _) = reject(&secret, |v| v["data"]["a b"] = json!(""));
    assert_eq!(f, "data[a b]");
    let (f, _) = reject(&secret, |v| v["stringData"]["a:b"] = json!(""));
    assert_eq!(f, "stringData[a:b]");
    // Go's decoder ignores line breaks inside base64.
    let mut ok = secret.clone();
    ok["data"]["password"] = json!("c2Vj\ncmV0\n");
    validate_object(&ok).unwrap();
}

/// A value that must never appear in an error about the object that holds it.
const MARKER: &str = "SeCrEtMaRkEr";

/// Malformed Secrets and Targets holding [`MARKER`] (or the number 424242) in their content.
fn malformed_credentials() -> Vec<Value> {
    let secret = |edit: &dyn Fn(&mut Value)| {
        let mut v = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "ns"}, "type": "Opaque"});
        edit(&mut v);
        v
    };
    let target = |spec: Value| {
        json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
            "metadata": {"name": "t", "namespace": "ns"}, "spec": spec})
    };
    let cluster = "landscaper.gardener.cloud/kubernetes-cluster";
    let mut out = Vec::new();
    for field in ["data", "stringData"] {
        for bad in [
            json!(MARKER),
            json!(format!("password: {MARKER}")),
            json!(424242),
            json!(4.24242e5),
            json!(true),
            json!([MARKER]),
            json!([{"k": MARKER}]),
            json!({"k": 424242}),
            json!({"k": -424242}),
            json!({"k": 424242.5}),
            json!({"k": true}),
            json!({"k": [MARKER]}),
            json!({"k": {"nested": MARKER}}),
            json!({"k": MARKER, "j": 424242}),
        ] {
            out.push(secret(&|v| v[field] = bad.clone()));
        }
    }
    out.push(secret(&|v| v["data"] = json!({"k": format!("{MARKER}!")})));
    out.push(secret(&|v| v["data"] = json!({"k": format!("{MARKER}=")})));
    out.push(secret(&|v| v["type"] = json!({"t": MARKER})));
    out.push(secret(&|v| v["type"] = json!(424242)));
    out.push(secret(&|v| v["immutable"] = json!(MARKER)));
    out.push(secret(&|v| {
        v["metadata"]["annotations"] = json!({
        "kubectl.kubernetes.io/last-applied-configuration": {"data": MARKER}})
    }));
    out.push(secret(&|v| {
        v["metadata"]["annotations"] = json!({
        "kubectl.kubernetes.io/last-applied-configuration": 424242})
    }));
    out.push(secret(&|v| {
        v["stringData"] = json!({"k": MARKER.repeat(MAX_DATA_SIZE / MARKER.len() + 1)})
    }));
    for kubeconfig in [
        json!({"users": [{"user": {"token": MARKER}}]}),
        json!([MARKER]),
        json!(424242),
        json!(true),
        json!({"secretRef": {"name": "s"}, "token": MARKER}),
        json!({"secretRef": MARKER}),
        json!({"secretRef": {"name": "s", "key": 424242}}),
        json!({"secretRef": {"name": "s", "token": MARKER}}),
    ] {
        out.push(target(
            json!({"type": cluster, "config": {"kubeconfig": kubeconfig}}),
        ));
    }
    for spec in [
        json!({"type": cluster, "config": {"kubeconfig": MARKER}, "secretRef": {"name": "s"}}),
        json!({"type": cluster, "config": MARKER, "secretRef": {"name": "s"}}),
        json!({"type": 424242, "config": {"kubeconfig": MARKER}}),
        json!({"type": cluster, "secretRef": MARKER}),
        json!({"type": cluster, "secretRef": {"name": 424242}}),
        json!({"type": cluster, "secretRef": {"name": "", "key": MARKER}}),
        json!({"config": {"kubeconfig": MARKER}}),
        json!(MARKER),
        json!([MARKER]),
    ] {
        out.push(target(spec));
    }
    out
}

#[test]
fn errors_about_credentials_never_quote_their_content() {
    for input in malformed_credentials() {
        let err = error_of(input.clone());
        let text = format!("{err} {err:?}");
        assert!(
            !text.contains(MARKER) && !text.contains("424242") && !text.contains("4.24242"),
            "{input} -> {text}"
        );
        // Still useful: the field is named.
        assert!(!err.field.is_empty(), "{input} -> {text}");
    }
    // The messages keep saying what is wrong.
    let err = error_of(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s"}, "data": MARKER}));
    assert_eq!(
        (err.field.as_str(), err.message.as_str()),
        ("data", "invalid type: a string, expected a map")
    );
    let err = error_of(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s"}, "stringData": {"k": 424242}}));
    assert_eq!(
        (err.field.as_str(), err.message.as_str()),
        ("stringData.k", "invalid type: a number, expected a string")
    );
    let err = error_of(
        json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
        "metadata": {"name": "t"}, "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster",
        "config": {"kubeconfig": {"users": [MARKER]}}}}),
    );
    assert_eq!(err.field, "spec.config.kubeconfig");
    assert!(
        err.message
            .starts_with("Invalid value: a map given: must be the kubeconfig as a string"),
        "{err}"
    );
    // Other kinds keep serde's full message, which helps to find the mistake.
    let err = error_of(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c"}, "data": "plain"}));
    assert_eq!(
        err.message,
        "invalid type: string \"plain\", expected a map"
    );
}

#[test]
fn kubeconfigs_must_be_a_value_ref() {
    let cluster = |kubeconfig: Value| {
        json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
            "metadata": {"name": "t"}, "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster",
            "config": {"kubeconfig": kubeconfig}}})
    };
    for ok in [
        json!("apiVersion: v1"),
        json!({"secretRef": {"name": "s", "key": "kubeconfig"}}),
        json!({"secretRef": {"name": "s", "namespace": "ns", "key": "kubeconfig"}}),
        Value::Null,
    ] {
        validate_object(&cluster(ok.clone())).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    // Other target types keep a free-form config.
    let other = json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
        "metadata": {"name": "t"}, "spec": {"type": "example.com/custom",
        "config": {"kubeconfig": {"any": "thing"}}}});
    validate_object(&other).unwrap();
}

// --- property tests ---------------------------------------------------------------------------

fn label_key() -> impl Strategy<Value = String> {
    let name = "[A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?";
    let prefix = "[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?(\\.[a-z0-9]{1,8}){0,2}";
    prop_oneof![
        name.prop_map(String::from),
        (prefix, name).prop_map(|(p, n)| format!("{p}/{n}")),
    ]
}

fn label_value() -> impl Strategy<Value = String> {
    "(([A-Za-z0-9][-A-Za-z0-9_.]{0,20})?[A-Za-z0-9])?"
}

fn object_meta() -> impl Strategy<Value = ObjectMeta> {
    let labels = proptest::option::of(proptest::collection::btree_map(
        label_key(),
        label_value(),
        0..5,
    ));
    let annotations = proptest::option::of(proptest::collection::btree_map(
        label_key(),
        ".{0,30}",
        0..5,
    ));
    let names = (
        "[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?",
        proptest::option::of("[a-z]{1,10}-"),
        proptest::option::of("[a-z0-9]{1,12}"),
        proptest::option::of(any::<i64>()),
        proptest::option::of(proptest::collection::vec("[a-z.]{1,20}", 0..3)),
        proptest::option::of("20[0-9]{2}-0[1-9]-1[0-9]T0[0-9]:00:00Z"),
    );
    (names, labels, annotations).prop_map(
        |(
            (name, generate_name, namespace, generation, finalizers, created),
            labels,
            annotations,
        )| {
            ObjectMeta {
                name: Some(name),
                generate_name,
                namespace,
                generation,
                finalizers,
                creation_timestamp: created,
                labels,
                annotations,
                ..ObjectMeta::default()
            }
        },
    )
}

proptest! {
    #[test]
    fn object_meta_round_trips_through_json(meta in object_meta()) {
        let json = serde_json::to_value(&meta).unwrap();
        let back: ObjectMeta = serde_json::from_value(json.clone()).unwrap();
        prop_assert_eq!(&back, &meta);
        prop_assert_eq!(serde_json::to_value(&back).unwrap(), json);
    }

    #[test]
    fn valid_labels_pass_validation_and_round_trip(meta in object_meta()) {
        let input = json!({
            "apiVersion": "landscaper.gardener.cloud/v1alpha1",
            "kind": "DataObject",
            "metadata": serde_json::to_value(&meta).unwrap(),
            "data": {"x": 1},
        });
        let validated = validate_object(&input).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(validated.warnings.is_empty());
        prop_assert_eq!(validated.object, input);
    }
}

#[test]
fn workflow_blocks_are_kept_and_checked() {
    // Issue 19: the block on an Execution's deploy items is a known field (kept, no warning);
    // the annotation on Installations and Executions must decode and fit the kind.
    let exec = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1",
        "kind": "Execution",
        "metadata": {"name": "e", "namespace": "ns",
                     "annotations": {"landscaper-appliance.io/workflow": "failurePolicy: ContinueIndependent\nmaxConcurrency: 2\n"}},
        "spec": {"deployItems": [
            {"name": "a", "type": "t", "appliance": {"readyPostcondition": "self.ready"}}
        ]}
    });
    let validated = validate_object(&exec).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(validated.warnings, Vec::<String>::new());
    assert_eq!(
        validated.object["spec"]["deployItems"][0]["appliance"],
        json!({"readyPostcondition": "self.ready"})
    );

    let mut misplaced = exec.clone();
    misplaced["spec"]["deployItems"][0]["appliance"] = json!({"maxConcurrency": 1});
    let e = error_of(misplaced);
    assert_eq!(e.field, "spec.deployItems[0].appliance.maxConcurrency");

    let mut inst = minimal_installation();
    inst["metadata"]["annotations"] =
        json!({"landscaper-appliance.io/workflow": "failurePolicy: Eventually"});
    let e = error_of(inst.clone());
    assert_eq!(
        e.field,
        "metadata.annotations[landscaper-appliance.io/workflow]"
    );
    assert!(e.message.contains("invalid workflow block"), "{e}");
    inst["metadata"]["annotations"] = json!({"landscaper-appliance.io/workflow": "activationCondition: {crdPresent: servicemonitors.monitoring.coreos.com}"});
    assert!(validate_object(&inst).is_ok());
}
