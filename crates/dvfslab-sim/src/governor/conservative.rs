//! conservative: sample how busy the policy's CPUs were and move the frequency one fixed step
//! at a time: up above `up_threshold`, down below `down_threshold`.
//!
//! What it models: `cpufreq_conservative` of kernels ≥ 4.7 (`cs_dbs_update`) on the
//! sampling machinery of `dbs.rs`. The governor keeps its own `requested` frequency, which
//! the driver rounds down (up) to a table entry when it rises (falls):
//!
//! ```text
//!   step = freq_step · policy_max / 100             (5 kHz if that is 0)         (get_freq_step)
//!   requested outside [min, max]      → requested = cur (the limits changed)
//!   slept n sampling periods          → requested −= n · step, ≥ min   (base of this step only)
//!   load > up_threshold               → requested = min(requested + step, max), RELATION_H
//!   every sampling_down_factor-th other sample, load < down_threshold
//!                                     → requested = requested − step (min if ≤ step), RELATION_L
//! ```
//! With a table coarser than the step, a rise stalls on the current entry until the requested
//! frequency reaches the next one (the tests below show it).
//!
//! Differences from Linux: as for ondemand (sampling inside the scheduler callback;
//! `ignore_nice_load` accepted without effect; `sampling_rate` raised to the kernel's floor
//! rather than rejected; long idles detected from the idle time). `freq_step` above 100 is
//! rejected (Linux clamps it to 100).
//!
//! Checks: the thresholds are cross-checked before the run ([`GovernorInfo::check`], here
//! [`thresholds_uncrossed`]): a spec whose `up_threshold` is not above its `down_threshold` is
//! refused, as Linux's `up_threshold_store` and `down_threshold_store` refuse such a write.
//!
//! Tunables: `sampling_rate` (µs; default 0 = max(2 ticks, the cpufreq transition delay of
//! the kernel version and driver)), `up_threshold` (%, 80, 2..100), `down_threshold` (%, 20,
//! 1..99), `freq_step` (% of the policy maximum, 5, 0..100; 0 freezes the frequency),
//! `sampling_down_factor` (1, 1..10), `ignore_nice_load` (0/1, 0).
//!
//! References: drivers/cpufreq/cpufreq_conservative.c, cpufreq_governor.c;
//! Documentation/admin-guide/pm/cpufreq.rst; docs/governors.md.

use super::dbs::{Dbs, DbsGovernor};
use super::{Enables, Governor, GovernorInfo, PolicyCtx, Relation, UpdateFlags};
use crate::spec::{Knob, KnobValues};

pub const INFO: GovernorInfo = GovernorInfo {
    name: "conservative",
    description: "sampling: one freq_step up above up_threshold, one down below down_threshold",
    knobs: &[
        Knob::new("sampling_rate", "us", 0.0, 0.0, 4_294_967_295.0, "sampling period; 0 = the kernel's default")
            .integer(),
        Knob::new("up_threshold", "%", 80.0, 2.0, 100.0, "load above which to step up; must exceed down_threshold")
            .integer(),
        Knob::new("down_threshold", "%", 20.0, 1.0, 99.0, "load below which to step down").integer(),
        Knob::new("freq_step", "%", 5.0, 0.0, 100.0, "step as a share of the policy maximum; 0 = never change")
            .integer(),
        Knob::new("sampling_down_factor", "x", 1.0, 1.0, 10.0, "samples between two steps down").integer(),
        Knob::new("ignore_nice_load", "bool", 0.0, 0.0, 1.0, "niced time as idle (no effect: all tasks nice 0)")
            .integer(),
    ],
    driver: None,
    check: thresholds_uncrossed,
    check_platform: super::runs_anywhere,
    build: |k: &KnobValues| {
        Box::new(Conservative::new(
            k.get_u64("sampling_rate"),
            k.get_u64("up_threshold") as u32,
            k.get_u64("down_threshold") as u32,
            k.get_u64("freq_step") as u32,
            k.get_u64("sampling_down_factor") as u32,
        ))
    },
    enables: Enables::NOTHING,
};

/// `up_threshold` must stay above `down_threshold`, the rule `up_threshold_store` and
/// `down_threshold_store` enforce whichever of the two is written.
fn thresholds_uncrossed(k: &KnobValues) -> super::Checked {
    let (up, down) = (k.get("up_threshold"), k.get("down_threshold"));
    if up > down {
        return Ok(());
    }
    Err(("up_threshold", format!("must be above down_threshold, got up_threshold={up} and down_threshold={down}")))
}

/// The step when freq_step % of the maximum rounds to 0 kHz (DEF_FREQUENCY_STEP, used as kHz).
const FALLBACK_STEP_KHZ: u32 = 5;

struct Conservative {
    dbs: Dbs,
    up_threshold: u32,
    down_threshold: u32,
    freq_step_pct: u32,
    sampling_down_factor: u32,
    /// The frequency the governor last asked for, before the table (requested_freq).
    requested_khz: u32,
    /// Low-load samples since the last step down (down_skip).
    down_skip: u32,
}

/// The policy's frequencies as one evaluation sees them (kHz).
#[derive(Clone, Copy)]
struct Limits {
    cur: u32,
    min: u32,
    max: u32,
}

impl Conservative {
    fn new(
        sampling_rate_us: u64,
        up_threshold: u32,
        down_threshold: u32,
        freq_step_pct: u32,
        sampling_down_factor: u32,
    ) -> Conservative {
        Conservative {
            dbs: Dbs::new(sampling_rate_us, DbsGovernor::Conservative),
            up_threshold,
            down_threshold,
            freq_step_pct,
            sampling_down_factor,
            requested_khz: 0,
            down_skip: 0,
        }
    }

    /// One sample (cs_dbs_update): the load, then at most one step.
    fn sample(&mut self, ctx: &mut dyn PolicyCtx) {
        let load = self.dbs.update(ctx);
        let idle_periods = self.dbs.idle_periods.take();
        let limits = Limits { cur: ctx.cur_khz(), min: ctx.min_khz(), max: ctx.max_khz() };
        let before_khz = self.requested_khz;
        if let Some((khz, relation)) = self.evaluate(load, idle_periods, limits) {
            ctx.explain(&[
                ("load", load as f64),
                ("up_threshold", self.up_threshold as f64),
                ("down_threshold", self.down_threshold as f64),
                ("requested_khz", before_khz as f64),
                ("freq_step_khz", freq_step_khz(self.freq_step_pct, limits.max) as f64),
                ("idle_periods", idle_periods.unwrap_or(0) as f64),
                ("cur_khz", limits.cur as f64),
            ]);
            ctx.request_khz(khz, relation);
        }
    }

    /// The step for a load, given the whole sampling periods slept through (if more than
    /// two) and the policy's frequencies. Returns the request, if any.
    fn evaluate(&mut self, load: u32, idle_periods: Option<u64>, p: Limits) -> Option<(u32, Relation)> {
        if self.freq_step_pct == 0 {
            return None;
        }
        if self.requested_khz > p.max || self.requested_khz < p.min {
            self.requested_khz = p.cur;
        }
        let step = freq_step_khz(self.freq_step_pct, p.max);
        let mut req = self.requested_khz;
        if let Some(n) = idle_periods {
            // One step down for each period the CPUs slept through without a sample.
            let down = n.saturating_mul(step as u64);
            req = if req as u64 > p.min as u64 + down { req - down as u32 } else { p.min };
        }
        if load > self.up_threshold {
            // Busy: one step up (the driver rounds down, so a coarse table may not move yet).
            self.down_skip = 0;
            if req == p.max {
                return None;
            }
            req = req.saturating_add(step).min(p.max);
            self.requested_khz = req;
            return Some((req, Relation::H));
        }
        // Step down at most once every sampling_down_factor samples.
        self.down_skip += 1;
        if self.down_skip < self.sampling_down_factor {
            return None;
        }
        self.down_skip = 0;
        if load < self.down_threshold {
            if req == p.min {
                return None;
            }
            req = if req > step { req - step } else { p.min };
            self.requested_khz = req;
            return Some((req, Relation::L));
        }
        None
    }
}

/// One step (kHz): `freq_step` percent of the policy maximum, truncated, 5 kHz if that is 0.
fn freq_step_khz(freq_step_pct: u32, policy_max_khz: u32) -> u32 {
    match (freq_step_pct as u64 * policy_max_khz as u64 / 100) as u32 {
        0 => FALLBACK_STEP_KHZ,
        step => step,
    }
}

impl Governor for Conservative {
    fn start(&mut self, ctx: &mut dyn PolicyCtx) {
        if self.dbs.start(ctx) {
            self.down_skip = 0;
        }
        // Start, and any change of the limits, restart from the current frequency.
        self.requested_khz = ctx.cur_khz();
    }

    fn wants_util_updates(&self) -> bool {
        true
    }

    fn util_update(&mut self, ctx: &mut dyn PolicyCtx, _cpu: usize, flags: UpdateFlags) {
        if !self.dbs.sample_due(ctx, flags) {
            return;
        }
        self.sample(ctx);
        let delay_us = self.dbs.sampling_rate_us;
        self.dbs.set_sample_delay_us(delay_us);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governor::freq_table::table_lookup;

    /// An OPP table of 0.8–3.0 GHz.
    const TABLE: &[u32] = &[800_000, 1_200_000, 1_600_000, 2_000_000, 2_400_000, 2_800_000, 3_000_000];

    fn cs(sampling_down_factor: u32, requested_khz: u32) -> Conservative {
        let mut g = Conservative::new(10_000, 80, 20, 5, sampling_down_factor);
        g.requested_khz = requested_khz;
        g
    }

    /// Limits of a 0.8–3.0 GHz policy with the current frequency `cur`.
    fn at(cur: u32) -> Limits {
        Limits { cur, min: 800_000, max: 3_000_000 }
    }

    #[test]
    fn steps_are_five_percent_of_the_maximum() {
        // get_freq_step: 5 % of 3.0 GHz.
        assert_eq!(freq_step_khz(5, 3_000_000), 150_000);
        assert_eq!(freq_step_khz(5, 3_900_000), 195_000);
        assert_eq!(freq_step_khz(1, 50), FALLBACK_STEP_KHZ);
    }

    #[test]
    fn rising_steps_stall_on_a_coarse_table() {
        // Worked example: from 1.2 GHz, loads above 80 request 1.35, 1.5, 1.65 GHz; RELATION_H
        // keeps 1.2 GHz until the request reaches 1.6 GHz.
        let mut g = cs(1, 1_200_000);
        let mut cur = 1_200_000;
        let mut seen = Vec::new();
        for _ in 0..3 {
            let (khz, relation) = g.evaluate(90, None, at(cur)).expect("a step up");
            assert_eq!(relation, Relation::H);
            cur = table_lookup(TABLE, khz, relation);
            seen.push((khz, cur));
        }
        assert_eq!(seen, [(1_350_000, 1_200_000), (1_500_000, 1_200_000), (1_650_000, 1_600_000)]);
        // Nine more steps reach the maximum, and then there is nothing left to ask.
        for _ in 0..9 {
            let (khz, relation) = g.evaluate(100, None, at(cur)).expect("a step up");
            cur = table_lookup(TABLE, khz, relation);
        }
        assert_eq!((g.requested_khz, cur), (3_000_000, 3_000_000));
        assert_eq!(g.evaluate(100, None, at(cur)), None);
    }

    #[test]
    fn steps_down_below_down_threshold_only() {
        let mut g = cs(1, 3_000_000);
        // Between the thresholds: stay.
        assert_eq!(g.evaluate(50, None, at(3_000_000)), None);
        assert_eq!(g.evaluate(20, None, at(3_000_000)), None);
        // Below: one step down, rounded up by the driver (RELATION_L), so 2.85 GHz stays 3.0.
        assert_eq!(g.evaluate(19, None, at(3_000_000)), Some((2_850_000, Relation::L)));
        assert_eq!(table_lookup(TABLE, 2_850_000, Relation::L), 3_000_000);
        assert_eq!(g.evaluate(0, None, at(3_000_000)), Some((2_700_000, Relation::L)));
        // At the minimum nothing more is asked.
        let mut g = cs(1, 800_000);
        assert_eq!(g.evaluate(0, None, at(800_000)), None);
        // A step may ask for less than the minimum: the core clamps it, and the next sample
        // restarts from the current frequency.
        let mut g = cs(1, 900_000);
        assert_eq!(g.evaluate(0, None, at(1_200_000)), Some((750_000, Relation::L)));
    }

    #[test]
    fn sampling_down_factor_spaces_the_steps_down() {
        let mut g = cs(3, 2_400_000);
        let asks: Vec<_> = (0..6).map(|_| g.evaluate(5, None, at(2_400_000))).collect();
        let down = |khz| Some((khz, Relation::L));
        assert_eq!(asks, [None, None, down(2_250_000), None, None, down(2_100_000)]);
        // A busy sample restarts the count.
        assert_eq!(g.evaluate(5, None, at(2_400_000)), None);
        assert!(g.evaluate(90, None, at(2_400_000)).is_some());
        assert_eq!(g.evaluate(5, None, at(2_400_000)), None);
        assert_eq!(g.evaluate(5, None, at(2_400_000)), None);
        assert!(g.evaluate(5, None, at(2_400_000)).is_some());
    }

    #[test]
    fn slept_periods_lower_the_base_of_the_next_step() {
        // Four periods asleep from 2.4 GHz: the base is 1.8 GHz; a busy sample steps from it.
        let mut g = cs(1, 2_400_000);
        assert_eq!(g.evaluate(90, Some(4), at(2_400_000)), Some((1_950_000, Relation::H)));
        // Sleeping long enough floors the base at the minimum.
        let mut g = cs(1, 2_400_000);
        assert_eq!(g.evaluate(90, Some(100), at(2_400_000)), Some((950_000, Relation::H)));
        // Without a request the lowered base is not kept.
        let mut g = cs(1, 2_400_000);
        assert_eq!(g.evaluate(50, Some(4), at(2_400_000)), None);
        assert_eq!(g.requested_khz, 2_400_000);
    }

    #[test]
    fn freq_step_zero_freezes_and_stale_requests_restart_from_cur() {
        let mut g = Conservative::new(10_000, 80, 20, 0, 1);
        g.requested_khz = 1_200_000;
        assert_eq!(g.evaluate(100, None, at(1_200_000)), None);
        // A request outside the limits (they changed) restarts from the current frequency.
        let mut g = cs(1, 3_500_000);
        assert_eq!(g.evaluate(90, None, at(2_000_000)), Some((2_150_000, Relation::H)));
    }
}
