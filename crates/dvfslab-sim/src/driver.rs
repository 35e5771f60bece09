//! cpufreq drivers: which frequencies a policy may request, and what the hardware makes of a
//! request.
//!
//! Two facts shape every x86 result. acpi-cpufreq's top `_PSS` entry is base + 1 MHz and
//! means "turbo allowed": the hardware then picks the bin for the number of active cores
//! (AMD's P0 likewise allows Core Performance Boost). intel_cpufreq exposes every ratio, turbo
//! ones included, and the hardware caps a turbo request at the bin it can grant.

use crate::error::{Result, SimError};
use crate::platform::{Platform, Vendor};

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

    /// `cpuinfo.transition_latency` as this driver reports it (None = unknown).
    pub fn transition_latency_ns(self, plat: &Platform, cluster: usize) -> Option<u64> {
        plat.transition_latency_ns(cluster, self.name())
    }
}

/// Pick a table entry for `target` with a cpufreq relation (the table is ascending).
pub fn table_lookup(table: &[u32], target: u32, relation: crate::governor::Relation) -> u32 {
    use crate::governor::Relation;
    match relation {
        Relation::L => table.iter().copied().find(|&f| f >= target).unwrap_or(table[table.len() - 1]),
        Relation::H => table.iter().rev().copied().find(|&f| f <= target).unwrap_or(table[0]),
        Relation::C => {
            let hi = table.iter().copied().find(|&f| f >= target);
            let lo = table.iter().rev().copied().find(|&f| f <= target);
            match (lo, hi) {
                (Some(l), Some(h)) => {
                    if target - l <= h - target {
                        l
                    } else {
                        h
                    }
                }
                (Some(l), None) => l,
                (None, Some(h)) => h,
                (None, None) => table[0],
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governor::Relation;

    #[test]
    fn relations_pick_as_cpufreq_does() {
        let t = [800_000, 1_200_000, 1_600_000, 2_000_000];
        assert_eq!(table_lookup(&t, 1_300_000, Relation::L), 1_600_000);
        assert_eq!(table_lookup(&t, 1_300_000, Relation::H), 1_200_000);
        assert_eq!(table_lookup(&t, 1_300_000, Relation::C), 1_200_000);
        assert_eq!(table_lookup(&t, 1_400_000, Relation::C), 1_200_000); // tie goes low
        assert_eq!(table_lookup(&t, 1_500_000, Relation::C), 1_600_000);
        assert_eq!(table_lookup(&t, 3_000_000, Relation::L), 2_000_000);
        assert_eq!(table_lookup(&t, 100_000, Relation::H), 800_000);
    }
}
