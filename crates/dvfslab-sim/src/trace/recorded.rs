//! A recording as a governor's inputs: [`RecordedPolicy`] is the [`PolicyCtx`] of an open-loop
//! replay (`super::replay`), its values those the trace showed last.

use crate::governor::core::Policy;
use crate::governor::{CpuSignals, PolicyCtx, PolicyFacts, Relation};
use crate::machine::Machine;

/// The recorded state the governors read, as of the event being replayed.
pub(super) struct Recorded {
    pub(super) now_ns: u64,
    pub(super) util: Vec<u64>,
    pub(super) util_est: Vec<u64>,
    pub(super) runnable: Vec<u64>,
    pub(super) rt_running: Vec<bool>,
    pub(super) task_running: Vec<bool>,
    pub(super) idle_calls: Vec<u64>,
    /// Busy time so far and since when the CPU has been busy (None while idle).
    pub(super) busy_ns: Vec<u64>,
    pub(super) busy_since: Vec<Option<u64>>,
    /// APERF / MPERF as the recorded busy time and frequency imply (no trace carries them).
    pub(super) aperf: Vec<f64>,
    pub(super) mperf: Vec<f64>,
    pub(super) counted_to: Vec<u64>,
    pub(super) cur_khz: Vec<u32>,
    pub(super) timers: Vec<Option<u64>>,
    pub(super) pending_inputs: Vec<(&'static str, f64)>,
    pub(super) decisions: Vec<ModelDecision>,
    /// An error a governor stopped the replay with.
    pub(super) failure: Option<crate::error::SimError>,
}

pub(super) struct ModelDecision {
    pub(super) time_ns: u64,
    pub(super) policy: usize,
    pub(super) khz: u32,
    pub(super) inputs: Vec<(&'static str, f64)>,
}

/// One policy of the replay, as its governor sees it.
pub(super) struct RecordedPolicy<'a> {
    pub(super) machine: &'a Machine,
    /// Every policy's limits.
    pub(super) limits: &'a [Policy],
    pub(super) rec: &'a mut Recorded,
    pub(super) policy: usize,
}

impl RecordedPolicy<'_> {
    fn base_khz(&self, cpu: usize) -> u64 {
        self.machine.plat.cluster_of_cpu(cpu).frequency.base_khz as u64
    }
}

impl PolicyCtx for RecordedPolicy<'_> {
    fn facts(&self) -> PolicyFacts<'_> {
        let (machine, policy) = (self.machine, self.policy);
        PolicyFacts { machine, policy, limits: &self.limits[policy], invariant: machine.invariant }
    }
    fn now_ns(&self) -> u64 {
        self.rec.now_ns
    }
    fn cur_khz(&self) -> u32 {
        self.rec.cur_khz[self.policy]
    }
    fn cpu_signals(&self, cpu: usize) -> CpuSignals {
        CpuSignals {
            util_avg: self.rec.util[cpu],
            util_est: self.rec.util_est[cpu],
            runnable_avg: self.rec.runnable[cpu],
            cap_orig: self.cap_orig(cpu),
            rt_runnable: self.rec.rt_running[cpu],
            // A recording carries no uclamp.
            uclamp: None,
            idle_calls: self.rec.idle_calls[cpu],
        }
    }
    fn cpu_nr_running(&self, cpu: usize) -> u64 {
        self.rec.task_running[cpu] as u64
    }
    fn cpu_busy_ns(&self, cpu: usize) -> u64 {
        self.rec.busy_ns[cpu] + self.rec.busy_since[cpu].map_or(0, |since| self.rec.now_ns - since)
    }
    fn cpu_iowait_ns(&self, _cpu: usize) -> u64 {
        0
    }
    fn cpu_counters(&mut self, cpu: usize) -> (u64, u64, u64) {
        self.rec.count_cycles(cpu, self.base_khz(cpu), self.machine.plat.cpus[cpu].policy);
        let tsc = self.rec.now_ns as u128 * self.base_khz(cpu) as u128 / 1_000_000;
        (self.rec.aperf[cpu] as u64, self.rec.mperf[cpu] as u64, tsc as u64)
    }
    fn explaining(&self) -> bool {
        true
    }
    fn explain(&mut self, inputs: &[(&'static str, f64)]) {
        self.rec.pending_inputs.clear();
        self.rec.pending_inputs.extend_from_slice(inputs);
    }
    fn explain_more(&mut self, inputs: &[(&'static str, f64)]) {
        self.rec.pending_inputs.extend_from_slice(inputs);
    }
    fn request_khz(&mut self, khz: u32, relation: Relation) {
        let (_, resolved) = self.facts().target(khz, relation);
        let inputs = std::mem::take(&mut self.rec.pending_inputs);
        self.rec.decisions.push(ModelDecision { time_ns: self.rec.now_ns, policy: self.policy, khz: resolved, inputs });
    }
    fn fail(&mut self, error: crate::error::SimError) {
        self.rec.failure.get_or_insert(error);
    }
    fn arm_timer(&mut self, delay_ns: u64) {
        self.rec.timers[self.policy] = Some(self.rec.now_ns + delay_ns);
    }
}

impl Recorded {
    /// Bring the implied APERF/MPERF of `cpu` up to now: busy time at the recorded frequency.
    pub(super) fn count_cycles(&mut self, cpu: usize, base_khz: u64, policy: usize) {
        let from = self.counted_to[cpu].max(self.busy_since[cpu].unwrap_or(self.now_ns));
        if self.busy_since[cpu].is_some() && self.now_ns > from {
            let busy = (self.now_ns - from) as f64;
            self.aperf[cpu] += busy * self.cur_khz[policy] as f64 / 1e6;
            self.mperf[cpu] += busy * base_khz as f64 / 1e6;
        }
        self.counted_to[cpu] = self.now_ns;
    }
}
