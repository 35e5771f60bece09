//! dbench4: N clients replaying the NBENCH loadfile against a local filesystem
//! (spec/workloads.md A1; MMTests `config-io-dbench4-async`: fileio backend, no -s/-S/-F).
//!
//! Each client loops over the loadfile with no think time. Every operation is a burst of
//! VFS work in system time (`estimates::dbench`). `Flush` is `fsync(fd)` on XFS, two waits on
//! the storage device all clients share (`device` knob, see `disk.rs`): the file's own dirty
//! pages are written and waited for in iowait (`file_write_and_wait_range`, clients side by
//! side), then the log is forced, a group commit that a kernel worker writes while every
//! caller waits for it outside io_schedule (`xlog_wait`), so it wakes without the flag.
//! Left out: directory and journal lock contention (each client works in its own directory;
//! a sleeping mutex would turn the short shared sections into a convoy of idle exits, where
//! the kernel spins), dirty-page throttling, the flusher and journal threads, and waits for
//! free log space: MMTests sizes the filesystem by the client count, which gives XFS its
//! 10 MB minimum log, and at many clients transactions wait for checkpoints and metadata
//! writeback to free it (docs/validation.md, what the model gets wrong, item 3).
//!
//! Metric, as MMTests' default dbench4 `loadfile` metric: the duration of each pass over the
//! loadfile of each client ("completed in X ms"), summarised by its arithmetic mean (lower is
//! better). Passes cut by the end of the run are not counted; if no pass completed, the value
//! is the run's length (a lower bound) — give a longer duration.

use std::rc::Rc;

use super::disk::{Disk, DEVICE_KNOB};
use super::estimates::{dbench, ipc, nbench};
use super::loadfile::{synthesise, Line, NbOp};
use super::{measure, Better, DeviceSpec, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::platform::Platform;
use crate::spec::{Knob, KnobValues};
use crate::task::{Amount, Mark, Op};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "dbench4",
    description: "dbench's loadfile on a local filesystem with fsync on Flush (dbench4 async)",
    metric: "loadfile",
    unit: "ms",
    better: Better::Lower,
    knobs: &[
        Knob::new("clients", "clients", 1.0, 1.0, 1024.0, "client processes (dbench N)").integer(),
        DEVICE_KNOB,
        Knob::new("ops", "lines", nbench::LOADFILE_OPS as f64, 100.0, 100_000.0, "loadfile length (client-tiny: 3573)")
            .integer(),
    ],
    build: |k: &KnobValues| {
        Box::new(Dbench {
            clients: k.get_u64("clients") as u32,
            disk: Disk::from_knob(k.get_u64("device")),
            ops: k.get_u64("ops") as usize,
        })
    },
};

/// Counter of ReadX/WriteX bytes (dbench's MB/s, kept for analysis).
const BYTES: u16 = 0;
/// Latency slot of a pass over the loadfile.
const PASS: u16 = 0;
/// The storage device as an fsync's data writeback uses it ...
const DATA: u32 = 0;
/// ... and as the filesystem's log force does. The two are served independently: a data
/// write never waits behind a log commit on the device, nor the reverse.
const LOG: u32 = 1;

struct Dbench {
    clients: u32,
    disk: Disk,
    ops: usize,
}

fn run(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: ipc::MEM_FRAC }
}

/// VFS work of one line, in cycles.
fn vfs_cycles(line: &Line) -> f64 {
    match line.op {
        NbOp::ReadX | NbOp::WriteX => dbench::IO_BASE_CYCLES + line.size as f64 * dbench::IO_CYCLES_PER_BYTE,
        op => dbench::METADATA_CYCLES
            .iter()
            .find(|(name, _)| NbOp::from_name(name) == Some(op))
            .map(|&(_, cycles)| cycles)
            .unwrap_or_else(|| panic!("estimates::dbench::METADATA_CYCLES has no cost for {op:?}")),
    }
}

impl Dbench {
    /// One pass over the loadfile, timed, looping forever; the same for every client.
    fn program(&self) -> Rc<[Op]> {
        let lines = synthesise(self.ops);
        let mut p = Vec::with_capacity(lines.len() * 3 + 3);
        p.push(Op::Mark(Mark::Start(PASS)));
        for line in &lines {
            p.push(run(vfs_cycles(line)));
            if line.op == NbOp::Flush {
                p.push(Op::Io { dev: DATA, service_ns: self.disk.data_write_ns(), transfer_ns: Amount::ZERO });
                p.push(Op::Io { dev: LOG, service_ns: self.disk.fsync_ns(), transfer_ns: Amount::ZERO });
            }
            if line.data_bytes() > 0 {
                p.push(Op::Mark(Mark::Add { counter: BYTES, amount: line.data_bytes() as u64 }));
            }
        }
        p.push(Op::Mark(Mark::End(PASS)));
        p.push(Op::Jump { to: 0 });
        p.into()
    }
}

impl Workload for Dbench {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        let program = self.program();
        (0..self.clients).map(|i| TaskSpec::new(format!("dbench-{i}"), program.clone())).collect()
    }

    fn devices(&self) -> Vec<DeviceSpec> {
        vec![self.disk.data_spec(), self.disk.log_spec()]
    }

    /// Long enough for several passes per client: a pass waits for 42 fsyncs, and 800 of them
    /// take 10 s on a disk; at least 1 s.
    fn default_duration_ns(&self) -> u64 {
        ((800.0 * self.disk.mean_fsync_ns()) as u64).max(1_000_000_000)
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let passes = stats.latencies_ns.get(PASS as usize).map(Vec::as_slice).unwrap_or(&[]);
        // No pass completed: every pass takes at least the whole run.
        let mean_ns = if passes.is_empty() {
            stats.sim_time_ns as f64
        } else {
            passes.iter().map(|&ns| ns as f64).sum::<f64>() / passes.len() as f64
        };
        measure::metric(&INFO, mean_ns / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Service;

    #[test]
    fn a_flush_waits_for_its_data_write_in_iowait_then_for_the_log_commit_without() {
        let d = Dbench { clients: 1, disk: Disk::from_knob(1), ops: nbench::LOADFILE_OPS as usize };
        let devices = d.devices();
        assert_eq!(devices[DATA as usize].service, Service::Queued);
        assert_eq!(devices[LOG as usize].service, Service::GroupCommit { leader_iowait: false });
        let program = d.program();
        let waits: Vec<u32> =
            program.iter().filter_map(|op| if let Op::Io { dev, .. } = op { Some(*dev) } else { None }).collect();
        let flushes = synthesise(d.ops).iter().filter(|l| l.op == NbOp::Flush).count();
        assert!(flushes > 0);
        assert_eq!(waits, [DATA, LOG].repeat(flushes));
    }
}
