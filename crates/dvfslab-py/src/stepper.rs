//! A simulation stepped from outside, one decision interval at a time, for a controller that
//! picks the frequency of some policies itself (`dvfslab.gym.DvfsEnv`). Each policy's governor
//! is a [`Stepped`] one: it records what a governor could see at every decision time and, on
//! the policies the controller does not drive, runs a built-in governor in between. The last
//! policy to report at a decision time pauses the run so the controller can act.

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::rc::Rc;

use dvfslab_sim::governor::{CpuSignals, Governor, GovernorConfig, PolicyCtx, PolicyFacts, Relation, UpdateFlags};
use dvfslab_sim::sim::Advance;
use dvfslab_sim::{Platform, Sim, SimConfig};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// What the governors saw at the last decision, per CPU and per policy.
#[derive(Default)]
struct Seen {
    util: Vec<f64>,
    idle: Vec<f64>,
    busy_s: Vec<f64>,
    opp: Vec<usize>,
    cur_khz: Vec<u32>,
    /// Policies that reported at the current decision time.
    reported: usize,
}

/// How a policy runs until the controller's first decision.
#[derive(Clone, Copy)]
enum Start {
    /// Under the built-in governor, as the policies the controller does not drive.
    Governor,
    /// At this frequency (kHz), asked at the start.
    Khz(u32),
}

/// A policy's governor in a stepped run: a built-in governor (`inner`) runs it while the
/// controller does not (always, on a policy it does not drive; until the first decision, on
/// one it drives and starts under the built-in governor); at every decision time it reports.
struct Stepped {
    policy: usize,
    policies: usize,
    period_ns: u64,
    next_decision_ns: u64,
    controlled: bool,
    start: Start,
    inner: Option<Box<dyn Governor>>,
    /// When the built-in governor's own timer is due (it arms it through [`Shared`]).
    inner_timer_ns: Option<u64>,
    last_busy_ns: Vec<u64>,
    seen: Rc<RefCell<Seen>>,
}

impl Stepped {
    /// Run `f` on the built-in governor, if there is one, then arm the one timer a policy has
    /// at the earlier of the decision time and the built-in governor's timer.
    fn with_inner(&mut self, ctx: &mut dyn PolicyCtx, f: impl FnOnce(&mut dyn Governor, &mut dyn PolicyCtx)) {
        if let Some(inner) = self.inner.as_mut() {
            let mut shared = Shared { ctx, timer_at_ns: &mut self.inner_timer_ns };
            f(inner.as_mut(), &mut shared);
        }
    }

    fn arm(&self, ctx: &mut dyn PolicyCtx) {
        let due = self.inner_timer_ns.map_or(self.next_decision_ns, |t| t.min(self.next_decision_ns));
        ctx.arm_timer(due.saturating_sub(ctx.now_ns()));
    }

    fn report(&mut self, ctx: &mut dyn PolicyCtx) {
        let mut seen = self.seen.borrow_mut();
        for (i, &c) in ctx.cpus().iter().enumerate() {
            let signals = ctx.cpu_signals(c);
            let busy = ctx.cpu_busy_ns(c);
            let busy_share = (busy - self.last_busy_ns[i]) as f64 / self.period_ns as f64;
            self.last_busy_ns[i] = busy;
            seen.util[c] = (signals.util_avg as f64 / signals.cap_orig.max(1) as f64).min(1.0);
            seen.busy_s[c] = (busy_share * self.period_ns as f64 / 1e9).max(0.0);
            seen.idle[c] = (1.0 - busy_share).clamp(0.0, 1.0);
        }
        let cur = ctx.cur_khz();
        seen.cur_khz[self.policy] = cur;
        seen.opp[self.policy] = ctx.table_khz().iter().position(|&f| f >= cur).unwrap_or(0);
        seen.reported += 1;
        if seen.reported == self.policies {
            seen.reported = 0;
            ctx.pause();
        }
    }
}

impl Governor for Stepped {
    fn start(&mut self, ctx: &mut dyn PolicyCtx) {
        self.last_busy_ns = ctx.cpus().iter().map(|&c| ctx.cpu_busy_ns(c)).collect();
        self.next_decision_ns = ctx.now_ns() + self.period_ns;
        if let (true, Start::Khz(khz)) = (self.controlled, self.start) {
            ctx.request_khz(khz, Relation::L);
        }
        self.with_inner(ctx, |g, c| g.start(c));
        self.arm(ctx);
    }

    fn timer(&mut self, ctx: &mut dyn PolicyCtx) {
        let now = ctx.now_ns();
        if self.inner_timer_ns.is_some_and(|t| t <= now) {
            self.inner_timer_ns = None;
            self.with_inner(ctx, |g, c| g.timer(c));
        }
        if self.next_decision_ns <= now {
            self.next_decision_ns += self.period_ns;
            if self.controlled {
                // From the first decision on, the controller drives this policy.
                self.inner = None;
                self.inner_timer_ns = None;
            }
            self.report(ctx);
        }
        self.arm(ctx);
    }

    fn wants_util_updates(&self) -> bool {
        self.inner.as_ref().is_some_and(|g| g.wants_util_updates())
    }

    fn util_update(&mut self, ctx: &mut dyn PolicyCtx, cpu: usize, flags: UpdateFlags) {
        if self.inner.is_none() {
            return;
        }
        let before = self.inner_timer_ns;
        self.with_inner(ctx, |g, c| g.util_update(c, cpu, flags));
        if self.inner_timer_ns != before {
            self.arm(ctx);
        }
    }

    fn dvfs_headroom(&self, actual: u64, cap: u64) -> Option<u64> {
        self.inner.as_ref().and_then(|g| g.dvfs_headroom(actual, cap))
    }
}

/// The policy as the built-in governor inside a [`Stepped`] one sees it: everything is the
/// policy's, but its timer is kept apart, since the policy has one timer for both.
struct Shared<'a> {
    ctx: &'a mut dyn PolicyCtx,
    timer_at_ns: &'a mut Option<u64>,
}

impl PolicyCtx for Shared<'_> {
    fn facts(&self) -> PolicyFacts<'_> {
        self.ctx.facts()
    }
    fn now_ns(&self) -> u64 {
        self.ctx.now_ns()
    }
    fn cpus(&self) -> &[usize] {
        self.ctx.cpus()
    }
    fn min_khz(&self) -> u32 {
        self.ctx.min_khz()
    }
    fn max_khz(&self) -> u32 {
        self.ctx.max_khz()
    }
    fn cur_khz(&self) -> u32 {
        self.ctx.cur_khz()
    }
    fn table_khz(&self) -> &[u32] {
        self.ctx.table_khz()
    }
    fn cap_orig(&self, cpu: usize) -> u64 {
        self.ctx.cap_orig(cpu)
    }
    fn cpu_signals(&self, cpu: usize) -> CpuSignals {
        self.ctx.cpu_signals(cpu)
    }
    fn kernel(&self) -> dvfslab_sim::kernel::KernelVersion {
        self.ctx.kernel()
    }
    fn default_transition_delay_us(&self) -> u64 {
        self.ctx.default_transition_delay_us()
    }
    fn cpu_nr_running(&self, cpu: usize) -> u64 {
        self.ctx.cpu_nr_running(cpu)
    }
    fn cpu_tasks(&self, cpu: usize) -> Vec<dvfslab_sim::governor::TaskSignals> {
        self.ctx.cpu_tasks(cpu)
    }
    fn energy_so_far_j(&self) -> Option<f64> {
        self.ctx.energy_so_far_j()
    }
    fn time_in_state_ns(&self) -> Vec<(u32, u64)> {
        self.ctx.time_in_state_ns()
    }
    fn policy_cur_khz(&self, policy: usize) -> Option<u32> {
        self.ctx.policy_cur_khz(policy)
    }
    fn cpu_busy_ns(&self, cpu: usize) -> u64 {
        self.ctx.cpu_busy_ns(cpu)
    }
    fn cpu_iowait_ns(&self, cpu: usize) -> u64 {
        self.ctx.cpu_iowait_ns(cpu)
    }
    fn cpu_identity(&self) -> (dvfslab_sim::hw::platform::Vendor, Option<dvfslab_sim::hw::platform::CpuIdFile>) {
        self.ctx.cpu_identity()
    }
    fn cpu_counters(&mut self, cpu: usize) -> (u64, u64, u64) {
        self.ctx.cpu_counters(cpu)
    }
    fn cpuinfo_khz(&self) -> (u32, u32, u32) {
        self.ctx.cpuinfo_khz()
    }
    fn cpuinfo_max_khz(&self) -> u32 {
        self.ctx.cpuinfo_max_khz()
    }
    fn transition_latency_ns(&self) -> Option<u64> {
        self.ctx.transition_latency_ns()
    }
    fn this_cpu_can_update(&self, flags: UpdateFlags) -> bool {
        self.ctx.this_cpu_can_update(flags)
    }
    fn tick_ns(&self) -> u64 {
        self.ctx.tick_ns()
    }
    fn invariant(&self) -> bool {
        self.ctx.invariant()
    }
    fn pelt_multiplier(&self) -> u64 {
        self.ctx.pelt_multiplier()
    }
    fn explaining(&self) -> bool {
        self.ctx.explaining()
    }
    fn explain(&mut self, inputs: &[(&'static str, f64)]) {
        self.ctx.explain(inputs)
    }
    fn explain_more(&mut self, inputs: &[(&'static str, f64)]) {
        self.ctx.explain_more(inputs)
    }
    fn resolve_freq(&self, khz: u32) -> u32 {
        self.ctx.resolve_freq(khz)
    }
    fn request_khz(&mut self, khz: u32, relation: Relation) {
        self.ctx.request_khz(khz, relation)
    }
    fn arm_timer(&mut self, delay_ns: u64) {
        *self.timer_at_ns = Some(self.ctx.now_ns() + delay_ns);
    }
    fn fail(&mut self, error: dvfslab_sim::SimError) {
        self.ctx.fail(error)
    }
}

/// A simulation stepped one decision interval at a time (`step(opp_indexes)`).
#[pyclass(unsendable, module = "dvfslab._core")]
pub struct SteppedSim {
    sim: Option<Sim>,
    seen: Rc<RefCell<Seen>>,
    tables: Vec<Vec<u32>>,
    policy_cpus: Vec<Vec<usize>>,
    controlled: Vec<usize>,
    energy_j: f64,
    policy_energy_j: Vec<f64>,
    now_s: f64,
    truncated: bool,
    responses_seen: usize,
    responses_s: Vec<f64>,
    result_json: Option<String>,
}

#[pymethods]
impl SteppedSim {
    /// Build and start the run; every `decision_ns` the controller acts (`step`) on the
    /// policies `controlled` (default: all). `governor` is the built-in governor spec of the
    /// others, with the run's system settings (kernel=, invariant=...). Until the first
    /// decision a controlled policy runs at its table entry `start_opp[i]`, or under the
    /// built-in governor when `start_opp` is None.
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (platform_json, platform_source, governor, workload, decision_ns, *, duration_ns=None, seed=0, controlled=None, start_opp=None))]
    fn new(
        py: Python<'_>,
        platform_json: &str,
        platform_source: &str,
        governor: &str,
        workload: &str,
        decision_ns: u64,
        duration_ns: Option<u64>,
        seed: u64,
        controlled: Option<Vec<usize>>,
        start_opp: Option<Vec<usize>>,
    ) -> PyResult<SteppedSim> {
        let value_error = |m: String| pyo3::exceptions::PyValueError::new_err(m);
        if decision_ns == 0 {
            return Err(value_error("decision_ms must be > 0".to_string()));
        }
        let cfg = SimConfig::new(governor, workload).duration_ns(duration_ns).seed(seed);
        let to_py = |e| crate::to_py(py, e);
        let plat = Platform::from_json(platform_json, platform_source).map_err(to_py)?;
        let (gov_cfg, info) = GovernorConfig::parse(governor).map_err(to_py)?;
        let mut sim = Sim::new(plat, &cfg).map_err(to_py)?;
        let (ncpus, npol) = (sim.cpu_count(), sim.policy_count());
        let controlled = controlled.unwrap_or_else(|| (0..npol).collect());
        if let Some(&p) = controlled.iter().find(|&&p| p >= npol) {
            return Err(value_error(format!("policies: no policy {p} (the platform has {npol})")));
        }
        let tables: Vec<Vec<u32>> = (0..npol).map(|p| sim.policy_table_khz(p).to_vec()).collect();
        let policy_cpus: Vec<Vec<usize>> = (0..npol).map(|p| sim.policy_cpus(p).to_vec()).collect();
        let mut start = vec![Start::Governor; npol];
        if let Some(opp) = &start_opp {
            if opp.len() != controlled.len() {
                return Err(value_error(format!(
                    "start_opp: expected one OPP index per controlled policy ({}), got {}",
                    controlled.len(),
                    opp.len()
                )));
            }
            for (&p, &i) in controlled.iter().zip(opp) {
                let Some(&khz) = tables[p].get(i) else {
                    return Err(value_error(format!(
                        "start_opp: policy {p}: OPP index {i} is not in its table of {}",
                        tables[p].len()
                    )));
                };
                start[p] = Start::Khz(khz);
            }
        }
        let seen = Rc::new(RefCell::new(Seen {
            util: vec![0.0; ncpus],
            idle: vec![1.0; ncpus],
            busy_s: vec![0.0; ncpus],
            opp: vec![0; npol],
            cur_khz: vec![0; npol],
            reported: 0,
        }));
        let shared = seen.clone();
        sim.replace_governors(&format!("controlled:{governor}"), |p| {
            let driven = controlled.contains(&p);
            let runs_builtin = !(driven && matches!(start[p], Start::Khz(_)));
            Box::new(Stepped {
                policy: p,
                policies: npol,
                period_ns: decision_ns,
                next_decision_ns: 0,
                controlled: driven,
                start: start[p],
                inner: runs_builtin.then(|| (info.build)(gov_cfg.values_for_policy(policy_cpus[p][0]))),
                inner_timer_ns: None,
                last_busy_ns: Vec::new(),
                seen: shared.clone(),
            })
        });
        sim.begin();
        let mut stepped = SteppedSim {
            sim: Some(sim),
            seen,
            tables,
            policy_cpus,
            controlled,
            energy_j: 0.0,
            policy_energy_j: vec![0.0; npol],
            now_s: 0.0,
            truncated: false,
            responses_seen: 0,
            responses_s: Vec::new(),
            result_json: None,
        };
        stepped.run_to_decision(py)?;
        Ok(stepped)
    }

    /// Each policy's frequency table (kHz), ascending.
    #[getter]
    fn tables_khz(&self) -> Vec<Vec<u32>> {
        self.tables.clone()
    }

    /// Each policy's CPUs.
    #[getter]
    fn policy_cpus(&self) -> Vec<Vec<usize>> {
        self.policy_cpus.clone()
    }

    /// Ask each controlled policy for the table entry `opp[i]` and run to the next decision.
    /// Returns whether the run ended (then `result_json` holds its result).
    fn step(&mut self, py: Python<'_>, opp: Vec<usize>) -> PyResult<bool> {
        let Some(sim) = self.sim.as_mut() else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err("the run has ended: reset the environment"));
        };
        if opp.len() != self.controlled.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "expected one OPP index per policy ({}), got {}",
                self.controlled.len(),
                opp.len()
            )));
        }
        for (&p, &i) in self.controlled.iter().zip(&opp) {
            let Some(&khz) = self.tables[p].get(i) else {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "policy {p}: OPP index {i} is not in its table of {}",
                    self.tables[p].len()
                )));
            };
            sim.request_khz(p, khz);
        }
        self.run_to_decision(py)
    }

    /// What the controller sees now: {"time_s", "util", "idle", "busy_s", "opp", "cur_khz",
    /// "energy_j" (since the start), "policy_energy_j", "responses_s" (the workload's
    /// responses that ended in the last interval), "truncated" (the run reached its duration)}.
    fn observe<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let seen = self.seen.borrow();
        let out = PyDict::new(py);
        out.set_item("time_s", self.now_s)?;
        out.set_item("util", &seen.util)?;
        out.set_item("idle", &seen.idle)?;
        out.set_item("busy_s", &seen.busy_s)?;
        out.set_item("opp", &seen.opp)?;
        out.set_item("cur_khz", &seen.cur_khz)?;
        out.set_item("energy_j", self.energy_j)?;
        out.set_item("policy_energy_j", &self.policy_energy_j)?;
        out.set_item("responses_s", &self.responses_s)?;
        out.set_item("truncated", self.truncated)?;
        Ok(out)
    }

    /// The run's result JSON once it ended, else None.
    #[getter]
    fn result_json(&self) -> Option<String> {
        self.result_json.clone()
    }
}

impl SteppedSim {
    fn run_to_decision(&mut self, py: Python<'_>) -> PyResult<bool> {
        let sim = self.sim.as_mut().expect("a run under way");
        let advanced = sim.advance(&mut |_| ControlFlow::Continue(())).map_err(|e| crate::to_py(py, e))?;
        self.energy_j = sim.energy_so_far_j();
        for (p, e) in self.policy_energy_j.iter_mut().enumerate() {
            *e = sim.policy_energy_so_far_j(p);
        }
        self.now_s = sim.now_ns() as f64 / 1e9;
        // The responses are cleared when the warm-up ends: then all of them are new.
        let responses = &sim.run_stats().responses_ns;
        if responses.len() < self.responses_seen {
            self.responses_seen = 0;
        }
        self.responses_s = responses[self.responses_seen..].iter().map(|&r| r as f64 / 1e9).collect();
        self.responses_seen = responses.len();
        if advanced == Advance::Ended {
            self.truncated = sim.now_ns() >= sim.end_ns();
            let sim = self.sim.take().expect("a run under way");
            let result = sim.summary(0.0);
            self.result_json = Some(serde_json::to_string(&result.summary).expect("a result serialises"));
            return Ok(true);
        }
        Ok(false)
    }
}
