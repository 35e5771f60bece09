//! ycsb-redis: YCSB clients driving a redis server at a target rate, reporting latency per
//! operation type (the powernv campaign's 50% read / 50% update runs).
//!
//! `threads` YCSB client threads each pace at `target / threads` op/s: sleep until the
//! operation's scheduled start, do the client-side work, send the request over loopback TCP
//! and block for the reply. redis is one event-loop thread: woken per request, it executes
//! the command and replies. Its serverCron runs every 100 ms in the same loop (a lock shared
//! with a cron task stands for "the loop is busy"). `target=0` runs unthrottled (closed loop).
//!
//! ```text
//!   client t: loop { sleep_until(t0 + k·threads/target); start; cpu(c_cli); send; wait reply; end }
//!   redis:    loop { wait request; cpu(c_op); send reply }        cron: every 100 ms cpu(c_cron)
//! ```
//!
//! Latency is measured from the actual start (YCSB's default, not the "intended" start), per
//! operation type: latency slot 0 holds the reads, slot 1 the updates. Metric: the maximum
//! latency in ms of the type `op` names (lower is better), reads by default, as YCSB prints a
//! `[READ], MaxLatency` and an `[UPDATE], MaxLatency` line. The run lasts `ops / target`
//! seconds by default (the publication's 1 M operations; 100000 in the campaign, 10000 by
//! default). Each request carries its client's connection (`Op::Ask`), and redis answers on it.
//! Shortcomings: redis does not know the operation type, so its cost is the read/update mix's average spread over [c_GET, c_SET]; no
//! persistence forks or GC pauses; a late client skips the operations it missed instead of
//! catching up.

use std::rc::Rc;

use super::estimates::ycsb_redis as est;
use super::{measure, sample, Better, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "ycsb-redis",
    description: "YCSB over redis at a target op/s: max latency of reads or updates (op)",
    metric: "read_max_latency",
    unit: "ms",
    better: Better::Lower,
    knobs: &[
        Knob::new("target", "op/s", 15000.0, 0.0, 1e7, "YCSB -target (0 = unthrottled)"),
        Knob::new("read_pct", "%", 50.0, 0.0, 100.0, "share of reads; the rest are updates"),
        Knob::new("threads", "threads", 16.0, 1.0, 1024.0, "YCSB client threads").integer(),
        Knob::new("ops", "ops", 10000.0, 1.0, 1e9, "operationcount: sets the default duration").integer(),
        Knob::new("op", "type", 0.0, 0.0, 1.0, "operation type whose max latency is the metric: 0 = read, 1 = update")
            .choices(&[("read", 0.0), ("update", 1.0)]),
    ],
    build: |k: &KnobValues| {
        Box::new(YcsbRedis {
            target: k.get("target"),
            read_frac: k.get("read_pct") / 100.0,
            threads: k.get_u64("threads") as usize,
            ops: k.get("ops"),
            reported: if k.get_u64("op") == 0 { READ } else { UPDATE },
        })
    },
};

/// Operations in one client's repeating type pattern.
const PATTERN: usize = 100;
/// Channel 0: requests to redis; each client's connection is its own reply channel
/// (`connection`). Lock 0: the redis event loop.
const REQ_CH: u32 = 0;
const LOOP_LOCK: u32 = 0;
/// Latency slots.
const READ: u32 = 0;
const UPDATE: u32 = 1;
/// Operation rate assumed for the default duration of an unthrottled run.
const UNTHROTTLED_OPS_PER_S: f64 = 100_000.0;

struct YcsbRedis {
    target: f64,
    read_frac: f64,
    threads: usize,
    ops: f64,
    /// The latency slot the metric reports.
    reported: u32,
}

/// The reply channel of client thread `t`.
fn connection(t: usize) -> u32 {
    1 + t as u32
}

fn cpu(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: 0.0 }
}

impl YcsbRedis {
    fn client(&self, t: usize) -> Vec<Op> {
        let period_ns = (self.threads as f64 * 1e9 / self.target).round() as u64;
        let mut p = Vec::new();
        for read in sample::flags(PATTERN, self.read_frac, t as u64) {
            if self.target > 0.0 {
                p.push(Op::WaitPeriod { period_ns: period_ns.max(1) });
            }
            let slot = if read { READ } else { UPDATE };
            p.extend([
                Op::Mark(Mark::Start(slot)),
                cpu(est::CLIENT_CYCLES),
                cpu(est::TCP_SEND_CYCLES),
                Op::Ask { ch: REQ_CH, answer: connection(t), sync: true },
                Op::Wait { ch: connection(t) },
                Op::Mark(Mark::End(slot)),
            ]);
        }
        p.push(Op::Jump { to: 0 });
        p
    }

    fn server(&self) -> Vec<Op> {
        let mean = self.read_frac * est::GET_CYCLES + (1.0 - self.read_frac) * est::SET_CYCLES;
        let half = (est::SET_CYCLES - est::GET_CYCLES).abs() / 2.0;
        vec![
            Op::Take { ch: REQ_CH },
            Op::Lock { id: LOOP_LOCK },
            Op::Run { cycles: Amount::Uniform(mean - half, mean + half), mem_frac: 0.0 },
            Op::Unlock { id: LOOP_LOCK },
            cpu(est::TCP_SEND_CYCLES),
            Op::Answer { sync: true },
            Op::Jump { to: 0 },
        ]
    }

    fn cron() -> Vec<Op> {
        vec![
            Op::WaitPeriod { period_ns: est::CRON_PERIOD_NS },
            Op::Lock { id: LOOP_LOCK },
            cpu(est::CRON_CYCLES),
            Op::Unlock { id: LOOP_LOCK },
            Op::Jump { to: 0 },
        ]
    }
}

impl Workload for YcsbRedis {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        let stagger_ns = if self.target > 0.0 { 1e9 / self.target } else { 0.0 };
        let mut tasks = vec![
            TaskSpec::new("redis-server", Rc::from(self.server())),
            TaskSpec::new("redis-cron", Rc::from(Self::cron())),
        ];
        tasks.extend((0..self.threads).map(|t| {
            TaskSpec::new(format!("ycsb-{t}"), Rc::from(self.client(t))).start_at((t as f64 * stagger_ns) as u64)
        }));
        tasks
    }

    fn default_duration_ns(&self) -> u64 {
        let rate = if self.target > 0.0 { self.target } else { UNTHROTTLED_OPS_PER_S };
        ((self.ops / rate * 1e9) as u64).max(1)
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let slot = |s: u32| stats.latencies_ns.get(s as usize).map(Vec::as_slice).unwrap_or(&[]);
        // With none of the reported type at all, the other type stands in.
        let other = if self.reported == READ { UPDATE } else { READ };
        let samples = if slot(self.reported).is_empty() { slot(other) } else { slot(self.reported) };
        let name = if self.reported == READ { INFO.metric } else { "update_max_latency" };
        let value = measure::percentile(samples, 100.0) * 1e-6;
        Metric { name: name.into(), value, unit: INFO.unit.into(), better: INFO.better }
    }
}
