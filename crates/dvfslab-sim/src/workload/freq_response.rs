//! freq-response: Doug Smythies' fixed-work-packet periodic test ("consume";
//! campaign intel-pstate-load-based: "the frequency response to a fixed work packet at 75 Hz
//! work/sleep over a range of loads").
//!
//! One thread pinned to a CPU (the last one: a big core on big.LITTLE) runs a fixed work
//! packet every period, released by a timer on that CPU. The packet is `load_pct`% of the
//! period at the CPU's top frequency, so the busy share is the load when the CPU runs flat
//! out and grows as the governor picks lower frequencies. A packet that overruns its period
//! is followed at once by the next one (the timer has already expired), as rt-app does.
//!
//! ```text
//!   timer:    every 1/hz: release a packet             (a task posting a token, same CPU)
//!   consume:  loop { wait for a release; cpu(W = load · period · f_top) }
//! ```
//!
//! Metric: the mean busy frequency (MHz), one point of the frequency-vs-load curve per run
//! (sweep `load_pct` for the curve). RunStats has no frequency, so it is computed from the
//! time each packet ran (latency slot 0, from the wake-up to the end of the work): with `E`
//! the packet's cycles at the CPU's speed per GHz, `f = n·E / Σ d_i` — work done over busy
//! time, as turbostat's Bzy_MHz (APERF/MPERF over C0 time). `d_i` also holds the idle-exit
//! latency, so the figure reads slightly low when the CPU sleeps deeply. The first 0.5 s of
//! packets are dropped as warm-up. The summary's `per_cpu[].avg_freq_khz` of the pinned CPU
//! is the exact turbostat figure. "Higher" is a convention: the curve is a characterisation.
//! Shortcomings: one load level per run (Doug ramps the load up and down within a run to
//! show hysteresis); overruns are not reported.

use std::rc::Rc;

use super::{measure, Better, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "freq-response",
    description: "fixed work packet per timer period on one pinned CPU: mean busy frequency at a load",
    metric: "busy_freq",
    unit: "MHz",
    better: Better::Higher,
    knobs: &[
        Knob::new("hz", "Hz", 75.0, 1.0, 2000.0, "work/sleep frequency (Doug: 73, 113, 211, 347, 401)"),
        Knob::new("load_pct", "%", 50.0, 1.0, 100.0, "work per period, percent of the period at top frequency"),
    ],
    build: |k: &KnobValues| Box::new(FreqResponse { hz: k.get("hz"), load: k.get("load_pct") / 100.0 }),
};

/// Packets released before this time are warm-up.
const WARMUP_NS: f64 = 0.5e9;
/// Counter 1: the packet's cycles per GHz of the pinned CPU (its duration in ns at 1 GHz).
const PACKET: u16 = 1;
/// Latency slot 0: how long each packet ran. Channel 0: releases.
const RUN: u32 = 0;
const RELEASE_CH: u32 = 0;

struct FreqResponse {
    hz: f64,
    load: f64,
}

impl FreqResponse {
    fn period_ns(&self) -> u64 {
        ((1e9 / self.hz).round() as u64).max(1)
    }
}

impl Workload for FreqResponse {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        let cpu = plat.ncpus() - 1;
        let cycles = self.load * self.period_ns() as f64 * measure::top_cycles_per_ns(plat, cpu);
        let uarch = plat.cluster_of_cpu(cpu).capacity_dmips_mhz as f64 / 1024.0;
        let consume: Rc<[Op]> = Rc::from(vec![
            Op::Mark(Mark::Add { counter: PACKET, amount: (cycles / uarch).round() as u64 }),
            Op::Wait { ch: RELEASE_CH },
            Op::Mark(Mark::Start(RUN)),
            Op::Run { cycles: Amount::Fixed(cycles), mem_frac: 0.0 },
            Op::Mark(Mark::End(RUN)),
            Op::Jump { to: 1 },
        ]);
        let timer: Rc<[Op]> = Rc::from(vec![
            Op::Post { ch: RELEASE_CH, sync: false },
            Op::WaitPeriod { period_ns: self.period_ns() },
            Op::Jump { to: 0 },
        ]);
        vec![TaskSpec::new("consume", consume).pinned(vec![cpu]), TaskSpec::new("timer", timer).pinned(vec![cpu])]
    }

    fn default_duration_ns(&self) -> u64 {
        2_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let per_ghz = stats.counters.get(PACKET as usize).copied().unwrap_or(0) as f64;
        let runs = stats.latencies_ns.get(RUN as usize).map(Vec::as_slice).unwrap_or(&[]);
        let skip = ((WARMUP_NS / self.period_ns() as f64) as usize).min(runs.len().saturating_sub(1));
        let kept = &runs[skip..];
        let busy_ns: u64 = kept.iter().sum();
        let mhz = if busy_ns > 0 { per_ghz * kept.len() as f64 / busy_ns as f64 * 1e3 } else { 0.0 };
        measure::metric(&INFO, mhz)
    }
}
