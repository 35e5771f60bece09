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
//!   6.17 – 6.18.4 the same, and a balance that pulls nothing raises max_newidle_lb_cost by
//!                   half, up to sysctl_sched_migration_cost + 200 ns (commit 155213a2aed4)
//!   6.1.149 – 6.1.159, 6.12.43 – 6.12.63  the raise, taken by the stable series
//!   6.1.160+, 6.12.65+, 6.18.5+  the cost gate without the raise, then a lottery (NI_RANDOM)
//! ```
//! `max_newidle_lb_cost` is the longest a balance of the domain has taken (sched_clock around
//! it, `update_newidle_cost`); periodic balancing decays it by 253/256 once a second after
//! its last rise. The model times every balance at [`NEWIDLE_BALANCE_COST_NS`].
//!
//! The lottery (commit 33cf66d88306, "Proportional newidle balance", with the revert of the
//! raise, d206fbad9328; mainline after 6.18, taken by the 6.1, 6.12 and 6.18 stable series): each
//! domain keeps how often its new-idle balances pulled a task, as a ratio in 1024ths over a
//! window of about 1024 visits (`update_newidle_stats`), and a visit balances only when a
//! 1024-sided die (`sched_rng`) shows at most 1 + ratio, else counts as a failure. A domain
//! whose balances rarely pull is rarely balanced. The statistics start at sd_init's assumed
//! 50% (512 visits, 256 successes), as at boot: a run shorter than a few windows of visits
//! keeps much of that start. The later rate term (NI_RATE, 2026), which lifts the ratio of
//! domains visited less than a few hundred times a second, is not modelled.
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
/// modelled machine; it only matters from 5.16, where it is the gate itself. Read with BPF in
/// a 2-vCPU KVM guest of 6.18.44 on an AMD EPYC host (its `sched_domain`, whose debugfs files
/// the guest refuses): 6–12 µs idle, 12–24 µs under hackbench, once 143 µs after one slow
/// balance (a vCPU the host held mid-balance, as it seems), decaying 1% a second; the
/// lottery's ratio there 54–80 of 1024 idle, 190–880 under hackbench.
pub(crate) const NEWIDLE_BALANCE_COST_NS: u64 = 5_000;

/// How often `max_newidle_lb_cost` decays by 253/256 (HZ jiffies: a second).
const DECAY_PERIOD_NS: TimeNs = 1_000_000_000;

/// The first stable update of each series with the new-idle lottery and without 6.17's raise,
/// as Debian's changelogs of its 6.1 and 6.12 kernels name them (each commit under the stable
/// update it came in: "Proportional newidle balance" and "Revert max_newidle_lb_cost bump" in
/// 6.1.160 and 6.12.65); 6.18.5 from a third-party kernel monitor's notes (`newidle_call`,
/// `newidle_success` and `newidle_ratio` present "6.18.5+"). Read at 6.12.118 (Debian's
/// linux-source-6.12): the lottery is there as modelled, a success weighted by the inverse of
/// its odds, with 5.16's cost gate and no raise. The recording kernel, 6.18.44, behaves as the
/// lottery predicts (a CPU going idle pulls a waiting task about a fifth of the time, whatever
/// its average idle time; docs/recording.md).
const LOTTERY_FIRST_STABLE: [KernelVersion; 3] =
    [KernelVersion(6, 1, 160), KernelVersion(6, 12, 65), KernelVersion(6, 18, 5)];

/// The first stable update of each series that took 6.17's raise ("sched/fair: Bump
/// sd->max_newidle_lb_cost when newidle balance fails"): 6.1.149 and 6.12.43 (Debian's
/// changelogs). The 6.12 series reverted it in 6.12.64, one update before its lottery; the 6.1
/// series with its lottery.
const RAISE_FIRST_STABLE: [KernelVersion; 2] = [KernelVersion(6, 1, 149), KernelVersion(6, 12, 43)];
const RAISE_REVERTED_FIRST_STABLE: [KernelVersion; 1] = [KernelVersion(6, 12, 64)];

/// The ceiling of 6.17's raise after a failed balance: the migration cost plus 200 ns.
const RAISED_COST_CAP_NS: u64 = MIGRATION_COST_NS + 200;

/// The version's test of a CPU's idle time before it balances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// avg_idle against the migration cost (before 5.16).
    MigrationCost,
    /// avg_idle against the domain's measured balance cost (5.16–6.16).
    BalanceCost,
    /// The same, the cost raised after every balance that pulls nothing (6.17 – 6.18.4;
    /// 6.1.149 – 6.1.159, 6.12.43 – 6.12.63).
    RaisedOnFailure,
    /// The balance-cost gate, then a lottery on the domain's recent success rate (NI_RANDOM;
    /// 6.1.160+, 6.12.65+, 6.18.5+).
    SuccessLottery,
}

impl Gate {
    pub(crate) fn for_kernel(kernel: KernelVersion) -> Gate {
        let raised_from_stable =
            kernel.has_backport(&RAISE_FIRST_STABLE) && !kernel.has_backport(&RAISE_REVERTED_FIRST_STABLE);
        if kernel.has_backport(&LOTTERY_FIRST_STABLE) {
            Gate::SuccessLottery
        } else if kernel >= KernelVersion(6, 17, 0) || raised_from_stable {
            Gate::RaisedOnFailure
        } else if kernel >= KernelVersion(5, 16, 0) {
            Gate::BalanceCost
        } else {
            Gate::MigrationCost
        }
    }
}

/// A CPU's lowest domain's `max_newidle_lb_cost` and when it last rose or decayed, and its
/// new-idle success statistics (`newidle_call`, `newidle_success`, `newidle_ratio`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NewidleCost {
    /// Starts at 0 (sd_init).
    pub(crate) max_cost_ns: u64,
    pub(crate) last_decay_ns: TimeNs,
    /// New-idle visits of the domain counted since the last halving.
    calls: u32,
    /// Successes among them, each weighted by the inverse of the chance it ran.
    successes: u32,
    /// The success rate in 1024ths at the last halving: what the lottery reads.
    pub(crate) ratio: u32,
}

impl Default for NewidleCost {
    /// sd_init: no cost measured, and a 50% success rate assumed (512 calls, 256 successes).
    fn default() -> NewidleCost {
        NewidleCost { max_cost_ns: 0, last_decay_ns: 0, calls: 512, successes: 256, ratio: 512 }
    }
}

/// A new-idle balance the gate let run, and what a task pulled by it counts for in the success
/// statistics (the lottery's inverse odds; 1 without the lottery).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Admitted {
    weight: u32,
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
    /// root domain `overloaded` or not; `die` throws the lottery's 1024-sided die
    /// (`sched_rng() % 1024`), only when the lottery is reached.
    pub(crate) fn admit(
        &mut self,
        gate: Gate,
        avg_idle_ns: u64,
        overloaded: bool,
        now: TimeNs,
        die: impl FnOnce() -> u32,
    ) -> Option<Admitted> {
        if !overloaded {
            return None;
        }
        let affordable = match gate {
            Gate::MigrationCost => avg_idle_ns >= MIGRATION_COST_NS,
            Gate::BalanceCost | Gate::RaisedOnFailure | Gate::SuccessLottery => {
                self.decay(now);
                avg_idle_ns >= self.max_cost_ns
            }
        };
        if !affordable {
            return None;
        }
        if gate != Gate::SuccessLottery {
            return Some(Admitted { weight: 1 });
        }
        // sched_balance_newidle with NI_RANDOM: the balance runs when the die shows at most
        // 1 + ratio, else the visit counts as a failure. A success then counts
        // round(1024 / (1 + ratio)), so the successes estimate what balancing every time would
        // have pulled.
        let odds = 1 + self.ratio;
        if die() > odds {
            self.count_call(0);
            return None;
        }
        Some(Admitted { weight: (1024 + odds / 2) / odds })
    }

    /// update_newidle_stats: one more visit, its weighted success; every 1024 visits the
    /// ratio becomes the successes, and both counts halve (a decaying window).
    fn count_call(&mut self, success: u32) {
        self.calls += 1;
        self.successes += success;
        if self.calls >= 1024 {
            self.ratio = self.successes;
            self.calls /= 2;
            self.successes /= 2;
        }
    }

    /// After a balance that ran (and took [`NEWIDLE_BALANCE_COST_NS`]), whether it `pulled` a
    /// task: the domain's cost follows its longest balance, or at 6.17 – 6.18.4, after a
    /// failure, half as much again as it stood; with the lottery the visit's weighted success
    /// is counted (update_newidle_cost).
    pub(crate) fn after_balance(&mut self, gate: Gate, admitted: Admitted, pulled: bool, now: TimeNs) {
        if gate == Gate::SuccessLottery {
            self.count_call(if pulled { admitted.weight } else { 0 });
        }
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

    /// A balance admitted without the lottery.
    const PLAIN: Admitted = Admitted { weight: 1 };

    /// Whether `c` balances before idling (a die showing 0 for the lottery).
    fn may_balance(c: &mut NewidleCost, gate: Gate, avg_idle_ns: u64, overloaded: bool, now: TimeNs) -> bool {
        c.admit(gate, avg_idle_ns, overloaded, now, || 0).is_some()
    }

    #[test]
    fn the_gate_follows_the_version() {
        assert_eq!(Gate::for_kernel(KernelVersion(5, 15, 0)), Gate::MigrationCost);
        assert_eq!(Gate::for_kernel(KernelVersion(5, 16, 0)), Gate::BalanceCost);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 16, 0)), Gate::BalanceCost);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 17, 0)), Gate::RaisedOnFailure);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 18, 0)), Gate::RaisedOnFailure);
        // The stable series that took the lottery, from the update that took it.
        assert_eq!(Gate::for_kernel(KernelVersion(6, 18, 4)), Gate::RaisedOnFailure);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 18, 5)), Gate::SuccessLottery);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 18, 44)), Gate::SuccessLottery);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 12, 64)), Gate::BalanceCost);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 12, 65)), Gate::SuccessLottery);
        // The raise in the stable series, as Debian's changelogs date it.
        assert_eq!(Gate::for_kernel(KernelVersion(6, 12, 42)), Gate::BalanceCost);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 12, 43)), Gate::RaisedOnFailure);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 12, 63)), Gate::RaisedOnFailure);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 1, 148)), Gate::BalanceCost);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 1, 149)), Gate::RaisedOnFailure);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 1, 159)), Gate::RaisedOnFailure);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 1, 160)), Gate::SuccessLottery);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 1, 192)), Gate::SuccessLottery);
        // Read in 6.12.118's source.
        assert_eq!(Gate::for_kernel(KernelVersion(6, 12, 118)), Gate::SuccessLottery);
        assert_eq!(Gate::for_kernel(KernelVersion(6, 17, 13)), Gate::RaisedOnFailure);
    }

    #[test]
    fn the_lottery_balances_when_the_die_shows_at_most_one_more_than_the_ratio() {
        let mut c = NewidleCost::default();
        let admit = |c: &mut NewidleCost, die: u32| c.admit(Gate::SuccessLottery, 100_000, true, 0, || die);
        // sd_init's 50%: 513 of the die's 1024 faces balance, and a success counts
        // round(1024 / 513) = 2.
        assert_eq!(admit(&mut c, 513), Some(Admitted { weight: 2 }));
        assert_eq!(admit(&mut c, 514), None);
        // The cost gate and the overload flag come first: no throw, no visit counted.
        assert_eq!(c.admit(Gate::SuccessLottery, 100_000, false, 0, || unreachable!()), None);
        c.after_balance(Gate::SuccessLottery, Admitted { weight: 2 }, true, 0);
        assert_eq!(c.admit(Gate::SuccessLottery, NEWIDLE_BALANCE_COST_NS - 1, true, 0, || unreachable!()), None);
        // 512 + 2 visits so far (one skipped, one pulled with weight 2); at the 1024th the
        // ratio becomes the successes, 256 + 2, and both counts halve.
        assert_eq!((c.calls, c.successes, c.ratio), (514, 258, 512));
        for _ in 0..510 {
            assert_eq!(admit(&mut c, 1023), None);
        }
        assert_eq!((c.calls, c.successes, c.ratio), (512, 129, 258));
        // No failed raise with the lottery: the cost stays the balance's own.
        assert_eq!(c.max_cost_ns, NEWIDLE_BALANCE_COST_NS);
    }

    #[test]
    fn the_ratio_follows_the_success_rate_whatever_share_of_visits_balances() {
        // A domain whose balances pull one time in four, visited with a fair die: the weighted
        // successes count what balancing at every visit would have pulled, so the ratio
        // settles near 256 whether the domain balanced half its visits or a tenth.
        let mut c = NewidleCost::default();
        let mut faces = (0..1024u32).cycle().step_by(389);
        let mut balances = 0u32;
        for _ in 0..20_000 {
            if let Some(a) = c.admit(Gate::SuccessLottery, 100_000, true, 0, || faces.next().unwrap()) {
                balances += 1;
                c.after_balance(Gate::SuccessLottery, a, balances.is_multiple_of(4), 0);
            }
        }
        assert!((200..=320).contains(&c.ratio), "ratio {}", c.ratio);
        // A domain whose balances never pull is balanced about twice in 1024 visits.
        let mut c = NewidleCost::default();
        for _ in 0..20_000 {
            if let Some(a) = c.admit(Gate::SuccessLottery, 100_000, true, 0, || faces.next().unwrap()) {
                c.after_balance(Gate::SuccessLottery, a, false, 0);
            }
        }
        assert_eq!(c.ratio, 0);
    }

    #[test]
    fn before_5_16_idle_periods_shorter_than_the_migration_cost_skip_the_balance() {
        let mut c = NewidleCost::default();
        assert!(!may_balance(&mut c, Gate::MigrationCost, 499_999, true, 0));
        assert!(may_balance(&mut c, Gate::MigrationCost, 500_000, true, 0));
        // Nothing runnable to spare anywhere: no balance, however long the idle time.
        assert!(!may_balance(&mut c, Gate::MigrationCost, 1_000_000, false, 0));
    }

    #[test]
    fn from_5_16_the_measured_cost_is_the_gate() {
        let mut c = NewidleCost::default();
        // 100 µs of average idle time: too short before 5.16, enough from 5.16.
        assert!(!may_balance(&mut c, Gate::MigrationCost, 100_000, true, 0));
        assert!(may_balance(&mut c, Gate::BalanceCost, 100_000, true, 0));
        c.after_balance(Gate::BalanceCost, PLAIN, false, 0);
        assert_eq!(c.max_cost_ns, NEWIDLE_BALANCE_COST_NS);
        // Failures change nothing before 6.17.
        for _ in 0..20 {
            c.after_balance(Gate::BalanceCost, PLAIN, false, 0);
        }
        assert_eq!(c.max_cost_ns, NEWIDLE_BALANCE_COST_NS);
        assert!(!may_balance(&mut c, Gate::BalanceCost, NEWIDLE_BALANCE_COST_NS - 1, true, 0));
        assert!(!may_balance(&mut c, Gate::BalanceCost, 1_000_000, false, 0));
    }

    #[test]
    fn from_6_17_failed_balances_raise_the_cost_to_the_migration_cost() {
        let mut c = NewidleCost::default();
        // Nothing measured yet: half of nothing is nothing.
        c.after_balance(Gate::RaisedOnFailure, PLAIN, false, 0);
        assert_eq!(c.max_cost_ns, 0);
        c.after_balance(Gate::RaisedOnFailure, PLAIN, true, 0);
        assert_eq!(c.max_cost_ns, NEWIDLE_BALANCE_COST_NS);
        // 5 µs · 1.5^n passes 500 µs after 12 failures; then the cap holds.
        let mut failures = 0;
        while c.max_cost_ns < RAISED_COST_CAP_NS {
            c.after_balance(Gate::RaisedOnFailure, PLAIN, false, 0);
            failures += 1;
        }
        assert_eq!(failures, 12);
        assert_eq!(c.max_cost_ns, MIGRATION_COST_NS + 200);
        c.after_balance(Gate::RaisedOnFailure, PLAIN, false, 0);
        assert_eq!(c.max_cost_ns, MIGRATION_COST_NS + 200);
        // A success does not lower it: the gate is back at about the migration cost.
        c.after_balance(Gate::RaisedOnFailure, PLAIN, true, 0);
        assert!(!may_balance(&mut c, Gate::RaisedOnFailure, 500_000, true, 0));
        assert!(may_balance(&mut c, Gate::RaisedOnFailure, 600_000, true, 0));
    }

    #[test]
    fn the_cost_decays_by_253_256_each_second_after_its_last_rise() {
        let mut c = NewidleCost { max_cost_ns: 512_000, last_decay_ns: 0, ..Default::default() };
        // Within the second, no decay: 511 µs of idle time is not enough.
        assert!(!may_balance(&mut c, Gate::BalanceCost, 511_000, true, 1_000_000_000));
        assert_eq!(c.max_cost_ns, 512_000);
        // Two seconds on: two decays, 512 000 · (253/256)² = 500 016.
        assert!(may_balance(&mut c, Gate::BalanceCost, 511_000, true, 2_000_000_001));
        assert_eq!(c.max_cost_ns, 512_000 * 253 / 256 * 253 / 256);
        assert_eq!(c.last_decay_ns, 2_000_000_000);
    }
}
