//! `TransportArchive` objects (issue 18): the ingest's record of the OCM transport archives
//! (CTF or component archives, as directories, `.tar` or `.tgz`) found in the manifests folder,
//! with what they hold or why they cannot be used. One object per archive, named like the
//! `ManifestFile` of the same path; deleted when the archive leaves the folder. An archive is
//! read again only when it changes (file size and modification times).

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use landscaper_components::files::AnyArchive;
use landscaper_store::clock::format_time;
use landscaper_store::model::{
    ArchivedComponentVersion, TRANSPORT_ARCHIVE_FAILED, TRANSPORT_ARCHIVE_READY,
    TransportArchiveStatus,
};
use landscaper_store::{Kind, LabelSelector, ObjectKey, Store, Transaction, object};
use serde_json::{Value, json};

use super::names::manifest_file_name;

/// What identifies an archive's state: modification time and size of the path and of the
/// index files of a directory archive (rewritten in place, they do not change its mtime).
type Stamp = Vec<(Option<SystemTime>, u64)>;

fn stamp(path: &Path) -> Stamp {
    let one = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| (m.modified().ok(), m.len()))
            .unwrap_or((None, 0))
    };
    let mut s = vec![one(path)];
    if path.is_dir() {
        for index in ["artifact-index.json", "component-descriptor.yaml"] {
            s.push(one(&path.join(index)));
        }
    }
    s
}

/// Writes the `TransportArchive` objects of the archives found by a scan.
pub struct ArchiveRecorder {
    store: Store,
    root: PathBuf,
    /// Per archive: the stamp it was read at and what was read (`None`: not a transport
    /// archive, e.g. a chart `.tgz`).
    read: Mutex<HashMap<PathBuf, (Stamp, Option<TransportArchiveStatus>)>>,
}

impl ArchiveRecorder {
    pub fn new(store: Store, root: PathBuf) -> ArchiveRecorder {
        ArchiveRecorder {
            store,
            root,
            read: Mutex::new(HashMap::new()),
        }
    }

    /// Brings the `TransportArchive` objects in line with `archives` (absolute paths below
    /// the manifests folder, as the scan found them). Blocking; failures are logged and
    /// retried by the next scan.
    pub fn record(&self, archives: &[PathBuf]) {
        let mut desired = BTreeMap::new();
        {
            let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
            read.retain(|path, _| archives.contains(path));
            for path in archives {
                let s = stamp(path);
                let status = match read.get(path) {
                    Some((old, status)) if *old == s => status.clone(),
                    _ => {
                        let status = read_archive(path);
                        read.insert(path.clone(), (s, status.clone()));
                        status
                    }
                };
                let Some(status) = status else { continue };
                let rel = relative(&self.root, path);
                desired.insert(manifest_file_name(&rel), (rel, status));
            }
        }
        let current =
            match self
                .store
                .list(Kind::TransportArchive, None, &LabelSelector::everything())
            {
                Ok(list) => list.items,
                Err(e) => {
                    tracing::warn!(error = %e, "transport archives not recorded");
                    return;
                }
            };
        let now = format_time(jiff::Timestamp::now());
        let transaction = plan(&current, desired, &now);
        if transaction.writes.is_empty() {
            return;
        }
        if let Err(e) = self.store.commit_blocking(transaction) {
            tracing::warn!(error = %e, "transport archives not recorded; trying again at the next scan");
        }
    }
}

/// `path` relative to `root`, `/`-separated.
fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// What `path` holds, without `observedTime`; `None` when it is a readable file or directory
/// that is no transport archive (a chart `.tgz` beside the manifests).
pub fn read_archive(path: &Path) -> Option<TransportArchiveStatus> {
    let (format, size) = format_and_size(path);
    let mut status = TransportArchiveStatus {
        format: Some(format.to_string()),
        size: Some(size),
        ..TransportArchiveStatus::default()
    };
    let opened = AnyArchive::detect(path).and_then(|archive| {
        archive
            .map(|a| {
                let ty = match &a {
                    AnyArchive::Ctf(_) => "CommonTransportFormat",
                    AnyArchive::ComponentArchive(_) => "ComponentArchive",
                };
                a.describe().map(|entries| (ty, entries))
            })
            .transpose()
    });
    match opened {
        Ok(None) => return None,
        Ok(Some((ty, entries))) => {
            status.phase = TRANSPORT_ARCHIVE_READY.into();
            status.r#type = Some(ty.into());
            status.component_versions = Some(
                entries
                    .into_iter()
                    .map(|e| ArchivedComponentVersion {
                        name: e.component,
                        version: e.version,
                        resources: e.resources as u64,
                    })
                    .collect(),
            );
        }
        Err(e) => {
            status.phase = TRANSPORT_ARCHIVE_FAILED.into();
            status.last_error = Some(e.to_string());
        }
    }
    Some(status)
}

/// `directory`, `tgz` (gzip magic) or `tar`, and the size in bytes (a directory's: the sum of
/// its regular files, symbolic links not followed).
fn format_and_size(path: &Path) -> (&'static str, u64) {
    if path.is_dir() {
        return ("directory", dir_size(path, 0));
    }
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut magic = [0u8; 2];
    let gzip = std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == [0x1f, 0x8b];
    (if gzip { "tgz" } else { "tar" }, size)
}

fn dir_size(dir: &Path, depth: usize) -> u64 {
    if depth > 16 {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path(), depth + 1),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

/// The writes that make the stored `TransportArchive` objects (`current`) the `desired` ones
/// (name → (path, status without `observedTime`)). An unchanged status keeps its
/// `observedTime` (and is not written); metadata (labels, annotations) is kept.
pub fn plan(
    current: &[Value],
    desired: BTreeMap<String, (String, TransportArchiveStatus)>,
    now: &str,
) -> Transaction {
    let mut transaction = Transaction::new();
    for stored in current {
        let name = object::name(stored);
        if !desired.contains_key(name) {
            transaction = transaction.delete(
                ObjectKey::new(Kind::TransportArchive, "", name),
                Some(object::resource_version(stored).to_string()),
            );
        }
    }
    for (name, (rel, mut status)) in desired {
        let stored = current.iter().find(|o| object::name(o) == name);
        let previous: Option<TransportArchiveStatus> = stored
            .and_then(|o| o.get("status"))
            .and_then(|s| serde_json::from_value(s.clone()).ok());
        status.observed_time = match previous {
            Some(mut p) if stored.and_then(|o| o.pointer("/spec/path")) == Some(&json!(rel)) => {
                let kept = p.observed_time.take();
                if p == status { kept } else { None }
            }
            _ => None,
        }
        .or_else(|| Some(now.to_string()));
        let status = serde_json::to_value(&status).unwrap_or(Value::Null);
        match stored {
            None => {
                transaction = transaction.create(json!({
                    "apiVersion": Kind::TransportArchive.api_version(),
                    "kind": Kind::TransportArchive.as_str(),
                    "metadata": {"name": name},
                    "spec": {"path": rel},
                    "status": status,
                }))
            }
            Some(stored) => {
                let mut updated = stored.clone();
                if let Some(map) = updated.as_object_mut() {
                    map.insert("spec".into(), json!({"path": rel}));
                    map.insert("status".into(), status);
                }
                if updated != *stored {
                    transaction = transaction.update(updated);
                }
            }
        }
    }
    transaction
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(name: &str) -> TransportArchiveStatus {
        TransportArchiveStatus {
            phase: TRANSPORT_ARCHIVE_READY.into(),
            r#type: Some("CommonTransportFormat".into()),
            format: Some("tgz".into()),
            size: Some(3),
            component_versions: Some(vec![ArchivedComponentVersion {
                name: name.into(),
                version: "1.0.0".into(),
                resources: 1,
            }]),
            ..TransportArchiveStatus::default()
        }
    }

    fn stored(name: &str, rel: &str, status: &TransportArchiveStatus, time: &str) -> Value {
        let mut status = serde_json::to_value(status).unwrap();
        status["observedTime"] = json!(time);
        json!({"apiVersion": "appliance.landscaper-appliance.io/v1alpha1", "kind": "TransportArchive",
               "metadata": {"name": name, "resourceVersion": "7", "labels": {"a": "b"}},
               "spec": {"path": rel}, "status": status})
    }

    #[test]
    fn plan_creates_updates_keeps_and_deletes() {
        let unchanged = stored("a.tgz", "a.tgz", &ready("x.io/a"), "2020-01-01T00:00:00Z");
        let changed = stored("b.tgz", "b.tgz", &ready("x.io/b"), "2020-01-01T00:00:00Z");
        let gone = stored("c.tgz", "c.tgz", &ready("x.io/c"), "2020-01-01T00:00:00Z");
        let mut failed = TransportArchiveStatus {
            phase: TRANSPORT_ARCHIVE_FAILED.into(),
            last_error: Some("truncated".into()),
            ..TransportArchiveStatus::default()
        };
        failed.format = Some("tar".into());
        let desired = BTreeMap::from([
            ("a.tgz".to_string(), ("a.tgz".to_string(), ready("x.io/a"))),
            ("b.tgz".to_string(), ("b.tgz".to_string(), failed)),
            (
                "d.tgz".to_string(),
                ("d/d.tgz".to_string(), ready("x.io/d")),
            ),
        ]);
        let now = "2030-01-01T00:00:00Z";
        let t = plan(&[unchanged, changed, gone], desired, now);
        use landscaper_store::Write;
        let mut deleted = Vec::new();
        let mut created = Vec::new();
        let mut updated = Vec::new();
        for w in t.writes {
            match w {
                Write::Delete { key, .. } => deleted.push(key.name.clone()),
                Write::Create(v) => created.push(v),
                Write::Update(v) => updated.push(v),
            }
        }
        assert_eq!(deleted, ["c.tgz"], "a removed archive is deleted");
        assert_eq!(created.len(), 1, "{created:?}");
        assert_eq!(created[0]["metadata"]["name"], "d.tgz");
        assert_eq!(created[0]["spec"]["path"], "d/d.tgz");
        assert_eq!(created[0]["status"]["observedTime"], now);
        assert_eq!(
            created[0]["status"]["componentVersions"][0]["name"],
            "x.io/d"
        );
        // Only b changed (a is unchanged and not written); it keeps its metadata.
        assert_eq!(updated.len(), 1, "{updated:?}");
        assert_eq!(updated[0]["metadata"]["name"], "b.tgz");
        assert_eq!(updated[0]["metadata"]["labels"]["a"], "b");
        assert_eq!(updated[0]["metadata"]["resourceVersion"], "7");
        assert_eq!(updated[0]["status"]["phase"], "Failed");
        assert_eq!(updated[0]["status"]["lastError"], "truncated");
        assert_eq!(updated[0]["status"]["observedTime"], now);
        assert!(updated[0]["status"].get("componentVersions").is_none());
    }

    #[test]
    fn a_stored_archive_with_the_same_content_is_not_written_again() {
        let s = stored("a.tgz", "a.tgz", &ready("x.io/a"), "2020-01-01T00:00:00Z");
        let desired =
            BTreeMap::from([("a.tgz".to_string(), ("a.tgz".to_string(), ready("x.io/a")))]);
        assert!(
            plan(&[s], desired, "2030-01-01T00:00:00Z")
                .writes
                .is_empty()
        );
    }

    #[test]
    fn read_archive_reports_truncated_archives_and_ignores_other_tarballs() {
        let dir = tempfile::tempdir().unwrap();
        // A tar with one file that is not a transport archive (like a chart).
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(5);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, "chart/Chart.yaml", &b"name:"[..])
            .unwrap();
        let tarball = builder.into_inner().unwrap();
        std::fs::write(dir.path().join("chart.tar"), &tarball).unwrap();
        assert_eq!(read_archive(&dir.path().join("chart.tar")), None);
        // A CTF cut short in its index file's header.
        let mut builder = tar::Builder::new(Vec::new());
        let index = br#"{"schemaVersion":1,"artifacts":[]}"#;
        let mut header = tar::Header::new_gnu();
        header.set_size(index.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, "artifact-index.json", &index[..])
            .unwrap();
        let full = builder.into_inner().unwrap();
        std::fs::write(dir.path().join("ok.tar"), &full).unwrap();
        let ok = read_archive(&dir.path().join("ok.tar")).expect("a CTF");
        assert_eq!(ok.phase, TRANSPORT_ARCHIVE_READY, "{ok:?}");
        assert_eq!(ok.r#type.as_deref(), Some("CommonTransportFormat"));
        assert_eq!(ok.format.as_deref(), Some("tar"));
        assert_eq!(ok.size, Some(full.len() as u64));
        std::fs::write(dir.path().join("cut.tar"), &full[..600]).unwrap();
        let cut = read_archive(&dir.path().join("cut.tar")).expect("reported");
        assert_eq!(cut.phase, TRANSPORT_ARCHIVE_FAILED, "{cut:?}");
        assert!(cut.last_error.is_some(), "{cut:?}");
    }
}
