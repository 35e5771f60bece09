//! rt-app's per-phase log, rebuilt from the marks a run recorded, and its headline.
//!
//! Per phase of each task (all instances together), over the iterations that completed:
//!
//! ```text
//! period_us  = mean(iteration duration)                     rt-app `period`
//! run_us     = Σ over the phase's run/runtime events of       rt-app `run` (wall time, so it
//!              their mean duration                          includes preemption)
//! slack_us   = P_eff / timers − mean(busy)                  rt-app `slack` (per timer; × timers
//!                                                           with cumulative_slack), negative
//!                                                           when activations are late
//!   busy     = time from the previous timer release (or the start) to this timer
//!   P_eff    = the phase's timer periods, a shared timer's times its users
//! wu_lat_us  = mean wake-up latency after a timer, 0 for a release already past (rt-app's `wu_lat`)
//! ```
//!
//! The headline is the **run stretch**: the time all `run` and `runtime` events took divided by
//! the time they take at calibration speed (Σ rt-app `run` / Σ `c_duration`). 1.0 means every
//! run event executed as fast as on the calibration CPU at its maximum frequency, unpreempted;
//! 1.25 means 25 % longer. Lower is better. For the cpufreq governor-efficiency recipe (one
//! `run` phase), the run phase's duration is `run_stretch × c_duration`, so the recipe's
//! efficiency is `(s_powersave − s_gov) / (s_powersave − s_performance)`.

use super::lower::{Layout, SlotKind};
use crate::workload::RunStats;

/// One row of the per-phase log.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseFigures {
    pub task: String,
    pub phase: String,
    /// Completed iterations, over all instances of the task.
    pub iterations: usize,
    pub c_duration_us: u64,
    pub c_period_us: u64,
    /// Work per iteration in thousands of calibration loops (integer calibration only).
    pub perf: Option<f64>,
    pub period_us: f64,
    pub run_us: f64,
    /// Phases with a timer only.
    pub slack_us: Option<f64>,
}

/// The whole log.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub phases: Vec<PhaseFigures>,
    /// Σ measured run time / Σ run time at calibration speed; 0 when no run event completed.
    pub run_stretch: f64,
    /// Mean wake-up latency after timers (µs), 0 without timers.
    pub wu_lat_us: f64,
}

fn samples(stats: &RunStats, slot: usize) -> &[u64] {
    stats.latencies_ns.get(slot).map_or(&[], Vec::as_slice)
}

fn mean_us(xs: &[u64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<u64>() as f64 / xs.len() as f64 / 1000.0
    }
}

pub fn summarise(layout: &Layout, stats: &RunStats, cumulative_slack: bool) -> Summary {
    let wu_lat_us = mean_us(&stats.responses_ns);
    let (mut run_ns, mut ref_ns) = (0.0, 0.0);
    let mut phases: Vec<PhaseFigures> = Vec::with_capacity(layout.phases.len());
    let mut run_per_phase = vec![0.0; layout.phases.len()];
    let mut busy_per_phase = vec![(0.0, 0usize); layout.phases.len()];
    for (slot, s) in layout.slots.iter().enumerate() {
        let xs = samples(stats, slot);
        match s.kind {
            SlotKind::Run { ref_ns: r } => {
                run_ns += xs.iter().sum::<u64>() as f64;
                ref_ns += r * xs.len() as f64;
                // Per event, so that a last iteration cut by the end of the run counts once.
                run_per_phase[s.phase] += mean_us(xs);
            }
            SlotKind::TimerBusy => busy_per_phase[s.phase] = (mean_us(xs), xs.len()),
            SlotKind::Period => {}
        }
    }
    for (i, info) in layout.phases.iter().enumerate() {
        let periods = samples(stats, info.period_slot as usize);
        let n = periods.len();
        let slack_us = (info.timers > 0 && busy_per_phase[i].1 > 0).then(|| {
            // rt-app's slack is the next release minus now (src/rt-app.c, run_event), and the
            // next release is the previous one plus the period: period minus time since release.
            let per_timer = info.c_period_eff_us as f64 / info.timers as f64 - busy_per_phase[i].0;
            if cumulative_slack {
                per_timer * info.timers as f64
            } else {
                per_timer
            }
        });
        phases.push(PhaseFigures {
            task: info.task.clone(),
            phase: info.phase.clone(),
            iterations: n,
            c_duration_us: info.c_duration_us,
            c_period_us: info.c_period_us,
            perf: info.perf,
            period_us: mean_us(periods),
            run_us: run_per_phase[i],
            slack_us,
        });
    }
    Summary { phases, run_stretch: if ref_ns > 0.0 { run_ns / ref_ns } else { 0.0 }, wu_lat_us }
}
