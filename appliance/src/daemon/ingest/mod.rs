//! Folder ingest: the manifests directory as the source of user objects.
//!
//! Every `*.yaml`, `*.yml` and `*.json` file below the folder (dot-files, editor temp files
//! and files with a `NAME.skip` marker aside) is a set of objects. A file's revision is the
//! SHA-256 of its content: an unchanged file is a no-op; a new good revision creates, updates
//! and deletes objects so that the store holds exactly what the file defines, in one
//! transaction per file; a bad revision changes nothing but its `ManifestFile` record, which
//! carries the error with document, line and column. A removed file's objects are deleted.
//! Each object belongs to one file; a second file defining it is rejected until the first
//! lets go of it.
//!
//! Use: [`Ingestor::new`], then [`Ingestor::run`] (initial scan, then watch and periodic
//! rescans until cancelled), or [`Ingestor::rescan`] for one scan.

pub mod archives;
pub(crate) mod engine;
pub mod manifest;
pub mod names;
pub mod scan;
mod watch;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use landscaper_store::clock::format_time;
use landscaper_store::{Committed, ObjectKey, Store, StoreError};

pub use manifest::{
    ManifestError, ManifestObject, ManifestWarning, ParsedManifest, parse_manifest,
};
pub use names::{is_ignored_name, is_manifest_name, manifest_file_name};

use engine::State;

/// Where the manifests are and how eagerly to look at them.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    /// The watched folder (read recursively).
    pub manifests_dir: PathBuf,
    /// Quiet time after the last file-system event before a rescan.
    pub debounce: Duration,
    /// Full rescans also happen this often, in case an event was missed.
    pub resync_interval: Duration,
    /// Largest manifest file read, in bytes; bigger files are rejected (their objects stay).
    pub max_file_size: u64,
}

impl Default for IngestConfig {
    fn default() -> Self {
        IngestConfig {
            manifests_dir: PathBuf::from("/etc/landscaper-appliance/manifests.d"),
            debounce: Duration::from_millis(200),
            resync_interval: Duration::from_secs(60),
            max_file_size: crate::config::DEFAULT_MAX_MANIFEST_FILE_SIZE,
        }
    }
}

/// What one scan did. Counts are files unless they say objects.
#[derive(Debug, Clone, Default)]
pub struct ScanReport {
    /// Manifest files found.
    pub files: usize,
    /// Files whose new revision was applied (or whose recorded error was cleared).
    pub applied: usize,
    /// Files rejected in this scan (their objects are left as they were).
    pub failed: usize,
    /// Files newly disabled by a `.skip` marker.
    pub skipped: usize,
    /// Files that disappeared.
    pub removed: usize,
    pub objects_created: usize,
    pub objects_updated: usize,
    pub objects_deleted: usize,
    /// The errors of the files that are rejected, as far as this scan looked at them.
    pub errors: Vec<ManifestError>,
    /// Walk findings (symlink loops, unreadable entries) and manifest warnings.
    pub warnings: Vec<String>,
    /// Files not applied yet because their objects kept changing meanwhile (conflicts with
    /// other writers); the next scan tries again, and [`Ingestor::run`] schedules one soon.
    pub pending: Vec<String>,
    /// Why the scan could not run at all (only in the report [`Ingestor::run`] sends).
    pub aborted: Option<String>,
    pub duration: Duration,
}

/// Why a scan could not run. Problems with single files are not errors of the scan: they are
/// recorded on the files' `ManifestFile` objects and reported in [`ScanReport::errors`].
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// Nothing is changed in this case: a missing folder must not delete every object.
    #[error("reading the manifests folder {path} failed: {source}")]
    Folder {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("loading the ingest state from the store failed: {0}")]
    Load(#[source] StoreError),
    #[error("reading the store while planning the changes failed: {0}")]
    Plan(#[source] StoreError),
    #[error("committing the changes failed: {0}")]
    Commit(#[source] StoreError),
    #[error("the scan task failed: {0}")]
    Task(String),
}

/// Reads the manifests folder into the store. Cheap to clone; clones share the state, and
/// scans never overlap.
#[derive(Clone)]
pub struct Ingestor {
    inner: Arc<Inner>,
}

struct Inner {
    config: IngestConfig,
    store: Store,
    /// `None` until the first scan loads it from the store, and after a failed scan (the
    /// next one reloads it, so no half-applied bookkeeping survives).
    state: tokio::sync::Mutex<Option<State>>,
    /// Objects whose deletion some file waits for, for the watch loop.
    awaited: std::sync::Mutex<HashSet<ObjectKey>>,
    /// Told the OCM transport archives of every full walk.
    archive_sink: Option<ArchiveSink>,
}

/// Receives the transport archives found in the folder (absolute paths, sorted).
pub type ArchiveSink = Arc<dyn Fn(Vec<PathBuf>) + Send + Sync>;

/// Conflicts (a controller wrote an object between planning and commit) are retried this often
/// within one scan, with growing pauses from `RETRY_BACKOFF`; later scans try again anyway.
const MAX_PASSES: usize = 8;
const RETRY_BACKOFF: Duration = Duration::from_millis(2);

/// What a pass looks at.
enum PassInput {
    /// The whole folder.
    Full,
    /// Only files whose transaction conflicted, as they were read.
    Redo(Vec<engine::Redo>),
}

impl Ingestor {
    pub fn new(store: Store, config: IngestConfig) -> Ingestor {
        Ingestor {
            inner: Arc::new(Inner {
                config,
                store,
                state: tokio::sync::Mutex::new(None),
                awaited: std::sync::Mutex::new(HashSet::new()),
                archive_sink: None,
            }),
        }
    }

    /// An ingestor that tells `sink` the transport archives of every full walk.
    pub fn with_archive_sink(store: Store, config: IngestConfig, sink: ArchiveSink) -> Ingestor {
        Ingestor {
            inner: Arc::new(Inner {
                config,
                store,
                state: tokio::sync::Mutex::new(None),
                awaited: std::sync::Mutex::new(HashSet::new()),
                archive_sink: Some(sink),
            }),
        }
    }

    pub fn config(&self) -> &IngestConfig {
        &self.inner.config
    }

    /// Scans the whole folder once and brings the store in line with it.
    pub async fn rescan(&self) -> Result<ScanReport, IngestError> {
        let started = Instant::now();
        let mut guard = self.inner.state.lock().await;
        let mut state = match guard.take() {
            Some(state) => state,
            None => {
                let store = self.inner.store.clone();
                tokio::task::spawn_blocking(move || State::load(&store))
                    .await
                    .map_err(|e| IngestError::Task(e.to_string()))?
                    .map_err(IngestError::Load)?
            }
        };
        let mut report = ScanReport::default();
        let mut input = PassInput::Full;
        for pass in 0..MAX_PASSES {
            if pass > 0 {
                // Give the competing writer a moment, a little longer each time.
                tokio::time::sleep(RETRY_BACKOFF * (1 << (pass - 1))).await;
            }
            let (returned, outcome) = self.pass(state, &mut report, input, pass == 0).await?;
            state = returned;
            report.pending = outcome.retry;
            if report.pending.is_empty() {
                break;
            }
            // Only the conflicting files are planned again, from what was read: the shorter
            // the time between reading the objects and committing, the better the chance.
            input = match outcome.redo {
                Some(redo) => PassInput::Redo(redo),
                None => PassInput::Full,
            };
        }
        for rel in &report.pending {
            tracing::warn!(file = %rel, "objects kept changing while the file was applied; trying again later");
        }
        report.duration = started.elapsed();
        *self.inner.awaited.lock().unwrap_or_else(|e| e.into_inner()) = state.awaited_deletions();
        *guard = Some(state);
        Ok(report)
    }

    /// One pass: walk, read, plan on a blocking thread; commit every file's transaction
    /// concurrently so that the store's writer commits them together.
    async fn pass(
        &self,
        mut state: State,
        report: &mut ScanReport,
        input: PassInput,
        first: bool,
    ) -> Result<(State, engine::PassOutcome), IngestError> {
        let root = self.inner.config.manifests_dir.clone();
        let max_file_size = self.inner.config.max_file_size;
        let store = self.inner.store.clone();
        let now = format_time(jiff::Timestamp::now());
        let archive_sink = self.inner.archive_sink.clone();
        let (mut state, planned) = tokio::task::spawn_blocking(move || {
            let planned = (|| {
                let read_started = Instant::now();
                let (walk, contents, removed) = match input {
                    PassInput::Full => {
                        let walk = scan::walk(&root).map_err(|source| IngestError::Folder {
                            path: root.display().to_string(),
                            source,
                        })?;
                        if let Some(sink) = &archive_sink {
                            sink(walk.archives.clone());
                        }
                        let contents = scan::read_files(&walk.files, max_file_size, |rel, sha| {
                            state.must_parse(rel, sha)
                        });
                        (walk, contents, None)
                    }
                    PassInput::Redo(items) => {
                        let mut walk = scan::Walk::default();
                        let mut contents = Vec::new();
                        let mut removed = Vec::new();
                        for item in items {
                            match item {
                                engine::Redo::File(found, content) => {
                                    walk.files.push(found);
                                    contents.push(content);
                                }
                                engine::Redo::Removed(rel) => removed.push(rel),
                            }
                        }
                        (walk, contents, Some(removed))
                    }
                };
                let plan_started = Instant::now();
                let plans = state
                    .plan(&store, &walk, contents, removed.as_deref(), &now)
                    .map_err(IngestError::Plan)?;
                tracing::debug!(
                    read_parse_ms = (plan_started - read_started).as_millis() as u64,
                    plan_ms = plan_started.elapsed().as_millis() as u64,
                    "scan pass planned"
                );
                Ok((walk.files.len(), walk.warnings, plans))
            })();
            (state, planned)
        })
        .await
        .map_err(|e| IngestError::Task(e.to_string()))?;
        let (files, warnings, mut plans) = planned?;
        if first {
            report.files = files;
            for warning in &warnings {
                tracing::warn!("manifests folder: {warning}");
            }
            report.warnings.extend(warnings);
        }
        let commits = plans.iter_mut().map(|plan| {
            let transaction = std::mem::take(&mut plan.transaction);
            let store = self.inner.store.clone();
            async move {
                if transaction.writes.is_empty() {
                    Ok(Committed {
                        revision: store.revision(),
                        objects: Vec::new(),
                    })
                } else {
                    store.commit(transaction).await
                }
            }
        });
        let commit_started = Instant::now();
        let results = futures_util::future::join_all(commits).await;
        tracing::debug!(
            files = results.len(),
            commit_ms = commit_started.elapsed().as_millis() as u64,
            "scan pass committed"
        );
        let outcome = state
            .finish(plans, results, report)
            .map_err(IngestError::Commit)?;
        Ok((state, outcome))
    }
}
