//! cpufreq drivers: which frequencies a policy may request, and what the hardware makes of a
//! request.
//!
//! Two facts shape every x86 result. acpi-cpufreq's top `_PSS` entry is base + 1 MHz and
//! means "turbo allowed": the hardware then picks the bin for the number of active cores
//! (AMD's P0 likewise allows Core Performance Boost). intel_cpufreq exposes every ratio, turbo
//! ones included, and the hardware caps a turbo request at the bin it can grant.

use crate::error::{Result, SimError};
use crate::governor::freq_table::{table_lookup, Relation};
use crate::hw::platform::{Platform, Vendor};
use crate::kernel::KernelVersion;

/// acpi-cpufreq's cap on a `_PSS` latency with FFH (MSR) control: larger values come from
/// buggy firmware (`acpi_cpufreq_cpu_init`).
const ACPI_FFH_LATENCY_CAP_NS: u64 = 20_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    AcpiCpufreq,
    /// intel_pstate in active mode: its own algorithms choose P-states (see governor/).
    IntelPstate,
    IntelCpufreq,
    CpufreqDt,
    Scmi,
    Powernv,
}

impl Driver {
    pub const ALL: &'static [(&'static str, Driver)] = &[
        ("acpi-cpufreq", Driver::AcpiCpufreq),
        ("intel_pstate", Driver::IntelPstate),
        ("intel_cpufreq", Driver::IntelCpufreq),
        ("cpufreq-dt", Driver::CpufreqDt),
        ("scmi", Driver::Scmi),
        ("powernv-cpufreq", Driver::Powernv),
    ];

    pub fn parse(name: &str) -> Result<Driver> {
        Driver::ALL.iter().find(|(n, _)| *n == name).map(|(_, d)| *d).ok_or_else(|| {
            let known: Vec<&str> = Driver::ALL.iter().map(|(n, _)| *n).collect();
            SimError::config("governor", "driver", format!("unknown driver '{name}' (known: {})", known.join(", ")))
        })
    }

    pub fn name(self) -> &'static str {
        Driver::ALL.iter().find(|(_, d)| *d == self).map(|(n, _)| *n).expect("listed")
    }

    /// Whether this driver can run on the platform at all.
    pub fn check(self, plat: &Platform) -> Result<()> {
        let vendor = plat.file.vendor;
        let ok = match self {
            Driver::AcpiCpufreq => matches!(vendor, Vendor::Intel | Vendor::Amd),
            Driver::IntelCpufreq | Driver::IntelPstate => vendor == Vendor::Intel,
            Driver::CpufreqDt | Driver::Scmi => vendor == Vendor::Arm,
            Driver::Powernv => vendor == Vendor::Ibm,
        };
        if ok {
            Ok(())
        } else {
            Err(SimError::config(
                "governor",
                "driver",
                format!("{} does not drive {:?} platforms like {}", self.name(), vendor, plat.id()),
            ))
        }
    }

    /// The frequency table the driver exposes for `cluster` (ascending, kHz).
    pub fn table_khz(self, plat: &Platform, cluster: usize) -> Vec<u32> {
        let f = &plat.cluster(cluster).frequency;
        match self {
            Driver::AcpiCpufreq if plat.file.vendor == Vendor::Intel => {
                // _PSS: the non-turbo ratios, topped by base + 1 MHz when the part has turbo.
                let mut t: Vec<u32> = f.pstates_khz.iter().copied().filter(|&k| k <= f.base_khz).collect();
                if f.max_khz > f.base_khz {
                    t.push(f.base_khz + 1000);
                }
                t
            }
            Driver::AcpiCpufreq => f.pstates_khz.iter().copied().filter(|&k| k <= f.base_khz).collect(),
            _ => f.pstates_khz.clone(),
        }
    }

    /// The last entry of [`Driver::table_khz`], without building the table: governors ask for
    /// it on every decision.
    fn table_top_khz(self, plat: &Platform, cluster: usize) -> u32 {
        let f = &plat.cluster(cluster).frequency;
        let below_base = || f.pstates_khz.iter().rev().copied().find(|&k| k <= f.base_khz);
        let top = match self {
            Driver::AcpiCpufreq if plat.file.vendor == Vendor::Intel && f.max_khz > f.base_khz => {
                Some(f.base_khz + 1000)
            }
            Driver::AcpiCpufreq => below_base(),
            _ => f.pstates_khz.last().copied(),
        };
        top.expect("a non-empty table")
    }

    /// The frequency the hardware aims for when the policy requests `khz`, before the turbo
    /// limit for the active-core count is applied. The "turbo allowed" entries map to max_khz.
    pub fn hardware_target_khz(self, plat: &Platform, cluster: usize, khz: u32) -> u32 {
        let f = &plat.cluster(cluster).frequency;
        let turbo_entry = match (self, plat.file.vendor) {
            (Driver::AcpiCpufreq, Vendor::Intel) => khz > f.base_khz,
            (Driver::AcpiCpufreq, _) => khz >= f.base_khz && f.max_khz > f.base_khz,
            _ => false,
        };
        if turbo_entry {
            f.max_khz
        } else {
            khz
        }
    }

    /// The platform's usual driver, overridable in the governor spec (`driver=...`).
    pub fn default_for(plat: &Platform) -> Result<Driver> {
        Driver::parse(&plat.file.defaults.driver).map_err(|_| {
            SimError::config(plat.id(), "defaults.driver", format!("unknown driver '{}'", plat.file.defaults.driver))
        })
    }

    /// The `transition_delay_us` the driver sets itself, which becomes schedutil's default
    /// rate limit: intel_cpufreq asks for 500 µs (it would be 5000 µs with HWP in passive mode,
    /// which the model does not run).
    pub fn transition_delay_us(self) -> Option<u64> {
        match self {
            Driver::IntelCpufreq => Some(500),
            _ => None,
        }
    }

    /// `policy->dvfs_possible_from_any_cpu`: any CPU may change this driver's frequency, so a
    /// governor may act on a callback from a CPU outside the policy. cpufreq-dt
    /// (`cpufreq_init`) and scmi-cpufreq (`scmi_cpufreq_init`) set it; acpi-cpufreq,
    /// intel_pstate/intel_cpufreq and powernv-cpufreq do not.
    pub fn dvfs_possible_from_any_cpu(self) -> bool {
        matches!(self, Driver::CpufreqDt | Driver::Scmi)
    }

    /// `cpuinfo.transition_latency` as this driver reports it (None = unknown, CPUFREQ_ETERNAL).
    ///
    /// acpi-cpufreq (`acpi_cpufreq_cpu_init`, every version modelled) reports the largest `_PSS`
    /// TransitionLatency, capped at 20 µs for FFH (MSR) control as on every modern Intel and AMD
    /// part; firmware that gives none leaves 0, never CPUFREQ_ETERNAL. The preset's
    /// `transition_latency_ns["acpi-cpufreq"]` is that `_PSS` value (null: the firmware gives 0).
    pub fn transition_latency_ns(self, plat: &Platform, cluster: usize) -> Option<u64> {
        let reported = plat.transition_latency_ns(cluster, self.name());
        match self {
            Driver::AcpiCpufreq => Some(reported.unwrap_or(0).min(ACPI_FFH_LATENCY_CAP_NS)),
            _ => reported,
        }
    }

    /// `cpuinfo.max_freq` (kHz): the top of the table, except acpi-cpufreq since 5.12
    /// (`acpi_cpufreq_cpu_init`), which scales the top `_PSS` entry (taken as CPPC nominal) by
    /// `get_max_boost_ratio` when the firmware has a `_CPC`:
    ///
    /// ```text
    ///   max_freq = pss_top · ((highest_perf << 10) / nominal_perf) >> 10
    /// ```
    /// It is schedutil's reference when PELT is invariant.
    pub fn cpuinfo_max_khz(self, plat: &Platform, cluster: usize, kernel: KernelVersion) -> u32 {
        let top = self.table_top_khz(plat, cluster);
        if self != Driver::AcpiCpufreq || kernel < KernelVersion(5, 12, 0) {
            return top;
        }
        match crate::hw::invariance::acpi_max_boost_ratio(kernel, plat) {
            Some(ratio) => ((top as u64 * ratio) >> 10) as u32,
            None => top,
        }
    }

    /// Whether the cpufreq core can round a request to a table entry for this driver: drivers
    /// with a `target_index` callback can, intel_pstate's passive mode (`intel_cpufreq`, only
    /// `target` and `fast_switch`) cannot, so it takes any kHz and picks its P-state itself.
    pub fn resolves_in_table(self) -> bool {
        !matches!(self, Driver::IntelCpufreq | Driver::IntelPstate)
    }

    /// cpufreq_driver_resolve_freq (drivers/cpufreq/cpufreq.c): the request clamped to the
    /// policy limits, then the lowest table entry at or above it (CPUFREQ_RELATION_L) when the
    /// driver has a table. intel_cpufreq has none: the clamped kHz itself comes back, and
    /// intel_cpufreq_fast_switch later rounds it up to a P-state (DIV_ROUND_UP by the ratio's
    /// 100 MHz), which on its table of every ratio is the same lowest-entry-at-or-above.
    pub fn resolve_freq(self, table: &[u32], target_khz: u32, min_khz: u32, max_khz: u32) -> u32 {
        let target = target_khz.clamp(min_khz, max_khz);
        if self.resolves_in_table() {
            table_lookup(table, target, Relation::L).clamp(min_khz, max_khz)
        } else {
            target
        }
    }
}

/// Whether requests reach powernv by fast switch: a governor that enables it (schedutil) uses
/// `->fast_switch` where the driver has one, and powernv has `powernv_fast_switch` from 4.10
/// (absent in 4.9, present in 4.14). Other governors always go through
/// `__cpufreq_driver_target` and `target_index`.
pub(crate) fn powernv_fast_switch_used(governor_fast_switches: bool, kernel: KernelVersion) -> bool {
    governor_fast_switches && kernel >= KernelVersion(4, 10, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::default_transition_delay_us;

    fn preset(json: &str, id: &str) -> Platform {
        Platform::from_json(json, id).unwrap()
    }

    fn epyc() -> Platform {
        preset(include_str!("../../../../python/dvfslab/data/platforms/epyc7742-2s.json"), "epyc7742-2s")
    }

    fn haswell() -> Platform {
        preset(include_str!("../../../../python/dvfslab/data/platforms/haswell-e5-2670v3-2s.json"), "haswell")
    }

    /// acpi_cpufreq_cpu_init: the largest _PSS latency, capped at 20 µs under FFH; a firmware
    /// that gives none leaves 0 (never CPUFREQ_ETERNAL), and cpufreq's default delay for 0 is
    /// LATENCY_MULTIPLIER, 1 ms, at every version (cpufreq_policy_transition_delay_us; 4.7-4.13
    /// sugov_init).
    #[test]
    fn acpi_cpufreq_reports_its_pss_latency_capped_at_20_us_and_never_eternal() {
        let epyc = epyc();
        assert_eq!(Driver::AcpiCpufreq.transition_latency_ns(&epyc, 0), Some(0));
        for (k, expected_us) in [((4, 9), 1000), ((5, 9), 1000), ((6, 9), 1000), ((6, 12), 1000), ((6, 18), 1000)] {
            let latency = Driver::AcpiCpufreq.transition_latency_ns(&epyc, 0);
            let delay = default_transition_delay_us(KernelVersion(k.0, k.1, 0), None, latency);
            assert_eq!(delay, expected_us, "EPYC at {}.{}", k.0, k.1);
        }
        assert_eq!(Driver::AcpiCpufreq.transition_latency_ns(&haswell(), 0), Some(10_000));
        // A buggy firmware's 500 µs is capped at 20 µs.
        let mut doc: serde_json::Value =
            serde_json::from_str(include_str!("../../../../python/dvfslab/data/platforms/haswell-e5-2670v3-2s.json"))
                .unwrap();
        doc["clusters"][0]["frequency"]["transition_latency_ns"]["acpi-cpufreq"] = serde_json::json!(500000);
        let text = doc.to_string();
        assert_eq!(Driver::AcpiCpufreq.transition_latency_ns(&preset(&text, "slow-pss"), 0), Some(20_000));
    }

    /// acpi_cpufreq_cpu_init since 5.12: cpuinfo.max_freq = top _PSS entry · get_max_boost_ratio
    /// (AMD: amd_get_highest_perf's 166 for Rome over _CPC nominal 110 → 1545/1024); without a
    /// _CPC, or before 5.12, the table's top.
    #[test]
    fn acpi_cpufreq_max_freq_is_boost_scaled_from_cppc_since_5_12() {
        let epyc = epyc();
        assert_eq!(Driver::AcpiCpufreq.cpuinfo_max_khz(&epyc, 0, KernelVersion(5, 11, 0)), 2_250_000);
        assert_eq!(Driver::AcpiCpufreq.cpuinfo_max_khz(&epyc, 0, KernelVersion(5, 12, 0)), (2_250_000 * 1545) >> 10);
        assert_eq!(Driver::AcpiCpufreq.cpuinfo_max_khz(&epyc, 0, KernelVersion(6, 18, 0)), 3_394_775);
        let haswell = haswell();
        assert_eq!(Driver::AcpiCpufreq.cpuinfo_max_khz(&haswell, 0, KernelVersion(6, 18, 0)), 2_301_000);
        assert_eq!(Driver::IntelCpufreq.cpuinfo_max_khz(&haswell, 0, KernelVersion(6, 18, 0)), 3_100_000);
    }

    #[test]
    fn the_table_top_is_the_tables_last_entry() {
        for plat in [epyc(), haswell()] {
            for &(name, driver) in Driver::ALL {
                let table = driver.table_khz(&plat, 0);
                assert_eq!(Some(&driver.table_top_khz(&plat, 0)), table.last(), "{name}");
            }
        }
    }

    #[test]
    fn only_table_drivers_round_a_resolved_request() {
        // cpufreq_driver_resolve_freq: target_index drivers get the RELATION_L entry;
        // intel_cpufreq (no target_index, no resolve_freq) gets the clamped kHz back.
        let t = [800_000, 1_200_000, 1_600_000, 2_000_000];
        assert_eq!(Driver::AcpiCpufreq.resolve_freq(&t, 1_300_000, 800_000, 2_000_000), 1_600_000);
        assert_eq!(Driver::CpufreqDt.resolve_freq(&t, 1_300_000, 800_000, 1_200_000), 1_200_000);
        assert_eq!(Driver::IntelCpufreq.resolve_freq(&t, 1_300_000, 800_000, 2_000_000), 1_300_000);
        assert_eq!(Driver::IntelCpufreq.resolve_freq(&t, 2_500_000, 800_000, 2_000_000), 2_000_000);
        assert_eq!(Driver::IntelCpufreq.resolve_freq(&t, 500_000, 800_000, 2_000_000), 800_000);
    }
}
