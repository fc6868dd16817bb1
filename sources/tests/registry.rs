//! Chart sources against real parts: Debian's `docker-registry` (the CNCF distribution registry)
//! started on loopback with a temporary storage folder, a chart packaged and pushed with the real
//! `helm package` / `helm push`, pulled through `ChartSources` by tag and by digest, and served
//! from the cache after the registry is stopped; a helm chart repository served by this test
//! over HTTP with basic auth (index made by `helm repo index`).
//!
//! Needs `/usr/bin/docker-registry` (`apt-get install docker-registry`; scripts/test.sh does)
//! and `helm` (`$HELM`, the workspace's `bin/helm` from scripts/test.sh, or `PATH`). Without
//! them the tests print a SKIP line and pass.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use landscaper_sources::{
    ChartCache, ChartContent, ChartSources, ChartSpec, FetchContext, FetchedChart, SourceError,
    SourcesConfig,
    http::HyperTransport,
    testing::{DockerRegistry, FileServer},
};

fn helm() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HELM") {
        return Some(PathBuf::from(path));
    }
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

/// The shared docker-registry helper, started with `extra` configuration.
fn start_registry(storage: &Path, config_dir: &Path, extra: &str) -> DockerRegistry {
    DockerRegistry::start(storage, config_dir, extra).expect("docker-registry starts")
}

fn run(helm: &Path, home: &Path, args: &[&str]) -> String {
    let output = Command::new(helm)
        .args(args)
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env("HELM_REGISTRY_CONFIG", home.join("registry.json"))
        .output()
        .expect("helm runs");
    assert!(
        output.status.success(),
        "helm {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `helm package` of a tiny chart made here; returns the .tgz path.
fn package_chart(helm: &Path, work: &Path, name: &str, version: &str) -> PathBuf {
    let dir = work.join("src").join(name);
    std::fs::create_dir_all(dir.join("templates")).expect("mkdir");
    std::fs::write(
        dir.join("Chart.yaml"),
        format!("apiVersion: v2\nname: {name}\nversion: {version}\ndescription: sources test\n"),
    )
    .expect("Chart.yaml");
    std::fs::write(dir.join("values.yaml"), "greeting: hello\n").expect("values");
    std::fs::write(
        dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting }}\n",
    )
    .expect("template");
    let out = work.join("packages");
    std::fs::create_dir_all(&out).expect("mkdir");
    run(
        helm,
        work,
        &[
            "package",
            dir.to_str().expect("utf-8"),
            "-d",
            out.to_str().expect("utf-8"),
        ],
    );
    out.join(format!("{name}-{version}.tgz"))
}

fn sources(cache_dir: &Path, max_artifact_bytes: u64) -> ChartSources {
    ChartSources::new(
        Arc::new(HyperTransport::new()),
        Some(ChartCache::open(cache_dir, 1 << 30).expect("cache")),
        SourcesConfig {
            max_artifact_bytes,
            request_timeout: Duration::from_secs(20),
        },
    )
}

fn oci(reference: &str) -> ChartSpec {
    serde_json::from_value(serde_json::json!({ "ref": reference })).expect("spec")
}

fn bytes(fetched: &FetchedChart) -> &[u8] {
    match &fetched.content {
        ChartContent::Archive(b) => b,
        ChartContent::Directory(p) => panic!("unexpected directory {}", p.display()),
    }
}

fn tools() -> Option<PathBuf> {
    let Some(helm) = helm().filter(|h| h.is_file()) else {
        println!("SKIP: helm not found (set HELM, or run scripts/test.sh which fetches bin/helm)");
        return None;
    };
    Some(helm)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oci_registry_push_pull_cache() {
    let Some(helm) = tools() else { return };
    if !DockerRegistry::available() {
        println!(
            "SKIP: {} not found (apt-get install docker-registry)",
            DockerRegistry::BINARY
        );
        return;
    }
    let work = tempfile::tempdir().expect("tempdir");
    let storage = work.path().join("storage");
    let tgz_path = package_chart(&helm, work.path(), "app", "0.1.0");
    let tgz = std::fs::read(&tgz_path).expect("packaged chart");
    let mut registry = start_registry(&storage, work.path(), "");
    let port = registry.port;
    let pushed = run(
        &helm,
        work.path(),
        &[
            "push",
            tgz_path.to_str().expect("utf-8"),
            &format!("oci://127.0.0.1:{port}/charts"),
            "--plain-http",
        ],
    );
    let digest = pushed
        .split_whitespace()
        .skip_while(|w| *w != "Digest:")
        .nth(1)
        .unwrap_or_else(|| panic!("no digest in helm push output: {pushed}"))
        .to_string();
    let ctx = FetchContext::default();

    // By digest, into an empty cache.
    let cache_a = work.path().join("cache-a");
    let got = sources(&cache_a, 1 << 26)
        .fetch(&oci(&format!("127.0.0.1:{port}/charts/app@{digest}")), &ctx)
        .await
        .expect("pull by digest");
    assert_eq!(bytes(&got), tgz.as_slice(), "the pushed bytes");
    assert!(!got.origin.from_cache);

    // By tag, into another cache.
    let cache_b = work.path().join("cache-b");
    let got = sources(&cache_b, 1 << 26)
        .fetch(
            &oci(&format!("oci://127.0.0.1:{port}/charts/app:0.1.0")),
            &ctx,
        )
        .await
        .expect("pull by tag");
    assert_eq!(bytes(&got), tgz.as_slice());
    assert_eq!(got.digest, landscaper_sources::archive::sha256_digest(&tgz));

    // A tag that does not exist: fatal.
    let err = sources(&cache_b, 1 << 26)
        .fetch(&oci(&format!("127.0.0.1:{port}/charts/app:9.9.9")), &ctx)
        .await
        .expect_err("missing tag");
    assert!(matches!(err, SourceError::NotFound { .. }), "{err}");
    assert!(!err.is_retryable());

    // Larger than allowed: fatal.
    let err = sources(&work.path().join("cache-small"), 100)
        .fetch(&oci(&format!("127.0.0.1:{port}/charts/app:0.1.0")), &ctx)
        .await
        .expect_err("too large");
    assert!(
        matches!(err, SourceError::TooLarge { limit: 100, .. }),
        "{err}"
    );

    // The registry stops; after a "restart" (a new ChartSources on the same cache folder) the
    // tag and the digest are served from the cache.
    registry.stop();
    let restarted = sources(&cache_b, 1 << 26);
    let got = restarted
        .fetch(&oci(&format!("127.0.0.1:{port}/charts/app:0.1.0")), &ctx)
        .await
        .expect("tag from the cache");
    assert!(got.origin.from_cache);
    assert_eq!(bytes(&got), tgz.as_slice());
    let got = restarted
        .fetch(&oci(&format!("127.0.0.1:{port}/charts/app@{digest}")), &ctx)
        .await
        .expect("digest from the cache");
    assert!(got.origin.from_cache);
    assert_eq!(bytes(&got), tgz.as_slice());
    // Never fetched, registry down: retryable.
    let err = restarted
        .fetch(&oci(&format!("127.0.0.1:{port}/charts/other:1.0.0")), &ctx)
        .await
        .expect_err("unreachable");
    assert!(matches!(err, SourceError::Unreachable { .. }), "{err}");
    assert!(err.is_retryable());

    // The same storage behind htpasswd (Basic) authentication: the pull secret's credentials
    // open it; none or a wrong password are refused (fatal).
    let htpasswd = work.path().join("htpasswd");
    std::fs::write(
        &htpasswd,
        format!("robot:{}\n", bcrypt::hash("s3cret", 4).expect("bcrypt")),
    )
    .expect("htpasswd");
    let secured = start_registry(
        &storage,
        work.path(),
        &format!(
            "auth:\n  htpasswd:\n    realm: sources-test\n    path: {}\n",
            htpasswd.display()
        ),
    );
    let secured_ref = format!("127.0.0.1:{}/charts/app:0.1.0", secured.port);
    let pull_secret = |password: &str| landscaper_sources::SecretData {
        name: "pull".into(),
        secret_type: "kubernetes.io/dockerconfigjson".into(),
        data: [(
            ".dockerconfigjson".to_string(),
            format!(
                r#"{{"auths":{{"127.0.0.1:{}":{{"username":"robot","password":"{password}"}}}}}}"#,
                secured.port
            )
            .into_bytes(),
        )]
        .into(),
    };
    let err = sources(&work.path().join("cache-d"), 1 << 26)
        .fetch(&oci(&secured_ref), &ctx)
        .await
        .expect_err("anonymous");
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
    let wrong = FetchContext {
        pull_secrets: vec![pull_secret("wrong")],
        ..FetchContext::default()
    };
    let err = sources(&work.path().join("cache-d"), 1 << 26)
        .fetch(&oci(&secured_ref), &wrong)
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
    assert!(!err.is_retryable());
    let right = FetchContext {
        pull_secrets: vec![pull_secret("s3cret")],
        ..FetchContext::default()
    };
    let got = sources(&work.path().join("cache-d"), 1 << 26)
        .fetch(&oci(&secured_ref), &right)
        .await
        .expect("with the pull secret");
    assert_eq!(bytes(&got), tgz.as_slice());
    drop(secured);

    // The layer blob is tampered with in the registry's storage: refused.
    let layer_hex = &got.digest["sha256:".len()..];
    let blob = storage
        .join("docker/registry/v2/blobs/sha256")
        .join(&layer_hex[..2])
        .join(layer_hex)
        .join("data");
    assert!(blob.is_file(), "layer blob at {}", blob.display());
    let mut tampered = tgz.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0xff;
    std::fs::write(&blob, &tampered).expect("tamper");
    let registry2 = start_registry(&storage, work.path(), "");
    let err = sources(&work.path().join("cache-c"), 1 << 26)
        .fetch(
            &oci(&format!("127.0.0.1:{}/charts/app:0.1.0", registry2.port)),
            &ctx,
        )
        .await
        .expect_err("tampered blob");
    assert!(matches!(err, SourceError::DigestMismatch { .. }), "{err}");
    assert!(!err.is_retryable());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_repository_with_basic_auth() {
    let Some(helm) = tools() else { return };
    let work = tempfile::tempdir().expect("tempdir");
    let tgz_path = package_chart(&helm, work.path(), "app", "1.2.3");
    let tgz = std::fs::read(&tgz_path).expect("packaged chart");
    let repo = work.path().join("packages");
    // A corrupt archive listed in the index too.
    std::fs::write(
        repo.join("broken-0.1.0.tgz"),
        b"\x1f\x8b\x08 this is not a chart",
    )
    .expect("w");
    run(
        &helm,
        work.path(),
        &["repo", "index", repo.to_str().expect("utf-8")],
    );
    let mut index = std::fs::read_to_string(repo.join("index.yaml")).expect("index");
    index = index.replacen(
        "entries:\n",
        "entries:\n  broken:\n  - apiVersion: v2\n    name: broken\n    urls:\n    - broken-0.1.0.tgz\n    version: 0.1.0\n",
        1,
    );
    std::fs::write(repo.join("index.yaml"), index).expect("index");
    let header = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("chartuser:chartpass")
    );
    let mut server = FileServer::start(repo, Some(header.clone())).expect("repository serves");
    let url = server.url();
    let chart = |name: &str, version: &str| -> ChartSpec {
        serde_json::from_value(serde_json::json!({"helmChartRepo": {
            "helmChartRepoUrl": url, "helmChartName": name, "helmChartVersion": version,
        }}))
        .expect("spec")
    };
    let ctx = FetchContext {
        configurations: [(
            "helmChartRepoCredentials".to_string(),
            serde_json::json!({"auths": [{"url": url, "authHeader": header}]}),
        )]
        .into(),
        ..FetchContext::default()
    };
    let cache = work.path().join("cache");

    let err = sources(&cache, 1 << 26)
        .fetch(&chart("app", "1.2.3"), &FetchContext::default())
        .await
        .expect_err("no credentials");
    assert!(matches!(err, SourceError::AuthRefused { .. }), "{err}");

    let got = sources(&cache, 1 << 26)
        .fetch(&chart("app", "1.2.3"), &ctx)
        .await
        .expect("with authHeader");
    assert_eq!(bytes(&got), tgz.as_slice());
    assert!(!got.origin.from_cache);
    let got = sources(&cache, 1 << 26)
        .fetch(&chart("app", ">=1.0.0 <2.0.0"), &ctx)
        .await
        .expect("by range");
    assert_eq!(bytes(&got), tgz.as_slice());

    let err = sources(&cache, 1 << 26)
        .fetch(&chart("app", "2.0.0"), &ctx)
        .await
        .expect_err("missing version");
    assert!(matches!(err, SourceError::NotFound { .. }), "{err}");
    let err = sources(&cache, 1 << 26)
        .fetch(&chart("broken", "0.1.0"), &ctx)
        .await
        .expect_err("corrupt archive");
    assert!(matches!(err, SourceError::CorruptArchive { .. }), "{err}");
    assert!(err.to_string().contains("broken-0.1.0.tgz"), "{err}");

    // The repository goes away: the cache answers for the exact version and for the range.
    server.stop();
    let got = sources(&cache, 1 << 26)
        .fetch(&chart("app", "1.2.3"), &ctx)
        .await
        .expect("exact from the cache");
    assert!(got.origin.from_cache);
    let got = sources(&cache, 1 << 26)
        .fetch(&chart("app", ">=1.0.0 <2.0.0"), &ctx)
        .await
        .expect("range from the cache");
    assert!(got.origin.from_cache);
    assert_eq!(bytes(&got), tgz.as_slice());
}
