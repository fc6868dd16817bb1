//! The read API over real HTTP: the router served on 127.0.0.1:0 against a temporary store,
//! spoken to with a minimal HTTP/1.1 client on a raw TCP stream.

use std::time::Duration;

use landscaper_appliance::daemon::api::{ApiOptions, ApiState, Readiness, router, serve};
use landscaper_store::{Kind, ObjectKey, Store, StoreOptions, Transaction};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

const LS: &str = "/apis/landscaper.gardener.cloud/v1alpha1";
const FILES: &str = "/apis/appliance.landscaper-appliance.io/v1alpha1";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
/// The secret's clear text, and its base64 as stored in `data`.
const SECRET_CLEAR: &str = "hunter2-very-secret";
const SECRET_B64: &str = "aHVudGVyMi12ZXJ5LXNlY3JldA==";
const SECRET_STRING: &str = "string-data-secret-value";

// ---------------------------------------------------------------------------------------------
// A minimal HTTP/1.1 client.

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is no JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

async fn send_head(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> BufReader<TcpStream> {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    if method != "GET" {
        request
            .push_str("Content-Length: 2\r\nContent-Type: application/merge-patch+json\r\n\r\n{}");
    } else {
        request.push_str("\r\n");
    }
    stream.write_all(request.as_bytes()).await.expect("write");
    BufReader::new(stream)
}

async fn read_head(reader: &mut BufReader<TcpStream>) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).await.expect("status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).await.expect("header line");
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        let (k, v) = trimmed.split_once(':').expect("header");
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    (status, headers)
}

fn is_chunked(headers: &[(String, String)]) -> bool {
    headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"))
}

/// Reads one chunk of a chunked body; `None` at the end.
async fn read_chunk(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut line = String::new();
    if reader.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let size = usize::from_str_radix(line.trim(), 16).ok()?;
    let mut data = vec![0; size + 2];
    reader.read_exact(&mut data).await.ok()?;
    data.truncate(size);
    (size > 0).then_some(data)
}

async fn request_with(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Response {
    let mut reader = send_head(addr, method, path, headers).await;
    let (status, headers) = read_head(&mut reader).await;
    let mut body = Vec::new();
    if is_chunked(&headers) {
        while let Some(chunk) = read_chunk(&mut reader).await {
            body.extend(chunk);
        }
    } else {
        reader.read_to_end(&mut body).await.expect("body");
    }
    Response {
        status,
        headers,
        body,
    }
}

async fn get(addr: std::net::SocketAddr, path: &str) -> Response {
    request_with(addr, "GET", path, &[]).await
}

/// An open watch stream.
struct Watch {
    status: u16,
    headers: Vec<(String, String)>,
    reader: BufReader<TcpStream>,
    pending: Vec<u8>,
    ended: bool,
}

impl Watch {
    async fn open(addr: std::net::SocketAddr, path: &str, headers: &[(&str, &str)]) -> Watch {
        let mut reader = send_head(addr, "GET", path, headers).await;
        let (status, headers) = read_head(&mut reader).await;
        let mut watch = Watch {
            status,
            headers,
            reader,
            pending: Vec::new(),
            ended: false,
        };
        if !is_chunked(&watch.headers) {
            watch.reader.read_to_end(&mut watch.pending).await.ok();
            watch.ended = true;
        }
        watch
    }

    /// The next event, `None` when the stream ended; panics after 10 s without one.
    async fn next(&mut self) -> Option<Value> {
        self.next_within(Duration::from_secs(10))
            .await
            .expect("no watch event within 10s")
    }

    /// `Err` on timeout, `Ok(None)` at the end of the stream.
    async fn next_within(&mut self, limit: Duration) -> Result<Option<Value>, ()> {
        tokio::time::timeout(limit, async {
            loop {
                if let Some(pos) = self.pending.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = self.pending.drain(..=pos).collect();
                    return Some(serde_json::from_slice(&line).expect("event is JSON"));
                }
                if self.ended {
                    return None;
                }
                match read_chunk(&mut self.reader).await {
                    Some(chunk) => self.pending.extend(chunk),
                    None => self.ended = true,
                }
            }
        })
        .await
        .map_err(|_| ())
    }

    async fn expect_quiet(&mut self, limit: Duration) {
        if let Ok(event) = self.next_within(limit).await {
            panic!("expected no event, got {event:?}");
        }
    }
}

fn kind_and_name(event: &Value) -> (String, String) {
    (
        event["type"].as_str().unwrap_or_default().to_string(),
        event["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

// ---------------------------------------------------------------------------------------------
// Fixture.

struct Server {
    addr: std::net::SocketAddr,
    store: Store,
    readiness: Readiness,
    stop: CancellationToken,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
    _dir: tempfile::TempDir,
}

async fn start_with(options: StoreOptions, api: ApiOptions) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("store.redb"), options).unwrap();
    let readiness = Readiness::default();
    let stop = CancellationToken::new();
    let state = ApiState::new(store.clone(), readiness.clone())
        .with_shutdown(stop.clone())
        .with_options(api);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = tokio::spawn(serve(
        listener,
        router(state),
        stop.clone().cancelled_owned(),
    ));
    Server {
        addr,
        store,
        readiness,
        stop,
        served,
        _dir: dir,
    }
}

fn store_options() -> StoreOptions {
    StoreOptions {
        durable: false,
        ..StoreOptions::default()
    }
}

async fn start() -> Server {
    start_with(store_options(), ApiOptions::default()).await
}

fn installation(ns: &str, name: &str, labels: Value, phase: Option<&str>) -> Value {
    let mut o = json!({
        "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"blueprint": {"ref": {"resourceName": "blueprint"}}},
    });
    if let Some(phase) = phase {
        o["status"] = json!({"phase": phase, "executionRef": {"name": format!("{name}-exec"), "namespace": ns}});
    }
    o
}

fn secret(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": ns, "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration":
                format!("{{\"data\":{{\"password\":\"{SECRET_B64}\"}}}}")}},
        "type": "Opaque",
        "data": {"password": SECRET_B64},
        "stringData": {"token": SECRET_STRING},
    })
}

async fn seed(store: &Store) {
    let objects = [
        installation(
            "demo",
            "root",
            json!({"app": "shop", "tier": "a"}),
            Some("Succeeded"),
        ),
        installation("demo", "child", json!({"app": "shop", "tier": "b"}), None),
        installation("other", "lonely", json!({"app": "blog"}), Some("Failed")),
        json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Target",
            "metadata": {"name": "cluster", "namespace": "demo",
                "labels": {"data.landscaper.gardener.cloud/context": "ctx"}},
            "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster", "config": {"kubeconfig": "x"}}}),
        json!({"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "DataObject",
            "metadata": {"name": "do1", "namespace": "demo",
                "labels": {"data.landscaper.gardener.cloud/key": "k1"}},
            "data": {"a": 1}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "demo"}, "data": {"a": "b", "c": "d"}}),
        secret("demo", "creds"),
        json!({"apiVersion": "appliance.landscaper-appliance.io/v1alpha1", "kind": "ManifestFile",
            "metadata": {"name": "demo-root.yaml"},
            "spec": {"path": "demo/root.yaml"},
            "status": {"sha256": "ab12", "objects": [
                {"apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation", "namespace": "demo", "name": "root"}]}}),
        json!({"apiVersion": "appliance.landscaper-appliance.io/v1alpha1", "kind": "ManifestFile",
            "metadata": {"name": "broken.yaml"},
            "spec": {"path": "broken.yaml"},
            "status": {"lastError": {"line": 3, "column": 7, "message": "mapping values are not allowed here"}}}),
    ];
    let mut tx = Transaction::new();
    for o in objects {
        tx = tx.create(o);
    }
    store.commit(tx).await.unwrap();
}

async fn set_phase(store: &Store, ns: &str, name: &str, phase: &str) -> u64 {
    let key = ObjectKey::new(Kind::Installation, ns, name);
    let mut o = store.get(&key).unwrap().expect("installation exists");
    o["status"]["phase"] = json!(phase);
    store
        .commit(Transaction::new().update(o))
        .await
        .unwrap()
        .revision
}

async fn set_labels(store: &Store, ns: &str, name: &str, labels: Value) -> u64 {
    let key = ObjectKey::new(Kind::Installation, ns, name);
    let mut o = store.get(&key).unwrap().expect("installation exists");
    o["metadata"]["labels"] = labels;
    store
        .commit(Transaction::new().update(o))
        .await
        .unwrap()
        .revision
}

async fn delete(store: &Store, kind: Kind, ns: &str, name: &str) -> u64 {
    store
        .commit(Transaction::new().delete(ObjectKey::new(kind, ns, name), None))
        .await
        .unwrap()
        .revision
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            let ns = i["metadata"]["namespace"].as_str().unwrap_or_default();
            let name = i["metadata"]["name"].as_str().unwrap_or_default();
            if ns.is_empty() {
                name.to_string()
            } else {
                format!("{ns}/{name}")
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Tests.

#[tokio::test(flavor = "multi_thread")]
async fn legacy_discovery_has_kube_apiserver_shapes() {
    let s = start().await;
    let api = get(s.addr, "/api").await;
    assert_eq!(api.status, 200);
    assert_eq!(api.header("content-type"), Some("application/json"));
    let api = api.json();
    assert_eq!(api["kind"], "APIVersions");
    assert_eq!(api["versions"], json!(["v1"]));
    assert_eq!(
        api["serverAddressByClientCIDRs"][0]["clientCIDR"],
        "0.0.0.0/0"
    );

    let core = get(s.addr, "/api/v1").await.json();
    assert_eq!(core["kind"], "APIResourceList");
    assert_eq!(core["groupVersion"], "v1");
    let core_names: Vec<&str> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        core_names,
        ["configmaps", "events", "namespaces", "secrets"]
    );
    assert_eq!(core["resources"][0]["shortNames"], json!(["cm"]));
    assert_eq!(core["resources"][1]["kind"], "Event");
    assert_eq!(core["resources"][3]["kind"], "Secret");
    assert_eq!(core["resources"][3]["namespaced"], true);

    let groups = get(s.addr, "/apis").await.json();
    assert_eq!(groups["kind"], "APIGroupList");
    let group_names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        group_names,
        [
            "landscaper.gardener.cloud",
            "appliance.landscaper-appliance.io"
        ]
    );
    assert_eq!(
        groups["groups"][0]["preferredVersion"],
        json!({"groupVersion": "landscaper.gardener.cloud/v1alpha1", "version": "v1alpha1"})
    );

    let group = get(s.addr, "/apis/landscaper.gardener.cloud").await.json();
    assert_eq!(group["kind"], "APIGroup");
    assert_eq!(group["name"], "landscaper.gardener.cloud");

    let resources = get(s.addr, LS).await.json();
    assert_eq!(
        resources["groupVersion"],
        "landscaper.gardener.cloud/v1alpha1"
    );
    let inst = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "installations")
        .expect("installations");
    assert_eq!(
        *inst,
        json!({"name": "installations", "singularName": "installation", "namespaced": true,
            "kind": "Installation", "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["inst"],
            "categories": ["landscaper"]})
    );
    let files = get(s.addr, FILES).await.json();
    assert_eq!(files["resources"][0]["name"], "manifestfiles");
    assert_eq!(files["resources"][0]["namespaced"], false);
    assert_eq!(files["resources"][1]["name"], "transportarchives");
    assert_eq!(files["resources"][1]["namespaced"], false);
    assert_eq!(files["resources"][1]["shortNames"], json!(["ta"]));

    for missing in [
        "/apis/apps",
        "/apis/apps/v1",
        "/apis/landscaper.gardener.cloud/v1",
        "/api/v2",
    ] {
        let r = get(s.addr, missing).await;
        assert_eq!(r.status, 404, "{missing}");
        assert_eq!(r.json()["kind"], "Status");
    }

    let version = get(s.addr, "/version").await.json();
    assert_eq!(version["major"], "1");
    assert!(
        version["gitVersion"].as_str().unwrap().starts_with("v1."),
        "{version}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn aggregated_discovery_is_served_on_request() {
    let s = start().await;
    let r = request_with(s.addr, "GET", "/apis", &[("Accept", AGGREGATED)]).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    );
    let list = r.json();
    assert_eq!(list["kind"], "APIGroupDiscoveryList");
    assert_eq!(list["apiVersion"], "apidiscovery.k8s.io/v2");
    assert_eq!(
        list["items"][0]["metadata"]["name"],
        "landscaper.gardener.cloud"
    );
    let version = &list["items"][0]["versions"][0];
    assert_eq!(version["version"], "v1alpha1");
    assert_eq!(version["freshness"], "Current");
    let inst = version["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "installations")
        .unwrap();
    assert_eq!(inst["scope"], "Namespaced");
    assert_eq!(
        inst["responseKind"],
        json!({"group": "landscaper.gardener.cloud", "version": "v1alpha1", "kind": "Installation"})
    );
    assert_eq!(inst["subresources"][0]["subresource"], "status");

    let core = request_with(s.addr, "GET", "/api", &[("Accept", AGGREGATED)]).await;
    assert_eq!(
        core.header("content-type"),
        Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    );
    let core = core.json();
    assert_eq!(core["items"][0]["versions"][0]["version"], "v1");
    assert!(core["items"][0]["metadata"].get("name").is_none());

    let beta = request_with(
        s.addr,
        "GET",
        "/apis",
        &[(
            "Accept",
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
        )],
    )
    .await;
    assert_eq!(beta.json()["apiVersion"], "apidiscovery.k8s.io/v2beta1");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_and_list_with_selectors() {
    let s = start().await;
    seed(&s.store).await;
    let revision = s.store.revision();

    let root = get(s.addr, &format!("{LS}/namespaces/demo/installations/root")).await;
    assert_eq!(root.status, 200);
    assert_eq!(root.header("content-type"), Some("application/json"));
    let root = root.json();
    assert_eq!(root["kind"], "Installation");
    assert_eq!(root["apiVersion"], "landscaper.gardener.cloud/v1alpha1");
    assert_eq!(root["status"]["phase"], "Succeeded");
    assert_eq!(root["metadata"]["resourceVersion"], revision.to_string());
    let status = get(
        s.addr,
        &format!("{LS}/namespaces/demo/installations/root/status"),
    )
    .await;
    assert_eq!(status.json(), root);

    let all = get(s.addr, &format!("{LS}/installations")).await.json();
    assert_eq!(all["kind"], "InstallationList");
    assert_eq!(all["apiVersion"], "landscaper.gardener.cloud/v1alpha1");
    assert_eq!(all["metadata"]["resourceVersion"], revision.to_string());
    assert_eq!(names(&all), ["demo/child", "demo/root", "other/lonely"]);
    for item in all["items"].as_array().unwrap() {
        assert_eq!(item["kind"], "Installation");
        assert_eq!(item["apiVersion"], "landscaper.gardener.cloud/v1alpha1");
    }

    let demo = get(s.addr, &format!("{LS}/namespaces/demo/installations"))
        .await
        .json();
    assert_eq!(names(&demo), ["demo/child", "demo/root"]);
    let nothing = get(s.addr, &format!("{LS}/namespaces/void/installations"))
        .await
        .json();
    assert_eq!(names(&nothing), Vec::<String>::new());

    for (query, expected) in [
        ("labelSelector=app%3Dshop", vec!["demo/child", "demo/root"]),
        ("labelSelector=app%3Dshop,tier!%3Da", vec!["demo/child"]),
        ("labelSelector=app+in+(blog,x)", vec!["other/lonely"]),
        ("labelSelector=!tier", vec!["other/lonely"]),
        ("fieldSelector=metadata.name%3Droot", vec!["demo/root"]),
        (
            "fieldSelector=metadata.namespace%3Dother",
            vec!["other/lonely"],
        ),
        (
            "fieldSelector=metadata.namespace!%3Dother&labelSelector=tier",
            vec!["demo/child", "demo/root"],
        ),
        ("limit=1", vec!["demo/child", "demo/root", "other/lonely"]),
    ] {
        let list = get(s.addr, &format!("{LS}/installations?{query}")).await;
        assert_eq!(list.status, 200, "{query}: {}", list.text());
        assert_eq!(names(&list.json()), expected, "{query}");
    }

    let bad = get(s.addr, &format!("{LS}/installations?labelSelector=a+in+(b")).await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["reason"], "BadRequest");
    let bad = get(
        s.addr,
        &format!("{LS}/installations?fieldSelector=status.phase%3DX"),
    )
    .await;
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.json()["message"],
        "field label not supported: status.phase"
    );

    let targets = get(s.addr, &format!("{LS}/namespaces/demo/targets"))
        .await
        .json();
    assert_eq!(targets["kind"], "TargetList");
    assert_eq!(names(&targets), ["demo/cluster"]);
    let cms = get(s.addr, "/api/v1/namespaces/demo/configmaps")
        .await
        .json();
    assert_eq!(cms["kind"], "ConfigMapList");
    assert_eq!(cms["apiVersion"], "v1");
    assert_eq!(cms["items"][0]["data"]["a"], "b");

    let files = get(s.addr, &format!("{FILES}/manifestfiles")).await.json();
    assert_eq!(files["kind"], "ManifestFileList");
    assert_eq!(names(&files), ["broken.yaml", "demo-root.yaml"]);
    let file = get(s.addr, &format!("{FILES}/manifestfiles/demo-root.yaml"))
        .await
        .json();
    assert_eq!(file["spec"]["path"], "demo/root.yaml");
    assert_eq!(
        get(s.addr, &format!("{FILES}/namespaces/demo/manifestfiles"))
            .await
            .status,
        404
    );

    let namespaces = get(s.addr, "/api/v1/namespaces").await.json();
    assert_eq!(namespaces["kind"], "NamespaceList");
    assert_eq!(names(&namespaces), ["default", "demo", "other"]);
    let demo_ns = get(s.addr, "/api/v1/namespaces/demo").await.json();
    assert_eq!(demo_ns["status"]["phase"], "Active");
    assert_eq!(get(s.addr, "/api/v1/namespaces/void").await.status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_are_status_objects() {
    let s = start().await;
    seed(&s.store).await;
    let missing = get(s.addr, &format!("{LS}/namespaces/demo/installations/x")).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("content-type"), Some("application/json"));
    assert_eq!(
        missing.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "installations.landscaper.gardener.cloud \"x\" not found",
            "reason": "NotFound",
            "details": {"name": "x", "group": "landscaper.gardener.cloud", "kind": "installations"},
            "code": 404})
    );
    let secret = get(s.addr, "/api/v1/namespaces/demo/secrets/nope")
        .await
        .json();
    assert_eq!(secret["message"], "secrets \"nope\" not found");
    assert_eq!(
        secret["details"],
        json!({"name": "nope", "kind": "secrets"})
    );

    for unknown in [
        format!("{LS}/pods"),
        format!("{LS}/inst"),
        format!("{LS}/installations/root"),
        format!("{LS}/namespaces/demo/installations/root/scale"),
        "/api/v1/pods".to_string(),
        "/apis/apps/v1/deployments".to_string(),
        "/nothing/here".to_string(),
    ] {
        let r = get(s.addr, &unknown).await;
        assert_eq!(r.status, 404, "{unknown}");
        let status = r.json();
        assert_eq!(status["reason"], "NotFound", "{unknown}");
        assert_eq!(
            status["message"], "the server could not find the requested resource",
            "{unknown}"
        );
    }

    // Every write needs the token (this server has none): authentication comes first, as in
    // kube-apiserver.
    for method in ["PATCH", "DELETE", "POST", "PUT"] {
        for path in [
            format!("{LS}/namespaces/demo/installations/root"),
            "/api/v1/namespaces/demo/secrets/creds".to_string(),
        ] {
            let r = request_with(s.addr, method, &path, &[]).await;
            assert_eq!(r.status, 401, "{method} {path}");
            assert_eq!(r.json()["reason"], "Unauthorized");
        }
    }
    let r = request_with(
        s.addr,
        "POST",
        &format!("{LS}/namespaces/demo/installations"),
        &[],
    )
    .await;
    assert_eq!(r.status, 401, "POST of a new installation");
    // Nothing changed.
    assert_eq!(
        get(s.addr, &format!("{LS}/namespaces/demo/installations/root"))
            .await
            .status,
        200
    );

    let bad_continue = get(s.addr, &format!("{LS}/installations?continue=abc")).await;
    assert_eq!(bad_continue.status, 400);
    let not_acceptable = request_with(
        s.addr,
        "GET",
        &format!("{LS}/installations"),
        &[("Accept", "application/vnd.kubernetes.protobuf")],
    )
    .await;
    assert_eq!(not_acceptable.status, 406);
    assert_eq!(not_acceptable.json()["reason"], "NotAcceptable");
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_are_redacted_everywhere() {
    let s = start().await;
    seed(&s.store).await;
    let leaks = |text: &str| {
        text.contains(SECRET_B64) || text.contains(SECRET_CLEAR) || text.contains(SECRET_STRING)
    };

    let one = get(s.addr, "/api/v1/namespaces/demo/secrets/creds").await;
    assert_eq!(one.status, 200);
    assert!(!leaks(&one.text()), "{}", one.text());
    let one = one.json();
    assert_eq!(one["data"]["password"], "PHJlZGFjdGVkPg==");
    assert_eq!(one["stringData"]["token"], "<redacted>");
    assert_eq!(
        one["metadata"]["annotations"]["appliance.landscaper-appliance.io/redacted"],
        "true"
    );

    for path in [
        "/api/v1/secrets".to_string(),
        "/api/v1/namespaces/demo/secrets".to_string(),
        "/api/v1/namespaces/demo/secrets?includeObject=Object".to_string(),
        "/api/v1/namespaces/demo/secrets/creds?includeObject=Object".to_string(),
    ] {
        for accept in ["application/json", TABLE] {
            let r = request_with(s.addr, "GET", &path, &[("Accept", accept)]).await;
            assert_eq!(r.status, 200, "{path}");
            assert!(!leaks(&r.text()), "{path} {accept}: {}", r.text());
        }
    }
    let table = request_with(
        s.addr,
        "GET",
        "/api/v1/namespaces/demo/secrets",
        &[("Accept", TABLE)],
    )
    .await
    .json();
    assert_eq!(
        table["rows"][0]["cells"],
        json!(["creds", "Opaque", 2, table["rows"][0]["cells"][3]])
    );

    // Watch: initial, modified and deleted events are redacted too.
    let mut watch = Watch::open(s.addr, "/api/v1/secrets?watch=true", &[]).await;
    let mut modified = secret("demo", "creds");
    modified["data"]["other"] = json!(SECRET_B64);
    s.store
        .commit(Transaction::new().update(modified))
        .await
        .unwrap();
    delete(&s.store, Kind::Secret, "demo", "creds").await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let event = watch.next().await.expect("event");
        assert!(!leaks(&event.to_string()), "{event}");
        seen.push(kind_and_name(&event).0);
    }
    assert_eq!(seen, ["ADDED", "MODIFIED", "DELETED"]);
    let mut table_watch = Watch::open(
        s.addr,
        "/api/v1/secrets?watch=true&includeObject=Object",
        &[("Accept", TABLE)],
    )
    .await;
    s.store
        .commit(Transaction::new().create(secret("demo", "again")))
        .await
        .unwrap();
    let event = table_watch.next().await.expect("event");
    assert_eq!(event["object"]["kind"], "Table");
    assert!(!leaks(&event.to_string()), "{event}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tables_follow_the_printer_columns() {
    let s = start().await;
    seed(&s.store).await;
    let revision = s.store.revision().to_string();
    let table = request_with(
        s.addr,
        "GET",
        &format!("{LS}/installations"),
        &[("Accept", TABLE)],
    )
    .await
    .json();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(table["metadata"]["resourceVersion"], revision);
    let columns: Vec<(&str, &str)> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        columns,
        [
            ("Name", "string"),
            ("Phase", "string"),
            ("Execution", "string"),
            ("Age", "date")
        ]
    );
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1]["cells"][0], "root");
    assert_eq!(rows[1]["cells"][1], "Succeeded");
    assert_eq!(rows[1]["cells"][2], "root-exec");
    assert!(rows[1]["cells"][3].as_str().unwrap().ends_with('s'));
    assert_eq!(rows[0]["cells"][1], Value::Null);
    assert_eq!(rows[1]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(rows[1]["object"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(rows[1]["object"]["metadata"]["namespace"], "demo");
    assert_eq!(rows[1]["object"]["metadata"]["labels"]["app"], "shop");
    assert!(rows[1]["object"].get("spec").is_none());

    let full = request_with(
        s.addr,
        "GET",
        &format!("{LS}/installations?includeObject=Object"),
        &[("Accept", TABLE)],
    )
    .await
    .json();
    assert_eq!(full["rows"][1]["object"]["kind"], "Installation");
    assert_eq!(full["rows"][1]["object"]["status"]["phase"], "Succeeded");
    let bare = request_with(
        s.addr,
        "GET",
        &format!("{LS}/installations?includeObject=None"),
        &[("Accept", TABLE)],
    )
    .await
    .json();
    assert!(bare["rows"][1].get("object").is_none());

    let one = request_with(
        s.addr,
        "GET",
        &format!("{LS}/namespaces/other/installations/lonely"),
        &[(
            "Accept",
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
        )],
    )
    .await
    .json();
    assert_eq!(one["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(one["rows"].as_array().unwrap().len(), 1);
    assert_eq!(one["rows"][0]["cells"][1], "Failed");

    let files = request_with(
        s.addr,
        "GET",
        &format!("{FILES}/manifestfiles"),
        &[("Accept", TABLE)],
    )
    .await
    .json();
    let file_columns: Vec<&str> = files["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        file_columns,
        [
            "Name", "Path", "Phase", "Objects", "Error", "Age", "Skipped", "SHA256"
        ]
    );
    assert_eq!(files["rows"][0]["cells"][0], "broken.yaml");
    // The fixture's ManifestFiles have no status.phase (the ingest sets it; tests/tests/cli_habits.rs).
    assert_eq!(files["rows"][0]["cells"][2], Value::Null);
    assert_eq!(files["rows"][0]["cells"][3], 0);
    assert_eq!(
        files["rows"][0]["cells"][4],
        "3:7: mapping values are not allowed here"
    );
    assert_eq!(files["rows"][1]["cells"][1], "demo/root.yaml");
    assert_eq!(files["rows"][1]["cells"][2], Value::Null);
    assert_eq!(files["rows"][1]["cells"][3], 1);
    assert_eq!(files["rows"][1]["cells"][4], Value::Null);

    let targets = request_with(
        s.addr,
        "GET",
        &format!("{LS}/namespaces/demo/targets"),
        &[("Accept", TABLE)],
    )
    .await
    .json();
    let cells = &targets["rows"][0]["cells"];
    assert_eq!(cells[0], "cluster");
    assert_eq!(cells[1], "landscaper.gardener.cloud/kubernetes-cluster");
    assert_eq!(cells[2], "ctx");
    assert_eq!(cells[3], Value::Null);
    let cms = request_with(s.addr, "GET", "/api/v1/configmaps", &[("Accept", TABLE)])
        .await
        .json();
    assert_eq!(cms["rows"][0]["cells"][1], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_starts_with_the_current_objects_then_follows_changes() {
    let s = start().await;
    seed(&s.store).await;
    let mut watch = Watch::open(s.addr, &format!("{LS}/installations?watch=true"), &[]).await;
    assert_eq!(watch.status, 200);
    assert_eq!(
        watch
            .headers
            .iter()
            .find(|(k, _)| k == "content-type")
            .map(|(_, v)| v.as_str()),
        Some("application/json")
    );
    let mut initial = Vec::new();
    for _ in 0..3 {
        initial.push(kind_and_name(&watch.next().await.unwrap()));
    }
    initial.sort();
    assert_eq!(
        initial,
        [
            ("ADDED".to_string(), "child".to_string()),
            ("ADDED".to_string(), "lonely".to_string()),
            ("ADDED".to_string(), "root".to_string())
        ]
    );

    let r1 = set_phase(&s.store, "demo", "child", "Progressing").await;
    // Changes of other kinds are not reported.
    delete(&s.store, Kind::Target, "demo", "cluster").await;
    s.store
        .commit(Transaction::new().create(installation("demo", "new", json!({}), None)))
        .await
        .unwrap();
    set_phase(&s.store, "demo", "child", "Succeeded").await;
    let r_del = delete(&s.store, Kind::Installation, "other", "lonely").await;

    let mut events = Vec::new();
    for _ in 0..4 {
        let event = watch.next().await.unwrap();
        events.push((
            kind_and_name(&event),
            event["object"]["status"]["phase"].clone(),
            event["object"]["metadata"]["resourceVersion"].clone(),
        ));
    }
    assert_eq!(events[0].0, ("MODIFIED".to_string(), "child".to_string()));
    assert_eq!(events[0].1, "Progressing");
    assert_eq!(events[0].2, r1.to_string());
    assert_eq!(events[1].0, ("ADDED".to_string(), "new".to_string()));
    assert_eq!(events[2].0, ("MODIFIED".to_string(), "child".to_string()));
    assert_eq!(events[2].1, "Succeeded");
    assert_eq!(events[3].0, ("DELETED".to_string(), "lonely".to_string()));
    assert_eq!(events[3].2, r_del.to_string());
    watch.expect_quiet(Duration::from_millis(300)).await;

    // Namespaced watch with a field selector, as `kubectl get NAME --watch` sends it.
    let mut named = Watch::open(
        s.addr,
        &format!("{LS}/namespaces/demo/installations?watch=1&resourceVersion=0&fieldSelector=metadata.name%3Droot"),
        &[],
    )
    .await;
    assert_eq!(
        kind_and_name(&named.next().await.unwrap()),
        ("ADDED".into(), "root".into())
    );
    set_phase(&s.store, "demo", "child", "Failed").await;
    set_phase(&s.store, "demo", "root", "Progressing").await;
    let event = named.next().await.unwrap();
    assert_eq!(kind_and_name(&event), ("MODIFIED".into(), "root".into()));
    assert_eq!(event["object"]["status"]["phase"], "Progressing");
    named.expect_quiet(Duration::from_millis(200)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_resumes_from_a_resource_version() {
    let s = start().await;
    seed(&s.store).await;
    let list = get(s.addr, &format!("{LS}/installations")).await.json();
    let listed_at: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // Changes between the list and the watch are delivered from the backlog, in order.
    let r1 = set_phase(&s.store, "demo", "root", "Init").await;
    let r2 = set_phase(&s.store, "demo", "root", "Progressing").await;
    let mut watch = Watch::open(
        s.addr,
        &format!("{LS}/installations?watch=true&resourceVersion={listed_at}"),
        &[],
    )
    .await;
    let r3 = set_phase(&s.store, "demo", "root", "Succeeded").await;
    for (rv, phase) in [(r1, "Init"), (r2, "Progressing"), (r3, "Succeeded")] {
        let event = watch.next().await.unwrap();
        assert_eq!(kind_and_name(&event), ("MODIFIED".into(), "root".into()));
        assert_eq!(
            event["object"]["metadata"]["resourceVersion"],
            rv.to_string()
        );
        assert_eq!(event["object"]["status"]["phase"], phase);
    }
    watch.expect_quiet(Duration::from_millis(300)).await;

    // Resuming at the newest revision yields only later changes.
    let mut latest = Watch::open(
        s.addr,
        &format!("{LS}/installations?watch=true&resourceVersion={r3}"),
        &[],
    )
    .await;
    latest.expect_quiet(Duration::from_millis(200)).await;
    set_phase(&s.store, "other", "lonely", "Succeeded").await;
    assert_eq!(
        kind_and_name(&latest.next().await.unwrap()),
        ("MODIFIED".into(), "lonely".into())
    );

    let bad = get(
        s.addr,
        &format!("{LS}/installations?watch=true&resourceVersion=abc"),
    )
    .await;
    assert_eq!(bad.status, 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_from_an_expired_resource_version_is_gone() {
    let s = start_with(
        StoreOptions {
            recent_changes: 3,
            ..store_options()
        },
        ApiOptions::default(),
    )
    .await;
    seed(&s.store).await;
    for i in 0..6 {
        set_phase(&s.store, "demo", "root", &format!("P{i}")).await;
    }
    let gone = get(
        s.addr,
        &format!("{LS}/installations?watch=true&resourceVersion=1"),
    )
    .await;
    assert_eq!(gone.status, 410);
    let status = gone.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "Expired");
    assert_eq!(status["code"], 410);
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .starts_with("too old resource version: 1"),
        "{status}"
    );
    // Within the window it works.
    let recent = s.store.revision() - 2;
    let ok = Watch::open(
        s.addr,
        &format!("{LS}/installations?watch=true&resourceVersion={recent}&timeoutSeconds=1"),
        &[],
    )
    .await;
    assert_eq!(ok.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn label_selector_watches_see_objects_enter_and_leave() {
    let s = start().await;
    seed(&s.store).await;
    let mut watch = Watch::open(
        s.addr,
        &format!("{LS}/installations?watch=true&labelSelector=app%3Dshop"),
        &[],
    )
    .await;
    let mut initial: Vec<_> = vec![
        kind_and_name(&watch.next().await.unwrap()),
        kind_and_name(&watch.next().await.unwrap()),
    ];
    initial.sort();
    assert_eq!(
        initial,
        [
            ("ADDED".into(), "child".into()),
            ("ADDED".into(), "root".into())
        ]
    );
    let listed_at = s.store.revision();

    set_labels(&s.store, "demo", "root", json!({"app": "gone"})).await;
    set_labels(&s.store, "other", "lonely", json!({"app": "shop"})).await;
    set_phase(&s.store, "demo", "root", "Failed").await; // not matching: nothing
    set_phase(&s.store, "other", "lonely", "Progressing").await;
    delete(&s.store, Kind::Installation, "demo", "root").await; // not matching: nothing
    delete(&s.store, Kind::Installation, "other", "lonely").await;
    let expected = [
        ("DELETED", "root"),
        ("ADDED", "lonely"),
        ("MODIFIED", "lonely"),
        ("DELETED", "lonely"),
    ];
    for (kind, name) in expected {
        assert_eq!(
            kind_and_name(&watch.next().await.unwrap()),
            (kind.to_string(), name.to_string())
        );
    }
    watch.expect_quiet(Duration::from_millis(300)).await;

    // The same history replayed from the list's resourceVersion: the store keeps no previous
    // object versions, so for objects changed after that revision the watcher cannot know
    // whether they matched before. It reports a change that makes such an object match as
    // MODIFIED (not ADDED) and one that makes it not match as DELETED (to be safe); once it has
    // seen an object, it knows.
    let expected = [
        ("DELETED", "root"),
        ("MODIFIED", "lonely"),
        ("MODIFIED", "lonely"),
        ("DELETED", "lonely"),
    ];
    let mut resumed = Watch::open(
        s.addr,
        &format!(
            "{LS}/installations?watch=true&labelSelector=app%3Dshop&resourceVersion={listed_at}"
        ),
        &[],
    )
    .await;
    for (kind, name) in expected {
        assert_eq!(
            kind_and_name(&resumed.next().await.unwrap()),
            (kind.to_string(), name.to_string())
        );
    }
    resumed.expect_quiet(Duration::from_millis(300)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn table_watches_send_headers_once() {
    let s = start().await;
    seed(&s.store).await;
    let listed = request_with(
        s.addr,
        "GET",
        &format!("{LS}/installations"),
        &[("Accept", TABLE)],
    )
    .await
    .json();
    let rv = listed["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut watch = Watch::open(
        s.addr,
        &format!("{LS}/installations?resourceVersion={rv}&watch=true"),
        &[("Accept", TABLE)],
    )
    .await;
    set_phase(&s.store, "demo", "child", "Progressing").await;
    set_phase(&s.store, "demo", "child", "Succeeded").await;
    let first = watch.next().await.unwrap();
    assert_eq!(first["type"], "MODIFIED");
    assert_eq!(first["object"]["kind"], "Table");
    assert_eq!(
        first["object"]["columnDefinitions"],
        listed["columnDefinitions"]
    );
    assert_eq!(first["object"]["rows"][0]["cells"][0], "child");
    assert_eq!(first["object"]["rows"][0]["cells"][1], "Progressing");
    assert_eq!(
        first["object"]["rows"][0]["object"]["metadata"]["namespace"],
        "demo"
    );
    let second = watch.next().await.unwrap();
    assert_eq!(second["object"]["columnDefinitions"], Value::Null);
    assert_eq!(second["object"]["rows"][0]["cells"][1], "Succeeded");
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_timeouts_and_bookmarks() {
    let s = start_with(
        store_options(),
        ApiOptions {
            bookmark_interval: Duration::from_millis(200),
            ..ApiOptions::default()
        },
    )
    .await;
    seed(&s.store).await;
    let started = std::time::Instant::now();
    let mut timed = Watch::open(
        s.addr,
        &format!(
            "{LS}/installations?watch=true&timeoutSeconds=1&resourceVersion={}",
            s.store.revision()
        ),
        &[],
    )
    .await;
    assert_eq!(
        timed.next().await,
        None,
        "the stream ends after timeoutSeconds"
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );

    let revision = s.store.revision();
    let mut bookmarks = Watch::open(
        s.addr,
        &format!("{LS}/namespaces/demo/installations?watch=true&allowWatchBookmarks=true&resourceVersion={revision}"),
        &[],
    )
    .await;
    let bookmark = bookmarks.next().await.unwrap();
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(bookmark["object"]["kind"], "Installation");
    assert_eq!(
        bookmark["object"]["metadata"]["resourceVersion"],
        revision.to_string()
    );
    let changed = set_phase(&s.store, "other", "lonely", "X")
        .await
        .to_string(); // filtered out
    loop {
        let event = bookmarks.next().await.unwrap();
        assert_eq!(event["type"], "BOOKMARK");
        if event["object"]["metadata"]["resourceVersion"] == changed.as_str() {
            break;
        }
    }

    let mut initial = Watch::open(
        s.addr,
        &format!("{LS}/namespaces/demo/installations?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"),
        &[],
    )
    .await;
    assert_eq!(initial.next().await.unwrap()["type"], "ADDED");
    assert_eq!(initial.next().await.unwrap()["type"], "ADDED");
    let end = initial.next().await.unwrap();
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn lagging_watches_end_with_an_expired_error() {
    let s = start_with(
        StoreOptions {
            feed_capacity: 1,
            ..store_options()
        },
        ApiOptions::default(),
    )
    .await;
    seed(&s.store).await;
    let mut watch = Watch::open(
        s.addr,
        &format!(
            "{LS}/installations?watch=true&resourceVersion={}",
            s.store.revision()
        ),
        &[],
    )
    .await;
    // Many transactions at once: the writer publishes them back to back and the watcher, with
    // room for one change set, falls behind.
    let mut error = None;
    for _round in 0..20 {
        let commits = (0..40).map(|i| {
            let store = s.store.clone();
            async move {
                let name = format!("bulk-{}-{i}", store.revision());
                store
                    .commit(Transaction::new().create(installation("demo", &name, json!({}), None)))
                    .await
            }
        });
        futures_util::future::join_all(commits).await;
        while let Ok(Some(event)) = watch.next_within(Duration::from_millis(200)).await {
            if event["type"] == "ERROR" {
                error = Some(event);
                break;
            }
        }
        if error.is_some() {
            break;
        }
    }
    let error = error.expect("the watcher lagged");
    assert_eq!(error["object"]["kind"], "Status");
    assert_eq!(error["object"]["reason"], "Expired");
    assert_eq!(error["object"]["code"], 410);
    assert_eq!(watch.next().await, None, "the stream ends after the error");
}

#[tokio::test(flavor = "multi_thread")]
async fn disconnected_watchers_leave_nothing_behind() {
    let s = start().await;
    seed(&s.store).await;
    let metrics = tokio::runtime::Handle::current().metrics();
    // Let the server settle, then count.
    get(s.addr, "/healthz").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let baseline = metrics.num_alive_tasks();
    let mut watches = Vec::new();
    for _ in 0..5 {
        let mut w = Watch::open(s.addr, &format!("{LS}/installations?watch=true"), &[]).await;
        w.next().await.unwrap();
        watches.push(w);
    }
    assert!(metrics.num_alive_tasks() >= baseline + 5);
    drop(watches);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while metrics.num_alive_tasks() > baseline {
        assert!(
            std::time::Instant::now() < deadline,
            "{} tasks alive, {baseline} before the watches",
            metrics.num_alive_tasks()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn health_readiness_and_graceful_shutdown() {
    let s = start().await;
    let health = get(s.addr, "/healthz").await;
    assert_eq!((health.status, health.text().as_str()), (200, "ok"));
    assert_eq!(get(s.addr, "/livez").await.status, 200);
    let not_ready = get(s.addr, "/readyz").await;
    assert_eq!(not_ready.status, 503);
    assert!(
        not_ready.text().contains("initial scan"),
        "{}",
        not_ready.text()
    );
    s.readiness.set_ready();
    let ready = get(s.addr, "/readyz").await;
    assert_eq!((ready.status, ready.text().as_str()), (200, "ok"));

    // Shutdown ends open watches, so that the server stops promptly.
    let mut watch = Watch::open(s.addr, &format!("{LS}/installations?watch=true"), &[]).await;
    watch.expect_quiet(Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    s.stop.cancel();
    assert_eq!(watch.next().await, None);
    tokio::time::timeout(Duration::from_secs(5), s.served)
        .await
        .expect("server stopped")
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
}
