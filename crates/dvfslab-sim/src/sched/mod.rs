//! The CFS-like scheduler and the CPU-level PELT signals: task placement at fork and wake-up,
//! fair time slices, preemption, new-idle and tick-time balancing, idle entry through the idle
//! governor (`hw/cpuidle/`), and the run-queue PELT clock with frequency and capacity
//! invariance. `Sched` holds this state and its own methods; the sequences that also reach
//! the hardware or cpufreq (enqueue, switches, the tick, wake-up) are `Sim` methods in sim/,
//! and the task programs' interpreter is sim/interpret.rs.
//!
//! Simplifications (see docs/model.md): all tasks have nice 0; vruntime is re-based on the
//! destination's min_vruntime when a task moves; load balancing moves a waiting task only to
//! an idle CPU (new-idle pull and a tick-time push that stands for NOHZ idle balancing), and a
//! running one only off a core whose SMT threads are all kept busy, to a wholly idle core, or
//! off a NUMA node running more tasks than another (numa_balance.rs). Fork placement is in
//! fork_balance.rs.

pub mod capacity;
pub(crate) mod eevdf;
pub mod energy_model;
mod fork_balance;
pub(crate) mod message_cpus;
mod misfit;
pub(crate) mod newidle;
pub(crate) mod numa_balance;
pub(crate) mod objects;
pub mod pelt;
pub(crate) mod pipe;
pub mod task;
pub(crate) mod tcp_stream;
pub(crate) mod unix_stream;
pub(crate) mod wake_affine;
pub mod waker;

use crate::engine::EventQueue;
use crate::engine::{Event, TimeNs};
use crate::hw::platform::IdlePower;
use crate::machine::Machine;
use crate::sched::pelt::{SchedAvg, PELT_MIN_DIVIDER, SCHED_CAPACITY_SCALE};
use crate::sched::task::Op;
use crate::workload::SchedPolicy;

mod cpu;
pub(crate) mod fair;
pub(crate) mod group;
pub(crate) mod load_balance;
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
    /// The root domain's overload flag (`rd->overload`, `rd->overloaded` from 6.10), which
    /// gates new-idle balancing: set when a CPU's run-queue reaches two tasks
    /// (add_nr_running), refreshed only by a balance of the top domain (update_sd_lb_stats:
    /// a CPU with more than one task, or a misfit task on asymmetric CPUs). Between balances
    /// it can stay set after the queue that set it has emptied.
    pub(crate) rd_overloaded: bool,
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
    /// Task groups (`sched/group.rs`): the workload's tasks each in their session's group, as
    /// autogroup puts them; kernel threads stay at the root.
    pub(crate) groups: bool,
    /// Each task group's tasks (by group index), those that left it or exited among them until
    /// a reading of the group's load drops them (`Sched::group_load_avg`).
    pub(crate) group_members: Vec<Vec<usize>>,
    /// The PELT clock's shift (10, less the PELT multiplier's): `Machine::pelt_shift`, kept
    /// here to decay a sleeping task's averages to now (`Sched::task_avg_now`).
    pub(crate) pelt_shift: u32,
    /// Per LLC, how many CPUs a wake-up's idle search may visit (SIS_UTIL, 6.0+).
    pub(crate) llc_scan: Vec<wake_affine::IdleScan>,
    /// The scheduler's own random stream (`sched_rng`): new-idle balancing's lottery.
    pub(crate) rng: rand_pcg::Pcg64,
    /// With a timeline, update_curr's charges not yet in it (`Run::timeline` moves them there
    /// in order before any later event).
    pub(crate) charges: Option<Vec<Charge>>,
    /// The CPU whose code accounts a run-queue's task while it is not that run-queue's own: a
    /// waker that enqueues a task on another CPU (try_to_wake_up), where the charge is logged.
    pub(crate) accounting_cpu: Option<usize>,
}

/// One accounting of a running fair task (update_curr), for the timeline's sched_stat_runtime:
/// `cpu` is the CPU that logs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Charge {
    pub time: TimeNs,
    pub cpu: usize,
    pub task: usize,
    pub ns: u64,
}

impl Sched {
    /// The scheduler at the start of a run: no task, every CPU idle in its deepest state.
    pub(crate) fn new(machine: &crate::machine::Machine, hetero: crate::sched::capacity::Hetero, seed: u64) -> Sched {
        let plat = &machine.plat;
        let ncpus = plat.ncpus();
        let eevdf = crate::sched::eevdf::Rules::for_kernel(machine.kernel, ncpus, machine.tick_ns);
        let origin = if eevdf.is_some() { crate::sched::eevdf::VRUNTIME_ORIGIN } else { 0 };
        let cpus = (0..ncpus)
            .map(|c| Cpu {
                curr: None,
                queue: Vec::new(),
                queue_by_vruntime: std::collections::BTreeSet::new(),
                queued_count: 0,
                runnable_load: 0,
                min_vruntime: origin,
                root: Default::default(),
                groups: Vec::new(),
                root_curr_group: None,
                root_next_buddy: None,
                resched: false,
                switches: 0,
                resched_ipi: None,
                remote_resched_at: None,
                in_loopback_send: false,
                clock_skip_from: None,
                skipped_to_next_ns: 0,
                avg: SchedAvg::default(),
                util_est_sum: 0,
                clock_pelt: 0,
                clock_task: 0,
                lost_idle: 0,
                removed: Removed::default(),
                freq_scale: SCHED_CAPACITY_SCALE,
                seg_token: 0,
                seg_start: 0,
                seg_rate: 0.0,
                stall_until: 0,
                stall_charged_from: 0,
                halt_until: 0,
                vcpu_wake_ns: None,
                vcpu_ipi_until: 0,
                ipi_send_until: 0,
                stall_pelt_end: 0,
                tick_token: 0,
                tick_armed: false,
                idle_state: Some(plat.cluster_of_cpu(c).idle_states.len().saturating_sub(1)),
                idle_power: plat.cluster_of_cpu(c).idle_states.last().map(|s| s.power),
                idle_since: 0,
                idle_entered: 0,
                avg_idle_ns: crate::sched::AVG_IDLE_MAX_NS,
                newidle: Default::default(),
                util_changed: false,
                nr_iowait: 0,
                iowait_ns: 0,
                iowait_mark: 0,
                spread: Default::default(),
                push: Default::default(),
                balance: Default::default(),
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
            rd_overloaded: false,
            any_rt: false,
            idle_cpus: plat.ncpus(),
            idle_cores: plat.cores.len(),
            llc_idle: LlcIdle::all_idle(plat),
            llc_scan: wake_affine::IdleScan::all(&plat.llcs),
            rng: rand::SeedableRng::seed_from_u64(seed),
            hetero,
            eevdf,
            groups: false,
            group_members: Vec::new(),
            pelt_shift: machine.pelt_shift,
            charges: None,
            accounting_cpu: None,
        }
    }
}

/// Scheduler tunables scale with log2 of the CPU count, capped at 8 CPUs (the kernel's
/// default `SCHED_TUNABLESCALING_LOG`).
pub(crate) fn tunable_factor(ncpus: usize) -> u64 {
    1 + (ncpus.clamp(1, 8) as u64).ilog2() as u64
}
const SCHED_LATENCY_NS: u64 = 6_000_000;
pub(crate) const MIN_GRANULARITY_NS: u64 = 750_000;
pub(crate) const WAKEUP_GRANULARITY_NS: u64 = 1_000_000;
/// sysctl_sched_migration_cost: a task that ran this recently is cache-hot and stays where it
/// is, and before 5.16 a CPU whose idle periods average less than this does not look for work
/// when it goes idle (new-idle balancing would cost more than the idle time it fills;
/// `sched/newidle.rs`).
pub(crate) const MIGRATION_COST_NS: u64 = 500_000;
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
    /// sd->cache_nice_tries of the cache-sharing domain (sd_init): past this many failed
    /// attempts, can_migrate_task moves a cache-hot task too.
    pub(crate) const CACHE_NICE_TRIES: u32 = 1;
    /// need_active_balance's threshold: past cache_nice_tries + 2 failures, the running task.
    pub(crate) const FAILURES_BEFORE_ACTIVE: u32 = Self::CACHE_NICE_TRIES + 2;
}

/// rq->avg_idle starts at, and is capped to, twice the migration cost.
pub(crate) const AVG_IDLE_MAX_NS: u64 = 2 * MIGRATION_COST_NS;
/// rq->avg_idle after an idle period of `sample_ns` (update_avg in ttwu_do_wakeup):
/// avg += (sample − avg) / 8, capped at [`AVG_IDLE_MAX_NS`].
pub(crate) fn next_avg_idle(avg_ns: u64, sample_ns: u64) -> u64 {
    let avg = avg_ns as i64 + (sample_ns as i64 - avg_ns as i64) / 8;
    (avg.max(0) as u64).min(AVG_IDLE_MAX_NS)
}
/// SCHED_RR time slice (RR_TIMESLICE, 100 ms).
pub(crate) const RR_TIMESLICE_NS: u64 = 100_000_000;
/// Steps a program may take without running, blocking or exiting before it is declared stuck.
pub(crate) const MAX_INSTANT_STEPS: usize = 10_000;
/// Programs interpreted within programs (see [`Sim::run_program`]) at most: a bound on the
/// stack whatever the workload, far above what wake-up chains reach in practice.
pub(crate) const MAX_PROGRAM_NESTING: u32 = 64;
/// A forked task's name is its parent's with its id appended while the parent's is shorter
/// than this (see `Sim::child_name`).
const MAX_INHERITED_NAME_LEN: usize = 48;

/// Whether the scheduler calls the governor of a CPU another CPU enqueued a task on. Before
/// 4.14 it called only the running CPU's own hook (`cfs_rq_util_change` in fair.c checked
/// that the cfs_rq was `this_rq()`'s); remote callbacks came with "sched: cpufreq: Allow
/// remote cpufreq callbacks" (4.14).
pub(crate) fn remote_callbacks(kernel: crate::kernel::KernelVersion) -> bool {
    kernel >= crate::kernel::KernelVersion(4, 14, 0)
}

/// Averages that leave a run-queue at its next PELT update (`cfs_rq->removed`): a task that
/// died there (task_dead_fair) is taken off by remove_entity_load_avg only when
/// update_cfs_rq_load_avg next runs for the run-queue, so until then the CPU's load and
/// utilisation still count it. A fork balanced right after a child's exit on its parent's CPU
/// sees that CPU as busy as it was. A CPU that goes idle has them taken off at once (see
/// `Sim::go_idle`). The kernel does the same for a task a wake-up moves elsewhere
/// (migrate_task_rq_fair); the model takes that one off at once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Removed {
    /// The averages to take off (only `util_avg`, `runnable_avg` and `load_avg` are used).
    pub avg: SchedAvg,
    /// When the first of them was left here: an update at that same instant (the switch that
    /// follows a death, before finish_task_switch registers it) does not take them yet.
    pub since: Option<TimeNs>,
}

impl Removed {
    pub(crate) fn add(&mut self, now: TimeNs, se: &SchedAvg) {
        self.avg.util_avg += se.util_avg;
        self.avg.runnable_avg += se.runnable_avg;
        self.avg.load_avg += se.load_avg;
        self.since.get_or_insert(now);
    }

    /// The averages due to leave at an update at `now`, if any (and none left pending).
    pub(crate) fn take_due(&mut self, now: TimeNs) -> Option<SchedAvg> {
        match self.since {
            Some(since) if now > since => Some(std::mem::take(self).avg),
            _ => None,
        }
    }

    /// Every pending average, due or not (an update after the switch that registered them).
    pub(crate) fn take(&mut self) -> Option<SchedAvg> {
        self.since.is_some().then(|| std::mem::take(self).avg)
    }
}

/// Take a task's averages `se` off its run-queue's `rq` (detach_entity_load_avg, and the
/// removal of remove_entity_load_avg when it is applied; fair.c): util, runnable and load all
/// leave, each sum by the task's average times the run-queue's divider, floored at the
/// remaining average times PELT_MIN_DIVIDER as the kernel does, so that sum and average stay
/// consistent.
pub(crate) fn detach_task_avg(rq: &mut SchedAvg, se: &SchedAvg) {
    rq.remove_util(se.util_avg);
    let div = rq.divider();
    rq.runnable_avg = rq.runnable_avg.saturating_sub(se.runnable_avg);
    rq.runnable_sum = rq.runnable_sum.saturating_sub(se.runnable_avg * div).max(rq.runnable_avg * PELT_MIN_DIVIDER);
    rq.load_avg = rq.load_avg.saturating_sub(se.load_avg);
    rq.load_sum = rq.load_sum.saturating_sub(se.load_avg * div).max(rq.load_avg * PELT_MIN_DIVIDER);
}

/// Add a task's averages `se` to the run-queue's `rq` it joins (attach_entity_load_avg,
/// fair.c): util, runnable and load, each sum as the average times the run-queue's divider.
pub(crate) fn attach_task_avg(rq: &mut SchedAvg, se: &SchedAvg) {
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

impl Sched {
    pub(crate) fn sched_latency_ns(&self) -> u64 {
        SCHED_LATENCY_NS * tunable_factor(self.cpus.len())
    }

    /// sched_slice before 6.6: the running fair task `curr`'s share of the period in which each
    /// of the `nr` tasks runnable on `cpu` runs once (the latency, or `nr` minimum
    /// granularities past 8 tasks: __sched_period), in proportion to its weight among theirs,
    /// and no less than the minimum granularity.
    pub(crate) fn cfs_slice(&self, cpu: usize, curr: usize, nr: u64) -> u64 {
        let f = tunable_factor(self.cpus.len());
        let period = (SCHED_LATENCY_NS * f).max(nr * MIN_GRANULARITY_NS * f);
        let c = &self.cpus[cpu];
        let weights: u64 = c
            .curr
            .iter()
            .chain(c.queue.iter())
            .filter(|&&t| self.rt_prio(t).is_none())
            .map(|&t| self.tasks[t].weight())
            .sum();
        let share = (period as u128 * self.tasks[curr].weight() as u128 / weights.max(1) as u128) as u64;
        share.max(MIN_GRANULARITY_NS * f)
    }

    pub(crate) fn cpu_is_idle(&self, cpu: usize) -> bool {
        let c = &self.cpus[cpu];
        c.curr.is_none() && c.queue.is_empty()
    }

    /// Whether `task` may run on `cpu` (its affinity).
    pub(crate) fn allowed(&self, task: usize, cpu: usize) -> bool {
        self.tasks[task].attrs.affinity.as_ref().is_none_or(|cpus| cpus.contains(&cpu))
    }

    /// A task's scheduling policy.
    pub(crate) fn policy(&self, task: usize) -> SchedPolicy {
        self.tasks[task].attrs.policy
    }

    /// RT priority of a task (1..99), None for CFS.
    pub(crate) fn rt_prio(&self, task: usize) -> Option<u8> {
        if !self.any_rt {
            return None;
        }
        match self.tasks[task].attrs.policy {
            SchedPolicy::Normal | SchedPolicy::Batch | SchedPolicy::Idle => None,
            SchedPolicy::Fifo(p) | SchedPolicy::Rr(p) => Some(p),
        }
    }

    /// Whether an RT task is running or waiting on `cpu` (schedutil then asks for the maximum).
    pub(crate) fn rt_runnable(&self, cpu: usize) -> bool {
        let c = &self.cpus[cpu];
        c.curr.iter().chain(c.queue.iter()).any(|&t| self.rt_prio(t).is_some())
    }

    pub(crate) fn nr_running(&self, cpu: usize) -> u64 {
        self.cpus[cpu].curr.is_some() as u64 + self.cpus[cpu].queue.len() as u64
    }

    /// `rq->nr_running` as the kernel counts it: [`Sched::nr_running`] and, from 6.12, the
    /// tasks whose dequeue is delayed (dequeue_entities returns before sub_nr_running for a
    /// delayed task; its final dequeue at a pick subtracts it).
    pub(crate) fn rq_nr_running(&self, cpu: usize) -> u64 {
        self.nr_running(cpu) + self.delayed_tasks(cpu) as u64
    }

    pub(crate) fn cpu_pelt_now(&self, cpu: usize) -> u64 {
        let c = &self.cpus[cpu];
        c.clock_pelt - c.lost_idle
    }

    /// Update a task's own average on its CPU's PELT clock (call after update_cpu_pelt).
    pub(crate) fn update_task_pelt(&mut self, machine: &Machine, task: usize, runnable: bool, running: bool) {
        let cpu = self.tasks[task].cpu;
        let now = self.cpu_pelt_now(cpu);
        let waited_until = self.cpus[cpu].stall_pelt_end;
        let pelt = self.pelt_scale(machine, cpu);
        let t = &mut self.tasks[task];
        let load_before = t.avg.load_avg;
        if running && t.avg.last_update_time < waited_until && waited_until <= now {
            // The current task was woken only once its CPU had left its idle state.
            if t.avg.update(waited_until, 0, 0, false, t.weight(), machine.pelt_shift) {
                t.util_est.on_pelt_refresh();
            }
        }
        if t.avg.update_scaled(now, runnable as u64, runnable as u64, running, t.weight(), pelt) {
            t.util_est.on_pelt_refresh();
        }
        if t.on_rq {
            let rq = &mut self.cpus[cpu].runnable_load;
            *rq = *rq - load_before + t.avg.load_avg;
        }
    }

    /// `task` joins the run-queue of `cpu` (its CPU), current or waiting.
    pub(crate) fn rq_attach(&mut self, task: usize, cpu: usize) {
        let t = &mut self.tasks[task];
        debug_assert!(!t.on_rq && t.cpu == cpu);
        t.on_rq = true;
        self.cpus[cpu].runnable_load += t.avg.load_avg;
    }

    /// `task` leaves the run-queue of `cpu` (its CPU).
    pub(crate) fn rq_detach(&mut self, task: usize, cpu: usize) {
        let t = &mut self.tasks[task];
        debug_assert!(t.on_rq && t.cpu == cpu);
        t.on_rq = false;
        self.cpus[cpu].runnable_load -= t.avg.load_avg;
    }

    /// The smallest vruntime among the tasks waiting on `cpu`, if any.
    pub(crate) fn queued_min_vruntime(&mut self, cpu: usize) -> Option<u64> {
        self.cpus[cpu].queue_by_vruntime.first().map(|&(vruntime, _, _)| vruntime)
    }

    /// CFS utilisation as a governor reads it: max(util_avg, util_est) capped at capacity; an
    /// idle CPU's blocked average is decayed to now without changing the state.
    pub(crate) fn cpu_util_now(&self, machine: &Machine, q: &EventQueue, cpu: usize) -> u64 {
        let c = &self.cpus[cpu];
        self.cpu_util_avg_now(machine, q, cpu).max(c.util_est_sum).min(machine.plat.cpus[cpu].cap_orig)
    }

    /// The root cfs_rq util_avg of `cpu`, decayed to now if the CPU is idle.
    pub(crate) fn cpu_util_avg_now(&self, machine: &Machine, q: &EventQueue, cpu: usize) -> u64 {
        self.with_cpu_avg_now(machine, q, cpu, |avg| avg.util_avg)
    }

    /// `read` applied to the root cfs_rq average of `cpu`, with an idle CPU's blocked signals
    /// decayed to now (on a copy: the CPU's state is not changed).
    pub(crate) fn with_cpu_avg_now<R>(
        &self,
        machine: &Machine,
        q: &EventQueue,
        cpu: usize,
        read: impl Fn(&crate::sched::pelt::SchedAvg) -> R,
    ) -> R {
        let c = &self.cpus[cpu];
        if c.curr.is_some() {
            return read(&c.avg);
        }
        let mut avg = c.avg.clone();
        avg.update(q.now() - c.lost_idle, 0, 0, false, 1, machine.pelt_shift);
        read(&avg)
    }

    /// The task to run next from the queue: the highest RT priority (first queued among
    /// equals), else the smallest vruntime.
    pub(crate) fn best_queued(&self, cpu: usize) -> usize {
        let q = &self.cpus[cpu].queue;
        let rt = if self.any_rt {
            q.iter().copied().filter_map(|t| self.rt_prio(t).map(|p| (p, t))).rev().max_by_key(|&(p, _)| p)
        } else {
            None
        };
        match rt {
            Some((_, t)) => t,
            None => self.cpus[cpu].queue_by_vruntime.first().expect("a queued task").2,
        }
    }

    /// task_hot: the task ran less than the migration cost ago, so its cache is still warm.
    pub(crate) fn cache_hot(&self, task: usize, now: u64) -> bool {
        let t = &self.tasks[task];
        t.placed && now.saturating_sub(t.exec_start_ns) < MIGRATION_COST_NS
    }

    /// The soonest wake-up timer of a task that slept on `cpu` (menu's "next timer event").
    pub(crate) fn next_timer(&mut self, q: &EventQueue, cpu: usize) -> Option<TimeNs> {
        let now = q.now();
        let c = &mut self.cpus[cpu];
        while c.timers.peek().is_some_and(|&std::cmp::Reverse(t)| t <= now) {
            c.timers.pop();
        }
        c.timers.peek().map(|&std::cmp::Reverse(t)| t)
    }

    /// Busy and per-state idle time of `cpu` up to now.
    pub(crate) fn account_busy_idle(&mut self, q: &EventQueue, cpu: usize) {
        let now = q.now();
        let c = &mut self.cpus[cpu];
        c.account_iowait(now);
        match c.idle_state {
            None => c.busy_ns += now - c.idle_since,
            Some(s) => c.idle_ns[s] += now - c.idle_since,
        }
        c.idle_since = now;
    }

    pub(crate) fn arm_tick(&mut self, machine: &Machine, q: &mut EventQueue, cpu: usize) {
        if self.cpus[cpu].tick_armed {
            return;
        }
        let now = q.now();
        let next = (now / machine.tick_ns + 1) * machine.tick_ns;
        let c = &mut self.cpus[cpu];
        c.tick_armed = true;
        c.tick_token = c.tick_token.wrapping_add(1);
        let token = c.tick_token;
        q.push(next, Event::Tick { cpu: cpu as u32, token });
    }

    /// Out-of-range counter ratios switch invariance off for good, as the kernel does.
    pub(crate) fn disable_invariance(&mut self) {
        self.invariant = false;
        for c in self.cpus.iter_mut() {
            c.freq_scale = 1024;
        }
    }

    /// Credit the current task of `cpu` with the work done since its segment started.
    pub(crate) fn account_segment(&mut self, q: &EventQueue, cpu: usize) {
        let now = q.now();
        let Some(task) = self.cpus[cpu].curr else { return };
        let c = &mut self.cpus[cpu];
        let from = c.seg_start.max(c.stall_until).max(c.halt_until);
        if now > from {
            let t = &mut self.tasks[task];
            let done = ((now - from) as f64 * c.seg_rate).min(t.work_left);
            t.work_left -= done;
            t.work_done += done;
        }
        c.seg_start = now;
    }

    /// Add `task` to the tasks waiting on `cpu`.
    pub(crate) fn queue_push(&mut self, cpu: usize, task: usize) {
        let c = &mut self.cpus[cpu];
        c.queue.push(task);
        c.queued_count += 1;
        self.tasks[task].queued_order = c.queued_count;
        c.queue_by_vruntime.insert((self.tasks[task].vruntime, c.queued_count, task));
        if self.eevdf.is_some() {
            self.fair_enqueue(cpu, task);
        }
        // add_nr_running: a second task on the run-queue marks the root domain overloaded.
        if self.rq_nr_running(cpu) >= 2 {
            self.rd_overloaded = true;
        }
    }

    /// Take `task` out of the tasks waiting on `cpu`.
    pub(crate) fn queue_remove(&mut self, cpu: usize, task: usize) {
        let c = &mut self.cpus[cpu];
        c.queue.retain(|&t| t != task);
        let t = &self.tasks[task];
        let removed = c.queue_by_vruntime.remove(&(t.vruntime, t.queued_order, task));
        debug_assert!(removed, "a waiting task's vruntime changed");
        if self.eevdf.is_some() {
            self.fair_dequeue(cpu, task);
        }
    }

    /// Charge the current task's runtime since it last was accounted.
    pub(crate) fn update_curr(&mut self, q: &EventQueue, cpu: usize) {
        let now = q.now();
        let Some(curr) = self.cpus[cpu].curr else { return };
        self.account_segment(q, cpu);
        // The clock is updated now: a skip asked before it leaves uncharged only what follows.
        if let Some(from) = self.cpus[cpu].clock_skip_from.as_mut() {
            *from = (*from).max(now);
        }
        let t = &mut self.tasks[curr];
        if self.cpus[cpu].stall_until > now {
            // The CPU is still leaving idle: its idle task runs until the pick, and the task
            // to run is charged from the run-queue clock's last update before it (each
            // enqueue's; __schedule skips its own, wakeup_preempt's rq_clock_skip_update).
            t.exec_start_ns = t.exec_start_ns.max(now);
            return;
        }
        let delta = now - t.exec_start_ns;
        t.vruntime += eevdf::calc_delta_fair(delta, t.weight());
        t.sum_exec_ns += delta;
        t.exec_start_ns = now;
        if delta > 0 && self.rt_prio(curr).is_none() {
            if let Some(charges) = self.charges.as_mut() {
                charges.push(Charge { time: now, cpu: self.accounting_cpu.unwrap_or(cpu), task: curr, ns: delta });
            }
            if self.eevdf.is_some() {
                self.fair_update_curr(cpu, curr);
            }
        }
        let queued_min = self.queued_min_vruntime(cpu);
        let v = queued_min.map_or(self.tasks[curr].vruntime, |m| m.min(self.tasks[curr].vruntime));
        self.cpus[cpu].min_vruntime = self.cpus[cpu].min_vruntime.max(v);
    }

    /// Take back `ns` of the charge update_curr just made to `task`, before anything else is
    /// logged (a skipped clock update leaves it to the task switched in, `Sim::preempt`): its
    /// vruntime, its runtime, and the charge its sched_stat_runtime row shows (none when
    /// nothing is left, as the kernel logs no empty charge).
    pub(crate) fn uncharge(&mut self, task: usize, ns: u64) {
        let t = &mut self.tasks[task];
        t.vruntime = t.vruntime.saturating_sub(eevdf::calc_delta_fair(ns, t.weight()));
        t.sum_exec_ns = t.sum_exec_ns.saturating_sub(ns);
        let Some(charges) = self.charges.as_mut() else { return };
        if let Some(last) = charges.last_mut().filter(|c| c.task == task) {
            last.ns = last.ns.saturating_sub(ns);
            if last.ns == 0 {
                charges.pop();
            }
        }
    }

    /// The task to run next on `cpu`, whose task left it: [`Sim::best_queued`], or with EEVDF
    /// the highest RT priority, else the fair pick (which lets delayed tasks go).
    pub(crate) fn pick_queued(&mut self, q: &EventQueue, cpu: usize) -> Option<usize> {
        if self.eevdf.is_none() || self.cpus[cpu].queue.iter().any(|&t| self.rt_prio(t).is_some()) {
            return (!self.cpus[cpu].queue.is_empty()).then(|| self.best_queued(cpu));
        }
        self.fair_pick(q, cpu, false)
    }

    /// Whether a core counts as active for turbo: some thread awake (`cpu_awake`). A core
    /// that is not is power-gated, every thread in a power-gated state.
    pub(crate) fn core_awake(&self, machine: &Machine, core: usize) -> bool {
        machine.plat.cores[core].cpus.iter().any(|&c| self.cpu_awake(machine, c))
    }

    /// Whether `cpu` is awake, for P-state coordination and the turbo active-core count:
    /// running, or idle in a state that is not power-gated (C1, C1E).
    pub(crate) fn cpu_awake(&self, machine: &Machine, cpu: usize) -> bool {
        self.idle_power(machine, cpu) != Some(IdlePower::PowerGated)
    }

    /// How the idle state `cpu` is in powers it; None while it runs.
    pub(crate) fn idle_power(&self, machine: &Machine, cpu: usize) -> Option<IdlePower> {
        let c = &self.cpus[cpu];
        debug_assert_eq!(c.idle_power, c.idle_state.map(|s| machine.plat.cluster_of_cpu(cpu).idle_states[s].power));
        c.idle_power
    }

    /// Work the workload's own tasks have done so far (cycles at base frequency): background
    /// kernel threads' work is not the benchmark's.
    pub(crate) fn workload_work_done(&self) -> f64 {
        self.tasks.iter().filter(|t| !t.attrs.background).map(|t| t.work_done).sum()
    }

    /// A task whose util_est follows the simulated kernel's rules (util_est_update by version).
    pub(crate) fn new_task(
        &self,
        machine: &Machine,
        id: usize,
        name: String,
        program: std::rc::Rc<[Op]>,
        start_ns: u64,
    ) -> crate::sched::task::Task {
        let mut task = crate::sched::task::Task::new(id, name, program, start_ns);
        task.util_est =
            crate::sched::pelt::UtilEst::with_rules(crate::sched::pelt::UtilEstRules::for_kernel(machine.kernel));
        task
    }

    /// New-idle balancing: the CPU with the most waiting tasks that may move, nearest first
    /// (LLC, package, machine). Cache-hot tasks stay: new-idle balancing never overrides that.
    pub(crate) fn find_busiest(&self, machine: &Machine, q: &EventQueue, cpu: usize) -> Option<(usize, usize)> {
        if self.waiting == 0 {
            return None;
        }
        let t = &machine.plat.cpus[cpu];
        let now = q.now();
        // The first waiting task of `src` that may run on `cpu` and has not run recently.
        let movable = |src: usize| {
            self.cpus[src].queue.iter().copied().find(|&task| self.allowed(task, cpu) && !self.cache_hot(task, now))
        };
        let busiest = |cpus: &mut dyn Iterator<Item = usize>| {
            cpus.filter(|&c| c != cpu && movable(c).is_some())
                .max_by_key(|&c| (self.cpus[c].queue.len(), std::cmp::Reverse(c)))
                .map(|c| (c, movable(c).expect("checked")))
        };
        busiest(&mut machine.plat.llcs[t.llc].iter().copied())
            .or_else(|| busiest(&mut machine.plat.packages[t.package].cpus.iter().copied()))
            .or_else(|| busiest(&mut (0..self.cpus.len())))
    }

    /// Whether an enqueue on `cpu` done by `source` reaches the governor from outside the
    /// CPU's policy. Within an LLC the source takes the run-queue lock and enqueues itself;
    /// across LLCs the wake-up is queued to the target by IPI (TTWU_QUEUE) and enqueued there.
    pub(crate) fn remote_enqueue(&self, machine: &Machine, source: usize, cpu: usize) -> bool {
        let (s, t) = (&machine.plat.cpus[source], &machine.plat.cpus[cpu]);
        s.policy != t.policy && s.llc == t.llc
    }

    /// An idle core (all SMT threads idle) among `cpus` that `task` may use, scanning from
    /// `start`.
    pub(crate) fn find_idle_core(&self, machine: &Machine, task: usize, cpus: &[usize], start: usize) -> Option<usize> {
        // The counts are exact (debug builds check them), so a loaded machine skips the scan.
        debug_assert_eq!(
            self.idle_cores,
            machine.plat.cores.iter().filter(|k| k.cpus.iter().all(|&c| self.cpu_is_idle(c))).count()
        );
        if self.idle_cores == 0 {
            return None;
        }
        scan_from(cpus, start).find(|&c| {
            self.allowed(task, c)
                && machine.plat.cores[machine.plat.cpus[c].core].cpus.iter().all(|&s| self.cpu_is_idle(s))
        })
    }

    /// An idle CPU among `cpus` that `task` may use, scanning from `start`.
    pub(crate) fn find_idle_cpu(&self, task: usize, cpus: &[usize], start: usize) -> Option<usize> {
        debug_assert_eq!(self.idle_cpus, (0..self.cpus.len()).filter(|&c| self.cpu_is_idle(c)).count());
        if self.idle_cpus == 0 {
            return None;
        }
        scan_from(cpus, start).find(|&c| self.allowed(task, c) && self.cpu_is_idle(c))
    }

    /// The name of `parent`'s child `id`: the parent's name and the id ("make-3"), or, past a
    /// few generations, the workload task's name, an ellipsis and the id ("a-…-4096"), so that
    /// a long chain of forks does not grow its names with its length.
    pub(crate) fn child_name(&self, parent: usize, id: usize) -> String {
        let name = &self.tasks[parent].name;
        if name.len() < MAX_INHERITED_NAME_LEN {
            format!("{name}-{id}")
        } else {
            format!("{}-…-{id}", self.tasks[self.tasks[parent].root].name)
        }
    }

    /// Every CPU id, for a search of the whole machine.
    pub(crate) fn all_cpus<'m>(&self, machine: &'m Machine) -> &'m [usize] {
        &machine.every_cpu
    }

    /// The sibling of `cpu` whose running task the balancer would move to an idle core, if the
    /// core is overloaded (every SMT thread running); the idle core has the same capacity as
    /// this one and no runnable load.
    pub(crate) fn spread_source(&self, machine: &Machine, cpu: usize) -> Option<usize> {
        let core = &machine.plat.cores[machine.plat.cpus[cpu].core].cpus;
        if core.len() < 2 || core.iter().any(|&s| self.cpu_is_idle(s)) {
            return None;
        }
        let core_cap = core.iter().map(|&c| machine.plat.cpus[c].cap_orig).sum::<u64>();
        self.active_balance_source(machine, core, &machine.plat.llcs[machine.plat.cpus[cpu].llc], (core_cap, 0))
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
        machine: &Machine,
        busiest: &[usize],
        domain: &[usize],
        (local_cap, local_load): (u64, u64),
    ) -> Option<usize> {
        let movable = |s: &usize| self.cpus[*s].curr.is_some_and(|t| self.rt_prio(t).is_none());
        if machine.kernel >= crate::kernel::KernelVersion(5, 5, 0) {
            return busiest.iter().copied().find(movable);
        }
        let capacity = |cpus: &[usize]| cpus.iter().map(|&c| machine.plat.cpus[c].cap_orig).sum::<u64>().max(1);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::sim::Sim;

    /// The scheduler built alone from a machine: no task, every CPU idle in its deepest state
    /// and counted idle, for the machine and in each LLC.
    #[test]
    fn the_scheduler_starts_with_every_cpu_idle_in_its_deepest_state() {
        use crate::sched::capacity::{EasInputs, FitsRule, Hetero};
        let m = crate::governor::core::test_machine("epyc7742-2s", "schedutil");
        let eas = EasInputs { knob_on: false, governor_enables_eas: true, invariant: m.invariant, kernel: m.kernel };
        let sched = Sched::new(&m, Hetero::new(&m.plat, &m.tables, FitsRule::Margin80, eas, false), 0);
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

    #[test]
    fn a_removed_average_waits_for_an_update_after_the_instant_it_left() {
        let se = SchedAvg { util_avg: 600, runnable_avg: 700, load_avg: 900, ..SchedAvg::default() };
        let mut r = Removed::default();
        assert_eq!(r.take_due(5), None);
        r.add(10, &se);
        r.add(12, &se);
        // The switch at the instant of the death updates the run-queue before task_dead_fair
        // registers the removal: nothing leaves then.
        assert_eq!(r.take_due(10), None);
        let gone = r.take_due(11).expect("due after its instant");
        assert_eq!((gone.util_avg, gone.runnable_avg, gone.load_avg), (1200, 1400, 1800));
        assert_eq!(r.take_due(20), None);
        // An idle entry takes whatever is pending.
        r.add(30, &se);
        assert_eq!(r.take().map(|a| a.load_avg), Some(900));
        assert_eq!(r.take(), None);
    }
}
