//! Helm's install, upgrade and uninstall (`pkg/action/{install,upgrade,uninstall}.go` with
//! `pkg/kube/client.go`) on a [`ClusterClient`], writing the release records through
//! [`Storage`]:
//!
//! ```text
//! install:   CRDs (create, existing ones left alone) ─► namespace ─► ownership check ─►
//!            record pending-install ─► [pre-install hooks] ─► create objects ─►
//!            [post-install hooks] ─► record deployed          (failure: record failed)
//! upgrade:   pending? stop ─► ownership check of new objects ─► record pending-upgrade
//!            (oldest records beyond the history limit removed) ─► [pre-upgrade hooks] ─►
//!            create / patch (three-way) / replace (force) ─► delete what the chart dropped
//!            (unless `helm.sh/resource-policy: keep`) ─► [post-upgrade hooks] ─►
//!            previous deployed → superseded, record deployed   (failure: record failed)
//! uninstall: [pre-delete hooks] ─► record uninstalling ─► delete the manifest's objects in
//!            uninstall order (keep policy honoured) ─► [post-delete hooks] ─► all records
//!            deleted (Landscaper keeps no history)
//! ```
//!
//! Hooks are stored in the record as Helm stores them and run by [`run_hooks`] (the hook
//! runner of `helm/hooks.rs`); each run hook's `last_run` is written with the record.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::model::{ChartRecord, Hook, Info, Release, Status};
use super::patch::upgrade_patch;
use super::storage::{History, Storage, StorageError};
use crate::helm::hooks::{self, HookError, HookEvent, HookOptions};
use crate::kubernetes::{ClusterClient, ClusterError, Deletion, ObjectRef};

pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY_HELM: &str = "Helm";
pub const RELEASE_NAME_ANNOTATION: &str = "meta.helm.sh/release-name";
pub const RELEASE_NAMESPACE_ANNOTATION: &str = "meta.helm.sh/release-namespace";
pub const RESOURCE_POLICY_ANNOTATION: &str = "helm.sh/resource-policy";
pub const KEEP_POLICY: &str = "keep";

/// `releaseutil.UninstallOrder`.
pub const UNINSTALL_ORDER: &[&str] = &[
    "APIService",
    "Ingress",
    "IngressClass",
    "Service",
    "CronJob",
    "Job",
    "StatefulSet",
    "HorizontalPodAutoscaler",
    "Deployment",
    "ReplicaSet",
    "ReplicationController",
    "Pod",
    "DaemonSet",
    "RoleBindingList",
    "RoleBinding",
    "RoleList",
    "Role",
    "ClusterRoleBindingList",
    "ClusterRoleBinding",
    "ClusterRoleList",
    "ClusterRole",
    "CustomResourceDefinition",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "ConfigMap",
    "SecretList",
    "Secret",
    "ServiceAccount",
    "PodDisruptionBudget",
    "PodSecurityPolicy",
    "LimitRange",
    "ResourceQuota",
    "NetworkPolicy",
    "Namespace",
    "PriorityClass",
];

#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// `errPending`, naming the revision left pending.
    #[error(
        "another operation (install/upgrade/rollback) is in progress: release {release} revision {revision} in namespace {namespace} is {status}"
    )]
    Pending {
        release: String,
        namespace: String,
        revision: u32,
        status: Status,
    },
    /// The manifest of a release cannot be turned into objects.
    #[error("unable to build kubernetes objects from {which} manifest: {message}")]
    Build {
        which: &'static str,
        message: String,
    },
    /// An object exists that the release may not take over.
    #[error("{0}")]
    Conflict(String),
    /// A call to the cluster failed.
    #[error("{step} {object}: {source}")]
    Cluster {
        step: &'static str,
        object: String,
        source: ClusterError,
    },
    /// The operation failed after its record was written (the record says `failed`).
    #[error("{0}")]
    Failed(String),
    /// A hook failed where Helm answers its error as it is: a pre-delete hook (nothing
    /// deleted), a pre/post-rollback hook (the revision stays `pending-rollback`).
    #[error(transparent)]
    Hook(#[from] HookError),
}

impl ActionError {
    fn cluster(step: &'static str, object: &ObjectRef, source: ClusterError) -> ActionError {
        ActionError::Cluster {
            step,
            object: object.to_string(),
            source,
        }
    }

    /// The cluster error behind this one, if any (e.g. to tell an unreachable target).
    pub fn cluster_error(&self) -> Option<&ClusterError> {
        match self {
            ActionError::Cluster { source, .. } => Some(source),
            ActionError::Storage(s) => s.cluster_error(),
            ActionError::Hook(h) => h.cluster_error(),
            _ => None,
        }
    }
}

/// What install and upgrade write: the rendered chart and the user's values.
#[derive(Debug, Clone, Default)]
pub struct ReleaseSpec {
    pub name: String,
    pub namespace: String,
    pub chart: ChartRecord,
    /// The user-supplied values (`config`).
    pub config: Map<String, Value>,
    /// The rendered manifests as Helm joins them (`---\n# Source: P\nCONTENT\n` each).
    pub manifest: String,
    pub hooks: Vec<Hook>,
    pub notes: String,
    /// The CRD objects of the chart's `crds/` folders (install only).
    pub crds: Vec<Value>,
}

/// The `helmDeploymentConfig` switches the actions honour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionOptions {
    pub create_namespace: bool,
    /// Replace changed objects instead of patching them.
    pub force: bool,
    /// Take over existing objects without Helm's ownership metadata.
    pub take_ownership: bool,
    /// The history limit of upgrades (0: none).
    pub max_history: usize,
    /// `--wait`: the release's objects must become ready within `timeout`.
    pub wait: bool,
    /// `--atomic` (implies wait): a failed install is uninstalled, a failed upgrade rolled back.
    pub atomic: bool,
    /// `--timeout` of wait (Landscaper's default 5m).
    pub timeout: std::time::Duration,
    /// The item's deadline: waiting never goes beyond it.
    pub deadline: Option<tokio::time::Instant>,
}

/// Landscaper's default `timeout` of install and upgrade.
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

impl Default for ActionOptions {
    fn default() -> ActionOptions {
        ActionOptions {
            create_namespace: false,
            force: false,
            take_ownership: false,
            max_history: 0,
            wait: false,
            atomic: false,
            timeout: DEFAULT_TIMEOUT,
            deadline: None,
        }
    }
}

/// Install or upgrade, decided from the history (Landscaper: install when there is no record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    Install,
    /// Upgrade to `revision`.
    Upgrade {
        revision: u32,
    },
}

impl Plan {
    pub fn of(history: &History) -> Plan {
        if history.releases.is_empty() && history.corrupt.is_empty() {
            Plan::Install
        } else {
            Plan::Upgrade {
                revision: history.next_revision(),
            }
        }
    }

    /// `.Release.Revision` for rendering.
    pub fn revision(self) -> u32 {
        match self {
            Plan::Install => 1,
            Plan::Upgrade { revision } => revision,
        }
    }

    pub fn is_install(self) -> bool {
        self == Plan::Install
    }
}

/// Runs the release's hooks of `event` with the hook runner (`helm/hooks.rs`): in weight
/// order, waiting for Jobs/Pods within [`hook_timeout`], applying their delete policies and
/// setting `last_run` in `release.hooks` (the caller writes the record afterwards). Test hooks
/// never run. The error names the hook, its object and the reason; the callers record the
/// release failed with Helm's description.
///
/// As Helm's `execHook` (`cfg.recordRelease`), the record is written with each hook `Running`
/// before the hook's objects are created, in the release's state at that moment
/// (`pending-*`, or `uninstalling` for the delete hooks); a run cut short leaves it so.
pub async fn run_hooks(
    client: &dyn ClusterClient,
    release: &mut Release,
    event: HookEvent,
    options: &ActionOptions,
) -> Result<(), HookError> {
    let hook_options = HookOptions::new(&release.namespace, hook_timeout(options));
    let recorder = RecordRunning {
        client,
        release: Release {
            hooks: Vec::new(),
            ..release.clone()
        },
    };
    hooks::run_hooks_recorded(client, event, &mut release.hooks, &hook_options, &recorder).await
}

/// Writes `release` with the hooks of the moment (`cfg.recordRelease`: a failure is logged).
struct RecordRunning<'c> {
    client: &'c dyn ClusterClient,
    release: Release,
}

impl hooks::HookRecorder for RecordRunning<'_> {
    fn record<'a>(&'a self, hooks: &'a [Hook]) -> crate::BoxFuture<'a, ()> {
        Box::pin(async move {
            let release = Release {
                hooks: hooks.to_vec(),
                ..self.release.clone()
            };
            let storage = Storage::new(self.client, &release.namespace);
            if let Err(e) = storage.update(&release).await {
                tracing::warn!(release = %release.name, revision = release.version, error = %e, "unable to record a running hook");
            }
        })
    }
}

/// The hooks' `--timeout`: the action's timeout, bounded by what is left of the item's
/// deadline.
pub fn hook_timeout(options: &ActionOptions) -> std::time::Duration {
    match options.deadline {
        Some(deadline) => options
            .timeout
            .min(deadline.saturating_duration_since(tokio::time::Instant::now())),
        None => options.timeout,
    }
}

/// The identity Helm compares objects by (`isMatchingInfo`: group, kind, namespace, name).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Identity {
    group: String,
    kind: String,
    namespace: String,
    name: String,
}

/// An object of a manifest, its namespace resolved.
#[derive(Debug, Clone)]
pub struct Object {
    pub reference: ObjectRef,
    pub value: Value,
}

impl Object {
    fn identity(&self) -> Identity {
        Identity {
            group: self.reference.group().to_string(),
            kind: self.reference.kind.clone(),
            namespace: self.reference.namespace.clone(),
            name: self.reference.name.clone(),
        }
    }

    fn annotation(&self, key: &str) -> Option<&str> {
        annotation(&self.value, key)
    }
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .pointer("/metadata/labels")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// The objects of a release manifest (lists expanded), without resolving namespaces.
pub fn manifest_objects(manifest: &str) -> Result<Vec<Value>, String> {
    let mut objects = Vec::new();
    for doc in landscaper_charts::sort::split_manifests(manifest) {
        let value: Value = serde_saphyr::from_str(&doc).map_err(|e| e.to_string())?;
        match value {
            Value::Null => {}
            Value::Object(ref m) if m.is_empty() => {}
            Value::Object(ref m) => match m.get("items") {
                Some(Value::Array(items))
                    if m.get("kind")
                        .and_then(Value::as_str)
                        .is_some_and(|k| k.ends_with("List")) =>
                {
                    objects.extend(items.iter().cloned());
                }
                _ => objects.push(value),
            },
            other => return Err(format!("expected an object, got {other}")),
        }
    }
    Ok(objects)
}

/// `KubeClient.Build`: the objects with the namespace of namespaced ones defaulted to the
/// release namespace (and cleared for cluster-scoped ones). With `lenient`, objects of kinds
/// the cluster does not serve are left out (they cannot exist); otherwise that is an error.
async fn build(
    client: &dyn ClusterClient,
    manifest: &str,
    namespace: &str,
    which: &'static str,
    lenient: bool,
) -> Result<Vec<Object>, ActionError> {
    let build_error = |message: String| ActionError::Build { which, message };
    let mut objects = Vec::new();
    for mut value in manifest_objects(manifest).map_err(build_error)? {
        let mut reference = ObjectRef::of(&value);
        if reference.kind.is_empty() || reference.api_version.is_empty() {
            return Err(build_error(format!(
                "object {:?} has no apiVersion or kind",
                reference.name
            )));
        }
        let info = match client
            .resolve(&reference.api_version, &reference.kind)
            .await
        {
            Ok(info) => info,
            Err(ClusterError::NoMatch { .. }) if lenient => continue,
            Err(e @ ClusterError::NoMatch { .. }) => {
                return Err(build_error(format!(
                    "resource mapping not found for name: {:?} namespace: {:?}: {e}\nensure CRDs are installed first",
                    reference.name, reference.namespace
                )));
            }
            Err(e) => return Err(ActionError::cluster("resolving", &reference, e)),
        };
        if info.namespaced {
            if reference.namespace.is_empty() {
                reference.namespace = namespace.to_string();
                value["metadata"]["namespace"] = Value::String(namespace.to_string());
            }
        } else {
            reference.namespace.clear();
            if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("namespace");
            }
        }
        objects.push(Object { reference, value });
    }
    Ok(objects)
}

/// `setMetadataVisitor`: Helm's ownership label and annotations.
pub fn set_ownership(object: &mut Value, release: &str, namespace: &str) {
    let Some(meta) = object
        .as_object_mut()
        .map(|o| o.entry("metadata").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let mut set = |field: &str, key: &str, value: &str| {
        let entry = meta.entry(field).or_insert_with(|| json!({}));
        if !entry.is_object() {
            *entry = json!({});
        }
        entry[key] = Value::String(value.to_string());
    };
    set("labels", MANAGED_BY_LABEL, MANAGED_BY_HELM);
    set("annotations", RELEASE_NAME_ANNOTATION, release);
    set("annotations", RELEASE_NAMESPACE_ANNOTATION, namespace);
}

/// `checkOwnership`: why `live` may not be taken over by the release, if it may not.
pub fn ownership_problem(live: &Value, release: &str, namespace: &str) -> Option<String> {
    fn require(
        actual: Option<&str>,
        key: &str,
        wanted: &str,
        what: &str,
        errors: &mut Vec<String>,
    ) {
        match actual {
            None => errors.push(format!(
                "{what} validation error: missing key {key:?}: must be set to {wanted:?}"
            )),
            Some(v) if v != wanted => errors.push(format!(
                "{what} validation error: key {key:?} must equal {wanted:?}: current value is {v:?}"
            )),
            Some(_) => {}
        }
    }
    let mut errors = Vec::new();
    require(
        label(live, MANAGED_BY_LABEL),
        MANAGED_BY_LABEL,
        MANAGED_BY_HELM,
        "label",
        &mut errors,
    );
    require(
        annotation(live, RELEASE_NAME_ANNOTATION),
        RELEASE_NAME_ANNOTATION,
        release,
        "annotation",
        &mut errors,
    );
    require(
        annotation(live, RELEASE_NAMESPACE_ANNOTATION),
        RELEASE_NAMESPACE_ANNOTATION,
        namespace,
        "annotation",
        &mut errors,
    );
    if errors.is_empty() {
        None
    } else {
        Some(format!("invalid ownership metadata; {}", errors.join("; ")))
    }
}

/// `resourceString`.
fn resource_string(reference: &ObjectRef) -> String {
    format!(
        "{} {:?} in namespace {:?}",
        reference.kind, reference.name, reference.namespace
    )
}

/// `existingResourceConflict`: the objects of `objects` that exist already (to be updated with
/// the live object as original), or the first that belongs to someone else.
async fn existing_objects(
    client: &dyn ClusterClient,
    objects: &[&Object],
    release: &str,
    namespace: &str,
    take_ownership: bool,
) -> Result<BTreeMap<Identity, Value>, String> {
    let mut existing = BTreeMap::new();
    for object in objects {
        let live = match client.get(&object.reference).await {
            Ok(Some(live)) => live,
            Ok(None) => continue,
            Err(e) => {
                return Err(format!(
                    "could not get information about the resource {}: {e}",
                    resource_string(&object.reference)
                ));
            }
        };
        if !take_ownership && let Some(problem) = ownership_problem(&live, release, namespace) {
            return Err(format!(
                "{} exists and cannot be imported into the current release: {problem}",
                resource_string(&object.reference)
            ));
        }
        existing.insert(object.identity(), live);
    }
    Ok(existing)
}

fn now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

fn new_release(spec: &ReleaseSpec, revision: u32, status: Status, description: &str) -> Release {
    let now = now();
    Release {
        name: spec.name.clone(),
        info: Some(Info {
            first_deployed: Some(now),
            last_deployed: Some(now),
            deleted: None,
            description: description.to_string(),
            status,
            notes: spec.notes.clone(),
        }),
        chart: Some(spec.chart.clone()),
        config: spec.config.clone(),
        manifest: spec.manifest.clone(),
        hooks: spec.hooks.clone(),
        version: revision,
        namespace: spec.namespace.clone(),
        labels: BTreeMap::new(),
    }
}

/// Creates the CRDs of `crds/` that do not exist (`installCRDs`); existing ones are never
/// changed.
async fn install_crds(
    client: &dyn ClusterClient,
    crds: &[Value],
    item_deadline: Option<tokio::time::Instant>,
) -> Result<(), ActionError> {
    let mut created = Vec::new();
    for crd in crds {
        match client.create(crd).await {
            Ok(_) => created.push(ObjectRef::of(crd)),
            Err(ClusterError::Api { code: 409, .. } | ClusterError::Conflict(_)) => {}
            Err(e) => {
                return Err(ActionError::cluster(
                    "failed to install CRD",
                    &ObjectRef::of(crd),
                    e,
                ));
            }
        }
    }
    if created.is_empty() {
        return Ok(());
    }
    // Helm waits up to 60s for the CRDs it created to be established, then forgets discovery.
    let deadline = wait_deadline(CRD_WAIT, item_deadline);
    let result =
        super::wait::wait_for_resources(client, &created, super::wait::Checker::WAIT, deadline)
            .await;
    client.invalidate_discovery();
    result.map_err(|e| ActionError::Failed(format!("waiting for CRDs: {e}")))
}

/// How long the CRDs of `crds/` may take to be served.
const CRD_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// `CreateNamespace`: the namespace with Helm's `name` label, when it is missing.
async fn create_namespace(client: &dyn ClusterClient, namespace: &str) -> Result<(), ActionError> {
    let object = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": namespace, "labels": {"name": namespace}}});
    match client.create(&object).await {
        Ok(_) | Err(ClusterError::Api { code: 409, .. } | ClusterError::Conflict(_)) => Ok(()),
        Err(e) => Err(ActionError::cluster("creating", &ObjectRef::of(&object), e)),
    }
}

/// Writes the failed state of `release` and answers the failure.
async fn fail(storage: &Storage<'_>, release: &mut Release, description: String) -> ActionError {
    let info = release.info_mut();
    info.status = Status::Failed;
    info.description = description.clone();
    if let Err(e) = storage.update(release).await {
        return ActionError::Failed(format!("{description} (and recording the failure: {e})"));
    }
    ActionError::Failed(description)
}

/// Install's `failRelease`: the record says `Release "NAME" failed: CAUSE` (with the hooks'
/// `last_run`); with `atomic` the release is uninstalled (its records removed).
async fn fail_install(
    client: &dyn ClusterClient,
    storage: &Storage<'_>,
    release: &mut Release,
    cause: String,
    options: ActionOptions,
) -> ActionError {
    let failure = fail(
        storage,
        release,
        format!("Release {:?} failed: {cause}", release.name),
    )
    .await;
    if !options.atomic {
        return failure;
    }
    let uninstall_options = ActionOptions {
        wait: false,
        ..options
    };
    match uninstall(client, &release.name, &release.namespace, uninstall_options).await {
        Ok(_) => ActionError::Failed(format!(
            "release {} failed, and has been uninstalled due to atomic being set: {cause}",
            release.name
        )),
        Err(e) => ActionError::Failed(format!(
            "an error occurred while uninstalling the release. original install error: {cause}: {e}"
        )),
    }
}

/// `helm install`: revision 1 of `spec`.
pub async fn install(
    client: &dyn ClusterClient,
    spec: &ReleaseSpec,
    options: ActionOptions,
) -> Result<Release, ActionError> {
    let storage = Storage::new(client, &spec.namespace);
    install_crds(client, &spec.crds, options.deadline).await?;
    if options.create_namespace {
        create_namespace(client, &spec.namespace).await?;
    }
    let mut objects = build(client, &spec.manifest, &spec.namespace, "release", false).await?;
    for object in &mut objects {
        set_ownership(&mut object.value, &spec.name, &spec.namespace);
    }
    let all: Vec<&Object> = objects.iter().collect();
    let adopted = existing_objects(
        client,
        &all,
        &spec.name,
        &spec.namespace,
        options.take_ownership,
    )
    .await
    .map_err(|e| {
        ActionError::Conflict(format!(
            "rendered manifests contain a resource that already exists. Unable to continue with install: {e}"
        ))
    })?;
    let mut release = new_release(spec, 1, Status::PendingInstall, "Initial install underway");
    storage.create(&release, 0).await?;
    if let Err(e) = run_hooks(client, &mut release, HookEvent::PreInstall, &options).await {
        let cause = format!("failed pre-install: {e}");
        return Err(fail_install(client, &storage, &mut release, cause, options).await);
    }
    let mut errors = Vec::new();
    for object in &objects {
        let result = match adopted.get(&object.identity()) {
            Some(live) => update_object(client, live, object, live, options.force).await,
            None => client
                .create(&object.value)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
        };
        if let Err(e) = result {
            errors.push(e);
            break;
        }
    }
    if errors.is_empty()
        && (options.wait || options.atomic)
        && let Err(e) = wait_ready(client, &objects, &options).await
    {
        errors.push(e);
    }
    if !errors.is_empty() {
        let cause = errors.join(" && ");
        return Err(fail_install(client, &storage, &mut release, cause, options).await);
    }
    if let Err(e) = run_hooks(client, &mut release, HookEvent::PostInstall, &options).await {
        let cause = format!("failed post-install: {e}");
        return Err(fail_install(client, &storage, &mut release, cause, options).await);
    }
    let info = release.info_mut();
    info.status = Status::Deployed;
    info.description = "Install complete".into();
    storage.update(&release).await?;
    Ok(release)
}

/// `updateResource`: replace with `force`, otherwise Helm's upgrade patch (nothing when there
/// is no change).
async fn update_object(
    client: &dyn ClusterClient,
    original: &Value,
    target: &Object,
    live: &Value,
    force: bool,
) -> Result<(), String> {
    let reference = &target.reference;
    if force {
        let mut replacement = target.value.clone();
        if let Some(version) = live.pointer("/metadata/resourceVersion") {
            replacement["metadata"]["resourceVersion"] = version.clone();
        }
        return client
            .update(&replacement)
            .await
            .map(|_| ())
            .map_err(|e| format!("failed to replace object: {e}"));
    }
    let Some(patch) = upgrade_patch(original, &target.value, live) else {
        return Ok(());
    };
    client
        .patch(reference, &patch)
        .await
        .map(|_| ())
        .map_err(|e| {
            format!(
                "cannot patch {:?} with kind {}: {e}",
                reference.name, reference.kind
            )
        })
}

/// What a new revision over an existing release is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Revise {
    Upgrade,
    /// Back to the manifest of this revision (`helm rollback`, or `atomic` after a failed
    /// upgrade).
    Rollback {
        to: u32,
    },
}

/// `helm upgrade` of the release in `history` to `spec` at the revision [`Plan::of`] gave;
/// with `atomic`, a failed upgrade is rolled back to the last good revision.
pub async fn upgrade(
    client: &dyn ClusterClient,
    history: &History,
    spec: &ReleaseSpec,
    options: ActionOptions,
) -> Result<Release, ActionError> {
    let Some(last) = history.last() else {
        return install(client, spec, options).await;
    };
    if last.status().is_pending() {
        return Err(ActionError::Pending {
            release: spec.name.clone(),
            namespace: spec.namespace.clone(),
            revision: last.version,
            status: last.status(),
        });
    }
    let current = history.deployed().unwrap_or(last).clone();
    let revision = history.next_revision();
    let result = revise(
        client,
        &current,
        &last.labels,
        spec,
        revision,
        Revise::Upgrade,
        options,
    )
    .await;
    let cause = match result {
        Err(ActionError::Failed(cause)) if options.atomic => cause,
        other => return other,
    };
    // `atomic`: back to the newest deployed or superseded revision before this one.
    let storage = Storage::new(client, &spec.namespace);
    let history = storage.history(&spec.name).await?;
    let Some(good) = history
        .releases
        .iter()
        .rev()
        .find(|r| matches!(r.status(), Status::Deployed | Status::Superseded))
        .cloned()
    else {
        return Err(ActionError::Failed(cause));
    };
    let Some(failed) = history.last().cloned() else {
        return Err(ActionError::Failed(cause));
    };
    let rollback = revise(
        client,
        &failed,
        &good.labels,
        &ReleaseSpec::of(&good),
        history.next_revision(),
        Revise::Rollback { to: good.version },
        ActionOptions {
            wait: true,
            atomic: false,
            ..options
        },
    )
    .await;
    match rollback {
        Ok(_) => Err(ActionError::Failed(format!(
            "release {} failed, and has been rolled back due to atomic being set: {cause}",
            spec.name
        ))),
        Err(e) => Err(ActionError::Failed(format!(
            "an error occurred while rolling back the release. original upgrade error: {cause}: {e}"
        ))),
    }
}

/// `helm rollback NAME REVISION`: a new revision with the manifest, values and chart of
/// `revision`.
pub async fn rollback(
    client: &dyn ClusterClient,
    history: &History,
    revision: u32,
    options: ActionOptions,
) -> Result<Release, ActionError> {
    let (Some(last), Some(target)) = (
        history.last(),
        history.releases.iter().find(|r| r.version == revision),
    ) else {
        return Err(ActionError::Failed(format!(
            "release has no {revision} version"
        )));
    };
    let spec = ReleaseSpec::of(target);
    revise(
        client,
        last,
        &target.labels,
        &spec,
        history.next_revision(),
        Revise::Rollback { to: revision },
        options,
    )
    .await
}

impl ReleaseSpec {
    /// What a stored revision deploys (for rollbacks).
    pub fn of(release: &Release) -> ReleaseSpec {
        ReleaseSpec {
            name: release.name.clone(),
            namespace: release.namespace.clone(),
            chart: release.chart.clone().unwrap_or_default(),
            config: release.config.clone(),
            manifest: release.manifest.clone(),
            hooks: release.hooks.clone(),
            notes: release
                .info
                .as_ref()
                .map(|i| i.notes.clone())
                .unwrap_or_default(),
            crds: Vec::new(),
        }
    }
}

/// `--wait`: Helm's waiter ([`super::wait`]) over `objects` until all are ready or `timeout`
/// (or the item's deadline) passes.
async fn wait_ready(
    client: &dyn ClusterClient,
    objects: &[Object],
    options: &ActionOptions,
) -> Result<(), String> {
    let references: Vec<ObjectRef> = objects.iter().map(|o| o.reference.clone()).collect();
    let deadline = wait_deadline(options.timeout, options.deadline);
    super::wait::wait_for_resources(client, &references, super::wait::Checker::WAIT, deadline)
        .await
        .map_err(|e| e.to_string())
}

/// Now plus `timeout`, but never beyond the item's deadline.
fn wait_deadline(
    timeout: std::time::Duration,
    item_deadline: Option<tokio::time::Instant>,
) -> tokio::time::Instant {
    let deadline = tokio::time::Instant::now() + timeout;
    item_deadline.map_or(deadline, |d| deadline.min(d))
}

/// A new revision over `current` (whose manifest is what is on the cluster): Helm's
/// `performUpgrade` / `performRollback`.
async fn revise(
    client: &dyn ClusterClient,
    current: &Release,
    labels: &BTreeMap<String, String>,
    spec: &ReleaseSpec,
    revision: u32,
    kind: Revise,
    options: ActionOptions,
) -> Result<Release, ActionError> {
    let storage = Storage::new(client, &spec.namespace);
    let mut current = current.clone();
    let current_objects = build(
        client,
        &current.manifest,
        &spec.namespace,
        "current release",
        true,
    )
    .await?;
    let mut targets = build(
        client,
        &spec.manifest,
        &spec.namespace,
        "new release",
        false,
    )
    .await?;
    for object in &mut targets {
        set_ownership(&mut object.value, &spec.name, &spec.namespace);
    }
    let originals: BTreeMap<Identity, &Object> =
        current_objects.iter().map(|o| (o.identity(), o)).collect();
    let adopted = if kind == Revise::Upgrade {
        let new_ones: Vec<&Object> = targets
            .iter()
            .filter(|t| !originals.contains_key(&t.identity()))
            .collect();
        existing_objects(
            client,
            &new_ones,
            &spec.name,
            &spec.namespace,
            options.take_ownership,
        )
        .await
        .map_err(|e| ActionError::Conflict(format!("Unable to continue with update: {e}")))?
    } else {
        BTreeMap::new()
    };

    let (status, description, pre, post, failed) = match kind {
        Revise::Upgrade => (
            Status::PendingUpgrade,
            "Preparing upgrade".to_string(),
            HookEvent::PreUpgrade,
            HookEvent::PostUpgrade,
            format!("Upgrade {:?} failed", spec.name),
        ),
        Revise::Rollback { to } => (
            Status::PendingRollback,
            format!("Rollback to {to}"),
            HookEvent::PreRollback,
            HookEvent::PostRollback,
            format!("Rollback {:?} failed", spec.name),
        ),
    };
    let mut release = new_release(spec, revision, status, &description);
    release.labels = labels.clone();
    if let Some(first) = current.info.as_ref().and_then(|i| i.first_deployed) {
        release.info_mut().first_deployed = Some(first);
    }
    storage.create(&release, options.max_history).await?;
    if let Err(e) = run_hooks(client, &mut release, pre, &options).await {
        if let Revise::Rollback { .. } = kind {
            // Helm's rollback returns the hook's error as it is, its record left
            // `pending-rollback` (with the hook as last recorded: running).
            return Err(ActionError::Hook(e));
        }
        let message = format!("{failed}: {pre} hooks failed: {e}");
        return Err(fail(&storage, &mut release, message).await);
    }

    let mut errors = Vec::new();
    for target in &targets {
        let live = match client.get(&target.reference).await {
            Ok(live) => live,
            Err(e) => {
                errors.push(format!("could not get information about the resource: {e}"));
                continue;
            }
        };
        let result = match live {
            None => client
                .create(&target.value)
                .await
                .map(|_| ())
                .map_err(|e| format!("failed to create resource: {e}")),
            Some(live) => {
                let original = originals
                    .get(&target.identity())
                    .map(|o| &o.value)
                    .or_else(|| adopted.get(&target.identity()))
                    .unwrap_or(&live);
                update_object(client, original, target, &live, options.force).await
            }
        };
        if let Err(e) = result {
            errors.push(e);
        }
    }
    let target_ids: Vec<Identity> = targets.iter().map(Object::identity).collect();
    for old in current_objects
        .iter()
        .filter(|o| !target_ids.contains(&o.identity()))
    {
        let live = match client.get(&old.reference).await {
            Ok(Some(live)) => live,
            Ok(None) | Err(_) => continue,
        };
        if annotation(&live, RESOURCE_POLICY_ANNOTATION) == Some(KEEP_POLICY) {
            continue;
        }
        if let Err(e) = client.delete(&old.reference).await {
            errors.push(format!("failed to delete {}: {e}", old.reference));
        }
    }
    if !errors.is_empty() {
        let message = format!("{failed}: {}", errors.join(" && "));
        if matches!(kind, Revise::Rollback { .. }) {
            current.info_mut().status = Status::Superseded;
            let _ = storage.update(&current).await;
        }
        return Err(fail(&storage, &mut release, message).await);
    }
    if (options.wait || options.atomic)
        && let Err(e) = wait_ready(client, &targets, &options).await
    {
        if let Revise::Rollback { .. } = kind {
            // Helm's rollback: `Release "NAME" failed: ERR` on the new revision, the current
            // one left as it is, the error `release NAME failed: ERR`.
            let info = release.info_mut();
            info.status = Status::Failed;
            info.description = format!("Release {:?} failed: {e}", spec.name);
            if let Err(w) = storage.update(&release).await {
                tracing::warn!(release = %spec.name, error = %w, "unable to record the failed rollback");
            }
            return Err(ActionError::Failed(format!(
                "release {} failed: {e}",
                spec.name
            )));
        }
        let message = format!("{failed}: {e}");
        return Err(fail(&storage, &mut release, message).await);
    }
    if let Err(e) = run_hooks(client, &mut release, post, &options).await {
        if let Revise::Rollback { .. } = kind {
            return Err(ActionError::Hook(e));
        }
        let message = format!("{failed}: {post} hooks failed: {e}");
        return Err(fail(&storage, &mut release, message).await);
    }
    // The new revision is recorded deployed first, then the others superseded: a write that
    // fails in between leaves a deployed revision behind (Helm writes the other way round and
    // ignores failed writes). Every other deployed revision is superseded (Helm's rollback
    // does so with `DeployedAll`; its upgrade touches only the current one), so a record left
    // deployed by an earlier failure is healed.
    let info = release.info_mut();
    info.status = Status::Deployed;
    info.description = match kind {
        Revise::Upgrade => "Upgrade complete".into(),
        Revise::Rollback { to } => format!("Rollback to {to}"),
    };
    storage.update(&release).await?;
    match storage.history(&spec.name).await {
        Ok(history) => {
            for mut deployed in history
                .releases
                .into_iter()
                .filter(|r| r.status() == Status::Deployed && r.version != release.version)
            {
                deployed.info_mut().status = Status::Superseded;
                if let Err(e) = storage.update(&deployed).await {
                    tracing::warn!(release = %spec.name, revision = deployed.version, error = %e, "unable to mark a release revision superseded");
                }
            }
        }
        Err(e) => {
            tracing::warn!(release = %spec.name, error = %e, "unable to read the release history to supersede old revisions");
        }
    }
    Ok(release)
}

/// What an uninstall did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Uninstalled {
    /// There was no release.
    NotFound,
    /// The objects were deleted (those with the keep policy listed) and the records removed.
    Done { kept: Vec<String> },
}

fn uninstall_rank(kind: &str) -> usize {
    UNINSTALL_ORDER
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(UNINSTALL_ORDER.len())
}

/// `helm uninstall` without `--keep-history`; with `options.wait`, the deleted objects must be
/// gone within `options.timeout` (the records are removed either way, as Helm does).
pub async fn uninstall(
    client: &dyn ClusterClient,
    name: &str,
    namespace: &str,
    options: ActionOptions,
) -> Result<Uninstalled, ActionError> {
    let storage = Storage::new(client, namespace);
    let history = storage.history(name).await?;
    let Some(last) = history.last() else {
        // Only unreadable records: remove them, nothing else is known.
        for corrupt in &history.corrupt {
            storage.delete_key(name, &corrupt.key).await?;
        }
        return Ok(Uninstalled::NotFound);
    };
    let mut release = last.clone();
    let mut kept = Vec::new();
    let mut errors = Vec::new();
    let mut deleted = Vec::new();
    if release.status() != Status::Uninstalled {
        let info = release.info_mut();
        info.status = Status::Uninstalling;
        info.deleted = Some(now());
        info.description = "Deletion in progress (or silently failed)".into();
        // As Helm: a failed pre-delete hook stops the uninstall; the record shows what
        // `execHook` recorded (uninstalling, the hook running), nothing is deleted.
        run_hooks(client, &mut release, HookEvent::PreDelete, &options).await?;
        storage.update(&release).await?;
        let mut objects = build(client, &release.manifest, namespace, "release", true).await?;
        objects.sort_by_key(|o| uninstall_rank(&o.reference.kind));
        for object in &objects {
            if object.annotation(RESOURCE_POLICY_ANNOTATION) == Some(KEEP_POLICY) {
                kept.push(format!(
                    "[{}] {}",
                    object.reference.kind, object.reference.name
                ));
                continue;
            }
            match client.delete(&object.reference).await {
                Ok(Deletion::Accepted) => deleted.push(object.reference.clone()),
                Ok(Deletion::NotFound) => {}
                Err(e) => errors.push(format!("{}: {e}", object.reference)),
            }
        }
        if options.wait
            && let Err(e) = wait_deleted(client, &deleted, &options).await
        {
            errors.push(e);
        }
        if let Err(e) = run_hooks(client, &mut release, HookEvent::PostDelete, &options).await {
            errors.push(e.to_string());
        }
    }
    for record in &history.releases {
        storage.delete(name, record.version).await?;
    }
    for corrupt in &history.corrupt {
        storage.delete_key(name, &corrupt.key).await?;
    }
    if !errors.is_empty() {
        return Err(ActionError::Failed(format!(
            "uninstallation completed with {} error(s): {}",
            errors.len(),
            errors.join("; ")
        )));
    }
    Ok(Uninstalled::Done { kept })
}

/// `WaitForDelete`: polls until every object in `deleted` is gone.
async fn wait_deleted(
    client: &dyn ClusterClient,
    deleted: &[ObjectRef],
    options: &ActionOptions,
) -> Result<(), String> {
    let deadline = wait_deadline(options.timeout, options.deadline);
    loop {
        let mut remaining = None;
        for reference in deleted {
            if !matches!(client.get(reference).await, Ok(None)) {
                remaining = Some(reference);
                break;
            }
        }
        let Some(remaining) = remaining else {
            return Ok(());
        };
        if tokio::time::Instant::now() >= deadline {
            // Helm's `waitForDeletedResources` answers its context's error.
            tracing::info!(object = %remaining, "uninstall wait: object not deleted in time");
            return Err("context deadline exceeded".to_string());
        }
        tokio::time::sleep(super::wait::POLL).await;
    }
}

/// Removes the latest record left in `pending-install` or `pending-upgrade`, as Landscaper's
/// `unblockPendingHelmRelease` does after a failed install or upgrade so that the next attempt
/// can proceed. Answers the revision removed.
pub async fn unblock_pending(
    client: &dyn ClusterClient,
    name: &str,
    namespace: &str,
) -> Result<Option<u32>, StorageError> {
    let storage = Storage::new(client, namespace);
    let history = storage.history(name).await?;
    let pending = history
        .releases
        .iter()
        .filter(|r| matches!(r.status(), Status::PendingInstall | Status::PendingUpgrade))
        .map(|r| r.version)
        .max();
    if let Some(version) = pending {
        storage.delete(name, version).await?;
    }
    Ok(pending)
}
