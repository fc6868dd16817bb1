//! `ChartSources::fetch` against the test transport: every source, the cache's answers when the
//! network is down, registry authentication, and the bad inputs.

use std::sync::Arc;

use base64::Engine as _;

use super::*;
use crate::archive::fixtures::chart;
use crate::testing::{MemoryTransport, Route};

const REG: &str = "https://reg.example.com";

struct Fixture {
    transport: Arc<MemoryTransport>,
    sources: ChartSources,
    _cache_dir: tempfile::TempDir,
}

fn fixture_with(config: SourcesConfig) -> Fixture {
    let cache_dir = tempfile::tempdir().expect("tempdir");
    let transport = Arc::new(MemoryTransport::new());
    let cache = ChartCache::open(cache_dir.path(), 1 << 30).expect("cache");
    let sources = ChartSources::new(transport.clone(), Some(cache), config);
    Fixture {
        transport,
        sources,
        _cache_dir: cache_dir,
    }
}

fn fixture() -> Fixture {
    fixture_with(SourcesConfig::default())
}

fn spec(json: serde_json::Value) -> ChartSpec {
    serde_json::from_value(json).expect("chart spec")
}

fn oci(reference: &str) -> ChartSpec {
    spec(serde_json::json!({ "ref": reference }))
}

fn bytes_of(fetched: &FetchedChart) -> &[u8] {
    match &fetched.content {
        ChartContent::Archive(bytes) => bytes,
        ChartContent::Directory(path) => panic!("expected an archive, got {}", path.display()),
    }
}

#[tokio::test]
async fn raw_archives() {
    let f = fixture();
    let tgz = chart("app", "1.0.0");
    let raw = base64::engine::general_purpose::STANDARD.encode(&tgz);
    let got = f
        .sources
        .fetch(
            &spec(serde_json::json!({"archive": {"raw": raw}})),
            &FetchContext::default(),
        )
        .await
        .expect("raw chart");
    assert_eq!(bytes_of(&got), tgz.as_slice());
    assert_eq!(got.digest, archive::sha256_digest(&tgz));
    let err = f
        .sources
        .fetch(
            &spec(serde_json::json!({"archive": {"raw": "!!!"}})),
            &FetchContext::default(),
        )
        .await
        .expect_err("bad base64");
    assert!(err.is_configuration_problem(), "{err}");
    let not_a_chart = base64::engine::general_purpose::STANDARD.encode(b"plain text");
    let err = f
        .sources
        .fetch(
            &spec(serde_json::json!({"archive": {"raw": not_a_chart}})),
            &FetchContext::default(),
        )
        .await
        .expect_err("corrupt");
    assert!(matches!(err, SourceError::CorruptArchive { .. }), "{err}");
}

#[tokio::test]
async fn oci_by_tag_and_digest_then_from_the_cache() {
    let f = fixture();
    let tgz = chart("app", "1.0.0");
    let (manifest_digest, layer_digest) =
        f.transport.put_helm_chart(REG, "charts/app", "1.0.0", &tgz);
    let ctx = FetchContext::default();
    let by_tag = f
        .sources
        .fetch(&oci("reg.example.com/charts/app:1.0.0"), &ctx)
        .await
        .expect("by tag");
    assert_eq!(bytes_of(&by_tag), tgz.as_slice());
    assert_eq!(by_tag.digest, layer_digest);
    assert!(!by_tag.origin.from_cache);

    // By digest: the cache answers without a request.
    f.transport.clear_requests();
    let by_digest = f
        .sources
        .fetch(
            &oci(&format!(
                "oci://reg.example.com/charts/app@{manifest_digest}"
            )),
            &ctx,
        )
        .await
        .expect("by digest");
    assert_eq!(bytes_of(&by_digest), tgz.as_slice());
    assert!(by_digest.origin.from_cache);
    assert!(
        f.transport.requests().is_empty(),
        "{:?}",
        f.transport.requests()
    );

    // The registry is down: the tag is served from the cache.
    f.transport.set_unreachable(true);
    let offline = f
        .sources
        .fetch(&oci("reg.example.com/charts/app:1.0.0"), &ctx)
        .await
        .expect("served from cache");
    assert!(offline.origin.from_cache);
    assert_eq!(bytes_of(&offline), tgz.as_slice());
    // A tag never fetched is an error that may pass.
    let err = f
        .sources
        .fetch(&oci("reg.example.com/charts/app:2.0.0"), &ctx)
        .await
        .expect_err("unreachable");
    assert!(err.is_retryable(), "{err}");
    assert!(
        err.to_string().contains("reg.example.com/charts/app:2.0.0"),
        "{err}"
    );
}

#[tokio::test]
async fn a_known_layer_is_not_downloaded_again() {
    let f = fixture();
    let tgz = chart("app", "1.0.0");
    let (_, layer_digest) = f.transport.put_helm_chart(REG, "charts/app", "1.0.0", &tgz);
    let ctx = FetchContext::default();
    f.sources
        .fetch(&oci("reg.example.com/charts/app:1.0.0"), &ctx)
        .await
        .expect("first");
    f.transport.clear_requests();
    f.sources
        .fetch(&oci("reg.example.com/charts/app:1.0.0"), &ctx)
        .await
        .expect("second");
    let urls: Vec<String> = f.transport.requests().into_iter().map(|(u, _)| u).collect();
    assert!(
        urls.iter().any(|u| u.contains("/manifests/1.0.0")),
        "tag re-resolved: {urls:?}"
    );
    assert!(!urls.iter().any(|u| u.contains(&layer_digest)), "{urls:?}");
}

#[tokio::test]
async fn oci_not_found_is_fatal_even_with_a_cached_copy() {
    let f = fixture();
    let tgz = chart("app", "1.0.0");
    f.transport.put_helm_chart(REG, "charts/app", "1.0.0", &tgz);
    let ctx = FetchContext::default();
    f.sources
        .fetch(&oci("reg.example.com/charts/app:1.0.0"), &ctx)
        .await
        .expect("first");
    f.transport.route(
        &format!("{REG}/v2/charts/app/manifests/1.0.0"),
        Route::status(404),
    );
    let err = f
        .sources
        .fetch(&oci("reg.example.com/charts/app:1.0.0"), &ctx)
        .await
        .expect_err("deleted tag");
    assert!(matches!(err, SourceError::NotFound { .. }), "{err}");
    assert!(!err.is_retryable());
    let err = f
        .sources
        .fetch(&oci("reg.example.com/charts/other:1.0.0"), &ctx)
        .await
        .expect_err("missing");
    assert!(matches!(err, SourceError::NotFound { .. }), "{err}");
}

#[tokio::test]
async fn server_errors_may_pass() {
    let f = fixture();
    f.transport.route(
        &format!("{REG}/v2/charts/app/manifests/1.0.0"),
        Route::status(503),
    );
    let err = f
        .sources
        .fetch(
            &oci("reg.example.com/charts/app:1.0.0"),
            &FetchContext::default(),
        )
        .await
        .expect_err("503");
    assert!(
        matches!(err, SourceError::ServerError { status: 503, .. }),
        "{err}"
    );
    assert!(err.is_retryable());
}

#[tokio::test]
async fn tampered_blobs_and_manifests_are_refused() {
    let f = fixture();
    let tgz = chart("app", "1.0.0");
    let (manifest_digest, layer_digest) =
        f.transport.put_helm_chart(REG, "charts/app", "1.0.0", &tgz);
    f.transport.route(
        &format!("{REG}/v2/charts/app/blobs/{layer_digest}"),
        Route::ok(chart("evil", "6.6.6")),
    );
    let ctx = FetchContext::default();
    let err = f
        .sources
        .fetch(&oci("reg.example.com/charts/app:1.0.0"), &ctx)
        .await
        .expect_err("tampered blob");
    assert!(matches!(err, SourceError::DigestMismatch { .. }), "{err}");
    assert!(!err.is_retryable());
    f.transport.route(
        &format!("{REG}/v2/charts/app/manifests/{manifest_digest}"),
        Route::ok(b"{\"schemaVersion\":2}".to_vec()),
    );
    let err = f
        .sources
        .fetch(
            &oci(&format!("reg.example.com/charts/app@{manifest_digest}")),
            &ctx,
        )
        .await
        .expect_err("tampered manifest");
    assert!(matches!(err, SourceError::DigestMismatch { .. }), "{err}");
}

#[tokio::test]
async fn oversized_and_corrupt_artifacts() {
    let f = fixture_with(SourcesConfig {
        max_artifact_bytes: 64,
        ..SourcesConfig::default()
    });
    let tgz = chart("app", "1.0.0");
    assert!(tgz.len() > 64);
    f.transport.put_helm_chart(REG, "charts/app", "1.0.0", &tgz);
    let ctx = FetchContext::default();
    let err = f
        .sources
        .fetch(&oci("reg.example.com/charts/app:1.0.0"), &ctx)
        .await
        .expect_err("too large");
    assert!(
        matches!(err, SourceError::TooLarge { limit: 64, .. }),
        "{err}"
    );
    assert!(!err.is_retryable());

    let f = fixture();
    f.transport
        .put_helm_chart(REG, "charts/bad", "1.0.0", b"\x1f\x8bnot really gzip");
    let err = f
        .sources
        .fetch(&oci("reg.example.com/charts/bad:1.0.0"), &ctx)
        .await
        .expect_err("corrupt");
    assert!(matches!(err, SourceError::CorruptArchive { .. }), "{err}");
    assert!(
        err.to_string().contains("reg.example.com/charts/bad:1.0.0"),
        "{err}"
    );
}

fn docker_secret(host: &str, user: &str, password: &str) -> SecretData {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    SecretData {
        name: "pull".into(),
        secret_type: "kubernetes.io/dockerconfigjson".into(),
        data: [(
            ".dockerconfigjson".to_string(),
            format!(r#"{{"auths":{{"{host}":{{"auth":"{auth}"}}}}}}"#).into_bytes(),
        )]
        .into(),
    }
}

#[tokio::test]
async fn bearer_token_flow_with_pull_secret_credentials() {
    let f = fixture();
    let tgz = chart("app", "1.0.0");
    f.transport.put_helm_chart(REG, "charts/app", "1.0.0", &tgz);
    let challenge = r#"Bearer realm="https://auth.example.com/token",service="reg.example.com",scope="repository:charts/app:pull""#;
    f.transport
        .protect(&format!("{REG}/v2/"), "Bearer tok-123", challenge);
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("robot:s3cret")
    );
    f.transport.route(
        "https://auth.example.com/token?service=reg.example.com&scope=repository%3Acharts%2Fapp%3Apull",
        Route::ok(br#"{"token":"tok-123"}"#.to_vec()).requiring(&basic, r#"Basic realm="auth""#),
    );
    // Without credentials: the token service refuses.
    let err = f
        .sources
        .fetch(
            &oci("reg.example.com/charts/app:1.0.0"),
            &FetchContext::default(),
        )
        .await
        .expect_err("anonymous refused");
    assert!(
        matches!(
            err,
            SourceError::AuthRefused {
                had_credentials: false,
                ..
            }
        ),
        "{err}"
    );
    assert!(!err.is_retryable());
    // With the pull secret.
    let ctx = FetchContext {
        pull_secrets: vec![docker_secret("reg.example.com", "robot", "s3cret")],
        ..FetchContext::default()
    };
    let got = f
        .sources
        .fetch(&oci("reg.example.com/charts/app:1.0.0"), &ctx)
        .await
        .expect("authorised");
    assert_eq!(bytes_of(&got), tgz.as_slice());
    // Wrong password: refused, and the message shows no credential.
    let ctx = FetchContext {
        pull_secrets: vec![docker_secret("reg.example.com", "robot", "wrong")],
        ..FetchContext::default()
    };
    let f2 = fixture();
    f2.transport
        .put_helm_chart(REG, "charts/app", "1.0.0", &tgz);
    f2.transport
        .protect(&format!("{REG}/v2/"), "Bearer tok-123", challenge);
    f2.transport.route(
        "https://auth.example.com/token?service=reg.example.com&scope=repository%3Acharts%2Fapp%3Apull",
        Route::ok(br#"{"token":"tok-123"}"#.to_vec()).requiring(&basic, r#"Basic realm="auth""#),
    );
    let err = f2
        .sources
        .fetch(&oci("reg.example.com/charts/app:1.0.0"), &ctx)
        .await
        .expect_err("wrong password");
    assert!(
        matches!(
            err,
            SourceError::AuthRefused {
                had_credentials: true,
                ..
            }
        ),
        "{err}"
    );
    assert!(!err.to_string().contains("wrong"), "{err}");
}

#[tokio::test]
async fn basic_auth_registry() {
    let f = fixture();
    let tgz = chart("app", "1.0.0");
    f.transport.put_helm_chart(REG, "charts/app", "1.0.0", &tgz);
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("u:p")
    );
    f.transport
        .protect(&format!("{REG}/v2/"), &basic, r#"Basic realm="Registry""#);
    let ctx = FetchContext {
        pull_secrets: vec![docker_secret("https://reg.example.com", "u", "p")],
        ..FetchContext::default()
    };
    let got = f
        .sources
        .fetch(&oci("reg.example.com/charts/app:1.0.0"), &ctx)
        .await
        .expect("basic auth");
    assert_eq!(bytes_of(&got), tgz.as_slice());
}

const REPO: &str = "https://charts.example.com/stable";

fn repo_spec(version: &str) -> ChartSpec {
    spec(serde_json::json!({"helmChartRepo": {
        "helmChartRepoUrl": format!("{REPO}/"),
        "helmChartName": "app",
        "helmChartVersion": version,
    }}))
}

fn serve_repo(f: &Fixture, auth: Option<&str>) -> (Vec<u8>, Vec<u8>) {
    let v1 = chart("app", "1.0.0");
    let v11 = chart("app", "1.1.0");
    let index = "apiVersion: v1\nentries:\n  app:\n    - version: 1.1.0\n      urls: [app-1.1.0.tgz]\n    - version: 1.0.0\n      urls: [\"https://cdn.example.com/files/app-1.0.0.tgz\"]\n";
    let mut routes = vec![
        (format!("{REPO}/index.yaml"), Route::ok(index)),
        (format!("{REPO}/app-1.1.0.tgz"), Route::ok(v11.clone())),
        (
            "https://cdn.example.com/files/app-1.0.0.tgz".to_string(),
            Route::ok(v1.clone()),
        ),
    ];
    for (url, route) in routes.drain(..) {
        let route = match auth {
            Some(a) if url.starts_with(REPO) => route.requiring(a, r#"Basic realm="repo""#),
            _ => route,
        };
        f.transport.route(&url, route);
    }
    (v1, v11)
}

fn repo_ctx(auths: serde_json::Value) -> FetchContext {
    FetchContext {
        configurations: [("helmChartRepoCredentials".to_string(), auths)].into(),
        ..FetchContext::default()
    }
}

#[tokio::test]
async fn helm_repository_with_auth_header_versions_and_cache() {
    let f = fixture();
    let header = "Basic dXNlcjpwYXNz";
    let (v1, v11) = serve_repo(&f, Some(header));
    let ctx = repo_ctx(serde_json::json!({"auths": [
        {"url": "charts.example.com/stable", "authHeader": header},
    ]}));
    // Without credentials the repository refuses (fatal).
    let err = f
        .sources
        .fetch(&repo_spec("1.1.0"), &FetchContext::default())
        .await
        .expect_err("refused");
    assert!(
        matches!(
            err,
            SourceError::AuthRefused {
                had_credentials: false,
                ..
            }
        ),
        "{err}"
    );
    assert!(!err.is_retryable());
    let got = f
        .sources
        .fetch(&repo_spec("1.1.0"), &ctx)
        .await
        .expect("exact");
    assert_eq!(bytes_of(&got), v11.as_slice());
    let got = f
        .sources
        .fetch(&repo_spec("~1.0"), &ctx)
        .await
        .expect("range");
    assert_eq!(bytes_of(&got), v1.as_slice());
    // The CDN is outside the credential's prefix: no header sent there.
    let cdn = f
        .transport
        .requests()
        .into_iter()
        .find(|(u, _)| u.starts_with("https://cdn.example.com"))
        .expect("cdn requested");
    assert_eq!(cdn.1, None);
    let index_auth = f
        .transport
        .requests()
        .into_iter()
        .rev()
        .find(|(u, _)| u.ends_with("/index.yaml"))
        .and_then(|(_, a)| a);
    assert_eq!(index_auth.as_deref(), Some(header));

    // An exact version is served by the cache without a request; a range falls back to it
    // when the repository is down.
    f.transport.clear_requests();
    f.transport.set_unreachable(true);
    let got = f
        .sources
        .fetch(&repo_spec("1.1.0"), &ctx)
        .await
        .expect("cached exact");
    assert!(got.origin.from_cache);
    assert!(f.transport.requests().is_empty());
    let got = f
        .sources
        .fetch(&repo_spec("~1.0"), &ctx)
        .await
        .expect("cached range");
    assert!(got.origin.from_cache);
    assert_eq!(bytes_of(&got), v1.as_slice());
}

#[tokio::test]
async fn helm_repository_missing_chart_or_version_is_not_found() {
    let f = fixture();
    serve_repo(&f, None);
    let err = f
        .sources
        .fetch(&repo_spec("9.9.9"), &FetchContext::default())
        .await
        .expect_err("missing version");
    assert!(matches!(err, SourceError::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("\"9.9.9\""), "{err}");
    f.transport
        .route(&format!("{REPO}/index.yaml"), Route::ok("entries: [broken"));
    let err = f
        .sources
        .fetch(&repo_spec("1.0.0"), &FetchContext::default())
        .await
        .expect_err("broken index");
    assert!(matches!(err, SourceError::InvalidResponse { .. }), "{err}");
}

#[tokio::test]
async fn helm_repository_secret_ref() {
    let f = fixture();
    let header = "Basic c2VjcmV0OnZhbHVl";
    let (_, v11) = serve_repo(&f, Some(header));
    let mut ctx = repo_ctx(serde_json::json!({"auths": [
        {"url": REPO, "secretRef": {"name": "repo-auth"}},
    ]}));
    ctx.secrets.insert(
        "repo-auth".into(),
        SecretData {
            name: "repo-auth".into(),
            secret_type: "Opaque".into(),
            data: [("authHeader".to_string(), header.as_bytes().to_vec())].into(),
        },
    );
    let got = f
        .sources
        .fetch(&repo_spec("1.1.0"), &ctx)
        .await
        .expect("secretRef");
    assert_eq!(bytes_of(&got), v11.as_slice());
}

#[tokio::test]
async fn remote_urls_and_redirects() {
    let f = fixture();
    let tgz = chart("app", "1.0.0");
    f.transport.route(
        "https://files.example.com/app.tgz",
        Route::status(302).with_header("location", "/blobs/app-1.0.0.tgz"),
    );
    f.transport.route(
        "https://files.example.com/blobs/app-1.0.0.tgz",
        Route::ok(tgz.clone()),
    );
    let url_spec = spec(
        serde_json::json!({"archive": {"remote": {"url": "https://files.example.com/app.tgz"}}}),
    );
    let got = f
        .sources
        .fetch(&url_spec, &FetchContext::default())
        .await
        .expect("redirected");
    assert_eq!(bytes_of(&got), tgz.as_slice());
    f.transport.set_unreachable(true);
    let got = f
        .sources
        .fetch(&url_spec, &FetchContext::default())
        .await
        .expect("from cache");
    assert!(got.origin.from_cache);
    let missing = spec(
        serde_json::json!({"archive": {"remote": {"url": "https://files.example.com/none.tgz"}}}),
    );
    let err = f
        .sources
        .fetch(&missing, &FetchContext::default())
        .await
        .expect_err("unreachable, not cached");
    assert!(err.is_retryable(), "{err}");
    assert!(
        err.to_string()
            .contains("https://files.example.com/none.tgz"),
        "{err}"
    );
}

#[tokio::test]
async fn a_passed_deadline_is_a_timeout() {
    let f = fixture();
    let ctx = FetchContext {
        deadline: Some(tokio::time::Instant::now() - Duration::from_secs(1)),
        ..FetchContext::default()
    };
    let err = f
        .sources
        .fetch(&oci("reg.example.com/charts/app:1.0.0"), &ctx)
        .await
        .expect_err("deadline passed");
    assert!(matches!(err, SourceError::Timeout { .. }), "{err}");
    assert!(err.is_retryable());
}

#[tokio::test]
async fn local_charts_and_unsupported_sources() {
    let f = fixture();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("charts/app")).expect("mkdir");
    std::fs::write(
        dir.path().join("charts/app/Chart.yaml"),
        "name: app\nversion: 1.0.0\n",
    )
    .expect("w");
    let ctx = FetchContext {
        manifests_dir: Some(dir.path().to_path_buf()),
        ..FetchContext::default()
    };
    let got = f
        .sources
        .fetch(&oci("local://charts/app"), &ctx)
        .await
        .expect("local dir");
    assert!(matches!(got.content, ChartContent::Directory(_)));
    assert!(archive::valid_sha256_digest(&got.digest));
    let err = f
        .sources
        .fetch(&oci("local://charts/../../etc"), &ctx)
        .await
        .expect_err("escape");
    assert!(matches!(err, SourceError::Local { .. }), "{err}");
    let err = f
        .sources
        .fetch(&oci("local://charts/app"), &FetchContext::default())
        .await
        .expect_err("no folder");
    assert!(err.to_string().contains("no manifests folder"), "{err}");
    let err = f
        .sources
        .fetch(&spec(serde_json::json!({"resourceRef": "a2V5"})), &ctx)
        .await
        .expect_err("resourceRef");
    assert!(matches!(err, SourceError::ResourceRefUnsupported));
}

#[tokio::test]
async fn userinfo_becomes_basic_auth_and_is_never_shown() {
    let f = fixture();
    let tgz = chart("app", "1.0.0");
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("user:p@ss")
    );
    f.transport.route(
        "https://files.example.com/app.tgz",
        Route::ok(tgz.clone()).requiring(&basic, r#"Basic realm="files""#),
    );
    let with_userinfo = spec(
        serde_json::json!({"archive": {"remote": {"url": "https://user:p%40ss@files.example.com/app.tgz"}}}),
    );
    let got = f
        .sources
        .fetch(&with_userinfo, &FetchContext::default())
        .await
        .expect("userinfo as basic auth");
    assert_eq!(bytes_of(&got), tgz.as_slice());
    assert!(
        !got.origin.source.contains("p%40ss"),
        "{}",
        got.origin.source
    );
    let wrong = spec(
        serde_json::json!({"archive": {"remote": {"url": "https://user:nope@files.example.com/app.tgz"}}}),
    );
    let err = f
        .sources
        .fetch(&wrong, &FetchContext::default())
        .await
        .expect_err("wrong password");
    assert!(
        matches!(
            err,
            SourceError::AuthRefused {
                had_credentials: true,
                ..
            }
        ),
        "{err}"
    );
    assert!(!err.to_string().contains("nope"), "{err}");
    // Nothing in the cache folder holds the password either.
    let cache_root = f.sources.cache().expect("cache").root().to_path_buf();
    for entry in std::fs::read_dir(cache_root.join("refs")).expect("refs") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("ref");
        assert!(
            !text.contains("p%40ss") && !text.contains("user:"),
            "{text}"
        );
    }

    // A helm repository URL with userinfo: the index and the relative chart URL get it.
    let index = "apiVersion: v1\nentries:\n  app:\n  - version: 1.0.0\n    urls: [app-1.0.0.tgz]\n";
    f.transport.route(
        "https://repo.example.com/index.yaml",
        Route::ok(index).requiring(&basic, r#"Basic realm="repo""#),
    );
    f.transport.route(
        "https://repo.example.com/app-1.0.0.tgz",
        Route::ok(tgz.clone()).requiring(&basic, r#"Basic realm="repo""#),
    );
    let repo = spec(serde_json::json!({"helmChartRepo": {
        "helmChartRepoUrl": "https://user:p%40ss@repo.example.com",
        "helmChartName": "app", "helmChartVersion": "1.0.0",
    }}));
    let got = f
        .sources
        .fetch(&repo, &FetchContext::default())
        .await
        .expect("repository with userinfo");
    assert_eq!(bytes_of(&got), tgz.as_slice());
    assert!(
        !got.origin.source.contains("p%40ss"),
        "{}",
        got.origin.source
    );
}

#[test]
fn a_shared_cache_is_the_same_instance() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = Arc::new(ChartCache::open(dir.path(), 1 << 20).expect("cache"));
    let sources = ChartSources::with_shared_cache(
        Arc::new(crate::testing::MemoryTransport::new()),
        Some(cache.clone()),
        SourcesConfig::default(),
    );
    let shared = sources.shared_cache().expect("has a cache");
    assert!(Arc::ptr_eq(&shared, &cache));
    // What one user stores, the other sees.
    let digest = shared.put_blob(b"bytes").expect("put");
    assert_eq!(cache.get_blob(&digest).as_deref(), Some(&b"bytes"[..]));
}
