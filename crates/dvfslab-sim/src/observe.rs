//! Timelines recorded only when asked: one row per change, as columns ready for a DataFrame.

use crate::engine::TimeNs;

#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Order of recording across all kinds, so events at the same nanosecond keep their order.
    pub seq: u64,
    pub freq_seq: Vec<u64>,
    pub idle_seq: Vec<u64>,
    pub switch_seq: Vec<u64>,
    pub wakeup_seq: Vec<u64>,
    pub freq_time_ns: Vec<u64>,
    pub freq_cpu: Vec<u32>,
    pub freq_khz: Vec<u32>,
    pub util_time_ns: Vec<u64>,
    pub util_cpu: Vec<u32>,
    pub util_avg: Vec<u32>,
    pub idle_time_ns: Vec<u64>,
    pub idle_cpu: Vec<u32>,
    pub idle_state: Vec<String>,
    /// Context switches: on `cpu`, `prev` (-1 = idle) stops and `next` (-1 = idle) runs;
    /// `prev_state` is 'R' (preempted), 'S' (slept), 'X' (exited) or 'I' (idle).
    pub switch_time_ns: Vec<u64>,
    pub switch_cpu: Vec<u32>,
    pub switch_prev: Vec<i64>,
    pub switch_prev_state: Vec<char>,
    pub switch_next: Vec<i64>,
    /// Wake-ups: `task` made runnable on `cpu`.
    pub wakeup_time_ns: Vec<u64>,
    pub wakeup_task: Vec<u32>,
    pub wakeup_cpu: Vec<u32>,
    /// powernv global (voltage) P-state changes, by the first CPU of the policy.
    pub global_time_ns: Vec<u64>,
    pub global_cpu: Vec<u32>,
    pub global_khz: Vec<u32>,
    /// Task names by id (pid = id + 1 in traces).
    pub task_names: Vec<String>,
}

impl Timeline {
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    pub fn frequency(&mut self, t: TimeNs, cpu: usize, khz: u32) {
        let seq = self.next_seq();
        self.freq_seq.push(seq);
        self.freq_time_ns.push(t);
        self.freq_cpu.push(cpu as u32);
        self.freq_khz.push(khz);
    }

    pub fn util(&mut self, t: TimeNs, cpu: usize, util: u64) {
        self.util_time_ns.push(t);
        self.util_cpu.push(cpu as u32);
        self.util_avg.push(util as u32);
    }

    pub fn switch(&mut self, t: TimeNs, cpu: usize, prev: Option<usize>, prev_state: char, next: Option<usize>) {
        let seq = self.next_seq();
        self.switch_seq.push(seq);
        self.switch_time_ns.push(t);
        self.switch_cpu.push(cpu as u32);
        self.switch_prev.push(prev.map_or(-1, |p| p as i64));
        self.switch_prev_state.push(prev_state);
        self.switch_next.push(next.map_or(-1, |n| n as i64));
    }

    pub fn global(&mut self, t: TimeNs, cpu: usize, khz: u32) {
        self.global_time_ns.push(t);
        self.global_cpu.push(cpu as u32);
        self.global_khz.push(khz);
    }

    pub fn wakeup(&mut self, t: TimeNs, task: usize, cpu: usize) {
        let seq = self.next_seq();
        self.wakeup_seq.push(seq);
        self.wakeup_time_ns.push(t);
        self.wakeup_task.push(task as u32);
        self.wakeup_cpu.push(cpu as u32);
    }

    pub fn idle(&mut self, t: TimeNs, cpu: usize, state: &str) {
        let seq = self.next_seq();
        self.idle_seq.push(seq);
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

/// A record of a task moved by placement or balancing, kept with `--explain`.
#[derive(Clone, Debug, PartialEq)]
pub struct Migration {
    pub time_ns: TimeNs,
    pub task: usize,
    pub src_cpu: usize,
    pub dst_cpu: usize,
    /// `eas` (find_energy_efficient_cpu), `wakeup` (wake-up placement), `misfit` (tick of the
    /// misfit CPU), `misfit_idle` (pulled by a bigger CPU going idle), `push`, `pull`.
    pub reason: &'static str,
    /// task_util_est (max of util_avg and util_est) when the decision was made.
    pub util: u64,
    /// Whether that util fitted the source CPU (util_fits_cpu > 0 with the task's clamps).
    pub fitted_src: bool,
}
