//! cpu-bound: N threads that never sleep.
//!
//! Each thread runs its work in chunks forever; the metric is the work completed per second
//! over the run (Gcycles/s, counted at base frequency), so it measures delivered throughput
//! and grows with frequency by `1 - mem_frac` of the speed-up.

use super::{measure, Better, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "cpu-bound",
    description: "N always-running threads; throughput of work completed",
    metric: "work_rate",
    unit: "Gcycles/s",
    better: Better::Higher,
    knobs: &[
        Knob::new("threads", "threads", 1.0, 1.0, 65536.0, "number of threads").integer(),
        Knob::new("mem_frac", "fraction", 0.0, 0.0, 0.95, "share of time at base frequency stalled on memory"),
    ],
    build: |k: &KnobValues| Box::new(CpuBound { threads: k.get_u64("threads") as usize, mem_frac: k.get("mem_frac") }),
};

/// Work per Run operation; the thread loops, so only the granularity of accounting depends on it.
const CHUNK_CYCLES: f64 = 1e9;

struct CpuBound {
    threads: usize,
    mem_frac: f64,
}

impl Workload for CpuBound {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        let program: std::rc::Rc<[Op]> =
            vec![Op::Run { cycles: Amount::Fixed(CHUNK_CYCLES), mem_frac: self.mem_frac }, Op::Jump { to: 0 }].into();
        (0..self.threads).map(|i| TaskSpec::new(format!("cpu-bound-{i}"), program.clone())).collect()
    }

    fn default_duration_ns(&self) -> u64 {
        10_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let secs = stats.sim_time_ns as f64 / 1e9;
        measure::metric(&INFO, if secs > 0.0 { stats.work_done / 1e9 / secs } else { 0.0 })
    }
}
