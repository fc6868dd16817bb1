//! Deployer calls as tasks of their own, one at most per deploy item, each ended at the item's
//! deadline.
//!
//! ```text
//! reconcile ─► start: spawn the call ─► wait up to `inline_wait`
//!                 answered ──────────────────────────────► apply the answer now
//!                 still running ─► keep it (Running), worker goes on with other items
//! call ends ─► answer kept ─► item requeued ─► reconcile ─► poll: Answered ─► apply the answer
//! ```
//!
//! A call that reaches the deadline is dropped and answers with Landscaper's progressing-timeout
//! error (`StandardTimeoutChecker.TimeoutExceeded`, `ProgressingTimeout`, `ERR_TIMEOUT`) naming
//! the last checkpoint it reached. A call whose item changed meanwhile (a new job, an
//! interrupt, deletion) is aborted: its answer would conflict with the item anyway. A panic in a
//! deployer continues in the reconcile that applies the answer, where the runtime contains it.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt as _;
use jiff::Timestamp;
use landscaper_deployers::{
    Checkpoint, DeleteResult, DeployContext, DeployRequest, Deployer, DeployerError,
    ReconcileResult, SecondaryTargets,
};
use landscaper_store::model::{DeployItem, DeployItemStatus, Target};
use landscaper_store::{ObjectKey, object};
use serde_json::Value;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::contract::{self, Plan, Timeouts};
use crate::daemon::controllers::ControllerContext;

/// A deployer's answer.
#[derive(Debug)]
pub enum Answer {
    Reconcile(Result<ReconcileResult, DeployerError>),
    Delete(Result<DeleteResult, DeployerError>),
}

/// The item as the call started from it; the answer is applied to this.
#[derive(Debug, Clone)]
pub struct Started {
    /// The stored item (its resourceVersion guards the write of the answer).
    pub raw: Value,
    pub item: DeployItem,
    /// The item with the picked-up status the deployer saw.
    pub picked: DeployItem,
    pub plan: Plan,
    pub status: DeployItemStatus,
}

/// What the deployer is called with.
pub struct Request {
    pub deployer: Arc<dyn Deployer>,
    pub target: Option<Target>,
    pub secondary: SecondaryTargets,
    pub context: DeployContext,
    pub deadline: Option<Timestamp>,
    /// Until the deadline, from now.
    pub time_left: Duration,
    pub delete: bool,
}

/// The item's deadline (`transitionTimes.initTime + spec.timeout`, as the progressing timeout)
/// and the time left until then. Without an init time the whole timeout is left.
pub fn deadline(
    item: &DeployItem,
    status: &DeployItemStatus,
    now: Timestamp,
    timeouts: Timeouts,
) -> (Option<Timestamp>, Duration) {
    match contract::progressing_deadline(item, status, timeouts) {
        Some(deadline) => (
            Some(deadline),
            Duration::try_from(deadline.duration_since(now)).unwrap_or(Duration::ZERO),
        ),
        None => (
            None,
            item.spec
                .timeout
                .as_ref()
                .map_or(timeouts.progressing, |t| t.to_std()),
        ),
    }
}

type Outcome = std::thread::Result<Answer>;

/// Where a call's answer waits for the reconcile that applies it.
#[derive(Default)]
struct Slot {
    state: Mutex<SlotState>,
    done: Notify,
}

#[derive(Default)]
struct SlotState {
    answer: Option<Outcome>,
    /// The starting reconcile stopped waiting: the end of the call requeues the item.
    detached: bool,
}

impl Slot {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

struct Running {
    resource_version: String,
    started: Started,
    slot: Arc<Slot>,
    abort: AbortHandle,
}

/// What [`Calls::poll`] found for an item.
pub enum Poll {
    /// No call (or the one there was is aborted): plan afresh.
    None,
    /// A call is still running; its end requeues the item.
    Running,
    /// A call has answered.
    Answered(Box<Started>, Answer),
}

/// The calls still running, by item.
#[derive(Default)]
pub struct Calls {
    running: Mutex<HashMap<ObjectKey, Running>>,
}

fn unwrap_outcome(outcome: Outcome) -> Answer {
    match outcome {
        Ok(answer) => answer,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

impl Calls {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, Running>> {
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a call for `key` is still running.
    pub fn is_running(&self, key: &ObjectKey) -> bool {
        self.lock().contains_key(key)
    }

    /// The state of the call for `key`, given the item as stored now (`None`: gone).
    pub fn poll(&self, key: &ObjectKey, stored: Option<&Value>) -> Poll {
        let mut running = self.lock();
        let Some(call) = running.get(key) else {
            return Poll::None;
        };
        let answer = call.slot.lock().answer.take();
        if let Some(answer) = answer {
            let call = running.remove(key).expect("present");
            drop(running);
            return Poll::Answered(Box::new(call.started), unwrap_outcome(answer));
        }
        let unchanged =
            stored.is_some_and(|raw| object::resource_version(raw) == call.resource_version);
        if unchanged {
            return Poll::Running;
        }
        tracing::info!(%key, "deploy item changed while its deployer call ran: call aborted");
        call.abort.abort();
        running.remove(key);
        Poll::None
    }

    /// Runs the call for `key` as a task, waiting up to `inline_wait` for its answer. `None`:
    /// the call runs on and requeues the item (through `context`'s queue) when it ends.
    pub async fn start(
        &self,
        key: &ObjectKey,
        started: Started,
        request: Request,
        context: ControllerContext,
        inline_wait: Duration,
    ) -> Option<(Started, Answer)> {
        let slot = Arc::new(Slot::default());
        let picked = started.picked.clone();
        let task_slot = slot.clone();
        let task_key = key.clone();
        let task = tokio::spawn(async move {
            let outcome = run(picked, request).await;
            let detached = {
                let mut state = task_slot.lock();
                state.answer = Some(outcome);
                state.detached
            };
            task_slot.done.notify_one();
            if detached && let Some(queues) = context.queues() {
                queues.deploy_items.add(task_key);
            }
        });
        let _ = tokio::time::timeout(inline_wait, slot.done.notified()).await;
        {
            let mut state = slot.lock();
            if let Some(answer) = state.answer.take() {
                drop(state);
                return Some((started, unwrap_outcome(answer)));
            }
            state.detached = true;
        }
        tracing::info!(%key, "deployer call runs on; the worker serves other items");
        let resource_version = object::resource_version(&started.raw).to_string();
        self.lock().insert(
            key.clone(),
            Running {
                resource_version,
                started,
                slot,
                abort: task.abort_handle(),
            },
        );
        None
    }
}

/// One deployer call, ended at the deadline; a panic is kept for the reconcile.
async fn run(picked: DeployItem, request: Request) -> Outcome {
    let progress = Checkpoint::new();
    let call = {
        let deploy = DeployRequest::new(&picked, request.target.as_ref())
            .with_secondary_targets(&request.secondary)
            .with_context(&request.context)
            .with_deadline(request.deadline)
            .with_progress(&progress);
        let deployer = request.deployer.as_ref();
        let delete = request.delete;
        async move {
            if delete {
                Answer::Delete(deployer.delete(deploy).await)
            } else {
                Answer::Reconcile(deployer.reconcile(deploy).await)
            }
        }
    };
    match tokio::time::timeout(request.time_left, AssertUnwindSafe(call).catch_unwind()).await {
        Ok(outcome) => outcome,
        Err(_) => {
            let error = contract::progressing_timeout_error(&picked, progress.get());
            tracing::warn!(item = %format!("{}/{}", picked.metadata.namespace(), picked.metadata.name()), checkpoint = ?progress.get().unwrap_or_default(), "deployer call reached the progressing deadline");
            Ok(if request.delete {
                Answer::Delete(Err(error))
            } else {
                Answer::Reconcile(Err(error))
            })
        }
    }
}
