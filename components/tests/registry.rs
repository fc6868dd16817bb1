//! Component versions in a real OCI registry: Debian's `docker-registry` on loopback, the
//! guided tour's helm-chart component pushed with the project's own client (no client can
//! write component-descriptor artifacts), its chart pushed with the real `helm push`, an OCI
//! layout copied in with the real `skopeo copy`. Cold and warm cache (request counts), offline
//! after the registry stops, htpasswd auth, name mappings, `+` versions, bad input.
//!
//! Needs `/usr/bin/docker-registry`, `helm` (`$HELM`, the workspace's `bin/helm` from
//! scripts/test.sh, or PATH) and `skopeo`; without them the
//! tests print SKIP lines and pass.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use landscaper_components::content::{blueprint_files, helm_chart_tgz};
use landscaper_components::registry::push_component_version;
use landscaper_components::{
    ComponentError, ComponentSource, Components, ComponentsConfig, Overwrites, RepositoryContext,
    resolve_transitive,
};
use landscaper_sources::http::{
    BoxFuture, HttpRequest, HttpResponse, HttpTransport, HyperTransport, TransportError,
};
use landscaper_sources::testing::DockerRegistry;
use landscaper_sources::{ChartCache, SecretData};

/// Counts every request it forwards to the real client.
#[derive(Default)]
struct Counting {
    inner: HyperTransport,
    count: AtomicUsize,
}

impl HttpTransport for Counting {
    fn get(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.inner.get(request)
    }
    fn send(
        &self,
        method: &str,
        request: HttpRequest,
        body: Vec<u8>,
    ) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.inner.send(method, request, body)
    }
}

fn helm() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HELM") {
        return Some(PathBuf::from(path));
    }
    // scripts/test.sh puts the pinned helm there.
    let workspace_bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bin/helm");
    if workspace_bin.is_file() {
        return Some(workspace_bin);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("helm"))
            .find(|p| p.is_file())
    })
}

fn run(cmd: &mut Command) -> String {
    let output = cmd.output().expect("runs");
    assert!(
        output.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn components(
    transport: Arc<dyn HttpTransport>,
    cache: &Path,
    offline: bool,
    secrets: Vec<SecretData>,
) -> Components {
    let mut config = ComponentsConfig::new(transport);
    config.cache = Some(Arc::new(ChartCache::open(cache, 512 << 20).expect("cache")));
    config.offline = offline;
    config.pull_secrets = secrets;
    Components::new(config)
}

fn oci_ctx(port: u16, extra: serde_json::Value) -> RepositoryContext {
    let mut v = serde_json::json!({"type": "OCIRegistry", "baseUrl": format!("127.0.0.1:{port}")});
    if let (Some(m), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    common::ctx(v)
}

const TOUR: &str = "github.com/gardener/landscaper-examples/guided-tour/helm-chart";

/// The guided-tour helm-chart component as published, with the chart reference pointing at
/// `chart_ref` and the blueprint blob as OCI layer (`localReference` = its digest).
fn tour_descriptor(dir: &Path, chart_ref: &str) -> (Vec<u8>, Vec<u8>) {
    let base = dir.join("guided-tour/components/helm-chart/component");
    let text = std::fs::read_to_string(base.join("component-descriptor.yaml")).expect("descriptor");
    let blob_name = "sha256.e0a234552446487b1fe62a2d29ef0edfccaccc6c73b752e8fc54bb9314e0953f";
    let blob = std::fs::read(base.join("blobs").join(blob_name)).expect("blob");
    let text = text
        .replace(blob_name, &blob_name.replace('.', ":"))
        .replace(
            "europe-docker.pkg.dev/sap-gcp-cp-k8s-stable-hub/landscaper-examples/examples/charts/guided-tour/echo-server:1.0.0",
            chart_ref,
        );
    (text.into_bytes(), blob)
}

async fn check(c: Components, ctx: &RepositoryContext, dir: &Path, digest: &str) {
    let ctx = ctx.clone();
    let cv = c
        .component_version(&ctx, TOUR, "1.0.0")
        .await
        .expect("component version");
    assert_eq!(cv.manifest_digest.as_deref(), Some(digest));
    let files = blueprint_files(&c.resource(&cv, "blueprint").await.expect("blueprint blob"))
        .expect("blueprint");
    assert!(files.contains_key("blueprint.yaml"), "{:?}", files.keys());
    assert_eq!(
        files.get("blueprint.yaml"),
        Some(
            &std::fs::read(dir.join("guided-tour/components/helm-chart/blueprint/blueprint.yaml"))
                .expect("read")
        )
    );
    let chart = helm_chart_tgz(
        &c.resource(&cv, "echo-server-chart")
            .await
            .expect("chart artifact"),
    )
    .expect("chart");
    let chart_files = landscaper_components::archive::untar(&chart, 64 << 20).expect("untars");
    assert!(
        chart_files.contains_key("echo-server/Chart.yaml"),
        "{:?}",
        chart_files.keys()
    );
    let r = resolve_transitive(&c, &ctx, TOUR, "1.0.0", &Overwrites::default())
        .await
        .expect("resolves");
    assert_eq!(r.all.len(), 1);
}

#[tokio::test]
async fn guided_tour_component_from_a_real_registry_cold_warm_offline() {
    let Some(dir) = common::data("guided_tour_component_from_a_real_registry") else {
        return;
    };
    if !DockerRegistry::available() {
        eprintln!(
            "SKIP guided_tour_component_from_a_real_registry: no {}",
            DockerRegistry::BINARY
        );
        return;
    }
    let Some(helm) = helm() else {
        eprintln!("SKIP guided_tour_component_from_a_real_registry: no helm");
        return;
    };
    let work = tempfile::tempdir().expect("tmp");
    let mut registry =
        DockerRegistry::start(&work.path().join("storage"), work.path(), "").expect("registry");
    let port = registry.port;
    // The tour's chart, packaged and pushed with the real helm.
    let home = work.path().join("helm");
    let helm_cmd = |args: &[&str]| {
        let mut c = Command::new(&helm);
        c.args(args)
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_DATA_HOME", home.join("data"))
            .env("HELM_REGISTRY_CONFIG", home.join("registry.json"));
        c
    };
    let packages = work.path().join("packages");
    let chart_src = dir.join("guided-tour/components/helm-chart/chart/echo-server");
    run(&mut helm_cmd(&[
        "package",
        chart_src.to_str().expect("utf8"),
        "-d",
        packages.to_str().expect("utf8"),
    ]));
    let tgz = std::fs::read_dir(&packages)
        .expect("packages")
        .flatten()
        .next()
        .expect("a package")
        .path();
    let chart_version = tgz
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.strip_prefix("echo-server-"))
        .expect("versioned name")
        .to_string();
    run(&mut helm_cmd(&[
        "push",
        tgz.to_str().expect("utf8"),
        &format!("oci://127.0.0.1:{port}/charts/guided-tour"),
        "--plain-http",
    ]));
    let chart_ref = format!("127.0.0.1:{port}/charts/guided-tour/echo-server:{chart_version}");
    let (descriptor, blueprint_blob) = tour_descriptor(&dir, &chart_ref);
    let ctx = oci_ctx(port, serde_json::json!({}));
    let pusher = components(
        Arc::new(HyperTransport::new()),
        &work.path().join("push-cache"),
        false,
        vec![],
    );
    let digest = push_component_version(
        &pusher,
        &ctx,
        &descriptor,
        &[(
            "application/vnd.gardener.landscaper.blueprint.v1+tar+gzip".into(),
            blueprint_blob,
        )],
    )
    .await
    .expect("pushed");
    assert!(digest.starts_with("sha256:"));

    // Cold cache.
    let cache = work.path().join("cache");
    let counting = Arc::new(Counting::default());
    let cold = components(counting.clone(), &cache, false, vec![]);
    check(cold, &ctx, &dir, &digest).await;
    let cold_requests = counting.count.load(Ordering::SeqCst);
    assert!(cold_requests >= 5, "cold: {cold_requests} requests");

    // Warm cache: zero registry requests.
    let counting = Arc::new(Counting::default());
    check(
        components(counting.clone(), &cache, false, vec![]),
        &ctx,
        &dir,
        &digest,
    )
    .await;
    assert_eq!(
        counting.count.load(Ordering::SeqCst),
        0,
        "a warm cache makes no requests"
    );
    eprintln!("registry requests: cold {cold_requests}, warm 0");

    // Missing version and missing resource name component, version and resource.
    let c = components(Arc::new(HyperTransport::new()), &cache, false, vec![]);
    let err = c
        .component_version(&ctx, TOUR, "9.9.9")
        .await
        .expect_err("missing version");
    assert!(matches!(err, ComponentError::NotFound { .. }), "{err}");
    assert!(err.to_string().contains(&format!("{TOUR}:9.9.9")), "{err}");
    let cv = c.component_version(&ctx, TOUR, "1.0.0").await.expect("cv");
    let err = c.resource(&cv, "nope").await.expect_err("missing resource");
    assert!(
        err.to_string().contains("nope") && err.to_string().contains(TOUR),
        "{err}"
    );
    let err = c
        .component_version(&ctx, TOUR, "latest")
        .await
        .expect_err("not semver");
    assert!(err.to_string().contains("semantic version"), "{err}");

    // A `+` version (tag with `.build-`) and the sha256-digest mapping.
    let plus = String::from_utf8(descriptor.clone())
        .expect("utf8")
        .replace("  version: 1.0.0\nmeta", "  version: 1.0.0+ci.42\nmeta");
    assert!(plus.contains("1.0.0+ci.42"), "descriptor layout changed");
    push_component_version(&pusher, &ctx, plus.as_bytes(), &[])
        .await
        .expect("pushed +");
    let cv = c
        .component_version(&ctx, TOUR, "1.0.0+ci.42")
        .await
        .expect("+ version");
    assert_eq!(cv.version, "1.0.0+ci.42");
    let digest_ctx = oci_ctx(
        port,
        serde_json::json!({"subPath": "mirror", "componentNameMapping": "sha256-digest"}),
    );
    push_component_version(&pusher, &digest_ctx, &descriptor, &[])
        .await
        .expect("pushed sha256-digest");
    let cv = c
        .component_version(&digest_ctx, TOUR, "1.0.0")
        .await
        .expect("sha256-digest mapping");
    assert_eq!(cv.name, TOUR);

    // The registry stops: offline mode and a warm online cache still resolve.
    registry.stop();
    check(
        components(Arc::new(HyperTransport::new()), &cache, true, vec![]),
        &ctx,
        &dir,
        &digest,
    )
    .await;
    let err = components(
        Arc::new(HyperTransport::new()),
        &work.path().join("empty"),
        false,
        vec![],
    )
    .component_version(&ctx, TOUR, "1.0.0")
    .await
    .expect_err("unreachable");
    assert!(err.is_retryable(), "{err}");
    assert!(err.to_string().contains(TOUR), "{err}");
    let err = components(
        Arc::new(HyperTransport::new()),
        &work.path().join("empty2"),
        true,
        vec![],
    )
    .component_version(&ctx, TOUR, "1.0.0")
    .await
    .expect_err("offline, cold");
    assert!(
        err.to_string().contains(TOUR) && err.to_string().contains("offline"),
        "{err}"
    );
}

#[tokio::test]
async fn htpasswd_registry_needs_the_pull_secret() {
    let Some(dir) = common::data("htpasswd_registry_needs_the_pull_secret") else {
        return;
    };
    if !DockerRegistry::available() {
        eprintln!(
            "SKIP htpasswd_registry_needs_the_pull_secret: no {}",
            DockerRegistry::BINARY
        );
        return;
    }
    let work = tempfile::tempdir().expect("tmp");
    let htpasswd = work.path().join("htpasswd");
    std::fs::write(
        &htpasswd,
        format!("robot:{}\n", bcrypt::hash("s3cret", 4).expect("bcrypt")),
    )
    .expect("htpasswd");
    let registry = DockerRegistry::start(
        &work.path().join("storage"),
        work.path(),
        &format!(
            "auth:\n  htpasswd:\n    realm: components-test\n    path: {}\n",
            htpasswd.display()
        ),
    )
    .expect("registry");
    let port = registry.port;
    let secret = |password: &str| {
        SecretData {
        name: "pull".into(),
        secret_type: "kubernetes.io/dockerconfigjson".into(),
        data: [(
            ".dockerconfigjson".to_string(),
            format!(r#"{{"auths":{{"127.0.0.1:{port}":{{"username":"robot","password":"{password}"}}}}}}"#).into_bytes(),
        )]
        .into(),
    }
    };
    let ctx = oci_ctx(port, serde_json::json!({}));
    let (descriptor, blob) = tour_descriptor(&dir, "127.0.0.1:1/none:1.0.0");
    let pusher = components(
        Arc::new(HyperTransport::new()),
        &work.path().join("c0"),
        false,
        vec![secret("s3cret")],
    );
    push_component_version(
        &pusher,
        &ctx,
        &descriptor,
        &[(
            "application/vnd.gardener.landscaper.blueprint.v1+tar+gzip".into(),
            blob,
        )],
    )
    .await
    .expect("pushed with credentials");
    let c = components(
        Arc::new(HyperTransport::new()),
        &work.path().join("c1"),
        false,
        vec![secret("s3cret")],
    );
    let cv = c
        .component_version(&ctx, TOUR, "1.0.0")
        .await
        .expect("with credentials");
    blueprint_files(&c.resource(&cv, "blueprint").await.expect("blob")).expect("blueprint");
    for secrets in [vec![], vec![secret("wrong")]] {
        let c = components(
            Arc::new(HyperTransport::new()),
            &work.path().join("c2"),
            false,
            secrets,
        );
        let err = c
            .component_version(&ctx, TOUR, "1.0.0")
            .await
            .expect_err("refused");
        assert!(
            matches!(
                err,
                ComponentError::Repository {
                    retryable: false,
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string().contains("401") && err.to_string().contains(TOUR),
            "{err}"
        );
        assert!(
            !err.to_string().contains("s3cret") && !err.to_string().contains("wrong"),
            "{err}"
        );
    }
    // Per resolution (a Context's registryPullSecrets): a view with the secret reads, the
    // repositories it was made from (no secrets, same cache folder) still do not.
    let base = components(
        Arc::new(HyperTransport::new()),
        &work.path().join("c3"),
        false,
        vec![],
    );
    let scoped = base.with_pull_secrets(vec![secret("s3cret")]);
    let cv = scoped
        .component_version(&ctx, TOUR, "1.0.0")
        .await
        .expect("with the context's secret");
    blueprint_files(&scoped.resource(&cv, "blueprint").await.expect("blob")).expect("blueprint");
    let wrong_first = components(
        Arc::new(HyperTransport::new()),
        &work.path().join("c4"),
        false,
        vec![secret("wrong")],
    )
    .with_pull_secrets(vec![secret("s3cret")]);
    wrong_first
        .component_version(&ctx, TOUR, "1.0.0")
        .await
        .expect("the context's secret comes before the configured ones");
    let err = components(
        Arc::new(HyperTransport::new()),
        &work.path().join("c5"),
        false,
        vec![],
    )
    .component_version(&ctx, TOUR, "1.0.0")
    .await
    .expect_err("refused without the secret");
    assert!(err.to_string().contains("401"), "{err}");
}

#[tokio::test]
async fn oci_layout_copied_with_skopeo_is_an_oci_artifact_chart() {
    let Some(dir) = common::data("oci_layout_copied_with_skopeo") else {
        return;
    };
    if !DockerRegistry::available() || Command::new("skopeo").arg("--version").output().is_err() {
        eprintln!("SKIP oci_layout_copied_with_skopeo: needs docker-registry and skopeo");
        return;
    }
    let work = tempfile::tempdir().expect("tmp");
    let registry =
        DockerRegistry::start(&work.path().join("storage"), work.path(), "").expect("registry");
    let port = registry.port;
    let layout = work.path().join("layout");
    std::fs::create_dir_all(&layout).expect("mkdir");
    run(Command::new("tar")
        .arg("xzf")
        .arg(dir.join("oci-layout/helm-chart-oci-layout.tar.gz"))
        .arg("-C")
        .arg(&layout));
    let target = format!("127.0.0.1:{port}/charts/from-layout:1.0.0");
    run(Command::new("skopeo")
        .args(["copy", "--insecure-policy", "--dest-tls-verify=false"])
        .arg(format!("oci:{}", layout.display()))
        .arg(format!("docker://{target}")));
    // The same layout as `oci-archive:` (a plain tar) to a second tag: the same manifest.
    let archive = work.path().join("layout.tar");
    run(Command::new("tar")
        .arg("cf")
        .arg(&archive)
        .arg("-C")
        .arg(&layout)
        .arg("."));
    let second = format!("127.0.0.1:{port}/charts/from-layout:1.0.1");
    run(Command::new("skopeo")
        .args(["copy", "--insecure-policy", "--dest-tls-verify=false"])
        .arg(format!("oci-archive:{}", archive.display()))
        .arg(format!("docker://{second}")));
    let descriptor = format!(
        "meta: {{schemaVersion: v2}}\ncomponent:\n  name: example.com/layout\n  version: 1.0.0\n  provider: internal\n  repositoryContexts: [{{type: OCIRegistry, baseUrl: '127.0.0.1:{port}'}}]\n  resources:\n  - {{name: chart, type: helmChart, version: 1.0.0, relation: external, access: {{type: ociArtifact, imageReference: '{target}'}}}}\n"
    );
    let ctx = oci_ctx(port, serde_json::json!({}));
    let c = components(
        Arc::new(HyperTransport::new()),
        &work.path().join("cache"),
        false,
        vec![],
    );
    push_component_version(&c, &ctx, descriptor.as_bytes(), &[])
        .await
        .expect("pushed");
    let cv = c
        .component_version(&ctx, "example.com/layout", "1.0.0")
        .await
        .expect("cv");
    let artifact = c.resource(&cv, "chart").await.expect("artifact");
    assert_eq!(
        artifact.media_type,
        "application/vnd.oci.image.manifest.v1+tar+gzip"
    );
    let chart = helm_chart_tgz(&artifact).expect("chart layer by media type");
    let other = format!(
        "meta: {{schemaVersion: v2}}\ncomponent:\n  name: example.com/layout\n  version: 1.0.1\n  provider: internal\n  repositoryContexts: [{{type: OCIRegistry, baseUrl: '127.0.0.1:{port}'}}]\n  resources:\n  - {{name: chart, type: helmChart, version: 1.0.1, relation: external, access: {{type: ociArtifact, imageReference: '{second}'}}}}\n"
    );
    push_component_version(&c, &ctx, other.as_bytes(), &[])
        .await
        .expect("pushed");
    let cv2 = c
        .component_version(&ctx, "example.com/layout", "1.0.1")
        .await
        .expect("cv");
    let chart2 =
        helm_chart_tgz(&c.resource(&cv2, "chart").await.expect("artifact")).expect("chart");
    assert_eq!(chart, chart2, "oci: and oci-archive: carry the same chart");
    let files = landscaper_components::archive::untar(&chart, 64 << 20).expect("untars");
    assert!(
        files.keys().any(|k| k.ends_with("/Chart.yaml")),
        "{:?}",
        files.keys()
    );
}

/// Figures for issue 18's benchmark at the component layer: 20 distinct component versions in
/// the loopback registry, 200 lookups (component version + blueprint blob, as an installation
/// needs), cold then warm cache. Prints the figures; asserts zero requests when warm.
#[tokio::test]
async fn twenty_components_two_hundred_lookups_cold_and_warm() {
    let Some(dir) = common::data("twenty_components_two_hundred_lookups") else {
        return;
    };
    if !DockerRegistry::available() {
        eprintln!(
            "SKIP twenty_components_two_hundred_lookups: no {}",
            DockerRegistry::BINARY
        );
        return;
    }
    let work = tempfile::tempdir().expect("tmp");
    let registry =
        DockerRegistry::start(&work.path().join("storage"), work.path(), "").expect("registry");
    let ctx = oci_ctx(registry.port, serde_json::json!({}));
    let (descriptor, blob) = tour_descriptor(&dir, "127.0.0.1:1/none:1.0.0");
    let text = String::from_utf8(descriptor).expect("utf8");
    let pusher = components(
        Arc::new(HyperTransport::new()),
        &work.path().join("p"),
        false,
        vec![],
    );
    for i in 0..20 {
        let d = text.replace(
            "  version: 1.0.0\nmeta",
            &format!("  version: 1.0.{i}\nmeta"),
        );
        push_component_version(
            &pusher,
            &ctx,
            d.as_bytes(),
            &[(
                "application/vnd.gardener.landscaper.blueprint.v1+tar+gzip".into(),
                blob.clone(),
            )],
        )
        .await
        .expect("pushed");
    }
    let cache = work.path().join("cache");
    let mut figures = Vec::new();
    for round in ["cold", "warm"] {
        let counting = Arc::new(Counting::default());
        let c = components(counting.clone(), &cache, false, vec![]);
        let start = std::time::Instant::now();
        for n in 0..200 {
            let cv = c
                .component_version(&ctx, TOUR, &format!("1.0.{}", n % 20))
                .await
                .expect("cv");
            let a = c.resource(&cv, "blueprint").await.expect("blueprint");
            assert!(!a.bytes.is_empty());
        }
        let requests = counting.count.load(Ordering::SeqCst);
        figures.push(format!(
            "{round}: {requests} registry requests ({:.2}/installation), {:?}",
            requests as f64 / 200.0,
            start.elapsed()
        ));
        if round == "warm" {
            assert_eq!(requests, 0, "a warm cache makes no requests");
        }
    }
    eprintln!(
        "200 lookups of 20 component versions: {}",
        figures.join("; ")
    );
}

/// A CA and a server certificate for `localhost` signed by it (PEM: CA, certificate, key).
fn tls_material() -> (String, String, String) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "components-test-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_pem = ca_params.self_signed(&ca_key).expect("ca").pem();
    let issuer = Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate().expect("key");
    let mut server_params =
        CertificateParams::new(vec!["localhost".to_string()]).expect("server params");
    server_params
        .distinguished_name
        .push(DnType::CommonName, "components-test-registry");
    let cert = server_params
        .signed_by(&server_key, &issuer)
        .expect("server cert");
    (ca_pem, cert.pem(), server_key.serialize_pem())
}

/// A registry serving HTTPS with a certificate of a custom CA: trusted with the CA (push and
/// read), refused with another CA (nothing cached).
#[tokio::test]
async fn tls_registry_with_a_custom_ca() {
    let Some(dir) = common::data("tls_registry_with_a_custom_ca") else {
        return;
    };
    if !DockerRegistry::available() {
        eprintln!(
            "SKIP tls_registry_with_a_custom_ca: no {}",
            DockerRegistry::BINARY
        );
        return;
    }
    let work = tempfile::tempdir().expect("tmp");
    let (ca, cert, key) = tls_material();
    std::fs::write(work.path().join("server.crt"), &cert).expect("cert");
    std::fs::write(work.path().join("server.key"), &key).expect("key");
    let registry = DockerRegistry::start(
        &work.path().join("storage"),
        work.path(),
        &format!(
            "  tls:\n    certificate: {}\n    key: {}\n",
            work.path().join("server.crt").display(),
            work.path().join("server.key").display()
        ),
    )
    .expect("registry");
    let ctx = common::ctx(
        serde_json::json!({"type": "OCIRegistry", "baseUrl": format!("localhost:{}", registry.port)}),
    );
    let (descriptor, blob) = tour_descriptor(&dir, "localhost:1/none:1.0.0");
    let trusting = |cache: &str| {
        let c = components(
            Arc::new(HyperTransport::new()),
            &work.path().join(cache),
            false,
            vec![],
        );
        c.set_registry_ca(Some(ca.clone().into_bytes()));
        c
    };
    push_component_version(
        &trusting("c0"),
        &ctx,
        &descriptor,
        &[(
            "application/vnd.gardener.landscaper.blueprint.v1+tar+gzip".into(),
            blob,
        )],
    )
    .await
    .expect("pushed over TLS with the CA");
    let c = trusting("c1");
    let cv = c
        .component_version(&ctx, TOUR, "1.0.0")
        .await
        .expect("read over TLS with the CA");
    blueprint_files(&c.resource(&cv, "blueprint").await.expect("blob")).expect("blueprint");
    // Another CA (on loopback without a CA the client speaks plain HTTP, which a TLS
    // registry answers with 400).
    let (other_ca, _, _) = tls_material();
    let untrusting = components(
        Arc::new(HyperTransport::new()),
        &work.path().join("c2"),
        false,
        vec![],
    );
    untrusting.set_registry_ca(Some(other_ca.into_bytes()));
    let err = untrusting
        .component_version(&ctx, TOUR, "1.0.0")
        .await
        .expect_err("an unknown CA is refused");
    let text = err.to_string();
    assert!(
        text.contains(TOUR) && text.to_ascii_lowercase().contains("certificate"),
        "{text}"
    );
    assert!(
        std::fs::read_dir(work.path().join("c2"))
            .map(|d| d.flatten().all(|e| e.path().is_dir()))
            .unwrap_or(true),
        "nothing cached from a refused registry"
    );
}
