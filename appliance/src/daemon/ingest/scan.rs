//! Walking the manifests folder and reading, hashing and parsing its files.
//!
//! Synchronous: the ingest runs these on blocking threads. [`walk`] is public so that the
//! offline `validate` command sees exactly the files the ingest would read.

use std::collections::HashSet;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use super::manifest::{ManifestError, ParsedManifest, parse_manifest};
use super::names::{SKIP_SUFFIX, is_ignored_name, is_manifest_name, sha256_hex};

/// Deeper trees are almost certainly a mistake (or a loop the identity check cannot see).
const MAX_DEPTH: usize = 64;

/// A manifest file found by the walk.
#[derive(Debug, Clone)]
pub struct Found {
    /// Path relative to the manifests folder, `/`-separated, through symlinks as named.
    pub rel: String,
    pub abs: PathBuf,
    /// `NAME.skip` exists beside it.
    pub skipped: bool,
    pub modified: Option<SystemTime>,
}

/// The result of walking the folder.
#[derive(Debug, Default)]
pub struct Walk {
    pub files: Vec<Found>,
    /// Symlink loops, broken links, unreadable entries.
    pub warnings: Vec<String>,
    /// Directories (relative, `/`-terminated; `""` for the root) that could not be read: files
    /// known under them are kept as they are instead of being treated as removed.
    pub unreadable: Vec<String>,
    /// OCM transport archives (issue 18): CTF directories (`artifact-index.json`), component
    /// archive directories (`component-descriptor.yaml`) and `.tar`/`.tgz`/`.tar.gz` files;
    /// absolute paths, sorted. Their files are not manifests.
    pub archives: Vec<PathBuf>,
}

impl Walk {
    pub fn is_unreadable(&self, rel: &str) -> bool {
        self.unreadable
            .iter()
            .any(|dir| rel.starts_with(dir.as_str()))
    }
}

/// Walks `root` recursively, following symlinks to files and directories. A directory reached
/// again through a symlink (a loop, or a second way into the same tree) is not entered twice.
/// Fails only if the root itself cannot be read.
pub fn walk(root: &Path) -> io::Result<Walk> {
    let meta = std::fs::metadata(root)?;
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{} is not a directory", root.display()),
        ));
    }
    // Reading the root must work too, or every file would look removed.
    std::fs::read_dir(root)?;
    let mut walk = Walk::default();
    let mut visited = HashSet::new();
    let mut ancestors = vec![(meta.dev(), meta.ino())];
    visited.insert((meta.dev(), meta.ino()));
    walk_dir(root, "", &mut ancestors, &mut visited, &mut walk);
    walk.files.sort_by(|a, b| a.rel.cmp(&b.rel));
    walk.archives.sort();
    Ok(walk)
}

/// The file that makes a directory a blueprint directory, skipped by the scan.
const BLUEPRINT_FILE: &str = "blueprint.yaml";
/// The file that makes a directory a Helm chart (`local://charts/NAME`), skipped by the scan.
const CHART_FILE: &str = "Chart.yaml";

/// Files that make a directory an OCM transport archive: a CTF's index, a component archive's
/// descriptor.
const ARCHIVE_DIR_MARKERS: &[&str] = &["artifact-index.json", "component-descriptor.yaml"];

/// A CTF or component archive as one file.
pub fn is_archive_file_name(name: &str) -> bool {
    [".tar", ".tgz", ".tar.gz"]
        .iter()
        .any(|suffix| name.len() > suffix.len() && name.ends_with(suffix))
}

fn walk_dir(
    dir: &Path,
    prefix: &str,
    ancestors: &mut Vec<(u64, u64)>,
    visited: &mut HashSet<(u64, u64)>,
    walk: &mut Walk,
) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            walk.warnings
                .push(format!("{prefix}: cannot read the directory: {e}"));
            walk.unreadable.push(prefix.to_string());
            return;
        }
    };
    let mut names = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => match entry.file_name().into_string() {
                Ok(name) => names.push(name),
                Err(raw) => walk.warnings.push(format!(
                    "{prefix}{}: file name is not valid UTF-8; ignored",
                    raw.to_string_lossy()
                )),
            },
            Err(e) => {
                walk.warnings
                    .push(format!("{prefix}: reading the directory failed: {e}"));
                walk.unreadable.push(prefix.to_string());
                return;
            }
        }
    }
    names.sort();
    // A blueprint directory or a chart directory (referenced by `local://<path>`) holds
    // templates, not manifests.
    if !prefix.is_empty() && names.iter().any(|n| n == BLUEPRINT_FILE || n == CHART_FILE) {
        return;
    }
    // An OCM transport archive as a directory: a repository, not manifests.
    if !prefix.is_empty()
        && names
            .iter()
            .any(|n| ARCHIVE_DIR_MARKERS.contains(&n.as_str()))
    {
        walk.archives.push(dir.to_path_buf());
        return;
    }
    let skip_markers: HashSet<&str> = names
        .iter()
        .filter_map(|n| n.strip_suffix(SKIP_SUFFIX))
        .collect();
    for name in &names {
        if is_ignored_name(name) {
            continue;
        }
        let path = dir.join(name);
        let rel = format!("{prefix}{name}");
        // `metadata` follows symlinks; a dangling one fails here.
        let meta = match std::fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) => {
                let link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink());
                if link {
                    walk.warnings
                        .push(format!("{rel}: broken symlink ignored: {e}"));
                } else if e.kind() != io::ErrorKind::NotFound {
                    walk.warnings.push(format!("{rel}: cannot read: {e}"));
                    walk.unreadable.push(rel.clone());
                }
                continue;
            }
        };
        if meta.is_dir() {
            let id = (meta.dev(), meta.ino());
            if ancestors.contains(&id) {
                walk.warnings.push(format!(
                    "{rel}: symlink loop (leads back to a parent directory); not followed"
                ));
                continue;
            }
            if !visited.insert(id) {
                walk.warnings.push(format!(
                    "{rel}: directory already read under another path; not read twice"
                ));
                continue;
            }
            if ancestors.len() >= MAX_DEPTH {
                walk.warnings
                    .push(format!("{rel}: deeper than {MAX_DEPTH} levels; not read"));
                continue;
            }
            ancestors.push(id);
            walk_dir(&path, &format!("{rel}/"), ancestors, visited, walk);
            ancestors.pop();
        } else if meta.is_file() && is_archive_file_name(name) {
            if !skip_markers.contains(name.as_str()) {
                walk.archives.push(path);
            }
        } else if meta.is_file() && is_manifest_name(name) {
            walk.files.push(Found {
                skipped: skip_markers.contains(name.as_str()),
                rel,
                abs: path,
                modified: meta.modified().ok(),
            });
        }
    }
}

/// What reading one file gave.
#[derive(Debug)]
pub(crate) enum FileContent {
    /// Read; `parsed` is `None` when the content is unchanged and was not parsed.
    Read {
        sha256: String,
        parsed: Option<Result<ParsedManifest, ManifestError>>,
    },
    /// Removed between the walk and the read.
    Gone,
    /// Present but unreadable (permissions, I/O error).
    Failed(String),
    /// Not read: disabled by a `.skip` marker.
    NotRead,
}

/// Reads and hashes the files, and parses those for which `must_parse(rel, sha256)` says so,
/// on all cores. Files larger than `max_size` bytes are not read (see [`read_bounded`]).
pub(crate) fn read_files(
    files: &[Found],
    max_size: u64,
    must_parse: impl Fn(&str, &str) -> bool + Sync,
) -> Vec<FileContent> {
    parallel_map(files, |found| {
        if found.skipped {
            return FileContent::NotRead;
        }
        match read_bounded(&found.abs, max_size) {
            Ok(bytes) => {
                let sha256 = sha256_hex(&bytes);
                let parsed =
                    must_parse(&found.rel, &sha256).then(|| parse_manifest(&found.rel, &bytes));
                FileContent::Read { sha256, parsed }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => FileContent::Gone,
            Err(e) => FileContent::Failed(e.to_string()),
        }
    })
}

/// Reads a file of at most `max_size` bytes: its size is checked before reading, and the read
/// stops after `max_size + 1` bytes in case it grew meanwhile, so a huge file never takes more
/// memory than the limit. A bigger file is an error of kind `FileTooLarge` saying so.
pub fn read_bounded(path: &Path, max_size: u64) -> io::Result<Vec<u8>> {
    use std::io::Read as _;
    let too_large = |size: Option<u64>| {
        let size = size.map_or_else(|| "more than".to_string(), |s| format!("{} bytes,", s));
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "the file is {size} larger than the limit of {max_size} bytes \
                 (maxManifestFileSize in the configuration); it was not read"
            ),
        )
    };
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size > max_size {
        return Err(too_large(Some(size)));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(max_size.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_size {
        return Err(too_large(None));
    }
    Ok(bytes)
}

/// Maps `items` on a few threads, keeping the order.
pub(crate) fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8)
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut results: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        out.push((i, f(item)));
                    }
                    out
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    results.sort_unstable_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_directories_are_not_scanned() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("charts/demo/templates")).unwrap();
        for f in [
            "inst.yaml",
            "charts/demo/Chart.yaml",
            "charts/demo/values.yaml",
            "charts/demo/templates/cm.yaml",
        ] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        let walk = walk(root).unwrap();
        let found: Vec<_> = walk.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(found, ["inst.yaml"]);
    }

    #[test]
    fn transport_archives_are_found_and_not_read_as_manifests() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("ctf/blobs")).unwrap();
        std::fs::create_dir_all(root.join("ca/blobs")).unwrap();
        for f in [
            "inst.yaml",
            "ctf/artifact-index.json",
            "ctf/blobs/sha256.00",
            "ca/component-descriptor.yaml",
            "mirror.tgz",
            "mirror2.tar.gz",
            "plain.tar",
            "disabled.tar",
            "disabled.tar.skip",
            ".tar",
        ] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        let walk = walk(root).unwrap();
        let found: Vec<_> = walk.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(found, ["inst.yaml"]);
        let archives: Vec<_> = walk
            .archives
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(
            archives,
            ["ca", "ctf", "mirror.tgz", "mirror2.tar.gz", "plain.tar"]
        );
    }

    #[test]
    fn walk_finds_manifests_and_skips_noise() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        for f in [
            "a.yaml",
            "b.yml",
            "c.json",
            "d.txt",
            ".hidden.yaml",
            "a.yaml~",
            "sub/e.yaml",
            "sub/deeper/f.yaml",
            ".git/g.yaml",
            "sub/e.yaml.swp",
            "b.yml.skip",
        ] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        let walk = walk(root).unwrap();
        let found: Vec<_> = walk
            .files
            .iter()
            .map(|f| (f.rel.as_str(), f.skipped))
            .collect();
        assert_eq!(
            found,
            [
                ("a.yaml", false),
                ("b.yml", true),
                ("c.json", false),
                ("sub/deeper/f.yaml", false),
                ("sub/e.yaml", false)
            ]
        );
        assert!(walk.warnings.is_empty(), "{:?}", walk.warnings);
    }

    #[test]
    fn symlink_loops_and_dangling_links_are_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/x.yaml"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("a/b/loop")).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere.yaml"), root.join("dangling.yaml")).unwrap();
        std::os::unix::fs::symlink(root.join("a/b/x.yaml"), root.join("link.yaml")).unwrap();
        let walk = walk(root).unwrap();
        let found: Vec<_> = walk.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(found, ["a/b/x.yaml", "link.yaml"]);
        assert!(
            walk.warnings.iter().any(|w| w.contains("symlink loop")),
            "{:?}",
            walk.warnings
        );
        assert!(
            walk.warnings.iter().any(|w| w.contains("broken symlink")),
            "{:?}",
            walk.warnings
        );
    }

    #[test]
    fn missing_root_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(walk(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn files_over_the_size_limit_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.yaml");
        std::fs::write(&path, "x".repeat(1001)).unwrap();
        let err = read_bounded(&path, 1000).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert!(err.to_string().contains("1001 bytes"), "{err}");
        assert!(err.to_string().contains("maxManifestFileSize"), "{err}");
        assert_eq!(read_bounded(&path, 1001).unwrap().len(), 1001);
        // A file that only looks small (no size in its metadata) is cut off by the read.
        let err = read_bounded(Path::new("/proc/self/status"), 10).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert!(err.to_string().contains("more than"), "{err}");
        let found = Found {
            rel: "big.yaml".into(),
            abs: path,
            skipped: false,
            modified: None,
        };
        match &read_files(std::slice::from_ref(&found), 1000, |_, _| true)[..] {
            [FileContent::Failed(message)] => assert!(message.contains("1001 bytes"), "{message}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn parallel_map_keeps_order() {
        let items: Vec<usize> = (0..1000).collect();
        assert_eq!(
            parallel_map(&items, |i| i * 2),
            items.iter().map(|i| i * 2).collect::<Vec<_>>()
        );
    }
}
