//! The pure workflow planner: from the DAG of dependents (deploy items of an Execution, or
//! subinstallations of an Installation), each one's state and condition results, the failure
//! policy and `maxConcurrency`, the actions of this step. It implements the Java Operator SDK's
//! workflow rules (see the README's "Workflow conditions"):
//!
//! * a dependent is reconciled once every dependent it depends on is reconciled and ready, and
//!   its reconcile precondition and activation condition hold;
//! * ready = reconciled (the deployer's own readiness) and the ready postcondition holds;
//! * a false reconcile precondition deletes the dependent and, recursively, everything that
//!   depends on it, in reverse order;
//! * a false activation condition leaves the dependent alone (neither reconciled nor deleted)
//!   and deletes what depends on it, as a false precondition does;
//! * a dependent is deleted once every (active) dependent depending on it is gone; gone =
//!   absent and the delete postcondition holds;
//! * cleanup (the whole workflow is deleted) deletes every active dependent in that order;
//! * `FailFast` (Landscaper's behaviour): after a failure nothing new starts, what runs drains;
//!   `ContinueIndependent`: everything not depending on a failed dependent still runs, and the
//!   workflow fails with an error listing each failed dependent;
//! * at most `maxConcurrency` dependents are in progress at once.
//!
//! A condition that cannot be evaluated is a failure of its dependent, never "false": it
//! neither deletes nor creates anything.
//!
//! The planner keeps no state: each step it is given the world as it is and says what to start.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use landscaper_model::FailurePolicy;

use crate::conditions::ConditionResult;

/// Whether the workflow is reconciled or cleaned up (its owner is being deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Reconcile,
    Cleanup,
}

/// What the caller knows about a dependent in the current job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Does not exist.
    Absent,
    /// Exists, not reconciled in this job yet.
    Existing,
    /// Reconcile started in this job, not finished.
    Reconciling,
    /// Reconciled successfully in this job (the deployer's own readiness).
    Reconciled,
    /// Reconcile finished in this job with an error.
    ReconcileFailed(String),
    /// Deletion started, not finished.
    Deleting,
    /// Deletion finished with an error.
    DeleteFailed(String),
}

/// The evaluated conditions of a dependent; `None` where it has none (counts as met).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConditionResults {
    pub reconcile_precondition: Option<ConditionResult>,
    pub ready_postcondition: Option<ConditionResult>,
    pub delete_postcondition: Option<ConditionResult>,
    pub activation_condition: Option<ConditionResult>,
}

/// One dependent of the workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependent {
    pub name: String,
    /// Names of the dependents this one depends on (reconciled before it, deleted after it).
    pub depends_on: Vec<String>,
    pub state: State,
    pub conditions: ConditionResults,
}

/// The workflow's policies (`landscaper_model::WorkflowExtension`'s per-Execution/Installation
/// fields); the default is Landscaper's behaviour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Policy {
    pub failure_policy: FailurePolicy,
    /// `None`: unbounded.
    pub max_concurrency: Option<u32>,
}

/// What the planner decided about one dependent in this step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Start reconciling it now.
    Reconcile,
    /// Start deleting it now.
    Delete,
    /// Reconciled and ready.
    Ready,
    /// Deleted (or never created) and its delete postcondition holds.
    Gone,
    /// Activation condition false: left alone.
    Inactive,
    /// Reconcile or deletion running.
    InProgress,
    /// Waiting: a postcondition not met yet, predecessors not ready, successors not gone, or
    /// `maxConcurrency`/`FailFast` holding it back. The text says which.
    Waiting(String),
    /// Will not run in this job because a dependent it needs failed (named).
    Blocked(String),
    /// Failed: reconcile or deletion error, or a condition that could not be evaluated.
    Failed(String),
}

/// The step's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Per dependent, in input order.
    pub decisions: Vec<(String, Decision)>,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Something runs, starts or waits: come back later.
    InProgress,
    /// Everything reconciled and ready (or, in cleanup, gone).
    Done,
    /// Nothing runs any more and at least one dependent failed.
    Failed(AggregatedError),
}

/// Every failed dependent with its message (JOSDK's `AggregatedOperatorException`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct AggregatedError {
    pub failures: Vec<(String, String)>,
}

impl fmt::Display for AggregatedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.failures.len();
        write!(f, "{n} dependent{} failed: ", if n == 1 { "" } else { "s" })?;
        for (i, (name, message)) in self.failures.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{name}: {message}")?;
        }
        Ok(())
    }
}

/// The DAG is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("dependent {dependent} depends on {dependency}, which does not exist")]
    UnknownDependency {
        dependent: String,
        dependency: String,
    },
    #[error("dependent {0} is listed twice")]
    Duplicate(String),
    #[error("dependency cycle through {0}")]
    Cycle(String),
}

impl Plan {
    /// The dependents to start reconciling, in input order.
    pub fn to_reconcile(&self) -> Vec<&str> {
        self.with(|d| d == &Decision::Reconcile)
    }

    /// The dependents to start deleting, in input order.
    pub fn to_delete(&self) -> Vec<&str> {
        self.with(|d| d == &Decision::Delete)
    }

    pub fn decision(&self, name: &str) -> Option<&Decision> {
        self.decisions
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d)
    }

    fn with(&self, f: impl Fn(&Decision) -> bool) -> Vec<&str> {
        self.decisions
            .iter()
            .filter(|(_, d)| f(d))
            .map(|(n, _)| n.as_str())
            .collect()
    }
}

/// What should become of a dependent in this job.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Present,
    Removed,
    Inactive,
    /// A condition deciding its fate could not be evaluated.
    Undecidable(String),
}

fn condition_error(c: &Option<ConditionResult>) -> Option<String> {
    match c {
        Some(ConditionResult::Error { message }) => Some(message.clone()),
        _ => None,
    }
}

fn not_met(c: &Option<ConditionResult>) -> bool {
    matches!(c, Some(ConditionResult::NotMet { .. }))
}

/// Plans one step. See the module documentation for the rules.
pub fn plan(deps: &[Dependent], mode: Mode, policy: Policy) -> Result<Plan, PlanError> {
    let index = check_dag(deps)?;
    let n = deps.len();
    // successors[i]: the dependents depending on i.
    let mut successors = vec![Vec::new(); n];
    let predecessors: Vec<Vec<usize>> = deps
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let p: Vec<usize> = d.depends_on.iter().map(|x| index[x.as_str()]).collect();
            for &j in &p {
                successors[j].push(i);
            }
            p
        })
        .collect();

    // 1. What each dependent should become.
    let mut target: Vec<Target> = deps
        .iter()
        .map(|d| {
            let c = &d.conditions;
            if let Some(e) = condition_error(&c.activation_condition) {
                Target::Undecidable(e)
            } else if not_met(&c.activation_condition) {
                Target::Inactive
            } else if mode == Mode::Cleanup {
                Target::Removed
            } else if let Some(e) = condition_error(&c.reconcile_precondition) {
                Target::Undecidable(e)
            } else if not_met(&c.reconcile_precondition) {
                Target::Removed
            } else {
                Target::Present
            }
        })
        .collect();
    // Everything depending on a removed or inactive dependent is removed, recursively (an
    // inactive or undecidable one stays as it is).
    for i in topological(&predecessors) {
        let removed_pred = predecessors[i]
            .iter()
            .any(|&p| matches!(target[p], Target::Removed | Target::Inactive));
        if removed_pred && target[i] == Target::Present {
            target[i] = Target::Removed;
        }
    }

    // 2. Each dependent's decision without the failure policy and concurrency.
    let gone = |i: usize| {
        deps[i].state == State::Absent && !not_met(&deps[i].conditions.delete_postcondition)
    };
    let ready = |i: usize| {
        deps[i].state == State::Reconciled
            && target[i] == Target::Present
            && deps[i]
                .conditions
                .ready_postcondition
                .as_ref()
                .is_none_or(ConditionResult::is_met)
    };
    let mut decisions: Vec<Decision> = Vec::with_capacity(n);
    for (i, d) in deps.iter().enumerate() {
        let c = &d.conditions;
        let decision = match (&target[i], &d.state) {
            (Target::Undecidable(e), _) => Decision::Failed(e.clone()),
            (Target::Inactive, _) => Decision::Inactive,
            (Target::Removed, State::Absent) => {
                if let Some(e) = condition_error(&c.delete_postcondition) {
                    Decision::Failed(e)
                } else if not_met(&c.delete_postcondition) {
                    Decision::Waiting(postcondition_wait(&c.delete_postcondition))
                } else {
                    Decision::Gone
                }
            }
            (Target::Removed, State::Deleting | State::Reconciling) => Decision::InProgress,
            (Target::Removed, State::DeleteFailed(e)) => Decision::Failed(e.clone()),
            (Target::Removed, _) => {
                let waiting: Vec<&str> = successors[i]
                    .iter()
                    .filter(|&&s| target[s] != Target::Inactive && !gone(s))
                    .map(|&s| deps[s].name.as_str())
                    .collect();
                if waiting.is_empty() {
                    Decision::Delete
                } else {
                    Decision::Waiting(format!("waiting for {} to be deleted", waiting.join(", ")))
                }
            }
            (Target::Present, State::Reconciling | State::Deleting) => Decision::InProgress,
            (Target::Present, State::ReconcileFailed(e) | State::DeleteFailed(e)) => {
                Decision::Failed(e.clone())
            }
            (Target::Present, State::Reconciled) => {
                if let Some(e) = condition_error(&c.ready_postcondition) {
                    Decision::Failed(e)
                } else if not_met(&c.ready_postcondition) {
                    Decision::Waiting(postcondition_wait(&c.ready_postcondition))
                } else {
                    Decision::Ready
                }
            }
            (Target::Present, State::Absent | State::Existing) => {
                let not_ready: Vec<&str> = predecessors[i]
                    .iter()
                    .filter(|&&p| !ready(p))
                    .map(|&p| deps[p].name.as_str())
                    .collect();
                if not_ready.is_empty() {
                    Decision::Reconcile
                } else {
                    Decision::Waiting(format!("waiting for {} to be ready", not_ready.join(", ")))
                }
            }
        };
        decisions.push(decision);
    }

    // 3. What waits for a failed dependent is blocked (recursively, in the direction of the
    // operation: successors when reconciling, predecessors when deleting).
    for i in topological(&predecessors) {
        if target[i] == Target::Present
            && matches!(decisions[i], Decision::Waiting(_))
            && let Some(f) = predecessors[i].iter().find(|&&p| is_stuck(&decisions[p]))
        {
            decisions[i] = Decision::Blocked(blocked_by(deps, &decisions, *f));
        }
    }
    for i in topological(&successors) {
        if target[i] == Target::Removed
            && matches!(decisions[i], Decision::Waiting(_))
            && let Some(f) = successors[i].iter().find(|&&s| is_stuck(&decisions[s]))
        {
            decisions[i] = Decision::Blocked(blocked_by(deps, &decisions, *f));
        }
    }

    // 4. Failure policy and concurrency.
    let failures: Vec<(String, String)> = deps
        .iter()
        .zip(&decisions)
        .filter_map(|(d, dec)| match dec {
            Decision::Failed(m) => Some((d.name.clone(), m.clone())),
            _ => None,
        })
        .collect();
    let fail_fast = policy.failure_policy == FailurePolicy::FailFast && !failures.is_empty();
    let in_flight = decisions
        .iter()
        .filter(|d| **d == Decision::InProgress)
        .count();
    let mut budget = policy
        .max_concurrency
        .map_or(usize::MAX, |m| (m as usize).saturating_sub(in_flight));
    // Deletions first: they make room (and are what a failed precondition asks for).
    for wanted in [Decision::Delete, Decision::Reconcile] {
        for dec in decisions.iter_mut().filter(|d| **d == wanted) {
            if fail_fast {
                *dec = Decision::Waiting("not started: another dependent failed (FailFast)".into());
            } else if budget == 0 {
                *dec = Decision::Waiting(format!(
                    "not started: maxConcurrency {} reached",
                    policy.max_concurrency.unwrap_or_default()
                ));
            } else {
                budget -= 1;
            }
        }
    }

    // 5. Outcome.
    let busy = decisions.iter().any(|d| {
        matches!(
            d,
            Decision::Reconcile | Decision::Delete | Decision::InProgress
        )
    });
    let waiting = decisions.iter().any(|d| matches!(d, Decision::Waiting(_)));
    let outcome = if busy || (waiting && !fail_fast) {
        Outcome::InProgress
    } else if !failures.is_empty() {
        Outcome::Failed(AggregatedError { failures })
    } else if waiting {
        Outcome::InProgress
    } else {
        Outcome::Done
    };
    Ok(Plan {
        decisions: deps.iter().map(|d| d.name.clone()).zip(decisions).collect(),
        outcome,
    })
}

fn postcondition_wait(c: &Option<ConditionResult>) -> String {
    c.as_ref()
        .map(|r| format!("waiting: {}", r.message()))
        .unwrap_or_default()
}

/// A decision that will not change by itself in this job.
fn is_stuck(d: &Decision) -> bool {
    matches!(d, Decision::Failed(_) | Decision::Blocked(_))
}

/// The failed dependent at the root of `f`'s blockage.
fn blocked_by(deps: &[Dependent], decisions: &[Decision], f: usize) -> String {
    match &decisions[f] {
        Decision::Blocked(root) => root.clone(),
        _ => deps[f].name.clone(),
    }
}

/// Name → index; rejects duplicates, unknown dependencies and cycles.
fn check_dag(deps: &[Dependent]) -> Result<BTreeMap<&str, usize>, PlanError> {
    let mut index = BTreeMap::new();
    for (i, d) in deps.iter().enumerate() {
        if index.insert(d.name.as_str(), i).is_some() {
            return Err(PlanError::Duplicate(d.name.clone()));
        }
    }
    for d in deps {
        if let Some(x) = d
            .depends_on
            .iter()
            .find(|x| !index.contains_key(x.as_str()))
        {
            return Err(PlanError::UnknownDependency {
                dependent: d.name.clone(),
                dependency: x.clone(),
            });
        }
    }
    let preds: Vec<Vec<usize>> = deps
        .iter()
        .map(|d| d.depends_on.iter().map(|x| index[x.as_str()]).collect())
        .collect();
    if topological(&preds).len() < deps.len() {
        // Kahn's algorithm left some out: they are on or behind a cycle.
        let done: BTreeSet<usize> = topological(&preds).into_iter().collect();
        let first = (0..deps.len()).find(|i| !done.contains(i)).unwrap_or(0);
        return Err(PlanError::Cycle(deps[first].name.clone()));
    }
    Ok(index)
}

/// Indices in an order where every node comes after all of `edges[node]` (Kahn's algorithm,
/// lowest index first); nodes on cycles are left out.
fn topological(edges: &[Vec<usize>]) -> Vec<usize> {
    let n = edges.len();
    let mut remaining: Vec<usize> = edges
        .iter()
        .map(|e| e.iter().collect::<BTreeSet<_>>().len())
        .collect();
    let mut users = vec![Vec::new(); n];
    for (i, e) in edges.iter().enumerate() {
        for &j in e.iter().collect::<BTreeSet<_>>() {
            users[j].push(i);
        }
    }
    let mut ready: BTreeSet<usize> = (0..n).filter(|&i| remaining[i] == 0).collect();
    let mut out = Vec::with_capacity(n);
    while let Some(i) = ready.pop_first() {
        out.push(i);
        for &u in &users[i] {
            remaining[u] -= 1;
            if remaining[u] == 0 {
                ready.insert(u);
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
