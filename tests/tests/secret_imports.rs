//! End-to-end: values imported from a Secret stay secret where the appliance copies them (the
//! import DataObjects of the installation), and the API only answers to its own host names.

use std::io::{Read, Write};
use std::time::Duration;

use landscaper_e2e::{Daemon, eventually};
use serde_json::Value;

const MARKER: &str = "SeCrEtImPoRtMaRkEr";

fn manifests() -> String {
    format!(
        r#"apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: e2e
stringData:
  password: {MARKER}
---
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: DataObject
metadata:
  name: plain
  namespace: e2e
data: visible-value
---
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: root
  namespace: e2e
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  imports:
    data:
      - name: password
        secretRef: {{name: creds, key: password}}
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchema: "https://json-schema.org/draft/2019-09/schema"
          imports:
            - name: password
              schema: {{type: string}}
          exports:
            - name: copied
              schema: {{type: string}}
            - name: endpoint
              type: target
              targetType: example.com/service
          deployExecutions:
            - name: default
              type: GoTemplate
              template: |
                deployItems:
                  - name: uses-password
                    type: landscaper.gardener.cloud/mock
                    config:
                      apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                      kind: ProviderConfiguration
                      providerStatus:
                        apiVersion: mock.deployer.landscaper.gardener.cloud/v1alpha1
                        kind: ProviderStatus
                        password: {{{{ .imports.password | quote }}}}
                      export:
                        echoed: {{{{ .imports.password | quote }}}}
          exportExecutions:
            - name: default
              type: GoTemplate
              template: |
                exports:
                  copied: {{{{ index .values.deployitems "uses-password" "echoed" | quote }}}}
                  endpoint:
                    type: example.com/service
                    config:
                      token: {{{{ .values.dataobjects.password | quote }}}}
  exports:
    data:
      - name: copied
        dataRef: copied-password
    targets:
      - name: endpoint
        target: service-endpoint
---
apiVersion: landscaper.gardener.cloud/v1alpha1
kind: Installation
metadata:
  name: other
  namespace: e2e
  annotations:
    landscaper.gardener.cloud/operation: reconcile
spec:
  imports:
    data:
      - name: value
        dataRef: plain
  blueprint:
    inline:
      filesystem:
        blueprint.yaml: |
          apiVersion: landscaper.gardener.cloud/v1alpha1
          kind: Blueprint
          jsonSchema: "https://json-schema.org/draft/2019-09/schema"
          imports:
            - name: value
              schema: {{type: string}}
"#
    )
}

const DATA_OBJECTS: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e/dataobjects";
const FROM_SECRET: &str = "appliance.landscaper-appliance.io/from-secret";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

fn import_object<'a>(list: &'a Value, context: &str) -> Option<&'a Value> {
    list["items"].as_array()?.iter().find(|o| {
        o["metadata"]["labels"]["data.landscaper.gardener.cloud/context"] == context
            && o["metadata"]["labels"]["data.landscaper.gardener.cloud/sourceType"] == "import"
    })
}

/// A raw HTTP/1.1 GET with the given Host header; the status code.
fn status_with_host(daemon: &Daemon, host: &str) -> (u16, String) {
    let address = daemon.server.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET /api/v1/namespaces HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

#[test]
fn values_imported_from_secrets_are_redacted_for_anonymous_readers() {
    let daemon = Daemon::start();
    daemon.write("all.yaml", &manifests());
    let anonymous = daemon.client();
    // Requests over the Unix socket are authorised (the client sends no token with reads).
    let authorised =
        landscaper_appliance::commands::client::Client::unix(&daemon.data.join("api.sock"));

    // The installation publishes its import into its own scope, marked as coming from a Secret.
    let revealed = eventually(Duration::from_secs(60), "the import DataObject", || {
        let list = authorised.get_json(DATA_OBJECTS).ok()?;
        import_object(&list, "Inst.root").cloned()
    });
    assert_eq!(revealed["data"], MARKER, "{revealed}");
    assert_eq!(revealed["metadata"]["annotations"][FROM_SECRET], "true");
    // An installation without Secret imports publishes plain DataObjects.
    let plain = eventually(Duration::from_secs(60), "the plain import", || {
        let list = anonymous.get_json(DATA_OBJECTS).ok()?;
        import_object(&list, "Inst.other").cloned()
    });
    assert_eq!(plain["data"], "visible-value", "{plain}");
    assert!(plain["metadata"]["annotations"][FROM_SECRET].is_null());

    // The installation renders the Secret value into its deploy item's config, and its export
    // templates copy it into an export DataObject and an exported Target.
    const LS: &str = "/apis/landscaper.gardener.cloud/v1alpha1/namespaces/e2e";
    eventually(Duration::from_secs(60), "root to succeed", || {
        let root = authorised
            .get_json(&format!("{LS}/installations/root"))
            .ok()?;
        (root["status"]["phase"] == "Succeeded").then_some(())
    });
    let copies = [
        format!("{LS}/executions"),
        format!("{LS}/deployitems"),
        format!("{LS}/dataobjects/copied-password"),
        format!("{LS}/targets/service-endpoint"),
    ];
    for path in &copies {
        let (status, body) = authorised.get(path, "application/json").unwrap();
        let body = String::from_utf8_lossy(&body);
        assert_eq!(status, 200, "{path}: {body}");
        assert!(body.contains(MARKER), "{path} (authorised): {body}");
        assert!(body.contains(FROM_SECRET), "{path} is not marked: {body}");
        for accept in ["application/json", TABLE] {
            let (status, body) = anonymous.get(path, accept).unwrap();
            let body = String::from_utf8_lossy(&body);
            assert_eq!(status, 200, "{path}: {body}");
            assert!(
                !body.contains(MARKER),
                "GET {path} ({accept}) shows the secret: {body}"
            );
        }
    }

    let name = revealed["metadata"]["name"].as_str().unwrap();
    let paths = [
        DATA_OBJECTS.to_string(),
        format!("{DATA_OBJECTS}/{name}"),
        "/apis/landscaper.gardener.cloud/v1alpha1/dataobjects".to_string(),
        "/api/v1/namespaces/e2e/secrets/creds".to_string(),
        "/api/v1/events".to_string(),
    ];
    for path in &paths {
        for accept in ["application/json", TABLE] {
            let (status, body) = anonymous.get(path, accept).unwrap();
            let body = String::from_utf8_lossy(&body);
            assert_eq!(status, 200, "{path}: {body}");
            assert!(
                !body.contains(MARKER),
                "GET {path} ({accept}) shows the secret: {body}"
            );
        }
    }
    let shown = anonymous
        .get_json(&format!("{DATA_OBJECTS}/{name}"))
        .unwrap();
    assert_eq!(shown["data"], "<redacted>", "{shown}");
    // A watch shows it redacted too.
    let (status, body) = anonymous
        .get(
            &format!("{DATA_OBJECTS}?watch=true&timeoutSeconds=1"),
            "application/json",
        )
        .unwrap();
    let body = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(name), "{body}");
    assert!(!body.contains(MARKER), "the watch shows the secret: {body}");
    // The status page.
    for path in [
        "/",
        "/ui/installations/e2e/root",
        "/ui/installations/e2e/other",
    ] {
        let (status, body) = anonymous.get(path, "text/html").unwrap();
        let body = String::from_utf8_lossy(&body);
        assert_eq!(status, 200, "{path}: {body}");
        assert!(!body.contains(MARKER), "{path} shows the secret");
    }
    assert!(
        !daemon.logs().contains(MARKER),
        "the log shows the secret:\n{}",
        daemon.logs()
    );
}

#[test]
fn the_api_answers_only_to_its_own_host_names() {
    let daemon = Daemon::start();
    let address = daemon.server.trim_start_matches("http://").to_string();
    let port = address.rsplit_once(':').unwrap().1.to_string();
    for host in [
        address.clone(),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "localhost".to_string(),
    ] {
        let (status, answer) = status_with_host(&daemon, &host);
        assert_eq!(status, 200, "{host}: {answer}");
    }
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_string(),
        format!("localhost.evil.example:{port}"),
    ] {
        let (status, answer) = status_with_host(&daemon, &host);
        assert_eq!(status, 421, "{host}: {answer}");
        assert!(answer.contains("DNS rebinding"), "{answer}");
    }
    // The CLI still works.
    let out = daemon.cli(&["get", "installations", "-A"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn allowed_hosts_from_the_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with_config(
        dir.path(),
        "allowedHosts: [appliance.example.com, \"*.apps.example.com\"]\n",
    );
    for (host, status) in [
        ("appliance.example.com", 200),
        ("appliance.example.com:8080", 200),
        ("x.apps.example.com", 200),
        ("example.com", 421),
    ] {
        assert_eq!(status_with_host(&daemon, host).0, status, "{host}");
    }
}
