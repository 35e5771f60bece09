//! Frequency invariance: the reference ("max") frequency and the per-tick scale.
//!
//! ```text
//!   x86, at every tick (arch_scale_freq_tick):
//!     acnt = ΔAPERF, mcnt = ΔMPERF over the tick (both count only in C0)
//!     freq_scale = min(1024, (acnt << 20) / (mcnt · ratio)),  ratio = 1024 · f_ref / f_base
//!   arm64 without AMU, at every frequency change (arch_set_freq_scale):
//!     freq_scale = 1024 · f_cur / f_max
//! ```
//! `f_ref` is the 4-core turbo on Intel (1-core when there are fewer than 4 cores; base when
//! acpi-cpufreq finds no CPPC boost ratio, 5.12+), the midpoint of CPPC's highest and nominal
//! performance on AMD, and the maximum frequency elsewhere; `freq_max=` in the governor spec
//! picks another (`1c`..`Nc`, `base`, `maxboost`, `maxp`, `midpoint`, or kHz).
//!
//! Which kernels are frequency-invariant at all ([`kernel_is_invariant`]): arm64 since 4.15
//! (`arch_scale_freq_capacity` from arch_topology, set by cpufreq-dt's `arch_set_freq_scale`),
//! Intel since 5.7 (`init_freq_invariance`, APERF/MPERF), AMD since 5.11 and only with an ACPI
//! `_CPC` (`amd_set_max_freq_ratio` gives up without CPPC's nominal performance), POWER never
//! (powerpc defines no `arch_scale_freq_capacity`).

use crate::error::{Result, SimError};
use crate::hw::driver::Driver;
use crate::hw::platform::{Platform, Vendor};
use crate::kernel::KernelVersion;

/// Whether the simulated kernel makes PELT frequency-invariant on `plat`, and so whether
/// schedutil's reference is `cpuinfo.max_freq` (else `policy->cur`).
pub fn kernel_is_invariant(kernel: KernelVersion, plat: &Platform) -> bool {
    match plat.file.vendor {
        Vendor::Arm => kernel >= KernelVersion(4, 15, 0),
        Vendor::Intel => kernel >= KernelVersion(5, 7, 0),
        Vendor::Amd => kernel >= KernelVersion(5, 11, 0) && amd_boost_ratio(kernel, plat).is_some(),
        Vendor::Ibm => false,
    }
}

/// The `invariant` system setting resolved: -1 ("kernel") follows [`kernel_is_invariant`];
/// 0 turns invariance off; 1 forces it on, which stands for the invariance patches applied to
/// an older kernel (how the published x86 evaluations ran) but is refused on POWER, where no
/// kernel has a frequency-invariance mechanism.
pub fn resolve_invariant(setting: f64, kernel: KernelVersion, plat: &Platform) -> Result<bool> {
    if setting < 0.0 {
        return Ok(kernel_is_invariant(kernel, plat));
    }
    let on = setting != 0.0;
    if on && plat.file.vendor == Vendor::Ibm {
        return Err(SimError::config(
            "governor",
            "invariant",
            format!(
                "{} is a POWER platform: Linux has no frequency invariance on powerpc (no \
                 arch_scale_freq_capacity), so PELT is unscaled and schedutil scales policy->cur; use \
                 invariant=kernel or 0",
                plat.id()
            ),
        ));
    }
    Ok(on)
}

/// AMD's CPPC boost numerator: what the kernel takes as highest performance.
///
/// ```text
///   5.11 - 5.12  the HighestPerformance register (perf_caps.highest_perf)
///   5.13 - 6.11  amd_get_highest_perf (commit 3743d55b289c, 5.13, backported to 5.11/5.12
///                stable): 166 for family 17h models 30h-3Fh and 70h-7Fh and family 19h
///                models 20h-2Fh and 40h-6Fh, else 255
///   6.12 -       amd_get_boost_ratio_numerator: 166 (CPPC_HIGHEST_PERF_PREFCORE) with preferred
///                cores, else the HighestPerformance register
/// ```
pub fn amd_boost_numerator(kernel: KernelVersion, plat: &Platform) -> Option<u64> {
    let cppc = plat.file.cppc?;
    if kernel < KernelVersion(5, 13, 0) {
        return Some(cppc.highest_perf as u64);
    }
    if kernel >= KernelVersion(6, 12, 0) {
        return Some(if cppc.preferred_cores { 166 } else { cppc.highest_perf as u64 });
    }
    let id = plat.file.cpuid?;
    let zen2_or_3_client = match id.family {
        0x17 => (0x30..0x40).contains(&id.model) || (0x70..0x80).contains(&id.model),
        0x19 => (0x20..0x30).contains(&id.model) || (0x40..0x70).contains(&id.model),
        _ => false,
    };
    Some(if zen2_or_3_client { 166 } else { 255 })
}

/// AMD's maximum boost ratio (times 1024): boost numerator / CPPC nominal performance. None
/// without a `_CPC` (the kernel then has no AMD invariance).
pub fn amd_boost_ratio(kernel: KernelVersion, plat: &Platform) -> Option<u64> {
    let nominal = plat.file.cppc?.nominal_perf as u64;
    Some(amd_boost_numerator(kernel, plat)? * 1024 / nominal)
}

/// acpi-cpufreq's `get_max_boost_ratio` (5.12+): highest over nominal CPPC performance, times
/// 1024 (AMD: the boost numerator as the kernel takes it); None without `_CPC` or when highest
/// is below nominal.
pub fn acpi_max_boost_ratio(kernel: KernelVersion, plat: &Platform) -> Option<u64> {
    let cppc = plat.file.cppc?;
    let highest = match plat.file.vendor {
        Vendor::Amd => amd_boost_numerator(kernel, plat)?,
        _ => cppc.highest_perf as u64,
    };
    (highest >= cppc.nominal_perf as u64).then(|| highest * 1024 / cppc.nominal_perf as u64)
}

/// The reference ratio (times 1024, relative to base) of every cluster.
pub fn reference_ratios(
    plat: &Platform,
    choice: Option<&str>,
    kernel: KernelVersion,
    driver: Driver,
) -> Result<Vec<u64>> {
    (0..plat.file.clusters.len()).map(|c| reference_ratio(plat, c, choice, kernel, driver)).collect()
}

fn reference_ratio(
    plat: &Platform,
    cluster: usize,
    choice: Option<&str>,
    kernel: KernelVersion,
    driver: Driver,
) -> Result<u64> {
    let f = &plat.cluster(cluster).frequency;
    let base = f.base_khz as u64;
    let bin = |n: usize| -> Option<u64> {
        f.turbo_khz_by_active_cores.as_ref().and_then(|b| b.get(n - 1)).map(|&k| k as u64)
    };
    let ratio_of = |khz: u64| khz * 1024 / base;
    // AMD's max boost is CPPC's performance ratio where the firmware has a _CPC.
    let amd_cppc = if plat.file.vendor == Vendor::Amd { amd_boost_ratio(kernel, plat) } else { None };
    let maxboost = amd_cppc.unwrap_or_else(|| ratio_of(f.max_khz as u64));
    let bad = |msg: String| SimError::config("governor", "freq_max", msg);
    let ratio = match choice.map(|s| s.trim().to_ascii_lowercase()) {
        None => match plat.file.vendor {
            Vendor::Intel if acpi_caps_reference_at_base(kernel, plat, driver) => 1024,
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

/// acpi-cpufreq 5.12+ (`acpi_cpufreq_cpu_init`): without a CPPC boost ratio it calls
/// `arch_set_max_freq_ratio(true)`, so the x86 reference becomes the base (nominal) frequency.
fn acpi_caps_reference_at_base(kernel: KernelVersion, plat: &Platform, driver: Driver) -> bool {
    driver == Driver::AcpiCpufreq && kernel >= KernelVersion(5, 12, 0) && acpi_max_boost_ratio(kernel, plat).is_none()
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

    const EPYC: &str = include_str!("../../../../python/dvfslab/data/platforms/epyc7742-2s.json");
    const HASWELL: &str = include_str!("../../../../python/dvfslab/data/platforms/haswell-e5-2670v3-2s.json");
    const POWER8: &str = include_str!("../../../../python/dvfslab/data/platforms/power8-powernv.json");
    const HIKEY: &str = include_str!("../../../../python/dvfslab/data/platforms/hikey960.json");

    fn plat(json: &str) -> Platform {
        Platform::from_json(json, "test").unwrap()
    }

    /// init_freq_invariance (x86, 5.7: Intel only), amd_set_max_freq_ratio (5.11, needs _CPC),
    /// arm64's arch_scale_freq_capacity (4.15); powerpc has none.
    #[test]
    fn invariance_follows_the_kernel_and_architecture() {
        let v = |a, b| KernelVersion(a, b, 0);
        assert!(!kernel_is_invariant(v(6, 18), &plat(POWER8)));
        assert!(!kernel_is_invariant(v(5, 6), &plat(HASWELL)));
        assert!(kernel_is_invariant(v(5, 7), &plat(HASWELL)));
        assert!(!kernel_is_invariant(v(5, 10), &plat(EPYC)));
        assert!(kernel_is_invariant(v(5, 11), &plat(EPYC)));
        let mut no_cpc: serde_json::Value = serde_json::from_str(EPYC).unwrap();
        no_cpc.as_object_mut().unwrap().remove("cppc").expect("the EPYC preset has a _CPC");
        let no_cpc = no_cpc.to_string();
        assert!(!kernel_is_invariant(v(6, 18), &plat(&no_cpc)));
        assert!(!kernel_is_invariant(v(4, 14), &plat(HIKEY)));
        assert!(kernel_is_invariant(v(4, 15), &plat(HIKEY)));
    }

    #[test]
    fn invariant_follows_the_kernel_by_default_and_is_refused_on_power() {
        let v = KernelVersion(6, 18, 0);
        assert!(!resolve_invariant(-1.0, v, &plat(POWER8)).unwrap());
        assert!(!resolve_invariant(0.0, v, &plat(POWER8)).unwrap());
        let err = resolve_invariant(1.0, v, &plat(POWER8)).unwrap_err().to_string();
        assert!(err.contains("invariant") && err.contains("POWER"), "{err}");
        // The x86 patches evaluated on kernels before they were merged: allowed on request.
        assert!(!resolve_invariant(-1.0, KernelVersion(5, 2, 0), &plat(HASWELL)).unwrap());
        assert!(resolve_invariant(1.0, KernelVersion(5, 2, 0), &plat(HASWELL)).unwrap());
    }

    /// amd_set_max_freq_ratio: midpoint of CPPC highest (the register on 5.11-5.12;
    /// amd_get_highest_perf's 166 on Rome 5.13-6.11; the register without preferred cores from
    /// 6.12, amd_get_boost_ratio_numerator) over nominal and P0 — not a ratio of frequencies.
    #[test]
    fn amd_reference_is_the_midpoint_of_cppc_performance() {
        let epyc = plat(EPYC);
        let acpi = Driver::AcpiCpufreq;
        assert_eq!(reference_ratios(&epyc, None, KernelVersion(6, 18, 0), acpi).unwrap(), vec![(1545 + 1024) >> 1]);
        let reg255 = EPYC.replace(r#""highest_perf": 166"#, r#""highest_perf": 255"#);
        assert_eq!(amd_boost_numerator(KernelVersion(5, 12, 0), &plat(&reg255)), Some(255));
        assert_eq!(amd_boost_numerator(KernelVersion(5, 13, 0), &plat(&reg255)), Some(166));
        assert_eq!(amd_boost_numerator(KernelVersion(6, 11, 0), &plat(&reg255)), Some(166));
        assert_eq!(amd_boost_numerator(KernelVersion(6, 12, 0), &plat(&reg255)), Some(255));
        let pref = reg255.replace(r#""preferred_cores": false"#, r#""preferred_cores": true"#);
        assert_eq!(amd_boost_numerator(KernelVersion(6, 12, 0), &plat(&pref)), Some(166));
        assert_eq!(
            reference_ratios(&plat(&reg255), None, KernelVersion(6, 12, 0), acpi).unwrap(),
            vec![(255 * 1024 / 110 + 1024) >> 1]
        );
    }

    /// acpi_cpufreq_cpu_init 5.12+: no CPPC boost ratio → arch_set_max_freq_ratio(true), the
    /// reference drops to base; intel_cpufreq keeps the 4-core turbo.
    #[test]
    fn acpi_cpufreq_without_cppc_puts_the_intel_reference_at_base_from_5_12() {
        let h = plat(HASWELL);
        let four_core = 2_800_000 * 1024 / 2_300_000;
        assert_eq!(reference_ratios(&h, None, KernelVersion(5, 11, 0), Driver::AcpiCpufreq).unwrap(), vec![four_core]);
        assert_eq!(reference_ratios(&h, None, KernelVersion(5, 12, 0), Driver::AcpiCpufreq).unwrap(), vec![1024]);
        assert_eq!(reference_ratios(&h, None, KernelVersion(6, 18, 0), Driver::IntelCpufreq).unwrap(), vec![four_core]);
    }

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
        // Worked example: highest perf 166 over nominal 100 -> 1699 -> midpoint 1361; the
        // frequency path 3700/2450 MHz -> 1546 -> 1285.
        assert_eq!(amd_midpoint(166 * 1024 / 100), 1361);
        assert_eq!(amd_midpoint(3700 * 1024 / 2450), 1285);
    }
}
