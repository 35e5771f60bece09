//! What a governor sees of its policy and the one thing it does: ask for a frequency.
//!
//! Governors read their inputs only through [`PolicyCtx`], so the same governor code decides in
//! a live simulation (`crate::sim::LivePolicy`, inputs from the simulated scheduler and
//! hardware) and against a recording (`crate::replay`, inputs from a kernel trace). The methods
//! mirror what a kernel governor reads: the scheduler's per-CPU signals, the cpufreq policy and
//! its driver, the hardware counters.

use super::{PolicyFacts, Relation, UpdateFlags};
use crate::hw::platform::{CpuIdFile, Vendor};
use crate::kernel::KernelVersion;

/// The scheduler's per-CPU signals a governor reads (cpu_util_cfs and its neighbours).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuSignals {
    /// The root cfs_rq's util_avg, an idle CPU's decayed to now.
    pub util_avg: u64,
    /// util_est of the enqueued tasks.
    pub util_est: u64,
    /// The root cfs_rq's runnable_avg (scaled by the number of runnable tasks).
    pub runnable_avg: u64,
    /// The capacity of the CPU at its highest frequency (arch_scale_cpu_capacity).
    pub cap_orig: u64,
    /// Whether an RT task is running or waiting on the CPU.
    pub rt_runnable: bool,
    /// The run-queue's uclamp (min, max): max-aggregated over its runnable tasks, an idle
    /// run-queue keeping its last max. None while no task uses uclamp (or before 5.3).
    pub uclamp: Option<(u64, u64)>,
    /// How many times the CPU has entered idle so far.
    pub idle_calls: u64,
}

/// One task on a CPU's run-queue (running or waiting), as a governor may read it: the
/// per-task PELT signals behind the CPU's sums, and the task's effective uclamp.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskSignals {
    /// The task's id in the run (its pid in results and timelines).
    pub id: usize,
    /// The task's util_avg, decayed to now.
    pub util_avg: u64,
    /// The task's util_est (the value its run-queue's sum holds while it is enqueued).
    pub util_est: u64,
    /// The task's effective uclamp (min, max), 0 and 1024 when it asks for none.
    pub uclamp: (u64, u64),
    /// Whether it is the task running now (else it waits).
    pub running: bool,
    /// Whether it is an RT task.
    pub rt: bool,
}

/// One policy as its governor sees it.
pub trait PolicyCtx {
    /// What the policy's governor reads that no scheduler event changes: the machine's facts
    /// for the policy, its limits and frequency-invariance. The methods below that read only
    /// these have their answer from it.
    fn facts(&self) -> PolicyFacts<'_>;
    /// Now, in ns since the start.
    fn now_ns(&self) -> u64;
    /// The policy's CPUs (policy->cpus).
    fn cpus(&self) -> &[usize] {
        self.facts().cpus()
    }
    /// The policy's limits (policy->min, policy->max) and current frequency (policy->cur), kHz.
    fn min_khz(&self) -> u32 {
        self.facts().min_khz()
    }
    fn max_khz(&self) -> u32 {
        self.facts().max_khz()
    }
    fn cur_khz(&self) -> u32;
    /// The frequency table, ascending (kHz).
    fn table_khz(&self) -> &[u32] {
        self.facts().table_khz()
    }
    /// The capacity of `cpu` at its highest frequency (arch_scale_cpu_capacity).
    fn cap_orig(&self, cpu: usize) -> u64 {
        self.facts().cap_orig(cpu)
    }
    /// What the scheduler reports of `cpu` for a frequency choice, read in one call: a
    /// utilisation-driven governor reads it at every update.
    fn cpu_signals(&self, cpu: usize) -> CpuSignals;
    /// The kernel version whose behaviour is simulated.
    fn kernel(&self) -> KernelVersion {
        self.facts().kernel()
    }
    /// cpufreq's default transition delay for this policy: schedutil's default rate limit.
    fn default_transition_delay_us(&self) -> u64 {
        self.facts().default_transition_delay_us()
    }
    /// The tasks on `cpu`'s run-queue, running first. A trace replay knows none.
    fn cpu_tasks(&self, _cpu: usize) -> Vec<TaskSignals> {
        Vec::new()
    }
    /// Energy the policy's cores drew since the measured interval began (J); None where it is
    /// not known (a trace replay).
    fn energy_so_far_j(&self) -> Option<f64> {
        None
    }
    /// Time the policy's hardware spent at each frequency since the measured interval began:
    /// (kHz, ns), in the order first reached (cpufreq's time_in_state, at the frequency the
    /// hardware ran rather than the one asked for). Empty where not known.
    fn time_in_state_ns(&self) -> Vec<(u32, u64)> {
        Vec::new()
    }
    /// The current frequency (policy->cur) of policy `policy` of the machine, any policy, for
    /// a governor that looks beyond its own; None where not known.
    fn policy_cur_khz(&self, _policy: usize) -> Option<u32> {
        None
    }
    /// Number of CFS tasks on `cpu` (running and waiting).
    fn cpu_nr_running(&self, cpu: usize) -> u64;
    /// Cumulative busy (non-idle) time of `cpu` up to now, ns: what get_cpu_idle_time() leaves.
    fn cpu_busy_ns(&self, cpu: usize) -> u64;
    /// Cumulative idle time of `cpu` with a task asleep in iowait on it, up to now (ns).
    fn cpu_iowait_ns(&self, cpu: usize) -> u64;
    /// The platform's vendor and x86 CPUID family/model, for model-specific defaults.
    fn cpu_identity(&self) -> (Vendor, Option<CpuIdFile>) {
        self.facts().cpu_identity()
    }
    /// APERF, MPERF and TSC of `cpu` now (cycles). APERF counts at the running frequency and
    /// MPERF at base, both only in C0; TSC counts at base always.
    fn cpu_counters(&mut self, cpu: usize) -> (u64, u64, u64);
    /// The hardware limits of the policy's cluster: (min, base, max) kHz.
    fn cpuinfo_khz(&self) -> (u32, u32, u32) {
        self.facts().cpuinfo_khz()
    }
    /// `cpuinfo.max_freq` of this policy (kHz), as the driver sets it for the simulated kernel.
    fn cpuinfo_max_khz(&self) -> u32 {
        self.facts().cpuinfo_max_khz()
    }
    /// `cpuinfo.transition_latency` the driver reports (None = unknown).
    fn transition_latency_ns(&self) -> Option<u64> {
        self.facts().transition_latency_ns()
    }
    /// Whether a governor may act on a callback with `flags` (cpufreq_this_cpu_can_update,
    /// kernel/sched/cpufreq.c; cpufreq_can_do_remote_dvfs in 4.14-5.0): a callback from one of
    /// the policy's own CPUs always, a remote one only when the driver lets any CPU change the
    /// frequency (`dvfs_possible_from_any_cpu`).
    fn this_cpu_can_update(&self, flags: UpdateFlags) -> bool {
        self.facts().this_cpu_can_update(flags)
    }
    /// The scheduler tick period (ns).
    fn tick_ns(&self) -> u64 {
        self.facts().tick_ns()
    }
    /// Whether PELT is frequency-invariant in this run.
    fn invariant(&self) -> bool {
        self.facts().invariant()
    }
    /// PELT multiplier (1, 2 or 4).
    fn pelt_multiplier(&self) -> u64 {
        self.facts().pelt_multiplier()
    }
    /// Whether decisions are being recorded: a governor may skip gathering inputs if not.
    fn explaining(&self) -> bool;
    /// The inputs behind the next [`PolicyCtx::request_khz`] (name, value), for `--explain`.
    fn explain(&mut self, inputs: &[(&'static str, f64)]);
    /// More inputs for the same request, after [`PolicyCtx::explain`].
    fn explain_more(&mut self, inputs: &[(&'static str, f64)]);
    /// What the cpufreq core makes of a governor's request `khz` before the driver acts
    /// (cpufreq_driver_resolve_freq): clamped to the limits, and rounded up to a table entry
    /// when the driver has a table (not intel_cpufreq).
    fn resolve_freq(&self, khz: u32) -> u32 {
        self.facts().resolve_freq(khz)
    }
    /// Ask the driver for `khz` (resolved in the table with `relation`, clamped to the limits).
    fn request_khz(&mut self, khz: u32, relation: Relation);
    /// Arm (or re-arm) this policy's governor timer `delay_ns` from now.
    fn arm_timer(&mut self, delay_ns: u64);
    /// Stop the run with `error` once the current event is handled (a governor outside the
    /// registry that cannot go on: a user's that raised).
    fn fail(&mut self, error: crate::error::SimError);
    /// Return control to whoever drives the simulation once the current event is handled (a
    /// controller stepping it, such as a reinforcement-learning environment); a no-op where no
    /// one steps it.
    fn pause(&mut self) {}
}
