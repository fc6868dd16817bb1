//! The ingest loop: an initial scan, then rescans on file-system events (debounced), on a
//! timer, and when an object a file waits for has finally been deleted.
//!
//! Every trigger runs a full rescan. An unchanged file costs only reading and hashing it
//! (5,000 small files: well under 100 ms), and a full rescan cannot get editor rename dances,
//! directory moves or lost events wrong.
//!
//! The debounce is a quiet time after the *last raw event* (every relevant event of the
//! watcher restarts it), not an event merger: a merging debouncer drops a file's create and
//! remove events when both fall into one window, so a file that a scan picked up (a resync, or
//! another file's change) and that was removed right after went unnoticed until the next
//! resync. Counting raw events cannot lose a change.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use landscaper_store::ChangeType;
use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecursiveMode, Watcher as _};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::names::is_ignored_name;
use super::{IngestError, Ingestor, ScanReport};

/// A running watch and the identity (device, inode) of the folder it watches: a folder that
/// was deleted and created again needs a new watch.
struct FolderWatcher {
    watcher: notify::RecommendedWatcher,
    folder: Option<(u64, u64)>,
}

impl FolderWatcher {
    fn is_stale(&self, root: &Path) -> bool {
        folder_id(root) != self.folder
    }

    async fn stop(self) {
        // Dropping the watcher stops its thread; do it off the runtime.
        let _ = tokio::task::spawn_blocking(move || drop(self.watcher)).await;
    }
}

fn folder_id(root: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(root).ok().map(|m| (m.dev(), m.ino()))
}

/// Pause before trying again files that could not be applied because of conflicts.
const RETRY_DELAY: Duration = Duration::from_secs(1);

/// A steady stream of events (a tool writing for minutes) delays a rescan at most this many
/// debounce times after its first event.
const MAX_DEBOUNCE_FACTOR: u32 = 10;

/// When the rescan for file-system events is due: `debounce` after the last event, but no
/// later than `MAX_DEBOUNCE_FACTOR * debounce` after the first one not scanned yet.
#[derive(Debug, Default, Clone, Copy)]
struct Debounce {
    first: Option<tokio::time::Instant>,
    due: Option<tokio::time::Instant>,
}

impl Debounce {
    fn event(&mut self, now: tokio::time::Instant, debounce: Duration) {
        let first = *self.first.get_or_insert(now);
        self.due = Some((now + debounce).min(first + debounce * MAX_DEBOUNCE_FACTOR));
    }

    fn take(&mut self) {
        *self = Debounce::default();
    }
}

impl Ingestor {
    /// Runs the ingest until `shutdown` is cancelled: starts watching, scans the folder once
    /// and sends that scan's report to `initial_scan` (the daemon is ready after it), then
    /// rescans on changes and every `resync_interval`. Problems are logged, never fatal: a
    /// failed scan is repeated on the next trigger.
    pub async fn run(
        self,
        shutdown: CancellationToken,
        initial_scan: Option<oneshot::Sender<ScanReport>>,
    ) {
        let config = self.inner.config.clone();
        let (signal, mut signals) = mpsc::channel::<()>(1);
        // Watching starts before the first scan so that no change slips in between.
        let mut watcher = start_watcher(&config.manifests_dir, signal.clone());
        let mut feed = Some(self.inner.store.subscribe());

        let report = self.scan_logged("initial").await;
        let mut retry_at = retry_time(&report);
        if let Some(initial_scan) = initial_scan {
            let _ = initial_scan.send(report.unwrap_or_else(|error| ScanReport {
                aborted: Some(error.to_string()),
                ..ScanReport::default()
            }));
        }

        let mut debounce = Debounce::default();
        let period = config.resync_interval.max(Duration::from_millis(100));
        let mut resync = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                Some(()) = signals.recv() => {
                    debounce.event(tokio::time::Instant::now(), config.debounce);
                }
                _ = sleep_until(debounce.due) => {
                    debounce.take();
                    retry_at = retry_time(&self.scan_logged("change").await);
                }
                _ = resync.tick() => {
                    if watcher.as_ref().is_none_or(|w| w.is_stale(&config.manifests_dir)) {
                        if let Some(old) = watcher.take() {
                            old.stop().await;
                        }
                        watcher = start_watcher(&config.manifests_dir, signal.clone());
                    }
                    retry_at = retry_time(&self.scan_logged("resync").await);
                }
                _ = sleep_until(retry_at) => {
                    retry_at = retry_time(&self.scan_logged("retry").await);
                }
                change = recv_feed(&mut feed) => {
                    if self.deletion_awaited(change) {
                        retry_at = retry_time(&self.scan_logged("deletion finished").await);
                    }
                }
            }
        }
        if let Some(watcher) = watcher {
            watcher.stop().await;
        }
        tracing::debug!("ingest stopped");
    }

    async fn scan_logged(&self, trigger: &str) -> Result<ScanReport, IngestError> {
        let result = self.rescan().await;
        match &result {
            Ok(report) => {
                let changed = report.applied + report.failed + report.skipped + report.removed;
                if changed > 0 {
                    tracing::info!(
                        trigger,
                        files = report.files,
                        applied = report.applied,
                        failed = report.failed,
                        skipped = report.skipped,
                        removed = report.removed,
                        created = report.objects_created,
                        updated = report.objects_updated,
                        deleted = report.objects_deleted,
                        ms = report.duration.as_millis() as u64,
                        "manifests folder scanned"
                    );
                } else {
                    tracing::debug!(
                        trigger,
                        files = report.files,
                        ms = report.duration.as_millis() as u64,
                        "manifests folder unchanged"
                    );
                }
            }
            Err(error @ IngestError::Folder { .. }) => {
                tracing::error!(trigger, %error, "manifests folder scan failed; nothing was changed");
            }
            Err(error) => {
                tracing::error!(trigger, %error, "manifests folder scan failed");
            }
        }
        result
    }

    /// Whether a change set (or a gap in the feed) may have finished a deletion some file
    /// waits for.
    fn deletion_awaited(
        &self,
        change: Result<landscaper_store::SharedChangeSet, broadcast::error::RecvError>,
    ) -> bool {
        let awaited = self.inner.awaited.lock().unwrap_or_else(|e| e.into_inner());
        if awaited.is_empty() {
            return false;
        }
        match change {
            Ok(set) => set
                .changes
                .iter()
                .any(|c| c.change_type == ChangeType::Deleted && awaited.contains(&c.key)),
            Err(_) => true,
        }
    }
}

/// Files left over by conflicts, or a scan that failed for a transient reason (the store),
/// are tried again soon rather than at the next periodic rescan.
fn retry_time(result: &Result<ScanReport, IngestError>) -> Option<tokio::time::Instant> {
    let soon = match result {
        Ok(report) => !report.pending.is_empty(),
        Err(IngestError::Folder { .. }) => false,
        Err(_) => true,
    };
    soon.then(|| tokio::time::Instant::now() + RETRY_DELAY)
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The next change set; pends forever once the feed is closed.
async fn recv_feed(
    feed: &mut Option<broadcast::Receiver<landscaper_store::SharedChangeSet>>,
) -> Result<landscaper_store::SharedChangeSet, broadcast::error::RecvError> {
    let Some(receiver) = feed else {
        return std::future::pending().await;
    };
    let result = receiver.recv().await;
    if matches!(result, Err(broadcast::error::RecvError::Closed)) {
        *feed = None;
    }
    result
}

/// Starts the recursive watch; every relevant event signals the run loop, which debounces.
/// Failing (e.g. the folder is missing or inotify watches are exhausted) is logged; the
/// periodic rescan keeps working and retries the watch.
fn start_watcher(root: &Path, signal: mpsc::Sender<()>) -> Option<FolderWatcher> {
    let events_root = root.to_path_buf();
    let handler = move |result: notify::Result<notify::Event>| {
        let relevant = match result {
            Ok(event) => {
                event.need_rescan()
                    || (is_relevant_kind(&event.kind)
                        && (event.paths.is_empty()
                            || event
                                .paths
                                .iter()
                                .any(|p| is_relevant_path(&events_root, p))))
            }
            Err(error) => {
                tracing::warn!(%error, "watching the manifests folder");
                true
            }
        };
        if relevant {
            // A full channel means a signal is pending already.
            let _ = signal.try_send(());
        }
    };
    let config = notify::Config::default().with_follow_symlinks(true);
    let result = notify::RecommendedWatcher::new(handler, config).and_then(|mut watcher| {
        watcher.watch(root, RecursiveMode::Recursive)?;
        Ok(watcher)
    });
    match result {
        Ok(watcher) => Some(FolderWatcher {
            watcher,
            folder: folder_id(root),
        }),
        Err(error) => {
            tracing::warn!(%error, dir = %root.display(), "cannot watch the manifests folder; relying on periodic rescans");
            None
        }
    }
}

/// Our own reads open files too; only changes matter.
fn is_relevant_kind(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// Events for dot-files and editor temp files (vim's `4913`, `.swp`) need no rescan.
fn is_relevant_path(root: &Path, path: &Path) -> bool {
    let rel: PathBuf = match path.strip_prefix(root) {
        Ok(rel) => rel.to_path_buf(),
        Err(_) => return true,
    };
    !rel.components().any(|c| match c {
        Component::Normal(name) => name.to_str().is_some_and(is_ignored_name),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_restarts_the_quiet_time_up_to_a_limit() {
        let start = tokio::time::Instant::now();
        let ms = Duration::from_millis;
        let mut d = Debounce::default();
        assert_eq!(d.due, None);
        d.event(start, ms(200));
        assert_eq!(d.due, Some(start + ms(200)));
        d.event(start + ms(150), ms(200));
        assert_eq!(d.due, Some(start + ms(350)));
        // A steady stream: due at most ten debounce times after the first event.
        for i in 0..100 {
            d.event(start + ms(100 * i), ms(200));
        }
        assert_eq!(d.due, Some(start + ms(2000)));
        d.take();
        assert_eq!(d.due, None);
        d.event(start + ms(5000), ms(200));
        assert_eq!(d.due, Some(start + ms(5200)));
    }

    #[test]
    fn temp_file_events_are_ignored() {
        let root = Path::new("/m");
        assert!(is_relevant_path(root, Path::new("/m/a.yaml")));
        assert!(is_relevant_path(root, Path::new("/m/sub")));
        assert!(is_relevant_path(root, Path::new("/m")));
        assert!(is_relevant_path(root, Path::new("/elsewhere/x.yaml")));
        assert!(!is_relevant_path(root, Path::new("/m/.a.yaml.swp")));
        assert!(!is_relevant_path(root, Path::new("/m/sub/4913")));
        assert!(!is_relevant_path(root, Path::new("/m/.git/index")));
        assert!(!is_relevant_kind(&EventKind::Access(AccessKind::Open(
            AccessMode::Any
        ))));
        assert!(is_relevant_kind(&EventKind::Access(AccessKind::Close(
            AccessMode::Write
        ))));
        assert!(is_relevant_kind(&EventKind::Remove(
            notify::event::RemoveKind::File
        )));
    }
}
