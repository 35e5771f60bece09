//! A simulation stepped from outside, one decision interval at a time, for a controller that
//! picks every policy's frequency itself (`dvfslab.gym.DvfsEnv`): each policy's governor is a
//! [`Controlled`] one that, on its timer, records what a governor could see, and the last
//! policy's timer pauses the run so the controller can act.

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::rc::Rc;

use dvfslab_sim::governor::{Governor, PolicyCtx};
use dvfslab_sim::sim::Advance;
use dvfslab_sim::{Platform, Sim, SimConfig};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// What the controlled governors saw at the last decision, per CPU and per policy.
#[derive(Default)]
struct Seen {
    util: Vec<f64>,
    idle: Vec<f64>,
    busy_s: Vec<f64>,
    opp: Vec<usize>,
    cur_khz: Vec<u32>,
}

/// A governor that decides nothing: it reports on its timer and pauses the run at the last
/// policy, so that all policies have reported by then.
struct Controlled {
    policy: usize,
    last_policy: bool,
    period_ns: u64,
    last_busy_ns: Vec<u64>,
    seen: Rc<RefCell<Seen>>,
}

impl Governor for Controlled {
    fn start(&mut self, ctx: &mut dyn PolicyCtx) {
        self.last_busy_ns = ctx.cpus().iter().map(|&c| ctx.cpu_busy_ns(c)).collect();
        ctx.arm_timer(self.period_ns);
    }

    fn timer(&mut self, ctx: &mut dyn PolicyCtx) {
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
        drop(seen);
        ctx.arm_timer(self.period_ns);
        if self.last_policy {
            ctx.pause();
        }
    }
}

/// A simulation stepped one decision interval at a time (`step(opp_indexes)`).
#[pyclass(unsendable, module = "dvfslab._core")]
pub struct SteppedSim {
    sim: Option<Sim>,
    seen: Rc<RefCell<Seen>>,
    tables: Vec<Vec<u32>>,
    policy_cpus: Vec<Vec<usize>>,
    energy_j: f64,
    policy_energy_j: Vec<f64>,
    result_json: Option<String>,
}

#[pymethods]
impl SteppedSim {
    /// Build and start the run; every `decision_ns` the controller acts (`step`). `governor`
    /// gives the system settings (kernel=, invariant=...): its own decisions never run.
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (platform_json, platform_source, governor, workload, decision_ns, *, duration_ns=None, seed=0))]
    fn new(
        py: Python<'_>,
        platform_json: &str,
        platform_source: &str,
        governor: &str,
        workload: &str,
        decision_ns: u64,
        duration_ns: Option<u64>,
        seed: u64,
    ) -> PyResult<SteppedSim> {
        if decision_ns == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err("decision_ms must be > 0"));
        }
        let cfg = SimConfig::new(governor, workload).duration_ns(duration_ns).seed(seed);
        let to_py = |e| crate::to_py(py, e);
        let plat = Platform::from_json(platform_json, platform_source).map_err(to_py)?;
        let mut sim = Sim::new(plat, &cfg).map_err(to_py)?;
        let (ncpus, npol) = (sim.cpu_count(), sim.policy_count());
        let seen = Rc::new(RefCell::new(Seen {
            util: vec![0.0; ncpus],
            idle: vec![1.0; ncpus],
            busy_s: vec![0.0; ncpus],
            opp: vec![0; npol],
            cur_khz: vec![0; npol],
        }));
        let shared = seen.clone();
        sim.replace_governors(&format!("controlled:{governor}"), |p| {
            Box::new(Controlled {
                policy: p,
                last_policy: p + 1 == npol,
                period_ns: decision_ns,
                last_busy_ns: Vec::new(),
                seen: shared.clone(),
            })
        });
        let tables = (0..npol).map(|p| sim.policy_table_khz(p).to_vec()).collect();
        let policy_cpus = (0..npol).map(|p| sim.policy_cpus(p).to_vec()).collect();
        sim.begin();
        let mut stepped = SteppedSim {
            sim: Some(sim),
            seen,
            tables,
            policy_cpus,
            energy_j: 0.0,
            policy_energy_j: vec![0.0; npol],
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

    /// Ask each policy for the table entry `opp[p]` and run to the next decision. Returns
    /// whether the run ended (then `result_json` holds its result).
    fn step(&mut self, py: Python<'_>, opp: Vec<usize>) -> PyResult<bool> {
        let Some(sim) = self.sim.as_mut() else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err("the run has ended: reset the environment"));
        };
        if opp.len() != self.tables.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "expected one OPP index per policy ({}), got {}",
                self.tables.len(),
                opp.len()
            )));
        }
        for (p, &i) in opp.iter().enumerate() {
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
    /// "energy_j" (since the start), "policy_energy_j"}.
    fn observe<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let seen = self.seen.borrow();
        let out = PyDict::new(py);
        out.set_item("time_s", self.sim.as_ref().map_or(f64::NAN, |s| s.now_ns() as f64 / 1e9))?;
        out.set_item("util", &seen.util)?;
        out.set_item("idle", &seen.idle)?;
        out.set_item("busy_s", &seen.busy_s)?;
        out.set_item("opp", &seen.opp)?;
        out.set_item("cur_khz", &seen.cur_khz)?;
        out.set_item("energy_j", self.energy_j)?;
        out.set_item("policy_energy_j", &self.policy_energy_j)?;
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
        if advanced == Advance::Ended {
            let sim = self.sim.take().expect("a run under way");
            let result = sim.summary(0.0);
            self.result_json = Some(serde_json::to_string(&result.summary).expect("a result serialises"));
            return Ok(true);
        }
        Ok(false)
    }
}
