//! One simulation: a platform, a governor configuration, a workload and a seed, run as a
//! discrete-event simulation. `Sim` owns the event loop and the run's parts: the `Machine`
//! (what never changes), the hardware (`Hw`, in `hw/`: frequencies, power, counters, idle
//! states), the scheduler (`Sched`, in `sched/`: run-queues, PELT, placement), the cpufreq core
//! (`Cpufreq`, in `governor/core.rs`), the workload and the run's own state (`run.rs`).

mod capacity;
mod eas;
mod fork;
mod hardware;
mod idle;
mod interpret;
mod load_balance;
mod objects;
mod pipe;
mod rcu;
mod run;
mod scheduling;
mod softirq;
mod summary;
mod tcp_stream;
#[cfg(test)]
pub(crate) mod test_support;
mod unix_stream;
mod vcpu_pack;
mod wake;
mod wake_affine;

use std::ops::ControlFlow;

use rand::SeedableRng;
use rand_pcg::Pcg64;

use crate::engine::{Event, EventQueue, TimeNs};
use crate::error::{Result, SimError};
use crate::governor::core::Cpufreq;
use crate::governor::{
    CpuSignals, Governor, GovernorConfig, PolicyCtx, PolicyFacts, Relation, TaskSignals, UpdateFlags,
};
use crate::hw::platform::Platform;
use crate::hw::Hw;
use crate::machine::Machine;
use crate::observe::{Decision, Timeline};
use crate::sched::task::MAX_TASKS;
use crate::sched::Sched;
use crate::workload::{RunStats, Workload};
use run::{Run, Work};

/// The event queue is swept of stale events when it holds at least this many, and then when
/// it has doubled since the last sweep: each sweep is O(n), so O(1) per event. A busy run
/// re-arms a third of its run segments before they end (Haswell pgbench-ro, 48 clients: 0.9 M
/// stale of 2.8 M pops), and the stale entries deepen the heap every pop walks; sweeping from
/// 256 rather than 1024 made such runs 4–6% faster, with the same pop order.
const QUEUE_SWEEP_MIN: usize = 256;

/// Mixed into the seed for the background kernel threads' random stream.
const BACKGROUND_STREAM: u64 = 0x6b77_6f72_6b65_7273;
/// Mixed into the seed for the scheduler's own stream (`sched_rng`).
const SCHED_STREAM: u64 = 0x7363_6865_645f_726e;
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

pub struct Sim {
    /// What the run never changes; shared so that loops over the layout can run while the
    /// state changes, and so that a replay reads the same facts.
    pub(crate) machine: std::rc::Rc<Machine>,
    pub(crate) q: EventQueue,
    pub(crate) hw: Hw,
    pub(crate) sched: Sched,
    pub(crate) cpufreq: Cpufreq,
    pub(crate) work: Work,
    pub(crate) run: Run,
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
        let machine = std::rc::Rc::new(crate::governor::core::machine_for(plat, &gov_cfg, gov_info)?);
        let plat = &machine.plat;
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

        if common.autogroup && !crate::sched::group::modelled(machine.kernel) {
            return Err(SimError::config(
                "workload",
                "autogroup",
                format!(
                    "task groups are modelled for kernels 6.14 to 6.18 (whose reweight_entity re-places a group's \
                     entity as a joining one), not kernel={}",
                    machine.kernel
                ),
            ));
        }
        let hetero = crate::sched::capacity::Hetero::new(
            plat,
            &machine.tables,
            crate::sched::capacity::FitsRule::new(
                gov_cfg.values.get_u64("fits"),
                machine.tick_ns,
                10 - machine.pelt_shift,
            ),
            crate::sched::capacity::EasInputs {
                knob_on: gov_cfg.values.get("eas") != 0.0,
                governor_enables_eas: gov_info.enables.eas,
                invariant: machine.invariant,
                kernel: machine.kernel,
            },
            cfg.explain,
        );
        let mut sim = Sim {
            q: EventQueue::default(),
            hw: Hw::new(&machine),
            sched: Sched::new(&machine, hetero, cfg.seed ^ SCHED_STREAM),
            cpufreq: Cpufreq::new(&machine, &gov_cfg, gov_info, cfg.explain),
            work: Work {
                programs: workload.programs(plat),
                objects: crate::sched::objects::Objects::with_devices(workload.devices()),
                workload,
                stats: RunStats::default(),
                rng: Pcg64::seed_from_u64(cfg.seed),
                background_rng: Pcg64::seed_from_u64(cfg.seed ^ BACKGROUND_STREAM),
                variation_rng: Pcg64::seed_from_u64(cfg.seed ^ VARIATION_STREAM),
                phase_ns: common.phase_ns,
                work_jitter: common.work_jitter,
                allowed_cpus: common.allowed_cpus(plat.cpus.len())?,
                kthreads: crate::workload::background_kthreads(plat, &common),
                rcu: Default::default(),
                softirq: Default::default(),
                program_nesting: 0,
                deferred_programs: Vec::new(),
                workload_name,
            },
            run: Run {
                end_ns: duration_ns,
                warmup_ns,
                started: false,
                failure: None,
                pause_requested: false,
                sweep_at: QUEUE_SWEEP_MIN,
                events: 0,
                progress_ns: 0,
                stalled_reports: 0,
                timeline: cfg.timeline.then(Timeline::default),
                pending_wakeup: None,
                seed: cfg.seed,
            },
            machine,
        };
        sim.hw.idle_log = cfg.explain.then(Vec::new);
        let specs = sim.work.workload.tasks(&sim.machine.plat);
        crate::workload::validate_programs(
            &sim.work.workload_name,
            &specs,
            &sim.work.programs,
            sim.work.workload.devices().len(),
        )?;
        let background = if sim.work.kthreads.0 > 0.0 { sim.machine.plat.ncpus() } else { 0 };
        if specs.len() + background > MAX_TASKS {
            return Err(SimError::config(
                format!("workload '{}'", sim.work.workload_name),
                "tasks",
                format!(
                    "{} tasks{} exceed the limit of {MAX_TASKS} tasks a run may have",
                    specs.len(),
                    if background > 0 { format!(" and {background} kernel threads") } else { String::new() }
                ),
            ));
        }
        sim.sched.groups = common.autogroup;
        sim.sched.charges = cfg.timeline.then(Vec::new);
        sim.init_hardware();
        Ok(sim)
    }

    /// Every CPU's frequency at time 0 in the timeline, before any change, so that a trace
    /// says each CPU's frequency from its start.
    fn trace_initial_frequencies(&mut self) {
        let khz: Vec<u32> = (0..self.sched.cpus.len()).map(|cpu| self.hw.cpu_khz(&self.machine, cpu)).collect();
        if let Some(tl) = self.run.timeline(&mut self.sched.charges) {
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

    /// Stop a run whose events no longer move its clock: twice [`PROGRESS_EVERY_EVENTS`]
    /// events at one instant is no machine's behaviour but a model error, which would
    /// otherwise spin for ever.
    fn check_clock_moves(&mut self, now_ns: TimeNs) -> Result<()> {
        if now_ns != self.run.progress_ns {
            self.run.progress_ns = now_ns;
            self.run.stalled_reports = 0;
            return Ok(());
        }
        self.run.stalled_reports += 1;
        if self.run.stalled_reports < 2 {
            return Ok(());
        }
        Err(SimError::Simulation(format!(
            "the simulated clock stopped at {:.6} s: {} events without time passing (a model \
             error; please report it with the run's platform, governor, workload and seed)",
            now_ns as f64 * 1e-9,
            2 * PROGRESS_EVERY_EVENTS
        )))
    }

    /// Start the run: the governors, the workload's tasks and the run's own events.
    pub fn begin(&mut self) {
        use crate::workload::kthreads;
        self.trace_initial_frequencies();
        for p in 0..self.cpufreq.policies.len() {
            self.with_governor(p, |g, ctx| g.start(ctx));
        }
        self.run.started = true;
        self.hw.domains.iter_mut().for_each(|d| d.request_unsettled = true);
        let specs = self.work.workload.tasks(&self.machine.plat);
        let specs = self.with_start_phases(specs);
        let specs = self.with_allowed_cpus(specs);
        let specs = self.with_groups(specs);
        let (hz, us) = self.work.kthreads;
        let background = crate::workload::kthreads(&self.machine.plat, hz, us, &mut self.work.background_rng);
        // The block layer's workers, where the workload's tasks plug requests.
        let programs = || specs.iter().map(|s| &s.program).chain(self.work.programs.iter());
        let kblockd = if kthreads::plugs_requests(programs()) {
            kthreads::kblockd_workers(&self.machine.plat)
        } else {
            Vec::new()
        };
        // ext4's end-I/O worker, where the workload's tasks write to ext4 and the kernel
        // converts the written extents in a workqueue.
        let end_io = if kthreads::ends_writes_in_worker(programs()) {
            kthreads::end_io_worker(&self.machine.plat, self.machine.kernel)
        } else {
            None
        };
        self.work.objects.end_io.present = end_io.is_some();
        // RCU's grace-period kthread joins at the first callback of a workload that forks.
        self.work.rcu.enabled = !self.work.programs.is_empty();
        for spec in specs.into_iter().chain(background).chain(kblockd).chain(end_io) {
            self.spawn(spec);
        }
        self.enable_ksoftirqd();
        self.run_deferred_programs();
        self.q.push(self.run.end_ns, Event::End);
        if self.run.warmup_ns > 0 {
            self.q.push(self.run.warmup_ns, Event::WarmupEnd);
        }
        self.q.push(crate::hw::RAPL_SAMPLE_NS.min(self.run.end_ns), Event::RaplSample);
    }

    /// Handle events until the run ends, or until a governor asked for a pause
    /// ([`PolicyCtx::pause`]: a controller outside the simulation decides next).
    pub fn advance(&mut self, hook: &mut dyn FnMut(Progress) -> ControlFlow<()>) -> Result<Advance> {
        while let Some((_, ev)) = self.q.pop() {
            if !self.is_live(&ev) {
                continue;
            }
            self.run.events += 1;
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
                Event::IoComplete { dev, request } => self.io_complete(dev, request),
                Event::ReschedIpi { cpu, .. } | Event::ReturnToUser { cpu, .. } => self.resched_ipi(cpu as usize),
                Event::SoftirqEnd { cpu } => self.softirq_end(cpu as usize),
                Event::RaplSample => {
                    self.hw.rapl_sample(&self.machine, &self.q);
                    let next = self.q.now() + crate::hw::RAPL_SAMPLE_NS;
                    if next < self.run.end_ns {
                        self.q.push(next, Event::RaplSample);
                    }
                }
            }
            self.run_deferred_programs();
            if let Some(e) = self.run.failure.take() {
                return Err(e);
            }
            if self.run.events.is_multiple_of(PROGRESS_EVERY_EVENTS) {
                let progress = Progress { now_ns: self.q.now(), end_ns: self.run.end_ns };
                self.check_clock_moves(progress.now_ns)?;
                if hook(progress).is_break() {
                    return Err(SimError::Simulation(format!(
                        "stopped at {:.3} s of {:.3} s simulated",
                        progress.now_ns as f64 * 1e-9,
                        progress.end_ns as f64 * 1e-9
                    )));
                }
            }
            if self.sched.live_tasks == 0 && !self.sched.tasks.is_empty() {
                return Ok(Advance::Ended);
            }
            if self.q.len() >= self.run.sweep_at {
                let mut q = std::mem::take(&mut self.q);
                q.retain(|e| self.is_live(e));
                self.q = q;
                self.run.sweep_at = QUEUE_SWEEP_MIN.max(2 * self.q.len());
            }
            if std::mem::take(&mut self.run.pause_requested) {
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
        summary::summarise(&self, end, wall_s)
    }

    /// Energy the packages drew so far, the warm-up included (J).
    pub fn energy_so_far_j(&mut self) -> f64 {
        (0..self.hw.packages.len())
            .map(|p| self.hw.package_energy_j(&self.machine, &self.q, p) + self.hw.packages[p].energy_before_warmup_j)
            .sum()
    }

    /// Simulated time now (ns).
    pub fn now_ns(&self) -> TimeNs {
        self.q.now()
    }

    /// Ask for `khz` on `policy` now, as its governor would (the cpufreq core, then the driver).
    pub fn request_khz(&mut self, policy: usize, khz: u32) {
        self.with_governor(policy, |_, ctx| ctx.request_khz(khz, Relation::L));
    }

    /// The workload's tasks restricted to the CPUs its spec's `cpumask` allows, as `taskset`
    /// starts a command: those the workload pins itself keep their own CPUs.
    fn with_allowed_cpus(&self, specs: Vec<crate::workload::TaskSpec>) -> Vec<crate::workload::TaskSpec> {
        let Some(cpus) = &self.work.allowed_cpus else { return specs };
        specs.into_iter().map(|s| if s.attrs.affinity.is_some() { s } else { s.pinned(cpus.clone()) }).collect()
    }

    /// The workload's first tasks in their sessions' task groups, when the run has them
    /// (`autogroup`): the benchmark's command's session, and a group of its own for each task
    /// started in a session of its own (a daemon: `TaskSpec::own_session`).
    fn with_groups(&mut self, mut specs: Vec<crate::workload::TaskSpec>) -> Vec<crate::workload::TaskSpec> {
        if !self.sched.groups {
            return specs;
        }
        let command = self.sched.new_group();
        for spec in &mut specs {
            spec.attrs.group = Some(if spec.own_session { self.sched.new_group() } else { command });
        }
        specs
    }

    /// The workload's first tasks, each delayed by its start phase (`phase_us`): uniform in
    /// `[0, phase_ns)`, drawn in task order.
    fn with_start_phases(&mut self, mut specs: Vec<crate::workload::TaskSpec>) -> Vec<crate::workload::TaskSpec> {
        use rand::Rng;
        if self.work.phase_ns > 0.0 {
            for spec in &mut specs {
                spec.start_ns =
                    spec.start_ns.saturating_add(self.work.variation_rng.gen_range(0.0..self.work.phase_ns) as TimeNs);
            }
        }
        specs
    }

    /// Whether `ev` still stands: a tokened event whose owner has moved on (a re-armed tick, a
    /// run segment cut short, a cancelled timer or transition) is stale and dropped.
    fn is_live(&self, ev: &Event) -> bool {
        match *ev {
            Event::SegmentEnd { cpu, token } => self.sched.cpus[cpu as usize].seg_token == token,
            Event::Tick { cpu, token } => self.sched.cpus[cpu as usize].tick_token == token,
            Event::TimerWake { task, token } => self.sched.tasks[task as usize].timer_token == token,
            Event::FreqApply { domain, token } => self.hw.domains[domain as usize].apply_token == token,
            Event::DriverTimer { policy, token } => self.hw.ramps[policy as usize].timer_token == token,
            Event::GovernorTimer { policy, token } => self.cpufreq.policies[policy as usize].timer_token == token,
            Event::ReschedIpi { cpu, token } | Event::ReturnToUser { cpu, token } => {
                self.sched.cpus[cpu as usize].switches == token
            }
            Event::End
            | Event::WarmupEnd
            | Event::PcuTick { .. }
            | Event::IoComplete { .. }
            | Event::SoftirqEnd { .. }
            | Event::RaplSample => true,
        }
    }

    /// The number of cpufreq policies, each with its governor.
    pub fn policy_count(&self) -> usize {
        self.cpufreq.governors.len()
    }

    /// The number of logical CPUs.
    pub fn cpu_count(&self) -> usize {
        self.sched.cpus.len()
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
        for (p, slot) in self.cpufreq.governors.iter_mut().enumerate() {
            *slot = Some(make(p));
        }
        self.cpufreq.gov_wants_util = self.cpufreq.governors.iter().flatten().any(|g| g.wants_util_updates());
        self.cpufreq.governor_name = name.to_string();
    }

    /// Call a policy's governor with a context; the governor is taken out for the call so it
    /// can use the simulation mutably.
    pub(crate) fn with_governor(&mut self, policy: usize, f: impl FnOnce(&mut dyn Governor, &mut dyn PolicyCtx)) {
        let Some(mut gov) = self.cpufreq.governors[policy].take() else { return };
        {
            let mut ctx = LivePolicy { sim: self, policy };
            f(gov.as_mut(), &mut ctx);
        }
        self.cpufreq.governors[policy] = Some(gov);
    }

    /// The scheduler's cpufreq hook (cpufreq_update_util).
    pub(crate) fn cpufreq_update_util(&mut self, cpu: usize, flags: UpdateFlags) {
        if !self.cpufreq.gov_wants_util {
            return;
        }
        let policy = self.machine.plat.cpus[cpu].policy;
        self.with_governor(policy, |g, ctx| g.util_update(ctx, cpu, flags));
    }

    pub fn now(&self) -> TimeNs {
        self.q.now()
    }

    /// The workload's measurements so far: responses and intervals (cleared when the warm-up
    /// ends), counters, work done.
    pub fn run_stats(&self) -> &crate::workload::RunStats {
        &self.work.stats
    }

    /// When the run ends at the latest (ns): its duration after the warm-up; it ends earlier
    /// when every task of the workload has exited.
    pub fn end_ns(&self) -> TimeNs {
        self.run.end_ns
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
            limits: &sim.cpufreq.policies[self.policy],
            invariant: sim.sched.invariant,
        }
    }
    fn now_ns(&self) -> TimeNs {
        self.sim.q.now()
    }
    fn cur_khz(&self) -> u32 {
        self.sim.cpufreq.policies[self.policy].cur_khz
    }
    fn cpu_signals(&self, cpu: usize) -> CpuSignals {
        let c = &self.sim.sched.cpus[cpu];
        CpuSignals {
            util_avg: self.sim.sched.cpu_util_avg_now(&self.sim.machine, &self.sim.q, cpu),
            util_est: c.util_est_sum,
            runnable_avg: c.avg.runnable_avg,
            cap_orig: self.sim.machine.plat.cpus[cpu].cap_orig,
            rt_runnable: self.sim.sched.rt_runnable(cpu),
            uclamp: self.sim.sched.rq_uclamp(cpu),
            idle_calls: c.idle_calls,
        }
    }
    fn cpu_nr_running(&self, cpu: usize) -> u64 {
        let c = &self.sim.sched.cpus[cpu];
        c.curr.is_some() as u64 + c.queue.len() as u64
    }
    fn cpu_tasks(&self, cpu: usize) -> Vec<TaskSignals> {
        let c = &self.sim.sched.cpus[cpu];
        let sim = &*self.sim;
        c.curr
            .iter()
            .chain(&c.queue)
            .map(|&t| TaskSignals {
                id: t,
                util_avg: sim.sched.task_util_avg_now(&sim.q, t),
                util_est: sim.sched.tasks[t].util_est.value(),
                uclamp: sim.sched.task_uclamp(t),
                running: c.curr == Some(t),
                rt: sim.sched.rt_prio(t).is_some(),
            })
            .collect()
    }
    /// Read without bringing the accounts up to now (which would split their sums and change
    /// the run's energy in its last bits): the account plus the time since at the same power.
    fn energy_so_far_j(&self) -> Option<f64> {
        let (sim, now) = (&*self.sim, self.sim.q.now());
        let mut cores: Vec<usize> =
            sim.machine.plat.policies[self.policy].cpus.iter().map(|&c| sim.machine.plat.cpus[c].core).collect();
        cores.sort_unstable();
        cores.dedup();
        Some(
            cores
                .iter()
                .map(|&k| &sim.hw.cores[k])
                .map(|c| c.energy_j + c.power_w * (now - c.since) as f64 * 1e-9)
                .sum(),
        )
    }
    fn time_in_state_ns(&self) -> Vec<(u32, u64)> {
        let d = &self.sim.hw.domains[self.sim.machine.plat.policies[self.policy].domain];
        let mut out = d.freq_ns.clone();
        let open = self.sim.q.now() - d.freq_since;
        match out.iter_mut().find(|(k, _)| *k == d.actual_khz) {
            Some((_, ns)) => *ns += open,
            None => out.push((d.actual_khz, open)),
        }
        out
    }
    fn policy_cur_khz(&self, policy: usize) -> Option<u32> {
        self.sim.cpufreq.policies.get(policy).map(|p| p.cur_khz)
    }
    fn cpu_busy_ns(&self, cpu: usize) -> u64 {
        let c = &self.sim.sched.cpus[cpu];
        c.busy_ns + if c.idle_state.is_none() { self.sim.q.now() - c.idle_since } else { 0 }
    }
    fn cpu_iowait_ns(&self, cpu: usize) -> u64 {
        self.sim.sched.cpus[cpu].iowait_ns_at(self.sim.q.now())
    }
    fn cpu_counters(&mut self, cpu: usize) -> (u64, u64, u64) {
        self.sim.sync_counters(cpu);
        let c = &self.sim.hw.counters[cpu];
        let base = self.sim.machine.plat.cluster_of_cpu(cpu).frequency.base_khz as u64;
        let tsc = (self.sim.q.now() as u128 * base as u128 / 1_000_000) as u64;
        (c.aperf as u64, c.mperf as u64, tsc)
    }
    fn explaining(&self) -> bool {
        self.sim.cpufreq.explain.is_some()
    }
    fn explain(&mut self, inputs: &[(&'static str, f64)]) {
        if self.sim.cpufreq.explain.is_some() {
            self.sim.cpufreq.pending_inputs.clear();
            self.sim.cpufreq.pending_inputs.extend_from_slice(inputs);
        }
    }
    fn explain_more(&mut self, inputs: &[(&'static str, f64)]) {
        if self.sim.cpufreq.explain.is_some() {
            self.sim.cpufreq.pending_inputs.extend_from_slice(inputs);
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
            let d = &self.sim.hw.domains[domain];
            d.pending_khz.unwrap_or(d.actual_khz)
        };
        let inputs = std::mem::take(&mut self.sim.cpufreq.pending_inputs);
        if let Some(log) = self.sim.cpufreq.explain.as_mut() {
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
        self.sim.run.failure.get_or_insert(error);
    }
    fn pause(&mut self) {
        self.sim.run.pause_requested = true;
    }
    fn arm_timer(&mut self, delay_ns: u64) {
        let pol = &mut self.sim.cpufreq.policies[self.policy];
        pol.timer_token = pol.timer_token.wrapping_add(1);
        let token = pol.timer_token;
        let at = self.sim.q.now() + delay_ns;
        self.sim.q.push(at, Event::GovernorTimer { policy: self.policy as u32, token });
    }
}
