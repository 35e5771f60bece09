//! Capacity-aware scheduling on asymmetric platforms (`kernel/sched/fair.c`; docs/heterogeneous.md): the
//! overutilized switch, misfit tasks and their up-migration, and wake-up placement that looks
//! for a CPU the task fits (`select_idle_capacity`).
//!
//! ```text
//!   overutilized  = some CPU's CFS util (with its run-queue clamps) does not fit it
//!                   set at wake-up and tick, recomputed at the tick and at idle entry; while
//!                   set, EAS gives way to the usual placement and load balancing
//!   misfit(cpu)   = its current CFS task does not fit it (task_fits_cpu), may run elsewhere,
//!                   and a CPU with more capacity is in its affinity (max_allowed_capacity)
//!   up-migration  at the tick of the misfit CPU, or when a bigger CPU is about to go idle:
//!                   to the smallest idle CPU more than ~5 % bigger where it fits
//!                   (little → mid → big), else the biggest such idle CPU
//! ```
//! By kernel version: misfit detection and up-migration exist from 4.20; the overutilized
//! switch comes with EAS (5.0); wake-ups scan for a fitting CPU (`select_idle_capacity`) from
//! 5.7, before which `wake_cap` (4.9-5.6) sends a task that does not fit to the slow path, and
//! before 4.9 placement ignores capacity (see `capacity::AsymWakeup`).
//!
//! Differences from Linux: the running task moves at once (Linux kicks a NOHZ idle balance,
//! which walks the idle CPUs in id order and moves it with the stopper a little later); only
//! idle CPUs pull a misfit task; the destination is chosen among all idle bigger CPUs rather
//! than by whichever balances first.

use crate::sim::Sim;

impl Sim {
    /// wake_cap (4.9-5.6): whether a wake-up of `task` by `this_cpu` must take the slow path
    /// because the task does not fit the smaller of the waking and the previous CPU, on a
    /// platform where that CPU is at least 1/8 smaller than the biggest.
    pub(crate) fn wake_cap(&self, task: usize, this_cpu: usize, prev: usize) -> bool {
        let min_cap = self.machine.plat.cpus[prev].cap_orig.min(self.machine.plat.cpus[this_cpu].cap_orig);
        let max_cap = self.machine.plat.cpus.iter().map(|c| c.cap_orig).max().unwrap_or(min_cap);
        if max_cap - min_cap < max_cap >> 3 {
            return false;
        }
        !crate::sched::capacity::fits_capacity(
            self.sched.task_util_est(&self.machine, &self.q, task),
            min_cap,
            self.sched.hetero.fits,
        )
    }

    /// select_idle_sibling on an asymmetric platform: the target, or prev, if idle and the
    /// task fits it; else select_idle_capacity from the target: the first idle CPU it fits,
    /// else the idle CPU that fits best (−1 before 0), the biggest among equals.
    pub(crate) fn select_idle_sibling_asym(&self, task: usize, prev: usize, target: usize) -> usize {
        let util = self.sched.task_util_est(&self.machine, &self.q, task);
        let (min, max) = self.sched.task_uclamp(task);
        let ok = |c: usize| self.sched.allowed(task, c) && self.sched.cpu_is_idle(c);
        let fits = |c: usize| self.util_fits_cpu(util, min, max, c);
        if ok(target) && fits(target) > 0 {
            return target;
        }
        let same_llc = self.machine.plat.cpus[prev].llc == self.machine.plat.cpus[target].llc;
        if prev != target && same_llc && ok(prev) && fits(prev) > 0 {
            return prev;
        }
        let n = self.sched.cpus.len();
        let (mut best, mut best_fits, mut best_cap) = (None, 0i8, 0u64);
        for cpu in (0..n).map(|i| (target + i) % n).filter(|&c| ok(c)) {
            let f = fits(cpu);
            if f > 0 {
                return cpu;
            }
            let cap = self.capacity_of(cpu);
            if f < best_fits || (f == best_fits && cap > best_cap) {
                (best, best_fits, best_cap) = (Some(cpu), f, cap);
            }
        }
        best.unwrap_or(target)
    }
}
