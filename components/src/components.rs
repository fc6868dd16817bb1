//! The real [`ComponentSource`]: archives from the manifests folder first (a mirror), then the
//! context's own repository; everything verified by digest and cached.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use landscaper_sources::http::HttpTransport;
use landscaper_sources::{ChartCache, SecretData};

use crate::files::{AnyArchive, LocalRepository};
use crate::{
    Artifact, BoxFuture, ComponentError, ComponentSource, ComponentVersion, RepositoryContext,
    RepositoryKind,
};

/// What [`Components`] needs.
#[derive(Clone)]
pub struct ComponentsConfig {
    /// The shared content-addressed cache (the helm chart cache).
    pub cache: Option<Arc<ChartCache>>,
    /// `kubernetes.io/dockerconfigjson` pull secrets.
    pub pull_secrets: Vec<SecretData>,
    /// Cache and archives only; no registry requests.
    pub offline: bool,
    pub transport: Arc<dyn HttpTransport>,
    /// The root that `local`, CTF and component-archive contexts' relative `filePath`s are
    /// resolved against (Landscaper's `registry.local.rootPath`); without it such contexts
    /// are refused. Paths leaving the root are refused.
    pub local_root: Option<PathBuf>,
    /// Limits of one registry request.
    pub request_timeout: std::time::Duration,
    pub max_blob_bytes: u64,
}

impl ComponentsConfig {
    pub fn new(transport: Arc<dyn HttpTransport>) -> Self {
        ComponentsConfig {
            cache: None,
            pull_secrets: Vec::new(),
            offline: false,
            transport,
            local_root: None,
            request_timeout: landscaper_sources::DEFAULT_REQUEST_TIMEOUT,
            max_blob_bytes: landscaper_sources::DEFAULT_MAX_ARTIFACT_BYTES,
        }
    }
}

/// One component version held by an archive.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveEntry {
    pub component: String,
    pub version: String,
    pub resources: usize,
}

/// What identifies an archive's state: for a file its mtime and size, for a directory also
/// those of its index files (rewritten in place, they do not change the directory's mtime).
type Stamp = Vec<(Option<SystemTime>, u64)>;

/// Archives opened, by path, with the stamp they were opened at.
type OpenedArchives = BTreeMap<PathBuf, (Stamp, Arc<AnyArchive>)>;

fn stamp(path: &Path) -> Stamp {
    let one = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| (m.modified().ok(), m.len()))
            .unwrap_or((None, 0))
    };
    let mut s = vec![one(path)];
    if path.is_dir() {
        s.push(one(&path.join("artifact-index.json")));
        s.push(one(&path.join("component-descriptor.yaml")));
    }
    s
}

pub struct Components {
    pub(crate) config: ComponentsConfig,
    // Shared by the views of [`Components::with_pull_secrets`].
    archives: Arc<RwLock<Vec<PathBuf>>>,
    opened: Arc<Mutex<OpenedArchives>>,
    /// Cache digests read for a component version (by its manifest digest), for pinning.
    blobs: Arc<Mutex<BTreeMap<String, BTreeSet<String>>>>,
    /// Extra trusted CA certificates (PEM) for registries.
    registry_ca: Arc<RwLock<Option<Vec<u8>>>>,
}

impl Components {
    pub fn new(config: ComponentsConfig) -> Self {
        Components {
            config,
            archives: Arc::default(),
            opened: Arc::default(),
            blobs: Arc::default(),
            registry_ca: Arc::default(),
        }
    }

    /// The same repositories (archives, cache, trusted CAs shared with `self`) read with
    /// `secrets` (a Context's `registryPullSecrets`) before the configured pull secrets.
    pub fn with_pull_secrets(&self, secrets: Vec<SecretData>) -> Components {
        let mut config = self.config.clone();
        let global = std::mem::replace(&mut config.pull_secrets, secrets);
        config.pull_secrets.extend(global);
        Components {
            config,
            archives: self.archives.clone(),
            opened: self.opened.clone(),
            blobs: self.blobs.clone(),
            registry_ca: self.registry_ca.clone(),
        }
    }

    /// Trusts these CA certificates (PEM) for registries, besides the system's.
    pub fn set_registry_ca(&self, pem: Option<Vec<u8>>) {
        if let Ok(mut ca) = self.registry_ca.write() {
            *ca = pem;
        }
    }

    pub(crate) fn registry_ca(&self) -> Option<Vec<u8>> {
        self.registry_ca.read().ok().and_then(|c| c.clone())
    }

    pub(crate) fn record_blobs(&self, manifest_digest: &str, digests: Vec<String>) {
        if let Ok(mut map) = self.blobs.lock() {
            map.entry(manifest_digest.to_string())
                .or_default()
                .extend(digests);
        }
    }

    pub(crate) fn record_resource_blobs(&self, cv: &ComponentVersion, digests: Vec<String>) {
        if let Some(d) = &cv.manifest_digest {
            self.record_blobs(d, digests);
        }
    }

    /// Pins everything cached for these component versions (manifests, descriptors and the
    /// resources read so far) for `owner` (e.g. an installation), replacing its earlier pins.
    pub fn pin(&self, owner: &str, components: &[Arc<ComponentVersion>]) {
        let Some(cache) = &self.config.cache else {
            return;
        };
        let map = self.blobs.lock().map(|m| m.clone()).unwrap_or_default();
        let mut digests = BTreeSet::new();
        for cv in components {
            if let Some(d) = &cv.manifest_digest {
                digests.insert(d.clone());
                digests.extend(map.get(d).into_iter().flatten().cloned());
            }
        }
        cache.set_pins(owner, digests);
    }

    /// `doctor`: whether a repository context is usable: a registry answers its API (with
    /// the pull secrets; refused when offline), a file repository exists below the local root
    /// and (CTF, component archive) opens.
    pub async fn check_repository(&self, ctx: &RepositoryContext) -> Result<(), ComponentError> {
        match &ctx.kind {
            RepositoryKind::Oci { .. } if self.config.offline => Err(ComponentError::repo(
                ctx.describe(),
                "offline: registries are not contacted",
            )),
            RepositoryKind::Oci { .. } => crate::registry::ping(self, ctx).await,
            RepositoryKind::Local { file_path } => {
                let root = self.resolve_file(file_path, ctx)?;
                if root.is_dir() {
                    Ok(())
                } else {
                    Err(ComponentError::repo(ctx.describe(), "no such directory"))
                }
            }
            RepositoryKind::Ctf { file_path } | RepositoryKind::ComponentArchive { file_path } => {
                let ctf = matches!(ctx.kind, RepositoryKind::Ctf { .. });
                let path = self.resolve_file(file_path, ctx)?;
                self.open_kind(&path, ctf).map(|_| ())
            }
        }
    }

    /// `doctor`: verifies every cached blob (damaged ones are removed): (blobs, bytes,
    /// removed); `None` without a cache.
    pub fn verify_cache(&self) -> Option<(usize, u64, usize)> {
        self.config.cache.as_ref().map(|c| c.verify())
    }

    /// Releases the pins of `owner`.
    pub fn unpin(&self, owner: &str) {
        if let Some(cache) = &self.config.cache {
            cache.clear_pins(owner);
        }
    }

    /// Replaces the set of CTF/component archives found in the manifests folder.
    pub fn set_archives(&self, archives: Vec<PathBuf>) {
        if let Ok(mut a) = self.archives.write() {
            *a = archives;
        }
    }

    /// What an archive (CTF or component archive) holds.
    pub fn describe_archive(path: &Path) -> Result<Vec<ArchiveEntry>, ComponentError> {
        AnyArchive::open(path)?.describe()
    }

    /// Opens (or reuses while the file is unchanged) an archive.
    fn open(&self, path: &Path) -> Result<Arc<AnyArchive>, ComponentError> {
        let s = stamp(path);
        if let Ok(map) = self.opened.lock()
            && let Some((old, opened)) = map.get(path)
            && *old == s
        {
            return Ok(opened.clone());
        }
        let opened = Arc::new(AnyArchive::open(path)?);
        if let Ok(mut map) = self.opened.lock() {
            map.insert(path.to_path_buf(), (s, opened.clone()));
        }
        Ok(opened)
    }

    /// Whether `path` is opened and unchanged (then it is a known archive).
    fn is_open(&self, path: &Path) -> bool {
        let s = stamp(path);
        self.opened
            .lock()
            .is_ok_and(|m| m.get(path).is_some_and(|(old, _)| *old == s))
    }

    /// Opens a file repository of the expected kind.
    fn open_kind(&self, path: &Path, ctf: bool) -> Result<Arc<AnyArchive>, ComponentError> {
        let opened = self.open(path)?;
        match (&*opened, ctf) {
            (AnyArchive::Ctf(_), true) | (AnyArchive::ComponentArchive(_), false) => Ok(opened),
            (_, true) => Err(ComponentError::archive(path, "not a CTF")),
            (_, false) => Err(ComponentError::archive(path, "not a component archive")),
        }
    }

    /// A context's `filePath` below the local root.
    fn resolve_file(
        &self,
        file_path: &Path,
        ctx: &RepositoryContext,
    ) -> Result<PathBuf, ComponentError> {
        let root = self.config.local_root.as_ref().ok_or_else(|| {
            ComponentError::InvalidRepositoryContext {
                reason: format!(
                    "{}: file repositories are not enabled (no local root configured)",
                    ctx.describe()
                ),
            }
        })?;
        if file_path.is_absolute()
            || file_path
                .components()
                .any(|c| matches!(c, Component::ParentDir))
        {
            return Err(ComponentError::InvalidRepositoryContext {
                reason: format!(
                    "{}: filePath must stay below the local root",
                    ctx.describe()
                ),
            });
        }
        Ok(root.join(file_path))
    }

    /// The archives from the manifests folder, in order.
    fn registered(&self) -> Vec<PathBuf> {
        self.archives.read().map(|a| a.clone()).unwrap_or_default()
    }

    /// Looks `name:version` up in the registered archives (the mirror). An archive that
    /// cannot be read does not stop the search (other installations stay unaffected); its
    /// error is returned alongside for when nothing else has the component.
    fn lookup_archives(
        &self,
        name: &str,
        version: &str,
    ) -> (Option<ComponentVersion>, Option<ComponentError>) {
        let mut first_error = None;
        for path in self.registered() {
            // Something else in the folder (a chart .tgz, a plain directory): not an archive.
            if !self.is_open(&path) && matches!(AnyArchive::detect(&path), Ok(None)) {
                continue;
            }
            let found = self
                .open(&path)
                .and_then(|a| a.component_version(name, version));
            match found {
                Ok(cv) => return (Some(cv), None),
                Err(ComponentError::NotFound { .. }) => {}
                Err(e) => {
                    tracing::warn!(archive = %path.display(), error = %e, "component archive unusable");
                    first_error.get_or_insert(e);
                }
            }
        }
        (None, first_error)
    }

    async fn lookup(
        &self,
        ctx: &RepositoryContext,
        name: &str,
        version: &str,
    ) -> Result<ComponentVersion, ComponentError> {
        let (found, archive_error) = self.lookup_archives(name, version);
        if let Some(cv) = found {
            return Ok(cv);
        }
        let result = match &ctx.kind {
            RepositoryKind::Local { file_path } => {
                self.resolve_file(file_path, ctx).and_then(|root| {
                    LocalRepository::new(root, ctx.clone()).component_version(name, version)
                })
            }
            RepositoryKind::Ctf { file_path } | RepositoryKind::ComponentArchive { file_path } => {
                let ctf = matches!(ctx.kind, RepositoryKind::Ctf { .. });
                self.resolve_file(file_path, ctx)
                    .and_then(|path| self.open_kind(&path, ctf))
                    .and_then(|a| a.component_version(name, version))
                    .map(|mut cv| {
                        cv.repository_context = ctx.clone();
                        cv
                    })
            }
            RepositoryKind::Oci { .. } => {
                crate::registry::component_version(self, ctx, name, version).await
            }
        };
        match (result, archive_error) {
            // Nothing has it, and an archive of the folder could not be read: on an air-gapped
            // host that is the likelier reason; both are named.
            (Err(err), Some(ComponentError::Archive { path, reason })) => {
                Err(ComponentError::Archive {
                    path,
                    reason: format!("{reason} (looked there for {name}:{version}; then {err})"),
                })
            }
            (Err(err), Some(other)) => Err(ComponentError::Archive {
                path: "manifests folder".into(),
                reason: format!("{other} (looked there for {name}:{version}; then {err})"),
            }),
            (result, _) => result,
        }
    }

    async fn read_resource(
        &self,
        cv: &ComponentVersion,
        resource_name: &str,
    ) -> Result<Artifact, ComponentError> {
        let ctx = &cv.repository_context;
        match &ctx.kind {
            RepositoryKind::Ctf { file_path } | RepositoryKind::ComponentArchive { file_path } => {
                let ctf = matches!(ctx.kind, RepositoryKind::Ctf { .. });
                // Found in a registered archive (its context names the archive's own path)?
                let path = if self.registered().contains(file_path) {
                    file_path.clone()
                } else {
                    self.resolve_file(file_path, ctx)?
                };
                match self.open_kind(&path, ctf)?.resource(cv, resource_name) {
                    // An external artifact not in this CTF: from another registered CTF, else
                    // from its registry.
                    Err(err @ ComponentError::Content { .. })
                        if err.to_string().contains("is not in the CTF") =>
                    {
                        if let Some(found) = self.mirrored_artifact(cv, resource_name)? {
                            return Ok(found);
                        }
                        if self.config.offline {
                            return Err(err);
                        }
                        crate::registry::resource(self, cv, resource_name).await
                    }
                    other => other,
                }
            }
            RepositoryKind::Local { file_path } => {
                let root = self.resolve_file(file_path, ctx)?;
                LocalRepository::new(root, ctx.clone()).resource(cv, resource_name)
            }
            RepositoryKind::Oci { .. } => {
                if let Some(found) = self.mirrored_artifact(cv, resource_name)? {
                    return Ok(found);
                }
                crate::registry::resource(self, cv, resource_name).await
            }
        }
    }

    /// An `ociArtifact` resource found in a registered CTF (same repository path and tag or
    /// digest; the registry host is not compared): the air-gapped mirror of external artifacts.
    fn mirrored_artifact(
        &self,
        cv: &ComponentVersion,
        resource_name: &str,
    ) -> Result<Option<Artifact>, ComponentError> {
        let (access, ty) = crate::resource_access(cv, resource_name)?;
        let base = crate::access_base_type(&ty);
        if !matches!(base.as_str(), "ociartifact" | "ociregistry" | "ociimage") {
            return Ok(None);
        }
        let Some(image) = crate::descriptor::access_field(&access, "imageReference") else {
            return Ok(None);
        };
        let Ok(reference) = landscaper_sources::oci::Reference::parse(image) else {
            return Ok(None);
        };
        for path in self.registered() {
            let Ok(archive) = self.open(&path) else {
                continue;
            };
            if let AnyArchive::Ctf(ctf) = &*archive
                && let Some(found) = ctf.oci_artifact(
                    &reference.repository,
                    reference.tag.as_deref(),
                    reference.digest.as_deref(),
                    (&cv.name, &cv.version),
                )?
            {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }
}

impl ComponentSource for Components {
    fn component_version<'a>(
        &'a self,
        ctx: &'a RepositoryContext,
        name: &'a str,
        version: &'a str,
    ) -> BoxFuture<'a, Result<Arc<ComponentVersion>, ComponentError>> {
        Box::pin(async move { self.lookup(ctx, name, version).await.map(Arc::new) })
    }

    fn resource<'a>(
        &'a self,
        component: &'a ComponentVersion,
        resource_name: &'a str,
    ) -> BoxFuture<'a, Result<Artifact, ComponentError>> {
        Box::pin(async move { self.read_resource(component, resource_name).await })
    }
}
