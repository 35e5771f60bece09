//! Reading ftrace text — `trace-cmd report` output and the kernel's `trace` / `trace_pipe`
//! files — into columns, one table per event kind a frequency study needs (docs/traces.md).
//!
//! An event line is `COMM-PID [CPU] [FLAGS] TIMESTAMP: EVENT: FIELDS`: the kernel's files add
//! a flags column (`d..2`) and may add `(TGID)` after PID; `trace-cmd report` prints neither by
//! default. Events other than the ones below are counted and skipped. A line that is neither an
//! event nor a header, or a known event whose fields do not parse, is an error naming the file
//! and the line.
//!
//! Checked on every line: the CPU is below [`MAX_CPUS`]; the timestamp is seconds as the kernel
//! prints them (`76.211715`), or a raw clock count (`trace_clock` x86-tsc: an integer) read
//! given the clock's rate; each CPU's timestamps never go back. The kernel keeps one ring
//! buffer per CPU, in time order; `trace_pipe` hands out events as they come, so between CPUs
//! a line may be a little earlier than the one before it, which is read as it is.
//! `[LOST N EVENTS]` lines (a ring buffer overflowed) are counted in [`Lost`].

use crate::error::{Result, SimError};

/// cpu_idle's state when a CPU leaves idle (PWR_EVENT_EXIT, `(u32)-1`).
const CPU_IDLE_EXIT: i64 = 4_294_967_295;

/// The most CPUs a trace may number: the kernel's own limit (NR_CPUS is at most 8192).
pub const MAX_CPUS: u32 = 8192;
/// The latest timestamp read, s (some 317 years of uptime): past it a number is not a time.
pub const MAX_TIME_S: f64 = 1e10;

/// How to read a trace's timestamps.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadOptions {
    /// The clock's rate (kHz) when the timestamps are raw counts (`trace_clock` x86-tsc or
    /// counter: integers). A `# tsc_khz=N` header line in the trace gives it too.
    pub tsc_khz: Option<f64>,
}

/// The trace's tables, as columns.
#[derive(Debug, Default)]
pub struct FtraceTables {
    /// `cpus=N` from the header (trace-cmd report), 0 when absent.
    pub cpus_header: u32,
    /// Every event's name with its count, in the order first seen.
    pub counts: Vec<(String, u64)>,
    pub switches: Switches,
    pub wakeups: Wakeups,
    pub frequency: CpuStates,
    pub idle: CpuStates,
    pub markers: Markers,
    pub wakings: Wakings,
    pub processes: Processes,
    pub migrations: Migrations,
    pub pelt: Pelt,
    pub util_est: UtilEst,
    pub pstate: PstateSamples,
    pub lost: Lost,
    /// The clock rate (kHz) raw-count timestamps were divided by; None when they were seconds.
    pub tsc_khz: Option<f64>,
}

/// `CPU:N [LOST M EVENTS]` lines (trace-cmd: `[M EVENTS DROPPED]`): a ring buffer was full and
/// dropped events there. -1 where the line does not say the CPU or the count.
#[derive(Debug, Default)]
pub struct Lost {
    pub line: Vec<i64>,
    pub cpu: Vec<i64>,
    pub events: Vec<i64>,
}

#[derive(Debug, Default)]
pub struct Switches {
    pub time_s: Vec<f64>,
    pub cpu: Vec<u32>,
    pub prev_comm: Vec<String>,
    pub prev_pid: Vec<i64>,
    pub prev_state: Vec<String>,
    /// The kernel's priority: below 100 an RT task, -1 a deadline task, 100-139 CFS.
    pub prev_prio: Vec<i64>,
    pub next_comm: Vec<String>,
    pub next_pid: Vec<i64>,
    pub next_prio: Vec<i64>,
}

#[derive(Debug, Default)]
pub struct Wakeups {
    pub time_s: Vec<f64>,
    pub cpu: Vec<u32>,
    pub comm: Vec<String>,
    pub pid: Vec<i64>,
    pub prio: Vec<i64>,
    pub target_cpu: Vec<i64>,
    /// The task the event was logged from: the waker (0 when an interrupt or the idle task
    /// woke it).
    pub waker_pid: Vec<i64>,
    /// `sched_wakeup_new`: a forked task's first wake-up.
    pub new: Vec<bool>,
}

/// `sched_waking`: logged on the waker's CPU, in the waker's context, before the wake-up picks
/// the woken task's CPU (`try_to_wake_up`).
#[derive(Debug, Default)]
pub struct Wakings {
    pub time_s: Vec<f64>,
    /// The waker's CPU.
    pub cpu: Vec<u32>,
    pub comm: Vec<String>,
    pub pid: Vec<i64>,
    /// The CPU the task last ran on, where the kernel prints it (`target_cpu`); -1 when not.
    pub target_cpu: Vec<i64>,
    /// The task current on the waker's CPU (the idle task's pid is 0).
    pub waker_comm: Vec<String>,
    pub waker_pid: Vec<i64>,
    /// From the line's flags column: "nmi", "hardirq", "softirq", "task", or "unknown" when the
    /// line has no flags column (trace-cmd report without its `-l`).
    pub context: Vec<&'static str>,
}

/// `sched_process_fork`, `sched_process_exec` and `sched_process_exit`: one row each.
#[derive(Debug, Default)]
pub struct Processes {
    pub time_s: Vec<f64>,
    pub cpu: Vec<u32>,
    /// "fork", "exec" or "exit".
    pub event: Vec<&'static str>,
    /// The child (fork), the task that exec'd or exited.
    pub pid: Vec<i64>,
    /// The parent (fork); the task's pid otherwise.
    pub parent_pid: Vec<i64>,
    /// The child's comm (fork), the program's file name (exec), the comm (exit).
    pub comm: Vec<String>,
}

/// `sched_migrate_task`: one row per move, logged on the CPU whose code moved the task.
#[derive(Debug, Default)]
pub struct Migrations {
    pub time_s: Vec<f64>,
    pub cpu: Vec<u32>,
    pub comm: Vec<String>,
    pub pid: Vec<i64>,
    pub orig_cpu: Vec<i64>,
    pub dest_cpu: Vec<i64>,
}

/// `cpu_frequency` (state in kHz) or `cpu_idle` (an idle state's index, -1 on exit): the CPU
/// the event was logged on and the CPU it is about.
#[derive(Debug, Default)]
pub struct CpuStates {
    pub time_s: Vec<f64>,
    pub logged_cpu: Vec<u32>,
    pub cpu: Vec<i64>,
    pub state: Vec<i64>,
}

/// A CPU's root cfs_rq PELT signals, from `sched_pelt_cfs` (mainline's tracepoint as LISA's
/// module and `sched_tp` print it) or `sched_load_cfs_rq` (the out-of-tree event of the 4.x
/// EAS kernels). Task groups' cfs_rqs (`path` other than `/`) are counted, not kept: schedutil
/// reads the root one.
#[derive(Debug, Default)]
pub struct Pelt {
    pub time_s: Vec<f64>,
    /// The CPU the event was logged on: another than `cpu` when that CPU enqueued or dequeued
    /// a task there (a remote wake-up, a migration).
    pub logged_cpu: Vec<u32>,
    pub cpu: Vec<i64>,
    pub util: Vec<i64>,
    pub load: Vec<i64>,
    /// -1 where the event has no runnable average (before 5.7).
    pub runnable: Vec<i64>,
}

/// A CPU's root cfs_rq util_est (`sched_util_est_cfs`): the sum of its queued tasks' estimates.
#[derive(Debug, Default)]
pub struct UtilEst {
    pub time_s: Vec<f64>,
    pub cpu: Vec<i64>,
    pub enqueued: Vec<i64>,
}

/// intel_pstate's `pstate_sample`: one per sample of a CPU (its `intel_pstate_update_pstate`
/// inputs and result), logged on the CPU sampled.
#[derive(Debug, Default)]
pub struct PstateSamples {
    pub time_s: Vec<f64>,
    pub cpu: Vec<u32>,
    pub core_busy: Vec<i64>,
    pub scaled_busy: Vec<i64>,
    pub from: Vec<i64>,
    pub to: Vec<i64>,
    pub mperf: Vec<i64>,
    pub aperf: Vec<i64>,
    pub tsc: Vec<i64>,
    pub freq: Vec<i64>,
    pub io_boost: Vec<i64>,
}

#[derive(Debug, Default)]
pub struct Markers {
    pub time_s: Vec<f64>,
    pub cpu: Vec<u32>,
    pub pid: Vec<i64>,
    pub text: Vec<String>,
}

/// The events turned into tables; every other event is counted and skipped.
pub const TABLE_EVENTS: &[&str] = &[
    "sched_switch",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_waking",
    "sched_process_fork",
    "sched_process_exec",
    "sched_process_exit",
    "sched_migrate_task",
    "cpu_frequency",
    "cpu_idle",
    "print",
    "tracing_mark_write",
    "sched_pelt_cfs",
    "lisa__sched_pelt_cfs",
    "sched_load_cfs_rq",
    "sched_util_est_cfs",
    "lisa__sched_util_est_cfs",
    "pstate_sample",
];

/// A borrowed column of one table, for bindings that hand the tables on.
pub enum Column<'a> {
    F64(&'a [f64]),
    I64(&'a [i64]),
    U32(&'a [u32]),
    Str(&'a [String]),
    Bool(&'a [bool]),
    Name(&'a [&'static str]),
}

impl FtraceTables {
    /// Every table by name, each as its named columns.
    pub fn tables(&self) -> Vec<(&'static str, Vec<(&'static str, Column<'_>)>)> {
        use Column::*;
        let (s, w, m, p, u, ps) =
            (&self.switches, &self.wakeups, &self.markers, &self.pelt, &self.util_est, &self.pstate);
        let lost = &self.lost;
        vec![
            (
                "switches",
                vec![
                    ("time_s", F64(&s.time_s)),
                    ("cpu", U32(&s.cpu)),
                    ("prev_comm", Str(&s.prev_comm)),
                    ("prev_pid", I64(&s.prev_pid)),
                    ("prev_prio", I64(&s.prev_prio)),
                    ("prev_state", Str(&s.prev_state)),
                    ("next_comm", Str(&s.next_comm)),
                    ("next_pid", I64(&s.next_pid)),
                    ("next_prio", I64(&s.next_prio)),
                ],
            ),
            (
                "wakeups",
                vec![
                    ("time_s", F64(&w.time_s)),
                    ("cpu", U32(&w.cpu)),
                    ("comm", Str(&w.comm)),
                    ("pid", I64(&w.pid)),
                    ("prio", I64(&w.prio)),
                    ("target_cpu", I64(&w.target_cpu)),
                    ("waker_pid", I64(&w.waker_pid)),
                    ("new", Bool(&w.new)),
                ],
            ),
            (
                "wakings",
                vec![
                    ("time_s", F64(&self.wakings.time_s)),
                    ("cpu", U32(&self.wakings.cpu)),
                    ("comm", Str(&self.wakings.comm)),
                    ("pid", I64(&self.wakings.pid)),
                    ("target_cpu", I64(&self.wakings.target_cpu)),
                    ("waker_comm", Str(&self.wakings.waker_comm)),
                    ("waker_pid", I64(&self.wakings.waker_pid)),
                    ("context", Name(&self.wakings.context)),
                ],
            ),
            (
                "processes",
                vec![
                    ("time_s", F64(&self.processes.time_s)),
                    ("cpu", U32(&self.processes.cpu)),
                    ("event", Name(&self.processes.event)),
                    ("pid", I64(&self.processes.pid)),
                    ("parent_pid", I64(&self.processes.parent_pid)),
                    ("comm", Str(&self.processes.comm)),
                ],
            ),
            (
                "migrations",
                vec![
                    ("time_s", F64(&self.migrations.time_s)),
                    ("cpu", U32(&self.migrations.cpu)),
                    ("comm", Str(&self.migrations.comm)),
                    ("pid", I64(&self.migrations.pid)),
                    ("orig_cpu", I64(&self.migrations.orig_cpu)),
                    ("dest_cpu", I64(&self.migrations.dest_cpu)),
                ],
            ),
            ("frequency", cpu_state_columns(&self.frequency, "freq_khz")),
            ("idle", cpu_state_columns(&self.idle, "state")),
            (
                "markers",
                vec![("time_s", F64(&m.time_s)), ("cpu", U32(&m.cpu)), ("pid", I64(&m.pid)), ("text", Str(&m.text))],
            ),
            (
                "pelt",
                vec![
                    ("time_s", F64(&p.time_s)),
                    ("logged_cpu", U32(&p.logged_cpu)),
                    ("cpu", I64(&p.cpu)),
                    ("util", I64(&p.util)),
                    ("load", I64(&p.load)),
                    ("runnable", I64(&p.runnable)),
                ],
            ),
            ("util_est", vec![("time_s", F64(&u.time_s)), ("cpu", I64(&u.cpu)), ("enqueued", I64(&u.enqueued))]),
            (
                "pstate",
                vec![
                    ("time_s", F64(&ps.time_s)),
                    ("cpu", U32(&ps.cpu)),
                    ("core_busy", I64(&ps.core_busy)),
                    ("scaled_busy", I64(&ps.scaled_busy)),
                    ("from", I64(&ps.from)),
                    ("to", I64(&ps.to)),
                    ("mperf", I64(&ps.mperf)),
                    ("aperf", I64(&ps.aperf)),
                    ("tsc", I64(&ps.tsc)),
                    ("freq", I64(&ps.freq)),
                    ("io_boost", I64(&ps.io_boost)),
                ],
            ),
            ("lost", vec![("line", I64(&lost.line)), ("cpu", I64(&lost.cpu)), ("events", I64(&lost.events))]),
        ]
    }
}

fn cpu_state_columns<'a>(t: &'a CpuStates, value: &'static str) -> Vec<(&'static str, Column<'a>)> {
    vec![
        ("time_s", Column::F64(&t.time_s)),
        ("logged_cpu", Column::U32(&t.logged_cpu)),
        ("cpu", Column::I64(&t.cpu)),
        (value, Column::I64(&t.state)),
    ]
}

/// Read ftrace `text`; `source` names it in errors.
pub fn read_ftrace(text: &str, source: &str) -> Result<FtraceTables> {
    read_ftrace_with(text, source, ReadOptions::default())
}

/// Read ftrace `text` with `options`; `source` names it in errors.
pub fn read_ftrace_with(text: &str, source: &str, options: ReadOptions) -> Result<FtraceTables> {
    let mut t = FtraceTables::default();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut clock = Clock { given_khz: options.tsc_khz, header_khz: None, counts: None };
    // Each CPU's last timestamp and the line it was on.
    let mut last: Vec<(f64, usize)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = || format!("{source}:{}", i + 1);
        let Some(mut ev) = event_line(line) else {
            if let Some(n) = header(line) {
                if n > MAX_CPUS {
                    return Err(SimError::config(
                        at(),
                        "cpus",
                        format!("{n} CPUs: at most {MAX_CPUS} (the kernel's limit)"),
                    ));
                }
                t.cpus_header = n.max(t.cpus_header);
                continue;
            }
            if let Some(khz) = tsc_header(line) {
                clock.header_khz = Some(khz.filter(|k| k.is_finite() && *k > 0.0).ok_or_else(|| {
                    SimError::config(at(), "tsc_khz", "expected the clock's rate in kHz, a positive number")
                })?);
                continue;
            }
            if let Some((cpu, events)) = lost_line(line) {
                t.lost.line.push(i as i64 + 1);
                t.lost.cpu.push(cpu);
                t.lost.events.push(events);
                continue;
            }
            if is_header(line) {
                continue;
            }
            let shown: String = line.trim().chars().take(120).collect();
            return Err(SimError::config(
                at(),
                "not an ftrace event line",
                format!("expected 'COMM-PID [CPU] TIMESTAMP: EVENT: FIELDS', got {shown:?}"),
            ));
        };
        if ev.cpu >= MAX_CPUS {
            return Err(SimError::config(
                at(),
                "CPU",
                format!("[{}]: expected a CPU below {MAX_CPUS} (the kernel's limit)", ev.cpu),
            ));
        }
        ev.time_s = clock.seconds(ev.stamp).map_err(|m| SimError::config(at(), "timestamp", m))?;
        let cpu = ev.cpu as usize;
        if last.len() <= cpu {
            last.resize(cpu + 1, (f64::NEG_INFINITY, 0));
        }
        let (before, before_line) = last[cpu];
        if ev.time_s < before {
            return Err(SimError::config(
                at(),
                "timestamp",
                format!(
                    "{} on CPU {cpu} is before {before} on line {before_line}: each CPU's events are \
                     logged in time order",
                    ev.stamp
                ),
            ));
        }
        last[cpu] = (ev.time_s, i + 1);
        match index.get(ev.event) {
            Some(&k) => t.counts[k].1 += 1,
            None => {
                index.insert(ev.event.to_string(), t.counts.len());
                t.counts.push((ev.event.to_string(), 1));
            }
        }
        t.add(&ev).map_err(|missing| {
            let shown: String = ev.body.trim().chars().take(120).collect();
            SimError::config(at(), ev.event, format!("cannot read its fields ({missing}): {shown:?}"))
        })?;
    }
    if t.counts.is_empty() {
        return Err(SimError::config(
            source,
            "no ftrace event",
            format!(
                "expected lines 'COMM-PID [CPU] TIMESTAMP: EVENT: FIELDS', read {} other lines",
                text.lines().count()
            ),
        ));
    }
    t.tsc_khz = clock.counts.filter(|&c| c).and(clock.khz());
    Ok(t)
}

/// How timestamps read: seconds, or raw counts at a known rate; one way throughout.
struct Clock {
    given_khz: Option<f64>,
    header_khz: Option<f64>,
    /// Whether the timestamps are counts, from the first one.
    counts: Option<bool>,
}

impl Clock {
    fn khz(&self) -> Option<f64> {
        self.given_khz.or(self.header_khz)
    }

    /// A timestamp in seconds; Err says what was expected.
    fn seconds(&mut self, stamp: &str) -> std::result::Result<f64, String> {
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let counts = match stamp.split_once('.') {
            Some((whole, frac)) if digits(whole) && digits(frac) => false,
            None if digits(stamp) => true,
            _ => {
                return Err(format!(
                    "{stamp:?}: expected seconds as the kernel prints them (digits, a point, digits: \
                     76.211715), or a raw clock count (an integer)"
                ))
            }
        };
        match self.counts {
            None => self.counts = Some(counts),
            Some(before) if before != counts => {
                let (now, then) = if counts { ("a raw count", "seconds") } else { ("seconds", "raw counts") };
                return Err(format!("{stamp} is {now} where the lines before gave {then}"));
            }
            Some(_) => {}
        }
        let time_s = if counts {
            let Some(khz) = self.khz() else {
                return Err(format!(
                    "{stamp} is a raw clock count, not seconds (trace_clock x86-tsc or counter): give \
                     the clock's rate in kHz (--tsc-khz N, tsc_khz= in Python, or a '# tsc_khz=N' \
                     line at the top of the trace)"
                ));
            };
            stamp.parse::<u64>().map_err(|_| format!("{stamp}: a count past 2^64"))? as f64 / (khz * 1e3)
        } else {
            if self.given_khz.is_some() {
                return Err(format!(
                    "{stamp} is in seconds: a TSC rate applies to raw clock counts only, leave it out"
                ));
            }
            stamp.parse::<f64>().map_err(|_| format!("{stamp}: not a number"))?
        };
        if time_s > MAX_TIME_S {
            return Err(format!("{stamp}: {time_s:e} s, past {MAX_TIME_S:e} s, is not a time"));
        }
        Ok(time_s)
    }
}

/// One event line, split.
struct Event<'a> {
    comm: &'a str,
    pid: i64,
    /// The flags column (`d.s2.`), empty when the line has none.
    flags: &'a str,
    cpu: u32,
    /// The timestamp as printed; `time_s` in seconds once checked.
    stamp: &'a str,
    time_s: f64,
    event: &'a str,
    body: &'a str,
}

impl FtraceTables {
    /// Add `ev` to its table; Err names the field that is missing or not a number.
    fn add(&mut self, ev: &Event) -> std::result::Result<(), String> {
        let f = |key: &str| field(ev.body, key).ok_or_else(|| format!("no {key}"));
        let int = |key: &str| -> std::result::Result<i64, String> {
            f(key)?.parse::<i64>().map_err(|_| format!("{key} is not an integer"))
        };
        match ev.event {
            "sched_switch" => {
                let row = switch_fields(ev.body).ok_or_else(|| {
                    "expected prev_comm=.. prev_pid=.. prev_prio=.. prev_state=.. next_comm=.. next_pid=.. \
                     next_prio=.., or 'COMM:PID [PRIO] STATE ==> COMM:PID [PRIO]'"
                        .to_string()
                })?;
                if !is_task_state(row.prev_state) {
                    return Err(format!(
                        "prev_state={} is not a task state: expected the kernel's letters (R, R+, S, D, \
                         D|K, T, t, X, Z, P, I ...) or a number",
                        row.prev_state
                    ));
                }
                let s = &mut self.switches;
                s.time_s.push(ev.time_s);
                s.cpu.push(ev.cpu);
                s.prev_comm.push(row.prev.0.to_string());
                s.prev_pid.push(row.prev.1);
                s.prev_prio.push(row.prev.2);
                s.prev_state.push(row.prev_state.to_string());
                s.next_comm.push(row.next.0.to_string());
                s.next_pid.push(row.next.1);
                s.next_prio.push(row.next.2);
            }
            "sched_wakeup" | "sched_wakeup_new" => {
                let (comm, pid, prio, target) = wakeup_fields(ev.body).ok_or_else(|| {
                    "expected comm=.. pid=.. prio=.. target_cpu=.., or 'COMM:PID [PRIO] CPU:NNN'".to_string()
                })?;
                let w = &mut self.wakeups;
                w.time_s.push(ev.time_s);
                w.cpu.push(ev.cpu);
                w.comm.push(comm.to_string());
                w.pid.push(pid);
                w.prio.push(prio);
                w.target_cpu.push(target);
                w.waker_pid.push(ev.pid);
                w.new.push(ev.event == "sched_wakeup_new");
            }
            "sched_waking" => {
                let (comm, pid, _, target) = wakeup_fields(ev.body)
                    .ok_or_else(|| "expected comm=.. pid=.. prio=.. target_cpu=..".to_string())?;
                let w = &mut self.wakings;
                w.time_s.push(ev.time_s);
                w.cpu.push(ev.cpu);
                w.comm.push(comm.to_string());
                w.pid.push(pid);
                w.target_cpu.push(target);
                w.waker_comm.push(ev.comm.to_string());
                w.waker_pid.push(ev.pid);
                w.context.push(irq_context(ev.flags));
            }
            "sched_process_fork" => {
                let row = (int("pid")?, int("child_pid")?, f("child_comm")?);
                self.processes.push(ev, "fork", row.1, row.0, row.2);
            }
            "sched_process_exec" => {
                let row = (int("pid")?, f("filename")?);
                let program = row.1.rsplit('/').next().unwrap_or(row.1);
                self.processes.push(ev, "exec", row.0, row.0, program);
            }
            "sched_process_exit" => {
                let row = (int("pid")?, f("comm")?);
                self.processes.push(ev, "exit", row.0, row.0, row.1);
            }
            "sched_migrate_task" => {
                let row = (f("comm")?, int("pid")?, int("orig_cpu")?, int("dest_cpu")?);
                let m = &mut self.migrations;
                m.time_s.push(ev.time_s);
                m.cpu.push(ev.cpu);
                m.comm.push(row.0.to_string());
                m.pid.push(row.1);
                m.orig_cpu.push(row.2);
                m.dest_cpu.push(row.3);
            }
            "sched_pelt_cfs" | "lisa__sched_pelt_cfs" | "sched_load_cfs_rq" => {
                if f("path")? != "/" {
                    return Ok(());
                }
                let p = &mut self.pelt;
                let row = (cpu_id(int("cpu")?)?, int("util")?, int("load")?);
                p.time_s.push(ev.time_s);
                p.logged_cpu.push(ev.cpu);
                p.cpu.push(row.0);
                p.util.push(row.1);
                p.load.push(row.2);
                p.runnable.push(int("runnable").unwrap_or(-1));
            }
            "sched_util_est_cfs" | "lisa__sched_util_est_cfs" => {
                if f("path")? != "/" {
                    return Ok(());
                }
                let u = &mut self.util_est;
                let row = (cpu_id(int("cpu")?)?, int("enqueued")?);
                u.time_s.push(ev.time_s);
                u.cpu.push(row.0);
                u.enqueued.push(row.1);
            }
            "pstate_sample" => {
                let p = &mut self.pstate;
                let row = [
                    int("core_busy")?,
                    int("scaled_busy")?,
                    int("from")?,
                    int("to")?,
                    int("mperf")?,
                    int("aperf")?,
                    int("tsc")?,
                    int("freq")?,
                    int("io_boost").unwrap_or(0),
                ];
                p.time_s.push(ev.time_s);
                p.cpu.push(ev.cpu);
                for (column, value) in [
                    &mut p.core_busy,
                    &mut p.scaled_busy,
                    &mut p.from,
                    &mut p.to,
                    &mut p.mperf,
                    &mut p.aperf,
                    &mut p.tsc,
                    &mut p.freq,
                    &mut p.io_boost,
                ]
                .into_iter()
                .zip(row)
                {
                    column.push(value);
                }
            }
            "cpu_frequency" | "cpu_idle" => {
                let (cpu, state) = (cpu_id(int("cpu_id")?)?, int("state")?);
                let table = if ev.event == "cpu_idle" { &mut self.idle } else { &mut self.frequency };
                table.time_s.push(ev.time_s);
                table.logged_cpu.push(ev.cpu);
                table.cpu.push(cpu);
                table.state.push(if ev.event == "cpu_idle" && state == CPU_IDLE_EXIT { -1 } else { state });
            }
            "print" | "tracing_mark_write" => {
                let m = &mut self.markers;
                m.time_s.push(ev.time_s);
                m.cpu.push(ev.cpu);
                m.pid.push(ev.pid);
                m.text.push(marker_text(ev.body).to_string());
            }
            _ => {}
        }
        Ok(())
    }
}

impl Processes {
    fn push(&mut self, ev: &Event, event: &'static str, pid: i64, parent_pid: i64, comm: &str) {
        self.time_s.push(ev.time_s);
        self.cpu.push(ev.cpu);
        self.event.push(event);
        self.pid.push(pid);
        self.parent_pid.push(parent_pid);
        self.comm.push(comm.to_string());
    }
}

/// The context an event was logged in, from the flags column's third character (the
/// kernel's `trace_print_lat_fmt`): `Z` NMI, `H` a hard interrupt within a softirq, `h` a hard
/// interrupt, `s` a softirq, `.` none (task context). "unknown" without a flags column.
fn irq_context(flags: &str) -> &'static str {
    match flags.as_bytes().get(2) {
        None => "unknown",
        Some(b'Z') => "nmi",
        Some(b'H' | b'h') => "hardirq",
        Some(b's') => "softirq",
        Some(_) => "task",
    }
}

/// A CPU number a field gives, below [`MAX_CPUS`].
fn cpu_id(cpu: i64) -> std::result::Result<i64, String> {
    if (0..MAX_CPUS as i64).contains(&cpu) {
        Ok(cpu)
    } else {
        Err(format!("CPU {cpu}: expected 0 to {}", MAX_CPUS - 1))
    }
}

/// `prev_state` as kernels print it: state letters joined by `|`, `+` after a preempted one
/// (4.14 on), or the raw number (older kernels' raw records).
fn is_task_state(state: &str) -> bool {
    if !state.is_empty() && state.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    let state = state.strip_suffix('+').unwrap_or(state);
    state.split('|').all(|s| s.len() == 1 && "RSDTtXZxKWPINn".contains(s))
}

/// The value of `key=` among the body's space-separated `key=value` tokens.
fn field<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    body.split_ascii_whitespace().find_map(|tok| tok.strip_prefix(key).and_then(|rest| rest.strip_prefix('=')))
}

/// One side of a switch: (comm, pid, prio).
type SwitchSide<'a> = (&'a str, i64, i64);

struct SwitchRow<'a> {
    prev: SwitchSide<'a>,
    prev_state: &'a str,
    next: SwitchSide<'a>,
}

/// sched_switch's fields, as the kernel prints them (`prev_comm=... next_prio=...`) or as
/// trace-cmd's sched plugin does (`COMM:PID [PRIO] STATE ==> COMM:PID [PRIO]`).
fn switch_fields(body: &str) -> Option<SwitchRow<'_>> {
    let keyed = field(body, "prev_pid").is_some();
    if let (false, Some((prev, next))) = (keyed, body.split_once("==>")) {
        // `prev` ends with the state; comm may hold spaces and colons, so split from the right.
        let prev = prev.trim();
        let (task, state) = prev.rsplit_once(' ')?;
        return Some(SwitchRow { prev: plugin_task(task)?, prev_state: state, next: plugin_task(next.trim())? });
    }
    let int = |key: &str| field(body, key)?.parse::<i64>().ok();
    Some(SwitchRow {
        prev: (field(body, "prev_comm")?, int("prev_pid")?, int("prev_prio").unwrap_or(-1)),
        prev_state: field(body, "prev_state")?,
        next: (field(body, "next_comm")?, int("next_pid")?, int("next_prio").unwrap_or(-1)),
    })
}

/// `COMM:PID [PRIO]` of trace-cmd's sched plugin.
fn plugin_task(text: &str) -> Option<SwitchSide<'_>> {
    let (task, prio) = text.rsplit_once('[')?;
    let prio = prio.trim_end().strip_suffix(']')?.trim().parse().ok()?;
    let (comm, pid) = task.trim_end().rsplit_once(':')?;
    Some((comm, pid.parse().ok()?, prio))
}

/// sched_wakeup's (comm, pid, prio, target CPU), as the kernel prints them (`target_cpu=`;
/// `cpu=` before 3.x) or as trace-cmd's plugin does (`COMM:PID [PRIO] [success=1] CPU:NNN`).
/// The target is -1 when the event does not say.
fn wakeup_fields(body: &str) -> Option<(&str, i64, i64, i64)> {
    if field(body, "pid").is_none() {
        let (task, cpu) = match body.rsplit_once("CPU:") {
            Some((task, cpu)) => (task, cpu.trim().parse().ok()?),
            None => (body, -1),
        };
        let task = task.trim();
        let task = task.strip_suffix("success=1").map_or(task, str::trim_end);
        let (comm, pid, prio) = plugin_task(task)?;
        return Some((comm, pid, prio, cpu));
    }
    let int = |key: &str| field(body, key)?.parse::<i64>().ok();
    let target = int("target_cpu").or_else(|| int("cpu")).unwrap_or(-1);
    Some((field(body, "comm")?, int("pid")?, int("prio").unwrap_or(-1), target))
}

/// What user space wrote: trace-cmd prints `print: <ip>s: text` (`ip=.. buf=text` with -R),
/// the kernel's file `tracing_mark_write: text`.
fn marker_text(body: &str) -> &str {
    let mut text = body.trim_start();
    // `trace-cmd report -R`: `ip=<symbol or address> buf=text`.
    if text.starts_with("ip=") {
        if let Some(at) = text.find(" buf=") {
            return text[at + 5..].trim();
        }
    }
    if let Some(rest) = text.strip_prefix("0x") {
        if let Some(colon) = rest.find(':') {
            if rest[..colon].trim_end_matches('s').bytes().all(|b| b.is_ascii_hexdigit()) {
                text = rest[colon + 1..].trim_start();
            }
        }
    }
    text.strip_prefix("tracing_mark_write:").unwrap_or(text).trim()
}

/// Split an event line, or None when the line is not one.
fn event_line(line: &str) -> Option<Event<'_>> {
    // The CPU column is the first `[digits]` after the task: comm itself may hold anything but
    // is followed by `-PID`.
    let open = find_cpu_column(line)?;
    let close = open + line[open..].find(']')?;
    let cpu: u32 = line[open + 1..close].parse().ok()?;
    let task = line[..open].trim_end();
    // An optional `(TGID)` column after PID.
    let task = match task.strip_suffix(')') {
        Some(t) => t[..t.rfind('(')?].trim_end(),
        None => task,
    };
    let dash = task.rfind('-')?;
    let pid: i64 = task[dash + 1..].parse().ok()?;
    let comm = task[..dash].trim_start();
    let mut rest = line[close + 1..].trim_start();
    // An optional flags column: a token that does not end in ':' and is not the timestamp.
    let first = rest.split_ascii_whitespace().next()?;
    let mut flags = "";
    if !first.ends_with(':') {
        flags = first;
        rest = rest[first.len()..].trim_start();
    }
    let ts_end = rest.find(':')?;
    let stamp = rest[..ts_end].trim();
    if stamp.is_empty() || stamp.contains(char::is_whitespace) {
        return None;
    }
    rest = rest[ts_end + 1..].trim_start();
    let ev_end = rest.find(':')?;
    let event = &rest[..ev_end];
    if event.is_empty() || !event.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    Some(Event { comm, pid, flags, cpu, stamp, time_s: 0.0, event, body: &rest[ev_end + 1..] })
}

fn find_cpu_column(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(k) = line[from..].find('[') {
        let open = from + k;
        let digits = bytes[open + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && bytes.get(open + 1 + digits) == Some(&b']') {
            return Some(open);
        }
        from = open + 1;
    }
    None
}

/// `cpus=N` (trace-cmd report's header).
fn header(line: &str) -> Option<u32> {
    let rest = line.trim().strip_prefix("cpus")?.trim_start().strip_prefix('=')?;
    rest.trim().parse().ok()
}

/// `# tsc_khz=N` (or `: N`): the rate of a raw-count clock; Some(None) when N is not a number.
fn tsc_header(line: &str) -> Option<Option<f64>> {
    let rest = line.trim().strip_prefix('#')?.trim_start().strip_prefix("tsc_khz")?.trim_start();
    let value = rest.strip_prefix('=').or_else(|| rest.strip_prefix(':'))?;
    Some(value.trim().parse().ok())
}

/// `CPU:N [LOST M EVENTS]`, `[LOST EVENTS]`, `CPU:N [M EVENTS DROPPED]`: (CPU, M), -1 where not
/// said.
fn lost_line(line: &str) -> Option<(i64, i64)> {
    let t = line.trim();
    let (cpu, rest) = match t.strip_prefix("CPU:") {
        Some(r) => {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            (r[..end].parse::<i64>().ok().filter(|&c| c < MAX_CPUS as i64)?, r[end..].trim_start())
        }
        None => (-1, t),
    };
    let inner = rest.strip_prefix('[')?.strip_suffix(']')?.trim();
    let count = |s: &str| if s.is_empty() { Some(-1) } else { s.trim().parse::<i64>().ok() };
    if let Some(n) = inner.strip_prefix("LOST").and_then(|r| r.strip_suffix("EVENTS")) {
        return Some((cpu, count(n.trim())?));
    }
    let n = inner.strip_suffix("EVENTS DROPPED")?;
    Some((cpu, count(n.trim())?))
}

/// Comment, version and empty-CPU lines, and blank ones.
fn is_header(line: &str) -> bool {
    let t = line.trim();
    t.is_empty()
        || t.starts_with('#')
        || t.strip_prefix("version").is_some_and(|r| r.trim_start().starts_with('='))
        || (t.starts_with("CPU ") && t.ends_with(" is empty"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_cmd_and_kernel_lines_split_alike() {
        let text = "cpus=4\n\
            # tracer: nop\n\
            \x20  kworker/u12:1-46    [002]    76.211715: sched_switch:          prev_comm=kworker/u12:1 prev_pid=46 prev_prio=120 prev_state=1 next_comm=sh next_pid=1642 next_prio=120\n\
            \x20  <idle>-0       (-------) [003] d..2.  5.000100: cpu_idle: state=4294967295 cpu_id=3\n\
            \x20  bash-42      [001] ....  5.000300: tracing_mark_write: hello world\n\
            \x20  sh-1702  [000]    76.368433: print:                0xffff00000819ff24s: TRACE_MARKER_START\n\
            \x20  <idle>-0     [001]    76.402065: sched_overutilized:    overutilized=1\n";
        let t = read_ftrace(text, "t.txt").unwrap();
        assert_eq!(t.cpus_header, 4);
        assert_eq!(t.switches.prev_comm, ["kworker/u12:1"]);
        assert_eq!((t.switches.cpu[0], t.switches.next_pid[0], t.switches.time_s[0]), (2, 1642, 76.211715));
        assert_eq!((t.idle.cpu[0], t.idle.state[0], t.idle.logged_cpu[0]), (3, -1, 3));
        assert_eq!(t.markers.text, ["hello world", "TRACE_MARKER_START"]);
        assert_eq!(t.markers.pid, [42, 1702]);
        assert_eq!(t.counts.last().unwrap(), &("sched_overutilized".to_string(), 1));
    }

    #[test]
    fn trace_cmd_plugin_formats_read_like_the_kernel_ones() {
        let text = "\
            \x20 <idle>-0     [000]  2084.141382: sched_switch:         swapper/0:0 [120] R ==> watchdog/0:12 [0]\n\
            \x20 kworker/2:1-2923  [002]  2084.021765: sched_switch:   kworker/2:1:2923 [120] D|K ==> swapper/2:0 [120]\n\
            \x20 bash-1 [001] 5.0: sched_wakeup: rt-app:1702 [120] success=1 CPU:003\n\
            \x20 bash-1 [001] 5.1: sched_wakeup: kworker/1:0:17 [120] CPU:001\n\
            \x20 bash-1 [001] 5.2: sched_switch: prev_comm=a b prev_pid=3 prev_prio=120 prev_state=S ==> next_comm=c next_pid=4 next_prio=98\n";
        let t = read_ftrace(text, "t.txt").unwrap();
        let s = &t.switches;
        assert_eq!(s.next_comm[..2], ["watchdog/0", "swapper/2"]);
        assert_eq!((s.next_pid[0], s.next_prio[0], s.prev_prio[0]), (12, 0, 120));
        assert_eq!((s.prev_comm[1].as_str(), s.prev_pid[1], s.prev_state[1].as_str()), ("kworker/2:1", 2923, "D|K"));
        assert_eq!(t.wakeups.comm, ["rt-app", "kworker/1:0"]);
        assert_eq!(t.wakeups.target_cpu, [3, 1]);
        assert_eq!(t.wakeups.prio, [120, 120]);
        assert_eq!(t.wakeups.waker_pid, [1, 1]);
        // The kernel's own format has an arrow too; it is read by its keys.
        assert_eq!((s.next_pid[2], s.next_prio[2]), (4, 98));
    }

    #[test]
    fn root_run_queue_signals_and_pstate_samples_become_tables() {
        let text = "\
            \x20 <idle>-0 [002] 2084.021507: sched_load_cfs_rq: cpu=2 path=/ load=0 util=7\n\
            \x20 <idle>-0 [002] 2084.021523: sched_load_cfs_rq: cpu=2 path=/autogroup-1 load=0 util=0\n\
            \x20 t-5 [001] 9.5: sched_pelt_cfs: cpu=1 path=/ load=90 runnable=80 util=70 update_time=9500000\n\
            \x20 t-5 [001] 9.6: sched_util_est_cfs: cpu=1 path=/ enqueued=55 ewma=0 util=70\n\
            \x20 t-5 [003] 9.7: pstate_sample: core_busy=105 scaled_busy=76 from=16 to=20 mperf=2660 aperf=2800 tsc=3000 freq=2100000 io_boost=0\n\
            \x20 <idle>-0 [002] 2084.8: sched_load_se: cpu=2 path=(null) comm=k pid=2 load=0 util=0\n";
        let t = read_ftrace(text, "t.txt").unwrap();
        assert_eq!((t.pelt.cpu.as_slice(), t.pelt.util.as_slice()), ([2, 1].as_slice(), [7, 70].as_slice()));
        assert_eq!(t.pelt.runnable, [-1, 80]);
        assert_eq!((t.util_est.cpu[0], t.util_est.enqueued[0]), (1, 55));
        assert_eq!((t.pstate.cpu[0], t.pstate.to[0], t.pstate.aperf[0], t.pstate.freq[0]), (3, 20, 2800, 2_100_000));
        let counted: Vec<_> = t.counts.iter().map(|(name, n)| (name.as_str(), *n)).collect();
        assert!(counted.contains(&("sched_load_cfs_rq", 2)) && counted.contains(&("sched_load_se", 1)), "{counted:?}");
        let tables: Vec<&str> = t.tables().iter().map(|(name, _)| *name).collect();
        assert!(tables.contains(&"pelt") && tables.contains(&"pstate"), "{tables:?}");
    }

    #[test]
    fn raw_markers_keep_only_what_user_space_wrote() {
        let text = "  sh-3 [001] 1.0: print: ip=tracing_mark_write buf=cpu_frequency_devlib: state=450000 cpu_id=0\n";
        let t = read_ftrace(text, "t.txt").unwrap();
        assert_eq!(t.markers.text, ["cpu_frequency_devlib: state=450000 cpu_id=0"]);
    }

    #[test]
    fn bad_lines_are_named_by_file_and_line() {
        let e = read_ftrace("# x\nnot a trace\n", "t.txt").unwrap_err().to_string();
        assert!(e.starts_with("t.txt:2: not an ftrace event line"), "{e}");
        let e = read_ftrace("  a-1 [000] 1.0: cpu_frequency: state=fast cpu_id=0\n", "t.txt").unwrap_err().to_string();
        assert!(e.starts_with("t.txt:1: cpu_frequency: cannot read its fields (state is not an integer)"), "{e}");
    }
}
