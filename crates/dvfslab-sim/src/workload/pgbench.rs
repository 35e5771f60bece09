//! pgbench against a local PostgreSQL, select-only or tpcb-like (docs/workloads-net.md; MMTests
//! `config-db-pgbench-timed-{ro,rw}-scale1`, and the older `-small` configurations whose database
//! is sized to the machine's memory).
//!
//! Each client connection is served by its own backend process. pgbench threads drive their
//! connections with no think time: send a statement, and when its reply arrives send the next
//! one. The runs use as many threads as MMTests passes to `-j`: the client count clamped to
//! [NUMA nodes, CPUs / nodes / 8] (and at most one per client), so 4 clients on an 80-CPU
//! two-node machine get 4 threads but a 4-core desktop drives every connection from one.
//!
//! A thread `poll()`s its connections and serves whichever reply is ready, so it sleeps only
//! when none is. The model gives each thread one reply channel that all its backends answer
//! on (`Op::Ask`, the reply carrying its connection), and each connection a channel of its
//! own that its backend waits on: the thread takes the first reply (`Op::Take`) and sends the
//! next statement on that reply's connection (`Op::Answer`). (Waiting for the connections in
//! a fixed order instead stalls the thread behind a backend still queued on a busy CPU while
//! other replies wait; the thread then sleeps and wakes on another idle CPU at every stall,
//! and a saturated thread is smeared over all CPUs.) Both sides go on working after they
//! send: the thread checks its other connections and polls, the backend finishes the
//! protocol's round (ReadyForQuery, the process title, a recv that finds nothing) before it
//! sleeps, so a quick reply or statement finds the other side still awake. Every message
//! wakes its reader with a sync wake-up (`sock_def_readable` on the unix socket). A backend
//! counts its transaction when it answers the last statement.
//!
//! - **read-only** (`rw=0`, select-only): one SELECT per transaction, one round trip.
//! - **read-write** (`rw=1`, tpcb-like): seven statements per transaction. Each transaction
//!   updates one of the `scale` branch rows, picked at random: the backend takes its row lock
//!   at `UPDATE pgbench_branches` and holds it until `END` has flushed the WAL. At scale 1
//!   every transaction updates the same row and they serialise on it; at a scale far above
//!   the client count they rarely meet. (The ten teller rows per branch, locked one statement
//!   earlier, are left out: the branch lock is the tighter one.) The commit's `fdatasync` of
//!   the WAL is two I/Os on the `device`, each slept through in D: the write-back of the WAL
//!   pages, then the cache flush. blk-mq sends the flush through its flush machinery, which
//!   leaves its dispatch to the CPU's high-priority kblockd worker (`Op::IoFlush`): every
//!   recorded commit wakes `kworker/N:1H` on the backend's CPU, which runs 20–22 µs at the
//!   median (three recordings, two hosts) before the device has the flush. Flushes are group
//!   commits (`Service::GroupCommit`): a backend that asks while one is under way joins the
//!   next, as PostgreSQL's backends queue on `WALWriteLock` and find their record flushed by
//!   the one that held it.
//!
//! The WAL writer and the background writer wake every 200 ms. In select-only runs on a table
//! with dead row versions left to prune (`prune_every`, 0 on a vacuumed table) the backends
//! also wake the WAL writer: a read-only transaction that pruned a heap page wrote WAL,
//! commits asynchronously and sets the WAL writer's latch (XLogSetAsyncXactLSN), one
//! transaction in `prune_every`; with wake-ups that frequent the WAL writer's 200 ms timeout
//! never runs out, so it waits on the latch alone. Costs are `estimates::pgbench`,
//! measured on the recordings, the main ones knobs (`client_us`, `select_us`, `rw_scale`);
//! every cost, client and backend, is drawn around its mean (`COST_SPREAD_PCT`).
//!
//! The run starts as pgbench's does: its main thread is thread 0 and creates the others
//! (pthread_create: fork balancing places each from the main thread's CPU, and each inherits its
//! wakee state); each thread opens its connections one after the other,
//! each a connect to the postmaster's socket (a sync wake-up of the postmaster) and a sleep
//! until the new backend reports ReadyForQuery. The postmaster accepts and forks one backend
//! per connection (ServerLoop, BackendStartup), so the kernel places every backend with fork
//! balancing from the postmaster's CPU (`sched_balance_fork`, `find_idlest_cpu`) while its
//! thread sleeps; the backend starts up (InitPostgres) and answers. When every thread has its
//! connections they begin together (pgbench's threads wait on one barrier), which is where
//! the pairs' layout on the CPUs comes from, and a real run keeps the layout it starts with.
//!
//! Metric: transactions per second over the run (higher is better). MMTests takes the
//! harmonic mean of 4-second batches after an 8-second warm-up; runs here are shorter than
//! that and the model has no per-second samples, so it is the plain rate over the whole run.

use std::rc::Rc;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use super::disk::{Disk, DEVICE_KNOB};
use super::estimates::{ipc, kernel, pgbench, us_cycles};
use super::kthreads;
use super::storage::Access;
use super::{measure, Better, DeviceSpec, Metric, Operations, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "pgbench",
    description: "pgbench: select-only (rw=0) or tpcb-like with WAL fsync (rw=1)",
    metric: "tps",
    unit: "txn/s",
    better: Better::Higher,
    knobs: &[
        Knob::new("clients", "clients", 1.0, 1.0, 1024.0, "client connections, one backend each (-c)").integer(),
        Knob::new("rw", "bool", 0.0, 0.0, 1.0, "0 = read-only (select-only), 1 = read-write (tpcb-like)").integer(),
        Knob::new("threads", "threads", 0.0, 0.0, 1024.0, "pgbench threads (-j); 0 = MMTests' choice for the machine")
            .integer(),
        Knob::new(
            "scale",
            "branches",
            1.0,
            1.0,
            100_000.0,
            "scale factor (-s): branch rows a read-write transaction picks from; 1 serialises them",
        )
        .integer(),
        DEVICE_KNOB,
        pgbench::CLIENT_US,
        pgbench::SELECT_US,
        pgbench::RW_SCALE,
        pgbench::PRUNE_EVERY,
    ],
    build: |k: &KnobValues| {
        let clients = k.get_u64("clients") as u32;
        let rw = k.get_u64("rw") != 0;
        let threads = k.get_u64("threads") as u32;
        let scale = k.get_u64("scale") as u32;
        let costs = Costs {
            client: us_cycles(k.get(pgbench::CLIENT_US.name)),
            select: us_cycles(k.get(pgbench::SELECT_US.name)),
            rw_scale: k.get(pgbench::RW_SCALE.name),
        };
        let prune_every = k.get_u64(pgbench::PRUNE_EVERY.name) as usize;
        Box::new(Pgbench {
            clients,
            threads,
            rw,
            scale,
            prune_every,
            disk: Disk::from_knob(k.get_u64("device")),
            costs,
        })
    },
};

/// Counter of committed transactions.
const TXN: u16 = 0;
/// The row lock of branch `b` is mutex `b`; at scale 1 every transaction takes branch 0.
const BRANCH: u32 = 0;
/// Branches drawn per read-write connection before its sequence repeats.
const BRANCH_DRAWS: usize = 64;
/// Seed of the branch draws (xor the connection number): a property of the workload, not of
/// the run, so one connection updates the same branches under every configuration.
const BRANCH_SEED: u64 = 0x7063_6263;
const DISK: u32 = 0;
/// Spacing of the connections' latch-setting transactions within their sequence, so that
/// connections do not set the latch in step.
const LATCH_PHASE: usize = 7;
/// tpcb-like statements that take and release the branch row lock.
const UPDATE_BRANCHES: usize = 4;
const END: usize = 6;

struct Pgbench {
    clients: u32,
    /// The `threads` knob: 0 picks MMTests' count for the machine (`Pgbench::threads`).
    threads: u32,
    rw: bool,
    /// Branch rows (`-s`).
    scale: u32,
    /// select-only: transactions per one that sets the WAL writer's latch; 0 for none.
    prune_every: usize,
    disk: Disk,
    costs: Costs,
}

/// Mean work of a statement, in cycles: the pgbench thread's, the backend's SELECT of a
/// select-only transaction, and the factor on the tpcb-like statements' backend work.
struct Costs {
    client: f64,
    select: f64,
    rw_scale: f64,
}

impl Costs {
    /// The knobs' defaults.
    #[cfg(test)]
    const DEFAULT: Costs = Costs {
        client: us_cycles(pgbench::CLIENT_US.default),
        select: us_cycles(pgbench::SELECT_US.default),
        rw_scale: pgbench::RW_SCALE.default,
    };
}

/// The channel of connection `conn`: its backend waits there for the next statement.
fn connection(conn: u32) -> u32 {
    2 * conn
}
/// The channel the backends of thread `t` answer on; the thread polls it.
fn reply(t: u32) -> u32 {
    2 * t + 1
}
/// The WAL writer's latch, past every connection's and thread's channel.
fn walwriter_latch(clients: u32) -> u32 {
    2 * clients
}
/// The postmaster's listening socket as connection `conn` connects to it (one channel per
/// connection, so that the postmaster forks each connection's own backend); `accept(clients)`
/// is never posted: the postmaster waits there once every connection has its backend.
fn accept(clients: u32, conn: u32) -> u32 {
    2 * clients + 1 + conn
}
/// Connection `conn`'s first answer, ReadyForQuery after its backend's start.
fn ready(clients: u32, conn: u32) -> u32 {
    3 * clients + 2 + conn
}
/// The barriers pgbench's threads pass together (threadRun): once all have started, then
/// once all have their connections.
const READY: u32 = 0;
const GO: u32 = 1;

fn client_work(cycles: f64) -> Op {
    Op::Run { cycles: Amount::jittered(cycles, pgbench::COST_SPREAD_PCT), mem_frac: ipc::MEM_FRAC }
}

fn backend_work(cycles: f64) -> Op {
    Op::Run { cycles: Amount::jittered(cycles, pgbench::COST_SPREAD_PCT), mem_frac: pgbench::MEM_FRAC }
}

impl Pgbench {
    /// pgbench threads (`-j`) on this machine.
    fn threads(&self, plat: &Platform) -> u32 {
        let chosen = match self.threads {
            0 => {
                // MMTests' pgbench-bench: clamp(clients, nodes, cpus / nodes / 8).
                let nodes = plat.cpus.iter().map(|c| c.numa + 1).max().unwrap_or(1) as u32;
                let most = (plat.ncpus() as u32 / nodes / pgbench::CPUS_PER_THREAD_PER_NODE).max(nodes);
                self.clients.clamp(nodes, most)
            }
            j => j,
        };
        chosen.min(self.clients)
    }

    /// Backend work of each statement of one transaction.
    fn script(&self) -> Vec<f64> {
        if self.rw {
            pgbench::RW_STATEMENT_CYCLES.iter().map(|c| c * self.costs.rw_scale).collect()
        } else {
            vec![self.costs.select]
        }
    }

    /// The device times of a WAL `fdatasync`'s two I/Os: the write-back of the WAL pages (a
    /// write into the device's cache) and the cache flush, which takes the rest of the
    /// device's WAL flush time.
    fn wal_ios(&self) -> (Amount, Amount) {
        let write = self.disk.data_write_ns();
        let w = write.mean();
        let (lo, hi) = self.disk.wal_flush_range_ns();
        let flush = Amount::Uniform((lo - w).max(0.0), (hi - w).max(0.0));
        (write, flush)
    }

    /// [`Self::backend_after`]'s loop alone, as if the backend had always been there.
    #[cfg(test)]
    fn backend(&self, conn: u32, t: u32) -> Rc<[Op]> {
        self.backend_after(conn, t, Vec::new())
    }

    /// The backend the postmaster forks for connection `conn`: a session of its own, as every
    /// postmaster child starts one (InitPostmasterChild's setsid), its start, ReadyForQuery (a
    /// sync wake-up of the connecting thread, which sleeps in its connect), then
    /// [`Self::backend_after`]'s loop.
    fn forked_backend(&self, conn: u32, t: u32) -> Rc<[Op]> {
        let start = vec![
            Op::Setsid,
            backend_work(pgbench::BACKEND_STARTUP_CYCLES),
            Op::Post { ch: ready(self.clients, conn), sync: true },
        ];
        self.backend_after(conn, t, start)
    }

    /// The backend of connection `conn`, driven by pgbench thread `t`. A read-write backend at
    /// a scale above 1 runs `BRANCH_DRAWS` transactions, each on a branch drawn for it, and
    /// starts over: a fixed sequence per connection, different between connections. A
    /// select-only backend that prunes runs `prune_every` transactions, one of which (a
    /// different one for each connection) sets the WAL writer's latch as it commits, before its
    /// reply.
    ///
    /// Every statement: wait for it, the protocol's work and the statement's own, the reply
    /// (waking the thread), the rest of the protocol's round. END's own work is split around
    /// the WAL flush's two I/Os, and the branch's row lock is released after them.
    ///
    /// The operations `start` run once, before the loop.
    fn backend_after(&self, conn: u32, t: u32, start: Vec<Op>) -> Rc<[Op]> {
        let top = start.len();
        let branches: Vec<u32> = if self.rw && self.scale > 1 {
            let mut rng = Pcg64::seed_from_u64(BRANCH_SEED ^ u64::from(conn));
            (0..BRANCH_DRAWS).map(|_| rng.gen_range(0..self.scale)).collect()
        } else if self.rw {
            vec![BRANCH]
        } else {
            vec![BRANCH; self.prune_every.max(1)]
        };
        let latch_at = self.prunes().then(|| conn as usize * LATCH_PHASE % self.prune_every);
        let (write, flush) = self.wal_ios();
        let mut p = start;
        let script = self.script();
        for (n, branch) in branches.into_iter().enumerate() {
            for (k, &cycles) in script.iter().enumerate() {
                p.push(Op::Wait { ch: connection(conn) });
                if self.rw && k == UPDATE_BRANCHES {
                    p.push(Op::Lock { id: branch });
                }
                if self.rw && k == END {
                    // Commit: the commit record and its flush, then the row locks' release.
                    let before = pgbench::END_BEFORE_FLUSH * cycles;
                    let between = pgbench::END_BETWEEN_IOS * cycles;
                    p.push(backend_work(pgbench::BACKEND_QUERY_CYCLES + before));
                    p.push(Op::Io { dev: DISK, service_ns: write, transfer_ns: Amount::ZERO });
                    p.push(backend_work(between));
                    p.push(Op::IoFlush {
                        dev: DISK,
                        service_ns: flush,
                        dispatch_cycles: kthreads::dispatch_cycles(Access::Write),
                    });
                    p.push(backend_work(cycles - before - between));
                    p.push(Op::Unlock { id: branch });
                } else {
                    p.push(backend_work(pgbench::BACKEND_QUERY_CYCLES + cycles));
                }
                if latch_at == Some(n) {
                    // SetLatch signals the WAL writer: a wake-up from process context, not sync.
                    p.push(Op::Post { ch: walwriter_latch(self.clients), sync: false });
                }
                if k == script.len() - 1 {
                    p.push(Op::Mark(Mark::Add { counter: TXN, amount: 1 }));
                }
                p.push(Op::Ask { ch: reply(t), answer: connection(conn), sync: true });
                p.push(backend_work(pgbench::BACKEND_IDLE_CYCLES));
            }
        }
        p.push(Op::Jump { to: top });
        p.into()
    }

    /// The postmaster: for each connection in turn, wait for its connect, accept it and fork
    /// its backend (program `conn`, see `programs`); then wait for connections that never come.
    fn postmaster(&self) -> Rc<[Op]> {
        let mut p: Vec<Op> = (0..self.clients)
            .flat_map(|c| {
                [
                    Op::Wait { ch: accept(self.clients, c) },
                    backend_work(pgbench::POSTMASTER_ACCEPT_CYCLES),
                    Op::Run { cycles: Amount::Fixed(kernel::FORK_CYCLES), mem_frac: pgbench::MEM_FRAC },
                    Op::Spawn { program: c, count: 1 },
                ]
            })
            .collect();
        let idle = p.len();
        p.extend([Op::Wait { ch: accept(self.clients, self.clients) }, Op::Jump { to: idle }]);
        p.into()
    }

    /// pgbench thread `t` driving connections `conns`: their first statements, then for every
    /// reply the next statement on that reply's connection. Its work per statement is split
    /// around the send. Before that, once every thread has started, it opens its connections
    /// one at a time (connect, then sleep until the backend is ready, as libpq's PQconnectdb
    /// does), and waits for the other threads to have theirs (threadRun's two barriers).
    fn thread(&self, t: u32, threads: u32, conns: impl Iterator<Item = u32> + Clone) -> Rc<[Op]> {
        let before = || client_work(pgbench::CLIENT_BEFORE_SEND * self.costs.client);
        let after = || client_work((1.0 - pgbench::CLIENT_BEFORE_SEND) * self.costs.client);
        // pgbench's main thread is thread 0: it creates the others (pthread_create, so each
        // starts by fork balancing from its CPU with its wakee state) before its own threadRun.
        let mut p: Vec<Op> = match t {
            0 => (1..threads).map(|k| Op::Spawn { program: self.thread_program(k), count: 1 }).collect(),
            _ => Vec::new(),
        };
        p.push(Op::Barrier { id: READY, n: threads });
        p.extend(conns.clone().flat_map(|c| {
            [
                client_work(pgbench::CONNECT_CYCLES),
                Op::Post { ch: accept(self.clients, c), sync: true },
                Op::Wait { ch: ready(self.clients, c) },
            ]
        }));
        p.push(Op::Barrier { id: GO, n: threads });
        p.extend(conns.flat_map(|c| [before(), Op::Post { ch: connection(c), sync: true }, after()]));
        let top = p.len();
        p.extend([Op::Take { ch: reply(t) }, before(), Op::Answer { sync: true }, after(), Op::Jump { to: top }]);
        p.into()
    }

    /// The connections of thread `t`: they are shared out evenly among the threads.
    fn connections(&self, t: u32, threads: u32) -> std::iter::StepBy<std::ops::Range<u32>> {
        (t..self.clients).step_by(threads as usize)
    }

    /// The program of pgbench thread `t` (1 or later), after the backends' (see `programs`).
    fn thread_program(&self, t: u32) -> u32 {
        self.clients + t - 1
    }

    /// Whether select-only transactions prune pages and wake the WAL writer.
    fn prunes(&self) -> bool {
        !self.rw && self.prune_every > 0
    }

    /// The WAL writer of a select-only run that prunes: wait for its latch, write the WAL out,
    /// wait again.
    fn latched_walwriter(&self) -> Rc<[Op]> {
        vec![
            Op::Wait { ch: walwriter_latch(self.clients) },
            Op::Run { cycles: Amount::Fixed(pgbench::WALWRITER_LATCH_CYCLES), mem_frac: pgbench::MEM_FRAC },
            Op::Jump { to: 0 },
        ]
        .into()
    }

    /// A background process (the WAL writer, the background writer): wake every
    /// `BACKGROUND_PERIOD_NS`, work, sleep again.
    fn background(cycles: f64) -> Rc<[Op]> {
        vec![
            Op::Sleep { ns: Amount::Fixed(pgbench::BACKGROUND_PERIOD_NS as f64) },
            Op::Run { cycles: Amount::Fixed(cycles), mem_frac: pgbench::MEM_FRAC },
            Op::Jump { to: 0 },
        ]
        .into()
    }
}

impl Workload for Pgbench {
    /// The server is up before pgbench starts: the postmaster, the WAL writer and the
    /// background writer (their comm is the postmaster's, as every PostgreSQL process's), each
    /// in a session of its own (a service's, and those its children start); the backends are
    /// forked as pgbench's threads connect.
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        let walwriter =
            if self.prunes() { self.latched_walwriter() } else { Self::background(pgbench::WALWRITER_CYCLES) };
        let mut tasks = vec![
            TaskSpec::new("postgres", self.postmaster()).own_session(),
            TaskSpec::new("postgres", walwriter).own_session(),
            TaskSpec::new("postgres", Self::background(pgbench::BGWRITER_CYCLES)).own_session(),
        ];
        // pgbench's main thread, which runs thread 0 and creates the others.
        let threads = self.threads(plat);
        tasks.push(TaskSpec::new("pgbench", self.thread(0, threads, self.connections(0, threads))));
        tasks
    }

    /// Program `c` is connection `c`'s backend, which the postmaster forks; then the pgbench
    /// threads after the first, which the main thread creates.
    fn programs(&self, plat: &Platform) -> Vec<Rc<[Op]>> {
        let threads = self.threads(plat);
        let backends = (0..self.clients).map(|c| self.forked_backend(c, c % threads));
        let others = (1..threads).map(|t| self.thread(t, threads, self.connections(t, threads)));
        backends.chain(others).collect()
    }

    fn devices(&self) -> Vec<DeviceSpec> {
        vec![self.disk.wal_spec()]
    }

    /// 0.5 s, or for read-write runs the time of 800 WAL flushes if longer (4.8 s on a disk).
    fn default_duration_ns(&self) -> u64 {
        let flushes = if self.rw { (800.0 * self.disk.mean_wal_flush_ns()) as u64 } else { 0 };
        flushes.max(500_000_000)
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        measure::metric(&INFO, measure::per_second(stats, TXN))
    }

    fn operations(&self, stats: &RunStats) -> Option<Operations> {
        Operations::counted(stats, TXN, "transactions")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model with the default device and costs.
    fn pgbench(clients: u32, threads: u32, rw: bool, scale: u32) -> Pgbench {
        Pgbench {
            clients,
            threads,
            rw,
            scale,
            prune_every: 0,
            disk: Disk::from_knob(DEVICE_KNOB.default as u64),
            costs: Costs::DEFAULT,
        }
    }

    fn waits(program: &[Op]) -> Vec<u32> {
        program.iter().filter_map(|op| if let Op::Wait { ch } = op { Some(*ch) } else { None }).collect()
    }

    /// The channels a program answers on with `Op::Ask`, and the return addresses it gives.
    fn asks(program: &[Op]) -> Vec<(u32, u32)> {
        program
            .iter()
            .filter_map(|op| if let Op::Ask { ch, answer, .. } = op { Some((*ch, *answer)) } else { None })
            .collect()
    }

    #[test]
    fn a_thread_polls_one_reply_queue_and_answers_on_the_replying_connection() {
        let pg = pgbench(16, 2, false, 1);
        // Thread 1 owns connections 1, 3, ..., 15: it sends their first statements, then takes
        // whichever reply comes first from its own queue and answers on that connection.
        let thread = pg.thread(1, 2, (1..16).step_by(2));
        let go = thread.iter().position(|op| matches!(op, Op::Barrier { id: GO, .. })).expect("the barrier");
        let first: Vec<u32> = thread[go..]
            .iter()
            .take_while(|op| !matches!(op, Op::Take { .. }))
            .filter_map(|op| if let Op::Post { ch, .. } = op { Some(*ch) } else { None })
            .collect();
        assert_eq!(first, (1..16).step_by(2).map(connection).collect::<Vec<_>>());
        let takes: Vec<u32> =
            thread.iter().filter_map(|op| if let Op::Take { ch } = op { Some(*ch) } else { None }).collect();
        assert_eq!(takes, vec![reply(1)]);
        assert_eq!(thread.iter().filter(|op| matches!(op, Op::Answer { .. })).count(), 1);
        // Backend 3 waits on its own connection and answers on its thread's queue, giving
        // its connection as the return address.
        let backend = pg.backend(3, 1);
        assert_eq!(waits(&backend), vec![connection(3)]);
        assert_eq!(asks(&backend), vec![(reply(1), connection(3))]);
        // Connections and reply queues never share a channel.
        assert!((0..16).all(|c| (0..2).all(|t| connection(c) != reply(t))));
    }

    #[test]
    fn read_write_runs_use_the_thread_count_mmtests_passes() {
        let text = include_str!("../../../../python/dvfslab/data/platforms/skylake-e3-1240v5.json");
        let plat = Platform::from_json(text, "skylake-e3-1240v5").expect("the preset parses");
        let rw = pgbench(8, 0, true, 172);
        let ro = pgbench(8, 0, false, 172);
        assert_eq!(rw.threads(&plat), 1);
        assert_eq!(rw.threads(&plat), ro.threads(&plat));
        // The main thread alone, which creates no other.
        let tasks = rw.tasks(&plat);
        assert_eq!(tasks.iter().filter(|t| t.name.starts_with("pgbench")).count(), 1);
        assert!(!tasks.iter().any(|t| t.program.iter().any(|op| matches!(op, Op::Spawn { program: 8.., .. }))));
        assert_eq!(rw.programs(&plat).len(), 8);
    }

    /// The mean work of each `Op::Run` in `program`, checking that each is drawn uniformly
    /// ±`COST_SPREAD_PCT` around it.
    fn spread_work(program: &[Op]) -> Vec<f64> {
        let spread = pgbench::COST_SPREAD_PCT / 100.0;
        program
            .iter()
            .filter_map(|op| if let Op::Run { cycles, .. } = op { Some(*cycles) } else { None })
            .map(|cost| match cost {
                Amount::Uniform(lo, hi) => {
                    let mean = (lo + hi) / 2.0;
                    assert!((lo - mean * (1.0 - spread)).abs() < 1.0 && (hi - mean * (1.0 + spread)).abs() < 1.0);
                    mean
                }
                other => panic!("cost {other:?} is not spread around its mean"),
            })
            .collect()
    }

    #[test]
    fn every_statement_cost_is_drawn_around_its_mean() {
        // A transaction's backend work: each statement's own, and the protocol's before and
        // after every one of its seven replies.
        let pg = pgbench(1, 0, true, 1);
        let work: f64 = spread_work(&pg.backend(0, 0)).iter().sum();
        let statements: f64 = pgbench::RW_STATEMENT_CYCLES.iter().sum();
        let protocol = 7.0 * (pgbench::BACKEND_QUERY_CYCLES + pgbench::BACKEND_IDLE_CYCLES);
        assert!((work - statements - protocol).abs() < 1.0, "{work} vs {statements} + {protocol}");
        // The thread's work per statement, split around its send.
        let thread = pg.thread(0, 1, 0..1);
        let per_statement: f64 = spread_work(&thread[thread.len() - 5..]).iter().sum();
        assert!((per_statement - Costs::DEFAULT.client).abs() < 1.0, "{per_statement}");
        // A select-only transaction: its SELECT and one round trip's protocol work.
        let ro = pgbench(1, 0, false, 1);
        let work: f64 = spread_work(&ro.backend(0, 0)).iter().sum();
        let expected = Costs::DEFAULT.select + pgbench::BACKEND_QUERY_CYCLES + pgbench::BACKEND_IDLE_CYCLES;
        assert!((work - expected).abs() < 1.0, "{work} vs {expected}");
    }

    #[test]
    fn both_sides_work_on_after_they_send() {
        let pg = pgbench(2, 0, false, 1);
        // The backend: the protocol's end of round after every reply, before it waits again.
        let backend = pg.backend(1, 1);
        for (i, op) in backend.iter().enumerate() {
            if matches!(op, Op::Ask { .. }) {
                assert!(
                    matches!(backend[i + 1], Op::Run { cycles, .. } if (cycles.mean() - pgbench::BACKEND_IDLE_CYCLES).abs() < 1.0)
                );
            }
        }
        // The thread: its work split around each send, the larger part before it.
        let thread = pg.thread(0, 1, 0..2);
        let take = thread.iter().position(|op| matches!(op, Op::Take { .. })).expect("a Take");
        let mean = |op: &Op| if let Op::Run { cycles, .. } = op { cycles.mean() } else { f64::NAN };
        assert!(matches!(thread[take + 2], Op::Answer { sync: true }));
        let (before, after) = (mean(&thread[take + 1]), mean(&thread[take + 3]));
        assert!((before / (before + after) - pgbench::CLIENT_BEFORE_SEND).abs() < 1e-9 && before > after);
    }

    #[test]
    fn a_commit_flushes_the_wal_in_two_ios_then_releases_its_branch() {
        let pg = pgbench(2, 0, true, 1);
        let backend = pg.backend(0, 0);
        let ios: Vec<usize> = backend
            .iter()
            .enumerate()
            .filter(|(_, op)| matches!(op, Op::Io { .. } | Op::IoFlush { .. }))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(ios.len(), 2, "one commit per transaction, two I/Os");
        // Write-back, a little of END's work, the cache flush, the rest of it, the lock's release.
        assert!(matches!(backend[ios[0]], Op::Io { .. }));
        assert!(matches!(backend[ios[0] + 1], Op::Run { .. }));
        assert_eq!(ios[1], ios[0] + 2);
        // The flush is dispatched by the CPU's kblockd worker, as a small request's.
        assert!(
            matches!(backend[ios[1]], Op::IoFlush { dispatch_cycles, .. } if dispatch_cycles == kthreads::dispatch_cycles(Access::Write))
        );
        assert!(matches!(backend[ios[1] + 1], Op::Run { .. }));
        assert!(matches!(backend[ios[1] + 2], Op::Unlock { id: BRANCH }));
        // The write-back takes the device's write time, and the two its WAL flush time.
        let service = |i: usize| match backend[i] {
            Op::Io { service_ns, .. } | Op::IoFlush { service_ns, .. } => service_ns,
            _ => unreachable!(),
        };
        let disk = Disk::from_knob(DEVICE_KNOB.default as u64);
        assert_eq!(service(ios[0]), disk.data_write_ns());
        assert!((service(ios[0]).mean() + service(ios[1]).mean() - disk.mean_wal_flush_ns()).abs() < 1e-6);
        // The device keeps group commits: a backend that flushes while another does joins the next.
        assert_eq!(pg.devices()[0].service, super::super::Service::GroupCommit { leader_iowait: true });
    }

    #[test]
    fn the_background_writers_are_postgres_processes_waking_every_200_ms() {
        let text = include_str!("../../../../python/dvfslab/data/platforms/kvm-guest-2cpu.json");
        let plat = Platform::from_json(text, "kvm-guest-2cpu").expect("the preset parses");
        let tasks = pgbench(2, 2, true, 10).tasks(&plat);
        let background: Vec<&TaskSpec> =
            tasks.iter().filter(|t| t.program.iter().any(|op| matches!(op, Op::Sleep { .. }))).collect();
        assert_eq!(background.len(), 2);
        for t in background {
            assert_eq!(t.name, "postgres");
            assert!(matches!(t.program[0], Op::Sleep { ns: Amount::Fixed(ns) } if ns == 200e6));
        }
    }

    /// The channels a program posts to, with the sync hint.
    fn posts(program: &[Op]) -> Vec<(u32, bool)> {
        program.iter().filter_map(|op| if let Op::Post { ch, sync } = op { Some((*ch, *sync)) } else { None }).collect()
    }

    #[test]
    fn select_only_backends_that_prune_set_the_wal_writers_latch() {
        let text = include_str!("../../../../python/dvfslab/data/platforms/kvm-guest-2cpu.json");
        let plat = Platform::from_json(text, "kvm-guest-2cpu").expect("the preset parses");
        // A vacuumed table (the default): nothing to prune, no latch, the WAL writer on its timer.
        let vacuumed = pgbench(2, 2, false, 1);
        assert!(posts(&vacuumed.backend(0, 0)).is_empty());
        let sleepers =
            vacuumed.tasks(&plat).iter().filter(|t| t.program.iter().any(|op| matches!(op, Op::Sleep { .. }))).count();
        assert_eq!(sleepers, 2);
        // The recording's table: one transaction in 21 prunes.
        let pg = Pgbench { prune_every: 21, ..pgbench(2, 2, false, 1) };
        let latch = walwriter_latch(2);
        assert!((0..2).all(|c| connection(c) != latch && reply(c) != latch));
        // One SetLatch, not sync, in its 21 transactions, before that transaction's
        // reply and in a different transaction for each connection.
        let at = |conn: u32| {
            let backend = pg.backend(conn, conn);
            assert_eq!(posts(&backend), vec![(latch, false)]);
            let post = backend.iter().position(|op| matches!(op, Op::Post { .. })).expect("a post");
            assert!(matches!(backend[post + 1], Op::Mark(_)) && matches!(backend[post + 2], Op::Ask { .. }));
            backend[..post].iter().filter(|op| matches!(op, Op::Ask { .. })).count()
        };
        assert_ne!(at(0), at(1));
        assert_eq!(waits(&pg.backend(0, 0)).len(), 21);
        // The WAL writer waits on the latch alone; the background writer keeps its timer.
        let tasks = pg.tasks(&plat);
        let latched: Vec<&TaskSpec> =
            tasks.iter().filter(|t| t.program.iter().any(|op| matches!(op, Op::Wait { ch } if *ch == latch))).collect();
        assert_eq!(latched.len(), 1);
        assert_eq!(latched[0].name, "postgres");
        assert!(!latched[0].program.iter().any(|op| matches!(op, Op::Sleep { .. })));
        // Read-write backends commit synchronously, flushing the WAL themselves: no latch.
        let rw = Pgbench { prune_every: 21, ..pgbench(2, 2, true, 10) };
        assert!(posts(&rw.backend(0, 0)).is_empty());
    }

    #[test]
    fn a_read_write_backend_counts_its_transaction_when_it_answers_the_last_statement() {
        let pg = pgbench(4, 0, true, 1);
        let backend = pg.backend(3, 0);
        assert_eq!(waits(&backend), vec![connection(3); 7]);
        let marks: Vec<usize> =
            backend.iter().enumerate().filter(|(_, op)| matches!(op, Op::Mark(_))).map(|(i, _)| i).collect();
        assert_eq!(marks.len(), 1);
        // After the commit (the WAL flush and the lock's release), just before the last answer.
        assert!(matches!(backend[marks[0] - 1], Op::Unlock { .. }));
        assert!(matches!(backend[marks[0] + 1], Op::Ask { .. }));
    }

    fn locked_branches(program: &[Op]) -> Vec<u32> {
        program.iter().filter_map(|op| if let Op::Lock { id } = op { Some(*id) } else { None }).collect()
    }

    #[test]
    fn read_write_transactions_pick_their_branch_among_the_scale() {
        // Scale 1: one transaction per program, always on the one branch.
        let serial = pgbench(8, 0, true, 1);
        assert_eq!(locked_branches(&serial.backend(5, 5)), vec![BRANCH]);
        // Scale 172: a sequence of draws within 0..172, each lock released after its commit.
        let pg = pgbench(8, 0, true, 172);
        let backend = pg.backend(5, 5);
        let drawn = locked_branches(&backend);
        assert_eq!(drawn.len(), BRANCH_DRAWS);
        assert!(drawn.iter().all(|&b| b < 172));
        let released: Vec<u32> =
            backend.iter().filter_map(|op| if let Op::Unlock { id } = op { Some(*id) } else { None }).collect();
        assert_eq!(released, drawn);
        // Spread over the branches, different for another connection, the same when rebuilt.
        let distinct: std::collections::BTreeSet<u32> = drawn.iter().copied().collect();
        assert!(distinct.len() > BRANCH_DRAWS / 2, "only {} distinct branches", distinct.len());
        assert_ne!(locked_branches(&pg.backend(6, 6)), drawn);
        assert_eq!(locked_branches(&pg.backend(5, 5)), drawn);
        // Read-only backends take no lock at any scale.
        let ro = pgbench(8, 0, false, 172);
        assert!(locked_branches(&ro.backend(5, 1)).is_empty());
    }

    #[test]
    fn the_postmaster_forks_each_backend_when_its_thread_connects() {
        let text = include_str!("../../../../python/dvfslab/data/platforms/kvm-guest-2cpu.json");
        let plat = Platform::from_json(text, "kvm-guest-2cpu").expect("the preset parses");
        let pg = pgbench(4, 2, false, 1);
        let tasks = pg.tasks(&plat);
        // No backend exists before the run: the postmaster forks one per connection.
        assert!(tasks.iter().all(|t| t.name == "postgres" || t.name == "pgbench"));
        // pgbench's main thread runs thread 0 and first creates thread 1 (program 4, after
        // the four backends'), which starts at the first barrier.
        let main = &tasks.iter().find(|t| t.name == "pgbench").expect("pgbench's main thread").program;
        assert_eq!(main[0], Op::Spawn { program: 4, count: 1 });
        assert_eq!(main[1], Op::Barrier { id: READY, n: 2 });
        let postmaster = &tasks[0].program;
        let spawned: Vec<u32> = postmaster
            .iter()
            .filter_map(|op| if let Op::Spawn { program, .. } = op { Some(*program) } else { None })
            .collect();
        assert_eq!(spawned, vec![0, 1, 2, 3]);
        // Each fork follows that connection's connect, and the postmaster then waits for good.
        let accepts = waits(postmaster);
        assert_eq!(accepts, (0..=4).map(|c| accept(4, c)).collect::<Vec<_>>());
        // Thread 1 (connections 1 and 3) connects to each in turn and sleeps until its backend
        // is ready, then waits for the other thread before its first statement.
        let thread = pg.thread(1, 2, [1, 3].into_iter());
        assert_eq!(thread[0], Op::Barrier { id: READY, n: 2 });
        let go = thread.iter().position(|op| *op == Op::Barrier { id: GO, n: 2 }).expect("the barrier");
        assert_eq!(posts(&thread[..go]), vec![(accept(4, 1), true), (accept(4, 3), true)]);
        assert_eq!(waits(&thread[..go]), vec![ready(4, 1), ready(4, 3)]);
        assert_eq!(posts(&thread[go..])[0], (connection(1), true));
        // The forked backend of connection 3 starts a session of its own, reports ready to
        // its thread, then serves statements in the loop the unforked one has, which never
        // returns to the start.
        let programs = pg.programs(&plat);
        assert_eq!(programs.len(), 5);
        assert_eq!(programs[4], thread);
        let forked = &programs[3];
        assert_eq!(forked[0], Op::Setsid);
        assert_eq!(posts(&forked[..3]), vec![(ready(4, 3), true)]);
        let steady = pg.backend(3, 1);
        assert_eq!(&forked[3..forked.len() - 1], &steady[..steady.len() - 1]);
        assert_eq!(forked.last(), Some(&Op::Jump { to: 3 }));
        // Every channel is distinct.
        let mut chans: Vec<u32> = (0..4).map(connection).chain((0..2).map(reply)).collect();
        chans.push(walwriter_latch(4));
        chans.extend((0..=4).map(|c| accept(4, c)));
        chans.extend((0..4).map(|c| ready(4, c)));
        let distinct: std::collections::BTreeSet<u32> = chans.iter().copied().collect();
        assert_eq!(distinct.len(), chans.len());
    }
}
