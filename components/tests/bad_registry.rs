//! A registry that answers 401, 500, garbage or a tampered blob (a tiny axum server): clear
//! errors naming component, version and resource; nothing cached that failed verification.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use landscaper_components::{
    ComponentError, ComponentSource, Components, ComponentsConfig, RepositoryContext, ocm,
};
use landscaper_sources::ChartCache;
use landscaper_sources::archive::sha256_digest;
use landscaper_sources::http::HyperTransport;

const NAME: &str = "example.com/bad";
const DESCRIPTOR: &str = "meta: {schemaVersion: v2}\ncomponent:\n  name: example.com/bad\n  version: 1.0.0\n  provider: internal\n  repositoryContexts: [{type: OCIRegistry, baseUrl: example.com}]\n  resources:\n  - {name: greeting, type: plainText, version: 1.0.0, relation: local, access: {type: localBlob, localReference: 'BLOB', mediaType: text/plain}}\n";
const BLOB: &[u8] = b"hello";

#[derive(Clone)]
struct Fake {
    mode: Arc<Mutex<&'static str>>,
    files: Arc<BTreeMap<String, (String, Vec<u8>)>>,
    blob_digest: String,
}

async fn serve(fake: Fake, uri: Uri) -> Response {
    let mode = *fake.mode.lock().expect("lock");
    let path = uri.path().to_string();
    match mode {
        "401" => return (StatusCode::UNAUTHORIZED, "no").into_response(),
        "500" => return (StatusCode::INTERNAL_SERVER_ERROR, "oops").into_response(),
        "garbage" if path.contains("/manifests/") => {
            return (StatusCode::OK, "<html>not a manifest").into_response();
        }
        "tamper" if path.ends_with(&fake.blob_digest) => {
            return (StatusCode::OK, b"HELLO".to_vec()).into_response();
        }
        _ => {}
    }
    if path == "/v2/" {
        return (StatusCode::OK, "{}").into_response();
    }
    match fake.files.get(&path) {
        Some((ct, body)) => {
            (StatusCode::OK, [("content-type", ct.clone())], body.clone()).into_response()
        }
        None => (
            StatusCode::NOT_FOUND,
            "{\"errors\":[{\"code\":\"MANIFEST_UNKNOWN\"}]}",
        )
            .into_response(),
    }
}

async fn start() -> (u16, Fake) {
    let blob_digest = sha256_digest(BLOB);
    let descriptor = DESCRIPTOR.replace("BLOB", &blob_digest);
    let tar = ocm::descriptor_tar(descriptor.as_bytes());
    let layer = serde_json::json!({"mediaType": ocm::DESCRIPTOR_TAR_MEDIA_TYPE, "digest": sha256_digest(&tar), "size": tar.len()});
    let config =
        serde_json::to_vec(&serde_json::json!({"componentDescriptorLayer": layer})).expect("json");
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": ocm::CONFIG_MEDIA_TYPE, "digest": sha256_digest(&config), "size": config.len()},
        "layers": [layer, {"mediaType": "text/plain", "digest": blob_digest, "size": BLOB.len()}],
    }))
    .expect("json");
    let repo = format!("/v2/component-descriptors/{NAME}");
    let mut files = BTreeMap::new();
    files.insert(
        format!("{repo}/manifests/1.0.0"),
        (
            "application/vnd.oci.image.manifest.v1+json".to_string(),
            manifest,
        ),
    );
    for bytes in [tar, config, BLOB.to_vec()] {
        files.insert(
            format!("{repo}/blobs/{}", sha256_digest(&bytes)),
            ("application/octet-stream".to_string(), bytes),
        );
    }
    let fake = Fake {
        mode: Arc::new(Mutex::new("ok")),
        files: Arc::new(files),
        blob_digest,
    };
    let state = fake.clone();
    let app = axum::Router::new().fallback(move |uri: Uri| serve(state.clone(), uri));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (port, fake)
}

fn components(cache: &Arc<ChartCache>) -> Components {
    let mut config = ComponentsConfig::new(Arc::new(HyperTransport::new()));
    config.cache = Some(cache.clone());
    Components::new(config)
}

#[tokio::test]
async fn bad_registry_answers_give_clear_errors_and_nothing_unverified_is_cached() {
    let (port, fake) = start().await;
    let set = |m: &'static str| *fake.mode.lock().expect("lock") = m;
    let ctx = RepositoryContext::parse(
        &serde_json::json!({"type": "OCIRegistry", "baseUrl": format!("127.0.0.1:{port}")}),
    )
    .expect("ctx");
    let dir = tempfile::tempdir().expect("tmp");
    let cache = Arc::new(ChartCache::open(dir.path(), 1 << 20).expect("cache"));

    components(&cache)
        .check_repository(&ctx)
        .await
        .expect("the registry answers");
    set("401");
    let err = components(&cache)
        .check_repository(&ctx)
        .await
        .expect_err("401 without credentials");
    assert!(err.to_string().contains("401"), "{err}");
    let err = components(&cache)
        .component_version(&ctx, NAME, "1.0.0")
        .await
        .expect_err("401");
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
        err.to_string().contains("example.com/bad:1.0.0") && err.to_string().contains("401"),
        "{err}"
    );

    set("500");
    let err = components(&cache)
        .component_version(&ctx, NAME, "1.0.0")
        .await
        .expect_err("500");
    assert!(err.is_retryable(), "{err}");
    assert!(err.to_string().contains("example.com/bad:1.0.0"), "{err}");

    set("garbage");
    let err = components(&cache)
        .component_version(&ctx, NAME, "1.0.0")
        .await
        .expect_err("garbage");
    assert!(matches!(err, ComponentError::Repository { .. }), "{err}");
    assert!(err.to_string().contains("example.com/bad:1.0.0"), "{err}");

    // The garbage did not stick to the tag: a healthy registry now answers.
    set("tamper");
    let c = components(&cache);
    let cv = c
        .component_version(&ctx, NAME, "1.0.0")
        .await
        .expect("manifest and descriptor are fine");
    let err = c
        .resource(&cv, "greeting")
        .await
        .expect_err("tampered blob");
    match &err {
        ComponentError::DigestMismatch {
            component,
            version,
            what,
            expected,
            ..
        } => {
            assert_eq!((component.as_str(), version.as_str()), (NAME, "1.0.0"));
            assert!(what.contains("greeting"), "{what}");
            assert_eq!(expected, &fake.blob_digest);
        }
        other => panic!("expected a digest mismatch, got {other}"),
    }
    assert_eq!(
        cache.get_blob(&fake.blob_digest),
        None,
        "the tampered blob is not cached"
    );

    set("ok");
    assert_eq!(c.verify_cache().map(|(_, _, removed)| removed), Some(0));
    let a = c.resource(&cv, "greeting").await.expect("healthy");
    assert_eq!(&a.bytes[..], BLOB);
    assert_eq!(cache.get_blob(&fake.blob_digest).as_deref(), Some(BLOB));

    // A missing version is NotFound, naming the repository.
    let err = c
        .component_version(&ctx, NAME, "2.0.0")
        .await
        .expect_err("missing");
    assert!(matches!(err, ComponentError::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("example.com/bad:2.0.0"), "{err}");
}

#[tokio::test]
async fn pinned_component_versions_survive_cache_eviction() {
    let (port, fake) = start().await;
    let set = |m: &'static str| *fake.mode.lock().expect("lock") = m;
    let ctx = RepositoryContext::parse(
        &serde_json::json!({"type": "OCIRegistry", "baseUrl": format!("127.0.0.1:{port}")}),
    )
    .expect("ctx");
    let dir = tempfile::tempdir().expect("tmp");
    // Room for the component (manifest, config, descriptor tar, blob: about 4 KiB) only.
    let cache = Arc::new(ChartCache::open(dir.path(), 6000).expect("cache"));
    let c = components(&cache);
    let cv = c.component_version(&ctx, NAME, "1.0.0").await.expect("cv");
    c.resource(&cv, "greeting").await.expect("blob");
    c.pin("installation default/a", std::slice::from_ref(&cv));
    // Something else fills the cache; eviction must spare the pinned entries.
    let filler = vec![7u8; 4000];
    cache.put_blob(&filler).expect("filler");
    cache.put_blob(&vec![8u8; 4000]).expect("filler 2");
    set("500");
    let again = components(&cache);
    let cv = again
        .component_version(&ctx, NAME, "1.0.0")
        .await
        .expect("from the cache");
    assert_eq!(
        &again
            .resource(&cv, "greeting")
            .await
            .expect("from the cache")
            .bytes[..],
        BLOB
    );
    // Unpinned, the same pressure evicts them.
    c.unpin("installation default/a");
    cache.put_blob(&vec![9u8; 5000]).expect("filler 3");
    let err = components(&cache)
        .component_version(&ctx, NAME, "1.0.0")
        .await
        .expect_err("evicted, registry failing");
    assert!(err.is_retryable(), "{err}");
}
