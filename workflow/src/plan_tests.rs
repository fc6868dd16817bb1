use super::*;
use proptest::prelude::*;

// --- builders and a simulated world ------------------------------------------------------------

fn dep(name: &str, depends_on: &[&str]) -> Dependent {
    Dependent {
        name: name.to_owned(),
        depends_on: depends_on.iter().map(|s| s.to_string()).collect(),
        state: State::Absent,
        conditions: ConditionResults::default(),
    }
}

fn met() -> Option<ConditionResult> {
    Some(ConditionResult::Met {
        message: "true".into(),
    })
}

fn not_met() -> Option<ConditionResult> {
    Some(ConditionResult::NotMet {
        message: "false".into(),
    })
}

fn error() -> Option<ConditionResult> {
    Some(ConditionResult::Error {
        message: "no such key: flag".into(),
    })
}

/// The reconcile and cleanup samples' DAG: 1 --> 2, 1 --> 3, 2 --> 4, 3 --> 4.
fn diamond() -> Vec<Dependent> {
    vec![
        dep("1", &[]),
        dep("2", &["1"]),
        dep("3", &["1"]),
        dep("4", &["2", "3"]),
    ]
}

/// The precondition sample's DAG: 1 --> 2, 1 --> 3, 3 --> 4, 3 --> 5.
fn precondition_dag() -> Vec<Dependent> {
    vec![
        dep("1", &[]),
        dep("2", &["1"]),
        dep("3", &["1"]),
        dep("4", &["3"]),
        dep("5", &["3"]),
    ]
}

fn set(deps: &mut [Dependent], name: &str, f: impl FnOnce(&mut Dependent)) {
    f(deps
        .iter_mut()
        .find(|d| d.name == name)
        .expect("known dependent"));
}

fn all(deps: &mut [Dependent], state: State) {
    for d in deps {
        d.state = state.clone();
    }
}

/// Runs the planner step by step, each started action finishing before the next step (failing
/// for the names in `fail`). Returns the batches of operations (`+x` reconcile, `-x` delete) and
/// the final plan (the first that starts nothing).
fn run(
    deps: &mut [Dependent],
    mode: Mode,
    policy: Policy,
    fail: &[&str],
) -> (Vec<Vec<String>>, Plan) {
    let mut batches = Vec::new();
    for _ in 0..50 {
        let p = plan(deps, mode, policy).expect("a DAG");
        let mut batch: Vec<String> = Vec::new();
        for name in p.to_delete() {
            batch.push(format!("-{name}"));
        }
        for name in p.to_reconcile() {
            batch.push(format!("+{name}"));
        }
        if batch.is_empty() {
            return (batches, p);
        }
        for op in &batch {
            let (kind, name) = op.split_at(1);
            let failed = fail.contains(&name);
            set(deps, name, |d| {
                d.state = match (kind, failed) {
                    ("+", false) => State::Reconciled,
                    ("+", true) => State::ReconcileFailed(format!("{name} broke")),
                    (_, false) => State::Absent,
                    (_, true) => State::DeleteFailed(format!("{name} broke")),
                }
            });
        }
        batch.sort();
        batches.push(batch);
    }
    panic!("no fixed point after 50 steps: {batches:?}");
}

fn ops(batches: &[&[&str]]) -> Vec<Vec<String>> {
    batches
        .iter()
        .map(|b| b.iter().map(|s| s.to_string()).collect())
        .collect()
}

const CONTINUE: Policy = Policy {
    failure_policy: FailurePolicy::ContinueIndependent,
    max_concurrency: None,
};
const FAIL_FAST: Policy = Policy {
    failure_policy: FailurePolicy::FailFast,
    max_concurrency: None,
};

fn failed_names(p: &Plan) -> Vec<&str> {
    match &p.outcome {
        Outcome::Failed(e) => e.failures.iter().map(|(n, _)| n.as_str()).collect(),
        other => panic!("expected a failure, got {other:?}"),
    }
}

// --- the reconcile sample -----------------------------------------------------------------------

#[test]
fn reconcile_sample_roots_first_then_concurrently_then_the_join() {
    let mut deps = diamond();
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["+1"], &["+2", "+3"], &["+4"]]));
    assert_eq!(last.outcome, Outcome::Done);
    assert!(last.decisions.iter().all(|(_, d)| *d == Decision::Ready));
}

#[test]
fn reconcile_sample_false_ready_postcondition_of_2_holds_back_4_only() {
    let mut deps = diamond();
    set(&mut deps, "2", |d| {
        d.conditions.ready_postcondition = not_met()
    });
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["+1"], &["+2", "+3"]]));
    assert_eq!(last.outcome, Outcome::InProgress);
    assert!(matches!(last.decision("2"), Some(Decision::Waiting(_))));
    assert!(
        matches!(last.decision("4"), Some(Decision::Waiting(w)) if w.contains("2")),
        "{last:?}"
    );
    // Once it holds, 4 follows.
    set(&mut deps, "2", |d| d.conditions.ready_postcondition = met());
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["+4"]]));
    assert_eq!(last.outcome, Outcome::Done);
}

#[test]
fn reconcile_sample_false_ready_postcondition_of_1_holds_back_everything_else() {
    let mut deps = diamond();
    set(&mut deps, "1", |d| {
        d.conditions.ready_postcondition = not_met()
    });
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["+1"]]));
    assert_eq!(last.outcome, Outcome::InProgress);
}

#[test]
fn reconcile_sample_error_in_2_still_reconciles_3_but_not_4() {
    let mut deps = diamond();
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &["2"]);
    assert_eq!(batches, ops(&[&["+1"], &["+2", "+3"]]));
    assert_eq!(last.decision("3"), Some(&Decision::Ready));
    assert_eq!(last.decision("4"), Some(&Decision::Blocked("2".into())));
    assert_eq!(failed_names(&last), ["2"]);
    let Outcome::Failed(e) = &last.outcome else {
        unreachable!()
    };
    assert_eq!(e.to_string(), "1 dependent failed: 2: 2 broke");
}

#[test]
fn fail_fast_starts_nothing_after_a_failure() {
    // 1 and 2 independent roots, 3 after 2: when 1 fails, 3 is not started (Landscaper).
    let mut deps = vec![dep("1", &[]), dep("2", &[]), dep("3", &["2"])];
    let (batches, last) = run(&mut deps, Mode::Reconcile, FAIL_FAST, &["1"]);
    assert_eq!(batches, ops(&[&["+1", "+2"]]));
    assert_eq!(failed_names(&last), ["1"]);
    assert!(matches!(last.decision("3"), Some(Decision::Waiting(w)) if w.contains("FailFast")));
    // ContinueIndependent finishes the independent branch.
    let mut deps = vec![dep("1", &[]), dep("2", &[]), dep("3", &["2"])];
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &["1"]);
    assert_eq!(batches, ops(&[&["+1", "+2"], &["+3"]]));
    assert_eq!(failed_names(&last), ["1"]);
}

#[test]
fn fail_fast_waits_for_running_dependents_before_failing() {
    let mut deps = vec![dep("1", &[]), dep("2", &[])];
    deps[0].state = State::ReconcileFailed("boom".into());
    deps[1].state = State::Reconciling;
    let p = plan(&deps, Mode::Reconcile, FAIL_FAST).unwrap();
    assert_eq!(p.outcome, Outcome::InProgress);
    deps[1].state = State::Reconciled;
    let p = plan(&deps, Mode::Reconcile, FAIL_FAST).unwrap();
    assert_eq!(failed_names(&p), ["1"]);
}

#[test]
fn continue_independent_aggregates_every_failure() {
    // Diamond whose both middle branches fail, plus an independent root.
    let mut deps = diamond();
    deps.push(dep("5", &[]));
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &["2", "3"]);
    assert_eq!(batches, ops(&[&["+1", "+5"], &["+2", "+3"]]));
    assert_eq!(failed_names(&last), ["2", "3"]);
    let Outcome::Failed(e) = &last.outcome else {
        unreachable!()
    };
    assert_eq!(e.to_string(), "2 dependents failed: 2: 2 broke; 3: 3 broke");
}

// --- the precondition sample --------------------------------------------------------------------

fn precondition_sample_reconciled() -> Vec<Dependent> {
    let mut deps = precondition_dag();
    all(&mut deps, State::Existing);
    set(&mut deps, "3", |d| {
        d.conditions.reconcile_precondition = not_met()
    });
    deps
}

#[test]
fn precondition_sample_false_precondition_of_3_deletes_4_and_5_then_3() {
    let mut deps = precondition_sample_reconciled();
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["+1", "-4", "-5"], &["+2", "-3"]]));
    assert_eq!(last.outcome, Outcome::Done);
    for gone in ["3", "4", "5"] {
        assert_eq!(last.decision(gone), Some(&Decision::Gone));
    }
}

#[test]
fn precondition_sample_never_creates_what_the_precondition_excludes() {
    let mut deps = precondition_dag();
    set(&mut deps, "3", |d| {
        d.conditions.reconcile_precondition = not_met()
    });
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["+1"], &["+2"]]));
    assert_eq!(last.outcome, Outcome::Done);
}

#[test]
fn precondition_sample_false_delete_postcondition_of_5_keeps_3_but_deletes_4() {
    let mut deps = precondition_sample_reconciled();
    set(&mut deps, "5", |d| {
        d.conditions.delete_postcondition = not_met()
    });
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["+1", "-4", "-5"], &["+2"]]));
    assert_eq!(last.outcome, Outcome::InProgress);
    assert_eq!(last.decision("4"), Some(&Decision::Gone));
    assert!(matches!(last.decision("5"), Some(Decision::Waiting(_))));
    assert!(matches!(last.decision("3"), Some(Decision::Waiting(w)) if w.contains('5')));
    // The postcondition comes true: 3 goes.
    set(&mut deps, "5", |d| {
        d.conditions.delete_postcondition = met()
    });
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["-3"]]));
    assert_eq!(last.outcome, Outcome::Done);
}

#[test]
fn precondition_sample_deletion_error_of_5_keeps_3_but_deletes_4() {
    let mut deps = precondition_sample_reconciled();
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &["5"]);
    assert_eq!(batches, ops(&[&["+1", "-4", "-5"], &["+2"]]));
    assert_eq!(last.decision("3"), Some(&Decision::Blocked("5".into())));
    assert_eq!(last.decision("4"), Some(&Decision::Gone));
    assert_eq!(failed_names(&last), ["5"]);
}

#[test]
fn precondition_that_cannot_be_evaluated_deletes_nothing() {
    let mut deps = precondition_dag();
    all(&mut deps, State::Existing);
    set(&mut deps, "3", |d| {
        d.conditions.reconcile_precondition = error()
    });
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["+1"], &["+2"]]));
    assert_eq!(
        last.decision("3"),
        Some(&Decision::Failed("no such key: flag".into()))
    );
    assert_eq!(last.decision("4"), Some(&Decision::Blocked("3".into())));
    assert_eq!(failed_names(&last), ["3"]);
}

#[test]
fn precondition_turning_true_again_recreates_in_order() {
    let mut deps = precondition_sample_reconciled();
    run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    set(&mut deps, "3", |d| {
        d.conditions.reconcile_precondition = met()
    });
    // A new job: what exists is reconciled again.
    for d in deps.iter_mut().filter(|d| d.state == State::Reconciled) {
        d.state = State::Existing;
    }
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["+1"], &["+2", "+3"], &["+4", "+5"]]));
    assert_eq!(last.outcome, Outcome::Done);
}

// --- activation conditions ---------------------------------------------------------------------

#[test]
fn inactive_dependent_is_left_alone_and_its_dependents_deleted() {
    let mut deps = precondition_dag();
    all(&mut deps, State::Existing);
    set(&mut deps, "3", |d| {
        d.conditions.activation_condition = not_met()
    });
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    // 3 is neither reconciled nor deleted; 4 and 5 are deleted.
    assert_eq!(batches, ops(&[&["+1", "-4", "-5"], &["+2"]]));
    assert_eq!(last.decision("3"), Some(&Decision::Inactive));
    assert_eq!(deps[2].state, State::Existing);
    assert_eq!(last.outcome, Outcome::Done);
}

#[test]
fn inactive_dependent_is_not_deleted_in_cleanup_either() {
    let mut deps = diamond();
    all(&mut deps, State::Existing);
    set(&mut deps, "4", |d| {
        d.conditions.activation_condition = not_met()
    });
    let (batches, last) = run(&mut deps, Mode::Cleanup, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["-2", "-3"], &["-1"]]));
    assert_eq!(last.decision("4"), Some(&Decision::Inactive));
    assert_eq!(last.outcome, Outcome::Done);
}

#[test]
fn activation_that_turns_true_activates() {
    let mut deps = vec![dep("app", &[]), dep("monitoring", &["app"])];
    set(&mut deps, "monitoring", |d| {
        d.conditions.activation_condition = not_met()
    });
    let (batches, _) = run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["+app"]]));
    set(&mut deps, "monitoring", |d| {
        d.conditions.activation_condition = met()
    });
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["+monitoring"]]));
    assert_eq!(last.outcome, Outcome::Done);
}

// --- cleanup ------------------------------------------------------------------------------------

fn cleanup_sample() -> Vec<Dependent> {
    let mut deps = diamond();
    all(&mut deps, State::Existing);
    deps
}

#[test]
fn cleanup_sample_deletes_in_reverse_order() {
    let mut deps = cleanup_sample();
    let (batches, last) = run(&mut deps, Mode::Cleanup, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["-4"], &["-2", "-3"], &["-1"]]));
    assert_eq!(last.outcome, Outcome::Done);
}

#[test]
fn cleanup_sample_false_delete_postcondition_of_2_keeps_1() {
    let mut deps = cleanup_sample();
    set(&mut deps, "2", |d| {
        d.conditions.delete_postcondition = not_met()
    });
    let (batches, last) = run(&mut deps, Mode::Cleanup, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["-4"], &["-2", "-3"]]));
    assert_eq!(last.outcome, Outcome::InProgress);
    assert!(matches!(last.decision("1"), Some(Decision::Waiting(w)) if w.contains('2')));
}

#[test]
fn cleanup_sample_error_in_2_keeps_1_deletes_3_and_4() {
    let mut deps = cleanup_sample();
    let (batches, last) = run(&mut deps, Mode::Cleanup, CONTINUE, &["2"]);
    assert_eq!(batches, ops(&[&["-4"], &["-2", "-3"]]));
    assert_eq!(last.decision("1"), Some(&Decision::Blocked("2".into())));
    assert_eq!(failed_names(&last), ["2"]);
}

#[test]
fn cleanup_sample_error_in_4_deletes_nothing_else() {
    let mut deps = cleanup_sample();
    let (batches, last) = run(&mut deps, Mode::Cleanup, CONTINUE, &["4"]);
    assert_eq!(batches, ops(&[&["-4"]]));
    assert_eq!(failed_names(&last), ["4"]);
    for kept in ["1", "2", "3"] {
        assert!(matches!(last.decision(kept), Some(Decision::Blocked(b)) if b == "4"));
    }
}

#[test]
fn cleanup_ignores_reconcile_preconditions() {
    let mut deps = cleanup_sample();
    set(&mut deps, "1", |d| {
        d.conditions.reconcile_precondition = met()
    });
    set(&mut deps, "4", |d| {
        d.conditions.reconcile_precondition = error()
    });
    let (batches, _) = run(&mut deps, Mode::Cleanup, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["-4"], &["-2", "-3"], &["-1"]]));
}

// --- concurrency, in-flight work and DAG errors ------------------------------------------------

#[test]
fn max_concurrency_bounds_what_is_in_progress() {
    let roots: Vec<Dependent> = ["a", "b", "c", "d"].iter().map(|n| dep(n, &[])).collect();
    let policy = Policy {
        max_concurrency: Some(2),
        ..CONTINUE
    };
    let mut deps = roots.clone();
    let p = plan(&deps, Mode::Reconcile, policy).unwrap();
    assert_eq!(p.to_reconcile(), ["a", "b"]);
    assert!(
        matches!(p.decision("c"), Some(Decision::Waiting(w)) if w.contains("maxConcurrency 2"))
    );
    deps[0].state = State::Reconciling;
    deps[1].state = State::Reconciled;
    let p = plan(&deps, Mode::Reconcile, policy).unwrap();
    assert_eq!(p.to_reconcile(), ["c"]);
    let (batches, _) = run(&mut roots.clone(), Mode::Reconcile, policy, &[]);
    assert_eq!(batches, ops(&[&["+a", "+b"], &["+c", "+d"]]));
    // Deletions count too, and go first.
    let mut deps = roots;
    all(&mut deps, State::Existing);
    deps[3].conditions.reconcile_precondition = not_met();
    let p = plan(&deps, Mode::Reconcile, policy).unwrap();
    assert_eq!((p.to_delete(), p.to_reconcile()), (vec!["d"], vec!["a"]));
}

#[test]
fn running_dependents_are_waited_for() {
    let mut deps = diamond();
    all(&mut deps, State::Existing);
    deps[0].state = State::Reconciling;
    let p = plan(&deps, Mode::Reconcile, CONTINUE).unwrap();
    assert!(p.to_reconcile().is_empty());
    assert_eq!(p.decision("1"), Some(&Decision::InProgress));
    assert_eq!(p.outcome, Outcome::InProgress);
    // A dependent to delete that is still reconciling is waited for, not deleted.
    deps[3].state = State::Reconciling;
    deps[3].conditions.reconcile_precondition = not_met();
    let p = plan(&deps, Mode::Reconcile, CONTINUE).unwrap();
    assert!(p.to_delete().is_empty());
    assert_eq!(p.decision("4"), Some(&Decision::InProgress));
}

#[test]
fn ready_postcondition_error_fails_the_dependent() {
    let mut deps = diamond();
    set(&mut deps, "1", |d| {
        d.conditions.ready_postcondition = error()
    });
    let (batches, last) = run(&mut deps, Mode::Reconcile, CONTINUE, &[]);
    assert_eq!(batches, ops(&[&["+1"]]));
    assert_eq!(failed_names(&last), ["1"]);
    assert_eq!(last.decision("4"), Some(&Decision::Blocked("1".into())));
}

#[test]
fn without_conditions_and_default_policy_it_is_landscapers_order() {
    let mut deps = vec![dep("a", &[]), dep("b", &["a"]), dep("c", &[])];
    let (batches, last) = run(&mut deps, Mode::Reconcile, Policy::default(), &[]);
    assert_eq!(batches, ops(&[&["+a", "+c"], &["+b"]]));
    assert_eq!(last.outcome, Outcome::Done);
}

#[test]
fn dag_errors_are_reported() {
    let cyc = vec![dep("a", &["b"]), dep("b", &["a"]), dep("c", &[])];
    assert_eq!(
        plan(&cyc, Mode::Reconcile, CONTINUE),
        Err(PlanError::Cycle("a".into()))
    );
    let unknown = vec![dep("a", &["x"])];
    assert_eq!(
        plan(&unknown, Mode::Reconcile, CONTINUE),
        Err(PlanError::UnknownDependency {
            dependent: "a".into(),
            dependency: "x".into()
        })
    );
    let dup = vec![dep("a", &[]), dep("a", &[])];
    assert_eq!(
        plan(&dup, Mode::Reconcile, CONTINUE),
        Err(PlanError::Duplicate("a".into()))
    );
    assert_eq!(
        plan(&[], Mode::Reconcile, CONTINUE).unwrap().outcome,
        Outcome::Done
    );
}

// --- properties on random DAGs -----------------------------------------------------------------

#[derive(Debug, Clone)]
struct Node {
    preds: Vec<usize>,
    exists: bool,
    precondition: Option<bool>,
    active: Option<bool>,
    ready_post: Option<bool>,
    delete_post: Option<bool>,
    fails: bool,
}

fn node(n: usize) -> impl Strategy<Value = Node> {
    (
        proptest::collection::vec(0..n.max(1), 0..3),
        any::<bool>(),
        proptest::option::of(proptest::bool::weighted(0.7)),
        proptest::option::of(proptest::bool::weighted(0.8)),
        proptest::option::of(proptest::bool::weighted(0.8)),
        proptest::option::of(proptest::bool::weighted(0.8)),
        proptest::bool::weighted(0.15),
    )
        .prop_map(
            |(preds, exists, precondition, active, ready_post, delete_post, fails)| Node {
                preds,
                exists,
                precondition,
                active,
                ready_post,
                delete_post,
                fails,
            },
        )
}

fn result(b: Option<bool>) -> Option<ConditionResult> {
    b.map(|m| {
        if m {
            met().unwrap()
        } else {
            not_met().unwrap()
        }
    })
}

fn world(nodes: &[Node]) -> Vec<Dependent> {
    nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            // Only lower indices: a DAG.
            let mut preds: Vec<String> = n
                .preds
                .iter()
                .filter(|&&p| p < i)
                .map(|p| format!("n{p}"))
                .collect();
            preds.sort();
            preds.dedup();
            Dependent {
                name: format!("n{i}"),
                depends_on: preds,
                state: if n.exists {
                    State::Existing
                } else {
                    State::Absent
                },
                conditions: ConditionResults {
                    reconcile_precondition: result(n.precondition),
                    ready_postcondition: result(n.ready_post),
                    delete_postcondition: result(n.delete_post),
                    activation_condition: result(n.active),
                },
            }
        })
        .collect()
}

fn is_gone(d: &Dependent) -> bool {
    d.state == State::Absent && !super::not_met(&d.conditions.delete_postcondition)
}

fn is_ready(d: &Dependent) -> bool {
    d.state == State::Reconciled && !super::not_met(&d.conditions.ready_postcondition)
}

fn inactive(d: &Dependent) -> bool {
    super::not_met(&d.conditions.activation_condition)
}

/// Oracle for the reconcile mode: a precondition is false, or something it depends on is
/// removed or inactive (recursively).
fn should_be_removed(deps: &[Dependent], d: &Dependent) -> bool {
    super::not_met(&d.conditions.reconcile_precondition)
        || d.depends_on.iter().any(|p| {
            let p = deps.iter().find(|x| &x.name == p).expect("known");
            inactive(p) || should_be_removed(deps, p)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Random DAGs, conditions, failures, policies; actions finish after a random number of
    /// steps. At every step: nothing is reconciled before its predecessors are ready, nothing
    /// deleted before its (active) dependents are gone, inactive dependents are never touched,
    /// FailFast starts nothing after a failure, maxConcurrency holds; and the run ends.
    #[test]
    fn planner_invariants(
        nodes in (1usize..9).prop_flat_map(|n| proptest::collection::vec(node(n), n)),
        cleanup in any::<bool>(),
        continue_independent in any::<bool>(),
        max in proptest::option::of(1u32..4),
        delays in proptest::collection::vec(0usize..3, 64),
    ) {
        let mut deps = world(&nodes);
        let mode = if cleanup { Mode::Cleanup } else { Mode::Reconcile };
        let policy = Policy {
            failure_policy: if continue_independent {
                FailurePolicy::ContinueIndependent
            } else {
                FailurePolicy::FailFast
            },
            max_concurrency: max,
        };
        let index = |name: &str| -> usize { name[1..].parse().unwrap() };
        // name -> steps left until the running action finishes
        let mut running: BTreeMap<usize, usize> = BTreeMap::new();
        let mut delay = delays.iter().cycle();
        let mut finished = false;
        for _ in 0..200 {
            let p = plan(&deps, mode, policy).unwrap();
            let failed = deps.iter().any(|d| matches!(d.state, State::ReconcileFailed(_) | State::DeleteFailed(_)));
            let started: Vec<usize> = p.to_reconcile().iter().chain(p.to_delete().iter()).map(|n| index(n)).collect();
            if !continue_independent && failed {
                prop_assert!(started.is_empty(), "FailFast started {:?} after a failure", started);
            }
            if let Some(m) = max {
                prop_assert!(running.len() + started.len() <= m as usize);
            }
            for name in p.to_reconcile() {
                let d = &deps[index(name)];
                prop_assert!(mode == Mode::Reconcile && !inactive(d));
                for pred in &d.depends_on {
                    prop_assert!(is_ready(&deps[index(pred)]), "{} reconciled before {} is ready", name, pred);
                }
            }
            for name in p.to_delete() {
                let d = &deps[index(name)];
                prop_assert!(!inactive(d));
                for other in deps.iter().filter(|o| o.depends_on.iter().any(|x| x == name)) {
                    prop_assert!(inactive(other) || is_gone(other), "{} deleted before its dependent {} is gone", name, other.name);
                }
            }
            // Start.
            for &i in &started {
                let deleting = p.to_delete().contains(&deps[i].name.as_str());
                deps[i].state = if deleting { State::Deleting } else { State::Reconciling };
                running.insert(i, *delay.next().unwrap());
            }
            if started.is_empty() && running.is_empty() {
                finished = true;
                match &p.outcome {
                    Outcome::Done => {
                        for d in &deps {
                            if inactive(d) { continue; }
                            if mode == Mode::Cleanup {
                                prop_assert!(is_gone(d), "done but {} not gone", d.name);
                            } else if should_be_removed(&deps, d) {
                                prop_assert!(is_gone(d), "done but {} (to be removed) not gone", d.name);
                            } else {
                                prop_assert!(is_ready(d), "done but {} not ready", d.name);
                            }
                        }
                    }
                    Outcome::Failed(e) => prop_assert!(!e.failures.is_empty()),
                    // Only a postcondition not met yet may keep it waiting.
                    Outcome::InProgress => prop_assert!(deps.iter().any(|d| super::not_met(&d.conditions.ready_postcondition) || super::not_met(&d.conditions.delete_postcondition))),
                }
                break;
            }
            // Progress: finish what is due.
            let due: Vec<usize> = running.iter().filter(|(_, left)| **left == 0).map(|(i, _)| *i).collect();
            for left in running.values_mut() {
                *left = left.saturating_sub(1);
            }
            for i in due {
                running.remove(&i);
                let fails = nodes[i].fails;
                deps[i].state = match (&deps[i].state, fails) {
                    (State::Reconciling, false) => State::Reconciled,
                    (State::Reconciling, true) => State::ReconcileFailed("boom".into()),
                    (_, false) => State::Absent,
                    (_, true) => State::DeleteFailed("boom".into()),
                };
            }
        }
        prop_assert!(finished, "no fixed point");
    }
}
