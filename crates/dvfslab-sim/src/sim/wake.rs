//! Wake-up: a sleeping task's placement (select_task_rq_fair's fast path, the asymmetric-capacity
//! scan, EAS) and its enqueue, with the wake-up's trace.

use crate::engine::TimeNs;
use crate::governor::UpdateFlags;
use crate::sched::capacity::AsymWakeup;
use crate::sched::fair;
use crate::sched::task::TaskState;
use crate::sched::waker::Waker;
use crate::sim::Sim;

impl Sim {
    /// select_idle_sibling on an asymmetric platform: the target, or prev, if idle and the
    /// task fits it; else select_idle_capacity from the target: the first idle CPU it fits,
    /// else the idle CPU that fits best (−1 before 0), the biggest among equals.
    pub(crate) fn select_idle_sibling_asym(&self, task: usize, prev: usize, target: usize) -> usize {
        let util = self.sched.task_util_est(&self.q, task);
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

    /// A sleeping task's timer fired (or a new task starts).
    pub(crate) fn timer_wake(&mut self, task: usize) {
        if self.sched.tasks[task].placed {
            self.wake_task(task, Waker::Timer, UpdateFlags::default());
        } else {
            self.start_task(task);
        }
    }

    /// Wake a sleeping task on behalf of `waker` (try_to_wake_up). A pending timer of the task
    /// is cancelled.
    pub(crate) fn wake_task(&mut self, task: usize, waker: Waker, flags: UpdateFlags) {
        let t = &mut self.sched.tasks[task];
        if t.state != TaskState::Sleeping {
            return;
        }
        t.timer_token = t.timer_token.wrapping_add(1);
        let prev = t.cpu;
        if self.run.timeline.is_some() {
            self.trace_waking(task, prev, waker);
        }
        let softirq_cpu = match waker {
            Waker::Softirq { cpu: Some(c), .. } => Some((c, self.sched.cpus[c].ipi_send_until)),
            _ => None,
        };
        if self.sched.tasks[task].delayed {
            // Still queued where it blocked (EEVDF's delayed dequeue): ttwu_runnable wakes it
            // there, with no placement, unless that CPU is no longer one it may use.
            if self.sched.cpus[prev].curr.is_some() && self.sched.allowed(task, prev) {
                self.sched.fair_requeue_delayed(&self.q, prev, task);
                let source = waker.placement_source().map_or(prev, |(w, _)| w);
                self.sched.tasks[task].woken_remote = source != prev;
                let flags = UpdateFlags { remote: self.sched.remote_enqueue(&self.machine, source, prev), ..flags };
                self.enqueue(task, prev, source, fair::Join::Requeue, flags);
                self.softirq_wake_done(softirq_cpu);
                return;
            }
            self.sched.fair_finish_delayed(&self.q, prev, task);
            let source = waker.placement_source().map_or(prev, |(w, _)| w);
            self.resched_asked(prev, source);
        }
        // A guest kernel's vCPU packing decides first (`sim/vcpu_pack.rs`).
        let packed = self.packed_wake_cpu(task, waker);
        let (waking_cpu, context) = waker.logged_on(prev);
        if packed.is_none() && waker != Waker::Requeue && self.reaches_fair_placement(task) {
            // select_task_rq_fair's record_wakee, whoever the waker: the task current on the
            // CPU running try_to_wake_up (a softirq's or a timer's interrupted task too).
            self.record_wakee(waking_cpu, task);
        }
        let waker = waker.placement_source();
        // Energy-aware placement while not overutilized (asymmetric platforms), else the usual.
        let (cpu, why) = match packed {
            Some(cpu) => (cpu, "wakeup"),
            None => match self.find_energy_efficient_cpu(task) {
                Some(cpu) => (cpu, "eas"),
                None => (self.select_wake_cpu(task, waker), "wakeup"),
            },
        };
        // The waker's CPU enqueues the task (for an I/O completion, the CPU the device
        // interrupted; `io_complete`); a timer fires where the task slept. try_to_wake_up
        // moves it there too.
        let source = waker.map_or(prev, |(w, _)| w);
        self.note_migration(task, (prev, cpu), why, (source, context));
        if self.sched.hetero.asym && cpu != prev {
            self.deepen_idle(prev);
        }
        self.sched.tasks[task].woken_remote = source != cpu;
        let flags = UpdateFlags { remote: self.sched.remote_enqueue(&self.machine, source, cpu), ..flags };
        self.halted_vcpu_ipi(source, cpu);
        self.enqueue(task, cpu, source, fair::Join::Wake, flags);
        self.softirq_wake_done(softirq_cpu);
    }

    /// After a wake-up from a softirq on `cpu` whose IPI send lasted until `sending_until`
    /// before it: a wake-up that sent an IPI (to wake the task, or to preempt for it) kept the
    /// softirq running at least until the send's end, which may hand work to ksoftirqd
    /// (`sim/softirq.rs`).
    fn softirq_wake_done(&mut self, softirq_cpu: Option<(usize, TimeNs)>) {
        let Some((cpu, sending_until)) = softirq_cpu else { return };
        let (now, sent_until) = (self.q.now(), self.sched.cpus[cpu].ipi_send_until);
        if sent_until > sending_until.max(now) {
            self.softirq_ran(cpu, now, sent_until);
        }
    }

    /// Whether a wake-up of `task` that found it asleep reaches select_task_rq_fair: a fair task
    /// that may run on more than one CPU (select_task_rq asks the class only then; a task bound
    /// to one CPU, a per-CPU kworker's, wakes there without it).
    pub(super) fn reaches_fair_placement(&self, task: usize) -> bool {
        let allowed = (0..self.sched.cpus.len()).filter(|&c| self.sched.allowed(task, c)).count();
        allowed > 1 && self.sched.rt_prio(task).is_none()
    }

    /// A wake-up from `source` onto another CPU that sits in a halting idle state reaches it by
    /// IPI (try_to_wake_up: ttwu_queue_wakelist's IPI, or resched_curr's to a remote idle CPU;
    /// a polling idle state takes the wake-up without one). In a virtual machine whose
    /// preset gives its cost (`vcpu_wake`), the waker's CPU spends the send, and the target
    /// runs the task only after the host has run the vCPU again and the guest has left idle.
    /// A vCPU still on its idle path, not halted yet (`vcpu_wake.halt_after_us`), polls: it
    /// takes the wake-up without an IPI, and the task runs once the guest is out of idle.
    fn halted_vcpu_ipi(&mut self, source: usize, cpu: usize) {
        let Some(cost) = self.machine.plat.file.vcpu_wake else { return };
        let halted = self.sched.cpus[cpu].idle_power.is_some_and(|p| p != crate::hw::platform::IdlePower::Polling);
        if source == cpu || !halted {
            return;
        }
        let idle_for = self.q.now().saturating_sub(self.sched.cpus[cpu].idle_entered);
        if idle_for < cost.halt_after_ns() {
            let logged_in = cost.polled_wake_ns().saturating_sub(idle_for);
            self.sched.cpus[cpu].vcpu_wake_ns = Some((logged_in, 0));
            return;
        }
        self.sched.cpus[cpu].vcpu_wake_ns = Some((cost.ipi_ns(), cost.resume_ns()));
        self.spend_ipi_send(source);
    }

    /// The task current on `source` sends an IPI to another vCPU: in a guest whose preset
    /// gives the cost (`vcpu_wake.send_us`), a VM exit on the APIC write that it waits out.
    pub(crate) fn spend_ipi_send(&mut self, source: usize) {
        let send_ns = self.machine.plat.file.vcpu_wake.map_or(0, |cost| cost.send_ns());
        let Some(waker) = self.sched.cpus[source].curr.filter(|_| send_ns > 0) else { return };
        // The task current on the waker's CPU is held for the send. One amid its run (an
        // interrupt's wake-up) is credited its work so far and goes on after the send; one
        // between its program's operations goes on to the next after it.
        let amid_run = self.sched.tasks[waker].work_left > 0.0;
        if amid_run {
            self.sched.account_segment(&self.q, source);
        }
        let until = self.q.now() + send_ns;
        let c = &mut self.sched.cpus[source];
        c.halt_until = c.halt_until.max(until);
        c.ipi_send_until = c.ipi_send_until.max(until);
        if amid_run {
            self.start_segment(source);
        }
    }

    /// sched_waking: logged on the waker's CPU, in its context, with the task current there.
    pub(crate) fn trace_waking(&mut self, task: usize, prev: usize, waker: Waker) {
        let (cpu, context) = waker.logged_on(prev);
        let current = self.sched.cpus[cpu].curr;
        if let Some(tl) = self.run.timeline(&mut self.sched.charges) {
            tl.waking(self.q.now(), cpu, task, prev, current, context);
        }
    }

    /// Wake-up placement (select_task_rq_fair's fast path, `sim/wake_affine.rs`): with a
    /// waker on another CPU, wake_affine chooses the target between the waker's CPU and the
    /// previous one; select_idle_sibling then looks for an idle CPU near it. On an asymmetric
    /// platform a CFS task's wake-up follows the kernel's capacity rule of the time
    /// ([`AsymWakeup`]). A guest kernel's vCPU packing inferred from recordings keeps the task
    /// on its previous vCPU first (the read rule has placed it before this, in `wake_task`).
    pub(crate) fn select_wake_cpu(&mut self, task: usize, waker: Option<(usize, bool)>) -> usize {
        let ok = |c: usize| self.sched.allowed(task, c);
        let prev = self.sched.tasks[task].cpu;
        let asym_cfs = self.sched.hetero.asym && self.sched.rt_prio(task).is_none();
        if asym_cfs && self.sched.hetero.asym_wakeup == AsymWakeup::WakeCap {
            // select_task_rq_fair: no wake_affine for a task that does not fit; the slow path
            // (find_idlest_cpu from the waking CPU, as fork balancing does) places it.
            let this_cpu = waker.map_or(prev, |(w, _)| w);
            if self.sched.wake_cap(&self.machine, &self.q, task, this_cpu, prev) {
                return self.sched.select_fork_cpu(&self.machine, &self.q, task, this_cpu);
            }
        }
        // A guest kernel's vCPU packing as inferred from recordings (`sim/vcpu_pack.rs`).
        if let Some(cpu) = self.inferred_wake_cpu(task, waker) {
            return cpu;
        }
        let target = match waker {
            Some((w, sync)) if ok(w) && w != prev && !self.wake_wide(w, task) => self.wake_affine(task, w, prev, sync),
            _ => prev,
        };
        if !ok(target) {
            return self.sched.select_fork_cpu(&self.machine, &self.q, task, prev);
        }
        if asym_cfs && self.sched.hetero.asym_wakeup == AsymWakeup::SelectIdleCapacity {
            return self.select_idle_sibling_asym(task, prev, target);
        }
        self.select_idle_sibling(task, prev, target)
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use crate::hw::platform::Platform;
    use crate::sched::task::{Amount, Op};
    use crate::sim::{Advance, Sim, SimConfig};
    use crate::workload::estimates::kernel::LAUNCHER_WAKEE_FLIPS;
    use crate::workload::{Better, Metric, RunStats, TaskSpec, Workload};

    /// A CPU hog on each CPU of the 2-CPU guest, and sleepers whose timers fire under them,
    /// each sleeper allowed on `sleeper_cpus`.
    struct HogsAndSleepers {
        sleeper_cpus: Vec<usize>,
    }

    impl Workload for HogsAndSleepers {
        fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
            let hog: Rc<[Op]> = vec![Op::Run { cycles: Amount::Fixed(1e9), mem_frac: 0.0 }, Op::Jump { to: 0 }].into();
            let sleeper = |period_us: f64| -> Rc<[Op]> {
                vec![
                    Op::Sleep { ns: Amount::Fixed(period_us * 1e3) },
                    Op::Run { cycles: Amount::Fixed(2_000.0), mem_frac: 0.0 },
                    Op::Jump { to: 0 },
                ]
                .into()
            };
            let mut tasks: Vec<TaskSpec> =
                (0..2).map(|cpu| TaskSpec::new(format!("hog-{cpu}"), hog.clone()).pinned(vec![cpu])).collect();
            tasks.extend(
                [700.0, 900.0, 1100.0, 1300.0]
                    .into_iter()
                    .map(|us| TaskSpec::new("sleeper", sleeper(us)).pinned(self.sleeper_cpus.clone())),
            );
            tasks
        }
        fn default_duration_ns(&self) -> u64 {
            100_000_000
        }
        fn metric(&self, _: &RunStats) -> Metric {
            Metric { name: "none".into(), value: 0.0, unit: "".into(), better: Better::Higher }
        }
    }

    /// The hogs' wakee switch counts after 100 ms (no halving: that takes a second).
    fn hog_flips(sleeper_cpus: Vec<usize>) -> Vec<u32> {
        let json = include_str!("../../../../python/dvfslab/data/platforms/kvm-guest-2cpu.json");
        let cfg = SimConfig::new("performance:kernel=6.18", "test").duration_ns(Some(100_000_000));
        let plat = Platform::from_json(json, "kvm").unwrap();
        let mut sim =
            Sim::with_workload(plat, &cfg, Box::new(HogsAndSleepers { sleeper_cpus }), "test".into()).unwrap();
        sim.begin();
        while sim.advance(&mut |_| std::ops::ControlFlow::Continue(())).unwrap() == Advance::Paused {}
        sim.sched.tasks[..2].iter().map(|t| t.wakee_flips).collect()
    }

    #[test]
    fn a_timers_wake_up_counts_a_wakee_switch_for_the_task_it_interrupted() {
        // select_task_rq_fair's record_wakee runs for every wake-up that reaches it, on the
        // task current where try_to_wake_up runs: a sleeper's timer fires on its CPU under the
        // hog there, which switches wakee as the sleepers' periods interleave.
        let flips = hog_flips(vec![0, 1]);
        assert!(flips.iter().all(|&f| f >= 50), "{flips:?}");
        // A task allowed on one CPU wakes there without select_task_rq_fair: none counted,
        // the hogs keep the count they started with, their launcher's.
        assert_eq!(hog_flips(vec![0]), [LAUNCHER_WAKEE_FLIPS; 2]);
    }
}
