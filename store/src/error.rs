//! Errors of the object store, layered as redb's are: each layer (opening a store file, the
//! storage underneath, a transaction and its commit, a read, the encoding of records) has its
//! own `#[non_exhaustive]` enum, and [`StoreError`] holds any of them (`From` each), with the
//! layer's own message.

use crate::key::ObjectKey;

/// What went wrong in a store operation. [`StoreError::is_retryable`] tells callers whether
/// trying again (after re-reading) can help.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Opening a store file (the daemon's store, a backup, a restore).
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The database file or the filesystem under it.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A transaction's writes or their commit.
    #[error(transparent)]
    Transaction(#[from] TransactionError),
    /// A read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// An object or a stored record that does not encode or decode.
    #[error(transparent)]
    Encoding(#[from] EncodingError),
}

/// Opening a store file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
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
}

/// The database (redb) or the filesystem failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    #[error("storage failure while {step}: {source}")]
    Database {
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
}

/// A transaction's writes, checked against the current objects, or their commit.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransactionError {
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
    #[error("the commit failed and nothing of it was stored: {message}")]
    CommitFailed { message: String },
    #[error("the store is closed")]
    Closed,
    /// Commits fail for an I/O reason (a full disk, a read-only filesystem); the store reopens
    /// its file by itself once writes succeed again.
    #[error(
        "the store takes no writes now ({reason}); it recovers by itself once the disk takes writes again"
    )]
    NotWritable { reason: String },
}

/// A read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    #[error("resourceVersion {requested} is too old: changes before {oldest} are no longer kept")]
    Expired { requested: u64, oldest: u64 },
}

/// An object that is not a valid store object, or a stored record that does not decode.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodingError {
    #[error("invalid object{}: {field}: {message}", key.as_ref().map(|k| format!(" {k}")).unwrap_or_default())]
    Invalid {
        key: Option<ObjectKey>,
        field: String,
        message: String,
    },
    #[error("corrupt record {record}: {message}")]
    Corrupt { record: String, message: String },
}

impl StoreError {
    /// Whether repeating the operation may succeed: conflicts after a re-read, and transient
    /// storage failures. Validation and format errors never heal by themselves.
    pub fn is_retryable(&self) -> bool {
        match self {
            StoreError::Open(e) => e.is_retryable(),
            StoreError::Storage(e) => e.is_retryable(),
            StoreError::Transaction(e) => e.is_retryable(),
            StoreError::Read(e) => e.is_retryable(),
            StoreError::Encoding(e) => e.is_retryable(),
        }
    }

    /// A [`StorageError::Database`] of `step`, for `map_err`.
    pub(crate) fn redb<E: Into<redb::Error>>(step: &'static str) -> impl FnOnce(E) -> StoreError {
        move |e| {
            StoreError::Storage(StorageError::Database {
                step,
                source: e.into(),
            })
        }
    }
}

impl OpenError {
    /// Never: another format or another process's lock does not go away by retrying.
    pub fn is_retryable(&self) -> bool {
        false
    }
}

impl StorageError {
    /// Always: storage failures may be transient (a full disk gets space again).
    pub fn is_retryable(&self) -> bool {
        true
    }
}

impl TransactionError {
    /// Conflicts (after a re-read) and failed commits; not missing or existing objects, and
    /// not a closed store.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            TransactionError::Conflict { .. }
                | TransactionError::CommitFailed { .. }
                | TransactionError::NotWritable { .. }
        )
    }
}

impl ReadError {
    /// Never: an expired revision stays expired (the caller starts from a fresh list).
    pub fn is_retryable(&self) -> bool {
        false
    }
}

impl EncodingError {
    /// Never: the same bytes decode the same way.
    pub fn is_retryable(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Kind;

    fn key() -> ObjectKey {
        ObjectKey::new(Kind::Installation, "ns", "a")
    }

    /// The classification the flat enum had: conflicts, storage, I/O, failed commits and an
    /// unwritable store are retryable; nothing else is.
    #[test]
    fn retryable_errors_are_those_that_can_heal() {
        let retryable: Vec<StoreError> = vec![
            TransactionError::Conflict {
                key: key(),
                expected: "1".into(),
                actual: "2".into(),
            }
            .into(),
            TransactionError::CommitFailed {
                message: "x".into(),
            }
            .into(),
            TransactionError::NotWritable {
                reason: "disk full".into(),
            }
            .into(),
            StorageError::Io {
                step: "writing",
                source: std::io::Error::other("x"),
            }
            .into(),
            StoreError::redb::<redb::StorageError>("committing")(redb::StorageError::Corrupted(
                "x".into(),
            )),
        ];
        for e in &retryable {
            assert!(e.is_retryable(), "{e}");
        }
        let permanent: Vec<StoreError> = vec![
            TransactionError::NotFound { key: key() }.into(),
            TransactionError::AlreadyExists { key: key() }.into(),
            TransactionError::Closed.into(),
            ReadError::Expired {
                requested: 1,
                oldest: 5,
            }
            .into(),
            EncodingError::Invalid {
                key: None,
                field: "metadata.name".into(),
                message: "Required value".into(),
            }
            .into(),
            EncodingError::Corrupt {
                record: "r".into(),
                message: "m".into(),
            }
            .into(),
            OpenError::Locked { path: "p".into() }.into(),
            OpenError::FormatVersion {
                path: "p".into(),
                found: 9,
                supported: 1,
                hint: "h",
            }
            .into(),
        ];
        for e in &permanent {
            assert!(!e.is_retryable(), "{e}");
        }
    }

    /// The top level shows each layer's message unchanged.
    #[test]
    fn messages_are_the_layers_own() {
        let e = StoreError::from(TransactionError::NotFound { key: key() });
        assert_eq!(e.to_string(), format!("{} not found", key()));
        let e = StoreError::from(OpenError::Locked {
            path: "/x.redb".into(),
        });
        assert_eq!(
            e.to_string(),
            "store file /x.redb is in use by another process (is the daemon already running?)"
        );
        let e = StoreError::from(EncodingError::Invalid {
            key: None,
            field: "kind".into(),
            message: "Required value".into(),
        });
        assert_eq!(e.to_string(), "invalid object: kind: Required value");
    }
}
