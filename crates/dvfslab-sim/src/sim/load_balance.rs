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
use crate::sim::Sim;

impl Sim {
    /// The busy balancer's turn at `cpu`'s tick: balance if its interval has passed.
    pub(crate) fn periodic_balance(&mut self, cpu: usize) {
        let now = self.q.now();
        let llc_len = self.machine.plat.llcs[self.machine.plat.cpus[cpu].llc].len() as u64;
        if llc_len < 2 || self.sched.hetero.asym {
            return;
        }
        let tick_ns = self.machine.tick_ns;
        let st = &mut self.sched.cpus[cpu].balance;
        if st.interval_ms == 0 {
            st.interval_ms = llc_len;
        }
        if now < st.last_ns + load_balance::balance_interval_ticks(st.interval_ms, true, tick_ns) * tick_ns {
            return;
        }
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

    /// detach_tasks and attach_tasks: waiting tasks of `src` move to `dst`, least recently
    /// queued first, each that may run there, is not cache-hot (unless balancing failed more
    /// than cache_nice_tries times) and fits the imbalance left, until it is spent.
    fn detach_to(&mut self, src: usize, dst: usize, imbalance: Imbalance) -> usize {
        let now = self.q.now();
        let failed = self.sched.cpus[dst].balance.failed;
        let hot_ok = failed > crate::sched::SpreadAttempts::CACHE_NICE_TRIES;
        let candidates: Vec<usize> = self.sched.cpus[src].queue.clone();
        let mut left = imbalance;
        let mut moved = 0;
        for task in candidates {
            let t = &self.sched.tasks[task];
            if t.delayed
                || self.sched.rt_prio(task).is_some()
                || !self.sched.allowed(task, dst)
                || (!hot_ok && self.sched.cache_hot(task, now))
            {
                continue;
            }
            let Some(rest) = load_balance::take(self.machine.kernel, left, t.avg.load_avg, failed) else { continue };
            left = rest;
            self.note_migration(task, src, dst, "balance", dst);
            self.sched.queue_remove(src, task);
            self.migrate_queued(task, src, dst);
            self.sched.queue_push(dst, task);
            moved += 1;
            if self.sched.cpus[dst].curr.is_some() {
                self.check_preempt_wakeup(dst, task, dst);
            }
            if load_balance::spent(left) {
                break;
            }
        }
        if moved > 0 {
            self.cfs_util_change(src, UpdateFlags::default());
            self.cfs_util_change(dst, UpdateFlags::default());
        }
        moved
    }
}
