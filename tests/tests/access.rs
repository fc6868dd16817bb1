//! End-to-end access control: reads of non-secret data need no token on loopback; every write
//! without the token is refused; no Secret value or kubeconfig appears in any response or log
//! line without authorisation; the token or the Unix socket in the data folder authorise
//! writes and unredacted reads; a non-loopback listener needs TLS and the token for everything
//! but the health probes.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use landscaper_appliance::commands::client::{Client, ClientError};
use landscaper_e2e::{Daemon, binary, eventually, free_port};
use serde_json::{Value, json};

const PASSWORD: &str = "s3cr3t-VALUE-1234";
/// base64 of PASSWORD, as a Secret's `data` holds it.
const PASSWORD_B64: &str = "czNjcjN0LVZBTFVFLTEyMzQ=";
const KUBECONFIG_TOKEN: &str = "kubeconfig-TOKEN-5678";

fn objects() -> String {
    format!(
        r#"apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: e2e
stringData:
  password: {PASSWORD}
---
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Target
metadata:
  name: cluster
  namespace: e2e
spec:
  type: landscaper.gardener.cloud/kubernetes-cluster
  config:
    kubeconfig: |
      apiVersion: v1
      kind: Config
      clusters: [{{name: c, cluster: {{server: "https://edge.invalid:6443"}}}}]
      contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
      current-context: c
      users: [{{name: u, user: {{token: {KUBECONFIG_TOKEN}}}}}]
---
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: inst
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
                    type: landscaper.gardener.cloud/mock
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
"#
    )
}

fn leaks(text: &str) -> Option<&'static str> {
    [PASSWORD, PASSWORD_B64, KUBECONFIG_TOKEN]
        .into_iter()
        .find(|s| text.contains(s))
}

fn assert_no_leak(what: &str, text: &str) {
    if let Some(secret) = leaks(text) {
        panic!("{what} shows {secret:?} without authorisation:\n{text}");
    }
}

const SECRET_PATH: &str = "/api/v1/namespaces/e2e/secrets/creds";
const TARGET_PATH: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/targets/cluster";
const INST_PATH: &str =
    "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/installations/inst";

fn code_of(result: Result<Value, ClientError>) -> u16 {
    match result {
        Ok(_) => 200,
        Err(ClientError::Api { code, .. }) => code,
        Err(e) => panic!("transport error: {e}"),
    }
}

#[test]
fn secrets_stay_hidden_and_writes_need_the_token_or_the_socket() {
    let daemon = Daemon::start();
    daemon.write("objects.yaml", &objects());
    eventually(
        Duration::from_secs(30),
        "the installation to succeed",
        || {
            daemon
                .get_json(INST_PATH)
                .filter(|i| i["status"]["phase"] == "Succeeded")
        },
    );
    let anonymous = daemon.client();

    // Reads without a token: everything non-secret, Secrets and kubeconfigs redacted.
    let reads = [
        ("application/json", SECRET_PATH.to_string()),
        ("application/json", "/api/v1/secrets".to_string()),
        (
            "application/json;as=Table;v=v1;g=meta.k8s.io",
            "/api/v1/namespaces/e2e/secrets".to_string(),
        ),
        ("application/json", TARGET_PATH.to_string()),
        (
            "application/json",
            "/apis/landscaper.gardener.cloud/v1alpha1/targets".to_string(),
        ),
        (
            "application/json",
            "/api/v1/secrets?watch=true&timeoutSeconds=1".to_string(),
        ),
        (
            "application/json",
            "/apis/landscaper.gardener.cloud/v1alpha1/targets?watch=true&timeoutSeconds=1"
                .to_string(),
        ),
        (
            "application/json",
            "/apis/landscaper.gardener.cloud/v1alpha1/installations".to_string(),
        ),
        (
            "application/json",
            "/apis/landscaper.gardener.cloud/v1alpha1/deployitems".to_string(),
        ),
        (
            "application/json",
            "/apis/landscaper.gardener.cloud/v1alpha1/dataobjects".to_string(),
        ),
        (
            "application/json",
            "/appliance/v1/history?limit=10000".to_string(),
        ),
        ("text/html", "/".to_string()),
        ("text/html", "/ui/installations/e2e/inst".to_string()),
        ("text/plain", "/metrics".to_string()),
    ];
    for (accept, path) in &reads {
        let (code, body) = anonymous.get(path, accept).unwrap();
        assert!(
            (200..300).contains(&code),
            "GET {path} answered {code} without a token"
        );
        assert_no_leak(&format!("GET {path}"), &String::from_utf8_lossy(&body));
    }
    let shown = anonymous.get_json(SECRET_PATH).unwrap();
    assert_eq!(shown["data"]["password"], "PHJlZGFjdGVkPg==");

    // Writes without the token, or with a wrong one, are refused.
    let annotate =
        json!({"metadata": {"annotations": {"landscaper.gardener.cloud/operation": "reconcile"}}});
    for client in [daemon.client(), daemon.client().with_token("0".repeat(64))] {
        assert_eq!(code_of(client.patch_json(INST_PATH, &annotate)), 401);
        assert_eq!(code_of(client.delete(SECRET_PATH)), 401);
        assert_eq!(code_of(client.delete(TARGET_PATH)), 401);
    }
    let (code, body) = anonymous
        .get("/appliance/v1/backup", "application/octet-stream")
        .unwrap();
    assert_eq!(code, 401, "a backup holds every secret");
    assert_no_leak("backup", &String::from_utf8_lossy(&body));
    // The status page's actions need the token too.
    let refused = post_form(
        &daemon.server,
        "/ui/actions",
        "namespace=e2e&name=inst&operation=reconcile&token=wrong",
    );
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    let inst = anonymous.get_json(INST_PATH).unwrap();
    assert!(
        inst["metadata"]["annotations"]["landscaper.gardener.cloud/operation"].is_null(),
        "nothing was changed: {inst}"
    );

    // The token authorises writes and unredacted reads.
    let token = std::fs::read_to_string(daemon.data.join("api-token")).unwrap();
    let authorised = daemon.client().with_token(token.trim());
    let secret = get_with_token(&daemon.server, SECRET_PATH, token.trim());
    assert_eq!(secret["data"]["password"], PASSWORD_B64);
    let target = get_with_token(&daemon.server, TARGET_PATH, token.trim());
    assert!(
        target["spec"]["config"]["kubeconfig"]
            .as_str()
            .is_some_and(|k| k.contains(KUBECONFIG_TOKEN)),
        "{target}"
    );
    assert_eq!(code_of(authorised.patch_json(INST_PATH, &annotate)), 200);

    // The Unix socket authorises by file permissions, without a token.
    let socket = daemon.data.join("api.sock");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&socket).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o660);
    let over_socket = Client::unix(&socket);
    let secret = over_socket.get_json(SECRET_PATH).unwrap();
    assert_eq!(secret["data"]["password"], PASSWORD_B64);
    assert_eq!(code_of(over_socket.patch_json(INST_PATH, &annotate)), 200);

    // The CLI finds the socket by itself when pointed at the data folder.
    let out = Command::new(binary())
        .args(["get", "secrets", "-n", "e2e", "-o", "json"])
        .env("LANDSCAPER_APPLIANCE_DATA", &daemon.data)
        .env_remove("LANDSCAPER_APPLIANCE_SERVER")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(PASSWORD_B64),
        "the CLI used the socket: {stdout}"
    );

    // Nothing secret reached the log.
    assert_no_leak("the daemon log", &daemon.logs());
}

/// A form POST over plain HTTP; the raw answer.
fn post_form(server: &str, path: &str, body: &str) -> String {
    let address = server.trim_start_matches("http://");
    let mut s = TcpStream::connect(address).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
}

/// A GET with the token (the CLI client only sends it with writes).
fn get_with_token(server: &str, path: &str, token: &str) -> Value {
    let address = server.trim_start_matches("http://");
    let mut s = TcpStream::connect(address).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nAccept: application/json\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

struct TlsMaterial {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

fn tls_material() -> TlsMaterial {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    TlsMaterial {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

/// One HTTPS request to 127.0.0.1:`port` trusting `ca_pem`; the status code and body.
fn https(port: u16, ca_pem: &str, path: &str, token: Option<&str>) -> (u16, String) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = ServerName::try_from("127.0.0.1").unwrap().to_owned();
    let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut tls = rustls::StreamOwned::new(connection, socket);
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        tls,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    // The server may close without close_notify; what arrived is the answer.
    let _ = tls.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).to_string();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    (code, text)
}

fn write_file(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn off_loopback_the_api_needs_tls_and_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let (manifests, data) = (dir.path().join("manifests"), dir.path().join("data"));
    std::fs::create_dir_all(&manifests).unwrap();
    write_file(&manifests.join("objects.yaml"), &objects());
    let port = free_port();
    let config = dir.path().join("config.yaml");

    // Without TLS a non-loopback address is refused, naming the field.
    write_file(
        &config,
        &format!(
            "manifestsDir: {}\ndataDir: {}\nlisten: 0.0.0.0:{port}\n",
            manifests.display(),
            data.display()
        ),
    );
    let refused = Command::new(binary())
        .args(["serve", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("listen") && stderr.contains("tls.certFile"),
        "{stderr}"
    );

    let material = tls_material();
    write_file(&dir.path().join("tls.crt"), &material.cert_pem);
    write_file(&dir.path().join("tls.key"), &material.key_pem);
    write_file(
        &config,
        &format!(
            "manifestsDir: {}\ndataDir: {}\nlisten: 0.0.0.0:{port}\ntls:\n  certFile: {}\n  keyFile: {}\n",
            manifests.display(),
            data.display(),
            dir.path().join("tls.crt").display(),
            dir.path().join("tls.key").display()
        ),
    );
    let log = std::fs::File::create(dir.path().join("daemon.log")).unwrap();
    let mut child = Command::new(binary())
        .args(["serve", "--config"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let socket = Client::unix(&data.join("api.sock"));
    eventually(Duration::from_secs(30), "the daemon to be ready", || {
        socket
            .get("/readyz", "text/plain")
            .ok()
            .filter(|(c, _)| *c == 200)
    });
    let token = std::fs::read_to_string(data.join("api-token")).unwrap();
    let token = token.trim();

    let (code, _) = https(port, &material.ca_pem, "/readyz", None);
    assert_eq!(code, 200, "probes stay open");
    for path in [INST_PATH, "/", "/metrics", "/api/v1/namespaces"] {
        let (code, body) = https(port, &material.ca_pem, path, None);
        assert_eq!(code, 401, "GET {path} without a token off loopback: {body}");
        assert_no_leak(path, &body);
    }
    let (code, body) = https(port, &material.ca_pem, INST_PATH, Some(token));
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"name\":\"inst\""), "{body}");
    // Plain HTTP on the TLS port gets no API answer.
    let mut plain = TcpStream::connect(("127.0.0.1", port)).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let _ = write!(plain, "GET {INST_PATH} HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!String::from_utf8_lossy(&answer).contains("\"name\":\"inst\""));

    let _ = child.kill();
    let _ = child.wait();
    let logs = std::fs::read_to_string(dir.path().join("daemon.log")).unwrap_or_default();
    assert_no_leak("the daemon log", &logs);
    assert!(!logs.contains(token), "the API token is never logged");
}
