//! Scheduler sequences that reach the hardware or the cpufreq core: enqueue and dequeue with the
//! cpufreq hook, switches in and out with the idle exit and the run segment, preemption, the tick,
//! and the balancing that moves tasks between CPUs.

use crate::engine::{Event, TimeNs};
use crate::governor::UpdateFlags;
use crate::sched::eevdf::calc_delta_fair;
use crate::sched::fair;
use crate::sched::newidle::Gate;
use crate::sched::numa_balance::NUMA_FAILURES_BEFORE_ACTIVE;
use crate::sched::pelt::SCHED_CAPACITY_SCALE;
use crate::sched::task::{preemption_by_policy, TaskState};
use crate::sched::waker::{WakeContext, Waker};
use crate::sched::SpreadAttempts;
use crate::sched::{
    attach_task_avg, detach_task_avg, next_avg_idle, remote_callbacks, tunable_factor, RR_TIMESLICE_NS,
    WAKEUP_GRANULARITY_NS,
};
use crate::sim::run::PendingWakeup;
use crate::sim::Sim;
use crate::workload::estimates::loopback;
use crate::workload::SchedPolicy;

impl Sim {
    /// check_preempt_wakeup_fair (EEVDF): a reschedule the running task's accounting asked
    /// for reschedules; otherwise the woken `task` preempts when it is the pick, the running task
    /// keeping the CPU while its pick protects it. The loopback send of a request/response
    /// benchmark shows the rule at work: the receiver, woken in the sender's softirq, runs at
    /// once when the sender has run past it.
    ///
    /// `source` is the CPU the wake-up runs on: the decision is taken there, and reaches `cpu`
    /// as [`Sim::resched_curr`] says.
    ///
    /// With task groups the two tasks are compared where their entities meet
    /// (find_matching_se): in their group's run-queue when both are in one group, else at the
    /// root, a group's entity standing for its task; a woken task of a group that wins there
    /// leaves the group's own pick to say which of its tasks runs.
    fn fair_check_preempt_wakeup(&mut self, cpu: usize, task: usize, source: usize) {
        self.sched.update_curr(&self.q, cpu);
        let curr = self.sched.cpus[cpu].curr.expect("a current task");
        let level = self.sched.group_of(task);
        let in_group = !self.sched.groups || (level.is_some() && self.sched.group_of(curr) == level);
        if !in_group {
            self.sched.root_update_curr(&self.q, cpu);
        }
        let by_policy = preemption_by_policy(self.sched.policy(curr), self.sched.policy(task));
        if self.sched.cpus[cpu].resched || by_policy == Some(true) {
            self.resched_curr(cpu, None, source);
        } else if by_policy.is_some() {
            // A woken SCHED_BATCH or SCHED_IDLE task waits for the tick.
        } else if in_group {
            if self.sched.wakeup_pick(&self.q, cpu, level) == Some(task) {
                self.resched_curr(cpu, Some(task), source);
            } else {
                // A delayed task the reworked pick let go may have re-weighted the group.
                self.resched_asked(cpu, source);
            }
        } else {
            let woken = level.map_or(task, crate::sched::group::entity_id);
            if self.sched.wakeup_pick(&self.q, cpu, None) == Some(woken) {
                self.resched_curr(cpu, (woken == task).then_some(task), source);
            } else {
                self.resched_asked(cpu, source);
            }
        }
    }

    /// A reschedule asked of `cpu` by the root's accounting there on another CPU's behalf
    /// (`source`: a balancer's move, a wake-up that finished a delayed task there; with task
    /// groups, the group's re-weighting) reaches its task.
    pub(crate) fn resched_asked(&mut self, cpu: usize, source: usize) {
        if self.sched.groups && self.sched.cpus[cpu].resched && self.sched.cpus[cpu].curr.is_some() {
            self.resched_curr(cpu, None, source);
        }
    }

    /// resched_curr: a wake-up on `source` asks `cpu` to switch from its current task (to
    /// `next`, else to the pick). On the CPU itself that happens at once (the wake-up returns
    /// to the task through a reschedule). Another CPU learns it from an IPI; in a guest whose
    /// preset gives the cost (`vcpu_wake.resched_us`), the IPI reaches a running vCPU that much
    /// later and the waker pays the send. The need_resched flag it carries is the task's, set
    /// at once: a task that returns to user mode from a system call before the IPI stops there
    /// until it arrives (`Sim::interpret`), one that switches out first takes it along, and the
    /// IPI finds nothing to do; a second request before it arrives sends none
    /// (set_nr_and_not_polling).
    ///
    /// A wake-up from the running task's own loopback send (`Op::Loopback`) asks for the switch
    /// where the send returns to user mode, the preemption point of a kernel without forced
    /// preemption, and for the run-queue clock's next update to be skipped (wakeup_preempt's
    /// rq_clock_skip_update, which __schedule then honours): what the sender runs after the
    /// wake-up's last clock update is charged to the task switched in
    /// ([`loopback::TCP_WAKE_TO_RETURN_CYCLES`], measured).
    pub(crate) fn resched_curr(&mut self, cpu: usize, next: Option<usize>, source: usize) {
        // The flag is the running task's: the wake-up's sched_wakeup, logged on this CPU
        // after it, shows it (`N` in the flags column).
        if let Some(row) = self.run.pending_wakeup.as_mut().filter(|r| source == cpu && r.logged_cpu == cpu) {
            row.need_resched = true;
        }
        if source == cpu && self.sched.cpus[cpu].in_loopback_send {
            return self.resched_at_return(cpu, next);
        }
        let delay_ns = match self.machine.plat.file.vcpu_wake {
            Some(cost) if source != cpu => cost.resched_ns(),
            _ => 0,
        };
        if delay_ns == 0 {
            return self.preempt(cpu, next);
        }
        if self.sched.cpus[cpu].resched_ipi.is_some() {
            return;
        }
        let c = &mut self.sched.cpus[cpu];
        c.resched_ipi = Some(next);
        c.remote_resched_at = Some(self.q.now() + delay_ns);
        let token = c.switches;
        self.q.push(self.q.now() + delay_ns, Event::ReschedIpi { cpu: cpu as u32, token });
        self.spend_ipi_send(source);
    }

    /// The switch a wake-up from `cpu`'s own loopback send asked for: at the send's return to
    /// user mode, the clock's update skipped from the wake-up's last one ([`Sim::resched_curr`]).
    fn resched_at_return(&mut self, cpu: usize, next: Option<usize>) {
        if self.sched.cpus[cpu].resched_ipi.is_some() {
            return;
        }
        let now = self.q.now();
        let cycles_per_ns = self.core_rate(cpu, 0.0);
        let to_return = (loopback::TCP_WAKE_TO_RETURN_CYCLES / cycles_per_ns).round() as u64;
        let charged = ((loopback::TCP_WAKE_TO_RETURN_CYCLES - loopback::TCP_WAKEUP_TO_RETURN_CYCLES) / cycles_per_ns)
            .round() as u64;
        let c = &mut self.sched.cpus[cpu];
        c.resched_ipi = Some(next);
        c.clock_skip_from = Some(now + charged);
        let token = c.switches;
        self.q.push(now + to_return, Event::ReturnToUser { cpu: cpu as u32, token });
    }

    /// The reschedule IPI reaches `cpu`, still running the task it was sent for, which
    /// schedules: under EEVDF the pick as it stands now (pick_eevdf); under CFS the woken task
    /// if it still waits here (check_preempt_wakeup made it the next buddy), else the leftmost.
    pub(crate) fn resched_ipi(&mut self, cpu: usize) {
        let Some(wakee) = self.sched.cpus[cpu].resched_ipi.take() else { return };
        self.sched.cpus[cpu].remote_resched_at = None;
        let cfs_buddy = wakee.filter(|t| self.sched.eevdf.is_none() && self.sched.cpus[cpu].queue.contains(t));
        if self.sched.cpus[cpu].curr.is_some() {
            self.preempt(cpu, cfs_buddy);
        }
    }

    /// Recount `cpu` in `idle_cpus` and `idle_cores` after its current task changed. (Taking a
    /// queued task away never changes it: a CPU with a queue has a current task.)
    pub(crate) fn count_placement_idle(&mut self, cpu: usize) {
        let idle = self.sched.cpu_is_idle(cpu);
        if idle == self.sched.cpus[cpu].placement_idle {
            return;
        }
        self.sched.cpus[cpu].placement_idle = idle;
        let core = self.machine.plat.cpus[cpu].core;
        let threads = self.machine.plat.cores[core].cpus.len() as u32;
        let c = &mut self.hw.cores[core];
        let llc = &mut self.sched.llc_idle[self.machine.plat.cpus[cpu].llc];
        if idle {
            self.sched.idle_cpus += 1;
            llc.cpus += 1;
            c.placement_idle_threads += 1;
            if c.placement_idle_threads == threads {
                self.sched.idle_cores += 1;
                llc.cores += 1;
            }
        } else {
            self.sched.idle_cpus -= 1;
            llc.cpus -= 1;
            if c.placement_idle_threads == threads {
                self.sched.idle_cores -= 1;
                llc.cores -= 1;
            }
            c.placement_idle_threads -= 1;
        }
    }

    /// Advance the rq clocks and the root cfs_rq average of `cpu` to now, accounting the
    /// elapsed interval with the state it had (callers update before they change state).
    ///
    /// ```text
    ///   running:  clock_pelt += Δ · cap_orig/1024 · freq_scale/1024   (update_rq_clock_pelt, 5.1+;
    ///             before, clock_pelt += Δ and each contribution is scaled: Sim::pelt_scale)
    ///   idle:     clock_pelt  = clock_task                            (re-synced)
    ///   PELT time = clock_pelt - lost_idle
    /// ```
    ///
    /// While the CPU is still leaving its idle state nothing runs: Linux runs the idle task
    /// until the CPU can schedule, so the clock stays synced as for an idle CPU. The woken task
    /// is not counted as runnable either: a timer or an I/O completion wakes it only once the
    /// CPU is out of its idle state (a remote wake-up in the same LLC would have enqueued it
    /// already; that runnable time is left out).
    pub(crate) fn update_cpu_pelt(&mut self, cpu: usize) {
        let now = self.q.now();
        let pelt = self.sched.pelt_scale(&self.machine, cpu);
        let curr = self.sched.cpus[cpu].curr;
        // The cfs_rq signal runs only while a CFS task is current; RT time leaves it to decay.
        let running = curr.is_some_and(|t| self.sched.rt_prio(t).is_none());
        let nr = self.sched.nr_running(cpu);
        let c = &mut self.sched.cpus[cpu];
        // update_cfs_rq_load_avg takes off what left since the last update, then decays.
        if let Some(gone) = c.removed.take_due(now) {
            detach_task_avg(&mut c.avg, &gone);
            c.util_changed = true;
        }
        let uncharged_until = c.stall_until.min(c.stall_charged_from);
        if curr.is_some() && uncharged_until > c.clock_task {
            let end = uncharged_until.min(now);
            c.clock_task = end;
            c.clock_pelt = end;
            c.stall_pelt_end = end - c.lost_idle;
            let waiting = nr.saturating_sub(1);
            c.util_changed |= c.avg.update_scaled(c.stall_pelt_end, waiting * 1024, waiting, false, 1, pelt);
        }
        let delta = now - c.clock_task;
        c.clock_task = now;
        if curr.is_some() {
            c.clock_pelt += pelt.clock_delta(delta);
        } else {
            c.clock_pelt = now;
        }
        let pelt_now = c.clock_pelt - c.lost_idle;
        if c.avg.update_scaled(pelt_now, nr * 1024, nr, running, 1, pelt) {
            c.util_changed = true;
            // util_avg may exceed the capacity scale for a while after migrations attach
            // tasks' util (as in Linux); the reported signal is clipped at the scale.
            let util = c.avg.util_avg.min(SCHED_CAPACITY_SCALE);
            c.util_avg_max = c.util_avg_max.max(util);
            if let Some(tl) = self.run.timeline(&mut self.sched.charges) {
                tl.util(now, cpu, util);
            }
        }
    }

    /// Put a woken task on `cpu`'s run-queue (moving its PELT contribution if it changed CPU),
    /// run it if the CPU is idle, else check whether it preempts the current task.
    /// `source` is the CPU whose wake-up (or fork) enqueues it.
    pub(crate) fn enqueue(&mut self, task: usize, cpu: usize, source: usize, join: fair::Join, flags: UpdateFlags) {
        // The wake-up's row, logged once its accounting is (`Run::pending_wakeup`), and where
        // that accounting is logged.
        let row = self.run.timeline.is_some().then(|| self.wakeup_row(task, cpu, source));
        self.sched.accounting_cpu = row.map(|r| r.logged_cpu).filter(|&c| c != cpu);
        let prev = self.sched.tasks[task].cpu;
        if prev != cpu {
            // Decay the task to now on its old CPU, detach it there, attach it here.
            self.update_cpu_pelt(prev);
            self.sched.update_task_pelt(&self.machine, task, false, false);
            // migrate_task_rq_fair leaves its averages to `prev`'s next update too
            // (`sched::Removed`); the model takes them off at once.
            detach_task_avg(&mut self.sched.cpus[prev].avg, &self.sched.tasks[task].avg);
            self.sched.cpus[prev].util_changed = true;
            self.update_cpu_pelt(cpu);
            let pelt_now = self.sched.cpu_pelt_now(cpu);
            self.sched.tasks[task].avg.last_update_time = pelt_now;
            attach_task_avg(&mut self.sched.cpus[cpu].avg, &self.sched.tasks[task].avg);
            self.sched.cpus[cpu].util_changed = true;
            self.sched.tasks[task].cpu = cpu;
        } else {
            self.update_cpu_pelt(cpu);
            self.sched.update_task_pelt(&self.machine, task, false, false);
        }
        if self.sched.eevdf.is_some() {
            if join != fair::Join::Requeue && self.sched.rt_prio(task).is_none() {
                self.sched.fair_place(&self.q, task, cpu, join);
            }
        } else {
            // Sleeper credit: a waking task may be up to half a latency period ahead.
            let floor = self.sched.cpus[cpu].min_vruntime.saturating_sub(self.sched.sched_latency_ns() / 2);
            let t = &mut self.sched.tasks[task];
            t.vruntime = if prev == cpu { t.vruntime.max(floor) } else { floor };
        }
        let t = &mut self.sched.tasks[task];
        t.state = TaskState::Runnable;
        self.run.pending_wakeup = row;
        self.sched.cpus[cpu].util_est_sum += self.sched.tasks[task].util_est.value();
        self.sched.rq_attach(task, cpu);
        if self.sched.cpus[cpu].curr.is_none() {
            self.run.timeline(&mut self.sched.charges);
            self.set_curr(cpu, task);
            self.start_clock_at_enqueue(cpu, task, source, join);
        } else {
            self.sched.cpus[cpu].vcpu_wake_ns = None;
            self.sched.queue_push(cpu, task);
            self.sched.waiting += 1;
            let curr = self.sched.cpus[cpu].curr.expect("a current task");
            // A task past its exit_notify runs on to do_task_dead's __schedule, which picks
            // what a wake-up would have preempted it for: exit_notify wakes under tasklist_lock
            // (preemption off) and the rest of do_exit has no preemption point under the
            // recordings' kernel's preemption model. Their zombies leave as Z with the task
            // they woke next in 3,693 of 4,142 exits that woke one (gitsource; kernbench 629
            // of 666), preempted in the rest (R+) by earlier wake-ups (exit_files' closes).
            let exiting = self.sched.tasks[curr].exit_notified;
            let quiet_fork = join == fair::Join::Fork && self.sched.eevdf.is_some_and(|r| r.reworked_wakeup_check);
            let leaving_idle = self.sched.cpus[cpu].stall_until > self.q.now();
            match (self.sched.rt_prio(task), self.sched.rt_prio(curr)) {
                (None, None) if leaving_idle => {
                    self.pick_on_waking_cpu(cpu, task, curr);
                    self.start_clock_at_enqueue(cpu, task, source, join);
                }
                _ if exiting => {}
                // The 6.18 stable series' reworked check_preempt_wakeup_fair returns before
                // its pick for a fork's wake-up (WF_FORK): the child never preempts.
                (None, None) if quiet_fork => {}
                // An RT task preempts CFS and lower RT priorities at once.
                (Some(_), None) => self.preempt(cpu, Some(task)),
                (Some(p), Some(q)) if p > q => self.preempt(cpu, Some(task)),
                (None, None) => self.check_preempt_wakeup(cpu, task, source),
                _ => {}
            }
            // The wake-up's row, after wakeup_preempt's accounting (Run::pending_wakeup).
            self.run.timeline(&mut self.sched.charges);
        }
        self.sched.accounting_cpu = None;
        self.check_overutilized(cpu);
        if flags.remote && !remote_callbacks(self.machine.kernel) {
            return;
        }
        if self.sched.rt_prio(task).is_some() {
            // enqueue_top_rt_rq calls the governor every time.
            self.cpufreq_update_util(cpu, flags);
        } else {
            self.cfs_util_change(cpu, flags);
        }
    }

    /// The sched_wakeup row of a wake-up of `task` onto `cpu` from `source`. One queued on an
    /// idle CPU's wake list is enqueued, and logged, there when the IPI arrives
    /// (ttwu_queue_cond: for an idle CPU sharing the LLC since 6.0, when the WF_ON_CPU condition
    /// went; before, the waker enqueued it at once), and so is one queued while an earlier
    /// wake-up's IPI is on its way; one for another LLC goes by the wake list too. Any other
    /// the waker enqueues itself (ttwu_runnable, or a busy CPU of its LLC): the row, and the
    /// accounting of that CPU's running task that comes with it, are logged on the waker's CPU.
    fn wakeup_row(&self, task: usize, cpu: usize, source: usize) -> PendingWakeup {
        let wake_list = self.idle_cpus_take_the_wake_list();
        let queued_ns = match self.sched.cpus[cpu].vcpu_wake_ns {
            Some((ipi_ns, _)) if wake_list => ipi_ns,
            None if wake_list => self.sched.cpus[cpu].vcpu_ipi_until.saturating_sub(self.q.now()),
            _ => 0,
        };
        let same_llc = self.machine.plat.cpus[source].llc == self.machine.plat.cpus[cpu].llc;
        let by_wake_list = queued_ns > 0 || !same_llc || (wake_list && self.sched.cpus[cpu].curr.is_none());
        let logged_cpu = if by_wake_list { cpu } else { source };
        PendingWakeup { at: self.q.now() + queued_ns, task, cpu, logged_cpu, need_resched: false }
    }

    /// Whether a wake-up onto an idle CPU of the waker's LLC goes by the target's wake list
    /// (ttwu_queue_cond, from 6.0, when the WF_ON_CPU condition went); before, the waker
    /// enqueues it itself.
    fn idle_cpus_take_the_wake_list(&self) -> bool {
        self.machine.kernel >= crate::kernel::KernelVersion(6, 0, 0)
    }

    /// The clock of `task`, just made current on `cpu` by its enqueue from `source`, starts
    /// where the kernel's enqueue updated the run-queue clock, if the CPU is still leaving
    /// idle: its idle task runs until it has, and the pick's own clock update is skipped
    /// (wakeup_preempt's rq_clock_skip_update), so set_next_entity's exec_start is that
    /// enqueue's clock. A wake-up the target runs itself is enqueued once the CPU is out of idle
    /// or the halted vCPU's IPI has reached it (`Cpu::stall_charged_from`): the wake list's
    /// sched_ttwu_pending (from 6.0 for any idle CPU, ttwu_queue_cond; before, only from
    /// another LLC) or the CPU's own interrupt. A fork's (wake_up_new_task), and a wake-up from
    /// a CPU of the same LLC before 6.0, are enqueued by the waker at once. Each later enqueue
    /// there moves the clock on (`Sched::update_curr`).
    fn start_clock_at_enqueue(&mut self, cpu: usize, task: usize, source: usize, join: fair::Join) {
        let now = self.q.now();
        let c = &self.sched.cpus[cpu];
        if c.stall_until <= now || c.curr != Some(task) {
            return;
        }
        let wake_list = self.idle_cpus_take_the_wake_list()
            || self.machine.plat.cpus[source].llc != self.machine.plat.cpus[cpu].llc;
        let by_target = join == fair::Join::Wake && (wake_list || source == cpu);
        self.sched.tasks[task].exec_start_ns = if by_target { now.max(c.stall_charged_from) } else { now };
    }

    /// CFS's governor callback: the scheduler calls cpufreq_update_util from CFS only when
    /// the root cfs_rq's util changed (`cfs_rq_util_change` after a PELT update that crossed
    /// a period boundary, or a task's util attaching or leaving), so a CPU that switches
    /// tasks many times a millisecond is evaluated about once per 1024-µs period. An enqueued
    /// task that waited on I/O gets its own callback with the iowait flag, whatever changed.
    pub(crate) fn cfs_util_change(&mut self, cpu: usize, flags: UpdateFlags) {
        let changed = std::mem::take(&mut self.sched.cpus[cpu].util_changed);
        if changed || flags.iowait {
            self.cpufreq_update_util(cpu, flags);
        }
    }

    /// A wake-up queued on `cpu` while it is still leaving idle for an earlier one, whose task
    /// `first` has not run yet. The kernel has both queued before the idle task's schedule()
    /// picks (the IPI's sched_ttwu_pending enqueues every wake-up on the list; a waker's own
    /// enqueue finds need_resched set and sends nothing), so nothing is preempted: the pick
    /// takes the two as equals (pick_eevdf with no running task to protect; CFS's leftmost
    /// vruntime). When it takes the later, the earlier goes back to the queue, never having
    /// run, and the trace never shows it switched in. The earlier joined the run-queue first,
    /// so it keeps a tie of deadlines (the kernel's tree puts an equal key after those there).
    fn pick_on_waking_cpu(&mut self, cpu: usize, task: usize, first: usize) {
        let later_first = if self.sched.eevdf.is_some() {
            let level = self.sched.group_of(task);
            let same_level = level == self.sched.group_of(first);
            let (t, f) = (&self.sched.tasks[task], &self.sched.tasks[first]);
            let tie = t.deadline == f.deadline && self.sched.level_load(cpu, first).eligible(f.vruntime);
            same_level && !tie && self.sched.peek_at(cpu, level, true, false) == Some(task)
        } else {
            self.sched.tasks[task].vruntime < self.sched.tasks[first].vruntime
        };
        if !later_first {
            return;
        }
        let before = self.run.timeline(&mut self.sched.charges).and_then(|tl| tl.retract_switch(cpu, first));
        self.sched.queue_remove(cpu, task);
        self.sched.queue_push(cpu, first);
        // The earlier task's switch costs are not spent: its hold past the idle exit is the
        // switch, and its remote wake-up's cache misses when it had one (`spend_switch`),
        // which it pays when it runs. An IPI the vCPU is sending still holds it
        // (`spend_ipi_send`): its task is handed empty segments until the send ends.
        let held_ns = self.sched.cpus[cpu].halt_until.saturating_sub(self.sched.cpus[cpu].stall_until);
        let switch_ns = self.switch_ns(cpu);
        self.sched.tasks[first].woken_remote = held_ns > switch_ns;
        let c = &mut self.sched.cpus[cpu];
        c.curr = None;
        c.seg_token = c.seg_token.wrapping_add(1);
        c.halt_until = c.halt_until.min(c.stall_until).max(c.ipi_send_until);
        c.switched_out = before.flatten();
        self.set_curr(cpu, task);
    }

    /// check_preempt_wakeup: whether the woken `task`, just queued on `cpu` by a wake-up running
    /// on `source`, preempts the task running there. Nothing to check when that task already
    /// has a reschedule on its way (test_tsk_need_resched, before any accounting, in CFS's
    /// check_preempt_wakeup and EEVDF's check_preempt_wakeup_fair alike): an earlier
    /// wake-up's IPI, or the switch its own send asked for at its return to user mode.
    pub(crate) fn check_preempt_wakeup(&mut self, cpu: usize, task: usize, source: usize) {
        if self.sched.cpus[cpu].resched_ipi.is_some() {
            return;
        }
        if self.sched.eevdf.is_some() {
            return self.fair_check_preempt_wakeup(cpu, task, source);
        }
        let curr = self.sched.cpus[cpu].curr.expect("a current task");
        self.sched.update_curr(&self.q, cpu);
        match preemption_by_policy(self.sched.policy(curr), self.sched.policy(task)) {
            Some(true) => return self.resched_curr(cpu, None, source),
            Some(false) => return,
            None => {}
        }
        // wakeup_gran: the granularity in the woken task's virtual time, so that a lighter
        // task preempts less readily and a heavier one more.
        let gran = WAKEUP_GRANULARITY_NS * tunable_factor(self.sched.cpus.len());
        let gran = calc_delta_fair(gran, self.sched.tasks[task].weight());
        if self.sched.tasks[task].vruntime + gran < self.sched.tasks[curr].vruntime {
            self.resched_curr(cpu, Some(task), source);
        }
    }

    /// Switch from the current task to `next` (or the best waiting one), keeping the current
    /// one runnable in the queue.
    pub(crate) fn preempt(&mut self, cpu: usize, next: Option<usize>) {
        let curr = self.sched.cpus[cpu].curr.expect("a current task");
        // __schedule honours a skip asked for, whether or not it switches: taken before this
        // accounting, which stands for the update it skips.
        let skip_from = self.sched.cpus[cpu].clock_skip_from.take();
        self.sched.update_curr(&self.q, cpu);
        // A skipped clock update (rq_clock_skip_update): the time since the clock's last update
        // is not the running task's. It is charged up to that update (its deadline, renewed or
        // not by the accounting above, is left as it is: the interval is under a µs), and the
        // pick sees it so; what was skipped goes to the task switched in, at its own first
        // accounting, as its exec_start is that stale clock (switch_in), or back to this one
        // if it keeps the CPU. Until then a run-queue's V sees neither (requeue_delayed_entity
        // reads it so).
        let skipped = skip_from.map_or(0, |from| self.q.now().saturating_sub(from));
        self.sched.uncharge(curr, skipped);
        self.update_cpu_pelt(cpu);
        self.sched.update_task_pelt(&self.machine, curr, true, true);
        let kept = |sim: &mut Sim| sim.sched.tasks[curr].exec_start_ns -= skipped;
        let next = match next {
            Some(next) => next,
            // EEVDF: the running task competes in the pick, and may win it.
            None if self.sched.eevdf.is_some() && self.sched.rt_prio(curr).is_none() => {
                match self.sched.fair_repick(&self.q, cpu) {
                    Some(next) => next,
                    None => return kept(self),
                }
            }
            // Nothing left to switch to (the woken task was pulled away before a deferred
            // switch): __schedule picks the running task again.
            None if self.sched.cpus[cpu].queue.is_empty() => return kept(self),
            None => self.sched.best_queued(cpu),
        };
        self.sched.queue_remove(cpu, next);
        self.sched.queue_push(cpu, curr);
        let c = &mut self.sched.cpus[cpu];
        c.skipped_to_next_ns = skipped;
        c.curr = None;
        c.switched_out = Some((curr, 'R'));
        c.seg_token = c.seg_token.wrapping_add(1);
        self.set_curr(cpu, next);
    }

    /// When `cpu`, idle in `state`, can run again if it is woken now. The hardware's state is
    /// the core's, the shallowest its threads asked for (a core C-state "is determined by the
    /// lowest numerical thread state", Intel's datasheets): a thread whose sibling is running,
    /// or still waking, finds the core up and waits at most for the sibling's exit to end;
    /// otherwise it pays the exit latency of the shallowest state among the core's idle
    /// threads, itself included: the measured one while the package is awake, where the preset
    /// gives it, else the table's.
    pub(crate) fn core_ready_at(&self, cpu: usize, state: usize) -> TimeNs {
        let now = self.q.now();
        let siblings = self.machine.plat.cores[self.machine.plat.cpus[cpu].core].cpus.iter().filter(|&&c| c != cpu);
        let mut core_state = state;
        let mut awake_until = None;
        for &sib in siblings {
            match self.sched.cpus[sib].idle_state {
                Some(s) => core_state = core_state.min(s),
                None => awake_until = Some(awake_until.unwrap_or(now).max(self.sched.cpus[sib].stall_until)),
            }
        }
        // The package sleeps only when every core is power-gated (its uncore has no level).
        let package_awake = self.hw.packages[self.machine.plat.cpus[cpu].package].uncore_level.is_some();
        match awake_until {
            Some(t) => t.max(now),
            None => now + self.machine.plat.cluster_of_cpu(cpu).idle_states[core_state].hardware_exit_ns(package_awake),
        }
    }

    /// Make `task` the running task of `cpu`, waking the CPU from idle if needed, and run it.
    pub(crate) fn set_curr(&mut self, cpu: usize, task: usize) {
        if self.switch_in(cpu, task) {
            self.run_program(cpu);
        }
    }

    /// Make `task` the running task of `cpu`, waking the CPU from idle if needed. Returns
    /// whether its program is to be interpreted now (the caller does it); otherwise a run
    /// segment was started.
    #[must_use]
    pub(crate) fn switch_in(&mut self, cpu: usize, task: usize) -> bool {
        let now = self.q.now();
        if self.sched.cpus[cpu].curr.is_none() {
            self.update_cpu_pelt(cpu);
        }
        self.sched.update_task_pelt(&self.machine, task, true, false);
        if let Some(state) = self.sched.cpus[cpu].idle_state {
            // avg_idle averages whole idle periods (ttwu_do_activate, from rq->idle_stamp); the
            // idle governor learns the residency of the state it chose last.
            let idle_ns = now - self.sched.cpus[cpu].idle_entered;
            let in_state_ns = now - self.sched.cpus[cpu].idle_since;
            self.sched.cpus[cpu].avg_idle_ns = next_avg_idle(self.sched.cpus[cpu].avg_idle_ns, idle_ns);
            self.sched.account_busy_idle(&self.q, cpu);
            self.sync_counters(cpu);
            // A halted vCPU woken by IPI first waits for the host to run it, then leaves idle.
            let (ipi_ns, resume_ns) = self.sched.cpus[cpu].vcpu_wake_ns.take().unwrap_or((0, 0));
            if ipi_ns > 0 {
                self.sched.cpus[cpu].vcpu_ipi_until = now + ipi_ns;
            }
            let ready_at = self.core_ready_at(cpu, state) + ipi_ns + resume_ns;
            // cpuidle measures the residency up to the state's return: the exit included.
            let declared_exit_ns = self.machine.plat.idle_timing_of_cpu(cpu)[state].exit_ns;
            self.hw.idle_governor.reflect(cpu, in_state_ns + (ready_at - now), declared_exit_ns);
            self.set_idle_state(cpu, None);
            self.sched.cpus[cpu].stall_until = ready_at;
            // The kernel charges the task from its enqueue (`Cpu::stall_charged_from`): on a
            // vCPU woken by IPI, the IPI handler's from 6.0 (the wake list), the waker's own
            // before; a CPU leaving a C-state is charged from its exit, as the model has it.
            // (Before 6.0 a same-LLC waker enqueues on a bare-metal idle CPU at once too, which
            // would charge its C-state exit: not modelled.)
            let wake_list = self.idle_cpus_take_the_wake_list();
            self.sched.cpus[cpu].stall_charged_from = match ipi_ns {
                0 => ready_at,
                _ if wake_list => now + ipi_ns,
                _ => now,
            };
            let core = self.machine.plat.cpus[cpu].core;
            self.hw.cores[core].busy_threads += 1;
            self.core_changed(core, cpu);
            self.sched.arm_tick(&self.machine, &mut self.q, cpu);
            if let Some(tl) = self.run.timeline(&mut self.sched.charges) {
                tl.hold_until(cpu, ready_at);
                tl.idle(now, cpu, "C0");
            }
        }
        let c = &mut self.sched.cpus[cpu];
        c.curr = Some(task);
        c.switches = c.switches.wrapping_add(1);
        c.resched_ipi = None;
        c.remote_resched_at = None;
        c.clock_skip_from = None;
        let prev = c.switched_out.take();
        self.sched.fair_set_next(&self.q, cpu, task);
        self.count_placement_idle(cpu);
        if let Some(tl) = self.run.timeline(&mut self.sched.charges) {
            tl.switch(now, cpu, prev.map(|p| p.0), prev.map_or('I', |p| p.1), Some(task));
        }
        self.spend_switch(cpu, task);
        let skipped = std::mem::take(&mut self.sched.cpus[cpu].skipped_to_next_ns);
        let t = &mut self.sched.tasks[task];
        t.exec_start_ns = now - skipped;
        t.slice_start_exec_ns = t.sum_exec_ns;
        // A CPU still leaving its idle state runs nothing, not even instant operations: an
        // empty segment ends when it is ready, and the program goes on from there.
        if t.work_left > 0.0 || self.sched.cpus[cpu].stall_until.max(self.sched.cpus[cpu].halt_until) > now {
            self.start_segment(cpu);
            return false;
        }
        true
    }

    /// The switch to `task`, now current on `cpu`, takes the platform's `sched_costs`: the
    /// context switch at the CPU's speed, and for a task woken from another CPU the cache
    /// misses of its first run. The CPU is held for them (busy, the task's work not advancing),
    /// after it has left any idle state and any hold under way.
    fn spend_switch(&mut self, cpu: usize, task: usize) {
        let remote = std::mem::take(&mut self.sched.tasks[task].woken_remote);
        let Some(costs) = self.machine.plat.file.sched_costs else { return };
        let remote_ns = if remote { costs.remote_wake_ns() } else { 0 };
        let hold_ns = self.switch_ns(cpu) + remote_ns;
        if hold_ns == 0 {
            return;
        }
        let c = &mut self.sched.cpus[cpu];
        c.halt_until = self.q.now().max(c.stall_until).max(c.halt_until) + hold_ns;
    }

    /// A context switch on `cpu` at its speed now (the preset's `sched_costs.switch_cycles`), ns.
    fn switch_ns(&self, cpu: usize) -> u64 {
        let cycles = self.machine.plat.file.sched_costs.map_or(0.0, |costs| costs.switch_cycles);
        (cycles / self.core_rate(cpu, 0.0)).round() as u64
    }

    /// The current task finished its run segment.
    pub(crate) fn segment_end(&mut self, cpu: usize) {
        self.sched.account_segment(&self.q, cpu);
        let task = self.sched.cpus[cpu].curr.expect("a current task");
        let t = &mut self.sched.tasks[task];
        // What floating-point rounding left over is done too: the end time was rounded up.
        t.work_done += t.work_left;
        t.work_left = 0.0;
        self.run_program(cpu);
    }

    /// Take the current task off the CPU to sleep, until `wake_at` or until woken.
    pub(crate) fn sleep_curr(&mut self, cpu: usize, wake_at: Option<u64>) {
        self.put_to_sleep(cpu, wake_at);
        self.pick_next(cpu);
    }

    /// Put the current task to sleep and switch `cpu` to what runs next. Returns whether the
    /// next task's program is to run now.
    pub(crate) fn block_and_switch(&mut self, cpu: usize, wake_at: Option<u64>) -> bool {
        self.put_to_sleep(cpu, wake_at);
        self.switch_next(cpu)
    }

    /// Make the current task, past its `exit_notify`, leave `cpu` for good and switch to what
    /// runs next (do_task_dead's `__schedule`). Returns whether the next task's program is to
    /// run now.
    pub(crate) fn exit_and_switch(&mut self, cpu: usize) -> bool {
        self.put_to_exit(cpu);
        self.switch_next(cpu)
    }

    /// The governor callback of a dequeue that takes `task` off `cpu` (sleep or exit). In
    /// `__schedule` the dequeue (`deactivate_task` → `dequeue_task`) runs before the CPU picks
    /// its next task and, finding none, switches to the idle task, whose idle loop is what
    /// counts an idle call (`tick_nohz_idle_stop_tick`, kernel/time/tick-sched.c). So the
    /// governor sees the CPU as still busy at a sleep: schedutil's busy hold
    /// (`sugov_cpu_is_busy`) applies to it.
    pub(crate) fn dequeue_callback(&mut self, cpu: usize, task: usize) {
        if self.sched.rt_prio(task).is_some() {
            // dequeue_top_rt_rq calls the governor every time.
            self.cpufreq_update_util(cpu, UpdateFlags::default());
        } else {
            // dequeue_entity's PELT update (cfs_rq_util_change when the util changed).
            self.cfs_util_change(cpu, UpdateFlags::default());
        }
    }

    /// The first part of a sleep: the task leaves `cpu`, with its timer armed, and the
    /// dequeue's governor callback runs.
    pub(crate) fn put_to_sleep(&mut self, cpu: usize, wake_at: Option<u64>) {
        let task = self.dequeue_curr(cpu);
        if self.sched.eevdf.is_some() {
            self.sched.fair_block(&self.q, cpu, task);
        }
        let cap = self.machine.plat.cpus[cpu].cap_orig;
        let t = &mut self.sched.tasks[task];
        t.util_est.on_sleep(t.avg.util_avg, t.avg.runnable_avg, cap);
        t.state = TaskState::Sleeping;
        t.timer_token = t.timer_token.wrapping_add(1);
        if let Some(at) = wake_at {
            let token = t.timer_token;
            self.q.push(at, Event::TimerWake { task: task as u32, token });
            self.sched.cpus[cpu].timers.push(std::cmp::Reverse(at));
        }
        self.dequeue_callback(cpu, task);
    }

    /// do_exit up to its exit_notify, in the exiting task's context on `cpu`: the
    /// sched_process_exit event, then exit_notify makes the task a zombie (a parent that runs
    /// next and calls wait4 reaps it without sleeping) and do_notify_parent's SIGCHLD and
    /// __wake_up_parent wake a parent sleeping in wait4: modelled without the sync hint, as the
    /// SIGCHLD's signal_wake_up wakes a parent that handles the signal (shells, make) first;
    /// __wake_up_parent's own wake-up, sync, is left out. The task still runs: the
    /// parent's wake-up is logged with the child as the waker, from the child's CPU, and its
    /// last switch (do_task_dead) comes after, without a preemption before it (see
    /// [`Sim::enqueue`]).
    pub(crate) fn exit_notify(&mut self, cpu: usize) {
        let task = self.sched.cpus[cpu].curr.expect("a current task");
        self.sched.tasks[task].exit_notified = true;
        if let Some(tl) = self.run.timeline(&mut self.sched.charges) {
            tl.process(self.q.now(), cpu, 'X', task, None);
        }
        if let Some(parent) = self.sched.tasks[task].parent {
            let p = &mut self.sched.tasks[parent];
            p.live_children -= 1;
            if p.live_children == 0 && p.waiting_children {
                p.waiting_children = false;
                self.wake_task(parent, Waker::Task { cpu, sync: false }, UpdateFlags::default());
            }
        }
    }

    /// do_task_dead: the zombie leaves `cpu` for good, dequeued before the switch like a sleep.
    ///
    /// Its `prev_state` is its exit_state (`__trace_sched_switch_state` through
    /// `__task_state_index`: TASK_DEAD itself is not a reported state): 'Z' for a child of a
    /// simulated parent, which exit_notify left a zombie and which its parent reaps only after
    /// this switch (the model runs nothing between exit_notify and do_task_dead; the kernel's
    /// rare race where the parent's wait_task_zombie already made it EXIT_DEAD, 'X', is left
    /// out); 'X' for a workload's first tasks, whose parent is outside the simulation: a
    /// thread (autoreaped by exit_notify) or a process whose launcher has the same choice.
    pub(crate) fn put_to_exit(&mut self, cpu: usize) {
        let task = self.dequeue_curr(cpu);
        self.sched.fair_exit(&self.q, cpu, task);
        // task_dead_fair: its averages leave at the CPU's next update (`sched::Removed`).
        let now = self.q.now();
        self.sched.cpus[cpu].removed.add(now, &self.sched.tasks[task].avg);
        self.sched.tasks[task].state = TaskState::Exited;
        let exit_state = if self.sched.tasks[task].parent.is_some() { 'Z' } else { 'X' };
        self.sched.cpus[cpu].switched_out = Some((task, exit_state));
        self.sched.live_tasks -= 1;
        self.dequeue_callback(cpu, task);
    }

    /// Remove the current task from `cpu` (settling its runtime and PELT).
    pub(crate) fn dequeue_curr(&mut self, cpu: usize) -> usize {
        let task = self.sched.cpus[cpu].curr.expect("a current task");
        self.sched.update_curr(&self.q, cpu);
        self.update_cpu_pelt(cpu);
        self.sched.update_task_pelt(&self.machine, task, true, true);
        self.sched.rq_detach(task, cpu);
        let ue = self.sched.tasks[task].util_est.value();
        self.sched.uclamp_dequeued(task, cpu);
        let c = &mut self.sched.cpus[cpu];
        c.util_est_sum -= c.util_est_sum.min(ue);
        c.curr = None;
        c.switched_out = Some((task, 'S'));
        c.seg_token = c.seg_token.wrapping_add(1);
        self.count_placement_idle(cpu);
        task
    }

    /// Run the next waiting task, or pull one from a busy CPU, or go idle.
    pub(crate) fn pick_next(&mut self, cpu: usize) {
        if self.switch_next(cpu) {
            self.run_program(cpu);
        }
    }

    /// Switch `cpu` to the next waiting task, or one pulled from a busy CPU, or go idle.
    /// Returns whether the new task's program is to be interpreted now (the caller does it).
    #[must_use]
    pub(crate) fn switch_next(&mut self, cpu: usize) -> bool {
        debug_assert!(self.sched.cpus[cpu].curr.is_none(), "pick_next on a busy CPU");
        if let Some(next) = self.sched.pick_queued(&self.q, cpu) {
            self.sched.queue_remove(cpu, next);
            self.sched.waiting -= 1;
            return self.switch_in(cpu, next);
        }
        // With EAS, balancing waits until the system is overutilized. A CPU that is idle only
        // briefly, on average, does not balance on going idle; the version sets how brief
        // (sched_balance_newidle, `sched/newidle.rs`), and from 6.1.160, 6.12.65 and 6.18.5
        // draws lots on the balances' recent success; nor does it while the root domain's
        // overload flag is clear. The balance refreshes the flag (update_sd_lb_stats of the top
        // domain), from the run-queues as they stand before anything moves. A balance EAS
        // refuses is not counted (the kernel times it and, with the lottery, counts a failure).
        let gate = Gate::for_kernel(self.machine.kernel);
        let (now, avg_idle, overloaded) = (self.q.now(), self.sched.cpus[cpu].avg_idle_ns, self.sched.rd_overloaded);
        let sched = &mut self.sched;
        let die = || rand::Rng::gen_range(&mut sched.rng, 0..1024);
        let admitted = sched.cpus[cpu].newidle.admit(gate, avg_idle, overloaded, now, die);
        if let Some(admitted) = admitted.filter(|_| self.load_balance_allowed()) {
            self.refresh_rd_overloaded();
            if let Some((src, task)) = self.sched.find_busiest(&self.machine, &self.q, cpu) {
                self.sched.cpus[cpu].newidle.after_balance(gate, admitted, true, now);
                self.sched.queue_remove(src, task);
                self.sched.waiting -= 1;
                self.note_migration(task, (src, cpu), "pull", (cpu, WakeContext::Task));
                self.migrate_queued(task, src, cpu);
                return self.switch_in(cpu, task);
            }
            let pulled = self.pull_misfit(cpu);
            self.sched.cpus[cpu].newidle.after_balance(gate, admitted, pulled, now);
            if pulled {
                return false;
            }
        }
        self.go_idle(cpu);
        false
    }

    /// Move a waiting (not running) task between run-queues: [`Sim::detach_queued`], then
    /// [`Sim::attach_queued`].
    pub(crate) fn migrate_queued(&mut self, task: usize, src: usize, dst: usize) {
        self.detach_queued(task, src, dst);
        self.attach_queued(task, dst);
    }

    /// A waiting task taken off `src`'s run-queue by CPU `by` to move (detach_task): its load
    /// leaves the CPU's averages and it takes its lag along; until [`Sim::attach_queued`] it is
    /// on no run-queue.
    pub(crate) fn detach_queued(&mut self, task: usize, src: usize, by: usize) {
        self.update_cpu_pelt(src);
        self.sched.update_task_pelt(&self.machine, task, true, false);
        let ue = self.sched.tasks[task].util_est.value();
        self.sched.uclamp_dequeued(task, src);
        let s = &mut self.sched.cpus[src];
        detach_task_avg(&mut s.avg, &self.sched.tasks[task].avg);
        s.util_changed = true;
        s.util_est_sum -= s.util_est_sum.min(ue);
        let src_min = s.min_vruntime;
        self.sched.rq_detach(task, src);
        if self.sched.eevdf.is_some() {
            self.sched.fair_detach(&self.q, task, src);
        } else {
            // CFS: the vruntime travels relative to the source's min_vruntime.
            let t = &mut self.sched.tasks[task];
            t.vruntime = t.vruntime.saturating_sub(src_min);
        }
        self.resched_asked(src, by);
    }

    /// A task detached by [`Sim::detach_queued`] joining `dst`'s run-queue (attach_task): its
    /// load joins the CPU's averages and it is placed there. The caller queues it.
    pub(crate) fn attach_queued(&mut self, task: usize, dst: usize) {
        self.update_cpu_pelt(dst);
        let pelt_now = self.sched.cpu_pelt_now(dst);
        let ue = self.sched.tasks[task].util_est.value();
        let d = &mut self.sched.cpus[dst];
        attach_task_avg(&mut d.avg, &self.sched.tasks[task].avg);
        d.util_changed = true;
        d.util_est_sum += ue;
        let dst_min = d.min_vruntime;
        let t = &mut self.sched.tasks[task];
        t.avg.last_update_time = pelt_now;
        t.cpu = dst;
        if self.sched.eevdf.is_some() {
            self.sched.fair_attach(&self.q, task, dst);
        } else {
            self.sched.tasks[task].vruntime += dst_min;
        }
        self.sched.rq_attach(task, dst);
    }

    /// Scheduler tick of a busy CPU: counters and invariance, PELT, the governor hook, slice
    /// expiry, and a push of waiting work to idle CPUs.
    pub(crate) fn tick(&mut self, cpu: usize) {
        let Some(curr) = self.sched.cpus[cpu].curr else {
            self.sched.cpus[cpu].tick_armed = false;
            self.deepen_idle(cpu);
            return;
        };
        self.rcu_tick(cpu);
        if self.hw.x86_counters(&self.machine) {
            self.sync_counters(cpu);
            let c = &mut self.hw.counters[cpu];
            let acnt = (c.aperf - c.tick_aperf) as u64;
            let mcnt = (c.mperf - c.tick_mperf) as u64;
            c.tick_aperf = c.aperf;
            c.tick_mperf = c.mperf;
            if self.sched.invariant && mcnt > 0 {
                let ratio = self.machine.freq_ratio[self.machine.plat.cpus[cpu].cluster];
                match crate::hw::invariance::scale_from_counters(acnt, mcnt, ratio) {
                    Some(s) => self.sched.cpus[cpu].freq_scale = s,
                    None => self.sched.disable_invariance(),
                }
            }
        }
        self.sched.update_curr(&self.q, cpu);
        self.update_cpu_pelt(cpu);
        self.sched.update_task_pelt(&self.machine, curr, true, true);
        if let Some(g) = self.sched.cpus[cpu].root_curr_group {
            self.sched.group_tick(&self.q, cpu, g);
        }
        if self.sched.rt_prio(curr).is_some() {
            self.cpufreq_update_util(cpu, UpdateFlags::default());
        } else {
            // entity_tick's PELT update: a tick is 1–10 periods, so it nearly always counts.
            self.cfs_util_change(cpu, UpdateFlags::default());
        }

        let nr = self.sched.nr_running(cpu);
        if nr > 1 {
            let t = &self.sched.tasks[curr];
            let ran = t.sum_exec_ns - t.slice_start_exec_ns;
            let expired = match t.attrs.policy {
                // EEVDF: update_curr above renewed a deadline reached, asking to reschedule.
                SchedPolicy::Normal | SchedPolicy::Batch | SchedPolicy::Idle if self.sched.eevdf.is_some() => {
                    self.sched.cpus[cpu].resched
                }
                SchedPolicy::Normal | SchedPolicy::Batch | SchedPolicy::Idle => {
                    ran >= self.sched.cfs_slice(cpu, curr, nr)
                }
                // Round-robin among equal RT priorities; FIFO runs until it blocks.
                SchedPolicy::Rr(p) => {
                    ran >= RR_TIMESLICE_NS
                        && self.sched.cpus[cpu].queue.iter().any(|&q| self.sched.rt_prio(q) == Some(p))
                }
                SchedPolicy::Fifo(_) => false,
            };
            if expired {
                self.preempt(cpu, None);
            }
            if self.load_balance_allowed() {
                self.push_to_idle(cpu);
            }
        } else if nr == 1 && self.load_balance_allowed() {
            self.spread_smt(cpu);
            self.spread_numa(cpu);
            // rq->nr_running, which nohz_balancer_kick reads, still counts a task whose
            // dequeue is delayed (6.12+): the running task may have to move.
            if self.sched.delayed_tasks(cpu) > 0 && self.sched.cpus[cpu].curr.is_some() {
                self.push_to_idle(cpu);
            } else {
                self.sched.cpus[cpu].push.failed = 0;
            }
        } else {
            self.sched.cpus[cpu].push.failed = 0;
        }
        if self.sched.cpus[cpu].curr.is_some() && self.load_balance_allowed() {
            self.periodic_balance(cpu);
        }
        // A next balance that new-idle balancing brought forward is due at this tick, whose
        // balancing softirq sets it to the busy interval again (`sim/softirq.rs`).
        self.sched.cpus[cpu].balance.idled = false;
        self.update_idle_cpu_scan(cpu);
        self.capacity_tick(cpu);
        let c = &mut self.sched.cpus[cpu];
        c.tick_armed = false;
        if c.curr.is_some() {
            self.sched.arm_tick(&self.machine, &mut self.q, cpu);
        }
    }

    /// Move one waiting task of `cpu` to an idle CPU it may use, nearest first (NOHZ idle
    /// balancing, kicked by a tick that finds more than one task queued). A cache-hot task
    /// stays (task_hot); one that has waited longer than the migration cost is cold by then.
    /// An attempt that moves nothing fails: the cache-sharing domain of `n` CPUs tries every
    /// `n` ms, and past cache_nice_tries failures a hot task moves too (can_migrate_task);
    /// with only the running task movable (the others delayed at their dequeue, which only
    /// load migration takes), past cache_nice_tries + 2 it moves by active balance
    /// (need_active_balance: imbalanced_active_balance). A tick that finds the CPU balanced,
    /// or no CPU idle, resets the count.
    pub(crate) fn push_to_idle(&mut self, cpu: usize) {
        // A loaded machine has nowhere to push: skip the walk over the queue.
        if self.sched.idle_cpus == 0 {
            self.sched.cpus[cpu].push.failed = 0;
            return;
        }
        let now = self.q.now();
        let hot_ok = self.sched.cpus[cpu].push.failed > SpreadAttempts::CACHE_NICE_TRIES;
        let mut movable =
            self.sched.cpus[cpu].queue.iter().copied().filter(|&task| hot_ok || !self.sched.cache_hot(task, now));
        let found = movable.find_map(|task| self.idle_cpu_near(task, cpu).map(|dst| (task, dst)));
        if let Some((task, dst)) = found {
            self.sched.cpus[cpu].push.failed = 0;
            self.note_migration(task, (cpu, dst), "push", (dst, WakeContext::Softirq));
            self.sched.queue_remove(cpu, task);
            self.sched.waiting -= 1;
            self.migrate_queued(task, cpu, dst);
            self.set_curr(dst, task);
            return;
        }
        // Tasks none of which may run on an idle CPU leave the domain balanced as far as it
        // can be (load_balance's all-pinned case), not failed.
        let c = &self.sched.cpus[cpu];
        let pinned = c.curr.iter().chain(c.queue.iter()).all(|&task| self.idle_cpu_near(task, cpu).is_none());
        let llc_len = self.llc_len(cpu);
        let attempts = &mut self.sched.cpus[cpu].push;
        if pinned {
            attempts.failed = 0;
            return;
        }
        if now < attempts.next_ns {
            return;
        }
        attempts.next_ns = now + llc_len * 1_000_000;
        attempts.failed += 1;
        if attempts.failed <= SpreadAttempts::FAILURES_BEFORE_ACTIVE {
            return;
        }
        let running = self.sched.cpus[cpu].curr.filter(|&task| self.sched.rt_prio(task).is_none());
        if let Some((task, dst)) = running.and_then(|task| self.idle_cpu_near(task, cpu).map(|dst| (task, dst))) {
            self.sched.cpus[cpu].push.failed = 0;
            self.note_migration(task, (cpu, dst), "active", (cpu, WakeContext::Task));
            self.migrate_running(cpu, dst);
        }
    }

    /// An idle CPU `task` may use, nearest `cpu` first: an idle core, else an idle CPU, in its
    /// LLC, then its package, then anywhere.
    fn idle_cpu_near(&self, task: usize, cpu: usize) -> Option<usize> {
        let t = &self.machine.plat.cpus[cpu];
        let (llc, pkg) = (&self.machine.plat.llcs[t.llc], &self.machine.plat.packages[t.package].cpus);
        self.sched
            .find_idle_core(&self.machine, task, llc, cpu)
            .or_else(|| self.sched.find_idle_cpu(task, llc, cpu))
            .or_else(|| self.sched.find_idle_core(&self.machine, task, pkg, cpu))
            .or_else(|| self.sched.find_idle_cpu(task, pkg, cpu))
            .or_else(|| self.sched.find_idle_cpu(task, self.sched.all_cpus(&self.machine), cpu))
    }

    /// A core whose SMT threads are all running while a whole core is idle gives one of its
    /// tasks to the idle core, nearest first: the balancer's preference for spreading over
    /// siblings (a group running more tasks than an idle one plus one counts as overloaded).
    /// Linux can only move a running task by active balance, which it tries once balancing
    /// has failed on the imbalance more often than the domain's cache-nice tries allow; an
    /// attempt that finds a sibling idle, or no task it may move, resets the count. The
    /// attempts follow the cache-sharing domain's interval (see [`SpreadAttempts`]); the task
    /// is the one the simulated kernel version's balancer takes ([`Sim::spread_source`]).
    pub(crate) fn spread_smt(&mut self, cpu: usize) {
        let now = self.q.now();
        if now < self.sched.cpus[cpu].spread.next_ns {
            return;
        }
        let t = &self.machine.plat.cpus[cpu];
        let llc = &self.machine.plat.llcs[t.llc];
        // With no idle core there is no destination, which counts as a balanced domain.
        let src = if self.sched.idle_cores == 0 { None } else { self.sched.spread_source(&self.machine, cpu) };
        let task = src.and_then(|s| self.sched.cpus[s].curr);
        let dst = task.zip(src).and_then(|(task, src)| {
            self.sched
                .find_idle_core(&self.machine, task, llc, src)
                .or_else(|| {
                    self.sched.find_idle_core(&self.machine, task, &self.machine.plat.packages[t.package].cpus, src)
                })
                .or_else(|| self.sched.find_idle_core(&self.machine, task, self.sched.all_cpus(&self.machine), src))
        });
        let interval_ns = llc.len() as u64 * 1_000_000;
        let attempts = &mut self.sched.cpus[cpu].spread;
        let (Some(src), Some(task), Some(dst)) = (src, task, dst) else {
            *attempts = SpreadAttempts { failed: 0, next_ns: now + interval_ns };
            return;
        };
        attempts.failed += 1;
        if attempts.failed <= SpreadAttempts::FAILURES_BEFORE_ACTIVE {
            // A failed balance doubles the interval, up to twice the domain's minimum.
            attempts.next_ns = now + 2 * interval_ns;
            return;
        }
        *attempts = SpreadAttempts { failed: 0, next_ns: now + interval_ns };
        self.note_migration(task, (src, dst), "spread", (src, WakeContext::Task));
        self.migrate_running(src, dst);
    }

    /// The NUMA level of the periodic balancer, run from a tick of `cpu` (standing for the
    /// idle balancer that a busy LLC kicks).
    pub(crate) fn spread_numa(&mut self, cpu: usize) {
        if self.machine.plat.packages.len() < 2 {
            return;
        }
        let pkg = self.machine.plat.cpus[cpu].package;
        let now = self.q.now();
        if now < self.hw.packages[pkg].numa_spread.next_ns {
            return;
        }
        let interval_ns = self.sched.cpus.len() as u64 * 1_000_000;
        let Some((src, dst)) = self.sched.numa_move(&self.machine, pkg) else {
            self.hw.packages[pkg].numa_spread = SpreadAttempts { failed: 0, next_ns: now + interval_ns };
            return;
        };
        let attempts = &mut self.hw.packages[pkg].numa_spread;
        attempts.failed += 1;
        attempts.next_ns = now + interval_ns;
        if attempts.failed <= NUMA_FAILURES_BEFORE_ACTIVE {
            return;
        }
        attempts.failed = 0;
        let task = self.sched.cpus[src].curr.expect("a running task");
        self.note_migration(task, (src, dst), "numa", (dst, WakeContext::Task));
        self.migrate_running(src, dst);
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use crate::hw::platform::Platform;
    use crate::sched::task::{Amount, Op};
    use crate::sim::{Advance, Sim, SimConfig};
    use crate::workload::{Better, Metric, RunStats, TaskSpec, Workload};

    /// `tasks` tasks that each work `run_us` at 2.6 GHz and sleep `sleep_us`, over and over;
    /// pinned to `cpu` if given.
    #[derive(Clone, Copy)]
    struct RunSleep {
        tasks: usize,
        run_us: f64,
        sleep_us: f64,
        cpu: Option<usize>,
    }

    impl Workload for RunSleep {
        fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
            let program: Rc<[Op]> = vec![
                Op::Run { cycles: Amount::Fixed(2.6e3 * self.run_us), mem_frac: 0.0 },
                Op::Sleep { ns: Amount::Fixed(1e3 * self.sleep_us) },
                Op::Jump { to: 0 },
            ]
            .into();
            let task = |i: usize| {
                let spec = TaskSpec::new(format!("t-{i}"), program.clone());
                match self.cpu {
                    Some(cpu) => spec.pinned(vec![cpu]),
                    None => spec,
                }
            };
            (0..self.tasks).map(task).collect()
        }
        fn default_duration_ns(&self) -> u64 {
            200_000_000
        }
        fn metric(&self, _: &RunStats) -> Metric {
            Metric { name: "none".into(), value: 0.0, unit: "".into(), better: Better::Higher }
        }
    }

    /// `workload` on the KVM guest without its background tasks under `kernel` for
    /// `duration_ns`, with `setup` applied before it begins; the finished simulation.
    fn run_on_quiet_guest(workload: RunSleep, kernel: &str, duration_ns: u64, setup: impl FnOnce(&mut Sim)) -> Sim {
        let json = include_str!("../../../../python/dvfslab/data/platforms/kvm-guest-2cpu.json");
        let mut doc: serde_json::Value = serde_json::from_str(json).unwrap();
        doc.as_object_mut().unwrap().remove("background");
        let plat = Platform::from_json(&doc.to_string(), "kvm").unwrap();
        let cfg = SimConfig::new(format!("performance:kernel={kernel}"), "test").duration_ns(Some(duration_ns));
        let mut sim = Sim::with_workload(plat, &cfg, Box::new(workload), "test".into()).unwrap();
        setup(&mut sim);
        sim.begin();
        while sim.advance(&mut |_| std::ops::ControlFlow::Continue(())).unwrap() == Advance::Paused {}
        sim
    }

    /// The tasks pulled by new-idle balancing in 200 ms under `kernel`: three tasks on two
    /// CPUs, each running 2 ms and sleeping 60 µs, so a CPU whose task sleeps idles briefly
    /// while the other CPU has a task waiting.
    fn newidle_pulls(kernel: &str) -> usize {
        newidle_pulls_in(kernel, 200_000_000).0
    }

    /// The same over `ns`, with the run's end state.
    fn newidle_pulls_in(kernel: &str, ns: u64) -> (usize, Sim) {
        let three_on_two = RunSleep { tasks: 3, run_us: 2000.0, sleep_us: 60.0, cpu: None };
        let sim = run_on_quiet_guest(three_on_two, kernel, ns, |sim| {
            sim.sched.hetero.migrations = Some(Vec::new());
        });
        (sim.sched.hetero.migrations.as_ref().unwrap().iter().filter(|m| m.reason == "pull").count(), sim)
    }

    /// CPU 1's avg_idle after a task pinned there works 10 µs and sleeps 3 ms, with the
    /// warm-up ending at `warmup_ns` (0: none).
    fn avg_idle_after_a_long_sleep(warmup_ns: u64) -> u64 {
        let sleeper = RunSleep { tasks: 1, run_us: 10.0, sleep_us: 3000.0, cpu: Some(1) };
        let sim = run_on_quiet_guest(sleeper, "6.18", 3_100_000, |sim| sim.run.warmup_ns = warmup_ns);
        sim.sched.cpus[1].avg_idle_ns
    }

    #[test]
    fn avg_idle_averages_whole_idle_periods_whatever_restarts_the_accounts() {
        // The warm-up's end restarts CPU 1's busy/idle account 110 µs before the sleeper wakes
        // (as a deeper idle state does); the idle period it averages in is still the 3 ms
        // since the CPU went idle, which takes avg_idle to its cap.
        let plain = avg_idle_after_a_long_sleep(0);
        assert_eq!(plain, crate::sched::AVG_IDLE_MAX_NS);
        assert_eq!(avg_idle_after_a_long_sleep(2_900_000), plain);
    }

    /// Two tasks pinned to CPU 0 of the quiet guest, 1 ms on: the run, the time, and the task
    /// running there (the other waits).
    fn two_tasks_sharing_cpu0() -> (Sim, crate::engine::TimeNs, usize) {
        two_tasks_sharing_cpu0_at("6.18")
    }

    fn two_tasks_sharing_cpu0_at(kernel: &str) -> (Sim, crate::engine::TimeNs, usize) {
        let two_on_cpu0 = RunSleep { tasks: 2, run_us: 5000.0, sleep_us: 1.0, cpu: Some(0) };
        let sim = run_on_quiet_guest(two_on_cpu0, kernel, 1_000_000, |_| {});
        let now = sim.q.now();
        let curr = sim.sched.cpus[0].curr.expect("a task runs on CPU 0");
        (sim, now, curr)
    }

    #[test]
    fn a_task_to_run_on_a_cpu_still_leaving_idle_is_charged_from_the_last_enqueue_before_the_pick() {
        // While CPU 0 is still leaving idle, its idle task runs: the accounting of a wake-up
        // enqueued there meanwhile charges nothing to the task chosen to run, and its clock
        // starts at that enqueue's. Once the CPU has left idle, it is charged from there.
        let (mut sim, now, curr) = two_tasks_sharing_cpu0();
        sim.sched.update_curr(&sim.q, 0);
        let v = sim.sched.tasks[curr].vruntime;
        sim.sched.tasks[curr].exec_start_ns = now - 3_000;
        sim.sched.cpus[0].stall_until = now + 5_000;
        sim.sched.update_curr(&sim.q, 0);
        assert_eq!(sim.sched.tasks[curr].vruntime, v);
        assert_eq!(sim.sched.tasks[curr].exec_start_ns, now);
        sim.sched.cpus[0].stall_until = now;
        sim.sched.tasks[curr].exec_start_ns = now - 3_000;
        sim.sched.update_curr(&sim.q, 0);
        assert!(sim.sched.tasks[curr].vruntime > v, "charged once the CPU is out of idle");
    }

    #[test]
    fn a_wake_up_onto_a_task_with_a_reschedule_coming_checks_nothing() {
        // CPU 0's running task has a reschedule on its way (an earlier wake-up's IPI): the
        // wake-up check returns at once (test_tsk_need_resched), not even accounting it; so
        // does CFS's (6.1), and a wake-up from CPU 0 itself switches nothing either.
        for kernel in ["6.18", "6.1"] {
            for source in [1, 0] {
                let (mut sim, now, curr) = two_tasks_sharing_cpu0_at(kernel);
                let waiting = 1 - curr;
                sim.sched.tasks[curr].exec_start_ns = now - 1_000;
                sim.sched.cpus[0].resched_ipi = Some(None);
                sim.check_preempt_wakeup(0, waiting, source);
                assert_eq!(sim.sched.tasks[curr].exec_start_ns, now - 1_000, "{kernel}");
                assert_eq!(sim.sched.cpus[0].curr, Some(curr), "{kernel}");
                assert_eq!(sim.sched.cpus[0].resched_ipi, Some(None), "{kernel}");
                sim.sched.cpus[0].resched_ipi = None;
                sim.check_preempt_wakeup(0, waiting, source);
                assert_eq!(sim.sched.tasks[curr].exec_start_ns, now, "{kernel}: without one, the check accounts it");
            }
        }
    }

    #[test]
    fn a_skipped_clock_update_is_charged_to_the_task_switched_in_at_its_own_accounting() {
        // Two tasks share CPU 0, one running, one waiting. A preemption whose clock update was
        // skipped 400 ns ago (rq_clock_skip_update) charges the one switched out only up to the
        // skip; the one switched in starts its execution clock at the skip, so its next
        // accounting charges the 400 ns, and until then its vruntime is as it waited.
        let (mut sim, now, curr) = two_tasks_sharing_cpu0();
        let waiting = 1 - curr;
        assert!(sim.sched.cpus[0].queue.contains(&waiting), "the other task waits on CPU 0");
        sim.sched.update_curr(&sim.q, 0);
        let (v_curr, v_waiting) = (sim.sched.tasks[curr].vruntime, sim.sched.tasks[waiting].vruntime);
        sim.sched.cpus[0].clock_skip_from = Some(now - 400);
        sim.preempt(0, Some(waiting));
        assert_eq!(sim.sched.cpus[0].curr, Some(waiting));
        assert_eq!(sim.sched.tasks[curr].vruntime, v_curr - 400);
        assert_eq!(sim.sched.tasks[waiting].vruntime, v_waiting);
        assert_eq!(sim.sched.tasks[waiting].exec_start_ns, now - 400);
    }

    #[test]
    fn the_overload_flag_outlives_the_queue_that_set_it_until_a_balance_clears_it() {
        // Two tasks pinned to CPU 1 start together (the second on the run-queue sets the root
        // domain's overload flag), run 100 µs each and sleep 5 ms. When the second sleeps,
        // nothing waits anywhere, yet the flag is still set: CPU 1 balances before it idles
        // (at 5.16 the balance's cost becomes the domain's), finds nothing and clears the
        // flag, and CPU 0, never busy, never balances.
        let pair = RunSleep { tasks: 2, run_us: 100.0, sleep_us: 5000.0, cpu: Some(1) };
        let sim = run_on_quiet_guest(pair, "5.16", 1_000_000, |_| {});
        let cost = crate::sched::newidle::NEWIDLE_BALANCE_COST_NS;
        assert_eq!(sim.sched.cpus[1].newidle.max_cost_ns, cost);
        assert_eq!(sim.sched.cpus[0].newidle.max_cost_ns, 0);
        assert!(!sim.sched.rd_overloaded);
    }

    #[test]
    fn a_task_whose_dequeue_is_delayed_still_counts_for_the_overload_flag() {
        // Two tasks pinned to CPU 1 take turns (2 ms runs, 60 µs sleeps): one that blocks
        // owing time stays queued, delayed (6.12+), while the other runs. rq->nr_running still
        // counts it, so a balance's refresh of the root domain's flag leaves it set.
        let pair = RunSleep { tasks: 2, run_us: 2000.0, sleep_us: 60.0, cpu: Some(1) };
        let mut seen = 0;
        for end_us in (2_000..12_000).step_by(37) {
            let mut sim = run_on_quiet_guest(pair, "6.18", end_us * 1000, |_| {});
            if sim.sched.delayed_tasks(1) == 0 || sim.sched.nr_running(1) != 1 {
                continue;
            }
            seen += 1;
            sim.refresh_rd_overloaded();
            assert!(sim.sched.rd_overloaded, "at {end_us} µs: a running task and a delayed one");
        }
        assert!(seen > 0, "no moment with a delayed task beside the running one");
    }

    #[test]
    fn short_idle_periods_stop_new_idle_balancing_before_5_16_not_after() {
        // Before 5.16, 60 µs idle periods bring avg_idle under the 500 µs migration cost and
        // the idle CPU stops pulling; from 5.16 the gate is the balance's own cost (µs).
        let (old, new) = (newidle_pulls("5.15"), newidle_pulls("5.16"));
        assert!(new > 5 * old.max(1), "5.15: {old} pulls, 5.16: {new}");
        // 6.17's raise after failed balances needs failures: here most balances pull.
        let raised = newidle_pulls("6.18");
        assert!(raised > 5 * old.max(1), "5.15: {old} pulls, 6.18: {raised}");
    }

    #[test]
    fn from_6_18_5_a_cpu_going_idle_balances_by_lottery_on_its_success_rate() {
        // Three tasks on two CPUs: nearly every new-idle balance pulls. 6.16 balances at every
        // visit; 6.18.44 draws first, starting from sd_init's 50%, so it pulls less, and the
        // ratio each CPU keeps rises above 512 once a window of visits has passed.
        let (every, _) = newidle_pulls_in("6.16", 2_000_000_000);
        let (drawn, sim) = newidle_pulls_in("6.18.44", 2_000_000_000);
        assert!(drawn > every / 8 && drawn < every * 9 / 10, "6.16: {every} pulls, 6.18.44: {drawn}");
        for cpu in 0..2 {
            let ratio = sim.sched.cpus[cpu].newidle.ratio;
            assert!(ratio > 600, "CPU {cpu}: ratio {ratio}");
        }
    }

    /// Two CPU-bound tasks at nice 0 and nice 5 pinned to one CPU for 2 s under `kernel`: the
    /// CPU time each got.
    fn cpu_time_at_nice_0_and_5(kernel: &str) -> (u64, u64) {
        use crate::sim::test_support::{run, run_on_kvm_guest, Tasks};
        let spin: Rc<[Op]> = vec![run(1e6), Op::Jump { to: 0 }].into();
        let task = |name: &str, nice| TaskSpec::new(name, spin.clone()).pinned(vec![1]).nice(nice);
        let workload = Tasks { tasks: vec![task("nice0", 0), task("nice5", 5)], programs: vec![], devices: vec![] };
        let cfg = SimConfig::new(format!("performance:kernel={kernel}"), "test").duration_ns(Some(2_000_000_000));
        let sim = run_on_kvm_guest(&cfg, workload);
        let exec = |name: &str| sim.sched.tasks.iter().find(|t| t.name == name).unwrap().sum_exec_ns;
        (exec("nice0"), exec("nice5"))
    }

    #[test]
    fn tasks_sharing_a_cpu_get_it_in_proportion_to_their_nice_weights() {
        // sched_prio_to_weight: 1024 at nice 0, 335 at nice 5, so 3.06 times the CPU time,
        // under CFS's weighted slices and vruntime (5.15) as under EEVDF's (6.6, 6.18).
        for kernel in ["5.15", "6.6", "6.18.44"] {
            let (nice0, nice5) = cpu_time_at_nice_0_and_5(kernel);
            let ratio = nice0 as f64 / nice5 as f64;
            assert!((ratio - 1024.0 / 335.0).abs() < 0.1, "{kernel}: {nice0} ns against {nice5} ns, ratio {ratio:.3}");
            // Work is conserved: the two share the CPU between them, less what the guest's own
            // threads take.
            assert!(nice0 + nice5 > 1_900_000_000, "{kernel}: {} ns in all", nice0 + nice5);
        }
    }
}
