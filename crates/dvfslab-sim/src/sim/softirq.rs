//! ksoftirqd: what a softirq leaves pending when it outlasts its time limit, handed to the
//! CPU's kernel thread (kernel/softirq.c: `handle_softirqs`, `__do_softirq` before 6.10, the
//! same rule in every kernel the project models).
//!
//! A softirq pass notes its limit when it begins: the current jiffy plus MAX_SOFTIRQ_TIME (2 ms
//! as `msecs_to_jiffies` rounds it, up: one jiffy at HZ up to 500, two at 1000). After each
//! round of handlers it looks again: with softirqs still pending and jiffies at the limit, it
//! wakes ksoftirqd (`wakeup_softirqd`) instead of starting another round. What is pending then
//! is what a tick raised meanwhile, and a tick is also what advances jiffies: a softirq during
//! which the CPU's tick lands hands that tick's softirqs to ksoftirqd. ksoftirqd/N is a nice-0
//! task pinned to its CPU (`workload::kthreads::ksoftirqd`): it competes with, and may preempt,
//! the task the softirq interrupted, which the recordings show.
//!
//! ```text
//!   softirq on cpu from s to e (ns), tick every T:
//!     hands over  ⇔  ⌊e/T⌋ ≥ ⌊s/T⌋ + ⌈2 ms / T⌉  and the tick at that jiffy raised a softirq
//! ```
//!
//! The spans the simulator times are the IPIs a softirq's wake-up sends to another vCPU of a
//! guest (`vcpu_wake.send_us`: a VM exit the vCPU waits out inside the softirq; 11 µs on the
//! recordings' guest, a wake-up of netperf's peer every round trip); the rest of a softirq's
//! work is its task's cost and has no span of its own here, so on machines without such a cost
//! nothing is handed over. Of what a tick raises, the scheduler's balancing softirq is followed
//! (`sched_balance_trigger`: raised when the CPU's next balance is due, which new-idle balancing
//! brings forward to the idle interval, one jiffy on a small domain, whenever the CPU goes
//! idle: `sched_balance_newidle`'s update_next_balance); the timer and RCU softirqs are not.
//! ksoftirqd is woken when the wake-up that began the span is made, not at the span's end, so
//! the span's IPI send falls after its placement, charged to it if it preempts (the switch
//! waits for the sender's return to user mode, and the clock update skipped there hands the
//! time to the task switched in). On the recordings' guest ksoftirqd preempts the task it
//! interrupted at 98–99% of its wake-ups, the model's at about half; woken at the span's end,
//! at none (docs/model.md). Not modelled either: from 4.9 to 6.4 a softirq raised while ksoftirqd was
//! runnable waited for it (`ksoftirqd_running`, reverted in 6.5), and the round limit
//! (MAX_SOFTIRQ_RESTART) and a pending reschedule, which also end the loop.

use crate::engine::TimeNs;
use crate::governor::UpdateFlags;
use crate::sched::objects::Outcome;
use crate::sched::task::TaskState;
use crate::sched::waker::Waker;
use crate::sim::Sim;
use crate::workload::kthreads;

/// MAX_SOFTIRQ_TIME, 2 ms.
const MAX_SOFTIRQ_NS: u64 = 2_000_000;

/// Each CPU's ksoftirqd and what was handed to it.
#[derive(Default)]
pub(crate) struct Softirq {
    /// The machine's softirqs have spans: a guest whose IPIs cost time.
    enabled: bool,
    /// ksoftirqd/N's task, from its first hand-over on; asleep only in `Op::WaitSoftirq`.
    ksoftirqd: Vec<Option<usize>>,
    /// Work handed to it while it was awake, which it finds before it sleeps again.
    handed: Vec<bool>,
}

/// MAX_SOFTIRQ_TIME in jiffies of `tick_ns` (`msecs_to_jiffies` rounds up).
pub(crate) fn max_softirq_jiffies(tick_ns: u64) -> u64 {
    MAX_SOFTIRQ_NS.div_ceil(tick_ns).max(1)
}

/// The jiffy boundary at which a softirq from `start` to `end` (ns) reaches its limit, if it
/// runs that long.
pub(crate) fn limit_reached_at(start: TimeNs, end: TimeNs, tick_ns: u64) -> Option<TimeNs> {
    let limit = start / tick_ns + max_softirq_jiffies(tick_ns);
    (end / tick_ns >= limit).then_some(limit * tick_ns)
}

impl Sim {
    /// Whether the run's softirqs can outlast their limit: only where the simulator times a
    /// span of one (a guest whose IPIs cost time). Each CPU's ksoftirqd starts when first
    /// handed work, as the simulator starts the machine's other threads.
    pub(crate) fn enable_ksoftirqd(&mut self) {
        let ncpus = self.machine.plat.ncpus();
        self.work.softirq = Softirq {
            enabled: self.machine.plat.file.vcpu_wake.is_some(),
            ksoftirqd: vec![None; ncpus],
            handed: vec![false; ncpus],
        };
    }

    /// A softirq on `cpu` ran from `start` to `end`: if a tick of its CPU landed in it and
    /// raised a softirq, what is pending goes to ksoftirqd.
    pub(crate) fn softirq_ran(&mut self, cpu: usize, start: TimeNs, end: TimeNs) {
        if !self.work.softirq.enabled {
            return;
        }
        let Some(at) = limit_reached_at(start, end, self.machine.tick_ns) else { return };
        // An idle CPU's tick is stopped (NO_HZ): it raises nothing.
        if self.sched.cpus[cpu].curr.is_some() && self.tick_raises_balance_softirq(cpu, at) {
            self.hand_to_ksoftirqd(cpu);
        }
    }

    /// Whether `cpu`'s tick at `at` raises the balancing softirq (sched_balance_trigger): its
    /// next balance is due, brought forward by a new-idle balance since the tick last raised it,
    /// or by the busy interval's passing.
    fn tick_raises_balance_softirq(&self, cpu: usize, at: TimeNs) -> bool {
        self.llc_len(cpu) >= 2 && (self.sched.cpus[cpu].balance.idled || self.periodic_balance_due(cpu, at))
    }

    /// wakeup_softirqd: wake `cpu`'s ksoftirqd (starting it the first time), or leave the
    /// work for it if it is awake.
    fn hand_to_ksoftirqd(&mut self, cpu: usize) {
        let Some(task) = self.work.softirq.ksoftirqd[cpu] else {
            self.work.softirq.ksoftirqd[cpu] = Some(self.sched.tasks.len());
            let spec = kthreads::ksoftirqd(&self.machine.plat, cpu).start_at(self.q.now());
            return self.spawn(spec);
        };
        if self.sched.tasks[task].state != TaskState::Sleeping {
            self.work.softirq.handed[cpu] = true;
            return;
        }
        self.wake_task(task, Waker::Softirq { cpu: Some(cpu), sync: false }, UpdateFlags::default());
    }

    /// `Op::WaitSoftirq`: ksoftirqd on `cpu` goes on if work was handed to it while it was
    /// awake, else sleeps until some is.
    pub(crate) fn softirq_wait(&mut self, cpu: usize) -> Outcome {
        if std::mem::take(&mut self.work.softirq.handed[cpu]) {
            return Outcome::Continue;
        }
        Outcome::Sleep
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::platform::Platform;
    use crate::sched::task::Op;
    use crate::sim::test_support::{run, run_on_kvm_guest, Tasks};
    use crate::sim::{Advance, SimConfig};
    use crate::workload::TaskSpec;

    fn kvm_guest() -> Platform {
        Platform::from_json(include_str!("../../../../python/dvfslab/data/platforms/kvm-guest-2cpu.json"), "kvm")
            .unwrap()
    }

    /// netperf TCP_RR on the guest for `duration_ns`, traced.
    fn netperf_rr(plat: Platform, duration_ns: u64) -> Sim {
        let cfg = SimConfig::new("performance:kernel=6.18.44", "netperf:test=1,autogroup=1")
            .duration_ns(Some(duration_ns))
            .timeline(true);
        let mut sim = Sim::new(plat, &cfg).unwrap();
        sim.begin();
        while sim.advance(&mut |_| std::ops::ControlFlow::Continue(())).unwrap() == Advance::Paused {}
        sim
    }

    #[test]
    fn netperfs_ticks_inside_its_wake_up_ipis_hand_work_to_ksoftirqd() {
        let sim = netperf_rr(kvm_guest(), 1_000_000_000);
        let tl = sim.run.timeline.as_ref().unwrap();
        let send_ns = sim.machine.plat.file.vcpu_wake.unwrap().send_ns();
        let tick = sim.machine.tick_ns;
        let mut handed = 0;
        for cpu in 0..2 {
            let k = sim.work.softirq.ksoftirqd[cpu].expect("ksoftirqd started");
            assert_eq!(sim.sched.tasks[k].name, format!("ksoftirqd/{cpu}"));
            assert!(sim.sched.tasks[k].sum_exec_ns > 0);
            // Its first hand-over starts it; each later one is a wake-up on its own CPU from a
            // softirq, at a wake-up whose IPI send (to netperf's peer on the other, halted
            // vCPU: the wake-up just before, on the same CPU) spans a tick.
            handed += 1;
            for i in (0..tl.waking_task.len()).filter(|&i| tl.waking_task[i] as usize == k) {
                handed += 1;
                assert_eq!(tl.waking_cpu[i] as usize, cpu);
                assert_eq!(tl.waking_context[i], crate::sched::waker::WakeContext::Softirq);
                let t = tl.waking_time_ns[i];
                assert!(i > 0 && tl.waking_time_ns[i - 1] == t && tl.waking_cpu[i - 1] as usize == cpu);
                assert!((t / tick + 1) * tick <= t + send_ns, "no tick between {t} and the send's end");
            }
        }
        // About one round trip's IPI in 360 spans a tick (11 µs of 4 ms): each vCPU's
        // ksoftirqd runs some 20 to 40 times a second, as the recordings' do (docs/recording.md).
        assert!((30..=100).contains(&handed), "{handed}");
    }

    #[test]
    fn a_machine_whose_ipis_cost_nothing_has_no_ksoftirqd() {
        let mut plat = kvm_guest();
        plat.file.vcpu_wake = None;
        let sim = netperf_rr(plat, 200_000_000);
        assert!(sim.sched.tasks.iter().all(|t| !t.name.starts_with("ksoftirqd")));
    }

    #[test]
    fn only_a_tick_that_raised_the_balancing_softirq_hands_it_over() {
        // A spinner keeps CPU 1 busy (its tick running).
        let spin: std::rc::Rc<[Op]> = vec![run(1e12), Op::Exit].into();
        let cfg = SimConfig::new("performance:kernel=6.18", "test").duration_ns(Some(50_000_000));
        let tasks = vec![TaskSpec::new("spin", spin).pinned(vec![1])];
        let mut sim = run_on_kvm_guest(&cfg, Tasks { tasks, programs: Vec::new(), devices: Vec::new() });
        let now = sim.q.now();
        let tick = sim.machine.tick_ns;
        let next = (now / tick + 1) * tick;
        // Busy since its last tick, balanced at it: the next tick raises nothing.
        sim.sched.cpus[1].balance.idled = false;
        sim.sched.cpus[1].balance.last_ns = now;
        sim.softirq_ran(1, next - 5_000, next + 6_000);
        assert_eq!(sim.work.softirq.ksoftirqd[1], None);
        // Gone idle since: new-idle balancing made the next balance due, the tick raises it.
        sim.sched.cpus[1].balance.idled = true;
        // A softirq that ends before the tick hands nothing over.
        sim.softirq_ran(1, next - 11_000, next - 1);
        assert_eq!(sim.work.softirq.ksoftirqd[1], None);
        sim.softirq_ran(1, next - 5_000, next + 6_000);
        let k = sim.work.softirq.ksoftirqd[1].expect("ksoftirqd/1 started");
        assert_eq!((sim.sched.tasks[k].cpu, sim.sched.tasks[k].state == TaskState::Sleeping), (1, false));
        // Handed more while awake, it finds the work before it would sleep.
        sim.softirq_ran(1, next - 5_000, next + 6_000);
        assert_eq!(sim.softirq_wait(1), Outcome::Continue);
        assert_eq!(sim.softirq_wait(1), Outcome::Sleep);
        // The idle CPU 0's tick is stopped: nothing there.
        sim.sched.cpus[0].balance.idled = true;
        sim.softirq_ran(0, next - 5_000, next + 6_000);
        assert_eq!(sim.work.softirq.ksoftirqd[0], None);
    }

    #[test]
    fn the_limit_is_two_ms_in_jiffies_rounded_up() {
        // HZ 250, 1000, 100, 300.
        assert_eq!(max_softirq_jiffies(4_000_000), 1);
        assert_eq!(max_softirq_jiffies(1_000_000), 2);
        assert_eq!(max_softirq_jiffies(10_000_000), 1);
        assert_eq!(max_softirq_jiffies(3_333_333), 1);
    }

    #[test]
    fn a_softirq_reaches_its_limit_when_enough_jiffy_boundaries_fall_in_it() {
        // HZ 250: any boundary will do.
        assert_eq!(limit_reached_at(7_990_000, 8_001_000, 4_000_000), Some(8_000_000));
        assert_eq!(limit_reached_at(8_000_000, 8_011_000, 4_000_000), None);
        assert_eq!(limit_reached_at(7_989_000, 7_999_999, 4_000_000), None);
        // HZ 1000: the second boundary after the start.
        assert_eq!(limit_reached_at(1_999_000, 2_010_000, 1_000_000), None);
        assert_eq!(limit_reached_at(1_999_000, 3_000_000, 1_000_000), Some(3_000_000));
    }
}
