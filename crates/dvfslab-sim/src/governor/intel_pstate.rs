//! intel_pstate: the active-mode intel_pstate driver's own P-state selection.
//!
//! What it models: `intel_pstate` in active mode on Core parts, one instance per CPU. Every
//! `sample_rate_ms` the driver reads the APERF, MPERF and TSC deltas of its CPU and picks a
//! P-state (a ratio of 100 MHz), clamped by the global limits. `algorithm` selects how:
//! 0 = the load-based `get_target_pstate` of current kernels (with its I/O-wait boost),
//! 1 = the legacy PID controller of the Core "powersave" policy (3.9 … ≈4.14, in
//! intel_pstate_pid.rs), 2 = HWP with EPP, the hardware choosing autonomously (in
//! intel_pstate_hwp.rs, which states the model), 3 = the driver's `performance` policy (the
//! highest P-state the limits allow, no sampling). The limits are `min_perf_pct`,
//! `max_perf_pct` and `no_turbo`, combined with the policy limits as current kernels do.
//!
//! Differences from Linux:
//! - The load-based algorithm samples as Linux 4.6+ does: from the CPU's own scheduler
//!   callbacks once `sample_rate_ms` has passed since the last sample, so a busy CPU is
//!   sampled at a tick and a CPU waking from a long idle period at its wake-up, with a sample
//!   spanning the idle time (which pulls an old high request down before the task runs). The
//!   PID controller samples the same way (`intel_pstate_update_util`, 4.6+; its deferrable
//!   timer of ≤4.5 is not modelled); the HWP model runs on a governor timer. An interval in
//!   which the CPU never left idle (MPERF unchanged) is skipped as in Linux. The first sample
//!   after start is a baseline only, as in Linux.
//! - A policy spanning several CPUs (never the case for intel_pstate) is sampled on its first.
//! - Core parts only: ratios are kHz / 100 000; `min_pstate`, `max_pstate` (=
//!   `max_pstate_physical`, no config-TDP) and `turbo_pstate` (1-core turbo) come from the
//!   platform's min, base and max. No Atom FSB/VID tables, hybrid scaling or KNL counter shift.
//! - The PID and load-based algorithms coexist behind one knob; in Linux the Core parts used
//!   the PID up to ≈4.14 and only the load-based one afterwards. Limits use the ratio
//!   arithmetic of current kernels for every algorithm (≤4.11 used 14-bit percentages).
//! - Turbo is never BIOS-disabled; `no_turbo` caps requests at `max_pstate`. The default
//!   `min_perf_pct` 0 stands for "the minimum possible" (same effect). A spec with
//!   `min_perf_pct` above `max_perf_pct` is refused ([`limits_ordered`]), where Linux's store
//!   clamps the one written to the other: a spec sets both at once, so neither order of
//!   writes is implied. `per_cpu_perf_limits` and the read-only files (`turbo_pct`,
//!   `num_pstates`) are not modelled.
//! - The I/O-wait boost follows the kernel version: from 5.1 it starts at 1/8, doubles and
//!   caps at 1 on every scheduler callback of the CPU; 4.12 – 5.0 set it to 1.0 on any I/O
//!   wait and halve it at each evaluation, and from 4.14 an I/O wait also evaluates at once
//!   (see intel_pstate_load.rs). The load-based path of 4.7 – 4.11 (Atom only: a PID on the
//!   load with I/O-wait time counted busy) is not modelled; `algorithm=load` there runs 4.12's.
//! - The default `algorithm` is the load-based one at every kernel, where Linux ran the PID on
//!   Core desktops and servers up to 4.13 (dropped in 4.14) and HWP wherever the part has it;
//!   `algorithm=pid` on 4.14+ runs the 4.13 controller on the later kernel. The workloads that block on a storage device (dbench4, fio,
//!   iozone, seq-read, random-read, pgbench's WAL flush, gitsource's fsyncs) wake
//!   with the I/O-wait flag and so drive it.
//! - HWP's autonomous choice is a model (assumptions in intel_pstate_hwp.rs): every
//!   `activity_window_us` the hardware picks ⌈busy · delivered ratio / (0.9 · EPP/255)⌉
//!   (EPP 0: the maximum), within HWP min/max. `algorithm=hwp` needs a part with HWP
//!   (`"hwp": true` in the platform file, [`hwp_on_capable_part`]), as the driver only
//!   enables HWP where CPUID reports it.
//! - Every tunable is a whole number, as in sysfs and debugfs; a fraction is refused.
//!
//! Tunables (units, defaults): `algorithm` (0 load-based, 1 pid, 2 hwp, 3 performance;
//! default 0), `min_perf_pct` (%, 0), `max_perf_pct` (%, 100), `no_turbo` (bool, 0),
//! `sample_rate_ms` (ms, 10; algorithms 0 and 1), the PID's `setpoint` (%, 97), `p_gain_pct`
//! (%, 20), `i_gain_pct` (%, 0), `d_gain_pct` (%, 0), `deadband` (%, 0) (debugfs
//! `pstate_snb`), and for HWP `energy_performance_preference` (0–255, 128),
//! `activity_window_us` (µs, 10000), `hwp_dynamic_boost` (bool, 0).
//!
//! References: drivers/cpufreq/intel_pstate.c (4.11-era and 5.x); Documentation/admin-guide/
//! pm/intel_pstate.rst; Intel SDM vol. 3, section 14.4 (HWP); docs/governors.md.

use super::intel_pstate_hwp::{hwp_autonomous, DynamicBoost};
use super::intel_pstate_load::{get_target_pstate, IowaitBoost, IowaitRule, Then};
use super::intel_pstate_pid::{perf_scaled, Pid, PidParams};
use super::{Enables, Governor, GovernorInfo, PolicyCtx, Relation, UpdateFlags};
use crate::hw::platform::Platform;
use crate::spec::{Knob, KnobValues};

/// `algorithm=hwp`'s number.
const HWP_ALGORITHM: u64 = 2;

pub const INFO: GovernorInfo = GovernorInfo {
    name: "intel_pstate",
    description: "intel_pstate active mode: algorithm 0 = load-based get_target_pstate, 1 = legacy PID \
                  (Core powersave), 2 = HWP with EPP (autonomous hardware), 3 = performance policy",
    knobs: &[
        Knob::new("mode", "enum", 0.0, 0.0, 0.0, "active (passive mode is schedutil:driver=intel_cpufreq)")
            .choices(&[("active", 0.0)]),
        Knob::new("algorithm", "enum", 0.0, 0.0, 3.0, "load (get_target_pstate), pid, hwp, or performance policy")
            .choices(&[("load", 0.0), ("pid", 1.0), ("hwp", 2.0), ("performance", 3.0)]),
        Knob::new("min_perf_pct", "%", 0.0, 0.0, 100.0, "lowest P-state, % of the 1-core turbo ratio").integer(),
        Knob::new("max_perf_pct", "%", 100.0, 0.0, 100.0, "highest P-state, % of the 1-core turbo ratio").integer(),
        Knob::new("no_turbo", "bool", 0.0, 0.0, 1.0, "1: never request above the base ratio").integer(),
        Knob::new("sample_rate_ms", "ms", 10.0, 1.0, 1000.0, "sampling interval (algorithms 0 and 1)").integer(),
        Knob::new("setpoint", "%", 97.0, 1.0, 100.0, "PID: target share of the requested performance").integer(),
        Knob::new("p_gain_pct", "%", 20.0, 0.0, 100.0, "PID: proportional gain").integer(),
        Knob::new("i_gain_pct", "%", 0.0, 0.0, 100.0, "PID: integral gain").integer(),
        Knob::new("d_gain_pct", "%", 0.0, 0.0, 100.0, "PID: derivative gain").integer(),
        Knob::new("deadband", "%", 0.0, 0.0, 100.0, "PID: error below which nothing changes").integer(),
        Knob::new("energy_performance_preference", "0-255", 128.0, 0.0, 255.0, "HWP EPP: 0 performance .. 255 power")
            .integer(),
        Knob::new("activity_window_us", "us", 10_000.0, 100.0, 1_000_000.0, "HWP: hardware evaluation window (model)")
            .integer(),
        Knob::new("hwp_dynamic_boost", "bool", 0.0, 0.0, 1.0, "HWP: raise the minimum on repeated I/O waits").integer(),
    ],
    driver: Some("intel_pstate"),
    check: limits_ordered,
    check_platform: hwp_on_capable_part,
    build: |k: &KnobValues| Box::new(IntelPstate::new(k)),
    enables: Enables::NOTHING,
};

/// `min_perf_pct` may not exceed `max_perf_pct`.
fn limits_ordered(k: &KnobValues) -> super::Checked {
    let (min, max) = (k.get("min_perf_pct"), k.get("max_perf_pct"));
    if min <= max {
        return Ok(());
    }
    Err(("min_perf_pct", format!("must not exceed max_perf_pct, got min_perf_pct={min} and max_perf_pct={max}")))
}

/// The HWP algorithm runs only where the part has HWP (`intel_pstate_init` enables it from
/// CPUID's HWP feature bit; elsewhere the driver falls back to its own sampling).
fn hwp_on_capable_part(k: &KnobValues, plat: &Platform) -> super::Checked {
    if k.get_u64("algorithm") != HWP_ALGORITHM || plat.file.hwp {
        return Ok(());
    }
    Err((
        "algorithm",
        format!("hwp needs an HWP-capable part; {} has no HWP (its platform file lacks \"hwp\": true)", plat.id()),
    ))
}

/// kHz per ratio step on Core parts (`core_get_scaling`).
pub(super) const SCALING_KHZ: u32 = 100_000;

// Fixed point as the driver keeps it: 8 fraction bits for percentages and busy fractions,
// 14 for the APERF/MPERF ratio. Shifts of negative values round towards minus infinity.
pub(super) const FRAC_BITS: u32 = 8;
pub(super) const EXT_FRAC_BITS: u32 = 14;

pub(super) const fn int_tofp(x: i64) -> i64 {
    x << FRAC_BITS
}
pub(super) const fn fp_toint(x: i64) -> i64 {
    x >> FRAC_BITS
}
pub(super) const fn mul_fp(x: i64, y: i64) -> i64 {
    (x * y) >> FRAC_BITS
}
pub(super) fn div_fp(x: i64, y: i64) -> i64 {
    (x << FRAC_BITS) / y
}
pub(super) fn mul_ext_fp(x: u64, y: u64) -> u64 {
    ((x as u128 * y as u128) >> EXT_FRAC_BITS) as u64
}
pub(super) fn div_ext_fp(x: u64, y: u64) -> u64 {
    (((x as u128) << EXT_FRAC_BITS) / y.max(1) as u128) as u64
}
pub(super) fn fp_to_f64(x: i64) -> f64 {
    x as f64 / (1 << FRAC_BITS) as f64
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Algorithm {
    Load,
    Pid,
    Hwp,
    Performance,
}

/// The CPU's ratios (`pstate` in the driver).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pstates {
    pub min: i64,
    /// Highest non-turbo ratio (`max_pstate`), also HWP "guaranteed".
    pub max: i64,
    /// `max_pstate_physical`: the ratio MPERF counts at.
    pub max_physical: i64,
    /// 1-core turbo ratio, at least `max`.
    pub turbo: i64,
}

impl Pstates {
    fn from_khz((min_khz, base_khz, max_khz): (u32, u32, u32)) -> Pstates {
        let r = |khz: u32| (khz / SCALING_KHZ) as i64;
        Pstates { min: r(min_khz), max: r(base_khz), max_physical: r(base_khz), turbo: r(max_khz).max(r(base_khz)) }
    }
}

/// The global limits (sysfs `intel_pstate/`).
#[derive(Clone, Copy, Debug)]
pub(super) struct GlobalLimits {
    pub min_perf_pct: i64,
    pub max_perf_pct: i64,
    pub no_turbo: bool,
}

/// The ratio range requests are clamped to: `[max(min_pstate, min_perf_ratio),
/// max(that, max_perf_ratio)]`, as `intel_pstate_prepare_request` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Range {
    pub lo: i64,
    pub hi: i64,
}

impl Range {
    pub fn clamp(self, pstate: i64) -> i64 {
        pstate.clamp(self.lo, self.hi)
    }
}

/// Combine the policy limits (kHz) with the global percentages into the request range.
///
/// ```text
///   P_cap      = no_turbo ? max_pstate : turbo_pstate         (what cpuinfo.max_freq allows)
///   max_policy = P_cap · min(policy.max, P_cap·100 MHz) / (P_cap·100 MHz)
///   min_policy = max_policy if policy.min == policy.max, else the same for policy.min
///   global_max = ⌈turbo · max_perf_pct / 100⌉,  global_min = min(⌈turbo · min_perf_pct / 100⌉, global_max)
///   min_ratio  = min(max(min_policy, global_min), max_policy)
///   max_ratio  = max(min_policy, min(max_policy, global_max)),  min_ratio = min(min_ratio, max_ratio)
/// ```
/// Mirrors `intel_pstate_update_perf_limits` (5.x) followed by `intel_pstate_prepare_request`.
pub(super) fn perf_range(p: &Pstates, g: &GlobalLimits, policy_min_khz: u32, policy_max_khz: u32) -> Range {
    let cap = if g.no_turbo { p.max } else { p.turbo };
    let cap_khz = cap * SCALING_KHZ as i64;
    let policy_max = (policy_max_khz as i64).min(cap_khz);
    let policy_min = (policy_min_khz as i64).min(policy_max);
    let max_policy = cap * policy_max / cap_khz;
    let min_policy =
        if policy_min_khz == policy_max_khz { max_policy } else { (cap * policy_min / cap_khz).clamp(0, max_policy) };
    let global_max = (p.turbo * g.max_perf_pct + 99) / 100;
    let global_min = ((p.turbo * g.min_perf_pct + 99) / 100).clamp(0, global_max);
    let max_ratio = min_policy.max(max_policy.min(global_max));
    let min_ratio = min_policy.max(global_min).min(max_policy).min(max_ratio);
    let lo = p.min.max(min_ratio);
    Range { lo, hi: lo.max(max_ratio) }
}

/// Counter deltas of one sample, and the time since the previous one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Sample {
    pub aperf: u64,
    pub mperf: u64,
    pub tsc: u64,
    pub duration_ns: u64,
}

impl Sample {
    /// Δaperf/Δmperf in 14-bit fixed point (`core_avg_perf`).
    pub fn core_avg_perf(&self) -> u64 {
        div_ext_fp(self.aperf, self.mperf)
    }
    /// The ratio delivered while in C0, rounded down (`get_avg_pstate`).
    pub fn avg_pstate(&self, p: &Pstates) -> i64 {
        mul_ext_fp(p.max_physical as u64, self.core_avg_perf()) as i64
    }
    /// C0 residency Δmperf/Δtsc in 8-bit fixed point.
    pub fn busy_frac(&self) -> i64 {
        div_fp(self.mperf as i64, self.tsc.max(1) as i64)
    }
}

/// The previous counter readings of the sampled CPU (`prev_aperf`, ... in the driver).
#[derive(Clone, Copy, Debug, Default)]
struct Sampler {
    prev: (u64, u64, u64),
    time_ns: u64,
}

impl Sampler {
    fn baseline(&mut self, ctx: &mut dyn PolicyCtx, cpu: usize) {
        self.prev = ctx.cpu_counters(cpu);
        self.time_ns = ctx.now_ns();
    }

    /// A new sample, or None if the CPU stayed idle since the last one (MPERF unchanged).
    fn take(&mut self, ctx: &mut dyn PolicyCtx, cpu: usize) -> Option<Sample> {
        let (aperf, mperf, tsc) = ctx.cpu_counters(cpu);
        let (pa, pm, pt) = self.prev;
        if mperf == pm || tsc == pt {
            return None;
        }
        let now = ctx.now_ns();
        let s = Sample { aperf: aperf - pa, mperf: mperf - pm, tsc: tsc - pt, duration_ns: now - self.time_ns };
        self.prev = (aperf, mperf, tsc);
        self.time_ns = now;
        Some(s)
    }
}

struct IntelPstate {
    algorithm: Algorithm,
    limits: GlobalLimits,
    sample_rate_ns: u64,
    epp: u8,
    activity_window_ns: u64,
    dynamic_boost_on: bool,
    /// Set at the first start.
    cpu: Option<usize>,
    pstates: Pstates,
    range: Range,
    sampler: Sampler,
    iowait: IowaitBoost,
    pid: Pid,
    dynamic_boost: DynamicBoost,
    /// The HWP model's last autonomous choice, re-clamped when the boost moves the minimum.
    hwp_desired: i64,
    /// The load-based algorithm's last busy percentage (`fp_toint(sample->busy_scaled)`).
    last_busy_pct: i64,
}

impl IntelPstate {
    fn new(k: &KnobValues) -> IntelPstate {
        let algorithm = match k.get_u64("algorithm") {
            0 => Algorithm::Load,
            1 => Algorithm::Pid,
            HWP_ALGORITHM => Algorithm::Hwp,
            _ => Algorithm::Performance,
        };
        let pct = |name: &str| k.get_u64(name) as i64;
        let pid_params = PidParams {
            setpoint: pct("setpoint"),
            p_gain_pct: pct("p_gain_pct"),
            i_gain_pct: pct("i_gain_pct"),
            d_gain_pct: pct("d_gain_pct"),
            deadband: pct("deadband"),
        };
        IntelPstate {
            algorithm,
            limits: GlobalLimits {
                min_perf_pct: pct("min_perf_pct"),
                max_perf_pct: pct("max_perf_pct"),
                no_turbo: k.get("no_turbo") != 0.0,
            },
            sample_rate_ns: k.get_u64("sample_rate_ms") * 1_000_000,
            epp: k.get_u64("energy_performance_preference") as u8,
            activity_window_ns: k.get_u64("activity_window_us") * 1000,
            dynamic_boost_on: k.get("hwp_dynamic_boost") != 0.0,
            cpu: None,
            pstates: Pstates { min: 0, max: 0, max_physical: 0, turbo: 0 },
            range: Range { lo: 0, hi: 0 },
            sampler: Sampler::default(),
            iowait: IowaitBoost::default(),
            pid: Pid::new(&pid_params),
            dynamic_boost: DynamicBoost::default(),
            hwp_desired: 0,
            last_busy_pct: 0,
        }
    }

    /// The driver's sampling interval, or the modelled hardware's window with HWP.
    fn period_ns(&self) -> u64 {
        if self.algorithm == Algorithm::Hwp {
            self.activity_window_ns
        } else {
            self.sample_rate_ns
        }
    }

    /// A sample if `sample_rate_ms` has passed since the last one (intel_pstate_update_util)
    /// and the CPU did not stay idle all along.
    fn due_sample(&mut self, ctx: &mut dyn PolicyCtx, cpu: usize) -> Option<Sample> {
        if ctx.now_ns().saturating_sub(self.sampler.time_ns) < self.sample_rate_ns {
            return None;
        }
        self.sampler.take(ctx, cpu)
    }

    fn set_pstate(&mut self, ctx: &mut dyn PolicyCtx, pstate: i64) {
        ctx.request_khz((pstate.max(0) as u32) * SCALING_KHZ, Relation::H);
    }

    fn sample_load(&mut self, ctx: &mut dyn PolicyCtx, s: &Sample) {
        let boost = self.iowait.take();
        let t = get_target_pstate(&self.pstates, self.limits.no_turbo, s, boost);
        // sample->busy_scaled, which 4.14 – 5.0 read at the next I/O wait.
        self.last_busy_pct = fp_toint(t.busy_frac * 100);
        let pstate = self.range.clamp(t.target);
        ctx.explain(&[
            ("busy_frac", fp_to_f64(s.busy_frac())),
            ("iowait_boost", fp_to_f64(boost)),
            ("avg_pstate", t.avg_pstate as f64),
            ("target_pstate", t.target as f64),
            ("min_perf_ratio", self.range.lo as f64),
            ("max_perf_ratio", self.range.hi as f64),
            ("pstate", pstate as f64),
        ]);
        self.set_pstate(ctx, pstate);
    }

    fn sample_pid(&mut self, ctx: &mut dyn PolicyCtx, s: &Sample) {
        let current = (ctx.cur_khz() / SCALING_KHZ) as i64;
        let core_busy = perf_scaled(s, self.pstates.max_physical, current, self.sample_rate_ns);
        let terms = self.pid.calc(core_busy);
        let target = current - terms.out;
        let pstate = self.range.clamp(target);
        ctx.explain(&[
            ("busy_frac", fp_to_f64(s.busy_frac())),
            ("core_busy", fp_to_f64(core_busy)),
            ("current_pstate", current as f64),
            ("pid_err", fp_to_f64(terms.err)),
            ("pid_p", fp_to_f64(terms.p)),
            ("pid_i", fp_to_f64(terms.i)),
            ("pid_d", fp_to_f64(terms.d)),
            ("pid_out", terms.out as f64),
            ("target_pstate", target as f64),
            ("pstate", pstate as f64),
        ]);
        self.set_pstate(ctx, pstate);
    }

    /// The range HWP_REQUEST carries: the limits, with the minimum raised by dynamic boost.
    fn hwp_range(&self) -> Range {
        let lo = self.range.lo.max(self.dynamic_boost.boost_min.min(self.range.hi));
        Range { lo, hi: self.range.hi }
    }

    fn sample_hwp(&mut self, ctx: &mut dyn PolicyCtx, s: &Sample) {
        let range = self.hwp_range();
        let c = hwp_autonomous(&self.pstates, s, self.epp, range);
        self.hwp_desired = c.desired;
        ctx.explain(&[
            ("busy_frac", c.busy),
            ("avg_pstate", c.delivered),
            ("demand_pstate", c.demand),
            ("util_target", c.util_target),
            ("epp", self.epp as f64),
            ("hwp_min", range.lo as f64),
            ("hwp_max", range.hi as f64),
            ("pstate", c.desired as f64),
        ]);
        self.set_pstate(ctx, c.desired);
    }
}

impl Governor for IntelPstate {
    fn start(&mut self, ctx: &mut dyn PolicyCtx) {
        self.iowait.rule = IowaitRule::for_kernel(ctx.kernel());
        self.pstates = Pstates::from_khz(ctx.cpuinfo_khz());
        self.range = perf_range(&self.pstates, &self.limits, ctx.min_khz(), ctx.max_khz());
        if self.algorithm == Algorithm::Performance {
            // The highest P-state the limits allow; no sampling at all.
            let top = self.range.hi;
            ctx.explain(&[("max_perf_ratio", top as f64)]);
            self.set_pstate(ctx, top);
            return;
        }
        if self.cpu.is_none() {
            // First start: begin at the lowest P-state; the first sample is a baseline.
            let cpu = ctx.cpus()[0];
            self.cpu = Some(cpu);
            self.sampler.baseline(ctx, cpu);
            self.hwp_desired = self.range.lo;
            let lo = self.range.lo;
            ctx.explain(&[("min_perf_ratio", lo as f64)]);
            self.set_pstate(ctx, lo);
        } else {
            let cur = self.range.clamp((ctx.cur_khz() / SCALING_KHZ) as i64);
            self.set_pstate(ctx, cur);
        }
        if self.algorithm == Algorithm::Hwp {
            ctx.arm_timer(self.period_ns());
        }
    }

    fn timer(&mut self, ctx: &mut dyn PolicyCtx) {
        let Some(cpu) = self.cpu else { return };
        ctx.arm_timer(self.period_ns());
        // Only the HWP model runs on the timer: the modelled hardware's evaluation window.
        let Some(s) = self.sampler.take(ctx, cpu) else { return };
        if self.algorithm == Algorithm::Hwp {
            self.sample_hwp(ctx, &s);
        }
    }

    fn util_update(&mut self, ctx: &mut dyn PolicyCtx, cpu: usize, flags: UpdateFlags) {
        // Only the CPU's own callbacks count (the driver ignores remote ones), except that
        // HWP keeps a remote callback's I/O-wait flag for the next local one.
        if self.cpu != Some(cpu) || flags.remote {
            if self.cpu == Some(cpu) && self.algorithm == Algorithm::Hwp {
                self.dynamic_boost.remote(flags.iowait);
            }
            return;
        }
        let (now, tick) = (ctx.now_ns(), ctx.tick_ns());
        match self.algorithm {
            Algorithm::Load => {
                let sample = match self.iowait.update(now, tick, flags.iowait, self.last_busy_pct) {
                    Then::Interval => self.due_sample(ctx, cpu),
                    Then::Now => self.sampler.take(ctx, cpu),
                    Then::Nothing => None,
                };
                if let Some(s) = sample {
                    self.sample_load(ctx, &s);
                }
            }
            Algorithm::Pid => {
                // intel_pstate_update_util (4.6+): the PID also samples from the scheduler's
                // callback once sample_rate_ms has passed since the last sample.
                if let Some(s) = self.due_sample(ctx, cpu) {
                    self.sample_pid(ctx, &s);
                }
            }
            Algorithm::Hwp if self.dynamic_boost_on => {
                let p = &self.pstates;
                if self.dynamic_boost.update(now, tick, flags.iowait, self.range, p.max) {
                    // HWP_REQUEST's minimum moved: the hardware follows at once.
                    let range = self.hwp_range();
                    let pstate = range.clamp(self.hwp_desired);
                    ctx.explain(&[
                        ("hwp_boost_min", self.dynamic_boost.boost_min as f64),
                        ("hwp_min", range.lo as f64),
                        ("hwp_max", range.hi as f64),
                        ("pstate", pstate as f64),
                    ]);
                    self.set_pstate(ctx, pstate);
                }
            }
            _ => {}
        }
    }

    fn wants_util_updates(&self) -> bool {
        match self.algorithm {
            Algorithm::Load | Algorithm::Pid => true,
            Algorithm::Hwp => self.dynamic_boost_on,
            Algorithm::Performance => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governor::GovernorConfig;
    use crate::spec::Spec;

    const SNB: Pstates = Pstates { min: 16, max: 34, max_physical: 34, turbo: 38 };

    #[test]
    fn fixed_point_rounds_down_like_shifts() {
        assert_eq!(mul_fp(51, -767), -153);
        assert_eq!(fp_toint(-25), -1);
        assert_eq!(div_fp(20, 100), 51);
        assert_eq!(div_ext_fp(12, 10), 19660);
        assert_eq!(mul_ext_fp(24, 19660), 28);
    }

    #[test]
    fn limits_combine_as_current_kernels() {
        let g = |min, max, no_turbo| GlobalLimits { min_perf_pct: min, max_perf_pct: max, no_turbo };
        let (lo, hi) = (1_600_000, 3_800_000);
        let cases = [
            (g(0, 100, false), lo, hi, 16, 38),
            (g(0, 50, false), lo, hi, 16, 19),   // ⌈38 · 0.5⌉ = 19
            (g(80, 100, false), lo, hi, 31, 38), // ⌈30.4⌉ = 31
            (g(0, 100, true), lo, hi, 16, 34),   // no turbo: base
            (g(90, 50, false), lo, hi, 19, 19),  // min above max is clamped to it
            (g(0, 100, false), lo, 2_500_000, 16, 25),
            (g(0, 100, false), 2_000_000, 2_000_000, 20, 20),
            (g(0, 10, false), lo, hi, 16, 16), // never below min_pstate
        ];
        for (limits, min_khz, max_khz, want_lo, want_hi) in cases {
            let r = perf_range(&SNB, &limits, min_khz, max_khz);
            assert_eq!((r.lo, r.hi), (want_lo, want_hi), "{limits:?} policy [{min_khz}, {max_khz}]");
        }
    }

    #[test]
    fn util_callbacks_only_where_needed_and_boost_stays_within_limits() {
        let build = |text: &str| {
            let spec = Spec::parse(text, "governor").unwrap();
            IntelPstate::new(&KnobValues::resolve(&spec, INFO.knobs, "governor", &[]).unwrap().0)
        };
        assert!(build("intel_pstate").wants_util_updates()); // the I/O-wait boost
                                                             // The PID samples from the scheduler's callbacks (intel_pstate_update_util, 4.6+).
        assert!(build("intel_pstate:algorithm=1").wants_util_updates());
        assert!(!build("intel_pstate:algorithm=2").wants_util_updates());
        let mut g = build("intel_pstate:algorithm=2,hwp_dynamic_boost=1");
        assert!(g.wants_util_updates());
        // max_perf_pct below guaranteed (23): the boost reaches 23 but HWP max stays 20.
        g.range = Range { lo: 12, hi: 20 };
        for t in 0..4 {
            g.dynamic_boost.update(t * 1_000_000, 4_000_000, true, g.range, 23);
        }
        assert_eq!(g.dynamic_boost.boost_min, 23);
        assert_eq!(g.hwp_range(), Range { lo: 20, hi: 20 });
    }

    #[test]
    fn tunables_are_checked_by_name() {
        assert!(GovernorConfig::parse("intel_pstate:algorithm=1,max_perf_pct=50,no_turbo=1").is_ok());
        let (named, _) = GovernorConfig::parse("intel_pstate:mode=active,algorithm=pid").unwrap();
        assert_eq!(named.values.get("algorithm"), 1.0);
        for (spec, name) in [
            ("intel_pstate:algorithm=4", "algorithm"),
            ("intel_pstate:algorithm=fast", "algorithm"),
            ("intel_pstate:algorithm=1.5", "algorithm"),
            ("intel_pstate:mode=passive", "mode"),
            ("intel_pstate:max_perf_pct=101", "max_perf_pct"),
            ("intel_pstate:min_perf_pct=-1", "min_perf_pct"),
            ("intel_pstate:no_turbo=2", "no_turbo"),
            ("intel_pstate:energy_performance_preference=256", "energy_performance_preference"),
            ("intel_pstate:sample_rate_ms=0", "sample_rate_ms"),
        ] {
            let err = GovernorConfig::parse(spec).err().expect(spec).to_string();
            assert!(err.contains(name), "{spec}: {err}");
        }
    }
}
