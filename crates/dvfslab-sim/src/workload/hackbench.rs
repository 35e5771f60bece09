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
//! - A socket: a write wakes the reader only if it sleeps, that is if its queue was empty
//!   (`unix_stream_sendmsg` calls `sk_data_ready`, which finds no sleeper otherwise), with a
//!   sync wake-up (WF_SYNC). A receiver that finds messages queued reads on without sleeping.
//!   A sender blocks once the queued skbs' truesize reaches `sk_sndbuf` (278 messages), and
//!   the blocked senders are woken all at once when the queued truesize falls to a quarter of
//!   `sk_sndbuf` (`unix_write_space`, 209 messages read): the model's receiver hands that
//!   space back after every 209 reads as 209 tokens, each waking a blocked sender (sync).
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

/// A receiver's socket, counted in 100-byte messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Buffer {
    /// Messages it holds before a sender blocks.
    capacity: u32,
    /// Messages the receiver reads from a full buffer before blocked senders are woken.
    release: u32,
}

impl Buffer {
    /// An `AF_UNIX` stream socket: `sock_alloc_send_pskb` allocates while `sk_wmem_alloc`
    /// (1, plus the truesize of the queued skbs) is below `sk_sndbuf`; `unix_write_space`
    /// wakes the writers once four times `sk_wmem_alloc` (the freed skb's last byte still
    /// counted) is at most `sk_sndbuf`.
    ///
    ///   capacity = ⌊(sndbuf − 2) / truesize⌋ + 1            (278 for 212,992 and 768)
    ///   low      = ⌊(sndbuf / 4 − 2) / truesize⌋             (69)
    ///   release  = capacity − low                            (209)
    fn unix_socket() -> Buffer {
        let (sndbuf, size) = (ipc::UNIX_SNDBUF_BYTES, ipc::UNIX_SKB_TRUESIZE_BYTES);
        let capacity = (sndbuf - 2) / size + 1;
        let low = (sndbuf / 4 - 2) / size;
        Buffer { capacity, release: capacity - low }
    }
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
    /// Data and free-space channels of receiver `r` of group `g`: its socket; a pipe's id is
    /// its data channel's.
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
            let (data, space) = Self::channels(g, r);
            if self.pipes {
                p.extend([run(self.send_cycles()), Op::PipeWrite { pipe: data, bytes: MESSAGE_BYTES }]);
            } else {
                p.extend([Op::Wait { ch: space }, run(self.send_cycles()), Op::Post { ch: data, sync: true }]);
            }
        }
        p.push(Op::Repeat { to: each, times: self.loops });
        p.extend(self.exit_ops());
        p.into()
    }

    /// Receiver `r` reads its own pipe or socket, `FDS · loops` messages; a socket's receiver
    /// hands the space back to the senders in the kernel's batches ([`Buffer::release`]).
    fn receiver(&self, g: u32, r: u32) -> Rc<[Op]> {
        let (data, space) = Self::channels(g, r);
        let total = FDS * self.loops;
        let mut p = Vec::from(self.start_ops());
        let counted = Op::Mark(Mark::Add { counter: MESSAGES, amount: 1 });
        if self.pipes {
            let each = p.len();
            p.extend([Op::PipeRead { pipe: data }, run(self.recv_cycles()), counted]);
            p.push(Op::Repeat { to: each, times: total });
            p.extend(self.exit_ops());
            return p.into();
        }
        let buf = Buffer::unix_socket();
        let read = [Op::Wait { ch: data }, run(self.recv_cycles()), counted];
        let batches = total / buf.release;
        if batches > 0 {
            let batch = p.len();
            p.extend(read.clone());
            p.push(Op::Repeat { to: batch, times: buf.release });
            let post = p.len();
            p.push(Op::Post { ch: space, sync: true });
            p.push(Op::Repeat { to: post, times: buf.release });
            p.push(Op::Repeat { to: batch, times: batches });
        }
        // The last reads free space no sender waits for any more.
        let rest = total % buf.release;
        if rest > 0 {
            let tail = p.len();
            p.extend(read);
            p.push(Op::Repeat { to: tail, times: rest });
        }
        p.extend(self.exit_ops());
        p.into()
    }

    fn parent(&self) -> Rc<[Op]> {
        let mut p = Vec::new();
        for g in 0..self.groups {
            // Receivers first, each with an empty pipe or socket: a socket's space is free.
            for r in 0..FDS {
                let (_, space) = Self::channels(g, r);
                p.push(run(self.spawn_cycles()));
                p.push(Op::Spawn { program: Self::receiver_program(g, r), count: 1 });
                if !self.pipes {
                    p.push(Op::Post { ch: space, sync: false });
                    p.push(Op::Repeat { to: p.len() - 1, times: Buffer::unix_socket().capacity });
                }
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
    fn a_socket_holds_what_its_send_buffer_admits_and_frees_a_quarter() {
        // 212,992-byte sndbuf, 768 bytes of truesize per 100-byte message: the 278th message
        // is allocated at 1 + 277 × 768 = 212,737 bytes, below sndbuf; the 279th is not.
        let s = Buffer::unix_socket();
        assert_eq!(s.capacity, 278);
        assert!(1 + (s.capacity - 1) * ipc::UNIX_SKB_TRUESIZE_BYTES < ipc::UNIX_SNDBUF_BYTES);
        assert!(1 + s.capacity * ipc::UNIX_SKB_TRUESIZE_BYTES >= ipc::UNIX_SNDBUF_BYTES);
        // Writers wake once 4 × (2 + 768 q) ≤ 212,992: q = 69 messages left queued.
        let left = s.capacity - s.release;
        assert!(4 * (2 + left * ipc::UNIX_SKB_TRUESIZE_BYTES) <= ipc::UNIX_SNDBUF_BYTES);
        assert!(4 * (2 + (left + 1) * ipc::UNIX_SKB_TRUESIZE_BYTES) > ipc::UNIX_SNDBUF_BYTES);
    }

    #[test]
    fn a_socket_receiver_reads_every_message_and_hands_space_back_in_batches() {
        for (pipes, loops) in [(false, 2000), (false, 1), (false, 100)] {
            let hb = hackbench(pipes, loops);
            let buf = Buffer::unix_socket();
            let (data, space) = Hackbench::channels(0, 7);
            let ops = unrolled(&hb.receiver(0, 7));
            let reads = ops.iter().filter(|op| matches!(op, Op::Wait { ch } if *ch == data)).count() as u32;
            assert_eq!(reads, FDS * loops, "pipes {pipes}, loops {loops}");
            // Space comes back only in whole batches, each after `release` reads.
            let mut read_since = 0;
            let mut posted = 0;
            for op in &ops {
                match op {
                    Op::Wait { ch } if *ch == data => read_since += 1,
                    Op::Post { ch, sync } if *ch == space => {
                        assert!(*sync, "the kernel wakes writers with WF_SYNC");
                        assert!(read_since >= buf.release || posted % buf.release != 0);
                        if posted % buf.release == 0 {
                            read_since -= buf.release;
                        }
                        posted += 1;
                    }
                    _ => {}
                }
            }
            assert_eq!(posted % buf.release, 0);
            assert_eq!(posted, (FDS * loops / buf.release) * buf.release);
            // The senders never wait for space that never comes: the initial space and what
            // the receiver hands back cover every message written to it.
            assert!(buf.capacity + posted >= FDS * loops, "pipes {pipes}, loops {loops}");
        }
    }

    #[test]
    fn a_sender_writes_each_receiver_in_turn() {
        for pipes in [true, false] {
            let hb = hackbench(pipes, 3);
            let ops = unrolled(&hb.sender(0));
            let writes: Vec<u32> = ops
                .iter()
                .filter_map(|op| match op {
                    Op::Post { ch, sync: true } => Some(*ch),
                    Op::PipeWrite { pipe, bytes: MESSAGE_BYTES } => Some(*pipe),
                    _ => None,
                })
                .collect();
            let order: Vec<u32> = (0..3).flat_map(|_| (0..FDS).map(|r| Hackbench::channels(0, r).0)).collect();
            assert_eq!(writes, order, "pipes {pipes}");
            // A socket's sender waits for space before every write; a pipe's write sleeps
            // itself while the pipe is full.
            let waits = ops.iter().filter(|op| matches!(op, Op::Wait { .. })).count() as u32;
            assert_eq!(waits, if pipes { 0 } else { 3 * FDS }, "pipes {pipes}");
        }
    }

    #[test]
    fn a_pipe_receiver_reads_every_message_from_its_own_pipe() {
        let hb = hackbench(true, 7);
        let ops = unrolled(&hb.receiver(0, 5));
        let (data, space) = Hackbench::channels(0, 5);
        let reads = ops.iter().filter(|op| matches!(op, Op::PipeRead { pipe } if *pipe == data)).count() as u32;
        assert_eq!(reads, FDS * 7);
        // The pipe itself wakes its writers: the receiver hands no space back.
        assert!(!ops.iter().any(|op| matches!(op, Op::Post { ch, .. } if *ch == space)));
    }
}
