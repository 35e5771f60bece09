//! The hardware side of a simulation: what frequency each domain runs, how fast a task makes
//! progress there, what every core and package draws, and the APERF/MPERF/TSC and RAPL
//! counters.
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
use crate::engine::{Event, TimeNs};
use crate::hw::platform::{IdlePower, IdleScope, VoltageScope};
use crate::machine::Machine;
use crate::sim::Sim;

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
            for p in self.idle_peers(&machine, pkg) {
                self.repower_package(&machine, q.now(), p);
            }
            return;
        };
        let mine = self.uncore_level_of(&machine, core);
        if !self.cores[core].active {
            if self.may_idle(&machine, pkg) {
                for p in self.idle_peers(&machine, pkg) {
                    self.set_uncore(&machine, q.now(), p, None);
                }
            } else if self.packages[pkg].active_cores.iter().all(|&n| n == 0) {
                // Awake for the packages it idles with, with no core of its own awake.
                self.set_uncore(&machine, q.now(), pkg, Some((0.0, 0)));
            } else if mine >= level {
                let p = &mut self.packages[pkg];
                p.uncore_at_top -= 1;
                if p.uncore_at_top == 0 {
                    self.repower_package(&machine, q.now(), pkg);
                }
            }
        } else if mine > level {
            self.set_uncore(&machine, q.now(), pkg, Some((mine, 1)));
        } else if mine == level {
            self.packages[pkg].uncore_at_top += 1;
        }
        debug_assert_eq!(self.packages[pkg].uncore_level, self.uncore_scan(&machine, pkg).map(|s| s.0));
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
            self.set_uncore(&machine, q.now(), pkg, Some((after, awake)));
        } else {
            let p = &mut self.packages[pkg];
            if before == level {
                p.uncore_at_top -= awake;
            }
            if after == level {
                p.uncore_at_top += awake;
            }
            if p.uncore_at_top == 0 {
                self.repower_package(&machine, q.now(), pkg);
            }
        }
        debug_assert_eq!(self.packages[pkg].uncore_level, self.uncore_scan(&machine, pkg).map(|s| s.0));
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

impl Sim {
    /// Power and counters at time zero: every CPU idle in its deepest state.
    pub(crate) fn init_hardware(&mut self) {
        for cpu in 0..self.sched.cpus.len() {
            self.sched.cpus[cpu].awake = self.sched.cpu_awake(&self.machine, cpu);
        }
        for core in 0..self.hw.cores.len() {
            let active = self.sched.core_awake(&self.machine, core);
            self.hw.cores[core].active = active;
            let pkg = self.machine.plat.cores[core].package;
            let cl = self.machine.plat.cores[core].cluster;
            if active {
                self.hw.packages[pkg].active_cores[cl] += 1;
            }
        }
        for pkg in 0..self.hw.packages.len() {
            self.hw.packages[pkg].mv = self.hw.package_voltage(&self.machine, pkg);
            self.hw.repower_package(&self.machine, self.q.now(), pkg);
        }
        for core in 0..self.hw.cores.len() {
            self.hw.cores[core].power_w = self.core_power(core);
        }
        // Without counters, the scale follows the frequency set, from the very start.
        if self.sched.invariant && !self.hw.x86_counters(&self.machine) {
            for cpu in 0..self.sched.cpus.len() {
                let t = &self.machine.plat.cpus[cpu];
                let max_khz = self.machine.plat.cluster(t.cluster).frequency.max_khz as u64;
                self.sched.cpus[cpu].freq_scale =
                    (self.hw.domains[t.domain].actual_khz as u64 * 1024 / max_khz).min(1024);
            }
        }
    }

    /// Power of a core now (W), by the power model (`power::core_w`): its busy threads, or
    /// what its shallowest thread's C-state leaves powered.
    fn core_power(&self, core: usize) -> f64 {
        let plat = &self.machine.plat;
        let t = &plat.cores[core];
        let cl = plat.cluster(t.cluster);
        let busy_threads = self.hw.cores[core].busy_threads;
        let idle = match busy_threads {
            0 => t.cpus.iter().filter_map(|&c| self.sched.cpus[c].idle_state).min().map(|s| cl.idle_states[s].power),
            _ => None,
        };
        let load = power::CoreLoad {
            busy_threads,
            idle,
            khz: self.hw.domains[t.domain].actual_khz,
            mv: self.hw.core_voltage(&self.machine, core),
        };
        let tpc = plat.file.topology.threads_per_core;
        power::core_w(cl, &plat.file.package_power, tpc, load, || {
            self.machine.voltage_mv(t.cluster, cl.frequency.min_khz)
        })
    }

    /// Advance APERF/MPERF (C0 only, polling included) and the time-in-frequency statistics of
    /// `cpu` to now.
    pub(crate) fn sync_counters(&mut self, cpu: usize) {
        let now = self.q.now();
        if !matches!(self.sched.idle_power(&self.machine, cpu), None | Some(IdlePower::Polling)) {
            self.hw.counters[cpu].counters_ns = now;
            return;
        }
        let khz = self.hw.cpu_khz(&self.machine, cpu) as f64;
        let base = self.machine.plat.cluster_of_cpu(cpu).frequency.base_khz as f64;
        let c = &mut self.hw.counters[cpu];
        let dt = (now - c.counters_ns) as f64;
        c.aperf += dt * khz * 1e-6;
        c.mperf += dt * base * 1e-6;
        c.counters_ns = now;
    }

    /// A thread of `core` started or stopped running, or changed C-state: settle energy, then
    /// update the core's activity, its package's counts (and turbo limits), power, and the
    /// speed of its busy SMT siblings.
    pub(crate) fn core_changed(&mut self, core: usize, changed_cpu: usize) {
        self.hw.touch_core(self.q.now(), core);
        let active = self.sched.core_awake(&self.machine, core);
        let pkg = self.machine.plat.cores[core].package;
        let cl = self.machine.plat.cores[core].cluster;
        if active != self.hw.cores[core].active {
            self.hw.touch_package(self.q.now(), pkg);
            let before = self.hw.packages[pkg].active_cores[cl];
            if active {
                self.hw.packages[pkg].active_cores[cl] += 1;
            } else {
                self.hw.packages[pkg].active_cores[cl] -= 1;
            }
            self.hw.cores[core].active = active;
            self.hw.uncore_after_gating(&self.machine, &self.q, core);
            let after = self.hw.packages[pkg].active_cores[cl];
            if before != after {
                self.turbo_limit_changed(pkg, cl, before, after);
            }
        }
        self.hw.cores[core].power_w = self.core_power(core);
        // The domain's vote changes only when this CPU's does (it woke from or entered a
        // power-gated state), or when its request is not settled yet.
        let awake = self.sched.cpu_awake(&self.machine, changed_cpu);
        let d = self.machine.plat.cores[core].domain;
        if std::mem::replace(&mut self.sched.cpus[changed_cpu].awake, awake) != awake
            || self.hw.domains[d].request_unsettled
        {
            self.vote_changed(d);
        } else {
            debug_assert!(
                !self.hw.only_awake_cpus_vote(&self.machine, d)
                    || self.domain_request(d) == self.hw.domains[d].request_khz
            );
        }
        if self.machine.plat.file.topology.threads_per_core > 1 {
            for i in 0..self.machine.plat.cores[core].cpus.len() {
                let sib = self.machine.plat.cores[core].cpus[i];
                if sib != changed_cpu
                    && self.sched.cpus[sib].curr.is_some()
                    && self.sched.cpus[sib].idle_state.is_none()
                {
                    self.resegment(sib);
                }
            }
        }
    }

    /// A CPU of domain `d` went idle or woke: its policy's request may enter or leave the
    /// domain's vote.
    fn vote_changed(&mut self, d: usize) {
        if !self.hw.only_awake_cpus_vote(&self.machine, d) {
            return;
        }
        let req = self.domain_request(d);
        self.hw.domains[d].request_unsettled = false;
        if req != self.hw.domains[d].request_khz {
            self.hw.domains[d].request_khz = req;
            self.retarget(d);
        }
    }

    /// The active-core count of a package changed: domains asking for turbo get a new ceiling,
    /// at once or at the package controller's next evaluation.
    fn turbo_limit_changed(&mut self, pkg: usize, cluster: usize, before: u32, after: u32) {
        let limits = &self.machine.plat.turbo_limit_khz[cluster];
        let at = |n: u32| limits[(n.max(1) - 1) as usize];
        if at(before) == at(after) {
            return;
        }
        let interval_ns = (self.machine.plat.cluster(cluster).frequency.pcu_interval_us * 1000.0) as u64;
        if interval_ns > 0 && self.run.started {
            if !self.hw.packages[pkg].pcu_pending {
                self.hw.packages[pkg].pcu_pending = true;
                let next = (self.q.now() / interval_ns + 1) * interval_ns;
                self.q.push(next, Event::PcuTick { package: pkg as u32 });
            }
            return;
        }
        for i in 0..self.machine.plat.packages[pkg].domains.len() {
            let d = self.machine.plat.packages[pkg].domains[i];
            if self.machine.plat.domains[d].cluster == cluster {
                self.retarget(d);
            }
        }
    }

    /// The package controller's evaluation: every domain of the package runs, from now, the
    /// turbo limit for the cores active now (the grid is the delay; no further switch time).
    /// On a package rail every switch changes every core's voltage: the cores are repowered
    /// once after all domains switched rather than once per domain (nothing reads a core's
    /// power in between, and settling its energy again at the same instant adds nothing).
    pub(crate) fn pcu_tick(&mut self, pkg: usize) {
        self.hw.packages[pkg].pcu_pending = false;
        let mut rail_changed = false;
        for i in 0..self.machine.plat.packages[pkg].domains.len() {
            let d = self.machine.plat.packages[pkg].domains[i];
            let target = self.hw.hardware_target(&self.machine, d);
            let dom = &mut self.hw.domains[d];
            if dom.pending_khz.is_some() {
                dom.pending_khz = Some(target);
            } else if target != dom.actual_khz {
                dom.pending_khz = Some(target);
                rail_changed |= self.apply_pending_freq(d, RailCores::Later);
            }
        }
        if rail_changed {
            let machine = std::rc::Rc::clone(&self.machine);
            self.repower_cores(&machine.plat.packages[pkg].cores);
        }
    }

    /// Settle the energy of `cores` at their old power, then give them their power now.
    fn repower_cores(&mut self, cores: &[usize]) {
        for &core in cores {
            self.hw.touch_core(self.q.now(), core);
            self.hw.cores[core].power_w = self.core_power(core);
        }
    }

    /// The policy's governor set a new frequency: the domain runs the highest request of its
    /// active cores.
    pub(crate) fn set_policy_freq(&mut self, policy: usize, khz: u32) {
        self.cpufreq.policies[policy].cur_khz = khz;
        let d = self.machine.plat.policies[policy].domain;
        self.hw.domains[d].request_khz = self.domain_request(d);
        self.hw.domains[d].request_unsettled = !self.run.started;
        self.retarget(d);
        if self.machine.driver == crate::hw::driver::Driver::Powernv {
            // After the transition was timed: a rise pays for the voltage the rail lacked, and
            // only then does the global (voltage) P-state follow.
            self.powernv_target(policy, khz);
        }
    }

    /// The request of domain `d`: the highest of its policies' (SMT siblings or cores sharing a
    /// clock each have a say). Only awake CPUs vote (in C0 or an idle state that is not
    /// power-gated): Intel's shared-clock parts select "the highest frequency P-state requested
    /// among all active cores", and an idle hardware thread does not raise its core's clock on
    /// Intel either, so a CPU that asked for a high frequency and then went to a deep idle state
    /// no longer holds the others there; AMD Rome's idle threads keep their vote
    /// (`power_gated_cpus_vote`). With no CPU awake the request stays as it was (every request
    /// counts before the run starts).
    fn domain_request(&self, d: usize) -> u32 {
        let dom = &self.machine.plat.domains[d];
        let request = |p: &usize| self.cpufreq.policies[*p].cur_khz;
        if !self.hw.only_awake_cpus_vote(&self.machine, d) || !self.run.started {
            return dom.policies.iter().map(request).max().unwrap_or(0);
        }
        // The highest request of a voting policy; whether a policy votes matters only when its
        // request would raise the highest so far (on an Intel package most requests are equal).
        let mut highest: Option<u32> = None;
        for p in &dom.policies {
            let khz = request(p);
            if highest.is_some_and(|h| h >= khz) {
                continue;
            }
            if self.machine.plat.policies[*p].cpus.iter().any(|&c| self.sched.cpu_awake(&self.machine, c)) {
                highest = Some(khz);
            }
        }
        highest.unwrap_or(self.hw.domains[d].request_khz)
    }

    /// Put `cpu` in idle state `state` (None: running). A CPU that wakes runs the deferrable
    /// timers that came due while it slept (powernv's ramp).
    pub(crate) fn set_idle_state(&mut self, cpu: usize, state: Option<usize>) {
        let power = state.map(|s| self.machine.plat.cluster_of_cpu(cpu).idle_states[s].power);
        let c = &mut self.sched.cpus[cpu];
        c.idle_state = state;
        c.idle_power = power;
        if state.is_none() {
            if let Some(policy) = self.hw.deferred_ramp[cpu].take() {
                self.hw.powernv_timer_on_wake(&mut self.q, policy);
            }
        }
    }

    /// Set the frequency whose voltage `policy`'s domain keeps (powernv's global P-state) and
    /// re-power the cores whose rail that changes.
    pub(crate) fn set_global_khz(&mut self, policy: usize, khz: u32) {
        let d = self.machine.plat.policies[policy].domain;
        if self.hw.domains[d].global_khz == khz {
            return;
        }
        let cl = self.machine.plat.domains[d].cluster;
        let pkg = self.machine.plat.domains[d].package;
        let package_rail = self.machine.plat.cluster(cl).frequency.voltage_scope == VoltageScope::Package;
        let cores: Vec<usize> = if package_rail {
            self.machine.plat.packages[pkg].cores.clone()
        } else {
            self.machine.plat.domains[d].cores.clone()
        };
        for &core in &cores {
            self.hw.touch_core(self.q.now(), core);
        }
        self.hw.domains[d].global_khz = khz;
        if let Some(tl) = self.run.timeline.as_mut() {
            tl.global(self.q.now(), self.machine.plat.policies[policy].cpus[0], khz);
        }
        self.hw.domains[d].mv = self.machine.voltage_mv(cl, self.hw.domains[d].actual_khz.max(khz));
        if package_rail {
            self.hw.packages[pkg].mv = self.hw.package_voltage(&self.machine, pkg);
        }
        for &core in &cores {
            self.hw.cores[core].power_w = self.core_power(core);
        }
    }

    /// Start a transition of domain `d` to its hardware target, which completes after the
    /// hardware switch time, counted from the next slot of the request grid where the platform
    /// has one. A transition already under way just takes the newer target.
    fn retarget(&mut self, d: usize) {
        let target = self.hw.hardware_target(&self.machine, d);
        let dom = &mut self.hw.domains[d];
        if !self.run.started {
            dom.pending_khz = Some(target);
            self.freq_apply(d);
            return;
        }
        if dom.pending_khz.is_some() {
            dom.pending_khz = Some(target);
            return;
        }
        if target == dom.actual_khz {
            return;
        }
        dom.pending_khz = Some(target);
        dom.apply_token = dom.apply_token.wrapping_add(1);
        let token = dom.apply_token;
        let cl = self.machine.plat.domains[d].cluster;
        let q = &self.machine.plat.cluster(cl).frequency;
        // A rise that needs more voltage than the rail holds waits for the ramp.
        let supplied_mv = match q.voltage_scope {
            VoltageScope::Domain => self.hw.domains[d].mv,
            VoltageScope::Package => self.hw.packages[self.machine.plat.domains[d].package].mv,
        };
        let missing_mv = (self.machine.voltage_mv(cl, target) - supplied_mv).max(0.0);
        let delay = ((q.hw_switch_us + q.voltage_ramp_us_per_mv * missing_mv) * 1000.0).round() as u64;
        let grid_ns = (q.request_grid_us * 1000.0).round() as u64;
        let now = self.q.now();
        let slot = now.checked_div(grid_ns).map_or(now, |slots| (slots + 1) * grid_ns);
        let at = slot + delay;
        self.q.push(at, Event::FreqApply { domain: d as u32, token });
    }

    /// The domain now runs its pending frequency.
    pub(crate) fn freq_apply(&mut self, d: usize) {
        self.apply_pending_freq(d, RailCores::Now);
    }

    /// Switch domain `d` to its pending frequency. Returns whether it switched on a package
    /// rail whose cores' power the caller still has to settle ([`RailCores::Later`]).
    fn apply_pending_freq(&mut self, d: usize, rail_cores: RailCores) -> bool {
        let Some(new) = self.hw.domains[d].pending_khz.take() else { return false };
        if new == self.hw.domains[d].actual_khz {
            return false;
        }
        let cl = self.machine.plat.domains[d].cluster;
        let pkg = self.machine.plat.domains[d].package;
        let package_rail = self.machine.plat.cluster(cl).frequency.voltage_scope == VoltageScope::Package;
        let defer_rail = package_rail && rail_cores == RailCores::Later;
        for i in 0..self.machine.plat.domains[d].cpus.len() {
            let cpu = self.machine.plat.domains[d].cpus[i];
            self.sched.account_segment(&self.q, cpu);
            self.sync_counters(cpu);
        }
        self.hw.account_freq_time(self.q.now(), d);
        let machine = std::rc::Rc::clone(&self.machine);
        let plat = &machine.plat;
        // The cores whose power changes: the domain's, or the package's when they share a rail.
        let repowered: &[usize] = match (package_rail, defer_rail) {
            (true, true) => &[],
            (true, false) => &plat.packages[pkg].cores,
            (false, _) => &plat.domains[d].cores,
        };
        // A core that is not active (every thread power-gated) draws nothing at any frequency:
        // its power is 0 before the switch and after, and its energy has nothing to settle.
        for &core in repowered {
            if self.hw.cores[core].active {
                self.hw.touch_core(self.q.now(), core);
            }
        }
        // The PLL relocks: no core of the domain executes for a while, busy or waking.
        let halt_until =
            self.q.now() + (self.machine.plat.cluster(cl).frequency.switch_halt_us * 1000.0).round() as u64;
        for &cpu in &plat.domains[d].cpus {
            self.sched.cpus[cpu].halt_until = halt_until;
        }
        let old = self.hw.domains[d].actual_khz;
        self.hw.domains[d].actual_khz = new;
        self.hw.domains[d].mv = self.machine.voltage_mv(cl, new.max(self.hw.domains[d].global_khz));
        if self.work.stats.time_to_top_ns.is_none()
            && new >= self.machine.plat.turbo_limit_khz[cl][0]
            && self.run.started
        {
            self.work.stats.time_to_top_ns = Some(self.q.now());
        }
        if package_rail {
            self.hw.packages[pkg].mv = self.hw.package_voltage(&self.machine, pkg);
        }
        for &core in repowered {
            if self.hw.cores[core].active {
                self.hw.cores[core].power_w = self.core_power(core);
            } else {
                debug_assert!(self.hw.cores[core].power_w == 0.0 && self.core_power(core) == 0.0);
            }
        }
        self.hw.uncore_follows(&self.machine, &self.q, d, old);
        let max_khz = self.machine.plat.cluster(cl).frequency.max_khz as u64;
        let cpufreq_scale = self.sched.invariant && !self.hw.x86_counters(&self.machine);
        for i in 0..self.machine.plat.domains[d].cpus.len() {
            let cpu = self.machine.plat.domains[d].cpus[i];
            if cpufreq_scale {
                // arm64 without AMU: the scale follows the frequency set, not the one measured.
                self.sched.cpus[cpu].freq_scale = (new as u64 * 1024 / max_khz).min(1024);
            }
            if self.sched.cpus[cpu].curr.is_some() && self.sched.cpus[cpu].idle_state.is_none() {
                self.start_segment(cpu);
            }
            if let Some(tl) = self.run.timeline.as_mut() {
                tl.frequency(self.q.now(), cpu, new);
            }
        }
        defer_rail
    }

    /// Work per ns (cycles at base frequency) of the task current on `cpu`:
    /// `t(W) = W · ((1 - m)/f + m/f_base)`, scaled by the µarch capacity and the share of the
    /// core's throughput this SMT thread gets.
    fn cpu_rate(&self, cpu: usize, mem_frac: f64) -> f64 {
        if let Some(task) = self.sched.cpus[cpu].curr {
            if self.sched.tasks[task].fixed_time {
                return 1.0;
            }
        }
        let t = &self.machine.plat.cpus[cpu];
        let cl = self.machine.plat.cluster(t.cluster);
        let f = self.hw.domains[t.domain].actual_khz as f64 * 1e-6;
        let fb = cl.frequency.base_khz as f64 * 1e-6;
        let uarch = cl.capacity_dmips_mhz as f64 / 1024.0;
        let busy = self.hw.cores[t.core].busy_threads.max(1) as f64;
        let tpc = self.machine.plat.file.topology.threads_per_core as f64;
        let share = if busy > 1.0 {
            (1.0 + (self.machine.plat.file.topology.smt_throughput - 1.0) * (busy - 1.0) / (tpc - 1.0)) / busy
        } else {
            1.0
        };
        uarch * share / ((1.0 - mem_frac) / f + mem_frac / fb)
    }

    /// (Re)start the run segment of the current task at the current speed.
    pub(crate) fn start_segment(&mut self, cpu: usize) {
        let Some(task) = self.sched.cpus[cpu].curr else { return };
        let rate = self.cpu_rate(cpu, self.sched.tasks[task].mem_frac);
        let now = self.q.now();
        let left = self.sched.tasks[task].work_left;
        let c = &mut self.sched.cpus[cpu];
        c.seg_start = now;
        c.seg_rate = rate;
        c.seg_token = c.seg_token.wrapping_add(1);
        let start = now.max(c.stall_until).max(c.halt_until);
        // Work too long for the clock (a fuzzed rt-app runtime) ends never rather than wrapping.
        let end = start.saturating_add((left / rate).ceil() as u64);
        let token = c.seg_token;
        self.q.push(end, Event::SegmentEnd { cpu: cpu as u32, token });
    }

    pub(crate) fn resegment(&mut self, cpu: usize) {
        self.sched.account_segment(&self.q, cpu);
        self.start_segment(cpu);
    }

    /// Energy the cores of `policy` drew so far (J), their share of the uncore left out; the
    /// warm-up's is not counted once it ended.
    pub fn policy_energy_so_far_j(&mut self, policy: usize) -> f64 {
        let mut cores: Vec<usize> =
            self.machine.plat.policies[policy].cpus.iter().map(|&c| self.machine.plat.cpus[c].core).collect();
        cores.dedup();
        let mut total = 0.0;
        for core in cores {
            self.hw.touch_core(self.q.now(), core);
            total += self.hw.cores[core].energy_j;
        }
        total
    }

    /// The warm-up is over: bring every account up to now, then start them again from zero, so
    /// that the metric, energy, power and per-CPU figures cover the measured interval only.
    pub(crate) fn end_warmup(&mut self) {
        for d in 0..self.hw.domains.len() {
            self.hw.account_freq_time(self.q.now(), d);
            self.hw.domains[d].freq_ns.clear();
        }
        for cpu in 0..self.sched.cpus.len() {
            self.sched.account_segment(&self.q, cpu);
            self.sync_counters(cpu);
            self.sched.account_busy_idle(&self.q, cpu);
            let c = &mut self.sched.cpus[cpu];
            c.busy_ns = 0;
            c.idle_ns.iter_mut().for_each(|ns| *ns = 0);
            c.util_avg_max = c.avg.util_avg;
            // Keep the tick's counter deltas right while the totals restart from zero.
            let k = &mut self.hw.counters[cpu];
            k.tick_aperf -= k.aperf;
            k.tick_mperf -= k.mperf;
            k.aperf = 0.0;
            k.mperf = 0.0;
        }
        self.hw.rapl_sample(&self.machine, &self.q);
        for pkg in 0..self.hw.packages.len() {
            self.hw.packages[pkg].energy_before_warmup_j += self.hw.package_energy_j(&self.machine, &self.q, pkg);
            let p = &mut self.hw.packages[pkg];
            p.uncore_energy_j = 0.0;
            p.idle_ns = 0;
            p.uncore_clock_s = 0.0;
            p.rapl_units = 0;
        }
        for core in self.hw.cores.iter_mut() {
            core.energy_j = 0.0;
        }
        self.work.stats.counters.iter_mut().for_each(|n| *n = 0);
        self.work.stats.responses_ns.clear();
        self.work.stats.latencies_ns.iter_mut().for_each(Vec::clear);
        self.work.stats.work_done_before_warmup = self.sched.workload_work_done();
        self.work.stats.time_to_top_ns = None;
    }

    /// Settle every account at the end of the run.
    pub(crate) fn finish(&mut self, end: u64) {
        debug_assert_eq!(end, self.q.now());
        if end < self.run.warmup_ns {
            // The workload finished before its warm-up did: the whole run is the measurement.
            self.run.warmup_ns = 0;
        }
        for d in 0..self.hw.domains.len() {
            self.hw.account_freq_time(self.q.now(), d);
        }
        for cpu in 0..self.sched.cpus.len() {
            self.sched.account_segment(&self.q, cpu);
            self.sync_counters(cpu);
            self.sched.account_busy_idle(&self.q, cpu);
        }
        self.hw.rapl_sample(&self.machine, &self.q);
        self.work.stats.sim_time_ns = end - self.run.warmup_ns;
        self.work.stats.work_done = self.sched.workload_work_done() - self.work.stats.work_done_before_warmup;
        self.work.stats.energy_j =
            (0..self.hw.packages.len()).map(|p| self.hw.package_energy_j(&self.machine, &self.q, p)).sum();
        let (mut a, mut m) = (0.0, 0.0);
        for cpu in 0..self.sched.cpus.len() {
            let base = self.machine.plat.cluster_of_cpu(cpu).frequency.base_khz as f64;
            a += self.hw.counters[cpu].aperf * base;
            m += self.hw.counters[cpu].mperf;
        }
        self.work.stats.busy_avg_khz = if m > 0.0 { a / m } else { 0.0 };
    }
}

/// When a frequency switch on a package rail repowers the package's cores.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RailCores {
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
