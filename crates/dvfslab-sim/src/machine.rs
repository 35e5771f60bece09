//! What a run never changes: the platform, the cpufreq driver, the kernel version, the tick,
//! the frequency-invariance references, the PELT time shift, the voltage tables and each
//! policy's frequency table. Built once from the platform and the governor configuration, then
//! shared read-only by the live simulation and by a trace replay, which needs the same facts
//! without a run.

use crate::error::{Result, SimError};
use crate::governor::{GovernorConfig, GovernorInfo};
use crate::hw::driver::Driver;
use crate::hw::platform::Platform;
use crate::kernel::KernelVersion;

pub struct Machine {
    pub(crate) plat: Platform,
    pub(crate) driver: Driver,
    pub(crate) kernel: KernelVersion,
    pub(crate) tick_ns: u64,
    pub(crate) invariant: bool,
    /// Frequency-invariance reference per cluster as a ratio to base, times 1024.
    pub(crate) freq_ratio: Vec<u64>,
    /// PELT time shift: 10 - log2(multiplier).
    pub(crate) pelt_shift: u32,
    /// powernv: let the global (voltage) P-state fall slowly (4.8+).
    pub(crate) slow_rampdown: bool,
    /// powernv: requests arrive by fast switch (a governor that uses `->fast_switch`, on 4.10+),
    /// which sets the global P-state equal to the local one (`powernv_fast_switch`).
    pub(crate) powernv_fast_switch: bool,
    /// Per cluster, the voltage (mV) of each frequency its domains run (P-states and turbo
    /// bins), ascending by frequency: the few frequencies a run switches among, so a binary
    /// search at a switch rather than a walk along the V/f curve (`Sim::voltage_mv`).
    pub(crate) voltages: Vec<Vec<(u32, f64)>>,
    /// Per policy, the frequency table as the driver gives it (kHz, ascending).
    pub(crate) tables: Vec<Vec<u32>>,
    /// Per policy, the driver's `cpuinfo.max_freq` for the simulated kernel, read at every
    /// decision.
    pub(crate) cpuinfo_max_khz: Vec<u32>,
    /// Every CPU id in order, for searches of the whole machine (built once, not per search).
    pub(crate) every_cpu: Vec<usize>,
}

impl Machine {
    /// The machine `plat` becomes under the governor configuration `gov_cfg` (of the registry's
    /// `gov_info`): its driver (the governor's own, `driver=`, or the platform's default), tick,
    /// kernel, invariance and tables. Refuses a configuration the platform cannot run.
    pub fn new(plat: Platform, gov_cfg: &GovernorConfig, gov_info: &GovernorInfo) -> Result<Machine> {
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
        let hz = match gov_cfg.values.get_u64("hz") as u32 {
            0 => plat.file.defaults.hz,
            hz => hz,
        };
        let kernel = match gov_cfg.text_value("kernel") {
            Some(v) => KernelVersion::parse(v)?,
            None => KernelVersion::DEFAULT,
        };
        let freq_ratio =
            crate::hw::invariance::reference_ratios(&plat, gov_cfg.text_value("freq_max"), kernel, driver)?;
        let invariant = crate::hw::invariance::resolve_invariant(gov_cfg.values.get("invariant"), kernel, &plat)?;
        let tables: Vec<Vec<u32>> = plat.policies.iter().map(|p| driver.table_khz(&plat, p.cluster)).collect();
        let cpuinfo_max_khz = plat.policies.iter().map(|p| driver.cpuinfo_max_khz(&plat, p.cluster, kernel)).collect();
        let voltages = (0..plat.file.clusters.len())
            .map(|cl| plat.hardware_freqs_khz(cl).into_iter().map(|khz| (khz, plat.voltage_mv(cl, khz))).collect())
            .collect();
        Ok(Machine {
            driver,
            kernel,
            tick_ns: (1_000_000_000 + hz as u64 / 2) / hz as u64,
            invariant,
            freq_ratio,
            pelt_shift: 10 - gov_cfg.values.get_u64("pelt_multiplier").trailing_zeros(),
            slow_rampdown: gov_cfg.values.get("slow_rampdown") != 0.0,
            powernv_fast_switch: crate::hw::powernv::fast_switch_used(gov_info.enables.fast_switch, kernel),
            voltages,
            tables,
            cpuinfo_max_khz,
            every_cpu: (0..plat.ncpus()).collect(),
            plat,
        })
    }

    /// The platform the machine is built from.
    pub fn platform(&self) -> &Platform {
        &self.plat
    }

    /// The simulated kernel's version.
    pub fn kernel(&self) -> KernelVersion {
        self.kernel
    }
}
