//! Sequences that change the hardware and read or change the scheduler too: frequency switches and
//! the run segments they cut, core power and counters, the package controller's tick, powernv's
//! ramp, and the accounts at the warm-up's and the run's end.

use crate::engine::Event;
use crate::hw::platform::{IdlePower, VoltageScope};
use crate::hw::powernv::{calc_global, GPSTATE_TIMER_INTERVAL_MS, MAX_RAMP_DOWN_TIME_MS};
use crate::hw::{power, RailCores};
use crate::sim::Sim;

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
    pub(crate) fn core_power(&self, core: usize) -> f64 {
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
    pub(crate) fn vote_changed(&mut self, d: usize) {
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
    pub(crate) fn turbo_limit_changed(&mut self, pkg: usize, cluster: usize, before: u32, after: u32) {
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
    pub(crate) fn repower_cores(&mut self, cores: &[usize]) {
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
    pub(crate) fn domain_request(&self, d: usize) -> u32 {
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
        if let Some(tl) = self.run.timeline(&mut self.sched.charges) {
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
    pub(crate) fn retarget(&mut self, d: usize) {
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
    pub(crate) fn apply_pending_freq(&mut self, d: usize, rail_cores: RailCores) -> bool {
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
            let c = &mut self.sched.cpus[cpu];
            c.halt_until = c.halt_until.max(halt_until);
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
            if let Some(tl) = self.run.timeline(&mut self.sched.charges) {
                tl.frequency(self.q.now(), cpu, new);
            }
        }
        defer_rail
    }

    /// Work per ns (cycles at base frequency) of the task current on `cpu`:
    /// `t(W) = W · ((1 - m)/f + m/f_base)`, scaled by the µarch capacity and the share of the
    /// core's throughput this SMT thread gets.
    pub(crate) fn cpu_rate(&self, cpu: usize, mem_frac: f64) -> f64 {
        if let Some(task) = self.sched.cpus[cpu].curr {
            if self.sched.tasks[task].fixed_time {
                return 1.0;
            }
        }
        self.core_rate(cpu, mem_frac)
    }

    /// [`Sim::cpu_rate`] of work that is measured in cycles, whichever task does it.
    pub(crate) fn core_rate(&self, cpu: usize, mem_frac: f64) -> f64 {
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

    /// The driver set a new local P-state for `policy` (powernv_cpufreq_target_index).
    pub(crate) fn powernv_target(&mut self, policy: usize, khz: u32) {
        let new_idx = self.hw.pstate_index(&self.machine, policy, khz);
        if self.machine.powernv_fast_switch {
            // powernv_fast_switch writes local = global: no ramp. The ramp timer, if one is
            // pending, would find them equal and stop (gpstate_timer_handler re-reads PMCR).
            let r = &mut self.hw.ramps[policy];
            r.reset();
            r.timer_token = r.timer_token.wrapping_add(1);
            self.set_global_khz(policy, khz);
            return;
        }
        if !self.machine.slow_rampdown {
            self.set_global_khz(policy, khz);
            return;
        }
        let now_ms = self.q.now() / 1_000_000;
        let min_idx = self.machine.tables[policy].len() - 1;
        let r = &mut self.hw.ramps[policy];
        let g = match r.last_sampled_ms {
            None => {
                r.highest_idx = new_idx;
                new_idx
            }
            Some(last) if r.last_gpstate_idx < new_idx => {
                // The request is below the global: keep ramping down.
                r.elapsed_ms += now_ms - last;
                if r.elapsed_ms > MAX_RAMP_DOWN_TIME_MS {
                    r.reset();
                    r.highest_idx = new_idx;
                    new_idx
                } else {
                    calc_global(r.elapsed_ms, r.highest_idx, new_idx, min_idx)
                }
            }
            Some(_) => {
                // At or above the global: the global jumps with it and the ramp restarts.
                r.reset();
                r.highest_idx = new_idx;
                new_idx
            }
        };
        r.last_sampled_ms = Some(now_ms);
        r.last_gpstate_idx = g;
        r.last_lpstate_idx = new_idx;
        if g != new_idx {
            self.arm_ramp_timer(policy, false);
        } else {
            r.timer_token = r.timer_token.wrapping_add(1);
            r.deferred = false;
        }
        let global = self.hw.pstate_khz(&self.machine, policy, g);
        self.set_global_khz(policy, global);
    }

    /// The ramp-down timer came due: lower the global a step further (gpstate_timer_handler),
    /// or, while the CPU it is pinned to idles, wait for that CPU to wake.
    pub(crate) fn powernv_timer(&mut self, policy: usize) {
        let cpu = self.hw.ramps[policy].timer_cpu;
        if self.sched.cpus[cpu].idle_state.is_some() {
            self.hw.ramps[policy].deferred = true;
            self.hw.deferred_ramp[cpu] = Some(policy);
            return;
        }
        self.hw.ramps[policy].deferred = false;
        let now_ms = self.q.now() / 1_000_000;
        let min_idx = self.machine.tables[policy].len() - 1;
        let r = &mut self.hw.ramps[policy];
        let local = r.last_lpstate_idx;
        if r.last_gpstate_idx == local {
            r.reset();
            return;
        }
        let dt = now_ms - r.last_sampled_ms.unwrap_or(now_ms);
        r.last_sampled_ms = Some(now_ms);
        r.elapsed_ms += dt;
        let g = if r.elapsed_ms > MAX_RAMP_DOWN_TIME_MS {
            r.reset();
            r.highest_idx = local;
            r.last_lpstate_idx = local;
            local
        } else {
            calc_global(r.elapsed_ms, r.highest_idx, local, min_idx)
        };
        r.last_gpstate_idx = g;
        r.last_lpstate_idx = local;
        if g != local {
            self.arm_ramp_timer(policy, true);
        }
        let global = self.hw.pstate_khz(&self.machine, policy, g);
        self.set_global_khz(policy, global);
    }

    /// Queue the ramp timer (queue_gpstate_timer). From the handler it stays on its CPU; from
    /// a P-state change it goes to the CPU that made it.
    pub(crate) fn arm_ramp_timer(&mut self, policy: usize, from_handler: bool) {
        if !from_handler {
            let cpus = &self.machine.plat.policies[policy].cpus;
            let busy = cpus.iter().copied().find(|&c| self.sched.cpus[c].idle_state.is_none());
            self.hw.ramps[policy].timer_cpu = busy.unwrap_or(cpus[0]);
        }
        let r = &mut self.hw.ramps[policy];
        r.deferred = false;
        let interval = if r.elapsed_ms + GPSTATE_TIMER_INTERVAL_MS > MAX_RAMP_DOWN_TIME_MS {
            MAX_RAMP_DOWN_TIME_MS.saturating_sub(r.elapsed_ms).max(1)
        } else {
            GPSTATE_TIMER_INTERVAL_MS
        };
        r.timer_token = r.timer_token.wrapping_add(1);
        let token = r.timer_token;
        let at = self.q.now() + interval * 1_000_000;
        self.q.push(at, Event::DriverTimer { policy: policy as u32, token });
    }
}

#[cfg(test)]
mod tests {
    use crate::hw::platform::Platform;
    use crate::hw::RailCores;
    use crate::sched::task::Op;
    use crate::sim::test_support::{run, Tasks};
    use crate::sim::{Sim, SimConfig};
    use crate::workload::TaskSpec;

    #[test]
    fn a_pll_relock_halts_its_domains_cpus_without_shortening_a_longer_hold() {
        // i7-2600k: one frequency domain, a 10 µs relock. CPU 0 is held 1 ms longer (an IPI
        // send's or a wake-up's hold); the relock leaves it so and holds the others 10 µs.
        let json = include_str!("../../../../python/dvfslab/data/platforms/i7-2600k.json");
        let plat = Platform::from_json(json, "i7-2600k").unwrap();
        let spin = TaskSpec::new("spin", vec![run(1e12), Op::Exit].into());
        let cfg = SimConfig::new("userspace:scaling_setspeed=1600000", "test").duration_ns(Some(1_000_000));
        let tasks = Tasks { tasks: vec![spin], programs: Vec::new(), devices: Vec::new() };
        let mut sim = Sim::with_workload(plat, &cfg, Box::new(tasks), "test".into()).unwrap();
        sim.begin();
        let now = sim.q.now();
        let held = now + 1_000_000;
        sim.sched.cpus[0].halt_until = held;
        let other = sim.machine.plat.domains[0].cpus[1];
        sim.sched.cpus[other].halt_until = now;
        let d = 0;
        let actual = sim.hw.domains[d].actual_khz;
        let new = sim.machine.plat.cluster(sim.machine.plat.domains[d].cluster).frequency.max_khz;
        assert_ne!(new, actual);
        sim.hw.domains[d].pending_khz = Some(new);
        sim.apply_pending_freq(d, RailCores::Now);
        assert_eq!(sim.hw.domains[d].actual_khz, new);
        assert_eq!(sim.sched.cpus[0].halt_until, held);
        assert_eq!(sim.sched.cpus[other].halt_until, now + 10_000);
    }
}
