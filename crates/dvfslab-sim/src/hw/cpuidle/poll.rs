//! The polling state's time limit (`poll_idle`, drivers/cpuidle/poll_state.c): a CPU spinning
//! in cpuidle's POLL state gives up after a bounded time and returns to the idle loop, which
//! asks the governor again (menu records the abandoned poll as its next timer from 5.0).
//!
//! The limit by version, as the source has it:
//! - before 4.17: none, the CPU polls until it has something to run;
//! - 4.17 – 4.20: a sixteenth of a tick ("cpuidle: poll_state: Add time limit to poll_idle()");
//! - 5.0 – 5.10: the target residency of the first state after POLL (in `poll_idle` itself
//!   until 5.3, from 5.4 in `cpuidle_poll_time`), a tick when there is none;
//! - 5.4 alone: `cpuidle_poll_time` as first written ("cpuidle: add poll_limit_ns to
//!   cpuidle_device structure") lost the loop's `break`, so the limit is the *last* state's
//!   target residency (Skylake: C8's 800 µs); 5.5 restored the first ("cpuidle: use first
//!   valid target residency as poll time", also in 5.4's stable releases from 5.4.4, which
//!   `kernel=5.4` does not follow);
//! - 5.11+: the first such state whose target residency is at least 10 µs (CPUIDLE_POLL_MIN),
//!   capped at a sixteenth of a tick (CPUIDLE_POLL_MAX), which is also the limit when there is
//!   none ("cpuidle: Select polling interval based on a c-state with a longer target
//!   residency").
//!
//! No state is disabled in the simulator, so "first enabled" is the first after POLL.
//!
//! `poll_idle` reads the clock only after every POLL_IDLE_RELAX_COUNT + 1 (201) `cpu_relax()`
//! calls, so the poll ends at the first such read past the limit ([`poll_end_ns`]): later
//! than the limit by up to 201 relax loops, whose cost in cycles the preset declares
//! (`relax_cycles` of the POLL state, docs/platform-format.md).

use crate::hw::platform::IdleTiming;
use crate::kernel::KernelVersion;

/// The first kernel whose POLL state has a time limit.
const POLL_LIMIT_KERNEL: KernelVersion = KernelVersion(4, 17);
/// From 5.0 the limit is the next state's target residency.
const POLL_BY_RESIDENCY_KERNEL: KernelVersion = KernelVersion(5, 0);
/// The one kernel whose `cpuidle_poll_time` took the last state's residency.
const POLL_LAST_STATE_KERNEL: KernelVersion = KernelVersion(5, 4);
/// From 5.11 a residency under CPUIDLE_POLL_MIN is skipped and the limit capped.
const POLL_MIN_MAX_KERNEL: KernelVersion = KernelVersion(5, 11);
/// CPUIDLE_POLL_MIN: the shortest residency taken as the limit from 5.11.
const POLL_MIN_NS: u64 = 10_000;
/// `poll_idle`'s `cpu_relax()` calls between two clock reads: POLL_IDLE_RELAX_COUNT (200)
/// skipped by `loop_count++ < POLL_IDLE_RELAX_COUNT`, then the one that reads.
const RELAXES_PER_CLOCK_READ: f64 = 201.0;

/// How long a CPU polls before going back to the governor, for a POLL state at index 0 of
/// `timing`; none when the kernel sets no limit.
pub(crate) fn poll_limit_ns(kernel: KernelVersion, tick_ns: u64, timing: &[IdleTiming]) -> Option<u64> {
    let max = tick_ns / 16;
    let mut next = timing.iter().skip(1).map(|s| s.target_residency_ns);
    if kernel < POLL_LIMIT_KERNEL {
        None
    } else if kernel < POLL_BY_RESIDENCY_KERNEL {
        Some(max)
    } else if kernel == POLL_LAST_STATE_KERNEL {
        Some(next.next_back().unwrap_or(tick_ns))
    } else if kernel < POLL_MIN_MAX_KERNEL {
        Some(next.next().unwrap_or(tick_ns))
    } else {
        Some(next.find(|&r| r >= POLL_MIN_NS).map_or(max, |r| r.min(max)))
    }
}

/// When, after its start, a poll with time limit `limit_ns` ends: at `poll_idle`'s first
/// clock read strictly past the limit (`local_clock() - time_start > limit`), the reads coming
/// every 201 `cpu_relax()` calls of `relax_cycles` cycles each at `khz`. Without a declared
/// relax cost, at the limit.
pub(crate) fn poll_end_ns(limit_ns: u64, relax_cycles: Option<f64>, khz: u32) -> u64 {
    let Some(cycles) = relax_cycles.filter(|_| khz > 0) else { return limit_ns };
    let read_every_ns = (RELAXES_PER_CLOCK_READ * cycles * 1e6 / khz as f64).max(1.0) as u64;
    (limit_ns / read_every_ns + 1) * read_every_ns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(residencies_us: &[u64]) -> Vec<IdleTiming> {
        residencies_us.iter().map(|&r| IdleTiming { exit_ns: 0, target_residency_ns: r * 1000 }).collect()
    }

    /// Skylake's residencies (POLL 0, C1 2, C1E 20, ... C8 800 µs) at HZ=250: no limit before
    /// 4.17, 250 µs to 4.20, C1's 2 µs to 5.10 but C8's 800 µs at 5.4 (the lost `break`), C1E's
    /// 20 µs from 5.11. EPYC's (POLL, C1 2, C2 800): 5.11+ skips C1 and caps C2 at 250 µs.
    /// POLL alone: a tick to 5.10, 250 µs after.
    #[test]
    fn the_poll_limit_follows_the_kernel_version() {
        let k = |a, b| KernelVersion(a, b);
        let tick = 4_000_000;
        let skylake = table(&[0, 2, 20, 100, 200, 800, 800]);
        let limits: Vec<_> =
            [k(4, 16), k(4, 17), k(4, 20), k(5, 0), k(5, 3), k(5, 4), k(5, 5), k(5, 10), k(5, 11), k(6, 18)]
                .map(|v| poll_limit_ns(v, tick, &skylake))
                .into();
        let us = |n: u64| Some(n * 1000);
        assert_eq!(limits, [None, us(250), us(250), us(2), us(2), us(800), us(2), us(2), us(20), us(20)]);
        let epyc = table(&[0, 2, 800]);
        assert_eq!(poll_limit_ns(k(5, 4), tick, &epyc), us(800));
        assert_eq!(poll_limit_ns(k(5, 10), tick, &epyc), us(2));
        assert_eq!(poll_limit_ns(k(5, 11), tick, &epyc), us(250));
        assert_eq!(poll_limit_ns(k(5, 4), tick, &table(&[0])), Some(tick));
        assert_eq!(poll_limit_ns(k(5, 10), tick, &table(&[0])), Some(tick));
        assert_eq!(poll_limit_ns(k(5, 11), tick, &table(&[0])), us(250));
    }

    /// The clock is read every 201 relax loops: 140 cycles each at 800 MHz is a read every
    /// 35.175 µs, so a 2 µs limit ends at the first read and a 100 µs one at the third; at
    /// 3.5 GHz (8.04 µs) the 20 µs limit ends at 24.12 µs. A limit on a read waits for the
    /// next one (the test is strict). Haswell's 10 cycles at 3.5 GHz: a read every 574 ns.
    /// Without a declared cost, the limit itself.
    #[test]
    fn the_poll_ends_at_the_first_clock_read_past_its_limit() {
        assert_eq!(poll_end_ns(2_000, Some(140.0), 800_000), 35_175);
        assert_eq!(poll_end_ns(100_000, Some(140.0), 800_000), 3 * 35_175);
        assert_eq!(poll_end_ns(20_000, Some(140.0), 3_500_000), 24_120);
        assert_eq!(poll_end_ns(35_175, Some(140.0), 800_000), 2 * 35_175);
        assert_eq!(poll_end_ns(2_000, Some(10.0), 3_500_000), 4 * 574);
        assert_eq!(poll_end_ns(2_000, None, 800_000), 2_000);
    }
}
