//! Landscaper's helm deployer (`landscaper.gardener.cloud/helm`), manifest-only mode
//! (`helmDeployment: false`): fetches the chart ([`landscaper_sources`]), renders it in-process
//! ([`landscaper_charts`]) and hands CRDs and manifests to the shared [applier](crate::applier)
//! with policy `manage` and the helm deployer's labels and provider status. Real Helm releases
//! (`helmDeployment: true`, the default) are not supported yet: such items fail with a
//! configuration problem that names the missing mode.
//!
//! ```text
//! parse config ─► fetch chart (cache) ─► render (values, .Release, .Capabilities) ─►
//!   manifests (CRDs first, + Namespace `keep` with createNamespace) ─► applier::reconcile
//!   ─► value exports (jsonPath over the render values) merged with resource exports
//! ```

pub mod config;
pub mod release;

use std::path::PathBuf;
use std::sync::Arc;

use landscaper_charts::{Capabilities, ReleaseOptions, TemplateOptions};
use landscaper_model::DeployItem;
pub use landscaper_sources::SecretData;
use landscaper_sources::{ChartContent, ChartSources, FetchContext, FetchedChart, SourceError};
use serde_json::{Map, Value, json};

use self::config::{ConfigError, ProviderConfiguration};
use crate::applier::config::{Exports, Manifest, ManifestPolicy};
use crate::applier::jsonpath::{KubePath, construct, merge_maps};
use crate::applier::status::ProviderStatus;
use crate::applier::{self, ClientFactory, Desired, KubeClientFactory, Naming};
use crate::{BoxFuture, DeleteResult, DeployRequest, Deployer, DeployerError, ReconcileResult};

/// The deploy item type served.
pub const HELM_DEPLOYER_TYPE: &str = "landscaper.gardener.cloud/helm";
/// The label on the objects an item applied (`helmv1alpha1.ManagedDeployItemLabel`).
pub const MANAGED_DEPLOY_ITEM_LABEL: &str = "helm.deployer.landscaper.gardener.cloud/deployitem";

const INIT_OPERATION: &str = "InitHelmOperation";
const TEMPLATE_OPERATION: &str = "TemplateChart";

/// The helm deployer's operations and timeout checkpoints (`pkg/deployer/helm`).
pub const NAMING: Naming = Naming {
    managed_label: MANAGED_DEPLOY_ITEM_LABEL,
    status_api_version: config::V1ALPHA1,
    reconcile_operation: "ApplyFile",
    delete_operation: "DeleteFiles",
    default_readiness_operation: "DefaultCheckResourcesReadinessHelm",
    custom_readiness_operation: "CustomCheckResourcesReadinessHelm",
    checkpoint_before_readiness: "helm deployer: before readiness check",
    checkpoint_default_readiness: "helm deployer: default readiness checks",
    checkpoint_custom_readiness: "helm deployer: custom readiness checks",
    checkpoint_before_exports: "helm deployer: before reading export values",
};

/// Reads a Secret `namespace`/`name` from the appliance's store (registry pull secrets,
/// `helmChartRepoCredentials` secret refs); `None` when there is no such Secret.
pub type SecretReader = Arc<dyn Fn(&str, &str) -> Option<SecretData> + Send + Sync>;

/// See the module documentation.
pub struct HelmDeployer {
    clients: Arc<dyn ClientFactory>,
    sources: Option<ChartSources>,
    manifests_dir: Option<PathBuf>,
    secrets: Option<SecretReader>,
}

impl HelmDeployer {
    /// The deployer talking to real clusters, fetching charts with `sources` (e.g.
    /// [`ChartSources::with_cache_dir`] at `<data>/chart-cache`).
    pub fn new(sources: ChartSources) -> HelmDeployer {
        HelmDeployer {
            clients: Arc::new(KubeClientFactory::default()),
            sources: Some(sources),
            manifests_dir: None,
            secrets: None,
        }
    }

    /// A deployer with a chart cache at `cache_dir`; without one when the cache cannot be
    /// opened (logged; charts are fetched every time).
    pub fn with_cache_dir(cache_dir: PathBuf) -> HelmDeployer {
        match ChartSources::with_cache_dir(&cache_dir) {
            Ok(sources) => HelmDeployer::new(sources),
            Err(e) => {
                tracing::warn!(dir = %cache_dir.display(), error = %e, "chart cache unusable; helm charts are not cached");
                HelmDeployer::new(ChartSources::new(
                    Arc::new(landscaper_sources::http::HyperTransport::new()),
                    None,
                    landscaper_sources::SourcesConfig::default(),
                ))
            }
        }
    }

    pub fn with_client_factory(mut self, clients: Arc<dyn ClientFactory>) -> HelmDeployer {
        self.clients = clients;
        self
    }

    /// The manifests folder, for `local://charts/NAME`.
    pub fn with_manifests_dir(mut self, dir: PathBuf) -> HelmDeployer {
        self.manifests_dir = Some(dir);
        self
    }

    pub fn with_secrets(mut self, secrets: SecretReader) -> HelmDeployer {
        self.secrets = Some(secrets);
        self
    }
}

fn config_error(e: ConfigError, what: &str) -> DeployerError {
    let reason = match (&e, what) {
        (ConfigError::Invalid(_), _) => "ValidateProviderConfiguration".to_string(),
        (ConfigError::Parse(_), what) => format!("Parse{what}"),
    };
    DeployerError::configuration_problem(INIT_OPERATION, &reason, e.to_string())
}

fn parse_config(item: &DeployItem, deleting: bool) -> Result<ProviderConfiguration, DeployerError> {
    match item.spec.config.as_ref() {
        None | Some(Value::Null) if deleting => Ok(ProviderConfiguration::default()),
        config => {
            let value = config.unwrap_or(&Value::Null);
            if deleting {
                // Removing what was applied needs no valid chart.
                ProviderConfiguration::decode(value)
            } else {
                ProviderConfiguration::parse(value)
            }
            .map_err(|e| config_error(e, "ProviderConfiguration"))
        }
    }
}

fn previous_status(item: &DeployItem) -> Result<Option<ProviderStatus>, DeployerError> {
    match item
        .status
        .as_ref()
        .and_then(|s| s.provider_status.as_ref())
    {
        None | Some(Value::Null) => Ok(None),
        Some(value) => {
            // Helm's provider status has the shape of the manifest deployer's v1alpha2 one.
            let mut value = value.clone();
            if let Some(map) = value.as_object_mut()
                && map.get("apiVersion").and_then(Value::as_str) == Some(config::V1ALPHA1)
            {
                map.insert(
                    "apiVersion".into(),
                    Value::String(crate::manifest::config::V1ALPHA2.into()),
                );
            }
            ProviderStatus::parse(&value)
        }
        .map(Some)
        .map_err(|e| config_error(e, "ProviderStatus")),
    }
}

/// The error of an item asking for a real Helm release.
pub fn helm_release_unsupported() -> DeployerError {
    DeployerError::configuration_problem(
        INIT_OPERATION,
        "HelmDeploymentUnsupported",
        "helm releases (helmDeployment: true) are not supported yet; set helmDeployment: false",
    )
}

/// A chart source's failure as Landscaper treats `GetHelmChart` errors: configuration problems
/// are final, everything else is retried until the item's timeout.
fn source_error(chart: &str, e: &SourceError) -> DeployerError {
    let message = format!("chart {chart}: {e}");
    if e.is_configuration_problem() {
        DeployerError::configuration_problem(TEMPLATE_OPERATION, "GetHelmChart", message)
    } else {
        DeployerError::new(TEMPLATE_OPERATION, "GetHelmChart", message)
    }
}

/// How the chart is named in messages.
fn chart_name(spec: &landscaper_sources::ChartSpec) -> String {
    if !spec.reference.is_empty() {
        return spec.reference.clone();
    }
    if let Some(repo) = &spec.helm_chart_repo {
        return format!(
            "{} {} from {}",
            repo.helm_chart_name, repo.helm_chart_version, repo.helm_chart_repo_url
        );
    }
    if let Some(archive) = &spec.archive {
        if let Some(remote) = &archive.remote
            && !remote.url.is_empty()
        {
            return remote.url.clone();
        }
        return "archive.raw".into();
    }
    "(none)".into()
}

/// What rendering produced, in thread-safe form.
#[derive(Debug, Default)]
pub struct RenderedChart {
    /// CRDs first, then the manifests and hooks, each object as JSON, policy `manage`.
    pub manifests: Vec<Manifest>,
    /// Landscaper's render values (`.Values`, `.Release`, `.Chart`, `.Capabilities`) as JSON,
    /// for value exports.
    pub render_values: Value,
}

/// Parses the YAML documents of a rendered file into objects (empty documents skipped).
fn parse_documents(path: &str, text: &str) -> Result<Vec<Value>, String> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(text).map_err(|e| format!("unable to decode {path}: {e}"))?;
    Ok(docs
        .into_iter()
        .filter(|d| !d.is_null() && d.as_object().is_none_or(|m| !m.is_empty()))
        .collect())
}

/// `.Chart` as Landscaper's jsonPath sees it (chart.Metadata's JSON names, empty fields left
/// out).
fn chart_metadata_json(metadata: &landscaper_charts::chart::Metadata) -> Value {
    let mut map = Map::new();
    let mut text = |key: &str, value: &str| {
        if !value.is_empty() {
            map.insert(key.into(), Value::String(value.into()));
        }
    };
    text("name", &metadata.name);
    text("home", &metadata.home);
    text("version", &metadata.version);
    text("description", &metadata.description);
    text("icon", &metadata.icon);
    text("apiVersion", &metadata.api_version);
    text("condition", &metadata.condition);
    text("tags", &metadata.tags);
    text("appVersion", &metadata.app_version);
    text("kubeVersion", &metadata.kube_version);
    text("type", &metadata.chart_type);
    if !metadata.keywords.is_empty() {
        map.insert("keywords".into(), json!(metadata.keywords));
    }
    if !metadata.sources.is_empty() {
        map.insert("sources".into(), json!(metadata.sources));
    }
    if !metadata.annotations.is_empty() {
        map.insert("annotations".into(), json!(metadata.annotations));
    }
    if metadata.deprecated {
        map.insert("deprecated".into(), Value::Bool(true));
    }
    Value::Object(map)
}

/// Loads and renders a chart as Landscaper's manifest-only mode does (install, revision 0,
/// CRDs included, hooks applied like manifests). Runs on a thread with a large stack.
pub fn render_chart(
    content: &ChartContent,
    config: &ProviderConfiguration,
    capabilities: Capabilities,
) -> Result<RenderedChart, String> {
    let chart = match content {
        ChartContent::Archive(bytes) => landscaper_charts::load_archive(bytes),
        ChartContent::Directory(dir) => landscaper_charts::load_dir(dir),
    }
    .map_err(|e| format!("loading chart: {}", e.message()))?;
    let metadata = chart_metadata_json(&chart.metadata);
    let user_values = landscaper_templating::gotemplate::Value::from_json(match &config.values {
        Value::Null => &Value::Null,
        v => v,
    });
    let user_values = match user_values {
        landscaper_templating::gotemplate::Value::Map(m) => m,
        _ => landscaper_charts::values::new_table(),
    };
    let release = ReleaseOptions {
        name: config.name.clone(),
        namespace: config.namespace.clone(),
        revision: 0,
        is_install: true,
        is_upgrade: false,
    };
    // The coalesced values for exports (as `ToRenderValues` computes them).
    let needs_values = config
        .all_exports()
        .exports
        .iter()
        .any(|e| e.from_resource.is_none());
    let values_json = if needs_values {
        let mut copy = chart.clone();
        landscaper_charts::values::process_dependencies(&mut copy, &user_values)
            .map_err(|e| e.to_string())?;
        let vals = landscaper_charts::values::coalesce_values(&copy, Some(&user_values), false)
            .map_err(|e| e.to_string())?;
        landscaper_templating::gotemplate::Value::Map(vals)
            .to_json()
            .map_err(|e| format!("values: {e}"))?
    } else {
        Value::Null
    };
    let capabilities_json = json!({
        "KubeVersion": {
            "Version": capabilities.kube_version.version,
            "Major": capabilities.kube_version.major,
            "Minor": capabilities.kube_version.minor,
        },
        "APIVersions": capabilities.api_versions,
    });
    let opts = TemplateOptions {
        release: release.clone(),
        capabilities,
        include_crds: true,
        skip_tests: false,
        show_only: Vec::new(),
    };
    let rendered =
        landscaper_charts::render(chart, &user_values, &opts).map_err(|e| e.to_string())?;
    let mut manifests = Vec::new();
    let manage = |object: Value| Manifest {
        policy: ManifestPolicy::Manage,
        manifest: Some(object),
        ..Default::default()
    };
    for (path, text) in &rendered.crds {
        manifests.extend(parse_documents(path, text)?.into_iter().map(manage));
    }
    for m in rendered.manifests.iter().chain(&rendered.hooks) {
        manifests.extend(
            parse_documents(&m.path, &m.content)?
                .into_iter()
                .map(manage),
        );
    }
    if config.create_namespace && !config.namespace.is_empty() {
        manifests.push(Manifest {
            policy: ManifestPolicy::Keep,
            manifest: Some(json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": config.namespace}})),
            ..Default::default()
        });
    }
    let render_values = json!({
        "Values": values_json,
        "Release": {
            "Name": release.name,
            "Namespace": release.namespace,
            "Revision": release.revision,
            "IsUpgrade": release.is_upgrade,
            "IsInstall": release.is_install,
            "Service": "Helm",
        },
        "Chart": metadata,
        "Capabilities": capabilities_json,
    });
    Ok(RenderedChart {
        manifests,
        render_values,
    })
}

/// `constructExportsFromValues`: every export without `fromResource`, read with its jsonPath
/// from the render values.
pub fn value_exports(exports: &Exports, values: &Value) -> Result<Map<String, Value>, String> {
    let mut result = Map::new();
    for export in exports.exports.iter().filter(|e| e.from_resource.is_none()) {
        let path = KubePath::parse(&export.json_path)
            .map_err(|e| format!("export {}: {e}", export.key))?;
        let value = path
            .value(values)
            .map_err(|e| format!("export {}: {e}", export.key))?;
        let constructed =
            construct(&export.key, value).map_err(|e| format!("export {}: {e}", export.key))?;
        merge_maps(&mut result, constructed);
    }
    Ok(result)
}

impl HelmDeployer {
    fn fetch_context(&self, request: &DeployRequest<'_>) -> Result<FetchContext, DeployerError> {
        let namespace = request.item.metadata.namespace();
        let mut ctx = FetchContext {
            configurations: request.context.configurations.clone(),
            manifests_dir: self.manifests_dir.clone(),
            ..FetchContext::default()
        };
        if let Some(read) = &self.secrets {
            for reference in &request.context.registry_pull_secrets {
                match read(namespace, &reference.name) {
                    Some(secret) => ctx.pull_secrets.push(secret),
                    None => {
                        return Err(DeployerError::new(
                            TEMPLATE_OPERATION,
                            "ResolveSecrets",
                            format!("secrets {:?} not found", reference.name),
                        ));
                    }
                }
            }
            for name in landscaper_sources::helm_repo_secret_names(&ctx.configurations) {
                if let Some(secret) = read(namespace, &name) {
                    ctx.secrets.insert(name, secret);
                }
            }
        }
        if let Some(deadline) = request.deadline {
            let left = deadline.duration_since(jiff::Timestamp::now());
            let left = std::time::Duration::try_from(left).unwrap_or_default();
            ctx.deadline = Some(tokio::time::Instant::now() + left);
        }
        Ok(ctx)
    }

    async fn fetch(
        &self,
        request: &DeployRequest<'_>,
        config: &ProviderConfiguration,
    ) -> Result<FetchedChart, DeployerError> {
        let name = chart_name(&config.chart);
        let Some(sources) = &self.sources else {
            return Err(DeployerError::new(
                TEMPLATE_OPERATION,
                "GetHelmChart",
                format!("chart {name}: no chart sources configured"),
            ));
        };
        let ctx = self.fetch_context(request)?;
        sources
            .fetch(&config.chart, &ctx)
            .await
            .map_err(|e| source_error(&name, &e))
    }

    async fn reconcile_item(
        &self,
        request: DeployRequest<'_>,
    ) -> Result<ReconcileResult, DeployerError> {
        let item = request.item;
        let config = parse_config(item, false)?;
        if config.helm_deployment {
            return Err(helm_release_unsupported());
        }
        let fetched = self.fetch(&request, &config).await?;
        // `.Capabilities.KubeVersion` from the target's API server when it answers (as Helm
        // sets it: `Version` is the server's gitVersion); Helm's defaults otherwise.
        let client = self.clients.client(request.target).await?;
        let kube_version = client
            .server_version()
            .await
            .and_then(|git_version| {
                landscaper_charts::KubeVersion::parse(&git_version)
                    .ok()
                    .map(|parsed| landscaper_charts::KubeVersion {
                        version: git_version,
                        ..parsed
                    })
            })
            .unwrap_or_default();
        let name = chart_name(&config.chart);
        let rendered = {
            let config = config.clone();
            let content = fetched.content.clone();
            let handle = std::thread::Builder::new()
                .name("render-helm".into())
                .stack_size(64 << 20)
                .spawn(move || {
                    render_chart(&content, &config, Capabilities::offline(kube_version, &[]))
                })
                .map_err(|e| {
                    DeployerError::new(TEMPLATE_OPERATION, "RenderHelmValues", e.to_string())
                })?;
            let (tx, rx) = tokio::sync::oneshot::channel();
            std::thread::spawn(move || {
                let result = handle
                    .join()
                    .unwrap_or_else(|_| Err("the renderer panicked".to_string()));
                let _ = tx.send(result);
            });
            rx.await
                .unwrap_or_else(|_| Err("the renderer stopped".to_string()))
                .map_err(|e| {
                    DeployerError::configuration_problem(
                        TEMPLATE_OPERATION,
                        "RenderHelmValues",
                        format!("chart {name}: {e}"),
                    )
                })?
        };
        let all_exports = config.all_exports();
        let values_export = value_exports(&all_exports, &rendered.render_values).map_err(|e| {
            DeployerError::new("Reconcile", "ConstructExportFromValues", e.to_string())
        })?;
        let desired = Desired {
            manifests: &rendered.manifests,
            update_strategy: &config.update_strategy,
            readiness_checks: &config.readiness_checks,
            exports: Some(&all_exports),
            deletion_groups: &config.deletion_groups,
            deletion_groups_during_update: &config.deletion_groups_during_update,
            naming: &NAMING,
            default_namespace: Some(&config.namespace),
        };
        let previous = previous_status(item)?.unwrap_or_else(|| ProviderStatus::new(Vec::new()));
        let mut result = applier::reconcile(
            self.clients.as_ref(),
            request,
            &desired,
            &previous.managed_resources,
        )
        .await?;
        if result.phase == Some(landscaper_model::Phase::Succeeded) {
            let mut export = values_export;
            if let Some(Value::Object(resources)) = result.export.take() {
                merge_maps(&mut export, resources);
            }
            result.export = Some(Value::Object(export));
        }
        Ok(result)
    }

    async fn delete_item(&self, request: DeployRequest<'_>) -> Result<DeleteResult, DeployerError> {
        let item = request.item;
        let config = parse_config(item, true)?;
        let Some(previous) = previous_status(item)? else {
            return Ok(DeleteResult::Deleted);
        };
        applier::delete(
            self.clients.as_ref(),
            request,
            &config.deletion_groups,
            &NAMING,
            &previous.managed_resources,
        )
        .await
    }
}

impl Deployer for HelmDeployer {
    fn item_type(&self) -> &str {
        HELM_DEPLOYER_TYPE
    }

    /// Every `targetName` of the configuration (readiness checks, exports, deletion groups).
    fn secondary_target_names(&self, item: &DeployItem) -> Vec<String> {
        let Some(config) = item
            .spec
            .config
            .as_ref()
            .and_then(|c| ProviderConfiguration::decode(c).ok())
        else {
            return Vec::new();
        };
        let exports = config.all_exports();
        Desired {
            manifests: &[],
            update_strategy: &config.update_strategy,
            readiness_checks: &config.readiness_checks,
            exports: Some(&exports),
            deletion_groups: &config.deletion_groups,
            deletion_groups_during_update: &config.deletion_groups_during_update,
            naming: &NAMING,
            default_namespace: None,
        }
        .secondary_target_names()
    }

    fn reconcile<'a>(
        &'a self,
        request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<ReconcileResult, DeployerError>> {
        Box::pin(self.reconcile_item(request))
    }

    fn delete<'a>(
        &'a self,
        request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<DeleteResult, DeployerError>> {
        Box::pin(self.delete_item(request))
    }
}

#[cfg(test)]
mod tests;
