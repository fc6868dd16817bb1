//! The test transport: canned answers by URL, a switch that makes every host unreachable, and a
//! log of the requests (URL and the `authorization` value) for assertions. Also a helper that
//! lays out a Helm chart in a simulated OCI registry.

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
