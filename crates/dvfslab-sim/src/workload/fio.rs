//! fio: `ioengine=libaio, direct=1, iodepth=1`, `jobs` jobs, for a fixed time (docs/workloads-compute.md).
//!
//! Each job is a two-state alternation: a short CPU burst, then a sleep in io_getevents
//! (iowait) while the device serves the request; the completion wakes it with the iowait
//! flag, so schedutil's iowait boost applies.
//!
//! ```text
//!   job j: loop { cpu(c_sub); io(device time); cpu(c_irq) }     device: see `storage`
//! ```
//!
//! The completion's IRQ and softirq work is charged to the woken job on its own CPU.
//! Metric: I/O operations per second over the run (op/s, higher is better). MMTests reports
//! fio's `tput` in KB/s: multiply by `bs_kb`; ratios between runs are the same. The run's
//! duration is fio's `runtime` (MMTests uses 15 s; the default here is 0.5 s).
//! Shortcomings: `iodepth` > 1 (several requests in flight per job) needs an asynchronous
//! submit that the task language lacks; completions always run on the submitting CPU
//! (`rq_affinity=2`-like); no `sqpoll` or polled completion.

use std::rc::Rc;

use super::estimates::fio as est;
use super::storage::{self, Access};
use super::{sample, Better, DeviceSpec, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

const RW_CHOICES: &[(&str, f64)] = &[("read", 0.0), ("write", 1.0), ("randread", 2.0), ("randwrite", 3.0)];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "fio",
    description: "fio libaio direct I/O at iodepth 1: jobs alternating CPU bursts and iowait",
    metric: "iops",
    unit: "op/s",
    better: Better::Higher,
    knobs: &[
        Knob::new("rw", "pattern", 2.0, 0.0, 3.0, "0 read, 1 write, 2 randread, 3 randwrite").choices(RW_CHOICES),
        Knob::new("bs_kb", "KiB", 4.0, 1.0, 16384.0, "block size").integer(),
        Knob::new("jobs", "jobs", 1.0, 1.0, 1024.0, "numjobs").integer(),
        storage::knob(0.0),
    ],
    build: |k: &KnobValues| {
        Box::new(Fio {
            rw: k.get_u64("rw"),
            bytes: k.get("bs_kb") * 1024.0,
            jobs: k.get_u64("jobs") as usize,
            device: k.get_u64("device"),
        })
    },
};

/// Requests in one job's repeating pattern (a multiple of the service-time bins).
const PATTERN: usize = 4 * storage::BINS;
/// Counter 0: requests completed.
const DONE: u16 = 0;

struct Fio {
    rw: u64,
    bytes: f64,
    jobs: usize,
    device: u64,
}

impl Fio {
    fn access(&self) -> Access {
        match self.rw {
            0 => Access::SequentialRead,
            1 => Access::Write,
            2 => Access::RandomRead,
            _ => Access::RandomWrite,
        }
    }
}

impl Workload for Fio {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        let device = storage::device(self.device);
        let (access, transfer) = (storage::access_ns(device, self.access()), storage::transfer_ns(device, self.bytes));
        (0..self.jobs)
            .map(|j| {
                let mut prog = Vec::with_capacity(PATTERN * 4 + 1);
                for b in sample::layout(PATTERN, access.len(), 100 + j as u64) {
                    prog.extend([
                        Op::Run { cycles: Amount::Fixed(est::SUBMIT_CYCLES), mem_frac: 0.0 },
                        Op::Io { dev: 0, service_ns: access[b], transfer_ns: transfer },
                        Op::Run { cycles: Amount::Fixed(est::COMPLETE_CYCLES), mem_frac: 0.0 },
                        Op::Mark(Mark::Add { counter: DONE, amount: 1 }),
                    ]);
                }
                prog.push(Op::Jump { to: 0 });
                TaskSpec::new(format!("fio-{j}"), Rc::from(prog))
            })
            .collect()
    }

    fn devices(&self) -> Vec<DeviceSpec> {
        vec![storage::spec(storage::device(self.device))]
    }

    fn default_duration_ns(&self) -> u64 {
        500_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        super::measure::metric(&INFO, super::measure::per_second(stats, DONE))
    }
}
