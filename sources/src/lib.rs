//! Chart sources: fetching Helm charts (and, through [`oci`], any OCI artifact) from
//!
//! - `chart.archive.raw` (a base64 `.tgz`),
//! - `chart.archive.remote.url` (HTTP(S) GET),
//! - `chart.helmChartRepo` (a Helm chart repository's `index.yaml`, with the Context's
//!   `helmChartRepoCredentials`),
//! - `chart.ref` (an OCI registry, Helm's media types, `registryPullSecrets`),
//! - `chart.ref: local://charts/NAME` (the manifests folder; the appliance's extension),
//!
//! and keeping what was fetched in a content-addressed [`cache::ChartCache`], so that restarts
//! and reconciles work while a registry or repository is unreachable.
//!
//! The deployer calls [`ChartSources::fetch`] with the provider configuration's `chart`
//! ([`ChartSpec`]) and a [`FetchContext`] (the Context's configurations, the Secrets already
//! read, the manifests folder and a deadline) and gets a [`FetchedChart`]: `.tgz` bytes or a
//! directory, a digest and where it came from. Errors ([`SourceError`]) name the source and say
//! whether retrying can help.
//!
//! When the cache answers instead of the network:
//! - immutable names (an OCI digest, an exact version in a helm repository): the cache first,
//!   the network only on a miss;
//! - movable names (an OCI tag, a URL, a helm repository version range): the network first; the
//!   cache only when the network fails in a retryable way (unreachable, timeout, 5xx), never
//!   when the server says "not found" or "refused".

pub mod archive;
pub mod cache;
pub mod error;
pub mod helmrepo;
pub mod http;
pub mod local;
pub mod oci;
pub mod spec;
pub mod testing;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;

pub use cache::ChartCache;
pub use error::SourceError;
pub use oci::SecretData;
pub use spec::{CACHE_HELM_CHARTS_ANNOTATION, ChartSpec, helm_repo_secret_names};

use crate::helmrepo::{Index, RepoAuths, normalize_url};
use crate::http::{HttpRequest, HttpTransport, get_following};
use crate::oci::{Limits, Reference, RegistrySession, status_error, transport_error};
use crate::spec::ChartSource;

/// Default bound of one artifact (and of a repository index): 64 MiB.
pub const DEFAULT_MAX_ARTIFACT_BYTES: u64 = 64 << 20;
/// Default time allowed for one HTTP request.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Limits of the sources.
#[derive(Debug, Clone, Copy)]
pub struct SourcesConfig {
    /// Largest artifact (compressed) and largest index; a chart may unpack to 4× this.
    pub max_artifact_bytes: u64,
    /// Time allowed for one request (shortened by the fetch deadline).
    pub request_timeout: Duration,
}

impl Default for SourcesConfig {
    fn default() -> Self {
        SourcesConfig {
            max_artifact_bytes: DEFAULT_MAX_ARTIFACT_BYTES,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

/// What the deployer knows about the deploy item's surroundings.
#[derive(Debug, Clone, Default)]
pub struct FetchContext {
    /// The Context's `configurations` (for `helmChartRepoCredentials`).
    pub configurations: BTreeMap<String, Value>,
    /// The Context's `registryPullSecrets`, already read.
    pub pull_secrets: Vec<SecretData>,
    /// Secrets of the Context's namespace named by `helmChartRepoCredentials` `secretRef`s
    /// (see [`helm_repo_secret_names`]), by name.
    pub secrets: BTreeMap<String, SecretData>,
    /// The manifests folder, for `local://` charts.
    pub manifests_dir: Option<PathBuf>,
    /// No request runs past this instant.
    pub deadline: Option<tokio::time::Instant>,
}

/// A chart as fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChartContent {
    /// A `.tgz` (checked to be a gzipped tar with `<dir>/Chart.yaml`).
    Archive(Vec<u8>),
    /// A chart directory inside the manifests folder.
    Directory(PathBuf),
}

/// Where a chart came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// E.g. `oci 127.0.0.1:5000/charts/app:0.1.0`, `helm repository https://r (app 1.0.0)`.
    pub source: String,
    /// Served from the cache instead of the network.
    pub from_cache: bool,
}

/// The result of [`ChartSources::fetch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedChart {
    pub content: ChartContent,
    /// `sha256:<hex>` of the archive, or of the directory tree.
    pub digest: String,
    pub origin: Origin,
}

/// Fetches charts. Cheap to share (`Arc` inside).
#[derive(Clone)]
pub struct ChartSources {
    transport: Arc<dyn HttpTransport>,
    cache: Option<Arc<ChartCache>>,
    config: SourcesConfig,
}

impl std::fmt::Debug for ChartSources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChartSources")
            .field("cache", &self.cache)
            .field("config", &self.config)
            .finish()
    }
}

impl ChartSources {
    pub fn new(
        transport: Arc<dyn HttpTransport>,
        cache: Option<ChartCache>,
        config: SourcesConfig,
    ) -> Self {
        ChartSources {
            transport,
            cache: cache.map(Arc::new),
            config,
        }
    }

    /// As [`ChartSources::new`] with a cache shared with other users (the component layer
    /// uses the same instance, so that its pins protect entries from this one's evictions).
    pub fn with_shared_cache(
        transport: Arc<dyn HttpTransport>,
        cache: Option<Arc<ChartCache>>,
        config: SourcesConfig,
    ) -> Self {
        ChartSources {
            transport,
            cache,
            config,
        }
    }

    /// The cache, to share it (see [`ChartSources::with_shared_cache`]).
    pub fn shared_cache(&self) -> Option<Arc<ChartCache>> {
        self.cache.clone()
    }

    /// The real HTTP client and a cache at `cache_dir` (e.g. `<data>/chart-cache`), default
    /// limits.
    pub fn with_cache_dir(cache_dir: impl Into<PathBuf>) -> Result<Self, cache::CacheError> {
        let cache = ChartCache::open(cache_dir, cache::DEFAULT_CACHE_MAX_BYTES)?;
        Ok(Self::new(
            Arc::new(http::HyperTransport::new()),
            Some(cache),
            SourcesConfig::default(),
        ))
    }

    pub fn cache(&self) -> Option<&ChartCache> {
        self.cache.as_deref()
    }

    /// Fetches the chart `spec` names. See the crate documentation.
    pub async fn fetch(
        &self,
        spec: &ChartSpec,
        ctx: &FetchContext,
    ) -> Result<FetchedChart, SourceError> {
        match spec.source()? {
            ChartSource::Raw(raw) => self.fetch_raw(raw).await,
            ChartSource::Url(url) => self.fetch_url(url, ctx).await,
            ChartSource::HelmRepo(repo) => {
                self.fetch_helm_repo(
                    &repo.helm_chart_repo_url,
                    &repo.helm_chart_name,
                    &repo.helm_chart_version,
                    ctx,
                )
                .await
            }
            ChartSource::Oci(reference) => self.fetch_oci(reference, ctx).await,
            ChartSource::Local(rel) => self.fetch_local(rel, ctx).await,
        }
    }

    fn timeout(&self, ctx: &FetchContext, what: &str) -> Result<Duration, SourceError> {
        Limits {
            max_blob_bytes: self.config.max_artifact_bytes,
            timeout: self.config.request_timeout,
            deadline: ctx.deadline,
        }
        .request_timeout(what)
    }

    /// Size and archive check, off the async workers (unpacking may take a while).
    async fn checked(&self, what: &str, bytes: Vec<u8>) -> Result<Vec<u8>, SourceError> {
        if bytes.len() as u64 > self.config.max_artifact_bytes {
            return Err(SourceError::TooLarge {
                what: what.to_string(),
                limit: self.config.max_artifact_bytes,
            });
        }
        let max_unpacked = self.config.max_artifact_bytes.saturating_mul(4);
        let what_owned = what.to_string();
        blocking(move || {
            archive::check_chart_archive(&what_owned, &bytes, max_unpacked).map(|_| bytes)
        })
        .await
        .unwrap_or_else(|| {
            Err(SourceError::InvalidResponse {
                what: what.to_string(),
                detail: "the archive check was interrupted".into(),
            })
        })
    }

    /// Stores the bytes in the cache under `keys`; returns their digest and the bytes.
    async fn remember(&self, bytes: Vec<u8>, keys: Vec<String>) -> (String, Vec<u8>) {
        let Some(cache) = self.cache.clone() else {
            return (archive::sha256_digest(&bytes), bytes);
        };
        let shared = Arc::new(bytes);
        let for_cache = shared.clone();
        let stored = blocking(move || cache.put_with_keys(&for_cache, &keys)).await;
        let bytes = Arc::try_unwrap(shared).unwrap_or_else(|shared| (*shared).clone());
        match stored {
            Some(Ok(digest)) => (digest, bytes),
            Some(Err(e)) => {
                tracing::warn!(error = %e, "chart cache: not stored");
                (archive::sha256_digest(&bytes), bytes)
            }
            None => (archive::sha256_digest(&bytes), bytes),
        }
    }

    async fn cached_blob(&self, digest: &str) -> Option<Vec<u8>> {
        let cache = self.cache.clone()?;
        let digest = digest.to_string();
        blocking(move || cache.get_blob(&digest)).await.flatten()
    }

    async fn cached(&self, key: &str, source: &str) -> Option<FetchedChart> {
        let cache = self.cache.clone()?;
        let key = key.to_string();
        let (digest, bytes) = blocking(move || cache.get_by_key(&key)).await.flatten()?;
        Some(FetchedChart {
            content: ChartContent::Archive(bytes),
            digest,
            origin: Origin {
                source: source.to_string(),
                from_cache: true,
            },
        })
    }

    /// The network error, or the cached chart when the error is retryable and the cache has it.
    async fn fallback(
        &self,
        err: SourceError,
        key: &str,
        source: &str,
    ) -> Result<FetchedChart, SourceError> {
        if err.is_retryable()
            && let Some(hit) = self.cached(key, source).await
        {
            tracing::warn!(source, error = %err, "chart source unavailable; serving the cached chart");
            return Ok(hit);
        }
        Err(err)
    }

    async fn fetch_raw(&self, raw: &str) -> Result<FetchedChart, SourceError> {
        let what = "chart.archive.raw";
        let compact: String = raw.split_whitespace().collect();
        if compact.len() as u64 / 4 * 3 > self.config.max_artifact_bytes {
            return Err(SourceError::TooLarge {
                what: what.into(),
                limit: self.config.max_artifact_bytes,
            });
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(compact.as_bytes())
            .map_err(|e| {
                SourceError::InvalidSpec(format!("{what}: unable to decode helm archive: {e}"))
            })?;
        let bytes = self.checked(what, bytes).await?;
        Ok(FetchedChart {
            digest: archive::sha256_digest(&bytes),
            content: ChartContent::Archive(bytes),
            origin: Origin {
                source: what.to_string(),
                from_cache: false,
            },
        })
    }

    async fn get(
        &self,
        what: &str,
        url: &str,
        authorization: Option<String>,
        ca_pem: Option<Vec<u8>>,
        ctx: &FetchContext,
    ) -> Result<Vec<u8>, SourceError> {
        // Credentials in the URL become Basic auth (as Go's client does) and leave the URL.
        let (url, userinfo) = http::split_userinfo(url);
        let what = &http::split_userinfo(what).0;
        let authorization = authorization.or_else(|| {
            userinfo.map(|(user, password)| {
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
                )
            })
        });
        let timeout = self.timeout(ctx, what)?;
        let had_credentials = authorization.is_some();
        let headers = authorization
            .map(|a| vec![("authorization".to_string(), a)])
            .unwrap_or_default();
        let response = get_following(
            self.transport.as_ref(),
            HttpRequest {
                url,
                headers,
                max_bytes: self.config.max_artifact_bytes,
                timeout,
                ca_pem,
            },
        )
        .await
        .map_err(|e| transport_error(what, e, timeout))?;
        if !(200..300).contains(&response.status) {
            return Err(status_error(
                what,
                response.status,
                had_credentials,
                &response.body,
            ));
        }
        Ok(response.body)
    }

    async fn fetch_url(&self, url: &str, ctx: &FetchContext) -> Result<FetchedChart, SourceError> {
        let shown = http::split_userinfo(url).0;
        let key = format!("url:{shown}");
        let source = format!("chart.archive.remote.url {shown}");
        let result = async {
            let bytes = self.get(&shown, url, None, None, ctx).await?;
            self.checked(&shown, bytes).await
        }
        .await;
        match result {
            Ok(bytes) => {
                let (digest, bytes) = self.remember(bytes, vec![key]).await;
                Ok(FetchedChart {
                    digest,
                    content: ChartContent::Archive(bytes),
                    origin: Origin {
                        source,
                        from_cache: false,
                    },
                })
            }
            Err(err) => self.fallback(err, &key, &source).await,
        }
    }

    async fn fetch_helm_repo(
        &self,
        repo_url: &str,
        name: &str,
        version: &str,
        ctx: &FetchContext,
    ) -> Result<FetchedChart, SourceError> {
        let repo_url_with_userinfo = normalize_url(repo_url);
        let repo_url = http::split_userinfo(&repo_url_with_userinfo).0;
        let key = format!("helmrepo:{repo_url}|{name}|{version}");
        let source = format!("helm repository {repo_url} (chart {name} version {version})");
        let exact = landscaper_model::semver::Version::is_exact(version);
        if exact && let Some(hit) = self.cached(&key, &source).await {
            return Ok(hit);
        }
        let auths = RepoAuths::new(spec::helm_repo_credentials(&ctx.configurations)?);
        let result = async {
            let index_url = format!("{repo_url_with_userinfo}/index.yaml");
            let shown_index_url = http::split_userinfo(&index_url).0;
            let auth = auths.for_url(&shown_index_url, &ctx.secrets)?;
            let index_bytes = self
                .get(
                    &shown_index_url,
                    &index_url,
                    auth.authorization,
                    auth.ca_pem,
                    ctx,
                )
                .await?;
            let index_url = shown_index_url.clone();
            let index = Index::parse(&index_url, &index_bytes)?;
            let entry = index
                .get(name, version)
                .map_err(|detail| SourceError::NotFound {
                    what: repo_url.clone(),
                    detail,
                })?;
            let Some(first) = entry.urls.first() else {
                return Err(SourceError::NotFound {
                    what: repo_url.clone(),
                    detail: format!(
                        "chart {name:?} version {:?} has no downloadable URLs",
                        entry.version
                    ),
                });
            };
            // Relative chart URLs keep the repository URL's userinfo, as Go's URL resolution.
            let chart_url =
                http::resolve_url(&format!("{repo_url_with_userinfo}/index.yaml"), first)
                    .ok_or_else(|| SourceError::InvalidResponse {
                        what: index_url.clone(),
                        detail: format!(
                            "could not parse chart url {:?}",
                            http::split_userinfo(first).0
                        ),
                    })?;
            let shown_chart_url = http::split_userinfo(&chart_url).0;
            let auth = auths.for_url(&shown_chart_url, &ctx.secrets)?;
            let bytes = self
                .get(
                    &shown_chart_url,
                    &chart_url,
                    auth.authorization,
                    auth.ca_pem,
                    ctx,
                )
                .await?;
            let bytes = self.checked(&shown_chart_url, bytes).await?;
            Ok((bytes, entry.version.clone()))
        }
        .await;
        match result {
            Ok((bytes, resolved)) => {
                let keys = vec![
                    key.clone(),
                    format!("helmrepo:{repo_url}|{name}|{resolved}"),
                ];
                let (digest, bytes) = self.remember(bytes, keys).await;
                Ok(FetchedChart {
                    digest,
                    content: ChartContent::Archive(bytes),
                    origin: Origin {
                        source,
                        from_cache: false,
                    },
                })
            }
            Err(err) => self.fallback(err, &key, &source).await,
        }
    }

    async fn fetch_oci(&self, text: &str, ctx: &FetchContext) -> Result<FetchedChart, SourceError> {
        let reference = Reference::parse(text)?;
        let source = format!("oci {reference}");
        let name = reference.name();
        let digest_key = reference.digest.as_ref().map(|d| format!("oci:{name}@{d}"));
        let tag_key = reference.tag.as_ref().map(|t| format!("oci:{name}:{t}"));
        if let Some(key) = &digest_key
            && let Some(hit) = self.cached(key, &source).await
        {
            return Ok(hit);
        }
        let credentials = oci::registry_credentials(&ctx.pull_secrets, &reference.registry)?;
        let result = async {
            let mut session = RegistrySession::new(
                self.transport.as_ref(),
                reference.clone(),
                credentials,
                Limits {
                    max_blob_bytes: self.config.max_artifact_bytes,
                    timeout: self.config.request_timeout,
                    deadline: ctx.deadline,
                },
            );
            let wanted = reference
                .digest
                .clone()
                .or_else(|| reference.tag.clone())
                .unwrap_or_default();
            let manifest = session.manifest(&wanted).await?;
            let layer = oci::helm_chart_layer(&source, &manifest.manifest)?.clone();
            let bytes = match self.cached_blob(&layer.digest).await {
                Some(bytes) => bytes,
                None => {
                    let bytes = session.blob(&layer).await?;
                    self.checked(&source, bytes).await?
                }
            };
            Ok((bytes, manifest.digest))
        }
        .await;
        match result {
            Ok((bytes, manifest_digest)) => {
                let mut keys = vec![format!("oci:{name}@{manifest_digest}")];
                keys.extend(tag_key.clone());
                let (digest, bytes) = self.remember(bytes, keys).await;
                Ok(FetchedChart {
                    digest,
                    content: ChartContent::Archive(bytes),
                    origin: Origin {
                        source,
                        from_cache: false,
                    },
                })
            }
            Err(err) => match (&digest_key, &tag_key) {
                (None, Some(key)) => self.fallback(err, key, &source).await,
                _ => Err(err),
            },
        }
    }

    async fn fetch_local(
        &self,
        rel: &str,
        ctx: &FetchContext,
    ) -> Result<FetchedChart, SourceError> {
        let what = format!("{}{rel}", spec::LOCAL_PREFIX);
        let Some(dir) = &ctx.manifests_dir else {
            return Err(SourceError::Local {
                what,
                detail: "no manifests folder is configured".into(),
            });
        };
        let source = what.clone();
        let (dir, rel_owned, max) = (dir.clone(), rel.to_string(), self.config.max_artifact_bytes);
        let resolved = blocking(move || local::resolve(&dir, &rel_owned, max))
            .await
            .unwrap_or_else(|| {
                Err(SourceError::Local {
                    what: what.clone(),
                    detail: "reading the chart was interrupted".into(),
                })
            })?;
        match resolved {
            local::LocalChart::Archive { bytes, .. } => {
                let bytes = self.checked(&what, bytes).await?;
                Ok(FetchedChart {
                    digest: archive::sha256_digest(&bytes),
                    content: ChartContent::Archive(bytes),
                    origin: Origin {
                        source,
                        from_cache: false,
                    },
                })
            }
            local::LocalChart::Directory { path, digest } => Ok(FetchedChart {
                content: ChartContent::Directory(path),
                digest,
                origin: Origin {
                    source,
                    from_cache: false,
                },
            }),
        }
    }
}

/// Runs file and CPU work on the blocking pool; `None` if it panicked.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(work).await.ok()
}

#[cfg(test)]
mod tests;
