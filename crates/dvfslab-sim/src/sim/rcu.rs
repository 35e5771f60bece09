//! RCU's grace-period kthread (`rcu_preempt`, `rcu_sched` without preemptible RCU) as a task,
//! driven by the callbacks the workload's exits queue (docs/model.md).
//!
//! An exiting task leaves its `task_struct` to RCU (`release_task` → `call_rcu`), so a forking
//! workload keeps callbacks coming. A CPU's next tick finds them (`rcu_sched_clock_irq` →
//! `rcu_core` in the RCU softirq) and, with no grace period under way, asks for one
//! (`rcu_start_this_gp`), waking the kthread from the softirq (`rcu_gp_kthread_wake`). The
//! kthread starts the grace period (`rcu_gp_init`) and sleeps until every CPU has passed a
//! quiescent state, or until its force-quiescent-state timeout of `jiffies_till_first_fqs`
//! (`rcu_gp_fqs_loop`). A busy CPU's tick is its quiescent state (a tick in user mode or after
//! a context switch, reported from the softirq: `rcu_check_quiescent_state`); an idle CPU is
//! in an extended quiescent state that only the kthread's scan finds (`rcu_gp_fqs` →
//! `dyntick_save_progress_counter`). The last report wakes the kthread from its softirq
//! (`rcu_report_qs_rsp`); its cleanup (`rcu_gp_cleanup`) starts the next grace period at once
//! when callbacks queued meanwhile wait for one. Each wake-up is a few µs of work
//! (`estimates::kthreads::RCU_GP_RUN_CYCLES`); a wake-up on a busy CPU competes with, and may
//! preempt, the task there.
//!
//! The timeout is `RCU_JIFFIES_TILL_FORCE_QS` (1 jiffy up to HZ=250, 2 up to 500, else 3)
//! plus a jiffy per 256 CPUs (`rcu_init_geometry`), as in every kernel the project models.

use crate::governor::UpdateFlags;
use crate::sched::waker::Waker;
use crate::sim::Sim;

/// The grace-period state the kthread and the CPUs' ticks share.
#[derive(Default)]
pub(crate) struct Rcu {
    /// The run has grace periods: its workload forks, so its exits queue callbacks.
    pub(crate) enabled: bool,
    /// The kthread, from the first callback on.
    pub(crate) kthread: Option<usize>,
    /// It sleeps waiting for work (`Op::WaitGp`).
    sleeping: bool,
    /// Callbacks queued that no grace period has taken yet.
    pending: bool,
    /// A CPU's RCU core asked for a grace period (`RCU_GP_FLAG_INIT`).
    start_requested: bool,
    /// A grace period is under way.
    in_gp: bool,
    /// Whether each CPU still owes the grace period a quiescent state.
    owed: Vec<bool>,
    /// Every CPU has reported: the kthread's cleanup is due.
    gp_done: bool,
}

/// The force-quiescent-state timeout in jiffies at `hz` on `ncpus` CPUs
/// (`RCU_JIFFIES_TILL_FORCE_QS` + `nr_cpu_ids / RCU_JIFFIES_FQS_DIV`).
pub(crate) fn jiffies_till_first_fqs(hz: u32, ncpus: usize) -> u64 {
    1 + u64::from(hz > 250) + u64::from(hz > 500) + ncpus as u64 / 256
}

impl Sim {
    /// A workload task exits: its `task_struct` is freed after a grace period (`call_rcu`).
    /// The kthread, asleep until then, joins the run here: it starts a nanosecond later, so
    /// that nothing runs in the middle of the exit.
    pub(crate) fn rcu_callback_queued(&mut self) {
        if !self.work.rcu.enabled {
            return;
        }
        self.work.rcu.pending = true;
        if self.work.rcu.kthread.is_none() {
            self.work.rcu.kthread = Some(self.sched.tasks.len());
            let spec = crate::workload::kthreads::rcu_gp_kthread(&self.machine.plat).start_at(self.q.now() + 1);
            self.spawn(spec);
        }
    }

    /// The RCU part of a busy CPU's tick (`rcu_sched_clock_irq`, then `rcu_core` in the RCU
    /// softirq): report its quiescent state to the grace period under way, the last one waking
    /// the kthread; or, with callbacks waiting and no grace period, ask for one.
    pub(crate) fn rcu_tick(&mut self, cpu: usize) {
        let Some(kthread) = self.work.rcu.kthread else { return };
        let r = &mut self.work.rcu;
        let wake = if r.in_gp {
            if !r.gp_done && r.owed[cpu] {
                r.owed[cpu] = false;
                r.gp_done = r.owed.iter().all(|owed| !owed);
            }
            r.gp_done
        } else if r.pending && !r.start_requested {
            r.start_requested = true;
            true
        } else {
            false
        };
        if wake && r.sleeping {
            r.sleeping = false;
            self.wake_task(kthread, Waker::Softirq { cpu: Some(cpu), sync: false }, UpdateFlags::default());
        }
    }

    /// `Op::WaitGp`: the kthread goes on if a grace period is to start or to end, and sleeps
    /// otherwise, until woken or, with a grace period under way, until its
    /// force-quiescent-state timeout. Returns the timeout's time, or None to go on.
    pub(crate) fn rcu_wait(&mut self) -> Option<Option<u64>> {
        let r = &mut self.work.rcu;
        if r.start_requested || r.gp_done {
            return None;
        }
        r.sleeping = true;
        let hz = (1_000_000_000 / self.machine.tick_ns) as u32;
        let jiffies = jiffies_till_first_fqs(hz, self.sched.cpus.len());
        Some(r.in_gp.then(|| self.q.now() + jiffies * self.machine.tick_ns))
    }

    /// `Op::GpWork`: the kthread's step after a wake-up. With a grace period under way, its
    /// scan finds the idle CPUs quiescent (`rcu_gp_fqs`), and its own, which switched to it;
    /// a finished grace period is cleaned
    /// up (`rcu_gp_cleanup`); then a grace period starts if one was asked for or callbacks
    /// wait for one (`rcu_gp_init`), every CPU owing it a quiescent state.
    pub(crate) fn rcu_gp_work(&mut self) {
        let r = &mut self.work.rcu;
        let idle: Vec<bool> = self.sched.cpus.iter().map(|c| c.curr.is_none() || c.curr == r.kthread).collect();
        r.sleeping = false;
        if r.in_gp && !r.gp_done {
            for (owed, idle) in r.owed.iter_mut().zip(&idle) {
                *owed &= !idle;
            }
            r.gp_done = r.owed.iter().all(|owed| !owed);
        }
        if r.gp_done {
            r.in_gp = false;
            r.gp_done = false;
        }
        if !r.in_gp && (r.start_requested || r.pending) {
            r.in_gp = true;
            r.owed = vec![true; idle.len()];
            r.pending = false;
            r.start_requested = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fqs_timeout_is_one_jiffy_up_to_hz_250_and_grows_with_hz_and_cpus() {
        assert_eq!(jiffies_till_first_fqs(250, 2), 1);
        assert_eq!(jiffies_till_first_fqs(100, 2), 1);
        assert_eq!(jiffies_till_first_fqs(300, 2), 2);
        assert_eq!(jiffies_till_first_fqs(1000, 2), 3);
        assert_eq!(jiffies_till_first_fqs(250, 512), 3);
    }
}
