//! A work queue of object keys, modelled on client-go's workqueue and kube-runtime's scheduler:
//! de-duplicated, at most one worker per key at a time (a key that changes while it is being
//! processed is processed once more afterwards), and delayed entries where the earliest
//! requested time wins.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use landscaper_store::ObjectKey;
use landscaper_store::stats::{HistogramSnapshot, LatencyHistogram};
use tokio::sync::Notify;
use tokio::time::Instant;

#[derive(Default)]
struct State {
    ready: VecDeque<ObjectKey>,
    queued: HashSet<ObjectKey>,
    active: HashSet<ObjectKey>,
    /// Keys enqueued while a worker held them.
    dirty: HashSet<ObjectKey>,
    delayed: BinaryHeap<Reverse<(Instant, u64, ObjectKey)>>,
    /// The time each delayed key is due; heap entries with another time are stale.
    due: HashMap<ObjectKey, Instant>,
    sequence: u64,
    closed: bool,
    /// When each ready key became ready, for the wait-time metric.
    ready_since: HashMap<ObjectKey, Instant>,
}

#[derive(Default)]
pub struct WorkQueue {
    state: Mutex<State>,
    wake: Notify,
    /// How long keys waited between becoming ready and a worker taking them.
    wait: LatencyHistogram,
}

impl WorkQueue {
    pub fn new() -> WorkQueue {
        WorkQueue::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `key` for processing now.
    pub fn add(&self, key: ObjectKey) {
        let mut s = self.lock();
        Self::add_locked(&mut s, key);
        drop(s);
        self.wake.notify_one();
    }

    fn add_locked(s: &mut State, key: ObjectKey) {
        s.due.remove(&key);
        if s.active.contains(&key) {
            s.dirty.insert(key);
        } else if s.queued.insert(key.clone()) {
            s.ready_since.insert(key.clone(), Instant::now());
            s.ready.push_back(key);
        }
    }

    /// Queues `key` after `delay`, unless it is due earlier already.
    pub fn add_after(&self, key: ObjectKey, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let at = Instant::now() + delay;
        let mut s = self.lock();
        if s.queued.contains(&key) && !s.active.contains(&key) {
            return;
        }
        if s.due.get(&key).is_some_and(|due| *due <= at) {
            return;
        }
        s.due.insert(key.clone(), at);
        s.sequence += 1;
        let seq = s.sequence;
        s.delayed.push(Reverse((at, seq, key)));
        drop(s);
        // A worker may be sleeping until a later time.
        self.wake.notify_one();
    }

    /// Waits for the next key; `None` once the queue is closed.
    pub async fn next(&self) -> Option<ObjectKey> {
        loop {
            let wait_until = {
                let mut s = self.lock();
                if s.closed {
                    return None;
                }
                let now = Instant::now();
                while let Some(Reverse((at, _, _))) = s.delayed.peek() {
                    if *at > now {
                        break;
                    }
                    let Some(Reverse((at, _, key))) = s.delayed.pop() else {
                        break;
                    };
                    if s.due.get(&key) == Some(&at) {
                        s.due.remove(&key);
                        Self::add_locked(&mut s, key);
                    }
                }
                if let Some(key) = s.ready.pop_front() {
                    s.queued.remove(&key);
                    if let Some(since) = s.ready_since.remove(&key) {
                        self.wait.observe(since.elapsed());
                    }
                    s.active.insert(key.clone());
                    // Another worker may take the next key.
                    if !s.ready.is_empty() {
                        self.wake.notify_one();
                    }
                    return Some(key);
                }
                s.delayed.peek().map(|Reverse((at, _, _))| *at)
            };
            match wait_until {
                Some(at) => {
                    tokio::select! {
                        _ = self.wake.notified() => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                // `close` wakes only the workers already waiting; the others notice within a second.
                None => {
                    let _ =
                        tokio::time::timeout(Duration::from_secs(1), self.wake.notified()).await;
                }
            }
        }
    }

    /// Marks `key` as processed; a key that was enqueued meanwhile becomes ready again.
    pub fn done(&self, key: &ObjectKey) {
        let mut s = self.lock();
        s.active.remove(key);
        if s.dirty.remove(key) && s.queued.insert(key.clone()) {
            s.ready_since.insert(key.clone(), Instant::now());
            s.ready.push_back(key.clone());
            drop(s);
            self.wake.notify_one();
        }
    }

    /// Stops handing out keys; waiting workers return `None`.
    pub fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_waiters();
    }

    /// Keys waiting now (not counting delayed ones); for metrics and tests.
    pub fn len(&self) -> usize {
        self.lock().ready.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys waiting for their delay to pass (requeues, retries).
    pub fn delayed_len(&self) -> usize {
        self.lock().due.len()
    }

    /// How long the key that has been ready the longest has waited for a worker (`None`: no
    /// key is waiting). Workers that stopped taking keys make this grow without bound.
    pub fn oldest_wait(&self) -> Option<Duration> {
        self.lock()
            .ready_since
            .values()
            .min()
            .map(|since| since.elapsed())
    }

    /// How long keys waited for a worker so far.
    pub fn wait_times(&self) -> HistogramSnapshot {
        self.wait.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_oldest_wait_shows_keys_no_worker_takes() {
        let q = WorkQueue::new();
        assert_eq!(q.oldest_wait(), None);
        q.add(ObjectKey::new(
            landscaper_store::Kind::Installation,
            "ns",
            "a",
        ));
        tokio::time::advance(Duration::from_secs(7)).await;
        q.add(ObjectKey::new(
            landscaper_store::Kind::Installation,
            "ns",
            "b",
        ));
        assert_eq!(q.oldest_wait(), Some(Duration::from_secs(7)));
        let first = q.next().await.unwrap();
        assert_eq!(first.name, "a");
        assert_eq!(q.oldest_wait(), Some(Duration::ZERO));
        let _ = q.next().await.unwrap();
        assert_eq!(q.oldest_wait(), None);
        assert_eq!(q.wait_times().count, 2);
    }
    use landscaper_store::Kind;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(Kind::Installation, "ns", name)
    }

    #[tokio::test]
    async fn duplicates_are_merged() {
        let q = WorkQueue::new();
        q.add(key("a"));
        q.add(key("a"));
        q.add(key("b"));
        assert_eq!(q.len(), 2);
        assert_eq!(q.next().await, Some(key("a")));
        assert_eq!(q.next().await, Some(key("b")));
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn a_key_is_never_handed_out_twice_at_once() {
        let q = WorkQueue::new();
        q.add(key("a"));
        let first = q.next().await.unwrap();
        q.add(key("a"));
        // While "a" is active, the new request waits.
        assert!(q.is_empty());
        q.done(&first);
        assert_eq!(q.next().await, Some(key("a")));
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_keys_become_ready_and_the_earliest_time_wins() {
        let q = WorkQueue::new();
        q.add_after(key("a"), Duration::from_secs(10));
        q.add_after(key("a"), Duration::from_secs(2));
        q.add_after(key("a"), Duration::from_secs(30));
        let start = Instant::now();
        assert_eq!(q.next().await, Some(key("a")));
        let waited = start.elapsed();
        assert!(waited >= Duration::from_secs(2) && waited < Duration::from_secs(10));
        q.done(&key("a"));
        // The superseded entries do not fire again.
        let next = tokio::time::timeout(Duration::from_secs(60), q.next()).await;
        assert!(next.is_err(), "stale delayed entries fired: {next:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn an_immediate_add_supersedes_a_delayed_one() {
        let q = WorkQueue::new();
        q.add_after(key("a"), Duration::from_secs(10));
        q.add(key("a"));
        assert_eq!(q.next().await, Some(key("a")));
        q.done(&key("a"));
        let next = tokio::time::timeout(Duration::from_secs(60), q.next()).await;
        assert!(next.is_err());
    }

    #[tokio::test]
    async fn close_releases_waiting_workers() {
        let q = std::sync::Arc::new(WorkQueue::new());
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.next().await }
        });
        tokio::task::yield_now().await;
        q.close();
        assert_eq!(waiter.await.unwrap(), None);
    }
}
