//! Wake-up placement on symmetric CPUs, as `select_task_rq_fair`'s fast path has it:
//! `wake_affine` picks a target between the waker's CPU and the task's previous one, then
//! `select_idle_sibling` looks for an idle CPU near that target.
//!
//! ```text
//!   wake_affine (waker CPU `this` ≠ `prev`):
//!     wake_affine_idle:   this idle, sharing prev's LLC  → prev if idle, else this
//!                         sync and this runs the waker alone → this
//!                         prev idle → prev
//!     wake_affine_weight: this if  (load(this) − load(waker if sync) + load(p)) · 100 · cap(prev)
//!                                < (load(prev) − load(p)) · (100 + (pct − 100)/2) · cap(this) (+1 if sync)
//!                         (a CPU's load: its run-queue's load average, cpu_load, which keeps
//!                          the decaying loads of tasks asleep there, p's own on prev)
//!                         (a sync waker heavier than its CPU's whole load: this), else prev
//!   select_idle_sibling(prev, target):
//!     target idle → target;  prev idle and sharing the LLC → prev
//!     the task's recently used CPU, idle and sharing the LLC → it   (then it becomes prev)
//!     an idle core (SMT) or, SIS_UTIL, one of the next nr_idle_scan CPUs after target → it
//!     else target
//!   nr_idle_scan, per LLC at periodic balancing, x = Σ util / llc_size:
//!     llc_size · (1024 − min(1024, x² · pct² / (10000 · 1024))) / 1024   (0 from 85% busy)
//! ```
//! Version gates: the weight rule in this form (WA_WEIGHT, WA_BIAS) from 4.15; the recently
//! used CPU replaced by `prev` at every search from 5.12 (its form of 4.16–5.11, replaced only
//! when taken, is not modelled); SIS_UTIL from 6.0 (the SIS_PROP limit before it is not
//! modelled: the search scans the whole LLC). `wake_wide` keeps a waker of many (its
//! wakee switches at least `llc_size` times those of its wakee, which has at least `llc_size`
//! itself) from pulling its wakees to its CPU: no `wake_affine`, the target is `prev`. The
//! switches are counted (record_wakee) for the task current on the CPU running the wake-up,
//! whatever woke: a task, or a softirq or timer interrupting one; not for a wake-up that finds
//! its task still queued (ttwu_runnable) or one of a task allowed on a single CPU, neither of
//! which reaches select_task_rq_fair.

/// select_idle_cpu's scan limit for one LLC (`sd_llc_shared->nr_idle_scan`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IdleScan {
    /// CPUs a search may visit; 0 stops it.
    pub nr_idle_scan: usize,
    /// When periodic balancing next refreshes it.
    pub next_update_ns: u64,
}

impl IdleScan {
    /// Every LLC open to a full scan, as on an idle machine.
    pub(crate) fn all(llcs: &[Vec<usize>]) -> Vec<IdleScan> {
        llcs.iter().map(|cpus| IdleScan { nr_idle_scan: cpus.len(), next_update_ns: 0 }).collect()
    }
}

/// How often an LLC's scan limit is refreshed: each busy CPU balances its LLC domain every
/// `llc_size` ms times the domain's busy factor (16), and any of the LLC's CPUs refreshes the
/// shared limit, so about every 16 ms whatever the LLC's size.
pub(crate) const IDLE_SCAN_UPDATE_NS: u64 = 16_000_000;

/// The LLC domain's imbalance_pct (`sd_init`), which SIS_UTIL's curve uses.
pub(crate) const LLC_IMBALANCE_PCT: u64 = 117;

/// SIS_UTIL's scan limit for an LLC of `llc_size` CPUs whose CFS utilisation sums to
/// `sum_util` (update_idle_cpu_scan).
pub(crate) fn nr_idle_scan(sum_util: u64, llc_size: usize, pct: u64) -> usize {
    let x = sum_util / llc_size.max(1) as u64;
    let tmp = (x * x * pct * pct / (10_000 * 1024)).min(1024);
    (llc_size as u64 * (1024 - tmp) / 1024) as usize
}

/// How often a task's wakee switch count is halved (record_wakee: once a second, HZ jiffies).
pub(crate) const WAKEE_FLIP_DECAY_NS: u64 = 1_000_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scan_limit_falls_with_the_square_of_the_llc_utilisation_and_stops_at_85_percent() {
        // 8 CPUs, idle: all 8; half busy (x = 512): 512² · 117² / (10⁴ · 1024) = 350, so
        // 8 · 674 / 1024 = 5; at 85% (x = 870) 1011 of 1024 gone, 8 · 13 / 1024 = 0.
        assert_eq!(nr_idle_scan(0, 8, 117), 8);
        assert_eq!(nr_idle_scan(8 * 512, 8, 117), 5);
        assert_eq!(nr_idle_scan(8 * 870, 8, 117), 0);
        assert_eq!(nr_idle_scan(8 * 1024, 8, 117), 0);
        // The guest's 2-CPU LLC: one CPU busy of two (x = 512) leaves one to scan.
        assert_eq!(nr_idle_scan(1024, 2, 117), 1);
    }
}
