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
//! and a saturated thread is smeared over all CPUs.) A backend counts its transaction when it
//! answers the last statement.
//!
//! - **read-only** (`rw=0`, select-only): one SELECT per transaction, one round trip.
//! - **read-write** (`rw=1`, tpcb-like): seven statements per transaction. Each transaction
//!   updates one of the `scale` branch rows, picked at random: the backend takes its row lock
//!   at `UPDATE pgbench_branches` and holds it until `END` has flushed the WAL (an I/O on the
//!   `device`, slept through in iowait). At scale 1 every transaction updates the same row and
//!   they serialise on it; at a scale far above the client count they rarely meet. (The ten
//!   teller rows per branch, locked one statement earlier, are left out: the branch lock is
//!   the tighter one.)
//!
//! The walwriter wakes every 200 ms. Costs are `estimates::pgbench`, the main ones knobs
//! (`client_us`, `select_us`, `rw_scale`); every statement's cost, client and backend, is
//! drawn around its mean (`COST_SPREAD_PCT`).
//!
//! Metric: transactions per second over the run (higher is better). MMTests takes the
//! harmonic mean of 4-second batches after an 8-second warm-up; runs here are shorter than
//! that and the model has no per-second samples, so it is the plain rate over the whole run.

use std::rc::Rc;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use super::disk::{Disk, DEVICE_KNOB};
use super::estimates::{ipc, pgbench, us_cycles};
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
        Box::new(Pgbench { clients, threads, rw, scale, disk: Disk::from_knob(k.get_u64("device")), costs })
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

fn client_work(cycles: f64) -> Op {
    Op::Run { cycles: Amount::jittered(cycles, pgbench::COST_SPREAD_PCT), mem_frac: ipc::MEM_FRAC }
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

    /// The backend of connection `conn`, driven by pgbench thread `t`. A read-write backend at
    /// a scale above 1 runs `BRANCH_DRAWS` transactions, each on a branch drawn for it, and
    /// starts over: a fixed sequence per connection, different between connections.
    fn backend(&self, conn: u32, t: u32) -> Rc<[Op]> {
        let branches: Vec<u32> = if self.rw && self.scale > 1 {
            let mut rng = Pcg64::seed_from_u64(BRANCH_SEED ^ u64::from(conn));
            (0..BRANCH_DRAWS).map(|_| rng.gen_range(0..self.scale)).collect()
        } else {
            vec![BRANCH]
        };
        let mut p = Vec::new();
        let script = self.script();
        for branch in branches {
            for (k, &cycles) in script.iter().enumerate() {
                p.push(Op::Wait { ch: connection(conn) });
                if self.rw && k == UPDATE_BRANCHES {
                    p.push(Op::Lock { id: branch });
                }
                p.push(Op::Run {
                    cycles: Amount::jittered(cycles, pgbench::COST_SPREAD_PCT),
                    mem_frac: pgbench::MEM_FRAC,
                });
                if self.rw && k == END {
                    // Commit: flush the WAL, then release the row locks.
                    p.push(Op::Io { dev: DISK, service_ns: self.disk.wal_flush_ns(), transfer_ns: Amount::ZERO });
                    p.push(Op::Unlock { id: branch });
                }
                if k == script.len() - 1 {
                    p.push(Op::Mark(Mark::Add { counter: TXN, amount: 1 }));
                }
                p.push(Op::Ask { ch: reply(t), answer: connection(conn), sync: true });
            }
        }
        p.push(Op::Jump { to: 0 });
        p.into()
    }

    /// pgbench thread `t` driving connections `conns`: their first statements, then for every
    /// reply the next statement on that reply's connection.
    fn thread(&self, t: u32, conns: impl Iterator<Item = u32>) -> Rc<[Op]> {
        let work = || client_work(self.costs.client);
        let mut p: Vec<Op> = conns.flat_map(|c| [work(), Op::Post { ch: connection(c), sync: true }]).collect();
        let top = p.len();
        p.extend([Op::Take { ch: reply(t) }, work(), Op::Answer { sync: true }, Op::Jump { to: top }]);
        p.into()
    }

    fn walwriter() -> Rc<[Op]> {
        vec![
            Op::Sleep { ns: Amount::Fixed(pgbench::WALWRITER_PERIOD_NS as f64) },
            Op::Run { cycles: Amount::Fixed(pgbench::WALWRITER_CYCLES), mem_frac: pgbench::MEM_FRAC },
            Op::Jump { to: 0 },
        ]
        .into()
    }
}

impl Workload for Pgbench {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        // The connections are shared out evenly among the threads.
        let threads = self.threads(plat);
        let mut tasks: Vec<TaskSpec> =
            (0..self.clients).map(|c| TaskSpec::new(format!("postgres-{c}"), self.backend(c, c % threads))).collect();
        tasks.extend((0..threads).map(|t| {
            let conns = (t..self.clients).step_by(threads as usize);
            TaskSpec::new(format!("pgbench-{t}"), self.thread(t, conns))
        }));
        tasks.push(TaskSpec::new("walwriter", Self::walwriter()));
        tasks
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
        let thread = pg.thread(1, (1..16).step_by(2));
        let first: Vec<u32> = thread
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
        let threads = rw.tasks(&plat).iter().filter(|t| t.name.starts_with("pgbench-")).count();
        assert_eq!(threads, 1);
    }

    #[test]
    fn every_statement_cost_is_drawn_around_its_mean() {
        let pg = pgbench(1, 0, true, 1);
        let spread = pgbench::COST_SPREAD_PCT / 100.0;
        let backend = pg.backend(0, 0);
        let costs: Vec<&Amount> =
            backend.iter().filter_map(|op| if let Op::Run { cycles, .. } = op { Some(cycles) } else { None }).collect();
        assert_eq!(costs.len(), pgbench::RW_STATEMENT_CYCLES.len());
        for (cost, &mean) in costs.iter().zip(pgbench::RW_STATEMENT_CYCLES.iter()) {
            match cost {
                Amount::Uniform(lo, hi) => {
                    assert!((lo - mean * (1.0 - spread)).abs() < 1.0 && (hi - mean * (1.0 + spread)).abs() < 1.0);
                }
                other => panic!("backend statement cost {other:?} is not spread around {mean}"),
            }
        }
        assert!(
            matches!(client_work(Costs::DEFAULT.client), Op::Run { cycles: Amount::Uniform(lo, hi), .. } if lo < hi)
        );
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
}
