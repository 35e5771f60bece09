//! powernv-cpufreq's global P-state (POWER8): the chip-wide voltage request that the driver
//! lets fall slower than the per-core (local) frequency request, so that a core that speeds
//! up again soon finds its voltage still there (drivers/cpufreq/powernv-cpufreq.c,
//! `gpstate_timer_handler`).
//!
//! ```text
//!   P-state index 0 = highest frequency; larger index = lower frequency.
//!   ramp_down_percent(t_ms) = t² >> 18                 (0 % at 0 ms, 100 % at 5120 ms)
//!   global(t) = highest + ramp_down_percent(t) · (idx_min − highest) / 100, never below local
//!   request below the global → keep ramping (timer every 2000 ms, last one at 5120 ms)
//!   request at or above the global → global = local, ramp restarts
//! ```
//! The ramp ("cpufreq: powernv: Ramp-down global pstate slower than local-pstate") is in every
//! modelled kernel: 4.7 has it. With `slow_rampdown=0` the global simply follows the local
//! request.
//!
//! The ramp timer is pinned to the CPU that queued it and deferrable (init_timer_deferrable
//! with mod_timer_pinned in 4.7, init_timer_pinned_deferrable from 4.8, TIMER_PINNED |
//! TIMER_DEFERRABLE from 4.15): due while that CPU idles, it runs only when the CPU next
//! wakes, so an idle core keeps its global P-state, and the late handler then catches up with
//! all the time elapsed. The CPU is the policy's busy CPU that set the P-state (the one whose
//! scheduler callback ran the governor), or its first CPU if all idle.

use crate::engine::Event;
use crate::engine::EventQueue;
use crate::hw::Hw;
use crate::machine::Machine;

/// Time over which the global P-state falls to the local one (MAX_RAMP_DOWN_TIME).
pub const MAX_RAMP_DOWN_TIME_MS: u64 = 5120;
/// Period of the ramp-down timer (GPSTATE_TIMER_INTERVAL).
pub const GPSTATE_TIMER_INTERVAL_MS: u64 = 2000;

/// Share of the ramp done after `elapsed_ms`, in percent (quadratic).
pub fn ramp_down_percent(elapsed_ms: u64) -> u64 {
    (elapsed_ms * elapsed_ms) >> 18
}

/// calc_global_pstate: the global index after `elapsed_ms` of ramping from `highest` towards
/// `min_idx`, never lower in frequency (higher in index) than `local`.
pub fn calc_global(elapsed_ms: u64, highest: usize, local: usize, min_idx: usize) -> usize {
    let diff = (ramp_down_percent(elapsed_ms) * (min_idx - highest) as u64 / 100) as usize;
    if highest + diff >= local {
        local
    } else {
        highest + diff
    }
}

/// Ramp bookkeeping of one policy (global_pstate_info).
#[derive(Clone, Debug, Default)]
pub(crate) struct Ramp {
    pub highest_idx: usize,
    pub elapsed_ms: u64,
    pub last_sampled_ms: Option<u64>,
    pub last_gpstate_idx: usize,
    pub last_lpstate_idx: usize,
    pub timer_token: u32,
    /// The CPU the timer is pinned to.
    pub timer_cpu: usize,
    /// The timer came due while its CPU idled and waits for it to wake.
    pub deferred: bool,
}

impl Ramp {
    pub(crate) fn reset(&mut self) {
        let (token, timer_cpu) = (self.timer_token, self.timer_cpu);
        *self = Ramp { timer_token: token, timer_cpu, ..Ramp::default() };
    }
}

impl Hw {
    pub(crate) fn pstate_index(&self, machine: &Machine, policy: usize, khz: u32) -> usize {
        let table = &machine.tables[policy];
        let pos = table.iter().position(|&f| f >= khz).unwrap_or(table.len() - 1);
        table.len() - 1 - pos
    }

    pub(crate) fn pstate_khz(&self, machine: &Machine, policy: usize, idx: usize) -> u32 {
        let table = &machine.tables[policy];
        table[table.len() - 1 - idx]
    }

    /// The CPU a deferred ramp timer waits on woke: the handler runs now (after the wake-up
    /// itself), unless the timer was re-armed or stopped meanwhile.
    pub(crate) fn powernv_timer_on_wake(&mut self, q: &mut EventQueue, policy: usize) {
        let r = &mut self.ramps[policy];
        if std::mem::take(&mut r.deferred) {
            let token = r.timer_token;
            q.push(q.now(), Event::DriverTimer { policy: policy as u32, token });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_of_the_spec() {
        // Worked example: 41 P-states, request drops from 0 to 40 at t = 0.
        let g = |t| calc_global(t, 0, 40, 40);
        assert_eq!(g(0), 0);
        assert_eq!(g(2000), 6);
        assert_eq!(g(4000), 24);
        assert_eq!(g(5120), 40);
        assert_eq!((g(1000), g(3000), g(5000)), (1, 13, 38));
        assert_eq!(ramp_down_percent(5120), 100);
    }

    #[test]
    fn global_never_below_local() {
        assert_eq!(calc_global(5000, 0, 10, 40), 10);
    }
}
