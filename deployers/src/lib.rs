//! The deployer contract and the built-in deployers.
//!
//! A [`Deployer`] owns only "make the target look like this configuration" and "remove it".
//! The dispatcher in the appliance owns the rest of Landscaper's deployer contract (type match,
//! the jobID check, pickup, phases, timeouts, the final update of phase and jobIDFinished,
//! finalizers and `delete-without-uninstall`).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use landscaper_model::{DeployItem, Phase, Target};
use serde_json::Value;

pub mod kubernetes;
pub mod manifest;
pub mod mock;

pub use manifest::ManifestDeployer;
pub use mock::MockDeployer;

/// What a deployer is asked to act on.
#[derive(Debug, Clone, Copy)]
pub struct DeployRequest<'a> {
    pub item: &'a DeployItem,
    /// The resolved Target (`spec.target`), with secret references already resolved.
    pub target: Option<&'a Target>,
    /// The secondary targets ([`Deployer::secondary_target_names`]) as the dispatcher found
    /// them in the item's namespace, by name. A name without an entry has no Target object.
    pub secondary_targets: &'a SecondaryTargets,
}

static NO_SECONDARY_TARGETS: SecondaryTargets = BTreeMap::new();

impl<'a> DeployRequest<'a> {
    /// A request without secondary targets.
    pub fn new(item: &'a DeployItem, target: Option<&'a Target>) -> DeployRequest<'a> {
        DeployRequest {
            item,
            target,
            secondary_targets: &NO_SECONDARY_TARGETS,
        }
    }

    pub fn with_secondary_targets(mut self, targets: &'a SecondaryTargets) -> DeployRequest<'a> {
        self.secondary_targets = targets;
        self
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

/// A deployer's failure, with Landscaper's error fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{operation}: {reason}: {message}")]
pub struct DeployerError {
    pub operation: String,
    pub reason: String,
    pub message: String,
    /// Landscaper error codes; an unrecoverable one (e.g. `ERR_CONFIGURATION_PROBLEM`) ends the
    /// item with `Failed`, others are retried until the progressing timeout.
    pub codes: Vec<String>,
}

impl DeployerError {
    pub fn new(operation: &str, reason: &str, message: impl Into<String>) -> DeployerError {
        DeployerError {
            operation: operation.to_string(),
            reason: reason.to_string(),
            message: message.into(),
            codes: Vec::new(),
        }
    }

    pub fn with_code(mut self, code: &str) -> DeployerError {
        self.codes.push(code.to_string());
        self
    }

    /// Whether retrying cannot help.
    pub fn is_unrecoverable(&self) -> bool {
        self.codes
            .iter()
            .any(|c| landscaper_model::constants::UNRECOVERABLE_ERROR_CODES.contains(&c.as_str()))
    }
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One deployer type. Implementations are shared between workers.
pub trait Deployer: Send + Sync {
    /// The deploy item type served, e.g. `landscaper.gardener.cloud/mock`.
    fn deployer_type(&self) -> &str;

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
