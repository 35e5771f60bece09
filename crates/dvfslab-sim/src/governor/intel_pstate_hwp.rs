//! intel_pstate with HWP: the driver writes limits and EPP, the hardware picks P-states.
//!
//! Part of the `intel_pstate` governor (`algorithm=2`); its doc header is in intel_pstate.rs.
//! In active HWP mode Linux writes IA32_HWP_REQUEST once (min and max from the limits,
//! desired = 0 for autonomous selection, EPP) and the kernel algorithm does nothing more,
//! apart from the optional dynamic boost. How the hardware then chooses is not published, so
//! this file is a model, and these are its assumptions:
//!
//! - The hardware re-evaluates every `activity_window_us` (the HWP_REQUEST field that Linux
//!   leaves at 0, "hardware's choice") from the core's own APERF, MPERF and TSC over the
//!   window. A window in which the core never left idle changes nothing. The window is
//!   calibrated, not published: 10 ms makes the Skylake desktop take 30 ms from idle to its
//!   top frequency after a step to full load, the ramp AnandTech measured for Skylake's Speed
//!   Shift ("around 30" ms, against 10–15 ms for Kaby Lake's; Cutress, "Intel launches 7th
//!   generation Kaby Lake", January 2017). A 1 ms window ramps in 3 ms.
//! - It keeps the core's C0 residency at a target that grows with EPP, like a load-based
//!   governor with EPP-dependent headroom. EPP 0 means "as fast as allowed whenever active".
//!
//! ```text
//!   busy      = Δmperf / Δtsc                                 C0 residency over the window
//!   delivered = max_pstate_physical · Δaperf / Δmperf         the ratio the core ran in C0
//!   u_target  = 0.9 · EPP / 255                               0 (performance) … 0.9 (power)
//!   desired   = max                     if u_target = 0
//!             = ⌈busy · delivered / u_target⌉   otherwise     enough for busy = u_target
//!   P-state   = clamp(desired, HWP min, HWP max)
//! ```
//! So balance_performance (128) aims at 45 % busy, balance_power (192) at 68 %, power (255) at
//! 90 %. The hardware's own energy-efficiency heuristics (most-efficient P-state, memory
//! boundness, package-level coordination) are not modelled; the turbo bin for the active
//! cores caps the result as for any request.
//! - Linux's HWP `performance` policy only sets EPP to 0, i.e. `energy_performance_preference=0`
//!   here (4.10–4.12 also pinned min = max, which is `algorithm=3`). No EPB fallback for parts
//!   without EPP.
//! - `hwp_dynamic_boost` (Linux 4.19+): an I/O-wait wake-up seen twice within two ticks raises
//!   the HWP minimum one level, `(min + guaranteed)/2` → guaranteed → max; the boost is dropped
//!   at a callback without I/O wait that comes more than `HWP_BOOST_HOLD_TIME_NS` after the
//!   previous callback or raise (`intel_pstate_hwp_boost_up/down`: every such callback moves
//!   `last_update`), so a CPU that keeps getting callbacks keeps its boost until it idles.

use super::intel_pstate::{Pstates, Range, Sample};

/// C0 residency the modelled hardware aims at with EPP 255.
const UTIL_TARGET_AT_EPP_MAX: f64 = 0.9;
/// How long a dynamic boost lasts without a new trigger (`hwp_boost_hold_time_ns`).
pub(super) const HWP_BOOST_HOLD_TIME_NS: u64 = 3_000_000;

/// The modelled hardware's choice for one window, with its inputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct HwpChoice {
    pub busy: f64,
    pub delivered: f64,
    pub demand: f64,
    pub util_target: f64,
    pub desired: i64,
}

pub(super) fn hwp_autonomous(p: &Pstates, s: &Sample, epp: u8, range: Range) -> HwpChoice {
    let busy = s.mperf as f64 / s.tsc.max(1) as f64;
    let delivered = p.max_physical as f64 * s.aperf as f64 / s.mperf.max(1) as f64;
    let demand = busy * delivered;
    let util_target = UTIL_TARGET_AT_EPP_MAX * epp as f64 / 255.0;
    let desired = if util_target == 0.0 {
        // EPP 0: the highest allowed P-state while active.
        range.hi
    } else {
        // Enough performance that the current demand keeps the core util_target busy.
        range.clamp((demand / util_target).ceil() as i64)
    };
    HwpChoice { busy, delivered, demand, util_target, desired }
}

/// State of `hwp_dynamic_boost` for one CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct DynamicBoost {
    /// The raised HWP minimum, 0 when not boosting.
    pub boost_min: i64,
    last_io_ns: Option<u64>,
    /// `cpu->last_update`: the last raise or the last callback without I/O wait.
    last_update_ns: u64,
    /// An I/O-wait flag from a callback run on another CPU, kept for the next local one
    /// (`cpu->sched_flags`).
    pending_iowait: bool,
}

impl DynamicBoost {
    /// One scheduler callback of the CPU. `limits` are the HWP min and max without boost.
    /// Returns whether the boosted minimum changed.
    pub fn update(&mut self, now_ns: u64, tick_ns: u64, iowait: bool, limits: Range, guaranteed: i64) -> bool {
        let iowait = iowait || std::mem::take(&mut self.pending_iowait);
        if iowait {
            // One I/O wait says little; two within two ticks make a boost candidate.
            let repeated = self.last_io_ns.is_some_and(|t| now_ns < t + 2 * tick_ns);
            self.last_io_ns = Some(now_ns);
            repeated && self.boost_up(now_ns, limits, guaranteed)
        } else {
            // intel_pstate_hwp_boost_down: the hold time counts from the previous callback
            // (or raise), and every callback without I/O wait restarts it.
            let expired = self.boost_min != 0 && now_ns > self.last_update_ns + HWP_BOOST_HOLD_TIME_NS;
            self.last_update_ns = now_ns;
            if expired {
                self.boost_min = 0;
            }
            expired
        }
    }

    /// A callback for this CPU that ran on another one: intel_pstate_update_util_hwp acts only
    /// on its own CPU but first adds the flags to `cpu->sched_flags`, so an I/O-wait flag
    /// counts at the CPU's next own callback.
    pub fn remote(&mut self, iowait: bool) {
        self.pending_iowait |= iowait;
    }

    /// Raise the minimum one level: half way to guaranteed, guaranteed, then the maximum.
    fn boost_up(&mut self, now_ns: u64, limits: Range, guaranteed: i64) -> bool {
        let (min, max) = (limits.lo, limits.hi);
        if min == max || self.boost_min >= max {
            return false;
        }
        let current = if self.boost_min == 0 { min } else { self.boost_min };
        let half_way = (min + guaranteed) >> 1;
        let next = if current < half_way {
            half_way
        } else if current < guaranteed {
            guaranteed
        } else if current == guaranteed && max != guaranteed {
            max
        } else {
            return false;
        };
        self.boost_min = next;
        self.last_update_ns = now_ns;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HSW: Pstates = Pstates { min: 12, max: 23, max_physical: 23, turbo: 31 };
    const FULL: Range = Range { lo: 12, hi: 31 };

    fn window(aperf: u64, mperf: u64, tsc: u64) -> Sample {
        Sample { aperf, mperf, tsc, duration_ns: 1_000_000 }
    }

    #[test]
    fn epp_sets_the_headroom() {
        let busy_at_20 = window(20_000, 23_000, 23_000); // fully busy, delivering ratio 20
        assert_eq!(hwp_autonomous(&HSW, &busy_at_20, 0, FULL).desired, 31);
        let c = hwp_autonomous(&HSW, &busy_at_20, 255, FULL);
        assert!((c.delivered - 20.0).abs() < 1e-9 && (c.util_target - 0.9).abs() < 1e-12);
        assert_eq!(c.desired, 23); // ⌈20 / 0.9⌉ = ⌈22.2⌉
        let half_at_20 = window(10_000, 11_500, 23_000);
        assert_eq!(hwp_autonomous(&HSW, &half_at_20, 128, FULL).desired, 23); // ⌈10 / 0.4518⌉
        assert_eq!(hwp_autonomous(&HSW, &half_at_20, 255, FULL).desired, 12); // ⌈11.1⌉ → min

        // EPP 0 still obeys the limits.
        assert_eq!(hwp_autonomous(&HSW, &half_at_20, 0, Range { lo: 12, hi: 20 }).desired, 20);
    }

    #[test]
    fn dynamic_boost_steps_up_and_expires() {
        let tick = 4_000_000;
        let mut b = DynamicBoost::default();
        let ms = |t: u64| t * 1_000_000;
        assert!(!b.update(ms(0), tick, true, FULL, 23)); // a single I/O wait: nothing
        let mut levels = Vec::new();
        for t in 1..=4 {
            b.update(ms(t), tick, true, FULL, 23);
            levels.push(b.boost_min);
        }
        assert_eq!(levels, [17, 23, 31, 31]);
        // The last raise was at 3 ms; a callback more than 3 ms later drops the boost.
        assert!(!b.update(ms(6), tick, false, FULL, 23)); // within 3 ms of the last raise
        assert!(b.update(ms(10), tick, false, FULL, 23)); // 4 ms after the previous callback
        assert_eq!(b.boost_min, 0);
        // I/O waits more than two ticks apart never boost.
        let mut b = DynamicBoost::default();
        assert!(!b.update(ms(0), tick, true, FULL, 23));
        assert!(!b.update(ms(9), tick, true, FULL, 23));
        // Without turbo (max = guaranteed) there are two levels only.
        let mut b = DynamicBoost::default();
        let no_turbo = Range { lo: 12, hi: 23 };
        for t in 0..5 {
            b.update(ms(t), tick, true, no_turbo, 23);
        }
        assert_eq!(b.boost_min, 23);
    }

    /// An I/O wait seen by a remote callback counts at the CPU's next own callback
    /// (`cpu->sched_flags |= flags` in intel_pstate_update_util_hwp, 4.18+).
    #[test]
    fn dynamic_boost_keeps_remote_io_waits_for_the_next_local_callback() {
        let tick = 4_000_000;
        let ms = |t: u64| t * 1_000_000;
        let mut b = DynamicBoost::default();
        b.remote(true);
        assert!(!b.update(ms(0), tick, false, FULL, 23)); // first I/O wait: a candidate only
        b.remote(true);
        assert!(b.update(ms(1), tick, false, FULL, 23)); // second within two ticks: boost
        assert_eq!(b.boost_min, 17);
        // The flag is used once.
        assert!(!b.update(ms(2), tick, false, FULL, 23));
        assert_eq!(b.boost_min, 17);
    }

    /// The hold time counts from the last callback, not from the last raise
    /// (`intel_pstate_hwp_boost_down` sets `cpu->last_update = cpu->sample.time` on every
    /// callback without I/O wait, 4.18+): callbacks 1 ms apart keep the boost for good.
    #[test]
    fn dynamic_boost_holds_while_callbacks_keep_coming() {
        let tick = 4_000_000;
        let ms = |t: u64| t * 1_000_000;
        let mut b = DynamicBoost::default();
        b.update(ms(0), tick, true, FULL, 23);
        assert!(b.update(ms(1), tick, true, FULL, 23));
        assert_eq!(b.boost_min, 17);
        for t in 2..=20 {
            assert!(!b.update(ms(t), tick, false, FULL, 23), "dropped at {t} ms");
        }
        assert_eq!(b.boost_min, 17);
        // Idle for longer than the hold time: the next callback drops it.
        assert!(b.update(ms(24), tick, false, FULL, 23));
        assert_eq!(b.boost_min, 0);
    }
}
