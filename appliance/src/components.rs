//! OCM component versions in the appliance (issue 18): one [`ComponentResolver`] over the
//! component source (registries, CTF archives of the manifests folder, the shared cache),
//! shared by the installation controller, the helm deployer (`chart.resourceRef`) and the
//! `render` command. Resolved component versions and loaded blueprints are kept in memory per
//! (repository context, name, version): component versions are immutable in OCM, so a
//! reconcile does not resolve again. Failures are never kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use landscaper_components::{
    ComponentError, ComponentSource, ComponentVersion, Components, ComponentsConfig, Overwrites,
    RepositoryContext, ResolvedComponents, SchemaVersion, content, resolve_transitive, uri,
};
use landscaper_templating::blueprint::{Bindings, Blueprint, BlueprintFs};
use landscaper_templating::resources::{ResourceContent, ResourceReader, Resources};
use serde_json::Value;

/// The shared content-addressed cache `<data>/chart-cache` (helm charts and component
/// versions), opened once; `None` (logged) when it cannot be opened.
pub fn open_cache(data_dir: &std::path::Path) -> Option<Arc<landscaper_sources::ChartCache>> {
    let cache_dir = data_dir.join("chart-cache");
    match landscaper_sources::ChartCache::open(
        &cache_dir,
        landscaper_sources::cache::DEFAULT_CACHE_MAX_BYTES,
    ) {
        Ok(c) => Some(Arc::new(c)),
        Err(e) => {
            tracing::warn!(dir = %cache_dir.display(), error = %e, "artifact cache unusable; charts and component versions are not cached on disk");
            None
        }
    }
}

/// The appliance's component repositories over `cache` (shared with the helm deployer),
/// archives of the manifests folder (set by the ingest), `local`/CTF file contexts below the
/// manifests folder; `offline`: cache and archives only.
pub fn build(
    cache: Option<Arc<landscaper_sources::ChartCache>>,
    manifests_dir: &std::path::Path,
    offline: bool,
) -> (Arc<Components>, Arc<ComponentResolver>) {
    let mut config =
        ComponentsConfig::new(Arc::new(landscaper_sources::http::HyperTransport::new()));
    config.cache = cache;
    config.offline = offline;
    config.local_root = Some(manifests_dir.to_path_buf());
    let components = Arc::new(Components::new(config));
    let resolver = Arc::new(ComponentResolver::with_components(components.clone()));
    (components, resolver)
}

/// The ingest's sink for the transport archives it finds: records them as `TransportArchive`
/// objects (what they hold, or why they are unusable; `recorder`), logs a new or changed set,
/// and registers them with `components`.
pub fn archive_sink(
    components: Arc<Components>,
    recorder: crate::daemon::ingest::archives::ArchiveRecorder,
) -> crate::daemon::ingest::ArchiveSink {
    let last: Mutex<Option<Vec<std::path::PathBuf>>> = Mutex::new(None);
    Arc::new(move |archives: Vec<std::path::PathBuf>| {
        let changed = last
            .lock()
            .map(|mut l| {
                let changed = l.as_ref() != Some(&archives);
                *l = Some(archives.clone());
                changed
            })
            .unwrap_or(true);
        if changed {
            let names = archives
                .iter()
                .map(|a| a.display().to_string())
                .collect::<Vec<_>>()
                .join(",");
            tracing::info!(count = archives.len(), archives = %names, "transport archives in the manifests folder (see `get transportarchives`)");
        }
        recorder.record(&archives);
        components.set_archives(archives);
    })
}

/// A digest of pull secrets' names, types and data (never shown).
fn secrets_fingerprint(secrets: &[landscaper_sources::SecretData]) -> String {
    let mut bytes = Vec::new();
    let mut add = |part: &[u8]| {
        bytes.extend((part.len() as u64).to_le_bytes());
        bytes.extend(part);
    };
    for secret in secrets {
        add(secret.name.as_bytes());
        add(secret.secret_type.as_bytes());
        for (key, value) in &secret.data {
            add(key.as_bytes());
            add(value);
        }
    }
    crate::daemon::ingest::names::sha256_hex(&bytes)
}

/// The key of a resolution: the repository context (JSON), name, version and the overwrites.
type Key = (String, String, String, String);

/// Resolves component versions and blueprints through a [`ComponentSource`], with an
/// in-memory cache of successful results.
pub struct ComponentResolver {
    source: Arc<dyn ComponentSource>,
    /// The real repositories, for pinning cache entries of installations in use.
    pins: Option<Arc<Components>>,
    resolved: Mutex<HashMap<Key, Arc<ResolvedComponents>>>,
    blueprints: Mutex<HashMap<(String, String, String, String), Blueprint>>,
    /// Resolvers reading with a Context's `registryPullSecrets`, by the secrets' fingerprint
    /// (each with its own in-memory results: what one Context may read, another may not).
    scoped: Mutex<HashMap<String, Arc<ComponentResolver>>>,
}

impl std::fmt::Debug for ComponentResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ComponentResolver")
    }
}

/// What an installation with `spec.componentDescriptor.ref` binds in its templates.
#[derive(Clone)]
pub struct InstallationComponents {
    pub resolved: Arc<ResolvedComponents>,
    /// The repository context everything was resolved in.
    pub context: RepositoryContext,
    /// The schema of `.cd` and `.components`: the blueprint's `ocmSchemaVersion`, else the
    /// component version's own.
    pub schema: SchemaVersion,
    /// `getResourceKey` / `getResourceContent`.
    pub resources: Resources,
}

impl std::fmt::Debug for InstallationComponents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "InstallationComponents({} in {})",
            self.resolved.root.identity(),
            self.context.describe()
        )
    }
}

impl PartialEq for InstallationComponents {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.resolved, &other.resolved) && self.schema == other.schema
    }
}

impl InstallationComponents {
    /// Sets `.cd`, `.components` and the resource reader of `bindings`.
    pub fn bind(&self, bindings: &mut Bindings) {
        bindings.cd = self.resolved.cd_binding(self.schema);
        bindings.components = self.resolved.components_binding(self.schema);
        bindings.resources = self.resources.clone();
    }
}

/// The blueprint annotation selecting the descriptor schema of `.cd` / `.components`.
pub fn schema_for(blueprint: &Blueprint, component: &ComponentVersion) -> SchemaVersion {
    blueprint
        .document()
        .annotations
        .get(landscaper_templating::spiff::OCM_SCHEMA_VERSION_ANNOTATION)
        .and_then(|s| SchemaVersion::parse(s))
        .unwrap_or(component.schema_version)
}

impl ComponentResolver {
    pub fn new(source: Arc<dyn ComponentSource>) -> ComponentResolver {
        ComponentResolver {
            source,
            pins: None,
            resolved: Mutex::default(),
            blueprints: Mutex::default(),
            scoped: Mutex::default(),
        }
    }

    /// The resolver that reads registries with `secrets` (the `registryPullSecrets` of the
    /// Context an installation uses, `kubernetes.io/dockerconfigjson`) before the configured
    /// ones; `self` when there are none or the source is not the real repositories. One
    /// resolver per distinct set of secrets (by content), kept for later reconciles.
    pub fn with_pull_secrets(
        self: &Arc<Self>,
        secrets: Vec<landscaper_sources::SecretData>,
    ) -> Arc<ComponentResolver> {
        let Some(components) = self.pins.as_ref().filter(|_| !secrets.is_empty()) else {
            return self.clone();
        };
        let fingerprint = secrets_fingerprint(&secrets);
        let Ok(mut scoped) = self.scoped.lock() else {
            return self.clone();
        };
        scoped
            .entry(fingerprint)
            .or_insert_with(|| {
                Arc::new(ComponentResolver::with_components(Arc::new(
                    components.with_pull_secrets(secrets),
                )))
            })
            .clone()
    }

    /// The resolver over the real repositories, pinning what installations use.
    pub fn with_components(components: Arc<Components>) -> ComponentResolver {
        let mut resolver = ComponentResolver::new(components.clone());
        resolver.pins = Some(components);
        resolver
    }

    pub fn source(&self) -> &Arc<dyn ComponentSource> {
        &self.source
    }

    /// Keeps the cache entries of `resolved` from eviction while `owner` (an installation,
    /// `namespace/name`) uses them.
    pub fn pin(&self, owner: &str, resolved: &ResolvedComponents) {
        if let Some(c) = &self.pins {
            c.pin(owner, &resolved.all);
        }
    }

    /// Releases the pins of `owner`.
    pub fn unpin(&self, owner: &str) {
        if let Some(c) = &self.pins {
            c.unpin(owner);
        }
    }

    /// The component version `name:version` and everything it references, resolved once per
    /// (context, name, version, overwrites).
    pub async fn resolve(
        &self,
        ctx: &RepositoryContext,
        name: &str,
        version: &str,
        overwrites: &Overwrites,
    ) -> Result<Arc<ResolvedComponents>, ComponentError> {
        let key: Key = (
            ctx.raw.to_string(),
            name.to_string(),
            version.to_string(),
            format!("{:?}", overwrites.rules),
        );
        if let Some(found) = self.resolved.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(found);
        }
        let resolved =
            Arc::new(resolve_transitive(&*self.source, ctx, name, version, overwrites).await?);
        if let Ok(mut m) = self.resolved.lock() {
            m.insert(key, resolved.clone());
        }
        Ok(resolved)
    }

    /// The blueprint of the resource `resource_name` of `component` (type checked as
    /// Landscaper: "blueprint resource … has wrong type"), loaded once; `cd://` references of
    /// its schemas are resolved from `component` in `ctx` (FORMATS.md §10).
    pub async fn blueprint(
        self: &Arc<Self>,
        ctx: &RepositoryContext,
        component: &Arc<ComponentVersion>,
        resource_name: &str,
    ) -> Result<Blueprint, ComponentsFailure> {
        let key = (
            ctx.raw.to_string(),
            component.name.clone(),
            component.version.clone(),
            resource_name.to_string(),
        );
        if let Some(found) = self
            .blueprints
            .lock()
            .ok()
            .and_then(|m| m.get(&key).cloned())
        {
            return Ok(found);
        }
        let resource = component.resource(resource_name)?;
        let ty = resource
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !content::is_blueprint_type(ty) {
            return Err(ComponentsFailure::Other(format!(
                "blueprint resource {resource_name:?} of component version {} has wrong type {ty:?} (expected landscaper.gardener.cloud/blueprint or blueprint)",
                component.identity()
            )));
        }
        let artifact = self.source.resource(component, resource_name).await?;
        let files = content::blueprint_files(&artifact).map_err(|e| {
            content::in_context(e, &component.name, &component.version, resource_name)
        })?;
        let mut fs = BlueprintFs::new();
        for (path, bytes) in files {
            fs.insert(&path, bytes).map_err(|e| {
                ComponentsFailure::Other(format!(
                    "blueprint resource {resource_name:?} of component version {}: {e}",
                    component.identity()
                ))
            })?;
        }
        let schemas = Arc::new(ComponentSchemas {
            resolver: self.clone(),
            context: ctx.clone(),
            root: component.clone(),
            handle: tokio::runtime::Handle::current(),
        });
        // Schema references may read more resources (blocking): off the async workers.
        let loaded =
            tokio::task::spawn_blocking(move || Blueprint::from_fs_with_components(fs, schemas))
                .await
                .map_err(|e| ComponentsFailure::Other(format!("loading the blueprint: {e}")))?;
        let blueprint = loaded.map_err(|e| {
            ComponentsFailure::Other(format!(
                "blueprint resource {resource_name:?} of component version {}: {e}",
                component.identity()
            ))
        })?;
        if let Ok(mut m) = self.blueprints.lock() {
            m.insert(key, blueprint.clone());
        }
        Ok(blueprint)
    }

    /// The component version owning the resource a `cd://` URI or a relative resource
    /// reference names, starting at `from`: references are looked up among `resolved` first,
    /// then in `ctx`.
    pub async fn locate(
        &self,
        ctx: &RepositoryContext,
        resolved: &ResolvedComponents,
        from: &ComponentVersion,
        reference: &str,
    ) -> Result<(Arc<ComponentVersion>, String), ComponentsFailure> {
        let path = ResourcePath::parse(reference)?;
        let mut current: Arc<ComponentVersion> = match resolved.get(&from.name, &from.version) {
            Some(c) => c.clone(),
            None => Arc::new(from.clone()),
        };
        for name in &path.references {
            let Some(r) = current.references().into_iter().find(|r| &r.name == name) else {
                return Err(ComponentsFailure::Other(format!(
                    "component version {} has no component reference {name:?} ({reference})",
                    current.identity()
                )));
            };
            current = match resolved.get(&r.component_name, &r.version) {
                Some(c) => c.clone(),
                None => {
                    self.source
                        .component_version(ctx, &r.component_name, &r.version)
                        .await?
                }
            };
        }
        current.resource(&path.resource)?;
        Ok((current, path.resource))
    }

    /// The chart `.tgz` of the resource a `getResourceKey` key names, looked up in `ctx`.
    pub async fn chart_by_key(
        &self,
        ctx: &RepositoryContext,
        key: &str,
    ) -> Result<(Vec<u8>, String), ComponentsFailure> {
        let id = uri::parse_resource_key(key)?;
        let resource = id.resource.get("name").cloned().unwrap_or_default();
        let component = self
            .source
            .component_version(ctx, &id.component.name, &id.component.version)
            .await?;
        let entry = component.resource(&resource)?;
        let ty = entry
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !content::is_helm_chart_type(ty) {
            return Err(ComponentsFailure::Other(format!(
                "resource {resource:?} of component version {} has type {ty:?}, not a helm chart (helmChart, helm.io/chart)",
                component.identity()
            )));
        }
        let artifact = self.source.resource(&component, &resource).await?;
        let tgz = content::helm_chart_tgz(&artifact)
            .map_err(|e| content::in_context(e, &component.name, &component.version, &resource))?;
        Ok((
            tgz,
            format!(
                "component {} resource {resource} ({})",
                component.identity(),
                ctx.describe()
            ),
        ))
    }
}

/// The component version owning the resource `reference` (a `cd://` URI or a relative
/// resource reference) names, walking references from the root within `resolved` (which holds
/// everything reachable): pure.
pub fn locate_in(
    resolved: &ResolvedComponents,
    reference: &str,
) -> Result<(Arc<ComponentVersion>, String), ComponentsFailure> {
    let path = ResourcePath::parse(reference)?;
    let mut current = resolved.root.clone();
    for name in &path.references {
        let Some(r) = current.references().into_iter().find(|r| &r.name == name) else {
            return Err(ComponentsFailure::Other(format!(
                "component version {} has no component reference {name:?} ({reference})",
                current.identity()
            )));
        };
        current = resolved
            .get(&r.component_name, &r.version)
            .cloned()
            .ok_or_else(|| {
                ComponentsFailure::Other(format!(
                    "component version {}:{} (reference {name:?}) was not resolved",
                    r.component_name, r.version
                ))
            })?;
    }
    current.resource(&path.resource)?;
    Ok((current, path.resource))
}

/// A component error, or a failure the component crate has no variant for (messages name the
/// component version and resource).
#[derive(Debug, thiserror::Error)]
pub enum ComponentsFailure {
    #[error(transparent)]
    Component(#[from] ComponentError),
    #[error("{0}")]
    Other(String),
}

impl ComponentsFailure {
    pub fn is_retryable(&self) -> bool {
        matches!(self, ComponentsFailure::Component(e) if e.is_retryable())
    }
}

/// A resource named from a component version: component reference names, then the resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    pub references: Vec<String>,
    pub resource: String,
}

impl ResourcePath {
    /// A `cd://` URI, or Landscaper's YAML relative resource reference
    /// `{resource: {name}, referencePath: [{name}, …]}` (`common.ParseResourceReference`).
    pub fn parse(reference: &str) -> Result<ResourcePath, ComponentsFailure> {
        let trimmed = reference.trim();
        if trimmed.starts_with("cd://") {
            let u = uri::CdUri::parse(trimmed)?;
            return Ok(ResourcePath {
                references: u.references,
                resource: u.resource,
            });
        }
        let invalid = |why: &str| {
            ComponentsFailure::Other(format!(
                "invalid resource reference {:?}: {why}",
                reference.chars().take(200).collect::<String>()
            ))
        };
        let value: Value =
            serde_saphyr::from_str(trimmed).map_err(|_| invalid("neither cd:// nor YAML"))?;
        let resource = value
            .get("resource")
            .and_then(|r| r.get("name"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| invalid("resource.name is missing"))?
            .to_string();
        let mut references = Vec::new();
        for step in value
            .get("referencePath")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = step
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| invalid("referencePath entries need a name"))?;
            references.push(name.to_string());
        }
        Ok(ResourcePath {
            references,
            resource,
        })
    }
}

/// `getResourceKey` / `getResourceContent` of one installation: blocks on the async source
/// with the runtime handle taken when it was made (renders run on blocking workers).
pub struct InstallationResources {
    resolver: Arc<ComponentResolver>,
    context: RepositoryContext,
    resolved: Arc<ResolvedComponents>,
    handle: tokio::runtime::Handle,
}

impl InstallationResources {
    /// The reader, or none outside a tokio runtime.
    pub fn reader(
        resolver: Arc<ComponentResolver>,
        context: RepositoryContext,
        resolved: Arc<ResolvedComponents>,
    ) -> Resources {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => Resources::new(Arc::new(InstallationResources {
                resolver,
                context,
                resolved,
                handle,
            })),
            Err(_) => Resources::default(),
        }
    }

    /// Runs `f` to completion on a scoped thread of its own, so that it works whether the
    /// caller is a blocking worker, a plain thread or (by mistake) an async worker.
    fn block_on<T: Send>(
        &self,
        f: impl std::future::Future<Output = T> + Send,
    ) -> Result<T, String> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| self.handle.block_on(f))
                .join()
                .map_err(|_| "reading the resource failed unexpectedly".to_string())
        })
    }
}

impl ResourceReader for InstallationResources {
    fn resource_key(&self, reference: &str) -> Result<String, String> {
        let (component, resource) = self
            .block_on(self.resolver.locate(
                &self.context,
                &self.resolved,
                &self.resolved.root,
                reference,
            ))?
            .map_err(|e| e.to_string())?;
        Ok(uri::resource_key(&component, &resource))
    }

    fn resource_content(&self, reference: &str) -> Result<ResourceContent, String> {
        self.block_on(async {
            let (component, resource) = self
                .resolver
                .locate(
                    &self.context,
                    &self.resolved,
                    &self.resolved.root,
                    reference,
                )
                .await?;
            let artifact = self.resolver.source.resource(&component, &resource).await?;
            Ok::<_, ComponentsFailure>(ResourceContent {
                media_type: artifact.media_type,
                bytes: artifact.bytes.to_vec(),
            })
        })?
        .map_err(|e| e.to_string())
    }
}

/// `cd://` references in blueprint schemas: JSON schema resources of the blueprint's
/// component version and its references (FORMATS.md §10).
struct ComponentSchemas {
    resolver: Arc<ComponentResolver>,
    context: RepositoryContext,
    root: Arc<ComponentVersion>,
    handle: tokio::runtime::Handle,
}

impl landscaper_templating::schema::CdSchemas for ComponentSchemas {
    /// The components crate inlines the whole chain (nested `cd://` refs relative to their
    /// owning component, cycles detected), so the scope stays the blueprint's component.
    fn cd_schema(&self, _scope: &str, uri: &str) -> Result<(Value, String), String> {
        let reference = serde_json::json!({ "$ref": uri });
        let work = landscaper_components::schema::resolve_cd_refs(
            &*self.resolver.source,
            Some(&self.context),
            &self.root,
            &reference,
        );
        std::thread::scope(|s| {
            s.spawn(|| self.handle.block_on(work))
                .join()
                .map_err(|_| "reading the schema failed unexpectedly".to_string())
        })?
        .map(|schema| (schema, String::new()))
        .map_err(|e| e.to_string())
    }
}

/// The helm deployer's `chart.resourceRef` over the resolver.
pub struct ComponentChartsAdapter(pub Arc<ComponentResolver>);

impl landscaper_deployers::helm::components::ComponentCharts for ComponentChartsAdapter {
    fn chart_by_resource_key<'a>(
        &'a self,
        key: &'a str,
        repository_context: Option<&'a Value>,
        pull_secrets: &'a [landscaper_sources::SecretData],
    ) -> landscaper_deployers::BoxFuture<
        'a,
        Result<
            landscaper_deployers::helm::components::ComponentChart,
            landscaper_deployers::helm::components::ComponentChartError,
        >,
    > {
        use landscaper_deployers::helm::components::{ComponentChart, ComponentChartError};
        Box::pin(async move {
            let fail = |e: ComponentsFailure| ComponentChartError {
                retryable: e.is_retryable(),
                message: e.to_string(),
            };
            let ctx = match repository_context {
                Some(v) => RepositoryContext::parse(v).map_err(|e| fail(e.into()))?,
                None => return Err(fail(ComponentError::RepositoryContextMissing.into())),
            };
            let resolver = self.0.with_pull_secrets(pull_secrets.to_vec());
            let (tgz, origin) = resolver.chart_by_key(&ctx, key).await.map_err(fail)?;
            Ok(ComponentChart {
                tgz,
                origin,
                from_cache: false,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_paths_from_uris_and_relative_references() {
        assert_eq!(
            ResourcePath::parse("cd://componentReferences/leaf/resources/mychart").unwrap(),
            ResourcePath {
                references: vec!["leaf".into()],
                resource: "mychart".into()
            }
        );
        assert_eq!(
            ResourcePath::parse(
                "resource:\n  name: myconfig\nreferencePath:\n- name: leaf-reference\n"
            )
            .unwrap(),
            ResourcePath {
                references: vec!["leaf-reference".into()],
                resource: "myconfig".into()
            }
        );
        for bad in ["cd://resources/", "referencePath: []", "[1, 2]"] {
            assert!(ResourcePath::parse(bad).is_err(), "{bad}");
        }
    }
}

#[cfg(test)]
mod pull_secret_tests {
    use super::*;

    fn secret(name: &str, password: &str) -> landscaper_sources::SecretData {
        landscaper_sources::SecretData {
            name: name.into(),
            secret_type: "kubernetes.io/dockerconfigjson".into(),
            data: [(
                ".dockerconfigjson".to_string(),
                password.as_bytes().to_vec(),
            )]
            .into(),
        }
    }

    #[test]
    fn one_scoped_resolver_per_distinct_set_of_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let (_, root) = build(None, dir.path(), true);
        assert!(Arc::ptr_eq(&root.with_pull_secrets(vec![]), &root));
        let a = root.with_pull_secrets(vec![secret("pull", "one")]);
        assert!(!Arc::ptr_eq(&a, &root));
        assert!(Arc::ptr_eq(
            &a,
            &root.with_pull_secrets(vec![secret("pull", "one")])
        ));
        let b = root.with_pull_secrets(vec![secret("pull", "two")]);
        assert!(!Arc::ptr_eq(&a, &b), "a rotated secret is another resolver");
        // A resolver over a test source has no registries to scope.
        let memory = Arc::new(ComponentResolver::new(Arc::new(
            landscaper_components::testing::MemoryRepository::new(),
        )));
        assert!(Arc::ptr_eq(
            &memory.with_pull_secrets(vec![secret("p", "x")]),
            &memory
        ));
    }
}
