//! The storage devices of the I/O benchmarks (fio, iozone, file reads; docs/workloads-compute.md).
//!
//! A device serves up to `queue_depth` requests at once, the rest wait in FIFO order; a
//! completion wakes the submitter with the iowait flag. A request's device time is
//!
//! ```text
//!   access · LN(σ)  then  bytes / bandwidth    access: random read, sequential read or write
//! ```
//!
//! with the lognormal binned (see `sample`); a random read and a discard of a large file have
//! their own medians and spreads where a recording measured them (the `virtio` disk). Accesses overlap up to the queue depth; the
//! transfers share the device's one data channel, so however many requests are in flight the
//! device moves at most its bandwidth. The numbers are in `estimates::storage`.

use super::estimates::storage::{Device, DEVICES};
use super::{sample, DeviceSpec, Service};
use crate::sched::task::Amount;
use crate::spec::Knob;

/// Device names for the `device` knob, in the order of `estimates::storage::DEVICES`; `ssd`
/// is another name for the SATA SSD.
pub const CHOICES: &[(&str, f64)] = &[("nvme", 0.0), ("sata-ssd", 1.0), ("hdd", 2.0), ("virtio", 3.0), ("ssd", 1.0)];

/// The `device` knob with a model's own default.
pub const fn knob(default: f64) -> Knob {
    Knob::new(
        "device",
        "device",
        default,
        0.0,
        3.0,
        "storage device: 0 nvme, 1 sata-ssd, 2 hdd, 3 virtio (a KVM guest's disk)",
    )
    .choices(CHOICES)
}

/// The `discard` knob of the workloads that delete files: 1 when the filesystem discards freed
/// blocks synchronously (ext4 without a journal mounted with `discard`: `ext4_mb_clear_bb` →
/// `ext4_issue_discard`), so whoever deletes a file waits for the device.
pub const DISCARD: Knob = Knob::new(
    "discard",
    "0/1",
    0.0,
    0.0,
    1.0,
    "1: freed blocks are discarded synchronously (ext4 without a journal, mounted with discard): a task \
     deleting or truncating a file waits for it (gitsource: git, rm and the shells; kernbench: gcc's temporary assembly file)",
)
.integer();

/// What a request does on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    RandomRead,
    SequentialRead,
    Write,
    RandomWrite,
    /// A discard of a file of a few blocks (a small test file): a small request, as a write.
    Discard,
    /// A discard of a file of hundreds of KiB (a compiler's temporary assembly file): the
    /// device trims a longer range (on a KVM guest, the host punches it out of the backing
    /// file), so it takes longer than a small request where the recordings say so.
    LargeDiscard,
}

/// Bins of the access-time distribution.
pub const BINS: usize = 16;

pub fn device(code: u64) -> &'static Device {
    &DEVICES[(code as usize).min(DEVICES.len() - 1)]
}

pub fn spec(d: &Device) -> DeviceSpec {
    DeviceSpec { name: d.name.into(), queue_depth: d.queue_depth, service: Service::Queued, completion: d.completion }
}

/// The access times of a request, as [`BINS`] equally likely amounts (ns).
pub fn access_ns(d: &Device, access: Access) -> Vec<Amount> {
    let (median, sigma) = match access {
        Access::RandomRead => (d.rand_read_ns, d.read_sigma_log),
        Access::SequentialRead => (d.seq_read_ns, d.sigma_log),
        Access::Write | Access::Discard => (d.write_ns, d.sigma_log),
        Access::RandomWrite => (d.rand_write_ns, d.sigma_log),
        Access::LargeDiscard => (d.large_discard_ns, d.large_discard_sigma_log),
    };
    sample::lognormal(BINS, median, sigma)
}

/// The time a request of `bytes` holds the device's data channel (ns).
pub fn transfer_ns(d: &Device, bytes: f64) -> Amount {
    Amount::Fixed(bytes / d.bytes_per_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn median(v: &[Amount]) -> f64 {
        (v[BINS / 2 - 1].mean() + v[BINS / 2].mean()) / 2.0
    }

    #[test]
    fn the_virtio_disk_serves_reads_and_large_discards_longer_than_a_small_request() {
        let virtio = device(3);
        assert_eq!(virtio.name, "virtio");
        let small = median(&access_ns(virtio, Access::Write));
        // A small discard is a small request.
        assert_eq!(access_ns(virtio, Access::Discard), access_ns(virtio, Access::Write));
        // The kernbench recording's reads (85 µs) and gcc's discards (110 µs after dispatch).
        let read = median(&access_ns(virtio, Access::RandomRead));
        let large = median(&access_ns(virtio, Access::LargeDiscard));
        assert!((read / 85e3 - 1.0).abs() < 0.1, "{read}");
        assert!((large / 110e3 - 1.0).abs() < 0.1, "{large}");
        // The device's part of a large discard only: its longer dispatch is the kblockd worker's.
        assert!(read > 1.8 * small && large > 2.5 * small, "{small} {read} {large}");
        // Reads spread wider than writes: p90/p10 of the bins.
        let spread = |v: &[Amount]| v[BINS - 2].mean() / v[1].mean();
        assert!(spread(&access_ns(virtio, Access::RandomRead)) > 2.0 * spread(&access_ns(virtio, Access::Write)));
    }

    #[test]
    fn devices_without_a_measured_large_discard_serve_it_as_a_write() {
        for code in 0..3 {
            let d = device(code);
            assert_eq!(access_ns(d, Access::LargeDiscard), access_ns(d, Access::Write), "{}", d.name);
            assert_eq!(d.read_sigma_log, d.sigma_log, "{}", d.name);
        }
    }
}
