//! rt-app: run a workload described the way rt-app describes it (a JSON file of threads,
//! phases and events), and report rt-app's own per-phase log.
//!
//! **What it models.** Every thread of the file (`instance` copies of each task, `fork`ed
//! ones later), each running its phases in order: fixed work (`run`), fixed time (`runtime`),
//! sleeps, periodic timers, mutexes, conditions, suspend/resume, semaphores, barriers, forks,
//! yields, memory and I/O. Scheduling policy and priority, affinity (per phase too), uclamp
//! and the start delay are applied. See docs/rtapp.md for every event's mapping. A file that
//! would deadlock on its mutexes, or create more than [`crate::sched::task::MAX_TASKS`] threads, is
//! refused before the run (see `locks`).
//!
//! **Calibration.** `run t` is fixed work: the work the calibration CPU does in t µs at its
//! maximum frequency and capacity (`"calibration": "CPUn"`; an integer ns-per-loop is taken as
//! measured on CPU0 at its maximum, and only rounds t down to whole loops). A run on a slower
//! CPU or at a lower frequency stretches; `runtime` does not.
//!
//! **Differences from rt-app** (the approximations, in the order they matter):
//! - condition signals and `resume` are not always lost when nobody waits: one is remembered
//!   (see [`lower`]); a broadcast wakes up to as many threads as could wait;
//! - a timer shared by k threads fires every k periods for each (its release grid is per
//!   thread), and the timers of a thread share one release grid;
//! - SCHED_DEADLINE runs as SCHED_FIFO priority 99, without throttling; wake-up placement
//!   does not take a CPU running only SCHED_IDLE threads for an idle one (`sched_idle_cpu`); a
//!   forked thread keeps its parent's policy and nice value, as fork leaves them, not its
//!   template's; phase-level policy changes are refused;
//! - `mem`, `memrun` and `iorun` take a fixed time (constants in [`lower`]);
//! - finite loops are unrolled (at most [`lower::MAX_PROGRAM_OPS`] operations per thread);
//! - `suspend`'s value names the wait queue when given (rt-app before 2025 and its examples;
//!   rt-app now always uses the thread's own name).
//!
//! **Tunables.** None: the file is the configuration. `global.duration` is the default
//! simulated time (`-1`: until every thread has finished, at most [`UNTIL_DONE_MAX_S`] s).
//!
//! **References.** scheduler-tools/rt-app: `doc/tutorial.txt`, `src/rt-app_parse_config.c`,
//! `src/rt-app.c`, `doc/workgen`, `doc/examples/`.

mod grammar;
mod json;
mod legacy;
mod locks;
pub mod lower;
pub mod metric;

use std::rc::Rc;

use crate::error::{Result, SimError};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Op};
use crate::workload::{Better, Completion, DeviceSpec, Metric, RunStats, Service, TaskSpec, Workload};

pub use grammar::Calibration;
pub use metric::{PhaseFigures, Summary};

/// Simulated time when the file says `duration: -1` and every thread ends by itself.
pub const UNTIL_DONE_MAX_S: u64 = 600;
/// Simulated time when the file says `duration: -1` and some thread loops forever.
pub const FOREVER_DEFAULT_S: u64 = 10;

/// A parsed rt-app description, ready to run.
pub struct RtApp {
    source: String,
    model: grammar::Model,
    layout: lower::Layout,
    built: lower::Built,
}

impl RtApp {
    /// Parse the text of an rt-app file; `source` names it in errors ("rt-app web.json").
    pub fn parse(text: &str, source: &str) -> Result<RtApp> {
        let root = json::parse(text)
            .map_err(|e| SimError::config(source, format!("line {}, column {}", e.line, e.column), e.message))?;
        let err = |e: grammar::GrammarError| SimError::config(source, e.path, e.message);
        let model = grammar::parse_model(&root).map_err(err)?;
        let (layout, built) = lower::lower(&model).map_err(err)?;
        Ok(RtApp { source: source.to_string(), model, layout, built })
    }

    /// Check the CPU numbers against the platform (affinity and calibration).
    pub fn check(&self, plat: &Platform) -> Result<()> {
        let n = plat.ncpus();
        let bad = |path: String, cpu: usize| {
            Err(SimError::config(
                &self.source,
                path,
                format!("CPU {cpu} does not exist on {} (CPUs 0..{})", plat.id(), n - 1),
            ))
        };
        if let Calibration::Cpu(cpu) = self.model.global.calibration {
            if cpu >= n {
                return bad("global.calibration".into(), cpu);
            }
        }
        for t in &self.model.tasks {
            if let Some(&cpu) = t.cpus.iter().flatten().find(|&&c| c >= n) {
                return bad(format!("{}.cpus", t.path), cpu);
            }
            for p in &t.phases {
                if let Some(&cpu) = p.cpus.iter().flatten().find(|&&c| c >= n) {
                    return bad(format!("{}.cpus", p.path), cpu);
                }
            }
        }
        Ok(())
    }

    /// The per-phase log and headline of a run.
    pub fn summary(&self, stats: &RunStats) -> Summary {
        metric::summarise(&self.layout, stats, self.model.global.cumulative_slack)
    }

    /// Where the marks of each figure go (`RunStats::latencies_ns` slots).
    pub fn layout(&self) -> &lower::Layout {
        &self.layout
    }

    /// Work per ns of the calibration CPU at its maximum frequency (cycles at base frequency,
    /// as `Op::Run` counts them).
    fn work_per_ns(&self, plat: &Platform) -> f64 {
        let cpu = match self.model.global.calibration {
            Calibration::Cpu(c) if c < plat.ncpus() => c,
            _ => 0,
        };
        let cl = plat.cluster_of_cpu(cpu);
        cl.capacity_dmips_mhz as f64 / 1024.0 * cl.frequency.max_khz as f64 * 1e-6
    }

    /// The programs for this platform: run work in cycles, CPU numbers that exist (an
    /// unchecked file loses the others; [`RtApp::check`] refuses them).
    fn programs_for(&self, plat: &Platform) -> Vec<Rc<[Op]>> {
        let k = self.work_per_ns(plat);
        let n = plat.ncpus();
        let cpus = |c: &[usize]| -> Option<Rc<[usize]>> {
            let ok: Vec<usize> = c.iter().copied().filter(|&c| c < n).collect();
            (!ok.is_empty()).then(|| ok.into())
        };
        self.built
            .programs
            .iter()
            .map(|p| {
                p.iter()
                    .map(|op| match op {
                        Op::Run { cycles: Amount::Fixed(ns), mem_frac } => {
                            Op::Run { cycles: Amount::Fixed(ns * k), mem_frac: *mem_frac }
                        }
                        Op::SetAffinity { cpus: Some(c) } => Op::SetAffinity { cpus: cpus(c) },
                        other => other.clone(),
                    })
                    .collect::<Vec<Op>>()
                    .into()
            })
            .collect()
    }
}

impl Workload for RtApp {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        let programs = self.programs_for(plat);
        let n = plat.ncpus();
        self.built
            .instances
            .iter()
            .map(|i| {
                let mut spec = TaskSpec::new(i.name.clone(), programs[i.program].clone())
                    .start_at(i.start_ns)
                    .policy(i.policy)
                    .nice(i.nice)
                    .uclamp(i.uclamp.0, i.uclamp.1);
                let cpus: Vec<usize> = i.cpus.iter().flatten().copied().filter(|&c| c < n).collect();
                if !cpus.is_empty() {
                    spec = spec.pinned(cpus);
                }
                spec
            })
            .collect()
    }

    fn programs(&self, plat: &Platform) -> Vec<Rc<[Op]>> {
        let programs = self.programs_for(plat);
        self.built.fork_table.iter().map(|&p| programs[p].clone()).collect()
    }

    fn devices(&self) -> Vec<DeviceSpec> {
        if self.built.uses_io {
            vec![DeviceSpec {
                name: self.model.global.io_device.clone(),
                queue_depth: 1,
                service: Service::Queued,
                completion: Completion::Submitter,
            }]
        } else {
            Vec::new()
        }
    }

    fn default_duration_ns(&self) -> u64 {
        let seconds = match self.model.global.duration_s {
            Some(s) => s,
            None if self.built.instances.is_empty() => FOREVER_DEFAULT_S,
            None => {
                let all_end = self.model.tasks.iter().filter(|t| t.instances > 0).all(|t| {
                    t.loops != grammar::Loop::Forever && t.phases.iter().all(|p| p.loops != grammar::Loop::Forever)
                });
                if all_end {
                    UNTIL_DONE_MAX_S
                } else {
                    FOREVER_DEFAULT_S
                }
            }
        };
        seconds.saturating_mul(1_000_000_000)
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        Metric {
            name: "run_stretch".into(),
            value: self.summary(stats).run_stretch,
            unit: "x".into(),
            better: Better::Lower,
        }
    }
}

/// Run the rt-app file `text` (named `file` in errors and in the result) on a platform preset:
/// `cfg.workload` is ignored.
pub fn simulate(
    platform_json: &str,
    platform_source: &str,
    text: &str,
    file: &str,
    cfg: &crate::SimConfig,
) -> Result<crate::SimResult> {
    build(platform_json, platform_source, text, file, cfg)?.run()
}

/// The simulation `simulate` runs, built and checked but not started.
pub fn build(
    platform_json: &str,
    platform_source: &str,
    text: &str,
    file: &str,
    cfg: &crate::SimConfig,
) -> Result<crate::Sim> {
    let plat = Platform::from_json(platform_json, platform_source)?;
    let rtapp = RtApp::parse(text, &format!("rt-app {file}"))?;
    rtapp.check(&plat)?;
    crate::Sim::with_workload(plat, cfg, Box::new(rtapp), format!("rt-app:{file}"))
}
