//! step-load: a step from idle to 100% on one CPU; how long until the top frequency
//! (campaign intel-pstate-load-based: "a step from idle to 100% on one CPU (time to
//! reach the top P-state)"; Google's schedutil test allows 70 ms).
//!
//! The machine idles for `idle_ms`, then one thread pinned to the last CPU (a big core on
//! big.LITTLE) runs without a break, in chunks that take 100 µs at the CPU's top frequency.
//!
//! Metric: t_up in ms (lower is better): the time from the step to the start of the first
//! chunk that ran at the top frequency (within 1%). RunStats has no frequency, so it is read
//! from the chunk durations (latency slot 0): a chunk at the top frequency lasts 100 µs,
//! slower ones longer, so the resolution is one chunk. A run that never reaches the top
//! (powersave) reports the whole step, a lower bound. Shortcomings: t_down and the energy of
//! the ramp are not reported; "top" is the cluster's `max_khz` (one active core's turbo).

use std::rc::Rc;

use super::{measure, Better, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "step-load",
    description: "idle, then 100% on one pinned CPU: time to reach the top frequency",
    metric: "time_to_max",
    unit: "ms",
    better: Better::Lower,
    knobs: &[
        Knob::new("idle_ms", "ms", 500.0, 0.0, 1e6, "idle time before the step"),
        Knob::new("busy_ms", "ms", 500.0, 1.0, 1e6, "length of the busy step (sets the default duration)"),
    ],
    build: |k: &KnobValues| Box::new(StepLoad { idle_ms: k.get("idle_ms"), busy_ms: k.get("busy_ms") }),
};

/// A chunk's duration at the top frequency.
const CHUNK_NS: f64 = 100_000.0;
/// A chunk within this share of CHUNK_NS ran at the top frequency.
const TOLERANCE: f64 = 0.01;
/// Latency slot 0: chunk durations.
const CHUNK: u32 = 0;

struct StepLoad {
    idle_ms: f64,
    busy_ms: f64,
}

impl Workload for StepLoad {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        let cpu = plat.ncpus() - 1;
        let cycles = CHUNK_NS * measure::top_cycles_per_ns(plat, cpu);
        let program: Rc<[Op]> = Rc::from(vec![
            Op::Mark(Mark::Start(CHUNK)),
            Op::Run { cycles: Amount::Fixed(cycles), mem_frac: 0.0 },
            Op::Mark(Mark::End(CHUNK)),
            Op::Jump { to: 0 },
        ]);
        vec![TaskSpec::new("step", program).pinned(vec![cpu]).start_at((self.idle_ms * 1e6) as u64)]
    }

    fn default_duration_ns(&self) -> u64 {
        ((self.idle_ms + self.busy_ms) * 1e6) as u64
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let chunks = stats.latencies_ns.get(CHUNK as usize).map(Vec::as_slice).unwrap_or(&[]);
        let at_top = |&d: &u64| (d as f64) <= CHUNK_NS * (1.0 + TOLERANCE);
        let before = chunks.iter().position(at_top).unwrap_or(chunks.len());
        let t_up_ns: u64 = chunks[..before].iter().sum();
        measure::metric(&INFO, t_up_ns as f64 * 1e-6)
    }
}
