//! Integer simulation time.
//!
//! One tick is `1 / lcm(all clock frequencies in MHz)` microseconds, so every clock period is a
//! whole number of ticks and edge `n` of a clock at `f` MHz sits at exactly `n / f` µs. With the
//! datapath's 100, 125, 150, 200 and 250 MHz the tick is 1/3000 µs (0.333 ns); u64 ticks then
//! cover 194 years, far beyond any run.
//!
//! A point in time is a [`Time`]; a duration is a plain `u64` count of ticks (a clock period,
//! a latency, a sojourn). `Time + ticks` is a later time and `Time − Time` the ticks between
//! two, so a point in time cannot be taken for a duration, a count or an id.

use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time, in ticks of the run's [`Timebase`] from the start of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct Time(u64);

impl Time {
    /// The start of the run.
    pub const ZERO: Time = Time(0);
    /// The last representable instant: never reached, so it stands for "not before the end"
    /// (no event pending, no deadline).
    pub const MAX: Time = Time(u64::MAX);

    /// The instant `ticks` after the start of the run.
    #[inline(always)]
    pub const fn from_ticks(ticks: u64) -> Time {
        Time(ticks)
    }
    /// Ticks since the start of the run.
    #[inline(always)]
    pub const fn ticks(self) -> u64 {
        self.0
    }
    /// Ticks from `earlier` to `self`, 0 if `earlier` is later.
    #[inline(always)]
    pub fn saturating_sub(self, earlier: Time) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl Add<u64> for Time {
    type Output = Time;
    /// The instant `ticks` later.
    #[inline(always)]
    fn add(self, ticks: u64) -> Time {
        Time(self.0 + ticks)
    }
}

impl AddAssign<u64> for Time {
    #[inline(always)]
    fn add_assign(&mut self, ticks: u64) {
        self.0 += ticks;
    }
}

impl Sub for Time {
    type Output = u64;
    /// Ticks from `earlier` to `self` (which must not be before it).
    #[inline(always)]
    fn sub(self, earlier: Time) -> u64 {
        self.0 - earlier.0
    }
}

/// Converts between ticks and physical units for one simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timebase {
    ticks_per_us: u64,
}

pub(crate) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Timebase {
    /// The coarsest timebase in which every given clock has an integer period.
    /// Frequencies are in MHz and must be non-zero.
    pub fn for_clocks_mhz(clocks_mhz: &[u32]) -> Timebase {
        let lcm = clocks_mhz
            .iter()
            .filter(|&&f| f > 0)
            .fold(1u64, |acc, &f| acc / gcd(acc, f as u64) * f as u64);
        Timebase { ticks_per_us: lcm }
    }
    /// The same timebase, or `None` when the clocks' lcm does not fit in 64 bits.
    pub fn checked_for_clocks_mhz(clocks_mhz: &[u32]) -> Option<Timebase> {
        let mut lcm = 1u64;
        for &f in clocks_mhz.iter().filter(|&&f| f > 0) {
            lcm = (lcm / gcd(lcm, f as u64)).checked_mul(f as u64)?;
        }
        Some(Timebase { ticks_per_us: lcm })
    }
    /// Whether 64-bit time reaches `us` microseconds in this timebase.
    pub fn reaches_us(&self, us: f64) -> bool {
        us * (self.ticks_per_us as f64) < u64::MAX as f64
    }
    /// The timebase of a run on `clocks_mhz` whose traffic spans `span_us` simulated µs, or
    /// why 64-bit time cannot hold the run. It must reach [`SPAN_FACTOR`] × `span_us` +
    /// [`DRAIN_US`], far more than a run's drain and rounding take, so time cannot wrap. Every
    /// model's config check reaches this through [`crate::config::check_timebase`], which also
    /// names the key at fault.
    pub fn for_span(clocks_mhz: &[u32], span_us: f64) -> Result<Timebase, TimeRangeError> {
        let need_us = SPAN_FACTOR * span_us + DRAIN_US;
        match Timebase::checked_for_clocks_mhz(clocks_mhz) {
            Some(tb) if span_us.is_finite() && tb.reaches_us(need_us) => Ok(tb),
            tb => Err(TimeRangeError {
                clocks_mhz: clocks_mhz.to_vec(),
                reach_us: tb.map(|tb| u64::MAX as f64 / tb.ticks_per_us as f64),
                span_us,
            }),
        }
    }
    /// Ticks in one microsecond.
    pub fn ticks_per_us(&self) -> u64 {
        self.ticks_per_us
    }
    /// A clock of `mhz` in this timebase. Panics if the timebase was not built for it.
    pub fn clock(&self, mhz: u32) -> Clock {
        assert!(
            mhz > 0 && self.ticks_per_us.is_multiple_of(mhz as u64),
            "clock {mhz} MHz not in timebase"
        );
        Clock::new(mhz, self.ticks_per_us / mhz as u64)
    }
    /// Time `t` in microseconds since the start of the run.
    pub fn to_us(&self, t: Time) -> f64 {
        self.ticks_to_us(t.ticks())
    }
    /// A duration of `ticks` in microseconds.
    pub fn ticks_to_us(&self, ticks: u64) -> f64 {
        ticks as f64 / self.ticks_per_us as f64
    }
    /// A duration of `ticks` in nanoseconds.
    pub fn ticks_to_ns(&self, ticks: u64) -> f64 {
        ticks as f64 * 1e3 / self.ticks_per_us as f64
    }
    /// The instant nearest to `us` microseconds after the start of the run (for arrival
    /// processes given in real time).
    pub fn from_us(&self, us: f64) -> Time {
        Time(self.ticks_from_us(us))
    }
    /// The whole ticks nearest to a duration of `us` microseconds.
    pub fn ticks_from_us(&self, us: f64) -> u64 {
        (us * self.ticks_per_us as f64).round() as u64
    }
}

/// Simulated time must reach this many times the span of a run's traffic, plus [`DRAIN_US`].
pub const SPAN_FACTOR: f64 = 4.0;
/// One simulated second of drain beyond the traffic.
pub const DRAIN_US: f64 = 1e6;

/// A run that 64-bit time cannot hold with its clocks (see [`Timebase::for_span`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TimeRangeError {
    /// The run's clocks in MHz, as given to [`Timebase::for_span`].
    pub clocks_mhz: Vec<u32>,
    /// How far 64-bit time reaches (µs), or `None` when the clocks' lcm overflows.
    pub reach_us: Option<f64>,
    /// The span of traffic the run needed to hold, in µs; 0 when the clocks alone are at fault.
    pub span_us: f64,
}

impl std::fmt::Display for TimeRangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut list: Vec<String> = Vec::new();
        for c in self.clocks_mhz.iter().map(|c| c.to_string()) {
            if !list.contains(&c) {
                list.push(c);
            }
        }
        let reach = match self.reach_us {
            Some(us) => format!("only {} µs of", fmt_us(us)),
            None => "no".to_string(),
        };
        // Without traffic (span 0) the clocks alone are at fault.
        if self.span_us == 0.0 {
            return write!(
                f,
                "the clocks ({} MHz) make a tick 1/lcm µs, so 64-bit time covers {reach} \
                 simulated time, less than the {DRAIN_US} µs of drain every run needs: use \
                 clocks with common factors",
                list.join(", "),
            );
        }
        write!(
            f,
            "the clocks ({} MHz) make a tick 1/lcm µs, so 64-bit time covers {reach} simulated \
             time, less than {SPAN_FACTOR} × the {} µs of traffic + {DRAIN_US} µs of drain: \
             use clocks with common factors or less traffic",
            list.join(", "),
            fmt_us(self.span_us),
        )
    }
}

/// Whole µs, or in scientific notation beyond 10^12.
fn fmt_us(us: f64) -> String {
    if us.abs() < 1e12 {
        format!("{us:.0}")
    } else {
        format!("{us:.3e}")
    }
}

impl std::error::Error for TimeRangeError {}

/// A clock domain: edges at every multiple of `period` ticks, starting at time 0.
///
/// Edge arithmetic divides by the period on every call in the simulator's hot loop, so the
/// divisor is strength-reduced once (multiply and shift instead of a hardware divide).
#[derive(Clone, Copy)]
pub struct Clock {
    /// Frequency in MHz.
    pub mhz: u32,
    /// Cycle length in ticks of the run's [`Timebase`].
    pub period: u64,
    div: strength_reduce::StrengthReducedU64,
    /// period = odd · 2^shift: t is a multiple of the period iff its low `shift` bits are zero
    /// and (t >> shift) · odd⁻¹ mod 2^64 ≤ (2^64 − 1) / odd.
    shift: u32,
    low_mask: u64,
    odd_inverse: u64,
    max_quotient: u64,
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Clock({} MHz, {} ticks)", self.mhz, self.period)
    }
}

impl PartialEq for Clock {
    fn eq(&self, o: &Clock) -> bool {
        self.period == o.period
    }
}
impl Eq for Clock {}

impl Clock {
    /// A clock of `mhz` whose period is `period` ticks (> 0).
    pub fn new(mhz: u32, period: u64) -> Clock {
        let shift = period.trailing_zeros();
        let odd = period >> shift;
        // Newton's iteration doubles the correct low bits of the inverse: 3 → 6 → … → 96.
        let mut inv = odd;
        for _ in 0..5 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(odd.wrapping_mul(inv)));
        }
        Clock {
            mhz,
            period,
            div: strength_reduce::StrengthReducedU64::new(period),
            shift,
            low_mask: (1u64 << shift) - 1,
            odd_inverse: inv,
            max_quotient: u64::MAX / odd,
        }
    }
    /// The first edge at or after `t`.
    #[inline]
    pub fn edge_at_or_after(&self, t: Time) -> Time {
        let t = t.ticks();
        // Most times asked about are edges already: a divisibility test (a shift, a multiply
        // by the inverse of the period's odd part, a compare) settles those.
        // (`&`, not `&&`: one branch, not two.)
        if ((t >> self.shift).wrapping_mul(self.odd_inverse) <= self.max_quotient)
            & (t & self.low_mask == 0)
        {
            return Time(t);
        }
        let q = t / self.div;
        if q * self.period == t {
            Time(t)
        } else {
            Time((q + 1) * self.period)
        }
    }
    /// The first edge strictly after `t`.
    #[inline]
    pub fn edge_after(&self, t: Time) -> Time {
        Time((t.ticks() / self.div + 1) * self.period)
    }
    /// Whether `t` is an edge of this clock (a multiple of its period).
    #[inline]
    pub fn is_edge(&self, t: Time) -> bool {
        t.ticks() % self.div == 0
    }
    /// Duration of `n` cycles, in ticks.
    #[inline]
    pub fn cycles(&self, n: u64) -> u64 {
        n * self.period
    }
    /// Whole cycles in a duration of `dt` ticks.
    #[inline]
    pub fn cycles_in(&self, dt: u64) -> u64 {
        dt / self.div
    }
    /// Edge `n` of the clock: `n` cycles after the start of the run.
    #[inline]
    pub fn edge(&self, n: u64) -> Time {
        Time(n * self.period)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_must_fit_in_64_bit_time() {
        let tb = Timebase::for_span(&[250, 150], 1e6).unwrap();
        assert_eq!(tb.ticks_per_us(), 750);
        // lcm ≈ 9.5e15 ticks/µs: 64-bit time ends at ~1949 µs.
        let primes = [9973, 997, 991, 983, 977];
        assert!(
            Timebase::for_span(&primes, 1.0).is_err(),
            "the drain alone does not fit"
        );
        let e =
            Timebase::for_span(&[4_294_967_291, 4_294_967_279, 4_294_967_231], 1.0).unwrap_err();
        assert_eq!(e.reach_us, None, "lcm beyond 64 bits");
        assert!(e.to_string().contains("covers no simulated time"), "{e}");
        let e = Timebase::for_span(&[1000, 999, 1000], 1e13).unwrap_err();
        assert!(
            e.to_string().starts_with("the clocks (1000, 999 MHz)"),
            "{e}"
        );
        assert!(Timebase::for_span(&[250], f64::INFINITY).is_err());
    }

    #[test]
    fn datapath_clocks_share_an_exact_base() {
        let tb = Timebase::for_clocks_mhz(&[250, 150, 100, 200, 125]);
        assert_eq!(tb.ticks_per_us(), 3000);
        let c150 = tb.clock(150);
        // 150 cycles of a 150 MHz clock are exactly one microsecond: no drift.
        assert_eq!(c150.cycles(150), tb.ticks_per_us());
        assert_eq!(tb.to_us(c150.edge(150_000_000)), 1_000_000.0);
    }

    #[test]
    fn edges() {
        let at = Time::from_ticks;
        let c = Clock::new(250, 12);
        assert_eq!(c.edge_at_or_after(at(0)), at(0));
        assert_eq!(c.edge_at_or_after(at(1)), at(12));
        assert_eq!(c.edge_at_or_after(at(12)), at(12));
        assert_eq!(c.edge_after(at(12)), at(24));
        assert!(c.is_edge(at(24)) && !c.is_edge(at(25)));
        // The divisibility shortcut against plain division, for even, odd and power-of-two
        // periods, near zero and near the top of the range.
        for period in [1, 2, 3, 12, 15, 20, 24, 30, 64, 3000, 999_983] {
            let c = Clock::new(1, period);
            for t in (0..5000).chain(u64::MAX / 2 - 5000..u64::MAX / 2) {
                assert_eq!(
                    c.edge_at_or_after(at(t)),
                    at(t.div_ceil(period) * period),
                    "{period} {t}"
                );
            }
        }
    }
}
