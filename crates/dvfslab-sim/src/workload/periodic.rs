//! periodic: N threads that each run a fixed amount of work every period.
//!
//! The work is `run_us` of execution at the cluster's base frequency (it stretches at lower
//! frequencies, like rt-app's `run`), optionally jittered uniformly by ±`jitter_pct`, released
//! by a timer every `period_us` on a fixed grid from the thread's start (an absolute timer, as
//! clock_nanosleep with TIMER_ABSTIME or a periodic timerfd gives): an activation that overruns
//! does not sleep, the next starts at once and the thread runs back to back until it has caught
//! up. The metric is the mean response time (release to completion)
//! in µs, as rt-app's per-activation log gives it; it exceeds the period when activations
//! overrun. (Slack, period minus response, can turn negative, which the harmonic means of
//! higher-is-better tables cannot take.)

use super::{measure, Better, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op, TimerMode};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "periodic",
    description: "N threads running run_us of work every period_us (absolute timer: a late thread runs back to back)",
    metric: "mean_response",
    unit: "us",
    better: Better::Lower,
    knobs: &[
        Knob::new("threads", "threads", 1.0, 1.0, 65536.0, "number of threads").integer(),
        Knob::new("run_us", "us", 2000.0, 1.0, 1e7, "work per period, as time at base frequency"),
        Knob::new("period_us", "us", 16000.0, 10.0, 1e8, "release period"),
        Knob::new("jitter_pct", "%", 0.0, 0.0, 100.0, "uniform ± variation of the work per activation"),
        Knob::new("mem_frac", "fraction", 0.0, 0.0, 0.95, "share of time at base frequency stalled on memory"),
        Knob::new("offset_us", "us", 0.0, 0.0, 1e8, "phase step between consecutive threads' first release"),
    ],
    build: |k: &KnobValues| {
        Box::new(Periodic {
            threads: k.get_u64("threads") as usize,
            run_us: k.get("run_us"),
            period_ns: (k.get("period_us") * 1000.0) as u64,
            jitter_pct: k.get("jitter_pct"),
            mem_frac: k.get("mem_frac"),
            offset_ns: (k.get("offset_us") * 1000.0) as u64,
        })
    },
};

struct Periodic {
    threads: usize,
    run_us: f64,
    period_ns: u64,
    jitter_pct: f64,
    mem_frac: f64,
    offset_ns: u64,
}

impl Workload for Periodic {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        // Work is counted in cycles at base frequency of the first cluster.
        let base_khz = plat.cluster(0).frequency.base_khz as f64;
        let cycles = self.run_us * base_khz / 1000.0;
        let program: std::rc::Rc<[Op]> = vec![
            Op::Run { cycles: Amount::jittered(cycles, self.jitter_pct), mem_frac: self.mem_frac },
            Op::Mark(Mark::ActivationDone),
            Op::Timer { period_ns: self.period_ns, mode: TimerMode::Absolute },
            Op::Jump { to: 0 },
        ]
        .into();
        (0..self.threads)
            .map(|i| TaskSpec::new(format!("periodic-{i}"), program.clone()).start_at(i as u64 * self.offset_ns))
            .collect()
    }

    fn default_duration_ns(&self) -> u64 {
        10_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let n = stats.responses_ns.len();
        let mean_response_ns =
            if n == 0 { 0.0 } else { stats.responses_ns.iter().map(|&r| r as f64).sum::<f64>() / n as f64 };
        measure::metric(&INFO, mean_response_ns / 1000.0)
    }
}
