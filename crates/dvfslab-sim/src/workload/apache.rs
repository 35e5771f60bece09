//! apache: ApacheBench (`ab`) against a local Apache httpd serving a static page, as the
//! Phoronix Test Suite's `pts/apache` runs it: a million requests, `concurrency` of them in
//! flight (`ab -n 1000000 -c 100`), a new loopback TCP connection for each (no keep-alive).
//!
//! `ab` is one single-threaded process with an event loop over its connections: whenever a
//! response completes it closes that connection, opens a new one and sends the next request,
//! and it sleeps only when no response is ready. httpd (the event or worker MPM) hands every
//! accepted connection to one of its worker threads, which reads the request, maps it to the
//! file, writes headers and body, logs it and closes. So the load is one saturated client
//! thread feeding a pool of short server bursts: with `ab`'s work about half of a worker's,
//! `ab` is the bottleneck on a machine with a few cores, and the workers leave most CPUs
//! partly idle, each woken over and over for one request.
//!
//! Model: `ab` posts `concurrency` requests, then for every reply (any connection, first in
//! first out) counts a request, does its per-request work and posts the next request. The
//! workers, one per connection up to httpd's `MaxRequestWorkers`, wait on the request queue,
//! work, and post the reply. Every wake-up is a loopback TCP data wake-up, hence sync. Costs
//! are `estimates::apache`, spread around their means as a page's requests vary.
//!
//! Metric: requests per second over the run (ab's "Requests per second", higher is better).
//! Shortcomings: the listener thread's hand-off of each connection to a worker and the TCP
//! handshake's own wake-ups are folded into the two bursts; the access log's writeback is left
//! out (a few hundred bytes per request stay in the page cache for the length of a run).

use std::rc::Rc;

use super::estimates::{apache, ipc};
use super::{measure, Better, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "apache",
    description: "ApacheBench against a local httpd: one ab event loop, a worker per connection",
    metric: "requests",
    unit: "req/s",
    better: Better::Higher,
    knobs: &[Knob::new("concurrency", "connections", 100.0, 1.0, 20_000.0, "requests in flight (ab -c)").integer()],
    build: |k: &KnobValues| Box::new(Apache { concurrency: k.get_u64("concurrency") as u32 }),
};

/// Counter of completed requests.
const REQUESTS: u16 = 0;
/// The channel `ab` posts requests to; the workers wait on it.
const REQUEST: u32 = 0;
/// The channel the workers post responses to; `ab` waits on it.
const RESPONSE: u32 = 1;

struct Apache {
    concurrency: u32,
}

impl Apache {
    /// httpd's worker threads: one per connection in flight, up to `MaxRequestWorkers`; the
    /// connections beyond it wait in the listen backlog, which the request queue stands for.
    fn workers(&self) -> u32 {
        self.concurrency.min(apache::MAX_REQUEST_WORKERS)
    }

    /// `ab`: open `concurrency` connections, each with its request, then answer every
    /// response with the next request.
    fn ab(&self) -> Rc<[Op]> {
        let send = [
            Op::Run {
                cycles: Amount::jittered(apache::AB_REQUEST_CYCLES, apache::COST_SPREAD_PCT),
                mem_frac: ipc::MEM_FRAC,
            },
            Op::Post { ch: REQUEST, sync: true },
        ];
        let mut p: Vec<Op> = (0..self.concurrency).flat_map(|_| send.clone()).collect();
        let top = p.len();
        p.extend([Op::Wait { ch: RESPONSE }, Op::Mark(Mark::Add { counter: REQUESTS, amount: 1 })]);
        p.extend(send);
        p.push(Op::Jump { to: top });
        p.into()
    }

    fn worker() -> Rc<[Op]> {
        vec![
            Op::Wait { ch: REQUEST },
            Op::Run {
                cycles: Amount::jittered(apache::HTTPD_REQUEST_CYCLES, apache::COST_SPREAD_PCT),
                mem_frac: ipc::MEM_FRAC,
            },
            Op::Post { ch: RESPONSE, sync: true },
            Op::Jump { to: 0 },
        ]
        .into()
    }
}

impl Workload for Apache {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        let worker = Self::worker();
        let mut tasks: Vec<TaskSpec> =
            (0..self.workers()).map(|w| TaskSpec::new(format!("httpd-{w}"), worker.clone())).collect();
        tasks.push(TaskSpec::new("ab", self.ab()));
        tasks
    }

    fn default_duration_ns(&self) -> u64 {
        500_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        measure::metric(&INFO, measure::per_second(stats, REQUESTS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(program: &[Op], pred: impl Fn(&Op) -> bool) -> usize {
        program.iter().filter(|op| pred(op)).count()
    }

    #[test]
    fn ab_opens_every_connection_then_answers_each_response_with_a_request() {
        let ab = Apache { concurrency: 100 }.ab();
        let sends = |op: &Op| matches!(op, Op::Post { ch: REQUEST, sync: true });
        let first = ab.iter().position(|op| matches!(op, Op::Wait { .. })).unwrap();
        // 100 requests before the first wait, then one per response, counted once.
        assert_eq!(count(&ab[..first], sends), 100);
        assert_eq!(count(&ab[first..], sends), 1);
        assert_eq!(count(&ab[first..], |op| matches!(op, Op::Mark(Mark::Add { counter: REQUESTS, .. }))), 1);
        assert!(matches!(ab.last(), Some(Op::Jump { to }) if *to == first));
    }

    #[test]
    fn workers_follow_the_connections_up_to_max_request_workers() {
        let workers = |c: u32| Apache { concurrency: c }.workers();
        assert_eq!(workers(1), 1);
        assert_eq!(workers(100), 100);
        assert_eq!(workers(1000), apache::MAX_REQUEST_WORKERS);
    }
}
