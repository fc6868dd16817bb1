//! Access types against sources' in-memory HTTP transport: `helm` (a classic Helm chart
//! repository), `ociArtifact` on an HTTPS registry, `insecure` plain HTTP for a non-loopback
//! registry, pull secrets, and the cache making a second lookup request-free.

use std::collections::BTreeMap;
use std::sync::Arc;

use landscaper_components::content::helm_chart_tgz;
use landscaper_components::{
    ComponentError, ComponentSource, Components, ComponentsConfig, RepositoryContext, ocm,
};
use landscaper_sources::archive::sha256_digest;
use landscaper_sources::testing::{MemoryTransport, Route};
use landscaper_sources::{ChartCache, SecretData};

fn chart(name: &str, version: &str) -> Vec<u8> {
    let files: BTreeMap<String, Vec<u8>> = [
        (
            format!("{name}/Chart.yaml"),
            format!("apiVersion: v2\nname: {name}\nversion: {version}\n").into_bytes(),
        ),
        (format!("{name}/values.yaml"), b"replicas: 1\n".to_vec()),
    ]
    .into();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &landscaper_components::archive::tar_files(&files))
        .expect("gzip");
    gz.finish().expect("gzip")
}

/// Routes a component version in OCM's layout under `base` (e.g. `http://reg.example.com`).
fn put_component(t: &MemoryTransport, base: &str, descriptor: &str, blobs: &[Vec<u8>]) {
    let ctx =
        RepositoryContext::parse(&serde_json::json!({"type": "OCIRegistry", "baseUrl": "x.io"}))
            .expect("ctx");
    let cv = landscaper_components::ComponentVersion::parse(descriptor.as_bytes(), "t", ctx)
        .expect("descriptor");
    let tar = ocm::descriptor_tar(descriptor.as_bytes());
    let layer = serde_json::json!({"mediaType": ocm::DESCRIPTOR_TAR_MEDIA_TYPE, "digest": sha256_digest(&tar), "size": tar.len()});
    let config =
        serde_json::to_vec(&serde_json::json!({"componentDescriptorLayer": layer})).expect("json");
    let mut layers = vec![layer];
    for b in blobs {
        layers.push(serde_json::json!({"mediaType": "application/octet-stream", "digest": sha256_digest(b), "size": b.len()}));
    }
    let manifest = serde_json::to_vec(&serde_json::json!({"schemaVersion": 2,
        "config": {"mediaType": ocm::CONFIG_MEDIA_TYPE, "digest": sha256_digest(&config), "size": config.len()},
        "layers": layers}))
    .expect("json");
    let v2 = format!("{base}/v2/component-descriptors/{}", cv.name);
    t.route(
        &format!(
            "{v2}/manifests/{}",
            ocm::version_to_tag(&cv.version).expect("semver")
        ),
        Route::ok(manifest),
    );
    for b in [tar, config].into_iter().chain(blobs.iter().cloned()) {
        t.route(&format!("{v2}/blobs/{}", sha256_digest(&b)), Route::ok(b));
    }
}

const DESCRIPTOR: &str = "meta: {schemaVersion: v2}\ncomponent:\n  name: example.com/access\n  version: 1.0.0\n  provider: internal\n  repositoryContexts: [{type: OCIRegistry, baseUrl: reg.example.com}]\n  resources:\n  - {name: repo-chart, type: helmChart, version: 1.0.0, relation: external, access: {type: helm, helmRepository: 'https://charts.example.com/stable', helmChart: 'app:1.0.0'}}\n  - {name: oci-chart, type: helmChart, version: 1.0.0, relation: external, access: {type: ociRegistry, imageReference: 'ghcr.example.io/charts/app:1.0.0'}}\n  - {name: rel-chart, type: helmChart, version: 1.0.0, relation: local, access: {type: relativeOciReference, reference: 'charts/rel:1.0.0'}}\n";

fn components(
    t: &Arc<MemoryTransport>,
    cache: &Arc<ChartCache>,
    secrets: Vec<SecretData>,
) -> Components {
    let mut config = ComponentsConfig::new(t.clone());
    config.cache = Some(cache.clone());
    config.pull_secrets = secrets;
    Components::new(config)
}

#[tokio::test]
async fn helm_repository_oci_artifact_insecure_registry_and_pull_secrets() {
    let t = Arc::new(MemoryTransport::new());
    put_component(&t, "http://reg.example.com", DESCRIPTOR, &[]);
    let index =
        "apiVersion: v1\nentries:\n  app:\n    - version: 1.0.0\n      urls: [app-1.0.0.tgz]\n";
    t.route(
        "https://charts.example.com/stable/index.yaml",
        Route::ok(index),
    );
    let repo_chart = chart("app", "1.0.0");
    t.route(
        "https://charts.example.com/stable/app-1.0.0.tgz",
        Route::ok(repo_chart.clone()),
    );
    let oci_chart = chart("app", "1.0.0-oci");
    t.put_helm_chart("https://ghcr.example.io", "charts/app", "1.0.0", &oci_chart);
    let rel_chart = chart("rel", "1.0.0");
    t.put_helm_chart("http://reg.example.com", "charts/rel", "1.0.0", &rel_chart);
    // The registry wants Basic credentials, which the pull secret has.
    let auth = format!("Basic {}", base64_of("robot:pw"));
    t.protect("http://reg.example.com", &auth, "Basic realm=\"test\"");
    let secret = SecretData {
        name: "pull".into(),
        secret_type: "kubernetes.io/dockerconfigjson".into(),
        data: [(
            ".dockerconfigjson".to_string(),
            br#"{"auths":{"reg.example.com":{"username":"robot","password":"pw"}}}"#.to_vec(),
        )]
        .into(),
    };
    let dir = tempfile::tempdir().expect("tmp");
    let cache = Arc::new(ChartCache::open(dir.path(), 1 << 30).expect("cache"));

    // Plain HTTP to a non-loopback registry only with `insecure`.
    let secure = RepositoryContext::parse(
        &serde_json::json!({"type": "OCIRegistry", "baseUrl": "reg.example.com"}),
    )
    .expect("ctx");
    let err = components(&t, &cache, vec![secret.clone()])
        .component_version(&secure, "example.com/access", "1.0.0")
        .await
        .expect_err("https is not routed");
    assert!(
        err.to_string().contains("example.com/access:1.0.0"),
        "{err}"
    );
    assert!(
        t.requests().iter().all(|(u, _)| u.starts_with("https://")),
        "{:?}",
        t.requests()
    );
    let ctx = RepositoryContext::parse(
        &serde_json::json!({"type": "OCIRegistry", "baseUrl": "reg.example.com", "insecure": true}),
    )
    .expect("ctx");
    let err = components(&t, &cache, vec![])
        .component_version(&ctx, "example.com/access", "1.0.0")
        .await
        .expect_err("no secret");
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

    t.clear_requests();
    let c = components(&t, &cache, vec![secret.clone()]);
    let cv = c
        .component_version(&ctx, "example.com/access", "1.0.0")
        .await
        .expect("with the secret");
    let got = c
        .resource(&cv, "repo-chart")
        .await
        .expect("helm repository chart");
    assert_eq!(helm_chart_tgz(&got).expect("chart"), repo_chart);
    let got = c
        .resource(&cv, "rel-chart")
        .await
        .expect("relative OCI reference");
    assert_eq!(helm_chart_tgz(&got).expect("chart"), rel_chart);
    let got = c.resource(&cv, "oci-chart").await.expect("oci chart");
    assert_eq!(
        got.media_type,
        "application/vnd.oci.image.manifest.v1+tar+gzip"
    );
    assert_eq!(helm_chart_tgz(&got).expect("chart"), oci_chart);
    assert!(!t.requests().is_empty());

    // Warm: the same lookups make no request.
    t.clear_requests();
    let c = components(&t, &cache, vec![secret]);
    let cv = c
        .component_version(&ctx, "example.com/access", "1.0.0")
        .await
        .expect("cached");
    c.resource(&cv, "repo-chart").await.expect("cached");
    c.resource(&cv, "oci-chart").await.expect("cached");
    assert!(t.requests().is_empty(), "{:?}", t.requests());

    // Artifacts are bounded as a whole (they are held in memory), even when cached.
    let mut config = ComponentsConfig::new(t.clone());
    config.pull_secrets = c_secret();
    config.max_blob_bytes = 100;
    config.cache = Some(cache.clone()); // the descriptor comes from the warm cache
    let small = Components::new(config);
    let cv = small
        .component_version(&ctx, "example.com/access", "1.0.0")
        .await
        .expect("descriptor fits");
    let err = small
        .resource(&cv, "oci-chart")
        .await
        .expect_err("too large");
    assert!(
        err.to_string().contains("larger than") && err.to_string().contains("oci-chart"),
        "{err}"
    );
}

fn c_secret() -> Vec<SecretData> {
    vec![SecretData {
        name: "pull".into(),
        secret_type: "kubernetes.io/dockerconfigjson".into(),
        data: [(
            ".dockerconfigjson".to_string(),
            br#"{"auths":{"reg.example.com":{"username":"robot","password":"pw"}}}"#.to_vec(),
        )]
        .into(),
    }]
}

fn base64_of(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}
