//! schedutil: frequency from the scheduler's utilisation, at every utilisation change.
//!
//! What it models: `kernel/sched/cpufreq_schedutil.c` as of the `kernel=` version chosen
//! (default 6.18):
//!
//! ```text
//!   util   = max(util_avg [, util_est ≥ 4.17] [, runnable_avg ≥ 6.5]) ≤ capacity     (get_util)
//!   actual = max(util, iowait_boost)
//!   perf   = actual + actual/4 (≤ capacity)     1.25 headroom (map_util_perf; ≤ 6.7: on the frequency)
//!            | approximate_util_avg(mult·actual/1024, rate_limit_us)   with margins=1 (margins.rs)
//!   uclamp = the run-queue's (min, max):  ≥ 6.8  perf = max(min, min(perf, max))   floor wins
//!                                         ≤ 6.7  actual clamped to [min, max] (min if inverted)
//!   raw    = ref · perf / capacity              ref = cpuinfo.max_freq if invariant, else cur
//!                                                     (≥ 6.8: perf ≤ capacity and ref = 1.25 · cur;
//!                                                      5.14 – 6.7: 1.25 on the util, rounded down)
//!   next   = raw within [min, max], rounded up to a table entry      (cpufreq_driver_resolve_freq)
//!            when the driver has a table; intel_cpufreq has none and keeps the kHz
//! ```
//! Rate limiting counts from the last *change* (4.7 – 4.11: from the last evaluation); a
//! single-CPU policy holds its frequency while the CPU never went idle since the last
//! evaluation (4.12+, sugov_hold_freq; 5.18+: not while uclamp_max caps the run-queue); a
//! shared policy takes the highest perf of its CPUs. Before 5.18 the iowait boost is applied
//! after the uclamp clamping, so uclamp_max does not bound it.
//!
//! Differences from Linux: every driver is treated as fast-switching (no slow-path kthread);
//! there are no RT, DL or IRQ signals yet (util is the CFS part), so the ≤ 6.7 and ≥ 6.8
//! aggregation formulas coincide; `adjust_perf` (intel_cpufreq with HWP) is not modelled.
//! The iowait boost (4.9+) doubles from a floor, in capacity units: 1024/8 from 5.2 on, and
//! before that the policy's minimum frequency (`1024 · policy->min / cpuinfo.max_freq` in
//! capacity terms, the boost then being kept in kHz); 4.9 – 4.13 jump
//! straight to the maximum and halve at each evaluation.
//!
//! Tunables: `rate_limit_us` (µs; -1 = cpufreq's default transition delay for the kernel
//! version and driver), `margins` (0 = mainline 1.25 headroom, 1 = the margins series),
//! `response_time_ms` (ms, margins=1; -1 = the policy's default), `response_time_pct` (%, scales
//! the default: 80 mimics the 1.25 headroom).
//!
//! References: Documentation/scheduler/schedutil.rst; docs/governors.md; docs/heterogeneous.md (margins).

use super::{margins, CpuSignals, Enables, Governor, GovernorInfo, PolicyCtx, Relation, UpdateFlags};
use crate::kernel::KernelVersion;
use crate::sched::pelt::SCHED_CAPACITY_SCALE;
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
    enables: Enables { fast_switch: true, eas: true },
};

/// Lowest iowait boost from 5.2 on, in capacity units (IOWAIT_BOOST_MIN = 1024/8).
const IOWAIT_BOOST_MIN: u64 = 128;

/// The iowait boost's floor for the kernel version, in capacity units:
///
/// ```text
///   4.14 – 5.0   policy->min share of cpuinfo.max_freq  (the boost is in kHz from policy->min,
///                                                        capped at cpuinfo.max_freq)
///   5.1          sg_cpu->min = 1024 · cpuinfo.min_freq / cpuinfo.max_freq   (sugov_start, 5.1)
///   5.2 –        IOWAIT_BOOST_MIN = 1024 / 8                               (sugov_iowait_reset)
/// ```
/// so a part with a wide range starts lower before 5.2, and a raised scaling_min_freq lifts
/// the floor only before 5.1.
fn iowait_boost_floor(kernel: KernelVersion, policy_min_khz: u32, cpuinfo_min_khz: u32, cpuinfo_max_khz: u32) -> u64 {
    if kernel >= KernelVersion(5, 2, 0) || cpuinfo_max_khz == 0 {
        IOWAIT_BOOST_MIN
    } else if kernel >= KernelVersion(5, 1, 0) {
        SCHED_CAPACITY_SCALE * cpuinfo_min_khz as u64 / cpuinfo_max_khz as u64
    } else {
        SCHED_CAPACITY_SCALE * policy_min_khz as u64 / cpuinfo_max_khz as u64
    }
}

/// How an I/O wake-up boosts the CPU, by kernel version.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum IowaitRule {
    /// 4.7, 4.8: schedutil has no iowait boost (SCHED_CPUFREQ_IOWAIT came in 4.9).
    #[default]
    Absent,
    /// 4.9 – 4.13 (sugov_set_iowait_boost / sugov_iowait_boost): every I/O wake-up sets the
    /// boost to the maximum (iowait_boost_max = cpuinfo.max_freq, 1024 here); each evaluation
    /// uses it and then halves it.
    JumpToMax,
    /// 4.14+ (Joel Fernandes' "make iowait boost more energy efficient"): start at `floor`,
    /// double per I/O wake-up, halve per evaluation without one, drop below the floor.
    Double { floor: u64 },
}

impl IowaitRule {
    /// The rule of `kernel` for a policy whose minimum is `policy_min_khz` and whose table
    /// spans `cpuinfo_min_khz` .. `cpuinfo_max_khz`.
    fn for_kernel(
        kernel: KernelVersion,
        policy_min_khz: u32,
        cpuinfo_min_khz: u32,
        cpuinfo_max_khz: u32,
    ) -> IowaitRule {
        if kernel < KernelVersion(4, 9, 0) {
            IowaitRule::Absent
        } else if kernel < KernelVersion(4, 14, 0) {
            IowaitRule::JumpToMax
        } else {
            IowaitRule::Double { floor: iowait_boost_floor(kernel, policy_min_khz, cpuinfo_min_khz, cpuinfo_max_khz) }
        }
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
    /// The policy's limits changed (sugov_limits): the next update ignores the rate limit and
    /// sets `need_freq_update`.
    limits_changed: bool,
    /// 5.10 – 6.13 (before the stable updates that took 6.14's rule): a driver with
    /// CPUFREQ_NEED_UPDATE_LIMITS keeps `need_freq_update` set once it is
    /// (sugov_update_next_freq re-reads the flag), so every evaluation calls it.
    keeps_need_freq_update: bool,
    /// Response-time multiplier (×1024) and the effective rate limit for the headroom.
    rt_mult: u64,
    rate_limit_used_us: u64,
    /// PELT multiplier shift, for the headroom EAS asks about.
    pelt_lshift: u32,
    /// How I/O wake-ups boost, for the kernel version.
    iowait_rule: IowaitRule,
    // What the policy cannot change during a run, read once at `start`: an update reads its
    // CPUs' signals and nothing else through the context.
    kernel: KernelVersion,
    tick_ns: u64,
    // Per-CPU state (sugov_cpu), in the policy's order.
    cpus: Vec<SugovCpu>,
}

#[derive(Default, Clone)]
struct SugovCpu {
    cpu: usize,
    iowait_boost: u64,
    iowait_boost_pending: bool,
    last_update: u64,
    util: u64,
    saved_idle_calls: u64,
}

impl Governor for Schedutil {
    fn start(&mut self, ctx: &mut dyn PolicyCtx) {
        let rate_limit_us =
            if self.rate_limit_us < 0.0 { ctx.default_transition_delay_us() } else { self.rate_limit_us as u64 };
        self.rate_limit_used_us = rate_limit_us;
        self.freq_update_delay_ns = rate_limit_us * 1000;
        self.cpus = ctx.cpus().iter().map(|&cpu| SugovCpu { cpu, ..SugovCpu::default() }).collect();
        self.kernel = ctx.kernel();
        self.tick_ns = ctx.tick_ns();
        // sugov_start: before 5.1 the floor follows the policy's current minimum, in 5.1 the
        // table's.
        let (cpuinfo_min, cpuinfo_max) = (ctx.table_khz()[0], *ctx.table_khz().last().expect("a table"));
        self.iowait_rule = IowaitRule::for_kernel(ctx.kernel(), ctx.min_khz(), cpuinfo_min, cpuinfo_max);
        self.next_freq = 0;
        self.cached_raw_freq = 0;
        self.last_freq_update_time = None;
        // sugov_start, then the core's ->limits (sugov_limits) as the governor starts.
        self.need_freq_update = false;
        self.limits_changed = true;
        self.keeps_need_freq_update = ctx.facts().driver_needs_update_limits()
            && ctx.kernel() < KernelVersion(6, 14, 0)
            && !ctx.kernel().has_backport(&NEED_FREQ_UPDATE_CLEARED_FIRST_STABLE);
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

    fn adopt_recorded(&mut self, khz: u32, time_ns: u64) {
        self.next_freq = khz;
        self.last_freq_update_time = Some(time_ns);
        self.cached_raw_freq = 0;
        self.need_freq_update = false;
        self.limits_changed = false;
    }

    fn dvfs_headroom(&self, actual: u64, _cap: u64) -> Option<u64> {
        Some(if self.margins {
            margins::dvfs_headroom((self.rt_mult * actual) >> 10, self.rate_limit_used_us, self.pelt_lshift)
        } else {
            map_headroom(actual)
        })
    }

    fn util_update(&mut self, ctx: &mut dyn PolicyCtx, cpu: usize, flags: UpdateFlags) {
        let time = ctx.now_ns();
        let Some(idx) = self.cpus.iter().position(|c| c.cpu == cpu) else { return };
        let (tick_ns, kernel) = (self.tick_ns, self.kernel);
        iowait_boost(&mut self.cpus[idx], time, flags, tick_ns, self.iowait_rule);
        self.cpus[idx].last_update = time;
        if !ctx.this_cpu_can_update(flags) || !self.should_update(time) {
            return;
        }
        let shared = self.cpus.len() > 1;
        let mut util = 0;
        let mut parts = Parts::default();
        let mut own = CpuSignals::default();
        for j in 0..self.cpus.len() {
            if !shared && j != idx {
                continue;
            }
            let signals = ctx.cpu_signals(self.cpus[j].cpu);
            if j == idx {
                own = signals;
            }
            let boost = iowait_apply(&mut self.cpus[j], time, signals.cap_orig, tick_ns, self.iowait_rule);
            let p = self.get_util(&signals, boost);
            self.cpus[j].util = p.perf;
            if p.perf >= util {
                util = p.perf;
                parts = p;
            }
        }
        let cap = own.cap_orig;
        let saved = self.cached_raw_freq;
        let (mut f, raw, reference) = self.get_next_freq(ctx, util, cap);
        let mut held = false;
        // sugov_cpu_is_busy came in 4.12; before it a single-CPU policy lowers at once.
        if !shared && kernel >= KernelVersion(4, 12, 0) {
            // Busy hold: no idle entry since the last evaluation means the CPU is saturated;
            // do not lower its frequency on a possibly stale utilisation.
            let busy = own.idle_calls == self.cpus[idx].saved_idle_calls;
            self.cpus[idx].saved_idle_calls = own.idle_calls;
            // 5.18+: a run-queue held down by uclamp_max is busy by design, not saturated.
            let capped = kernel >= KernelVersion(5, 18, 0)
                && own.uclamp.is_some_and(|(_, max)| max < 1024 && parts.util_avg.max(parts.util_est) >= max);
            // 6.6+ ("cpufreq: schedutil: Update next_freq when cpufreq_limits change", merged
            // for 6.6-rc5; and the stable updates that took it): not while a limits update is
            // pending.
            let pending = (kernel >= KernelVersion(6, 6, 0)
                || kernel.has_backport(&NO_HOLD_WHILE_PENDING_FIRST_STABLE))
                && self.need_freq_update;
            if busy && !capped && f < self.next_freq && !pending {
                f = self.next_freq;
                self.cached_raw_freq = saved;
                held = true;
            }
        }
        if !self.commit_next_freq(time, f, kernel) {
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

/// The first stable update of each series that keeps no busy hold while a limits update is
/// pending, as 6.6 does: 6.1.60 (Debian's 6.1 changelog) and 6.5.9 (its stable review posting).
const NO_HOLD_WHILE_PENDING_FIRST_STABLE: [KernelVersion; 2] = [KernelVersion(6, 1, 60), KernelVersion(6, 5, 9)];

/// The first stable update of each series that clears a pending limits update once it is
/// taken, as 6.14 does ("cpufreq: schedutil: Fix superfluous updates caused by
/// need_freq_update", 8e461a1cb43d), read from the stable review postings and Debian's
/// changelogs: 5.15.179, 6.1.129, 6.12.13 and 6.13.2 took it (5.10 and 6.6 not found: their
/// updates keep the earlier rule here). Debian's 6.1.192 and 6.12.118 sources have it.
const NEED_FREQ_UPDATE_CLEARED_FIRST_STABLE: [KernelVersion; 4] =
    [KernelVersion(5, 15, 179), KernelVersion(6, 1, 129), KernelVersion(6, 12, 13), KernelVersion(6, 13, 2)];

impl Schedutil {
    /// sugov_should_update_freq: a limits change is taken at once and asks for a new
    /// frequency; otherwise the rate limit applies.
    fn should_update(&mut self, time: u64) -> bool {
        if self.limits_changed {
            self.limits_changed = false;
            self.need_freq_update = true;
            return true;
        }
        match self.last_freq_update_time {
            None => true,
            Some(last) => time - last >= self.freq_update_delay_ns,
        }
    }

    /// sugov_update_next_freq (earlier, sugov_update_commit): from 4.12 the timestamp moves
    /// only when the frequency changes; in 4.7 – 4.11 sugov_update_commit set it on every
    /// evaluated update, so the rate limit counted from the last evaluation, changed or not.
    /// Returns whether there is a new frequency to ask the driver for.
    /// 5.10 – 6.13 re-read CPUFREQ_NEED_UPDATE_LIMITS into `need_freq_update`, from 6.14 (and
    /// the stable updates that took it) it is cleared ("cpufreq: schedutil: Fix superfluous
    /// updates caused by need_freq_update").
    fn commit_next_freq(&mut self, time: u64, f: u32, kernel: KernelVersion) -> bool {
        if self.need_freq_update {
            self.need_freq_update = self.keeps_need_freq_update;
        } else if self.next_freq == f {
            if kernel < KernelVersion(4, 12, 0) {
                self.last_freq_update_time = Some(time);
            }
            return false;
        }
        self.next_freq = f;
        self.last_freq_update_time = Some(time);
        true
    }

    /// get_util + sugov_effective_cpu_perf for one CPU.
    fn get_util(&self, signals: &CpuSignals, boost: u64) -> Parts {
        let kernel = self.kernel;
        let util_est = if kernel >= KernelVersion(4, 17, 0) { signals.util_est } else { 0 };
        let util = cfs_util(kernel, signals.util_avg, util_est, signals.runnable_avg);
        // A runnable RT task asks for the maximum unless uclamp is in use (then its clamps do).
        let (cap, uclamp) = (signals.cap_orig, signals.uclamp);
        let util = if signals.rt_runnable && uclamp.is_none() { cap } else { util.min(cap) };
        let perf = self.effective_perf(kernel, util, boost, cap, uclamp);
        Parts { util_avg: signals.util_avg, util_est, runnable: signals.runnable_avg, util, boost, perf, uclamp }
    }

    /// The perf asked for a CPU whose utilisation is `util` (≤ cap) and iowait boost `boost`,
    /// under the run-queue's uclamp (min, max): the headroom (≥ 6.8 and margins; up to 6.7 it
    /// goes on the frequency), then the clamps.
    fn effective_perf(
        &self,
        kernel: KernelVersion,
        util: u64,
        boost: u64,
        cap: u64,
        uclamp: Option<(u64, u64)>,
    ) -> u64 {
        // Before 5.18 the iowait boost was taken after the clamping (sugov_iowait_apply took the
        // max of the boost and the already clamped util), so uclamp_max did not cap it; 5.18
        // ("sched/uclamp: Fix iowait boost escaping uclamp restriction") clamps the boost too.
        let boost_escapes_uclamp = uclamp.is_some() && kernel < KernelVersion(5, 18, 0);
        let actual = if boost_escapes_uclamp { util } else { util.max(boost) };
        let perf = if self.margins {
            let scaled = (self.rt_mult * actual) >> 10;
            margins::dvfs_headroom(scaled, self.rate_limit_used_us, self.pelt_lshift).min(cap)
        } else if kernel >= KernelVersion(6, 8, 0) {
            // sugov_effective_cpu_perf: headroom here, capped at the capacity.
            map_headroom(actual).min(cap)
        } else {
            // Up to 6.7 the headroom is applied to the frequency (map_util_freq).
            actual
        };
        let perf = match uclamp {
            None => perf,
            // sugov_effective_cpu_perf: the cap bounds the headroom, the floor wins over it.
            Some((min, max)) if self.margins || kernel >= KernelVersion(6, 8, 0) => perf.min(max.min(cap)).max(min),
            // uclamp_rq_util_with: an inverted pair yields the floor.
            Some((min, max)) if min >= max => min.min(cap),
            Some((min, max)) => perf.clamp(min, max).min(cap),
        };
        if boost_escapes_uclamp {
            perf.max(boost)
        } else {
            perf
        }
    }

    /// get_next_freq: raw = ref · perf / capacity, resolved by the cpufreq core
    /// (cpufreq_driver_resolve_freq: a table entry, or the clamped kHz for intel_cpufreq).
    /// Returns (resolved, raw, reference).
    fn get_next_freq(&mut self, ctx: &dyn PolicyCtx, util: u64, cap: u64) -> (u32, u32, u32) {
        let form = FreqForm::of(self.kernel, self.margins);
        let (raw, reference) = raw_next_freq(form, ctx.invariant(), ctx.cpuinfo_max_khz(), ctx.cur_khz(), util, cap);
        if raw == self.cached_raw_freq && !self.need_freq_update && self.next_freq != 0 {
            return (self.next_freq, raw, reference);
        }
        self.cached_raw_freq = raw;
        (ctx.resolve_freq(raw), raw, reference)
    }
}

/// The CFS utilisation schedutil reads (cpu_util_cfs; 6.5+ cpu_util_cfs_boost), before the
/// capacity cap: max(util_avg, util_est), and from 6.5 (runnable boosting) runnable_avg too.
/// cpu_util(cpu, NULL, -1, boost=1) takes the runnable average whatever the number of queued
/// tasks: a CPU that just emptied still reports the contention it had. `util_est` is 0 before
/// 4.17, which had no util_est.
fn cfs_util(kernel: KernelVersion, util_avg: u64, util_est: u64, runnable_avg: u64) -> u64 {
    let util = util_avg.max(util_est);
    if kernel >= KernelVersion(6, 5, 0) {
        util.max(runnable_avg)
    } else {
        util
    }
}

/// The 1.25 DVFS headroom of mainline schedutil (map_util_perf: util + util/4).
fn map_headroom(util: u64) -> u64 {
    util + (util >> 2)
}

/// Where get_next_freq puts the 1.25 headroom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FreqForm {
    /// Up to 5.13 (map_util_freq): raw = 1.25 · ref · util / cap, ref = cpuinfo.max_freq when
    /// invariant, else the current frequency.
    MapUtilFreq,
    /// 5.14 – 6.7 ("sched/cpufreq: Consider reduced CPU capacity in energy calculation"): the
    /// headroom moved onto the util (map_util_perf, rounded down) before map_util_freq:
    /// raw = ref · (util + util/4) / cap, a few kHz below the earlier form.
    MapUtilPerf,
    /// 6.8+ (and the margins series): perf already carries the headroom and is capped at the
    /// capacity; raw = ref · perf / cap with ref = cpuinfo.max_freq when invariant, else
    /// 1.25 · cur (get_capacity_ref_freq), so a saturated non-invariant CPU still climbs.
    CappedPerf,
}

impl FreqForm {
    /// The form of `kernel` (the margins series has the 6.8 one).
    fn of(kernel: KernelVersion, margins: bool) -> FreqForm {
        if margins || kernel >= KernelVersion(6, 8, 0) {
            FreqForm::CappedPerf
        } else if kernel >= KernelVersion(5, 14, 0) {
            FreqForm::MapUtilPerf
        } else {
            FreqForm::MapUtilFreq
        }
    }
}

/// get_next_freq's arithmetic: (raw kHz, reference kHz) for `perf` on a CPU of capacity `cap`.
fn raw_next_freq(form: FreqForm, invariant: bool, max_khz: u32, cur_khz: u32, perf: u64, cap: u64) -> (u32, u32) {
    let (max, cur) = (max_khz as u64, cur_khz as u64);
    let reference = if invariant { max } else { cur };
    let raw = match form {
        FreqForm::MapUtilFreq => map_headroom(reference) * perf / cap,
        FreqForm::MapUtilPerf => reference * map_headroom(perf) / cap,
        FreqForm::CappedPerf => {
            let reference = if invariant { reference } else { map_headroom(cur) };
            reference * perf / cap
        }
    };
    (raw as u32, reference as u32)
}

/// sugov_iowait_boost (sugov_set_iowait_boost before 5.0): on every callback, before rate
/// limiting. From 4.14 an I/O wake-up starts the boost at its floor or doubles it (once per
/// evaluated update); 4.9 – 4.13 set it to the maximum. More than a tick without callbacks
/// restarts it.
fn iowait_boost(c: &mut SugovCpu, time: u64, flags: UpdateFlags, tick_ns: u64, rule: IowaitRule) {
    let io = flags.iowait;
    let min = match rule {
        IowaitRule::Absent => return,
        IowaitRule::JumpToMax => {
            if io {
                c.iowait_boost = SCHED_CAPACITY_SCALE;
            } else if c.iowait_boost != 0 && time.saturating_sub(c.last_update) > tick_ns {
                c.iowait_boost = 0;
            }
            return;
        }
        IowaitRule::Double { floor } => floor,
    };
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
    c.iowait_boost = if c.iowait_boost != 0 { (c.iowait_boost * 2).min(SCHED_CAPACITY_SCALE) } else { min };
}

/// sugov_iowait_apply: when an update is evaluated. From 4.14, without a new I/O wake-up
/// since the last evaluation the boost halves, and vanishes below its floor; 4.9 – 4.13 use
/// the boost and then halve it. Returns the boost in capacity units.
fn iowait_apply(c: &mut SugovCpu, time: u64, cap: u64, tick_ns: u64, rule: IowaitRule) -> u64 {
    if c.iowait_boost == 0 {
        return 0;
    }
    if time.saturating_sub(c.last_update) > tick_ns {
        c.iowait_boost = 0;
        c.iowait_boost_pending = false;
        return 0;
    }
    let min = match rule {
        IowaitRule::Absent => return 0,
        IowaitRule::JumpToMax => {
            let used = c.iowait_boost;
            c.iowait_boost >>= 1;
            return (used * cap) >> 10;
        }
        IowaitRule::Double { floor } => floor,
    };
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
    use crate::hw::driver::Driver;

    const TABLE: [u32; 7] = [800_000, 1_200_000, 1_600_000, 2_000_000, 2_400_000, 2_800_000, 3_000_000];

    /// What acpi-cpufreq (a table driver) resolves `raw` to with the whole table allowed.
    fn resolved(raw: u32) -> u32 {
        Driver::AcpiCpufreq.resolve_freq(&TABLE, raw, TABLE[0], TABLE[6])
    }

    #[test]
    fn invariant_frequency_table_of_the_spec() {
        // 6.8+ (sugov_effective_cpu_perf, get_next_freq): perf = min(1.25 · util, capacity),
        // raw = cpuinfo.max_freq · perf / capacity, resolved to the lowest entry at or above.
        let s = Schedutil::default();
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
            let perf = s.effective_perf(KernelVersion(6, 8, 0), util, 0, 1024, None);
            let (got, reference) = raw_next_freq(FreqForm::CappedPerf, true, 3_000_000, 800_000, perf, 1024);
            assert_eq!((got, reference), (raw, 3_000_000), "util {util}");
            assert_eq!(resolved(got), f, "util {util}");
        }
    }

    #[test]
    fn non_invariant_tipping_point() {
        // ≤ 6.7 (map_util_freq): cur 1.2 GHz, raw = (cur + cur/4) · util / 1024:
        // 819 stays at 1.2 GHz, 820 moves to 1.6 GHz, and even 1024 only reaches 1.6 GHz.
        let s = Schedutil::default();
        let cases = [
            (800, 1_171_875, 1_200_000),
            (819, 1_199_707, 1_200_000),
            (820, 1_201_171, 1_600_000),
            (1024, 1_500_000, 1_600_000),
        ];
        for (util, raw, f) in cases {
            let perf = s.effective_perf(KernelVersion(6, 7, 0), util, 0, 1024, None);
            let (got, reference) = raw_next_freq(FreqForm::MapUtilFreq, false, 3_000_000, 1_200_000, perf, 1024);
            assert_eq!((got, reference), (raw, 1_200_000), "util {util}");
            assert_eq!(resolved(got), f, "util {util}");
        }
    }

    #[test]
    fn the_headroom_moved_onto_the_util_in_5_14() {
        // util 370 on a 3.1 GHz part (invariant). Up to 5.13 map_util_freq puts 1.25 on the
        // frequency: 3875000 · 370 / 1024 = 1400146 kHz, above the 1.4 GHz entry. From 5.14
        // map_util_perf rounds the util first: 370 + 92 = 462, 3100000 · 462 / 1024 = 1398632,
        // at or below it.
        let old = raw_next_freq(FreqForm::MapUtilFreq, true, 3_100_000, 1_200_000, 370, 1024);
        let new = raw_next_freq(FreqForm::MapUtilPerf, true, 3_100_000, 1_200_000, 370, 1024);
        assert_eq!((old.0, new.0), (1_400_146, 1_398_632));
        assert_eq!(FreqForm::of(KernelVersion(5, 13, 0), false), FreqForm::MapUtilFreq);
        assert_eq!(FreqForm::of(KernelVersion(5, 14, 0), false), FreqForm::MapUtilPerf);
        assert_eq!(FreqForm::of(KernelVersion(6, 7, 0), false), FreqForm::MapUtilPerf);
        assert_eq!(FreqForm::of(KernelVersion(6, 8, 0), false), FreqForm::CappedPerf);
        assert_eq!(FreqForm::of(KernelVersion(6, 1, 0), true), FreqForm::CappedPerf);
    }

    /// The boosts evaluated after four I/O wake-ups and then four plain callbacks, 1 ms apart.
    fn boost_sequence(rule: IowaitRule) -> Vec<u64> {
        let tick = 4_000_000;
        let mut c = SugovCpu::default();
        let mut seen = Vec::new();
        let mut t = 0;
        for k in 0..8 {
            t += 1_000_000;
            iowait_boost(&mut c, t, UpdateFlags { iowait: k < 4, ..UpdateFlags::default() }, tick, rule);
            c.last_update = t;
            seen.push(iowait_apply(&mut c, t, 1024, tick, rule));
        }
        seen
    }

    #[test]
    fn iowait_boost_sequence() {
        // sugov_iowait_boost: 128 → 256 → 512 → 1024 with I/O wake-ups, then 512 → 256 → 128 → 0.
        let rule = IowaitRule::for_kernel(KernelVersion(6, 8, 0), TABLE[0], TABLE[0], TABLE[6]);
        assert_eq!(boost_sequence(rule), vec![128, 256, 512, 1024, 512, 256, 128, 0]);
    }

    #[test]
    fn iowait_boost_before_5_2_starts_at_the_minimum_frequencys_share() {
        // 4.14 – 5.0 (sugov_set_iowait_boost): the boost starts at policy->min (kHz) and doubles
        // up to cpuinfo.max_freq; in capacity terms 1024 · 800 / 3000 MHz = 273: 273 → 546 →
        // 1024 (capped) → 1024, then 512, and the next halving (256) falls under the floor.
        // 5.1 (sugov_start): sg_cpu->min, the same share taken of cpuinfo.min_freq.
        for kernel in [KernelVersion(4, 19, 0), KernelVersion(5, 1, 0)] {
            assert_eq!(iowait_boost_floor(kernel, TABLE[0], TABLE[0], TABLE[6]), 273, "{kernel}");
            let rule = IowaitRule::for_kernel(kernel, TABLE[0], TABLE[0], TABLE[6]);
            assert_eq!(rule, IowaitRule::Double { floor: 273 });
            assert_eq!(boost_sequence(rule), vec![273, 546, 1024, 1024, 512, 0, 0, 0]);
        }
        // A raised scaling_min_freq (1.2 GHz) raises that floor to 1024 · 1200 / 3000 = 409
        // up to 5.0; 5.1 keeps the table's minimum.
        assert_eq!(iowait_boost_floor(KernelVersion(5, 0, 0), 1_200_000, TABLE[0], TABLE[6]), 409);
        assert_eq!(iowait_boost_floor(KernelVersion(5, 1, 0), 1_200_000, TABLE[0], TABLE[6]), 273);
        assert_eq!(iowait_boost_floor(KernelVersion(5, 2, 0), 1_200_000, TABLE[0], TABLE[6]), IOWAIT_BOOST_MIN);
    }

    #[test]
    fn iowait_boost_starts_at_an_eighth_from_5_2() {
        // 5.2+ (IOWAIT_BOOST_MIN = SCHED_CAPACITY_SCALE / 8, read in 5.2.1 and 5.4 sources;
        // 5.0.4 still starts at policy->min, 5.1.0 at sg_cpu->min): the same sequence as 6.x.
        let rule = IowaitRule::for_kernel(KernelVersion(5, 2, 0), TABLE[0], TABLE[0], TABLE[6]);
        assert_eq!(rule, IowaitRule::Double { floor: IOWAIT_BOOST_MIN });
        assert_eq!(boost_sequence(rule), vec![128, 256, 512, 1024, 512, 256, 128, 0]);
    }

    #[test]
    fn iowait_boost_jumps_to_the_maximum_before_4_14() {
        // 4.9 – 4.13 (sugov_set_iowait_boost): each I/O wake-up sets iowait_boost_max, and
        // sugov_iowait_boost uses the boost then halves it, with no floor. The doubling from a
        // floor came with "cpufreq: schedutil: Make iowait boost more energy efficient" (4.14).
        for kernel in [KernelVersion(4, 9, 0), KernelVersion(4, 13, 0)] {
            let rule = IowaitRule::for_kernel(kernel, TABLE[0], TABLE[0], TABLE[6]);
            assert_eq!(rule, IowaitRule::JumpToMax, "{kernel}");
            assert_eq!(boost_sequence(rule), vec![1024, 1024, 1024, 1024, 512, 256, 128, 64], "{kernel}");
        }
        assert_eq!(
            IowaitRule::for_kernel(KernelVersion(4, 14, 0), TABLE[0], TABLE[0], TABLE[6]),
            IowaitRule::Double { floor: 273 }
        );
    }

    #[test]
    fn no_iowait_boost_before_4_9() {
        // SCHED_CPUFREQ_IOWAIT and schedutil's iowait boosting arrived in 4.9.
        let rule = IowaitRule::for_kernel(KernelVersion(4, 8, 0), TABLE[0], TABLE[0], TABLE[6]);
        assert_eq!(boost_sequence(rule), vec![0; 8]);
    }

    #[test]
    fn iowait_boost_restarts_after_a_tick_without_callbacks() {
        let tick = 4_000_000;
        let rule = IowaitRule::Double { floor: IOWAIT_BOOST_MIN };
        let mut c = SugovCpu { iowait_boost: 1024, last_update: 0, ..SugovCpu::default() };
        iowait_boost(&mut c, 5_000_000, UpdateFlags { iowait: true, ..UpdateFlags::default() }, tick, rule);
        assert_eq!(c.iowait_boost, IOWAIT_BOOST_MIN);
    }

    #[test]
    fn rate_limit_counts_from_the_last_change() {
        // 4.12+ (sugov_update_commit, later sugov_update_next_freq): an unchanged frequency
        // leaves last_freq_update_time where it was.
        let mut s = Schedutil { freq_update_delay_ns: 2_000_000, ..Schedutil::default() };
        let k = KernelVersion(6, 18, 0);
        assert!(s.commit_next_freq(0, 1_000_000, k));
        assert!(!s.should_update(1_000_000));
        assert!(s.should_update(2_000_000));
        // Same frequency: no commit, and the timestamp stays.
        assert!(!s.commit_next_freq(2_500_000, 1_000_000, k));
        assert_eq!(s.last_freq_update_time, Some(0));
        assert!(s.should_update(3_000_000));
    }

    #[test]
    fn rate_limit_before_4_12_counts_from_every_evaluation() {
        // 4.7 – 4.11 (sugov_update_commit): last_freq_update_time = time on every evaluated
        // update, before the "unchanged" check, so an unchanged evaluation also restarts the wait.
        let mut s = Schedutil { freq_update_delay_ns: 2_000_000, ..Schedutil::default() };
        let k = KernelVersion(4, 11, 0);
        assert!(s.commit_next_freq(0, 1_000_000, k));
        assert!(!s.commit_next_freq(2_500_000, 1_000_000, k));
        assert_eq!(s.last_freq_update_time, Some(2_500_000));
        assert!(!s.should_update(3_000_000));
        assert!(s.should_update(4_500_000));
    }

    #[test]
    fn iowait_boost_escapes_uclamp_max_before_5_18() {
        // util 200 under uclamp (0, 300) with a full boost (1024). 5.3 – 5.17: the util is
        // clamped (schedutil_cpu_util / effective_cpu_util) and sugov_iowait_apply then takes
        // max(boost, util), so the boost wins whole (read in 5.4 and 5.17 sources). 5.18 clamps
        // the boost as well (uclamp_rq_util_with on it, read in 5.19).
        let s = Schedutil::default();
        let clamp = Some((0, 300));
        assert_eq!(s.effective_perf(KernelVersion(5, 10, 0), 200, 1024, 1024, clamp), 1024);
        assert_eq!(s.effective_perf(KernelVersion(5, 17, 0), 200, 1024, 1024, clamp), 1024);
        assert_eq!(s.effective_perf(KernelVersion(5, 18, 0), 200, 1024, 1024, clamp), 300);
        assert_eq!(s.effective_perf(KernelVersion(6, 0, 0), 200, 1024, 1024, clamp), 300);
        // No boost: both eras clamp the util alike; without uclamp the boost counts in both.
        assert_eq!(s.effective_perf(KernelVersion(5, 10, 0), 400, 0, 1024, clamp), 300);
        assert_eq!(s.effective_perf(KernelVersion(5, 10, 0), 200, 512, 1024, None), 512);
    }

    #[test]
    fn runnable_boost_from_6_5() {
        // cpu_util(cpu, NULL, -1, boost=1), 6.5+: max(util_avg, util_est, runnable_avg); before
        // 6.5 the runnable average is not part of schedutil's util.
        assert_eq!(cfs_util(KernelVersion(6, 4, 0), 300, 250, 700), 300);
        assert_eq!(cfs_util(KernelVersion(6, 5, 0), 300, 250, 700), 700);
        assert_eq!(cfs_util(KernelVersion(6, 5, 0), 300, 450, 100), 450);
    }
}
