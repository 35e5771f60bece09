//! cpuidle: which idle state a CPU enters when it has nothing to run. An idle governor
//! (`struct cpuidle_governor` in the kernel) chooses at each idle entry (`select`) and learns
//! from how long the CPU stayed in the state it chose (`reflect`); the simulator keeps one governor per run,
//! holding its own per-CPU history as the kernel's per-CPU devices do.
//!
//! Only menu (drivers/cpuidle/governors/menu.c) is modelled, in `menu.rs`. A second governor
//! (teo) is one more file implementing [`IdleGovernor`], chosen in [`for_run`].

mod menu;

use crate::engine::TimeNs;
use crate::hw::platform::{IdleStateFile, IdleTiming};
use crate::kernel::KernelVersion;

pub(crate) use menu::{IdleHistory, Menu};

/// What an idle governor reads at an idle entry.
#[derive(Clone, Copy)]
pub(crate) struct IdleInputs<'a> {
    pub now: TimeNs,
    /// The soonest timer due on the CPU (tick_nohz_get_sleep_length's next event), if any.
    pub next_timer: Option<TimeNs>,
    /// Tasks asleep in iowait that slept on the CPU (rq->nr_iowait).
    pub nr_iowait: u32,
    pub kernel: KernelVersion,
    pub tick_ns: u64,
    /// The CPU's idle states, shallowest first, and their latencies in ns.
    pub states: &'a [IdleStateFile],
    pub timing: &'a [IdleTiming],
}

/// An idle governor's choice at an idle entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IdleChoice {
    pub state: usize,
    /// A retained tick at which the choice is abandoned and the CPU sleeps as deep as its next
    /// timer allows (menu giving up on a short history), if one comes before that timer.
    pub reconsider_at: Option<TimeNs>,
}

/// An idle governor: `struct cpuidle_governor`'s select and reflect.
pub(crate) trait IdleGovernor {
    /// The state `cpu` enters now.
    fn select(&mut self, cpu: usize, inputs: &IdleInputs) -> IdleChoice;
    /// `cpu` left the state last selected after `residency_ns` there, its exit included
    /// (what cpuidle measures), the state's declared exit latency being `exit_ns`.
    fn reflect(&mut self, cpu: usize, residency_ns: u64, exit_ns: u64);
    /// `cpu`'s recent idle periods, for the decision log.
    fn history(&self, cpu: usize) -> Option<IdleHistory>;
}

/// The idle governor of a run on `ncpus` CPUs.
pub(crate) fn for_run(ncpus: usize) -> Box<dyn IdleGovernor> {
    Box::new(Menu::new(ncpus))
}

/// The deepest state whose target residency fits in `ns` (the shallowest when none does).
pub(crate) fn deepest_within(timing: &[IdleTiming], ns: u64) -> usize {
    timing.iter().rposition(|s| s.target_residency_ns <= ns).unwrap_or(0)
}
