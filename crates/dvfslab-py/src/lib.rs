//! Python bindings (`dvfslab._core`): conversions and error mapping only; the simulator lives
//! in `dvfslab-sim`.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use std::ops::ControlFlow;

use dvfslab_sim::sim::Progress;
use dvfslab_sim::{governor, workload, Platform, Sim, SimConfig, SimError};

create_exception!(_core, DvfsError, PyException, "Root of every dvfslab error.");
create_exception!(_core, SimulationError, DvfsError, "The simulation reached a state it cannot go on from.");

mod py_governor;
mod stepper;

fn to_py(py: Python<'_>, err: SimError) -> PyErr {
    match err {
        SimError::Config { .. } => match py.import("dvfslab._core").and_then(|m| m.getattr("ConfigError")) {
            Ok(cls) => PyErr::from_type(cls.downcast_into().expect("a type"), err.to_string()),
            Err(e) => e,
        },
        _ => SimulationError::new_err(err.to_string()),
    }
}

/// Build the simulation: of the workload spec in `cfg`, or of the rt-app file text in it.
fn build_sim(
    platform_json: &str,
    platform_source: &str,
    cfg: &SimConfig,
    rtapp_file: Option<&str>,
) -> dvfslab_sim::Result<Sim> {
    match rtapp_file {
        None => Sim::new(Platform::from_json(platform_json, platform_source)?, cfg),
        Some(file) => workload::rtapp::build(platform_json, platform_source, &cfg.workload, file, cfg),
    }
}

/// The run's progress hook: Python's pending signals (Ctrl-C raises KeyboardInterrupt
/// there), then the caller's `progress(now_s, end_s)`. An exception stops the run; it is kept
/// in `raised` for the caller to raise.
fn python_hook(progress: Option<&PyObject>, raised: &mut Option<PyErr>, at: Progress) -> ControlFlow<()> {
    let outcome = Python::with_gil(|py| {
        py.check_signals()?;
        if let Some(callback) = progress {
            callback.call1(py, (at.now_ns as f64 / 1e9, at.end_ns as f64 / 1e9))?;
        }
        Ok::<(), PyErr>(())
    });
    match outcome {
        Ok(()) => ControlFlow::Continue(()),
        Err(e) => {
            *raised = Some(e);
            ControlFlow::Break(())
        }
    }
}

/// Run one simulation; returns {"result_json": str, "timeline": dict | None}. The run's
/// options are keywords, each with a default, so a new one changes no caller. With
/// `workload_source` (a file name), `workload` is the text of that rt-app file. Signals are
/// checked, and `progress(now_s, end_s)` called, every 2^16 events of the run: Ctrl-C stops it
/// with KeyboardInterrupt, and an exception `progress` raises stops it too.
#[pyfunction]
#[pyo3(signature = (platform_json, platform_source, governor, workload, *, duration_ns=None, seed=0, timeline=false, explain=false, workload_source=None, progress=None, python_governor=None))]
#[allow(clippy::too_many_arguments)]
fn simulate<'py>(
    py: Python<'py>,
    platform_json: &str,
    platform_source: &str,
    governor: &str,
    workload: &str,
    duration_ns: Option<u64>,
    seed: u64,
    timeline: bool,
    explain: bool,
    workload_source: Option<String>,
    progress: Option<PyObject>,
    python_governor: Option<(String, PyObject)>,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg =
        SimConfig::new(governor, workload).duration_ns(duration_ns).seed(seed).timeline(timeline).explain(explain);
    let mut raised: Option<PyErr> = None;
    let outcome = py.allow_threads(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut sim = build_sim(platform_json, platform_source, &cfg, workload_source.as_deref())?;
            let in_governor: py_governor::Raised = Default::default();
            if let Some((name, obj)) = &python_governor {
                match python_governors(obj, sim.policy_count(), &in_governor) {
                    Ok(govs) => {
                        let mut govs = govs.into_iter();
                        sim.replace_governors(name, |_| Box::new(govs.next().expect("one per policy")));
                    }
                    Err(e) => {
                        raised = Some(e);
                        return Err(dvfslab_sim::SimError::Simulation("the Python governor failed".into()));
                    }
                }
            }
            let result = sim.run_with_progress(&mut |at| python_hook(progress.as_ref(), &mut raised, at));
            if let Some((e, at)) = in_governor.borrow_mut().take() {
                raised = Some(Python::with_gil(|py| {
                    let stopped = SimulationError::new_err(format!(
                        "the governor raised at {at:.6} s simulated: {}",
                        cause(py, &e)
                    ));
                    stopped.set_cause(py, Some(e));
                    stopped
                }));
            }
            result
        }))
    });
    if let Some(e) = raised {
        return Err(e);
    }
    let result = match outcome {
        Ok(r) => r.map_err(|e| to_py(py, e))?,
        Err(_) => return Err(SimulationError::new_err("internal error: the simulator panicked (please report this)")),
    };
    let out = PyDict::new(py);
    let json = serde_json::to_string(&result.summary).map_err(|e| SimulationError::new_err(e.to_string()))?;
    out.set_item("result_json", json)?;
    match &result.timeline {
        None => out.set_item("timeline", py.None())?,
        Some(tl) => {
            let t = PyDict::new(py);
            let freq = PyDict::new(py);
            freq.set_item("time_ns", &tl.freq_time_ns)?;
            freq.set_item("cpu", &tl.freq_cpu)?;
            freq.set_item("freq_khz", &tl.freq_khz)?;
            freq.set_item("seq", &tl.freq_seq)?;
            let util = PyDict::new(py);
            util.set_item("time_ns", &tl.util_time_ns)?;
            util.set_item("cpu", &tl.util_cpu)?;
            util.set_item("util_avg", &tl.util_avg)?;
            let idle = PyDict::new(py);
            idle.set_item("time_ns", &tl.idle_time_ns)?;
            idle.set_item("cpu", &tl.idle_cpu)?;
            idle.set_item("state", &tl.idle_state)?;
            idle.set_item("seq", &tl.idle_seq)?;
            let switch = PyDict::new(py);
            switch.set_item("time_ns", &tl.switch_time_ns)?;
            switch.set_item("cpu", &tl.switch_cpu)?;
            switch.set_item("prev", &tl.switch_prev)?;
            switch.set_item("prev_state", tl.switch_prev_state.iter().map(|c| c.to_string()).collect::<Vec<_>>())?;
            switch.set_item("next", &tl.switch_next)?;
            switch.set_item("seq", &tl.switch_seq)?;
            let wakeup = PyDict::new(py);
            wakeup.set_item("time_ns", &tl.wakeup_time_ns)?;
            wakeup.set_item("task", &tl.wakeup_task)?;
            wakeup.set_item("cpu", &tl.wakeup_cpu)?;
            wakeup.set_item("logged_cpu", &tl.wakeup_logged_cpu)?;
            wakeup.set_item("need_resched", &tl.wakeup_need_resched)?;
            wakeup.set_item("seq", &tl.wakeup_seq)?;
            let waking = PyDict::new(py);
            waking.set_item("time_ns", &tl.waking_time_ns)?;
            waking.set_item("cpu", &tl.waking_cpu)?;
            waking.set_item("task", &tl.waking_task)?;
            waking.set_item("prev_cpu", &tl.waking_prev_cpu)?;
            waking.set_item("waker", &tl.waking_waker)?;
            waking.set_item("context", tl.waking_context.iter().map(|c| c.flag().to_string()).collect::<Vec<_>>())?;
            waking.set_item("seq", &tl.waking_seq)?;
            let process = PyDict::new(py);
            process.set_item("time_ns", &tl.process_time_ns)?;
            process.set_item("cpu", &tl.process_cpu)?;
            process.set_item("kind", tl.process_kind.iter().map(|c| c.to_string()).collect::<Vec<_>>())?;
            process.set_item("task", &tl.process_task)?;
            process.set_item("child", &tl.process_child)?;
            process.set_item("seq", &tl.process_seq)?;
            let migrate = PyDict::new(py);
            migrate.set_item("time_ns", &tl.migrate_time_ns)?;
            migrate.set_item("cpu", &tl.migrate_cpu)?;
            migrate.set_item("task", &tl.migrate_task)?;
            migrate.set_item("src", &tl.migrate_src)?;
            migrate.set_item("dst", &tl.migrate_dst)?;
            migrate.set_item("seq", &tl.migrate_seq)?;
            migrate.set_item("context", tl.migrate_context.iter().map(|c| c.flag().to_string()).collect::<Vec<_>>())?;
            let runtime = PyDict::new(py);
            runtime.set_item("time_ns", &tl.runtime_time_ns)?;
            runtime.set_item("cpu", &tl.runtime_cpu)?;
            runtime.set_item("task", &tl.runtime_task)?;
            runtime.set_item("runtime_ns", &tl.runtime_ns)?;
            runtime.set_item("seq", &tl.runtime_seq)?;
            t.set_item("runtime", runtime)?;
            t.set_item("migrate", migrate)?;
            t.set_item("switch", switch)?;
            t.set_item("wakeup", wakeup)?;
            t.set_item("waking", waking)?;
            t.set_item("process", process)?;
            t.set_item("task_names", &tl.task_names)?;
            t.set_item("task_prios", &tl.task_prios)?;
            t.set_item("frequency", freq)?;
            t.set_item("util", util)?;
            t.set_item("idle", idle)?;
            out.set_item("timeline", t)?;
        }
    }
    match &result.idle_decisions {
        None => out.set_item("idle_explain", py.None())?,
        Some(log) => {
            // One column per field; the interval ring as interval_0 (newest) .. interval_7; NaN
            // where a decision had no timer, no average or no tick to reconsider at.
            let opt = |v: Option<u64>| v.map_or(f64::NAN, |x| x as f64);
            let d = PyDict::new(py);
            d.set_item("time_ns", log.iter().map(|x| x.time_ns).collect::<Vec<_>>())?;
            d.set_item("cpu", log.iter().map(|x| x.cpu).collect::<Vec<_>>())?;
            d.set_item("next_timer_ns", log.iter().map(|x| opt(x.next_timer_ns)).collect::<Vec<_>>())?;
            d.set_item("nr_iowait", log.iter().map(|x| x.nr_iowait).collect::<Vec<_>>())?;
            for i in 0..8 {
                d.set_item(format!("interval_{i}"), log.iter().map(|x| x.intervals_us[i]).collect::<Vec<_>>())?;
            }
            d.set_item("avg_ns", log.iter().map(|x| opt(x.avg_ns)).collect::<Vec<_>>())?;
            d.set_item("state", log.iter().map(|x| x.state).collect::<Vec<_>>())?;
            d.set_item("reconsider_at_ns", log.iter().map(|x| opt(x.reconsider_at_ns)).collect::<Vec<_>>())?;
            out.set_item("idle_explain", d)?;
        }
    }
    match &result.decisions {
        None => out.set_item("explain", py.None())?,
        Some(log) => {
            let d = PyDict::new(py);
            d.set_item("time_ns", log.iter().map(|x| x.time_ns).collect::<Vec<_>>())?;
            d.set_item("policy", log.iter().map(|x| x.policy).collect::<Vec<_>>())?;
            d.set_item("raw_khz", log.iter().map(|x| x.raw_khz).collect::<Vec<_>>())?;
            d.set_item("resolved_khz", log.iter().map(|x| x.resolved_khz).collect::<Vec<_>>())?;
            d.set_item("min_khz", log.iter().map(|x| x.min_khz).collect::<Vec<_>>())?;
            d.set_item("max_khz", log.iter().map(|x| x.max_khz).collect::<Vec<_>>())?;
            d.set_item("hw_khz", log.iter().map(|x| x.hw_khz).collect::<Vec<_>>())?;
            // Inputs differ by governor: one column per input name, NaN where a row lacks it.
            let mut names: Vec<&'static str> = Vec::new();
            for x in log {
                for (n, _) in &x.inputs {
                    if !names.contains(n) {
                        names.push(n);
                    }
                }
            }
            let inputs = PyDict::new(py);
            for n in names {
                let col: Vec<f64> =
                    log.iter().map(|x| x.inputs.iter().find(|(k, _)| *k == n).map_or(f64::NAN, |(_, v)| *v)).collect();
                inputs.set_item(n, col)?;
            }
            d.set_item("inputs", inputs)?;
            out.set_item("explain", d)?;
        }
    }
    Ok(out)
}

/// An exception as one line, "TypeError: message" (its type alone if it has no message).
fn cause(py: Python<'_>, e: &PyErr) -> String {
    let kind = e.get_type(py).name().map_or_else(|_| "Exception".to_string(), |n| n.to_string());
    let text = e.value(py).str().map_or_else(|_| String::new(), |s| s.to_string());
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        kind
    } else {
        format!("{kind}: {text}")
    }
}

/// One copy of the user's governor per policy (`copy.deepcopy`), each run by a [`PyGovernor`].
fn python_governors(
    obj: &PyObject,
    policies: usize,
    raised: &py_governor::Raised,
) -> PyResult<Vec<py_governor::PyGovernor>> {
    let warned = py_governor::Warned::default();
    Python::with_gil(|py| {
        let deepcopy = py.import("copy")?.getattr("deepcopy")?;
        (0..policies)
            .map(|_| {
                let copy = deepcopy.call1((obj.clone_ref(py),))?.unbind();
                py_governor::PyGovernor::new(py, copy, raised.clone(), warned.clone())
            })
            .collect()
    })
}

/// Check a configuration as `simulate` would before running it, without running it: the
/// platform, the governor spec and its fit to the platform (driver, HWP, invariance, kernel),
/// the workload spec or rt-app file, and the run's own limits (a warm-up that ends before
/// `duration_ns`, None meaning the workload's default). Raises the error the run would raise.
#[pyfunction]
#[pyo3(signature = (platform_json, platform_source, governor, workload, *, duration_ns=None, workload_source=None))]
fn check(
    py: Python<'_>,
    platform_json: &str,
    platform_source: &str,
    governor: &str,
    workload: &str,
    duration_ns: Option<u64>,
    workload_source: Option<String>,
) -> PyResult<()> {
    let cfg = SimConfig::new(governor, workload).duration_ns(duration_ns);
    // Building the simulation is where a run refuses its input; the built one is dropped.
    let outcome = py.allow_threads(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            build_sim(platform_json, platform_source, &cfg, workload_source.as_deref()).map(drop)
        }))
    });
    match outcome {
        Ok(r) => r.map_err(|e| to_py(py, e)),
        Err(_) => Err(SimulationError::new_err("internal error: the simulator panicked (please report this)")),
    }
}

fn knobs_json(knobs: &[dvfslab_sim::spec::Knob]) -> Vec<serde_json::Value> {
    knobs
        .iter()
        .map(|k| {
            let names: Vec<&str> = k.choices.iter().map(|(n, _)| *n).collect();
            let default = match k.choice_name(k.default) {
                Some(name) => serde_json::json!(name),
                None => serde_json::json!(k.default),
            };
            let (range, source) = match k.uncertainty {
                Some(u) => (serde_json::json!([u.lo, u.hi]), serde_json::json!(u.source)),
                None => (serde_json::Value::Null, serde_json::Value::Null),
            };
            serde_json::json!({"name": k.name, "unit": k.unit, "default": default, "min": k.min, "max": k.max,
                "choices": names, "integer": k.integer, "description": k.description, "range": range,
                "source": source})
        })
        .collect()
}

/// Every governor with its tunables, as JSON.
#[pyfunction]
fn governors() -> String {
    let list: Vec<serde_json::Value> = governor::REGISTRY
        .iter()
        .map(|g| serde_json::json!({"name": g.name, "description": g.description, "tunables": knobs_json(g.knobs)}))
        .collect();
    serde_json::Value::Array(list).to_string()
}

/// Settings every governor spec accepts besides its own tunables (invariance, PELT, HZ,
/// driver), as JSON.
#[pyfunction]
fn system_tunables() -> String {
    let mut list = knobs_json(governor::SYSTEM_KNOBS);
    for (name, description) in governor::SYSTEM_TEXT_KEYS {
        list.push(serde_json::json!({"name": name, "unit": "text", "default": null, "description": description}));
    }
    serde_json::Value::Array(list).to_string()
}

/// The kernel versions whose behaviour can be simulated (`kernel=`), as JSON: {"default":
/// "6.18", "modelled": "4.7-4.20, 5.0-5.19, 6.0-6.18"}.
#[pyfunction]
fn kernel_versions() -> String {
    let default = dvfslab_sim::kernel::KernelVersion::DEFAULT.to_string();
    serde_json::json!({"default": default, "modelled": dvfslab_sim::kernel::modelled_versions()}).to_string()
}

/// Every workload model with its knobs and metric, as JSON.
#[pyfunction]
fn workloads() -> String {
    let list: Vec<serde_json::Value> = workload::REGISTRY
        .iter()
        .map(|w| {
            serde_json::json!({"name": w.name, "description": w.description, "metric": w.metric, "unit": w.unit,
                "better": w.better.as_str(), "knobs": knobs_json(w.knobs)})
        })
        .collect();
    serde_json::Value::Array(list).to_string()
}

/// Knobs every workload spec accepts besides its own (warm-up, background kernel threads),
/// as JSON.
#[pyfunction]
fn common_workload_knobs() -> String {
    serde_json::Value::Array(knobs_json(workload::COMMON_KNOBS)).to_string()
}

/// Validate a platform preset and describe its layout, as JSON.
#[pyfunction]
fn describe_platform(py: Python<'_>, platform_json: &str, platform_source: &str) -> PyResult<String> {
    let p = Platform::from_json(platform_json, platform_source).map_err(|e| to_py(py, e))?;
    Ok(dvfslab_sim::describe::describe(&p).to_string())
}

/// Read ftrace text (`source` names it in errors) into its tables, as columns: {"cpus_header",
/// "tsc_khz", "counts": {event: n}, "table_events": [...], and each table of
/// `FtraceTables::tables` as {column: [...]}}. `tsc_khz`: the rate of a raw-count clock.
#[pyfunction]
#[pyo3(signature = (text, source, tsc_khz=None))]
fn read_ftrace<'py>(py: Python<'py>, text: &str, source: &str, tsc_khz: Option<f64>) -> PyResult<Bound<'py, PyDict>> {
    use dvfslab_sim::trace::read::{read_ftrace_with, ReadOptions};
    let t = py.allow_threads(|| read_ftrace_with(text, source, ReadOptions { tsc_khz })).map_err(|e| to_py(py, e))?;
    let out = PyDict::new(py);
    out.set_item("cpus_header", t.cpus_header)?;
    out.set_item("tsc_khz", t.tsc_khz)?;
    let counts = PyDict::new(py);
    for (name, n) in &t.counts {
        counts.set_item(name, n)?;
    }
    out.set_item("counts", counts)?;
    for (name, columns) in t.tables() {
        let table = PyDict::new(py);
        for (column, values) in columns {
            use dvfslab_sim::trace::read::Column;
            match values {
                Column::F64(v) => table.set_item(column, v)?,
                Column::I64(v) => table.set_item(column, v)?,
                Column::U32(v) => table.set_item(column, v)?,
                Column::Str(v) => table.set_item(column, v)?,
                Column::Bool(v) => table.set_item(column, v)?,
                Column::Name(v) => table.set_item(column, v)?,
            }
        }
        out.set_item(name, table)?;
    }
    out.set_item("table_events", dvfslab_sim::trace::read::TABLE_EVENTS.to_vec())?;
    Ok(out)
}

/// Replay `governor` on the platform against recorded ftrace text (`trace_source` names it in
/// errors); decisions pair with recorded changes within `window_ms`. The comparison as JSON.
#[pyfunction]
#[pyo3(signature = (platform_json, platform_source, governor, trace_text, trace_source, window_ms, tsc_khz=None))]
#[allow(clippy::too_many_arguments)]
fn replay_governor(
    py: Python<'_>,
    platform_json: &str,
    platform_source: &str,
    governor: &str,
    trace_text: &str,
    trace_source: &str,
    window_ms: f64,
    tsc_khz: Option<f64>,
) -> PyResult<String> {
    use dvfslab_sim::trace::read::{read_ftrace_with, ReadOptions};
    use dvfslab_sim::trace::replay;
    let cfg = replay::ReplayConfig { governor: governor.to_string(), window_ns: (window_ms * 1e6).round() as u64 };
    let report = py
        .allow_threads(|| {
            let plat = dvfslab_sim::Platform::from_json(platform_json, platform_source)?;
            let tables = read_ftrace_with(trace_text, trace_source, ReadOptions { tsc_khz })?;
            replay::replay_governor(plat, &tables, trace_source, &cfg)
        })
        .map_err(|e| to_py(py, e))?;
    Ok(serde_json::to_string(&report).expect("a report serialises"))
}

/// Run one fixed speed scenario, as JSON.
#[pyfunction]
#[pyo3(name = "bench", signature = (scenario, platform_json, seconds_simulated))]
fn run_bench(py: Python<'_>, scenario: &str, platform_json: &str, seconds_simulated: f64) -> PyResult<String> {
    let s = dvfslab_sim::bench::scenario(scenario).map_err(|e| to_py(py, e))?;
    let pj = platform_json.to_string();
    let r = py.allow_threads(move || dvfslab_sim::bench::run(s, &pj, seconds_simulated)).map_err(|e| to_py(py, e))?;
    Ok(r.to_string())
}

/// The fixed speed scenarios: JSON [{"name", "platform", "governor", "workload",
/// "default_seconds"}].
#[pyfunction]
fn bench_scenarios() -> String {
    serde_json::json!(dvfslab_sim::bench::SCENARIOS).to_string()
}

/// The package version and a digest of the simulator's sources ("0.1.0+1a2b3c4d5e6f7a8b"): two
/// builds with the same string simulate the same way.
#[pyfunction]
fn version() -> String {
    format!("{}+{}", env!("CARGO_PKG_VERSION"), env!("DVFSLAB_SIM_DIGEST"))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("DvfsError", py.get_type::<DvfsError>())?;
    m.add("SimulationError", py.get_type::<SimulationError>())?;
    // ConfigError subclasses both DvfsError and ValueError: built as a Python class so that
    // `except ValueError` and `except DvfsError` both catch bad input.
    let ns = PyDict::new(py);
    ns.set_item("DvfsError", py.get_type::<DvfsError>())?;
    let cls = py.eval(
        c"type('ConfigError', (DvfsError, ValueError), {'__module__': 'dvfslab._core', '__doc__': 'Bad input: the message names the file or spec, the field and what was expected.'})",
        Some(&ns),
        None,
    )?;
    m.add("ConfigError", cls)?;
    m.add("MAX_TASKS", dvfslab_sim::sched::task::MAX_TASKS)?;
    m.add("TRACE_MAX_CPUS", dvfslab_sim::trace::read::MAX_CPUS)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(governors, m)?)?;
    m.add_function(wrap_pyfunction!(system_tunables, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_versions, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(workloads, m)?)?;
    m.add_function(wrap_pyfunction!(common_workload_knobs, m)?)?;
    m.add_function(wrap_pyfunction!(describe_platform, m)?)?;
    m.add_function(wrap_pyfunction!(run_bench, m)?)?;
    m.add_function(wrap_pyfunction!(bench_scenarios, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(read_ftrace, m)?)?;
    m.add_function(wrap_pyfunction!(replay_governor, m)?)?;
    m.add_class::<py_governor::Policy>()?;
    m.add_class::<py_governor::Task>()?;
    m.add_class::<stepper::SteppedSim>()?;
    Ok(())
}
