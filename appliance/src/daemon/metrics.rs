//! `/metrics` in the OpenMetrics text format (which Prometheus scrapes).
//!
//! Two sources: a collector that reads current state at scrape time (objects by kind and
//! phase, manifest files by state, work-queue depth and wait times, store commit latency, size
//! and revision), and an observer of the store's change feed that counts what happened (job
//! and deploy item durations when a job finishes, reconcile errors by controller and reason,
//! ingest errors). Neither needs hooks in the controllers.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use landscaper_store::stats::HistogramSnapshot;
use landscaper_store::{Change, ChangeType, Kind, LabelSelector, Store};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::daemon::controllers::jobs::is_final_text;
use landscaper_store::object::str_at;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::daemon::controllers::ControllerContext;

type Labels = Vec<(String, String)>;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Buckets for job and deploy item durations: 0.1 s to about 1.5 h.
fn duration_histogram() -> Histogram {
    Histogram::new([
        0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 5400.0,
    ])
}

/// The metrics of one daemon. Cheap to clone.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    events: Arc<EventMetrics>,
}

struct EventMetrics {
    job_duration: Family<Labels, Histogram>,
    deploy_item_duration: Family<Labels, Histogram>,
    reconcile_errors: Family<Labels, Counter>,
    ingest_errors: Counter,
    phase_transitions: Family<Labels, Counter>,
    /// The last error each object showed (reason and update time), so that a repeated status
    /// write is not counted twice; and each manifest file's last failing content hash.
    seen_errors: Mutex<HashMap<String, String>>,
}

impl Metrics {
    pub fn new(store: Store, controllers: Option<ControllerContext>) -> Metrics {
        let mut registry = Registry::with_prefix("landscaper_appliance");
        let events = Arc::new(EventMetrics {
            job_duration: Family::new_with_constructor(duration_histogram),
            deploy_item_duration: Family::new_with_constructor(duration_histogram),
            reconcile_errors: Family::default(),
            ingest_errors: Counter::default(),
            phase_transitions: Family::default(),
            seen_errors: Mutex::new(HashMap::new()),
        });
        registry.register(
            "job_duration_seconds",
            "Duration of finished jobs from trigger to finish, by kind (Installation, Execution)",
            events.job_duration.clone(),
        );
        registry.register(
            "deploy_item_duration_seconds",
            "Duration of finished deploy item jobs from init to finish, by deploy item type and phase",
            events.deploy_item_duration.clone(),
        );
        registry.register(
            "reconcile_errors",
            "Errors recorded in status.lastError, by controller and reason",
            events.reconcile_errors.clone(),
        );
        registry.register(
            "ingest_errors",
            "Manifest file contents that were rejected",
            events.ingest_errors.clone(),
        );
        registry.register(
            "phase_transitions",
            "Phase changes, by kind and new phase",
            events.phase_transitions.clone(),
        );
        registry.register_collector(Box::new(StateCollector { store, controllers }));
        Metrics {
            registry: Arc::new(registry),
            events,
        }
    }

    /// The exposition text.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }

    /// Counts what the change feed reports until `cancel`.
    pub async fn observe(self, store: Store, cancel: CancellationToken) {
        let mut feed = store.subscribe();
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                received = feed.recv() => match received {
                    Ok(set) => {
                        for change in &set.changes {
                            self.events.observe(change);
                        }
                    }
                    Err(RecvError::Lagged(n)) => {
                        tracing::debug!(missed = n, "metrics missed change feed entries");
                    }
                    Err(RecvError::Closed) => return,
                },
            }
        }
    }

    /// Feeds one change (what [`observe`](Self::observe) does per change).
    #[cfg(test)]
    fn observe_change(&self, change: &Change) {
        self.events.observe(change);
    }

    pub fn routes(self) -> axum::Router {
        axum::Router::new()
            .route("/metrics", get(scrape))
            .with_state(self)
    }
}

fn seconds_between(from: &str, to: &str) -> Option<f64> {
    let from: jiff::Timestamp = from.parse().ok()?;
    let to: jiff::Timestamp = to.parse().ok()?;
    let d = to.duration_since(from);
    Some(d.as_secs_f64()).filter(|s| *s >= 0.0)
}

impl EventMetrics {
    fn observe(&self, change: &Change) {
        let kind = change.key.kind;
        let key = change.key.to_string();
        if change.change_type == ChangeType::Deleted {
            self.lock_seen().remove(&key);
            return;
        }
        let o = &change.object;
        let status = &o["status"];
        let phase = str_at(status, "/phase");
        if kind == Kind::ManifestFile {
            if status.get("lastError").is_some_and(|e| !e.is_null()) {
                let content = str_at(status, "/observedSha256").to_string();
                if self.lock_seen().insert(key, content.clone()) != Some(content) {
                    self.ingest_errors.inc();
                }
            }
            return;
        }
        if !matches!(
            kind,
            Kind::Installation | Kind::Execution | Kind::DeployItem
        ) {
            return;
        }
        let previous = change.previous_phase.as_deref().unwrap_or_default();
        if !phase.is_empty() && phase != previous {
            self.phase_transitions
                .get_or_create(&labels(&[("kind", kind.as_str()), ("phase", phase)]))
                .inc();
            let job = str_at(status, "/jobID");
            let finished_now =
                is_final_text(phase) && !job.is_empty() && job == str_at(status, "/jobIDFinished");
            if finished_now {
                let times = &status["transitionTimes"];
                let end = str_at(times, "/finishedTime");
                if kind == Kind::DeployItem {
                    if let Some(s) = seconds_between(str_at(times, "/initTime"), end) {
                        let item_type = str_at(o, "/spec/type");
                        self.deploy_item_duration
                            .get_or_create(&labels(&[("type", item_type), ("phase", phase)]))
                            .observe(s);
                    }
                } else if let Some(s) = seconds_between(str_at(times, "/triggerTime"), end)
                    .or_else(|| seconds_between(str_at(times, "/initTime"), end))
                {
                    self.job_duration
                        .get_or_create(&labels(&[("kind", kind.as_str()), ("phase", phase)]))
                        .observe(s);
                }
            }
        }
        if let Some(error) = status.get("lastError").filter(|e| !e.is_null()) {
            let reason = str_at(error, "/reason");
            let fingerprint = format!("{reason}\u{0}{}", str_at(error, "/lastUpdateTime"));
            if self.lock_seen().insert(key, fingerprint.clone()) != Some(fingerprint) {
                let controller = match kind {
                    Kind::Installation => "installation",
                    Kind::Execution => "execution",
                    _ => "deployitem",
                };
                self.reconcile_errors
                    .get_or_create(&labels(&[("controller", controller), ("reason", reason)]))
                    .inc();
            }
        }
    }

    fn lock_seen(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.seen_errors.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Reads current state at scrape time.
struct StateCollector {
    store: Store,
    controllers: Option<ControllerContext>,
}

impl std::fmt::Debug for StateCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateCollector")
    }
}

/// A gauge value for the collector.
struct GaugeValue(f64);

impl EncodeMetric for GaugeValue {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::MetricEncoder,
    ) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(&self.0)
    }
    fn metric_type(&self) -> MetricType {
        MetricType::Gauge
    }
}

/// A histogram from a lock-free snapshot.
struct SnapshotHistogram(HistogramSnapshot);

impl EncodeMetric for SnapshotHistogram {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::MetricEncoder,
    ) -> Result<(), std::fmt::Error> {
        // The encoder wants per-bucket counts ending with +Inf.
        let mut per_bucket = Vec::with_capacity(self.0.buckets.len() + 1);
        let mut previous = 0;
        for (upper, cumulative) in &self.0.buckets {
            per_bucket.push((*upper, cumulative - previous));
            previous = *cumulative;
        }
        per_bucket.push((f64::INFINITY, self.0.count - previous));
        encoder.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            self.0.sum,
            self.0.count,
            &per_bucket,
            None,
        )
    }
    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

fn encode_family<M: EncodeMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    metric_type: MetricType,
    series: &[(Labels, M)],
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, metric_type)?;
    if let [(labels, value)] = series
        && labels.is_empty()
    {
        return value.encode(metric);
    }
    for (labels, value) in series {
        let labels: Vec<(Cow<'_, str>, Cow<'_, str>)> = labels
            .iter()
            .map(|(k, v)| (Cow::from(k.as_str()), Cow::from(v.as_str())))
            .collect();
        value.encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

impl Collector for StateCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut objects: Vec<(Labels, GaugeValue)> = Vec::new();
        let mut files: HashMap<String, f64> = HashMap::new();
        let counts = self.store.count_by_kind().unwrap_or_default();
        for (kind, total) in counts {
            match kind {
                Kind::Installation | Kind::Execution | Kind::DeployItem | Kind::ManifestFile => {
                    let Ok(list) = self.store.list(kind, None, &LabelSelector::default()) else {
                        continue;
                    };
                    let mut by_phase: HashMap<String, f64> = HashMap::new();
                    for o in &list.items {
                        *by_phase
                            .entry(str_at(o, "/status/phase").to_string())
                            .or_default() += 1.0;
                    }
                    if kind == Kind::ManifestFile {
                        files = by_phase;
                        continue;
                    }
                    let mut phases: Vec<_> = by_phase.into_iter().collect();
                    phases.sort_by(|a, b| a.0.cmp(&b.0));
                    for (phase, n) in phases {
                        objects.push((
                            labels(&[("kind", kind.as_str()), ("phase", &phase)]),
                            GaugeValue(n),
                        ));
                    }
                }
                other => objects.push((
                    labels(&[("kind", other.as_str()), ("phase", "")]),
                    GaugeValue(total as f64),
                )),
            }
        }
        encode_family(
            &mut encoder,
            "objects",
            "Stored objects by kind and status.phase (empty for kinds without phases)",
            MetricType::Gauge,
            &objects,
        )?;
        let mut files: Vec<_> = files.into_iter().collect();
        files.sort_by(|a, b| a.0.cmp(&b.0));
        let files: Vec<(Labels, GaugeValue)> = files
            .into_iter()
            .map(|(state, n)| (labels(&[("state", &state)]), GaugeValue(n)))
            .collect();
        encode_family(
            &mut encoder,
            "manifest_files",
            "Files of the manifests folder by state (Applied, Error, Skipped)",
            MetricType::Gauge,
            &files,
        )?;
        encode_family(
            &mut encoder,
            "store_commit_seconds",
            "Time from a store commit request to its durable answer",
            MetricType::Histogram,
            &[(Vec::new(), SnapshotHistogram(self.store.commit_latency()))],
        )?;
        encode_family(
            &mut encoder,
            "store_size_bytes",
            "Size of the store file",
            MetricType::Gauge,
            &[(Vec::new(), GaugeValue(self.store.file_size() as f64))],
        )?;
        encode_family(
            &mut encoder,
            "store_revision",
            "The store's newest committed revision",
            MetricType::Gauge,
            &[(Vec::new(), GaugeValue(self.store.revision() as f64))],
        )?;
        if let Some(queues) = self.controllers.as_ref().and_then(|c| c.queues()) {
            let queues = [
                ("installation", &queues.installations),
                ("execution", &queues.executions),
                ("deployitem", &queues.deploy_items),
            ];
            let depth: Vec<(Labels, GaugeValue)> = queues
                .iter()
                .map(|(name, q)| (labels(&[("controller", name)]), GaugeValue(q.len() as f64)))
                .collect();
            encode_family(
                &mut encoder,
                "workqueue_depth",
                "Keys ready for a worker, by controller",
                MetricType::Gauge,
                &depth,
            )?;
            let delayed: Vec<(Labels, GaugeValue)> = queues
                .iter()
                .map(|(name, q)| {
                    (
                        labels(&[("controller", name)]),
                        GaugeValue(q.delayed_len() as f64),
                    )
                })
                .collect();
            encode_family(
                &mut encoder,
                "workqueue_delayed",
                "Keys waiting for a requeue delay, by controller",
                MetricType::Gauge,
                &delayed,
            )?;
            let waits: Vec<(Labels, SnapshotHistogram)> = queues
                .iter()
                .map(|(name, q)| {
                    (
                        labels(&[("controller", name)]),
                        SnapshotHistogram(q.wait_times()),
                    )
                })
                .collect();
            encode_family(
                &mut encoder,
                "workqueue_wait_seconds",
                "Time keys waited in the queue before a worker took them, by controller",
                MetricType::Histogram,
                &waits,
            )?;
        }
        Ok(())
    }
}

async fn scrape(State(metrics): State<Metrics>) -> Response {
    match tokio::task::spawn_blocking(move || metrics.encode()).await {
        Ok(Ok(text)) => {
            let mut response = (StatusCode::OK, text).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                ),
            );
            response
        }
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "encoding metrics failed").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use landscaper_store::{ObjectKey, StoreOptions};
    use serde_json::{Value, json};

    fn change(kind: Kind, previous: Option<&str>, object: Value) -> Change {
        Change {
            change_type: ChangeType::Modified,
            key: ObjectKey::new(kind, "ns", "x"),
            object,
            previous_phase: previous.map(str::to_string),
        }
    }

    fn open() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb"), StoreOptions::default()).unwrap();
        (dir, store)
    }

    #[test]
    fn finished_jobs_errors_and_state_are_exposed() {
        let (_dir, store) = open();
        let metrics = Metrics::new(store, None);
        metrics.observe_change(&change(
            Kind::Installation,
            Some("Progressing"),
            json!({"status": {"phase": "Succeeded", "jobID": "j", "jobIDFinished": "j",
                "transitionTimes": {"triggerTime": "2026-01-01T00:00:00Z", "finishedTime": "2026-01-01T00:00:03Z"}}}),
        ));
        metrics.observe_change(&change(
            Kind::DeployItem,
            Some("Progressing"),
            json!({"spec": {"type": "landscaper.gardener.cloud/mock"},
                "status": {"phase": "Failed", "jobID": "j", "jobIDFinished": "j",
                "lastError": {"reason": "Boom", "lastUpdateTime": "2026-01-01T00:00:01Z"},
                "transitionTimes": {"initTime": "2026-01-01T00:00:00Z", "finishedTime": "2026-01-01T00:00:01Z"}}}),
        ));
        // The same error written again is not counted again.
        metrics.observe_change(&change(
            Kind::DeployItem,
            Some("Failed"),
            json!({"status": {"phase": "Failed", "lastError": {"reason": "Boom", "lastUpdateTime": "2026-01-01T00:00:01Z"}}}),
        ));
        let text = metrics.encode().unwrap();
        assert!(
            text.contains(
                "landscaper_appliance_job_duration_seconds_sum{kind=\"Installation\",phase=\"Succeeded\"} 3.0"
            ),
            "{text}"
        );
        assert!(text.contains(
            "landscaper_appliance_deploy_item_duration_seconds_count{type=\"landscaper.gardener.cloud/mock\",phase=\"Failed\"} 1"
        ));
        assert!(text.contains(
            "landscaper_appliance_reconcile_errors_total{controller=\"deployitem\",reason=\"Boom\"} 1"
        ));
        assert!(text.contains("landscaper_appliance_store_commit_seconds_bucket{le=\"+Inf\"}"));
        assert!(text.contains("# TYPE landscaper_appliance_objects gauge"));
        assert!(text.ends_with("# EOF\n"));
    }
}
