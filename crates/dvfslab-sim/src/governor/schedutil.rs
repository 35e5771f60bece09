//! schedutil: frequency from the scheduler's utilisation, at every utilisation change.
//!
//! What it models: `kernel/sched/cpufreq_schedutil.c` as of the `kernel=` version chosen
//! (default 6.18), following spec/algorithms.md §2:
//!
//! ```text
//!   util   = max(util_avg, util_est [, runnable_avg ≥ 6.5]) ≤ capacity     (get_util)
//!   actual = max(util, iowait_boost)
//!   perf   = actual + actual/4 (≤ capacity)     1.25 headroom (map_util_perf; ≤ 6.7: on the frequency)
//!            | approximate_util_avg(mult·actual/1024, rate_limit_us)   with margins=1 (§8)
//!   uclamp = the run-queue's (min, max):  ≥ 6.8  perf = max(min, min(perf, max))   floor wins
//!                                         ≤ 6.7  actual clamped to [min, max] (min if inverted)
//!   raw    = ref · perf / capacity              ref = cpuinfo.max_freq if invariant, else cur
//!                                                     (≥ 6.8: perf ≤ capacity and ref = 1.25 · cur)
//!   next   = lowest table frequency ≥ raw, within [min, max]   (resolve, RELATION_L)
//! ```
//! Rate limiting counts from the last *change*; a single-CPU policy holds its frequency while
//! the CPU never went idle since the last evaluation (sugov_hold_freq; 5.18+: not while
//! uclamp_max caps the run-queue); a shared policy takes the highest perf of its CPUs.
//!
//! Differences from Linux: every driver is treated as fast-switching (no slow-path kthread);
//! there are no RT, DL or IRQ signals yet (util is the CFS part), so the ≤ 6.7 and ≥ 6.8
//! aggregation formulas coincide; `adjust_perf` (intel_cpufreq with HWP) is not modelled.
//! The iowait boost doubles from a floor, in capacity units: 1024/8 from 5.8 on, and
//! before that `1024 · cpuinfo.min_freq / cpuinfo.max_freq` (sg_cpu->min).
//!
//! Tunables: `rate_limit_us` (µs; -1 = cpufreq's default transition delay for the kernel
//! version and driver), `margins` (0 = mainline 1.25 headroom, 1 = the margins series),
//! `response_time_ms` (ms, margins=1; -1 = the policy's default), `response_time_pct` (%, scales
//! the default: 80 mimics the 1.25 headroom).
//!
//! References: spec/algorithms.md §2 and §8; Documentation/scheduler/schedutil.rst.

use super::{margins, Governor, GovernorInfo, PolicyCtx, Relation, UpdateFlags};
use crate::kernel::KernelVersion;
use crate::spec::{Knob, KnobValues};

pub const INFO: GovernorInfo = GovernorInfo {
    name: "schedutil",
    description: "utilisation-driven: 1.25 x reference x util / capacity, from scheduler callbacks",
    knobs: &[
        Knob::new(
            "rate_limit_us",
            "us",
            -1.0,
            -1.0,
            1e7,
            "minimum time between frequency changes; -1 = cpufreq default",
        )
        .integer(),
        Knob::new(
            "margins",
            "bool",
            0.0,
            0.0,
            1.0,
            "1 = headroom from rate_limit_us and response_time_ms (2023 series)",
        )
        .integer(),
        Knob::new(
            "response_time_ms",
            "ms",
            -1.0,
            -1.0,
            1e5,
            "time to ramp from lowest to highest frequency; -1 = default",
        )
        .integer(),
        Knob::new("response_time_pct", "%", 100.0, 1.0, 1000.0, "scale of the default response time (80 = like 1.25)"),
    ],
    driver: None,
    check: super::no_cross_check,
    check_platform: super::runs_anywhere,
    build: |k: &KnobValues| {
        Box::new(Schedutil {
            rate_limit_us: k.get("rate_limit_us"),
            margins: k.get("margins") != 0.0,
            response_time_ms: k.get("response_time_ms"),
            response_time_pct: k.get("response_time_pct"),
            ..Schedutil::default()
        })
    },
};

/// Lowest iowait boost from 5.8 on, in capacity units (IOWAIT_BOOST_MIN = 1024/8).
const IOWAIT_BOOST_MIN: u64 = 128;

/// The iowait boost's floor for the kernel version: IOWAIT_BOOST_MIN from 5.8 on, before
/// that the lowest frequency's share of the highest (sg_cpu->min), so a part with a wide
/// range starts lower.
fn iowait_boost_floor(kernel: KernelVersion, table_khz: &[u32]) -> u64 {
    match (table_khz.first(), table_khz.last()) {
        (Some(&min), Some(&max)) if kernel < KernelVersion(5, 8) && max > 0 => 1024 * min as u64 / max as u64,
        _ => IOWAIT_BOOST_MIN,
    }
}

#[derive(Default)]
struct Schedutil {
    // Tunables as given.
    rate_limit_us: f64,
    margins: bool,
    response_time_ms: f64,
    response_time_pct: f64,
    // Policy state (sugov_policy).
    freq_update_delay_ns: u64,
    last_freq_update_time: Option<u64>,
    next_freq: u32,
    cached_raw_freq: u32,
    need_freq_update: bool,
    /// Response-time multiplier (×1024) and the effective rate limit for the headroom.
    rt_mult: u64,
    rate_limit_used_us: u64,
    /// PELT multiplier shift, for the headroom EAS asks about.
    pelt_lshift: u32,
    /// The iowait boost's floor (capacity units).
    boost_min: u64,
    // Per-CPU state (sugov_cpu), indexed by position in the policy.
    cpus: Vec<SugovCpu>,
}

#[derive(Default, Clone)]
struct SugovCpu {
    iowait_boost: u64,
    iowait_boost_pending: bool,
    last_update: u64,
    util: u64,
    saved_idle_calls: u64,
}

impl Governor for Schedutil {
    fn start(&mut self, ctx: &mut PolicyCtx) {
        let rate_limit_us =
            if self.rate_limit_us < 0.0 { ctx.default_transition_delay_us() } else { self.rate_limit_us as u64 };
        self.rate_limit_used_us = rate_limit_us;
        self.freq_update_delay_ns = rate_limit_us * 1000;
        self.cpus = vec![SugovCpu::default(); ctx.cpus().len()];
        self.boost_min = iowait_boost_floor(ctx.kernel(), ctx.table_khz());
        self.next_freq = 0;
        self.cached_raw_freq = 0;
        self.last_freq_update_time = None;
        self.need_freq_update = true;
        let lshift = ctx.pelt_multiplier().trailing_zeros();
        self.pelt_lshift = lshift;
        let cap = ctx.cap_orig(ctx.cpus()[0]);
        let default_ms = margins::default_response_time_ms(ctx.table_khz(), cap, lshift);
        let user_ms = if self.response_time_ms < 0.0 {
            (default_ms as f64 * self.response_time_pct / 100.0).round() as u64
        } else {
            self.response_time_ms as u64
        };
        self.rt_mult = margins::response_time_mult(default_ms, user_ms.max(1));
    }

    fn wants_util_updates(&self) -> bool {
        true
    }

    fn dvfs_headroom(&self, actual: u64, _cap: u64) -> Option<u64> {
        Some(if self.margins {
            margins::dvfs_headroom((self.rt_mult * actual) >> 10, self.rate_limit_used_us, self.pelt_lshift)
        } else {
            actual + (actual >> 2)
        })
    }

    fn util_update(&mut self, ctx: &mut PolicyCtx, cpu: usize, flags: UpdateFlags) {
        let time = ctx.now_ns();
        let Some(idx) = ctx.cpus().iter().position(|&c| c == cpu) else { return };
        let tick_ns = ctx.tick_ns();
        iowait_boost(&mut self.cpus[idx], time, flags, tick_ns, self.boost_min);
        self.cpus[idx].last_update = time;
        if !ctx.this_cpu_can_update(flags) || !self.should_update(time) {
            return;
        }
        let shared = ctx.cpus().len() > 1;
        let mut util = 0;
        let mut parts = Parts::default();
        for j in 0..ctx.cpus().len() {
            if !shared && j != idx {
                continue;
            }
            let c = ctx.cpus()[j];
            let boost = iowait_apply(&mut self.cpus[j], time, ctx.cap_orig(c), tick_ns, self.boost_min);
            let p = self.get_util(ctx, c, boost);
            self.cpus[j].util = p.perf;
            if p.perf >= util {
                util = p.perf;
                parts = p;
            }
        }
        let cap = ctx.cap_orig(cpu);
        let saved = self.cached_raw_freq;
        let (mut f, raw, reference) = self.get_next_freq(ctx, util, cap);
        let mut held = false;
        if !shared {
            // Busy hold: no idle entry since the last evaluation means the CPU is saturated;
            // do not lower its frequency on a possibly stale utilisation.
            let calls = ctx.cpu_idle_calls(cpu);
            let busy = calls == self.cpus[idx].saved_idle_calls;
            self.cpus[idx].saved_idle_calls = calls;
            // 5.18+: a run-queue held down by uclamp_max is busy by design, not saturated.
            let capped = ctx.kernel() >= KernelVersion(5, 18)
                && ctx.cpu_uclamp(cpu).is_some_and(|(_, max)| max < 1024 && parts.util_avg.max(parts.util_est) >= max);
            if busy && !capped && f < self.next_freq && !self.need_freq_update {
                f = self.next_freq;
                self.cached_raw_freq = saved;
                held = true;
            }
        }
        if !self.commit_next_freq(time, f) {
            return;
        }
        if ctx.explaining() {
            ctx.explain(&[
                ("cpu", cpu as f64),
                ("util_avg", parts.util_avg as f64),
                ("util_est", parts.util_est as f64),
                ("runnable_avg", parts.runnable as f64),
                ("util", parts.util as f64),
                ("iowait_boost", parts.boost as f64),
                ("perf", util as f64),
                ("capacity", cap as f64),
                ("ref_khz", reference as f64),
                ("held_busy", held as u8 as f64),
                ("rate_limit_us", self.rate_limit_used_us as f64),
            ]);
            if let Some((min, max)) = parts.uclamp {
                ctx.explain_more(&[("uclamp_min", min as f64), ("uclamp_max", max as f64)]);
            }
        }
        // The driver resolves the raw frequency again (the same entry); a held frequency is
        // already a table entry.
        ctx.request_khz(if held { f } else { raw.max(1) }, Relation::L);
    }
}

/// What went into one CPU's perf request, for `--explain`.
#[derive(Default, Clone, Copy)]
struct Parts {
    util_avg: u64,
    util_est: u64,
    runnable: u64,
    util: u64,
    boost: u64,
    perf: u64,
    /// The run-queue's uclamp (min, max), when uclamp is in use.
    uclamp: Option<(u64, u64)>,
}

impl Schedutil {
    fn should_update(&mut self, time: u64) -> bool {
        if self.need_freq_update {
            return true;
        }
        match self.last_freq_update_time {
            None => true,
            Some(last) => time - last >= self.freq_update_delay_ns,
        }
    }

    /// sugov_update_next_freq: the timestamp moves only when the frequency changes.
    fn commit_next_freq(&mut self, time: u64, f: u32) -> bool {
        if self.need_freq_update {
            self.need_freq_update = false;
        } else if self.next_freq == f {
            return false;
        }
        self.next_freq = f;
        self.last_freq_update_time = Some(time);
        true
    }

    /// get_util + sugov_effective_cpu_perf for one CPU.
    fn get_util(&self, ctx: &PolicyCtx, cpu: usize, boost: u64) -> Parts {
        let (util_avg, util_est, cap) = ctx.cpu_util_parts(cpu);
        let runnable = ctx.cpu_runnable_avg(cpu);
        let mut util = util_avg.max(util_est);
        // Runnable boosting (6.5+): a queue of waiting tasks counts as demand.
        if ctx.kernel() >= KernelVersion(6, 5) && ctx.cpu_nr_running(cpu) > 0 {
            util = util.max(runnable);
        }
        // A runnable RT task asks for the maximum unless uclamp is in use (then its clamps do).
        let uclamp = ctx.cpu_uclamp(cpu);
        let util = if ctx.cpu_rt_runnable(cpu) && uclamp.is_none() { cap } else { util.min(cap) };
        let actual = util.max(boost);
        let perf = if self.margins {
            let scaled = (self.rt_mult * actual) >> 10;
            margins::dvfs_headroom(scaled, self.rate_limit_used_us, ctx.pelt_multiplier().trailing_zeros()).min(cap)
        } else if ctx.kernel() >= KernelVersion(6, 8) {
            // sugov_effective_cpu_perf: headroom here, capped at the capacity.
            (actual + (actual >> 2)).min(cap)
        } else {
            // Up to 6.7 the headroom is applied to the frequency (map_util_freq).
            actual
        };
        let perf = match uclamp {
            None => perf,
            // sugov_effective_cpu_perf: the cap bounds the headroom, the floor wins over it.
            Some((min, max)) if self.margins || ctx.kernel() >= KernelVersion(6, 8) => perf.min(max.min(cap)).max(min),
            // uclamp_rq_util_with: an inverted pair yields the floor.
            Some((min, max)) if min >= max => min.min(cap),
            Some((min, max)) => perf.clamp(min, max).min(cap),
        };
        Parts { util_avg, util_est, runnable, util, boost, perf, uclamp }
    }

    /// get_next_freq: raw = ref · perf / capacity, resolved in the table within the limits.
    /// Returns (resolved, raw, reference).
    fn get_next_freq(&mut self, ctx: &PolicyCtx, util: u64, cap: u64) -> (u32, u32, u32) {
        let cur = ctx.cur_khz() as u64;
        let new_form = self.margins || ctx.kernel() >= KernelVersion(6, 8);
        let reference = if ctx.invariant() { *ctx.table_khz().last().expect("a table") as u64 } else { cur };
        let raw = if new_form {
            // perf carries the headroom and is capped at capacity; a non-invariant reference gets
            // its own 25% margin so a saturated CPU still climbs (get_capacity_ref_freq, 6.8).
            let reference = if ctx.invariant() { reference } else { cur + (cur >> 2) };
            reference * util / cap
        } else {
            // map_util_freq up to 6.7: (f + f/4) · util / cap.
            (reference + (reference >> 2)) * util / cap
        } as u32;
        if raw == self.cached_raw_freq && !self.need_freq_update && self.next_freq != 0 {
            return (self.next_freq, raw, reference as u32);
        }
        self.cached_raw_freq = raw;
        let (min, max) = (ctx.min_khz(), ctx.max_khz());
        let target = raw.clamp(min, max);
        let f = crate::driver::table_lookup(ctx.table_khz(), target, Relation::L).clamp(min, max);
        (f, raw, reference as u32)
    }
}

/// sugov_iowait_boost: on every callback, before rate limiting. An I/O wake-up starts the
/// boost at its floor `min` or doubles it (once per evaluated update); more than a tick without
/// callbacks restarts it.
fn iowait_boost(c: &mut SugovCpu, time: u64, flags: UpdateFlags, tick_ns: u64, min: u64) {
    let io = flags.iowait;
    if c.iowait_boost != 0 && time.saturating_sub(c.last_update) > tick_ns {
        c.iowait_boost = if io { min } else { 0 };
        c.iowait_boost_pending = io;
        return;
    }
    if !io || c.iowait_boost_pending {
        return;
    }
    c.iowait_boost_pending = true;
    // Double the boost at each request, up to the capacity scale.
    c.iowait_boost = if c.iowait_boost != 0 { (c.iowait_boost * 2).min(1024) } else { min };
}

/// sugov_iowait_apply: when an update is evaluated. Without a new I/O wake-up since the last
/// evaluation the boost halves, and vanishes below its floor `min`. Returns the boost in
/// capacity units.
fn iowait_apply(c: &mut SugovCpu, time: u64, cap: u64, tick_ns: u64, min: u64) -> u64 {
    if c.iowait_boost == 0 {
        return 0;
    }
    if time.saturating_sub(c.last_update) > tick_ns {
        c.iowait_boost = 0;
        c.iowait_boost_pending = false;
        return 0;
    }
    if !c.iowait_boost_pending {
        c.iowait_boost >>= 1;
        if c.iowait_boost < min {
            c.iowait_boost = 0;
            return 0;
        }
    }
    c.iowait_boost_pending = false;
    (c.iowait_boost * cap) >> 10
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: [u32; 7] = [800_000, 1_200_000, 1_600_000, 2_000_000, 2_400_000, 2_800_000, 3_000_000];

    #[test]
    fn invariant_frequency_table_of_the_spec() {
        // §2.10 / B.3 item 3, ≥ 6.8 form: perf = min(1.25 · util, 1024), raw = max · perf / 1024.
        let cases = [
            (100, 366_210, 800_000),
            (300, 1_098_632, 1_200_000),
            (512, 1_875_000, 2_000_000),
            (600, 2_197_265, 2_400_000),
            (700, 2_563_476, 2_800_000),
            (819, 2_997_070, 3_000_000),
            (820, 3_000_000, 3_000_000),
        ];
        for (util, raw, f) in cases {
            let perf = (util + (util >> 2)).min(1024);
            let got = 3_000_000u64 * perf / 1024;
            assert_eq!(got, raw, "util {util}");
            assert_eq!(crate::driver::table_lookup(&TABLE, got as u32, Relation::L), f, "util {util}");
        }
    }

    #[test]
    fn non_invariant_tipping_point() {
        // B.3 item 4 (≤ 6.7 form): cur 1.2 GHz, raw = (cur + cur/4) · util / 1024:
        // 819 stays at 1.2 GHz, 820 moves to 1.6 GHz, and even 1024 only reaches 1.6 GHz.
        let cur = 1_200_000u64;
        for (util, raw, f) in [(800, 1_171_875, 1_200_000), (819, 1_199_707, 1_200_000), (820, 1_201_171, 1_600_000)] {
            let got = (cur + (cur >> 2)) * util / 1024;
            assert_eq!(got, raw);
            assert_eq!(crate::driver::table_lookup(&TABLE, got as u32, Relation::L), f);
        }
        assert_eq!(
            crate::driver::table_lookup(&TABLE, ((cur + (cur >> 2)) * 1024 / 1024) as u32, Relation::L),
            1_600_000
        );
    }

    /// The boosts evaluated after four I/O wake-ups and then four plain callbacks, 1 ms apart.
    fn boost_sequence(min: u64) -> Vec<u64> {
        let tick = 4_000_000;
        let mut c = SugovCpu::default();
        let mut seen = Vec::new();
        let mut t = 0;
        for k in 0..8 {
            t += 1_000_000;
            iowait_boost(&mut c, t, UpdateFlags { iowait: k < 4, ..UpdateFlags::default() }, tick, min);
            c.last_update = t;
            seen.push(iowait_apply(&mut c, t, 1024, tick, min));
        }
        seen
    }

    #[test]
    fn iowait_boost_sequence() {
        // B.3 item 6: 128 → 256 → 512 → 1024 with I/O wake-ups, then 512 → 256 → 128 → 0.
        let floor = iowait_boost_floor(KernelVersion(6, 8), &TABLE);
        assert_eq!(boost_sequence(floor), vec![128, 256, 512, 1024, 512, 256, 128, 0]);
    }

    #[test]
    fn iowait_boost_before_5_8_starts_at_the_lowest_frequency_share() {
        // sg_cpu->min = 1024 · 800 / 3000 MHz = 273: 273 → 546 → 1024 (capped) → 1024, then
        // 512, and the next halving (256) falls under the floor and ends the boost.
        let floor = iowait_boost_floor(KernelVersion(5, 2), &TABLE);
        assert_eq!(floor, 273);
        assert_eq!(boost_sequence(floor), vec![273, 546, 1024, 1024, 512, 0, 0, 0]);
    }

    #[test]
    fn iowait_boost_restarts_after_a_tick_without_callbacks() {
        let tick = 4_000_000;
        let mut c = SugovCpu { iowait_boost: 1024, last_update: 0, ..SugovCpu::default() };
        iowait_boost(&mut c, 5_000_000, UpdateFlags { iowait: true, ..UpdateFlags::default() }, tick, IOWAIT_BOOST_MIN);
        assert_eq!(c.iowait_boost, IOWAIT_BOOST_MIN);
    }

    #[test]
    fn rate_limit_counts_from_the_last_change() {
        let mut s = Schedutil { freq_update_delay_ns: 2_000_000, ..Schedutil::default() };
        assert!(s.commit_next_freq(0, 1_000_000));
        assert!(!s.should_update(1_000_000));
        assert!(s.should_update(2_000_000));
        // Same frequency: no commit, and the timestamp stays.
        assert!(!s.commit_next_freq(2_500_000, 1_000_000));
        assert_eq!(s.last_freq_update_time, Some(0));
    }
}
