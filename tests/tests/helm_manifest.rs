//! End-to-end: the helm deployer in manifest-only mode (`helmDeployment: false`) against the
//! Kubernetes test server. A chart written by the test is deployed (a) from the manifests
//! folder (`local://charts/demo`) and (b) from `chart.archive.raw`; the objects are checked on
//! the server, the values are changed, and the installations are deleted.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use base64::Engine as _;
use landscaper_e2e::cluster::Cluster;
use landscaper_e2e::{Daemon, eventually};
use landscaper_sources::testing::{DockerRegistry, FileServer};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const DI_PATH: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/deployitems";
const HELM_LABEL: &str = "helm.deployer.landscaper.gardener.cloud/deployitem";

/// The chart: a ConfigMap `<release>-cm` without a namespace (the release namespace is the
/// default) holding `.Values.greeting`, and a CRD from `crds/`.
fn write_chart(dir: &Path) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::create_dir_all(dir.join("crds")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(dir.join("values.yaml"), "greeting: hello\n").unwrap();
    std::fs::write(
        dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n  labels:\n    chart: {{ .Chart.Name }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  namespace: {{ .Release.Namespace }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("crds/widgets.yaml"),
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.demo.example.com
spec:
  group: demo.example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
",
    )
    .unwrap();
}

/// An installation with one helm deploy item (`helmDeployment: false`) for `chart`.
fn installation(name: &str, chart: &str, greeting: &str) -> String {
    format!(
        r#"apiVersion: landscaper.gardener.cloud/v1alpha1
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
                      namespace: apps-{name}
                      createNamespace: true
                      helmDeployment: false
                      chart: {chart}
                      values:
                        greeting: {greeting}
"#
    )
}

fn items(daemon: &Daemon) -> Vec<Value> {
    daemon
        .get_json(DI_PATH)
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
}

/// The deploy item of installation `inst`.
fn item_of(daemon: &Daemon, inst: &str) -> Option<Value> {
    items(daemon).into_iter().find(|d| {
        d["metadata"]["labels"]["landscaper.gardener.cloud/installation-name"].as_str()
            == Some(inst)
            || d["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|o| {
                    o.iter()
                        .any(|r| r["name"].as_str().is_some_and(|n| n.starts_with(inst)))
                })
    })
}

/// Waits until the ConfigMap `<inst>-cm` in `apps-<inst>` has `greeting`; returns it.
fn config_map_with(cluster: &Cluster, daemon: &Daemon, inst: &str, greeting: &str) -> Value {
    let namespace = format!("apps-{inst}");
    let name = format!("{inst}-cm");
    eventually(
        Duration::from_secs(60),
        &format!("ConfigMap {namespace}/{name} with greeting {greeting}"),
        || {
            let cm = cluster.core(&namespace, "configmaps", &name);
            if cm.is_none()
                && let Some(di) = item_of(daemon, inst)
            {
                eprintln!("{inst}: {}", di["status"]);
            }
            cm.filter(|cm| cm["data"]["greeting"] == greeting)
        },
    )
}

fn chart_archive(chart_dir: &Path) -> Option<String> {
    let parent = chart_dir.parent()?;
    let out = parent.join("demo-0.1.0.tgz");
    let status = Command::new("tar")
        .arg("czf")
        .arg(&out)
        .arg("-C")
        .arg(parent)
        .arg("demo")
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    let bytes = std::fs::read(&out).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(bytes))
}

#[test]
fn a_chart_is_deployed_updated_and_deleted_without_helm_releases() {
    let cluster = Cluster::start("100ms");
    let daemon = Daemon::start();
    daemon.write("target.yaml", &cluster.target_manifest());
    write_chart(&daemon.manifests.join("charts/demo"));

    // (a) from the manifests folder.
    daemon.write(
        "local.yaml",
        &installation("local", "{ref: \"local://charts/demo\"}", "hi"),
    );
    let cm = config_map_with(&cluster, &daemon, "local", "hi");
    assert_eq!(cm["data"]["namespace"], "apps-local", "{cm:#}");
    assert_eq!(cm["metadata"]["labels"]["chart"], "demo");
    // `.Capabilities.KubeVersion` comes from the target's API server.
    let served = cluster.get("/version").expect("/version");
    assert_eq!(cm["data"]["kube"], served["gitVersion"], "{served}");
    let di = eventually(Duration::from_secs(30), "the helm item to succeed", || {
        item_of(&daemon, "local").filter(|d| d["status"]["phase"] == "Succeeded")
    });
    let item_name = di["metadata"]["name"].as_str().unwrap().to_string();
    assert_eq!(cm["metadata"]["labels"][HELM_LABEL], item_name.as_str());
    let status = &di["status"]["providerStatus"];
    assert_eq!(
        status["apiVersion"],
        "helm.deployer.landscaper.gardener.cloud/v1alpha1"
    );
    let managed: Vec<(String, String)> = status["managedResources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["resource"]["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                m["policy"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert!(
        managed.contains(&("Namespace".into(), "keep".into()))
            && managed.contains(&("ConfigMap".into(), "manage".into()))
            && managed.contains(&("CustomResourceDefinition".into(), "manage".into())),
        "{managed:?}"
    );
    assert!(cluster.get("/api/v1/namespaces/apps-local").is_some());
    assert!(
        cluster
            .get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.demo.example.com")
            .is_some(),
        "the chart's CRD is applied"
    );

    // Changed values reach the cluster.
    daemon.write(
        "local.yaml",
        &installation("local", "{ref: \"local://charts/demo\"}", "hi-again"),
    );
    config_map_with(&cluster, &daemon, "local", "hi-again");

    // (b) from chart.archive.raw.
    match chart_archive(&daemon.manifests.join("charts/demo")) {
        Some(raw) => {
            daemon.write(
                "raw.yaml",
                &installation(
                    "raw",
                    &format!("{{archive: {{raw: \"{raw}\"}}}}"),
                    "from-raw",
                ),
            );
            config_map_with(&cluster, &daemon, "raw", "from-raw");
            std::fs::remove_file(daemon.manifests.join("raw.yaml")).unwrap();
        }
        None => eprintln!("SKIP archive.raw case: tar not available"),
    }

    // Deleting the installation removes what the item applied; the namespace (keep) stays.
    std::fs::remove_file(daemon.manifests.join("local.yaml")).unwrap();
    eventually(
        Duration::from_secs(60),
        "the ConfigMap to be deleted",
        || {
            cluster
                .core("apps-local", "configmaps", "local-cm")
                .is_none()
                .then_some(())
        },
    );
    eventually(
        Duration::from_secs(60),
        "the raw ConfigMap to be deleted",
        || {
            cluster
                .core("apps-raw", "configmaps", "raw-cm")
                .is_none()
                .then_some(())
        },
    );
    eventually(
        Duration::from_secs(60),
        "the deploy items to be gone",
        || items(&daemon).is_empty().then_some(()),
    );
    assert!(cluster.get("/api/v1/namespaces/apps-local").is_some());
    let logs = daemon.logs();
    assert!(!logs.contains("panicked"), "{logs}");
    assert!(
        !logs.contains("charts/demo/"),
        "the chart folder is not read as manifests: {logs}"
    );
}

fn curl(args: &[&str]) -> String {
    let out = Command::new("curl")
        .args(["-sS", "--fail-with-body", "-D", "-"])
        .args(args)
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "curl {args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Uploads `data` as a blob of `repo` (monolithic upload); returns its digest.
fn push_blob(base: &str, repo: &str, data: &[u8], work: &Path) -> String {
    let hex: String = Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let digest = format!("sha256:{hex}");
    let headers = curl(&["-X", "POST", &format!("{base}/v2/{repo}/blobs/uploads/")]);
    let location = headers
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("location")
                .then(|| v.trim().to_string())
        })
        .expect("upload location");
    let location = if location.starts_with("http") {
        location
    } else {
        format!("{base}{location}")
    };
    let sep = if location.contains('?') { '&' } else { '?' };
    let file = work.join("blob");
    std::fs::write(&file, data).unwrap();
    curl(&[
        "-X",
        "PUT",
        "-H",
        "Content-Type: application/octet-stream",
        "--data-binary",
        &format!("@{}", file.display()),
        &format!("{location}{sep}digest={digest}"),
    ]);
    digest
}

/// Pushes a chart `.tgz` as Helm does (`helm push`: Helm's config and layer media types).
fn push_chart(port: u16, tgz: &[u8], work: &Path) {
    let base = format!("http://127.0.0.1:{port}");
    let config = br#"{"name":"demo","version":"0.1.0","apiVersion":"v2"}"#;
    let config_digest = push_blob(&base, "charts/demo", config, work);
    let layer_digest = push_blob(&base, "charts/demo", tgz, work);
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.cncf.helm.config.v1+json",
            "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
            "digest": layer_digest, "size": tgz.len()}],
    });
    let file = work.join("manifest.json");
    std::fs::write(&file, manifest.to_string()).unwrap();
    curl(&[
        "-X",
        "PUT",
        "-H",
        "Content-Type: application/vnd.oci.image.manifest.v1+json",
        "--data-binary",
        &format!("@{}", file.display()),
        &format!("{base}/v2/charts/demo/manifests/0.1.0"),
    ]);
}

#[test]
fn a_chart_from_an_oci_registry_is_deployed_and_served_from_the_cache_when_it_is_gone() {
    if !DockerRegistry::available() {
        println!(
            "SKIP: {} not found (apt-get install docker-registry)",
            DockerRegistry::BINARY
        );
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let chart_dir = work.path().join("demo");
    write_chart(&chart_dir);
    let Some(raw) = chart_archive(&chart_dir) else {
        println!("SKIP: tar not available");
        return;
    };
    let tgz = base64::engine::general_purpose::STANDARD
        .decode(raw)
        .unwrap();
    let registry = DockerRegistry::start(&work.path().join("storage"), work.path(), "")
        .expect("docker-registry starts");
    push_chart(registry.port, &tgz, work.path());

    let cluster = Cluster::start("100ms");
    let daemon = Daemon::start();
    daemon.write("target.yaml", &cluster.target_manifest());
    let chart = format!("{{ref: \"127.0.0.1:{}/charts/demo:0.1.0\"}}", registry.port);
    daemon.write("oci.yaml", &installation("oci", &chart, "from-oci"));
    config_map_with(&cluster, &daemon, "oci", "from-oci");

    // The registry goes away: the chart comes from the cache for the next values.
    drop(registry);
    daemon.write("oci.yaml", &installation("oci", &chart, "cached"));
    config_map_with(&cluster, &daemon, "oci", "cached");
}

/// A chart that asks the cluster: `.Capabilities.APIVersions` (discovery) and `lookup` of a
/// ConfigMap the test created before, of one that does not exist, and of the list in its
/// namespace.
fn write_probe_chart(dir: &Path) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: probe\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("templates/cm.yaml"),
        r#"{{- $src := lookup "v1" "ConfigMap" "pre" "source" -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  greeting: {{ .Values.greeting | quote }}
  deployment: {{ .Capabilities.APIVersions.Has "apps/v1/Deployment" | quote }}
  apps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}
  gadget: {{ .Capabilities.APIVersions.Has "apps/v1/Gadget" | quote }}
  fromLookup: {{ dig "data" "secretValue" "none" $src | quote }}
  lookedUpUid: {{ dig "metadata" "uid" "" $src | quote }}
  missing: {{ lookup "v1" "ConfigMap" "pre" "absent" | len | quote }}
  listed: {{ with lookup "v1" "ConfigMap" "pre" "" }}{{ len .items | quote }}{{ end }}
"#,
    )
    .unwrap();
}

#[test]
fn capabilities_and_lookup_come_from_the_target() {
    let cluster = Cluster::start("100ms");
    cluster.create_namespace("pre");
    let source = cluster.create(
        "/api/v1/namespaces/pre/configmaps",
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "source", "namespace": "pre"},
            "data": {"secretValue": "from-the-cluster"}}),
    );
    let daemon = Daemon::start();
    daemon.write("target.yaml", &cluster.target_manifest());
    write_probe_chart(&daemon.manifests.join("charts/probe"));
    daemon.write(
        "probe.yaml",
        &installation("probe", "{ref: \"local://charts/probe\"}", "hi"),
    );
    let cm = config_map_with(&cluster, &daemon, "probe", "hi");
    let data = &cm["data"];
    assert_eq!(data["deployment"], "true", "{cm:#}");
    assert_eq!(data["apps"], "true", "{cm:#}");
    assert_eq!(data["gadget"], "false", "{cm:#}");
    assert_eq!(data["fromLookup"], "from-the-cluster", "{cm:#}");
    assert_eq!(data["lookedUpUid"], source["metadata"]["uid"], "{cm:#}");
    assert_eq!(data["missing"], "0", "{cm:#}");
    assert_eq!(data["listed"], "1", "{cm:#}");

    // Offline (`render chart`), lookup is empty and only Helm's default group versions are
    // known, as with `helm template`.
    let out = daemon.cli(&[
        "render",
        "chart",
        daemon.manifests.join("charts/probe").to_str().unwrap(),
        "--release",
        "probe",
        "--namespace",
        "apps-probe",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("deployment: \"false\""), "{stdout}");
    assert!(stdout.contains("apps: \"true\""), "{stdout}");
    assert!(stdout.contains("fromLookup: \"none\""), "{stdout}");
}

/// `installation` with `spec.context: context`.
fn installation_in_context(name: &str, context: &str, chart: &str, greeting: &str) -> String {
    installation(name, chart, greeting).replacen(
        "\nspec:\n",
        &format!("\nspec:\n  context: {context}\n"),
        1,
    )
}

/// A Context whose `helmChartRepoCredentials` has one entry for `url`: `auth` is
/// `authHeader: ...` or `secretRef: {...}`.
fn repo_context(name: &str, url: &str, auth: &str) -> String {
    format!(
        "apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Context
metadata: {{name: {name}, namespace: e2e}}
configurations:
  helmChartRepoCredentials:
    auths:
      - url: {url}
        {auth}
"
    )
}

#[test]
fn a_chart_from_a_helm_repository_with_basic_auth_is_deployed() {
    let work = tempfile::tempdir().unwrap();
    let chart_dir = work.path().join("demo");
    write_chart(&chart_dir);
    let Some(raw) = chart_archive(&chart_dir) else {
        println!("SKIP: tar not available");
        return;
    };
    let repo = work.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(
        repo.join("demo-0.1.0.tgz"),
        base64::engine::general_purpose::STANDARD
            .decode(raw)
            .unwrap(),
    )
    .unwrap();
    // 0.2.0, fetched only by the item with the Secret (not from the cache).
    let v2_dir = work.path().join("v2/demo");
    write_chart(&v2_dir);
    let chart_yaml = v2_dir.join("Chart.yaml");
    let text = std::fs::read_to_string(&chart_yaml).unwrap();
    std::fs::write(&chart_yaml, text.replace("0.1.0", "0.2.0")).unwrap();
    let raw2 = chart_archive(&v2_dir).expect("tar");
    std::fs::write(
        repo.join("demo-0.2.0.tgz"),
        base64::engine::general_purpose::STANDARD
            .decode(raw2)
            .unwrap(),
    )
    .unwrap();
    std::fs::write(
        repo.join("index.yaml"),
        "apiVersion: v1\nentries:\n  demo:\n  - apiVersion: v2\n    name: demo\n    version: 0.2.0\n    urls:\n    - demo-0.2.0.tgz\n  - apiVersion: v2\n    name: demo\n    version: 0.1.0\n    urls:\n    - demo-0.1.0.tgz\n",
    )
    .unwrap();
    let header = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("chartuser:chartpass")
    );
    let mut server = FileServer::start(repo, Some(header.clone())).expect("repository serves");
    let url = server.url();
    let chart_of = |version: &str| {
        format!(
            "{{helmChartRepo: {{helmChartRepoUrl: \"{url}\", helmChartName: demo, helmChartVersion: {version}}}}}"
        )
    };
    let chart = chart_of("0.1.0");

    let cluster = Cluster::start("100ms");
    let daemon = Daemon::start();
    daemon.write("target.yaml", &cluster.target_manifest());
    // Without credentials the repository refuses: a retried error naming the chart and cause.
    daemon.write("anon.yaml", &installation("anon", &chart, "never"));
    let anon = eventually(
        Duration::from_secs(60),
        "the anonymous item's error",
        || item_of(&daemon, "anon").filter(|d| !d["status"]["lastError"].is_null()),
    );
    let error = &anon["status"]["lastError"];
    let message = error["message"].as_str().unwrap_or_default();
    assert_eq!(error["reason"], "GetHelmChart", "{error}");
    assert!(
        message.contains(&format!("chart demo 0.1.0 from {url}: ")) && message.contains("401"),
        "{error}"
    );
    assert!(
        !has_code(&anon, "ERR_CONFIGURATION_PROBLEM"),
        "retried: {error}"
    );
    assert!(cluster.core("apps-anon", "configmaps", "anon-cm").is_none());
    std::fs::remove_file(daemon.manifests.join("anon.yaml")).unwrap();

    daemon.write(
        "contexts.yaml",
        &format!(
            "{}---\n{}---\napiVersion: v1\nkind: Secret\nmetadata: {{name: repo-auth, namespace: e2e}}\ntype: Opaque\nstringData:\n  header: \"{header}\"\n",
            repo_context("by-header", &url, &format!("authHeader: \"{header}\"")),
            repo_context("by-secret", &url, "secretRef: {name: repo-auth, key: header}"),
        ),
    );
    // Credentials from authHeader and from a Secret.
    daemon.write(
        "header.yaml",
        &installation_in_context("header", "by-header", &chart, "via-header"),
    );
    daemon.write(
        "secret.yaml",
        &installation_in_context("secret", "by-secret", &chart_of("0.2.0"), "via-secret"),
    );
    let cm = config_map_with(&cluster, &daemon, "header", "via-header");
    assert_eq!(cm["metadata"]["labels"]["chart"], "demo");
    config_map_with(&cluster, &daemon, "secret", "via-secret");

    // The repository goes away: the cached chart serves new values.
    server.stop();
    daemon.write(
        "header.yaml",
        &installation_in_context("header", "by-header", &chart, "cached"),
    );
    config_map_with(&cluster, &daemon, "header", "cached");
}

/// Writes a chart `charts/NAME` into the manifests folder with `template` as its only
/// template and `schema` (if any) as values.schema.json.
fn write_small_chart(manifests: &Path, name: &str, template: &str, schema: Option<&str>) {
    let dir = manifests.join("charts").join(name);
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
    )
    .unwrap();
    std::fs::write(dir.join("templates/cm.yaml"), template).unwrap();
    if let Some(schema) = schema {
        std::fs::write(dir.join("values.schema.json"), schema).unwrap();
    }
}

fn has_code(item: &Value, code: &str) -> bool {
    item["status"]["lastError"]["codes"]
        .as_array()
        .is_some_and(|c| c.iter().any(|x| x == code))
}

#[test]
fn bad_charts_fail_with_clear_errors_and_disturb_nothing_else() {
    let cluster = Cluster::start("100ms");
    let daemon = Daemon::start();
    daemon.write("target.yaml", &cluster.target_manifest());
    write_chart(&daemon.manifests.join("charts/demo"));
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  greeting: {{ .Values.greeting | quote }}\n";
    write_small_chart(
        &daemon.manifests,
        "schema",
        cm,
        Some(
            r#"{"type": "object", "properties": {"greeting": {"type": "string", "maxLength": 5}}}"#,
        ),
    );
    write_small_chart(
        &daemon.manifests,
        "failing",
        &format!("{{{{ required \"setting.size is required\" .Values.setting }}}}\n{cm}"),
        None,
    );
    let cases = [
        ("schema", "{ref: \"local://charts/schema\"}".to_string()),
        ("failing", "{ref: \"local://charts/failing\"}".to_string()),
        ("missing", "{ref: \"local://charts/none\"}".to_string()),
        (
            "corrupt",
            "{archive: {raw: \"bm90IGEgY2hhcnQgYXQgYWxs\"}}".to_string(),
        ),
        (
            "unreachable",
            "{helmChartRepo: {helmChartRepoUrl: \"http://127.0.0.1:9\", helmChartName: demo, helmChartVersion: 0.1.0}}".to_string(),
        ),
    ];
    for (name, chart) in &cases {
        daemon.write(
            &format!("{name}.yaml"),
            &installation(name, chart, "too-long-for-the-schema"),
        );
    }
    daemon.write(
        "good.yaml",
        &installation("good", "{ref: \"local://charts/demo\"}", "fine"),
    );
    config_map_with(&cluster, &daemon, "good", "fine");
    eventually(Duration::from_secs(30), "the good item to succeed", || {
        item_of(&daemon, "good").filter(|d| d["status"]["phase"] == "Succeeded")
    });

    // (name, what the message names, its cause, final?)
    let expected = [
        (
            "schema",
            "local://charts/schema",
            "values don't meet the specifications of the schema(s) in the following chart(s):\nschema:\n- at '/greeting'",
            true,
        ),
        (
            "failing",
            "local://charts/failing",
            "execution error at (failing/templates/cm.yaml:1:3): setting.size is required",
            true,
        ),
        (
            "missing",
            "local://charts/none",
            "no chart charts/none in the manifests folder",
            false,
        ),
        ("corrupt", "archive.raw", "not a valid chart", false),
        (
            "unreachable",
            "demo 0.1.0 from http://127.0.0.1:9",
            "127.0.0.1:9",
            false,
        ),
    ];
    for (name, chart, cause, fatal) in expected {
        let di = eventually(
            Duration::from_secs(60),
            &format!("the {name} item's error"),
            || {
                item_of(&daemon, name).filter(|d| {
                    !d["status"]["lastError"].is_null()
                        && (!fatal || d["status"]["phase"] == "Failed")
                })
            },
        );
        let error = &di["status"]["lastError"];
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("chart {chart}: ")) && message.contains(cause),
            "{name}: {error:#}"
        );
        assert_eq!(
            has_code(&di, "ERR_CONFIGURATION_PROBLEM"),
            fatal,
            "{name}: {error:#}"
        );
        if !fatal {
            assert_ne!(di["status"]["phase"], "Succeeded", "{name}");
            assert_ne!(di["status"]["phase"], "Failed", "{name}: retried");
        }
        assert!(
            cluster
                .core(&format!("apps-{name}"), "configmaps", &format!("{name}-cm"))
                .is_none(),
            "{name}: nothing applied"
        );
    }
    // The good item was not disturbed.
    let good = item_of(&daemon, "good").unwrap();
    assert_eq!(good["status"]["phase"], "Succeeded", "{good:#}");
    let logs = daemon.logs();
    assert!(!logs.contains("panicked"), "{logs}");
}
