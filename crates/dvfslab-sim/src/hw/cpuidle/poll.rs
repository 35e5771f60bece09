//! The polling state's time limit (`poll_idle`, drivers/cpuidle/poll_state.c): a CPU spinning
//! in cpuidle's POLL state gives up after a bounded time and returns to the idle loop, which
//! asks the governor again (menu records the abandoned poll as its next timer from 5.0).
//!
//! The limit by version, as the source has it:
//! - before 4.17: none, the CPU polls until it has something to run;
//! - 4.17 – 4.20: a sixteenth of a tick ("cpuidle: poll_state: Add time limit to poll_idle()");
//! - 5.0 – 5.10: the target residency of the first state after POLL ("cpuidle: use first valid
//!   target residency as poll time"; from 5.4 computed by `cpuidle_poll_time`), a tick when
//!   there is none;
//! - 5.11+: the first such state whose target residency is at least 10 µs (CPUIDLE_POLL_MIN),
//!   capped at a sixteenth of a tick (CPUIDLE_POLL_MAX), which is also the limit when there is
//!   none ("cpuidle: Select polling interval based on a c-state with a longer target
//!   residency").
//!
//! No state is disabled in the simulator, so "first enabled" is the first after POLL. Left out:
//! `poll_idle` reads the clock only every 200 spins (POLL_IDLE_RELAX_COUNT), so it overshoots
//! the limit by up to a few µs, and 5.4's `cpuidle_poll_time`, which until fixed lacked its
//! `break` and took the last state's residency.

use crate::hw::platform::IdleTiming;
use crate::kernel::KernelVersion;

/// The first kernel whose POLL state has a time limit.
const POLL_LIMIT_KERNEL: KernelVersion = KernelVersion(4, 17);
/// From 5.0 the limit is the next state's target residency.
const POLL_BY_RESIDENCY_KERNEL: KernelVersion = KernelVersion(5, 0);
/// From 5.11 a residency under CPUIDLE_POLL_MIN is skipped and the limit capped.
const POLL_MIN_MAX_KERNEL: KernelVersion = KernelVersion(5, 11);
/// CPUIDLE_POLL_MIN: the shortest residency taken as the limit from 5.11.
const POLL_MIN_NS: u64 = 10_000;

/// How long a CPU polls before going back to the governor, for a POLL state at index 0 of
/// `timing`; none when the kernel sets no limit.
pub(crate) fn poll_limit_ns(kernel: KernelVersion, tick_ns: u64, timing: &[IdleTiming]) -> Option<u64> {
    let max = tick_ns / 16;
    let next = timing.iter().skip(1).map(|s| s.target_residency_ns);
    if kernel < POLL_LIMIT_KERNEL {
        None
    } else if kernel < POLL_BY_RESIDENCY_KERNEL {
        Some(max)
    } else if kernel < POLL_MIN_MAX_KERNEL {
        Some(next.take(1).next().unwrap_or(tick_ns))
    } else {
        Some(next.filter(|&r| r >= POLL_MIN_NS).map(|r| r.min(max)).next().unwrap_or(max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(residencies_us: &[u64]) -> Vec<IdleTiming> {
        residencies_us.iter().map(|&r| IdleTiming { exit_ns: 0, target_residency_ns: r * 1000 }).collect()
    }

    /// Skylake's residencies (POLL 0, C1 2, C1E 20, ... µs) at HZ=250: no limit before 4.17,
    /// 250 µs to 4.20, C1's 2 µs to 5.10, C1E's 20 µs from 5.11. EPYC's (POLL, C1 2, C2 800):
    /// 5.11+ skips C1 and caps C2 at 250 µs. POLL alone: a tick to 5.10, 250 µs after.
    #[test]
    fn the_poll_limit_follows_the_kernel_version() {
        let k = |a, b| KernelVersion(a, b);
        let tick = 4_000_000;
        let skylake = table(&[0, 2, 20, 100, 200, 800, 800]);
        let limits: Vec<_> = [k(4, 16), k(4, 17), k(4, 20), k(5, 0), k(5, 10), k(5, 11), k(6, 18)]
            .map(|v| poll_limit_ns(v, tick, &skylake))
            .into();
        assert_eq!(limits, [None, Some(250_000), Some(250_000), Some(2_000), Some(2_000), Some(20_000), Some(20_000)]);
        let epyc = table(&[0, 2, 800]);
        assert_eq!(poll_limit_ns(k(5, 10), tick, &epyc), Some(2_000));
        assert_eq!(poll_limit_ns(k(5, 11), tick, &epyc), Some(250_000));
        assert_eq!(poll_limit_ns(k(5, 10), tick, &table(&[0])), Some(tick));
        assert_eq!(poll_limit_ns(k(5, 11), tick, &table(&[0])), Some(250_000));
    }
}
