//! Per logical CPU state: its run-queue and PELT signals, and (until they have a home in `hw/`)
//! its idle state, counters and statistics; and the idle counts per LLC that wake-up placement
//! reads.

use crate::engine::TimeNs;
use crate::hw::platform::Platform;
use crate::sched::pelt::SchedAvg;

/// Per logical CPU: run-queue, PELT, idle state, counters and statistics.
pub(crate) struct Cpu {
    pub curr: Option<usize>,
    /// Tasks waiting to run (not the current one).
    pub queue: Vec<usize>,
    /// The waiting tasks by (vruntime, order queued, id), CFS's rbtree: a queued task's
    /// vruntime does not change while it waits, so the next task and the smallest vruntime cost
    /// O(log n), not a scan of `queue` (thousands of tasks woken at once on one CPU). Equal
    /// vruntimes keep the order the tasks were queued in, as the kernel's tree puts an equal key
    /// after those already there (rb_add_cached): woken sleepers placed at one floor run in the
    /// order they woke.
    pub queue_by_vruntime: std::collections::BTreeSet<(u64, u64, usize)>,
    /// Tasks queued here so far: the order `queue_by_vruntime` breaks ties by.
    pub queued_count: u64,
    /// Σ load_avg of the current and waiting tasks, kept as they come, go and update
    /// (`Sim::runnable_load`).
    pub runnable_load: u64,
    pub min_vruntime: u64,
    /// EEVDF (6.6+): the root run-queue's waiting entities, and those whose dequeue is
    /// delayed, by deadline with their load sums (`sched/fair.rs`): every fair task here
    /// without task groups; with them (`sched/group.rs`) the tasks outside every group and
    /// the groups' entities.
    pub root: crate::sched::eevdf::Queue,
    /// Each task group's share of this CPU, by the group's index: its entity at the root and
    /// its own run-queue.
    pub groups: Vec<crate::sched::group::GroupRq>,
    /// The group whose entity is the root's running one (the root's cfs_rq->curr): a task of
    /// it was switched in last here, and nothing else since (it stays so after its last task
    /// blocks, until another entity is set, as the kernel's curr does).
    pub root_curr_group: Option<usize>,
    /// The group whose entity is the root's next buddy (its cfs_rq->next): a task of it slept
    /// while others of it stay (PICK_BUDDY).
    pub root_next_buddy: Option<usize>,
    /// The running task's accounting asked for a reschedule (update_curr's resched_curr).
    pub resched: bool,
    /// Tasks switched in so far: what a reschedule IPI on its way was sent for.
    pub switches: u32,
    /// A reschedule asked for and not yet taken: an IPI on its way here, or the running task's
    /// own loopback send not yet back at user mode, for the task current when it was asked,
    /// with the woken task that asked for it if one did (`Sim::resched_curr`): the
    /// need_resched flag it set is that task's, so a switch drops it.
    pub resched_ipi: Option<Option<usize>>,
    /// When that reschedule came from another CPU, when its IPI arrives: its need_resched
    /// flag is already set on the running task, which stops at its next return to user mode
    /// if that comes first, held until then (`Sim::interpret`).
    pub remote_resched_at: Option<TimeNs>,
    /// The running task's own loopback send is waking a task (`Op::Loopback`): a preemption it
    /// asks for waits for the send's return to user mode.
    pub in_loopback_send: bool,
    /// A preempting wake-up asked the run-queue's clock to skip its next update
    /// (rq_clock_skip_update in wakeup_preempt): the switch that follows charges the running
    /// task only up to this time, the clock's last update, and the task switched in from it.
    pub clock_skip_from: Option<TimeNs>,
    /// What that skip left uncharged, ns: the task switched in starts its execution clock
    /// that much before the switch (set_next_entity stamps exec_start with the clock the
    /// skip left behind), so its first accounting charges it, not the switch.
    pub skipped_to_next_ns: u64,
    /// Root cfs_rq PELT signal and the sum of enqueued tasks' util_est.
    pub avg: SchedAvg,
    pub util_est_sum: u64,
    /// The root cfs_rq's util changed since CFS last called the governor: a PELT period
    /// boundary was crossed, or a task's util attached or left (see `Sim::cfs_util_change`).
    pub util_changed: bool,
    /// Tasks asleep in iowait that slept here (rq->nr_iowait): the menu governor keeps such a
    /// CPU out of idle states whose exit would outlast a share of the predicted idle time.
    pub nr_iowait: u32,
    /// Idle time spent while `nr_iowait` > 0, ns (the tick-sched iowait_sleeptime that
    /// `get_cpu_iowait_time_us` reads): ondemand's io_is_busy counts it as busy.
    pub iowait_ns: u64,
    /// Up to when `iowait_ns` is accounted.
    pub iowait_mark: TimeNs,
    /// Averages of tasks gone from here that the next PELT update takes off.
    pub removed: crate::sched::Removed,
    /// rq clock_pelt, the clock_task of its last update, and idle time lost to saturation.
    pub clock_pelt: u64,
    pub clock_task: u64,
    pub lost_idle: u64,
    /// Frequency-invariance scale (1024 = running at the reference frequency).
    pub freq_scale: u64,
    // Execution of the current task's run segment.
    pub seg_token: u32,
    pub seg_start: TimeNs,
    pub seg_rate: f64,
    /// Until this time the CPU is still leaving its idle state and makes no progress.
    pub stall_until: TimeNs,
    /// From this time on (at most `stall_until`) the scheduler charges the stalled wake-up's
    /// task as running: a halted vCPU's IPI handler enqueues it, and the clock update that
    /// wakeup_preempt's rq_clock_skip_update skips in the following __schedule leaves its
    /// exec_start, and its PELT, at that enqueue, the guest's resume from idle included.
    pub stall_charged_from: TimeNs,
    /// Until this time the core's clock is stopped by a frequency change, or its task is held
    /// (an IPI it sends, a reschedule from another CPU it stopped for): its task is running
    /// but makes no progress.
    pub halt_until: TimeNs,
    /// The wake-up being enqueued here reached this halted vCPU by IPI: the host's latency to
    /// it, and the guest's resume after it (`Sim::halted_vcpu_ipi`), ns.
    pub vcpu_wake_ns: Option<(TimeNs, TimeNs)>,
    /// When the IPI last sent to this halted vCPU reaches it: a wake-up queued before then
    /// joins the wake list that IPI runs (`__smp_call_single_queue` sends only for the first
    /// entry), and its `sched_wakeup` is logged then (`Sim::pick_on_waking_cpu`).
    pub vcpu_ipi_until: TimeNs,
    /// Until this time the current task is sending an IPI to a halted vCPU (a VM exit): it
    /// runs nothing, not even instant operations (`Sim::halted_vcpu_ipi`).
    pub ipi_send_until: TimeNs,
    /// PELT time at which the last idle exit ended: before it the current task was not yet woken.
    pub stall_pelt_end: u64,
    pub tick_token: u32,
    pub tick_armed: bool,
    // Idle: None while running (C0), Some(state index) while idle. Set with
    // `Sim::set_idle_state`, which keeps `idle_power` beside it.
    pub idle_state: Option<usize>,
    /// How the idle state powers the CPU (its cluster's `idle_states[idle_state].power`): read
    /// at every counter sync, vote and turbo count, so kept rather than looked up.
    pub idle_power: Option<crate::hw::platform::IdlePower>,
    /// Start of the account under way (busy or idle time, `Sched::account_busy_idle`): the
    /// last switch between busy and idle, a deeper idle state or the warm-up's end.
    pub idle_since: TimeNs,
    /// When the CPU last went idle (the moment of the kernel's rq->idle_stamp): its idle
    /// period's start, whatever states it went through since.
    pub idle_entered: TimeNs,
    /// rq->avg_idle: running average of this CPU's idle periods, gating new-idle balancing.
    pub avg_idle_ns: u64,
    /// Its lowest domain's new-idle balance cost, the gate's other side from 5.16.
    pub(crate) newidle: crate::sched::newidle::NewidleCost,
    /// The balancer's attempts to spread this CPU's core: see `Sim::spread_smt`.
    pub spread: crate::sched::SpreadAttempts,
    /// The idle balancer's failed attempts at this CPU's queue: see `Sim::push_to_idle`.
    pub push: crate::sched::SpreadAttempts,
    /// This CPU's copy of its LLC domain's periodic balancing state: see `Sim::periodic_balance`.
    pub balance: crate::sched::load_balance::DomainBalance,
    /// Wake-up times of timers set by tasks that slept here, soonest first: the menu
    /// governor's "next timer" (a heap: thousands of sleepers cost O(log n) per idle entry).
    pub timers: std::collections::BinaryHeap<std::cmp::Reverse<TimeNs>>,
    // Statistics.
    pub busy_ns: u64,
    pub idle_ns: Vec<u64>,
    pub util_avg_max: u64,
    /// Idle entries so far (tick_nohz_get_idle_calls_cpu), for schedutil's busy hold.
    pub idle_calls: u64,
    /// The task that last left this CPU and why ('R', 'S', 'D', 'Z', 'X'), for the next sched_switch.
    pub switched_out: Option<(usize, char)>,
    /// No current task and none queued, as last counted in `Sim::idle_cpus` (see
    /// `count_placement_idle`).
    pub placement_idle: bool,
    /// Awake (`Sim::cpu_awake`) as of the last change of its idle state.
    pub awake: bool,
}

impl Cpu {
    /// Bring `iowait_ns` up to `now`: idle time counts as I/O wait while a task that slept here
    /// waits on I/O (tick-sched's iowait_sleeptime, read by `get_cpu_iowait_time_us`).
    pub(crate) fn account_iowait(&mut self, now: TimeNs) {
        self.iowait_ns = self.iowait_ns_at(now);
        self.iowait_mark = now;
    }

    /// `iowait_ns` as it stands at `now`, the idle period under way included.
    pub(crate) fn iowait_ns_at(&self, now: TimeNs) -> u64 {
        let ongoing = self.idle_state.is_some() && self.nr_iowait > 0;
        self.iowait_ns + if ongoing { now - self.idle_since.max(self.iowait_mark) } else { 0 }
    }
}

/// Idle CPUs and idle cores of one LLC, as `Sim::idle_cpus` and `Sim::idle_cores` count them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LlcIdle {
    pub cpus: usize,
    pub cores: usize,
}

impl LlcIdle {
    /// Every LLC with all its CPUs and cores idle, as at the start.
    pub(crate) fn all_idle(plat: &Platform) -> Vec<LlcIdle> {
        plat.llcs
            .iter()
            .map(|cpus| {
                let mut cores: Vec<usize> = cpus.iter().map(|&c| plat.cpus[c].core).collect();
                cores.sort_unstable();
                cores.dedup();
                LlcIdle { cpus: cpus.len(), cores: cores.len() }
            })
            .collect()
    }
}
