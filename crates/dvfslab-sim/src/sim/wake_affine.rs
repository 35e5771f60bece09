//! Wake-up placement on symmetric CPUs (`select_task_rq_fair`'s fast path): `wake_affine`,
//! `wake_wide` and `select_idle_sibling`, as `sched/wake_affine.rs` draws them.

use crate::kernel::KernelVersion;
use crate::sched::wake_affine::{nr_idle_scan, IdleScan, IDLE_SCAN_UPDATE_NS, LLC_IMBALANCE_PCT, WAKEE_FLIP_DECAY_NS};
use crate::sim::Sim;

impl Sim {
    /// record_wakee: the task current on the waker's CPU counts a switch of wakee.
    pub(crate) fn record_wakee(&mut self, waker_cpu: usize, task: usize) {
        let now = self.q.now();
        let Some(current) = self.sched.cpus[waker_cpu].curr.filter(|&c| c != task) else { return };
        let w = &mut self.sched.tasks[current];
        if now > w.wakee_flip_decay_ns + WAKEE_FLIP_DECAY_NS {
            w.wakee_flips >>= 1;
            w.wakee_flip_decay_ns = now;
        }
        if w.last_wakee != Some(task) {
            w.last_wakee = Some(task);
            w.wakee_flips += 1;
        }
    }

    /// wake_wide: whether the waker and `task` wake many partners each, one `llc_size` times
    /// more often than the other, so that the wake-up should spread rather than pull `task`
    /// to the waker's CPU.
    pub(crate) fn wake_wide(&self, waker_cpu: usize, task: usize) -> bool {
        let Some(current) = self.sched.cpus[waker_cpu].curr else { return false };
        let factor = self.machine.plat.llcs[self.machine.plat.cpus[waker_cpu].llc].len() as u32;
        let (a, b) = (self.sched.tasks[current].wakee_flips, self.sched.tasks[task].wakee_flips);
        let (master, slave) = (a.max(b), a.min(b));
        slave >= factor && master >= slave.saturating_mul(factor)
    }

    /// wake_affine: the waker's CPU `this` or the task's previous CPU `prev`.
    pub(crate) fn wake_affine(&self, task: usize, this: usize, prev: usize, sync: bool) -> usize {
        let same_llc = self.machine.plat.cpus[this].llc == self.machine.plat.cpus[prev].llc;
        // wake_affine_idle: an idle waker CPU means an interrupt's wake-up; move only within
        // the LLC, and not off an idle previous CPU.
        if self.sched.cpu_is_idle(this) && same_llc {
            return if self.sched.cpu_is_idle(prev) { prev } else { this };
        }
        if sync && self.sched.nr_running(this) + self.sched.affine_delayed(this) == 1 {
            return this;
        }
        if self.sched.cpu_is_idle(prev) {
            return prev;
        }
        if self.machine.kernel >= KernelVersion(4, 15, 0) && self.wake_affine_weight(task, this, prev, sync) {
            return this;
        }
        prev
    }

    /// wake_affine_weight: whether the waker's CPU, with the task added (and a sync waker
    /// taken off), carries less load per capacity than the previous CPU without it, the
    /// previous CPU's side raised by half the domain's imbalance margin (WA_BIAS). The loads
    /// are `cpu_load`, the run-queues' load averages: a task asleep still weighs on the CPU it
    /// slept on, decaying, as this one does on `prev`, which is why it is taken off there.
    fn wake_affine_weight(&self, task: usize, this: usize, prev: usize, sync: bool) -> bool {
        let load = |c: usize| self.sched.avg_load(&self.machine, &self.q, c) as i128;
        let mut this_eff = load(this);
        if sync {
            let current = self.sched.cpus[this].curr.map_or(0, |t| self.sched.tasks[t].avg.load_avg) as i128;
            if current > this_eff {
                return true;
            }
            this_eff -= current;
        }
        let task_load = self.sched.tasks[task].avg.load_avg as i128;
        let cap = |c: usize| self.machine.plat.cpus[c].cap_orig as i128;
        let pct = self.affine_imbalance_pct(this, prev) as i128;
        let this_eff = (this_eff + task_load) * 100 * cap(prev);
        let prev_eff = (load(prev) - task_load) * (100 + (pct - 100) / 2) * cap(this) + i128::from(sync);
        this_eff < prev_eff
    }

    /// imbalance_pct of the smallest domain spanning both CPUs: SMT siblings 110, an LLC
    /// 117, beyond it 125.
    fn affine_imbalance_pct(&self, a: usize, b: usize) -> u64 {
        let (ta, tb) = (&self.machine.plat.cpus[a], &self.machine.plat.cpus[b]);
        if ta.core == tb.core {
            110
        } else if ta.llc == tb.llc {
            LLC_IMBALANCE_PCT
        } else {
            125
        }
    }

    /// select_idle_sibling on symmetric CPUs: `target` if idle, else an idle CPU near it that
    /// `task` may use, else `target`.
    pub(crate) fn select_idle_sibling(&mut self, task: usize, prev: usize, target: usize) -> usize {
        let ok = |c: usize| self.sched.allowed(task, c);
        let same_llc = |a: usize, b: usize| self.machine.plat.cpus[a].llc == self.machine.plat.cpus[b].llc;
        if self.sched.cpu_is_idle(target) {
            return target;
        }
        if prev != target && ok(prev) && same_llc(prev, target) && self.sched.cpu_is_idle(prev) {
            return prev;
        }
        if self.machine.kernel >= KernelVersion(5, 12, 0) {
            // The CPU the task used before `prev`, if idle near the target; `prev` takes its
            // place for the next search.
            let recent = self.sched.tasks[task].recent_used_cpu;
            self.sched.tasks[task].recent_used_cpu = Some(prev);
            let ok = |c: usize| self.sched.allowed(task, c);
            let same_llc = |a: usize, b: usize| self.machine.plat.cpus[a].llc == self.machine.plat.cpus[b].llc;
            if let Some(r) = recent {
                if r != prev && r != target && same_llc(r, target) && self.sched.cpu_is_idle(r) && ok(r) {
                    return r;
                }
            }
        }
        // The LLC's counts are exact (debug builds check them): a busy LLC skips its scans.
        let l = self.machine.plat.cpus[target].llc;
        let llc = &self.machine.plat.llcs[l];
        debug_assert_eq!(self.sched.llc_idle[l].cpus, llc.iter().filter(|&&c| self.sched.cpu_is_idle(c)).count());
        let idle = self.sched.llc_idle[l];
        if self.machine.kernel < KernelVersion(6, 0, 0) {
            let core = if idle.cores > 0 { self.sched.find_idle_core(&self.machine, task, llc, target) } else { None };
            let cpu = || if idle.cpus > 0 { self.sched.find_idle_cpu(task, llc, target) } else { None };
            return core.or_else(cpu).unwrap_or(target);
        }
        // SIS_UTIL: a busy LLC is not searched at all; otherwise an idle core where SMT is on,
        // else at most nr_idle_scan CPUs after the target.
        let limit = self.sched.llc_scan[l].nr_idle_scan;
        if limit == 0 {
            return target;
        }
        let smt = self.machine.plat.file.topology.threads_per_core > 1;
        if smt && idle.cores > 0 {
            return self.sched.find_idle_core(&self.machine, task, llc, target).unwrap_or(target);
        }
        if idle.cpus == 0 {
            return target;
        }
        let pos = llc.iter().position(|&c| c == target).unwrap_or(0);
        (1..=llc.len())
            .map(|k| llc[(pos + k) % llc.len()])
            .take(limit)
            .find(|&c| self.sched.allowed(task, c) && self.sched.cpu_is_idle(c))
            .unwrap_or(target)
    }

    /// Periodic balancing's refresh of `cpu`'s LLC scan limit from the LLC's CFS utilisation
    /// (update_idle_cpu_scan, 6.0+), at most every [`IDLE_SCAN_UPDATE_NS`].
    pub(crate) fn update_idle_cpu_scan(&mut self, cpu: usize) {
        let now = self.q.now();
        let l = self.machine.plat.cpus[cpu].llc;
        if self.machine.kernel < KernelVersion(6, 0, 0) || now < self.sched.llc_scan[l].next_update_ns {
            return;
        }
        let llc = &self.machine.plat.llcs[l];
        let sum_util: u64 = llc.iter().map(|&c| self.sched.cpu_util_now(&self.machine, &self.q, c)).sum();
        self.sched.llc_scan[l] = IdleScan {
            nr_idle_scan: nr_idle_scan(sum_util, llc.len(), LLC_IMBALANCE_PCT),
            next_update_ns: now + IDLE_SCAN_UPDATE_NS,
        };
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use crate::sched::task::{Amount, Op, TaskState};
    use crate::sim::test_support::{run, run_on_kvm_guest, Tasks};
    use crate::sim::{Sim, SimConfig};
    use crate::workload::TaskSpec;

    /// A spinner on each CPU; on CPU 1 also three tasks that run about 0.8 ms each and sleep,
    /// and the wakee, which runs briefly there and sleeps, free to move; run for `duration_ns`.
    fn after(duration_ns: u64) -> Sim {
        let spin = || -> Rc<[Op]> { vec![run(1e12), Op::Exit].into() };
        let sleeper = || -> Rc<[Op]> { vec![run(2e6), Op::Sleep { ns: Amount::Fixed(1e9) }, Op::Exit].into() };
        let wakee: Rc<[Op]> =
            vec![run(1e5), Op::SetAffinity { cpus: None }, Op::Sleep { ns: Amount::Fixed(1e9) }, Op::Exit].into();
        let tasks = vec![
            TaskSpec::new("spin0", spin()).pinned(vec![0]),
            TaskSpec::new("spin1", spin()).pinned(vec![1]),
            TaskSpec::new("sleeper", sleeper()).pinned(vec![1]),
            TaskSpec::new("sleeper", sleeper()).pinned(vec![1]),
            TaskSpec::new("sleeper", sleeper()).pinned(vec![1]),
            TaskSpec::new("wakee", wakee).pinned(vec![1]),
        ];
        let cfg = SimConfig::new("performance:kernel=6.18", "test").duration_ns(Some(duration_ns));
        run_on_kvm_guest(&cfg, Tasks { tasks, programs: Vec::new(), devices: Vec::new() })
    }

    #[test]
    fn a_wakee_leaves_a_cpu_whose_sleepers_still_weigh_on_it() {
        const WAKEE: usize = 5;
        let sim = after(20_000_000);
        let (t, c) = (&sim.sched.tasks, &sim.sched.cpus);
        assert!((2..=WAKEE).all(|i| t[i].state == TaskState::Sleeping && t[i].cpu == 1));
        assert_eq!((c[0].curr, c[1].curr), (Some(0), Some(1)));
        // Each sleeper started at its full weight (init_entity_runnable_average) and was
        // runnable until it slept: its own average, next updated when it wakes, is still full.
        assert!(
            (2..5).all(|i| t[i].avg.load_avg > 1000),
            "{:?}",
            (2..5).map(|i| t[i].avg.load_avg).collect::<Vec<_>>()
        );
        // Runnable on CPU 1, only its spinner; its run-queue average also holds the three
        // sleepers' and the wakee's loads, decayed over the milliseconds since they slept.
        let cpu_load = sim.sched.avg_load(&sim.machine, &sim.q, 1);
        assert_eq!(sim.sched.runnable_load(1), t[1].avg.load_avg);
        assert!(cpu_load > sim.sched.runnable_load(1) + 2000, "{cpu_load}");
        // So the spinner's CPU 0, with the wakee added, is the lighter: the wake-up moves
        // there (counting CPU 1's runnable load alone, it would stay).
        assert_eq!(sim.wake_affine(WAKEE, 0, 1, false), 0);
        // Half a second later the sleepers' loads have decayed away: it stays on CPU 1.
        let sim = after(500_000_000);
        assert_eq!(sim.wake_affine(WAKEE, 0, 1, false), 1);
    }
}
