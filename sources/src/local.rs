//! `local://charts/NAME`: a chart directory or `.tgz` inside the manifests folder (the appliance's
//! extension for air-gapped hosts). The path must be relative, start with `charts/`, have no
//! `..`, and stay inside the folder after symlinks are followed (for the chart itself and for
//! every symlink in a chart directory).

use std::fs;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::archive::hex;
use crate::error::SourceError;

/// What a local reference names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalChart {
    Archive { path: PathBuf, bytes: Vec<u8> },
    Directory { path: PathBuf, digest: String },
}

fn local_err(what: &str, detail: impl Into<String>) -> SourceError {
    SourceError::Local {
        what: what.to_string(),
        detail: detail.into(),
    }
}

/// Resolves `rel` (what follows `local://`) inside `manifests_dir`.
pub fn resolve(manifests_dir: &Path, rel: &str, max_bytes: u64) -> Result<LocalChart, SourceError> {
    let what = format!("local://{rel}");
    let rel_path = Path::new(rel);
    if rel.is_empty() || rel_path.is_absolute() {
        return Err(local_err(
            &what,
            "must be a relative path inside the manifests folder",
        ));
    }
    if rel_path
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(local_err(&what, "must not contain '..' or a root"));
    }
    let mut normal = rel_path
        .components()
        .filter(|c| matches!(c, Component::Normal(_)));
    if normal.next().map(|c| c.as_os_str()) != Some("charts".as_ref()) || normal.next().is_none() {
        return Err(local_err(
            &what,
            "must name a chart under charts/ (local://charts/NAME)",
        ));
    }
    let root = fs::canonicalize(manifests_dir).map_err(|e| {
        local_err(
            &what,
            format!("manifests folder {}: {e}", manifests_dir.display()),
        )
    })?;
    let joined = root.join(rel_path);
    let path = fs::canonicalize(&joined).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            // Retried: the chart may still be copied into the folder.
            local_err(&what, format!("no chart {rel} in the manifests folder"))
        } else {
            local_err(&what, format!("{}: {e}", joined.display()))
        }
    })?;
    if !path.starts_with(&root) {
        return Err(local_err(&what, "resolves outside the manifests folder"));
    }
    let meta = fs::metadata(&path).map_err(|e| local_err(&what, e.to_string()))?;
    if meta.is_file() {
        if meta.len() > max_bytes {
            return Err(SourceError::TooLarge {
                what,
                limit: max_bytes,
            });
        }
        let bytes = fs::read(&path).map_err(|e| local_err(&what, e.to_string()))?;
        return Ok(LocalChart::Archive { path, bytes });
    }
    if !path.join("Chart.yaml").is_file() {
        return Err(local_err(&what, "the directory has no Chart.yaml"));
    }
    let digest = directory_digest(&what, &root, &path, max_bytes)?;
    Ok(LocalChart::Directory { path, digest })
}

/// A digest of a directory tree: sha256 over the sorted relative paths, kinds and contents.
/// Symlinks must stay inside `root`; the total size is bounded.
fn directory_digest(
    what: &str,
    root: &Path,
    dir: &Path,
    max_bytes: u64,
) -> Result<String, SourceError> {
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    let mut stack = vec![(String::new(), dir.to_path_buf(), 0usize)];
    while let Some((prefix, current, depth)) = stack.pop() {
        if depth > 64 {
            return Err(local_err(what, "directories nested too deep"));
        }
        let entries = fs::read_dir(&current)
            .map_err(|e| local_err(what, format!("{}: {e}", current.display())))?;
        for entry in entries {
            let entry = entry.map_err(|e| local_err(what, e.to_string()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let path = entry.path();
            let meta = fs::symlink_metadata(&path).map_err(|e| local_err(what, e.to_string()))?;
            let target = if meta.file_type().is_symlink() {
                let target =
                    fs::canonicalize(&path).map_err(|e| local_err(what, format!("{rel}: {e}")))?;
                if !target.starts_with(root) {
                    return Err(local_err(
                        what,
                        format!("{rel} is a symlink leading outside the manifests folder"),
                    ));
                }
                target
            } else {
                path
            };
            if target.is_dir() {
                if target.starts_with(dir) && meta.file_type().is_symlink() {
                    return Err(local_err(what, format!("{rel} is a symlink loop")));
                }
                stack.push((rel, target, depth + 1));
            } else {
                files.push((rel, target));
            }
        }
    }
    files.sort();
    let mut hasher = Sha256::new();
    let mut total = 0u64;
    for (rel, path) in files {
        let bytes = fs::read(&path).map_err(|e| local_err(what, format!("{rel}: {e}")))?;
        total = total.saturating_add(bytes.len() as u64);
        if total > max_bytes {
            return Err(SourceError::TooLarge {
                what: what.to_string(),
                limit: max_bytes,
            });
        }
        hasher.update((rel.len() as u64).to_be_bytes());
        hasher.update(rel.as_bytes());
        hasher.update((bytes.len() as u64).to_be_bytes());
        hasher.update(&bytes);
    }
    Ok(format!("sha256:{}", hex(&hasher.finalize())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let chart = dir.path().join("charts/app");
        fs::create_dir_all(chart.join("templates")).expect("mkdir");
        fs::write(
            chart.join("Chart.yaml"),
            "apiVersion: v2\nname: app\nversion: 1.0.0\n",
        )
        .expect("w");
        fs::write(chart.join("templates/cm.yaml"), "kind: ConfigMap\n").expect("w");
        fs::write(
            dir.path().join("charts/app.tgz"),
            crate::archive::fixtures::chart("app", "1.0.0"),
        )
        .expect("w");
        dir
    }

    #[test]
    fn directories_and_archives_inside_the_folder() {
        let dir = folder();
        let LocalChart::Directory { digest, .. } =
            resolve(dir.path(), "charts/app", 1 << 20).expect("dir")
        else {
            panic!("a directory");
        };
        // The digest follows the content.
        fs::write(
            dir.path().join("charts/app/templates/cm.yaml"),
            "kind: Secret\n",
        )
        .expect("w");
        let LocalChart::Directory {
            digest: changed, ..
        } = resolve(dir.path(), "charts/app", 1 << 20).expect("dir")
        else {
            panic!("a directory");
        };
        assert_ne!(digest, changed);
        assert!(matches!(
            resolve(dir.path(), "charts/app.tgz", 1 << 20),
            Ok(LocalChart::Archive { .. })
        ));
    }

    #[test]
    fn escapes_are_refused() {
        let dir = folder();
        let outside = tempfile::tempdir().expect("outside");
        fs::write(outside.path().join("secret"), "x").expect("w");
        for bad in [
            "../etc",
            "charts/../../x",
            "/etc/passwd",
            "",
            "other/app",
            "charts",
        ] {
            let err = resolve(dir.path(), bad, 1 << 20).expect_err(bad);
            assert!(matches!(err, SourceError::Local { .. }), "{bad}: {err}");
        }
        std::os::unix::fs::symlink(outside.path(), dir.path().join("charts/link")).expect("ln");
        let err = resolve(dir.path(), "charts/link", 1 << 20).expect_err("symlinked chart");
        assert!(
            err.to_string().contains("outside the manifests folder"),
            "{err}"
        );
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            dir.path().join("charts/app/templates/leak.yaml"),
        )
        .expect("ln");
        let err = resolve(dir.path(), "charts/app", 1 << 20).expect_err("symlink inside chart");
        assert!(
            err.to_string()
                .contains("leak.yaml is a symlink leading outside"),
            "{err}"
        );
        let err = resolve(dir.path(), "charts/missing", 1 << 20).expect_err("missing");
        assert!(
            err.to_string().starts_with("local://charts/missing: "),
            "{err}"
        );
    }

    #[test]
    fn size_is_bounded() {
        let dir = folder();
        let err = resolve(dir.path(), "charts/app", 10).expect_err("too large");
        assert!(matches!(err, SourceError::TooLarge { .. }), "{err}");
        let err = resolve(dir.path(), "charts/app.tgz", 10).expect_err("too large");
        assert!(matches!(err, SourceError::TooLarge { .. }), "{err}");
    }
}
