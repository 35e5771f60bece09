//! CPU capacities on asymmetric (big.LITTLE) platforms, whether a utilisation fits a CPU, and
//! the run-queue uclamp aggregation (`kernel/sched/fair.c`, `kernel/sched/sched.h`; docs/heterogeneous.md).
//!
//! ```text
//!   capacity_of(cpu)      = cap_orig − cpufreq pressure       (no RT/DL/IRQ signals to subtract)
//!   fits_capacity(u, c)   : 80pct   u · 1280 < c · 1024                        (u < 0.8 · c)
//!                           tick    approximate_util_avg(u, TICK_USEC) < c     (margins series:
//!                                   util must not outgrow the CPU before the next tick)
//!   capacity_greater(a,b) = a · 1024 > b · 1078                                (≈ 5 %)
//!
//!   util_fits_cpu(u, min, max, cpu) -> 1 fits, 0 does not, −1 fits but cannot honour min:
//!       fits = fits_capacity(u, capacity_of(cpu))
//!       uclamp in use:  fits |= max ≤ cap_orig (unless both are 1024)   a capped task fits
//!                       −1 if fits and u < min(min, max) > actual capacity
//!
//!   rq uclamp (min, max) = max over the runnable tasks' effective clamps;
//!                          idle rq: (0, the last departed task's max)
//! ```
//! Mirrors fair.c's `fits_capacity`, `util_fits_cpu`, `capacity_greater` and core.c's uclamp
//! max-aggregation; the code is our own.

use crate::engine::EventQueue;
use crate::kernel::KernelVersion;
use crate::machine::Machine;
use crate::sched::pelt::{approximate_util_avg, Invariance, PeltScale, SchedAvg, SCHED_CAPACITY_SCALE};
use crate::sched::Sched;

/// Which `fits_capacity` the scheduler uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FitsRule {
    /// Mainline: util below 80 % of the capacity.
    Margin80,
    /// The margins series (`fits=tick`): util still below the capacity after growing for `delta_us`
    /// of PELT time (one tick, shifted by the PELT multiplier).
    Tick { delta_us: u64 },
}

impl FitsRule {
    /// The rule for knob value `fits` (0 = 80pct, 1 = tick) at tick period `tick_ns`.
    pub fn new(fits: u64, tick_ns: u64, pelt_lshift: u32) -> FitsRule {
        match fits {
            0 => FitsRule::Margin80,
            _ => FitsRule::Tick { delta_us: (tick_ns / 1000) << pelt_lshift },
        }
    }
}

/// `fits_capacity(util, capacity)` under `rule`.
pub fn fits_capacity(util: u64, capacity: u64, rule: FitsRule) -> bool {
    match rule {
        FitsRule::Margin80 => util * 1280 < capacity * 1024,
        FitsRule::Tick { delta_us } => approximate_util_avg(util, delta_us) < capacity,
    }
}

/// `a` is more than ~5 % above `b` (capacity_greater).
pub fn capacity_greater(a: u64, b: u64) -> bool {
    a * 1024 > b * 1078
}

/// The first kernel whose PELT applies invariance to its clock (`update_rq_clock_pelt`)
/// rather than to each contribution (`accumulate_sum`).
const PELT_CLOCK_KERNEL: KernelVersion = KernelVersion(5, 1, 0);

/// The capacities of one CPU that util_fits_cpu compares against.
#[derive(Clone, Copy, Debug)]
pub struct CpuCaps {
    /// `arch_scale_cpu_capacity`: 1024 for the biggest CPU at its reference frequency.
    pub cap_orig: u64,
    /// `capacity_of`: what is left for CFS.
    pub capacity: u64,
    /// `get_actual_cpu_capacity`: cap_orig minus thermal and cpufreq pressure.
    pub actual: u64,
}

/// util_fits_cpu: 1 fits, 0 does not, −1 fits but the CPU cannot deliver the task's
/// uclamp_min. Without uclamp in use only the utilisation counts.
pub fn util_fits_cpu(util: u64, uclamp_min: u64, uclamp_max: u64, caps: CpuCaps, rule: FitsRule, uclamp: bool) -> i8 {
    let mut fits = fits_capacity(util, caps.capacity, rule);
    if !uclamp {
        return fits as i8;
    }
    // A task capped at or below this CPU's capacity fits it whatever its util, except that
    // no cap (1024) on the biggest CPU must not hide a real misfit.
    let max_fits =
        !(caps.cap_orig == SCHED_CAPACITY_SCALE && uclamp_max == SCHED_CAPACITY_SCALE) && uclamp_max <= caps.cap_orig;
    fits = fits || max_fits;
    let uclamp_min = uclamp_min.min(uclamp_max);
    if fits && util < uclamp_min && uclamp_min > caps.actual {
        return -1;
    }
    fits as i8
}

/// Scheduler state for asymmetric platforms, EAS and uclamp.
pub(crate) struct Hetero {
    pub fits: FitsRule,
    /// CPU capacities differ (SD_ASYM_CPUCAPACITY): misfit and capacity-aware wake-ups.
    pub asym: bool,
    /// Misfit tasks are detected and moved up (update_misfit_status, group_misfit_task: 4.20+).
    pub misfit: bool,
    /// How a CFS wake-up on an asymmetric platform looks for its CPU in this kernel.
    pub asym_wakeup: AsymWakeup,
    /// Energy-aware wake-up placement runs (EAS preconditions hold and `eas=1`).
    pub eas: bool,
    pub em: Option<crate::sched::energy_model::EnergyModel>,
    /// The root domain's overutilized flag (only meaningful with EAS).
    pub overutilized: bool,
    /// The kernel has uclamp (5.3+).
    pub uclamp_supported: bool,
    /// `uclamp_is_used()`: some task asked for a clamp.
    pub uclamp_used: bool,
    /// Per CPU: the uclamp_max an idle run-queue keeps (the last departed task's).
    pub uclamp_max_idle: Vec<u64>,
    /// Runnable boosting in the utilisation EAS predicts frequencies with (6.5+).
    pub runnable_boost: bool,
    pub migrations: Option<Vec<crate::observe::Migration>>,
}

/// Wake-up placement of a CFS task on an asymmetric platform, by kernel version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsymWakeup {
    /// Before 4.9: the symmetric path (wake_affine, select_idle_sibling), capacity-blind.
    Symmetric,
    /// 4.9-5.6: `wake_cap` sends a task that does not fit the smaller of the waking and the
    /// previous CPU to the slow path (find_idlest_cpu, SD_BALANCE_WAKE being set at the
    /// asymmetric level); one that fits takes the symmetric path.
    WakeCap,
    /// 5.7+: `select_idle_capacity` scans for an idle CPU the task fits.
    SelectIdleCapacity,
}

impl AsymWakeup {
    fn for_kernel(kernel: KernelVersion) -> AsymWakeup {
        if kernel >= KernelVersion(5, 7, 0) {
            AsymWakeup::SelectIdleCapacity
        } else if kernel >= KernelVersion(4, 9, 0) {
            AsymWakeup::WakeCap
        } else {
            AsymWakeup::Symmetric
        }
    }
}

/// The first kernel whose build_perf_domains refuses EAS without frequency invariance
/// (`arch_scale_freq_invariant`, 5.11; 5.0 – 5.10 ran EAS on a non-invariant PELT).
const EAS_NEEDS_INVARIANCE_KERNEL: KernelVersion = KernelVersion(5, 11, 0);

/// What decides whether EAS can run (`sched_is_eas_possible` since 6.9, build_perf_domains
/// before, `kernel/sched/topology.c`).
pub(crate) struct EasInputs {
    pub knob_on: bool,
    /// The governor declares that EAS may run under it ([`crate::governor::Enables::eas`]).
    pub governor_enables_eas: bool,
    pub invariant: bool,
    pub kernel: KernelVersion,
}

impl Hetero {
    pub fn new(
        plat: &crate::hw::platform::Platform,
        tables: &[Vec<u32>],
        fits: FitsRule,
        eas: EasInputs,
        explain: bool,
    ) -> Hetero {
        let first = plat.cpus.first().map_or(0, |c| c.cap_orig);
        let asym = plat.cpus.iter().any(|c| c.cap_orig != first);
        let em = crate::sched::energy_model::EnergyModel::from_platform(plat, tables, eas.kernel);
        let no_smt = plat.file.topology.threads_per_core == 1;
        Hetero {
            fits,
            asym,
            misfit: asym && eas.kernel >= KernelVersion(4, 20, 0),
            asym_wakeup: AsymWakeup::for_kernel(eas.kernel),
            eas: eas.knob_on
                && asym
                && em.is_some()
                && no_smt
                && eas.governor_enables_eas
                && (eas.invariant || eas.kernel < EAS_NEEDS_INVARIANCE_KERNEL)
                && eas.kernel >= KernelVersion(5, 0, 0),
            em,
            overutilized: false,
            uclamp_supported: eas.kernel >= KernelVersion(5, 3, 0),
            uclamp_used: false,
            uclamp_max_idle: vec![SCHED_CAPACITY_SCALE; plat.ncpus()],
            runnable_boost: eas.kernel >= KernelVersion(6, 5, 0),
            migrations: explain.then(Vec::new),
        }
    }

    /// Whether clamps take effect now (`uclamp_is_used()` on a kernel that has uclamp).
    pub fn uclamp_active(&self) -> bool {
        self.uclamp_supported && self.uclamp_used
    }
}

impl Sched {
    /// The task's effective clamps (uclamp_eff_value): its requests, or the defaults (min 0,
    /// RT tasks 1024; max 1024).
    pub(crate) fn task_uclamp(&self, task: usize) -> (u64, u64) {
        let a = &self.tasks[task].attrs;
        let rt_default = if a.policy.is_fair() { 0 } else { SCHED_CAPACITY_SCALE };
        let min = a.uclamp_min.map_or(rt_default, |v| v as u64).min(SCHED_CAPACITY_SCALE);
        let max = a.uclamp_max.map_or(SCHED_CAPACITY_SCALE, |v| v as u64).min(SCHED_CAPACITY_SCALE);
        (min, max)
    }

    /// The run-queue clamps of `cpu`: max-aggregated over its runnable tasks; an idle
    /// run-queue reads min 0 and keeps the last max. None when uclamp is not in use.
    pub(crate) fn rq_uclamp(&self, cpu: usize) -> Option<(u64, u64)> {
        if !self.hetero.uclamp_active() {
            return None;
        }
        let c = &self.cpus[cpu];
        let mut tasks = c.curr.iter().chain(c.queue.iter()).peekable();
        if tasks.peek().is_none() {
            return Some((0, self.hetero.uclamp_max_idle[cpu]));
        }
        Some(tasks.map(|&t| self.task_uclamp(t)).fold((0, 0), |(lo, hi), (a, b)| (lo.max(a), hi.max(b))))
    }

    /// Note a task leaving `cpu`'s run-queue: an idle run-queue keeps its uclamp_max.
    pub(crate) fn uclamp_dequeued(&mut self, task: usize, cpu: usize) {
        if self.hetero.uclamp_active() {
            self.hetero.uclamp_max_idle[cpu] = self.task_uclamp(task).1;
        }
    }

    /// A task's clamp requests changed (or it was created with some): uclamp is in use.
    pub(crate) fn uclamp_requested(&mut self, min: Option<u32>, max: Option<u32>) {
        if min.is_some() || max.is_some() {
            self.hetero.uclamp_used = true;
        }
    }

    /// How PELT scales an update on `cpu` now: its `arch_scale_freq_capacity` and
    /// `arch_scale_cpu_capacity`, applied to the clock from 5.1 and to each contribution
    /// before (see [`Invariance`]).
    pub(crate) fn pelt_scale(&self, machine: &Machine, cpu: usize) -> PeltScale {
        let invariance = if machine.kernel >= PELT_CLOCK_KERNEL { Invariance::Clock } else { Invariance::Contribution };
        PeltScale {
            time_shift: machine.pelt_shift,
            invariance,
            freq: self.cpus[cpu].freq_scale,
            cpu: machine.plat.cpus[cpu].cap_orig,
        }
    }

    /// The PELT clock of `cpu` as a reader outside an update sees it: now on an idle CPU
    /// (its clock is re-synced), the last update on a busy one.
    pub(crate) fn pelt_clock_estimate(&self, q: &EventQueue, cpu: usize) -> u64 {
        let c = &self.cpus[cpu];
        if c.curr.is_none() {
            q.now() - c.lost_idle
        } else {
            c.clock_pelt - c.lost_idle
        }
    }

    /// `read` of the task's averages, decayed to now if it sleeps (sync_entity_load_avg), as
    /// last updated if it is runnable.
    pub(crate) fn task_avg_now(&self, q: &EventQueue, task: usize, read: impl Fn(&SchedAvg) -> u64) -> u64 {
        let t = &self.tasks[task];
        if t.state != crate::sched::task::TaskState::Sleeping || !t.placed {
            return read(&t.avg);
        }
        let mut avg = t.avg.clone();
        avg.update(self.pelt_clock_estimate(q, t.cpu), 0, 0, false, t.weight(), self.pelt_shift);
        read(&avg)
    }

    /// The task's util_avg decayed to now if it sleeps.
    pub(crate) fn task_util_avg_now(&self, q: &EventQueue, task: usize) -> u64 {
        self.task_avg_now(q, task, |a| a.util_avg)
    }

    /// task_util_est(p) = max(util_avg, util_est).
    pub(crate) fn task_util_est(&self, q: &EventQueue, task: usize) -> u64 {
        self.task_util_avg_now(q, task).max(self.tasks[task].util_est.value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// EAS runs under any governor that declares it enables EAS, whatever its name, on an
    /// asymmetric platform without SMT with an Energy Model, invariant, 5.0+.
    #[test]
    fn eas_follows_the_governors_declaration_not_its_name() {
        let m = crate::governor::core::test_machine("pixel6", "performance");
        let eas_under = |governor_enables_eas: bool| {
            let eas =
                EasInputs { knob_on: true, governor_enables_eas, invariant: true, kernel: KernelVersion(6, 1, 0) };
            Hetero::new(&m.plat, &m.tables, FitsRule::Margin80, eas, false).eas
        };
        assert!(eas_under(true));
        assert!(!eas_under(false));
        // Frequency invariance is required from 5.11 only.
        let eas_with = |invariant: bool, kernel: KernelVersion| {
            let eas = EasInputs { knob_on: true, governor_enables_eas: true, invariant, kernel };
            Hetero::new(&m.plat, &m.tables, FitsRule::Margin80, eas, false).eas
        };
        assert!(eas_with(false, KernelVersion(5, 10, 0)));
        assert!(eas_with(false, KernelVersion(5, 0, 0)));
        assert!(!eas_with(false, KernelVersion(5, 11, 0)));
        assert!(eas_with(true, KernelVersion(5, 11, 0)));
        assert!(!eas_with(true, KernelVersion(4, 19, 0)));
        let enabling: Vec<&str> = crate::governor::REGISTRY.iter().filter(|g| g.enables.eas).map(|g| g.name).collect();
        assert_eq!(enabling, ["schedutil"]);
    }

    /// The scheduler's CPU capacities on arm64 come from the device tree only from 4.15; on
    /// 4.14 every CPU is 1024, so the machine is symmetric to placement (no asymmetric wake-up
    /// path, no EAS, no misfit), while x86 keeps its capacities at every version.
    #[test]
    fn arm64_cpu_capacities_reach_the_scheduler_from_4_15() {
        let caps = |preset: &str, kernel: &str| -> Vec<u64> {
            let m = crate::governor::core::test_machine(preset, &format!("schedutil:kernel={kernel}"));
            m.plat.cpus.iter().map(|c| c.cap_orig).collect()
        };
        assert!(caps("pixel6", "4.14").iter().all(|&c| c == SCHED_CAPACITY_SCALE));
        assert!(caps("juno-r2", "4.9").iter().all(|&c| c == SCHED_CAPACITY_SCALE));
        let at_4_15 = caps("pixel6", "4.15");
        assert_eq!(at_4_15.iter().max(), Some(&SCHED_CAPACITY_SCALE));
        assert!(at_4_15.iter().any(|&c| c < 300), "{at_4_15:?}");
        let m = crate::governor::core::test_machine("pixel6", "schedutil:kernel=4.14");
        let eas =
            EasInputs { knob_on: true, governor_enables_eas: true, invariant: true, kernel: KernelVersion(4, 14, 0) };
        let h = Hetero::new(&m.plat, &m.tables, FitsRule::Margin80, eas, false);
        assert!(!h.asym);
    }

    /// The largest util that fits `cap` (0..=1024 scanned).
    fn largest_fitting(cap: u64, rule: FitsRule) -> u64 {
        (0..=SCHED_CAPACITY_SCALE).filter(|&u| fits_capacity(u, cap, rule)).max().unwrap()
    }

    #[test]
    fn fits_table_of_the_margins_series() {
        // (capacity, mainline 80 %, tick rule at HZ=250, at HZ=1000).
        let table = [
            (160, 127, 83, 141),
            (256, 204, 188, 239),
            (384, 307, 327, 370),
            (459, 367, 409, 446),
            (512, 409, 466, 501),
            (768, 614, 745, 762),
            (1024, 819, 1024, 1023),
        ];
        let hz250 = FitsRule::new(1, 4_000_000, 0);
        let hz1000 = FitsRule::new(1, 1_000_000, 0);
        assert_eq!(hz250, FitsRule::Tick { delta_us: 4000 });
        for (cap, pct80, tick250, tick1000) in table {
            assert_eq!(largest_fitting(cap, FitsRule::Margin80), pct80, "80% cap {cap}");
            assert_eq!(largest_fitting(cap, hz250), tick250, "tick HZ=250 cap {cap}");
            assert_eq!(largest_fitting(cap, hz1000), tick1000, "tick HZ=1000 cap {cap}");
        }
        // The rule does not depend on the tick for the 80 % margin.
        assert_eq!(FitsRule::new(0, 1_000_000, 2), FitsRule::Margin80);
        // The PELT multiplier stretches the tick: 4 ms at 16 ms half-life = 8000 PELT µs.
        assert_eq!(FitsRule::new(1, 4_000_000, 1), FitsRule::Tick { delta_us: 8000 });
    }

    #[test]
    fn capacity_greater_needs_about_five_percent() {
        assert!(capacity_greater(1024, 498));
        assert!(!capacity_greater(1024, 1000)); // 2.4 % more
        assert!(capacity_greater(1024, 972)); // 1024·1024 > 972·1078
        assert!(!capacity_greater(1024, 973));
        assert!(!capacity_greater(160, 160));
    }

    #[test]
    fn util_fits_cpu_cases() {
        // util_fits_cpu on Pixel 6 capacities (little 160, mid 498, big 1024).
        let caps = |c: u64| CpuCaps { cap_orig: c, capacity: c, actual: c };
        let r = FitsRule::Margin80;
        // Without uclamp only util counts.
        assert_eq!(util_fits_cpu(127, 0, 1024, caps(160), r, false), 1);
        assert_eq!(util_fits_cpu(128, 0, 1024, caps(160), r, false), 0);
        assert_eq!(util_fits_cpu(128, 0, 100, caps(160), r, false), 0, "clamps ignored when unused");
        // A task capped at or below the CPU's capacity fits it whatever its util.
        assert_eq!(util_fits_cpu(900, 0, 160, caps(160), r, true), 1);
        assert_eq!(util_fits_cpu(900, 0, 161, caps(160), r, true), 0);
        // No cap on the biggest CPU does not make a util of 900 fit it.
        assert_eq!(util_fits_cpu(900, 0, 1024, caps(1024), r, true), 0);
        assert_eq!(util_fits_cpu(900, 0, 1000, caps(1024), r, true), 1);
        // uclamp_min above the CPU's capacity: fits, but cannot be honoured (−1).
        assert_eq!(util_fits_cpu(50, 500, 1024, caps(160), r, true), -1);
        assert_eq!(util_fits_cpu(50, 500, 1024, caps(498), r, true), -1);
        assert_eq!(util_fits_cpu(50, 500, 1024, caps(1024), r, true), 1);
        // uclamp_min is limited by uclamp_max (an inversion: max wins for fitting).
        assert_eq!(util_fits_cpu(50, 500, 150, caps(160), r, true), 1);
        // A util above uclamp_min does not need the boost.
        assert_eq!(util_fits_cpu(120, 100, 1024, caps(160), r, true), 1);
        // Reduced capacity (capacity_of below cap_orig) is what the util is compared with.
        let pressured = CpuCaps { cap_orig: 1024, capacity: 600, actual: 600 };
        assert_eq!(util_fits_cpu(500, 0, 1024, pressured, r, false), 0);
    }
}
