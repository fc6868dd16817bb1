//! A small HTTP/1.1 client for the CLI's commands that talk to a running daemon. The API is
//! plain HTTP on loopback or the daemon's Unix socket (`unix:///var/lib/.../api.sock`), so a
//! blocking request over a `TcpStream` or `UnixStream` is all the CLI needs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("server address {0:?} is not of the form http://HOST:PORT or unix:///PATH")]
    BadServer(String),
    #[error(
        "cannot reach the daemon at {server}: {source} (is `landscaper-appliance serve` running?)"
    )]
    Connect {
        server: String,
        #[source]
        source: std::io::Error,
    },
    #[error("reading the response from {server}: {message}")]
    Response { server: String, message: String },
    /// A Kubernetes `Status` failure, or another non-2xx answer.
    #[error("{message}")]
    Api {
        code: u16,
        reason: String,
        message: String,
    },
}

pub struct Client {
    server: String,
    host_port: String,
    /// Requests go over this Unix socket instead of TCP.
    socket: Option<PathBuf>,
    /// Bearer token sent with writes.
    token: Option<String>,
}

/// Content type of the patches [`Client::patch_json`] sends.
pub const MERGE_PATCH: &str = "application/merge-patch+json";

impl Client {
    pub fn new(server: &str) -> Result<Client, ClientError> {
        if let Some(path) = server
            .strip_prefix("unix://")
            .filter(|p| p.starts_with('/'))
        {
            return Ok(Client::unix(Path::new(path)));
        }
        let host_port = server
            .strip_prefix("http://")
            .map(|s| s.trim_end_matches('/'))
            .filter(|s| !s.is_empty() && !s.contains('/'))
            .ok_or_else(|| ClientError::BadServer(server.to_string()))?;
        Ok(Client {
            server: server.to_string(),
            host_port: host_port.to_string(),
            socket: None,
            token: None,
        })
    }

    /// A client of the daemon's Unix socket (authorised by file permissions: no token).
    pub fn unix(path: &Path) -> Client {
        Client {
            server: format!("unix://{}", path.display()),
            host_port: "localhost".into(),
            socket: Some(path.to_path_buf()),
            token: None,
        }
    }

    /// The CLI's client: the daemon's Unix socket when `server` is the default address and the
    /// socket in the data folder (`data_dir`, else the default one) accepts connections (as
    /// root or the service user); otherwise `server`.
    pub fn for_cli(server: &str, data_dir: Option<&Path>) -> Result<Client, ClientError> {
        if server == crate::cli::DEFAULT_SERVER {
            let data = data_dir
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(crate::config::DEFAULT_DATA_DIR));
            let socket = data.join(crate::config::SOCKET_FILE_NAME);
            if UnixStream::connect(&socket).is_ok() {
                return Ok(Client::unix(&socket));
            }
        }
        Client::new(server)
    }

    /// Whether requests go over a Unix socket.
    pub fn is_unix(&self) -> bool {
        self.socket.is_some()
    }

    /// Sends `token` as bearer token with writes ([`patch_json`](Self::patch_json),
    /// [`delete`](Self::delete)).
    pub fn with_token(mut self, token: impl Into<String>) -> Client {
        self.token = Some(token.into());
        self
    }

    /// GETs a path and decodes the JSON body; non-2xx answers become [`ClientError::Api`].
    pub fn get_json(&self, path_and_query: &str) -> Result<Value, ClientError> {
        self.get_json_as(path_and_query, "application/json")
    }

    /// Like [`get_json`](Self::get_json) with an explicit `Accept` header (e.g. for tables).
    pub fn get_json_as(&self, path_and_query: &str, accept: &str) -> Result<Value, ClientError> {
        let (code, body) = self.get(path_and_query, accept)?;
        self.decode(code, &body)
    }

    /// PATCHes a path with a merge patch (`patch` is the JSON merge patch) and decodes the
    /// answer (the patched object); non-2xx answers become [`ClientError::Api`].
    pub fn patch_json(&self, path_and_query: &str, patch: &Value) -> Result<Value, ClientError> {
        let body = serde_json::to_vec(patch).unwrap_or_default();
        let (code, body) = self.request(
            "PATCH",
            path_and_query,
            "application/json",
            Some((MERGE_PATCH, &body)),
        )?;
        self.decode(code, &body)
    }

    /// POSTs a JSON body (a create) and decodes the answer; non-2xx answers become
    /// [`ClientError::Api`].
    pub fn post_json(&self, path_and_query: &str, object: &Value) -> Result<Value, ClientError> {
        let body = serde_json::to_vec(object).unwrap_or_default();
        let (code, body) = self.request(
            "POST",
            path_and_query,
            "application/json",
            Some(("application/json", &body)),
        )?;
        self.decode(code, &body)
    }

    /// DELETEs a path and decodes the answer (the object, with a `deletionTimestamp` while
    /// finalizers keep it); non-2xx answers become [`ClientError::Api`].
    pub fn delete(&self, path_and_query: &str) -> Result<Value, ClientError> {
        let (code, body) = self.request("DELETE", path_and_query, "application/json", None)?;
        self.decode(code, &body)
    }

    fn decode(&self, code: u16, body: &[u8]) -> Result<Value, ClientError> {
        let value: Value = serde_json::from_slice(body).map_err(|e| ClientError::Response {
            server: self.server.clone(),
            message: format!("invalid JSON ({e})"),
        })?;
        if (200..300).contains(&code) {
            return Ok(value);
        }
        Err(ClientError::Api {
            code,
            reason: value["reason"].as_str().unwrap_or("").to_string(),
            message: value["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("the server answered {code}")),
        })
    }

    pub fn get(&self, path_and_query: &str, accept: &str) -> Result<(u16, Vec<u8>), ClientError> {
        self.request("GET", path_and_query, accept, None)
    }

    /// One request; `body` is its content type and bytes. Writes carry the bearer token.
    fn request(
        &self,
        method: &str,
        path_and_query: &str,
        accept: &str,
        body: Option<(&str, &[u8])>,
    ) -> Result<(u16, Vec<u8>), ClientError> {
        let (code, mut reader) = self.open(
            method,
            path_and_query,
            accept,
            body,
            Some(Duration::from_secs(60)),
        )?;
        let mut body = Vec::new();
        reader
            .read_to_end(&mut body)
            .map_err(|e| self.bad(e.to_string()))?;
        Ok((code, body))
    }

    fn bad(&self, message: String) -> ClientError {
        ClientError::Response {
            server: self.server.clone(),
            message,
        }
    }

    /// Follows a watch (`path_and_query` with `watch=true`): calls `on_event` with every event
    /// (`{"type": …, "object": …}`) as it arrives, until the server ends the stream or
    /// `on_event` answers `false`. Non-2xx answers become [`ClientError::Api`].
    pub fn watch(
        &self,
        path_and_query: &str,
        accept: &str,
        mut on_event: impl FnMut(Value) -> Result<bool, ClientError>,
    ) -> Result<(), ClientError> {
        let (code, reader) = self.open("GET", path_and_query, accept, None, None)?;
        let mut reader = BufReader::new(reader);
        if !(200..300).contains(&code) {
            let mut body = Vec::new();
            reader
                .read_to_end(&mut body)
                .map_err(|e| self.bad(e.to_string()))?;
            return self.decode(code, &body).map(|_| ());
        }
        loop {
            let mut line = String::new();
            let n = reader
                .read_line(&mut line)
                .map_err(|e| self.bad(e.to_string()))?;
            if n == 0 {
                return Ok(());
            }
            if line.trim().is_empty() {
                continue;
            }
            let event: Value = serde_json::from_str(&line)
                .map_err(|e| self.bad(format!("invalid watch event ({e})")))?;
            if !on_event(event)? {
                return Ok(());
            }
        }
    }

    /// Sends one request and reads the answer's head; the body is left to read.
    fn open(
        &self,
        method: &str,
        path_and_query: &str,
        accept: &str,
        body: Option<(&str, &[u8])>,
        read_timeout: Option<Duration>,
    ) -> Result<(u16, BodyReader), ClientError> {
        let connect_err = |source| ClientError::Connect {
            server: self.server.clone(),
            source,
        };
        let stream: Box<dyn ReadWrite> = match &self.socket {
            Some(path) => {
                let s = UnixStream::connect(path).map_err(connect_err)?;
                s.set_read_timeout(read_timeout).map_err(connect_err)?;
                Box::new(s)
            }
            None => {
                let s = TcpStream::connect(&self.host_port).map_err(connect_err)?;
                s.set_read_timeout(read_timeout).map_err(connect_err)?;
                Box::new(s)
            }
        };
        let mut stream = stream;
        // One write: `write!` on an unbuffered stream would send the request in pieces.
        let mut request = format!(
            "{method} {path_and_query} HTTP/1.1\r\nHost: {}\r\nAccept: {accept}\r\nUser-Agent: landscaper-appliance-cli/{}\r\nConnection: close\r\n",
            self.host_port,
            env!("CARGO_PKG_VERSION")
        )
        .into_bytes();
        if method != "GET"
            && let Some(token) = &self.token
        {
            request.extend_from_slice(format!("Authorization: Bearer {token}\r\n").as_bytes());
        }
        let body = body.unwrap_or(("", b""));
        if !body.0.is_empty() {
            request.extend_from_slice(format!("Content-Type: {}\r\n", body.0).as_bytes());
        }
        if method != "GET" {
            request.extend_from_slice(format!("Content-Length: {}\r\n", body.1.len()).as_bytes());
        }
        request.extend_from_slice(b"\r\n");
        request.extend_from_slice(body.1);
        stream.write_all(&request).map_err(connect_err)?;
        let mut reader = BufReader::new(stream);
        let mut status_line = String::new();
        reader
            .read_line(&mut status_line)
            .map_err(|e| self.bad(e.to_string()))?;
        let code: u16 = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| self.bad(format!("bad status line {status_line:?}")))?;
        let mut framing = Framing::UntilClose;
        loop {
            let mut line = String::new();
            reader
                .read_line(&mut line)
                .map_err(|e| self.bad(e.to_string()))?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                let value = value.trim();
                if name.eq_ignore_ascii_case("transfer-encoding")
                    && value.eq_ignore_ascii_case("chunked")
                {
                    framing = Framing::Chunked {
                        left: 0,
                        done: false,
                    };
                } else if name.eq_ignore_ascii_case("content-length")
                    && !matches!(framing, Framing::Chunked { .. })
                    && let Ok(n) = value.parse::<u64>()
                {
                    framing = Framing::Length(n);
                }
            }
        }
        Ok((code, BodyReader { reader, framing }))
    }
}

/// How the body of an answer ends.
enum Framing {
    Length(u64),
    /// `left`: bytes left in the current chunk.
    Chunked {
        left: usize,
        done: bool,
    },
    UntilClose,
}

/// The body of an answer, decoded from its framing as it is read.
pub struct BodyReader {
    reader: BufReader<Box<dyn ReadWrite>>,
    framing: Framing,
}

impl Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
        match &mut self.framing {
            Framing::UntilClose => self.reader.read(buf),
            Framing::Length(left) => {
                if *left == 0 || buf.is_empty() {
                    return Ok(0);
                }
                let max = usize::try_from(*left).unwrap_or(usize::MAX).min(buf.len());
                let n = self.reader.read(&mut buf[..max])?;
                if n == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                *left -= n as u64;
                Ok(n)
            }
            Framing::Chunked { left, done } => {
                if *done || buf.is_empty() {
                    return Ok(0);
                }
                if *left == 0 {
                    let mut size_line = String::new();
                    if self.reader.read_line(&mut size_line)? == 0 {
                        return Err(std::io::ErrorKind::UnexpectedEof.into());
                    }
                    let size =
                        usize::from_str_radix(size_line.trim().split(';').next().unwrap_or(""), 16)
                            .map_err(|_| invalid(format!("bad chunk size {size_line:?}")))?;
                    if size == 0 {
                        *done = true;
                        return Ok(0);
                    }
                    *left = size;
                }
                let max = (*left).min(buf.len());
                let n = self.reader.read(&mut buf[..max])?;
                if n == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                *left -= n;
                if *left == 0 {
                    let mut crlf = [0u8; 2];
                    self.reader.read_exact(&mut crlf)?;
                }
                Ok(n)
            }
        }
    }
}

/// A connected stream of either kind.
trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn serve_once(response: String) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            // Read the whole request head before answering and closing.
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.ends_with(b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            s.write_all(response.as_bytes()).unwrap();
        });
        format!("http://{addr}")
    }

    #[test]
    fn decodes_chunked_and_sized_bodies_and_status_errors() {
        let server = serve_once(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n".into(),
        );
        let v = Client::new(&server).unwrap().get_json("/x").unwrap();
        assert_eq!(v["a"], 1);
        let body = r#"{"kind":"Status","reason":"NotFound","message":"gone"}"#;
        let server = serve_once(format!(
            "HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
        match Client::new(&server).unwrap().get_json("/x") {
            Err(ClientError::Api {
                code,
                reason,
                message,
            }) => {
                assert_eq!(
                    (code, reason.as_str(), message.as_str()),
                    (404, "NotFound", "gone")
                );
            }
            other => panic!("expected a NotFound API error, got {other:?}"),
        }
    }

    /// Answers one request with `response` and hands the request (head and body) back.
    fn serve_capturing(response: String) -> (String, std::sync::mpsc::Receiver<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            loop {
                let text = String::from_utf8_lossy(&request).to_string();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("Content-Length: "))
                        .and_then(|n| n.parse::<usize>().ok())
                        .unwrap_or(0);
                    if body.len() >= length {
                        break;
                    }
                }
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            s.write_all(response.as_bytes()).unwrap();
            let _ = tx.send(String::from_utf8_lossy(&request).to_string());
        });
        (format!("http://{addr}"), rx)
    }

    #[test]
    fn writes_carry_the_token_and_the_patch() {
        let ok = |body: &str| {
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
        };
        let (server, request) = serve_capturing(ok(r#"{"metadata":{"name":"a"}}"#));
        let client = Client::new(&server).unwrap().with_token("s3cret");
        let patch = serde_json::json!({"metadata": {"annotations": {"x": "y"}}});
        let answer = client.patch_json("/apis/g/v/x/a", &patch).unwrap();
        assert_eq!(answer["metadata"]["name"], "a");
        let request = request.recv().unwrap();
        assert!(
            request.starts_with("PATCH /apis/g/v/x/a HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(
            request.contains("\r\nAuthorization: Bearer s3cret\r\n"),
            "{request}"
        );
        assert!(
            request.contains("\r\nContent-Type: application/merge-patch+json\r\n"),
            "{request}"
        );
        assert!(request.ends_with(r#"{"metadata":{"annotations":{"x":"y"}}}"#));

        let (server, request) = serve_capturing(ok("{}"));
        Client::new(&server)
            .unwrap()
            .with_token("s3cret")
            .delete("/x")
            .unwrap();
        let request = request.recv().unwrap();
        assert!(request.starts_with("DELETE /x HTTP/1.1\r\n"), "{request}");
        assert!(request.contains("Content-Length: 0\r\n"), "{request}");
        assert!(
            request.contains("Authorization: Bearer s3cret"),
            "{request}"
        );

        // Reads never send the token.
        let (server, request) = serve_capturing(ok("{}"));
        Client::new(&server)
            .unwrap()
            .with_token("s3cret")
            .get_json("/x")
            .unwrap();
        assert!(!request.recv().unwrap().contains("s3cret"));
    }

    #[test]
    fn follows_a_watch_event_by_event() {
        let events = "{\"type\":\"ADDED\",\"object\":{\"n\":1}}\n{\"type\":\"MODIFIED\",\"object\":{\"n\":2}}\n";
        // The second event is split across chunks, as a server may cut them.
        let (a, b) = events.split_at(40);
        let server = serve_once(format!(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
            a.len(),
            b.len()
        ));
        let mut seen = Vec::new();
        Client::new(&server)
            .unwrap()
            .watch("/x?watch=true", "application/json", |event| {
                seen.push((event["type"].clone(), event["object"]["n"].clone()));
                Ok(true)
            })
            .unwrap();
        assert_eq!(
            seen,
            [
                (Value::from("ADDED"), Value::from(1)),
                (Value::from("MODIFIED"), Value::from(2))
            ]
        );
        // A refused watch is the API's error.
        let body = r#"{"kind":"Status","reason":"Expired","message":"too old"}"#;
        let server = serve_once(format!(
            "HTTP/1.1 410 Gone\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
        let error = Client::new(&server)
            .unwrap()
            .watch("/x?watch=true", "application/json", |_| Ok(true))
            .unwrap_err();
        assert!(
            matches!(error, ClientError::Api { code: 410, .. }),
            "{error:?}"
        );
    }

    #[test]
    fn talks_over_a_unix_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("api.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let body = r#"{"ok":true}"#;
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        });
        let client = Client::new(&format!("unix://{}", path.display())).unwrap();
        assert!(client.is_unix());
        assert_eq!(client.get_json("/x").unwrap()["ok"], true);
    }

    #[test]
    fn rejects_non_http_servers() {
        assert!(Client::new("unix://relative/path").is_err());
        assert!(Client::new("https://x:1").is_err());
        assert!(Client::new("http://").is_err());
        assert!(Client::new("127.0.0.1:8080").is_err());
    }
}
