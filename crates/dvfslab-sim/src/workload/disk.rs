//! The storage device that fsync-like I/O waits on (dbench's Flush, pgbench's WAL flush).
//!
//! Flushes go out in group commits, as a journal (jbd2, the XFS log) or PostgreSQL's WAL
//! writer batches them: one commit is on the device at a time, and every flush requested
//! while it runs joins the next one, so N waiting clients cost one commit, not N. A commit's
//! device time is uniform between the device's flush bounds (`estimates::storage`); its
//! completion wakes every task it carried, the leader with the iowait flag where it slept on
//! the device itself (`Service::GroupCommit`). The devices, and the `device` knob that names
//! them, are those of the I/O benchmarks (`storage`).

use super::estimates::storage::Device;
use super::{storage, DeviceSpec, Service};
use crate::sched::task::Amount;
use crate::spec::Knob;

/// The `device` knob: `nvme`, `sata-ssd` (the default; also `ssd`) or `hdd`.
pub(super) const DEVICE_KNOB: Knob = storage::knob(1.0);

/// A storage device, seen through its flushes.
#[derive(Clone, Copy)]
pub(super) struct Disk(&'static Device);

impl Disk {
    /// The device a `device` knob value names.
    pub(super) fn from_knob(code: u64) -> Disk {
        Disk(storage::device(code))
    }

    /// The device as PostgreSQL's WAL flush uses it: group commits whose leader calls
    /// fdatasync itself and sleeps in iowait.
    pub(super) fn wal_spec(self) -> DeviceSpec {
        DeviceSpec {
            name: self.0.name.into(),
            queue_depth: 1,
            service: Service::GroupCommit { leader_iowait: true },
            completion: self.0.completion,
        }
    }

    /// The device as XFS's log force uses it: group commits written by a kernel worker while
    /// every fsync caller waits for the commit outside io_schedule (`xlog_wait`).
    pub(super) fn log_spec(self) -> DeviceSpec {
        DeviceSpec {
            name: format!("{}-log", self.0.name),
            queue_depth: 1,
            service: Service::GroupCommit { leader_iowait: false },
            completion: self.0.completion,
        }
    }

    /// The device as an fsync's data writeback uses it: requests served side by side, each
    /// caller sleeping on its own pages in iowait (`file_write_and_wait_range`).
    pub(super) fn data_spec(self) -> DeviceSpec {
        storage::spec(self.0)
    }

    /// Device time of an fsync's data write: a write into the device's cache; the log
    /// commit's cache flush, part of `fsync_ns`, is what makes it durable.
    pub(super) fn data_write_ns(self) -> Amount {
        Amount::Fixed(self.0.write_ns)
    }

    /// Device times of one small block request (a write of a few blocks, a cache flush, a
    /// discard), as equally likely amounts: the device's write access time, binned.
    pub(super) fn request_ns(self) -> Vec<Amount> {
        storage::access_ns(self.0, storage::Access::Write)
    }

    /// Device time of an fsync of a file with a little dirty data (a journal commit).
    pub(super) fn fsync_ns(self) -> Amount {
        Amount::Uniform(self.0.fsync_ns.0, self.0.fsync_ns.1)
    }

    /// Device time of a WAL fdatasync (small sequential write and cache flush).
    pub(super) fn wal_flush_ns(self) -> Amount {
        let (lo, hi) = self.wal_flush_range_ns();
        Amount::Uniform(lo, hi)
    }

    /// The range a WAL flush's device time is drawn from (ns).
    pub(super) fn wal_flush_range_ns(self) -> (f64, f64) {
        self.0.wal_flush_ns
    }

    /// Mean device time of an fsync (ns): what a flush-bound benchmark's default run length is
    /// sized by.
    pub(super) fn mean_fsync_ns(self) -> f64 {
        self.fsync_ns().mean()
    }

    /// Mean device time of a WAL flush (ns).
    pub(super) fn mean_wal_flush_ns(self) -> f64 {
        self.wal_flush_ns().mean()
    }
}
