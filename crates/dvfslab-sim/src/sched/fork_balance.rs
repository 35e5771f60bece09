//! Fork balancing: where a new task starts (`find_idlest_cpu` with SD_BALANCE_FORK), and
//! where an exec'ing one moves (`select_exec_cpu`).
//!
//! The walk goes down the scheduling domains of the forking CPU — the NUMA level (groups =
//! packages), the level above the LLC when a package has several (groups = LLCs), the LLC
//! (groups = cores) and SMT (groups = threads) — and at each keeps the local group unless
//! another group is clearly idler, then continues below in the group it chose. How groups
//! compare depends on the kernel (`find_idlest_group`, renamed `sched_balance_find_dst_group`
//! in 6.10).
//!
//! Before 5.5 a fork has no util yet, so spare capacity plays no part: groups compare their
//! runnable load first and, when those are close, their load average with blocked load
//! included. That is what sends a chain of short-lived processes (a shell script, `make`) to a
//! different, cold core each time: the core that ran the last one still carries its decaying
//! load.
//!
//! ```text
//!   before 5.5, per group, scaled by 1024 / group capacity:
//!     runnable = Σ runnable load of its CPUs         avg = Σ load_avg of its CPUs (blocked too)
//!   idlest = first other group in ring order, replaced by a later one whose runnable is lower
//!            by more than `imbalance`, or close and whose avg is lower by more than `scale`
//!   stay local if  runnable(idlest) > runnable(local) + imbalance
//!              or  runnable(local) < runnable(idlest) + imbalance  and  avg(local) < scale · avg(idlest)
//!   imbalance = 1024 · (pct − 100) / 100, scale = 1 + (pct − 100) / 200, pct: NUMA and
//!   between-LLC 125, LLC 117, SMT 110
//! ```
//! Since 5.5 (`find_idlest_group` reworked) each group is first classified from its CPUs'
//! counts and signals (`update_sg_wakeup_stats`, `group_classify`), and a busier class never
//! wins over an idler one:
//!
//! ```text
//!   nr = tasks on its CPUs, idle = CPUs with none, w = its CPUs, cap = Σ capacity,
//!   util = Σ max(util_avg, util_est), runnable = Σ runnable_avg (5.7+), load = Σ load_avg
//!   overloaded   nr > w  and  (cap·100 < util·pct  or  cap·pct < runnable·100 (5.7+))
//!   has_spare    nr < w  or   (cap·pct ≥ runnable·100 (5.7+)  and  cap·100 > util·pct)
//!   fully_busy   otherwise
//!   idlest (update_pick_idlest): the idlest class; among has_spare the most idle CPUs, equal
//!     counts to the lower util (5.9+; before, the first one); among busy the lowest
//!     avg = load · 1024 / cap
//!   move there if its class is idler than the local group's; with the same class:
//!     has_spare  if it has more idle CPUs
//!     busy       if avg(idlest) < avg(local) + imbalance  and  100·avg(local) > pct·avg(idlest)
//! ```
//! So a fork leaves a core whose sibling is idle only for a core with more idle CPUs, and a
//! recently busy but now idle core counts as idle whatever load it still carries.
//! In the chosen group the CPU is an idle one in the shallowest idle state, the most recently
//! idled first (warm caches), else the least loaded (`find_idlest_group_cpu`).
//!
//! Left out: Linux also keeps a fork on its NUMA node (before 5.5 while the node's runnable
//! load exceeds the idlest node's by no more than `imbalance`; since 5.5 for busy nodes the
//! same with `avg`, and for nodes with spare capacity while the node has an idle CPU, later
//! while its tasks stay below a share of its CPUs: `allow_numa_imbalance`, then
//! `adjust_numa_imbalance` with `imb_numa_nr`), counting on the periodic load balancer
//! (`Sim::spread_numa`) to spread the tasks later. With the pre-5.5 rule the intel-invariance
//! campaign's package power agreed worse even after a refit; nodes are compared like the other
//! levels. Also left out: the misfit class (`group_misfit_task`, asymmetric platforms: a
//! fork's util is 0 and fits every CPU; only the wake-up slow path of a task that does not fit
//! would see it) and the NUMA-preferred node.

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

/// A group's class in the slow path since 5.5 (`group_classify`; the classes the slow path
/// never produces left out), idlest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum GroupType {
    HasSpare,
    FullyBusy,
    Overloaded,
}

/// A group's statistics as the slow path reads them since 5.5 (`update_sg_wakeup_stats`).
#[derive(Clone, Copy, Debug, Default)]
struct WakeupStats {
    key: usize,
    /// CPUs in the group (`group_weight`), allowed to the task or not.
    weight: u64,
    /// Whether the task may run on one of them.
    allowed: bool,
    capacity: u64,
    load: u64,
    util: u64,
    runnable: u64,
    nr_running: u64,
    idle_cpus: u64,
}

impl WakeupStats {
    /// `group_classify` with `group_is_overloaded` and `group_has_capacity`; runnable_avg
    /// joins util in both from 5.7.
    fn classify(&self, pct: u64, with_runnable: bool) -> GroupType {
        let runnable_high = with_runnable && self.capacity * pct < self.runnable * 100;
        if self.nr_running > self.weight && (self.capacity * 100 < self.util * pct || runnable_high) {
            return GroupType::Overloaded;
        }
        let has_capacity = self.nr_running < self.weight || (!runnable_high && self.capacity * 100 > self.util * pct);
        if has_capacity {
            GroupType::HasSpare
        } else {
            GroupType::FullyBusy
        }
    }

    /// Load per capacity, computed only for busy groups (`update_sg_wakeup_stats`).
    fn avg_load(&self) -> u64 {
        self.load * 1024 / self.capacity.max(1)
    }
}

impl Sched {
    /// The CPU a task forked on `this_cpu` starts on (`find_idlest_cpu` with
    /// SD_BALANCE_FORK): before 5.5 by loads, since 5.5 by group class and idle CPUs.
    pub(crate) fn select_fork_cpu(&self, machine: &Machine, q: &EventQueue, task: usize, this_cpu: usize) -> usize {
        if machine.kernel >= crate::kernel::KernelVersion(5, 5) {
            return self.select_fork_cpu_by_class(machine, q, task, this_cpu);
        }
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

    /// The walk since 5.5: at each level the group `find_idlest_group` returns, classified
    /// by `update_sg_wakeup_stats`; a new task is on no run-queue yet, so nothing of it is
    /// taken out of any CPU's counts or signals.
    fn select_fork_cpu_by_class(&self, machine: &Machine, q: &EventQueue, task: usize, this_cpu: usize) -> usize {
        let Some(first) = (0..self.cpus.len()).find(|&c| self.allowed(task, c)) else { return self.tasks[task].cpu };
        let mut cpu = if self.allowed(task, this_cpu) { this_cpu } else { first };
        // The CPUs of the current domain, all of them: a group counts its CPUs whatever the
        // task's affinity (`sched_group_span`), and is skipped only when it has none allowed.
        let mut domain: Vec<usize> = (0..self.cpus.len()).collect();
        let mut groups: Vec<WakeupStats> = Vec::new();
        for level in self.fork_levels(machine) {
            self.wakeup_stats(machine, q, level, task, this_cpu, &domain, &mut groups);
            if groups.len() < 2 {
                continue;
            }
            let local_key = self.group_key(machine, level, cpu);
            let local = groups.iter().position(|g| g.key == local_key);
            let chosen = match self.find_idlest_group_by_class(machine, level, &groups, local) {
                Some(g) => groups[g].key,
                None => local_key,
            };
            domain.retain(|&c| self.group_key(machine, level, c) == chosen);
            if chosen != local_key {
                let allowed: Vec<usize> = domain.iter().copied().filter(|&c| self.allowed(task, c)).collect();
                cpu = self.find_idlest_group_cpu(machine, &allowed, cpu);
            }
        }
        cpu
    }

    /// `domain` split into the groups of `level`, in the order of their first CPU, each with
    /// the sums `update_sg_wakeup_stats` takes. `this_cpu` runs the caller (the forking
    /// parent, or the waker), so it is never idle: a workload's first tasks, which the model
    /// starts with no parent, count their launcher there.
    #[allow(clippy::too_many_arguments)]
    fn wakeup_stats(
        &self,
        machine: &Machine,
        q: &EventQueue,
        level: Level,
        task: usize,
        this_cpu: usize,
        domain: &[usize],
        groups: &mut Vec<WakeupStats>,
    ) {
        groups.clear();
        for &c in domain {
            let key = self.group_key(machine, level, c);
            let i = match groups.iter().position(|g| g.key == key) {
                Some(i) => i,
                None => {
                    groups.push(WakeupStats { key, ..WakeupStats::default() });
                    groups.len() - 1
                }
            };
            let nr = if c == this_cpu { self.nr_running(c).max(1) } else { self.nr_running(c) };
            let g = &mut groups[i];
            g.weight += 1;
            g.allowed |= self.allowed(task, c);
            g.capacity += machine.plat.cpus[c].cap_orig;
            // cpu_load_without: the run-queue's load_avg, blocked load included.
            g.load += self.avg_load(machine, q, c);
            // cpu_util_without: util_avg or util_est, at most the CPU's capacity.
            g.util += self.cpu_util_now(machine, q, c);
            // cpu_runnable_without (5.7+).
            g.runnable += self.with_cpu_avg_now(machine, q, c, |avg| avg.runnable_avg);
            g.nr_running += nr;
            g.idle_cpus += u64::from(nr == 0);
        }
    }

    /// `find_idlest_group` since 5.5: the group to move to, or None to stay in the local one.
    fn find_idlest_group_by_class(
        &self,
        machine: &Machine,
        level: Level,
        groups: &[WakeupStats],
        local: Option<usize>,
    ) -> Option<usize> {
        use crate::kernel::KernelVersion;
        let pct = level.imbalance_pct();
        // group_has_capacity and group_is_overloaded read runnable_avg from 5.7.
        let with_runnable = machine.kernel >= KernelVersion(5, 7);
        // update_pick_idlest breaks a tie of idle CPUs by group_util from 5.9.
        let util_tie = machine.kernel >= KernelVersion(5, 9);
        let kind = |g: &WakeupStats| g.classify(pct, with_runnable);
        let n = groups.len();
        let start = local.unwrap_or(n - 1);
        let mut idlest: Option<usize> = None;
        // The groups in ring order from the local one (the domain's group list), the local
        // one and those the task may not run on skipped.
        for k in 1..=n {
            let g = (start + k) % n;
            if Some(g) == local || !groups[g].allowed {
                continue;
            }
            let better = match idlest {
                None => true,
                Some(b) => {
                    let (cand, best) = (&groups[g], &groups[b]);
                    match kind(cand).cmp(&kind(best)) {
                        std::cmp::Ordering::Less => true,
                        std::cmp::Ordering::Greater => false,
                        std::cmp::Ordering::Equal => match kind(cand) {
                            GroupType::HasSpare => {
                                cand.idle_cpus > best.idle_cpus
                                    || (util_tie && cand.idle_cpus == best.idle_cpus && cand.util < best.util)
                            }
                            GroupType::FullyBusy | GroupType::Overloaded => cand.avg_load() < best.avg_load(),
                        },
                    }
                }
            };
            if better {
                idlest = Some(g);
            }
        }
        let g = idlest?;
        // The local group skipped for the task's affinity: go to the idlest.
        let Some(l) = local else { return Some(g) };
        let (this, min) = (&groups[l], &groups[g]);
        let move_there = match kind(this).cmp(&kind(min)) {
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => match kind(this) {
                GroupType::HasSpare => this.idle_cpus < min.idle_cpus,
                GroupType::FullyBusy | GroupType::Overloaded => {
                    let imbalance = 1024 * (pct - 100) / 100;
                    min.avg_load() < this.avg_load() + imbalance && 100 * this.avg_load() > pct * min.avg_load()
                }
            },
        };
        move_there.then_some(g)
    }

    /// The CPU a task exec'ing on `cpu` moves to (sched_exec: `select_task_rq` with
    /// WF_EXEC), `cpu` to stay. Before 5.5 the walk of a fork, which counts the task's own
    /// load against its CPU. Since 5.5 (`find_idlest_group` reworked) groups with spare
    /// capacity compare their idle CPUs, and the exec'ing task's CPU counts as idle when the
    /// task runs there alone (`idle_cpu_without`): the task moves only to a group with more
    /// idle CPUs than its own, so a task alone on an otherwise idle core stays. Without an
    /// idle CPU anywhere it stays too (the model moves no running task onto a busy CPU).
    pub(crate) fn select_exec_cpu(&self, machine: &Machine, q: &EventQueue, task: usize, cpu: usize) -> usize {
        if machine.kernel < crate::kernel::KernelVersion(5, 5) {
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
            .min_by_key(|&c| (exit_ns(c), std::cmp::Reverse(self.cpus[c].idle_since), c));
        idle.or_else(|| group.iter().copied().min_by_key(|&c| (self.runnable_load(c), c))).unwrap_or(fallback)
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use crate::hw::platform::{test_preset, Platform};
    use crate::sched::task::{Amount, Op};
    use crate::sim::{Sim, SimConfig};
    use crate::workload::{Better, Metric, RunStats, TaskSpec, Workload};

    /// One task that would run for a long time (a shell, as far as placement sees it).
    struct Shell;

    impl Workload for Shell {
        fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
            vec![TaskSpec::new("shell", vec![Op::Run { cycles: Amount::Fixed(1e12), mem_frac: 0.0 }, Op::Exit].into())]
        }
        fn programs(&self, _: &Platform) -> Vec<Rc<[Op]>> {
            Vec::new()
        }
        fn default_duration_ns(&self) -> u64 {
            10_000_000
        }
        fn metric(&self, _: &RunStats) -> Metric {
            Metric { name: "none".into(), value: 0.0, unit: "".into(), better: Better::Higher }
        }
    }

    /// i7-2600k (4 cores × 2 threads, one LLC) at `kernel`, set to: the shell running alone on
    /// CPU 0 with a small load (it mostly sleeps), CPU 0's sibling idle and cold, and every
    /// other CPU idle with the blocked load of tasks that ran there a moment ago.
    fn light_shell_on_cpu0(kernel: &str) -> Sim {
        let cfg = SimConfig::new(format!("performance:kernel={kernel}"), "test");
        let mut sim = Sim::with_workload(test_preset("i7-2600k"), &cfg, Box::new(Shell), "test".into()).unwrap();
        sim.begin();
        let now = sim.q.now();
        let core0 = sim.machine.plat.cpus[0].core;
        for c in 0..sim.sched.cpus.len() {
            let busy_before = sim.machine.plat.cpus[c].core != core0;
            let cpu = &mut sim.sched.cpus[c];
            cpu.curr = None;
            cpu.queue.clear();
            cpu.queue_by_vruntime.clear();
            cpu.runnable_load = 0;
            cpu.util_est_sum = 0;
            cpu.avg = Default::default();
            cpu.avg.last_update_time = now - cpu.lost_idle;
            cpu.avg.load_avg = if busy_before { 800 } else { 0 };
        }
        let shell = &mut sim.sched.tasks[0];
        (shell.cpu, shell.on_rq) = (0, true);
        shell.avg.load_avg = 100;
        sim.sched.cpus[0].curr = Some(0);
        sim.sched.cpus[0].runnable_load = 100;
        sim.sched.cpus[0].avg.load_avg = 100;
        sim.sched.cpus[0].avg.util_avg = 100;
        sim
    }

    #[test]
    fn a_fork_from_a_light_shell_takes_its_sibling_before_5_5_and_an_idle_core_since() {
        // Before 5.5 the shell's core, with a runnable load of 100 over two CPUs, is within
        // `imbalance` of the idle cores and its average is far below their blocked load: the
        // child stays on the core, on CPU 0's idle sibling (find_idlest_group by loads).
        let sim = light_shell_on_cpu0("5.4");
        let core0 = sim.machine.plat.cpus[0].core;
        let sibling = (1..sim.sched.cpus.len()).find(|&c| sim.machine.plat.cpus[c].core == core0).unwrap();
        let child = sim.sched.select_fork_cpu(&sim.machine, &sim.q, 0, 0);
        assert_eq!(child, sibling);
        // Since 5.5 all four cores have spare capacity and the others have two idle CPUs to
        // the shell's core's one: the child goes to another core whatever load it still
        // carries (update_sg_wakeup_stats counts idle CPUs).
        for kernel in ["5.5", "5.10", "6.6", "6.18"] {
            let sim = light_shell_on_cpu0(kernel);
            let child = sim.sched.select_fork_cpu(&sim.machine, &sim.q, 0, 0);
            assert_ne!(sim.machine.plat.cpus[child].core, core0, "kernel {kernel}: CPU {child}");
            assert!(sim.sched.cpu_is_idle(child), "kernel {kernel}: CPU {child}");
        }
    }

    #[test]
    fn equal_idle_counts_go_to_the_least_utilised_group_from_5_9() {
        // Three other cores fully idle, the last in ring order with the lowest util: before
        // 5.9 update_pick_idlest keeps the first group with the most idle CPUs, from 5.9 the
        // one with the lowest group_util among them.
        let pick = |kernel: &str| {
            let mut sim = light_shell_on_cpu0(kernel);
            let core0 = sim.machine.plat.cpus[0].core;
            let others: Vec<usize> =
                (0..sim.sched.cpus.len()).filter(|&c| sim.machine.plat.cpus[c].core != core0).collect();
            let last_core = others.iter().map(|&c| sim.machine.plat.cpus[c].core).max().unwrap();
            for &c in &others {
                sim.sched.cpus[c].avg.util_avg = if sim.machine.plat.cpus[c].core == last_core { 10 } else { 300 };
            }
            let child = sim.sched.select_fork_cpu(&sim.machine, &sim.q, 0, 0);
            (sim.machine.plat.cpus[child].core, last_core)
        };
        let (core, last_core) = pick("5.8");
        assert_ne!(core, last_core);
        let (core, last_core) = pick("5.9");
        assert_eq!(core, last_core);
    }
}
