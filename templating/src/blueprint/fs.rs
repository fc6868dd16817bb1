//! The blueprint filesystem: every file of a blueprint in memory, by slash-separated path
//! relative to the blueprint root (where `blueprint.yaml` lives).
//!
//! Filled from an inline blueprint (`spec.blueprint.inline.filesystem`, a mandelsoft `yamlfs`
//! tree) or from a directory on disk. Templates, schemas and subinstallation files read it
//! through [`BlueprintFs::read`], which never leaves the blueprint: `..` above the root is
//! refused, and an absolute path such as Landscaper's `file: /deploy-execution.yaml` means the
//! blueprint root, as in Landscaper's projected filesystem.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::gotemplate::{FileHost, FuncError};

/// Name of the blueprint document at the root of the filesystem.
pub const BLUEPRINT_FILE_NAME: &str = "blueprint.yaml";

/// Limits for reading a blueprint directory from disk (a blueprint is configuration, not data).
pub const MAX_DIR_FILES: usize = 10_000;
pub const MAX_DIR_BYTES: u64 = 256 << 20;

/// Why a path or a filesystem source was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    #[error("{path}: path leaves the blueprint filesystem")]
    Escapes { path: String },
    #[error("{path}: file does not exist in the blueprint filesystem")]
    NotFound { path: String },
    #[error("{path}: is a directory")]
    IsDirectory { path: String },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

/// An in-memory blueprint filesystem. Cheap to clone (files are shared).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlueprintFs {
    files: BTreeMap<String, Arc<[u8]>>,
    /// Directories that exist without files in them (yamlfs `dir: {}`).
    empty_dirs: BTreeSet<String>,
}

/// Normalises a path inside the blueprint: `/`-separated, relative to the root, `.` and `..`
/// resolved; a leading `/` means the root. `..` above the root is an error.
pub fn normalize_path(path: &str) -> Result<String, FsError> {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(FsError::Escapes {
                        path: path.to_string(),
                    });
                }
            }
            s => parts.push(s),
        }
    }
    Ok(parts.join("/"))
}

impl BlueprintFs {
    pub fn new() -> BlueprintFs {
        BlueprintFs::default()
    }

    /// Adds or replaces a file (the path is normalised; a path leaving the root is an error).
    pub fn insert(&mut self, path: &str, content: impl Into<Vec<u8>>) -> Result<(), FsError> {
        let p = normalize_path(path)?;
        if p.is_empty() {
            return Err(FsError::IsDirectory {
                path: path.to_string(),
            });
        }
        self.files.insert(p, Arc::from(content.into()));
        Ok(())
    }

    /// Builder form of [`BlueprintFs::insert`] for tests and fixtures.
    ///
    /// # Panics
    /// If the path leaves the root.
    pub fn with(mut self, path: &str, content: impl Into<Vec<u8>>) -> BlueprintFs {
        self.insert(path, content).expect("valid blueprint path");
        self
    }

    /// A file's content.
    pub fn read(&self, path: &str) -> Result<&[u8], FsError> {
        let p = normalize_path(path)?;
        match self.files.get(&p) {
            Some(c) => Ok(c),
            None if self.is_dir(&p) => Err(FsError::IsDirectory {
                path: path.to_string(),
            }),
            None => Err(FsError::NotFound {
                path: path.to_string(),
            }),
        }
    }

    /// A file's content as UTF-8 text (invalid sequences replaced).
    pub fn read_string(&self, path: &str) -> Result<String, FsError> {
        self.read(path)
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    pub fn exists(&self, path: &str) -> bool {
        normalize_path(path).is_ok_and(|p| self.files.contains_key(&p) || self.is_dir(&p))
    }

    fn is_dir(&self, normalized: &str) -> bool {
        if normalized.is_empty() {
            return true;
        }
        let prefix = format!("{normalized}/");
        self.empty_dirs.contains(normalized)
            || self.empty_dirs.iter().any(|d| d.starts_with(&prefix))
            || self
                .files
                .range(prefix.clone()..)
                .next()
                .is_some_and(|(k, _)| k.starts_with(&prefix))
    }

    /// Entries of a directory: (name, is_dir), sorted by name.
    pub fn list(&self, path: &str) -> Result<Vec<(String, bool)>, FsError> {
        let dir = normalize_path(path)?;
        if self.files.contains_key(&dir) {
            return Err(FsError::Invalid {
                path: path.to_string(),
                message: "not a directory".to_string(),
            });
        }
        if !self.is_dir(&dir) {
            return Err(FsError::NotFound {
                path: path.to_string(),
            });
        }
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut out: BTreeMap<String, bool> = BTreeMap::new();
        let all = self
            .files
            .keys()
            .map(|k| (k, false))
            .chain(self.empty_dirs.iter().map(|d| (d, true)));
        for (p, dir_entry) in all {
            if let Some(rest) = p.strip_prefix(&prefix) {
                if rest.is_empty() {
                    continue;
                }
                match rest.split_once('/') {
                    Some((d, _)) => {
                        out.insert(d.to_string(), true);
                    }
                    None => {
                        out.entry(rest.to_string()).or_insert(dir_entry);
                    }
                }
            }
        }
        Ok(out.into_iter().collect())
    }

    /// All file paths, sorted.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Total size of all files in bytes.
    pub fn total_bytes(&self) -> usize {
        self.files.values().map(|c| c.len()).sum()
    }

    /// A copy of all files, as spiff's options want them.
    pub fn to_map(&self) -> BTreeMap<String, Vec<u8>> {
        self.files
            .iter()
            .map(|(k, v)| (k.clone(), v.to_vec()))
            .collect()
    }

    /// Reads an inline blueprint: a mandelsoft `yamlfs` tree, as in
    /// `spec.blueprint.inline.filesystem` or an InstallationTemplate's `blueprint.filesystem`.
    ///
    /// * a string is a file's content (`---Start Binary---`/`---End Binary---` blocks hold
    ///   base64), `null` an empty file, a number or boolean its text;
    /// * a map is a directory, unless it has a `$type`: `directory` (entries under `value`),
    ///   `yaml`/`json` (the `value` serialised), `symlink` (`value` names the target, resolved
    ///   relative to the link), anything else a file from `value` or `binary`;
    /// * lists are ignored, as yamlfs does.
    pub fn from_yamlfs(tree: &Value) -> Result<BlueprintFs, FsError> {
        let Value::Object(_) = tree else {
            return Err(FsError::Invalid {
                path: String::new(),
                message: format!(
                    "the blueprint filesystem must be a map of file names to contents, found {}",
                    json_kind(tree)
                ),
            });
        };
        let mut fs = BlueprintFs::new();
        let mut links = Vec::new();
        fs.add_yamlfs_dir("", tree, &mut links)?;
        // Symlinks: copy the target's content (files only; a link to a link is followed).
        for _ in 0..8 {
            let mut pending = Vec::new();
            for (link, target) in links.drain(..) {
                let (dir, _) = split_parent(&link);
                let full =
                    normalize_path(&format!("{dir}/{target}")).map_err(|_| FsError::Invalid {
                        path: link.clone(),
                        message: format!("symlink target {target:?} leaves the blueprint"),
                    })?;
                match fs.files.get(&full).cloned() {
                    Some(content) => {
                        fs.files.insert(link, content);
                    }
                    None => pending.push((link, target)),
                }
            }
            if pending.is_empty() {
                break;
            }
            links = pending;
        }
        if let Some((link, target)) = links.into_iter().next() {
            return Err(FsError::Invalid {
                path: link,
                message: format!("symlink target {target:?} is not a file of the blueprint"),
            });
        }
        Ok(fs)
    }

    fn add_yamlfs_dir(
        &mut self,
        dir: &str,
        tree: &Value,
        links: &mut Vec<(String, String)>,
    ) -> Result<(), FsError> {
        let Value::Object(map) = tree else {
            return Ok(());
        };
        if map.is_empty() && !dir.is_empty() {
            self.empty_dirs.insert(dir.to_string());
        }
        for (name, entry) in map {
            if name.is_empty() || name == "." || name == ".." || name.contains('/') {
                return Err(FsError::Invalid {
                    path: join(dir, name),
                    message: "invalid file name in the blueprint filesystem".to_string(),
                });
            }
            let path = join(dir, name);
            match entry {
                Value::Array(_) => {}
                Value::Object(m) => {
                    match m.get("$type") {
                        None => self.add_yamlfs_dir(&path, entry, links)?,
                        Some(t) => {
                            let value = m.get("value").unwrap_or(&Value::Null);
                            match t.as_str().unwrap_or_default() {
                                "directory" => {
                                    if value.is_null() {
                                        self.empty_dirs.insert(path.clone());
                                    } else {
                                        self.add_yamlfs_dir(&path, value, links)?;
                                    }
                                }
                                "symlink" => match value.as_str() {
                                    Some(target) => links.push((path, target.to_string())),
                                    None => {
                                        return Err(FsError::Invalid {
                                            path,
                                            message: "a symlink needs a string value".to_string(),
                                        });
                                    }
                                },
                                "yaml" => {
                                    let text = crate::gotemplate::funcs::yaml::marshal(
                                        &crate::gotemplate::Value::from_json(value),
                                    )
                                    .map_err(|message| FsError::Invalid {
                                        path: path.clone(),
                                        message,
                                    })?;
                                    self.files.insert(path, Arc::from(text.into_bytes()));
                                }
                                "json" => {
                                    let text = serde_json::to_vec(value).unwrap_or_default();
                                    self.files.insert(path, Arc::from(text));
                                }
                                _ => {
                                    let src = if value.is_null() {
                                        m.get("binary").unwrap_or(&Value::Null)
                                    } else {
                                        value
                                    };
                                    let bytes = yamlfs_file_bytes(&path, src)?;
                                    self.files.insert(path, Arc::from(bytes));
                                }
                            }
                        }
                    }
                }
                other => {
                    let bytes = yamlfs_file_bytes(&path, other)?;
                    self.files.insert(path, Arc::from(bytes));
                }
            }
        }
        Ok(())
    }

    /// Reads a blueprint directory from disk (regular files and directories; symlinks are
    /// followed only when they stay inside the directory). Hidden entries are kept: the
    /// blueprint is exactly the directory's content.
    pub fn from_dir(root: &Path) -> Result<BlueprintFs, FsError> {
        let io = |p: &Path, e: std::io::Error| FsError::Io {
            path: p.display().to_string(),
            message: e.to_string(),
        };
        let canonical_root = root.canonicalize().map_err(|e| io(root, e))?;
        if !canonical_root.is_dir() {
            return Err(FsError::Invalid {
                path: root.display().to_string(),
                message: "not a directory".to_string(),
            });
        }
        let mut fs = BlueprintFs::new();
        let mut total: u64 = 0;
        let mut stack: Vec<(PathBuf, String)> = vec![(canonical_root.clone(), String::new())];
        while let Some((dir, rel)) = stack.pop() {
            let mut entries: Vec<_> = std::fs::read_dir(&dir)
                .map_err(|e| io(&dir, e))?
                .collect::<Result<_, _>>()
                .map_err(|e| io(&dir, e))?;
            entries.sort_by_key(|e| e.file_name());
            let mut any = false;
            for entry in entries {
                any = true;
                let name = entry.file_name().to_string_lossy().into_owned();
                let path = entry.path();
                let rel_path = join(&rel, &name);
                let real = path.canonicalize().map_err(|e| io(&path, e))?;
                if !real.starts_with(&canonical_root) {
                    return Err(FsError::Escapes {
                        path: path.display().to_string(),
                    });
                }
                let meta = std::fs::metadata(&real).map_err(|e| io(&path, e))?;
                if meta.is_dir() {
                    if real == dir || canonical_root.starts_with(&real) {
                        continue; // a link back up
                    }
                    stack.push((real, rel_path));
                } else if meta.is_file() {
                    total += meta.len();
                    if fs.files.len() >= MAX_DIR_FILES || total > MAX_DIR_BYTES {
                        return Err(FsError::Invalid {
                            path: root.display().to_string(),
                            message: format!(
                                "blueprint directory is too large (limits: {MAX_DIR_FILES} files, {MAX_DIR_BYTES} bytes)"
                            ),
                        });
                    }
                    let content = std::fs::read(&real).map_err(|e| io(&path, e))?;
                    fs.files.insert(rel_path, Arc::from(content));
                }
            }
            if !any && !rel.is_empty() {
                fs.empty_dirs.insert(rel);
            }
        }
        Ok(fs)
    }

    /// The files as a yamlfs tree (text files as strings, others as binary blocks), for
    /// writing an inline blueprint.
    pub fn to_yamlfs(&self) -> Value {
        let mut root = serde_json::Map::new();
        for (path, content) in &self.files {
            let parts: Vec<&str> = path.split('/').collect();
            let mut node = &mut root;
            for dir in &parts[..parts.len() - 1] {
                let entry = node
                    .entry(dir.to_string())
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                if !entry.is_object() {
                    *entry = Value::Object(serde_json::Map::new());
                }
                node = match entry {
                    Value::Object(m) => m,
                    _ => unreachable!("made an object above"),
                };
            }
            let text = match std::str::from_utf8(content) {
                Ok(s) if !s.starts_with(BINARY_START) => s.to_string(),
                _ => {
                    use base64::Engine as _;
                    format!(
                        "{BINARY_START}\n{}\n{BINARY_END}",
                        base64::engine::general_purpose::STANDARD.encode(content)
                    )
                }
            };
            node.insert(parts[parts.len() - 1].to_string(), Value::String(text));
        }
        Value::Object(root)
    }
}

const BINARY_START: &str = "---Start Binary---";
const BINARY_END: &str = "---End Binary---";

fn yamlfs_file_bytes(path: &str, v: &Value) -> Result<Vec<u8>, FsError> {
    Ok(match v {
        Value::Null => Vec::new(),
        Value::String(s) => {
            let lines: Vec<&str> = s.split('\n').filter(|l| !l.trim().is_empty()).collect();
            if lines.len() > 2 && lines[0] == BINARY_START && lines[lines.len() - 1] == BINARY_END {
                use base64::Engine as _;
                let joined: String = lines[1..lines.len() - 1].concat();
                base64::engine::general_purpose::STANDARD
                    .decode(joined)
                    .map_err(|e| FsError::Invalid {
                        path: path.to_string(),
                        message: format!("invalid base64 in binary block: {e}"),
                    })?
            } else {
                s.as_bytes().to_vec()
            }
        }
        Value::Bool(b) => b.to_string().into_bytes(),
        Value::Number(n) => n.to_string().into_bytes(),
        Value::Array(_) | Value::Object(_) => {
            crate::gotemplate::funcs::yaml::marshal(&crate::gotemplate::Value::from_json(v))
                .map_err(|message| FsError::Invalid {
                    path: path.to_string(),
                    message,
                })?
                .into_bytes()
        }
    })
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

fn split_parent(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// Go templates read the blueprint's files through this (`include`, `readFile`, `readDir`),
/// with Go's error texts.
impl FileHost for BlueprintFs {
    fn read_file(&self, path: &str) -> Result<Vec<u8>, FuncError> {
        self.read(path).map(<[u8]>::to_vec).map_err(|e| match e {
            FsError::NotFound { .. } => FuncError::new(format!("open {path}: file does not exist")),
            FsError::IsDirectory { .. } => FuncError::new(format!("read {path}: is a directory")),
            other => FuncError::new(format!("open {path}: {other}")),
        })
    }

    fn read_dir(&self, path: &str) -> Result<Vec<(String, bool)>, FuncError> {
        self.list(path).map_err(|e| match e {
            FsError::NotFound { .. } => FuncError::new(format!("open {path}: file does not exist")),
            other => FuncError::new(format!("open {path}: {other}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_are_confined_to_the_root() {
        assert_eq!(normalize_path("/a/./b//c").unwrap(), "a/b/c");
        assert_eq!(normalize_path("a/../b").unwrap(), "b");
        assert!(matches!(
            normalize_path("../x"),
            Err(FsError::Escapes { .. })
        ));
        assert!(normalize_path("/a/../../x").is_err());
        let fs = BlueprintFs::new().with("a/b.txt", "x");
        assert_eq!(fs.read("/a/b.txt").unwrap(), b"x");
        assert!(matches!(fs.read("a"), Err(FsError::IsDirectory { .. })));
        assert!(matches!(
            fs.read("../a/b.txt"),
            Err(FsError::Escapes { .. })
        ));
    }

    #[test]
    fn yamlfs_trees_become_files() {
        let fs = BlueprintFs::from_yamlfs(&json!({
            "blueprint.yaml": "kind: Blueprint\n",
            "data": {"a.txt": "A", "empty": {}, "n": 5, "z": null},
            "typed": {"$type": "yaml", "value": {"k": "v"}},
            "j": {"$type": "json", "value": {"k": 1}},
            "bin": "---Start Binary---\naGkh\n---End Binary---\n",
            "link": {"$type": "symlink", "value": "data/a.txt"},
            "ignored": ["x"],
        }))
        .unwrap();
        assert_eq!(fs.read("blueprint.yaml").unwrap(), b"kind: Blueprint\n");
        assert_eq!(fs.read("data/a.txt").unwrap(), b"A");
        assert_eq!(fs.read("data/n").unwrap(), b"5");
        assert_eq!(fs.read("data/z").unwrap(), b"");
        assert_eq!(fs.read("typed").unwrap(), b"k: v\n");
        assert_eq!(fs.read("j").unwrap(), br#"{"k":1}"#);
        assert_eq!(fs.read("bin").unwrap(), b"hi!");
        assert_eq!(fs.read("link").unwrap(), b"A");
        assert!(!fs.exists("ignored"));
        assert_eq!(
            fs.list("data").unwrap(),
            vec![
                ("a.txt".to_string(), false),
                ("empty".to_string(), true),
                ("n".to_string(), false),
                ("z".to_string(), false)
            ]
        );
        assert_eq!(fs.list("data/empty").unwrap(), vec![]);
        assert!(BlueprintFs::from_yamlfs(&json!("x")).is_err());
        assert!(BlueprintFs::from_yamlfs(&json!({"../x": "a"})).is_err());
    }

    #[test]
    fn yamlfs_round_trips() {
        let fs = BlueprintFs::new()
            .with("blueprint.yaml", "a")
            .with("d/e/f.txt", "b")
            .with("bin", vec![0xff, 0x00]);
        assert_eq!(BlueprintFs::from_yamlfs(&fs.to_yamlfs()).unwrap(), fs);
    }

    #[test]
    fn directories_are_read_from_disk() {
        let dir = std::env::temp_dir().join(format!("bpfs-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("blueprint.yaml"), "x").unwrap();
        std::fs::write(dir.join("sub/t.yaml"), "y").unwrap();
        let fs = BlueprintFs::from_dir(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            fs.paths().collect::<Vec<_>>(),
            ["blueprint.yaml", "sub/t.yaml"]
        );
    }

    #[test]
    fn file_host_errors_read_like_go() {
        let fs = BlueprintFs::new().with("a", "1");
        assert_eq!(
            FileHost::read_file(&fs, "b").unwrap_err().message,
            "open b: file does not exist"
        );
        assert_eq!(FileHost::read_file(&fs, "/a").unwrap(), b"1");
    }
}
