//! Capacity-aware sequences: a CPU's capacity under its policy's limits, whether a task fits,
//! misfit migration at the tick and at idle, and the overutilized flag.

use crate::governor::UpdateFlags;
use crate::sched::capacity::capacity_greater;
use crate::sched::capacity::{util_fits_cpu, CpuCaps};
use crate::sched::pelt::SCHED_CAPACITY_SCALE;
use crate::sched::waker::WakeContext;
use crate::sim::Sim;

impl Sim {
    /// capacity_of(cpu): cap_orig less the capacity a lowered policy maximum takes away.
    pub(crate) fn capacity_of(&self, cpu: usize) -> u64 {
        let cap = self.machine.plat.cpus[cpu].cap_orig;
        let policy = self.machine.plat.cpus[cpu].policy;
        let pol = &self.cpufreq.policies[policy];
        let f_ref = *self.machine.tables[policy].last().unwrap_or(&pol.max_khz) as u64;
        if (pol.max_khz as u64) < f_ref && f_ref > 0 {
            (cap * pol.max_khz as u64 / f_ref).max(1)
        } else {
            cap
        }
    }

    pub(crate) fn cpu_caps(&self, cpu: usize) -> CpuCaps {
        let capacity = self.capacity_of(cpu);
        CpuCaps { cap_orig: self.machine.plat.cpus[cpu].cap_orig, capacity, actual: capacity }
    }

    /// util_fits_cpu with this run's fits rule and uclamp state.
    pub(crate) fn util_fits_cpu(&self, util: u64, uclamp_min: u64, uclamp_max: u64, cpu: usize) -> i8 {
        let h = &self.sched.hetero;
        util_fits_cpu(util, uclamp_min, uclamp_max, self.cpu_caps(cpu), h.fits, h.uclamp_active())
    }

    /// task_fits_cpu: the task's util and its own clamps fully fit `cpu`.
    pub(crate) fn task_fits_cpu(&self, task: usize, cpu: usize) -> bool {
        let (min, max) = self.sched.task_uclamp(task);
        self.util_fits_cpu(self.sched.task_util_est(&self.q, task), min, max, cpu) > 0
    }

    /// Keep a record of a move: for `--explain`, and in the timeline as sched_migrate_task,
    /// logged on `on`, the CPU whose code moves the task (set_task_cpu's caller), in its
    /// context: a wake-up's, the softirq of a periodic or idle balance (run_rebalance_domains),
    /// or a task's (a new-idle balance in __schedule, the stopper of an active balance).
    pub(crate) fn note_migration(
        &mut self,
        task: usize,
        (src, dst): (usize, usize),
        reason: &'static str,
        (on, context): (usize, WakeContext),
    ) {
        if src == dst {
            return;
        }
        if let Some(tl) = self.run.timeline(&mut self.sched.charges) {
            tl.migrate(self.q.now(), on, task, src, dst, context);
        }
        if self.sched.hetero.migrations.is_none() {
            return;
        }
        let util = self.sched.task_util_est(&self.q, task);
        let fitted_src = self.task_fits_cpu(task, src);
        let m = crate::observe::Migration {
            time_ns: self.q.now(),
            task,
            src_cpu: src,
            dst_cpu: dst,
            reason,
            util,
            fitted_src,
        };
        self.sched.hetero.migrations.as_mut().expect("checked").push(m);
    }

    /// cpu_overutilized: the CPU's CFS util does not fit it (a −1 "fits but cannot honour
    /// uclamp_min" is not overutilized).
    pub(crate) fn cpu_overutilized(&self, cpu: usize) -> bool {
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
    pub(crate) fn misfit_task(&self, cpu: usize) -> Option<usize> {
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
    pub(crate) fn misfit_dst(&self, task: usize, src: usize) -> Option<usize> {
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
            self.note_migration(task, (cpu, dst), "misfit", (cpu, WakeContext::Task));
            self.migrate_running(cpu, dst);
        }
    }

    /// The root domain's overload flag as a balance of the top domain leaves it
    /// (update_sd_lb_stats: some CPU with more than one task in `rq->nr_running`, delayed ones
    /// included, or on asymmetric CPUs one whose running task does not fit it).
    pub(crate) fn refresh_rd_overloaded(&mut self) {
        let n = self.sched.cpus.len();
        self.sched.rd_overloaded = (0..n).any(|c| self.sched.rq_nr_running(c) > 1)
            || (self.sched.hetero.asym && (0..n).any(|c| self.misfit_task(c).is_some()));
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
            .max_by_key(|&(src, t)| (self.sched.task_util_est(&self.q, t), std::cmp::Reverse(src)));
        let Some((src, task)) = best else { return false };
        self.note_migration(task, (src, cpu), "misfit_idle", (cpu, WakeContext::Task));
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
        if let Some(tl) = self.run.timeline(&mut self.sched.charges) {
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
}
