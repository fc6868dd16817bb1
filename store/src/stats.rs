//! Lock-free latency histograms: the store records commit latency in one, the appliance's work
//! queues record how long keys wait; metrics read snapshots of them at scrape time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds (seconds) of the histogram buckets; one more bucket counts everything above.
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Debug, Default)]
pub struct LatencyHistogram {
    buckets: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

/// A histogram's state: cumulative counts per upper bound (Prometheus' `le`), total count and
/// sum in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    pub buckets: Vec<(f64, u64)>,
    pub count: u64,
    pub sum: f64,
}

impl LatencyHistogram {
    pub fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let index = LATENCY_BUCKETS
            .iter()
            .position(|upper| seconds <= *upper)
            .unwrap_or(LATENCY_BUCKETS.len());
        self.buckets[index].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut cumulative = 0;
        let mut buckets = Vec::with_capacity(LATENCY_BUCKETS.len());
        for (upper, count) in LATENCY_BUCKETS.iter().zip(&self.buckets) {
            cumulative += count.load(Ordering::Relaxed);
            buckets.push((*upper, cumulative));
        }
        let count = cumulative + self.buckets[LATENCY_BUCKETS.len()].load(Ordering::Relaxed);
        HistogramSnapshot {
            buckets,
            count,
            sum: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_cumulative_buckets() {
        let h = LatencyHistogram::default();
        h.observe(Duration::from_micros(50));
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_secs(10));
        let s = h.snapshot();
        assert_eq!(s.count, 3);
        assert_eq!(s.buckets[0], (0.0001, 1));
        // 3 ms is above 2.5 ms and within 5 ms.
        assert_eq!(s.buckets[4], (0.0025, 1));
        assert_eq!(s.buckets[5], (0.005, 2));
        assert_eq!(s.buckets.last().unwrap().1, 2);
        assert!((s.sum - 10.00305).abs() < 1e-6, "{}", s.sum);
    }
}
