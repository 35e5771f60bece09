//! hackbench (`perf bench sched messaging`, rt-tests' `hackbench`): groups of 20 senders and
//! 20 receivers spraying 100-byte messages over pipes or unix sockets (docs/workloads-net.md).
//!
//! The parent forks (or creates threads for) each group's receivers, then its senders; each
//! worker reports ready and waits for the parent's GO, which wakes all 40·G at once. Every
//! sender then writes `loops` × 20 messages, one to each receiver of its group in turn, and
//! every receiver reads 20 · `loops` from its own pipe or socket, which all its group's senders
//! write to, one 100-byte `read` per message.
//!
//! Who wakes whom is the kernel's:
//! - A pipe is the kernel's (`Op::PipeWrite`, `Op::PipeRead`, sched/pipe.rs): 16 page slots,
//!   each holding 40 messages merged into it, a write to an empty pipe waking the reader
//!   (sync), a sender blocking once every slot is taken and the last page has no room, and a
//!   read waking the blocked senders as the run's kernel does (from 6.14 one sender, when the
//!   read frees a page of a full pipe; the sender woken takes the slot, so the others sleep on
//!   while running senders fill the pipe again).
//! - A socket is the kernel's too (`Op::UnixSend`, `Op::UnixRecv`, sched/unix_stream.rs): each
//!   message charges its skb's truesize (768 bytes) to the socket all the group's senders
//!   share, a sender sleeps once the charge reaches `sk_sndbuf` (278 messages), each read
//!   hands its charge back at once, and the blocked senders are woken all together once it
//!   is down to a quarter (69 messages queued). A send wakes the receiver if it sleeps, sync.
//!
//! Metric, as perf reports it: "Total time" in seconds from GO to the last worker reaped
//! (lower is better). If the run ends first, the value is the run's length.

use std::rc::Rc;

use super::estimates::{ipc, kernel};
use super::{measure, Better, Metric, Operations, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, CrossingCycles, Mark, Op};
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

/// hackbench's message: `DATASIZE`, 100 bytes.
const MESSAGE_BYTES: u32 = 100;

fn run(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: ipc::MEM_FRAC }
}

impl Hackbench {
    fn workers(&self) -> u32 {
        2 * FDS * self.groups
    }
    /// The id of receiver `r` of group `g`'s pipe or socket.
    fn receiver_fd(g: u32, r: u32) -> u32 {
        g * FDS + r
    }
    /// Index of group `g`'s senders' program in [`Workload::programs`]; its receivers' follow.
    fn sender_program(g: u32) -> u32 {
        g * (FDS + 1)
    }
    fn receiver_program(g: u32, r: u32) -> u32 {
        Self::sender_program(g) + 1 + r
    }
    /// A sender's work per message: the write and its share of the wake-ups it makes.
    fn send_cycles(&self) -> f64 {
        if self.pipes {
            ipc::HACKBENCH_PIPE_SEND_CYCLES
        } else {
            ipc::HACKBENCH_SOCKET_SEND_CYCLES
        }
    }
    /// A receiver's work per message: the read and its share of the receiver's sleeps. The
    /// address-space switch that threads of one process avoid is per context switch, a few
    /// per cent of a message's cost at hackbench's switch rate: threads pay the same.
    fn recv_cycles(&self) -> f64 {
        if self.pipes {
            ipc::HACKBENCH_PIPE_RECV_CYCLES
        } else {
            ipc::HACKBENCH_SOCKET_RECV_CYCLES
        }
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
            let fd = Self::receiver_fd(g, r);
            p.extend([run(self.send_cycles()), self.write(fd)]);
        }
        p.push(Op::Repeat { to: each, times: self.loops });
        p.extend(self.exit_ops());
        p.into()
    }

    /// Receiver `r` reads its own pipe or socket, `FDS · loops` messages.
    fn receiver(&self, g: u32, r: u32) -> Rc<[Op]> {
        let fd = Self::receiver_fd(g, r);
        let mut p = Vec::from(self.start_ops());
        let each = p.len();
        p.extend([self.read(fd), run(self.recv_cycles()), Op::Mark(Mark::Add { counter: MESSAGES, amount: 1 })]);
        p.push(Op::Repeat { to: each, times: FDS * self.loops });
        p.extend(self.exit_ops());
        p.into()
    }

    /// One message written to `fd`. A socket's message costs more where its cache lines come
    /// from another CPU (`ipc::UNIX_SEND_CROSSING`); a pipe's costs hold that in one fit
    /// (`ipc::HACKBENCH_PIPE_SEND_CYCLES` says why).
    fn write(&self, fd: u32) -> Op {
        if self.pipes {
            Op::PipeWrite { pipe: fd, bytes: MESSAGE_BYTES, crossing: CrossingCycles::default() }
        } else {
            Op::UnixSend { sock: fd, truesize: ipc::UNIX_SKB_TRUESIZE_BYTES, crossing: ipc::UNIX_SEND_CROSSING }
        }
    }

    /// One message read from `fd`.
    fn read(&self, fd: u32) -> Op {
        if self.pipes {
            Op::PipeRead { pipe: fd, crossing: CrossingCycles::default() }
        } else {
            Op::UnixRecv { sock: fd, truesize: ipc::UNIX_SKB_TRUESIZE_BYTES, crossing: ipc::UNIX_RECV_CROSSING }
        }
    }

    fn parent(&self) -> Rc<[Op]> {
        let mut p = Vec::new();
        for g in 0..self.groups {
            // Receivers first, then senders.
            for r in 0..FDS {
                p.push(run(self.spawn_cycles()));
                p.push(Op::Spawn { program: Self::receiver_program(g, r), count: 1 });
            }
            for _ in 0..FDS {
                p.push(run(self.spawn_cycles()));
                p.push(Op::Spawn { program: Self::sender_program(g), count: 1 });
            }
        }
        for _ in 0..self.workers() {
            p.push(Op::Wait { ch: READY });
            p.push(run(self.recv_cycles()));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn hackbench(pipes: bool, loops: u32) -> Hackbench {
        Hackbench { groups: 1, pipes, threads: false, loops }
    }

    /// The operations a program runs, its counted loops unrolled (`Op::Repeat` as the
    /// interpreter counts it: `times` passes in all).
    fn unrolled(program: &[Op]) -> Vec<Op> {
        let mut out = Vec::new();
        let mut loops: Vec<(usize, u32)> = Vec::new();
        let mut pc = 0;
        while pc < program.len() {
            match program[pc] {
                Op::Repeat { to, times } => {
                    match loops.last_mut() {
                        Some((at, left)) if *at == pc => *left -= 1,
                        _ => loops.push((pc, times - 1)),
                    }
                    if loops.last().expect("pushed").1 > 0 {
                        pc = to;
                        continue;
                    }
                    loops.pop();
                }
                ref op => out.push(op.clone()),
            }
            pc += 1;
        }
        out
    }

    #[test]
    fn a_sender_writes_each_receiver_in_turn() {
        for pipes in [true, false] {
            let hb = hackbench(pipes, 3);
            let ops = unrolled(&hb.sender(0));
            let writes: Vec<u32> = ops
                .iter()
                .filter_map(|op| match op {
                    Op::PipeWrite { pipe, bytes: MESSAGE_BYTES, .. } => Some(*pipe),
                    Op::UnixSend { sock, truesize: ipc::UNIX_SKB_TRUESIZE_BYTES, .. } => Some(*sock),
                    _ => None,
                })
                .collect();
            let order: Vec<u32> = (0..3).flat_map(|_| (0..FDS).map(|r| Hackbench::receiver_fd(0, r))).collect();
            assert_eq!(writes, order, "pipes {pipes}");
        }
    }

    #[test]
    fn a_receiver_reads_every_message_from_its_own_pipe_or_socket() {
        for pipes in [true, false] {
            let hb = hackbench(pipes, 7);
            let ops = unrolled(&hb.receiver(0, 5));
            let fd = Hackbench::receiver_fd(0, 5);
            let reads = ops
                .iter()
                .filter(|op| matches!(op, Op::PipeRead { pipe, .. } | Op::UnixRecv { sock: pipe, .. } if *pipe == fd))
                .count() as u32;
            assert_eq!(reads, FDS * 7, "pipes {pipes}");
            let counted = ops.iter().filter(|op| matches!(op, Op::Mark(Mark::Add { .. }))).count() as u32;
            assert_eq!(counted, FDS * 7, "pipes {pipes}");
        }
    }
}
