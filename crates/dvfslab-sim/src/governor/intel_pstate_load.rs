//! intel_pstate's load-based P-state selection (`get_target_pstate`), with its I/O-wait boost.
//!
//! Part of the `intel_pstate` governor (`algorithm=0`, the default); its doc header,
//! tunables and differences from Linux are in intel_pstate.rs. This is the only algorithm of
//! non-HWP active mode in current kernels (Atom parts since 4.6, all parts later): the target
//! grows with the C0 residency of the last sample, with 25 % headroom over the top ratio, and
//! does not fall far below what the core actually delivered.

use super::intel_pstate::{int_tofp, mul_fp, Pstates, Sample, FRAC_BITS};
use crate::kernel::KernelVersion;

/// 1/8 in 8-bit fixed point: the first step of the I/O-wait boost.
const ONE_EIGHTH_FP: i64 = 1 << (FRAC_BITS - 3);

/// What `get_target_pstate` computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LoadTarget {
    pub busy_frac: i64,
    pub avg_pstate: i64,
    pub target: i64,
}

/// The load-based choice, before the limits.
///
/// ```text
///   busy_frac = max(Δmperf / Δtsc, iowait_boost)                   C0 residency, 8-bit fp
///   target    = ⌊1.25 · P_top · busy_frac⌋, at least min_pstate      P_top = turbo (max if no_turbo)
///   avg       = ⌊max_pstate_physical · Δaperf / Δmperf⌋              the ratio delivered in C0
///   target   += ⌊(avg − target) / 2⌋   if avg > target               keep half the difference
/// ```
/// Mirrors `get_target_pstate` (5.x).
pub(super) fn get_target_pstate(p: &Pstates, no_turbo: bool, s: &Sample, iowait_boost: i64) -> LoadTarget {
    let busy_frac = s.busy_frac().max(iowait_boost);
    let top = if no_turbo { p.max } else { p.turbo };
    // 25 % headroom over the top ratio, then proportional to the busy fraction.
    let mut target = mul_fp(top + (top >> 2), busy_frac).max(p.min);
    let avg_pstate = s.avg_pstate(p);
    if avg_pstate > target {
        // Keep half of what the CPU actually ran above the target (anti-oscillation).
        target += (avg_pstate - target) >> 1;
    }
    LoadTarget { busy_frac, avg_pstate, target }
}

/// How I/O waits boost the load-based algorithm, by kernel version (intel_pstate_update_util).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum IowaitRule {
    /// 4.12 – 5.0: an I/O-wait callback sets the boost to 1.0; each evaluation uses it and
    /// halves it (get_target_pstate); a callback more than a tick after the previous one
    /// clears it. From 4.14 the I/O-wait callback also samples at once, whatever the sampling
    /// interval, unless the last sample found the CPU 100 % busy.
    Full { sample_at_once: bool },
    /// 5.1+: start at 1/8, double per I/O-wait callback up to 1.0, halve per callback
    /// without one, clear after more than a tick ("cpufreq: intel_pstate: Rework iowait
    /// boosting to be less aggressive").
    #[default]
    Doubling,
}

impl IowaitRule {
    pub fn for_kernel(kernel: KernelVersion) -> IowaitRule {
        if kernel >= KernelVersion(5, 1, 0) {
            IowaitRule::Doubling
        } else {
            IowaitRule::Full { sample_at_once: kernel >= KernelVersion(4, 14, 0) }
        }
    }
}

/// What a callback does about sampling after the boost rule ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Then {
    /// Sample if the interval has passed.
    Interval,
    /// Sample now, whatever the interval (4.14 – 5.0, an I/O wait).
    Now,
    /// Nothing more (4.14 – 5.0, an I/O wait on a CPU last seen fully busy).
    Nothing,
}

/// The I/O-wait boost of the load-based algorithm, in 8-bit fixed point (0 … 1.0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct IowaitBoost {
    pub boost: i64,
    last_update_ns: u64,
    pub rule: IowaitRule,
}

impl IowaitBoost {
    /// One scheduler callback at `now_ns`. Mirrors the boost part of `intel_pstate_update_util`.
    /// Returns what the callback does next, the last sample having found the CPU
    /// `last_busy_pct` busy.
    pub fn update(&mut self, now_ns: u64, tick_ns: u64, iowait: bool, last_busy_pct: i64) -> Then {
        let idle_since_last = now_ns.saturating_sub(self.last_update_ns) > tick_ns;
        self.last_update_ns = now_ns;
        match self.rule {
            IowaitRule::Full { sample_at_once } => {
                if iowait {
                    self.boost = int_tofp(1);
                    if sample_at_once {
                        return if last_busy_pct == 100 { Then::Nothing } else { Then::Now };
                    }
                    return Then::Interval;
                }
                if self.boost != 0 && idle_since_last {
                    self.boost = 0;
                }
            }
            IowaitRule::Doubling => {
                if iowait {
                    self.boost = if idle_since_last || self.boost < ONE_EIGHTH_FP {
                        // Start over: the CPU may have idled, or there was no boost.
                        ONE_EIGHTH_FP
                    } else {
                        // Consecutive I/O waits: double the boost, up to 1.0.
                        (self.boost * 2).min(int_tofp(1))
                    };
                } else if self.boost != 0 {
                    // No I/O wait: clear after a possible idle period, else halve.
                    self.boost = if idle_since_last { 0 } else { self.boost >> 1 };
                }
            }
        }
        Then::Interval
    }

    /// The boost an evaluation uses; up to 5.0 using it halves it.
    pub fn take(&mut self) -> i64 {
        let boost = self.boost;
        if let IowaitRule::Full { .. } = self.rule {
            self.boost >>= 1;
        }
        boost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(aperf: u64, mperf: u64, tsc: u64) -> Sample {
        Sample { aperf, mperf, tsc, duration_ns: 10_000_000 }
    }

    #[test]
    fn load_based_spec_example() {
        // get_target_pstate: turbo 36, busy 0.5, Δa/Δm 1.2, max_physical 24 → 22, then +3 → 25.
        let p = Pstates { min: 8, max: 24, max_physical: 24, turbo: 36 };
        let t = get_target_pstate(&p, false, &sample(60, 50, 100), 0);
        assert_eq!(t, LoadTarget { busy_frac: 128, avg_pstate: 28, target: 25 });
        // Fully busy at base: 1.25 · 36 = 45, above any limit.
        assert_eq!(get_target_pstate(&p, false, &sample(100, 100, 100), 0).target, 45);
        // no_turbo takes the base ratio: 24 + 6 = 30.
        assert_eq!(get_target_pstate(&p, true, &sample(100, 100, 100), 0).target, 30);
        // Nearly idle at the lowest ratio: the minimum.
        assert_eq!(get_target_pstate(&p, false, &sample(8, 24, 10_000), 0).target, 8);
        // Nearly idle, but the short bursts ran at base: half way from 8 to 24.
        assert_eq!(get_target_pstate(&p, false, &sample(24, 24, 10_000), 0).target, 16);
    }

    #[test]
    fn iowait_boost_raises_the_busy_fraction() {
        let p = Pstates { min: 8, max: 24, max_physical: 24, turbo: 36 };
        let quiet = sample(8, 10, 1000); // busy 1 %, Δa/Δm 0.8 → avg 19
        let t = get_target_pstate(&p, false, &quiet, int_tofp(1) / 2);
        assert_eq!(t.busy_frac, 128);
        assert_eq!(t.target, 22);
    }

    #[test]
    fn iowait_boost_doubles_decays_and_restarts() {
        let tick = 4_000_000;
        let mut b = IowaitBoost::default();
        let mut seen = Vec::new();
        for (t, io) in [(1, true), (2, true), (3, true), (4, true), (5, true), (6, false), (7, false)] {
            b.update(t * 1_000_000, tick, io, 0);
            seen.push(b.boost);
        }
        assert_eq!(seen, [32, 64, 128, 256, 256, 128, 64]);
        // More than a tick without a callback: an I/O wait starts over, anything else clears.
        b.update(20_000_000, tick, true, 0);
        assert_eq!(b.boost, 32);
        b.update(21_000_000, tick, true, 0);
        b.update(30_000_000, tick, false, 0);
        assert_eq!(b.boost, 0);
    }

    /// Up to 5.0 an I/O wait boosts to 1.0 at once and each evaluation halves it; from 4.14 the
    /// I/O-wait callback evaluates at once unless the CPU was found fully busy.
    #[test]
    fn iowait_boost_is_full_and_halved_per_evaluation_before_5_1() {
        let tick = 4_000_000;
        let mut b = IowaitBoost { rule: IowaitRule::for_kernel(KernelVersion(4, 19, 0)), ..IowaitBoost::default() };
        assert_eq!(b.update(1_000_000, tick, true, 40), Then::Now);
        assert_eq!(b.boost, 256);
        assert_eq!((b.take(), b.take(), b.take()), (256, 128, 64));
        // Callbacks without I/O wait leave it alone within a tick, clear it after one.
        assert_eq!(b.update(2_000_000, tick, false, 40), Then::Interval);
        assert_eq!(b.boost, 32);
        b.update(7_000_000, tick, false, 40);
        assert_eq!(b.boost, 0);
        // A fully busy CPU is not sampled again on its I/O wait; 4.13 never samples early.
        assert_eq!(b.update(8_000_000, tick, true, 100), Then::Nothing);
        let mut old = IowaitBoost { rule: IowaitRule::for_kernel(KernelVersion(4, 13, 0)), ..IowaitBoost::default() };
        assert_eq!(old.update(1_000_000, tick, true, 40), Then::Interval);
        assert_eq!(old.boost, 256);
        assert_eq!(IowaitRule::for_kernel(KernelVersion(5, 1, 0)), IowaitRule::Doubling);
    }
}
