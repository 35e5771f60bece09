//! The speed benchmark behind `dvfslab bench`: fixed scenarios, timed on the wall clock.
//!
//! - `periodic`: `haswell-e5-2670v3-2s` (48 CPUs), `performance`, 48 periodic tasks each
//!   running 2 ms of work every 10 ms with ±20% jitter (about 40% busy): the event loop,
//!   PELT and the power model, with no governor decisions and little placement.
//! - `server`: `broadwell-e5-2698v4-2s` (80 CPUs), invariant schedutil on intel_cpufreq as
//!   Linux 5.2 ran it, tbench with 320 client/server pairs: the heaviest cell of the
//!   intel-invariance campaign, dominated by wake-up placement and governor callbacks on an
//!   oversubscribed machine.
//! - `database`: `haswell-e5-2670v3-2s` (48 CPUs), non-invariant schedutil on intel_cpufreq
//!   as Linux 5.2 ran it, read-only pgbench with 48 clients and two pgbench threads: the
//!   benchmark that takes the largest share of the intel-invariance campaign's time, with
//!   hundreds of thousands of short idle periods a second (menu, the event queue, SMT).
//! - `epyc-loaded`: `epyc7742-2s` (256 CPUs), schedutil, 256 CPU-bound threads: the tick
//!   path of a large, fully loaded machine (PELT, governor callbacks, the package controller).
//! - `epyc-server`: `epyc7742-2s`, schedutil, tbench with 256 client/server pairs: wake-up
//!   placement and idle-CPU searches over 256 CPUs.
//!
//! Seed 1 for all. Each scenario has a goal, in events per wall second or in simulated seconds
//! per wall second, that `dvfslab bench` and `make bench` print beside the figure.

use serde_json::{json, Value};

use crate::error::{Result, SimError};
use crate::sim::SimConfig;

/// One fixed speed scenario.
#[derive(serde::Serialize)]
pub struct Scenario {
    pub name: &'static str,
    /// The preset the scenario runs on (its JSON is passed to [`run`]).
    pub platform: &'static str,
    pub governor: &'static str,
    pub workload: &'static str,
    /// Simulated seconds by default: about half a wall second on a laptop core.
    pub default_seconds: f64,
    /// The speed to reach, in the unit of `goal_unit`.
    pub goal: f64,
    /// `events/s` or `simulated s per wall s`.
    pub goal_unit: &'static str,
}

const EVENTS: &str = "events/s";
const SIM_S: &str = "simulated s per wall s";

pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "periodic",
        platform: "haswell-e5-2670v3-2s",
        governor: "performance",
        workload: "periodic:threads=48,run_us=2000,period_us=10000,jitter_pct=20,offset_us=200",
        default_seconds: 60.0,
        goal: 10e6,
        goal_unit: EVENTS,
    },
    Scenario {
        name: "server",
        platform: "broadwell-e5-2698v4-2s",
        governor: "schedutil:invariant=1,freq_max=4c,kernel=5.2,driver=intel_cpufreq",
        workload: "tbench:clients=320",
        default_seconds: 0.2,
        goal: 10e6,
        goal_unit: EVENTS,
    },
    Scenario {
        name: "database",
        platform: "haswell-e5-2670v3-2s",
        governor: "schedutil:invariant=0,kernel=5.2,driver=intel_cpufreq",
        workload: "pgbench:rw=0,clients=48,threads=2",
        default_seconds: 1.0,
        goal: 10e6,
        goal_unit: EVENTS,
    },
    Scenario {
        name: "epyc-loaded",
        platform: "epyc7742-2s",
        governor: "schedutil",
        workload: "cpu-bound:threads=256",
        default_seconds: 40.0,
        goal: 200.0,
        goal_unit: SIM_S,
    },
    Scenario {
        name: "epyc-server",
        platform: "epyc7742-2s",
        governor: "schedutil",
        workload: "tbench:clients=256",
        default_seconds: 0.1,
        goal: 1.0,
        goal_unit: SIM_S,
    },
];

/// The scenario called `name`.
pub fn scenario(name: &str) -> Result<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name).ok_or_else(|| {
        let known: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
        SimError::config("dvfslab bench", "scenario", format!("unknown '{name}': expected one of {}", known.join(", ")))
    })
}

/// Run `scenario` for `seconds` of simulated time on `platform_json` (its preset).
pub fn run(scenario: &Scenario, platform_json: &str, seconds: f64) -> Result<Value> {
    let cfg = SimConfig {
        governor: scenario.governor.into(),
        workload: scenario.workload.into(),
        duration_ns: Some((seconds * 1e9) as u64),
        seed: 1,
        ..SimConfig::default()
    };
    let r = crate::simulate(platform_json, scenario.platform, &cfg)?.summary;
    let busy_cpu_s: f64 = r.per_cpu.iter().map(|c| c.busy_pct / 100.0 * r.sim_time_s).sum();
    Ok(json!({
        "scenario": scenario.name,
        "setup": format!("{}, {}, {}", scenario.platform, scenario.governor, scenario.workload),
        "events": r.events,
        "sim_time_s": r.sim_time_s,
        "wall_time_s": r.wall_time_s,
        "events_per_s": r.events as f64 / r.wall_time_s,
        "sim_s_per_wall_s": r.sim_time_s / r.wall_time_s,
        "sim_cpu_s_per_wall_s": r.sim_time_s * r.per_cpu.len() as f64 / r.wall_time_s,
        "busy_cpu_s_per_wall_s": busy_cpu_s / r.wall_time_s,
        "goal": scenario.goal,
        "goal_unit": scenario.goal_unit,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_are_found_by_name_and_an_unknown_one_lists_them() {
        assert_eq!(scenario("server").map(|s| s.platform).ok(), Some("broadwell-e5-2698v4-2s"));
        let err = scenario("nosuch").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("nosuch") && err.contains("periodic") && err.contains("server"), "{err}");
    }
}
