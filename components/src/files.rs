//! Offline repositories: Common Transport Format archives (directory, .tar, .tgz), component
//! archives and Landscaper's `local` repositories (FORMATS.md §12).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use landscaper_sources::archive::{sha256_digest, valid_sha256_digest};

use crate::archive::{
    MAX_UNPACKED_BYTES, build_artifact_set, is_gzip, safe_path, tar_files, untar,
};
use crate::descriptor::access_field;
use crate::ocm::{self, ConfigCheck, OciDocument};
use crate::{
    ArchiveEntry, Artifact, ComponentError, ComponentVersion, RepositoryContext, RepositoryKind,
    resource_access,
};

/// Bounds a single file read from an offline repository.
pub const MAX_FILE_BYTES: u64 = MAX_UNPACKED_BYTES;

fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{}: larger than {MAX_FILE_BYTES} bytes",
            path.display()
        ));
    }
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Where a file tree lives: a directory or an unpacked tar/tgz.
#[derive(Debug)]
enum Tree {
    Dir(PathBuf),
    Mem(BTreeMap<String, Vec<u8>>),
}

impl Tree {
    /// A directory, or a tar/tgz file detected by content.
    fn open(path: &Path) -> Result<Tree, ComponentError> {
        let meta =
            std::fs::metadata(path).map_err(|e| ComponentError::archive(path, e.to_string()))?;
        if meta.is_dir() {
            return Ok(Tree::Dir(path.to_path_buf()));
        }
        let bytes = read_bounded(path).map_err(|e| ComponentError::archive(path, e))?;
        let files = untar(&bytes, MAX_UNPACKED_BYTES).map_err(|e| {
            let form = if is_gzip(&bytes) { "tgz" } else { "tar" };
            ComponentError::archive(path, format!("not a readable {form} archive: {e}"))
        })?;
        Ok(Tree::Mem(files))
    }

    /// A file by relative path (`None` if absent).
    fn get(&self, rel: &str) -> Result<Option<Vec<u8>>, String> {
        let Some(rel) = safe_path(rel) else {
            return Err(format!("path {rel:?} leaves the archive"));
        };
        match self {
            Tree::Mem(files) => Ok(files.get(&rel).cloned()),
            Tree::Dir(root) => {
                let path = root.join(&rel);
                match std::fs::symlink_metadata(&path) {
                    Err(_) => Ok(None),
                    Ok(m) if m.is_dir() => Ok(None),
                    // A link could lead out of the repository.
                    Ok(m) if m.file_type().is_symlink() => Err(format!("{rel} is a symbolic link")),
                    Ok(_) => read_bounded(&path).map(Some),
                }
            }
        }
    }
}

/// A Common Transport Format archive.
#[derive(Debug)]
pub struct Ctf {
    path: PathBuf,
    tree: Tree,
    /// (repository, tag, manifest digest)
    index: Vec<(String, String, String)>,
}

fn mismatch(cv: (&str, &str), what: &str, expected: &str, actual: String) -> ComponentError {
    ComponentError::DigestMismatch {
        component: cv.0.to_string(),
        version: cv.1.to_string(),
        what: what.to_string(),
        expected: expected.to_string(),
        actual,
    }
}

impl Ctf {
    pub fn open(path: &Path) -> Result<Ctf, ComponentError> {
        Self::from_tree(path, Tree::open(path)?)
    }

    fn from_tree(path: &Path, tree: Tree) -> Result<Ctf, ComponentError> {
        let index_bytes = tree
            .get("artifact-index.json")
            .map_err(|e| ComponentError::archive(path, e))?
            .ok_or_else(|| ComponentError::archive(path, "no artifact-index.json (not a CTF)"))?;
        let index = ocm::parse_artifact_index(&index_bytes)
            .map_err(|e| ComponentError::archive(path, e))?;
        Ok(Ctf {
            path: path.to_path_buf(),
            tree,
            index,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn context(&self) -> RepositoryContext {
        RepositoryContext::for_file(RepositoryKind::Ctf {
            file_path: self.path.clone(),
        })
    }

    /// A blob by digest, verified against its name.
    pub fn blob(
        &self,
        digest: &str,
        cv: (&str, &str),
        what: &str,
    ) -> Result<Vec<u8>, ComponentError> {
        if !valid_sha256_digest(digest) {
            return Err(ComponentError::archive(
                &self.path,
                format!("{what}: invalid digest {digest:?}"),
            ));
        }
        let name = format!("blobs/{}", digest.replacen(':', ".", 1));
        let bytes = self
            .tree
            .get(&name)
            .map_err(|e| ComponentError::archive(&self.path, e))?
            .ok_or_else(|| {
                ComponentError::archive(
                    &self.path,
                    format!(
                        "{what} of {}:{}: blob {digest} is missing (truncated archive?)",
                        cv.0, cv.1
                    ),
                )
            })?;
        let actual = sha256_digest(&bytes);
        if actual != digest {
            return Err(mismatch(cv, what, digest, actual));
        }
        Ok(bytes)
    }

    /// The component versions it holds.
    pub fn entries(&self) -> Vec<(String, String, String)> {
        self.index
            .iter()
            .filter_map(|(repo, tag, digest)| {
                let name =
                    repo.strip_prefix(&format!("{}/", ocm::COMPONENT_DESCRIPTOR_NAMESPACE))?;
                Some((name.to_string(), ocm::tag_to_version(tag), digest.clone()))
            })
            .collect()
    }

    fn manifest_digest(&self, name: &str, version: &str) -> Option<String> {
        let repo = ocm::component_repository(None, crate::NameMapping::UrlPath, name);
        let tag = ocm::version_to_tag(version).unwrap_or_else(|| version.to_string());
        self.index
            .iter()
            .find(|(r, t, _)| *r == repo && (*t == tag || t == version))
            .map(|(_, _, d)| d.clone())
    }

    /// A manifest (an index is followed to its descriptor manifest).
    fn manifest(
        &self,
        digest: &str,
        cv: (&str, &str),
    ) -> Result<(String, OciDocument, Vec<u8>), ComponentError> {
        let mut digest = digest.to_string();
        for _ in 0..4 {
            let bytes = self.blob(&digest, cv, "manifest")?;
            let doc = ocm::parse_oci_document(&bytes).map_err(|e| {
                ComponentError::archive(&self.path, format!("manifest {digest}: {e}"))
            })?;
            if let Some(next) = doc.descriptor_manifest() {
                digest = next.digest.clone();
                continue;
            }
            return Ok((digest, doc, bytes));
        }
        Err(ComponentError::archive(
            &self.path,
            "indexes nested too deeply",
        ))
    }

    pub fn component_version(
        &self,
        name: &str,
        version: &str,
    ) -> Result<ComponentVersion, ComponentError> {
        let ctx = self.context();
        let not_found = || ComponentError::NotFound {
            component: name.to_string(),
            version: version.to_string(),
            repository: ctx.describe(),
        };
        let digest = self.manifest_digest(name, version).ok_or_else(not_found)?;
        let cv = (name, version);
        let (manifest_digest, doc, _) = self.manifest(&digest, cv)?;
        let descriptor =
            read_component_descriptor(&doc, |layer, what| self.blob(&layer.digest, cv, what))
                .map_err(|e| match e {
                    DescriptorReadError::NotComponent(reason) => ComponentError::Archive {
                        path: self.path.display().to_string(),
                        reason: format!("{name}:{version}: {reason}"),
                    },
                    DescriptorReadError::Component(e) => e,
                })?;
        let origin = format!("{name}:{version} in {}", ctx.describe());
        let value = crate::descriptor::parse_yaml(&descriptor, &origin)?;
        let value = ComponentVersion::with_default_repository_context(value, &ctx.raw);
        let mut cv = ComponentVersion::from_value(value, &origin, ctx.clone())?;
        if !ocm::version_matches(version, &cv.version) || cv.name != name {
            return Err(ComponentError::invalid(
                &origin,
                format!(
                    "invalid component version: the descriptor is {}:{}",
                    cv.name, cv.version
                ),
            ));
        }
        cv.manifest_digest = Some(manifest_digest);
        Ok(cv)
    }

    /// A local blob of `cv`: by layer digest (comma-separated: concatenated), or a nested
    /// manifest served as artifact set.
    pub fn local_blob(
        &self,
        cv: &ComponentVersion,
        resource: &str,
        reference: &str,
        media_type: &str,
    ) -> Result<Artifact, ComponentError> {
        let id = (cv.name.as_str(), cv.version.as_str());
        let what = format!("resource {resource:?}");
        let nested = [
            crate::content::OCI_MANIFEST_MEDIA_TYPE,
            crate::content::DOCKER_MANIFEST_MEDIA_TYPE,
            ocm::OCI_INDEX_MEDIA_TYPE,
        ]
        .contains(&media_type.split(';').next().unwrap_or_default().trim());
        if nested && !reference.contains(',') {
            let (digest, doc, bytes) = self.manifest(reference, id)?;
            let OciDocument::Manifest {
                config,
                layers,
                media_type: mt,
            } = doc
            else {
                return Err(ComponentError::archive(&self.path, "nested index"));
            };
            let mut blobs = vec![(config.digest.clone(), self.blob(&config.digest, id, &what)?)];
            for l in &layers {
                blobs.push((l.digest.clone(), self.blob(&l.digest, id, &what)?));
            }
            let mt = if mt.is_empty() {
                crate::content::OCI_MANIFEST_MEDIA_TYPE.to_string()
            } else {
                mt
            };
            let set = build_artifact_set(&mt, &digest, &bytes, &blobs);
            return Ok(Artifact::new(
                format!("{}+tar+gzip", mt.trim_end_matches("+json")),
                set,
            ));
        }
        let mut out = Vec::new();
        for part in reference.split(',') {
            out.extend(self.blob(part.trim(), id, &what)?);
        }
        Ok(Artifact::new(media_type, out))
    }

    /// An OCI artifact stored in this CTF under `repository` (any component name) with this
    /// tag or digest, as artifact set (for `ociArtifact` access resolved offline).
    pub fn oci_artifact(
        &self,
        repository: &str,
        tag: Option<&str>,
        digest: Option<&str>,
        cv: (&str, &str),
    ) -> Result<Option<Artifact>, ComponentError> {
        let Some((_, _, d)) = self.index.iter().find(|(r, t, d)| {
            r == repository
                && (digest.is_some_and(|x| x == d)
                    || (digest.is_none() && tag.is_some_and(|x| x == t)))
        }) else {
            return Ok(None);
        };
        let (digest, doc, bytes) = self.manifest(d, cv)?;
        let OciDocument::Manifest {
            config,
            layers,
            media_type,
        } = doc
        else {
            return Ok(None);
        };
        let what = format!("{repository} artifact");
        let mut blobs = vec![(config.digest.clone(), self.blob(&config.digest, cv, &what)?)];
        for l in &layers {
            blobs.push((l.digest.clone(), self.blob(&l.digest, cv, &what)?));
        }
        let mt = if media_type.is_empty() {
            crate::content::OCI_MANIFEST_MEDIA_TYPE.to_string()
        } else {
            media_type
        };
        let set = build_artifact_set(&mt, &digest, &bytes, &blobs);
        Ok(Some(Artifact::new(
            format!("{}+tar+gzip", mt.trim_end_matches("+json")),
            set,
        )))
    }

    pub fn resource(
        &self,
        cv: &ComponentVersion,
        resource_name: &str,
    ) -> Result<Artifact, ComponentError> {
        let (access, ty) = resource_access(cv, resource_name)?;
        let base = ty
            .split('/')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let content_err = |reason: String| ComponentError::Content {
            component: cv.name.clone(),
            version: cv.version.clone(),
            resource: resource_name.to_string(),
            reason,
        };
        let media_type = access_field(&access, "mediaType").unwrap_or("application/octet-stream");
        match base.as_str() {
            "localblob" | "localfilesystemblob" => {
                let reference = access_field(&access, "localReference")
                    .or_else(|| access_field(&access, "fileName"))
                    .ok_or_else(|| content_err("localBlob without localReference".into()))?;
                self.local_blob(cv, resource_name, reference, media_type)
            }
            "ociartifact" | "ociregistry" | "ociimage" => {
                let image = access_field(&access, "imageReference")
                    .ok_or_else(|| content_err("ociArtifact without imageReference".into()))?;
                let r = landscaper_sources::oci::Reference::parse(image)
                    .map_err(|e| content_err(e.to_string()))?;
                self.oci_artifact(
                    &r.repository,
                    r.tag.as_deref(),
                    r.digest.as_deref(),
                    (&cv.name, &cv.version),
                )?
                .ok_or_else(|| {
                    content_err(format!("{image} is not in the CTF {}", self.path.display()))
                })
            }
            _ => Err(content_err(format!(
                "access type {ty:?} cannot be read from a CTF"
            ))),
        }
    }

    pub fn describe(&self) -> Vec<ArchiveEntry> {
        self.entries()
            .into_iter()
            .map(|(component, version, _)| {
                let resources = self
                    .component_version(&component, &version)
                    .map(|cv| {
                        cv.v2["component"]["resources"]
                            .as_array()
                            .map_or(0, Vec::len)
                    })
                    .unwrap_or(0);
                ArchiveEntry {
                    component,
                    version,
                    resources,
                }
            })
            .collect()
    }
}

/// Why a component manifest yielded no descriptor.
pub(crate) enum DescriptorReadError {
    NotComponent(String),
    Component(ComponentError),
}

impl From<ComponentError> for DescriptorReadError {
    fn from(e: ComponentError) -> Self {
        DescriptorReadError::Component(e)
    }
}

/// Manifest → config → descriptor layer → descriptor bytes (FORMATS.md §4), with `read`
/// returning verified blobs.
pub(crate) fn read_component_descriptor(
    doc: &OciDocument,
    mut read: impl FnMut(&ocm::Layer, &str) -> Result<Vec<u8>, ComponentError>,
) -> Result<Vec<u8>, DescriptorReadError> {
    let OciDocument::Manifest { config, layers, .. } = doc else {
        return Err(DescriptorReadError::NotComponent(
            "an index where a manifest was expected".into(),
        ));
    };
    let config = match ocm::check_config(config) {
        ConfigCheck::NotAComponent(reason) => {
            return Err(DescriptorReadError::NotComponent(reason));
        }
        ConfigCheck::ReadConfig(c) => c,
    };
    let config_bytes = read(&config, "component config")?;
    let layer = ocm::descriptor_layer_from_config(&config_bytes, layers)
        .map_err(DescriptorReadError::NotComponent)?;
    let layer_bytes = read(&layer, "component descriptor layer")?;
    ocm::descriptor_from_layer(&layer.media_type, &layer_bytes)
        .map_err(DescriptorReadError::NotComponent)
}

/// An OCM component archive (one component version).
#[derive(Debug)]
pub struct ComponentArchive {
    path: PathBuf,
    tree: Tree,
    descriptor: Vec<u8>,
}

impl ComponentArchive {
    pub fn open(path: &Path) -> Result<ComponentArchive, ComponentError> {
        Self::from_tree(path, Tree::open(path)?)
    }

    fn from_tree(path: &Path, tree: Tree) -> Result<ComponentArchive, ComponentError> {
        let descriptor = tree
            .get("component-descriptor.yaml")
            .map_err(|e| ComponentError::archive(path, e))?
            .ok_or_else(|| {
                ComponentError::archive(
                    path,
                    "no component-descriptor.yaml (not a component archive)",
                )
            })?;
        Ok(ComponentArchive {
            path: path.to_path_buf(),
            tree,
            descriptor,
        })
    }

    pub fn context(&self) -> RepositoryContext {
        RepositoryContext::for_file(RepositoryKind::ComponentArchive {
            file_path: self.path.clone(),
        })
    }

    /// The component version it holds.
    pub fn component(&self) -> Result<ComponentVersion, ComponentError> {
        let ctx = self.context();
        let origin = format!("{}/component-descriptor.yaml", self.path.display());
        let value = crate::descriptor::parse_yaml(&self.descriptor, &origin)?;
        let value = ComponentVersion::with_default_repository_context(value, &ctx.raw);
        ComponentVersion::from_value(value, &origin, ctx)
    }

    pub fn component_version(
        &self,
        name: &str,
        version: &str,
    ) -> Result<ComponentVersion, ComponentError> {
        let cv = self.component()?;
        if cv.name == name && ocm::version_matches(version, &cv.version) {
            return Ok(cv);
        }
        Err(ComponentError::NotFound {
            component: name.to_string(),
            version: version.to_string(),
            repository: self.context().describe(),
        })
    }

    pub fn resource(
        &self,
        cv: &ComponentVersion,
        resource_name: &str,
    ) -> Result<Artifact, ComponentError> {
        file_blob_resource(&self.tree, &self.path, cv, resource_name)
    }

    pub fn describe(&self) -> Result<Vec<ArchiveEntry>, ComponentError> {
        let cv = self.component()?;
        Ok(vec![ArchiveEntry {
            resources: cv.v2["component"]["resources"]
                .as_array()
                .map_or(0, Vec::len),
            component: cv.name,
            version: cv.version,
        }])
    }
}

/// A `localBlob`/`localFilesystemBlob` read from `blobs/<name>` of a file tree; a name of the
/// form `sha256.<hex>` is verified; a directory is tarred on the fly (`application/x-tar`
/// content, the declared media type kept).
fn file_blob_resource(
    tree: &Tree,
    root: &Path,
    cv: &ComponentVersion,
    resource_name: &str,
) -> Result<Artifact, ComponentError> {
    let (access, ty) = resource_access(cv, resource_name)?;
    let base = ty
        .split('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let content_err = |reason: String| ComponentError::Content {
        component: cv.name.clone(),
        version: cv.version.clone(),
        resource: resource_name.to_string(),
        reason,
    };
    if base != "localblob" && base != "localfilesystemblob" {
        return Err(content_err(format!(
            "access type {ty:?} cannot be read from {}",
            root.display()
        )));
    }
    let reference = access_field(&access, "localReference")
        .or_else(|| access_field(&access, "fileName"))
        .ok_or_else(|| content_err("local blob without localReference/fileName".into()))?;
    let rel = safe_path(reference)
        .ok_or_else(|| content_err(format!("blob name {reference:?} leaves the repository")))?;
    let media_type = access_field(&access, "mediaType").unwrap_or("application/octet-stream");
    let path_in_tree = format!("blobs/{rel}");
    let bytes = match tree.get(&path_in_tree).map_err(content_err)? {
        Some(bytes) => bytes,
        None => {
            // A directory: tar it (Landscaper's local repository does).
            let files = match tree {
                Tree::Dir(dir) => collect_dir(&dir.join(&path_in_tree)).map_err(content_err)?,
                Tree::Mem(all) => {
                    let prefix = format!("{path_in_tree}/");
                    all.iter()
                        .filter_map(|(p, b)| {
                            p.strip_prefix(&prefix).map(|r| (r.to_string(), b.clone()))
                        })
                        .collect()
                }
            };
            if files.is_empty() {
                return Err(content_err(format!(
                    "blob {reference:?} not found in {}",
                    root.display()
                )));
            }
            tar_files(&files)
        }
    };
    if let Some(hex) = rel.strip_prefix("sha256.") {
        let expected = format!("sha256:{hex}");
        let actual = sha256_digest(&bytes);
        if valid_sha256_digest(&expected) && actual != expected {
            return Err(mismatch(
                (&cv.name, &cv.version),
                &format!("resource {resource_name:?}"),
                &expected,
                actual,
            ));
        }
    }
    Ok(Artifact::new(media_type, bytes))
}

/// All regular files under a directory (relative paths), bounded.
fn collect_dir(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    if !dir.is_dir() {
        return Ok(out);
    }
    let mut total = 0u64;
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((d, prefix)) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            let ft = entry.file_type().map_err(|e| e.to_string())?;
            if ft.is_dir() {
                stack.push((entry.path(), rel));
            } else if ft.is_file() {
                let bytes = read_bounded(&entry.path())?;
                total += bytes.len() as u64;
                if total > MAX_FILE_BYTES {
                    return Err(format!(
                        "{}: larger than {MAX_FILE_BYTES} bytes",
                        dir.display()
                    ));
                }
                out.insert(rel, bytes);
            }
        }
    }
    Ok(out)
}

/// A file of a local repository and what it parsed to.
pub type ListedDescriptor = (PathBuf, Result<ComponentVersion, ComponentError>);

/// Landscaper's `local` repository: every top-level file is a descriptor; blobs in `blobs/`.
#[derive(Debug)]
pub struct LocalRepository {
    root: PathBuf,
    context: RepositoryContext,
}

impl LocalRepository {
    /// `root` is the resolved directory; `context` the context as the installation gave it.
    pub fn new(root: PathBuf, context: RepositoryContext) -> Self {
        LocalRepository { root, context }
    }

    /// All descriptors (parse failures included, by file).
    pub fn list(&self) -> Result<Vec<ListedDescriptor>, ComponentError> {
        let entries = std::fs::read_dir(&self.root)
            .map_err(|e| ComponentError::repo(self.context.describe(), e.to_string()))?;
        let mut paths: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .collect();
        paths.sort();
        Ok(paths
            .into_iter()
            .map(|p| {
                let origin = p.display().to_string();
                let parsed = read_bounded(&p)
                    .map_err(|e| ComponentError::invalid(&origin, e))
                    .and_then(|b| ComponentVersion::parse(&b, &origin, self.context.clone()));
                (p, parsed)
            })
            .collect())
    }

    pub fn component_version(
        &self,
        name: &str,
        version: &str,
    ) -> Result<ComponentVersion, ComponentError> {
        let mut first_error = None;
        for (_, parsed) in self.list()? {
            match parsed {
                Ok(cv) if cv.name == name && cv.version == version => return Ok(cv),
                Ok(_) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        Err(first_error.unwrap_or_else(|| ComponentError::NotFound {
            component: name.to_string(),
            version: version.to_string(),
            repository: self.context.describe(),
        }))
    }

    pub fn resource(
        &self,
        cv: &ComponentVersion,
        resource_name: &str,
    ) -> Result<Artifact, ComponentError> {
        file_blob_resource(&Tree::Dir(self.root.clone()), &self.root, cv, resource_name)
    }
}

/// A CTF or a component archive, detected by content (opened once).
#[derive(Debug)]
pub enum AnyArchive {
    Ctf(Ctf),
    ComponentArchive(ComponentArchive),
}

impl AnyArchive {
    pub fn open(path: &Path) -> Result<AnyArchive, ComponentError> {
        Self::detect(path)?.ok_or_else(|| {
            ComponentError::archive(
                path,
                "neither a CTF (artifact-index.json) nor a component archive (component-descriptor.yaml)",
            )
        })
    }

    /// `None` for a readable directory or archive that is neither (e.g. a chart .tgz).
    pub fn detect(path: &Path) -> Result<Option<AnyArchive>, ComponentError> {
        let tree = Tree::open(path)?;
        let has = |name: &str| tree.get(name).ok().flatten().is_some();
        if has("artifact-index.json") {
            return Ctf::from_tree(path, tree).map(|c| Some(AnyArchive::Ctf(c)));
        }
        if has("component-descriptor.yaml") {
            return ComponentArchive::from_tree(path, tree)
                .map(|a| Some(AnyArchive::ComponentArchive(a)));
        }
        Ok(None)
    }

    pub fn component_version(
        &self,
        name: &str,
        version: &str,
    ) -> Result<ComponentVersion, ComponentError> {
        match self {
            AnyArchive::Ctf(c) => c.component_version(name, version),
            AnyArchive::ComponentArchive(a) => a.component_version(name, version),
        }
    }

    pub fn resource(
        &self,
        cv: &ComponentVersion,
        resource_name: &str,
    ) -> Result<Artifact, ComponentError> {
        match self {
            AnyArchive::Ctf(c) => c.resource(cv, resource_name),
            AnyArchive::ComponentArchive(a) => a.resource(cv, resource_name),
        }
    }

    pub fn describe(&self) -> Result<Vec<ArchiveEntry>, ComponentError> {
        match self {
            AnyArchive::Ctf(c) => Ok(c.describe()),
            AnyArchive::ComponentArchive(a) => a.describe(),
        }
    }
}

/// Whether a file or directory is a CTF or a component archive (for the manifests folder
/// scan).
pub fn archive_kind(path: &Path) -> Option<RepositoryKind> {
    let file_path = path.to_path_buf();
    match AnyArchive::open(path).ok()? {
        AnyArchive::Ctf(_) => Some(RepositoryKind::Ctf { file_path }),
        AnyArchive::ComponentArchive(_) => Some(RepositoryKind::ComponentArchive { file_path }),
    }
}

/// Writes a directory CTF in OCM's layout (FORMATS.md §4, §12.1): component versions with
/// their local blobs as layers, and plain OCI artifacts (e.g. a chart an `ociArtifact` access
/// names, so that an air-gapped host finds it in the CTF). For tests and tools.
#[derive(Debug, Default)]
pub struct CtfWriter {
    blobs: BTreeMap<String, Vec<u8>>,
    index: Vec<(String, String, String)>,
}

impl CtfWriter {
    pub fn new() -> Self {
        Self::default()
    }

    fn blob(&mut self, bytes: Vec<u8>) -> serde_json::Value {
        let digest = sha256_digest(&bytes);
        let size = bytes.len();
        self.blobs.insert(digest.clone(), bytes);
        serde_json::json!({"digest": digest, "size": size})
    }

    fn manifest(&mut self, repository: String, tag: String, manifest: serde_json::Value) -> String {
        let bytes = serde_json::to_vec(&manifest).unwrap_or_default();
        let digest = sha256_digest(&bytes);
        self.blobs.insert(digest.clone(), bytes);
        self.index
            .retain(|(r, t, _)| !(*r == repository && *t == tag));
        self.index.push((repository, tag, digest.clone()));
        digest
    }

    /// A component version; `local_blobs` (media type, bytes) become layers (a resource's
    /// `localReference` is the blob's `sha256:` digest). Returns the manifest digest.
    pub fn add_component(
        &mut self,
        descriptor: &[u8],
        local_blobs: &[(String, Vec<u8>)],
    ) -> Result<String, ComponentError> {
        let ctx = RepositoryContext::for_file(RepositoryKind::Ctf {
            file_path: "ctf".into(),
        });
        let value = crate::descriptor::parse_yaml(descriptor, "CTF writer")?;
        let value = ComponentVersion::with_default_repository_context(value, &ctx.raw);
        let cv = ComponentVersion::from_value(value, "CTF writer", ctx)?;
        let tag = ocm::version_to_tag(&cv.version).ok_or_else(|| {
            ComponentError::invalid(
                "CTF writer",
                format!("version {} is no semantic version", cv.version),
            )
        })?;
        let mut layer = self.blob(ocm::descriptor_tar(descriptor));
        layer["mediaType"] = ocm::DESCRIPTOR_TAR_MEDIA_TYPE.into();
        let mut layers = vec![layer.clone()];
        for (media_type, bytes) in local_blobs {
            let mut l = self.blob(bytes.clone());
            l["mediaType"] = media_type.as_str().into();
            layers.push(l);
        }
        let config = serde_json::to_vec(&serde_json::json!({"componentDescriptorLayer": layer}))
            .unwrap_or_default();
        let mut config = self.blob(config);
        config["mediaType"] = ocm::CONFIG_MEDIA_TYPE.into();
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": crate::content::OCI_MANIFEST_MEDIA_TYPE,
            "config": config,
            "layers": layers,
            "annotations": {"software.ocm.componentversion": format!("{}:{}", cv.name, cv.version)},
        });
        Ok(self.manifest(
            ocm::component_repository(None, crate::NameMapping::UrlPath, &cv.name),
            tag,
            manifest,
        ))
    }

    /// A plain OCI artifact under `repository:tag` (config and layers as (media type, bytes)).
    pub fn add_artifact(
        &mut self,
        repository: &str,
        tag: &str,
        config: (&str, Vec<u8>),
        layers: &[(String, Vec<u8>)],
    ) -> String {
        let mut c = self.blob(config.1);
        c["mediaType"] = config.0.into();
        let ls: Vec<serde_json::Value> = layers
            .iter()
            .map(|(mt, bytes)| {
                let mut l = self.blob(bytes.clone());
                l["mediaType"] = mt.as_str().into();
                l
            })
            .collect();
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": crate::content::OCI_MANIFEST_MEDIA_TYPE,
            "config": c,
            "layers": ls,
        });
        self.manifest(repository.to_string(), tag.to_string(), manifest)
    }

    /// Writes the CTF as a directory (created if needed).
    pub fn write_dir(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir.join("blobs"))?;
        for (digest, bytes) in &self.blobs {
            std::fs::write(dir.join("blobs").join(digest.replacen(':', ".", 1)), bytes)?;
        }
        std::fs::write(dir.join("artifact-index.json"), self.index_json())
    }

    /// The CTF as one tar (artifact-index.json first, as OCM writes it); gzip it for `.tgz`.
    pub fn to_tar(&self) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let mut append = |path: &str, bytes: &[u8]| {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(1_640_995_200);
            header.set_entry_type(tar::EntryType::Regular);
            let _ = builder.append_data(&mut header, path, bytes);
        };
        append("artifact-index.json", &self.index_json());
        for (digest, bytes) in &self.blobs {
            append(&format!("blobs/{}", digest.replacen(':', ".", 1)), bytes);
        }
        builder.into_inner().unwrap_or_default()
    }

    fn index_json(&self) -> Vec<u8> {
        let artifacts: Vec<serde_json::Value> = self
            .index
            .iter()
            .map(|(r, t, d)| serde_json::json!({"repository": r, "tag": t, "digest": d}))
            .collect();
        serde_json::to_vec(&serde_json::json!({"schemaVersion": 1, "artifacts": artifacts}))
            .unwrap_or_default()
    }
}
