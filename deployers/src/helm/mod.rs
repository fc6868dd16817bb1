//! Landscaper's helm deployer (`landscaper.gardener.cloud/helm`): fetches the chart
//! ([`landscaper_sources`]) and renders it in-process ([`landscaper_charts`]).
//!
//! - `helmDeployment: true` (the default): a real Helm release ([`release`]): install or
//!   upgrade with Helm's semantics, the release records as Helm 3.19 stores them (so the `helm`
//!   CLI sees and manages them), then readiness checks and exports over the release's objects
//!   (the applier's, one place); delete uninstalls the release.
//! - `helmDeployment: false`: CRDs and manifests go to the shared [applier](crate::applier)
//!   with policy `manage` and the helm deployer's labels and provider status.
//!
//! ```text
//! Both modes render with `.Capabilities` from the target (its version and discovery, as Helm's
//! install sees them) and `lookup` answered by the target.
//!
//! real:     parse config ─► fetch chart ─► release history ─► render at the next revision ─►
//!           install | upgrade ─► provider status (the manifest's objects) ─► readiness, exports
//!           (while Progressing: readiness and exports only, no new revision)
//! manifest: parse config ─► fetch chart (cache) ─► render (values, .Release, .Capabilities) ─►
//!           manifests (CRDs first, + Namespace `keep` with createNamespace) ─► applier::reconcile
//!           ─► value exports (jsonPath over the render values) merged with resource exports
//! ```

pub mod components;
pub mod config;
pub mod hooks;
pub mod lookup;
pub mod release;

use std::path::PathBuf;
use std::sync::Arc;

use landscaper_charts::{Capabilities, Lookup, ReleaseOptions, TemplateOptions};
use landscaper_model::DeployItem;
pub use landscaper_sources::SecretData;
use landscaper_sources::{ChartContent, ChartSources, FetchContext, FetchedChart, SourceError};
use serde_json::{Map, Value, json};

use self::config::{ConfigError, ProviderConfiguration};
use self::release::action::{self, ActionError, ActionOptions, Plan, ReleaseSpec};
use self::release::model::ChartRecord;
use self::release::storage::{MAX_HISTORY, Storage};
use crate::applier::config::{Exports, Manifest, ManifestPolicy};
use crate::applier::jsonpath::{KubePath, construct, merge_maps};
use crate::applier::status::{ManagedResourceStatus, ObjectReference, ProviderStatus};
use crate::applier::{self, ClientFactory, Desired, KubeClientFactory, Naming};
use crate::kubernetes::ClusterClient;
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
    components: Option<Arc<dyn components::ComponentCharts>>,
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
            components: None,
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

    /// Component repositories, for `chart.resourceRef`.
    pub fn with_component_charts(
        mut self,
        charts: Arc<dyn components::ComponentCharts>,
    ) -> HelmDeployer {
        self.components = Some(charts);
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

const GET_RELEASE_OPERATION: &str = "GetHelmRelease";
/// The operation of an install or upgrade failure: Landscaper's `RealHelmDeployer.Deploy`
/// wraps the action's error (`NewWrappedError(err, op, "installRelease"|"upgradeRelease", …)`,
/// without the inner error's codes).
const DEPLOY_OPERATION: &str = "RealHelmDeployer.Deploy";
const DELETE_OPERATION: &str = "DeleteHelmRelease";

/// A boolean of `helmDeploymentConfig.install|upgrade` (`false` when unset or not a bool).
fn deployment_flag(args: Option<&Map<String, Value>>, key: &str) -> bool {
    args.and_then(|a| a.get(key))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// `timeout` of `helmDeploymentConfig.install|upgrade|uninstall` (default 5m).
fn deployment_timeout(
    args: Option<&Map<String, Value>>,
    operation: &str,
) -> Result<std::time::Duration, DeployerError> {
    match args.and_then(|a| a.get("timeout")) {
        None | Some(Value::Null) => Ok(action::DEFAULT_TIMEOUT),
        Some(Value::String(text)) => landscaper_model::Duration::parse(text)
            .map(|d| d.to_std())
            .map_err(|e| {
                DeployerError::new(
                    operation,
                    "UnmarshalConfig",
                    format!("timeout: unable to parse string into a duration: {e}"),
                )
            }),
        Some(other) => Err(DeployerError::new(
            operation,
            "UnmarshalConfig",
            format!("timeout: expected a duration string, not {other}"),
        )),
    }
}

/// The item's deadline on the runtime's clock.
fn runtime_deadline(deadline: Option<jiff::Timestamp>) -> Option<tokio::time::Instant> {
    deadline.map(|d| {
        let left = std::time::Duration::try_from(d.duration_since(jiff::Timestamp::now()))
            .unwrap_or_default();
        tokio::time::Instant::now() + left
    })
}

/// `helmDeploymentConfig.uninstall`: `wait` and `timeout`.
fn uninstall_options(
    config: &ProviderConfiguration,
    deadline: Option<jiff::Timestamp>,
) -> Result<ActionOptions, DeployerError> {
    let args = config
        .helm_deployment_config
        .as_ref()
        .and_then(|d| d.uninstall.as_ref());
    Ok(ActionOptions {
        wait: deployment_flag(args, "wait"),
        timeout: deployment_timeout(args, "NewUninstallConfiguration")?,
        deadline: runtime_deadline(deadline),
        ..ActionOptions::default()
    })
}

/// The action switches of `helmDeploymentConfig` for `plan` (`newInstallConfiguration`,
/// `newUpgradeConfiguration`: `timeout` defaults to 5m); waiting never passes `deadline`.
fn action_options(
    config: &ProviderConfiguration,
    plan: Plan,
    deadline: Option<jiff::Timestamp>,
) -> Result<ActionOptions, DeployerError> {
    let deployment = config.helm_deployment_config.as_ref();
    let (args, operation) = if plan.is_install() {
        (
            deployment.and_then(|d| d.install.as_ref()),
            "NewInstallConfiguration",
        )
    } else {
        (
            deployment.and_then(|d| d.upgrade.as_ref()),
            "NewUpgradeConfiguration",
        )
    };
    let timeout = deployment_timeout(args, operation)?;
    let deadline = runtime_deadline(deadline);
    Ok(ActionOptions {
        create_namespace: config.create_namespace && plan.is_install(),
        force: deployment_flag(args, "force"),
        take_ownership: deployment_flag(args, "takeOwnership"),
        // Landscaper sets `MaxHistory = 10` on upgrades only.
        max_history: if plan.is_install() { 0 } else { MAX_HISTORY },
        wait: deployment_flag(args, "wait"),
        atomic: deployment_flag(args, "atomic"),
        timeout,
        deadline,
    })
}

/// The managed resources of a release as Landscaper lists them (`GetManagedResourcesStatus`):
/// every object of the manifest (lists expanded), its namespace defaulted to the release
/// namespace (whatever its scope), no policy.
pub fn release_managed_resources(
    manifest: &str,
    namespace: &str,
) -> Result<Vec<ManagedResourceStatus>, String> {
    let objects = action::manifest_objects(manifest)
        .map_err(|e| format!("unable to decode item of helm manifest: {e}"))?;
    Ok(objects
        .iter()
        .map(|object| {
            let mut resource = ObjectReference::of(object);
            resource.uid.clear();
            resource.resource_version.clear();
            if resource.namespace.is_empty() {
                resource.namespace = namespace.to_string();
            }
            ManagedResourceStatus {
                annotate_before_delete: None,
                patch_before_delete: None,
                policy: ManifestPolicy::Other(String::new()),
                resource,
            }
        })
        .collect())
}

/// An action's failure as Landscaper reports it: operation `RealHelmDeployer.Deploy`, reason
/// `installRelease` or `upgradeRelease`, `unable to install|upgrade helm chart release: ...`
/// (Landscaper puts Helm's log lines before it; there are none here). Retried until the item's
/// timeout, each attempt a new revision, except for an unauthorized target.
fn action_error(plan: Plan, e: &ActionError) -> DeployerError {
    let (reason, verb) = if plan.is_install() {
        ("installRelease", "install")
    } else {
        ("upgradeRelease", "upgrade")
    };
    let message = format!("unable to {verb} helm chart release: {e}");
    match e.cluster_error() {
        Some(c) => {
            let mut error = applier::cluster_error(DEPLOY_OPERATION, reason, c);
            error.message = message;
            error
        }
        None => DeployerError::new(DEPLOY_OPERATION, reason, message),
    }
}

/// What a render learns from the target: `.Capabilities` as Helm's install sees them
/// (`Version` is the server's gitVersion; APIVersions from discovery; Helm's defaults for what
/// the server does not tell) and the `lookup` answered by the target.
struct TargetView {
    capabilities: Capabilities,
    lookup: Option<Arc<lookup::ClusterLookup>>,
}

impl TargetView {
    async fn of(client: &Arc<dyn ClusterClient>) -> TargetView {
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
        let discovery = client.served_resources().await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "discovery failed; rendering with Helm's default API versions");
            Vec::new()
        });
        // Outside a tokio runtime (never in the daemon) lookups stay empty, as offline.
        let lookup = tokio::runtime::Handle::try_current().ok().map(|runtime| {
            Arc::new(lookup::ClusterLookup::new(
                client.clone(),
                runtime,
                &discovery,
            ))
        });
        TargetView {
            capabilities: Capabilities::discovered(kube_version, &discovery),
            lookup,
        }
    }

    fn chart_lookup(&self) -> Option<Arc<dyn Lookup>> {
        self.lookup.clone().map(|l| -> Arc<dyn Lookup> { l })
    }
}

/// Runs `render` on a thread with a large stack (deep templates), without blocking the
/// runtime; its error is a configuration problem naming the chart.
async fn render_on_thread<T: Send + 'static>(
    chart: &str,
    view: &TargetView,
    render: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, DeployerError> {
    let handle = std::thread::Builder::new()
        .name("render-helm".into())
        .stack_size(64 << 20)
        .spawn(render)
        .map_err(|e| DeployerError::new(TEMPLATE_OPERATION, "RenderHelmValues", e.to_string()))?;
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
            let message = format!("chart {chart}: {e}");
            if view.lookup.as_ref().is_some_and(|l| l.failed_transiently()) {
                // The cluster did not answer a lookup: retried, unlike Landscaper, which
                // fails every render error for good.
                DeployerError::new(TEMPLATE_OPERATION, "RenderHelmValues", message)
            } else {
                DeployerError::configuration_problem(
                    TEMPLATE_OPERATION,
                    "RenderHelmValues",
                    message,
                )
            }
        })
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

/// Whether `chart` names its chart by `resourceRef` only (the other sources take precedence,
/// as in Landscaper's `GetChart`).
fn uses_resource_ref(spec: &landscaper_sources::ChartSpec) -> bool {
    !spec.resource_ref.is_empty()
        && spec.reference.is_empty()
        && spec.archive.is_none()
        && spec.helm_chart_repo.is_none()
        && spec.from_resource.is_none()
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

/// A loaded chart with the user's values and Landscaper's render values (for value exports).
struct Prepared {
    chart: landscaper_charts::chart::Chart,
    user_values: landscaper_templating::gotemplate::value::MapRef,
    render_values: Value,
}

/// Loads the chart and computes the render values (`.Values` coalesced only when a value
/// export needs them, as `ToRenderValues` computes them).
fn prepare(
    content: &ChartContent,
    config: &ProviderConfiguration,
    capabilities: &Capabilities,
    release: &ReleaseOptions,
) -> Result<Prepared, String> {
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
    Ok(Prepared {
        chart,
        user_values,
        render_values,
    })
}

/// Loads and renders a chart as Landscaper's manifest-only mode does (install, revision 0,
/// CRDs included, hooks applied like manifests), `lookup` answered by `lookup` (empty without).
/// Runs on a thread with a large stack.
pub fn render_chart(
    content: &ChartContent,
    config: &ProviderConfiguration,
    capabilities: Capabilities,
    lookup: Option<Arc<dyn Lookup>>,
) -> Result<RenderedChart, String> {
    let release = ReleaseOptions {
        name: config.name.clone(),
        namespace: config.namespace.clone(),
        revision: 0,
        is_install: true,
        is_upgrade: false,
    };
    let prepared = prepare(content, config, &capabilities, &release)?;
    let opts = TemplateOptions {
        release,
        capabilities,
        include_crds: true,
        skip_tests: false,
        show_only: Vec::new(),
        lookup,
        skip_schema_validation: false,
    };
    let rendered = landscaper_charts::render(prepared.chart, &prepared.user_values, &opts)
        .map_err(|e| e.to_string())?;
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
    Ok(RenderedChart {
        manifests,
        render_values: prepared.render_values,
    })
}

/// What rendering a real release produced.
#[derive(Debug, Default)]
pub struct RenderedRelease {
    pub spec: ReleaseSpec,
    /// As [`RenderedChart::render_values`].
    pub render_values: Value,
}

/// `helmDeploymentConfig.install|upgrade.skipSchemaValidation` for `plan`.
fn skip_schema_validation(config: &ProviderConfiguration, plan: Plan) -> bool {
    let deployment = config.helm_deployment_config.as_ref();
    let args = if plan.is_install() {
        deployment.and_then(|d| d.install.as_ref())
    } else {
        deployment.and_then(|d| d.upgrade.as_ref())
    };
    deployment_flag(args, "skipSchemaValidation")
}

/// Renders a chart for a real release at `plan`'s revision (`.Release.IsInstall`/`IsUpgrade`
/// and `Revision` as Helm sets them): the record's chart, values, manifest (no CRDs, no hooks,
/// Helm's `# Source:` layout), hooks, notes, and the CRDs of `crds/` apart.
pub fn render_release(
    content: &ChartContent,
    config: &ProviderConfiguration,
    capabilities: Capabilities,
    lookup: Option<Arc<dyn Lookup>>,
    plan: Plan,
) -> Result<RenderedRelease, String> {
    let release = ReleaseOptions {
        name: config.name.clone(),
        namespace: config.namespace.clone(),
        revision: i64::from(plan.revision()),
        is_install: plan.is_install(),
        is_upgrade: !plan.is_install(),
    };
    let prepared = prepare(content, config, &capabilities, &release)?;
    let chart_record = ChartRecord::of(&prepared.chart);
    let crds: Vec<(String, String)> = prepared
        .chart
        .crd_objects(prepared.chart.name())
        .into_iter()
        .map(|(p, d)| (p, String::from_utf8_lossy(&d).into_owned()))
        .collect();
    let opts = TemplateOptions {
        release,
        capabilities,
        include_crds: false,
        skip_tests: false,
        show_only: Vec::new(),
        lookup,
        skip_schema_validation: skip_schema_validation(config, plan),
    };
    let rendered = landscaper_charts::render(prepared.chart, &prepared.user_values, &opts)
        .map_err(|e| e.to_string())?;
    let mut crd_objects = Vec::new();
    for (path, text) in &crds {
        crd_objects.extend(parse_documents(path, text)?);
    }
    let manifest: String = rendered
        .manifests
        .iter()
        .map(|m| format!("---\n# Source: {}\n{}\n", m.path, m.content))
        .collect();
    let hooks = hooks::hooks_from_manifests(&rendered.hooks).map_err(|e| e.to_string())?;
    let mut values = config.values.clone();
    release::model::go_numbers(&mut values);
    Ok(RenderedRelease {
        spec: ReleaseSpec {
            name: config.name.clone(),
            namespace: config.namespace.clone(),
            chart: chart_record,
            config: match values {
                Value::Object(m) => m,
                _ => Map::new(),
            },
            manifest,
            hooks,
            notes: rendered.notes,
            crds: crd_objects,
        },
        render_values: prepared.render_values,
    })
}

/// What the applier gets for an item of either mode: the provider configuration's update
/// strategy, readiness checks, exports and deletion groups under the helm deployer's names.
fn desired<'a>(
    config: &'a ProviderConfiguration,
    exports: &'a Exports,
    manifests: &'a [Manifest],
) -> Desired<'a> {
    Desired {
        manifests,
        update_strategy: &config.update_strategy,
        readiness_checks: &config.readiness_checks,
        exports: Some(exports),
        deletion_groups: &config.deletion_groups,
        deletion_groups_during_update: &config.deletion_groups_during_update,
        naming: &NAMING,
        default_namespace: Some(&config.namespace),
    }
}

/// A succeeded item exports the values read from the render values, then the resources'
/// exports over them.
fn with_value_exports(
    mut result: ReconcileResult,
    mut values_export: Map<String, Value>,
) -> ReconcileResult {
    if result.phase == Some(landscaper_model::Phase::Succeeded) {
        if let Some(Value::Object(resources)) = result.export.take() {
            merge_maps(&mut values_export, resources);
        }
        result.export = Some(Value::Object(values_export));
    }
    result
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
        if let Some(charts) = &self.components
            && uses_resource_ref(&config.chart)
        {
            let ctx = self.fetch_context(request)?;
            let chart = charts
                .chart_by_resource_key(
                    &config.chart.resource_ref,
                    request.context.repository_context.as_ref(),
                    &ctx.pull_secrets,
                )
                .await
                .map_err(components::chart_error)?;
            let what = format!("chart of {}", chart.origin);
            landscaper_sources::archive::check_chart_archive(
                &what,
                &chart.tgz,
                landscaper_sources::SourcesConfig::default()
                    .max_artifact_bytes
                    .saturating_mul(4),
            )
            .map_err(|e| source_error(&name, &e))?;
            return Ok(FetchedChart {
                digest: landscaper_sources::archive::sha256_digest(&chart.tgz),
                content: ChartContent::Archive(chart.tgz),
                origin: landscaper_sources::Origin {
                    source: chart.origin,
                    from_cache: chart.from_cache,
                },
            });
        }
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
            return self.reconcile_release(request, config).await;
        }
        let fetched = self.fetch(&request, &config).await?;
        let client = self.clients.client(request.target).await?;
        let view = TargetView::of(&client).await;
        let name = chart_name(&config.chart);
        let rendered = {
            let config = config.clone();
            let content = fetched.content.clone();
            let capabilities = view.capabilities.clone();
            let lookup = view.chart_lookup();
            render_on_thread(&name, &view, move || {
                render_chart(&content, &config, capabilities, lookup)
            })
            .await?
        };
        let all_exports = config.all_exports();
        let values_export = value_exports(&all_exports, &rendered.render_values).map_err(|e| {
            DeployerError::new("Reconcile", "ConstructExportFromValues", e.to_string())
        })?;
        let desired = desired(&config, &all_exports, &rendered.manifests);
        let previous = previous_status(item)?.unwrap_or_else(|| ProviderStatus::new(Vec::new()));
        let result = applier::reconcile(
            self.clients.as_ref(),
            request,
            &desired,
            &previous.managed_resources,
        )
        .await?;
        Ok(with_value_exports(result, values_export))
    }

    /// `helmDeployment: true`: install or upgrade the release (Landscaper runs one per job:
    /// while the item waits in `Progressing` with the release's provider status, only the
    /// readiness checks and exports run again), then readiness and exports as in manifest mode.
    async fn reconcile_release(
        &self,
        request: DeployRequest<'_>,
        config: ProviderConfiguration,
    ) -> Result<ReconcileResult, DeployerError> {
        let item = request.item;
        let all_exports = config.all_exports();
        let progressing = item.status.as_ref().and_then(|s| s.phase.as_ref())
            == Some(&landscaper_model::Phase::Progressing);
        let previous = previous_status(item)?;
        let (status, render_values) = match previous {
            Some(previous) if progressing => {
                let needs_values = all_exports
                    .exports
                    .iter()
                    .any(|e| e.from_resource.is_none());
                let values = if needs_values {
                    // Value exports read the render values; rendering needs no cluster.
                    let fetched = self.fetch(&request, &config).await?;
                    let client = self.clients.client(request.target).await?;
                    let history = Storage::new(client.as_ref(), &config.namespace)
                        .readable_history(&config.name)
                        .await
                        .map_err(|e| {
                            DeployerError::new(GET_RELEASE_OPERATION, "GetRelease", e.to_string())
                        })?;
                    let revision = history.last().map_or(1, |r| r.version);
                    let plan = if revision <= 1 {
                        Plan::Install
                    } else {
                        Plan::Upgrade { revision }
                    };
                    let view = TargetView::of(&client).await;
                    let name = chart_name(&config.chart);
                    let content = fetched.content.clone();
                    let cfg = config.clone();
                    let capabilities = view.capabilities.clone();
                    let lookup = view.chart_lookup();
                    render_on_thread(&name, &view, move || {
                        render_release(&content, &cfg, capabilities, lookup, plan)
                    })
                    .await?
                    .render_values
                } else {
                    Value::Null
                };
                (previous, values)
            }
            _ => {
                let fetched = self.fetch(&request, &config).await?;
                let client_arc = self.clients.client(request.target).await?;
                let client = client_arc.as_ref();
                client.invalidate_discovery();
                let view = TargetView::of(&client_arc).await;
                let history = Storage::new(client, &config.namespace)
                    .readable_history(&config.name)
                    .await
                    .map_err(|e| match e.cluster_error() {
                        Some(c) => {
                            let mut error =
                                applier::cluster_error(GET_RELEASE_OPERATION, "GetRelease", c);
                            error.message = e.to_string();
                            error
                        }
                        None => {
                            DeployerError::new(GET_RELEASE_OPERATION, "GetRelease", e.to_string())
                        }
                    })?;
                let plan = Plan::of(&history);
                let name = chart_name(&config.chart);
                let rendered = {
                    let content = fetched.content.clone();
                    let cfg = config.clone();
                    let capabilities = view.capabilities.clone();
                    let lookup = view.chart_lookup();
                    render_on_thread(&name, &view, move || {
                        render_release(&content, &cfg, capabilities, lookup, plan)
                    })
                    .await?
                };
                let options = action_options(&config, plan, request.deadline)?;
                // `rendered.spec.hooks` are recorded and run by `action::run_hooks` at each
                // event of the action.
                let result = match plan {
                    Plan::Install => action::install(client, &rendered.spec, options).await,
                    Plan::Upgrade { .. } => {
                        action::upgrade(client, &history, &rendered.spec, options).await
                    }
                };
                let release = match result {
                    Ok(release) => release,
                    Err(e) => {
                        // `unblockPendingHelmRelease`: the next attempt must not find the
                        // release locked by a pending record.
                        if let Err(unblock) =
                            action::unblock_pending(client, &config.name, &config.namespace).await
                        {
                            tracing::warn!(release = %config.name, error = %unblock, "unable to delete a pending helm release record");
                        }
                        return Err(action_error(plan, &e));
                    }
                };
                tracing::info!(release = %release.name, namespace = %release.namespace,
                    revision = release.version, "helm release deployed");
                let managed = release_managed_resources(&release.manifest, &config.namespace)
                    .map_err(|e| DeployerError::new(GET_RELEASE_OPERATION, "GetRelease", e))?;
                let status = ProviderStatus {
                    api_version: config::V1ALPHA1.to_string(),
                    ..ProviderStatus::new(managed)
                };
                (status, rendered.render_values)
            }
        };
        let values_export = value_exports(&all_exports, &render_values).map_err(|e| {
            DeployerError::new("Reconcile", "ConstructExportFromValues", e.to_string())
        })?;
        let desired = desired(&config, &all_exports, &[]);
        let result =
            applier::readiness_and_exports(self.clients.as_ref(), request, &desired, &status)
                .await?;
        Ok(with_value_exports(result, values_export))
    }

    /// `helmDeployment: true` on delete: `helm uninstall` without history; no release is
    /// nothing to do.
    async fn delete_release(
        &self,
        request: DeployRequest<'_>,
        config: &ProviderConfiguration,
    ) -> Result<DeleteResult, DeployerError> {
        let client = self.clients.client(request.target).await?;
        let options = uninstall_options(config, request.deadline)?;
        match action::uninstall(client.as_ref(), &config.name, &config.namespace, options).await {
            Ok(outcome) => {
                if let action::Uninstalled::Done { kept } = &outcome
                    && !kept.is_empty()
                {
                    tracing::info!(release = %config.name, kept = %kept.join(", "), "resources kept due to the resource policy");
                }
                Ok(DeleteResult::Deleted)
            }
            Err(e) => {
                let message = format!("unable to delete helm chart release: {e}");
                Err(match e.cluster_error() {
                    Some(c) => {
                        let mut error = applier::cluster_error(DELETE_OPERATION, "Uninstall", c);
                        error.message = message;
                        error
                    }
                    None => DeployerError::new(DELETE_OPERATION, "Uninstall", message),
                })
            }
        }
    }

    async fn delete_item(&self, request: DeployRequest<'_>) -> Result<DeleteResult, DeployerError> {
        let item = request.item;
        let config = parse_config(item, true)?;
        if config.helm_deployment && !config.name.is_empty() {
            return self.delete_release(request, &config).await;
        }
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

#[cfg(test)]
mod release_tests;
