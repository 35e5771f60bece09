//! postmark: NetApp's PostMark small-file benchmark, as the Phoronix Test Suite's
//! `pts/postmark` runs it: a pool of `files` files of `min_kb`–`max_kb`, then `transactions`
//! transactions, then the pool deleted (25,000 transactions on 500 files of 5–512 KB).
//!
//! PostMark is one single-threaded process. Each transaction is a pair: create a file or
//! delete one (even odds), then read a whole file or append to one (even odds), through
//! buffered stdio (its default), so the kernel sees 4 KiB reads and writes. Everything stays
//! in the page cache: the pool (about 130 MB) is far below the dirty-writeback threshold, and
//! files are deleted long before the flusher would write them. So the load is one CPU-bound
//! task making many system calls, with no sleep at all: the governor's question is only how
//! fast it reaches and holds the top P-state, and on which CPU the task ends up.
//!
//! Model: the pool's creation, the transactions and the final deletion as one task's work.
//! Which half of each pair runs is drawn once per transaction from a fixed seed (PostMark's
//! own `seed`), the size of each file touched at run time: uniform between the bounds, and an
//! append's amount uniform with the mean of a size drawn as a file's and cut to the room left
//! below the upper bound (a third of the span). Costs are `estimates::postmark` on top of the
//! page-cache path of `estimates::page_cache`.
//!
//! Metric: transactions per second of the transaction phase, as PostMark prints it (higher is
//! better). Shortcomings: the pool's file sizes are redrawn at every touch rather than
//! tracked (appends do not make files grow), and the subdirectory and buffering options are
//! fixed at PTS's defaults.

use std::rc::Rc;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use super::estimates::{page_cache, postmark};
use super::{measure, pieces, Better, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "postmark",
    description: "PostMark: one process creating, deleting, reading and appending small files in the page cache",
    metric: "tps",
    unit: "txn/s",
    better: Better::Higher,
    knobs: &[
        // The program holds three operations per transaction: the cap keeps it near 100 MB.
        Knob::new("transactions", "transactions", 25_000.0, 1.0, 1e6, "transactions (set transactions)").integer(),
        Knob::new("files", "files", 500.0, 1.0, 1e7, "files in the pool (set number)").integer(),
        Knob::new("min_kb", "KiB", 5.0, 1.0, 1e6, "smallest file (set size, low bound)"),
        Knob::new("max_kb", "KiB", 512.0, 1.0, 1e6, "largest file (set size, high bound)"),
    ],
    build: |k: &KnobValues| {
        let (min_kb, max_kb) = (k.get("min_kb"), k.get("max_kb"));
        Box::new(Postmark {
            transactions: k.get_u64("transactions"),
            files: k.get_u64("files"),
            min_bytes: min_kb.min(max_kb) * 1024.0,
            max_bytes: max_kb.max(min_kb) * 1024.0,
        })
    },
};

/// Counter of completed transactions.
const TRANSACTIONS: u16 = 0;
/// Timing slot of the transaction phase.
const PHASE: u32 = 0;
/// Transactions built at a time (see `pieces`): the default 25,000 are one piece.
const TRANSACTIONS_PER_PIECE: usize = 65536;

struct Postmark {
    transactions: u64,
    files: u64,
    min_bytes: f64,
    max_bytes: f64,
}

/// Work of moving `bytes` (a draw of `Amount`) through the page cache in 4 KiB calls, plus
/// `per_record` for each record: cycles = bytes · (per-byte copy + (per-call + per_record) /
/// record), linear in the size, so a uniform size gives a uniform cost.
fn through_page_cache(bytes: (f64, f64), per_record: f64) -> (f64, f64) {
    let per_byte = page_cache::COPY_CYCLES_PER_BYTE
        + (page_cache::COPY_CYCLES_PER_CALL + per_record) / postmark::STDIO_RECORD_BYTES;
    (bytes.0 * per_byte, bytes.1 * per_byte)
}

/// The work of one file operation: a fixed part (the metadata calls) and a part that grows
/// with the bytes it moves, uniform between its bounds.
#[derive(Clone, Copy)]
struct Cost {
    fixed: f64,
    sized: (f64, f64),
}

impl Cost {
    fn op(self) -> Op {
        let (lo, hi) = self.sized;
        Op::Run { cycles: Amount::Uniform(self.fixed + lo, self.fixed + hi), mem_frac: postmark::MEM_FRAC }
    }

    fn mean(self) -> f64 {
        self.fixed + (self.sized.0 + self.sized.1) / 2.0
    }

    /// `n` of them as one piece of work of their mean total.
    fn times(self, n: u64) -> Op {
        Op::Run { cycles: Amount::Fixed(n as f64 * self.mean()), mem_frac: postmark::MEM_FRAC }
    }
}

impl Postmark {
    fn sizes(&self) -> (f64, f64) {
        (self.min_bytes, self.max_bytes)
    }

    fn create(&self) -> Cost {
        Cost {
            fixed: postmark::CREATE_CYCLES + postmark::CLOSE_CYCLES,
            sized: through_page_cache(self.sizes(), page_cache::FS_WRITE_CYCLES),
        }
    }

    fn delete(&self) -> Cost {
        let pages = (self.min_bytes / 4096.0, self.max_bytes / 4096.0);
        Cost {
            fixed: postmark::UNLINK_CYCLES,
            sized: (pages.0 * postmark::FREE_CYCLES_PER_PAGE, pages.1 * postmark::FREE_CYCLES_PER_PAGE),
        }
    }

    fn read(&self) -> Cost {
        Cost { fixed: postmark::OPEN_CYCLES + postmark::CLOSE_CYCLES, sized: through_page_cache(self.sizes(), 0.0) }
    }

    /// An append moves a third of the span on average: the mean of min(a size drawn as a
    /// file's, the room left below the upper bound) for a uniformly sized file.
    fn append(&self) -> Cost {
        let amount = (0.0, 2.0 / 3.0 * (self.max_bytes - self.min_bytes));
        Cost {
            fixed: postmark::OPEN_CYCLES + postmark::CLOSE_CYCLES,
            sized: through_page_cache(amount, page_cache::FS_WRITE_CYCLES),
        }
    }

    /// The pool's creation, the transactions (built in pieces as the run reaches them, each
    /// piece drawing from its own seed), the pool's deletion.
    fn program(&self) -> Rc<[Op]> {
        let (create, delete, read, append) = (self.create(), self.delete(), self.read(), self.append());
        let files = self.files;
        // The pool's deletion, left out of the transaction rate as PostMark leaves it.
        let tail = vec![Op::Mark(Mark::End(PHASE)), delete.times(files), Op::Exit];
        pieces::program(self.transactions as usize, TRANSACTIONS_PER_PIECE, tail, move |piece, steps, p| {
            if steps.start == 0 {
                // The pool, in one piece of work: `files` creations.
                p.extend([create.times(files), Op::Mark(Mark::Start(PHASE))]);
            }
            let mut rng = Pcg64::seed_from_u64(pieces::salt(postmark::SEED, piece));
            for _ in steps {
                p.push(if rng.gen_bool(0.5) { create.op() } else { delete.op() });
                p.push(if rng.gen_bool(0.5) { read.op() } else { append.op() });
                p.push(Op::Mark(Mark::Add { counter: TRANSACTIONS, amount: 1 }));
            }
        })
    }
}

impl Workload for Postmark {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        vec![TaskSpec::new("postmark", self.program())]
    }

    fn default_duration_ns(&self) -> u64 {
        // A cap: the run ends when the process exits.
        3_600_000_000_000
    }

    /// Transactions over the transaction phase's time; a run cut short before the phase
    /// ended is rated over the whole run so far (its pool creation included).
    fn metric(&self, stats: &RunStats) -> Metric {
        let done = stats.counters.get(TRANSACTIONS as usize).copied().unwrap_or(0) as f64;
        let phase_ns = match stats.latencies_ns.get(PHASE as usize).and_then(|s| s.first()) {
            Some(&ns) => ns,
            None => stats.sim_time_ns,
        };
        measure::metric(&INFO, if phase_ns > 0 { done / (phase_ns as f64 * 1e-9) } else { 0.0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts_default() -> Postmark {
        Postmark { transactions: 2000, files: 500, min_bytes: 5.0 * 1024.0, max_bytes: 512.0 * 1024.0 }
    }

    #[test]
    fn each_transaction_is_a_pair_drawn_at_even_odds_from_a_fixed_seed() {
        let pm = pts_default();
        let program = pm.program();
        let marks = program.iter().filter(|op| matches!(op, Op::Mark(Mark::Add { .. }))).count();
        assert_eq!(marks, 2000);
        let (create, read) = (pm.create().op(), pm.read().op());
        let creates = program.iter().filter(|op| **op == create).count();
        let reads = program.iter().filter(|op| **op == read).count();
        // Binomial(2000, 0.5): 1000 ± 3σ (σ ≈ 22).
        assert!((934..=1066).contains(&creates), "{creates} creates");
        assert!((934..=1066).contains(&reads), "{reads} reads");
        assert_eq!(pm.program(), program, "the same sequence every build");
    }

    #[test]
    fn costs_grow_with_the_bytes_each_operation_moves() {
        let pm = pts_default();
        let (create, delete, read, append) =
            (pm.create().mean(), pm.delete().mean(), pm.read().mean(), pm.append().mean());
        // Writing new blocks costs more than reading them; unlinking costs least; an append
        // moves a third of the span on average, less than a whole file.
        assert!(create > read && read > delete, "create {create} read {read} delete {delete}");
        assert!(append < create, "append {append} create {create}");
        let small = Postmark { max_bytes: 16.0 * 1024.0, ..pts_default() };
        // Small files cost little more than their open and close.
        assert!(small.read().mean() < read / 5.0);
    }
}
