//! RCU's grace-period kthread (`rcu_preempt`, `rcu_sched` without preemptible RCU) as a task,
//! driven by the callbacks the workload's exits and execs queue (docs/model.md).
//!
//! An exiting task leaves its `task_struct` to RCU (`release_task` → `call_rcu`), so a forking
//! workload keeps callbacks coming. Freeing it after the grace period drops the task's
//! credentials, which RCU frees in turn (`delayed_put_task_struct` → `__put_task_struct` →
//! `exit_creds` → `__put_cred`): every exit needs a second grace period after the first. An exec
//! replaces the task's credentials and queues the old ones (`commit_creds`). A CPU's next tick
//! finds callbacks (`rcu_sched_clock_irq` →
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
use crate::kernel::KernelVersion;
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
    /// Among them, exited tasks' (`delayed_put_task_struct`), whose invocation queues their
    /// credentials' callbacks.
    pending_exits: bool,
    /// The grace period under way took exited tasks' callbacks.
    gp_exits: bool,
    /// A finished grace period's exited tasks wait to be freed: the next busy tick's RCU
    /// softirq invokes them (`rcu_do_batch`), which queues their credentials.
    exits_to_invoke: bool,
    /// A CPU's RCU core asked for a grace period (`RCU_GP_FLAG_INIT`).
    start_requested: bool,
    /// A grace period is under way.
    in_gp: bool,
    /// Whether each CPU still owes the grace period a quiescent state.
    owed: Vec<bool>,
    /// Whether each CPU has noticed the grace period: a quiescent state counts only from the
    /// tick after the one where it did (`__note_gp_changes` resets the CPU's quiescent-state
    /// flag for a new grace period).
    noticed: Vec<bool>,
    /// Every CPU has reported: the kthread's cleanup is due.
    gp_done: bool,
}

/// The force-quiescent-state timeout in jiffies at `hz` on `ncpus` CPUs
/// (`RCU_JIFFIES_TILL_FORCE_QS` + `nr_cpu_ids / RCU_JIFFIES_FQS_DIV`).
pub(crate) fn jiffies_till_first_fqs(hz: u32, ncpus: usize) -> u64 {
    1 + u64::from(hz > 250) + u64::from(hz > 500) + ncpus as u64 / 256
}

/// When a `schedule_timeout(jiffies)` armed at `now` fires: at a tick, the timer softirq's.
/// The timer wheel from 4.8 (`calc_index`) rounds a timer's expiry up by one unit of its
/// level, a jiffy at the first level, so that a timer armed just before a tick cannot fire a
/// jiffy early: it fires at tick `jiffies + timeout + 1`. The wheel before it fires at tick
/// `jiffies + timeout`.
pub(crate) fn timeout_expiry(now: u64, jiffies: u64, tick_ns: u64, kernel: KernelVersion) -> u64 {
    let round_up = u64::from(kernel >= KernelVersion(4, 8, 0));
    (now / tick_ns + jiffies + round_up) * tick_ns
}

impl Sim {
    /// A workload task exits (`exit`: its `task_struct` is freed after a grace period, and its
    /// credentials after another) or execs (its old credentials are freed after a grace
    /// period). The kthread, asleep until the first, joins the run here: it starts a
    /// nanosecond later, so that nothing runs in the middle of the exit.
    pub(crate) fn rcu_callback_queued(&mut self, exit: bool) {
        if !self.work.rcu.enabled {
            return;
        }
        self.work.rcu.pending = true;
        self.work.rcu.pending_exits |= exit;
        if self.work.rcu.kthread.is_none() {
            self.work.rcu.kthread = Some(self.sched.tasks.len());
            let spec = crate::workload::kthreads::rcu_gp_kthread(&self.machine.plat).start_at(self.q.now() + 1);
            self.spawn(spec);
        }
    }

    /// The RCU part of a busy CPU's tick (`rcu_sched_clock_irq`, then `rcu_core` in the RCU
    /// softirq): the first tick of a grace period only notices it (`note_gp_changes`, which
    /// clears the quiescent state the CPU had recorded before); a later one reports the CPU's
    /// quiescent state, the last report waking the kthread. With callbacks waiting and no grace
    /// period, the tick asks for one. So a grace period lasts two ticks of every busy CPU but
    /// the kthread's, which noticed it as it started it.
    pub(crate) fn rcu_tick(&mut self, cpu: usize) {
        let Some(kthread) = self.work.rcu.kthread else { return };
        let r = &mut self.work.rcu;
        if r.exits_to_invoke {
            r.exits_to_invoke = false;
            r.pending = true;
        }
        let wake = if r.in_gp {
            if !r.gp_done && r.owed[cpu] {
                if r.noticed[cpu] {
                    r.owed[cpu] = false;
                    r.gp_done = r.owed.iter().all(|owed| !owed);
                } else {
                    r.noticed[cpu] = true;
                }
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
        let kernel = self.machine.kernel;
        Some(r.in_gp.then(|| timeout_expiry(self.q.now(), jiffies, self.machine.tick_ns, kernel)))
    }

    /// `Op::GpWork`: the kthread's step after a wake-up. With a grace period under way, its
    /// scan finds the idle CPUs quiescent (`rcu_gp_fqs`), and its own, which switched to it;
    /// a finished grace period is cleaned
    /// up (`rcu_gp_cleanup`); then a grace period starts if one was asked for or callbacks
    /// wait for one (`rcu_gp_init`), every CPU owing it a quiescent state and only the
    /// kthread's own CPU aware of it (`rcu_gp_init` notes the change there).
    pub(crate) fn rcu_gp_work(&mut self, cpu: usize) {
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
            r.exits_to_invoke |= r.gp_exits;
        }
        if !r.in_gp && (r.start_requested || r.pending) {
            r.in_gp = true;
            r.owed = vec![true; idle.len()];
            r.noticed = (0..idle.len()).map(|c| c == cpu).collect();
            r.gp_exits = r.pending_exits;
            r.pending = false;
            r.pending_exits = false;
            r.start_requested = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_jiffy_timeout_fires_at_the_second_tick_from_4_8_and_at_the_next_before() {
        let tick = 4_000_000; // HZ=250
        let fires = |now_ns, kernel| timeout_expiry(now_ns, 1, tick, kernel);
        // Armed just after a tick or just before the next, the 4.8 wheel fires two ticks on:
        // never less than a whole jiffy later, up to two.
        assert_eq!(fires(100_000, KernelVersion(4, 8, 0)), 8_000_000);
        assert_eq!(fires(3_900_000, KernelVersion(6, 18, 0)), 8_000_000);
        // The wheel before it fires at the next tick, however close.
        assert_eq!(fires(100_000, KernelVersion(4, 7, 0)), 4_000_000);
        assert_eq!(fires(3_900_000, KernelVersion(4, 7, 0)), 4_000_000);
        // Armed on a tick itself: its jiffy has begun.
        assert_eq!(fires(4_000_000, KernelVersion(6, 1, 0)), 12_000_000);
        assert_eq!(timeout_expiry(100_000, 3, tick, KernelVersion(6, 1, 0)), 16_000_000);
    }

    #[test]
    fn the_fqs_timeout_is_one_jiffy_up_to_hz_250_and_grows_with_hz_and_cpus() {
        assert_eq!(jiffies_till_first_fqs(250, 2), 1);
        assert_eq!(jiffies_till_first_fqs(100, 2), 1);
        assert_eq!(jiffies_till_first_fqs(300, 2), 2);
        assert_eq!(jiffies_till_first_fqs(1000, 2), 3);
        assert_eq!(jiffies_till_first_fqs(250, 512), 3);
    }
}
