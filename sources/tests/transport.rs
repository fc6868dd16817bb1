//! The real HTTP client against servers made here: a server that never answers (timeout,
//! retryable), a chunked body over the size limit (fatal), a refused connection (retryable), and
//! a helm repository over HTTPS with a private CA given as `customCAData` (plain and base64 PEM;
//! without it the certificate is refused as a configuration problem).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use landscaper_sources::{
    ChartContent, ChartSources, ChartSpec, FetchContext, SourceError, SourcesConfig,
    http::HyperTransport,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn sources(max_artifact_bytes: u64, timeout: Duration) -> ChartSources {
    ChartSources::new(
        Arc::new(HyperTransport::new()),
        None,
        SourcesConfig {
            max_artifact_bytes,
            request_timeout: timeout,
        },
    )
}

fn url_spec(url: &str) -> ChartSpec {
    serde_json::from_value(serde_json::json!({"archive": {"remote": {"url": url}}})).expect("spec")
}

/// A tiny chart .tgz.
fn chart_tgz() -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    let content = b"apiVersion: v2\nname: app\nversion: 1.0.0\n";
    let mut header = tar::Header::new_gnu();
    header.set_size(content.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    builder
        .append_data(&mut header, "app/Chart.yaml", &content[..])
        .expect("append");
    let tar = builder.into_inner().expect("tar");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &tar).expect("gzip");
    gz.finish().expect("gzip")
}

#[tokio::test]
async fn a_silent_server_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket); // never answers
        }
    });
    let started = std::time::Instant::now();
    let err = sources(1 << 20, Duration::from_millis(500))
        .fetch(
            &url_spec(&format!("http://127.0.0.1:{port}/app.tgz")),
            &FetchContext::default(),
        )
        .await
        .expect_err("timeout");
    assert!(matches!(err, SourceError::Timeout { .. }), "{err}");
    assert!(err.is_retryable());
    assert!(started.elapsed() < Duration::from_secs(5));
    server.abort();
}

#[tokio::test]
async fn a_deadline_shortens_the_request() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let started = std::time::Instant::now();
    let ctx = FetchContext {
        deadline: Some(tokio::time::Instant::now() + Duration::from_millis(300)),
        ..FetchContext::default()
    };
    let err = sources(1 << 20, Duration::from_secs(60))
        .fetch(&url_spec(&format!("http://127.0.0.1:{port}/app.tgz")), &ctx)
        .await
        .expect_err("deadline");
    assert!(matches!(err, SourceError::Timeout { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    server.abort();
}

#[tokio::test]
async fn a_chunked_body_over_the_limit_is_cut_off() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let _ = socket
                    .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                    .await;
                let chunk = vec![b'x'; 1000];
                for _ in 0..100 {
                    let mut frame = format!("{:x}\r\n", chunk.len()).into_bytes();
                    frame.extend_from_slice(&chunk);
                    frame.extend_from_slice(b"\r\n");
                    if socket.write_all(&frame).await.is_err() {
                        return;
                    }
                }
                let _ = socket.write_all(b"0\r\n\r\n").await;
            });
        }
    });
    let err = sources(10_000, Duration::from_secs(10))
        .fetch(
            &url_spec(&format!("http://127.0.0.1:{port}/big.tgz")),
            &FetchContext::default(),
        )
        .await
        .expect_err("too large");
    assert!(
        matches!(err, SourceError::TooLarge { limit: 10_000, .. }),
        "{err}"
    );
    assert!(!err.is_retryable());
    server.abort();
}

#[tokio::test]
async fn a_refused_connection_is_retryable() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let err = sources(1 << 20, Duration::from_secs(5))
        .fetch(
            &url_spec(&format!("http://127.0.0.1:{port}/app.tgz")),
            &FetchContext::default(),
        )
        .await
        .expect_err("refused");
    assert!(matches!(err, SourceError::Unreachable { .. }), "{err}");
    assert!(err.is_retryable());
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
}

/// A CA and a server configuration for 127.0.0.1 signed by it.
fn tls_material() -> (String, Arc<rustls::ServerConfig>) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "sources-test-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca");
    let ca_pem = ca_cert.pem();
    let issuer = Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate().expect("key");
    let mut server_params =
        CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("server params");
    server_params
        .distinguished_name
        .push(DnType::CommonName, "sources-test-server");
    let server_cert = server_params
        .signed_by(&server_key, &issuer)
        .expect("server cert");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(
        vec![rustls::pki_types::CertificateDer::from(
            server_cert.der().to_vec(),
        )],
        rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
            server_key.serialize_der(),
        )),
    )
    .expect("server config");
    (ca_pem, Arc::new(config))
}

/// Serves `index.yaml` and `app-1.0.0.tgz` over HTTPS.
async fn https_repo(
    config: Arc<rustls::ServerConfig>,
    tgz: Vec<u8>,
) -> (u16, tokio::task::JoinHandle<()>) {
    use http_body_util::Full;
    use hyper::body::Bytes;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let index = "apiVersion: v1\nentries:\n  app:\n  - name: app\n    version: 1.0.0\n    urls: [app-1.0.0.tgz]\n";
    let task = tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let tgz = tgz.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(socket).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let body = match req.uri().path() {
                            "/index.yaml" => Some(index.as_bytes().to_vec()),
                            "/app-1.0.0.tgz" => Some(tgz.clone()),
                            _ => None,
                        };
                        async move {
                            let response = match body {
                                Some(b) => hyper::Response::new(Full::new(Bytes::from(b))),
                                None => {
                                    let mut r = hyper::Response::new(Full::new(Bytes::new()));
                                    *r.status_mut() = hyper::StatusCode::NOT_FOUND;
                                    r
                                }
                            };
                            Ok::<_, std::convert::Infallible>(response)
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (port, task)
}

#[tokio::test]
async fn https_repository_with_a_custom_ca() {
    let (ca_pem, config) = tls_material();
    let tgz = chart_tgz();
    let (port, server) = https_repo(config, tgz.clone()).await;
    let url = format!("https://127.0.0.1:{port}");
    let spec: ChartSpec = serde_json::from_value(serde_json::json!({"helmChartRepo": {
        "helmChartRepoUrl": url, "helmChartName": "app", "helmChartVersion": "1.0.0",
    }}))
    .expect("spec");
    let with_ca = |ca: &str| {
        FetchContext {
        configurations: [(
            "helmChartRepoCredentials".to_string(),
            serde_json::json!({"auths": [{"url": url, "authHeader": "Basic dTpw", "customCAData": ca}]}),
        )]
        .into(),
        ..FetchContext::default()
    }
    };
    let err = sources(1 << 20, Duration::from_secs(10))
        .fetch(&spec, &FetchContext::default())
        .await
        .expect_err("untrusted certificate");
    assert!(matches!(err, SourceError::Tls { .. }), "{err}");
    assert!(!err.is_retryable());
    assert!(err.is_configuration_problem());

    for ca in [
        ca_pem.clone(),
        base64::engine::general_purpose::STANDARD.encode(&ca_pem),
    ] {
        let got = sources(1 << 20, Duration::from_secs(10))
            .fetch(&spec, &with_ca(&ca))
            .await
            .expect("trusted through customCAData");
        assert_eq!(got.content, ChartContent::Archive(tgz.clone()));
    }
    server.abort();
}
