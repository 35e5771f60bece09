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
//! The pass hands over where it ends, at the span's end (`Event::SoftirqEnd`), waking
//! ksoftirqd from the softirq on the task it interrupted. ksoftirqd has existed since boot: the
//! first hand-over of a run wakes it with the lag its life so far left it
//! (`estimates::kthreads::KSOFTIRQD_LAG_NS`, read on the recordings' guest), far enough left
//! of the interrupted task that under EEVDF it preempts it, as it does at 98–99% of the
//! recordings' hand-overs. Each hand-over moves its placement by what the preempted task is
//! charged after the wake-up less what ksoftirqd is (5.1 and 5.4 µs recorded, medians): here
//! the switch is at once (the task's few µs on to its return to user mode are not followed), so
//! it falls back by ksoftirqd's 2 µs a hand-over, some 80 µs of vruntime a second of netperf's
//! on each vCPU, and the 1.6 ms it starts left lasts a run of 20 s. Not modelled either: from
//! 4.9 to 6.4 a softirq raised while ksoftirqd was runnable waited for it (`ksoftirqd_running`,
//! reverted in 6.5), and the round limit (MAX_SOFTIRQ_RESTART) and a pending reschedule, which
//! also end the loop.

use crate::engine::{Event, TimeNs};
use crate::governor::UpdateFlags;
use crate::sched::objects::Outcome;
use crate::sched::task::TaskState;
use crate::sched::waker::Waker;
use crate::sim::Sim;
use crate::workload::estimates::kthreads::KSOFTIRQD_LAG_NS;
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

    /// A softirq on `cpu` runs from `start` to `end`: if a tick of its CPU lands in it and
    /// raises a softirq, the pass hands what is pending to ksoftirqd where it ends.
    pub(crate) fn softirq_ran(&mut self, cpu: usize, start: TimeNs, end: TimeNs) {
        if self.hands_over(cpu, start, end) {
            self.q.push(end, Event::SoftirqEnd { cpu: cpu as u32 });
        }
    }

    /// Whether a softirq on `cpu` from `start` to `end` outlasts its limit with work pending.
    fn hands_over(&self, cpu: usize, start: TimeNs, end: TimeNs) -> bool {
        if !self.work.softirq.enabled {
            return false;
        }
        let Some(at) = limit_reached_at(start, end, self.machine.tick_ns) else { return false };
        // An idle CPU's tick is stopped (NO_HZ): it raises nothing.
        self.sched.cpus[cpu].curr.is_some() && self.tick_raises_balance_softirq(cpu, at)
    }

    /// `Event::SoftirqEnd`: the softirq pass on `cpu` that outlasted its limit ends, and wakes
    /// ksoftirqd (`wakeup_softirqd`) on the task it interrupted.
    pub(crate) fn softirq_end(&mut self, cpu: usize) {
        if self.sched.cpus[cpu].curr.is_some() {
            self.hand_to_ksoftirqd(cpu);
        }
    }

    /// Whether `cpu`'s tick at `at` raises the balancing softirq (sched_balance_trigger): its
    /// next balance is due, brought forward by a new-idle balance since the tick last raised it,
    /// or by the busy interval's passing.
    fn tick_raises_balance_softirq(&self, cpu: usize, at: TimeNs) -> bool {
        self.llc_len(cpu) >= 2 && (self.sched.cpus[cpu].balance.idled || self.periodic_balance_due(cpu, at))
    }

    /// wakeup_softirqd: wake `cpu`'s ksoftirqd (asleep since boot the first time), or leave
    /// the work for it if it is awake.
    fn hand_to_ksoftirqd(&mut self, cpu: usize) {
        let task = match self.work.softirq.ksoftirqd[cpu] {
            Some(task) => task,
            None => {
                let spec = kthreads::ksoftirqd(&self.machine.plat, cpu);
                let task = self.add_sleeping_kthread(spec, cpu, KSOFTIRQD_LAG_NS);
                self.work.softirq.ksoftirqd[cpu] = Some(task);
                task
            }
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
        let (mut handed, mut preempting) = (0, 0);
        for cpu in 0..2 {
            let k = sim.work.softirq.ksoftirqd[cpu].expect("ksoftirqd started");
            assert_eq!(sim.sched.tasks[k].name, format!("ksoftirqd/{cpu}"));
            assert!(sim.sched.tasks[k].sum_exec_ns > 0);
            // Each hand-over, the first too (ksoftirqd has been asleep since boot), is a
            // wake-up on its own CPU from a softirq, where the IPI send of the wake-up before
            // it on that CPU (of netperf's peer, on the other, halted vCPU) ends, a tick
            // having landed in the send.
            for i in (0..tl.waking_task.len()).filter(|&i| tl.waking_task[i] as usize == k) {
                handed += 1;
                assert_eq!(tl.waking_cpu[i] as usize, cpu);
                assert_eq!(tl.waking_context[i], crate::sched::waker::WakeContext::Softirq);
                let t = tl.waking_time_ns[i];
                let sent = (0..i).rev().find(|&j| tl.waking_cpu[j] as usize == cpu).expect("the peer's wake-up");
                let t0 = tl.waking_time_ns[sent];
                assert_eq!(t0 + send_ns, t, "the hand-over at the send's end");
                assert!((t0 / tick + 1) * tick <= t, "no tick between {t0} and {t}");
                // Whom the task it interrupted switched to next.
                let next = (0..tl.switch_time_ns.len())
                    .find(|&s| tl.switch_time_ns[s] >= t && tl.switch_cpu[s] as usize == cpu)
                    .expect("a switch after it");
                preempting += usize::from(tl.switch_next[next] == k as i64 && tl.switch_prev_state[next] == 'R');
            }
        }
        // About one round trip's IPI in 360 spans a tick (11 µs of 4 ms): each vCPU's
        // ksoftirqd runs some 20 to 40 times a second, as the recordings' do (docs/recording.md).
        assert!((30..=100).contains(&handed), "{handed}");
        // Its lag from before the run puts it left of the task it interrupted: it preempts that
        // task at (nearly) every hand-over, as at 98–99% of the recordings'.
        assert!(preempting * 10 >= handed * 9, "{preempting} of {handed}");
    }

    #[test]
    fn ksoftirqd_starts_asleep_on_its_cpu_with_its_lag_from_before_the_run() {
        let cfg = SimConfig::new("performance:kernel=6.18", "test").duration_ns(Some(1_000_000));
        let tasks = vec![TaskSpec::new("spin", vec![run(1e6), Op::Exit].into()).pinned(vec![1])];
        let mut sim = run_on_kvm_guest(&cfg, Tasks { tasks, programs: Vec::new(), devices: Vec::new() });
        let k = sim.add_sleeping_kthread(kthreads::ksoftirqd(&sim.machine.plat, 1), 1, KSOFTIRQD_LAG_NS);
        let t = &sim.sched.tasks[k];
        assert_eq!((t.name.as_str(), t.cpu, t.state, t.placed), ("ksoftirqd/1", 1, TaskState::Sleeping, true));
        // What first needs it wakes it (place_entity reads the lag), not a fork.
        assert_eq!(t.vlag, KSOFTIRQD_LAG_NS);
        assert_eq!(t.avg.util_avg, 0);
        assert!(t.attrs.background);
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
        assert!(!sim.hands_over(1, next - 5_000, next + 6_000));
        // Gone idle since: new-idle balancing made the next balance due, the tick raises it.
        sim.sched.cpus[1].balance.idled = true;
        // A softirq that ends before the tick hands nothing over.
        assert!(!sim.hands_over(1, next - 11_000, next - 1));
        assert!(sim.hands_over(1, next - 5_000, next + 6_000));
        // Where the pass ends, ksoftirqd is woken.
        sim.softirq_end(1);
        let k = sim.work.softirq.ksoftirqd[1].expect("ksoftirqd/1 started");
        assert_eq!((sim.sched.tasks[k].cpu, sim.sched.tasks[k].state == TaskState::Sleeping), (1, false));
        // Handed more while awake, it finds the work before it would sleep.
        sim.softirq_end(1);
        assert_eq!(sim.softirq_wait(1), Outcome::Continue);
        assert_eq!(sim.softirq_wait(1), Outcome::Sleep);
        // The idle CPU 0's tick is stopped: nothing there.
        sim.sched.cpus[0].balance.idled = true;
        assert!(!sim.hands_over(0, next - 5_000, next + 6_000));
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
