//! The periodic load balancer between busy CPUs of one cache-sharing domain: its group
//! statistics, the group types it ranks them by, the imbalance it computes and which waiting
//! tasks it moves (fair.c: `update_sg_lb_stats`, `group_classify`,
//! `sched_balance_find_src_group` (`find_busiest_group` before 6.10), `calculate_imbalance`,
//! `detach_tasks`). The simulation drives it from a busy CPU's tick (`sim/load_balance.rs`).
//!
//! A group is one core of the domain (its SMT threads). Its load is its CPUs' `load_avg` with
//! blocked load (`cpu_load`), its util the CFS utilisation, `nr` the tasks on its run-queues:
//!
//! ```text
//!   overloaded  if nr > weight  and (util · pct > cap · 100  or  runnable · 100 > cap · pct)
//!   has spare   if nr < weight  or  (runnable · 100 ≤ cap · pct and util · pct < cap · 100)
//!   fully busy  otherwise                                 (group_classify, group_has_capacity)
//!
//!   avg_load(g) = load(g) · 1024 / cap(g)          avg = Σ load · 1024 / Σ cap
//! ```
//!
//! The busiest group is the one of highest type, then highest `avg_load` (overloaded) or
//! fewest idle CPUs (has spare). The balancing CPU pulls from it:
//!
//! - busiest not overloaded: nothing, unless the balancing CPU is idle and busiest runs more
//!   than one task;
//! - local has spare: the difference in tasks, halved (`migrate_task`, `sibling_imbalance`
//!   for groups of equal size, then `imbalance >>= 1`), only for an idle balancing CPU;
//! - local fully busy or overloaded, busiest overloaded: nothing if local's `avg_load` is not
//!   below busiest's and the domain's, or if (local overloaded) busiest's is within
//!   `imbalance_pct` of local's; else load (`migrate_load`) as much as brings neither side
//!   past the domain's average: `min(busiest − avg, avg − local)` in `avg_load` units times
//!   the groups' capacities / 1024.
//!
//! The tasks go least recently run first (the tail of `cfs_tasks`), each waiting one that is
//! not cache-hot. A load move takes a task only if its load, halved once per failed balance
//! before (from 5.5; before, its load halved), is at most what is left to move; one lighter
//! than 16 waits for a failed balance (LB_MIN). The move ends when the imbalance is spent.

use crate::kernel::KernelVersion;

/// A sched domain's `busy_factor` (sd_init): a busy CPU balances this many times less often.
pub(crate) const BUSY_FACTOR: u64 = 16;
/// detach_tasks skips a task lighter than this unless a balance failed before (LB_MIN).
const LB_MIN_LOAD: u64 = 16;
const SCALE: u64 = 1024;

/// One CPU's copy of its cache-sharing domain's balancing state (`struct sched_domain`'s
/// `balance_interval`, `last_balance` and `nr_balance_failed`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DomainBalance {
    /// The balance interval, ms; 0 until first used (then the domain's minimum).
    pub interval_ms: u64,
    pub last_ns: u64,
    pub failed: u32,
    /// The CPU went idle since its tick last raised the balancing softirq: new-idle balancing
    /// brought its next balance forward to the idle interval (`sim/softirq.rs`).
    pub idled: bool,
}

/// A group's statistics (`struct sg_lb_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct GroupStats {
    /// Σ `cpu_load`: the CPUs' load averages, blocked load included.
    pub load: u64,
    /// Σ CFS utilisation and Σ runnable average of its CPUs.
    pub util: u64,
    pub runnable: u64,
    /// Tasks on its run-queues, running or waiting.
    pub nr: u64,
    pub idle_cpus: u64,
    /// Its CPUs and their capacity.
    pub weight: u64,
    pub capacity: u64,
}

/// The balancer's ranking of a group (`enum group_type`, the types a symmetric domain has).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum GroupType {
    HasSpare,
    FullyBusy,
    Overloaded,
}

/// What the balancer moves (`enum migration_type`), and how much.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Imbalance {
    /// This many tasks.
    Tasks(u64),
    /// Tasks whose loads add up to this.
    Load(u64),
}

impl GroupStats {
    /// group_classify on a symmetric domain of imbalance margin `pct`.
    pub(crate) fn group_type(&self, pct: u64) -> GroupType {
        self.classify(pct, true)
    }

    /// group_classify, with the runnable average's part (5.7+) or without it.
    pub(crate) fn classify(&self, pct: u64, with_runnable: bool) -> GroupType {
        let over_util = self.capacity * 100 < self.util * pct;
        let over_runnable = with_runnable && self.capacity * pct < self.runnable * 100;
        if self.nr > self.weight && (over_util || over_runnable) {
            GroupType::Overloaded
        } else if self.nr < self.weight || (!over_runnable && !over_util) {
            GroupType::HasSpare
        } else {
            GroupType::FullyBusy
        }
    }

    fn avg_load(&self) -> u64 {
        self.load * SCALE / self.capacity.max(1)
    }
}

/// Index of the busiest group among `groups` other than `local` (update_sd_pick_busiest): the
/// highest type, then among overloaded ones the highest `avg_load`, among the others the
/// fewest idle CPUs, then the most tasks; the first of equals. None if no other group has a task.
pub(crate) fn busiest_group(groups: &[GroupStats], local: usize, pct: u64) -> Option<usize> {
    let rank = |g: &GroupStats| {
        let t = g.group_type(pct);
        let within = if t == GroupType::Overloaded { g.avg_load() } else { 0 };
        (t, within, std::cmp::Reverse(g.idle_cpus), g.nr)
    };
    (0..groups.len()).filter(|&i| i != local && groups[i].nr > 0).fold(None, |best: Option<usize>, i| match best {
        Some(b) if rank(&groups[b]) >= rank(&groups[i]) => Some(b),
        _ => Some(i),
    })
}

/// The imbalance between the local group and the busiest, or None when the domain counts as
/// balanced (sched_balance_find_src_group's checks, then calculate_imbalance), for a
/// balancing CPU that is idle (`dst_idle`) or busy. `all` sums every group of the domain.
/// Groups of one CPU, or with SMT siblings preferred (SD_PREFER_SIBLING), as the kernel's
/// symmetric domains have them.
pub(crate) fn imbalance(
    local: &GroupStats,
    busiest: &GroupStats,
    all: &GroupStats,
    pct: u64,
    dst_idle: bool,
) -> Option<Imbalance> {
    let (lt, bt) = (local.group_type(pct), busiest.group_type(pct));
    let avg = all.load * SCALE / all.capacity.max(1);
    let (l, b) = (local.avg_load(), busiest.avg_load());
    if lt > bt {
        return None;
    }
    if lt == GroupType::Overloaded && (l >= b || l >= avg || 100 * b <= pct * l) {
        return None;
    }
    // A busiest group that is not overloaded gives only to an idle CPU, and not its lone task.
    if bt != GroupType::Overloaded && (!dst_idle || busiest.nr <= 1) {
        return None;
    }
    if lt == GroupType::HasSpare {
        // Spread the tasks evenly (sibling_imbalance: the difference, nothing for a busy CPU),
        // half of it to move.
        let diff = if dst_idle { busiest.nr.saturating_sub(local.nr) } else { 0 };
        let moves = diff >> 1;
        return (moves > 0).then_some(Imbalance::Tasks(moves));
    }
    // A fully busy local group becomes overloaded: only if below busiest and the average.
    if l >= b || l >= avg {
        return None;
    }
    let load = (b.saturating_sub(avg) * busiest.capacity).min((avg - l) * local.capacity) / SCALE;
    (load > 0).then_some(Imbalance::Load(load))
}

/// Whether detach_tasks takes a waiting task of load `load` towards `left` (what remains to
/// move), after `failed` failed balances of the domain, and what remains after it; None to
/// skip it.
pub(crate) fn take(kernel: KernelVersion, left: Imbalance, load: u64, failed: u32) -> Option<Imbalance> {
    match left {
        Imbalance::Tasks(n) => (n > 0).then(|| Imbalance::Tasks(n - 1)),
        Imbalance::Load(rest) => {
            let load = load.max(1);
            if load < LB_MIN_LOAD && failed == 0 {
                return None;
            }
            // 5.5's rework relaxes the bound with each failure; before, half the load counted.
            let counted = if kernel >= KernelVersion(5, 5, 0) { load >> failed.min(63) } else { load / 2 };
            (counted <= rest).then(|| Imbalance::Load(rest.saturating_sub(load)))
        }
    }
}

/// Whether nothing is left to move.
pub(crate) fn spent(left: Imbalance) -> bool {
    matches!(left, Imbalance::Tasks(0) | Imbalance::Load(0))
}

/// get_sd_balance_interval, in ticks: the domain's balance interval (ms) times
/// [`BUSY_FACTOR`] on a busy CPU less one tick (so that levels do not balance in step), at
/// least one tick.
pub(crate) fn balance_interval_ticks(interval_ms: u64, busy: bool, tick_ns: u64) -> u64 {
    let ms = if busy { interval_ms * BUSY_FACTOR } else { interval_ms };
    let ticks = (ms * 1_000_000).div_ceil(tick_ns);
    (if busy { ticks.saturating_sub(1) } else { ticks }).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PCT: u64 = 117;

    fn cpu(nr: u64, load: u64, util: u64) -> GroupStats {
        GroupStats { load, util, runnable: util, nr, idle_cpus: (nr == 0) as u64, weight: 1, capacity: 1024 }
    }

    fn sum(a: &GroupStats, b: &GroupStats) -> GroupStats {
        GroupStats { load: a.load + b.load, capacity: a.capacity + b.capacity, ..*a }
    }

    #[test]
    fn a_cpu_is_overloaded_with_more_tasks_than_cpus_and_its_capacity_used_past_the_margin() {
        // 1024 · 100 < util · 117 from util 876 on.
        assert_eq!(cpu(2, 2048, 876).group_type(PCT), GroupType::Overloaded);
        assert_eq!(cpu(2, 2048, 875).group_type(PCT), GroupType::HasSpare);
        // One task keeps a CPU from being overloaded however busy; it is then fully busy.
        assert_eq!(cpu(1, 1024, 1024).group_type(PCT), GroupType::FullyBusy);
        assert_eq!(cpu(0, 0, 0).group_type(PCT), GroupType::HasSpare);
        // Runnable time alone (tasks waiting, not running) overloads too.
        let waiting = GroupStats { runnable: 1300, ..cpu(3, 3072, 700) };
        assert_eq!(waiting.group_type(PCT), GroupType::Overloaded);
    }

    #[test]
    fn two_overloaded_cpus_balance_load_to_the_average_from_a_margin_of_imbalance_pct() {
        // 12 senders' load against 8: avg 10 · 1024; the pull is 2 tasks' worth.
        let (busy, local) = (cpu(12, 12 * 1024, 1024), cpu(8, 8 * 1024, 1024));
        assert_eq!(imbalance(&local, &busy, &sum(&busy, &local), PCT, false), Some(Imbalance::Load(2 * 1024)));
        // 11 against 10 is within 17%: balanced.
        let (busy, local) = (cpu(11, 11 * 1024, 1024), cpu(10, 10 * 1024, 1024));
        assert_eq!(imbalance(&local, &busy, &sum(&busy, &local), PCT, false), None);
        // The lighter CPU never gives to the heavier.
        let (busy, local) = (cpu(8, 8 * 1024, 1024), cpu(12, 12 * 1024, 1024));
        assert_eq!(imbalance(&local, &busy, &sum(&busy, &local), PCT, false), None);
    }

    #[test]
    fn a_fully_busy_cpu_takes_load_from_an_overloaded_one_up_to_the_average() {
        // One task against three: the average is two tasks' load, one moves.
        let (busy, local) = (cpu(3, 3072, 1024), cpu(1, 1024, 1024));
        assert_eq!(imbalance(&local, &busy, &sum(&busy, &local), PCT, false), Some(Imbalance::Load(1024)));
        // Two fully busy CPUs (one task each) are balanced.
        assert_eq!(imbalance(&cpu(1, 1024, 1024), &cpu(1, 1024, 1024), &cpu(2, 2048, 2048), PCT, false), None);
    }

    #[test]
    fn a_cpu_with_spare_capacity_takes_half_the_difference_in_tasks() {
        let all = cpu(20, 20 * 1024, 2048);
        assert_eq!(imbalance(&cpu(0, 0, 0), &cpu(17, 17 * 1024, 1024), &all, PCT, true), Some(Imbalance::Tasks(8)));
        assert_eq!(imbalance(&cpu(1, 300, 300), &cpu(3, 3072, 1024), &all, PCT, true), Some(Imbalance::Tasks(1)));
        // A lone task is never pulled to an idle CPU by this path (active balancing's job).
        assert_eq!(imbalance(&cpu(0, 0, 0), &cpu(1, 1024, 1024), &all, PCT, true), None);
        // A busy CPU with spare capacity pulls nothing (sibling_imbalance is for idle CPUs).
        assert_eq!(imbalance(&cpu(1, 300, 300), &cpu(3, 3072, 1024), &all, PCT, false), None);
    }

    #[test]
    fn the_busiest_group_is_the_most_loaded_overloaded_one() {
        let groups = [cpu(2, 2048, 1024), cpu(5, 5 * 1024, 1024), cpu(6, 4 * 1024, 1024), cpu(1, 1024, 1024)];
        assert_eq!(busiest_group(&groups, 0, PCT), Some(1));
        assert_eq!(busiest_group(&groups, 1, PCT), Some(2));
        assert_eq!(busiest_group(&[cpu(3, 3072, 1024), cpu(0, 0, 0)], 0, PCT), None);
    }

    #[test]
    fn detach_takes_tasks_within_the_load_left_and_relaxes_the_bound_with_each_failure() {
        let v = KernelVersion(6, 18, 0);
        // 1500 left: a 1024 task fits, leaving 476; a second 1024 task does not, a 400 one does.
        assert_eq!(take(v, Imbalance::Load(1500), 1024, 0), Some(Imbalance::Load(476)));
        assert_eq!(take(v, Imbalance::Load(476), 1024, 0), None);
        assert_eq!(take(v, Imbalance::Load(476), 400, 0), Some(Imbalance::Load(76)));
        // After one failure half the load counts; after two, a quarter.
        assert_eq!(take(v, Imbalance::Load(600), 1024, 1), Some(Imbalance::Load(0)));
        assert_eq!(take(v, Imbalance::Load(300), 1024, 2), Some(Imbalance::Load(0)));
        // LB_MIN: a nearly idle task waits for a failed balance.
        assert_eq!(take(v, Imbalance::Load(500), 10, 0), None);
        assert_eq!(take(v, Imbalance::Load(500), 10, 1), Some(Imbalance::Load(490)));
        // Before 5.5 half a task's load had to fit.
        assert_eq!(take(KernelVersion(5, 4, 0), Imbalance::Load(600), 1024, 0), Some(Imbalance::Load(0)));
        assert_eq!(take(v, Imbalance::Tasks(2), 5000, 0), Some(Imbalance::Tasks(1)));
        assert!(spent(Imbalance::Tasks(0)) && spent(Imbalance::Load(0)) && !spent(Imbalance::Load(1)));
    }

    #[test]
    fn a_busy_cpu_balances_sixteen_times_less_often_one_tick_early() {
        // 2 ms at HZ=250: busy 32 ms is 8 ticks, less one; idle, one tick (rounded up).
        assert_eq!(balance_interval_ticks(2, true, 4_000_000), 7);
        assert_eq!(balance_interval_ticks(2, false, 4_000_000), 1);
        assert_eq!(balance_interval_ticks(4, true, 1_000_000), 63);
    }
}
