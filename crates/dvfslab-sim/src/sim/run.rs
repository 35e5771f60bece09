//! Two of the run's parts that are neither hardware, scheduler nor cpufreq: the run's own
//! state (its end, warm-up, failure, pause, counts and timeline) and the workload's (its task
//! programs, the objects they use, their statistics and random streams).

use rand_pcg::Pcg64;

use crate::engine::TimeNs;
use crate::error::SimError;
use crate::observe::Timeline;
use crate::sched::task::Op;
use crate::sched::Charge;
use crate::workload::{RunStats, Workload};

#[cfg(doc)]
use crate::sched::task::MAX_TASKS;
#[cfg(doc)]
use crate::sim::Sim;

/// The run itself: when it ends and what stops it, what it counted and recorded.
pub(crate) struct Run {
    pub(crate) end_ns: TimeNs,
    /// Start of the measured interval (the end of the workload's warm-up).
    pub(crate) warmup_ns: TimeNs,
    pub(crate) started: bool,
    /// An error met within an event (a fork past [`MAX_TASKS`]): the run stops with it.
    pub(crate) failure: Option<SimError>,
    /// A governor asked [`Sim::advance`] to return after the current event.
    pub(crate) pause_requested: bool,
    /// The queue is swept of stale events when it reaches this length (see QUEUE_SWEEP_MIN).
    pub(crate) sweep_at: usize,
    /// Events handled (stale ones dropped uncounted).
    pub(crate) events: u64,
    /// The simulated time at the last progress report, and how many reports in a row found
    /// it unchanged (`Sim::advance` stops a run whose clock no longer moves).
    pub(crate) progress_ns: TimeNs,
    pub(crate) stalled_reports: u32,
    pub(crate) timeline: Option<Timeline>,
    /// A wake-up's sched_wakeup row not yet in the timeline: the kernel logs it
    /// (ttwu_do_wakeup) after wakeup_preempt's accounting of the running task, and before any
    /// switch that follows (`Run::timeline` adds it before the next row).
    pub(crate) pending_wakeup: Option<PendingWakeup>,
    pub(crate) seed: u64,
}

/// A sched_wakeup row waiting for the wake-up's accounting (`Run::pending_wakeup`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingWakeup {
    pub at: TimeNs,
    pub task: usize,
    pub cpu: usize,
    /// The CPU whose code logs it (the waker's, unless the target's wake list took it).
    pub logged_cpu: usize,
    /// The wake-up asked that CPU's running task to reschedule (resched_curr): `N` in the
    /// row's flags.
    pub need_resched: bool,
}

impl Run {
    /// The timeline, when the run keeps one, with the scheduler's charges since its last row
    /// (`Sched::charges`) moved in first: every row goes in through here, so that the rows
    /// keep the order in which things happened.
    pub(crate) fn timeline(&mut self, charges: &mut Option<Vec<Charge>>) -> Option<&mut Timeline> {
        let tl = self.timeline.as_mut()?;
        for c in charges.iter_mut().flat_map(|c| c.drain(..)) {
            tl.runtime(c.time, c.cpu, c.task, c.ns);
        }
        if let Some(w) = self.pending_wakeup.take() {
            tl.wakeup(w.at, w.task, w.cpu, w.logged_cpu, w.need_resched);
        }
        Some(tl)
    }
}

/// The workload: its programs and their state while interpreted, the objects they share, the
/// statistics its metric is computed from, and its random streams.
pub(crate) struct Work {
    pub(crate) workload: Box<dyn Workload>,
    /// Programs that `Op::Spawn` starts.
    pub(crate) programs: Vec<std::rc::Rc<[Op]>>,
    pub(crate) objects: crate::sched::objects::Objects,
    pub(crate) stats: RunStats,
    pub(crate) rng: Pcg64,
    /// The background kernel threads' own random stream, so that they leave the workload's
    /// draws as they would be without them.
    pub(crate) background_rng: Pcg64,
    /// The start phases' and work jitter's own random stream, so that the workload's own draws
    /// stay as they would be without them, and a run with neither draws nothing from it.
    pub(crate) variation_rng: Pcg64,
    /// Start phases (ns) and work jitter (a fraction) the workload spec asks for.
    pub(crate) phase_ns: f64,
    pub(crate) work_jitter: f64,
    /// The CPUs the workload's own tasks start allowed on (its spec's `cpumask`), if not all.
    pub(crate) allowed_cpus: Option<Vec<usize>>,
    /// Background kernel threads, the platform's and the workload spec's together: wake-ups a
    /// second per CPU, and µs of work each ([`crate::workload::background_kthreads`]).
    pub(crate) kthreads: (f64, f64),
    /// RCU's grace periods and their kthread (`sim/rcu.rs`).
    pub(crate) rcu: crate::sim::rcu::Rcu,
    /// Each CPU's ksoftirqd and the softirq work handed to it (`sim/softirq.rs`).
    pub(crate) softirq: crate::sim::softirq::Softirq,
    /// Programs being interpreted within one another now, and those deferred to the end of the
    /// event as too deep (`Sim::run_program`): (CPU, task, the CPU's segment token then).
    pub(crate) program_nesting: u32,
    pub(crate) deferred_programs: Vec<(usize, usize, u32)>,
    pub(crate) workload_name: String,
}
