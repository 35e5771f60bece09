//! Timelines recorded only when asked: one row per change, as columns ready for a DataFrame.

use crate::engine::TimeNs;

#[derive(Clone, Debug, Default)]
pub struct Timeline {
    pub freq_time_ns: Vec<u64>,
    pub freq_cpu: Vec<u32>,
    pub freq_khz: Vec<u32>,
    pub util_time_ns: Vec<u64>,
    pub util_cpu: Vec<u32>,
    pub util_avg: Vec<u32>,
    pub idle_time_ns: Vec<u64>,
    pub idle_cpu: Vec<u32>,
    pub idle_state: Vec<String>,
}

impl Timeline {
    pub fn frequency(&mut self, t: TimeNs, cpu: usize, khz: u32) {
        self.freq_time_ns.push(t);
        self.freq_cpu.push(cpu as u32);
        self.freq_khz.push(khz);
    }

    pub fn util(&mut self, t: TimeNs, cpu: usize, util: u64) {
        self.util_time_ns.push(t);
        self.util_cpu.push(cpu as u32);
        self.util_avg.push(util as u32);
    }

    pub fn idle(&mut self, t: TimeNs, cpu: usize, state: &str) {
        self.idle_time_ns.push(t);
        self.idle_cpu.push(cpu as u32);
        self.idle_state.push(state.to_string());
    }
}

/// One frequency decision of a governor and what came of it (`--explain`).
#[derive(Clone, Debug)]
pub struct Decision {
    pub time_ns: TimeNs,
    pub policy: usize,
    /// What the governor computed, before the table and the limits.
    pub raw_khz: u32,
    /// The table entry the driver chose within [min_khz, max_khz].
    pub resolved_khz: u32,
    pub min_khz: u32,
    pub max_khz: u32,
    /// What the hardware runs once the transition is done (turbo bins and power limit applied).
    pub hw_khz: u32,
    /// The governor's inputs: utilisation and its parts, headroom, boosts, rate-limit state...
    pub inputs: Vec<(&'static str, f64)>,
}
