//! `spec.automaticReconcile` (Landscaper's `retry_helper.go`): finished installations get the
//! reconcile annotation (with `reconcile-reason: retry`) when their interval or cron schedule
//! is due; failed ones at most `numberOfReconciles` times.

use std::time::Duration;

use jiff::Timestamp;
use landscaper_store::clock::format_time;
use landscaper_store::model::constants::*;
use landscaper_store::model::{AutomaticReconcileStatus, Installation, Phase};

use super::machine::annotation;

const DEFAULT_FAILED_INTERVAL: Duration = Duration::from_secs(5 * 60);
const DEFAULT_SUCCEEDED_INTERVAL: Duration = Duration::from_secs(24 * 3600);

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Nothing,
    /// Look again after this long.
    Wait(Duration),
    /// Write this automaticReconcileStatus, and add the reconcile annotation if `annotate`.
    Update {
        status: Option<AutomaticReconcileStatus>,
        annotate: bool,
    },
}

/// A user's (not a retry's) reconcile request resets the retry counter when the job starts.
pub fn resets_on_start(inst: &Installation) -> bool {
    annotation(inst, OPERATION_ANNOTATION) == Some(OPERATION_RECONCILE)
        && annotation(inst, RECONCILE_REASON_ANNOTATION) != Some(RECONCILE_REASON_RETRY)
        && inst
            .status
            .as_ref()
            .is_some_and(|s| s.automatic_reconcile_status.is_some())
}

fn retry_for_failed(inst: &Installation) -> bool {
    inst.spec
        .automatic_reconcile
        .as_ref()
        .and_then(|a| a.failed_reconcile.as_ref())
        .is_some_and(|f| f.number_of_reconciles.is_none_or(|n| n > 0))
}

fn retry_for_succeeded(inst: &Installation) -> bool {
    inst.spec
        .automatic_reconcile
        .as_ref()
        .is_some_and(|a| a.succeeded_reconcile.is_some())
}

/// When the next automatic reconcile is due after `last`.
fn next_due(
    interval: Option<Duration>,
    cron: Option<&str>,
    default: Duration,
    last: Timestamp,
) -> Timestamp {
    if let Some(spec) = cron.filter(|c| !c.is_empty())
        && let Ok(t) = landscaper_store::model::cron::next_time(spec, last)
    {
        return t;
    }
    let d = interval.unwrap_or(default);
    last.checked_add(jiff::SignedDuration::try_from(d).unwrap_or(jiff::SignedDuration::MAX))
        .unwrap_or(Timestamp::MAX)
}

fn status_now(
    inst: &Installation,
    count: i64,
    on_failed: bool,
    now: Timestamp,
) -> AutomaticReconcileStatus {
    AutomaticReconcileStatus {
        generation: inst.metadata.generation,
        number_of_reconciles: Some(count),
        last_reconcile_time: Some(format_time(now)),
        on_failed: Some(on_failed),
    }
}

/// Landscaper's `recomputeRetry` for a finished installation.
pub fn decide(inst: &Installation, now: Timestamp) -> Decision {
    if inst.metadata.deletion_timestamp.is_some()
        || annotation(inst, OPERATION_ANNOTATION).is_some()
    {
        return Decision::Nothing;
    }
    let Some(status) = inst.status.as_ref() else {
        return Decision::Nothing;
    };
    if status.observed_generation != inst.metadata.generation.unwrap_or(0) {
        return Decision::Nothing;
    }
    let failed = matches!(status.phase, Some(Phase::Failed | Phase::DeleteFailed));
    let succeeded = status.phase == Some(Phase::Succeeded);
    let mut auto = status.automatic_reconcile_status.clone();
    let mut reset = false;
    if let Some(a) = &auto
        && (a.generation != inst.metadata.generation
            || (succeeded && a.on_failed == Some(true))
            || (failed && a.on_failed != Some(true)))
    {
        auto = None;
        reset = true;
    }
    let spec = inst.spec.automatic_reconcile.as_ref();
    if retry_for_failed(inst) && failed {
        let f = spec.and_then(|s| s.failed_reconcile.as_ref());
        let Some(a) = auto else {
            // The first failure is retried at once.
            return Decision::Update {
                status: Some(status_now(inst, 1, true, now)),
                annotate: true,
            };
        };
        let done = a.number_of_reconciles.unwrap_or(0);
        if f.and_then(|f| f.number_of_reconciles)
            .is_some_and(|max| max <= done)
        {
            return if reset {
                Decision::Update {
                    status: None,
                    annotate: false,
                }
            } else {
                Decision::Nothing
            };
        }
        let last = parse_time(a.last_reconcile_time.as_deref()).unwrap_or(now);
        let due = next_due(
            f.and_then(|f| f.interval.as_ref()).map(|d| d.to_std()),
            f.and_then(|f| f.cron_spec.as_deref()),
            DEFAULT_FAILED_INTERVAL,
            last,
        );
        if now > due {
            return Decision::Update {
                status: Some(status_now(inst, done + 1, true, now)),
                annotate: true,
            };
        }
        return Decision::Wait(until(now, due));
    }
    if retry_for_succeeded(inst) && succeeded {
        let s = spec.and_then(|s| s.succeeded_reconcile.as_ref());
        let Some(a) = auto else {
            return Decision::Update {
                status: Some(status_now(inst, 0, false, now)),
                annotate: false,
            };
        };
        let last = parse_time(a.last_reconcile_time.as_deref()).unwrap_or(now);
        let due = next_due(
            s.and_then(|s| s.interval.as_ref()).map(|d| d.to_std()),
            s.and_then(|s| s.cron_spec.as_deref()),
            DEFAULT_SUCCEEDED_INTERVAL,
            last,
        );
        if now > due {
            return Decision::Update {
                status: Some(status_now(
                    inst,
                    a.number_of_reconciles.unwrap_or(0) + 1,
                    false,
                    now,
                )),
                annotate: true,
            };
        }
        return Decision::Wait(until(now, due));
    }
    if reset {
        return Decision::Update {
            status: None,
            annotate: false,
        };
    }
    Decision::Nothing
}

fn parse_time(s: Option<&str>) -> Option<Timestamp> {
    s?.parse().ok()
}

fn until(now: Timestamp, due: Timestamp) -> Duration {
    let d = due.duration_since(now);
    // A moment after the due time, so that `now > due` holds then.
    Duration::try_from(d).unwrap_or_default() + Duration::from_millis(10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use landscaper_store::model::{
        AutomaticReconcile, FailedReconcile, InstallationStatus, ObjectMeta, SucceededReconcile,
    };

    fn inst(phase: Phase, auto: AutomaticReconcile) -> Installation {
        let mut i = Installation {
            metadata: ObjectMeta {
                name: Some("a".into()),
                generation: Some(1),
                ..Default::default()
            },
            ..Default::default()
        };
        i.spec.automatic_reconcile = Some(auto);
        i.status = Some(InstallationStatus {
            phase: Some(phase),
            observed_generation: 1,
            job_id: Some("j".into()),
            job_id_finished: Some("j".into()),
            ..Default::default()
        });
        i
    }

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn a_first_failure_is_retried_at_once_then_by_interval_up_to_the_limit() {
        let spec = AutomaticReconcile {
            failed_reconcile: Some(FailedReconcile {
                number_of_reconciles: Some(2),
                interval: Some(landscaper_store::model::Duration::parse("1m").unwrap()),
                cron_spec: None,
            }),
            ..Default::default()
        };
        let mut i = inst(Phase::Failed, spec);
        let now = t("2026-01-01T00:00:00Z");
        let Decision::Update {
            status: Some(s),
            annotate: true,
        } = decide(&i, now)
        else {
            panic!("first failure must retry");
        };
        assert_eq!(s.number_of_reconciles, Some(1));
        i.status.as_mut().unwrap().automatic_reconcile_status = Some(s);
        assert!(
            matches!(decide(&i, t("2026-01-01T00:00:30Z")), Decision::Wait(d) if d > Duration::from_secs(29))
        );
        let Decision::Update {
            status: Some(s),
            annotate: true,
        } = decide(&i, t("2026-01-01T00:01:01Z"))
        else {
            panic!("due retry");
        };
        assert_eq!(s.number_of_reconciles, Some(2));
        i.status.as_mut().unwrap().automatic_reconcile_status = Some(s);
        assert_eq!(decide(&i, t("2026-01-01T01:00:00Z")), Decision::Nothing);
    }

    #[test]
    fn succeeded_installations_are_reconciled_by_interval_and_the_counter_resets_on_switch() {
        let spec = AutomaticReconcile {
            succeeded_reconcile: Some(SucceededReconcile {
                interval: Some(landscaper_store::model::Duration::parse("1h").unwrap()),
                cron_spec: None,
            }),
            ..Default::default()
        };
        let mut i = inst(Phase::Succeeded, spec);
        let now = t("2026-01-01T00:00:00Z");
        let Decision::Update {
            status: Some(s),
            annotate: false,
        } = decide(&i, now)
        else {
            panic!("starts the clock");
        };
        i.status.as_mut().unwrap().automatic_reconcile_status = Some(s.clone());
        assert!(matches!(
            decide(&i, t("2026-01-01T00:30:00Z")),
            Decision::Wait(_)
        ));
        assert!(matches!(
            decide(&i, t("2026-01-01T01:00:01Z")),
            Decision::Update { annotate: true, .. }
        ));
        // A status recorded for failures resets when the installation succeeds.
        let mut on_failed = s;
        on_failed.on_failed = Some(true);
        i.status.as_mut().unwrap().automatic_reconcile_status = Some(on_failed);
        assert!(matches!(
            decide(&i, now),
            Decision::Update {
                status: Some(AutomaticReconcileStatus {
                    on_failed: Some(false),
                    ..
                }),
                annotate: false
            }
        ));
    }

    #[test]
    fn nothing_happens_while_a_request_is_pending_or_the_spec_changed() {
        let spec = AutomaticReconcile {
            succeeded_reconcile: Some(SucceededReconcile::default()),
            ..Default::default()
        };
        let mut i = inst(Phase::Succeeded, spec);
        i.metadata.generation = Some(2);
        assert_eq!(decide(&i, t("2026-01-01T00:00:00Z")), Decision::Nothing);
    }

    #[test]
    fn a_cron_spec_overrides_the_interval() {
        let spec = AutomaticReconcile {
            succeeded_reconcile: Some(SucceededReconcile {
                interval: Some(landscaper_store::model::Duration::parse("1m").unwrap()),
                cron_spec: Some("0 3 * * *".into()),
            }),
            ..Default::default()
        };
        let mut i = inst(Phase::Succeeded, spec);
        i.status.as_mut().unwrap().automatic_reconcile_status = Some(AutomaticReconcileStatus {
            generation: Some(1),
            number_of_reconciles: Some(0),
            last_reconcile_time: Some("2026-01-01T00:00:00Z".into()),
            on_failed: Some(false),
        });
        // Not after one minute (the interval), but at 03:00 (the schedule).
        assert!(
            matches!(decide(&i, t("2026-01-01T00:02:00Z")), Decision::Wait(d)
            if d > Duration::from_secs(2 * 3600))
        );
        assert!(matches!(
            decide(&i, t("2026-01-01T03:00:01Z")),
            Decision::Update { annotate: true, .. }
        ));
    }
}
