//! The cpufreq core between a governor and the driver (drivers/cpufreq/cpufreq.c): a policy's
//! limits and current frequency (`struct cpufreq_policy`), what it reports of the driver and
//! the kernel (`cpuinfo`, the default transition delay), and what it does with a governor's
//! request before the driver sees it (clamp to the limits, pick a table entry, drop a request
//! that changes nothing).
//!
//! ```text
//!   governor ──request khz──▶ clamp to [min, max] ──▶ table entry (relation) ──▶ same as cur?
//!                                                                                 │ no
//!                                                                                 ▼
//!                                                                  driver (hw/driver.rs, powernv)
//! ```
//!
//! [`PolicyFacts`] is the half of a governor's [`PolicyCtx`](super::PolicyCtx) that needs no
//! running scheduler: the live simulation, a recorded trace and a scripted test context all
//! give it from the same [`Machine`].

use super::freq_table::{table_lookup, Relation};
use super::{Governor, GovernorConfig, GovernorInfo, UpdateFlags};
use crate::error::{Result, SimError};
use crate::hw::driver::Driver;
use crate::hw::platform::{CpuIdFile, Platform, Vendor};
use crate::kernel::KernelVersion;
use crate::machine::{Machine, Settings};

/// The machine `plat` becomes under the governor configuration `gov_cfg` (of the registry's
/// `gov_info`): its driver (the governor's own, `driver=`, or the platform's default) and the
/// system settings the spec gives. Refuses a configuration the platform cannot run.
pub(crate) fn machine_for(plat: Platform, gov_cfg: &GovernorConfig, gov_info: &GovernorInfo) -> Result<Machine> {
    let driver = match (gov_info.driver, gov_cfg.text_value("driver")) {
        (Some(forced), Some(asked)) if forced != asked => {
            return Err(SimError::config(
                format!("governor '{}'", gov_info.name),
                "driver",
                format!("this governor is part of the {forced} driver; got driver={asked}"),
            ))
        }
        (Some(forced), _) => Driver::parse(forced)?,
        (None, Some(name)) => Driver::parse(name)?,
        (None, None) => Driver::default_for(&plat)?,
    };
    driver.check(&plat)?;
    gov_cfg.check_platform(gov_info, &plat)?;
    let kernel = gov_cfg.kernel()?;
    let settings = Settings {
        driver,
        kernel,
        hz: gov_cfg.values.get_u64("hz") as u32,
        freq_max: gov_cfg.text_value("freq_max"),
        invariant: gov_cfg.values.get("invariant"),
        pelt_multiplier: gov_cfg.values.get_u64("pelt_multiplier"),
        slow_rampdown: gov_cfg.values.get("slow_rampdown") != 0.0,
        powernv_fast_switch: crate::hw::driver::powernv_fast_switch_used(gov_info.enables.fast_switch, kernel),
    };
    Machine::new(plat, settings)
}

/// One cpufreq policy's state during a run: its limits and current frequency (policy->min,
/// ->max, ->cur), and the token of its governor's timer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Policy {
    pub min_khz: u32,
    pub max_khz: u32,
    pub cur_khz: u32,
    pub timer_token: u32,
}

impl Policy {
    /// A policy as cpufreq starts it on `table` (ascending): limits at the table's ends, the
    /// frequency at its lowest entry.
    pub(crate) fn new(table: &[u32]) -> Policy {
        Policy { min_khz: table[0], max_khz: table[table.len() - 1], cur_khz: table[0], timer_token: 0 }
    }
}

/// The cpufreq core's state: every policy, its governor, and the record of decisions.
pub(crate) struct Cpufreq {
    pub(crate) policies: Vec<Policy>,
    pub(crate) governors: Vec<Option<Box<dyn super::Governor>>>,
    pub(crate) gov_wants_util: bool,
    pub(crate) explain: Option<Vec<crate::observe::Decision>>,
    /// Inputs a governor gave with [`PolicyCtx::explain`] for its next request.
    pub(crate) pending_inputs: Vec<(&'static str, f64)>,
    pub(crate) governor_name: String,
}

impl Cpufreq {
    /// Every policy as cpufreq starts it, each with its governor built from `gov_cfg` (its own
    /// tunables where the spec gives some per policy), not started yet.
    pub(crate) fn new(machine: &Machine, gov_cfg: &GovernorConfig, gov_info: &GovernorInfo, explain: bool) -> Cpufreq {
        let plat = &machine.plat;
        let governors: Vec<Option<Box<dyn Governor>>> = match &gov_cfg.kernel_source {
            Some(source) => super::kernel_c::governors_for(source, machine).into_iter().map(Some).collect(),
            None => {
                plat.policies.iter().map(|p| Some((gov_info.build)(gov_cfg.values_for_policy(p.cpus[0])))).collect()
            }
        };
        let gov_wants_util = governors.iter().flatten().any(|g| g.wants_util_updates());
        let policies: Vec<Policy> = machine.tables.iter().map(|table| Policy::new(table)).collect();
        Cpufreq {
            policies,
            governors,
            gov_wants_util,
            explain: explain.then(Vec::new),
            pending_inputs: Vec::new(),
            governor_name: gov_cfg.spec.canonical(),
        }
    }
}

/// What a governor reads of its policy that the scheduler does not change: the machine's
/// facts for the policy, its limits, and whether PELT is frequency-invariant.
#[derive(Clone, Copy)]
pub struct PolicyFacts<'a> {
    pub(crate) machine: &'a Machine,
    pub(crate) policy: usize,
    pub(crate) limits: &'a Policy,
    pub(crate) invariant: bool,
}

impl<'a> PolicyFacts<'a> {
    /// This policy's index among the machine's policies (ordered by first CPU).
    pub fn index(self) -> usize {
        self.policy
    }
    /// The cpufreq driver (its Linux name), and whether it resolves a request to a table
    /// entry (every driver but intel_cpufreq and intel_pstate).
    pub fn driver(self) -> (&'static str, bool) {
        (self.machine.driver.name(), self.machine.driver.resolves_in_table())
    }
    /// The CPUs of each of the machine's policies, this one included.
    pub fn all_policy_cpus(self) -> impl Iterator<Item = &'a [usize]> {
        self.machine.plat.policies.iter().map(|p| p.cpus.as_slice())
    }
    pub fn cpus(self) -> &'a [usize] {
        &self.machine.plat.policies[self.policy].cpus
    }
    pub fn min_khz(self) -> u32 {
        self.limits.min_khz
    }
    pub fn max_khz(self) -> u32 {
        self.limits.max_khz
    }
    pub fn table_khz(self) -> &'a [u32] {
        &self.machine.tables[self.policy]
    }
    pub fn cap_orig(self, cpu: usize) -> u64 {
        self.machine.plat.cpus[cpu].cap_orig
    }
    pub fn kernel(self) -> KernelVersion {
        self.machine.kernel
    }
    pub fn cpu_identity(self) -> (Vendor, Option<CpuIdFile>) {
        (self.machine.plat.file.vendor, self.machine.plat.file.cpuid)
    }
    /// The hardware limits of the policy's cluster: (min, base, max) kHz.
    pub fn cpuinfo_khz(self) -> (u32, u32, u32) {
        let f = &self.machine.plat.cluster(self.cluster()).frequency;
        (f.min_khz, f.base_khz, f.max_khz)
    }
    pub fn cpuinfo_max_khz(self) -> u32 {
        self.machine.cpuinfo_max_khz[self.policy]
    }
    pub fn transition_latency_ns(self) -> Option<u64> {
        self.machine.driver.transition_latency_ns(&self.machine.plat, self.cluster())
    }
    /// The default transition delay the core derives from the driver and the kernel
    /// (`cpufreq_policy_transition_delay_us`): schedutil's default rate limit.
    pub fn default_transition_delay_us(self) -> u64 {
        crate::kernel::default_transition_delay_us(
            self.machine.kernel,
            self.machine.driver.transition_delay_us(),
            self.transition_latency_ns(),
        )
    }
    /// cpufreq_this_cpu_can_update: a callback from the policy's own CPU always may act, a
    /// remote one only when the driver lets any CPU change the frequency.
    pub fn this_cpu_can_update(self, flags: UpdateFlags) -> bool {
        !flags.remote || self.machine.driver.dvfs_possible_from_any_cpu()
    }
    pub fn tick_ns(self) -> u64 {
        self.machine.tick_ns
    }
    /// CPUFREQ_NEED_UPDATE_LIMITS: the driver wants a governor's request after every limits
    /// update, even one that leaves the frequency as it was (intel_cpufreq from 5.10).
    pub fn driver_needs_update_limits(self) -> bool {
        matches!(self.machine.driver, Driver::IntelCpufreq) && self.machine.kernel >= KernelVersion(5, 10, 0)
    }
    pub fn invariant(self) -> bool {
        self.invariant
    }
    pub fn pelt_multiplier(self) -> u64 {
        1 << (10 - self.machine.pelt_shift)
    }
    /// cpufreq_driver_resolve_freq: the request within the limits, rounded up to a table entry
    /// when the driver has a table.
    pub fn resolve_freq(self, khz: u32) -> u32 {
        let (min, max) = (self.limits.min_khz, self.limits.max_khz);
        self.machine.driver.resolve_freq(self.table_khz(), khz, min, max)
    }
    /// What `__cpufreq_driver_target` makes of a request of `khz`: the request within the
    /// limits, and the table entry `relation` selects for it (within the limits too).
    pub fn target(self, khz: u32, relation: Relation) -> (u32, u32) {
        let (min, max) = (self.limits.min_khz, self.limits.max_khz);
        let target = khz.clamp(min, max);
        (target, table_lookup(self.table_khz(), target, relation).clamp(min, max))
    }
    /// Whether the driver is called with the request `target` returned (see
    /// `core_calls_driver`).
    pub fn calls_driver(self, clamped_khz: u32, resolved_khz: u32) -> bool {
        core_calls_driver(self.machine.driver, clamped_khz, resolved_khz, self.limits.cur_khz)
    }
    fn cluster(self) -> usize {
        self.machine.plat.policies[self.policy].cluster
    }
}

/// Whether the cpufreq core passes a governor's request on to the driver
/// (`__cpufreq_driver_target`, drivers/cpufreq/cpufreq.c). `clamped_khz` is the request within
/// the policy limits, `resolved_khz` the table entry it selects, `cur_khz` is `policy->cur`.
///
/// - A table driver never sees a request that selects `policy->cur`: from 5.14 the core
///   resolves the request (`__resolve_freq`) before comparing with `policy->cur`; on 4.7–5.13
///   it compares the clamped request, and `__target_index` then drops one whose table entry is
///   `policy->cur`. Both forms skip the same requests.
/// - intel_pstate in active mode is a `->setpolicy` driver: its own algorithm writes the
///   P-state and the core takes no part, so every request reaches the hardware model.
/// - intel_cpufreq (`->target`, no table in the kernel): only a clamped request equal to
///   `policy->cur` is skipped.
pub(crate) fn core_calls_driver(driver: Driver, clamped_khz: u32, resolved_khz: u32, cur_khz: u32) -> bool {
    match driver {
        Driver::IntelPstate => true,
        Driver::IntelCpufreq => clamped_khz != cur_khz,
        _ => resolved_khz != cur_khz,
    }
}

/// The machine a governor spec makes of a shipped preset, for unit tests that build one part
/// of the simulator alone: no run, no scheduler.
#[cfg(test)]
pub(crate) fn test_machine(preset: &str, governor: &str) -> Machine {
    let plat = crate::hw::platform::test_preset(preset);
    let (cfg, info) = GovernorConfig::parse(governor).unwrap();
    machine_for(plat, &cfg, info).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request that resolves to the current entry never reaches a table driver (5.14+:
    /// `__resolve_freq` first; 4.7–5.13: `__target_index`), whatever the raw request was.
    #[test]
    fn a_request_resolving_to_the_current_entry_stops_in_the_core() {
        assert!(!core_calls_driver(Driver::Powernv, 2_100_000, 2_061_000, 2_061_000));
        assert!(!core_calls_driver(Driver::AcpiCpufreq, 2_061_000, 2_061_000, 2_061_000));
        assert!(core_calls_driver(Driver::Powernv, 2_100_000, 2_128_000, 2_061_000));
        // A ->target driver without a table is skipped only on an equal clamped request.
        assert!(core_calls_driver(Driver::IntelCpufreq, 2_050_000, 2_000_000, 2_000_000));
        assert!(!core_calls_driver(Driver::IntelCpufreq, 2_000_000, 2_000_000, 2_000_000));
        // intel_pstate's own algorithms do not go through the core.
        assert!(core_calls_driver(Driver::IntelPstate, 800_000, 800_000, 800_000));
    }

    /// A policy starts at its table's bottom with the whole table allowed; a request is clamped
    /// to the limits before the relation picks an entry.
    #[test]
    fn a_request_is_clamped_to_the_limits_then_matched_to_the_table() {
        let m = test_machine("skylake-e3-1240v5", "schedutil:driver=acpi-cpufreq");
        let table = &m.tables[0];
        let mut limits = Policy::new(table);
        assert_eq!((limits.min_khz, limits.cur_khz, limits.max_khz), (table[0], table[0], *table.last().unwrap()));
        limits.max_khz = table[table.len() / 2];
        let facts = PolicyFacts { machine: &m, policy: 0, limits: &limits, invariant: m.invariant };
        let (clamped, entry) = facts.target(u32::MAX, Relation::L);
        assert_eq!((clamped, entry), (limits.max_khz, limits.max_khz));
        let between = (table[1] + table[2]) / 2;
        assert_eq!(facts.target(between, Relation::H), (between, table[1]));
        assert_eq!(facts.target(between, Relation::L), (between, table[2]));
        assert_eq!(facts.resolve_freq(between), table[2]);
        // The request that selects policy->cur is dropped before the driver.
        assert!(!facts.calls_driver(table[0] + 1, table[0]));
        assert!(facts.calls_driver(between, table[2]));
    }
}
