//! The summary of a run: the documented `dvfslab-run/1` JSON object (see docs/run-json.md).

use serde::Serialize;
use std::collections::BTreeMap;

use crate::observe::Timeline;

pub const SCHEMA: &str = "dvfslab-run/1";

#[derive(Clone, Debug, Serialize)]
pub struct MetricJson {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub better: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct PackageJson {
    pub package: usize,
    pub energy_j: f64,
    pub avg_w: f64,
    pub rapl_energy_j: f64,
    pub uncore_energy_j: f64,
    /// Seconds with every core power-gated (package C-state residency).
    pub idle_s: f64,
    /// Integral over the active time of the uncore clock's level, 0..1 (s).
    pub uncore_clock_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct CpuJson {
    pub cpu: usize,
    pub busy_pct: f64,
    pub avg_freq_khz: f64,
    pub util_avg_max: u64,
    pub energy_j: f64,
    /// Seconds at each frequency the CPU ran, keyed by kHz.
    pub time_in_freq: BTreeMap<String, f64>,
    /// Seconds in each idle state, keyed by its name, shallow to deep (cpuidle order).
    pub time_in_idle_state: serde_json::Map<String, serde_json::Value>,
}

#[derive(Clone, Debug, Serialize)]
pub struct OperationsJson {
    pub count: u64,
    pub unit: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunJson {
    pub schema: &'static str,
    pub platform: String,
    pub governor: String,
    pub driver: &'static str,
    pub workload: String,
    pub seed: u64,
    pub metric: MetricJson,
    /// The benchmark's own operations in the measured interval, where it counts them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operations: Option<OperationsJson>,
    pub energy_j: f64,
    pub avg_package_w: f64,
    pub packages: Vec<PackageJson>,
    pub sim_time_s: f64,
    pub wall_time_s: f64,
    pub events: u64,
    /// Work completed and submitted (cycles at base frequency): conservation check.
    pub work_done_cycles: f64,
    pub work_submitted_cycles: f64,
    pub per_cpu: Vec<CpuJson>,
}

pub struct SimResult {
    pub summary: RunJson,
    pub timeline: Option<Timeline>,
    pub decisions: Option<Vec<crate::observe::Decision>>,
    /// Every idle-state choice with its inputs (`explain`).
    pub idle_decisions: Option<Vec<crate::observe::IdleDecision>>,
    /// Tasks moved by placement and balancing, with why (`explain`).
    pub migrations: Option<Vec<crate::observe::Migration>>,
    /// Per finished task: (work submitted, work done), for the conservation invariant.
    pub finished_work: Vec<(f64, f64)>,
}
