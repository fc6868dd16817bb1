//! The HTTP server loop: slow clients that never finish their headers are disconnected; long
//! answers (watches) are not cut; shutdown waits for open requests.

use std::time::{Duration, Instant};

use landscaper_appliance::daemon::api::{ApiState, Readiness, router, serve_with};
use landscaper_store::{Store, StoreOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

const HEADER_TIMEOUT: Duration = Duration::from_millis(500);

async fn start() -> (
    std::net::SocketAddr,
    CancellationToken,
    tokio::task::JoinHandle<std::io::Result<()>>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        &dir.path().join("store.redb"),
        StoreOptions {
            durable: false,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let state = ApiState::new(store, Readiness::ready()).with_shutdown(cancel.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(serve_with(
        listener,
        router(state),
        cancel.clone().cancelled_owned(),
        HEADER_TIMEOUT,
    ));
    (address, cancel, server, dir)
}

/// Reads until the server closes the connection; the bytes, or `None` after `limit`.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Option<String> {
    let mut answer = Vec::new();
    let read = tokio::time::timeout(limit, stream.read_to_end(&mut answer)).await;
    match read {
        Ok(_) => Some(String::from_utf8_lossy(&answer).into_owned()),
        Err(_) => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_never_finish_their_headers_are_disconnected() {
    let (address, cancel, server, _dir) = start().await;
    // Headers that never end.
    let mut slow = TcpStream::connect(address).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: 1\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let closed = read_until_closed(&mut slow, Duration::from_secs(10)).await;
    assert!(
        closed.is_some(),
        "the server kept a connection without complete headers open for 10 s"
    );
    assert!(
        started.elapsed() >= HEADER_TIMEOUT / 2,
        "{:?}",
        started.elapsed()
    );
    // A connection that sends nothing at all.
    let mut silent = TcpStream::connect(address).await.unwrap();
    assert!(
        read_until_closed(&mut silent, Duration::from_secs(10))
            .await
            .is_some(),
        "a silent connection stayed open"
    );

    // A complete request is answered, and an answer that takes longer than the header
    // timeout (a watch) is not cut.
    let mut watch = TcpStream::connect(address).await.unwrap();
    watch
        .write_all(
            b"GET /apis/landscaper.gardener.cloud/v1alpha1/installations?watch=true&timeoutSeconds=2 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
    let started = Instant::now();
    let answer = read_until_closed(&mut watch, Duration::from_secs(10))
        .await
        .expect("the watch ends after its timeoutSeconds");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );

    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(15), server)
        .await
        .expect("serve returns after the shutdown signal")
        .unwrap()
        .unwrap();
}
