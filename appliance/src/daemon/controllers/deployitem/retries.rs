//! Retries of deployer calls that failed because the target cluster could not be reached:
//! growing intervals with a cap (5 s, 10 s, 20 s, 40 s, then every 60 s, never past the item's
//! progressing deadline), and one log line per change of state (WARN when the item starts
//! failing or fails differently, INFO when it recovers) instead of one INFO line per attempt.
//!
//! The state lives in memory per item and job: a restart starts again at 5 s, which is what a
//! restart is for. Other errors keep Landscaper's fixed 5 s retry (the helm deployer's new
//! revision per attempt depends on it).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use landscaper_store::ObjectKey;

/// The first retry interval of an unreachable cluster (Landscaper's deployer retry interval).
pub const FIRST: Duration = Duration::from_secs(5);
/// The longest retry interval of an unreachable cluster.
pub const CAP: Duration = Duration::from_secs(60);

/// The interval after the `attempts`-th consecutive failure (1-based): doubling from
/// [`FIRST`], at most [`CAP`].
pub fn backoff(attempts: u32) -> Duration {
    let doublings = attempts.saturating_sub(1).min(16);
    FIRST.saturating_mul(1 << doublings).min(CAP)
}

/// Whether a deployer error says the cluster could not be reached
/// (`landscaper_deployers::kubernetes::ClusterError::Unreachable`).
pub fn is_unreachable(message: &str) -> bool {
    message.contains(landscaper_deployers::kubernetes::UNREACHABLE_PREFIX)
}

#[derive(Debug, Clone)]
struct State {
    /// The job (and whether the call deleted) the failures belong to.
    job: String,
    message: String,
    attempts: u32,
    /// No new call before this instant (only while the cluster is unreachable).
    not_before: Option<Instant>,
}

/// What a failed attempt means for the log and the next attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The item was not failing, or failed with another message: worth a WARN line.
    pub changed: bool,
    /// Consecutive failures with this job.
    pub attempts: u32,
    /// When to try again (unreachable clusters only).
    pub retry_after: Option<Duration>,
}

#[derive(Default)]
pub struct Retries {
    states: Mutex<HashMap<ObjectKey, State>>,
}

impl Retries {
    fn states(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, State>> {
        self.states.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a failed call of `job`.
    pub fn failed(&self, key: &ObjectKey, job: &str, message: &str, now: Instant) -> Failure {
        let mut states = self.states();
        let previous = states.get(key).filter(|s| s.job == job);
        let changed = previous.is_none_or(|s| s.message != message);
        let attempts = previous.map_or(1, |s| s.attempts.saturating_add(1));
        let retry_after = is_unreachable(message).then(|| backoff(attempts));
        states.insert(
            key.clone(),
            State {
                job: job.to_string(),
                message: message.to_string(),
                attempts,
                not_before: retry_after.map(|d| now + d),
            },
        );
        Failure {
            changed,
            attempts,
            retry_after,
        }
    }

    /// Records a successful call; whether the item was failing before (worth an INFO line).
    pub fn succeeded(&self, key: &ObjectKey) -> bool {
        self.states().remove(key).is_some()
    }

    /// How long a call of `job` must still wait (the item's own status write wakes it at once).
    pub fn wait_left(&self, key: &ObjectKey, job: &str, now: Instant) -> Option<Duration> {
        let states = self.states();
        let state = states.get(key).filter(|s| s.job == job)?;
        let left = state.not_before?.checked_duration_since(now)?;
        (!left.is_zero()).then_some(left)
    }

    /// Forgets an item (deleted).
    pub fn forget(&self, key: &ObjectKey) {
        self.states().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use landscaper_store::Kind;

    #[test]
    fn intervals_double_up_to_the_cap() {
        let got: Vec<u64> = (1..=7).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(got, [5, 10, 20, 40, 60, 60, 60]);
        assert_eq!(backoff(u32::MAX), CAP);
    }

    #[test]
    fn an_unreachable_cluster_backs_off_and_is_reported_once_per_change() {
        let r = Retries::default();
        let key = ObjectKey::new(Kind::DeployItem, "ns", "a");
        let t0 = Instant::now();
        let down = "GetApiResource: cluster unreachable: client error (Connect)";
        let first = r.failed(&key, "job1", down, t0);
        assert_eq!(
            first,
            Failure {
                changed: true,
                attempts: 1,
                retry_after: Some(Duration::from_secs(5))
            }
        );
        // The item's own status write wakes it at once: it waits instead of calling again.
        assert_eq!(
            r.wait_left(&key, "job1", t0 + Duration::from_secs(1)),
            Some(Duration::from_secs(4))
        );
        assert_eq!(r.wait_left(&key, "job1", t0 + Duration::from_secs(5)), None);
        assert_eq!(
            r.wait_left(&key, "job2", t0),
            None,
            "a new job starts at once"
        );
        let second = r.failed(&key, "job1", down, t0 + Duration::from_secs(5));
        assert!(!second.changed, "the same error again is no news");
        assert_eq!(second.retry_after, Some(Duration::from_secs(10)));
        let other = r.failed(&key, "job1", "cluster unreachable: tls", t0);
        assert!(other.changed);
        assert_eq!(other.attempts, 3);
        assert!(r.succeeded(&key));
        assert!(!r.succeeded(&key));
        // Other errors: reported on change, no backoff (Landscaper's fixed interval applies).
        let e = r.failed(&key, "job1", "apply: conflict", t0);
        assert_eq!((e.changed, e.retry_after), (true, None));
        assert_eq!(r.wait_left(&key, "job1", t0), None);
    }
}
