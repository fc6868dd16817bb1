//! The daemon speaks systemd's notify protocol: a fake `NOTIFY_SOCKET` receives READY=1 with a
//! STATUS line once the daemon serves, WATCHDOG=1 at half of `WATCHDOG_USEC`, and STOPPING=1
//! on SIGTERM.

use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use landscaper_e2e::binary;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Collects datagrams until `done` says so or the deadline passes.
fn receive_until(
    socket: &UnixDatagram,
    timeout: Duration,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    let mut messages = Vec::new();
    let mut buf = vec![0u8; 4096];
    while Instant::now() < deadline && !done(&messages) {
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        if let Ok(n) = socket.recv(&mut buf) {
            messages.push(String::from_utf8_lossy(&buf[..n]).to_string());
        }
    }
    messages
}

#[test]
fn ready_status_watchdog_and_stopping_reach_the_service_manager() {
    let dir = tempfile::tempdir().unwrap();
    let socket_path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    let manifests = dir.path().join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    let port = free_port();
    let log_path = dir.path().join("daemon.log");
    let mut child = Command::new(binary())
        .args(["serve", "--manifests"])
        .arg(&manifests)
        .arg("--data")
        .arg(dir.path().join("data"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("NOTIFY_SOCKET", &socket_path)
        // 400 ms: the daemon must ping at least every 200 ms.
        .env("WATCHDOG_USEC", "400000")
        .env_remove("WATCHDOG_PID")
        .env_remove("LANDSCAPER_APPLIANCE_CONFIG")
        // Under the journal: `<N>` priority prefixes, no timestamps, no colours.
        .env("JOURNAL_STREAM", "8:12345")
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();

    let has =
        |messages: &[String], line: &str| messages.iter().any(|m| m.lines().any(|l| l == line));
    let messages = receive_until(&socket, Duration::from_secs(30), |m| {
        has(m, "READY=1") && m.iter().filter(|x| x.contains("WATCHDOG=1")).count() >= 3
    });
    let ready = messages.iter().find(|m| m.lines().any(|l| l == "READY=1"));
    let ready = ready.unwrap_or_else(|| panic!("no READY=1 in {messages:?}"));
    assert!(
        ready
            .lines()
            .any(|l| l == "STATUS=0 installations: 0 running, 0 succeeded, 0 failed"),
        "READY=1 comes with the job counts: {ready:?}"
    );
    // The API answers by the time READY=1 was sent.
    let api = std::net::TcpStream::connect(("127.0.0.1", port));
    assert!(api.is_ok(), "API not listening after READY=1");
    let pings = messages.iter().filter(|m| m.contains("WATCHDOG=1")).count();
    assert!(pings >= 3, "watchdog pings: {messages:?}");

    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let messages = receive_until(&socket, Duration::from_secs(10), |m| has(m, "STOPPING=1"));
    assert!(
        has(&messages, "STOPPING=1"),
        "no STOPPING=1 in {messages:?}"
    );
    let status = child.wait().unwrap();
    assert!(status.success(), "exit status {status}");

    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(!log.is_empty());
    for line in log.lines() {
        assert!(
            ["<3>", "<4>", "<6>", "<7>"]
                .iter()
                .any(|p| line.starts_with(p)),
            "line without a syslog priority prefix: {line:?}"
        );
        assert!(
            !line.contains('\u{1b}'),
            "colour codes in the journal: {line:?}"
        );
    }
    assert!(
        log.lines()
            .any(|l| l.starts_with("<6>") && l.contains("ready")),
        "{log}"
    );
}
