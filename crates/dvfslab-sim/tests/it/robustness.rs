//! Inputs at the edges: many tasks, fork bombs, degenerate presets, extreme knobs, and a run
//! stopped from outside. Each gives a result or a configuration error, never a crash.

use crate::common;

use std::ops::ControlFlow;
use std::rc::Rc;

use dvfslab_sim::hw::platform::Platform;
use dvfslab_sim::sched::task::{Amount, Mark, Op, MAX_TASKS};
use dvfslab_sim::sim::Progress;
use dvfslab_sim::workload::{Better, Metric, RunStats, SchedPolicy, TaskSpec, Workload};
use dvfslab_sim::{simulate, Sim, SimConfig, SimError, SimResult};

const SKYLAKE: &str = "skylake-e3-1240v5";

fn config(workload: &str, duration_s: f64) -> SimConfig {
    SimConfig {
        governor: "performance".into(),
        workload: workload.into(),
        duration_ns: Some((duration_s * 1e9) as u64),
        ..SimConfig::default()
    }
}

fn run_rtapp(text: &str, duration_s: f64) -> Result<SimResult, SimError> {
    let cfg = config("", duration_s);
    dvfslab_sim::workload::rtapp::simulate(&common::preset(SKYLAKE), SKYLAKE, text, "test.json", &cfg)
}

fn run_spec(workload: &str, duration_s: f64) -> Result<SimResult, SimError> {
    simulate(&common::preset(SKYLAKE), SKYLAKE, &config(workload, duration_s))
}

fn config_error(result: Result<SimResult, SimError>) -> String {
    match result {
        Err(e @ SimError::Config { .. }) => e.to_string(),
        Err(e) => panic!("expected a configuration error, got {e}"),
        Ok(_) => panic!("expected a configuration error, got a result"),
    }
}

/// Thousands of tasks queued on each CPU that each sleep as soon as they run: every sleep
/// hands the CPU to the next one, which must not cost a stack frame per task.
#[test]
fn many_tasks_that_sleep_at_once_run_without_exhausting_the_stack() {
    let r = run_rtapp(r#"{"tasks": {"a": {"instance": 16000, "sleep": 1000, "loop": -1}}}"#, 0.002).unwrap();
    assert_eq!(r.summary.sim_time_s, 0.002);
    assert!(r.summary.events >= 16_000, "{} events", r.summary.events);
}

/// A task that forks itself in a loop stops at the task limit with an error naming it.
#[test]
fn a_fork_bomb_stops_at_the_task_limit_with_an_error_naming_the_task() {
    // Without the preset's switching costs the bomb reaches the limit within 5 ms.
    let cfg = config("", 0.005);
    let bomb = r#"{"tasks": {"a": {"fork": "a", "sleep": 1000, "loop": -1}}}"#;
    let plat = common::preset_without_sched_costs(SKYLAKE);
    let err = config_error(dvfslab_sim::workload::rtapp::simulate(&plat, SKYLAKE, bomb, "test.json", &cfg));
    assert!(err.contains(&MAX_TASKS.to_string()), "{err}");
    assert!(err.contains("forked past the limit"), "{err}");
    assert!(err.contains("'a-0'"), "{err}");
    // Names stay short however long the chain of forks.
    assert!(err.len() < 300, "{err}");
}

/// The limit counts live tasks: a chain of more short-lived processes than the limit, one
/// after another (a test suite's shells), runs to its end.
#[test]
fn more_short_lived_processes_than_the_limit_run_one_after_another() {
    let r = run_spec("gitsource:commands=70000", 1000.0).unwrap();
    let execs = r.summary.operations.expect("gitsource counts its execs").count;
    assert!(execs > MAX_TASKS as u64, "{execs} execs");
}

#[test]
fn a_workload_with_more_tasks_than_the_limit_is_refused_before_it_runs() {
    // 65536 threads fit; the 8 kernel threads on top do not.
    let err = config_error(run_spec("cpu-bound:threads=65536,kthread_hz=100", 0.001));
    assert!(err.contains("65536 tasks and 8 kernel threads"), "{err}");
    assert!(err.contains(&MAX_TASKS.to_string()), "{err}");
}

/// A change made to a preset's JSON.
type Edit = fn(&mut serde_json::Value);

/// A preset edited by `edit`, loaded: its error if it is refused.
fn edited_preset(edit: impl Fn(&mut serde_json::Value)) -> Result<Platform, SimError> {
    let mut v: serde_json::Value = serde_json::from_str(&common::preset(SKYLAKE)).unwrap();
    edit(&mut v);
    Platform::from_json(&v.to_string(), "edited.json")
}

#[test]
fn degenerate_presets_are_refused_naming_the_file_and_field() {
    let cases: [(&str, Edit); 10] = [
        ("background.kthread_hz", |v| v["background"] = serde_json::json!({"kthread_hz": -1.0, "kthread_us": 20.0})),
        ("background.kthread_us", |v| v["background"] = serde_json::json!({"kthread_hz": 30.0, "kthread_us": 0.0})),
        ("clusters[0].idle_states", |v| v["clusters"][0]["idle_states"] = serde_json::json!([])),
        ("clusters[0].frequency.pstates_khz", |v| v["clusters"][0]["frequency"]["pstates_khz"] = serde_json::json!([])),
        ("clusters[0].cores_per_package", |v| v["clusters"][0]["cores_per_package"] = serde_json::json!(0)),
        ("topology.packages", |v| v["topology"]["packages"] = serde_json::json!(0)),
        // Found by fuzzing: the DT Energy Model's integer µW overflowed.
        ("clusters[0].power.c_eff_nf", |v| v["clusters"][0]["power"]["c_eff_nf"] = serde_json::json!(1e308)),
        ("clusters[0].power.p_leak_ref_mw", |v| v["clusters"][0]["power"]["p_leak_ref_mw"] = serde_json::json!(1e308)),
        ("package_power.p_uncore_active_w", |v| v["package_power"]["p_uncore_active_w"] = serde_json::json!(1e308)),
        ("clusters", |v| {
            v["clusters"][0]["cores_per_package"] = serde_json::json!(4_000_000_000u32);
            v["clusters"][0]["frequency"]["turbo_khz_by_active_cores"] = serde_json::Value::Null;
        }),
    ];
    for (field, edit) in cases {
        let err = match edited_preset(edit) {
            Err(e @ SimError::Config { .. }) => e.to_string(),
            other => panic!("{field}: expected a configuration error, got {:?}", other.map(|_| ())),
        };
        assert!(err.starts_with(&format!("edited.json: {field}: ")), "{err}");
    }
}

/// The figures of a run that a change of the workload's background should leave alone.
fn figures(r: &SimResult) -> (f64, f64, u64, f64) {
    (r.summary.metric.value, r.summary.energy_j, r.summary.events, r.summary.work_done_cycles)
}

/// Kernel threads whose first wake-up falls after the run's end leave it as it is without them,
/// however long their interval (down to rates whose interval a float cannot hold). Their first
/// wake-up is drawn from an exponential: at a millionth of a wake-up a second, the chance that
/// one of the CPUs' threads wakes within the 0.2 s run is about 10⁻⁶.
#[test]
fn kernel_threads_that_never_wake_within_the_run_change_nothing() {
    for base in ["cpu-bound:threads=1", "tbench:clients=4"] {
        let without = run_spec(base, 0.2).unwrap();
        for hz in ["1e-6", "1e-11", "1e-308"] {
            let with = run_spec(&format!("{base},kthread_hz={hz}"), 0.2).unwrap();
            assert_eq!(figures(&with), figures(&without), "{base}, kthread_hz={hz}");
        }
    }
}

/// Kernel threads' own work is not the benchmark's: they take time from one thread's CPU
/// rather than adding to its rate.
#[test]
fn kernel_thread_work_does_not_count_in_the_workload_metric() {
    let alone = run_spec("cpu-bound:threads=1", 0.2).unwrap().summary.metric.value;
    let busy = run_spec("cpu-bound:threads=1,kthread_hz=1000,kthread_us=500", 0.2).unwrap().summary.metric.value;
    assert!(busy <= alone * 1.000_001, "{busy} Gcycles/s with kernel threads, {alone} without");
}

/// A chain of wake-ups longer than programs may nest: 98 RT tasks on one CPU, each woken by
/// the one below and preempting it, each passing the token on. Every one is still served.
#[test]
fn a_chain_of_preempting_wake_ups_deeper_than_the_nesting_bound_completes() {
    const CHAIN: u32 = 98;
    let mut tasks = vec![TaskSpec::new(
        "starter",
        Rc::from(vec![
            Op::Sleep { ns: Amount::Fixed(1e6) },
            Op::Post { ch: 1, sync: false },
            Op::Run { cycles: Amount::Fixed(1e6), mem_frac: 0.0 },
            Op::Exit,
        ]),
    )
    .pinned(vec![0])];
    for i in 1..=CHAIN {
        let program = vec![
            Op::Wait { ch: i },
            Op::Mark(Mark::Add { counter: 0, amount: 1 }),
            Op::Post { ch: i + 1, sync: false },
            Op::Exit,
        ];
        tasks.push(
            TaskSpec::new(format!("rt{i}"), Rc::from(program)).pinned(vec![0]).policy(SchedPolicy::Fifo(i as u8)),
        );
    }
    let plat = Platform::from_json(&common::preset(SKYLAKE), SKYLAKE).unwrap();
    let cfg = SimConfig { governor: "performance".into(), duration_ns: Some(10_000_000), ..SimConfig::default() };
    let r = Sim::with_workload(plat, &cfg, Box::new(Fixed(tasks)), "chain".into()).unwrap().run().unwrap();
    assert_eq!(r.summary.metric.value, CHAIN as f64);
}

/// A workload of fixed tasks; the metric is counter 0.
struct Fixed(Vec<TaskSpec>);

impl Workload for Fixed {
    fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
        self.0.clone()
    }
    fn default_duration_ns(&self) -> u64 {
        10_000_000
    }
    fn metric(&self, stats: &RunStats) -> Metric {
        let value = stats.counters.first().copied().unwrap_or(0) as f64;
        Metric { name: "count".into(), value, unit: "ops".into(), better: Better::Higher }
    }
}

#[test]
fn a_progress_hook_sees_the_run_advance_and_can_stop_it() {
    let plat = Platform::from_json(&common::preset(SKYLAKE), SKYLAKE).unwrap();
    let cfg = config("tbench:clients=4", 1.0);
    let mut seen: Vec<Progress> = Vec::new();
    let outcome = Sim::new(plat, &cfg).unwrap().run_with_progress(&mut |at| {
        seen.push(at);
        if seen.len() == 2 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    match outcome {
        Err(SimError::Simulation(msg)) => assert!(msg.contains("stopped at"), "{msg}"),
        other => panic!("expected the run to stop, got {:?}", other.map(|r| r.summary.sim_time_s)),
    }
    assert_eq!(seen.len(), 2);
    assert!(seen[0].now_ns > 0 && seen[0].now_ns < seen[1].now_ns && seen[1].now_ns < 1_000_000_000, "{seen:?}");
    assert!(seen.iter().all(|p| p.end_ns == 1_000_000_000), "{seen:?}");
}

/// A NUMA spread that moves a running task can run the task's program on its new CPU before
/// the old CPU picks its next task; when that program wakes a task onto the old CPU, the old
/// CPU is busy again and must not pick a second one. (Found in an intel-invariance kernbench
/// run: the old CPU's core power was integrated over a wrapped interval, 2.3e10 J.)
#[test]
fn a_migration_that_refills_the_source_cpu_keeps_one_task_there() {
    let cfg = SimConfig {
        governor: "schedutil:invariant=0,kernel=5.2,driver=intel_cpufreq".into(),
        workload: "kernbench:units=2700,jobs=64".into(),
        seed: 8317950564777040115,
        ..SimConfig::default()
    };
    let r = simulate(&common::preset("broadwell-e5-2698v4-2s"), "broadwell-e5-2698v4-2s", &cfg).unwrap();
    let watts = r.summary.energy_j / r.summary.sim_time_s;
    assert!((100.0..400.0).contains(&watts), "{watts} W");
}
