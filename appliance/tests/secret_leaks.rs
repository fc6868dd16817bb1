//! Credentials never leak to readers without the token: malformed Secrets and Targets holding a
//! marker value are ingested, and the marker must appear in no error, `ManifestFile` status,
//! event, API answer (object, list, table), status page or log line.

mod ingest_common;

use std::io::Write as _;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use ingest_common::*;
use landscaper_appliance::daemon::api::{ApiState, Readiness};
use landscaper_store::Kind;
use tower::ServiceExt as _;

const MARKER: &str = "SeCrEtMaRkEr";
/// The marker as a number (YAML numbers are quoted differently by serde).
const NUMBER: &str = "424242";

/// Manifests with malformed Secrets and Targets, each in its own file.
fn malformed_manifests() -> Vec<(String, String)> {
    let secret = |body: &str| {
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: ns\n{body}")
    };
    let target = |spec: &str| {
        format!(
            "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Target\nmetadata:\n  name: t\n  namespace: ns\nspec:\n{spec}"
        )
    };
    let cluster = "  type: landscaper.gardener.cloud/kubernetes-cluster\n";
    let mut files = Vec::new();
    for field in ["data", "stringData"] {
        for value in [
            MARKER.to_string(),
            format!("\"{MARKER}\""),
            format!("'{MARKER}'"),
            format!("|\n    password: {MARKER}"),
            NUMBER.to_string(),
            format!("{NUMBER}.5"),
            format!("[{MARKER}]"),
            format!("\n  - {MARKER}"),
            format!("\n  key: {NUMBER}"),
            format!("\n  key: -{NUMBER}"),
            format!("\n  key: {NUMBER}.5"),
            "\n  key: true".to_string(),
            format!("\n  key: [{MARKER}]"),
            format!("\n  key: {{nested: {MARKER}}}"),
            format!("\n  key: {MARKER}!"),
            format!("\n  key: {MARKER}\n  other: {NUMBER}"),
            // YAML syntax errors in the middle of a value.
            format!("\n  key: \"{MARKER}"),
            format!("\n  key: {MARKER}: {MARKER}"),
            format!("\n  key: '{MARKER}\n"),
            format!("\n  key: {MARKER}\n    bad: {MARKER}"),
            format!("\n  key: \"\\q{MARKER}\""),
            format!("\n  key: {{{MARKER}"),
            format!("\n  key: [{MARKER}"),
            format!("\n  key: &a {MARKER}\n  key2: *b"),
            format!("\n  key: !!int {MARKER}"),
            format!("\n  key: \"{MARKER}\"\n  key: \"{MARKER}\""),
        ] {
            // Any string is a good `stringData` value; only `data` must be base64.
            if field == "stringData" && value.ends_with('!') {
                continue;
            }
            files.push(secret(&format!("{field}: {value}\n")));
        }
    }
    files.push(secret(&format!("type: {{t: {MARKER}}}\n")));
    files.push(secret(&format!("immutable: {MARKER}\n")));
    files.push(secret(&format!(
        "  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: {{data: {MARKER}}}\n"
    )));
    for kubeconfig in [
        format!("\n      users: [{{user: {{token: {MARKER}}}}}]"),
        format!("[{MARKER}]"),
        NUMBER.to_string(),
        format!("{{secretRef: {{name: s}}, token: {MARKER}}}"),
        format!("{{secretRef: {MARKER}}}"),
        format!("{{secretRef: {{name: s, token: {MARKER}}}}}"),
        format!("\"{MARKER}"),
    ] {
        files.push(target(&format!(
            "{cluster}  config:\n    kubeconfig: {kubeconfig}\n"
        )));
    }
    files.push(target(&format!(
        "{cluster}  config: {{kubeconfig: {MARKER}}}\n  secretRef: {{name: s}}\n"
    )));
    files.push(target(&format!("  type: {{t: {MARKER}}}\n")));
    files.push(target(&format!("{cluster}  secretRef: {MARKER}\n")));
    files.push(target(&format!("  {MARKER}\n")));
    files
        .into_iter()
        .enumerate()
        .map(|(i, content)| (format!("bad-{i:03}.yaml"), content))
        .collect()
}

/// Manifests that are valid and hold the marker in credentials: served redacted.
fn valid_manifests() -> Vec<(String, String)> {
    vec![
        (
            "secret.yaml".into(),
            format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: good\n  namespace: ns\nstringData:\n  password: {MARKER}\n"
            ),
        ),
        (
            "target-string.yaml".into(),
            format!(
                "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Target\nmetadata:\n  name: string\n  namespace: ns\nspec:\n  type: landscaper.gardener.cloud/kubernetes-cluster\n  config:\n    kubeconfig: |\n      users: [{{user: {{token: {MARKER}}}}}]\n"
            ),
        ),
        (
            // A type of its own keeps a free-form config; its kubeconfig is still redacted.
            "target-map.yaml".into(),
            format!(
                "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Target\nmetadata:\n  name: map\n  namespace: ns\nspec:\n  type: example.com/custom\n  config:\n    kubeconfig:\n      users: [{{user: {{token: {MARKER}}}}}]\n"
            ),
        ),
        (
            "target-config-string.yaml".into(),
            format!(
                "apiVersion: landscaper.gardener.cloud/v1alpha1\nkind: Target\nmetadata:\n  name: config-string\n  namespace: ns\nspec:\n  type: example.com/custom\n  config: \"token: {MARKER}\"\n"
            ),
        ),
    ]
}

/// Everything logged in this test binary.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capture_logs() -> Captured {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .init();
    captured
}

async fn get(router: &axum::Router, path: &str, accept: &str) -> (StatusCode, String) {
    let request = Request::builder()
        .uri(path)
        .header("host", "localhost")
        .header("accept", accept)
        .body(Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}

fn assert_no_marker(what: &str, text: &str) {
    assert!(
        !text.contains(MARKER) && !text.contains(NUMBER),
        "{what} shows a credential:\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_credentials_never_show_their_content() {
    let logs = capture_logs();
    let env = Env::new();
    let bad = malformed_manifests();
    for (name, content) in bad.iter().chain(valid_manifests().iter()) {
        env.write(name, content);
    }
    let report = env.ingestor().rescan().await.unwrap();
    assert_eq!(report.failed, bad.len(), "{:?}", report.errors);
    assert_eq!(
        report.applied,
        valid_manifests().len(),
        "{:?}",
        report.errors
    );
    for error in &report.errors {
        assert_no_marker("a scan error", &error.to_string());
        assert_no_marker("a scan error", &format!("{error:?}"));
    }
    // Every rejected file says where and what (but not the value).
    for (name, _) in &bad {
        let file = env.manifest_file(name).unwrap();
        let status = file["status"].to_string();
        assert_no_marker(&format!("the status of {name}"), &status);
        assert!(
            file["status"]["lastError"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{name}: {status}"
        );
    }
    assert_eq!(env.count(Kind::Target), 3);

    let state = ApiState::new(env.store.clone(), Readiness::ready());
    let router = landscaper_appliance::daemon::api::router(state.clone())
        .merge(landscaper_appliance::daemon::ui::routes(state));
    const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
    const FILES: &str = "/apis/appliance.landscaper-appliance.io/v1alpha1/manifestfiles";
    const TARGETS: &str = "/apis/landscaper.gardener.cloud/v1alpha1";
    let mut paths = vec![
        "/api/v1/events".to_string(),
        "/api/v1/namespaces/default/events".to_string(),
        "/api/v1/secrets".to_string(),
        "/api/v1/namespaces/ns/secrets/good".to_string(),
        format!("{TARGETS}/targets"),
        format!("{TARGETS}/namespaces/ns/targets/map"),
        format!("{TARGETS}/namespaces/ns/targets/string"),
        format!("{TARGETS}/namespaces/ns/targets/config-string"),
        FILES.to_string(),
        "/".to_string(),
        "/?fragment=1".to_string(),
    ];
    for (name, _) in &bad {
        paths.push(format!(
            "{FILES}/{}",
            landscaper_appliance::daemon::ingest::manifest_file_name(name)
        ));
    }
    for path in &paths {
        for accept in ["application/json", TABLE, "*/*"] {
            let (status, body) = get(&router, path, accept).await;
            assert!(status.is_success(), "{path} ({accept}): {status} {body}");
            assert_no_marker(&format!("GET {path} ({accept})"), &body);
        }
    }
    // The API shows the errors (so the test looks at the right thing).
    let (_, files) = get(&router, FILES, "application/json").await;
    assert!(
        files.contains("invalid type: a string, expected a map"),
        "{files}"
    );
    let (_, events) = get(&router, "/api/v1/events", "application/json").await;
    assert!(events.contains("bad-000.yaml"), "{events}");

    let logged = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(
        logged.contains("bad-000.yaml"),
        "the log holds the scan: {logged}"
    );
    assert_no_marker("the log", &logged);
    std::io::stderr().flush().ok();
}
