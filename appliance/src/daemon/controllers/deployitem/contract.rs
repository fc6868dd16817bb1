//! Landscaper's deployer contract as pure functions: what to do with a deploy item
//! ([`plan`]), and how a deployer's answer changes its status ([`apply_reconcile_result`],
//! [`apply_delete_result`], [`handle_reconcile_result`]).
//!
//! Sources: `pkg/deployer/lib/controller.go` (`reconcilePrivate`, `reconcile`, `delete`,
//! `initStatus`, `buildResult`), `pkg/deployer/lib/utils.go` (`HandleReconcileResult`),
//! `pkg/deployer/lib/timeout/standard_timeoutchecker.go` and
//! `pkg/landscaper/controllers/deployitem/reconcile.go` (pickup timeout).
//!
//! The contract's invariant: `jobIDFinished == jobID` is written only together with a final
//! phase (`Succeeded`, `Failed`, `DeleteFailed`), in the same status.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use landscaper_deployers::{DeleteResult, DeployerError, ReconcileResult, mock};
use landscaper_store::clock::format_time;
use landscaper_store::model::constants::{
    CONDITION_DEPLOY_ITEM_VALIDATION, CONDITION_FALSE, CONDITION_TRUE,
    DELETE_WITHOUT_UNINSTALL_ANNOTATION, MESSAGE_SUCCESSFUL_VALIDATION, MOCK_DEPLOYER_TYPE,
    OPERATION_ANNOTATION, OPERATION_TEST_RECONCILE, PICKUP_TIMEOUT_OPERATION,
    PICKUP_TIMEOUT_REASON, PROGRESSING_TIMEOUT_REASON, REASON_FAILED_UNMARSHAL,
    REASON_SUCCESSFUL_VALIDATION,
};
use landscaper_store::model::{
    DeployItem, DeployItemStatus, DeployerInformation, Error as StatusError, ObjectReference,
    Phase, TransitionTimes,
};
use landscaper_workflow::conditions::set_condition;
use serde_json::Value;

use super::export::export_reference;
use super::target::{ResolvedTarget, validate_target};
use crate::daemon::controllers::lserror::{LsError, updated_error};

/// A running item is looked at again after this long (`buildResult`), and recoverable
/// errors are retried at this interval.
pub const RETRY_INTERVAL: Duration = Duration::from_secs(5);
/// The pickup check runs again this long after the pickup timeout would expire.
const PICKUP_RECHECK_SLACK: Duration = Duration::from_secs(5);
/// `status.lastErrors` keeps this many entries.
pub const MAX_LAST_ERRORS: usize = 5;

/// Operation of progressing-timeout errors (as the deployers' standard timeout checker).
pub const PROGRESSING_TIMEOUT_OPERATION: &str = "StandardTimeoutChecker.TimeoutExceeded";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// `None` (or zero) disables the pickup check.
    pub pickup: Option<Duration>,
    /// Used when the item has no `spec.timeout`.
    pub progressing: Duration,
}

/// What looking up `spec.target` found.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetLookup {
    /// The item names no target.
    NotReferenced,
    Found(Box<ResolvedTarget>),
    /// The named Target does not exist.
    NotFound,
    /// The Target exists but could not be resolved (e.g. its Secret is missing); retried.
    Unresolvable(String),
}

impl TargetLookup {
    pub fn resolved(&self) -> Option<&ResolvedTarget> {
        match self {
            TargetLookup::Found(t) => Some(t.as_ref()),
            _ => None,
        }
    }
}

/// Everything [`plan`] decides on.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    pub item: &'a DeployItem,
    /// The built-in deployer serving `spec.type`, if any.
    pub deployer: Option<&'a DeployerInformation>,
    pub target: &'a TargetLookup,
    /// Why the item's Context could not be loaded, if it could not.
    pub context_error: Option<&'a str>,
    pub now: Timestamp,
    pub timeouts: Timeouts,
}

/// The decision plus the metadata edits that go with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub decision: Decision,
    /// Add `finalizer.landscaper.gardener.cloud` (the reconcile path of a served item).
    pub add_finalizer: bool,
    /// Remove the `operation: test-reconcile` annotation (it started a job).
    pub remove_test_reconcile_annotation: bool,
}

impl Plan {
    fn only(decision: Decision) -> Plan {
        Plan {
            decision,
            add_finalizer: false,
            remove_test_reconcile_annotation: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Nothing to do: the job is finished, or the item is not ours and needs no check.
    Skip,
    /// Not picked up (yet), or the target cannot be resolved; look again after this long.
    Wait {
        requeue_after: Duration,
        blocked_by: Option<String>,
    },
    /// Write this status and nothing else; requeue if the phase is not final.
    Conclude {
        status: DeployItemStatus,
        conclusion: Conclusion,
        requeue_after: Option<Duration>,
    },
    /// Call the deployer's reconcile with the item carrying this (picked-up) status.
    CallReconcile { status: DeployItemStatus },
    /// Call the deployer's delete with the item carrying this (picked-up) status.
    CallDelete { status: DeployItemStatus },
    /// `delete-without-uninstall`: only remove the finalizer.
    RemoveFinalizerOnly { status: DeployItemStatus },
}

/// Why a status is written without calling the deployer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conclusion {
    /// No deployer reconciled the item in time: `Failed`, `PickupTimeout`.
    PickupTimeout,
    /// The referenced Target does not exist: `Failed`, `NoTargetFound`.
    NoTargetFound,
    /// `updateOnChangeOnly` and nothing changed since the last success: `Succeeded` again.
    Unchanged,
    /// `ValidateTarget` failed: `Failed`, `ERR_CONFIGURATION_PROBLEM`.
    InvalidTarget,
    /// Empty `spec.config`: `Failed`, `ProviderConfigurationMissing`.
    ConfigurationMissing,
    /// `spec.timeout` passed since `transitionTimes.initTime`: `Failed`, `ProgressingTimeout`.
    ProgressingTimeout,
    /// The Context cannot be loaded: recoverable, retried.
    ContextMissing,
}

pub fn is_deleting(item: &DeployItem) -> bool {
    item.metadata.is_deleting()
}

pub fn has_test_reconcile(item: &DeployItem) -> bool {
    item.metadata.annotation(OPERATION_ANNOTATION) == Some(OPERATION_TEST_RECONCILE)
}

pub fn has_delete_without_uninstall(item: &DeployItem) -> bool {
    item.metadata
        .annotation(DELETE_WITHOUT_UNINSTALL_ANNOTATION)
        == Some("true")
}

/// `jobID == jobIDFinished` (both absent counts as equal).
pub fn is_job_finished(status: &DeployItemStatus) -> bool {
    status.job_id.as_deref().unwrap_or_default()
        == status.job_id_finished.as_deref().unwrap_or_default()
}

fn phase_is_final(status: &DeployItemStatus) -> bool {
    status.phase.as_ref().is_some_and(Phase::is_final)
}

pub fn parse_time(text: Option<&str>) -> Option<Timestamp> {
    text?.parse().ok()
}

/// `now - since` as a duration, zero when `since` is in the future.
fn elapsed(now: Timestamp, since: Timestamp) -> Duration {
    Duration::try_from(now.duration_since(since)).unwrap_or(Duration::ZERO)
}

/// `HasBeenPickedUp`: `lastReconcileTime` is set and not before `jobIDGenerationTime`.
pub fn has_been_picked_up(status: &DeployItemStatus) -> bool {
    let Some(reconciled) = parse_time(status.last_reconcile_time.as_deref()) else {
        return false;
    };
    match parse_time(status.job_id_generation_time.as_deref()) {
        Some(generated) => reconciled >= generated,
        None => true,
    }
}

pub use landscaper_deployers::deployer_short_name;

/// The end of the item's progressing time: `transitionTimes.initTime + spec.timeout` (default
/// from the configuration). `None` without an init time, or when it lies beyond the calendar.
pub fn progressing_deadline(
    item: &DeployItem,
    status: &DeployItemStatus,
    timeouts: Timeouts,
) -> Option<Timestamp> {
    let init = parse_time(
        status
            .transition_times
            .as_ref()
            .and_then(|t| t.init_time.as_deref()),
    )?;
    let timeout = item
        .spec
        .timeout
        .as_ref()
        .map_or(timeouts.progressing, |t| t.to_std());
    init.checked_add(SignedDuration::try_from(timeout).ok()?)
        .ok()
}

fn progressing_timeout_exceeded(
    item: &DeployItem,
    status: &DeployItemStatus,
    now: Timestamp,
    timeouts: Timeouts,
) -> bool {
    progressing_deadline(item, status, timeouts).is_some_and(|deadline| now >= deadline)
}

/// When to look at an item again (`buildResult`): never after a final phase, otherwise after
/// [`RETRY_INTERVAL`], earlier when the progressing timeout expires before.
pub fn requeue_after(
    item: &DeployItem,
    status: &DeployItemStatus,
    now: Timestamp,
    timeouts: Timeouts,
) -> Option<Duration> {
    if phase_is_final(status) {
        return None;
    }
    let mut after = RETRY_INTERVAL;
    if let Some(deadline) = progressing_deadline(item, status, timeouts) {
        let remaining = Duration::try_from(deadline.duration_since(now)).unwrap_or(Duration::ZERO);
        after = after.min(remaining.max(Duration::from_millis(1)));
    }
    Some(after)
}

/// `SetDeployItemToFailed`: `DeleteFailed` while deleting, else `Failed`.
pub fn set_failed(status: &mut DeployItemStatus, deleting: bool) {
    status.phase = Some(if deleting {
        Phase::DeleteFailed
    } else {
        Phase::Failed
    });
}

/// `lsutil.SetLastError`: lastError, the first error of the job, and the last few errors.
pub fn set_last_error(status: &mut DeployItemStatus, error: Option<StatusError>) {
    status.last_error = error.clone();
    if status.first_error.is_none() {
        status.first_error = error.clone();
    }
    if let Some(error) = error {
        let list = status.last_errors.get_or_insert_with(Vec::new);
        list.push(error);
        if list.len() > MAX_LAST_ERRORS {
            let excess = list.len() - MAX_LAST_ERRORS;
            list.drain(..excess);
        }
    }
}

fn transition_times(status: &mut DeployItemStatus) -> &mut TransitionTimes {
    status
        .transition_times
        .get_or_insert_with(TransitionTimes::default)
}

/// `initStatus`: the pickup fields (the phase is set by the caller).
pub fn init_status(
    status: &mut DeployItemStatus,
    item: &DeployItem,
    deployer: &DeployerInformation,
    now: &str,
) {
    status.observed_generation = item.metadata.generation();
    transition_times(status).init_time = Some(now.to_string());
    status.last_reconcile_time = Some(now.to_string());
    status.deployer = Some(deployer.clone());
    status.last_error = None;
    status.first_error = None;
    status.last_errors = None;
}

/// `HandleReconcileResult`: records `error` (or clears lastError), fails the item on an
/// unrecoverable code, and finishes the job when the phase is final.
pub fn handle_reconcile_result(
    mut status: DeployItemStatus,
    error: Option<&LsError>,
    deleting: bool,
    now: &str,
) -> DeployItemStatus {
    let last = updated_error(status.last_error.as_ref(), error, now);
    set_last_error(&mut status, last);
    if status
        .last_error
        .as_ref()
        .is_some_and(StatusError::is_unrecoverable)
    {
        set_failed(&mut status, deleting);
    }
    if phase_is_final(&status) {
        status.job_id_finished = status.job_id.clone();
        transition_times(&mut status).finished_time = Some(now.to_string());
    }
    status
}

/// The pickup timeout (`writePickupTimeoutExceeded`).
fn pickup_timeout_status(
    item: &DeployItem,
    mut status: DeployItemStatus,
    timeout: Duration,
    target_missing: bool,
    now: &str,
) -> DeployItemStatus {
    status.job_id_finished = status.job_id.clone();
    transition_times(&mut status).finished_time = Some(now.to_string());
    status.observed_generation = item.metadata.generation();
    set_failed(&mut status, is_deleting(item));
    let suffix = if target_missing {
        ", probably because the referenced Target does not exist"
    } else {
        ""
    };
    let error = LsError::timeout(
        PICKUP_TIMEOUT_OPERATION,
        PICKUP_TIMEOUT_REASON,
        format!(
            "no deployer has reconciled this deployitem within {} seconds{suffix}",
            timeout.as_secs()
        ),
    );
    let last = updated_error(status.last_error.as_ref(), Some(&error), now);
    set_last_error(&mut status, last);
    status
}

/// Reason of the notice on an item whose type no built-in deployer serves.
pub const NO_DEPLOYER_REASON: &str = "NoDeployer";

/// The status of an item no built-in deployer serves, carrying a (recoverable) notice in
/// `lastError` that says so, or `None` when the item carries it already, was picked up, or its
/// job is finished. Landscaper's pickup timeout still ends the item (and replaces the notice).
pub fn no_deployer_notice(input: &Input<'_>) -> Option<DeployItemStatus> {
    let item = input.item;
    let mut status = item.status.clone().unwrap_or_default();
    if input.deployer.is_some() || is_job_finished(&status) || has_been_picked_up(&status) {
        return None;
    }
    let ending = match input.timeouts.pickup.filter(|t| !t.is_zero()) {
        Some(pickup) => format!(
            "it fails after the pickup timeout of {} seconds",
            pickup.as_secs()
        ),
        None => "the pickup timeout is disabled, so it waits".to_string(),
    };
    let message = format!(
        "no deployer for type {} on this appliance; {ending}",
        item.spec.r#type
    );
    if status
        .last_error
        .as_ref()
        .is_some_and(|e| e.reason == NO_DEPLOYER_REASON && e.message == message)
    {
        return None;
    }
    let notice = LsError::new(PICKUP_TIMEOUT_OPERATION, NO_DEPLOYER_REASON, message);
    // Only lastError: firstError stays for real errors.
    status.last_error = updated_error(None, Some(&notice), &format_time(input.now));
    Some(status)
}

/// For items nobody has picked up in this job: fail them after the pickup timeout. Items
/// already picked up (whose target became unresolvable) fail after the progressing timeout.
fn waiting(input: &Input<'_>, status: DeployItemStatus, blocked_by: Option<&str>) -> Decision {
    let item = input.item;
    let now = format_time(input.now);
    let retry_blocked = |after: Duration| Decision::Wait {
        requeue_after: if blocked_by.is_some() {
            after.min(RETRY_INTERVAL)
        } else {
            after
        },
        blocked_by: blocked_by.map(str::to_string),
    };
    let pickup = input.timeouts.pickup.filter(|t| !t.is_zero());
    if has_been_picked_up(&status) || pickup.is_none() {
        if blocked_by.is_none() {
            return Decision::Skip;
        }
        if input.deployer.is_some()
            && progressing_timeout_exceeded(item, &status, input.now, input.timeouts)
        {
            return progressing_timeout(input, status, &now);
        }
        return retry_blocked(
            requeue_after(item, &status, input.now, input.timeouts).unwrap_or(RETRY_INTERVAL),
        );
    }
    let pickup = pickup.unwrap_or_default();
    let waited = parse_time(status.job_id_generation_time.as_deref())
        .map_or(Duration::ZERO, |t| elapsed(input.now, t));
    if waited >= pickup {
        let target_missing = matches!(input.target, TargetLookup::NotFound);
        return Decision::Conclude {
            status: pickup_timeout_status(item, status, pickup, target_missing, &now),
            conclusion: Conclusion::PickupTimeout,
            requeue_after: None,
        };
    }
    retry_blocked(pickup - waited + PICKUP_RECHECK_SLACK)
}

fn conclude(input: &Input<'_>, status: DeployItemStatus, conclusion: Conclusion) -> Decision {
    let requeue_after = requeue_after(input.item, &status, input.now, input.timeouts);
    Decision::Conclude {
        status,
        conclusion,
        requeue_after,
    }
}

fn fail_with(
    input: &Input<'_>,
    status: DeployItemStatus,
    error: &LsError,
    conclusion: Conclusion,
    now: &str,
) -> Decision {
    let status = handle_reconcile_result(status, Some(error), is_deleting(input.item), now);
    conclude(input, status, conclusion)
}

/// The progressing-timeout error (`StandardTimeoutChecker.TimeoutExceeded`) at `checkpoint`,
/// by default where a deployer call starts (`manifest deployer: start reconcile`).
pub fn progressing_timeout_error(item: &DeployItem, checkpoint: Option<&str>) -> LsError {
    let checkpoint = match checkpoint {
        Some(c) => c.to_string(),
        None => {
            let step = if is_deleting(item) {
                "start delete"
            } else {
                "start reconcile"
            };
            format!(
                "{} deployer: {step}",
                deployer_short_name(&item.spec.r#type)
            )
        }
    };
    LsError::timeout(
        PROGRESSING_TIMEOUT_OPERATION,
        PROGRESSING_TIMEOUT_REASON,
        format!("timeout at: {checkpoint:?}"),
    )
}

/// The progressing timeout of an item that was waiting with a recoverable `lastError`: the
/// checkpoint the error's operation stands for (the readiness checks), and the error's message
/// as the cause (which object, why it is not ready).
pub fn progressing_timeout_with_cause(item: &DeployItem, last: Option<&StatusError>) -> LsError {
    let Some(last) = last.filter(|e| !e.is_unrecoverable() && !e.message.is_empty()) else {
        return progressing_timeout_error(item, None);
    };
    let short = deployer_short_name(&item.spec.r#type);
    let checkpoint = if last.operation.starts_with("DefaultCheckResourcesReadiness") {
        Some(format!("{short} deployer: default readiness checks"))
    } else if last.operation.starts_with("CustomCheckResourcesReadiness") {
        Some(format!("{short} deployer: custom readiness checks"))
    } else {
        None
    };
    let mut error = progressing_timeout_error(item, checkpoint.as_deref());
    error.message = format!("{}; last error: {}", error.message, last.message);
    error
}

/// A progressing timeout that cut a deployer call off (`timeout at: "…"`) names the cause the
/// item was failing with before, as [`progressing_timeout_with_cause`] does for a timeout seen
/// between calls: the last error of the job (`lastError`, else the newest of `lastErrors`) that
/// is not itself a timeout.
pub fn with_timeout_cause(mut error: LsError, status: &DeployItemStatus) -> LsError {
    const CAUSE: &str = "; last error: ";
    if error.reason != PROGRESSING_TIMEOUT_REASON || error.message.contains(CAUSE) {
        return error;
    }
    let cause = status
        .last_error
        .iter()
        .chain(status.last_errors.iter().flatten().rev())
        .find(|e| e.reason != PROGRESSING_TIMEOUT_REASON && !e.message.is_empty());
    if let Some(cause) = cause {
        error.message = format!("{}{CAUSE}{}", error.message, cause.message);
    }
    error
}

fn progressing_timeout(input: &Input<'_>, status: DeployItemStatus, now: &str) -> Decision {
    let error = progressing_timeout_with_cause(input.item, status.last_error.as_ref());
    fail_with(input, status, &error, Conclusion::ProgressingTimeout, now)
}

fn config_missing(config: Option<&Value>) -> bool {
    matches!(config, None | Some(Value::Null))
}

/// What to do with a deploy item (`reconcilePrivate` plus the Landscaper-side pickup check).
/// `new_job_id` is called only for a `test-reconcile`.
pub fn plan(input: &Input<'_>, new_job_id: impl FnOnce() -> String) -> Plan {
    let item = input.item;
    let now = format_time(input.now);
    let mut status = item.status.clone().unwrap_or_default();
    let deleting = is_deleting(item);
    let finished = is_job_finished(&status);

    let Some(deployer) = input.deployer else {
        // No built-in deployer serves this type: only Landscaper's pickup check applies.
        if finished {
            return Plan::only(Decision::Skip);
        }
        return Plan::only(waiting(input, status, None));
    };
    let test_reconcile = has_test_reconcile(item);
    if finished && !test_reconcile {
        return Plan::only(Decision::Skip);
    }
    if let TargetLookup::Unresolvable(e) = input.target {
        if finished {
            // Only a test-reconcile would start a job; it waits for the target.
            return Plan::only(Decision::Wait {
                requeue_after: RETRY_INTERVAL,
                blocked_by: Some(e.clone()),
            });
        }
        return Plan::only(waiting(input, status, Some(e)));
    }

    let mut plan = Plan {
        decision: Decision::Skip,
        add_finalizer: false,
        remove_test_reconcile_annotation: test_reconcile,
    };
    if test_reconcile {
        status.job_id = Some(new_job_id());
        status.transition_times = Some(TransitionTimes {
            trigger_time: Some(now.clone()),
            ..Default::default()
        });
    }

    if matches!(input.target, TargetLookup::NotFound) {
        set_failed(&mut status, deleting);
        let error = LsError::new(
            "reconcilePrivate",
            "NoTargetFound",
            "setting deploy item to failed due to missing target",
        );
        plan.decision = fail_with(input, status, &error, Conclusion::NoTargetFound, &now);
        return plan;
    }

    // Pickup: a new job on an item in a final (or no) phase starts with Init / InitDelete.
    if status
        .phase
        .as_ref()
        .is_none_or(|p| p.is_final() || p.is_empty())
    {
        if deleting {
            status.phase = Some(Phase::InitDelete);
        } else if item.spec.update_on_change_only == Some(true)
            && item.metadata.generation() == status.observed_generation
            && status.phase == Some(Phase::Succeeded)
            && !test_reconcile
        {
            init_status(&mut status, item, deployer, &now);
            let status = handle_reconcile_result(status, None, false, &now);
            plan.decision = conclude(input, status, Conclusion::Unchanged);
            return plan;
        } else {
            status.phase = Some(Phase::Init);
        }
        init_status(&mut status, item, deployer, &now);
    }

    let operation = if deleting { "delete" } else { "reconcile" };
    plan.add_finalizer = !deleting;
    if let Err(message) = validate_target(input.target.resolved()) {
        let error = LsError::configuration_problem(operation, "ValidateTarget", message);
        plan.decision = fail_with(input, status, &error, Conclusion::InvalidTarget, &now);
        return plan;
    }
    if deleting && has_delete_without_uninstall(item) {
        plan.decision = Decision::RemoveFinalizerOnly { status };
        return plan;
    }
    if !deleting && config_missing(item.spec.config.as_ref()) {
        let error = LsError::configuration_problem(
            operation,
            "ProviderConfigurationMissing",
            "provider configuration missing",
        );
        plan.decision = fail_with(
            input,
            status,
            &error,
            Conclusion::ConfigurationMissing,
            &now,
        );
        return plan;
    }
    if progressing_timeout_exceeded(item, &status, input.now, input.timeouts) {
        plan.decision = progressing_timeout(input, status, &now);
        return plan;
    }
    if let Some(message) = input.context_error {
        let error = LsError::new(operation, "GetLandscaperContext", message);
        plan.decision = fail_with(input, status, &error, Conclusion::ContextMissing, &now);
        return plan;
    }
    plan.decision = if deleting {
        Decision::CallDelete { status }
    } else {
        Decision::CallReconcile { status }
    };
    plan
}

/// The item's status after a deployer reconcile, the export to write, and when to look again.
#[derive(Debug, Clone, PartialEq)]
pub struct ReconcileStep {
    pub status: DeployItemStatus,
    /// The export Secret's place and content, when the deployer exported something.
    pub export: Option<(ObjectReference, Value)>,
    pub requeue_after: Option<Duration>,
}

/// Applies a deployer's reconcile answer to the picked-up `status`: phase, providerStatus and
/// exportRef from a result, lastError from an error, then `HandleReconcileResult`.
pub fn apply_reconcile_result(
    item: &DeployItem,
    mut status: DeployItemStatus,
    result: Result<ReconcileResult, DeployerError>,
    now: Timestamp,
    timeouts: Timeouts,
) -> ReconcileStep {
    let now_text = format_time(now);
    let deleting = is_deleting(item);
    let mut export = None;
    record_validation(item, &mut status, &result, &now_text);
    let status = match result {
        Ok(result) => {
            if let Some(phase) = result.phase {
                status.phase = Some(phase);
            }
            if let Some(provider_status) = result.provider_status {
                status.provider_status = Some(provider_status);
            }
            if let Some(value) = result.export {
                let reference = export_reference(item, status.export_reference.as_ref());
                status.export_reference = Some(reference.clone());
                export = Some((reference, value));
            }
            handle_reconcile_result(status, None, deleting, &now_text)
        }
        Err(e) => {
            let e = with_timeout_cause(e, &status);
            handle_reconcile_result(status, Some(&e), deleting, &now_text)
        }
    };
    let requeue_after = requeue_after(item, &status, now, timeouts);
    ReconcileStep {
        status,
        export,
        requeue_after,
    }
}

/// The mock deployer's `DeployItemValidation` condition (its `getConfig` on every reconcile):
/// `True`/`SuccessfullValidation` when the provider configuration could be read,
/// `False`/`FailedUnmarshal` with the decoding error when not. Landscaper's manifest and helm
/// deployers set no condition on their items.
pub fn record_validation(
    item: &DeployItem,
    status: &mut DeployItemStatus,
    result: &Result<ReconcileResult, DeployerError>,
    now: &str,
) {
    if item.spec.r#type != MOCK_DEPLOYER_TYPE {
        return;
    }
    let (condition_status, reason, message) = match result {
        Ok(_) => (
            CONDITION_TRUE,
            REASON_SUCCESSFUL_VALIDATION,
            MESSAGE_SUCCESSFUL_VALIDATION,
        ),
        Err(e) if e.reason == mock::INVALID_CONFIGURATION_REASON => {
            (CONDITION_FALSE, REASON_FAILED_UNMARSHAL, e.message.as_str())
        }
        Err(_) => return,
    };
    let list = status.conditions.get_or_insert_with(Vec::new);
    set_condition(
        list,
        CONDITION_DEPLOY_ITEM_VALIDATION,
        condition_status,
        reason,
        message,
        now,
    );
}

/// What follows a deployer's delete answer.
#[derive(Debug, Clone, PartialEq)]
pub enum DeleteStep {
    /// Everything is removed: remove the finalizer (and the item's export).
    Remove,
    /// Still deleting, or failed: write the status, look again if not final.
    Keep {
        status: Box<DeployItemStatus>,
        requeue_after: Option<Duration>,
    },
}

pub fn apply_delete_result(
    item: &DeployItem,
    mut status: DeployItemStatus,
    result: Result<DeleteResult, DeployerError>,
    now: Timestamp,
    timeouts: Timeouts,
) -> DeleteStep {
    let now_text = format_time(now);
    let status = match result {
        Ok(DeleteResult::Deleted) => return DeleteStep::Remove,
        Ok(DeleteResult::Pending) => {
            status.phase = Some(Phase::Deleting);
            handle_reconcile_result(status, None, true, &now_text)
        }
        Err(e) => {
            let e = with_timeout_cause(e, &status);
            handle_reconcile_result(status, Some(&e), true, &now_text)
        }
    };
    let requeue_after = requeue_after(item, &status, now, timeouts);
    DeleteStep::Keep {
        status: Box::new(status),
        requeue_after,
    }
}

#[cfg(test)]
#[path = "contract_tests.rs"]
mod tests;
