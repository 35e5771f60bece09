//! One simulation: a platform, a governor configuration, a workload and a seed, run as a
//! discrete-event simulation. This file holds the state and the event loop; the hardware side
//! (frequencies, power, counters) is in `hw/`, the scheduler and PELT in `sched/`.

use std::ops::ControlFlow;

use rand::SeedableRng;
use rand_pcg::Pcg64;

use crate::engine::{Event, EventQueue, TimeNs};
use crate::error::{Result, SimError};
use crate::governor::core::Policy;
use crate::governor::{CpuSignals, Governor, GovernorConfig, PolicyCtx, PolicyFacts, Relation, UpdateFlags};
use crate::hw::platform::Platform;
use crate::machine::Machine;
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
    /// The smallest vruntime among the waiting tasks (u64::MAX with none), unless `stale`: a
    /// queued task's vruntime does not change while it waits, so only taking out the task that
    /// held it makes it stale (`Sim::queued_min_vruntime`), and a burst of enqueues costs no
    /// scan of `queue`.
    pub queue_min_vruntime: u64,
    pub queue_min_stale: bool,
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
    /// rq->avg_idle: running average of this CPU's idle periods, gating new-idle balancing.
    pub avg_idle_ns: u64,
    /// The balancer's attempts to spread this CPU's core: see `Sim::spread_smt`.
    pub spread: crate::sched::SpreadAttempts,
    /// Wake-up times of timers set by tasks that slept here: the menu governor's "next timer".
    pub timers: Vec<TimeNs>,
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
    /// What the run never changes; shared so that loops over the layout can run while the
    /// state changes, and so that a replay reads the same facts.
    pub(crate) machine: std::rc::Rc<Machine>,
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
    pub(crate) ramps: Vec<crate::hw::powernv::Ramp>,
    /// The idle governor (menu), with its per-CPU history.
    pub(crate) idle_governor: Box<dyn crate::hw::cpuidle::IdleGovernor>,
    /// Frequency-invariant PELT: the machine's setting until out-of-range counter ratios
    /// switch it off for good.
    pub(crate) invariant: bool,
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
        let machine = std::rc::Rc::new(Machine::new(plat, &gov_cfg, gov_info)?);
        let plat = &machine.plat;
        let (kernel, invariant) = (machine.kernel, machine.invariant);
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
                queue_min_vruntime: u64::MAX,
                queue_min_stale: false,
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
                avg_idle_ns: crate::sched::AVG_IDLE_MAX_NS,
                util_changed: false,
                nr_iowait: 0,
                iowait_ns: 0,
                iowait_mark: 0,
                spread: Default::default(),
                timers: Vec::new(),
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
        let policies: Vec<Policy> = machine.tables.iter().map(|table| Policy::new(table)).collect();
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
        let (tables, tick_ns, pelt_shift) = (&machine.tables, machine.tick_ns, machine.pelt_shift);
        let hetero = crate::sched::capacity::Hetero::new(
            plat,
            tables,
            crate::sched::capacity::FitsRule::new(gov_cfg.values.get_u64("fits"), tick_ns, 10 - pelt_shift),
            crate::sched::capacity::EasInputs {
                knob_on: gov_cfg.values.get("eas") != 0.0,
                governor_enables_eas: gov_info.enables.eas,
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
            ramps: vec![crate::hw::powernv::Ramp::default(); plat.policies.len()],
            idle_governor: crate::hw::cpuidle::for_run(plat.ncpus()),
            invariant,
            cpus,
            cores,
            domains,
            policies,
            packages,
            tasks: Vec::new(),
            governors,
            gov_wants_util,
            programs: workload.programs(plat),
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
            llc_idle: LlcIdle::all_idle(plat),
            governor_name: gov_cfg.spec.canonical(),
            workload_name,
            seed: cfg.seed,
            hetero,
            machine,
        };
        let specs = sim.workload.tasks(&sim.machine.plat);
        crate::workload::validate_programs(&sim.workload_name, &specs, &sim.programs, sim.workload.devices().len())?;
        let background = if sim.kthreads.0 > 0.0 { sim.machine.plat.ncpus() } else { 0 };
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
        let specs = self.workload.tasks(&self.machine.plat);
        let specs = self.with_start_phases(specs);
        let (hz, us) = self.kthreads;
        let background = crate::workload::kthreads(&self.machine.plat, hz, us, &mut self.background_rng);
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
        &self.machine.plat.policies[policy].cpus
    }

    /// A policy's frequency table as its driver gives it (kHz, ascending).
    pub fn policy_table_khz(&self, policy: usize) -> &[u32] {
        &self.machine.tables[policy]
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
        let policy = self.machine.plat.cpus[cpu].policy;
        self.with_governor(policy, |g, ctx| g.util_update(ctx, cpu, flags));
    }

    pub fn now(&self) -> TimeNs {
        self.q.now()
    }
}

/// A policy of the running simulation, as its governor sees it.
pub struct LivePolicy<'a> {
    sim: &'a mut Sim,
    policy: usize,
}

impl PolicyCtx for LivePolicy<'_> {
    fn facts(&self) -> PolicyFacts<'_> {
        let sim = &*self.sim;
        PolicyFacts {
            machine: &sim.machine,
            policy: self.policy,
            limits: &sim.policies[self.policy],
            invariant: sim.invariant,
        }
    }
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
            cap_orig: self.sim.machine.plat.cpus[cpu].cap_orig,
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
        let base = self.sim.machine.plat.cluster_of_cpu(cpu).frequency.base_khz as u64;
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
        let facts = self.facts();
        let (min_khz, max_khz) = (facts.min_khz(), facts.max_khz());
        let (target, f) = facts.target(khz, relation);
        if facts.calls_driver(target, f) {
            self.sim.set_policy_freq(self.policy, f);
        }
        let hw_khz = {
            let domain = self.sim.machine.plat.policies[self.policy].domain;
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
