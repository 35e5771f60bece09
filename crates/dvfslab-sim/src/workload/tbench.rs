//! tbench: N client/server pairs replaying the NBENCH loadfile over loopback TCP
//! (docs/workloads-net.md).
//!
//! Each loadfile operation is one synchronous request/response. The client receives the
//! previous reply, reads the loadfile line and sends the request: the loopback receive runs in
//! the NET_RX softirq on the client's CPU and wakes the server from there, synchronously
//! (`Op::Loopback`); the send returns and the client's next receive blocks. Its server (one
//! forked tbench_srv process per connection) receives the request and sends the reply the same
//! way. The woken task usually lands on the waker's CPU, and whether it preempts the waker is
//! the scheduler's wake-up rule (EEVDF's from 6.6): a waker preempted before it blocks finds
//! its answer already there and sleeps no more. Packet sizes are those of `sockio.c`; costs
//! are knobs declared in `estimates::tbench`, the loopback path's in `estimates::loopback`.
//!
//! Metric, as dbench computes it: 1e-6 · (ReadX return + WriteX bytes) / elapsed seconds
//! (MB/s, decimal). The client counts the bytes when it receives the reply.

use std::rc::Rc;

use super::estimates::{ipc, loopback, nbench, ns_cycles, tbench, us_cycles};
use super::loadfile::{synthesise, Line};
use super::{measure, Better, Metric, Operations, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "tbench",
    description: "dbench's loadfile as request/response pairs over loopback TCP (tbench4)",
    metric: "throughput",
    unit: "MB/s",
    better: Better::Higher,
    knobs: &[
        Knob::new("clients", "clients", 1.0, 1.0, 1024.0, "client/server pairs (tbench N)").integer(),
        tbench::CLIENT_US,
        tbench::SERVER_US,
        tbench::COPY_NS_PER_BYTE,
    ],
    build: |k: &KnobValues| {
        Box::new(Tbench {
            clients: k.get_u64("clients") as u32,
            costs: Costs {
                client: us_cycles(k.get(tbench::CLIENT_US.name)),
                server: us_cycles(k.get(tbench::SERVER_US.name)),
                copy_per_byte: ns_cycles(k.get(tbench::COPY_NS_PER_BYTE.name)),
            },
        })
    },
};

/// Counter of ReadX/WriteX bytes.
const BYTES: u16 = 0;
/// Counter of loadfile operations completed (dbench's "Operation Count" total).
const OPS: u16 = 1;

struct Tbench {
    clients: u32,
    costs: Costs,
}

/// Work per operation, in cycles: each side's fixed part, and the copy per byte moved.
struct Costs {
    client: f64,
    server: f64,
    copy_per_byte: f64,
}

fn run(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: ipc::MEM_FRAC }
}

/// One side's burst around a send over loopback: `work` cycles in all, of which the last
/// [`loopback::TCP_WAKE_TAIL_CYCLES`] follow the receiver's wake-up on channel `ch`.
fn send_burst(work: f64, ch: u32) -> [Op; 3] {
    let tail = loopback::TCP_WAKE_TAIL_CYCLES.min(work);
    [run(work - tail), Op::Loopback { ch, sync: true }, run(tail)]
}

/// Client `i`: per line, work (the previous reply's receive and this request's send, whose
/// loopback receive wakes the server), wait for the reply, count the data bytes.
fn client_program(lines: &[Line], costs: &Costs, req: u32, rep: u32) -> Rc<[Op]> {
    let mut p = Vec::with_capacity(lines.len() * 6 + 1);
    for (k, line) in lines.iter().enumerate() {
        let prev_reply = lines[(k + lines.len() - 1) % lines.len()].reply_bytes();
        let copy = (prev_reply + line.request_bytes()) as f64 * costs.copy_per_byte;
        p.extend(send_burst(costs.client + copy, req));
        p.push(Op::Wait { ch: rep });
        p.push(Op::Mark(Mark::Add { counter: OPS, amount: 1 }));
        if line.data_bytes() > 0 {
            p.push(Op::Mark(Mark::Add { counter: BYTES, amount: line.data_bytes() as u64 }));
        }
    }
    p.push(Op::Jump { to: 0 });
    p.into()
}

/// Server `i`: per line, wait for the request, work (receive it, send the reply, whose
/// loopback receive wakes the client).
fn server_program(lines: &[Line], costs: &Costs, req: u32, rep: u32) -> Rc<[Op]> {
    let mut p = Vec::with_capacity(lines.len() * 4 + 1);
    for line in lines {
        let copy = (line.request_bytes() + line.reply_bytes()) as f64 * costs.copy_per_byte;
        p.push(Op::Wait { ch: req });
        p.extend(send_burst(costs.server + copy, rep));
    }
    p.push(Op::Jump { to: 0 });
    p.into()
}

impl Workload for Tbench {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        // Every pair runs the same two programs on its own two channels (request 2i, reply
        // 2i + 1): one copy of each program serves all pairs.
        let lines = synthesise(nbench::LOADFILE_OPS as usize);
        let (client, server) = (client_program(&lines, &self.costs, 0, 1), server_program(&lines, &self.costs, 0, 1));
        let mut tasks = Vec::with_capacity(2 * self.clients as usize);
        for i in 0..self.clients {
            tasks.push(TaskSpec::new(format!("tbench-{i}"), client.clone()).channel_base(2 * i));
            tasks.push(TaskSpec::new(format!("tbench_srv-{i}"), server.clone()).channel_base(2 * i));
        }
        tasks
    }

    fn default_duration_ns(&self) -> u64 {
        500_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        measure::metric(&INFO, 1e-6 * measure::per_second(stats, BYTES))
    }

    fn operations(&self, stats: &RunStats) -> Option<Operations> {
        Operations::counted(stats, OPS, "loadfile operations")
    }
}
