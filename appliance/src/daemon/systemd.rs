//! The systemd service protocol (`sd_notify`): `READY=1` once the daemon serves, `STATUS=`
//! lines with job counts, `WATCHDOG=1` while the daemon makes progress, `STOPPING=1` on
//! shutdown. Without `NOTIFY_SOCKET` (not under systemd) every call is a no-op.

use std::time::Duration;

use landscaper_store::{Kind, LabelSelector, Store};
use sd_notify::NotifyState;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// How often the STATUS line is refreshed.
const STATUS_INTERVAL: Duration = Duration::from_secs(10);

fn send(states: &[NotifyState]) {
    // Losing a notification must never stop the daemon; systemd reports a missing READY.
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!(error = %e, "cannot notify the service manager");
    }
}

/// Tells systemd the daemon is ready (store open, folder scanned, API listening).
pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// Tells systemd the daemon is stopping.
pub fn stopping() {
    send(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
}

/// Tells systemd the daemon is reloading its configuration, and when it is done.
pub fn reloading(done: bool) {
    if done {
        send(&[
            NotifyState::Ready,
            NotifyState::Status("configuration reloaded"),
        ]);
    } else {
        let now = sd_notify::NotifyState::monotonic_usec_now();
        match now {
            Ok(now) => send(&[NotifyState::Reloading, now]),
            Err(_) => send(&[NotifyState::Reloading]),
        }
    }
}

/// Counts installations by what matters to an operator.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct JobCounts {
    pub installations: usize,
    pub running: usize,
    pub succeeded: usize,
    pub failed: usize,
}

impl JobCounts {
    pub fn of(installations: &[Value]) -> JobCounts {
        let mut c = JobCounts {
            installations: installations.len(),
            ..JobCounts::default()
        };
        for i in installations {
            let status = &i["status"];
            let running = status["jobID"].as_str().is_some_and(|j| !j.is_empty())
                && status["jobID"] != status["jobIDFinished"];
            if running {
                c.running += 1;
                continue;
            }
            match status["phase"].as_str() {
                Some("Succeeded") => c.succeeded += 1,
                Some("Failed") | Some("DeleteFailed") => c.failed += 1,
                _ => {}
            }
        }
        c
    }

    pub fn status_line(&self) -> String {
        format!(
            "{} installations: {} running, {} succeeded, {} failed",
            self.installations, self.running, self.succeeded, self.failed
        )
    }
}

async fn counts(store: &Store) -> Option<JobCounts> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || {
        store
            .list(Kind::Installation, None, &LabelSelector::default())
            .ok()
            .map(|l| JobCounts::of(&l.items))
    })
    .await
    .ok()
    .flatten()
}

/// The status line for `READY=1`.
pub async fn current_status(store: &Store) -> String {
    counts(store)
        .await
        .map(|c| c.status_line())
        .unwrap_or_else(|| "ready".to_string())
}

/// A key ready for this long without a worker taking it means the controllers are stuck
/// (workers legitimately stay busy for a while, e.g. waiting for readiness, so this is
/// generous).
pub const STALLED_AFTER: Duration = Duration::from_secs(300);

/// Whether the controllers make progress: `Err` names the queue and the wait when a key has
/// been ready for longer than `limit`.
pub fn controllers_progress(
    controllers: &crate::daemon::controllers::ControllerContext,
    limit: Duration,
) -> Result<(), String> {
    let Some(queues) = controllers.queues() else {
        return Ok(());
    };
    for (name, queue) in [
        ("installation", &queues.installations),
        ("execution", &queues.executions),
        ("deployitem", &queues.deploy_items),
    ] {
        if let Some(wait) = queue.oldest_wait().filter(|w| *w > limit) {
            return Err(format!(
                "the {name} controller took no key for {}s",
                wait.as_secs()
            ));
        }
    }
    Ok(())
}

/// Refreshes STATUS= and, when systemd set `WatchdogSec=`, sends WATCHDOG=1 at half the
/// interval as long as the store answers a read within that time and the controllers make
/// progress (no key waits longer than [`STALLED_AFTER`] for a worker): a wedged store, stuck
/// workers or a starved runtime stop the pings and systemd restarts the service.
pub async fn supervise(
    store: Store,
    controllers: Option<crate::daemon::controllers::ControllerContext>,
    cancel: CancellationToken,
) {
    let watchdog = sd_notify::watchdog_enabled();
    let tick = watchdog
        .map(|w| (w / 2).min(STATUS_INTERVAL))
        .unwrap_or(STATUS_INTERVAL);
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_status = String::new();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = interval.tick() => {}
        }
        let probe = tokio::time::timeout(tick, counts(&store)).await;
        match probe {
            Ok(Some(c)) => {
                // The writer reopens the store by itself once the disk takes writes again, so
                // the watchdog stays fed (a restart could not open a full disk's store either);
                // STATUS= says why nothing changes.
                let line = match store.unwritable() {
                    Some(u) => format!("store not writable since {}: {}", u.since, u.reason),
                    None => c.status_line(),
                };
                let mut states = Vec::new();
                let progress = controllers
                    .as_ref()
                    .map_or(Ok(()), |c| controllers_progress(c, STALLED_AFTER));
                match progress {
                    Ok(()) if watchdog.is_some() => states.push(NotifyState::Watchdog),
                    Ok(()) => {}
                    Err(stall) => {
                        tracing::error!(%stall, "controllers are stuck; watchdog not fed")
                    }
                }
                if line != last_status {
                    states.push(NotifyState::Status(&line));
                }
                if !states.is_empty() {
                    send(&states);
                }
                last_status = line;
            }
            _ => tracing::warn!("the store did not answer in time; watchdog not fed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn counts_running_succeeded_and_failed_jobs() {
        let inst = |phase: &str, job: &str, finished: &str| json!({"status": {"phase": phase, "jobID": job, "jobIDFinished": finished}});
        let c = JobCounts::of(&[
            inst("Progressing", "b", "a"),
            inst("Succeeded", "a", "a"),
            inst("Failed", "a", "a"),
            inst("DeleteFailed", "c", "c"),
            json!({"metadata": {"name": "new"}}),
        ]);
        assert_eq!(
            c,
            JobCounts {
                installations: 5,
                running: 1,
                succeeded: 1,
                failed: 2
            }
        );
        assert_eq!(
            c.status_line(),
            "5 installations: 1 running, 1 succeeded, 2 failed"
        );
    }
}
