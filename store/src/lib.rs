//! Persistent object store of the Landscaper appliance (the object model is `landscaper-model`,
//! re-exported as [`model`]).
//!
//! Objects are JSON values in a redb file, keyed by kind, namespace and name. Every committed
//! transaction bumps one global revision (the objects' `resourceVersion`), is durable when
//! `commit` returns, and is published on a change feed in commit order.

mod change;
pub mod clock;
mod engine;
mod error;
pub mod flow;
mod key;
pub mod object;
pub mod selector;
mod source;
pub mod stats;

pub use change::{Change, ChangeSet, ChangeType, ConditionNote, HistoryEntry, SharedChangeSet};
pub use clock::{Clock, ManualClock, SystemClock};
pub use engine::{
    Committed, FORMAT_VERSION, ObjectList, RestoreReport, SnapshotInfo, Store, StoreContents,
    StoreFile, StoreOptions, StoreSnapshot, Transaction, Unwritable, Write, needs_repair,
    restore_file,
};
pub use error::{EncodingError, OpenError, ReadError, StorageError, StoreError, TransactionError};
pub use flow::{FlowDirection, FlowKind, FlowRef};
pub use key::ObjectKey;
/// The object model lives in its own crate (`landscaper-model`); re-exported so that
/// `landscaper_store::model::...` paths keep working.
pub use landscaper_model as model;
pub use model::Kind;
pub use selector::LabelSelector;
pub use source::{MemoryObjects, ObjectSource};
