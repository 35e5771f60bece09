//! One simulation: a platform, a governor configuration, a workload and a seed, run as a
//! discrete-event simulation. This file holds the state and the event loop; the hardware side
//! (frequencies, power, counters) is in `hw/`, the scheduler and PELT in `sched/`.

use std::ops::ControlFlow;

use rand::SeedableRng;
use rand_pcg::Pcg64;

use crate::engine::{Event, EventQueue, TimeNs};
use crate::error::{Result, SimError};
use crate::governor::{CpuSignals, Governor, GovernorConfig, PolicyCtx, Relation, UpdateFlags};
use crate::hw::driver::{table_lookup, Driver};
use crate::hw::platform::Platform;
use crate::observe::{Decision, Timeline};
use crate::sched::pelt::{SchedAvg, SCHED_CAPACITY_SCALE};
use crate::sched::task::{Task, MAX_TASKS};
use crate::workload::{RunStats, Workload};

/// The event queue is swept of stale events when it holds at least this many, and then when
/// it has doubled since the last sweep: each sweep is O(n), so O(1) per event. A busy run
/// re-arms a third of its run segments before they end (Haswell pgbench-ro, 48 clients: 0.9 M
/// stale of 2.8 M pops), and the stale entries deepen the heap every pop walks; sweeping from
/// 256 rather than 1024 made such runs 4–6% faster, with the same pop order.
const QUEUE_SWEEP_MIN: usize = 256;

/// Mixed into the seed for the background kernel threads' random stream.
const BACKGROUND_STREAM: u64 = 0x6b77_6f72_6b65_7273;
/// Mixed into the seed for the stream of start phases and work jitter (`phase_us`,
/// `work_jitter_pct`).
const VARIATION_STREAM: u64 = 0x7661_7269_6174_696f;

/// How often (in events handled) a run reports its progress to its hook: about every 20–50
/// ms of wall time, so that an interrupt is seen promptly at the cost of one compare an event.
pub const PROGRESS_EVERY_EVENTS: u64 = 1 << 16;

/// Where [`Sim::advance`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advance {
    /// A governor asked for a pause ([`PolicyCtx::pause`]); the run goes on at the next call.
    Paused,
    /// The run reached its end (or its tasks all exited).
    Ended,
}

/// How far a run is, for a progress hook ([`Sim::run_with_progress`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Simulated time reached.
    pub now_ns: TimeNs,
    /// Simulated time at which the run ends (sooner if its tasks all exit).
    pub end_ns: TimeNs,
}

/// What to simulate, besides the platform.
#[derive(Clone, Debug, Default)]
pub struct SimConfig {
    pub governor: String,
    pub workload: String,
    /// None: the workload's default duration.
    pub duration_ns: Option<TimeNs>,
    pub seed: u64,
    pub timeline: bool,
    /// Record every frequency decision with its inputs (`--explain`).
    pub explain: bool,
}

/// Built with `..SimConfig::default()` or these setters, so that a new field with a default
/// touches no caller.
impl SimConfig {
    /// `workload` under `governor` (spec strings), everything else at its default: the
    /// workload's own duration, seed 0, no timeline, no explain records.
    pub fn new(governor: impl Into<String>, workload: impl Into<String>) -> SimConfig {
        SimConfig { governor: governor.into(), workload: workload.into(), ..SimConfig::default() }
    }

    /// Simulated time (None: the workload's default duration).
    pub fn duration_ns(mut self, duration_ns: Option<TimeNs>) -> SimConfig {
        self.duration_ns = duration_ns;
        self
    }

    pub fn seed(mut self, seed: u64) -> SimConfig {
        self.seed = seed;
        self
    }

    pub fn timeline(mut self, timeline: bool) -> SimConfig {
        self.timeline = timeline;
        self
    }

    pub fn explain(mut self, explain: bool) -> SimConfig {
        self.explain = explain;
        self
    }
}

/// Per logical CPU: run-queue, PELT, idle state, counters and statistics.
pub(crate) struct Cpu {
    pub curr: Option<usize>,
    /// Tasks waiting to run (not the current one).
    pub queue: Vec<usize>,
    /// The waiting tasks by (vruntime, id), CFS's rbtree: a queued task's vruntime does not
    /// change while it waits, so the next task and the smallest vruntime cost O(log n), not a
    /// scan of `queue` (thousands of tasks woken at once on one CPU).
    pub queue_by_vruntime: std::collections::BTreeSet<(u64, usize)>,
    /// Σ load_avg of the current and waiting tasks, kept as they come, go and update
    /// (`Sim::runnable_load`).
    pub runnable_load: u64,
    pub min_vruntime: u64,
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
    /// Until this time the core's clock is stopped by a frequency change: its task is running
    /// but makes no progress.
    pub halt_until: TimeNs,
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
    pub idle_since: TimeNs,
    /// The menu governor's record of recent idle periods.
    pub idle_history: crate::hw::cpuidle::IdleHistory,
    /// rq->avg_idle: running average of this CPU's idle periods, gating new-idle balancing.
    pub avg_idle_ns: u64,
    /// The balancer's attempts to spread this CPU's core: see `Sim::spread_smt`.
    pub spread: crate::sched::SpreadAttempts,
    /// Wake-up times of timers set by tasks that slept here, soonest first: the menu
    /// governor's "next timer" (a heap: thousands of sleepers cost O(log n) per idle entry).
    pub timers: std::collections::BinaryHeap<std::cmp::Reverse<TimeNs>>,
    // Counters, in cycles (f64 so fractions of a cycle are not lost between updates).
    pub aperf: f64,
    pub mperf: f64,
    pub counters_ns: TimeNs,
    pub tick_aperf: f64,
    pub tick_mperf: f64,
    // Statistics.
    pub busy_ns: u64,
    pub idle_ns: Vec<u64>,
    pub util_avg_max: u64,
    /// Idle entries so far (tick_nohz_get_idle_calls_cpu), for schedutil's busy hold.
    pub idle_calls: u64,
    /// The task that last left this CPU and why ('R', 'S', 'X'), for the next sched_switch.
    pub switched_out: Option<(usize, char)>,
    /// No current task and none queued, as last counted in `Sim::idle_cpus` (see
    /// `count_placement_idle`).
    pub placement_idle: bool,
    /// Awake (`Sim::cpu_awake`) as of the last change of its idle state.
    pub awake: bool,
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

/// Idle CPUs and idle cores of one LLC, as `Sim::idle_cpus` and `Sim::idle_cores` count them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LlcIdle {
    pub cpus: usize,
    pub cores: usize,
}

impl LlcIdle {
    /// Every LLC with all its CPUs and cores idle, as at the start.
    fn all_idle(plat: &Platform) -> Vec<LlcIdle> {
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

/// Per cpufreq policy.
pub(crate) struct Policy {
    pub min_khz: u32,
    pub max_khz: u32,
    pub cur_khz: u32,
    pub table: Vec<u32>,
    pub timer_token: u32,
    /// The driver's `cpuinfo.max_freq` for the simulated kernel, read at every decision.
    pub cpuinfo_max_khz: u32,
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

pub struct Sim {
    /// Shared so that loops over the layout can run while the state changes.
    pub(crate) plat: std::rc::Rc<Platform>,
    pub(crate) q: EventQueue,
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
    pub(crate) driver: Driver,
    pub(crate) tick_ns: u64,
    pub(crate) invariant: bool,
    /// Frequency-invariance reference per cluster as a ratio to base, times 1024.
    pub(crate) freq_ratio: Vec<u64>,
    /// PELT time shift: 10 - log2(multiplier).
    pub(crate) pelt_shift: u32,
    pub(crate) kernel: crate::kernel::KernelVersion,
    /// powernv: let the global (voltage) P-state fall slowly (4.8+).
    pub(crate) slow_rampdown: bool,
    /// powernv: requests arrive by fast switch (schedutil on 4.10+), which sets the global
    /// P-state equal to the local one (`powernv_fast_switch`).
    pub(crate) powernv_fast_switch: bool,
    pub(crate) ramps: Vec<crate::hw::powernv::Ramp>,
    /// Per cluster, the voltage (mV) of each frequency its domains run (P-states and turbo
    /// limits), ascending by frequency: `Platform::voltage_mv`'s values, found by a binary
    /// search at a switch rather than a walk along the V/f curve (`Sim::voltage_mv`).
    pub(crate) voltages: Vec<Vec<(u32, f64)>>,
    pub(crate) cpus: Vec<Cpu>,
    pub(crate) cores: Vec<Core>,
    pub(crate) domains: Vec<Domain>,
    pub(crate) policies: Vec<Policy>,
    pub(crate) packages: Vec<Package>,
    pub(crate) tasks: Vec<Task>,
    pub(crate) governors: Vec<Option<Box<dyn Governor>>>,
    pub(crate) gov_wants_util: bool,
    pub(crate) workload: Box<dyn Workload>,
    /// Programs that `Op::Spawn` starts.
    pub(crate) programs: Vec<std::rc::Rc<[crate::sched::task::Op]>>,
    pub(crate) objects: crate::sched::objects::Objects,
    pub(crate) stats: RunStats,
    pub(crate) timeline: Option<Timeline>,
    pub(crate) explain: Option<Vec<Decision>>,
    /// Inputs a governor gave with [`PolicyCtx::explain`] for its next request.
    pub(crate) pending_inputs: Vec<(&'static str, f64)>,
    pub(crate) end_ns: TimeNs,
    /// Start of the measured interval (the end of the workload's warm-up).
    pub(crate) warmup_ns: TimeNs,
    /// Background kernel threads the workload spec asks for: wake-ups a second per CPU, and
    /// µs of work each (`kthread_hz`, `kthread_us`).
    pub(crate) kthreads: (f64, f64),
    pub(crate) started: bool,
    pub(crate) live_tasks: usize,
    /// Tasks waiting on any run-queue (not running): balancing has nothing to do at zero.
    pub(crate) waiting: usize,
    /// Whether any task has an RT policy (given at spawn, never changed): without one, the RT
    /// checks of every enqueue, switch and run-queue PELT update read no task.
    pub(crate) any_rt: bool,
    /// Programs being interpreted within one another now, and those deferred to the end of the
    /// event as too deep (`Sim::run_program`): (CPU, task, the CPU's segment token then).
    pub(crate) program_nesting: u32,
    /// What is left of the switches of the programs under way (`Sim::run_program`).
    pub(crate) unfinished: Vec<crate::sched::Unfinished>,
    /// An error met within an event (a fork past [`MAX_TASKS`]): the run stops with it.
    pub(crate) failure: Option<SimError>,
    /// A governor asked [`Sim::advance`] to return after the current event.
    pub(crate) pause_requested: bool,
    /// The queue is swept of stale events when it reaches this length (see QUEUE_SWEEP_MIN).
    pub(crate) sweep_at: usize,
    pub(crate) deferred_programs: Vec<(usize, usize, u32)>,
    /// Events handled (stale ones dropped uncounted).
    pub(crate) events: u64,
    /// CPUs, and cores with every thread, that wake-up placement would find idle: its scans
    /// have nothing to find at zero.
    pub(crate) idle_cpus: usize,
    pub(crate) idle_cores: usize,
    /// The same two counts per LLC (a core's threads share its LLC): a wake-up's searches of
    /// its target's LLC have nothing to find there at zero, however many idle CPUs the other
    /// LLCs have.
    pub(crate) llc_idle: Vec<LlcIdle>,
    /// Every CPU id in order, for searches of the whole machine (built once, not per search).
    pub(crate) every_cpu: Vec<usize>,
    pub(crate) governor_name: String,
    pub(crate) workload_name: String,
    pub(crate) seed: u64,
    /// Capacities, misfit, EAS and uclamp state (asymmetric platforms).
    pub(crate) hetero: crate::sched::capacity::Hetero,
}

impl Sim {
    /// A simulation of the workload named by `cfg.workload` (a spec string).
    pub fn new(plat: Platform, cfg: &SimConfig) -> Result<Sim> {
        let (wl_spec, workload) = crate::workload::parse(&cfg.workload)?;
        Sim::with_workload(plat, cfg, workload, wl_spec.canonical())
    }

    /// A simulation of a workload built elsewhere (an rt-app file, a test); `workload_name`
    /// is how results name it.
    pub fn with_workload(
        plat: Platform,
        cfg: &SimConfig,
        workload: Box<dyn Workload>,
        workload_name: String,
    ) -> Result<Sim> {
        let (gov_cfg, gov_info) = GovernorConfig::parse(&cfg.governor)?;
        let driver = match (gov_info.driver, gov_cfg.text_value("driver")) {
            (Some(forced), Some(asked)) if forced != asked => {
                return Err(SimError::config(
                    format!("governor '{}'", gov_info.name),
                    "driver",
                    format!("this governor is part of the {forced} driver; got driver={asked}"),
                ))
            }
            (Some(forced), _) => Driver::parse(forced)?,
            (None, Some(name)) => Driver::parse(name)?,
            (None, None) => Driver::default_for(&plat)?,
        };
        driver.check(&plat)?;
        gov_cfg.check_platform(gov_info, &plat)?;
        let hz = match gov_cfg.values.get_u64("hz") as u32 {
            0 => plat.file.defaults.hz,
            hz => hz,
        };
        let kernel = match gov_cfg.text_value("kernel") {
            Some(v) => crate::kernel::KernelVersion::parse(v)?,
            None => crate::kernel::KernelVersion::DEFAULT,
        };
        let freq_ratio =
            crate::hw::invariance::reference_ratios(&plat, gov_cfg.text_value("freq_max"), kernel, driver)?;
        let invariant = crate::hw::invariance::resolve_invariant(gov_cfg.values.get("invariant"), kernel, &plat)?;
        let duration_ns = cfg.duration_ns.unwrap_or_else(|| workload.default_duration_ns());
        if duration_ns == 0 {
            return Err(SimError::config("run", "duration", "must be > 0"));
        }
        let common = crate::workload::common(&cfg.workload)?;
        let warmup_ns = common.warmup_ns;
        if warmup_ns >= duration_ns {
            return Err(SimError::config(
                "workload",
                "warmup_ms",
                format!(
                    "the warm-up ({} ms) must end before the run does ({} ms)",
                    warmup_ns / 1_000_000,
                    duration_ns / 1_000_000
                ),
            ));
        }

        let ncpus = plat.ncpus();
        let cpus = (0..ncpus)
            .map(|c| Cpu {
                curr: None,
                queue: Vec::new(),
                queue_by_vruntime: std::collections::BTreeSet::new(),
                runnable_load: 0,
                min_vruntime: 0,
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
                stall_pelt_end: 0,
                tick_token: 0,
                tick_armed: false,
                idle_state: Some(plat.cluster_of_cpu(c).idle_states.len().saturating_sub(1)),
                idle_power: plat.cluster_of_cpu(c).idle_states.last().map(|s| s.power),
                idle_since: 0,
                idle_history: Default::default(),
                avg_idle_ns: crate::sched::AVG_IDLE_MAX_NS,
                util_changed: false,
                nr_iowait: 0,
                iowait_ns: 0,
                iowait_mark: 0,
                spread: Default::default(),
                timers: std::collections::BinaryHeap::new(),
                aperf: 0.0,
                mperf: 0.0,
                counters_ns: 0,
                tick_aperf: 0.0,
                tick_mperf: 0.0,
                busy_ns: 0,
                idle_ns: vec![0; plat.cluster_of_cpu(c).idle_states.len()],
                util_avg_max: 0,
                idle_calls: 0,
                switched_out: None,
                placement_idle: true,
                awake: false,
            })
            .collect();
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
        let policies: Vec<Policy> = plat
            .policies
            .iter()
            .map(|p| {
                let table = driver.table_khz(&plat, p.cluster);
                let cpuinfo_max_khz = driver.cpuinfo_max_khz(&plat, p.cluster, kernel);
                Policy {
                    min_khz: table[0],
                    max_khz: table[table.len() - 1],
                    cur_khz: table[0],
                    table,
                    timer_token: 0,
                    cpuinfo_max_khz,
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
        let tables: Vec<Vec<u32>> = policies.iter().map(|p: &Policy| p.table.clone()).collect();
        let pelt_shift = 10 - gov_cfg.values.get_u64("pelt_multiplier").trailing_zeros();
        let tick_ns = (1_000_000_000 + hz as u64 / 2) / hz as u64;
        let hetero = crate::sched::capacity::Hetero::new(
            &plat,
            &tables,
            crate::sched::capacity::FitsRule::new(gov_cfg.values.get_u64("fits"), tick_ns, 10 - pelt_shift),
            crate::sched::capacity::EasInputs {
                knob_on: gov_cfg.values.get("eas") != 0.0,
                governor: gov_info.name,
                invariant,
                kernel,
            },
            cfg.explain,
        );
        let governors: Vec<Option<Box<dyn Governor>>> =
            plat.policies.iter().map(|p| Some((gov_info.build)(gov_cfg.values_for_policy(p.cpus[0])))).collect();
        let gov_wants_util = governors.iter().flatten().any(|g| g.wants_util_updates());
        let mut sim = Sim {
            q: EventQueue::default(),
            rng: Pcg64::seed_from_u64(cfg.seed),
            background_rng: Pcg64::seed_from_u64(cfg.seed ^ BACKGROUND_STREAM),
            variation_rng: Pcg64::seed_from_u64(cfg.seed ^ VARIATION_STREAM),
            phase_ns: common.phase_ns,
            work_jitter: common.work_jitter,
            driver,
            tick_ns,
            invariant,
            freq_ratio,
            pelt_shift,
            kernel,
            slow_rampdown: gov_cfg.values.get("slow_rampdown") != 0.0,
            powernv_fast_switch: crate::hw::powernv::fast_switch_used(gov_info.name, kernel),
            ramps: vec![crate::hw::powernv::Ramp::default(); plat.policies.len()],
            voltages: (0..plat.file.clusters.len())
                .map(|cl| plat.hardware_freqs_khz(cl).into_iter().map(|khz| (khz, plat.voltage_mv(cl, khz))).collect())
                .collect(),
            cpus,
            cores,
            domains,
            policies,
            packages,
            tasks: Vec::new(),
            governors,
            gov_wants_util,
            programs: workload.programs(&plat),
            objects: crate::sched::objects::Objects::with_devices(workload.devices()),
            workload,
            stats: RunStats::default(),
            timeline: cfg.timeline.then(Timeline::default),
            explain: cfg.explain.then(Vec::new),
            pending_inputs: Vec::new(),
            end_ns: duration_ns,
            warmup_ns,
            kthreads: (common.kthread_hz, common.kthread_us),
            started: false,
            live_tasks: 0,
            waiting: 0,
            any_rt: false,
            program_nesting: 0,
            unfinished: Vec::new(),
            failure: None,
            pause_requested: false,
            sweep_at: QUEUE_SWEEP_MIN,
            deferred_programs: Vec::new(),
            events: 0,
            idle_cpus: plat.ncpus(),
            idle_cores: plat.cores.len(),
            llc_idle: LlcIdle::all_idle(&plat),
            every_cpu: (0..plat.ncpus()).collect(),
            governor_name: gov_cfg.spec.canonical(),
            workload_name,
            seed: cfg.seed,
            hetero,
            plat: std::rc::Rc::new(plat),
        };
        let specs = sim.workload.tasks(&sim.plat);
        crate::workload::validate_programs(&sim.workload_name, &specs, &sim.programs, sim.workload.devices().len())?;
        let background = if sim.kthreads.0 > 0.0 { sim.plat.ncpus() } else { 0 };
        if specs.len() + background > MAX_TASKS {
            return Err(SimError::config(
                format!("workload '{}'", sim.workload_name),
                "tasks",
                format!(
                    "{} tasks{} exceed the limit of {MAX_TASKS} tasks a run may have",
                    specs.len(),
                    if background > 0 { format!(" and {background} kernel threads") } else { String::new() }
                ),
            ));
        }
        sim.init_hardware();
        Ok(sim)
    }

    /// Every CPU's frequency at time 0 in the timeline, before any change, so that a trace
    /// says each CPU's frequency from its start.
    fn trace_initial_frequencies(&mut self) {
        let khz: Vec<u32> = (0..self.cpus.len()).map(|cpu| self.cpu_khz(cpu)).collect();
        if let Some(tl) = self.timeline.as_mut() {
            for (cpu, &f) in khz.iter().enumerate() {
                tl.frequency(0, cpu, f);
            }
        }
    }

    /// Run to the end and summarise.
    pub fn run(self) -> Result<crate::result::SimResult> {
        self.run_with_progress(&mut |_| ControlFlow::Continue(()))
    }

    /// Run to the end and summarise, calling `hook` every [`PROGRESS_EVERY_EVENTS`] events
    /// with how far the run is: it may show progress, and stop the run early (an interrupt)
    /// by returning `Break`, which makes the run an error.
    pub fn run_with_progress(
        mut self,
        hook: &mut dyn FnMut(Progress) -> ControlFlow<()>,
    ) -> Result<crate::result::SimResult> {
        #[allow(clippy::disallowed_methods)] // wall time of the run, reported, never simulated
        let wall = std::time::Instant::now();
        self.begin();
        while self.advance(hook)? == Advance::Paused {}
        Ok(self.summary(wall.elapsed().as_secs_f64()))
    }

    /// Start the run: the governors, the workload's tasks and the run's own events.
    pub fn begin(&mut self) {
        self.trace_initial_frequencies();
        for p in 0..self.policies.len() {
            self.with_governor(p, |g, ctx| g.start(ctx));
        }
        self.started = true;
        self.domains.iter_mut().for_each(|d| d.request_unsettled = true);
        let specs = self.workload.tasks(&self.plat);
        let specs = self.with_start_phases(specs);
        let (hz, us) = self.kthreads;
        let background = crate::workload::kthreads(&self.plat, hz, us, &mut self.background_rng);
        for spec in specs.into_iter().chain(background) {
            self.spawn(spec);
        }
        self.run_deferred_programs();
        self.q.push(self.end_ns, Event::End);
        if self.warmup_ns > 0 {
            self.q.push(self.warmup_ns, Event::WarmupEnd);
        }
        self.q.push(crate::hw::RAPL_SAMPLE_NS.min(self.end_ns), Event::RaplSample);
    }

    /// Handle events until the run ends, or until a governor asked for a pause
    /// ([`PolicyCtx::pause`]: a controller outside the simulation decides next).
    pub fn advance(&mut self, hook: &mut dyn FnMut(Progress) -> ControlFlow<()>) -> Result<Advance> {
        while let Some((_, ev)) = self.q.pop() {
            if !self.is_live(&ev) {
                continue;
            }
            self.events += 1;
            match ev {
                Event::End => return Ok(Advance::Ended),
                Event::WarmupEnd => self.end_warmup(),
                Event::SegmentEnd { cpu, .. } => self.segment_end(cpu as usize),
                Event::Tick { cpu, .. } => self.tick(cpu as usize),
                Event::TimerWake { task, .. } => self.timer_wake(task as usize),
                Event::FreqApply { domain, .. } => self.freq_apply(domain as usize),
                Event::PcuTick { package } => self.pcu_tick(package as usize),
                Event::DriverTimer { policy, .. } => self.powernv_timer(policy as usize),
                Event::GovernorTimer { policy, .. } => {
                    self.with_governor(policy as usize, |g, ctx| g.timer(ctx));
                }
                Event::IoComplete { dev, task } => self.io_complete(dev, task as usize),
                Event::RaplSample => {
                    self.rapl_sample();
                    let next = self.q.now() + crate::hw::RAPL_SAMPLE_NS;
                    if next < self.end_ns {
                        self.q.push(next, Event::RaplSample);
                    }
                }
            }
            self.run_deferred_programs();
            if let Some(e) = self.failure.take() {
                return Err(e);
            }
            if self.events.is_multiple_of(PROGRESS_EVERY_EVENTS) {
                let progress = Progress { now_ns: self.q.now(), end_ns: self.end_ns };
                if hook(progress).is_break() {
                    return Err(SimError::Simulation(format!(
                        "stopped at {:.3} s of {:.3} s simulated",
                        progress.now_ns as f64 * 1e-9,
                        progress.end_ns as f64 * 1e-9
                    )));
                }
            }
            if self.live_tasks == 0 && !self.tasks.is_empty() {
                return Ok(Advance::Ended);
            }
            if self.q.len() >= self.sweep_at {
                let mut q = std::mem::take(&mut self.q);
                q.retain(|e| self.is_live(e));
                self.q = q;
                self.sweep_at = QUEUE_SWEEP_MIN.max(2 * self.q.len());
            }
            if std::mem::take(&mut self.pause_requested) {
                return Ok(Advance::Paused);
            }
        }
        Ok(Advance::Ended)
    }

    /// The run's result, from the time reached (after [`Sim::advance`] ended it); `wall_s` is
    /// the wall time it took.
    pub fn summary(mut self, wall_s: f64) -> crate::result::SimResult {
        let end = self.q.now();
        self.finish(end);
        crate::result::summarise(&self, end, wall_s)
    }

    /// Energy the packages drew so far, the warm-up included (J).
    pub fn energy_so_far_j(&mut self) -> f64 {
        (0..self.packages.len()).map(|p| self.package_energy_j(p) + self.packages[p].energy_before_warmup_j).sum()
    }

    /// Simulated time now (ns).
    pub fn now_ns(&self) -> TimeNs {
        self.q.now()
    }

    /// Ask for `khz` on `policy` now, as its governor would (the cpufreq core, then the driver).
    pub fn request_khz(&mut self, policy: usize, khz: u32) {
        self.with_governor(policy, |_, ctx| ctx.request_khz(khz, Relation::L));
    }

    /// The workload's first tasks, each delayed by its start phase (`phase_us`): uniform in
    /// `[0, phase_ns)`, drawn in task order.
    fn with_start_phases(&mut self, mut specs: Vec<crate::workload::TaskSpec>) -> Vec<crate::workload::TaskSpec> {
        use rand::Rng;
        if self.phase_ns > 0.0 {
            for spec in &mut specs {
                spec.start_ns =
                    spec.start_ns.saturating_add(self.variation_rng.gen_range(0.0..self.phase_ns) as TimeNs);
            }
        }
        specs
    }

    /// Whether `ev` still stands: a tokened event whose owner has moved on (a re-armed tick, a
    /// run segment cut short, a cancelled timer or transition) is stale and dropped.
    fn is_live(&self, ev: &Event) -> bool {
        match *ev {
            Event::SegmentEnd { cpu, token } => self.cpus[cpu as usize].seg_token == token,
            Event::Tick { cpu, token } => self.cpus[cpu as usize].tick_token == token,
            Event::TimerWake { task, token } => self.tasks[task as usize].timer_token == token,
            Event::FreqApply { domain, token } => self.domains[domain as usize].apply_token == token,
            Event::DriverTimer { policy, token } => self.ramps[policy as usize].timer_token == token,
            Event::GovernorTimer { policy, token } => self.policies[policy as usize].timer_token == token,
            Event::End | Event::WarmupEnd | Event::PcuTick { .. } | Event::IoComplete { .. } | Event::RaplSample => {
                true
            }
        }
    }

    /// The number of cpufreq policies, each with its governor.
    pub fn policy_count(&self) -> usize {
        self.governors.len()
    }

    /// The number of logical CPUs.
    pub fn cpu_count(&self) -> usize {
        self.cpus.len()
    }

    /// A policy's CPUs.
    pub fn policy_cpus(&self, policy: usize) -> &[usize] {
        &self.plat.policies[policy].cpus
    }

    /// A policy's frequency table as its driver gives it (kHz, ascending).
    pub fn policy_table_khz(&self, policy: usize) -> &[u32] {
        &self.policies[policy].table
    }

    /// Put `make(policy)`'s governor on each policy in place of the configured one: a governor
    /// built outside the registry (a user's, from Python), named `name` in the result. The
    /// configuration's system settings (kernel, invariance, tick, driver) stay.
    pub fn replace_governors(&mut self, name: &str, mut make: impl FnMut(usize) -> Box<dyn Governor>) {
        for (p, slot) in self.governors.iter_mut().enumerate() {
            *slot = Some(make(p));
        }
        self.gov_wants_util = self.governors.iter().flatten().any(|g| g.wants_util_updates());
        self.governor_name = name.to_string();
    }

    /// Call a policy's governor with a context; the governor is taken out for the call so it
    /// can use the simulation mutably.
    pub(crate) fn with_governor(&mut self, policy: usize, f: impl FnOnce(&mut dyn Governor, &mut dyn PolicyCtx)) {
        let Some(mut gov) = self.governors[policy].take() else { return };
        {
            let mut ctx = LivePolicy { sim: self, policy };
            f(gov.as_mut(), &mut ctx);
        }
        self.governors[policy] = Some(gov);
    }

    /// The scheduler's cpufreq hook (cpufreq_update_util).
    pub(crate) fn cpufreq_update_util(&mut self, cpu: usize, flags: UpdateFlags) {
        if !self.gov_wants_util {
            return;
        }
        let policy = self.plat.cpus[cpu].policy;
        self.with_governor(policy, |g, ctx| g.util_update(ctx, cpu, flags));
    }

    pub fn now(&self) -> TimeNs {
        self.q.now()
    }
}

/// What a policy's governor reads of the machine, the driver and the kernel: the same whether
/// the run is live ([`LivePolicy`]) or replayed from a recording (`crate::trace`).
impl Sim {
    pub(crate) fn policy_cpuinfo_khz(&self, policy: usize) -> (u32, u32, u32) {
        let f = &self.plat.cluster(self.plat.policies[policy].cluster).frequency;
        (f.min_khz, f.base_khz, f.max_khz)
    }
    pub(crate) fn policy_transition_latency_ns(&self, policy: usize) -> Option<u64> {
        self.driver.transition_latency_ns(&self.plat, self.plat.policies[policy].cluster)
    }
    pub(crate) fn policy_default_transition_delay_us(&self, policy: usize) -> u64 {
        crate::kernel::default_transition_delay_us(
            self.kernel,
            self.driver.transition_delay_us(),
            self.policy_transition_latency_ns(policy),
        )
    }
    /// cpufreq_this_cpu_can_update: see [`PolicyCtx::this_cpu_can_update`].
    pub(crate) fn governor_may_act(&self, flags: UpdateFlags) -> bool {
        !flags.remote || self.driver.dvfs_possible_from_any_cpu()
    }
    pub(crate) fn pelt_multiplier(&self) -> u64 {
        1 << (10 - self.pelt_shift)
    }
    pub(crate) fn policy_resolve_freq(&self, policy: usize, khz: u32) -> u32 {
        let pol = &self.policies[policy];
        self.driver.resolve_freq(&pol.table, khz, pol.min_khz, pol.max_khz)
    }
    /// A request of `khz` within the policy's limits, and the table entry it selects.
    pub(crate) fn policy_target(&self, policy: usize, khz: u32, relation: Relation) -> (u32, u32) {
        let pol = &self.policies[policy];
        let target = khz.clamp(pol.min_khz, pol.max_khz);
        (target, table_lookup(&pol.table, target, relation).clamp(pol.min_khz, pol.max_khz))
    }
}

/// The [`PolicyCtx`] methods that read only the machine, the driver and the kernel, the same for
/// the live policy ([`LivePolicy`]) and a replayed one (`crate::trace`): each context expands
/// them inside its `impl PolicyCtx`, given `self.sim` (a `Sim`) and `self.policy`.
macro_rules! policy_machine_facts {
    () => {
        fn cpus(&self) -> &[usize] {
            &self.sim.plat.policies[self.policy].cpus
        }
        fn min_khz(&self) -> u32 {
            self.sim.policies[self.policy].min_khz
        }
        fn max_khz(&self) -> u32 {
            self.sim.policies[self.policy].max_khz
        }
        fn table_khz(&self) -> &[u32] {
            &self.sim.policies[self.policy].table
        }
        fn cap_orig(&self, cpu: usize) -> u64 {
            self.sim.plat.cpus[cpu].cap_orig
        }
        fn kernel(&self) -> $crate::kernel::KernelVersion {
            self.sim.kernel
        }
        fn default_transition_delay_us(&self) -> u64 {
            self.sim.policy_default_transition_delay_us(self.policy)
        }
        fn cpu_identity(&self) -> ($crate::hw::platform::Vendor, Option<$crate::hw::platform::CpuIdFile>) {
            (self.sim.plat.file.vendor, self.sim.plat.file.cpuid)
        }
        fn cpuinfo_khz(&self) -> (u32, u32, u32) {
            self.sim.policy_cpuinfo_khz(self.policy)
        }
        fn cpuinfo_max_khz(&self) -> u32 {
            self.sim.policies[self.policy].cpuinfo_max_khz
        }
        fn transition_latency_ns(&self) -> Option<u64> {
            self.sim.policy_transition_latency_ns(self.policy)
        }
        fn this_cpu_can_update(&self, flags: $crate::governor::UpdateFlags) -> bool {
            self.sim.governor_may_act(flags)
        }
        fn tick_ns(&self) -> u64 {
            self.sim.tick_ns
        }
        fn invariant(&self) -> bool {
            self.sim.invariant
        }
        fn pelt_multiplier(&self) -> u64 {
            self.sim.pelt_multiplier()
        }
        fn resolve_freq(&self, khz: u32) -> u32 {
            self.sim.policy_resolve_freq(self.policy, khz)
        }
    };
}
pub(crate) use policy_machine_facts;

/// A policy of the running simulation, as its governor sees it.
pub struct LivePolicy<'a> {
    sim: &'a mut Sim,
    policy: usize,
}

impl PolicyCtx for LivePolicy<'_> {
    policy_machine_facts!();
    fn now_ns(&self) -> TimeNs {
        self.sim.q.now()
    }
    fn cur_khz(&self) -> u32 {
        self.sim.policies[self.policy].cur_khz
    }
    fn cpu_signals(&self, cpu: usize) -> CpuSignals {
        let c = &self.sim.cpus[cpu];
        CpuSignals {
            util_avg: self.sim.cpu_util_avg_now(cpu),
            util_est: c.util_est_sum,
            runnable_avg: c.avg.runnable_avg,
            cap_orig: self.sim.plat.cpus[cpu].cap_orig,
            rt_runnable: self.sim.rt_runnable(cpu),
            uclamp: self.sim.rq_uclamp(cpu),
            idle_calls: c.idle_calls,
        }
    }
    fn cpu_nr_running(&self, cpu: usize) -> u64 {
        let c = &self.sim.cpus[cpu];
        c.curr.is_some() as u64 + c.queue.len() as u64
    }
    fn cpu_busy_ns(&self, cpu: usize) -> u64 {
        let c = &self.sim.cpus[cpu];
        c.busy_ns + if c.idle_state.is_none() { self.sim.q.now() - c.idle_since } else { 0 }
    }
    fn cpu_iowait_ns(&self, cpu: usize) -> u64 {
        self.sim.cpus[cpu].iowait_ns_at(self.sim.q.now())
    }
    fn cpu_counters(&mut self, cpu: usize) -> (u64, u64, u64) {
        self.sim.sync_counters(cpu);
        let c = &self.sim.cpus[cpu];
        let base = self.sim.plat.cluster_of_cpu(cpu).frequency.base_khz as u64;
        let tsc = (self.sim.q.now() as u128 * base as u128 / 1_000_000) as u64;
        (c.aperf as u64, c.mperf as u64, tsc)
    }
    fn explaining(&self) -> bool {
        self.sim.explain.is_some()
    }
    fn explain(&mut self, inputs: &[(&'static str, f64)]) {
        if self.sim.explain.is_some() {
            self.sim.pending_inputs.clear();
            self.sim.pending_inputs.extend_from_slice(inputs);
        }
    }
    fn explain_more(&mut self, inputs: &[(&'static str, f64)]) {
        if self.sim.explain.is_some() {
            self.sim.pending_inputs.extend_from_slice(inputs);
        }
    }
    fn request_khz(&mut self, khz: u32, relation: Relation) {
        let pol = &self.sim.policies[self.policy];
        let (min_khz, max_khz) = (pol.min_khz, pol.max_khz);
        let (target, f) = self.sim.policy_target(self.policy, khz, relation);
        if cpufreq_core_calls_driver(self.sim.driver, target, f, pol.cur_khz) {
            self.sim.set_policy_freq(self.policy, f);
        }
        let hw_khz = {
            let domain = self.sim.plat.policies[self.policy].domain;
            let d = &self.sim.domains[domain];
            d.pending_khz.unwrap_or(d.actual_khz)
        };
        let inputs = std::mem::take(&mut self.sim.pending_inputs);
        if let Some(log) = self.sim.explain.as_mut() {
            log.push(Decision {
                time_ns: self.sim.q.now(),
                policy: self.policy,
                raw_khz: khz,
                resolved_khz: f,
                min_khz,
                max_khz,
                hw_khz,
                inputs,
            });
        }
    }
    fn fail(&mut self, error: SimError) {
        self.sim.failure.get_or_insert(error);
    }
    fn pause(&mut self) {
        self.sim.pause_requested = true;
    }
    fn arm_timer(&mut self, delay_ns: u64) {
        let pol = &mut self.sim.policies[self.policy];
        pol.timer_token = pol.timer_token.wrapping_add(1);
        let token = pol.timer_token;
        let at = self.sim.q.now() + delay_ns;
        self.sim.q.push(at, Event::GovernorTimer { policy: self.policy as u32, token });
    }
}

/// Whether the cpufreq core passes a governor's request on to the driver
/// (`__cpufreq_driver_target`, drivers/cpufreq/cpufreq.c). `clamped_khz` is the request within
/// the policy limits, `resolved_khz` the table entry it selects, `cur_khz` is `policy->cur`.
///
/// - A table driver never sees a request that selects `policy->cur`: from 5.14 the core
///   resolves the request (`__resolve_freq`) before comparing with `policy->cur`; on 4.7–5.13
///   it compares the clamped request, and `__target_index` then drops one whose table entry is
///   `policy->cur`. Both forms skip the same requests.
/// - intel_pstate in active mode is a `->setpolicy` driver: its own algorithm writes the
///   P-state and the core takes no part, so every request reaches the hardware model.
/// - intel_cpufreq (`->target`, no table in the kernel): only a clamped request equal to
///   `policy->cur` is skipped.
pub(crate) fn cpufreq_core_calls_driver(driver: Driver, clamped_khz: u32, resolved_khz: u32, cur_khz: u32) -> bool {
    match driver {
        Driver::IntelPstate => true,
        Driver::IntelCpufreq => clamped_khz != cur_khz,
        _ => resolved_khz != cur_khz,
    }
}

#[cfg(test)]
mod core_target_tests {
    use super::*;

    /// A request that resolves to the current entry never reaches a table driver (5.14+:
    /// `__resolve_freq` first; 4.7–5.13: `__target_index`), whatever the raw request was.
    #[test]
    fn a_request_resolving_to_the_current_entry_stops_in_the_core() {
        assert!(!cpufreq_core_calls_driver(Driver::Powernv, 2_100_000, 2_061_000, 2_061_000));
        assert!(!cpufreq_core_calls_driver(Driver::AcpiCpufreq, 2_061_000, 2_061_000, 2_061_000));
        assert!(cpufreq_core_calls_driver(Driver::Powernv, 2_100_000, 2_128_000, 2_061_000));
        // A ->target driver without a table is skipped only on an equal clamped request.
        assert!(cpufreq_core_calls_driver(Driver::IntelCpufreq, 2_050_000, 2_000_000, 2_000_000));
        assert!(!cpufreq_core_calls_driver(Driver::IntelCpufreq, 2_000_000, 2_000_000, 2_000_000));
        // intel_pstate's own algorithms do not go through the core.
        assert!(cpufreq_core_calls_driver(Driver::IntelPstate, 800_000, 800_000, 800_000));
    }
}
