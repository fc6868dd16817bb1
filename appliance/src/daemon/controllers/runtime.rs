//! The controller runtime: workers that take keys from a [`WorkQueue`], run a [`Reconciler`],
//! and requeue by its answer, with growing intervals for errors (as kube-runtime's
//! `error_policy` with exponential backoff).
//!
//! A reconcile that panics is contained: the worker logs it, records it on the object
//! ([`Reconciler::record_failure`]) and retries the key after the error backoff, as Landscaper's
//! `HandlePanics` does; the worker itself goes on with the next key.

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt as _;
use landscaper_store::{Kind, ObjectKey, StoreError, TransactionError};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::lserror::LsError;
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
    /// The store refused a write. A conflict (someone else wrote first) is retried soon;
    /// anything else (an object that exists already or is gone) after the error backoff.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// A deployer or another side effect failed in a way a retry may fix.
    #[error("{0}")]
    Transient(String),
}

impl ReconcileError {
    /// Only an optimistic-concurrency conflict: the step read an object that was written
    /// meanwhile, and reading it again resolves it. An `AlreadyExists` or `NotFound` does not go
    /// away by retrying at once (a create of a name someone else holds would spin).
    fn is_conflict(&self) -> bool {
        matches!(
            self,
            ReconcileError::Store(StoreError::Transaction(TransactionError::Conflict { .. }))
        )
    }
}

/// The operation and reason recorded (`status.lastError`) for a reconcile that panicked.
pub const PANIC_OPERATION: &str = "Reconcile";
pub const PANIC_REASON: &str = "ReconcilePanic";

/// One kind's reconcile logic.
pub trait Reconciler: Send + Sync + 'static {
    /// The kind whose keys this reconciler takes.
    const KIND: Kind;

    fn reconcile(
        &self,
        key: &ObjectKey,
    ) -> impl Future<Output = Result<Outcome, ReconcileError>> + Send;

    /// Records on the object that a reconcile failed without an answer (it panicked), where
    /// users see it (`status.lastError`). The default records nothing beyond the log.
    fn record_failure(
        &self,
        key: &ObjectKey,
        error: &LsError,
    ) -> impl Future<Output = Result<(), ReconcileError>> + Send {
        let _ = (key, error);
        async { Ok(()) }
    }
}

/// The message of a panic's payload (`panic!` with a literal or a formatted message).
fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Runs CPU-bound work on untrusted input (template rendering of blueprints) on tokio's
/// blocking pool, so that a slow render never stalls the async workers that run the other
/// reconciles, the API and the change feed. Concurrent renders are bounded by the controller
/// workers, each of which waits for its own. A panic in `work` continues in the caller (where
/// the worker contains it); `None` only when the runtime shuts down meanwhile.
pub async fn off_async_workers<T, F>(work: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => Some(value),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => None,
    }
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

/// First and longest wait before retrying a step that hit an optimistic-concurrency conflict:
/// short, since re-reading resolves it, but growing, so that a conflict that persists cannot
/// spin a worker.
const CONFLICT_BACKOFF_BASE: Duration = Duration::from_millis(5);
const CONFLICT_BACKOFF_MAX: Duration = Duration::from_secs(2);

/// What one reconcile of a key asks of the queue.
struct Retries {
    errors: Backoff,
    conflicts: Backoff,
}

impl Retries {
    fn succeeded(&self, key: &ObjectKey) {
        self.errors.reset(key);
        self.conflicts.reset(key);
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
    let retries = Arc::new(Retries {
        errors: Backoff::new(options.error_backoff_base, options.error_backoff_max),
        conflicts: Backoff::new(CONFLICT_BACKOFF_BASE, CONFLICT_BACKOFF_MAX),
    });
    for _ in 0..options.workers.max(1) {
        let reconciler = reconciler.clone();
        let queue = queue.clone();
        let retries = retries.clone();
        let cancel = cancel.clone();
        tasks.spawn(async move {
            loop {
                let key = tokio::select! {
                    _ = cancel.cancelled() => break,
                    key = queue.next() => match key { Some(k) => k, None => break },
                };
                process(&*reconciler, &queue, &retries, &key).await;
                queue.done(&key);
            }
        });
    }
}

/// One reconcile of `key` and its requeue; a panic in the reconcile is contained here, so that
/// the worker lives on and the key is released (`done`) and retried.
async fn process<R: Reconciler>(
    reconciler: &R,
    queue: &WorkQueue,
    retries: &Retries,
    key: &ObjectKey,
) {
    // A reconcile step is never cut off in the middle: its writes commit together.
    let result = AssertUnwindSafe(reconciler.reconcile(key))
        .catch_unwind()
        .await;
    match result {
        Ok(Ok(Outcome::Done)) => retries.succeeded(key),
        Ok(Ok(Outcome::RequeueAfter(d))) => {
            retries.succeeded(key);
            queue.add_after(key.clone(), d);
        }
        Ok(Err(e)) if e.is_conflict() => {
            let delay = retries.conflicts.next_delay(key);
            tracing::debug!(%key, retry_in = ?delay, "conflict, retrying");
            queue.add_after(key.clone(), delay);
        }
        Ok(Err(e)) => {
            let delay = retries.errors.next_delay(key);
            tracing::warn!(%key, error = %e, retry_in = ?delay, "reconcile failed");
            queue.add_after(key.clone(), delay);
        }
        Err(payload) => {
            let message = panic_message(payload.as_ref());
            let delay = retries.errors.next_delay(key);
            tracing::error!(%key, panic = %message, retry_in = ?delay, "reconcile panicked");
            let error = LsError::new(
                PANIC_OPERATION,
                PANIC_REASON,
                format!("the reconcile of {key} panicked: {message}"),
            );
            let recorded = AssertUnwindSafe(reconciler.record_failure(key, &error))
                .catch_unwind()
                .await;
            match recorded {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(%key, error = %e, "recording the panic on the object failed")
                }
                Err(_) => tracing::error!(%key, "recording the panic on the object panicked"),
            }
            queue.add_after(key.clone(), delay);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn backoff_grows_and_is_capped_and_resets() {
        let b = Backoff::new(Duration::from_secs(1), Duration::from_secs(10));
        let k = ObjectKey::new(Kind::Installation, "ns", "a");
        let delays: Vec<u64> = (0..6).map(|_| b.next_delay(&k).as_secs()).collect();
        assert_eq!(delays, vec![1, 2, 4, 8, 10, 10]);
        b.reset(&k);
        assert_eq!(b.next_delay(&k), Duration::from_secs(1));
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(Kind::Installation, "ns", name)
    }

    /// Panics on the first reconcile of `bad`; counts reconciles per key and records failures.
    #[derive(Default)]
    struct Panicky {
        calls: Mutex<HashMap<String, u32>>,
        recorded: Mutex<Vec<(ObjectKey, LsError)>>,
    }

    impl Panicky {
        fn calls(&self, name: &str) -> u32 {
            self.calls.lock().unwrap().get(name).copied().unwrap_or(0)
        }
    }

    impl Reconciler for Panicky {
        const KIND: Kind = Kind::Installation;

        async fn reconcile(&self, key: &ObjectKey) -> Result<Outcome, ReconcileError> {
            let n = {
                let mut calls = self.calls.lock().unwrap();
                let n = calls.entry(key.name.clone()).or_insert(0);
                *n += 1;
                *n
            };
            tokio::task::yield_now().await;
            if key.name == "bad" && n == 1 {
                panic!("boom in {}", key.name);
            }
            Ok(Outcome::Done)
        }

        async fn record_failure(
            &self,
            key: &ObjectKey,
            error: &LsError,
        ) -> Result<(), ReconcileError> {
            self.recorded
                .lock()
                .unwrap()
                .push((key.clone(), error.clone()));
            Ok(())
        }
    }

    fn one_worker(base: Duration) -> WorkerOptions {
        WorkerOptions {
            workers: 1,
            error_backoff_base: base,
            error_backoff_max: Duration::from_secs(600),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_panicking_reconcile_is_recorded_and_retried_and_the_worker_lives_on() {
        let reconciler = Arc::new(Panicky::default());
        let queue = Arc::new(WorkQueue::new());
        let cancel = CancellationToken::new();
        let mut tasks = JoinSet::new();
        spawn_workers(
            reconciler.clone(),
            queue.clone(),
            &one_worker(Duration::from_secs(2)),
            cancel.clone(),
            &mut tasks,
        );
        queue.add(key("bad"));
        queue.add(key("good"));
        tokio::time::sleep(Duration::from_secs(1)).await;
        // The single worker survived the panic and took the next key.
        assert_eq!(reconciler.calls("good"), 1);
        assert!(tasks.try_join_next().is_none(), "a worker stopped");
        let recorded = reconciler.recorded.lock().unwrap().clone();
        assert_eq!(recorded.len(), 1, "{recorded:?}");
        assert_eq!(recorded[0].0, key("bad"));
        assert_eq!(recorded[0].1.reason, PANIC_REASON);
        assert!(
            recorded[0].1.message.contains("boom in bad"),
            "{:?}",
            recorded[0].1
        );
        // The key is not left active: it is retried after the error backoff.
        assert_eq!(reconciler.calls("bad"), 1);
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(reconciler.calls("bad"), 2);
        queue.add(key("bad"));
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(reconciler.calls("bad"), 3, "the key is schedulable again");
        cancel.cancel();
        queue.close();
        while tasks.join_next().await.is_some() {}
    }

    /// Always fails with `error`; counts its reconciles.
    struct Failing {
        calls: AtomicU32,
        error: fn() -> StoreError,
    }

    impl Reconciler for Failing {
        const KIND: Kind = Kind::Installation;

        async fn reconcile(&self, _key: &ObjectKey) -> Result<Outcome, ReconcileError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Err(ReconcileError::Store((self.error)()))
        }
    }

    /// Reconciles of one key within `window` when every reconcile fails with `error`.
    async fn reconciles_within(error: fn() -> StoreError, window: Duration) -> u32 {
        let reconciler = Arc::new(Failing {
            calls: AtomicU32::new(0),
            error,
        });
        let queue = Arc::new(WorkQueue::new());
        let cancel = CancellationToken::new();
        let mut tasks = JoinSet::new();
        spawn_workers(
            reconciler.clone(),
            queue.clone(),
            &one_worker(Duration::from_secs(1)),
            cancel.clone(),
            &mut tasks,
        );
        queue.add(key("a"));
        tokio::time::sleep(window).await;
        cancel.cancel();
        queue.close();
        while tasks.join_next().await.is_some() {}
        reconciler.calls.load(Ordering::SeqCst)
    }

    #[tokio::test(start_paused = true)]
    async fn a_persistent_conflict_is_retried_with_a_growing_backoff() {
        let calls = reconciles_within(
            || {
                StoreError::Transaction(TransactionError::Conflict {
                    key: key("a"),
                    expected: "1".into(),
                    actual: "2".into(),
                })
            },
            Duration::from_millis(500),
        )
        .await;
        // 0, 5, 15, 35, 75, 155, 315 ms: not every 5 ms (100 times).
        assert!((2..=8).contains(&calls), "{calls} reconciles in 500 ms");
    }

    #[tokio::test(start_paused = true)]
    async fn already_exists_and_not_found_wait_for_the_error_backoff() {
        let exists = reconciles_within(
            || StoreError::Transaction(TransactionError::AlreadyExists { key: key("a") }),
            Duration::from_millis(900),
        )
        .await;
        assert_eq!(exists, 1, "AlreadyExists retried before the error backoff");
        let gone = reconciles_within(
            || StoreError::Transaction(TransactionError::NotFound { key: key("a") }),
            Duration::from_millis(900),
        )
        .await;
        assert_eq!(gone, 1, "NotFound retried before the error backoff");
    }
}
