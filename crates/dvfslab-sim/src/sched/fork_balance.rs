//! Fork balancing: where a new task starts (`find_idlest_cpu` with SD_BALANCE_FORK), and
//! where an exec'ing one moves (`select_exec_cpu`).
//!
//! The walk goes down the scheduling domains of the forking CPU — the NUMA level (groups =
//! packages), the level above the LLC when a package has several (groups = LLCs), the LLC
//! (groups = cores) and SMT (groups = threads) — and at each keeps the local group unless
//! another group is clearly idler, then continues below in the group it chose. A fork has no
//! util yet, so spare capacity plays no part: groups compare their runnable load first and,
//! when those are close, their load average with blocked load included. That is what sends a
//! chain of short-lived processes (a shell script, `make`) to a different, cold core each
//! time: the core that ran the last one still carries its decaying load.
//!
//! ```text
//!   per group, scaled by 1024 / group capacity:
//!     runnable = Σ runnable load of its CPUs         avg = Σ load_avg of its CPUs (blocked too)
//!   idlest = first other group in ring order, replaced by a later one whose runnable is lower
//!            by more than `imbalance`, or close and whose avg is lower by more than `scale`
//!   stay local if  runnable(idlest) > runnable(local) + imbalance
//!              or  runnable(local) < runnable(idlest) + imbalance  and  avg(local) < scale · avg(idlest)
//!   imbalance = 1024 · (pct − 100) / 100, scale = 1 + (pct − 100) / 200, pct: NUMA and
//!   between-LLC 125, LLC 117, SMT 110
//! ```
//! In the chosen group the CPU is an idle one in the shallowest idle state, the most recently
//! idled first (warm caches), else the least loaded (`find_idlest_group_cpu`).
//!
//! Left out: Linux also keeps a fork on its NUMA node (before 5.5 while the node's runnable
//! load exceeds the idlest node's by no more than `imbalance`, since 5.5 while the node has
//! an idle CPU), counting on the periodic load balancer (`Sim::spread_numa`) to spread the
//! tasks later. With the rule the intel-invariance campaign's package power agreed worse even
//! after a refit; nodes are compared like the other levels.

use crate::engine::EventQueue;
use crate::machine::Machine;
use crate::sched::Sched;

/// One level of the walk: how its span splits into groups, and its imbalance_pct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Numa,
    BetweenLlcs,
    Llc,
    Smt,
}

impl Level {
    fn imbalance_pct(self) -> u64 {
        match self {
            Level::Numa | Level::BetweenLlcs => 125,
            Level::Llc => 117,
            Level::Smt => 110,
        }
    }
}

/// A group's loads, both scaled to its capacity.
#[derive(Clone, Copy, Debug)]
struct GroupLoad {
    runnable: u64,
    avg: u64,
}

/// A group's capacity and loads as summed over its CPUs.
#[derive(Clone, Copy, Debug, Default)]
struct GroupSum {
    key: usize,
    capacity: u64,
    runnable: u64,
    avg: u64,
}

impl GroupSum {
    fn load(&self) -> GroupLoad {
        let capacity = self.capacity.max(1);
        GroupLoad { runnable: self.runnable * 1024 / capacity, avg: self.avg * 1024 / capacity }
    }
}

impl Sched {
    /// The CPU a task forked on `this_cpu` starts on.
    pub(crate) fn select_fork_cpu(&self, machine: &Machine, q: &EventQueue, task: usize, this_cpu: usize) -> usize {
        let mut span: Vec<usize> = (0..self.cpus.len()).filter(|&c| self.allowed(task, c)).collect();
        let Some(&first) = span.first() else { return self.tasks[task].cpu };
        let mut cpu = if self.allowed(task, this_cpu) { this_cpu } else { first };
        // One buffer for every level's groups: fork-heavy workloads (a build, a shell script)
        // place a task at every fork.
        let mut groups: Vec<GroupSum> = Vec::new();
        for level in self.fork_levels(machine) {
            self.sum_groups(machine, q, level, &span, &mut groups);
            if groups.len() < 2 {
                continue;
            }
            let local = groups.iter().position(|g| g.key == self.group_key(machine, level, cpu)).unwrap_or(0);
            let loads: Vec<GroupLoad> = groups.iter().map(GroupSum::load).collect();
            let idlest = self.find_idlest_group(level, &loads, local);
            let key = groups[idlest.unwrap_or(local)].key;
            span.retain(|&c| self.group_key(machine, level, c) == key);
            if idlest.is_some() {
                cpu = self.find_idlest_group_cpu(machine, &span, cpu);
            }
        }
        cpu
    }

    /// The CPU a task exec'ing on `cpu` moves to (sched_exec: `select_task_rq` with
    /// WF_EXEC), `cpu` to stay. Before 5.5 the walk of a fork, which counts the task's own
    /// load against its CPU. Since 5.5 (`find_idlest_group` reworked) groups with spare
    /// capacity compare their idle CPUs, and the exec'ing task's CPU counts as idle when the
    /// task runs there alone (`idle_cpu_without`): the task moves only to a group with more
    /// idle CPUs than its own, so a task alone on an otherwise idle core stays. Without an
    /// idle CPU anywhere it stays too (the model moves no running task onto a busy CPU).
    pub(crate) fn select_exec_cpu(&self, machine: &Machine, q: &EventQueue, task: usize, cpu: usize) -> usize {
        if machine.kernel < crate::kernel::KernelVersion(5, 5, 0) {
            return self.select_fork_cpu(machine, q, task, cpu);
        }
        let alone = self.cpus[cpu].curr == Some(task) && self.cpus[cpu].queue.is_empty();
        let idle_without = |c: usize| self.cpu_is_idle(c) || (c == cpu && alone);
        let mut span: Vec<usize> = (0..self.cpus.len()).filter(|&c| self.allowed(task, c)).collect();
        let mut dest = cpu;
        for level in self.fork_levels(machine) {
            // Each group of the level in `span`, in ring order from the local one, with its
            // idle CPUs.
            let mut groups: Vec<(usize, usize)> = Vec::new();
            for &c in &span {
                let key = self.group_key(machine, level, c);
                let i = groups.iter().position(|&(k, _)| k == key).unwrap_or_else(|| {
                    groups.push((key, 0));
                    groups.len() - 1
                });
                groups[i].1 += usize::from(idle_without(c));
            }
            let local_key = self.group_key(machine, level, dest);
            let local = groups.iter().position(|&(k, _)| k == local_key).unwrap_or(0);
            let n = groups.len();
            let idlest = (1..n).map(|k| (local + k) % n).fold(None, |best: Option<usize>, g| match best {
                Some(b) if groups[b].1 >= groups[g].1 => Some(b),
                _ => Some(g),
            });
            let key = match idlest {
                Some(g) if groups[g].1 > groups[local].1 => groups[g].0,
                _ => local_key,
            };
            span.retain(|&c| self.group_key(machine, level, c) == key);
            if key != local_key {
                dest = self.find_idlest_group_cpu(machine, &span, dest);
            }
        }
        dest
    }

    fn fork_levels(&self, machine: &Machine) -> impl Iterator<Item = Level> {
        let numa = machine.plat.packages.len() > 1;
        let between_llcs = machine.plat.llcs.len() > machine.plat.packages.len();
        let smt = machine.plat.file.topology.threads_per_core > 1;
        [(numa, Level::Numa), (between_llcs, Level::BetweenLlcs), (true, Level::Llc), (smt, Level::Smt)]
            .into_iter()
            .filter_map(|(present, level)| present.then_some(level))
    }

    /// Which group of `level` `cpu` belongs to.
    fn group_key(&self, machine: &Machine, level: Level, cpu: usize) -> usize {
        let t = &machine.plat.cpus[cpu];
        match level {
            Level::Numa => t.package,
            Level::BetweenLlcs => t.llc,
            Level::Llc if machine.plat.file.topology.threads_per_core > 1 => t.core,
            Level::Llc | Level::Smt => cpu,
        }
    }

    /// `span` split into the groups of `level`, in the order of their first CPU in `span`
    /// (empty groups left out), each with its capacity and loads summed.
    fn sum_groups(&self, machine: &Machine, q: &EventQueue, level: Level, span: &[usize], groups: &mut Vec<GroupSum>) {
        groups.clear();
        for &c in span {
            let key = self.group_key(machine, level, c);
            let i = match groups.iter().position(|g| g.key == key) {
                Some(i) => i,
                None => {
                    groups.push(GroupSum { key, ..GroupSum::default() });
                    groups.len() - 1
                }
            };
            let g = &mut groups[i];
            g.capacity += machine.plat.cpus[c].cap_orig;
            g.runnable += self.runnable_load(c);
            g.avg += self.avg_load(machine, q, c);
        }
    }

    /// Runnable load of `cpu`: its runnable tasks' load averages (a sum kept up to date, so
    /// that placing many tasks costs no scan of each run-queue).
    pub(crate) fn runnable_load(&self, cpu: usize) -> u64 {
        let c = &self.cpus[cpu];
        debug_assert_eq!(
            c.runnable_load,
            c.curr.iter().chain(c.queue.iter()).map(|&t| self.tasks[t].avg.load_avg).sum::<u64>()
        );
        c.runnable_load
    }

    /// Load average of `cpu` with blocked load (decayed to now on an idle CPU), and at least
    /// its runnable tasks' loads: Linux attaches a task's load to its run queue's average at
    /// once, where this model's run-queue signal only grows while tasks run.
    pub(crate) fn avg_load(&self, machine: &Machine, q: &EventQueue, cpu: usize) -> u64 {
        self.with_cpu_avg_now(machine, q, cpu, |avg| avg.load_avg).max(self.runnable_load(cpu))
    }

    /// The group a fork should move to, or None to stay in the local group.
    fn find_idlest_group(&self, level: Level, groups: &[GroupLoad], local: usize) -> Option<usize> {
        let pct = level.imbalance_pct();
        let imbalance = 1024 * (pct - 100) / 100;
        let scale = 100 + (pct - 100) / 2;
        let this = groups[local];
        let mut idlest: Option<(usize, GroupLoad)> = None;
        // Groups in ring order from the local one, as the domain's group list runs.
        for k in 1..groups.len() {
            let g = (local + k) % groups.len();
            let load = groups[g];
            idlest = match idlest {
                None => Some((g, load)),
                Some((_, best)) if best.runnable > load.runnable + imbalance => Some((g, load)),
                Some((_, best)) if load.runnable < best.runnable + imbalance && 100 * best.avg > scale * load.avg => {
                    Some((g, load))
                }
                keep => keep,
            };
        }
        let (g, min) = idlest?;
        let stay = min.runnable > this.runnable + imbalance
            || (this.runnable < min.runnable + imbalance && 100 * this.avg < scale * min.avg);
        (!stay).then_some(g)
    }

    /// In `group`: an idle CPU in the shallowest idle state, the most recently idled first;
    /// with none idle, the one with the least load.
    pub(crate) fn find_idlest_group_cpu(&self, machine: &Machine, group: &[usize], fallback: usize) -> usize {
        let exit_ns = |c: usize| self.cpus[c].idle_state.map_or(0, |s| machine.plat.idle_timing_of_cpu(c)[s].exit_ns);
        let idle = group
            .iter()
            .copied()
            .filter(|&c| self.cpu_is_idle(c))
            .min_by_key(|&c| (exit_ns(c), std::cmp::Reverse(self.cpus[c].idle_entered), c));
        idle.or_else(|| group.iter().copied().min_by_key(|&c| (self.runnable_load(c), c))).unwrap_or(fallback)
    }
}
