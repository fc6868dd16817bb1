//! The deployer contract and the built-in deployers.
//!
//! A [`Deployer`] owns only "make the target look like this configuration" and "remove it".
//! The dispatcher in the appliance owns the rest of Landscaper's deployer contract (type match,
//! the jobID check, pickup, phases, timeouts, the final update of phase and jobIDFinished,
//! finalizers and `delete-without-uninstall`).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use jiff::Timestamp;
use landscaper_model::constants::LANDSCAPER_DOMAIN;
use landscaper_model::{Context, DeployItem, LocalObjectReference, Phase, Target};
use serde_json::Value;

pub mod applier;
pub mod helm;
pub mod kubernetes;
pub mod manifest;
pub mod mock;
pub mod registry;

pub use helm::HelmDeployer;
pub use manifest::ManifestDeployer;
pub use mock::MockDeployer;
pub use registry::DeployerRegistry;

/// Landscaper's error value (`lserrors.LsError`), the same type as `status.lastError`: the
/// controllers record it with its times.
pub use landscaper_model::Error as LsError;

/// What a deployer is asked to act on.
#[derive(Debug, Clone, Copy)]
pub struct DeployRequest<'a> {
    pub item: &'a DeployItem,
    /// The resolved Target (`spec.target`), with secret references already resolved.
    pub target: Option<&'a Target>,
    /// The secondary targets ([`Deployer::secondary_target_names`]) as the dispatcher found
    /// them in the item's namespace, by name. A name without an entry has no Target object.
    pub secondary_targets: &'a SecondaryTargets,
    /// The item's Context (`spec.context`, default `default`).
    pub context: &'a DeployContext,
    /// The end of the item's progressing time (`transitionTimes.initTime + spec.timeout`); the
    /// dispatcher ends the call there. `None` when the caller sets no deadline.
    pub deadline: Option<Timestamp>,
    /// Where the deployer is in its work, named in the timeout error when the deadline cuts a
    /// call off (Landscaper's timeout checkpoints).
    pub progress: Option<&'a Checkpoint>,
}

static NO_SECONDARY_TARGETS: SecondaryTargets = BTreeMap::new();
static NO_CONTEXT: DeployContext = DeployContext {
    name: String::new(),
    repository_context: None,
    registry_pull_secrets: Vec::new(),
    configurations: BTreeMap::new(),
};

impl<'a> DeployRequest<'a> {
    /// A request without secondary targets, with an empty Context and no deadline.
    pub fn new(item: &'a DeployItem, target: Option<&'a Target>) -> DeployRequest<'a> {
        DeployRequest {
            item,
            target,
            secondary_targets: &NO_SECONDARY_TARGETS,
            context: &NO_CONTEXT,
            deadline: None,
            progress: None,
        }
    }

    pub fn with_secondary_targets(mut self, targets: &'a SecondaryTargets) -> DeployRequest<'a> {
        self.secondary_targets = targets;
        self
    }

    pub fn with_context(mut self, context: &'a DeployContext) -> DeployRequest<'a> {
        self.context = context;
        self
    }

    pub fn with_deadline(mut self, deadline: Option<Timestamp>) -> DeployRequest<'a> {
        self.deadline = deadline;
        self
    }

    pub fn with_progress(mut self, progress: &'a Checkpoint) -> DeployRequest<'a> {
        self.progress = Some(progress);
        self
    }

    /// Records that the work reached `checkpoint` (e.g. `deployer: apply manifests`).
    pub fn checkpoint(&self, checkpoint: &'static str) {
        if let Some(progress) = self.progress {
            progress.set(checkpoint);
        }
    }
}

/// The last timeout checkpoint a deployer call reached (Landscaper's `TimeoutExceeded`
/// checkpoints, e.g. `manifest deployer: default readiness checks`).
#[derive(Debug, Default)]
pub struct Checkpoint(Mutex<Option<&'static str>>);

impl Checkpoint {
    pub fn new() -> Checkpoint {
        Checkpoint::default()
    }

    pub fn set(&self, checkpoint: &'static str) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(checkpoint);
    }

    pub fn get(&self) -> Option<&'static str> {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The part of a Landscaper `Context` a deployer uses: where components and charts come from
/// (`repositoryContext`, `registryPullSecrets`) and free configurations (e.g.
/// `helmChartRepoCredentials`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeployContext {
    /// The Context's name (`spec.context`, default `default`).
    pub name: String,
    pub repository_context: Option<Value>,
    pub registry_pull_secrets: Vec<LocalObjectReference>,
    pub configurations: BTreeMap<String, Value>,
}

impl DeployContext {
    /// The Context `name` when no such object exists (the implicit `default` Context).
    pub fn empty(name: &str) -> DeployContext {
        DeployContext {
            name: name.to_string(),
            ..DeployContext::default()
        }
    }

    pub fn from_context(name: &str, context: &Context) -> DeployContext {
        DeployContext {
            name: name.to_string(),
            repository_context: context.repository_context.clone().filter(|v| !v.is_null()),
            registry_pull_secrets: context.registry_pull_secrets.clone().unwrap_or_default(),
            configurations: context.configurations.clone().unwrap_or_default(),
        }
    }
}

/// A secondary target: a Target object named by `targetName` in a deployer's configuration
/// (custom readiness checks, exports, deletion groups), looked up in the item's namespace the
/// way `spec.target` is (Landscaper's `GetTargetClientConsideringSecondaryTarget`).
#[derive(Debug, Clone, PartialEq)]
pub enum SecondaryTarget {
    /// The Target, with a `secretRef` resolved into `spec.config`, valid for a client.
    Resolved(Box<Target>),
    /// The Target object exists but cannot be read (retried).
    Unreadable(String),
    /// The Target cannot be resolved, e.g. its Secret is missing (retried).
    Unresolvable(String),
    /// The resolved Target is not usable (`ValidateTarget`): a configuration problem.
    Invalid(String),
}

/// Secondary targets by Target name.
pub type SecondaryTargets = BTreeMap<String, SecondaryTarget>;

/// The result of a reconcile that the deployer could carry out.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReconcileResult {
    /// The phase the item reached. A final phase (`Succeeded`, `Failed`) finishes the job for
    /// this item; any other phase leaves it running.
    pub phase: Option<Phase>,
    /// Replaces `status.providerStatus` when set.
    pub provider_status: Option<Value>,
    /// The item's export (what Landscaper keeps in the `<item>-export` Secret); `None` leaves
    /// no export.
    pub export: Option<Value>,
}

/// The result of a delete that the deployer could carry out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeleteResult {
    /// Everything is removed: the dispatcher removes the finalizer.
    Deleted,
    /// Removal is under way; ask again later.
    Pending,
}

/// A deployer's failure: Landscaper's error value. Its codes say whether retrying can help
/// ([`LsError::is_retryable`]): an unrecoverable one (`ERR_CONFIGURATION_PROBLEM`,
/// `ERR_TIMEOUT`, `ERR_UNAUTHORIZED`, ...) ends the item with `Failed`, others are retried until
/// the progressing timeout. Build it with [`LsError::new`] (retryable),
/// [`LsError::configuration_problem`] or [`LsError::timeout`].
pub type DeployerError = LsError;

/// The short deployer name of a deploy item type, used in Landscaper's deployer names and
/// timeout checkpoints (`manifest`, `helm`, `mock`; other types as they are).
pub fn deployer_short_name(item_type: &str) -> &str {
    let name = item_type
        .strip_prefix(LANDSCAPER_DOMAIN)
        .and_then(|s| s.strip_prefix('/'))
        .unwrap_or(item_type);
    match name {
        "kubernetes-manifest" => "manifest",
        other => other,
    }
}

/// The Target types a deployer is responsible for. Landscaper's deployers check no target type
/// (a `targetSelector` in a deployer's configuration can narrow what it picks up); an item
/// whose Target a deployer does not accept is not picked up and fails after the pickup timeout,
/// as in Landscaper when no deployer's selector matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcceptedTargetTypes {
    Any,
    Only(&'static [&'static str]),
}

impl AcceptedTargetTypes {
    /// Whether an item with this (resolved) Target is served; an item without a Target is.
    pub fn accepts(&self, target: Option<&Target>) -> bool {
        match (self, target) {
            (AcceptedTargetTypes::Any, _) | (_, None) => true,
            (AcceptedTargetTypes::Only(types), Some(t)) => types.contains(&t.spec.r#type.as_str()),
        }
    }
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One deployer type. Implementations are shared between workers; the dispatcher runs each
/// call as a task of its own, ended at the request's deadline.
pub trait Deployer: Send + Sync {
    /// The deploy item type served, e.g. `landscaper.gardener.cloud/mock`.
    fn item_type(&self) -> &str;

    /// The deployer's name as Landscaper names its deployers in `status.deployer`
    /// (`mock.deployer.landscaper.gardener.cloud`, `manifest.deployer...`).
    fn name(&self) -> String {
        format!(
            "{}.deployer.landscaper.gardener.cloud",
            deployer_short_name(self.item_type())
        )
    }

    /// The Target types this deployer serves.
    fn accepted_target_types(&self) -> AcceptedTargetTypes {
        AcceptedTargetTypes::Any
    }

    /// The Targets (names in the item's namespace) besides `spec.target` that the item's
    /// configuration refers to; the dispatcher resolves them into
    /// [`DeployRequest::secondary_targets`].
    fn secondary_target_names(&self, item: &DeployItem) -> Vec<String> {
        let _ = item;
        Vec::new()
    }

    /// Applies the item's configuration to its target.
    fn reconcile<'a>(
        &'a self,
        request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<ReconcileResult, DeployerError>>;

    /// Removes what the item deployed.
    fn delete<'a>(
        &'a self,
        request: DeployRequest<'a>,
    ) -> BoxFuture<'a, Result<DeleteResult, DeployerError>>;
}
