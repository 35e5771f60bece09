//! The periodic balancer of a busy CPU at the cache-sharing level (sched_balance_trigger's
//! softirq: sched_balance_domains, then sched_balance_rq; `rebalance_domains` and
//! `load_balance` before 6.10), with the arithmetic of `sched/load_balance.rs`.
//!
//! Each CPU keeps its own copy of the domain's state, as the kernel's per-CPU domains do: the
//! balance interval (the LLC's CPU count in ms, doubled up to twice that while the domain is
//! balanced, back to the minimum once an imbalance was found), the time of the last balance
//! and the count of failed balances. A busy CPU balances every interval × 16 less one tick.
//! It pulls waiting tasks from the busiest CPU of the busiest core of its LLC to itself; a
//! pulled task joins the queue and may preempt, as attach_task's wakeup_preempt checks.
//! Idle CPUs' pulls are the new-idle and idle balancing of `Sim::switch_next` and
//! `Sim::push_to_idle`; levels above the LLC, `Sim::spread_numa`.

use crate::governor::UpdateFlags;
use crate::sched::load_balance::{self, GroupStats, Imbalance};
use crate::sched::wake_affine::LLC_IMBALANCE_PCT;
use crate::sched::waker::WakeContext;
use crate::sim::Sim;

impl Sim {
    /// The busy balancer's turn at `cpu`'s tick: balance if its interval has passed.
    pub(crate) fn periodic_balance(&mut self, cpu: usize) {
        let now = self.q.now();
        let llc_len = self.llc_len(cpu);
        if llc_len < 2 || self.sched.hetero.asym {
            return;
        }
        let st = &mut self.sched.cpus[cpu].balance;
        if st.interval_ms == 0 {
            st.interval_ms = llc_len;
        }
        if !self.periodic_balance_due(cpu, now) {
            return;
        }
        let st = &mut self.sched.cpus[cpu].balance;
        st.last_ns = now;
        let (min_ms, max_ms) = (llc_len, 2 * llc_len);
        match self.balance_llc(cpu) {
            // Balanced: the interval grows (sched_balance_rq's out_balanced).
            None => {
                let st = &mut self.sched.cpus[cpu].balance;
                st.failed = 0;
                st.interval_ms = (st.interval_ms * 2).min(max_ms);
            }
            // An imbalance: moved or not, the interval resets; a move that found no task fails.
            Some(moved) => {
                let st = &mut self.sched.cpus[cpu].balance;
                st.failed = if moved > 0 { 0 } else { st.failed + 1 };
                st.interval_ms = min_ms;
            }
        }
    }

    /// The CPUs of `cpu`'s cache-sharing domain.
    pub(crate) fn llc_len(&self, cpu: usize) -> u64 {
        self.machine.plat.llcs[self.machine.plat.cpus[cpu].llc].len() as u64
    }

    /// Whether a busy `cpu`'s balancing of its LLC is due at `at`: its interval (the domain's
    /// minimum before its first balance) times the busy factor, less a tick, since its last.
    pub(crate) fn periodic_balance_due(&self, cpu: usize, at: u64) -> bool {
        let st = &self.sched.cpus[cpu].balance;
        let interval_ms = if st.interval_ms == 0 { self.llc_len(cpu) } else { st.interval_ms };
        let tick_ns = self.machine.tick_ns;
        at >= st.last_ns + load_balance::balance_interval_ticks(interval_ms, true, tick_ns) * tick_ns
    }

    /// Statistics of the group of CPUs `cpus` (update_sg_lb_stats).
    fn group_stats(&self, cpus: &[usize]) -> GroupStats {
        let mut g = GroupStats::default();
        for &c in cpus {
            g.load += self.sched.avg_load(&self.machine, &self.q, c);
            g.util += self.sched.cpu_util_now(&self.machine, &self.q, c);
            g.runnable += self.sched.with_cpu_avg_now(&self.machine, &self.q, c, |a| a.runnable_avg);
            g.nr += self.sched.nr_running(c);
            g.idle_cpus += self.sched.cpu_is_idle(c) as u64;
            g.weight += 1;
            g.capacity += self.machine.plat.cpus[c].cap_orig;
        }
        g
    }

    /// One balance of `cpu`'s LLC domain towards `cpu`: None if balanced, else the number of
    /// tasks moved.
    fn balance_llc(&mut self, cpu: usize) -> Option<usize> {
        let llc = self.machine.plat.cpus[cpu].llc;
        let mut cores: Vec<Vec<usize>> = Vec::new();
        for &c in &self.machine.plat.llcs[llc] {
            let core = self.machine.plat.cpus[c].core;
            match cores.iter_mut().find(|g| self.machine.plat.cpus[g[0]].core == core) {
                Some(g) => g.push(c),
                None => cores.push(vec![c]),
            }
        }
        let local = cores.iter().position(|g| g.contains(&cpu)).expect("the CPU's core");
        // should_we_balance: the local group's first idle CPU, else its first CPU, balances.
        let balancer = cores[local].iter().copied().find(|&c| self.sched.cpu_is_idle(c)).unwrap_or(cores[local][0]);
        if balancer != cpu {
            return None;
        }
        if self.machine.plat.llcs[llc].len() == self.sched.cpus.len() {
            // The LLC is the top domain: its statistics refresh the overload flag.
            self.refresh_rd_overloaded();
        }
        let stats: Vec<GroupStats> = cores.iter().map(|g| self.group_stats(g)).collect();
        let all = stats.iter().fold(GroupStats::default(), |a, g| GroupStats {
            load: a.load + g.load,
            capacity: a.capacity + g.capacity,
            ..a
        });
        let busiest = load_balance::busiest_group(&stats, local, LLC_IMBALANCE_PCT)?;
        let imbalance = load_balance::imbalance(&stats[local], &stats[busiest], &all, LLC_IMBALANCE_PCT, false)?;
        // sched_balance_find_src_rq: the CPU of the busiest group with the most load.
        let src = cores[busiest]
            .iter()
            .copied()
            .filter(|&c| self.sched.nr_running(c) > 1)
            .max_by_key(|&c| self.sched.avg_load(&self.machine, &self.q, c))?;
        Some(self.detach_to(src, cpu, imbalance))
    }

    /// detach_tasks and attach_tasks: waiting tasks of `src` leave it, least recently queued
    /// first, each that may run on `dst`, is not cache-hot (unless balancing failed more than
    /// cache_nice_tries times), is eligible or finds `dst` empty at its level (from 6.14,
    /// unless balancing failed) and fits the imbalance left, until it is spent; so do tasks
    /// whose dequeue is delayed, after them, where the version lets the balance move them
    /// (`Rules::balance_moves_delayed_only_with_load`; the kernel's list holds them where they last ran).
    /// Then they join `dst` in the reverse order, the last detached first (detach_tasks
    /// pushes each on the front of its list, attach_tasks takes from the front), each placed
    /// with the lag it took from `src` against what joined before it and, unless delayed,
    /// checked against `dst`'s running task.
    fn detach_to(&mut self, src: usize, dst: usize, imbalance: Imbalance) -> usize {
        let now = self.q.now();
        let failed = self.sched.cpus[dst].balance.failed;
        let hot_ok = failed > crate::sched::SpreadAttempts::CACHE_NICE_TRIES;
        let moves_delayed = self.sched.eevdf.is_some_and(|r| {
            r.delay_dequeue && (!r.balance_moves_delayed_only_with_load || matches!(imbalance, Imbalance::Load(_)))
        });
        let mut candidates: Vec<usize> = self.sched.cpus[src].queue.clone();
        if moves_delayed {
            candidates.extend(self.sched.delayed_on(src));
        }
        let mut left = imbalance;
        let mut detached = Vec::new();
        for task in candidates {
            let t = &self.sched.tasks[task];
            if self.sched.rt_prio(task).is_some()
                || (failed == 0 && self.sched.keeps_ineligible(task, src, dst))
                || !self.sched.allowed(task, dst)
                || (!hot_ok && self.sched.cache_hot(task, now))
            {
                continue;
            }
            let Some(rest) = load_balance::take(self.machine.kernel, left, t.avg.load_avg, failed) else { continue };
            left = rest;
            self.note_migration(task, (src, dst), "balance", (dst, WakeContext::Softirq));
            if self.sched.tasks[task].delayed {
                self.sched.fair_detach_delayed(&self.q, task, src);
                self.resched_asked(src, dst);
            } else {
                self.sched.queue_remove(src, task);
                self.detach_queued(task, src, dst);
            }
            detached.push(task);
            if load_balance::spent(left) {
                break;
            }
        }
        for &task in detached.iter().rev() {
            if self.sched.tasks[task].delayed {
                self.sched.fair_attach_delayed(&self.q, task, dst);
                continue;
            }
            self.attach_queued(task, dst);
            self.sched.queue_push(dst, task);
            if self.sched.cpus[dst].curr.is_some() {
                self.check_preempt_wakeup(dst, task, dst);
            }
        }
        let moved = detached.len();
        if moved > 0 {
            self.cfs_util_change(src, UpdateFlags::default());
            self.cfs_util_change(dst, UpdateFlags::default());
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use crate::sched::load_balance::Imbalance;
    use crate::sched::task::{Amount, Op};
    use crate::sim::test_support::{run, run_on_kvm_guest, Tasks};
    use crate::sim::{Sim, SimConfig};
    use crate::workload::TaskSpec;

    /// `n` tasks pinned to CPU 0, each running `run_us` and sleeping `sleep_us` in turn, and
    /// `others` beside them, run for `ns` under `kernel`.
    fn turns_on_cpu0(kernel: &str, n: usize, run_us: f64, sleep_us: f64, others: Vec<TaskSpec>, ns: u64) -> Sim {
        let work: Rc<[Op]> =
            vec![run(2.6e3 * run_us), Op::Sleep { ns: Amount::Fixed(1e3 * sleep_us) }, Op::Jump { to: 0 }].into();
        let mut tasks: Vec<TaskSpec> =
            (0..n).map(|i| TaskSpec::new(format!("t{i}"), work.clone()).pinned(vec![0])).collect();
        tasks.extend(others);
        let cfg = SimConfig::new(format!("performance:kernel={kernel}"), "test").duration_ns(Some(ns));
        run_on_kvm_guest(&cfg, Tasks { tasks, programs: Vec::new(), devices: Vec::new() })
    }

    /// Four tasks that share CPU 0 for 21 ms under `kernel`, each running 300 µs and sleeping
    /// 10 µs, and a spinner on CPU 1; then all free to move, the waiting ones cache-cold, and
    /// the first of them pushed 5 ms past its CPU's V, no longer eligible. Its index is
    /// returned with the run.
    fn an_ineligible_task_waiting_on_cpu0(kernel: &str) -> (Sim, usize) {
        let spin = TaskSpec::new("spin", vec![run(1e12), Op::Exit].into()).pinned(vec![1]);
        let mut sim = turns_on_cpu0(kernel, 4, 300.0, 10.0, vec![spin], 21_000_000);
        let waiting: Vec<usize> = sim.sched.cpus[0].queue.iter().copied().filter(|&t| t < 4).collect();
        assert_eq!(waiting.len(), 3);
        assert_eq!(sim.sched.cpus[1].curr, Some(4));
        for t in 0..4 {
            sim.sched.tasks[t].attrs.affinity = None;
        }
        for &t in &waiting {
            sim.sched.tasks[t].exec_start_ns = 0;
        }
        let late = waiting[0];
        sim.sched.queue_remove(0, late);
        sim.sched.tasks[late].vruntime += 5_000_000;
        sim.sched.tasks[late].deadline += 5_000_000;
        sim.sched.queue_push(0, late);
        assert!(!sim.sched.level_load(0, late).eligible(sim.sched.tasks[late].vruntime));
        (sim, late)
    }

    #[test]
    fn from_6_14_a_balance_leaves_an_ineligible_task_until_balancing_fails() {
        // 6.18: the two eligible ones move to busy CPU 1, the ineligible one stays.
        let (mut sim, late) = an_ineligible_task_waiting_on_cpu0("6.18");
        sim.sched.cpus[1].balance.failed = 0;
        assert_eq!(sim.detach_to(0, 1, Imbalance::Tasks(3)), 2);
        assert_eq!(sim.sched.tasks[late].cpu, 0);
        // Once balancing has failed, it moves too.
        let (mut sim, late) = an_ineligible_task_waiting_on_cpu0("6.18");
        sim.sched.cpus[1].balance.failed = 1;
        assert_eq!(sim.detach_to(0, 1, Imbalance::Tasks(3)), 3);
        assert_eq!(sim.sched.tasks[late].cpu, 1);
        // 6.12 has no such limit.
        let (mut sim, late) = an_ineligible_task_waiting_on_cpu0("6.12");
        sim.sched.cpus[1].balance.failed = 0;
        assert_eq!(sim.detach_to(0, 1, Imbalance::Tasks(3)), 3);
        assert_eq!(sim.sched.tasks[late].cpu, 1);
    }

    /// Two tasks on CPU 0 under `kernel` taking turns (2 ms runs, 60 µs sleeps), at the first
    /// moment one of them sleeps delayed beside the other running (6.12+), both then free to
    /// move and cache-cold; with it, the delayed task.
    fn a_delayed_task_on_cpu0(kernel: &str) -> (Sim, usize) {
        for end_us in (2_000..12_000).step_by(37) {
            let mut sim = turns_on_cpu0(kernel, 2, 2000.0, 60.0, Vec::new(), end_us * 1000);
            let Some(&delayed) = sim.sched.delayed_on(0).first() else { continue };
            if sim.sched.cpus[0].curr.is_none() || sim.sched.cpus[1].curr.is_some() {
                continue;
            }
            for t in 0..2 {
                sim.sched.tasks[t].attrs.affinity = None;
                sim.sched.tasks[t].exec_start_ns = 0;
            }
            return (sim, delayed);
        }
        panic!("no moment with a delayed task beside the running one under {kernel}");
    }

    #[test]
    fn a_balance_moves_a_delayed_task_only_with_load_from_6_14_and_it_stays_delayed() {
        // 6.18, a balance moving load: the delayed task joins idle CPU 1, still asleep and
        // queued there, so that its wake-up finds it there (ttwu_runnable).
        let (mut sim, delayed) = a_delayed_task_on_cpu0("6.18");
        assert_eq!(sim.detach_to(0, 1, Imbalance::Load(1 << 20)), 1);
        let t = &sim.sched.tasks[delayed];
        assert!(t.delayed && t.cpu == 1 && t.state == crate::sched::task::TaskState::Sleeping);
        assert_eq!((sim.sched.delayed_tasks(0), sim.sched.delayed_tasks(1)), (0, 1));
        assert!(sim.sched.cpus[1].queue.is_empty());
        // A balance moving a count of tasks leaves it (6.14+), but not at 6.12.
        let (mut sim, delayed) = a_delayed_task_on_cpu0("6.18");
        assert_eq!(sim.detach_to(0, 1, Imbalance::Tasks(1)), 0);
        assert_eq!(sim.sched.tasks[delayed].cpu, 0);
        let (mut sim, delayed) = a_delayed_task_on_cpu0("6.12");
        assert_eq!(sim.detach_to(0, 1, Imbalance::Tasks(1)), 1);
        assert_eq!(sim.sched.tasks[delayed].cpu, 1);
    }

    #[test]
    fn a_balance_attaches_its_tasks_last_detached_first_the_first_joining_an_empty_queue_without_its_lag() {
        // Four tasks share CPU 0 for 21 ms, each running 300 µs and sleeping 10 µs; then,
        // free to move and the balance failed often enough to take cache-hot tasks, the
        // waiting ones move to CPU 1 at once.
        let mut sim = turns_on_cpu0("6.18", 4, 300.0, 10.0, Vec::new(), 21_000_000);
        let waiting: Vec<usize> = sim.sched.cpus[0].queue.iter().copied().filter(|&t| t < 4).collect();
        assert_eq!(waiting.len(), 3, "{:?}", sim.sched.cpus[0].queue);
        for t in 0..4 {
            sim.sched.tasks[t].attrs.affinity = None;
        }
        sim.sched.cpus[1].balance.failed = 10;
        assert!(sim.sched.cpus[1].curr.is_none() && sim.sched.cpus[1].queue.is_empty());
        let empty_v = sim.sched.cpus[1].min_vruntime;
        assert_eq!(sim.detach_to(0, 1, Imbalance::Tasks(3)), 3);
        // detach_tasks takes the least recently queued first; attach_tasks queues the last
        // detached first.
        let attached: Vec<usize> = sim.sched.cpus[1].queue.clone();
        assert_eq!(attached, waiting.iter().rev().copied().collect::<Vec<_>>());
        // So the last detached is the one placed on the empty run-queue, at its V whatever the
        // lag it brought (place_entity applies a lag only beside other tasks), and the others
        // keep theirs; attached in detach order, the first would have lost its lag instead.
        let (first, last) = (waiting[0], waiting[2]);
        assert_ne!(sim.sched.tasks[last].vlag, 0);
        assert_eq!(sim.sched.tasks[last].vruntime, empty_v);
        assert_ne!(sim.sched.tasks[first].vruntime, empty_v);
    }
}
