//! Capacity-aware scheduling on asymmetric platforms (`kernel/sched/fair.c`; docs/heterogeneous.md): the
//! overutilized switch, misfit tasks and their up-migration, and wake-up placement that looks
//! for a CPU the task fits (`select_idle_capacity`). This file keeps the scheduler's own part
//! (`wake_cap`); the sequences are in sim/capacity.rs and sim/wake.rs.
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

use crate::engine::EventQueue;
use crate::machine::Machine;
use crate::sched::Sched;

impl Sched {
    /// wake_cap (4.9-5.6): whether a wake-up of `task` by `this_cpu` must take the slow path
    /// because the task does not fit the smaller of the waking and the previous CPU, on a
    /// platform where that CPU is at least 1/8 smaller than the biggest.
    pub(crate) fn wake_cap(
        &self,
        machine: &Machine,
        q: &EventQueue,
        task: usize,
        this_cpu: usize,
        prev: usize,
    ) -> bool {
        let min_cap = machine.plat.cpus[prev].cap_orig.min(machine.plat.cpus[this_cpu].cap_orig);
        let max_cap = machine.plat.cpus.iter().map(|c| c.cap_orig).max().unwrap_or(min_cap);
        if max_cap - min_cap < max_cap >> 3 {
            return false;
        }
        !crate::sched::capacity::fits_capacity(self.task_util_est(q, task), min_cap, self.hetero.fits)
    }
}
