//! Token-free actions on the status page for the host's own operator: `landscaper-appliance ui`
//! asks the daemon (with the token, or over the Unix socket) for a one-time login link; opening
//! it sets an HttpOnly, SameSite=Strict session cookie, and the page's actions accept that
//! cookie instead of the pasted token. Codes are single-use and expire quickly; sessions live
//! in memory only (a restart logs everyone out). Secrets are compared in constant time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::daemon::api::token::ApiToken;

/// How long a login link stays valid.
pub const CODE_TTL: Duration = Duration::from_secs(120);
/// How long a session lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// At most this many open codes and sessions (older ones are dropped first).
const LIMIT: usize = 256;
pub const COOKIE: &str = "landscaper_ui_session";

#[derive(Debug, Default)]
pub struct Sessions {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// code → expiry.
    codes: HashMap<String, Instant>,
    /// session id → expiry.
    sessions: HashMap<String, Instant>,
}

fn random() -> Option<String> {
    ApiToken::generate().ok().map(|t| t.expose().to_string())
}

fn prune(map: &mut HashMap<String, Instant>, now: Instant) {
    map.retain(|_, expiry| *expiry > now);
    while map.len() >= LIMIT {
        let Some(oldest) = map.iter().min_by_key(|(_, e)| **e).map(|(k, _)| k.clone()) else {
            break;
        };
        map.remove(&oldest);
    }
}

fn find(map: &HashMap<String, Instant>, candidate: &str, now: Instant) -> Option<String> {
    map.iter()
        .find(|(k, expiry)| {
            **expiry > now && ApiToken::parse(k).is_some_and(|t| t.matches(candidate))
        })
        .map(|(k, _)| k.clone())
}

impl Sessions {
    /// A new one-time login code; `None` when the OS random generator fails.
    pub fn new_code(&self, now: Instant) -> Option<String> {
        let code = random()?;
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        prune(&mut inner.codes, now);
        inner.codes.insert(code.clone(), now + CODE_TTL);
        Some(code)
    }

    /// Spends `code` (valid once, before its expiry) for a new session id.
    pub fn redeem(&self, code: &str, now: Instant) -> Option<String> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let found = find(&inner.codes, code, now)?;
        inner.codes.remove(&found);
        let session = random()?;
        prune(&mut inner.sessions, now);
        inner.sessions.insert(session.clone(), now + SESSION_TTL);
        Some(session)
    }

    pub fn is_valid(&self, session: &str, now: Instant) -> bool {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        find(&inner.sessions, session, now).is_some()
    }

    pub fn end(&self, session: &str) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = find(&inner.sessions, session, Instant::now()) {
            inner.sessions.remove(&found);
        }
    }
}

/// The session cookie's value in a `Cookie` header.
pub fn cookie_value(header: &str) -> Option<&str> {
    header
        .split(';')
        .map(str::trim)
        .find_map(|c| c.strip_prefix(COOKIE)?.strip_prefix('='))
        .filter(|v| !v.is_empty())
}

/// `Set-Cookie` for a new session.
pub fn set_cookie(session: &str) -> String {
    format!(
        "{COOKIE}={session}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
        SESSION_TTL.as_secs()
    )
}

/// `Set-Cookie` that removes the session cookie.
pub fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_works_once_and_only_before_it_expires() {
        let s = Sessions::default();
        let now = Instant::now();
        let code = s.new_code(now).unwrap();
        assert_eq!(code.len(), 64);
        assert!(s.redeem("wrong", now).is_none());
        let session = s.redeem(&code, now).expect("first use");
        assert!(s.redeem(&code, now).is_none(), "single use");
        assert!(s.is_valid(&session, now));
        assert!(!s.is_valid(&code, now), "a code is no session");
        assert!(!s.is_valid(&session, now + SESSION_TTL + Duration::from_secs(1)));
        let late = s.new_code(now).unwrap();
        assert!(
            s.redeem(&late, now + CODE_TTL + Duration::from_secs(1))
                .is_none(),
            "expired"
        );
        s.end(&session);
        assert!(!s.is_valid(&session, now));
    }

    #[test]
    fn the_cookie_is_http_only_and_strict() {
        let c = set_cookie("abc");
        assert!(c.starts_with("landscaper_ui_session=abc;"));
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict"));
        assert_eq!(
            cookie_value("a=b; landscaper_ui_session=xyz; c=d"),
            Some("xyz")
        );
        assert_eq!(cookie_value("landscaper_ui_session="), None);
        assert_eq!(cookie_value("other_landscaper_ui_session=1"), None);
    }
}
