//! tbench: N client/server pairs replaying the NBENCH loadfile over loopback TCP
//! (docs/workloads-net.md).
//!
//! Each loadfile operation is one synchronous request/response: the client works (send
//! syscall, TCP tx, the loopback receive softirq on its own CPU, and the receive of the
//! previous reply), posts the request with a sync wake-up and sleeps; its server (one forked
//! tbench_srv process per connection) wakes, works, posts the reply and sleeps. At most one
//! task of a pair is runnable, so with N ≤ NCPU/2 every CPU is partly idle and throughput is
//! set by burst length ÷ frequency plus the wake-up and idle-exit latencies. Packet sizes are
//! those of `sockio.c`; costs are knobs declared in `estimates::tbench`.
//!
//! Metric, as dbench computes it: 1e-6 · (ReadX return + WriteX bytes) / elapsed seconds
//! (MB/s, decimal). The client counts the bytes when it receives the reply.

use std::rc::Rc;

use super::estimates::{ipc, nbench, ns_cycles, tbench, us_cycles};
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

/// Client `i`: per line, work (the previous reply's receive and this request's send), post
/// the request, wait for the reply, count the data bytes.
fn client_program(lines: &[Line], costs: &Costs, req: u32, rep: u32) -> Rc<[Op]> {
    let mut p = Vec::with_capacity(lines.len() * 4 + 1);
    for (k, line) in lines.iter().enumerate() {
        let prev_reply = lines[(k + lines.len() - 1) % lines.len()].reply_bytes();
        let copy = (prev_reply + line.request_bytes()) as f64 * costs.copy_per_byte;
        p.push(run(costs.client + copy));
        p.push(Op::Post { ch: req, sync: true });
        p.push(Op::Wait { ch: rep });
        p.push(Op::Mark(Mark::Add { counter: OPS, amount: 1 }));
        if line.data_bytes() > 0 {
            p.push(Op::Mark(Mark::Add { counter: BYTES, amount: line.data_bytes() as u64 }));
        }
    }
    p.push(Op::Jump { to: 0 });
    p.into()
}

/// Server `i`: per line, wait for the request, work (read it, write the reply), reply.
fn server_program(lines: &[Line], costs: &Costs, req: u32, rep: u32) -> Rc<[Op]> {
    let mut p = Vec::with_capacity(lines.len() * 3 + 1);
    for line in lines {
        let copy = (line.request_bytes() + line.reply_bytes()) as f64 * costs.copy_per_byte;
        p.push(Op::Wait { ch: req });
        p.push(run(costs.server + copy));
        p.push(Op::Post { ch: rep, sync: true });
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
