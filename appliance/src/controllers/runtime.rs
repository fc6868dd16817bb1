//! The controller runtime: workers that take keys from a [`WorkQueue`], run a [`Reconciler`],
//! and requeue by its answer, with growing intervals for errors (as kube-runtime's
//! `error_policy` with exponential backoff).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use landscaper_store::{Kind, ObjectKey, StoreError};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::queue::WorkQueue;

/// What a reconcile asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to do until the object or a related one changes.
    Done,
    /// Look again after this long (waiting phases, timeouts, schedules).
    RequeueAfter(Duration),
}

/// Why a reconcile could not finish its step; the runtime retries it.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The store refused a write; a conflict (someone else wrote first) is retried at once.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// A deployer or another side effect failed in a way a retry may fix.
    #[error("{0}")]
    Transient(String),
}

impl ReconcileError {
    fn is_conflict(&self) -> bool {
        matches!(
            self,
            ReconcileError::Store(
                StoreError::Conflict { .. }
                    | StoreError::AlreadyExists { .. }
                    | StoreError::NotFound { .. }
            )
        )
    }
}

/// One kind's reconcile logic.
pub trait Reconciler: Send + Sync + 'static {
    /// The kind whose keys this reconciler takes.
    const KIND: Kind;

    fn reconcile(
        &self,
        key: &ObjectKey,
    ) -> impl Future<Output = Result<Outcome, ReconcileError>> + Send;
}

/// Growing retry intervals per key: base · 2^failures, capped.
pub struct Backoff {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<ObjectKey, u32>>,
}

impl Backoff {
    pub fn new(base: Duration, max: Duration) -> Backoff {
        Backoff {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The delay before the next attempt after one more failure.
    pub fn next_delay(&self, key: &ObjectKey) -> Duration {
        let mut f = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let n = f.entry(key.clone()).or_insert(0);
        let delay = self.base.saturating_mul(1u32 << (*n).min(20)).min(self.max);
        *n = n.saturating_add(1);
        delay
    }

    pub fn reset(&self, key: &ObjectKey) {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
    }
}

/// Tuning of the workers of one controller.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    pub workers: usize,
    pub error_backoff_base: Duration,
    pub error_backoff_max: Duration,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            workers: 4,
            error_backoff_base: Duration::from_millis(500),
            error_backoff_max: Duration::from_secs(300),
        }
    }
}

/// Runs `workers` tasks for `reconciler` until `cancel`.
pub fn spawn_workers<R: Reconciler>(
    reconciler: Arc<R>,
    queue: Arc<WorkQueue>,
    options: &WorkerOptions,
    cancel: CancellationToken,
    tasks: &mut JoinSet<()>,
) {
    let backoff = Arc::new(Backoff::new(
        options.error_backoff_base,
        options.error_backoff_max,
    ));
    for _ in 0..options.workers.max(1) {
        let reconciler = reconciler.clone();
        let queue = queue.clone();
        let backoff = backoff.clone();
        let cancel = cancel.clone();
        tasks.spawn(async move {
            loop {
                let key = tokio::select! {
                    _ = cancel.cancelled() => break,
                    key = queue.next() => match key { Some(k) => k, None => break },
                };
                // A reconcile step is never cut off in the middle: its writes commit together.
                let result = reconciler.reconcile(&key).await;
                match result {
                    Ok(Outcome::Done) => backoff.reset(&key),
                    Ok(Outcome::RequeueAfter(d)) => {
                        backoff.reset(&key);
                        queue.add_after(key.clone(), d);
                    }
                    Err(e) if e.is_conflict() => {
                        tracing::debug!(%key, "conflict, retrying");
                        queue.add_after(key.clone(), Duration::from_millis(5));
                    }
                    Err(e) => {
                        let delay = backoff.next_delay(&key);
                        tracing::warn!(%key, error = %e, retry_in = ?delay, "reconcile failed");
                        queue.add_after(key.clone(), delay);
                    }
                }
                queue.done(&key);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped_and_resets() {
        let b = Backoff::new(Duration::from_secs(1), Duration::from_secs(10));
        let k = ObjectKey::new(Kind::Installation, "ns", "a");
        let delays: Vec<u64> = (0..6).map(|_| b.next_delay(&k).as_secs()).collect();
        assert_eq!(delays, vec![1, 2, 4, 8, 10, 10]);
        b.reset(&k);
        assert_eq!(b.next_delay(&k), Duration::from_secs(1));
    }
}
