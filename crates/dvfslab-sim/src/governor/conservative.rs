//! conservative: sample how busy the policy's CPUs were and move the frequency one fixed step
//! at a time: up above `up_threshold`, down below `down_threshold`.
//!
//! What it models: `cpufreq_conservative` of kernels ≥ 4.7 (`cs_dbs_update`) on the
//! sampling machinery of `dbs.rs`. The governor keeps its own `requested` frequency, which
//! the driver rounds down (up) to a table entry when it rises (falls). Mainline's rules, 4.7 to
//! 6.18 (`kernel=X.Y`):
//!
//! ```text
//!   step = freq_step · policy_max / 100             (5 kHz if that is 0)         (get_freq_step)
//!   requested outside [min, max]      → requested = cur (the limits changed)
//!   slept n sampling periods          → requested −= n · step, ≥ min   (base of this step only)
//!   load > up_threshold               → nothing if requested = max, else
//!                                       requested = min(requested + step, max), RELATION_H
//!   every sampling_down_factor-th other sample, load < down_threshold
//!                                     → nothing if requested = min, else
//!                                       requested − step (min if ≤ step), RELATION_L
//! ```
//! With a table coarser than the step, a rise stalls on the current entry until the requested
//! frequency reaches the next one (the tests below show it).
//!
//! Three later rules, all merged after 6.18, reached stable series; `kernel=X.Y.Z` takes each
//! from the first update of its series that took it (the constants below name the updates and
//! where they were read):
//!
//! ```text
//!   a limits change restarts requested from cur        (cs_limits)     6.1.168+ 6.6.131+ 6.12.80+ 6.18.21+
//!   no stop at max or min: the request is made again,  (cs_dbs_update) 6.1.178+ 6.12.97+
//!     and the core drops it; a step down ends at min
//!     once requested ≤ min + step
//!   slept periods lower the base only when the         (cs_dbs_update, 6.12.117+
//!     busiest CPU's measured load of the window          dbs_update)
//!     (max_sample_load, not a load carried over a
//!     long idle) is below down_threshold
//! ```
//! The simulated limits do not change during a run, so the first shows only where a
//! governor's limits are updated after its start (the tests below).
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
//! Documentation/admin-guide/pm/cpufreq.rst; docs/governors.md, docs/kernel-versions.md.

use super::dbs::{Dbs, DbsGovernor};
use super::{Enables, Governor, GovernorInfo, PolicyCtx, Relation, UpdateFlags};
use crate::kernel::KernelVersion;
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

/// The first stable update of each series whose conservative restarts its request from the
/// current frequency when the policy's limits change ("cpufreq: conservative: Reset
/// requested_freq on limits change", 6a28fb8cb28b, mainline after 6.18: `cs_limits`, called through
/// the `limits` hook it added to `cpufreq_dbs_governor_limits`). 6.1.168 and 6.12.80 as
/// Debian's changelogs of its 6.1 and 6.12 kernels name them; 6.6.131 and 6.18.21 from their
/// stable review postings. 5.10's and 5.15's updates are not settled: they keep the earlier
/// rule here. Debian's 6.1.192 and 6.12.118 sources have it.
const RESET_ON_LIMITS_FIRST_STABLE: [KernelVersion; 4] =
    [KernelVersion(6, 1, 168), KernelVersion(6, 6, 131), KernelVersion(6, 12, 80), KernelVersion(6, 18, 21)];

/// The first stable update of each series whose `cs_dbs_update` has no early stop at the
/// policy's ends and ends a step down at the minimum once within one step of it ("cpufreq:
/// conservative: Simplify frequency limit handling", mainline after 6.18): 6.1.178 and
/// 6.12.97 (Debian's changelogs). The 6.18 series' update is not found: its updates keep the
/// early stops here. Debian's 6.1.192 and 6.12.118 sources have it.
const NO_EARLY_STOP_FIRST_STABLE: [KernelVersion; 2] = [KernelVersion(6, 1, 178), KernelVersion(6, 12, 97)];

/// The first stable update of each series whose `cs_dbs_update` takes the steps lost to a long
/// idle only when the policy's measured load is low ("cpufreq: conservative: Restrict
/// deferred downscaling to low load", mainline after 6.18): 6.12.117 (Debian's changelog).
/// The 6.1 series had not taken it by 6.1.192 (neither Debian's changelog nor its source has
/// it); the 6.18 series' update is not found.
const DEFERRED_DOWN_AT_LOW_LOAD_FIRST_STABLE: [KernelVersion; 1] = [KernelVersion(6, 12, 117)];

/// Which of the rules newer than mainline 6.18 the simulated kernel has (see the module
/// header); none at `kernel=X.Y`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Rules {
    /// `cs_limits`: a limits change restarts `requested` from the current frequency.
    reset_on_limits: bool,
    /// No early stop at the maximum or the minimum; a step down ends at the minimum once
    /// `requested` is within one step of it (rather than within one step of 0).
    no_early_stop: bool,
    /// The steps lost to a long idle are taken only when `max_sample_load` is below
    /// `down_threshold`.
    deferred_down_at_low_load: bool,
}

impl Rules {
    fn for_kernel(kernel: KernelVersion) -> Rules {
        Rules {
            reset_on_limits: kernel.has_backport(&RESET_ON_LIMITS_FIRST_STABLE),
            no_early_stop: kernel.has_backport(&NO_EARLY_STOP_FIRST_STABLE),
            deferred_down_at_low_load: kernel.has_backport(&DEFERRED_DOWN_AT_LOW_LOAD_FIRST_STABLE),
        }
    }
}

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
    /// The simulated kernel's later rules (set at start; mainline's until then).
    rules: Rules,
}

/// What one sample measured of the policy (dbs_update).
#[derive(Clone, Copy, Debug)]
struct Sample {
    /// The load the step follows: the busiest CPU's, where a CPU just out of a long idle
    /// counts its load from before the idle.
    load: u32,
    /// The busiest CPU's load over this window alone (max_sample_load).
    measured: u32,
    /// Whole sampling periods slept through, if more than two (idle_periods).
    idle_periods: Option<u64>,
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
            rules: Rules::default(),
        }
    }

    /// One sample (cs_dbs_update): the load, then at most one step.
    fn sample(&mut self, ctx: &mut dyn PolicyCtx) {
        let load = self.dbs.update(ctx);
        let idle_periods = self.dbs.idle_periods.take();
        let sample = Sample { load, measured: self.dbs.max_sample_load, idle_periods };
        let limits = Limits { cur: ctx.cur_khz(), min: ctx.min_khz(), max: ctx.max_khz() };
        let before_khz = self.requested_khz;
        if let Some((khz, relation)) = self.evaluate(sample, limits) {
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

    /// The step for a sample, given the policy's frequencies. Returns the request, if any.
    fn evaluate(&mut self, s: Sample, p: Limits) -> Option<(u32, Relation)> {
        if self.freq_step_pct == 0 {
            return None;
        }
        if self.requested_khz > p.max || self.requested_khz < p.min {
            self.requested_khz = p.cur;
        }
        let step = freq_step_khz(self.freq_step_pct, p.max);
        let mut req = self.requested_khz;
        // The later rule takes the lost steps only when no CPU measured a load at or above
        // down_threshold: a busy CPU beside a long-idle one would otherwise have the idle
        // one's periods pull the policy down.
        let low_load = !self.rules.deferred_down_at_low_load || s.measured < self.down_threshold;
        if let Some(n) = s.idle_periods.filter(|_| low_load) {
            // One step down for each period the CPUs slept through without a sample.
            let down = n.saturating_mul(step as u64);
            req = if req as u64 > p.min as u64 + down { req - down as u32 } else { p.min };
        }
        if s.load > self.up_threshold {
            // Busy: one step up (the driver rounds down, so a coarse table may not move yet).
            // Mainline stops early at the maximum; the later rule asks again, and the core
            // drops a request for the current frequency.
            self.down_skip = 0;
            if req == p.max && !self.rules.no_early_stop {
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
        if s.load < self.down_threshold {
            if req == p.min && !self.rules.no_early_stop {
                return None;
            }
            // Mainline compares with one step above 0, so it may ask for less than the
            // minimum (the core clamps it); the later rule ends at the minimum.
            let floor = if self.rules.no_early_stop { p.min as u64 } else { 0 };
            req = if req as u64 > floor + step as u64 { req - step } else { p.min };
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
    /// Start (cs_start, before the DBS core brings the frequency inside the limits), and every
    /// limits update after it (cpufreq_dbs_governor_limits, then the governor's own hook).
    fn start(&mut self, ctx: &mut dyn PolicyCtx) {
        let cur_khz = ctx.cur_khz();
        if self.dbs.start(ctx) {
            self.rules = Rules::for_kernel(ctx.kernel());
            self.down_skip = 0;
            self.requested_khz = cur_khz;
        }
        // cs_limits, once the frequency is inside the new limits: restart from it. Without it
        // the request stands, and cs_dbs_update replaces it only if it is outside the limits.
        if self.rules.reset_on_limits {
            self.requested_khz = ctx.cur_khz();
        }
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

    /// A sample whose load was measured over its window, with no long idle in it.
    fn load(load: u32) -> Sample {
        Sample { load, measured: load, idle_periods: None }
    }

    /// A sample after `n` sampling periods asleep: the load it steps on (carried over the
    /// idle by a CPU that was busy before it) and the load measured over the window.
    fn slept(n: u64, load: u32, measured: u32) -> Sample {
        Sample { load, measured, idle_periods: Some(n) }
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
            let (khz, relation) = g.evaluate(load(90), at(cur)).expect("a step up");
            assert_eq!(relation, Relation::H);
            cur = table_lookup(TABLE, khz, relation);
            seen.push((khz, cur));
        }
        assert_eq!(seen, [(1_350_000, 1_200_000), (1_500_000, 1_200_000), (1_650_000, 1_600_000)]);
        // Nine more steps reach the maximum, and then there is nothing left to ask.
        for _ in 0..9 {
            let (khz, relation) = g.evaluate(load(100), at(cur)).expect("a step up");
            cur = table_lookup(TABLE, khz, relation);
        }
        assert_eq!((g.requested_khz, cur), (3_000_000, 3_000_000));
        assert_eq!(g.evaluate(load(100), at(cur)), None);
    }

    #[test]
    fn steps_down_below_down_threshold_only() {
        let mut g = cs(1, 3_000_000);
        // Between the thresholds: stay.
        assert_eq!(g.evaluate(load(50), at(3_000_000)), None);
        assert_eq!(g.evaluate(load(20), at(3_000_000)), None);
        // Below: one step down, rounded up by the driver (RELATION_L), so 2.85 GHz stays 3.0.
        assert_eq!(g.evaluate(load(19), at(3_000_000)), Some((2_850_000, Relation::L)));
        assert_eq!(table_lookup(TABLE, 2_850_000, Relation::L), 3_000_000);
        assert_eq!(g.evaluate(load(0), at(3_000_000)), Some((2_700_000, Relation::L)));
        // At the minimum nothing more is asked.
        let mut g = cs(1, 800_000);
        assert_eq!(g.evaluate(load(0), at(800_000)), None);
        // A step may ask for less than the minimum: the core clamps it, and the next sample
        // restarts from the current frequency.
        let mut g = cs(1, 900_000);
        assert_eq!(g.evaluate(load(0), at(1_200_000)), Some((750_000, Relation::L)));
    }

    #[test]
    fn sampling_down_factor_spaces_the_steps_down() {
        let mut g = cs(3, 2_400_000);
        let asks: Vec<_> = (0..6).map(|_| g.evaluate(load(5), at(2_400_000))).collect();
        let down = |khz| Some((khz, Relation::L));
        assert_eq!(asks, [None, None, down(2_250_000), None, None, down(2_100_000)]);
        // A busy sample restarts the count.
        assert_eq!(g.evaluate(load(5), at(2_400_000)), None);
        assert!(g.evaluate(load(90), at(2_400_000)).is_some());
        assert_eq!(g.evaluate(load(5), at(2_400_000)), None);
        assert_eq!(g.evaluate(load(5), at(2_400_000)), None);
        assert!(g.evaluate(load(5), at(2_400_000)).is_some());
    }

    #[test]
    fn slept_periods_lower_the_base_of_the_next_step() {
        // Four periods asleep from 2.4 GHz: the base is 1.8 GHz; a busy sample steps from it.
        let mut g = cs(1, 2_400_000);
        assert_eq!(g.evaluate(slept(4, 90, 0), at(2_400_000)), Some((1_950_000, Relation::H)));
        // Sleeping long enough floors the base at the minimum.
        let mut g = cs(1, 2_400_000);
        assert_eq!(g.evaluate(slept(100, 90, 0), at(2_400_000)), Some((950_000, Relation::H)));
        // Without a request the lowered base is not kept.
        let mut g = cs(1, 2_400_000);
        assert_eq!(g.evaluate(slept(4, 50, 0), at(2_400_000)), None);
        assert_eq!(g.requested_khz, 2_400_000);
    }

    #[test]
    fn freq_step_zero_freezes_and_stale_requests_restart_from_cur() {
        let mut g = Conservative::new(10_000, 80, 20, 0, 1);
        g.requested_khz = 1_200_000;
        assert_eq!(g.evaluate(load(100), at(1_200_000)), None);
        // A request outside the limits (they changed) restarts from the current frequency.
        let mut g = cs(1, 3_500_000);
        assert_eq!(g.evaluate(load(90), at(2_000_000)), Some((2_150_000, Relation::H)));
    }

    fn kernel(text: &str) -> KernelVersion {
        KernelVersion::parse(text).unwrap()
    }

    /// `cs` under the rules of kernel `version`.
    fn cs_at(version: &str, requested_khz: u32) -> Conservative {
        let mut g = cs(1, requested_khz);
        g.rules = Rules::for_kernel(kernel(version));
        g
    }

    #[test]
    fn each_later_rule_starts_at_the_stable_updates_that_took_it() {
        let rules = |v: &str| Rules::for_kernel(kernel(v));
        // Mainline's releases, 6.18 included, have none of them.
        for v in ["4.7", "5.10", "6.1", "6.6", "6.12", "6.18"] {
            assert_eq!(rules(v), Rules::default(), "{v}");
        }
        let reset = |v| rules(v).reset_on_limits;
        assert!(!reset("6.1.167") && reset("6.1.168") && !reset("6.6.130") && reset("6.6.131"));
        assert!(!reset("6.12.79") && reset("6.12.80") && !reset("6.18.20") && reset("6.18.21"));
        assert!(!reset("5.10.250") && !reset("5.15.200"));
        let no_stop = |v| rules(v).no_early_stop;
        assert!(!no_stop("6.1.177") && no_stop("6.1.178") && !no_stop("6.12.96") && no_stop("6.12.97"));
        assert!(!no_stop("6.6.140") && !no_stop("6.18.40"));
        let low = |v| rules(v).deferred_down_at_low_load;
        assert!(!low("6.12.116") && low("6.12.117") && !low("6.1.192") && !low("6.18.40"));
        // Debian's trees: 6.1.192 has the first two, 6.12.118 all three.
        let all = Rules { reset_on_limits: true, no_early_stop: true, deferred_down_at_low_load: true };
        assert_eq!(rules("6.1.192"), Rules { deferred_down_at_low_load: false, ..all });
        assert_eq!(rules("6.12.118"), all);
    }

    #[test]
    fn a_limits_update_restarts_the_request_from_the_current_frequency_from_6_12_80() {
        use crate::governor::scripted::ScriptedPolicy;
        // Worked example, Juno r2's big cluster (0.6, 1.0 and 1.2 GHz; steps of 60 MHz): the
        // governor last asked for 1.2 GHz, the policy runs at 1.0 GHz (the platform lowered it
        // and cpufreq read it back), and then the policy's limits are updated. 6.12.79 keeps
        // the 1.2 GHz request, inside the limits, so a busy sample finds the governor at the
        // maximum and asks nothing: the CPU stays at 1.0 GHz. 6.12.80 restarts from 1.0 GHz and
        // steps up.
        for (version, ask) in [("6.12.79", None), ("6.12.80", Some((1_060_000, Relation::H)))] {
            let mut p = ScriptedPolicy::new("juno-r2", &format!("conservative:kernel={version}"), 1);
            let mut g = Conservative::new(0, 80, 20, 5, 1);
            g.start(&mut p);
            (g.requested_khz, p.limits.cur_khz) = (1_200_000, 1_000_000);
            g.start(&mut p);
            let limits = Limits { cur: p.limits.cur_khz, min: p.limits.min_khz, max: p.limits.max_khz };
            assert_eq!((limits.min, limits.max), (600_000, 1_200_000));
            assert_eq!(g.evaluate(load(90), limits), ask, "{version}");
        }
        // Outside the new limits, the earlier rule restarts from the current frequency too, at
        // the next sample (a step is 5% of the new 2.4 GHz maximum).
        let mut g = cs_at("6.12.79", 3_000_000);
        let lowered = Limits { cur: 2_000_000, min: 800_000, max: 2_400_000 };
        assert_eq!(g.evaluate(load(90), lowered), Some((2_120_000, Relation::H)));
    }

    #[test]
    fn the_ends_ask_again_and_a_step_down_ends_at_the_minimum_from_6_12_97() {
        // Worked example, 0.8-3.0 GHz, steps of 150 MHz. Busy at the maximum: 6.12.96 stops
        // early; 6.12.97 asks for 3.0 GHz again, which the core drops (the current frequency).
        assert_eq!(cs_at("6.12.96", 3_000_000).evaluate(load(90), at(3_000_000)), None);
        assert_eq!(cs_at("6.12.97", 3_000_000).evaluate(load(90), at(3_000_000)), Some((3_000_000, Relation::H)));
        // Idle at the minimum: likewise.
        assert_eq!(cs_at("6.12.96", 800_000).evaluate(load(0), at(800_000)), None);
        assert_eq!(cs_at("6.12.97", 800_000).evaluate(load(0), at(800_000)), Some((800_000, Relation::L)));
        // Idle at 0.9 GHz, within one step of the minimum: 6.12.96 asks for 750 MHz (the core
        // raises it to the minimum, and the next sample restarts from the current frequency);
        // 6.12.97 asks for the minimum. Above min + step both take a whole step.
        for (version, low) in [("6.12.96", 750_000), ("6.12.97", 800_000), ("6.1.177", 750_000), ("6.1.178", 800_000)] {
            assert_eq!(cs_at(version, 900_000).evaluate(load(0), at(1_200_000)), Some((low, Relation::L)), "{version}");
            assert_eq!(cs_at(version, 1_000_000).evaluate(load(0), at(1_200_000)), Some((850_000, Relation::L)));
        }
    }

    #[test]
    fn slept_periods_count_only_at_a_low_measured_load_from_6_12_117() {
        // Worked example, 0.8-3.0 GHz, steps of 150 MHz, at 2.4 GHz after four periods asleep,
        // a CPU carrying its load of 90 from before the idle: with every CPU measured below
        // down_threshold (5), both versions step up from the lowered base, 1.8 GHz.
        for version in ["6.12.116", "6.12.117"] {
            assert_eq!(
                cs_at(version, 2_400_000).evaluate(slept(4, 90, 5), at(2_400_000)),
                Some((1_950_000, Relation::H)),
                "{version}"
            );
        }
        // A CPU measured at 50 (between the thresholds): 6.12.117 keeps the base, 2.4 GHz.
        for (version, up) in [("6.12.116", 1_950_000), ("6.12.117", 2_550_000)] {
            let mut g = cs_at(version, 2_400_000);
            assert_eq!(g.evaluate(slept(4, 90, 50), at(2_400_000)), Some((up, Relation::H)), "{version}");
        }
    }

    #[test]
    fn a_busy_cpu_is_not_pulled_down_by_a_sleeping_neighbour_from_6_12_117() {
        use crate::governor::scripted::ScriptedPolicy;
        // Worked example, Juno r2's big cluster (CPUs 1 and 2; 0.6, 1.0 and 1.2 GHz; steps of
        // 60 MHz), sampling every 10 ms, at 1.2 GHz: CPU 1 runs all 70 ms to the next sample,
        // CPU 2 sleeps through them (seven periods). Load 100, measured 100. 6.12.116 lowers
        // the base by seven steps to 780 MHz and asks for 840 MHz, which the driver rounds down
        // to 600 MHz, under a CPU that never idled; 6.12.117 leaves the base at 1.2 GHz.
        for (version, runs_at) in [("6.12.116", 600_000), ("6.12.117", 1_200_000)] {
            let mut p = ScriptedPolicy::new("juno-r2", &format!("conservative:kernel={version}"), 1);
            p.limits.cur_khz = 1_200_000;
            let mut g = Conservative::new(10_000, 80, 20, 5, 1);
            g.start(&mut p);
            assert_eq!((g.dbs.sampling_rate_us, p.facts().cpus()), (10_000, &[1, 2][..]));
            (p.now_ns, p.busy_ns[1]) = (70_000_000, 70_000_000);
            g.util_update(&mut p, 1, UpdateFlags::default());
            assert_eq!((g.dbs.max_sample_load, p.limits.cur_khz), (100, runs_at), "{version}");
        }
    }
}
