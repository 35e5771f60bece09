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

/// What a governor can see of its policy at one call (cpufreq's view of the policy and the
/// scheduler's per-CPU signals), read-only. Per-CPU lists are in the order of `cpus`.
#[pyclass(frozen, get_all, module = "dvfslab")]
pub struct Policy {
    /// The policy's CPUs.
    cpus: Vec<usize>,
    /// Simulated time now (s).
    now_s: f64,
    /// The CPU whose scheduler event called the governor (trigger "scheduler"), else None.
    cpu: Option<usize>,
    /// Current frequency, limits and table (kHz), and the hardware's highest.
    cur_khz: u32,
    min_khz: u32,
    max_khz: u32,
    table_khz: Vec<u32>,
    cpuinfo_max_khz: u32,
    /// The simulated kernel version, "6.18".
    kernel: String,
    /// Per CPU: PELT util_avg and util_est (0..1024 scale), capacity, tasks on the run-queue.
    util_avg: Vec<u64>,
    util_est: Vec<u64>,
    capacity: Vec<u64>,
    nr_running: Vec<u64>,
    /// Per CPU, since this governor's previous call: time busy, idle, and idle with a task
    /// waiting on I/O (s).
    busy_s: Vec<f64>,
    idle_s: Vec<f64>,
    iowait_s: Vec<f64>,
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
        })
    }

    fn policy(&mut self, ctx: &mut dyn PolicyCtx, cpu: Option<usize>) -> Policy {
        let cpus = ctx.cpus().to_vec();
        let now = ctx.now_ns();
        let span = now.saturating_sub(self.last_call_ns) as f64 / 1e9;
        let mut util_avg = Vec::with_capacity(cpus.len());
        let mut util_est = Vec::with_capacity(cpus.len());
        let mut capacity = Vec::with_capacity(cpus.len());
        let (mut busy_s, mut idle_s, mut iowait_s) = (Vec::new(), Vec::new(), Vec::new());
        for (i, &c) in cpus.iter().enumerate() {
            let signals = ctx.cpu_signals(c);
            util_avg.push(signals.util_avg);
            util_est.push(signals.util_est);
            capacity.push(signals.cap_orig);
            let busy = ctx.cpu_busy_ns(c);
            let iowait = ctx.cpu_iowait_ns(c);
            let busy_delta = busy.saturating_sub(self.last_busy_ns[i]) as f64 / 1e9;
            busy_s.push(busy_delta);
            idle_s.push((span - busy_delta).max(0.0));
            iowait_s.push(iowait.saturating_sub(self.last_iowait_ns[i]) as f64 / 1e9);
            self.last_busy_ns[i] = busy;
            self.last_iowait_ns[i] = iowait;
        }
        self.last_call_ns = now;
        Policy {
            nr_running: cpus.iter().map(|&c| ctx.cpu_nr_running(c)).collect(),
            cpus,
            now_s: now as f64 / 1e9,
            cpu,
            cur_khz: ctx.cur_khz(),
            min_khz: ctx.min_khz(),
            max_khz: ctx.max_khz(),
            table_khz: ctx.table_khz().to_vec(),
            cpuinfo_max_khz: ctx.cpuinfo_max_khz(),
            kernel: ctx.kernel().to_string(),
            util_avg,
            util_est,
            capacity,
            busy_s,
            idle_s,
            iowait_s,
        }
    }

    /// Call the user's `update(policy)` and ask the driver for what it returns.
    fn decide(&mut self, ctx: &mut dyn PolicyCtx, cpu: Option<usize>) {
        if self.raised.borrow().is_some() {
            return;
        }
        let policy = self.policy(ctx, cpu);
        // What --explain keeps of the inputs the governor saw: each per-CPU signal at its
        // busiest CPU.
        let top = |v: &[u64]| v.iter().copied().max().unwrap_or(0) as f64;
        let busiest =
            policy.busy_s.iter().zip(&policy.idle_s).map(|(b, i)| if b + i > 0.0 { b / (b + i) } else { 0.0 });
        let inputs = [
            ("cur_khz", policy.cur_khz as f64),
            ("util_avg_max", top(&policy.util_avg)),
            ("util_est_max", top(&policy.util_est)),
            ("nr_running_max", top(&policy.nr_running)),
            ("busy_share_max", busiest.fold(0.0, f64::max)),
            ("cpu", policy.cpu.map_or(-1.0, |c| c as f64)),
        ];
        let limits = (ctx.cpuinfo_max_khz(), ctx.max_khz());
        let warned = self.warned.clone();
        let answer = Python::with_gil(|py| -> PyResult<Option<u32>> {
            let out = self.obj.call_method1(py, "update", (policy,))?;
            if out.is_none(py) {
                return Ok(None);
            }
            requested_khz(py, out.bind(py), limits, &warned).map(Some)
        });
        match answer {
            Ok(None) => {}
            Ok(Some(khz)) => {
                if ctx.explaining() {
                    ctx.explain(&inputs);
                }
                let resolved = ctx.resolve_freq(khz);
                if self.last_resolved_khz != Some(resolved) {
                    self.last_resolved_khz = Some(resolved);
                    self.last_change_ns = Some(ctx.now_ns());
                }
                ctx.request_khz(khz, Relation::L);
            }
            Err(e) => {
                let at = ctx.now_ns() as f64 / 1e9;
                *self.raised.borrow_mut() = Some((e, at));
                ctx.fail(SimError::Simulation(format!("the Python governor raised at {at:.6} s simulated")));
            }
        }
    }
}

impl Governor for PyGovernor {
    fn start(&mut self, ctx: &mut dyn PolicyCtx) {
        self.last_busy_ns = ctx.cpus().iter().map(|&c| ctx.cpu_busy_ns(c)).collect();
        self.last_iowait_ns = ctx.cpus().iter().map(|&c| ctx.cpu_iowait_ns(c)).collect();
        self.last_call_ns = ctx.now_ns();
        let policy = self.policy(ctx, None);
        let started = Python::with_gil(|py| self.obj.call_method1(py, "start", (policy,)).map(drop));
        if let Err(e) = started {
            *self.raised.borrow_mut() = Some((e, ctx.now_ns() as f64 / 1e9));
            ctx.fail(SimError::Simulation("the Python governor raised in start()".to_string()));
            return;
        }
        if !self.scheduler {
            ctx.arm_timer(self.period_ns);
        }
    }

    fn timer(&mut self, ctx: &mut dyn PolicyCtx) {
        self.decide(ctx, None);
        ctx.arm_timer(self.period_ns);
    }

    fn wants_util_updates(&self) -> bool {
        self.scheduler
    }

    fn util_update(&mut self, ctx: &mut dyn PolicyCtx, cpu: usize, flags: UpdateFlags) {
        if !ctx.this_cpu_can_update(flags) {
            return;
        }
        // The class's own rate limit, counted from the last change of the requested frequency,
        // as schedutil counts its (sugov_should_update_freq).
        if self.last_change_ns.is_some_and(|last| ctx.now_ns() - last < self.rate_limit_ns) {
            return;
        }
        self.decide(ctx, Some(cpu));
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
