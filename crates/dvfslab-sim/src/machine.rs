//! What a run never changes: the platform, the cpufreq driver, the kernel version, the tick,
//! the frequency-invariance references, the PELT time shift, the voltage tables and each
//! policy's frequency table. Built once from the platform and the governor configuration's
//! system settings (`crate::governor::core::machine_for`), then shared read-only by the live
//! simulation and by a trace replay, which needs the same facts without a run.

use crate::error::Result;
use crate::hw::driver::Driver;
use crate::hw::platform::{Platform, Vendor};
use crate::kernel::KernelVersion;
use crate::sched::pelt::SCHED_CAPACITY_SCALE;

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

/// The settings around the governor that shape the machine (the governor spec's system keys,
/// resolved by `crate::governor::core::machine_for`).
pub(crate) struct Settings<'a> {
    pub driver: Driver,
    pub kernel: KernelVersion,
    /// Tick rate (Hz); 0 = the platform's default.
    pub hz: u32,
    /// `freq_max=`: the frequency-invariance reference (None: the kernel's).
    pub freq_max: Option<&'a str>,
    /// `invariant=` as given (-1: as the kernel has it).
    pub invariant: f64,
    pub pelt_multiplier: u64,
    pub slow_rampdown: bool,
    /// Requests reach powernv by fast switch (`powernv_fast_switch_used` in hw/driver.rs).
    pub powernv_fast_switch: bool,
}

impl Machine {
    /// The machine `plat` becomes with `settings`: its tick, invariance and tables. Refuses
    /// an invariance setting the platform cannot have.
    pub(crate) fn new(mut plat: Platform, settings: Settings) -> Result<Machine> {
        let Settings { driver, kernel, hz, .. } = settings;
        apply_kernel_capacities(&mut plat, kernel);
        let hz = if hz == 0 { plat.file.defaults.hz } else { hz };
        let freq_ratio = crate::hw::invariance::reference_ratios(&plat, settings.freq_max, kernel, driver)?;
        let invariant = crate::hw::invariance::resolve_invariant(settings.invariant, kernel, &plat)?;
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
            pelt_shift: 10 - settings.pelt_multiplier.trailing_zeros(),
            slow_rampdown: settings.slow_rampdown,
            powernv_fast_switch: settings.powernv_fast_switch,
            voltages,
            tables,
            cpuinfo_max_khz,
            every_cpu: (0..plat.ncpus()).collect(),
            plat,
        })
    }

    /// The voltage (mV) `cluster` needs at `khz`: looked up for the frequencies its domains
    /// run, interpolated along the V/f curve for any other.
    pub(crate) fn voltage_mv(&self, cluster: usize, khz: u32) -> f64 {
        let table = &self.voltages[cluster];
        match table.binary_search_by_key(&khz, |&(k, _)| k) {
            Ok(i) => table[i].1,
            Err(_) => self.plat.voltage_mv(cluster, khz),
        }
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

/// The first kernel whose arm64 topology header points the scheduler's
/// `arch_scale_cpu_capacity` at the capacities parsed from the device tree
/// (`topology_get_cpu_scale`, arch/arm64/include/asm/topology.h, 4.15). arm64 4.10 – 4.14 parsed
/// `capacity-dmips-mhz` and showed it in sysfs, but the scheduler kept its generic 1024.
const ARM64_CPU_CAPACITY_KERNEL: KernelVersion = KernelVersion(4, 15, 0);

/// Set each CPU's `cap_orig` to what the scheduler of `kernel` sees: the preset's capacities,
/// except on arm64 before 4.15, where every CPU is 1024 to the scheduler (so placement,
/// wake_cap and schedutil see a symmetric machine) while the cores still run at their own
/// speed.
pub(crate) fn apply_kernel_capacities(plat: &mut Platform, kernel: KernelVersion) {
    if plat.file.vendor == Vendor::Arm && kernel < ARM64_CPU_CAPACITY_KERNEL {
        for c in plat.cpus.iter_mut() {
            c.cap_orig = SCHED_CAPACITY_SCALE;
        }
    }
}
