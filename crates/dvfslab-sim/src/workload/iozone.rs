//! iozone write / rewrite: one process writing a file in records through the page cache
//! (`iozone -i 0 [-e]`).
//!
//! The writer copies each record into the page cache (system time: frequency-sensitive).
//! Dirty data is handed to a flusher kworker in writeback chunks. The flusher starts once
//! `dirty_background_ratio` of memory is dirty (or at fsync / expiry for a small file) and
//! writes chunks to the device, sleeping in iowait. When `dirty_ratio` of memory is dirty the
//! writer blocks until a chunk is clean (balance_dirty_pages). With `fsync=1` (`-e`) the timed
//! part ends when the last chunk is on the device.
//!
//! ```text
//!   writer:  for each chunk: [wait for a clean chunk if dirty ≥ dirty_ratio]
//!                            cpu(records · (c_copy(rec) + c_fs)); hand the chunk to the flusher
//!            [fsync: wait until everything is written]
//!   flusher: wait for background threshold; for each chunk: cpu(c_wb · pages); io(chunk)
//! ```
//!
//! Metric: records written per second of the timed part (op/s, higher is better), as
//! `iozone -O` prints (KB/s = op/s × `rec_kb`). Defaults follow the powernv campaign
//! (file 200704 KB); MMTests' iozone used 4 KiB records. Shortcomings: the writer is throttled
//! by a hard limit instead of balance_dirty_pages' proportional pauses; writeback submits one
//! chunk at a time; the fsync wait is not an iowait sleep; rewrite differs from write only in
//! the filesystem cost per record (the first write pass is not simulated).

use std::rc::Rc;

use super::estimates::page_cache as est;
use super::storage::{self, Access};
use super::{measure, pieces, Better, DeviceSpec, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

const OP_CHOICES: &[(&str, f64)] = &[("write", 0.0), ("rewrite", 1.0)];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "iozone",
    description: "iozone write/rewrite: page-cache writer, flusher writeback, dirty throttling, fsync",
    metric: "ops",
    unit: "op/s",
    better: Better::Higher,
    knobs: &[
        Knob::new("op", "test", 0.0, 0.0, 1.0, "0 write, 1 rewrite").choices(OP_CHOICES),
        Knob::new("file_kb", "KiB", 200704.0, 4.0, 1e9, "file size").integer(),
        Knob::new("rec_kb", "KiB", 4.0, 1.0, 16384.0, "record size").integer(),
        Knob::new("fsync", "bool", 1.0, 0.0, 1.0, "1: include the final fsync in the timing (-e)").integer(),
        Knob::new("mem_mb", "MiB", 8192.0, 64.0, 1e8, "available memory, for the dirty thresholds").integer(),
        storage::knob(1.0),
    ],
    build: |k: &KnobValues| {
        Box::new(Iozone {
            rewrite: k.get_u64("op") == 1,
            file_bytes: k.get("file_kb") * 1024.0,
            rec_bytes: k.get("rec_kb") * 1024.0,
            fsync: k.get_u64("fsync") == 1,
            mem_bytes: k.get("mem_mb") * 1048576.0,
            device: k.get_u64("device"),
        })
    },
};

/// Channels: chunks dirtied (writer → flusher), chunks cleaned (flusher → throttled writer),
/// writeback start, everything written (fsync).
const DIRTY_CH: u32 = 0;
const CLEAN_CH: u32 = 1;
const KICK_CH: u32 = 2;
const SYNCED_CH: u32 = 3;
/// Counter 0: records written. Latency slot 0: the timed part.
const RECORDS: u16 = 0;
const TIMED: u32 = 0;
const PAGE_BYTES: f64 = 4096.0;
/// Chunks built at a time (see `pieces`).
const CHUNKS_PER_PIECE: usize = 4096;

struct Iozone {
    rewrite: bool,
    file_bytes: f64,
    rec_bytes: f64,
    fsync: bool,
    mem_bytes: f64,
    device: u64,
}

/// How the file is cut into chunks, and the thresholds in chunks.
#[derive(Clone, Copy)]
struct Layout {
    records: u64,
    per_chunk: u64,
    chunks: usize,
    background: usize,
    hard: usize,
}

impl Iozone {
    fn layout(&self) -> Layout {
        let records = ((self.file_bytes / self.rec_bytes).floor() as u64).max(1);
        let per_chunk = ((est::WRITEBACK_CHUNK_BYTES / self.rec_bytes).floor() as u64).max(1);
        let chunk_bytes = per_chunk as f64 * self.rec_bytes;
        let chunks = records.div_ceil(per_chunk) as usize;
        let thresh = |ratio: f64| ((ratio * self.mem_bytes / chunk_bytes).floor() as usize).max(1);
        Layout {
            records,
            per_chunk,
            chunks,
            background: thresh(est::DIRTY_BACKGROUND_RATIO),
            hard: thresh(est::DIRTY_RATIO),
        }
    }

    fn writer(&self, l: Layout) -> Rc<[Op]> {
        let fs = if self.rewrite { est::FS_REWRITE_CYCLES } else { est::FS_WRITE_CYCLES };
        let per_record = est::COPY_CYCLES_PER_CALL + est::COPY_CYCLES_PER_BYTE * self.rec_bytes + fs;
        let mut tail = Vec::new();
        // A file below the background threshold is written back at fsync or on expiry.
        if l.chunks < l.background {
            tail.push(Op::Post { ch: KICK_CH, sync: false });
        }
        if self.fsync {
            tail.push(Op::Wait { ch: SYNCED_CH });
        }
        tail.extend([Op::Mark(Mark::End(TIMED)), Op::Exit]);
        pieces::program(l.chunks, CHUNKS_PER_PIECE, tail, move |_, chunks, w| {
            if chunks.start == 0 {
                w.push(Op::Mark(Mark::Start(TIMED)));
            }
            for i in chunks {
                if i >= l.hard {
                    w.push(Op::Wait { ch: CLEAN_CH });
                }
                let n = l.chunk_records(i);
                w.extend([
                    Op::Run { cycles: Amount::Fixed(n as f64 * per_record), mem_frac: 0.0 },
                    Op::Post { ch: DIRTY_CH, sync: false },
                    Op::Mark(Mark::Add { counter: RECORDS, amount: n }),
                ]);
                if i + 1 == l.background {
                    w.push(Op::Post { ch: KICK_CH, sync: false });
                }
            }
        })
    }

    fn flusher(&self, l: Layout) -> Rc<[Op]> {
        let dev = storage::device(self.device);
        let service = storage::access_ns(dev, Access::Write);
        let rec_bytes = self.rec_bytes;
        let tail = vec![Op::Post { ch: SYNCED_CH, sync: false }, Op::Exit];
        pieces::program(l.chunks, CHUNKS_PER_PIECE, tail, move |_, chunks, f| {
            if chunks.start == 0 {
                f.push(Op::Wait { ch: KICK_CH });
            }
            for i in chunks {
                let bytes = l.chunk_records(i) as f64 * rec_bytes;
                let pages = (bytes / PAGE_BYTES).ceil();
                f.extend([
                    Op::Wait { ch: DIRTY_CH },
                    Op::Run { cycles: Amount::Fixed(pages * est::WRITEBACK_CYCLES_PER_PAGE), mem_frac: 0.0 },
                    Op::Io {
                        dev: 0,
                        service_ns: service[i % service.len()],
                        transfer_ns: storage::transfer_ns(dev, bytes),
                    },
                    Op::Post { ch: CLEAN_CH, sync: false },
                ]);
            }
        })
    }
}

impl Layout {
    /// Records in chunk `i`.
    fn chunk_records(&self, i: usize) -> u64 {
        self.per_chunk.min(self.records - i as u64 * self.per_chunk)
    }
}

impl Workload for Iozone {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        let l = self.layout();
        vec![TaskSpec::new("iozone", self.writer(l)), TaskSpec::new("kworker/flush", self.flusher(l))]
    }

    fn devices(&self) -> Vec<DeviceSpec> {
        vec![storage::spec(storage::device(self.device))]
    }

    fn default_duration_ns(&self) -> u64 {
        // A cap: the run ends when the file is written back.
        3_600_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let records = self.layout().records as f64;
        let value = match stats.latencies_ns.get(TIMED as usize).and_then(|v| v.first()) {
            Some(&ns) if ns > 0 => records / (ns as f64 * 1e-9),
            // Cut short: the rate so far.
            _ => measure::per_second(stats, RECORDS),
        };
        measure::metric(&INFO, value)
    }
}
