//! Latency recording with hdrhistogram and the percentile summary every report uses.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Records latencies in nanoseconds, 1 ns to 60 s, 3 significant digits.
pub struct Latencies(Histogram<u64>);

impl Default for Latencies {
    fn default() -> Self {
        Latencies(Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds"))
    }
}

impl Latencies {
    pub fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns.max(1));
    }

    /// Adds another recorder's values (e.g. one per thread).
    pub fn merge(&mut self, other: &Latencies) {
        self.0.add(&other.0).expect("same bounds");
    }

    pub fn summary(&self) -> Summary {
        let h = &self.0;
        Summary {
            count: h.len(),
            mean_ns: h.mean(),
            p50_ns: h.value_at_quantile(0.50),
            p95_ns: h.value_at_quantile(0.95),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }
}

/// Count, mean and percentiles of one latency distribution, in nanoseconds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p95_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl Summary {
    /// Operations per second one thread achieves at this mean latency.
    pub fn ops_per_sec(&self) -> f64 {
        if self.mean_ns > 0.0 {
            1e9 / self.mean_ns
        } else {
            0.0
        }
    }
}

/// Formats nanoseconds for a table: ns below 10 µs, µs below 10 ms, ms above.
pub fn fmt_ns(ns: f64) -> String {
    if ns < 10_000.0 {
        format!("{ns:.0} ns")
    } else if ns < 10_000_000.0 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{:.1} ms", ns / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_follow_the_recorded_values() {
        let mut l = Latencies::default();
        for ns in 1..=1000 {
            l.record(ns);
        }
        let s = l.summary();
        assert_eq!(s.count, 1000);
        assert!((s.p50_ns as i64 - 500).abs() <= 1, "{s:?}");
        assert!((s.p99_ns as i64 - 990).abs() <= 1, "{s:?}");
        assert_eq!(s.max_ns, 1000);
        assert!((s.ops_per_sec() - 1e9 / 500.5).abs() < 1.0);
    }

    #[test]
    fn formats_by_magnitude() {
        assert_eq!(fmt_ns(250.0), "250 ns");
        assert_eq!(fmt_ns(12_345.0), "12.3 µs");
        assert_eq!(fmt_ns(12_345_678.0), "12.3 ms");
    }
}
