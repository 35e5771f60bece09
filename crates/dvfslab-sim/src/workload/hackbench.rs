//! hackbench (`perf bench sched messaging`): groups of 20 senders and 20 receivers spraying
//! 100-byte messages over pipes or unix sockets (`perf bench sched messaging`; docs/workloads-net.md).
//!
//! The parent forks (or creates threads for) each group's receivers, then its senders; each
//! worker reports ready and waits for the parent's GO, which wakes all 40·G at once. Every
//! sender then writes `loops` × 20 messages, one to each receiver of its group in turn, and
//! every receiver reads 20 · `loops` from its own pipe or socket, which all its group's senders
//! write to; each write wakes the reader if it sleeps (sync wake-up), and a sender blocks while
//! that reader's pipe or socket is full. A reader whose buffer holds messages reads on without
//! sleeping. The parent reaps all workers.
//!
//! Metric, as perf reports it: "Total time" in seconds from GO to the last worker reaped
//! (lower is better). If the run ends first, the value is the run's length.

use std::rc::Rc;

use super::estimates::{ipc, kernel};
use super::{measure, Better, Metric, Operations, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "hackbench",
    description: "perf bench sched messaging: groups of 20 senders x 20 receivers (fixed work)",
    metric: "time",
    unit: "s",
    better: Better::Lower,
    knobs: &[
        Knob::new("groups", "groups", 1.0, 1.0, 296.0, "groups of 20 senders and 20 receivers (-g; MMTests' cap 296)")
            .integer(),
        Knob::new("pipes", "bool", 0.0, 0.0, 1.0, "1 = pipes (--pipe), 0 = unix stream sockets").integer(),
        Knob::new("threads", "bool", 0.0, 0.0, 1.0, "1 = threads (--thread), 0 = processes").integer(),
        Knob::new("loops", "loops", 100.0, 1.0, 10_000.0, "messages per sender to each receiver (-l; MMTests 100)")
            .integer(),
    ],
    build: |k: &KnobValues| {
        Box::new(Hackbench {
            groups: k.get_u64("groups") as u32,
            pipes: k.get_u64("pipes") != 0,
            threads: k.get_u64("threads") != 0,
            loops: k.get_u64("loops") as u32,
        })
    },
};

/// Senders and receivers per group (`num_fds`).
const FDS: u32 = 20;
/// Latency slot: GO to the last worker reaped.
const TOTAL: u32 = 0;
/// Counter of messages received.
const MESSAGES: u16 = 0;
/// Channels: workers report ready, and exited (the parent's wait4 / pthread_join).
const READY: u32 = 0;
const EXITED: u32 = 1;
const GO: u32 = 0;

struct Hackbench {
    groups: u32,
    pipes: bool,
    threads: bool,
    loops: u32,
}

fn run(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: ipc::MEM_FRAC }
}

impl Hackbench {
    fn workers(&self) -> u32 {
        2 * FDS * self.groups
    }
    /// Data and free-space channels of receiver `r` of group `g`: its pipe or socket.
    fn channels(g: u32, r: u32) -> (u32, u32) {
        let fd = g * FDS + r;
        (2 + 2 * fd, 3 + 2 * fd)
    }
    /// Index of group `g`'s senders' program in [`Workload::programs`]; its receivers' follow.
    fn sender_program(g: u32) -> u32 {
        g * (FDS + 1)
    }
    fn receiver_program(g: u32, r: u32) -> u32 {
        Self::sender_program(g) + 1 + r
    }
    fn write_cycles(&self) -> f64 {
        if self.pipes {
            ipc::PIPE_WRITE_CYCLES
        } else {
            ipc::SOCKET_WRITE_CYCLES
        }
    }
    fn read_cycles(&self) -> f64 {
        let read = if self.pipes { ipc::PIPE_READ_CYCLES } else { ipc::SOCKET_READ_CYCLES };
        read + if self.threads { 0.0 } else { ipc::PROCESS_SWITCH_CYCLES }
    }
    fn exit_cycles(&self) -> f64 {
        if self.threads {
            ipc::THREAD_EXIT_CYCLES
        } else {
            kernel::EXIT_CYCLES
        }
    }
    fn spawn_cycles(&self) -> f64 {
        if self.threads {
            ipc::THREAD_CREATE_CYCLES
        } else {
            kernel::FORK_CYCLES
        }
    }
    /// Messages one pipe or socket holds.
    fn capacity_msgs(&self) -> u32 {
        if self.pipes {
            ipc::PIPE_CAPACITY_MSGS
        } else {
            ipc::SOCKET_CAPACITY_MSGS
        }
    }

    /// Exit, and let the parent reap.
    fn exit_ops(&self) -> [Op; 3] {
        [run(self.exit_cycles()), Op::Post { ch: EXITED, sync: false }, Op::Exit]
    }

    /// Report ready, wait for GO.
    fn start_ops(&self) -> [Op; 2] {
        [Op::Post { ch: READY, sync: false }, Op::Barrier { id: GO, n: self.workers() + 1 }]
    }

    /// Each sender writes to every receiver of its group in turn, `loops` times: one counted
    /// loop (`Op::Repeat`) over the 20 writes.
    fn sender(&self, g: u32) -> Rc<[Op]> {
        let mut p = Vec::from(self.start_ops());
        let each = p.len();
        for r in 0..FDS {
            let (data, space) = Self::channels(g, r);
            p.extend([Op::Wait { ch: space }, run(self.write_cycles()), Op::Post { ch: data, sync: true }]);
        }
        p.push(Op::Repeat { to: each, times: self.loops });
        p.extend(self.exit_ops());
        p.into()
    }

    /// Receiver `r` reads its own pipe or socket, `FDS · loops` messages.
    fn receiver(&self, g: u32, r: u32) -> Rc<[Op]> {
        let (data, space) = Self::channels(g, r);
        let mut p = Vec::from(self.start_ops());
        let each = p.len();
        p.extend([
            Op::Wait { ch: data },
            run(self.read_cycles()),
            Op::Post { ch: space, sync: true },
            Op::Mark(Mark::Add { counter: MESSAGES, amount: 1 }),
        ]);
        p.push(Op::Repeat { to: each, times: FDS * self.loops });
        p.extend(self.exit_ops());
        p.into()
    }

    fn parent(&self) -> Rc<[Op]> {
        let mut p = Vec::new();
        for g in 0..self.groups {
            // Receivers first, each with an empty pipe or socket: its buffer's space is free.
            for r in 0..FDS {
                let (_, space) = Self::channels(g, r);
                p.push(run(self.spawn_cycles()));
                p.push(Op::Spawn { program: Self::receiver_program(g, r), count: 1 });
                p.push(Op::Post { ch: space, sync: false });
                p.push(Op::Repeat { to: p.len() - 1, times: self.capacity_msgs() });
            }
            for _ in 0..FDS {
                p.push(run(self.spawn_cycles()));
                p.push(Op::Spawn { program: Self::sender_program(g), count: 1 });
            }
        }
        for _ in 0..self.workers() {
            p.push(Op::Wait { ch: READY });
            p.push(run(self.read_cycles()));
        }
        p.extend([Op::Mark(Mark::Start(TOTAL)), Op::Barrier { id: GO, n: self.workers() + 1 }]);
        for _ in 0..self.workers() {
            p.extend([Op::Wait { ch: EXITED }, run(ipc::REAP_CYCLES)]);
        }
        p.extend([Op::Mark(Mark::End(TOTAL)), Op::Exit]);
        p.into()
    }
}

impl Workload for Hackbench {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        vec![TaskSpec::new("hackbench", self.parent())]
    }

    /// Per group, its senders' program, then each of its receivers' ([`Hackbench::sender_program`]).
    fn programs(&self, _plat: &Platform) -> Vec<Rc<[Op]>> {
        (0..self.groups)
            .flat_map(|g| std::iter::once(self.sender(g)).chain((0..FDS).map(move |r| self.receiver(g, r))))
            .collect()
    }

    /// A time-out: the run ends when every worker has exited.
    fn default_duration_ns(&self) -> u64 {
        60_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let total_ns = stats.latencies_ns.get(TOTAL as usize).and_then(|l| l.first()).copied();
        measure::metric(&INFO, total_ns.unwrap_or(stats.sim_time_ns) as f64 / 1e9)
    }

    fn operations(&self, stats: &RunStats) -> Option<Operations> {
        Operations::counted(stats, MESSAGES, "messages")
    }
}
