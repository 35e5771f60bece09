//! Open-loop replay of a governor against a recorded trace: the recording's inputs go to the
//! same governor code the simulator runs, and each of its decisions is set beside the
//! frequency changes the recorded kernel made (docs/traces.md).
//!
//! The governor is called where the kernel calls cpufreq_update_util and its recorded traces
//! show it: at each update of a CPU's root cfs_rq PELT signal (`cfs_rq_util_change`), and when
//! an RT task starts or stops running on a CPU (`enqueue_top_rt_rq` / `sched_rt_rq_dequeue`
//! kick cpufreq). Timer-driven governors (ondemand, conservative) get their timers at the times
//! they armed them. What a governor reads comes from the recording:
//!
//! - util_avg: the root cfs_rq's `util` as last traced (what the kernel reads: the stored
//!   signal, not one decayed to now); util_est and runnable_avg likewise, when traced;
//! - RT: a task of priority below 100 running (not the per-CPU stopper `migration/N`, whose
//!   class is stop, not RT, though it shows priority 0);
//! - idle: `cpu_idle` entries and exits give the idle-entry count (schedutil's busy hold) and
//!   the busy time (the DBS governors' load);
//! - the current frequency: the last recorded `cpu_frequency` of the policy's CPUs.
//!
//! Inputs no trace event carries (iowait wake-ups, RT, DL and IRQ utilisation, uclamp, and
//! util_est or runnable_avg when not traced) are listed as unobservable; a decision that differs in the direction one of
//! them could push is counted as explainable by it, apart from the unexplained ones.

use serde::Serialize;

use super::read::FtraceTables;
use super::recorded::{ModelDecision, Recorded, RecordedPolicy};
use crate::error::{Result, SimError};
use crate::governor::core::{machine_for, Policy};
use crate::governor::{Governor, GovernorConfig, UpdateFlags};
use crate::hw::platform::Platform;
use crate::kernel::KernelVersion;
use crate::machine::Machine;
use crate::sched::pelt::SCHED_CAPACITY_SCALE;

/// How many divergences the report details.
const DIVERGENCES_SHOWN: usize = 10;

/// PELT events of one CPU this close together come from one scheduler update: update_load_avg
/// traces the root run-queue's decay, then what a task's attach or detach, or a child group's
/// propagation, changed.
const SAME_UPDATE_NS: u64 = 10_000;

/// Since 5.5 update_load_avg calls cfs_rq_util_change once the update is complete, after
/// propagate_entity_load_avg. Before, update_cfs_rq_load_avg called it as soon as the root had
/// decayed, so the governor read the root's utilisation before a child group's change (a task
/// forked or migrated in a cgroup or autogroup) reached it, and that change called no governor.
const CPUFREQ_AFTER_PROPAGATION: KernelVersion = KernelVersion(5, 5, 0);

/// What to replay and how to pair decisions.
pub struct ReplayConfig {
    pub governor: String,
    /// A model change pairs with a recorded one within this time (either side). The kernel's
    /// slow path (a kthread for drivers that cannot switch from the scheduler) logs the change
    /// a few ms after the decision.
    pub window_ns: u64,
}

/// The comparison, as `dvfslab replay governor --json` prints it.
#[derive(Debug, Serialize)]
pub struct ReplayReport {
    pub governor: String,
    pub kernel: String,
    /// Recorded frequency changes plus model changes paired with none: every moment where the
    /// recording or the model changed frequency.
    pub decisions: usize,
    pub recorded_changes: usize,
    pub model_changes: usize,
    /// Shares of `decisions`: the model changed to the recorded OPP within the window; to it or
    /// a neighbour. None when there was no decision to judge.
    pub exact_match: Option<f64>,
    pub within_one_opp: Option<f64>,
    /// Decisions that differ and no unobservable input could explain.
    pub unexplained: usize,
    /// Decisions that differ in a direction an unobservable input could push, by input.
    pub explainable: Vec<(String, usize)>,
    pub unobservable: Vec<String>,
    /// Model time minus recorded time of paired changes (ms): median, 90th percentile of the
    /// absolute value, and the largest.
    pub timing_ms: TimingError,
    /// Every decision in time order.
    pub changes: Vec<Change>,
    /// The first differing decisions, with the model's inputs at its decision.
    pub divergences: Vec<Change>,
    /// Recorded changes during their policy's warm-up (until every CPU of the policy has
    /// reported its utilisation and the kernel's choice has been seen once): the state the
    /// model starts from is not known there, so they are not judged.
    pub warm_up: Vec<Change>,
    /// Model changes within the pairing window of the recording's end: the kernel's answer
    /// would have been logged after the recording stopped, so they are not judged.
    pub at_end: Vec<Change>,
}

#[derive(Debug, Default, Serialize)]
pub struct TimingError {
    pub median: f64,
    pub p90_abs: f64,
    pub max_abs: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Change {
    pub policy: usize,
    /// The recorded change (time in the trace's seconds, kHz), if any.
    pub recorded_s: Option<f64>,
    pub recorded_khz: Option<u32>,
    /// The model's change, if any.
    pub model_s: Option<f64>,
    pub model_khz: Option<u32>,
    /// exact, within_one, different, missed (no model change), extra (no recorded change).
    pub status: &'static str,
    /// Unobservable inputs that could explain a difference.
    pub explainable_by: Vec<&'static str>,
    /// The model's inputs at its decision (or its last one before a missed change).
    pub inputs: Vec<(&'static str, f64)>,
}

/// One input event of the replay, in time order.
#[derive(Clone, Copy)]
enum Input {
    Pelt {
        cpu: usize,
        util: u64,
        runnable: Option<u64>,
    },
    UtilEst {
        cpu: usize,
        enqueued: u64,
    },
    /// `sugov`: the task switched in is schedutil's worker kthread (`sugov:N`).
    Switch {
        cpu: usize,
        rt: bool,
        task: bool,
        sugov: bool,
    },
    Idle {
        cpu: usize,
        enter: bool,
    },
    Frequency {
        cpu: usize,
        khz: u32,
    },
}

/// When the recording starts (its first event, s) and ends (ns after that).
#[derive(Clone, Copy)]
struct Span {
    start_s: f64,
    end_ns: u64,
}

/// Replay `cfg.governor` on `plat` against the recording `t` (named `source` in errors).
pub fn replay_governor(plat: Platform, t: &FtraceTables, source: &str, cfg: &ReplayConfig) -> Result<ReplayReport> {
    // The machine supplies what the governor reads that the recording does not: its driver,
    // tables, tick, invariance and kernel version; the policies keep the limits cpufreq
    // starts them with.
    let (gov_cfg, gov_info) = GovernorConfig::parse(&cfg.governor)?;
    let machine = &machine_for(plat, &gov_cfg, gov_info)?;
    let limits: &Vec<Policy> = &machine.tables.iter().map(|table| Policy::new(table)).collect();
    let mut governors: Vec<Box<dyn Governor>> = match &gov_cfg.kernel_source {
        Some(source) => crate::governor::kernel_c::governors_for(source, machine),
        None => machine.plat.policies.iter().map(|p| (gov_info.build)(gov_cfg.values_for_policy(p.cpus[0]))).collect(),
    };
    let ncpus = machine.plat.cpus.len();
    let (inputs, start_s) = inputs_in_order(t, ncpus, source)?;
    check_frequencies(machine, t, source)?;

    let npol = limits.len();
    let mut rec = Recorded {
        now_ns: 0,
        util: vec![0; ncpus],
        util_est: vec![0; ncpus],
        runnable: vec![0; ncpus],
        rt_running: vec![false; ncpus],
        task_running: vec![false; ncpus],
        idle_calls: vec![0; ncpus],
        busy_ns: vec![0; ncpus],
        busy_since: vec![Some(0); ncpus],
        aperf: vec![0.0; ncpus],
        mperf: vec![0.0; ncpus],
        counted_to: vec![0; ncpus],
        cur_khz: (0..npol).map(|p| first_recorded_khz(machine, t, p)).collect(),
        timers: vec![None; npol],
        pending_inputs: Vec::new(),
        decisions: Vec::new(),
        failure: None,
    };
    for (p, gov) in governors.iter_mut().enumerate() {
        gov.start(&mut RecordedPolicy { machine, limits, rec: &mut rec, policy: p });
    }
    let first_decisions = rec.decisions.len();
    let mut recorded: Vec<(u64, usize, u32)> = Vec::new();
    // Until every CPU of a policy has reported its utilisation, the governor reads inputs the
    // trace has not shown yet: its choices there only warm it up.
    let warm_from = warm_up_ends(machine, &inputs);
    let mut warm = vec![false; npol];
    let mut last_recorded: Vec<Option<(u64, u32)>> = vec![None; npol];
    let mut worker_woken: Vec<Option<u64>> = vec![None; npol];
    let after_propagation = machine.kernel >= CPUFREQ_AFTER_PROPAGATION;
    for (i, &(time_ns, input)) in inputs.iter().enumerate() {
        fire_timers(&mut governors, (machine, limits), &mut rec, time_ns);
        rec.now_ns = time_ns;
        // Leaving warm-up, the governor takes the kernel's last recorded choice as its own: its
        // warm-up choices came from an incomplete view.
        for p in 0..npol {
            if !warm[p] && time_ns >= warm_from[p] {
                warm[p] = true;
                if let Some((t, khz)) = last_recorded[p] {
                    governors[p].adopt_recorded(khz, t);
                }
            }
        }
        let kick = match input {
            Input::Pelt { cpu, util, runnable } => {
                rec.util[cpu] = util;
                rec.runnable[cpu] = runnable.unwrap_or(rec.runnable[cpu]);
                let calls_here = if after_propagation {
                    !same_update(inputs.get(i + 1), cpu, time_ns)
                } else {
                    i == 0 || !same_update(inputs.get(i - 1), cpu, time_ns)
                };
                calls_here.then_some(cpu)
            }
            Input::UtilEst { cpu, enqueued } => {
                rec.util_est[cpu] = enqueued;
                None
            }
            Input::Switch { cpu, rt, task, sugov } => {
                if sugov {
                    worker_woken[machine.plat.cpus[cpu].policy].get_or_insert(time_ns);
                }
                let changed = rec.rt_running[cpu] != rt;
                rec.rt_running[cpu] = rt;
                rec.task_running[cpu] = task;
                changed.then_some(cpu)
            }
            Input::Idle { cpu, enter } => {
                let p = machine.plat.cpus[cpu].policy;
                rec.count_cycles(cpu, machine.plat.cluster_of_cpu(cpu).frequency.base_khz as u64, p);
                match (enter, rec.busy_since[cpu]) {
                    (true, Some(since)) => {
                        rec.busy_ns[cpu] += time_ns - since;
                        rec.busy_since[cpu] = None;
                        rec.idle_calls[cpu] += 1;
                    }
                    (false, None) => rec.busy_since[cpu] = Some(time_ns),
                    _ => {}
                }
                None
            }
            Input::Frequency { cpu, khz } => {
                let p = machine.plat.cpus[cpu].policy;
                for &c in &machine.plat.policies[p].cpus {
                    rec.count_cycles(c, machine.plat.cluster_of_cpu(c).frequency.base_khz as u64, p);
                }
                if last_recorded[p].map(|r| r.1) != Some(khz) {
                    recorded.push((time_ns, p, khz));
                    // Each later decision is judged from the kernel's state. A slow-switching
                    // driver logs the change when its worker kthread has switched, a few ms
                    // after the decision that woke it (sugov_deferred_update): the worker's
                    // first run since the last change dates the decision better than the log.
                    let decided = worker_woken[p].take().unwrap_or(time_ns);
                    last_recorded[p] = Some((decided, khz));
                    governors[p].adopt_recorded(khz, decided);
                }
                rec.cur_khz[p] = khz;
                None
            }
        };
        if let Some(e) = rec.failure.take() {
            return Err(e);
        }
        if let Some(cpu) = kick {
            let p = machine.plat.cpus[cpu].policy;
            if governors[p].wants_util_updates() {
                let mut ctx = RecordedPolicy { machine, limits, rec: &mut rec, policy: p };
                governors[p].util_update(&mut ctx, cpu, UpdateFlags::default());
            }
        }
    }
    let model = model_changes(&rec.decisions[first_decisions..], &recorded, &warm_from, cfg.window_ns);
    // A governor that sizes a frequency from utilisation answers for its headroom.
    let util_driven = governors.iter().any(|g| g.dvfs_headroom(0, SCHED_CAPACITY_SCALE).is_some());
    let unobservable = if util_driven {
        unobservable_inputs(machine.kernel, t)
    } else {
        // The sampling governors' load counts I/O wait as busy with io_is_busy; no event
        // records it.
        vec![("iowait_time", true)]
    };
    // Recorded changes during a policy's warm-up are listed, not judged.
    // A policy's first recorded change is what ends its warm-up: it is listed, not judged.
    let mut seen = vec![false; npol];
    let (judged, warm_up): (Vec<_>, Vec<_>) =
        recorded.iter().partition(|r| std::mem::replace(&mut seen[r.1], true) && r.0 >= warm_from[r.1]);
    let span = Span { start_s, end_ns: inputs.last().map_or(0, |e| e.0) };
    let mut report = compare(machine, cfg, &judged, &model, &rec.decisions, span, &unobservable);
    report.warm_up = warm_up
        .iter()
        .map(|&&(time_ns, policy, khz)| Change {
            policy,
            recorded_s: Some(start_s + time_ns as f64 / 1e9),
            recorded_khz: Some(khz),
            model_s: None,
            model_khz: None,
            status: "warm_up",
            explainable_by: Vec::new(),
            inputs: Vec::new(),
        })
        .collect();
    Ok(report)
}

/// When each policy's warm-up ends: once every one of its CPUs has reported its utilisation
/// (never, if one does not) and the first recorded change has shown the kernel's choice (a
/// `cpu_frequency` event is a change: before it the policy ran at a frequency the recording
/// does not tell, chosen at a time it does not tell).
fn warm_up_ends(machine: &Machine, inputs: &[(u64, Input)]) -> Vec<u64> {
    let mut first_pelt = vec![u64::MAX; machine.plat.cpus.len()];
    for &(time_ns, input) in inputs {
        if let Input::Pelt { cpu, .. } = input {
            first_pelt[cpu] = first_pelt[cpu].min(time_ns);
        }
    }
    let mut first_change = vec![0; machine.plat.policies.len()];
    for &(time_ns, input) in inputs.iter().rev() {
        if let Input::Frequency { cpu, .. } = input {
            first_change[machine.plat.cpus[cpu].policy] = time_ns;
        }
    }
    machine
        .plat
        .policies
        .iter()
        .zip(first_change)
        .map(|(p, change)| p.cpus.iter().map(|&c| first_pelt[c]).max().unwrap_or(0).max(change))
        .collect()
}

/// Whether `next` (the input just before or after one at `time_ns`) is another PELT event of
/// `cpu` within the same scheduler update.
fn same_update(next: Option<&(u64, Input)>, cpu: usize, time_ns: u64) -> bool {
    matches!(next, Some(&(t, Input::Pelt { cpu: c, .. })) if c == cpu && t.abs_diff(time_ns) <= SAME_UPDATE_NS)
}

/// Fire the governor timers due by `until`, each at its own time.
fn fire_timers(
    governors: &mut [Box<dyn Governor>],
    (machine, limits): (&Machine, &[Policy]),
    rec: &mut Recorded,
    until: u64,
) {
    loop {
        let due =
            rec.timers.iter().enumerate().filter_map(|(p, t)| t.map(|t| (t, p))).filter(|&(t, _)| t <= until).min();
        let Some((at, p)) = due else { return };
        rec.timers[p] = None;
        rec.now_ns = at;
        governors[p].timer(&mut RecordedPolicy { machine, limits, rec, policy: p });
    }
}

/// The first frequency recorded on a policy's CPUs: what it ran before the trace says, as the
/// best guess; the policy's maximum if the trace records none.
fn first_recorded_khz(machine: &Machine, t: &FtraceTables, policy: usize) -> u32 {
    let cpus = &machine.plat.policies[policy].cpus;
    let f = &t.frequency;
    (0..f.cpu.len())
        .find(|&i| usize::try_from(f.cpu[i]).is_ok_and(|c| cpus.contains(&c)))
        .map_or(machine.tables[policy][machine.tables[policy].len() - 1], |i| f.state[i] as u32)
}

/// The recording's inputs in time order (ns since its first event), with that first time (s).
fn inputs_in_order(t: &FtraceTables, ncpus: usize, source: &str) -> Result<(Vec<(u64, Input)>, f64)> {
    let cpu_of = |cpu: i64, what: &str| -> Result<usize> {
        usize::try_from(cpu).ok().filter(|&c| c < ncpus).ok_or_else(|| {
            SimError::config(source, what, format!("CPU {cpu} is not one of the platform's {ncpus} CPUs"))
        })
    };
    let mut timed: Vec<(f64, Input)> = Vec::new();
    let p = &t.pelt;
    for i in 0..p.time_s.len() {
        let runnable = u64::try_from(p.runnable[i]).ok();
        let input = Input::Pelt { cpu: cpu_of(p.cpu[i], "sched_pelt_cfs")?, util: p.util[i].max(0) as u64, runnable };
        timed.push((p.time_s[i], input));
    }
    let u = &t.util_est;
    for i in 0..u.time_s.len() {
        let input =
            Input::UtilEst { cpu: cpu_of(u.cpu[i], "sched_util_est_cfs")?, enqueued: u.enqueued[i].max(0) as u64 };
        timed.push((u.time_s[i], input));
    }
    let s = &t.switches;
    for i in 0..s.time_s.len() {
        let cpu = cpu_of(s.cpu[i] as i64, "sched_switch")?;
        let rt = is_rt(s.next_prio[i], &s.next_comm[i]);
        let sugov = s.next_comm[i].starts_with("sugov:");
        timed.push((s.time_s[i], Input::Switch { cpu, rt, task: s.next_pid[i] != 0, sugov }));
    }
    let d = &t.idle;
    for i in 0..d.time_s.len() {
        timed.push((d.time_s[i], Input::Idle { cpu: cpu_of(d.cpu[i], "cpu_idle")?, enter: d.state[i] >= 0 }));
    }
    let f = &t.frequency;
    for i in 0..f.time_s.len() {
        let khz = u32::try_from(f.state[i]).map_err(|_| {
            SimError::config(source, "cpu_frequency", format!("state {} is not a frequency in kHz", f.state[i]))
        })?;
        timed.push((f.time_s[i], Input::Frequency { cpu: cpu_of(f.cpu[i], "cpu_frequency")?, khz }));
    }
    if t.pelt.time_s.is_empty() && t.idle.time_s.is_empty() {
        return Err(SimError::config(
            source,
            "events",
            "nothing to replay: the trace has neither the run-queues' PELT events (sched_pelt_cfs, \
             sched_load_cfs_rq) nor cpu_idle"
                .to_string(),
        ));
    }
    // A stable sort keeps each table's order for equal times.
    timed.sort_by(|a, b| a.0.total_cmp(&b.0));
    let start = timed.first().map_or(0.0, |e| e.0);
    Ok((timed.into_iter().map(|(s, e)| (((s - start) * 1e9).round() as u64, e)).collect(), start))
}

/// An RT task: priority below 100, except the per-CPU stopper threads (`migration/N`, stop
/// class) that the trace shows at priority 0 but the RT run-queue never holds.
fn is_rt(prio: i64, comm: &str) -> bool {
    (0..100).contains(&prio) && !comm.starts_with("migration/")
}

/// Every recorded frequency must be in its policy's table on this platform, or the trace comes
/// from another machine.
fn check_frequencies(machine: &Machine, t: &FtraceTables, source: &str) -> Result<()> {
    for i in 0..t.frequency.cpu.len() {
        let cpu = t.frequency.cpu[i] as usize;
        let khz = t.frequency.state[i] as u32;
        let table = &machine.tables[machine.plat.cpus[cpu].policy];
        if !table.contains(&khz) {
            return Err(SimError::config(
                source,
                "cpu_frequency",
                format!(
                    "CPU {cpu} ran at {khz} kHz, not in {}'s table for it ({:?}): the trace is from another machine",
                    machine.plat.id(),
                    table
                ),
            ));
        }
    }
    Ok(())
}

/// The model's frequency changes: decisions that move a policy off its previous choice.
///
/// Choices during a policy's warm-up (`warm_from`) do not count. After it, a decision counts
/// when it leaves the policy's previous frequency: the later of the model's last choice and the
/// kernel's last recorded change (which the governor adopts). While the recording has shown
/// none, only a decision that pairs with a recorded change within the window counts.
fn model_changes<'a>(
    decisions: &'a [ModelDecision],
    recorded: &[(u64, usize, u32)],
    warm_from: &[u64],
    window_ns: u64,
) -> Vec<&'a ModelDecision> {
    let mut last: Vec<Option<(u64, u32)>> = vec![None; warm_from.len()];
    let mut out = Vec::new();
    for d in decisions.iter().filter(|d| d.time_ns >= warm_from[d.policy]) {
        let kernel_last =
            recorded.iter().take_while(|r| r.0 <= d.time_ns).filter(|r| r.1 == d.policy).last().map(|r| (r.0, r.2));
        let previous = match (last[d.policy], kernel_last) {
            (Some(m), Some(k)) => Some(if k.0 >= m.0 { k.1 } else { m.1 }),
            (m, k) => m.or(k).map(|x| x.1),
        };
        let counts = match previous {
            Some(prev) => prev != d.khz,
            None => recorded.iter().any(|r| r.1 == d.policy && r.0.abs_diff(d.time_ns) <= window_ns),
        };
        if counts {
            out.push(d);
        }
        last[d.policy] = Some((d.time_ns, d.khz));
    }
    out
}

fn compare(
    machine: &Machine,
    cfg: &ReplayConfig,
    recorded: &[&(u64, usize, u32)],
    model: &[&ModelDecision],
    all_decisions: &[ModelDecision],
    span: Span,
    unobservable: &[(&'static str, bool)],
) -> ReplayReport {
    let secs = |ns: u64| span.start_s + ns as f64 / 1e9;
    let mut used = vec![false; model.len()];
    let mut changes: Vec<Change> = Vec::new();
    let mut timing: Vec<f64> = Vec::new();
    for &&(time_ns, policy, khz) in recorded {
        // The nearest unused model change of the policy within the window.
        let nearest = (0..model.len())
            .filter(|&i| !used[i] && model[i].policy == policy && model[i].time_ns.abs_diff(time_ns) <= cfg.window_ns)
            .min_by_key(|&i| model[i].time_ns.abs_diff(time_ns));
        let table = &machine.tables[policy];
        let change = match nearest {
            Some(i) => {
                used[i] = true;
                let m = model[i];
                timing.push((m.time_ns as f64 - time_ns as f64) / 1e6);
                let status = match opp_distance(table, m.khz, khz) {
                    0 => "exact",
                    1 => "within_one",
                    _ => "different",
                };
                let explainable_by = if status == "exact" { Vec::new() } else { explaining(unobservable, khz > m.khz) };
                Change {
                    policy,
                    recorded_s: Some(secs(time_ns)),
                    recorded_khz: Some(khz),
                    model_s: Some(secs(m.time_ns)),
                    model_khz: Some(m.khz),
                    status,
                    explainable_by,
                    inputs: m.inputs.clone(),
                }
            }
            None => {
                let before = all_decisions.iter().rev().find(|d| d.policy == policy && d.time_ns <= time_ns);
                let model_then = before.map(|d| d.khz);
                Change {
                    policy,
                    recorded_s: Some(secs(time_ns)),
                    recorded_khz: Some(khz),
                    model_s: None,
                    model_khz: None,
                    status: "missed",
                    explainable_by: explaining(unobservable, model_then.is_none_or(|m| khz > m)),
                    inputs: before.map(|d| d.inputs.clone()).unwrap_or_default(),
                }
            }
        };
        changes.push(change);
    }
    let mut at_end = Vec::new();
    for (_, m) in model.iter().enumerate().filter(|(i, _)| !used[*i]) {
        // The recording stayed where it was: an extra model change down means the kernel kept
        // a higher frequency, which an unobservable input could hold up.
        let recorded_then = recorded.iter().rev().find(|r| r.1 == m.policy && r.0 <= m.time_ns).map(|r| r.2);
        let up = recorded_then.is_some_and(|r| r > m.khz);
        let cut_off = m.time_ns + cfg.window_ns > span.end_ns;
        let change = Change {
            policy: m.policy,
            recorded_s: None,
            recorded_khz: None,
            model_s: Some(secs(m.time_ns)),
            model_khz: Some(m.khz),
            status: if cut_off { "at_end" } else { "extra" },
            explainable_by: if cut_off { Vec::new() } else { explaining(unobservable, up) },
            inputs: m.inputs.clone(),
        };
        if cut_off {
            at_end.push(change)
        } else {
            changes.push(change)
        }
    }
    changes.sort_by(|a, b| {
        let t = |c: &Change| c.recorded_s.or(c.model_s).unwrap_or(0.0);
        t(a).total_cmp(&t(b))
    });
    let decisions = changes.len();
    let count = |f: &dyn Fn(&Change) -> bool| changes.iter().filter(|c| f(c)).count();
    let exact = count(&|c| c.status == "exact");
    let within = count(&|c| c.status == "exact" || c.status == "within_one");
    let differing: Vec<&Change> = changes.iter().filter(|c| c.status != "exact").collect();
    let unexplained = differing.iter().filter(|c| c.explainable_by.is_empty()).count();
    let mut explainable: Vec<(String, usize)> = Vec::new();
    for name in unobservable {
        let n = differing.iter().filter(|c| c.explainable_by.contains(&name.0)).count();
        if n > 0 {
            explainable.push((name.0.to_string(), n));
        }
    }
    let share = |n: usize| (decisions > 0).then(|| n as f64 / decisions as f64);
    ReplayReport {
        governor: cfg.governor.clone(),
        kernel: machine.kernel.to_string(),
        decisions,
        recorded_changes: recorded.len(),
        model_changes: model.len(),
        exact_match: share(exact),
        within_one_opp: share(within),
        unexplained,
        explainable,
        unobservable: unobservable.iter().map(|u| u.0.to_string()).collect(),
        timing_ms: timing_error(&mut timing),
        divergences: differing.iter().take(DIVERGENCES_SHOWN).map(|c| (*c).clone()).collect(),
        changes,
        warm_up: Vec::new(),
        at_end,
    }
}

/// How many table entries apart two frequencies are.
fn opp_distance(table: &[u32], a: u32, b: u32) -> usize {
    let index = |f: u32| table.iter().position(|&t| t >= f).unwrap_or(table.len() - 1);
    index(a).abs_diff(index(b))
}

/// Inputs of a utilisation-driven governor that the recording `t` does not carry, for the
/// kernel version, each with whether it can only raise the frequency asked (true) or only
/// lower it (false).
fn unobservable_inputs(kernel: KernelVersion, t: &FtraceTables) -> Vec<(&'static str, bool)> {
    let mut out = Vec::new();
    if kernel >= KernelVersion(4, 17, 0) && t.util_est.time_s.is_empty() {
        out.push(("util_est", true));
    }
    if kernel >= KernelVersion(6, 5, 0) && t.pelt.runnable.iter().all(|&r| r < 0) {
        out.push(("runnable_avg", true));
    }
    if kernel >= KernelVersion(4, 9, 0) {
        out.push(("iowait_boost", true));
    }
    if kernel >= KernelVersion(4, 19, 0) {
        // schedutil adds the RT, DL and IRQ PELT signals to CFS's from 4.19 on.
        out.push(("rt_dl_irq_util", true));
    }
    if kernel >= KernelVersion(5, 3, 0) {
        out.push(("uclamp_max", false));
    }
    // Limits (thermal, user) are left out: they change rarely, and `cpu_frequency_limits`
    // records them where they matter.
    out
}

/// The unobservable inputs that push the way the recording went: `up` when the recording ran
/// higher than the model.
fn explaining(unobservable: &[(&'static str, bool)], up: bool) -> Vec<&'static str> {
    unobservable.iter().filter(|u| u.1 == up).map(|u| u.0).collect()
}

fn timing_error(ms: &mut [f64]) -> TimingError {
    if ms.is_empty() {
        return TimingError::default();
    }
    ms.sort_by(|a, b| a.total_cmp(b));
    let median = ms[ms.len() / 2];
    let mut abs: Vec<f64> = ms.iter().map(|v| v.abs()).collect();
    abs.sort_by(|a, b| a.total_cmp(b));
    let p90 = abs[((abs.len() as f64 * 0.9).ceil() as usize).clamp(1, abs.len()) - 1];
    TimingError { median, p90_abs: p90, max_abs: *abs.last().unwrap() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::read::read_ftrace;

    fn juno_r0() -> Platform {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../python/dvfslab/data/platforms/juno-r0.json");
        Platform::from_json(&std::fs::read_to_string(path).unwrap(), "juno-r0").unwrap()
    }

    fn replay(text: &str, governor: &str) -> ReplayReport {
        let t = read_ftrace(text, "t.txt").unwrap();
        let cfg = ReplayConfig { governor: governor.into(), window_ns: 5_000_000 };
        replay_governor(juno_r0(), &t, "t.txt", &cfg).unwrap()
    }

    /// Every CPU of juno-r0 reports its utilisation (0), then the big policy's first change
    /// (450 MHz, its worker `sugov:1` woken at 10.000800) ends its warm-up.
    const WARM: &str = "\
        \x20 <idle>-0 [001] 10.000000: sched_load_cfs_rq: cpu=1 path=/ load=0 util=0\n\
        \x20 <idle>-0 [002] 10.000100: sched_load_cfs_rq: cpu=2 path=/ load=0 util=0\n\
        \x20 <idle>-0 [000] 10.000200: sched_load_cfs_rq: cpu=0 path=/ load=0 util=0\n\
        \x20 <idle>-0 [003] 10.000300: sched_load_cfs_rq: cpu=3 path=/ load=0 util=0\n\
        \x20 <idle>-0 [004] 10.000400: sched_load_cfs_rq: cpu=4 path=/ load=0 util=0\n\
        \x20 <idle>-0 [005] 10.000500: sched_load_cfs_rq: cpu=5 path=/ load=0 util=0\n\
        \x20 <idle>-0 [002] 10.000800: sched_switch: prev_comm=swapper/2 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sugov:1 next_pid=9 next_prio=49\n\
        \x20 sugov:1-9 [002] 10.001000: cpu_frequency: state=450000 cpu_id=1\n\
        \x20 sugov:1-9 [002] 10.001001: cpu_frequency: state=450000 cpu_id=2\n\
        \x20 sugov:1-9 [002] 10.001002: sched_switch: prev_comm=sugov:1 prev_pid=9 prev_prio=49 prev_state=S ==> next_comm=swapper/2 next_pid=0 next_prio=120\n";

    /// The big cluster (CPUs 1-2, capacity 1024, 450-1100 MHz): util 512 asks 1.25 x 1100 MHz x
    /// 512 / 1024 = 687.5 MHz, which the table rounds up to 800 MHz (get_next_freq, 4.19). The
    /// kernel logs it 2 ms later; an RT task then asks for the top.
    #[test]
    fn schedutil_decisions_pair_with_the_recorded_changes() {
        let text = format!(
            "{WARM}\
            \x20 a-5 [001] 10.020000: sched_load_cfs_rq: cpu=1 path=/ load=0 util=512\n\
            \x20 sugov:1-9 [002] 10.022000: cpu_frequency: state=800000 cpu_id=1\n\
            \x20 sugov:1-9 [002] 10.022001: cpu_frequency: state=800000 cpu_id=2\n\
            \x20 a-5 [001] 10.040000: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=R ==> next_comm=watchdog/1 next_pid=15 next_prio=0\n\
            \x20 sugov:1-9 [002] 10.042000: cpu_frequency: state=1100000 cpu_id=1\n\
            \x20 <idle>-0 [003] 10.100000: cpu_idle: state=0 cpu_id=3\n"
        );
        let r = replay(&text, "schedutil:kernel=4.19");
        // The first recorded change only tells where the policy was: it ends the warm-up.
        assert_eq!((r.recorded_changes, r.warm_up.len(), r.decisions), (2, 1, 2), "{:?}", r.changes);
        let statuses: Vec<&str> = r.changes.iter().map(|c| c.status).collect();
        assert_eq!(statuses, ["exact", "exact"]);
        assert_eq!(r.changes[0].model_khz, Some(800_000));
        assert_eq!(r.changes[1].model_khz, Some(1_100_000));
        assert!((r.timing_ms.median + 2.0).abs() < 1e-6, "{:?}", r.timing_ms);
        assert_eq!(r.exact_match, Some(1.0));
        assert!(r.unobservable.contains(&"util_est".to_string()));
    }

    /// After a recorded change the governor counts its rate limit (10 ms on juno-r0) from when
    /// the kernel decided, which the wake-up of its worker thread dates: an update 10.1 ms after
    /// the wake-up but 9.9 ms after the logged change may already change the frequency.
    #[test]
    fn the_rate_limit_counts_from_the_kernels_decision() {
        let text = format!(
            "{WARM}\
            \x20 a-5 [001] 10.010900: sched_load_cfs_rq: cpu=1 path=/ load=0 util=512\n\
            \x20 sugov:1-9 [002] 10.012000: cpu_frequency: state=800000 cpu_id=1\n\
            \x20 <idle>-0 [003] 10.100000: cpu_idle: state=0 cpu_id=3\n"
        );
        let r = replay(&text, "schedutil:kernel=4.19");
        assert_eq!(r.changes.iter().map(|c| c.status).collect::<Vec<_>>(), ["exact"], "{:?}", r.changes);
        let late = text.replace("10.010900: sched_load", "10.010700: sched_load");
        let r = replay(&late, "schedutil:kernel=4.19");
        assert_eq!(r.changes.iter().map(|c| c.status).collect::<Vec<_>>(), ["missed"], "{:?}", r.changes);
    }

    /// A task forked in a child group: the root decays (util 100), then the child's change
    /// reaches it (600). Before 5.5 the governor ran at the decay (100 asks 450 MHz, the
    /// current frequency); from 5.5 after the propagation (600 asks 1.25 x 1100 x 600 / 1024 =
    /// 806 MHz, so 950).
    #[test]
    fn before_5_5_the_governor_reads_the_root_before_a_child_groups_change() {
        let text = format!(
            "{WARM}\
            \x20 a-5 [001] 10.030000: sched_load_cfs_rq: cpu=1 path=/ load=0 util=100\n\
            \x20 a-5 [001] 10.030003: sched_load_cfs_rq: cpu=1 path=/ load=0 util=600\n\
            \x20 <idle>-0 [003] 10.100000: cpu_idle: state=0 cpu_id=3\n"
        );
        let old = replay(&text, "schedutil:kernel=4.19");
        assert_eq!(old.model_changes, 0, "{:?}", old.changes);
        let new = replay(&text, "schedutil:kernel=5.10");
        assert_eq!(new.model_changes, 1);
        assert_eq!((new.changes[0].status, new.changes[0].model_khz), ("extra", Some(950_000)));
        // Within the pairing window of the recording's end, the same change is not judged.
        let cut = text.replace("10.100000: cpu_idle", "10.032000: cpu_idle");
        let r = replay(&cut, "schedutil:kernel=5.10");
        assert_eq!((r.decisions, r.at_end.len(), r.at_end[0].status), (0, 1, "at_end"));
    }

    /// A stopper thread shows priority 0 but is not RT: it does not send schedutil to the top.
    #[test]
    fn the_stopper_thread_is_not_an_rt_task() {
        assert!(is_rt(0, "watchdog/1") && is_rt(49, "sugov:0"));
        assert!(!is_rt(0, "migration/3") && !is_rt(120, "bash") && !is_rt(-1, "dl-task"));
    }

    #[test]
    fn a_trace_from_another_machine_is_refused() {
        let text = "  <idle>-0 [001] 1.0: sched_load_cfs_rq: cpu=1 path=/ load=0 util=0\n\
                    \x20 k-1 [001] 1.1: cpu_frequency: state=1200000 cpu_id=1\n";
        let t = read_ftrace(text, "t.txt").unwrap();
        let cfg = ReplayConfig { governor: "schedutil".into(), window_ns: 1 };
        let e = replay_governor(juno_r0(), &t, "t.txt", &cfg).unwrap_err().to_string();
        assert!(e.contains("t.txt: cpu_frequency: CPU 1 ran at 1200000 kHz, not in juno-r0's table"), "{e}");
        let skipped = read_ftrace("  a-1 [000] 1.0: sched_overutilized: overutilized=1\n", "t.txt").unwrap();
        let e = replay_governor(juno_r0(), &skipped, "t.txt", &cfg).unwrap_err();
        assert!(e.to_string().contains("nothing to replay"), "{e}");
    }
}
