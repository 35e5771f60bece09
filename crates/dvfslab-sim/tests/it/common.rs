//! Shared helpers: load the shipped presets and run short simulations.

use std::rc::Rc;

use dvfslab_sim::hw::platform::Platform;
use dvfslab_sim::sched::task::{Amount, Mark, Op};
use dvfslab_sim::workload::{Better, Completion, DeviceSpec, Metric, RunStats, Service, TaskSpec, Workload};
use dvfslab_sim::{simulate, SimConfig, SimResult};

pub fn preset(id: &str) -> String {
    let path = format!("{}/../../python/dvfslab/data/platforms/{id}.json", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Preset `id` without its `background` (the machine's own wake-ups) and its `sched_costs`,
/// for tests of one mechanism that other tasks, or the time switches take, would disturb.
pub fn quiet_preset(id: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&preset_without_sched_costs(id)).unwrap();
    v.as_object_mut().expect("a preset is an object").remove("background");
    v.to_string()
}

/// The quiet KVM guest (`quiet_preset`) with each of `fields` set to its value, or left out
/// where the value is None: a test of one of the guest's mechanisms sets only that one.
pub fn quiet_guest(fields: &[(&str, Option<serde_json::Value>)]) -> Platform {
    let mut doc: serde_json::Value = serde_json::from_str(&quiet_preset("kvm-guest-2cpu")).unwrap();
    let obj = doc.as_object_mut().expect("a preset is an object");
    for (name, value) in fields {
        obj.remove(*name);
        if let Some(value) = value {
            obj.insert(name.to_string(), value.clone());
        }
    }
    Platform::from_json(&doc.to_string(), "kvm").unwrap()
}

/// Preset `id` without its `sched_costs`: switches take no time, for worked examples that
/// count only their own mechanism's (tests/it/sched_costs.rs has the costs').
pub fn preset_without_sched_costs(id: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&preset(id)).unwrap();
    v.as_object_mut().expect("a preset is an object").remove("sched_costs");
    v.to_string()
}

pub fn run(platform: &str, governor: &str, workload: &str, duration_s: f64, seed: u64) -> SimResult {
    run_on(&preset(platform), platform, governor, workload, duration_s, seed)
}

/// `run` on a platform given as JSON text (a preset edited by the test), named `name`.
pub fn run_on(json: &str, name: &str, governor: &str, workload: &str, duration_s: f64, seed: u64) -> SimResult {
    let cfg = SimConfig {
        governor: governor.into(),
        workload: workload.into(),
        duration_ns: Some((duration_s * 1e9) as u64),
        seed,
        ..SimConfig::default()
    };
    simulate(json, name, &cfg).unwrap_or_else(|e| panic!("{e}"))
}

/// A short run with the governors' decision log (`--explain`), seed 0.
pub fn explain(platform: &str, governor: &str, workload: &str, duration_s: f64) -> SimResult {
    let cfg = SimConfig {
        governor: governor.into(),
        workload: workload.into(),
        duration_ns: Some((duration_s * 1e9) as u64),
        explain: true,
        ..SimConfig::default()
    };
    simulate(&preset(platform), platform, &cfg).unwrap_or_else(|e| panic!("{governor}: {e}"))
}

/// One of a decision's recorded inputs, by name (schedutil's `util_avg`, `rate_limit_us`, ...).
pub fn input(d: &dvfslab_sim::observe::Decision, name: &str) -> f64 {
    d.inputs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v).unwrap_or_else(|| panic!("no input {name}"))
}

/// Programs each pinned to one CPU; the metric is counter 0.
pub struct PinnedPrograms(pub Vec<(Vec<Op>, usize)>);

impl Workload for PinnedPrograms {
    fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
        let task = |(i, (program, cpu)): (usize, &(Vec<Op>, usize))| {
            TaskSpec::new(format!("p{i}"), Rc::from(program.clone())).pinned(vec![*cpu])
        };
        self.0.iter().enumerate().map(task).collect()
    }
    fn default_duration_ns(&self) -> u64 {
        100_000_000
    }
    fn metric(&self, stats: &RunStats) -> Metric {
        let value = stats.counters.first().copied().unwrap_or(0) as f64;
        Metric { name: "count".into(), value, unit: "ops".into(), better: Better::Higher }
    }
}

/// A client and a server that take turns: each works `burst_cycles`, wakes the other
/// synchronously and blocks until woken back; the client counts its round trips in counter 0.
pub fn request_response(burst_cycles: f64) -> (Vec<Op>, Vec<Op>) {
    let run = Op::Run { cycles: Amount::Fixed(burst_cycles), mem_frac: 0.0 };
    let client = vec![
        run.clone(),
        Op::Post { ch: 0, sync: true },
        Op::Wait { ch: 1 },
        Op::Mark(Mark::Add { counter: 0, amount: 1 }),
        Op::Jump { to: 0 },
    ];
    let server = vec![Op::Wait { ch: 0 }, run, Op::Post { ch: 1, sync: true }, Op::Jump { to: 0 }];
    (client, server)
}

/// A disk serving each request on its own, `queue_depth` at once, its completions taken as
/// `completion` says.
pub fn queued_disk(queue_depth: u32, completion: Completion) -> DeviceSpec {
    DeviceSpec { name: "disk".into(), queue_depth, service: Service::Queued, completion }
}
