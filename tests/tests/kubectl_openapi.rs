//! End-to-end: the real `kubectl` (1.34) over the kubeconfig the daemon writes, using the
//! OpenAPI documents (`/openapi/v3`, and `/openapi/v2` as protobuf): `explain` of every kind and of nested fields, the
//! validation decision of `apply` (kubectl leaves it to the server, as with kube-apiserver's
//! custom resources, because the PATCH operations take `fieldValidation`), and `kubectl wait`
//! on the conditions the workflow records (issue 19) and on the phase.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use landscaper_e2e::{Daemon, eventually, kubectl};
use serde_json::Value;

/// kubectl with the daemon's written kubeconfig and its own HOME (no shared cache).
struct Kubectl {
    path: PathBuf,
    kubeconfig: PathBuf,
    home: tempfile::TempDir,
}

impl Kubectl {
    fn new(daemon: &Daemon) -> Option<Kubectl> {
        let path = kubectl()?;
        let kubeconfig = daemon.data.join("kubeconfig.yaml");
        eventually(Duration::from_secs(10), "kubeconfig written", || {
            kubeconfig.exists().then_some(())
        });
        Some(Kubectl {
            path,
            kubeconfig,
            home: tempfile::tempdir().unwrap(),
        })
    }

    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new(&self.path)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env("HOME", self.home.path())
            .output()
            .expect("run kubectl");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "kubectl {args:?} failed: {err}\n{out}");
        out
    }
}

fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn kubectl_explains_every_kind_and_nested_fields() {
    let daemon = Daemon::start();
    let Some(kubectl) = Kubectl::new(&daemon) else {
        println!("SKIP: kubectl not found (set KUBECTL or run scripts/test.sh)");
        return;
    };
    for (resource, group, kind) in [
        ("installations", "landscaper.gardener.cloud", "Installation"),
        ("executions", "landscaper.gardener.cloud", "Execution"),
        ("deployitems", "landscaper.gardener.cloud", "DeployItem"),
        ("dataobjects", "landscaper.gardener.cloud", "DataObject"),
        ("targets", "landscaper.gardener.cloud", "Target"),
        ("contexts", "landscaper.gardener.cloud", "Context"),
        (
            "manifestfiles",
            "appliance.landscaper-appliance.io",
            "ManifestFile",
        ),
        (
            "transportarchives",
            "appliance.landscaper-appliance.io",
            "TransportArchive",
        ),
        ("configmaps", "", "ConfigMap"),
        ("secrets", "", "Secret"),
        ("namespaces", "", "Namespace"),
        ("events", "", "Event"),
    ] {
        let out = kubectl.ok(&["explain", resource]);
        assert!(
            out.contains(&format!("KIND:       {kind}\n")),
            "{resource}: {out}"
        );
        if !group.is_empty() {
            assert!(
                out.contains(&format!("GROUP:      {group}\n")),
                "{resource}: {out}"
            );
        }
        // kube's ObjectMeta, as on a cluster.
        assert!(out.contains("metadata\t<ObjectMeta>"), "{resource}: {out}");
    }
    // Nested fields, from the model's serde names and doc comments.
    let out = kubectl.ok(&["explain", "installation.spec.imports.targets"]);
    assert!(out.contains("FIELD: targets <[]Object>"), "{out}");
    for field in [
        "targetMapRef\t<string>",
        "targetMap\t<map[string]string>",
        "targets\t<[]string>",
    ] {
        assert!(out.contains(field), "{field}: {out}");
    }
    let out = kubectl.ok(&["explain", "installation.status.conditions"]);
    assert!(out.contains("lastTransitionTime\t<string>"), "{out}");
    let out = kubectl.ok(&["explain", "deployitem.spec.target"]);
    assert!(out.contains("FIELD: target <Object>"), "{out}");
    let out = kubectl.ok(&[
        "explain",
        "execution.spec.deployItems.appliance.failurePolicy",
    ]);
    assert!(
        out.contains("ENUM:\n    FailFast\n    ContinueIndependent\n"),
        "{out}"
    );
    let out = kubectl.ok(&["explain", "target.spec.config"]);
    assert!(out.contains("free-form"), "{out}");
    let out = kubectl.ok(&["explain", "installations.metadata.managedFields"]);
    assert!(out.contains("ManagedFieldsEntry"), "{out}");
    let out = kubectl.ok(&["explain", "configmap.data"]);
    assert!(out.contains("FIELD: data <map[string]string>"), "{out}");
    // The v2 document, which client-go reads as protobuf only.
    let out = kubectl.ok(&[
        "explain",
        "installation.spec.imports.targets",
        "--output",
        "plaintext-openapiv2",
    ]);
    assert!(out.contains("KIND:     Installation"), "{out}");
    assert!(out.contains("RESOURCE: targets <[]Object>"), "{out}");
    assert!(out.contains("targetMapRef\t<string>"), "{out}");
    let out = kubectl.ok(&["explain", "secret", "--output", "plaintext-openapiv2"]);
    assert!(out.contains("KIND:     Secret"), "{out}");
    // A field that does not exist is kubectl's own error.
    let (ok, _, err) = kubectl.run(&["explain", "installation.spec.blueprnt"]);
    assert!(!ok);
    assert!(err.contains("field \"blueprnt\" does not exist"), "{err}");
}

const INSTALLATION: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: fresh
  namespace: e2e
spec:
  imports:
    targets:
      - name: cluster
        target: my-cluster
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
"#;

#[test]
fn kubectl_apply_validates_valid_objects_and_leaves_strict_checks_to_the_server() {
    let daemon = Daemon::start();
    let Some(kubectl) = Kubectl::new(&daemon) else {
        println!("SKIP: kubectl not found (set KUBECTL or run scripts/test.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let valid = write_file(dir.path(), "valid.yaml", INSTALLATION);
    let valid = valid.to_str().unwrap();
    // Client-side: the OpenAPI documents are found and a valid object passes (this failed with
    // "failed to download openapi" before the documents existed).
    for validate in ["--validate=strict", "--validate=warn", "--validate=true"] {
        let out = kubectl.ok(&["apply", "--dry-run=client", validate, "-f", valid]);
        assert_eq!(
            out.trim(),
            "installation.landscaper.gardener.cloud/fresh created (dry run)"
        );
    }
    let out = kubectl.ok(&["create", "--dry-run=client", "-o", "name", "-f", valid]);
    assert_eq!(out.trim(), "installation.landscaper.gardener.cloud/fresh");
    let configmap = write_file(
        dir.path(),
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: e2e}\ndata: {a: b}\n",
    );
    let out = kubectl.ok(&[
        "apply",
        "--dry-run=client",
        "-f",
        configmap.to_str().unwrap(),
    ]);
    assert_eq!(out.trim(), "configmap/c created (dry run)");

    // As with kube-apiserver's custom resources, kubectl finds `fieldValidation` on the kind's
    // PATCH operation and sends its directive to the server instead of validating client-side:
    // the unknown field is the server's to report (`strict decoding error: unknown field
    // "spec.blueprnt"`).
    let typo = write_file(
        dir.path(),
        "typo.yaml",
        &INSTALLATION.replace("  blueprint:", "  blueprnt:"),
    );
    let (_, _, log) = kubectl.run(&[
        "apply",
        "--dry-run=server",
        "--validate=strict",
        "-v=6",
        "-f",
        typo.to_str().unwrap(),
    ]);
    let create = log
        .lines()
        .find(|l| l.contains("verb=\"POST\"") && l.contains("/namespaces/e2e/installations?"))
        .unwrap_or_else(|| panic!("no create request: {log}"));
    assert!(create.contains("dryRun=All"), "{create}");
    assert!(create.contains("fieldValidation=Strict"), "{create}");
    assert!(
        !log.contains("failed to download openapi"),
        "kubectl validated client-side: {log}"
    );
}

/// An Installation of three mock items `base <- feature <- addon`; `feature` carries the
/// reconcile precondition `true`, recorded as a condition of the Execution
/// (`feature/ReconcilePrecondition`) and of the deploy item (`ReconcilePrecondition`).
const FLAGGED: &str = r#"apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: flagged
  namespace: e2e
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          deployExecutions:
            - name: default
              type: GoTemplate
              template: |
                deployItems:
                  - name: base
                    type: landscaper.gardener.cloud/mock
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
                  - name: feature
                    type: landscaper.gardener.cloud/mock
                    dependsOn: [base]
                    appliance:
                      reconcilePrecondition: "true"
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
"#;

#[test]
fn kubectl_waits_for_conditions_and_the_phase() {
    let daemon = Daemon::start();
    let Some(kubectl) = Kubectl::new(&daemon) else {
        println!("SKIP: kubectl not found (set KUBECTL or run scripts/test.sh)");
        return;
    };
    daemon.write("flagged.yaml", FLAGGED);
    // `kubectl wait` on a named object that does not exist yet fails at once, as on a cluster.
    eventually(Duration::from_secs(30), "the installation ingested", || {
        kubectl
            .run(&["get", "-n", "e2e", "installation/flagged"])
            .0
            .then_some(())
    });
    // The phase, through kubectl's watch of the object.
    let out = kubectl.ok(&[
        "wait",
        "-n",
        "e2e",
        "installation/flagged",
        "--for=jsonpath={.status.phase}=Succeeded",
        "--timeout=90s",
    ]);
    assert_eq!(
        out.trim(),
        "installation.landscaper.gardener.cloud/flagged condition met"
    );
    let execution = kubectl.ok(&[
        "get",
        "-n",
        "e2e",
        "installation/flagged",
        "-o",
        "jsonpath={.status.executionRef.name}",
    ]);
    assert!(!execution.is_empty());
    let out = kubectl.ok(&[
        "wait",
        "-n",
        "e2e",
        &format!("execution/{execution}"),
        "--for=condition=feature/ReconcilePrecondition",
        "--timeout=30s",
    ]);
    assert!(out.contains("condition met"), "{out}");
    let items: Value = serde_json::from_str(&kubectl.ok(&[
        "get",
        "-n",
        "e2e",
        "deployitems",
        "-l",
        "execution.landscaper.gardener.cloud/name=feature",
        "-o",
        "json",
    ]))
    .unwrap();
    let item = items["items"][0]["metadata"]["name"]
        .as_str()
        .expect("the feature item")
        .to_string();
    let out = kubectl.ok(&[
        "wait",
        "-n",
        "e2e",
        &format!("deployitem/{item}"),
        "--for=condition=ReconcilePrecondition",
        "--timeout=30s",
    ]);
    assert!(out.contains("condition met"), "{out}");
    // The check can fail: the condition is True, not False, and a condition that is never set
    // is not met either.
    for condition in ["ReconcilePrecondition=False", "ReadyPostcondition"] {
        let (ok, _, err) = kubectl.run(&[
            "wait",
            "-n",
            "e2e",
            &format!("deployitem/{item}"),
            &format!("--for=condition={condition}"),
            "--timeout=2s",
        ]);
        assert!(!ok, "{condition}");
        assert!(err.contains("timed out waiting for the condition"), "{err}");
    }
}
