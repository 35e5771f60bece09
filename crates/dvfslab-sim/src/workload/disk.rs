//! The storage device that fsync-like I/O waits on (dbench's Flush, pgbench's WAL flush).
//!
//! Flushes go out in group commits, as a journal (jbd2, the XFS log) or PostgreSQL's WAL
//! writer batches them: one commit is on the device at a time, and every flush requested
//! while it runs joins the next one, so N waiting clients cost one commit, not N. A commit's
//! device time is uniform between the bounds of `estimates::disk`; its completion wakes
//! every task it carried with the iowait flag (spec §1.3).

use super::estimates::disk;
use super::DeviceSpec;
use crate::spec::Knob;
use crate::task::Amount;

/// The `device` knob: `device=ssd` (or 0; `sata-ssd` is an alias) or `device=hdd` (or 1).
pub(super) const DEVICE_KNOB: Knob =
    Knob::new("device", "device", 0.0, 0.0, 1.0, "storage device: 0 = ssd (SATA SSD), 1 = hdd (rotating disk)")
        .choices(&[("ssd", 0.0), ("sata-ssd", 0.0), ("hdd", 1.0)]);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Disk {
    Ssd,
    Hdd,
}

impl Disk {
    /// The device a `device` knob value names.
    pub(super) fn from_knob(code: u64) -> Disk {
        if code == 0 {
            Disk::Ssd
        } else {
            Disk::Hdd
        }
    }

    pub(super) fn spec(self) -> DeviceSpec {
        let name = match self {
            Disk::Ssd => "ssd",
            Disk::Hdd => "hdd",
        };
        DeviceSpec { name: name.into(), queue_depth: 1, group_commit: true }
    }

    /// Device time of an fsync of a file with a little dirty data (a journal commit).
    pub(super) fn fsync_ns(self) -> Amount {
        let (lo, hi) = match self {
            Disk::Ssd => disk::SSD_FSYNC_NS,
            Disk::Hdd => disk::HDD_FSYNC_NS,
        };
        Amount::Uniform(lo, hi)
    }

    /// Device time of a WAL fdatasync (small sequential write and cache flush).
    pub(super) fn wal_flush_ns(self) -> Amount {
        let (lo, hi) = match self {
            Disk::Ssd => disk::SSD_WAL_FLUSH_NS,
            Disk::Hdd => disk::HDD_WAL_FLUSH_NS,
        };
        Amount::Uniform(lo, hi)
    }
}
