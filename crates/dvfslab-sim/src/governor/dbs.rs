//! The sampling machinery ondemand and conservative share ("DBS", demand-based switching):
//! when to take a sample, and the policy's load over the window since the previous one.
//!
//! Mirrors `drivers/cpufreq/cpufreq_governor.c` of kernels ≥ 4.7 (`dbs_update`).
//! There is no timer: a sample is taken from the scheduler's cpufreq callback (enqueue, dequeue,
//! tick) of any CPU of the policy, once `sample_delay` has passed since the previous one, so
//! an idle CPU takes no samples and the first one after an idle spell covers all of it.
//!
//! ```text
//!   on callback at t:   t − last_sample < sample_delay  →  nothing        (dbs_update_util_handler)
//!                       else last_sample = t; sample_delay = governor update (µs) · 1000
//!
//!   per CPU j, since its previous sample, in µs:                          (dbs_update)
//!     elapsed = Δwall,  idle = Δidle (≥ 0)
//!     elapsed = 0                           → load = prev_load
//!     idle > 2·S  and prev_load ≠ 0         → load = prev_load, prev_load = 0   (first sample after a long idle)
//!     otherwise                             → load = 100·(elapsed − idle) / elapsed, prev_load = load
//!     idle > 2·S                            → idle_periods = min(idle_periods, idle / S)
//!   policy load = max over its CPUs          S = sampling_rate · rate_mult
//!   max_sample_load = max over its CPUs of the window's own load (prev_load if elapsed = 0),
//!                     never the load carried over a long idle
//! ```
//! `max_sample_load` is read only by conservative, in the kernels whose `cs_dbs_update` takes
//! deferred steps down at low load only (conservative.rs); the others compute it too, unused.
//! A long idle is recognised from the idle time, as Linux does since commit 7592019634f8
//! (2018); before it the elapsed time was used.
//!
//! The `sampling_rate` default and floor follow cpufreq_dbs_governor_init and
//! store_sampling_rate of the simulated kernel (`lat` the transition latency in µs, 1 if 0):
//!
//! ```text
//!             default                                    floor (lower requests are raised)
//!   ≥ 4.15    max(2·TICK_USEC, transition delay)         2·TICK_USEC   (CPUFREQ_DBS_MIN_SAMPLING_INTERVAL)
//!   4.14      transition delay                           none          (cpufreq_policy_transition_delay_us)
//!   < 4.14    max(min_sampling_rate, 1000 · lat)         min_sampling_rate = max(gov_min, 20 · lat)
//!               gov_min: ondemand 10 ms (od_init, NO_HZ idle accounting: MICRO_FREQUENCY_MIN_SAMPLE_RATE)
//!                        conservative 2 · 10 ticks (cs_init: MIN_SAMPLING_RATE_RATIO · jiffies_to_usecs(10))
//! ```
//! The "transition delay" is the cpufreq core's, per kernel version (kernel.rs); before 4.14 the
//! DBS governors did not read the driver's `transition_delay_us`.

use super::PolicyCtx;
use crate::kernel::KernelVersion;

/// Kernel whose cpufreq_dbs_governor_init dropped min_sampling_rate for the transition delay
/// ("cpufreq: governor: Drop min_sampling_rate").
const TRANSITION_DELAY_KERNEL: KernelVersion = KernelVersion(4, 14, 0);
/// Kernel whose store_sampling_rate and cpufreq_dbs_governor_init keep the rate at two ticks or
/// more (CPUFREQ_DBS_MIN_SAMPLING_INTERVAL); 4.14 had no floor at all.
const TWO_TICK_FLOOR_KERNEL: KernelVersion = KernelVersion(4, 15, 0);
/// Before 4.14, ondemand's own minimum with NO_HZ idle accounting (MICRO_FREQUENCY_MIN_SAMPLE_RATE).
const LEGACY_OD_MIN_SAMPLING_RATE_US: u64 = 10_000;
/// Before 4.14, conservative's own minimum was this many times `jiffies_to_usecs(10)`, the
/// ten ticks it wanted per sample (MIN_SAMPLING_RATE_RATIO, cs_init).
const MIN_SAMPLING_RATE_RATIO: u64 = 2;
/// Before 4.14 the minimum also grew with the transition latency (MIN_LATENCY_MULTIPLIER,
/// include/linux/cpufreq.h, 20 at every version that had it).
const LEGACY_MIN_LATENCY_MULTIPLIER: u64 = 20;
/// Before 4.14 the default was this many times the transition latency (LATENCY_MULTIPLIER).
const LATENCY_MULTIPLIER: u64 = 1000;

/// Which DBS governor samples: before 4.14 each set its own minimum sampling rate in its
/// `init` (od_init, cs_init).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DbsGovernor {
    Ondemand,
    Conservative,
}

/// Sampling state of one policy (policy_dbs_info) and of each of its CPUs (cpu_dbs_info).
pub(super) struct Dbs {
    /// `sampling_rate` as given; 0 = the default for the kernel, driver and tick.
    requested_rate_us: u64,
    /// The sampling rate in force (µs).
    pub sampling_rate_us: u64,
    /// Multiplier of the next sampling period (ondemand's sampling_down_factor at max).
    pub rate_mult: u64,
    /// Whole sampling periods slept through at the last sample (the least over the CPUs that
    /// were idle for more than two periods); None when none was (UINT_MAX in the kernel).
    pub idle_periods: Option<u64>,
    /// The busiest CPU's load over the last window alone (max_sample_load): unlike the
    /// policy load, never a load carried over a long idle.
    pub max_sample_load: u32,
    last_sample_ns: u64,
    sample_delay_ns: u64,
    cpus: Vec<CpuDbs>,
    started: bool,
    /// Count idle time with a task waiting on I/O as busy (`io_is_busy`, ondemand only).
    pub io_busy: bool,
    governor: DbsGovernor,
}

#[derive(Clone, Copy)]
struct CpuDbs {
    cpu: usize,
    prev_update_us: u64,
    prev_idle_us: u64,
    prev_load: u32,
}

impl Dbs {
    pub fn new(requested_rate_us: u64, governor: DbsGovernor) -> Dbs {
        Dbs {
            governor,
            requested_rate_us,
            sampling_rate_us: 0,
            rate_mult: 1,
            idle_periods: None,
            max_sample_load: 0,
            last_sample_ns: 0,
            sample_delay_ns: 0,
            cpus: Vec::new(),
            started: false,
            io_busy: false,
        }
    }

    /// Governor start (the first call) and limits change (every call). Returns true on the
    /// first call, when the governor should initialise its own state.
    pub fn start(&mut self, ctx: &mut dyn PolicyCtx) -> bool {
        let first = !self.started;
        if first {
            self.started = true;
            self.sampling_rate_us = resolve_sampling_rate_us(self.requested_rate_us, self.governor, ctx);
            self.rate_mult = 1;
            self.idle_periods = None;
            self.last_sample_ns = 0;
            let now_us = ctx.now_ns() / 1000;
            self.cpus = ctx
                .cpus()
                .iter()
                .map(|&cpu| CpuDbs {
                    cpu,
                    prev_update_us: now_us,
                    prev_idle_us: idle_us(ctx, cpu, self.io_busy),
                    prev_load: 0,
                })
                .collect();
        }
        // cpufreq_dbs_governor_limits, which the core also runs right after start: bring the
        // frequency inside the limits and let the next callback sample at once.
        let (min, max, cur) = (ctx.min_khz(), ctx.max_khz(), ctx.cur_khz());
        if max < cur {
            ctx.request_khz(max, super::Relation::H);
        } else if min > cur {
            ctx.request_khz(min, super::Relation::L);
        }
        self.sample_delay_ns = 0;
        first
    }

    /// Whether a scheduler callback with `flags` takes a sample (dbs_update_util_handler); if
    /// so it is recorded as the last one. A remote callback the policy cannot act on is
    /// ignored (cpufreq_this_cpu_can_update; cpufreq_can_do_remote_dvfs since 4.14, when
    /// remote callbacks appeared).
    pub fn sample_due(&mut self, ctx: &dyn PolicyCtx, flags: super::UpdateFlags) -> bool {
        if !ctx.this_cpu_can_update(flags) {
            return false;
        }
        let now_ns = ctx.now_ns();
        if now_ns.saturating_sub(self.last_sample_ns) < self.sample_delay_ns {
            return false;
        }
        self.last_sample_ns = now_ns;
        true
    }

    /// The delay (µs) the governor asked for until its next sample.
    pub fn set_sample_delay_us(&mut self, delay_us: u64) {
        self.sample_delay_ns = delay_us * 1000;
    }

    /// Whether a sample delay is set (a zero delay makes ondemand skip its sub-sample).
    pub fn sample_delay_set(&self) -> bool {
        self.sample_delay_ns > 0
    }

    /// The policy's load (%) since the previous sample: the busiest CPU's (dbs_update).
    pub fn update(&mut self, ctx: &dyn PolicyCtx) -> u32 {
        let sampling_us = self.sampling_rate_us * self.rate_mult;
        let now_us = ctx.now_ns() / 1000;
        let (mut max_load, mut max_sample_load) = (0, 0);
        let mut idle_periods: Option<u64> = None;
        for j in self.cpus.iter_mut() {
            let cur_idle_us = idle_us(ctx, j.cpu, self.io_busy);
            let elapsed_us = now_us - j.prev_update_us;
            let idle_us = cur_idle_us.saturating_sub(j.prev_idle_us);
            j.prev_update_us = now_us;
            j.prev_idle_us = cur_idle_us;
            let long_idle = idle_us > 2 * sampling_us;
            // What this window measured: two samples at the same µs repeat the last load.
            let sample_load = if elapsed_us == 0 { j.prev_load } else { window_load_pct(elapsed_us, idle_us) };
            let load = if elapsed_us == 0 {
                j.prev_load
            } else if long_idle && j.prev_load != 0 {
                // Waking from a long idle: the window says "idle" whatever the task needs, so
                // reuse the load from before the idle spell, once.
                std::mem::take(&mut j.prev_load)
            } else {
                j.prev_load = sample_load;
                sample_load
            };
            if long_idle {
                let periods = idle_us / sampling_us;
                idle_periods = Some(idle_periods.map_or(periods, |p| p.min(periods)));
            }
            max_load = max_load.max(load);
            max_sample_load = max_sample_load.max(sample_load);
        }
        self.idle_periods = idle_periods;
        self.max_sample_load = max_sample_load;
        max_load
    }
}

/// Busy share (%) of a window: 100 · (elapsed − idle) / elapsed, truncated; 0 if the idle
/// time is not below the elapsed time.
pub(super) fn window_load_pct(elapsed_us: u64, idle_us: u64) -> u32 {
    if elapsed_us > idle_us {
        (100 * (elapsed_us - idle_us) / elapsed_us) as u32
    } else {
        0
    }
}

/// Cumulative idle time of `cpu` (µs), NO_HZ micro-accounted, as `get_cpu_idle_time` gives it:
/// all non-busy time, less the time with a task asleep in I/O wait when `io_busy`.
fn idle_us(ctx: &dyn PolicyCtx, cpu: usize, io_busy: bool) -> u64 {
    let idle_ns = ctx.now_ns() - ctx.cpu_busy_ns(cpu);
    let iowait_ns = if io_busy { ctx.cpu_iowait_ns(cpu) } else { 0 };
    idle_ns.saturating_sub(iowait_ns) / 1000
}

/// The sampling rate in force: the requested one (0 = the default), raised to the floor.
fn resolve_sampling_rate_us(requested_us: u64, governor: DbsGovernor, ctx: &dyn PolicyCtx) -> u64 {
    let kernel = ctx.kernel();
    // cpuinfo.transition_latency in µs, 0 read as 1 (cpufreq_dbs_governor_init before 4.14).
    let latency_us = ctx.transition_latency_ns().map(|ns| (ns / 1000).max(1));
    let floor = sampling_rate_floor_us(kernel, governor, ctx.tick_ns(), latency_us);
    let rate = if requested_us == 0 {
        default_sampling_rate_us(kernel, governor, ctx.tick_ns(), ctx.default_transition_delay_us(), latency_us)
    } else {
        requested_us
    };
    rate.max(floor)
}

/// Lowest sampling rate the kernel accepts (µs): two ticks from 4.15, none in 4.14, before
/// that min_sampling_rate (the governor's own minimum, or 20 × the transition latency if
/// longer; cpufreq_dbs_governor_init).
pub(super) fn sampling_rate_floor_us(
    kernel: KernelVersion,
    governor: DbsGovernor,
    tick_ns: u64,
    latency_us: Option<u64>,
) -> u64 {
    if kernel >= TWO_TICK_FLOOR_KERNEL {
        2 * tick_ns / 1000
    } else if kernel >= TRANSITION_DELAY_KERNEL {
        0
    } else {
        let governor_min = match governor {
            DbsGovernor::Ondemand => LEGACY_OD_MIN_SAMPLING_RATE_US,
            // jiffies_to_usecs rounds up (HZ=300: 33 334 µs for 10 ticks).
            DbsGovernor::Conservative => MIN_SAMPLING_RATE_RATIO * (10 * tick_ns).div_ceil(1000),
        };
        governor_min.max(LEGACY_MIN_LATENCY_MULTIPLIER * latency_us.unwrap_or(0))
    }
}

/// Default sampling rate (µs) for a kernel, governor, tick, the cpufreq core's transition
/// delay (cpufreq_policy_transition_delay_us, already per kernel version; read from 4.14) and
/// the driver's latency (None = unknown).
pub(super) fn default_sampling_rate_us(
    kernel: KernelVersion,
    governor: DbsGovernor,
    tick_ns: u64,
    transition_delay_us: u64,
    latency_us: Option<u64>,
) -> u64 {
    if kernel >= TRANSITION_DELAY_KERNEL {
        return sampling_rate_floor_us(kernel, governor, tick_ns, latency_us).max(transition_delay_us);
    }
    // Before 4.14: 1000 × the latency, at least min_sampling_rate. Linux then refused to run
    // the governor on a driver whose latency was unknown (above its 10 ms limit); here it
    // samples at the governor's own minimum.
    let floor = sampling_rate_floor_us(kernel, governor, tick_ns, latency_us);
    floor.max(LATENCY_MULTIPLIER * latency_us.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HZ250_NS: u64 = 4_000_000;

    #[test]
    fn load_is_the_busy_share_of_the_window() {
        assert_eq!(window_load_pct(10_000, 0), 100);
        assert_eq!(window_load_pct(10_000, 1_500), 85);
        assert_eq!(window_load_pct(10_000, 9_999), 0); // 0.01 % truncates to 0
        assert_eq!(window_load_pct(10_000, 10_000), 0);
        assert_eq!(window_load_pct(10_000, 12_000), 0);
    }

    use DbsGovernor::{Conservative, Ondemand};

    #[test]
    fn default_sampling_rate_follows_the_kernel_era() {
        // acpi-cpufreq reporting 10 µs; the transition delay per era comes from
        // kernel.rs, DBS takes at least two ticks from 4.15 (8 ms at HZ=250, 2 ms at HZ=1000).
        let lat = Some(10);
        for gov in [Ondemand, Conservative] {
            assert_eq!(default_sampling_rate_us(KernelVersion(5, 9, 0), gov, HZ250_NS, 10_000, lat), 10_000);
            assert_eq!(default_sampling_rate_us(KernelVersion(6, 9, 0), gov, HZ250_NS, 2_000, lat), 8_000);
            assert_eq!(default_sampling_rate_us(KernelVersion(6, 12, 0), gov, HZ250_NS, 15, lat), 8_000);
            assert_eq!(default_sampling_rate_us(KernelVersion(6, 12, 0), gov, 1_000_000, 15, lat), 2_000);
            assert_eq!(default_sampling_rate_us(KernelVersion(6, 9, 0), gov, 1_000_000, 2_000, lat), 2_000);
            // 4.14 took the transition delay as it came: intel_cpufreq's 500 µs.
            assert_eq!(default_sampling_rate_us(KernelVersion(4, 14, 0), gov, HZ250_NS, 500, Some(20)), 500);
        }
        // Before 4.14: 1000 × latency, at least min_sampling_rate; a slow driver (300 µs) gives
        // 300 ms. The cpufreq core's delay is not read (intel_cpufreq's 500 µs on 4.12).
        let od = |kernel, delay, lat| default_sampling_rate_us(kernel, Ondemand, HZ250_NS, delay, lat);
        assert_eq!(od(KernelVersion(4, 9, 0), 10_000, lat), 10_000);
        assert_eq!(od(KernelVersion(4, 9, 0), 300_000, Some(300)), 300_000);
        assert_eq!(od(KernelVersion(4, 9, 0), u64::MAX, None), 10_000);
        assert_eq!(od(KernelVersion(4, 12, 0), 500, Some(20)), 20_000);
        // conservative's own minimum is 20 ticks: 80 ms at HZ=250, where ondemand takes 10 ms.
        let cs = |kernel, tick, lat| default_sampling_rate_us(kernel, Conservative, tick, 10_000, lat);
        assert_eq!(cs(KernelVersion(4, 12, 0), HZ250_NS, lat), 80_000);
        assert_eq!(cs(KernelVersion(4, 13, 0), 1_000_000, lat), 20_000);
        assert_eq!(cs(KernelVersion(4, 9, 0), HZ250_NS, Some(300)), 300_000);
        assert_eq!(cs(KernelVersion(4, 14, 0), HZ250_NS, lat), 10_000);
    }

    #[test]
    fn sampling_rate_floor() {
        for gov in [Ondemand, Conservative] {
            assert_eq!(sampling_rate_floor_us(KernelVersion(6, 1, 0), gov, HZ250_NS, Some(10)), 8_000);
            assert_eq!(sampling_rate_floor_us(KernelVersion(6, 1, 0), gov, 3_333_333, Some(10)), 6_666);
            assert_eq!(sampling_rate_floor_us(KernelVersion(4, 15, 0), gov, HZ250_NS, Some(10)), 8_000);
            assert_eq!(sampling_rate_floor_us(KernelVersion(4, 14, 0), gov, HZ250_NS, Some(10)), 0);
        }
        // Before 4.14: max(the governor's minimum, 20 × latency).
        assert_eq!(sampling_rate_floor_us(KernelVersion(4, 9, 0), Ondemand, HZ250_NS, Some(10)), 10_000);
        assert_eq!(sampling_rate_floor_us(KernelVersion(4, 9, 0), Ondemand, HZ250_NS, Some(1450)), 29_000);
        assert_eq!(sampling_rate_floor_us(KernelVersion(4, 9, 0), Conservative, HZ250_NS, Some(10)), 80_000);
        assert_eq!(sampling_rate_floor_us(KernelVersion(4, 9, 0), Conservative, HZ250_NS, Some(5000)), 100_000);
        // jiffies_to_usecs(10) at HZ=300 rounds up to 33 334 µs.
        assert_eq!(sampling_rate_floor_us(KernelVersion(4, 9, 0), Conservative, 3_333_333, None), 66_668);
    }
}
