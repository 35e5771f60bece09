//! A run's result from its final state: the summary JSON's figures over the measured interval
//! (after the warm-up), the timeline, the decision and migration records.

use crate::engine::TimeNs;
use crate::result::{CpuJson, MetricJson, OperationsJson, PackageJson, RunJson, SimResult, SCHEMA};
use crate::sim::Sim;

pub(crate) fn summarise(sim: &Sim, end: TimeNs, wall_s: f64) -> SimResult {
    // Everything below covers the measured interval, after the workload's warm-up.
    let measured = end - sim.run.warmup_ns;
    let secs = measured as f64 * 1e-9;
    let packages: Vec<PackageJson> = (0..sim.hw.packages.len())
        .map(|p| {
            let pkg = &sim.hw.packages[p];
            let cores: f64 = sim.machine.plat.packages[p].cores.iter().map(|&c| sim.hw.cores[c].energy_j).sum();
            let energy = pkg.uncore_energy_j + cores;
            PackageJson {
                package: p,
                energy_j: energy,
                avg_w: if secs > 0.0 { energy / secs } else { 0.0 },
                rapl_energy_j: pkg.rapl_units as f64 * sim.machine.plat.file.rapl.energy_unit_uj * 1e-6,
                uncore_energy_j: pkg.uncore_energy_j,
                idle_s: pkg.idle_ns as f64 * 1e-9,
                uncore_clock_s: pkg.uncore_clock_s,
            }
        })
        .collect();
    let energy_j: f64 = packages.iter().map(|p| p.energy_j).sum();
    let per_cpu = (0..sim.sched.cpus.len())
        .map(|cpu| {
            let c = &sim.sched.cpus[cpu];
            let t = &sim.machine.plat.cpus[cpu];
            let threads = sim.machine.plat.cores[t.core].cpus.len() as f64;
            let base = sim.machine.plat.cluster(t.cluster).frequency.base_khz as f64;
            let states = &sim.machine.plat.cluster(t.cluster).idle_states;
            CpuJson {
                cpu,
                busy_pct: if measured > 0 { 100.0 * c.busy_ns as f64 / measured as f64 } else { 0.0 },
                // turbostat's Bzy_MHz: base · ΔAPERF/ΔMPERF over the busy time.
                avg_freq_khz: {
                    let k = &sim.hw.counters[cpu];
                    if k.mperf > 0.0 {
                        base * k.aperf / k.mperf
                    } else {
                        0.0
                    }
                },
                util_avg_max: c.util_avg_max,
                energy_j: sim.hw.cores[t.core].energy_j / threads,
                time_in_freq: sim.hw.domains[t.domain]
                    .freq_ns
                    .iter()
                    .filter(|&&(_, ns)| ns > 0)
                    .map(|&(k, ns)| (k.to_string(), ns as f64 * 1e-9))
                    .collect(),
                time_in_idle_state: states
                    .iter()
                    .zip(&c.idle_ns)
                    .map(|(s, &ns)| (s.name.clone(), serde_json::json!(ns as f64 * 1e-9)))
                    .collect(),
            }
        })
        .collect();
    let metric = sim.work.workload.metric(&sim.work.stats);
    let operations =
        sim.work.workload.operations(&sim.work.stats).map(|o| OperationsJson { count: o.count, unit: o.unit });
    SimResult {
        summary: RunJson {
            schema: SCHEMA,
            platform: sim.machine.plat.id().to_string(),
            governor: sim.cpufreq.governor_name.clone(),
            driver: sim.machine.driver.name(),
            workload: sim.work.workload_name.clone(),
            seed: sim.run.seed,
            metric: MetricJson {
                name: metric.name,
                value: metric.value,
                unit: metric.unit,
                better: metric.better.as_str(),
            },
            operations,
            energy_j,
            avg_package_w: if secs > 0.0 { energy_j / secs } else { 0.0 },
            packages,
            sim_time_s: secs,
            wall_time_s: wall_s,
            events: sim.run.events,
            work_done_cycles: sim.sched.tasks.iter().map(|t| t.work_done).sum(),
            work_submitted_cycles: sim.sched.tasks.iter().map(|t| t.work_submitted).sum(),
            per_cpu,
        },
        timeline: sim.run.timeline.clone().map(|mut tl| {
            // The charges since the last row (Run::timeline).
            for c in sim.sched.charges.iter().flatten() {
                tl.runtime(c.time, c.cpu, c.task, c.ns);
            }
            tl.task_names = sim.sched.tasks.iter().map(|t| t.name.clone()).collect();
            tl.task_prios = sim.sched.tasks.iter().map(|t| t.attrs.kernel_prio()).collect();
            tl
        }),
        decisions: sim.cpufreq.explain.clone(),
        idle_decisions: sim.hw.idle_log.clone(),
        migrations: sim.sched.hetero.migrations.clone(),
        finished_work: sim
            .sched
            .tasks
            .iter()
            .filter(|t| t.state == crate::sched::task::TaskState::Exited || t.work_left == 0.0)
            .map(|t| (t.work_submitted, t.work_done))
            .collect(),
    }
}
