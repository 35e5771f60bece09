//! dbench4: N clients replaying the NBENCH loadfile against a local filesystem
//! (docs/workloads-net.md; MMTests `config-io-dbench4-async`: fileio backend, no -s/-S/-F).
//!
//! Each client loops over the loadfile with no think time. Every operation is a burst of
//! VFS work in system time (`estimates::dbench`, scaled by the knobs declared there). `Flush` is `fsync(fd)` on XFS, two waits on
//! the storage device all clients share (`device` knob, see `disk.rs`): the file's own dirty
//! pages are written and waited for in iowait (`file_write_and_wait_range`, clients side by
//! side), then the log is forced, a group commit that a kernel worker writes while every
//! caller waits for it outside io_schedule (`xlog_wait`), so it wakes without the flag.
//!
//! Every metadata change is a transaction whose changes stay in the XFS log until they are
//! logged again (relogged) or written back in place, and a transaction that finds the log
//! full sleeps until xfsaild has written enough back. MMTests sizes the filesystem at 30 MiB
//! per client of its largest run, which gives it XFS's 10 MiB minimum log (`log_mb`). While
//! the log holds every client's last pass, each change is relogged before the log wraps and
//! nothing waits; beyond that a share `1 − log / (clients × a pass's logged bytes)` of the
//! transactions waits, first, for xfsaild to write one transaction's worth back, one at a
//! time (a plain sleep, no iowait flag). So at many clients the passes queue on one kernel
//! thread and the CPUs idle, as the real runs do (docs/validation.md, item 3).
//!
//! On ext4 without a journal, mounted with `discard` (`fs=ext4-nojournal`, the recordings
//! machine's root filesystem), a Flush waits for each block request of `ext4_fsync_nojournal`
//! in turn, on the one storage device, each in D until the block-completion softirq wakes it:
//! the file's data, its inode's table block, for a file created since its last fsync its
//! directory's block and inode, then the device's cache flush. A write that allocated blocks
//! (unwritten extents under `dioread_nolock`, ext4's default from 5.6) is ended by the
//! `ext4-rsv-conversion` worker, a kernel thread the completion wakes and that wakes the
//! client (`workload::kthreads::end_io_worker`, which the simulator adds beside the clients);
//! on earlier kernels the completion wakes the client itself. An Unlink of a file with
//! blocks waits for their discard. How often each happens was counted in dbench's own
//! loadfile (`estimates::dbench_ext4`). kblockd, which dispatches some of these requests, is
//! left out (its delay is in the device's time).
//!
//! Left out: directory and journal lock contention (each client works in its own directory;
//! a sleeping mutex would turn the short shared sections into a convoy of idle exits, where
//! the kernel spins), dirty-page throttling, and the flusher and journal threads.
//!
//! Metric, as MMTests' default dbench4 `loadfile` metric: the duration of each pass over the
//! loadfile of each client ("completed in X ms"), summarised by its arithmetic mean (lower is
//! better). Passes cut by the end of the run are not counted; if no pass completed, the value
//! is the run's length (a lower bound) — give a longer duration.

use std::rc::Rc;

use super::disk::{Disk, DEVICE_KNOB};
use super::estimates::{dbench, dbench_ext4 as ext4, ipc, nbench, ns_cycles, us_cycles};
use super::loadfile::{synthesise, Line, NbOp};
use super::{
    measure, Better, Completion, DeviceSpec, Metric, Operations, RunStats, Service, TaskSpec, Workload, WorkloadInfo,
};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

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
        Knob::new("log_mb", "MiB", 10.0, 1.0, 2048.0, "XFS log size (MMTests' filesystem gets the 10 MiB minimum)"),
        Knob::new(
            "fs",
            "filesystem",
            0.0,
            0.0,
            1.0,
            "filesystem: 0 xfs (MMTests'), 1 ext4-nojournal (ext4 without a journal, mounted with discard)",
        )
        .choices(FS_CHOICES),
        dbench::METADATA_SCALE,
        dbench::IO_US,
        dbench::IO_NS_PER_BYTE,
        dbench::LOGGED_KIB,
        dbench::WRITEBACK_US,
    ],
    build: |k: &KnobValues| {
        Box::new(Dbench {
            clients: k.get_u64("clients") as u32,
            disk: Disk::from_knob(k.get_u64("device")),
            ops: k.get_u64("ops") as usize,
            log_bytes: k.get("log_mb") * MIB,
            fs: if k.get_u64("fs") == 1 { Fs::Ext4NoJournal } else { Fs::Xfs },
            costs: Costs {
                metadata_scale: k.get(dbench::METADATA_SCALE.name),
                io: us_cycles(k.get(dbench::IO_US.name)),
                io_per_byte: ns_cycles(k.get(dbench::IO_NS_PER_BYTE.name)),
                logged_bytes: k.get(dbench::LOGGED_KIB.name) * KIB,
                writeback_ns: k.get(dbench::WRITEBACK_US.name) * 1000.0,
            },
        })
    },
};

/// Names of the `fs` knob's values.
const FS_CHOICES: &[(&str, f64)] = &[("xfs", 0.0), ("ext4-nojournal", 1.0)];

/// The filesystem the clients work on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fs {
    /// XFS with its log, as MMTests formats it.
    Xfs,
    /// ext4 without a journal, mounted with `discard`.
    Ext4NoJournal,
}

/// Counter of ReadX/WriteX bytes (dbench's MB/s, kept for analysis).
const BYTES: u16 = 0;
/// Counter of loadfile operations completed (dbench's "Operation Count" total).
const OPS: u16 = 1;
/// Latency slot of a pass over the loadfile.
const PASS: u32 = 0;
/// The storage device as an fsync's data writeback uses it ...
const DATA: u32 = 0;
/// ... and as the filesystem's log force does. The two are served independently: a data
/// write never waits behind a log commit on the device, nor the reverse.
const LOG: u32 = 1;
/// xfsaild, writing metadata back to free log space.
const AIL: u32 = 2;
/// On ext4, the storage device every request goes to.
const DISK: u32 = 0;
const KIB: f64 = 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

struct Dbench {
    clients: u32,
    disk: Disk,
    ops: usize,
    log_bytes: f64,
    fs: Fs,
    costs: Costs,
}

/// Spreads the operations that take a path with a given share evenly over a pass: each
/// call adds the share and says whether a whole one is due (an error-diffusion walk).
#[derive(Default)]
struct Diffuse(f64);

impl Diffuse {
    fn due(&mut self, share: f64) -> bool {
        self.0 += share;
        let due = self.0 >= 1.0;
        if due {
            self.0 -= 1.0;
        }
        due
    }
}

/// The ext4 waits of a pass, as the program lays them out: which requests take which path
/// (`estimates::dbench_ext4`), and each request's device time in turn from the device's
/// binned lognormal.
struct Ext4Waits {
    new_blocks: Diffuse,
    new_entry: Diffuse,
    dir_inode: Diffuse,
    discard: Diffuse,
    access: Vec<Amount>,
    next: usize,
}

impl Ext4Waits {
    fn new(disk: Disk) -> Ext4Waits {
        Ext4Waits {
            new_blocks: Diffuse::default(),
            new_entry: Diffuse::default(),
            dir_inode: Diffuse::default(),
            discard: Diffuse::default(),
            access: disk.request_ns(),
            next: 0,
        }
    }

    /// A block request's wait: submitted, then asleep in D until the completion.
    fn wait(&mut self) -> Op {
        Op::Io { dev: DISK, service_ns: self.service(), transfer_ns: Amount::ZERO }
    }

    fn service(&mut self) -> Amount {
        let a = self.access[self.next % self.access.len()];
        self.next += 1;
        a
    }

    /// What an fsync does after its own work (`ext4_fsync_nojournal`): the data write,
    /// ended by the conversion worker if it allocated blocks; the inode's table block; the
    /// directory's block and inode for a new file; the cache flush.
    fn flush(&mut self, p: &mut Vec<Op>) {
        if self.new_blocks.due(ext4::FLUSH_NEW_BLOCKS_SHARE) {
            p.push(Op::IoEndWork { dev: DISK, service_ns: self.service() });
        } else {
            p.push(self.wait());
        }
        p.extend([run(ext4::META_SUBMIT_CYCLES), self.wait()]);
        if self.new_entry.due(ext4::FLUSH_NEW_ENTRY_SHARE) {
            p.extend([run(ext4::META_SUBMIT_CYCLES), self.wait()]);
            if self.dir_inode.due(ext4::FLUSH_DIR_INODE_SHARE / ext4::FLUSH_NEW_ENTRY_SHARE) {
                p.extend([run(ext4::META_SUBMIT_CYCLES), self.wait()]);
            }
        }
        p.extend([run(ext4::FLUSH_SUBMIT_CYCLES), self.wait()]);
    }

    /// An Unlink's discard of the file's blocks, when it had some.
    fn unlink(&mut self, p: &mut Vec<Op>) {
        if self.discard.due(ext4::UNLINK_DISCARD_SHARE) {
            p.push(self.wait());
        }
    }
}

/// The knobs' costs: a factor on the metadata operations' work, a ReadX's or WriteX's work
/// besides its copy and per byte copied on XFS (cycles), the log space of a transaction
/// (bytes) and xfsaild's time to write one back (ns).
struct Costs {
    metadata_scale: f64,
    io: f64,
    io_per_byte: f64,
    logged_bytes: f64,
    writeback_ns: f64,
}

impl Costs {
    /// The knobs' defaults.
    #[cfg(test)]
    const DEFAULT: Costs = Costs {
        metadata_scale: dbench::METADATA_SCALE.default,
        io: us_cycles(dbench::IO_US.default),
        io_per_byte: ns_cycles(dbench::IO_NS_PER_BYTE.default),
        logged_bytes: dbench::LOGGED_KIB.default * KIB,
        writeback_ns: dbench::WRITEBACK_US.default * 1000.0,
    };

    /// VFS work of one line on filesystem `fs`, in cycles: on XFS the knobs' costs, on ext4
    /// the recording's (`estimates::dbench_ext4`), its metadata scaled as XFS's.
    fn vfs_cycles(&self, line: &Line, fs: Fs) -> f64 {
        let size = line.size as f64;
        let table = match (fs, line.op) {
            (Fs::Xfs, NbOp::ReadX | NbOp::WriteX) => return self.io + size * self.io_per_byte,
            (Fs::Ext4NoJournal, NbOp::ReadX) => return ext4::IO_CYCLES + size * ext4::READ_CYCLES_PER_BYTE,
            (Fs::Ext4NoJournal, NbOp::WriteX) => return ext4::IO_CYCLES + size * ext4::WRITE_CYCLES_PER_BYTE,
            (Fs::Xfs, _) => &dbench::METADATA_CYCLES,
            (Fs::Ext4NoJournal, _) => &ext4::METADATA_CYCLES,
        };
        let cycles = table
            .iter()
            .find(|(name, _)| NbOp::from_name(name) == Some(line.op))
            .map(|&(_, cycles)| cycles)
            .unwrap_or_else(|| panic!("estimates has no {fs:?} cost for {:?}", line.op));
        cycles * self.metadata_scale
    }
}

fn run(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: ipc::MEM_FRAC }
}

fn is_logged(line: &Line) -> bool {
    dbench::LOGGED_OPS.iter().any(|name| NbOp::from_name(name) == Some(line.op))
}

impl Dbench {
    /// The share of transactions that wait for a writeback: the part of all clients' last
    /// passes that the log cannot hold.
    fn writeback_share(&self, lines: &[Line]) -> f64 {
        let transactions = lines.iter().filter(|l| is_logged(l)).count() as f64;
        let pass_bytes = transactions * self.costs.logged_bytes;
        (1.0 - self.log_bytes / (self.clients as f64 * pass_bytes)).max(0.0)
    }

    /// One pass over the loadfile, timed, looping forever; the same for every client.
    fn program(&self) -> Rc<[Op]> {
        let lines = synthesise(self.ops);
        let share = if self.fs == Fs::Xfs { self.writeback_share(&lines) } else { 0.0 };
        let writeback = Amount::Fixed(self.costs.writeback_ns);
        let mut ext4 = Ext4Waits::new(self.disk);
        let mut p = Vec::with_capacity(lines.len() * 4 + 3);
        p.push(Op::Mark(Mark::Start(PASS)));
        // The waiting transactions spread evenly over the pass.
        let mut waits = Diffuse::default();
        for line in &lines {
            if is_logged(line) && waits.due(share) {
                p.push(Op::Io { dev: AIL, service_ns: writeback, transfer_ns: Amount::ZERO });
            }
            p.push(run(self.costs.vfs_cycles(line, self.fs)));
            match (self.fs, line.op) {
                (Fs::Xfs, NbOp::Flush) => {
                    p.push(Op::Io { dev: DATA, service_ns: self.disk.data_write_ns(), transfer_ns: Amount::ZERO });
                    p.push(Op::Io { dev: LOG, service_ns: self.disk.fsync_ns(), transfer_ns: Amount::ZERO });
                }
                (Fs::Ext4NoJournal, NbOp::Flush) => {
                    p.push(run(ext4::FSYNC_CYCLES));
                    ext4.flush(&mut p);
                }
                (Fs::Ext4NoJournal, NbOp::Unlink) => ext4.unlink(&mut p),
                _ => {}
            }
            if line.data_bytes() > 0 {
                p.push(Op::Mark(Mark::Add { counter: BYTES, amount: line.data_bytes() as u64 }));
            }
            p.push(Op::Mark(Mark::Add { counter: OPS, amount: 1 }));
        }
        p.push(Op::Mark(Mark::End(PASS)));
        p.push(Op::Jump { to: 0 });
        p.into()
    }
}

impl Workload for Dbench {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        let program = self.program();
        let clients = (0..self.clients).map(|i| TaskSpec::new(format!("dbench-{i}"), program.clone()));
        clients.collect()
    }

    fn devices(&self) -> Vec<DeviceSpec> {
        if self.fs == Fs::Ext4NoJournal {
            return vec![self.disk.data_spec()];
        }
        let xfsaild = DeviceSpec {
            name: "xfsaild".into(),
            queue_depth: 1,
            service: Service::Waited,
            completion: Completion::Submitter,
        };
        vec![self.disk.data_spec(), self.disk.log_spec(), xfsaild]
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

    fn operations(&self, stats: &RunStats) -> Option<Operations> {
        Operations::counted(stats, OPS, "loadfile operations")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MMTests' setup: the default 10 MiB log.
    fn dbench(clients: u32) -> Dbench {
        Dbench {
            clients,
            disk: Disk::from_knob(1),
            ops: nbench::LOADFILE_OPS as usize,
            log_bytes: 10.0 * MIB,
            fs: Fs::Xfs,
            costs: Costs::DEFAULT,
        }
    }

    fn waits_of(d: &Dbench) -> Vec<u32> {
        d.program().iter().filter_map(|op| if let Op::Io { dev, .. } = op { Some(*dev) } else { None }).collect()
    }

    #[test]
    fn on_ext4_a_flush_waits_for_each_block_request_and_some_unlinks_for_a_discard() {
        let d = Dbench { fs: Fs::Ext4NoJournal, ..dbench(2) };
        let lines = synthesise(d.ops);
        let count = |op| lines.iter().filter(|l| l.op == op).count() as f64;
        let (flushes, unlinks) = (count(NbOp::Flush), count(NbOp::Unlink));
        assert!(flushes > 10.0 && unlinks > 10.0);
        let program = d.program();
        let plain = program.iter().filter(|op| matches!(op, Op::Io { dev: DISK, .. })).count() as f64;
        let by_worker = program.iter().filter(|op| matches!(op, Op::IoEndWork { dev: DISK, .. })).count() as f64;
        // Every Flush writes its data (some ended by the worker), its inode and the cache
        // flush; new files their directory's block and most their directory's inode; a share
        // of the Unlinks discards.
        let within_one = |got: f64, want: f64| (got - want).abs() <= 1.0;
        assert!(within_one(by_worker, ext4::FLUSH_NEW_BLOCKS_SHARE * flushes), "{by_worker}");
        let expected = flushes * (3.0 + ext4::FLUSH_NEW_ENTRY_SHARE + ext4::FLUSH_DIR_INODE_SHARE)
            + unlinks * ext4::UNLINK_DISCARD_SHARE
            - by_worker;
        assert!((plain - expected).abs() <= 3.0, "{plain} waits, expected {expected}");
        // One device, no log and no xfsaild; the end-I/O worker is the simulator's, for the
        // writes it ends.
        assert_eq!(d.devices().len(), 1);
        assert!(crate::workload::kthreads::ends_writes_in_worker([&program]));
        let plat = crate::hw::platform::Platform::from_json(
            include_str!("../../../../python/dvfslab/data/platforms/kvm-guest-2cpu.json"),
            "kvm",
        )
        .unwrap();
        let names: Vec<String> = d.tasks(&plat).into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["dbench-0", "dbench-1"]);
        // On XFS neither the worker's writes nor the discards exist.
        assert!(!crate::workload::kthreads::ends_writes_in_worker([&dbench(2).program()]));
    }

    #[test]
    fn a_flush_waits_for_its_data_write_in_iowait_then_for_the_log_commit_without() {
        let d = dbench(1);
        let devices = d.devices();
        assert_eq!(devices[DATA as usize].service, Service::Queued);
        assert_eq!(devices[LOG as usize].service, Service::GroupCommit { leader_iowait: false });
        let flushes = synthesise(d.ops).iter().filter(|l| l.op == NbOp::Flush).count();
        assert!(flushes > 0);
        assert_eq!(waits_of(&d), [DATA, LOG].repeat(flushes));
    }

    #[test]
    fn transactions_wait_for_writeback_only_once_the_log_cannot_hold_every_clients_pass() {
        let lines = synthesise(nbench::LOADFILE_OPS as usize);
        let transactions = lines.iter().filter(|l| is_logged(l)).count() as f64;
        let pass_bytes = transactions * Costs::DEFAULT.logged_bytes;
        let writebacks = |d: &Dbench| waits_of(d).iter().filter(|&&dev| dev == AIL).count() as f64;
        // 8 clients' passes fit in 10 MiB: nobody waits.
        assert!(8.0 * pass_bytes < 10.0 * MIB);
        assert_eq!(writebacks(&dbench(8)), 0.0);
        // 64 clients' do not: the share the log cannot hold waits, within one of its count.
        let share = 1.0 - 10.0 * MIB / (64.0 * pass_bytes);
        assert!(share > 0.5, "{share}");
        assert!((writebacks(&dbench(64)) - share * transactions).abs() <= 1.0);
        // Waiting on xfsaild is a plain sleep: no iowait flag.
        assert_eq!(dbench(64).devices()[AIL as usize].service, Service::Waited);
        // A log that holds them all again: nobody waits.
        assert_eq!(writebacks(&Dbench { log_bytes: 64.0 * pass_bytes, ..dbench(64) }), 0.0);
    }
}
