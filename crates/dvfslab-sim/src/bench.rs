//! The speed benchmark behind `dvfslab bench`: a fixed scenario, timed on the wall clock.
//!
//! Scenario: `haswell-e5-2670v3-2s` (48 CPUs), `performance`, 48 periodic tasks each running
//! 2 ms of work every 10 ms with ±20% jitter (about 40% busy), seed 1.

use serde_json::{json, Value};

use crate::error::Result;
use crate::sim::SimConfig;

pub const SCENARIO: &str =
    "haswell-e5-2670v3-2s, performance, periodic:threads=48,run_us=2000,period_us=10000,jitter_pct=20,offset_us=200";

/// Run the scenario for `seconds` of simulated time on `platform_json` (the haswell preset).
pub fn run(platform_json: &str, seconds: f64) -> Result<Value> {
    let cfg = SimConfig {
        governor: "performance".into(),
        workload: "periodic:threads=48,run_us=2000,period_us=10000,jitter_pct=20,offset_us=200".into(),
        duration_ns: Some((seconds * 1e9) as u64),
        seed: 1,
        timeline: false,
        explain: false,
    };
    let r = crate::simulate(platform_json, "haswell-e5-2670v3-2s", &cfg)?.summary;
    let busy_cpu_s: f64 = r.per_cpu.iter().map(|c| c.busy_pct / 100.0 * r.sim_time_s).sum();
    Ok(json!({
        "scenario": SCENARIO,
        "events": r.events,
        "sim_time_s": r.sim_time_s,
        "wall_time_s": r.wall_time_s,
        "events_per_s": r.events as f64 / r.wall_time_s,
        "sim_cpu_s_per_wall_s": r.sim_time_s * r.per_cpu.len() as f64 / r.wall_time_s,
        "busy_cpu_s_per_wall_s": busy_cpu_s / r.wall_time_s,
    }))
}
