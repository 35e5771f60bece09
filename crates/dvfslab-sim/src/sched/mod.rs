//! The CFS-like scheduler and the CPU-level PELT signals: task placement at fork and wake-up,
//! fair time slices, preemption, new-idle and tick-time balancing, idle entry through the idle
//! governor (`hw/cpuidle/`), and the run-queue PELT clock with frequency and capacity
//! invariance. The task programs' interpreter is in interpret.rs.
//!
//! Simplifications (see docs/model.md): all tasks have nice 0; vruntime is re-based on the
//! destination's min_vruntime when a task moves; load balancing moves a waiting task only to
//! an idle CPU (new-idle pull and a tick-time push that stands for NOHZ idle balancing), and a
//! running one only off a core whose SMT threads are all kept busy, to a wholly idle core, or
//! off a NUMA node running more tasks than another (numa_balance.rs). Fork placement is in
//! fork_balance.rs.

pub mod capacity;
pub(crate) mod eas;
pub(crate) mod eevdf;
pub mod energy_model;
mod fork_balance;
mod misfit;
mod numa_balance;
pub(crate) mod objects;
pub mod pelt;
pub mod task;
mod wake_affine;
pub mod waker;

use crate::engine::{Event, TimeNs};
use crate::governor::UpdateFlags;
use crate::hw::cpuidle::{deepest_within, IdleChoice, IdleInputs};
use crate::sched::capacity::AsymWakeup;
use crate::sched::objects::Outcome;
use crate::sched::pelt::{initial_task_util, SchedAvg, LOAD_AVG_MAX, PELT_MIN_DIVIDER, SCHED_CAPACITY_SCALE};
use crate::sched::task::{Mark, Op, TaskState};
use crate::sched::waker::Waker;
use crate::sim::Sim;
use crate::workload::SchedPolicy;
use crate::workload::TaskSpec;

mod cpu;
mod fair;
mod interpret;
pub(crate) use cpu::{Cpu, LlcIdle};

/// The scheduler's state: the per-CPU run-queues, the tasks, the idle counts placement reads,
/// and the heterogeneous-platform state (capacities, misfit, EAS, uclamp).
pub(crate) struct Sched {
    pub(crate) cpus: Vec<Cpu>,
    pub(crate) tasks: Vec<crate::sched::task::Task>,
    /// Frequency-invariant PELT: the machine's setting until out-of-range counter ratios
    /// switch it off for good.
    pub(crate) invariant: bool,
    pub(crate) live_tasks: usize,
    /// Tasks waiting on any run-queue (not running): balancing has nothing to do at zero.
    pub(crate) waiting: usize,
    /// Whether any task has an RT policy (given at spawn, never changed): without one, the RT
    /// checks of every enqueue, switch and run-queue PELT update read no task.
    pub(crate) any_rt: bool,
    /// CPUs, and cores with every thread, that wake-up placement would find idle: its scans
    /// have nothing to find at zero.
    pub(crate) idle_cpus: usize,
    pub(crate) idle_cores: usize,
    /// The same two counts per LLC (a core's threads share its LLC): a wake-up's searches of
    /// its target's LLC have nothing to find there at zero, however many idle CPUs the other
    /// LLCs have.
    pub(crate) llc_idle: Vec<LlcIdle>,
    /// Capacities, misfit, EAS and uclamp state (asymmetric platforms).
    pub(crate) hetero: crate::sched::capacity::Hetero,
    /// The fair class's EEVDF rules from 6.6 (`sched/fair.rs`); None for CFS before.
    pub(crate) eevdf: Option<crate::sched::eevdf::Rules>,
    /// Per LLC, how many CPUs a wake-up's idle search may visit (SIS_UTIL, 6.0+).
    pub(crate) llc_scan: Vec<wake_affine::IdleScan>,
}

impl Sched {
    /// The scheduler at the start of a run: no task, every CPU idle in its deepest state.
    pub(crate) fn new(machine: &crate::machine::Machine, hetero: crate::sched::capacity::Hetero) -> Sched {
        let plat = &machine.plat;
        let ncpus = plat.ncpus();
        let eevdf = crate::sched::eevdf::Rules::for_kernel(machine.kernel, ncpus, machine.tick_ns);
        let origin = if eevdf.is_some() { crate::sched::eevdf::VRUNTIME_ORIGIN } else { 0 };
        let cpus = (0..ncpus)
            .map(|c| Cpu {
                curr: None,
                queue: Vec::new(),
                queue_by_vruntime: std::collections::BTreeSet::new(),
                runnable_load: 0,
                min_vruntime: origin,
                fair: Default::default(),
                resched: false,
                avg: SchedAvg::default(),
                util_est_sum: 0,
                clock_pelt: 0,
                clock_task: 0,
                lost_idle: 0,
                freq_scale: SCHED_CAPACITY_SCALE,
                seg_token: 0,
                seg_start: 0,
                seg_rate: 0.0,
                stall_until: 0,
                halt_until: 0,
                vcpu_wake_ns: None,
                ipi_send_until: 0,
                stall_pelt_end: 0,
                tick_token: 0,
                tick_armed: false,
                idle_state: Some(plat.cluster_of_cpu(c).idle_states.len().saturating_sub(1)),
                idle_power: plat.cluster_of_cpu(c).idle_states.last().map(|s| s.power),
                idle_since: 0,
                avg_idle_ns: crate::sched::AVG_IDLE_MAX_NS,
                util_changed: false,
                nr_iowait: 0,
                iowait_ns: 0,
                iowait_mark: 0,
                spread: Default::default(),
                timers: std::collections::BinaryHeap::new(),
                busy_ns: 0,
                idle_ns: vec![0; plat.cluster_of_cpu(c).idle_states.len()],
                util_avg_max: 0,
                idle_calls: 0,
                switched_out: None,
                placement_idle: true,
                awake: false,
            })
            .collect();
        Sched {
            cpus,
            tasks: Vec::new(),
            invariant: machine.invariant,
            live_tasks: 0,
            waiting: 0,
            any_rt: false,
            idle_cpus: plat.ncpus(),
            idle_cores: plat.cores.len(),
            llc_idle: LlcIdle::all_idle(plat),
            llc_scan: wake_affine::IdleScan::all(&plat.llcs),
            hetero,
            eevdf,
        }
    }
}

/// Scheduler tunables scale with log2 of the CPU count, capped at 8 CPUs (the kernel's
/// default `SCHED_TUNABLESCALING_LOG`).
fn tunable_factor(ncpus: usize) -> u64 {
    1 + (ncpus.clamp(1, 8) as u64).ilog2() as u64
}
const SCHED_LATENCY_NS: u64 = 6_000_000;
const MIN_GRANULARITY_NS: u64 = 750_000;
const WAKEUP_GRANULARITY_NS: u64 = 1_000_000;
/// sysctl_sched_migration_cost: a task that ran this recently is cache-hot and stays where it
/// is, and a CPU whose idle periods average less than this does not look for work when it
/// goes idle (new-idle balancing would cost more than the idle time it fills).
const MIGRATION_COST_NS: u64 = 500_000;
/// The periodic balancer's attempts at an imbalance it can fix only by moving a running task:
/// a core overloaded next to an idle core (per CPU, `Sim::spread_smt`) or a node busier than
/// another (per package, `Sim::spread_numa`). The cache-sharing domain of `n` CPUs balances
/// every `n` ms, twice that after a failure, and moves a running task by active balance once
/// its failures exceed cache_nice_tries + 2 (cache_nice_tries is 1 at that level).
#[derive(Debug, Clone, Copy, Default)]
pub struct SpreadAttempts {
    /// Consecutive balance attempts that found the imbalance and could not fix it.
    pub(crate) failed: u32,
    /// When the next attempt is due.
    pub(crate) next_ns: TimeNs,
}

impl SpreadAttempts {
    const FAILURES_BEFORE_ACTIVE: u32 = 3;
}

/// rq->avg_idle starts at, and is capped to, twice the migration cost.
pub(crate) const AVG_IDLE_MAX_NS: u64 = 2 * MIGRATION_COST_NS;
/// rq->avg_idle after an idle period of `sample_ns` (update_avg in ttwu_do_wakeup):
/// avg += (sample − avg) / 8, capped at [`AVG_IDLE_MAX_NS`].
fn next_avg_idle(avg_ns: u64, sample_ns: u64) -> u64 {
    let avg = avg_ns as i64 + (sample_ns as i64 - avg_ns as i64) / 8;
    (avg.max(0) as u64).min(AVG_IDLE_MAX_NS)
}
/// SCHED_RR time slice (RR_TIMESLICE, 100 ms).
const RR_TIMESLICE_NS: u64 = 100_000_000;
/// Steps a program may take without running, blocking or exiting before it is declared stuck.
const MAX_INSTANT_STEPS: usize = 10_000;
/// Programs interpreted within programs (see [`Sim::run_program`]) at most: a bound on the
/// stack whatever the workload, far above what wake-up chains reach in practice.
const MAX_PROGRAM_NESTING: u32 = 64;
/// A forked task's name is its parent's with its id appended while the parent's is shorter
/// than this (see `Sim::child_name`).
const MAX_INHERITED_NAME_LEN: usize = 48;

/// What is left to do of a task's exit after its CPU has switched to the next task: waking
/// the exited task's parent if it waits for its children. (A sleep leaves nothing: its
/// dequeue's governor callback runs before the switch, see [`Sim::dequeue_callback`].)
pub(crate) struct Unfinished {
    cpu: usize,
    task: usize,
}

/// Whether the scheduler calls the governor of a CPU another CPU enqueued a task on. Before
/// 4.14 it called only the running CPU's own hook (`cfs_rq_util_change` in fair.c checked
/// that the cfs_rq was `this_rq()`'s); remote callbacks came with "sched: cpufreq: Allow
/// remote cpufreq callbacks" (4.14).
fn remote_callbacks(kernel: crate::kernel::KernelVersion) -> bool {
    kernel >= crate::kernel::KernelVersion(4, 14)
}

/// Take a task's averages `se` off its run-queue's `rq` (detach_entity_load_avg, and
/// remove_entity_load_avg for an exiting task; fair.c): util, runnable and load all leave, each
/// sum by the task's average times the run-queue's divider, floored at the remaining average
/// times PELT_MIN_DIVIDER as the kernel does, so that sum and average stay consistent.
fn detach_task_avg(rq: &mut SchedAvg, se: &SchedAvg) {
    rq.remove_util(se.util_avg);
    let div = rq.divider();
    rq.runnable_avg = rq.runnable_avg.saturating_sub(se.runnable_avg);
    rq.runnable_sum = rq.runnable_sum.saturating_sub(se.runnable_avg * div).max(rq.runnable_avg * PELT_MIN_DIVIDER);
    rq.load_avg = rq.load_avg.saturating_sub(se.load_avg);
    rq.load_sum = rq.load_sum.saturating_sub(se.load_avg * div).max(rq.load_avg * PELT_MIN_DIVIDER);
}

/// Add a task's averages `se` to the run-queue's `rq` it joins (attach_entity_load_avg,
/// fair.c): util, runnable and load, each sum as the average times the run-queue's divider.
fn attach_task_avg(rq: &mut SchedAvg, se: &SchedAvg) {
    rq.add_util(se.util_avg);
    let div = rq.divider();
    rq.runnable_avg += se.runnable_avg;
    rq.runnable_sum += se.runnable_avg * div;
    rq.load_avg += se.load_avg;
    rq.load_sum += se.load_avg * div;
}

/// `cpus` in order from `start` (from the first when `start` is not among them), wrapping
/// around once: the order select_idle_core and select_idle_cpu scan an LLC in.
fn scan_from(cpus: &[usize], start: usize) -> impl Iterator<Item = usize> + '_ {
    let pos = cpus.iter().position(|&c| c == start).unwrap_or(0);
    cpus[pos..].iter().chain(&cpus[..pos]).copied()
}

impl Sim {
    fn sched_latency_ns(&self) -> u64 {
        SCHED_LATENCY_NS * tunable_factor(self.sched.cpus.len())
    }

    pub(crate) fn cpu_is_idle(&self, cpu: usize) -> bool {
        let c = &self.sched.cpus[cpu];
        c.curr.is_none() && c.queue.is_empty()
    }

    /// Recount `cpu` in `idle_cpus` and `idle_cores` after its current task changed. (Taking a
    /// queued task away never changes it: a CPU with a queue has a current task.)
    pub(crate) fn count_placement_idle(&mut self, cpu: usize) {
        let idle = self.cpu_is_idle(cpu);
        if idle == self.sched.cpus[cpu].placement_idle {
            return;
        }
        self.sched.cpus[cpu].placement_idle = idle;
        let core = self.machine.plat.cpus[cpu].core;
        let threads = self.machine.plat.cores[core].cpus.len() as u32;
        let c = &mut self.hw.cores[core];
        let llc = &mut self.sched.llc_idle[self.machine.plat.cpus[cpu].llc];
        if idle {
            self.sched.idle_cpus += 1;
            llc.cpus += 1;
            c.placement_idle_threads += 1;
            if c.placement_idle_threads == threads {
                self.sched.idle_cores += 1;
                llc.cores += 1;
            }
        } else {
            self.sched.idle_cpus -= 1;
            llc.cpus -= 1;
            if c.placement_idle_threads == threads {
                self.sched.idle_cores -= 1;
                llc.cores -= 1;
            }
            c.placement_idle_threads -= 1;
        }
    }

    /// Whether `task` may run on `cpu` (its affinity).
    pub(crate) fn allowed(&self, task: usize, cpu: usize) -> bool {
        self.sched.tasks[task].attrs.affinity.as_ref().is_none_or(|cpus| cpus.contains(&cpu))
    }

    /// RT priority of a task (1..99), None for CFS.
    pub(crate) fn rt_prio(&self, task: usize) -> Option<u8> {
        if !self.sched.any_rt {
            return None;
        }
        match self.sched.tasks[task].attrs.policy {
            SchedPolicy::Normal => None,
            SchedPolicy::Fifo(p) | SchedPolicy::Rr(p) => Some(p),
        }
    }

    /// Whether an RT task is running or waiting on `cpu` (schedutil then asks for the maximum).
    pub(crate) fn rt_runnable(&self, cpu: usize) -> bool {
        let c = &self.sched.cpus[cpu];
        c.curr.iter().chain(c.queue.iter()).any(|&t| self.rt_prio(t).is_some())
    }

    pub(crate) fn nr_running(&self, cpu: usize) -> u64 {
        self.sched.cpus[cpu].curr.is_some() as u64 + self.sched.cpus[cpu].queue.len() as u64
    }

    // -----------------------------------------------------------------------------------------
    // PELT at the run-queue level
    // -----------------------------------------------------------------------------------------

    /// Advance the rq clocks and the root cfs_rq average of `cpu` to now, accounting the
    /// elapsed interval with the state it had (callers update before they change state).
    ///
    /// ```text
    ///   running:  clock_pelt += Δ · cap_orig/1024 · freq_scale/1024   (update_rq_clock_pelt, 5.1+;
    ///             before, clock_pelt += Δ and each contribution is scaled: Sim::pelt_scale)
    ///   idle:     clock_pelt  = clock_task                            (re-synced)
    ///   PELT time = clock_pelt - lost_idle
    /// ```
    ///
    /// While the CPU is still leaving its idle state nothing runs: Linux runs the idle task
    /// until the CPU can schedule, so the clock stays synced as for an idle CPU. The woken task
    /// is not counted as runnable either: a timer or an I/O completion wakes it only once the
    /// CPU is out of its idle state (a remote wake-up in the same LLC would have enqueued it
    /// already; that runnable time is left out).
    pub(crate) fn update_cpu_pelt(&mut self, cpu: usize) {
        let now = self.q.now();
        let pelt = self.pelt_scale(cpu);
        let curr = self.sched.cpus[cpu].curr;
        // The cfs_rq signal runs only while a CFS task is current; RT time leaves it to decay.
        let running = curr.is_some_and(|t| self.rt_prio(t).is_none());
        let nr = self.nr_running(cpu);
        let c = &mut self.sched.cpus[cpu];
        if curr.is_some() && c.stall_until > c.clock_task {
            let end = c.stall_until.min(now);
            c.clock_task = end;
            c.clock_pelt = end;
            c.stall_pelt_end = end - c.lost_idle;
            let waiting = nr.saturating_sub(1);
            c.util_changed |= c.avg.update_scaled(c.stall_pelt_end, waiting * 1024, waiting, false, 1, pelt);
        }
        let delta = now - c.clock_task;
        c.clock_task = now;
        if curr.is_some() {
            c.clock_pelt += pelt.clock_delta(delta);
        } else {
            c.clock_pelt = now;
        }
        let pelt_now = c.clock_pelt - c.lost_idle;
        if c.avg.update_scaled(pelt_now, nr * 1024, nr, running, 1, pelt) {
            c.util_changed = true;
            // util_avg may exceed the capacity scale for a while after migrations attach
            // tasks' util (as in Linux); the reported signal is clipped at the scale.
            let util = c.avg.util_avg.min(SCHED_CAPACITY_SCALE);
            c.util_avg_max = c.util_avg_max.max(util);
            if let Some(tl) = self.run.timeline.as_mut() {
                tl.util(now, cpu, util);
            }
        }
    }

    fn cpu_pelt_now(&self, cpu: usize) -> u64 {
        let c = &self.sched.cpus[cpu];
        c.clock_pelt - c.lost_idle
    }

    /// Update a task's own average on its CPU's PELT clock (call after update_cpu_pelt).
    pub(crate) fn update_task_pelt(&mut self, task: usize, runnable: bool, running: bool) {
        let cpu = self.sched.tasks[task].cpu;
        let now = self.cpu_pelt_now(cpu);
        let waited_until = self.sched.cpus[cpu].stall_pelt_end;
        let pelt = self.pelt_scale(cpu);
        let t = &mut self.sched.tasks[task];
        let load_before = t.avg.load_avg;
        if running && t.avg.last_update_time < waited_until && waited_until <= now {
            // The current task was woken only once its CPU had left its idle state.
            if t.avg.update(waited_until, 0, 0, false, t.weight, self.machine.pelt_shift) {
                t.util_est.on_pelt_refresh();
            }
        }
        if t.avg.update_scaled(now, runnable as u64, runnable as u64, running, t.weight, pelt) {
            t.util_est.on_pelt_refresh();
        }
        if t.on_rq {
            let rq = &mut self.sched.cpus[cpu].runnable_load;
            *rq = *rq - load_before + t.avg.load_avg;
        }
    }

    /// `task` joins the run-queue of `cpu` (its CPU), current or waiting.
    fn rq_attach(&mut self, task: usize, cpu: usize) {
        let t = &mut self.sched.tasks[task];
        debug_assert!(!t.on_rq && t.cpu == cpu);
        t.on_rq = true;
        self.sched.cpus[cpu].runnable_load += t.avg.load_avg;
    }

    /// `task` leaves the run-queue of `cpu` (its CPU).
    fn rq_detach(&mut self, task: usize, cpu: usize) {
        let t = &mut self.sched.tasks[task];
        debug_assert!(t.on_rq && t.cpu == cpu);
        t.on_rq = false;
        self.sched.cpus[cpu].runnable_load -= t.avg.load_avg;
    }

    /// Add `task` to the tasks waiting on `cpu`.
    fn queue_push(&mut self, cpu: usize, task: usize) {
        let c = &mut self.sched.cpus[cpu];
        c.queue.push(task);
        c.queue_by_vruntime.insert((self.sched.tasks[task].vruntime, task));
        if self.sched.eevdf.is_some() {
            self.fair_enqueue(cpu, task);
        }
    }

    /// Take `task` out of the tasks waiting on `cpu`.
    fn queue_remove(&mut self, cpu: usize, task: usize) {
        let c = &mut self.sched.cpus[cpu];
        c.queue.retain(|&t| t != task);
        let removed = c.queue_by_vruntime.remove(&(self.sched.tasks[task].vruntime, task));
        debug_assert!(removed, "a waiting task's vruntime changed");
        if self.sched.eevdf.is_some() {
            self.fair_dequeue(cpu, task);
        }
    }

    /// The smallest vruntime among the tasks waiting on `cpu`, if any.
    fn queued_min_vruntime(&mut self, cpu: usize) -> Option<u64> {
        self.sched.cpus[cpu].queue_by_vruntime.first().map(|&(vruntime, _)| vruntime)
    }

    /// CFS utilisation as a governor reads it: max(util_avg, util_est) capped at capacity; an
    /// idle CPU's blocked average is decayed to now without changing the state.
    pub(crate) fn cpu_util_now(&self, cpu: usize) -> u64 {
        let c = &self.sched.cpus[cpu];
        self.cpu_util_avg_now(cpu).max(c.util_est_sum).min(self.machine.plat.cpus[cpu].cap_orig)
    }

    /// The root cfs_rq util_avg of `cpu`, decayed to now if the CPU is idle.
    pub(crate) fn cpu_util_avg_now(&self, cpu: usize) -> u64 {
        self.with_cpu_avg_now(cpu, |avg| avg.util_avg)
    }

    /// `read` applied to the root cfs_rq average of `cpu`, with an idle CPU's blocked signals
    /// decayed to now (on a copy: the CPU's state is not changed).
    pub(crate) fn with_cpu_avg_now<R>(&self, cpu: usize, read: impl Fn(&crate::sched::pelt::SchedAvg) -> R) -> R {
        let c = &self.sched.cpus[cpu];
        if c.curr.is_some() {
            return read(&c.avg);
        }
        let mut avg = c.avg.clone();
        avg.update(self.q.now() - c.lost_idle, 0, 0, false, 1, self.machine.pelt_shift);
        read(&avg)
    }

    // -----------------------------------------------------------------------------------------
    // Task creation and wake-up
    // -----------------------------------------------------------------------------------------

    /// A task whose util_est follows the simulated kernel's rules (util_est_update by version).
    fn new_task(&self, id: usize, name: String, program: std::rc::Rc<[Op]>, start_ns: u64) -> crate::sched::task::Task {
        let mut task = crate::sched::task::Task::new(id, name, program, start_ns);
        task.util_est =
            crate::sched::pelt::UtilEst::with_rules(crate::sched::pelt::UtilEstRules::for_kernel(self.machine.kernel));
        task
    }

    pub(crate) fn spawn(&mut self, spec: TaskSpec) {
        let id = self.sched.tasks.len();
        let mut task = self.new_task(id, spec.name, spec.program, spec.start_ns);
        self.uclamp_requested(spec.attrs.uclamp_min, spec.attrs.uclamp_max);
        // A run ends when its benchmark's tasks have all exited: kernel threads never do.
        if !spec.attrs.background {
            self.sched.live_tasks += 1;
        }
        self.sched.any_rt |= !matches!(spec.attrs.policy, SchedPolicy::Normal);
        task.attrs = spec.attrs;
        self.sched.tasks.push(task);
        if spec.start_ns <= self.q.now() {
            self.timer_wake(id);
        } else {
            self.q.push(spec.start_ns, Event::TimerWake { task: id as u32, token: 0 });
        }
    }

    /// A sleeping task's timer fired (or a new task starts).
    pub(crate) fn timer_wake(&mut self, task: usize) {
        if self.sched.tasks[task].placed {
            self.wake_task(task, Waker::Timer, UpdateFlags::default());
        } else {
            self.start_task(task);
        }
    }

    /// A new task: fork balancing picks its CPU, its util starts from the destination's spare
    /// capacity (post_init_entity_util_avg), and it is enqueued.
    fn start_task(&mut self, task: usize) {
        // A child forks on its parent's CPU; a workload's first tasks on CPU 0.
        let cpu = self.select_fork_cpu(task, self.sched.tasks[task].cpu);
        self.update_cpu_pelt(cpu);
        let (rq_util, rq_load) = (self.sched.cpus[cpu].avg.util_avg, self.sched.cpus[cpu].avg.load_avg);
        let util =
            initial_task_util(self.machine.plat.cpus[cpu].cap_orig, rq_util, rq_load, self.sched.tasks[task].weight);
        let pelt_now = self.cpu_pelt_now(cpu);
        let t = &mut self.sched.tasks[task];
        t.placed = true;
        t.cpu = cpu;
        // wake_up_new_task: the first CPU is the one a wake-up's search remembers.
        t.recent_used_cpu = Some(cpu);
        t.avg.last_update_time = pelt_now;
        t.avg.set_util(util);
        t.avg.load_avg = t.weight;
        // wake_up_new_task attaches the new task's util, runnable and load.
        attach_task_avg(&mut self.sched.cpus[cpu].avg, &self.sched.tasks[task].avg);
        self.sched.cpus[cpu].util_changed = true;
        // wake_up_new_task enqueues from the parent's CPU.
        let source = self.sched.tasks[task].parent.map_or(cpu, |p| self.sched.tasks[p].cpu);
        let flags = UpdateFlags { remote: self.remote_enqueue(source, cpu), ..UpdateFlags::default() };
        self.enqueue(task, cpu, fair::Join::Fork, flags);
    }

    /// Wake a sleeping task on behalf of `waker` (try_to_wake_up). A pending timer of the task
    /// is cancelled.
    pub(crate) fn wake_task(&mut self, task: usize, waker: Waker, flags: UpdateFlags) {
        let t = &mut self.sched.tasks[task];
        if t.state != TaskState::Sleeping {
            return;
        }
        t.timer_token = t.timer_token.wrapping_add(1);
        let prev = t.cpu;
        if self.run.timeline.is_some() {
            self.trace_waking(task, prev, waker);
        }
        if self.sched.tasks[task].delayed {
            // Still queued where it blocked (EEVDF's delayed dequeue): ttwu_runnable wakes it
            // there, with no placement, unless that CPU is no longer one it may use.
            if self.sched.cpus[prev].curr.is_some() && self.allowed(task, prev) {
                self.fair_requeue_delayed(prev, task);
                let source = waker.placement_source().map_or(prev, |(w, _)| w);
                let flags = UpdateFlags { remote: self.remote_enqueue(source, prev), ..flags };
                self.enqueue(task, prev, fair::Join::Requeue, flags);
                return;
            }
            self.fair_finish_delayed(prev, task);
        }
        let waker = waker.placement_source();
        // Energy-aware placement while not overutilized (asymmetric platforms), else the usual.
        let (cpu, why) = match self.find_energy_efficient_cpu(task) {
            Some(cpu) => (cpu, "eas"),
            None => (self.select_wake_cpu(task, waker), "wakeup"),
        };
        self.note_migration(task, prev, cpu, why);
        if self.sched.hetero.asym && cpu != prev {
            self.deepen_idle(prev);
        }
        // The waker's CPU enqueues the task (for an I/O completion, the CPU the device
        // interrupted; `io_complete`); a timer fires where the task slept.
        let source = waker.map_or(prev, |(w, _)| w);
        let flags = UpdateFlags { remote: self.remote_enqueue(source, cpu), ..flags };
        self.halted_vcpu_ipi(source, cpu);
        self.enqueue(task, cpu, fair::Join::Wake, flags);
    }

    /// A wake-up from `source` onto another CPU that sits in a halting idle state reaches it by
    /// IPI (try_to_wake_up: ttwu_queue_wakelist's IPI, or resched_curr's to a remote idle CPU;
    /// a polling idle state takes the wake-up without one). In a virtual machine whose
    /// preset gives its cost (`vcpu_wake`), the waker's CPU spends the send, and the target
    /// runs the task only after the host has run the vCPU again and the guest has left idle.
    fn halted_vcpu_ipi(&mut self, source: usize, cpu: usize) {
        let Some(cost) = self.machine.plat.file.vcpu_wake else { return };
        let halted = self.sched.cpus[cpu].idle_power.is_some_and(|p| p != crate::hw::platform::IdlePower::Polling);
        if source == cpu || !halted {
            return;
        }
        self.sched.cpus[cpu].vcpu_wake_ns = Some((cost.ipi_ns(), cost.resume_ns()));
        let send_ns = cost.send_ns();
        let Some(waker) = self.sched.cpus[source].curr.filter(|_| send_ns > 0) else { return };
        // The task current on the waker's CPU is held for the send. One amid its run (an
        // interrupt's wake-up) is credited its work so far and goes on after the send; one
        // between its program's operations goes on to the next after it.
        let amid_run = self.sched.tasks[waker].work_left > 0.0;
        if amid_run {
            self.account_segment(source);
        }
        let until = self.q.now() + send_ns;
        let c = &mut self.sched.cpus[source];
        c.halt_until = c.halt_until.max(until);
        c.ipi_send_until = c.ipi_send_until.max(until);
        if amid_run {
            self.start_segment(source);
        }
    }

    /// sched_waking: logged on the waker's CPU, in its context, with the task current there.
    fn trace_waking(&mut self, task: usize, prev: usize, waker: Waker) {
        let (cpu, context) = waker.logged_on(prev);
        let current = self.sched.cpus[cpu].curr;
        if let Some(tl) = self.run.timeline.as_mut() {
            tl.waking(self.q.now(), cpu, task, prev, current, context);
        }
    }

    /// Whether an enqueue on `cpu` done by `source` reaches the governor from outside the
    /// CPU's policy. Within an LLC the source takes the run-queue lock and enqueues itself;
    /// across LLCs the wake-up is queued to the target by IPI (TTWU_QUEUE) and enqueued there.
    fn remote_enqueue(&self, source: usize, cpu: usize) -> bool {
        let (s, t) = (&self.machine.plat.cpus[source], &self.machine.plat.cpus[cpu]);
        s.policy != t.policy && s.llc == t.llc
    }

    /// Every CPU id, for a search of the whole machine.
    pub(crate) fn all_cpus(&self) -> &[usize] {
        &self.machine.every_cpu
    }

    /// An idle core (all SMT threads idle) among `cpus` that `task` may use, scanning from
    /// `start`.
    pub(crate) fn find_idle_core(&self, task: usize, cpus: &[usize], start: usize) -> Option<usize> {
        // The counts are exact (debug builds check them), so a loaded machine skips the scan.
        debug_assert_eq!(
            self.sched.idle_cores,
            self.machine.plat.cores.iter().filter(|k| k.cpus.iter().all(|&c| self.cpu_is_idle(c))).count()
        );
        if self.sched.idle_cores == 0 {
            return None;
        }
        scan_from(cpus, start).find(|&c| {
            self.allowed(task, c)
                && self.machine.plat.cores[self.machine.plat.cpus[c].core].cpus.iter().all(|&s| self.cpu_is_idle(s))
        })
    }

    /// An idle CPU among `cpus` that `task` may use, scanning from `start`.
    pub(crate) fn find_idle_cpu(&self, task: usize, cpus: &[usize], start: usize) -> Option<usize> {
        debug_assert_eq!(self.sched.idle_cpus, (0..self.sched.cpus.len()).filter(|&c| self.cpu_is_idle(c)).count());
        if self.sched.idle_cpus == 0 {
            return None;
        }
        scan_from(cpus, start).find(|&c| self.allowed(task, c) && self.cpu_is_idle(c))
    }

    /// Wake-up placement (select_task_rq_fair's fast path, `sched/wake_affine.rs`): with a
    /// waker on another CPU, wake_affine chooses the target between the waker's CPU and the
    /// previous one; select_idle_sibling then looks for an idle CPU near it. On an asymmetric
    /// platform a CFS task's wake-up follows the kernel's capacity rule of the time
    /// ([`AsymWakeup`]).
    fn select_wake_cpu(&mut self, task: usize, waker: Option<(usize, bool)>) -> usize {
        if let Some((w, _)) = waker {
            self.record_wakee(w, task);
        }
        let ok = |c: usize| self.allowed(task, c);
        let prev = self.sched.tasks[task].cpu;
        let asym_cfs = self.sched.hetero.asym && self.rt_prio(task).is_none();
        if asym_cfs && self.sched.hetero.asym_wakeup == AsymWakeup::WakeCap {
            // select_task_rq_fair: no wake_affine for a task that does not fit; the slow path
            // (find_idlest_cpu from the waking CPU, as fork balancing does) places it.
            let this_cpu = waker.map_or(prev, |(w, _)| w);
            if self.wake_cap(task, this_cpu, prev) {
                return self.select_fork_cpu(task, this_cpu);
            }
        }
        let target = match waker {
            Some((w, sync)) if ok(w) && w != prev && !self.wake_wide(w, task) => self.wake_affine(task, w, prev, sync),
            _ => prev,
        };
        if !ok(target) {
            return self.select_fork_cpu(task, prev);
        }
        if asym_cfs && self.sched.hetero.asym_wakeup == AsymWakeup::SelectIdleCapacity {
            return self.select_idle_sibling_asym(task, prev, target);
        }
        self.select_idle_sibling(task, prev, target)
    }

    /// Put a woken task on `cpu`'s run-queue (moving its PELT contribution if it changed CPU),
    /// run it if the CPU is idle, else check whether it preempts the current task.
    fn enqueue(&mut self, task: usize, cpu: usize, join: fair::Join, flags: UpdateFlags) {
        let prev = self.sched.tasks[task].cpu;
        if prev != cpu {
            // Decay the task to now on its old CPU, detach it there, attach it here.
            self.update_cpu_pelt(prev);
            self.update_task_pelt(task, false, false);
            detach_task_avg(&mut self.sched.cpus[prev].avg, &self.sched.tasks[task].avg);
            self.sched.cpus[prev].util_changed = true;
            self.update_cpu_pelt(cpu);
            let pelt_now = self.cpu_pelt_now(cpu);
            self.sched.tasks[task].avg.last_update_time = pelt_now;
            attach_task_avg(&mut self.sched.cpus[cpu].avg, &self.sched.tasks[task].avg);
            self.sched.cpus[cpu].util_changed = true;
            self.sched.tasks[task].cpu = cpu;
        } else {
            self.update_cpu_pelt(cpu);
            self.update_task_pelt(task, false, false);
        }
        if self.sched.eevdf.is_some() {
            if join != fair::Join::Requeue && self.rt_prio(task).is_none() {
                self.fair_place(task, cpu, join);
            }
        } else {
            // Sleeper credit: a waking task may be up to half a latency period ahead.
            let floor = self.sched.cpus[cpu].min_vruntime.saturating_sub(self.sched_latency_ns() / 2);
            let t = &mut self.sched.tasks[task];
            t.vruntime = if prev == cpu { t.vruntime.max(floor) } else { floor };
        }
        let t = &mut self.sched.tasks[task];
        t.state = TaskState::Runnable;
        // A wake-up queued on an idle CPU's wake list is enqueued, and logged, there when the
        // IPI arrives (ttwu_queue_cond: for an idle CPU sharing the LLC since 6.0, when the
        // WF_ON_CPU condition went; before, the waker enqueued it at once).
        let queued_ns = match self.sched.cpus[cpu].vcpu_wake_ns {
            Some((ipi_ns, _)) if self.machine.kernel >= crate::kernel::KernelVersion(6, 0) => ipi_ns,
            _ => 0,
        };
        if let Some(tl) = self.run.timeline.as_mut() {
            tl.wakeup(self.q.now() + queued_ns, task, cpu);
        }
        self.sched.cpus[cpu].util_est_sum += self.sched.tasks[task].util_est.value();
        self.rq_attach(task, cpu);
        if self.sched.cpus[cpu].curr.is_none() {
            self.set_curr(cpu, task);
        } else {
            self.sched.cpus[cpu].vcpu_wake_ns = None;
            self.queue_push(cpu, task);
            self.sched.waiting += 1;
            let curr = self.sched.cpus[cpu].curr.expect("a current task");
            match (self.rt_prio(task), self.rt_prio(curr)) {
                // An RT task preempts CFS and lower RT priorities at once.
                (Some(_), None) => self.preempt(cpu, Some(task)),
                (Some(p), Some(q)) if p > q => self.preempt(cpu, Some(task)),
                (None, None) => self.check_preempt_wakeup(cpu, task),
                _ => {}
            }
        }
        self.check_overutilized(cpu);
        if flags.remote && !remote_callbacks(self.machine.kernel) {
            return;
        }
        if self.rt_prio(task).is_some() {
            // enqueue_top_rt_rq calls the governor every time.
            self.cpufreq_update_util(cpu, flags);
        } else {
            self.cfs_util_change(cpu, flags);
        }
    }

    /// CFS's governor callback: the scheduler calls cpufreq_update_util from CFS only when
    /// the root cfs_rq's util changed (`cfs_rq_util_change` after a PELT update that crossed
    /// a period boundary, or a task's util attaching or leaving), so a CPU that switches
    /// tasks many times a millisecond is evaluated about once per 1024-µs period. An enqueued
    /// task that waited on I/O gets its own callback with the iowait flag, whatever changed.
    pub(crate) fn cfs_util_change(&mut self, cpu: usize, flags: UpdateFlags) {
        let changed = std::mem::take(&mut self.sched.cpus[cpu].util_changed);
        if changed || flags.iowait {
            self.cpufreq_update_util(cpu, flags);
        }
    }

    fn check_preempt_wakeup(&mut self, cpu: usize, task: usize) {
        if self.sched.eevdf.is_some() {
            return self.fair_check_preempt_wakeup(cpu, task);
        }
        let curr = self.sched.cpus[cpu].curr.expect("a current task");
        self.update_curr(cpu);
        let gran = WAKEUP_GRANULARITY_NS * tunable_factor(self.sched.cpus.len());
        if self.sched.tasks[task].vruntime + gran < self.sched.tasks[curr].vruntime {
            self.preempt(cpu, Some(task));
        }
    }

    // -----------------------------------------------------------------------------------------
    // Running, switching, blocking
    // -----------------------------------------------------------------------------------------

    /// Charge the current task's runtime since it last was accounted.
    pub(crate) fn update_curr(&mut self, cpu: usize) {
        let now = self.q.now();
        let Some(curr) = self.sched.cpus[cpu].curr else { return };
        self.account_segment(cpu);
        let t = &mut self.sched.tasks[curr];
        let delta = now - t.exec_start_ns;
        t.vruntime += delta;
        t.sum_exec_ns += delta;
        t.exec_start_ns = now;
        if delta > 0 && self.sched.eevdf.is_some() && self.rt_prio(curr).is_none() {
            self.fair_update_curr(cpu, curr);
        }
        let queued_min = self.queued_min_vruntime(cpu);
        let v = queued_min.map_or(self.sched.tasks[curr].vruntime, |m| m.min(self.sched.tasks[curr].vruntime));
        self.sched.cpus[cpu].min_vruntime = self.sched.cpus[cpu].min_vruntime.max(v);
    }

    /// Switch from the current task to `next` (or the best waiting one), keeping the current
    /// one runnable in the queue.
    fn preempt(&mut self, cpu: usize, next: Option<usize>) {
        let curr = self.sched.cpus[cpu].curr.expect("a current task");
        self.update_curr(cpu);
        self.update_cpu_pelt(cpu);
        self.update_task_pelt(curr, true, true);
        let next = match next {
            Some(next) => next,
            // EEVDF: the running task competes in the pick, and may win it.
            None if self.sched.eevdf.is_some() && self.rt_prio(curr).is_none() => match self.fair_repick(cpu) {
                Some(next) => next,
                None => return,
            },
            None => self.best_queued(cpu),
        };
        self.queue_remove(cpu, next);
        self.queue_push(cpu, curr);
        let c = &mut self.sched.cpus[cpu];
        c.curr = None;
        c.switched_out = Some((curr, 'R'));
        c.seg_token = c.seg_token.wrapping_add(1);
        self.set_curr(cpu, next);
    }

    /// The task to run next on `cpu`, whose task left it: [`Sim::best_queued`], or with EEVDF
    /// the highest RT priority, else the fair pick (which lets delayed tasks go).
    fn pick_queued(&mut self, cpu: usize) -> Option<usize> {
        if self.sched.eevdf.is_none() || self.sched.cpus[cpu].queue.iter().any(|&t| self.rt_prio(t).is_some()) {
            return (!self.sched.cpus[cpu].queue.is_empty()).then(|| self.best_queued(cpu));
        }
        self.fair_pick(cpu, false)
    }

    /// The task to run next from the queue: the highest RT priority (first queued among
    /// equals), else the smallest vruntime.
    fn best_queued(&self, cpu: usize) -> usize {
        let q = &self.sched.cpus[cpu].queue;
        let rt = if self.sched.any_rt {
            q.iter().copied().filter_map(|t| self.rt_prio(t).map(|p| (p, t))).rev().max_by_key(|&(p, _)| p)
        } else {
            None
        };
        match rt {
            Some((_, t)) => t,
            None => self.sched.cpus[cpu].queue_by_vruntime.first().expect("a queued task").1,
        }
    }

    /// When `cpu`, idle in `state`, can run again if it is woken now. The hardware's state is
    /// the core's, the shallowest its threads asked for (a core C-state "is determined by the
    /// lowest numerical thread state", Intel's datasheets): a thread whose sibling is running,
    /// or still waking, finds the core up and waits at most for the sibling's exit to end;
    /// otherwise it pays the exit latency of the shallowest state among the core's idle
    /// threads, itself included: the measured one while the package is awake, where the preset
    /// gives it, else the table's.
    fn core_ready_at(&self, cpu: usize, state: usize) -> TimeNs {
        let now = self.q.now();
        let siblings = self.machine.plat.cores[self.machine.plat.cpus[cpu].core].cpus.iter().filter(|&&c| c != cpu);
        let mut core_state = state;
        let mut awake_until = None;
        for &sib in siblings {
            match self.sched.cpus[sib].idle_state {
                Some(s) => core_state = core_state.min(s),
                None => awake_until = Some(awake_until.unwrap_or(now).max(self.sched.cpus[sib].stall_until)),
            }
        }
        // The package sleeps only when every core is power-gated (its uncore has no level).
        let package_awake = self.hw.packages[self.machine.plat.cpus[cpu].package].uncore_level.is_some();
        match awake_until {
            Some(t) => t.max(now),
            None => now + self.machine.plat.cluster_of_cpu(cpu).idle_states[core_state].hardware_exit_ns(package_awake),
        }
    }

    /// Make `task` the running task of `cpu`, waking the CPU from idle if needed, and run it.
    pub(crate) fn set_curr(&mut self, cpu: usize, task: usize) {
        if self.switch_in(cpu, task) {
            self.run_program(cpu);
        }
    }

    /// Make `task` the running task of `cpu`, waking the CPU from idle if needed. Returns
    /// whether its program is to be interpreted now (the caller does it); otherwise a run
    /// segment was started.
    #[must_use]
    fn switch_in(&mut self, cpu: usize, task: usize) -> bool {
        let now = self.q.now();
        if self.sched.cpus[cpu].curr.is_none() {
            self.update_cpu_pelt(cpu);
        }
        self.update_task_pelt(task, true, false);
        if let Some(state) = self.sched.cpus[cpu].idle_state {
            let slept = now - self.sched.cpus[cpu].idle_since;
            self.hw.idle_governor.reflect(cpu, slept);
            self.sched.cpus[cpu].avg_idle_ns = next_avg_idle(self.sched.cpus[cpu].avg_idle_ns, slept);
            self.account_busy_idle(cpu);
            self.sync_counters(cpu);
            // A halted vCPU woken by IPI first waits for the host to run it, then leaves idle.
            let (ipi_ns, resume_ns) = self.sched.cpus[cpu].vcpu_wake_ns.take().unwrap_or((0, 0));
            let ready_at = self.core_ready_at(cpu, state) + ipi_ns + resume_ns;
            self.set_idle_state(cpu, None);
            self.sched.cpus[cpu].stall_until = ready_at;
            let core = self.machine.plat.cpus[cpu].core;
            self.hw.cores[core].busy_threads += 1;
            self.core_changed(core, cpu);
            self.arm_tick(cpu);
            if let Some(tl) = self.run.timeline.as_mut() {
                tl.hold_until(cpu, ready_at);
                tl.idle(now, cpu, "C0");
            }
        }
        let c = &mut self.sched.cpus[cpu];
        c.curr = Some(task);
        let prev = c.switched_out.take();
        self.fair_set_next(cpu, task);
        self.count_placement_idle(cpu);
        if let Some(tl) = self.run.timeline.as_mut() {
            tl.switch(now, cpu, prev.map(|p| p.0), prev.map_or('I', |p| p.1), Some(task));
        }
        let t = &mut self.sched.tasks[task];
        t.exec_start_ns = now;
        t.slice_start_exec_ns = t.sum_exec_ns;
        // A CPU still leaving its idle state runs nothing, not even instant operations: an
        // empty segment ends when it is ready, and the program goes on from there.
        if t.work_left > 0.0 || self.sched.cpus[cpu].stall_until.max(self.sched.cpus[cpu].halt_until) > now {
            self.start_segment(cpu);
            return false;
        }
        true
    }

    /// The current task finished its run segment.
    pub(crate) fn segment_end(&mut self, cpu: usize) {
        self.account_segment(cpu);
        let task = self.sched.cpus[cpu].curr.expect("a current task");
        let t = &mut self.sched.tasks[task];
        // What floating-point rounding left over is done too: the end time was rounded up.
        t.work_done += t.work_left;
        t.work_left = 0.0;
        self.run_program(cpu);
    }

    /// Take the current task off the CPU to sleep, until `wake_at` or until woken.
    fn sleep_curr(&mut self, cpu: usize, wake_at: Option<u64>) {
        self.put_to_sleep(cpu, wake_at);
        self.pick_next(cpu);
    }

    /// Put the current task to sleep and switch `cpu` to what runs next. Returns whether the
    /// next task's program is to run now.
    fn block_and_switch(&mut self, cpu: usize, wake_at: Option<u64>) -> bool {
        self.put_to_sleep(cpu, wake_at);
        self.switch_next(cpu)
    }

    /// Make the current task exit and switch `cpu` to what runs next, leaving the rest of the
    /// exit on `unfinished`. Returns whether the next task's program is to run now.
    fn exit_and_switch(&mut self, cpu: usize, unfinished: &mut Vec<Unfinished>) -> bool {
        unfinished.push(self.put_to_exit(cpu));
        // The CPU moves on first, so that the parent woken after finds it in a settled state.
        self.switch_next(cpu)
    }

    /// What is left of an exit once the CPU has moved on.
    fn finish_switch(&mut self, left: Unfinished) {
        self.notify_parent(left.cpu, left.task);
    }

    /// The governor callback of a dequeue that takes `task` off `cpu` (sleep or exit). In
    /// `__schedule` the dequeue (`deactivate_task` → `dequeue_task`) runs before the CPU picks
    /// its next task and, finding none, switches to the idle task, whose idle loop is what
    /// counts an idle call (`tick_nohz_idle_stop_tick`, kernel/time/tick-sched.c). So the
    /// governor sees the CPU as still busy at a sleep: schedutil's busy hold
    /// (`sugov_cpu_is_busy`) applies to it.
    fn dequeue_callback(&mut self, cpu: usize, task: usize) {
        if self.rt_prio(task).is_some() {
            // dequeue_top_rt_rq calls the governor every time.
            self.cpufreq_update_util(cpu, UpdateFlags::default());
        } else {
            // dequeue_entity's PELT update (cfs_rq_util_change when the util changed).
            self.cfs_util_change(cpu, UpdateFlags::default());
        }
    }

    /// The first part of a sleep: the task leaves `cpu`, with its timer armed, and the
    /// dequeue's governor callback runs.
    fn put_to_sleep(&mut self, cpu: usize, wake_at: Option<u64>) {
        let task = self.dequeue_curr(cpu);
        if self.sched.eevdf.is_some() {
            self.fair_block(cpu, task);
        }
        let cap = self.machine.plat.cpus[cpu].cap_orig;
        let t = &mut self.sched.tasks[task];
        t.util_est.on_sleep(t.avg.util_avg, t.avg.runnable_avg, cap);
        t.state = TaskState::Sleeping;
        t.timer_token = t.timer_token.wrapping_add(1);
        if let Some(at) = wake_at {
            let token = t.timer_token;
            self.q.push(at, Event::TimerWake { task: task as u32, token });
            self.sched.cpus[cpu].timers.push(std::cmp::Reverse(at));
        }
        self.dequeue_callback(cpu, task);
    }

    /// The first part of an exit: the task leaves `cpu` for good.
    fn put_to_exit(&mut self, cpu: usize) -> Unfinished {
        let task = self.dequeue_curr(cpu);
        detach_task_avg(&mut self.sched.cpus[cpu].avg, &self.sched.tasks[task].avg);
        self.sched.cpus[cpu].util_changed = true;
        self.sched.tasks[task].state = TaskState::Exited;
        self.sched.cpus[cpu].switched_out = Some((task, 'X'));
        if let Some(tl) = self.run.timeline.as_mut() {
            tl.process(self.q.now(), cpu, 'X', task, None);
        }
        self.sched.live_tasks -= 1;
        // exit_notify makes the task a zombie before its last switch: a parent that runs next
        // and calls wait4 reaps it without sleeping.
        if let Some(parent) = self.sched.tasks[task].parent {
            self.sched.tasks[parent].live_children -= 1;
        }
        // do_task_dead's __schedule dequeues the exiting task, before the switch, like a sleep.
        self.dequeue_callback(cpu, task);
        Unfinished { cpu, task }
    }

    /// The parent sleeping in wait4 is woken by its last child's exit (SIGCHLD, not sync).
    fn notify_parent(&mut self, cpu: usize, task: usize) {
        if let Some(parent) = self.sched.tasks[task].parent {
            let p = &mut self.sched.tasks[parent];
            if p.live_children == 0 && p.waiting_children {
                p.waiting_children = false;
                self.wake_task(parent, Waker::Task { cpu, sync: false }, UpdateFlags::default());
            }
        }
    }

    /// Remove the current task from `cpu` (settling its runtime and PELT).
    fn dequeue_curr(&mut self, cpu: usize) -> usize {
        let task = self.sched.cpus[cpu].curr.expect("a current task");
        self.update_curr(cpu);
        self.update_cpu_pelt(cpu);
        self.update_task_pelt(task, true, true);
        self.rq_detach(task, cpu);
        let ue = self.sched.tasks[task].util_est.value();
        self.uclamp_dequeued(task, cpu);
        let c = &mut self.sched.cpus[cpu];
        c.util_est_sum -= c.util_est_sum.min(ue);
        c.curr = None;
        c.switched_out = Some((task, 'S'));
        c.seg_token = c.seg_token.wrapping_add(1);
        self.count_placement_idle(cpu);
        task
    }

    /// Run the next waiting task, or pull one from a busy CPU, or go idle.
    pub(crate) fn pick_next(&mut self, cpu: usize) {
        if self.switch_next(cpu) {
            self.run_program(cpu);
        }
    }

    /// Switch `cpu` to the next waiting task, or one pulled from a busy CPU, or go idle.
    /// Returns whether the new task's program is to be interpreted now (the caller does it).
    #[must_use]
    fn switch_next(&mut self, cpu: usize) -> bool {
        debug_assert!(self.sched.cpus[cpu].curr.is_none(), "pick_next on a busy CPU");
        if let Some(next) = self.pick_queued(cpu) {
            self.queue_remove(cpu, next);
            self.sched.waiting -= 1;
            return self.switch_in(cpu, next);
        }
        // With EAS, balancing waits until the system is overutilized. A CPU that is idle only
        // briefly, on average, does not balance on going idle (idle_balance).
        if self.sched.cpus[cpu].avg_idle_ns >= MIGRATION_COST_NS && self.load_balance_allowed() {
            if let Some((src, task)) = self.find_busiest(cpu) {
                self.queue_remove(src, task);
                self.sched.waiting -= 1;
                self.note_migration(task, src, cpu, "pull");
                self.migrate_queued(task, src, cpu);
                return self.switch_in(cpu, task);
            }
            if self.pull_misfit(cpu) {
                return false;
            }
        }
        self.go_idle(cpu);
        false
    }

    /// New-idle balancing: the CPU with the most waiting tasks that may move, nearest first
    /// (LLC, package, machine). Cache-hot tasks stay: new-idle balancing never overrides that.
    fn find_busiest(&self, cpu: usize) -> Option<(usize, usize)> {
        if self.sched.waiting == 0 {
            return None;
        }
        let t = &self.machine.plat.cpus[cpu];
        let now = self.q.now();
        // The first waiting task of `src` that may run on `cpu` and has not run recently.
        let movable = |src: usize| {
            self.sched.cpus[src]
                .queue
                .iter()
                .copied()
                .find(|&task| self.allowed(task, cpu) && !self.cache_hot(task, now))
        };
        let busiest = |cpus: &mut dyn Iterator<Item = usize>| {
            cpus.filter(|&c| c != cpu && movable(c).is_some())
                .max_by_key(|&c| (self.sched.cpus[c].queue.len(), std::cmp::Reverse(c)))
                .map(|c| (c, movable(c).expect("checked")))
        };
        busiest(&mut self.machine.plat.llcs[t.llc].iter().copied())
            .or_else(|| busiest(&mut self.machine.plat.packages[t.package].cpus.iter().copied()))
            .or_else(|| busiest(&mut (0..self.sched.cpus.len())))
    }

    /// task_hot: the task ran less than the migration cost ago, so its cache is still warm.
    fn cache_hot(&self, task: usize, now: u64) -> bool {
        let t = &self.sched.tasks[task];
        t.placed && now.saturating_sub(t.exec_start_ns) < MIGRATION_COST_NS
    }

    /// Move a waiting (not running) task between run-queues.
    pub(crate) fn migrate_queued(&mut self, task: usize, src: usize, dst: usize) {
        self.update_cpu_pelt(src);
        self.update_task_pelt(task, true, false);
        let ue = self.sched.tasks[task].util_est.value();
        self.uclamp_dequeued(task, src);
        let s = &mut self.sched.cpus[src];
        detach_task_avg(&mut s.avg, &self.sched.tasks[task].avg);
        s.util_changed = true;
        s.util_est_sum -= s.util_est_sum.min(ue);
        let src_min = s.min_vruntime;
        self.update_cpu_pelt(dst);
        let pelt_now = self.cpu_pelt_now(dst);
        let d = &mut self.sched.cpus[dst];
        attach_task_avg(&mut d.avg, &self.sched.tasks[task].avg);
        d.util_changed = true;
        d.util_est_sum += ue;
        self.rq_detach(task, src);
        if self.sched.eevdf.is_some() {
            self.fair_migrate(task, src, dst);
        } else {
            let t = &mut self.sched.tasks[task];
            t.vruntime = t.vruntime.saturating_sub(src_min) + self.sched.cpus[dst].min_vruntime;
        }
        let t = &mut self.sched.tasks[task];
        t.avg.last_update_time = pelt_now;
        t.cpu = dst;
        self.rq_attach(task, dst);
    }

    fn go_idle(&mut self, cpu: usize) {
        let now = self.q.now();
        self.update_cpu_pelt(cpu);
        // A CPU saturated until now would have had no idle time at full capacity: the gap
        // between its task clock and its slower PELT clock is dropped (update_idle_rq_clock_pelt).
        let saturated = ((LOAD_AVG_MAX - 1024) << 10) - LOAD_AVG_MAX;
        let c = &mut self.sched.cpus[cpu];
        if c.avg.util_sum >= saturated {
            c.lost_idle += c.clock_task - c.clock_pelt;
        }
        c.clock_pelt = c.clock_task;
        self.account_busy_idle(cpu);
        self.sync_counters(cpu);
        let choice = self.select_idle_state(cpu);
        let state = choice.state;
        self.set_idle_state(cpu, Some(state));
        let c = &mut self.sched.cpus[cpu];
        // Every idle entry is an idle call, as before 4.17; see docs/model.md for why the
        // later rule (only idle periods that stop the tick) is not simulated.
        c.idle_calls += 1;
        c.tick_token = c.tick_token.wrapping_add(1);
        c.tick_armed = false;
        // A shallow state chosen on a short history is left at the retained tick that makes
        // the idle governor give up on it; the tick handler finds the CPU idle and deepens it.
        if let Some(at) = choice.reconsider_at {
            let token = c.tick_token;
            self.q.push(at, Event::Tick { cpu: cpu as u32, token });
        }
        c.stall_until = 0;
        let core = self.machine.plat.cpus[cpu].core;
        self.hw.cores[core].busy_threads -= 1;
        self.core_changed(core, cpu);
        let prev = self.sched.cpus[cpu].switched_out.take();
        if let Some(tl) = self.run.timeline.as_mut() {
            // The switch to the idle task comes first; the idle task then enters the state
            // (do_idle → cpuidle_idle_call, kernel/sched/idle.c, traces cpu_idle).
            tl.switch(now, cpu, prev.map(|p| p.0), prev.map_or('I', |p| p.1), None);
            let name = &self.machine.plat.cluster_of_cpu(cpu).idle_states[state].name;
            tl.idle(now, cpu, name);
        }
    }

    /// The idle governor's choice for `cpu` going idle now (cpuidle_select; `hw/cpuidle/`).
    fn select_idle_state(&mut self, cpu: usize) -> IdleChoice {
        let next_timer = self.next_timer(cpu);
        let plat = &self.machine.plat;
        let inputs = IdleInputs {
            now: self.q.now(),
            next_timer,
            nr_iowait: self.sched.cpus[cpu].nr_iowait,
            kernel: self.machine.kernel,
            tick_ns: self.machine.tick_ns,
            states: &plat.cluster_of_cpu(cpu).idle_states,
            timing: plat.idle_timing_of_cpu(cpu),
        };
        self.hw.idle_governor.select(cpu, &inputs)
    }

    /// The soonest wake-up timer of a task that slept on `cpu` (menu's "next timer event").
    fn next_timer(&mut self, cpu: usize) -> Option<TimeNs> {
        let now = self.q.now();
        let c = &mut self.sched.cpus[cpu];
        while c.timers.peek().is_some_and(|&std::cmp::Reverse(t)| t <= now) {
            c.timers.pop();
        }
        c.timers.peek().map(|&std::cmp::Reverse(t)| t)
    }

    /// An idle CPU that no longer trusts its short idle history (a retained tick found it
    /// still asleep, or its task was placed elsewhere) goes to the deepest state its own
    /// timers allow.
    pub(crate) fn deepen_idle(&mut self, cpu: usize) {
        let Some(old) = self.sched.cpus[cpu].idle_state else { return };
        let now = self.q.now();
        let until_timer = self.next_timer(cpu).map_or(u64::MAX, |t| t - now);
        let deepest = deepest_within(self.machine.plat.idle_timing_of_cpu(cpu), until_timer);
        if deepest <= old {
            return;
        }
        self.account_busy_idle(cpu);
        self.set_idle_state(cpu, Some(deepest));
        self.core_changed(self.machine.plat.cpus[cpu].core, cpu);
        if let Some(tl) = self.run.timeline.as_mut() {
            tl.idle(now, cpu, &self.machine.plat.cluster_of_cpu(cpu).idle_states[deepest].name);
        }
    }

    /// Busy and per-state idle time of `cpu` up to now.
    pub(crate) fn account_busy_idle(&mut self, cpu: usize) {
        let now = self.q.now();
        let c = &mut self.sched.cpus[cpu];
        c.account_iowait(now);
        match c.idle_state {
            None => c.busy_ns += now - c.idle_since,
            Some(s) => c.idle_ns[s] += now - c.idle_since,
        }
        c.idle_since = now;
    }

    // -----------------------------------------------------------------------------------------
    // The tick
    // -----------------------------------------------------------------------------------------

    fn arm_tick(&mut self, cpu: usize) {
        if self.sched.cpus[cpu].tick_armed {
            return;
        }
        let now = self.q.now();
        let next = (now / self.machine.tick_ns + 1) * self.machine.tick_ns;
        let c = &mut self.sched.cpus[cpu];
        c.tick_armed = true;
        c.tick_token = c.tick_token.wrapping_add(1);
        let token = c.tick_token;
        self.q.push(next, Event::Tick { cpu: cpu as u32, token });
    }

    /// Scheduler tick of a busy CPU: counters and invariance, PELT, the governor hook, slice
    /// expiry, and a push of waiting work to idle CPUs.
    pub(crate) fn tick(&mut self, cpu: usize) {
        let Some(curr) = self.sched.cpus[cpu].curr else {
            self.sched.cpus[cpu].tick_armed = false;
            self.deepen_idle(cpu);
            return;
        };
        if self.x86_counters() {
            self.sync_counters(cpu);
            let c = &mut self.hw.counters[cpu];
            let acnt = (c.aperf - c.tick_aperf) as u64;
            let mcnt = (c.mperf - c.tick_mperf) as u64;
            c.tick_aperf = c.aperf;
            c.tick_mperf = c.mperf;
            if self.sched.invariant && mcnt > 0 {
                let ratio = self.machine.freq_ratio[self.machine.plat.cpus[cpu].cluster];
                match crate::hw::invariance::scale_from_counters(acnt, mcnt, ratio) {
                    Some(s) => self.sched.cpus[cpu].freq_scale = s,
                    None => self.disable_invariance(),
                }
            }
        }
        self.update_curr(cpu);
        self.update_cpu_pelt(cpu);
        self.update_task_pelt(curr, true, true);
        if self.rt_prio(curr).is_some() {
            self.cpufreq_update_util(cpu, UpdateFlags::default());
        } else {
            // entity_tick's PELT update: a tick is 1–10 periods, so it nearly always counts.
            self.cfs_util_change(cpu, UpdateFlags::default());
        }

        let nr = self.nr_running(cpu);
        if nr > 1 {
            let t = &self.sched.tasks[curr];
            let ran = t.sum_exec_ns - t.slice_start_exec_ns;
            let expired = match t.attrs.policy {
                // EEVDF: update_curr above renewed a deadline reached, asking to reschedule.
                SchedPolicy::Normal if self.sched.eevdf.is_some() => self.sched.cpus[cpu].resched,
                SchedPolicy::Normal => {
                    ran >= (self.sched_latency_ns() / nr)
                        .max(MIN_GRANULARITY_NS * tunable_factor(self.sched.cpus.len()))
                }
                // Round-robin among equal RT priorities; FIFO runs until it blocks.
                SchedPolicy::Rr(p) => {
                    ran >= RR_TIMESLICE_NS && self.sched.cpus[cpu].queue.iter().any(|&q| self.rt_prio(q) == Some(p))
                }
                SchedPolicy::Fifo(_) => false,
            };
            if expired {
                self.preempt(cpu, None);
            }
            if self.load_balance_allowed() {
                self.push_to_idle(cpu);
            }
        } else if nr == 1 && self.load_balance_allowed() {
            self.spread_smt(cpu);
            self.spread_numa(cpu);
        }
        self.update_idle_cpu_scan(cpu);
        self.capacity_tick(cpu);
        let c = &mut self.sched.cpus[cpu];
        c.tick_armed = false;
        if c.curr.is_some() {
            self.arm_tick(cpu);
        }
    }

    /// Move one waiting task of `cpu` to an idle CPU it may use, nearest first (NOHZ idle
    /// balancing). A cache-hot task stays; one that has waited longer than the migration cost
    /// is cold by then.
    fn push_to_idle(&mut self, cpu: usize) {
        // A loaded machine has nowhere to push: skip the walk over the queue.
        if self.sched.idle_cpus == 0 {
            return;
        }
        let t = &self.machine.plat.cpus[cpu];
        let (llc, pkg) = (&self.machine.plat.llcs[t.llc], &self.machine.plat.packages[t.package].cpus);
        let now = self.q.now();
        let mut cold = self.sched.cpus[cpu].queue.iter().copied().filter(|&task| !self.cache_hot(task, now));
        let found = cold.find_map(|task| {
            self.find_idle_core(task, llc, cpu)
                .or_else(|| self.find_idle_cpu(task, llc, cpu))
                .or_else(|| self.find_idle_core(task, pkg, cpu))
                .or_else(|| self.find_idle_cpu(task, pkg, cpu))
                .or_else(|| self.find_idle_cpu(task, self.all_cpus(), cpu))
                .map(|dst| (task, dst))
        });
        if let Some((task, dst)) = found {
            self.note_migration(task, cpu, dst, "push");
            self.queue_remove(cpu, task);
            self.sched.waiting -= 1;
            self.migrate_queued(task, cpu, dst);
            self.set_curr(dst, task);
        }
    }

    /// A core whose SMT threads are all running while a whole core is idle gives one of its
    /// tasks to the idle core, nearest first: the balancer's preference for spreading over
    /// siblings (a group running more tasks than an idle one plus one counts as overloaded).
    /// Linux can only move a running task by active balance, which it tries once balancing
    /// has failed on the imbalance more often than the domain's cache-nice tries allow; an
    /// attempt that finds a sibling idle, or no task it may move, resets the count. The
    /// attempts follow the cache-sharing domain's interval (see [`SpreadAttempts`]); the task
    /// is the one the simulated kernel version's balancer takes ([`Sim::spread_source`]).
    fn spread_smt(&mut self, cpu: usize) {
        let now = self.q.now();
        if now < self.sched.cpus[cpu].spread.next_ns {
            return;
        }
        let t = &self.machine.plat.cpus[cpu];
        let llc = &self.machine.plat.llcs[t.llc];
        // With no idle core there is no destination, which counts as a balanced domain.
        let src = if self.sched.idle_cores == 0 { None } else { self.spread_source(cpu) };
        let task = src.and_then(|s| self.sched.cpus[s].curr);
        let dst = task.zip(src).and_then(|(task, src)| {
            self.find_idle_core(task, llc, src)
                .or_else(|| self.find_idle_core(task, &self.machine.plat.packages[t.package].cpus, src))
                .or_else(|| self.find_idle_core(task, self.all_cpus(), src))
        });
        let interval_ns = llc.len() as u64 * 1_000_000;
        let attempts = &mut self.sched.cpus[cpu].spread;
        let (Some(src), Some(task), Some(dst)) = (src, task, dst) else {
            *attempts = SpreadAttempts { failed: 0, next_ns: now + interval_ns };
            return;
        };
        attempts.failed += 1;
        if attempts.failed <= SpreadAttempts::FAILURES_BEFORE_ACTIVE {
            // A failed balance doubles the interval, up to twice the domain's minimum.
            attempts.next_ns = now + 2 * interval_ns;
            return;
        }
        *attempts = SpreadAttempts { failed: 0, next_ns: now + interval_ns };
        self.note_migration(task, src, dst, "spread");
        self.migrate_running(src, dst);
    }

    /// The sibling of `cpu` whose running task the balancer would move to an idle core, if the
    /// core is overloaded (every SMT thread running); the idle core has the same capacity as
    /// this one and no runnable load.
    fn spread_source(&self, cpu: usize) -> Option<usize> {
        let core = &self.machine.plat.cores[self.machine.plat.cpus[cpu].core].cpus;
        if core.len() < 2 || core.iter().any(|&s| self.cpu_is_idle(s)) {
            return None;
        }
        let core_cap = core.iter().map(|&c| self.machine.plat.cpus[c].cap_orig).sum::<u64>();
        self.active_balance_source(core, &self.machine.plat.llcs[self.machine.plat.cpus[cpu].llc], (core_cap, 0))
    }

    /// The CPU of group `busiest` whose running task active balancing moves to a group with
    /// `local` = (capacity, runnable load), within `domain`. Since 5.5 the balancer moves a
    /// number of tasks, from the first run-queue with the most of them: the group's first busy
    /// CPU. Before, the busiest run-queue was the one with the highest runnable load, skipping
    /// a lone task whose load exceeds the imbalance: the load the busiest group has above the
    /// domain's average, at most what the local group may take below it (in load per capacity,
    /// times capacity), raised to the group's load per task when smaller (fix_small_imbalance).
    /// A saturated task next to a lighter one then stays and the lighter one moves.
    pub(crate) fn active_balance_source(
        &self,
        busiest: &[usize],
        domain: &[usize],
        (local_cap, local_load): (u64, u64),
    ) -> Option<usize> {
        let movable = |s: &usize| self.sched.cpus[*s].curr.is_some_and(|t| self.rt_prio(t).is_none());
        if self.machine.kernel >= crate::kernel::KernelVersion(5, 5) {
            return busiest.iter().copied().find(movable);
        }
        let capacity = |cpus: &[usize]| cpus.iter().map(|&c| self.machine.plat.cpus[c].cap_orig).sum::<u64>().max(1);
        let load = |cpus: &[usize]| cpus.iter().map(|&c| self.runnable_load(c)).sum::<u64>();
        let (busy_cap, busy_load) = (capacity(busiest), load(busiest));
        let domain_avg = load(domain) * SCHED_CAPACITY_SCALE / capacity(domain);
        let busiest_avg = busy_load * SCHED_CAPACITY_SCALE / busy_cap;
        let local_avg = local_load * SCHED_CAPACITY_SCALE / local_cap.max(1);
        let imbalance = (busiest_avg.saturating_sub(domain_avg) * busy_cap)
            .min(domain_avg.saturating_sub(local_avg) * local_cap)
            / SCHED_CAPACITY_SCALE;
        let running = busiest.iter().filter(|&&c| !self.cpu_is_idle(c)).count().max(1);
        let imbalance = imbalance.max(busy_load / running as u64);
        busiest
            .iter()
            .copied()
            .filter(movable)
            .filter(|&s| self.runnable_load(s) <= imbalance)
            .max_by_key(|&s| (self.runnable_load(s), s))
    }

    /// Out-of-range counter ratios switch invariance off for good, as the kernel does.
    fn disable_invariance(&mut self) {
        self.sched.invariant = false;
        for c in self.sched.cpus.iter_mut() {
            c.freq_scale = 1024;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scheduler built alone from a machine: no task, every CPU idle in its deepest state
    /// and counted idle, for the machine and in each LLC.
    #[test]
    fn the_scheduler_starts_with_every_cpu_idle_in_its_deepest_state() {
        use crate::sched::capacity::{EasInputs, FitsRule, Hetero};
        let m = crate::governor::core::test_machine("epyc7742-2s", "schedutil");
        let eas = EasInputs { knob_on: false, governor_enables_eas: true, invariant: m.invariant, kernel: m.kernel };
        let sched = Sched::new(&m, Hetero::new(&m.plat, &m.tables, FitsRule::Margin80, eas, false));
        assert!(sched.tasks.is_empty());
        assert_eq!((sched.idle_cpus, sched.idle_cores), (m.plat.ncpus(), m.plat.cores.len()));
        for (cpu, c) in sched.cpus.iter().enumerate() {
            let deepest = m.plat.cluster_of_cpu(cpu).idle_states.len() - 1;
            assert_eq!((c.curr, c.idle_state, c.placement_idle), (None, Some(deepest), true));
            assert_eq!(c.freq_scale, SCHED_CAPACITY_SCALE);
        }
        let per_llc: usize = sched.llc_idle.iter().map(|l| l.cpus).sum();
        assert_eq!(per_llc, m.plat.ncpus());
        assert_eq!(sched.llc_idle.len(), m.plat.llcs.len());
    }

    /// util_est_update's rules are the simulated kernel's: every task the workload spawns (and
    /// every child it forks) samples by them.
    #[test]
    fn tasks_estimate_utilisation_by_the_kernels_rules() {
        use crate::sched::pelt::UtilEstForm;
        let json = include_str!("../../../../python/dvfslab/data/platforms/skylake-e3-1240v5.json");
        for (kernel, form) in
            [("5.4", UtilEstForm::EwmaOnly), ("5.9", UtilEstForm::FastUp), ("6.8", UtilEstForm::Single)]
        {
            let cfg = crate::SimConfig {
                governor: format!("schedutil:kernel={kernel}"),
                workload: "periodic:threads=3".into(),
                duration_ns: Some(1_000_000),
                ..crate::SimConfig::default()
            };
            let mut sim = Sim::new(crate::Platform::from_json(json, "skylake").unwrap(), &cfg).unwrap();
            for p in 0..sim.cpufreq.policies.len() {
                sim.with_governor(p, |g, ctx| g.start(ctx));
            }
            for spec in sim.work.workload.tasks(&sim.machine.plat) {
                sim.spawn(spec);
            }
            assert_eq!(sim.sched.tasks.len(), 3);
            assert!(sim.sched.tasks.iter().all(|t| t.util_est.rules.form == form), "kernel {kernel}");
        }
    }

    #[test]
    fn scans_start_at_the_given_cpu_and_wrap_around_once() {
        let llc = [4, 5, 6, 7];
        assert_eq!(scan_from(&llc, 6).collect::<Vec<_>>(), [6, 7, 4, 5]);
        assert_eq!(scan_from(&llc, 4).collect::<Vec<_>>(), [4, 5, 6, 7]);
        // A start outside the list scans it from its first CPU.
        assert_eq!(scan_from(&llc, 9).collect::<Vec<_>>(), [4, 5, 6, 7]);
        assert_eq!(scan_from(&[], 0).count(), 0);
    }

    #[test]
    fn avg_idle_follows_idle_periods_with_weight_one_eighth_and_a_cap() {
        // From the initial 1 ms, one 100 µs idle period: 1000 − 900/8 = 887.5 µs.
        assert_eq!(next_avg_idle(AVG_IDLE_MAX_NS, 100_000), 887_500);
        // Idle periods of 100 µs bring it under the migration cost after seven of them
        // (1000 − 900·(1 − (7/8)^k) < 500 from k = 7): new-idle balancing then stops.
        let mut avg = AVG_IDLE_MAX_NS;
        let mut periods = 0;
        while avg >= MIGRATION_COST_NS {
            avg = next_avg_idle(avg, 100_000);
            periods += 1;
        }
        assert_eq!(periods, 7);
        // A long idle period raises it again, but never above twice the migration cost.
        assert_eq!(next_avg_idle(avg, 1_000_000_000), AVG_IDLE_MAX_NS);
    }
}
