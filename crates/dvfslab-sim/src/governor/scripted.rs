//! A scripted policy for tests: a governor decides on inputs a test sets by hand, on a
//! [`Machine`] built from a preset, with no scheduler and no event loop. What the machine does
//! not say (utilisation, idle entries, counters, time) the test writes into the fields; what
//! the governor asks for lands in `requests` and `timer_at`.

use super::core::Policy;
use super::{CpuSignals, Governor, GovernorConfig, PolicyCtx, PolicyFacts, Relation};
use crate::machine::Machine;

pub(crate) struct ScriptedPolicy {
    pub machine: Machine,
    pub policy: usize,
    pub limits: Policy,
    pub now_ns: u64,
    /// Per CPU of the machine: what the scheduler would report.
    pub signals: Vec<CpuSignals>,
    pub nr_running: Vec<u64>,
    pub busy_ns: Vec<u64>,
    /// Per CPU: APERF, MPERF (TSC follows `now_ns` at base).
    pub counters: Vec<(u64, u64)>,
    /// Each request that reached the driver: (time, table entry).
    pub requests: Vec<(u64, u32)>,
    pub timer_at: Option<u64>,
}

impl ScriptedPolicy {
    /// Policy `policy` of preset `preset` under governor spec `governor` (its system settings:
    /// kernel, driver, tick, invariance), every CPU idle with no utilisation, at time 0.
    pub fn new(preset: &str, governor: &str, policy: usize) -> ScriptedPolicy {
        let machine = super::core::test_machine(preset, governor);
        let ncpus = machine.plat.ncpus();
        let signals = (0..ncpus)
            .map(|c| CpuSignals { cap_orig: machine.plat.cpus[c].cap_orig, ..CpuSignals::default() })
            .collect();
        ScriptedPolicy {
            limits: Policy::new(&machine.tables[policy]),
            machine,
            policy,
            now_ns: 0,
            signals,
            nr_running: vec![0; ncpus],
            busy_ns: vec![0; ncpus],
            counters: vec![(0, 0); ncpus],
            requests: Vec::new(),
            timer_at: None,
        }
    }

    /// The governor the spec names, built for this policy and started on it.
    pub fn start(&mut self, governor: &str) -> Box<dyn Governor> {
        let (cfg, info) = GovernorConfig::parse(governor).unwrap();
        let mut gov = (info.build)(cfg.values_for_policy(self.machine.plat.policies[self.policy].cpus[0]));
        gov.start(self);
        gov
    }
}

impl PolicyCtx for ScriptedPolicy {
    fn facts(&self) -> PolicyFacts<'_> {
        PolicyFacts {
            machine: &self.machine,
            policy: self.policy,
            limits: &self.limits,
            invariant: self.machine.invariant,
        }
    }
    fn now_ns(&self) -> u64 {
        self.now_ns
    }
    fn cur_khz(&self) -> u32 {
        self.limits.cur_khz
    }
    fn cpu_signals(&self, cpu: usize) -> CpuSignals {
        self.signals[cpu]
    }
    fn cpu_nr_running(&self, cpu: usize) -> u64 {
        self.nr_running[cpu]
    }
    fn cpu_busy_ns(&self, cpu: usize) -> u64 {
        self.busy_ns[cpu]
    }
    fn cpu_iowait_ns(&self, _cpu: usize) -> u64 {
        0
    }
    fn cpu_counters(&mut self, cpu: usize) -> (u64, u64, u64) {
        let base = self.machine.plat.cluster_of_cpu(cpu).frequency.base_khz as u128;
        let (aperf, mperf) = self.counters[cpu];
        (aperf, mperf, (self.now_ns as u128 * base / 1_000_000) as u64)
    }
    fn explaining(&self) -> bool {
        false
    }
    fn explain(&mut self, _inputs: &[(&'static str, f64)]) {}
    fn explain_more(&mut self, _inputs: &[(&'static str, f64)]) {}
    /// The cpufreq core as the live run has it: a request that selects the current entry
    /// stops there; the driver is taken to apply the rest at once.
    fn request_khz(&mut self, khz: u32, relation: Relation) {
        let facts = self.facts();
        let (target, entry) = facts.target(khz, relation);
        if facts.calls_driver(target, entry) {
            self.limits.cur_khz = entry;
            self.requests.push((self.now_ns, entry));
        }
    }
    fn arm_timer(&mut self, delay_ns: u64) {
        self.timer_at = Some(self.now_ns + delay_ns);
    }
    fn fail(&mut self, error: crate::error::SimError) {
        panic!("the governor failed: {error}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governor::UpdateFlags;

    /// schedutil on Skylake (acpi-cpufreq, invariant): a CPU at util 512 of 1024 asks for
    /// 1.25 × 512/1024 of cpuinfo.max_freq, rounded up to a table entry; a second update
    /// within the rate limit changes nothing, one after it follows a lower utilisation.
    #[test]
    fn schedutil_maps_utilisation_to_a_table_entry_and_keeps_its_rate_limit() {
        let spec = "schedutil:driver=acpi-cpufreq,invariant=1,kernel=6.8,rate_limit_us=2000";
        let mut p = ScriptedPolicy::new("skylake-e3-1240v5", spec, 0);
        let mut gov = p.start(spec);
        let cpu = p.facts().cpus()[0];
        let max = p.facts().cpuinfo_max_khz() as u64;
        p.signals[cpu].util_avg = 512;
        p.now_ns = 1_000_000;
        gov.util_update(&mut p, cpu, UpdateFlags::default());
        let expected = p.facts().resolve_freq((max * 5 / 4 * 512 / 1024) as u32);
        assert_eq!(p.requests, [(1_000_000, expected)]);
        // Within the 2 ms rate limit: no new decision.
        p.signals[cpu].util_avg = 100;
        p.signals[cpu].idle_calls = 1;
        p.now_ns = 2_000_000;
        gov.util_update(&mut p, cpu, UpdateFlags::default());
        assert_eq!(p.requests.len(), 1);
        // After it, the lower utilisation lowers the frequency.
        p.now_ns = 4_000_000;
        p.signals[cpu].idle_calls = 2;
        gov.util_update(&mut p, cpu, UpdateFlags::default());
        let lower = p.facts().resolve_freq((max * 5 / 4 * 100 / 1024) as u32);
        assert_eq!(p.requests.last(), Some(&(4_000_000, lower)));
        assert!(lower < expected);
    }

    /// performance asks for the policy's maximum at start, and the core passes it on once.
    #[test]
    fn performance_asks_for_the_maximum_at_start() {
        let mut p = ScriptedPolicy::new("juno-r2", "performance", 1);
        let _gov = p.start("performance");
        let top = *p.facts().table_khz().last().unwrap();
        assert_eq!(p.requests, [(0, top)]);
    }
}
