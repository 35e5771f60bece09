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
use super::estimates::{dbench, ipc, nbench, ns_cycles, us_cycles};
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
const KIB: f64 = 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

struct Dbench {
    clients: u32,
    disk: Disk,
    ops: usize,
    log_bytes: f64,
    costs: Costs,
}

/// The knobs' costs: a factor on the metadata operations' work, a ReadX's or WriteX's work
/// besides its copy and per byte copied (cycles), the log space of a transaction (bytes)
/// and xfsaild's time to write one back (ns).
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

    /// VFS work of one line, in cycles.
    fn vfs_cycles(&self, line: &Line) -> f64 {
        match line.op {
            NbOp::ReadX | NbOp::WriteX => self.io + line.size as f64 * self.io_per_byte,
            op => {
                let cycles = dbench::METADATA_CYCLES
                    .iter()
                    .find(|(name, _)| NbOp::from_name(name) == Some(op))
                    .map(|&(_, cycles)| cycles)
                    .unwrap_or_else(|| panic!("estimates::dbench::METADATA_CYCLES has no cost for {op:?}"));
                cycles * self.metadata_scale
            }
        }
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
        let share = self.writeback_share(&lines);
        let writeback = Amount::Fixed(self.costs.writeback_ns);
        let mut p = Vec::with_capacity(lines.len() * 4 + 3);
        p.push(Op::Mark(Mark::Start(PASS)));
        // The waiting transactions spread evenly over the pass (an error-diffusion walk).
        let mut owed = 0.0;
        for line in &lines {
            if is_logged(line) {
                owed += share;
                if owed >= 1.0 {
                    owed -= 1.0;
                    p.push(Op::Io { dev: AIL, service_ns: writeback, transfer_ns: Amount::ZERO });
                }
            }
            p.push(run(self.costs.vfs_cycles(line)));
            if line.op == NbOp::Flush {
                p.push(Op::Io { dev: DATA, service_ns: self.disk.data_write_ns(), transfer_ns: Amount::ZERO });
                p.push(Op::Io { dev: LOG, service_ns: self.disk.fsync_ns(), transfer_ns: Amount::ZERO });
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
        (0..self.clients).map(|i| TaskSpec::new(format!("dbench-{i}"), program.clone())).collect()
    }

    fn devices(&self) -> Vec<DeviceSpec> {
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
            costs: Costs::DEFAULT,
        }
    }

    fn waits_of(d: &Dbench) -> Vec<u32> {
        d.program().iter().filter_map(|op| if let Op::Io { dev, .. } = op { Some(*dev) } else { None }).collect()
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
