//! Fault injection: added latency, failing requests, and an unreachable server.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;

use crate::error::ApiError;

/// Fails requests with `method` (any when None) whose path starts with `path_prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultRule {
    pub method: Option<String>,
    pub path_prefix: String,
    pub status: u16,
    /// How many requests fail (None: all of them).
    pub times: Option<u32>,
}

impl FaultRule {
    /// A rule failing every matching request with `status`.
    pub fn new(method: Option<&str>, path_prefix: &str, status: u16) -> Self {
        FaultRule {
            method: method.map(|m| m.to_ascii_uppercase()),
            path_prefix: path_prefix.to_string(),
            status,
            times: None,
        }
    }

    /// Fail only the next `n` matching requests.
    pub fn times(mut self, n: u32) -> Self {
        self.times = Some(n);
        self
    }
}

pub struct Faults {
    latency: Mutex<Duration>,
    rules: Mutex<Vec<FaultRule>>,
    unreachable: watch::Sender<bool>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            latency: Mutex::new(Duration::ZERO),
            rules: Mutex::new(Vec::new()),
            unreachable: watch::channel(false).0,
        }
    }
}

impl Faults {
    pub fn set_latency(&self, latency: Duration) {
        *self.latency.lock().unwrap_or_else(|e| e.into_inner()) = latency;
    }

    pub fn latency(&self) -> Duration {
        *self.latency.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn add(&self, rule: FaultRule) {
        self.rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(rule);
    }

    pub fn clear(&self) {
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.set_latency(Duration::ZERO);
    }

    /// The injected failure for this request, if a rule matches (consuming one use).
    pub fn check(&self, method: &str, path: &str) -> Option<ApiError> {
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        let index = rules.iter().position(|r| {
            r.method
                .as_deref()
                .is_none_or(|m| m.eq_ignore_ascii_case(method))
                && path.starts_with(&r.path_prefix)
                && r.times != Some(0)
        })?;
        let rule = &mut rules[index];
        let status = rule.status;
        if let Some(n) = rule.times.as_mut() {
            *n -= 1;
            if *n == 0 {
                rules.remove(index);
            }
        }
        Some(ApiError::for_code(
            status,
            format!("injected fault: {method} {path}"),
        ))
    }

    pub fn set_unreachable(&self, on: bool) {
        self.unreachable.send_replace(on);
    }

    pub fn is_unreachable(&self) -> bool {
        *self.unreachable.borrow()
    }

    pub fn unreachable_signal(&self) -> watch::Receiver<bool> {
        self.unreachable.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_count_down() {
        let f = Faults::default();
        f.add(FaultRule::new(Some("get"), "/api/v1/namespaces/default/configmaps", 503).times(2));
        assert!(
            f.check("POST", "/api/v1/namespaces/default/configmaps")
                .is_none()
        );
        assert_eq!(
            f.check("GET", "/api/v1/namespaces/default/configmaps/x")
                .map(|e| e.code),
            Some(503)
        );
        assert!(
            f.check("GET", "/api/v1/namespaces/default/configmaps")
                .is_some()
        );
        assert!(
            f.check("GET", "/api/v1/namespaces/default/configmaps")
                .is_none()
        );
    }
}
