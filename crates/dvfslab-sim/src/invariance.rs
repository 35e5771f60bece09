//! Frequency invariance: the reference ("max") frequency and the per-tick scale.
//!
//! ```text
//!   x86, at every tick (arch_scale_freq_tick):
//!     acnt = ΔAPERF, mcnt = ΔMPERF over the tick (both count only in C0)
//!     freq_scale = min(1024, (acnt << 20) / (mcnt · ratio)),  ratio = 1024 · f_ref / f_base
//!   arm64 without AMU, at every frequency change (arch_set_freq_scale):
//!     freq_scale = 1024 · f_cur / f_max
//! ```
//! `f_ref` is the 4-core turbo on Intel (1-core when there are fewer than 4 cores), the
//! midpoint of max boost and P0 on AMD, and the maximum frequency elsewhere; `freq_max=` in
//! the governor spec picks another (`1c`..`Nc`, `base`, `maxboost`, `maxp`, `midpoint`, or kHz).

use crate::error::{Result, SimError};
use crate::platform::{Platform, Vendor};

/// The reference ratio (times 1024, relative to base) of every cluster.
pub fn reference_ratios(plat: &Platform, choice: Option<&str>) -> Result<Vec<u64>> {
    (0..plat.file.clusters.len()).map(|c| reference_ratio(plat, c, choice)).collect()
}

fn reference_ratio(plat: &Platform, cluster: usize, choice: Option<&str>) -> Result<u64> {
    let f = &plat.cluster(cluster).frequency;
    let base = f.base_khz as u64;
    let bin = |n: usize| -> Option<u64> {
        f.turbo_khz_by_active_cores.as_ref().and_then(|b| b.get(n - 1)).map(|&k| k as u64)
    };
    let ratio_of = |khz: u64| khz * 1024 / base;
    let maxboost = ratio_of(f.max_khz as u64);
    let bad = |msg: String| SimError::config("governor", "freq_max", msg);
    let ratio = match choice.map(|s| s.trim().to_ascii_lowercase()) {
        None => match plat.file.vendor {
            Vendor::Intel => ratio_of(bin(4).or_else(|| bin(1)).unwrap_or(f.max_khz as u64)),
            Vendor::Amd => amd_midpoint(maxboost),
            Vendor::Arm | Vendor::Ibm => maxboost,
        },
        Some(s) if s == "base" || s == "maxp" => 1024,
        Some(s) if s == "maxboost" || s == "max" => maxboost,
        Some(s) if s == "midpoint" => amd_midpoint(maxboost),
        Some(s) if s.ends_with('c') => {
            let n: usize = s[..s.len() - 1].parse().map_err(|_| bad(format!("expected Nc such as 4c, got '{s}'")))?;
            let khz = bin(n.max(1))
                .ok_or_else(|| bad(format!("'{s}': the platform has no turbo bin for {n} active cores")))?;
            ratio_of(khz)
        }
        Some(s) => {
            let khz: u64 =
                s.parse().map_err(|_| bad(format!("expected Nc, base, maxp, maxboost, midpoint or kHz, got '{s}'")))?;
            if khz < f.min_khz as u64 || khz > f.max_khz as u64 {
                return Err(bad(format!("{khz} kHz is outside the platform's {}..{} kHz", f.min_khz, f.max_khz)));
            }
            ratio_of(khz)
        }
    };
    Ok(ratio.max(1))
}

/// AMD's reference (5.11+): halfway between the maximum boost ratio and P0 (1024).
pub fn amd_midpoint(boost_ratio: u64) -> u64 {
    (boost_ratio + 1024) >> 1
}

/// x86 tick update: the scale from counter deltas, or None when the ratio is out of range
/// (the kernel then disables invariance).
pub fn scale_from_counters(acnt: u64, mcnt: u64, ratio: u64) -> Option<u64> {
    let num = acnt.checked_shl(20).filter(|v| v >> 20 == acnt)?;
    let den = mcnt.checked_mul(ratio).filter(|&d| d != 0)?;
    let s = num / den;
    (s != 0).then_some(s.min(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_of_the_spec() {
        // Base 2.4 GHz, 4C turbo 3.6 GHz -> ratio 1536; a 4 ms tick at 3.0 / 3.9 GHz.
        let ratio = 36 * 1024 / 24;
        assert_eq!(ratio, 1536);
        assert_eq!(scale_from_counters(12_000_000, 9_600_000, ratio), Some(853));
        assert_eq!(scale_from_counters(15_600_000, 9_600_000, ratio), Some(1024));
        assert_eq!(scale_from_counters(6_000_000, 4_800_000, ratio), Some(853));
        assert_eq!(scale_from_counters(1, 0, ratio), None);
    }

    #[test]
    fn amd_midpoint_of_the_spec() {
        // B.3 item 8: highest perf 166 over nominal 100 -> 1699 -> midpoint 1361; the
        // frequency path 3700/2450 MHz -> 1546 -> 1285.
        assert_eq!(amd_midpoint(166 * 1024 / 100), 1361);
        assert_eq!(amd_midpoint(3700 * 1024 / 2450), 1285);
    }
}
