//! Workload models: each builds the task programs of a benchmark and computes the benchmark's
//! own metric from what the run recorded. Adding a model means one file with an `INFO` and
//! one line in [`REGISTRY`].

mod cpu_bound;
mod periodic;

use std::rc::Rc;

use crate::engine::TimeNs;
use crate::error::{Result, SimError};
use crate::platform::Platform;
use crate::spec::{Knob, KnobValues, Spec};
use crate::task::Op;

/// A task to create when the run starts.
#[derive(Clone, Debug)]
pub struct TaskSpec {
    pub name: String,
    pub program: Rc<[Op]>,
    pub start_ns: TimeNs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

impl Better {
    pub fn as_str(self) -> &'static str {
        match self {
            Better::Higher => "higher",
            Better::Lower => "lower",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub better: Better,
}

/// What a run recorded for the workload's metric.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    pub sim_time_ns: TimeNs,
    /// `Mark::Count(n)` totals.
    pub counters: Vec<u64>,
    /// Response time of every periodic activation (activation to `Mark::ActivationDone`).
    pub responses_ns: Vec<u64>,
    /// Work completed by all tasks, in cycles at base frequency.
    pub work_done: f64,
}

pub trait Workload {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec>;
    /// How long a run lasts when the user does not say.
    fn default_duration_ns(&self) -> TimeNs;
    fn metric(&self, stats: &RunStats) -> Metric;
}

pub struct WorkloadInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub metric: &'static str,
    pub unit: &'static str,
    pub better: Better,
    pub knobs: &'static [Knob],
    pub build: fn(&KnobValues) -> Box<dyn Workload>,
}

pub const REGISTRY: &[&WorkloadInfo] = &[&cpu_bound::INFO, &periodic::INFO];

/// Parse a workload spec string into a model.
pub fn parse(text: &str) -> Result<(Spec, Box<dyn Workload>)> {
    let spec = Spec::parse(text, "workload")?;
    let info = REGISTRY.iter().copied().find(|w| w.name == spec.name).ok_or_else(|| {
        let known: Vec<&str> = REGISTRY.iter().map(|w| w.name).collect();
        SimError::config("workload", &spec.name, format!("unknown workload (known: {})", known.join(", ")))
    })?;
    let (values, _) = KnobValues::resolve(&spec, info.knobs, "workload", &[])?;
    Ok((spec, (info.build)(&values)))
}
