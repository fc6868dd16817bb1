//! The check behind the `http_request` fuzz target (`fuzz/fuzz_targets/http_request.rs`) and
//! its seed replay test: one HTTP request, built from arbitrary bytes, through the API router
//! and the status page (with the `Host` check the daemon puts in front of them) against a
//! small store holding credentials marked with [`MARKER`].
//!
//! What must hold for every input: no panic; no 5xx answer; without the token (or the Unix
//! socket) no answer shows [`MARKER`] (plain or base64) unless the request itself carried it.
//!
//! Input layout: byte 0 picks the method, byte 1 holds flags (bit 0: the right bearer token,
//! bit 1: a wrong one, bit 2: over the Unix socket, bit 3: `Host: evil.example` instead of
//! `localhost` when the headers name none); the rest is text: the first line is the request
//! target (`/path?query`), the following lines up to an empty line are headers
//! (`name: value`), the remainder is the body. Authorised writes get `dryRun=All`, so that the
//! store stays as seeded.
#![doc(hidden)]

use std::sync::OnceLock;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, header};
use base64::Engine as _;
use landscaper_store::model::constants::FROM_SECRET_ANNOTATION;
use landscaper_store::{Store, StoreOptions, Transaction};
use serde_json::{Value, json};
use tower::ServiceExt as _;

use crate::daemon::api::listen::{AllowedHosts, check_host};
use crate::daemon::api::token::TrustedConnection;
use crate::daemon::api::{ApiState, ApiToken, Readiness};

/// The credential the seeded Secret, Targets and DataObject hold.
pub const MARKER: &str = "FuzzSecretMarker7";
/// The token the harness accepts.
pub const TOKEN: &str = "fuzz-api-token-0123456789";

const METHODS: [&str; 8] = [
    "GET", "HEAD", "PATCH", "DELETE", "POST", "PUT", "OPTIONS", "WATCH",
];

/// A router over a seeded store, and the runtime that drives it.
pub struct Harness {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
    dir: std::path::PathBuf,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What went wrong with one input.
#[derive(Debug, thiserror::Error)]
pub enum Finding {
    #[error("{method} {target}: answered {status}: {body}")]
    ServerError {
        method: String,
        target: String,
        status: u16,
        body: String,
    },
    #[error("{method} {target}: shows the secret marker without the token: {body}")]
    SecretShown {
        method: String,
        target: String,
        body: String,
    },
}

impl Harness {
    /// A harness over a new store in a temporary folder (removed on drop).
    pub fn new() -> Harness {
        static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "landscaper-appliance-fuzz-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating the harness folder");
        let store = Store::open(
            &dir.join("store.redb"),
            StoreOptions {
                durable: false,
                ..StoreOptions::default()
            },
        )
        .expect("opening the harness store");
        let tx = seed_objects()
            .into_iter()
            .fold(Transaction::new(), Transaction::create);
        store
            .commit_blocking(tx)
            .expect("seeding the harness store");
        let token = ApiToken::parse(TOKEN).expect("a valid token");
        let state = ApiState::new(store.clone(), Readiness::ready()).with_token(token);
        let allowed = AllowedHosts::new(
            "127.0.0.1:8080".parse().expect("an address"),
            ["appliance.example.com".to_string()],
        );
        let router = crate::daemon::api::router(state.clone())
            .merge(crate::daemon::history::routes(store))
            .merge(crate::daemon::ui::routes(state))
            .layer(axum::middleware::from_fn(move |request, next| {
                check_host(allowed.clone(), request, next)
            }));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        Harness {
            runtime,
            router,
            dir,
        }
    }

    /// The status and body of the answer to the request `data` describes, if it describes one.
    pub fn answer(&self, data: &[u8]) -> Option<(u16, String)> {
        let request = Input::parse(data)?.request()?;
        let (status, body) = self.runtime.block_on(self.send(request));
        Some((status, String::from_utf8_lossy(&body).into_owned()))
    }

    /// Sends the request `data` describes (see the module documentation) and checks the answer.
    pub fn check(&self, data: &[u8]) -> Result<(), Finding> {
        let Some(input) = Input::parse(data) else {
            return Ok(());
        };
        let Some((status, shown)) = self.answer(data) else {
            return Ok(());
        };
        let (method, target) = (input.method.to_string(), input.target.clone());
        if status >= 500 {
            return Err(Finding::ServerError {
                method,
                target,
                status,
                body: shown,
            });
        }
        let authorised = input.flags & 0b101 != 0 || input.text.contains(TOKEN);
        let marker_b64 = base64::engine::general_purpose::STANDARD.encode(MARKER);
        let asked_for = input.text.contains(MARKER) || input.text.contains(&marker_b64);
        if !authorised && !asked_for && (shown.contains(MARKER) || shown.contains(&marker_b64)) {
            return Err(Finding::SecretShown {
                method,
                target,
                body: shown,
            });
        }
        Ok(())
    }

    async fn send(&self, request: Request<Body>) -> (u16, Vec<u8>) {
        use futures_util::StreamExt as _;
        let response = match self.router.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let status = response.status().as_u16();
        let mut body = response.into_body().into_data_stream();
        let mut bytes = Vec::new();
        // Streams (watches, the page's event feed) do not end: read what comes quickly.
        while let Ok(Some(Ok(data))) =
            tokio::time::timeout(Duration::from_millis(20), body.next()).await
        {
            bytes.extend_from_slice(&data);
            if bytes.len() > 4 << 20 {
                break;
            }
        }
        (status, bytes)
    }
}

impl Default for Harness {
    fn default() -> Self {
        Harness::new()
    }
}

/// One process-wide harness for the fuzz target.
pub fn check_http_request(data: &[u8]) -> Result<(), Finding> {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(Harness::new).check(data)
}

struct Input {
    method: &'static str,
    flags: u8,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// The whole input as text, to tell whether the request carried the marker or token.
    text: String,
}

impl Input {
    fn parse(data: &[u8]) -> Option<Input> {
        let [method, flags, rest @ ..] = data else {
            return None;
        };
        let text = String::from_utf8_lossy(rest).into_owned();
        let (head, body) = match text.find("\n\n") {
            Some(at) => (&text[..at], text.as_bytes()[at + 2..].to_vec()),
            None => (text.as_str(), Vec::new()),
        };
        let mut lines = head.split('\n');
        let mut target = lines
            .next()
            .unwrap_or_default()
            .trim_end_matches('\r')
            .to_string();
        if !target.starts_with('/') {
            target.insert(0, '/');
        }
        let headers = lines
            .filter_map(|line| {
                let (name, value) = line.split_once(':')?;
                Some((name.trim().to_string(), value.trim().to_string()))
            })
            .collect();
        Some(Input {
            method: METHODS[usize::from(*method) % METHODS.len()],
            flags: *flags,
            target,
            headers,
            body,
            text: String::from_utf8_lossy(data).into_owned(),
        })
    }

    fn request(&self) -> Option<Request<Body>> {
        let authorised = self.flags & 0b101 != 0;
        let mut target = self.target.clone();
        if authorised && !matches!(self.method, "GET" | "HEAD") {
            target.push(if target.contains('?') { '&' } else { '?' });
            target.push_str("dryRun=All");
        }
        let mut builder = Request::builder()
            .method(Method::from_bytes(self.method.as_bytes()).ok()?)
            .uri(target);
        let mut has_host = false;
        for (name, value) in &self.headers {
            let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) else {
                continue;
            };
            has_host |= name == header::HOST;
            builder = builder.header(name, value);
        }
        if !has_host {
            let host = if self.flags & 0b1000 != 0 {
                "evil.example"
            } else {
                "localhost:8080"
            };
            builder = builder.header(header::HOST, host);
        }
        if self.flags & 0b1 != 0 {
            builder = builder.header(header::AUTHORIZATION, format!("Bearer {TOKEN}"));
        } else if self.flags & 0b10 != 0 {
            builder = builder.header(header::AUTHORIZATION, "Bearer wrong-token");
        }
        if self.flags & 0b100 != 0 {
            builder = builder.extension(TrustedConnection);
        }
        builder.body(Body::from(self.body.clone())).ok()
    }
}

/// Objects with credentials (and a few without) for the harness store.
fn seed_objects() -> Vec<Value> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(MARKER);
    let ls = "landscaper.gardener.cloud/v1alpha1";
    vec![
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "creds", "namespace": "default", "labels": {"app": "x"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                    format!("{{\"stringData\":{{\"password\":\"{MARKER}\"}}}}")}},
            "type": "Opaque", "data": {"password": b64}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "default"},
            "data": {"mode": "plain"}}),
        json!({"apiVersion": ls, "kind": "Target",
            "metadata": {"name": "cluster", "namespace": "default"},
            "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster",
                "config": {"kubeconfig": format!("users: [{{user: {{token: {MARKER}}}}}]")}}}),
        json!({"apiVersion": ls, "kind": "Target",
            "metadata": {"name": "custom", "namespace": "default"},
            "spec": {"type": "example.com/custom",
                "config": {"kubeconfig": {"users": [{"user": {"token": MARKER}}]}}}}),
        json!({"apiVersion": ls, "kind": "Target",
            "metadata": {"name": "by-ref", "namespace": "default"},
            "spec": {"type": "landscaper.gardener.cloud/kubernetes-cluster",
                "secretRef": {"name": "creds", "key": "password"}}}),
        json!({"apiVersion": ls, "kind": "DataObject",
            "metadata": {"name": "imported", "namespace": "default",
                "labels": {"data.landscaper.gardener.cloud/context": "Inst.root",
                    "data.landscaper.gardener.cloud/sourceType": "import"},
                "annotations": {FROM_SECRET_ANNOTATION: "true"}},
            "data": {"password": MARKER}}),
        json!({"apiVersion": ls, "kind": "DataObject",
            "metadata": {"name": "plain", "namespace": "default"}, "data": "visible"}),
        json!({"apiVersion": ls, "kind": "Installation",
            "metadata": {"name": "root", "namespace": "default"},
            "spec": {"imports": {"data": [{"name": "password", "secretRef": {"name": "creds"}}]},
                "blueprint": {"ref": {"resourceName": "bp"}}},
            "status": {"phase": "Succeeded"}}),
        json!({"apiVersion": "appliance.landscaper-appliance.io/v1alpha1", "kind": "ManifestFile",
            "metadata": {"name": "all-yaml-0123456789"},
            "spec": {"path": "all.yaml"},
            "status": {"phase": "Error", "lastError": {"message": "data: invalid type: a string, expected a map"},
                "objects": [{"apiVersion": "v1", "kind": "Secret", "namespace": "default", "name": "creds"}]}}),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(method: u8, flags: u8, text: &str) -> Vec<u8> {
        let mut data = vec![method, flags];
        data.extend_from_slice(text.as_bytes());
        data
    }

    #[test]
    fn the_check_sees_secrets_and_lets_authorised_readers_see_them() {
        let harness = Harness::new();
        for (flags, target) in [
            (0, "/api/v1/namespaces/default/secrets/creds"),
            (0, "/apis/landscaper.gardener.cloud/v1alpha1/targets"),
            (0, "/apis/landscaper.gardener.cloud/v1alpha1/dataobjects"),
            (0b1000, "/api/v1/secrets"),
            (1, "/api/v1/secrets"),
            (4, "/apis/landscaper.gardener.cloud/v1alpha1/targets"),
        ] {
            harness
                .check(&input(0, flags, target))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        // The check is not blind: an authorised read shows the marker.
        let request = Input::parse(&input(0, 1, "/api/v1/secrets"))
            .unwrap()
            .request()
            .unwrap();
        let (status, body) = harness.runtime.block_on(harness.send(request));
        assert_eq!(status, 200);
        let b64 = base64::engine::general_purpose::STANDARD.encode(MARKER);
        assert!(String::from_utf8_lossy(&body).contains(&b64));
    }
}
