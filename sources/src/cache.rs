//! The content-addressed artifact cache in the data folder.
//!
//! Layout under the cache root:
//! - `blobs/sha256/<hex>`: the artifact bytes; the name is their digest, checked on every read
//!   (a damaged file is removed and counts as a miss).
//! - `refs/<sha256 of key>`: `{"key": …, "digest": …}`: what a name (an OCI tag, a manifest digest,
//!   a helm repository's (URL, name, version), a URL) resolved to the last time.
//! - `tmp/`: files being written; each write goes to a fresh temporary file, is synced and then
//!   renamed into place, so a crash leaves either the old state or the new one.
//!
//! The total size of the blobs is bounded: after a write, the least recently used blobs (by
//! modification time, which reads refresh) are removed until the total fits. Refs whose blob is
//! gone are misses and are removed on the way.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::archive::{hex, sha256_digest, valid_sha256_digest};

/// Default bound of the cache's total size: 512 MiB.
pub const DEFAULT_CACHE_MAX_BYTES: u64 = 512 << 20;

/// Why the cache could not be written (reads never fail: a problem is a miss).
#[derive(Debug, thiserror::Error)]
#[error("chart cache {path}: {source}")]
pub struct CacheError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

#[derive(Serialize, Deserialize)]
struct RefFile {
    key: String,
    digest: String,
}

/// See the module documentation.
#[derive(Debug)]
pub struct ChartCache {
    root: PathBuf,
    max_bytes: u64,
    counter: AtomicU64,
    /// Digests (hex) pinned against eviction, by owner (e.g. an installation).
    pins: std::sync::Mutex<std::collections::BTreeMap<String, std::collections::BTreeSet<String>>>,
}

impl ChartCache {
    /// Opens (creating) the cache at `root`; leftovers of interrupted writes are removed.
    pub fn open(root: impl Into<PathBuf>, max_bytes: u64) -> Result<Self, CacheError> {
        let root = root.into();
        for dir in ["blobs/sha256", "refs", "tmp"] {
            let path = root.join(dir);
            fs::create_dir_all(&path).map_err(|source| CacheError {
                path: path.clone(),
                source,
            })?;
        }
        if let Ok(entries) = fs::read_dir(root.join("tmp")) {
            for entry in entries.flatten() {
                let _ = fs::remove_file(entry.path());
            }
        }
        Ok(ChartCache {
            root,
            max_bytes,
            counter: AtomicU64::new(0),
            pins: Default::default(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Pins `digests` (`sha256:<hex>`) for `owner` against eviction, replacing the owner's
    /// earlier pins (in memory: pins end with the process, as the references do).
    pub fn set_pins(&self, owner: &str, digests: impl IntoIterator<Item = String>) {
        let set: std::collections::BTreeSet<String> = digests
            .into_iter()
            .filter(|d| valid_sha256_digest(d))
            .map(|d| d["sha256:".len()..].to_string())
            .collect();
        if let Ok(mut pins) = self.pins.lock() {
            if set.is_empty() {
                pins.remove(owner);
            } else {
                pins.insert(owner.to_string(), set);
            }
        }
    }

    /// Releases the pins of `owner`.
    pub fn clear_pins(&self, owner: &str) {
        if let Ok(mut pins) = self.pins.lock() {
            pins.remove(owner);
        }
    }

    fn pinned(&self) -> std::collections::BTreeSet<String> {
        self.pins
            .lock()
            .map(|p| p.values().flatten().cloned().collect())
            .unwrap_or_default()
    }

    fn blob_path(&self, digest: &str) -> Option<PathBuf> {
        if !valid_sha256_digest(digest) {
            return None;
        }
        Some(
            self.root
                .join("blobs/sha256")
                .join(&digest["sha256:".len()..]),
        )
    }

    fn ref_path(&self, key: &str) -> PathBuf {
        self.root
            .join("refs")
            .join(hex(&Sha256::digest(key.as_bytes())))
    }

    /// Verifies every blob (damaged ones are removed, as on a read) and drops refs to missing
    /// blobs: (blobs kept, bytes kept, blobs removed). For `doctor`.
    pub fn verify(&self) -> (usize, u64, usize) {
        let (mut kept, mut bytes, mut removed) = (0, 0, 0);
        if let Ok(entries) = fs::read_dir(self.root.join("blobs/sha256")) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let digest = format!("sha256:{name}");
                let ok = valid_sha256_digest(&digest)
                    && fs::read(entry.path()).is_ok_and(|b| {
                        bytes += b.len() as u64;
                        sha256_digest(&b) == digest
                    });
                if ok {
                    kept += 1;
                } else {
                    bytes -= fs::metadata(entry.path())
                        .map(|m| m.len())
                        .unwrap_or(0)
                        .min(bytes);
                    if fs::remove_file(entry.path()).is_ok() {
                        removed += 1;
                    }
                }
            }
        }
        if removed > 0 {
            self.remove_dangling_refs();
        }
        (kept, bytes, removed)
    }

    /// The bytes with this digest, verified; refreshes their place in the LRU order.
    pub fn get_blob(&self, digest: &str) -> Option<Vec<u8>> {
        let path = self.blob_path(digest)?;
        let bytes = fs::read(&path).ok()?;
        if sha256_digest(&bytes) != digest {
            tracing::warn!(path = %path.display(), "chart cache: damaged blob removed");
            let _ = fs::remove_file(&path);
            return None;
        }
        touch(&path);
        Some(bytes)
    }

    /// Stores bytes under their digest (returned). Bytes larger than the whole cache are not
    /// stored (the digest is still returned).
    pub fn put_blob(&self, bytes: &[u8]) -> Result<String, CacheError> {
        let digest = sha256_digest(bytes);
        if bytes.len() as u64 > self.max_bytes {
            return Ok(digest);
        }
        let path = self
            .blob_path(&digest)
            .expect("sha256_digest yields a valid digest");
        if path.exists() {
            touch(&path);
        } else {
            self.write_atomically(&path, bytes)?;
        }
        self.evict(&digest);
        Ok(digest)
    }

    /// The digest a key resolved to, if that blob is still there.
    pub fn get_ref(&self, key: &str) -> Option<String> {
        let path = self.ref_path(key);
        let text = fs::read(&path).ok()?;
        let parsed: RefFile = serde_json::from_slice(&text).ok()?;
        if parsed.key != key {
            return None;
        }
        match self.blob_path(&parsed.digest) {
            Some(blob) if blob.exists() => Some(parsed.digest),
            _ => {
                let _ = fs::remove_file(&path);
                None
            }
        }
    }

    /// Remembers that `key` resolved to `digest`.
    pub fn put_ref(&self, key: &str, digest: &str) -> Result<(), CacheError> {
        let text = serde_json::to_vec(&RefFile {
            key: key.to_string(),
            digest: digest.to_string(),
        })
        .unwrap_or_default();
        self.write_atomically(&self.ref_path(key), &text)
    }

    /// The bytes `key` resolved to, verified.
    pub fn get_by_key(&self, key: &str) -> Option<(String, Vec<u8>)> {
        let digest = self.get_ref(key)?;
        let bytes = self.get_blob(&digest)?;
        Some((digest, bytes))
    }

    /// Stores the bytes and remembers each key for them; returns the digest.
    pub fn put_with_keys(&self, bytes: &[u8], keys: &[String]) -> Result<String, CacheError> {
        let digest = self.put_blob(bytes)?;
        if self.blob_path(&digest).is_some_and(|p| p.exists()) {
            for key in keys {
                self.put_ref(key, &digest)?;
            }
        }
        Ok(digest)
    }

    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> Result<(), CacheError> {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let tmp = self
            .root
            .join("tmp")
            .join(format!("{}-{n}.tmp", std::process::id()));
        let err = |source| CacheError {
            path: path.to_path_buf(),
            source,
        };
        let result = (|| {
            let mut file = fs::File::create(&tmp)?;
            file.write_all(bytes)?;
            file.sync_all()?;
            fs::rename(&tmp, path)?;
            if let Some(parent) = path.parent()
                && let Ok(dir) = fs::File::open(parent)
            {
                let _ = dir.sync_all();
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result.map_err(err)
    }

    /// Removes least recently used blobs until the total fits; `keep` stays.
    fn evict(&self, keep: &str) {
        let dir = self.root.join("blobs/sha256");
        let Ok(entries) = fs::read_dir(&dir) else {
            return;
        };
        let mut blobs: Vec<(SystemTime, u64, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((
                    meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                    meta.len(),
                    e.path(),
                ))
            })
            .collect();
        let mut total: u64 = blobs.iter().map(|(_, len, _)| len).sum();
        if total <= self.max_bytes {
            return;
        }
        blobs.sort_by_key(|(time, _, _)| *time);
        let keep_name = keep.strip_prefix("sha256:").unwrap_or(keep);
        let pinned = self.pinned();
        let mut removed = false;
        for (_, len, path) in blobs {
            if total <= self.max_bytes {
                break;
            }
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if name == keep_name || pinned.contains(name) {
                continue;
            }
            if fs::remove_file(&path).is_ok() {
                total = total.saturating_sub(len);
                removed = true;
            }
        }
        if removed {
            self.remove_dangling_refs();
        }
    }

    fn remove_dangling_refs(&self) {
        let Ok(entries) = fs::read_dir(self.root.join("refs")) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let keep = fs::read(&path)
                .ok()
                .and_then(|t| serde_json::from_slice::<RefFile>(&t).ok())
                .and_then(|r| self.blob_path(&r.digest))
                .is_some_and(|b| b.exists());
            if !keep {
                let _ = fs::remove_file(&path);
            }
        }
    }
}

fn touch(path: &Path) {
    if let Ok(file) = fs::File::options().append(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn set_age(cache: &ChartCache, digest: &str, seconds_ago: u64) {
        let path = cache.blob_path(digest).expect("valid digest");
        let file = fs::File::options().append(true).open(path).expect("open");
        file.set_modified(SystemTime::now() - Duration::from_secs(seconds_ago))
            .expect("set mtime");
    }

    #[test]
    fn stored_bytes_come_back_after_reopening() {
        let dir = tempfile::tempdir().expect("tempdir");
        let digest = {
            let cache = ChartCache::open(dir.path(), 1 << 20).expect("open");
            cache
                .put_with_keys(b"chart bytes", &["oci:reg/app:1.0".to_string()])
                .expect("put")
        };
        let cache = ChartCache::open(dir.path(), 1 << 20).expect("reopen");
        assert_eq!(
            cache.get_by_key("oci:reg/app:1.0"),
            Some((digest.clone(), b"chart bytes".to_vec()))
        );
        assert_eq!(cache.get_blob(&digest), Some(b"chart bytes".to_vec()));
        assert_eq!(cache.get_by_key("oci:reg/app:2.0"), None);
    }

    #[test]
    fn verify_removes_damaged_blobs_and_their_refs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ChartCache::open(dir.path(), 1 << 20).expect("open");
        let good = cache
            .put_with_keys(b"good", &["k1".to_string()])
            .expect("put");
        let bad = cache
            .put_with_keys(b"bad", &["k2".to_string()])
            .expect("put");
        fs::write(cache.blob_path(&bad).expect("path"), b"tampered").expect("write");
        fs::write(dir.path().join("blobs/sha256/not-a-digest"), b"x").expect("write");
        assert_eq!(cache.verify(), (1, 4, 2));
        assert_eq!(cache.get_by_key("k1"), Some((good, b"good".to_vec())));
        assert_eq!(
            cache.get_ref("k2"),
            None,
            "the ref to the damaged blob is gone"
        );
        assert_eq!(cache.verify(), (1, 4, 0));
    }

    #[test]
    fn pinned_blobs_survive_eviction() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ChartCache::open(dir.path(), 10).expect("open");
        let old = cache.put_blob(b"0123456").expect("put");
        set_age(&cache, &old, 100);
        cache.set_pins("installation a", [old.clone()]);
        let new = cache.put_blob(b"abcdefg").expect("put");
        assert_eq!(cache.get_blob(&old), Some(b"0123456".to_vec()), "pinned");
        assert_eq!(
            cache.get_blob(&new),
            Some(b"abcdefg".to_vec()),
            "just written"
        );
        cache.clear_pins("installation a");
        set_age(&cache, &old, 100);
        let third = cache.put_blob(b"xyz1234").expect("put");
        assert_eq!(cache.get_blob(&old), None, "evicted once unpinned");
        assert!(cache.get_blob(&third).is_some());
    }

    #[test]
    fn damaged_blobs_are_misses_and_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ChartCache::open(dir.path(), 1 << 20).expect("open");
        let digest = cache
            .put_with_keys(b"original", &["k".to_string()])
            .expect("put");
        let path = cache.blob_path(&digest).expect("path");
        fs::write(&path, b"tampered").expect("tamper");
        assert_eq!(cache.get_blob(&digest), None);
        assert!(!path.exists(), "damaged blob removed");
        assert_eq!(cache.get_by_key("k"), None, "its ref is a miss too");
    }

    #[test]
    fn least_recently_used_blobs_go_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ChartCache::open(dir.path(), 250).expect("open");
        let a = cache.put_with_keys(&[b'a'; 100], &["a".into()]).expect("a");
        let b = cache.put_with_keys(&[b'b'; 100], &["b".into()]).expect("b");
        set_age(&cache, &a, 300);
        set_age(&cache, &b, 200);
        // Reading `a` makes it the most recently used: `b` is the one to go.
        assert!(cache.get_blob(&a).is_some());
        let c = cache.put_with_keys(&[b'c'; 100], &["c".into()]).expect("c");
        assert!(cache.get_blob(&a).is_some(), "recently read stays");
        assert!(cache.get_blob(&c).is_some(), "just written stays");
        assert_eq!(cache.get_blob(&b), None, "least recently used went");
        assert_eq!(cache.get_ref("b"), None);
        assert!(!cache.ref_path("b").exists(), "dangling ref removed");
    }

    #[test]
    fn oversized_artifacts_are_not_cached() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ChartCache::open(dir.path(), 10).expect("open");
        let digest = cache
            .put_with_keys(&[0u8; 11], &["big".into()])
            .expect("put");
        assert_eq!(cache.get_blob(&digest), None);
        assert_eq!(cache.get_ref("big"), None);
    }

    #[test]
    fn interrupted_writes_are_cleaned_up_and_invisible() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(ChartCache::open(dir.path(), 1 << 20).expect("open"));
        fs::write(dir.path().join("tmp/123-0.tmp"), b"half").expect("leftover");
        let _cache = ChartCache::open(dir.path(), 1 << 20).expect("reopen");
        assert!(!dir.path().join("tmp/123-0.tmp").exists());
    }

    #[test]
    fn invalid_digests_are_never_paths() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ChartCache::open(dir.path(), 1 << 20).expect("open");
        assert_eq!(cache.get_blob("sha256:../../etc/passwd"), None);
        assert!(cache.blob_path("md5:abc").is_none());
    }
}
