//! PELT — per-entity load tracking (`kernel/sched/pelt.c`), plus util_est (`kernel/sched/fair.c`) and the
//! closed-form helpers of Qais Yousef's margins series (`approximate_util_avg`, `approximate_runtime`).
//!
//! Behaviour follows the kernel's `kernel/sched/pelt.c`; the code and comments here are our own.
//!
//! ```text
//! Units: 1 pus = 1024 ns of PELT clock; 1 period = 1024 pus (1 048 576 ns).
//! Each signal is a geometric series over past periods, newest first:
//!
//!     sum = c0 + c1*y + c2*y^2 + ...        y^32 = 1/2,  ci <= 1024
//!
//! An update covering `d` pus that starts `period_contrib` pus into a period and crosses
//! p >= 1 period boundaries is cut into three segments:
//!
//!     |<-- d1 -->|<------ p-1 full periods ------>|<-- d3 -->|
//!   last         boundary                      boundary      now
//!   (d1 = 1024 - period_contrib, d3 = (period_contrib + d) mod 1024)
//!
//!   sum' = sum * y^p                                      age what was there    [decay_load]
//!        + d1 * y^p                                       tail of old period    ]
//!        + 1024 * (y + y^2 + ... + y^(p-1))               the full periods      ] [__accumulate_pelt_segments]
//!        + d3                                             current period, fresh ]
//!
//! The full-period term is a finite geometric series: the infinite one,
//! LOAD_AVG_MAX = 1024 * (1 + y + y^2 + ...), minus its tail from n = p (= LOAD_AVG_MAX * y^p)
//! minus its n = 0 term:
//!
//!   1024 * sum_{n=1}^{p-1} y^n = LOAD_AVG_MAX - LOAD_AVG_MAX * y^p - 1024
//!
//! (all integer; LOAD_AVG_MAX is the fixed point of the truncating recursion, 47742.)
//! If no boundary is crossed (p = 0) the d pus simply add to the current period.   [accumulate_sum]
//! The caller's state gates the contributions (running => runnable => load).       [___update_load_sum]
//!
//! Averages are refreshed only when p >= 1, dividing by the largest sum reachable at this
//! position inside the period, so an always-running entity reads ~1024 everywhere:
//!
//!   avg = sum / (LOAD_AVG_MAX - 1024 + period_contrib)       [___update_load_avg, get_pelt_divider]
//! ```

/// Fixed-point shift of capacities and utilizations.
pub const SCHED_CAPACITY_SHIFT: u32 = 10;
/// Capacity of the biggest CPU at its reference frequency.
pub const SCHED_CAPACITY_SCALE: u64 = 1024;
/// Half-life in periods: y^LOAD_AVG_PERIOD = 1/2.
pub const LOAD_AVG_PERIOD: u64 = 32;
/// Maximum value of a sum (integer-evaluated `Σ 1024·y^n`), not the real limit 47788.
pub const LOAD_AVG_MAX: u64 = 47742;
/// Divider at the very start of a period (period_contrib = 0).
pub const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;
/// util_est hysteresis: changes smaller than ~1 % of capacity are not sampled.
pub const UTIL_EST_MARGIN: u64 = SCHED_CAPACITY_SCALE / 100;

/// EWMA weight of util_est: a new sample counts for 1/4.
const UTIL_EST_WEIGHT_SHIFT: u32 = 2;

/// Beyond this many periods every representable value has decayed to zero (63 half-lives).
const DECAY_HORIZON: u64 = LOAD_AVG_PERIOD * 63;

/// `floor(2^32 * y^k)` for k in 0..32 — generated data (`sched-pelt.h`); reproduced by
/// `floor((2^32 - 1) * y^k)` in f64, which a unit test checks.
const YINV: [u32; LOAD_AVG_PERIOD as usize] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb, 0xdbfbb796, 0xd744fcc9,
    0xd2a81d91, 0xce248c14, 0xc9b9bd85, 0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46, 0xb504f333, 0xb123f581,
    0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9, 0x9837f050, 0x94f4efa8, 0x91c3d373,
    0x8ea4398a, 0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
];

/// v * y^n with the kernel's integer arithmetic (y^32 = 1/2), zero past 63 half-lives.
///
/// Whole half-lives are a shift; the remainder uses the 32.32 table with a 96-bit product so
/// large sums (load_sum of heavy run-queues) cannot overflow.
pub fn decay_load(v: u64, n: u64) -> u64 {
    if n > DECAY_HORIZON {
        return 0;
    }
    let v = v >> (n / LOAD_AVG_PERIOD);
    let f = YINV[(n % LOAD_AVG_PERIOD) as usize];
    ((u128::from(v) * u128::from(f)) >> 32) as u64
}

/// `cap_scale(v, s) = v * s >> 10`
pub fn cap_scale(v: u64, s: u64) -> u64 {
    (v * s) >> SCHED_CAPACITY_SHIFT
}

/// Contribution of an interval that crossed `periods >= 1` boundaries: the old period's tail
/// `d1`, the full periods in between (geometric series), and the new period's head `d3`.
fn accumulate_segments(periods: u64, d1: u64, d3: u64) -> u64 {
    let tail = decay_load(d1, periods);
    // LOAD_AVG_MAX - LOAD_AVG_MAX*y^p - 1024 is >= 0 for p >= 1 (it is 0 for p = 1).
    let full = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - SCHED_CAPACITY_SCALE;
    tail + full + d3
}

/// Where frequency and CPU-capacity invariance enter PELT ([`PeltScale`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invariance {
    /// 5.1+ ("sched/fair: Update scale invariance of PELT"): the rq's clock_pelt runs slower
    /// than its task clock by cap_orig/1024 · freq_scale/1024 while busy and catches up when
    /// idle (update_rq_clock_pelt); contributions are whole time, so an always-running task
    /// reaches 1024 at any frequency.
    Clock,
    /// Before 5.1 (accumulate_sum, and __update_load_avg before 4.12): time is the task clock
    /// and each contribution is scaled instead, load and runnable by freq_scale, util by
    /// freq_scale and then cap_orig, so an always-running task settles at
    /// freq_scale · cap_orig / 1024.
    Contribution,
}

/// How one PELT update scales time and contributions on a CPU: the PELT multiplier's time
/// shift, and the CPU's `arch_scale_freq_capacity` and `arch_scale_cpu_capacity` at the update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeltScale {
    pub time_shift: u32,
    pub invariance: Invariance,
    pub freq: u64,
    pub cpu: u64,
}

impl PeltScale {
    /// No invariance at all (scales of 1024): decays, and tests.
    pub fn unscaled(time_shift: u32) -> PeltScale {
        PeltScale { time_shift, invariance: Invariance::Clock, freq: SCHED_CAPACITY_SCALE, cpu: SCHED_CAPACITY_SCALE }
    }

    /// How far the rq's PELT clock moves while it runs for `delta_ns` of task clock
    /// (update_rq_clock_pelt from 5.1; before, PELT read the task clock itself).
    pub fn clock_delta(&self, delta_ns: u64) -> u64 {
        match self.invariance {
            Invariance::Clock => cap_scale(cap_scale(delta_ns, self.cpu), self.freq),
            Invariance::Contribution => delta_ns,
        }
    }

    /// The (frequency, capacity) factors each contribution is scaled by.
    fn contribution_scales(&self) -> (u64, u64) {
        match self.invariance {
            Invariance::Clock => (SCHED_CAPACITY_SCALE, SCHED_CAPACITY_SCALE),
            Invariance::Contribution => (self.freq, self.cpu),
        }
    }
}

/// PELT state of one entity or run-queue (`struct sched_avg`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchedAvg {
    /// PELT-clock ns of the last accounted instant (advanced in whole time units only).
    pub last_update_time: u64,
    /// pus already accumulated in the current, incomplete period (0..1023).
    pub period_contrib: u32,
    pub load_sum: u64,
    pub runnable_sum: u64,
    pub util_sum: u64,
    pub load_avg: u64,
    pub runnable_avg: u64,
    pub util_avg: u64,
}

impl SchedAvg {
    /// Account the interval since `last_update_time` up to `now` (PELT clock, ns) during which the
    /// entity had `load` (weight-less: number/weight runnable, 0 = blocked), `runnable` and `running`.
    /// `weight` multiplies load_sum into load_avg (1 for run-queues). `time_shift` is 10 normally and
    /// 10 - lshift for the PELT multiplier (multiplier 1/2/4 -> lshift 0/1/2), as the out-of-tree
    /// PELT multiplier patch (`sched_pelt_lshift`) does. Contributions are not scaled.
    /// Returns true when the averages were refreshed (a period boundary was crossed).
    pub fn update(&mut self, now: u64, load: u64, runnable: u64, running: bool, weight: u64, time_shift: u32) -> bool {
        self.update_scaled(now, load, runnable, running, weight, PeltScale::unscaled(time_shift))
    }

    /// [`SchedAvg::update`] with the CPU's scales: before 5.1 each contribution is scaled by
    /// them ([`Invariance::Contribution`]); from 5.1 they act on the clock, not here.
    ///
    /// Inlined with `accumulate` and `refresh` into each caller (every enqueue, dequeue,
    /// switch and tick runs it for the CPU and the task): left to the compiler, the three stay
    /// calls, which costs 1.6–2.8% of a run's instructions.
    #[inline(always)]
    pub fn update_scaled(
        &mut self,
        now: u64,
        load: u64,
        runnable: u64,
        running: bool,
        weight: u64,
        scale: PeltScale,
    ) -> bool {
        let time_shift = scale.time_shift;
        debug_assert!(time_shift <= SCHED_CAPACITY_SHIFT, "PELT multiplier must be >= 1");
        if now < self.last_update_time {
            // Clock went backwards (e.g. a re-synced clock): restart from here, account nothing.
            self.last_update_time = now;
            return false;
        }
        let delta = (now - self.last_update_time) >> time_shift;
        if delta == 0 {
            return false;
        }
        // Only whole units are consumed; the sub-unit remainder is carried to the next update.
        self.last_update_time += delta << time_shift;

        // A blocked entity can be neither runnable nor running, whatever the caller says.
        let (runnable, running) = if load == 0 { (0, false) } else { (runnable, running) };
        let (freq, cpu) = scale.contribution_scales();
        if !self.accumulate(delta, load, runnable, running, freq, cpu) {
            return false;
        }
        self.refresh(weight);
        true
    }

    /// Divider used for the averages: PELT_MIN_DIVIDER + period_contrib.
    pub fn divider(&self) -> u64 {
        PELT_MIN_DIVIDER + u64::from(self.period_contrib)
    }

    /// Set util_avg/runnable_avg and re-derive the sums from them (new-task init, migration attach).
    ///
    /// The sums are rebased on this average's own divider so the next refresh reproduces `util`
    /// instead of jumping. load_* are left alone (they carry the weight, set by the caller).
    pub fn set_util(&mut self, util: u64) {
        let div = self.divider();
        self.util_avg = util;
        self.runnable_avg = util;
        self.util_sum = util * div;
        self.runnable_sum = util * div;
    }

    /// Set load_avg and re-derive load_sum from it for an entity of `weight`, as
    /// attach_entity_load_avg does for a new task's full initial load: the next refresh
    /// reproduces `load` instead of dropping to what the task has run since.
    pub fn set_load(&mut self, load: u64, weight: u64) {
        self.load_avg = load;
        self.load_sum = (load * self.divider() / weight.max(1)).max(1);
    }

    /// Remove a migrating task's contribution (util) from a run-queue average, flooring util_sum at util_avg * PELT_MIN_DIVIDER as the kernel does.
    ///
    /// The floor matters because sum and avg drift apart through truncation: subtracting
    /// `util * divider` from a sum that is slightly short would leave a sum that, at the next
    /// refresh, reads lower than the avg we just kept. Only util is touched.
    pub fn remove_util(&mut self, util: u64) {
        let div = self.divider();
        self.util_avg = self.util_avg.saturating_sub(util);
        self.util_sum = self.util_sum.saturating_sub(util * div).max(self.util_avg * PELT_MIN_DIVIDER);
    }

    /// Add an attaching task's contribution.
    ///
    /// The task's sum is taken as `util * divider` of this run-queue (its sums are rebased on
    /// the destination's period position when attached).
    pub fn add_util(&mut self, util: u64) {
        self.util_avg += util;
        self.util_sum += util * self.divider();
    }

    /// Add `delta` pus of history to the sums (kernel `accumulate_sum`), each contribution
    /// scaled by `freq` (and util's by `cpu` as well; 1024 = unscaled, as from 5.1). Returns
    /// true when at least one period boundary was crossed, i.e. when the averages should be
    /// refreshed.
    ///
    #[inline(always)]
    fn accumulate(&mut self, delta: u64, load: u64, runnable: u64, running: bool, freq: u64, cpu: u64) -> bool {
        let total = delta + u64::from(self.period_contrib);
        let periods = total / SCHED_CAPACITY_SCALE;
        let mut contrib = delta;
        if periods > 0 {
            self.load_sum = decay_load(self.load_sum, periods);
            self.runnable_sum = decay_load(self.runnable_sum, periods);
            self.util_sum = decay_load(self.util_sum, periods);
            let d3 = total % SCHED_CAPACITY_SCALE;
            // A blocked entity contributes nothing, so the segment split is only needed when loaded.
            if load != 0 {
                let d1 = SCHED_CAPACITY_SCALE - u64::from(self.period_contrib);
                contrib = accumulate_segments(periods, d1, d3);
            }
            self.period_contrib = d3 as u32;
        } else {
            self.period_contrib = total as u32;
        }
        // cap_scale by 1024 is exact: unscaled runs add what they always did.
        let contrib = cap_scale(contrib, freq);
        if load != 0 {
            self.load_sum += load * contrib;
        }
        if runnable != 0 {
            self.runnable_sum += (runnable * contrib) << SCHED_CAPACITY_SHIFT;
        }
        if running {
            self.util_sum += contrib * cpu;
        }
        periods > 0
    }

    /// Recompute the averages from the sums (kernel `___update_load_avg`).
    #[inline(always)]
    fn refresh(&mut self, weight: u64) {
        let div = self.divider();
        self.load_avg = weight * self.load_sum / div;
        self.runnable_avg = self.runnable_sum / div;
        self.util_avg = self.util_sum / div;
    }
}

/// Initial util of a forked task (`post_init_entity_util_avg`, kernel/sched/fair.c). `cap_orig`
/// the CPU capacity, `rq_util`/`rq_load` the destination cfs_rq util_avg and load_avg,
/// `task_weight` 1024 for nice 0.
///
/// A new task gets a share of the rq's current util proportional to its weight, but never more
/// than half of the spare capacity, so a fork storm cannot claim more than the CPU has left.
pub fn initial_task_util(cap_orig: u64, rq_util: u64, rq_load: u64, task_weight: u64) -> u64 {
    // Signed on purpose: an over-utilized rq (util > cap) gives a new task nothing.
    let spare_half = (cap_orig as i64 - rq_util as i64) / 2;
    if spare_half <= 0 {
        return 0;
    }
    let spare_half = spare_half as u64;
    if rq_util == 0 {
        return spare_half;
    }
    (rq_util * task_weight / (rq_load + 1)).min(spare_half)
}

/// The shape of util_est_update (util_est_dequeue before 5.12) in kernel/sched/fair.c.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UtilEstForm {
    /// 4.17 – 5.4: the sample moves the EWMA by a quarter of the difference, up as well as
    /// down; the task's estimate is max(ewma, enqueued), enqueued being the last sample.
    EwmaOnly,
    /// 5.5 – 6.7: as above, plus UTIL_EST_FASTUP ("sched/fair/util_est: Implement faster
    /// ramp-up EWMA on utilization increases", 5.5): a sample above the EWMA replaces it.
    FastUp,
    /// 6.8+ ("sched/fair: Remove SCHED_FEAT(UTIL_EST_FASTUP)" and "sched/fair: Simplify
    /// util_est"): fast-up always, no `enqueued`, the estimate is the EWMA; and a sample from
    /// a task that waited more than it ran leaves the EWMA alone ("sched/pelt: Avoid
    /// underestimation of task utilization", 6.8; absent in 6.5 and 6.6).
    #[default]
    Single,
}

/// Which util_est rules a kernel applies when a task goes to sleep (the default: the default
/// kernel's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UtilEstRules {
    pub form: UtilEstForm,
    /// A sample above the CPU's capacity is dropped (no proof of idle time): 5.1 ("sched/pelt:
    /// Skip updating util_est when utilization is higher than CPU's capacity", with the PELT
    /// clock; absent in 5.0, present in 5.1 and 5.2) to 6.15 ("sched/fair: Allow decaying
    /// util_est when util_avg > CPU capa" removed it; present in 6.14, absent in 6.18).
    pub capacity_guard: bool,
    /// Before 6.8, a sample within the margin of the EWMA still records `enqueued` when that
    /// moved by the margin or more ("sched/pelt: Fix task util_est update filtering", 5.13);
    /// before 5.13 such a sample writes nothing.
    pub enqueued_filter: bool,
}

impl Default for UtilEstRules {
    fn default() -> UtilEstRules {
        UtilEstRules::for_kernel(crate::kernel::KernelVersion::DEFAULT)
    }
}

impl UtilEstRules {
    /// The rules of `kernel` (util_est itself came in 4.17; earlier kernels get 4.17's rules,
    /// and schedutil does not read the estimate there).
    pub fn for_kernel(kernel: crate::kernel::KernelVersion) -> UtilEstRules {
        use crate::kernel::KernelVersion;
        let form = if kernel >= KernelVersion(6, 8, 0) {
            UtilEstForm::Single
        } else if kernel >= KernelVersion(5, 5, 0) {
            UtilEstForm::FastUp
        } else {
            UtilEstForm::EwmaOnly
        };
        UtilEstRules {
            form,
            capacity_guard: (KernelVersion(5, 1, 0)..KernelVersion(6, 16, 0)).contains(&kernel),
            enqueued_filter: kernel >= KernelVersion(5, 13, 0),
        }
    }
}

/// util_est of a task (util_est_update in kernel/sched/fair.c, by [`UtilEstRules`]).
///
/// `unchanged` is the kernel's UTIL_AVG_UNCHANGED flag: set when a sample is taken, cleared when
/// the task's PELT average next moves. While set, a further sleep would only re-sample the
/// same util_avg, so it is skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UtilEst {
    pub ewma: u64,
    /// The last sample taken (util_est.enqueued), before 6.8.
    pub enqueued: u64,
    pub unchanged: bool,
    pub rules: UtilEstRules,
}

impl UtilEst {
    /// An empty estimate following `rules`.
    pub fn with_rules(rules: UtilEstRules) -> UtilEst {
        UtilEst { rules, ..UtilEst::default() }
    }

    /// The task's estimate without the flag (`_task_util_est`): the EWMA from 6.8, before that
    /// max(ewma, enqueued).
    pub fn value(&self) -> u64 {
        match self.rules.form {
            UtilEstForm::Single => self.ewma,
            UtilEstForm::EwmaOnly | UtilEstForm::FastUp => self.ewma.max(self.enqueued),
        }
    }

    /// Called at a dequeue-for-sleep with the task's util_avg and runnable_avg and the CPU's cap_orig.
    pub fn on_sleep(&mut self, util_avg: u64, runnable_avg: u64, cap_orig: u64) {
        if self.unchanged {
            return;
        }
        if self.rules.form != UtilEstForm::Single {
            self.sample_before_6_8(util_avg, cap_orig);
            return;
        }
        if self.ewma <= util_avg {
            // Growth is adopted at once so a task that got bigger is served immediately.
            self.ewma = util_avg;
        } else {
            let diff = self.ewma - util_avg;
            if diff >= UTIL_EST_MARGIN {
                if self.rules.capacity_guard && util_avg > cap_orig {
                    // Util above the CPU's capacity: no proof of idle time, so the sample is
                    // meaningless and not even marked as taken (6.8 – 6.15).
                    return;
                }
                // If the task waited much more than it ran it was starved, not smaller: keep
                // the estimate. Otherwise decay towards the sample with weight 1/4.
                if util_avg + UTIL_EST_MARGIN >= runnable_avg {
                    self.ewma = ((self.ewma << UTIL_EST_WEIGHT_SHIFT) - diff) >> UTIL_EST_WEIGHT_SHIFT;
                }
            }
        }
        self.unchanged = true;
    }

    /// The two-field util_est of 4.17 – 6.7 (util_est_dequeue, util_est_update from 5.12): the
    /// sample is stored as `enqueued`; with FastUp a larger sample replaces the EWMA, otherwise
    /// the EWMA moves a quarter of the way to it. A sample within the 1 % margin of the EWMA
    /// writes nothing at all (the early return before WRITE_ONCE), except from 5.13 when it
    /// moved `enqueued` by the margin; one above the CPU's capacity writes nothing from 5.1.
    /// No starvation guard: that came with 6.8's form.
    fn sample_before_6_8(&mut self, util_avg: u64, cap_orig: u64) {
        if self.rules.form == UtilEstForm::FastUp && self.ewma < util_avg {
            self.ewma = util_avg;
            self.enqueued = util_avg;
            self.unchanged = true;
            return;
        }
        if self.ewma.abs_diff(util_avg) < UTIL_EST_MARGIN {
            if self.rules.enqueued_filter && self.enqueued.abs_diff(util_avg) >= UTIL_EST_MARGIN {
                self.enqueued = util_avg;
                self.unchanged = true;
            }
            return;
        }
        if self.rules.capacity_guard && util_avg > cap_orig {
            return;
        }
        self.enqueued = util_avg;
        self.unchanged = true;
        // ewma + (sample - ewma) / 4, in the kernel's shifts: (4 · ewma + diff) >> 2.
        self.ewma = ((self.ewma << UTIL_EST_WEIGHT_SHIFT) + util_avg - self.ewma) >> UTIL_EST_WEIGHT_SHIFT;
    }

    /// Called whenever the task's own PELT average was refreshed (update() returned true).
    pub fn on_pelt_refresh(&mut self) {
        self.unchanged = false;
    }
}

/// Closed-form helpers for tests and for the margins series:
/// periods needed for util to grow from 0 to `util` (`approximate_runtime` of the margins series)
///
/// Steps one whole period at a time from an empty average; `util` is clamped to 1024, the
/// ceiling of an always-running entity, so the loop always ends.
pub fn approximate_runtime_periods(util: u64) -> u64 {
    let target = util.min(SCHED_CAPACITY_SCALE);
    let mut sa = SchedAvg::default();
    let mut periods = 0;
    while sa.util_avg < target {
        sa.accumulate(SCHED_CAPACITY_SCALE, 1, 0, true, SCHED_CAPACITY_SCALE, SCHED_CAPACITY_SCALE);
        sa.refresh(1);
        periods += 1;
    }
    periods
}

/// Ramp-up time from 0 to `util` in steps of one wall-clock period (≈ 1 ms) with the PELT
/// multiplier's shift `lshift` (0, 1, 2): each step accumulates `1024 << lshift` PELT units.
pub fn approximate_runtime_steps(util: u64, lshift: u32) -> u64 {
    let target = util.min(SCHED_CAPACITY_SCALE);
    let mut sa = SchedAvg::default();
    let mut steps = 0;
    while sa.util_avg < target {
        sa.accumulate(SCHED_CAPACITY_SCALE << lshift, 1, 0, true, SCHED_CAPACITY_SCALE, SCHED_CAPACITY_SCALE);
        sa.refresh(1);
        steps += 1;
    }
    steps
}

/// util reached after running `delta_us` from `util` (`approximate_util_avg` of the margins series)
///
/// `delta_us` is fed to the accumulator as PELT time units (1024 ns), as the patch does. The
/// starting sum is the smallest consistent with `util` (period start), and the segment split is
/// used (load = 1), i.e. the v2 behaviour.
pub fn approximate_util_avg(util: u64, delta_us: u64) -> u64 {
    if delta_us == 0 {
        return util;
    }
    let mut sa = SchedAvg { util_sum: util * PELT_MIN_DIVIDER, util_avg: util, ..SchedAvg::default() };
    sa.accumulate(delta_us, 1, 0, true, SCHED_CAPACITY_SCALE, SCHED_CAPACITY_SCALE);
    sa.util_sum / sa.divider()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERIOD_NS: u64 = 1 << 20;
    const MS: u64 = 1_000_000;
    const SHIFT: u32 = SCHED_CAPACITY_SHIFT;

    /// Advance `sa` from `start` to `until` in steps of `step` ns with a fixed state, as a nice-0
    /// task (weight 1024, so load_avg tracks util_avg).
    fn run_to(sa: &mut SchedAvg, start: u64, until: u64, step: u64, running: bool) -> u64 {
        let mut t = start;
        while t < until {
            t = (t + step).min(until);
            let on = u64::from(running);
            sa.update(t, on, on, running, 1024, SHIFT);
        }
        t
    }

    #[test]
    fn yinv_matches_generator() {
        let y = 0.5f64.powf(1.0 / LOAD_AVG_PERIOD as f64);
        for (k, &v) in YINV.iter().enumerate() {
            let want = (((1u64 << 32) - 1) as f64 * y.powf(k as f64)) as u32;
            assert_eq!(v, want, "yinv[{k}]");
        }
    }

    #[test]
    fn decay_load_cases() {
        // (v, n, expected)
        let cases = [
            (1024, 0, 1023), // table[0] is 2^32-1, so y^0 truncates by one
            (1024, 1, 1002),
            (1024, 32, 511),
            (1024, 64, 255),
            (LOAD_AVG_MAX, 1, 46718),
            (u64::MAX, 1, 18_051_468_380_803_694_591), // full 64x32-bit product, no overflow
            (u64::MAX, 62 * 32, 2),                    // 62 half-lives: 3 * yinv[0] >> 32
            (u64::MAX, 63 * 32 + 1, 0),                // past the horizon: forced to zero
        ];
        for (v, n, want) in cases {
            assert_eq!(decay_load(v, n), want, "decay_load({v}, {n})");
        }
        assert_eq!(cap_scale(1000, 512), 500);
    }

    #[test]
    fn ramp_period_aligned() {
        let table = [
            (1, 21),
            (2, 43),
            (3, 64),
            (4, 85),
            (8, 163),
            (16, 300),
            (32, 512),
            (64, 768),
            (100, 907),
            (128, 960),
            (200, 1011),
            (256, 1020),
            (300, 1023),
            (345, 1024),
        ];
        let mut sa = SchedAvg::default();
        let mut t = 0;
        for (periods, want) in table {
            t = run_to(&mut sa, t, periods * PERIOD_NS, PERIOD_NS, true);
            assert_eq!(sa.util_avg, want, "util after {periods} periods");
            // load_sum is kept unshifted, so it decays with coarser truncation than util_sum.
            assert!(sa.load_avg.abs_diff(want) <= 1, "load_avg {} after {periods} periods", sa.load_avg);
            assert_eq!(sa.runnable_avg, want, "runnable after {periods} periods");
        }
    }

    #[test]
    fn decay_period_aligned() {
        // Decay from 1024, y^32 = 1/2: (idle periods, util_avg, util_avg when 1024 was reached by running)
        let table = [
            (1, 1002, 1002),
            (2, 980, 981),
            (4, 939, 939),
            (8, 861, 861),
            (16, 724, 724),
            (32, 511, 512),
            (64, 255, 256),
            (96, 127, 128),
            (128, 63, 64),
        ];
        let t0 = 400 * PERIOD_NS;
        // The spec's column starts from the smallest sum that reads 1024 (util_sum =
        // 1024 * PELT_MIN_DIVIDER, i.e. set_util(1024) at a period boundary). Running for 400
        // periods leaves the sum at its fixed point, ~0.08 % higher, which reads one unit more
        // at some points; both are checked exactly.
        let mut from_set = SchedAvg { last_update_time: t0, ..SchedAvg::default() };
        from_set.set_util(1024);
        let mut from_run = SchedAvg::default();
        run_to(&mut from_run, 0, t0, PERIOD_NS, true);
        assert_eq!((from_run.util_avg, from_run.period_contrib), (1024, 0));
        assert!(from_run.util_sum > from_set.util_sum);

        let (mut t_set, mut t_run) = (t0, t0);
        for (periods, want_set, want_run) in table {
            let until = t0 + periods * PERIOD_NS;
            t_set = run_to(&mut from_set, t_set, until, PERIOD_NS, false);
            t_run = run_to(&mut from_run, t_run, until, PERIOD_NS, false);
            assert_eq!(from_set.util_avg, want_set, "set_util(1024), {periods} idle periods");
            assert_eq!(from_run.util_avg, want_run, "ran to 1024, {periods} idle periods");
            // load_sum is kept unshifted, so it decays with coarser truncation than util_sum.
            let load = from_run.load_avg;
            assert!(load.abs_diff(want_run) <= 1, "load_avg {load} after {periods} idle");
        }
    }

    #[test]
    fn ramp_sampled_every_ms() {
        let table = [
            (1, 0),
            (2, 41),
            (4, 81),
            (8, 156),
            (16, 288),
            (32, 495),
            (48, 644),
            (64, 751),
            (100, 894),
            (150, 978),
            (200, 1008),
            (300, 1022),
            (400, 1024),
        ];
        let mut sa = SchedAvg::default();
        let mut t = 0;
        for (ms, want) in table {
            t = run_to(&mut sa, t, ms * MS, MS, true);
            assert_eq!(sa.util_avg, want, "util at t={ms}ms");
        }
    }

    #[test]
    fn sub_unit_remainder_is_carried() {
        let mut sa = SchedAvg::default();
        // 1500 ns: one unit consumed, 476 ns left for next time.
        assert!(!sa.update(1500, 1, 1, true, 1, SHIFT));
        assert_eq!((sa.last_update_time, sa.period_contrib), (1024, 1));
        // Less than a unit since the last accounted instant: nothing happens.
        assert!(!sa.update(2047, 1, 1, true, 1, SHIFT));
        assert_eq!(sa.last_update_time, 1024);
        // Clock going backwards re-anchors without accounting.
        let before = sa.clone();
        assert!(!sa.update(10, 1, 1, true, 1, SHIFT));
        assert_eq!(sa.last_update_time, 10);
        assert_eq!(sa.util_sum, before.util_sum);
    }

    #[test]
    fn blocked_entity_gates_runnable_and_running() {
        let mut sa = SchedAvg::default();
        // load = 0 but caller claims running: nothing may accrue.
        assert!(sa.update(4 * PERIOD_NS, 0, 3, true, 1, SHIFT));
        assert_eq!((sa.util_sum, sa.runnable_sum, sa.load_sum), (0, 0, 0));
        // Weight scales load_avg, and runnable counts tasks.
        let mut sa = SchedAvg::default();
        sa.update(PERIOD_NS, 1, 2, true, 1024, SHIFT);
        assert_eq!(sa.util_avg, 21);
        assert_eq!(sa.runnable_avg, 43); // 2 * 1002 * 1024 / 46718
        assert_eq!(sa.load_avg, 1024 * 1002 / PELT_MIN_DIVIDER);
    }

    /// Run `busy_ms` then sleep the rest of each `period_ms`, updating at every 1 ms tick
    /// while running and at sleep/wake; return (trough, peak) of the last cycle.
    fn periodic(busy_ms: u64, period_ms: u64, cycles: u64) -> (u64, u64) {
        let mut sa = SchedAvg::default();
        let (mut trough, mut peak) = (0, 0);
        for c in 0..cycles {
            let start = c * period_ms * MS;
            sa.update(start, 0, 0, false, 1024, SHIFT); // wake-up: account the sleep
            trough = sa.util_avg;
            run_to(&mut sa, start, start + busy_ms * MS, MS, true);
            peak = sa.util_avg;
        }
        (trough, peak)
    }

    #[test]
    fn periodic_steady_state() {
        // (busy ms, period ms, trough, peak) of a periodic task. For 8/16 a peak of 545 has been
        // quoted, but the closed form 1024·(1−y^b)/(1−y^T) with b = 7.63, T = 15.26 periods gives 554.4
        // (and its own trough 469 = 554·y^(T−b)), so 554 is used here.
        let cases = [(4, 16, 225, 288), (8, 16, 469, 554), (2, 8, 240, 272)];
        for (busy, period, lo, hi) in cases {
            let (trough, peak) = periodic(busy, period, 100);
            assert!(trough.abs_diff(lo) <= 2, "{busy}/{period}: trough {trough} vs {lo}");
            assert!(peak.abs_diff(hi) <= 2, "{busy}/{period}: peak {peak} vs {hi}");
        }
    }

    #[test]
    fn multiplier_halves_the_half_life() {
        // (time_shift, wall periods) pairs that should cover the same PELT time.
        let mut reference = SchedAvg::default();
        run_to(&mut reference, 0, 32 * PERIOD_NS, PERIOD_NS, true);
        assert_eq!(reference.util_avg, 512);
        for (shift, wall_periods) in [(9, 16), (8, 8)] {
            let mut sa = SchedAvg::default();
            for i in 1..=wall_periods {
                sa.update(i * PERIOD_NS, 1, 1, true, 1, shift);
            }
            assert!(
                sa.util_avg.abs_diff(reference.util_avg) <= 2,
                "shift {shift}: {} vs {}",
                sa.util_avg,
                reference.util_avg
            );
        }
    }

    /// Before 5.1 (accumulate_sum) an always-running task below the invariance reference
    /// settles at freq_scale · cap_orig / 1024 of the scale: at 90 % of the reference on a full
    /// CPU, about 921, never 1024. From 5.1 the scales act on the clock, and the same task
    /// reaches the full scale, only later.
    #[test]
    fn contributions_are_scaled_before_5_1_and_time_is_from_5_1() {
        let run = |scale: PeltScale| {
            let mut sa = SchedAvg::default();
            let (mut task_clock, mut pelt_clock) = (0, 0);
            for _ in 0..1000 {
                task_clock += MS;
                pelt_clock += scale.clock_delta(MS);
                sa.update_scaled(pelt_clock, 1, 1, true, 1024, scale);
            }
            (sa.util_avg, sa.load_avg, task_clock - pelt_clock)
        };
        let at = |invariance, freq, cpu| PeltScale { time_shift: SHIFT, invariance, freq, cpu };
        // 1 s at 0.9 of the reference: 921.6 · (1 − tiny) before 5.1, within a count of it.
        let (util, load, lag) = run(at(Invariance::Contribution, 922, 1024));
        assert!((919..=922).contains(&util), "{util}");
        assert!((919..=922).contains(&load), "load is frequency-scaled too: {load}");
        assert_eq!(lag, 0, "the task clock is PELT's clock");
        // A LITTLE CPU of capacity 512 at its top frequency: util by capacity, load not.
        let (util, load, _) = run(at(Invariance::Contribution, 1024, 512));
        assert!((509..=512).contains(&util), "{util}");
        assert!(load >= 1019, "{load}");
        // 5.1+: the clock runs at 0.9 (and stops counting the rest), the sums see whole time.
        let (util, _, lag) = run(at(Invariance::Clock, 922, 1024));
        assert!(util >= 1019, "{util}");
        assert!(lag > 99 * MS, "{lag}");
        // Unscaled, both forms are the same arithmetic.
        assert_eq!(run(at(Invariance::Contribution, 1024, 1024)), run(PeltScale::unscaled(SHIFT)));
    }

    #[test]
    fn util_est_rules() {
        // (ewma, unchanged, util_avg, runnable_avg, cap_orig) -> (ewma', unchanged'), 6.8's rules
        // (the capacity guard still there).
        let rules_6_8 = UtilEstRules::for_kernel(crate::kernel::KernelVersion(6, 8, 0));
        let cases = [
            ((400, false, 200, 200, 1024), (350, true)), // util_est's EWMA (w = 1/4): 3/4*400 + 1/4*200
            ((350, false, 600, 600, 1024), (600, true)), // increases adopted at once
            ((350, true, 100, 100, 1024), (350, true)),  // no PELT refresh since last sample
            ((400, false, 395, 395, 1024), (400, true)), // within the 1 % margin
            ((900, false, 500, 500, 450), (900, false)), // util above cap_orig: no sample at all
            ((400, false, 200, 300, 1024), (400, true)), // starved (runnable >> util): keep
            ((400, false, 200, 210, 1024), (350, true)), // runnable exactly at the margin: decay
        ];
        for ((ewma, unchanged, util, runnable, cap), (want, want_flag)) in cases {
            let mut ue = UtilEst { ewma, unchanged, ..UtilEst::with_rules(rules_6_8) };
            ue.on_sleep(util, runnable, cap);
            assert_eq!((ue.value(), ue.unchanged), (want, want_flag), "from {ewma}/{unchanged} at {util}");
        }
    }

    /// util_est_update's capacity guard: from 5.1 (with the PELT clock) to 6.15; 6.16 lets an
    /// estimate above a capped CPU's capacity decay.
    #[test]
    fn util_est_drops_samples_above_capacity_only_from_5_1_to_6_15() {
        use crate::kernel::KernelVersion;
        let sample = |kernel: KernelVersion| {
            let mut ue = UtilEst { ewma: 900, enqueued: 900, ..UtilEst::with_rules(UtilEstRules::for_kernel(kernel)) };
            ue.on_sleep(500, 500, 450);
            (ue.ewma, ue.unchanged)
        };
        for kernel in [KernelVersion(5, 1, 0), KernelVersion(5, 2, 0), KernelVersion(5, 10, 0), KernelVersion(6, 15, 0)]
        {
            assert_eq!(sample(kernel), (900, false), "{kernel}");
        }
        // 900 + (500 - 900)/4 = 800, the sample marked as taken.
        for kernel in
            [KernelVersion(4, 19, 0), KernelVersion(5, 0, 0), KernelVersion(6, 16, 0), KernelVersion(6, 18, 0)]
        {
            assert_eq!(sample(kernel), (800, true), "{kernel}");
        }
    }

    /// A task that waited more than it ran keeps its estimate only from 6.8; 6.7's two-field
    /// form decays it like any other sample.
    #[test]
    fn util_est_starvation_guard_is_6_8s() {
        use crate::kernel::KernelVersion;
        let starved = |kernel: KernelVersion| {
            let mut ue = UtilEst { ewma: 400, enqueued: 400, ..UtilEst::with_rules(UtilEstRules::for_kernel(kernel)) };
            ue.on_sleep(200, 300, 1024);
            ue.ewma
        };
        assert_eq!(starved(KernelVersion(6, 8, 0)), 400);
        assert_eq!(starved(KernelVersion(6, 18, 0)), 400);
        assert_eq!(starved(KernelVersion(6, 7, 0)), 350);
        assert_eq!(starved(KernelVersion(6, 5, 0)), 350);
        assert_eq!(starved(KernelVersion(5, 4, 0)), 350);
    }

    /// Within the margin of the EWMA, 5.13 – 6.7 still record a sample that moved `enqueued`
    /// by the margin; earlier kernels write nothing.
    #[test]
    fn util_est_records_enqueued_within_the_margin_from_5_13() {
        use crate::kernel::KernelVersion;
        let near = |kernel: KernelVersion| {
            let mut ue = UtilEst { ewma: 400, enqueued: 380, ..UtilEst::with_rules(UtilEstRules::for_kernel(kernel)) };
            ue.on_sleep(395, 395, 1024);
            (ue.ewma, ue.enqueued, ue.unchanged)
        };
        assert_eq!(near(KernelVersion(5, 12, 0)), (400, 380, false));
        assert_eq!(near(KernelVersion(5, 13, 0)), (400, 395, true));
        assert_eq!(near(KernelVersion(6, 7, 0)), (400, 395, true));
        // A sample near both leaves everything as it was, at any version.
        let mut ue = UtilEst {
            ewma: 400,
            enqueued: 398,
            ..UtilEst::with_rules(UtilEstRules::for_kernel(KernelVersion(6, 7, 0)))
        };
        ue.on_sleep(395, 395, 1024);
        assert_eq!((ue.enqueued, ue.unchanged), (398, false));
    }

    #[test]
    fn util_est_sequence() {
        let mut ue = UtilEst { ewma: 400, ..UtilEst::default() };
        ue.on_sleep(200, 200, 1024);
        assert_eq!(ue.value(), 350);
        // Re-enqueued and dequeued without any PELT refresh: the flag blocks a new sample.
        ue.on_sleep(600, 600, 1024);
        assert_eq!(ue.value(), 350);
        ue.on_pelt_refresh();
        ue.on_sleep(600, 600, 1024);
        assert_eq!(ue, UtilEst { ewma: 600, unchanged: true, ..UtilEst::default() });
    }

    /// The estimates after each of `samples` (util_avg at a sleep, no starvation), from 400.
    fn estimates(rules: UtilEstRules, samples: &[u64]) -> Vec<(u64, u64)> {
        let mut ue = UtilEst { ewma: 400, enqueued: 400, ..UtilEst::with_rules(rules) };
        samples
            .iter()
            .map(|&u| {
                ue.on_pelt_refresh();
                ue.on_sleep(u, u, 1024);
                (ue.ewma, ue.value())
            })
            .collect()
    }

    #[test]
    fn util_est_grows_at_once_only_from_5_5() {
        // A task grown to 800: 4.17 – 5.4 move the EWMA a quarter of the way per sleep
        // (400 → 500 → 575) but read max(ewma, enqueued) = 800 at once; 5.5 – 6.7 (UTIL_EST_FASTUP)
        // and 6.8+ take the larger sample into the EWMA itself.
        use crate::kernel::KernelVersion;
        let up = [800, 800];
        let rules = |major, minor| UtilEstRules::for_kernel(KernelVersion(major, minor, 0));
        assert_eq!(rules(5, 4).form, UtilEstForm::EwmaOnly);
        assert_eq!(estimates(rules(5, 4), &up), vec![(500, 800), (575, 800)]);
        assert_eq!(rules(5, 5).form, UtilEstForm::FastUp);
        assert_eq!(estimates(rules(5, 5), &up), vec![(800, 800), (800, 800)]);
        assert_eq!(rules(6, 8).form, UtilEstForm::Single);
        assert_eq!(estimates(rules(6, 8), &up), vec![(800, 800), (800, 800)]);
    }

    #[test]
    fn util_est_reads_the_last_sample_too_before_6_8() {
        // Shrinking to 200 then back to 420: before 6.8 _task_util_est is max(ewma, enqueued), so
        // the last sample (420) shows over the decayed EWMA (350 → 367); 6.8 reads the EWMA alone
        // (which fast-up lifts to 420).
        use crate::kernel::KernelVersion;
        let down_up = [200, 420];
        let rules = |major, minor| UtilEstRules::for_kernel(KernelVersion(major, minor, 0));
        assert_eq!(estimates(rules(5, 10), &down_up), vec![(350, 350), (420, 420)]);
        assert_eq!(estimates(rules(5, 4), &down_up), vec![(350, 350), (367, 420)]);
        assert_eq!(estimates(rules(6, 8), &down_up), vec![(350, 350), (420, 420)]);
        // Within the 1 % margin nothing is written before 5.13: enqueued keeps the older sample.
        let mut ue = UtilEst { ewma: 400, enqueued: 380, ..UtilEst::with_rules(rules(5, 4)) };
        ue.on_sleep(395, 395, 1024);
        assert_eq!((ue.ewma, ue.enqueued, ue.unchanged), (400, 380, false));
    }

    #[test]
    fn a_new_tasks_full_load_lasts_while_it_stays_runnable() {
        // attach_entity_load_avg derives load_sum from the initial load_avg: 20 ms runnable
        // later the average is still the full weight, not the 35% that 20 ms of history give.
        let mut a = SchedAvg::default();
        a.set_load(1024, 1024);
        a.update(20_000_000, 1, 1, true, 1024, 10);
        assert!(a.load_avg >= 1020, "{}", a.load_avg);
        let mut bare = SchedAvg { load_avg: 1024, ..SchedAvg::default() };
        bare.update(20_000_000, 1, 1, true, 1024, 10);
        assert!((300..420).contains(&bare.load_avg), "{}", bare.load_avg);
    }

    #[test]
    fn initial_task_util_cases() {
        // (cap_orig, rq_util, rq_load, weight, expected)
        let cases = [
            (1024, 0, 0, 1024, 512),      // idle CPU: half the capacity
            (512, 0, 0, 1024, 256),       // idle little CPU
            (1024, 200, 1024, 1024, 199), // weight share 200*1024/1025 < spare/2 = 412
            (1024, 600, 300, 1024, 212),  // share 2037 capped at (1024-600)/2
            (1024, 1023, 1024, 1024, 0),  // (1024-1023)/2 = 0
            (1024, 1100, 2048, 1024, 0),  // over-utilized rq
        ];
        for (cap, util, load, w, want) in cases {
            assert_eq!(initial_task_util(cap, util, load, w), want, "cap {cap} util {util} load {load}");
        }
    }

    #[test]
    fn set_add_remove_util() {
        let mut sa = SchedAvg { period_contrib: 500, ..SchedAvg::default() };
        sa.set_util(300);
        assert_eq!((sa.util_avg, sa.runnable_avg), (300, 300));
        assert_eq!(sa.util_sum, 300 * (PELT_MIN_DIVIDER + 500));
        sa.add_util(100);
        assert_eq!(sa.util_avg, 400);
        assert_eq!(sa.util_sum, 400 * sa.divider());
        sa.remove_util(150);
        assert_eq!((sa.util_avg, sa.util_sum), (250, 250 * sa.divider()));
        // Sum short of util_avg*divider: the floor keeps sum consistent with the avg.
        sa.util_sum = 250 * PELT_MIN_DIVIDER;
        sa.remove_util(50);
        assert_eq!((sa.util_avg, sa.util_sum), (200, 200 * PELT_MIN_DIVIDER));
        // Removing more than present saturates at zero.
        sa.remove_util(5000);
        assert_eq!((sa.util_avg, sa.util_sum), (0, 0));
    }

    #[test]
    fn approximate_runtime_table() {
        let cases = [
            (0, 0),
            (100, 5),
            (256, 14),
            (512, 32),
            (700, 54),
            (800, 71),
            (900, 98),
            (950, 121),
            (988, 154),
            (1000, 172),
            (1010, 196),
            (1020, 247),
            (1023, 290),
            (1024, 323),
            (5000, 323), // clamped to the ceiling
        ];
        for (util, want) in cases {
            let got = approximate_runtime_periods(util);
            assert!(got.abs_diff(want) <= 1, "approximate_runtime({util}) = {got}, want {want}");
        }
    }

    #[test]
    fn approximate_util_avg_table() {
        // (delta us, [(util, expected)]) from the margins series' approximate_util_avg (v2 values)
        let cases: [(u64, [(u64, u64); 4]); 5] = [
            (500, [(100, 109), (256, 264), (512, 517), (800, 802)]),
            (1000, [(100, 119), (256, 272), (512, 522), (800, 804)]),
            (2000, [(100, 138), (256, 287), (512, 533), (800, 809)]),
            (4000, [(100, 174), (256, 318), (512, 553), (800, 818)]),
            (10000, [(100, 276), (256, 402), (512, 609), (800, 842)]),
        ];
        for (delta, row) in cases {
            for (util, want) in row {
                assert_eq!(approximate_util_avg(util, delta), want, "util {util} + {delta}us");
            }
        }
        assert_eq!(approximate_util_avg(1024, 4000), 1023);
        assert_eq!(approximate_util_avg(1024, 1000), 1024);
        assert_eq!(approximate_util_avg(321, 0), 321);
    }

    #[test]
    fn util_never_exceeds_capacity_with_random_updates() {
        // Numerical Recipes LCG; lengths 1 ns .. ~3 periods, mixing sub-unit and multi-period steps.
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            state >> 33
        };
        let mut sa = SchedAvg::default();
        let mut t = 0;
        let mut refreshed = 0;
        while t < 1000 * PERIOD_NS {
            t += 1 + next() % (3 * PERIOD_NS);
            if sa.update(t, 1, 1, true, 1, SHIFT) {
                refreshed += 1;
            }
            assert!(sa.util_avg <= SCHED_CAPACITY_SCALE, "util {} at t={t}", sa.util_avg);
            assert!(sa.runnable_avg <= SCHED_CAPACITY_SCALE, "runnable {} at t={t}", sa.runnable_avg);
            assert!(sa.period_contrib < 1024);
        }
        assert!(refreshed > 100, "only {refreshed} refreshes");
        assert!(sa.util_avg >= 1020, "did not converge: {}", sa.util_avg);
    }
}
