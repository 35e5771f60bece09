//! The next timer an idle governor sees (`tick_nohz_get_sleep_length`'s next event): the
//! sooner of the CPU's own timers the simulation knows (a workload's sleeps and timeouts) and
//! the soft-lockup watchdog's per-CPU hrtimer, which every kernel the simulator follows arms
//! on each online CPU (kernel/watchdog.c: `watchdog_enable` starts it, `watchdog_timer_fn`
//! re-arms it every `sample_period`). A real CPU always has such a timer, so menu's view of the
//! future is bounded: a poll ended by its time limit is recorded as lasting to it (menu_update)
//! rather than forever.
//!
//! Only the watchdog is taken as the background timer: other periodic kernel timers
//! (writeback, vmstat, the clocksource watchdog) are deferrable or come and go with load, and
//! no source gives their rate on the presets' machines. The watchdog's own wake-ups are not
//! simulated (docs/model.md).

use crate::engine::TimeNs;

/// `sample_period` at the default `watchdog_thresh` of 10 s (`set_sample_period`:
/// `get_softlockup_thresh() * (NSEC_PER_SEC / 5)`, the threshold being twice
/// `watchdog_thresh`): 4 s.
pub(crate) const WATCHDOG_PERIOD_NS: u64 = 4_000_000_000;

/// Estimated: the watchdog hrtimer's first expiry after the run starts, 2 s. Its phase is set
/// when the CPU came online, long before the benchmark, and is unknown: half the period is the
/// middle of the possible values. Range: 0 – 4 s (any phase, [`WATCHDOG_PHASE_NS_RANGE`]).
pub(crate) const WATCHDOG_PHASE_NS: u64 = 2_000_000_000;
/// The range [`WATCHDOG_PHASE_NS`] is believed to lie in: one whole period.
#[allow(dead_code)]
pub(crate) const WATCHDOG_PHASE_NS_RANGE: (u64, u64) = (0, WATCHDOG_PERIOD_NS);

/// The watchdog hrtimer's next expiry strictly after `now`.
pub(crate) fn watchdog_next(now: TimeNs) -> TimeNs {
    if now < WATCHDOG_PHASE_NS {
        WATCHDOG_PHASE_NS
    } else {
        WATCHDOG_PHASE_NS + ((now - WATCHDOG_PHASE_NS) / WATCHDOG_PERIOD_NS + 1) * WATCHDOG_PERIOD_NS
    }
}

/// The next timer the idle governor of a CPU idle at `now` sees: the sooner of the CPU's own
/// next timer (`own`, if the simulation knows one) and the watchdog's.
pub(crate) fn governor_next_timer(now: TimeNs, own: Option<TimeNs>) -> TimeNs {
    let watchdog = watchdog_next(now);
    own.map_or(watchdog, |t| t.min(watchdog))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The watchdog expires at its phase (2 s) and every 4 s after; the governor sees the
    /// sooner of it and the CPU's own timer.
    #[test]
    fn the_governor_sees_the_sooner_of_its_own_timer_and_the_watchdog() {
        assert_eq!(watchdog_next(0), 2_000_000_000);
        assert_eq!(watchdog_next(1_999_999_999), 2_000_000_000);
        assert_eq!(watchdog_next(2_000_000_000), 6_000_000_000);
        assert_eq!(watchdog_next(9_000_000_000), 10_000_000_000);
        // No timer of its own: the watchdog.
        assert_eq!(governor_next_timer(500_000_000, None), 2_000_000_000);
        // A sleep ending before the watchdog: the sleep.
        assert_eq!(governor_next_timer(500_000_000, Some(501_000_000)), 501_000_000);
        // One ending after it: the watchdog.
        assert_eq!(governor_next_timer(2_500_000_000, Some(7_000_000_000)), 6_000_000_000);
        let (lo, hi) = WATCHDOG_PHASE_NS_RANGE;
        assert!(lo <= WATCHDOG_PHASE_NS && WATCHDOG_PHASE_NS <= hi);
    }
}
