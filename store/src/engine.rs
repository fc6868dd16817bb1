//! The redb-backed object store: reads from MVCC snapshots, writes through one writer thread
//! that commits queued transactions together (group commit), and a change feed published after
//! each durable commit.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fs::OpenOptions;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use redb::{
    Database, Durability, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
    TableHandle,
};
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

use crate::change::{Change, ChangeSet, ChangeType, HistoryEntry, SharedChangeSet};
use crate::clock::{Clock, SystemClock, format_time};
use crate::error::{
    EncodingError, OpenError, ReadError, StorageError, StoreError, TransactionError,
};
use crate::flow::{self, FlowRef};
use crate::key::ObjectKey;
use crate::model::Kind;
use crate::object;
use crate::selector::LabelSelector;

/// The file format this binary writes. Bump it with a migration in [`migrate`] whenever the
/// meaning of a table or record changes.
pub const FORMAT_VERSION: u64 = 1;

const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
const LABEL_INDEX: TableDefinition<&str, ()> = TableDefinition::new("label_index");
const OWNER_INDEX: TableDefinition<&str, ()> = TableDefinition::new("owner_index");
const UID_INDEX: TableDefinition<&str, &str> = TableDefinition::new("uid_index");
/// Keys from `flow::index_keys`: scope, direction, kind, reference, installation name.
const FLOW_INDEX: TableDefinition<&str, ()> = TableDefinition::new("flow_index");
const HISTORY: TableDefinition<u64, &[u8]> = TableDefinition::new("history");
const HISTORY_BY_OBJECT: TableDefinition<&str, ()> = TableDefinition::new("history_by_object");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

const META_FORMAT: &str = "format_version";
const META_REVISION: &str = "revision";
const META_HISTORY_FIRST: &str = "history_first";
const META_HISTORY_NEXT: &str = "history_next";

/// Tuning of a [`Store`].
#[derive(Clone)]
pub struct StoreOptions {
    /// How many history entries are kept; older ones are dropped as new ones arrive.
    pub history_limit: u64,
    /// How many change sets are kept in memory for watches that resume from a resourceVersion.
    pub recent_changes: usize,
    /// Capacity of the broadcast change feed; slower subscribers see `Lagged` and must re-list.
    pub feed_capacity: usize,
    /// The most transactions the writer commits in one durable redb transaction.
    pub max_batch: usize,
    /// redb page cache size.
    pub cache_bytes: usize,
    /// `false` skips fsync: only for tests and benchmarks that measure something else.
    pub durable: bool,
    pub clock: Arc<dyn Clock>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            history_limit: 100_000,
            recent_changes: 2_048,
            feed_capacity: 8_192,
            max_batch: 4_096,
            cache_bytes: 32 * 1024 * 1024,
            durable: true,
            clock: Arc::new(SystemClock),
        }
    }
}

/// One write of a transaction.
#[derive(Debug, Clone)]
pub enum Write {
    /// Creates an object; fails with `AlreadyExists`. The store sets uid, creationTimestamp,
    /// generation and resourceVersion, and a name from `generateName` when no name is given.
    Create(Value),
    /// Replaces an object. A non-empty `metadata.resourceVersion` must equal the stored one
    /// (optimistic concurrency); an empty one writes unconditionally. uid, creationTimestamp and
    /// deletionTimestamp are kept from the stored object; generation is bumped when anything
    /// outside metadata and status changed. An update that leaves a deleting object without
    /// finalizers removes it.
    Update(Value),
    /// Deletes an object: with finalizers it only gets a deletionTimestamp.
    Delete {
        key: ObjectKey,
        /// Precondition: the stored resourceVersion must equal this one.
        resource_version: Option<String>,
    },
}

/// A group of writes that commit together or not at all, under one new resourceVersion.
#[derive(Debug, Clone, Default)]
pub struct Transaction {
    pub writes: Vec<Write>,
}

impl Transaction {
    pub fn new() -> Self {
        Transaction::default()
    }

    pub fn create(mut self, object: Value) -> Self {
        self.writes.push(Write::Create(object));
        self
    }

    pub fn update(mut self, object: Value) -> Self {
        self.writes.push(Write::Update(object));
        self
    }

    pub fn delete(mut self, key: ObjectKey, resource_version: Option<String>) -> Self {
        self.writes.push(Write::Delete {
            key,
            resource_version,
        });
        self
    }
}

impl From<Write> for Transaction {
    fn from(write: Write) -> Self {
        Transaction {
            writes: vec![write],
        }
    }
}

/// The outcome of a committed transaction.
#[derive(Debug, Clone)]
pub struct Committed {
    /// The revision the transaction committed at; the current revision if it changed nothing.
    pub revision: u64,
    /// The object after each write, in order; `None` where the write removed it.
    pub objects: Vec<Option<Value>>,
}

/// A consistent list of objects and the revision of the snapshot they were read from.
#[derive(Debug, Clone)]
pub struct ObjectList {
    pub items: Vec<Value>,
    pub revision: u64,
}

type Reply = oneshot::Sender<Result<Committed, StoreError>>;

enum Request {
    Commit {
        transaction: Transaction,
        reply: Reply,
    },
    Shutdown {
        // A std channel: shutdown may be called from inside an async runtime.
        reply: mpsc::Sender<()>,
    },
}

/// The store's state after a commit failed for an I/O reason (disk full, read-only
/// filesystem, failing device).
#[derive(Debug, Clone)]
pub struct Unwritable {
    /// The failure, as the commit reported it.
    pub reason: String,
    /// When it happened (RFC 3339, the store's clock).
    pub since: String,
}

struct Shared {
    /// Swapped for a fresh handle when the writer reopens the file after an I/O failure (redb
    /// refuses every later operation on a handle that saw one, even once the disk has room).
    /// `None` between closing a failed handle and opening the new one.
    db: RwLock<Option<Arc<Database>>>,
    /// Why commits cannot succeed now (`None` while they can): set by the writer when a commit
    /// fails for an I/O reason, cleared once the reopened file takes writes again.
    unwritable: Mutex<Option<Unwritable>>,
    path: PathBuf,
    revision: AtomicU64,
    feed: broadcast::Sender<SharedChangeSet>,
    recent: Mutex<VecDeque<SharedChangeSet>>,
    options: StoreOptions,
    /// Time from `commit` to its durable answer, as callers see it.
    commit_latency: crate::stats::LatencyHistogram,
}

impl Shared {
    /// The current database handle; `NotWritable` while the writer is reopening the file.
    fn database(&self) -> Result<Arc<Database>, StoreError> {
        self.db
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| {
                StoreError::Transaction(TransactionError::NotWritable {
                    reason: self
                        .unwritable()
                        .map(|u| u.reason)
                        .unwrap_or_else(|| "the store file is being reopened".into()),
                })
            })
    }

    fn unwritable(&self) -> Option<Unwritable> {
        self.unwritable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_unwritable(&self, state: Option<Unwritable>) {
        *self.unwritable.lock().unwrap_or_else(|e| e.into_inner()) = state;
    }
}

/// How often the writer tries to reopen a store file whose commits failed for an I/O reason.
const RECOVERY_INTERVAL: Duration = Duration::from_secs(1);
/// How long a reopen waits for readers of the old handle to finish.
const REOPEN_WAIT: Duration = Duration::from_secs(5);

/// Handle to the object store; cheap to clone. Reads run on the caller's thread against a
/// snapshot; writes queue for the writer thread.
#[derive(Clone)]
pub struct Store {
    shared: Arc<Shared>,
    requests: mpsc::Sender<Request>,
    writer: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.shared.path)
            .field("revision", &self.revision())
            .finish()
    }
}

impl Store {
    /// Opens (or creates, mode 0600) the store file and starts its writer thread.
    pub fn open(path: &Path, options: StoreOptions) -> Result<Store, StoreError> {
        let display = path.display().to_string();
        let fresh = !path.exists();
        if fresh {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .map_err(|source| {
                    StoreError::Storage(StorageError::Io {
                        step: "creating the store file",
                        source,
                    })
                })?;
        }
        let mut builder = Database::builder();
        builder.set_cache_size(options.cache_bytes);
        let opened = if fresh {
            builder.create(path)
        } else {
            builder.open(path)
        };
        let db = opened.map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Open(OpenError::Locked {
                path: display.clone(),
            }),
            redb::DatabaseError::UpgradeRequired(v) => StoreError::Open(OpenError::FormatVersion {
                path: display.clone(),
                found: v as u32,
                supported: FORMAT_VERSION as u32,
                hint: "the redb file format is older than this binary's; open it with the matching release and move the data with `backup` and `restore`, or `export`",
            }),
            e => StoreError::Storage(StorageError::Database {
                step: "opening the store file",
                source: e.into(),
            }),
        })?;
        // Kept private even if the file was created by something else.
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
        let revision = initialise(&db, &display)?;
        let (feed, _) = broadcast::channel(options.feed_capacity.max(1));
        let shared = Arc::new(Shared {
            db: RwLock::new(Some(Arc::new(db))),
            unwritable: Mutex::new(None),
            path: path.to_path_buf(),
            revision: AtomicU64::new(revision),
            feed,
            recent: Mutex::new(VecDeque::new()),
            options,
            commit_latency: Default::default(),
        });
        let (requests, inbox) = mpsc::channel();
        let writer_shared = shared.clone();
        let writer = std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || Writer::new(writer_shared, revision).run(inbox))
            .map_err(|source| {
                StoreError::Storage(StorageError::Io {
                    step: "starting the writer thread",
                    source,
                })
            })?;
        Ok(Store {
            shared,
            requests,
            writer: Arc::new(Mutex::new(Some(writer))),
        })
    }

    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The newest committed revision.
    pub fn revision(&self) -> u64 {
        self.shared.revision.load(Ordering::Acquire)
    }

    /// Commits a transaction durably and returns once it is on disk.
    pub async fn commit(&self, transaction: Transaction) -> Result<Committed, StoreError> {
        let started = std::time::Instant::now();
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(Request::Commit { transaction, reply })
            .map_err(|_| StoreError::Transaction(TransactionError::Closed))?;
        let result = answer
            .await
            .map_err(|_| StoreError::Transaction(TransactionError::Closed))?;
        self.shared.commit_latency.observe(started.elapsed());
        result
    }

    /// Commit latency so far (for metrics).
    pub fn commit_latency(&self) -> crate::stats::HistogramSnapshot {
        self.shared.commit_latency.snapshot()
    }

    /// [`commit`](Self::commit) for threads outside an async runtime.
    pub fn commit_blocking(&self, transaction: Transaction) -> Result<Committed, StoreError> {
        let started = std::time::Instant::now();
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(Request::Commit { transaction, reply })
            .map_err(|_| StoreError::Transaction(TransactionError::Closed))?;
        let result = answer
            .blocking_recv()
            .map_err(|_| StoreError::Transaction(TransactionError::Closed))?;
        self.shared.commit_latency.observe(started.elapsed());
        result
    }

    /// Stops the writer after the queued transactions have committed. Later commits fail with
    /// `Closed`; reads keep working. Blocks briefly (for the last commit), also when called
    /// from async code.
    pub fn shutdown(&self) {
        let (reply, done) = mpsc::channel();
        if self.requests.send(Request::Shutdown { reply }).is_ok() {
            let _ = done.recv();
        }
        let handle = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }

    /// Subscribes to every change set committed from now on, in order.
    pub fn subscribe(&self) -> broadcast::Receiver<SharedChangeSet> {
        self.shared.feed.subscribe()
    }

    /// The change sets committed after `revision`, from the in-memory window; `Expired` when
    /// that window no longer reaches back far enough.
    pub fn changes_since(&self, revision: u64) -> Result<Vec<SharedChangeSet>, StoreError> {
        let recent = self.shared.recent.lock().unwrap_or_else(|e| e.into_inner());
        let current = self.revision();
        if revision >= current {
            return Ok(Vec::new());
        }
        let oldest = recent.front().map(|c| c.revision).unwrap_or(current + 1);
        if revision + 1 < oldest {
            return Err(StoreError::Read(ReadError::Expired {
                requested: revision,
                oldest,
            }));
        }
        Ok(recent
            .iter()
            .filter(|c| c.revision > revision)
            .cloned()
            .collect())
    }

    fn read(&self) -> Result<redb::ReadTransaction, StoreError> {
        self.shared
            .database()?
            .begin_read()
            .map_err(StoreError::redb("starting a read"))
    }

    /// `None` while commits can succeed; else why not and since when (the writer reopens the
    /// file and clears this once writes succeed again). Behind `/readyz` and the watchdog.
    pub fn unwritable(&self) -> Option<Unwritable> {
        self.shared.unwritable()
    }

    pub fn get(&self, key: &ObjectKey) -> Result<Option<Value>, StoreError> {
        read_get(&self.read()?, key)
    }

    /// Lists objects of a kind, in one namespace or all, matching a label selector.
    pub fn list(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Result<ObjectList, StoreError> {
        read_list(&self.read()?, kind, namespace, selector)
    }

    /// The number of objects of each kind.
    pub fn count_by_kind(&self) -> Result<Vec<(Kind, u64)>, StoreError> {
        let tx = self.read()?;
        let objects = tx
            .open_table(OBJECTS)
            .map_err(StoreError::redb("opening the objects table"))?;
        let mut counts = Vec::new();
        for kind in Kind::ALL {
            let prefix = ObjectKey::prefix(kind, None);
            let mut n = 0;
            for entry in objects
                .range(prefix.as_str()..)
                .map_err(StoreError::redb("scanning objects"))?
            {
                let (key, _) = entry.map_err(StoreError::redb("scanning objects"))?;
                if !key.value().starts_with(prefix.as_str()) {
                    break;
                }
                n += 1;
            }
            counts.push((kind, n));
        }
        Ok(counts)
    }

    /// Objects whose `ownerReferences` name `owner_uid`.
    pub fn children(&self, owner_uid: &str) -> Result<Vec<Value>, StoreError> {
        read_children(&self.read()?, owner_uid)
    }

    /// The names of the installations in one scope (namespace, and parent installation or
    /// `None` for roots) that import or export `flow.reference`, from the data-flow index.
    pub fn installations_by_flow(
        &self,
        namespace: &str,
        parent: Option<&str>,
        flow: FlowRef<'_>,
    ) -> Result<Vec<String>, StoreError> {
        read_installations_by_flow(&self.read()?, namespace, parent, flow)
    }

    /// The object with this uid, if it still exists.
    pub fn get_by_uid(&self, uid: &str) -> Result<Option<Value>, StoreError> {
        let tx = self.read()?;
        let index = tx
            .open_table(UID_INDEX)
            .map_err(StoreError::redb("opening the uid index"))?;
        let Some(storage_key) = index
            .get(uid)
            .map_err(StoreError::redb("reading the uid index"))?
            .map(|k| k.value().to_string())
        else {
            return Ok(None);
        };
        drop(index);
        match ObjectKey::from_storage_key(&storage_key) {
            Some(key) => self.get(&key),
            None => Err(StoreError::Encoding(EncodingError::Corrupt {
                record: storage_key,
                message: "uid index entry names no valid key".into(),
            })),
        }
    }

    /// The newest history entries of one object, newest first.
    pub fn history(&self, key: &ObjectKey, limit: usize) -> Result<Vec<HistoryEntry>, StoreError> {
        let tx = self.read()?;
        let index = tx
            .open_table(HISTORY_BY_OBJECT)
            .map_err(StoreError::redb("opening the history index"))?;
        let history = tx
            .open_table(HISTORY)
            .map_err(StoreError::redb("opening the history"))?;
        let prefix = format!("{}\0", key.storage_key());
        let upper = format!("{}\u{1}", key.storage_key());
        let mut entries = Vec::new();
        for entry in index
            .range(prefix.as_str()..upper.as_str())
            .map_err(StoreError::redb("scanning the history index"))?
            .rev()
        {
            if entries.len() >= limit {
                break;
            }
            let (k, _) = entry.map_err(StoreError::redb("scanning the history index"))?;
            let seq = k.value()[prefix.len()..].parse::<u64>().map_err(|e| {
                StoreError::Encoding(EncodingError::Corrupt {
                    record: k.value().to_string(),
                    message: e.to_string(),
                })
            })?;
            if let Some(bytes) = history
                .get(seq)
                .map_err(StoreError::redb("reading the history"))?
            {
                entries.push(decode_history(seq, bytes.value())?);
            }
        }
        Ok(entries)
    }

    /// The newest history entries of all objects, newest first.
    pub fn recent_history(&self, limit: usize) -> Result<Vec<HistoryEntry>, StoreError> {
        let tx = self.read()?;
        let history = tx
            .open_table(HISTORY)
            .map_err(StoreError::redb("opening the history"))?;
        let mut entries = Vec::new();
        for entry in history
            .range::<u64>(..)
            .map_err(StoreError::redb("scanning the history"))?
            .rev()
            .take(limit)
        {
            let (seq, bytes) = entry.map_err(StoreError::redb("scanning the history"))?;
            entries.push(decode_history(seq.value(), bytes.value())?);
        }
        Ok(entries)
    }

    /// Size of the store file in bytes.
    pub fn file_size(&self) -> u64 {
        std::fs::metadata(&self.shared.path)
            .map(|m| m.len())
            .unwrap_or(0)
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // The last handle stops the writer so the database file is closed cleanly.
        if Arc::strong_count(&self.writer) == 1 {
            let handle = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(handle) = handle {
                let (reply, _done) = mpsc::channel();
                let _ = self.requests.send(Request::Shutdown { reply });
                let _ = handle.join();
            }
        }
    }
}

/// Writes, syncs and removes a small file beside the store: whether the filesystem takes
/// writes again (a full disk refuses it).
fn probe_write(store_path: &Path) -> std::io::Result<()> {
    use std::io::Write as _;
    let probe = partial_path(store_path, "probe");
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&probe)?;
        file.write_all(&[0u8; 256 * 1024])?;
        file.sync_all()
    })();
    let _ = std::fs::remove_file(&probe);
    result
}

fn decode(record: &str, bytes: &[u8]) -> Result<Value, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| {
        StoreError::Encoding(EncodingError::Corrupt {
            record: record.to_string(),
            message: e.to_string(),
        })
    })
}

fn decode_history(seq: u64, bytes: &[u8]) -> Result<HistoryEntry, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| {
        StoreError::Encoding(EncodingError::Corrupt {
            record: format!("history #{seq}"),
            message: e.to_string(),
        })
    })
}

fn read_meta(tx: &redb::ReadTransaction, key: &str) -> Result<Option<u64>, StoreError> {
    let table = match tx.open_table(META) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(StoreError::redb("opening the meta table")(e)),
    };
    Ok(table
        .get(key)
        .map_err(StoreError::redb("reading meta"))?
        .map(|v| v.value()))
}

/// Creates the tables of a new file, checks the format version of an existing one, and returns
/// the committed revision.
fn initialise(db: &Database, path: &str) -> Result<u64, StoreError> {
    let tx = db
        .begin_write()
        .map_err(StoreError::redb("starting the initial transaction"))?;
    let revision = {
        let mut meta = tx
            .open_table(META)
            .map_err(StoreError::redb("opening the meta table"))?;
        let found = meta
            .get(META_FORMAT)
            .map_err(StoreError::redb("reading the format version"))?
            .map(|v| v.value());
        match found {
            None => {
                meta.insert(META_FORMAT, FORMAT_VERSION)
                    .map_err(StoreError::redb("writing the format version"))?;
            }
            Some(v) if v == FORMAT_VERSION => {}
            Some(v) if v < FORMAT_VERSION => {
                migrate(v)?;
            }
            Some(v) => {
                return Err(StoreError::Open(OpenError::FormatVersion {
                    path: path.to_string(),
                    found: v as u32,
                    supported: FORMAT_VERSION as u32,
                    hint: "the store was written by a newer release; upgrade the appliance or restore a backup made by this release",
                }));
            }
        }
        meta.get(META_REVISION)
            .map_err(StoreError::redb("reading the revision"))?
            .map(|v| v.value())
            .unwrap_or(0)
    };
    tx.open_table(OBJECTS)
        .map_err(StoreError::redb("creating the objects table"))?;
    tx.open_table(LABEL_INDEX)
        .map_err(StoreError::redb("creating the label index"))?;
    tx.open_table(OWNER_INDEX)
        .map_err(StoreError::redb("creating the owner index"))?;
    tx.open_table(UID_INDEX)
        .map_err(StoreError::redb("creating the uid index"))?;
    backfill_flow_index(&tx)?;
    tx.open_table(HISTORY)
        .map_err(StoreError::redb("creating the history"))?;
    tx.open_table(HISTORY_BY_OBJECT)
        .map_err(StoreError::redb("creating the history index"))?;
    tx.commit()
        .map_err(StoreError::redb("committing the initial transaction"))?;
    Ok(revision)
}

/// Files written before the data-flow index existed get it built from their installations; it
/// is derived data, so this needs no format version.
fn backfill_flow_index(tx: &redb::WriteTransaction) -> Result<(), StoreError> {
    let exists = tx
        .list_tables()
        .map_err(StoreError::redb("listing the tables"))?
        .any(|t| t.name() == FLOW_INDEX.name());
    let mut index = tx
        .open_table(FLOW_INDEX)
        .map_err(StoreError::redb("creating the data-flow index"))?;
    if exists {
        return Ok(());
    }
    let objects = tx
        .open_table(OBJECTS)
        .map_err(StoreError::redb("opening the objects table"))?;
    let prefix = ObjectKey::prefix(Kind::Installation, None);
    for entry in objects
        .range(prefix.as_str()..)
        .map_err(StoreError::redb("scanning objects"))?
    {
        let (storage_key, bytes) = entry.map_err(StoreError::redb("scanning objects"))?;
        let storage_key = storage_key.value();
        if !storage_key.starts_with(prefix.as_str()) {
            break;
        }
        let Some(key) = ObjectKey::from_storage_key(storage_key) else {
            continue;
        };
        let object = decode(storage_key, bytes.value())?;
        for k in flow::index_keys(&key, &object) {
            index
                .insert(k.as_str(), ())
                .map_err(StoreError::redb("building the data-flow index"))?;
        }
    }
    Ok(())
}

/// Upgrades a file from an older format version. Version 1 is the first; each later version
/// adds a step here that rewrites the affected tables inside the opening transaction.
fn migrate(from: u64) -> Result<(), StoreError> {
    Err(StoreError::Encoding(EncodingError::Corrupt {
        record: META_FORMAT.into(),
        message: format!("format version {from} predates the first release and cannot be read"),
    }))
}

fn label_index_prefix(kind: Kind, label: &str, value: &str) -> String {
    format!("{}\0{label}\0{value}\0", kind.as_str())
}

fn label_index_keys(key: &ObjectKey, object: &Value) -> Vec<String> {
    object::labels(object)
        .iter()
        .map(|(l, v)| {
            format!(
                "{}{}/{}",
                label_index_prefix(key.kind, l, v),
                key.namespace,
                key.name
            )
        })
        .collect()
}

fn owner_index_keys(storage_key: &str, object: &Value) -> Vec<String> {
    object::owner_uids(object)
        .iter()
        .map(|uid| format!("{uid}\0{storage_key}"))
        .collect()
}

/// A key's state at the start of the batch and now.
struct Touched {
    original: Option<Value>,
    current: Option<Value>,
}

/// The single writer: applies queued transactions against an overlay of the batch's writes,
/// then commits the whole batch in one durable redb transaction.
struct Writer {
    shared: Arc<Shared>,
    revision: u64,
    /// Freeing a batch's objects is a good part of the writer's time; another thread does it.
    reaper: mpsc::Sender<Garbage>,
    /// When the writer last tried to reopen an unwritable file.
    last_recovery: Option<Instant>,
}

/// What the writer is done with. The fields are never read: they exist to be dropped on the
/// reaper thread.
#[allow(dead_code)]
enum Garbage {
    Batch(HashMap<String, Touched>),
    ChangeSet(SharedChangeSet),
}

fn start_reaper() -> mpsc::Sender<Garbage> {
    let (sender, garbage) = mpsc::channel::<Garbage>();
    let spawned = std::thread::Builder::new()
        .name("store-reaper".into())
        .spawn(move || while garbage.recv().is_ok() {});
    if spawned.is_err() {
        tracing::warn!("no reaper thread; the writer frees its batches itself");
    }
    sender
}

impl Writer {
    fn new(shared: Arc<Shared>, revision: u64) -> Self {
        Writer {
            shared,
            revision,
            reaper: start_reaper(),
            last_recovery: None,
        }
    }

    /// Hands something to the reaper; drops it here if the reaper is gone.
    fn discard(&self, garbage: Garbage) {
        let _ = self.reaper.send(garbage);
    }

    fn run(mut self, inbox: mpsc::Receiver<Request>) {
        // Reused between batches so that queuing allocates nothing in the steady state.
        let mut transactions = Vec::new();
        let mut replies = Vec::new();
        loop {
            let first = if self.is_unwritable() {
                match inbox.recv_timeout(RECOVERY_INTERVAL) {
                    Ok(request) => request,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        self.try_recover();
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            } else {
                match inbox.recv() {
                    Ok(request) => request,
                    Err(_) => return,
                }
            };
            let mut shutdown = None;
            let mut next = Some(first);
            while let Some(request) = next.take() {
                match request {
                    Request::Commit { transaction, reply } => {
                        transactions.push(transaction);
                        replies.push(reply);
                    }
                    Request::Shutdown { reply } => {
                        shutdown = Some(reply);
                        break;
                    }
                }
                if replies.len() < self.shared.options.max_batch {
                    next = inbox.try_recv().ok();
                }
            }
            if !replies.is_empty() {
                self.commit_batch(&mut transactions, &mut replies);
            }
            if let Some(reply) = shutdown {
                let _ = reply.send(());
                return;
            }
        }
    }

    fn is_unwritable(&self) -> bool {
        self.shared.unwritable().is_some()
    }

    /// Reopens the store file after a commit failed for an I/O reason, at most once per
    /// [`RECOVERY_INTERVAL`]: a probe write first (cheap, and keeps the old handle for reads
    /// while the disk is still full), then the old handle is closed and the file opened again,
    /// which lets redb repair it to the last durable commit. Nothing acknowledged is lost: a
    /// failed commit was never acknowledged.
    fn try_recover(&mut self) -> bool {
        if !self.is_unwritable() {
            return true;
        }
        if self
            .last_recovery
            .is_some_and(|t| t.elapsed() < RECOVERY_INTERVAL)
        {
            return false;
        }
        self.last_recovery = Some(Instant::now());
        if let Err(e) = probe_write(&self.shared.path) {
            self.note_unwritable(format!("the store's folder takes no writes: {e}"));
            return false;
        }
        // Close the failed handle; readers holding a clone finish their read first.
        let old = self
            .shared
            .db
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(old) = old {
            let deadline = Instant::now() + REOPEN_WAIT;
            while Arc::strong_count(&old) > 1 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            drop(old);
        }
        let deadline = Instant::now() + REOPEN_WAIT;
        let reopened = loop {
            let mut builder = Database::builder();
            builder.set_cache_size(self.shared.options.cache_bytes);
            match builder.open(&self.shared.path) {
                // Read transactions of the old handle still hold the file lock.
                Err(redb::DatabaseError::DatabaseAlreadyOpen) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => break Err(StoreError::redb("reopening the store file")(e)),
                Ok(db) => {
                    let path = self.shared.path.display().to_string();
                    break initialise(&db, &path).map(|revision| (db, revision));
                }
            }
        };
        match reopened {
            Ok((db, revision)) => {
                self.revision = revision;
                self.shared.revision.store(revision, Ordering::Release);
                *self.shared.db.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(db));
                self.shared.set_unwritable(None);
                tracing::info!(revision, "store file reopened; commits work again");
                true
            }
            Err(e) => {
                self.note_unwritable(format!("reopening the store file failed: {e}"));
                false
            }
        }
    }

    fn note_unwritable(&self, reason: String) {
        let mut state = self
            .shared
            .unwritable
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let since = state
            .as_ref()
            .map(|u| &u.since)
            .cloned()
            .unwrap_or_else(|| format_time(self.shared.options.clock.now()));
        *state = Some(Unwritable { reason, since });
    }

    fn commit_batch(&mut self, transactions: &mut Vec<Transaction>, replies: &mut Vec<Reply>) {
        if self.is_unwritable() && !self.try_recover() {
            let reason = self
                .shared
                .unwritable()
                .map(|u| u.reason)
                .unwrap_or_default();
            transactions.clear();
            for reply in replies.drain(..) {
                let _ = reply.send(Err(StoreError::Transaction(
                    TransactionError::NotWritable {
                        reason: reason.clone(),
                    },
                )));
            }
            return;
        }
        let start_revision = self.revision;
        match self.try_commit_batch(transactions.drain(..)) {
            Ok((outcomes, change_sets)) => {
                self.shared.revision.store(self.revision, Ordering::Release);
                {
                    let mut recent = self.shared.recent.lock().unwrap_or_else(|e| e.into_inner());
                    for set in &change_sets {
                        recent.push_back(set.clone());
                        while recent.len() > self.shared.options.recent_changes {
                            if let Some(old) = recent.pop_front() {
                                self.discard(Garbage::ChangeSet(old));
                            }
                        }
                        // Nobody listening is fine.
                        let _ = self.shared.feed.send(set.clone());
                    }
                }
                for (reply, outcome) in replies.drain(..).zip(outcomes) {
                    let _ = reply.send(outcome);
                }
            }
            Err(error) => {
                self.revision = start_revision;
                tracing::error!(%error, "store commit failed; the batch was rolled back");
                let message = error.to_string();
                if matches!(
                    error,
                    StoreError::Storage(StorageError::Database { .. })
                        | StoreError::Transaction(TransactionError::NotWritable { .. })
                ) {
                    // redb refuses every later operation on this handle: reopen it once the
                    // disk takes writes again.
                    self.note_unwritable(message.clone());
                    self.last_recovery = Some(Instant::now());
                }
                for reply in replies.drain(..) {
                    let _ = reply.send(Err(StoreError::Transaction(
                        TransactionError::CommitFailed {
                            message: message.clone(),
                        },
                    )));
                }
            }
        }
    }

    #[allow(clippy::type_complexity)]
    fn try_commit_batch(
        &mut self,
        transactions: impl Iterator<Item = Transaction>,
    ) -> Result<(Vec<Result<Committed, StoreError>>, Vec<SharedChangeSet>), StoreError> {
        let mut tx = self
            .shared
            .database()?
            .begin_write()
            .map_err(StoreError::redb("starting a write"))?;
        tx.set_durability(if self.shared.options.durable {
            Durability::Immediate
        } else {
            Durability::None
        })
        .map_err(|e| {
            StoreError::Encoding(EncodingError::Corrupt {
                record: "durability".into(),
                message: e.to_string(),
            })
        })?;
        let now = format_time(self.shared.options.clock.now());
        let mut touched: HashMap<String, Touched> = HashMap::new();
        let mut outcomes = Vec::new();
        let mut change_sets = Vec::new();
        {
            let objects = tx
                .open_table(OBJECTS)
                .map_err(StoreError::redb("opening the objects table"))?;
            for transaction in transactions {
                let mut view = TransactionView {
                    objects: &objects,
                    batch: &touched,
                    local: HashMap::new(),
                };
                let next = self.revision + 1;
                let results = match apply_transaction(transaction, &mut view, next, &now) {
                    Ok(results) => results,
                    Err(e) => {
                        // The view's writes are dropped: the transaction changes nothing.
                        outcomes.push(Err(e));
                        continue;
                    }
                };
                let local = view.local;
                let mut changes = Vec::new();
                for (storage_key, entry) in local {
                    let Some(after) = entry.after else {
                        continue; // only read
                    };
                    if let Some(change) = describe_change(&storage_key, &entry.before, &after, next)
                    {
                        changes.push(change);
                    }
                    match touched.entry(storage_key) {
                        Entry::Occupied(mut t) => t.get_mut().current = after,
                        Entry::Vacant(t) => {
                            t.insert(Touched {
                                original: entry.before,
                                current: after,
                            });
                        }
                    }
                }
                let revision = if changes.is_empty() {
                    self.revision
                } else {
                    changes.sort_by(|a, b| a.key.cmp(&b.key));
                    self.revision = next;
                    change_sets.push(Arc::new(ChangeSet {
                        revision: next,
                        time: now.clone(),
                        changes,
                    }));
                    next
                };
                outcomes.push(Ok(Committed {
                    revision,
                    objects: results,
                }));
            }
        }
        if change_sets.is_empty() {
            tx.abort()
                .map_err(StoreError::redb("aborting a no-op write"))?;
            self.discard(Garbage::Batch(touched));
            return Ok((outcomes, change_sets));
        }
        self.write_touched(&tx, &touched)?;
        self.write_history(&tx, &change_sets)?;
        {
            let mut meta = tx
                .open_table(META)
                .map_err(StoreError::redb("opening the meta table"))?;
            meta.insert(META_REVISION, self.revision)
                .map_err(StoreError::redb("writing the revision"))?;
        }
        tx.commit().map_err(StoreError::redb("committing"))?;
        self.discard(Garbage::Batch(touched));
        Ok((outcomes, change_sets))
    }

    fn write_touched(
        &self,
        tx: &redb::WriteTransaction,
        touched: &HashMap<String, Touched>,
    ) -> Result<(), StoreError> {
        let mut objects = tx
            .open_table(OBJECTS)
            .map_err(StoreError::redb("opening the objects table"))?;
        let mut labels = tx
            .open_table(LABEL_INDEX)
            .map_err(StoreError::redb("opening the label index"))?;
        let mut owners = tx
            .open_table(OWNER_INDEX)
            .map_err(StoreError::redb("opening the owner index"))?;
        let mut uids = tx
            .open_table(UID_INDEX)
            .map_err(StoreError::redb("opening the uid index"))?;
        let mut flows = tx
            .open_table(FLOW_INDEX)
            .map_err(StoreError::redb("opening the data-flow index"))?;
        for (storage_key, t) in touched {
            let Some(key) = ObjectKey::from_storage_key(storage_key) else {
                continue;
            };
            // Index entries are only touched where they differ: most updates change neither
            // labels nor owners nor the uid.
            let index_entries =
                |object: &Option<Value>| -> (BTreeSet<String>, BTreeSet<String>, String) {
                    match object {
                        Some(o) => (
                            label_index_keys(&key, o).into_iter().collect(),
                            owner_index_keys(storage_key, o).into_iter().collect(),
                            object::uid(o).to_string(),
                        ),
                        None => Default::default(),
                    }
                };
            let (old_labels, old_owners, old_uid) = index_entries(&t.original);
            let (new_labels, new_owners, new_uid) = index_entries(&t.current);
            let flow_entries = |object: &Option<Value>| -> BTreeSet<String> {
                object
                    .as_ref()
                    .map(|o| flow::index_keys(&key, o).into_iter().collect())
                    .unwrap_or_default()
            };
            let (old_flows, new_flows) = (flow_entries(&t.original), flow_entries(&t.current));
            for k in old_flows.difference(&new_flows) {
                flows
                    .remove(k.as_str())
                    .map_err(StoreError::redb("updating the data-flow index"))?;
            }
            for k in new_flows.difference(&old_flows) {
                flows
                    .insert(k.as_str(), ())
                    .map_err(StoreError::redb("updating the data-flow index"))?;
            }
            for k in old_labels.difference(&new_labels) {
                labels
                    .remove(k.as_str())
                    .map_err(StoreError::redb("updating the label index"))?;
            }
            for k in new_labels.difference(&old_labels) {
                labels
                    .insert(k.as_str(), ())
                    .map_err(StoreError::redb("updating the label index"))?;
            }
            for k in old_owners.difference(&new_owners) {
                owners
                    .remove(k.as_str())
                    .map_err(StoreError::redb("updating the owner index"))?;
            }
            for k in new_owners.difference(&old_owners) {
                owners
                    .insert(k.as_str(), ())
                    .map_err(StoreError::redb("updating the owner index"))?;
            }
            if old_uid != new_uid {
                if !old_uid.is_empty() {
                    uids.remove(old_uid.as_str())
                        .map_err(StoreError::redb("updating the uid index"))?;
                }
                if !new_uid.is_empty() {
                    uids.insert(new_uid.as_str(), storage_key.as_str())
                        .map_err(StoreError::redb("updating the uid index"))?;
                }
            }
            match &t.current {
                Some(new) => {
                    let bytes = serde_json::to_vec(new).map_err(|e| {
                        StoreError::Encoding(EncodingError::Corrupt {
                            record: storage_key.clone(),
                            message: e.to_string(),
                        })
                    })?;
                    objects
                        .insert(storage_key.as_str(), bytes.as_slice())
                        .map_err(StoreError::redb("writing an object"))?;
                }
                None => {
                    objects
                        .remove(storage_key.as_str())
                        .map_err(StoreError::redb("removing an object"))?;
                }
            }
        }
        Ok(())
    }

    fn write_history(
        &self,
        tx: &redb::WriteTransaction,
        change_sets: &[SharedChangeSet],
    ) -> Result<(), StoreError> {
        let mut meta = tx
            .open_table(META)
            .map_err(StoreError::redb("opening the meta table"))?;
        let mut history = tx
            .open_table(HISTORY)
            .map_err(StoreError::redb("opening the history"))?;
        let mut by_object = tx
            .open_table(HISTORY_BY_OBJECT)
            .map_err(StoreError::redb("opening the history index"))?;
        let read = |meta: &redb::Table<&str, u64>, k: &str| -> Result<u64, StoreError> {
            Ok(meta
                .get(k)
                .map_err(StoreError::redb("reading meta"))?
                .map(|v| v.value())
                .unwrap_or(0))
        };
        let mut first = read(&meta, META_HISTORY_FIRST)?;
        let mut next = read(&meta, META_HISTORY_NEXT)?;
        for set in change_sets {
            for change in &set.changes {
                let entry = HistoryEntry::from_change(set.revision, &set.time, change);
                let bytes = serde_json::to_vec(&entry).map_err(|e| {
                    StoreError::Encoding(EncodingError::Corrupt {
                        record: "history entry".into(),
                        message: e.to_string(),
                    })
                })?;
                history
                    .insert(next, bytes.as_slice())
                    .map_err(StoreError::redb("writing history"))?;
                let index_key = format!("{}\0{next:020}", change.key.storage_key());
                by_object
                    .insert(index_key.as_str(), ())
                    .map_err(StoreError::redb("writing the history index"))?;
                next += 1;
            }
        }
        while next - first > self.shared.options.history_limit {
            let removed = history
                .remove(first)
                .map_err(StoreError::redb("trimming history"))?
                .map(|v| v.value().to_vec());
            if let Some(bytes) = removed
                && let Ok(entry) = decode_history(first, &bytes)
            {
                let index_key = format!("{}\0{first:020}", entry.key.storage_key());
                by_object
                    .remove(index_key.as_str())
                    .map_err(StoreError::redb("trimming the history index"))?;
            }
            first += 1;
        }
        meta.insert(META_HISTORY_FIRST, first)
            .map_err(StoreError::redb("writing meta"))?;
        meta.insert(META_HISTORY_NEXT, next)
            .map_err(StoreError::redb("writing meta"))?;
        Ok(())
    }
}

fn describe_change(
    storage_key: &str,
    before: &Option<Value>,
    after: &Option<Value>,
    revision: u64,
) -> Option<Change> {
    let key = ObjectKey::from_storage_key(storage_key)?;
    let previous_phase = before
        .as_ref()
        .and_then(|b| object::phase(b))
        .map(str::to_string);
    let (change_type, object) = match (before, after) {
        (None, Some(object)) => (ChangeType::Added, object.clone()),
        (Some(_), Some(object)) => (ChangeType::Modified, object.clone()),
        (Some(last), None) => {
            let mut object = last.clone();
            set_meta(
                &mut object,
                "resourceVersion",
                Value::String(revision.to_string()),
            );
            (ChangeType::Deleted, object)
        }
        (None, None) => return None,
    };
    Some(Change {
        change_type,
        key,
        object,
        previous_phase,
    })
}

/// One key as a transaction sees it.
struct LocalEntry {
    /// The state before this transaction (after the batch's earlier transactions).
    before: Option<Value>,
    /// The state after this transaction's writes; `None` while it only read the key.
    after: Option<Option<Value>>,
}

impl LocalEntry {
    fn current(&self) -> Option<&Value> {
        match &self.after {
            Some(after) => after.as_ref(),
            None => self.before.as_ref(),
        }
    }

    /// Whether `expected` names the resourceVersion as of the start of the transaction or
    /// after its earlier writes: callers only ever saw the former.
    fn resource_version_matches(&self, expected: &str) -> bool {
        expected.is_empty()
            || self
                .current()
                .is_some_and(|c| object::resource_version(c) == expected)
            || self
                .before
                .as_ref()
                .is_some_and(|b| object::resource_version(b) == expected)
    }
}

/// Reads through the transaction's own writes, then the batch's, then the file.
struct TransactionView<'a, 't> {
    objects: &'a redb::Table<'t, &'static str, &'static [u8]>,
    batch: &'a HashMap<String, Touched>,
    local: HashMap<String, LocalEntry>,
}

impl TransactionView<'_, '_> {
    fn entry(&mut self, storage_key: &str) -> Result<&mut LocalEntry, StoreError> {
        if !self.local.contains_key(storage_key) {
            let before = match self.batch.get(storage_key) {
                Some(t) => t.current.clone(),
                None => match self
                    .objects
                    .get(storage_key)
                    .map_err(StoreError::redb("reading an object"))?
                {
                    Some(bytes) => Some(decode(storage_key, bytes.value())?),
                    None => None,
                },
            };
            self.local.insert(
                storage_key.to_string(),
                LocalEntry {
                    before,
                    after: None,
                },
            );
        }
        Ok(self
            .local
            .get_mut(storage_key)
            .expect("entry was just inserted"))
    }
}

fn set_meta(object: &mut Value, field: &str, value: Value) {
    object::metadata_mut(object).insert(field.to_string(), value);
}

fn generated_name(prefix: &str) -> String {
    format!("{prefix}{}", crate::model::names::random_name_suffix())
}

/// Applies one transaction's writes to the view; all-or-nothing because the caller drops the
/// view's local writes on error.
fn apply_transaction(
    transaction: Transaction,
    view: &mut TransactionView<'_, '_>,
    revision: u64,
    now: &str,
) -> Result<Vec<Option<Value>>, StoreError> {
    let rv = revision.to_string();
    let mut results = Vec::with_capacity(transaction.writes.len());
    for write in transaction.writes {
        match write {
            Write::Create(mut obj) => {
                if object::name(&obj).is_empty() {
                    let prefix = object::meta_str(&obj, "generateName").unwrap_or_default();
                    if prefix.is_empty() {
                        return Err(object::invalid(
                            None,
                            "metadata.name",
                            "Required value: name or generateName is required",
                        ));
                    }
                    let name = generated_name(prefix);
                    set_meta(&mut obj, "name", Value::String(name));
                }
                let key = object::key_of(&obj)?;
                let entry = view.entry(&key.storage_key())?;
                if entry.current().is_some() {
                    return Err(StoreError::Transaction(TransactionError::AlreadyExists {
                        key,
                    }));
                }
                let meta = object::metadata_mut(&mut obj);
                if key.kind.namespaced() {
                    meta.insert("namespace".into(), Value::String(key.namespace.clone()));
                }
                meta.insert(
                    "uid".into(),
                    Value::String(uuid::Uuid::new_v4().to_string()),
                );
                meta.insert("creationTimestamp".into(), Value::String(now.to_string()));
                meta.insert("resourceVersion".into(), Value::String(rv.clone()));
                meta.remove("deletionTimestamp");
                if key.kind.has_generation() {
                    meta.insert("generation".into(), Value::from(1));
                } else {
                    meta.remove("generation");
                }
                results.push(Some(obj.clone()));
                entry.after = Some(Some(obj));
            }
            Write::Update(mut obj) => {
                let key = object::key_of(&obj)?;
                let entry = view.entry(&key.storage_key())?;
                let Some(current) = entry.current() else {
                    return Err(StoreError::Transaction(TransactionError::NotFound { key }));
                };
                let expected = object::resource_version(&obj);
                if !entry.resource_version_matches(expected) {
                    return Err(StoreError::Transaction(TransactionError::Conflict {
                        expected: expected.to_string(),
                        actual: object::resource_version(current).to_string(),
                        key,
                    }));
                }
                let empty = serde_json::Map::new();
                let cur_meta = object::metadata(current).unwrap_or(&empty);
                let meta = object::metadata_mut(&mut obj);
                for kept in ["uid", "creationTimestamp", "deletionTimestamp"] {
                    match cur_meta.get(kept) {
                        Some(v) => meta.insert(kept.into(), v.clone()),
                        None => meta.remove(kept),
                    };
                }
                if key.kind.namespaced() {
                    meta.insert("namespace".into(), Value::String(key.namespace.clone()));
                }
                meta.insert(
                    "resourceVersion".into(),
                    Value::String(object::resource_version(current).to_string()),
                );
                if key.kind.has_generation() {
                    let generation = object::generation(current)
                        + i64::from(object::spec_differs(current, &obj));
                    set_meta(&mut obj, "generation", Value::from(generation.max(1)));
                }
                if obj == *current {
                    results.push(Some(obj));
                    continue;
                }
                if object::deletion_timestamp(&obj).is_some() && object::finalizers(&obj).is_empty()
                {
                    results.push(None);
                    entry.after = Some(None);
                    continue;
                }
                set_meta(&mut obj, "resourceVersion", Value::String(rv.clone()));
                results.push(Some(obj.clone()));
                entry.after = Some(Some(obj));
            }
            Write::Delete {
                key,
                resource_version,
            } => {
                let entry = view.entry(&key.storage_key())?;
                let Some(current) = entry.current() else {
                    return Err(StoreError::Transaction(TransactionError::NotFound { key }));
                };
                if let Some(expected) = resource_version
                    && !entry.resource_version_matches(&expected)
                {
                    return Err(StoreError::Transaction(TransactionError::Conflict {
                        actual: object::resource_version(current).to_string(),
                        key,
                        expected,
                    }));
                }
                if object::finalizers(current).is_empty() {
                    results.push(None);
                    entry.after = Some(None);
                } else if object::deletion_timestamp(current).is_some() {
                    results.push(Some(current.clone()));
                } else {
                    let mut deleting = current.clone();
                    set_meta(
                        &mut deleting,
                        "deletionTimestamp",
                        Value::String(now.to_string()),
                    );
                    set_meta(&mut deleting, "resourceVersion", Value::String(rv.clone()));
                    results.push(Some(deleting.clone()));
                    entry.after = Some(Some(deleting));
                }
            }
        }
    }
    Ok(results)
}

// --- snapshots, backups and restores ----------------------------------------------------------
//
// A snapshot is a fresh redb file holding a copy of every table as one read transaction sees
// it. redb's read transactions are MVCC snapshots of one committed state (the writer never
// changes pages a live reader can see), so the copy holds exactly the objects, indexes,
// history and meta (format version, revision, history bounds) of one revision, however much
// the daemon writes meanwhile. The copy is written with the same table definitions, so the
// result is a store file that `Store::open` accepts as it is. Copying the file's bytes while
// the daemon runs would not be consistent: the header and the allocator state change with
// every commit.

/// Every table of the store file. A snapshot refuses a file with other tables (written by a
/// newer release), so that a backup never silently drops data.
const ALL_TABLES: [&str; 8] = [
    "objects",
    "label_index",
    "owner_index",
    "uid_index",
    "flow_index",
    "history",
    "history_by_object",
    "meta",
];

/// Page cache of the databases snapshots read or write (redb's default is 1 GiB).
const SNAPSHOT_CACHE_BYTES: usize = 16 * 1024 * 1024;

/// What a snapshot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// The store format version recorded in the snapshot.
    pub format_version: u64,
    /// The revision (last committed transaction) the snapshot shows.
    pub revision: u64,
    pub objects: u64,
    pub history_entries: u64,
}

/// The result of [`restore_file`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreReport {
    /// The restored store, as it opened (after any format migration).
    pub snapshot: SnapshotInfo,
    /// The number of objects of each kind in the restored store.
    pub counts: Vec<(Kind, u64)>,
    /// Where the replaced store file was kept, when there was one.
    pub previous: Option<PathBuf>,
    /// Why the replaced store could not be opened (it is kept all the same), if it could not.
    pub previous_unreadable: Option<String>,
}

fn copy_table<K: redb::Key + 'static, V: redb::Value + 'static>(
    source: &redb::ReadTransaction,
    target: &redb::WriteTransaction,
    definition: TableDefinition<K, V>,
) -> Result<u64, StoreError> {
    let from = match source.open_table(definition) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(0),
        Err(e) => return Err(StoreError::redb("opening a table to copy")(e)),
    };
    let mut to = target
        .open_table(definition)
        .map_err(StoreError::redb("creating a table of the snapshot"))?;
    let mut copied = 0;
    for entry in from
        .iter()
        .map_err(StoreError::redb("reading a table to copy"))?
    {
        let (key, value) = entry.map_err(StoreError::redb("reading a table to copy"))?;
        to.insert(key.value(), value.value())
            .map_err(StoreError::redb("writing the snapshot"))?;
        copied += 1;
    }
    Ok(copied)
}

/// Copies every table `source` sees into the empty database `target`, in one durable write
/// transaction.
fn copy_snapshot(
    source: &redb::ReadTransaction,
    target: &Database,
) -> Result<SnapshotInfo, StoreError> {
    for table in source
        .list_tables()
        .map_err(StoreError::redb("listing the tables"))?
    {
        if !ALL_TABLES.contains(&table.name()) {
            return Err(StoreError::Encoding(EncodingError::Corrupt {
                record: format!("table {}", table.name()),
                message: "this release does not know the table and cannot copy it (was the file written by a newer release?)".into(),
            }));
        }
    }
    let format_version = read_meta(source, META_FORMAT)?.ok_or_else(|| {
        StoreError::Encoding(EncodingError::Corrupt {
            record: META_FORMAT.into(),
            message: "missing: the file is not an appliance store".into(),
        })
    })?;
    let revision = read_meta(source, META_REVISION)?.unwrap_or(0);
    let mut tx = target
        .begin_write()
        .map_err(StoreError::redb("starting the snapshot transaction"))?;
    tx.set_durability(Durability::Immediate).map_err(|e| {
        StoreError::Transaction(TransactionError::CommitFailed {
            message: format!("setting the durability of the snapshot: {e}"),
        })
    })?;
    let objects = copy_table(source, &tx, OBJECTS)?;
    copy_table(source, &tx, LABEL_INDEX)?;
    copy_table(source, &tx, OWNER_INDEX)?;
    copy_table(source, &tx, UID_INDEX)?;
    copy_table(source, &tx, FLOW_INDEX)?;
    let history_entries = copy_table(source, &tx, HISTORY)?;
    copy_table(source, &tx, HISTORY_BY_OBJECT)?;
    copy_table(source, &tx, META)?;
    tx.commit()
        .map_err(StoreError::redb("committing the snapshot"))?;
    Ok(SnapshotInfo {
        format_version,
        revision,
        objects,
        history_entries,
    })
}

/// Writes a snapshot read by `source` into `file`, which must be empty; the database is closed
/// (and its lock released) when this returns.
fn write_snapshot_file(
    source: &redb::ReadTransaction,
    file: std::fs::File,
) -> Result<SnapshotInfo, StoreError> {
    let backend = redb::backends::FileBackend::new(file)
        .map_err(StoreError::redb("preparing the snapshot file"))?;
    let target = Database::builder()
        .set_cache_size(SNAPSHOT_CACHE_BYTES)
        .create_with_backend(backend)
        .map_err(StoreError::redb("creating the snapshot database"))?;
    let info = copy_snapshot(source, &target)?;
    target
        .close()
        .map_err(StoreError::redb("closing the snapshot database"))?;
    Ok(info)
}

/// Writes a snapshot to `dest` through a private temporary file beside it (mode 0600, synced)
/// that is renamed into place: `dest` is either absent, its old content, or complete.
fn write_snapshot_path(
    source: &redb::ReadTransaction,
    dest: &Path,
) -> Result<SnapshotInfo, StoreError> {
    let io =
        |step: &'static str| move |source| StoreError::Storage(StorageError::Io { step, source });
    let partial = partial_path(dest, "partial");
    let _ = std::fs::remove_file(&partial);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)
        .map_err(io("creating the backup file"))?;
    let result = (|| {
        let sync = file
            .try_clone()
            .map_err(io("opening the backup file for syncing"))?;
        let info = write_snapshot_file(source, file)?;
        sync.sync_all().map_err(io("syncing the backup file"))?;
        std::fs::rename(&partial, dest).map_err(io("renaming the backup file into place"))?;
        sync_parent(dest);
        Ok(info)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result
}

/// `dir/.name.suffix` beside `path`.
fn partial_path(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "store.redb".into());
    path.with_file_name(format!(".{name}.{suffix}"))
}

/// Makes a rename in `path`'s folder durable (best effort: not every file system supports
/// syncing a directory).
fn sync_parent(path: &Path) {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && let Ok(dir) = std::fs::File::open(parent)
    {
        let _ = dir.sync_all();
    }
}

impl Store {
    /// Writes a consistent snapshot of the whole store (objects, indexes, history, meta) into
    /// `file`, which must be empty and open for reading and writing: one read transaction is
    /// copied table by table into a new redb database in the file (see the section comment).
    /// Writes continue meanwhile. Used by the daemon's backup endpoint.
    pub fn write_snapshot(&self, file: std::fs::File) -> Result<SnapshotInfo, StoreError> {
        let tx = self.read()?;
        write_snapshot_file(&tx, file)
    }

    /// [`write_snapshot`](Self::write_snapshot) into the file `dest` (mode 0600), written
    /// beside it and renamed into place once synced.
    pub fn backup_to(&self, dest: &Path) -> Result<SnapshotInfo, StoreError> {
        let tx = self.read()?;
        write_snapshot_path(&tx, dest)
    }
}

enum FileDatabase {
    ReadOnly(redb::ReadOnlyDatabase),
    /// Opened for writing because it needed the repair of an unclean shutdown.
    Repaired(Database),
}

/// A store file opened by a tool while no daemon runs (`backup`, `export`, `doctor`): read
/// only, never migrated. While it is open the daemon cannot open the file (it reports the
/// store as locked), and it cannot be opened while the daemon runs ([`OpenError::Locked`]).
pub struct StoreFile {
    db: FileDatabase,
    path: PathBuf,
    format_version: u64,
}

impl std::fmt::Debug for StoreFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreFile")
            .field("path", &self.path)
            .field("format_version", &self.format_version)
            .finish()
    }
}

impl StoreFile {
    /// Opens a store file read-only and checks its format version. A file left by a crash
    /// (redb needs to repair it) is opened for writing and repaired first, exactly as the
    /// daemon's start would do; nothing else is ever written.
    pub fn open(path: &Path) -> Result<StoreFile, StoreError> {
        StoreFile::open_with(path, true)
    }

    /// [`open`](Self::open) without the repair: a file that needs one is reported as a
    /// [`StorageError::Database`] error whose source is [`redb::Error::RepairAborted`].
    pub fn open_without_repair(path: &Path) -> Result<StoreFile, StoreError> {
        StoreFile::open_with(path, false)
    }

    fn open_with(path: &Path, repair: bool) -> Result<StoreFile, StoreError> {
        let display = path.display().to_string();
        // Checked first: redb reports a missing file as a generic storage error.
        std::fs::metadata(path).map_err(|source| {
            StoreError::Storage(StorageError::Io {
                step: "opening the store file",
                source,
            })
        })?;
        let map_open = |e: redb::DatabaseError, step: &'static str| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Open(OpenError::Locked {
                path: display.clone(),
            }),
            redb::DatabaseError::UpgradeRequired(v) => StoreError::Open(OpenError::FormatVersion {
                path: display.clone(),
                found: v as u32,
                supported: FORMAT_VERSION as u32,
                hint: "the redb file format is older than this binary's; run the release that wrote it to `export` the objects, or restore a `backup` made by this release",
            }),
            e => StoreError::Storage(StorageError::Database {
                step,
                source: e.into(),
            }),
        };
        let mut builder = Database::builder();
        builder.set_cache_size(SNAPSHOT_CACHE_BYTES);
        let db = match builder.open_read_only(path) {
            Ok(db) => FileDatabase::ReadOnly(db),
            Err(redb::DatabaseError::RepairAborted) if repair => FileDatabase::Repaired(
                builder
                    .open(path)
                    .map_err(|e| map_open(e, "repairing the store file"))?,
            ),
            Err(redb::DatabaseError::RepairAborted) => {
                return Err(StoreError::Storage(StorageError::Database {
                    step: "opening the store file read-only (it was not shut down cleanly; the daemon repairs it at its next start)",
                    source: redb::Error::RepairAborted,
                }));
            }
            Err(e) => return Err(map_open(e, "opening the store file read-only")),
        };
        let mut file = StoreFile {
            db,
            path: path.to_path_buf(),
            format_version: 0,
        };
        let tx = file.read()?;
        file.format_version = match read_meta(&tx, META_FORMAT)? {
            None => {
                return Err(StoreError::Encoding(EncodingError::Corrupt {
                    record: format!("{display}: {META_FORMAT}"),
                    message: "missing: the file is not an appliance store".into(),
                }));
            }
            Some(v) if v == FORMAT_VERSION => v,
            Some(v) if v < FORMAT_VERSION => {
                return Err(StoreError::Open(OpenError::FormatVersion {
                    path: display,
                    found: v as u32,
                    supported: FORMAT_VERSION as u32,
                    hint: "the store was written by an older release; the daemon migrates it when it opens it (start it once, or `restore` the file)",
                }));
            }
            Some(v) => {
                return Err(StoreError::Open(OpenError::FormatVersion {
                    path: display,
                    found: v as u32,
                    supported: FORMAT_VERSION as u32,
                    hint: "the store was written by a newer release; upgrade the appliance or restore a backup made by this release",
                }));
            }
        };
        drop(tx);
        Ok(file)
    }

    fn read(&self) -> Result<redb::ReadTransaction, StoreError> {
        match &self.db {
            FileDatabase::ReadOnly(db) => db.begin_read(),
            FileDatabase::Repaired(db) => db.begin_read(),
        }
        .map_err(StoreError::redb("starting a read"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn format_version(&self) -> u64 {
        self.format_version
    }

    /// The revision, the objects and the newest history entry, read in one transaction.
    pub fn read_all(&self) -> Result<StoreContents, StoreError> {
        let tx = self.read()?;
        let revision = read_meta(&tx, META_REVISION)?.unwrap_or(0);
        let table = tx
            .open_table(OBJECTS)
            .map_err(StoreError::redb("opening the objects table"))?;
        let mut objects = Vec::new();
        for entry in table.iter().map_err(StoreError::redb("scanning objects"))? {
            let (key, bytes) = entry.map_err(StoreError::redb("scanning objects"))?;
            objects.push(decode(key.value(), bytes.value())?);
        }
        let history = tx
            .open_table(HISTORY)
            .map_err(StoreError::redb("opening the history"))?;
        let newest_history = match history
            .last()
            .map_err(StoreError::redb("reading the history"))?
        {
            Some((seq, bytes)) => Some(decode_history(seq.value(), bytes.value())?),
            None => None,
        };
        Ok(StoreContents {
            revision,
            objects,
            newest_history,
        })
    }

    /// Writes a consistent snapshot of the file to `dest` (mode 0600), as
    /// [`Store::backup_to`] does for an open store.
    pub fn backup_to(&self, dest: &Path) -> Result<SnapshotInfo, StoreError> {
        let tx = self.read()?;
        write_snapshot_path(&tx, dest)
    }
}

/// Everything [`StoreFile::read_all`] read.
#[derive(Debug, Clone)]
pub struct StoreContents {
    pub revision: u64,
    /// Every object, in storage-key order (kind, namespace, name).
    pub objects: Vec<Value>,
    /// The newest history entry, if any (its `time` is the last time anything changed).
    pub newest_history: Option<HistoryEntry>,
}

/// Replaces the store file `store_path` with the backup `backup`, for a daemon that is not
/// running:
///
/// 1. The current store file, if any, is opened read-only and stays open until the end, so a
///    daemon holding it fails the restore with [`OpenError::Locked`] and a daemon starting
///    meanwhile fails to open it. A current file that cannot be opened (damaged) is replaced
///    all the same.
/// 2. The backup is copied beside the store (`.store.redb.restore`, mode 0600) and opened
///    there with [`Store::open`], exactly as the daemon opens its store: the same format
///    version check and messages (naming `backup`), the same migration of older formats; then
///    every object is decoded.
/// 3. The current file is kept as `<store>.before-restore` (a hard link, replacing an older
///    one), then the checked copy is renamed over the store file: at every moment the store
///    path holds either the old or the new store.
pub fn restore_file(backup: &Path, store_path: &Path) -> Result<RestoreReport, StoreError> {
    let io =
        |step: &'static str| move |source| StoreError::Storage(StorageError::Io { step, source });
    let backup_display = backup.display().to_string();
    let mut previous_unreadable = None;
    let lock = if store_path.exists() {
        match Database::builder()
            .set_cache_size(SNAPSHOT_CACHE_BYTES)
            .open_read_only(store_path)
        {
            Ok(db) => Some(db),
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
                return Err(StoreError::Open(OpenError::Locked {
                    path: store_path.display().to_string(),
                }));
            }
            Err(e) => {
                previous_unreadable = Some(e.to_string());
                None
            }
        }
    } else {
        None
    };
    let staged = partial_path(store_path, "restore");
    let _ = std::fs::remove_file(&staged);
    let mut input = std::fs::File::open(backup).map_err(io("opening the backup file"))?;
    let mut output = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&staged)
        .map_err(io("creating the staged store file"))?;
    let checked = (|| {
        std::io::copy(&mut input, &mut output).map_err(io("copying the backup file"))?;
        output
            .sync_all()
            .map_err(io("syncing the staged store file"))?;
        drop(output);
        let store = Store::open(
            &staged,
            StoreOptions {
                cache_bytes: SNAPSHOT_CACHE_BYTES,
                ..StoreOptions::default()
            },
        )
        .map_err(|e| match e {
            // Name the file the user gave, not the staging copy.
            StoreError::Open(OpenError::FormatVersion {
                found,
                supported,
                hint,
                ..
            }) => StoreError::Open(OpenError::FormatVersion {
                path: backup_display.clone(),
                found,
                supported,
                hint,
            }),
            e => e,
        })?;
        let mut counts = Vec::new();
        let mut objects = 0;
        for kind in Kind::ALL {
            let n = store
                .list(kind, None, &LabelSelector::everything())?
                .items
                .len() as u64;
            objects += n;
            counts.push((kind, n));
        }
        let tx = store.read()?;
        let snapshot = SnapshotInfo {
            format_version: read_meta(&tx, META_FORMAT)?.unwrap_or(FORMAT_VERSION),
            revision: read_meta(&tx, META_REVISION)?.unwrap_or(0),
            objects,
            history_entries: tx
                .open_table(HISTORY)
                .map_err(StoreError::redb("opening the history"))?
                .len()
                .map_err(StoreError::redb("counting the history"))?,
        };
        drop(tx);
        store.shutdown();
        drop(store);
        Ok((snapshot, counts))
    })();
    let (snapshot, counts) = match checked {
        Ok(checked) => checked,
        Err(e) => {
            let _ = std::fs::remove_file(&staged);
            return Err(e);
        }
    };
    let mut previous = None;
    if store_path.exists() {
        let kept = PathBuf::from(format!("{}.before-restore", store_path.display()));
        let _ = std::fs::remove_file(&kept);
        if let Err(e) = std::fs::hard_link(store_path, &kept) {
            let _ = std::fs::remove_file(&staged);
            return Err(io("keeping the current store file")(e));
        }
        previous = Some(kept);
    }
    if let Err(e) = std::fs::rename(&staged, store_path) {
        let _ = std::fs::remove_file(&staged);
        return Err(io("renaming the restored store into place")(e));
    }
    sync_parent(store_path);
    drop(lock);
    Ok(RestoreReport {
        snapshot,
        counts,
        previous,
        previous_unreadable,
    })
}

/// Whether `error` is [`StoreFile::open_without_repair`]'s report of a file that needs the
/// repair of an unclean shutdown.
pub fn needs_repair(error: &StoreError) -> bool {
    matches!(
        error,
        StoreError::Storage(StorageError::Database {
            source: redb::Error::RepairAborted,
            ..
        })
    )
}

/// A consistent read of the store at one revision: every read through it sees the same state,
/// whatever commits meanwhile (the installation controller loads a step's view through one).
#[derive(Clone)]
pub struct StoreSnapshot {
    tx: Arc<redb::ReadTransaction>,
}

impl Store {
    /// A snapshot of the current state.
    pub fn snapshot(&self) -> Result<StoreSnapshot, StoreError> {
        Ok(StoreSnapshot {
            tx: Arc::new(self.read()?),
        })
    }
}

impl StoreSnapshot {
    pub fn get(&self, key: &ObjectKey) -> Result<Option<Value>, StoreError> {
        read_get(&self.tx, key)
    }

    pub fn list(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Result<ObjectList, StoreError> {
        read_list(&self.tx, kind, namespace, selector)
    }

    pub fn children(&self, owner_uid: &str) -> Result<Vec<Value>, StoreError> {
        read_children(&self.tx, owner_uid)
    }

    pub fn installations_by_flow(
        &self,
        namespace: &str,
        parent: Option<&str>,
        flow: FlowRef<'_>,
    ) -> Result<Vec<String>, StoreError> {
        read_installations_by_flow(&self.tx, namespace, parent, flow)
    }
}

fn read_get(tx: &redb::ReadTransaction, key: &ObjectKey) -> Result<Option<Value>, StoreError> {
    let table = match tx.open_table(OBJECTS) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(StoreError::redb("opening the objects table")(e)),
    };
    let storage_key = key.storage_key();
    match table
        .get(storage_key.as_str())
        .map_err(StoreError::redb("reading an object"))?
    {
        Some(bytes) => decode(&storage_key, bytes.value()).map(Some),
        None => Ok(None),
    }
}

fn read_list(
    tx: &redb::ReadTransaction,
    kind: Kind,
    namespace: Option<&str>,
    selector: &LabelSelector,
) -> Result<ObjectList, StoreError> {
    let revision = read_meta(tx, META_REVISION)?.unwrap_or(0);
    let objects = tx
        .open_table(OBJECTS)
        .map_err(StoreError::redb("opening the objects table"))?;
    let mut items = Vec::new();
    if let Some((label, value)) = selector.first_equality() {
        // The index narrows the candidates; the full selector still decides.
        let index = tx
            .open_table(LABEL_INDEX)
            .map_err(StoreError::redb("opening the label index"))?;
        let prefix = label_index_prefix(kind, label, value);
        for entry in index
            .range(prefix.as_str()..)
            .map_err(StoreError::redb("scanning the label index"))?
        {
            let (entry_key, _) = entry.map_err(StoreError::redb("scanning the label index"))?;
            let Some(rest) = entry_key.value().strip_prefix(prefix.as_str()) else {
                break;
            };
            let storage_key = format!("{}/{}", kind.as_str(), rest);
            if let Some(ns) = namespace
                && !rest.starts_with(&format!("{ns}/"))
            {
                continue;
            }
            if let Some(bytes) = objects
                .get(storage_key.as_str())
                .map_err(StoreError::redb("reading an object"))?
            {
                let object = decode(&storage_key, bytes.value())?;
                if selector.matches_object(&object) {
                    items.push(object);
                }
            }
        }
    } else {
        let prefix = ObjectKey::prefix(kind, namespace);
        for entry in objects
            .range(prefix.as_str()..)
            .map_err(StoreError::redb("scanning objects"))?
        {
            let (key, bytes) = entry.map_err(StoreError::redb("scanning objects"))?;
            if !key.value().starts_with(prefix.as_str()) {
                break;
            }
            let object = decode(key.value(), bytes.value())?;
            if selector.matches_object(&object) {
                items.push(object);
            }
        }
    }
    Ok(ObjectList { items, revision })
}

fn read_children(tx: &redb::ReadTransaction, owner_uid: &str) -> Result<Vec<Value>, StoreError> {
    let index = tx
        .open_table(OWNER_INDEX)
        .map_err(StoreError::redb("opening the owner index"))?;
    let objects = tx
        .open_table(OBJECTS)
        .map_err(StoreError::redb("opening the objects table"))?;
    let prefix = format!("{owner_uid}\0");
    let mut items = Vec::new();
    for entry in index
        .range(prefix.as_str()..)
        .map_err(StoreError::redb("scanning the owner index"))?
    {
        let (key, _) = entry.map_err(StoreError::redb("scanning the owner index"))?;
        let Some(storage_key) = key.value().strip_prefix(prefix.as_str()) else {
            break;
        };
        if let Some(bytes) = objects
            .get(storage_key)
            .map_err(StoreError::redb("reading an object"))?
        {
            items.push(decode(storage_key, bytes.value())?);
        }
    }
    Ok(items)
}

fn read_installations_by_flow(
    tx: &redb::ReadTransaction,
    namespace: &str,
    parent: Option<&str>,
    flow: FlowRef<'_>,
) -> Result<Vec<String>, StoreError> {
    let index = tx
        .open_table(FLOW_INDEX)
        .map_err(StoreError::redb("opening the data-flow index"))?;
    let prefix = flow::query_prefix(namespace, parent, flow);
    let mut names = Vec::new();
    for entry in index
        .range(prefix.as_str()..)
        .map_err(StoreError::redb("scanning the data-flow index"))?
    {
        let (key, _) = entry.map_err(StoreError::redb("scanning the data-flow index"))?;
        let Some(name) = key.value().strip_prefix(prefix.as_str()) else {
            break;
        };
        names.push(name.to_string());
    }
    Ok(names)
}
