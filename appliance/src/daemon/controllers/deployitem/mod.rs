//! The deploy-item dispatcher: Landscaper's deployer contract for the built-in deployers, plus
//! Landscaper's own pickup-timeout check for types no built-in deployer serves.
//!
//! ```text
//! load DeployItem ─► resolve Target (+ Secret) and Context ─► contract::plan (pure)
//!   Skip / Wait ─────────────────────────────────────────────► requeue or done
//!   Conclude{status} ─────────────────────────────────────────► one transaction
//!   CallReconcile ─► Deployer::reconcile ─► contract::apply_reconcile_result
//!                        ─► one transaction: DeployItem (status, finalizer) + export Secret
//!   CallDelete ─► Deployer::delete ─► contract::apply_delete_result
//!                        ─► one transaction: finalizer removed (item gone) + export Secret deleted
//! ```
//!
//! The deployer serving the item's type comes from the [`DeployerRegistry`]
//! (`ControllerContext::deployers`), built once at daemon start; a type without a deployer, or
//! a Target type its deployer does not accept, is left to the pickup timeout. Before either
//! call, the secondary targets the deployer names (`targetName` in readiness checks, exports and
//! deletion groups) are resolved like `spec.target`, and the item's Context (`spec.context`,
//! default `default`) is read; both are passed along with the item's deadline.
//!
//! Each call runs as a task of its own ([`calls`]), ended at the item's deadline
//! (`transitionTimes.initTime + spec.timeout`) with Landscaper's progressing-timeout error. The
//! worker waits for it a short while (`deployer_call_inline_wait`); a call still running then
//! is left to run on, the worker serves other items, and the call's end requeues the item,
//! whose next reconcile applies the answer. Nothing is written while a call runs, so a crash
//! loses only the call, which the next start makes again.
//!
//! Every write carries the item's resourceVersion: if the Execution controller changed the
//! item meanwhile (a new job, an interrupt), the commit conflicts and the item is looked at
//! again from scratch.

pub mod calls;
pub mod contract;
pub mod export;
pub mod retries;
pub mod target;

use std::sync::Arc;

use landscaper_deployers::{DeployContext, Deployer, DeployerRegistry, SecondaryTargets};
use landscaper_store::model::constants::{
    DEFAULT_CONTEXT_NAME, LANDSCAPER_FINALIZER, OPERATION_ANNOTATION,
};
use landscaper_store::model::{
    Context, DeployItem, DeployItemStatus, DeployerInformation, ObjectReference, Secret, Target,
    from_value,
};
use landscaper_store::{Kind, ObjectKey, ObjectSource, Transaction, object};
use serde_json::Value;

use self::calls::{Answer, Calls, Started};
use self::contract::{
    Decision, DeleteStep, Input, Plan, TargetLookup, Timeouts, deployer_short_name,
    has_test_reconcile, is_job_finished,
};
use self::target::{ResolvedTarget, TargetRead};
use super::ControllerContext;
use super::jobs;
use super::runtime::{Outcome, ReconcileError, Reconciler};

pub struct DeployItemReconciler {
    context: ControllerContext,
    /// Start of this process (Unix seconds), part of the deployers' identity as in Landscaper
    /// (`<name>-<start time>`).
    started: i64,
    /// The deployer calls still running, by item.
    calls: Calls,
    /// Failing calls: backoff for unreachable clusters and what was logged.
    retries: retries::Retries,
}

impl DeployItemReconciler {
    pub fn new(context: ControllerContext) -> DeployItemReconciler {
        let started = context.clock.now().as_second();
        DeployItemReconciler {
            context,
            started,
            calls: Calls::default(),
            retries: retries::Retries::default(),
        }
    }

    fn registry(&self) -> &DeployerRegistry {
        &self.context.deployers
    }

    fn timeouts(&self) -> Timeouts {
        Timeouts {
            pickup: self.context.config.pickup_timeout,
            progressing: self.context.config.progressing_timeout,
        }
    }

    /// `status.deployer` for a built-in deployer, named as Landscaper names its deployers
    /// (`mock.deployer.landscaper.gardener.cloud`, ...).
    pub fn deployer_information(&self, deployer_type: &str) -> DeployerInformation {
        let name = match self.registry().get(deployer_type) {
            Some(deployer) => deployer.name(),
            None => format!(
                "{}.deployer.landscaper.gardener.cloud",
                deployer_short_name(deployer_type)
            ),
        };
        DeployerInformation {
            identity: format!("{name}-{}", self.started),
            name,
            version: format!("v{}", env!("CARGO_PKG_VERSION")),
        }
    }

    /// `spec.target` looked up in the item's namespace (as Landscaper does), with a `secretRef`
    /// resolved.
    fn lookup_target(
        &self,
        source: &impl ObjectSource,
        item: &DeployItem,
    ) -> Result<TargetLookup, ReconcileError> {
        let Some(reference) = item.spec.target.as_ref().filter(|r| !r.name.is_empty()) else {
            return Ok(TargetLookup::NotReferenced);
        };
        let namespace = item.metadata.namespace();
        Ok(self
            .read_target(source, namespace, &reference.name)?
            .into_lookup(namespace, &reference.name))
    }

    /// The Target `namespace`/`name` with its `secretRef` resolved (`targetresolver.Resolve`).
    fn read_target(
        &self,
        source: &impl ObjectSource,
        namespace: &str,
        name: &str,
    ) -> Result<TargetRead, ReconcileError> {
        let key = ObjectKey::new(Kind::Target, namespace, name);
        let Some(raw) = source.get(&key)? else {
            return Ok(TargetRead::NotFound);
        };
        let target: Target = match from_value(&raw) {
            Ok(t) => t,
            Err(e) => {
                return Ok(TargetRead::Unreadable(format!(
                    "target {namespace}/{name}: {e}"
                )));
            }
        };
        let Some(secret_ref) = target.spec.secret_ref.clone() else {
            return Ok(TargetRead::Found(Box::new(ResolvedTarget::inline(target))));
        };
        let key = ObjectKey::new(Kind::Secret, namespace, &secret_ref.name);
        let secret: Secret = match source.get(&key)?.map(|v| from_value(&v)) {
            Some(Ok(s)) => s,
            Some(Err(e)) => {
                return Ok(TargetRead::SecretUnreadable(format!(
                    "secret {namespace}/{}: {e}",
                    secret_ref.name
                )));
            }
            None => {
                return Ok(TargetRead::Unresolvable(format!(
                    "secrets {:?} not found",
                    secret_ref.name
                )));
            }
        };
        Ok(match ResolvedTarget::from_secret(target, &secret) {
            Ok(t) => TargetRead::Found(Box::new(t)),
            Err(e) => TargetRead::Unresolvable(e),
        })
    }

    /// The secondary targets the deployer names for the item (`targetName` in its
    /// configuration), looked up in the item's namespace like `spec.target`. Names without a
    /// Target object are left out; the deployer reports them when it needs them.
    fn secondary_targets(
        &self,
        source: &impl ObjectSource,
        deployer: &dyn Deployer,
        item: &DeployItem,
    ) -> Result<SecondaryTargets, ReconcileError> {
        let namespace = item.metadata.namespace();
        let mut targets = SecondaryTargets::new();
        for name in deployer.secondary_target_names(item) {
            if name.is_empty() || targets.contains_key(&name) {
                continue;
            }
            if let Some(target) = self.read_target(source, namespace, &name)?.into_secondary() {
                targets.insert(name, target);
            }
        }
        Ok(targets)
    }

    /// The item's Context (`spec.context`, default `default`), or why it cannot be loaded. The
    /// `default` Context is implicit in the appliance (Landscaper creates one in every
    /// namespace): without an object of that name it is empty; other names must exist.
    fn load_context(
        &self,
        source: &impl ObjectSource,
        item: &DeployItem,
    ) -> Result<Result<DeployContext, String>, ReconcileError> {
        let name = item
            .spec
            .context
            .as_deref()
            .filter(|c| !c.is_empty())
            .unwrap_or(DEFAULT_CONTEXT_NAME);
        let key = ObjectKey::new(Kind::Context, item.metadata.namespace(), name);
        Ok(match source.get(&key)? {
            Some(raw) => match from_value::<Context>(&raw) {
                Ok(context) => Ok(DeployContext::from_context(name, &context)),
                Err(e) => Err(format!("context {}/{name}: {e}", item.metadata.namespace())),
            },
            None if name == DEFAULT_CONTEXT_NAME => Ok(DeployContext::empty(name)),
            None => Err(format!(
                "contexts.landscaper.gardener.cloud {name:?} not found"
            )),
        })
    }

    async fn commit(&self, tx: Transaction) -> Result<(), ReconcileError> {
        if !tx.writes.is_empty() {
            self.context.store.commit(tx).await?;
        }
        Ok(())
    }

    /// Writes the item with `status` and the plan's metadata edits, if anything changed.
    fn item_write(
        raw: &Value,
        status: &DeployItemStatus,
        plan: &Plan,
        tx: Transaction,
    ) -> Transaction {
        let mut updated = jobs::with_status(raw.clone(), status);
        if plan.add_finalizer {
            jobs::add_finalizer(&mut updated, LANDSCAPER_FINALIZER);
        }
        if plan.remove_test_reconcile_annotation {
            jobs::set_annotation(&mut updated, OPERATION_ANNOTATION, None);
        }
        if &updated == raw {
            tx
        } else {
            tx.update(updated)
        }
    }

    /// Removes the finalizer; when that removes the item, its export Secret goes with it (the
    /// store has no garbage collector for owned objects).
    fn removal(
        &self,
        raw: &Value,
        item: &DeployItem,
        plan: &Plan,
    ) -> Result<Transaction, ReconcileError> {
        let mut updated = raw.clone();
        if plan.remove_test_reconcile_annotation {
            jobs::set_annotation(&mut updated, OPERATION_ANNOTATION, None);
        }
        jobs::remove_finalizer(&mut updated, LANDSCAPER_FINALIZER);
        let mut tx = Transaction::new();
        if &updated != raw {
            tx = tx.update(updated.clone());
        }
        if object::finalizers(&updated).is_empty()
            && let Some(reference) = item
                .status
                .as_ref()
                .and_then(|s| s.export_reference.as_ref())
        {
            tx = self.export_deletion(item, reference, tx)?;
        }
        Ok(tx)
    }

    fn export_deletion(
        &self,
        item: &DeployItem,
        reference: &ObjectReference,
        tx: Transaction,
    ) -> Result<Transaction, ReconcileError> {
        let namespace = if reference.namespace.is_empty() {
            item.metadata.namespace()
        } else {
            &reference.namespace
        };
        let key = ObjectKey::new(Kind::Secret, namespace, &reference.name);
        let Some(secret) = self.context.store.get(&key)? else {
            return Ok(tx);
        };
        let uid = item.metadata.uid.as_deref().unwrap_or_default();
        if uid.is_empty() || !object::owner_uids(&secret).iter().any(|u| u == uid) {
            // Not ours: leave it alone.
            return Ok(tx);
        }
        let resource_version = object::resource_version(&secret).to_string();
        Ok(tx.delete(key, Some(resource_version)))
    }

    /// Starts the deployer call the plan asks for and waits for it a short while: its answer is
    /// applied now, or, when the call takes longer, by the reconcile its end triggers.
    #[allow(clippy::too_many_arguments)]
    async fn start_call(
        &self,
        key: &ObjectKey,
        deployer: &Arc<dyn Deployer>,
        raw: &Value,
        item: &DeployItem,
        target: &TargetLookup,
        context: DeployContext,
        plan: &Plan,
        status: DeployItemStatus,
        delete: bool,
    ) -> Result<Outcome, ReconcileError> {
        let job = retry_job(&status, delete);
        if let Some(left) = self.retries.wait_left(key, &job, std::time::Instant::now()) {
            // The cluster was unreachable: the next attempt waits for its interval even when
            // the item's own status write woke it.
            return Ok(Outcome::RequeueAfter(left));
        }
        let mut picked = item.clone();
        picked.status = Some(status.clone());
        let secondary = {
            // A consistent read that does not stay open across the call.
            let snapshot = self.context.store.snapshot()?;
            self.secondary_targets(&snapshot, deployer.as_ref(), &picked)?
        };
        let now = self.context.clock.now();
        let (deadline, time_left) = calls::deadline(&picked, &status, now, self.timeouts());
        let started = Started {
            raw: raw.clone(),
            item: item.clone(),
            picked,
            plan: plan.clone(),
            status,
        };
        let request = calls::Request {
            deployer: deployer.clone(),
            target: target.resolved().map(|t| t.target.clone()),
            secondary,
            context,
            deadline,
            time_left,
            delete,
        };
        let answer = self
            .calls
            .start(
                key,
                started,
                request,
                self.context.clone(),
                self.context.config.deployer_call_inline_wait,
            )
            .await;
        match answer {
            Some((started, answer)) => self.finish(started, answer).await,
            None => Ok(Outcome::Done),
        }
    }

    /// Applies a deployer's answer to the item as it was when the call started: the write
    /// carries that resourceVersion, so a change meanwhile (a new job, an interrupt) conflicts
    /// and the item is looked at again from scratch.
    async fn finish(&self, started: Started, answer: Answer) -> Result<Outcome, ReconcileError> {
        let Started {
            raw,
            item,
            picked,
            plan,
            status,
        } = started;
        let now = self.context.clock.now();
        let key = ObjectKey::new(
            Kind::DeployItem,
            item.metadata.namespace(),
            item.metadata.name(),
        );
        let delete = matches!(answer, Answer::Delete(_));
        let job = retry_job(&status, delete);
        let (_, time_left) = calls::deadline(&picked, &status, now, self.timeouts());
        let error = match &answer {
            Answer::Reconcile(Err(e)) | Answer::Delete(Err(e)) => Some(e.clone()),
            _ => None,
        };
        let backoff = self.log_attempt(&key, &job, delete, error.as_ref());
        let requeue = |requeue_after: Option<std::time::Duration>| match (requeue_after, backoff) {
            (Some(after), Some(backoff)) => Some(
                after
                    .max(backoff.min(time_left))
                    .max(std::time::Duration::from_millis(1)),
            ),
            (after, _) => after,
        };
        match answer {
            Answer::Reconcile(result) => {
                let step =
                    contract::apply_reconcile_result(&picked, status, result, now, self.timeouts());
                let mut tx = Self::item_write(&raw, &step.status, &plan, Transaction::new());
                if let Some((reference, value)) = &step.export {
                    let key = ObjectKey::new(Kind::Secret, &reference.namespace, &reference.name);
                    let existing = self.context.store.get(&key)?;
                    if let Some(secret) =
                        export::export_secret(&picked, reference, value, existing.as_ref())
                    {
                        tx = if existing.is_some() {
                            tx.update(secret)
                        } else {
                            tx.create(secret)
                        };
                    }
                }
                self.commit(tx).await?;
                Ok(outcome(requeue(step.requeue_after)))
            }
            Answer::Delete(result) => {
                match contract::apply_delete_result(&picked, status, result, now, self.timeouts()) {
                    DeleteStep::Remove => {
                        let tx = self.removal(&raw, &item, &plan)?;
                        self.commit(tx).await?;
                        Ok(Outcome::Done)
                    }
                    DeleteStep::Keep {
                        status,
                        requeue_after,
                    } => {
                        let tx = Self::item_write(&raw, &status, &plan, Transaction::new());
                        self.commit(tx).await?;
                        Ok(outcome(requeue(requeue_after)))
                    }
                }
            }
        }
    }

    /// Logs a deployer call's result once per change of state (WARN when the item starts
    /// failing or fails differently, DEBUG for repeats, INFO when it recovers); the backoff of
    /// an unreachable cluster.
    fn log_attempt(
        &self,
        key: &ObjectKey,
        job: &str,
        delete: bool,
        error: Option<&landscaper_store::model::Error>,
    ) -> Option<std::time::Duration> {
        let call = if delete { "delete" } else { "reconcile" };
        let item = format!("{}/{}", key.namespace, key.name);
        let Some(e) = error else {
            if self.retries.succeeded(key) {
                tracing::info!(%item, call = %call, "deployer call succeeded again");
            }
            return None;
        };
        let failure = self
            .retries
            .failed(key, job, &e.to_string(), std::time::Instant::now());
        let retry_in = failure
            .retry_after
            .map(|d| format!("{}s", d.as_secs()))
            .unwrap_or_else(|| "5s".into());
        if failure.changed {
            tracing::warn!(%item, call = %call, reason = %e.reason, error = ?e.message, attempt = failure.attempts, %retry_in, "deployer call failed");
        } else {
            tracing::debug!(%item, call = %call, reason = %e.reason, attempt = failure.attempts, %retry_in, "deployer call failed again");
        }
        failure.retry_after
    }
}

/// The job a deployer call belongs to, for [`retries::Retries`].
fn retry_job(status: &DeployItemStatus, delete: bool) -> String {
    format!(
        "{}/{}",
        status.job_id.as_deref().unwrap_or_default(),
        if delete { "delete" } else { "reconcile" }
    )
}

fn outcome(requeue_after: Option<std::time::Duration>) -> Outcome {
    requeue_after.map_or(Outcome::Done, Outcome::RequeueAfter)
}

impl Reconciler for DeployItemReconciler {
    const KIND: Kind = Kind::DeployItem;

    async fn record_failure(
        &self,
        key: &ObjectKey,
        error: &super::lserror::LsError,
    ) -> Result<(), ReconcileError> {
        super::jobs::record_last_error(&self.context, key, error).await
    }

    async fn reconcile(&self, key: &ObjectKey) -> Result<Outcome, ReconcileError> {
        let raw = self.context.store.get(key)?;
        // A call started earlier: apply its answer, or wait for it.
        match self.calls.poll(key, raw.as_ref()) {
            calls::Poll::Running => return Ok(Outcome::Done),
            calls::Poll::Answered(started, answer) => return self.finish(*started, answer).await,
            calls::Poll::None => {}
        }
        let Some(raw) = raw else {
            return Ok(Outcome::Done);
        };
        let item: DeployItem = match from_value(&raw) {
            Ok(item) => item,
            Err(e) => {
                tracing::warn!(%key, error = %e, "unreadable deploy item");
                return Ok(Outcome::Done);
            }
        };
        let served = self.registry().contains_key(&item.spec.r#type);
        let finished = item.status.as_ref().is_none_or(is_job_finished);
        if finished && !(served && has_test_reconcile(&item)) {
            return Ok(Outcome::Done);
        }

        // One consistent read of what the plan needs (Target, its Secret, Context), as the
        // installation and execution controllers read; it does not stay open across the call.
        let snapshot = self.context.store.snapshot()?;
        let target = self.lookup_target(&snapshot, &item)?;
        // Landscaper's responsibility check: the deployer of the type, if it accepts the
        // Target's type (an unresolvable Target is looked at by the deployer of the type).
        let deployer = self
            .registry()
            .responsible(&item.spec.r#type, target.resolved().map(|t| &t.target))
            .cloned();
        let context = match deployer {
            Some(_) => Some(self.load_context(&snapshot, &item)?),
            None => None,
        };
        drop(snapshot);
        let context_error = context.as_ref().and_then(|c| c.as_ref().err());
        let info = deployer
            .as_ref()
            .map(|d| self.deployer_information(d.item_type()));
        let input = Input {
            item: &item,
            deployer: info.as_ref(),
            target: &target,
            context_error: context_error.map(String::as_str),
            now: self.context.clock.now(),
            timeouts: self.timeouts(),
        };
        let plan = contract::plan(&input, jobs::new_job_id);

        match plan.decision.clone() {
            Decision::Skip => Ok(Outcome::Done),
            Decision::Wait {
                requeue_after,
                blocked_by,
            } => {
                if let Some(reason) = blocked_by {
                    tracing::info!(%key, %reason, "deploy item waits for its target");
                }
                if let Some(status) = contract::no_deployer_notice(&input) {
                    tracing::info!(%key, item_type = %item.spec.r#type, "no deployer serves the deploy item's type");
                    let tx = Self::item_write(&raw, &status, &plan, Transaction::new());
                    self.commit(tx).await?;
                }
                Ok(Outcome::RequeueAfter(requeue_after))
            }
            Decision::Conclude {
                status,
                conclusion,
                requeue_after,
            } => {
                if let Some(e) = &status.last_error {
                    let phase = status.phase.as_ref().map(|p| p.as_str()).unwrap_or("-");
                    tracing::debug!(%key, conclusion = ?conclusion, phase = %phase, reason = %e.reason, error = ?e.message, "deploy item concluded");
                }
                let tx = Self::item_write(&raw, &status, &plan, Transaction::new());
                self.commit(tx).await?;
                Ok(outcome(requeue_after))
            }
            Decision::RemoveFinalizerOnly { .. } => {
                let tx = self.removal(&raw, &item, &plan)?;
                self.commit(tx).await?;
                Ok(Outcome::Done)
            }
            Decision::CallReconcile { status } | Decision::CallDelete { status } => {
                let delete = matches!(plan.decision, Decision::CallDelete { .. });
                let (Some(deployer), Some(Ok(context))) = (deployer, context) else {
                    return Ok(Outcome::Done);
                };
                self.start_call(
                    key, &deployer, &raw, &item, &target, context, &plan, status, delete,
                )
                .await
            }
        }
    }
}

#[cfg(test)]
mod tests;
