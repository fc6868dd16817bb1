//! Helm hooks as Helm 3.19 runs them (`pkg/action/hooks.go`), for real Helm releases.
//!
//! A chart's hook documents (separated from the manifest by `landscaper_charts::sort`) become
//! the release record's [`Hook`]s (`release::model::Hook`, exactly Helm's `hooks` JSON), so the
//! records store them as they are. For one [`HookEvent`], [`plan_hooks`] decides which hooks
//! run and in which order (weight, then name, stable over Helm's kind order), and [`run_hooks`]
//! executes that plan over a [`ClusterClient`]:
//!
//! 1. delete the hook's objects if its policies include `before-hook-creation` (the default
//!    when a hook names no policy), and wait until they are gone;
//! 2. create the objects (in the release namespace unless they name one);
//! 3. wait for Jobs to be `Complete` (or `Failed`) and for Pods to reach `Succeeded` (or
//!    `Failed`); other kinds are done once created;
//! 4. on failure: delete the failed hook if it has `hook-failed`, and the hooks that already
//!    succeeded if they have `hook-succeeded`, then return the error; after all succeeded:
//!    delete every hook with `hook-succeeded`, in reverse order.
//!
//! `CustomResourceDefinition` hooks are never deleted. Test hooks (`test`, `test-success`)
//! are never run. Each hook's `last_run` (started, completed, phase) is recorded in place; as
//! Helm's `execHook` (`cfg.recordRelease`), [`run_hooks_recorded`] also has the release record
//! written with the hook `Running` before the hook's objects are created.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::release::model::{Hook, HookExecution, HookPhase};
use crate::BoxFuture;
use crate::kubernetes::{ClusterClient, ClusterError, Deletion, ObjectRef};

pub const HOOK_ANNOTATION: &str = "helm.sh/hook";
pub const HOOK_WEIGHT_ANNOTATION: &str = "helm.sh/hook-weight";
pub const HOOK_DELETE_ANNOTATION: &str = "helm.sh/hook-delete-policy";
pub const HOOK_OUTPUT_LOG_ANNOTATION: &str = "helm.sh/hook-output-log-policy";

/// `release.HookEvent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HookEvent {
    #[serde(rename = "pre-install")]
    PreInstall,
    #[serde(rename = "post-install")]
    PostInstall,
    #[serde(rename = "pre-delete")]
    PreDelete,
    #[serde(rename = "post-delete")]
    PostDelete,
    #[serde(rename = "pre-upgrade")]
    PreUpgrade,
    #[serde(rename = "post-upgrade")]
    PostUpgrade,
    #[serde(rename = "pre-rollback")]
    PreRollback,
    #[serde(rename = "post-rollback")]
    PostRollback,
    #[serde(rename = "test")]
    Test,
}

impl HookEvent {
    pub const ALL: [HookEvent; 9] = [
        HookEvent::PreInstall,
        HookEvent::PostInstall,
        HookEvent::PreDelete,
        HookEvent::PostDelete,
        HookEvent::PreUpgrade,
        HookEvent::PostUpgrade,
        HookEvent::PreRollback,
        HookEvent::PostRollback,
        HookEvent::Test,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreInstall => "pre-install",
            HookEvent::PostInstall => "post-install",
            HookEvent::PreDelete => "pre-delete",
            HookEvent::PostDelete => "post-delete",
            HookEvent::PreUpgrade => "pre-upgrade",
            HookEvent::PostUpgrade => "post-upgrade",
            HookEvent::PreRollback => "pre-rollback",
            HookEvent::PostRollback => "post-rollback",
            HookEvent::Test => "test",
        }
    }

    /// The event of an annotation value (`test-success` is `test`), as Helm's sorter reads it.
    pub fn parse(text: &str) -> Option<HookEvent> {
        let text = text.trim().to_lowercase();
        if text == "test-success" {
            return Some(HookEvent::Test);
        }
        HookEvent::ALL.into_iter().find(|e| e.as_str() == text)
    }
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `release.HookDeletePolicy`. Unknown values are kept (Helm stores them and ignores them).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum HookDeletePolicy {
    HookSucceeded,
    HookFailed,
    BeforeHookCreation,
    Other(String),
}

impl HookDeletePolicy {
    pub fn as_str(&self) -> &str {
        match self {
            HookDeletePolicy::HookSucceeded => "hook-succeeded",
            HookDeletePolicy::HookFailed => "hook-failed",
            HookDeletePolicy::BeforeHookCreation => "before-hook-creation",
            HookDeletePolicy::Other(s) => s,
        }
    }
}

impl From<String> for HookDeletePolicy {
    fn from(s: String) -> Self {
        match s.as_str() {
            "hook-succeeded" => HookDeletePolicy::HookSucceeded,
            "hook-failed" => HookDeletePolicy::HookFailed,
            "before-hook-creation" => HookDeletePolicy::BeforeHookCreation,
            _ => HookDeletePolicy::Other(s),
        }
    }
}

impl From<HookDeletePolicy> for String {
    fn from(p: HookDeletePolicy) -> Self {
        p.as_str().to_string()
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HookError {
    /// The hook's document is not a Kubernetes object.
    #[error("unable to build kubernetes object for {event} hook {path}: {message}")]
    Build {
        event: String,
        path: String,
        message: String,
    },
    /// Deleting the hook's object (by a delete policy) failed.
    #[error("hook {event} {path}: deleting {object} ({policy}): {source}")]
    Delete {
        event: HookEvent,
        path: String,
        object: String,
        policy: String,
        source: ClusterError,
    },
    /// The object did not go away within the timeout.
    #[error("hook {event} {path}: timed out after {timeout:?} waiting for {object} to be deleted")]
    DeleteTimeout {
        event: HookEvent,
        path: String,
        object: String,
        timeout: Duration,
    },
    #[error("warning: Hook {event} {path} failed: creating {object}: {source}")]
    Create {
        event: HookEvent,
        path: String,
        object: String,
        source: ClusterError,
    },
    /// A Job reported `Failed` or a Pod reached phase `Failed`.
    #[error("hook {event} {path} failed: {object} failed: {reason}")]
    Failed {
        event: HookEvent,
        path: String,
        object: String,
        reason: String,
    },
    #[error(
        "hook {event} {path} failed: timed out after {timeout:?} waiting for {object} to complete"
    )]
    Timeout {
        event: HookEvent,
        path: String,
        object: String,
        timeout: Duration,
    },
    /// Reading the hook's object while waiting failed.
    #[error("hook {event} {path}: watching {object}: {source}")]
    Watch {
        event: HookEvent,
        path: String,
        object: String,
        source: ClusterError,
    },
}

impl HookError {
    /// The cluster error behind this one, if any (e.g. to tell an unreachable target).
    pub fn cluster_error(&self) -> Option<&ClusterError> {
        match self {
            HookError::Delete { source, .. }
            | HookError::Create { source, .. }
            | HookError::Watch { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Builds the release hooks from a chart's rendered hook documents (Helm's manifest sorter):
/// name, kind, path, manifest, events and weight as the sorter read them, delete and
/// output-log policies from the annotations (`operateAnnotationValues`: comma separated,
/// trimmed, lower-cased). The one place hooks of a record are made.
pub fn hooks_from_manifests(
    manifests: &[landscaper_charts::Manifest],
) -> Result<Vec<Hook>, HookError> {
    manifests
        .iter()
        .map(|m| {
            let object = parse_object(&m.content).map_err(|message| HookError::Build {
                event: m.events.join(","),
                path: m.path.clone(),
                message,
            })?;
            Ok(Hook {
                name: m.name.clone(),
                kind: m.kind.clone(),
                path: m.path.clone(),
                manifest: m.content.clone(),
                events: m.events.clone(),
                last_run: HookExecution::default(),
                weight: m.weight,
                delete_policies: annotation_values(&object, HOOK_DELETE_ANNOTATION),
                output_log_policies: annotation_values(&object, HOOK_OUTPUT_LOG_ANNOTATION),
            })
        })
        .collect()
}

/// The comma-separated values of an annotation, trimmed and lower-cased.
fn annotation_values(object: &Value, key: &str) -> Vec<String> {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .map(|v| v.split(',').map(|p| p.trim().to_lowercase()).collect())
        .unwrap_or_default()
}

/// One document as a JSON object (`null` documents and non-objects are errors).
fn parse_object(text: &str) -> Result<Value, String> {
    let value: Value = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
    if !value.is_object() {
        return Err("the document is not an object".into());
    }
    Ok(value)
}

/// What waiting for a hook means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitFor {
    /// A Job: until condition `Complete` or `Failed` is `True`.
    JobCompletion,
    /// A Pod: until phase `Succeeded` or `Failed`.
    PodCompletion,
    /// Anything else: done once created.
    Nothing,
}

/// One hook to run, in order, with what the policies say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedHook {
    /// Index into the hooks given to [`plan_hooks`].
    pub index: usize,
    /// The policies in effect (`before-hook-creation` when the hook names none).
    pub policies: Vec<HookDeletePolicy>,
    pub delete_before_create: bool,
    pub wait: WaitFor,
    /// Deleted once all hooks of the event succeeded (or a later one failed).
    pub delete_on_success: bool,
    /// Deleted when it fails.
    pub delete_on_failure: bool,
}

/// The hooks of `event` in execution order: weight, then name, stable (hooks come in Helm's
/// kind order from the sorter). Test hooks are never planned, whatever the event.
pub fn plan_hooks(event: HookEvent, hooks: &[Hook]) -> Vec<PlannedHook> {
    if event == HookEvent::Test {
        return Vec::new();
    }
    let mut selected: Vec<usize> = (0..hooks.len())
        .filter(|&i| hooks[i].events.iter().any(|e| e == event.as_str()))
        .collect();
    selected.sort_by(|&a, &b| {
        (hooks[a].weight, &hooks[a].name).cmp(&(hooks[b].weight, &hooks[b].name))
    });
    selected
        .into_iter()
        .map(|index| {
            let hook = &hooks[index];
            let policies: Vec<HookDeletePolicy> = if hook.delete_policies.is_empty() {
                vec![HookDeletePolicy::BeforeHookCreation]
            } else {
                hook.delete_policies
                    .iter()
                    .map(|p| HookDeletePolicy::from(p.clone()))
                    .collect()
            };
            // CustomResourceDefinitions are never deleted (cascading garbage collection).
            let deletable = hook.kind != "CustomResourceDefinition";
            let has = |p: HookDeletePolicy| deletable && policies.contains(&p);
            PlannedHook {
                index,
                delete_before_create: has(HookDeletePolicy::BeforeHookCreation),
                delete_on_success: has(HookDeletePolicy::HookSucceeded),
                delete_on_failure: has(HookDeletePolicy::HookFailed),
                wait: match hook.kind.as_str() {
                    "Job" => WaitFor::JobCompletion,
                    "Pod" => WaitFor::PodCompletion,
                    _ => WaitFor::Nothing,
                },
                policies,
            }
        })
        .collect()
}

/// How [`run_hooks`] talks to the cluster.
#[derive(Debug, Clone)]
pub struct HookOptions {
    /// The release namespace: hook objects of namespaced kinds without a namespace go there.
    pub namespace: String,
    /// Per hook, as Helm's `--timeout`: for waiting until it completes and until deleted
    /// objects are gone.
    pub timeout: Duration,
    /// How often the hook's object is read while waiting.
    pub poll_interval: Duration,
}

impl HookOptions {
    pub fn new(namespace: &str, timeout: Duration) -> HookOptions {
        HookOptions {
            namespace: namespace.to_string(),
            timeout,
            poll_interval: Duration::from_millis(250),
        }
    }
}

fn now() -> Option<jiff::Timestamp> {
    Some(jiff::Timestamp::now())
}

/// Runs the hooks of `event` (Helm's `execHook`), updating each run hook in place: the default
/// delete policy is filled in (as Helm stores it) and `last_run` gets `started_at`,
/// `completed_at` and the phase (`Succeeded`/`Failed`). On error the hooks keep what happened
/// so far, so the caller can store the failed release with them.
///
/// The release helper calls it between its steps, e.g. for an install:
/// `run_hooks(client, HookEvent::PreInstall, &mut release.hooks, &opts)`, create the
/// resources, then `HookEvent::PostInstall`; the error (which names the event, the hook's
/// template path, the object and the reason) becomes the release description as Helm's
/// `failed pre-install: <error>`.
pub async fn run_hooks(
    client: &dyn ClusterClient,
    event: HookEvent,
    hooks: &mut [Hook],
    options: &HookOptions,
) -> Result<(), HookError> {
    run_hooks_recorded(client, event, hooks, options, &NoRecord).await
}

/// Writes the release with its hooks as they are (Helm's `cfg.recordRelease(rl)` in
/// `execHook`, right after a hook's `last_run` became `Running`). A failed write is only
/// logged, as Helm does.
pub trait HookRecorder: Send + Sync {
    fn record<'a>(&'a self, hooks: &'a [Hook]) -> BoxFuture<'a, ()>;
}

/// Records nothing.
struct NoRecord;

impl HookRecorder for NoRecord {
    fn record<'a>(&'a self, _hooks: &'a [Hook]) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// [`run_hooks`], with `recorder` called each time a hook turns `Running` (before its objects
/// are created), so the stored release shows the hook running while it is waited for, and a
/// run cut short leaves it so, as with Helm.
pub async fn run_hooks_recorded(
    client: &dyn ClusterClient,
    event: HookEvent,
    hooks: &mut [Hook],
    options: &HookOptions,
    recorder: &dyn HookRecorder,
) -> Result<(), HookError> {
    let plan = plan_hooks(event, hooks);
    for (position, step) in plan.iter().enumerate() {
        let hook = &mut hooks[step.index];
        hook.delete_policies = step
            .policies
            .iter()
            .map(|p| p.as_str().to_string())
            .collect();
        let object = build(client, event, hook, &options.namespace).await?;
        if step.delete_before_create {
            delete_hook(
                client,
                event,
                hook,
                &object,
                "before-hook-creation",
                options,
            )
            .await?;
        }
        hook.last_run = HookExecution {
            started_at: now(),
            completed_at: None,
            phase: HookPhase::Running,
        };
        recorder.record(hooks).await;
        let hook = &mut hooks[step.index];
        let outcome = match client.create(&object).await {
            Err(source) => Err(HookError::Create {
                event,
                path: hook.path.clone(),
                object: ObjectRef::of(&object).to_string(),
                source,
            }),
            Ok(_) => wait_for(client, event, hook, &object, step.wait, options).await,
        };
        hook.last_run.completed_at = now();
        match outcome {
            Ok(()) => hook.last_run.phase = HookPhase::Succeeded,
            Err(error) => {
                hook.last_run.phase = HookPhase::Failed;
                if step.delete_on_failure
                    && let Err(e) =
                        delete_hook(client, event, hook, &object, "hook-failed", options).await
                {
                    // As Helm: the hook's own failure is what the release reports.
                    tracing::warn!("error deleting the hook resource on hook failure: {e}");
                }
                for earlier in &plan[..position] {
                    if earlier.delete_on_success {
                        let hook = &hooks[earlier.index];
                        let object = build(client, event, hook, &options.namespace).await?;
                        delete_hook(client, event, hook, &object, "hook-succeeded", options)
                            .await?;
                    }
                }
                return Err(error);
            }
        }
    }
    for step in plan.iter().rev() {
        if step.delete_on_success {
            let hook = &hooks[step.index];
            let object = build(client, event, hook, &options.namespace).await?;
            delete_hook(client, event, hook, &object, "hook-succeeded", options).await?;
        }
    }
    Ok(())
}

/// The hook's object, in the release namespace when it is namespaced and names none.
async fn build(
    client: &dyn ClusterClient,
    event: HookEvent,
    hook: &Hook,
    namespace: &str,
) -> Result<Value, HookError> {
    let fail = |message: String| HookError::Build {
        event: event.to_string(),
        path: hook.path.clone(),
        message,
    };
    let mut object = parse_object(&hook.manifest).map_err(fail)?;
    let reference = ObjectRef::of(&object);
    if reference.api_version.is_empty() || reference.kind.is_empty() {
        return Err(fail("apiVersion and kind must be set".into()));
    }
    if reference.name.is_empty() {
        return Err(fail("metadata.name must be set".into()));
    }
    let info = client
        .resolve(&reference.api_version, &reference.kind)
        .await
        .map_err(|e| fail(e.to_string()))?;
    if info.namespaced && reference.namespace.is_empty() {
        object["metadata"]["namespace"] = Value::String(namespace.to_string());
    } else if !info.namespaced
        && let Some(m) = object["metadata"].as_object_mut()
    {
        m.remove("namespace");
    }
    Ok(object)
}

async fn delete_hook(
    client: &dyn ClusterClient,
    event: HookEvent,
    hook: &Hook,
    object: &Value,
    policy: &str,
    options: &HookOptions,
) -> Result<(), HookError> {
    let reference = ObjectRef::of(object);
    let fail = |source: ClusterError| HookError::Delete {
        event,
        path: hook.path.clone(),
        object: reference.to_string(),
        policy: policy.to_string(),
        source,
    };
    if client.delete(&reference).await.map_err(fail)? == Deletion::NotFound {
        return Ok(());
    }
    // Wait until it is gone, so the next create does not conflict.
    let deadline = tokio::time::Instant::now() + options.timeout;
    loop {
        if client.get(&reference).await.map_err(fail)?.is_none() {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(HookError::DeleteTimeout {
                event,
                path: hook.path.clone(),
                object: reference.to_string(),
                timeout: options.timeout,
            });
        }
        tokio::time::sleep(options.poll_interval).await;
    }
}

/// Whether a Job or Pod finished: `Some(Ok)` succeeded, `Some(Err(reason))` failed, `None`
/// still running.
pub fn completion(wait: WaitFor, object: &Value) -> Option<Result<(), String>> {
    match wait {
        WaitFor::Nothing => Some(Ok(())),
        WaitFor::JobCompletion => {
            let conditions = object
                .pointer("/status/conditions")
                .and_then(Value::as_array)?;
            conditions.iter().find_map(|c| {
                let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
                match (text("type"), text("status")) {
                    ("Complete", "True") => Some(Ok(())),
                    ("Failed", "True") => Some(Err(match (text("reason"), text("message")) {
                        ("", "") => "Failed".to_string(),
                        (reason, "") => reason.to_string(),
                        ("", message) => message.to_string(),
                        (reason, message) => format!("{reason}: {message}"),
                    })),
                    _ => None,
                }
            })
        }
        WaitFor::PodCompletion => {
            match object
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or_default()
            {
                "Succeeded" => Some(Ok(())),
                "Failed" => Some(Err(object
                    .pointer("/status/reason")
                    .or_else(|| object.pointer("/status/message"))
                    .and_then(Value::as_str)
                    .map_or_else(|| "phase Failed".to_string(), str::to_string))),
                _ => None,
            }
        }
    }
}

async fn wait_for(
    client: &dyn ClusterClient,
    event: HookEvent,
    hook: &Hook,
    object: &Value,
    wait: WaitFor,
    options: &HookOptions,
) -> Result<(), HookError> {
    if wait == WaitFor::Nothing {
        return Ok(());
    }
    let reference = ObjectRef::of(object);
    let deadline = tokio::time::Instant::now() + options.timeout;
    loop {
        let current = client
            .get(&reference)
            .await
            .map_err(|source| HookError::Watch {
                event,
                path: hook.path.clone(),
                object: reference.to_string(),
                source,
            })?;
        // As Helm's watch: an object deleted meanwhile ends the wait.
        let Some(current) = current else {
            return Ok(());
        };
        match completion(wait, &current) {
            Some(Ok(())) => return Ok(()),
            Some(Err(reason)) => {
                return Err(HookError::Failed {
                    event,
                    path: hook.path.clone(),
                    object: reference.to_string(),
                    reason,
                });
            }
            None => {}
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(HookError::Timeout {
                event,
                path: hook.path.clone(),
                object: reference.to_string(),
                timeout: options.timeout,
            });
        }
        tokio::time::sleep(options.poll_interval).await;
    }
}

#[cfg(test)]
#[path = "hooks_tests.rs"]
mod tests;
