//! The Energy Model (docs/heterogeneous.md): per performance domain, its performance states
//! with power, performance and cost, as Linux builds it from a device tree's
//! `dynamic-power-coefficient` and the OPP table (`kernel/power/energy_model.c`,
//! `drivers/opp/of.c`), and the energy estimate EAS compares placements with.
//!
//! ```text
//!   power_i       = dpc · mV_i² · MHz_i / 10⁶            µW, dynamic power only
//!   performance_i = cap_orig · f_i / f_max
//!   cost_i        = power_i · 10 / performance_i          ≥ 6.9 (×10 for resolution)
//!                 | f_max · power_i / f_i                 ≤ 6.8
//!   inefficient   : cost_i ≥ the cost of some higher state (skipped by lookups)
//!
//!   em_cpu_energy(max_util, sum_util, allowed_cap):        max_util already carries the headroom
//!       u  = min(max_util, allowed_cap)
//!       ≥ 6.9: ps = lowest efficient state with performance ≥ u (else the highest)
//!              energy = ps.cost · sum_util
//!       ≤ 6.8: ps = lowest efficient state with frequency ≥ f_max · u / cap_orig
//!              energy = ps.cost · sum_util / cap_orig
//! ```
//! Energy ∝ power × busy time, and busy time ∝ util / performance: both forms compute
//! `power / performance · util`, in different units.
//!
//! Only Arm presets get a model (a DT Energy Model); `dpc` is `c_eff_nf · activity · 1000`
//! (µW/MHz/V²), the inverse of how those presets were derived. Leakage, idle and uncore power
//! are not in it, as in Linux.

use crate::hw::platform::{Platform, Vendor};
use crate::kernel::KernelVersion;

/// Which cost formula the kernel uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostForm {
    /// 5.0–6.8: `f_max · power / f`, energy divided by cap_orig.
    Legacy,
    /// 6.9+: `10 · power / performance`, no division at run time.
    Performance,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerfState {
    pub khz: u32,
    pub power_uw: u64,
    pub performance: u64,
    /// Cost of the form the model was built for.
    pub cost: u64,
    pub inefficient: bool,
}

/// A performance domain: CPUs that share a frequency, and their states, ascending.
#[derive(Clone, Debug)]
pub struct PerfDomain {
    pub cpus: Vec<usize>,
    pub cap_orig: u64,
    pub states: Vec<PerfState>,
    pub form: CostForm,
}

impl PerfDomain {
    /// A domain from its OPPs `(kHz, µW)`, ascending.
    pub fn new(cpus: Vec<usize>, cap_orig: u64, opps: &[(u32, u64)], form: CostForm) -> PerfDomain {
        let f_max = opps.last().map_or(1, |o| o.0 as u64);
        let mut states: Vec<PerfState> = opps
            .iter()
            .map(|&(khz, power_uw)| {
                let performance = (cap_orig * khz as u64 / f_max).max(1);
                let cost = match form {
                    CostForm::Performance => power_uw * 10 / performance,
                    CostForm::Legacy => f_max * power_uw / khz as u64,
                };
                PerfState { khz, power_uw, performance, cost, inefficient: false }
            })
            .collect();
        // From the top down: a state that costs at least as much as a faster one is useless.
        let mut cheapest_above = u64::MAX;
        for s in states.iter_mut().rev() {
            if s.cost >= cheapest_above {
                s.inefficient = true;
            } else {
                cheapest_above = s.cost;
            }
        }
        PerfDomain { cpus, cap_orig, states, form }
    }

    /// The state a domain runs for `max_util` (capacity units, headroom included).
    pub fn lookup(&self, max_util: u64) -> &PerfState {
        let f_max = self.states.last().map_or(0, |s| s.khz as u64);
        let reaches = |s: &PerfState| match self.form {
            CostForm::Performance => s.performance >= max_util,
            CostForm::Legacy => s.khz as u64 >= f_max * max_util / self.cap_orig,
        };
        self.states
            .iter()
            .find(|s| !s.inefficient && reaches(s))
            .unwrap_or_else(|| self.states.last().expect("a domain has states"))
    }

    /// em_cpu_energy: the energy of `sum_util` of work at the state `max_util` selects, limited
    /// to `allowed_cap`. Units: cost units × util (comparable within one run only).
    pub fn energy(&self, max_util: u64, sum_util: u64, allowed_cap: u64) -> u64 {
        if sum_util == 0 {
            return 0;
        }
        let ps = self.lookup(max_util.min(allowed_cap));
        match self.form {
            CostForm::Performance => ps.cost * sum_util,
            CostForm::Legacy => ps.cost * sum_util / self.cap_orig,
        }
    }
}

/// One performance domain per cpufreq policy.
#[derive(Clone, Debug)]
pub struct EnergyModel {
    pub domains: Vec<PerfDomain>,
}

impl EnergyModel {
    /// The DT Energy Model of an Arm preset, from the driver's tables (`tables[policy]`);
    /// None for other vendors.
    pub fn from_platform(plat: &Platform, tables: &[Vec<u32>], kernel: KernelVersion) -> Option<EnergyModel> {
        if plat.file.vendor != Vendor::Arm {
            return None;
        }
        let form = if kernel >= KernelVersion(6, 9, 0) { CostForm::Performance } else { CostForm::Legacy };
        let domains = plat
            .policies
            .iter()
            .zip(tables)
            .map(|(pol, table)| {
                let opps: Vec<(u32, u64)> =
                    table.iter().map(|&khz| (khz, dt_power_uw(plat, pol.cluster, khz))).collect();
                PerfDomain::new(pol.cpus.clone(), plat.cpus[pol.cpus[0]].cap_orig, &opps, form)
            })
            .collect();
        Some(EnergyModel { domains })
    }
}

/// Power of one CPU at `khz` as the DT Energy Model computes it: integer mV and MHz.
pub fn dt_power_uw(plat: &Platform, cluster: usize, khz: u32) -> u64 {
    let p = &plat.cluster(cluster).power;
    let dpc = (p.c_eff_nf * p.activity * 1000.0).round() as u64;
    let mv = plat.voltage_mv(cluster, khz) as u64;
    dpc * mv * mv * (khz as u64 / 1000) / 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Worked example: a little domain of capacity 512 with 500/1000/1500 MHz at 50/150/350 mW.
    fn little(form: CostForm) -> PerfDomain {
        let opps = [(500_000, 50_000), (1_000_000, 150_000), (1_500_000, 350_000)];
        PerfDomain::new(vec![0], 512, &opps, form)
    }

    #[test]
    fn costs_of_the_spec_example() {
        let new = little(CostForm::Performance);
        let perf: Vec<u64> = new.states.iter().map(|s| s.performance).collect();
        assert_eq!(perf, [170, 341, 512]);
        let cost: Vec<u64> = new.states.iter().map(|s| s.cost).collect();
        assert_eq!(cost, [2941, 4398, 6835]);
        let old: Vec<u64> = little(CostForm::Legacy).states.iter().map(|s| s.cost).collect();
        assert_eq!(old, [150_000, 225_000, 350_000]);
        assert!(new.states.iter().all(|s| !s.inefficient));
    }

    #[test]
    fn energies_of_the_spec_example() {
        let (new, old) = (little(CostForm::Performance), little(CostForm::Legacy));
        // max_util 300 → ×1.25 = 375 → the top state; sum_util 300.
        assert_eq!(new.energy(375, 300, 512), 2_050_500);
        assert_eq!(old.energy(375, 300, 512), 205_078);
        // max_util 200 → 250 → the middle state. The spec's figures (1 539 300 / 153 808)
        // are for sum_util 350: 4398 · 350 and 225 000 · 350 / 512.
        assert_eq!(new.energy(250, 350, 512), 1_539_300);
        assert_eq!(old.energy(250, 350, 512), 153_808);
        assert_eq!(new.energy(250, 0, 512), 0);
        // allowed_cap limits the state: at most the middle one when capped at 341.
        assert_eq!(new.energy(512, 100, 341), 4398 * 100);
    }

    #[test]
    fn inefficient_states_are_skipped() {
        // The middle state costs more per unit of work than the top one.
        let opps = [(500_000, 50_000), (1_000_000, 300_000), (1_500_000, 350_000)];
        let pd = PerfDomain::new(vec![0], 512, &opps, CostForm::Performance);
        let flags: Vec<bool> = pd.states.iter().map(|s| s.inefficient).collect();
        assert_eq!(flags, [false, true, false]);
        assert_eq!(pd.lookup(250).khz, 1_500_000);
        assert_eq!(pd.lookup(100).khz, 500_000);
    }

    #[test]
    fn pixel6_model_from_the_preset() {
        let text = include_str!("../../../../python/dvfslab/data/platforms/pixel6.json");
        let plat = Platform::from_json(text, "pixel6").unwrap();
        let tables: Vec<Vec<u32>> =
            plat.policies.iter().map(|p| plat.cluster(p.cluster).frequency.pstates_khz.clone()).collect();
        let em = EnergyModel::from_platform(&plat, &tables, KernelVersion(6, 18, 0)).unwrap();
        let caps: Vec<u64> = em.domains.iter().map(|d| d.cap_orig).collect();
        assert_eq!(caps, [160, 498, 1024]);
        // The preset's notes: X1 at 2802 MHz ≈ 2032 mW, A76 at 2253 MHz ≈ 600 mW, A55 at
        // 1803 MHz ≈ 104 mW (integer mV: 1056, 968, 906).
        let top: Vec<u64> = em.domains.iter().map(|d| d.states.last().unwrap().power_uw).collect();
        assert_eq!(top, [103_597, 599_556, 2_030_997]);
        // No inefficient OPPs: voltage rises with every step.
        assert!(em.domains.iter().all(|d| d.states.iter().all(|s| !s.inefficient)));
        // A mid CPU at its lowest OPP does work more cheaply than a little one at its top.
        assert!(em.domains[1].states[0].cost < em.domains[0].states.last().unwrap().cost);
        let text = include_str!("../../../../python/dvfslab/data/platforms/skylake-e3-1240v5.json");
        let x86 = Platform::from_json(text, "skylake").unwrap();
        assert!(EnergyModel::from_platform(&x86, &[], KernelVersion(6, 18, 0)).is_none());
    }
}
