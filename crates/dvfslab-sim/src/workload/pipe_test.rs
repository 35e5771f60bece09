//! pipe-test: `perf bench sched pipe` with the two tasks pinned to CPUs of two different
//! cores, the token-passing ping-pong of Doug Smythies' tests (docs/workloads-net.md).
//!
//! Task A writes to pipe 1 and reads from pipe 2; task B reads pipe 1 and writes pipe 2, for
//! `loops` round trips. Each write wakes the other task (sync wake-up, but the affinity keeps
//! it on its own CPU), so every hand-over pays a wake-up across cores and, when the other CPU
//! went idle, its idle exit. Optionally each stop does `work_us` of work (at base frequency),
//! the "variable amount of work at each stop" of the ping-pong sweeps. Pipe costs are
//! `estimates::ipc`. With `one_cpu` both tasks share CPU 0 (`taskset -c 0 perf bench sched
//! pipe`): each write wakes the other task on the writer's CPU, and the scheduler's wake-up
//! preemption decides which of the two runs on; `b_work_us` gives B its own work per stop.
//!
//! Metric, as perf reports it: microseconds per loop = elapsed / loops (lower is better). If
//! the run ends first, elapsed / loops completed.

use std::rc::Rc;

use super::estimates::ipc;
use super::{Better, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "pipe-test",
    description: "perf bench sched pipe: two tasks on two cores ping-pong through two pipes",
    metric: "time_per_loop",
    unit: "us",
    better: Better::Lower,
    knobs: &[
        Knob::new("loops", "loops", 10_000.0, 1.0, 100_000.0, "round trips (perf -l)").integer(),
        Knob::new("work_us", "us", 0.0, 0.0, 1e6, "work at each stop, as time at base frequency (Smythies sweeps it)"),
        Knob::new("b_work_us", "us", -1.0, -1.0, 1e6, "B's work at each stop when >= 0 (default: work_us)"),
        Knob::new("one_cpu", "", 0.0, 0.0, 1.0, "1: both tasks on CPU 0, as `taskset -c 0 perf bench sched pipe`")
            .integer(),
    ],
    build: |k: &KnobValues| {
        let b_work_us = k.get("b_work_us");
        Box::new(PipeTest {
            loops: k.get_u64("loops") as u32,
            work_us: k.get("work_us"),
            b_work_us: if b_work_us >= 0.0 { b_work_us } else { k.get("work_us") },
            one_cpu: k.get("one_cpu") == 1.0,
        })
    },
};

/// Latency slot: the whole run of task A.
const TOTAL: u32 = 0;
/// Counter of completed round trips.
const LOOPS: u16 = 0;
const PIPE1: u32 = 0;
const PIPE2: u32 = 1;

struct PipeTest {
    loops: u32,
    /// A's work at each stop (B's too unless `b_work_us` says otherwise), µs at base frequency.
    work_us: f64,
    b_work_us: f64,
    /// Both tasks share CPU 0: each hand-over is a wake-up on the waker's own CPU, where the
    /// scheduler's wake-up preemption decides whether the woken task runs before the waker
    /// reaches its read.
    one_cpu: bool,
}

fn run(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: ipc::MEM_FRAC }
}

/// Two CPUs on different cores: CPU 0 and the first CPU of another core.
fn two_cores(plat: &Platform) -> (usize, usize) {
    let core0 = plat.cpus[0].core;
    let other = (1..plat.ncpus()).find(|&c| plat.cpus[c].core != core0).unwrap_or(if plat.ncpus() > 1 { 1 } else { 0 });
    (0, other)
}

impl Workload for PipeTest {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        let (cpu_a, cpu_b) = if self.one_cpu { (0, 0) } else { two_cores(plat) };
        let cycles_per_us = |cpu: usize| plat.cluster_of_cpu(cpu).frequency.base_khz as f64 / 1000.0;
        let work = self.work_us * cycles_per_us(cpu_a);
        let b_work = self.b_work_us * cycles_per_us(cpu_b);
        let (write, read) = (ipc::PIPE_WRITE_CYCLES, ipc::PIPE_READ_CYCLES);
        let n = self.loops;

        // A: work, write pipe 1, sleep in read of pipe 2; the read finishes in the next burst.
        let a_trip = |first: bool| {
            [
                run(if first { 0.0 } else { read } + work + write),
                Op::Post { ch: PIPE1, sync: true },
                Op::Wait { ch: PIPE2 },
                Op::Mark(Mark::Add { counter: LOOPS, amount: 1 }),
            ]
        };
        let mut a = vec![Op::Mark(Mark::Start(TOTAL))];
        a.extend(a_trip(true));
        if n > 1 {
            let again = a.len();
            a.extend(a_trip(false));
            a.push(Op::Repeat { to: again, times: n - 1 });
        }
        a.extend([run(read), Op::Mark(Mark::End(TOTAL)), Op::Exit]);

        // B: sleep in read of pipe 1, finish the read, work, write pipe 2.
        let b = vec![
            Op::Wait { ch: PIPE1 },
            run(read + b_work + write),
            Op::Post { ch: PIPE2, sync: true },
            Op::Repeat { to: 0, times: n },
            Op::Exit,
        ];

        vec![
            TaskSpec::new("sched-pipe-a", Rc::from(a)).pinned(vec![cpu_a]),
            TaskSpec::new("sched-pipe-b", Rc::from(b)).pinned(vec![cpu_b]),
        ]
    }

    /// A time-out: the run ends when both tasks have exited.
    fn default_duration_ns(&self) -> u64 {
        60_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let value_us = match stats.latencies_ns.get(TOTAL as usize).and_then(|l| l.first()) {
            Some(&ns) => ns as f64 / 1e3 / self.loops as f64,
            None => {
                let done = stats.counters.get(LOOPS as usize).copied().unwrap_or(0).max(1);
                stats.sim_time_ns as f64 / 1e3 / done as f64
            }
        };
        Metric { name: INFO.metric.into(), value: value_us, unit: INFO.unit.into(), better: INFO.better }
    }
}
