//! seq-read and random-read: one process reading a large file on disk through the page cache,
//! timed (campaign intel-pstate-load-based: "random and sequential reads of a
//! 50 GB file on a disk").
//!
//! ```text
//!   seq-read:    for each readahead window: io(window, sequential); cpu(copy window)
//!   random-read: for each record: cpu(syscall); io(record, random); cpu(copy record)
//! ```
//!
//! The reader sleeps in iowait for every device request, so these are device-bound and the
//! governor matters through iowait boost and the short CPU bursts between requests.
//!
//! Metric: Elapsed in seconds (lower is better) to read `size_mb` (the campaign reports time,
//! MB/s and watts; MB/s = size_mb / elapsed). `size_mb=51200` is the campaign's 50 GB file
//! for seq-read; random-read reads `size_mb` in random records of `bs_kb`. Shortcomings:
//! readahead is synchronous (the next window is requested when the reader needs it, not
//! ahead of it); the I/O completion's work is charged to the reader.

use super::estimates::page_cache as est;
use super::storage::{self, Access};
use super::{measure, pieces, sample, Better, DeviceSpec, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const SEQ_INFO: WorkloadInfo = WorkloadInfo {
    name: "seq-read",
    description: "sequential buffered read of a large file on disk (readahead windows, iowait)",
    metric: "elapsed",
    unit: "s",
    better: Better::Lower,
    knobs: &[
        Knob::new("size_mb", "MiB", 256.0, 1.0, 1e8, "data to read; 51200 = the campaign's 50 GB file").integer(),
        storage::knob(2.0),
    ],
    build: |k: &KnobValues| {
        Box::new(FileRead {
            random: false,
            bytes: k.get("size_mb") * 1048576.0,
            record: est::READAHEAD_BYTES,
            device: k.get_u64("device"),
        })
    },
};

pub const RANDOM_INFO: WorkloadInfo = WorkloadInfo {
    name: "random-read",
    description: "random buffered reads of records of a large file on disk (one seek each, iowait)",
    metric: "elapsed",
    unit: "s",
    better: Better::Lower,
    knobs: &[
        Knob::new("size_mb", "MiB", 4.0, 1.0, 1e8, "data to read in random records").integer(),
        Knob::new("bs_kb", "KiB", 4.0, 1.0, 16384.0, "record size").integer(),
        storage::knob(2.0),
    ],
    build: |k: &KnobValues| {
        Box::new(FileRead {
            random: true,
            bytes: k.get("size_mb") * 1048576.0,
            record: k.get("bs_kb") * 1024.0,
            device: k.get_u64("device"),
        })
    },
};

/// Counter 0: requests completed.
const DONE: u16 = 0;
/// Requests built at a time (see `pieces`): the campaign's 4 GiB read (32768 windows) is one.
const REQUESTS_PER_PIECE: usize = 65536;

struct FileRead {
    random: bool,
    bytes: f64,
    /// Bytes per device request: the readahead window, or the random record.
    record: f64,
    device: u64,
}

impl FileRead {
    fn requests(&self) -> usize {
        ((self.bytes / self.record).ceil() as usize).max(1)
    }
}

impl Workload for FileRead {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        let access = if self.random { Access::RandomRead } else { Access::SequentialRead };
        let device = storage::device(self.device);
        let (service, transfer) = (storage::access_ns(device, access), storage::transfer_ns(device, self.record));
        let random = self.random;
        let copy = est::COPY_CYCLES_PER_BYTE * self.record;
        let reader = pieces::program(self.requests(), REQUESTS_PER_PIECE, vec![Op::Exit], move |piece, steps, p| {
            for b in sample::layout(steps.len(), service.len(), pieces::salt(7, piece)) {
                if random {
                    // The call and the page-cache miss before the request goes out.
                    p.push(Op::Run { cycles: Amount::Fixed(est::COPY_CYCLES_PER_CALL), mem_frac: 0.0 });
                }
                p.extend([
                    Op::Io { dev: 0, service_ns: service[b], transfer_ns: transfer },
                    Op::Run {
                        cycles: Amount::Fixed(copy + if random { 0.0 } else { est::COPY_CYCLES_PER_CALL }),
                        mem_frac: 0.0,
                    },
                    Op::Mark(Mark::Add { counter: DONE, amount: 1 }),
                ]);
            }
        });
        vec![TaskSpec::new("reader", reader)]
    }

    fn devices(&self) -> Vec<DeviceSpec> {
        vec![storage::spec(storage::device(self.device))]
    }

    fn default_duration_ns(&self) -> u64 {
        // A cap: the run ends when the data is read.
        3_600_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let info = if self.random { &RANDOM_INFO } else { &SEQ_INFO };
        measure::metric(info, measure::elapsed_s(stats, DONE as usize, self.requests() as u64))
    }
}
