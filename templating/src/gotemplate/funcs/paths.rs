//! sprig's path functions (Go's `path` and, on Linux, identical `path/filepath`) and URL
//! functions (`urlParse`, `urlJoin`, after Go's `net/url`).

use std::collections::BTreeMap;

use super::super::function::{Arity, FuncError, FuncMap};
use super::super::value::Value;
use super::args::{self, s};

/// Go's `path.Clean`.
pub fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// Go's `path.Base`.
pub fn base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    match trimmed.rfind('/') {
        Some(i) => trimmed[i + 1..].to_string(),
        None => trimmed.to_string(),
    }
}

/// Go's `path.Dir`.
pub fn dir(p: &str) -> String {
    let i = p.rfind('/').map(|i| i + 1).unwrap_or(0);
    clean(&p[..i])
}

/// Go's `path.Ext`.
pub fn ext(p: &str) -> String {
    for (i, c) in p.char_indices().rev() {
        if c == '/' {
            break;
        }
        if c == '.' {
            return p[i..].to_string();
        }
    }
    String::new()
}

pub fn register(m: &mut FuncMap) {
    for name in ["base", "osBase"] {
        m.insert(name, Arity::Exact(1), |_, a| {
            Ok(s(base(&args::string(&a[0])?)))
        });
    }
    for name in ["dir", "osDir"] {
        m.insert(name, Arity::Exact(1), |_, a| {
            Ok(s(dir(&args::string(&a[0])?)))
        });
    }
    for name in ["clean", "osClean"] {
        m.insert(name, Arity::Exact(1), |_, a| {
            Ok(s(clean(&args::string(&a[0])?)))
        });
    }
    for name in ["ext", "osExt"] {
        m.insert(name, Arity::Exact(1), |_, a| {
            Ok(s(ext(&args::string(&a[0])?)))
        });
    }
    for name in ["isAbs", "osIsAbs"] {
        m.insert(name, Arity::Exact(1), |_, a| {
            Ok(Value::Bool(args::string(&a[0])?.starts_with('/')))
        });
    }
    m.insert("urlParse", Arity::Exact(1), |_, a| {
        let u = Url::parse(&args::string(&a[0])?)
            .map_err(|e| FuncError::new(format!("unable to parse url: {e}")))?;
        let mut d = BTreeMap::new();
        d.insert("scheme".into(), s(u.scheme.as_str()));
        d.insert("host".into(), s(u.host.as_str()));
        d.insert("hostname".into(), s(u.hostname()));
        d.insert("path".into(), s(u.path.as_str()));
        d.insert("query".into(), s(u.raw_query.as_str()));
        d.insert("opaque".into(), s(u.opaque.as_str()));
        d.insert("fragment".into(), s(u.fragment.as_str()));
        d.insert("userinfo".into(), s(u.userinfo_string()));
        Ok(Value::map(d))
    });
    m.insert("urlJoin", Arity::Exact(1), |_, a| {
        let d = args::map(&a[0])?;
        let get = |k: &str| -> Result<String, FuncError> {
            let Some(d) = &d else {
                return Ok(String::new());
            };
            match d.borrow().get(k) {
                None => Ok(String::new()),
                Some(Value::String(v)) => Ok(v.to_string()),
                Some(Value::Nil) => Err(FuncError::new(
                    "runtime error: invalid memory address or nil pointer dereference",
                )),
                Some(other) => Err(FuncError::new(format!(
                    "unable to parse {k} key, must be of type string, but {} found",
                    super::args::kind_name(other)
                ))),
            }
        };
        let mut u = Url {
            scheme: get("scheme")?,
            host: get("host")?,
            path: get("path")?,
            raw_query: get("query")?,
            opaque: get("opaque")?,
            fragment: get("fragment")?,
            ..Url::default()
        };
        let userinfo = get("userinfo")?;
        if !userinfo.is_empty() {
            let tmp = Url::parse(&format!("proto://{userinfo}@host"))
                .map_err(|e| FuncError::new(format!("unable to parse userinfo in dict: {e}")))?;
            u.user = tmp.user;
        }
        Ok(s(u.to_string()))
    });
}

// ---- a subset of Go's net/url ---------------------------------------------------------------

#[derive(Default, Debug)]
struct Url {
    scheme: String,
    opaque: String,
    user: Option<(String, Option<String>)>,
    host: String,
    path: String,
    raw_query: String,
    fragment: String,
    force_query: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Enc {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

fn should_escape(c: u8, mode: Enc) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if (mode == Enc::Host || mode == Enc::Zone)
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => {
            return match mode {
                Enc::Path => c == b'?',
                Enc::UserPassword => c == b'@' || c == b'/' || c == b'?' || c == b':',
                Enc::QueryComponent => true,
                Enc::Fragment => false,
                _ => true,
            };
        }
        _ => {}
    }
    if mode == Enc::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

fn escape(text: &str, mode: Enc) -> String {
    let mut out = String::new();
    for &c in text.as_bytes() {
        if should_escape(c, mode) {
            if c == b' ' && mode == Enc::QueryComponent {
                out.push('+');
            } else {
                out.push_str(&format!("%{c:02X}"));
            }
        } else {
            out.push(c as char);
        }
    }
    out
}

fn unescape(text: &str, mode: Enc) -> Result<String, String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len()
                    || !b[i + 1].is_ascii_hexdigit()
                    || !b[i + 2].is_ascii_hexdigit()
                {
                    let end = (i + 3).min(b.len());
                    return Err(format!(
                        "invalid URL escape {}",
                        crate::gofmt::quote(&String::from_utf8_lossy(&b[i..end]))
                    ));
                }
                let v = u8::from_str_radix(&text[i + 1..i + 3], 16).unwrap_or(0);
                if mode == Enc::Host && v < 0x80 && text[i..i + 3] != *"%25" {
                    return Err(format!(
                        "invalid URL escape {}",
                        crate::gofmt::quote(&text[i..i + 3])
                    ));
                }
                out.push(v);
                i += 3;
            }
            b'+' if mode == Enc::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                if (mode == Enc::Host || mode == Enc::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {} in host name",
                        crate::gofmt::quote(&(c as char).to_string())
                    ));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `parseHost`: an IP literal in brackets (with an optional zone), or a name; an optional
/// port of digits.
fn parse_host(host: &str) -> Result<String, String> {
    let valid_port = |port: &str| {
        port.is_empty()
            || port
                .strip_prefix(':')
                .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
    };
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return Err("missing ']' in host".into());
        };
        let colon_port = &host[i + 1..];
        if !valid_port(colon_port) {
            return Err(format!(
                "invalid port {} after host",
                crate::gofmt::quote(colon_port)
            ));
        }
        if let Some(zone) = host[..i].find("%25") {
            let host1 = unescape(&host[..zone], Enc::Host)?;
            let host2 = unescape(&host[zone..i], Enc::Zone)?;
            let host3 = unescape(&host[i..], Enc::Host)?;
            return Ok(host1 + &host2 + &host3);
        }
    } else if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_port(colon_port) {
            return Err(format!(
                "invalid port {} after host",
                crate::gofmt::quote(colon_port)
            ));
        }
    }
    unescape(host, Enc::Host)
}

fn url_err(op: &str, url: &str, msg: &str) -> String {
    format!("{op} {}: {msg}", crate::gofmt::quote(url))
}

impl Url {
    fn parse(raw: &str) -> Result<Url, String> {
        let (rest, frag) = match raw.split_once('#') {
            Some((r, f)) => (r, Some(f)),
            None => (raw, None),
        };
        let mut u = Url::parse_main(rest, rest)?;
        if let Some(f) = frag {
            u.fragment = unescape(f, Enc::Fragment).map_err(|e| url_err("parse", raw, &e))?;
        }
        Ok(u)
    }

    fn parse_main(full: &str, raw: &str) -> Result<Url, String> {
        if raw.bytes().any(|c| c < 0x20 || c == 0x7f) {
            return Err(url_err(
                "parse",
                full,
                "net/url: invalid control character in URL",
            ));
        }
        let mut u = Url::default();
        if raw.is_empty() {
            return Ok(u);
        }
        let mut rest = raw;
        // Scheme.
        if let Some(i) = rest.find(':') {
            let cand = &rest[..i];
            let b = cand.as_bytes();
            if i == 0 {
                return Err(url_err("parse", full, "missing protocol scheme"));
            }
            if b[0].is_ascii_alphabetic()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
            {
                u.scheme = cand.to_ascii_lowercase();
                rest = &rest[i + 1..];
            } else if !b
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
            {
                // Not a scheme: "first path segment in URL cannot contain colon" is checked below.
            } else {
                return Err(url_err(
                    "parse",
                    full,
                    "first path segment in URL cannot contain colon",
                ));
            }
        }
        if rest.ends_with('?') && rest.matches('?').count() == 1 {
            u.force_query = true;
            rest = &rest[..rest.len() - 1];
        } else if let Some((r, q)) = rest.split_once('?') {
            u.raw_query = q.to_string();
            rest = r;
        }
        if !rest.starts_with('/') {
            if !u.scheme.is_empty() {
                u.opaque = rest.to_string();
                return Ok(u);
            }
            if let Some(colon) = rest.find(':')
                && rest.find('/').is_none_or(|slash| colon < slash)
            {
                {
                    return Err(url_err(
                        "parse",
                        full,
                        "first path segment in URL cannot contain colon",
                    ));
                }
            }
        }
        if (!u.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
            let after = &rest[2..];
            let (authority, path) = match after.find('/') {
                Some(i) => (&after[..i], &after[i..]),
                None => (after, ""),
            };
            let (userinfo, host) = match authority.rfind('@') {
                Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
                None => (None, authority),
            };
            // Go's parseAuthority: the host first, then the userinfo.
            u.host = parse_host(host).map_err(|e| url_err("parse", full, &e))?;
            if let Some(ui) = userinfo {
                let valid = ui
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c));
                if !valid {
                    return Err(url_err("parse", full, "net/url: invalid userinfo"));
                }
                let (user, pass) = match ui.split_once(':') {
                    Some((a, b)) => (a, Some(b)),
                    None => (ui, None),
                };
                let user =
                    unescape(user, Enc::UserPassword).map_err(|e| url_err("parse", full, &e))?;
                let pass = match pass {
                    Some(p) => Some(
                        unescape(p, Enc::UserPassword).map_err(|e| url_err("parse", full, &e))?,
                    ),
                    None => None,
                };
                u.user = Some((user, pass));
            }
            rest = path;
        }
        u.path = unescape(rest, Enc::Path).map_err(|e| url_err("parse", full, &e))?;
        Ok(u)
    }

    fn hostname(&self) -> String {
        let h = &self.host;
        if h.starts_with('[') {
            if let Some(i) = h.find(']') {
                return h[1..i].to_string();
            }
            return h.strip_prefix('[').unwrap_or(h).to_string();
        }
        match h.rfind(':') {
            Some(i) => h[..i].to_string(),
            None => h.clone(),
        }
    }

    fn userinfo_string(&self) -> String {
        match &self.user {
            None => String::new(),
            Some((user, pass)) => {
                let mut out = escape(user, Enc::UserPassword);
                if let Some(p) = pass {
                    out.push(':');
                    out.push_str(&escape(p, Enc::UserPassword));
                }
                out
            }
        }
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut buf = String::new();
        if !self.scheme.is_empty() {
            buf.push_str(&self.scheme);
            buf.push(':');
        }
        if !self.opaque.is_empty() {
            buf.push_str(&self.opaque);
        } else {
            if !self.scheme.is_empty() || !self.host.is_empty() || self.user.is_some() {
                if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
                    buf.push_str("//");
                }
                if self.user.is_some() {
                    buf.push_str(&self.userinfo_string());
                    buf.push('@');
                }
                if !self.host.is_empty() {
                    buf.push_str(&escape(&self.host, Enc::Host));
                }
            }
            let path = escape(&self.path, Enc::Path);
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                buf.push('/');
            }
            if buf.is_empty() {
                let seg = path.split('/').next().unwrap_or("");
                if seg.contains(':') {
                    buf.push_str("./");
                }
            }
            buf.push_str(&path);
        }
        if self.force_query || !self.raw_query.is_empty() {
            buf.push('?');
            buf.push_str(&self.raw_query);
        }
        if !self.fragment.is_empty() {
            buf.push('#');
            buf.push_str(&escape(&self.fragment, Enc::Fragment));
        }
        f.write_str(&buf)
    }
}
