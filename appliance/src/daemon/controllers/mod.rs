//! The controllers: Landscaper's installation and execution phase machines and the deploy-item
//! dispatcher, driven by the store's change feed.
//!
//! ```text
//! store change feed ──► events::keys_to_enqueue ──► WorkQueue per kind ──► workers
//!                                                     │ Reconciler::reconcile(key)
//!                                                     ▼
//!        load object + view ─► phase machine (pure) ─► one transaction (status + subobjects)
//! ```
//!
//! Each reconcile step commits all its writes in one transaction, so a crash at any point
//! leaves a state from which the next start continues.

pub mod deployitem;
pub mod events;
pub mod execution;
pub mod installation;
pub mod jobs;
pub mod lserror;
pub mod queue;
pub mod runtime;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use landscaper_deployers::DeployerRegistry;
use landscaper_store::{Clock, Kind, Store, SystemClock};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use self::queue::WorkQueue;
use self::runtime::{WorkerOptions, spawn_workers};

/// Settings of the controllers (`controllers:` in the config file).
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    pub workers: WorkerOptions,
    /// A deploy item that no deployer picks up within this time fails with `PickupTimeout`;
    /// `None` disables the check.
    pub pickup_timeout: Option<Duration>,
    /// Default of `spec.timeout` for deploy items.
    pub progressing_timeout: Duration,
    /// Every object is looked at again after this long, as a safety net.
    pub resync_interval: Duration,
    /// How long a deploy-item worker waits for a deployer call before it leaves the call to
    /// run on (its end requeues the item) and serves other items.
    pub deployer_call_inline_wait: Duration,
    /// First and longest wait while an installation or execution waits for others.
    pub wait_interval_min: Duration,
    pub wait_interval_max: Duration,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            workers: WorkerOptions::default(),
            pickup_timeout: Some(Duration::from_secs(300)),
            progressing_timeout: Duration::from_secs(600),
            resync_interval: Duration::from_secs(600),
            deployer_call_inline_wait: Duration::from_millis(200),
            wait_interval_min: Duration::from_secs(1),
            wait_interval_max: Duration::from_secs(60),
        }
    }
}

/// What every reconciler shares.
#[derive(Clone)]
pub struct ControllerContext {
    pub store: Store,
    pub clock: Arc<dyn Clock>,
    pub config: Arc<ControllerConfig>,
    /// The deployers by deploy item type.
    pub deployers: Arc<DeployerRegistry>,
    /// The manifests folder, for blueprints referenced by a local directory.
    pub manifests_dir: Option<std::path::PathBuf>,
    /// Component repositories (`spec.componentDescriptor.ref`), when configured.
    pub components: Option<Arc<crate::components::ComponentResolver>>,
    /// The work queues, once the controllers run (for reconcile events between objects).
    queues: Arc<std::sync::OnceLock<Queues>>,
}

impl ControllerContext {
    /// A context with the built-in deployers ([`DeployerRegistry::builtin`]).
    pub fn new(store: Store, config: ControllerConfig) -> ControllerContext {
        ControllerContext {
            store,
            clock: Arc::new(SystemClock),
            config: Arc::new(config),
            deployers: Arc::new(DeployerRegistry::builtin()),
            manifests_dir: None,
            components: None,
            queues: Arc::new(std::sync::OnceLock::new()),
        }
    }

    /// The work queues of the running controllers.
    pub fn queues(&self) -> Option<&Queues> {
        self.queues.get()
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> ControllerContext {
        self.clock = clock;
        self
    }

    pub fn with_deployers(mut self, deployers: Arc<DeployerRegistry>) -> ControllerContext {
        self.deployers = deployers;
        self
    }

    pub fn with_manifests_dir(mut self, dir: std::path::PathBuf) -> ControllerContext {
        self.manifests_dir = Some(dir);
        self
    }

    pub fn with_components(
        mut self,
        components: Arc<crate::components::ComponentResolver>,
    ) -> ControllerContext {
        self.components = Some(components);
        self
    }

    /// The current time in Kubernetes' format.
    pub fn now(&self) -> String {
        landscaper_store::clock::format_time(self.clock.now())
    }
}

/// The work queues of the three controllers.
#[derive(Clone)]
pub struct Queues {
    pub installations: Arc<WorkQueue>,
    pub executions: Arc<WorkQueue>,
    pub deploy_items: Arc<WorkQueue>,
}

impl Queues {
    fn new() -> Queues {
        Queues {
            installations: Arc::new(WorkQueue::new()),
            executions: Arc::new(WorkQueue::new()),
            deploy_items: Arc::new(WorkQueue::new()),
        }
    }

    pub fn for_kind(&self, kind: Kind) -> Option<&Arc<WorkQueue>> {
        match kind {
            Kind::Installation => Some(&self.installations),
            Kind::Execution => Some(&self.executions),
            Kind::DeployItem => Some(&self.deploy_items),
            _ => None,
        }
    }

    fn close(&self) {
        self.installations.close();
        self.executions.close();
        self.deploy_items.close();
    }
}

/// Runs the controllers until `cancel`; returns when every worker has stopped.
pub async fn run(context: ControllerContext, cancel: CancellationToken) {
    let queues = Queues::new();
    let _ = context.queues.set(queues.clone());
    let mut tasks = JoinSet::new();
    let options = context.config.workers.clone();
    spawn_workers(
        Arc::new(installation::InstallationReconciler::new(context.clone())),
        queues.installations.clone(),
        &options,
        cancel.clone(),
        &mut tasks,
    );
    spawn_workers(
        Arc::new(execution::ExecutionReconciler::new(context.clone())),
        queues.executions.clone(),
        &options,
        cancel.clone(),
        &mut tasks,
    );
    spawn_workers(
        Arc::new(deployitem::DeployItemReconciler::new(context.clone())),
        queues.deploy_items.clone(),
        &options,
        cancel.clone(),
        &mut tasks,
    );
    tasks.spawn(events::feed(
        context.store.clone(),
        queues.clone(),
        context.config.resync_interval,
        cancel.clone(),
    ));
    cancel.cancelled().await;
    queues.close();
    while tasks.join_next().await.is_some() {}
}
