//! End-to-end (issue 18): the guided tour's `components/helm-chart` chapter through the real
//! daemon against the Kubernetes test server, with its Installation YAML unchanged except the
//! registry base URL, the namespace and the kubeconfig:
//! 1. from a real registry (Debian's `docker-registry` on loopback; the chart pushed with the
//!    real `helm push`, the component version with the project's own client);
//! 2. with the registry stopped and the component version only as a component archive in the
//!    manifests folder (the chart from the data folder's cache of run 1);
//! 3. bad input: a missing version and a missing blueprint resource give a `lastError` naming
//!    them, and the good installation is unaffected.
//!
//! Needs `/usr/bin/docker-registry`, `helm` (`$HELM` or PATH) and the OCM acceptance data;
//! without them the test prints a SKIP line and passes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use landscaper_components::registry::push_component_version;
use landscaper_components::{Components, ComponentsConfig, RepositoryContext};
use landscaper_e2e::cluster::Cluster;
use landscaper_e2e::{Daemon, eventually};
use landscaper_sources::http::HyperTransport;
use landscaper_sources::testing::DockerRegistry;
use serde_json::Value;

const NAMESPACE: &str = "example";
const INST_PATH: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/example/installations";
const BLUEPRINT_BLOB: &str =
    "sha256.e0a234552446487b1fe62a2d29ef0edfccaccc6c73b752e8fc54bb9314e0953f";
const PUBLISHED_CHART: &str = "europe-docker.pkg.dev/sap-gcp-cp-k8s-stable-hub/landscaper-examples/examples/charts/guided-tour/echo-server:1.0.0";

fn data() -> Option<PathBuf> {
    let dir = std::env::var_os("OCM_ACCEPTANCE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/acceptance/ocm"));
    dir.join("guided-tour/components/helm-chart")
        .is_dir()
        .then_some(dir.join("guided-tour/components/helm-chart"))
}

fn helm() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HELM") {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("helm"))
            .find(|p| p.is_file())
    })
}

fn run(cmd: &mut Command) {
    let output = cmd.output().expect("runs");
    assert!(
        output.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Packages the tour's chart and pushes it with the real helm; its reference.
fn push_chart(helm: &Path, chapter: &Path, work: &Path, port: u16) -> String {
    let home = work.join("helm");
    let helm_cmd = |args: &[&str]| {
        let mut c = Command::new(helm);
        c.args(args)
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_DATA_HOME", home.join("data"))
            .env("HELM_REGISTRY_CONFIG", home.join("registry.json"));
        c
    };
    let packages = work.join("packages");
    let chart_src = chapter.join("chart/echo-server");
    run(&mut helm_cmd(&[
        "package",
        chart_src.to_str().unwrap(),
        "-d",
        packages.to_str().unwrap(),
    ]));
    let tgz = packages.join("echo-server-1.0.0.tgz");
    run(&mut helm_cmd(&[
        "push",
        tgz.to_str().unwrap(),
        &format!("oci://127.0.0.1:{port}/charts/guided-tour"),
        "--plain-http",
    ]));
    format!("127.0.0.1:{port}/charts/guided-tour/echo-server:1.0.0")
}

/// The tour's published descriptor with the chart reference pointing at `chart_ref`.
fn descriptor(chapter: &Path, chart_ref: &str) -> String {
    std::fs::read_to_string(chapter.join("component/component-descriptor.yaml"))
        .unwrap()
        .replace(PUBLISHED_CHART, chart_ref)
}

/// Pushes the component version (descriptor + blueprint blob as layer) to the registry.
fn push_component(chapter: &Path, work: &Path, port: u16, chart_ref: &str) {
    let blob = std::fs::read(chapter.join("component/blobs").join(BLUEPRINT_BLOB)).unwrap();
    // In a registry the local blob is a layer named by its digest.
    let text =
        descriptor(chapter, chart_ref).replace(BLUEPRINT_BLOB, &BLUEPRINT_BLOB.replace('.', ":"));
    let ctx = RepositoryContext::parse(
        &serde_json::json!({"type": "OCIRegistry", "baseUrl": format!("127.0.0.1:{port}")}),
    )
    .unwrap();
    let mut config = ComponentsConfig::new(Arc::new(HyperTransport::new()));
    config.cache = Some(Arc::new(
        landscaper_sources::ChartCache::open(work.join("push-cache"), 64 << 20).unwrap(),
    ));
    let pusher = Components::new(config);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(push_component_version(
            &pusher,
            &ctx,
            text.as_bytes(),
            &[(
                "application/vnd.gardener.landscaper.blueprint.v1+tar+gzip".into(),
                blob,
            )],
        ))
        .expect("component version pushed");
}

/// The chapter's `installation/*.tpl` with only namespace, registry base URL and kubeconfig
/// substituted, written into the manifests folder.
fn write_tour(daemon: &Daemon, cluster: &Cluster, chapter: &Path, base_url: &str) {
    for name in ["target", "context", "installation"] {
        let tpl =
            std::fs::read_to_string(chapter.join(format!("installation/{name}.yaml.tpl"))).unwrap();
        let mut tpl = tpl;
        if !tpl.ends_with('\n') {
            tpl.push('\n');
        }
        let text = cluster
            .render_template(&tpl)
            .replace("${namespace}", NAMESPACE)
            .replace("${repoBaseUrl}", base_url);
        daemon.write(&format!("tour-{name}.yaml"), &text);
    }
}

fn installation(daemon: &Daemon, name: &str) -> Option<Value> {
    daemon.get_json(&format!("{INST_PATH}/{name}"))
}

fn phase(daemon: &Daemon, name: &str) -> String {
    installation(daemon, name)
        .and_then(|i| i["status"]["phase"].as_str().map(str::to_string))
        .unwrap_or_default()
}

fn wait_succeeded(daemon: &Daemon, name: &str) {
    eventually(
        Duration::from_secs(90),
        &format!("{name} Succeeded"),
        || {
            let p = phase(daemon, name);
            assert!(
                p != "Failed",
                "{name} failed: {}\n{}",
                installation(daemon, name).unwrap_or_default()["status"],
                daemon.logs()
            );
            (p == "Succeeded").then_some(())
        },
    );
}

fn last_error(daemon: &Daemon, name: &str) -> String {
    eventually(
        Duration::from_secs(60),
        &format!("{name} lastError"),
        || {
            installation(daemon, name).and_then(|i| {
                i["status"]["lastError"]["message"]
                    .as_str()
                    .filter(|m| !m.is_empty())
                    .map(str::to_string)
            })
        },
    )
}

fn echo_server_deployed(cluster: &Cluster, registry_port: u16) {
    let deployment = eventually(Duration::from_secs(30), "echo-server Deployment", || {
        cluster.grouped("apps/v1", "example", "deployments", "echo-server")
    });
    // `getResource .cd "name" "echo-server-image"` rendered the image into the values.
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "hashicorp/http-echo:0.2.3",
        "{deployment} (registry {registry_port})"
    );
}

#[test]
fn guided_tour_helm_chart_from_a_registry_then_air_gapped() {
    let Some(chapter) = data() else {
        println!("SKIP: OCM acceptance data not present");
        return;
    };
    if !DockerRegistry::available() {
        println!("SKIP: no {}", DockerRegistry::BINARY);
        return;
    }
    let Some(helm) = helm() else {
        println!("SKIP: no helm");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let mut registry =
        DockerRegistry::start(&work.path().join("storage"), work.path(), "").expect("registry");
    let port = registry.port;
    let chart_ref = push_chart(&helm, &chapter, work.path(), port);
    push_component(&chapter, work.path(), port, &chart_ref);

    // 1. From the registry.
    let cluster = Cluster::start("100ms");
    let manifests = work.path().join("manifests");
    let data = work.path().join("data");
    std::fs::create_dir_all(&manifests).unwrap();
    let mut daemon = Daemon::start_on(&manifests, &data);
    write_tour(&daemon, &cluster, &chapter, &format!("127.0.0.1:{port}"));
    wait_succeeded(&daemon, "echo-server");
    echo_server_deployed(&cluster, port);

    // 3. Bad input beside it: a missing version, a missing blueprint resource.
    let bad = |name: &str, version: &str, resource: &str| {
        format!(
            "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Installation\nmetadata:\n  name: {name}\n  namespace: {NAMESPACE}\n  annotations:\n    landscaper.gardener.cloud/operation: reconcile\nspec:\n  context: landscaper-examples\n  componentDescriptor:\n    ref:\n      componentName: github.com/gardener/landscaper-examples/guided-tour/helm-chart\n      version: {version}\n  blueprint:\n    ref:\n      resourceName: {resource}\n  imports:\n    targets:\n      - name: cluster\n        target: my-cluster\n"
        )
    };
    daemon.write(
        "bad-version.yaml",
        &bad("bad-version", "9.9.9", "blueprint"),
    );
    daemon.write(
        "bad-resource.yaml",
        &bad("bad-resource", "1.0.0", "no-such-blueprint"),
    );
    let e = last_error(&daemon, "bad-version");
    assert!(
        e.contains("github.com/gardener/landscaper-examples/guided-tour/helm-chart:9.9.9"),
        "{e}"
    );
    let e = last_error(&daemon, "bad-resource");
    assert!(
        e.contains("guided-tour/helm-chart:1.0.0") && e.contains("no-such-blueprint"),
        "{e}"
    );
    assert_eq!(phase(&daemon, "echo-server"), "Succeeded");
    let first_job =
        installation(&daemon, "echo-server").unwrap()["status"]["jobIDFinished"].clone();
    daemon.terminate();

    // 2a. Registry stopped, daemon restarted on the same data folder: the installation is
    // reconciled again from the shared cache alone.
    registry.stop();
    std::fs::remove_file(manifests.join("bad-version.yaml")).unwrap();
    std::fs::remove_file(manifests.join("bad-resource.yaml")).unwrap();
    let mut daemon = Daemon::start_on(&manifests, &data);
    // A changed file re-applies the reconcile annotation: a new job, resolved afresh.
    let text = std::fs::read_to_string(manifests.join("tour-installation.yaml")).unwrap();
    daemon.write("tour-installation.yaml", &format!("# again\n{text}"));
    new_job_succeeded(&daemon, &first_job);
    daemon.terminate();

    // 2b. Air-gapped host: a fresh data folder (empty cache), no registry, the component
    // version only as a component archive in the manifests folder, its chart as a local blob
    // (as `ocm transfer --copy-resources` leaves it).
    let manifests = work.path().join("manifests-airgapped");
    let data = work.path().join("data-airgapped");
    let archive = manifests.join("tour-component");
    std::fs::create_dir_all(archive.join("blobs")).unwrap();
    let chart = std::fs::read(work.path().join("packages/echo-server-1.0.0.tgz")).unwrap();
    let chart_blob = format!("sha256.{}", hex_sha256(&chart));
    std::fs::write(archive.join("blobs").join(&chart_blob), &chart).unwrap();
    std::fs::write(
        archive.join("component-descriptor.yaml"),
        descriptor(&chapter, &chart_ref).replace(
            &format!("imageReference: {chart_ref}\n      type: ociArtifact"),
            &format!("localReference: {chart_blob}\n      mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip\n      type: localBlob"),
        ),
    )
    .unwrap();
    std::fs::copy(
        chapter.join("component/blobs").join(BLUEPRINT_BLOB),
        archive.join("blobs").join(BLUEPRINT_BLOB),
    )
    .unwrap();
    let daemon = Daemon::start_on(&manifests, &data);
    write_tour(&daemon, &cluster, &chapter, &format!("127.0.0.1:{port}"));
    wait_succeeded(&daemon, "echo-server");
    echo_server_deployed(&cluster, port);

    // `render --offline` resolves the same way: archives of the folder, no registry.
    let out = daemon.cli(&[
        "render",
        manifests.join("tour-installation.yaml").to_str().unwrap(),
        "--imports-from",
        manifests.to_str().unwrap(),
        "--offline",
        "-o",
        "json",
        "--data",
        work.path().join("render-data").to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&stdout).expect("render prints JSON");
    let config = &doc["deployItems"][0]["config"];
    assert_eq!(
        config["values"]["image"], "hashicorp/http-echo:0.2.3",
        "{doc}"
    );
    let key = config["chart"]["resourceRef"]
        .as_str()
        .expect("resourceRef");
    let key = landscaper_components::uri::parse_resource_key(key).expect("a resource key");
    assert_eq!(key.resource["name"], "echo-server-chart");
}

const ARCHIVES_PATH: &str = "/apis/appliance.landscaper-appliance.io/v1alpha1/transportarchives";

/// The stored `TransportArchive` objects by `spec.path`.
fn transport_archives(daemon: &Daemon) -> std::collections::BTreeMap<String, Value> {
    daemon
        .get_json(ARCHIVES_PATH)
        .and_then(|list| list["items"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .map(|o| {
            (
                o["spec"]["path"].as_str().unwrap_or_default().to_string(),
                o,
            )
        })
        .collect()
}

/// Transport archives in the manifests folder are `TransportArchive` objects: a CTF `.tgz`
/// is Ready with its component versions, a truncated `.tar` is Failed with the error, a
/// chart tarball is no archive at all; `get ta` lists them; an API delete is refused; removing
/// the file removes the object. Needs only the OCM acceptance data.
#[test]
fn transport_archives_in_the_folder_are_listed_with_their_component_versions() {
    let Some(ctf) = data()
        .map(|tour| tour.join("../../../ctf/ocm-0.20.0-compat-01"))
        .filter(|d| d.is_dir())
    else {
        eprintln!("SKIP: the OCM acceptance data is missing");
        return;
    };
    let daemon = Daemon::start();
    std::fs::create_dir_all(daemon.manifests.join("air")).unwrap();
    std::fs::copy(
        ctf.join("transport-archive.tar.gz"),
        daemon.manifests.join("air/mirror.tgz"),
    )
    .unwrap();
    let tar = std::fs::read(ctf.join("transport-archive.tar")).unwrap();
    std::fs::write(daemon.manifests.join("cut.tar"), &tar[..tar.len() / 2]).unwrap();
    let listed = eventually(Duration::from_secs(20), "two TransportArchives", || {
        let all = transport_archives(&daemon);
        (all.len() == 2 && all.values().all(|a| a["status"]["phase"].is_string())).then_some(all)
    });
    let mirror = &listed["air/mirror.tgz"];
    assert_eq!(mirror["status"]["phase"], "Ready", "{mirror}");
    assert_eq!(
        mirror["status"]["type"], "CommonTransportFormat",
        "{mirror}"
    );
    assert_eq!(mirror["status"]["format"], "tgz", "{mirror}");
    let size = std::fs::metadata(ctf.join("transport-archive.tar.gz"))
        .unwrap()
        .len();
    assert_eq!(mirror["status"]["size"], size, "{mirror}");
    assert_eq!(
        mirror["status"]["componentVersions"][0]["name"], "github.com/acme.org/helloworld",
        "{mirror}"
    );
    assert_eq!(mirror["status"]["componentVersions"][0]["version"], "1.0.0");
    assert!(mirror["status"]["observedTime"].is_string(), "{mirror}");
    assert!(mirror["status"].get("lastError").is_none(), "{mirror}");
    let cut = &listed["cut.tar"];
    assert_eq!(cut["status"]["phase"], "Failed", "{cut}");
    assert_eq!(cut["status"]["format"], "tar", "{cut}");
    let error = cut["status"]["lastError"].as_str().unwrap_or_default();
    assert!(
        error.contains("cut.tar"),
        "the error names the archive: {cut}"
    );
    assert!(cut["status"].get("componentVersions").is_none(), "{cut}");

    let out = daemon.cli(&["get", "ta"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("air/mirror.tgz")
            && stdout.contains("github.com/acme.org/helloworld:1.0.0")
            && stdout.contains("Ready")
            && stdout.contains("Failed"),
        "{stdout}"
    );

    // Read-only: the object follows the file, an API delete is refused.
    let name = cut["metadata"]["name"].as_str().unwrap().to_string();
    let token = daemon.data.join("api-token");
    let out = daemon.cli(&[
        "delete",
        "ta",
        &name,
        "--token-file",
        token.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("records the transport archive cut.tar"),
        "delete of a TransportArchive refused: {stderr}"
    );
    assert!(transport_archives(&daemon).contains_key("cut.tar"));

    std::fs::remove_file(daemon.manifests.join("air/mirror.tgz")).unwrap();
    eventually(
        Duration::from_secs(20),
        "the removed archive's object deleted",
        || {
            let all = transport_archives(&daemon);
            (!all.contains_key("air/mirror.tgz") && all.contains_key("cut.tar")).then_some(())
        },
    );
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Waits until the installation `echo-server` finished a job other than `first_job`.
fn new_job_succeeded(daemon: &Daemon, first_job: &Value) {
    eventually(Duration::from_secs(90), "a new job of echo-server", || {
        let i = installation(daemon, "echo-server")?;
        let status = &i["status"];
        assert!(
            status["phase"] != "Failed",
            "reconcile failed: {status}\n{}\n{}",
            daemon
                .get_json("/apis/landscaper.gardener.cloud/v1alpha1/namespaces/example/deployitems")
                .unwrap_or_default(),
            daemon.logs()
        );
        (status["jobIDFinished"] != *first_job
            && status["jobIDFinished"] == status["jobID"]
            && status["phase"] == "Succeeded")
            .then_some(())
    });
}

/// Counts every request it forwards to the real client.
#[derive(Default)]
struct Counting {
    inner: HyperTransport,
    count: std::sync::atomic::AtomicUsize,
}

impl landscaper_sources::http::HttpTransport for Counting {
    fn get(
        &self,
        request: landscaper_sources::http::HttpRequest,
    ) -> landscaper_sources::http::BoxFuture<
        '_,
        Result<landscaper_sources::http::HttpResponse, landscaper_sources::http::TransportError>,
    > {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.get(request)
    }
    fn send(
        &self,
        method: &str,
        request: landscaper_sources::http::HttpRequest,
        body: Vec<u8>,
    ) -> landscaper_sources::http::BoxFuture<
        '_,
        Result<landscaper_sources::http::HttpResponse, landscaper_sources::http::TransportError>,
    > {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.send(method, request, body)
    }
}

/// Bench (ignored; `BENCH_INSTALLATIONS`, `BENCH_VERSIONS` to size it): installations of
/// distinct component versions from the local registry through the appliance's resolver
/// (component version + references, blueprint, chart by resource key: what an installation and
/// its helm deploy item read): cold cache, warm cache (new process: disk cache only), hot
/// (same process: in-memory), and the registry requests per installation.
#[test]
#[ignore]
fn bench_installations_over_component_versions() {
    let Some(chapter) = data() else {
        println!("SKIP: OCM acceptance data not present");
        return;
    };
    let (Some(helm), true) = (helm(), DockerRegistry::available()) else {
        println!("SKIP: no helm or docker-registry");
        return;
    };
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (installations, versions) = (env("BENCH_INSTALLATIONS", 200), env("BENCH_VERSIONS", 20));
    let work = tempfile::tempdir().unwrap();
    let registry =
        DockerRegistry::start(&work.path().join("storage"), work.path(), "").expect("registry");
    let port = registry.port;
    let chart_ref = push_chart(&helm, &chapter, work.path(), port);
    let blob = std::fs::read(chapter.join("component/blobs").join(BLUEPRINT_BLOB)).unwrap();
    let base =
        descriptor(&chapter, &chart_ref).replace(BLUEPRINT_BLOB, &BLUEPRINT_BLOB.replace('.', ":"));
    let ctx = RepositoryContext::parse(
        &serde_json::json!({"type": "OCIRegistry", "baseUrl": format!("127.0.0.1:{port}")}),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let components = |transport: Arc<dyn landscaper_sources::http::HttpTransport>, cache: &Path| {
        let mut config = ComponentsConfig::new(transport);
        config.cache = Some(Arc::new(
            landscaper_sources::ChartCache::open(cache, 512 << 20).unwrap(),
        ));
        Arc::new(Components::new(config))
    };
    let pusher = components(Arc::new(HyperTransport::new()), &work.path().join("push"));
    for v in 0..versions {
        let text = base.replace("\n  version: 1.0.0\n", &format!("\n  version: 1.0.{v}\n"));
        rt.block_on(push_component_version(
            &pusher,
            &ctx,
            text.as_bytes(),
            &[(
                "application/vnd.gardener.landscaper.blueprint.v1+tar+gzip".into(),
                blob.clone(),
            )],
        ))
        .expect("pushed");
    }
    let cache = work.path().join("cache");
    let round = |resolver: &Arc<landscaper_appliance::components::ComponentResolver>| {
        let started = std::time::Instant::now();
        rt.block_on(async {
            for i in 0..installations {
                let version = format!("1.0.{}", i % versions);
                let resolved = resolver
                    .resolve(
                        &ctx,
                        "github.com/gardener/landscaper-examples/guided-tour/helm-chart",
                        &version,
                        &Default::default(),
                    )
                    .await
                    .expect("resolves");
                resolver
                    .blueprint(&ctx, &resolved.root, "blueprint")
                    .await
                    .expect("blueprint");
                let key =
                    landscaper_components::uri::resource_key(&resolved.root, "echo-server-chart");
                resolver.chart_by_key(&ctx, &key).await.expect("chart");
            }
        });
        started.elapsed()
    };
    let run = |label: &str,
               resolver: &Arc<landscaper_appliance::components::ComponentResolver>,
               counting: &Counting| {
        let before = counting.count.load(std::sync::atomic::Ordering::SeqCst);
        let took = round(resolver);
        let requests = counting.count.load(std::sync::atomic::Ordering::SeqCst) - before;
        println!(
            "{label}: {installations} installations over {versions} component versions in {took:?} ({:.2} ms/installation), {requests} registry requests ({:.2}/installation)",
            took.as_secs_f64() * 1000.0 / installations as f64,
            requests as f64 / installations as f64
        );
        requests
    };
    let counting = Arc::new(Counting::default());
    let resolver = Arc::new(landscaper_appliance::components::ComponentResolver::new(
        components(counting.clone(), &cache),
    ));
    let cold = run("cold cache", &resolver, &counting);
    assert!(cold > 0);
    let hot = run("hot (same process)", &resolver, &counting);
    let counting = Arc::new(Counting::default());
    let resolver = Arc::new(landscaper_appliance::components::ComponentResolver::new(
        components(counting.clone(), &cache),
    ));
    let warm = run("warm cache (new process)", &resolver, &counting);
    println!(
        "registry requests per installation on a warm cache: {}",
        warm as f64 / installations as f64
    );
    assert_eq!(hot, 0, "in-memory results make no requests");
}
