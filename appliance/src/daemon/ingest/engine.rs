//! The ingest's bookkeeping, and the translation of what a scan saw into store transactions.
//!
//! Synchronous (it reads the store); the ingest runs it on a blocking thread. One scan pass is:
//! [`State::plan`] decides per file what happens and builds one transaction per file, the
//! caller commits them all concurrently (the store's writer group-commits them), and
//! [`State::finish`] records what was committed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::SystemTime;

use landscaper_store::model::constants::{
    ENCOMPASSED_BY_LABEL, OPERATION_ANNOTATION, RECONCILE_REASON_ANNOTATION,
};
use landscaper_store::model::{ManifestFileStatus, ManifestObjectReference};
use landscaper_store::object;
use landscaper_store::{
    Committed, Kind, LabelSelector, ObjectKey, Store, StoreError, Transaction, TransactionError,
};
use serde_json::{Map, Value};

use super::ScanReport;
use super::manifest::{ManifestError, ParsedManifest};
use super::names::{manifest_file_name, manifest_file_name_with};
use super::scan::{FileContent, Found, Walk};

pub(crate) const PHASE_APPLIED: &str = "Applied";
pub(crate) const PHASE_ERROR: &str = "Error";
pub(crate) const PHASE_SKIPPED: &str = "Skipped";

/// A permanent store error on a file's transaction is retried this often before it is recorded
/// as the file's error.
const STORE_FAILURE_LIMIT: u32 = 3;

/// What the ingest knows about the files it has seen, rebuilt from the `ManifestFile` objects
/// at start-up.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub files: BTreeMap<String, FileRecord>,
    /// Which file defines each object (the applied revision's objects).
    pub owners: HashMap<ObjectKey, String>,
    /// `ManifestFile` name → path.
    names: HashMap<String, String>,
    /// Permanent store failures per file: count and message.
    store_failures: HashMap<String, (u32, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileRecord {
    /// Name of the file's `ManifestFile` object.
    pub name: String,
    /// SHA-256 of the last applied (good) revision.
    pub applied_sha: Option<String>,
    /// SHA-256 of the newest content seen, good or bad.
    pub observed_sha: Option<String>,
    /// Objects of the applied revision, in file order.
    pub objects: Vec<ObjectKey>,
    pub skipped: bool,
    /// Why the file is tried again even though its content is unchanged.
    pub retry: Option<Retry>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Retry {
    /// Rejected because another file (or a controller) owns one of its objects.
    Ownership,
    /// Waiting for the deletion of these objects to finish before re-creating them.
    Deleting(Vec<ObjectKey>),
}

/// What to do with one file in this pass.
enum Intent {
    Apply {
        sha: String,
        parsed: ParsedManifest,
        modified: Option<SystemTime>,
    },
    Fail {
        sha: Option<String>,
        error: ManifestError,
        retry: Option<Retry>,
    },
    Skip,
    Remove,
}

/// What a file's transaction does, for the report and the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    Apply,
    Fail,
    Skip,
    Remove,
}

/// One file's planned change: a transaction and the record it leaves when committed.
pub(crate) struct FilePlan {
    pub rel: String,
    pub action: Action,
    pub transaction: Transaction,
    /// The file's record after the commit; `None` when the file is gone.
    record: Option<FileRecord>,
    /// Objects the file no longer defines (the ownership map forgets them on commit).
    releases: Vec<ObjectKey>,
    /// Objects the file defines after the commit.
    claims: Vec<ObjectKey>,
    created: usize,
    updated: usize,
    deleted: usize,
    error: Option<ManifestError>,
    warnings: Vec<String>,
    /// Nothing to write: the store already matches.
    noop: bool,
    /// What it takes to plan this file again after a conflict, without rereading the folder.
    redo: Option<Redo>,
}

/// The input of a file's plan, kept for a quick retry after a conflict.
pub(crate) enum Redo {
    File(Found, FileContent),
    Removed(String),
}

/// What a pass left to do.
#[derive(Default)]
pub(crate) struct PassOutcome {
    /// Files whose transaction failed in a way that another pass may fix (conflicts).
    pub retry: Vec<String>,
    /// How to plan exactly those files again; `None` if that takes a full pass.
    pub redo: Option<Vec<Redo>>,
}

impl State {
    /// Rebuilds the state from the `ManifestFile` objects in the store.
    pub fn load(store: &Store) -> Result<State, StoreError> {
        let list = store.list(Kind::ManifestFile, None, &LabelSelector::everything())?;
        let mut state = State::default();
        for mf in list.items {
            let name = object::name(&mf).to_string();
            let Some(path) = mf
                .pointer("/spec/path")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
            else {
                tracing::warn!(manifestfile = %name, "ManifestFile without spec.path ignored");
                continue;
            };
            let status = read_status(Some(&mf));
            let objects: Vec<ObjectKey> = status
                .objects
                .iter()
                .flatten()
                .filter_map(reference_key)
                .collect();
            for key in &objects {
                if let Some(other) = state.owners.get(key) {
                    tracing::warn!(%key, file = path, other = %other, "object recorded for two files; the first keeps it");
                } else {
                    state.owners.insert(key.clone(), path.to_string());
                }
            }
            let failed = status.phase.as_deref() == Some(PHASE_ERROR)
                || (status.phase.is_none() && status.last_error.is_some());
            let record = FileRecord {
                name: name.clone(),
                applied_sha: status.sha256.clone(),
                observed_sha: status.observed_sha256.clone().or(status.sha256.clone()),
                objects,
                skipped: status.skipped == Some(true),
                // Why it failed is not recorded; trying again when ownership changes is cheap.
                retry: failed.then_some(Retry::Ownership),
            };
            state.names.insert(name, path.to_string());
            state.files.insert(path.to_string(), record);
        }
        Ok(state)
    }

    /// Whether a file must be parsed although it may be unchanged.
    pub fn must_parse(&self, rel: &str, sha: &str) -> bool {
        match self.files.get(rel) {
            None => true,
            Some(r) => r.retry.is_some() || r.skipped || r.observed_sha.as_deref() != Some(sha),
        }
    }

    /// Objects whose deletion some file waits for.
    pub fn awaited_deletions(&self) -> HashSet<ObjectKey> {
        self.files
            .values()
            .filter_map(|r| match &r.retry {
                Some(Retry::Deleting(keys)) => Some(keys.iter().cloned()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    fn name_for(&mut self, rel: &str) -> String {
        if let Some(record) = self.files.get(rel) {
            return record.name.clone();
        }
        let mut name = manifest_file_name(rel);
        if self.names.get(&name).is_some_and(|p| p != rel) {
            name = manifest_file_name_with(rel, 16);
        }
        self.names.insert(name.clone(), rel.to_string());
        name
    }

    /// Decides what happens to every file and builds the transactions. `removed` is `None`
    /// for a full scan (every known file the walk did not find is gone); a retry of a few
    /// files passes just those files and the ones among them that are gone.
    pub fn plan(
        &mut self,
        store: &Store,
        walk: &Walk,
        contents: Vec<FileContent>,
        removed: Option<&[String]>,
        now: &str,
    ) -> Result<Vec<FilePlan>, StoreError> {
        let founds: HashMap<&str, &Found> =
            walk.files.iter().map(|f| (f.rel.as_str(), f)).collect();
        let mut intents: BTreeMap<String, Intent> = BTreeMap::new();
        let mut present: HashSet<&str> = HashSet::new();
        for (found, content) in walk.files.iter().zip(contents) {
            let rel = found.rel.as_str();
            if found.skipped {
                present.insert(rel);
                let done = self
                    .files
                    .get(rel)
                    .is_some_and(|r| r.skipped && r.objects.is_empty());
                if !done {
                    intents.insert(rel.to_string(), Intent::Skip);
                }
                continue;
            }
            match content {
                FileContent::Gone => {}
                FileContent::NotRead => {
                    present.insert(rel);
                }
                FileContent::Failed(message) => {
                    present.insert(rel);
                    let error =
                        ManifestError::file(rel, format!("reading the file failed: {message}"));
                    intents.insert(
                        rel.to_string(),
                        Intent::Fail {
                            sha: None,
                            error,
                            retry: None,
                        },
                    );
                }
                FileContent::Read { parsed: None, .. } => {
                    present.insert(rel);
                }
                FileContent::Read {
                    sha256,
                    parsed: Some(Err(error)),
                } => {
                    present.insert(rel);
                    intents.insert(
                        rel.to_string(),
                        Intent::Fail {
                            sha: Some(sha256),
                            error,
                            retry: None,
                        },
                    );
                }
                FileContent::Read {
                    sha256,
                    parsed: Some(Ok(parsed)),
                } => {
                    present.insert(rel);
                    let intent = match self.store_failures.get(rel) {
                        Some((count, message)) if *count >= STORE_FAILURE_LIMIT => Intent::Fail {
                            sha: Some(sha256),
                            error: ManifestError::file(
                                rel,
                                format!("storing the objects failed: {message}"),
                            ),
                            retry: None,
                        },
                        _ => Intent::Apply {
                            sha: sha256,
                            parsed,
                            modified: found.modified,
                        },
                    };
                    intents.insert(rel.to_string(), intent);
                }
            }
        }
        match removed {
            None => {
                for rel in self.files.keys() {
                    if !present.contains(rel.as_str()) && !walk.is_unreadable(rel) {
                        intents.insert(rel.clone(), Intent::Remove);
                    }
                }
            }
            Some(removed) => {
                for rel in removed.iter().filter(|rel| self.files.contains_key(*rel)) {
                    intents.insert(rel.clone(), Intent::Remove);
                }
            }
        }

        // Ownership, tentatively for this pass: removed and skipped files let go of everything.
        let mut owners = self.owners.clone();
        let mut released: HashMap<ObjectKey, String> = HashMap::new();
        for (rel, intent) in &intents {
            if matches!(intent, Intent::Remove | Intent::Skip) {
                for key in self
                    .files
                    .get(rel)
                    .map(|r| r.objects.as_slice())
                    .unwrap_or_default()
                {
                    if owners.get(key) == Some(rel) {
                        owners.remove(key);
                        released.insert(key.clone(), rel.clone());
                    }
                }
            }
        }

        // The stored objects a good file defines, and the objects it may not take over.
        let mut stored: HashMap<String, Vec<Option<Value>>> = HashMap::new();
        let rels: Vec<String> = intents.keys().cloned().collect();
        for rel in &rels {
            let Some(Intent::Apply { parsed, sha, .. }) = intents.get(rel) else {
                continue;
            };
            let mut current = Vec::with_capacity(parsed.objects.len());
            let mut deleting = Vec::new();
            let mut rejection = None;
            for obj in &parsed.objects {
                let found = store.get(&obj.key)?;
                if let Some(existing) = &found {
                    let ours = self.owners.get(&obj.key) == Some(rel);
                    if object::deletion_timestamp(existing).is_some() {
                        deleting.push(obj.key.clone());
                    } else if !ours
                        && rejection.is_none()
                        && let Some(by) = controlled_by(existing)
                    {
                        rejection = Some(object_error(
                            rel,
                            obj,
                            format!(
                                "{} exists and is managed by a controller ({by}); a manifest file cannot define it",
                                obj.key
                            ),
                        ));
                    }
                }
                current.push(found);
            }
            let sha = Some(sha.clone());
            if let Some(error) = rejection {
                intents.insert(
                    rel.clone(),
                    Intent::Fail {
                        sha,
                        error,
                        retry: Some(Retry::Ownership),
                    },
                );
            } else if let Some(first) = deleting.first() {
                let obj = parsed
                    .objects
                    .iter()
                    .find(|o| &o.key == first)
                    .expect("key from this file");
                let error = object_error(
                    rel,
                    obj,
                    format!(
                        "{first} is still being deleted; the file is applied once the deletion has finished"
                    ),
                );
                intents.insert(
                    rel.clone(),
                    Intent::Fail {
                        sha,
                        error,
                        retry: Some(Retry::Deleting(deleting)),
                    },
                );
            } else {
                stored.insert(rel.clone(), current);
            }
        }

        // Claims, in rounds: a file is accepted when none of its objects belongs to another
        // file; accepting it releases what it dropped, which may let a waiting file in (an
        // object moved from one file to another in one go is handed over, never deleted).
        let mut pending: Vec<(bool, Option<SystemTime>, String)> = intents
            .iter()
            .filter_map(|(rel, intent)| match intent {
                Intent::Apply { modified, .. } => {
                    Some((!self.files.contains_key(rel), *modified, rel.clone()))
                }
                _ => None,
            })
            .collect();
        pending.sort();
        let mut conflicts: HashMap<String, (usize, String)> = HashMap::new();
        loop {
            let mut progress = false;
            let mut still = Vec::new();
            for entry in pending {
                let rel = &entry.2;
                let Some(Intent::Apply { parsed, .. }) = intents.get(rel) else {
                    continue;
                };
                let conflict = parsed.objects.iter().enumerate().find_map(|(i, o)| {
                    owners
                        .get(&o.key)
                        .filter(|owner| *owner != rel)
                        .map(|owner| (i, owner.clone()))
                });
                if let Some(conflict) = conflict {
                    conflicts.insert(rel.clone(), conflict);
                    still.push(entry);
                    continue;
                }
                conflicts.remove(rel);
                let keys: HashSet<&ObjectKey> = parsed.objects.iter().map(|o| &o.key).collect();
                for key in self
                    .files
                    .get(rel)
                    .map(|r| r.objects.as_slice())
                    .unwrap_or_default()
                {
                    if !keys.contains(key) && owners.get(key) == Some(rel) {
                        owners.remove(key);
                        released.insert(key.clone(), rel.clone());
                    }
                }
                for key in keys {
                    owners.insert(key.clone(), rel.clone());
                }
                progress = true;
            }
            pending = still;
            if !progress || pending.is_empty() {
                break;
            }
        }
        for (_, _, rel) in pending {
            let (index, owner) = conflicts
                .remove(&rel)
                .expect("a pending file has a conflict");
            let Some(Intent::Apply { parsed, sha, .. }) = intents.remove(&rel) else {
                continue;
            };
            let obj = &parsed.objects[index];
            let error = object_error(
                &rel,
                obj,
                format!(
                    "{} is already defined in {owner}; an object can be defined in one file only (this file is ignored until {owner} no longer defines it)",
                    obj.key
                ),
            );
            intents.insert(
                rel,
                Intent::Fail {
                    sha: Some(sha),
                    error,
                    retry: Some(Retry::Ownership),
                },
            );
        }

        // Objects let go of and taken by no other file are deleted by the file that had them.
        let deletions_of = |rel: &str, keys: &[ObjectKey]| -> Vec<ObjectKey> {
            keys.iter()
                .filter(|k| released.get(*k).is_some_and(|r| r == rel) && !owners.contains_key(*k))
                .cloned()
                .collect()
        };

        let mut plans = Vec::new();
        for (rel, intent) in intents {
            let name = self.name_for(&rel);
            let old = self.files.get(&rel).cloned();
            let old_objects = old.as_ref().map(|r| r.objects.clone()).unwrap_or_default();
            let mf_key = ObjectKey::new(Kind::ManifestFile, "", name.clone());
            let current_mf = store.get(&mf_key)?;
            let previous = read_status(current_mf.as_ref());
            let mut transaction = Transaction::new();
            let plan = match intent {
                Intent::Apply { sha, parsed, .. } => {
                    let new_revision =
                        old.as_ref().and_then(|r| r.applied_sha.as_deref()) != Some(sha.as_str());
                    let (mut created, mut updated) = (0, 0);
                    let current = stored.remove(&rel).unwrap_or_default();
                    let mut taken_over = Vec::new();
                    for (obj, existing) in parsed.objects.iter().zip(current) {
                        match existing {
                            None => {
                                transaction = transaction.create(obj.object.clone());
                                created += 1;
                            }
                            Some(existing) => {
                                // No file defined it and no controller made it: the API did.
                                if !self.owners.contains_key(&obj.key)
                                    && controlled_by(&existing).is_none()
                                {
                                    tracing::info!(file = %rel, object = %obj.key, "the manifest file takes over an object created through the API");
                                    taken_over.push(reference(&obj.key));
                                }
                                let desired = merge(&existing, &obj.object, new_revision);
                                if desired != existing {
                                    transaction = transaction.update(desired);
                                    updated += 1;
                                }
                            }
                        }
                    }
                    let keys: Vec<ObjectKey> =
                        parsed.objects.iter().map(|o| o.key.clone()).collect();
                    let kept: HashSet<&ObjectKey> = keys.iter().collect();
                    let dropped: Vec<ObjectKey> = old_objects
                        .iter()
                        .filter(|k| !kept.contains(k))
                        .cloned()
                        .collect();
                    let releases: Vec<ObjectKey> = dropped
                        .iter()
                        .filter(|k| self.owners.get(*k) == Some(&rel))
                        .cloned()
                        .collect();
                    let (transaction, deleted) =
                        add_deletions(store, transaction, &deletions_of(&rel, &dropped))?;
                    let warnings: Vec<String> =
                        parsed.warnings.iter().map(|w| w.to_string()).collect();
                    let status = ManifestFileStatus {
                        sha256: Some(sha.clone()),
                        observed_sha256: Some(sha.clone()),
                        objects: Some(parsed.objects.iter().map(|o| reference(&o.key)).collect()),
                        last_error: None,
                        observed_time: observed_time(&previous, Some(&sha), now),
                        skipped: None,
                        warnings: (!warnings.is_empty()).then(|| warnings.clone()),
                        phase: Some(PHASE_APPLIED.into()),
                        taken_over: (!taken_over.is_empty()).then_some(taken_over),
                    };
                    let transaction = with_manifest(transaction, current_mf, &name, &rel, status);
                    FilePlan {
                        rel: rel.clone(),
                        action: Action::Apply,
                        transaction,
                        record: Some(FileRecord {
                            name,
                            applied_sha: Some(sha.clone()),
                            observed_sha: Some(sha.clone()),
                            objects: keys.clone(),
                            skipped: false,
                            retry: None,
                        }),
                        releases,
                        claims: keys,
                        created,
                        updated,
                        deleted,
                        error: None,
                        warnings,
                        noop: false,
                        redo: founds.get(rel.as_str()).map(|found| {
                            let content = FileContent::Read {
                                sha256: sha,
                                parsed: Some(Ok(parsed)),
                            };
                            Redo::File((*found).clone(), content)
                        }),
                    }
                }
                Intent::Fail { sha, error, retry } => {
                    let observed = sha.clone().or(previous.observed_sha256.clone());
                    let status = ManifestFileStatus {
                        last_error: Some(error.to_status()),
                        observed_time: observed_time(&previous, observed.as_deref(), now),
                        observed_sha256: observed.clone(),
                        skipped: None,
                        phase: Some(PHASE_ERROR.into()),
                        taken_over: None,
                        ..previous.clone()
                    };
                    let transaction = with_manifest(transaction, current_mf, &name, &rel, status);
                    FilePlan {
                        rel: rel.clone(),
                        action: Action::Fail,
                        transaction,
                        record: Some(FileRecord {
                            name,
                            applied_sha: old.as_ref().and_then(|r| r.applied_sha.clone()),
                            observed_sha: observed,
                            objects: old_objects.clone(),
                            skipped: old.as_ref().is_some_and(|r| r.skipped),
                            retry,
                        }),
                        releases: Vec::new(),
                        claims: old_objects,
                        created: 0,
                        updated: 0,
                        deleted: 0,
                        error: Some(error),
                        warnings: Vec::new(),
                        noop: false,
                        redo: None,
                    }
                }
                Intent::Skip => {
                    let (transaction, deleted) =
                        add_deletions(store, transaction, &deletions_of(&rel, &old_objects))?;
                    let status = ManifestFileStatus {
                        sha256: None,
                        objects: Some(Vec::new()),
                        last_error: None,
                        observed_time: previous.observed_time.clone().or(Some(now.to_string())),
                        skipped: Some(true),
                        warnings: None,
                        observed_sha256: None,
                        phase: Some(PHASE_SKIPPED.into()),
                        taken_over: None,
                    };
                    let transaction = with_manifest(transaction, current_mf, &name, &rel, status);
                    FilePlan {
                        rel: rel.clone(),
                        action: Action::Skip,
                        transaction,
                        record: Some(FileRecord {
                            name,
                            applied_sha: None,
                            observed_sha: None,
                            objects: Vec::new(),
                            skipped: true,
                            retry: None,
                        }),
                        releases: old_objects,
                        claims: Vec::new(),
                        created: 0,
                        updated: 0,
                        deleted,
                        error: None,
                        warnings: Vec::new(),
                        noop: false,
                        redo: founds
                            .get(rel.as_str())
                            .map(|found| Redo::File((*found).clone(), FileContent::NotRead)),
                    }
                }
                Intent::Remove => {
                    let (mut transaction, deleted) =
                        add_deletions(store, transaction, &deletions_of(&rel, &old_objects))?;
                    if let Some(mf) = &current_mf {
                        transaction = transaction
                            .delete(mf_key, Some(object::resource_version(mf).to_string()));
                    }
                    FilePlan {
                        rel: rel.clone(),
                        action: Action::Remove,
                        transaction,
                        record: None,
                        releases: old_objects,
                        claims: Vec::new(),
                        created: 0,
                        updated: 0,
                        deleted,
                        error: None,
                        warnings: Vec::new(),
                        noop: false,
                        redo: Some(Redo::Removed(rel.clone())),
                    }
                }
            };
            let noop = plan.transaction.writes.is_empty();
            plans.push(FilePlan { noop, ..plan });
        }
        Ok(plans)
    }

    /// Records the outcome of the pass's commits (`results` in the order of `plans`).
    pub fn finish(
        &mut self,
        plans: Vec<FilePlan>,
        results: Vec<Result<Committed, StoreError>>,
        report: &mut ScanReport,
    ) -> Result<PassOutcome, StoreError> {
        let mut outcome = PassOutcome {
            retry: Vec::new(),
            redo: Some(Vec::new()),
        };
        let mut full = false;
        let mut committed = Vec::new();
        for (plan, result) in plans.into_iter().zip(results) {
            match result {
                Ok(_) => committed.push(plan),
                Err(StoreError::Transaction(TransactionError::Closed)) => {
                    return Err(StoreError::Transaction(TransactionError::Closed));
                }
                Err(e) => {
                    let permanent = !e.is_retryable()
                        && !matches!(
                            e,
                            StoreError::Transaction(TransactionError::AlreadyExists { .. })
                                | StoreError::Transaction(TransactionError::NotFound { .. })
                        );
                    if permanent {
                        let entry = self
                            .store_failures
                            .entry(plan.rel.clone())
                            .or_insert((0, String::new()));
                        entry.0 += 1;
                        entry.1 = e.to_string();
                        tracing::error!(file = %plan.rel, error = %e, "storing the file's objects failed");
                    } else {
                        tracing::debug!(file = %plan.rel, error = %e, "the file's objects changed meanwhile; trying again");
                    }
                    // The file's state is unchanged, so the next pass or scan sees it as new.
                    outcome.retry.push(plan.rel.clone());
                    match (plan.redo, &mut outcome.redo) {
                        (Some(redo), Some(list)) => list.push(redo),
                        _ => full = true,
                    }
                }
            }
        }
        if full {
            outcome.redo = None;
        }
        // Releases before claims: an object handed from one file to another ends up owned.
        for plan in &committed {
            for key in &plan.releases {
                if self.owners.get(key) == Some(&plan.rel) {
                    self.owners.remove(key);
                }
            }
        }
        for plan in committed {
            for key in &plan.claims {
                self.owners.insert(key.clone(), plan.rel.clone());
            }
            if plan.action != Action::Fail {
                self.store_failures.remove(&plan.rel);
            }
            log_and_count(&plan, report);
            match plan.record {
                Some(record) => {
                    self.names.insert(record.name.clone(), plan.rel.clone());
                    self.files.insert(plan.rel, record);
                }
                None => {
                    if let Some(old) = self.files.remove(&plan.rel) {
                        self.names.remove(&old.name);
                    }
                }
            }
        }
        Ok(outcome)
    }
}

fn log_and_count(plan: &FilePlan, report: &mut ScanReport) {
    if plan.noop {
        // A file looked at again (e.g. waiting for another file) with the same result.
        if let Some(error) = &plan.error {
            tracing::debug!(file = %plan.rel, "manifest file still rejected: {error}");
            report.errors.push(error.clone());
        }
        return;
    }
    report.objects_created += plan.created;
    report.objects_updated += plan.updated;
    report.objects_deleted += plan.deleted;
    report.warnings.extend(plan.warnings.iter().cloned());
    match plan.action {
        Action::Apply => {
            report.applied += 1;
            for warning in &plan.warnings {
                tracing::warn!(file = %plan.rel, "{warning}");
            }
            tracing::info!(
                file = %plan.rel,
                created = plan.created,
                updated = plan.updated,
                deleted = plan.deleted,
                "manifest file applied"
            );
        }
        Action::Fail => {
            report.failed += 1;
            if let Some(error) = &plan.error {
                tracing::warn!(
                    file = %plan.rel,
                    document = error.document,
                    line = error.line,
                    column = error.column,
                    "manifest file rejected, its objects are left as they were: {error}"
                );
                report.errors.push(error.clone());
            }
        }
        Action::Skip => {
            report.skipped += 1;
            tracing::info!(file = %plan.rel, deleted = plan.deleted, "manifest file skipped (.skip marker)");
        }
        Action::Remove => {
            report.removed += 1;
            tracing::info!(file = %plan.rel, deleted = plan.deleted, "manifest file removed");
        }
    }
}

/// An error pointing at the document that defines `obj`.
fn object_error(
    rel: &str,
    obj: &super::manifest::ManifestObject,
    message: String,
) -> ManifestError {
    ManifestError {
        path: rel.to_string(),
        document: Some(obj.document),
        line: Some(obj.line),
        column: Some(1),
        field: None,
        message,
    }
}

/// Why an object belongs to a controller rather than to a file, if it does.
pub(crate) fn controlled_by(existing: &Value) -> Option<String> {
    if let Some(owner) = object::metadata(existing)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .and_then(|refs| refs.first())
    {
        let kind = owner
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("object");
        let name = owner
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Some(format!("owned by {kind} {name}"));
    }
    object::labels(existing)
        .get(ENCOMPASSED_BY_LABEL)
        .map(|parent| format!("label {ENCOMPASSED_BY_LABEL}={parent}"))
}

fn add_deletions(
    store: &Store,
    mut transaction: Transaction,
    keys: &[ObjectKey],
) -> Result<(Transaction, usize), StoreError> {
    let mut deleted = 0;
    for key in keys {
        // An object already being deleted needs nothing more; the controller finishes it.
        if let Some(existing) = store.get(key)?
            && object::deletion_timestamp(&existing).is_none()
        {
            transaction = transaction.delete(
                key.clone(),
                Some(object::resource_version(&existing).to_string()),
            );
            deleted += 1;
        }
    }
    Ok((transaction, deleted))
}

/// The stored object updated to a file's version: content, labels and annotations from the
/// file; status, finalizers, owner references and server fields from the store.
///
/// Annotations that request an operation (`landscaper.gardener.cloud/operation`, with its
/// `reconcile-reason`) are requests, not state: a new file revision that carries one makes it
/// again (like `kubectl apply`), and anything else leaves the stored request as it is, so
/// that a file edit neither repeats a consumed request nor cancels a pending one.
pub(crate) fn merge(stored: &Value, file: &Value, new_revision: bool) -> Value {
    let mut out = Map::new();
    if let Some(map) = file.as_object() {
        for (k, v) in map {
            if k != "metadata" && k != "status" {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(status) = stored.get("status") {
        out.insert("status".into(), status.clone());
    }
    let mut meta = object::metadata(stored).cloned().unwrap_or_default();
    let file_meta = object::metadata(file).cloned().unwrap_or_default();
    match file_meta.get("labels") {
        Some(labels) if labels.as_object().is_some_and(|l| !l.is_empty()) => {
            meta.insert("labels".into(), labels.clone());
        }
        _ => {
            meta.remove("labels");
        }
    }
    let mut annotations = file_meta
        .get("annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let requested = new_revision && annotations.contains_key(OPERATION_ANNOTATION);
    if !requested {
        let current = object::metadata(stored)
            .and_then(|m| m.get("annotations"))
            .and_then(Value::as_object);
        for key in [OPERATION_ANNOTATION, RECONCILE_REASON_ANNOTATION] {
            match current.and_then(|c| c.get(key)) {
                Some(v) => annotations.insert(key.into(), v.clone()),
                None => annotations.remove(key),
            };
        }
    }
    if annotations.is_empty() {
        meta.remove("annotations");
    } else {
        meta.insert("annotations".into(), Value::Object(annotations));
    }
    out.insert("metadata".into(), Value::Object(meta));
    Value::Object(out)
}

fn reference(key: &ObjectKey) -> ManifestObjectReference {
    ManifestObjectReference {
        api_version: key.kind.api_version().to_string(),
        kind: key.kind.as_str().to_string(),
        namespace: (!key.namespace.is_empty()).then(|| key.namespace.clone()),
        name: key.name.clone(),
    }
}

fn reference_key(r: &ManifestObjectReference) -> Option<ObjectKey> {
    let kind = Kind::from_type_meta(&r.api_version, &r.kind)?;
    Some(ObjectKey::new(
        kind,
        r.namespace.clone().unwrap_or_default(),
        r.name.clone(),
    ))
}

fn read_status(mf: Option<&Value>) -> ManifestFileStatus {
    mf.and_then(|mf| mf.get("status"))
        .and_then(|s| serde_json::from_value(s.clone()).ok())
        .unwrap_or_default()
}

/// When the current content was first read: now for new content, else unchanged.
fn observed_time(previous: &ManifestFileStatus, sha: Option<&str>, now: &str) -> Option<String> {
    if sha.is_some()
        && previous.observed_sha256.as_deref() == sha
        && previous.observed_time.is_some()
    {
        previous.observed_time.clone()
    } else {
        Some(now.to_string())
    }
}

/// Adds the write that makes the file's `ManifestFile` look as described, if it differs.
fn with_manifest(
    transaction: Transaction,
    current: Option<Value>,
    name: &str,
    rel: &str,
    status: ManifestFileStatus,
) -> Transaction {
    let status = serde_json::to_value(&status).expect("the status serialises");
    match current {
        None => transaction.create(serde_json::json!({
            "apiVersion": Kind::ManifestFile.api_version(),
            "kind": Kind::ManifestFile.as_str(),
            "metadata": {"name": name},
            "spec": {"path": rel},
            "status": status,
        })),
        Some(current) => {
            let mut desired = current.clone();
            if let Some(map) = desired.as_object_mut() {
                map.insert("spec".into(), serde_json::json!({"path": rel}));
                map.insert("status".into(), status);
            }
            if desired == current {
                transaction
            } else {
                transaction.update(desired)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_keeps_server_state_and_takes_content_from_the_file() {
        let stored = json!({
            "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
            "metadata": {"name": "a", "namespace": "default", "uid": "u", "resourceVersion": "5",
                "generation": 2, "finalizers": ["f"], "labels": {"old": "x"},
                "annotations": {"keep-me-not": "1", "landscaper.gardener.cloud/operation": "reconcile"}},
            "spec": {"x": 1, "gone": true},
            "status": {"phase": "Succeeded"}
        });
        let file = json!({
            "apiVersion": "landscaper.gardener.cloud/v1alpha1", "kind": "Installation",
            "metadata": {"name": "a", "namespace": "default", "labels": {"new": "y"}},
            "spec": {"x": 2}
        });
        let merged = merge(&stored, &file, true);
        assert_eq!(merged["spec"], json!({"x": 2}));
        assert_eq!(merged["status"], json!({"phase": "Succeeded"}));
        assert_eq!(merged["metadata"]["uid"], "u");
        assert_eq!(merged["metadata"]["resourceVersion"], "5");
        assert_eq!(merged["metadata"]["finalizers"], json!(["f"]));
        assert_eq!(merged["metadata"]["labels"], json!({"new": "y"}));
        // A pending operation request survives a file edit that does not make one.
        assert_eq!(
            merged["metadata"]["annotations"],
            json!({"landscaper.gardener.cloud/operation": "reconcile"})
        );
    }

    #[test]
    fn operation_annotation_is_requested_only_by_new_revisions() {
        let stored = json!({"metadata": {"name": "a", "annotations": {"x": "1"}}, "spec": {}});
        let file = json!({"metadata": {"name": "a", "annotations": {"x": "1",
            "landscaper.gardener.cloud/operation": "reconcile"}}, "spec": {}});
        let again = merge(&stored, &file, true);
        assert_eq!(
            again["metadata"]["annotations"]["landscaper.gardener.cloud/operation"],
            "reconcile"
        );
        let same = merge(&stored, &file, false);
        assert_eq!(same, stored);
    }
}
