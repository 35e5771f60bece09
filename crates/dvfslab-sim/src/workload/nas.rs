//! nas: the NAS Parallel Benchmarks, OpenMP, class C (docs/workloads-compute.md).
//!
//! `threads` workers run the kernel's outer iterations; each iteration is a number of
//! parallel regions, each ending in a barrier:
//!
//! ```text
//!   for it in 1..I:  for r in 1..R:  cpu(W / (I·R·P) · (1 + ε_p), mem_frac_k);  barrier
//!   ε_p uniform with standard deviation cv_imb (the load imbalance between threads)
//! ```
//!
//! Waiters sleep at the barrier at once (a futex wait, `OMP_WAIT_POLICY=passive`).
//!
//! Metric: Elapsed in seconds (lower is better), the run's makespan, as MMTests parses
//! `time`. `scale_pct` runs that share of class C's work: `round(I · scale)` iterations (at
//! least one) of class-C-sized iterations, so the barrier rhythm stays real; `scale_pct=100`
//! is class C. Shortcomings: libgomp spins up to GOMP_SPINCOUNT before sleeping (and MPI
//! ranks busy-poll), which keeps a waiting CPU busy; a barrier that spins is not expressible
//! yet, so short waits show as idle here. Regions of one kernel are all the same size; LU's
//! wavefront point-to-point synchronisation is approximated by barriers.

use std::rc::Rc;

use super::estimates::nas as est;
use super::{measure, Better, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

/// The kernels by name, in the order of `estimates::nas::KERNELS`.
const KERNEL_CHOICES: &[(&str, f64)] = &[
    ("bt", 0.0),
    ("cg", 1.0),
    ("ep", 2.0),
    ("ft", 3.0),
    ("is", 4.0),
    ("lu", 5.0),
    ("mg", 6.0),
    ("sp", 7.0),
    ("ua", 8.0),
];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "nas",
    description: "NAS Parallel Benchmarks (OpenMP, class C): SPMD iterations with barriers",
    metric: "elapsed",
    unit: "s",
    better: Better::Lower,
    knobs: &[
        Knob::new("kernel", "kernel", 0.0, 0.0, 8.0, "0 bt, 1 cg, 2 ep, 3 ft, 4 is, 5 lu, 6 mg, 7 sp, 8 ua")
            .choices(KERNEL_CHOICES),
        Knob::new("threads", "threads", 0.0, 0.0, 4096.0, "OMP_NUM_THREADS (0 = number of CPUs)").integer(),
        Knob::new("scale_pct", "%", 2.0, 0.001, 100.0, "share of class C's work to run; 100 = class C"),
    ],
    build: |k: &KnobValues| {
        Box::new(Nas {
            kernel: k.get_u64("kernel") as usize,
            threads: k.get_u64("threads") as usize,
            scale: k.get("scale_pct") / 100.0,
        })
    },
};

/// Counter 0: barriers passed by worker 0 (regions done), for the progress of a cut-short run.
const PROGRESS: u16 = 0;

struct Nas {
    kernel: usize,
    threads: usize,
    scale: f64,
}

impl Nas {
    fn kernel(&self) -> &'static est::Kernel {
        &est::KERNELS[self.kernel]
    }
    /// Iterations run, and the work of one region summed over threads.
    fn shape(&self) -> (usize, f64) {
        let k = self.kernel();
        let iters = ((k.iterations as f64 * self.scale).round() as usize).max(1);
        let region = k.work_cycles * self.scale / (iters as f64 * k.regions as f64);
        (iters, region)
    }
}

impl Workload for Nas {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        let p = if self.threads == 0 { plat.ncpus() } else { self.threads };
        let k = self.kernel();
        let (iters, region) = self.shape();
        // Uniform ±a has standard deviation a/√3.
        let share = region / p as f64;
        let spread = share * est::CV_IMB * 3f64.sqrt();
        let work = Op::Run { cycles: Amount::Uniform(share - spread, share + spread), mem_frac: k.mem_frac };
        (0..p)
            .map(|w| {
                // Every region alike: one counted loop over iterations × regions.
                let mut prog = vec![work.clone(), Op::Barrier { id: 0, n: p as u32 }];
                if w == 0 {
                    prog.push(Op::Mark(Mark::Add { counter: PROGRESS, amount: 1 }));
                }
                prog.extend([Op::Repeat { to: 0, times: (iters * k.regions as usize) as u32 }, Op::Exit]);
                TaskSpec::new(format!("{}-{w}", k.name), Rc::from(prog))
            })
            .collect()
    }

    fn default_duration_ns(&self) -> u64 {
        // A cap: the run ends when the workers do.
        3_600_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let (iters, _) = self.shape();
        let total = (iters * self.kernel().regions as usize) as u64;
        measure::metric(&INFO, measure::elapsed_s(stats, PROGRESS as usize, total))
    }
}
