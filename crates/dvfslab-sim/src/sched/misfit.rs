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

use crate::governor::UpdateFlags;
use crate::sched::capacity::capacity_greater;
use crate::sched::pelt::SCHED_CAPACITY_SCALE;
use crate::sim::Sim;

impl Sim {
    /// cpu_overutilized: the CPU's CFS util does not fit it (a −1 "fits but cannot honour
    /// uclamp_min" is not overutilized).
    fn cpu_overutilized(&self, cpu: usize) -> bool {
        let (min, max) = self.sched.rq_uclamp(cpu).unwrap_or((0, SCHED_CAPACITY_SCALE));
        self.util_fits_cpu(self.sched.cpu_util_now(&self.machine, &self.q, cpu), min, max, cpu) == 0
    }

    /// Set the root domain's overutilized flag if `cpu` is (enqueue of a woken task).
    pub(crate) fn check_overutilized(&mut self, cpu: usize) {
        if self.sched.hetero.eas && !self.sched.hetero.overutilized && self.cpu_overutilized(cpu) {
            self.sched.hetero.overutilized = true;
        }
    }

    /// Whether load balancing runs: always without EAS; with it, only while overutilized (the
    /// flag is recomputed over every CPU first, as a root-domain load balance does).
    pub(crate) fn load_balance_allowed(&mut self) -> bool {
        if !self.sched.hetero.eas {
            return true;
        }
        self.sched.hetero.overutilized = (0..self.sched.cpus.len()).any(|c| self.cpu_overutilized(c));
        self.sched.hetero.overutilized
    }

    /// update_misfit_status: the current task of `cpu` if it is a misfit (4.20+; before, a
    /// task that outgrew its CPU stayed until its next wake-up).
    fn misfit_task(&self, cpu: usize) -> Option<usize> {
        if !self.sched.hetero.misfit {
            return None;
        }
        let task = self.sched.cpus[cpu].curr?;
        if self.sched.rt_prio(task).is_some() {
            return None;
        }
        let cap = self.machine.plat.cpus[cpu].cap_orig;
        // Already on the biggest CPU it may use (p->max_allowed_capacity, 6.10+), or pinned.
        let bigger_allowed = (0..self.sched.cpus.len())
            .any(|c| c != cpu && self.sched.allowed(task, c) && self.machine.plat.cpus[c].cap_orig > cap);
        if !bigger_allowed || self.task_fits_cpu(task, cpu) {
            return None;
        }
        Some(task)
    }

    /// Where a misfit task of `src` goes: the smallest idle CPU more than ~5 % bigger where it
    /// fits, else the biggest idle such CPU.
    fn misfit_dst(&self, task: usize, src: usize) -> Option<usize> {
        let cap_src = self.capacity_of(src);
        let bigger: Vec<usize> = (0..self.sched.cpus.len())
            .filter(|&c| c != src && self.sched.allowed(task, c) && self.sched.cpu_is_idle(c))
            .filter(|&c| capacity_greater(self.capacity_of(c), cap_src))
            .collect();
        let fitting = bigger.iter().copied().filter(|&c| self.task_fits_cpu(task, c));
        fitting
            .min_by_key(|&c| (self.capacity_of(c), c))
            .or_else(|| bigger.iter().copied().max_by_key(|&c| (self.capacity_of(c), std::cmp::Reverse(c))))
    }

    /// At the tick of `cpu`: update the overutilized flag, and move a misfit current task up.
    pub(crate) fn capacity_tick(&mut self, cpu: usize) {
        if !self.sched.hetero.asym || !self.load_balance_allowed() {
            return;
        }
        let Some(task) = self.misfit_task(cpu) else { return };
        if let Some(dst) = self.misfit_dst(task, cpu) {
            self.note_migration(task, cpu, dst, "misfit");
            self.migrate_running(cpu, dst);
        }
    }

    /// A CPU about to go idle (new-idle balance) pulls the misfit task it is the best
    /// destination for, the biggest one first. Returns whether it took one. The caller checks
    /// that balancing is allowed.
    pub(crate) fn pull_misfit(&mut self, cpu: usize) -> bool {
        if !self.sched.hetero.asym {
            return false;
        }
        let best = (0..self.sched.cpus.len())
            .filter(|&src| src != cpu)
            .filter_map(|src| self.misfit_task(src).map(|t| (src, t)))
            .filter(|&(src, t)| self.misfit_dst(t, src) == Some(cpu))
            .max_by_key(|&(src, t)| (self.sched.task_util_est(&self.machine, &self.q, t), std::cmp::Reverse(src)));
        let Some((src, task)) = best else { return false };
        self.note_migration(task, src, cpu, "misfit_idle");
        self.migrate_running(src, cpu);
        true
    }

    /// Move the running task of `src` to the idle `dst` (active balance) and let `src` run
    /// its next task or go idle.
    pub(crate) fn migrate_running(&mut self, src: usize, dst: usize) {
        let task = self.sched.cpus[src].curr.expect("a running task");
        self.sched.update_curr(&self.q, src);
        self.update_cpu_pelt(src);
        self.sched.update_task_pelt(&self.machine, task, true, true);
        let c = &mut self.sched.cpus[src];
        c.curr = None;
        c.switched_out = Some((task, 'R'));
        c.seg_token = c.seg_token.wrapping_add(1);
        self.count_placement_idle(src);
        if let Some(tl) = self.run.timeline.as_mut() {
            // The source's switch-out precedes the destination's switch-in (Timeline::reserve_switch).
            tl.reserve_switch(src);
        }
        self.migrate_queued(task, src, dst);
        self.set_curr(dst, task);
        // Running the task on `dst` may already have woken a task onto the emptied `src`
        // (its program runs at once); only a CPU still empty picks its next task.
        if self.sched.cpus[src].curr.is_none() {
            self.pick_next(src);
        }
        self.deepen_idle(src);
        // The task's util left one run-queue and attached to the other.
        self.cfs_util_change(src, UpdateFlags::default());
        self.cfs_util_change(dst, UpdateFlags::default());
    }

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
