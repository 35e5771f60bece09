//! The hardware side of a simulation: what frequency each domain runs, how fast a task makes
//! progress there, what every core and package draws, and the APERF/MPERF/TSC and RAPL
//! counters. `Hw` holds this state and its own methods; the sequences that also touch the
//! scheduler (frequency switches, core power, the counters' sync, idle states) are in
//! sim/hardware.rs.
//!
//! Energy is integrated exactly: each core and package holds its current power and the time
//! it was last accounted, and is "touched" (energy += power · elapsed) before anything that
//! changes its power. Counters are advanced the same way before frequency or C-state changes.

pub(crate) mod cpuidle;
pub mod driver;
pub mod invariance;
pub mod platform;
pub mod power;
pub mod powernv;

use crate::engine::EventQueue;
use crate::engine::TimeNs;
use crate::hw::platform::{IdleScope, VoltageScope};
use crate::machine::Machine;

/// How often RAPL counters are read so that wraps are never missed (as turbostat does).
pub const RAPL_SAMPLE_NS: u64 = 1_000_000_000;

/// The hardware's state: each core's, frequency domain's and package's, powernv's voltage
/// ramps, and the idle governor.
pub(crate) struct Hw {
    pub(crate) cores: Vec<Core>,
    pub(crate) domains: Vec<Domain>,
    pub(crate) packages: Vec<Package>,
    pub(crate) ramps: Vec<crate::hw::powernv::Ramp>,
    /// Per CPU: the policy whose powernv ramp timer came due while the CPU idled, to run when
    /// it wakes (the timer is deferrable).
    pub(crate) deferred_ramp: Vec<Option<usize>>,
    /// The idle governor (menu), with its per-CPU history.
    pub(crate) idle_governor: Box<dyn crate::hw::cpuidle::IdleGovernor>,
    /// Every idle-state choice with its inputs, when explaining.
    pub(crate) idle_log: Option<Vec<crate::observe::IdleDecision>>,
    /// Per CPU: APERF and MPERF.
    pub(crate) counters: Vec<Counters>,
}

impl Hw {
    /// The hardware at the start of a run: every domain at its cluster's lowest frequency,
    /// nothing accounted yet; `Sim::init_hardware` then powers it as every CPU idles deepest.
    pub(crate) fn new(machine: &Machine) -> Hw {
        let plat = &machine.plat;
        let cores = plat
            .cores
            .iter()
            .map(|core| Core {
                busy_threads: 0,
                placement_idle_threads: core.cpus.len() as u32,
                power_w: 0.0,
                energy_j: 0.0,
                since: 0,
                active: false,
            })
            .collect();
        let domains = plat
            .domains
            .iter()
            .map(|d| {
                let f = plat.cluster(d.cluster).frequency.min_khz;
                Domain {
                    request_khz: f,
                    global_khz: 0,
                    actual_khz: f,
                    pending_khz: None,
                    apply_token: 0,
                    mv: plat.voltage_mv(d.cluster, f),
                    freq_ns: Vec::new(),
                    freq_since: 0,
                    request_unsettled: true,
                }
            })
            .collect();

        let packages = plat
            .packages
            .iter()
            .map(|_| Package {
                active_cores: vec![0; plat.file.clusters.len()],
                uncore_w: 0.0,
                uncore_level: None,
                uncore_at_top: 0,
                uncore_energy_j: 0.0,
                idle_ns: 0,
                uncore_clock_s: 0.0,
                since: 0,
                mv: 0.0,
                rapl_last: 0,
                energy_before_warmup_j: 0.0,
                pcu_pending: false,
                rapl_units: 0,
                numa_spread: Default::default(),
            })
            .collect();
        Hw {
            cores,
            domains,
            packages,
            ramps: vec![powernv::Ramp::default(); plat.policies.len()],
            deferred_ramp: vec![None; plat.ncpus()],
            idle_governor: cpuidle::for_run(plat.ncpus()),
            idle_log: None,
            counters: vec![Counters::default(); plat.ncpus()],
        }
    }
}

/// The hardware's own bookkeeping: voltages, the uncore's state, energy and time at each
/// frequency, read from the machine and the time now, no other part.
impl Hw {
    pub(crate) fn core_voltage(&self, m: &Machine, core: usize) -> f64 {
        let t = &m.plat.cores[core];
        match m.plat.cluster(t.cluster).frequency.voltage_scope {
            VoltageScope::Domain => self.domains[t.domain].mv,
            VoltageScope::Package => self.packages[t.package].mv,
        }
    }

    /// One rail per package: the highest voltage any of its domains needs.
    pub(crate) fn package_voltage(&self, m: &Machine, pkg: usize) -> f64 {
        m.plat.packages[pkg].domains.iter().map(|&d| self.domains[d].mv).fold(0.0, f64::max)
    }

    fn uncore_level_of(&self, m: &Machine, core: usize) -> f64 {
        let t = &m.plat.cores[core];
        m.plat.cluster(t.cluster).frequency.level_of(self.domains[t.domain].actual_khz)
    }

    /// The packages that idle together with `pkg` (see `IdleScope`).
    pub(crate) fn idle_peers(&self, m: &Machine, pkg: usize) -> std::ops::Range<usize> {
        match m.plat.file.package_power.idle_scope {
            IdleScope::Package => pkg..pkg + 1,
            IdleScope::System => 0..self.packages.len(),
        }
    }

    /// Whether `pkg` and the packages that idle with it have every core power-gated.
    pub(crate) fn may_idle(&self, m: &Machine, pkg: usize) -> bool {
        self.idle_peers(m, pkg).all(|p| self.packages[p].active_cores.iter().all(|&n| n == 0))
    }

    /// The uncore's state from scratch: None when the package idles (its cores, and those of
    /// the packages that idle with it, all power-gated), else its clock level — that of the
    /// fastest core not power-gated (uncore frequency scaling; the lowest with none) — and how
    /// many such cores run at it.
    pub(crate) fn uncore_scan(&self, m: &Machine, pkg: usize) -> Option<(f64, u32)> {
        if self.may_idle(m, pkg) {
            return None;
        }
        let mut top: Option<(f64, u32)> = None;
        for &core in &m.plat.packages[pkg].cores {
            if !self.cores[core].active {
                continue;
            }
            let level = self.uncore_level_of(m, core);
            top = match top {
                Some((l, n)) if level == l => Some((l, n + 1)),
                Some((l, n)) if level < l => Some((l, n)),
                _ => Some((level, 1)),
            };
        }
        Some(top.unwrap_or((0.0, 0)))
    }

    /// Settle the package's energy, then run its uncore in `state` (`uncore_scan`'s form):
    /// the package-idle power, or the static power plus the clock-following share.
    pub(crate) fn set_uncore(&mut self, m: &Machine, now: TimeNs, pkg: usize, state: Option<(f64, u32)>) {
        self.touch_package(now, pkg);
        let pp = &m.plat.file.package_power;
        let p = &mut self.packages[pkg];
        p.uncore_w = pp.uncore_w(state.map(|(level, _)| level));
        p.uncore_level = state.map(|(level, _)| level);
        p.uncore_at_top = state.map_or(0, |(_, n)| n);
    }

    pub(crate) fn repower_package(&mut self, m: &Machine, now: TimeNs, pkg: usize) {
        let state = self.uncore_scan(m, pkg);
        self.set_uncore(m, now, pkg, state);
    }

    pub(crate) fn touch_core(&mut self, now: TimeNs, core: usize) {
        let c = &mut self.cores[core];
        c.energy_j += c.power_w * (now - c.since) as f64 * 1e-9;
        c.since = now;
    }

    pub(crate) fn touch_package(&mut self, now: TimeNs, pkg: usize) {
        let p = &mut self.packages[pkg];
        let dt = now - p.since;
        p.uncore_energy_j += p.uncore_w * dt as f64 * 1e-9;
        match p.uncore_level {
            None => p.idle_ns += dt,
            Some(level) => p.uncore_clock_s += level * dt as f64 * 1e-9,
        }
        p.since = now;
    }

    /// Add the time since the last account to domain `d`'s time at its frequency.
    pub(crate) fn account_freq_time(&mut self, now: TimeNs, d: usize) {
        let dom = &mut self.domains[d];
        let (khz, dt) = (dom.actual_khz, now - dom.freq_since);
        match dom.freq_ns.iter_mut().find(|(k, _)| *k == khz) {
            Some((_, ns)) => *ns += dt,
            None => dom.freq_ns.push((khz, dt)),
        }
        dom.freq_since = now;
    }

    pub(crate) fn cpu_khz(&self, machine: &Machine, cpu: usize) -> u32 {
        self.domains[machine.plat.cpus[cpu].domain].actual_khz
    }

    /// `core` was just power-gated or woke from it. The package (with the packages that idle
    /// together with it) idles with its last core and wakes with its first; otherwise only a
    /// core at (or above) the uncore's level moves it, and the package is scanned again only
    /// when the last core at the top level leaves.
    pub(crate) fn uncore_after_gating(&mut self, machine: &Machine, q: &EventQueue, core: usize) {
        let pkg = machine.plat.cores[core].package;
        let Some(level) = self.packages[pkg].uncore_level else {
            for p in self.idle_peers(machine, pkg) {
                self.repower_package(machine, q.now(), p);
            }
            return;
        };
        let mine = self.uncore_level_of(machine, core);
        if !self.cores[core].active {
            if self.may_idle(machine, pkg) {
                for p in self.idle_peers(machine, pkg) {
                    self.set_uncore(machine, q.now(), p, None);
                }
            } else if self.packages[pkg].active_cores.iter().all(|&n| n == 0) {
                // Awake for the packages it idles with, with no core of its own awake.
                self.set_uncore(machine, q.now(), pkg, Some((0.0, 0)));
            } else if mine >= level {
                let p = &mut self.packages[pkg];
                p.uncore_at_top -= 1;
                if p.uncore_at_top == 0 {
                    self.repower_package(machine, q.now(), pkg);
                }
            }
        } else if mine > level {
            self.set_uncore(machine, q.now(), pkg, Some((mine, 1)));
        } else if mine == level {
            self.packages[pkg].uncore_at_top += 1;
        }
        debug_assert_eq!(self.packages[pkg].uncore_level, self.uncore_scan(machine, pkg).map(|s| s.0));
    }

    /// Domain `d` went from `old_khz` to its current frequency: its cores not power-gated
    /// leave the uncore's top level, join it, or raise it.
    pub(crate) fn uncore_follows(&mut self, machine: &Machine, q: &EventQueue, d: usize, old_khz: u32) {
        let pkg = machine.plat.domains[d].package;
        let Some(level) = self.packages[pkg].uncore_level else { return };
        let awake = machine.plat.domains[d].cores.iter().filter(|&&c| self.cores[c].active).count() as u32;
        if awake == 0 {
            return;
        }
        // The uncore clock level a domain of the cluster at a frequency calls for.
        let levels = &machine.plat.cluster(machine.plat.domains[d].cluster).frequency;
        let (before, after) = (levels.level_of(old_khz), levels.level_of(self.domains[d].actual_khz));
        if after > level {
            self.set_uncore(machine, q.now(), pkg, Some((after, awake)));
        } else {
            let p = &mut self.packages[pkg];
            if before == level {
                p.uncore_at_top -= awake;
            }
            if after == level {
                p.uncore_at_top += awake;
            }
            if p.uncore_at_top == 0 {
                self.repower_package(machine, q.now(), pkg);
            }
        }
        debug_assert_eq!(self.packages[pkg].uncore_level, self.uncore_scan(machine, pkg).map(|s| s.0));
    }

    /// Whether only awake CPUs' requests count in domain `d`: a domain of several policies
    /// (SMT siblings or cores sharing a clock), unless the platform lets power-gated CPUs vote.
    pub(crate) fn only_awake_cpus_vote(&self, machine: &Machine, d: usize) -> bool {
        let dom = &machine.plat.domains[d];
        dom.policies.len() >= 2 && !machine.plat.cluster(dom.cluster).frequency.power_gated_cpus_vote
    }

    /// What the hardware of domain `d` should run now, given its request and turbo limits.
    pub(crate) fn hardware_target(&self, machine: &Machine, d: usize) -> u32 {
        let cl = machine.plat.domains[d].cluster;
        let pkg = machine.plat.domains[d].package;
        let f = &machine.plat.cluster(cl).frequency;
        let t = machine.driver.hardware_target_khz(&machine.plat, cl, self.domains[d].request_khz);
        if t > f.base_khz {
            let n = self.packages[pkg].active_cores[cl].max(1) as usize;
            t.min(machine.plat.turbo_limit_khz[cl][n - 1])
        } else {
            t
        }
    }

    /// Whether frequency invariance comes from APERF/MPERF at the tick (x86).
    pub(crate) fn x86_counters(&self, machine: &Machine) -> bool {
        matches!(machine.plat.file.vendor, crate::hw::platform::Vendor::Intel | crate::hw::platform::Vendor::Amd)
    }

    /// Read every package's RAPL counter and accumulate its (wrapping) delta.
    pub(crate) fn rapl_sample(&mut self, machine: &Machine, q: &EventQueue) {
        let bits = machine.plat.file.rapl.counter_bits;
        let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let unit_j = machine.plat.file.rapl.energy_unit_uj * 1e-6;
        for pkg in 0..self.packages.len() {
            // The counter never restarts: it counts the warm-up's energy too.
            let total = self.package_energy_j(machine, q, pkg) + self.packages[pkg].energy_before_warmup_j;
            let counter = ((total / unit_j).floor() as u64) & mask;
            let p = &mut self.packages[pkg];
            let delta = counter.wrapping_sub(p.rapl_last) & mask;
            p.rapl_units += delta;
            p.rapl_last = counter;
        }
    }

    /// Energy of package `pkg` up to now: uncore plus its cores.
    pub(crate) fn package_energy_j(&mut self, machine: &Machine, q: &EventQueue, pkg: usize) -> f64 {
        self.touch_package(q.now(), pkg);
        let mut total = self.packages[pkg].uncore_energy_j;
        for i in 0..machine.plat.packages[pkg].cores.len() {
            let core = machine.plat.packages[pkg].cores[i];
            self.touch_core(q.now(), core);
            total += self.cores[core].energy_j;
        }
        total
    }
}

/// Per logical CPU: APERF and MPERF in cycles (f64 so fractions of a cycle are not lost
/// between updates), up to when they are counted, and their values at the last tick (for the
/// tick's frequency-invariance scale).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    pub aperf: f64,
    pub mperf: f64,
    pub counters_ns: TimeNs,
    pub tick_aperf: f64,
    pub tick_mperf: f64,
}

/// Per physical core: busy threads, power and energy.
pub(crate) struct Core {
    pub busy_threads: u32,
    /// Threads with no current task and none queued (`Cpu::placement_idle`).
    pub placement_idle_threads: u32,
    pub power_w: f64,
    pub energy_j: f64,
    pub since: TimeNs,
    /// Some thread awake, running or in an idle state that is not power-gated: an active core
    /// for turbo. A core that is not is power-gated.
    pub active: bool,
}

/// Per frequency domain: the request and the frequency the hardware runs.
pub(crate) struct Domain {
    pub request_khz: u32,
    /// Frequency whose voltage the domain keeps (powernv's global P-state); 0 = none.
    pub global_khz: u32,
    pub actual_khz: u32,
    pub pending_khz: Option<u32>,
    pub apply_token: u32,
    pub mv: f64,
    /// Time at each frequency run (kHz, ns), in the order first seen: a handful of entries.
    /// Every CPU of the domain runs the same frequencies for the same times, so one account
    /// serves them all (each CPU's `time_in_freq` reads it).
    pub freq_ns: Vec<(u32, u64)>,
    pub freq_since: TimeNs,
    /// `request_khz` may differ from `Sim::domain_request` with no CPU of the domain having
    /// woken from or entered a power-gated state since it was taken: the run has just started
    /// (from then on only awake CPUs vote). Otherwise the request changes only with a policy's
    /// frequency, which takes it anew, or with a CPU's vote entering or leaving.
    pub request_unsettled: bool,
}

/// Per package: uncore power, RAPL counter sampling and the active-core count for turbo.
pub(crate) struct Package {
    pub active_cores: Vec<u32>,
    pub uncore_w: f64,
    /// The uncore clock's level (0..1 of its range), or `None` while the package is idle.
    pub uncore_level: Option<f64>,
    /// Cores not power-gated whose domain runs at the uncore's level (the fastest).
    pub uncore_at_top: u32,
    pub uncore_energy_j: f64,
    /// Time with every core power-gated (the package C-state).
    pub idle_ns: TimeNs,
    /// Integral of the uncore clock's level over time (s): what RAPL's uncore share follows.
    pub uncore_clock_s: f64,
    pub since: TimeNs,
    pub mv: f64,
    pub rapl_last: u64,
    /// Energy spent before the warm-up ended (set aside from the figures, not from the counter).
    pub energy_before_warmup_j: f64,
    /// A turbo-limit re-evaluation is scheduled on the PCU grid.
    pub pcu_pending: bool,
    pub rapl_units: u64,
    /// The NUMA-level balancer's attempts to spread this node: see `Sim::spread_numa`.
    pub numa_spread: crate::sched::SpreadAttempts,
}

/// When a frequency switch on a package rail repowers the package's cores.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum RailCores {
    /// With the switch.
    Now,
    /// Once, by the caller, after switching several domains at the same instant.
    Later,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governor::core::test_machine;

    /// The hardware built alone from a machine: every domain at its cluster's lowest
    /// frequency and that frequency's voltage, no core busy, every thread placement-idle, a
    /// powernv ramp per policy.
    #[test]
    fn the_hardware_starts_at_the_lowest_frequency_with_nothing_busy() {
        for preset in ["haswell-e5-2670v3-2s", "juno-r2", "power8-powernv"] {
            let m = test_machine(preset, "performance");
            let hw = Hw::new(&m);
            assert_eq!(
                (hw.cores.len(), hw.domains.len(), hw.packages.len()),
                (m.plat.cores.len(), m.plat.domains.len(), m.plat.packages.len())
            );
            for (d, dom) in hw.domains.iter().enumerate() {
                let cluster = m.plat.domains[d].cluster;
                let min = m.plat.cluster(cluster).frequency.min_khz;
                assert_eq!((dom.request_khz, dom.actual_khz, dom.pending_khz), (min, min, None), "{preset}");
                assert_eq!(dom.mv, m.plat.voltage_mv(cluster, min));
            }
            for (c, core) in hw.cores.iter().enumerate() {
                assert_eq!((core.busy_threads, core.active), (0, false));
                assert_eq!(core.placement_idle_threads as usize, m.plat.cores[c].cpus.len());
            }
            assert_eq!(hw.ramps.len(), m.plat.policies.len());
        }
    }

    /// Energy is power integrated over time, settled at each touch; a package's time counts as
    /// idle while its uncore idles and as clock level × time while it runs.
    #[test]
    fn touching_settles_energy_and_package_time() {
        let m = test_machine("skylake-e3-1240v5", "performance");
        let mut hw = Hw::new(&m);
        hw.cores[0].power_w = 2.0;
        hw.touch_core(500_000_000, 0);
        assert!((hw.cores[0].energy_j - 1.0).abs() < 1e-12);
        assert_eq!(hw.cores[0].since, 500_000_000);
        // Nothing awake: the package idles at its idle power.
        assert_eq!(hw.uncore_scan(&m, 0), None);
        hw.repower_package(&m, 0, 0);
        assert_eq!(hw.packages[0].uncore_w, m.plat.file.package_power.p_pkg_idle_w);
        hw.set_uncore(&m, 1_000_000_000, 0, Some((0.5, 1)));
        assert_eq!(hw.packages[0].idle_ns, 1_000_000_000);
        let busy_w = hw.packages[0].uncore_w;
        hw.touch_package(3_000_000_000, 0);
        assert!((hw.packages[0].uncore_clock_s - 1.0).abs() < 1e-12);
        let idle_j = m.plat.file.package_power.p_pkg_idle_w;
        assert!((hw.packages[0].uncore_energy_j - (idle_j + 2.0 * busy_w)).abs() < 1e-9);
        // An awake core at the domain's frequency sets the uncore's level.
        hw.cores[0].active = true;
        hw.packages[0].active_cores[0] = 1;
        let level = m.plat.cluster(0).frequency.level_of(hw.domains[0].actual_khz);
        assert_eq!(hw.uncore_scan(&m, 0), Some((level, 1)));
    }

    /// Time at each frequency is one account per domain, in the order the frequencies ran.
    #[test]
    fn time_in_frequency_accumulates_per_frequency() {
        let m = test_machine("juno-r2", "performance");
        let mut hw = Hw::new(&m);
        let low = hw.domains[0].actual_khz;
        hw.account_freq_time(1_000, 0);
        hw.domains[0].actual_khz = low * 2;
        hw.account_freq_time(3_000, 0);
        hw.domains[0].actual_khz = low;
        hw.account_freq_time(4_000, 0);
        assert_eq!(hw.domains[0].freq_ns, [(low, 2_000), (low * 2, 2_000)]);
        // The package rail is its domains' highest voltage.
        let top = hw.domains.iter().map(|d| d.mv).fold(0.0, f64::max);
        assert!(hw.package_voltage(&m, 0) <= top && hw.package_voltage(&m, 0) > 0.0);
    }
}
