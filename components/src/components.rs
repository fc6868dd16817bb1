//! The real [`ComponentSource`]: archives from the manifests folder first (a mirror), then the
//! context's own repository; everything verified by digest and cached.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use landscaper_sources::http::HttpTransport;
use landscaper_sources::{ChartCache, SecretData};

use crate::{
    Artifact, BoxFuture, ComponentError, ComponentSource, ComponentVersion, RepositoryContext,
};

/// What [`Components`] needs.
pub struct ComponentsConfig {
    /// The shared content-addressed cache (the helm chart cache).
    pub cache: Option<Arc<ChartCache>>,
    /// `kubernetes.io/dockerconfigjson` pull secrets.
    pub pull_secrets: Vec<SecretData>,
    /// Cache and archives only; no registry requests.
    pub offline: bool,
    pub transport: Arc<dyn HttpTransport>,
    /// The root of `local` repositories' `filePath` (Landscaper's `registry.local.rootPath`);
    /// without it `local` contexts are refused.
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

pub struct Components {
    config: ComponentsConfig,
    archives: RwLock<Vec<PathBuf>>,
}

impl Components {
    pub fn new(config: ComponentsConfig) -> Self {
        Components {
            config,
            archives: RwLock::new(Vec::new()),
        }
    }

    /// Replaces the set of CTF/component archives found in the manifests folder.
    pub fn set_archives(&self, archives: Vec<PathBuf>) {
        if let Ok(mut a) = self.archives.write() {
            *a = archives;
        }
    }

    /// What an archive holds.
    pub fn describe_archive(path: &Path) -> Result<Vec<ArchiveEntry>, ComponentError> {
        Err(ComponentError::archive(path, "not yet implemented"))
    }

    #[allow(dead_code)]
    fn config(&self) -> &ComponentsConfig {
        &self.config
    }
}

impl ComponentSource for Components {
    fn component_version<'a>(
        &'a self,
        ctx: &'a RepositoryContext,
        _name: &'a str,
        _version: &'a str,
    ) -> BoxFuture<'a, Result<Arc<ComponentVersion>, ComponentError>> {
        Box::pin(async move { Err(ComponentError::repo(ctx.describe(), "not yet implemented")) })
    }

    fn resource<'a>(
        &'a self,
        component: &'a ComponentVersion,
        _resource_name: &'a str,
    ) -> BoxFuture<'a, Result<Artifact, ComponentError>> {
        Box::pin(async move {
            Err(ComponentError::repo(
                component.repository_context.describe(),
                "not yet implemented",
            ))
        })
    }
}
