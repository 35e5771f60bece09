//! The NBENCH loadfile that dbench and tbench replay (dbench's `client.txt` format; docs/workloads-net.md).
//!
//! The real measured file (`client-tiny.txt`, 3,573 lines of dbench's `client.txt`) was not
//! available, so the loadfile is synthesised from the fallback operation mix: the exact count
//! of each operation (largest-remainder rounding of mix × length), shuffled, with sizes drawn
//! from `estimates::nbench`. It is generated with a fixed seed: like the real file, it is the
//! same on every run and for every client.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use super::estimates::nbench;

/// NBENCH operations of the loadfile (those of the fallback mix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NbOp {
    NtCreateX,
    Close,
    Rename,
    Unlink,
    Qpathinfo,
    Qfileinfo,
    Qfsinfo,
    Find,
    Sfileinfo,
    ReadX,
    WriteX,
    Flush,
    LockX,
    UnlockX,
}

impl NbOp {
    /// The operation as the loadfile (and `estimates`) spells it.
    pub(super) fn from_name(name: &str) -> Option<NbOp> {
        Some(match name {
            "NTCreateX" => NbOp::NtCreateX,
            "Close" => NbOp::Close,
            "Rename" => NbOp::Rename,
            "Unlink" => NbOp::Unlink,
            "Qpathinfo" => NbOp::Qpathinfo,
            "Qfileinfo" => NbOp::Qfileinfo,
            "Qfsinfo" => NbOp::Qfsinfo,
            "Find" => NbOp::Find,
            "Sfileinfo" => NbOp::Sfileinfo,
            "ReadX" => NbOp::ReadX,
            "WriteX" => NbOp::WriteX,
            "Flush" => NbOp::Flush,
            "LockX" => NbOp::LockX,
            "UnlockX" => NbOp::UnlockX,
            _ => return None,
        })
    }
}

/// One loadfile line. `size` is the ReadX return or WriteX size (bytes), or the number of
/// entries a Find returns; 0 for the other operations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Line {
    pub op: NbOp,
    pub size: u32,
}

impl Line {
    /// Bytes tbench's client sends for this operation (`sockio.c` \[SRC\]).
    pub(super) fn request_bytes(&self) -> u32 {
        let name = 2 * nbench::NAME_CHARS;
        match self.op {
            NbOp::NtCreateX => 74 + name,
            NbOp::Close => 47,
            NbOp::Rename => 47 + 2 * name,
            NbOp::Unlink => 43 + name,
            NbOp::WriteX => 59 + self.size,
            NbOp::ReadX | NbOp::Qfileinfo | NbOp::Qfsinfo => 59,
            NbOp::Flush => 41,
            NbOp::Qpathinfo => 55 + name,
            NbOp::Find => 59 + name,
            NbOp::Sfileinfo => 71,
            NbOp::LockX | NbOp::UnlockX => 51,
        }
    }

    /// Bytes tbench's server replies (`sockio.c` \[SRC\]).
    pub(super) fn reply_bytes(&self) -> u32 {
        match self.op {
            NbOp::NtCreateX => 87,
            NbOp::Close | NbOp::Rename | NbOp::Unlink | NbOp::Flush | NbOp::LockX | NbOp::UnlockX => 39,
            NbOp::WriteX => 55,
            NbOp::ReadX => 59 + self.size,
            NbOp::Qpathinfo | NbOp::Qfileinfo | NbOp::Qfsinfo => 71,
            NbOp::Find => 39 + 90 * self.size,
            NbOp::Sfileinfo => 47,
        }
    }

    /// Bytes dbench counts for its MB/s (`child->bytes`): ReadX returns and WriteX sizes.
    pub(super) fn data_bytes(&self) -> u32 {
        match self.op {
            NbOp::ReadX | NbOp::WriteX => self.size,
            _ => 0,
        }
    }
}

/// Seed of the synthetic loadfile: a constant, so the file is the same in every run.
const LOADFILE_SEED: u64 = 0x0064_6265_6e63_6834; // "dbench4" in ASCII

/// A loadfile of `len` lines with the fallback mix (`estimates::nbench::MIX_PCT`, normalised:
/// its percentages add up to 101.9).
pub(super) fn synthesise(len: usize) -> Vec<Line> {
    let total: f64 = nbench::MIX_PCT.iter().map(|&(_, pct)| pct).sum();
    // Largest-remainder rounding: every operation gets its share of `len` exactly.
    let exact: Vec<f64> = nbench::MIX_PCT.iter().map(|&(_, pct)| pct / total * len as f64).collect();
    let mut counts: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
    let mut by_remainder: Vec<usize> = (0..exact.len()).collect();
    by_remainder.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    let short = len - counts.iter().sum::<usize>();
    for &i in by_remainder.iter().take(short) {
        counts[i] += 1;
    }

    let mut rng = Pcg64::seed_from_u64(LOADFILE_SEED);
    let mut lines = Vec::with_capacity(len);
    for (&(name, _), &n) in nbench::MIX_PCT.iter().zip(&counts) {
        let op = NbOp::from_name(name).unwrap_or_else(|| panic!("estimates::nbench names unknown operation {name}"));
        for _ in 0..n {
            let size = match op {
                NbOp::ReadX | NbOp::WriteX => io_size(rng.gen()),
                NbOp::Find => rng.gen_range(nbench::FIND_ENTRIES.0..=nbench::FIND_ENTRIES.1),
                _ => 0,
            };
            lines.push(Line { op, size });
        }
    }
    lines.shuffle(&mut rng);
    lines
}

/// The I/O size at quantile `u` of `estimates::nbench::IO_SIZES`.
fn io_size(u: f64) -> u32 {
    let mut acc = 0.0;
    for &(size, share) in &nbench::IO_SIZES {
        acc += share;
        if u < acc {
            return size;
        }
    }
    nbench::IO_SIZES[nbench::IO_SIZES.len() - 1].0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_is_exact_and_deterministic() {
        let a = synthesise(nbench::LOADFILE_OPS as usize);
        assert_eq!(a.len(), 3573);
        assert_eq!(a, synthesise(3573));
        let count = |op| a.iter().filter(|l| l.op == op).count();
        // The spec's percentages add up to 101.9: Flush is 1.2 / 101.9 of 3573 lines = 42.1.
        assert_eq!(count(NbOp::Flush), 42);
        assert_eq!(count(NbOp::ReadX), 947);
        assert!(count(NbOp::LockX) >= 1);
    }

    #[test]
    fn every_estimated_name_is_an_operation() {
        for (name, _) in nbench::MIX_PCT.iter().chain(super::super::estimates::dbench::METADATA_CYCLES.iter()) {
            assert!(NbOp::from_name(name).is_some(), "{name}");
        }
    }

    #[test]
    fn packet_sizes_follow_sockio() {
        let read = Line { op: NbOp::ReadX, size: 4096 };
        assert_eq!((read.request_bytes(), read.reply_bytes(), read.data_bytes()), (59, 4155, 4096));
        let find = Line { op: NbOp::Find, size: 3 };
        assert_eq!(find.reply_bytes(), 39 + 270);
    }
}
