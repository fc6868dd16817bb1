//! End-to-end: the helm deployer's real Helm releases (`helmDeployment` unset: true) through
//! the daemon against the Kubernetes test server, side by side with the real `helm` 3.19
//! (`HELM`; SKIP without it): after the appliance installs a chart, `helm list|status|history|
//! get values|get manifest` show the release; a `helm rollback` by the user and a reconcile by
//! the appliance converge with a new revision; a release made by `helm install` is upgraded by
//! the appliance; deleting the installations uninstalls (no release records left).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use landscaper_e2e::cluster::Cluster;
use landscaper_e2e::{Daemon, eventually};
use serde_json::{Value, json};

const DI_PATH: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/deployitems";

/// The chart: a ConfigMap `<release>-cm` with `.Values.greeting` and the revision, a
/// Deployment, NOTES.txt.
fn write_chart(dir: &Path) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: demo\nversion: 0.1.0\nappVersion: \"2.0\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("values.yaml"), "greeting: hello\n").unwrap();
    std::fs::write(
        dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  revision: {{ .Release.Revision | quote }}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("templates/web.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: {{ .Release.Name }}}\n  template:\n    metadata:\n      labels: {app: {{ .Release.Name }}}\n    spec:\n      containers:\n        - name: web\n          image: nginx:1.25\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("templates/NOTES.txt"),
        "Thanks {{ .Release.Name }}\n",
    )
    .unwrap();
}

/// An installation with one helm deploy item (real release) named `name` in namespace `apps`.
fn installation(name: &str, greeting: &str, touch: u32) -> String {
    format!(
        r#"# touch {touch}
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: {name}
  namespace: e2e
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  imports:
    targets:
      - name: cluster
        target: cluster
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchema: "https://json-schema.org/draft/2019-09/schema"
          imports:
            - name: cluster
              type: target
              targetType: landscaper.gardener.cloud/kubernetes-cluster
          deployExecutions:
            - name: default
              type: GoTemplate
              template: |
                deployItems:
                  - name: item
                    type: landscaper.gardener.cloud/helm
                    target:
                      import: cluster
                    config:
                      apiVersion: helm.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
                      name: {name}
                      namespace: apps
                      createNamespace: true
                      chart: {{ref: "local://charts/demo"}}
                      values:
                        greeting: {greeting}
"#
    )
}

/// `helm` bound to the test cluster.
struct Helm {
    bin: PathBuf,
    home: tempfile::TempDir,
}

impl Helm {
    fn new(cluster: &Cluster) -> Option<Helm> {
        let bin = std::env::var_os("HELM")
            .map(PathBuf::from)
            .filter(|p| p.is_file());
        let Some(bin) = bin else {
            println!("SKIP: set HELM to the helm 3.19 binary");
            return None;
        };
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("kubeconfig"), cluster.kubeconfig()).unwrap();
        Some(Helm { bin, home })
    }

    fn ok(&self, args: &[&str]) -> String {
        let home = self.home.path();
        let out = Command::new(&self.bin)
            .args(args)
            .env("KUBECONFIG", home.join("kubeconfig"))
            .env("HOME", home)
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "helm {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

fn item_of(daemon: &Daemon, inst: &str) -> Option<Value> {
    daemon
        .get_json(DI_PATH)
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .find(|d| {
            d["metadata"]["labels"]["landscaper.gardener.cloud/installation-name"].as_str()
                == Some(inst)
                || d["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|o| o.iter().any(|r| r["name"] == inst))
        })
}

/// (revision, status) of the release's records, by revision.
fn records(cluster: &Cluster, release: &str) -> Vec<(u32, String)> {
    let list = cluster
        .get(&format!(
            "/api/v1/namespaces/apps/secrets?labelSelector=owner%3Dhelm%2Cname%3D{release}"
        ))
        .unwrap_or_default();
    let mut records: Vec<(u32, String)> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            (
                s["metadata"]["labels"]["version"]
                    .as_str()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                s["metadata"]["labels"]["status"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    records.sort();
    records
}

fn deployed(cluster: &Cluster, daemon: &Daemon, release: &str, revision: u32) {
    eventually(
        Duration::from_secs(60),
        &format!("release {release} deployed at revision {revision}"),
        || {
            let records = records(cluster, release);
            let done = records.last() == Some(&(revision, "deployed".to_string()))
                && item_of(daemon, release).is_some_and(|d| d["status"]["phase"] == "Succeeded");
            if !done {
                eprintln!(
                    "{release}: {records:?} {}",
                    item_of(daemon, release)
                        .map(|d| d["status"].to_string())
                        .unwrap_or_default()
                );
                std::thread::sleep(Duration::from_millis(200));
            }
            done.then_some(())
        },
    );
}

fn greeting(cluster: &Cluster, release: &str) -> Value {
    cluster
        .core("apps", "configmaps", &format!("{release}-cm"))
        .map(|cm| cm["data"].clone())
        .unwrap_or_default()
}

#[test]
fn the_appliances_releases_are_helm_releases() {
    let cluster = Cluster::start("100ms");
    let Some(helm) = Helm::new(&cluster) else {
        return;
    };
    let daemon = Daemon::start();
    daemon.write("target.yaml", &cluster.target_manifest());
    let chart_dir = daemon.manifests.join("charts/demo");
    write_chart(&chart_dir);
    let chart = chart_dir.to_str().unwrap();

    // The appliance installs: helm sees revision 1.
    daemon.write("rel.yaml", &installation("rel", "hi", 0));
    deployed(&cluster, &daemon, "rel", 1);
    assert_eq!(
        greeting(&cluster, "rel"),
        json!({"greeting": "hi", "revision": "1"})
    );
    let list = helm.ok(&["list", "-n", "apps"]);
    assert!(
        list.contains("rel")
            && list.contains("deployed")
            && list.contains("demo-0.1.0")
            && list.contains("2.0"),
        "{list}"
    );
    let status = helm.ok(&["status", "rel", "-n", "apps"]);
    assert!(
        status.contains("REVISION: 1")
            && status.contains("STATUS: deployed")
            && status.contains("Thanks rel"),
        "{status}"
    );
    let values = helm.ok(&["get", "values", "rel", "-n", "apps", "-o", "json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&values).unwrap(),
        json!({"greeting": "hi"})
    );
    let manifest = helm.ok(&["get", "manifest", "rel", "-n", "apps"]);
    let template = helm.ok(&[
        "template",
        "rel",
        chart,
        "-n",
        "apps",
        "--set",
        "greeting=hi",
    ]);
    assert_eq!(manifest.trim(), template.trim());
    let di = item_of(&daemon, "rel").unwrap();
    let managed: Vec<&str> = di["status"]["providerStatus"]["managedResources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["resource"]["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(managed, ["rel-cm", "rel-web"]);

    // New values: revision 2.
    daemon.write("rel.yaml", &installation("rel", "again", 1));
    deployed(&cluster, &daemon, "rel", 2);
    let history = helm.ok(&["history", "rel", "-n", "apps"]);
    assert!(
        history.contains("superseded")
            && history.contains("Install complete")
            && history.contains("Upgrade complete"),
        "{history}"
    );

    // The user rolls back (revision 3); the next reconcile converges as revision 4.
    helm.ok(&["rollback", "rel", "1", "-n", "apps"]);
    assert_eq!(greeting(&cluster, "rel")["greeting"], "hi");
    assert_eq!(
        records(&cluster, "rel").last(),
        Some(&(3, "deployed".to_string()))
    );
    daemon.write("rel.yaml", &installation("rel", "again", 2));
    deployed(&cluster, &daemon, "rel", 4);
    assert_eq!(
        greeting(&cluster, "rel"),
        json!({"greeting": "again", "revision": "4"})
    );
    assert_eq!(records(&cluster, "rel").len(), 4);

    // A release made by `helm install` is taken over as its next revision.
    helm.ok(&[
        "install",
        "mine",
        chart,
        "-n",
        "apps",
        "--set",
        "greeting=from-helm",
    ]);
    daemon.write("mine.yaml", &installation("mine", "from-appliance", 0));
    deployed(&cluster, &daemon, "mine", 2);
    assert_eq!(
        records(&cluster, "mine"),
        [(1, "superseded".to_string()), (2, "deployed".to_string())]
    );
    assert_eq!(greeting(&cluster, "mine")["greeting"], "from-appliance");

    // Deleting the installations uninstalls: no objects, no records.
    std::fs::remove_file(daemon.manifests.join("rel.yaml")).unwrap();
    std::fs::remove_file(daemon.manifests.join("mine.yaml")).unwrap();
    eventually(
        Duration::from_secs(60),
        "the releases to be uninstalled",
        || {
            (records(&cluster, "rel").is_empty() && records(&cluster, "mine").is_empty())
                .then_some(())
        },
    );
    assert!(cluster.core("apps", "configmaps", "rel-cm").is_none());
    assert!(
        cluster
            .grouped("apps/v1", "apps", "deployments", "mine-web")
            .is_none()
    );
    assert!(!helm.ok(&["list", "-n", "apps", "-a"]).contains("rel"));
    let logs = daemon.logs();
    assert!(!logs.contains("panicked"), "{logs}");
}

/// Adds hook Jobs to the chart: post-install `<release>-post-in` (hook-succeeded) and
/// pre-upgrade `<release>-pre-up`, which fails when the greeting is `bad`.
fn write_hooks(dir: &Path) {
    std::fs::write(
        dir.join("templates/hooks.yaml"),
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-post-in\n  annotations:\n    helm.sh/hook: post-install\n    helm.sh/hook-delete-policy: hook-succeeded\n    kube-test-server/delay-ms: \"200\"\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox}]\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-pre-up\n  annotations:\n    helm.sh/hook: pre-upgrade\n    kube-test-server/outcome: {{ if eq .Values.greeting \"bad\" }}Fail{{ else }}Complete{{ end }}\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox}]\n",
    )
    .unwrap();
}

#[test]
fn hook_jobs_run_through_the_daemon_and_a_failing_one_is_the_items_error() {
    let cluster = Cluster::start("100ms");
    let Some(helm) = Helm::new(&cluster) else {
        return;
    };
    let daemon = Daemon::start();
    daemon.write("target.yaml", &cluster.target_manifest());
    let chart_dir = daemon.manifests.join("charts/demo");
    write_chart(&chart_dir);
    write_hooks(&chart_dir);

    daemon.write("rel.yaml", &installation("rel", "hi", 0));
    deployed(&cluster, &daemon, "rel", 1);
    assert!(
        cluster
            .grouped("batch/v1", "apps", "jobs", "rel-post-in")
            .is_none(),
        "the post-install Job ran and was deleted (hook-succeeded)"
    );
    let hooks = helm.ok(&["get", "hooks", "rel", "-n", "apps"]);
    assert!(
        hooks.contains("name: rel-post-in") && hooks.contains("name: rel-pre-up"),
        "{hooks}"
    );

    // A failing pre-upgrade Job: the item's lastError names the hook, the Job and the reason;
    // each attempt leaves one failed revision (the daemon retries within the item's timeout,
    // as Landscaper does; Helm's history limit bounds them), revision 1 stays deployed and
    // the objects stay at revision 1.
    daemon.write("rel.yaml", &installation("rel", "bad", 1));
    let message = eventually(Duration::from_secs(60), "the item's hook error", || {
        let item = item_of(&daemon, "rel")?;
        let message = item["status"]["lastError"]["message"].as_str()?.to_string();
        if message.contains("pre-upgrade hooks failed") {
            return Some(message);
        }
        std::thread::sleep(Duration::from_millis(200));
        None
    });
    for part in [
        "hook pre-upgrade demo/templates/hooks.yaml failed",
        "Job apps/rel-pre-up failed",
        "BackoffLimitExceeded",
    ] {
        assert!(message.contains(part), "{part}: {message}");
    }
    let history = records(&cluster, "rel");
    assert_eq!(history[0], (1, "deployed".to_string()), "{history:?}");
    assert!(
        history.len() >= 2
            && history[1..history.len() - 1]
                .iter()
                .all(|(_, s)| s == "failed")
            // The last one may be a retry in flight.
            && matches!(
                history.last().map(|(_, s)| s.as_str()),
                Some("failed" | "pending-upgrade")
            ),
        "{history:?}"
    );
    let revisions: Vec<u32> = history.iter().map(|(r, _)| *r).collect();
    let mut unique = revisions.clone();
    unique.dedup();
    assert_eq!(revisions, unique, "no duplicate revisions");
    assert!(history.len() <= 10, "Helm's history limit: {history:?}");
    assert_eq!(greeting(&cluster, "rel")["greeting"], "hi");

    // The values are fixed while the failing job retries. As in Landscaper, the installation
    // starts no new job until the running one has ended (`isCreateNewJobID`: the reconcile
    // annotation waits): the item keeps its job and its error, nothing new is deployed.
    let failing_job = item_of(&daemon, "rel").unwrap()["status"]["jobID"].clone();
    daemon.write("rel.yaml", &installation("rel", "fixed", 2));
    std::thread::sleep(Duration::from_secs(6));
    let item = item_of(&daemon, "rel").unwrap();
    assert_eq!(item["status"]["jobID"], failing_job, "{item}");
    // Not final (Landscaper shows `Progressing` here; the appliance keeps the phase the job
    // started with, `Init`, while the deployer call fails).
    assert!(
        matches!(
            item["status"]["phase"].as_str(),
            Some("Init" | "Progressing")
        ),
        "{item}"
    );
    assert_eq!(greeting(&cluster, "rel")["greeting"], "hi");
    let inst = daemon
        .get_json("/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/installations/rel")
        .unwrap();
    assert_eq!(
        inst["metadata"]["annotations"]["landscaper.gardener.cloud/operation"], "reconcile",
        "{inst}"
    );

    // The user interrupts the failing job (or waits for the item's progressing timeout): the
    // item fails with InterruptOperation and the next reconcile deploys the fixed values on
    // top of the failed revisions, with the next revision number.
    let token_file = daemon.data.join("api-token");
    let out = daemon.cli(&[
        "interrupt",
        "rel",
        "-n",
        "e2e",
        "--token-file",
        token_file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    eventually(
        Duration::from_secs(60),
        "the failing job interrupted",
        || {
            let item = item_of(&daemon, "rel")?;
            (item["status"]["phase"] == "Failed"
                && item["status"]["lastError"]["reason"] == "InterruptOperation")
                .then_some(())
        },
    );
    // An attempt cut short by the interrupt may have left its record pending: Landscaper's
    // unblockPendingHelmRelease removes it, so its number is the next one again.
    let next = records(&cluster, "rel")
        .iter()
        .filter(|(_, s)| !s.starts_with("pending"))
        .map(|(v, _)| v + 1)
        .max()
        .unwrap();
    daemon.write("rel.yaml", &installation("rel", "fixed", 3));
    deployed(&cluster, &daemon, "rel", next);
    assert_eq!(
        greeting(&cluster, "rel"),
        json!({"greeting": "fixed", "revision": next.to_string()})
    );
    let history = records(&cluster, "rel");
    assert_eq!(history[0], (1, "superseded".to_string()), "{history:?}");
    assert!(history.len() <= 10, "{history:?}");
    assert!(
        history[1..history.len() - 1]
            .iter()
            .all(|(_, s)| s == "failed"),
        "{history:?}"
    );
    let status = helm.ok(&["status", "rel", "-n", "apps"]);
    assert!(
        status.contains(&format!("REVISION: {next}")) && status.contains("STATUS: deployed"),
        "{status}"
    );

    let logs = daemon.logs();
    assert!(!logs.contains("panicked"), "{logs}");
}
