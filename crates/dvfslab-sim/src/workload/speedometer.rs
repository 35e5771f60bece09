//! speedometer: Speedometer 2 in Chrome on a phone (campaign margins-pixel6).
//!
//! The renderer main thread (CrRendererMain) runs the benchmark's subtests: bursts of
//! JavaScript, style and layout separated by short async gaps (timers,
//! requestAnimationFrame). The compositor draws every few bursts and a thread-pool helper
//! wakes once per subtest. Performance is single-thread speed over bursts: how fast
//! utilisation ramps after a gap, where the thread runs, and whether the frequency survives
//! the gaps.
//!
//! ```text
//!   main: per iteration: 48 subtests × { 8 × cpu(W_js ~ lognormal); wake compositor every 4;
//!                                        wake helper; sleep(U(0, 4 ms)) }
//!   compositor: cpu(0.3 ms) per wake       helper: cpu(0.2 ms) per wake
//! ```
//!
//! Work is given as time on the fastest core at its top frequency. `placement=0` keeps the
//! main and compositor threads on the fastest cluster (standing in for what EAS and the top-app uclamp.min
//! achieve on Android), `1` leaves placement to the scheduler (EAS and misfit migration where
//! the platform and kernel have them). `uclamp_min` sets their uclamp.min request, which
//! schedutil and placement honour as far as the core implements uclamp.
//!
//! Metric: the score in runs per minute (higher is better): 60 / the mean iteration time in
//! seconds. Each iteration is timed (latency slot 0). `iterations` sets the run's length
//! (the campaign averages 10 runs). Shortcomings: one renderer thread with two helpers, no
//! GPU process or surfaceflinger, per-suite aggregation of Speedometer 2 is a plain mean.

use std::rc::Rc;

use super::estimates::speedometer as est;
use super::{measure, sample, Better, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "speedometer",
    description: "Speedometer 2: renderer main-thread bursts with async gaps; score in runs/min",
    metric: "score",
    unit: "runs/min",
    better: Better::Higher,
    knobs: &[
        Knob::new("iterations", "iterations", 3.0, 1.0, 1000.0, "benchmark iterations").integer(),
        Knob::new("uclamp_min", "util", 0.0, 0.0, 1024.0, "uclamp.min of the main and compositor threads (0 = unset)")
            .integer(),
        Knob::new("placement", "choice", 0.0, 0.0, 1.0, "0 fastest cluster (EAS-like), 1 any CPU").integer(),
        est::BURST_MS,
    ],
    build: |k: &KnobValues| {
        Box::new(Speedometer {
            iterations: k.get_u64("iterations") as usize,
            uclamp_min: k.get_u64("uclamp_min") as u32,
            anywhere: k.get_u64("placement") == 1,
            burst_s: k.get(est::BURST_MS.name) * 1e-3,
        })
    },
};

/// Bins of the burst distribution.
const BINS: usize = 16;
/// Channels: compositor and helper wake-ups.
const COMPOSITOR_CH: u32 = 0;
const HELPER_CH: u32 = 1;
/// Latency slot 0: iteration times.
const ITERATION: u32 = 0;

struct Speedometer {
    iterations: usize,
    uclamp_min: u32,
    anywhere: bool,
    /// Median main-thread burst (s on the fastest core at its top frequency).
    burst_s: f64,
}

fn run(cycles: Amount) -> Op {
    Op::Run { cycles, mem_frac: 0.0 }
}

impl Workload for Speedometer {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        let fastest = measure::fastest_cpus(plat);
        let speed = measure::top_cycles_per_ns(plat, fastest[0]);
        let bursts = sample::lognormal(BINS, self.burst_s * 1e9 * speed, est::BURST_SIGMA_LOG);
        let per_iteration = est::SUBTESTS * est::BURSTS_PER_SUBTEST;
        let mut main = Vec::new();
        let mut draws = 0;
        for it in 0..self.iterations {
            main.push(Op::Mark(Mark::Start(ITERATION)));
            let layout = sample::layout(per_iteration, BINS, 300 + it as u64);
            for (i, b) in layout.into_iter().enumerate() {
                main.push(run(bursts[b]));
                if (i + 1) % est::COMPOSITOR_EVERY == 0 {
                    main.push(Op::Post { ch: COMPOSITOR_CH, sync: false });
                    draws += 1;
                }
                if (i + 1) % est::BURSTS_PER_SUBTEST == 0 {
                    main.extend([
                        Op::Post { ch: HELPER_CH, sync: false },
                        Op::Sleep { ns: Amount::Uniform(est::GAP_NS.0, est::GAP_NS.1) },
                    ]);
                }
            }
            main.push(Op::Mark(Mark::End(ITERATION)));
        }
        main.push(Op::Exit);
        let helper_wakes = self.iterations * est::SUBTESTS;
        let worker = |ch: u32, seconds: f64, wakes: usize| {
            let mut p = Vec::with_capacity(wakes * 2 + 1);
            for _ in 0..wakes {
                p.extend([Op::Wait { ch }, run(Amount::Fixed(seconds * 1e9 * speed))]);
            }
            p.push(Op::Exit);
            Rc::from(p)
        };
        let foreground = |t: TaskSpec| {
            let t = if self.anywhere { t } else { t.pinned(fastest.clone()) };
            if self.uclamp_min > 0 {
                t.uclamp(Some(self.uclamp_min), None)
            } else {
                t
            }
        };
        vec![
            foreground(TaskSpec::new("CrRendererMain", Rc::from(main))),
            foreground(TaskSpec::new("Compositor", worker(COMPOSITOR_CH, est::COMPOSITOR_S, draws))),
            TaskSpec::new("ThreadPoolForeg", worker(HELPER_CH, est::HELPER_S, helper_wakes)),
        ]
    }

    fn default_duration_ns(&self) -> u64 {
        // A cap: the run ends after the last iteration.
        3_600_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let times = stats.latencies_ns.get(ITERATION as usize).map(Vec::as_slice).unwrap_or(&[]);
        let score = if times.is_empty() {
            0.0
        } else {
            let mean_s = times.iter().sum::<u64>() as f64 / times.len() as f64 * 1e-9;
            60.0 / mean_s
        };
        measure::metric(&INFO, score)
    }
}
