//! specpower: a SPECpower_ssj-like graduated load level, fixed time (\[UNVERIFIED\];
//! campaign intel-pstate-load-based: "a fixed-time 20% load in the style of SPECpower").
//!
//! One worker per logical CPU. The machine's full throughput X_max is computed for the
//! platform (every CPU at its top frequency, as SPECpower's calibration phase measures it);
//! at `load_pct` each worker starts transactions at Poisson arrivals (exponential gaps,
//! binned, see `sample`) so that the machine runs `load_pct`% of X_max. Each transaction is
//! a fixed work packet.
//!
//! ```text
//!   worker: loop { sleep(Exp(mean = 1/λ − t_tx)); cpu(W_tx) }     λ = load · X_max / NCPU
//! ```
//!
//! The published comparison is the run's energy (joules) at a fixed time. A workload metric
//! only sees what the tasks recorded, so the metric here is a proxy: transactions completed
//! per second (tx/s, higher is better); it falls below the target when the governor leaves
//! transactions slow. Use the run's `energy_j` for the published figure. Shortcomings: the
//! gap is counted from the end of the previous transaction (closed loop), so the rate equals
//! the target only at top frequency; X_max ignores SMT sharing and turbo bins.

use std::rc::Rc;

use super::estimates::specpower as est;
use super::{measure, sample, Better, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "specpower",
    description: "SPECpower-like load level: Poisson transactions on every CPU, fixed time",
    metric: "tx_rate",
    unit: "tx/s",
    better: Better::Higher,
    knobs: &[Knob::new("load_pct", "%", 20.0, 1.0, 100.0, "target load, percent of the calibrated maximum")],
    build: |k: &KnobValues| Box::new(Specpower { load: k.get("load_pct") / 100.0 }),
};

/// Gaps in one worker's repeating pattern.
const GAPS: usize = 32;
/// Counter 0: transactions completed.
const DONE: u16 = 0;

struct Specpower {
    load: f64,
}

/// Seconds a transaction takes on `cpu` alone at its top frequency.
fn tx_seconds(plat: &Platform, cpu: usize) -> f64 {
    let cl = plat.cluster_of_cpu(cpu);
    let (f, fb) = (cl.frequency.max_khz as f64 * 1e-6, cl.frequency.base_khz as f64 * 1e-6);
    let uarch = cl.capacity_dmips_mhz as f64 / 1024.0;
    est::TX_CYCLES * ((1.0 - est::MEM_FRAC) / f + est::MEM_FRAC / fb) / uarch * 1e-9
}

impl Workload for Specpower {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        let n = plat.ncpus();
        let t_tx: Vec<f64> = (0..n).map(|c| tx_seconds(plat, c)).collect();
        let x_max: f64 = t_tx.iter().map(|t| 1.0 / t).sum();
        let per_worker = self.load * x_max / n as f64;
        let mean_tx = t_tx.iter().sum::<f64>() / n as f64;
        let gap_ns = ((1.0 / per_worker - mean_tx) * 1e9).max(0.0);
        let gaps = sample::exponential(GAPS, gap_ns);
        (0..n)
            .map(|w| {
                let mut p = Vec::with_capacity(GAPS * 3 + 1);
                for b in sample::layout(GAPS, GAPS, 200 + w as u64) {
                    if gap_ns > 0.0 {
                        p.push(Op::Sleep { ns: gaps[b] });
                    }
                    p.extend([
                        Op::Run { cycles: Amount::Fixed(est::TX_CYCLES), mem_frac: est::MEM_FRAC },
                        Op::Mark(Mark::Add { counter: DONE, amount: 1 }),
                    ]);
                }
                p.push(Op::Jump { to: 0 });
                TaskSpec::new(format!("ssj-{w}"), Rc::from(p))
            })
            .collect()
    }

    fn default_duration_ns(&self) -> u64 {
        // SPECpower measures 240 s per load level; 1 s here.
        1_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        measure::metric(&INFO, measure::per_second(stats, DONE))
    }
}
