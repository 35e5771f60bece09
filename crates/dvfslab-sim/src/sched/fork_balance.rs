//! Fork balancing: where a new task starts (`find_idlest_cpu` with SD_BALANCE_FORK), and
//! where an exec'ing one moves (`select_exec_cpu`).
//!
//! The walk goes down the scheduling domains of the forking CPU — the NUMA level (groups =
//! packages), the level above the LLC when a package has several (groups = LLCs), the LLC
//! (groups = cores) and SMT (groups = threads) — and at each keeps the local group unless
//! another group is clearly idler, then continues below in the group it chose. How a group is
//! judged idler changed in 5.5 (find_idlest_group reworked, 57abff067a08).
//!
//! Before 5.5 groups compare their runnable load first and, when those are close, their load
//! average with blocked load included. That sends a chain of short-lived processes (a shell
//! script, `make`) to a different, cold core each time: the core that ran the last one still
//! carries its decaying load.
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
//!
//! From 5.5 groups are ranked as the load balancer ranks them (`update_sg_wakeup_stats`,
//! `group_classify`): has spare capacity (fewer tasks than CPUs, or utilisation and, from
//! 5.7, runnable average under the capacity by the level's margin), fully busy, overloaded.
//! A fork goes to a group of lower type than its own; at equal types, between groups with
//! spare capacity to one with more idle CPUs (of several such, the least utilised from 5.9,
//! the first in ring order before), between busy ones to one whose `avg_load`
//! (load with blocked load per capacity) is lower by `imbalance` and by the margin
//! ([`find_dst_group`]). A node keeps a fork while it has room (`NumaRoom`). The forking CPU
//! counts its running parent, so a fork goes to an idle CPU if there is one and otherwise
//! mostly stays beside its parent; a CPU where a task just died still counts the dead task's
//! load and utilisation until its next update (`sched::Removed`).
//!
//! In the chosen group the CPU is an idle one in the shallowest idle state, the most recently
//! idled first (warm caches), else the least loaded (`find_idlest_group_cpu`).
//!
//! A workload's first tasks are forked by its launcher (the shell or driver that starts the
//! benchmark), counted as running on CPU 0 while it forks them.
//!
//! Left out: before 5.5, Linux also keeps a fork on its NUMA node while the node's runnable
//! load exceeds the idlest node's by no more than `imbalance`, counting on the periodic load
//! balancer (`Sim::spread_numa`) to spread the tasks later; with that rule the intel-invariance
//! campaign's package power agreed worse even after a refit, so before 5.5 nodes compare like
//! the other levels. Groups of asymmetric capacity are judged by the same types (a new task's
//! util is zero, so it fits every CPU and no group is a misfit).

use crate::engine::EventQueue;
use crate::kernel::KernelVersion;
use crate::machine::Machine;
use crate::sched::load_balance::{GroupStats, GroupType};
use crate::sched::Sched;

/// find_idlest_group reworked (57abff067a08, 5.5): groups ranked by type, then by idle CPUs
/// or load, as the load balancer ranks them.
const FIND_IDLEST_GROUP_REWORK: KernelVersion = KernelVersion(5, 5, 0);
/// From 5.7 a group's runnable average also classifies it (070f5e860ee2).
const RUNNABLE_CLASSIFIES: KernelVersion = KernelVersion(5, 7, 0);
/// From 5.11 a node keeps its forks while lightly loaded (allow_numa_imbalance, 7d2b5dd0bcc4).
const NUMA_QUARTER_BUSY: KernelVersion = KernelVersion(5, 11, 0);
/// From 6.0 by the NUMA domain's imb_numa_nr (adjust_numa_imbalance in find_idlest_group).
const NUMA_IMBALANCE_NR: KernelVersion = KernelVersion(6, 0, 0);
/// From 5.9 update_pick_idlest breaks a tie of idle CPUs by the lower group_util
/// (3edecfef0285); before, the first group in ring order keeps the pick, so a chain of
/// short-lived children all go to the same next core.
const UTIL_TIE_BREAK: KernelVersion = KernelVersion(5, 9, 0);

/// The group a fork goes to under the reworked rule (`sched_balance_find_dst_group`, before
/// 6.10 `find_idlest_group`), None to stay in `local`. The idlest other group is the one of
/// lowest type, then among busy ones the lowest `avg_load`, among ones with spare capacity
/// the most idle CPUs and then (from 5.9) the lowest utilisation, the first of equals in ring
/// order from the local group. The fork moves there if the local group's type is higher; at
/// equal types, busy groups if the local `avg_load` exceeds the idlest's by `imbalance` and by
/// the domain's margin, groups with spare capacity if the idlest has more idle CPUs.
fn find_dst_group(level: Level, groups: &[GroupStats], local: usize, rules: DstGroupRules) -> Option<usize> {
    let pct = level.imbalance_pct();
    let with_runnable = rules.runnable_classifies;
    let numa = level == Level::Numa;
    let kind = |g: &GroupStats| g.classify(pct, with_runnable);
    let avg_load = |g: &GroupStats| g.load * 1024 / g.capacity.max(1);
    // update_pick_idlest: whether `g` replaces `best`.
    let idler = |g: &GroupStats, best: &GroupStats| match kind(g).cmp(&kind(best)) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal if kind(g) == GroupType::HasSpare => {
            g.idle_cpus > best.idle_cpus
                || (rules.util_tie_break && g.idle_cpus == best.idle_cpus && g.util < best.util)
        }
        std::cmp::Ordering::Equal => avg_load(g) < avg_load(best),
    };
    let n = groups.len();
    let idlest = (1..n).map(|k| (local + k) % n).fold(None, |best: Option<usize>, g| match best {
        Some(b) if !idler(&groups[g], &groups[b]) => Some(b),
        _ => Some(g),
    })?;
    let (l, i) = (&groups[local], &groups[idlest]);
    let move_there = match kind(l).cmp(&kind(i)) {
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Equal if kind(l) == GroupType::HasSpare => {
            // Between nodes a fork stays near its parent while its node has room (a new
            // task has no preferred node).
            let keep_on_node = numa
                && match rules.numa_room {
                    NumaRoom::IdleCpu => l.idle_cpus > 0,
                    NumaRoom::QuarterBusy(span) => l.nr < span >> 2,
                    // With the new task the node runs nr + 1, at most imb_numa_nr.
                    NumaRoom::Imbalance(imb_numa_nr) => l.nr < imb_numa_nr && l.idle_cpus.abs_diff(i.idle_cpus) <= 2,
                };
            !keep_on_node && l.idle_cpus < i.idle_cpus
        }
        std::cmp::Ordering::Equal => {
            let imbalance = 1024 * (pct - 100) / 100;
            // Between nodes the imbalance counts against the remote node.
            let keep_on_node = numa && avg_load(i) + imbalance >= avg_load(l);
            !keep_on_node && avg_load(i) < avg_load(l) + imbalance && 100 * avg_load(l) > pct * avg_load(i)
        }
    };
    move_there.then_some(idlest)
}

/// What of [`find_dst_group`] a kernel version has.
#[derive(Clone, Copy, Debug)]
struct DstGroupRules {
    /// A group's runnable average classifies it (5.7+).
    runnable_classifies: bool,
    /// Between groups with as many idle CPUs the less utilised is idler (5.9+).
    util_tie_break: bool,
    /// How much room keeps a fork on its node when both nodes have spare capacity.
    numa_room: NumaRoom,
}

/// When a node with spare capacity keeps a fork (find_idlest_group's SD_NUMA case).
#[derive(Clone, Copy, Debug)]
enum NumaRoom {
    /// 5.5–5.10: while the node has an idle CPU.
    IdleCpu,
    /// 5.11–5.19 (allow_numa_imbalance): while its tasks are under a quarter of the NUMA
    /// domain's CPUs, this many. 5.16 and 5.18 refined the count (the new task, the node's own
    /// span, then imb_numa_nr); those refinements are not modelled.
    QuarterBusy(u64),
    /// 6.0+ (adjust_numa_imbalance): while the node would run at most `imb_numa_nr` tasks
    /// with the new one and the nodes' idle CPUs differ by at most 2 (NUMA_IMBALANCE_MIN).
    Imbalance(u64),
}

impl DstGroupRules {
    fn of(machine: &Machine) -> DstGroupRules {
        let k = machine.kernel;
        let numa_room = if k >= NUMA_IMBALANCE_NR {
            // build_sched_domains: the first domain above the LLC allows as many tasks as it
            // spans LLCs (an eighth of its CPUs if just one); the NUMA domain above a package
            // of several LLCs keeps that (the factor of its span over the first NUMA
            // domain's is 1).
            let p = &machine.plat;
            let llcs_per_package = (p.llcs.len() / p.packages.len().max(1)) as u64;
            let imb = match llcs_per_package {
                n if n > 1 => n,
                _ if p.packages.len() > 1 => p.packages.len() as u64,
                _ => (p.ncpus() as u64 >> 3).max(1),
            };
            NumaRoom::Imbalance(imb)
        } else if k >= NUMA_QUARTER_BUSY {
            NumaRoom::QuarterBusy(machine.plat.ncpus() as u64)
        } else {
            NumaRoom::IdleCpu
        };
        DstGroupRules { runnable_classifies: k >= RUNNABLE_CLASSIFIES, util_tie_break: k >= UTIL_TIE_BREAK, numa_room }
    }
}

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

/// A group's statistics summed over its CPUs (`update_sg_wakeup_stats`; its utilisation,
/// runnable average, tasks and idle CPUs only for the rule from 5.5), and its runnable load
/// for the rule before.
#[derive(Clone, Copy, Debug, Default)]
struct GroupSum {
    key: usize,
    stats: GroupStats,
    runnable_load: u64,
}

impl GroupSum {
    /// The rule before 5.5 compares loads per capacity.
    fn load(&self) -> GroupLoad {
        let capacity = self.stats.capacity.max(1);
        GroupLoad { runnable: self.runnable_load * 1024 / capacity, avg: self.stats.load * 1024 / capacity }
    }
}

impl Sched {
    /// The CPU a task forked on `this_cpu` starts on.
    pub(crate) fn select_fork_cpu(&self, machine: &Machine, q: &EventQueue, task: usize, this_cpu: usize) -> usize {
        let mut span: Vec<usize> = (0..self.cpus.len()).filter(|&c| self.allowed(task, c)).collect();
        let Some(&first) = span.first() else { return self.tasks[task].cpu };
        let mut cpu = if self.allowed(task, this_cpu) { this_cpu } else { first };
        // A workload's first tasks are started by its launcher (the shell or driver that runs
        // the benchmark), which runs on the forking CPU while it forks them: that CPU is busy.
        let launcher = self.tasks[task].parent.is_none().then_some(this_cpu);
        // One buffer for every level's groups: fork-heavy workloads (a build, a shell script)
        // place a task at every fork.
        let mut groups: Vec<GroupSum> = Vec::new();
        let reworked = machine.kernel >= FIND_IDLEST_GROUP_REWORK;
        let rules = DstGroupRules::of(machine);
        for level in self.fork_levels(machine) {
            self.sum_groups(machine, q, level, &span, launcher, &mut groups);
            if groups.len() < 2 {
                continue;
            }
            let local = groups.iter().position(|g| g.key == self.group_key(machine, level, cpu)).unwrap_or(0);
            let idlest = if reworked {
                let stats: Vec<GroupStats> = groups.iter().map(|g| g.stats).collect();
                find_dst_group(level, &stats, local, rules)
            } else {
                let loads: Vec<GroupLoad> = groups.iter().map(GroupSum::load).collect();
                self.find_idlest_group(level, &loads, local)
            };
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
    /// (empty groups left out), each with its capacity and loads summed and, for the rule
    /// from 5.5, its utilisation, runnable average, tasks and idle CPUs, the
    /// `launcher`'s CPU counted as running a task.
    fn sum_groups(
        &self,
        machine: &Machine,
        q: &EventQueue,
        level: Level,
        span: &[usize],
        launcher: Option<usize>,
        groups: &mut Vec<GroupSum>,
    ) {
        groups.clear();
        let reworked = machine.kernel >= FIND_IDLEST_GROUP_REWORK;
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
            g.runnable_load += self.runnable_load(c);
            let st = &mut g.stats;
            st.load += self.avg_load(machine, q, c);
            st.weight += 1;
            st.capacity += machine.plat.cpus[c].cap_orig;
            if reworked {
                // A new task counts nowhere yet, so nothing is taken out ("without p").
                let nr = self.rq_nr_running(c) + u64::from(launcher == Some(c));
                st.util += self.cpu_util_now(machine, q, c);
                st.runnable += self.with_cpu_avg_now(machine, q, c, |a| a.runnable_avg);
                st.nr += nr;
                st.idle_cpus += u64::from(nr == 0 && self.cpu_is_idle(c));
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    const NEW: DstGroupRules =
        DstGroupRules { runnable_classifies: true, util_tie_break: true, numa_room: NumaRoom::Imbalance(2) };
    const BEFORE_5_7: DstGroupRules =
        DstGroupRules { runnable_classifies: false, util_tie_break: false, numa_room: NumaRoom::IdleCpu };

    /// One CPU of capacity 1024 with `nr` tasks, its utilisation and load averages.
    fn cpu(nr: u64, util: u64, load: u64) -> GroupStats {
        GroupStats { load, util, runnable: util, nr, idle_cpus: u64::from(nr == 0), weight: 1, capacity: 1024 }
    }

    #[test]
    fn a_fork_goes_to_an_idle_cpu_and_otherwise_stays_beside_a_parent_with_spare_capacity() {
        // The parent runs alone with little utilisation; the other CPU is idle: more idle CPUs.
        assert_eq!(find_dst_group(Level::Llc, &[cpu(1, 200, 300), cpu(0, 50, 100)], 0, NEW), Some(1));
        // Both run one task with spare capacity: equal idle CPUs, the fork stays.
        assert_eq!(find_dst_group(Level::Llc, &[cpu(1, 200, 300), cpu(1, 100, 100)], 0, NEW), None);
        // The local CPU has spare capacity, the other is fully busy: stays.
        assert_eq!(find_dst_group(Level::Llc, &[cpu(1, 200, 300), cpu(1, 1000, 1024)], 0, NEW), None);
    }

    #[test]
    fn between_busy_cpus_a_fork_moves_only_past_the_imbalance_margin() {
        // Both fully busy (utilisation above 1024 / 1.17). imbalance = 1024 · 17 / 100 = 174.
        let busy = |load| cpu(1, 1000, load);
        // The local load exceeds the other's by more than 174 and by more than 17%: moves.
        assert_eq!(find_dst_group(Level::Llc, &[busy(2000), busy(1024)], 0, NEW), Some(1));
        // By 150 only: stays.
        assert_eq!(find_dst_group(Level::Llc, &[busy(1174), busy(1024)], 0, NEW), None);
        // A busier local type moves whatever the loads: overloaded (two tasks) against fully busy.
        assert_eq!(find_dst_group(Level::Llc, &[cpu(2, 1024, 100), busy(4000)], 0, NEW), Some(1));
    }

    #[test]
    fn from_5_7_a_high_runnable_average_makes_a_group_busy() {
        // One task, low utilisation, but a runnable average (tasks that waited here lately)
        // above 1.17 times the capacity.
        let waited_on = GroupStats { runnable: 1300, ..cpu(1, 300, 2000) };
        let other = cpu(1, 1000, 1024);
        // With the runnable part both are fully busy and the local load is far higher: moves.
        assert_eq!(find_dst_group(Level::Llc, &[waited_on, other], 0, NEW), Some(1));
        // Before 5.7 the local CPU has spare capacity: stays.
        assert_eq!(find_dst_group(Level::Llc, &[waited_on, other], 0, BEFORE_5_7), None);
    }

    #[test]
    fn before_5_9_the_first_of_equally_idle_groups_takes_the_fork_whatever_its_utilisation() {
        // Four cores of two threads: the parent runs on core 0; cores 1-3 are idle, core 1
        // still carrying the last child's utilisation.
        let core = |nr: u64, util: u64| GroupStats {
            load: util,
            util,
            runnable: util,
            nr,
            idle_cpus: 2 - nr,
            weight: 2,
            capacity: 2048,
        };
        let groups = [core(1, 100), core(0, 600), core(0, 300), core(0, 50)];
        // From 5.9 the least utilised of the three: core 3.
        assert_eq!(find_dst_group(Level::Llc, &groups, 0, NEW), Some(3));
        // Before, the first in ring order from the parent's core: core 1 again.
        let at_5_5 = DstGroupRules { util_tie_break: false, ..NEW };
        assert_eq!(find_dst_group(Level::Llc, &groups, 0, at_5_5), Some(1));
        // The ring starts at the local group: from core 2, core 3 comes first.
        assert_eq!(
            find_dst_group(Level::Llc, &[core(0, 600), core(0, 300), core(1, 100), core(0, 50)], 2, at_5_5),
            Some(3)
        );
    }
}
