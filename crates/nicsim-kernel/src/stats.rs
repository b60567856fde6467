//! Streaming latency statistics for a model's sink: count, mean, min and max exactly in
//! ticks, percentiles from an HDR histogram in nanoseconds. Memory does not grow with the
//! number of packets.

use hdrhistogram::Histogram;
use serde::Serialize;
use serde_json::Value;

use crate::time::Timebase;

/// Latency statistics in ticks (percentiles in ns through the histogram).
#[derive(Clone)]
pub struct LatStats {
    n: u64,
    sum: u128,
    min: u64,
    max: u64,
    /// Nanoseconds, for the percentiles.
    hist: Histogram<u32>,
}

impl Default for LatStats {
    fn default() -> Self {
        LatStats {
            n: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
            // Bounded (so that recording never resizes or saturates below a real value) from
            // 1 ns to 2^40 ns (18 minutes), 3 significant digits.
            hist: Histogram::new_with_bounds(1, 1 << 40, 3).expect("valid histogram bounds"),
        }
    }
}

impl LatStats {
    /// Records one latency, given in ticks and in nanoseconds.
    #[inline]
    pub fn record(&mut self, ticks: u64, ns: u64) {
        self.n += 1;
        self.sum += ticks as u128;
        self.min = self.min.min(ticks);
        self.max = self.max.max(ticks);
        self.hist.saturating_record(ns.max(1));
    }

    /// Adds `other`'s latencies, as if they had been recorded here (exactly: the counts,
    /// sums and extremes add up, and both histograms have the same bounds).
    pub fn merge(&mut self, other: &LatStats) {
        self.n += other.n;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.hist
            .add(&other.hist)
            .expect("histograms of the same bounds add up");
    }

    /// Latencies recorded.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Mean latency in ticks (0 with none recorded).
    pub fn mean_ticks(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }

    /// Packets, then mean, min, p50, p99 and max in µs (only packets when empty).
    pub fn summary(&self, tb: &Timebase) -> LatSummary {
        if self.n == 0 {
            return LatSummary {
                packets: 0,
                us: None,
            };
        }
        let us = |t: f64| t / tb.ticks_per_us() as f64;
        let (min, max) = (us(self.min as f64), us(self.max as f64));
        // The histogram gives the highest value of the percentile's bucket (3 significant
        // digits), which for few samples can lie past the largest one recorded: a percentile
        // of the recorded values lies within [min, max], and the bucket's value is cut to it.
        let pct = |q: f64| (self.hist.value_at_quantile(q) as f64 / 1e3).clamp(min, max);
        LatSummary {
            packets: self.n,
            us: Some(LatUs {
                mean: us(self.mean_ticks()),
                min,
                p50: pct(0.5),
                p99: pct(0.99),
                max,
            }),
        }
    }

    /// [`LatStats::summary`] as JSON: `{"packets", "mean", "min", "p50", "p99", "max"}`.
    pub fn to_json(&self, tb: &Timebase) -> Value {
        serde_json::to_value(self.summary(tb)).expect("plain numbers")
    }
}

/// A latency summary (a summary's `latency_us`): the packets measured and, if any, their
/// latency in µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatSummary {
    /// Packets measured.
    pub packets: u64,
    /// Their latency in µs (none when no packet was measured).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub us: Option<LatUs>,
}

/// Latency in µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatUs {
    /// Exact mean.
    pub mean: f64,
    /// Least.
    pub min: f64,
    /// Median, from the histogram (3 significant digits).
    pub p50: f64,
    /// 99th percentile, from the histogram.
    pub p99: f64,
    /// Most.
    pub max: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn percentiles_lie_between_min_and_max() {
        // A few samples whose histogram bucket reaches past the largest (9,496 ns: the bucket
        // of 3 significant digits ends at 9,503 ns), and drawn ones (xorshift).
        let tb = Timebase::for_clocks_mhz(&[1000]);
        let per_ns = tb.ticks_per_us() as f64 / 1e3;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for case in 0..2_000 {
            let mut s = LatStats::default();
            let n = if case == 0 { 1 } else { 1 + (x % 5) as usize };
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let ns = if case == 0 { 9_496 } else { 1 + x % 50_000_000 };
                s.record((ns as f64 * per_ns) as u64, ns);
            }
            let u = s.summary(&tb).us.unwrap();
            assert!(
                u.min <= u.p50 && u.p50 <= u.p99 && u.p99 <= u.max,
                "{case}: {} {} {} {}",
                u.min,
                u.p50,
                u.p99,
                u.max
            );
        }
    }

    #[test]
    fn empty_and_filled() {
        let tb = Timebase::for_clocks_mhz(&[1000]);
        let mut s = LatStats::default();
        assert_eq!(s.to_json(&tb), json!({"packets": 0}));
        let per_us = tb.ticks_per_us();
        for us in [1_u64, 2, 3, 10] {
            s.record(us * per_us, us * 1000);
        }
        let j = s.to_json(&tb);
        assert_eq!(j["packets"], 4);
        assert_eq!(j["mean"], 4.0);
        assert_eq!(j["min"], 1.0);
        assert_eq!(j["max"], 10.0);
        assert!((j["p50"].as_f64().unwrap() - 2.0).abs() < 0.01);
        // Recorded in two parts and merged: the same statistics as recorded in one.
        let (mut a, mut b) = (LatStats::default(), LatStats::default());
        for (i, us) in [5_u64, 1, 7, 3, 3, 900].into_iter().enumerate() {
            let part = if i % 2 == 0 { &mut a } else { &mut b };
            part.record(us * per_us, us * 1000);
            s.record(us * per_us, us * 1000);
        }
        let mut whole = LatStats::default();
        for (i, us) in [1_u64, 2, 3, 10].into_iter().enumerate() {
            let part = if i % 2 == 0 { &mut a } else { &mut b };
            part.record(us * per_us, us * 1000);
        }
        whole.merge(&a);
        whole.merge(&b);
        assert_eq!(whole.to_json(&tb), s.to_json(&tb));
        assert_eq!(whole.count(), 10);
    }
}
