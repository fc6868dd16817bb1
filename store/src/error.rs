//! Errors of the object store.

use crate::key::ObjectKey;

/// What went wrong in a store operation. [`StoreError::is_retryable`] tells callers whether
/// trying again (after re-reading) can help.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{key} not found")]
    NotFound { key: ObjectKey },
    #[error("{key} already exists")]
    AlreadyExists { key: ObjectKey },
    #[error(
        "conflict on {key}: the object has been modified (expected resourceVersion {expected}, found {actual}); re-read it and try again"
    )]
    Conflict {
        key: ObjectKey,
        expected: String,
        actual: String,
    },
    #[error("invalid object{}: {field}: {message}", key.as_ref().map(|k| format!(" {k}")).unwrap_or_default())]
    Invalid {
        key: Option<ObjectKey>,
        field: String,
        message: String,
    },
    #[error("resourceVersion {requested} is too old: changes before {oldest} are no longer kept")]
    Expired { requested: u64, oldest: u64 },
    #[error(
        "store file {path} has format version {found}, this binary supports {supported}: {hint}"
    )]
    FormatVersion {
        path: String,
        found: u32,
        supported: u32,
        hint: &'static str,
    },
    #[error("store file {path} is in use by another process (is the daemon already running?)")]
    Locked { path: String },
    #[error("storage failure while {step}: {source}")]
    Storage {
        step: &'static str,
        #[source]
        source: redb::Error,
    },
    #[error("i/o failure while {step}: {source}")]
    Io {
        step: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("the commit failed and nothing of it was stored: {message}")]
    CommitFailed { message: String },
    #[error("corrupt record {record}: {message}")]
    Corrupt { record: String, message: String },
    #[error("the store is closed")]
    Closed,
    /// Commits fail for an I/O reason (a full disk, a read-only filesystem); the store reopens
    /// its file by itself once writes succeed again.
    #[error(
        "the store takes no writes now ({reason}); it recovers by itself once the disk takes writes again"
    )]
    NotWritable { reason: String },
}

impl StoreError {
    /// Whether repeating the operation may succeed: conflicts after a re-read, and transient
    /// storage failures. Validation and format errors never heal by themselves.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            StoreError::Conflict { .. }
                | StoreError::Storage { .. }
                | StoreError::Io { .. }
                | StoreError::CommitFailed { .. }
                | StoreError::NotWritable { .. }
        )
    }

    pub(crate) fn redb<E: Into<redb::Error>>(step: &'static str) -> impl FnOnce(E) -> StoreError {
        move |e| StoreError::Storage {
            step,
            source: e.into(),
        }
    }
}
