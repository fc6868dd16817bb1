//! The test transport: canned answers by URL, a switch that makes every host unreachable, and a
//! log of the requests (URL and the `authorization` value) for assertions. Also a helper that
//! lays out a Helm chart in a simulated OCI registry, and real servers for tests on loopback:
//! [`FileServer`] (a folder over plain HTTP with basic auth, e.g. a helm chart repository) and
//! [`DockerRegistry`] (Debian's `docker-registry`).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::http::{BoxFuture, HttpRequest, HttpResponse, HttpTransport, TransportError};

/// One canned answer.
#[derive(Debug, Clone)]
pub struct Route {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When set, a request without exactly this `authorization` gets 401 with `challenge`.
    pub require_authorization: Option<String>,
    pub challenge: Option<String>,
}

impl Route {
    pub fn ok(body: impl Into<Vec<u8>>) -> Route {
        Route {
            status: 200,
            headers: Vec::new(),
            body: body.into(),
            require_authorization: None,
            challenge: None,
        }
    }

    pub fn status(status: u16) -> Route {
        Route {
            status,
            ..Route::ok(Vec::new())
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Route {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_string()));
        self
    }

    pub fn requiring(mut self, authorization: &str, challenge: &str) -> Route {
        self.require_authorization = Some(authorization.to_string());
        self.challenge = Some(challenge.to_string());
        self
    }
}

#[derive(Default)]
struct State {
    routes: HashMap<String, Route>,
    log: Vec<(String, Option<String>)>,
    unreachable: bool,
}

/// See the module documentation.
#[derive(Default)]
pub struct MemoryTransport {
    state: Mutex<State>,
}

impl MemoryTransport {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn route(&self, url: &str, route: Route) {
        self.lock().routes.insert(url.to_string(), route);
    }

    /// Every request fails as if the host were down.
    pub fn set_unreachable(&self, unreachable: bool) {
        self.lock().unreachable = unreachable;
    }

    /// The requests so far: URL and `authorization` header.
    pub fn requests(&self) -> Vec<(String, Option<String>)> {
        self.lock().log.clone()
    }

    pub fn clear_requests(&self) {
        self.lock().log.clear();
    }

    /// A Helm chart in a simulated registry at `http(s)://host/v2/repo`: the manifest under
    /// `tag` and its digest, the config and the layer blob. Returns (manifest digest, layer
    /// digest).
    pub fn put_helm_chart(
        &self,
        base: &str,
        repo: &str,
        tag: &str,
        chart: &[u8],
    ) -> (String, String) {
        let config = br#"{"name":"app","version":"1.0.0","apiVersion":"v2"}"#;
        let config_digest = crate::archive::sha256_digest(config);
        let layer_digest = crate::archive::sha256_digest(chart);
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"{}","config":{{"mediaType":"{}","digest":"{config_digest}","size":{}}},"layers":[{{"mediaType":"{}","digest":"{layer_digest}","size":{}}}]}}"#,
            crate::oci::OCI_MANIFEST_MEDIA_TYPE,
            crate::oci::HELM_CONFIG_MEDIA_TYPE,
            config.len(),
            crate::oci::HELM_CHART_LAYER_MEDIA_TYPE,
            chart.len()
        );
        let manifest_digest = crate::archive::sha256_digest(manifest.as_bytes());
        let v2 = format!("{base}/v2/{repo}");
        self.route(
            &format!("{v2}/manifests/{tag}"),
            Route::ok(manifest.clone()),
        );
        self.route(
            &format!("{v2}/manifests/{manifest_digest}"),
            Route::ok(manifest),
        );
        self.route(
            &format!("{v2}/blobs/{config_digest}"),
            Route::ok(config.to_vec()),
        );
        self.route(
            &format!("{v2}/blobs/{layer_digest}"),
            Route::ok(chart.to_vec()),
        );
        (manifest_digest, layer_digest)
    }

    /// Makes every route under `prefix` require `authorization`.
    pub fn protect(&self, prefix: &str, authorization: &str, challenge: &str) {
        for (url, route) in self.lock().routes.iter_mut() {
            if url.starts_with(prefix) {
                route.require_authorization = Some(authorization.to_string());
                route.challenge = Some(challenge.to_string());
            }
        }
    }
}

impl HttpTransport for MemoryTransport {
    fn get(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        let result = (|| {
            let mut state = self.lock();
            let authorization = request
                .headers
                .iter()
                .find(|(n, _)| n == "authorization")
                .map(|(_, v)| v.clone());
            state.log.push((request.url.clone(), authorization.clone()));
            if state.unreachable {
                return Err(TransportError::Unreachable("connection refused".into()));
            }
            let Some(route) = state.routes.get(&request.url) else {
                return Ok(HttpResponse {
                    status: 404,
                    headers: Vec::new(),
                    body: b"not found".to_vec(),
                });
            };
            if let Some(required) = &route.require_authorization
                && authorization.as_ref() != Some(required)
            {
                return Ok(HttpResponse {
                    status: 401,
                    headers: route
                        .challenge
                        .iter()
                        .map(|c| ("www-authenticate".to_string(), c.clone()))
                        .collect(),
                    body: Vec::new(),
                });
            }
            if route.body.len() as u64 > request.max_bytes {
                return Err(TransportError::TooLarge {
                    limit: request.max_bytes,
                });
            }
            Ok(HttpResponse {
                status: route.status,
                headers: route.headers.clone(),
                body: route.body.clone(),
            })
        })();
        Box::pin(async move { result })
    }
}

/// A folder served over plain HTTP/1.1 on loopback, for tests (e.g. a helm chart repository
/// made by `helm repo index`): `GET /NAME` answers the file `NAME` of the folder (no
/// subfolders), 404 otherwise; with `authorization` set, a request without exactly that
/// `Authorization` value gets 401 with a Basic challenge. One thread; stopped on drop (the port
/// then refuses connections).
pub struct FileServer {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FileServer {
    pub fn start(
        dir: std::path::PathBuf,
        authorization: Option<String>,
    ) -> std::io::Result<FileServer> {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let _ = serve_file(stream, &dir, authorization.as_deref());
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(std::time::Duration::from_millis(10));
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
        });
        Ok(FileServer {
            port,
            stop,
            thread: Some(thread),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Stops serving and closes the port.
    pub fn stop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve_file(
    mut stream: std::net::TcpStream,
    dir: &std::path::Path,
    authorization: Option<&str>,
) -> std::io::Result<()> {
    use std::io::{Read, Write};
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(5)))?;
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or("/")
        .to_string();
    let sent = lines.find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("authorization")
            .then(|| value.trim().to_string())
    });
    let name = path.split('?').next().unwrap_or("").trim_start_matches('/');
    let (status, extra, body) = if authorization.is_some_and(|a| sent.as_deref() != Some(a)) {
        (
            "401 Unauthorized",
            "WWW-Authenticate: Basic realm=\"repo\"\r\n",
            Vec::new(),
        )
    } else if name.is_empty() || name.contains('/') || name.contains("..") {
        ("404 Not Found", "", Vec::new())
    } else {
        match std::fs::read(dir.join(name)) {
            Ok(body) => ("200 OK", "", body),
            Err(_) => ("404 Not Found", "", Vec::new()),
        }
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
        body.len()
    )?;
    stream.write_all(&body)?;
    stream.flush()
}

/// Debian's `docker-registry` (the CNCF distribution registry) on loopback, for tests: plain
/// HTTP, storage in a folder of the test; killed on drop.
pub struct DockerRegistry {
    child: std::process::Child,
    pub port: u16,
}

impl DockerRegistry {
    /// Where Debian installs it (`apt-get install docker-registry`).
    pub const BINARY: &'static str = "/usr/bin/docker-registry";

    /// Whether the binary is installed (tests print a SKIP line otherwise).
    pub fn available() -> bool {
        std::path::Path::new(Self::BINARY).is_file()
    }

    /// Starts it on a free port with its configuration in `config_dir` and `extra` more
    /// top-level configuration (e.g. `auth:`); waits until it listens.
    pub fn start(
        storage: &std::path::Path,
        config_dir: &std::path::Path,
        extra: &str,
    ) -> std::io::Result<DockerRegistry> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let config = config_dir.join(format!("registry-{port}.yml"));
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n{extra}",
                storage.display()
            ),
        )?;
        let child = std::process::Command::new(Self::BINARY)
            .arg("serve")
            .arg(&config)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let mut registry = DockerRegistry { child, port };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if std::time::Instant::now() > deadline {
                registry.stop();
                return Err(std::io::Error::other(format!(
                    "docker-registry did not listen on {port}"
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Ok(registry)
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for DockerRegistry {
    fn drop(&mut self) {
        self.stop();
    }
}
