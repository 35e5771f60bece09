//! A governor written in Python (`dvfslab.Governor`), run by the simulator as any built-in
//! one: called on its own timer (`trigger = "sampling"`) or where schedutil is called
//! (`"scheduler"`), it sees a read-only [`Policy`] and returns a frequency in kHz, or None to
//! keep the current one. The request goes through the same cpufreq core and driver code as a
//! built-in governor's (resolved to the table with CPUFREQ_RELATION_L, within the limits).
//!
//! What `update` may return, and what becomes of it (the cpufreq core's rule, in kHz):
//!
//! ```text
//!   f = ceil(value)                        a float is rounded up: kHz are whole in the kernel
//!   f = clamp(f, min_khz, max_khz)         the policy's limits (cpufreq_driver_resolve_freq)
//!   f = min { t in table : t >= f }        CPUFREQ_RELATION_L: the lowest entry at or above
//! ```
//!
//! A value above the hardware's highest frequency (`cpuinfo_max_khz`) is clamped too, but with
//! a RuntimeWarning, once a run: 10^9 "kHz" is a frequency in Hz by mistake more often than a
//! wish for the top. Zero, a negative value, NaN or infinity stops the run.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use dvfslab_sim::governor::{Governor, PolicyCtx, Relation, UpdateFlags};
use dvfslab_sim::SimError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// What a governor can see of its policy at one call (cpufreq's view of the policy and the
/// scheduler's per-CPU signals), read-only. Per-CPU lists are in the order of `cpus`.
#[pyclass(frozen, module = "dvfslab")]
pub struct Policy {
    /// This policy's index among the machine's (ordered by first CPU), and its CPUs.
    #[pyo3(get)]
    index: usize,
    #[pyo3(get)]
    cpus: Vec<usize>,
    /// Simulated time now (s, and ns exactly).
    #[pyo3(get)]
    now_s: f64,
    #[pyo3(get)]
    now_ns: u64,
    /// The CPU whose scheduler event called the governor (trigger "scheduler"), else None
    /// (a timer: the sampling period or one the governor armed).
    #[pyo3(get)]
    cpu: Option<usize>,
    /// The scheduler callback's flags (cpufreq_update_util): a task that waited on I/O was
    /// enqueued; the callback runs on a CPU outside the policy; and whether a request made now
    /// reaches the driver (cpufreq_this_cpu_can_update). All False/False/True on a timer.
    #[pyo3(get)]
    iowait: bool,
    #[pyo3(get)]
    remote: bool,
    #[pyo3(get)]
    can_update: bool,
    /// Current frequency, limits and table (kHz), and the hardware's highest.
    #[pyo3(get)]
    cur_khz: u32,
    #[pyo3(get)]
    min_khz: u32,
    #[pyo3(get)]
    max_khz: u32,
    #[pyo3(get)]
    table_khz: Vec<u32>,
    #[pyo3(get)]
    cpuinfo_max_khz: u32,
    /// The simulated kernel version, "6.18".
    #[pyo3(get)]
    kernel: String,
    /// The cpufreq driver's name, and whether it resolves a request to a table entry
    /// (`resolve_khz`).
    #[pyo3(get)]
    driver: &'static str,
    resolves_in_table: bool,
    /// Whether PELT is frequency-invariant; the scheduler tick (ns); cpufreq's default
    /// transition delay (schedutil's default rate limit, us).
    #[pyo3(get)]
    invariant: bool,
    #[pyo3(get)]
    tick_ns: u64,
    #[pyo3(get)]
    transition_delay_us: u64,
    /// Per CPU: PELT util_avg, util_est and runnable_avg (0..1024 scale), capacity, tasks on
    /// the run-queue.
    #[pyo3(get)]
    util_avg: Vec<u64>,
    #[pyo3(get)]
    util_est: Vec<u64>,
    #[pyo3(get)]
    runnable_avg: Vec<u64>,
    #[pyo3(get)]
    capacity: Vec<u64>,
    #[pyo3(get)]
    nr_running: Vec<u64>,
    /// Per CPU: the run-queue's uclamp (min, max), None while no task uses uclamp; whether an
    /// RT task is running or waiting; idle entries so far.
    #[pyo3(get)]
    uclamp: Vec<Option<(u64, u64)>>,
    #[pyo3(get)]
    rt_runnable: Vec<bool>,
    #[pyo3(get)]
    idle_calls: Vec<u64>,
    /// Per CPU: the tasks on its run-queue, running first.
    #[pyo3(get)]
    tasks: Vec<Vec<Task>>,
    /// Per CPU, since this governor's previous call: time busy, idle, and idle with a task
    /// waiting on I/O (s).
    #[pyo3(get)]
    busy_s: Vec<f64>,
    #[pyo3(get)]
    idle_s: Vec<f64>,
    #[pyo3(get)]
    iowait_s: Vec<f64>,
    /// Per CPU, since the start, exactly: time busy, and idle with a task waiting on I/O
    /// (ns; what get_cpu_idle_time and get_cpu_iowait_time_us leave).
    #[pyo3(get)]
    busy_ns: Vec<u64>,
    #[pyo3(get)]
    iowait_ns: Vec<u64>,
    /// Energy of the policy's cores since the measured interval began (J), and time at each
    /// hardware frequency ({kHz: s}).
    #[pyo3(get)]
    energy_j: f64,
    #[pyo3(get)]
    time_in_state_s: std::collections::BTreeMap<u32, f64>,
    /// Every policy of the machine, this one included: CPUs (a tuple of tuples, built once a
    /// run) and current frequency (kHz).
    #[pyo3(get)]
    policies_cpus: Option<Py<PyTuple>>,
    #[pyo3(get)]
    policies_cur_khz: Vec<u32>,
    /// The delay of the timer the governor armed during this call (`arm_timer`), ns; 0: none.
    armed_ns: std::sync::atomic::AtomicU64,
}

#[pymethods]
impl Policy {
    /// What the cpufreq core makes of a request of `khz` (cpufreq_driver_resolve_freq): within
    /// [min_khz, max_khz], then the lowest table entry at or above it, except on a driver
    /// without a table (intel_cpufreq), where the clamped kHz stays.
    fn resolve_khz(&self, khz: i64) -> u32 {
        let clamped = khz.clamp(self.min_khz as i64, self.max_khz as i64) as u32;
        if !self.resolves_in_table {
            return clamped;
        }
        let entry = self.table_khz.iter().copied().find(|&f| f >= clamped).unwrap_or(self.max_khz);
        entry.clamp(self.min_khz, self.max_khz)
    }

    /// Arm the policy's timer `delay_ms` from now: when it fires, `update` runs with `cpu`
    /// None. One timer per policy: arming again (in this call or a later one) replaces it.
    fn arm_timer(&self, delay_ms: f64) -> PyResult<()> {
        if !(delay_ms.is_finite() && (delay_ms * 1e6).round() >= 1.0) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "arm_timer({delay_ms}): expected a delay of at least 1e-06 ms (1 ns)"
            )));
        }
        self.armed_ns.store((delay_ms * 1e6).round() as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

/// One task on a CPU's run-queue, as `Policy.tasks` lists it.
#[pyclass(frozen, get_all, module = "dvfslab")]
#[derive(Clone)]
pub struct Task {
    /// The task's id (its pid in results and timelines).
    id: usize,
    /// PELT util_avg and util_est (0..1024 scale).
    util_avg: u64,
    util_est: u64,
    /// Its effective uclamp (min, max): (0, 1024) when it asks for none.
    uclamp_min: u64,
    uclamp_max: u64,
    /// Whether it runs now (else it waits), and whether it is an RT task.
    running: bool,
    rt: bool,
}

#[pymethods]
impl Task {
    fn __repr__(&self) -> String {
        format!(
            "Task(id={}, util_avg={}, util_est={}, uclamp=({}, {}), running={}, rt={})",
            self.id, self.util_avg, self.util_est, self.uclamp_min, self.uclamp_max, self.running, self.rt
        )
    }
}

/// A Python exception raised by a governor, with the simulated time it was raised at.
pub type Raised = Rc<RefCell<Option<(PyErr, f64)>>>;

/// Whether a run has warned of a request above the hardware's highest frequency (once a run).
pub type Warned = Rc<Cell<bool>>;

pub struct PyGovernor {
    obj: PyObject,
    scheduler: bool,
    period_ns: u64,
    rate_limit_ns: u64,
    /// When the requested frequency (resolved to the table) last changed, and to what: the
    /// rate limit counts from there, as schedutil's last_freq_update_time does since 4.12
    /// (sugov_update_next_freq moves it only when next_freq changes).
    last_change_ns: Option<u64>,
    last_resolved_khz: Option<u32>,
    last_call_ns: u64,
    last_busy_ns: Vec<u64>,
    last_iowait_ns: Vec<u64>,
    raised: Raised,
    warned: Warned,
    /// `Policy.policies_cpus`, built at start: the same at every call.
    policies_cpus: Option<Py<PyTuple>>,
}

impl PyGovernor {
    /// The governor `obj` (a `dvfslab.Governor`, this policy's own copy) with its trigger,
    /// sampling period and rate limit read from it.
    pub fn new(py: Python<'_>, obj: PyObject, raised: Raised, warned: Warned) -> PyResult<PyGovernor> {
        let trigger: String = obj.getattr(py, "trigger")?.extract(py)?;
        let scheduler = match trigger.as_str() {
            "scheduler" => true,
            "sampling" => false,
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "trigger: expected \"sampling\" or \"scheduler\", got {other:?}"
                )))
            }
        };
        let ms: f64 = obj.getattr(py, "sampling_ms")?.extract(py)?;
        let us: f64 = obj.getattr(py, "rate_limit_us")?.extract(py)?;
        // Below 1 ns the period rounds to 0: the timer would fire forever at the same instant.
        if !(ms.is_finite() && (ms * 1e6).round() >= 1.0 && us >= 0.0 && us.is_finite()) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "sampling_ms must be at least 1e-06 (1 ns) and rate_limit_us >= 0 (got {ms} and {us})"
            )));
        }
        Ok(PyGovernor {
            obj,
            scheduler,
            period_ns: (ms * 1e6).round() as u64,
            rate_limit_ns: (us * 1e3).round() as u64,
            last_change_ns: None,
            last_resolved_khz: None,
            last_call_ns: 0,
            last_busy_ns: Vec::new(),
            last_iowait_ns: Vec::new(),
            raised,
            warned,
            policies_cpus: None,
        })
    }

    fn policy(&mut self, ctx: &mut dyn PolicyCtx, cpu: Option<usize>, flags: UpdateFlags) -> Policy {
        let cpus = ctx.cpus().to_vec();
        let now = ctx.now_ns();
        let span = now.saturating_sub(self.last_call_ns) as f64 / 1e9;
        let mut util_avg = Vec::with_capacity(cpus.len());
        let mut util_est = Vec::with_capacity(cpus.len());
        let mut capacity = Vec::with_capacity(cpus.len());
        let mut runnable_avg = Vec::with_capacity(cpus.len());
        let mut uclamp = Vec::with_capacity(cpus.len());
        let mut rt_runnable = Vec::with_capacity(cpus.len());
        let mut idle_calls = Vec::with_capacity(cpus.len());
        let (mut busy_s, mut idle_s, mut iowait_s) = (Vec::new(), Vec::new(), Vec::new());
        let (mut busy_ns, mut iowait_ns) = (Vec::new(), Vec::new());
        for (i, &c) in cpus.iter().enumerate() {
            let signals = ctx.cpu_signals(c);
            util_avg.push(signals.util_avg);
            util_est.push(signals.util_est);
            capacity.push(signals.cap_orig);
            runnable_avg.push(signals.runnable_avg);
            uclamp.push(signals.uclamp);
            rt_runnable.push(signals.rt_runnable);
            idle_calls.push(signals.idle_calls);
            let busy = ctx.cpu_busy_ns(c);
            let iowait = ctx.cpu_iowait_ns(c);
            let busy_delta = busy.saturating_sub(self.last_busy_ns[i]) as f64 / 1e9;
            busy_s.push(busy_delta);
            idle_s.push((span - busy_delta).max(0.0));
            iowait_s.push(iowait.saturating_sub(self.last_iowait_ns[i]) as f64 / 1e9);
            self.last_busy_ns[i] = busy;
            self.last_iowait_ns[i] = iowait;
            busy_ns.push(busy);
            iowait_ns.push(iowait);
        }
        self.last_call_ns = now;
        let tasks = cpus
            .iter()
            .map(|&c| {
                ctx.cpu_tasks(c)
                    .into_iter()
                    .map(|t| Task {
                        id: t.id,
                        util_avg: t.util_avg,
                        util_est: t.util_est,
                        uclamp_min: t.uclamp.0,
                        uclamp_max: t.uclamp.1,
                        running: t.running,
                        rt: t.rt,
                    })
                    .collect()
            })
            .collect();
        let facts = ctx.facts();
        let policies_cur_khz =
            (0..facts.all_policy_cpus().count()).map(|p| ctx.policy_cur_khz(p).unwrap_or(0)).collect();
        let time_in_state_s = ctx.time_in_state_ns().into_iter().map(|(khz, ns)| (khz, ns as f64 / 1e9)).collect();
        Policy {
            index: facts.index(),
            nr_running: cpus.iter().map(|&c| ctx.cpu_nr_running(c)).collect(),
            cpus,
            now_s: now as f64 / 1e9,
            now_ns: now,
            cpu,
            iowait: flags.iowait,
            remote: flags.remote,
            can_update: ctx.this_cpu_can_update(flags),
            invariant: ctx.invariant(),
            tick_ns: ctx.tick_ns(),
            transition_delay_us: ctx.default_transition_delay_us(),
            runnable_avg,
            uclamp,
            rt_runnable,
            idle_calls,
            tasks,
            energy_j: ctx.energy_so_far_j().unwrap_or(f64::NAN),
            time_in_state_s,
            policies_cpus: None,
            policies_cur_khz,
            armed_ns: Default::default(),
            cur_khz: ctx.cur_khz(),
            min_khz: ctx.min_khz(),
            max_khz: ctx.max_khz(),
            table_khz: ctx.table_khz().to_vec(),
            cpuinfo_max_khz: ctx.cpuinfo_max_khz(),
            kernel: ctx.kernel().to_string(),
            driver: ctx.facts().driver().0,
            resolves_in_table: ctx.facts().driver().1,
            util_avg,
            util_est,
            capacity,
            busy_s,
            idle_s,
            iowait_s,
            busy_ns,
            iowait_ns,
        }
    }

    /// Call the user's `update(policy)` and ask the driver for what it returns (not when the
    /// callback cannot update the frequency: the kernel would not let it). Returns the timer
    /// the governor armed during the call (`Governor.arm_timer`), ns from now.
    fn decide(&mut self, ctx: &mut dyn PolicyCtx, cpu: Option<usize>, flags: UpdateFlags) -> Option<u64> {
        if self.raised.borrow().is_some() {
            return None;
        }
        let mut policy = self.policy(ctx, cpu, flags);
        let can_update = policy.can_update;
        // What --explain keeps of the inputs the governor saw: each per-CPU signal at its
        // busiest CPU.
        let top = |v: &[u64]| v.iter().copied().max().unwrap_or(0) as f64;
        let busiest =
            policy.busy_s.iter().zip(&policy.idle_s).map(|(b, i)| if b + i > 0.0 { b / (b + i) } else { 0.0 });
        let inputs = [
            ("cur_khz", policy.cur_khz as f64),
            ("util_avg_max", top(&policy.util_avg)),
            ("util_est_max", top(&policy.util_est)),
            ("runnable_avg_max", top(&policy.runnable_avg)),
            ("nr_running_max", top(&policy.nr_running)),
            ("busy_share_max", busiest.fold(0.0, f64::max)),
            ("cpu", policy.cpu.map_or(-1.0, |c| c as f64)),
        ];
        let limits = (ctx.cpuinfo_max_khz(), ctx.max_khz());
        let warned = self.warned.clone();
        let answer = Python::with_gil(|py| -> PyResult<(Option<u32>, Option<u64>)> {
            policy.policies_cpus = self.policies_cpus.as_ref().map(|t| t.clone_ref(py));
            let (out, armed) = call_with(py, &self.obj, "update", policy)?;
            if out.is_none(py) {
                return Ok((None, armed));
            }
            Ok((Some(requested_khz(py, out.bind(py), limits, &warned)?), armed))
        });
        match answer {
            Ok((Some(khz), armed)) if can_update => {
                if ctx.explaining() {
                    ctx.explain(&inputs);
                }
                let resolved = ctx.resolve_freq(khz);
                if self.last_resolved_khz != Some(resolved) {
                    self.last_resolved_khz = Some(resolved);
                    self.last_change_ns = Some(ctx.now_ns());
                }
                ctx.request_khz(khz, Relation::L);
                armed
            }
            Ok((_, armed)) => armed,
            Err(e) => {
                let at = ctx.now_ns() as f64 / 1e9;
                *self.raised.borrow_mut() = Some((e, at));
                ctx.fail(SimError::Simulation(format!("the Python governor raised at {at:.6} s simulated")));
                None
            }
        }
    }

    /// Arm the policy's timer after a call: at the delay the governor asked for, else (trigger
    /// "sampling") at its period.
    fn rearm(&self, ctx: &mut dyn PolicyCtx, armed: Option<u64>) {
        match (armed, self.scheduler) {
            (Some(delay), _) => ctx.arm_timer(delay),
            (None, false) => ctx.arm_timer(self.period_ns),
            (None, true) => {}
        }
    }
}

/// Call `method` of the governor with `policy`; returns what it returned and the timer it
/// armed (`Policy.arm_timer`), ns from now.
fn call_with(py: Python<'_>, obj: &PyObject, method: &str, policy: Policy) -> PyResult<(PyObject, Option<u64>)> {
    let policy = Py::new(py, policy)?;
    let out = obj.call_method1(py, method, (policy.clone_ref(py),))?;
    let armed = policy.get().armed_ns.load(std::sync::atomic::Ordering::Relaxed);
    Ok((out, (armed > 0).then_some(armed)))
}

impl Governor for PyGovernor {
    fn start(&mut self, ctx: &mut dyn PolicyCtx) {
        self.last_busy_ns = ctx.cpus().iter().map(|&c| ctx.cpu_busy_ns(c)).collect();
        self.last_iowait_ns = ctx.cpus().iter().map(|&c| ctx.cpu_iowait_ns(c)).collect();
        self.last_call_ns = ctx.now_ns();
        let mut policy = self.policy(ctx, None, UpdateFlags::default());
        let all: Vec<Vec<usize>> = ctx.facts().all_policy_cpus().map(<[usize]>::to_vec).collect();
        let started = Python::with_gil(|py| {
            let tuples = all.into_iter().map(|cpus| PyTuple::new(py, cpus)).collect::<PyResult<Vec<_>>>()?;
            let cpus = PyTuple::new(py, tuples)?.unbind();
            policy.policies_cpus = Some(cpus.clone_ref(py));
            self.policies_cpus = Some(cpus);
            call_with(py, &self.obj, "start", policy).map(|(_, armed)| armed)
        });
        match started {
            Ok(armed) => self.rearm(ctx, armed),
            Err(e) => {
                *self.raised.borrow_mut() = Some((e, ctx.now_ns() as f64 / 1e9));
                ctx.fail(SimError::Simulation("the Python governor raised in start()".to_string()));
            }
        }
    }

    fn timer(&mut self, ctx: &mut dyn PolicyCtx) {
        let armed = self.decide(ctx, None, UpdateFlags::default());
        if self.raised.borrow().is_none() {
            self.rearm(ctx, armed);
        }
    }

    fn wants_util_updates(&self) -> bool {
        self.scheduler
    }

    fn util_update(&mut self, ctx: &mut dyn PolicyCtx, cpu: usize, flags: UpdateFlags) {
        // The class's own rate limit, counted from the last change of the requested frequency,
        // as schedutil counts its (sugov_should_update_freq).
        if self.last_change_ns.is_some_and(|last| ctx.now_ns() - last < self.rate_limit_ns) {
            return;
        }
        // A callback that cannot change the frequency still reaches `update` (schedutil records
        // an I/O wake-up's boost from it); its answer is not applied.
        if let Some(delay) = self.decide(ctx, Some(cpu), flags) {
            ctx.arm_timer(delay);
        }
    }
}

/// What `update` returned, as the whole kHz the cpufreq core takes: a number (int or float,
/// rounded up), positive and finite; above the hardware's highest frequency it is clamped with
/// a warning (module header). `limits` is (cpuinfo_max_khz, max_khz).
fn requested_khz(py: Python<'_>, out: &Bound<'_, PyAny>, limits: (u32, u32), warned: &Warned) -> PyResult<u32> {
    let number = if out.is_instance_of::<pyo3::types::PyBool>() {
        None
    } else if let Ok(i) = out.extract::<i64>() {
        Some(i as f64)
    } else {
        out.extract::<f64>().ok()
    };
    let Some(khz) = number else {
        // bool is an int to Python, but True is no frequency.
        let what = if out.is_instance_of::<pyo3::types::PyBool>() { " (a bool)" } else { "" };
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "update() must return a frequency in kHz (a number) or None, got {}{what}",
            out.repr().map_or_else(|_| "?".to_string(), |r| r.to_string())
        )));
    };
    if !(khz.is_finite() && khz > 0.0) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "update() returned {khz} kHz: expected a positive frequency"
        )));
    }
    let (cpuinfo_max_khz, max_khz) = limits;
    if khz > cpuinfo_max_khz as f64 && !warned.replace(true) {
        let message = format!(
            "update() returned {khz} kHz, above the hardware's highest frequency \
             ({cpuinfo_max_khz} kHz): clamped to the policy's maximum ({max_khz} kHz), as \
             cpufreq clamps every request (a frequency in Hz?); said once a run"
        );
        let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
        PyErr::warn(py, &category, &std::ffi::CString::new(message).expect("no NUL"), 1)?;
    }
    Ok(khz.ceil().min(u32::MAX as f64) as u32)
}
