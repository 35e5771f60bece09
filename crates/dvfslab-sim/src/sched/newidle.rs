//! Whether a CPU about to go idle looks for work first (new-idle balancing: `idle_balance`,
//! `newidle_balance` from 5.6, `sched_balance_newidle` from 6.10), by kernel version.
//!
//! A CPU with nothing left to run balances before it idles only if the root domain is
//! overloaded (`rd->overload`, `rd->overloaded` from 6.10: some CPU had more than one runnable
//! task at the last balance) and its expected idle time pays for the search:
//!
//! ```text
//!   before 5.16   avg_idle ≥ sysctl_sched_migration_cost (500 µs)
//!   5.16 on       avg_idle ≥ max_newidle_lb_cost of the CPU's lowest domain
//!                   (commit c5b0a7eefc70 dropped the migration-cost test)
//!   6.17, 6.18    the same, and a balance that pulls nothing raises max_newidle_lb_cost by
//!                   half, up to sysctl_sched_migration_cost + 200 ns (commit 155213a2aed4)
//! ```
//! `max_newidle_lb_cost` is the longest a balance of the domain has taken (sched_clock around
//! it, `update_newidle_cost`); periodic balancing decays it by 253/256 once a second after
//! its last rise. The model times every balance at [`NEWIDLE_BALANCE_COST_NS`]. The 6.17
//! raise was reverted for 6.19 (commit d206fbad9328) in favour of a success-rate lottery
//! (NI_RANDOM, commit 33cf66d88306), both backported to 6.18.5; kernel versions here are
//! major.minor, so `kernel=6.18` is 6.18.0's rule.
//!
//! Left out: the per-domain walk's own test (stop at a domain whose cost would overrun
//! avg_idle) — the model balances its CPUs as one domain, gated once — and
//! `rq->max_idle_balance_cost`, which lifts avg_idle's cap above twice the migration cost
//! only when a balance costs more than that.

use crate::engine::TimeNs;
use crate::kernel::KernelVersion;
use crate::sched::MIGRATION_COST_NS;

/// What one new-idle balance of a domain costs, as `sched_clock_cpu` measures it around
/// `load_balance` (from 5.16 with `update_blocked_averages` before it): the value
/// `max_newidle_lb_cost` settles to on a machine of a few CPUs.
/// \[EST\] 5 µs, range 1–25 µs: estimate; the kernel exports it per domain
/// (`/sys/kernel/debug/sched/domains/cpuN/domainM/max_newidle_lb_cost`), not read on a
/// modelled machine; it only matters from 5.16, where it is the gate itself.
pub(crate) const NEWIDLE_BALANCE_COST_NS: u64 = 5_000;

/// How often `max_newidle_lb_cost` decays by 253/256 (HZ jiffies: a second).
const DECAY_PERIOD_NS: TimeNs = 1_000_000_000;

/// The ceiling of 6.17's raise after a failed balance: the migration cost plus 200 ns.
const RAISED_COST_CAP_NS: u64 = MIGRATION_COST_NS + 200;

/// The version's test of a CPU's idle time before it balances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// avg_idle against the migration cost (before 5.16).
    MigrationCost,
    /// avg_idle against the domain's measured balance cost (5.16–6.16).
    BalanceCost,
    /// The same, the cost raised after every balance that pulls nothing (6.17, 6.18).
    RaisedOnFailure,
}

impl Gate {
    pub(crate) fn for_kernel(kernel: KernelVersion) -> Gate {
        if kernel >= KernelVersion(6, 17, 0) {
            Gate::RaisedOnFailure
        } else if kernel >= KernelVersion(5, 16, 0) {
            Gate::BalanceCost
        } else {
            Gate::MigrationCost
        }
    }
}

/// A CPU's lowest domain's `max_newidle_lb_cost` and when it last rose or decayed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct NewidleCost {
    /// Starts at 0 (sd_init).
    pub(crate) max_cost_ns: u64,
    pub(crate) last_decay_ns: TimeNs,
}

impl NewidleCost {
    /// The periodic decays due by `now` (update_newidle_cost from periodic balancing, which
    /// visits every domain far more often than once a second): 253/256 a second since the
    /// last rise or decay.
    fn decay(&mut self, now: TimeNs) {
        while now > self.last_decay_ns + DECAY_PERIOD_NS && self.max_cost_ns > 0 {
            self.max_cost_ns = self.max_cost_ns * 253 / 256;
            self.last_decay_ns += DECAY_PERIOD_NS;
        }
    }

    /// Whether a CPU whose idle periods average `avg_idle_ns` balances before idling, with the
    /// root domain `overloaded` or not.
    pub(crate) fn may_balance(&mut self, gate: Gate, avg_idle_ns: u64, overloaded: bool, now: TimeNs) -> bool {
        if !overloaded {
            return false;
        }
        match gate {
            Gate::MigrationCost => avg_idle_ns >= MIGRATION_COST_NS,
            Gate::BalanceCost | Gate::RaisedOnFailure => {
                self.decay(now);
                avg_idle_ns >= self.max_cost_ns
            }
        }
    }

    /// After a balance that ran (and took [`NEWIDLE_BALANCE_COST_NS`]), whether it `pulled` a
    /// task: the domain's cost follows its longest balance, or from 6.17, after a failure,
    /// half as much again as it stood (update_newidle_cost).
    pub(crate) fn after_balance(&mut self, gate: Gate, pulled: bool, now: TimeNs) {
        let cost = match gate {
            Gate::RaisedOnFailure if !pulled => (3 * self.max_cost_ns / 2).min(RAISED_COST_CAP_NS),
            _ => NEWIDLE_BALANCE_COST_NS,
        };
        if cost > self.max_cost_ns {
            self.max_cost_ns = cost;
            self.last_decay_ns = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_follows_the_version() {
        assert_eq!(Gate::for_kernel(KernelVersion(5, 15, 0)), Gate::MigrationCost);
        assert_eq!(Gate::for_kernel(KernelVersion(5, 16, 0)), Gate::BalanceCost);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 16, 0)), Gate::BalanceCost);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 17, 0)), Gate::RaisedOnFailure);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 18, 0)), Gate::RaisedOnFailure);
    }

    #[test]
    fn before_5_16_idle_periods_shorter_than_the_migration_cost_skip_the_balance() {
        let mut c = NewidleCost::default();
        assert!(!c.may_balance(Gate::MigrationCost, 499_999, true, 0));
        assert!(c.may_balance(Gate::MigrationCost, 500_000, true, 0));
        // Nothing runnable to spare anywhere: no balance, however long the idle time.
        assert!(!c.may_balance(Gate::MigrationCost, 1_000_000, false, 0));
    }

    #[test]
    fn from_5_16_the_measured_cost_is_the_gate() {
        let mut c = NewidleCost::default();
        // 100 µs of average idle time: too short before 5.16, enough from 5.16.
        assert!(!c.may_balance(Gate::MigrationCost, 100_000, true, 0));
        assert!(c.may_balance(Gate::BalanceCost, 100_000, true, 0));
        c.after_balance(Gate::BalanceCost, false, 0);
        assert_eq!(c.max_cost_ns, NEWIDLE_BALANCE_COST_NS);
        // Failures change nothing before 6.17.
        for _ in 0..20 {
            c.after_balance(Gate::BalanceCost, false, 0);
        }
        assert_eq!(c.max_cost_ns, NEWIDLE_BALANCE_COST_NS);
        assert!(!c.may_balance(Gate::BalanceCost, NEWIDLE_BALANCE_COST_NS - 1, true, 0));
        assert!(!c.may_balance(Gate::BalanceCost, 1_000_000, false, 0));
    }

    #[test]
    fn from_6_17_failed_balances_raise_the_cost_to_the_migration_cost() {
        let mut c = NewidleCost::default();
        // Nothing measured yet: half of nothing is nothing.
        c.after_balance(Gate::RaisedOnFailure, false, 0);
        assert_eq!(c.max_cost_ns, 0);
        c.after_balance(Gate::RaisedOnFailure, true, 0);
        assert_eq!(c.max_cost_ns, NEWIDLE_BALANCE_COST_NS);
        // 5 µs · 1.5^n passes 500 µs after 12 failures; then the cap holds.
        let mut failures = 0;
        while c.max_cost_ns < RAISED_COST_CAP_NS {
            c.after_balance(Gate::RaisedOnFailure, false, 0);
            failures += 1;
        }
        assert_eq!(failures, 12);
        assert_eq!(c.max_cost_ns, MIGRATION_COST_NS + 200);
        c.after_balance(Gate::RaisedOnFailure, false, 0);
        assert_eq!(c.max_cost_ns, MIGRATION_COST_NS + 200);
        // A success does not lower it: the gate is back at about the migration cost.
        c.after_balance(Gate::RaisedOnFailure, true, 0);
        assert!(!c.may_balance(Gate::RaisedOnFailure, 500_000, true, 0));
        assert!(c.may_balance(Gate::RaisedOnFailure, 600_000, true, 0));
    }

    #[test]
    fn the_cost_decays_by_253_256_each_second_after_its_last_rise() {
        let mut c = NewidleCost { max_cost_ns: 512_000, last_decay_ns: 0 };
        // Within the second, no decay: 511 µs of idle time is not enough.
        assert!(!c.may_balance(Gate::BalanceCost, 511_000, true, 1_000_000_000));
        assert_eq!(c.max_cost_ns, 512_000);
        // Two seconds on: two decays, 512 000 · (253/256)² = 500 016.
        assert!(c.may_balance(Gate::BalanceCost, 511_000, true, 2_000_000_001));
        assert_eq!(c.max_cost_ns, 512_000 * 253 / 256 * 253 / 256);
        assert_eq!(c.last_decay_ns, 2_000_000_000);
    }
}
